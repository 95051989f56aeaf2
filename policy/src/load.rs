//! Finding, reading and compiling a policy file; the built-in policies.
//!
//! Lookup order (first that applies wins): an explicit path (`--policy`), the
//! `ENVSHIM_POLICY` variable, `$XDG_CONFIG_HOME/envshim/policy.toml` (XDG's default
//! `~/.config` when unset), `/etc/envshim/policy.toml`, then the built-in default.
//! An explicit path or `ENVSHIM_POLICY` that names a missing file is an error: the
//! user asked for that file. The two config locations are used only if they exist.
//! `ENVSHIM_POLICY=:builtin` ([`crate::lookup::names_builtin`]) names the built-in
//! default, with no lookup: it is what the shim gives every child of a tree
//! started under the built-in default.

use crate::compile::{compile, Warning};
use crate::compiled::Policy;
use crate::error::PolicyError;
use crate::lookup::Kind;
use crate::schema::PolicyFile;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A policy file larger than this is refused: policies are short, and reading an
/// unbounded file into every process that loads the policy is a denial of service
/// ([`crate::readable::POLICY_FILE`]).
pub const MAX_POLICY_BYTES: u64 = crate::readable::POLICY_FILE.bytes;

/// The built-in default: inherit everything, refuse credentials by name and
/// shape, refuse secrets in argv.
pub const DEFAULT_POLICY: &str = "\
# envshim built-in default policy
version = 1
base = \"all\"

[argv]
secrets = \"refuse\"

# tmux forks its server without exec: the server keeps the first client's
# environment and argv for its life and hands them to every pane.
[program.tmux]
self_scrub = true

# GNU screen forks its session's server the same way, and hands its
# environment to every window.
[program.screen]
self_scrub = true
";

/// The fail-closed policy: used when a configured policy cannot be read or is
/// malformed. The strict floor, credentials refused, secrets refused in argv.
pub const FLOOR_POLICY: &str = "\
# envshim fail-closed policy
version = 1
base = \"floor\"
# Its one warning (\"using the fail-closed floor\") says why a child gets
# almost nothing; a line per credential would only repeat it.
quiet = true

[argv]
secrets = \"refuse\"
";

/// Where a policy came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--policy FILE`.
    Explicit(PathBuf),
    /// `ENVSHIM_POLICY`.
    EnvVar(PathBuf),
    /// `$XDG_CONFIG_HOME/envshim/policy.toml`.
    User(PathBuf),
    /// `/etc/envshim/policy.toml`.
    System(PathBuf),
    /// No file: the built-in default.
    Builtin,
    /// `ENVSHIM_POLICY=:builtin` ([`crate::lookup::BUILTIN_POLICY`]): the built-in
    /// default, named, with no lookup.
    EnvBuiltin,
}

impl Source {
    /// The lookup step that gave this source.
    pub fn step(&self) -> crate::lookup::Step {
        use crate::lookup::Step;
        match self {
            Source::Explicit(_) => Step::Explicit,
            Source::EnvVar(_) => Step::EnvVar,
            Source::User(_) => Step::User,
            Source::System(_) => Step::System,
            Source::Builtin => Step::Builtin,
            Source::EnvBuiltin => Step::EnvBuiltin,
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Explicit(p) | Source::EnvVar(p) | Source::User(p) | Source::System(p) => {
                Some(p)
            }
            Source::Builtin | Source::EnvBuiltin => None,
        }
    }
}

/// Apply the lookup order. `getenv` reads the environment (a parameter so tests
/// and front ends decide whose environment it is).
pub fn locate(explicit: Option<&Path>, getenv: impl Fn(&str) -> Option<OsString>) -> Source {
    let system = std::ffi::OsStr::from_bytes(crate::lookup::SYSTEM_POLICY);
    locate_in(explicit, getenv, Path::new(system))
}

