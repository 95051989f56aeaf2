//! The core's modules form layers: no module reaches, through the modules it
//! uses, back to itself. A circle of modules is a rule with two homes in the
//! making (each side ends up knowing the other's business), so this test fails
//! on the first one, and names it.
//!
//! A module's edges are the `crate::MODULE` paths in its code (comments and its
//! own `#[cfg(test)]` module left out: a test may use anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a source file belongs to (`pairs/tmux_argv.rs`: pairs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a file: without its comment lines and its test module.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules `code` names as `crate::NAME` (also inside `use crate::{A, B}`).
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.insert(name);
    }
    out.retain(|n| n.starts_with(|c: char| c.is_ascii_lowercase()));
    out
}

fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let m = module_of(src, &p);
                if m == "lib" {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                let edges = uses(&code(&text));
                g.entry(m.clone())
                    .or_default()
                    .extend(edges.into_iter().filter(|d| *d != m));
            }
        }
    }
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for edges in g.values_mut() {
        edges.retain(|d| modules.contains(d));
    }
    g
}

/// A circle through `start`, if there is one: the modules in order.
fn circle_from(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in &g[at] {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(g, start, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn no_module_of_the_core_reaches_back_to_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 10, "the modules were not found: {g:?}");
    for m in g.keys() {
        if let Some(circle) = circle_from(&g, m) {
            panic!("a circle of modules: {} -> {m}", circle.join(" -> "));
        }
    }
}

#[test]
fn the_reading_finds_a_circle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let code = "use crate::{bytes::x, decide};\nfn f() { crate::argv::g() }\n// crate::mux\n";
    assert_eq!(
        uses(&self::code(code)),
        ["argv", "bytes", "decide"].map(String::from).into()
    );
    g.insert("a".into(), ["b".into()].into());
    g.insert("b".into(), ["a".into()].into());
    g.insert("c".into(), ["a".into()].into());
    assert_eq!(
        circle_from(&g, "a"),
        Some(vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(circle_from(&g, "c"), None);
}
