//! Finding credential variable names in JSON and TOML config files.
//!
//! Many tools name the environment variables that hold their credentials in
//! their own config file, under keys such as `botTokenEnv` or
//! `clientSecretEnv`. A policy can import such a file: every string under a
//! key whose name ends with one of the given suffixes (for example
//! `TokenEnv`, `tokenEnv`, `SecretEnv`, `secretEnv`) names a credential
//! variable, which envshim then strips from the child's environment.
//!
//! Errors never quote the file: a parse error says what was wrong and where
//! (1-based line and column), never the offending text, which could be a
//! secret.

// Everything is imported by path: the crate may be `no_std` with `std` as an
// extern crate, and then the std prelude is not in scope.
use std::borrow::ToOwned;
use std::fmt;
use std::path::Path;
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

/// The syntax of a config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFormat {
    /// JSON.
    Json,
    /// TOML.
    Toml,
}

impl ConfigFormat {
    /// by extension: .json → Json, .toml → Toml, else None
    ///
    /// The extension is compared without regard to ASCII case.
    pub fn from_path(path: &Path) -> Option<ConfigFormat> {
        let extension = path.extension()?.to_str()?;
        if extension.eq_ignore_ascii_case("json") {
            Some(ConfigFormat::Json)
        } else if extension.eq_ignore_ascii_case("toml") {
            Some(ConfigFormat::Toml)
        } else {
            None
        }
    }
}

/// A credential variable name found in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundName {
    /// The environment variable name, `[A-Za-z_][A-Za-z0-9_]*`.
    pub name: String,
    /// dotted key path where it was found, e.g. `integrations.slack.botTokenEnv` or `jira[0].apiTokenEnv`
    ///
    /// A name from a list of names carries its index too, e.g.
    /// `proxy.tokenEnv[1]`. A key that is not made only of
    /// `[A-Za-z0-9_-]` is written quoted, e.g. `a."b.c"`.
    pub key_path: String,
}

/// Why a config file could not be scanned. `message` never quotes the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigScanError {
    /// What was wrong, e.g. `not valid JSON: expected value`.
    pub message: String,
    /// 1-based line of the error, when the parser knows it.
    pub line: Option<usize>,
    /// 1-based column of the error, when the parser knows it.
    pub column: Option<usize>,
}

impl fmt::Display for ConfigScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, " at line {line}, column {column}"),
            (Some(line), None) => write!(f, " at line {line}"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for ConfigScanError {}

/// Every string under a key whose name ends with one of `suffixes`, at any
/// depth (objects inside arrays too). The value may be a string or an array
/// of strings; other types under such a key are ignored.
///
/// Results are sorted by key path (keys by their bytes, array indices by
/// number), then by name, and deduplicated by name keeping the first key
/// path. Strings that are not valid environment variable names
/// (`[A-Za-z_][A-Za-z0-9_]*`) are skipped. Suffixes match case-sensitively;
/// an empty suffix is ignored (it would match every key).
pub fn credential_names(
    text: &str,
    format: ConfigFormat,
    suffixes: &[&str],
) -> Result<Vec<FoundName>, ConfigScanError> {
    let suffixes: Vec<&str> = suffixes.iter().copied().filter(|s| !s.is_empty()).collect();
    let mut found = match format {
        ConfigFormat::Json => {
            let value: serde_json::Value = serde_json::from_str(text).map_err(json_error)?;
            scan(&value, &suffixes)
        }
        ConfigFormat::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| toml_error(&e, text))?;
            scan(&toml::Value::Table(table), &suffixes)
        }
    };
    found.sort();
    let mut seen = std::collections::HashSet::new();
    Ok(found
        .into_iter()
        .filter(|(_, name)| seen.insert(name.clone()))
        .map(|(path, name)| FoundName {
            name,
            key_path: render_path(&path),
        })
        .collect())
}

/// One step of a key path. Indices sort before keys, but one parent never
/// has both.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Index(usize),
    Key(String),
}

