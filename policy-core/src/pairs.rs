//! Where the programs that carry environment in argv keep their `NAME=VALUE`
//! pairs: one grammar per program, as its own option parser reads its argv.
//!
//! A pair missed here stays in argv, where `ps` shows it for the life of the
//! process (a tmux server's for days), so each table follows the real parser, and
//! where a table cannot know (an option this table does not list, a command's own
//! arguments), it errs on the side of finding a pair: a pair is judged by the
//! environment rules, so finding one that the program would not have read only
//! drops an argument the policy would not let through anyway.
//!
//! | program | parser | what is read |
//! |---|---|---|
//! | tmux | getopt, per command (`tmux_argv`) | global options, then commands separated by `;`, each with its own option string (so that clusters `-de N=V`, `-deN=V`, valued options such as `-c DIR`, `-F`, `-d DELAY` and `--` are read as tmux reads them); `-e` anywhere else counts too; `set-environment NAME VALUE`; loosely, word by word, every other operand, and every argument of the commands that hold tmux commands: pairs anywhere (names unescaped as tmux and the shell read them), `-eNAME=V`, nested `set-environment` |
//! | screen | by hand, letter by letter ([`screen_argv::read_client`]) | `-X`/`-Q setenv NAME VALUE`; loosely, every argument (a window's command line, `-X stuff` text, `-X eval` commands) |
//! | docker, podman | pflag | `-e`, `--env` (and its prefixes), in clusters, `-e=N=V` as pflag reads it, in any subcommand (`run`, `container run`, `compose run`, ...), up to `--`: the scan does not stop at the image; a long option this table cannot know never swallows the `-e` after it; loosely, every other argument (`command_pairs`) |
//! | systemd-run | getopt_long | `-E`, `--setenv` (and its unique prefixes), `-p`/`--property Environment=...` (each assignment of its blank-separated, optionally quoted list), up to `--`: the scan does not stop at the command; loosely, the command's words (`command_pairs`) |
//! | env, sudo | getopt_long | options (long ones by unique prefix, `--ch` is `--chdir`; sudo's `-a`/`--auth-type` take a value, its `-h` only an attached one), then the operands that are pairs, up to the first that is not; in env's `-S`/`--split-string` value, its leading words that are pairs; sudo: loosely, the command after them |

use crate::bytes::{split_entry, words};

pub mod screen_argv;
mod tmux_argv;

pub use tmux_argv::{for_each_tmux_command, for_each_tmux_option, tmux_command_start};
use tmux_argv::tmux_pairs;

/// Programs that carry environment in argv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    Tmux,
    Container,
    Env,
    Sudo,
    SystemdRun,
    Screen,
}

/// The carrier a program that is not a multiplexer is, by its basename (a
/// multiplexer's is in its row of `mux::MULTIPLEXERS`: [`crate::argv::carrier`]
/// asks both).
pub fn carrier_by_name(name: &[u8]) -> Option<Carrier> {
    Some(match name {
        b"docker" | b"podman" => Carrier::Container,
        b"env" => Carrier::Env,
        b"sudo" => Carrier::Sudo,
        b"systemd-run" => Carrier::SystemdRun,
        _ => return None,
    })
}

/// A `NAME=VALUE` pair located in argv: the argument holding it, where the pair
/// starts in that argument, and the separate flag argument before it, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairAt {
    pub arg: usize,
    pub offset: usize,
    pub flag: Option<usize>,
    /// Where the pair's option letter stands in a cluster of short options
    /// (`-de`, `-deNAME=V`: 2), in the flag argument or, attached, in the pair's
    /// own; `None` when the option is alone (`-e`, `--env`). Dropping the pair
    /// keeps the options before it (`-d`).
    pub letter: Option<usize>,
    /// The pair is one of several words of its argument (`systemd-run -p
    /// "Environment=A=1 B=2"`, `env -S "A=1 cmd"`): it ends at the first blank,
    /// and cannot be dropped without the words around it.
    pub within: bool,
    /// The pair is two words, `NAME VALUE` (`tmux set-environment NAME VALUE`):
    /// the name starts at `offset` of argument `arg`, and the value at this
    /// (argument, offset). Like a pair within other words, it cannot be dropped
    /// alone. A value in an argument of its own is the whole argument; one in the
    /// name's argument (a nested `setenv NAME VALUE`) ends at the first blank.
    pub value_in: Option<(usize, usize)>,
    /// The name is written with quotes or backslashes that the program's parser
    /// removes (`GH_\TOKEN`, `G"H_TOKEN"`): it is judged as
    /// [`unescape_name`] reads it ([`PairAt::judged_name`]).
    pub escaped: bool,
    /// Found by reading a command line that another parser reads (a shell
    /// command, tmux commands nested in an argument, the command a carrier
    /// starts): the program does not set it itself, so it is refused only when
    /// its name is a credential's, whose value would sit in that command line.
    /// Any other name is judged where it is set, by the shim in the process
    /// that sets it.
    pub loose: bool,
}

