//! `envwrap check [POLICY]`: validate a policy; print its errors as
//! FILE:LINE:COLUMN (exit 125), or a short summary of what it keeps, strips,
//! refuses and sets, read back from the compiled form (so the summary shows what
//! the front ends will do, not what the file seems to say).

use crate::exit::{self, Failure};
use crate::opts::{tool_args, Spec};
use crate::tools::ToolDoc;
use crate::{help, source};
use envpolicy::compiled::{
    sec, ArgvSecrets, Base, Class, Mode, Policy, Role, SuperviseChanges, GLOBAL,
};
use envpolicy::shape::{Shape, ShapeSet};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy)]
pub(crate) enum Opt {
    Policy,
    Json,
    Help,
}

/// `--policy FILE` names the policy as the operand does (as `explain` and `scan`
/// take it).
pub(crate) const SPECS: &[Spec<Opt>] = &[
    Spec::with_value(Opt::Policy, "policy", "POLICY")
        .doc("the policy to check (the same as the operand)"),
    Spec::flag(Opt::Json, "json").doc("print the summary as one JSON object"),
    Spec::help(Opt::Help),
];

/// What the docs say of check.
pub(crate) const DOC: ToolDoc = ToolDoc {
    usage: &["[--json] [[--policy] POLICY]"],
    operands: "[POLICY]",
    summary: "validate a policy: each error as FILE:LINE:COLUMN, or a summary of what it \
              keeps, strips, refuses and sets",
    about: "\
Validate a policy file, given as an operand or with --policy, as explain and
scan take it. Without POLICY, check the one the policy lookup finds
(see 'envwrap --help'). Each error is printed as FILE:LINE:COLUMN: MESSAGE and
the exit status is 125. A valid policy gets a short summary of what it keeps,
strips, refuses and sets, and exit status 0. Warnings are printed before it: an
import that could not be read, or of the policy file itself; a grant that can
never act; a grant's or secret's program that does not exist, that someone
other than root may write, or that PATH finds another file of its name before.
",
    after: "",
    man: r"Validate a policy file, given as an operand or with
        .B \-\-policy
        as
        .B explain
        and
        .B scan
        take it (without
        .IR POLICY ,
        the one the policy lookup finds).
        Each error is printed as
        .IB FILE : LINE : COLUMN :
        .I MESSAGE
        and the exit status is 125.
        A valid policy gets a short summary of what it keeps, strips, refuses and sets, read
        back from its compiled form, and exit status 0.
        Warnings are printed first: an import that could not be read, or the policy file
        itself; a grant that can never act; and a grant's or secret's program that does not
        exist, that someone other than root may write, or that PATH finds another file of
        the same name before.",
    man_after: "",
};

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut json_out = false;
    let mut want_help = false;
    let mut given: Vec<OsString> = Vec::new();
    let parsed = tool_args(args, SPECS, "envwrap check --help", |id, v| {
        match id {
            Opt::Policy => given.extend(v),
            Opt::Help => want_help = true,
            Opt::Json => json_out = true,
        }
        Ok(())
    });
    let mut operands = match parsed {
        Ok(a) => {
            let mut v = given;
            v.extend(a.operands);
            v.extend(a.after.unwrap_or_default());
            v
        }
        Err(f) => return exit::finish_as(Err(f), json_out),
    };
    if want_help {
        show!("{}", help::for_tool("check"));
        return ExitCode::SUCCESS;
    }
    if operands.len() > 1 {
        let f = Failure::usage("check takes at most one POLICY", "envwrap check --help");
        return exit::finish_as(Err(f), json_out);
    }
    let explicit = operands.pop().map(PathBuf::from);
    let loaded = match source::load(explicit.as_deref(), source::own_getenv) {
        Ok(l) => l,
        Err(f) if json_out => {
            // An invalid policy is an answer of check's: `valid` false, and why.
            showln!(
                "{}",
                json!({ "valid": false, "error": f.message, "exit": f.code })
            );
            return ExitCode::from(f.code);
        }
        Err(f) => {
            // The error already reads FILE:LINE:COLUMN: MESSAGE.
            say!("{}", f.message);
            return ExitCode::from(f.code);
        }
    };
    for w in &loaded.compiled.warnings {
        say!("warning: {}", w.message);
    }
    let policy = loaded.compiled.policy();
    let s = summarize(&policy);
    // Each source is tried as a program envwrap starts from here would find it.
    let secrets = crate::secret_cmd::listed(&policy, &crate::secret_cmd::own_env(), false);
    // A rule whose program is not the file that will run does nothing, or
    // gives the credential to someone else: a warning at the rule's program,
    // as the compile's are at theirs (crate::check_programs).
    let text = std::fs::read(std::ffi::OsStr::from_bytes(policy.source()))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let own_path = crate::environ::get(&crate::secret_cmd::own_env(), b"PATH").map(<[u8]>::to_vec);
    let program_warnings = crate::check_programs::warnings(&policy, &text, own_path.as_deref());
    for w in &program_warnings {
        say!("warning: {w}");
    }
    // The user rules this host's managed layer makes dead: each an error that
    // names both files (crate::check_managed), and exit 1.
    let conflicts = crate::check_managed::conflicts(&policy, loaded.source.path());
    if json_out {
        let mut v = s.to_json();
        v["secrets"] = json!(secrets
            .iter()
            .map(crate::secret_cmd::Listed::to_json)
            .collect::<Vec<_>>());
        v["policy"] = json!(loaded.name());
        v["found_by"] = json!(loaded.source.step().describe());
        v["valid"] = json!(true);
        v["managed_conflicts"] = json!(conflicts);
        v["warnings"] = json!(loaded
            .compiled
            .warnings
            .iter()
            .map(|w| w.message.clone())
            .chain(program_warnings.iter().cloned())
            .collect::<Vec<_>>());
        showln!("{v}");
    } else {
        let text = s.render(&loaded.name());
        // The first line names the policy; then how the lookup found it.
        let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
        show!(
            "{head}\n  found by    {}\n{rest}{}",
            loaded.source.step().describe(),
            secret_lines(&secrets)
        );
    }
    if conflicts.is_empty() {
        return ExitCode::SUCCESS;
    }
    if !json_out {
        for c in &conflicts {
            say!("{c}");
        }
    }
    ExitCode::from(1)
}

