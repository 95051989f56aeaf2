//! Opening the env files a policy imports, at an exec or at load, by the rule of
//! [`envpolicy_core::readable`]: without blocking (`O_NONBLOCK | O_NOCTTY`), regular files
//! only, at most [`envpolicy_core::readable::ENV_FILE`] each.
//!
//! A file that is there but is not one a policy reads (a FIFO, a socket, a device,
//! a file over the limit) is [`Unusable`]: the exec then runs under the fail-closed
//! floor, and a warning names the file, once per process ([`floor_for`]). A file
//! that cannot be opened at all (missing, permission denied) has no contents, as
//! it has always had: its names stay stripped, its values are not used.

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};

use envpolicy_core::cache_key::Stamp;
use envpolicy_core::compiled::sec;
use envpolicy_core::readable::{self, Unreadable};
use envpolicy_core::Policy;

use crate::platform::sys;
use crate::state::in_force::Active;
use crate::state::message::Msg;

/// At most this many env files are read per exec (the compiler refuses more).
pub const MAX_ENV_FILES: usize = 16;

/// One env file opened for this exec: its descriptor and size.
#[derive(Clone, Copy)]
pub struct OpenFile {
    pub fd: c_int,
    pub size: usize,
}

/// Env file `index` of the policy is there, but is no file a policy reads.
#[derive(Clone, Copy)]
pub struct Unusable {
    pub index: usize,
    pub why: Unreadable,
}

/// Why [`open`] gave no descriptor.
pub(crate) enum NotOpened {
    /// It cannot be opened or `fstat`ed (missing, permission denied, ...).
    Absent,
    /// It is there, and the rule says no (see [`Unusable`]): why, and what the
    /// `fstat` it was judged on says (its stamp and `st_mode`).
    Refused(Unreadable, Stamp, u32),
}

/// Open the NUL-terminated `path` by the rule (see the module docs): the
/// descriptor and its `fstat`.
pub(crate) fn open(path: &[u8]) -> Result<(c_int, libc::stat), NotOpened> {
    if path.last() != Some(&0) {
        return Err(NotOpened::Absent);
    }
    // SAFETY: `path` is NUL-terminated (checked above).
    let fd = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return Err(NotOpened::Absent);
    }
    let fd = fd as c_int;
    let st = match crate::platform::fs::fstat(fd) {
        Ok(st) => st,
        Err(_) => {
            sys::close(fd);
            return Err(NotOpened::Absent);
        }
    };
    let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
    match readable::judge(st.st_mode, size, readable::ENV_FILE) {
        Ok(()) => Ok((fd, st)),
        Err(why) => {
            sys::close(fd);
            Err(NotOpened::Refused(
                why,
                crate::platform::fs::stamp_of(&st),
                st.st_mode,
            ))
        }
    }
}

/// What [`open_all`] found.
pub(crate) struct Opened {
    /// How many env files the policy imports (the first `n` slots).
    pub n: usize,
    /// The first that is there but is no file a policy reads.
    pub unusable: Option<Unusable>,
    /// The files changed since the policy was compiled (bit `i` for file `i`):
    /// their current names count (`EnvRequest::renamed_files`).
    pub renamed: u32,
}

/// Open every env file the policy imports into `out` (`None` for one that is not
/// read).
pub(crate) fn open_all(policy: &Policy<'_>, out: &mut [Option<OpenFile>; MAX_ENV_FILES]) -> Opened {
    let n = policy.count(sec::ENV_FILES).min(MAX_ENV_FILES);
    let mut found = Opened {
        n,
        unusable: None,
        renamed: 0,
    };
    for (i, slot) in out.iter_mut().enumerate().take(n) {
        *slot = None;
        let Some(rec) = policy.env_file(i as u32) else {
            continue;
        };
        let now = match open(policy.c_str(rec.path)) {
            Ok((fd, st)) => {
                *slot = Some(OpenFile {
                    fd,
                    size: usize::try_from(st.st_size).unwrap_or(0),
                });
                Some(crate::platform::fs::stamp_of(&st))
            }
            Err(NotOpened::Refused(why, ..)) => {
                found.unusable = found.unusable.or(Some(Unusable { index: i, why }));
                continue;
            }
            Err(NotOpened::Absent) => None,
        };
        if envpolicy_core::cache_key::import_changed(policy, i as u32, now) {
            found.renamed |= 1 << i;
        }
    }
    found
}

/// Close what [`open_all`] opened.
pub(crate) fn close_all(files: &[Option<OpenFile>; MAX_ENV_FILES], n: usize) {
    for f in files.iter().take(n).flatten() {
        sys::close(f.fd);
    }
}

pub(crate) use crate::platform::fs::read_all;

/// The last unusable env file this process warned about, and why
/// ([`Unusable::code`]; 0 for none): the same warning is printed once per
/// process. A parent's `fork` hook looks at the files too
/// (`env_cache::refresh`), so a shell's children inherit what it said and do not
/// repeat it.
#[link_section = ".data.envshim_zero"]
static WARNED: AtomicU32 = AtomicU32::new(0);

impl Unusable {
    /// Which file, and why, as one number that is never 0.
    fn code(self) -> u32 {
        let why = match self.why {
            Unreadable::NotRegular(kind) => kind as u32,
            Unreadable::TooLarge(_) => 15,
        };
        1 + (self.index as u32) * 16 + why
    }
}

/// Says that env file `u` of `policy` is unusable, naming the file and why (never
/// its contents), unless this process said so last.
#[cold]
#[inline(never)]
pub(crate) fn warn_unusable(policy: &Policy<'_>, u: Unusable) {
    if WARNED.swap(u.code(), Ordering::Relaxed) == u.code() {
        return;
    }
    let path = policy
        .env_file(u.index as u32)
        .map_or(&b"?"[..], |rec| policy.str(rec.path));
    let mut m = Msg::<1024>::new();
    m.push(b"envshim: env file ").push_word(path).push(b" ");
    for part in u.why.parts() {
        m.push(part.as_bytes());
    }
    m.push(b"; using the fail-closed floor");
    m.write_stderr();
}

/// The floor to enforce instead of `active`, whose env file `u` is unusable; warns
/// once ([`warn_unusable`]). `None` only if even the floor failed validation.
#[cold]
#[inline(never)]
pub(crate) fn floor_for(active: &Active, u: Unusable) -> Option<Active> {
    warn_unusable(&active.policy, u);
    crate::state::in_force::floor().map(|policy| Active {
        policy,
        source: active.source,
        warning: None,
        retry: None,
    })
}
