//! The exec pipeline: the one way, for every front end, from an exec's inputs
//! to the child's arrays and the exec's fate (docs/adr/0021-one-exec-pipeline.md).
//!
//! An exec is decided in passes, one per layer of policy: the user layer's, then,
//! on a host that has one, the managed layer's over what the user pass gives the
//! child ([`crate::layer`]). Each pass is the environment decision
//! ([`crate::decide`]), then the argv decision with its verdicts
//! ([`crate::argv`]), then the child's arrays with the pairs argv moved into
//! the environment. Which arrays the managed pass reads, which parent
//! environment it searches, what audit mode changes (nothing), which refusal
//! stands, and which pass's arrays the child gets: all of it is here, once.
//! Before, the shim (`filter/`), the std side (`outcome`'s chain and its
//! `layered` combine) and through it envwrap, the supervisor and the Rust API
//! each wrote the passes again, and they disagreed where they were written
//! apart.
//!
//! What stays in a front end is I/O: gathering the inputs (the caller's arrays,
//! the env files, the secrets it may read), an [`Arena`] to build in, and what
//! it does with the [`Outcome`]: the shim points the kernel at the child's
//! arrays, envwrap execs them, the library sets a `Command`'s, the supervisor
//! compares them with the exec a process made and asks [`crate::capability`].
//!
//! Nothing here allocates, locks or formats: the shim runs it between `fork`
//! and `exec`. Every buffer comes from the caller's arena, sized by a [`Plan`];
//! a plan that proves too small comes back grown ([`Short::Grow`]), and the
//! caller tries again with it, never with anything truncated.

use core::cell::Cell;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};

use crate::argv::{self, ArgAction, ArgEmit, ArgRule, ArgVerdict, ArgvRequest, ArgvScratch};
use crate::argv::{ArgvSummary, FileCredential};
use crate::compiled::Mode;
use crate::decide::{self, Action, Emit, EnvRequest, EnvScratch, EnvSummary, Rule, Shortfall};
use crate::decide::Verdict;
use crate::envfile::Assignment;
use crate::identity::{self, Identity};
use crate::layer::{self, Layer};
use crate::Policy;

/// Where a pass builds: disjoint pieces of one buffer the front end reserved
/// ([`Plan::bytes`]), handed out in order and never freed one by one.
pub trait Arena {
    /// `n` values, value `i` being `f(i)`; `None` when the rest of the
    /// reservation is too small.
    #[allow(clippy::mut_from_ref)]
    fn take_with<T: Copy>(&self, n: usize, f: impl FnMut(usize) -> T) -> Option<&mut [T]>;
    /// `n` zeroed bytes; `None` as for [`Arena::take_with`].
    #[allow(clippy::mut_from_ref)]
    fn take_bytes(&self, n: usize) -> Option<&mut [u8]>;
    /// Bytes of the reservation not handed out yet.
    fn remaining(&self) -> usize;
}

/// An [`Arena`] over a buffer the caller owns: for the std front ends, which
/// allocate a `Vec<u64>` of [`Plan::bytes`] and build in it.
pub struct Bump<'b> {
    base: *mut u8,
    cap: usize,
    used: Cell<usize>,
    _buf: PhantomData<&'b mut [u64]>,
}

impl<'b> Bump<'b> {
    /// An arena over `buf`, whose start is aligned for every type a pass takes.
    pub fn new(buf: &'b mut [u64]) -> Self {
        Bump {
            base: buf.as_mut_ptr().cast::<u8>(),
            cap: buf.len().saturating_mul(size_of::<u64>()),
            used: Cell::new(0),
            _buf: PhantomData,
        }
    }

    /// The next `bytes` bytes aligned to `align`, or `None`.
    fn claim(&self, bytes: usize, align: usize) -> Option<*mut u8> {
        let start = self.used.get().checked_add(align - 1)? & !(align - 1);
        let end = start.checked_add(bytes)?;
        if end > self.cap || align > align_of::<u64>() {
            return None;
        }
        self.used.set(end);
        // SAFETY: `start <= end <= cap`, inside the buffer `base` points to.
        Some(unsafe { self.base.add(start) })
    }
}

