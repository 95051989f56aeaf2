//! The supervisor's loop: answer every exec of the tree, reap what the tree
//! leaves to it, and end when no process holds the filter.
//!
//! For each notification: read what the target passed to exec
//! ([`super::remote::Remote`]), judge it with the policy
//! ([`envpolicy::supervise::judge`]), check that the notification is still
//! valid, then answer. The check after the read is what makes the `pid` the
//! supervisor read from still the process that is waiting (docs/threat-model.md
//! says what remains).

use super::held::Held;
use super::notify::{self, Notification};
use super::remote::{Remote, Unreadable};
use super::seen::Seen;
use super::{filter, leave_stderr, message, status, Setup};
use crate::journal::Journal;
use envpolicy::compiled::{Mode, Policy};
use envpolicy::outcome::{self, Change, Target};
use envpolicy::supervise::{judged, Verdict};
use envpolicy::unmade::Unmade;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// What the loop keeps between execs: the lines said lately, the lines still
/// being written, and the execs judged unchanged.
pub struct Recall {
    /// By target and text (the program named by file name).
    recent: std::collections::VecDeque<(u32, String)>,
    /// Messages still being written to a stderr that was not ready.
    writers: Vec<std::thread::JoinHandle<()>>,
    /// The execs judged unchanged.
    seen: Seen,
    /// The "ran without" and withheld lines said (each once in the
    /// supervisor's life).
    said_once: std::collections::HashSet<String>,
    /// `--refuse-changes`: never write an exec's environment.
    refuse_changes: bool,
}

impl Recall {
    fn new() -> Recall {
        Recall {
            recent: Default::default(),
            writers: Vec::new(),
            seen: Seen::new(),
            said_once: Default::default(),
            refuse_changes: false,
        }
    }

    /// Enough for the processes of a pipeline searching PATH at once.
    const KEPT: usize = 16;

    /// Whether `text` is new for `pid` (and remember it).
    fn first_time(&mut self, pid: u32, text: &str) -> bool {
        let key = (pid, text.to_string());
        if self.recent.contains(&key) {
            return false;
        }
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(key);
        true
    }
}

/// The errno of a refused exec.
const REFUSED: i32 = libc::EPERM;

/// Serve until the listener has no process left and the command has ended.
pub fn serve(listener: OwnedFd, child: Pid, status_w: OwnedFd, setup: Setup) -> i32 {
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    let sigfd = match SignalFd::with_flags(&chld, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) {
        Ok(s) => s,
        Err(e) => {
            say!("envwrap: --supervise: cannot watch the command: {e}");
            return 1;
        }
    };
    notify::wake_synchronously(listener.as_fd());
    let mut status_w = Some(status_w);
    let mut journal = setup.journal;
    let mut held = Held::new(setup.loaded, setup.mode);
    let mut recall = Recall::new();
    recall.refuse_changes = setup.refuse_changes;
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(sigfd.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        let ev = fds[0].revents().unwrap_or(PollFlags::empty());
        let chld_ready = fds[1].revents().is_some_and(|r| !r.is_empty());
        if chld_ready {
            while let Ok(Some(_)) = sigfd.read_signal() {}
            reap(child, &mut status_w);
        }
        if ev.contains(PollFlags::POLLIN) {
            if let Ok(Some(n)) = notify::receive(listener.as_fd()) {
                answer(listener.as_fd(), &n, &mut held, &mut journal, &mut recall);
            }
        } else if ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR) {
            // No process holds the filter: the command has ended too.
            if status_w.is_some() {
                let _ = waitpid(child, None).map(|ws| end(ws, &mut status_w));
            }
            reap(child, &mut status_w);
            message::finish(std::mem::take(&mut recall.writers));
            return 0;
        }
    }
}

/// Reap every child that has ended; the command's end goes to the foreground.
fn reap(child: Pid, status_w: &mut Option<OwnedFd>) {
    while let Ok(ws) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        match ws.pid() {
            None => return,
            Some(p) if p == child => end(ws, status_w),
            Some(_) => {}
        }
    }
}

