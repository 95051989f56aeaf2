//! `[[secret]]` tables into the compiled policy: each is checked, its source
//! resolved (never read: the compile runs in a helper that must not hold a
//! value, and a rotated token must not make the cache stale), and its name
//! made a credential granted to its programs alone, so that rule 4 refuses an
//! inherited copy everywhere else (docs/adr/0019-secrets-delivered-at-exec.md).

use super::{valid_name, Compiler};
use crate::compiled::{Class, GrantRec, SecretRec, GLOBAL};
use crate::compiled_writer::Writer;
use crate::error::PolicyError;
use crate::glob::GlobKind;
use crate::schema::{PolicyFile, Secret};
use crate::secret::{encode_deny, SourceKind, MAX_SECRETS};

impl Compiler<'_> {
    /// Every `[[secret]]`, in order.
    pub(super) fn secrets(&self, w: &mut Writer, f: &PolicyFile) -> Result<(), PolicyError> {
        if f.secret.len() > MAX_SECRETS {
            return Err(PolicyError::plain(
                self.path,
                format!("at most {MAX_SECRETS} [[secret]] tables are supported"),
            ));
        }
        for (i, s) in f.secret.iter().enumerate() {
            if f.secret[..i]
                .iter()
                .any(|e| e.name.get_ref() == s.name.get_ref())
            {
                return self.err(
                    s.name.span(),
                    format!(
                        "{} is a [[secret]] twice: one source for each name",
                        s.name.get_ref()
                    ),
                );
            }
            self.secret(w, s)?;
        }
        Ok(())
    }

    fn secret(&self, w: &mut Writer, s: &Secret) -> Result<(), PolicyError> {
        let name = s.name.get_ref();
        self.secret_name(s)?;
        let (kind, source) = self.secret_source(s)?;
        self.secret_program(s)?;
        let deny = self.deny_args(s)?;
        let (line, _) = self.pos(s.name.span());
        // The name is a credential everywhere, granted to the secret's programs.
        self.pattern(w, &s.name, Class::Credential, GLOBAL)?;
        let n = w.string(name.as_bytes());
        let program = w.string(s.program.get_ref().as_bytes());
        let program_kind = GlobKind::classify(s.program.get_ref().as_bytes());
        w.grant(GrantRec {
            name: n,
            program,
            kind: program_kind,
            line,
        });
        let source = w.string(&source);
        let deny = w.string(&deny);
        w.secret(SecretRec {
            name: n,
            source_kind: kind,
            source,
            program,
            kind: program_kind,
            deny,
            line,
        });
        Ok(())
    }

    /// One exact, valid name that is not the shim's own.
    fn secret_name(&self, s: &Secret) -> Result<(), PolicyError> {
        let name = s.name.get_ref();
        if GlobKind::classify(name.as_bytes()) != GlobKind::Exact || !valid_name(name) {
            return self.err(
                s.name.span(),
                format!("a secret names one variable exactly, not `{name}`"),
            );
        }
        if name == "LD_PRELOAD" || name.starts_with(crate::shared::PREFIX) {
            return self.err(
                s.name.span(),
                format!("{name} belongs to the shim (rule 8 keeps it): it cannot be a secret"),
            );
        }
        Ok(())
    }

    /// `program`: a path pattern, absolute. A name alone would match any
    /// program of that name, and an agent can name one `gh` in its working
    /// directory (docs/adr/0019, "Who gets a secret").
    fn secret_program(&self, s: &Secret) -> Result<(), PolicyError> {
        self.check_pattern(&s.program)?;
        if !s.program.get_ref().starts_with('/') {
            return self.err(
                s.program.span(),
                "a secret's program is an absolute path, such as `/usr/bin/gh`: a name alone matches any program of that name, which any process can make",
            );
        }
        Ok(())
    }

    /// `from`: its kind, and the path (resolved as every path of a policy is),
    /// key description or credential name after it.
    fn secret_source(&self, s: &Secret) -> Result<(SourceKind, Vec<u8>), PolicyError> {
        let from = s.from.get_ref();
        let Some((kind, rest)) = SourceKind::parse(from.as_bytes()) else {
            return self.err(
                s.from.span(),
                // Not its text: a token pasted in the wrong place must not be shown.
                "`from` starts with `file:`, `keyring:user:`, `credential:` or `command:`, followed by the source",
            );
        };
        let rest = String::from_utf8_lossy(rest).into_owned();
        match kind {
            SourceKind::File => {
                let spanned = toml::Spanned::new(s.from.span(), rest);
                let path = self.resolve(&spanned)?;
                Ok((kind, path.into_os_string().into_encoded_bytes()))
            }
            SourceKind::Credential if rest.contains('/') || rest == "." || rest == ".." => self
                .err(
                    s.from.span(),
                    "a systemd credential is named by one file name, without `/`",
                ),
            _ if rest.contains('\0') => self.err(s.from.span(), "`from` holds a NUL byte"),
            SourceKind::Command => self.helper_words(s, &rest).map(|w| (kind, w)),
            _ => Ok((kind, rest.into_bytes())),
        }
    }

    /// A `command:` source's words, each NUL-terminated
    /// ([`crate::secret::helper::words`]): split at blanks as a shell would,
    /// with `'...'`, `"..."` and `\` quoting; the first an absolute path.
    /// Messages never quote the words: a token pasted there must not be shown.
    fn helper_words(&self, s: &Secret, command: &str) -> Result<Vec<u8>, PolicyError> {
        let Some(words) = shell_words(command) else {
            return self.err(s.from.span(), "a `command:` source has an unclosed quote");
        };
        if words.first().is_none_or(|w| !w.starts_with('/')) {
            return self.err(
                s.from.span(),
                "a `command:` source starts with its helper's absolute path, such as \
                 `command:/usr/bin/pass show github/token`: a name alone would be looked up in a \
                 PATH the caller chooses",
            );
        }
        if words.len() > crate::secret::helper::MAX_WORDS {
            return self.err(
                s.from.span(),
                format!(
                    "a `command:` source has at most {} words",
                    crate::secret::helper::MAX_WORDS
                ),
            );
        }
        let mut out = Vec::new();
        for w in words {
            out.extend_from_slice(w.as_bytes());
            out.push(0);
        }
        Ok(out)
    }

    /// `deny_args`: lists of one or more non-empty words, encoded for the core.
    fn deny_args(&self, s: &Secret) -> Result<Vec<u8>, PolicyError> {
        for list in &s.deny_args {
            if list.get_ref().is_empty()
                || list
                    .get_ref()
                    .iter()
                    .any(|w| w.is_empty() || w.contains('\0'))
            {
                return self.err(
                    list.span(),
                    "each `deny_args` list holds one or more words, none empty",
                );
            }
        }
        let lists: Vec<Vec<&[u8]>> = s
            .deny_args
            .iter()
            .map(|l| l.get_ref().iter().map(|w| w.as_bytes()).collect())
            .collect();
        let mut out = Vec::new();
        encode_deny(lists.iter().map(Vec::as_slice), |b| {
            out.extend_from_slice(b)
        });
        Ok(out)
    }
}

/// `text` split into words as a POSIX shell splits a simple command (blanks
/// between words, `'...'` literal, `"..."` with `\"`, `\\`, `\$` and `` \` ``
/// escaped, `\` outside quotes taking the next character); no expansion.
/// `None` for an unclosed quote or a trailing `\`.
fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => w.push(other),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            e @ ('"' | '\\' | '$' | '`') => w.push(e),
                            other => {
                                w.push('\\');
                                w.push(other);
                            }
                        },
                        other => w.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::shell_words;

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let w = |t: &str| shell_words(t).map(|v| v.join("|"));
        assert_eq!(
            w("/usr/bin/pass show github/token").as_deref(),
            Some("/usr/bin/pass|show|github/token")
        );
        assert_eq!(
            w("/bin/op read 'op://dev/gh token'").as_deref(),
            Some("/bin/op|read|op://dev/gh token")
        );
        assert_eq!(
            w(r#"/bin/x "a \"b\" c" d\ e ''"#).as_deref(),
            Some(r#"/bin/x|a "b" c|d e|"#)
        );
        assert_eq!(w("/bin/x 'open"), None);
        assert_eq!(w("/bin/x \\"), None);
    }
}
