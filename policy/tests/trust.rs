//! Policy-file trust (envpolicy::trust, envpolicy::writers): a policy file, or an env
//! or config file it imports, that is writable by group or others, or owned by a
//! user who is neither root nor the current one, is refused. Compiling fails with
//! an error naming the file and the reason, never its contents.
//!
//! The chown cases need root (CI runs the tests as root); elsewhere they are
//! skipped with a message.

mod common;
use common::*;
use envpolicy::{cache, load, trust};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

/// The unprivileged user files are given away to.
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    trust::effective_uid() == 0
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A policy body that holds a recognisable comment: an error must never quote it.
const POLICY: &str = "version = 1\nbase = \"all\"\n# marker-text-never-printed\n";

fn load_err(p: &Path) -> String {
    match load::load(p) {
        Ok(_) => panic!("{} must be refused", p.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn owner_only_and_group_readable_policies_load() {
    let dir = Dir::new("trust-ok");
    let p = dir.write("policy.toml", POLICY);
    for mode in [0o600, 0o644, 0o640, 0o400, 0o444] {
        chmod(&p, mode);
        load::load(&p).unwrap_or_else(|e| panic!("mode {mode:o}: {e}"));
    }
}

#[test]
fn group_or_world_writable_policy_is_refused() {
    let dir = Dir::new("trust-mode");
    let p = dir.write("policy.toml", POLICY);
    assert!(
        give_to_a_shared_group(&p),
        "no group to share the file with"
    );
    for mode in [0o666u32, 0o620, 0o646, 0o660, 0o622] {
        chmod(&p, mode);
        let e = load_err(&p);
        assert_eq!(
            e,
            format!(
                "{}: policy file is not trusted: writable by group or others (mode {mode:04o}); only its owner and root may write it",
                p.display()
            )
        );
        assert!(!e.contains("marker-text"), "{e}");
    }
    // The same through compile's entry point for files (read_policy_text).
    chmod(&p, 0o620);
    let e = load::read_policy_text(&p).unwrap_err();
    assert_eq!(e.path, p);
    assert!(e.message.contains("writable by group or others"), "{e}");
}

#[test]
fn policy_owned_by_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: chown to uid {NOBODY} needs root");
        return;
    }
    let dir = Dir::new("trust-owner");
    let p = dir.write("policy.toml", POLICY);
    chmod(&p, 0o644);
    std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
    let e = load_err(&p);
    assert_eq!(
        e,
        format!(
            "{}: policy file is not trusted: owned by uid {NOBODY}, which is neither root nor the current user (uid 0)",
            p.display()
        )
    );
    // Root's own files and the current user's are trusted.
    std::os::unix::fs::chown(&p, Some(0), Some(0)).unwrap();
    load::load(&p).unwrap();
}

#[test]
fn owner_rule_for_an_unprivileged_user() {
    // Without root: a file of ours judged as if another user were running.
    let dir = Dir::new("trust-owner-as");
    let p = dir.write("policy.toml", POLICY);
    chmod(&p, 0o644);
    let me = trust::effective_uid();
    assert_eq!(trust::check_as(&p, me), Ok(()));
    if me != 0 {
        assert_eq!(
            trust::check_as(&p, me + 1),
            Err(trust::Untrusted::OtherOwner {
                owner: me,
                euid: me + 1
            })
        );
    } else {
        // Root's file is trusted by every user.
        assert_eq!(trust::check_as(&p, 1000), Ok(()));
    }
}

#[test]
fn symlink_to_an_untrusted_target_is_refused() {
    let dir = Dir::new("trust-link");
    let target = dir.write("real.toml", POLICY);
    chmod(&target, 0o644);
    let link = dir.0.join("policy.toml");
    symlink(&target, &link).unwrap();
    load::load(&link).unwrap();
    chmod(&target, 0o666);
    let e = load_err(&link);
    assert!(
        e.starts_with(&format!(
            "{}: policy file is not trusted: writable by group or others (mode 0666)",
            link.display()
        )),
        "{e}"
    );
    chmod(&target, 0o644);

    // A link that another unprivileged user owns chooses which file is read.
    if !is_root() {
        eprintln!("skipped: lchown to uid {NOBODY} needs root");
        return;
    }
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    let e = load_err(&link);
    assert!(
        e.ends_with(&format!(
            "policy file is not trusted: a symbolic link owned by uid {NOBODY}, which is neither root nor the current user (uid 0)"
        )),
        "{e}"
    );
    // The target given away, the link ours.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&target, Some(NOBODY), Some(NOBODY)).unwrap();
    assert!(load_err(&link).contains(&format!("owned by uid {NOBODY}")));
}

/// A policy importing `names.env` (optional: trust is checked anyway).
const IMPORTS_ENV: &str =
    "version = 1\nbase = \"all\"\n[[import.env_file]]\npath = \"names.env\"\nrole = \"refuse\"\n";

#[test]
fn untrusted_env_file_import_fails_the_compile() {
    let dir = Dir::new("trust-envfile");
    let secret = fake_github();
    let env = dir.write("names.env", &format!("GH_TOKEN={secret}\nOTHER=1\n"));
    chmod(&env, 0o644);
    let policy_path = dir.0.join("policy.toml");
    // Trusted: compiles, the names are refused.
    let c = load::compile_text(IMPORTS_ENV, &policy_path).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let d = decide(&c, "/bin/true", &[], &["OTHER=x", "KEPT=y"]);
    assert_eq!(names(&d), ["KEPT"]);

    assert!(
        give_to_a_shared_group(&env),
        "no group to share the file with"
    );
    for mode in [0o666u32, 0o620] {
        chmod(&env, mode);
        let e = load::compile_text(IMPORTS_ENV, &policy_path)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{}:4:8: env file {} is not trusted: writable by group or others (mode {mode:04o}); only its owner and root may write it",
                policy_path.display(),
                env.display()
            )
        );
        assert_no_value("the error", &e, &secret);
    }
    chmod(&env, 0o644);
    if is_root() {
        std::os::unix::fs::chown(&env, Some(NOBODY), Some(NOBODY)).unwrap();
        let e = load::compile_text(IMPORTS_ENV, &policy_path)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "env file {} is not trusted: owned by uid {NOBODY}",
                env.display()
            )),
            "{e}"
        );
    } else {
        eprintln!("skipped: chown of the env file to uid {NOBODY} needs root");
    }
}