/// `locate` with the system path given (for tests).
pub fn locate_in(
    explicit: Option<&Path>,
    getenv: impl Fn(&str) -> Option<OsString>,
    system: &Path,
) -> Source {
    if let Some(p) = explicit {
        return Source::Explicit(p.to_path_buf());
    }
    if let Some(p) = getenv(crate::shared::POLICY).filter(|p| !p.is_empty()) {
        if crate::lookup::names_builtin(p.as_bytes()) {
            return Source::EnvBuiltin;
        }
        return Source::EnvVar(PathBuf::from(p));
    }
    let (xdg, home) = (getenv("XDG_CONFIG_HOME"), getenv("HOME"));
    let user = crate::lookup::user_policy(
        xdg.as_deref().map(OsStrExt::as_bytes),
        home.as_deref().map(OsStrExt::as_bytes),
    );
    if let Some((dir, under)) = user {
        let path = Path::new(OsStr::from_bytes(dir)).join(OsStr::from_bytes(under));
        if stops_lookup(&path, dir) {
            return Source::User(path);
        }
    }
    let system_dir = system
        .parent()
        .map_or(&b""[..], |d| d.as_os_str().as_bytes());
    if stops_lookup(system, system_dir) {
        return Source::System(system.to_path_buf());
    }
    Source::Builtin
}

/// Whether the lookup stops at `path` under the directory `dir`
/// ([`crate::lookup::stops_lookup`]): something is there, usable or not, at the
/// file or on the way to it.
fn stops_lookup(path: &Path, dir: &[u8]) -> bool {
    let bytes = path.as_os_str().as_bytes();
    let probe = |prefix: &[u8], follow: bool| {
        let prefix = Path::new(OsStr::from_bytes(prefix));
        let meta = match follow {
            true => std::fs::metadata(prefix),
            false => std::fs::symlink_metadata(prefix),
        };
        meta.map(|m| match m.file_type() {
            t if t.is_dir() => Kind::Directory,
            t if t.is_symlink() => Kind::Symlink,
            _ => Kind::Other,
        })
        .map_err(|e| e.raw_os_error().unwrap_or(0))
    };
    let at_file = probe(bytes, false);
    crate::lookup::stops_lookup(bytes, dir, at_file, |end, follow| {
        probe(bytes.get(..end).unwrap_or(bytes), follow)
    })
}

/// A compiled policy that owns its bytes.
#[derive(Clone, Debug)]
pub struct Compiled {
    bytes: Vec<u8>,
    /// What was skipped while compiling (an import that could not be read, ...).
    pub warnings: Vec<Warning>,
}

impl Compiled {
    /// Borrow the compiled policy for decisions.
    pub fn policy(&self) -> Policy<'_> {
        // The bytes were produced by our own compiler; a failure here is a bug.
        Policy::from_bytes(&self.bytes).expect("compiler produced an invalid policy")
    }

    /// The compiled bytes (for a cache file the shim maps).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Adopt bytes read back from a cache, validating them.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Compiled, crate::compiled::FormatError> {
        Policy::from_bytes(&bytes)?;
        Ok(Compiled {
            bytes,
            warnings: Vec::new(),
        })
    }
}

/// Parse policy text. Errors carry `path:line:column`.
pub fn parse(text: &str, path: &Path) -> Result<PolicyFile, PolicyError> {
    toml::from_str::<PolicyFile>(text).map_err(|e| {
        let raw = e.message().trim_end();
        let mut message = without_values(raw);
        let key = e
            .span()
            .map(|s| key_before(text, s.start))
            .unwrap_or_default();
        message = in_policy_words(&message, key);
        message.push_str(&misspelt_key(&message));
        message.push_str(&misspelt_value(raw));
        match e.span() {
            Some(span) => PolicyError::at(path, text, span.start, message),
            None => PolicyError::plain(path, message),
        }
    })
}

/// Compile policy text as if read from `path`.
pub fn compile_text(text: &str, path: &Path) -> Result<Compiled, PolicyError> {
    let file = parse(text, path)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let (bytes, warnings) = compile(&file, text, path, home.as_deref())?;
    Ok(Compiled { bytes, warnings })
}

/// Read and compile a policy file.
pub fn load(path: &Path) -> Result<Compiled, PolicyError> {
    let text = read_policy_text(path)?;
    compile_text(&text, path)
}

