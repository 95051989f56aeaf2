//! How a tmux client's argv carries environment: tmux's own options, then a
//! sequence of commands separated by `;`, each read with its own getopt string.
//!
//! A tmux client's argv is the one argv that lives for days: the server is forked
//! from the first client and keeps its command line, so a pair missed here sits
//! in `ps` for the life of the server. The commands are read where tmux reads
//! them; what tmux hands to another parser (a shell command, the tmux commands
//! that `if-shell` or `bind-key` run later, a program's own arguments) is read
//! loosely, word by word ([`loose_pairs`]), erring on the side of finding a pair.

use super::{
    at, decoded, is_option, loose_at, loose_pair, written_value, is_pair, is_quote, read_option_and_value, unescape_name,
    valid_name, walk_options, word_len, words, Grammar, PairAt, MAX_ESCAPED_NAME,
    PLAIN,
};

/// tmux's own options before the command ("2c:CDdf:lL:NqS:T:uUvV").
const TMUX_GLOBAL: Grammar = Grammar {
    short_value: b"cfLST",
    ..PLAIN
};

/// The commands this module reads by name (any other is read for its `-e`
/// options only). One string, not a list: see [`Grammar::long_value`].
const TMUX_READ: &[u8] = b"new-session new-window split-window respawn-pane \
    respawn-window display-popup run-shell if-shell pipe-pane confirm-before \
    command-prompt bind-key set-hook display-menu set-environment";

/// What a command's arguments hold, for the commands in [`TMUX_READ`].
#[derive(Clone, Copy, Default)]
struct Command {
    /// The option letters that take a value in its getopt string.
    valued: &'static [u8],
    /// Its first operand is a shell command, and the operands after it that
    /// command's arguments (tmux 3.0 and later run several operands as an argv).
    shell: bool,
    /// Its arguments hold tmux commands (or, for `run-shell -C`, one): each
    /// argument, an option's value included, is read loosely.
    nesting: bool,
    /// `set-environment NAME VALUE`.
    setenv: bool,
}

/// The command `word` names: by alias, full name, or a prefix of exactly one of
/// [`TMUX_READ`] (tmux accepts unique prefixes; one that is unique here but
/// not among all of tmux's commands is refused by tmux, so reading it costs
/// nothing). `new-session` when no command is named: tmux then runs it.
fn command(word: &[u8]) -> Command {
    let word: &[u8] = match word {
        b"new" => b"new-session",
        b"neww" => b"new-window",
        b"splitw" => b"split-window",
        b"respawnp" => b"respawn-pane",
        b"respawnw" => b"respawn-window",
        b"popup" => b"display-popup",
        b"run" => b"run-shell",
        b"if" => b"if-shell",
        b"pipep" => b"pipe-pane",
        b"confirm" => b"confirm-before",
        b"bind" => b"bind-key",
        b"menu" => b"display-menu",
        b"setenv" => b"set-environment",
        w => w,
    };
    let mut named = words(TMUX_READ).filter(|c| !word.is_empty() && c.starts_with(word));
    let name = match (named.next(), named.next()) {
        (Some(c), None) => c,
        (Some(c), Some(_)) if c == word => c,
        _ => return Command::default(),
    };
    grammar_of(name)
}