/// One line for each `[[secret]]`: where it goes, and whether its source
/// gives a value now.
fn secret_lines(secrets: &[crate::secret_cmd::Listed]) -> String {
    secrets
        .iter()
        .map(|s| {
            format!(
                "  {:<12}{} from {} to {} (deny_args: {}): {}\n",
                "secret",
                s.name,
                s.source,
                s.program,
                s.deny_text(),
                s.usability()
            )
        })
        .collect()
}

/// What a compiled policy does, by rule.
#[derive(Default, Debug)]
pub struct Summary {
    pub mode: &'static str,
    pub base: Base,
    pub unsafe_names: &'static str,
    pub argv_secrets: &'static str,
    pub env_flags: bool,
    pub sticky: bool,
    /// `supervise.changes`.
    pub supervise_changes: &'static str,
    pub keep: Vec<String>,
    /// Keep patterns that name a credential: refused all the same.
    pub keep_credentials: Vec<String>,
    /// The names of `keep_credentials` as the policy holds them (a name shown
    /// by its length and shape alone is not the name to compare).
    keep_credential_names: Vec<Vec<u8>>,
    pub strip: Vec<String>,
    pub strip_imported: Vec<String>,
    pub builtin_credentials: Vec<String>,
    pub credentials: Vec<String>,
    pub credentials_imported: Vec<String>,
    pub shapes: Vec<&'static str>,
    pub floor: Vec<String>,
    pub unsafe_count: usize,
    pub sets: Vec<String>,
    pub grants: Vec<String>,
    /// The variable each of `grants` names, as the policy holds it.
    grant_names: Vec<Vec<u8>>,
    pub passthrough: Vec<String>,
    pub env_files: Vec<String>,
    pub other_imports: Vec<String>,
    pub programs: Vec<ProgramSummary>,
    pub log: Option<String>,
}

/// One `[program.NAME]` section.
#[derive(Default, Debug)]
pub struct ProgramSummary {
    pub name: String,
    pub matches: Vec<String>,
    pub keep: Vec<String>,
    pub strip: Vec<String>,
    pub sets: Vec<String>,
    pub pairs: Option<(String, Vec<String>, Vec<String>)>,
    pub self_scrub: Option<bool>,
}

