//! Name patterns: exact names and `*` globs, matched against environment variable
//! names (and program names) as raw bytes.
//!
//! A pattern is classified once, when a policy is compiled, into the cheapest matcher
//! that is equivalent to it (`LC_*` is a prefix test, `*_TOKEN` a suffix test,
//! `*SECRET*` a substring search), so that matching a name against every pattern of a
//! policy stays within the per-variable budget of the exec path. Matching never
//! allocates and never panics.
//!
//! Specificity decides between a keep and a strip pattern that both match a name: an
//! exact name beats any glob, and between globs the one with more literal bytes wins
//! (see `docs/adr/0001-rule-order.md`).

/// How a pattern is matched. Chosen at compile time from the pattern's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum GlobKind {
    /// No `*`: the whole name.
    Exact = 0,
    /// `ABC*`: names starting with the literal.
    Prefix = 1,
    /// `*ABC`: names ending with the literal.
    Suffix = 2,
    /// `*ABC*`: names containing the literal.
    Contains = 3,
    /// Anything else (`A*B`, `*A*B*`, `*`): general backtracking-free matcher.
    General = 4,
}

impl GlobKind {
    /// The kind stored in a compiled policy.
    pub fn from_u8(v: u8) -> Option<GlobKind> {
        Some(match v {
            0 => GlobKind::Exact,
            1 => GlobKind::Prefix,
            2 => GlobKind::Suffix,
            3 => GlobKind::Contains,
            4 => GlobKind::General,
            _ => return None,
        })
    }

    /// Classify a pattern's text.
    pub fn classify(pattern: &[u8]) -> GlobKind {
        let stars = pattern.iter().filter(|&&b| b == b'*').count();
        let first = pattern.first() == Some(&b'*');
        let last = pattern.last() == Some(&b'*');
        match (stars, first, last) {
            (0, _, _) => GlobKind::Exact,
            (1, false, true) => GlobKind::Prefix,
            (1, true, false) => GlobKind::Suffix,
            (2, true, true) if pattern.len() > 2 => GlobKind::Contains,
            _ => GlobKind::General,
        }
    }
}

/// The number of literal (non-`*`) bytes: how specific a pattern is.
/// Exact names get `u32::MAX` so that they beat every glob.
pub fn specificity(pattern: &[u8]) -> u32 {
    if GlobKind::classify(pattern) == GlobKind::Exact {
        return u32::MAX;
    }
    let literal = pattern.iter().filter(|&&b| b != b'*').count();
    u32::try_from(literal)
        .unwrap_or(u32::MAX - 2)
        .min(u32::MAX - 2)
}

/// Match `name` against `pattern` of the given kind. With `fold`, ASCII letters
/// compare case-insensitively (used for credential names: `*secret*` is a secret too).
///
/// Every kind first rejects on one byte (the first, or the last) before comparing
/// the rest: a policy's dozen globs are tried against every variable of every exec.
#[inline]
pub fn matches(kind: GlobKind, pattern: &[u8], name: &[u8], fold: bool) -> bool {
    match kind {
        GlobKind::Exact => name.len() == pattern.len() && eq(pattern, name, fold),
        GlobKind::Prefix => {
            let lit = pattern
                .get(..pattern.len().saturating_sub(1))
                .unwrap_or(&[]);
            match (lit.first(), name.first()) {
                (Some(&a), Some(&b)) if !byte_eq(a, b, fold) => false,
                _ => name
                    .get(..lit.len())
                    .is_some_and(|head| eq(lit, head, fold)),
            }
        }
        GlobKind::Suffix => {
            let lit = pattern.get(1..).unwrap_or(&[]);
            match (lit.last(), name.last()) {
                (Some(&a), Some(&b)) if !byte_eq(a, b, fold) => false,
                _ => {
                    name.len() >= lit.len()
                        && name
                            .get(name.len() - lit.len()..)
                            .is_some_and(|tail| eq(lit, tail, fold))
                }
            }
        }
        GlobKind::Contains => {
            let lit = pattern
                .get(1..pattern.len().saturating_sub(1))
                .unwrap_or(&[]);
            contains(name, lit, fold)
        }
        GlobKind::General => general(pattern, name, fold),
    }
}

fn eq(a: &[u8], b: &[u8], fold: bool) -> bool {
    if fold {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// Substring test for short haystacks (names): compare at each position whose
/// byte equals the needle's first byte. Names are short, so this beats setting up
/// a memchr or memmem search.
fn contains(hay: &[u8], needle: &[u8], fold: bool) -> bool {
    let (Some(&first), Some(&last)) = (needle.first(), needle.last()) else {
        return true;
    };
    if fold {
        return hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle));
    }
    // Reject on the first and last byte before comparing the window.
    hay.windows(needle.len())
        .any(|w| w.first() == Some(&first) && w.last() == Some(&last) && w == needle)
}

