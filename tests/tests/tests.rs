//! The end-to-end tests: real programs (tmux, bash, python3, make, git, Go and C
//! programs compiled at test time) under libenvshim.so and envwrap, with seeded
//! fake secrets (the harness is the `envshim_e2e` library, tests/src/).
//!
//! One test binary with a module per area, as ripgrep has one: one link
//! instead of one per file. Run one area with `cargo test -p envshim-e2e MODULE::`.

mod envwrap_util;

mod agent_identity;
mod agents_real;
mod architecture;
mod cargo_target_dir;
mod ci_scripts;
mod compile_c;
mod completions;
mod docs_refer;
mod envwrap_doctor;
mod envwrap_errors;
mod envwrap_explain;
mod envwrap_managed;
mod envwrap_pipes;
mod envwrap_run;
mod envwrap_scan;
mod envwrap_secrets;
mod envwrap_static;
mod envwrap_supervise;
mod escaped_copies;
mod first_policy;
mod front_ends;
mod glibc_roots;
mod library_parity;
mod mask;
mod mux_loop;
mod package;
mod proc_scan;
mod readme;
mod screen_server;
mod secret_helpers;
mod secret_sweep;
mod secret_words;
mod seen_by_a_person;
mod shim_agentmux;
mod shim_bad_input;
mod shim_describe;
mod shim_env_files;
mod shim_functions;
mod shim_home;
mod shim_hostile_files;
mod shim_imports;
mod shim_layout;
mod shim_managed;
mod shim_memcheck;
mod shim_musl;
mod shim_policy_load;
mod shim_popen;
mod shim_python;
mod shim_secrets;
mod shim_secure;
mod shim_shared_state;
mod shim_start_hint;
mod shim_sticky;
mod shim_sticky_builtin;
mod shim_threads;
mod shim_tmux_loop;
mod shim_transparency;
mod shim_trust;
mod test_command;
mod tmux_headline;
mod tmux_pairs;
mod tmux_sandbox;
mod tmux_secrets;
mod tmux_server;
mod values_property;
mod whole_host;
mod withheld;
