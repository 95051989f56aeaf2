//! `envwrap doctor PROGRAM`: which front end can police a program.
//!
//! libenvshim.so works only where the dynamic loader loads it and the program
//! starts children through libc. So it cannot police:
//! - a statically linked program (no loader runs; a static-pie neither);
//! - a setuid or setgid program, or one with file capabilities (the loader runs in
//!   secure-execution mode and ignores LD_PRELOAD);
//! - a Go program (Go's runtime starts children with raw system calls);
//! - a program of another ELF class or machine than the shim's (the loader
//!   refuses to load a library of the wrong class).
//!
//! envwrap polices all of them: it applies the policy before the exec, whatever
//! the program is made of. A `#!` script is judged by its interpreter.

use crate::elf::{self, ElfFacts, Kind};
use crate::exit::{self, Failure, NOT_FOUND, OWN_ERROR};
use crate::opts::{tool_args, Spec};
use crate::resolve::{self, Resolved};
use crate::tools::ToolDoc;
use crate::{help, preload, value};
use serde_json::json;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Json,
    Help,
}

pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::flag(Opt::Json, "json").doc("print one JSON object"),
    Spec::help(Opt::Help),
];

/// What the docs say of doctor.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &["[--json] PROGRAM"],
    operands: "PROGRAM",
    summary: "say whether libenvshim.so can police PROGRAM, or only envwrap can (static, Go, \
              setuid or setgid, file capabilities, ELF class)",
    about: "\
Read PROGRAM's file (an ELF binary, or a #! script and its interpreter) and say
which front end can police it: libenvshim.so, which must be loaded by the
dynamic loader into the program, or only envwrap, which applies the policy
before the program starts. It reports:
  - dynamically or statically linked, and the interpreter (dynamic loader);
  - setuid and setgid bits, and file capabilities (the loader ignores
    LD_PRELOAD for them);
  - a Go binary (Go starts programs with raw system calls, not through libc);
  - an ELF class or machine that differs from libenvshim.so's.
PROGRAM without '/' is looked up in PATH.
",
    after: "\
Exit status: 0; 125 for a bad option or a file that cannot be read or parsed;
127 when PROGRAM is not found.
",
    man: r"Read
        .IR PROGRAM 's
        file (an ELF binary, or a
        .B #!
        script and its interpreter) and say which front end can police it:
        .B libenvshim.so
        or only envwrap.
        It reports whether the program is dynamically or statically linked and its
        interpreter; setuid and setgid bits and file capabilities (the loader ignores
        .B LD_PRELOAD
        for them); whether it is a Go binary (Go starts programs with raw system calls); and
        an ELF class or machine that differs from the shim's.
        .I PROGRAM
        without
        .B /
        is looked up in
        .BR PATH .",
    man_after: r".PP
        Exit status: 0; 125 for a bad option or a file that cannot be read or parsed; 127 when
        .I PROGRAM
        is not found.",
};

const HINT: &str = "envwrap doctor --help";

/// Everything doctor found about one file.
#[derive(Debug, Default)]
struct Report {
    path: PathBuf,
    format: String,
    linkage: Option<&'static str>,
    interpreter: Option<String>,
    setuid: bool,
    setgid: bool,
    capabilities: Option<Vec<String>>,
    go: bool,
    class_matches: Option<bool>,
    /// Why the shim cannot police it (empty: it can).
    blockers: Vec<String>,
    /// For a script: the interpreter's own report.
    script_interpreter: Option<Box<Report>>,
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let r = doctor(args, &mut json_out);
    exit::finish_as(r, json_out)
}