impl PairAt {
    /// The pair's name, as written, and value in `argv`.
    pub fn name_value<'a>(&self, argv: &[&'a [u8]]) -> Option<(&'a [u8], &'a [u8])> {
        let arg = argv.get(self.arg)?;
        let Some((v, at)) = self.value_in else {
            let pair = self.bytes(arg);
            if !self.escaped {
                return split_entry(pair);
            }
            let (name_end, value_at) = split_pair(pair)?;
            return Some((pair.get(..name_end)?, pair.get(value_at..)?));
        };
        let name = arg.get(self.offset..)?;
        let name_len = match self.escaped {
            true => word_len(name),
            false => name.iter().take_while(|&&b| is_name_byte(b)).count(),
        };
        let value = argv.get(v)?.get(at..)?;
        let value = match v == self.arg {
            true => value.get(..word_len(value))?,
            false => value,
        };
        Some((name.get(..name_len)?, value))
    }

    /// The name the rules judge: `written` itself, or, for an
    /// [`escaped`](PairAt::escaped) name, the name it stands for, in `out`.
    pub fn judged_name<'n>(&self, written: &'n [u8], out: &'n mut [u8]) -> Option<&'n [u8]> {
        match self.escaped {
            true => unescape_name(written, out),
            false => Some(written),
        }
    }

    /// The pair's bytes in its argument `arg`: to the end of the argument, or,
    /// for a pair [`within`](PairAt::within) other words, to the first blank
    /// (or `;`, which ends a command there).
    pub fn bytes<'a>(&self, arg: &'a [u8]) -> &'a [u8] {
        let rest = arg.get(self.offset..).unwrap_or(&[]);
        let end = match self.within {
            true => word_len(rest),
            false => rest.len(),
        };
        rest.get(..end).unwrap_or(rest)
    }
}

/// The length of the word `rest` starts with: up to a blank or tmux's `;`. A
/// newline after a backslash continues the word, as the shell and tmux read it.
fn word_len(rest: &[u8]) -> usize {
    let ends = |i: usize, b: u8| {
        let continued = b == b'\n' && i > 0 && rest.get(i - 1) == Some(&b'\\');
        (b.is_ascii_whitespace() || b == b';') && !continued
    };
    rest.iter()
        .enumerate()
        .position(|(i, &b)| ends(i, b))
        .unwrap_or(rest.len())
}

/// Room for the name [`unescape_name`] writes.
pub const MAX_ESCAPED_NAME: usize = 128;

/// The name `written` stands for once a shell's, tmux's or systemd's parser has
/// read it ([`decode`]); a trailing `+` (bash's `NAME+=VALUE`, which appends) is
/// not part of it. In `out`; `None` when it does not fit or is not a valid name
/// once read.
pub fn unescape_name<'o>(written: &[u8], out: &'o mut [u8]) -> Option<&'o [u8]> {
    let name = decoded(written, out)?;
    let name = name.strip_suffix(b"+").unwrap_or(name);
    valid_name(name).then_some(name)
}

/// `written` as its parser reads it ([`decode`]), in `out`; `None` when it does
/// not fit.
fn decoded<'o>(written: &[u8], out: &'o mut [u8]) -> Option<&'o [u8]> {
    let (mut at, mut len) = (0, 0);
    while let Some((byte, next)) = decode(written, at) {
        if let Some(b) = byte {
            *out.get_mut(len)? = b;
            len += 1;
        }
        at = next;
    }
    out.get(..len)
}

/// Where a pair written with escapes splits: the end of its name and the start
/// of its value, around the first `=` once read (`NAME\075VALUE`, `NAME\=VALUE`).
fn split_pair(word: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while let Some((byte, next)) = decode(word, at) {
        if byte == Some(b'=') {
            return Some((at, next));
        }
        at = next;
    }
    None
}

