//! One policy, one decision: the same cases through libenvshim.so (a launcher that
//! calls execvp with the shim preloaded) and through envwrap, and the child must
//! receive the same argv and environment (apart from the shim's own `LD_PRELOAD`
//! and `ENVSHIM_POLICY`, which only the shim puts back), or be refused by both.

mod envwrap_util;

use std::path::{Path, PathBuf};

use envshim_e2e::*;
use envwrap_util::*;

/// execvp(argv[1], argv+1), as an unmodified program would; exit 126 on EPERM.
const LAUNCH_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    execvp(argv[1], &argv[1]);
    int e = errno;
    fprintf(stderr, "launch: execvp failed: errno=%d\n", e);
    return e == EPERM ? 126 : 127;
}
"#;

struct Case<'a> {
    name: &'a str,
    /// An example policy (staged with the files it imports), inline text, or none
    /// for the built-in default.
    policy: Policy<'a>,
    program: &'a str,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

enum Policy<'a> {
    Builtin,
    Example(&'a str),
    Text(&'a str),
}

/// Copy examples/NAME and the directory of files it imports into the sandbox.
fn stage(sb: &Sandbox, name: &str) -> PathBuf {
    let examples = workspace_root().join("examples");
    let dst = sb.write(name, std::fs::read(examples.join(name)).unwrap());
    let stem = Path::new(name).file_stem().unwrap();
    if let Ok(rd) = std::fs::read_dir(examples.join(stem)) {
        sb.mkdir(stem);
        for e in rd.flatten() {
            std::fs::copy(e.path(), sb.join(stem).join(e.file_name())).unwrap();
        }
    }
    dst
}

/// The child's argv and environment, without the shim's own entries.
fn seen(o: &Outcome) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let r = PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e));
    let env = r
        .proc_environ
        .into_iter()
        .filter(|e| !e.starts_with(b"LD_PRELOAD=") && !e.starts_with(b"ENVSHIM_POLICY="))
        .collect();
    (r.argv, env)
}

