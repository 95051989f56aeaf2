//! The library constructor: one `.init_array` entry, run by the dynamic loader before
//! `main` (or during `dlopen`).
//!
//! It does what cannot be done on an exec path, and nothing that parses:
//! - resolve the real functions ([`crate::platform::real::resolve_all`]);
//! - capture the sticky strings ([`crate::state::sticky::capture`]);
//! - map the compiled policy and check it as far as a process start needs
//!   ([`crate::state::policy::init`]; a missing or stale cache is rebuilt by running
//!   `envwrap compile`, once per policy change; the rest of the check, and the
//!   validation, wait for the first exec);
//! - open the policy's log file ([`crate::filter::log::open_log`]);
//! - self-scrub, for the programs the policy names ([`crate::state::scrub::at_load`]);
//! - in a multiplexer's client (tmux, screen) whose command may start a process
//!   in a running server, have envwrap clean that server's environments
//!   ([`crate::mux::client::at_load`]);
//! - in a tmux client, note where its commands lie in its argv, for the fork
//!   child that becomes its server to blank ([`crate::mux::server_cmdline::at_load`]).
//!
//! A process that never spawns pays for these and nothing else; docs/benchmarks.md
//! has what that costs against an empty C library. On this machine most of a
//! process start's cost is page faults (about 2 us each), so the constructor is
//! written to touch no page an empty library would not:
//! - **Its statics are on one page** (`#[link_section = ".data.envshim_ctor"]`):
//!   the real functions, the sticky strings and the first 640 bytes of their
//!   arena, the policy slot. shim/layout.ld puts them right after what the loader
//!   relocates, so they share the page the loader has already made private (ADR
//!   0008). A static elsewhere that the constructor wrote would fault a page of
//!   its own. Statics written later (the validated policy and its copy, scratch,
//!   the env-file cache) are further on, marked `.data.envshim_zero`.
//! - **Its frames are small.** A frame larger than a page probes, and so faults,
//!   every page of it. Path buffers of `PATH_MAX` bytes and the self-scrub scratch
//!   are in functions of their own that run only when needed, and the policy is
//!   read through [`envpolicy_core::Records`] (a few hundred bytes), not a whole
//!   `Policy`.

use core::ffi::{c_char, c_int};

/// Called by the loader with (argc, argv, envp), as glibc does for `.init_array`.
extern "C" fn envshim_init(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    let own_name = crate::platform::real::resolve_all();
    crate::state::sticky::capture(own_name);
    // SAFETY: the loader passes the process's own argc/argv (argv[0], when there
    // is one, is NUL-terminated).
    let prog = if argc > 0 && !argv.is_null() && unsafe { !(*argv).is_null() } {
        // SAFETY: as above.
        unsafe { crate::platform::sys::cstr_bytes(*argv) }
    } else {
        &[]
    };
    // A process that took the start-up hint has no log to open and nothing to
    // scrub (`crate::state::hint`).
    if crate::state::policy::init(prog) {
        // One look at the policy's header and records for both (see `with_peeked`).
        crate::state::policy::with_peeked(|peeked| {
            crate::filter::log::open_log(peeked);
            // SAFETY: the loader passes the process's own argc/argv to
            // `.init_array` functions, before `main`, with no other thread running.
            unsafe { crate::state::scrub::at_load(peeked, prog, argc, argv) };
        });
    }
    // SAFETY: the loader passes the process's own argc/argv.
    unsafe { crate::state::routed::at_load(prog, argc, argv) };
    if let Some(mux) = envpolicy_core::mux::by_program(prog) {
        // SAFETY: as above.
        unsafe { crate::mux::client::at_load(mux, argc, argv) };
        // SAFETY: as above.
        unsafe { crate::mux::server_cmdline::at_load(mux, argc, argv) };
    }
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = envshim_init;
