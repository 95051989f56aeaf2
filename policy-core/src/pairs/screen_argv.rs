//! How a GNU screen client's argv reads, as screen's own option parser reads it
//! (screen.c): a cluster of letters, some of which take the rest of the
//! argument or the next one as a value, then the operands, which are a new
//! window's command, or with `-X` and `-Q`, a command for the server.
//!
//! The pair reading finds `-X setenv NAME VALUE` here; what a client's argv
//! asks of a running server (whether a foreign session is to be cleaned
//! first) is decided from the same reading in [`crate::mux::screen`].

/// How a screen client's argv reads: what it asks of a server, and which session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Client<'a> {
    /// `-X` or `-Q`: the operands are a command for the server.
    pub(crate) command: bool,
    /// That command's name, when it has one.
    pub(crate) server_command: Option<&'a [u8]>,
    /// `-r`, `-R` or `-x`: attach to a session.
    pub(crate) attach: bool,
    /// `-d` or `-D`: detach a session (with `-m`: start one detached).
    pub(crate) detach: bool,
    /// `-m`: a new session even inside one.
    pub(crate) new_session: bool,
    /// `-ls`, `-list`, `-wipe`, `-v`: the client reaches no server's environment.
    pub(crate) client_only: bool,
    /// An operand holds a backtick: see [`runs_nothing`].
    pub(crate) backtick: bool,
    /// An option this reading does not know.
    pub(crate) unknown: bool,
    /// `-S NAME`, or the operand of `-r`, `-x`, `-d`, `-D`, `-R`.
    pub session: Option<&'a [u8]>,
    /// The operand taken as a session name, and its index.
    pub(crate) operand_session: Option<(usize, &'a [u8])>,
    /// Where the operands start.
    pub(crate) operands: usize,
}

/// Option letters that take a value: attached, or the next argument.
const VALUED: &[u8] = b"ceEfhpsStT";

/// Read `argv` as screen's option parser does, closely enough to tell what it
/// asks of a server.
pub fn read_client<'a>(argv: &[&'a [u8]]) -> Client<'a> {
    let mut c = Client::default();
    let mut i = 1;
    let mut wants_session = false;
    while let Some(&arg) = argv.get(i) {
        if arg == b"--" {
            i += 1;
            break;
        }
        let Some(letters) = arg.strip_prefix(b"-").filter(|l| !l.is_empty()) else {
            if wants_session && c.operand_session.is_none() {
                c.operand_session = Some((i, arg));
                wants_session = false;
                i += 1;
                continue;
            }
            break;
        };
        i += 1;
        match letters {
            b"ls" | b"list" | b"wipe" => {
                c.client_only = true;
                continue;
            }
            b"Logfile" => {
                i += 1;
                continue;
            }
            _ => {}
        }
        for (k, &letter) in letters.iter().enumerate() {
            if VALUED.contains(&letter) {
                let attached = letters.get(k + 1..).filter(|v| !v.is_empty());
                let value = attached.or_else(|| {
                    i += 1;
                    argv.get(i - 1).copied()
                });
                if letter == b'S' {
                    c.session = value;
                }
                break;
            }
            match letter {
                b'X' | b'Q' => c.command = true,
                b'r' | b'R' | b'x' => {
                    c.attach = true;
                    wants_session = true;
                }
                b'd' | b'D' => {
                    c.detach = true;
                    wants_session = true;
                }
                b'm' => c.new_session = true,
                b'v' => c.client_only = true,
                b'a' | b'A' | b'i' | b'l' | b'n' | b'L' | b'O' | b'q' | b'U' | b'w' => {}
                _ => c.unknown = true,
            }
        }
    }
    // `-dm`: a new session started detached, whose operands are its command.
    if c.new_session && !c.attach {
        if let Some((at, _)) = c.operand_session.take() {
            i = at;
        }
    }
    c.session = c.session.or(c.operand_session.map(|(_, s)| s));
    c.operands = i;
    if c.command {
        c.server_command = argv.get(i).copied();
    }
    c.backtick = !argv.get(i..).unwrap_or(&[]).iter().all(|a| runs_nothing(a));
    c
}

/// An operand that runs nothing when screen expands it as a string: no
/// backtick. `echo -p`, `windows` and every other string screen expands with
/// its escapes run backtick command N for `%N\``, with the session's
/// environment; read as bytes, wherever a backtick stands, it costs a
/// cleaning, not a leak (as tmux's `#(`, [`envpolicy_core::mux::tmux::runs_nothing`]).
pub fn runs_nothing(arg: &[u8]) -> bool {
    !arg.contains(&b'`')
}

impl Client<'_> {
    /// Where the server command of a `-X` or `-Q` client is in its argv, if it
    /// has one.
    pub fn server_command_at(&self) -> Option<usize> {
        self.server_command.map(|_| self.operands)
    }
}
