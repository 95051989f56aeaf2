//! Paths and files, with raw system calls and no allocation: a path built in a
//! stack buffer ([`PathBuf`]), `stat` and `fstat`, a file's [`Stamp`] (what
//! says it changed), and the process's uid. The policy's loader, the env files'
//! reader and the multiplexer check build on these; nothing here knows the
//! policy. (Every libc function imported from Rust costs a symbol lookup at load
//! in every process; see [`crate::platform::sys`].)

use core::ffi::c_int;
use core::mem::MaybeUninit;
use envpolicy_core::cache_key::Stamp;

use crate::platform::sys;

/// The longest path the kernel accepts, without its NUL.
pub const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A path being built in a stack buffer (NUL-terminated by `c_bytes`). The buffer is
/// left uninitialised: zeroing PATH_MAX bytes per path would be most of the
/// constructor's cost.
/// (The storage is a separate local, [`PathSpace`]: inside the struct, LLVM merges
/// it with the zeroing of `len` into one memset.)
pub struct PathBuf<'b> {
    buf: &'b mut [MaybeUninit<u8>],
    len: usize,
    ok: bool,
}

/// Room for any path the kernel accepts, and its NUL.
pub type PathSpace = [MaybeUninit<u8>; PATH_MAX + 1];

impl<'b> PathBuf<'b> {
    pub fn new(buf: &'b mut [MaybeUninit<u8>]) -> Self {
        PathBuf {
            buf,
            len: 0,
            ok: true,
        }
    }

    /// How many bytes the path holds so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no byte of the path is there yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// False once something pushed did not fit (or held a NUL).
    pub fn fits(&self) -> bool {
        self.ok
    }

    pub fn clear(&mut self) {
        self.len = 0;
        self.ok = true;
    }

    pub fn push(&mut self, s: &[u8]) -> &mut Self {
        let end = self.len.saturating_add(s.len());
        // Keep one byte for the NUL.
        let room = end < self.buf.len() && !s.contains(&0);
        match self.buf.get_mut(self.len..end) {
            Some(dst) if room => {
                for (d, &b) in dst.iter_mut().zip(s) {
                    d.write(b);
                }
                self.len = end;
            }
            _ => self.ok = false,
        }
        self
    }

    /// `Path::join` for a relative `s`: a `/` unless the path ends with one.
    pub fn join(&mut self, s: &[u8]) -> &mut Self {
        if self.len > 0 && self.bytes().last() != Some(&b'/') {
            self.push(b"/");
        }
        self.push(s)
    }

    pub fn bytes(&self) -> &[u8] {
        let init = self.buf.get(..self.len).unwrap_or(&[]);
        // SAFETY: the first `len` bytes were written by `push` (`len` only grows by
        // what was written); MaybeUninit<u8> has the layout of u8.
        unsafe { core::slice::from_raw_parts(init.as_ptr().cast::<u8>(), init.len()) }
    }

    /// [`PathBuf::c_bytes`], borrowing the buffer for as long as it lives.
    pub fn into_c_bytes(self) -> Option<&'b [u8]> {
        if !self.ok {
            return None;
        }
        let len = self.len;
        self.buf.get_mut(len)?.write(0);
        let init = self.buf.get(..len + 1)?;
        // SAFETY: bytes `..len` were written by `push`, byte `len` just now.
        Some(unsafe { core::slice::from_raw_parts(init.as_ptr().cast::<u8>(), init.len()) })
    }

    /// The path with its NUL, or `None` if it did not fit.
    pub fn c_bytes(&mut self) -> Option<&[u8]> {
        PathBuf {
            buf: &mut *self.buf,
            len: self.len,
            ok: self.ok,
        }
        .into_c_bytes()
    }
}

/// `stat(2)` of a NUL-terminated path; `Err(errno)` on failure.
pub fn stat_c(path: &[u8]) -> Result<libc::stat, c_int> {
    stat_at(path, 0)
}