impl Arena for Bump<'_> {
    fn take_with<T: Copy>(&self, n: usize, mut f: impl FnMut(usize) -> T) -> Option<&mut [T]> {
        let p = self
            .claim(n.checked_mul(size_of::<T>())?, align_of::<T>())?
            .cast::<T>();
        // SAFETY: `claim` handed out `n` values' bytes, aligned for `T` (at
        // most the buffer's own alignment), that no other take overlaps (`used`
        // only grows, and the buffer is borrowed for the arena's life); each
        // value is written before the slice is made.
        unsafe {
            for i in 0..n {
                p.add(i).write(f(i));
            }
            Some(core::slice::from_raw_parts_mut(p, n))
        }
    }

    fn take_bytes(&self, n: usize) -> Option<&mut [u8]> {
        let p = self.claim(n, 1)?;
        // SAFETY: as in `take_with`, for bytes.
        unsafe {
            core::ptr::write_bytes(p, 0, n);
            Some(core::slice::from_raw_parts_mut(p, n))
        }
    }

    fn remaining(&self) -> usize {
        self.cap.saturating_sub(self.used.get())
    }
}

/// One exec as its caller made it: entries and arguments as bytes without
/// their NULs. The shim hands C strings, so each of its slices is followed by
/// a NUL in memory, and so is every slice of the child's arrays built from them
/// ([`Decided::fill_env`]).
#[derive(Clone, Copy, Debug)]
pub struct Exec<'e> {
    /// The program: a path, or a bare name before a `PATH` search.
    pub program: &'e [u8],
    pub argv: &'e [&'e [u8]],
    pub env: &'e [&'e [u8]],
    /// The calling process's own environment when the program hands the child
    /// another one; empty when the child inherits it.
    pub parent: &'e [&'e [u8]],
    /// The program as every rule and message names it ([`identity::of`]):
    /// the script an interpreter runs, through launchers.
    pub identity: Identity<'e>,
    /// The environment is one another front end already decided, routed
    /// through envwrap for its secrets ([`decide::EnvRequest::routed`]).
    pub routed: bool,
}

impl<'e> Exec<'e> {
    /// An exec, with its program's [`identity`] worked out once.
    pub fn new(
        program: &'e [u8],
        argv: &'e [&'e [u8]],
        env: &'e [&'e [u8]],
        parent: &'e [&'e [u8]],
    ) -> Exec<'e> {
        Exec {
            program,
            argv,
            env,
            parent,
            identity: identity::of(program, argv),
            routed: false,
        }
    }
}

/// Rule 8's entries, which a sticky policy keeps in every child.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sticky<'a> {
    /// The shim's path, for `LD_PRELOAD`.
    pub preload: Option<&'a [u8]>,
    /// `ENVSHIM_POLICY=...`.
    pub policy_entry: Option<&'a [u8]>,
    /// `ENVSHIM_HINT=...`.
    pub hint: Option<&'a [u8]>,
}

/// A layer's env files as its front end read them, with what it worked out
/// from them in advance (the shim's cache); `None`: worked out here.
#[derive(Clone, Copy, Debug, Default)]
pub struct Files<'a> {
    /// Each file's contents, in the policy's order; `None`: unreadable.
    pub contents: &'a [Option<&'a [u8]>],
    /// [`decide::file_keep_value`] of every file keep.
    pub values: Option<&'a [Option<Assignment<'a>>]>,
    /// [`decide::file_value_passes_globally`] of those values.
    pub judged: Option<&'a [Option<bool>]>,
    /// [`argv::file_credentials`] of the files.
    pub credentials: Option<&'a [FileCredential<'a>]>,
    /// The files whose names changed since the compile
    /// ([`decide::EnvRequest::renamed_files`]).
    pub renamed: u32,
}

/// One layer's pass: its policy and what its front end gathered for it.
#[derive(Clone, Copy)]
pub struct Pass<'a> {
    pub layer: Layer,
    pub policy: &'a Policy<'a>,
    /// The pass's mode ([`layer::pass_mode`]): in audit it decides and
    /// changes nothing.
    pub mode: Mode,
    pub files: Files<'a>,
    pub sticky: Sticky<'a>,
    /// The value of each of the layer's `[[secret]]`s the front end read for
    /// this program, by index (empty: none delivered; rule 6b).
    pub secrets: &'a [Option<&'a [u8]>],
}

