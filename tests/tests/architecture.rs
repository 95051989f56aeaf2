//! docs/architecture.md is true to the code: each module graph it draws (a
//! fenced block tagged `modules FOLDER`) is the graph read from FOLDER's code,
//! and the decision core's modules form layers, with no circle among them.

use envshim_e2e::modules::{circle_through, module_graph, render_graph};
use envshim_e2e::*;

/// The graphs the page draws: (folder, the block's lines).
fn drawn(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in page.lines() {
        match (&mut current, line.strip_prefix("```modules ")) {
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
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let graphs = drawn(&page);
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

#[test]
fn no_module_of_the_decision_core_reaches_back_to_itself() {
    let g = module_graph(&workspace_root().join("policy-core/src"));
    assert!(g.len() > 10, "the modules were not found: {g:?}");
    for m in g.keys() {
        if let Some(circle) = circle_through(&g, m) {
            panic!(
                "a circle of modules in the core: {} -> {m}",
                circle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_reading_finds_uses_and_circles() {
    use envshim_e2e::modules::{code_of, uses_in, ModuleGraph};
    let code = "use crate::{bytes::x, decide};\nfn f() { crate::argv::g() }\n// crate::mux\n\
                #[cfg(test)]\n// why\n#[allow(clippy::panic)]\nmod tests { use crate::shape; }\n";
    let found: Vec<String> = uses_in(&code_of(code)).into_iter().collect();
    assert_eq!(found, ["argv", "bytes", "decide"]);
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
