//! `check`'s question about a rule's program: is the file the policy names the
//! one that will run?
//!
//! A `[[secret]]` or `[[grant]]` names its program by an absolute path. The
//! rule then does nothing, in silence, when that file is missing (a program
//! of the same name elsewhere runs without the credential), and it gives the
//! credential to someone else when a process of the user could replace the
//! file. A PATH that finds another file of the same name first means the user's
//! `gh` is not the policy's `/usr/bin/gh`. Each of these is only said when the
//! program runs, if at all; `check` says it at the rule's line instead.
//!
//! A secret's program must be root's for the secret to be delivered
//! ([`envpolicy::secret_source::program_trusted`]), so that reason is the
//! exec's own. A grant's program need not be, but a grant to a file the user
//! can write is a grant to whatever a process of the user puts there: worth a
//! warning, not an error. A pattern with a wildcard, or a bare name, names no
//! one file and is not asked.

use envpolicy::compiled::{Policy, StrRef};
use envpolicy::secret::Undelivered;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Every warning about the programs of `policy`'s grants and secrets, each a
/// line `FILE:LINE:COLUMN: MESSAGE` (without "warning: "). `text` is the
/// policy file's text (for the column of the program's value); `path_var` is
/// the PATH a command started from here would be searched in.
pub fn warnings(policy: &Policy<'_>, text: &str, path_var: Option<&[u8]>) -> Vec<String> {
    let file = envpolicy::error::shown(Path::new(OsStr::from_bytes(policy.source())));
    let mut out = Vec::new();
    let mut say = |rule: &str, name: StrRef, program: StrRef, line: u32, why: String| {
        let program = policy.str(program);
        let (line, col) = position(text, line, program);
        out.push(format!(
            "{file}:{line}:{col}: {rule} {} to {}: {why}",
            crate::value::word(policy.str(name)),
            crate::value::word(program),
        ));
    };
    type Unusable = fn(&[u8]) -> Option<Undelivered>;
    let secrets = (0..).map_while(|i| policy.secret(i)).map(|r| {
        (
            "secret",
            r.name,
            r.program,
            r.line,
            secret_program as Unusable,
        )
    });
    let grants = (0..).map_while(|i| policy.grant(i)).map(|r| {
        (
            "grant",
            r.name,
            r.program,
            r.line,
            grant_program as Unusable,
        )
    });
    for (rule, name, program, line, unusable) in secrets.chain(grants) {
        let path = policy.str(program);
        // PATH is searched only for a program that is there to be shadowed.
        let why = match unusable(path) {
            Some(why) => why.text().to_string(),
            None => match shadowed(path, path_var) {
                Some(first) => shadow_text(&first),
                None => continue,
            },
        };
        say(rule, name, program, line, why);
    }
    out
}

/// Why a secret's program cannot get it ([`crate::secret_cmd::program_unusable`]).
fn secret_program(program: &[u8]) -> Option<Undelivered> {
    crate::secret_cmd::program_unusable(program)
}

/// Why a grant's program may not be the file it names: missing, or a file
/// (after its links) that someone other than root may write.
fn grant_program(program: &[u8]) -> Option<Undelivered> {
    if !names_one_file(program) {
        return None;
    }
    match std::fs::metadata(Path::new(OsStr::from_bytes(program))) {
        Err(_) => Some(Undelivered::ProgramMissing),
        Ok(m) if !m.is_file() || m.uid() != 0 || m.mode() & 0o022 != 0 => {
            Some(Undelivered::ProgramReplaceable)
        }
        Ok(_) => None,
    }
}

/// A plain absolute path without wildcards: one file.
fn names_one_file(program: &[u8]) -> bool {
    program.starts_with(b"/") && !program.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// The file a PATH search for `program`'s basename finds first, when it is not
/// `program` itself (compared by device and inode, so a link to it is it).
/// `None` when the search finds `program`, or nothing of that name.
fn shadowed(program: &[u8], path_var: Option<&[u8]>) -> Option<std::path::PathBuf> {
    if !names_one_file(program) {
        return None;
    }
    let base = program
        .rsplit(|&b| b == b'/')
        .next()
        .filter(|b| !b.is_empty())?;
    let crate::resolve::Resolved::Found(first) = crate::resolve::resolve(base, path_var) else {
        return None;
    };
    let named = std::fs::metadata(Path::new(OsStr::from_bytes(program))).ok()?;
    let found = std::fs::metadata(&first).ok()?;
    (named.dev() != found.dev() || named.ino() != found.ino()).then_some(first)
}

fn shadow_text(first: &Path) -> String {
    format!(
        "a command run by its name finds {} first on PATH, which runs without it",
        envpolicy::error::shown(first)
    )
}

/// The line and column of `program`'s quoted value at or after `line` (the
/// rule's record line), within the rule's table; else the record's line, column 1.
fn position(text: &str, line: u32, program: &[u8]) -> (u32, usize) {
    let Ok(program) = std::str::from_utf8(program) else {
        return (line, 1);
    };
    let quoted = [format!("\"{program}\""), format!("'{program}'")];
    let start = (line as usize).saturating_sub(1);
    let table = text.lines().enumerate().skip(start);
    for (n, l) in table.take_while(|(n, l)| *n == start || !l.trim_start().starts_with('[')) {
        if let Some(col) = quoted.iter().find_map(|q| l.find(q.as_str())) {
            return (n as u32 + 1, l[..col].chars().count() + 1);
        }
    }
    // The key may come before the record's line (the name's) in its table.
    let before = text.lines().take(start).collect::<Vec<_>>();
    for (n, l) in before.iter().enumerate().rev() {
        if let Some(col) = quoted.iter().find_map(|q| l.find(q.as_str())) {
            return (n as u32 + 1, l[..col].chars().count() + 1);
        }
        if l.trim_start().starts_with('[') {
            break;
        }
    }
    (line, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_is_the_program_value_s_in_its_table() {
        let text = "version = 1\n[[grant]]\nprogram = \"/usr/bin/gh\"\nname = \"GH_TOKEN\"\n";
        assert_eq!(position(text, 4, b"/usr/bin/gh"), (3, 11));
        assert_eq!(position(text, 3, b"/usr/bin/gh"), (3, 11));
        let inline = "grant = [{ name = \"A\", program = '/bin/x' }]\n";
        assert_eq!(position(inline, 1, b"/bin/x"), (1, 34));
        assert_eq!(position(inline, 1, b"/bin/y"), (1, 1));
    }

    #[test]
    fn a_program_found_first_on_path_is_named_and_itself_is_not() {
        assert_eq!(shadowed(b"/bin/sh", Some(b"/bin")), None);
        let dir = std::env::temp_dir().join(format!("envwrap-shadow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let other = dir.join("sh");
        std::fs::write(&other, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = format!("{}:/bin", dir.display());
        assert_eq!(shadowed(b"/bin/sh", Some(path.as_bytes())), Some(other));
        assert_eq!(shadowed(b"/bin/s*", Some(path.as_bytes())), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
