//! The `--help` texts, made from the definitions the scanner reads: each
//! option's spelling and doc (opts.rs), each tool's usage and description
//! (tools.rs, beside its options), so the help cannot name an option that does
//! not exist or miss one that does. envwrap(1) is made from the same (man.rs).
//!
//! What is written here by hand is the run mode's prose around its tables.
//! Layout, as GNU's help texts: options in a table, `  -s, --long=VALUE` on the
//! left, the doc in a column after the longest spelling and wrapped to 80
//! columns; a spelling too long for the column puts its doc on the next line.

use crate::cli;
use crate::opts::Spec;
use crate::tools::{self, Tool};

/// The width the help is wrapped to.
const WIDTH: usize = 80;

/// A left cell longer than this does not set the column: its doc starts on the
/// next line instead.
const MAX_LEFT: usize = 27;

/// How `--help` starts the first line of a usage, and indents the others.
const USAGE: &str = "Usage: ";

/// The run mode's usage line, before the tools'.
pub(crate) const RUN_USAGE: &str =
    "envwrap [OPTION]... [--] [-] [NAME=VALUE]... [COMMAND [ARG]...]";

/// What the run mode does, after the usage.
const RUN_ABOUT: &str = "\
Run COMMAND the way env(1) does, with the environment and arguments an envshim
policy allows: the policy decides which variables COMMAND receives (kept,
stripped, refused as credentials, or set) and refuses to run it when a secret
sits in its arguments. What envwrap strips is absent from the whole process tree
below it.
";

/// The run mode's help after its list of tools.
const RUN_TAIL: &str = "\
Policy lookup (the first that applies): --policy FILE; $ENVSHIM_POLICY
(':builtin' names the built-in default);
$XDG_CONFIG_HOME/envshim/policy.toml (~/.config when XDG_CONFIG_HOME is unset);
/etc/envshim/policy.toml; the built-in default, which inherits everything,
refuses credentials by name and by the shape of their values, and refuses
secrets in argv.

In a #! line (the kernel passes everything after the interpreter as one
argument, which -S splits):
  #!/usr/local/bin/envwrap -S --policy /etc/envshim/loop.toml -- /bin/sh

Exit status:
  125  envwrap failed: a bad option or operand, a bad policy, a bad -S string,
       a -C directory it cannot enter; with --supervise, also when the
       supervisor ended before COMMAND did (COMMAND's own status is lost)
  126  COMMAND cannot be executed, or the policy refused to run it (the message
       names the variable or token shape and the program)
  127  COMMAND was not found
  else the exit status of COMMAND

Messages name variables, programs and rules, never values.
See envwrap(1) and envshim.toml(5).
";

/// One row of a table: the left cell and the doc wrapped beside it.
struct Row {
    left: String,
    doc: &'static str,
}

/// An option as the help's left column spells it: `  -u, --unset=NAME`,
/// `      --default-signal[=SIGS]`.
fn spelling(o: &Spec<()>) -> String {
    let short = match o.short {
        Some(c) => format!("-{}, ", c as char),
        None => "    ".to_string(),
    };
    let value = if o.value {
        format!("={}", o.placeholder)
    } else if o.optional {
        format!("[={}]", o.placeholder)
    } else {
        String::new()
    };
    format!("  {short}--{}{value}", o.long)
}

fn option_rows(options: &[Spec<()>]) -> Vec<Row> {
    options
        .iter()
        .map(|o| Row {
            left: spelling(o),
            doc: o.doc,
        })
        .collect()
}

/// Where the docs of `rows` start: two spaces after the longest left cell that
/// is not too long.
fn column<'r>(rows: impl IntoIterator<Item = &'r Row>) -> usize {
    let widest = rows
        .into_iter()
        .map(|r| r.left.len())
        .filter(|&w| w <= MAX_LEFT)
        .max()
        .unwrap_or(0);
    widest + 2
}

/// `text`'s words, a quoted command (`'envwrap --help'`) as one: a line
/// break inside it would read as two.
fn words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        open = match word.strip_prefix('\'') {
            Some(rest) if !open => !rest.contains('\''),
            _ => open && !word.contains('\''),
        };
    }
    words
}

/// `text`'s words in lines of at most `width` characters (a longer word gets a
/// line of its own).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in words(text) {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `rows` as a table whose docs start at `column`.
fn table(rows: &[Row], column: usize) -> String {
    let mut out = String::new();
    for row in rows {
        let doc = wrap(row.doc, WIDTH - column);
        let mut doc = doc.iter();
        if row.left.len() < column {
            let first = doc.next().map(String::as_str).unwrap_or("");
            out.push_str(format!("{:column$}{first}", row.left).trim_end());
        } else {
            out.push_str(&row.left);
        }
        out.push('\n');
        for line in doc {
            out.push_str(&format!("{:column$}{line}\n", ""));
        }
    }
    out
}

/// A paragraph wrapped to the help's width.
fn paragraph(text: &str) -> String {
    wrap(text, WIDTH).into_iter().map(|l| l + "\n").collect()
}