fn end(ws: WaitStatus, status_w: &mut Option<OwnedFd>) {
    if let Some(w) = status_w.as_ref() {
        if status::send_end(w, ws) {
            *status_w = None;
            leave_stderr();
        }
    }
}

/// What the target asked for: `execve(path, argv, envp)` or
/// `execveat(dirfd, path, argv, envp, flags)`, as addresses in its memory.
struct NativeExec {
    dirfd: Option<i32>,
    path: u64,
    argv: u64,
    envp: u64,
    flags: u64,
}

/// The exec of a notification; `None` for another ABI (i386, x32), which the
/// supervisor does not read.
fn classify(n: &Notification) -> Option<NativeExec> {
    let (arch, execve, execveat) = filter::NATIVE;
    let a = n.args;
    match (n.arch == arch, n.nr) {
        (true, nr) if nr == execve => Some(NativeExec {
            dirfd: None,
            path: a[0],
            argv: a[1],
            envp: a[2],
            flags: 0,
        }),
        (true, nr) if nr == execveat => Some(NativeExec {
            dirfd: Some(a[0] as i32),
            path: a[1],
            argv: a[2],
            envp: a[3],
            flags: a[4],
        }),
        _ => None,
    }
}

/// Answer one notification. Never leaves one unanswered while its target waits.
fn answer(
    listener: BorrowedFd<'_>,
    n: &Notification,
    held: &mut Held,
    journal: &mut Journal,
    recall: &mut Recall,
) {
    let Some(NativeExec {
        dirfd,
        path,
        argv,
        envp,
        flags,
    }) = classify(n)
    else {
        let text = "refused an exec through a 32-bit system call, which --supervise does \
                        not read";
        refuse(listener, n, text, recall);
        return;
    };
    let mut remote = Remote::new(n.pid);
    let read = remote
        .as_mut()
        .map_err(|e| *e)
        .and_then(|r| r.exec_args(path, argv, envp));
    let args = match read {
        Ok(a) => a,
        Err(Unreadable::Gone) => {
            // Ended, or its memory cannot be opened (a stricter Yama ptrace
            // scope, another user): while it still waits it gets an answer, and
            // the answer for an exec nobody judged is no.
            if notify::still_valid(listener, n.id) {
                let text = "refused an exec whose program and environment the supervisor \
                            cannot read (/proc/PID/mem)";
                refuse(listener, n, text, recall);
            }
            return;
        }
        Err(Unreadable::Errno(e)) => {
            // As execve(2) itself would fail: EFAULT, E2BIG, ENAMETOOLONG.
            if notify::still_valid(listener, n.id) {
                let _ = notify::fail(listener, n.id, e);
            }
            return;
        }
    };
    let program = program_name(n.pid, dirfd, &args.path, flags);
    if held.follow_edit() {
        recall.seen.clear();
    }
    let policy = *held.policy();
    let files = outcome::read_env_files(&policy);
    // The caller's environment is not in the digest, and is read only for an
    // exec not seen before: an exec remembered as unchanged passes bytes
    // another process already passed the same way, whatever its caller holds.
    let digest = recall.seen.digest(&program, &args.argv, &args.env, &files);
    if recall.seen.contains(digest) {
        let _ = notify::allow(listener, n.id);
        return;
    }
    let parent = caller_environment(n.pid);
    let own_memory = || !recall.refuse_changes && owns_its_memory(n.pid);
    let how = envpolicy::supervise::How {
        mode: held.mode,
        own_memory: &own_memory,
    };
    let envpolicy::supervise::Judged {
        verdict,
        loud_kept,
        refusal_line,
    } = judged(
        &policy, how, &program, &args.argv, &args.env, &parent, &files,
    );
    // What is said of this exec hides the credential values of both its
    // environments, under either layer, wherever they stand (a variable's
    // name included).
    let managed = envpolicy::managed::Managed::for_process().policy();
    let policies: Vec<&envpolicy::compiled::Policy<'_>> =
        std::iter::once(&policy).chain(managed.as_ref()).collect();
    let _answering = (verdict != Verdict::Unchanged)
        .then(|| crate::value::Answering::new(&[&args.env, &parent], &policies));
    // (An exec with a warning of its own is judged again each time: the shim
    // says it at every exec, and so does the supervisor, once a process.)
    if verdict == Verdict::Unchanged && loud_kept.is_empty() {
        recall.seen.insert(digest);
    }
    // From here on, the program as every message and record names it: the
    // script an interpreter runs, through launchers (envpolicy::identity).
    let program = {
        let argv: Vec<&[u8]> = args.argv.iter().map(Vec::as_slice).collect();
        envpolicy::identity::of(&program, &argv).name.to_vec()
    };
    if !matches!(
        verdict,
        Verdict::Unchanged | Verdict::Audited(_) | Verdict::RunsWithout(_)
    ) {
        if let Some(e) = missing(n.pid, dirfd, &args.path) {
            // Not there: what execve(2) would say, and no refusal of a file that
            // is not run (a shell's PATH search tries every directory).
            if notify::still_valid(listener, n.id) {
                let _ = notify::fail(listener, n.id, e);
            }
            return;
        }
    }
    for c in &loud_kept {
        // A loud change that is no difference of the exec (a grant's use, a
        // refused value), as the shim says it at the exec.
        let source = outcome::source_of(c.layer, policy.source());
        let text = outcome::loud_line(c, &program, &c.why, source);
        log_and_say(
            n,
            listener,
            c,
            &program,
            text,
            Often::PerProcess,
            journal,
            recall,
        );
    }
    match verdict {
        Verdict::Unchanged => {
            let _ = notify::allow(listener, n.id);
        }
        Verdict::Audited(changes) => {
            for c in &changes {
                journal.record(&program, c, Mode::Audit);
            }
            if let Some(c) = changes.first() {
                let more = changes.len() - 1;
                let text = unmade(Unmade::Audited { more }, c, &program, &policy);
                if notify::still_valid(listener, n.id) && recall.first_time(n.pid, &text) {
                    message::tell(n.pid, &format!("envwrap: {text}\n"), &mut recall.writers);
                }
            }
            let _ = notify::allow(listener, n.id);
        }
        Verdict::Refused(c) => {
            journal.record(&program, &c, Mode::Enforce);
            let text = match c.target {
                Target::Env => unmade(Unmade::Receives, &c, &program, &policy),
                // An argument or the path: the line every front end writes.
                _ => refusal_line.unwrap_or_default(),
            };
            refuse(listener, n, &text, recall);
        }
        Verdict::WouldChange(c) => {
            journal.record(&program, &c, Mode::Enforce);
            let text = unmade(Unmade::WouldChange, &c, &program, &policy);
            refuse(listener, n, &text, recall);
        }
        v @ (Verdict::RunsWithout(_) | Verdict::UnchangedDespite(_)) => {
            say_not_made(n, listener, &v, &program, &policy, journal, recall);
            let _ = notify::allow(listener, n.id);
        }
        Verdict::Stripped(s) => {
            // (Read through it above: it is there.)
            let Ok(mut remote) = remote else {
                let _ = notify::fail(listener, n.id, REFUSED);
                return;
            };
            let kept: Vec<u64> = args
                .env_ptrs
                .iter()
                .enumerate()
                .filter(|(i, _)| !s.removed.iter().any(|r| r.index == *i))
                .map(|(_, &p)| p)
                .collect();
            // Its memory opened, then valid: the pid still named the process
            // that waits when the file was opened, whose memory it holds (a
            // write to a process that ended fails).
            let opened = remote.open();
            if !notify::still_valid(listener, n.id) {
                return;
            }
            if opened.is_err() || remote.write_array(envp, &kept).is_err() {
                // Memory it cannot write: the exec is one the supervisor
                // cannot change after all, said as every such refusal is.
                let c = &s.removed[0].change;
                journal.record(&program, c, Mode::Enforce);
                refuse(
                    listener,
                    n,
                    &unmade(Unmade::WouldChange, c, &program, &policy),
                    recall,
                );
                return;
            }
            say_stripped(n, &s, &program, &policy, journal, recall);
            say_not_made(n, listener, &s.then, &program, &policy, journal, recall);
            let _ = notify::allow(listener, n.id);
        }
    }
}