/// The byte the parsers that read a command line make of `written` at `at`, and
/// where the next one starts; `None` at the end, and a byte of `None` for what
/// they drop:
/// - quotes (`G"H_TOKEN"`), and the `$` of bash's `$'...'` and `$"..."`;
/// - a backslash before a newline (a line continued);
/// - `\xHH`, `\uHHHH`, `\UHHHHHHHH` (systemd, tmux, bash's `$'...'`), and `\` with up
///   to three octal digits: the byte they give, and 0xFF (never in a name) for
///   one past ASCII or malformed;
/// - `\` and another byte: that byte.
fn decode(written: &[u8], at: usize) -> Option<(Option<u8>, usize)> {
    let b = *written.get(at)?;
    let next = written.get(at + 1).copied();
    let hex = |from: usize, digits: usize| {
        let code = written
            .get(from..from + digits)?
            .iter()
            .try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))?;
        Some(u8::try_from(code).ok().filter(u8::is_ascii).unwrap_or(0xFF))
    };
    Some(match (b, next) {
        (b'"' | b'\'', _) => (None, at + 1),
        (b'$', Some(b'"' | b'\'')) => (None, at + 1),
        (b'\\', Some(b'\n')) => (None, at + 2),
        (b'\\', Some(b'x')) => (Some(hex(at + 2, 2).unwrap_or(0xFF)), at + 4),
        (b'\\', Some(b'u')) => (Some(hex(at + 2, 4).unwrap_or(0xFF)), at + 6),
        (b'\\', Some(b'U')) => (Some(hex(at + 2, 8).unwrap_or(0xFF)), at + 10),
        (b'\\', Some(b'0'..=b'7')) => {
            let digits = written
                .iter()
                .skip(at + 1)
                .take(3)
                .take_while(|d| (b'0'..=b'7').contains(d))
                .count();
            let octal = written.get(at + 1..at + 1 + digits)?;
            let code = octal.iter().fold(0u32, |acc, &d| acc * 8 + u32::from(d - b'0'));
            (Some(u8::try_from(code).unwrap_or(0xFF)), at + 1 + digits)
        }
        (b'\\', Some(other)) => (Some(other), at + 2),
        (b'\\', None) => (None, at + 1),
        (b, _) => (Some(b), at + 1),
    })
}

/// Bytes that open or close a quoted word in a shell's, tmux's or systemd's
/// parser.
fn is_quote(b: u8) -> bool {
    b == b'"' || b == b'\''
}

/// Whether the word `word` (a command line's, past its opening quotes) is a
/// pair, `NAME=VALUE`, and then whether its name is written with quotes or
/// backslashes that the parser removes ([`unescape_name`]).
fn word_is_pair(word: &[u8]) -> Option<bool> {
    let literal = crate::bytes::memchr(b'=', word).and_then(|eq| word.get(..eq));
    if literal.is_some_and(valid_name) {
        return Some(false);
    }
    let name = word.get(..split_pair(word)?.0)?;
    unescape_name(name, &mut [0; MAX_ESCAPED_NAME]).map(|_| true)
}

/// The word of argument `arg` at `start` ([`word_len`]).
fn word_at<'a>(argv: &[&'a [u8]], arg: usize, start: usize) -> &'a [u8] {
    let rest = argv.get(arg).and_then(|a| a.get(start..)).unwrap_or(&[]);
    rest.get(..word_len(rest)).unwrap_or(rest)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn valid_name(name: &[u8]) -> bool {
    match name.split_first() {
        Some((f, rest)) => {
            (f.is_ascii_alphabetic() || *f == b'_')
                && rest.iter().all(|&b| is_name_byte(b))
        }
        None => false,
    }
}

fn is_pair(s: &[u8]) -> bool {
    split_entry(s).is_some_and(|(n, _)| valid_name(n))
}

/// systemd's property that sets environment: `-p Environment=NAME=VALUE`.
const ENVIRONMENT_PROPERTY: &[u8] = b"Environment=";

