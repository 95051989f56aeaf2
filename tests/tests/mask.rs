//! `envwrap --mask`: every credential value envwrap knows (the caller's
//! credentials, a `[[secret]]`'s value, and their base64 and escaped copies) is
//! replaced in what the command writes by `<NAME>`, the variable's name.
//!
//! In pipe mode (neither stdout nor stderr a terminal) stdout and stderr stay
//! apart, a value written one byte at a time is still masked, a large stream
//! comes out whole and in order, and envwrap exits with the command's status
//! or dies of its signal. On a terminal (a real tmux pane, on the sandbox's own
//! socket) the command runs on a pseudo-terminal of its own: it sees a
//! terminal, its size and size changes, full-screen programs work, Ctrl-C and
//! Ctrl-Z reach it, and the pane shows `<GH_TOKEN>`, never the token.
//! `--supervise` and the policy key `mask = true` mask too.
//!
//! The token is a seeded fake. Every output a `TestCommand` captures is checked
//! for it (a capture of the pane too), and no assertion prints it.

use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::envwrap_util::*;
use envshim_e2e::*;

/// What replaces GH_TOKEN's value.
const MARKER: &str = "<GH_TOKEN>";

/// A policy granting GH_TOKEN to each of `programs` (none: the token reaches
/// no program, and a command can only print it from a file it reads).
fn policy(sb: &Sandbox, programs: &[&str], extra: &str) -> PathBuf {
    let mut text = format!("version = 1\n{extra}");
    for p in programs {
        text.push_str(&format!(
            "\n[[grant]]\nname = \"GH_TOKEN\"\nprogram = \"{p}\"\n"
        ));
    }
    sb.write("policy.toml", text)
}

/// `envwrap [--mask] --policy P --` with GH_TOKEN in envwrap's environment.
fn wrapped(sb: &Sandbox, policy: &Path, mask: bool) -> TestCommand {
    let mut c = envwrap(sb);
    if mask {
        c.arg("--mask");
    }
    c.arg("--policy")
        .arg(policy)
        .arg("--")
        .env("GH_TOKEN", sb.secrets().value("GH_TOKEN"));
    c
}

/// The token in a file of the sandbox (with a newline, as `echo` writes it).
fn token_file(sb: &Sandbox) -> PathBuf {
    sb.write("token", format!("{}\n", sb.secrets().value("GH_TOKEN")))
}

/// Write a Python script into the sandbox; returns its path.
fn script(sb: &Sandbox, name: &str, text: &str) -> PathBuf {
    sb.write(name, text)
}

/// Standard base64 with padding (RFC 4648 §4); `url` for the URL-safe alphabet.
fn base64(input: &[u8], url: bool) -> String {
    envshim_e2e::secrets::base64(input, url, true)
}

/// The base64 text that depends on `value`'s bytes alone, at each of the three
/// alignments a stream can put it at, in both alphabets: whatever comes before
/// and after the value, the base64 of the stream holds each of these for its
/// alignment. Finding none is finding no base64 copy of the value.
fn base64_cores(value: &[u8]) -> Vec<String> {
    let mut cores = Vec::new();
    for skip in 0..3 {
        let rest = &value[skip..];
        let whole = &rest[..rest.len() / 3 * 3];
        for url in [false, true] {
            cores.push(base64(whole, url));
        }
    }
    cores
}

#[track_caller]
fn stdout_is(o: &Outcome, want: &str) {
    if o.stdout_str() != want {
        o.fail(&format!("expected stdout {want:?}"));
    }
}

// ---------------------------------------------------------------- pipe mode

#[test]
fn a_granted_token_printed_to_a_pipe_shows_as_its_name() {
    let sb = Sandbox::new("mask_pipe_printenv");
    let p = policy(&sb, &["printenv"], "");
    // Control: the grant reaches printenv, which prints the value unmasked.
    let o = wrapped(&sb, &p, false)
        .args(["printenv", "GH_TOKEN"])
        .allow_secrets_in_stdout()
        .expect_success();
    if o.stdout_str() != format!("{}\n", sb.secrets().value("GH_TOKEN")) {
        o.fail("without --mask, printenv did not print the granted token (the control)");
    }
    // Masked: the same command's stdout is the marker. The harness fails the
    // run if any output holds the value.
    let o = wrapped(&sb, &p, true)
        .args(["printenv", "GH_TOKEN"])
        .expect_success();
    stdout_is(&o, &format!("{MARKER}\n"));
}

const OUT_AND_ERR: &str = r#"
import sys
t = open(sys.argv[1]).read().strip()
sys.stdout.write("out:" + t + "\n"); sys.stdout.flush()
sys.stderr.write("err:" + t + "\n"); sys.stderr.flush()
sys.stdout.write("out2\n"); sys.stdout.flush()
sys.stderr.write("err2\n"); sys.stderr.flush()
"#;

