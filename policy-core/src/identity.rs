//! Which program an exec runs, as the policy names it: through launchers and
//! interpreters to the script.
//!
//! Why: an agent that npm installs is a `#!/usr/bin/env node` script. The shell
//! execs `/usr/bin/gemini`, the kernel runs `env node /usr/bin/gemini`, and
//! `env` execs `node /usr/bin/gemini`: a grant that names `gemini` would meet
//! `node` at the second exec, and one that names `node` would grant every Node
//! program. So every rule that names a program (grants, secrets,
//! `[program.NAME]` sections) and every message asks [`of`], once per exec,
//! in the pipeline ([`crate::pipeline::Exec::new`]), and the front ends read
//! the answer from there.
//!
//! What it looks through:
//! - the launchers that exec their operand in place with the same environment
//!   or one they are told on the command line: `env`, `nice`, `nohup`,
//!   `timeout`, `setsid`, and the version managers' `pyenv exec` (`rbenv`,
//!   `nodenv`, `asdf`), whose shims every `python3` of a pyenv user goes
//!   through (bash's `exec -a NAME` changes only `argv[0]`, which no rule
//!   reads: the program is the path);
//! - the interpreters `node`, `python`, `bash`, `sh` and their kin, `perl` and
//!   `ruby`, when the first operand is a script (or `python -m MODULE`).
//!
//! What it does not: an option it does not know, and every option that makes
//! an interpreter run code of the caller's choosing before the script
//! (`node --require`, `python -c`, `-W`, `-X`, `bash -i`, `--rcfile`,
//! `perl -M`, `ruby -r`), ends the walk where it stands, and the program is
//! the interpreter (or the launcher) itself. A launcher or interpreter that
//! runs no script (a REPL, `-c CODE`, `-` for standard input) is itself.
//!
//! Trust: a script's name is as easy to make as a program's basename, so a
//! rule that names a script by basename trusts the caller as much as one that
//! names a binary. A rule that must not be spoofed names an absolute path, and
//! the script's path matches only as the exec wrote it (a relative script
//! path never matches one). What the caller's environment tells an
//! interpreter to load (`NODE_OPTIONS`, `PYTHONPATH`, `BASH_ENV`) is the
//! caller's, as `LD_PRELOAD` is for a binary; a secret's exec strips all of
//! them (rule 6b's guard).

use crate::bytes::basename;

/// How many launchers an exec is looked through (`env nice timeout 5 node x`).
const MAX_HOPS: usize = 6;

/// How many of argv's first arguments the walk reads: every front end hands
/// it at least these, so that all reach the same answer (the shim, before it
/// has argv as slices, hands only these).
pub const MAX_ARGS: usize = 32;

/// What the program named by [`Identity::name`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A program named as such: the one given to exec, or a launcher's
    /// operand.
    Itself,
    /// A script an interpreter runs: `name` is its path as the exec wrote it.
    Script,
    /// A module `python -m` runs: `name` is the module's dotted name, never a
    /// path, so no absolute-path rule matches it.
    Module,
}

/// The program an exec runs, as rules and messages name it, and the file the
/// exec names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity<'a> {
    /// What grants, `[program.NAME]` sections and messages name.
    pub name: &'a [u8],
    pub via: Via,
    /// The program given to exec, as given: what a secret is delivered to
    /// ([`crate::secret`]: a file no process of the user can replace; an
    /// interpreter found by `PATH` from a script's `#!/usr/bin/env` line is
    /// not one), and what a path holding a secret refuses.
    pub path: &'a [u8],
}

