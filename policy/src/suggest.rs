//! "did you mean `base`?": the closest of a list of words to one a person
//! misspelt (a policy key, a tool's name), as git and cargo suggest. One rule
//! for every front end that reads words from a person.
//!
//! The distance is Damerau-Levenshtein (a swapped pair of letters counts
//! once): a word at most a third of its length away, and at most 3 edits, is
//! suggested; nothing when two candidates tie, since either could be meant.

/// The candidate closest to `word`, if one is close enough and alone at that
/// distance.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, &'a str)> = None;
    let mut tie = false;
    for c in candidates {
        let d = strsim::damerau_levenshtein(word, c);
        if d == 0 || d > limit {
            continue;
        }
        match best {
            Some((bd, _)) if d > bd => {}
            Some((bd, _)) if d == bd => tie = true,
            _ => {
                best = Some((d, c));
                tie = false;
            }
        }
    }
    best.filter(|_| !tie).map(|(_, c)| c)
}

/// " (did you mean `WORD`?)", or nothing.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_word_is_suggested_and_a_far_or_tied_one_is_not() {
        let keys = ["version", "mode", "base", "keep", "strip", "set"];
        assert_eq!(closest("bse", keys), Some("base"));
        assert_eq!(closest("verison", keys), Some("version"));
        assert_eq!(closest("kepe", keys), Some("keep"));
        assert_eq!(closest("credentials", keys), None);
        assert_eq!(
            closest("base", keys),
            None,
            "the word itself is no suggestion"
        );
        assert_eq!(closest("sat", ["set", "sit"]), None, "a tie");
        let tools = ["check", "explain", "scan", "doctor", "which", "secret"];
        assert_eq!(closest("chek", tools), Some("check"));
        assert_eq!(closest("docter", tools), Some("doctor"));
        assert_eq!(closest("ls", tools), None);
    }
}
