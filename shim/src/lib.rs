//! `libenvshim.so`: an `LD_PRELOAD` library that interposes every way an unmodified
//! program can start another program (the exec family, `posix_spawn`, `system`,
//! `popen`) and hands each child's argv and environment to the policy
//! ([`filter::prepare`]) before the real libc function runs.
//!
//! The crate is in layers, each a folder, and each uses only the layers below
//! it (docs/architecture.md draws them, and a test holds the code to it):
//!
//! * [`hooks`]: the `extern "C"` entry points, and nothing else: the exec family,
//!   `posix_spawn`, `system`, `popen`, `fork`, the library constructor, and the
//!   library run as a program. The allocation-free, lock-free rule for everything
//!   that can run between `fork`/`vfork` and `exec` is stated once, in
//!   [`hooks::exec`].
//! * [`filter`]: the exec logic behind every hook: runs the decision of
//!   envpolicy-core on the compiled policy (docs/adr/0002-compiled-policy.md) for
//!   one exec and assembles the child's arrays; what the decision says
//!   (`filter::report`) and the policy's log ([`filter::log`]) are files of
//!   their own.
//! * [`mux`]: what is particular to a multiplexer's server: the check a tmux or
//!   screen client runs before it reaches a server, and the server's command line.
//! * [`state`]: what one process holds: the policy in force
//!   ([`state::in_force`]) and how it is loaded and followed ([`state::policy`]),
//!   the env files and their cache, the start-up hint, the captured (sticky)
//!   entries, the withheld page, self-scrub, and the one writer of messages
//!   ([`state::message`]), which redacts against the policy in force.
//! * [`platform`]: errno, `environ`, raw system calls, paths and `stat`, the real
//!   libc functions and how they are found, the lazily bound libc calls, the
//!   scratch region and the constructor's arena: nothing in it knows the policy.
//!
//! C sources: `csrc/execl.c`: the variadic `execl`, `execlp`, `execle` (built by
//! `build.rs`); `csrc/support.c`: the per-thread slots (initial-exec TLS) of the
//! scratch region and of `errno`'s address; `csrc/cold.c`: the lazily bound libc
//! wrappers; `csrc/mem.c`: the library's own hidden `memcpy`, `memset` and `bcmp`;
//! `csrc/entry.c`: the entry point of the library run as a program.
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

pub mod filter;
pub mod hooks;
pub mod mux;
pub mod platform;
pub mod state;

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort() (through a lazily bound wrapper, csrc/cold.c) takes no
    // arguments, is async-signal-safe and never returns. No panic can unwind
    // across the C ABI because we never unwind at all.
    unsafe { crate::platform::cold::abort() }
}
