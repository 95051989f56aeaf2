//! What a GNU screen client reaches in its server.
//!
//! A screen session is a server process (`SCREEN`) that hands its own
//! environment to every window it opens, as a tmux server hands its global
//! environment to every pane. A session started without envshim, by a shell that
//! held credentials, gives them to every window, whatever the client that asks
//! for the window runs under. So, as for tmux (docs/adr/0014), the front ends
//! have such a server's environment cleaned before a client's command reaches
//! it, unless the client is proven harmless: this module says when, and which
//! session the client talks to, as screen reads its argv and environment.
//!
//! screen reads its options by hand, one argument at a time (screen.c): a
//! cluster of letters, some of which take the rest of the argument or the next
//! one as a value, then the operands, which are a new window's command, or
//! with `-X` and `-Q`, a command for the server.

use super::{Multiplexer, Request, Server};
use crate::pairs::screen_argv::{read_client, Client};
use crate::pairs::Carrier;

/// GNU screen's row of [`super::MULTIPLEXERS`]. Its server is forked from its
/// first client too, but renames itself (`SCREEN`) and its command line is its
/// windows' first command, whose pairs the pair reading drops: nothing to blank.
pub static MULTIPLEXER: Multiplexer = Multiplexer {
    name: "screen",
    c_name: c"screen",
    programs: &[b"screen"],
    client_vars: &[b"STY"],
    helper_vars: &[b"SCREENDIR"],
    server: "session",
    windows: "windows",
    carrier: Some(Carrier::Screen),
    read_client: read_request,
    commands_start: None,
};

/// [`Multiplexer::read_client`] for screen: `vars` is `STY`.
fn read_request<'a>(argv: &[&'a [u8]], vars: &[Option<&'a [u8]>]) -> Request<'a> {
    let sty = vars.first().copied().flatten();
    let client = read_client(argv);
    Request {
        reaches_server: client.reaches_server_environment(sty),
        server: Server::Session(client.session(sty)),
        server_process_env: false,
    }
}

/// The server commands (`-X` and `-Q`) that start no process, now or later, by
/// their own effect, each with why, when their operands run nothing
/// ([`crate::pairs::screen_argv::runs_nothing`]); any other command cleans first (docs/adr/0014 has the
/// table with the tmux one). Blank-separated words, as tmux's list is, so that
/// the loader relocates nothing for it.
const HARMLESS_COMMANDS: &str = concat!(
    // Print or show text, or report the session.
    "echo info windows number time lastmsg ",
    // Change which window a display shows, or its title.
    "select title ",
    // Write text into a window's input: its process runs already, with the
    // environment it has.
    "stuff ",
    // Detach a display, or end windows and the session: they start nothing.
    "detach kill quit",
);

/// What a client's argv, as [`crate::pairs::screen_argv`] reads it, asks of a
/// server.
impl<'a> Client<'a> {
    /// True when the client may start a process in a running server, so that a
    /// foreign one must be cleaned first. `sty` is `$STY`, set inside a
    /// session's window: there, a client with neither `-m` nor another target
    /// opens its window in that session. Deny by default: unless the client
    /// reaches no server (`-ls`, `-v`), starts a session of its own (forked from
    /// itself, so policed with it), or sends only a command proven harmless.
    pub fn reaches_server_environment(&self, sty: Option<&[u8]>) -> bool {
        if self.unknown {
            return true;
        }
        if self.client_only {
            return false;
        }
        if self.command {
            let harmless = self
                .server_command
                .is_some_and(|cmd| {
                    HARMLESS_COMMANDS
                        .split(' ')
                        .any(|w| !w.is_empty() && w.as_bytes() == cmd)
                });
            return !harmless || self.backtick;
        }
        if self.attach || (self.detach && !self.new_session) {
            return true;
        }
        // A new window: in the session of `$STY` unless `-m`, else a new session.
        !self.new_session && sty.is_some_and(|s| !s.is_empty())
    }

    /// The session the client talks to: `-S`, the operand of an attaching
    /// option, else `$STY`'s; `None`: whichever session screen picks (the only
    /// one), so every session of the user is to be checked.
    pub fn session(&self, sty: Option<&'a [u8]>) -> Option<&'a [u8]> {
        self.session.or(sty).filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaches(args: &[&str], sty: Option<&str>) -> bool {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        read_client(&argv).reaches_server_environment(sty.map(str::as_bytes))
    }

    #[test]
    fn commands_and_attaching_reach_the_server() {
        assert!(reaches(&["screen", "-S", "s", "-X", "screen", "sh", "-c", "env"], None));
        assert!(reaches(&["screen", "-Ss", "-X", "exec", "env"], None));
        assert!(reaches(&["screen", "-X", "setenv", "A", "B"], Some("1.s")));
        assert!(reaches(&["screen", "-S", "s", "-X", "eval", "echo hi", "screen"], None));
        assert!(reaches(&["screen", "-S", "s", "-X", "source", "/tmp/rc"], None));
        assert!(reaches(&["screen", "-r", "s"], None));
        assert!(reaches(&["screen", "-x"], None));
        assert!(reaches(&["screen", "-dR", "s"], None));
        assert!(reaches(&["screen", "-D", "-r"], None));
        // A window inside a session opens in that session.
        assert!(reaches(&["screen", "env"], Some("12.s")));
        // Unknown options, and a command with no name, count.
        assert!(reaches(&["screen", "-Z", "x"], None));
        assert!(reaches(&["screen", "-S", "s", "-X"], None));
        // A harmless command whose string runs a backtick command.
        assert!(reaches(&["screen", "-S", "s", "-X", "echo", "-p", "%1`"], None));
        assert!(reaches(&["screen", "-S", "s", "-X", "windows", "%`"], None));
        assert!(reaches(&["screen", "-S", "s", "-Q", "title", "a`b"], None));
    }

    #[test]
    fn harmless_clients_and_new_sessions_do_not() {
        assert!(!reaches(&["screen", "-ls"], None));
        assert!(!reaches(&["screen", "-list"], Some("1.s")));
        assert!(!reaches(&["screen", "-v"], None));
        assert!(!reaches(&["screen", "-S", "s", "-X", "quit"], None));
        assert!(!reaches(&["screen", "-S", "s", "-X", "stuff", "ls\n"], None));
        assert!(!reaches(&["screen", "-S", "s", "-Q", "windows"], None));
        assert!(!reaches(&["screen", "-dmS", "s", "sleep", "9"], None));
        assert!(!reaches(&["screen", "-d", "-m", "sleep", "9"], Some("1.s")));
        assert!(!reaches(&["screen", "-m", "env"], Some("12.s")));
        assert!(!reaches(&["screen", "env"], None));
    }

    #[test]
    fn the_session_is_found_as_screen_finds_it() {
        let s = |args: &[&'static str], sty: Option<&'static str>| {
            let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            read_client(&argv)
                .session(sty.map(str::as_bytes))
                .map(|b| String::from_utf8(b.to_vec()).unwrap())
        };
        assert_eq!(s(&["screen", "-S", "a", "-X", "x"], None).as_deref(), Some("a"));
        assert_eq!(s(&["screen", "-Sa", "-X", "x"], Some("1.b")).as_deref(), Some("a"));
        assert_eq!(s(&["screen", "-r", "c"], None).as_deref(), Some("c"));
        assert_eq!(s(&["screen", "-d", "-r", "c"], None).as_deref(), Some("c"));
        assert_eq!(s(&["screen", "-X", "x"], Some("1.b")).as_deref(), Some("1.b"));
        assert_eq!(s(&["screen", "-X", "x"], None), None);
    }
}