/// How a program's options are spelled.
struct Grammar {
    /// Short options that take a value (`-c VALUE`, `-cVALUE`).
    short_value: &'static [u8],
    /// Short options whose value, if any, is attached (getopt's `h::`: `-hHOST`;
    /// `-h` alone takes none). Such an option ends its cluster.
    short_optional: &'static [u8],
    /// pflag reads `-e=VALUE` (and `-de=VALUE`) as the value `VALUE`: an `=`
    /// right after a short option's letter is not part of its value.
    short_eq_skipped: bool,
    /// Long options that take a value when written without `=`, separated by
    /// spaces. (One string, not a list of strings: every pointer in a table is a
    /// relocation the loader writes in every process that loads the shim.) Any
    /// other long option is read as taking none: the value of an option missing
    /// here is then read as an operand, which is never a pair, and an option
    /// missing here never swallows the `-e` after it.
    long_value: &'static [u8],
    /// Long options without a value (listed so that prefixes resolve), separated
    /// by spaces.
    long_bool: &'static [u8],
    /// The option whose value is a pair, short (`b'e'`; 0 for none) and long.
    pair_short: u8,
    pair_long: &'static [u8],
    /// The option whose value may be `Environment=NAME=VALUE` (systemd-run).
    property_short: u8,
    property_long: &'static [u8],
    /// The option whose value is a command line whose leading words may be pairs
    /// (env's `-S`, `--split-string`).
    split_short: u8,
    split_long: &'static [u8],
    /// getopt_long accepts any unique prefix of a long option.
    prefixes: bool,
    /// A lone `-` is an option, not an operand (`env -`, the old spelling of
    /// `env -i`).
    lone_dash_is_option: bool,
}

impl Grammar {
    /// The long option `flag` stands for: itself, or under getopt_long the one
    /// option it is a prefix of. A prefix of several stands for the pair option
    /// when that is one of them (the real parser refuses an ambiguous prefix, so
    /// erring this way costs nothing).
    fn resolve<'a>(&self, flag: &'a [u8]) -> &'a [u8] {
        if !self.prefixes {
            return flag;
        }
        let all = words(self.long_value)
            .chain(words(self.long_bool))
            .chain([self.pair_long, self.property_long])
            .filter(|o| !o.is_empty());
        if all.clone().any(|o| o == flag) || flag.len() < 4 {
            return flag;
        }
        let mut found: Option<&'a [u8]> = None;
        for o in all.filter(|o| o.starts_with(flag)) {
            if o == self.pair_long || found.is_none() {
                found = Some(o);
            }
        }
        found.unwrap_or(flag)
    }

    fn long_takes_value(&self, flag: &[u8]) -> bool {
        flag == self.pair_long
            || flag == self.property_long
            || words(self.long_value).any(|o| o == flag)
    }
}


/// A pair at `offset` of argument `arg`, if there is one.
fn pair_in(argv: &[&[u8]], arg: usize, offset: usize, flag: Option<usize>) -> Option<PairAt> {
    let value = argv.get(arg)?.get(offset..)?;
    is_pair(value).then_some(PairAt {
        arg,
        offset,
        flag,
        letter: None,
        within: false,
        value_in: None,
        escaped: false,
        loose: false,
    })
}

/// The start of each blank-separated word of `arg` from `offset` on, past one
/// opening quote (`"A=1 B=2"`, `'A=1'`), and whether the words are more than one
/// or quoted (a pair among them is then [`PairAt::within`]): as systemd reads an
/// `Environment=` value and env reads `-S`, closely enough to find the names.
fn word_starts(arg: &[u8], offset: usize, mut each: impl FnMut(usize, bool) -> bool) {
    let rest = arg.get(offset..).unwrap_or(&[]);
    let blank = |b: &u8| b.is_ascii_whitespace();
    let quote = |b: &u8| *b == b'"' || *b == b'\'';
    let words = rest.split(blank).filter(|w| !w.is_empty()).count();
    let within = words > 1 || rest.iter().any(quote);
    let mut at = offset;
    for word in rest.split(blank) {
        if !word.is_empty() {
            let start = at + usize::from(word.first().is_some_and(quote));
            if !each(start, within) {
                return;
            }
        }
        at += word.len() + 1;
    }
}

/// The pairs of a value that holds several words, from `offset` of argument
/// `arg`: every one, or (`leading`, a command line: env's `-S`, a tmux shell
/// command) those before the first word that is not a pair, the command. A pair
/// of a command line is always [`PairAt::within`]: dropping the argument would
/// change the command.
fn pairs_in_words(
    argv: &[&[u8]],
    arg: usize,
    offset: usize,
    flag: Option<usize>,
    leading: bool,
    f: &mut impl FnMut(PairAt),
) {
    let Some(&a) = argv.get(arg) else { return };
    word_starts(a, offset, |start, within| {
        let found = pair_in(argv, arg, start, flag).or_else(|| {
            let escaped = word_is_pair(word_at(argv, arg, start))?;
            Some(PairAt {
                escaped,
                flag,
                within: false,
                ..at(arg, start)
            })
        });
        if let Some(p) = found {
            f(PairAt {
                within: within || leading,
                ..p
            });
        }
        found.is_some() || !leading
    });
}

