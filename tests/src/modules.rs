//! Which module of a crate uses which: the graph docs/architecture.md draws,
//! read from the code so that the page cannot drift from it
//! (tests/tests/architecture.rs).
//!
//! A module is a top-level module of the crate (`pairs/tmux_argv.rs` belongs
//! to `pairs`); its edges are the `crate::NAME` paths in its code, comments and
//! its own `#[cfg(test)] mod tests` left out (a test may use anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the modules it uses.
pub type ModuleGraph = BTreeMap<String, BTreeSet<String>>;

/// The code of a file: without its comment lines and its test module (from
/// a `#[cfg(test)]` whose item, after comments and attributes, is `mod tests`).
pub fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let starts_tests = |i: usize| {
        lines[i].trim() == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .find(|l| !l.trim_start().starts_with("#["))
                .is_some_and(|l| l.trim_start().starts_with("mod tests"))
    };
    let end = (0..lines.len())
        .find(|&i| starts_tests(i))
        .unwrap_or(lines.len());
    lines[..end].join("\n")
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The modules `code` names as `crate::NAME`, also inside `use crate::{A, B}`.
pub fn uses_in(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let end = group.find('}').unwrap_or(group.len());
                out.extend(group[..end].split(',').map(|item| ident(item.trim())));
            }
            None => {
                out.insert(ident(rest));
            }
        }
    }
    out.retain(|n| n.starts_with(|c: char| c.is_ascii_lowercase()));
    out
}

/// The graph of the crate whose sources are in `src` (lib.rs itself left out:
/// it declares the modules).
pub fn module_graph(src: &Path) -> ModuleGraph {
    let mut g = ModuleGraph::new();
    let sources = crate::walk::files_under(vec![src.to_path_buf()], |_| true);
    for (p, _) in sources
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|x| x == "rs"))
    {
        let rel = p.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a file");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(p).expect("a source file");
        let edges = uses_in(&code_of(&text));
        let entry = g.entry(module.clone()).or_default();
        entry.extend(edges.into_iter().filter(|d| *d != module));
    }
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for edges in g.values_mut() {
        edges.retain(|d| modules.contains(d));
    }
    g
}

/// A circle through `start`, if there is one: the modules along it, in order.
pub fn circle_through(g: &ModuleGraph, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &ModuleGraph,
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

/// `module -> a b c` lines, one per module, as docs/architecture.md writes a
/// graph.
pub fn render_graph(g: &ModuleGraph) -> String {
    let mut out = String::new();
    for (m, edges) in g {
        let line = format!(
            "{m} -> {}",
            edges.iter().cloned().collect::<Vec<_>>().join(" ")
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
