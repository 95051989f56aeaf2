//! What a tmux client reaches in its server.
//!
//! A tmux pane does not get its environment from the client that asked for it:
//! the server builds it from its global environment, the session's, and the
//! command's `-e` pairs. So does every process the server runs for a command
//! (`run-shell`, `if-shell`, `pipe-pane`). A server started without envshim, by
//! a shell that held credentials, hands them to every pane, whatever the client
//! runs under. Before such a command reaches a server, the front ends have the
//! server's environments cleaned (`envwrap mux-env --fix`, docs/adr/0014); this
//! module says when a client's argv needs that, and which server it talks to, as
//! tmux itself reads its argv and environment.

use crate::bytes::words;
use super::{Multiplexer, Request, Server, Socket};
use crate::pairs::{for_each_tmux_command, for_each_tmux_option, tmux_command_start, Carrier};

/// tmux's row of [`super::MULTIPLEXERS`].
pub static MULTIPLEXER: Multiplexer = Multiplexer {
    name: "tmux",
    c_name: c"tmux",
    programs: &[b"tmux"],
    client_vars: &[b"TMUX", b"TMUX_TMPDIR"],
    helper_vars: &[],
    server: "server",
    windows: "panes",
    carrier: Some(Carrier::Tmux),
    read_client,
    commands_start: Some(tmux_command_start),
};

