//! Who may write a file a policy is built from: the one rule that envwrap (with
//! std, `envpolicy::trust`) and libenvshim.so (on a raw `stat`) both apply.
//!
//! Whoever can write the policy file or a file it imports decides what every
//! child receives, so such a file must be owned by root or by the user, and be
//! writable by nobody else:
//!
//! - **Owner**: root (uid 0) or the current user.
//! - **Others**: never writable by others (`mode & 0o002`).
//! - **Group**: not writable by its group (`mode & 0o020`), unless the group is
//!   the user's own private group (Debian's user-private-group scheme, which
//!   gives users umask 002): the rule Debian's OpenSSH applies to `~/.ssh`. The
//!   group counts as private when it is the user's primary group, is named after
//!   the user, and lists no member but the user; that is decided, with the group
//!   database, by the std side (`envpolicy::trust::private_group`) and handed to
//!   this rule as `private_gid`. A group with other members, or another group,
//!   is refused as before.

use core::fmt;

/// Why a file is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// Writable by its group (not the user's private one) or by others; `mode` is
    /// its permission bits.
    Writable { mode: u32 },
    /// Owned by `owner`, which is neither root nor `euid`.
    OtherOwner { owner: u32, euid: u32 },
    /// The path is a symbolic link owned by `owner`, neither root nor `euid`.
    LinkOwner { owner: u32, euid: u32 },
}

impl Untrusted {
    /// A short reason, for a writer without `core::fmt` (the shim).
    pub fn short(self) -> &'static [u8] {
        match self {
            Untrusted::Writable { .. } => b"writable by group or others",
            Untrusted::OtherOwner { .. } => b"owned by another user",
            Untrusted::LinkOwner { .. } => b"a symbolic link owned by another user",
        }
    }
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Untrusted::Writable { mode } => write!(
                f,
                "writable by group or others (mode {:04o}); only its owner and root may write it",
                mode & 0o7777
            ),
            Untrusted::OtherOwner { owner, euid } => write!(
                f,
                "owned by uid {owner}, which is neither root nor the current user (uid {euid})"
            ),
            Untrusted::LinkOwner { owner, euid } => write!(
                f,
                "a symbolic link owned by uid {owner}, which is neither root nor the current user (uid {euid})"
            ),
        }
    }
}

/// May `owner` own a file the policy of user `euid` is built from?
pub fn owner_may_write(owner: u32, euid: u32) -> bool {
    owner == 0 || owner == euid
}

/// Judge a file (symbolic links followed) by its owner, group and mode, for the
/// user `euid` whose private group, if the std side found one, is `private_gid`.
pub fn judge(
    owner: u32,
    gid: u32,
    mode: u32,
    euid: u32,
    private_gid: Option<u32>,
) -> Result<(), Untrusted> {
    if !owner_may_write(owner, euid) {
        return Err(Untrusted::OtherOwner { owner, euid });
    }
    let private = owner == euid && private_gid == Some(gid);
    let forbidden = if private { 0o002 } else { 0o022 };
    if mode & forbidden != 0 {
        return Err(Untrusted::Writable { mode });
    }
    Ok(())
}

/// Would `judge` need to know the private group (a group-writable file owned by
/// the user, writable by nobody else)?
pub fn needs_private_group(owner: u32, mode: u32, euid: u32) -> bool {
    owner == euid && mode & 0o020 != 0 && mode & 0o002 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_write_is_harmless_only_in_the_users_private_group() {
        let (me, mine) = (1000, Some(1000));
        assert_eq!(judge(me, 1000, 0o100664, me, mine), Ok(()));
        assert!(judge(me, 1000, 0o100664, me, None).is_err());
        assert!(judge(me, 100, 0o100664, me, mine).is_err(), "another group");
        assert!(
            judge(me, 1000, 0o100666, me, mine).is_err(),
            "others may write"
        );
        assert!(
            judge(0, 1000, 0o100664, me, mine).is_err(),
            "root's file, user's group"
        );
        assert!(
            judge(2000, 2000, 0o100644, me, mine).is_err(),
            "another owner"
        );
        assert_eq!(judge(0, 0, 0o100644, me, mine), Ok(()));
    }
}
