//! The run mode: `envwrap [OPTION]... [NAME=VALUE]... COMMAND [ARG]...`.
//!
//! In order, as env(1) does it plus the policy: build the environment (`-i`, `-u`,
//! `NAME=VALUE`), load the policy, enter `-C DIR`, find the command on PATH,
//! decide the child's environment and argv, report, then exec. What the policy
//! strips here is absent from the whole process tree below: envwrap is its root.

use crate::cli::{self, Parsed, RunOptions};
use crate::exit::{self, Failure, CANNOT_EXECUTE, NOT_FOUND, OWN_ERROR};
use crate::journal::Journal;
use crate::resolve::{self, Resolved};
use crate::{
    completions, deliver, environ, exec, help, man, mux, preload, source, supervise, value,
};
use envpolicy::argv::ArgAction;
use envpolicy::compiled::Mode;
use envpolicy::decide::{Action, Rule};
use envpolicy::outcome::{self, Change, ChangeAction, ChangeRule, Decision, Target};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

/// Run mode entry point: `args` without `argv[0]`.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let own = environ::own();
    match cli::parse(args, |n| environ::get(&own, n).map(<[u8]>::to_vec)) {
        Ok(Parsed::Help) => {
            show!("{}", help::run());
            ExitCode::SUCCESS
        }
        Ok(Parsed::Version) => {
            showln!("envwrap {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(Parsed::Generate(kind)) => generate(&kind),
        Ok(Parsed::Run(o)) => exit::finish(execute(o, own)),
        Err(f) => exit::report(&f),
    }
}

/// `--generate KIND`: a shell's completion script, or the man page
/// (docs/man/envwrap.1 is its output: see man.rs).
fn generate(kind: &str) -> ExitCode {
    let text = match kind.strip_prefix("complete-") {
        Some(shell) => completions::script(shell),
        None => (kind == "man").then(man::page),
    };
    match text {
        Some(s) => {
            show!("{s}");
            ExitCode::SUCCESS
        }
        None => exit::report(&exit::Failure::usage(
            "--generate takes complete-bash, complete-zsh, complete-fish or man",
            "envwrap --help",
        )),
    }
}

/// Everything after parsing. Returns only on failure (or a refused exec).
fn execute(o: RunOptions, own: Vec<Vec<u8>>) -> Result<u8, Failure> {
    // The environment env(1) would build.
    let debug = |what: &str| {
        if o.debug {
            say!("envwrap: debug: {what}");
        }
    };
    let mut env = if o.ignore_env {
        debug("cleaning environ");
        Vec::new()
    } else {
        own.clone()
    };
    for name in &o.unset {
        debug(&format!("unset:    {}", value::word(name)));
        environ::unset(&mut env, name);
    }
    for a in &o.assignments {
        let name = environ::name(a);
        debug(&format!("setenv:   {}", value::word(name)));
        environ::set(&mut env, name, &a[name.len() + 1..]);
    }

    // The policy file by the path its children's shims are handed
    // (`Loaded::absolute_path`), so that envwrap's lines name it as theirs do:
    // `--policy ./p.toml` said "(policy ./p.toml)" where the shim in the child
    // said "(policy /home/u/p.toml)".
    let named = o
        .policy
        .as_deref()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()));
    let loaded = source::load(named.as_deref(), source::own_getenv)?;
    // Every message from here on redacts the credentials of the child's
    // environment too, judged by this policy (value::redacted).
    value::judge_with(&loaded.compiled);
    value::learn_env(&env);
    for w in &loaded.compiled.warnings {
        say!("envwrap: warning: {}", w.message);
    }
    let policy = loaded.compiled.policy();
    let policy_log = policy
        .log_path()
        .map(|p| p.strip_suffix(b"\0").unwrap_or(p))
        .map(|p| Path::new(OsStr::from_bytes(p)).to_path_buf());
    let mut journal = Journal::open(
        o.log.as_deref(),
        policy_log.as_deref(),
        o.json,
        policy.source(),
    )?;
    // Absolute before -C: descendants may run anywhere.
    let policy_entry = loaded.policy_entry();

    if let Some(dir) = &o.chdir {
        std::env::set_current_dir(dir).map_err(|e| {
            Failure::new(
                OWN_ERROR,
                format!(
                    "cannot change directory to {}: {}",
                    value::word(dir.as_os_str().as_bytes()),
                    envpolicy::error::io_reason(&e)
                ),
            )
        })?;
    }

    let files = outcome::read_env_files(&policy);
    // The caller's own credentials must not reach argv either, even after -i or -u.
    let parent: &[Vec<u8>] = if env == own { &[] } else { &own };
    let Some(command) = o.command.first().map(|c| c.as_bytes()) else {
        return print_environment(&policy, &env, parent, &files, o.mode, o.null);
    };
    let shown = value::word(command);
    let program = match resolve::resolve(command, environ::get(&env, b"PATH")) {
        Resolved::Found(p) => p,
        Resolved::NotFound => {
            let mut message = format!("{shown}: command not found");
            if command.iter().any(|&b| b == b' ' || b == b'\t') {
                message.push_str(crate::opts::SHEBANG_HINT);
            }
            // `envwrap chek x.toml`: a tool's name misspelt.
            if let Some(word) = std::str::from_utf8(command)
                .ok()
                .filter(|w| !w.contains('/'))
            {
                if let Some(tool) =
                    envpolicy::suggest::closest(word, crate::tools::TOOLS.iter().map(|t| t.name))
                {
                    message.push_str(&format!(" (did you mean `envwrap {tool}`?)"));
                }
            }
            if command == b"--" && !o.assignments.is_empty() {
                // As env(1)'s: `--` ends the options, before any NAME=VALUE.
                message.push_str(
                    " (`--` goes before NAME=VALUE: envwrap [OPTION]... [--] [-] [NAME=VALUE]... COMMAND)",
                );
            }
            return Err(Failure::new(NOT_FOUND, message));
        }
        Resolved::NotExecutable(p) => {
            return Err(Failure::new(
                CANNOT_EXECUTE,
                format!(
                    "{}: permission denied",
                    value::word(p.as_os_str().as_bytes())
                ),
            ))
        }
    };

    let (shim, preload_warning) = preload::plan(o.preload, &program, &shown)?;
    if let Some(w) = preload_warning {
        journal.note(&w);
    }
    let argv: Vec<Vec<u8>> = o.command.iter().map(|a| a.as_bytes().to_vec()).collect();
    // Under the shim (in this envwrap's own `LD_PRELOAD`: a run the shim
    // routed, or a user's shell) and with the policy the shim found (no
    // `--policy`), the shim said the dead rules when it compiled the policy:
    // not again at each routed run.
    let shim_said_it = o.policy.is_none()
        && std::env::var_os("LD_PRELOAD")
            .is_some_and(|v| envpolicy::supervise::shim_in_preload(v.as_bytes()).is_some());
    let managed_found = managed_layer(&policy, &loaded.label(), !shim_said_it);
    let managed = managed_found.in_force();
    // A secret's program is a path: under a policy with secrets (either
    // layer's), a name is decided as the path it resolved to, as the shim
    // decides each candidate of an `execvp` search.
    let resolved = program.as_os_str().as_bytes();
    let has_secrets =
        |p: &envpolicy::compiled::Policy<'_>| p.count(envpolicy::compiled::sec::SECRETS) != 0;
    let has_secrets =
        has_secrets(&policy) || managed.as_ref().is_some_and(|m| has_secrets(&m.policy));
    let command = if has_secrets && !command.contains(&b'/') {
        resolved
    } else {
        command
    };
    let shim_bytes = shim.as_ref().map(|s| s.as_os_str().as_bytes());
    let mode = o.mode.unwrap_or(policy.settings().mode);
    // Under --supervise the command's child reads them (Setup::redo): the
    // supervisor, forked from here, must never hold a value.
    let read_secrets = |p: &envpolicy::compiled::Policy<'_>, mode: Mode| {
        if o.supervise {
            envpolicy::secret_source::Values::default()
        } else {
            deliver::read(p, command, &env, mode, &shown, &journal)
        }
    };
    let secrets = read_secrets(&policy, mode);
    let managed_secrets = managed
        .as_ref()
        .map(|m| read_secrets(&m.policy, deliver::managed_mode(&m.policy)));
    let sticky = outcome::Sticky {
        preload: shim_bytes,
        policy_entry: shim.as_ref().and(policy_entry.as_deref()),
        hint: None,
    };
    let layers = outcome::Layers {
        user: outcome::Pass {
            policy: &policy,
            env_files: &files,
            secrets: secrets.as_slice(),
        },
        managed: managed
            .as_ref()
            .zip(managed_secrets.as_ref())
            .map(|(m, s)| m.pass(s.as_slice())),
        requested_mode: o.mode,
        sticky,
    };
    let d = if o.routed {
        layers.decide_routed(command, &argv, &env, parent)
    } else {
        layers.decide(command, &argv, &env, parent)
    };

    let operand_names: Vec<&[u8]> = o.assignments.iter().map(|a| environ::name(a)).collect();
    report(
        &d,
        &env,
        &d.program,
        &shown,
        (&loaded.label(), policy.source()),
        &operand_names,
        &mut journal,
    );
    if d.refused().is_some() {
        // The line every front end writes (envpolicy_core::refusal), naming
        // the layer that refused.
        let line = d.refusal_line.clone().unwrap_or_default();
        return Err(Failure::refused(CANNOT_EXECUTE, line));
    }

    let mut child_env = d.effective_env(&env).to_vec();
    if let Some(s) = &shim {
        preload::ensure(&mut child_env, s, policy_entry.as_deref());
    }
    let child_argv = d.effective_argv(&argv);
    if let (Some(_), Some(path)) = (&shim, loaded.absolute_path()) {
        prepare_childs_cache(&path, &child_env);
    }
    if shim.is_none() {
        // The shim in a multiplexer's client would do it (docs/adr/0014);
        // without one, here.
        mux::fix_before_client(&loaded, &program, child_argv, &child_env);
    }
    // The policy's `mask` is for the runs a person starts: a run the shim
    // routed here (`--routed`) stands for an exec the shim makes elsewhere
    // without a relay, and must give the program's caller the same output.
    let mask_wanted = |p: &envpolicy::compiled::Policy<'_>| p.settings().mask && !o.routed;
    if o.mask || mask_wanted(&policy) || managed.as_ref().is_some_and(|m| mask_wanted(&m.policy)) {
        let policies: Vec<&envpolicy::compiled::Policy<'_>> = std::iter::once(&policy)
            .chain(managed.as_ref().map(|m| &m.policy))
            .collect();
        // Returns in the child, which runs the command; the relay never does.
        crate::mask::split_off(crate::mask::masker(&policies, &[&own, &env], &own))?;
    }
    if o.supervise {
        let managed_policy = managed.as_ref().map(|m| &m.policy);
        let redo =
            deliver::Redo::needed(&policy, mode, managed_policy, command).then(|| deliver::Redo {
                program: command.to_vec(),
                shown_program: shown.clone(),
                parent: parent.to_vec(),
                env_files: files.clone(),
                sticky_preload: shim_bytes.map(<[u8]>::to_vec),
                sticky_policy: shim.as_ref().and(policy_entry.clone()),
                requested_mode: o.mode,
                managed: managed_found
                    .compiled()
                    .cloned()
                    .zip(managed.as_ref().map(|m| m.env_files.clone())),
            });
        let setup = supervise::Setup {
            redo,
            loaded,
            journal,
            mode: o.mode,
            trust_marks: shim.is_some() && !o.judge_all,
            refuse_changes: o.refuse_changes,
        };
        return Ok(supervise::run(&program, child_argv, &child_env, setup));
    }
    deliver::say_unguarded(&d, &program, &child_env);
    if o.debug {
        say!("envwrap: debug: policy:   {}", loaded.label());
        for c in &d.changes {
            let name = c.name.as_deref().unwrap_or("");
            say!(
                "envwrap: debug: {} {} {name} ({})",
                c.target,
                c.action,
                c.rule
            );
        }
        say!(
            "envwrap: debug: executing: {}",
            value::word(program.as_os_str().as_bytes())
        );
        for (i, a) in child_argv.iter().enumerate() {
            say!("envwrap: debug:    arg[{i}]= '{}'", value::word(a));
        }
    }
    exec::restore_sigpipe();
    o.signals.apply()?;
    let err = exec::exec(&program, child_argv, &child_env);
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        NOT_FOUND
    } else {
        CANNOT_EXECUTE
    };
    Err(Failure::new(
        code,
        format!(
            "{}: {}",
            value::word(program.as_os_str().as_bytes()),
            envpolicy::error::io_reason(&err)
        ),
    ))
}

