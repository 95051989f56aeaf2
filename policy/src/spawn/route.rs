//! Secrets for the commands a Rust program spawns: through envwrap
//! (docs/adr/0019-secrets-delivered-at-exec.md).
//!
//! Why through envwrap: a secret's value may be read only in the process that
//! becomes the program, and `std::process::Command` builds the child's
//! environment before its fork, with no way for a `pre_exec` hook to change it
//! (a hook that performs the exec itself would skip the hooks added after it).
//! So a command whose program gets a secret runs as `envwrap --routed --policy
//! POLICY -- PROGRAM ARGS...`, with the environment decided here: envwrap reads
//! the value in its own new process, decides again with it (`--routed`: a
//! `set` that expands variables keeps what this decision made of it), and
//! execs the program
//! in place, as the shim routes a `posix_spawn`. portable-pty is routed the
//! same way, since its argv can be replaced. The program's `argv[0]` becomes
//! its path.
//!
//! Without envwrap (`$ENVSHIM_ENVWRAP`, else `envwrap` on the command's
//! `PATH`), or for a policy that is no file envwrap can read (compiled from
//! text), the program runs without its secrets, and the outcome says so
//! loudly.

use crate::compiled::Policy;
use crate::outcome::{Change, ChangeAction, ChangeRule, Target};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// How a command whose program gets secrets is to run.
pub enum Route {
    /// Its program gets none (or the policy has none): as decided.
    None,
    /// As `argv` (envwrap's path first), with the change to report.
    Envwrap { argv: Vec<OsString>, change: Change },
    /// It gets some and cannot be routed: the change says why.
    Undelivered(Change),
}

/// The route for `program` with the decided `argv` and environment `env`:
/// through envwrap when either layer, `policy` or the host's managed layer
/// ([`crate::managed::Managed::for_process`]), gives the program a secret.
/// envwrap, run with `--policy POLICY`, reads the managed layer itself.
pub fn route(policy: &Policy<'_>, program: &[u8], argv: &[Vec<u8>], env: &[Vec<u8>]) -> Route {
    let managed = crate::managed::Managed::for_process().policy();
    route_with(policy, managed.as_ref(), program, argv, env)
}

/// [`route`] with the managed layer given (`None`: none on this host).
fn route_with(
    policy: &Policy<'_>,
    managed: Option<&Policy<'_>>,
    program: &[u8],
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
) -> Route {
    let layers: Vec<&Policy<'_>> = std::iter::once(policy).chain(managed).collect();
    if layers
        .iter()
        .all(|p| p.count(crate::compiled::sec::SECRETS) == 0)
    {
        return Route::None;
    }
    let path_var = lookup(env, b"PATH");
    let Some(resolved) = resolve(program, path_var) else {
        return Route::None;
    };
    let names: Vec<String> = layers
        .iter()
        .map(|p| names(p, crate::secret::wanted(p, resolved.as_os_str().as_bytes())))
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Route::None;
    }
    let names = names.join(", ");
    let source = Path::new(std::ffi::OsStr::from_bytes(policy.source()));
    let envwrap = envwrap(path_var);
    match envwrap {
        Some(envwrap) if source.is_absolute() && source.is_file() => {
            let mut out: Vec<OsString> = vec![
                envwrap.into_os_string(),
                "--routed".into(),
                "--policy".into(),
                source.as_os_str().to_owned(),
                "--".into(),
                resolved.into_os_string(),
            ];
            out.extend(argv.iter().skip(1).map(|a| OsString::from_vec(a.clone())));
            Route::Envwrap {
                argv: out,
                change: change(
                    ChangeAction::Wrap,
                    &names,
                    format!("runs through envwrap, which reads secret {names} in the program's own process"),
                    false,
                ),
            }
        }
        found => {
            let why = if found.is_none() {
                "no envwrap was found ($ENVSHIM_ENVWRAP, or on PATH) to read it in the program's own process"
            } else {
                "the policy is no file envwrap can read"
            };
            Route::Undelivered(change(
                ChangeAction::Env(crate::decide::Action::Strip),
                &names,
                format!("secret {names} not delivered: {why}"),
                true,
            ))
        }
    }
}

