//! Self-scrub: at load, in a program the policy names with `self_scrub = true`, remove
//! credentials from the process's own environment and overwrite credential values in
//! its own argv memory.
//!
//! Why: a process started the old way (`tmux new-session -e GH_TOKEN=...` from a shell
//! that holds the token) has the secret in its `environ`, and in its argv, which the
//! kernel shows as `/proc/PID/cmdline`. tmux forks its server without exec, so the
//! server keeps the first client's argv and environment for its whole life, and builds
//! every pane's environment from that environment.
//!
//! What it does, once, in the constructor (before `main`, single-threaded):
//! - every environment entry the policy counts as a credential (by name, import,
//!   shape, or a value equal to a credential's) is removed from `environ`, and the
//!   bytes of its value are overwritten with `*` where they lie (so
//!   `/proc/PID/environ` stops showing them too);
//! - in every argument, credential values (from the environment and the policy's env
//!   files) and token shapes are overwritten with `*`, keeping every NUL, so
//!   `/proc/PID/cmdline` keeps its shape and stops showing them.
//!
//! This is a mitigation, documented as such in docs/shim.md: the value was in the
//! process's memory, and anyone who read its cmdline before the constructor ran saw
//! it. The control is refusing in the parent, or starting the root under envwrap.

use core::ffi::{c_char, c_int};

use envpolicy_core::argv::{self, ArgvRequest};
use envpolicy_core::decide::{self, Action, Emit, EnvRequest, EnvScratch, Rule, Verdict};
use envpolicy_core::Records;

use crate::platform::scratch::{Inline, Scratch};
use crate::platform::sys;
use crate::state::env_files::{self, MAX_ENV_FILES};

