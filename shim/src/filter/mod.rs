//! The one place where a hook asks the policy what an exec should do.
//!
//! Every hook calls [`prepare`] exactly once per exec (for the `p` variants: once,
//! before the `PATH` search, with the name as given), then does what the returned
//! [`Prepared`] says. `prepare` runs on the exec path, so it obeys the rule explained
//! in [`crate::hooks::exec`]: no allocation, no lock, no formatting. Everything it builds
//! lives in the caller's [`Scratch`]; messages are built with [`crate::state::message::Msg`].
//!
//! What it does, in order:
//! 1. view `envp`, `argv` and (when the program passed its own `envp`) the calling
//!    process's `environ` as byte slices, and get the current contents of the env
//!    files the policy imports (their values are re-read when they change, by
//!    design; [`crate::state::env_cache`] keeps them between execs);
//! 2. read the secrets the program gets where it may ([`deliver`]), and the
//!    managed layer's inputs on a host that has one ([`layered`]);
//! 3. [`envpolicy_core::pipeline::decide`], the exec pipeline envwrap, the
//!    supervisor and the Rust API run too: every pass, in this exec's scratch;
//! 4. for each pass, in enforce mode: refuse the exec (EPERM) when an argument
//!    holds a secret, warn about loud changes; in audit mode: write what enforce
//!    would change as JSON lines; then hand back the arrays of the pass the
//!    child gets, or the caller's own.
//!
//! Sizes are computed first and one arena is reserved for everything; when the
//! pipeline reports that a buffer was too small (a set value longer than guessed)
//! the arena is reserved again, larger, with the sizes it asked for. Nothing is
//! ever truncated: if memory cannot be had, the exec is refused with E2BIG and a
//! message.

use core::ffi::{c_char, c_int};
use core::mem::size_of;
use core::sync::atomic::{AtomicBool, Ordering};

use envpolicy_core::compiled::Mode;
use envpolicy_core::layer::Layer;
use envpolicy_core::pipeline;
use envpolicy_core::Policy;

pub(crate) mod deliver;
mod layered;
pub mod log;
mod report;

use crate::filter::deliver::{delivered, delivery_bytes, delivery_for, Delivery};
use crate::filter::report::Report;
pub use crate::platform::scratch::{Inline, Scratch};
use crate::platform::sys;
use crate::state::env_files::{self, OpenFile, MAX_ENV_FILES};
use crate::state::in_force::Active;
use crate::state::managed::InForce;
use crate::state::message::Msg;
use crate::state::sticky;

/// What one exec should do after the policy has been applied.
pub enum Prepared {
    /// Call the real function with the original argv/envp.
    Pass { mark: Mark },
    /// Call the real function with these arrays (NULL-terminated, live as long as
    /// `scratch`).
    Use {
        argv: *const *const c_char,
        envp: *const *const c_char,
        mark: Mark,
    },
    /// Run envwrap at `path` instead, with `argv` = `[envwrap, "--", PROGRAM,
    /// argv[1..]]` and the environment decided for the program: a program that
    /// gets a secret, started where its value cannot be read in its own
    /// process (see [`Site`]). envwrap reads it in the process it execs.
    Route {
        path: *const c_char,
        argv: *const *const c_char,
        envp: *const *const c_char,
    },
    /// Do not exec: fail with this errno (EPERM for a refusal, E2BIG when the shim
    /// cannot proceed). A one-line message has already been written to stderr.
    Refuse { errno: c_int },
}

/// Where a hook runs the decision, which says whether a secret's value may be
/// read there (docs/adr/0019-secrets-delivered-at-exec.md).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// In the process that execs (the exec family): it becomes the program,
    /// unless it is a `vfork`/`CLONE_VM` child that runs on its parent's memory
    /// ([`sys::shares_parent_memory`]).
    Exec,
    /// In the process above the child (`posix_spawn`, `system`, `popen`): a
    /// value read here would stay in it.
    Parent,
}

/// The supervisor's mark for one exec ([`envpolicy_core::mark`]): 0 when the
/// tree has no supervisor, or the shim was not the one to decide.
#[derive(Clone, Copy)]
pub struct Mark(pub u64);

/// How the secrets of `policy` that `prog` gets reach it. A policy without
/// secrets pays one count (`wanted`'s first test).
///
/// # Safety
/// `prog` is `program`'s bytes, read up to its NUL.
unsafe fn delivery_of(
    policy: &Policy<'_>,
    program: *const c_char,
    prog: &[u8],
    site: Site,
) -> Delivery {
    let wanted = envpolicy_core::secret::wanted(policy, prog);
    if wanted == 0 {
        return Delivery::None;
    }
    // SAFETY: `prog` was read up to its NUL, which is the byte after it.
    let prog_c = unsafe { core::slice::from_raw_parts(program.cast::<u8>(), prog.len() + 1) };
    delivery_for(policy, wanted, site, prog_c)
}

