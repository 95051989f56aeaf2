//! Fake credentials of every shape the policy recognises, generated fresh per sandbox,
//! and the two checks every test relies on: [`Secrets::assert_absent`] (no output holds a
//! seeded value) and [`Secrets::redact`] (no failure report can print one).
//!
//! Each secret is bound to the variable name a real deployment would use. The values are
//! random, so a value found anywhere was put there by this test run, and two sandboxes
//! (even in parallel tests) never share a value. Nothing here ever prints a value: the
//! `Debug` impls show names only, and every message names the VARIABLE.

use std::fmt;
use std::sync::Arc;

use crate::rng::{Rng, DIGITS, UPPER_BASE32};

/// The shape of a seeded value: which recogniser in the policy should catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `ghp_` + 36 alphanumerics.
    GithubClassic,
    /// `github_pat_` + 22 alphanumerics + `_` + 59 alphanumerics.
    GithubFineGrained,
    /// No recognisable shape: caught only because of its NAME (24 alphanumerics).
    NameOnly,
    /// `glpat-` + 20 alphanumerics.
    Gitlab,
    /// `xoxb-` + digits `-` digits `-` 24 alphanumerics.
    Slack,
    /// `AKIA` + 16 of `[A-Z2-7]`.
    AwsAccessKey,
    /// `sk-ant-` + 40 alphanumerics.
    Anthropic,
    /// `sk-proj-` + 40 alphanumerics.
    OpenAi,
    /// `AIza` + 35 alphanumerics.
    Google,
    /// `eyJ…​.eyJ…​.sig`: a syntactically valid HS256 JWT.
    Jwt,
    /// `https://user:PASSWORD@example.invalid/`; the PASSWORD is the secret part.
    UrlPassword,
}

impl Shape {
    /// True when the value alone (whatever its name) should be recognised as a credential.
    pub fn detectable_by_value(self) -> bool {
        !matches!(self, Shape::NameOnly)
    }
}

/// One seeded credential: a variable name, its value, and the substrings whose presence
/// anywhere counts as a leak (the value itself; for a URL, its password).
pub struct Secret {
    name: &'static str,
    shape: Shape,
    value: String,
    needles: Vec<String>,
}

impl Secret {
    /// The variable the value is bound to (`GH_TOKEN`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The value, for putting into an environment or argv. Never print it.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The substrings that count as a leak of this secret.
    pub fn needles(&self) -> &[String] {
        &self.needles
    }

    /// `NAME=VALUE`, for `tmux -e`, `env NAME=V` and env files. Never print it.
    pub fn assignment(&self) -> String {
        format!("{}={}", self.name, self.value)
    }

    /// The text that replaces the value in redacted output: `<GH_TOKEN value>`.
    pub fn label(&self) -> String {
        format!("<{} value>", self.name)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field(
                "value",
                &format_args!("<{} bytes, redacted>", self.value.len()),
            )
            .finish()
    }
}

/// Where a seeded value was found in a byte string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The variable whose value was found.
    pub name: &'static str,
    /// Byte offset of the first occurrence.
    pub offset: usize,
}

/// The full set of seeded secrets of one sandbox. Cheap to clone (shared).
#[derive(Clone)]
pub struct Secrets {
    inner: Arc<Vec<Secret>>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.inner.iter().map(|s| s.name))
            .finish()
    }
}

/// Every variable name [`Secrets::generate`] binds, in order.
pub const SECRET_NAMES: &[&str] = &[
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "JIRA_API_TOKEN",
    "GITLAB_TOKEN",
    "SLACK_BOT_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GOOGLE_API_KEY",
    "SESSION_JWT",
    "PROXY_URL",
];

impl Secrets {
    /// Fresh random values of every shape.
    /// With collection on (`ENVSHIM_E2E_COLLECT`, see `collect`), the values are
    /// recorded for the secret sweep.
    pub fn generate() -> Secrets {
        let secrets = Secrets::from_rng(&mut Rng::from_entropy());
        crate::collect::record_secrets(&secrets);
        secrets
    }