/// Called by the constructor with the peeked policy, `argv[0]`'s bytes (`prog`,
/// empty when there is none) and the process's own argc and argv.
///
/// # Safety
/// `argv` must be the process's argument vector (`argc` NUL-terminated, writable
/// strings), as the loader passes it to `.init_array` functions; no other thread
/// may run yet.
pub unsafe fn at_load(
    peeked: Option<&Records<'_>>,
    prog: &[u8],
    argc: c_int,
    argv: *const *const c_char,
) {
    let n_args = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() || n_args == 0 {
        return;
    }
    // Asked of the policy's header and records only, so that a process the policy
    // does not name pays for no validation (see `crate::state::policy`).
    if !peeked.is_some_and(|p| envpolicy_core::programs::self_scrub(p, prog)) {
        return;
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { scrub_now(prog, argv, n_args) }
}

/// [`at_load`] for a program the policy scrubs: in a function of its own so that
/// its scratch space is on the stack only then (a frame larger than a page
/// touches every page of it, in every process that loads the shim).
///
/// # Safety
/// As `at_load`; `prog` is `argv[0]`'s bytes and `argv` has `n_args` entries.
#[inline(never)]
unsafe fn scrub_now(prog: &[u8], argv: *const *const c_char, n_args: usize) {
    crate::state::policy::with_active(|active| {
        let Some(active) = active else { return };
        let mut files = [None; MAX_ENV_FILES];
        let opened = env_files::open_all(&active.policy, &mut files);
        let (mut n_files, unusable) = (opened.n, opened.unusable);
        // An env file no policy reads: scrub by the floor (which imports none).
        let floor = unusable.and_then(|u| {
            env_files::close_all(&files, n_files);
            n_files = 0;
            env_files::floor_for(active, u)
        });
        let policy = match (&floor, unusable) {
            (Some(f), _) => &f.policy,
            (None, Some(_)) => return,
            (None, None) => &active.policy,
        };
        let environ = sys::environ_ptr();
        // SAFETY: `environ` is NULL or the NULL-terminated environment.
        let ne = unsafe { sys::count(environ) };
        let inline = Inline::uninit();
        let mut scratch = Scratch::new(&inline);
        let sizes = decide::scratch_sizes(policy, ne, 0);
        let files_bytes: usize = files
            .iter()
            .take(n_files)
            .map(|f| f.map_or(0, |f| f.size + 1))
            .sum();
        let words = |n: usize, t: usize| n.saturating_mul(t).saturating_add(16);
        let total = words(ne, core::mem::size_of::<&[u8]>())
            + words(sizes.verdicts, core::mem::size_of::<Verdict>())
            + words(sizes.seen, 4)
            + words(sizes.emits, core::mem::size_of::<Emit>())
            + sizes.bytes.saturating_add(4096)
            + words(n_files, core::mem::size_of::<Option<&[u8]>>())
            + files_bytes;
        if scratch.reserve(0, total).is_ok() {
            // SAFETY: the caller's contract on argv and environ, passed on.
            unsafe {
                scrub(
                    policy,
                    prog,
                    argv,
                    n_args,
                    environ,
                    ne,
                    &files,
                    (n_files, if floor.is_some() { 0 } else { opened.renamed }),
                    &scratch,
                    sizes,
                )
            };
        }
        for f in files.iter().take(n_files).flatten() {
            crate::platform::sys::close(f.fd);
        }
    });
}

/// # Safety
/// As `at_load`; `environ` has `ne` entries.
#[allow(clippy::too_many_arguments)]
unsafe fn scrub(
    policy: &envpolicy_core::Policy<'_>,
    prog: &[u8],
    argv: *const *const c_char,
    n_args: usize,
    environ: *const *const c_char,
    ne: usize,
    files: &[Option<env_files::OpenFile>; MAX_ENV_FILES],
    (n_files, renamed): (usize, u32),
    scratch: &Scratch,
    sizes: decide::Shortfall,
) {
    let empty: &[u8] = &[];
    let no_file: Option<&[u8]> = None;
    let (Some(env), Some(contents)) = (
        scratch.take_init(ne, empty),
        scratch.take_init(n_files, no_file),
    ) else {
        return;
    };
    for (i, slot) in env.iter_mut().enumerate() {
        // SAFETY: i < ne entries, each NUL-terminated.
        *slot = unsafe { sys::cstr_bytes(*environ.add(i)) };
    }
    for (slot, f) in contents.iter_mut().zip(files.iter()) {
        let Some(f) = f else { continue };
        let Some(buf) = scratch.take_bytes(f.size + 1) else {
            return;
        };
        if let Some(n) = env_files::read_all(f.fd, buf) {
            *slot = buf.get(..n.min(f.size)).map(|b| -> &[u8] { b });
        }
    }
    let (Some(verdicts), Some(seen), Some(emits), Some(bytes)) = (
        scratch.take_init(sizes.verdicts, Verdict::new(Action::Keep, Rule::BaseAll)),
        scratch.take_init(sizes.seen, 0u32),
        scratch.take_init(sizes.emits, Emit::Input(0)),
        scratch.take_bytes(sizes.bytes.saturating_add(4096)),
    ) else {
        return;
    };
    let req = EnvRequest {
        program: prog,
        identity: envpolicy_core::identity::Identity::itself(prog),
        env,
        env_files: contents,
        preload: None,
        policy_entry: None,
        hint: None,
        file_values: None,
        file_judged: None,
        renamed_files: renamed,
        parent_env: &[],
        secrets: &[],
        routed: false,
    };
    let mut es = EnvScratch {
        verdicts,
        seen,
        emits,
        bytes,
    };
    if decide::decide_env(policy, &req, &mut es).is_err() {
        return;
    }
    let verdicts: &[Verdict] = es.verdicts;

    // Arguments first: they are searched for the environment's credential values,
    // which are overwritten next.
    let areq = ArgvRequest {
        program: prog,
        identity: envpolicy_core::identity::Identity::itself(prog),
        argv: &[],
        env,
        env_verdicts: verdicts.get(..ne).unwrap_or(&[]),
        parent_env: &[],
        env_files: contents,
        file_credentials: None,
        secrets: &[],
    };
    for i in 0..n_args {
        // SAFETY: i < argc; the string is writable process memory (the loader's
        // argument area) and no other thread runs yet.
        let arg = unsafe {
            let p = (*argv.add(i)).cast_mut().cast::<u8>();
            core::slice::from_raw_parts_mut(p, sys::strlen(p.cast()))
        };
        argv::redact_in_place(policy, &areq, arg);
    }
    // The pairs this program carries in its own argv (`tmux new -e NAME=VALUE`):
    // a pair the policy would not pass keeps its name and loses its `=` and its
    // value, which may be a credential known by its name only.
    // SAFETY: as above: `n_args` writable arguments, no other thread.
    unsafe { blank_refused_pairs(policy, prog, argv, n_args, scratch) };

    // Then the environment: overwrite credential values where they lie, and drop
    // their entries from `environ`.
    let env_array = environ.cast_mut();
    let mut kept = 0usize;
    for i in 0..ne {
        // SAFETY: i < ne.
        let entry = unsafe { *env_array.add(i) };
        // A credential goes, and so does every later copy of a name: the first
        // copy is the one the decision judged (and glibc's `getenv` reads), while
        // tmux, bash and Perl take the last, which could be a token.
        let gone = verdicts
            .get(i)
            .is_some_and(|v| v.credential || matches!(v.rule, Rule::Duplicate(_)));
        if gone {
            // SAFETY: the entry is a NUL-terminated writable string.
            unsafe {
                let p = entry.cast_mut().cast::<u8>();
                let s = core::slice::from_raw_parts_mut(p, sys::strlen(entry));
                if let Some(eq) = s.iter().position(|&b| b == b'=') {
                    if let Some(v) = s.get_mut(eq + 1..) {
                        v.fill(b'*');
                    }
                }
            }
            continue;
        }
        // SAFETY: kept <= i < ne: moving an entry down within the array.
        unsafe { *env_array.add(kept) = entry };
        kept += 1;
    }
    // SAFETY: kept <= ne; the array's NULL terminator slot is at index ne >= kept.
    unsafe { *env_array.add(kept) = core::ptr::null() };
}

/// Overwrite with `*` the `=` and the value of every `NAME=VALUE` pair in the
/// process's own argv that the policy would not pass to this program (the pairs
/// of [`envpolicy_core::pairs`], judged by `argv::each_refused_pair`). An argument
/// cannot be removed from a running process's argv, but without its `=` it is no
/// pair: tmux ignores an `-e` value without one, so the variable is not set, as
/// when envwrap or an exec hook drops the pair.
///
/// # Safety
/// `argv` holds `n_args` writable NUL-terminated strings, and no other thread runs.
unsafe fn blank_refused_pairs(
    policy: &envpolicy_core::Policy<'_>,
    prog: &[u8],
    argv: *const *const c_char,
    n_args: usize,
    scratch: &Scratch,
) {
    let empty: &[u8] = &[];
    let Some(args) = scratch.take_init(n_args, empty) else {
        return;
    };
    for (i, slot) in args.iter_mut().enumerate() {
        // SAFETY: i < n_args, each NUL-terminated (caller).
        *slot = unsafe { sys::cstr_bytes(*argv.add(i)) };
    }
    argv::each_refused_pair(policy, prog, args, |arg, value, within| {
        // A pair alone in its argument loses its `=` too; one among the words of
        // a shell command keeps it, so the command still runs, with `*`.
        let from = if within {
            value.start
        } else {
            value.start.saturating_sub(1)
        };
        // SAFETY: `arg` < n_args; the string is writable (caller) and nothing else
        // refers to it now (`args` views end with this call).
        unsafe {
            let p = (*argv.add(arg)).cast_mut().cast::<u8>();
            let s = core::slice::from_raw_parts_mut(p, sys::strlen(p.cast()));
            if let Some(v) = s.get_mut(from..value.end) {
                v.fill(b'*');
            }
        }
    });
}
