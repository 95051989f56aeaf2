//! Bad input: the hook must not crash and must not drop a variable silently
//! on NULL argv, NULL envp, envp entries without `=`, duplicate names (the first copy
//! wins, also for `LD_PRELOAD`), non-UTF-8 bytes, a 1 MiB value, and an environment
//! near ARG_MAX.
//!
//! Method: a C program execs (or posix_spawns) the printenv helper with argv and envp
//! read byte for byte from files the test writes. Every case runs twice, without and
//! with the shim (built-in policy), and the child's /proc/self/environ under the shim
//! must equal the one without it, minus exactly what the policy removes (credentials,
//! entries without `=`, later copies of a name), plus the shim's own `LD_PRELOAD`
//! entry at the end. Where Linux refuses the exec (a single string over 128 KiB is
//! E2BIG), the errno must be the same with and without the shim.

use envshim_e2e::*;

/// `envexec MODE PROG ARGV_FILE ENV_FILE`. MODE is `execve` or `posix_spawn`. Each file
/// holds NUL-terminated entries; the name `-null` passes a NULL array instead.
/// A failure prints `envexec: FN failed: errno=N` and exits 71.
const ENVEXEC_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char **load(const char *path) {
    if (strcmp(path, "-null") == 0) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { perror(path); exit(70); }
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) exit(70);
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) { perror(path); exit(70); }
        got += (size_t)r;
    }
    close(fd);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += buf[i] == '\0';
    char **v = calloc(count + 1, sizeof *v);
    if (!v) exit(70);
    size_t k = 0, start = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\0') { v[k++] = buf + start; start = i + 1; }
    }
    v[k] = NULL;
    return v;
}

int main(int argc, char **argv) {
    if (argc != 5) return 64;
    char **a = load(argv[3]), **e = load(argv[4]);
    if (strcmp(argv[1], "execve") == 0) {
        execve(argv[2], a, e);
        int err = errno;
        fprintf(stderr, "envexec: execve failed: errno=%d (%s)\n", err, strerror(err));
        return 71;
    }
    pid_t pid;
    int r = posix_spawn(&pid, argv[2], NULL, NULL, a, e);
    if (r != 0) {
        fprintf(stderr, "envexec: posix_spawn failed: errno=%d (%s)\n", r, strerror(r));
        return 71;
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) return 72;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Execve,
    PosixSpawn,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Execve => "execve",
            Mode::PosixSpawn => "posix_spawn",
        }
    }
}

/// One exec's input: argv and envp (None = a NULL array).
struct Case {
    argv: Option<Vec<Vec<u8>>>,
    env: Option<Vec<Vec<u8>>>,
}

fn write_entries(sb: &Sandbox, name: &str, entries: &Option<Vec<Vec<u8>>>) -> String {
    match entries {
        None => "-null".to_string(),
        Some(v) => {
            let mut bytes = Vec::new();
            for e in v {
                assert!(!e.contains(&0), "an entry cannot hold NUL");
                bytes.extend_from_slice(e);
                bytes.push(0);
            }
            sb.write(name, bytes).to_string_lossy().into_owned()
        }
    }
}

fn run(sb: &Sandbox, mode: Mode, case: &Case, shim: bool) -> Outcome {
    let a = write_entries(sb, "argv.bin", &case.argv);
    let e = write_entries(sb, "env.bin", &case.env);
    let mut c = sb.cmd(compile_c("envexec", ENVEXEC_C));
    c.arg(mode.as_str()).arg(printenv_bin()).arg(a).arg(e);
    if shim {
        c.with_shim();
    } else {
        c.allow_secrets_in_stdout();
    }
    c.run()
}

#[track_caller]
fn report(o: &Outcome) -> PrintenvReport {
    if !o.status.success() {
        o.fail("expected the exec to succeed");
    }
    PrintenvReport::parse(&o.stdout).unwrap_or_else(|e| o.fail(&e))
}

fn name_of(entry: &[u8]) -> &[u8] {
    match entry.iter().position(|&b| b == b'=') {
        Some(i) => &entry[..i],
        None => entry,
    }
}

