//! The docs name only what exists. Every repository path that docs/, README
//! and the code's comments name (`shim/src/state/load.rs`, `ci/test`,
//! `docs/adr/0014-tmux-servers.md`), every ADR by number (`ADR 0014`,
//! `adr/0014`), and every module of the two policy crates named by its path
//! ([`envpolicy_core::cache_key`], [`envpolicy::outcome`]) must be there, so that a
//! file moved or renamed fails here instead of leaving a reader at a dead end.
//! (Deeper paths in doc comments are intra-doc links, which `cargo doc` in
//! ci/test checks with broken links denied.)
//!
//! A path is a word with a `/` that starts at a top-level entry of the
//! repository (`shim/`, `docs/`, `ci/`, ...), or names a file relative to the
//! file it is in (`adr/0014-tmux-servers.md` in docs/README.md). Paths on the
//! user's machine (`~/.config/...`, `$XDG_CONFIG_HOME/...`, `/etc/...`,
//! `./legacy.sh`), placeholders (`corpus/TARGET`), build output (`target/`) and
//! the few paths of other projects' trees in [`OUTSIDE`] are not the
//! repository's.

use envshim_e2e::*;
use std::path::{Path, PathBuf};

/// Paths in other projects' trees that the docs name where they share a first
/// component with this repository's `tests/`, each with whose they are.
const OUTSIDE: &[(&str, &str)] = &[
    (
        "tests/misc/",
        "GNU coreutils' env tests, run by ci/coreutils-env",
    ),
    (
        "tests/lang-default",
        "GNU coreutils' test set-up, read by ci/coreutils-env",
    ),
    (
        "tests/run_make_tests",
        "GNU make's test driver (docs/transparency.md)",
    ),
    (
        "tests/config-flags.pm",
        "GNU make's test configuration (docs/transparency.md)",
    ),
    (
        "tests/util.rs",
        "ripgrep's TestCommand, which tests/src/command.rs follows",
    ),
];

/// A placeholder a doc writes in a path (`fuzz/artifacts/TARGET/`,
/// `/tmp/envshim-UID`): a component with a word in capitals.
fn has_placeholder(word: &str) -> bool {
    word.split(['/', '-', '.', '_'])
        .any(|c| c.len() > 1 && c.bytes().all(|b| b.is_ascii_uppercase()))
}

/// Where a word ends: anything but what paths and Rust paths are made of.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-' | b':')
}

/// The words of `text`, each with the byte before it (0 at the start).
fn words(text: &str) -> Vec<(u8, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_word_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_word_byte(bytes[i]) {
            i += 1;
        }
        let before = if start == 0 { 0 } else { bytes[start - 1] };
        // A glob (`tests/tests/shim_*.rs`) names files, not one file.
        if bytes.get(i) == Some(&b'*') {
            continue;
        }
        // A sentence's full stop, a list's comma or colon is not part of a path.
        let word = text[start..i].trim_end_matches(['.', ':', '-']);
        out.push((before, word));
    }
    out
}

/// Every file whose references are checked: docs/ (ADRs included), README,
/// and the Rust sources and scripts of every crate.
fn checked_files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let dirs = vec![
        root.join("docs"),
        root.join("shim"),
        root.join("policy"),
        root.join("policy-core"),
        root.join("wrapper"),
        root.join("tests"),
        root.join("fuzz"),
        root.join("ci"),
    ];
    let descend = |d: &Path| {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        name != "target" && !name.starts_with('.')
    };
    let this_file = root.join("tests/tests/docs_refer.rs");
    out.extend(
        envshim_e2e::walk::files_under(dirs, descend)
            .into_iter()
            .map(|(p, _)| p)
            // This file's own examples of dead references.
            .filter(|p| *p != this_file)
            .filter(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                p.starts_with(root.join("ci"))
                    || [".rs", ".md", ".c", ".toml"]
                        .iter()
                        .any(|x| name.ends_with(x))
            }),
    );
    out
}

/// The files git tracks and their directories, relative to the root: what a
/// clean clone holds (a file that exists only here, built or left over, is no
/// file of the repository). `None` outside a git checkout: then the file system.
fn tracked(root: &Path) -> Option<&'static std::collections::BTreeSet<String>> {
    static TRACKED: std::sync::OnceLock<Option<std::collections::BTreeSet<String>>> =
        std::sync::OnceLock::new();
    TRACKED
        .get_or_init(|| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(root)
                .args(["ls-files", "-z"])
                .output()
                .ok()
                .filter(|o| o.status.success())?;
            let mut set = std::collections::BTreeSet::new();
            for file in out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
                let file = String::from_utf8_lossy(file).into_owned();
                let mut dir = file.as_str();
                while let Some((parent, _)) = dir.rsplit_once('/') {
                    set.insert(parent.to_string());
                    dir = parent;
                }
                set.insert(file);
            }
            Some(set)
        })
        .as_ref()
}

/// Is `rel` (relative to the root) a file or directory of the repository?
fn in_repository(root: &Path, rel: &Path) -> bool {
    let rel = rel.to_string_lossy();
    let rel = rel.trim_end_matches('/');
    match tracked(root) {
        Some(set) => set.contains(rel),
        None => root.join(rel).exists(),
    }
}

/// Build output that .gitignore lists (`packaging/stage/`, `fuzz/artifacts`):
/// named by the docs, never in a clean clone.
fn ignored_output(root: &Path, word: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join(".gitignore")) else {
        return false;
    };
    text.lines()
        .map(|l| l.trim().trim_start_matches('/').trim_end_matches('/'))
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.contains('*'))
        .any(|dir| word == dir || word.starts_with(&format!("{dir}/")))
}