/// The policy's own warning (a policy that could not be used) is printed once.
#[link_section = ".data.envshim_zero"]
static WARNED: AtomicBool = AtomicBool::new(false);
/// Applies the policy to one exec.
///
/// `program` is the path (or name, for the p-variants before the search; called once
/// before the PATH search with the name as given) of what is about to run. `argv` and
/// `envp` may be NULL (Linux accepts both).
///
/// # Safety
/// `program` must be NULL or NUL-terminated; `argv` and `envp` must be NULL or
/// NULL-terminated arrays of NUL-terminated strings, valid for the whole call.
pub unsafe fn prepare(
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    site: Site,
    scratch: &mut Scratch<'_>,
) -> Prepared {
    let fresh = crate::state::policy::follow_edit();
    let managed = match crate::state::managed::in_force() {
        InForce::Absent => None,
        InForce::Layer(layer) => Some(layer),
        // SAFETY: `program` is NULL or NUL-terminated (the caller's contract).
        InForce::Loading => return unsafe { refuse_without_policy(program) },
    };
    crate::state::policy::with_active(|active| match active {
        Some(active) => {
            // SAFETY: the caller's contract, passed on.
            match unsafe { apply(active, managed, fresh, program, argv, envp, site, scratch) } {
                Ok(prepared) => prepared,
                // SAFETY: the caller's contract, passed on.
                Err(u) => unsafe {
                    apply_floor(active, managed, u, program, argv, envp, site, scratch)
                },
            }
        }
        // SAFETY: `program` is NULL or NUL-terminated (the caller's contract).
        None => unsafe { refuse_without_policy(program) },
    })
}

/// [`prepare`] when an env file of `active` is no file a policy reads: the floor,
/// which imports none, so its answer is final.
///
/// Cold and out of line, like every branch of `prepare` that is not the usual
/// one: the closure's frame is on the stack of every exec, and in a fork child
/// every stack page an exec touches is a page fault.
///
/// # Safety
/// As [`prepare`].
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn apply_floor(
    active: &Active,
    managed: Option<&'static Active>,
    u: env_files::Unusable,
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    site: Site,
    scratch: &mut Scratch<'_>,
) -> Prepared {
    match env_files::floor_for(active, u) {
        // SAFETY: the caller's contract, passed on.
        Some(floor) => unsafe { apply(&floor, managed, false, program, argv, envp, site, scratch) }
            .unwrap_or(Prepared::Refuse { errno: libc::EPERM }),
        None => Prepared::Refuse { errno: libc::EPERM },
    }
}

/// [`prepare`] when even the built-in policy failed validation: fail closed, and say so.
///
/// # Safety
/// `program` must be NULL or NUL-terminated.
#[cold]
#[inline(never)]
unsafe fn refuse_without_policy(program: *const c_char) -> Prepared {
    let mut m = Msg::<256>::new();
    m.push(b"envshim: refused to run ");
    // SAFETY: `program` is NULL or NUL-terminated (caller).
    unsafe { m.push_cstr_word(program) };
    m.push(b": no usable policy");
    m.write_stderr();
    Prepared::Refuse { errno: libc::EPERM }
}

/// The bytes of a NUL-terminated entry, or empty for NULL.
///
/// # Safety
/// `p` must be NULL or NUL-terminated and outlive `'a`.
unsafe fn bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: NUL-terminated (caller).
    unsafe { sys::cstr_bytes(p) }
}

/// Entry `i` of a NULL-terminated array that has more than `i` entries.
///
/// # Safety
/// `v` must be a NULL-terminated array with more than `i` entries.
unsafe fn at(v: *const *const c_char, i: usize) -> *const c_char {
    // SAFETY: `i` is inside the array (caller).
    unsafe { *v.add(i) }
}

/// The sizes one attempt reserves.
#[derive(Clone, Copy)]
struct Plan {
    /// The pipeline's, for every pass.
    sizes: pipeline::Plan,
    /// A second try after a shortfall.
    retry: bool,
}