#[test]
fn stdout_and_stderr_stay_apart_and_both_are_masked() {
    let sb = Sandbox::new("mask_pipe_streams");
    let p = policy(&sb, &[], "");
    let tok = token_file(&sb);
    let py = script(&sb, "out_and_err.py", OUT_AND_ERR);
    let o = wrapped(&sb, &p, true)
        .arg(python3())
        .arg(&py)
        .arg(&tok)
        .expect_success();
    stdout_is(&o, &format!("out:{MARKER}\nout2\n"));
    // envwrap may write its own lines on stderr first (what the policy withheld).
    if !o.stderr_str().ends_with(&format!("err:{MARKER}\nerr2\n")) {
        o.fail("expected stderr to end with the command's two lines, masked");
    }
    if o.stderr_str().contains("out:") || o.stderr_str().contains("out2") {
        o.fail("stdout's lines reached stderr");
    }
}

/// Each byte its own write(2), a pause after each, alternating stdout and
/// stderr; at the end, the value's first three bytes with nothing after them.
const BYTE_BY_BYTE: &str = r#"
import os, sys, time
t = open(sys.argv[1], "rb").read().strip()
data = b"[" + t + b"]\n" + t[:3]
for i in range(len(data)):
    os.write(1, data[i:i + 1])
    os.write(2, data[i:i + 1])
    time.sleep(0.003)
"#;

#[test]
fn a_token_written_one_byte_at_a_time_is_masked() {
    let sb = Sandbox::new("mask_pipe_bytes");
    let p = policy(&sb, &[], "");
    let tok = token_file(&sb);
    let py = script(&sb, "bytes.py", BYTE_BY_BYTE);
    let o = wrapped(&sb, &p, true)
        .arg(python3())
        .arg(&py)
        .arg(&tok)
        .expect_success();
    // The tail `ghp` (the start of the value, then EOF) comes out as written.
    let want = format!("[{MARKER}]\nghp");
    stdout_is(&o, &want);
    if !o.stderr_str().ends_with(&want) {
        o.fail(&format!("expected stderr to end with {want:?}"));
    }
}

/// The base64 of the value after a prefix of 15 (`x-access-token:`, as git's
/// `http.extraheader` holds it), 0, 1 and 2 bytes: every alignment, in both
/// alphabets, one per line.
const BASE64_COPIES: &str = r#"
import base64, sys
t = open(sys.argv[1], "rb").read().strip()
for p in [b"x-access-token:", b"", b"a", b"ab"]:
    print("std:" + base64.b64encode(p + t).decode())
    print("url:" + base64.urlsafe_b64encode(p + t).decode())
"#;

#[test]
fn the_base64_of_a_token_at_every_alignment_is_masked() {
    let sb = Sandbox::new("mask_pipe_base64");
    let p = policy(&sb, &[], "");
    let tok = token_file(&sb);
    let py = script(&sb, "b64.py", BASE64_COPIES);
    let cores = base64_cores(sb.secrets().value("GH_TOKEN").as_bytes());
    // Control: unmasked, every alignment's core is there (so finding none below
    // means the mask removed them, not that the cores are wrong).
    let o = wrapped(&sb, &p, false)
        .arg(python3())
        .arg(&py)
        .arg(&tok)
        .expect_success();
    let out = o.stdout_str();
    for (i, core) in cores.iter().enumerate() {
        if !out.contains(core.as_str()) {
            o.fail(&format!(
                "control: base64 core {i} (not shown) missing unmasked"
            ));
        }
    }

    let o = wrapped(&sb, &p, true)
        .arg(python3())
        .arg(&py)
        .arg(&tok)
        .expect_success();
    let out = o.stdout_str();
    for (i, core) in cores.iter().enumerate() {
        if out.contains(core.as_str()) {
            o.fail(&format!(
                "token leaked: base64 copy {i} of 6 (alignment {}, {} alphabet) is in stdout",
                i / 2,
                if i % 2 == 0 { "standard" } else { "URL-safe" }
            ));
        }
    }
    let lines: Vec<&str> = out.lines().collect();
    if lines.len() != 8 || !lines.iter().all(|l| l.contains(MARKER)) {
        o.fail(&format!("expected 8 lines, each with {MARKER}"));
    }
}

/// The value percent-encoded (every reserved byte) and as a JSON string with
/// `/` escaped too, one per line.
const ESCAPED_COPIES: &str = r#"
import json, sys, urllib.parse
v = open(sys.argv[1]).read().rstrip("\n")
print("pct:" + urllib.parse.quote(v, safe=""))
print("json:" + json.dumps(v).replace("/", "\\/"))
"#;