/// [`Multiplexer::read_client`] for tmux: `vars` are `TMUX` and `TMUX_TMPDIR`.
fn read_client<'a>(argv: &[&'a [u8]], vars: &[Option<&'a [u8]>]) -> Request<'a> {
    let var = |i: usize| vars.get(i).copied().flatten();
    Request {
        reaches_server: reaches_server_environment(argv),
        server: Server::Socket(socket(argv, var(0), var(1))),
        server_process_env: pipes_a_pane(argv),
    }
}

/// The commands that start no process, now or later, by their own effect: each
/// with its alias in tmux's command table and why it is harmless. A client whose
/// every command is one of these (as written: not a prefix, not another alias)
/// with arguments that run nothing ([`runs_nothing`]) leaves the server alone;
/// any other command has the server cleaned first. The list is short on
/// purpose: a command missing from it costs one cleaning, a command wrongly on
/// it costs a leak (docs/adr/0014-tmux-servers.md says why each is here).
///
/// One string of blank-separated words, not a table of slices: a table of
/// slices is data the loader relocates in every process, on the page the
/// constructor's statics share (docs/adr/0008).
const HARMLESS: &str = concat!(
    // Answers whether a session exists.
    "has-session has ",
    // Print an environment, options, hooks, a buffer or the message log; `-s`
    // prints shell commands, it does not run them.
    "show-environment showenv show-options show show-window-options showw ",
    "show-hooks show-buffer showb show-messages showmsgs ",
    // Copies what a pane shows into a buffer or to stdout.
    "capture-pane capturep ",
    // Writes keys to a pane's terminal: the pane's process is running already,
    // with the environment it has. Not with `-X` (copy mode's commands, of which
    // `copy-pipe` runs a shell command) or `-K` (keys read through the key
    // bindings, which may run anything): see [`sends_keys_only`].
    "send-keys send ",
    // Change what a client shows.
    "select-pane selectp select-window selectw select-layout selectl ",
    "resize-pane resizep resize-window resizew ",
    // End panes, windows, sessions or the server: they start nothing.
    "kill-pane killp kill-window killw kill-session kill-server ",
    // Print lists; their `-F` and `-f` are formats, read by [`runs_nothing`].
    "list-sessions ls list-windows lsw list-panes lsp list-clients lsc ",
    "list-buffers lsb list-keys lsk list-commands lscm ",
    // Prints or shows a message: a format, read by [`runs_nothing`].
    "display-message display",
);

/// True when the tmux client `argv` may start a process in its server, so that
/// a foreign server must be cleaned first: unless every command of its sequence
/// is [`HARMLESS`] and runs nothing. No command at all counts (tmux then runs
/// `new-session`), and so does a prefix, an alias of another command (stock or
/// set with `command-alias`), a command tmux adds later, or one this reading
/// cannot tell. `-c` (the client runs a shell itself) and `-V` (prints its
/// version) reach no server.
pub fn reaches_server_environment(argv: &[&[u8]]) -> bool {
    if client_only(argv) {
        return false;
    }
    !harmless_sequence(argv)
}

fn client_only(argv: &[&[u8]]) -> bool {
    let mut client_only = false;
    for_each_tmux_option(argv, |letter, _| {
        client_only |= letter == b'c' || letter == b'V';
    });
    client_only
}

/// Every command of `argv` is harmless, and there is at least one.
fn harmless_sequence(argv: &[&[u8]]) -> bool {
    let start = tmux_command_start(argv);
    let rest = argv.get(start..).unwrap_or(&[]);
    if rest.is_empty() || !rest.iter().all(|a| runs_nothing(a)) {
        return false;
    }
    // Each command with its arguments: up to where the next one starts.
    let mut all_harmless = true;
    let mut previous: Option<(usize, &[u8])> = None;
    let mut judge = |from: usize, word: &[u8], to: usize| {
        let args = argv.get(from + 1..to).unwrap_or(&[]);
        all_harmless &= is_harmless(word) && (!is_send_keys(word) || sends_keys_only(args));
    };
    for_each_tmux_command(argv, |at, word| {
        if let Some((from, w)) = previous.replace((at, word)) {
            judge(from, w, at);
        }
    });
    match previous {
        Some((from, w)) => judge(from, w, argv.len()),
        None => return false,
    }
    all_harmless
}

/// `word` names a [`HARMLESS`] command, by its full name or its table alias.
fn is_harmless(word: &[u8]) -> bool {
    words(HARMLESS.as_bytes()).any(|w| w == word)
}

fn is_send_keys(word: &[u8]) -> bool {
    word == b"send-keys" || word == b"send"
}

/// `send-keys`'s options ask for neither `-X` nor `-K` (nor, read loosely, any
/// argument that looks like an option holding either letter).
fn sends_keys_only(args: &[&[u8]]) -> bool {
    !args.iter().any(|a| {
        a.len() > 1 && a.first() == Some(&b'-') && a != b"--" && a.iter().any(|&b| b == b'X' || b == b'K')
    })
}

/// An argument that runs nothing when tmux reads it as a format: no `#(` job,
/// and no `E:` or `T:` modifier (`#{E:status-right}` expands an option's value
/// as a format, and that may hold a job). Read as bytes, wherever they stand:
/// a `#(` in a name or in text costs a cleaning, not a leak.
pub fn runs_nothing(arg: &[u8]) -> bool {
    let job = arg.windows(2).any(|w| w == b"#(");
    let expands = arg.windows(2).any(|w| w == b"#{")
        && arg
            .windows(2)
            .any(|w| matches!(w, [b'E' | b'T', b':' | b';']));
    !job && !expands
}

/// Commands known by name to start a process without piping a pane, and their
/// aliases: for [`pipes_a_pane`]'s warning only.
const STARTS_PROCESSES: &[u8] = b"new-session new-window split-window respawn-pane \
    respawn-window display-popup run-shell if-shell source-file \
    attach-session switch-client set-hook bind-key command-prompt confirm-before \
    display-menu set-option set-environment";
const ALIASES: &[u8] =
    b"new neww splitw respawnp respawnw popup run if source attach a switchc bind \
    confirm menu set setenv";

/// True when the tmux client `argv` may run `pipe-pane`: by name, alias or
/// prefix, or through a command this reading does not know by name (another
/// alias, a `command-alias`). tmux starts a pipe-pane command with the server's
/// own process environment, not with the environments a client can change: a
/// server started without envshim gives that command whatever its first client
/// held.
pub fn pipes_a_pane(argv: &[&[u8]]) -> bool {
    let mut found = false;
    for_each_tmux_command(argv, |_, word| {
        let pipe = !word.is_empty() && (word == b"pipep" || b"pipe-pane".starts_with(word));
        let known = is_harmless(word)
            || words(ALIASES).any(|a| a == word)
            || words(STARTS_PROCESSES).any(|c| c == word);
        found |= pipe || !known;
    });
    found
}


/// The server the client `argv` talks to, as tmux finds its socket: `-S
/// PATH`; else the first field of `$TMUX` when `-L` is not given either (a
/// client run inside a pane); else `TMPDIR/tmux-UID/NAME` for `-L NAME`
/// (`default` without one), where TMPDIR is `$TMUX_TMPDIR` when set and not
/// empty, else `/tmp`. `tmux_var` and `tmux_tmpdir` are the values of `TMUX`
/// and `TMUX_TMPDIR` in the client's environment.
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
        _ => label_socket(tmux_tmpdir, label.unwrap_or(b"default")),
    }
}

