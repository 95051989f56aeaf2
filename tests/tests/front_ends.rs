//! The differential test of the front ends (docs/adr/0021-one-exec-pipeline.md):
//! execs generated from the policy grammar, with credentials by name, by shape
//! and as copies in the environment and in argv, and env files the policy
//! imports, each made through every front end:
//!
//! - libenvshim.so, preloaded into a launcher that calls `execve` with the
//!   case's argv and environment, read from files, and into the same launcher
//!   calling `posix_spawn` (where a program that gets a secret is routed
//!   through `envwrap --routed`);
//! - `envwrap --no-preload`;
//! - the envpolicy library (`spawn::apply_std`), in this test binary run again;
//! - `envwrap --supervise --no-preload`: the supervisor alone, judging a static
//!   launcher's `execve`;
//! - `envwrap --supervise` with the shim in the (dynamic) launcher.
//!
//! The test knows nothing of the rules: it compares what the children got.
//! The shim, envwrap, the library and the shim under the supervisor must give
//! the same exit status, argv and environment. The supervisor alone differs
//! exactly as the capability table says (`envpolicy_core::capability`): it
//! removes what the shim removes (the launcher's memory is its own), runs
//! without what the shim adds, and refuses where the shim rewrites a value or
//! an argument. A failure names the seed and the case, never a value.
//!
//! `ENVSHIM_DIFF_SEED=N` replays one seed; `ENVSHIM_DIFF_CASES=N` runs more.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::envwrap_util::*;
use envshim_e2e::rng::Rng;
use envshim_e2e::*;

/// `env_exec ENVFILE ARGVFILE`: execve the argv of ARGVFILE (its first entry
/// is the program's path) with the entries of ENVFILE as its whole
/// environment, both NUL-separated; 126 when refused (EPERM). Neither reaches
/// the launcher as its own argv or environment, so no front end judges them
/// before the launcher's exec.
const ENV_EXEC_C: &str = r#"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>
static char env_buf[1 << 16], argv_buf[1 << 16];
static int split(const char *path, char *buf, char **out, int max) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, (1 << 16) - 1 - n);
        if (r < 0) return -1;
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    int k = 0;
    for (size_t i = 0; i < n && k < max - 1; i += strlen(buf + i) + 1) out[k++] = buf + i;
    out[k] = NULL;
    return k;
}
int main(int argc, char **argv) {
    char *envp[512], *args[512];
    if (argc < 3 || argc > 4 || split(argv[1], env_buf, envp, 512) < 0 || split(argv[2], argv_buf, args, 512) < 1)
        return 2;
    if (argc == 4 && strcmp(argv[3], "spawn") == 0) {
        pid_t pid;
        int r = posix_spawn(&pid, args[0], NULL, NULL, args, envp);
        if (r != 0) {
            fprintf(stderr, "env_exec: posix_spawn failed: errno=%d\n", r);
            return r == EPERM ? 126 : 127;
        }
        int status;
        if (waitpid(pid, &status, 0) != pid) return 125;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
    }
    execve(args[0], args, envp);
    int e = errno;
    fprintf(stderr, "env_exec: execve failed: errno=%d\n", e);
    return e == EPERM ? 126 : 127;
}
"#;

/// The argument that makes a run of this binary the library front end.
const SPEC_ARG: &str = "envshim-diff-spec=";

/// One generated exec.
struct Case {
    policy: String,
    /// Audit mode, where every front end changes nothing.
    audit: bool,
    /// `[supervise] changes = "audit"`.
    changes_audit: bool,
    env: Vec<(String, String)>,
    args: Vec<String>,
    /// The contents of the env file the policy imports, if it imports one.
    dotenv: Option<String>,
    /// The policy's `[[secret]]` of [`SECRET_NAME`] is for the case's program
    /// (not another) and its source is there to read.
    secret_here: bool,
}

/// The name of the generated policies' `[[secret]]`; its value, read from
/// [`Spots::secret_source`], is the sandbox's `ANTHROPIC_API_KEY` (which no
/// case's environment holds), so that every check for a value shown covers it.
const SECRET_NAME: &str = "DIFF_SECRET";

/// Where a generated case's files are.
struct Spots<'a> {
    /// The env file the policy may import.
    dotenv: &'a Path,
    /// The program every case execs (a root-owned copy, as a secret's
    /// program must be).
    program: &'a Path,
    /// The secret's source: a root-owned file, mode 0600.
    secret_source: &'a Path,
    /// Whether a case may have a `[[secret]]`: only as root, where the
    /// program and the source are root's (a secret is delivered only to a
    /// program no other user can replace).
    secrets: bool,
}

