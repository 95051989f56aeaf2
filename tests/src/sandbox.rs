//! [`Sandbox`]: the per-test world. A fresh private directory, a fresh set of seeded
//! [`Secrets`], and a tmux socket of its own; dropping it kills that tmux server (so a
//! failing test never leaves one running) and removes the directory (unless
//! `ENVSHIM_KEEP_SANDBOX` is set, for post-mortems).
//!
//! Every command a test runs should come from [`Sandbox::cmd`] or [`Sandbox::tmux`]:
//! they run in the sandbox directory, carry its secrets (so output is checked and
//! reports are redacted), point `TMUX_TMPDIR` at the sandbox (even a nested `tmux`
//! without `-L` lands on a socket inside it, never the user's default server), unset
//! `TMUX` (tests work when run inside tmux), remove `LD_PRELOAD` and `ENVSHIM_POLICY`,
//! and remove every seeded name inherited
//! from the outer environment (a real `GH_TOKEN` of the CI machine must not reach a
//! test's children unnoticed).

use std::ffi::OsStr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::command::TestCommand;
use crate::secrets::{Secrets, SECRET_NAMES};

static SANDBOX_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Set this variable (to anything) to keep sandbox directories after the test.
pub const KEEP_ENV: &str = "ENVSHIM_KEEP_SANDBOX";

/// A per-test directory, secrets and tmux socket. See the module docs.
pub struct Sandbox {
    dir: PathBuf,
    socket: String,
    secrets: Secrets,
    keep: bool,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("dir", &self.dir)
            .field("socket", &self.socket)
            .field("secrets", &self.secrets)
            .finish()
    }
}

impl Sandbox {
    /// A fresh sandbox. `name` (usually the test's name) goes into the directory name,
    /// shortened, to make a kept sandbox easy to find.
    #[track_caller]
    pub fn new(name: &str) -> Sandbox {
        let pid = std::process::id();
        let n = SANDBOX_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(24)
            .collect();
        let dir = std::env::temp_dir().join(format!("envshim-e2e-{pid}-{n}-{tag}"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .unwrap_or_else(|e| panic!("cannot create sandbox {}: {e}", dir.display()));
        // Canonical, so paths compared with /proc/PID/cwd and the like match.
        let dir = dir.canonicalize().expect("canonicalize sandbox dir");
        let sandbox = Sandbox {
            dir,
            socket: format!("envshim-{pid}-{n}"),
            secrets: Secrets::generate(),
            keep: std::env::var_os(KEEP_ENV).is_some(),
        };
        let sock = sandbox.tmux_socket_path();
        // sockaddr_un.sun_path holds 108 bytes including the NUL.
        assert!(
            sock.as_os_str().len() < 100,
            "tmux socket path {} is too long for a unix socket; set TMPDIR to a shorter directory",
            sock.display()
        );
        sandbox
    }

    /// The sandbox directory (canonical).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }

    /// Write a file (creating parent directories); returns its path.
    #[track_caller]
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        }
        std::fs::write(&p, contents).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p
    }

    /// Write an executable (mode 0755) that a program under test will exec; returns
    /// its path. The bytes are written to a temporary file and copied into place by
    /// `install(1)`, a process of its own: a file this multithreaded test process
    /// opens for writing is held open, until they exec, by the children that other
    /// test threads fork meanwhile, and an exec of it then fails with `ETXTBSY`.
    /// The harness retries its own spawns on that; a program under test would not.
    #[track_caller]
    pub fn write_executable(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        let tmp = p.with_extension("tmp-unexecuted");
        self.write(&tmp, contents);
        let status = std::process::Command::new("install")
            .args(["-m", "0755"])
            .arg(&tmp)
            .arg(&p)
            .status()
            .unwrap_or_else(|e| panic!("install {}: {e}", p.display()));
        assert!(status.success(), "install {} failed", p.display());
        std::fs::remove_file(&tmp).ok();
        p
    }

    #[track_caller]
    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        let p = self.join(rel);
        std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    /// A FIFO at `rel` (mode 0600): a test holds a program at a point by having
    /// it read one, and lets it go on by writing a line.
    #[track_caller]
    pub fn mkfifo(&self, rel: impl AsRef<Path>) -> PathBuf {
        let p = self.join(rel);
        mkfifo(&p);
        p
    }

    #[track_caller]
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        p
    }

    /// This sandbox's seeded secrets.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Keep the directory after the test (as if `ENVSHIM_KEEP_SANDBOX` were set).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    /// A command running in the sandbox, with its secrets attached. See the module docs.
    pub fn cmd(&self, program: impl AsRef<OsStr>) -> TestCommand {
        let mut c = TestCommand::new(program);
        c.secrets(&self.secrets).current_dir(&self.dir);
        for (k, v) in self.tmux_env() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        for name in SECRET_NAMES {
            c.env_remove(name);
        }
        // A shim (or its policy) preloaded into the test runner must not leak into the
        // commands: a test that wants them sets them (see `shim::ShimExt`).
        c.env_remove("LD_PRELOAD")
            .env_remove("ENVSHIM_POLICY")
            .env_remove("ENVSHIM_CACHE_DIR");
        c
    }

    /// `wait::wait_for`, here for convenience.
    pub fn wait_for(&self, cond: impl FnMut() -> bool, timeout: Duration) -> bool {
        crate::wait::wait_for(cond, timeout)
    }

    pub(crate) fn socket_name(&self) -> &str {
        &self.socket
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Never panic here: Drop runs while a failed test unwinds.
        self.kill_tmux_server();
        crate::collect::collect_sandbox(&self.dir);
        if self.keep {
            eprintln!(
                "envshim-e2e: keeping sandbox {} (tmux socket {})",
                self.dir.display(),
                self.socket
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// mkfifo(3) at `path`, mode 0600; panics when it fails.
#[track_caller]
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) reads a NUL-terminated path that outlives the call.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(
        r,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}
