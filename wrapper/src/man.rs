//! envwrap(1), made from the definitions `--help` is made from: the OPTIONS
//! and TOOLS sections come from each option's docs (opts.rs) and each tool's
//! ([`ToolDoc`](crate::tools::ToolDoc)), the rest of the page is the roff of
//! docs/man/envwrap.1.in, where a marker line stands for each generated part.
//! So the man page documents the options the scanner reads, no more and no
//! fewer, in the words the help uses or in longer ones kept beside them.
//!
//! docs/man/envwrap.1 is this page, checked in for packaging and `make
//! install`; regenerate it after changing an option, a tool or the template:
//!
//! ```text
//! cargo run -p envwrap -- --generate=man > docs/man/envwrap.1
//! ```
//!
//! A unit test fails while the checked-in page differs.

use crate::cli;
use crate::opts::Spec;
use crate::tools::{self, Tool};

/// The hand-written parts of the page, with the markers below.
const TEMPLATE: &str = include_str!("../../docs/man/envwrap.1.in");

/// Where the run mode's options go.
const OPTIONS_MARKER: &str = ".\\\" @RUN-OPTIONS@\n";
/// Where the tools go.
const TOOLS_MARKER: &str = ".\\\" @TOOLS@\n";
/// Where the tools' names go, as `(check, explain, ...)`.
const TOOL_NAMES_MARKER: &str = ".\\\" @TOOL-NAMES@\n";
/// Where the synopsis goes: the usage lines `--help` shows.
const SYNOPSIS_MARKER: &str = ".\\\" @SYNOPSIS@\n";

/// The whole page.
pub fn page() -> String {
    TEMPLATE
        .replace(SYNOPSIS_MARKER, &synopsis())
        .replace(OPTIONS_MARKER, &run_options())
        .replace(TOOLS_MARKER, &tools_section())
        .replace(TOOL_NAMES_MARKER, &tool_names())
}