/// Glob matching with `*` only, by the classic greedy algorithm with one backtrack
/// point: at worst `name.len() * pattern.len()` steps, no recursion.
fn general(pattern: &[u8], name: &[u8], fold: bool) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    // Position after the last `*` seen, and the name position it currently absorbs to.
    let mut star: Option<(usize, usize)> = None;
    while let Some(&nc) = name.get(n) {
        match pattern.get(p) {
            Some(b'*') => {
                p += 1;
                star = Some((p, n));
            }
            Some(&pc) if byte_eq(pc, nc, fold) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp;
                    n = sn + 1;
                    star = Some((sp, n));
                }
                None => return false,
            },
        }
    }
    pattern.get(p..).unwrap_or(&[]).iter().all(|&b| b == b'*')
}

#[inline]
fn byte_eq(a: u8, b: u8, fold: bool) -> bool {
    if fold {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// Is `name` a valid pattern text? Patterns are non-empty, and hold no `=` or NUL.
pub fn validate(pattern: &[u8]) -> Result<(), &'static str> {
    if pattern.is_empty() {
        return Err("a pattern cannot be empty");
    }
    if pattern.contains(&b'=') {
        return Err("a pattern cannot contain '='");
    }
    if pattern.contains(&0) {
        return Err("a pattern cannot contain a NUL byte");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        matches(
            GlobKind::classify(p.as_bytes()),
            p.as_bytes(),
            n.as_bytes(),
            false,
        )
    }

    #[test]
    fn kinds() {
        assert_eq!(GlobKind::classify(b"PATH"), GlobKind::Exact);
        assert_eq!(GlobKind::classify(b"LC_*"), GlobKind::Prefix);
        assert_eq!(GlobKind::classify(b"*_TOKEN"), GlobKind::Suffix);
        assert_eq!(GlobKind::classify(b"*SECRET*"), GlobKind::Contains);
        assert_eq!(GlobKind::classify(b"*"), GlobKind::General);
        assert_eq!(GlobKind::classify(b"**"), GlobKind::General);
        assert_eq!(GlobKind::classify(b"A*B"), GlobKind::General);
    }

    #[test]
    fn matching() {
        assert!(m("PATH", "PATH"));
        assert!(!m("PATH", "PATHX"));
        assert!(m("LC_*", "LC_ALL"));
        assert!(m("LC_*", "LC_"));
        assert!(!m("LC_*", "LANG"));
        assert!(m("*_TOKEN", "GH_TOKEN"));
        assert!(!m("*_TOKEN", "GH_TOKENS"));
        assert!(m("*SECRET*", "MY_SECRET_X"));
        assert!(m("*SECRET*", "SECRET"));
        assert!(!m("*SECRET*", "SECRE"));
        assert!(m("*", ""));
        assert!(m("*", "ANY"));
        assert!(m("A*B", "AB"));
        assert!(m("A*B", "AXXB"));
        assert!(!m("A*B", "AXXBC"));
        assert!(m("*A*B*", "XAYBZ"));
        assert!(!m("*A*B*", "XBYAZ"));
        assert!(m("BASH_FUNC_*%%", "BASH_FUNC_x%%"));
    }

    #[test]
    fn folding() {
        let p = b"*SECRET*";
        assert!(matches(GlobKind::Contains, p, b"db_secret", true));
        assert!(!matches(GlobKind::Contains, p, b"db_secret", false));
        assert!(matches(GlobKind::Exact, b"GH_TOKEN", b"gh_token", true));
    }

    #[test]
    fn specificity_orders_exact_first() {
        assert_eq!(specificity(b"AGENTMUX_PANE"), u32::MAX);
        assert_eq!(specificity(b"AGENTMUX_*"), 9);
        assert_eq!(specificity(b"*"), 0);
        assert!(specificity(b"AGENTMUX_HELPER_*") > specificity(b"AGENTMUX_*"));
    }

    #[test]
    fn general_matches_reference() {
        // Compare the general matcher with a naive recursive reference on small inputs.
        fn reference(p: &[u8], n: &[u8]) -> bool {
            match (p.first(), n.first()) {
                (None, None) => true,
                (Some(b'*'), _) => {
                    reference(&p[1..], n) || (!n.is_empty() && reference(p, &n[1..]))
                }
                (Some(a), Some(b)) if a == b => reference(&p[1..], &n[1..]),
                _ => false,
            }
        }
        let alphabet = [b'A', b'B', b'*'];
        let names = ["", "A", "B", "AB", "BA", "AAB", "ABB", "ABAB", "BBA"];
        let mut pats = vec![Vec::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for p in &pats {
                for c in alphabet {
                    let mut q: Vec<u8> = p.clone();
                    q.push(c);
                    next.push(q);
                }
            }
            pats.extend(next.clone());
            pats.dedup();
        }
        for p in &pats {
            for n in names {
                assert_eq!(
                    general(p, n.as_bytes(), false),
                    reference(p, n.as_bytes()),
                    "{:?} {:?}",
                    String::from_utf8_lossy(p),
                    n
                );
            }
        }
    }
}