/// Entry names for messages (lossy; never values).
fn names(entries: &[Vec<u8>]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(name_of(e)).into_owned())
        .collect()
}

/// The environment the child should see under the shim: `plain` (what it saw
/// without the shim) minus the entries `removed` says the policy removes, with every
/// `LD_PRELOAD` entry taken out and the shim's merged entry appended (the shim's
/// path, then the first copy's value, if there was one).
fn expected_under_shim(plain: &[Vec<u8>], removed: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut first_preload: Option<Vec<u8>> = None;
    for e in plain {
        if name_of(e) == b"LD_PRELOAD" && e.contains(&b'=') {
            if first_preload.is_none() {
                first_preload = Some(e[b"LD_PRELOAD=".len()..].to_vec());
            }
            continue;
        }
        if !removed(e) {
            out.push(e.clone());
        }
    }
    // Rule 8, under the built-in default: `ENVSHIM_POLICY=:builtin`, then the shim.
    let entry = envpolicy::lookup::BUILTIN_POLICY_ENTRY;
    out.push(entry.strip_suffix(b"\0").unwrap_or(entry).to_vec());
    let mut preload = format!("LD_PRELOAD={}", shim_path_string()).into_bytes();
    if let Some(v) = first_preload.filter(|v| !v.is_empty()) {
        preload.push(b':');
        preload.extend_from_slice(&v);
    }
    out.push(preload);
    out
}

#[track_caller]
fn assert_env_eq(what: &str, got: &[Vec<u8>], want: &[Vec<u8>]) {
    if got != want {
        let missing: Vec<String> = names(
            &want
                .iter()
                .filter(|e| !got.contains(e))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let extra: Vec<String> = names(
            &got.iter()
                .filter(|e| !want.contains(e))
                .cloned()
                .collect::<Vec<_>>(),
        );
        panic!(
            "{what}: the environment under the shim is not the one without it minus what the \
             policy removes.\n  missing (dropped silently?): {missing:?}\n  unexpected: \
             {extra:?}\n  got {} entries, want {} (names in order: got {:?}; want {:?})",
            got.len(),
            want.len(),
            names(got).into_iter().take(40).collect::<Vec<_>>(),
            names(want).into_iter().take(40).collect::<Vec<_>>()
        );
    }
}

fn basic_argv() -> Vec<Vec<u8>> {
    vec![b"printenv".to_vec(), b"arg one".to_vec(), b"".to_vec()]
}

/// Compare a case both ways; `removed` names what the policy may remove.
#[track_caller]
fn check(what: &str, sb: &Sandbox, mode: Mode, case: &Case, removed: impl Fn(&[u8]) -> bool) {
    let plain = report(&run(sb, mode, case, false));
    let o = run(sb, mode, case, true);
    let shimmed = report(&o);
    assert_eq!(
        plain.argv,
        shimmed.argv,
        "{what} ({}): argv differs under the shim",
        mode.as_str()
    );
    let want = expected_under_shim(&plain.proc_environ, removed);
    assert_env_eq(
        &format!("{what} ({})", mode.as_str()),
        &shimmed.proc_environ,
        &want,
    );
    sb.secrets().assert_absent(what, &shimmed.all_bytes());
}

fn is_credential(sb: &Sandbox) -> impl Fn(&[u8]) -> bool + '_ {
    move |e: &[u8]| sb.secrets().names().any(|n| name_of(e) == n.as_bytes())
}

fn secret_entries(sb: &Sandbox) -> Vec<Vec<u8>> {
    sb.secrets()
        .iter()
        .map(|s| s.assignment().into_bytes())
        .collect()
}

#[test]
fn null_argv() {
    let sb = Sandbox::new("bad_null_argv");
    let mut env = vec![b"A=1".to_vec()];
    env.extend(secret_entries(&sb));
    env.push(b"Z=last".to_vec());
    let case = Case {
        argv: None,
        env: Some(env),
    };
    // execve only: Linux accepts a NULL argv (and gives the program an empty argv[0]),
    // but glibc's own posix_spawn dereferences it and crashes, shim or no shim.
    check("NULL argv", &sb, Mode::Execve, &case, is_credential(&sb));
}

