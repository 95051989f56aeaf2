//! What a terminal multiplexer is to envshim: one row of [`MULTIPLEXERS`] each.
//!
//! A multiplexer's server (a tmux server, a GNU screen session) starts the
//! processes its clients ask for (panes, windows, jobs) with its own
//! environment, not the client's. A server started without envshim, by a shell
//! that held credentials, hands them to every process it starts, however well
//! the client is policed. So before a client's command reaches such a server,
//! the front ends have the server cleaned (docs/adr/0014-tmux-servers.md), and
//! every front end must agree on when, and on which server. That is decided
//! here, once, for every multiplexer:
//!
//! - by which program names its client runs ([`Multiplexer::programs`]);
//! - how the client's argv and environment read: whether its command may start
//!   a process in a running server (deny by default: unless every command is
//!   proven harmless), which server it talks to, and whether it may run a
//!   command that gets the server's own process environment
//!   ([`Multiplexer::read_client`], [`Request`]);
//! - what the envwrap helper needs to find that server too
//!   ([`Multiplexer::helper_vars`]);
//! - where its pairs are in argv ([`Multiplexer::carrier`], read by
//!   [`crate::pairs`]) and which arguments of a client are its commands, which
//!   a server forked from it shows ([`Multiplexer::commands_start`]);
//! - which running server is governed, and so left alone ([`governed`]): one
//!   under an enforcing shim on the client's very policy, and no other.
//!
//! How a server's environments are read and cleared is not here: it talks to a
//! running server (its own client, `/proc`), which is envwrap's work, one file
//! per multiplexer behind one trait (wrapper/src/mux/). The shim has no code of
//! its own per multiplexer: it reads this table (shim/src/mux/client.rs).
//!
//! A third multiplexer is one file here (its argv reading, as [`tmux`] and
//! [`screen`]), its row below, and one file in envwrap with its row there; the
//! shared loop-scenario tests (tests/tests/mux_loop.rs) run it once it has an
//! implementation there too.

pub mod screen;
pub mod tmux;

use crate::compiled::Mode;
use crate::pairs::Carrier;

/// A terminal multiplexer, as the front ends need to know it.
pub struct Multiplexer {
    /// What tools and messages call it, and how `envwrap mux-env --mux` names
    /// it.
    pub name: &'static str,
    /// The same, NUL-terminated, for the shim's helper argv.
    pub c_name: &'static core::ffi::CStr,
    /// The basenames its client runs as.
    pub programs: &'static [&'static [u8]],
    /// The variables of the client's environment its reading uses, in the order
    /// [`Multiplexer::read_client`] gets their values (at most
    /// [`MAX_CLIENT_VARS`]).
    pub client_vars: &'static [&'static [u8]],
    /// Variables of the client's environment that the envwrap helper needs to
    /// find the same server (screen's `SCREENDIR`): passed on to it as they are.
    pub helper_vars: &'static [&'static [u8]],
    /// What a message calls one of its servers ("server", "session").
    pub server: &'static str,
    /// What its server starts, as a message says it ("panes").
    pub windows: &'static str,
    /// Its grammar of `NAME=VALUE` pairs in argv, if its client carries any.
    pub carrier: Option<Carrier>,
    /// Read a client's argv, with the values of [`Multiplexer::client_vars`].
    pub read_client: ReadClient,
    /// For a multiplexer whose server is forked from its first client without
    /// an exec, so that it shows that client's argv for its life: where the
    /// client's commands start in it (the rest is blanked in the server).
    pub commands_start: Option<CommandsStart>,
}

