//! What is particular to a multiplexer's server (tmux, GNU screen): the check
//! a client runs before it reaches a server ([`client`]), and the command line
//! of a server the shim starts ([`server_cmdline`]). Which multiplexers there
//! are, and how each one's argv reads, is the core's (`envpolicy_core::mux`).

pub mod client;
pub mod server_cmdline;
