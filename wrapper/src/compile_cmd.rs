//! `envwrap compile [--output FILE] POLICY`: compile a policy file into the cache
//! that libenvshim.so maps (docs/adr/0002-compiled-policy.md; the cache's rules are
//! in [`envpolicy::cache`]).
//!
//! The default output is the policy's cache path ([`envpolicy::cache::cache_path`]).
//! Run by a user, it says on stdout what it wrote and where. libenvshim.so runs this
//! command itself, from its constructor, when the cache is missing or stale
//! (`ENVSHIM_COMPILING` is set then); so it writes nothing on stdout (that would
//! land in the output of whatever program was starting), and its stderr is the one
//! warning a user sees in that process.
//!
//! A policy that does not compile is reported as `envwrap: FILE:LINE:COL: message`
//! (exit 125), and a failure marker is stored in its place: the fail-closed floor
//! with that warning, so that processes enforce the floor until the policy is fixed
//! without running the compiler at every start.

use crate::opts::{tool_args, Spec};
use crate::tools::ToolDoc;
use envpolicy::cache;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

const EXIT_OWN_ERROR: u8 = 125;

const USAGE: &str = "usage: envwrap compile [--output FILE] POLICY | --managed";
const HINT: &str = "envwrap compile --help";

#[derive(Clone, Copy)]
pub enum Opt {
    Output,
    Managed,
    Help,
}

/// compile's options (the shim runs `envwrap compile --output CACHE -- POLICY`).
pub const SPECS: &[Spec<Opt>] = &[
    Spec::with_value(Opt::Output, "output", "FILE")
        .short(b'o')
        .doc("write the compiled policy to FILE")
        .doc_long(
            r"Write the compiled policy to
            .I FILE
            instead of the policy's cache path.",
        ),
    Spec::flag(Opt::Managed, "managed")
        .doc("compile the managed layer for libenvshim.so (root only)")
        .doc_long(
            r"Compile the managed layer,
            .IR /etc/envshim/managed.toml ,
            into
            .IR /etc/envshim/managed.bin ,
            the only compiled form of it that
            .B libenvshim.so
            enforces (owned by root, mode 0644, written by rename). Root only; the
            file and every file it imports must be root's and writable by no one else.
            Run it after every edit of the managed layer: until then, processes that
            start find the compiled form stale and hold their execs to the
            fail-closed floor.",
        ),
    Spec::help(Opt::Help),
];

/// What the docs say of compile.
pub const DOC: ToolDoc = ToolDoc {
    usage: &["[--output FILE] POLICY | --managed"],
    operands: "POLICY",
    summary: "compile a policy into the cache libenvshim.so maps (the shim runs this itself \
              when its cache is missing or stale)",
    about: "\
Compile POLICY into the cache that libenvshim.so maps, and say where it went.
libenvshim.so runs this itself when a policy's cache is missing or stale, so
there is rarely a need to; run it to check that a policy compiles where the
shim will read it, or to write a compiled policy somewhere else.

The default FILE is the policy's cache path: $ENVSHIM_CACHE_DIR when it is an
absolute path, else /run/user/UID/envshim when that directory is the user's,
else /tmp/envshim-UID, under a name hashed from the policy's absolute path.
A policy that does not compile is reported as FILE:LINE:COLUMN: MESSAGE, and a
failure marker is written in its place, so that processes enforce the
fail-closed floor until the policy is fixed.

With --managed (root only), compile the managed layer /etc/envshim/managed.toml
into /etc/envshim/managed.bin, the one compiled form of it libenvshim.so
enforces (docs/policy.md, section 2b).
",
    after: "\
Exit status: 0 when the policy compiled and was written; 125 when it does not
compile, cannot be read, or cannot be written.
",
    man: r#"Compile
        .I POLICY
        into the cache that
        .B libenvshim.so
        maps (by default the policy's cache path:
        .B $ENVSHIM_CACHE_DIR
        when it is absolute, else
        .I /run/user/UID/envshim
        when that directory is the user's own, else
        .IR /tmp/envshim-UID ,
        under a name hashed from the policy's absolute path; never under
        .BR HOME ).
        It prints what it compiled and where to
        .RB ( "compiled POLICY into FILE" );
        run by the shim, which does this itself when the cache is missing or stale, it
        prints nothing on standard output.
        A policy that does not compile is reported as
        .IB FILE : LINE : COLUMN :
        .I MESSAGE
        (exit 125), and a failure marker is written in its place, so that processes
        enforce the fail-closed floor until the policy is fixed."#,
    man_after: r".PP
        Exit status: 0 when the policy compiled and was written; 125 when it does not
        compile, cannot be read, or cannot be written.",
};

fn fail(message: &str) -> ExitCode {
    say!("envwrap: {message}");
    ExitCode::from(EXIT_OWN_ERROR)
}

/// A compile libenvshim.so runs (`ENVSHIM_COMPILING`) ends with the process that
/// waits for it: a host killed by a signal mid-compile leaves no compile behind.
fn end_with_the_host() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and changes nothing
    // else; getppid has no preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The host died before the line above: nobody waits for this compile.
        if libc::getppid() == 1 {
            std::process::exit(i32::from(EXIT_OWN_ERROR));
        }
    }
}

/// A compile the shim runs gets an environment of `PATH` and `HOME` alone, but
/// writes on the stderr of the process that runs the shim: what it says of the
/// policy file (a credential's value pasted where TOML reads a key) must hide
/// the credentials of that process, as `envwrap check`, run where they are,
/// hides them. So its messages also redact the credential values of the host's
/// start-up environment (`/proc/PPID/environ`; unreadable: nothing more).
fn learn_the_hosts_credentials() {
    let host = std::os::unix::process::parent_id();
    if let Ok(bytes) = crate::procfs::read(host, "environ") {
        crate::value::learn_env(&crate::procfs::split_nul(&bytes));
    }
}

