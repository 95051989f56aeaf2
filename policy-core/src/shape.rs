//! Token shapes: recognising credential-shaped values inside arbitrary bytes.
//!
//! envshim strips secrets from a child's environment and argv. Besides policy
//! rules keyed on variable names, it looks at the *values* and flags runs of
//! bytes that have the unmistakable shape of a credential: a GitHub or GitLab
//! token, a Slack token, an AWS access key id, an Anthropic, `OpenAI` or Google
//! API key, a JWT, or a URL carrying `user:password@`. Each kind is a
//! [`Shape`]; a policy enables a [`ShapeSet`] of them, and [`find_shape`] /
//! [`find_shapes`] report where in a haystack the matches are.
//!
//! # Boundary rule
//!
//! A token starts at the beginning of the haystack, right after a byte that is
//! not `[A-Za-z0-9_]` (`--token=ghp_…`, `"ghp_…"`, `?t=ghp_…`, `Bearer ghp_…`),
//! or right after a two-byte `-X` prefix at the very start of the haystack (`X`
//! an ASCII letter, an attached short option: `-ughp_…`). A shape whose prefix
//! is distinctive on its own (every one but the JWT: `gh?_`, `github_pat_`,
//! `glpat-`, `xox?-`, `AKIA`, `ASIA`, `AIza`, `sk-ant-`, `sk-proj-`; see
//! [`glued_prefix`]) also starts right after a word byte: a launcher that
//! writes `URL="x$GH_TOKEN"` glues the token to other text, and the token is
//! still there. A JWT (`eyJ`) starts after a word byte too: its prefix alone
//! is not distinctive (base64 text holds `eyJ` by chance), but the whole shape
//! is, two segments that start with `eyJ` and a third, each at least 10 bytes,
//! and `jwt` checks all of it before a match (`_$SESSION_JWT` holds the token
//! as surely as `$SESSION_JWT`). The prefilter needs no glued case for it: the
//! second segment's `.eyJ` is always at a boundary.
//!
//! Shapes with a fixed length (GitHub classic tokens, AWS access key ids,
//! Google API keys) need at least that many bytes of their class and extend
//! over a longer run (`"${GH_TOKEN}Z"` holds the token as surely as
//! `"$GH_TOKEN"`), as every other shape extends greedily over its character
//! class. A run one character too short is not a match. A URL's scheme may
//! start after any byte (`x_https://user:password@host` holds the password as
//! surely as `https://…`): its `://`, `:` and `@` are distinctive enough, and
//! the reported range is the password only.
//!
//! # Constraints
//!
//! `libenvshim.so` calls this code between `fork` and `exec`, where nothing
//! may allocate, lock or panic. The module therefore uses only `core` and
//! `memchr`, never indexes slices directly and never allocates.
//!
//! # Complexity
//!
//! Matching runs in linear time in the length of the haystack, for
//! [`find_shape`] as well as for a whole [`find_shapes`] iteration:
//!
//! * token shapes are only tried at offsets that pass the boundary rule and
//!   whose byte can start a token (`g`, `x`, `A`, `s`, `e`); a branch-free
//!   filter finds those offsets 32 bytes at a time, and a dispatch on the first
//!   byte means at most one token shape is tried per offset;
//! * a failed attempt of an exact or "at least N" shape reads a bounded
//!   number of bytes (its prefix plus at most N + 1);
//! * a failed JWT attempt rules out every later start inside the same first
//!   segment, so each base64url run is read by at most three JWT attempts
//!   (once in the role of each segment);
//! * URLs are found by searching for `://` with [`crate::bytes::find`]; the
//!   backward scheme scan stops at the first non-scheme byte and the forward
//!   userinfo scan at the first `/`, so neither crosses a neighbouring `://`;
//! * haystacks shorter than the shortest shape return at once.
//!
//! Each byte is therefore examined a bounded number of times.

use core::iter::FusedIterator;

/// A kind of credential-shaped value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Shape {
    /// `ghp_` `gho_` `ghu_` `ghs_` `ghr_` followed by exactly 36 ASCII alphanumerics.
    GithubToken = 1,
    /// `github_pat_` followed by at least 22 of `[A-Za-z0-9_]`.
    GithubFineGrained = 2,
    /// `glpat-` followed by at least 20 of `[A-Za-z0-9_-]`.
    GitlabToken = 3,
    /// `xoxb-` `xoxa-` `xoxp-` `xoxr-` `xoxs-` followed by at least 10 of `[A-Za-z0-9-]`.
    SlackToken = 4,
    /// `AKIA` or `ASIA` followed by exactly 16 of `[A-Z0-9]`.
    AwsAccessKeyId = 5,
    /// `sk-ant-` followed by at least 20 of `[A-Za-z0-9_-]`.
    AnthropicKey = 6,
    /// `sk-proj-` followed by at least 20 of `[A-Za-z0-9_-]`.
    OpenAiProjectKey = 7,
    /// `AIza` followed by exactly 35 of `[A-Za-z0-9_-]`.
    GoogleApiKey = 8,
    /// Three base64url segments separated by `.`, the first two starting with
    /// `eyJ`, each at least 10 bytes long.
    Jwt = 9,
    /// `scheme://user:password@` with a non-empty password.
    UrlCredentials = 10,
}

impl Shape {
    /// Every shape, in discriminant order.
    pub const ALL: [Shape; 10] = [
        Shape::GithubToken,
        Shape::GithubFineGrained,
        Shape::GitlabToken,
        Shape::SlackToken,
        Shape::AwsAccessKeyId,
        Shape::AnthropicKey,
        Shape::OpenAiProjectKey,
        Shape::GoogleApiKey,
        Shape::Jwt,
        Shape::UrlCredentials,
    ];

    /// Stable kebab-case id used in policy files and JSON.
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            Shape::GithubToken => "github-token",
            Shape::GithubFineGrained => "github-fine-grained",
            Shape::GitlabToken => "gitlab-token",
            Shape::SlackToken => "slack-token",
            Shape::AwsAccessKeyId => "aws-access-key-id",
            Shape::AnthropicKey => "anthropic-key",
            Shape::OpenAiProjectKey => "openai-project-key",
            Shape::GoogleApiKey => "google-api-key",
            Shape::Jwt => "jwt",
            Shape::UrlCredentials => "url-credentials",
        }
    }

    /// Human description for tables.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Shape::GithubToken => "github token",
            Shape::GithubFineGrained => "github fine-grained token",
            Shape::GitlabToken => "gitlab personal access token",
            Shape::SlackToken => "slack token",
            Shape::AwsAccessKeyId => "AWS access key id",
            Shape::AnthropicKey => "anthropic API key",
            Shape::OpenAiProjectKey => "openai project key",
            Shape::GoogleApiKey => "google API key",
            Shape::Jwt => "JSON web token",
            Shape::UrlCredentials => "URL with user:password@",
        }
    }

    /// [`describe`](Shape::describe) with its article, for sentences: "a github
    /// token", "an AWS access key id".
    ///
    /// Never inlined: the match is a table of addresses, which the loader
    /// relocates in every process that loads the shim; inlined at two call
    /// sites it would be two tables (docs/adr/0008-one-writable-segment.md).
    #[must_use]
    #[inline(never)]
    pub fn describe_with_article(self) -> &'static str {
        match self {
            Shape::GithubToken => "a github token",
            Shape::GithubFineGrained => "a github fine-grained token",
            Shape::GitlabToken => "a gitlab personal access token",
            Shape::SlackToken => "a slack token",
            Shape::AwsAccessKeyId => "an AWS access key id",
            Shape::AnthropicKey => "an anthropic API key",
            Shape::OpenAiProjectKey => "an openai project key",
            Shape::GoogleApiKey => "a google API key",
            Shape::Jwt => "a JSON web token",
            Shape::UrlCredentials => "a URL with user:password@",
        }
    }

    /// The shape whose [`id`](Shape::id) is `id`.
    #[must_use]
    pub fn from_id(id: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.id() == id)
    }

    /// The shape whose discriminant is `v`.
    #[must_use]
    pub fn from_u8(v: u8) -> Option<Shape> {
        match v {
            1 => Some(Shape::GithubToken),
            2 => Some(Shape::GithubFineGrained),
            3 => Some(Shape::GitlabToken),
            4 => Some(Shape::SlackToken),
            5 => Some(Shape::AwsAccessKeyId),
            6 => Some(Shape::AnthropicKey),
            7 => Some(Shape::OpenAiProjectKey),
            8 => Some(Shape::GoogleApiKey),
            9 => Some(Shape::Jwt),
            10 => Some(Shape::UrlCredentials),
            _ => None,
        }
    }

    const fn bit(self) -> u16 {
        match 1u16.checked_shl(self as u32) {
            Some(b) => b,
            None => 0,
        }
    }
}

