//! How the secrets a program gets reach it (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! A value must be read only by the process that becomes the program, so that
//! no process above it (the shell, a tmux server, an agent) ever holds it:
//!
//! * in a `fork` child at an exec hook (or a process that execs in place), the
//!   filter reads each source here ([`read_secrets`], through
//!   [`crate::state::secrets`]) into the exec's scratch, which
//!   [`Scratch::take_secret_bytes`] has wiped if the exec fails, and hands the
//!   values to the decision (rule 6b, and argv's copies rule);
//! * where the decision runs on the parent's memory (a `vfork` or `CLONE_VM`
//!   child, which [`sys::shares_parent_memory`] tells, and always at
//!   `posix_spawn`, `system` and `popen`), nothing is read: the exec is routed
//!   through envwrap ([`routed`]), `envwrap --routed -- PROGRAM ARGS...`, which reads
//!   the values in its own new process and execs the program in place. The
//!   program's `argv[0]` is then its path (envwrap's run mode has no way to be
//!   told another). Without an envwrap, the program runs without its secrets,
//!   and one line says why.
//!
//! A policy without secrets never reaches this module: the filter's one test is
//! `wanted`'s count. Audit mode delivers nothing, as it changes nothing.

use core::ffi::c_char;
use core::mem::size_of;

use envpolicy_core::compiled::Mode;
use envpolicy_core::secret::{self, Undelivered, MAX_SECRETS};
use envpolicy_core::Policy;

use super::{missing, ExecInput, Plan, Prepared, Site};
use crate::platform::fs::{stat_at, PathSpace};
use crate::platform::scratch::Scratch;
use crate::platform::sys;
use crate::state::message::Msg;
use crate::state::secrets::{self, READ_BYTES};

/// How the secrets a program gets (a `wanted` mask) reach it.
#[derive(Clone, Copy)]
pub(super) enum Delivery {
    /// It gets none, or the policy is in audit mode.
    None,
    /// This process becomes the program: read the sources here.
    Read(u16),
    /// This process is not the program's own: run it through envwrap.
    Route(u16),
}

/// How the secrets `wanted` reach a program started from `site` under `policy`;
/// `prog_c` is the path given to exec, NUL-terminated.
#[cold]
#[inline(never)]
pub(super) fn delivery_for(
    policy: &Policy<'_>,
    wanted: u16,
    site: Site,
    prog_c: &[u8],
) -> Delivery {
    // In `envwrap --routed`, envwrap has read every source and put the values
    // in the exec's environment: reading them again here would run a helper
    // twice (and say a failure twice). What this trusts is what
    // `state::routed` trusts already.
    if policy.settings().mode == Mode::Audit || crate::state::routed::is() {
        return Delivery::None;
    }
    match program_trusted(prog_c) {
        Ok(()) => {}
        // Not there: the exec fails as it would (a PATH search goes on), quietly.
        Err(None) => return Delivery::None,
        Err(Some(why)) => {
            let prog = prog_c.split_last().map_or(&[][..], |(_, p)| p);
            (0..MAX_SECRETS as u32)
                .filter(|i| wanted & (1 << i) != 0)
                .for_each(|i| say_undelivered(policy, i, prog, why));
            return Delivery::None;
        }
    }
    match site {
        Site::Exec if !sys::shares_parent_memory() => Delivery::Read(wanted),
        _ => Delivery::Route(wanted),
    }
}

/// [`secret::program_trusted`] of the program at `prog_c` (NUL-terminated),
/// from its `lstat`: `Err(None)` when there is no such file (the exec will
/// fail with the kernel's error, and nothing is to be said).
fn program_trusted(prog_c: &[u8]) -> Result<(), Option<Undelivered>> {
    let path = prog_c.split_last().map_or(&[][..], |(_, p)| p);
    let ns = stat_at(b"/proc/self/ns/user\0", 0).ok().map(|st| st.st_ino);
    secret::user_namespace_trusted(ns).map_err(Some)?;
    let st = match stat_at(prog_c, libc::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(libc::ENOENT | libc::ENOTDIR) => return Err(None),
        Err(_) => return Err(Some(Undelivered::ProgramReplaceable)),
    };
    let file = secret::FileMode {
        owner: st.st_uid,
        mode: st.st_mode,
    };
    secret::program_trusted(path, file).map_err(Some)
}

/// Bytes of scratch a delivery takes in one attempt, alignment included.
pub(super) fn delivery_bytes(delivery: Delivery, na: usize) -> usize {
    match delivery {
        Delivery::None => 0,
        Delivery::Read(wanted) => (wanted.count_ones() as usize)
            .saturating_mul(READ_BYTES)
            .saturating_add(MAX_SECRETS * size_of::<Option<&[u8]>>() + 16),
        Delivery::Route(_) => (na + 4)
            .saturating_mul(size_of::<*const c_char>())
            .saturating_add(size_of::<PathSpace>() + 32),
    }
}

