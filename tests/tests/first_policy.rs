//! docs/first-policy.md, run as a new user follows it: each `sh` block in order,
//! in one directory, with envwrap (and the shim beside it) on `PATH` and a
//! stand-in `gh` that says whether it got `GH_TOKEN`; each `text` block after a
//! command is a list of lines its output must hold. A page whose command or
//! output no longer holds fails here.

use envshim_e2e::*;

/// The page's blocks in order: (`sh` or `text`, the block's lines).
fn blocks(page: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut current: Option<(&'static str, String)> = None;
    for line in page.lines() {
        match (&mut current, line) {
            (None, "```sh") => current = Some(("sh", String::new())),
            (None, "```text") => current = Some(("text", String::new())),
            (Some(_), "```") => out.extend(current.take()),
            (Some((_, b)), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// The page's tmux server (`-S agent.sock`, in the sandbox), killed
/// at the end, also on failure.
struct AgentServer<'a>(&'a Sandbox);

impl Drop for AgentServer<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .cmd("tmux")
            .args(["-S", "agent.sock", "kill-server"])
            .run();
    }
}

#[test]
fn the_first_policy_walkthrough_runs_as_written() {
    let sb = Sandbox::new("first_policy");
    let _server = AgentServer(&sb);
    let page = std::fs::read_to_string(workspace_root().join("docs/first-policy.md")).unwrap();
    let bin = sb.mkdir("bin");
    sb.write(
        "bin/gh",
        "#!/bin/sh\nif [ -n \"$GH_TOKEN\" ]; then echo 'gh: GH_TOKEN is set'; else echo 'gh: no GH_TOKEN'; fi\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    shim_so();
    let envwrap_dir = envwrap_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}:/usr/bin:/bin", envwrap_dir.display(), bin.display());
    let blocks = blocks(&page);
    assert!(
        blocks.iter().filter(|(k, _)| *k == "sh").count() >= 5,
        "the page has its steps"
    );
    let mut last_output = String::new();
    let mut checked = 0;
    for (kind, text) in &blocks {
        if *kind == "sh" {
            let o = sb
                .cmd("bash")
                .args(["-e", "-c", text])
                .env("PATH", &path)
                .timeout(std::time::Duration::from_secs(60))
                .expect_success();
            last_output = o.stdout_str();
            continue;
        }
        for want in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
            assert!(
                last_output.lines().any(|l| l.contains(want)),
                "docs/first-policy.md: the output holds no line {want:?}:\n{last_output}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} output lines checked");
}