/// One token-shaped run inside a haystack. For [`Shape::UrlCredentials`],
/// `start..end` covers the password only (the secret part); for every other
/// shape it covers the whole token including its prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeMatch {
    pub shape: Shape,
    pub start: usize,
    pub end: usize,
}

/// A set of enabled shapes, as a bitmask (bit n = Shape with discriminant n).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ShapeSet(u16);

/// Bits of every defined shape (1..=10).
const ALL_BITS: u16 = 0b0111_1111_1110;
/// Bits of every shape except [`Shape::UrlCredentials`].
const TOKEN_BITS: u16 = ALL_BITS & !Shape::UrlCredentials.bit();

impl ShapeSet {
    /// Every shape.
    pub const ALL: ShapeSet = ShapeSet(ALL_BITS);
    /// No shape.
    pub const NONE: ShapeSet = ShapeSet(0);

    /// Whether `shape` is in the set.
    #[must_use]
    pub const fn contains(self, shape: Shape) -> bool {
        self.0 & shape.bit() != 0
    }

    /// The set with `shape` added.
    #[must_use]
    pub const fn with(self, shape: Shape) -> ShapeSet {
        ShapeSet(self.0 | shape.bit())
    }

    /// The raw bitmask.
    #[must_use]
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The set with bitmask `bits`; bits that name no shape are dropped.
    #[must_use]
    pub const fn from_bits(bits: u16) -> ShapeSet {
        ShapeSet(bits & ALL_BITS)
    }
}

/// First match in `hay`, scanning left to right, considering only shapes in `enabled`.
///
/// Matches are ordered by start; on equal starts the longer match wins, then
/// the lower discriminant.
#[must_use]
#[inline(always)]
pub fn find_shape(hay: &[u8], enabled: ShapeSet) -> Option<ShapeMatch> {
    // The prefilter is inlined into the caller's loop; the full search (rare) is not.
    if !may_hold_shape(hay) {
        return None;
    }
    first_shape(hay, enabled)
}

#[inline(never)]
fn first_shape(hay: &[u8], enabled: ShapeSet) -> Option<ShapeMatch> {
    find_shapes(hay, enabled).next()
}

/// One cheap pass that rules out most values: is there any place where a token
/// could start (a byte that starts a token, followed by a possible second byte,
/// at a boundary or with a prefix that may be glued), or a `://`? Every match
/// the full search can find passes this test; values that fail it (most
/// environment values) cost a few vector instructions per 16 bytes.
#[inline(always)]
fn may_hold_shape(hay: &[u8]) -> bool {
    if hay.len() < MIN_URL_LEN {
        return false;
    }
    // The attached short option `-X` + token starts after a letter: let the full
    // search handle it.
    if hay.first() == Some(&b'-') {
        return true;
    }
    // Offsets where the full search could start: a `FIRST` byte or a `:`, each
    // checked exactly by `hit` (the candidates below are a superset).
    let hit = |i: usize| -> bool {
        let Some(&b) = hay.get(i) else { return false };
        let next = hay.get(i.wrapping_add(1)).copied();
        if b == b':' {
            return next == Some(b'/') && hay.get(i.wrapping_add(2)) == Some(&b'/');
        }
        second_fits(b, next)
            && match i.checked_sub(1).and_then(|p| hay.get(p)) {
                None => true,
                Some(&prev) => class(prev) & WORD == 0 || glued_prefix(hay.get(i..).unwrap_or(&[])),
            }
    };
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(found) = blocks_may_hold(hay, &hit) {
        return found;
    }
    // Short values (and other architectures): one table look-up per byte.
    for (i, &b) in hay.iter().enumerate() {
        if (class(b) & FIRST != 0 || b == b':') && hit(i) {
            return true;
        }
    }
    false
}

/// The vector version of `may_hold_shape`'s scan for haystacks of at least 16
/// bytes (`None` for shorter ones), 16 bytes at a time: bit j of `candidates` is
/// set when offset `at + j` is a place to `hit`. The last block overlaps the one
/// before it instead of reading past the end; its bits already scanned are masked.
///
/// A candidate is a byte that starts a token followed by a byte that may be its
/// second (a superset, [`block_candidates`]), wherever it stands: `hit` then
/// checks the pair, the boundary and a glued prefix exactly. Most values have
/// no such pair at all, and no word-boundary mask is worked out for them.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn blocks_may_hold(hay: &[u8], hit: &impl Fn(usize) -> bool) -> Option<bool> {
    let len = hay.len();
    let last = len.checked_sub(16)?;
    let mut at = 0usize;
    while at < len {
        let start = at.min(last);
        let block: &[u8; 16] = hay.get(start..start.wrapping_add(16))?.try_into().ok()?;
        let fresh = 0xffffu32 << (at - start);
        let mut candidates = block_candidates(block) & fresh;
        while candidates != 0 {
            let j = candidates.trailing_zeros() as usize;
            if hit(start.wrapping_add(j)) {
                return Some(true);
            }
            candidates &= candidates - 1;
        }
        at = start.wrapping_add(16);
    }
    Some(false)
}

