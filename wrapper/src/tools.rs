//! envwrap's tools, each defined once: its name, its entry point and its
//! options. `main` dispatches through [`TOOLS`], the run mode refuses a tool's
//! name where a command goes (`cli`), and the shell completions list the tools
//! and complete their options from it (`completions`); the help texts and the
//! man page are checked against it (tests/tests/envwrap_static.rs), so a tool
//! added here and nowhere else fails there.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::opts::{Spec, SpecName};

/// One tool: the first word of envwrap's command line.
pub struct Tool {
    pub name: &'static str,
    /// Runs the tool with the arguments after its name.
    pub main: fn(Vec<OsString>) -> ExitCode,
    /// Its options, as its own scanner reads them.
    pub options: fn() -> Vec<SpecName>,
}

fn names<Id: Copy>(specs: &[Spec<Id>]) -> Vec<SpecName> {
    specs.iter().map(Spec::name).collect()
}

/// Every tool, in the order the help lists them. `compile` is the one
/// libenvshim.so runs to build its policy cache.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "check",
        main: crate::check::main,
        options: || names(crate::check::SPECS),
    },
    Tool {
        name: "explain",
        main: crate::explain::main,
        options: || names(crate::explain::SPECS),
    },
    Tool {
        name: "scan",
        main: crate::scan::main,
        options: || names(crate::scan::SPECS),
    },
    Tool {
        name: "doctor",
        main: crate::doctor::main,
        options: || names(crate::doctor::SPECS),
    },
    Tool {
        name: "mux-env",
        main: crate::mux::main,
        options: || names(crate::mux::SPECS),
    },
    // The name the tool had while it knew tmux alone.
    Tool {
        name: "tmux-env",
        main: crate::mux::main,
        options: || names(crate::mux::SPECS),
    },
    Tool {
        name: "compile",
        main: |args| crate::compile_cmd::run(&args),
        options: || names(crate::compile_cmd::SPECS),
    },
];

/// The tool `word` names, if it names one.
pub fn by_name(word: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == word)
}

/// The run mode's options (no tool given).
pub fn run_options() -> Vec<SpecName> {
    names(crate::cli::SPECS)
}

/// The tools' names.
pub fn tool_names() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts a user reads name every tool and every option of each: the
    /// run mode's help, and the man page.
    #[test]
    fn the_help_and_the_man_page_name_every_tool_and_option() {
        let man = include_str!("../../docs/man/envwrap.1").replace("\\-", "-");
        for t in TOOLS {
            assert!(
                crate::help::RUN.contains(t.name),
                "--help does not name {}",
                t.name
            );
            assert!(man.contains(t.name), "envwrap(1) does not name {}", t.name);
            for o in (t.options)() {
                assert!(
                    man.contains(&format!("--{}", o.long)),
                    "envwrap(1) does not name {} --{}",
                    t.name,
                    o.long
                );
            }
        }
        for o in run_options() {
            assert!(
                crate::help::RUN.contains(&format!("--{}", o.long)),
                "--help: --{}",
                o.long
            );
        }
    }

    #[test]
    fn every_name_dispatches_to_its_tool_and_nothing_else_does() {
        assert!(TOOLS
            .iter()
            .all(|t| by_name(t.name).is_some_and(|f| std::ptr::eq(f, t))));
        assert!(by_name("doctorx").is_none() && by_name("").is_none() && by_name("--").is_none());
    }
}
