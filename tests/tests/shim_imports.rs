//! The functions libenvshim.so imports, each with the reason it may: a test, not a
//! comment, keeps the exec path free of what it must not call (docs/adr/0005:
//! no allocation, no lock, no dlsym there). A new import fails this test until it
//! is reviewed and listed here; `malloc`, `free`, `pthread_mutex_*` and `dlopen`
//! can never be.

use envshim_e2e::*;
use goblin::elf::Elf;

/// Every import, and why the shim may call it.
const REVIEWED: &[(&str, &str)] = &[
    (
        "__errno_location",
        "errno is saved and restored around every hook",
    ),
    (
        "abort",
        "a broken invariant found at load (sys::die), never on the exec path",
    ),
    (
        "dl_iterate_phdr",
        "the constructor finds the next definitions itself (next_object.rs)",
    ),
    (
        "environ",
        "the environment is read in place, as glibc's getenv does, without its lock",
    ),
    ("getauxval", "the uid at load, from the auxiliary vector"),
    (
        "gettimeofday",
        "the fork hook's rate limit, from the vDSO, no lock",
    ),
    (
        "realpath",
        "a relative LD_PRELOAD entry made absolute, in the constructor only",
    ),
    (
        "sigprocmask",
        "system(): POSIX's signal handling around the child (pthread_sigmask needs GLIBC_2.32)",
    ),
    (
        "sigaction",
        "system(): SIGINT and SIGQUIT ignored while waiting, as POSIX says",
    ),
    ("sigaddset", "system(): the mask of the child"),
    ("sigemptyset", "system(): the mask of the child"),
    (
        "waitpid",
        "system() and pclose(): waiting for our own child",
    ),
    (
        "sched_yield",
        "popen(): another thread holding the stream table's slot",
    ),
    ("pipe2", "popen(): the stream's pipe"),
    (
        "fdopen",
        "popen(): the stream (popen allocates by definition; not on the exec path)",
    ),
    ("fclose", "pclose(): closing the stream"),
    ("fcntl", "popen(): close-on-exec of the parent's end"),
    (
        "pthread_setcancelstate",
        "system(): not a cancellation point midway",
    ),
    (
        "posix_spawn_file_actions_init",
        "popen(): the child's standard streams",
    ),
    (
        "posix_spawn_file_actions_adddup2",
        "popen(): the child's standard streams",
    ),
    (
        "posix_spawn_file_actions_addclose",
        "popen(): the other streams' fds closed in the child",
    ),
    (
        "posix_spawn_file_actions_destroy",
        "popen(): after the spawn",
    ),
    ("posix_spawnattr_init", "system(): the child's signal state"),
    (
        "posix_spawnattr_setflags",
        "system(): the child's signal state",
    ),
    (
        "posix_spawnattr_setsigdefault",
        "system(): SIGINT and SIGQUIT back to default in the child",
    ),
    (
        "posix_spawnattr_setsigmask",
        "system(): the caller's mask in the child",
    ),
    ("posix_spawnattr_destroy", "system(): after the spawn"),
];

/// Never, whatever the review says: they lock or allocate.
const FORBIDDEN_PREFIXES: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "free",
    "pthread_mutex_",
    "dlopen",
    "printf",
    "fprintf",
    "getenv",
    "setenv",
];

#[test]
fn every_import_is_reviewed_and_none_locks_or_allocates() {
    let path = shim_so();
    let bytes = std::fs::read(&path).expect("read libenvshim.so");
    let elf = Elf::parse(&bytes).expect("libenvshim.so is ELF");
    let imports: Vec<String> = elf
        .dynsyms
        .iter()
        .filter(|s| s.is_import())
        .filter_map(|s| elf.dynstrtab.get_at(s.st_name).map(str::to_string))
        .filter(|n| {
            !n.is_empty()
                && !n.starts_with("__cxa_finalize")
                && !n.starts_with("_ITM_")
                && !n.starts_with("__gmon_start__")
        })
        .collect();
    assert!(
        !imports.is_empty(),
        "no imports read from {}",
        path.display()
    );
    for name in &imports {
        assert!(
            !FORBIDDEN_PREFIXES.iter().any(|p| name.starts_with(p)),
            "libenvshim.so imports {name}, which may lock or allocate"
        );
        assert!(
            REVIEWED.iter().any(|(n, _)| n == name),
            "libenvshim.so imports {name}, which no one has reviewed: add it to REVIEWED with the reason it may be called, or do without it"
        );
    }
}
