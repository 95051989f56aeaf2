//! Small, allocation-free helpers shared by the hooks: `errno`, the process's
//! `environ`, C string scanning, raw system calls, and the one message the
//! platform writes itself ([`abort_saying`]).
//!
//! Everything here is safe to call between `fork`/`vfork` and `exec` (see the rule in
//! [`crate::hooks::exec`]): no allocation, no lock, no formatting machinery.

use core::ffi::{c_char, c_int, c_long};

extern "C" {
    /// The calling process's environment, as glibc's `getenv` sees it.
    static mut environ: *const *const c_char;
}

/// Where this thread's `errno` is: libc's `__errno_location()`, asked once per
/// thread and kept in our own initial-exec TLS slot (`csrc/support.c`).
///
/// Why not ask libc every time: in a `fork` child every page of libc's text that
/// the child touches first is a page fault (the kernel does not copy the page
/// tables of file mappings at fork), and the hooks save and restore `errno` at
/// every exec. The parent's thread has asked already (the `fork` hook saves
/// `errno` too), and a fork child's thread, a `vfork` child or a `CLONE_VM` child
/// runs on a thread whose `errno` is at the same address in the same memory.
#[inline(always)]
fn errno_ptr() -> *mut c_int {
    #[cfg(target_arch = "x86_64")]
    {
        let slot: *mut *mut c_int = tls_addr!("envshim_errno_slot");
        // SAFETY: this thread's own slot, read and written only by this thread.
        unsafe {
            if (*slot).is_null() {
                // __errno_location() always returns a valid pointer to this
                // thread's errno.
                *slot = libc::__errno_location();
            }
            *slot
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: __errno_location() always returns a valid pointer to this thread's errno.
    unsafe {
        libc::__errno_location()
    }
}

/// The address, in the calling thread, of one of this library's hidden
/// initial-exec TLS variables (csrc/support.c), found inline: its offset from the
/// thread pointer is in the GOT, and the word at `%fs:0` is the thread pointer
/// itself (x86-64 TLS ABI). A call into the C object would be a text page of its
/// own in a `fork` child.
#[cfg(target_arch = "x86_64")]
macro_rules! tls_addr {
    ($sym:literal) => {{
        let p: usize;
        // SAFETY: reads the GOT entry of `$sym`'s TLS offset and the thread
        // pointer at %fs:0; touches nothing else.
        unsafe {
            core::arch::asm!(
                concat!("mov {p}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                "add {p}, qword ptr fs:[0]",
                p = out(reg) p,
                options(nostack, readonly),
            );
        }
        p as *mut _
    }};
}
#[cfg(target_arch = "x86_64")]
pub(crate) use tls_addr;

/// The current thread's `errno`.
#[inline]
pub fn errno() -> c_int {
    // SAFETY: `errno_ptr` is this thread's errno.
    unsafe { *errno_ptr() }
}

/// Sets the current thread's `errno`, writing only when it differs.
///
/// Most calls restore the value the hook found, which nothing changed. `errno`
/// lives in the thread's TLS page, and after a `fork` that page is shared with the
/// child and write-protected: a needless write is a page fault in the parent at
/// every fork, and another in each child that restores its `errno` on the exec path.
#[inline]
pub fn set_errno(e: c_int) {
    let p = errno_ptr();
    // SAFETY: as in `errno()`.
    unsafe {
        if *p != e {
            *p = e;
        }
    }
}

/// `close(2)` of a descriptor the caller owns and no one else uses; the result is
/// ignored, as nothing can be done about a failed close.
pub fn close(fd: c_int) {
    // SAFETY: closing a descriptor the caller owns (the function's contract).
    unsafe { sys_call!(libc::SYS_close, fd) };
}

/// A system call with up to six arguments, as libc's `syscall(2)`: the kernel's
/// result, or -1 with `errno` set. Arguments are passed as machine words (a
/// pointer, or an integer sign-extended as C would).
///
/// Made here rather than through libc's `syscall`, for the reason `errno_ptr`
/// gives: a fork child that execs touches no page of libc's text for it.
///
/// # Safety
/// As for the system call `nr` with these arguments.
#[inline]
pub unsafe fn syscall6(nr: c_long, a: [usize; 6]) -> c_long {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: c_long;
        // SAFETY: the caller's contract on the call itself. `syscall` clobbers
        // rcx and r11 and nothing else of ours, and does not use our stack.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr => ret,
                in("rdi") a[0],
                in("rsi") a[1],
                in("rdx") a[2],
                in("r10") a[3],
                in("r8") a[4],
                in("r9") a[5],
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        if (-4095..0).contains(&ret) {
            set_errno(-ret as c_int);
            return -1;
        }
        ret
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5])
    }
}

