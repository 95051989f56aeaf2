//! What a tmux client reaches in its server.
//!
//! A tmux pane does not get its environment from the client that asked for it:
//! the server builds it from its global environment, the session's, and the
//! command's `-e` pairs. So does every process the server runs for a command
//! (`run-shell`, `if-shell`, `pipe-pane`). A server started without envshim, by
//! a shell that held credentials, hands them to every pane, whatever the client
//! runs under. Before such a command reaches a server, the front ends have the
//! server's environments cleaned (`envwrap tmux-env --fix`, docs/adr/0014); this
//! module says when a client's argv needs that, and which server it talks to, as
//! tmux itself reads its argv and environment.

use crate::pairs::{for_each_tmux_command, for_each_tmux_option};

/// The commands that start a process from the server's environment, or may run
/// commands that do: at once (`source-file`), or later for this client and
/// others (a client that attaches or switches has its status line's `#()` jobs
/// run; a hook, a key binding, a prompt, a confirmation or a menu runs its
/// command when it fires). Full names, then their aliases.
const STARTS_PROCESSES: &[u8] = b"new-session new-window split-window respawn-pane \
    respawn-window display-popup run-shell if-shell pipe-pane source-file \
    attach-session switch-client set-hook bind-key command-prompt confirm-before \
    display-menu";
const ALIASES: &[u8] =
    b"new neww splitw respawnp respawnw popup run if pipep source attach switchc bind \
    confirm menu";
/// Aliases of other commands that are prefixes of those above: tmux takes an
/// alias before a prefix (`display` is `display-message`, `set` is
/// `set-option`).
const OTHER_ALIASES: &[u8] = b"display set";

/// True when the tmux client `argv` may start a process in its server: no command
/// at all (tmux then runs `new-session`), or a command that is one of those above,
/// by name, alias or a prefix of one (tmux takes a unique prefix; an ambiguous one
/// is counted too, since counting costs a check and missing one costs a leak).
/// `-c` (the client runs a shell itself) and `-V` (prints its version) reach no
/// server.
pub fn reaches_server_environment(argv: &[&[u8]]) -> bool {
    let mut client_only = false;
    for_each_tmux_option(argv, |letter, _| {
        client_only |= letter == b'c' || letter == b'V';
    });
    if client_only {
        return false;
    }
    let (mut commands, mut reaching) = (0usize, false);
    for_each_tmux_command(argv, |word| {
        commands += 1;
        reaching |= starts_processes(word);
    });
    commands == 0 || reaching
}

/// True when the tmux client `argv` runs `pipe-pane` (by name, alias or prefix).
/// tmux starts a pipe-pane command with the server's own process environment, not
/// with the environments a client can change: a server started without envshim
/// gives that command whatever its first client held.
pub fn pipes_a_pane(argv: &[&[u8]]) -> bool {
    let mut found = false;
    for_each_tmux_command(argv, |word| {
        found |= !word.is_empty() && (word == b"pipep" || b"pipe-pane".starts_with(word));
    });
    found
}

fn starts_processes(word: &[u8]) -> bool {
    if word.is_empty() || words(OTHER_ALIASES).any(|a| a == word) {
        return false;
    }
    words(ALIASES).any(|a| a == word) || words(STARTS_PROCESSES).any(|c| c.starts_with(word))
}

fn words(list: &'static [u8]) -> impl Iterator<Item = &'static [u8]> {
    list.split(|&b| b == b' ').filter(|w| !w.is_empty())
}

/// Where a server's socket is, as tmux finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Socket<'a> {
    /// `-S PATH`, or the first field of `$TMUX` when neither `-S` nor `-L` is
    /// given (a client run inside a pane).
    Path(&'a [u8]),
    /// `-L NAME` (`default` without one): `TMPDIR/tmux-UID/NAME`, where TMPDIR is
    /// `$TMUX_TMPDIR` when set and not empty, else `/tmp`.
    Label {
        tmpdir: &'a [u8],
        label: &'a [u8],
    },
}

/// The server the client `argv` talks to. `tmux_var` and `tmux_tmpdir` are the
/// values of `TMUX` and `TMUX_TMPDIR` in the client's environment.
pub fn socket<'a>(
    argv: &[&'a [u8]],
    tmux_var: Option<&'a [u8]>,
    tmux_tmpdir: Option<&'a [u8]>,
) -> Socket<'a> {
    let (mut path, mut label) = (None, None);
    for_each_tmux_option(argv, |letter, value| match letter {
        b'S' => path = value.or(path),
        b'L' => label = value.or(label),
        _ => {}
    });
    if let Some(p) = path {
        return Socket::Path(p);
    }
    let inherited = tmux_var
        .map(|v| v.split(|&b| b == b',').next().unwrap_or(v))
        .filter(|p| !p.is_empty());
    match (label, inherited) {
        (None, Some(p)) => Socket::Path(p),
        _ => Socket::Label {
            tmpdir: tmux_tmpdir.filter(|d| !d.is_empty()).unwrap_or(b"/tmp"),
            label: label.unwrap_or(b"default"),
        },
    }
}