#[test]
fn null_envp() {
    let sb = Sandbox::new("bad_null_envp");
    let case = Case {
        argv: Some(basic_argv()),
        env: None,
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        let plain = report(&run(&sb, mode, &case, false));
        assert!(plain.proc_environ.is_empty());
        check("NULL envp", &sb, mode, &case, |_| false);
    }
    // NULL argv and NULL envp at once.
    let both = Case {
        argv: None,
        env: None,
    };
    check("NULL argv and envp", &sb, Mode::Execve, &both, |_| false);
}

#[test]
fn entries_without_equals_and_empty_names() {
    let sb = Sandbox::new("bad_no_equals");
    let env: Vec<Vec<u8>> = vec![
        b"A=1".to_vec(),
        b"NOEQUALS".to_vec(),
        b"B=two".to_vec(),
        b"=empty-name".to_vec(),
        b"".to_vec(),
        b"C=".to_vec(),
        b"D==starts-with-equals".to_vec(),
    ];
    let case = Case {
        argv: Some(basic_argv()),
        env: Some(env),
    };
    // Without the shim the kernel passes them all through.
    let plain = report(&run(&sb, Mode::Execve, &case, false));
    assert_eq!(plain.proc_environ.len(), 7);
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        // The policy strips exactly the entries without '=' and with an empty name
        // (normalise.no-equals, normalise.empty-name); C= and D==... are variables.
        check("entries without '='", &sb, mode, &case, |e| {
            !e.contains(&b'=') || e.starts_with(b"=")
        });
    }
}

#[test]
fn duplicate_names_first_copy_wins_also_for_ld_preload() {
    let sb = Sandbox::new("bad_duplicates");
    let lib = |tag: &str| {
        compile_c_with(
            &format!("dup-preload-{tag}"),
            &format!("int envshim_e2e_dup_{tag};\n"),
            &["-shared", "-fPIC"],
        )
    };
    let (a, b) = (lib("a"), lib("b"));
    let env: Vec<Vec<u8>> = vec![
        b"DUP=first".to_vec(),
        b"PATH=/usr/bin:/bin".to_vec(),
        format!("LD_PRELOAD={}", a.display()).into_bytes(),
        b"DUP=second".to_vec(),
        b"PATH=/tmp/evil".to_vec(),
        format!("LD_PRELOAD={}", b.display()).into_bytes(),
        b"OTHER=x".to_vec(),
    ];
    let case = Case {
        argv: Some(basic_argv()),
        env: Some(env),
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        let plain = report(&run(&sb, mode, &case, false));
        assert_eq!(plain.proc_environ.len(), 7, "the kernel keeps duplicates");
        let o = run(&sb, mode, &case, true);
        let r = report(&o);
        check("duplicate names", &sb, mode, &case, |e| {
            e == b"DUP=second" || e == b"PATH=/tmp/evil"
        });
        // Spelled out: the first copies, once each, and the first LD_PRELOAD behind
        // the shim; the second library is gone.
        assert_eq!(r.get("DUP"), Some(&b"first"[..]));
        assert_eq!(r.get("PATH"), Some(&b"/usr/bin:/bin"[..]));
        let preload = format!("{}:{}", shim_path_string(), a.display());
        assert_eq!(r.get("LD_PRELOAD"), Some(preload.as_bytes()));
        for n in ["DUP", "PATH", "LD_PRELOAD"] {
            assert_eq!(
                r.names().iter().filter(|x| *x == n).count(),
                1,
                "{n} is there more than once under the shim"
            );
        }
        assert_eq!(r.get_libc("DUP"), Some(&b"first"[..]));
    }
}