/// A pair at `offset` of argument `arg`, within other words.
fn at(arg: usize, offset: usize) -> PairAt {
    PairAt {
        arg,
        offset,
        flag: None,
        letter: None,
        within: true,
        value_in: None,
        escaped: false,
        loose: false,
    }
}

/// A pair found loosely ([`PairAt::loose`]) at `offset` of argument `arg`.
fn loose_at(arg: usize, offset: usize, escaped: bool) -> PairAt {
    PairAt {
        escaped,
        loose: true,
        ..at(arg, offset)
    }
}

/// Whether the word `word` is a pair read loosely: a pair whose value is
/// written in the command line ([`written_value`]) and whose name, as read
/// ([`unescape_name`]), has no lowercase letter, as an environment variable's
/// (`ssh -o PasswordAuthentication=no`, `curl -d page_token=2`, tmux's
/// `bg=black` are options, not variables); then whether its name is escaped.
fn loose_pair(word: &[u8]) -> Option<bool> {
    let (name_end, value_at) = split_pair(word)?;
    if !written_value(word.get(value_at..)?) {
        return None;
    }
    let written = word.get(..name_end)?;
    let mut out = [0; MAX_ESCAPED_NAME];
    let name = unescape_name(written, &mut out)?;
    // Plain: a valid name and a literal `=`, as `split_entry` splits it.
    let plain = valid_name(written) && word.get(name_end) == Some(&b'=');
    (!name.iter().any(u8::is_ascii_lowercase)).then_some(!plain)
}

/// Whether `value` (a word, or the rest of one) holds a value written in the
/// command line: past its opening quotes, not empty, and not `$VAR` or
/// `$(cmd)`, whose secret is fetched when the command runs and is not in argv.
fn written_value(value: &[u8]) -> bool {
    let quotes = value.iter().take_while(|&&b| is_quote(b)).count();
    value
        .get(quotes..)
        .is_some_and(|v| !v.is_empty() && v.first() != Some(&b'$'))
}

/// The pairs in argument `arg` of a command a carrier starts beyond the shim's
/// reach (systemd-run's unit, sudo's command as root, a container's process):
/// every word (ended by a blank or a `;`, past its opening quotes) that is a
/// pair read loosely ([`loose_pair`]), wherever it stands (`env NAME=VALUE cmd`,
/// `sh -c 'export NAME=VALUE; cmd'`). From byte `from` of the argument on (an
/// option's attached value). Each is [`PairAt::within`] its argument and
/// [`PairAt::loose`].
fn command_pairs(argv: &[&[u8]], arg: usize, from: usize, f: &mut impl FnMut(PairAt)) {
    let Some(&a) = argv.get(arg) else { return };
    let mut start = from;
    while start < a.len() {
        let word = word_at(argv, arg, start);
        let quotes = word.iter().take_while(|&&b| is_quote(b)).count();
        let bare = word.get(quotes..).unwrap_or(&[]);
        if let Some(escaped) = loose_pair(bare) {
            f(loose_at(arg, start + quotes, escaped));
        }
        start += word.len() + 1;
    }
}

/// A `property` value that is `Environment=...`: each pair inside it (systemd
/// reads a list of blank-separated, optionally quoted assignments there).
fn property_in(
    argv: &[&[u8]],
    arg: usize,
    offset: usize,
    flag: Option<usize>,
    f: &mut impl FnMut(PairAt),
) {
    let Some(value) = argv.get(arg).and_then(|a| a.get(offset..)) else {
        return;
    };
    if value.starts_with(ENVIRONMENT_PROPERTY) {
        let at = offset + ENVIRONMENT_PROPERTY.len();
        pairs_in_words(argv, arg, at, flag, false, f);
    }
}

/// `p` with its option letter at `k` of a cluster, when other options come
/// before it there.
fn in_cluster(p: PairAt, k: usize) -> PairAt {
    PairAt {
        letter: (k > 1).then_some(k),
        ..p
    }
}