    /// Values from a given generator (fixed seed: reproducible, for the harness's tests).
    pub fn from_rng(rng: &mut Rng) -> Secrets {
        let mut v = Vec::new();
        let mut add = |name: &'static str, shape: Shape, value: String, needles: Vec<String>| {
            let needles = if needles.is_empty() {
                vec![value.clone()]
            } else {
                needles
            };
            v.push(Secret {
                name,
                shape,
                value,
                needles,
            });
        };
        add(
            "GH_TOKEN",
            Shape::GithubClassic,
            format!("ghp_{}", rng.alnum(36)),
            vec![],
        );
        add(
            "GITHUB_TOKEN",
            Shape::GithubFineGrained,
            format!("github_pat_{}_{}", rng.alnum(22), rng.alnum(59)),
            vec![],
        );
        add("JIRA_API_TOKEN", Shape::NameOnly, rng.alnum(24), vec![]);
        add(
            "GITLAB_TOKEN",
            Shape::Gitlab,
            format!("glpat-{}", rng.alnum(20)),
            vec![],
        );
        add(
            "SLACK_BOT_TOKEN",
            Shape::Slack,
            format!(
                "xoxb-{}-{}-{}",
                rng.string_from(DIGITS, 12),
                rng.string_from(DIGITS, 13),
                rng.alnum(24)
            ),
            vec![],
        );
        add(
            "AWS_ACCESS_KEY_ID",
            Shape::AwsAccessKey,
            format!("AKIA{}", rng.string_from(UPPER_BASE32, 16)),
            vec![],
        );
        add(
            "ANTHROPIC_API_KEY",
            Shape::Anthropic,
            format!("sk-ant-{}", rng.alnum(40)),
            vec![],
        );
        add(
            "OPENAI_API_KEY",
            Shape::OpenAi,
            format!("sk-proj-{}", rng.alnum(40)),
            vec![],
        );
        add(
            "GOOGLE_API_KEY",
            Shape::Google,
            format!("AIza{}", rng.alnum(35)),
            vec![],
        );
        let header = base64url(br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = base64url(
            format!(
                r#"{{"sub":"{}","sid":"{}","iat":1700000000}}"#,
                rng.alnum(12),
                rng.alnum(16)
            )
            .as_bytes(),
        );
        let jwt = format!("{header}.{payload}.{}", rng.alnum(43));
        add("SESSION_JWT", Shape::Jwt, jwt, vec![]);
        let password = rng.alnum(20);
        add(
            "PROXY_URL",
            Shape::UrlPassword,
            format!("https://user:{password}@example.invalid/"),
            vec![password],
        );
        debug_assert_eq!(v.iter().map(|s| s.name).collect::<Vec<_>>(), SECRET_NAMES);
        Secrets { inner: Arc::new(v) }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Secret> {
        self.inner.iter()
    }

    /// The names, in a stable order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.inner.iter().map(|s| s.name)
    }

    /// The secret bound to `name`; panics (naming it) if there is none.
    pub fn get(&self, name: &str) -> &Secret {
        self.inner
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| {
                panic!("no seeded secret is bound to {name:?}; known: {SECRET_NAMES:?}")
            })
    }

    /// The value bound to `name`. Never print it.
    pub fn value(&self, name: &str) -> &str {
        self.get(name).value()
    }

    /// `(NAME, VALUE)` for every secret, e.g. for `TestCommand::envs`.
    pub fn env_pairs(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.inner.iter().map(|s| (s.name, s.value.as_str()))
    }

    /// An env file (`NAME=VALUE` lines) declaring every secret.
    pub fn env_file_contents(&self) -> String {
        self.inner.iter().map(|s| s.assignment() + "\n").collect()
    }

    /// Every seeded value found in `bytes`, first occurrence of each, in name order.
    pub fn find_all(&self, bytes: &[u8]) -> Vec<Finding> {
        self.inner
            .iter()
            .filter_map(|s| {
                s.needles
                    .iter()
                    .filter_map(|n| find(bytes, n.as_bytes()))
                    .min()
                    .map(|offset| Finding {
                        name: s.name,
                        offset,
                    })
            })
            .collect()
    }

    /// True when no seeded value occurs in `bytes`.
    pub fn is_clean(&self, bytes: &[u8]) -> bool {
        self.find_all(bytes).is_empty()
    }

    /// Panic if any seeded value occurs in `bytes`. The message names the variable(s),
    /// `what` (where the bytes came from) and the offset, plus redacted context; never
    /// the value.
    #[track_caller]
    pub fn assert_absent(&self, what: &str, bytes: &[u8]) {
        let findings = self.find_all(bytes);
        if findings.is_empty() {
            return;
        }
        let mut msg = String::new();
        for f in &findings {
            msg.push_str(&format!(
                "seeded secret leaked: the value of {} was found in {} at byte {} (of {})\n",
                f.name,
                self.redact(what.as_bytes()),
                f.offset,
                bytes.len()
            ));
        }
        // Context comes from the REDACTED text, so no slice of it can hold (part of) a value.
        let redacted = self.redact_bytes(bytes);
        let label = self.get(findings[0].name).label();
        if let Some(at) = find(&redacted, label.as_bytes()) {
            let start = at.saturating_sub(80);
            let end = (at + label.len() + 80).min(redacted.len());
            msg.push_str(&format!(
                "context (redacted): …{}…\n",
                String::from_utf8_lossy(&redacted[start..end]).escape_debug()
            ));
        }
        panic!("{}", msg.trim_end());
    }

    /// `bytes` with every seeded value replaced by `<NAME value>`.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        // Longest needle first, so no needle can match inside a longer one's span first.
        let mut needles: Vec<(&[u8], String)> = self
            .inner
            .iter()
            .flat_map(|s| s.needles.iter().map(move |n| (n.as_bytes(), s.label())))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        needles.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        'outer: while i < bytes.len() {
            for (needle, label) in &needles {
                if bytes[i..].starts_with(needle) {
                    out.extend_from_slice(label.as_bytes());
                    i += needle.len();
                    continue 'outer;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        out
    }

    /// `bytes` (lossily decoded) with every seeded value replaced by `<NAME value>`.
    pub fn redact(&self, bytes: impl AsRef<[u8]>) -> String {
        // Redact the raw bytes first: values are ASCII, so lossy decoding cannot split one.
        String::from_utf8_lossy(&self.redact_bytes(bytes.as_ref())).into_owned()
    }
}

