//! The `execvp` family's search for a program, as glibc's `__execvpe_common` does
//! it, over an exec callback: libenvshim.so runs it with the real `execve` (after
//! the policy chose the arrays), and the tests below run it with a fake, so the
//! search's rules are checked as a unit as well as end to end (Bear's `Executor`
//! is the model).
//!
//! The rules, kept exactly:
//! - an empty name is ENOENT; a name longer than `NAME_MAX` is ENAMETOOLONG;
//! - a name with `/` is executed as it is;
//! - otherwise each element of `PATH` (the calling process's, or `/bin:/usr/bin`)
//!   is tried in order, an empty element meaning the current directory;
//! - ENOENT, ESTALE, ENOTDIR, ENODEV and ETIMEDOUT go on to the next element;
//!   EACCES goes on too, and is what the search reports if nothing ran; any other
//!   error stops the search;
//! - ENOEXEC (a file the kernel cannot run) runs the file with `/bin/sh` when the
//!   caller asks for that (`execvp`, not `posix_spawnp`);
//! - glibc's quirk: an element of `PATH_MAX` bytes or more is skipped, and the
//!   search tries an empty element (the current directory) in its place, unless it
//!   was the last.

/// The errno values the search tells apart (Linux's; `envpolicy`'s tests check
/// them against the C library's).
pub mod errno {
    pub const ENOENT: i32 = 2;
    pub const ENOEXEC: i32 = 8;
    pub const EACCES: i32 = 13;
    pub const EFAULT: i32 = 14;
    pub const ENODEV: i32 = 19;
    pub const ENOTDIR: i32 = 20;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ETIMEDOUT: i32 = 110;
    pub const ESTALE: i32 = 116;
}

/// Linux's `PATH_MAX` and `NAME_MAX`.
pub const PATH_MAX: usize = 4096;
pub const NAME_MAX: usize = 255;

/// Room a candidate path needs: an element shorter than `PATH_MAX`, a `/`, the
/// name and a NUL.
pub const CANDIDATE_BUF: usize = PATH_MAX + NAME_MAX + 2;

/// glibc's default search path when `PATH` is unset (`_CS_PATH`).
pub const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// How the callback is asked to run a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// `execve` of the candidate itself.
    Direct,
    /// `/bin/sh CANDIDATE ARGS...`, after the direct exec said ENOEXEC.
    Script,
}

/// Search for `file` (without its NUL) along `path` (the value of `PATH`, or
/// [`DEFAULT_PATH`]), calling `exec` with each NUL-terminated candidate, built in
/// `buf` (at least [`CANDIDATE_BUF`] bytes). `exec` returns only when the exec
/// failed, with its errno; so does this, with the errno to report.
pub fn search(
    file: &[u8],
    path: &[u8],
    exec_script: bool,
    buf: &mut [u8],
    mut exec: impl FnMut(&[u8], Run) -> i32,
) -> i32 {
    let mut run = |cand: &[u8]| {
        let e = exec(cand, Run::Direct);
        if e == errno::ENOEXEC && exec_script {
            exec(cand, Run::Script)
        } else {
            e
        }
    };
    if file.is_empty() {
        return errno::ENOENT;
    }
    if file.contains(&b'/') {
        return match candidate(buf, b"", file) {
            Some(cand) => run(cand),
            None => errno::ENAMETOOLONG,
        };
    }
    if file.len() > NAME_MAX {
        return errno::ENAMETOOLONG;
    }
    // glibc measures PATH with strnlen(PATH_MAX - 1), plus one.
    let path_len = path.len().min(PATH_MAX - 1) + 1;
    let mut got_eacces = false;
    let mut last = errno::ENOENT;
    let mut rest = path;
    loop {
        let colon = crate::bytes::memchr(b':', rest);
        let element = rest.get(..colon.unwrap_or(rest.len())).unwrap_or(&[]);
        // After this element: the rest from its ':' on, or nothing.
        let after = colon.and_then(|c| rest.get(c..));
        if element.len() >= path_len {
            match after {
                // The next round starts at the ':', which reads as an empty element.
                Some(a) => rest = a,
                None => break,
            }
            continue;
        }
        let Some(cand) = candidate(buf, element, file) else {
            return errno::ENAMETOOLONG;
        };
        last = run(cand);
        match last {
            errno::EACCES => got_eacces = true,
            errno::ENOENT | errno::ESTALE | errno::ENOTDIR | errno::ENODEV | errno::ETIMEDOUT => {}
            other => return other,
        }
        match after.and_then(|a| a.get(1..)) {
            Some(next) => rest = next,
            None => break,
        }
    }
    if got_eacces {
        errno::EACCES
    } else {
        last
    }
}