#[test]
fn percent_encoded_and_json_escaped_copies_are_masked() {
    let sb = Sandbox::new("mask_pipe_escaped");
    let p = policy(&sb, &[], "");
    // A credential by name, whose value holds bytes that both encodings change.
    let j = sb.secrets().value("JIRA_API_TOKEN");
    let value = format!(
        "{}/{}+{}\"{}@{}",
        &j[..5],
        &j[5..10],
        &j[10..15],
        &j[15..20],
        &j[20..]
    );
    let file = sb.write("aws", format!("{value}\n"));
    let py = script(&sb, "escaped.py", ESCAPED_COPIES);
    let pct: String = value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let json = value.replace('"', "\\\"").replace('/', "\\/");
    let run = |mask: bool| {
        let mut c = wrapped(&sb, &p, mask);
        c.env("AWS_SECRET_ACCESS_KEY", &value)
            .arg(python3())
            .arg(&py)
            .arg(&file);
        c.expect_success()
    };
    // Control: unmasked, both copies are printed as computed here.
    let o = run(false);
    let out = o.stdout_str();
    if !out.contains(&pct) || !out.contains(&json) {
        o.fail("control: the escaped copies (not shown) are not in the unmasked stdout");
    }
    let o = run(true);
    let out = o.stdout_str();
    for (what, copy) in [("raw", &value), ("percent-encoded", &pct), ("JSON", &json)] {
        if out.contains(copy.as_str()) {
            o.fail(&format!(
                "token leaked: the {what} copy of AWS_SECRET_ACCESS_KEY is in stdout"
            ));
        }
    }
    let lines: Vec<&str> = out.lines().collect();
    let marker = "<AWS_SECRET_ACCESS_KEY>";
    if lines.len() != 2
        || !lines[0].starts_with("pct:")
        || !lines[1].starts_with("json:")
        || !lines.iter().all(|l| l.contains(marker))
    {
        o.fail(&format!(
            "expected a pct: and a json: line, each with {marker} (stdout not shown)"
        ));
    }
}

#[test]
fn a_secret_value_envwrap_can_read_is_masked() {
    let sb = Sandbox::new("mask_pipe_secret");
    // A value of no known shape, in no environment: only the [[secret]] names it.
    let value = format!("deploy-{}", sb.secrets().value("JIRA_API_TOKEN"));
    let source = sb.write("secrets/deploy", format!("{value}\n"));
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o600)).unwrap();
    let p = policy(
        &sb,
        &[],
        &format!(
            "\n[[secret]]\nname = \"DEPLOY_KEY\"\nfrom = \"file:{}\"\nprogram = \"/usr/bin/no-such-deploy-tool\"\n",
            source.display()
        ),
    );
    let run = |mask: bool| {
        let mut c = wrapped(&sb, &p, mask);
        c.args(["cat"]).arg(&source);
        if !mask {
            // The control prints the value (built from a seeded one) on purpose.
            c.allow_secrets_in_stdout();
        }
        c.expect_success()
    };
    let o = run(false);
    if o.stdout_str() != format!("{value}\n") {
        o.fail("control: cat did not print the source unmasked");
    }
    let o = run(true);
    if o.stdout_str().contains(&value) || o.stderr_str().contains(&value) {
        o.fail("token leaked: the secret's value is in the output");
    }
    stdout_is(&o, "<DEPLOY_KEY>\n");
}

// ------------------------------------------------------------- large output

/// The size of the large stream: 1 GiB, as issue 50 asks, spanning many
/// thousands of pipe buffers and every buffer size envwrap may use.
const LARGE_BYTES: usize = 1 << 30;
/// A token every this many bytes through it (plus one at the start and two
/// back to back at the end).
const LARGE_EVERY: usize = 32 << 20;

/// 1 MiB of numbered lines (no line like another, so a block moved, dropped or
/// doubled shows).
fn filler() -> Vec<u8> {
    let mut f = Vec::with_capacity(1 << 20);
    let mut n = 0u32;
    while f.len() < 1 << 20 {
        f.extend_from_slice(format!("filler line {n:08} of the mask test\n").as_bytes());
        n += 1;
    }
    f.truncate(1 << 20);
    f
}