/// The option letters with values are those of each command's template in
/// tmux's cmd-*.c, merged over tmux 3.0 to 3.5 so that no version's valued
/// option hides an operand.
fn grammar_of(name: &[u8]) -> Command {
    let shell = Command {
        shell: true,
        ..Command::default()
    };
    let nesting = Command {
        nesting: true,
        ..Command::default()
    };
    match name {
        b"new-session" => Command { valued: b"ceFfnstxy", ..shell }, // "Ac:dDe:EF:f:n:Ps:t:x:Xy:"
        b"new-window" => Command { valued: b"ceFnt", ..shell },      // "abc:de:F:kn:PSt:"
        b"split-window" => Command { valued: b"ceFlpt", ..shell },   // "bc:de:fF:hIl:p:Pt:vZ"
        b"respawn-pane" | b"respawn-window" => Command { valued: b"cet", ..shell }, // "c:e:kt:"
        b"display-popup" => Command { valued: b"bcdehsStTwxy", ..shell }, // "Bb:Cc:d:e:Eh:s:S:t:T:w:x:y:"
        b"pipe-pane" => Command { valued: b"t", ..shell }, // "IOot:"
        // `-F` reads the first operand as a format, `-C` the command as tmux's.
        b"if-shell" => Command { valued: b"t", nesting: true, ..shell }, // "bFt:"
        b"run-shell" => Command { valued: b"cdt", nesting: true, ..shell }, // "bd:Cc:Et:"
        b"confirm-before" => Command { valued: b"cpt", ..nesting }, // "bc:p:t:y"
        b"command-prompt" => Command { valued: b"IptT", ..nesting }, // "1bFkiI:Np:t:T:"
        b"bind-key" => Command { valued: b"NT", ..nesting },        // "nrN:T:"
        b"set-hook" => Command { valued: b"t", ..nesting },         // "agpRt:uw"
        b"display-menu" => Command { valued: b"bcCHsStTxy", ..nesting }, // "b:c:C:H:s:S:MOt:T:x:y:"
        _ => Command { valued: b"t", setenv: true, ..Command::default() }, // set-environment "Fhgrt:u"
    }
}

/// The separator of a tmux command sequence: `;` alone, or at the end of an
/// argument (`\;` in a shell), unless escaped there.
fn ends_command(arg: &[u8]) -> bool {
    arg == b";" || (arg.ends_with(b";") && !arg.ends_with(b"\\;"))
}

/// tmux: global options, then each command of the sequence with its own options.
/// Every argument before a command's `--` is read as an option when it looks
/// like one, so a `-e` among a command's operands counts too (see the module
/// docs).
pub(super) fn tmux_pairs(argv: &[&[u8]], f: &mut impl FnMut(PairAt)) {
    walk_tmux(argv, &mut |_, _| {}, f);
}

/// Each tmux command in `argv`: the index of its first argument, and that
/// argument without a `;` that ends it; nothing when argv names no command (tmux
/// then runs `new-session`).
pub fn for_each_tmux_command<'a>(argv: &[&'a [u8]], mut f: impl FnMut(usize, &'a [u8])) {
    walk_tmux(argv, &mut f, &mut |_| {});
}

/// Where one command of the sequence is: its kind, its operands so far, and
/// whether its `--` was read.
struct Reading {
    command: Command,
    operands: usize,
    dashdash: bool,
    /// In `set-environment`: the argument of its first operand, the name.
    setenv_name: Option<usize>,
}

