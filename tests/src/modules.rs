//! Which module of a crate uses which: the graph docs/architecture.md draws,
//! read from the code so that the page cannot drift from it
//! (tests/tests/architecture.rs).
//!
//! A module is a file of the crate, or a folder of files that stands beside its
//! own `NAME.rs` (`pairs/tmux_argv.rs` belongs to `pairs`); a folder with a
//! `mod.rs` is a layer, and its files are modules of it (`state::policy`). A
//! module's edges are the `crate::` paths in its code, comments and its own
//! `#[cfg(test)] mod tests` left out (a test may use anything).

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

/// The paths `code` names after `crate::`, each as far as its last lowercase
/// segment (`crate::state::policy::with_active` gives `state::policy::with_active`),
/// with `use crate::{A, B}` and `use crate::x::{A, B}` read as one path each.
pub fn uses_in(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path = path_of(rest);
        let after = &rest[path.len()..];
        let group = match path.is_empty() {
            true => after.strip_prefix('{'),
            false => after.strip_prefix("::{"),
        };
        match group {
            Some(group) => {
                for item in group_items(group) {
                    let item = path_of(item.trim());
                    out.insert(match path.is_empty() {
                        true => item,
                        false => format!("{path}::{item}"),
                    });
                }
            }
            None => {
                out.insert(path);
            }
        }
    }
    out.retain(|n| n.starts_with(|c: char| c.is_ascii_lowercase()));
    out
}

/// The items of a `use` group, `group` starting right after its `{`: split at
/// its own commas, up to its own `}` (a group inside it is one item).
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// The path at the start of `text`, as written: `a::b::c` of `a::b::c(x)`, and
/// `a::b` of `a::b::{c, d}` (the group is its caller's).
fn path_of(item: &str) -> String {
    let mut segs = Vec::new();
    let mut tail = item;
    loop {
        let seg = ident(tail);
        if seg.is_empty() {
            break;
        }
        tail = &tail[seg.len()..];
        segs.push(seg);
        match tail.strip_prefix("::") {
            Some(more) => tail = more,
            None => break,
        }
    }
    segs.join("::")
}

/// The module a source file belongs to, by Rust's own layout: a file of a
/// folder that has its own `mod.rs` is a module of that folder (a layer:
/// `state/policy.rs` is `state::policy`, and the layer's mod.rs is `state`); a
/// file of a folder that stands beside `NAME.rs` belongs to `NAME`
/// (`pairs/tmux_argv.rs` is `pairs`). `None` for lib.rs and main.rs, which
/// declare the modules.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let parts: Vec<String> = file
        .strip_prefix(src)
        .ok()?
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let (stem, folders) = parts.split_last()?;
    let mut name = Vec::new();
    let mut dir = src.to_path_buf();
    for folder in folders {
        name.push(folder.as_str());
        dir.push(folder);
        if !dir.join("mod.rs").exists() {
            // A module's own folder: the file is part of that module.
            return Some(name.join("::"));
        }
    }
    match stem.as_str() {
        "lib" | "main" => None,
        // A layer's own code, under the layer's name (`filter`).
        "mod" => Some(name.join("::")),
        _ => {
            name.push(stem);
            Some(name.join("::"))
        }
    }
}

/// The graph of the crate whose sources are in `src`: its modules (see
/// [`module_of`]) and, for each, the modules its code names.
pub fn module_graph(src: &Path) -> ModuleGraph {
    let mut g = ModuleGraph::new();
    let mut named: Vec<(String, BTreeSet<String>)> = Vec::new();
    let sources = crate::walk::files_under(vec![src.to_path_buf()], |_| true);
    for (p, _) in sources
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|x| x == "rs"))
    {
        let Some(module) = module_of(src, p) else {
            continue;
        };
        let text = std::fs::read_to_string(p).expect("a source file");
        g.entry(module.clone()).or_default();
        named.push((module, uses_in(&code_of(&text))));
    }
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for (module, paths) in named {
        let edges: BTreeSet<String> = paths
            .iter()
            .filter_map(|p| module_named(&modules, p))
            .filter(|d| *d != module)
            .collect();
        g.entry(module).or_default().extend(edges);
    }
    g
}

/// The module `path` lies in: its longest prefix that is one.
fn module_named(modules: &BTreeSet<String>, path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split("::").collect();
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| modules.contains(m))
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
