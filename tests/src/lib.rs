//! End-to-end test harness for envshim.
//!
//! The end-to-end tests run REAL programs (tmux on its own socket, bash, python3, env,
//! make, C programs compiled at test time) with `libenvshim.so` preloaded or under
//! `envwrap`, and check what their children received. This crate gives each test:
//!
//! - a [`Sandbox`]: a private temp directory, fresh [`Secrets`] and its own tmux
//!   socket, all cleaned up on drop (`sandbox`, `tmux`);
//! - [`Secrets`]: fake tokens of every shape the policy recognises, each bound to a
//!   variable name, with [`Secrets::assert_absent`] and [`Secrets::redact`] (`secrets`);
//! - [`TestCommand`]: run a program with a timeout; every output is checked for seeded
//!   values and every failure report is redacted (`command`);
//! - [`compile_c`] and the [`PRINTENV_C`] helper that reports its argv and environment
//!   (`compile`, `printenv`);
//! - /proc readers and [`assert_no_process_holds`] (`procfs`);
//! - signals held by a pidfd and sent only to a process proven to be the one
//!   meant, never by a PID number alone (`pidfd`);
//! - where the shim, envwrap and the example policies are (`artifacts`), and
//!   the installed paths the docs name (`docs_paths`);
//! - preloading the shim and staging its policies, for the shim's tests (`shim`);
//! - a private host (a mount namespace with its own `/etc`) for the managed
//!   layer and `/etc/ld.so.preload` (`host`);
//! - the opt-in collection of every output for the secret sweep (`collect`).
//!
//! ```no_run
//! use envshim_e2e::*;
//! let sb = Sandbox::new("example");
//! let out = sb.cmd(printenv_bin()).env_secrets().env("LD_PRELOAD", shim_so()).expect_success();
//! let report = PrintenvReport::parse(&out.stdout).unwrap();
//! assert!(!report.has("GH_TOKEN"));
//! ```
//!
//! Rule: no output of our tools may ever hold a seeded value, and no test failure may
//! print one.

pub mod artifacts;
pub mod collect;
pub mod command;
pub mod compile;
pub mod docs_paths;
pub mod dump;
pub mod host;
pub mod modules;
pub mod pidfd;
pub mod printenv;
pub mod procfs;
pub mod rng;
pub mod sandbox;
pub mod secrets;
pub mod shim;
pub mod storm;
pub mod tmux;
pub mod wait;
pub mod walk;

pub use artifacts::{
    envwrap_bin, example_policy, shim_so, static_envwrap_bin, target_dir, workspace_root,
};
pub use collect::{collect_dir, collect_file, COLLECT_ENV};
pub use command::{Background, Outcome, TestCommand, DEFAULT_TIMEOUT};
pub use compile::{cc_cache_dir, compile_c, compile_c_in, compile_c_with};
pub use dump::{assert_clean_dump, read_dump};
pub use host::{
    deploy_setup, install_line, no_private_host, on_private_host, open_to_every_user,
    private_host_available, A_SECRET_FOR_DEPLOY, MANAGED_STRIPS_INTERNAL,
};
pub use printenv::{printenv_bin, PrintenvReport, PRINTENV_C};
pub use procfs::{
    all_pids, assert_no_process_holds, pid_alive, proc_cmdline, proc_comm, proc_environ, proc_ppid,
    proc_state, try_proc_cmdline, try_proc_environ_raw, Place, ProcFinding, ProcScan,
};
pub use sandbox::{mkfifo, Sandbox, KEEP_ENV};
pub use secrets::{Finding, Secret, Secrets, Shape, SECRET_NAMES};
pub use shim::{
    give_to_a_shared_group, is_withheld_line, private_group, python3, reported_errno, sh_quote,
    shim_lines, shim_path_string, stage_example, withheld_lines, ShimExt, PERMISSIVE_POLICY,
    SHIM_PREFIX,
};
pub use storm::FORKER_C;
pub use tmux::{default_tmux_socket_dir, parse_show_environment, TmuxEnvironment};
pub use wait::{wait_for, wait_until};