/// `sys_call!(nr, args...)`: [`syscall6`] with each argument cast to a machine word
/// (`as usize`: a pointer as its address, a signed integer sign-extended).
macro_rules! sys_call {
    ($nr:expr $(, $arg:expr)* $(,)?) => {{
        #[allow(clippy::cast_sign_loss, clippy::cast_possible_wrap)]
        let args = [$($arg as usize),*];
        let mut all = [0usize; 6];
        for (slot, v) in all.iter_mut().zip(args) {
            *slot = v;
        }
        $crate::platform::sys::syscall6($nr as core::ffi::c_long, all)
    }};
}
pub(crate) use sys_call;

/// This program's executable (`/proc/self/exe`), NUL-terminated, in `out`; `None`
/// when it cannot be read or does not fit.
pub fn own_exe(out: &mut [u8]) -> Option<&[u8]> {
    let cap = out.len().checked_sub(1)?;
    // SAFETY: the path is NUL-terminated and `out` has room for `cap` bytes.
    let n = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_readlink,
            c"/proc/self/exe".as_ptr(),
            out.as_mut_ptr(),
            cap
        )
    };
    let n = usize::try_from(n).ok().filter(|&n| n > 0 && n < cap)?;
    *out.get_mut(n)? = 0;
    out.get(..=n)
}

/// The process's `environ` pointer at this moment (may be NULL).
#[inline]
pub fn environ_ptr() -> *const *const c_char {
    // SAFETY: reading a pointer-sized global; glibc's own getenv reads it the same way,
    // without a lock. A concurrent setenv() is the caller's race, as it is for glibc.
    unsafe { core::ptr::addr_of!(environ).read() }
}

// String helpers are plain loops rather than libc's strlen & co.: every libc symbol
// this library imports from Rust costs a symbol lookup at load time in every process
// (rustc binds imports through eagerly relocated GOT entries); the strings scanned here
// are short (a program name, one PATH, an env name).

/// Length of a NUL-terminated string.
///
/// Every entry of every environment goes through here at every exec, so on
/// x86_64 it scans 16 bytes at a time, as libc's `strlen` does: aligned 16-byte
/// blocks, starting with the block that holds `s[0]` (its bytes before `s` are
/// masked off). An aligned 16-byte load never crosses a page boundary, so every
/// load touches only pages that hold at least one byte of the string; it may read
/// bytes past the NUL, in the same page, and ignores them. Those loads are in
/// inline assembly, which Rust treats like a call to foreign code (such as libc's
/// own `strlen`, which reads memory the same way): they are outside Rust's rules on
/// reading past the end of an object.
///
/// # Safety
/// `s` must point to a NUL-terminated string.
#[inline]
pub unsafe fn strlen(s: *const c_char) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let start = s as usize;
        let mut block = start & !15;
        // SAFETY: `block` is 16-aligned and holds `s[0]` (see above).
        let first = unsafe { nul_mask(block) } >> (start - block);
        if first != 0 {
            return first.trailing_zeros() as usize;
        }
        let mut n = 16 - (start - block);
        loop {
            block += 16;
            // SAFETY: the previous block held no NUL, so the string goes on into
            // this aligned block: its page holds a byte of the string.
            let m = unsafe { nul_mask(block) };
            if m != 0 {
                return n + m.trailing_zeros() as usize;
            }
            n += 16;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut n = 0usize;
        // SAFETY: the string is NUL-terminated (caller), so every byte up to the
        // NUL is readable and we stop there. (A volatile read, or LLVM turns this
        // loop back into a call to libc's strlen, i.e. an import.)
        while unsafe { s.add(n).read_volatile() } != 0 {
            n += 1;
        }
        n
    }
}