#[test]
fn untrusted_config_file_import_fails_the_compile() {
    let dir = Dir::new("trust-config");
    let cfg = dir.write("c.json", "{\"gh\": {\"tokenEnv\": \"THE_LOOP_GH_TOKEN\"}}");
    chmod(&cfg, 0o644);
    let text = "version = 1\n[[import.config]]\npath = \"c.json\"\n";
    let policy_path = dir.0.join("policy.toml");
    load::compile_text(text, &policy_path).unwrap();
    chmod(&cfg, 0o662);
    let e = load::compile_text(text, &policy_path)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}:3:8: config file {} is not trusted: writable by group or others (mode 0662)",
            policy_path.display(),
            cfg.display()
        )),
        "{e}"
    );
    assert!(!e.contains("THE_LOOP_GH_TOKEN"), "{e}");
}

#[test]
fn a_missing_import_is_still_only_a_warning() {
    // Trust judges files that exist; a missing optional import keeps its warning.
    let dir = Dir::new("trust-missing");
    let c = load::compile_text(IMPORTS_ENV, &dir.0.join("policy.toml")).unwrap();
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
}

#[test]
fn refusal_becomes_a_failure_marker_for_the_shim() {
    // libenvshim.so gets its policy through `envwrap compile` (cache::build): the
    // trust error must be the marker's one warning, and the marker the floor.
    let dir = Dir::new("trust-marker");
    let p = dir.write("policy.toml", POLICY);
    assert!(
        give_to_a_shared_group(&p),
        "no group to share the file with"
    );
    chmod(&p, 0o620);
    let built = cache::build(&p);
    let e = built.outcome.as_ref().unwrap_err();
    assert!(e.message.contains("writable by group or others"), "{e}");
    let warning = cache::check_fresh(&built.bytes, &p).unwrap().unwrap();
    let w = String::from_utf8_lossy(warning);
    assert!(
        w.starts_with(&format!(
            "envshim: {}: policy file is not trusted: writable",
            p.display()
        )),
        "{w}"
    );
    assert!(w.ends_with("using the fail-closed floor"), "{w}");
    assert!(!w.contains("marker-text"), "{w}");
    // Fixing the mode (a ctime change only) makes the marker stale.
    chmod(&p, 0o600);
    assert!(cache::check_fresh(&built.bytes, &p).is_err());
    assert!(cache::build(&p).outcome.is_ok());
}

#[test]
fn chmod_of_a_reread_env_file_makes_the_cache_stale() {
    // An env file with `values = true` is read again at each exec, so its cache
    // records its ctime: making it writable must force a compile (which refuses it).
    let dir = Dir::new("trust-reread");
    let env = dir.write("names.env", "PROXY=http://proxy\n");
    let p = dir.write(
        "policy.toml",
        "version = 1\nkeep = [\"PROXY\"]\n[[import.env_file]]\npath = \"names.env\"\nvalues = true\n",
    );
    chmod(&env, 0o644);
    chmod(&p, 0o644);
    let built = cache::build(&p);
    assert!(built.outcome.is_ok(), "{:?}", built.outcome);
    assert_eq!(cache::check_fresh(&built.bytes, &p), Ok(None));
    assert!(
        give_to_a_shared_group(&env),
        "no group to share the file with"
    );
    chmod(&env, 0o664);
    assert!(
        cache::check_fresh(&built.bytes, &p).is_err(),
        "a mode change alone makes the cache stale"
    );
    let again = cache::build(&p);
    let e = again.outcome.unwrap_err().to_string();
    assert!(e.contains("env file") && e.contains("writable"), "{e}");
}

/// Debian gives users umask 002 and a private group: a policy file of the user's
/// that is writable by that group (and nobody else) is trusted; the same file in
/// a group with other members is not, nor one writable by others.
#[test]
fn group_write_in_the_users_private_group_is_trusted() {
    let euid = trust::effective_uid();
    let Some(private) = trust::private_group(euid) else {
        eprintln!("skipped: this user has no private group");
        return;
    };
    let dir = Dir::new("trust-private-group");
    let p = dir.write("policy.toml", POLICY);
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid path; the owner is left alone.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), u32::MAX, private) }, 0);
    chmod(&p, 0o664);
    load::load(&p).unwrap_or_else(|e| panic!("a file in the private group: {e}"));
    // The cache records the group for the shim, and watches the group database.
    let built = cache::build(&p);
    assert!(built.outcome.is_ok(), "{:?}", built.outcome);
    let (_, notes) = envpolicy::cache_key::open(&built.bytes).unwrap();
    assert_eq!(notes.private_group(), Some(private));
    chmod(&p, 0o666);
    assert!(load_err(&p).contains("writable by group or others"));
    chmod(&p, 0o664);
    assert!(
        give_to_a_shared_group(&p),
        "no group to share the file with"
    );
    assert!(load_err(&p).contains("writable by group or others"));
}