/// The body of [`prepare`] for a usable policy; `Err` when one of its env files
/// is there but is no file a policy reads (the caller then applies the floor).
///
/// Not inlined: [`crate::state::policy::with_active`] calls its closure from two places.
///
/// # Safety
/// As [`prepare`].
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn apply(
    active: &Active,
    managed: Option<&'static Active>,
    fresh: bool,
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    site: Site,
    scratch: &mut Scratch<'_>,
) -> Result<Prepared, env_files::Unusable> {
    warn_policy_once(active);
    let policy = &active.policy;
    let settings = *policy.settings();
    // SAFETY: the caller's contract on every pointer below.
    let prog = unsafe { bytes(program) };
    // SAFETY: `prog` was read from `program` up to its NUL (`bytes`).
    let delivery = unsafe { delivery_of(policy, program, prog, site) };
    // SAFETY: as above.
    let (na, ne) = unsafe { (sys::count(argv), sys::count(envp)) };
    let environ = sys::environ_ptr();
    // The calling process's own environment counts too when the program handed the
    // child another one (`env -i`): its credentials' values must not reach argv.
    let np = if envp != environ {
        // SAFETY: `environ` is NULL or the process's NULL-terminated environment.
        unsafe { sys::count(environ) }
    } else {
        0
    };

    let preload = if settings.sticky {
        sticky::own_path().bytes()
    } else {
        None
    };
    let policy_entry = if settings.sticky {
        sticky::policy().bytes()
    } else {
        None
    };
    let hint = policy_entry.and_then(|entry| {
        let argv0 = if na > 0 {
            // SAFETY: argv[0] is NUL-terminated (caller's contract).
            unsafe { bytes(at(argv, 0)) }
        } else {
            &[]
        };
        crate::state::hint::for_child(active, fresh, entry, argv0)
    });

    // The env files: from the cache (one `stat` each), or read for this exec.
    let held = crate::state::env_cache::claim(policy);
    let mut files = [None; MAX_ENV_FILES];
    let (n_files, unusable, renamed) = match &held {
        Some(h) => (h.n, h.unusable, h.renamed),
        None => {
            let o = env_files::open_all(policy, &mut files);
            (o.n, o.unusable, o.renamed)
        }
    };
    if let Some(u) = unusable {
        env_files::close_all(&files, n_files);
        return Err(u);
    }
    let files_bytes: usize = files
        .iter()
        .take(n_files)
        .map(|f| f.map_or(0, |f| f.size + 1))
        .sum();
    let cached = held.as_ref();

    let mut arg_total = 0usize;
    for i in 0..na {
        // SAFETY: i < na.
        arg_total = arg_total.saturating_add(unsafe { sys::strlen(at(argv, i)) } + 1);
    }
    let plan = Plan {
        sizes: pipeline::Plan::first(
            pipeline::Sizes::guess(policy, preload, ne, na, arg_total),
            managed.is_some(),
        ),
        retry: false,
    };
    let input = ExecInput {
        policy,
        prog,
        argv,
        envp,
        environ,
        na,
        ne,
        np,
        files: &files,
        cached,
        n_files,
        renamed,
        files_bytes,
        preload,
        policy_entry,
        hint: hint.as_ref().map(|h| &h[..]),
        delivery,
    };
    let result = match managed {
        None => tries(&input, None, plan, scratch),
        // SAFETY: `program` is NUL-terminated and `prog` its bytes (above).
        Some(layer) => unsafe { layered::tries(layer, &input, program, site, plan, scratch) },
    };
    env_files::close_all(&files, n_files);
    // Nothing in `result` points into the cache (file values were copied into the
    // scratch), so the claim ends here.
    drop(held);
    Ok(result)
}

enum Attempt {
    Retry(Plan),
    Done(Prepared),
}

/// [`attempt`] until one is done.
#[inline(always)]
fn tries(
    x: &ExecInput<'_>,
    second: Option<&layered::Second<'_>>,
    mut plan: Plan,
    scratch: &mut Scratch<'_>,
) -> Prepared {
    loop {
        match attempt(x, second, plan, scratch) {
            Attempt::Retry(next) => plan = next,
            Attempt::Done(p) => return p,
        }
    }
}

/// The policy's own warning (a policy that could not be used), once per process.
/// The `fork` hook calls this too, in the parent, so that the children a shell
/// forks for its commands inherit the flag instead of each printing the line.
#[inline]
pub(crate) fn warn_policy_once(active: &Active) {
    if let Some(w) = active.warning {
        if !WARNED.load(Ordering::Relaxed) && !WARNED.swap(true, Ordering::Relaxed) {
            crate::state::message::say(w);
        }
    }
}

// Every message is built in a function of its own, out of line: its buffer would
// otherwise be part of `apply`'s frame, which a `fork` child's exec faults in page by
// page (see `crate::state::policy::with_active`).
#[cold]
#[inline(never)]
fn say_e2big(prog: &[u8]) -> Prepared {
    let mut m = Msg::<512>::new();
    m.push(b"envshim: cannot apply the policy to ")
        .push_word(prog)
        .push(b": no memory for the filtered environment");
    m.write_stderr();
    Prepared::Refuse { errno: libc::E2BIG }
}

fn refuse_e2big(prog: &[u8]) -> Attempt {
    Attempt::Done(say_e2big(prog))
}

