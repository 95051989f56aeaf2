//! From a parsed policy file to the compiled buffer that every front end reads.
//!
//! This is where names become patterns and imports become names: env files and
//! config files are read here, once, and what they declare is written into the
//! compiled form together with the stat of each file, so a cached compiled policy
//! can tell when it is stale. Every check that needs the file's text happens here
//! and reports file:line:column; the decision code never sees text it has to
//! validate.

use crate::builtin;
use crate::compiled::*;
use crate::config_scan::{self, ConfigFormat};
use crate::decide::Action;
use crate::envfile;
use crate::error::PolicyError;
use crate::glob::{self, GlobKind};
use crate::schema::*;
use crate::shape::{find_shape, Shape, ShapeSet};
use std::path::{Path, PathBuf};
use toml::Spanned;

mod secrets;

/// Config key suffixes whose strings name credential variables, when an import
/// does not give its own.
pub const DEFAULT_KEY_SUFFIXES: &[&str] = &["TokenEnv", "tokenEnv", "SecretEnv", "secretEnv"];

/// At most this many env files can be imported (libenvshim.so reads each one at
/// every exec).
pub const MAX_ENV_FILES: usize = 16;

/// A warning from compiling: something was skipped but the policy is usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub message: String,
}

/// Compile `file`, parsed from `text` at `path` (used for positions, for
/// resolving relative imports, and for messages).
pub fn compile(
    file: &PolicyFile,
    text: &str,
    path: &Path,
    home: Option<&Path>,
) -> Result<(Vec<u8>, Vec<Warning>), PolicyError> {
    let mut c = Compiler {
        text,
        path,
        home,
        warnings: Vec::new(),
    };
    let bytes = c.run(file)?;
    c.grants_that_cannot_act(file, &bytes);
    Ok((bytes, c.warnings))
}

struct Compiler<'a> {
    text: &'a str,
    path: &'a Path,
    home: Option<&'a Path>,
    warnings: Vec<Warning>,
}

