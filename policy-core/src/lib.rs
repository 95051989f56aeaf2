//! envpolicy-core: the decisions of an envshim policy, for every front end.
//!
//! `#![no_std]`, no allocation, no dependencies, no panics on any input: this is
//! the code libenvshim.so runs between `fork` and `exec`, and it is linked alone
//! into the shim, so that no feature cargo unifies across the workspace can bring
//! std into it. The `envpolicy` crate is the std API on top (loading and compiling
//! policy files, rendering outcomes, applying a policy to `Command`); it re-exports
//! every module here under the same name.
//!
//! The modules, in the order a decision uses them:
//! - [`glob`], [`shape`], [`envfile`], [`builtin`]: matching names, recognising
//!   token shapes, reading env files, and the built-in lists with their reasons;
//! - [`bytes`]: the byte searches they are built on, and [`encoded`]: the
//!   search for a credential's base64 copies (rule 4's encoded copies), and
//!   [`escaped`]: its copies percent-encoded, backslash-escaped or quoted;
//! - [`shown`]: how a message names a program, path or name that may hold a
//!   secret;
//! - [`readable`]: which files a policy may read, and how much of each;
//! - [`writers`]: who may write a file a policy reads;
//! - [`lookup`]: the steps of the policy lookup, as both front ends name them;
//! - [`hint`]: the start-up hint a policed parent gives its child, and
//!   [`hex`]: the lowercase hexadecimal of the shim's own variables;
//! - [`compiled`]: the compiled buffer and its reader; [`cache_key`]: the cache
//!   file's name, layout and freshness;
//! - [`identity`]: which program an exec runs, through launchers and
//!   interpreters to the script, as every rule and message names it;
//! - [`programs`]: which `[program.NAME]` sections apply to a program;
//! - [`secret`]: the rules of `[[secret]]` (which programs get which, trusted
//!   sources, `deny_args`), around a value each front end reads itself, and
//!   [`elf_head`]: whether a shim can police the program that gets one;
//! - [`decide`]: the environment rules; [`argv`]: the argv rules, with
//!   [`pairs`]: where each program that carries environment in argv keeps it;
//! - [`search`]: the `execvp` family's search for the program, over an exec
//!   callback;
//! - [`mux`]: what a terminal multiplexer is (tmux, GNU screen): when its client
//!   may start processes in its server, and which server that is;
//! - [`mark`]: how an exec the shim judged passes `envwrap --supervise`;
//! - [`shared`]: every `ENVSHIM_*` name the front ends pass between them;
//! - [`withheld`]: saying once per name and tree that a credential was withheld,
//!   and [`seen`]: where a line for the person goes (the controlling terminal
//!   too, when standard error is not one);
//! - [`capability`]: what each front end can do to an exec, and what it does
//!   with a change it cannot make; [`refusal`]: the line every front end writes
//!   when the policy refuses an exec; [`unmade`]: the lines of a change a front
//!   end cannot make; [`reason`]: why a rule decided an entry, in the words
//!   every front end writes.
#![cfg_attr(not(test), no_std)]

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

no_panic_modules!(
    argv, bytes, cache_key, capability, decide, elf_head, encoded, envfile, escaped, glob, hex,
    hint, identity, layer, lookup, loud, mark, mux, pairs, pipeline, programs, readable, record,
    reason, refusal, search, secret, seen, shape, shared, shown, unmade, withheld, writers
);

pub mod builtin;
// compiled indexes its records by design (bounds checked by its validation) and
// denies the rest.
#[cfg_attr(not(test), deny(clippy::unwrap_used, clippy::panic))]
pub mod compiled;

pub use compiled::{Policy, Records};
