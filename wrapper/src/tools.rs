//! envwrap's tools, each defined once: its name, its entry point, its options
//! (each with its docs, opts.rs) and its own docs ([`ToolDoc`], beside its
//! options in its module). `main` dispatches through [`TOOLS`], the run mode
//! refuses a tool's name where a command goes (`cli`), and `--help` (help.rs),
//! envwrap(1) (man.rs) and the shell completions (completions.rs) are made
//! from it, so a tool added here is dispatched, documented and completed.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::opts::Spec;

/// One tool: the first word of envwrap's command line.
pub struct Tool {
    pub name: &'static str,
    /// Runs the tool with the arguments after its name.
    pub main: fn(Vec<OsString>) -> ExitCode,
    /// Its options, as its own scanner reads them, with their docs.
    pub options: fn() -> Vec<Spec<()>>,
    pub doc: &'static ToolDoc,
    /// Another name of the tool before it (`tmux-env`): the docs name it
    /// beside that tool, not as a tool of its own.
    pub alias: bool,
}

/// What the docs say of one tool. The texts for `--help` are plain text as
/// printed (their lists are laid out by hand); the man page's are roff.
pub struct ToolDoc {
    /// The synopsis after `envwrap NAME`, one string per line of the usage.
    pub usage: &'static [&'static str],
    /// Its operands as the run mode's list of tools shows them (`[POLICY]`).
    pub operands: &'static str,
    /// What the run mode's list of tools says of it (wrapped to the column).
    pub summary: &'static str,
    /// `--help`'s description, before the options.
    pub about: &'static str,
    /// `--help` after the options (its exit status); may be empty.
    pub after: &'static str,
    /// envwrap(1)'s description, roff, before the option paragraphs.
    pub man: &'static str,
    /// envwrap(1) after the option paragraphs, roff; may be empty.
    pub man_after: &'static str,
}

fn erased<Id: Copy>(specs: &[Spec<Id>]) -> Vec<Spec<()>> {
    specs.iter().map(Spec::erase).collect()
}

/// Every tool, in the order the help lists them. `compile` is the one
/// libenvshim.so runs to build its policy cache.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "check",
        main: crate::check::main,
        options: || erased(crate::check::SPECS),
        doc: &crate::check::DOC,
        alias: false,
    },
    Tool {
        name: "explain",
        main: crate::explain::main,
        options: || erased(crate::explain::SPECS),
        doc: &crate::explain::DOC,
        alias: false,
    },
    Tool {
        name: "scan",
        main: crate::scan::main,
        options: || erased(crate::scan::SPECS),
        doc: &crate::scan::DOC,
        alias: false,
    },
    Tool {
        name: "doctor",
        main: crate::doctor::main,
        options: || erased(crate::doctor::SPECS),
        doc: &crate::doctor::DOC,
        alias: false,
    },
    Tool {
        name: "mux-env",
        main: crate::mux::main,
        options: || erased(crate::mux::SPECS),
        doc: &crate::mux::DOC,
        alias: false,
    },
    // The name the tool had while it knew tmux alone.
    Tool {
        name: "tmux-env",
        main: crate::mux::main,
        options: || erased(crate::mux::SPECS),
        doc: &crate::mux::DOC,
        alias: true,
    },
    Tool {
        name: "secret",
        main: crate::secret_cmd::main,
        options: || erased(crate::secret_cmd::SPECS),
        doc: &crate::secret_cmd::DOC,
        alias: false,
    },
    Tool {
        name: "which",
        main: crate::which::main,
        options: || erased(crate::which::SPECS),
        doc: &crate::which::DOC,
        alias: false,
    },
    Tool {
        name: "compile",
        main: |args| crate::compile_cmd::run(&args),
        options: || erased(crate::compile_cmd::SPECS),
        doc: &crate::compile_cmd::DOC,
        alias: false,
    },
];

/// The tool `word` names, if it names one.
pub fn by_name(word: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == word)
}

/// The tools the docs describe, each once (no alias).
pub fn described() -> impl Iterator<Item = &'static Tool> {
    TOOLS.iter().filter(|t| !t.alias)
}

/// The other names of `tool` (`tmux-env` of `mux-env`).
pub fn aliases_of(tool: &Tool) -> impl Iterator<Item = &'static Tool> + '_ {
    TOOLS
        .iter()
        .filter(move |t| t.alias && std::ptr::eq(t.doc, tool.doc))
}

/// The run mode's options (no tool given).
pub fn run_options() -> Vec<Spec<()>> {
    erased(crate::cli::SPECS)
}

/// The tools' names.
pub fn tool_names() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    // That the help and the man page document every tool and option: help.rs's
    // and man.rs's tests.

    #[test]
    fn every_name_dispatches_to_its_tool_and_nothing_else_does() {
        assert!(TOOLS
            .iter()
            .all(|t| by_name(t.name).is_some_and(|f| std::ptr::eq(f, t))));
        assert!(by_name("doctorx").is_none() && by_name("").is_none() && by_name("--").is_none());
    }
}