impl Compiler<'_> {
    fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> Result<T, PolicyError> {
        Err(PolicyError::at(self.path, self.text, span.start, message))
    }

    fn pos(&self, span: std::ops::Range<usize>) -> (u32, u32) {
        let (l, c) = crate::error::line_col(self.text, span.start);
        (l as u32, c as u32)
    }

    /// The policy file, section by section, into the compiled buffer. The order
    /// is the format's: the settings, the built-in lists, the top-level names, the
    /// program sections, the imports (the policy file is the first dependency),
    /// the grants, then the sets, which are checked against every credential name
    /// the imports declared.
    fn run(&mut self, f: &PolicyFile) -> Result<Vec<u8>, PolicyError> {
        let (settings, shapes) = self.settings(f)?;
        let mut w = Writer::new(settings);
        self.source_and_log(&mut w, f)?;
        self.builtin_lists(&mut w, f);
        let mut keep_exact = self.top_level_names(&mut w, f)?;
        self.secrets(&mut w, f)?;
        for (i, (name, section)) in f.program.iter().enumerate() {
            self.program_section(&mut w, i as u16, name, section, &mut keep_exact)?;
        }
        // Imports. The shim reads every env file at each exec into its own memory,
        // so their number is bounded.
        if f.import.env_file.len() > MAX_ENV_FILES {
            return Err(PolicyError::plain(
                self.path,
                format!("at most {MAX_ENV_FILES} [[import.env_file]] entries are supported"),
            ));
        }
        let mut imported: Vec<Vec<u8>> = Vec::new();
        self.dep(&mut w, self.path);
        for imp in &f.import.env_file {
            self.env_file_import(&mut w, imp, &keep_exact, &mut imported)?;
        }
        for imp in &f.import.config {
            self.config_import(&mut w, imp, &mut imported)?;
        }
        self.grants(&mut w, f)?;
        self.sets(&mut w, f, imported, shapes)?;
        Ok(w.finish())
    }

    /// The version, then `[settings]`-level keys and the token shapes.
    fn settings(&self, f: &PolicyFile) -> Result<(Settings, ShapeSet), PolicyError> {
        if *f.version.get_ref() != 1 {
            return self.err(
                f.version.span(),
                format!(
                    "unsupported policy version {}: this envshim reads version 1",
                    f.version.get_ref()
                ),
            );
        }
        let shapes = match f.credentials.shapes.as_ref() {
            None => ShapeSet::ALL,
            Some(s) => match s.get_ref() {
                Shapes::All(true) => ShapeSet::ALL,
                Shapes::All(false) => ShapeSet::NONE,
                Shapes::Some(ids) => {
                    let mut set = ShapeSet::NONE;
                    for id in ids {
                        match Shape::from_id(id) {
                            Some(sh) => set = set.with(sh),
                            None => {
                                let known: Vec<&str> = Shape::ALL.iter().map(|s| s.id()).collect();
                                return self.err(
                                    s.span(),
                                    format!(
                                        "unknown token shape `{id}`, expected one of {}",
                                        known.join(", ")
                                    ),
                                );
                            }
                        }
                    }
                    set
                }
            },
        };
        let settings = Settings {
            mode: match f.mode {
                Some(ModeName::Audit) => Mode::Audit,
                _ => Mode::Enforce,
            },
            base: match f.base {
                Some(BaseName::None) => Base::None,
                Some(BaseName::Floor) => Base::Floor,
                Some(BaseName::All) | None => Base::All,
            },
            strip_unsafe: f.unsafe_names != Some(UnsafeName::Keep),
            sticky: f.sticky.unwrap_or(true),
            argv_secrets: match f.argv.secrets {
                Some(SecretsName::Redact) => ArgvSecrets::Redact,
                Some(SecretsName::Allow) => ArgvSecrets::Allow,
                Some(SecretsName::Refuse) | None => ArgvSecrets::Refuse,
            },
            env_flags: f.argv.env_flags.unwrap_or(true),
            self_scrub: f.self_scrub.unwrap_or(false),
            quiet: f.quiet.unwrap_or(false),
            mask: f.mask.unwrap_or(false),
            shapes: shapes.bits(),
            min_value_len: f.credentials.min_value_len.unwrap_or(8).max(1),
            supervise_changes: match f.supervise.changes {
                Some(SuperviseChangesName::Audit) => SuperviseChanges::Audit,
                Some(SuperviseChangesName::Refuse) | None => SuperviseChanges::Refuse,
            },
        };
        Ok((settings, shapes))
    }

    /// The policy's own path and its log file; the number of program sections.
    fn source_and_log(&self, w: &mut Writer, f: &PolicyFile) -> Result<(), PolicyError> {
        w.set_source(self.path.to_string_lossy().as_bytes());
        if let Some(log) = &f.log {
            let p = self.resolve(log)?;
            w.set_log(p.to_string_lossy().as_bytes());
        }
        if f.program.len() > MAX_PROGRAMS {
            return Err(PolicyError::plain(
                self.path,
                format!("at most {MAX_PROGRAMS} [program.*] sections are supported"),
            ));
        }
        Ok(())
    }

    /// The built-in lists: the floor, the unsafe names, the checked values and,
    /// unless `credentials.builtin = false`, the credential names.
    fn builtin_lists(&self, w: &mut Writer, f: &PolicyFile) {
        for e in builtin::FLOOR {
            self.builtin(w, e.pattern, Class::Floor);
        }
        for e in builtin::UNSAFE_NAMES {
            self.builtin(w, e.pattern, Class::Unsafe);
        }
        for e in builtin::CHECKED_VALUES {
            self.builtin(w, e.pattern, Class::CheckedValue);
        }
        if f.credentials.builtin.unwrap_or(true) {
            for e in builtin::CREDENTIAL_NAMES {
                self.builtin(w, e.pattern, Class::Credential);
            }
        }
    }

    /// `credentials.names`, `keep` and `strip`; returns the exact keeps (with their
    /// pattern index), which file values may fill.
    fn top_level_names(
        &self,
        w: &mut Writer,
        f: &PolicyFile,
    ) -> Result<Vec<(String, u32)>, PolicyError> {
        let mut keep_exact: Vec<(String, u32)> = Vec::new();
        for n in &f.credentials.names {
            self.pattern(w, n, Class::Credential, GLOBAL)?;
        }
        for n in &f.keep {
            let idx = self.pattern(w, n, Class::Keep, GLOBAL)?;
            if GlobKind::classify(n.get_ref().as_bytes()) == GlobKind::Exact {
                keep_exact.push((n.get_ref().clone(), idx));
            }
        }
        for n in &f.strip {
            self.pattern(w, n, Class::Strip, GLOBAL)?;
        }
        Ok(keep_exact)
    }

    /// One `[program.NAME]` section, `scope` its index; its exact keeps are added
    /// to `keep_exact`.
    fn program_section(
        &self,
        w: &mut Writer,
        scope: u16,
        name: &str,
        section: &Program,
        keep_exact: &mut Vec<(String, u32)>,
    ) -> Result<(), PolicyError> {
        let p = section;
        let line = section_line(self.text, name);
        let pairs_base = p.pairs.as_ref().map(|pairs| match pairs.base {
            Some(BaseName::None) | None => Base::None,
            Some(BaseName::Floor) => Base::Floor,
            Some(BaseName::All) => Base::All,
        });
        let name_ref = w.string(name.as_bytes());
        let idx = w.program(ProgramRec {
            name: name_ref,
            self_scrub: p.self_scrub,
            pairs_base,
            line,
        });
        if p.matches.is_empty() {
            if name.contains('/') || name.is_empty() {
                return Err(PolicyError::plain(
                    self.path,
                    format!("[program.{name}] needs a `match` list: its name is not a basename"),
                ));
            }
            let pat = w.string(name.as_bytes());
            w.matcher(MatcherRec {
                pattern: pat,
                kind: GlobKind::classify(name.as_bytes()),
                program: idx,
            });
        }
        for m in &p.matches {
            self.check_pattern(m)?;
            let pat = w.string(m.get_ref().as_bytes());
            w.matcher(MatcherRec {
                pattern: pat,
                kind: GlobKind::classify(m.get_ref().as_bytes()),
                program: idx,
            });
        }
        for n in &p.keep {
            let k = self.pattern(w, n, Class::Keep, scope)?;
            if GlobKind::classify(n.get_ref().as_bytes()) == GlobKind::Exact {
                keep_exact.push((n.get_ref().clone(), k));
            }
        }
        for n in &p.strip {
            self.pattern(w, n, Class::Strip, scope)?;
        }
        if let Some(pairs) = &p.pairs {
            for n in &pairs.keep {
                self.pattern(w, n, Class::PairKeep, scope)?;
            }
            for n in &pairs.strip {
                self.pattern(w, n, Class::PairStrip, scope)?;
            }
        }
        Ok(())
    }

    /// One `[[import.env_file]]`: its record, its dependency, and a pattern for each
    /// name it declares; the names of a `refuse` file are added to `imported`.
    fn env_file_import(
        &mut self,
        w: &mut Writer,
        imp: &EnvFileImport,
        keep_exact: &[(String, u32)],
        imported: &mut Vec<Vec<u8>>,
    ) -> Result<(), PolicyError> {
        let path = self.resolve(&imp.path)?;
        let role = match imp.role {
            Some(RoleName::Refuse) => Role::Refuse,
            Some(RoleName::Strip) | None => Role::Strip,
        };
        let (line, col) = self.pos(imp.path.span());
        let path_ref = w.string(path.to_string_lossy().as_bytes());
        let values = imp.values.unwrap_or(false);
        let file = w.env_file(EnvFileRec {
            path: path_ref,
            role,
            values,
            line,
        });
        crate::trust::check_import(&path, "env file").or_else(|m| self.err(imp.path.span(), m))?;
        self.warn_self_import(
            &path,
            "env file",
            "its lines are read as NAME=VALUE",
            (line, col),
        );
        let contents = match crate::read_file::read(&path, crate::readable::ENV_FILE) {
            Ok(c) => c,
            Err(e) => {
                // Present but not a file a policy reads (a FIFO, a device, too
                // large): an error whether the import is required or not.
                if imp.required.unwrap_or(false) || e.is_unusable() {
                    return self.err(
                        imp.path.span(),
                        format!("cannot read env file {}: {e}", crate::error::shown(&path)),
                    );
                }
                let until = if e.is_not_found() {
                    "it exists"
                } else {
                    "it can be read"
                };
                self.warn(format!(
                    "{}:{line}:{col}: env file {} not read ({e}): its names are unknown until {until}",
                    crate::error::shown(self.path),
                    crate::error::shown(&path)
                ));
                self.dep(w, &path);
                return Ok(());
            }
        };
        self.dep(w, &path);
        let class = if role == Role::Refuse {
            Class::ImportCredential
        } else {
            Class::ImportStrip
        };
        let mut declared: Vec<Vec<u8>> = Vec::new();
        for a in envfile::assignments(&contents) {
            match a {
                Ok(a) => {
                    if declared.iter().any(|d| d == a.name) {
                        continue;
                    }
                    declared.push(a.name.to_vec());
                    if role == Role::Refuse {
                        imported.push(a.name.to_vec());
                    }
                    let text = w.string(a.name);
                    w.pattern(PatternRec {
                        text,
                        class,
                        kind: GlobKind::Exact,
                        scope: GLOBAL,
                        specificity: u32::MAX - 1,
                        line,
                        col,
                    });
                }
                Err(e) => self.warn(format!(
                    "{}: line {}: {} (line skipped)",
                    crate::error::shown(&path),
                    e.line,
                    e.reason
                )),
            }
        }
        if values {
            for (name, pattern) in keep_exact {
                if declared.iter().any(|d| d == name.as_bytes()) {
                    let name = w.string(name.as_bytes());
                    w.file_keep(FileKeepRec {
                        name,
                        file,
                        pattern: *pattern,
                    });
                }
            }
        }
        Ok(())
    }

    /// One `[[import.config]]`: its dependency and a credential pattern for each
    /// name it holds, which are added to `imported`.
    fn config_import(
        &mut self,
        w: &mut Writer,
        imp: &ConfigImport,
        imported: &mut Vec<Vec<u8>>,
    ) -> Result<(), PolicyError> {
        let path = self.resolve(&imp.path)?;
        let (line, col) = self.pos(imp.path.span());
        let Some(format) = ConfigFormat::from_path(&path) else {
            return self.err(
                imp.path.span(),
                format!(
                    "config file {} must end in .json or .toml",
                    crate::error::shown(&path)
                ),
            );
        };
        crate::trust::check_import(&path, "config file")
            .or_else(|m| self.err(imp.path.span(), m))?;
        self.warn_self_import(
            &path,
            "config file",
            "its keys are read as names of credentials",
            (line, col),
        );
        let text = match crate::read_file::read(&path, crate::readable::CONFIG_FILE).and_then(|b| {
            String::from_utf8(b).map_err(|_| {
                crate::read_file::ReadError::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                ))
            })
        }) {
            Ok(t) => t,
            Err(e) => {
                if imp.required.unwrap_or(false) || e.is_unusable() {
                    return self.err(
                        imp.path.span(),
                        format!(
                            "cannot read config file {}: {e}",
                            crate::error::shown(&path)
                        ),
                    );
                }
                self.warn(format!(
                    "{}:{line}:{col}: config file {} not read ({e})",
                    crate::error::shown(self.path),
                    crate::error::shown(&path),
                ));
                self.dep(w, &path);
                return Ok(());
            }
        };
        self.dep(w, &path);
        let owned: Vec<String> = match &imp.key_suffixes {
            Some(s) => s.iter().map(|s| s.get_ref().clone()).collect(),
            None => DEFAULT_KEY_SUFFIXES.iter().map(|s| s.to_string()).collect(),
        };
        let suffixes: Vec<&str> = owned.iter().map(String::as_str).collect();
        let found = config_scan::credential_names(&text, format, &suffixes).map_err(|e| {
            let at = match (e.line, e.column) {
                (Some(l), Some(c)) => format!(":{l}:{c}"),
                _ => String::new(),
            };
            PolicyError::plain(
                self.path,
                format!(
                    "imported config {}{at}: {}",
                    crate::error::shown(&path),
                    e.message
                ),
            )
        })?;
        for n in found {
            imported.push(n.name.as_bytes().to_vec());
            let text = w.string(n.name.as_bytes());
            w.pattern(PatternRec {
                text,
                class: Class::ImportCredential,
                kind: GlobKind::Exact,
                scope: GLOBAL,
                specificity: u32::MAX,
                line,
                col,
            });
        }
        Ok(())
    }

    /// `[[grant]]`: one variable, exactly named, for a program pattern.
    fn grants(&self, w: &mut Writer, f: &PolicyFile) -> Result<(), PolicyError> {
        for g in &f.grant {
            let name = g.name.get_ref();
            if GlobKind::classify(name.as_bytes()) != GlobKind::Exact || !valid_name(name) {
                return self.err(
                    g.name.span(),
                    format!("a grant names one variable exactly, not `{name}`"),
                );
            }
            if f.secret.iter().any(|s| s.name.get_ref() == name) {
                return self.err(
                    g.name.span(),
                    format!(
                        "{name} is a [[secret]]: its own `program` says who gets it, not a grant"
                    ),
                );
            }
            self.check_pattern(&g.program)?;
            let (line, _) = self.pos(g.name.span());
            let n = w.string(name.as_bytes());
            let p = w.string(g.program.get_ref().as_bytes());
            w.grant(GrantRec {
                name: n,
                program: p,
                kind: GlobKind::classify(g.program.get_ref().as_bytes()),
                line,
            });
        }
        Ok(())
    }

    /// Sets: global first, then per program, so a program's set wins. Each is
    /// checked against every credential name: built in, configured and `imported`.
    fn sets(
        &self,
        w: &mut Writer,
        f: &PolicyFile,
        imported: Vec<Vec<u8>>,
        shapes: ShapeSet,
    ) -> Result<(), PolicyError> {
        let mut cred_patterns: Vec<(GlobKind, Vec<u8>)> = Vec::new();
        if f.credentials.builtin.unwrap_or(true) {
            cred_patterns.extend(builtin::CREDENTIAL_NAMES.iter().map(|e| {
                (
                    GlobKind::classify(e.pattern.as_bytes()),
                    e.pattern.as_bytes().to_vec(),
                )
            }));
        }
        cred_patterns.extend(f.credentials.names.iter().map(|n| {
            (
                GlobKind::classify(n.get_ref().as_bytes()),
                n.get_ref().as_bytes().to_vec(),
            )
        }));
        cred_patterns.extend(imported.into_iter().map(|n| (GlobKind::Exact, n)));
        cred_patterns.extend(
            f.secret
                .iter()
                .map(|s| (GlobKind::Exact, s.name.get_ref().as_bytes().to_vec())),
        );
        for (name, value) in &f.set {
            self.set(w, name, value, GLOBAL, &cred_patterns, shapes)?;
        }
        for (i, section) in f.program.values().enumerate() {
            for (name, value) in &section.set {
                self.set(w, name, value, i as u16, &cred_patterns, shapes)?;
            }
        }
        Ok(())
    }

    /// A `[[grant]]` acts at rule 4, on a credential the earlier rules kept: one
    /// whose variable a base or strip rule removes first, or that is no credential
    /// under this policy, can never pass anything. Each is asked of the decision
    /// itself, for a program the grant's pattern matches, and warned about.
    fn grants_that_cannot_act(&mut self, f: &PolicyFile, bytes: &[u8]) {
        // Most policies grant nothing: no validation, no env file read for them.
        if f.grant.is_empty() {
            return;
        }
        let Ok(policy) = crate::compiled::Policy::from_bytes(bytes) else {
            return;
        };
        let files = crate::outcome::read_env_files(&policy);
        for g in &f.grant {
            let (name, program) = (g.name.get_ref(), g.program.get_ref());
            // A name the program pattern matches: its wildcards filled in.
            let example: String = program
                .chars()
                .map(|c| if matches!(c, '*' | '?') { 'x' } else { c })
                .collect();
            let env = [format!("{name}=x").into_bytes()];
            let d = crate::outcome::decide(&policy, example.as_bytes(), &[], &env, &[], &files);
            let Some(v) = d.env_verdicts.first() else {
                continue;
            };
            let (line, col) = self.pos(g.name.span());
            let at = format!("{}:{line}:{col}", crate::error::shown(self.path));
            let why = match v.action {
                Action::Grant => continue,
                _ if !v.credential => format!(
                    "{name} is not a credential under this policy, so the grant changes nothing"
                ),
                Action::Strip => format!(
                    "{name} is removed before the grant is reached ({}); keep it by name, then grant it",
                    crate::outcome::describe_rule(&policy, v.rule, &env)
                ),
                _ => format!("{name} is not passed to {program}"),
            };
            self.warn(format!(
                "{at}: [[grant]] {name} for {program} can never act: {why}"
            ));
        }
    }

    /// An import of the policy file itself: never what was meant (a path
    /// typed wrong, or a copy-paste), and it reads the policy's own lines as
    /// what the import expects.
    fn warn_self_import(&mut self, path: &Path, kind: &str, reads: &str, (line, col): (u32, u32)) {
        use std::os::unix::fs::MetadataExt;
        let same = match (std::fs::metadata(path), std::fs::metadata(self.path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            self.warn(format!(
                "{}:{line}:{col}: {kind} {} is this policy file itself: {reads}, not as the policy's rules",
                crate::error::shown(self.path),
                crate::error::shown(path)
            ));
        }
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(Warning {
            message: crate::error::one_line(&message),
        });
    }

    /// A path the policy names, made absolute: `~/` is `HOME`, and a relative
    /// path is beside the policy file. A `HOME` that is unset or relative cannot
    /// resolve `~/`: a relative one would name another directory after a `cd`,
    /// and the compiled form would record a relative path, checked against
    /// whatever directory each process is in.
    fn resolve(&self, p: &Spanned<String>) -> Result<PathBuf, PolicyError> {
        let text = p.get_ref();
        if let Some(rest) = text.strip_prefix("~/") {
            return match self.home.filter(|h| h.is_absolute()) {
                Some(home) => Ok(home.join(rest)),
                None => self.err(
                    p.span(),
                    "`~/` needs HOME to be an absolute path, and HOME is unset or relative",
                ),
            };
        }
        let path = Path::new(text);
        if path.is_absolute() {
            return Ok(path.to_path_buf());
        }
        Ok(match self.path.parent() {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        })
    }

    /// Record a file the compiled form depends on. A file that does not exist is
    /// recorded with a zero stat, so a cache notices when it appears.
    fn dep(&self, w: &mut Writer, path: &Path) {
        use std::os::unix::fs::MetadataExt;
        let p = w.string(path.to_string_lossy().as_bytes());
        let Ok(md) = std::fs::metadata(path) else {
            w.dep(DepRec {
                path: p,
                ..DepRec::default()
            });
            return;
        };
        w.dep(DepRec {
            path: p,
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime_ns: md
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(md.mtime_nsec()),
        });
    }

    fn builtin(&self, w: &mut Writer, pattern: &str, class: Class) {
        let text = w.string(pattern.as_bytes());
        let kind = GlobKind::classify(pattern.as_bytes());
        w.pattern(PatternRec {
            text,
            class,
            kind,
            scope: GLOBAL,
            specificity: glob::specificity(pattern.as_bytes()),
            line: 0,
            col: 0,
        });
    }

    fn check_pattern(&self, p: &Spanned<String>) -> Result<(), PolicyError> {
        match glob::validate(p.get_ref().as_bytes()) {
            Ok(()) => Ok(()),
            Err(why) => self.err(p.span(), format!("invalid pattern: {why}")),
        }
    }

    fn pattern(
        &self,
        w: &mut Writer,
        p: &Spanned<String>,
        class: Class,
        scope: u16,
    ) -> Result<u32, PolicyError> {
        self.check_pattern(p)?;
        let (line, col) = self.pos(p.span());
        // Credential names match without regard to case: stored upper-cased, so
        // matching folds only the name.
        let upper;
        let s = if class.folds_case() {
            upper = p.get_ref().to_ascii_uppercase();
            upper.as_bytes()
        } else {
            p.get_ref().as_bytes()
        };
        let text = w.string(s);
        Ok(w.pattern(PatternRec {
            text,
            class,
            kind: GlobKind::classify(s),
            scope,
            specificity: glob::specificity(s),
            line,
            col,
        }))
    }

    fn set(
        &self,
        w: &mut Writer,
        name: &str,
        value: &Spanned<String>,
        scope: u16,
        creds: &[(GlobKind, Vec<u8>)],
        shapes: ShapeSet,
    ) -> Result<(), PolicyError> {
        if name == "LD_PRELOAD" || name.starts_with(crate::shared::PREFIX) {
            return self.err(
                value.span(),
                format!("{name} belongs to the shim (rule 8 keeps it): a policy cannot set it"),
            );
        }
        if !valid_name(name) {
            return self.err(
                value.span(),
                format!("`{name}` is not a valid variable name to set"),
            );
        }
        let v = value.get_ref();
        if v.contains('\0') {
            return self.err(
                value.span(),
                format!("the value set for {name} contains a NUL byte"),
            );
        }
        if let Some(m) = find_shape(v.as_bytes(), shapes) {
            return self.err(
                value.span(),
                format!(
                    "the value set for {name} looks like a {}: a policy file must not hold secrets",
                    m.shape.describe()
                ),
            );
        }
        if creds
            .iter()
            .any(|(k, p)| glob::matches(*k, p, name.as_bytes(), true))
        {
            return self.err(
                value.span(),
                format!("{name} is a credential name: a policy cannot set it (a grant passes a credential to one program)"),
            );
        }
        let refs = references(v);
        for r in &refs {
            if creds
                .iter()
                .any(|(k, p)| glob::matches(*k, p, r.as_bytes(), true))
            {
                return self.err(value.span(), format!("{name} would copy credential {r}: `set` cannot pass a credential under another name"));
            }
        }
        let (line, _) = self.pos(value.span());
        let n = w.string(name.as_bytes());
        let val = w.string(v.as_bytes());
        let entry = if refs.is_empty() && !v.contains('$') {
            w.string(format!("{name}={v}").as_bytes())
        } else {
            StrRef::default()
        };
        let expands = entry == StrRef::default();
        w.set(SetRec {
            scope,
            expands,
            name: n,
            value: val,
            entry,
            line,
        });
        Ok(())
    }
}

/// `${NAME}` references in a set value.
fn references(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                out.push(after[..j].to_string());
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.bytes();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The line of the `[program.NAME]` header (or of the first `[program.NAME.…]`
/// table), 0 when it cannot be found (an inline table, say).
fn section_line(text: &str, name: &str) -> u32 {
    let bare = format!("[program.{name}");
    let quoted = format!("[program.\"{name}\"");
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(&bare) || l.starts_with(&quoted)
        })
        .map_or(0, |i| i as u32 + 1)
}