/// What a child got: exit status, argv, environment (sorted, without the
/// shim's and the supervisor's own entries).
#[derive(Debug, PartialEq, Eq)]
struct Child {
    code: Option<i32>,
    argv: Vec<Vec<u8>>,
    env: Vec<Vec<u8>>,
}

/// The library front end, when this binary is run with [`SPEC_ARG`]; a no-op
/// otherwise. The spec holds NUL-separated fields: the policy, the program,
/// the number of environment entries, the entries, then the arguments.
#[test]
fn library_runner() {
    let Some(spec) = std::env::args_os()
        .filter_map(|a| a.to_str()?.strip_prefix(SPEC_ARG).map(PathBuf::from))
        .next()
    else {
        return;
    };
    let text = std::fs::read(&spec).expect("spec file");
    let mut fields = text.split(|&b| b == 0).map(|f| f.to_vec());
    let policy = PathBuf::from(OsString::from_vec(fields.next().expect("policy")));
    let program = OsString::from_vec(fields.next().expect("program"));
    let n: usize = String::from_utf8(fields.next().expect("count"))
        .unwrap()
        .parse()
        .unwrap();
    let env: Vec<Vec<u8>> = fields.by_ref().take(n).collect();
    let args: Vec<OsString> = fields.map(OsString::from_vec).collect();
    let compiled = envpolicy::load::load(&policy).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = std::process::Command::new(&program);
    cmd.args(&args).env_clear();
    for e in &env {
        let at = e.iter().position(|&b| b == b'=').unwrap();
        cmd.env(
            std::ffi::OsStr::from_bytes(&e[..at]),
            std::ffi::OsStr::from_bytes(&e[at + 1..]),
        );
    }
    match envpolicy::spawn::apply_std(&compiled.policy(), &mut cmd) {
        Err(refused) => {
            eprintln!("library: {refused}");
            std::process::exit(126);
        }
        Ok(_) => {
            let out = cmd.output().expect("spawn the case's program");
            use std::io::Write;
            std::io::stdout().write_all(&out.stdout).unwrap();
            std::process::exit(out.status.code().unwrap_or(125));
        }
    }
}