/// The argv a routed command runs as, once `r`'s change is in `outcome`.
pub fn take(outcome: &mut super::Outcome, r: Route) -> Option<Vec<OsString>> {
    match r {
        Route::None => None,
        Route::Undelivered(change) => {
            outcome.changes.push(change);
            None
        }
        Route::Envwrap { argv, change } => {
            outcome.changes.push(change);
            Some(argv)
        }
    }
}

fn change(action: ChangeAction, names: &str, why: String, loud: bool) -> Change {
    Change {
        target: Target::Argv,
        index: None,
        name: Some(names.to_string()),
        action,
        rule: ChangeRule::SecretRoute,
        why,
        loud,
        layer: crate::layer::Layer::User,
    }
}

/// The names of the secrets in `wanted`, for a message.
fn names(policy: &Policy<'_>, wanted: u16) -> String {
    (0..crate::secret::MAX_SECRETS as u32)
        .filter(|i| wanted & (1 << i) != 0)
        .filter_map(|i| policy.secret(i))
        .map(|s| crate::shown::word(policy.str(s.name)).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn lookup<'e>(env: &'e [Vec<u8>], name: &[u8]) -> Option<&'e [u8]> {
    env.iter()
        .filter_map(|e| crate::bytes::split_entry(e))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// `program` as exec would find it: itself when it holds a `/`, else the
/// first executable file of that name on `path`.
fn resolve(program: &[u8], path: Option<&[u8]>) -> Option<PathBuf> {
    let program = Path::new(std::ffi::OsStr::from_bytes(program));
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Some(program.to_path_buf());
    }
    on_path(program, path)
}

fn on_path(name: &Path, path: Option<&[u8]>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = path.unwrap_or(b"/bin:/usr/bin");
    path.split(|&b| b == b':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(std::ffi::OsStr::from_bytes(d)).join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// envwrap: `$ENVSHIM_ENVWRAP` (this process's), else `envwrap` on `path`.
fn envwrap(path: Option<&[u8]>) -> Option<PathBuf> {
    match std::env::var_os(crate::shared::ENVWRAP).filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        None => on_path(Path::new("envwrap"), path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A secret only the managed layer defines routes the library's command
    /// through envwrap as a user's secret does; without the layer, nothing.
    #[test]
    fn a_secret_of_the_managed_layer_alone_routes_through_envwrap() {
        let dir = std::env::temp_dir().join(format!("envpolicy-route-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let envwrap = dir.join("envwrap");
        std::fs::write(&envwrap, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&envwrap, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let user_path = dir.join("user.toml");
        std::fs::write(&user_path, "version = 1\n").expect("write");
        let user = crate::load::load(&user_path).expect("user policy");
        let managed = crate::load::compile_text(
            "version = 1\n[[secret]]\nname = \"DEPLOY_KEY\"\nfrom = \"file:/nonexistent/deploy-key\"\nprogram = \"/usr/bin/deploy\"\n",
            &dir.join("managed.toml"),
        )
        .expect("managed policy");
        let env = vec![format!("PATH={}", dir.display()).into_bytes()];
        let argv = vec![b"deploy".to_vec()];
        let (u, m) = (user.policy(), managed.policy());
        let routed = route_with(&u, Some(&m), b"/usr/bin/deploy", &argv, &env);
        let alone = route_with(&u, None, b"/usr/bin/deploy", &argv, &env);
        let other = route_with(&u, Some(&m), b"/usr/bin/other", &argv, &env);
        let _ = std::fs::remove_dir_all(&dir);
        match routed {
            Route::Envwrap { argv, change } => {
                assert_eq!(argv[0], envwrap.into_os_string());
                assert_eq!(
                    argv.last().map(|a| a.as_os_str()),
                    Some(std::ffi::OsStr::new("/usr/bin/deploy"))
                );
                assert_eq!(change.name.as_deref(), Some("DEPLOY_KEY"));
            }
            _ => panic!("the managed layer's secret did not route the command"),
        }
        assert!(
            matches!(alone, Route::None),
            "no layer, no secret: no route"
        );
        assert!(matches!(other, Route::None), "another program: no route");
    }
}