/// Bit j set when byte j of the 16-byte block at `block` is NUL.
///
/// # Safety
/// `block` must be 16-aligned, and its page must be readable (see `strlen`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn nul_mask(block: usize) -> u32 {
    let mask: u32;
    // SAFETY: an aligned 16-byte load from a readable page (caller); SSE2 is part
    // of x86_64. The block only reads memory and registers it declares.
    unsafe {
        core::arch::asm!(
            "pxor {zero}, {zero}",
            "pcmpeqb {zero}, [{block}]",
            "pmovmskb {mask:e}, {zero}",
            block = in(reg) block,
            zero = out(xmm_reg) _,
            mask = lateout(reg) mask,
            options(nostack, readonly, preserves_flags),
        );
    }
    mask
}

/// Length of a NUL-terminated string, at most `max`.
///
/// # Safety
/// `s` must point to a NUL-terminated string or to at least `max` readable bytes.
#[inline]
pub unsafe fn strnlen(s: *const c_char, max: usize) -> usize {
    let mut n = 0usize;
    // SAFETY: we read at most `max` bytes and stop at a NUL (caller's contract).
    while n < max && unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    n
}

/// Pointer to the first `c` in `s`, or to its terminating NUL (glibc's `strchrnul`).
///
/// # Safety
/// `s` must point to a NUL-terminated string.
#[inline]
pub unsafe fn strchrnul(s: *const c_char, c: u8) -> *const c_char {
    let mut p = s;
    loop {
        // SAFETY: `p` is within the string (we stop at its NUL).
        let b = unsafe { *p } as u8;
        if b == c || b == 0 {
            return p;
        }
        // SAFETY: `b` was not the NUL, so the next byte is still in the string.
        p = unsafe { p.add(1) };
    }
}

/// The bytes of a NUL-terminated string (without the NUL).
///
/// # Safety
/// `s` must be NUL-terminated and stay valid and unchanged for `'a`.
pub unsafe fn cstr_bytes<'a>(s: *const c_char) -> &'a [u8] {
    // SAFETY: caller's contract; `strlen` bytes are readable.
    unsafe { core::slice::from_raw_parts(s.cast::<u8>(), strlen(s)) }
}

/// `write(2)` as a raw system call (see the note on imports above).
pub fn raw_write(fd: c_int, buf: &[u8]) -> isize {
    // SAFETY: a valid buffer and its length; write has no other preconditions.
    unsafe { sys_call!(libc::SYS_write, fd, buf.as_ptr(), buf.len()) as isize }
}

/// `tcgetattr(3)` of `fd` as a raw `ioctl(TCGETS)`: `None` when `fd` is not a
/// terminal.
fn raw_termios(fd: c_int) -> Option<libc::termios> {
    // SAFETY: an all-zero termios is a valid value of the plain C struct.
    let mut t: libc::termios = unsafe { core::mem::zeroed() };
    // SAFETY: TCGETS writes one `termios` through the pointer, which is ours.
    let r = unsafe {
        sys_call!(
            libc::SYS_ioctl,
            fd,
            libc::TCGETS,
            &mut t as *mut libc::termios
        )
    };
    (r == 0).then_some(t)
}

