//! The shim in a set-user-ID program (`AT_SECURE`), where the whole-host mode
//! (`/etc/ld.so.preload`, docs/host.md) loads it: the invoking user's
//! environment must not choose what the program runs or reads with its
//! owner's privileges. Before this rule, `ENVSHIM_POLICY` naming a policy with
//! no compiled cache made the shim run `$ENVSHIM_ENVWRAP` to compile it, as
//! the set-user-ID owner (a shell drops that privilege itself; a binary
//! would not): `ran-as-65534` below is the hostile script having run at all.
//!
//! The test runs on a private host (root; skipped elsewhere): the shim in its
//! `/etc/ld.so.preload`, a set-user-ID-root copy of a C program that execs its
//! arguments, started by `nobody` with a hostile `ENVSHIM_ENVWRAP`.

use envshim_e2e::*;

/// `suid_exec PROGRAM ARGS...`: exec the rest (as the set-user-ID owner).
const SUID_EXEC_C: &str = r#"
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 64;
    execv(argv[1], argv + 1);
    perror("suid_exec");
    return 71;
}
"#;

/// `as_nobody PROGRAM ARGS...`: become uid/gid 65534 and exec the rest with
/// the environment as it is. Static, so that no shim filters the environment
/// on the way: the set-user-ID program gets the user's variables as a user
/// would hand them to it.
const AS_NOBODY_C: &str = r#"
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 64;
    if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
        perror("as_nobody");
        return 70;
    }
    execv(argv[1], argv + 1);
    perror("as_nobody");
    return 71;
}
"#;

#[test]
fn a_set_user_id_program_takes_no_envwrap_or_policy_from_its_user() {
    if no_private_host("shim_secure") {
        return;
    }
    let sb = Sandbox::new("shim-secure");
    let suid = sb.join("suid_exec");
    std::fs::copy(compile_c("suid_exec", SUID_EXEC_C), &suid).expect("copy");
    let marker_dir = sb.mkdir("markers");
    let evil = sb.write_executable(
        "evil-envwrap",
        format!(
            "#!/bin/sh\ntouch '{}/ran-as-'$(id -u)\nexit 1\n",
            marker_dir.display()
        ),
    );
    let policy = sb.write("user.toml", "version = 1\n");
    // The user's own cache directory, which the shim trusts for the user.
    let cache = sb.mkdir("cache");
    std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).expect("chown");
    open_to_every_user(sb.path());
    let preload = sb.write("ld.so.preload", format!("{}\n", shim_so().display()));
    let setup = format!(
        "chown root:root '{s}' && chmod 4755 '{s}'\nchmod 0777 '{m}'\n{}",
        install_line(&preload, "/etc/ld.so.preload", "0644"),
        s = suid.display(),
        m = marker_dir.display(),
    );
    let as_nobody = compile_c_with("as_nobody", AS_NOBODY_C, &["-static"]);
    let mut c = on_private_host(&sb, &setup, as_nobody);
    c.arg(&suid).arg("/bin/true");
    c.env("ENVSHIM_ENVWRAP", &evil)
        .env("ENVSHIM_POLICY", &policy)
        .env("ENVSHIM_CACHE_DIR", &cache);
    let out = c.run();
    out.check(
        out.status.success(),
        "the set-user-ID program ran its command",
    );
    let ran: Vec<String> = std::fs::read_dir(&marker_dir)
        .expect("read markers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    out.check(
        ran.is_empty(),
        &format!("the user's ENVSHIM_ENVWRAP ran: {ran:?}"),
    );
}