/// The sizes one pass builds with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub env: Shortfall,
    pub arg_bytes: usize,
    /// Entries and arguments of the pass's input.
    pub envs: usize,
    pub args: usize,
}

impl Sizes {
    /// A first guess for a pass of `policy` (with rule 8's `preload`) over an
    /// input of `envs` entries and `args` arguments of `arg_bytes` bytes in
    /// all with their NULs.
    pub fn guess(
        policy: &Policy<'_>,
        preload: Option<&[u8]>,
        envs: usize,
        args: usize,
        arg_bytes: usize,
    ) -> Sizes {
        let preload = preload.map_or(0, <[u8]>::len);
        Sizes {
            env: decide::scratch_sizes(policy, envs, preload),
            arg_bytes: arg_bytes.saturating_add(16),
            envs,
            args,
        }
    }

    /// [`Sizes::guess`] for `exec`.
    pub fn of(pass: &Pass<'_>, exec: &Exec<'_>) -> Sizes {
        let (envs, args) = (exec.env.len(), exec.argv.len());
        Sizes::guess(pass.policy, pass.sticky.preload, envs, args, with_nuls(exec.argv))
    }

    /// Arena bytes the pass's decisions take, with each take's alignment.
    pub fn bytes(&self) -> usize {
        let s = self.env;
        let words = |n: usize, t: usize| n.saturating_mul(t).saturating_add(16);
        [
            words(s.verdicts, size_of::<Verdict>()),
            words(s.seen, size_of::<u32>()),
            words(s.emits, size_of::<Emit>()),
            s.bytes,
            words(self.args, size_of::<ArgVerdict>()),
            words(self.args, size_of::<ArgEmit>()),
            self.arg_bytes,
        ]
        .iter()
        .fold(0usize, |a, &b| a.saturating_add(b).saturating_add(16))
    }

    /// Arena bytes of the input arrays a managed pass reads (the user pass's
    /// child arrays as slices).
    fn input_bytes(&self) -> usize {
        self.envs
            .saturating_add(self.args)
            .saturating_mul(size_of::<&[u8]>())
            .saturating_add(32)
    }
}

/// The sizes of every pass of one exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub user: Sizes,
    /// The managed pass's (a guess until a try learnt them).
    pub managed: Option<Sizes>,
}

impl Plan {
    /// The first try's plan with the user pass's `sizes`: the managed pass,
    /// when there is one, guessed as large.
    pub fn first(sizes: Sizes, managed: bool) -> Plan {
        Plan {
            user: sizes,
            managed: managed.then_some(sizes),
        }
    }

    /// Arena bytes every pass of the plan takes.
    pub fn bytes(&self) -> usize {
        let managed = self
            .managed
            .map_or(0, |m| m.bytes().saturating_add(m.input_bytes()));
        self.user.bytes().saturating_add(managed)
    }
}

/// Why a try did not finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Short {
    /// A buffer was too small: try again with this plan.
    Grow(Plan),
    /// The arena could not hold what the plan asked for.
    NoRoom,
}

/// What makes an exec refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The path given to exec holds a secret (`ArgvSummary::program`).
    Program(ArgRule),
    /// This argument holds one.
    Argument(usize),
}

/// One pass, decided.
#[derive(Clone, Copy)]
pub struct Decided<'s> {
    /// The layer's pass: its policy, mode, env files and rule 8's entries.
    pub pass: &'s Pass<'s>,
    /// What the pass read: the caller's exec, or for the managed pass the user
    /// pass's result.
    pub exec: Exec<'s>,
    pub env: EnvSummary,
    /// One verdict per input entry.
    pub verdicts: &'s [Verdict],
    /// The child's environment, before the pairs argv moved.
    pub emits: &'s [Emit],
    pub env_bytes: &'s [u8],
    pub argv: ArgvSummary,
    /// One verdict per argument.
    pub arg_verdicts: &'s [ArgVerdict],
    /// The child's argv.
    pub arg_emits: &'s [ArgEmit],
    pub arg_bytes: &'s [u8],
}

