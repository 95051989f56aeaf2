//! What one process holds, between its execs: the policy in force
//! ([`in_force`]) and how it is loaded and followed ([`policy`], [`load`],
//! [`helper`]), the env files and their cache ([`env_files`], [`env_cache`]),
//! the start-up hint ([`hint`]), the entries captured at load ([`sticky`]), the
//! withheld page ([`withheld`]), self-scrub ([`scrub`]), a secret's source read at
//! the exec of its program ([`secrets`]), whether this process is envwrap
//! running a routed exec ([`routed`]), and the one writer of
//! messages ([`message`]), which redacts against the policy in force.
//!
//! These modules are unit-tested on the host (`cargo test -p envshim`).

pub mod env_cache;
pub mod env_files;
pub mod helper;
pub mod hint;
pub mod in_force;
pub mod load;
pub mod managed;
pub mod message;
pub mod policy;
pub mod routed;
pub mod scrub;
pub mod secret_helper;
pub mod secrets;
pub mod sticky;
pub mod withheld;
