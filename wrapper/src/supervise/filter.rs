//! The seccomp filter of `--supervise`: every `execve` and `execveat`, in every
//! ABI the kernel runs on this machine, becomes a notification to the
//! supervisor, but a native `execveat` that carries the run's mark
//! ([`envpolicy::mark`]: the shim decided it, with the supervisor's policy); every
//! other system call is allowed.
//!
//! The mark is checked in the kernel, before any notification: the directory fd
//! argument holds all 64 bits of it, and the flags are 0. The shim passes an
//! absolute path with it, for which the kernel ignores the directory fd. A
//! relative path with a mark in its fd register fails with EBADF (the fd is no
//! open file), and a mark with flags, `AT_EMPTY_PATH` included, is notified.
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

/// `struct seccomp_data`: `nr` at 0, `arch` at 4, then the instruction
/// pointer, then `args[6]` from 16, each 64 bits in the machine's (little)
/// endianness, read as two 32-bit words.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARGS: u32 = 16;

/// The low and high words of `args[i]`.
const fn arg_words(i: u32) -> (u32, u32) {
    (OFFSET_ARGS + 8 * i, OFFSET_ARGS + 8 * i + 4)
}

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

/// The mark test, for the native ABI with the number loaded: a native
/// `execveat` whose fd argument is `mark` and whose flags are 0 returns ALLOW;
/// another `execveat` returns NOTIFY; any other call falls through to the
/// compares with the number still loaded. Eleven instructions.
fn marked_execveat(mark: u64) -> Vec<libc::sock_filter> {
    let (_, _, execveat) = NATIVE;
    let (fd_lo, fd_hi) = arg_words(0);
    let (flags_lo, flags_hi) = arg_words(4);
    // Each test: load a word, then on a mismatch jump to NOTIFY, the last
    // instruction; ALLOW is the one before it.
    let tests = [
        (fd_lo, mark as u32),
        (fd_hi, (mark >> 32) as u32),
        (flags_lo, 0),
        (flags_hi, 0),
    ];
    let len = 1 + 2 * tests.len() + 2;
    let mut p = Vec::with_capacity(len);
    // Not execveat: past the tests, ALLOW and NOTIFY.
    p.push(jump(BPF_JEQ_K, execveat as u32, 0, (len - 1) as u8));
    for (word, want) in tests {
        p.push(stmt(BPF_LD_W_ABS, word));
        let at = p.len();
        // From `at`, NOTIFY is at len - 1; on a match, the next instruction.
        p.push(jump(BPF_JEQ_K, want, 0, (len - 2 - at) as u8));
    }
    p.push(stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(BPF_RET_K, libc::SECCOMP_RET_USER_NOTIF));
    p
}

/// The program. For each ABI: if the arch matches, load the number, (native
/// ABI, with a mark) let a marked `execveat` run, and compare the number with
/// each exec; a match returns NOTIFY, no match ALLOW. An unknown arch is
/// allowed: the kernel runs none on this machine but the ones listed.
pub fn program(mark: Option<u64>) -> Vec<libc::sock_filter> {
    let mut p = Vec::new();
    for abi in ABIS {
        let marked = match mark {
            Some(m) if abi.arch == NATIVE.0 => marked_execveat(m),
            _ => Vec::new(),
        };
        // arch test, nr load, the mark test, one compare per exec, ALLOW, NOTIFY
        let block = 2 + marked.len() + abi.execs.len() + 2;
        p.push(stmt(BPF_LD_W_ABS, OFFSET_ARCH));
        p.push(jump(BPF_JEQ_K, abi.arch, 0, block as u8 - 1));
        p.push(stmt(BPF_LD_W_ABS, OFFSET_NR));
        p.extend(marked);
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

/// Install the filter on the calling thread and return its listener; with
/// `mark`, a native `execveat` that carries it runs unjudged. Tries
/// without `no_new_privs` first (which needs CAP_SYS_ADMIN: setuid programs keep
/// working in the tree), then with it (setuid and file capabilities no longer
/// raise privileges anywhere in the tree).
pub fn install(mark: Option<u64>) -> io::Result<OwnedFd> {
    let prog = program(mark);
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
        run_with(prog, arch, nr, [0; 6])
    }

    fn run_with(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = prog[pc];
            match ins.code {
                BPF_LD_W_ABS => {
                    acc = match ins.k {
                        OFFSET_ARCH => arch,
                        OFFSET_NR => nr,
                        k if (OFFSET_ARGS..OFFSET_ARGS + 48).contains(&k) => {
                            let a = args[((k - OFFSET_ARGS) / 8) as usize];
                            if (k - OFFSET_ARGS) % 8 == 0 {
                                a as u32
                            } else {
                                (a >> 32) as u32
                            }
                        }
                        k => panic!("unexpected offset {k}"),
                    }
                }
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
        for mark in [None, Some(0x0123_4567_89ab_cdef)] {
            every_exec_notified(&program(mark));
        }
    }

    #[test]
    fn a_native_execveat_with_the_mark_and_no_flags_alone_runs_unjudged() {
        let mark = 0x0123_4567_89ab_cdefu64;
        let prog = program(Some(mark));
        let (arch, execve, execveat) = NATIVE;
        let (execve, execveat) = (execve as u32, execveat as u32);
        let marked = [mark, 1, 2, 3, 0, 0];
        assert_eq!(
            run_with(&prog, arch, execveat, marked),
            libc::SECCOMP_RET_ALLOW
        );
        // Any other fd, half a mark, flags, another call with the mark.
        for args in [
            [mark ^ 1, 1, 2, 3, 0, 0],
            [mark & 0xffff_ffff, 1, 2, 3, 0, 0],
            [mark & !0xffff_ffff, 1, 2, 3, 0, 0],
            [mark, 1, 2, 3, libc::AT_EMPTY_PATH as u64, 0],
            [mark, 1, 2, 3, 1 << 32, 0],
            [libc::AT_FDCWD as u64, 1, 2, 3, 0, 0],
        ] {
            assert_eq!(
                run_with(&prog, arch, execveat, args),
                libc::SECCOMP_RET_USER_NOTIF
            );
        }
        assert_eq!(
            run_with(&prog, arch, execve, marked),
            libc::SECCOMP_RET_USER_NOTIF
        );
        // Without a mark in the filter, the marked call is judged too.
        let plain = program(None);
        assert_eq!(
            run_with(&plain, arch, execveat, marked),
            libc::SECCOMP_RET_USER_NOTIF
        );
        // Another ABI never takes the mark.
        for abi in ABIS.iter().filter(|a| a.arch != arch) {
            for &nr in abi.execs {
                assert_eq!(
                    run_with(&prog, abi.arch, nr, marked),
                    libc::SECCOMP_RET_USER_NOTIF
                );
            }
        }
    }

    fn every_exec_notified(prog: &[libc::sock_filter]) {
        let prog = prog.to_vec();
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
