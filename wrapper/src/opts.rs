//! A small `getopt_long` for envwrap and its tools.
//!
//! clap does not fit env(1)'s grammar (options stop at the first operand, `-`
//! alone is an operand, `-S` splices new arguments in), so envwrap reads its
//! arguments with this scanner: short options cluster (`-iu NAME`, `-uNAME`), long
//! options take `--name VALUE` or `--name=VALUE` and may be shortened to any
//! unambiguous prefix, as GNU env's do. The caller decides what an operand means.
//!
//! Each option carries an id of the caller's type (an enum per tool), which the
//! scanner hands back: a caller matches on it exhaustively, never on a name.
//!
//! Error messages name the option, never a value given to it: `--token=SECRET`
//! mistyped as an option must not print the secret.

use crate::exit::Failure;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Said after an error that a `#!` line with options causes: the kernel passes
/// everything after the interpreter as one argument (`-i cmd`, `cat -n`).
pub const SHEBANG_HINT: &str = "\nenvwrap: use -[v]S to pass options in shebang lines";

/// One option: what the scanner reads and what the docs say of it, in one
/// place. `--help` (help.rs), envwrap(1) (man.rs) and the shell completions
/// (completions.rs) are all made from these, so an option is documented where
/// it is defined or nowhere.
#[derive(Clone, Copy, Debug)]
pub struct Spec<Id> {
    /// What the scanner reports when it reads this option.
    pub id: Id,
    /// Long name without the dashes; also the name a short option reports.
    pub long: &'static str,
    pub short: Option<u8>,
    /// Takes a value.
    pub value: bool,
    /// Takes a value only attached (`--name=VALUE`), as getopt's optional
    /// arguments: `--name` alone has none.
    pub optional: bool,
    /// What the docs call its value (`FILE`, `NAME`, `SIGS`); empty for a flag.
    pub placeholder: &'static str,
    /// What `--help` says of it: lower case, no full stop, one line of words
    /// that the help wraps to its column.
    pub doc: &'static str,
    /// What envwrap(1) says of it, in roff, where the man page says more than
    /// `doc`; empty: `doc`, as a sentence. Each line's leading blanks are
    /// dropped, so the text may be indented with the code.
    pub doc_long: &'static str,
}

impl<Id: Copy> Spec<Id> {
    /// The same option without its id, for what lists the options of every
    /// tool (the help, the man page, the shell completions).
    pub const fn erase(&self) -> Spec<()> {
        Spec {
            id: (),
            long: self.long,
            short: self.short,
            value: self.value,
            optional: self.optional,
            placeholder: self.placeholder,
            doc: self.doc,
            doc_long: self.doc_long,
        }
    }

    const fn new(id: Id, long: &'static str, placeholder: &'static str) -> Spec<Id> {
        Spec {
            id,
            long,
            short: None,
            value: false,
            optional: false,
            placeholder,
            doc: "",
            doc_long: "",
        }
    }

    /// `--long`, taking no value.
    pub const fn flag(id: Id, long: &'static str) -> Spec<Id> {
        Spec::new(id, long, "")
    }

    /// `--long VALUE`, the value called `placeholder` in the docs.
    pub const fn with_value(id: Id, long: &'static str, placeholder: &'static str) -> Spec<Id> {
        Spec {
            value: true,
            ..Spec::new(id, long, placeholder)
        }
    }

    /// `--long[=VALUE]`: a value only when attached.
    pub const fn optional_value(id: Id, long: &'static str, placeholder: &'static str) -> Spec<Id> {
        Spec {
            optional: true,
            ..Spec::new(id, long, placeholder)
        }
    }

    /// The same option, also spelled `-c`.
    pub const fn short(self, c: u8) -> Spec<Id> {
        Spec {
            short: Some(c),
            ..self
        }
    }

    /// The same option with what `--help` says of it.
    pub const fn doc(self, doc: &'static str) -> Spec<Id> {
        Spec { doc, ..self }
    }

    /// The same option with what envwrap(1) says of it (roff).
    pub const fn doc_long(self, doc_long: &'static str) -> Spec<Id> {
        Spec { doc_long, ..self }
    }

    /// `--help` / `-h`, which every mode and tool takes.
    pub const fn help(id: Id) -> Spec<Id> {
        Spec::flag(id, "help")
            .short(b'h')
            .doc("show this help")
            .doc_long("Show the help and exit.")
    }

    /// `--policy FILE` of a tool that judges by a policy (explain, scan,
    /// mux-env).
    pub const fn policy(id: Id) -> Spec<Id> {
        Spec::with_value(id, "policy", "FILE")
            .doc("the policy (default: the policy lookup of 'envwrap --help')")
            .doc_long(
                r#"The policy.
                Default: see
                .BR "POLICY LOOKUP" ."#,
            )
    }
}

/// What the scanner found next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token<Id> {
    /// An option, by its id, with its value when it takes one.
    Opt { id: Id, value: Option<OsString> },
    /// An argument that is not an option (`-` alone included).
    Operand(OsString),
    /// `--`.
    DoubleDash,
}