#[test]
fn shim_and_envwrap_reach_the_same_decisions() {
    let Some(_) = shim_beside_envwrap() else {
        require(
            false,
            "libenvshim.so is not beside envwrap (cargo build --release -p envshim)",
        );
        return;
    };
    let sb = Sandbox::new("envwrap_vs_shim");
    let launch = compile_c("launch_execvp", LAUNCH_C);
    let bin = sb.mkdir("bin");
    for alias in ["printenv", "tmux", "docker"] {
        std::os::unix::fs::symlink(printenv_bin(), bin.join(alias)).unwrap();
    }
    let s = sb.secrets();
    let gh_pair = s.get("GH_TOKEN").assignment();
    let jira = s.value("JIRA_API_TOKEN").to_string();
    let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
    let cases = [
        Case {
            name: "built-in default",
            policy: Policy::Builtin,
            program: "printenv",
            args: vec!["a".into(), "b c".into()],
            env: vec![
                kv("PLAIN", "1"),
                kv("LD_LIBRARY_PATH", "/opt/lib"),
                kv("BASH_ENV", "/tmp/rc"),
                kv("LANG", "../../tmp/x"),
                kv("TZ", "Europe/Paris"),
                kv("COPY", &jira),
            ],
        },
        Case {
            name: "loop.toml, tmux pairs",
            policy: Policy::Example("loop.toml"),
            program: "tmux",
            args: ["new-session", "-e", "THE_LOOP_INSTANCE=7", "-e", &gh_pair, "-e", "OTHER=1"]
                .map(String::from)
                .to_vec(),
            env: vec![
                kv("HTTPS_PROXY", "http://old.example.invalid:1"),
                kv("THE_LOOP_GH_TOKEN", "not-a-real-token"),
                kv("JIRA_BASE_URL", "https://jira.example.invalid"),
                kv("LANG", "C.UTF-8"),
            ],
        },
        Case {
            name: "agentmux.toml",
            policy: Policy::Example("agentmux.toml"),
            program: "printenv",
            args: vec![],
            env: vec![
                kv("AGENTMUX_PANE_ID", "3"),
                kv("AGENTMUX_DATA_DIR", "/srv/am"),
                kv("AGENTMUX_NESTED", "0"),
            ],
        },
        Case {
            name: "exec-unit.toml",
            policy: Policy::Example("exec-unit.toml"),
            program: "printenv",
            args: vec!["x".into()],
            env: vec![
                kv("AKM_BINDING_DEPLOY_TARGET", "prod"),
                kv("AKM_OTHER", "1"),
                kv("USER", "u"),
                kv("NODE_ENV", "test"),
            ],
        },
        Case {
            name: "a credential value in argv",
            policy: Policy::Builtin,
            program: "printenv",
            args: vec![format!("--token={jira}")],
            env: vec![],
        },
        Case {
            name: "a grant to docker",
            policy: Policy::Text(
                "version = 1\nkeep = [\"DEPLOY_TOKEN\"]\n\n[[grant]]\nname = \"DEPLOY_TOKEN\"\nprogram = \"docker\"\n",
            ),
            program: "docker",
            args: ["run", "-e", "DEPLOY_TOKEN=deploy-value-0123456789", "image"]
                .map(String::from)
                .to_vec(),
            env: vec![kv("DEPLOY_TOKEN", "deploy-value-0123456789")],
        },
    ];
    for (k, case) in cases.iter().enumerate() {
        let policy = match case.policy {
            Policy::Builtin => None,
            Policy::Example(name) => Some(stage(&sb, name)),
            Policy::Text(text) => Some(sb.write(format!("case{k}.toml"), text)),
        };
        let base = |c: &mut TestCommand| {
            c.env_clear()
                .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
                .env("HOME", sb.path())
                .env("XDG_CONFIG_HOME", sb.join("config"))
                .env("XDG_CACHE_HOME", sb.join(".cache"))
                .envs(case.env.iter().map(|(a, b)| (a.as_str(), b.as_str())))
                .env_secrets();
        };
        let mut shim = sb.cmd(&launch);
        base(&mut shim);
        shim.env("LD_PRELOAD", shim_so());
        if let Some(p) = &policy {
            shim.env("ENVSHIM_POLICY", p);
        }
        shim.arg(case.program).args(&case.args);
        let by_shim = shim.run();

        let mut wrap = envwrap(&sb);
        base(&mut wrap);
        wrap.arg("--no-preload");
        if let Some(p) = &policy {
            wrap.arg("--policy").arg(p);
        }
        wrap.arg(case.program).args(&case.args);
        let by_envwrap = wrap.run();

        let (a, b) = (by_shim.status.code(), by_envwrap.status.code());
        if a != b {
            by_envwrap.fail(&format!(
                "case {:?}: the shim's launcher exited {a:?}, envwrap {b:?}\n--- shim run ---\n{}",
                case.name,
                by_shim.report()
            ));
        }
        if a == Some(126) {
            continue; // refused by both
        }
        let (shim_argv, shim_env) = seen(&by_shim);
        let (wrap_argv, wrap_env) = seen(&by_envwrap);
        // Compared in order: both front ends build the child's environment the
        // same way, including a granted docker pair moved into it in place.
        // argv[0] is the name as given in both.
        if shim_argv != wrap_argv || shim_env != wrap_env {
            let names = |env: &[Vec<u8>]| -> Vec<String> {
                env.iter()
                    .map(|e| {
                        String::from_utf8_lossy(e.split(|&b| b == b'=').next().unwrap())
                            .into_owned()
                    })
                    .collect()
            };
            by_envwrap.fail(&format!(
                "case {:?}: different children.\nshim:    argc {} env {:?}\nenvwrap: argc {} env {:?}",
                case.name,
                shim_argv.len(),
                names(&shim_env),
                wrap_argv.len(),
                names(&wrap_env)
            ));
        }
    }
}