/// A generated policy and exec, from the grammar's pieces; `at.dotenv` is
/// where an env file the policy imports is (written by the caller from
/// [`Case::dotenv`]).
fn generate(rng: &mut Rng, s: &Secrets, at: &Spots<'_>) -> Case {
    let dotenv = at.dotenv;
    let mut pick = |n: u64| rng.below(n);
    let audit = pick(8) == 0;
    let mut policy = String::from("version = 1\n");
    if audit {
        policy.push_str("mode = \"audit\"\n");
    }
    policy.push_str(
        [
            "base = \"all\"\n",
            "base = \"floor\"\n",
            "base = \"none\"\n",
        ][pick(3) as usize],
    );
    let keeps = [
        "PATH",
        "PLAIN_*",
        "KEEP_ME",
        "TMUX",
        "LANG",
        "NOTE",
        "GH_TOKEN",
        "FILE_ONLY",
    ];
    let strips = ["PLAIN_B", "TMUX", "NOTE", "COPY"];
    let chosen = |pool: &[&str], bits: u64| -> Vec<String> {
        pool.iter()
            .enumerate()
            .filter(|(i, _)| bits >> i & 1 == 1)
            .map(|(_, n)| format!("\"{n}\""))
            .collect()
    };
    let keep = chosen(&keeps, pick(1 << keeps.len()));
    let strip = chosen(&strips, pick(1 << strips.len()) & pick(1 << strips.len()));
    policy.push_str(&format!("keep = [{}]\n", keep.join(", ")));
    policy.push_str(&format!("strip = [{}]\n", strip.join(", ")));
    let set = [
        "",
        "[set]\nSET_ME = \"x\"\n",
        "[set]\nPLAIN_A = \"overridden\"\n",
        "[set]\nFROM_KEEP = \"${KEEP_ME}-y\"\n",
    ][pick(4) as usize];
    policy.push_str(set);
    match pick(4) {
        0 => policy.push_str("[credentials]\nnames = [\"CUSTOM_SECRET\"]\n"),
        1 => policy.push_str("[credentials]\nbuiltin = false\nshapes = false\n"),
        _ => {}
    }
    let changes_audit = pick(3) == 0;
    if changes_audit {
        policy.push_str("[supervise]\nchanges = \"audit\"\n");
    }
    match pick(4) {
        0 => policy.push_str("[program.printenv]\nmatch = [\"printenv\"]\nstrip = [\"KEEP_ME\"]\n"),
        1 => policy
            .push_str("[program.printenv]\nmatch = [\"printenv\"]\nkeep = [\"TMUX\", \"NOTE\"]\n"),
        _ => {}
    }
    match pick(3) {
        0 => policy.push_str("[argv]\nsecrets = \"redact\"\n"),
        1 => policy.push_str("[argv]\nsecrets = \"refuse\"\n"),
        _ => {}
    }
    if pick(3) == 0 {
        policy.push_str("[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"printenv\"\n");
    }
    // A `[[secret]]` (rule 6b): for the case's program or another, from a
    // source that is there or not.
    let mut secret_here = false;
    if at.secrets && pick(2) == 0 {
        let for_this = pick(3) != 0;
        let readable = pick(3) != 0;
        secret_here = for_this && readable;
        let program = if for_this {
            at.program.display().to_string()
        } else {
            "/usr/bin/envshim-diff-other".to_string()
        };
        let source = if readable {
            at.secret_source.display().to_string()
        } else {
            format!("{}.missing", at.secret_source.display())
        };
        policy.push_str(&format!(
            "[[secret]]\nname = \"{SECRET_NAME}\"\nfrom = \"file:{source}\"\nprogram = {program:?}\n"
        ));
    }
    let gh = s.value("GH_TOKEN").to_string();
    let jira = s.value("JIRA_API_TOKEN").to_string();
    // An env file the policy imports (rule 6): its names stripped or refused,
    // its values added or not; one of its values a credential's, one a
    // value the environment holds too.
    let dotenv_text = match pick(2) {
        0 => {
            let role = ["strip", "refuse"][pick(2) as usize];
            let values = pick(2) == 0;
            policy.push_str(&format!(
                "[[import.env_file]]\npath = {:?}\nrole = \"{role}\"\nvalues = {values}\n",
                dotenv.display()
            ));
            Some(format!(
                "PLAIN_B=from-file\nFILE_ONLY=file-value\nDB_PASSWORD={jira}\nexport LANG=C.UTF-8\n"
            ))
        }
        _ => None,
    };
    let pool: Vec<(&str, String)> = vec![
        ("PLAIN_A", "1".into()),
        ("PLAIN_B", "two words".into()),
        ("KEEP_ME", "k".into()),
        ("TMUX", "/tmp/tmux-0/default,1,0".into()),
        ("LANG", ["C.UTF-8", "../../tmp/x"][pick(2) as usize].into()),
        ("LD_LIBRARY_PATH", "/opt/lib".into()),
        ("BASH_ENV", "/tmp/rc".into()),
        ("TZ", ["Europe/Paris", "/tmp/zone"][pick(2) as usize].into()),
        ("GH_TOKEN", gh.clone()),
        ("JIRA_API_TOKEN", jira.clone()),
        ("CUSTOM_SECRET", "custom-value-0123456789".into()),
        ("NOTE", gh.clone()),
        ("COPY", format!("Bearer {jira}")),
        (SECRET_NAME, "an-inherited-copy".into()),
        ("CORP_INTERNAL_URL", "https://intra.example/x".into()),
        ("DEPLOY_KEY", "deploy-value-0123456789".into()),
    ];
    let mut env: Vec<(String, String)> = Vec::new();
    for (name, value) in pool {
        if pick(3) != 0 {
            env.push((name.to_string(), value));
        }
    }
    env.push(("PATH".into(), "/usr/bin:/bin".into()));
    let args = match pick(5) {
        0 => vec![],
        1 => vec!["plain".into(), "two words".into()],
        2 => vec![format!("--token={jira}")],
        3 => vec![gh],
        _ => vec!["--flag".into()],
    };
    Case {
        policy,
        audit,
        changes_audit,
        env,
        args,
        dotenv: dotenv_text,
        secret_here,
    }
}