/// The scanner. See the module docs.
pub struct Parser<'s, Id> {
    args: Vec<OsString>,
    pos: usize,
    specs: &'s [Spec<Id>],
    /// The rest of a short-option cluster being read (`-iu` after `-i`).
    cluster: Option<Vec<u8>>,
    /// What to suggest on a usage error (`envwrap --help`).
    help: &'static str,
}

impl<'s, Id: Copy> Parser<'s, Id> {
    pub fn new(args: Vec<OsString>, specs: &'s [Spec<Id>], help: &'static str) -> Parser<'s, Id> {
        Parser {
            args,
            pos: 0,
            specs,
            cluster: None,
            help,
        }
    }

    /// Insert `items` to be read next (how `-S` splices in its words).
    pub fn splice(&mut self, items: Vec<OsString>) {
        let tail = self.args.split_off(self.pos);
        self.args.extend(items);
        self.args.extend(tail);
    }

    /// The arguments not read yet.
    pub fn rest(self) -> Vec<OsString> {
        self.args.into_iter().skip(self.pos).collect()
    }

    fn usage(&self, message: String) -> Failure {
        Failure::usage(message, self.help)
    }

    /// The next token, or `None` at the end.
    pub fn next_token(&mut self) -> Result<Option<Token<Id>>, Failure> {
        if let Some(cluster) = self.cluster.take() {
            return self.short(cluster).map(Some);
        }
        let Some(arg) = self.args.get(self.pos).cloned() else {
            return Ok(None);
        };
        self.pos += 1;
        let bytes = arg.as_bytes();
        if bytes == b"--" {
            return Ok(Some(Token::DoubleDash));
        }
        if let Some(body) = bytes.strip_prefix(b"--") {
            return self.long(body).map(Some);
        }
        if bytes.len() > 1 && bytes[0] == b'-' {
            return self.short(bytes[1..].to_vec()).map(Some);
        }
        Ok(Some(Token::Operand(arg)))
    }

    fn short(&mut self, cluster: Vec<u8>) -> Result<Token<Id>, Failure> {
        let c = cluster[0];
        let rest = &cluster[1..];
        let shown = String::from_utf8_lossy(&cluster[..1]).into_owned();
        let Some(spec) = self.specs.iter().find(|s| s.short == Some(c)) else {
            let mut message = format!("invalid option -- '{}'", printable(&shown));
            if c == b' ' || c == b'\t' {
                // `#!/usr/bin/env -i cmd`: the kernel passes "-i cmd" as one argument.
                message.push_str(SHEBANG_HINT);
            }
            return Err(self.usage(message));
        };
        if !spec.value {
            if !rest.is_empty() {
                self.cluster = Some(rest.to_vec());
            }
            return Ok(Token::Opt {
                id: spec.id,
                value: None,
            });
        }
        let value = if !rest.is_empty() {
            OsString::from_vec(rest.to_vec())
        } else {
            match self.args.get(self.pos).cloned() {
                Some(v) => {
                    self.pos += 1;
                    v
                }
                None => return Err(self.usage(format!("option requires an argument -- '{shown}'"))),
            }
        };
        Ok(Token::Opt {
            id: spec.id,
            value: Some(value),
        })
    }

    fn long(&mut self, body: &[u8]) -> Result<Token<Id>, Failure> {
        let (name, inline) = match body.iter().position(|&b| b == b'=') {
            Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
            None => (body, None),
        };
        let shown = printable(&String::from_utf8_lossy(name));
        let spec = match self.specs.iter().find(|s| s.long.as_bytes() == name) {
            Some(s) => *s,
            None => {
                let matches: Vec<&Spec<Id>> = self
                    .specs
                    .iter()
                    .filter(|s| !name.is_empty() && s.long.as_bytes().starts_with(name))
                    .collect();
                match matches.as_slice() {
                    [one] => **one,
                    [] if name.iter().any(u8::is_ascii_whitespace) => {
                        return Err(self.usage(format!(
                            "unrecognized option '--{shown}': its words arrived as one \
                             argument, as a #! line passes everything after the program; \
                             put -S first to split them ('#!/usr/local/bin/envwrap -S \
                             --policy FILE -- /bin/sh'), or use '#!/usr/bin/env -S envwrap ...'"
                        )))
                    }
                    [] => {
                        let near = envpolicy::suggest::closest(
                            &String::from_utf8_lossy(name),
                            self.specs.iter().map(|s| s.long),
                        )
                        .map(|c| format!(" (did you mean '--{c}'?)"))
                        .unwrap_or_default();
                        return Err(self.usage(format!("unrecognized option '--{shown}'{near}")));
                    }
                    many => {
                        let names: Vec<String> =
                            many.iter().map(|s| format!("'--{}'", s.long)).collect();
                        return Err(self.usage(format!(
                            "option '--{shown}' is ambiguous; possibilities: {}",
                            names.join(" ")
                        )));
                    }
                }
            }
        };
        match (spec.value, inline) {
            (false, Some(v)) if spec.optional => Ok(Token::Opt {
                id: spec.id,
                value: Some(OsString::from_vec(v.to_vec())),
            }),
            (false, Some(_)) => Err(self.usage(format!(
                "option '--{}' doesn't allow an argument",
                spec.long
            ))),
            (false, None) => Ok(Token::Opt {
                id: spec.id,
                value: None,
            }),
            (true, Some(v)) => Ok(Token::Opt {
                id: spec.id,
                value: Some(OsString::from_vec(v.to_vec())),
            }),
            (true, None) => match self.args.get(self.pos).cloned() {
                Some(v) => {
                    self.pos += 1;
                    Ok(Token::Opt {
                        id: spec.id,
                        value: Some(v),
                    })
                }
                None => Err(self.usage(format!("option '--{}' requires an argument", spec.long))),
            },
        }
    }
}

