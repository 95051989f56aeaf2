//! A `command:` source read by the std front ends: the helper run with the
//! core's rules ([`crate::secret::helper`]) and its standard output taken as
//! the value, within the time limit and the size limit of every source.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{current_uid, wipe_tail, Value, READ_AT_MOST};
use crate::compiled::{sec, Policy, SourceKind};
use crate::secret::{helper, FileMode, Undelivered};

/// May the helper of the compiled `source` run (it is there, and trusted)?
/// Nothing is run.
pub fn usable(source: &[u8]) -> Result<(), Undelivered> {
    let path = helper::words(source).next().ok_or(Undelivered::Missing)?;
    let md = std::fs::metadata(std::ffi::OsStr::from_bytes(path)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => Undelivered::Missing,
        _ => Undelivered::Unreadable,
    })?;
    let file = FileMode {
        owner: md.uid(),
        mode: md.mode(),
    };
    helper::trusted(path, file, current_uid())
}

/// `mask` without the secrets whose source is a helper: for what reads
/// sources in a process above the programs (`envwrap scan`), where running a
/// password manager's helper would be a surprise.
pub fn without_helpers(policy: &Policy<'_>, mask: u16) -> u16 {
    (0..policy.count(sec::SECRETS) as u32)
        .filter(|&i| {
            policy
                .secret(i)
                .is_some_and(|r| r.source_kind == SourceKind::Command)
        })
        .fold(mask, |m, i| m & !(1 << i))
}

/// Run the helper of the compiled `source` with the variables it is given
/// ([`helper::passed`]) and take what it prints. The variables come from this
/// process's own environment, as the shim takes them from the environment of
/// the process that execs: the caller's, not the environment decided for the
/// program (`envwrap -i`, `base = "none"` or a strip of `PASSWORD_STORE_DIR`,
/// which the built-in `*PASSWORD*` calls a credential, would take the store's
/// place from the helper).
pub fn run(source: &[u8]) -> Result<Value, Undelivered> {
    use std::os::unix::ffi::OsStringExt;
    let env: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(n, v)| [n.into_vec(), b"=".to_vec(), v.into_vec()].concat())
        .collect();
    usable(source)?;
    let mut words = helper::words(source).map(std::ffi::OsStr::from_bytes);
    let path = words.next().ok_or(Undelivered::Missing)?;
    let mut cmd = Command::new(path);
    cmd.args(words)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let path_entry = helper::PATH_ENTRY
        .strip_suffix(b"\0")
        .unwrap_or(helper::PATH_ENTRY);
    for entry in env.iter().map(Vec::as_slice).chain([path_entry]) {
        if let Some((name, value)) = crate::bytes::split_entry(entry) {
            if helper::passed(name) || entry == path_entry {
                cmd.env(
                    std::ffi::OsStr::from_bytes(name),
                    std::ffi::OsStr::from_bytes(value),
                );
            }
        }
    }
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Undelivered::Missing,
        _ => Undelivered::HelperFailed,
    })?;
    let deadline = Instant::now() + Duration::from_millis(helper::LIMIT_MS as u64);
    let value = match take_output(&mut child, deadline) {
        Ok(v) => v,
        Err(why) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(why);
        }
    };
    wait_until(&mut child, deadline)?;
    Ok(value)
}

/// What the helper prints, until it closes its output or ends, prints more
/// than a value can hold, or `deadline` passes. A helper that ended is read
/// no further than what it left in the pipe: a process it started (an agent)
/// may hold the pipe open for good, as the shim reads it too.
fn take_output(child: &mut Child, deadline: Instant) -> Result<Value, Undelivered> {
    use std::os::fd::AsRawFd;
    let mut out = child.stdout.take().ok_or(Undelivered::HelperFailed)?;
    let mut buf = Value(vec![0u8; READ_AT_MOST + 1]);
    let mut filled = 0;
    let mut ended = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Undelivered::HelperTimedOut);
        }
        let mut pfd = libc::pollfd {
            fd: out.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // A slice at a time, to see the helper's end between them.
        let ms = if ended {
            0
        } else {
            left.as_millis().min(20) as i32
        };
        // SAFETY: one valid pollfd, for the length given.
        if unsafe { libc::poll(&mut pfd, 1, ms) } <= 0 {
            if ended {
                break;
            }
            ended = matches!(child.try_wait(), Ok(Some(_)));
            continue;
        }
        match out.read(&mut buf.0[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Undelivered::HelperFailed),
        }
        if filled > READ_AT_MOST {
            return Err(Undelivered::TooLarge);
        }
    }
    wipe_tail(&mut buf.0, filled);
    Ok(buf)
}

/// Wait for the helper until `deadline`; kill it then. Its exit status says
/// whether its output is a value.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<(), Undelivered> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                return helper::ended(status.into_raw());
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Undelivered::HelperTimedOut);
            }
        }
    }
}