/// `dir/file` (just `file` for an empty `dir`) with its NUL, in `buf`.
fn candidate<'b>(buf: &'b mut [u8], dir: &[u8], file: &[u8]) -> Option<&'b [u8]> {
    let slash = usize::from(!dir.is_empty());
    let len = dir.len() + slash + file.len();
    let out = buf.get_mut(..len + 1)?;
    let (d, rest) = out.split_at_mut(dir.len());
    d.copy_from_slice(dir);
    let (s, rest) = rest.split_at_mut(slash);
    s.fill(b'/');
    let (f, nul) = rest.split_at_mut(file.len());
    f.copy_from_slice(file);
    nul.fill(0);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidates tried (without NUL, marked `sh:` for a script run) and the
    /// errno reported, with `answer` giving each candidate's errno.
    fn trace(
        file: &str,
        path: &str,
        script: bool,
        answer: impl Fn(&str, Run) -> i32,
    ) -> (Vec<String>, i32) {
        let mut buf = [0u8; CANDIDATE_BUF];
        let mut tried = Vec::new();
        let e = search(file.as_bytes(), path.as_bytes(), script, &mut buf, |c, run| {
            let (body, nul) = c.split_at(c.len() - 1);
            assert_eq!(nul, b"\0");
            let s = String::from_utf8(body.to_vec()).unwrap();
            tried.push(match run {
                Run::Direct => s.clone(),
                Run::Script => format!("sh:{s}"),
            });
            answer(&s, run)
        });
        (tried, e)
    }

    const MISSING: fn(&str, Run) -> i32 = |_, _| errno::ENOENT;

    #[test]
    fn path_elements_in_order_empty_meaning_the_working_directory() {
        let (tried, e) = trace("ls", "/a::/b:", false, MISSING);
        assert_eq!(tried, ["/a/ls", "ls", "/b/ls", "ls"]);
        assert_eq!(e, errno::ENOENT);
    }

    #[test]
    fn eacces_is_reported_only_when_nothing_ran() {
        let answer = |c: &str, _| {
            if c == "/a/ls" {
                errno::EACCES
            } else {
                errno::ENOENT
            }
        };
        let (tried, e) = trace("ls", "/a:/b", false, answer);
        assert_eq!(tried, ["/a/ls", "/b/ls"]);
        assert_eq!(e, errno::EACCES);
        for goes_on in [errno::ESTALE, errno::ENOTDIR, errno::ENODEV, errno::ETIMEDOUT] {
            let (tried, _) = trace("ls", "/a:/b", false, |_, _| goes_on);
            assert_eq!(tried.len(), 2, "errno {goes_on} goes on");
        }
    }

    #[test]
    fn another_error_stops_the_search() {
        let (tried, e) = trace("ls", "/a:/b", false, |_, _| errno::EFAULT);
        assert_eq!(tried, ["/a/ls"]);
        assert_eq!(e, errno::EFAULT);
    }

    #[test]
    fn a_name_with_a_slash_or_no_name() {
        assert_eq!(
            trace("./x", "/a", false, MISSING),
            (vec!["./x".to_string()], errno::ENOENT)
        );
        assert_eq!(trace("", "/a", false, MISSING), (vec![], errno::ENOENT));
        let long = "n".repeat(NAME_MAX + 1);
        assert_eq!(
            trace(&long, "/a", false, MISSING),
            (vec![], errno::ENAMETOOLONG)
        );
    }

    #[test]
    fn enoexec_runs_the_file_with_sh_when_asked() {
        let answer = |_: &str, run| match run {
            Run::Direct => errno::ENOEXEC,
            Run::Script => errno::ENOENT,
        };
        let (tried, _) = trace("s", "/a:/b", true, answer);
        assert_eq!(tried, ["/a/s", "sh:/a/s", "/b/s", "sh:/b/s"]);
        // posix_spawnp does not: ENOEXEC stops the search.
        let (tried, e) = trace("s", "/a:/b", false, answer);
        assert_eq!((tried, e), (vec!["/a/s".to_string()], errno::ENOEXEC));
    }

    #[test]
    fn a_too_long_element_is_skipped_for_the_working_directory() {
        let long = format!("/{}", "d".repeat(PATH_MAX));
        let path = format!("/a:{long}:/b");
        let (tried, _) = trace("ls", &path, false, MISSING);
        assert_eq!(tried, ["/a/ls", "ls", "/b/ls"]);
        let (tried, _) = trace("ls", &format!("/a:{long}"), false, MISSING);
        assert_eq!(tried, ["/a/ls"]);
    }
}