/// [`Multiplexer::read_client`]: a client's argv and its variables' values.
pub type ReadClient = for<'a> fn(&[&'a [u8]], &[Option<&'a [u8]>]) -> Request<'a>;

/// [`Multiplexer::commands_start`]: where a client's commands start in its argv.
pub type CommandsStart = fn(&[&[u8]]) -> usize;

/// The most [`Multiplexer::client_vars`] a row may have.
pub const MAX_CLIENT_VARS: usize = 4;

/// Every multiplexer envshim knows, one row each. The rows hold addresses, so
/// they are data the loader relocates in every process, on the page the
/// constructor's statics share (docs/adr/0008): keep each small, and its lists
/// as strings of words where they grow (as [`tmux`]'s harmless commands);
/// tests/tests/shim_layout.rs fails when they push those statics off the page.
pub static MULTIPLEXERS: &[&Multiplexer] = &[&tmux::MULTIPLEXER, &screen::MULTIPLEXER];

/// What a client asks of its server, as [`Multiplexer::read_client`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// Its command may start a process in a running server, so that a foreign
    /// server must be cleaned first.
    pub reaches_server: bool,
    /// Which server it talks to.
    pub server: Server<'a>,
    /// It may run a command that gets the server's own process environment,
    /// which no client can change (tmux's `pipe-pane`): the helper warns when
    /// that holds what the policy removes.
    pub server_process_env: bool,
}

/// How a client names its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server<'a> {
    /// A socket: no socket there, no server yet (the client starts it, forked
    /// from itself and so policed with it), and nothing to check.
    Socket(Socket<'a>),
    /// A session by name, as the multiplexer matches it; `None`: whichever it
    /// picks, so every session of the user is checked.
    Session(Option<&'a [u8]>),
}

/// Where a server's socket is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Socket<'a> {
    /// This path.
    Path(&'a [u8]),
    /// `TMPDIR/PER_USER<uid>/LABEL` (tmux: `/tmp/tmux-1000/default`).
    Label {
        tmpdir: &'a [u8],
        per_user: &'static [u8],
        label: &'a [u8],
    },
}

/// What a client can prove of a running server's shim, as [`governed`] judges
/// it: the facts are read from outside the server (envwrap reads its
/// `/proc/PID/maps` and `/proc/PID/environ`, wrapper/src/mux/mod.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerShim {
    /// It maps no libenvshim.so.
    None,
    /// It maps libenvshim.so, and its policy is the client's own: the same
    /// file (the lookup its environment gives, resolved to the same path), or
    /// the built-in default for both. Both follow that file's edits at every
    /// exec, so the server runs what the client runs, in this `Mode` (the
    /// file's `mode` as compiled now).
    SamePolicy(Mode),
    /// It maps libenvshim.so under a policy the client cannot prove its own:
    /// another file, the built-in default against a file (or the reverse), or
    /// an environment that cannot be read.
    OtherPolicy,
}

/// Whether a running server is governed: its own shim filters every process it
/// starts at least as strictly as the client's would, so that a client leaves
/// it alone (docs/adr/0014-tmux-servers.md, "Which server is left alone").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governed {
    /// Under an enforcing shim on the client's very policy: left alone.
    Yes,
    /// No shim: foreign, cleaned.
    NoShim,
    /// Under the client's policy, but in audit mode: its shim changes nothing,
    /// so what its environments hold reaches every process it starts. Cleaned
    /// like a foreign server.
    Audit,
    /// Under a policy the client cannot prove at least as strict as its own.
    /// Cleaned like a foreign server.
    OtherPolicy,
}

/// The one rule for which server is governed. The simplest sound one: only a
/// shim that enforces the very policy the client holds is trusted; a shim in
/// audit mode, or on any other policy (stricter or not: "at least as strict"
/// is not proven by comparing two policies), is treated as no shim. Being
/// wrong this way costs one cleaning; the other way, a leak.
pub fn governed(shim: ServerShim) -> Governed {
    match shim {
        ServerShim::None => Governed::NoShim,
        ServerShim::SamePolicy(Mode::Enforce) => Governed::Yes,
        ServerShim::SamePolicy(Mode::Audit) => Governed::Audit,
        ServerShim::OtherPolicy => Governed::OtherPolicy,
    }
}

/// The multiplexer whose client runs as `program` (a path or a name), by its
/// basename. Every process asks this at load: a few compares of short suffixes.
pub fn by_program(program: &[u8]) -> Option<&'static Multiplexer> {
    MULTIPLEXERS.iter().copied().find(|m| {
        m.programs.iter().any(|&p| {
            program.ends_with(p)
                && (program.len() == p.len()
                    || program.get(program.len() - p.len() - 1) == Some(&b'/'))
        })
    })
}

