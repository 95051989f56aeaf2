//! Where a line for the person goes: standard error, and the controlling
//! terminal as well when standard error is not a terminal.
//!
//! Why: the spawners that agents are made of discard their children's
//! standard error. Claude Code captures a hook's or an MCP server's and throws
//! it away; Node's `spawn` with pipes hands it to a program that may never
//! print it. A refusal said only there is a refusal nobody sees, and a hook
//! that fails for want of a withheld token fails with no sign why. The
//! controlling terminal is what the person is looking at (the tmux pane the
//! agent runs in), so every front end that writes a line about an exec (a
//! refusal, a withheld credential, a grant's use, a secret not delivered)
//! writes it there too, by this one rule. The supervisor's lines reach its own
//! standard error instead, which is the person's terminal.
//!
//! It costs nothing on an exec that says nothing; one that says a line pays
//! an `ioctl` on standard error and, when that is not a terminal, an `open`
//! of `/dev/tty`, two `ioctl`s, a `write` and a `close`. A process with no
//! controlling terminal (a daemon, a CI job, `setsid`) fails the `open`, and
//! the line stays on standard error alone.

/// What a front end found out about the terminals, for one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminal {
    /// Standard error is a terminal (then the line is already on one).
    pub stderr_is_terminal: bool,
    /// The controlling terminal says `tostop`: a write from a process outside
    /// its foreground group stops that process with `SIGTTOU`.
    pub stops_background: bool,
    /// This process is in the terminal's foreground process group.
    pub in_foreground: bool,
}

/// Should a line for the person be written to the controlling terminal too?
/// Not when standard error is a terminal, and never where the write would stop
/// the process (a background job under `stty tostop`).
pub fn copy_to_terminal(t: Terminal) -> bool {
    !t.stderr_is_terminal && (!t.stops_background || t.in_foreground)
}

/// Need a front end open the controlling terminal to decide? Only when
/// standard error is not a terminal (the cheap test first).
pub fn may_copy(stderr_is_terminal: bool) -> bool {
    !stderr_is_terminal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_goes_to_the_terminal_only_where_stderr_is_not_one_and_nothing_stops() {
        let t = |stderr_is_terminal, stops_background, in_foreground| Terminal {
            stderr_is_terminal,
            stops_background,
            in_foreground,
        };
        assert!(!copy_to_terminal(t(true, false, true)));
        assert!(copy_to_terminal(t(false, false, false)));
        assert!(copy_to_terminal(t(false, true, true)));
        assert!(!copy_to_terminal(t(false, true, false)));
        assert!(may_copy(false) && !may_copy(true));
    }
}