/// Writes `line` to the process's controlling terminal (`/dev/tty`) when the
/// core's rule says so ([`envpolicy_core::seen`]): standard error is not a
/// terminal, and the write would not stop this process (`tostop` outside the
/// foreground group). Non-blocking, so that a terminal that does not drain
/// never holds an exec; errors are ignored (a diagnostic). System calls only:
/// no allocation, no lock.
pub fn write_to_terminal(line: &[u8]) {
    use envpolicy_core::seen;
    let stderr_is_terminal = raw_termios(2).is_some();
    if !seen::may_copy(stderr_is_terminal) {
        return;
    }
    let flags = libc::O_WRONLY | libc::O_NOCTTY | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: a NUL-terminated path; openat has no other preconditions.
    let fd = unsafe {
        sys_call!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/dev/tty".as_ptr(),
            flags
        )
    };
    if fd < 0 {
        return;
    }
    let fd = fd as c_int;
    let mut group: libc::pid_t = 0;
    // SAFETY: TIOCGPGRP writes one pid_t through the pointer, which is ours.
    let got = unsafe {
        sys_call!(
            libc::SYS_ioctl,
            fd,
            libc::TIOCGPGRP,
            &mut group as *mut libc::pid_t
        )
    };
    // SAFETY: getpgid(0) has no preconditions.
    let own = unsafe { sys_call!(libc::SYS_getpgid, 0) };
    let t = seen::Terminal {
        stderr_is_terminal,
        stops_background: raw_termios(fd).is_none_or(|t| t.c_lflag & libc::TOSTOP != 0),
        in_foreground: got == 0 && own == core::ffi::c_long::from(group),
    };
    if seen::copy_to_terminal(t) {
        raw_write(fd, line);
    }
    close(fd);
}

/// `getpid(2)` as a raw system call (in a vfork child: the child's pid).
pub fn raw_getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions.
    unsafe { sys_call!(libc::SYS_getpid) as libc::pid_t }
}

/// `getuid(2)` as a raw system call.
pub fn raw_getuid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { sys_call!(libc::SYS_getuid) as u32 }
}

/// Does this process run on its parent's memory (a `vfork` or `CLONE_VM`
/// child)? `kcmp(2)` of the two processes' memory (`KCMP_VM`): 0 says the
/// same. An error (kcmp absent, refused by a seccomp filter, a parent that is not
/// dumpable) counts as shared: a caller that would read a secret then does not
/// (fail closed).
pub fn shares_parent_memory() -> bool {
    const KCMP_VM: usize = 1;
    let me = raw_getpid();
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { sys_call!(libc::SYS_getppid) };
    // SAFETY: kcmp reads nothing of ours; its arguments are two pids, a type and
    // two unused indices.
    let r = unsafe { sys_call!(libc::SYS_kcmp, me, parent, KCMP_VM, 0, 0) };
    r <= 0
}

/// The `keyctl(2)` operations the shim uses, and its special keyrings.
pub mod keyctl {
    pub const SEARCH: usize = 10;
    pub const READ: usize = 11;
    pub const SESSION_KEYRING: i32 = -3;
    pub const USER_KEYRING: i32 = -4;
}

/// `keyctl(KEYCTL_SEARCH, keyring, "user", description, 0)`: the serial of the
/// `user` key with that description found from `keyring`, or the errno.
///
/// # Safety
/// `description` must be NUL-terminated.
pub unsafe fn key_search(keyring: i32, description: *const u8) -> Result<i32, c_int> {
    // SAFETY: both strings are NUL-terminated (the type is ours, the description
    // the caller's); no keyring is linked to (0).
    let r = unsafe {
        sys_call!(
            libc::SYS_keyctl,
            keyctl::SEARCH,
            keyring,
            c"user".as_ptr(),
            description,
            0
        )
    };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as i32)
    }
}

/// `keyctl(KEYCTL_READ, key, buf, len)`: the length of the key's payload (which
/// may exceed `buf`, of which only `buf.len()` bytes were then written), or the
/// errno.
pub fn key_read(key: i32, buf: &mut [u8]) -> Result<usize, c_int> {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    let r = unsafe {
        sys_call!(
            libc::SYS_keyctl,
            keyctl::READ,
            key,
            buf.as_mut_ptr(),
            buf.len()
        )
    };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as usize)
    }
}