/// The environment the target process started with (`/proc/PID/environ`,
/// which a static program's `setenv` does not change): the caller's side of
/// rule 4. Empty when it cannot be read.
fn caller_environment(pid: u32) -> Vec<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|e| !e.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .unwrap_or_default()
}

/// ENOENT or ENOTDIR when the file the target names is not there, seen from
/// the target: its root, its working directory, or the directory `dirfd` holds.
fn missing(pid: u32, dirfd: Option<i32>, path: &[u8]) -> Option<i32> {
    use std::os::unix::ffi::OsStrExt;
    if path.is_empty() {
        return None;
    }
    let base = match (path.first(), dirfd) {
        (Some(b'/'), _) => format!("/proc/{pid}/root"),
        (_, Some(fd)) if fd != libc::AT_FDCWD => format!("/proc/{pid}/fd/{fd}/"),
        _ => format!("/proc/{pid}/cwd/"),
    };
    let mut full = base.into_bytes();
    full.extend_from_slice(path);
    match std::fs::metadata(std::ffi::OsStr::from_bytes(&full)) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            e.raw_os_error()
        }
        _ => None,
    }
}

/// The program's name for the policy: the path given to exec; for
/// `fexecve` (an empty path with AT_EMPTY_PATH) the file the fd names.
fn program_name(pid: u32, dirfd: Option<i32>, path: &[u8], flags: u64) -> Vec<u8> {
    match dirfd {
        Some(fd) if path.is_empty() && flags & libc::AT_EMPTY_PATH as u64 != 0 => {
            std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
                .map(|p| std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()).to_vec())
                .unwrap_or_default()
        }
        // A program exec'd through its descriptor's name (bwrap runs the
        // sandboxed command as `/proc/self/fd/N`): the file it names.
        _ => fd_path(path)
            .and_then(|fd| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok())
            .map(|p| std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()).to_vec())
            .unwrap_or_else(|| path.to_vec()),
    }
}