/// `fstatat(AT_FDCWD, path, flags)`: [`stat_c`], or with `AT_SYMLINK_NOFOLLOW` the
/// link itself.
pub fn stat_at(path: &[u8], flags: c_int) -> Result<libc::stat, c_int> {
    if path.last() != Some(&0) {
        return Err(libc::EINVAL);
    }
    // SAFETY: `stat` is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated (checked above) and `st` is a valid
    // out-pointer of the kernel's `struct stat` layout (newfstatat fills it).
    let r = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_newfstatat,
            libc::AT_FDCWD,
            path.as_ptr(),
            &mut st as *mut libc::stat,
            flags,
        )
    };
    if r == 0 {
        Ok(st)
    } else {
        Err(sys::errno())
    }
}

/// `fstat(2)` of an open descriptor.
pub fn fstat(fd: c_int) -> Result<libc::stat, c_int> {
    // SAFETY: as in `stat_c`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH stats `fd` itself; `st`
    // is a valid out-pointer.
    let r = unsafe {
        crate::platform::sys::sys_call!(
            libc::SYS_newfstatat,
            fd,
            c"".as_ptr(),
            &mut st as *mut libc::stat,
            libc::AT_EMPTY_PATH,
        )
    };
    if r == 0 {
        Ok(st)
    } else {
        Err(sys::errno())
    }
}

pub fn stamp_of(st: &libc::stat) -> Stamp {
    Stamp::new(
        st.st_dev,
        st.st_ino,
        st.st_size as u64,
        (st.st_mtime, st.st_mtime_nsec),
        (st.st_ctime, st.st_ctime_nsec),
    )
}

/// Whether the loader runs this process in secure mode (`AT_SECURE`: a
/// set-user-ID or set-group-ID program, or one with file capabilities). Its
/// environment is the invoking user's, so nothing in it may choose what the
/// process runs, reads or writes with its privileges: the shim then takes no
/// policy, cache directory, envwrap or credentials directory from it. Read
/// from the auxiliary vector: no system call.
pub fn secure() -> bool {
    // SAFETY: getauxval has no preconditions; an absent AT_SECURE reads 0.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// Our real uid, from the auxiliary vector the kernel passed at exec (`AT_UID`):
/// a read of memory, where `getuid(2)` is a system call in every process start.
pub fn getuid() -> u32 {
    // SAFETY: getauxval has no preconditions; AT_UID is always present on Linux.
    let uid = unsafe { libc::getauxval(libc::AT_UID) };
    match u32::try_from(uid) {
        Ok(uid) if uid != 0 || sys::errno() != libc::ENOENT => uid,
        // SAFETY: getuid has no preconditions and cannot fail.
        _ => unsafe { crate::platform::sys::sys_call!(libc::SYS_getuid) as u32 },
    }
}

/// The stamp of the file at `path_c` (NUL-terminated) as it is now; `None` when it
/// cannot be `stat`ed.
pub fn stamp_now(path_c: &[u8]) -> Option<Stamp> {
    stat_c(path_c).ok().map(|st| stamp_of(&st))
}

/// Read `fd` into `buf` until its end or `buf` is full: the number of bytes
/// read, or `None` on an error. Callers open regular files only (`O_NONBLOCK`,
/// then `fstat`), so a read never blocks. The file may change meanwhile: the
/// count says what was read, never more than `buf` holds.
pub(crate) fn read_all(fd: c_int, buf: &mut [u8]) -> Option<usize> {
    let mut got = 0usize;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        // SAFETY: `rest` is a writable buffer of `rest.len()` bytes.
        let r = unsafe {
            crate::platform::sys::sys_call!(libc::SYS_read, fd, rest.as_mut_ptr(), rest.len())
        };
        if r < 0 {
            if sys::errno() == libc::EINTR {
                continue;
            }
            return None;
        }
        if r == 0 {
            break;
        }
        got += r as usize;
    }
    Some(got)
}
