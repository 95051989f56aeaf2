//! Every line the shim writes goes through [`envpolicy_core::shown::redact`], the
//! one writer of every front end: a token shape, and the value of every
//! credential the shim knows of, never leave the process in a message or a log
//! line, whatever the message was built from (a program's path holding a
//! by-name credential, an option, a name).
//!
//! What the shim knows of: the process's own environment (`environ`), judged by
//! the policy in force (the built-in default before one is validated), and, for
//! the lines about one exec, the decision's credentials in the environment that
//! exec hands its child (`shown::Decided`).
//!
//! Every other module of the shim builds its lines with [`Msg`] and writes them
//! through it; the one exception is the platform's abort before any policy is
//! known ([`crate::platform::sys::abort_saying`]), made of the library's own
//! constants.
//!
//! The writer runs between fork and exec: it reads `environ` in place, allocates
//! nothing and takes no lock.

use core::ffi::{c_char, c_int};

use envpolicy_core::shown::{self, Secrets};

use crate::platform::sys;

/// The credentials of the process's environment at this moment.
pub struct EnvironSecrets;

impl Secrets for EnvironSecrets {
    fn each(&self, f: &mut dyn FnMut(&[u8])) {
        let env = sys::environ_ptr();
        if env.is_null() {
            return;
        }
        crate::state::in_force::with_ready(|policy| {
            let mut i = 0usize;
            loop {
                // SAFETY: `environ` is a NULL-terminated array of NUL-terminated
                // strings (read as glibc's getenv reads it); `i` stops at its NULL.
                let entry: *const c_char = unsafe { *env.add(i) };
                if entry.is_null() {
                    break;
                }
                // SAFETY: a NUL-terminated entry of the environment.
                let bytes = unsafe { sys::cstr_bytes(entry) };
                if let Some((name, value)) = envpolicy_core::bytes::split_entry(bytes) {
                    if shown::is_secret(policy, name, value) {
                        f(value);
                    }
                }
                i += 1;
            }
        });
    }
}

/// Room for a redacted line: a description can be longer than the value it
/// stands for (`<8 bytes>` for 8 bytes), so twice the longest message.
const OUT: usize = 2048;

/// Where a line goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// A descriptor: a log, or the audit lines' stream.
    Fd(c_int),
    /// The person: standard error, and the controlling terminal as well when
    /// standard error is not a terminal ([`envpolicy_core::seen`]): a spawner
    /// that discards its children's stderr (Claude Code's hooks and MCP
    /// servers, Node's `spawn` with pipes) would otherwise hide every refusal.
    Person,
}

/// Writes `line` to `to` with one `write(2)` each, redacted against `known` and
/// the process's environment; a line that grows past [`OUT`] bytes is cut,
/// never written raw.
#[cold]
#[inline(never)]
pub fn write_line(to: To, line: &[u8], known: &dyn Secrets) {
    let mut out = [0u8; OUT];
    let mut len = 0usize;
    let mut cut = false;
    let both = shown::Both(known, &EnvironSecrets);
    shown::redact(line, &both, &mut |part| {
        for &b in part {
            match out.get_mut(len) {
                Some(slot) if len < OUT - 4 => {
                    *slot = b;
                    len += 1;
                }
                _ => cut = true,
            }
        }
    });
    if cut {
        for &b in b"..." {
            if let Some(slot) = out.get_mut(len) {
                *slot = b;
                len += 1;
            }
        }
    }
    if let Some(slot) = out.get_mut(len) {
        *slot = b'\n';
        len += 1;
    }
    let out = out.get(..len).unwrap_or(&[]);
    match to {
        To::Fd(fd) => {
            sys::raw_write(fd, out);
        }
        To::Person => {
            sys::raw_write(2, out);
            sys::write_to_terminal(out);
        }
    }
}

/// A message for stderr, built by concatenating byte slices in a stack buffer and sent
/// with a single `write(2)`. Overlong input is cut (with a trailing `...`); a message
/// is best-effort diagnostics, never data.
pub struct Msg<const N: usize> {
    buf: [u8; N],
    len: usize,
    cut: bool,
}

