//! `libenvshim.so`: an `LD_PRELOAD` library that interposes every way an unmodified
//! program can start another program (the exec family, `posix_spawn`, `system`,
//! `popen`) and hands each child's argv and environment to the policy
//! ([`filter::prepare`]) before the real libc function runs.
//!
//! Shape of the crate:
//!
//! * [`init`]: the library constructor (an `.init_array` entry): resolves the real
//!   functions, captures the sticky strings, maps the compiled policy ([`policy`],
//!   [`load`]) and self-scrubs where the policy says so ([`scrub`]). It parses
//!   nothing, so that loading the shim into a process that never spawns costs about
//!   what an empty C library costs.
//! * [`real`]: the real libc functions, what `dlsym(RTLD_NEXT, ..)` returns, found
//!   once by one walk over the loaded objects ([`next_object`]).
//! * [`exec`]: the `exec*` hooks and the glibc-compatible `PATH` search. The
//!   allocation-free, lock-free rule for everything that can run between `fork`/`vfork`
//!   and `exec` is explained there, once.
//! * [`spawn`], [`system`], [`popen`]: `posix_spawn{,p}`, `system`, `popen`/`pclose`;
//!   [`fork`]: `fork`, which first does in the parent what each child's first exec
//!   would repeat.
//! * [`filter`]: the single entry point to the policy: runs envpolicy's decision on
//!   the compiled policy (docs/adr/0002-compiled-policy.md) for every exec, and
//!   writes refusals, warnings and audit records; [`scratch`]: where the filtered
//!   arrays live; [`sticky`]: the shim's own `LD_PRELOAD` entry and policy variable,
//!   captured at load, kept in [`ctor_arena`]; [`env_cache`]: the imported env files, kept between execs
//!   and re-read when their `stat` changes; [`withheld`]: the page where a tree says
//!   each withheld credential once.
//! * [`sys`]: errno, `environ`, string scanning, raw system calls, stderr messages;
//!   [`cold`]: libc calls only `system`/`popen` need, bound lazily (load-time cost).
//! * `csrc/execl.c`: the variadic `execl`, `execlp`, `execle` (C, built by `build.rs`);
//!   `csrc/support.c`: the per-thread slots (initial-exec TLS) of the scratch region
//!   and of `errno`'s address; `csrc/cold.c`: the lazily bound libc wrappers;
//!   `csrc/mem.c`: the library's own hidden `memcpy`, `memset` and `bcmp`.
//!
//! The crate is `#![no_std]` without `alloc`: hook code cannot call `malloc` because
//! there is no allocator to call, and the library costs no more to load than an empty C
//! library (a `std` cdylib drags in `libgcc_s` and costs every process start ~13%).
//! Panics abort (there is no unwinder); the code is written so that no panicking path
//! exists (no indexing that can fail, no `unwrap`).
// no_std but in a test build: `cargo test -p envshim` runs the unit tests on the
// host, in a test binary that links std's own panic handler (and std's
// `rust_eh_personality`, which wins over the weak one of csrc/support.c), and
// whose own `fork`, `execve`, ... are the shim's hooks, as in a policed process.
#![cfg_attr(not(test), no_std)]
// Lints: shim/Cargo.toml (no panicking operation, a SAFETY comment on every
// unsafe block).

pub mod cold;
pub mod ctor_arena;
pub mod describe;
pub mod env_cache;
pub mod env_files;
pub mod exec;
pub mod filter;
pub mod fork;
pub mod helper;
pub mod hint;
pub mod init;
pub mod load;
pub mod mux_client;
pub mod next_object;
pub mod policy;
pub mod popen;
pub mod real;
pub mod redacted;
pub mod scratch;
pub mod scrub;
pub mod server_cmdline;
pub mod spawn;
pub mod sticky;
pub mod sys;
pub mod system;
pub mod withheld;

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort() (through a lazily bound wrapper, csrc/cold.c) takes no
    // arguments, is async-signal-safe and never returns. No panic can unwind
    // across the C ABI because we never unwind at all.
    unsafe { crate::cold::abort() }
}
