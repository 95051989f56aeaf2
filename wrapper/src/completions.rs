//! Shell completions for bash, zsh and fish (`envwrap --generate complete-bash`,
//! `complete-zsh`, `complete-fish`), generated from the option tables the
//! scanner itself reads: an option added to a tool is completed without another
//! edit. `make install` and the package install the three scripts.
//!
//! What is completed: the tools and commands as the first word; each tool's
//! options after it, and the run mode's options otherwise; an option's value
//! (the words it takes, tmux socket names, variable names, else files); and in
//! the run mode, the command after `--` or after the options and pairs, then
//! that command's own completion (bash-completion's `_command_offset`, zsh's
//! `_normal`, fish's `__fish_complete_subcommand`). zsh and fish show each
//! option with its doc, the line `--help` shows (bash has no place for it).

use crate::opts::Spec;
use crate::tools;

/// Every tool, then the run mode (`""`, last: a shell's `case` takes the first
/// pattern that matches), with their options.
fn tables() -> Vec<(&'static str, Vec<Spec<()>>)> {
    let mut tables: Vec<(&'static str, Vec<Spec<()>>)> = tools::TOOLS
        .iter()
        .map(|t| (t.name, (t.options)()))
        .collect();
    tables.push(("", tools::run_options()));
    tables
}

/// The tools' names, joined by `sep`.
fn tool_list(sep: &str) -> String {
    tools::tool_names().collect::<Vec<_>>().join(sep)
}

/// Every spelling of a table's options, `--long` and then `-s`, each with
/// the option's doc (what `--help` says of it).
fn described_words(options: &[Spec<()>]) -> Vec<(String, &'static str)> {
    let mut w: Vec<(String, &'static str)> = options
        .iter()
        .map(|o| (format!("--{}", o.long), o.doc))
        .collect();
    w.extend(
        options
            .iter()
            .filter_map(|o| o.short.map(|c| (format!("-{}", c as char), o.doc))),
    );
    w
}

/// Every spelling of a table's options: `--long` and `-s`.
fn words(options: &[Spec<()>]) -> Vec<String> {
    described_words(options)
        .into_iter()
        .map(|(w, _)| w)
        .collect()
}

/// `text` in single quotes for `sh` and zsh.
fn sh_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `text` in single quotes for fish, where `\` and `'` are escaped.
fn fish_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// What an option's value is completed with.
enum Values {
    /// One of these words.
    Words(Vec<&'static str>),
    /// The tmux sockets of this user (`-L NAME`).
    TmuxSockets,
    /// The names of the environment's variables (`-u NAME`).
    Variables,
    /// A file.
    Files,
}

/// The values of option `--long`: the words the tool accepts where it takes
/// only a few, else what the value names.
fn values(long: &str) -> Values {
    match long {
        "mode" => Values::Words(vec!["audit", "enforce"]),
        "generate" => Values::Words(vec![
            "complete-bash",
            "complete-zsh",
            "complete-fish",
            "man",
        ]),
        "mux" => Values::Words(
            crate::mux::IMPLEMENTATIONS
                .iter()
                .map(|i| i.row().name)
                .collect(),
        ),
        "socket-name" => Values::TmuxSockets,
        "unset" => Values::Variables,
        _ => Values::Files,
    }
}

/// The run mode's options that take a value, every spelling, for finding where
/// the command starts.
fn run_valued() -> Vec<String> {
    let valued: Vec<Spec<()>> = tools::run_options()
        .into_iter()
        .filter(|o| o.value)
        .collect();
    words(&valued)
}

/// Each value-taking option of each tool, as `(tool, spellings, values)`.
fn valued_options() -> Vec<(&'static str, Vec<String>, Values)> {
    let mut out = Vec::new();
    for (tool, options) in tables() {
        for o in options.iter().filter(|o| o.value) {
            let mut spellings = vec![format!("--{}", o.long)];
            spellings.extend(o.short.map(|c| format!("-{}", c as char)));
            out.push((tool, spellings, values(o.long)));
        }
    }
    out
}

/// The tmux sockets of this user, as a shell command (bash and zsh).
const TMUX_SOCKETS: &str = "command ls \"${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)\" 2>/dev/null";

/// The script for `shell`: `bash`, `zsh` or `fish`.
pub fn script(shell: &str) -> Option<String> {
    Some(match shell {
        "bash" => bash(),
        "zsh" => zsh(),
        "fish" => fish(),
        _ => return None,
    })
}

fn bash() -> String {
    let mut cases = String::new();
    for (tool, options) in tables() {
        let pattern = if tool.is_empty() { "*" } else { tool };
        cases.push_str(&format!(
            "        {pattern}) opts=\"{}\" ;;\n",
            words(&options).join(" ")
        ));
    }
    let mut value_cases = String::new();
    for (tool, spellings, values) in valued_options() {
        let pattern: Vec<String> = spellings
            .iter()
            .map(|s| format!("\"{tool}:{s}\""))
            .collect();
        let reply = match values {
            Values::Words(w) => format!("$(compgen -W \"{}\" -- \"$cur\")", w.join(" ")),
            Values::TmuxSockets => format!("$(compgen -W \"$({TMUX_SOCKETS})\" -- \"$cur\")"),
            Values::Variables => "$(compgen -e -- \"$cur\")".to_string(),
            Values::Files => "$(compgen -f -- \"$cur\")".to_string(),
        };
        value_cases.push_str(&format!(
            "        {}) COMPREPLY=({reply}); return ;;\n",
            pattern.join("|")
        ));
    }
    format!(
        "# bash completion for envwrap (generated by envwrap --generate complete-bash)
# Where the run mode's command starts (0: not yet): after `--`, or at the first
# word that is neither an option (nor its value) nor a NAME=VALUE pair. bash
# splits `--mode=x` and `A=1` at `=`.
_envwrap_command_at() {{
    local i w
    for ((i = 1; i <= COMP_CWORD; i++)); do
        w=${{COMP_WORDS[i]}}
        if ((i == COMP_CWORD)); then
            [[ $w == -* ]] && break
            echo $i; return
        fi
        case \"$w\" in
            --) echo $((i + 1)); return ;;
            {valued})
                if [[ ${{COMP_WORDS[i+1]}} == = ]]; then ((i += 2)); else ((i++)); fi ;;
            -*|*=*) ;;
            *)
                if [[ ${{COMP_WORDS[i+1]}} == = ]]; then ((i += 2)); continue; fi
                echo $i; return ;;
        esac
    done
    echo 0
}}
_envwrap() {{
    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"\" tool=\"\" opts
    ((COMP_CWORD > 0)) && prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"
    if [[ $cur == = ]]; then
        cur=\"\"
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=\"${{COMP_WORDS[COMP_CWORD-2]}}\"
    fi
    case \"${{COMP_WORDS[1]}}\" in
        {tools}) [[ $COMP_CWORD -gt 1 ]] && tool=\"${{COMP_WORDS[1]}}\" ;;
    esac
    if [[ -z $tool ]] && ((COMP_CWORD > 1)); then
        local at
        at=$(_envwrap_command_at)
        if ((at > 0 && at == COMP_CWORD)); then
            COMPREPLY=($(compgen -c -- \"$cur\"))
            return
        elif ((at > 0)); then
            if declare -F _command_offset >/dev/null; then
                _command_offset \"$at\"
            else
                COMPREPLY=($(compgen -f -- \"$cur\"))
            fi
            return
        fi
    fi
    case \"$tool:$prev\" in
{value_cases}    esac
    case \"$tool\" in
{cases}    esac
    if [[ \"$cur\" == -* ]]; then
        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))
    elif [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W \"{words}\" -- \"$cur\") $(compgen -c -- \"$cur\"))
    else
        COMPREPLY=($(compgen -f -- \"$cur\"))
    fi
}}
complete -F _envwrap envwrap
",
        tools = tool_list("|"),
        words = tool_list(" "),
        valued = run_valued().join("|"),
    )
}

fn zsh() -> String {
    let mut cases = String::new();
    for (tool, options) in tables() {
        let pattern = if tool.is_empty() { "*" } else { tool };
        // What zsh shows for each word: the word and its doc.
        let shown: Vec<String> = described_words(&options)
            .iter()
            .map(|(w, doc)| sh_quoted(&format!("{w}  -- {doc}")))
            .collect();
        cases.push_str(&format!(
            "    {pattern}) opts=({}); shown=({}) ;;\n",
            words(&options).join(" "),
            shown.join(" ")
        ));
    }
    let mut value_cases = String::new();
    for (tool, spellings, values) in valued_options() {
        let pattern: Vec<String> = spellings.iter().map(|s| format!("'{tool}:{s}'")).collect();
        let action = match values {
            Values::Words(w) => format!("compadd -- {}", w.join(" ")),
            Values::TmuxSockets => format!("compadd -- ${{(f)\"$({TMUX_SOCKETS})\"}}"),
            Values::Variables => "compadd -- ${(k)parameters[(R)*export*]}".to_string(),
            Values::Files => "_files".to_string(),
        };
        value_cases.push_str(&format!("  {}) {action}; return ;;\n", pattern.join("|")));
    }
    format!(
        "#compdef envwrap
# zsh completion for envwrap (generated by envwrap --generate complete-zsh)
local -a tools opts shown
tools=({tools})
local tool=\"\" prev=$words[CURRENT-1]
if (( CURRENT > 2 )) && (( ${{tools[(Ie)$words[2]]}} )); then
  tool=$words[2]
fi
# The run mode's command: after `--`, or at the first word that is neither an
# option (nor its value) nor a NAME=VALUE pair; from there on, the command's own
# completion.
if [[ -z $tool ]] && (( CURRENT > 2 )); then
  local i=2 at=0
  while (( i < CURRENT )); do
    case $words[i] in
      --) at=$(( i + 1 )); break ;;
      {valued}) (( i++ )) ;;
      -*|*=*) ;;
      *) at=$i; break ;;
    esac
    (( i++ ))
  done
  if (( at == 0 && i == CURRENT )) && [[ $words[CURRENT] != -* ]]; then
    at=$CURRENT
  fi
  if (( at > 0 && at == CURRENT )); then
    _command_names -e
    return
  elif (( at > 0 )); then
    shift $(( at - 1 )) words
    (( CURRENT -= at - 1 ))
    _normal
    return
  fi
fi
# An option's value: after it, or after `--option=`.
if [[ $PREFIX == --*=* ]]; then
  prev=${{PREFIX%%=*}}
  compset -P '*='
fi
case \"$tool:$prev\" in
{value_cases}esac
case $tool in
{cases}esac
if [[ $PREFIX == -* ]]; then
  compadd -l -d shown -- $opts
elif (( CURRENT == 2 )); then
  compadd -- $tools
  _command_names -e
else
  _files
fi
",
        tools = tool_list(" "),
        valued = run_valued().join("|"),
    )
}

fn fish() -> String {
    let mut out = String::from(
        "# fish completion for envwrap (generated by envwrap --generate complete-fish)\n",
    );
    out.push_str(&format!(
        "complete -c envwrap -n '__fish_use_subcommand' -a '{}'\n",
        tool_list(" ")
    ));
    // The run mode's command, and then its own completion, as fish's env does.
    // The options that take a value, short ones first: the function reads
    // leading `--words` as its own flags.
    let mut valued = run_valued();
    valued.sort_by_key(|w| w.starts_with("--"));
    out.push_str(&format!(
        "complete -c envwrap -n 'not __fish_seen_subcommand_from {}' -x -a '(__fish_complete_subcommand {})'\n",
        tool_list(" "),
        valued.join(" ")
    ));
    for (tool, options) in tables() {
        let condition = if tool.is_empty() {
            format!("not __fish_seen_subcommand_from {}", tool_list(" "))
        } else {
            format!("__fish_seen_subcommand_from {tool}")
        };
        for o in &options {
            let short = o
                .short
                .map(|c| format!(" -s {}", c as char))
                .unwrap_or_default();
            let value = match (o.value, values(o.long)) {
                (false, _) => String::new(),
                (true, Values::Words(w)) => format!(" -x -a '{}'", w.join(" ")),
                (true, Values::TmuxSockets) => {
                    " -x -a '(command ls (set -q TMUX_TMPDIR[1]; and test -n \"$TMUX_TMPDIR\"; and echo $TMUX_TMPDIR; or echo /tmp)/tmux-(id -u) 2>/dev/null)'"
                        .to_string()
                }
                (true, Values::Variables) => " -x -a '(set --names -x)'".to_string(),
                (true, Values::Files) => " -r -F".to_string(),
            };
            out.push_str(&format!(
                "complete -c envwrap -n '{condition}' -l {}{short}{value} -d {}\n",
                o.long,
                fish_quoted(o.doc)
            ));
        }
    }
    out
}