/// What one exec hands the decision: the caller's arrays with their counts, and
/// what [`apply`] found for it (the env files, the sticky strings). Built once;
/// each [`attempt`] reads it.
struct ExecInput<'a> {
    policy: &'a Policy<'a>,
    prog: &'a [u8],
    argv: *const *const c_char,
    envp: *const *const c_char,
    environ: *const *const c_char,
    /// Entries of `argv`, `envp` and (when it is not `envp`) `environ`.
    na: usize,
    ne: usize,
    np: usize,
    files: &'a [Option<OpenFile>; MAX_ENV_FILES],
    /// The env files' contents and judgements, from the cache, when it holds them.
    cached: Option<&'a crate::state::env_cache::Held>,
    n_files: usize,
    /// The env files whose names changed since the compile (`EnvRequest`).
    renamed: u32,
    files_bytes: usize,
    preload: Option<&'a [u8]>,
    policy_entry: Option<&'a [u8]>,
    /// This child's start-up hint entry ([`crate::state::hint::for_child`]).
    hint: Option<&'a [u8]>,
    /// How the secrets this program gets reach it.
    delivery: Delivery,
}

/// The caller's arrays as byte slices (without their NULs).
struct Inputs<'s> {
    env: &'s [&'s [u8]],
    parent: &'s [&'s [u8]],
    args: &'s [&'s [u8]],
    /// The env files' contents, in the policy's order.
    contents: &'s [Option<&'s [u8]>],
}

/// One try with the sizes of `plan`: the scratch for every pass, the inputs
/// each layer reads, then the core's pipeline ([`pipeline::decide`]: the user
/// layer's pass, and the managed layer's over its result when the host has
/// one, docs/adr/0020-managed-layer.md), then what the shim does with it.
fn attempt(
    x: &ExecInput<'_>,
    second: Option<&layered::Second<'_>>,
    plan: Plan,
    scratch: &mut Scratch<'_>,
) -> Attempt {
    let bytes = scratch_bytes(x, second, plan);
    if scratch.reserve(0, bytes).is_err() {
        return refuse_e2big(x.prog);
    }
    let scratch = &*scratch;
    let Some(inputs) = take_inputs(x, plan, scratch) else {
        return refuse_e2big(x.prog);
    };
    let Some((secrets, route)) = delivered(x.policy, x.delivery, x, plan, scratch) else {
        return refuse_e2big(x.prog);
    };
    // An exec routed through envwrap is not decided again here: envwrap
    // decides both layers in the process that becomes the program.
    let second = second.filter(|_| route.is_none());
    let (managed, route) = match second.map(|s| s.gather(x, plan, scratch)) {
        None => (None, route),
        Some(Some((pass, managed_route))) => (Some(pass), managed_route),
        Some(None) => return refuse_e2big(x.prog),
    };
    let user = pipeline::Pass {
        layer: Layer::User,
        policy: x.policy,
        mode: x.policy.settings().mode,
        files: pipeline::Files {
            contents: inputs.contents,
            values: x.cached.and_then(|h| h.file_values()),
            judged: x.cached.and_then(|h| h.file_judged()),
            credentials: x.cached.and_then(|h| h.file_credentials()),
            renamed: x.renamed,
        },
        sticky: pipeline::Sticky {
            preload: x.preload,
            policy_entry: x.policy_entry,
            hint: x.hint,
        },
        secrets,
    };
    let exec = pipeline::Exec {
        routed: crate::state::routed::is(),
        ..pipeline::Exec::new(x.prog, inputs.args, inputs.env, inputs.parent)
    };
    match pipeline::decide(exec, &user, managed.as_ref(), plan.sizes, scratch) {
        Ok(outcome) => Attempt::Done(finish(x, &outcome, route, scratch)),
        Err(pipeline::Short::Grow(sizes)) => Attempt::Retry(Plan { sizes, retry: true }),
        Err(pipeline::Short::NoRoom) => refuse_e2big(x.prog),
    }
}