/// A tool's arguments: options anywhere before `--` (handed to `on_opt`),
/// operands collected, and everything after `--`.
#[derive(Debug, Default)]
pub struct ToolArgs {
    pub operands: Vec<OsString>,
    /// After `--`, when there was one.
    pub after: Option<Vec<OsString>>,
}

/// Read a tool's arguments with `specs`.
pub fn tool_args<Id: Copy>(
    args: Vec<OsString>,
    specs: &[Spec<Id>],
    help: &'static str,
    mut on_opt: impl FnMut(Id, Option<OsString>) -> Result<(), Failure>,
) -> Result<ToolArgs, Failure> {
    let mut p = Parser::new(args, specs, help);
    let mut out = ToolArgs::default();
    while let Some(t) = p.next_token()? {
        match t {
            Token::Opt { id, value } => on_opt(id, value)?,
            Token::Operand(a) => out.operands.push(a),
            Token::DoubleDash => {
                out.after = Some(p.rest());
                break;
            }
        }
    }
    Ok(out)
}

/// An option name as it may be shown: a token (an option pasted with a secret) is
/// never printed ([`envpolicy::shown`]); control characters escaped, long names
/// cut.
fn printable(s: &str) -> String {
    let shown = envpolicy::shown::word(s.as_bytes());
    if !shown.is_plain() {
        return shown.to_string();
    }
    let mut out: String = s.chars().take(64).flat_map(char::escape_default).collect();
    if s.chars().count() > 64 {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The long name as the id.
    const SPECS: &[Spec<&str>] = &[
        Spec::flag("ignore-environment", "ignore-environment").short(b'i'),
        Spec::with_value("unset", "unset", "NAME").short(b'u'),
        Spec::with_value("policy", "policy", "FILE"),
        Spec::flag("preload", "preload"),
    ];

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn all(args: &[&str]) -> Result<Vec<Token<&'static str>>, Failure> {
        let mut p = Parser::new(os(args), SPECS, "envwrap --help");
        let mut out = Vec::new();
        while let Some(t) = p.next_token()? {
            out.push(t);
        }
        Ok(out)
    }

    fn opt(id: &'static str, value: Option<&str>) -> Token<&'static str> {
        Token::Opt {
            id,
            value: value.map(OsString::from),
        }
    }

    #[test]
    fn clusters_and_values() {
        assert_eq!(
            all(&[
                "-iuHOME",
                "-u",
                "X",
                "--unset=Y",
                "--pol",
                "p",
                "-",
                "--",
                "cmd"
            ])
            .unwrap(),
            vec![
                opt("ignore-environment", None),
                opt("unset", Some("HOME")),
                opt("unset", Some("X")),
                opt("unset", Some("Y")),
                opt("policy", Some("p")),
                Token::Operand("-".into()),
                Token::DoubleDash,
                Token::Operand("cmd".into()),
            ]
        );
    }

    #[test]
    fn errors_never_show_values() {
        let e = all(&["--token=ghp_secretsecret"]).unwrap_err();
        assert!(e.message.contains("'--token'"), "{}", e.message);
        assert!(!e.message.contains("secret"));
        let e = all(&["--p=x"]).unwrap_err();
        assert!(e.message.contains("ambiguous"), "{}", e.message);
        assert!(all(&["-z"])
            .unwrap_err()
            .message
            .contains("invalid option -- 'z'"));
        assert!(all(&["-u"])
            .unwrap_err()
            .message
            .contains("requires an argument"));
        assert!(all(&["--policy"]).unwrap_err().message.contains("requires"));
        assert!(all(&["--preload=1"])
            .unwrap_err()
            .message
            .contains("doesn't allow"));
    }

    #[test]
    fn splice_reads_new_words_first() {
        let mut p = Parser::new(os(&["-i", "rest"]), SPECS, "h");
        p.next_token().unwrap();
        p.splice(os(&["-i", "--", "x"]));
        assert_eq!(p.rest(), os(&["-i", "--", "x", "rest"]));
    }
}
