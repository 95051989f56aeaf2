//! Compiling small C programs at test time, with a cache keyed by the source text.
//!
//! The binaries go under cargo's target directory (`<target>/tmp/envshim-e2e-cc`, the
//! directory cargo names `CARGO_TARGET_TMPDIR` for integration tests), named
//! `<name>-<hash>` where the hash covers the compiler, the flags and the source: a
//! changed source gets a new file, an unchanged one is reused. Writes are atomic
//! (temporary file, then rename), so parallel tests, or nextest's one process per test,
//! may compile the same program at once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::artifacts::target_dir;

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The directory compiled helpers are cached in (created on demand).
pub fn cc_cache_dir() -> PathBuf {
    let preferred = target_dir().join("tmp").join("envshim-e2e-cc");
    if std::fs::create_dir_all(&preferred).is_ok() {
        return preferred;
    }
    // SAFETY: getuid(2) cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let fallback = std::env::temp_dir().join(format!("envshim-e2e-cc-{uid}"));
    std::fs::create_dir_all(&fallback)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", fallback.display()));
    fallback
}

/// Compile `source` as `name` with default flags; returns the binary's path.
#[track_caller]
pub fn compile_c(name: &str, source: &str) -> PathBuf {
    compile_c_with(name, source, &[])
}

/// Compile `source` with extra compiler flags (`-pthread`, `-static`, `-ldl`, `-D...`).
/// Flags go after the source file so that libraries resolve.
#[track_caller]
pub fn compile_c_with(name: &str, source: &str, flags: &[&str]) -> PathBuf {
    compile_c_in(&cc_cache_dir(), name, source, flags)
}

/// [`compile_c_with`] into a chosen directory (for example a sandbox).
#[track_caller]
pub fn compile_c_in(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    assert!(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "compile_c: name {name:?} must be [A-Za-z0-9_-]+"
    );
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    const BASE_FLAGS: &[&str] = &[
        "-std=gnu11",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror=implicit-function-declaration",
    ];
    let mut h = Fnv::new();
    h.write(cc.as_bytes());
    for f in BASE_FLAGS.iter().chain(flags) {
        h.write(b"\0");
        h.write(f.as_bytes());
    }
    h.write(b"\0\0");
    h.write(source.as_bytes());
    let stem = format!("{name}-{:016x}", h.finish());
    let bin = dir.join(&stem);
    if bin.is_file() {
        return bin;
    }
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let unique = format!(
        ".tmp.{}.{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let src = dir.join(format!("{stem}.c"));
    let src_tmp = dir.join(format!("{stem}.c{unique}"));
    std::fs::write(&src_tmp, source)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", src_tmp.display()));
    std::fs::rename(&src_tmp, &src).expect("rename source into place");
    let bin_tmp = dir.join(format!("{stem}{unique}"));
    let out = Command::new(&cc)
        .args(BASE_FLAGS)
        .arg("-o")
        .arg(&bin_tmp)
        .arg(&src)
        .args(flags)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the C compiler {cc:?}: {e} (install gcc: ci/install-test-deps)")
        });
    if !out.status.success() {
        let _ = std::fs::remove_file(&bin_tmp);
        panic!(
            "compiling {name} failed ({}): {cc} {} -o {} {} {}\n--- compiler output ---\n{}{}",
            out.status,
            BASE_FLAGS.join(" "),
            bin_tmp.display(),
            src.display(),
            flags.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::rename(&bin_tmp, &bin).expect("rename binary into place");
    bin
}

/// FNV-1a 64: a stable hash (std's hasher may change between Rust releases).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
