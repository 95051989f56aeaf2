//! Reading an exec's path, argv and envp out of the target's memory, with
//! process_vm_readv(2) ([`Remote`] says why), and writing its envp array
//! through `/proc/PID/mem`.
//!
//! The reads follow the kernel's own limits, so that the supervisor fails an
//! exec exactly where execve(2) would: an unreadable pointer is EFAULT, a
//! string longer than `MAX_ARG_STRLEN` or arguments past the total the kernel
//! takes are E2BIG, a path past `PATH_MAX` is ENAMETOOLONG.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// One string of argv or envp (the kernel's `MAX_ARG_STRLEN`, 32 pages).
const MAX_ARG_STRLEN: usize = 32 * 4096;
/// All of argv and envp with their pointers: more than execve(2) takes under
/// any stack limit (a quarter of the limit, at most three quarters of 8 MiB).
const MAX_TOTAL: usize = 8 << 20;
/// `PATH_MAX`, with its NUL.
const PATH_MAX: usize = 4096;
const PAGE: u64 = 4096;

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
    /// The pointers of envp, one per entry of `env` (without the NULL).
    pub env_ptrs: Vec<u64>,
}

/// A reader of one target's memory, a page at a time: each page it touches
/// is read once (the strings of an environment a program built sit anywhere in
/// its heap, so reading ahead mostly copies what is never looked at).
///
/// The pages are read with process_vm_readv(2), the pages an exec names in
/// two calls (the pages of the path and of both arrays, then every page a
/// string of the arrays starts on): no file to open and close for a process
/// the supervisor sees once. It pins what it reads, so an anonymous page a
/// fork left shared is copied in the child it is read from (which is about to
/// exec, and drops its memory then); and it reads only what the target itself
/// may read, as execve(2) does. Where it is refused (a seccomp profile, a
/// kernel without it), `/proc/PID/mem` as before.
pub struct Remote {
    pid: u32,
    /// `/proc/PID/mem`, when process_vm_readv(2) is refused, or for a write.
    mem: Option<File>,
    /// Pages read so far: address, bytes (fewer than a page when the next page
    /// of the range is not mapped: a read stops there).
    pages: Vec<(u64, Vec<u8>)>,
    /// Bytes of argv and envp read so far, pointers included.
    total: usize,
}

/// The most pages one process_vm_readv(2) is given (its IOV_MAX).
const BATCH: usize = 1024;

impl Remote {
    /// A reader of the memory of `pid` (a thread's id). Nothing is opened yet:
    /// [`Remote::exec_args`] says `Gone` when the target has ended or its
    /// memory cannot be read.
    pub fn new(pid: u32) -> Result<Remote, Unreadable> {
        Ok(Remote {
            pid,
            mem: None,
            pages: Vec::new(),
            total: 0,
        })
    }

    /// Open `/proc/PID/mem`, for writing too where the kernel allows it
    /// ([`Remote::write_array`]): the file holds the memory of the process it
    /// was opened on, so a write through it never reaches a process that took
    /// the pid later. A caller that writes opens it first, then checks that
    /// the notification is still valid, then writes.
    pub fn open(&mut self) -> Result<(), Unreadable> {
        if self.mem.is_some() {
            return Ok(());
        }
        let path = format!("/proc/{}/mem", self.pid);
        let mem = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .or_else(|_| File::open(&path))
            .map_err(|_| Unreadable::Gone)?;
        self.mem = Some(mem);
        Ok(())
    }

    /// Read `path`, then the NULL-terminated arrays `argv` and `envp`.
    pub fn exec_args(&mut self, path: u64, argv: u64, envp: u64) -> Result<ExecArgs, Unreadable> {
        self.prefetch(&[path, argv, envp])?;
        let mut starts = self.peek_array(argv);
        starts.extend(self.peek_array(envp));
        self.prefetch(&starts)?;
        let path = self.string(path, PATH_MAX, libc::ENAMETOOLONG)?;
        let (argv, _) = self.array(argv)?;
        let (env, env_ptrs) = self.array(envp)?;
        Ok(ExecArgs {
            path,
            argv,
            env,
            env_ptrs,
        })
    }

    /// The pointers of the array at `at`, as far as they can be read (at most
    /// `BATCH`), to read the pages of their strings at once. Only a read
    /// ahead: [`Remote::array`] reads the array again, with the kernel's
    /// limits, from the pages kept.
    fn peek_array(&mut self, at: u64) -> Vec<u64> {
        let mut out = Vec::new();
        if at == 0 {
            return out;
        }
        let mut slot = at;
        while out.len() < BATCH {
            match self.word(slot) {
                Ok(0) | Err(_) => break,
                Ok(p) => out.push(p),
            }
            let Some(next) = slot.checked_add(8) else {
                break;
            };
            slot = next;
        }
        out
    }

