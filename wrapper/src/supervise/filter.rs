//! The seccomp filter of `--supervise`: every `execve` and `execveat`, in every
//! ABI the kernel runs on this machine, becomes a notification to the
//! supervisor; every other system call is allowed.
//!
//! The program is written here by hand, a dozen BPF instructions, because
//! neither crate that builds filters fits (docs/adr/0016-supervised-exec.md):
//! the released seccompiler has no user-notification action and no way to ask
//! for a listener, and libseccomp is a C library that envwrap, built static,
//! would have to link from a `-dev` package that a fresh machine lacks.
//!
//! The filter is inherited across fork, clone and exec and cannot be removed:
//! every descendant of the supervised command is under it.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// `struct seccomp_data`: `nr` at 0, `arch` at 4.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

/// The exec system calls of one ABI.
struct Abi {
    /// `AUDIT_ARCH_*`.
    arch: u32,
    /// `execve`, `execveat` and, for x32, their x32 numbers.
    execs: &'static [u32],
}

/// x86_64 runs three ABIs: native, x32 (numbers with bit 30 set, same arch) and
/// i386. All are notified; the supervisor reads only the native one and refuses
/// the others (`Syscall::Foreign`), which a tree of 64-bit programs never uses.
#[cfg(target_arch = "x86_64")]
const ABIS: &[Abi] = &[
    Abi {
        arch: 0xc000_003e, // AUDIT_ARCH_X86_64
        execs: &[59, 322, 0x4000_0000 | 520, 0x4000_0000 | 545],
    },
    Abi {
        arch: 0x4000_0003, // AUDIT_ARCH_I386
        execs: &[11, 358],
    },
];

/// aarch64: native only (the 32-bit compat ABI is notified too).
#[cfg(target_arch = "aarch64")]
const ABIS: &[Abi] = &[
    Abi {
        arch: 0xc000_00b7, // AUDIT_ARCH_AARCH64
        execs: &[221, 281],
    },
    Abi {
        arch: 0x4000_0028, // AUDIT_ARCH_ARM
        execs: &[11, 387],
    },
];

/// The native `execve` and `execveat` numbers (the supervisor reads these).
#[cfg(target_arch = "x86_64")]
pub const NATIVE: (u32, i32, i32) = (0xc000_003e, 59, 322);
#[cfg(target_arch = "aarch64")]
pub const NATIVE: (u32, i32, i32) = (0xc000_00b7, 221, 281);

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The program. For each ABI: if the arch matches, load the number and compare
/// it with each exec; a match returns NOTIFY, no match ALLOW. An unknown arch
/// is allowed: the kernel runs none on this machine but the ones listed.
pub fn program() -> Vec<libc::sock_filter> {
    let mut p = Vec::new();
    for abi in ABIS {
        // arch test, nr load, one compare per exec, ALLOW, NOTIFY
        let block = 2 + abi.execs.len() + 2;
        p.push(stmt(BPF_LD_W_ABS, OFFSET_ARCH));
        p.push(jump(BPF_JEQ_K, abi.arch, 0, block as u8 - 1));
        p.push(stmt(BPF_LD_W_ABS, OFFSET_NR));
        for (i, nr) in abi.execs.iter().enumerate() {
            // To NOTIFY: past the remaining compares and ALLOW.
            let to_notify = (abi.execs.len() - i) as u8;
            p.push(jump(BPF_JEQ_K, *nr, to_notify, 0));
        }
        p.push(stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW));
        p.push(stmt(BPF_RET_K, libc::SECCOMP_RET_USER_NOTIF));
    }
    p.push(stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW));
    p
}

/// Install the filter on the calling thread and return its listener. Tries
/// without `no_new_privs` first (which needs CAP_SYS_ADMIN: setuid programs keep
/// working in the tree), then with it (setuid and file capabilities no longer
/// raise privileges anywhere in the tree).
pub fn install() -> io::Result<OwnedFd> {
    let prog = program();
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    match seccomp_new_listener(&fprog) {
        Ok(fd) => return Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {}
        Err(e) => return Err(e),
    }
    // SAFETY: prctl(2) with PR_SET_NO_NEW_PRIVS takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    seccomp_new_listener(&fprog)
}

fn seccomp_new_listener(fprog: &libc::sock_fprog) -> io::Result<OwnedFd> {
    // SPEC_ALLOW: a filter would otherwise also turn on the kernel's speculation
    // mitigations for seccomp tasks (SSBD, IBPB on every context switch) in the
    // whole tree, which the tree did not ask for and which cost more than the
    // supervision (docs/adr/0016-supervised-exec.md). This filter sandboxes
    // nothing: it asks a question at each exec.
    // SAFETY: `fprog` points at a program that lives for the call; the kernel
    // copies it. NEW_LISTENER asks for a listener fd as the return value.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW,
            fprog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new fd (close-on-exec) that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the program the way the kernel does, on one `seccomp_data`.
    fn run(prog: &[libc::sock_filter], arch: u32, nr: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = prog[pc];
            match ins.code {
                BPF_LD_W_ABS => acc = if ins.k == OFFSET_ARCH { arch } else { nr },
                BPF_JEQ_K => {
                    pc += if acc == ins.k { ins.jt } else { ins.jf } as usize;
                }
                BPF_RET_K => return ins.k,
                c => panic!("unexpected instruction {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn every_exec_of_every_abi_is_notified_and_nothing_else() {
        let prog = program();
        for abi in ABIS {
            for &nr in abi.execs {
                assert_eq!(run(&prog, abi.arch, nr), libc::SECCOMP_RET_USER_NOTIF);
            }
            for nr in [0, 1, 2, 56, 57, 58, 60, 321, 323, 435] {
                if !abi.execs.contains(&nr) {
                    assert_eq!(run(&prog, abi.arch, nr), libc::SECCOMP_RET_ALLOW);
                }
            }
        }
        assert_eq!(run(&prog, 0x1234, 59), libc::SECCOMP_RET_ALLOW);
    }
}