#[test]
fn non_utf8_bytes() {
    let sb = Sandbox::new("bad_non_utf8");
    let env: Vec<Vec<u8>> = vec![
        b"LATIN1=caf\xe9".to_vec(),
        b"N\xffAME=v\xfe\x80".to_vec(),
        b"\xc3\xa9T\xc3\xa9=\xc3\xa9t\xc3\xa9".to_vec(),
        b"BROKEN=\xc3\x28\xa0\xa1".to_vec(),
        b"CTRL=\x01\x02\x1b[0m\x7f".to_vec(),
        [
            b"GH_TOKEN=".as_slice(),
            sb.secrets().value("GH_TOKEN").as_bytes(),
        ]
        .concat(),
        b"LAST=\xff".to_vec(),
    ];
    let argv: Vec<Vec<u8>> = vec![
        b"printenv".to_vec(),
        b"\xff\xfe".to_vec(),
        b"caf\xe9".to_vec(),
        b"\xe2\x82".to_vec(),
    ];
    let case = Case {
        argv: Some(argv),
        env: Some(env),
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        check("non-UTF-8 bytes", &sb, mode, &case, |e| {
            name_of(e) == b"GH_TOKEN"
        });
    }
}

/// Linux refuses a single argv or envp string longer than MAX_ARG_STRLEN (32 pages,
/// 128 KiB) with E2BIG: with the shim the errno must be the same, and a value just
/// under the limit must arrive whole.
#[test]
fn one_mebibyte_value() {
    let sb = Sandbox::new("bad_1mib");
    let big = |n: usize| {
        let mut v = b"BIG=".to_vec();
        v.extend((0..n).map(|i| b'a' + (i % 26) as u8));
        v
    };
    let mib = Case {
        argv: Some(basic_argv()),
        env: Some(vec![b"A=1".to_vec(), big(1 << 20), b"Z=2".to_vec()]),
    };
    let mut argv = basic_argv();
    argv.push(vec![b'x'; 1 << 20]);
    let mib_arg = Case {
        argv: Some(argv),
        env: Some(vec![b"A=1".to_vec()]),
    };
    for (what, case) in [("1 MiB value", &mib), ("1 MiB argument", &mib_arg)] {
        for mode in [Mode::Execve, Mode::PosixSpawn] {
            let plain = run(&sb, mode, case, false);
            let shimmed = run(&sb, mode, case, true);
            assert_eq!(
                reported_errno(&plain.stderr),
                Some(libc::E2BIG),
                "{what} without the shim\n{}",
                plain.report()
            );
            assert_eq!(
                reported_errno(&shimmed.stderr),
                reported_errno(&plain.stderr),
                "{what} ({}): a different error under the shim\n{}",
                mode.as_str(),
                shimmed.report()
            );
            assert!(shimmed.stdout.is_empty(), "{}", shimmed.report());
        }
    }

    // Just under the limit (128 KiB including "BIG=" and the NUL): both ways it
    // arrives whole, next to a credential the shim removes.
    let limit = 32 * 4096;
    let mut env = vec![big(limit - 5)];
    env.push(
        [
            b"GH_TOKEN=".as_slice(),
            sb.secrets().value("GH_TOKEN").as_bytes(),
        ]
        .concat(),
    );
    let under = Case {
        argv: Some(basic_argv()),
        env: Some(env),
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        check("a value just under 128 KiB", &sb, mode, &under, |e| {
            name_of(e) == b"GH_TOKEN"
        });
    }
}

/// How much argv + envp the kernel takes: min(RLIMIT_STACK / 4, 3/4 of 8 MiB),
/// pointers included.
fn arg_limit() -> usize {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into a valid, owned struct.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) };
    let stack = if r == 0 && rl.rlim_cur != libc::RLIM_INFINITY {
        rl.rlim_cur as usize
    } else {
        8 << 20
    };
    (stack / 4).min(6 << 20)
}

