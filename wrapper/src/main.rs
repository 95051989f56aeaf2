//! envwrap: apply the envshim policy to one exec, and the tools around it.
//!
//! ```text
//! envwrap [OPTION]... [--] [-] [NAME=VALUE]... COMMAND [ARG]...   run COMMAND (run.rs)
//! envwrap check [POLICY]                                           check.rs
//! envwrap explain [OPTION]... [-- COMMAND [ARG]...]                explain.rs
//! envwrap scan [--pid N | --all]                                   scan.rs
//! envwrap doctor PROGRAM                                           doctor.rs
//! envwrap secret set NAME | list [--json]                          secret_cmd.rs
//! envwrap mux-env [--fix] [--mux NAME [--server S]] (also tmux-env)   mux/
//! envwrap compile [--output FILE] POLICY                           compile_cmd.rs
//! ```
//!
//! envwrap is the front end where preload cannot work (static and Go programs,
//! setuid programs) and the trusted root of a process tree: what it strips is
//! absent from the whole tree below it. It is env(1)-compatible where the two
//! overlap, and builds as a static binary (ci/build-static).
//!
//! A first argument that names a tool selects it; anything else is the run mode,
//! so `envwrap -- check` runs a program called `check`.
//!
//! Exit codes (exit.rs): 125 envwrap's own errors, a bad policy included; 126 the
//! command cannot be executed or the policy refused the exec; 127 not found; `scan`
//! exits 1 when it finds a leak. Messages name variables and programs, never values.

#[macro_use]
mod value;
mod check;
mod check_managed;
mod check_programs;
mod cli;
mod compile_cmd;
mod completions;
mod deliver;
mod doctor;
mod elf;
mod environ;
mod exec;
mod exit;
mod explain;
mod help;
mod journal;
mod live_environ;
mod man;
mod mask;
mod mux;
mod opts;
mod preload;
mod procfs;
mod resolve;
mod run;
mod scan;
mod scan_secrets;
mod secret_cmd;
mod signals;
mod source;
mod split;
mod supervise;
mod tools;
mod which;

use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let tool = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(tools::by_name);
    let code = match tool {
        Some(tool) => {
            args.remove(0);
            (tool.main)(args)
        }
        None => run::main(args),
    };
    value::finish_output(code)
}