/// `tool`'s usage lines, the first after `lead` (as wide as [`USAGE`]), the
/// others under its first operand; then its other names, if `aliases`.
fn usage(tool: &Tool, lead: &str, aliases: bool) -> String {
    let mut out = String::new();
    for (i, line) in tool.doc.usage.iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("{lead}envwrap {} {line}\n", tool.name));
        } else {
            let indent = USAGE.len() + "envwrap ".len() + tool.name.len() + 1;
            out.push_str(&format!("{:indent$}{line}\n", ""));
        }
    }
    for alias in tools::aliases_of(tool).filter(|_| aliases) {
        out.push_str(&format!(
            "{:w$}envwrap {} ...   (the same tool)\n",
            "",
            alias.name,
            w = USAGE.len()
        ));
    }
    out
}

/// `envwrap --help`.
pub fn run() -> String {
    let mut out = format!("{USAGE}{RUN_USAGE}\n");
    for tool in tools::described() {
        out.push_str(&usage(tool, &" ".repeat(USAGE.len()), false));
    }
    out.push('\n');
    out.push_str(RUN_ABOUT);
    out.push('\n');
    out.push_str(&run_options());
    out.push('\n');
    out.push_str(&paragraph(&format!(
        "Options stop at the first argument that is not one. Long options may be \
         shortened to any unambiguous prefix. To run a program named like a tool \
         ({}), put '--' before it.",
        tools::tool_names().collect::<Vec<_>>().join(", ")
    )));
    out.push('\n');
    out.push_str("Tools ('envwrap TOOL --help' shows a tool's options):\n");
    out.push_str(&tool_table());
    out.push('\n');
    out.push_str(RUN_TAIL);
    out
}

/// The run mode's option groups, each a table, all with one column.
fn run_options() -> String {
    let groups: Vec<(&cli::Group, Vec<Row>)> = cli::GROUPS
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut rows = option_rows(&cli::group_options(i));
            rows.extend(g.operands.iter().map(|o| Row {
                left: format!("  {}", o.shown),
                doc: o.doc,
            }));
            (g, rows)
        })
        .collect();
    let column = column(groups.iter().flat_map(|(_, rows)| rows));
    let mut out = String::new();
    for (i, (group, rows)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}:\n", group.title));
        out.push_str(&table(rows, column));
        out.push_str(group.after);
    }
    out
}

/// The run mode's list of tools, with what each does.
fn tool_table() -> String {
    let rows: Vec<Row> = tools::described()
        .map(|t| Row {
            left: format!("  {} {}", t.name, t.doc.operands)
                .trim_end()
                .to_string(),
            doc: t.doc.summary,
        })
        .collect();
    table(&rows, column(&rows))
}

/// `envwrap TOOL --help`.
pub fn tool(tool: &Tool) -> String {
    let rows = option_rows(&(tool.options)());
    let mut out = usage(tool, USAGE, true);
    out.push('\n');
    out.push_str(tool.doc.about);
    out.push('\n');
    out.push_str(&table(&rows, column(&rows)));
    if !tool.doc.after.is_empty() {
        out.push('\n');
        out.push_str(tool.doc.after);
    }
    out
}

/// `envwrap NAME --help`, for the tool named `name`.
pub fn for_tool(name: &str) -> String {
    tools::by_name(name).map(tool).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_help() -> Vec<(String, String)> {
        let mut helps = vec![("envwrap".to_string(), run())];
        helps.extend(tools::TOOLS.iter().map(|t| (t.name.to_string(), tool(t))));
        helps
    }

    #[test]
    fn every_line_fits_the_width_but_an_unbreakable_usage() {
        for (name, help) in every_help() {
            for line in help.lines() {
                let usage = line.trim_start().starts_with('[') || line.contains("envwrap ");
                assert!(
                    line.len() <= WIDTH || usage,
                    "{name} --help: {} columns: {line}",
                    line.len()
                );
            }
        }
    }

    #[test]
    fn the_help_names_every_tool_and_each_tool_its_options() {
        let run = run();
        for t in tools::TOOLS {
            assert!(run.contains(t.name), "--help does not name {}", t.name);
        }
        for t in tools::described() {
            let own = tool(t);
            assert!(
                own.starts_with(&format!("Usage: envwrap {} ", t.name)),
                "{}",
                t.name
            );
            for o in (t.options)() {
                assert!(
                    own.contains(&format!("--{}", o.long)),
                    "{} --{}",
                    t.name,
                    o.long
                );
            }
        }
        for o in tools::run_options() {
            assert!(
                run.contains(&format!("--{}", o.long)),
                "--help: --{}",
                o.long
            );
        }
    }

    #[test]
    fn a_quoted_command_is_not_broken() {
        assert_eq!(
            wrap("the lookup of 'envwrap --help' and COMMAND's 'x' y", 22),
            ["the lookup of", "'envwrap --help' and", "COMMAND's 'x' y"]
        );
    }

    #[test]
    fn a_long_spelling_puts_its_doc_on_the_next_line() {
        let rows = [
            Row {
                left: "  -a, --all".into(),
                doc: "every one",
            },
            Row {
                left: "      --a-very-long-option-indeed=VALUE".into(),
                doc: "what it does",
            },
        ];
        assert_eq!(
            table(&rows, column(&rows)),
            "  -a, --all  every one\n      --a-very-long-option-indeed=VALUE\n             what it does\n"
        );
    }
}