/// An environment of small variables filling the kernel's limit to within 64 KiB,
/// with every seeded credential scattered through it.
fn near_limit_env(sb: &Sandbox) -> Vec<Vec<u8>> {
    let budget = arg_limit() - (64 << 10);
    let ptr = std::mem::size_of::<usize>();
    let mut env = Vec::new();
    let mut used = 0;
    let secrets = secret_entries(sb);
    let mut i = 0usize;
    while used < budget {
        let e = if i % 2500 == 1250 && i / 2500 < secrets.len() {
            secrets[i / 2500].clone()
        } else {
            format!("V{i:06}={}", "v".repeat(48 + i % 17)).into_bytes()
        };
        used += e.len() + 1 + ptr;
        env.push(e);
        i += 1;
    }
    env
}

#[test]
fn environment_near_arg_max() {
    let sb = Sandbox::new("bad_arg_max");
    let env = near_limit_env(&sb);
    let n = env.len();
    assert!(n > 10_000, "only {n} variables");
    let case = Case {
        argv: Some(basic_argv()),
        env: Some(env),
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        check(
            "an environment near ARG_MAX",
            &sb,
            mode,
            &case,
            is_credential(&sb),
        );
    }
}

/// Past the limit: the kernel refuses with E2BIG, and so must the shim, never by
/// passing a shortened environment.
#[test]
fn environment_over_arg_max_is_e2big_both_ways() {
    let sb = Sandbox::new("bad_over_arg_max");
    let mut env = near_limit_env(&sb);
    for i in 0..4000 {
        env.push(format!("W{i:05}={}", "w".repeat(60)).into_bytes());
    }
    let case = Case {
        argv: Some(basic_argv()),
        env: Some(env),
    };
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        let plain = run(&sb, mode, &case, false);
        let shimmed = run(&sb, mode, &case, true);
        assert_eq!(
            reported_errno(&plain.stderr),
            Some(libc::E2BIG),
            "{}",
            plain.report()
        );
        assert_eq!(
            reported_errno(&shimmed.stderr),
            Some(libc::E2BIG),
            "{} under the shim\n{}",
            mode.as_str(),
            shimmed.report()
        );
    }
}

/// At the exact edge: the largest environment that still execs without the shim. The
/// shim has to add its own `LD_PRELOAD` entry, which may no longer fit: then the exec
/// must fail with E2BIG (the kernel's or the shim's), and otherwise the child must get
/// every variable. A shortened environment is the one wrong answer.
#[test]
fn environment_at_the_exact_limit_is_whole_or_e2big() {
    let sb = Sandbox::new("bad_exact_limit");
    // No credentials here: the shim then only adds (its LD_PRELOAD entry).
    let creds = secret_entries(&sb);
    let base: Vec<Vec<u8>> = near_limit_env(&sb)
        .into_iter()
        .filter(|e| !creds.contains(e))
        .collect();
    let with_pad = |k: usize| {
        let mut env = base.clone();
        env.push([b"PAD=".as_slice(), &vec![b'p'; k]].concat());
        Case {
            argv: Some(basic_argv()),
            env: Some(env),
        }
    };
    let fits = |k: usize| run(&sb, Mode::Execve, &with_pad(k), false).status.success();
    // near_limit_env leaves 64 KiB: a pad under MAX_ARG_STRLEN (128 KiB) can cross it.
    let (mut lo, mut hi) = (0usize, 32 * 4096 - 8);
    assert!(fits(lo), "the base environment does not fit");
    assert!(!fits(hi), "the search range does not reach the limit");
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let case = with_pad(lo);
    for mode in [Mode::Execve, Mode::PosixSpawn] {
        let plain = report(&run(&sb, mode, &case, false));
        let o = run(&sb, mode, &case, true);
        if o.status.success() {
            eprintln!(
                "{}: at the limit, the shim's child got everything",
                mode.as_str()
            );
            let r = report(&o);
            let want = expected_under_shim(&plain.proc_environ, is_credential(&sb));
            assert_env_eq("the environment at the limit", &r.proc_environ, &want);
        } else {
            eprintln!("{}: at the limit, the shim's exec failed", mode.as_str());
            assert_eq!(
                reported_errno(&o.stderr),
                Some(libc::E2BIG),
                "{}: at the limit the shim must deliver everything or fail with E2BIG\n{}",
                mode.as_str(),
                o.report()
            );
            assert_eq!(o.status.code(), Some(71), "{}", o.report());
        }
    }
}

