//! A person sees every refusal and every withheld credential, even when the
//! spawner discards its children's stderr (envpolicy_core::seen): the line
//! goes to the controlling terminal too. A real tmux pane is the terminal;
//! what it shows (`capture-pane`) is what the person sees.

use std::time::Duration;

use envshim_e2e::*;

/// The pane's script: each spawner throws stderr away, then says what it saw.
const SCRIPT: &str = r#"
printenv GH_TOKEN 2>/dev/null; echo "printenv rc=$?"
python3 -c '
import os, subprocess
try:
    subprocess.run(["/bin/echo", "--token=" + os.environ["GH_TOKEN"]], stderr=subprocess.DEVNULL)
    print("python ran")
except PermissionError as e:
    print("python errno", e.errno)
'
node -e '
const r = require("child_process").spawnSync("/bin/echo", ["--token=" + process.env.GH_TOKEN], { stdio: "pipe" });
console.log("node", r.error ? r.error.code : r.status);
'
"$ENVWRAP" -- printenv GH_TOKEN 2>/dev/null; echo "envwrap rc=$?"
echo DONE
sleep 300
"#;

/// The spawners hold GH_TOKEN (granted to them), so that what they start with
/// its value in argv is refused; printenv is not granted it.
const POLICY: &str = r#"version = 1
[[grant]]
name = "GH_TOKEN"
program = "python3"
[[grant]]
name = "GH_TOKEN"
program = "node"
[[grant]]
name = "GH_TOKEN"
program = "envwrap"
"#;

#[test]
fn refusals_and_withheld_credentials_reach_the_pane_when_stderr_is_discarded() {
    let sb = Sandbox::new("seen_pane");
    let script = sb.write("pane.sh", SCRIPT);
    let policy = sb.write("policy.toml", POLICY);
    let token = sb.secrets().value("GH_TOKEN").to_string();
    let mut new = sb.tmux();
    new.args(["new-session", "-d", "-s", "seen", "-x", "200", "-y", "50"])
        .args(["-e", &format!("GH_TOKEN={token}")])
        .args(["-e", &format!("LD_PRELOAD={}", shim_path_string())])
        .args(["-e", &format!("ENVWRAP={}", envwrap_bin().display())])
        .args([
            "-e",
            &format!("ENVSHIM_CACHE_DIR={}", sb.join(".cache").display()),
        ])
        .args(["-e", &format!("ENVSHIM_POLICY={}", policy.display())])
        .arg("bash")
        .arg(&script)
        .allow_secrets_in_output();
    for (k, v) in sb.tmux_env() {
        match v {
            Some(v) => new.env(k, v),
            None => new.env_remove(k),
        };
    }
    new.expect_success();
    let capture = || {
        let o = sb
            .tmux()
            .args(["capture-pane", "-p", "-J", "-t", "seen", "-S", "-200"])
            .run();
        o.stdout_str()
    };
    let done = sb.wait_for(|| capture().contains("DONE"), Duration::from_secs(60));
    let pane = capture();
    assert!(done, "the pane's script did not finish:\n{pane}");
    assert!(!pane.contains(&token), "the pane shows the token");
    let has = |what: &str| pane.lines().any(|l| l.contains(what));
    assert!(has("printenv rc=1"), "printenv got the token:\n{pane}");
    assert!(
        has("envshim: GH_TOKEN withheld from printenv"),
        "the withheld line did not reach the pane:\n{pane}"
    );
    assert!(has("python errno 1"), "{pane}");
    assert!(has("node EPERM"), "{pane}");
    assert!(has("envwrap rc=1"), "{pane}");
    let refusals = pane
        .lines()
        .filter(|l| l.starts_with("envshim: refused to run echo"))
        .count();
    assert_eq!(
        refusals, 2,
        "python's and node's refusals (their stderr discarded) are not both in the pane:\n{pane}"
    );
    assert!(
        has("envwrap: GH_TOKEN withheld from printenv"),
        "envwrap's line did not reach the pane:\n{pane}"
    );
}