/// `json_out` is set as soon as `--json` is read, so that a failure after it is
/// reported as JSON too.
fn doctor(args: Vec<OsString>, json_out: &mut bool) -> Result<u8, Failure> {
    let mut want_help = false;
    let a = tool_args(args, SPECS, HINT, |id, _| {
        match id {
            Opt::Json => *json_out = true,
            Opt::Help => want_help = true,
        }
        Ok(())
    })?;
    if want_help {
        show!("{}", help::for_tool("doctor"));
        return Ok(0);
    }
    let mut operands = a.operands;
    operands.extend(a.after.unwrap_or_default());
    let [program] = operands.as_slice() else {
        return Err(Failure::usage("doctor takes one PROGRAM", HINT));
    };
    let shown = value::word(program.as_bytes());
    let path = match resolve::resolve(
        program.as_bytes(),
        std::env::var_os("PATH").as_deref().map(|p| p.as_bytes()),
    ) {
        Resolved::Found(p) | Resolved::NotExecutable(p) => p,
        Resolved::NotFound => {
            return Err(Failure::new(
                NOT_FOUND,
                format!("doctor: {shown}: not found"),
            ))
        }
    };
    if !path.exists() {
        return Err(Failure::new(
            NOT_FOUND,
            format!("doctor: {shown}: not found"),
        ));
    }
    let report = examine(&path, 0)?;
    let shim = preload::shim_beside_envwrap();
    if *json_out {
        let mut v = to_json(&report);
        v["program"] = json!(shown);
        v["shim"] = json!(shim.as_ref().map(|p| p.display().to_string()));
        showln!("{v}");
    } else {
        show!("{}", render(&report, shim.as_deref()));
    }
    Ok(0)
}

fn examine(path: &Path, depth: u32) -> Result<Report, Failure> {
    let shown = value::word(path.as_os_str().as_bytes());
    let meta = std::fs::metadata(path).map_err(|e| {
        Failure::new(
            OWN_ERROR,
            format!(
                "doctor: cannot read {shown}: {}",
                envpolicy::error::io_reason(&e)
            ),
        )
    })?;
    // A regular file, read without blocking and under a limit: a FIFO, a device
    // or a sparse file of gigabytes is an error that names it, never a wait.
    let bytes = envpolicy::read_file::read(path, envpolicy::readable::PROGRAM).map_err(|e| {
        let why = match &e {
            envpolicy::read_file::ReadError::Io(_) => format!("cannot read {shown}: {e}"),
            envpolicy::read_file::ReadError::Unreadable(u) => format!("{shown} {u}"),
        };
        Failure::new(OWN_ERROR, format!("doctor: {why}"))
    })?;
    let mode = meta.permissions().mode();
    let mut r = Report {
        path: path.to_path_buf(),
        setuid: mode & 0o4000 != 0,
        setgid: mode & 0o2000 != 0,
        capabilities: capabilities(path),
        ..Report::default()
    };
    let kind = elf::inspect(&bytes)
        .map_err(|e| Failure::new(OWN_ERROR, format!("doctor: {shown}: {e}")))?;
    match kind {
        Kind::Elf(f) => describe_elf(&mut r, &f),
        Kind::Script { interpreter } => {
            r.format = format!(
                "#! script, interpreter {}",
                value::word(interpreter.as_os_str().as_bytes())
            );
            if depth == 0 && interpreter.is_absolute() {
                match examine(&interpreter, depth + 1) {
                    Ok(inner) => {
                        if !inner.blockers.is_empty() {
                            r.blockers
                                .push("its interpreter cannot load the shim".into());
                        }
                        r.script_interpreter = Some(Box::new(inner));
                    }
                    Err(f) => r.blockers.push(format!(
                        "its interpreter cannot be examined ({})",
                        f.message
                    )),
                }
            } else {
                r.blockers.push("its interpreter cannot be examined".into());
            }
        }
        Kind::Other => {
            r.format = "neither an ELF program nor a #! script".into();
            r.blockers
                .push("not an ELF program: the loader never runs for it".into());
        }
    }
    if r.setuid || r.setgid {
        r.blockers.push(format!(
            "{}: the loader ignores LD_PRELOAD in secure-execution mode",
            match (r.setuid, r.setgid) {
                (true, true) => "setuid and setgid",
                (true, false) => "setuid",
                _ => "setgid",
            }
        ));
    }
    if r.capabilities.is_some() {
        r.blockers.push(
            "file capabilities: the loader ignores LD_PRELOAD in secure-execution mode".into(),
        );
    }
    Ok(r)
}