/// What the walk needs to know about a JSON or TOML value.
enum Kind<'v, N> {
    Str(&'v str),
    Array(&'v [N]),
    Object(Vec<(&'v str, &'v N)>),
    Other,
}

trait Node: Sized {
    fn kind(&self) -> Kind<'_, Self>;
}

impl Node for serde_json::Value {
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            serde_json::Value::String(s) => Kind::Str(s),
            serde_json::Value::Array(items) => Kind::Array(items),
            serde_json::Value::Object(map) => {
                Kind::Object(map.iter().map(|(k, v)| (k.as_str(), v)).collect())
            }
            _ => Kind::Other,
        }
    }
}

impl Node for toml::Value {
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            toml::Value::String(s) => Kind::Str(s),
            toml::Value::Array(items) => Kind::Array(items),
            toml::Value::Table(table) => {
                Kind::Object(table.iter().map(|(k, v)| (k.as_str(), v)).collect())
            }
            _ => Kind::Other,
        }
    }
}

/// Walks the whole document without recursion (a TOML file can nest tables
/// arbitrarily deep with dotted keys) and returns (key path, name) pairs.
fn scan<N: Node>(root: &N, suffixes: &[&str]) -> Vec<(Vec<Segment>, String)> {
    // Path segments live in an arena of (parent, segment); a full path is
    // built only for the values that are reported.
    let mut arena: Vec<(Option<usize>, Segment)> = Vec::new();
    let mut stack: Vec<(Option<usize>, &N)> = vec![(None, root)];
    let mut found: Vec<(Vec<Segment>, String)> = Vec::new();
    fn push(
        arena: &mut Vec<(Option<usize>, Segment)>,
        parent: Option<usize>,
        segment: Segment,
    ) -> Option<usize> {
        arena.push((parent, segment));
        arena.len().checked_sub(1)
    }
    while let Some((at, node)) = stack.pop() {
        match node.kind() {
            Kind::Object(entries) => {
                for (key, value) in entries {
                    let here = push(&mut arena, at, Segment::Key(key.to_owned()));
                    if suffixes.iter().any(|suffix| key.ends_with(suffix)) {
                        match value.kind() {
                            Kind::Str(s) if is_env_name(s) => {
                                found.push((path_of(&arena, here), s.to_owned()));
                            }
                            Kind::Array(items) => {
                                for (i, item) in items.iter().enumerate() {
                                    if let Kind::Str(s) = item.kind() {
                                        if is_env_name(s) {
                                            let mut path = path_of(&arena, here);
                                            path.push(Segment::Index(i));
                                            found.push((path, s.to_owned()));
                                        }
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    stack.push((here, value));
                }
            }
            Kind::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if matches!(item.kind(), Kind::Object(_) | Kind::Array(_)) {
                        let here = push(&mut arena, at, Segment::Index(i));
                        stack.push((here, item));
                    }
                }
            }
            Kind::Str(_) | Kind::Other => {}
        }
    }
    found
}

fn path_of(arena: &[(Option<usize>, Segment)], mut at: Option<usize>) -> Vec<Segment> {
    let mut path = Vec::new();
    while let Some((parent, segment)) = at.and_then(|i| arena.get(i)) {
        path.push(segment.clone());
        at = *parent;
    }
    path.reverse();
    path
}

fn render_path(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare = !key.is_empty()
                    && key
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                if bare {
                    out.push_str(key);
                } else {
                    out.push('"');
                    for c in key.chars() {
                        match c {
                            '"' => out.push_str("\\\""),
                            '\\' => out.push_str("\\\\"),
                            c if c.is_control() => out.extend(c.escape_default()),
                            c => out.push(c),
                        }
                    }
                    out.push('"');
                }
            }
        }
    }
    out
}

/// `[A-Za-z_][A-Za-z0-9_]*`
fn is_env_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn json_error(error: serde_json::Error) -> ConfigScanError {
    use serde_json::error::Category;
    let (line, column) = match error.line() {
        0 => (None, None),
        line => (Some(line), Some(error.column().max(1))),
    };
    // serde_json's syntax messages are fixed texts ("expected value",
    // "EOF while parsing a string", ...) followed by " at line L column C".
    // Data and I/O errors could carry other text, so they get no detail.
    let message = match error.classify() {
        Category::Syntax | Category::Eof => {
            let shown = error.to_string();
            let suffix = format!(" at line {} column {}", error.line(), error.column());
            let detail = shown.strip_suffix(&suffix).unwrap_or(&shown).to_owned();
            format!("not valid JSON: {detail}")
        }
        Category::Data | Category::Io => "not valid JSON".to_owned(),
    };
    ConfigScanError {
        message,
        line,
        column,
    }
}