/// For one 16-byte block, the bit mask (bit j = byte j) of the places to `hit`:
/// `:`, and a byte that can start a token (`FIRST`) followed by a byte that may
/// be a token's second (`h`-`o`, `s` or `y`, either case: a superset of
/// `second_fits`'s `h i l`, `o`, `K S I`, `k`, `y`). At the block's last byte
/// the byte after it is not looked at: a `FIRST` byte there is a candidate.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn block_candidates(block: &[u8; 16]) -> u32 {
    use core::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: the intrinsics need SSE2, which this function is compiled only with
    // (the cfg above; every x86_64 CPU has it), and the load reads the 16 bytes of
    // `block` (unaligned loads have no alignment requirement). Inlined into the
    // scan loop, which a `#[target_feature]` function would not always be.
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        let splat = |b: u8| _mm_set1_epi8(b as i8);
        let eq = |v, b: u8| _mm_cmpeq_epi8(v, splat(b));
        // Signed compares: bytes >= 0x80 are negative and fall outside the range.
        let lower = _mm_or_si128(x, splat(0x20));
        let second = _mm_or_si128(
            _mm_and_si128(
                _mm_cmpgt_epi8(lower, splat(b'h' - 1)),
                _mm_cmpgt_epi8(splat(b'o' + 1), lower),
            ),
            _mm_or_si128(eq(lower, b's'), eq(lower, b'y')),
        );
        let first = _mm_or_si128(
            _mm_or_si128(_mm_or_si128(eq(x, b'g'), eq(x, b'x')), _mm_or_si128(eq(x, b'A'), eq(x, b's'))),
            eq(x, b'e'),
        );
        let mask = |v| _mm_movemask_epi8(v) as u32 & 0xffff;
        let first = mask(first);
        // Bit j: byte j + 1 may be a second byte; bit 15 always may.
        let second = (mask(second) >> 1) | 0x8000;
        (first & second) | mask(eq(x, b':'))
    }
}

/// Iterator over all non-overlapping matches, left to right.
#[must_use]
pub fn find_shapes(hay: &[u8], enabled: ShapeSet) -> ShapeMatches<'_> {
    ShapeMatches {
        hay,
        enabled,
        pos: 0,
        tok: None,
        tok_done: enabled.0 & TOKEN_BITS == 0,
        url: None,
        url_scan: 0,
        url_done: !enabled.contains(Shape::UrlCredentials),
    }
}

/// Iterator returned by [`find_shapes`].
#[derive(Clone, Debug)]
pub struct ShapeMatches<'h> {
    hay: &'h [u8],
    enabled: ShapeSet,
    /// Matches must start at or after this offset (end of the previous one).
    pos: usize,
    /// Next token match found but not yet emitted.
    tok: Option<ShapeMatch>,
    /// No token match starts at or after `pos`.
    tok_done: bool,
    /// Next URL match found but not yet emitted.
    url: Option<ShapeMatch>,
    /// Where the next search for `://` begins.
    url_scan: usize,
    /// No `://` remains at or after `url_scan`.
    url_done: bool,
}

impl Iterator for ShapeMatches<'_> {
    type Item = ShapeMatch;

    fn next(&mut self) -> Option<ShapeMatch> {
        let pos = self.pos;
        if self.tok.is_some_and(|m| m.start < pos) {
            self.tok = None;
        }
        if self.tok.is_none() && !self.tok_done {
            self.tok = find_token(self.hay, pos, self.enabled);
            self.tok_done = self.tok.is_none();
        }
        while !self.url_done && self.url.is_none_or(|m| m.start < pos) {
            self.url = None;
            let (found, next) = find_url(self.hay, self.url_scan);
            self.url_scan = next;
            match found {
                Some(m) => self.url = Some(m),
                None => self.url_done = true,
            }
        }
        if self.url.is_some_and(|m| m.start < pos) {
            self.url = None;
        }

        let take_url = match (self.tok, self.url) {
            (None, None) => return None,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            // Earlier start first, then longer, then the specific token shape.
            (Some(t), Some(u)) => u.start < t.start || (u.start == t.start && u.end > t.end),
        };
        let m = if take_url {
            self.url.take()
        } else {
            self.tok.take()
        }?;
        self.pos = m.end;
        Some(m)
    }
}

impl FusedIterator for ShapeMatches<'_> {}

// ---------------------------------------------------------------------------
// Byte classes.

#[inline]
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[inline]
fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

#[inline]
fn is_upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