/// Read the option at `argv[i]` under `g`: report its pair, if any, and return
/// how many arguments it takes (1 or 2). `argv[i]` starts with `-` and is not
/// `-` or `--`.
fn read_option(g: &Grammar, argv: &[&[u8]], i: usize, f: &mut impl FnMut(PairAt)) -> usize {
    let Some(&arg) = argv.get(i) else { return 1 };
    if arg.starts_with(b"--") {
        let (written, attached) = match crate::bytes::memchr(b'=', arg) {
            Some(eq) => (arg.get(..eq).unwrap_or(arg), Some(eq + 1)),
            None => (arg, None),
        };
        let flag = g.resolve(written);
        let is_pair_flag = !g.pair_long.is_empty() && flag == g.pair_long;
        let is_property = !g.property_long.is_empty() && flag == g.property_long;
        let is_split = !g.split_long.is_empty() && flag == g.split_long;
        let (value_arg, value_at, value_flag) = match attached {
            Some(at) => (i, at, None),
            None => (i + 1, 0, Some(i)),
        };
        if is_pair_flag {
            if let Some(p) = pair_in(argv, value_arg, value_at, value_flag) {
                f(p);
            }
        } else if is_property {
            property_in(argv, value_arg, value_at, value_flag, f);
        } else if is_split {
            pairs_in_words(argv, value_arg, value_at, value_flag, true, f);
        }
        return if attached.is_none() && g.long_takes_value(flag) {
            2
        } else {
            1
        };
    }
    // A cluster of short options: the first one that takes a value ends it, with
    // the rest of the argument, or the next argument, as its value.
    for (k, &o) in arg.iter().enumerate().skip(1) {
        if g.short_optional.contains(&o) {
            return 1;
        }
        let is_pair_flag = o != 0 && o == g.pair_short;
        let is_property = o != 0 && o == g.property_short;
        let is_split = o != 0 && o == g.split_short;
        if !(is_pair_flag || is_property || is_split || g.short_value.contains(&o)) {
            continue;
        }
        let attached = k + 1 < arg.len();
        let (value_arg, value_at, value_flag) = match attached {
            true if g.short_eq_skipped && arg.get(k + 1) == Some(&b'=') => (i, k + 2, None),
            true => (i, k + 1, None),
            false => (i + 1, 0, Some(i)),
        };
        let f = &mut |p: PairAt| f(in_cluster(p, k));
        if is_pair_flag {
            if let Some(p) = pair_in(argv, value_arg, value_at, value_flag) {
                f(p);
            }
        } else if is_property {
            property_in(argv, value_arg, value_at, value_flag, f);
        } else if is_split {
            pairs_in_words(argv, value_arg, value_at, value_flag, true, f);
        }
        return if attached { 1 } else { 2 };
    }
    1
}

fn is_option(arg: &[u8]) -> bool {
    arg.len() > 1 && arg.first() == Some(&b'-') && arg != b"--"
}

/// Options from `i` on (getopt's POSIX mode: they end at the first operand or
/// `--`); the index of the first operand.
fn walk_options(g: &Grammar, argv: &[&[u8]], mut i: usize, f: &mut impl FnMut(PairAt)) -> usize {
    while let Some(&arg) = argv.get(i) {
        if arg == b"--" {
            return i + 1;
        }
        if arg == b"-" && g.lone_dash_is_option {
            i += 1;
            continue;
        }
        if !is_option(arg) {
            return i;
        }
        i += read_option_and_value(g, argv, i, f);
    }
    argv.len()
}

/// [`read_option`], and then, when no pair took the option's value, that value
/// read loosely ([`command_pairs`]): an option this table knows only as taking a
/// value (`--build-arg NAME=VALUE`, `--label=NAME=VALUE`, `-lNAME=VALUE`,
/// `docker run img sh -c '...'`, where the scan cannot know where the image is)
/// may hand it to a parser that sets it, or keep it where `ps` shows it.
fn read_option_and_value(
    g: &Grammar,
    argv: &[&[u8]],
    i: usize,
    f: &mut impl FnMut(PairAt),
) -> usize {
    let mut paired = false;
    let step = read_option(g, argv, i, &mut |p: PairAt| {
        paired |= p.arg == i || p.arg == i + 1;
        f(p)
    });
    if paired {
        return step;
    }
    match step {
        2 => command_pairs(argv, i + 1, 0, f),
        _ => {
            let arg = argv.get(i).copied().unwrap_or(&[]);
            if let Some(from) = attached_value(g, arg) {
                command_pairs(argv, i, from, f);
            }
        }
    }
    step
}