    /// Read the pages of the addresses `at` not read yet, in as few
    /// process_vm_readv(2) calls as they take; a page that cannot be read is
    /// left to [`Remote::read_page`]. `Gone` when the target has ended, or
    /// its memory can be read neither this way nor through `/proc/PID/mem`.
    fn prefetch(&mut self, at: &[u64]) -> Result<(), Unreadable> {
        if self.mem.is_some() {
            return Ok(());
        }
        let mut want: Vec<u64> = at
            .iter()
            .filter(|&&a| a != 0)
            .map(|&a| a / PAGE * PAGE)
            .filter(|p| !self.pages.iter().any(|(q, _)| q == p))
            .collect();
        want.sort_unstable();
        want.dedup();
        let mut start = 0;
        while start < want.len() {
            let end = want.len().min(start + BATCH);
            let mut bufs: Vec<Vec<u8>> = vec![vec![0u8; PAGE as usize]; end - start];
            let got = match self.readv(&want[start..end], &mut bufs) {
                Ok(n) => n / PAGE as usize,
                Err(libc::EFAULT) => 0,
                Err(libc::ESRCH) => return Err(Unreadable::Gone),
                // Refused (EPERM, ENOSYS): the file, as before.
                Err(_) => return self.open(),
            };
            for (page, bytes) in want[start..].iter().zip(bufs).take(got) {
                self.pages.push((*page, bytes));
            }
            // The page after the last read could not be: skip it.
            start += got + 1;
        }
        Ok(())
    }

    /// process_vm_readv(2) of whole pages, one buffer of a page each: the
    /// bytes read, or the errno.
    fn readv(&self, pages: &[u64], bufs: &mut [Vec<u8>]) -> Result<usize, i32> {
        let local: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let remote: Vec<libc::iovec> = pages
            .iter()
            .map(|&p| libc::iovec {
                iov_base: p as *mut libc::c_void,
                iov_len: PAGE as usize,
            })
            .collect();
        loop {
            // SAFETY: every local iovec points at a live buffer of `iov_len`
            // bytes that nothing else borrows during the call; the remote
            // ones are addresses in the target, which the kernel checks.
            let n = unsafe {
                libc::process_vm_readv(
                    self.pid as libc::pid_t,
                    local.as_ptr(),
                    local.len() as libc::c_ulong,
                    remote.as_ptr(),
                    remote.len() as libc::c_ulong,
                    0,
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                e => return Err(e.unwrap_or(libc::EFAULT)),
            }
        }
    }

    /// A NULL-terminated array of strings, and its pointers; a NULL array is
    /// empty, as the kernel takes it.
    fn array(&mut self, at: u64) -> Result<(Vec<Vec<u8>>, Vec<u64>), Unreadable> {
        let (mut out, mut ptrs) = (Vec::new(), Vec::new());
        if at == 0 {
            return Ok((out, ptrs));
        }
        let mut slot = at;
        loop {
            let p = self.word(slot)?;
            self.charge(8)?;
            if p == 0 {
                return Ok((out, ptrs));
            }
            let s = self.string(p, MAX_ARG_STRLEN, libc::E2BIG)?;
            self.charge(s.len() + 1)?;
            out.push(s);
            ptrs.push(p);
            slot = slot.checked_add(8).ok_or(Unreadable::Errno(libc::EFAULT))?;
        }
    }

    /// Write `ptrs` and a NULL over the pointer array at `at` (which held at
    /// least as many): an envp array made shorter in place. One write, of
    /// memory the exec reads when it continues.
    /// Needs [`Remote::open`] first.
    pub fn write_array(&self, at: u64, ptrs: &[u64]) -> std::io::Result<()> {
        let Some(mem) = &self.mem else {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        };
        let bytes: Vec<u8> = ptrs
            .iter()
            .chain(std::iter::once(&0))
            .flat_map(|p| p.to_ne_bytes())
            .collect();
        match mem.write_at(&bytes, at)? {
            n if n == bytes.len() => Ok(()),
            _ => Err(std::io::Error::from_raw_os_error(libc::EFAULT)),
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

    /// The bytes from `at` to the end of its page: at least one, else EFAULT.
    fn chunk(&mut self, at: u64) -> Result<&[u8], Unreadable> {
        let page = at / PAGE * PAGE;
        let i = match self.pages.iter().position(|(p, _)| *p == page) {
            Some(i) => i,
            None => {
                let bytes = self.read_page(page);
                self.pages.push((page, bytes));
                self.pages.len() - 1
            }
        };
        let bytes = &self.pages[i].1;
        let off = (at - page) as usize;
        if off >= bytes.len() {
            return Err(Unreadable::Errno(libc::EFAULT));
        }
        Ok(&bytes[off..])
    }

    /// One page; empty when it is not mapped (EFAULT, EIO) or the target is
    /// gone.
    fn read_page(&mut self, page: u64) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE as usize];
        let Some(mem) = &self.mem else {
            let mut bufs = [buf];
            return match self.readv(&[page], &mut bufs) {
                Ok(n) => {
                    let [mut buf] = bufs;
                    buf.truncate(n);
                    buf
                }
                Err(_) => Vec::new(),
            };
        };
        loop {
            match mem.read_at(&mut buf, page) {
                Ok(n) => {
                    buf.truncate(n);
                    return buf;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    fn own() -> Remote {
        Remote::new(std::process::id()).unwrap()
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