#[inline]
fn is_slack(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

#[inline]
fn is_scheme(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'.' || b == b'-'
}

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `hay` starts with `-X`, X an ASCII letter (attached short option).
#[inline]
fn dash_letter(hay: &[u8]) -> bool {
    hay.first() == Some(&b'-') && hay.get(1).is_some_and(u8::is_ascii_alphabetic)
}

/// Does `rest` start with a prefix that lets a token of its shape start right
/// after a word byte (module docs, "Boundary rule")? Every token prefix of four
/// bytes or more that chance text does not hold, and the JWT's `eyJ`, whose
/// whole shape `jwt` checks.
#[inline]
fn glued_prefix(rest: &[u8]) -> bool {
    match rest {
        [b'e', b'y', b'J', ..] => true,
        [b'g', b'h', b'p' | b'o' | b'u' | b's' | b'r', b'_', ..] => true,
        [b'x', b'o', b'x', b'b' | b'a' | b'p' | b'r' | b's', b'-', ..] => true,
        [b'A', b'K' | b'S', b'I', b'A', ..] | [b'A', b'I', b'z', b'a', ..] => true,
        _ => {
            rest.starts_with(b"github_pat_")
                || rest.starts_with(b"glpat-")
                || rest.starts_with(b"sk-ant-")
                || rest.starts_with(b"sk-proj-")
        }
    }
}

/// Whether a token may start at offset `i` of `hay` whatever its prefix.
fn at_boundary(hay: &[u8], i: usize) -> bool {
    match i.checked_sub(1) {
        None => true,
        Some(p) => !hay.get(p).copied().is_some_and(is_word) || (i == 2 && dash_letter(hay)),
    }
}

/// Length of the leading run of `s` in `class`.
#[inline]
fn run(s: &[u8], class: fn(u8) -> bool) -> usize {
    s.iter().take_while(|&&b| class(b)).count()
}


// ---------------------------------------------------------------------------
// Token shapes.

/// What a token attempt at one position found.
enum Attempt {
    Match(Shape, usize),
    NoMatch,
    /// A JWT attempt failed; no JWT starts before this many bytes from here.
    JwtDead(usize),
}

/// A prefix of `prefix_len` bytes (which the caller matched) followed by at
/// least `min` bytes of `class` (greedy).
fn at_least(rest: &[u8], prefix_len: usize, min: usize, class: fn(u8) -> bool) -> Option<usize> {
    let body = rest.get(prefix_len..)?;
    let n = run(body, class);
    (n >= min).then(|| prefix_len.saturating_add(n))
}


/// Try the token shapes that can start with the first byte of `rest`.
fn token_at(rest: &[u8], enabled: ShapeSet, jwt_ok: bool) -> Attempt {
    let hit = |shape: Shape, len: Option<usize>| match len {
        Some(len) => Attempt::Match(shape, len),
        None => Attempt::NoMatch,
    };
    match rest.first() {
        Some(b'g') => {
            if enabled.contains(Shape::GithubToken)
                && rest.get(1) == Some(&b'h')
                && matches!(rest.get(2), Some(b'p' | b'o' | b'u' | b's' | b'r'))
                && rest.get(3) == Some(&b'_')
            {
                hit(
                    Shape::GithubToken,
                    at_least(rest, 4, 36, |b| b.is_ascii_alphanumeric()),
                )
            } else if enabled.contains(Shape::GithubFineGrained) && rest.starts_with(b"github_pat_")
            {
                hit(
                    Shape::GithubFineGrained,
                    at_least(rest, b"github_pat_".len(), 22, is_word),
                )
            } else if enabled.contains(Shape::GitlabToken) && rest.starts_with(b"glpat-") {
                hit(Shape::GitlabToken, at_least(rest, b"glpat-".len(), 20, is_b64url))
            } else {
                Attempt::NoMatch
            }
        }
        Some(b'x') => {
            if enabled.contains(Shape::SlackToken)
                && rest.starts_with(b"xox")
                && matches!(rest.get(3), Some(b'b' | b'a' | b'p' | b'r' | b's'))
                && rest.get(4) == Some(&b'-')
            {
                hit(Shape::SlackToken, at_least(rest, 5, 10, is_slack))
            } else {
                Attempt::NoMatch
            }
        }
        Some(b'A') => {
            if enabled.contains(Shape::AwsAccessKeyId)
                && (rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA"))
            {
                hit(Shape::AwsAccessKeyId, at_least(rest, 4, 16, is_upper_digit))
            } else if enabled.contains(Shape::GoogleApiKey) && rest.starts_with(b"AIza") {
                hit(Shape::GoogleApiKey, at_least(rest, 4, 35, is_b64url))
            } else {
                Attempt::NoMatch
            }
        }
        Some(b's') => {
            if enabled.contains(Shape::AnthropicKey) && rest.starts_with(b"sk-ant-") {
                hit(
                    Shape::AnthropicKey,
                    at_least(rest, b"sk-ant-".len(), 20, is_b64url),
                )
            } else if enabled.contains(Shape::OpenAiProjectKey) && rest.starts_with(b"sk-proj-") {
                hit(
                    Shape::OpenAiProjectKey,
                    at_least(rest, b"sk-proj-".len(), 20, is_b64url),
                )
            } else {
                Attempt::NoMatch
            }
        }
        Some(b'e') if jwt_ok && enabled.contains(Shape::Jwt) && rest.starts_with(b"eyJ") => {
            match jwt(rest) {
                Ok(len) => Attempt::Match(Shape::Jwt, len),
                Err(dead) => Attempt::JwtDead(dead),
            }
        }
        _ => Attempt::NoMatch,
    }
}

/// Minimum length of each JWT segment.
const JWT_SEG_MIN: usize = 10;

/// A JWT at the start of `rest` (which starts with `eyJ`): `Ok(len)`, or
/// `Err(n)` where `n` is the length of the first segment. On failure no JWT
/// can start inside that segment either: a later start has a shorter first
/// segment and the same remainder.
fn jwt(rest: &[u8]) -> Result<usize, usize> {
    let s1 = run(rest, is_b64url);
    let after1 = jwt_tail(rest, s1).ok_or(s1)?;
    Ok(after1)
}

/// Checks `.eyJ<seg2>.<seg3>` after a first segment of length `s1`; returns
/// the total length.
fn jwt_tail(rest: &[u8], s1: usize) -> Option<usize> {
    if s1 < JWT_SEG_MIN {
        return None;
    }
    let seg2 = rest.get(s1..)?.strip_prefix(b".")?;
    if !seg2.starts_with(b"eyJ") {
        return None;
    }
    let s2 = run(seg2, is_b64url);
    if s2 < JWT_SEG_MIN {
        return None;
    }
    let seg3 = seg2.get(s2..)?.strip_prefix(b".")?;
    let s3 = run(seg3, is_b64url);
    if s3 < JWT_SEG_MIN {
        return None;
    }
    // s1 + '.' + s2 + '.' + s3, all within `rest`.
    s1.checked_add(s2)?.checked_add(s3)?.checked_add(2)
}

/// Length of the shortest token shape (`xoxb-` and 10 more bytes): a text shorter
/// than this holds a token only as a URL's credentials (`decide::name_shape`
/// relies on it; tested in `min_token_len`).
pub const MIN_TOKEN_LEN: usize = 15;

/// Length of the shortest URL with credentials (`a://:p@`).
const MIN_URL_LEN: usize = 7;

/// Could a token shape lie in `name`, a variable's name? The cheap test in front
/// of the search for names, which every exec runs for every long name. A token
/// starts at a boundary, after a byte that is not `[A-Za-z0-9_]`, or glued to a
/// word by a distinctive prefix (`glued_prefix`): in a name made of word bytes
/// only (most names), that is its first byte or such a prefix, and a URL's
/// credentials need a `:`. So only a name that starts like a token, holds a
/// glued prefix, or holds any other byte, is searched. A name shorter than
/// [`MIN_TOKEN_LEN`] is not (a URL's
/// credentials, the one shape that can be shorter, `a://u:p@h`, are not looked
/// for in so short a name).
#[inline]
pub fn name_may_hold_shape(name: &[u8]) -> bool {
    let class = |b: &u8| CLASS.get(usize::from(*b)).copied().unwrap_or(0);
    if name.len() < MIN_TOKEN_LEN {
        return false;
    }
    name.first().is_some_and(|b| class(b) & FIRST != 0)
        || name.iter().any(|b| class(b) & WORD == 0)
        || (1..name.len()).any(|i| {
            name.get(i).is_some_and(|&b| glue_fits(b, name.get(i.wrapping_add(1)).copied()))
                && glued_prefix(name.get(i..).unwrap_or(&[]))
        })
}

/// Bytes that can start a token shape.
#[inline]
fn is_first(b: u8) -> bool {
    matches!(b, b'g' | b'x' | b'A' | b's' | b'e')
}

/// Byte classes for the candidate filter: `WORD` bytes (`[A-Za-z0-9_]`) cannot
/// precede a token; `FIRST` bytes can start one.
const WORD: u8 = 1;
const FIRST: u8 = 2;
// Built at compile time: an index out of bounds here is a build error, never a
// run-time panic.
#[allow(clippy::indexing_slicing)]
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' {
            t[b] |= WORD;
        }
        if matches!(c, b'g' | b'x' | b'A' | b's' | b'e') {
            t[b] |= FIRST;
        }
        b += 1;
    }
    t
};

/// Can `second` follow `first` at the start of a prefix that [`glued_prefix`]
/// accepts? Its cheap first test, made before the call by
/// [`name_may_hold_shape`]. It leaves out the JWT's `ey`: a name of word bytes
/// alone holds no JWT (whose segments are joined by `.`).
#[inline(always)]
fn glue_fits(first: u8, second: Option<u8>) -> bool {
    matches!(
        (first, second),
        (b'g', Some(b'h' | b'l' | b'i')) | (b'x', Some(b'o')) | (b'A', Some(b'K' | b'S' | b'I')) | (b's', Some(b'k'))
    )
}

/// Can `second` follow `first` at the start of some token shape?
#[inline(always)]
fn second_fits(first: u8, second: Option<u8>) -> bool {
    matches!(
        (first, second),
        (b'g', Some(b'h' | b'l' | b'i'))
            | (b'x', Some(b'o'))
            | (b'A', Some(b'K' | b'S' | b'I'))
            | (b's', Some(b'k'))
            | (b'e', Some(b'y'))
    )
}

#[inline(always)]
fn class(b: u8) -> u8 {
    CLASS.get(usize::from(b)).copied().unwrap_or(0)
}

