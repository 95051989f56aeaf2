//! How long one exec decision takes, against examples/loop.toml.
//!
//! `core/N` is the allocation-free path libenvshim.so runs between fork and exec
//! (buffers allocated once, outside the timing); `owned/N` is the std path envwrap
//! and the Rust API use. N is the number of environment variables: the bar is at
//! most 100 ns per variable, and linear. `argv/1MiB` scans one mebibyte of argv.
//!
//! Run: `cargo bench -p envpolicy --bench decide`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use envpolicy::decide::{self, Action, Emit, EnvRequest, EnvScratch, Rule, Verdict};
use envpolicy::outcome;
use std::hint::black_box;
use std::path::PathBuf;

fn policy() -> envpolicy::Compiled {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/loop.toml");
    envpolicy::load::load(&path).expect("examples/loop.toml compiles")
}

/// A realistic environment of `n` variables: a shell's usual names, a few
/// credentials, locale names, and filler with values of typical length.
fn environment(n: usize) -> Vec<Vec<u8>> {
    let fixed = [
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games",
        "HOME=/home/agent",
        "USER=agent",
        "SHELL=/bin/bash",
        "LANG=en_US.UTF-8",
        "LC_CTYPE=en_US.UTF-8",
        "TERM=tmux-256color",
        "TZ=Europe/Berlin",
        "JIRA_API_TOKEN=opaque-value-for-bench-0001",
        "THE_LOOP_INSTANCE=i1",
        "HTTPS_PROXY=http://proxy.example.invalid:3128",
        "LD_LIBRARY_PATH=/opt/lib",
    ];
    let mut env: Vec<Vec<u8>> = fixed.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut i = 0;
    while env.len() < n {
        env.push(format!("APP_SETTING_{i}=value-{i}-{}", "x".repeat(i % 40)).into_bytes());
        i += 1;
    }
    env.truncate(n);
    env
}

/// One decision for `/usr/bin/tmux` on `env`, in the caller's buffers.
fn decide_tmux(
    policy: &envpolicy::Policy<'_>,
    env: &[&[u8]],
    env_files: &[Option<&[u8]>],
    verdicts: &mut [Verdict],
    seen: &mut [u32],
    emits: &mut [Emit],
    bytes: &mut [u8],
) -> decide::EnvSummary {
    let req = EnvRequest {
        program: b"/usr/bin/tmux",
        identity: envpolicy::identity::Identity::itself(b"/usr/bin/tmux"),
        env,
        env_files,
        preload: None,
        policy_entry: None,
        hint: None,
        file_values: None,
        file_judged: None,
        renamed_files: 0,
        parent_env: &[],
        secrets: &[],
        routed: false,
    };
    let mut scratch = EnvScratch {
        verdicts,
        seen,
        emits,
        bytes,
    };
    black_box(decide::decide_env(policy, black_box(&req), &mut scratch).expect("fits"))
}

fn bench(c: &mut Criterion) {
    let compiled = policy();
    let policy = compiled.policy();
    let files = outcome::read_env_files(&policy);
    let file_refs: Vec<Option<&[u8]>> = files.iter().map(|f| f.as_deref()).collect();

    let mut group = c.benchmark_group("core");
    for n in [10usize, 100, 1_000, 10_000] {
        let env = environment(n);
        let refs: Vec<&[u8]> = env.iter().map(Vec::as_slice).collect();
        let sizes = decide::scratch_sizes(&policy, n, 0);
        let mut verdicts = vec![Verdict::new(Action::Keep, Rule::BaseAll); sizes.verdicts];
        let mut seen = vec![0u32; sizes.seen];
        let mut emits = vec![Emit::Input(0); sizes.emits];
        let mut bytes = vec![0u8; 4096];
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                decide_tmux(
                    &policy,
                    &refs,
                    &file_refs,
                    &mut verdicts,
                    &mut seen,
                    &mut emits,
                    &mut bytes,
                )
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("owned");
    for n in [100usize, 10_000] {
        let env = environment(n);
        let argv: Vec<Vec<u8>> = [
            "tmux",
            "new-session",
            "-d",
            "-e",
            "THE_LOOP_INSTANCE=i1",
            "claude",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                black_box(outcome::decide(
                    &policy,
                    b"/usr/bin/tmux",
                    &argv,
                    &env,
                    &[],
                    &files,
                ))
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("argv");
    let env = environment(100);
    let big: Vec<Vec<u8>> = vec![b"prog".to_vec(), vec![b'a'; 1 << 20]];
    group.throughput(Throughput::Bytes(1 << 20));
    group.bench_function("1MiB", |b| {
        b.iter(|| {
            black_box(outcome::decide(
                &policy,
                b"/usr/bin/prog",
                &big,
                &env,
                &[],
                &files,
            ))
        })
    });
    group.finish();
}

/// The exec decision at 100 variables with 0 or 3 credential values to search
/// for (docs/adr/0017: every other value at least as long as the shortest is
/// searched for each), under the built-in default and examples/loop.toml.
fn bench_copies(c: &mut Criterion) {
    let policies = [
        ("builtin", envpolicy::load::builtin_default()),
        ("loop", policy()),
    ];
    let mut group = c.benchmark_group("copies");
    for (label, compiled) in &policies {
        let policy = compiled.policy();
        for creds in [0usize, 3] {
            let mut env = environment(100);
            // environment() holds one credential (JIRA_API_TOKEN): none, or three.
            env.retain(|e| !e.starts_with(b"JIRA_API_TOKEN="));
            if creds == 3 {
                env.truncate(97);
                env.push(b"JIRA_API_TOKEN=opaque-value-for-bench-0001".to_vec());
                env.push(format!("GH_TOKEN=ghp_{}", "a1B2".repeat(9)).into_bytes());
                env.push(
                    b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_vec(),
                );
            }
            let refs: Vec<&[u8]> = env.iter().map(Vec::as_slice).collect();
            let sizes = decide::scratch_sizes(&policy, refs.len(), 0);
            let mut verdicts = vec![Verdict::new(Action::Keep, Rule::BaseAll); sizes.verdicts];
            let mut seen = vec![0u32; sizes.seen];
            let mut emits = vec![Emit::Input(0); sizes.emits];
            let mut bytes = vec![0u8; 4096];
            let files = outcome::read_env_files(&policy);
            let file_refs: Vec<Option<&[u8]>> = files.iter().map(|f| f.as_deref()).collect();
            group.bench_function(format!("{label}/{creds}"), |b| {
                b.iter(|| {
                    decide_tmux(
                        &policy,
                        &refs,
                        &file_refs,
                        &mut verdicts,
                        &mut seen,
                        &mut emits,
                        &mut bytes,
                    )
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench, bench_copies);
criterion_main!(benches);
