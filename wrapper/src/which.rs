//! `envwrap which`: the two layers that decide every exec here
//! (docs/policy.md, sections 2 and 2b): the user layer, as the lookup finds it
//! for this process, and the host's managed layer, with its state and, for
//! libenvshim.so, whether its compiled form is current.

use crate::exit::{self, Failure};
use crate::opts::{tool_args, Spec};
use crate::tools::ToolDoc;
use envpolicy::layer::{Found, MANAGED_COMPILED};
use envpolicy::managed::Managed;
use serde_json::json;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
    Json,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::policy(Opt::Policy),
    Spec::flag(Opt::Json, "json").doc("print one JSON object"),
    Spec::help(Opt::Help),
];

/// What the docs say of which.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &["[--policy FILE] [--json]"],
    operands: "",
    summary: "name the policy files that decide an exec here: the user layer and the \
              host's managed layer",
    about: "\
Name the two layers that decide every exec started from here: the user layer,
the policy the lookup finds (--policy, ENVSHIM_POLICY, the user's file,
/etc/envshim/policy.toml or the built-in default), and the host's managed
layer, /etc/envshim/managed.toml: absent, in force, or broken (then the
fail-closed floor stands in for it, and why). For libenvshim.so it also says
whether the managed layer's compiled form, /etc/envshim/managed.bin, is current.
",
    after: "\
Exit status: 0; 1 when the managed layer is broken or its compiled form is not
current; 125 for a bad option or a user policy that does not load.
",
    man: r"Name the two layers that decide every exec started from here: the user
        layer (the policy the lookup finds) and the host's managed layer,
        .IR /etc/envshim/managed.toml ,
        absent, in force, or broken (the fail-closed floor stands in for it), and
        whether its compiled form
        .I /etc/envshim/managed.bin
        is current for
        .BR libenvshim.so .",
    man_after: r".PP
        Exit status: 0; 1 when the managed layer is broken or its compiled form is not
        current; 125 for a bad option or a user policy that does not load.",
};

const HINT: &str = "envwrap which --help";

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = which(args, &mut json_out);
    exit::finish_as(r, json_out)
}

fn which(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let mut want_help = false;
    let mut policy: Option<PathBuf> = None;
    let a = tool_args(args, SPECS, HINT, |id, v| {
        match id {
            Opt::Policy => policy = v.map(PathBuf::from),
            Opt::Json => *json_out = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    })?;
    if want_help {
        show!("{}", crate::help::for_tool("which"));
        return Ok(0);
    }
    if let Some(extra) = a.operands.first() {
        return Err(Failure::usage(
            format!(
                "which: unexpected operand {}",
                crate::value::word(extra.as_bytes())
            ),
            HINT,
        ));
    }
    let user = crate::source::load(policy.as_deref(), crate::source::own_getenv)?;
    let managed = Managed::load();
    let compiled = compiled_state(&managed);
    let state = match managed.found() {
        Found::Absent => "absent",
        Found::Usable => "in force",
        Found::Broken => "broken: the fail-closed floor stands in for it",
    };
    let path = envpolicy::managed::policy_path();
    if *json_out {
        let v = json!({
            "user": {
                "policy": user.source.path().map(envpolicy::error::shown),
                "found_by": user.source.step().describe(),
            },
            "managed": {
                "policy": envpolicy::error::shown(path),
                "state": match managed.found() { Found::Absent => "absent", Found::Usable => "usable", Found::Broken => "broken" },
                "why": managed.warning(),
                "compiled": compiled.as_ref().map(|(_, c)| *c),
            },
        });
        showln!("{v}");
    } else {
        showln!(
            "user layer:    {} (found: {})",
            user.name(),
            user.source.step().describe()
        );
        showln!("managed layer: {}: {state}", envpolicy::error::shown(path));
        if let Some(w) = managed.warning() {
            showln!("               {w}");
        }
        if let Some((file, c)) = &compiled {
            showln!("compiled form: {}: {c}", envpolicy::error::shown(file));
        }
    }
    let current = compiled.as_ref().is_none_or(|(_, c)| *c == "current");
    Ok(u8::from(managed.found() == Found::Broken || !current))
}

/// Whether the shim's compiled form of a layer that is there is current: its
/// path and one word. `None` without a managed layer.
fn compiled_state(managed: &Managed) -> Option<(PathBuf, &'static str)> {
    if managed.found() == Found::Absent {
        return None;
    }
    let file = Path::new(OsStr::from_bytes(MANAGED_COMPILED)).to_path_buf();
    let state = match std::fs::read(&file) {
        Err(_) => "missing: run `envwrap compile --managed` as root",
        Ok(bytes) => match envpolicy::cache::check_fresh(&bytes, envpolicy::managed::policy_path())
        {
            Ok(None) => "current",
            _ => "stale: run `envwrap compile --managed` as root",
        },
    };
    Some((file, state))
}