/// First token match (any shape but URL credentials) starting at or after `from`.
fn find_token(hay: &[u8], from: usize, enabled: ShapeSet) -> Option<ShapeMatch> {
    if hay.len().saturating_sub(from) < MIN_TOKEN_LEN {
        return None;
    }
    // JWT attempts are pointless before this offset (see `jwt`).
    let mut jwt_dead = 0usize;
    let mut attempt = |i: usize| -> Option<ShapeMatch> {
        let rest = hay.get(i..)?;
        // Every shape starts at a boundary or glued to a word (`glued_prefix`).
        let jwt_ok = i >= jwt_dead;
        match token_at(rest, enabled, jwt_ok) {
            Attempt::Match(shape, len) => Some(ShapeMatch {
                shape,
                start: i,
                end: i.saturating_add(len),
            }),
            Attempt::NoMatch => None,
            Attempt::JwtDead(n) => {
                jwt_dead = i.saturating_add(n);
                None
            }
        }
    };
    // Offsets 0..=2 need the full rule: no previous byte, attached `-X`.
    let mut i = from;
    while i < 3 {
        let b = *hay.get(i)?;
        if is_first(b) && (at_boundary(hay, i) || glued_prefix(hay.get(i..)?)) {
            if let Some(m) = attempt(i) {
                return Some(m);
            }
        }
        i = i.saturating_add(1);
    }
    // From here on the byte before `i` exists: one table look-up per byte, and a
    // full attempt only where a token may start.
    // The second byte is checked too before a full attempt: every shape's prefix
    // fixes it (gh, gl, gi, xo, AK, AS, AI, sk, ey).
    let mut prev = class(*hay.get(i.checked_sub(1)?)?);
    let mut at = i;
    for &b in hay.get(i..)? {
        let c = class(b);
        let starts = if prev & WORD == 0 {
            second_fits(b, hay.get(at.wrapping_add(1)).copied())
        } else {
            glued_prefix(hay.get(at..).unwrap_or(&[]))
        };
        if c & FIRST != 0 && starts {
            if let Some(m) = attempt(at) {
                return Some(m);
            }
        }
        prev = c;
        at = at.wrapping_add(1);
    }
    None
}

// ---------------------------------------------------------------------------
// URL credentials.

/// The first URL-credentials match whose `://` is at or after `scan`, and the
/// offset where the next search for `://` should begin.
fn find_url(hay: &[u8], scan: usize) -> (Option<ShapeMatch>, usize) {
    let Some(tail) = hay.get(scan..).filter(|t| t.len() >= MIN_URL_LEN) else {
        return (None, hay.len());
    };
    // `memmem::find` (unlike a `Finder`) has no set-up cost on short haystacks.
    let mut at = scan;
    let mut rest = tail;
    // A plain scan for `:` then `//`: values are short, and memmem's set-up costs
    // more than it saves on them.
    while let Some(rel) = find_scheme_separator(rest) {
        let c = at.saturating_add(rel);
        at = c.saturating_add(3);
        if let Some(m) = url_at(hay, c) {
            return (Some(m), at);
        }
        let Some(r) = hay.get(at..) else { break };
        rest = r;
    }
    (None, hay.len())
}

/// Offset of the first `://` in `hay`: find `:` with a plain scan, then check the
/// two bytes after it.
fn find_scheme_separator(hay: &[u8]) -> Option<usize> {
    let mut from = 0usize;
    loop {
        let rel = hay.get(from..)?.iter().position(|&b| b == b':')?;
        let c = from.saturating_add(rel);
        if hay.get(c.saturating_add(1)..c.saturating_add(3)) == Some(b"//") {
            return Some(c);
        }
        from = c.saturating_add(1);
    }
}

