//! Where a tree keeps the credential names it has said were withheld
//! ([`envpolicy_core::withheld`]): one shared page per process that forks.
//!
//! A shell runs each command in a fork child, which decides the command's
//! environment and execs; `make -j` has several such children at once. A set in
//! the child's own memory would be lost with the child, and every command would
//! say the line again. So the `fork` hook, in the parent, maps one shared page
//! before its first fork, and every child it forks from then on writes the same
//! page. The set is lock-free, so children racing on one name say it once
//! between them.
//!
//! The page is not an anonymous `MAP_SHARED` page but a memfd's, with its size
//! sealed ([`sys::sealed_shared_mapping`]): a shared page is a shmem file, and
//! one that a process could truncate (through `/proc/PID/map_files/`) would be a
//! `SIGBUS` in every process of the tree at its next line. Sealed, no
//! descriptor can shrink or grow it. What another process can still do is write
//! into it (`/proc/PID/mem`, as a debugger would): any bytes are a valid set of
//! hashes, so that changes only which names are said again or not, never a
//! decision. Where no memfd can be made, a private page stands in: each child
//! then says a name again.
//!
//! Without a fork (a `vfork` child shares its parent's memory; `posix_spawn`,
//! `system` and `popen` decide in the parent) the page is made at the first line
//! to say, in the process deciding, which the parent then keeps. A process that
//! forks without libc's `fork` (a raw `clone`) gives each child a page of its
//! own: a name is said again by each such child, never less often than once.
//!
//! Nothing here allocates or locks: a few raw system calls (`memfd_create`,
//! `ftruncate`, `fcntl`, `mmap`, `close`) are all it does, once, and the hook
//! calls it only under a policy that is not `quiet`. After an exec the
//! program starts with no page: a new tree.

use core::mem::size_of;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use envpolicy_core::withheld::Said;

use crate::platform::sys;

/// The tree's set, once made (null before).
static SAID: AtomicPtr<Said> = AtomicPtr::new(ptr::null_mut());

/// The set this process shares with the children it forks: the one it has, or a
/// new one. `None` when no page can be mapped (the line is then not said).
fn shared() -> Option<&'static Said> {
    let mut page = SAID.load(Ordering::Acquire);
    if page.is_null() {
        let len = size_of::<Said>();
        // Shared through a memfd whose size is sealed, so that no process can
        // truncate the page under the tree; else a private page (each child
        // then says a name again: more often, never less than once).
        let made = sys::sealed_shared_mapping(len)
            .or_else(|| sys::raw_mmap(len))?
            .cast::<Said>();
        page =
            match SAID.compare_exchange(ptr::null_mut(), made, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => made,
                Err(theirs) => {
                    // SAFETY: our own mapping, which nothing else has seen.
                    unsafe { sys::raw_munmap(made.cast(), size_of::<Said>()) };
                    theirs
                }
            };
    }
    // SAFETY: a page mapped above, readable and writable for the life of the
    // process image and never unmapped once published; zeroed memory is an empty
    // `Said` (atomics of 0). `Said` is only used through atomics.
    Some(unsafe { &*page })
}

/// The `fork` hook's part: make the page before the first fork, so that the
/// children share it.
pub(crate) fn share_before_fork() {
    let _ = shared();
}

/// Records `name` as said in this tree: true the first time, for the caller that
/// is to say it.
pub(crate) fn first_time(name: &[u8]) -> bool {
    shared().is_some_and(|said| said.first_time(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page outlives the fork: a child sees what its parent said, and the
    /// parent what its child said, so a shell's commands say a name once
    /// between them. (A real `fork`, through the shim's own hook, as in a
    /// shell under the shim.)
    #[test]
    fn a_forked_child_and_its_parent_say_each_name_once_between_them() {
        share_before_fork();
        assert!(first_time(b"WITHHELD_TEST_PARENT"));
        // SAFETY: the child calls only `first_time` (atomics on the shared page)
        // and `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = !first_time(b"WITHHELD_TEST_PARENT") && first_time(b"WITHHELD_TEST_CHILD");
            // SAFETY: ends the child without running the parent's atexit work.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: our own child, and a valid pointer for its status.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child saw {status:#x}"
        );
        assert!(
            !first_time(b"WITHHELD_TEST_CHILD"),
            "the parent did not see the child's name"
        );
    }
}