/// Run `envwrap compile` with the arguments after `compile`.
pub fn run(args: &[OsString]) -> ExitCode {
    // Run by libenvshim.so (see `end_with_the_host`, and the messages below).
    let by_shim = std::env::var_os(envpolicy::shared::COMPILING).is_some();
    if by_shim {
        end_with_the_host();
        learn_the_hosts_credentials();
    }
    let mut output: Option<PathBuf> = None;
    let mut want_help = false;
    let mut managed = false;
    let parsed = tool_args(args.to_vec(), SPECS, HINT, |id, v| {
        match id {
            Opt::Output => output = v.map(PathBuf::from),
            Opt::Managed => managed = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    });
    let a = match parsed {
        Ok(a) => a,
        Err(f) => return fail(&f.message),
    };
    if want_help {
        show!("{}", crate::help::for_tool("compile"));
        return ExitCode::SUCCESS;
    }
    let mut operands = a.operands;
    operands.extend(a.after.unwrap_or_default());
    if managed {
        if !operands.is_empty() || output.is_some() {
            return fail(&format!(
                "compile: --managed takes no POLICY and no --output\n{USAGE}"
            ));
        }
        return compile_managed();
    }
    if operands.len() > 1 {
        return fail(&format!("compile: one POLICY only\n{USAGE}"));
    }
    let policy = operands.pop().map(PathBuf::from);
    let Some(policy) = policy else {
        return fail(&format!("compile: no POLICY given\n{USAGE}"));
    };
    let policy = match cache::absolute(&policy) {
        Ok(p) => p,
        Err(e) => return fail(&format!("{}: {e}", envpolicy::error::shown(&policy))),
    };
    let output = output.unwrap_or_else(|| {
        cache::cache_path(&policy, |k| std::env::var_os(k), cache::current_uid())
    });

    // The failure marker keeps the warning: hidden as every message is.
    let built = cache::build_redacting(&policy, &crate::value::redacted);
    let stored = cache::store_bytes(&built.bytes, &output);
    let mut code = ExitCode::SUCCESS;
    // Run by libenvshim.so, this line is the shim's one warning, and reads as the
    // shim's (the user ran the shim, not envwrap): the failure marker's text.
    match &built.outcome {
        Ok(warnings) => {
            let who = if by_shim { "envshim" } else { "envwrap" };
            for w in warnings {
                say!("{who}: warning: {}", w.message);
            }
            // The shim's one line for rules the managed layer makes dead: said
            // once per compile (each edit of the policy), not by every process.
            if let Some(line) = overridden_by_managed(&built.bytes, &policy) {
                say!("{who}: warning: {line}");
            }
        }
        Err(e) if by_shim => {
            say!("envshim: {e}; using the fail-closed floor");
            code = ExitCode::from(EXIT_OWN_ERROR);
        }
        Err(e) => {
            say!("envwrap: {e}");
            code = ExitCode::from(EXIT_OWN_ERROR);
        }
    }
    if let Err(e) = stored {
        return fail(&format!(
            "cannot write the compiled policy {}: {}",
            envpolicy::error::shown(&output),
            envpolicy::error::io_reason(&e)
        ));
    }
    if !by_shim && built.outcome.is_ok() {
        showln!(
            "compiled {} into {}",
            envpolicy::error::shown(&policy),
            envpolicy::error::shown(&output)
        );
    }
    code
}

/// [`crate::run::overridden_rules`] for the policy compiled into `bytes`, from
/// `policy`, against the host's managed layer as it is now.
fn overridden_by_managed(bytes: &[u8], policy: &std::path::Path) -> Option<String> {
    let compiled = envpolicy::compiled::Policy::from_bytes(bytes).ok()?;
    let managed = envpolicy::managed::Managed::load();
    crate::run::overridden_rules(
        &compiled,
        &managed,
        &envpolicy::error::shown(policy).to_string(),
    )
}

/// `envwrap compile --managed`: the managed layer into its compiled form, for
/// libenvshim.so (docs/adr/0020-managed-layer.md, "The compiled form is
/// root's"). Root only, and only a layer every front end would use: one that
/// is not trusted or does not compile is said, and nothing is written (the
/// shim then holds execs to the floor, as it does for a stale form).
fn compile_managed() -> ExitCode {
    let source = envpolicy::managed::policy_path();
    let target = std::path::Path::new(std::ffi::OsStr::new(
        std::str::from_utf8(envpolicy::layer::MANAGED_COMPILED).unwrap_or_default(),
    ));
    if cache::current_uid() != 0 {
        return fail("compile --managed: only root may write the managed layer's compiled form");
    }
    if let Err(why) = envpolicy::managed::usable(source) {
        return fail(&format!(
            "managed policy {}: {why}",
            envpolicy::error::shown(source)
        ));
    }
    let built = cache::build(source);
    if let Err(e) = &built.outcome {
        return fail(&e.to_string());
    }
    let written = write_readable(&built.bytes, target);
    if let Err(e) = written {
        return fail(&format!(
            "cannot write {}: {}",
            envpolicy::error::shown(target),
            envpolicy::error::io_reason(&e)
        ));
    }
    showln!(
        "compiled {} into {}",
        envpolicy::error::shown(source),
        envpolicy::error::shown(target)
    );
    ExitCode::SUCCESS
}

/// `bytes` into `target` by a rename of a file written beside it with its
/// final mode (0644: every user's processes read it), so that no process ever
/// finds it half written or unreadable.
fn write_readable(bytes: &[u8], target: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = target.with_extension(format!("bin.tmp.{}", std::process::id()));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