/// What a layer's `delivery` hands its pass: the values of its secrets, read
/// here, or envwrap's path to route the exec through (`None` when there is
/// none to run). `None`: no room in the scratch.
#[inline]
pub(super) fn delivered<'s>(
    policy: &Policy<'_>,
    delivery: Delivery,
    x: &ExecInput<'_>,
    plan: Plan,
    scratch: &'s Scratch<'_>,
) -> Option<Secrets<'s>> {
    Some(match delivery {
        Delivery::None => (&[][..], None),
        Delivery::Read(wanted) => (read_secrets(policy, x, wanted, plan, scratch)?, None),
        Delivery::Route(wanted) => (&[][..], route_target(policy, x, wanted, plan, scratch)),
    })
}

/// The values of a layer's secrets by index, and envwrap's path when the exec
/// is routed through it ([`delivered`]).
pub(super) type Secrets<'s> = (&'s [Option<&'s [u8]>], Option<&'s [u8]>);

/// Reads each secret of `policy` in `wanted` into the scratch: the values by secret index,
/// as the decision takes them (`None` for a secret not delivered, which one line
/// names; on a retry the line was written by the first attempt). `None`: no room.
#[cold]
#[inline(never)]
pub(super) fn read_secrets<'s>(
    policy: &Policy<'_>,
    x: &ExecInput<'_>,
    wanted: u16,
    plan: Plan,
    scratch: &'s Scratch<'_>,
) -> Option<&'s [Option<&'s [u8]>]> {
    let no_value: Option<&[u8]> = None;
    let values = scratch.take_init(MAX_SECRETS, no_value)?;
    for (i, slot) in values.iter_mut().enumerate() {
        if wanted & (1 << i) == 0 {
            continue;
        }
        let Some(rec) = policy.secret(i as u32) else {
            continue;
        };
        let buf = scratch.take_secret_bytes(READ_BYTES)?;
        match secrets::read(policy, &rec, buf) {
            Ok(value) => *slot = Some(value),
            Err(why) if !plan.retry => say_undelivered(policy, i as u32, x.prog, why),
            Err(_) => {}
        }
    }
    if !plan.retry && values.iter().any(Option::is_some) {
        say_if_unguarded(policy, x, values);
    }
    Some(values)
}

/// One line per secret delivered to a program the shim cannot police
/// ([`envpolicy_core::elf_head`]: static, or Go), when no supervisor judges
/// the tree's execs ([`envpolicy_core::refusal::unguarded_line`]): its children inherit the
/// secret, and the person should know.
#[cold]
#[inline(never)]
fn say_if_unguarded(policy: &Policy<'_>, x: &ExecInput<'_>, values: &[Option<&[u8]>]) {
    use envpolicy_core::elf_head::Loads;
    // SAFETY: `environ` is NULL or the process's NULL-terminated environment.
    if unsafe { sys::env_get(x.environ, envpolicy_core::mark::NAME) }.is_some() {
        return;
    }
    let why = match program_loads(x.prog) {
        Loads::Static => secret::Unguarded::Static,
        Loads::Go => secret::Unguarded::Go,
        Loads::Shim | Loads::Unknown => return,
    };
    for (i, value) in values.iter().enumerate() {
        let Some(rec) = value.and_then(|_| policy.secret(i as u32)) else {
            continue;
        };
        let mut m = Msg::<512>::new();
        m.push(b"envshim: ");
        let given = envpolicy_core::refusal::Given::Delivered;
        envpolicy_core::refusal::unguarded_line(
            policy.str(rec.name),
            x.prog,
            why,
            given,
            &mut |b| {
                m.push(b);
            },
        );
        m.write_stderr();
    }
}

/// What the head of the program's file says. `prog` is the path given to
/// exec, followed in place by its NUL (as `apply` read it).
pub(super) fn program_loads(prog: &[u8]) -> envpolicy_core::elf_head::Loads {
    use envpolicy_core::elf_head::{inspect, Loads, HEAD};
    // SAFETY: `prog` is NUL-terminated in place (above); O_NONBLOCK: a FIFO
    // put where the program was does not hold the exec.
    let fd = unsafe {
        sys::sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            prog.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return Loads::Unknown;
    }
    let fd = fd as core::ffi::c_int;
    let mut head = [0u8; HEAD];
    let n = crate::platform::fs::read_all(fd, &mut head);
    sys::close(fd);
    n.and_then(|n| head.get(..n))
        .map_or(Loads::Unknown, inspect)
}

