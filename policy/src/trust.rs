//! Who may write the files a policy is built from, as sudo asks of sudoers.
//!
//! A policy file decides what every child of every process that uses it receives,
//! and the env and config files it imports decide which names are stripped or
//! refused. Whoever can write one of them can weaken the policy for everyone who
//! runs under it. So before a policy file or an imported file is used, its owner and
//! mode are checked, and a file that fails is refused:
//!
//! - **Owner**: root (uid 0) or the current effective uid. A file owned by any other
//!   user is refused: that user could rewrite it.
//! - **Mode**: not writable by others, nor by its group unless that group is the
//!   user's own private group (umask 002 under Debian's user-private-group
//!   scheme). Only its owner and root may write it. The rule itself is
//!   [`crate::writers::judge`], which libenvshim.so applies too.
//! - **Symbolic links** are followed: the file checked is the target. A link
//!   owned by another unprivileged user is refused as well, because it chooses which
//!   file is read. (A link's own mode is always 0777 and means nothing.)
//!
//! What happens on a refusal: compiling fails with an error that names the file and
//! the reason, never the file's contents ([`crate::load::read_policy_text`] for the
//! policy, [`crate::compile`] for imports, whether the import is `required` or not).
//! envwrap then exits 125; libenvshim.so, whose policy `envwrap compile` compiles,
//! enforces the fail-closed floor and shows the error once (the failure marker of
//! [`crate::cache`]).
//!
//! Not checked, on purpose:
//! - **The directories above the file.** Whoever can write a directory on the path
//!   can replace the file in it, whatever the file's own mode. Keeping those
//!   directories writable only by their owner and root is the operator's job, as for
//!   the cache directory's parents in [`crate::cache`]. Intermediate links in a chain
//!   of symbolic links are directory entries too: only the first link (the path as
//!   named) and the final target are checked.
//! - **ACLs.** Only the owner and the mode bits are read; a POSIX ACL that grants
//!   another user write access is not seen.
//! - **A directory** named as an import is not judged here: it cannot be read, and
//!   the read reports that as before.
//! - **When the check runs**: whenever the file is read to compile the policy (at
//!   every envwrap run; for libenvshim.so, when its compiled cache is missing or
//!   stale). A cache compiled while the files were trusted stays in use until one of
//!   them changes; the cache records the full stamp (ctime included) of env files
//!   whose values are read again at each exec (`values = true`), so a `chmod` or
//!   `chown` of one makes the cache stale at the next process start.
//!
//! A file that cannot be stat'ed at all is not refused here: the read that follows
//! reports it (a missing optional import is a warning, a missing policy an error).

use crate::error::PolicyError;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

extern "C" {
    fn geteuid() -> u32;
}

/// The effective uid of this process: the user whose files are trusted besides
/// root's.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions and cannot fail; std links libc.
    unsafe { geteuid() }
}

pub use crate::writers::Untrusted;

/// The user's private group ([`crate::writers`]), when the user has one: the
/// user's primary group, named after the user, with no member but the user in
/// the group database. Looked up once per process, and only when a file needs it
/// (a group-writable file owned by the user).
pub fn private_group(euid: u32) -> Option<u32> {
    static FOUND: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| look_up_private_group(euid))
}

fn look_up_private_group(euid: u32) -> Option<u32> {
    use std::ffi::CStr;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` is plain data; all-zero is a valid value to be filled.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the sizes passed; getpwuid_r writes the
    // strings into `buf`, which outlives their use below.
    let r = unsafe {
        libc::getpwuid_r(
            euid,
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if r != 0 || found.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string in `buf`, set by getpwuid_r.
    let user = unsafe { CStr::from_ptr(pw.pw_name) }.to_bytes().to_vec();
    let gid = pw.pw_gid;
    let mut gbuf = vec![0u8; 64 * 1024];
    // SAFETY: as above, for `group`.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut gfound: *mut libc::group = std::ptr::null_mut();
    // SAFETY: as above.
    let r = unsafe {
        libc::getgrgid_r(
            gid,
            &mut gr,
            gbuf.as_mut_ptr().cast(),
            gbuf.len(),
            &mut gfound,
        )
    };
    if r != 0 || gfound.is_null() || gr.gr_name.is_null() {
        return None;
    }
    // SAFETY: NUL-terminated, in `gbuf`.
    if unsafe { CStr::from_ptr(gr.gr_name) }.to_bytes() != user.as_slice() {
        return None;
    }
    let mut member = gr.gr_mem;
    while !member.is_null() {
        // SAFETY: `gr_mem` is a NULL-terminated array of NUL-terminated strings
        // in `gbuf`.
        let m = unsafe { *member };
        if m.is_null() {
            break;
        }
        // SAFETY: as above.
        if unsafe { CStr::from_ptr(m) }.to_bytes() != user.as_slice() {
            return None;
        }
        // SAFETY: still inside the NULL-terminated array.
        member = unsafe { member.add(1) };
    }
    Some(gid)
}

fn owner_ok(owner: u32, euid: u32) -> bool {
    crate::writers::owner_may_write(owner, euid)
}

/// Judge a file's metadata (of the file itself, symbolic links followed) for the
/// user `euid`. Directories pass (see the module docs).
pub fn check_metadata(md: &std::fs::Metadata, euid: u32) -> Result<(), Untrusted> {
    if md.is_dir() {
        return Ok(());
    }
    let (owner, mode) = (md.uid(), md.mode());
    let private = if crate::writers::needs_private_group(owner, mode, euid) {
        private_group(euid)
    } else {
        None
    };
    crate::writers::judge(owner, md.gid(), mode, euid, private)
}

/// The path as named, when it is a symbolic link: its owner.
fn check_link(path: &Path, euid: u32) -> Result<(), Untrusted> {
    match std::fs::symlink_metadata(path) {
        Ok(link) if link.file_type().is_symlink() && !owner_ok(link.uid(), euid) => {
            Err(Untrusted::LinkOwner {
                owner: link.uid(),
                euid,
            })
        }
        _ => Ok(()),
    }
}

/// Check the file at `path` for the user `euid`: the link, if it is one, then the
/// target. A path that cannot be stat'ed passes (its read reports it).
pub fn check_as(path: &Path, euid: u32) -> Result<(), Untrusted> {
    check_link(path, euid)?;
    match std::fs::metadata(path) {
        Ok(md) => check_metadata(&md, euid),
        Err(_) => Ok(()),
    }
}

/// Check the file at `path` for this process's effective user.
pub fn check(path: &Path) -> Result<(), Untrusted> {
    check_as(path, effective_uid())
}

/// Check an open policy file: the link `path` names, if it is one, then the file
/// that was opened (so what is checked is what is read). The error names the file.
pub fn check_policy(path: &Path, file: &std::fs::File) -> Result<(), PolicyError> {
    let euid = effective_uid();
    let verdict = check_link(path, euid).and_then(|()| match file.metadata() {
        Ok(md) => check_metadata(&md, euid),
        Err(_) => Ok(()),
    });
    verdict.map_err(|why| PolicyError::plain(path, format!("policy file is not trusted: {why}")))
}

/// Check an imported file; the error is the message for the importing policy's
/// `FILE:LINE:COLUMN` (`what` is "env file" or "config file").
pub fn check_import(path: &Path, what: &str) -> Result<(), String> {
    check(path).map_err(|why| format!("{what} {} is not trusted: {why}", crate::error::shown(path)))
}
