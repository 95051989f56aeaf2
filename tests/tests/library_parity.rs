//! Parity: for the shared cases, the three front ends give the child the
//! same environment and argv, or all refuse the exec:
//!
//! - libenvshim.so, preloaded into a launcher that calls `execvp`;
//! - envwrap (`--no-preload`);
//! - the envpolicy library: this test binary, run again as a child process with
//!   the case's environment, loads the policy as a Rust program would
//!   (`load::locate`), builds a `std::process::Command`, calls
//!   `spawn::apply_std` and spawns it.
//!
//! The library's child gets its environment from `std::process::Command`, which
//! passes it in name order, so environments are compared as sorted lists (every
//! front end passes one copy per name); the shim and envwrap are also compared in
//! order. The shim's own `LD_PRELOAD` and `ENVSHIM_POLICY`, which only it puts
//! back, are left out.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::envwrap_util::*;
use envshim_e2e::*;

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

/// The argument that makes a run of this binary the library front end: the rest
/// of it is the path of a spec file (see [`library_front_end`]).
const SPEC_ARG: &str = "envshim-library-spec=";

struct Case<'a> {
    name: &'a str,
    policy: Policy<'a>,
    program: &'a str,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

enum Policy<'a> {
    /// No policy file: the lookup order ends at the built-in default.
    Builtin,
    /// examples/NAME, staged with the files it imports.
    Example(&'a str),
    /// Inline text.
    Text(&'a str),
}

/// The library front end, when this binary is run with [`SPEC_ARG`] (by
/// `library_envwrap_and_shim_give_the_same_child`); a no-op otherwise.
///
/// The spec file holds NUL-separated fields: the policy path (empty for the
/// lookup order), the report path, the program, its arguments. The child's stdout
/// (a printenv report) goes to the report path; the exit status is the child's,
/// or 126 when the policy refuses the exec, as with the other front ends.
#[test]
fn library_front_end() {
    let Some(spec) = std::env::args_os()
        .filter_map(|a| a.to_str()?.strip_prefix(SPEC_ARG).map(PathBuf::from))
        .next()
    else {
        return;
    };
    let text = std::fs::read(&spec).expect("spec file");
    let mut fields = text
        .split(|&b| b == 0)
        .map(|f| OsString::from_vec(f.to_vec()));
    let policy = fields.next().expect("policy field");
    let report = PathBuf::from(fields.next().expect("report field"));
    let program = fields.next().expect("program field");
    let args: Vec<OsString> = fields.collect();

    let explicit = (!policy.is_empty()).then(|| PathBuf::from(&policy));
    let source = envpolicy::load::locate(explicit.as_deref(), |n| std::env::var_os(n));
    let compiled = envpolicy::load::load_source(&source).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = std::process::Command::new(&program);
    cmd.args(&args);
    match envpolicy::spawn::apply_std(&compiled.policy(), &mut cmd) {
        Err(refused) => {
            eprintln!("library: {refused}");
            std::process::exit(126);
        }
        Ok(_) => {
            let out = cmd.output().expect("spawn the case's program");
            std::fs::write(&report, &out.stdout).expect("write the report");
            std::process::exit(out.status.code().unwrap_or(125));
        }
    }
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

/// The child's argv and its environment, sorted, without the shim's own entries.
/// The child's argv and environment, without the shim's own entries, in the order
/// the child received them.
fn seen(o: &Outcome, report: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let r = PrintenvReport::parse(report).unwrap_or_else(|e| o.fail(&e));
    let env: Vec<Vec<u8>> = r
        .proc_environ
        .into_iter()
        .filter(|e| {
            !e.starts_with(b"LD_PRELOAD=")
                && !e.starts_with(b"ENVSHIM_POLICY=")
                && !e.starts_with(b"ENVSHIM_HINT=")
        })
        .collect();
    (r.argv, env)
}

fn sorted(mut env: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    env.sort();
    env
}

fn names(env: &[Vec<u8>]) -> Vec<String> {
    env.iter()
        .map(|e| String::from_utf8_lossy(e.split(|&b| b == b'=').next().unwrap()).into_owned())
        .collect()
}

#[test]
fn library_envwrap_and_shim_give_the_same_child() {
    let Some(_) = shim_beside_envwrap() else {
        require(
            false,
            "libenvshim.so is not beside envwrap (cargo build --release -p envshim)",
        );
        return;
    };
    let sb = Sandbox::new("library_parity");
    let launch = compile_c("launch_execvp", LAUNCH_C);
    let bin = sb.mkdir("bin");
    for alias in ["printenv", "tmux", "docker"] {
        std::os::unix::fs::symlink(printenv_bin(), bin.join(alias)).unwrap();
    }
    let me = std::env::current_exe().expect("this test binary");
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
                kv("LOOP_TRACKER_URL", "https://old.example.invalid/1"),
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
                kv("AGENTMUX_CHANNEL", "stable"),
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
            name: "a secret in argv, redacted",
            policy: Policy::Text("version = 1\n\n[argv]\nsecrets = \"redact\"\n"),
            program: "printenv",
            args: vec!["--token".into(), jira.clone(), "plain".into()],
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
        Case {
            name: "an empty base",
            policy: Policy::Text(
                "version = 1\nbase = \"none\"\nkeep = [\"PATH\", \"KEEP_*\"]\n\n[set]\nFROM_PARENT = \"${KEEP_ME}-x\"\n",
            ),
            program: "printenv",
            args: vec![],
            env: vec![kv("KEEP_ME", "1"), kv("DROP_ME", "2")],
        },
    ];
    let report = sb.join("library-report");
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
                .env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"))
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

        let _ = std::fs::remove_file(&report);
        let mut spec: Vec<u8> = Vec::new();
        let fields = [
            policy.as_deref().map(Path::as_os_str).unwrap_or_default(),
            report.as_os_str(),
            case.program.as_ref(),
        ];
        for f in fields
            .into_iter()
            .chain(case.args.iter().map(|a| a.as_ref()))
        {
            spec.extend_from_slice(f.as_bytes());
            spec.push(0);
        }
        spec.pop();
        let spec_path = sb.write(format!("case{k}.spec"), spec);
        let mut lib = sb.cmd(&me);
        base(&mut lib);
        lib.args([
            "--exact",
            "library_parity::library_front_end",
            "--test-threads=1",
            "--nocapture",
            "-q",
        ])
        .arg(format!("{SPEC_ARG}{}", spec_path.display()));
        let by_library = lib.run();

        let codes = [
            by_shim.status.code(),
            by_envwrap.status.code(),
            by_library.status.code(),
        ];
        if codes[0] != codes[1] || codes[0] != codes[2] {
            by_library.fail(&format!(
                "case {:?}: exit codes differ: shim {:?}, envwrap {:?}, library {:?}\n--- shim run ---\n{}\n--- envwrap run ---\n{}",
                case.name,
                codes[0],
                codes[1],
                codes[2],
                by_shim.report(),
                by_envwrap.report()
            ));
        }
        if codes[0] == Some(126) {
            // Refused by all three, and the library said why by name only.
            let why = by_library.stderr_str();
            assert!(
                why.contains("library: refused to run printenv: argument 1"),
                "case {:?}: {why:?}",
                case.name
            );
            continue;
        }
        let (shim_argv, shim_env) = seen(&by_shim, &by_shim.stdout);
        let (wrap_argv, wrap_env) = seen(&by_envwrap, &by_envwrap.stdout);
        let library_report = std::fs::read(&report)
            .unwrap_or_else(|e| by_library.fail(&format!("no library report: {e}")));
        let (lib_argv, lib_env) = seen(&by_library, &library_report);
        // The shim and envwrap build the child's environment the same way, so they
        // agree in order too; std::process::Command passes its environment sorted
        // by name, so the library is compared as a set.
        if shim_env != wrap_env {
            by_envwrap.fail(&format!(
                "case {:?}: the shim and envwrap give the child the same entries in a different order, or different entries\nshim:    {:?}\nenvwrap: {:?}\n--- shim run ---\n{}",
                case.name,
                names(&shim_env),
                names(&wrap_env),
                by_shim.report()
            ));
        }
        let (shim_env, wrap_env, lib_env) = (sorted(shim_env), sorted(wrap_env), sorted(lib_env));
        if shim_argv != wrap_argv
            || shim_argv != lib_argv
            || shim_env != wrap_env
            || shim_env != lib_env
        {
            by_library.fail(&format!(
                "case {:?}: different children.\nshim:    argc {} env {:?}\nenvwrap: argc {} env {:?}\nlibrary: argc {} env {:?}\nargv equal: shim=envwrap {}, shim=library {}",
                case.name,
                shim_argv.len(),
                names(&shim_env),
                wrap_argv.len(),
                names(&wrap_env),
                lib_argv.len(),
                names(&lib_env),
                shim_argv == wrap_argv,
                shim_argv == lib_argv,
            ));
        }
        // Every case changes something, so agreement is not the trivial kind.
        assert!(
            !lib_env.is_empty(),
            "case {:?}: empty environment",
            case.name
        );
    }
}