/// An anonymous private read-write mapping of `len` bytes, as a raw system call.
pub fn raw_mmap(len: usize) -> Option<*mut u8> {
    anonymous_mapping(len, libc::MAP_PRIVATE)
}

/// A read-write mapping of `len` bytes that the children `fork` makes share
/// with this process, backed by a memfd of its own whose size is sealed
/// (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`), as raw system calls. An
/// anonymous `MAP_SHARED` page is a shmem file too, and a process allowed to
/// open `/proc/PID/map_files/` could truncate it, after which every process
/// that shares it dies of `SIGBUS` at its next read; a sealed size refuses
/// that truncation (EPERM) from any descriptor. The memfd is closed once
/// mapped. `None` when a memfd cannot be made or sealed (an old kernel, a
/// seccomp filter that refuses it): the caller then does without sharing.
pub fn sealed_shared_mapping(len: usize) -> Option<*mut u8> {
    let name = c"envshim-withheld";
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a NUL-terminated name; the call makes a new descriptor only.
    let mut fd = unsafe {
        sys_call!(
            libc::SYS_memfd_create,
            name.as_ptr(),
            base | libc::MFD_NOEXEC_SEAL
        )
    };
    if fd < 0 && errno() == libc::EINVAL {
        // A kernel before 6.3 knows no MFD_NOEXEC_SEAL.
        // SAFETY: as above.
        fd = unsafe { sys_call!(libc::SYS_memfd_create, name.as_ptr(), base) };
    }
    if fd < 0 {
        return None;
    }
    let fd = fd as c_int;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: our own new descriptor; ftruncate and fcntl touch no memory.
    let sized = unsafe { sys_call!(libc::SYS_ftruncate, fd, len) } == 0
        // SAFETY: as above.
        && unsafe { sys_call!(libc::SYS_fcntl, fd, libc::F_ADD_SEALS, seals) } == 0;
    let p = if sized {
        // SAFETY: a new shared mapping of our own memfd, `len` bytes long (its
        // sealed size); it touches no existing memory.
        unsafe {
            sys_call!(
                libc::SYS_mmap,
                0usize,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0usize,
            )
        }
    } else {
        -1
    };
    close(fd);
    if p == -1 || p == 0 {
        None
    } else {
        Some(p as usize as *mut u8)
    }
}

fn anonymous_mapping(len: usize, sharing: c_int) -> Option<*mut u8> {
    // SAFETY: a new anonymous mapping touches no existing memory.
    let p = unsafe {
        sys_call!(
            libc::SYS_mmap,
            0usize,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            sharing | libc::MAP_ANONYMOUS,
            -1 as c_int,
            0usize,
        )
    };
    if p == -1 || p == 0 {
        None
    } else {
        Some(p as usize as *mut u8)
    }
}

/// `munmap(2)` as a raw system call.
///
/// # Safety
/// `(ptr, len)` must be a mapping the caller made and no one uses any more.
pub unsafe fn raw_munmap(ptr: *mut u8, len: usize) {
    // SAFETY: caller's contract.
    unsafe { sys_call!(libc::SYS_munmap, ptr, len) };
}

/// Number of entries before the terminating NULL of a pointer array (0 for NULL).
///
/// # Safety
/// `v` must be NULL or point to a NULL-terminated array of pointers.
pub unsafe fn count(v: *const *const c_char) -> usize {
    if v.is_null() {
        return 0;
    }
    let mut n = 0usize;
    // SAFETY: the array is NULL-terminated (caller's contract), so every index up to and
    // including the terminator is in bounds.
    while unsafe { !(*v.add(n)).is_null() } {
        n += 1;
    }
    n
}

/// Whether the NUL-terminated string `s` contains byte `b`.
///
/// # Safety
/// `s` must point to a NUL-terminated string.
pub unsafe fn contains(s: *const c_char, b: u8) -> bool {
    // SAFETY: guaranteed by the caller; strchrnul stops at the NUL.
    unsafe { *strchrnul(s, b) != 0 }
}