/// What the shim does with the pipeline's outcome: each pass's report (in
/// audit mode all of it, as JSON lines; in enforce the log, the refusal line
/// or the loud lines), then the exec as it stands, the child's arrays, or the
/// route through envwrap.
fn finish(
    x: &ExecInput<'_>,
    outcome: &pipeline::Outcome<'_>,
    route: Option<&[u8]>,
    scratch: &Scratch<'_>,
) -> Prepared {
    // A refused exec is said by its refusal alone, as every front end says
    // it: no pass's warnings before a later pass's refusal.
    let refused = matches!(outcome.fate(), pipeline::Fate::Refused { .. });
    for d in outcome.passes() {
        let report = Report::of(d, d.exec.identity.name, &outcome.user.exec);
        if d.pass.mode == Mode::Audit {
            report.all(crate::filter::log::audit_fd());
            continue;
        }
        // A refused program that is not there: the exec would fail with
        // ENOENT, and says so, with no line. A PATH search (CPython's
        // subprocess, a shell) tries one directory after another; it then goes
        // on quietly, and only the file that exists is refused and named.
        let refusal = d.refusal();
        if refusal.is_some() && missing(x.prog) {
            return Prepared::Refuse {
                errno: libc::ENOENT,
            };
        }
        if let Some(log) = crate::filter::log::fd() {
            report.all(log);
        }
        if let Some(r) = refusal {
            report.refusal(r);
            return Prepared::Refuse { errno: libc::EPERM };
        }
        if !refused {
            report.loud();
        }
    }
    // The exec as decided here, for a supervisor of the tree: an exec decided
    // by two layers carries no mark (the supervisor judges it itself).
    let mark = match outcome.managed {
        Some(_) => Mark(0),
        None => supervisor_mark(x.policy, outcome.user.env.supervisor_key),
    };
    let child = match (outcome.child(), route) {
        (Some(d), _) => d,
        (None, Some(_)) => &outcome.user,
        (None, None) => return Prepared::Pass { mark },
    };
    let (Some(out_env), Some(out_argv)) = (
        scratch.take_ptrs(child.env_len() + 1),
        scratch.take_ptrs(child.arg_emits.len() + 1),
    ) else {
        return say_e2big(x.prog);
    };
    // Every entry the pipeline hands is followed in memory by its NUL: the
    // caller's C strings, the built bytes, the policy's pooled strings.
    let n_env = child.fill_env(
        out_env,
        |e| e.as_ptr().cast(),
        // SAFETY: every pointer placed is such an entry.
        |p| unsafe { bytes(p) },
    );
    let n_argv = child.fill_argv(out_argv, |a| a.as_ptr().cast());
    let out_env = out_env.get(..=n_env).unwrap_or(&[]);
    let out_argv_ptr = if x.argv.is_null() {
        core::ptr::null()
    } else {
        out_argv.as_ptr()
    };
    if let Some(envwrap) = route {
        let args = if x.argv.is_null() {
            &[][..]
        } else {
            out_argv.get(..=n_argv).unwrap_or(&[])
        };
        return deliver::routed(x, scratch, envwrap, args, out_env);
    }
    Prepared::Use {
        argv: out_argv_ptr,
        envp: out_env.as_ptr(),
        mark,
    }
}

/// The supervisor's mark for an exec decided with `policy`
/// ([`envpolicy_core::mark`]): none when the child's environment holds no run key.
#[inline]
fn supervisor_mark(policy: &Policy<'_>, key: u64) -> Mark {
    use envpolicy_core::mark;
    if key == 0 {
        return Mark(0);
    }
    Mark(mark::mark(key, mark::identity(policy.as_bytes())))
}

/// Bytes of scratch an attempt with `plan` needs, all takes with their
/// alignment: the pipeline's ([`pipeline::Plan::bytes`]), and the shim's own
/// (the caller's arrays as slices, the env files, the secrets, the child's
/// pointer arrays).
fn scratch_bytes(x: &ExecInput<'_>, second: Option<&layered::Second<'_>>, plan: Plan) -> usize {
    let words = |n: usize, t: usize| n.saturating_mul(t).saturating_add(16);
    // The child's arrays: at most the emits of a pass, and a pair per argument.
    let most = |s: pipeline::Sizes| s.env.emits.saturating_add(s.args);
    let out_envp_len = plan
        .sizes
        .managed
        .map_or(0, most)
        .max(most(plan.sizes.user))
        + 1;
    let own = [
        words(x.ne + x.np + x.na, size_of::<&[u8]>()),
        x.files_bytes,
        words(out_envp_len + x.na + 1, size_of::<*const c_char>()),
        words(x.n_files, size_of::<Option<&[u8]>>()),
        delivery_bytes(x.delivery, x.na),
        second.map_or(0, |s| s.bytes(x.na)),
    ]
    .iter()
    .fold(0usize, |a, &b| a.saturating_add(b).saturating_add(16));
    own.saturating_add(plan.sizes.bytes())
}

/// The caller's arrays as slices, and the env files' contents: from the cache, or
/// read into the scratch (from the start again on a retry). `None`: no room.
fn take_inputs<'s>(x: &ExecInput<'_>, plan: Plan, scratch: &'s Scratch<'_>) -> Option<Inputs<'s>> {
    // `take_with` calls each closure with i below the count it was given.
    // SAFETY: i < ne entries of envp, each NUL-terminated and alive for the call.
    let env = scratch.take_with(x.ne, |i| unsafe { bytes(at(x.envp, i)) })?;
    // SAFETY: i < np entries of environ.
    let parent = scratch.take_with(x.np, |i| unsafe { bytes(at(x.environ, i)) })?;
    // SAFETY: i < na entries of argv.
    let args = scratch.take_with(x.na, |i| unsafe { bytes(at(x.argv, i)) })?;
    let files = x.files.get(..x.n_files).unwrap_or(&[]);
    let contents = file_contents(files, x.cached, plan.retry, scratch)?;
    Some(Inputs {
        env,
        parent,
        args,
        contents,
    })
}