/// A name, pattern or path of the policy, as a message may show it
/// ([`envpolicy::shown`]): a token that arrives as a name or a directory is
/// described, never printed.
fn text(policy: &Policy<'_>, r: envpolicy::compiled::StrRef) -> String {
    envpolicy::shown::word(policy.str(r)).to_string()
}

/// Read a compiled policy back into a summary.
pub fn summarize(policy: &Policy<'_>) -> Summary {
    let st = policy.settings();
    let mut s = Summary {
        mode: match st.mode {
            Mode::Enforce => "enforce",
            Mode::Audit => "audit",
        },
        base: st.base,
        unsafe_names: if st.strip_unsafe { "stripped" } else { "kept" },
        argv_secrets: match st.argv_secrets {
            ArgvSecrets::Refuse => "refuse",
            ArgvSecrets::Redact => "redact",
            ArgvSecrets::Allow => "allow",
        },
        env_flags: st.env_flags,
        sticky: st.sticky,
        supervise_changes: match st.supervise_changes {
            SuperviseChanges::Refuse => "refused",
            SuperviseChanges::Audit => "run unchanged and logged",
        },
        ..Summary::default()
    };
    let enabled = ShapeSet::from_bits(st.shapes);
    s.shapes = Shape::ALL
        .iter()
        .filter(|sh| enabled.contains(**sh))
        .map(|sh| sh.id())
        .collect();
    let mut programs: BTreeMap<u32, ProgramSummary> = BTreeMap::new();
    for i in 0..policy.count(sec::PROGRAMS) as u32 {
        let Some(p) = policy.program(i) else { continue };
        let pairs = p
            .pairs_base
            .map(|base| (base.id().to_string(), Vec::new(), Vec::new()));
        programs.insert(
            i,
            ProgramSummary {
                name: text(policy, p.name),
                pairs,
                self_scrub: p.self_scrub,
                ..ProgramSummary::default()
            },
        );
    }
    for i in 0..policy.count(sec::MATCHERS) as u32 {
        let Some(m) = policy.matcher(i) else { continue };
        if let Some(p) = programs.get_mut(&m.program) {
            p.matches.push(text(policy, m.pattern));
        }
    }
    for i in 0..policy.count(sec::PATTERNS) as u32 {
        let Some(p) = policy.pattern(i) else { continue };
        let t = text(policy, p.text);
        let program = (p.scope != GLOBAL)
            .then(|| programs.get_mut(&u32::from(p.scope)))
            .flatten();
        match (p.class, program) {
            (Class::Keep, Some(pr)) => pr.keep.push(t),
            (Class::Keep, None) => {
                let raw = policy.str(p.text);
                if !raw.contains(&b'*') && envpolicy::decide::is_credential(policy, raw, b"") {
                    s.keep_credentials.push(t.clone());
                    s.keep_credential_names.push(raw.to_vec());
                }
                s.keep.push(t)
            }
            (Class::Strip, Some(pr)) => pr.strip.push(t),
            (Class::Strip, None) => s.strip.push(t),
            (Class::PairKeep, Some(pr)) => {
                if let Some(pairs) = &mut pr.pairs {
                    pairs.1.push(t)
                }
            }
            (Class::PairStrip, Some(pr)) => {
                if let Some(pairs) = &mut pr.pairs {
                    pairs.2.push(t)
                }
            }
            (Class::Credential, _) if p.line == 0 => s.builtin_credentials.push(t),
            (Class::Credential, _) => s.credentials.push(t),
            (Class::ImportStrip, _) => s.strip_imported.push(t),
            (Class::ImportCredential, _) => s.credentials_imported.push(t),
            (Class::Floor, _) => s.floor.push(t),
            (Class::Unsafe, _) => s.unsafe_count += 1,
            _ => {}
        }
    }
    for i in 0..policy.count(sec::SETS) as u32 {
        let Some(r) = policy.set(i) else { continue };
        let name = text(policy, r.name);
        match programs
            .get_mut(&u32::from(r.scope))
            .filter(|_| r.scope != GLOBAL)
        {
            Some(p) => p.sets.push(name),
            None => s.sets.push(name),
        }
    }
    for i in 0..policy.count(sec::GRANTS) as u32 {
        let Some(g) = policy.grant(i) else { continue };
        s.grant_names.push(policy.str(g.name).to_vec());
        s.grants.push(format!(
            "{} to {}",
            text(policy, g.name),
            text(policy, g.program)
        ));
    }
    let mut file_paths = Vec::new();
    for i in 0..policy.count(sec::ENV_FILES) as u32 {
        let Some(f) = policy.env_file(i) else {
            continue;
        };
        let path = text(policy, f.path);
        let role = match f.role {
            Role::Strip => "strip",
            Role::Refuse => "refuse",
        };
        let values = if f.values { ", values" } else { "" };
        s.env_files.push(format!("{path} (role {role}{values})"));
        file_paths.push(path);
    }
    for i in 0..policy.count(sec::FILE_KEEPS) as u32 {
        let Some(k) = policy.file_keep(i) else {
            continue;
        };
        let file = policy
            .env_file(k.file)
            .map(|f| text(policy, f.path))
            .unwrap_or_default();
        s.passthrough
            .push(format!("{} (from {file})", text(policy, k.name)));
    }
    let source = envpolicy::shown::word(policy.source()).to_string();
    for i in 0..policy.count(sec::DEPS) as u32 {
        let Some(d) = policy.dep(i) else { continue };
        let path = text(policy, d.path);
        if path != source && !file_paths.contains(&path) && !s.other_imports.contains(&path) {
            s.other_imports.push(path);
        }
    }
    s.programs = programs.into_values().collect();
    s.log = policy
        .log_path()
        .map(|p| envpolicy::shown::word(p.strip_suffix(b"\0").unwrap_or(p)).to_string());
    s
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(", ")
    }
}

