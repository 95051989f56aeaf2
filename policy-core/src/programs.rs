//! Which `[program.NAME]` sections apply to a program, and what they say
//! about the process itself.
//!
//! Every rule with a program scope asks the same question first: which sections
//! match this program ([`program_mask`], a bit per section) and whether a
//! record's scope is among them ([`in_scope`]). The decision (`decide`, `argv`)
//! asks it at each exec; the start-up hint (`hint`) and libenvshim.so's
//! self-scrub ask it of the process being loaded ([`self_scrub`]). A module of
//! its own, below both, so that neither depends on the other for it.

use crate::bytes::basename;
use crate::compiled::{sec, Records, GLOBAL};
use crate::glob;
use crate::identity::Identity;

/// Which program sections apply to `program`: a matcher without `/` matches the
/// basename, one with `/` the path as given.
pub fn program_mask(policy: &Records<'_>, program: &[u8]) -> u64 {
    let base = basename(program);
    let mut mask = 0u64;
    for i in 0..policy.count(sec::MATCHERS) {
        let Some(m) = policy.matcher(i as u32) else {
            continue;
        };
        let pat = policy.str(m.pattern);
        let target = if pat.contains(&b'/') { program } else { base };
        if glob::matches(m.kind, pat, target, false) {
            mask |= 1u64.checked_shl(m.program).unwrap_or(0);
        }
    }
    mask
}

/// Which program sections apply to an exec: those of the program it runs
/// ([`crate::identity`]) and those of the file it names, when that is another
/// (`env`, `node`): a section adds rules for a program whichever way it is
/// reached, so `[program.env]` still applies to `env X=1 prog`, and
/// `[program.node]` to every Node script.
pub fn identity_mask(policy: &Records<'_>, who: &Identity<'_>) -> u64 {
    let mask = program_mask(policy, who.name);
    if core::ptr::eq(who.name, who.path) {
        mask
    } else {
        mask | program_mask(policy, who.path)
    }
}

/// Does a rule of `scope` apply to a program of `mask` (`program_mask`)?
#[inline]
pub fn in_scope(scope: u16, mask: u64) -> bool {
    scope == GLOBAL || (mask >> (scope as u32 & 63)) & 1 == 1
}

/// Does self-scrub apply to `program`? The first matching `[program.*]` section
/// that says so decides; otherwise the top-level `self_scrub`.
pub fn self_scrub(policy: &Records<'_>, program: &[u8]) -> bool {
    let mask = program_mask(policy, program);
    for i in 0..crate::compiled::MAX_PROGRAMS as u32 {
        if (mask >> i) & 1 == 0 {
            continue;
        }
        if let Some(said) = policy.program(i).and_then(|p| p.self_scrub) {
            return said;
        }
    }
    policy.settings().self_scrub
}
