//! Reading an exec's path, argv and envp out of the target's memory, with
//! process_vm_readv(2).
//!
//! The reads follow the kernel's own limits, so that the supervisor fails an
//! exec exactly where execve(2) would: an unreadable pointer is EFAULT, a
//! string longer than `MAX_ARG_STRLEN` or arguments past the total the kernel
//! takes are E2BIG, a path past `PATH_MAX` is ENAMETOOLONG. Reads go a window
//! of pages at a time: strings that sit next to each other (an initial stack,
//! a libc's packed environment) cost one system call for many.

use nix::errno::Errno;
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;
use std::io::IoSliceMut;

/// One string of argv or envp (the kernel's `MAX_ARG_STRLEN`, 32 pages).
const MAX_ARG_STRLEN: usize = 32 * 4096;
/// All of argv and envp with their pointers: more than any stack limit lets
/// execve(2) take (it stops at three quarters of 8 MiB... of the rlimit).
const MAX_TOTAL: usize = 8 << 20;
/// `PATH_MAX`, with its NUL.
const PATH_MAX: usize = 4096;
const PAGE: u64 = 4096;
/// Pages read at a time.
const WINDOW_PAGES: usize = 16;

/// Why an exec's arguments could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// The errno execve(2) itself would give (EFAULT, E2BIG, ENAMETOOLONG).
    Errno(i32),
    /// The target is gone.
    Gone,
}

/// What the target passed to exec.
#[derive(Debug, Default)]
pub struct ExecArgs {
    pub path: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
}

/// A reader of one target's memory.
pub struct Remote {
    pid: Pid,
    /// The window: `buf` holds the bytes from `start`.
    start: u64,
    buf: Vec<u8>,
    /// Bytes of argv and envp read so far, pointers included.
    total: usize,
}

impl Remote {
    pub fn new(pid: u32) -> Remote {
        Remote {
            pid: Pid::from_raw(pid as i32),
            start: 0,
            buf: Vec::with_capacity(WINDOW_PAGES * PAGE as usize),
            total: 0,
        }
    }

    /// Read `path`, then the NULL-terminated arrays `argv` and `envp`.
    pub fn exec_args(&mut self, path: u64, argv: u64, envp: u64) -> Result<ExecArgs, Unreadable> {
        let path = self.string(path, PATH_MAX, libc::ENAMETOOLONG)?;
        let argv = self.array(argv)?;
        let env = self.array(envp)?;
        Ok(ExecArgs { path, argv, env })
    }

    /// A NULL-terminated array of strings; a NULL array is empty, as the kernel
    /// takes it.
    fn array(&mut self, at: u64) -> Result<Vec<Vec<u8>>, Unreadable> {
        let mut out = Vec::new();
        if at == 0 {
            return Ok(out);
        }
        let mut slot = at;
        loop {
            let p = self.word(slot)?;
            self.charge(8)?;
            if p == 0 {
                return Ok(out);
            }
            let s = self.string(p, MAX_ARG_STRLEN, libc::E2BIG)?;
            self.charge(s.len() + 1)?;
            out.push(s);
            slot = slot.checked_add(8).ok_or(Unreadable::Errno(libc::EFAULT))?;
        }
    }

    fn charge(&mut self, n: usize) -> Result<(), Unreadable> {
        self.total += n;
        if self.total > MAX_TOTAL {
            return Err(Unreadable::Errno(libc::E2BIG));
        }
        Ok(())
    }