/// Log every change; warn about the loud ones (enforce) or all of them (audit).
fn report(
    d: &Decision,
    env: &[Vec<u8>],
    command: &[u8],
    shown: &str,
    (label, source): (&str, &[u8]),
    operand_names: &[&[u8]],
    journal: &mut Journal,
) {
    // An exec the policy refuses (in enforce mode) is said in one line, its
    // refusal, as every front end says it: nothing of what it would have
    // granted, refused or withheld, had it run.
    let refused = d.refused().is_some();
    for c in &d.changes {
        journal.record(command, c, d.pass_mode(c.layer));
        if refused {
            continue;
        }
        let from_operand = c.action == ChangeAction::Env(Action::Refuse)
            && c.name
                .as_deref()
                .is_some_and(|n| operand_names.contains(&n.as_bytes()));
        // The shim's own entries are envwrap's doing (--preload), not the
        // policy's. A change is audited by the mode of the pass that made it
        // (a managed layer in audit mode under an enforcing user policy).
        let audit = d.pass_mode(c.layer) == Mode::Audit && c.rule != ChangeRule::Env(Rule::Sticky);
        if !(audit || c.loud || from_operand) {
            continue;
        }
        // The refused exec itself is reported by the caller (enforce) or here (audit).
        if !audit && c.action == ChangeAction::Arg(ArgAction::Refuse) {
            continue;
        }
        let text = match loud_text(c, command, source, from_operand).filter(|_| !audit) {
            Some(line) => format!("warning: {line}"),
            None => describe_change(c, shown, label, from_operand, audit),
        };
        journal.warn(command, c, &text, d.pass_mode(c.layer));
    }
    if refused {
        return;
    }
    for name in d.withheld_names(env) {
        journal.withheld(&name, command);
    }
}