impl<'s> Decided<'s> {
    /// The refusal the pass makes (or, in audit, would make).
    pub fn refusal(&self) -> Option<Refusal> {
        if let Some(rule) = self.argv.program {
            return Some(Refusal::Program(rule));
        }
        self.argv.refused.map(|i| Refusal::Argument(i as usize))
    }

    /// The refusal that stands: the pass's, when it enforces.
    pub fn refuses(&self) -> Option<Refusal> {
        self.refusal().filter(|_| self.pass.mode == Mode::Enforce)
    }

    /// The pass changes the exec: it is in enforce mode, and its child's arrays
    /// are not its input's.
    pub fn changes(&self) -> bool {
        self.pass.mode == Mode::Enforce
            && (self.env.changed != 0 || self.env.added != 0 || self.argv.changed != 0)
    }

    /// Entries of the child's environment ([`Decided::fill_env`] fills as many).
    pub fn env_len(&self) -> usize {
        self.emits.len() + self.argv.moved as usize
    }

    /// The entry `e` stands for.
    fn entry(&self, e: Emit) -> Option<&'s [u8]> {
        match e {
            Emit::Input(i) => self.exec.env.get(i as usize).copied(),
            Emit::Built { start, len, .. } => {
                let start = start as usize;
                self.env_bytes.get(start..start.saturating_add(len as usize))
            }
            // The pooled string without its NUL, which follows it in the pool.
            Emit::Pooled { entry, .. } => {
                let c = self.pass.policy.c_str(entry);
                c.get(..c.len().saturating_sub(1))
            }
        }
    }

    /// The child's environment into `out` through `make`, then each pair argv
    /// moved into it (in the place of the entry of its name, else at the end;
    /// `view` reads back an entry placed), and the count filled.
    pub fn fill_env<T: Copy>(
        &self,
        out: &mut [T],
        make: impl Fn(&'s [u8]) -> T,
        view: impl Fn(T) -> &'s [u8],
    ) -> usize {
        let mut n = 0usize;
        let mut slots = out.iter_mut();
        for e in self.emits {
            let Some(entry) = self.entry(*e) else { continue };
            let Some(slot) = slots.next() else { break };
            *slot = make(entry);
            n += 1;
        }
        if self.argv.moved == 0 {
            return n;
        }
        for (v, arg) in self.arg_verdicts.iter().zip(self.exec.argv) {
            let Some((name, entry)) = v.moved_pair(arg) else {
                continue;
            };
            let at = out
                .iter()
                .take(n)
                .position(|&p| argv::entry_has_name(view(p), name));
            let slot = match at {
                Some(k) => out.get_mut(k),
                None => {
                    n += 1;
                    out.get_mut(n - 1)
                }
            };
            if let Some(slot) = slot {
                *slot = make(entry);
            }
        }
        n.min(out.len())
    }

    /// The argument `e` stands for.
    fn arg(&self, e: ArgEmit) -> Option<&'s [u8]> {
        match e {
            ArgEmit::Input(i) => self.exec.argv.get(i as usize).copied(),
            ArgEmit::Built { start, len } => {
                let start = start as usize;
                self.arg_bytes.get(start..start.saturating_add(len as usize))
            }
        }
    }

    /// The child's argv into `out` through `make`, and the count filled.
    pub fn fill_argv<T: Copy>(&self, out: &mut [T], make: impl Fn(&'s [u8]) -> T) -> usize {
        let mut n = 0usize;
        for e in self.arg_emits {
            let (Some(arg), Some(slot)) = (self.arg(*e), out.get_mut(n)) else {
                continue;
            };
            *slot = make(arg);
            n += 1;
        }
        n
    }

    /// Bytes the child's argv takes with its NULs.
    fn argv_bytes(&self) -> usize {
        self.arg_emits
            .iter()
            .map(|e| self.arg(*e).map_or(0, <[u8]>::len))
            .fold(0usize, |a, n| a.saturating_add(n).saturating_add(1))
    }
}

/// Bytes `argv` takes with its NULs.
fn with_nuls(argv: &[&[u8]]) -> usize {
    argv.iter()
        .fold(0usize, |a, arg| a.saturating_add(arg.len()).saturating_add(1))
}