/// The multiplexer `envwrap mux-env --mux NAME` names.
pub fn by_name(name: &[u8]) -> Option<&'static Multiplexer> {
    MULTIPLEXERS.iter().copied().find(|m| m.name.as_bytes() == name)
}

impl Multiplexer {
    /// Read the client `argv`, its environment's values got by `get` (for the
    /// names of [`Multiplexer::client_vars`] only).
    pub fn read<'a>(
        &self,
        argv: &[&'a [u8]],
        mut get: impl FnMut(&[u8]) -> Option<&'a [u8]>,
    ) -> Request<'a> {
        let mut values: [Option<&'a [u8]>; MAX_CLIENT_VARS] = [None; MAX_CLIENT_VARS];
        for (slot, name) in values.iter_mut().zip(self.client_vars) {
            *slot = get(name);
        }
        (self.read_client)(argv, &values)
    }
}

impl Socket<'_> {
    /// The socket's path for user `uid`, written into `out` (without a NUL);
    /// `None` when it does not fit.
    pub fn write_path<'o>(&self, uid: u32, out: &'o mut [u8]) -> Option<&'o [u8]> {
        let mut w = Writer { out, len: 0 };
        match *self {
            Socket::Path(p) => w.put(p)?,
            Socket::Label {
                tmpdir,
                per_user,
                label,
            } => {
                w.put(tmpdir.strip_suffix(b"/").unwrap_or(tmpdir))?;
                w.put(b"/")?;
                w.put(per_user)?;
                w.put_decimal(uid)?;
                w.put(b"/")?;
                w.put(label)?;
            }
        }
        let Writer { out, len } = w;
        out.get(..len)
    }
}

struct Writer<'o> {
    out: &'o mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn put(&mut self, s: &[u8]) -> Option<()> {
        let end = self.len.checked_add(s.len())?;
        self.out.get_mut(self.len..end)?.copy_from_slice(s);
        self.len = end;
        Some(())
    }

    fn put_decimal(&mut self, mut n: u32) -> Option<()> {
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        loop {
            start -= 1;
            *digits.get_mut(start)? = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.put(digits.get(start..)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::carrier;

    #[test]
    fn every_row_is_found_by_each_of_its_programs_and_its_name() {
        for &m in MULTIPLEXERS {
            assert!(m.client_vars.len() <= MAX_CLIENT_VARS, "{}", m.name);
            assert_eq!(m.c_name.to_bytes(), m.name.as_bytes());
            assert!(core::ptr::eq(by_name(m.name.as_bytes()).unwrap(), m));
            for p in m.programs {
                assert!(core::ptr::eq(by_program(p).unwrap(), m));
                let mut path = b"/usr/bin/".to_vec();
                path.extend_from_slice(p);
                assert!(core::ptr::eq(by_program(&path).unwrap(), m));
                // The pair reading knows the program as this row says.
                assert_eq!(carrier(p), m.carrier, "{}", m.name);
            }
        }
    }

    #[test]
    fn only_an_enforcing_shim_on_the_same_policy_governs_a_server() {
        assert_eq!(governed(ServerShim::None), Governed::NoShim);
        assert_eq!(
            governed(ServerShim::SamePolicy(Mode::Enforce)),
            Governed::Yes
        );
        assert_eq!(
            governed(ServerShim::SamePolicy(Mode::Audit)),
            Governed::Audit
        );
        assert_eq!(governed(ServerShim::OtherPolicy), Governed::OtherPolicy);
    }

    #[test]
    fn other_programs_are_no_multiplexer() {
        for p in ["", "mytmux", "/bin/xscreen", "tmux.sh", "/usr/bin/env", "sh"] {
            assert!(by_program(p.as_bytes()).is_none(), "{p}");
        }
    }

    #[test]
    fn a_client_with_no_command_reaches_its_server_whatever_the_multiplexer() {
        // Deny by default, the property every row keeps: a client whose argv
        // holds an option its reading does not know reaches its server.
        for &m in MULTIPLEXERS {
            let argv: [&[u8]; 3] = [m.programs[0], b"-%", b"x"];
            assert!(m.read(&argv, |_| None).reaches_server, "{}", m.name);
        }
    }
}