impl<'a> Identity<'a> {
    /// The program as exec'd, with no walk.
    pub fn itself(program: &'a [u8]) -> Identity<'a> {
        Identity {
            name: program,
            via: Via::Itself,
            path: program,
        }
    }
}

/// The program that `program` run with `argv` is, for the policy. `argv[0]`
/// is not read: the program is the path.
pub fn of<'a>(program: &'a [u8], argv: &[&'a [u8]]) -> Identity<'a> {
    let argv = argv.get(..MAX_ARGS).unwrap_or(argv);
    let mut found = Identity::itself(program);
    let mut at = 1usize;
    for _ in 0..=MAX_HOPS {
        let base = basename(found.name);
        let rest = argv.get(at..).unwrap_or(&[]);
        let (skip, via) = if let Some(skip) = launcher_operand(base, rest) {
            (skip, Via::Itself)
        } else if let Some(step) = interpreter(base).and_then(|k| script_operand(k, rest)) {
            step
        } else {
            break;
        };
        let Some(next) = rest.get(skip).copied().filter(|s| !s.is_empty()) else {
            break;
        };
        // A launcher's operand is a program like any other; a script is the
        // program unless it is a launcher or an interpreter itself (pyenv's
        // `python3` shim is a bash script), which the walk goes on through.
        found = Identity {
            name: next,
            via,
            path: program,
        };
        at += skip + 1;
        if via == Via::Module {
            break;
        }
    }
    found
}

/// Each interpreter family, by its option grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interpreter {
    Node,
    Python,
    Shell,
    Perl,
    Ruby,
}

/// The interpreter a basename is: `python3.12` and `python3` are Python,
/// `bash`, `sh`, `dash`, `zsh`, `ksh` and `mksh` shells.
fn interpreter(base: &[u8]) -> Option<Interpreter> {
    match base {
        b"node" | b"nodejs" => Some(Interpreter::Node),
        b"bash" | b"sh" | b"dash" | b"zsh" | b"ksh" | b"mksh" => Some(Interpreter::Shell),
        b"perl" => Some(Interpreter::Perl),
        b"ruby" => Some(Interpreter::Ruby),
        _ => {
            let version = base.strip_prefix(b"python")?;
            version
                .iter()
                .all(|&b| b.is_ascii_digit() || b == b'.')
                .then_some(Interpreter::Python)
        }
    }
}

/// Where in `args` (argv after the interpreter) its script is, and what it
/// is; `None` when the options before it are not all known to run nothing of
/// the caller's choosing, or there is no script.
fn script_operand(kind: Interpreter, args: &[&[u8]]) -> Option<(usize, Via)> {
    let mut i = 0usize;
    loop {
        let arg = *args.get(i)?;
        if arg == b"--" {
            return Some((i + 1, Via::Script));
        }
        if arg.first() != Some(&b'-') && !(kind == Interpreter::Shell && arg.first() == Some(&b'+')) {
            return Some((i, Via::Script));
        }
        match option(kind, arg)? {
            Opt::Flag => i += 1,
            Opt::WithValue => i += 2,
            Opt::Module => return Some((i + 1, Via::Module)),
        }
    }
}

/// One interpreter option that runs nothing of the caller's.
enum Opt {
    /// Takes no argument of its own.
    Flag,
    /// Takes the next argument (a shell's `-o NAME`).
    WithValue,
    /// `python -m MODULE`: the module is the next argument (`-mMODULE`, the
    /// name inside the word, is not looked through).
    Module,
}

/// `arg` (which starts with `-`, or `+` for a shell) as an option of `kind`,
/// or `None` when it is not one known to be harmless.
fn option(kind: Interpreter, arg: &[u8]) -> Option<Opt> {
    match kind {
        Interpreter::Node => node_option(arg),
        Interpreter::Python => python_option(arg),
        Interpreter::Shell => shell_option(arg),
        Interpreter::Perl => cluster(arg, b"wWXTtl").then_some(Opt::Flag),
        Interpreter::Ruby => match arg {
            b"-w" | b"-W" | b"-W0" | b"-W1" | b"-W2" | b"--disable-gems" | b"--verbose" => {
                Some(Opt::Flag)
            }
            _ => None,
        },
    }
}

/// Node's options that load nothing: warnings, source maps, memory limits.
fn node_option(arg: &[u8]) -> Option<Opt> {
    const FLAGS: &[&[u8]] = &[
        b"--no-warnings",
        b"--no-deprecation",
        b"--enable-source-maps",
        b"--trace-warnings",
        b"--trace-uncaught",
        b"--use-openssl-ca",
        b"--use-system-ca",
        b"--no-addons",
    ];
    const WITH_VALUE: &[&[u8]] = &[
        b"--no-warnings=",
        b"--disable-warning=",
        b"--max-old-space-size=",
        b"--stack-size=",
    ];
    (FLAGS.contains(&arg) || WITH_VALUE.iter().any(|p| arg.starts_with(p))).then_some(Opt::Flag)
}

/// Python's one-letter options that take no argument, in a cluster (`-Es`),
/// and `-m MODULE`. `-c`, `-W` and `-X` (`-W` imports a warning category's
/// module, `-X pycache_prefix=` reads bytecode from a path) end the walk.
fn python_option(arg: &[u8]) -> Option<Opt> {
    let letters = arg.strip_prefix(b"-").filter(|l| !matches!(l.first(), None | Some(b'-')))?;
    for (i, &l) in letters.iter().enumerate() {
        match l {
            b'b' | b'B' | b'd' | b'E' | b'i' | b'I' | b'O' | b'P' | b'q' | b's' | b'S' | b'u'
            | b'v' | b'R' => {}
            b'm' if i + 1 == letters.len() => return Some(Opt::Module),
            _ => return None,
        }
    }
    Some(Opt::Flag)
}

/// A shell's options that read no file of the caller's: one-letter clusters
/// with `-` or `+` (not `-c`, `-s`, `-i`, `-l`), `-o NAME`, `-O NAME`,
/// `--norc`, `--noprofile`, `--posix`.
fn shell_option(arg: &[u8]) -> Option<Opt> {
    match arg {
        b"--norc" | b"--noprofile" | b"--posix" => return Some(Opt::Flag),
        b"-o" | b"+o" | b"-O" | b"+O" => return Some(Opt::WithValue),
        _ => {}
    }
    let letters = arg.get(1..).filter(|l| !matches!(l.first(), None | Some(b'-')))?;
    letters
        .iter()
        .all(|l| b"abefhkmnptuvxBCEHP".contains(l))
        .then_some(Opt::Flag)
}

/// Is `arg` `-` followed by letters all in `allowed`?
fn cluster(arg: &[u8], allowed: &[u8]) -> bool {
    arg.strip_prefix(b"-")
        .is_some_and(|l| !l.is_empty() && l.iter().all(|c| allowed.contains(c)))
}

/// For a launcher, how many of `args` (argv after it) come before the program
/// it execs; `None` when `base` is no launcher or its options are not all
/// known (`env -S`, which splits a string, is not looked through).
fn launcher_operand(base: &[u8], args: &[&[u8]]) -> Option<usize> {
    match base {
        b"env" => env_operand(args),
        b"nice" => options_then_operand(args, &[b"-n"], &[b"--adjustment="], true),
        b"nohup" => options_then_operand(args, &[], &[], false),
        b"setsid" => {
            let flags: &[&[u8]] = &[b"-f", b"-w", b"-c", b"--fork", b"--wait", b"--ctty"];
            let mut i = 0;
            while args.get(i).is_some_and(|a| flags.contains(a)) {
                i += 1;
            }
            options_then_operand(args.get(i..)?, &[], &[], false).map(|k| k + i)
        }
        // Version managers' shims end in `pyenv exec python3 ARGS...` (the
        // shim is a bash script, which the kernel runs).
        b"pyenv" | b"rbenv" | b"nodenv" | b"asdf" => {
            (args.first() == Some(&&b"exec"[..]) && args.len() > 1).then_some(1)
        }
        b"pyenv-exec" | b"rbenv-exec" | b"nodenv-exec" => Some(0).filter(|_| !args.is_empty()),
        b"timeout" => {
            const FLAGS: &[&[u8]] = &[b"--preserve-status", b"--foreground", b"-v", b"--verbose"];
            let mut i = 0;
            loop {
                let a = *args.get(i)?;
                if FLAGS.contains(&a) || a.starts_with(b"--signal=") || a.starts_with(b"--kill-after=") {
                    i += 1;
                } else if a == b"-s" || a == b"-k" {
                    i += 2;
                } else if a.len() > 2 && (a.starts_with(b"-s") || a.starts_with(b"-k")) {
                    i += 1;
                } else if a == b"--" {
                    i += 1;
                    break;
                } else if a.first() == Some(&b'-') {
                    return None;
                } else {
                    break;
                }
            }
            // The duration, then the program.
            args.get(i)?;
            Some(i + 1)
        }
        _ => None,
    }
}

/// Options of `nice`-like launchers: `--`, those in `with_value` (taking the
/// next argument), those starting with one of `attached`, and (with
/// `numeric`) `-N` and `-nN`.
fn options_then_operand(
    args: &[&[u8]],
    with_value: &[&[u8]],
    attached: &[&[u8]],
    numeric: bool,
) -> Option<usize> {
    let mut i = 0;
    loop {
        let a = *args.get(i)?;
        if a == b"--" {
            return Some(i + 1);
        }
        if a.first() != Some(&b'-') || a.len() == 1 {
            return Some(i);
        }
        let number = || is_number(a.strip_prefix(b"-n").or_else(|| a.get(1..)).unwrap_or(&[]));
        if with_value.contains(&a) {
            i += 2;
        } else if attached.iter().any(|p| a.starts_with(p)) || (numeric && number()) {
            i += 1;
        } else {
            return None;
        }
    }
}

fn is_number(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"-").or_else(|| s.strip_prefix(b"+")).unwrap_or(s);
    !s.is_empty() && s.iter().all(u8::is_ascii_digit)
}