/// One warning line for a change.
/// The line every front end writes for a loud change in enforce mode
/// ([`envpolicy::loud`]), with the change's sentence as its reason, by the
/// policy of the layer that made it (`source`: the user layer's).
fn loud_text(c: &Change, command: &[u8], source: &[u8], from_operand: bool) -> Option<String> {
    let operand = if from_operand {
        "given as NAME=VALUE; "
    } else {
        ""
    };
    let reason = format!("{operand}{}", c.why);
    outcome::loud_line(c, command, &reason, outcome::source_of(c.layer, source))
}

fn describe_change(
    c: &Change,
    shown: &str,
    label: &str,
    from_operand: bool,
    audit: bool,
) -> String {
    let verb = if audit {
        format!("audit: would {}", c.action)
    } else {
        format!("warning: {}", past(c.action.id()))
    };
    let name = c.name.as_deref().map(|n| value::word(n.as_bytes()));
    let why = &c.why;
    match (c.target, c.action) {
        (Target::Argv, ChangeAction::Arg(ArgAction::Refuse)) => format!(
            "audit: would refuse to run {shown}: argument {} {why} ({label})",
            c.index.unwrap_or(0)
        ),
        (Target::Argv, ChangeAction::Arg(ArgAction::NameOnly)) => {
            format!(
            "{} the value of {} from argument {} of {shown} into its environment: {why} ({label})",
            if audit { "audit: would move" } else { "warning: moved" },
            name.unwrap_or_default(),
            c.index.unwrap_or(0)
        )
        }
        (Target::Argv, _) => format!(
            "{verb} argument {}{} of {shown}: {why} ({label})",
            c.index.unwrap_or(0),
            name.map(|n| format!(" ({n})")).unwrap_or_default()
        ),
        (_, action) => {
            let to = if action == ChangeAction::Env(Action::Grant) {
                "to"
            } else {
                "for"
            };
            let operand = if from_operand {
                "given as NAME=VALUE; "
            } else {
                ""
            };
            let name = name.unwrap_or_else(|| "an entry".to_string());
            format!("{verb} {name} {to} {shown}: {operand}{why} ({label})")
        }
    }
}