/// A managed layer (`/etc/envshim/managed.toml`, docs/adr/0020-managed-layer.md)
/// from the grammar's pieces: internal names stripped, a credential by name,
/// a managed grant of it, the layer's own audit mode. (No `set`: what the
/// supervisor alone does with a managed rewrite is the managed layer's
/// `[supervise] changes`, which the model below does not follow.)
fn generate_managed(rng: &mut Rng) -> String {
    let mut pick = |n: u64| rng.below(n);
    let mut policy = String::from("version = 1\n");
    if pick(4) == 0 {
        policy.push_str("mode = \"audit\"\n");
    }
    policy.push_str(
        [
            "strip = [\"CORP_INTERNAL_*\"]\n",
            "strip = [\"CORP_INTERNAL_*\", \"PLAIN_A\"]\n",
            "",
        ][pick(3) as usize],
    );
    if pick(2) == 0 {
        policy.push_str("[credentials]\nnames = [\"DEPLOY_KEY\"]\n");
    }
    if pick(4) == 0 {
        policy.push_str("[[grant]]\nname = \"DEPLOY_KEY\"\nprogram = \"printenv\"\n");
    }
    policy
}

/// The setup lines of a private host ([`on_private_host`]) that lay down the
/// managed layer `text` and compile it, as an administrator would.
fn managed_setup(sb: &Sandbox, k: u64, text: &str) -> String {
    let src = sb.write(format!("case{k}.managed.toml"), text);
    format!(
        "{}'{}' compile --output /etc/envshim/managed.bin -- /etc/envshim/managed.toml >&2\nchmod 0644 /etc/envshim/managed.bin\n",
        install_line(&src, "/etc/envshim/managed.toml", "0644"),
        envwrap_bin().display()
    )
}

/// The child a front end's run gave (its printenv report on stdout).
fn child_of(o: &Outcome) -> Child {
    let code = o.status.code();
    if code != Some(0) {
        return Child {
            code,
            argv: Vec::new(),
            env: Vec::new(),
        };
    }
    // (The library's runner is a test binary: the harness's own lines stand
    // around the report.)
    let header = b"ENVSHIM-PRINTENV/1\n";
    let start = o
        .stdout
        .windows(header.len())
        .position(|w| w == header)
        .unwrap_or(0);
    let report = &o.stdout[start..];
    let end = report
        .windows(4)
        .position(|w| w == b"\nEND")
        .map_or(report.len(), |at| at + 5);
    let r = PrintenvReport::parse(&report[..end.min(report.len())]).unwrap_or_else(|e| o.fail(&e));
    let mut env: Vec<Vec<u8>> = r
        .proc_environ
        .into_iter()
        .filter(|e| !e.starts_with(b"LD_PRELOAD=") && !e.starts_with(b"ENVSHIM_"))
        .collect();
    env.sort();
    Child {
        code,
        argv: r.argv,
        env,
    }
}

/// What the capability table says the supervisor alone gives, from what the
/// shim gave (`shim`) for the exec of `case`'s `env` and `argv`: the shim's
/// removals made, its additions left out, and a refusal where it rewrote a
/// value or an argument, or, under `[supervise] changes = "audit"`, the
/// rewritten value left as it was (every argument the generator makes that a
/// policy changes holds a credential: refused either way); audit mode changes
/// nothing anywhere.
fn supervisor_alone(shim: &Child, case: &Case, env: &[Vec<u8>], argv: &[Vec<u8>]) -> Child {
    if shim.code != Some(0) || case.audit {
        return Child {
            code: shim.code,
            argv: shim.argv.clone(),
            env: shim.env.clone(),
        };
    }
    let name = |e: &[u8]| e.split(|&b| b == b'=').next().unwrap_or(&[]).to_vec();
    let shim_names: Vec<Vec<u8>> = shim.env.iter().map(|e| name(e)).collect();
    // Rule 6b: the supervisor reads no secret, so an inherited copy of a
    // secret's name passes at its program as it stands, where the shim
    // replaced it with the value it read (capability::reads_secrets).
    let delivered_here = |e: &[u8]| case.secret_here && name(e) == SECRET_NAME.as_bytes();
    let rewritten = env
        .iter()
        .any(|e| !shim.env.contains(e) && shim_names.contains(&name(e)) && !delivered_here(e));
    if (rewritten && !case.changes_audit) || shim.argv != argv {
        return Child {
            code: Some(126),
            argv: Vec::new(),
            env: Vec::new(),
        };
    }
    let mut kept: Vec<Vec<u8>> = env
        .iter()
        .filter(|e| shim.env.contains(e) || shim_names.contains(&name(e)))
        .cloned()
        .collect();
    kept.sort();
    Child {
        code: Some(0),
        argv: argv.to_vec(),
        env: kept,
    }
}

