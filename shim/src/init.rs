//! The library constructor: one `.init_array` entry, run by the dynamic loader before
//! `main` (or during `dlopen`).
//!
//! It does only what cannot wait and cannot be done later on an exec path: resolve the
//! real functions with `dlsym` ([`crate::real::resolve_all`]) and capture the sticky
//! strings ([`crate::sticky::capture`]). Anything else per-process (loading the policy)
//! belongs to the first spawn or to a form that needs no parsing, so that a process
//! that never spawns pays about what an empty preload library costs.

use core::ffi::{c_char, c_int};

/// Called by the loader with (argc, argv, envp), as glibc does for `.init_array`.
extern "C" fn envshim_init(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    crate::real::resolve_all();
    crate::sticky::capture();
    crate::policy::init();
    crate::filter::open_log();
    // SAFETY: the loader passes the process's own argc/argv to `.init_array`
    // functions, before `main`, with no other thread running.
    unsafe { crate::scrub::at_load(argc, argv) };
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = envshim_init;