/// What is wrong with `word` as a reference from `file`, if it is one.
fn dead_reference(root: &Path, file: &Path, before: u8, word: &str) -> Option<String> {
    if let Some(rest) = word
        .strip_prefix("envpolicy_core::")
        .or_else(|| word.strip_prefix("envpolicy::"))
    {
        let module = rest.split("::").next().unwrap_or("");
        if module.is_empty() || !module.starts_with(|c: char| c.is_ascii_lowercase()) {
            return None;
        }
        // envpolicy re-exports the core's modules under their names.
        let dirs: &[&str] = if word.starts_with("envpolicy_core::") {
            &["policy-core/src"]
        } else {
            &["policy-core/src", "policy/src"]
        };
        let exists = dirs.iter().any(|dir| {
            root.join(dir).join(format!("{module}.rs")).exists()
                || root.join(dir).join(module).join("mod.rs").exists()
        });
        return (!exists).then(|| format!("module {word}: no module {module} in that crate"));
    }
    if word.contains("::") || !word.contains('/') || word.starts_with('/') || word.contains("://") {
        return None;
    }
    if matches!(before, b'~' | b'$' | b'/' | b'{' | b'.' | b'<' | b'%')
        || word.starts_with("./")
        || word.starts_with("../")
        || word.starts_with("target/")
        || has_placeholder(word)
        || OUTSIDE.iter().any(|(prefix, _)| word.starts_with(prefix))
        || ignored_output(root, word)
    {
        return None;
    }
    let first = word.split('/').next().unwrap_or("");
    let at_root = !first.is_empty() && in_repository(root, Path::new(first));
    // Beside the file: a Markdown link, or a crate's own path (`tests/tests.rs`
    // in tests/Cargo.toml).
    let beside = file.parent().map(|d| d.join(word));
    let named_file = word
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains('.'));
    let in_a_real_dir = beside
        .as_ref()
        .is_some_and(|b| b.parent().is_some_and(Path::exists));
    let a_path_here = at_root || (named_file && in_a_real_dir);
    if !a_path_here {
        return None;
    }
    let beside_rel = beside
        .as_ref()
        .and_then(|b| b.strip_prefix(root).ok().map(Path::to_path_buf));
    let found = in_repository(root, Path::new(word))
        || adr_prefix_exists(root, word)
        || beside_rel.is_some_and(|b| in_repository(root, &b))
        || file.parent().is_some_and(|d| adr_prefix_exists(d, word));
    (!found).then(|| format!("path {word} does not exist"))
}

/// `docs/adr/0014` (a number without the rest of the file name) names the ADR
/// whose file starts with it.
fn adr_prefix_exists(base: &Path, word: &str) -> bool {
    let Some((dir, number)) = word.rsplit_once('/') else {
        return false;
    };
    if !dir.ends_with("adr") || number.len() != 4 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    adr_exists(&base.join(dir), number)
}

fn adr_exists(adr_dir: &Path, number: &str) -> bool {
    std::fs::read_dir(adr_dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{number}-"))
        })
    })
}

/// `ADR 0014`, `ADRs 0014 and 0016`: the numbers after the word ADR.
fn adr_numbers(text: &str) -> Vec<&str> {
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if *w == "ADR" || *w == "ADRs" {
            out.extend(
                words[i + 1..]
                    .iter()
                    .filter(|w| !w.is_empty())
                    .take(1)
                    .filter(|w| w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit())),
            );
        }
    }
    out
}

#[test]
fn every_path_adr_and_module_the_docs_and_comments_name_exists() {
    let root = workspace_root();
    let adr_dir = root.join("docs/adr");
    let mut dead = Vec::new();
    for file in checked_files(&root) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            for (before, word) in words(line) {
                if let Some(why) = dead_reference(&root, &file, before, word) {
                    dead.push(format!("{shown}:{}: {why}", n + 1));
                }
            }
            for number in adr_numbers(line) {
                if !adr_exists(&adr_dir, number) {
                    dead.push(format!("{shown}:{}: ADR {number} does not exist", n + 1));
                }
            }
        }
    }
    assert!(
        dead.is_empty(),
        "{} dead references:\n{}",
        dead.len(),
        dead.join("\n")
    );
}

#[test]
fn the_checker_finds_a_dead_path_a_dead_adr_and_a_dead_module() {
    let root = workspace_root();
    let file = root.join("docs/shim.md");
    let dead = |w: &str| dead_reference(&root, &file, b' ', w);
    assert!(dead("shim/src/state/load.rs").is_none());
    assert!(dead("shim/src/nowhere.rs").is_some());
    assert!(dead("adr/0014-tmux-servers.md").is_none());
    assert!(dead("docs/adr/0014").is_none());
    assert!(dead("docs/adr/0999").is_some());
    assert!(dead("envpolicy_core::cache_key::Stamp").is_none());
    assert!(dead("envpolicy_core::cache").is_some());
    assert!(dead("envpolicy::outcome").is_none());
    assert!(dead_reference(&root, &file, b'~', "/.config/envshim/policy.toml").is_none());
    assert!(
        dead("packaging/stage/usr/lib").is_none(),
        "build output .gitignore lists"
    );
    assert_eq!(adr_numbers("see ADR 0014 and ADR 9999."), ["0014", "9999"]);
}