    fn word(&mut self, at: u64) -> Result<u64, Unreadable> {
        let mut w = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            let chunk = self.chunk(at + got as u64)?;
            let n = chunk.len().min(8 - got);
            w[got..got + n].copy_from_slice(&chunk[..n]);
            got += n;
        }
        Ok(u64::from_ne_bytes(w))
    }

    /// The bytes at `at` up to its NUL; longer than `max` (with the NUL) gives
    /// `too_long`.
    fn string(&mut self, at: u64, max: usize, too_long: i32) -> Result<Vec<u8>, Unreadable> {
        let mut out = Vec::new();
        let mut pos = at;
        loop {
            let chunk = self.chunk(pos)?;
            let nul = chunk.iter().position(|&b| b == 0);
            let take = nul.unwrap_or(chunk.len());
            if out.len() + take >= max {
                return Err(Unreadable::Errno(too_long));
            }
            out.extend_from_slice(&chunk[..take]);
            if nul.is_some() {
                return Ok(out);
            }
            pos += take as u64;
        }
    }

    /// The window's bytes from `at` on: at least one, else an error.
    fn chunk(&mut self, at: u64) -> Result<&[u8], Unreadable> {
        let end = self.start + self.buf.len() as u64;
        if !(self.start <= at && at < end) {
            self.fill(at)?;
        }
        Ok(&self.buf[(at - self.start) as usize..])
    }

    /// Read the window at `at`: to the end of its page, then whole pages, up to
    /// the first that cannot be read.
    fn fill(&mut self, at: u64) -> Result<(), Unreadable> {
        let mut remote = Vec::with_capacity(WINDOW_PAGES);
        let first_end = (at / PAGE + 1) * PAGE;
        remote.push(RemoteIoVec {
            base: at as usize,
            len: (first_end - at) as usize,
        });
        for i in 0..WINDOW_PAGES as u64 - 1 {
            let Some(base) = first_end.checked_add(i * PAGE) else {
                break;
            };
            remote.push(RemoteIoVec {
                base: base as usize,
                len: PAGE as usize,
            });
        }
        let want: usize = remote.iter().map(|r| r.len).sum();
        self.buf.clear();
        self.buf.resize(want, 0);
        let mut local = [IoSliceMut::new(&mut self.buf)];
        let n = match process_vm_readv(self.pid, &mut local, &remote) {
            Ok(n) => n,
            Err(Errno::ESRCH) => return Err(Unreadable::Gone),
            Err(_) => 0,
        };
        self.buf.truncate(n);
        self.start = at;
        if n == 0 {
            return Err(Unreadable::Errno(libc::EFAULT));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    fn own() -> Remote {
        Remote::new(std::process::id())
    }

    #[test]
    fn reads_an_exec_of_this_process() {
        let path = CString::new("/bin/true").unwrap();
        let a: Vec<CString> = ["true", "x"]
            .iter()
            .map(|s| CString::new(*s).unwrap())
            .collect();
        let e = [CString::new("A=1").unwrap()];
        let mut av: Vec<*const libc::c_char> = a.iter().map(|c| c.as_ptr()).collect();
        av.push(std::ptr::null());
        let mut ev: Vec<*const libc::c_char> = e.iter().map(|c| c.as_ptr()).collect();
        ev.push(std::ptr::null());
        let got = own()
            .exec_args(path.as_ptr() as u64, av.as_ptr() as u64, ev.as_ptr() as u64)
            .unwrap();
        assert_eq!(got.path, b"/bin/true");
        assert_eq!(got.argv, vec![b"true".to_vec(), b"x".to_vec()]);
        assert_eq!(got.env, vec![b"A=1".to_vec()]);
    }

    #[test]
    fn a_bad_pointer_is_efault_and_a_null_array_is_empty() {
        let path = CString::new("/bin/true").unwrap();
        assert_eq!(
            own().exec_args(8, 0, 0).unwrap_err(),
            Unreadable::Errno(libc::EFAULT)
        );
        let got = own().exec_args(path.as_ptr() as u64, 0, 0).unwrap();
        assert!(got.argv.is_empty() && got.env.is_empty());
        let bad = [16usize as *const libc::c_char, std::ptr::null()];
        assert_eq!(
            own()
                .exec_args(path.as_ptr() as u64, bad.as_ptr() as u64, 0)
                .unwrap_err(),
            Unreadable::Errno(libc::EFAULT)
        );
    }

    #[test]
    fn a_string_past_the_kernels_limit_is_e2big() {
        let long = CString::new(vec![b'a'; MAX_ARG_STRLEN]).unwrap();
        let path = CString::new("/bin/true").unwrap();
        let av = [long.as_ptr(), std::ptr::null()];
        assert_eq!(
            own()
                .exec_args(path.as_ptr() as u64, av.as_ptr() as u64, 0)
                .unwrap_err(),
            Unreadable::Errno(libc::E2BIG)
        );
        let ok = CString::new(vec![b'a'; MAX_ARG_STRLEN - 1]).unwrap();
        let av = [ok.as_ptr(), std::ptr::null()];
        let got = own()
            .exec_args(path.as_ptr() as u64, av.as_ptr() as u64, 0)
            .unwrap();
        assert_eq!(got.argv[0].len(), MAX_ARG_STRLEN - 1);
    }
}