/// The contents of a layer's env files `files`: from the cache, or read into
/// the scratch (from the start again on a retry). `None`: no room.
fn file_contents<'s>(
    files: &[Option<OpenFile>],
    cached: Option<&crate::state::env_cache::Held>,
    retry: bool,
    scratch: &'s Scratch<'_>,
) -> Option<&'s [Option<&'s [u8]>]> {
    let no_file: Option<&[u8]> = None;
    let contents = scratch.take_init(files.len(), no_file)?;
    for (i, (slot, f)) in contents.iter_mut().zip(files.iter()).enumerate() {
        if let Some(cached) = cached {
            *slot = cached.contents.get(i).copied().flatten();
            continue;
        }
        let Some(f) = f else { continue };
        let buf = scratch.take_bytes(f.size + 1)?;
        if retry {
            // SAFETY: lseek on our own descriptor.
            unsafe {
                crate::platform::sys::sys_call!(
                    libc::SYS_lseek,
                    f.fd,
                    0 as libc::off_t,
                    libc::SEEK_SET
                )
            };
        }
        if let Some(n) = env_files::read_all(f.fd, buf) {
            *slot = buf.get(..n.min(f.size)).map(|b| -> &[u8] { b });
        }
    }
    Some(contents)
}

/// Would running `prog` fail with ENOENT (or ENOTDIR) anyway? A refusal then
/// gives way to what the call would have done without the shim: the errno it
/// would have had, and no message. A path is looked at as it is (relative to the
/// working directory); a bare name is looked for in the working directory (as
/// `execve` would) and in every `PATH` directory (as the `p` variants would, with
/// glibc's default `PATH` when there is none), and is missing only when it is in
/// none of them.
///
/// `prog` is the program's bytes as `apply` took them from its NUL-terminated C
/// string (`bytes`): the byte after it is that string's NUL.
#[cold]
#[inline(never)]
fn missing(prog: &[u8]) -> bool {
    // An fd-based exec whose descriptor has no path (`exec::fd_name`): there is a
    // file, open.
    if prog.starts_with(b"fd ") {
        return false;
    }
    // SAFETY: `prog` is NUL-terminated in place (see above).
    if !unsafe { absent_c(prog.as_ptr()) } {
        return false;
    }
    if prog.contains(&b'/') || prog.is_empty() {
        return true;
    }
    let env = sys::environ_ptr();
    // SAFETY: `environ` is NULL or the process's NULL-terminated environment.
    let path = match unsafe { sys::env_get(env, b"PATH") } {
        // SAFETY: a NUL-terminated value in the environment.
        Some(v) => unsafe { sys::cstr_bytes(v) },
        None => b"/bin:/usr/bin",
    };
    let mut buf = [0u8; libc::PATH_MAX as usize + 1];
    !path.split(|&b| b == b':').any(|dir| {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let len = dir.len() + 1 + prog.len();
        let Some(dst) = buf.get_mut(..len + 1) else {
            return false;
        };
        let (d, rest) = dst.split_at_mut(dir.len());
        d.copy_from_slice(dir);
        let (slash, rest) = rest.split_at_mut(1);
        slash.copy_from_slice(b"/");
        let (p, nul) = rest.split_at_mut(prog.len());
        p.copy_from_slice(prog);
        nul.copy_from_slice(b"\0");
        // SAFETY: `dst` was just NUL-terminated.
        !unsafe { absent_c(dst.as_ptr()) }
    })
}

/// Is there nothing at the NUL-terminated path `p` (ENOENT or ENOTDIR)?
///
/// # Safety
/// `p` must be NUL-terminated.
unsafe fn absent_c(p: *const u8) -> bool {
    // SAFETY: NUL-terminated (caller); faccessat reads it and nothing else.
    let r = unsafe {
        crate::platform::sys::sys_call!(libc::SYS_faccessat, libc::AT_FDCWD, p, libc::F_OK)
    };
    r != 0 && matches!(sys::errno(), libc::ENOENT | libc::ENOTDIR)
}

#[cfg(test)]
mod tests {
    //! The exec logic on the host, as Bear tests its executor: a policy compiled
    //! here, the arrays an exec hook would pass, and what `apply` hands the real
    //! function. The failures name variables and arguments, never a value.

    use super::*;
    use std::ffi::CString;

    /// What the real function would be called with.
    #[derive(Debug, PartialEq)]
    enum Called {
        /// The caller's own arrays.
        AsGiven,
        /// New arrays: the child's argv and environment.
        With(Vec<String>, Vec<String>),
        /// envwrap's path, and the arrays it is run with.
        Routed(String, Vec<String>, Vec<String>),
        Refused(c_int),
    }

    /// A NULL-terminated array of C strings, alive as long as it is.
    struct CArray {
        _strings: Vec<CString>,
        ptrs: Vec<*const c_char>,
    }