fn describe_elf(r: &mut Report, f: &ElfFacts) {
    let (class, machine) = elf::own_class();
    r.format = f.describe_class();
    r.linkage = Some(f.linkage());
    r.interpreter = f.interpreter.clone();
    r.go = f.go;
    r.class_matches = Some(f.class == class && f.machine == machine);
    if !f.is_dynamic() {
        r.blockers.push(format!(
            "{}: no dynamic loader runs, so nothing reads LD_PRELOAD",
            f.linkage()
        ));
    }
    if f.go {
        r.blockers
            .push("Go binary: Go starts programs with raw system calls, not through libc".into());
    }
    if r.class_matches == Some(false) {
        r.blockers.push(format!(
            "{}, but libenvshim.so is ELF {class}-bit {}: the loader will not load it",
            f.describe_class(),
            elf::machine_name(machine)
        ));
    }
}

/// The capabilities in the `security.capability` attribute, if it is set.
fn capabilities(path: &Path) -> Option<Vec<String>> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = c"security.capability";
    let mut buf = [0u8; 64];
    // SAFETY: `c` and `name` are NUL-terminated strings and `buf` is a writable
    // buffer of the length passed; getxattr(2) writes at most that many bytes.
    let n = unsafe {
        libc::getxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n <= 0 {
        return None;
    }
    Some(decode_caps(&buf[..n as usize]))
}

/// Names of the permitted capabilities in a `vfs_cap_data` (revision 1, 2 or 3).
fn decode_caps(b: &[u8]) -> Vec<String> {
    let word = |at: usize| -> u32 {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            .unwrap_or(0)
    };
    let magic = word(0);
    let effective = magic & 1 == 1;
    let mut permitted = u64::from(word(4));
    if magic & 0xff00_0000 >= 0x0200_0000 {
        permitted |= u64::from(word(12)) << 32;
    }
    let mut out: Vec<String> = (0..64)
        .filter(|bit| permitted >> bit & 1 == 1)
        .map(|bit| {
            CAP_NAMES
                .get(bit)
                .map_or_else(|| format!("cap_{bit}"), |n| n.to_string())
        })
        .collect();
    if out.is_empty() {
        out.push("(none permitted)".into());
    }
    if effective {
        out.push("(effective)".into());
    }
    out
}

/// capability(7) names, by bit.
const CAP_NAMES: &[&str] = &[
    "cap_chown",
    "cap_dac_override",
    "cap_dac_read_search",
    "cap_fowner",
    "cap_fsetid",
    "cap_kill",
    "cap_setgid",
    "cap_setuid",
    "cap_setpcap",
    "cap_linux_immutable",
    "cap_net_bind_service",
    "cap_net_broadcast",
    "cap_net_admin",
    "cap_net_raw",
    "cap_ipc_lock",
    "cap_ipc_owner",
    "cap_sys_module",
    "cap_sys_rawio",
    "cap_sys_chroot",
    "cap_sys_ptrace",
    "cap_sys_pacct",
    "cap_sys_admin",
    "cap_sys_boot",
    "cap_sys_nice",
    "cap_sys_resource",
    "cap_sys_time",
    "cap_sys_tty_config",
    "cap_mknod",
    "cap_lease",
    "cap_audit_write",
    "cap_audit_control",
    "cap_setfcap",
    "cap_mac_override",
    "cap_mac_admin",
    "cap_syslog",
    "cap_wake_alarm",
    "cap_block_suspend",
    "cap_audit_read",
    "cap_perfmon",
    "cap_bpf",
    "cap_checkpoint_restore",
];

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn render(r: &Report, shim: Option<&Path>) -> String {
    let mut o = String::new();
    render_facts(&mut o, r, "");
    if let Some(inner) = &r.script_interpreter {
        o.push_str(&format!("  interpreter {}:\n", inner.path.display()));
        render_facts(&mut o, inner, "  ");
    }
    if r.blockers.is_empty() {
        o.push_str("  policed by:    libenvshim.so (LD_PRELOAD) and envwrap\n");
    } else {
        o.push_str("  policed by:    envwrap only\n");
        for b in &r.blockers {
            o.push_str(&format!("    - {b}\n"));
        }
    }
    if let Some(note) = supervise_note(r) {
        o.push_str(&format!("  --supervise:   {note}\n"));
    }
    o.push_str(&format!(
        "  shim:          {}\n",
        match shim {
            Some(p) => format!("{} (beside envwrap)", p.display()),
            None => "not installed beside envwrap".into(),
        }
    ));
    o
}