/// First occurrence of `needle` in `hay`.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Base64url without padding (RFC 4648 §5), for building the fake JWT.
fn base64url(input: &[u8]) -> String {
    base64(input, true, false)
}

/// Base64 of `input` (RFC 4648): the URL-safe alphabet when `url`, `=`
/// padding when `pad`.
pub fn base64(input: &[u8], url: bool, pad: bool) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                let c = T[((n >> (18 - 6 * k)) & 63) as usize];
                out.push(match (url, c) {
                    (true, b'+') => '-',
                    (true, b'/') => '_',
                    _ => c as char,
                });
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed() -> Secrets {
        Secrets::from_rng(&mut Rng::with_seed(42))
    }

    #[test]
    fn shapes() {
        let s = fixed();
        let is_alnum = |x: &str| x.bytes().all(|b| b.is_ascii_alphanumeric());
        let gh = s.value("GH_TOKEN");
        assert!(gh.starts_with("ghp_") && gh.len() == 40 && is_alnum(&gh[4..]));
        let pat = s.value("GITHUB_TOKEN");
        let rest = pat.strip_prefix("github_pat_").unwrap();
        assert_eq!(rest.len(), 22 + 1 + 59);
        assert_eq!(&rest[22..23], "_");
        assert!(s.value("GITLAB_TOKEN").starts_with("glpat-"));
        assert_eq!(s.value("GITLAB_TOKEN").len(), 26);
        assert!(s.value("SLACK_BOT_TOKEN").starts_with("xoxb-"));
        let aws = s.value("AWS_ACCESS_KEY_ID");
        assert!(aws.starts_with("AKIA") && aws.len() == 20);
        assert!(aws[4..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()));
        assert_eq!(s.value("ANTHROPIC_API_KEY").len(), 7 + 40);
        assert_eq!(s.value("OPENAI_API_KEY").len(), 8 + 40);
        let g = s.value("GOOGLE_API_KEY");
        assert!(g.starts_with("AIza") && g.len() == 39);
        let jwt = s.value("SESSION_JWT");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert!(parts[0].starts_with("eyJ") && parts[1].starts_with("eyJ"));
        assert_eq!(parts[0], "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9");
        let url = s.value("PROXY_URL");
        assert!(url.starts_with("https://user:") && url.ends_with("@example.invalid/"));
        assert_eq!(s.names().collect::<Vec<_>>(), SECRET_NAMES);
    }

    #[test]
    fn redact_and_find() {
        let s = fixed();
        let text = format!(
            "a {} b --token={} c {}",
            s.value("GH_TOKEN"),
            s.value("SLACK_BOT_TOKEN"),
            s.value("PROXY_URL")
        );
        let r = s.redact(&text);
        assert_eq!(
            r,
            "a <GH_TOKEN value> b --token=<SLACK_BOT_TOKEN value> c https://user:<PROXY_URL value>@example.invalid/"
        );
        let names: Vec<_> = s
            .find_all(text.as_bytes())
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["GH_TOKEN", "SLACK_BOT_TOKEN", "PROXY_URL"]);
        assert!(s.is_clean(r.as_bytes()));
        assert!(!format!("{s:?} {:?}", s.get("GH_TOKEN")).contains(s.value("GH_TOKEN")));
    }

    #[test]
    fn base64url_known() {
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }
}