/// `env [-i] [-0] [-u NAME] [-C DIR] [NAME=VALUE]... PROGRAM`: the index of
/// PROGRAM. `-S` and `--split-string` are not looked through.
fn env_operand(args: &[&[u8]]) -> Option<usize> {
    const FLAGS: &[&[u8]] = &[b"-", b"-i", b"--ignore-environment", b"-0", b"--null", b"-v", b"--debug"];
    const WITH_VALUE: &[&[u8]] = &[b"-u", b"--unset", b"-C", b"--chdir"];
    const ATTACHED: &[&[u8]] = &[
        b"--unset=",
        b"--chdir=",
        b"--default-signal",
        b"--ignore-signal",
        b"--block-signal",
    ];
    let mut i = 0;
    loop {
        let a = *args.get(i)?;
        if a == b"--" {
            i += 1;
            break;
        }
        if a.first() == Some(&b'-') {
            if FLAGS.contains(&a) || ATTACHED.iter().any(|p| a.starts_with(p)) {
                i += 1;
            } else if WITH_VALUE.contains(&a) {
                i += 2;
            } else if (a.starts_with(b"-u") || a.starts_with(b"-C")) && a.len() > 2 {
                i += 1;
            } else {
                return None;
            }
            continue;
        }
        break;
    }
    // Assignments, then the program.
    while args.get(i).is_some_and(|a| a.contains(&b'=')) {
        i += 1;
    }
    args.get(i)?;
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(program: &str, argv: &[&str]) -> (String, Via) {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let id = of(program.as_bytes(), &argv);
        (String::from_utf8_lossy(id.name).into_owned(), id.via)
    }

    #[test]
    fn a_plain_program_is_itself() {
        assert_eq!(who("/usr/bin/gh", &["gh", "pr", "list"]), ("/usr/bin/gh".into(), Via::Itself));
        assert_eq!(who("git", &["git"]), ("git".into(), Via::Itself));
    }

    #[test]
    fn an_npm_shebang_is_its_script() {
        // env, as the kernel runs `#!/usr/bin/env node`, then node.
        assert_eq!(
            who("/usr/bin/env", &["/usr/bin/env", "node", "/usr/bin/gemini", "-p", "hi"]),
            ("/usr/bin/gemini".into(), Via::Script)
        );
        assert_eq!(
            who("node", &["node", "/usr/bin/gemini", "-p"]),
            ("/usr/bin/gemini".into(), Via::Script)
        );
        assert_eq!(
            who("/usr/bin/node", &["node", "--no-warnings", "/usr/bin/gemini"]),
            ("/usr/bin/gemini".into(), Via::Script)
        );
        // `exec -a NAME` changes argv[0] only.
        assert_eq!(who("/usr/bin/node", &["gemini", "x.js"]), ("x.js".into(), Via::Script));
    }

    #[test]
    fn interpreters_and_launchers_are_looked_through() {
        let cases: &[(&str, &[&str], &str, Via)] = &[
            ("python3", &["python3", "-u", "tool.py", "a"], "tool.py", Via::Script),
            ("python3.12", &["p", "-Es", "/opt/t.py"], "/opt/t.py", Via::Script),
            ("python3", &["python3", "-m", "pip", "install"], "pip", Via::Module),
            ("python3", &["python3", "-Im", "http.server"], "http.server", Via::Module),
            ("bash", &["bash", "-e", "-o", "pipefail", "run.sh"], "run.sh", Via::Script),
            ("/bin/sh", &["sh", "+x", "--", "run.sh"], "run.sh", Via::Script),
            ("perl", &["perl", "-wT", "x.pl"], "x.pl", Via::Script),
            ("ruby", &["ruby", "-w", "x.rb"], "x.rb", Via::Script),
            ("nice", &["nice", "-n", "5", "node", "a.js"], "a.js", Via::Script),
            ("nice", &["nice", "-10", "gh"], "gh", Via::Itself),
            ("nohup", &["nohup", "python3", "x.py"], "x.py", Via::Script),
            ("timeout", &["timeout", "-k", "5", "10s", "node", "s.js"], "s.js", Via::Script),
            ("timeout", &["timeout", "--signal=TERM", "10", "gh"], "gh", Via::Itself),
            ("env", &["env", "-", "A=1", "node"], "node", Via::Itself),
            ("env", &["env", "-u", "X", "A=b", "nice", "node", "s.js"], "s.js", Via::Script),
            ("setsid", &["setsid", "-f", "bash", "s.sh"], "s.sh", Via::Script),
            ("/root/.pyenv/libexec/pyenv", &["pyenv", "exec", "python3", "/x/tool"], "/x/tool", Via::Script),
            // pyenv's shims: `#!/usr/bin/env bash` scripts named python3 and pyenv.
            ("bash", &["bash", "/root/.pyenv/shims/python3", "/x/tool"], "/x/tool", Via::Script),
            ("bash", &["bash", "/p/libexec/pyenv", "exec", "python3", "/x/tool"], "/x/tool", Via::Script),
            ("bash", &["bash", "/root/.pyenv/shims/python3"], "/root/.pyenv/shims/python3", Via::Script),
        ];
        for (program, argv, name, via) in cases {
            assert_eq!(who(program, argv), ((*name).into(), *via), "{program} {argv:?}");
        }
    }

    #[test]
    fn code_of_the_callers_choosing_ends_the_walk() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("node", &["node", "--require", "/tmp/evil.js", "/usr/bin/gemini"], "node"),
            ("node", &["node", "-r", "x", "s.js"], "node"),
            ("node", &["node", "-e", "code"], "node"),
            ("node", &["node"], "node"),
            ("node", &["node", "-"], "node"),
            ("python3", &["python3", "-c", "code", "x.py"], "python3"),
            ("python3", &["python3", "-W", "ignore::evil.W", "x.py"], "python3"),
            ("python3", &["python3", "-X", "pycache_prefix=/tmp", "x.py"], "python3"),
            ("python3", &["python3", "-mpip"], "python3"),
            ("bash", &["bash", "-c", "gh auth token"], "bash"),
            ("bash", &["bash", "-i", "s.sh"], "bash"),
            ("bash", &["bash", "--rcfile", "/tmp/rc", "s.sh"], "bash"),
            ("perl", &["perl", "-MEvil", "x.pl"], "perl"),
            ("ruby", &["ruby", "-r", "evil", "x.rb"], "ruby"),
            ("env", &["env", "-S", "node x.js"], "env"),
            ("env", &["env"], "env"),
            ("timeout", &["timeout", "5"], "timeout"),
            ("nice", &["nice", "--weird", "gh"], "nice"),
        ];
        for (program, argv, name) in cases {
            assert_eq!(who(program, argv).0, *name, "{program} {argv:?}");
        }
    }

    #[test]
    fn the_walk_is_bounded_and_never_panics() {
        let argv: Vec<&[u8]> = core::iter::repeat_n(&b"env"[..], 50).chain([&b"gh"[..]]).collect();
        let id = of(b"env", &argv);
        assert_eq!(id.name, b"env");
        for len in 0..6 {
            for pick in 0..(7usize.pow(len as u32)) {
                let words: [&[u8]; 7] = [b"env", b"node", b"-m", b"--", b"x", b"-n", b""];
                let argv: Vec<&[u8]> = (0..len).map(|k| words[(pick / 7usize.pow(k as u32)) % 7]).collect();
                let id = of(b"env", &argv);
                assert!(id.name == b"env" || argv.iter().any(|a| core::ptr::eq(*a, id.name)));
            }
        }
    }

    #[test]
    fn the_walk_reads_the_first_arguments_only() {
        let mut argv: Vec<&[u8]> = vec![b"bash"];
        argv.extend(core::iter::repeat_n(&b"-e"[..], MAX_ARGS - 2));
        argv.push(b"s.sh");
        assert_eq!(of(b"bash", &argv).name, b"s.sh");
        argv.insert(1, b"-x");
        assert_eq!(of(b"bash", &argv).name, b"bash");
    }

}