/// envwrap's path, NUL-terminated, copied into the scratch; `None` when there
/// is none to run (each secret of `policy` in `wanted` then gets its line, once).
#[cold]
#[inline(never)]
pub(super) fn route_target<'s>(
    policy: &Policy<'_>,
    x: &ExecInput<'_>,
    wanted: u16,
    plan: Plan,
    scratch: &'s Scratch<'_>,
) -> Option<&'s [u8]> {
    let found = scratch.take_bytes(size_of::<PathSpace>()).and_then(|room| {
        // SAFETY: `room` is `size_of::<PathSpace>()` initialised bytes, and a
        // `PathSpace` is an array of that many `MaybeUninit<u8>` (alignment 1).
        let space = unsafe { &mut *room.as_mut_ptr().cast::<PathSpace>() };
        crate::state::helper::envwrap_path(space)
            .map(|e| e.c_path())
            .filter(|path| executable(path))
    });
    if found.is_none() && !plan.retry {
        (0..MAX_SECRETS as u32)
            .filter(|i| wanted & (1 << i) != 0)
            .for_each(|i| say_undelivered(policy, i, x.prog, Undelivered::SharedMemory));
    }
    found
}

/// Is `file` (NULL or NUL-terminated) a bare name, with a policy in force that
/// has secrets? Then the `execvp` and `posix_spawnp` families resolve it on
/// `PATH` before deciding: a secret's program is a path. Policies without
/// secrets answer at the section's count.
///
/// # Safety
/// `file` is NULL or NUL-terminated.
pub(crate) unsafe fn bare_name_under_secrets(file: *const c_char) -> bool {
    if file.is_null() {
        return false;
    }
    // SAFETY: the caller's contract.
    let name = unsafe { sys::cstr_bytes(file) };
    !name.is_empty()
        && !name.contains(&b'/')
        && crate::state::policy::with_active(|a| {
            a.is_some_and(|a| a.policy.count(envpolicy_core::compiled::sec::SECRETS) != 0)
        })
}

/// The secrets the policy in force gives `prog` (a path, without its NUL).
pub(crate) fn wanted_now(prog: &[u8]) -> u16 {
    crate::state::policy::with_active(|a| a.map_or(0, |a| secret::wanted(&a.policy, prog)))
}

/// Can this process execute the NUL-terminated `path`? (An envwrap named by
/// `$ENVSHIM_ENVWRAP` or expected beside the library that is not there leaves
/// the program to run without its secrets, rather than not at all.)
pub(crate) fn executable(path: &[u8]) -> bool {
    // SAFETY: `path` is NUL-terminated (`Envwrap::c_path`); faccessat reads it
    // and nothing else.
    let r = unsafe {
        sys::sys_call!(
            libc::SYS_faccessat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::X_OK
        )
    };
    r == 0
}

/// The exec as envwrap runs it: `[envwrap, "--routed", "--", PROGRAM,
/// args[1..]]`, with the
/// environment decided for the program (`envp`). `args` are the program's
/// arguments as decided (NULL-terminated), empty when it was given none.
pub(super) fn routed(
    x: &ExecInput<'_>,
    scratch: &Scratch<'_>,
    envwrap: &[u8],
    args: &[*const c_char],
    envp: &[*const c_char],
) -> Prepared {
    // A PATH search (CPython's `subprocess` in its `vfork` child) tries one
    // directory after another: a candidate that is not there fails as it would,
    // so that the search goes on, instead of starting envwrap for it.
    if x.prog.is_empty() || missing(x.prog) {
        return Prepared::Refuse {
            errno: libc::ENOENT,
        };
    }
    let given = args.iter().take_while(|p| !p.is_null()).skip(1);
    let Some(out) = scratch.take_ptrs(given.clone().count() + 5) else {
        return super::say_e2big(x.prog);
    };
    // `--routed`: the environment is decided already (a `set` that expands
    // variables keeps what this decision made of it).
    let head: [*const c_char; 4] = [
        envwrap.as_ptr().cast(),
        c"--routed".as_ptr(),
        c"--".as_ptr(),
        x.prog.as_ptr().cast(),
    ];
    for (slot, p) in out.iter_mut().zip(head.into_iter().chain(given.copied())) {
        *slot = p;
    }
    Prepared::Route {
        path: envwrap.as_ptr().cast(),
        argv: out.as_ptr(),
        envp: envp.as_ptr(),
    }
}

/// `envshim: secret NAME not delivered to PROG: REASON`, the one line for a
/// secret a program gets and did not. Names and paths only, each redacted as a
/// word; never a value (none was read, or it was refused).
#[cold]
#[inline(never)]
fn say_undelivered(policy: &Policy<'_>, secret: u32, prog: &[u8], why: Undelivered) {
    let name = policy
        .secret(secret)
        .map_or(&b"?"[..], |s| policy.str(s.name));
    let mut m = Msg::<768>::new();
    m.push(b"envshim: secret ")
        .push_word(name)
        .push(b" not delivered to ")
        .push_word(prog)
        .push(b": ")
        .push(why.text().as_bytes());
    m.write_stderr();
}