/// How one exec ends, over all its passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The exec runs; `changed`: with the arrays of [`Outcome::child`], else
    /// as its caller made it.
    Runs { changed: bool },
    /// An enforcing pass refuses it.
    Refused { layer: Layer, refusal: Refusal },
}

/// Every pass of one exec.
#[derive(Clone, Copy)]
pub struct Outcome<'s> {
    pub user: Decided<'s>,
    /// The managed layer's pass: none on a host without one, or when the user
    /// pass refuses the exec.
    pub managed: Option<Decided<'s>>,
}

impl<'s> Outcome<'s> {
    /// The passes in the order they ran.
    pub fn passes(&self) -> impl Iterator<Item = &Decided<'s>> {
        core::iter::once(&self.user).chain(self.managed.as_ref())
    }

    /// The pass whose arrays the child gets: the last that changes the exec.
    pub fn child(&self) -> Option<&Decided<'s>> {
        self.passes().filter(|d| d.changes()).last()
    }

    /// The first refusal of an enforcing pass, and its pass.
    fn standing(&self) -> Option<(&Decided<'s>, Refusal)> {
        self.passes().find_map(|d| Some((d, d.refuses()?)))
    }

    /// The exec's fate: the first refusal of an enforcing pass, else it runs.
    pub fn fate(&self) -> Fate {
        match self.standing() {
            Some((d, refusal)) => Fate::Refused {
                layer: d.pass.layer,
                refusal,
            },
            None => Fate::Runs {
                changed: self.child().is_some(),
            },
        }
    }

    /// The refusal to report: the one that stands, else, when no pass
    /// enforces, the first that an audit pass would make.
    pub fn refusal(&self) -> Option<(&Decided<'s>, Refusal)> {
        if let Some(stands) = self.standing() {
            return Some(stands);
        }
        if self.passes().any(|d| d.pass.mode == Mode::Enforce) {
            return None;
        }
        self.passes().find_map(|d| Some((d, d.refusal()?)))
    }
}

/// Decides one exec: the user pass over `exec`, then the managed pass (when
/// `managed` is given) over what the user pass gives the child, in `arena`
/// reserved for `plan` ([`Plan::bytes`]).
pub fn decide<'s, A: Arena>(
    exec: Exec<'s>,
    user: &'s Pass<'s>,
    managed: Option<&'s Pass<'s>>,
    plan: Plan,
    arena: &'s A,
) -> Result<Outcome<'s>, Short> {
    let first = one_pass(user, exec, plan.user, arena).map_err(|s| match s {
        PassShort::Grow(user) => Short::Grow(Plan { user, ..plan }),
        PassShort::NoRoom => Short::NoRoom,
    })?;
    let Some(managed) = managed.filter(|_| first.refuses().is_none()) else {
        return Ok(Outcome {
            user: first,
            managed: None,
        });
    };
    let (envs, args) = if first.changes() {
        (first.env_len(), first.arg_emits.len())
    } else {
        (exec.env.len(), exec.argv.len())
    };
    let sizes = match plan.managed {
        Some(s) if s.envs == envs && s.args == args => s,
        _ => {
            let arg_bytes = if first.changes() {
                first.argv_bytes()
            } else {
                with_nuls(exec.argv)
            };
            Sizes::guess(managed.policy, managed.sticky.preload, envs, args, arg_bytes)
        }
    };
    let grow = |sizes| {
        Short::Grow(Plan {
            managed: Some(sizes),
            ..plan
        })
    };
    if arena.remaining() < sizes.bytes().saturating_add(sizes.input_bytes()) {
        return Err(grow(sizes));
    }
    let second_exec = second_input(exec, &first, arena).ok_or(Short::NoRoom)?;
    match one_pass(managed, second_exec, sizes, arena) {
        Ok(second) => Ok(Outcome {
            user: first,
            managed: Some(second),
        }),
        Err(PassShort::Grow(sizes)) => Err(grow(sizes)),
        Err(PassShort::NoRoom) => Err(Short::NoRoom),
    }
}

