//! The library constructor: one `.init_array` entry, run by the dynamic loader before
//! `main` (or during `dlopen`).
//!
//! It does what cannot be done on an exec path, and nothing that parses:
//! - resolve the real functions with `dlsym` ([`crate::real::resolve_all`]);
//! - capture the sticky strings ([`crate::sticky::capture`]);
//! - map and validate the compiled policy ([`crate::policy::init`]; a missing or
//!   stale cache is rebuilt by running `envwrap compile`, once per policy change);
//! - open the policy's log file ([`crate::filter::open_log`]);
//! - self-scrub, for the programs the policy names ([`crate::scrub::at_load`]).
//!
//! A process that never spawns pays for these and nothing else; docs/benchmarks.md
//! has what that costs against an empty C library.

use core::ffi::{c_char, c_int};

/// Called by the loader with (argc, argv, envp), as glibc does for `.init_array`.
extern "C" fn envshim_init(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    crate::real::resolve_all();
    crate::sticky::capture();
    crate::policy::init();
    // One look at the policy's header and records for both (see `with_peeked`).
    crate::policy::with_peeked(|peeked| {
        crate::filter::open_log(peeked);
        // SAFETY: the loader passes the process's own argc/argv to `.init_array`
        // functions, before `main`, with no other thread running.
        unsafe { crate::scrub::at_load(peeked, argc, argv) };
    });
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = envshim_init;