impl Socket<'_> {
    /// The socket's path for user `uid`, written into `out` (without a NUL);
    /// `None` when it does not fit.
    pub fn write_path<'o>(&self, uid: u32, out: &'o mut [u8]) -> Option<&'o [u8]> {
        let mut w = Writer { out, len: 0 };
        match *self {
            Socket::Path(p) => w.put(p)?,
            Socket::Label { tmpdir, label } => {
                w.put(tmpdir.strip_suffix(b"/").unwrap_or(tmpdir))?;
                w.put(b"/tmux-")?;
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

    fn reaches(args: &[&str]) -> bool {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        reaches_server_environment(&argv)
    }

    #[test]
    fn commands_that_start_processes_reach_the_server() {
        assert!(reaches(&["tmux"]));
        assert!(reaches(&["tmux", "-L", "x"]));
        assert!(reaches(&["tmux", "-L", "x", "new-window", "env"]));
        assert!(reaches(&["tmux", "neww"]));
        assert!(reaches(&["tmux", "split"]));
        assert!(reaches(&["tmux", "-S/s", "set", "-g", "x", "y", ";", "respawnp", "-k"]));
        assert!(reaches(&["tmux", "display", "-p", "x;", "run", "env"]));
        assert!(reaches(&["tmux", "if", "true", "new-window"]));
        assert!(reaches(&["tmux", "-C", "new"]));
        // A client that attaches has its status line's jobs run; hooks, key
        // bindings, prompts and menus run their commands later.
        assert!(reaches(&["tmux", "attach", "-t", "s"]));
        assert!(reaches(&["tmux", "a"]));
        assert!(reaches(&["tmux", "switchc", "-t", "s"]));
        assert!(reaches(&["tmux", "set-hook", "-g", "after-select-pane", "run env"]));
        assert!(reaches(&["tmux", "bind", "x", "run", "env"]));
        assert!(reaches(&["tmux", "confirm", "kill-server"]));
        assert!(reaches(&["tmux", "command-prompt"]));
        assert!(reaches(&["tmux", "menu", "x", "x", "run env"]));
    }

    #[test]
    fn pipe_pane_is_told_apart() {
        let argv = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        assert!(pipes_a_pane(&argv(&["tmux", "pipe-pane", "cat"])));
        assert!(pipes_a_pane(&argv(&["tmux", "neww;", "pipep", "-o", "cat"])));
        assert!(!pipes_a_pane(&argv(&["tmux", "new-window", "pipe-pane"])));
    }

    #[test]
    fn other_commands_do_not() {
        assert!(!reaches(&["tmux", "show-environment", "-g"]));
        assert!(!reaches(&["tmux", "-L", "x", "display", "-p", "#{pid}"]));
        assert!(!reaches(&["tmux", "kill-server"]));
        assert!(!reaches(&["tmux", "display", "-p", "x"]));
        assert!(!reaches(&["tmux", "-c", "env"]));
        assert!(!reaches(&["tmux", "-V"]));
        assert!(!reaches(&["tmux", "set", "-g", "status", "off"]));
        assert!(!reaches(&["tmux", "select-pane", "-t", "new-window"]));
        // A command's operand is not a command.
        assert!(!reaches(&["tmux", "send-keys", "new-window", "Enter"]));
    }

    fn path(args: &[&str], tmux: Option<&str>, tmpdir: Option<&str>) -> String {
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let s = socket(&argv, tmux.map(str::as_bytes), tmpdir.map(str::as_bytes));
        let mut out = [0u8; 256];
        String::from_utf8(s.write_path(1000, &mut out).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn the_socket_is_found_as_tmux_finds_it() {
        assert_eq!(path(&["tmux"], None, None), "/tmp/tmux-1000/default");
        assert_eq!(path(&["tmux", "-L", "t2"], None, None), "/tmp/tmux-1000/t2");
        assert_eq!(path(&["tmux", "-Lt2", "new"], None, Some("/run/x/")), "/run/x/tmux-1000/t2");
        assert_eq!(path(&["tmux", "-uS", "/s/x", "-L", "y"], None, None), "/s/x");
        assert_eq!(path(&["tmux", "new"], Some("/s/in,12,0"), None), "/s/in");
        assert_eq!(path(&["tmux", "-L", "o"], Some("/s/in,12,0"), None), "/tmp/tmux-1000/o");
        assert_eq!(path(&["tmux"], Some(""), Some("")), "/tmp/tmux-1000/default");
        assert_eq!(path(&["tmux", "-L", "a", "-L", "b"], None, None), "/tmp/tmux-1000/b");
    }
}