/// Read a policy file's text with the size limit, as UTF-8. Only a regular file
/// is read, without blocking ([`crate::readable`]).
pub fn read_policy_text(path: &Path) -> Result<String, PolicyError> {
    use crate::read_file::{self, ReadError};
    use crate::readable::{Unreadable, POLICY_FILE};
    let cannot = |e: ReadError| match e {
        ReadError::Unreadable(Unreadable::TooLarge(limit)) => PolicyError::plain(
            path,
            format!("policy file is larger than {} bytes", limit.text),
        ),
        e => PolicyError::plain(path, format!("cannot read policy: {e}")),
    };
    let file = read_file::open(path, POLICY_FILE).map_err(cannot)?;
    crate::trust::check_policy(path, &file)?;
    let bytes = read_file::read_opened(file, POLICY_FILE).map_err(cannot)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
        PolicyError::at(path, &text, at, "policy file is not UTF-8")
    })
}

/// The built-in default policy, compiled.
pub fn builtin_default() -> Compiled {
    compile_text(DEFAULT_POLICY, Path::new("<built-in>")).expect("built-in default policy compiles")
}

/// The fail-closed floor policy, compiled.
pub fn builtin_floor() -> Compiled {
    compile_text(FLOOR_POLICY, Path::new("<fail-closed floor>"))
        .expect("built-in floor policy compiles")
}

/// Load what `source` names; `Builtin` and `EnvBuiltin` are the default.
pub fn load_source(source: &Source) -> Result<Compiled, PolicyError> {
    match source.path() {
        Some(p) => load(p),
        None => Ok(builtin_default()),
    }
}

/// The key whose value starts at `at`: the word before the `=` on that line.
fn key_before(text: &str, at: usize) -> &str {
    let line_start = text
        .get(..at)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line = text.get(line_start..at).unwrap_or("");
    line.split('=').next().unwrap_or("").trim()
}

/// The keys whose value is a list of name patterns.
const PATTERN_LISTS: &[&str] = &["keep", "strip", "names", "match"];

/// The parser's type words in the policy's: TOML has arrays, not sequences, and
/// the lists of names are lists of patterns.
fn in_policy_words(message: &str, key: &str) -> String {
    let array = if PATTERN_LISTS.contains(&key) {
        "an array of patterns, such as [\"PATH\", \"LC_*\"]"
    } else {
        "an array"
    };
    message
        .replace("expected a sequence", &format!("expected {array}"))
        .replace("invalid type: sequence", "invalid type: array")
}

/// For "unknown field `bse`, expected one of `version`, `mode`, `base`, ...":
/// " (did you mean `base`?)" ([`crate::suggest`]); else nothing.
fn misspelt_key(message: &str) -> String {
    let Some(rest) = message.split_once("unknown field `").map(|(_, r)| r) else {
        return String::new();
    };
    let Some((field, rest)) = rest.split_once('`') else {
        return String::new();
    };
    let Some((_, list)) = rest.split_once("expected one of ") else {
        return String::new();
    };
    let candidates = list.split(", ").map(|c| c.trim_matches('`'));
    crate::suggest::did_you_mean(field, candidates)
}

/// For "unknown variant `flor`, expected one of `all`, `none`, `floor`" (or
/// "expected `enforce` or `audit`"):
/// " (did you mean `floor`?)". The message shown has the typed value taken
/// out ([`without_values`]); only a candidate, a word of the format, is named.
fn misspelt_value(raw: &str) -> String {
    let Some((_, rest)) = raw.split_once("unknown variant `") else {
        return String::new();
    };
    let Some((value, rest)) = rest.split_once('`') else {
        return String::new();
    };
    let Some((_, list)) = rest.split_once("expected ") else {
        return String::new();
    };
    let list = list.strip_prefix("one of ").unwrap_or(list);
    let candidates = list
        .split(", ")
        .flat_map(|c| c.split(" or "))
        .map(|c| c.trim_matches(|c| c == '`' || c == '"'));
    crate::suggest::did_you_mean(value, candidates)
}

/// The parser's message with any quoted value taken out: `invalid type: string
/// "…", expected a sequence` names the type, not the text, because a value in a
/// policy file can be a secret pasted in the wrong place. Key names (in backticks
/// after "unknown field") are kept: they are what the user must fix.
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..start]);
        match rest[start + 1..].find('"') {
            Some(end) => {
                out.push_str("\"…\"");
                rest = &rest[start + 1 + end + 1..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    // `unknown variant `secret`, expected ...`: the variant is a value too.
    if let Some(i) = out.find("unknown variant `") {
        if let Some(j) = out[i + 17..].find('`') {
            out.replace_range(i..i + 17 + j + 1, "unknown value");
        }
    }
    out
}