    impl CArray {
        fn new(items: &[&str]) -> CArray {
            let strings: Vec<CString> = items.iter().map(|s| CString::new(*s).unwrap()).collect();
            let mut ptrs: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
            ptrs.push(core::ptr::null());
            CArray {
                _strings: strings,
                ptrs,
            }
        }
    }

    /// # Safety
    /// `v` is a NULL-terminated array of NUL-terminated strings.
    unsafe fn strings(v: *const *const c_char) -> Vec<String> {
        // SAFETY: the caller's contract.
        (0..unsafe { sys::count(v) })
            // SAFETY: `i` is inside the array; each entry is NUL-terminated.
            .map(|i| String::from_utf8_lossy(unsafe { bytes(at(v, i)) }).into_owned())
            .collect()
    }

    /// One exec of `argv` with `env`, judged by the policy `text`.
    fn exec_under(text: &str, argv: &[&str], env: &[&str]) -> Called {
        // The policy is compiled from its text; the path only names it (it
        // imports nothing, so nothing is read beside it).
        let compiled = envpolicy::load::compile_text(text, std::path::Path::new("/policy.toml"))
            .expect("the policy compiles");
        // The shim's policies live as long as the process; so does this one.
        let bytes: &'static [u8] = Box::leak(compiled.bytes().to_vec().into_boxed_slice());
        let active = Active {
            policy: Policy::from_bytes(bytes).expect("the compiled policy validates"),
            source: b"policy.toml",
            warning: None,
            retry: None,
        };
        let (a, e) = (CArray::new(argv), CArray::new(env));
        let program = CString::new(argv[0]).unwrap();
        let inline = Inline::uninit();
        let mut scratch = Scratch::new(&inline);
        // SAFETY: NUL-terminated program, NULL-terminated arrays, alive for the call.
        let prepared = unsafe {
            apply(
                &active,
                None,
                true,
                program.as_ptr(),
                a.ptrs.as_ptr(),
                e.ptrs.as_ptr(),
                Site::Exec,
                &mut scratch,
            )
        };
        match prepared.ok().expect("the policy imports no env file") {
            Prepared::Pass { .. } => Called::AsGiven,
            // SAFETY: the arrays `apply` built, alive as long as `scratch`.
            Prepared::Use { argv, envp, .. } => unsafe {
                Called::With(strings(argv), strings(envp))
            },
            // SAFETY: as above.
            Prepared::Route { path, argv, envp } => unsafe {
                Called::Routed(
                    String::from_utf8_lossy(super::bytes(path)).into_owned(),
                    strings(argv),
                    strings(envp),
                )
            },
            Prepared::Refuse { errno } => Called::Refused(errno),
        }
    }

    /// The names of a child's environment.
    fn names(env: &[String]) -> Vec<&str> {
        env.iter()
            .map(|e| e.split('=').next().unwrap_or(""))
            .collect()
    }

    const BY_NAME: &str = "DEPLOY_API_KEY=not-a-real-credential-0123";

    #[test]
    fn a_credential_by_name_is_refused_and_the_rest_passes_in_order() {
        let called = exec_under(
            "version = 1\n",
            &["/bin/true", "plain"],
            &["LANG=C", BY_NAME, "PATH=/usr/bin:/bin"],
        );
        let Called::With(argv, env) = called else {
            panic!(
                "the exec was not given new arrays: {:?}",
                discriminant(&called)
            );
        };
        assert_eq!(argv, ["/bin/true", "plain"]);
        assert!(
            names(&env).starts_with(&["LANG", "PATH"]),
            "the child's environment: {:?}",
            names(&env)
        );
        assert!(!names(&env).contains(&"DEPLOY_API_KEY"));
    }

    #[test]
    fn a_credential_in_an_argument_refuses_the_exec() {
        let arg = format!(
            "--header=Authorization: Bearer {}",
            BY_NAME.split('=').nth(1).unwrap()
        );
        let called = exec_under("version = 1\n", &["/bin/true", &arg], &[BY_NAME]);
        assert_eq!(discriminant(&called), "Refused(EPERM)");
    }

    /// (Without stickiness: the shim puts this process's own `LD_PRELOAD` and
    /// `ENVSHIM_POLICY` back into every child, rule 8.)
    #[test]
    fn an_exec_the_policy_does_not_change_keeps_its_arrays() {
        let called = exec_under(
            "version = 1\nsticky = false\n",
            &["/bin/true", "plain"],
            &["LANG=C", "PATH=/usr/bin:/bin"],
        );
        assert_eq!(discriminant(&called), "AsGiven");
    }

    #[test]
    fn audit_mode_changes_nothing() {
        let called = exec_under(
            "version = 1\nmode = \"audit\"\nquiet = true\n",
            &["/bin/true", "plain"],
            &["LANG=C", BY_NAME],
        );
        assert_eq!(discriminant(&called), "AsGiven");
    }