/// The refusal line a front end wrote, without its prefix (`envshim: `,
/// `envwrap: `, `library: `).
fn refusal_line(o: &Outcome) -> Option<String> {
    o.stderr_str().lines().find_map(|l| {
        let (_, rest) = l.split_once(": ")?;
        rest.starts_with("refused to run ")
            .then(|| rest.to_string())
    })
}

/// The names a front end's withheld lines (after `prefix`) give, sorted:
/// "NAME withheld from PROGRAM and what it starts (...)".
fn withheld_names(o: &Outcome, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = o
        .stderr_str()
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|l| l.split_once(" withheld from ").map(|(n, _)| n.to_string()))
        .collect();
    out.sort();
    out
}

/// A refusal line with what an argument holds left out ("argument 1 holds
/// ... (policy P)" becomes "argument 1 holds (policy P)").
fn without_what_it_holds(line: &str) -> String {
    match (line.find(" holds "), line.rfind(" (policy ")) {
        (Some(a), Some(b)) if a < b => format!("{} holds{}", &line[..a], &line[b..]),
        _ => line.to_string(),
    }
}

/// Names only: a child can hold values.
fn shown(c: &Child) -> String {
    let names: Vec<String> = c
        .env
        .iter()
        .map(|e| {
            String::from_utf8_lossy(e.split(|&b| b == b'=').next().unwrap_or(&[])).into_owned()
        })
        .collect();
    format!("exit {:?}, argc {}, env {names:?}", c.code, c.argv.len())
}

/// A front end's warnings of loud changes (after `prefix`), whole: the
/// change, its reason and the policy ("granted GH_TOKEN to printenv: granted
/// to `...` at FILE:LINE (policy FILE)", envpolicy_core::loud and ::reason),
/// sorted, each with whether envwrap said it of an entry its own command line
/// gave (`NAME=VALUE` operands, as this test gives envwrap every entry):
/// envwrap warns of every such entry it refuses, loud or not, and says so
/// before the reason (taken out here).
fn loud_heads(o: &Outcome, prefix: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = o
        .stderr_str()
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter(|l| {
            (l.starts_with("granted ") || l.starts_with("refused ") || l.starts_with("replaced "))
                && !l.starts_with("refused to run ")
        })
        .map(|l| {
            let operand = l.contains(": given as NAME=VALUE; ");
            (l.replacen("given as NAME=VALUE; ", "", 1), operand)
        })
        .collect();
    out.sort();
    out
}

/// The change records of a log (one JSON object per line), without what
/// differs by front end (`tool`, `pid`; `why` is the same sentence in every
/// front end, envpolicy_core::reason) and without rule 8's own
/// entries (the shim's), sorted; a line that is no JSON object fails.
fn records(log: &str) -> Vec<String> {
    let mut out: Vec<String> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a log line is no JSON object ({e}): {l}"));
            let m = v.as_object_mut().expect("a JSON object");
            for k in ["tool", "pid"] {
                m.remove(k);
            }
            v
        })
        .filter(|v| v["rule"] != "sticky")
        .map(|v| v.to_string())
        .collect();
    out.sort();
    out
}

/// How many cases came to each kind of outcome.
#[derive(Default, Debug)]
struct Coverage {
    /// Refused by every front end.
    refused: usize,
    /// Run with entries removed, by the supervisor alone too.
    stripped: usize,
    /// Run by the shim, refused by the supervisor alone (a rewrite).
    refused_alone: usize,
    /// Run by the shim with an entry the supervisor alone could not add.
    without: usize,
    /// Run by the shim with an env file the policy imports.
    with_file: usize,
    /// With change records in the log.
    logged: usize,
    /// With a loud change said.
    loud: usize,
    /// Run by the shim with a secret delivered to the program (as root only:
    /// `secrets_expected`).
    delivered: usize,
    secrets_expected: bool,
}

impl Coverage {
    fn count(&mut self, shim: &Child, alone: &Child, env: &[Vec<u8>], file: bool) {
        if file && shim.code == Some(0) {
            self.with_file += 1;
        }
        match (shim.code, alone.code) {
            (Some(126), _) => self.refused += 1,
            (Some(0), Some(126)) => self.refused_alone += 1,
            (Some(0), Some(0)) => {
                if alone.env.len() < env.len() {
                    self.stripped += 1;
                }
                if shim.env.iter().any(|e| !env.contains(e)) {
                    self.without += 1;
                }
            }
            _ => {}
        }
    }