/// The descriptor a path of `/proc/self/fd/N` or `/dev/fd/N` names.
fn fd_path(path: &[u8]) -> Option<u32> {
    let n = path
        .strip_prefix(b"/proc/self/fd/")
        .or_else(|| path.strip_prefix(b"/dev/fd/"))?;
    std::str::from_utf8(n).ok()?.parse().ok()
}

/// The last component of a path: a PATH search names one program many ways.
fn file_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// How often a line about an exec is said.
#[derive(Clone, Copy)]
enum Often {
    /// Once per process: a refusal, a change made or not made.
    PerProcess,
    /// Once in the supervisor's life: a missing entry, not repeated at every
    /// exec of a loop.
    InLife,
}

/// Log `c`, a change of the exec of `program`, and say `text` (the line for
/// it, when it has one) on the target's standard error, as `often` allows.
#[allow(clippy::too_many_arguments)]
fn log_and_say(
    n: &Notification,
    listener: BorrowedFd<'_>,
    c: &Change,
    program: &[u8],
    text: Option<String>,
    often: Often,
    journal: &mut Journal,
    recall: &mut Recall,
) {
    journal.record(program, c, Mode::Enforce);
    let Some(text) = text else { return };
    if !notify::still_valid(listener, n.id) {
        return;
    }
    let first = match often {
        Often::PerProcess => recall.first_time(n.pid, &text),
        Often::InLife => recall.said_once.insert(text.clone()),
    };
    if first {
        message::tell(n.pid, &format!("envwrap: {text}\n"), &mut recall.writers);
    }
}

/// Log and say a change the supervisor let the exec run without making
/// (`v`: it runs without an entry, said once in its life, or unchanged under
/// `[supervise] changes = "audit"`, said once per process); nothing for any
/// other verdict.
fn say_not_made(
    n: &Notification,
    listener: BorrowedFd<'_>,
    v: &Verdict,
    program: &[u8],
    policy: &Policy<'_>,
    journal: &mut Journal,
    recall: &mut Recall,
) {
    let (how, often, c) = match v {
        Verdict::RunsWithout(c) => (Unmade::RunsWithout, Often::InLife, c),
        Verdict::UnchangedDespite(c) => (Unmade::RunsUnchanged, Often::PerProcess, c),
        _ => return,
    };
    let text = unmade(how, c, program, policy);
    log_and_say(n, listener, c, program, Some(text), often, journal, recall);
}