    #[test]
    fn set_and_strip_shape_the_child_environment() {
        let called = exec_under(
            "version = 1\nstrip = [\"DEBUG_*\"]\n\n[set]\nLANG = \"C.UTF-8\"\n",
            &["/bin/true"],
            &["DEBUG_LEVEL=3", "LANG=C", "HOME=/root"],
        );
        let Called::With(_, env) = called else {
            panic!(
                "the exec was not given new arrays: {:?}",
                discriminant(&called)
            );
        };
        assert!(
            env.contains(&"LANG=C.UTF-8".to_string()),
            "{:?}",
            names(&env)
        );
        assert!(env.contains(&"HOME=/root".to_string()), "{:?}", names(&env));
        assert!(!names(&env).contains(&"DEBUG_LEVEL"), "{:?}", names(&env));
    }

    /// A made-up token for the secret tests (never printed: failures show names).
    const FAKE_TOKEN: &str = "envshim-unit-token-9fQ3xW7LmZ2k";

    /// A policy giving `GH_TOKEN` to `/usr/bin/env` (a program root owns, as a
    /// secret's must be) from a file holding the fake token
    /// with `mode`, refusing `gh auth token`; the file's directory, which the
    /// caller removes.
    fn secret_policy(tag: &str, mode: u32) -> (String, std::path::PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("envshim-unit-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("gh");
        std::fs::write(&file, format!("{FAKE_TOKEN}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let text = format!(
            "version = 1\nsticky = false\n\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:{}\"\nprogram = \"/usr/bin/env\"\ndeny_args = [[\"auth\", \"token\"]]\n",
            file.display()
        );
        (text, dir)
    }

    /// This test process is no `vfork` child: the filter reads the file here
    /// and the child's environment gets `GH_TOKEN`, once, in place of an
    /// inherited entry; a program that is not `gh` gets neither.
    #[test]
    fn a_secret_is_delivered_to_its_program_in_place_of_an_inherited_entry() {
        let (text, dir) = secret_policy("deliver", 0o600);
        let called = exec_under(
            &text,
            &["/usr/bin/env", "pr", "list"],
            &["LANG=C", "GH_TOKEN=inherited-value-0000"],
        );
        let other = exec_under(
            &text,
            &["/bin/true"],
            &["LANG=C", "GH_TOKEN=inherited-value-0000"],
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let Called::With(argv, env) = &called else {
            panic!("gh was not given new arrays: {}", discriminant(&called));
        };
        assert_eq!(argv, &["/usr/bin/env", "pr", "list"]);
        let delivered = format!("GH_TOKEN={FAKE_TOKEN}");
        assert_eq!(
            env.iter().filter(|e| e.starts_with("GH_TOKEN=")).count(),
            1,
            "{:?}",
            names(env)
        );
        assert!(
            env.contains(&delivered),
            "GH_TOKEN is not the file's value: {:?}",
            names(env)
        );
        let Called::With(_, env) = &other else {
            panic!("true was not given new arrays: {}", discriminant(&other));
        };
        assert!(!names(env).contains(&"GH_TOKEN"), "{:?}", names(env));
    }

    #[test]
    fn a_source_others_may_read_delivers_nothing() {
        let (text, dir) = secret_policy("untrusted", 0o644);
        let called = exec_under(&text, &["/usr/bin/env"], &["LANG=C"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(discriminant(&called), "AsGiven");
    }

    /// Audit mode changes nothing, and so reads and delivers nothing.
    #[test]
    fn audit_mode_delivers_no_secret() {
        let (text, dir) = secret_policy("audit", 0o600);
        let text = text.replace(
            "version = 1\n",
            "version = 1\nmode = \"audit\"\nquiet = true\n",
        );
        let called = exec_under(&text, &["/usr/bin/env"], &["LANG=C"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(discriminant(&called), "AsGiven");
    }

    #[test]
    fn gh_auth_token_is_refused() {
        let (text, dir) = secret_policy("deny", 0o600);
        // The secret's program (a refused program that is not there gives way
        // to ENOENT).
        let called = exec_under(&text, &["/usr/bin/env", "auth", "token"], &["LANG=C"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(discriminant(&called), "Refused(EPERM)");
    }

    /// What was called, without any value: for failure messages.
    fn discriminant(c: &Called) -> String {
        match c {
            Called::AsGiven => "AsGiven".into(),
            Called::With(a, e) => format!("With({} arguments, {:?})", a.len(), names(e)),
            Called::Routed(p, a, e) => format!("Routed({p}, {a:?}, {:?})", names(e)),
            Called::Refused(libc::EPERM) => "Refused(EPERM)".into(),
            Called::Refused(e) => format!("Refused({e})"),
        }
    }
}
