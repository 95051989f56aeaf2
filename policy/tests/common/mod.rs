//! Helpers shared by envpolicy's integration tests: compile policy text in a fresh
//! directory, decide, and look at the result by name.
#![allow(dead_code)]

use envpolicy::outcome::{self, Decision};
use envpolicy::Compiled;
use std::path::{Path, PathBuf};

/// A fresh directory for one test's policy and imported files.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Dir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p =
            std::env::temp_dir().join(format!("envpolicy-test-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn compile(&self, policy: &str) -> Compiled {
        let path = self.write("policy.toml", policy);
        envpolicy::load::load(&path).unwrap_or_else(|e| panic!("policy did not compile: {e}"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn compile(policy: &str) -> Compiled {
    envpolicy::load::compile_text(policy, Path::new("test.toml"))
        .unwrap_or_else(|e| panic!("policy did not compile: {e}"))
}

pub fn bytes(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// Decide for `program` with argv `[program, args...]` and `env`.
pub fn decide(c: &Compiled, program: &str, args: &[&str], env: &[&str]) -> Decision {
    let policy = c.policy();
    let mut argv = vec![program.as_bytes().to_vec()];
    argv.extend(bytes(args));
    let files = outcome::read_env_files(&policy);
    outcome::decide(&policy, program.as_bytes(), &argv, &bytes(env), &[], &files)
}

/// The child's value of `name`, if present.
pub fn get(d: &Decision, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    d.env
        .iter()
        .find(|e| e.starts_with(prefix.as_bytes()))
        .map(|e| String::from_utf8_lossy(&e[prefix.len()..]).into_owned())
}

pub fn names(d: &Decision) -> Vec<String> {
    d.env
        .iter()
        .map(|e| {
            let s = String::from_utf8_lossy(e);
            s.split('=').next().unwrap_or("").to_string()
        })
        .collect()
}

/// The change recorded for variable `name` in the env, if any.
pub fn change<'d>(d: &'d Decision, name: &str) -> Option<&'d envpolicy::outcome::Change> {
    d.changes
        .iter()
        .find(|c| c.target.id() == "env" && c.name.as_deref() == Some(name))
}

pub fn argv(d: &Decision) -> Vec<String> {
    d.argv
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// A fake GitHub token built at run time (never a literal in the source).
pub fn fake_github() -> String {
    format!("ghp_{}", "Ab3".repeat(12))
}

/// Base64 of `src` as coreutils' `base64` writes it (a real encoder, apart
/// from the core's needle builder), in the standard alphabet or the URL-safe
/// one, with `=` padding or not.
pub fn base64(src: &[u8], url_safe: bool, padded: bool) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("base64")
        .arg("-w0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("coreutils' base64 runs");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(src)
        .expect("base64 reads");
    let out = child.wait_with_output().expect("base64 ends");
    assert!(out.status.success(), "base64 failed");
    let text = String::from_utf8(out.stdout).expect("base64 writes ASCII");
    let text = if padded {
        text.as_str()
    } else {
        text.trim_end_matches('=')
    };
    if url_safe {
        text.replace('+', "-").replace('/', "_")
    } else {
        text.to_string()
    }
}

/// Assert no output text holds `secret`, naming what leaked without the value.
pub fn assert_no_value(what: &str, text: &str, secret: &str) {
    assert!(!text.contains(secret), "{what} holds a seeded secret value");
}

/// Give `path` to a group other than the user's private one, so that group write
/// means someone else may write it (`envpolicy::writers`): as root, `nogroup`;
/// otherwise a supplementary group of this process. False when there is none.
pub fn give_to_a_shared_group(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: geteuid and getgroups have no preconditions; the buffer is as long
    // as the count passed.
    let (euid, groups) = unsafe {
        let mut g = [0 as libc::gid_t; 64];
        let n = libc::getgroups(g.len() as i32, g.as_mut_ptr());
        (libc::geteuid(), g[..n.max(0) as usize].to_vec())
    };
    let private = envpolicy::trust::private_group(euid);
    let candidates = if euid == 0 { vec![65534, 100] } else { groups };
    let Some(gid) = candidates.into_iter().find(|&g| Some(g) != private) else {
        return false;
    };
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; uid -1 leaves the owner alone.
    unsafe { libc::chown(c.as_ptr(), u32::MAX, gid) == 0 }
}