/// Where the value attached to the option `arg` starts: after the `=` of a
/// long option (`--label=V`), or after the first letter of a cluster that takes
/// a value (`-lV`).
fn attached_value(g: &Grammar, arg: &[u8]) -> Option<usize> {
    if arg.starts_with(b"--") {
        return crate::bytes::memchr(b'=', arg).map(|eq| eq + 1);
    }
    let k = arg.iter().skip(1).position(|o| g.short_value.contains(o))? + 1;
    (k + 1 < arg.len()).then_some(k + 1)
}

/// Every argument from 1 on, options and operands alike, up to `--`.
fn scan_to_dashdash(g: &Grammar, argv: &[&[u8]], f: &mut impl FnMut(PairAt)) {
    let mut i = 1;
    while let Some(&arg) = argv.get(i) {
        if arg == b"--" {
            (i + 1..argv.len()).for_each(|k| command_pairs(argv, k, 0, f));
            return;
        }
        i += if is_option(arg) {
            read_option_and_value(g, argv, i, f)
        } else {
            command_pairs(argv, i, 0, f);
            1
        };
    }
}

/// GNU screen: `-X setenv NAME VALUE` (and `-Q`), the pair a session's server
/// keeps and gives every window; loosely, every argument (a window's command
/// line, `-X stuff` text, `-X eval` commands).
fn screen_pairs(argv: &[&[u8]], f: &mut impl FnMut(PairAt)) {
    if let Some(cmd) = screen_argv::read_client(argv).server_command_at() {
        let name = cmd + 1;
        let named = argv.get(name).is_some_and(|n| valid_name(n));
        let valued = argv
            .get(name + 1)
            .is_some_and(|v| v.iter().any(|&b| !is_quote(b)));
        if argv.get(cmd) == Some(&&b"setenv"[..]) && named && valued {
            f(PairAt {
                within: true,
                value_in: Some((name + 1, 0)),
                ..at(name, 0)
            });
        }
    }
    (1..argv.len()).for_each(|k| command_pairs(argv, k, 0, f));
}

/// Call `f` for each pair a carrier program has in its argv.
pub fn for_each_pair(c: Carrier, argv: &[&[u8]], mut f: impl FnMut(PairAt)) {
    match c {
        Carrier::Tmux => tmux_pairs(argv, &mut f),
        Carrier::Container => scan_to_dashdash(&DOCKER, argv, &mut f),
        Carrier::SystemdRun => scan_to_dashdash(&SYSTEMD_RUN, argv, &mut f),
        Carrier::Screen => screen_pairs(argv, &mut f),
        Carrier::Env | Carrier::Sudo => {
            let g = if c == Carrier::Env { &ENV } else { &SUDO };
            let mut i = walk_options(g, argv, 1, &mut f);
            while let Some(p) = pair_in(argv, i, 0, None) {
                f(p);
                i += 1;
            }
            // sudo's command runs as another user, where the shim is not
            // loaded (sudo is setuid): its own pairs (`sudo env NAME=V cmd`).
            if c == Carrier::Sudo {
                (i..argv.len()).for_each(|k| command_pairs(argv, k, 0, &mut f));
            }
        }
    }
}

/// A grammar with no option of note: the tables below start from it.
const PLAIN: Grammar = Grammar {
    short_value: b"",
    short_optional: b"",
    short_eq_skipped: false,
    long_value: b"",
    long_bool: b"",
    pair_short: 0,
    pair_long: b"",
    property_short: 0,
    property_long: b"",
    split_short: 0,
    split_long: b"",
    lone_dash_is_option: false,
    prefixes: false,
};

/// docker's and podman's options, global and of every subcommand together
/// (pflag: clusters of short options, `-e=VALUE`). Their long options are too
/// many, and differ too much between versions and subcommands, to list: each is
/// read as taking no value (see `long_value`), and since the scan reads every
/// argument up to `--`, the value of a valued one is read as an operand. pflag
/// has no prefixes; `--en` is read as `--env` all the same.
const DOCKER: Grammar = Grammar {
    short_value: b"acehlmpuvwH",
    short_eq_skipped: true,
    pair_short: b'e',
    pair_long: b"--env",
    prefixes: true,
    ..PLAIN
};