/// The managed pass's input: what the user pass gives the child, with the
/// caller's own environment as its parent ([`layer::parent_of_second`]),
/// unless that is its input as it stands.
fn second_input<'s, A: Arena>(exec: Exec<'s>, first: &Decided<'s>, arena: &'s A) -> Option<Exec<'s>> {
    let (env, argv): (&'s [&'s [u8]], &'s [&'s [u8]]) = if first.changes() {
        let env = arena.take_with(first.env_len(), |_| &[][..])?;
        let n = first.fill_env(env, |e| e, |e| e);
        let argv = arena.take_with(first.arg_emits.len(), |_| &[][..])?;
        let k = first.fill_argv(argv, |a| a);
        (env.get(..n)?, argv.get(..k)?)
    } else {
        (exec.env, exec.argv)
    };
    let parent = layer::parent_of_second(exec.env, exec.parent);
    let parent = if core::ptr::eq(parent, env) { &[][..] } else { parent };
    Some(Exec {
        program: exec.program,
        argv,
        env,
        parent,
        identity: exec.identity,
        routed: exec.routed,
    })
}

enum PassShort {
    Grow(Sizes),
    NoRoom,
}

/// One layer's pass over `exec`: the environment decision, then the argv
/// decision with its verdicts.
fn one_pass<'s, A: Arena>(
    pass: &'s Pass<'s>,
    exec: Exec<'s>,
    sizes: Sizes,
    arena: &'s A,
) -> Result<Decided<'s>, PassShort> {
    let s = sizes.env;
    let verdict0 = Verdict::new(Action::Keep, Rule::BaseAll);
    let (Some(verdicts), Some(seen), Some(emits), Some(env_bytes)) = (
        arena.take_with(s.verdicts, |_| verdict0),
        arena.take_with(s.seen, |_| 0u32),
        arena.take_with(s.emits, |_| Emit::Input(0)),
        arena.take_bytes(s.bytes),
    ) else {
        return Err(PassShort::NoRoom);
    };
    let req = EnvRequest {
        program: exec.program,
        identity: exec.identity,
        env: exec.env,
        env_files: pass.files.contents,
        preload: pass.sticky.preload,
        policy_entry: pass.sticky.policy_entry,
        hint: pass.sticky.hint,
        file_values: pass.files.values,
        file_judged: pass.files.judged,
        renamed_files: pass.files.renamed,
        parent_env: exec.parent,
        secrets: pass.secrets,
        routed: exec.routed,
    };
    let mut es = EnvScratch {
        verdicts,
        seen,
        emits,
        bytes: env_bytes,
    };
    let env = decide::decide_env(pass.policy, &req, &mut es).map_err(|env| {
        PassShort::Grow(Sizes { env, ..sizes })
    })?;
    let EnvScratch {
        verdicts,
        emits,
        bytes: env_bytes,
        ..
    } = es;
    let verdicts: &'s [Verdict] = verdicts.get(..exec.env.len()).unwrap_or(&[]);
    let keep = ArgVerdict {
        action: ArgAction::Keep,
        rule: ArgRule::None,
    };
    let n = exec.argv.len();
    let (Some(averdicts), Some(aemits), Some(abytes)) = (
        arena.take_with(n, |_| keep),
        arena.take_with(n, |_| ArgEmit::Input(0)),
        arena.take_bytes(sizes.arg_bytes),
    ) else {
        return Err(PassShort::NoRoom);
    };
    let areq = ArgvRequest {
        program: exec.program,
        identity: exec.identity,
        argv: exec.argv,
        env: exec.env,
        env_verdicts: verdicts,
        parent_env: exec.parent,
        env_files: pass.files.contents,
        file_credentials: pass.files.credentials,
        secrets: pass.secrets,
    };
    let mut ascratch = ArgvScratch {
        verdicts: averdicts,
        emits: aemits,
        bytes: abytes,
    };
    let argv = argv::decide_argv(pass.policy, &areq, &mut ascratch).map_err(|arg_bytes| {
        PassShort::Grow(Sizes { arg_bytes, ..sizes })
    })?;
    let ArgvScratch {
        verdicts: arg_verdicts,
        emits: arg_emits,
        bytes: arg_bytes,
    } = ascratch;
    Ok(Decided {
        pass,
        exec,
        env,
        verdicts,
        emits: emits.get(..env.emitted).unwrap_or(&[]),
        env_bytes,
        argv,
        arg_verdicts,
        arg_emits: arg_emits.get(..argv.emitted).unwrap_or(&[]),
        arg_bytes,
    })
}
