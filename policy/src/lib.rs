//! envpolicy: the one place where an envshim policy becomes decisions.
//!
//! A policy file (TOML, see docs/policy.md) is parsed and compiled once into a flat
//! buffer ([`compiled::Policy`]). Every front end reads that same buffer:
//! libenvshim.so between fork and exec, envwrap for one exec, and Rust programs
//! through this crate. None of them decides anything on its own, so the same policy
//! and the same input give the same child environment and argv everywhere.
//!
//! Without the default `std` feature the crate is the decision core only:
//! `#![no_std]`, no allocation, no panics on any input, so libenvshim.so can link it.
//! With `std` it also loads and compiles policy files and renders outcomes.
//!
//! The modules, in the order a decision uses them:
//! - [`glob`], [`shape`], [`envfile`], [`builtin`]: matching names, recognising
//!   token shapes, reading env files, and the built-in lists with their reasons;
//! - [`shown`]: how a message names a program, path or name that may hold a
//!   secret;
//! - [`readable`]: which files a policy may read, and how much of each (with
//!   `std`, [`read_file`] reads them by that rule);
//! - [`compiled`]: the compiled buffer and its reader;
//! - [`decide`]: the environment rules; [`argv`]: the argv rules, with
//!   [`pairs`]: where each program that carries environment in argv keeps it;
//! - with `std`: [`schema`], [`load`], [`compile`], [`config_scan`], [`error`],
//!   [`outcome`], and [`spawn`], which applies a policy to the children a Rust
//!   program spawns (`std::process::Command`; `tokio::process::Command` and
//!   `portable_pty::CommandBuilder` behind the `tokio` and `portable-pty` features).
#![cfg_attr(not(feature = "std"), no_std)]

/// The modules of the decision core, which runs inside other programs: no
/// panicking operation is allowed in them (a panic in libenvshim.so aborts the
/// host program). The lint list is written once, here.
macro_rules! no_panic_modules {
    ($($module:ident),* $(,)?) => {
        $(
            #[cfg_attr(
                not(test),
                deny(
                    clippy::indexing_slicing,
                    clippy::unwrap_used,
                    clippy::expect_used,
                    clippy::panic
                )
            )]
            pub mod $module;
        )*
    };
}

no_panic_modules!(argv, cache_key, decide, envfile, glob, pairs, readable, shape, shown, writers);

pub mod builtin;
// compiled indexes its records by design (bounds checked by its validation) and
// denies the rest.
#[cfg_attr(not(test), deny(clippy::unwrap_used, clippy::panic))]
pub mod compiled;

#[cfg(feature = "std")]
pub mod cache;
#[cfg(feature = "std")]
pub mod compile;
#[cfg(feature = "std")]
pub mod config_scan;
#[cfg(feature = "std")]
pub mod error;
#[cfg(feature = "std")]
pub mod load;
#[cfg(feature = "std")]
pub mod outcome;
#[cfg(feature = "std")]
pub mod read_file;
#[cfg(feature = "std")]
pub mod schema;
#[cfg(all(feature = "std", unix))]
pub mod spawn;
#[cfg(feature = "std")]
pub mod trust;

pub use compiled::{Policy, Records};
#[cfg(feature = "std")]
pub use error::PolicyError;
#[cfg(feature = "std")]
pub use load::Compiled;