/// systemd-run's options (getopt_long).
const SYSTEMD_RUN: Grammar = Grammar {
    short_value: b"upHMEs",
    long_value: b"--unit --description --slice --host --machine --uid --gid --nice \
        --working-directory --path-property --socket-property \
        --timer-property --on-active --on-boot --on-startup \
        --on-unit-active --on-unit-inactive --on-calendar --service-type \
        --expand-environment",
    long_bool: b"--user --system --scope --remain-after-exit --send-sighup --pty \
        --pipe --quiet --wait --collect --same-dir --shell --no-block \
        --no-ask-password --help --version --on-clock-change \
        --on-timezone-change --slice-inherit",
    pair_short: b'E',
    pair_long: b"--setenv",
    property_short: b'p',
    property_long: b"--property",
    prefixes: true,
    ..PLAIN
};

/// env's options (GNU coreutils, getopt_long).
const ENV: Grammar = Grammar {
    short_value: b"uCS",
    long_value: b"--unset --chdir --split-string",
    long_bool: b"--ignore-environment --null --debug --help --version \
        --list-signal-handling --default-signal --ignore-signal \
        --block-signal",
    split_short: b'S',
    split_long: b"--split-string",
    lone_dash_is_option: true,
    prefixes: true,
    ..PLAIN
};

/// sudo's options (getopt_long, "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv").
const SUDO: Grammar = Grammar {
    short_value: b"augCprtUDRTc",
    short_optional: b"h",
    long_value: b"--auth-type --user --group --host --prompt --role --type --other-user \
        --chdir --chroot --close-from --command-timeout --login-class",
    long_bool: b"--askpass --background --bell --edit --help --login --list \
        --non-interactive --preserve-env --preserve-groups \
        --remove-timestamp --reset-timestamp --set-home --shell --stdin \
        --validate --version",
    prefixes: true,
    ..PLAIN
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_name_is_read_as_its_parser_reads_it() {
        let read = |written: &[u8]| {
            let mut out = [0; MAX_ESCAPED_NAME];
            unescape_name(written, &mut out).map(<[u8]>::to_vec)
        };
        let token = Some(b"GH_TOKEN".to_vec());
        assert_eq!(read(b"GH_\\TOKEN"), token);
        assert_eq!(read(b"G\"H_TOKEN\""), token);
        assert_eq!(read(b"'GH_TOKEN'"), token);
        assert_eq!(read(b"\\107H_TOKEN"), token);
        assert_eq!(read(b"\\GH_TOKEN\\"), token);
        assert_eq!(read(b"GH TOKEN"), None);
        assert_eq!(read(b"$N"), None);
        assert_eq!(read(b"#{l:GH_}TOKEN"), None);
        assert_eq!(read(b"\\777X"), None);
        assert_eq!(read(&[b'A'; MAX_ESCAPED_NAME + 1]), None);
        // tmux's and systemd's \u, \U, \x; bash's $'...' and NAME+=; a
        // continued line.
        assert_eq!(read(b"GH_TOK\\u0045N"), token);
        assert_eq!(read(b"GH_TOK\\U00000045N"), token);
        assert_eq!(read(b"G\\x48_TOKEN"), token);
        assert_eq!(read(b"$'GH_TOKEN'"), token);
        assert_eq!(read(b"GH_TOKEN+"), token);
        assert_eq!(read(b"GH_TOK\\\nEN"), token);
        assert_eq!(read(b"GH_TOK\\u00c9N"), None);
        assert_eq!(read(b"GH_TOK\\u00"), None);
    }

    #[test]
    fn an_escaped_equals_sign_splits_the_pair() {
        assert_eq!(split_pair(b"GH_TOKEN\\075v"), Some((8, 12)));
        assert_eq!(split_pair(b"GH_TOKEN\\u003dv"), Some((8, 14)));
        assert_eq!(split_pair(b"GH_TOKEN\\=v"), Some((8, 10)));
        assert_eq!(split_pair(b"GH_TOKEN=v"), Some((8, 9)));
        assert_eq!(split_pair(b"GH_TOKEN"), None);
        assert_eq!(word_is_pair(b"GH_TOKEN\\075v"), Some(true));
        assert_eq!(loose_pair(b"GH_TOKEN=''"), None);
        assert_eq!(loose_pair(b"GH_TOKEN=$(gh auth token)"), None);
        assert_eq!(loose_pair(b"PasswordAuthentication=no"), None);
        assert_eq!(loose_pair(b"GH_TOKEN=v"), Some(false));
        assert_eq!(loose_pair(b"GH_TOK\\u0045N=v"), Some(true));
        assert_eq!(word_len(b"GH_TOK\\\nEN=v x"), 12);
    }
}