/// Looks `name` up in `envp` the way glibc's `getenv` does (first `NAME=` entry wins)
/// and returns a pointer to its value.
///
/// # Safety
/// `envp` must be NULL or a NULL-terminated array of NUL-terminated strings.
pub unsafe fn env_get(envp: *const *const c_char, name: &[u8]) -> Option<*const c_char> {
    if envp.is_null() {
        return None;
    }
    let mut i = 0usize;
    loop {
        // SAFETY: `envp` is NULL-terminated; we stop at the terminator.
        let e = unsafe { *envp.add(i) };
        if e.is_null() {
            return None;
        }
        // SAFETY: `e` is NUL-terminated: comparing byte by byte stops at the first
        // mismatch, and a NUL in `e` mismatches any byte of `name` (names hold no NUL).
        if unsafe { starts_with_name(e, name) } {
            // SAFETY: `e` holds at least `name.len() + 1` bytes (`NAME=`).
            return Some(unsafe { e.add(name.len() + 1) });
        }
        i += 1;
    }
}

/// Whether `e` starts with `name` followed by `=`.
///
/// # Safety
/// `e` must be NUL-terminated and `name` must not contain NUL.
unsafe fn starts_with_name(e: *const c_char, name: &[u8]) -> bool {
    for (i, &b) in name.iter().enumerate() {
        // SAFETY: every earlier byte matched a non-NUL byte of `name`, so index `i` is
        // at most the position of the terminating NUL.
        if unsafe { *e.add(i) } as u8 != b {
            return false;
        }
    }
    // SAFETY: as above, index `name.len()` is within the string or its NUL.
    unsafe { *e.add(name.len()) as u8 == b'=' }
}

/// Formats `v` in decimal into the end of `tmp` and returns the digits.
pub fn fmt_i64(v: i64, tmp: &mut [u8; 24]) -> &[u8] {
    let mut digits = [0u8; 20];
    let digits = envpolicy_core::shown::decimal(v.unsigned_abs(), &mut digits);
    let sign: &[u8] = if v < 0 { b"-" } else { b"" };
    let len = sign.len() + digits.len();
    for (d, &b) in tmp.iter_mut().zip(sign.iter().chain(digits)) {
        *d = b;
    }
    tmp.get(..len).unwrap_or(&[])
}

/// Writes `words` to stderr and aborts: for a broken invariant the platform
/// finds before any policy is known (the lookup of a real function that found
/// the shim's own). The one message that does not go through
/// [`crate::state::message`]: its words are `'static`, the library's own
/// constants, so there is nothing in them to redact, and the redaction needs
/// the policy this runs before.
pub fn abort_saying(words: &[&'static [u8]]) -> ! {
    for w in words {
        raw_write(2, w);
    }
    raw_write(2, b"\n");
    // SAFETY: abort() never returns.
    unsafe { crate::platform::cold::abort() }
}

const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Disables thread cancellation until dropped. `system` and `pclose` wait for a child;
/// a cancellation there would unwind through Rust frames that cannot be unwound and
/// would skip restoring signal dispositions, so, as glibc's `pclose` does, we do not
/// act on cancellation while waiting (a pending cancel is acted on at the next
/// cancellation point after we return).
pub struct NoCancel(c_int);

impl NoCancel {
    pub fn new() -> Self {
        let mut old: c_int = 0;
        // SAFETY: valid arguments; pthread_setcancelstate is always safe to call.
        unsafe { crate::platform::cold::pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
        NoCancel(old)
    }
}

impl Default for NoCancel {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for NoCancel {
    fn drop(&mut self) {
        let saved = errno();
        // SAFETY: restores the state saved in `new`.
        unsafe { crate::platform::cold::pthread_setcancelstate(self.0, core::ptr::null_mut()) };
        set_errno(saved);
    }
}