/// Every seeded credential twice, the seeded value in the FIRST copy and a second
/// value later (`first`), or a harmless first copy with the seeded value in the LAST
/// copy (`last`). Also a name the policy does not know, whose value alone has a
/// credential's shape, in both orders. Under the shim the child's
/// /proc/self/environ holds no copy of any credential name and none of the values.
#[test]
fn duplicate_credential_names_first_and_last_copy() {
    let sb = Sandbox::new("bad_dup_credentials");
    let secrets: Vec<&Secret> = sb.secrets().iter().collect();
    let entry = |name: &str, value: &str| format!("{name}={value}").into_bytes();
    let gh = sb.secrets().value("GH_TOKEN");
    // The seeded value first, then another seeded value (so both copies are values
    // the output is searched for).
    let mut first: Vec<Vec<u8>> = vec![b"A=1".to_vec()];
    first.extend(secrets.iter().map(|s| s.assignment().into_bytes()));
    first.push(b"MIDDLE=m".to_vec());
    for (i, s) in secrets.iter().enumerate() {
        let other = secrets[(i + 1) % secrets.len()];
        first.push(entry(s.name(), other.value()));
    }
    first.push(entry("SHAPED", gh));
    first.push(entry("SHAPED", "plain-second-copy"));
    first.push(b"Z=last".to_vec());
    // A harmless first copy, then the seeded value last.
    let mut last: Vec<Vec<u8>> = vec![b"A=1".to_vec()];
    last.extend(
        secrets
            .iter()
            .map(|s| entry(s.name(), "harmless-first-copy")),
    );
    last.push(b"MIDDLE=m".to_vec());
    last.extend(secrets.iter().map(|s| s.assignment().into_bytes()));
    last.push(entry("SHAPED", "plain-first-copy"));
    last.push(entry("SHAPED", gh));
    last.push(b"Z=last".to_vec());

    for (what, env) in [("first copy", first), ("last copy", last)] {
        let case = Case {
            argv: Some(basic_argv()),
            env: Some(env.clone()),
        };
        for mode in [Mode::Execve, Mode::PosixSpawn] {
            let m = mode.as_str();
            // Control: without the shim the kernel passes every copy.
            let plain = report(&run(&sb, mode, &case, false));
            assert_eq!(
                plain.proc_environ, env,
                "{what} ({m}): the kernel keeps every copy"
            );
            let o = run(&sb, mode, &case, true);
            let r = report(&o);
            for s in &secrets {
                assert!(
                    !r.names().iter().any(|n| n == s.name()),
                    "{what} ({m}): a copy of {} reached the child",
                    s.name()
                );
            }
            sb.secrets()
                .assert_absent(&format!("the child's report ({what}, {m})"), &r.all_bytes());
            for decoy in [&b"harmless-first-copy"[..], b"plain-second-copy"] {
                assert!(
                    !r.proc_environ.iter().any(|e| e.ends_with(decoy)),
                    "{what} ({m}): a later copy of a refused name survived"
                );
            }
            // A shaped value under an unknown name: in the `last` form the harmless
            // first copy is kept and the shaped later copy dropped as a duplicate;
            // in the `first` form the shaped first copy is refused and the later
            // copy dropped too.
            let shaped: Vec<&[u8]> = r
                .proc_environ
                .iter()
                .filter(|e| name_of(e) == b"SHAPED")
                .map(|e| &e[b"SHAPED=".len()..])
                .collect();
            match what {
                "first copy" => assert!(shaped.is_empty(), "{what} ({m}): SHAPED survived"),
                _ => assert_eq!(shaped, [&b"plain-first-copy"[..]], "{what} ({m})"),
            }
            assert_eq!(r.get("MIDDLE"), Some(&b"m"[..]), "{what} ({m})");
            assert_eq!(r.get("Z"), Some(&b"last"[..]), "{what} ({m})");
        }
    }
}