/// The large stream with `value` at each token's place, in pieces to `out`:
/// the value, then segments of a numbered header, filler and the value (each
/// value at another offset in a 64 KiB pipe buffer), then the value twice.
/// Returns how many values it wrote.
fn large_stream(
    fill: &[u8],
    value: &[u8],
    mut out: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<usize> {
    out(value)?;
    out(b"\n")?;
    let mut count = 1;
    for i in 0..LARGE_BYTES / LARGE_EVERY {
        let header = format!("segment {i:06}\n");
        out(header.as_bytes())?;
        let mut left = LARGE_EVERY - header.len() - 64 - (i * 7919) % 65536;
        while left > 0 {
            let n = left.min(fill.len());
            out(&fill[..n])?;
            left -= n;
        }
        out(value)?;
        count += 1;
    }
    out(b"\nend:")?;
    out(value)?;
    out(value)?;
    Ok(count + 2)
}

/// Read `r` to its end, comparing it with the stream of `marker`s; `Err` says
/// where it first differs (never what it holds), and whether the value is in
/// what was read.
fn compare_large(
    mut r: impl Read,
    fill: &[u8],
    marker: &[u8],
    value: &[u8],
) -> Result<u64, String> {
    let mut at = 0u64;
    let mut buf = Vec::new();
    let mut problem = None;
    let compared = large_stream(fill, marker, |piece| {
        buf.resize(piece.len(), 0);
        let mut got = 0;
        while got < piece.len() {
            match r.read(&mut buf[got..])? {
                0 => {
                    problem = Some(format!("the output ended at byte {}", at + got as u64));
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                n => got += n,
            }
        }
        if let Some(i) = buf.iter().zip(piece).position(|(a, b)| a != b) {
            problem = Some(format!(
                "the output differs from the expected at byte {}",
                at + i as u64
            ));
            return Err(io::ErrorKind::InvalidData.into());
        }
        at += piece.len() as u64;
        Ok(())
    });
    let mut leaked = buf.windows(value.len()).any(|w| w == value);
    // Drain the rest (the command must not block on a full pipe), noting its
    // length and whether the value is in it (a copy across two reads too).
    let mut rest = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                rest += n as u64;
                carry.extend_from_slice(&chunk[..n]);
                leaked |= carry.windows(value.len()).any(|w| w == value);
                let keep = carry.len().saturating_sub(value.len());
                carry.drain(..keep);
            }
        }
    }
    match (compared, problem) {
        (Ok(_), None) if rest == 0 => Ok(at),
        (Ok(_), None) => Err(format!(
            "the output is {rest} bytes longer than the expected {at}"
        )),
        (_, problem) => Err(format!(
            "{}; {} bytes after it{}",
            problem.unwrap_or_else(|| "reading the output failed".into()),
            rest,
            if leaked {
                "; token leaked into the output"
            } else {
                ""
            }
        )),
    }
}