impl<const N: usize> Default for Msg<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Msg<N> {
    pub const fn new() -> Self {
        Msg {
            buf: [0; N],
            len: 0,
            cut: false,
        }
    }

    /// Appends bytes.
    pub fn push(&mut self, s: &[u8]) -> &mut Self {
        for &b in s {
            match self.buf.get_mut(self.len) {
                Some(slot) => {
                    *slot = b;
                    self.len += 1;
                }
                None => {
                    self.cut = true;
                    break;
                }
            }
        }
        self
    }

    /// A writer of pieces into this message ([`Msg::push_pieces`]), for the
    /// core's writers that take `&mut dyn FnMut(Piece)`: one closure type,
    /// so one table of addresses for every caller of a size.
    pub fn sink(&mut self) -> impl FnMut(envpolicy_core::shown::Piece<'_>) + '_ {
        move |p| {
            self.push_pieces(&[p]);
        }
    }

    /// Appends a program, path or name that may hold a secret, as
    /// [`envpolicy_core::shown`] says: itself, or `<N bytes, SHAPE>`.
    pub fn push_word(&mut self, text: &[u8]) -> &mut Self {
        let mut digits = [0u8; 20];
        let shown = envpolicy_core::shown::word(text);
        for part in shown.parts(&mut digits) {
            self.push(part);
        }
        self
    }

    /// [`Msg::push_word`] of a C string. NULL appends `(null)`.
    ///
    /// # Safety
    /// `s` must be NULL or NUL-terminated.
    pub unsafe fn push_cstr_word(&mut self, s: *const c_char) -> &mut Self {
        if s.is_null() {
            return self.push(b"(null)");
        }
        // SAFETY: NUL-terminated (caller).
        let bytes = unsafe { sys::cstr_bytes(s) };
        self.push_word(bytes)
    }

    /// Appends each piece: text as it is, a word as [`Msg::push_word`] does.
    pub fn push_pieces(&mut self, parts: &[envpolicy_core::shown::Piece<'_>]) -> &mut Self {
        use envpolicy_core::shown::Piece;
        for p in parts {
            match *p {
                Piece::Text(t) => self.push(t),
                Piece::Word(w) => self.push_word(w),
            };
        }
        self
    }

    /// Appends a decimal number.
    pub fn push_num(&mut self, v: i64) -> &mut Self {
        let mut tmp = [0u8; 24];
        let digits = sys::fmt_i64(v, &mut tmp);
        self.push(digits)
    }

    /// The bytes so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Writes the message (and a newline) for the person ([`To::Person`]);
    /// errno is preserved.
    pub fn write_stderr(&mut self) {
        self.write_to(To::Person, &envpolicy_core::shown::NoSecrets);
    }

    /// Writes the message (and a newline) to `fd` with one `write(2)`, through
    /// the one redaction of every front end ([`write_line`]); errno is
    /// preserved.
    pub fn write_fd(&mut self, fd: c_int) {
        self.write_fd_known(fd, &envpolicy_core::shown::NoSecrets);
    }

    /// [`Msg::write_fd`], also redacting the credentials in `known` (a decision's).
    pub fn write_fd_known(&mut self, fd: c_int, known: &dyn envpolicy_core::shown::Secrets) {
        self.write_to(To::Fd(fd), known);
    }

    /// Writes the message (and a newline) to `to`, redacting the credentials
    /// in `known` too; errno is preserved.
    pub fn write_to(&mut self, to: To, known: &dyn envpolicy_core::shown::Secrets) {
        if self.cut {
            let keep = self.len.saturating_sub(4);
            self.len = keep;
            self.cut = false;
            self.push(b"...");
        }
        let saved = sys::errno();
        // A short or failed write of a diagnostic is ignored on purpose.
        write_line(to, self.as_bytes(), known);
        sys::set_errno(saved);
    }
}

/// Writes one of the shim's warning lines (which name files and reasons, never a
/// value) to stderr.
// Out of line: its buffer would otherwise be part of its caller's frame, which a
// `fork` child's exec faults in page by page (see
// [`crate::state::policy::with_active`]).
#[cold]
#[inline(never)]
pub fn say(w: &[u8]) {
    Msg::<1024>::new().push(w).write_stderr();
}