fn toml_error(error: &toml::de::Error, text: &str) -> ConfigScanError {
    let (line, column) = match error.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            (Some(line), Some(column))
        }
        None => (None, None),
    };
    let detail: Vec<String> = error
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(sanitize_toml_message_line)
        .collect();
    let message = if detail.is_empty() {
        "not valid TOML".to_owned()
    } else {
        format!("not valid TOML: {}", detail.join("; "))
    };
    ConfigScanError {
        message,
        line,
        column,
    }
}

/// toml's messages are fixed texts except where they name a key (duplicate
/// keys, dotted keys extending a non-table) or, in principle, other content
/// between backticks: those are replaced by fixed texts or `…`.
fn sanitize_toml_message_line(line: &str) -> String {
    if line.starts_with("duplicate key") {
        return "duplicate key".to_owned();
    }
    if line.starts_with("dotted key") {
        return "dotted key extends a value that is not a table".to_owned();
    }
    // Keep only short backtick-quoted syntax tokens such as `=`, `]]` or `\`.
    let mut out = String::new();
    let mut parts = line.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let rest: Vec<&str> = parts.collect();
    let mut chunks = rest.chunks(2);
    for pair in &mut chunks {
        match pair {
            [quoted, after] => {
                let token = is_syntax_token(quoted);
                out.push('`');
                out.push_str(if token { quoted } else { "…" });
                out.push('`');
                out.push_str(after);
            }
            // An unbalanced backtick: drop what follows it.
            _ => out.push_str("`…"),
        }
    }
    out
}

/// A token that toml's parser quotes from its grammar: one or two
/// punctuation characters (`=`, `]]`), a single letter (the escape letters
/// `n`, `U`, ...) or an escaped control character (`\r`, `\u{0}`).
fn is_syntax_token(quoted: &str) -> bool {
    let short = quoted.chars().count() <= 2;
    (short && !quoted.is_empty() && quoted.chars().all(|c| c.is_ascii_punctuation()))
        || (quoted.len() == 1 && quoted.chars().all(|c| c.is_ascii_alphabetic()))
        || (quoted.len() <= 8
            && quoted.starts_with('\\')
            && quoted
                .chars()
                .skip(1)
                .all(|c| c.is_ascii_alphanumeric() || c == '{' || c == '}'))
}