/// A `scheme://user:password@` whose `://` is at offset `c`.
fn url_at(hay: &[u8], c: usize) -> Option<ShapeMatch> {
    // Scheme: `[A-Za-z][A-Za-z0-9+.-]*` ending at `c`, starting after any byte
    // (module docs). The backward scan stops at the first non-scheme byte, which
    // is at the latest the `/` of a previous `://`.
    let before = hay.get(..c)?;
    let scheme_ok = before
        .iter()
        .rev()
        .take_while(|&&b| is_scheme(b))
        .any(u8::is_ascii_alphabetic);
    if !scheme_ok {
        return None;
    }
    // Userinfo: up to the first `/`, `@` or whitespace, which must be `@`;
    // the first `:` separates user (0+ bytes) from password (1+ bytes).
    let auth_start = c.checked_add(3)?;
    let auth = hay.get(auth_start..)?;
    let mut colon = None;
    for (j, &b) in auth.iter().enumerate() {
        match b {
            b'@' => {
                let pass_start = colon?;
                if pass_start >= j {
                    return None;
                }
                return Some(ShapeMatch {
                    shape: Shape::UrlCredentials,
                    start: auth_start.saturating_add(pass_start),
                    end: auth_start.saturating_add(j),
                });
            }
            b'/' => return None,
            b':' if colon.is_none() => colon = Some(j.saturating_add(1)),
            _ if is_space(b) => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod min_token_len {
    use super::*;

    /// Every shape's shortest token but a URL's credentials is at least
    /// `MIN_TOKEN_LEN` long (see `decide::name_shape`, which relies on it).
    #[test]
    fn no_shape_is_shorter_without_a_colon() {
        let shortest = [
            format!("ghp_{}", "a".repeat(36)),
            format!("github_pat_{}", "a".repeat(22)),
            format!("glpat-{}", "a".repeat(20)),
            format!("xoxb-{}", "1".repeat(10)),
            format!("AKIA{}", "A".repeat(16)),
            format!("sk-ant-{}", "a".repeat(20)),
            format!("sk-proj-{}", "a".repeat(20)),
            format!("AIza{}", "a".repeat(35)),
            format!("eyJ{}.eyJ{}.{}", "a".repeat(7), "a".repeat(7), "a".repeat(10)),
        ];
        for token in &shortest {
            assert!(find_shape(token.as_bytes(), ShapeSet::ALL).is_some(), "{token}");
            assert!(token.len() >= MIN_TOKEN_LEN, "{token}");
            let cut = &token.as_bytes()[..token.len() - 1];
            assert!(
                find_shape(cut, ShapeSet::ALL).is_none() || cut.len() >= MIN_TOKEN_LEN,
                "{token}"
            );
        }
        // Nothing shorter matches, for any ASCII text without a `:`.
        for len in 0..MIN_TOKEN_LEN {
            for first in [b'g', b'x', b'A', b's', b'e'] {
                let mut t = vec![first; 1];
                t.extend(std::iter::repeat_n(b'a', len.saturating_sub(1)));
                assert!(find_shape(&t, ShapeSet::ALL).is_none());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    /// `n` bytes cycling through letters and digits (never a real secret).
    fn filler(n: usize, alphabet: &str) -> String {
        alphabet.chars().cycle().take(n).collect()
    }

    const ALNUM: &str = "AbCd0123EfGh4567";
    const UPPER: &str = "ABCDEFGH01234567";
    const B64: &str = "AbC-d_0123EfGh4567";

    fn first(hay: &str) -> Option<ShapeMatch> {
        find_shape(hay.as_bytes(), ShapeSet::ALL)
    }

    fn all(hay: &str) -> Vec<ShapeMatch> {
        find_shapes(hay.as_bytes(), ShapeSet::ALL).collect()
    }

    fn jwt_token() -> String {
        format!(
            "eyJ{}.eyJ{}.{}",
            filler(20, B64),
            filler(30, B64),
            filler(25, B64)
        )
    }

    /// One valid fake token per shape (for URLs: the whole URL, with the password).
    fn samples() -> Vec<(Shape, String)> {
        std::vec![
            (Shape::GithubToken, format!("ghp_{}", filler(36, ALNUM))),
            (Shape::GithubToken, format!("ghs_{}", filler(36, ALNUM))),
            (
                Shape::GithubFineGrained,
                format!("github_pat_{}", filler(40, "Ab_12"))
            ),
            (Shape::GitlabToken, format!("glpat-{}", filler(20, B64))),
            (Shape::SlackToken, format!("xoxb-{}", filler(30, "12-Ab"))),
            (Shape::AwsAccessKeyId, format!("AKIA{}", filler(16, UPPER))),
            (Shape::AwsAccessKeyId, format!("ASIA{}", filler(16, UPPER))),
            (Shape::AnthropicKey, format!("sk-ant-{}", filler(40, B64))),
            (
                Shape::OpenAiProjectKey,
                format!("sk-proj-{}", filler(40, B64))
            ),
            (Shape::GoogleApiKey, format!("AIza{}", filler(35, B64))),
            (Shape::Jwt, jwt_token()),
        ]
    }

    #[test]
    fn ids_and_discriminants_round_trip() {
        for (i, s) in Shape::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i + 1);
            assert_eq!(Shape::from_u8(*s as u8), Some(*s));
            assert_eq!(Shape::from_id(s.id()), Some(*s));
            assert!(!s.describe().is_empty());
        }
        assert_eq!(Shape::from_u8(0), None);
        assert_eq!(Shape::from_u8(11), None);
        assert_eq!(Shape::from_id("nope"), None);
        assert_eq!(Shape::UrlCredentials.describe(), "URL with user:password@");
        assert_eq!(Shape::GithubToken.id(), "github-token");
    }

    #[test]
    fn shape_set_bits() {
        assert_eq!(ShapeSet::default(), ShapeSet::NONE);
        for s in Shape::ALL {
            assert!(ShapeSet::ALL.contains(s));
            assert!(!ShapeSet::NONE.contains(s));
            let one = ShapeSet::NONE.with(s);
            assert!(one.contains(s));
            assert_eq!(one.bits(), 1 << (s as u8));
            assert_eq!(ShapeSet::from_bits(one.bits()), one);
        }
        assert_eq!(ShapeSet::from_bits(u16::MAX), ShapeSet::ALL);
        let set = ShapeSet::NONE.with(Shape::Jwt).with(Shape::GithubToken);
        assert_eq!(set.bits(), (1 << 9) | (1 << 1));
    }

    #[test]
    fn every_shape_matches_in_context() {
        for (shape, tok) in samples() {
            let n = tok.len();
            let cases: [(String, usize); 7] = [
                (tok.clone(), 0),
                (format!("--token={tok}"), 8),
                (format!("-u{tok}"), 2),
                (format!("https://host/?t={tok}"), 16),
                (format!("{tok}\n"), 0),
                (format!("\"{tok}\""), 1),
                (format!("x='{tok}' y"), 3),
            ];
            for (hay, at) in cases {
                let m = first(&hay);
                assert_eq!(
                    m,
                    Some(ShapeMatch {
                        shape,
                        start: at,
                        end: at + n
                    }),
                    "{shape:?} in {hay:?}"
                );
                // Only this shape enabled, and everything but this shape.
                let only = ShapeSet::NONE.with(shape);
                assert_eq!(
                    find_shape(hay.as_bytes(), only).map(|m| m.shape),
                    Some(shape)
                );
                let others = ShapeSet::from_bits(ShapeSet::ALL.bits() & !only.bits());
                assert_eq!(find_shape(hay.as_bytes(), others), None, "{hay:?}");
            }
        }
    }

    #[test]
    fn glued_prefix_at_every_block_offset() {
        // The vector prefilter checks the byte after a block alone (bit 15):
        // a glued token whose prefix starts at any offset, across that edge too.
        let token = format!("ghp_{}", filler(36, "aB3"));
        for lead in 1..40 {
            let hay = format!("{}{token}Z", "w".repeat(lead));
            assert_eq!(first(&hay).map(|m| m.shape), Some(Shape::GithubToken), "lead {lead}");
        }
    }

    #[test]
    fn non_utf8_neighbours() {
        for (shape, tok) in samples() {
            let mut hay = std::vec![0xff, 0xfe, b'='];
            hay.extend_from_slice(tok.as_bytes());
            hay.extend_from_slice(&[0x80, 0xc3]);
            let m = find_shape(&hay, ShapeSet::ALL);
            assert_eq!(
                m,
                Some(ShapeMatch {
                    shape,
                    start: 3,
                    end: 3 + tok.len()
                })
            );
        }
    }

    #[test]
    fn near_misses_for_every_prefix_shape() {
        for (shape, tok) in samples() {
            // One character short.
            let short = &tok[..tok.len() - 1];
            if shape != Shape::Jwt {
                let short_min = match shape {
                    Shape::GithubFineGrained => format!("github_pat_{}", filler(21, ALNUM)),
                    Shape::GitlabToken => format!("glpat-{}", filler(19, B64)),
                    Shape::SlackToken => format!("xoxp-{}", filler(9, ALNUM)),
                    Shape::AnthropicKey => format!("sk-ant-{}", filler(19, B64)),
                    Shape::OpenAiProjectKey => format!("sk-proj-{}", filler(19, B64)),
                    _ => String::from(short),
                };
                assert_eq!(first(&short_min), None, "{short_min:?}");
            }
            // Glued to a word: found by a distinctive prefix, or a JWT's whole shape.
            let glued = Some(1);
            for before in ["x", "_", "9"] {
                let hay = format!("{before}{tok}");
                assert_eq!(first(&hay).map(|m| m.start), glued, "{hay}");
            }
            // Attached short option only at the start of the haystack (a shape
            // that may be glued is found after any word byte).
            let after = glued.map(|_| 4);
            assert_eq!(first(&format!("a -u{tok}")).map(|m| m.start), after);
            assert_eq!(first(&format!("--u{tok}")).map(|m| m.start), glued.map(|_| 3));
            assert_eq!(first(&format!("-1{tok}")).map(|m| m.start), glued.map(|_| 2));
            // Wrong prefix case.
            let upper: String = tok.chars().take(3).flat_map(char::to_uppercase).collect();
            let lower: String = tok.chars().take(3).flat_map(char::to_lowercase).collect();
            let swapped = if tok.starts_with(&upper) {
                lower
            } else {
                upper
            };
            assert_eq!(first(&format!("{swapped}{}", &tok[3..])), None, "{swapped}");
        }
    }

    #[test]
    fn exact_shapes_reject_wrong_lengths() {
        for (prefix, n, alpha) in [
            ("ghp_", 36, ALNUM),
            ("gho_", 36, ALNUM),
            ("ghu_", 36, ALNUM),
            ("ghr_", 36, ALNUM),
            ("AKIA", 16, UPPER),
            ("AIza", 35, B64),
        ] {
            assert!(first(&format!("{prefix}{}", filler(n, alpha))).is_some());
            for len in [n - 1, 0, n / 2] {
                let hay = format!("{prefix}{}", filler(len, alpha));
                assert_eq!(first(&hay), None, "{hay:?}");
                assert_eq!(first(&format!("a {hay} b")), None, "{hay:?}");
            }
            // A longer run holds the token glued to what follows it.
            for len in [n + 1, 2 * n] {
                let hay = format!("a {prefix}{} b", filler(len, alpha));
                assert_eq!(first(&hay).map(|m| m.end), Some(2 + 4 + len), "{hay:?}");
            }
        }
        // Other gh letters are not GitHub prefixes.
        assert_eq!(first(&format!("ghx_{}", filler(36, ALNUM))), None);
        assert_eq!(first(&format!("GHP_{}", filler(36, ALNUM))), None);
        // AWS: lowercase body.
        assert_eq!(
            first(&format!("AKIA{}", filler(16, "abcdefgh01234567"))),
            None
        );
        assert_eq!(first(&format!("akia{}", filler(16, UPPER))), None);
        // A byte outside the class ends an exact token: `_` for GitHub, `a` for AWS.
        let gh = format!("ghp_{}", filler(36, ALNUM));
        assert_eq!(first(&format!("{gh}_x")).map(|m| m.end), Some(40));
        let aws = format!("AKIA{}", filler(16, UPPER));
        assert_eq!(first(&format!("{aws}-x")).map(|m| m.end), Some(20));
    }

    #[test]
    fn at_least_shapes_are_greedy() {
        let hay = format!("glpat-{}-rest_of_it xyz", filler(25, B64));
        assert_eq!(
            first(&hay).map(|m| (m.start, m.end)),
            Some((0, hay.len() - 4))
        );
        let hay = format!("xoxa-{}_tail", filler(12, "12-Ab"));
        assert_eq!(first(&hay).map(|m| m.end), Some(17));
        let hay = format!("github_pat_{}-x", filler(30, "Ab_12"));
        assert_eq!(first(&hay).map(|m| m.end), Some(41));
        for p in ["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"] {
            assert!(first(&format!("{p}{}", filler(10, "1a-"))).is_some(), "{p}");
        }
        assert_eq!(first(&format!("xoxc-{}", filler(20, ALNUM))), None);
        assert_eq!(first(&format!("sk-{}", filler(40, B64))), None);
        assert_eq!(first(&format!("sk-other-{}", filler(40, B64))), None);
    }

    #[test]
    fn prose_is_not_a_token() {
        for hay in [
            "please set the token before running",
            "the password is stored in the keychain",
            "token=",
            "password: hunter",
            "Authorization: Bearer",
            "ghp_",
            "github_pat_",
            "glpat-",
            "xoxb-",
            "sk-ant-",
            "sk-proj-",
            "AKIA",
            "AIza",
            "eyJ",
            "/usr/local/bin:/usr/bin:/bin",
            "",
        ] {
            assert_eq!(first(hay), None, "{hay:?}");
        }
    }

    #[test]
    fn jwt_near_misses() {
        let (a, b, c) = (filler(20, B64), filler(30, B64), filler(25, B64));
        let good = format!("eyJ{a}.eyJ{b}.{c}");
        assert!(first(&good).is_some());
        // Base64 that is not a JWT.
        let plain = filler(200, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789+/");
        assert_eq!(first(&plain), None);
        assert_eq!(first(&format!("eyJ{a}")), None);
        assert_eq!(first(&format!("eyJ{a}.eyJ{b}")), None);
        assert_eq!(first(&format!("eyJ{a}.eyJ{b}.")), None);
        assert_eq!(first(&format!("eyJ{a}.{b}.{c}")), None);
        assert_eq!(first(&format!("eyJ{a}.eyJ{b}.{}", filler(9, B64))), None);
        assert_eq!(first(&format!("eyJabc.eyJ{b}.{c}")), None);
        assert_eq!(first(&format!("eyJ{a}.eyJabc.{c}")), None);
        assert_eq!(first(&format!("eyj{a}.eyJ{b}.{c}")), None);
        // A JWT may start after a '-' inside a base64url run.
        let hay = format!("xx-eyJ{a}.eyJ{b}.{c}");
        assert_eq!(first(&hay).map(|m| (m.start, m.end)), Some((3, hay.len())));
        // Trailing '.' is not base64url: the JWT still ends at the third segment.
        let hay = format!("{good}.more");
        assert_eq!(first(&hay).map(|m| m.end), Some(good.len()));
    }

    #[test]
    fn url_credentials() {
        let pw = filler(12, ALNUM);
        let hay = format!("https://alice:{pw}@example.com/x");
        assert_eq!(
            first(&hay),
            Some(ShapeMatch {
                shape: Shape::UrlCredentials,
                start: 14,
                end: 26
            })
        );
        assert_eq!(&hay[14..26], pw);
        // Empty user, `:` inside the password, other schemes, in context.
        let m = first("postgres://:p@db").map(|m| (m.start, m.end));
        assert_eq!(m, Some((12, 13)));
        let m = first("DATABASE_URL=git+ssh://u:a:b@h").map(|m| (m.start, m.end));
        assert_eq!(m, Some((25, 28)));
        assert!(first("-uhttps://u:p@h").is_some());
        assert!(first("\"redis://u:p@h\"\n").is_some());
        assert!(first("s3.x-y+z://u:p@h").is_some());
        assert!(first(&format!("https://host/?t=https://u:{pw}@h")).is_some());
        // Near misses.
        for hay in [
            "https://user@host",
            "https://host:8080/path",
            "https://host:8080",
            "https://user:@host",
            "https://us er:pw@host",
            "https://user:p w@host",
            "https://user:pw/x@host",
            "://user:pw@host",
            "123://user:pw@host",
            "https:/user:pw@host",
            "mailto:user:pw@host",
            "user:pw@host",
            "https://user:pw",
        ] {
            assert_eq!(first(hay), None, "{hay:?}");
        }
        // Glued to a word (`x$PROXY_URL`): the scheme starts after any byte.
        for before in ["1", "_", "a_", "9-__"] {
            let hay = format!("{before}https://user:pw@host");
            let at = before.len() + "https://user:".len();
            assert_eq!(first(&hay).map(|m| (m.start, m.end)), Some((at, at + 2)), "{hay:?}");
        }
        // Disabled.
        let no_url = ShapeSet::from_bits(
            ShapeSet::ALL.bits() & !ShapeSet::NONE.with(Shape::UrlCredentials).bits(),
        );
        assert_eq!(find_shape(hay.as_bytes(), no_url), None);
    }

    #[test]
    fn url_and_token_interplay() {
        let gh = format!("ghp_{}", filler(36, ALNUM));
        // Token as the password: same range, the specific shape wins.
        let hay = format!("https://u:{gh}@h");
        assert_eq!(
            all(&hay),
            std::vec![ShapeMatch {
                shape: Shape::GithubToken,
                start: 10,
                end: 50
            }]
        );
        let only_url = ShapeSet::NONE.with(Shape::UrlCredentials);
        assert_eq!(
            find_shape(hay.as_bytes(), only_url).map(|m| m.shape),
            Some(Shape::UrlCredentials)
        );
        // Token as the user, then the password: both reported.
        let hay = format!("https://{gh}:pw@h");
        let got = all(&hay);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].shape, got[0].start), (Shape::GithubToken, 8));
        assert_eq!(
            (got[1].shape, got[1].start, got[1].end),
            (Shape::UrlCredentials, 49, 51)
        );
        // Password longer than an embedded token: the URL wins.
        let hay = format!("https://u:{gh}:x@h");
        assert_eq!(all(&hay).len(), 1);
        assert_eq!(
            first(&hay).map(|m| (m.shape, m.end)),
            Some((Shape::UrlCredentials, 52))
        );
        // A token after a URL match.
        let hay = format!("https://u:p@h {gh}");
        let got = all(&hay);
        assert_eq!(
            got.iter().map(|m| m.shape).collect::<Vec<_>>(),
            [Shape::UrlCredentials, Shape::GithubToken]
        );
    }

    #[test]
    fn find_shapes_finds_several() {
        let gh = format!("ghp_{}", filler(36, ALNUM));
        let aws = format!("AKIA{}", filler(16, UPPER));
        let hay = format!("A={gh} B={aws}");
        let got = all(&hay);
        assert_eq!(
            got,
            [
                ShapeMatch {
                    shape: Shape::GithubToken,
                    start: 2,
                    end: 42
                },
                ShapeMatch {
                    shape: Shape::AwsAccessKeyId,
                    start: 45,
                    end: 65
                },
            ]
        );
        // Every sample, separated by spaces, plus a URL, in order.
        let mut hay = String::new();
        let mut want = Vec::new();
        for (shape, tok) in samples() {
            want.push((shape, hay.len(), hay.len() + tok.len()));
            hay.push_str(&tok);
            hay.push(' ');
        }
        hay.push_str("ftp://me:secret@h");
        want.push((Shape::UrlCredentials, hay.len() - 8, hay.len() - 2));
        let got: Vec<_> = all(&hay)
            .into_iter()
            .map(|m| (m.shape, m.start, m.end))
            .collect();
        assert_eq!(got, want);
        // Enabled set filters.
        let only_aws = ShapeSet::NONE.with(Shape::AwsAccessKeyId);
        assert_eq!(find_shapes(hay.as_bytes(), only_aws).count(), 2);
        assert_eq!(find_shapes(hay.as_bytes(), ShapeSet::NONE).count(), 0);
        // Fused.
        let mut it = find_shapes(b"nothing", ShapeSet::ALL);
        assert_eq!(it.next(), None);
        assert_eq!(it.next(), None);
    }

    /// Straightforward reference: try every offset that passes the boundary
    /// rule, with no candidate filter and no JWT skipping.
    fn naive(hay: &[u8], enabled: ShapeSet) -> Vec<ShapeMatch> {
        let urls: Vec<ShapeMatch> = if enabled.contains(Shape::UrlCredentials) {
            (0..hay.len())
                .filter(|&c| hay[c..].starts_with(b"://"))
                .filter_map(|c| url_at(hay, c))
                .collect()
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        let mut pos = 0;
        loop {
            let tok =
                (pos..hay.len())
                    .filter(|&i| at_boundary(hay, i) || glued_prefix(&hay[i..]))
                    .find_map(|i| match token_at(&hay[i..], enabled, true) {
                        Attempt::Match(shape, len) => Some(ShapeMatch {
                            shape,
                            start: i,
                            end: i + len,
                        }),
                        _ => None,
                    });
            let url = urls.iter().copied().find(|u| u.start >= pos);
            let m = match (tok, url) {
                (None, None) => return out,
                (Some(t), None) => t,
                (None, Some(u)) => u,
                (Some(t), Some(u)) => {
                    if u.start < t.start || (u.start == t.start && u.end > t.end) {
                        u
                    } else {
                        t
                    }
                }
            };
            out.push(m);
            pos = m.end;
        }
    }

    #[test]
    fn matches_naive_reference_on_random_fragments() {
        let aws = format!("AKIA{}", filler(16, UPPER));
        let gh = format!("ghp_{}", filler(36, ALNUM));
        let long = filler(40, B64);
        let frags: [&[u8]; 30] = [
            b"eyJ",
            b"eyJ",
            b"ghp_",
            b"github_pat_",
            b"glpat-",
            b"xoxb-",
            b"sk-ant-",
            b"sk-proj-",
            b"AKIA",
            b"AIza",
            b"-",
            b"-",
            b".",
            b".",
            b"_",
            b"a",
            b"Z9",
            b"0123456789",
            b" ",
            b"://",
            b":",
            b"@",
            b"/",
            b"\xff",
            b"=",
            b"-u",
            aws.as_bytes(),
            gh.as_bytes(),
            long.as_bytes(),
            b"https://u:",
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let sets = [
            ShapeSet::ALL,
            ShapeSet::NONE.with(Shape::Jwt),
            ShapeSet::NONE
                .with(Shape::UrlCredentials)
                .with(Shape::GitlabToken),
        ];
        let mut found = 0;
        for _ in 0..20_000 {
            let n = (rnd() % 60) as usize;
            let mut hay = Vec::new();
            for _ in 0..n {
                hay.extend_from_slice(frags[(rnd() % frags.len() as u64) as usize]);
            }
            for set in sets {
                let got: Vec<_> = find_shapes(&hay, set).collect();
                assert_eq!(got, naive(&hay, set), "{:?}", String::from_utf8_lossy(&hay));
                assert_eq!(find_shape(&hay, set), got.first().copied());
                found += got.len();
            }
        }
        assert!(found > 1000, "{found}");
    }

    /// Adversarial and random-ish haystacks must not be quadratic. No
    /// wall-clock assertion: a quadratic implementation would take minutes.
    #[test]
    fn one_mib_haystacks_finish() {
        const MIB: usize = 1 << 20;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let random: Vec<u8> = (0..MIB)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let rep = |unit: &str| {
            unit.as_bytes()
                .iter()
                .copied()
                .cycle()
                .take(MIB)
                .collect::<Vec<u8>>()
        };
        let inputs: [Vec<u8>; 9] = [
            random,
            rep("eyJ-"),
            rep("eyJa-eyJb.eyJc-"),
            rep("glpat-"),
            rep("a://"),
            rep("a://b:"),
            rep("a:/"),
            rep("sk-ant-xx"),
            rep("ghp_"),
        ];
        for hay in &inputs {
            let n = find_shapes(hay, ShapeSet::ALL).count();
            assert!(n <= hay.len());
        }
        // A long JWT-like first segment without the rest.
        let mut hay = std::vec![b'a'; MIB];
        for chunk in hay.chunks_mut(16) {
            chunk[..4].copy_from_slice(b"eyJ-");
        }
        hay.push(b'.');
        assert_eq!(find_shape(&hay, ShapeSet::ALL), None);
        // One huge greedy token followed by many short ones.
        let big = format!("glpat-{} {}", filler(MIB, B64), "-u ".repeat(1000));
        assert_eq!(find_shapes(big.as_bytes(), ShapeSet::ALL).count(), 1);
    }

    // The prefilter is only an optimisation: wherever the full search finds a
    // match, `may_hold_shape` must say yes. Haystacks are built from token
    // prefixes, separators and filler at random offsets, so that block edges (every
    // 16 bytes) fall inside and beside candidates; both vector and scalar paths see
    // the same inputs.
    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #[test]
        fn the_prefilter_never_hides_a_match(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(&[
                        "ghp_", "github_pat_", "glpat-", "xoxb-", "AKIA", "ASIA", "sk-ant-",
                        "sk-proj-", "AIza", "eyJ", "://", "https://u:", "@", ".", "-", "_",
                        "=", "/", ":", " ", "\u{e9}", "-u", "gh", "x", "e", "A",
                    ][..]).prop_map(|s| s.as_bytes().to_vec()),
                    proptest::collection::vec(
                        proptest::sample::select(b"AbCdEF0123456789xyzKLMNOPQRSTUVWklm_-".to_vec()),
                        0..40,
                    ),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
                ],
                0..12,
            )
        ) {
            let hay: Vec<u8> = parts.concat();
            for start in 0..hay.len().min(17) {
                let h = &hay[start..];
                if find_shapes(h, ShapeSet::ALL).next().is_some() {
                    proptest::prop_assert!(may_hold_shape(h));
                }
            }
        }
    }
}
