//! docs/architecture.md is true to the code: each module graph it draws (a
//! fenced block tagged `modules FOLDER`) is the graph read from FOLDER's code;
//! neither the decision core's modules nor the shim's reach back to themselves
//! (no circle); and each of the shim's modules uses only its own layer and the
//! layers below it, in the order the page's `layers shim/src` block gives them.

use envshim_e2e::modules::{circle_through, module_graph, render_graph};
use envshim_e2e::*;

/// The page's blocks tagged `KIND FOLDER`: (folder, the block's lines).
fn drawn(page: &str, kind: &str) -> Vec<(String, String)> {
    let fence = format!("```{kind} ");
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in page.lines() {
        match (&mut current, line.strip_prefix(fence.as_str())) {
            (None, Some(folder)) => current = Some((folder.trim().to_string(), String::new())),
            (Some(_), _) if line == "```" => out.extend(current.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn the_architecture_page_draws_the_module_graphs_as_the_code_has_them() {
    let root = workspace_root();
    let graphs = drawn(&page(), "modules");
    let folders: Vec<&str> = graphs.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        folders,
        ["policy-core/src", "shim/src"],
        "the page's graphs"
    );
    for (folder, body) in &graphs {
        let code = render_graph(&module_graph(&root.join(folder)));
        assert!(
            *body == code,
            "docs/architecture.md's graph of {folder} is not the code's; the code's is:\n{code}"
        );
    }
}

fn page() -> String {
    std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap()
}

#[test]
fn no_module_of_the_core_or_the_shim_reaches_back_to_itself() {
    for crate_src in ["policy-core/src", "shim/src"] {
        let g = module_graph(&workspace_root().join(crate_src));
        assert!(g.len() > 10, "the modules were not found: {g:?}");
        for m in g.keys() {
            if let Some(circle) = circle_through(&g, m) {
                panic!(
                    "a circle of modules in {crate_src}: {} -> {m}",
                    circle.join(" -> ")
                );
            }
        }
    }
}

#[test]
fn each_module_of_the_shim_uses_its_own_layer_and_those_below_it() {
    let layers: Vec<String> = drawn(&page(), "layers")
        .into_iter()
        .find(|(folder, _)| folder == "shim/src")
        .expect("docs/architecture.md has a `layers shim/src` block")
        .1
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let rank = |module: &str| {
        let layer = module.split("::").next().unwrap_or(module);
        layers
            .iter()
            .position(|l| l == layer)
            .unwrap_or_else(|| panic!("{module} is in no layer the page names: {layers:?}"))
    };
    let g = module_graph(&workspace_root().join("shim/src"));
    for (m, uses) in &g {
        for d in uses {
            assert!(
                rank(m) <= rank(d),
                "{m} uses {d}, a layer above its own (layers, top first: {layers:?})"
            );
        }
    }
}

#[test]
fn the_reading_finds_uses_and_circles() {
    use envshim_e2e::modules::{code_of, uses_in, ModuleGraph};
    let code = "use crate::{bytes::x, decide};\nfn f() { crate::argv::g() }\n// crate::mux\n\
                use crate::platform::{fs::{a, B}, sys};\n\
                #[cfg(test)]\n// why\n#[allow(clippy::panic)]\nmod tests { use crate::shape; }\n";
    let found: Vec<String> = uses_in(&code_of(code)).into_iter().collect();
    assert_eq!(
        found,
        [
            "argv::g",
            "bytes::x",
            "decide",
            "platform::fs",
            "platform::sys"
        ]
    );
    let mut g = ModuleGraph::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["a".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    assert_eq!(
        circle_through(&g, "a"),
        Some(vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(circle_through(&g, "c"), None);
}

/// Does `line` hold a string literal that is an `ENVSHIM_*` name or entry, or
/// a path under `/etc/envshim` (no space in it: a sentence that names one is
/// prose, not a name)?
fn names_a_variable(line: &str) -> bool {
    let names = line.match_indices("\"ENVSHIM_");
    names
        .chain(line.match_indices("\"/etc/envshim"))
        .any(|(at, _)| {
            let literal = line[at + 1..].split('"').next().unwrap_or("");
            !literal.contains(char::is_whitespace) && !literal.ends_with('\\')
        })
}

/// Every `ENVSHIM_*` name and `/etc/envshim` path the front ends share is
/// written once, in `envpolicy_core::shared`: such a literal (`"`, `b"` or `c"`) in
/// the code of the four crates anywhere else (their test modules, from a
/// file's first `#[cfg(test)]` on, comments, and sentences of messages
/// apart) is a name typed by hand, which drifts from the other side's.
#[test]
fn the_names_the_front_ends_share_are_written_once() {
    let root = workspace_root();
    let home = root.join("policy-core/src/shared.rs");
    let mut stray = Vec::new();
    for krate in ["policy-core/src", "policy/src", "shim/src", "wrapper/src"] {
        let files = envshim_e2e::walk::files_under(vec![root.join(krate)], |_| true);
        for (file, _) in files
            .iter()
            .filter(|(f, _)| f.extension().is_some_and(|x| x == "rs"))
        {
            if *file == home {
                continue;
            }
            let text = std::fs::read_to_string(file).expect("read a source file");
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                if !line.trim_start().starts_with("//") && names_a_variable(line) {
                    stray.push(format!(
                        "{}:{}",
                        file.strip_prefix(&root).unwrap().display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        stray.is_empty(),
        "ENVSHIM_ names or /etc/envshim paths written by hand (use envpolicy_core::shared): {stray:?}"
    );
}
