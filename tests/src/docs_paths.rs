//! The installed paths the docs name, so that a test of an install can hold
//! the docs to it: a path in the README or docs/ that `make install` or the
//! package does not put there is a command a reader will paste and see fail.
//!
//! Only envshim's own paths are collected (those that name `envshim` or
//! `envwrap`); `/usr/local/bin/gh` in an example is somebody else's.

use crate::artifacts::workspace_root;

/// Every path under `prefix` (say `/usr/local/`) that README.md or a page of
/// docs/ names and that names envshim's own files, relative to `prefix`,
/// without a trailing `/`, sorted and de-duplicated.
pub fn named_under(prefix: &str) -> Vec<String> {
    let root = workspace_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut out: Vec<String> = pages
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("a page is readable");
            paths_in(&text, prefix)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The paths under `prefix` in `text` that name envshim's own files.
fn paths_in(text: &str, prefix: &str) -> Vec<String> {
    let is_path_byte = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        // A longer path that merely contains the prefix (`/opt/usr/...`) is not it.
        if text[..at].chars().next_back().is_some_and(is_path_byte) {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let end = rest.find(|c: char| !is_path_byte(c)).unwrap_or(rest.len());
        let rel = rest[..end].trim_end_matches(['.', '/']);
        if rel.contains("envshim") || rel.contains("envwrap") {
            out.push(rel.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_envshim_s_own_paths_are_collected() {
        let text = "Run `/usr/local/bin/envwrap`. The shim is /usr/local/lib/envshim/libenvshim.so.\n\
                    /usr/local/bin/gh and /opt/usr/local/lib/envshim/x are not; /usr/local/share/envshim/examples/ is.";
        assert_eq!(
            paths_in(text, "/usr/local/"),
            [
                "bin/envwrap",
                "lib/envshim/libenvshim.so",
                "share/envshim/examples"
            ]
        );
    }
}