/// What `envwrap --supervise` does to a privileged program: a user without
/// CAP_SYS_ADMIN installs its filter under no_new_privs, which the whole tree
/// inherits, and the kernel then grants neither setuid, setgid nor file
/// capabilities at exec.
fn supervise_note(r: &Report) -> Option<&'static str> {
    if r.setuid || r.setgid || r.capabilities.is_some() {
        return Some(
            "runs without its privileges in a tree supervised by a user who is not root \
             (no_new_privs: setuid, setgid and file capabilities do not apply)",
        );
    }
    // envwrap judges only the exec it makes; what such a program starts, only
    // the supervisor sees.
    (r.go || matches!(r.linkage, Some("static" | "static-pie"))).then_some(
        "judges what it starts (plain envwrap judges only its own exec; \
         docs/shim.md, \"Covering everything\")",
    )
}

fn render_facts(o: &mut String, r: &Report, indent: &str) {
    if indent.is_empty() {
        o.push_str(&format!("{}\n", value::word(r.path.as_os_str().as_bytes())));
    }
    let mut line = |label: &str, v: String| o.push_str(&format!("{indent}  {label:<15}{v}\n"));
    line("format:", r.format.clone());
    if let Some(l) = r.linkage {
        let interp = r
            .interpreter
            .as_deref()
            .map(|i| format!(", interpreter {i}"))
            .unwrap_or_default();
        line("linkage:", format!("{l}{interp}"));
    }
    line("setuid:", yes_no(r.setuid).into());
    line("setgid:", yes_no(r.setgid).into());
    line(
        "capabilities:",
        r.capabilities
            .as_ref()
            .map_or_else(|| "none".to_string(), |c| c.join(", ")),
    );
    if r.linkage.is_some() {
        line("go binary:", yes_no(r.go).into());
        if let Some(m) = r.class_matches {
            line(
                "elf class:",
                if m {
                    "the shim's".to_string()
                } else {
                    "differs from the shim's".to_string()
                },
            );
        }
    }
}

fn to_json(r: &Report) -> serde_json::Value {
    json!({
        "path": r.path.display().to_string(),
        "format": r.format,
        "linkage": r.linkage,
        "interpreter": r.interpreter,
        "setuid": r.setuid,
        "setgid": r.setgid,
        "capabilities": r.capabilities,
        "go": r.go,
        "class_matches_shim": r.class_matches,
        "front_end": if r.blockers.is_empty() { "shim" } else { "envwrap-only" },
        "reasons": r.blockers,
        "supervise": supervise_note(r),
        "script_interpreter": r.script_interpreter.as_ref().map(|i| to_json(i)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_decode() {
        // revision 2, effective, permitted cap_net_bind_service (10) and cap_net_raw (13)
        let mut b = Vec::new();
        b.extend_from_slice(&0x0200_0001u32.to_le_bytes());
        b.extend_from_slice(&((1u32 << 10) | (1 << 13)).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            decode_caps(&b),
            ["cap_net_bind_service", "cap_net_raw", "(effective)"]
        );
    }

    #[test]
    fn dynamic_program_is_shim_territory() {
        let r = examine(Path::new("/bin/sh"), 0).unwrap();
        assert_eq!(r.linkage, Some("dynamic"));
        assert!(r.blockers.is_empty(), "{:?}", r.blockers);
    }
}