/// With the shim in the child and a policy file, the child's first process would
/// compile the policy again and print its warnings a second time: write the
/// cache that process will look for (by the child's own `ENVSHIM_CACHE_DIR`, see
/// [`envpolicy::cache::cache_dir`]), unless it is fresh already. Quietly: a cache that cannot be written
/// leaves the child to compile, as it would have.
fn prepare_childs_cache(policy: &Path, child_env: &[Vec<u8>]) {
    use envpolicy::cache;
    let getenv =
        |k: &str| environ::get(child_env, k.as_bytes()).map(|v| OsStr::from_bytes(v).to_owned());
    let out = cache::cache_path(policy, getenv, cache::current_uid());
    let fresh = std::fs::read(&out)
        .ok()
        .is_some_and(|bytes| matches!(cache::check_fresh(&bytes, policy), Ok(None)));
    if fresh {
        return;
    }
    let built = cache::build(policy);
    if built.outcome.is_ok() {
        let _ = cache::store_bytes(&built.bytes, &out);
    }
}

/// `refuse` -> `refused`, for warnings.
fn past(action: &str) -> &str {
    match action {
        "refuse" => "refused",
        "strip" => "stripped",
        "grant" => "granted",
        "replace" => "replaced",
        "drop" => "dropped",
        "redact" => "redacted",
        other => other,
    }
}