/// The socket `-L LABEL` names, with `$TMUX_TMPDIR`'s value `tmux_tmpdir`.
pub fn label_socket<'a>(tmux_tmpdir: Option<&'a [u8]>, label: &'a [u8]) -> Socket<'a> {
    Socket::Label {
        tmpdir: tmux_tmpdir.filter(|d| !d.is_empty()).unwrap_or(b"/tmp"),
        per_user: b"tmux-",
        label,
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
    fn what_is_not_proven_harmless_reaches_the_server() {
        // Aliases that tmux's command table or its default `command-alias` gives,
        // prefixes, names set with `command-alias`, names tmux may add.
        for word in ["splitp", "split-pane", "info", "choose-session", "list-s", "displ", "ls-x", "spawn", ""] {
            assert!(reaches(&["tmux", "-L", "x", word, "-t", "s"]), "{word}");
        }
        // Commands that change what runs later.
        assert!(reaches(&["tmux", "set", "-g", "status", "off"]));
        assert!(reaches(&["tmux", "set-option", "-s", "command-alias[9]", "x=neww"]));
        // One command that is not harmless in a sequence of harmless ones.
        assert!(reaches(&["tmux", "ls", ";", "has", "-t", "s;", "splitp"]));
    }

    #[test]
    fn a_harmless_command_with_a_job_or_an_expansion_reaches_the_server() {
        assert!(reaches(&["tmux", "ls", "-F", "#(env > f)"]));
        assert!(reaches(&["tmux", "lsw", "-f", "#{==:#(id),x}"]));
        assert!(reaches(&["tmux", "display", "-p", "#{E:status-right}"]));
        assert!(reaches(&["tmux", "display", "-p", "#{=10;T:status-left}"]));
        assert!(reaches(&["tmux", "selectp", "-T", "#(id)"]));
        assert!(reaches(&["tmux", "send-keys", "-X", "copy-pipe", "env > f"]));
        assert!(reaches(&["tmux", "send", "-lK", "x"]));
    }

    #[test]
    fn pipe_pane_is_told_apart() {
        let argv = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        assert!(pipes_a_pane(&argv(&["tmux", "pipe-pane", "cat"])));
        assert!(pipes_a_pane(&argv(&["tmux", "neww;", "pipep", "-o", "cat"])));
        // A name this reading does not know may be a `command-alias` of it.
        assert!(pipes_a_pane(&argv(&["tmux", "pp", "cat"])));
        assert!(!pipes_a_pane(&argv(&["tmux", "new-window", "pipe-pane"])));
        assert!(!pipes_a_pane(&argv(&["tmux", "ls", ";", "neww"])));
    }

    #[test]
    fn harmless_commands_do_not() {
        assert!(!reaches(&["tmux", "show-environment", "-g"]));
        assert!(!reaches(&["tmux", "-L", "x", "display", "-p", "#{pid}"]));
        assert!(!reaches(&["tmux", "kill-server"]));
        assert!(!reaches(&["tmux", "display", "-p", "x"]));
        assert!(!reaches(&["tmux", "-c", "env"]));
        assert!(!reaches(&["tmux", "-V"]));
        assert!(!reaches(&["tmux", "ls", "-F", "#{session_name} #{T}"]));
        assert!(!reaches(&["tmux", "has", "-t", "s", ";", "capturep", "-p"]));
        assert!(!reaches(&["tmux", "select-pane", "-t", "new-window"]));
        // A command's operand is not a command.
        assert!(!reaches(&["tmux", "send-keys", "new-window", "Enter"]));
        assert!(!reaches(&["tmux", "send", "-t", "s", "-l", "C-X"]));
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