/// 1-based line and column (in characters) of byte offset `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i.saturating_add(1));
    let line = before
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        .saturating_add(1);
    let column = before
        .get(line_start..)
        .unwrap_or_default()
        .iter()
        .filter(|&&b| (b & 0xC0) != 0x80)
        .count()
        .saturating_add(1);
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUFFIXES: &[&str] = &["TokenEnv", "tokenEnv", "SecretEnv", "secretEnv"];

    fn pairs(found: &[FoundName]) -> Vec<(&str, &str)> {
        found
            .iter()
            .map(|f| (f.name.as_str(), f.key_path.as_str()))
            .collect()
    }

    fn json(text: &str) -> Vec<FoundName> {
        credential_names(text, ConfigFormat::Json, SUFFIXES).expect("valid JSON")
    }

    fn toml(text: &str) -> Vec<FoundName> {
        credential_names(text, ConfigFormat::Toml, SUFFIXES).expect("valid TOML")
    }

    #[test]
    fn format_from_path() {
        assert_eq!(
            ConfigFormat::from_path(Path::new("/etc/app/config.json")),
            Some(ConfigFormat::Json)
        );
        assert_eq!(
            ConfigFormat::from_path(Path::new("a.toml")),
            Some(ConfigFormat::Toml)
        );
        assert_eq!(
            ConfigFormat::from_path(Path::new("A.JSON")),
            Some(ConfigFormat::Json)
        );
        assert_eq!(ConfigFormat::from_path(Path::new("a.yaml")), None);
        assert_eq!(ConfigFormat::from_path(Path::new("json")), None);
        assert_eq!(ConfigFormat::from_path(Path::new(".env")), None);
        assert_eq!(ConfigFormat::from_path(Path::new("a.json.bak")), None);
    }

    #[test]
    fn json_nested_objects() {
        let found = json(
            r#"{"integrations": {"slack": {"botTokenEnv": "SLACK_BOT_TOKEN", "appTokenEnv": "SLACK_APP_TOKEN"},
                                 "github": {"tokenEnv": "GH_TOKEN"}},
                "db": {"auth": {"clientSecretEnv": "DB_SECRET", "secretEnv": "DB_PASSWORD", "user": "app"}}}"#,
        );
        assert_eq!(
            pairs(&found),
            vec![
                ("DB_SECRET", "db.auth.clientSecretEnv"),
                ("DB_PASSWORD", "db.auth.secretEnv"),
                ("GH_TOKEN", "integrations.github.tokenEnv"),
                ("SLACK_APP_TOKEN", "integrations.slack.appTokenEnv"),
                ("SLACK_BOT_TOKEN", "integrations.slack.botTokenEnv"),
            ]
        );
    }

    #[test]
    fn json_arrays_of_objects() {
        let mut text = String::from(r#"{"jira": ["#);
        for i in 0..12 {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!(
                r#"{{"url": "https://j{i}", "apiTokenEnv": "JIRA_TOKEN_{i}"}}"#
            ));
        }
        text.push_str(r#"], "deep": [[{"x": [{"aTokenEnv": "DEEP"}]}]]}"#);
        let found = json(&text);
        let paths: Vec<&str> = found.iter().map(|f| f.key_path.as_str()).collect();
        assert_eq!(paths.first(), Some(&"deep[0][0].x[0].aTokenEnv"));
        assert_eq!(paths.get(1), Some(&"jira[0].apiTokenEnv"));
        assert_eq!(paths.get(2), Some(&"jira[1].apiTokenEnv"));
        // Indices sort by number, not as text.
        assert_eq!(paths.get(11), Some(&"jira[10].apiTokenEnv"));
        assert_eq!(found.len(), 13);
        assert_eq!(found.get(1).map(|f| f.name.as_str()), Some("JIRA_TOKEN_0"));
    }

    #[test]
    fn json_top_level_array() {
        let found = json(r#"[{"tokenEnv": "A"}, {"tokenEnv": "B"}]"#);
        assert_eq!(
            pairs(&found),
            vec![("A", "[0].tokenEnv"), ("B", "[1].tokenEnv")]
        );
    }

    #[test]
    fn json_list_of_names() {
        let found = json(
            r#"{"proxy": {"tokenEnv": ["A_TOKEN", 42, "B_TOKEN", null, {"x": 1}, "not a name"]}}"#,
        );
        assert_eq!(
            pairs(&found),
            vec![
                ("A_TOKEN", "proxy.tokenEnv[0]"),
                ("B_TOKEN", "proxy.tokenEnv[2]")
            ]
        );
    }

    #[test]
    fn all_four_suffixes() {
        let found = json(
            r#"{"aTokenEnv": "A", "bTokenEnv2": "X", "tokenEnv": "B", "SecretEnv": "C", "dsecretEnv": "D"}"#,
        );
        assert_eq!(
            pairs(&found),
            vec![
                ("C", "SecretEnv"),
                ("A", "aTokenEnv"),
                ("D", "dsecretEnv"),
                ("B", "tokenEnv")
            ]
        );
        let found = toml("aTokenEnv = 'A'\ntokenEnv = 'B'\nSecretEnv = 'C'\ndsecretEnv = 'D'\n");
        assert_eq!(found.len(), 4);
    }

    #[test]
    fn key_containing_but_not_ending_with_suffix() {
        let found = json(
            r#"{"tokenEnvironment": "A", "SecretEnvName": "B", "tokenenv": "C", "TOKENENV": "D", "tokenEnvs": ["E"], "ok": {"tokenEnv": "F"}}"#,
        );
        assert_eq!(pairs(&found), vec![("F", "ok.tokenEnv")]);
    }

    #[test]
    fn non_string_values_are_ignored() {
        let found = json(
            r#"{"aTokenEnv": 1, "bTokenEnv": true, "cTokenEnv": null, "dTokenEnv": 1.5, "eTokenEnv": {"name": "E"}, "fTokenEnv": []}"#,
        );
        assert!(found.is_empty(), "{found:?}");
        let found = toml("aTokenEnv = 1\nbTokenEnv = 1979-05-27\ncTokenEnv = { name = 'C' }\ndTokenEnv = false\n");
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn nested_match_under_a_matching_key_is_found() {
        let found = json(r#"{"outerTokenEnv": {"innerTokenEnv": "INNER"}}"#);
        assert_eq!(
            pairs(&found),
            vec![("INNER", "outerTokenEnv.innerTokenEnv")]
        );
    }

    #[test]
    fn invalid_names_are_skipped() {
        let found = json(
            r#"{"a": {"tokenEnv": ""}, "b": {"tokenEnv": "1ABC"}, "c": {"tokenEnv": "A-B"}, "d": {"tokenEnv": "$X"},
                "e": {"tokenEnv": "xoxb-123 secret"}, "f": {"tokenEnv": "_ok1"}, "g": {"tokenEnv": "ÄB"}}"#,
        );
        assert_eq!(pairs(&found), vec![("_ok1", "f.tokenEnv")]);
    }

    #[test]
    fn duplicates_keep_the_first_key_path() {
        let found = json(
            r#"{"b": {"tokenEnv": "SAME"}, "a": {"tokenEnv": "SAME", "secretEnv": "OTHER"}, "c": {"tokenEnv": ["SAME"]}}"#,
        );
        assert_eq!(
            pairs(&found),
            vec![("OTHER", "a.secretEnv"), ("SAME", "a.tokenEnv")]
        );
    }

    #[test]
    fn keys_that_need_quoting() {
        let found =
            json(r#"{"a.b": {"tokenEnv": "A"}, "": {"tokenEnv": "B"}, "q\"k": {"tokenEnv": "C"}}"#);
        assert_eq!(
            pairs(&found),
            vec![
                ("B", "\"\".tokenEnv"),
                ("A", "\"a.b\".tokenEnv"),
                ("C", "\"q\\\"k\".tokenEnv")
            ]
        );
    }

    #[test]
    fn empty_suffix_is_ignored_and_no_suffixes_find_nothing() {
        let text = r#"{"a": "NAME", "bTokenEnv": "B"}"#;
        let found = credential_names(text, ConfigFormat::Json, &["", "TokenEnv"]).expect("valid");
        assert_eq!(pairs(&found), vec![("B", "bTokenEnv")]);
        assert!(credential_names(text, ConfigFormat::Json, &[])
            .expect("valid")
            .is_empty());
    }

    #[test]
    fn toml_nested_tables_arrays_of_tables_and_lists() {
        let found = toml(
            r#"
top_tokenEnv = "TOP"

[integrations.slack]
botTokenEnv = "SLACK_BOT_TOKEN"
channel = "general"

[[jira]]
url = "https://a"
apiTokenEnv = "JIRA_A"

[[jira]]
apiTokenEnv = "JIRA_B"
nested = { clientSecretEnv = "NESTED_SECRET" }

[proxy]
tokenEnv = ["P1", "P2", 3]
inline = [{ secretEnv = "IN_ARRAY" }]
"#,
        );
        assert_eq!(
            pairs(&found),
            vec![
                ("SLACK_BOT_TOKEN", "integrations.slack.botTokenEnv"),
                ("JIRA_A", "jira[0].apiTokenEnv"),
                ("JIRA_B", "jira[1].apiTokenEnv"),
                ("NESTED_SECRET", "jira[1].nested.clientSecretEnv"),
                ("IN_ARRAY", "proxy.inline[0].secretEnv"),
                ("P1", "proxy.tokenEnv[0]"),
                ("P2", "proxy.tokenEnv[1]"),
                ("TOP", "top_tokenEnv"),
            ]
        );
    }

    #[test]
    fn deeply_nested_toml() {
        let mut key = String::new();
        for _ in 0..40 {
            key.push_str("a.");
        }
        let text = format!("[{key}x]\ntokenEnv = \"DEEP\"\n");
        let found = toml(&text);
        assert_eq!(found.len(), 1);
        assert!(found
            .first()
            .is_some_and(|f| f.key_path.ends_with("a.x.tokenEnv")));
    }

    #[test]
    fn invalid_json_reports_line_and_column() {
        let err = credential_names("{\n  \"a\": 1,\n  \"b\": }\n", ConfigFormat::Json, SUFFIXES)
            .expect_err("invalid");
        assert_eq!(err.message, "not valid JSON: expected value");
        assert_eq!((err.line, err.column), (Some(3), Some(8)));
        assert_eq!(
            err.to_string(),
            "not valid JSON: expected value at line 3, column 8"
        );

        let err = credential_names("{\"tokenEnv\": \"xoxb-SECRET", ConfigFormat::Json, SUFFIXES)
            .expect_err("invalid");
        assert_eq!(err.message, "not valid JSON: EOF while parsing a string");
        assert_eq!(err.line, Some(1));
        assert!(!format!("{err:?}").contains("SECRET"));

        let err = credential_names("", ConfigFormat::Json, SUFFIXES).expect_err("empty");
        assert_eq!(err.message, "not valid JSON: EOF while parsing a value");

        let err =
            credential_names("{} xoxb-SECRET", ConfigFormat::Json, SUFFIXES).expect_err("trailing");
        assert_eq!(err.message, "not valid JSON: trailing characters");
        assert_eq!((err.line, err.column), (Some(1), Some(4)));
    }

    #[test]
    fn invalid_toml_reports_line_and_column() {
        let err = credential_names("a = 1\nb = \nc = 2\n", ConfigFormat::Toml, SUFFIXES)
            .expect_err("invalid");
        assert!(
            err.message.starts_with("not valid TOML: "),
            "{}",
            err.message
        );
        assert_eq!((err.line, err.column), (Some(2), Some(5)));

        let err = credential_names(
            "x = 1\ntokenEnv = \"xoxb-SECRET\n",
            ConfigFormat::Toml,
            SUFFIXES,
        )
        .expect_err("unclosed");
        assert_eq!(err.line, Some(2));
        assert!(!format!("{err:?}").contains("SECRET"), "{err:?}");

        // Columns count characters, as toml's own messages do.
        let err =
            credential_names("k = 'ü' ü\n", ConfigFormat::Toml, SUFFIXES).expect_err("invalid");
        assert_eq!((err.line, err.column), (Some(1), Some(9)));
    }

    #[test]
    fn toml_messages_never_name_keys() {
        let err = credential_names(
            "xoxbSECRET = 1\nxoxbSECRET = 2\n",
            ConfigFormat::Toml,
            SUFFIXES,
        )
        .expect_err("duplicate");
        assert!(!err.message.contains("SECRET"), "{}", err.message);
        assert!(err.message.contains("duplicate key"), "{}", err.message);
        assert_eq!(err.line, Some(2));

        let err = credential_names("a = 1\na.xoxbSECRET = 2\n", ConfigFormat::Toml, SUFFIXES)
            .expect_err("dotted");
        assert!(!err.message.contains("SECRET"), "{}", err.message);
    }

    #[test]
    fn sanitizer_keeps_tokens_and_hides_content() {
        assert_eq!(
            sanitize_toml_message_line("expected `.`, `=`"),
            "expected `.`, `=`"
        );
        assert_eq!(
            sanitize_toml_message_line("expected `]]`, `\\r`"),
            "expected `]]`, `\\r`"
        );
        assert_eq!(
            sanitize_toml_message_line("unknown `xoxb-secret` here"),
            "unknown `…` here"
        );
        assert_eq!(sanitize_toml_message_line("odd `secret"), "odd `…");
        assert_eq!(
            sanitize_toml_message_line("duplicate key `k` in table `t`"),
            "duplicate key"
        );
    }

    #[test]
    fn line_column_counts() {
        assert_eq!(line_column("", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("ab\n", 3), (2, 1));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