/// env(1) without a command: print the environment a child would get under the
/// The managed layer of this host ([`envpolicy::managed`]): its one warning
/// when it is broken, and one when it makes rules of the user's policy
/// (`policy`, shown as `label`) dead ([`envpolicy::layer::dead_rules`], which
/// `envwrap check` names one by one), when `say_dead`.
fn managed_layer(
    policy: &envpolicy::compiled::Policy<'_>,
    label: &str,
    say_dead: bool,
) -> envpolicy::managed::Managed {
    let managed = envpolicy::managed::Managed::load();
    if let Some(w) = managed.warning() {
        say!("envwrap: warning: {w}");
    }
    if let Some(line) = overridden_rules(policy, &managed, label).filter(|_| say_dead) {
        say!("envwrap: warning: {line}");
    }
    managed
}

/// The one run-time line for the rules of `policy` (`label` names it) that the
/// managed layer makes dead, without its `PROGRAM: warning: ` head; `None` when
/// there are none. envwrap's run says it at each run; libenvshim.so says it
/// when it compiles the user's policy, through `envwrap compile`.
pub fn overridden_rules(
    policy: &envpolicy::compiled::Policy<'_>,
    managed: &envpolicy::managed::Managed,
    label: &str,
) -> Option<String> {
    let envpolicy::managed::Managed::Usable { compiled, .. } = managed else {
        return None;
    };
    let mut dead = 0usize;
    envpolicy::layer::dead_rules(policy, &compiled.policy(), |_| dead += 1);
    (dead > 0).then(|| {
        format!(
            "the managed layer {} overrides {dead} rule{} of {label}; `envwrap check` names them",
            managed_label(),
            if dead == 1 { "" } else { "s" }
        )
    })
}

/// How messages name the managed layer.
pub fn managed_label() -> String {
    envpolicy::managed::policy_path().display().to_string()
}

/// policy (decided for no program in particular, so no `[program.*]` section or
/// grant applies), one entry a line, or NUL-terminated with `-0`. What the policy
/// refuses or strips is not printed; the lines go through the same redaction as
/// every output.
fn print_environment(
    policy: &envpolicy::compiled::Policy<'_>,
    env: &[Vec<u8>],
    parent: &[Vec<u8>],
    files: &[Option<Vec<u8>>],
    mode: Option<Mode>,
    null: bool,
) -> Result<u8, Failure> {
    let managed = envpolicy::managed::Managed::load();
    if let Some(w) = managed.warning() {
        say!("envwrap: warning: {w}");
    }
    let managed = managed.in_force();
    let layers = outcome::Layers {
        user: outcome::Pass::new(policy, files),
        managed: managed.as_ref().map(|m| m.pass(&[])),
        requested_mode: mode,
        sticky: outcome::Sticky::default(),
    };
    let d = layers.decide(b"", &[], env, parent);
    let end = if null { b'\0' } else { b'\n' };
    for entry in d.effective_env(env) {
        value::show_record(entry, end);
    }
    Ok(0)
}
