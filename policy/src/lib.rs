//! envpolicy: the one place where an envshim policy becomes decisions.
//!
//! A policy file (TOML, see docs/policy.md) is parsed and compiled once into a flat
//! buffer ([`compiled::Policy`]). Every front end reads that same buffer:
//! libenvshim.so between fork and exec, envwrap for one exec, and Rust programs
//! through this crate. None of them decides anything on its own, so the same policy
//! and the same input give the same child environment and argv everywhere.
//!
//! The decisions themselves are the `envpolicy-core` crate (`#![no_std]`, no
//! allocation, no dependencies, no panics on any input), which libenvshim.so links
//! alone; this crate re-exports each of its modules under the same name and adds
//! loading and compiling policy files and rendering outcomes.
//!
//! The modules, in the order a decision uses them:
//! - [`glob`], [`shape`], [`envfile`], [`builtin`]: matching names, recognising
//!   token shapes, reading env files, and the built-in lists with their reasons;
//! - [`shown`]: how a message names a program, path or name that may hold a
//!   secret;
//! - [`readable`]: which files a policy may read, and how much of each
//!   ([`read_file`] reads them by that rule);
//! - [`compiled`]: the compiled buffer and its reader;
//! - [`decide`]: the environment rules; [`argv`]: the argv rules, with
//!   [`pairs`]: where each program that carries environment in argv keeps it;
//! - this crate's own: [`schema`], [`load`], [`compile`], [`config_scan`], [`error`],
//!   [`outcome`], [`secret_source`], which reads a `[[secret]]`'s value from its
//!   source for the std front ends (the rules are the core's [`secret`]), and [`spawn`], which applies a policy to the children a Rust
//!   program spawns (`std::process::Command`; `tokio::process::Command` and
//!   `portable_pty::CommandBuilder` behind the `tokio` and `portable-pty` features).
pub use envpolicy_core::{
    argv, builtin, bytes, cache_key, capability, decide, elf_head, encoded, envfile, escaped, glob,
    identity, layer, lookup, loud, mark, mux, pairs, pipeline, programs, readable, reason, record,
    refusal, search, secret, seen, shape, shared, shown, unmade, withheld, writers, Policy,
    Records,
};

/// The compiled buffer ([`envpolicy_core::compiled`]) and, for the compiler, its
/// writer.
pub mod compiled {
    pub use crate::compiled_writer::Writer;
    pub use envpolicy_core::compiled::*;
}

pub mod cache;
pub mod compile;
mod compiled_writer;
pub mod config_scan;
pub mod error;
pub mod load;
#[cfg(unix)]
pub mod managed;
pub mod mask;
pub mod outcome;
pub mod read_file;
pub mod schema;
#[cfg(unix)]
pub mod secret_source;
#[cfg(unix)]
pub mod spawn;
pub mod suggest;
pub mod supervise;
pub mod trust;

pub use error::PolicyError;
pub use load::Compiled;