#[test]
fn a_large_stream_comes_out_whole_in_order_with_every_token_masked() {
    let sb = Sandbox::new("mask_pipe_large");
    let p = policy(&sb, &[], "");
    let token = sb.secrets().value("GH_TOKEN").as_bytes().to_vec();
    let fill = filler();
    let input = sb.join("large.txt");
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&input).unwrap());
    let count = large_stream(&fill, &token, |piece| w.write_all(piece)).unwrap();
    w.flush().unwrap();
    drop(w);
    let in_len = std::fs::metadata(&input).unwrap().len();
    let want_len = in_len - ((token.len() - MARKER.len()) * count) as u64;

    // Not a TestCommand: its output would be held whole, and searched whole for
    // every seeded value; this one is compared piece by piece as it comes.
    let mut cmd = Command::new(envwrap_bin());
    cmd.current_dir(sb.path())
        .env_remove("LD_PRELOAD")
        .env_remove("ENVSHIM_POLICY")
        .env_remove("TMUX")
        .env("ENVSHIM_CACHE_DIR", sb.join(".cache/envshim"))
        .env("TMUX_TMPDIR", sb.path());
    for name in SECRET_NAMES {
        cmd.env_remove(name);
    }
    cmd.env("GH_TOKEN", std::str::from_utf8(&token).unwrap())
        .arg("--mask")
        .arg("--policy")
        .arg(&p)
        .args(["--", "cat"])
        .arg(&input)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start envwrap");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (marker, value) = (MARKER.as_bytes().to_vec(), token.clone());
    let fill2 = fill.clone();
    let out_thread = std::thread::spawn(move || compare_large(stdout, &fill2, &marker, &value));
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let deadline = start + Duration::from_secs(300);
    let mut timed_out = false;
    loop {
        if pidfd::exit_status_unreaped(&mut child).unwrap().is_some() {
            break;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            pidfd::signal_group_of_child(&mut child, libc::SIGKILL);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let compared = out_thread.join().unwrap();
    let err = err_thread.join().unwrap();
    let status = child.wait().unwrap();
    let elapsed = start.elapsed();
    sb.secrets().assert_absent("envwrap's stderr", &err);
    let err = sb.secrets().redact(&err);
    assert!(
        !timed_out,
        "envwrap --mask -- cat of {in_len} bytes did not finish in 300 s; stderr:\n{err}"
    );
    assert!(
        status.success(),
        "envwrap --mask -- cat ended with {status:?}; stderr:\n{err}"
    );
    match compared {
        Ok(n) => assert_eq!(n, want_len, "the output's length"),
        Err(why) => panic!(
            "the masked output of {in_len} bytes ({count} tokens) is not the input with each \
             token replaced by {MARKER} ({want_len} bytes): {why}"
        ),
    }
    eprintln!("mask: {in_len} bytes through envwrap --mask -- cat in {elapsed:?}");
}

// -------------------------------------------------------- status and signals

#[test]
fn envwrap_exits_with_the_commands_status_or_dies_of_its_signal() {
    let sb = Sandbox::new("mask_pipe_status");
    let p = policy(&sb, &[], "");
    let tok = token_file(&sb);
    // Each command prints the token first: the output is masked (envwrap
    // relays it), and the status still comes through.
    let cat = format!("cat {}", sh_quote(&tok.display().to_string()));
    let o = wrapped(&sb, &p, true)
        .args(["sh", "-c", &format!("{cat}; exit 7")])
        .expect_exit(7);
    stdout_is(&o, &format!("{MARKER}\n"));
    for (sig, name) in [(libc::SIGTERM, "TERM"), (libc::SIGKILL, "KILL")] {
        let o = wrapped(&sb, &p, true)
            .args(["sh", "-c", &format!("{cat}; kill -{name} $$")])
            .timeout(Duration::from_secs(20))
            .run();
        if o.timed_out || o.status.signal() != Some(sig) {
            o.fail(&format!(
                "expected envwrap to die of SIG{name}, as its command did"
            ));
        }
        stdout_is(&o, &format!("{MARKER}\n"));
    }
}

/// How many times each of two commands that end at once is run, on each of
/// [`QUICK_THREADS`] threads at once (the load widens the window below).
const QUICK_RUNS: usize = 50;
const QUICK_THREADS: usize = 4;

#[test]
fn a_command_that_ends_at_once_ends_envwrap_at_once() {
    // A command may end before envwrap is ready to hear of it (between its
    // fork and its watching for SIGCHLD): envwrap must still end. Seen hanging
    // in one run of 12 to 100; 400 runs catch that nearly always.
    let sb = Sandbox::new("mask_pipe_quick");
    let p = policy(&sb, &[], "");
    let one = |args: &[&str], what: &str, ok: &dyn Fn(&Outcome) -> bool| {
        let o = envwrap(&sb)
            .args(["--mask", "--no-preload", "--policy"])
            .arg(&p)
            .arg("--")
            .args(args)
            .env("GH_TOKEN", sb.secrets().value("GH_TOKEN"))
            .timeout(Duration::from_secs(10))
            .run();
        if o.timed_out || !ok(&o) {
            o.fail(&format!("envwrap --mask -- {}: {what}", args.join(" ")));
        }
    };
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..QUICK_THREADS)
            .map(|_| {
                scope.spawn(|| {
                    for _ in 0..QUICK_RUNS {
                        one(&["true"], "did not exit 0 by itself", &|o| {
                            o.status.success()
                        });
                        one(
                            &["sh", "-c", "kill -KILL $$"],
                            "did not die of its command's SIGKILL",
                            &|o| o.status.signal() == Some(libc::SIGKILL),
                        );
                    }
                })
            })
            .collect();
        for r in runs {
            if let Err(e) = r.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

// ---------------------------------------------------- --supervise and policy

#[test]
fn mask_with_supervise_masks_a_granted_token() {
    let sb = Sandbox::new("mask_supervise");
    let p = policy(&sb, &["printenv"], "");
    let mut c = envwrap(&sb);
    c.args(["--mask", "--supervise", "--policy"])
        .arg(&p)
        .args(["--", "printenv", "GH_TOKEN"])
        .env("GH_TOKEN", sb.secrets().value("GH_TOKEN"))
        .timeout(Duration::from_secs(120));
    let o = c.expect_success();
    stdout_is(&o, &format!("{MARKER}\n"));
}

#[test]
fn mask_true_in_the_policy_masks_without_the_flag() {
    let sb = Sandbox::new("mask_policy_key");
    let p = policy(&sb, &["printenv"], "mask = true\n");
    let o = wrapped(&sb, &p, false)
        .args(["printenv", "GH_TOKEN"])
        .expect_success();
    stdout_is(&o, &format!("{MARKER}\n"));
    // And a file the command reads, under the key alone.
    let tok = token_file(&sb);
    let o = wrapped(&sb, &p, false)
        .arg("cat")
        .arg(&tok)
        .expect_success();
    stdout_is(&o, &format!("{MARKER}\n"));
}

// ------------------------------------------------------------ a tmux pane

/// A session `mask` on the sandbox's tmux server whose pane runs
/// `envwrap --mask -- bash`, GH_TOKEN in its environment and granted to bash
/// (no shim: bash's children inherit what bash has). The server is killed when
/// the sandbox is dropped, on failure too.
fn masked_pane(sb: &Sandbox) {
    let p = policy(sb, &["bash"], "");
    start_session(sb, "mask", &masked_command(&p, "bash --norc --noprofile"));
    // The shell answers: a command's output, which the typed line cannot match.
    type_line(sb, "echo READY-$((40+2))");
    wait_line(sb, "the masked shell to start", "READY-42");
}

/// The pane's command line: `envwrap --mask` of `command` (shell words).
fn masked_command(policy: &Path, command: &str) -> String {
    format!(
        "{} --mask --no-preload --policy {} -- {command}",
        sh_quote(&envwrap_bin().display().to_string()),
        sh_quote(&policy.display().to_string())
    )
}

/// A session `name` whose pane runs `pane` (a shell command line), with
/// GH_TOKEN in its environment.
fn start_session(sb: &Sandbox, name: &str, pane: &str) {
    sb.tmux()
        .args(["new-session", "-d", "-s", name, "-x", "100", "-y", "30"])
        .args(["-e", &sb.secrets().get("GH_TOKEN").assignment()])
        .args([
            "-e",
            &format!("ENVSHIM_CACHE_DIR={}", sb.join(".cache/envshim").display()),
        ])
        .args(["-e", &format!("HOME={}", sb.path().display())])
        .arg(format!("exec {pane}"))
        .expect_success();
}

/// The pane's whole history, joined lines; `escapes`: with colours. The
/// harness fails the capture if it holds a seeded value.
fn capture(sb: &Sandbox, escapes: bool) -> String {
    capture_of(sb, "mask", escapes)
}

fn capture_of(sb: &Sandbox, target: &str, escapes: bool) -> String {
    let mut c = sb.tmux();
    c.args(["capture-pane", "-p", "-J", "-t", target, "-S", "-"]);
    if escapes {
        c.arg("-e");
    }
    c.expect_success().stdout_str()
}

/// Type `text` and Enter into the pane.
fn type_line(sb: &Sandbox, text: &str) {
    keys(sb, &["-l", text]);
    keys(sb, &["Enter"]);
}

fn keys(sb: &Sandbox, keys: &[&str]) {
    keys_to(sb, "mask", keys)
}

fn keys_to(sb: &Sandbox, target: &str, keys: &[&str]) {
    sb.tmux()
        .args(["send-keys", "-t", target])
        .args(keys)
        .expect_success();
}

fn has_line(screen: &str, line: &str) -> bool {
    screen.lines().any(|l| l.trim_end() == line)
}

/// Wait (20 s at most) until the pane holds the line `line`; returns the capture.
#[track_caller]
fn wait_line(sb: &Sandbox, what: &str, line: &str) -> String {
    wait_screen(sb, what, |s| has_line(s, line))
}

#[track_caller]
fn wait_screen(sb: &Sandbox, what: &str, cond: impl FnMut(&str) -> bool) -> String {
    wait_screen_of(sb, "mask", what, cond)
}

#[track_caller]
fn wait_screen_of(
    sb: &Sandbox,
    target: &str,
    what: &str,
    mut cond: impl FnMut(&str) -> bool,
) -> String {
    let mut last = String::new();
    let ok = sb.wait_for(
        || {
            last = capture_of(sb, target, false);
            cond(&last)
        },
        Duration::from_secs(20),
    );
    if !ok {
        panic!(
            "timed out waiting for {what}; the pane shows (redacted):\n{}",
            sb.secrets().redact(&last)
        );
    }
    last
}

/// The shell in pane `target` prints GH_TOKEN (granted to it), and the pane
/// shows the marker: the pane is masked.
#[track_caller]
fn pane_masks(sb: &Sandbox, target: &str) {
    keys_to(sb, target, &["-l", "printenv GH_TOKEN; echo PM-$((7+7))"]);
    keys_to(sb, target, &["Enter"]);
    let screen = wait_screen_of(sb, target, "printenv GH_TOKEN to run", |s| {
        has_line(s, "PM-14")
    });
    assert!(
        has_line(&screen, MARKER),
        "the pane does not show {MARKER} for printenv GH_TOKEN:\n{}",
        sb.secrets().redact(&screen)
    );
}

/// `text` without its CSI escape sequences.
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn pane_size(sb: &Sandbox) -> String {
    sb.tmux()
        .args([
            "display-message",
            "-p",
            "-t",
            "mask",
            "#{pane_height}x#{pane_width}",
        ])
        .expect_success()
        .stdout_str()
        .trim()
        .to_string()
}

/// Reports SIGWINCH with the terminal's new size, then exits.
const WINCH: &str = r#"
import os, signal, sys
def on_winch(sig, frame):
    s = os.get_terminal_size(1)
    sys.stdout.write("WINCH-%dx%d\n" % (s.lines, s.columns)); sys.stdout.flush()
    os._exit(0)
signal.signal(signal.SIGWINCH, on_winch)
sys.stdout.write("WINCH-READY\n"); sys.stdout.flush()
while True:
    signal.pause()
"#;

#[test]
fn a_tmux_pane_shows_the_name_and_the_command_sees_a_terminal() {
    let sb = Sandbox::new("mask_tmux_terminal");
    if !require(
        which("tmux").is_some(),
        "tmux is not installed (ci/install-test-deps installs it)",
    ) {
        return;
    }
    masked_pane(&sb);
    let tok = token_file(&sb);

    // The token, from the environment and from a file: the name only.
    type_line(&sb, "printenv GH_TOKEN; echo P-$((1+1))");
    let screen = wait_line(&sb, "printenv to run", "P-2");
    assert!(
        has_line(&screen, MARKER),
        "printenv's line is not {MARKER}:\n{}",
        sb.secrets().redact(&screen)
    );
    type_line(
        &sb,
        &format!(
            "cat {}; echo C-$((1+2))",
            sh_quote(&tok.display().to_string())
        ),
    );
    let screen = wait_line(&sb, "cat to run", "C-3");
    let markers = screen.lines().filter(|l| l.trim_end() == MARKER).count();
    assert_eq!(
        markers, 2,
        "expected two lines {MARKER} (printenv's and cat's)"
    );

    // A terminal on every stream.
    type_line(
        &sb,
        "test -t 0 && test -t 1 && test -t 2 && echo TTY-$((2+3))",
    );
    wait_line(
        &sb,
        "the command to see a terminal on stdin, stdout and stderr",
        "TTY-5",
    );

    // Colours when ls decides by isatty, and the escapes reach the pane.
    type_line(&sb, "ls --color=auto -d /; echo LS-$((2+4))");
    wait_line(&sb, "ls to run", "LS-6");
    let coloured = capture(&sb, true);
    let ok = coloured
        .lines()
        .any(|l| l.contains("\x1b[") && strip_escapes(l).trim_end() == "/");
    assert!(
        ok,
        "ls --color=auto did not colour / (no escape sequence on its line):\n{}",
        sb.secrets().redact(&coloured).escape_debug()
    );

    // The pane's size, and a change of it.
    let before = pane_size(&sb);
    type_line(&sb, "echo SZ-$(stty size | tr ' ' x)");
    wait_line(
        &sb,
        &format!("stty size to say {before}"),
        &format!("SZ-{before}"),
    );
    let py = script(&sb, "winch.py", WINCH);
    type_line(&sb, &format!("{} {}", python3().display(), py.display()));
    wait_line(&sb, "the SIGWINCH reporter to start", "WINCH-READY");
    sb.tmux()
        .args(["resize-window", "-t", "mask", "-x", "80", "-y", "24"])
        .expect_success();
    let after = pane_size(&sb);
    assert_ne!(before, after, "tmux did not resize the pane");
    wait_line(
        &sb,
        &format!("SIGWINCH with the size {after}"),
        &format!("WINCH-{after}"),
    );
    type_line(&sb, "echo SZ-$(stty size | tr ' ' x)");
    wait_line(
        &sb,
        &format!("stty size to say {after}"),
        &format!("SZ-{after}"),
    );

    let all = capture(&sb, false);
    sb.secrets().assert_absent("the pane", all.as_bytes());
}

#[test]
fn a_tmux_pane_runs_full_screen_programs_and_passes_ctrl_c_and_ctrl_z() {
    let sb = Sandbox::new("mask_tmux_keys");
    if !require(
        which("tmux").is_some(),
        "tmux is not installed (ci/install-test-deps installs it)",
    ) {
        return;
    }
    masked_pane(&sb);

    pane_masks(&sb, "mask");

    // Ctrl-C ends a foreground sleep at once; the shell lives on.
    type_line(&sb, "sleep 100");
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    keys(&sb, &["C-c"]);
    type_line(&sb, "echo INT-$((5+3))");
    wait_line(&sb, "the shell after Ctrl-C", "INT-8");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "Ctrl-C took {:?}",
        t.elapsed()
    );

    // Ctrl-Z stops it; the shell reports it and lives on.
    type_line(&sb, "sleep 100");
    std::thread::sleep(Duration::from_millis(300));
    keys(&sb, &["C-z"]);
    wait_screen(&sb, "bash to report the stopped job", |s| {
        s.lines()
            .any(|l| l.contains("Stopped") && l.contains("sleep 100"))
    });
    type_line(&sb, "kill -KILL %1; echo TSTP-$((5+5))");
    wait_line(&sb, "the shell after Ctrl-Z", "TSTP-10");

    // less: opens, and `q` alone (no Enter: raw mode) quits it.
    match which("less") {
        None => eprintln!("SKIPPED (less part): less is not installed"),
        Some(_) => {
            let f = sb.write("less.txt", "LESS-CONTENT-LINE\n".repeat(100));
            type_line(&sb, &format!("less {}", f.display()));
            wait_screen(&sb, "less to show the file", |s| {
                s.lines()
                    .filter(|l| l.trim_end() == "LESS-CONTENT-LINE")
                    .count()
                    >= 10
            });
            keys(&sb, &["q"]);
            type_line(&sb, "echo LESS-$((3+4))");
            wait_line(&sb, "the shell after less's q", "LESS-7");
        }
    }

    // vim: opens, takes typed text before any Enter, and :q! quits it.
    match which("vim") {
        None => eprintln!("SKIPPED (vim part): vim is not installed"),
        Some(_) => {
            let f = sb.write("vim.txt", "VIM-CONTENT-LINE\n");
            type_line(&sb, &format!("vim -u NONE -i NONE -N {}", f.display()));
            wait_line(&sb, "vim to show the file", "VIM-CONTENT-LINE");
            keys(&sb, &["-l", "OTYPED-IN-VIM"]);
            wait_line(&sb, "vim to show the typed line", "TYPED-IN-VIM");
            keys(&sb, &["Escape"]);
            keys(&sb, &["-l", ":q!"]);
            keys(&sb, &["Enter"]);
            type_line(&sb, "echo VIM-$((4+5))");
            wait_line(&sb, "the shell after vim's :q!", "VIM-9");
        }
    }
    let all = capture(&sb, false);
    sb.secrets().assert_absent("the pane", all.as_bytes());
}

/// Runs its arguments, then says how they ended (`ENDED -15`: killed by
/// SIGTERM) and stays, for the capture.
const RUNNER: &str = r#"
import subprocess, sys, time
r = subprocess.run(sys.argv[1:])
print("ENDED %d" % r.returncode, flush=True)
time.sleep(300)
"#;

#[test]
fn a_tmux_pane_ends_with_the_commands_status_or_signal() {
    let sb = Sandbox::new("mask_tmux_status");
    if !require(
        which("tmux").is_some(),
        "tmux is not installed (ci/install-test-deps installs it)",
    ) {
        return;
    }
    let p = policy(&sb, &["bash"], "");
    let runner = script(&sb, "runner.py", RUNNER);
    let run = |command: &str| {
        format!(
            "{} {} {}",
            python3().display(),
            sh_quote(&runner.display().to_string()),
            masked_command(&p, command)
        )
    };
    start_session(&sb, "mask", &run("bash --norc --noprofile"));
    type_line(&sb, "echo READY-$((40+2))");
    wait_line(&sb, "the masked shell to start", "READY-42");
    pane_masks(&sb, "mask");
    type_line(&sb, "exit 3");
    let screen = wait_screen(&sb, "the pane's runner to report", |s| s.contains("ENDED"));
    assert!(
        has_line(&screen, "ENDED 3"),
        "expected `ENDED 3` after `exit 3`:\n{}",
        sb.secrets().redact(&screen)
    );

    // A command that dies of SIGTERM on the terminal: envwrap dies of it too.
    start_session(&sb, "term", &run("sh -c 'sleep 0.2; kill -TERM $$'"));
    let screen = wait_screen_of(&sb, "term", "the runner to report", |s| s.contains("ENDED"));
    assert!(
        has_line(&screen, "ENDED -15"),
        "expected `ENDED -15` (killed by SIGTERM):\n{}",
        sb.secrets().redact(&screen)
    );
}

/// The path of `program` on PATH, if any.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// The recipe docs/masking.md gives: envwrap --mask as tmux's
/// `default-command` masks every new pane, and `capture-pane` shows the name.
#[test]
fn default_command_masks_every_new_pane() {
    let sb = Sandbox::new("mask_tmux_default_command");
    if !require(
        which("tmux").is_some(),
        "tmux is not installed (ci/install-test-deps installs it)",
    ) {
        return;
    }
    let p = policy(&sb, &["bash"], "");
    start_session(&sb, "mask", "bash --norc --noprofile");
    sb.tmux()
        .args(["set-option", "-g", "default-command"])
        .arg(masked_command(&p, "bash --norc --noprofile"))
        .expect_success();
    for window in ["one", "two"] {
        sb.tmux()
            .args(["new-window", "-d", "-t", "mask", "-n", window])
            .args(["-e", &sb.secrets().get("GH_TOKEN").assignment()])
            .expect_success();
        pane_masks(&sb, &format!("mask:{window}"));
    }
}