/// What the shim says of the entries it removes, said of those the supervisor
/// removed: a loud change's line ("refused GH_TOKEN for bwrap: REASON (policy
/// ...)", envpolicy_core::loud), once per process; a credential withheld quietly, the withheld line,
/// once per name in the supervisor's life; every change logged.
fn say_stripped(
    n: &Notification,
    s: &envpolicy::supervise::Stripped,
    program: &[u8],
    policy: &Policy<'_>,
    journal: &mut Journal,
    recall: &mut Recall,
) {
    for envpolicy::supervise::Removed {
        change: c,
        withheld,
        ..
    } in &s.removed
    {
        journal.record(program, c, Mode::Enforce);
        let name = c.name.as_deref().unwrap_or("an entry");
        let source = outcome::source_of(c.layer, policy.source());
        let loud = c
            .loud
            .then(|| outcome::loud_line(c, program, &c.why, source));
        let text = if let Some(Some(line)) = loud {
            line
        } else if *withheld && recall.said_once.insert(format!("withheld {name}")) {
            envpolicy::outcome::withheld_line(name.as_bytes(), file_name(program))
        } else {
            continue;
        };
        if recall.first_time(n.pid, &text) {
            message::tell(n.pid, &format!("envwrap: {text}\n"), &mut recall.writers);
        }
    }
}

/// Is the memory of the process `pid` (a thread's id) its own: shared with
/// no other process, so that a write to its envp array changes no one else's
/// environment? A process that shares it was made by `clone(CLONE_VM)` (a
/// `vfork` or `posix_spawn` child, Go's `os/exec`) from one that does, so it
/// is the target's parent, a sibling (`CLONE_PARENT`), or a child; each is
/// compared with `kcmp(KCMP_VM)`. Anything unreadable: not proven own.
fn owns_its_memory(pid: u32) -> bool {
    let Some(ppid) = parent_of(pid) else {
        return false;
    };
    let mut others = vec![ppid];
    others.extend(children_of(ppid).into_iter().filter(|&c| c != pid));
    others.extend(children_of(pid));
    others.into_iter().all(|other| {
        // SAFETY: kcmp(2) takes two pids and a type; KCMP_VM compares the
        // processes' memory and reads nothing of ours.
        let r = unsafe { libc::syscall(libc::SYS_kcmp, pid, other, KCMP_VM, 0, 0) };
        match r {
            0 => false,
            r if r > 0 => true,
            // Gone since: it shares nothing any more.
            _ => std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
        }
    })
}

/// `kcmp(2)`'s type for the memory of two processes.
const KCMP_VM: libc::c_long = 1;

/// The parent of `pid` (`PPid:` of /proc/PID/status).
fn parent_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The children of every thread of `pid` (/proc/PID/task/*/children).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The line for `c`, a change the supervisor cannot make, by the layer of
/// `policy` (the user layer's policy) that made it: the core's words
/// ([`envpolicy::unmade`]).
fn unmade(how: Unmade, c: &Change, program: &[u8], policy: &Policy<'_>) -> String {
    let source = outcome::source_of(c.layer, policy.source());
    outcome::unmade_line(how, c, program, source)
}

/// Fail the exec with EPERM and say why on the target's own stderr, once: a
/// shell's PATH search that finds the program twice (`/usr/bin` and `/bin` on a
/// merged /usr) gets one line.
fn refuse(listener: BorrowedFd<'_>, n: &Notification, text: &str, recall: &mut Recall) {
    if !notify::still_valid(listener, n.id) {
        return;
    }
    if recall.first_time(n.pid, text) {
        message::tell(n.pid, &format!("envwrap: {text}\n"), &mut recall.writers);
    }
    let _ = notify::fail(listener, n.id, REFUSED);
}