    fn all_seen(&self) -> bool {
        self.refused > 0
            && self.stripped > 0
            && self.refused_alone > 0
            && self.without > 0
            && self.with_file > 0
            && self.logged > 0
            && self.loud > 0
            && (self.delivered > 0 || !self.secrets_expected)
    }
}

#[test]
fn generated_execs_agree_in_every_front_end() {
    let Some(_) = shim_beside_envwrap() else {
        require(
            false,
            "libenvshim.so is not beside envwrap (cargo build --release -p envshim)",
        );
        return;
    };
    let sb = Sandbox::new("front_ends");
    let dynamic = compile_c("env_exec", ENV_EXEC_C);
    let static_ = compile_c_with("env_exec_static", ENV_EXEC_C, &["-static"]);
    let bin = sb.mkdir("bin");
    let program = bin.join("printenv");
    std::fs::copy(printenv_bin(), &program).expect("copy printenv");
    let secret_source = sb.write("secret-source", sb.secrets().value("ANTHROPIC_API_KEY"));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret_source, std::fs::Permissions::from_mode(0o600))
            .expect("chmod the secret's source");
    }

    let launcher_named = format!(" {}: ", static_.file_name().unwrap().to_string_lossy());
    let me = std::env::current_exe().expect("this test binary");
    let seed: u64 = std::env::var("ENVSHIM_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(52);
    let cases: u64 = std::env::var("ENVSHIM_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(160);
    let s = sb.secrets();
    let mut rng = Rng::with_seed(seed);
    // What the sample covered: a test whose cases all agree trivially proves
    // nothing, so each kind of outcome must occur.
    let mut seen = Coverage {
        secrets_expected: private_host_available(),
        ..Coverage::default()
    };
    for k in 0..cases {
        let dotenv = sb.join(format!("case{k}.dotenv"));
        let spots = Spots {
            dotenv: &dotenv,
            program: &program,
            secret_source: &secret_source,
            secrets: private_host_available(),
        };
        let case = generate(&mut rng, s, &spots);
        // A quarter of the cases (as root) run on a private host with a
        // managed layer: every front end there reads it.
        let managed =
            (private_host_available() && rng.below(4) == 0).then(|| generate_managed(&mut rng));
        let setup = managed.as_deref().map(|m| managed_setup(&sb, k, m));
        let host = |program: &Path| match &setup {
            Some(setup) => on_private_host(&sb, setup, program),
            None => sb.cmd(program),
        };
        if let Some(text) = &case.dotenv {
            sb.write(format!("case{k}.dotenv"), text);
        }
        // Every front end writes its records to the policy's log, which is
        // read and emptied after each run.
        let log = sb.join(format!("case{k}.log"));
        let text = case.policy.replacen(
            "version = 1\n",
            &format!("version = 1\nlog = {:?}\n", log.display().to_string()),
            1,
        );
        let policy = sb.write(format!("case{k}.toml"), &text);
        let take_log = || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            text
        };
        let entries: Vec<Vec<u8>> = case
            .env
            .iter()
            .map(|(n, v)| format!("{n}={v}").into_bytes())
            .collect();
        let mut envfile = Vec::new();
        for e in &entries {
            envfile.extend_from_slice(e);
            envfile.push(0);
        }
        let envfile = sb.write(format!("case{k}.env"), envfile);
        let argv: Vec<Vec<u8>> = std::iter::once(program.as_os_str().as_bytes().to_vec())
            .chain(case.args.iter().map(|a| a.as_bytes().to_vec()))
            .collect();
        let mut argvfile = Vec::new();
        for a in &argv {
            argvfile.extend_from_slice(a);
            argvfile.push(0);
        }
        let argvfile = sb.write(format!("case{k}.argv"), argvfile);
        let base = |c: &mut TestCommand| {
            c.env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", sb.path())
                .env("XDG_CONFIG_HOME", sb.join("config"))
                .env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"));
        };
        // A child's report holds what the policy passed (a grant, audit mode):
        // data, not a message. What the front ends themselves say, on stderr,
        // must hold no value.
        let run = |c: &mut TestCommand| {
            let o = c
                .timeout(std::time::Duration::from_secs(60))
                .allow_secrets_in_output()
                .run();
            s.assert_absent("a front end's stderr", &o.stderr);
            o
        };

        // The shim is preloaded into the launcher alone (by env(1), after a
        // private host's setup, which it would otherwise police).
        let with_shim = |c: &mut TestCommand| {
            base(c);
            c.arg(format!("LD_PRELOAD={}", shim_so().display()))
                .arg(format!("ENVSHIM_POLICY={}", policy.display()))
                .arg(&dynamic)
                .arg(&envfile)
                .arg(&argvfile);
        };
        let mut shim = host(Path::new("/usr/bin/env"));
        with_shim(&mut shim);
        let by_shim = run(&mut shim);
        let shim_log = take_log();

        // The shim at a `posix_spawn`, which decides in the parent's memory:
        // a program that gets a secret is routed through envwrap.
        let mut spawn = host(Path::new("/usr/bin/env"));
        with_shim(&mut spawn);
        spawn.arg("spawn");
        let by_spawn = run(&mut spawn);
        let _ = take_log();

        let envwrap_on_host = || {
            let mut c = host(&envwrap_bin());
            c.env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"));
            c
        };
        let mut wrap = envwrap_on_host();
        base(&mut wrap);
        wrap.arg("--no-preload")
            .arg("--policy")
            .arg(&policy)
            .arg("-i");
        for e in &entries {
            wrap.arg(OsString::from_vec(e.clone()));
        }
        wrap.arg(&program).args(&case.args);
        let by_envwrap = run(&mut wrap);
        let envwrap_log = take_log();

        let mut spec: Vec<Vec<u8>> = vec![
            policy.as_os_str().as_bytes().to_vec(),
            program.as_os_str().as_bytes().to_vec(),
            entries.len().to_string().into_bytes(),
        ];
        spec.extend(entries.iter().cloned());
        spec.extend(case.args.iter().map(|a| a.as_bytes().to_vec()));
        let spec_path = sb.write(format!("case{k}.spec"), spec.join(&0u8));
        let mut lib = host(&me);
        base(&mut lib);
        // (A command whose program gets a secret runs through envwrap.)
        lib.env("ENVSHIM_ENVWRAP", envwrap_bin());
        lib.args([
            "--exact",
            "front_ends::library_runner",
            "--test-threads=1",
            "--nocapture",
            "-q",
        ])
        .arg(format!("{SPEC_ARG}{}", spec_path.display()));
        let by_library = run(&mut lib);

        let supervised = |launcher: &Path, preload: bool| {
            let mut c = envwrap_on_host();
            base(&mut c);
            c.arg("--supervise");
            if !preload {
                c.arg("--no-preload");
            }
            c.arg("--policy")
                .arg(&policy)
                .arg("-i")
                .arg(launcher)
                .arg(&envfile)
                .arg(&argvfile);
            run(&mut c)
        };
        let by_supervisor = supervised(&static_, false);
        let by_both = supervised(&dynamic, true);

        let shim_child = child_of(&by_shim);
        let expected_alone = supervisor_alone(&shim_child, &case, &entries, &argv);
        let front_ends = [
            ("the shim at posix_spawn", child_of(&by_spawn), &by_spawn),
            ("envwrap", child_of(&by_envwrap), &by_envwrap),
            ("library", child_of(&by_library), &by_library),
            ("supervisor and shim", child_of(&by_both), &by_both),
        ];
        let mut differ = Vec::new();
        for (name, child, outcome) in &front_ends {
            if *child != shim_child {
                differ.push(format!(
                    "{name}: {}\n--- its run ---\n{}",
                    shown(child),
                    outcome.report()
                ));
            }
        }
        // A refused exec is said the same way by every front end that
        // refuses it for the same reason (envpolicy_core::refusal).
        if shim_child.code == Some(126) {
            let said = refusal_line(&by_shim);
            let outcomes = [
                ("envwrap", &by_envwrap),
                ("library", &by_library),
                ("supervisor and shim", &by_both),
                ("supervisor alone", &by_supervisor),
            ];
            for (name, o) in outcomes {
                let mut line = refusal_line(o);
                let mut said = said.clone();
                // The static launcher's own environment is what the policy
                // left it at envwrap's exec of it, empty under a strict base,
                // where the shim's launcher holds the test's entries: a
                // caller with an empty environment hands its child what it
                // inherited, so the managed pass looks the caller's
                // credentials up in the exec's own, and may name a value
                // where the shim names a shape. Only what the argument holds
                // may differ, and only there.
                if name == "supervisor alone" && managed.is_some() {
                    line = line.map(|l| without_what_it_holds(&l));
                    said = said.map(|l| without_what_it_holds(&l));
                }
                if line != said {
                    differ.push(format!(
                        "{name} says {:?} where the shim says {:?}",
                        line.as_deref().map(|l| s.redact(l)),
                        said.as_deref().map(|l| s.redact(l))
                    ));
                }
            }
        }
        // The withheld lines (envpolicy_core::withheld) name the same
        // credentials in the shim and in envwrap.
        if !case.audit && shim_child.code == Some(0) {
            let by = withheld_names(&by_shim, "envshim: ");
            let ew = withheld_names(&by_envwrap, "envwrap: ");
            if by != ew {
                differ.push(format!("withheld: the shim names {by:?}, envwrap {ew:?}"));
            }
        }
        // The records of the changes (envpolicy_core::record) are the same,
        // reasons too, apart from who wrote them.
        let (shim_records, envwrap_records) = (records(&shim_log), records(&envwrap_log));
        if !shim_records.is_empty() {
            seen.logged += 1;
        }
        if shim_records != envwrap_records {
            differ.push(format!(
                "the shim's log records {shim_records:?}, envwrap's {envwrap_records:?}"
            ));
        }
        // A change worth a warning is said the same way too, with the same
        // reason (envpolicy_core::loud, ::reason): what the shim says, envwrap
        // says; what envwrap says of no operand of its own, the shim says.
        if !case.audit {
            let by = loud_heads(&by_shim, "envshim: ");
            let ew = loud_heads(&by_envwrap, "envwrap: warning: ");
            let said = |v: &[(String, bool)], h: &str| v.iter().any(|(x, _)| x == h);
            let unsaid_by_envwrap = by.iter().filter(|(h, _)| !said(&ew, h));
            let unsaid_by_shim = ew.iter().filter(|(h, operand)| !operand && !said(&by, h));
            let missing: Vec<String> = unsaid_by_envwrap
                .chain(unsaid_by_shim)
                .map(|(h, _)| s.redact(h))
                .collect();
            if !missing.is_empty() {
                differ.push(format!(
                    "warnings one front end gives and the other not: {missing:?}"
                ));
            }
            if !by.is_empty() {
                seen.loud += 1;
            }
        }
        let alone = child_of(&by_supervisor);
        // The supervisor alone warns as the shim warns, in the same words
        // (envwrap: prefix apart), of the launcher's exec of the program
        // (what it says of envwrap's exec of the launcher is left out).
        if !case.audit && alone.code == Some(0) && shim_child.code == Some(0) {
            let by = loud_heads(&by_shim, "envshim: ");
            let mut sv = loud_heads(&by_supervisor, "envwrap: ");
            sv.retain(|(h, _)| !h.contains(&launcher_named));
            if by != sv {
                let shown = |v: &[(String, bool)]| -> Vec<String> {
                    v.iter().map(|(h, _)| s.redact(h)).collect()
                };
                differ.push(format!(
                    "the supervisor alone warns {:?} where the shim warns {:?}",
                    shown(&sv),
                    shown(&by)
                ));
            }
        }
        seen.count(&shim_child, &alone, &entries, case.dotenv.is_some());
        if case.secret_here && shim_child.code == Some(0) {
            seen.delivered += 1;
        }
        if alone != expected_alone {
            differ.push(format!(
                "supervisor alone: {}, where the table says {}\n--- its run ---\n{}",
                shown(&alone),
                shown(&expected_alone),
                by_supervisor.report()
            ));
        }
        if !differ.is_empty() {
            by_shim.fail(&format!(
                "seed {seed}, case {k}: the front ends disagree.\npolicy:\n{}\nmanaged layer:\n{}\nenv names: {:?}\nargc {}\nshim: {}\n{}\n--- the shim's run ---",
                s.redact(&case.policy),
                managed.as_deref().unwrap_or("(none)\n"),
                case.env.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
                argv.len(),
                shown(&shim_child),
                differ.join("\n"),
            ));
        }
    }
    assert!(
        seen.all_seen(),
        "seed {seed}: {cases} cases did not cover every kind of outcome: {seen:?}"
    );
}