/// Text as roff shows it literally: backslashes, minus signs and quotes
/// escaped (a `'` at a line's start would be a request).
fn escape(text: &str) -> String {
    text.replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\(aq")
}

/// The width the sentences made from `--help`'s docs are wrapped to.
const WIDTH: usize = 80;

/// A line of text that roff will not read as a request.
fn line(text: &str) -> String {
    match text.starts_with(['.', '\'']) {
        true => format!("\\&{text}"),
        false => text.to_string(),
    }
}

/// Roff written in the code: each line without the blanks that indent it
/// there, and no empty line (an empty line is a break in roff).
fn roff(text: &str) -> String {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An option's `.TP` head: `.BR \-u ", " \-\-unset =\fINAME\fR`.
fn head(o: &Spec<()>) -> String {
    let long = format!("\\-\\-{}", escape(o.long));
    let value = if o.value {
        format!(" =\\fI{}\\fR", o.placeholder)
    } else if o.optional {
        format!(" [=\\fI{}\\fR]", o.placeholder)
    } else {
        String::new()
    };
    match o.short {
        Some(c) => format!(".BR \\-{} \", \" {long}{value}", c as char),
        None if value.is_empty() => format!(".B {long}"),
        None => format!(".BR {long}{value}"),
    }
}

/// An option's paragraph: its long doc, else its doc as a sentence.
fn paragraph(o: &Spec<()>) -> String {
    let body = if o.doc_long.is_empty() {
        let mut chars = o.doc.chars();
        let first: String = chars
            .next()
            .map(|c| c.to_uppercase().collect())
            .unwrap_or_default();
        let sentence = format!("{first}{}.", chars.as_str());
        crate::help::wrap(&sentence, WIDTH)
            .iter()
            .map(|l| format!("{}\n", line(&escape(l))))
            .collect()
    } else {
        roff(o.doc_long)
    };
    format!(".TP\n{}\n{body}", head(o))
}

/// The run mode's option groups, each a subsection.
fn run_options() -> String {
    let mut out = String::new();
    for (i, group) in cli::GROUPS.iter().enumerate() {
        out.push_str(&format!(".SS \"{}\"\n", group.title));
        for o in cli::group_options(i) {
            out.push_str(&paragraph(&o));
        }
        for operand in group.operands {
            out.push_str(&format!(
                ".TP\n{}\n{}",
                operand.roff,
                roff(operand.doc_long)
            ));
        }
        out.push_str(&roff(group.after_man));
    }
    out
}

/// Every tool a subsection: its usage, description and options (`--help`,
/// which every tool takes, is said once before them).
fn tools_section() -> String {
    tools::described().map(tool).collect()
}

fn tool(t: &Tool) -> String {
    let usage = format!("envwrap {} {}", t.name, t.doc.usage.join(" "));
    let mut out = format!(".SS \"{}\"\n", escape(&usage));
    out.push_str(&roff(t.doc.man));
    for o in (t.options)().iter().filter(|o| o.long != "help") {
        out.push_str(&paragraph(o));
    }
    out.push_str(&roff(t.doc.man_after));
    out
}

/// The SYNOPSIS: the run mode's usage and each tool's, from the strings
/// `--help` prints, one command a line.
fn synopsis() -> String {
    let run = crate::help::RUN_USAGE.trim_start_matches("envwrap ");
    let mut lines = vec![(".B envwrap".to_string(), run.to_string())];
    for t in tools::described() {
        let usage = t.doc.usage.join(" ");
        lines.push((format!(".B envwrap {}", escape(t.name)), usage));
    }
    let commands: Vec<String> = lines
        .iter()
        .map(|(name, usage)| format!("{name}\n{}\n", line(&usage_roff(usage))))
        .collect();
    commands.join(".br\n")
}

/// A usage line in the man page's fonts: options bold, placeholders (words
/// in capitals) italic, brackets, bars and dots roman.
fn usage_roff(usage: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let is_option = word.starts_with('-');
        let is_placeholder = word.chars().any(|c| c.is_ascii_uppercase())
            && !word.chars().any(|c| c.is_ascii_lowercase());
        match (is_option, is_placeholder) {
            (true, _) => out.push_str(&format!("\\fB{}\\fR", escape(word))),
            (false, true) => out.push_str(&format!("\\fI{}\\fR", escape(word))),
            _ => out.push_str(&escape(word)),
        }
        word.clear();
    };
    for c in usage.chars() {
        match c {
            ' ' | '[' | ']' | '|' | '.' | '=' => {
                flush(&mut word, &mut out);
                out.push(c);
            }
            _ => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `.RB ( check ", " explain ", " ... )`: the tools' names, in parentheses.
fn tool_names() -> String {
    let names: Vec<String> = tools::tool_names().map(escape).collect();
    format!(".RB ( {} )\n", names.join(" \", \" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command that regenerates the checked-in page.
    const REGENERATE: &str = "cargo run -p envwrap -- --generate=man > docs/man/envwrap.1";

    /// The page packaging installs is the one the definitions make.
    #[test]
    fn the_checked_in_man_page_is_the_generated_one() {
        let checked_in = include_str!("../../docs/man/envwrap.1");
        let generated = page();
        if checked_in != generated {
            let line = checked_in
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .map_or(
                    checked_in.lines().count().min(generated.lines().count()),
                    |i| i,
                )
                + 1;
            panic!(
                "docs/man/envwrap.1 differs from the page the option and tool definitions \
                 make (first at line {line}); edit wrapper/src (the options' and tools' docs) \
                 or docs/man/envwrap.1.in, not the page, and regenerate it: {REGENERATE}"
            );
        }
    }

    #[test]
    fn every_marker_is_in_the_template_once() {
        for marker in [SYNOPSIS_MARKER, OPTIONS_MARKER, TOOLS_MARKER] {
            assert_eq!(TEMPLATE.matches(marker).count(), 1, "{marker}");
        }
        assert!(TEMPLATE.contains(TOOL_NAMES_MARKER));
        assert!(!page().contains("@\n"), "a marker is left");
    }

    /// Every option of every tool has its paragraph, and its docs: a doc for
    /// `--help`, a placeholder when it takes a value and none when not.
    #[test]
    fn every_option_is_documented_in_the_page() {
        let page = page();
        let mut all = tools::run_options();
        for t in tools::TOOLS {
            all.extend((t.options)());
            assert!(page.contains(&escape(t.name)), "{}", t.name);
        }
        for o in &all {
            assert!(!o.doc.is_empty(), "--{} has no doc", o.long);
            assert_eq!(
                o.placeholder.is_empty(),
                !(o.value || o.optional),
                "--{}'s placeholder",
                o.long
            );
            assert!(page.contains(&head(o)), "envwrap(1) lacks --{}", o.long);
        }
    }

    #[test]
    fn option_heads_and_sentences() {
        let unset = cli::SPECS[1].erase();
        assert_eq!(head(&unset), ".BR \\-u \", \" \\-\\-unset =\\fINAME\\fR");
        let json = crate::doctor::SPECS[0].erase();
        assert_eq!(
            paragraph(&json),
            ".TP\n.B \\-\\-json\nPrint one JSON object.\n"
        );
        assert_eq!(escape("'a-b' \\"), "\\(aqa\\-b\\(aq \\e");
        assert_eq!(
            usage_roff("[--pid N]... [-L NAME | -S PATH]..."),
            "[\\fB\\-\\-pid\\fR \\fIN\\fR]... [\\fB\\-L\\fR \\fINAME\\fR | \\fB\\-S\\fR \\fIPATH\\fR]..."
        );
    }
}
