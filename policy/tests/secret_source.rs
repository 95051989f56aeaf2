//! Reading a `[[secret]]`'s value from its source (envpolicy::secret_source):
//! the trust rule on the opened file, the clean-up, the size limit, and the
//! systemd credential directory taken from the program's environment.

mod common;

use common::Dir;
use envpolicy::secret::Undelivered;
use envpolicy::secret_source::{read, read_wanted};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const FAKE: &str = "fake-secret-value-for-tests-7f3a";

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A policy whose secret 0 is `GH_TOKEN` read from `from`, for `/usr/bin/env`
/// (a program that is there, and that root owns, as a secret's must be).
fn policy_with(dir: &Dir, from: &str) -> envpolicy::Compiled {
    dir.compile(&format!(
        "version = 1\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"{from}\"\nprogram = \"/usr/bin/env\"\n"
    ))
}

/// Read secret 0 and say whether it is `expected`, never showing it.
fn reads_as(c: &envpolicy::Compiled, env: &[Vec<u8>], expected: &str) -> Result<bool, Undelivered> {
    read(&c.policy(), 0, env).map(|v| v.as_bytes() == expected.as_bytes())
}

#[test]
fn a_private_file_is_read_with_one_trailing_newline_dropped() {
    let dir = Dir::new("secret-file");
    let path = dir.write("gh", &format!("{FAKE}\n"));
    chmod(&path, 0o600);
    let c = policy_with(&dir, &format!("file:{}", path.display()));
    assert_eq!(reads_as(&c, &[], FAKE), Ok(true));
}

#[test]
fn a_file_others_may_read_is_not_trusted() {
    let dir = Dir::new("secret-open");
    let path = dir.write("gh", FAKE);
    for mode in [0o644, 0o640, 0o602] {
        chmod(&path, mode);
        let c = policy_with(&dir, &format!("file:{}", path.display()));
        assert_eq!(
            reads_as(&c, &[], FAKE),
            Err(Undelivered::Untrusted),
            "mode {mode:o}"
        );
    }
}

#[test]
fn missing_empty_directory_and_too_large_sources_say_why() {
    let dir = Dir::new("secret-bad");
    let c = policy_with(&dir, &format!("file:{}", dir.0.join("absent").display()));
    assert_eq!(reads_as(&c, &[], FAKE), Err(Undelivered::Missing));

    let empty = dir.write("empty", "\n");
    chmod(&empty, 0o600);
    let c = policy_with(&dir, &format!("file:{}", empty.display()));
    assert_eq!(reads_as(&c, &[], FAKE), Err(Undelivered::Empty));

    let c = policy_with(&dir, &format!("file:{}", dir.0.display()));
    assert_eq!(reads_as(&c, &[], FAKE), Err(Undelivered::NotRegular));

    let max = envpolicy::secret::MAX_VALUE;
    let big = dir.write("big", &"x".repeat(max + 1));
    chmod(&big, 0o600);
    let c = policy_with(&dir, &format!("file:{}", big.display()));
    assert_eq!(reads_as(&c, &[], FAKE), Err(Undelivered::TooLarge));

    let fits = dir.write("fits", &format!("{}\r\n", "x".repeat(max)));
    chmod(&fits, 0o600);
    let c = policy_with(&dir, &format!("file:{}", fits.display()));
    assert_eq!(reads_as(&c, &[], &"x".repeat(max)), Ok(true));
}

#[test]
fn a_credential_is_read_from_the_programs_credentials_directory() {
    let dir = Dir::new("secret-cred");
    let path = dir.write("creds/gh", FAKE);
    chmod(&path, 0o400);
    let c = policy_with(&dir, "credential:gh");
    assert_eq!(
        reads_as(&c, &[], FAKE),
        Err(Undelivered::NoCredentialsDirectory)
    );
    let env = vec![format!("CREDENTIALS_DIRECTORY={}", dir.0.join("creds").display()).into_bytes()];
    assert_eq!(reads_as(&c, &env, FAKE), Ok(true));
}

#[test]
fn read_wanted_reads_only_the_programs_secrets() {
    let dir = Dir::new("secret-wanted");
    let path = dir.write("gh", FAKE);
    chmod(&path, 0o600);
    let c = policy_with(&dir, &format!("file:{}", path.display()));
    let p = c.policy();
    let gh = read_wanted(&p, b"/usr/bin/env", &[]);
    assert!(gh.undelivered.is_empty(), "{:?}", gh.undelivered);
    assert_eq!(
        gh.values
            .read()
            .map(|(i, v)| (i, v == FAKE.as_bytes()))
            .collect::<Vec<_>>(),
        [(0, true)]
    );
    let other = read_wanted(&p, b"/bin/true", &[]);
    assert!(other.values.is_empty() && other.undelivered.is_empty());
    chmod(&path, 0o644);
    let gh = read_wanted(&p, b"/usr/bin/env", &[]);
    assert!(gh.values.is_empty());
    assert_eq!(gh.undelivered, [(0, Undelivered::Untrusted)]);
}

#[test]
fn a_program_a_user_could_replace_or_named_by_a_walk_gets_nothing() {
    let dir = Dir::new("secret-program");
    let path = dir.write("gh", FAKE);
    chmod(&path, 0o600);
    let text = format!(
        "version = 1\n[[secret]]\nname = \"GH_TOKEN\"\nfrom = \"file:{}\"\nprogram = \"/usr/*/env\"\n",
        path.display()
    );
    let c = dir.compile(&text);
    let p = c.policy();
    let walked = read_wanted(&p, b"/usr/bin/../bin/env", &[]);
    assert!(walked.values.is_empty());
    assert_eq!(walked.undelivered, [(0, Undelivered::ProgramPath)]);
    assert!(read_wanted(&p, b"/usr/bin/env", &[]).values.read().count() == 1);
}