impl Summary {
    /// The text summary.
    pub fn render(&self, name: &str) -> String {
        let mut o = String::new();
        let mut line = |label: &str, value: String| {
            o.push_str(&format!("  {label:<12}{value}\n"));
        };
        line(
            "settings",
            format!(
                "mode {}, base {}, unsafe names {}, secrets in argv: {}, NAME=VALUE pairs in argv {}, \
                 execs --supervise cannot change: {}",
                self.mode,
                self.base.id(),
                self.unsafe_names,
                self.argv_secrets,
                if self.env_flags { "judged" } else { "left alone" },
                self.supervise_changes
            ),
        );
        let kept = self.keep.join(", ");
        let mut keeps = match (self.base, kept.is_empty()) {
            (Base::All, _) => {
                "everything inherited, except what is stripped or refused".to_string()
            }
            (Base::Floor, true) => format!("the floor ({})", self.floor.join(", ")),
            (Base::Floor, false) => format!("the floor ({}), and {kept}", self.floor.join(", ")),
            (Base::None, true) => "nothing inherited".to_string(),
            (Base::None, false) => format!("nothing inherited but {kept}"),
        };
        if self.base == Base::All && !kept.is_empty() {
            keeps.push_str(&format!("; keep {kept}"));
        }
        // A kept credential is refused, but where a grant passes it on.
        let (with_grant, refused): (Vec<_>, Vec<_>) = self
            .keep_credentials
            .iter()
            .zip(&self.keep_credential_names)
            .partition(|(_, raw)| self.grant_names.contains(raw));
        let names = |v: &[(&String, &Vec<u8>)]| {
            v.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !refused.is_empty() {
            keeps.push_str(&format!(
                " ({} named a credential: refused all the same)",
                names(&refused)
            ));
        }
        if !with_grant.is_empty() {
            keeps.push_str(&format!(
                " ({}: a credential, passed only to the program its grant names)",
                names(&with_grant)
            ));
        }
        line("keeps", keeps);
        let mut strips = list(&self.strip);
        if !self.strip_imported.is_empty() {
            strips.push_str(&format!(
                "; names declared in imported env files: {}",
                self.strip_imported.join(", ")
            ));
        }
        if self.unsafe_names == "stripped" {
            strips.push_str(&format!("; {} built-in unsafe names", self.unsafe_count));
        }
        line("strips", strips);
        let mut refuses = Vec::new();
        if !self.builtin_credentials.is_empty() {
            refuses.push(format!(
                "{} built-in credential names ({})",
                self.builtin_credentials.len(),
                self.builtin_credentials.join(", ")
            ));
        }
        if !self.credentials.is_empty() {
            refuses.push(self.credentials.join(", "));
        }
        if !self.credentials_imported.is_empty() {
            refuses.push(format!(
                "imported: {}",
                self.credentials_imported.join(", ")
            ));
        }
        refuses.push(match self.shapes.len() {
            0 => "no token shapes".to_string(),
            n => format!("values of {n} token shapes ({})", self.shapes.join(", ")),
        });
        line("refuses", refuses.join("; "));
        line("sets", list(&self.sets));
        line("grants", list(&self.grants));
        if !self.passthrough.is_empty() {
            line("file values", self.passthrough.join(", "));
        }
        let mut imports = self.env_files.clone();
        imports.extend(self.other_imports.iter().map(|p| format!("{p} (config)")));
        line("imports", list(&imports));
        for p in &self.programs {
            let mut parts = vec![format!("match {}", p.matches.join(", "))];
            if !p.keep.is_empty() {
                parts.push(format!("keep {}", p.keep.join(", ")));
            }
            if !p.strip.is_empty() {
                parts.push(format!("strip {}", p.strip.join(", ")));
            }
            if !p.sets.is_empty() {
                parts.push(format!("set {}", p.sets.join(", ")));
            }
            if let Some((base, keep, strip)) = &p.pairs {
                let mut pairs = format!("pairs from {base}");
                if !keep.is_empty() {
                    pairs.push_str(&format!(", keep {}", keep.join(", ")));
                }
                if !strip.is_empty() {
                    pairs.push_str(&format!(", strip {}", strip.join(", ")));
                }
                parts.push(pairs);
            }
            if let Some(on) = p.self_scrub {
                parts.push(format!("self_scrub {on}"));
            }
            line(
                "program",
                format!("[program.{}] {}", p.name, parts.join("; ")),
            );
        }
        if let Some(l) = &self.log {
            line("log", l.clone());
        }
        format!("{name}: valid\n{o}")
    }

    /// The JSON summary.
    pub fn to_json(&self) -> Value {
        json!({
            "mode": self.mode,
            "base": self.base.id(),
            "unsafe_names": self.unsafe_names,
            "argv_secrets": self.argv_secrets,
            "env_flags": self.env_flags,
            "sticky": self.sticky,
            "supervise_changes": self.supervise_changes,
            "keep": self.keep,
            "keep_credentials": self.keep_credentials,
            "strip": self.strip,
            "strip_imported": self.strip_imported,
            "floor": self.floor,
            "credentials_builtin": self.builtin_credentials,
            "credentials": self.credentials,
            "credentials_imported": self.credentials_imported,
            "shapes": self.shapes,
            "set": self.sets,
            "grants": self.grants,
            "passthrough": self.passthrough,
            "env_files": self.env_files,
            "other_imports": self.other_imports,
            "programs": self.programs.iter().map(|p| json!({
                "name": p.name,
                "match": p.matches,
                "keep": p.keep,
                "strip": p.strip,
                "set": p.sets,
                "pairs": p.pairs.as_ref().map(|(b, k, s)| json!({"base": b, "keep": k, "strip": s})),
                "self_scrub": p.self_scrub,
            })).collect::<Vec<_>>(),
            "log": self.log,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two credential names that are shown alike (longer than a message shows
    /// plainly: by their length alone) are told apart by the names
    /// themselves: a grant of one does not pass the other on.
    #[test]
    fn a_kept_credential_is_granted_only_by_a_grant_of_that_name() {
        let kept = format!("{}_TOKEN", "A".repeat(300));
        let granted = format!("{}_TOKEN", "B".repeat(300));
        let text = format!(
            "version = 1\nkeep = [\"{kept}\", \"GH_TOKEN\"]\n\n\
             [[grant]]\nname = \"{granted}\"\nprogram = \"gh\"\n\n\
             [[grant]]\nname = \"GH_TOKEN\"\nprogram = \"gh\"\n"
        );
        let compiled = envpolicy::load::compile_text(&text, "p.toml".as_ref()).unwrap();
        let rendered = summarize(&compiled.policy()).render("p.toml");
        let keeps = rendered.lines().find(|l| l.contains("keeps")).unwrap();
        assert!(
            !keeps.contains(&kept) && !rendered.contains(&granted),
            "{rendered}"
        );
        assert!(
            keeps.contains("named a credential: refused all the same")
                && keeps
                    .contains("GH_TOKEN: a credential, passed only to the program its grant names"),
            "{keeps}"
        );
    }
}