/// The one reading of a tmux argv, for its commands and for its pairs.
fn walk_tmux<'a>(
    argv: &[&'a [u8]],
    on_command: &mut impl FnMut(usize, &'a [u8]),
    on_pair: &mut impl FnMut(PairAt),
) {
    // tmux's own options: their values are read loosely too (`-T NAME=VALUE`).
    let mut i = walk_options(&TMUX_GLOBAL, argv, 1, on_pair);
    let mut r = Reading {
        command: command(b"new-session"),
        operands: 0,
        dashdash: false,
        setenv_name: None,
    };
    let mut at_start = true;
    while let Some(&arg) = argv.get(i) {
        if at_start {
            let word = arg.strip_suffix(b";").unwrap_or(arg);
            on_command(i, word);
            r = Reading {
                command: command(word),
                operands: 0,
                dashdash: false,
                setenv_name: None,
            };
            at_start = ends_command(arg);
            i += 1;
            continue;
        }
        let step = read_argument(&mut r, argv, i, on_pair);
        if r.command.nesting {
            (i..i + step).for_each(|k| loose_pairs(argv, k, on_pair));
        }
        // A separator ends the command, whether it stands alone or ends the
        // last argument read (an option's value included).
        at_start = argv.get(i + step - 1).is_some_and(|last| ends_command(last));
        i += step;
    }
}

/// Read `argv[i]`, an argument of the command `r` reads: report its pairs and
/// return how many arguments it took (an option's value is the next one).
fn read_argument(r: &mut Reading, argv: &[&[u8]], i: usize, f: &mut impl FnMut(PairAt)) -> usize {
    let Some(&arg) = argv.get(i) else { return 1 };
    if arg == b"--" && !r.dashdash {
        r.dashdash = true;
        return 1;
    }
    // A program's own options after its name (`sh -c ...`) are not tmux's: tmux
    // stops reading options at the first operand.
    let program_argument = r.command.shell && r.operands > 0;
    if is_option(arg) && !r.dashdash && !program_argument {
        let g = Grammar {
            short_value: match r.command.valued {
                b"" => b"ceFfnstxy",
                valued => valued,
            },
            pair_short: b'e',
            ..TMUX_GLOBAL
        };
        return read_option_and_value(&g, argv, i, f);
    }
    let n = r.operands;
    r.operands += 1;
    if r.command.setenv {
        match r.setenv_name {
            None => r.setenv_name = Some(i),
            // Clearing a variable to empty keeps nothing out of a command line.
            Some(name)
                if n == 1
                    && argv.get(name).is_some_and(|n| valid_name(n))
                    && argv.get(i).is_some_and(|v| v.iter().any(|&b| !is_quote(b))) =>
            {
                f(PairAt {
                    within: true,
                    value_in: Some((i, 0)),
                    ..at(name, 0)
                });
            }
            Some(_) => {}
        }
    } else if !r.command.nesting {
        // A shell command (`NAME=VALUE cmd`, `export NAME=VALUE; cmd`), a
        // program's arguments (`env NAME=VALUE cmd`), text for `send-keys`, an
        // option's value for `set-option`: whatever it is, it sits in the
        // client's command line. (A nesting command's are read by the caller.)
        loose_pairs(argv, i, f);
    }
    1
}

/// The pairs of argument `k`, read loosely: the argument holds a command line,
/// tmux commands, or text, for a parser this module does not run (a shell,
/// tmux's own for `if-shell` and `bind-key`, a program's). Each word (ended by
/// a blank or a `;`), past its opening quotes, counts when it is
/// - a pair read loosely ([`loose_pair`]: a value written in the command line,
///   a name with no lowercase letter, written plainly or with quotes and
///   escapes the parser removes, `G"H_TOKEN"=V`, `GH_\TOKEN=V`), wherever it
///   stands;
/// - an option with a pair attached: `-eNAME=VALUE`, a cluster `-deNAME=VALUE`,
///   `--env=NAME=VALUE`;
/// - the name of `set-environment NAME VALUE` (`setenv -g NAME VALUE`), with the
///   word after it as its value, when that is written in the command line.
///
/// Each is [`PairAt::within`] its argument (the words around it are a
/// command) and [`PairAt::loose`].
fn loose_pairs(argv: &[&[u8]], k: usize, f: &mut impl FnMut(PairAt)) {
    let Some(&a) = argv.get(k) else { return };
    let mut setenv = SetEnvironment::Outside;
    let mut i = 0;
    while i < a.len() {
        let rest = a.get(i..).unwrap_or(&[]);
        let len = word_len(rest);
        let quotes = rest.iter().take(len).take_while(|&&b| is_quote(b)).count();
        let word = rest.get(quotes..len).unwrap_or(&[]);
        if !word.is_empty() {
            loose_word(word, k, i + quotes, &mut setenv, f);
        }
        if rest.get(len) == Some(&b';') {
            setenv = SetEnvironment::Outside;
        }
        i += len + 1;
    }
}

/// Where [`loose_pairs`] is in a `set-environment NAME VALUE`.
#[derive(Clone, Copy)]
enum SetEnvironment {
    Outside,
    /// Named; `skip` when the next word is `-t`'s value.
    Options { skip: bool },
    /// Its name read, at this offset, escaped or not.
    Named { at: usize, escaped: bool },
}

/// One word of [`loose_pairs`], at offset `start` of argument `k`.
fn loose_word(
    word: &[u8],
    k: usize,
    start: usize,
    setenv: &mut SetEnvironment,
    f: &mut impl FnMut(PairAt),
) {
    // A line continuation (`\` before a newline) or empty quotes: no word.
    if word.iter().all(|&b| b == b'\\' || is_quote(b)) {
        return;
    }
    let option = word.first() == Some(&b'-');
    if option {
        if let Some(offset) = attached_pair(word) {
            f(loose_at(k, start + offset, false));
        }
    } else if let Some(escaped) = loose_pair(word) {
        f(loose_at(k, start, escaped));
    }
    let bare = trim_end(word);
    let mut command = [0; 32];
    let command = decoded(bare, &mut command).unwrap_or(bare);
    *setenv = match *setenv {
        _ if is_set_environment(command) => SetEnvironment::Options { skip: false },
        SetEnvironment::Options { skip: true } => SetEnvironment::Options { skip: false },
        // set-environment's only valued option is `-t`, last in a cluster.
        SetEnvironment::Options { .. } if option => SetEnvironment::Options {
            skip: word.len() > 1 && word.ends_with(b"t"),
        },
        SetEnvironment::Options { .. } if valid_name(bare) => SetEnvironment::Named {
            at: start,
            escaped: false,
        },
        SetEnvironment::Options { .. } => match unescape_name(bare, &mut [0; MAX_ESCAPED_NAME]) {
            Some(_) => SetEnvironment::Named {
                at: start,
                escaped: true,
            },
            None => SetEnvironment::Outside,
        },
        SetEnvironment::Named { at: name, escaped } => {
            if written_value(word) {
                f(PairAt {
                    value_in: Some((k, start)),
                    ..loose_at(k, name, escaped)
                });
            }
            SetEnvironment::Outside
        }
        SetEnvironment::Outside => SetEnvironment::Outside,
    };
}

/// `word` without the quotes and the `;` that may close it.
fn trim_end(word: &[u8]) -> &[u8] {
    let end = word
        .iter()
        .rposition(|&b| !is_quote(b) && b != b';')
        .map_or(0, |p| p + 1);
    word.get(..end).unwrap_or(word)
}

/// Where the pair attached to an option word starts: after the `e` of a cluster
/// of tmux's letters (`-eN=V`, `-deN=V`, `-dPeN=V`), or after the first `=` of
/// a long option (`--env=N=V`, `--setenv=N=V`).
fn attached_pair(word: &[u8]) -> Option<usize> {
    if word.starts_with(b"--") {
        let eq = crate::bytes::memchr(b'=', word)?;
        return is_pair(word.get(eq + 1..)?).then_some(eq + 1);
    }
    // tmux's `-e`, alone or after other letters of a cluster; an option such as
    // cmake's `-DENABLE_X=ON` is not one.
    let letters = word.iter().enumerate().skip(1);
    for (j, &o) in letters.take_while(|(_, o)| o.is_ascii_alphabetic()) {
        match o {
            b'e' => return is_pair(word.get(j + 1..)?).then_some(j + 1),
            b'a'..=b'z' | b'P' | b'E' | b'Z' | b'I' => {}
            _ => return None,
        }
    }
    None
}

/// Whether the tmux command `word` is `set-environment` (by name, its alias
/// `setenv`, or a unique prefix: `set-e` and longer).
fn is_set_environment(word: &[u8]) -> bool {
    word == b"setenv" || (word.len() >= 5 && b"set-environment".starts_with(word))
}

/// Each of tmux's global options before its command, in order: its letter, and
/// its value for the options that take one (`-L NAME`, `-SPATH`, `-f FILE`).
pub fn for_each_tmux_option<'a>(argv: &[&'a [u8]], mut f: impl FnMut(u8, Option<&'a [u8]>)) {
    let mut i = 1;
    while let Some(&arg) = argv.get(i) {
        if arg == b"--" || !is_option(arg) {
            return;
        }
        i += 1;
        for (k, &o) in arg.iter().enumerate().skip(1) {
            if !TMUX_GLOBAL.short_value.contains(&o) {
                f(o, None);
                continue;
            }
            let attached = arg.get(k + 1..).filter(|rest| !rest.is_empty());
            let value = attached.or_else(|| argv.get(i).copied());
            if attached.is_none() {
                i += 1;
            }
            f(o, value);
            break;
        }
    }
}

/// Where a tmux client's command begins in `argv`: the index of the first
/// argument after tmux's own options (and their `--`); `argv.len()` when there
/// is no command.
pub fn tmux_command_start(argv: &[&[u8]]) -> usize {
    walk_options(&TMUX_GLOBAL, argv, 1, &mut |_| {})
}
