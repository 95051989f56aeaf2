//! The relay: the command's output to envwrap's streams, masked, and envwrap's
//! keys to the command's terminal, until the command has ended and its output
//! with it. Signals arrive on a signalfd, in the same loop: the command's end
//! or stop, a window-size change, and the signals passed on to the command.

use super::terminal::{self, Raw};
use super::Ends;
use envpolicy::mask::{Masker, Stream};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{self, Pid};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// The ends the command's output comes from.
pub struct Outputs {
    pub terminal: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// How long the command's terminal may stay quiet after the command ended
/// before the relay stops reading it: a process the command left behind may
/// hold it open for good.
const LINGER: Duration = Duration::from_millis(100);

/// Bytes read at a time.
const CHUNK: usize = 64 * 1024;

/// One output of the command, masked into one of envwrap's streams.
struct Source<'m> {
    fd: OwnedFd,
    stream: Stream<'m>,
    /// envwrap's stream it goes to: 1 or 2.
    to: i32,
    /// When the bytes held back last grew or came (their wait starts there).
    since: Option<Instant>,
    open: bool,
}

impl Source<'_> {
    /// Read what there is; pass it on masked. False at its end.
    fn read(&mut self, buf: &mut [u8], out: &mut Vec<u8>) -> bool {
        match unistd::read(&self.fd, buf) {
            Ok(0) | Err(Errno::EIO) => {
                self.end(out);
                false
            }
            Ok(n) => {
                self.stream.push(&buf[..n], out);
                self.since = (self.stream.held() > 0).then(Instant::now);
                write_all(self.to, out);
                true
            }
            Err(Errno::EAGAIN | Errno::EINTR) => true,
            Err(_) => {
                self.end(out);
                false
            }
        }
    }

    /// The output ended: what was held back goes.
    fn end(&mut self, out: &mut Vec<u8>) {
        self.stream.flush(out);
        write_all(self.to, out);
        self.open = false;
    }

    /// When what is held back must go, if anything is.
    fn deadline(&self) -> Option<Instant> {
        self.since.map(|s| s + self.stream.hold_time())
    }
}

/// The signals the relay takes on its signalfd.
fn watched() -> SigSet {
    let mut watched = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGWINCH,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ] {
        watched.add(s);
    }
    watched
}

/// Hold the relay's signals from before the fork, so that none is lost
/// between the fork and the signalfd (a command that ends at once would
/// leave the relay waiting for good). Returns the mask to give the command.
pub fn hold_signals() -> SigSet {
    let mut old = SigSet::empty();
    let _ = signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&watched()), Some(&mut old));
    old
}

/// Relay until the command (`child`) ended and its output with it. Returns its
/// raw wait status. The signals are held ([`hold_signals`]).
pub fn run(masker: &Masker, outputs: Outputs, ends: &Ends, child: Pid) -> i32 {
    let watched = watched();
    let signals =
        SignalFd::with_flags(&watched, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK).ok();
    let keys_to = outputs
        .terminal
        .as_ref()
        .filter(|_| ends.stdin_tty)
        .and_then(|t| t.try_clone().ok());
    let raw = outputs.terminal.as_ref().map(|_| Raw::enter(ends));
    let source = |fd: OwnedFd, to| Source {
        fd,
        stream: Stream::new(masker),
        to,
        since: None,
        open: true,
    };
    let mut sources: Vec<Source<'_>> = Vec::new();
    let on_terminal = if ends.stdout_tty { 1 } else { 2 };
    let terminal_at = outputs.terminal.as_ref().map(|_| 0);
    sources.extend(outputs.terminal.map(|fd| source(fd, on_terminal)));
    sources.extend(outputs.stdout.map(|fd| source(fd, 1)));
    sources.extend(outputs.stderr.map(|fd| source(fd, 2)));
    for s in &sources {
        set_nonblocking(s.fd.as_fd());
    }
    let mut loop_state = Loop {
        child,
        status: None,
        ended_at: None,
        keys: Vec::new(),
        keys_open: keys_to.is_some(),
        told_to_stop: false,
    };
    let mut buf = vec![0u8; CHUNK];
    let mut out = Vec::with_capacity(CHUNK * 2);
    loop {
        if sources.iter().all(|s| !s.open) && loop_state.status.is_none() {
            // Every output ended: the command's end may be the next thing.
            loop_state.reap(keys_to.as_ref(), raw.as_ref());
        }
        if loop_state.told_to_stop && loop_state.status.is_some() {
            // What was read goes out; what a process left behind still
            // writes is not waited for.
            for s in sources.iter_mut().filter(|s| s.open) {
                s.end(&mut out);
            }
        }
        if loop_state.done(&sources) {
            break;
        }
        let timeout = loop_state.timeout(&sources);
        let mut fds: Vec<PollFd<'_>> = Vec::new();
        for s in sources.iter().filter(|s| s.open) {
            fds.push(PollFd::new(s.fd.as_fd(), PollFlags::POLLIN));
        }
        let n_sources = fds.len();
        let stdin = std::io::stdin();
        let keys_wanted = loop_state.keys_open && loop_state.keys.len() < CHUNK;
        if keys_wanted {
            fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
        }
        let keys_pending = !loop_state.keys.is_empty();
        if let (true, Some(t)) = (keys_pending, &keys_to) {
            fds.push(PollFd::new(t.as_fd(), PollFlags::POLLOUT));
        }
        if let Some(s) = &signals {
            fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => break,
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(fds);
        let mut at = 0;
        for (i, s) in sources.iter_mut().enumerate().filter(|(_, s)| s.open) {
            if ready[at] {
                s.read(&mut buf, &mut out);
                // Output after the command's end: the terminal is not quiet yet.
                if Some(i) == terminal_at && loop_state.status.is_some() {
                    loop_state.ended_at = Some(Instant::now());
                }
            }
            at += 1;
        }
        debug_assert_eq!(at, n_sources);
        if keys_wanted {
            if ready[at] {
                loop_state.read_keys(&mut buf);
            }
            at += 1;
        }
        if let (true, Some(t)) = (keys_pending, &keys_to) {
            if ready[at] {
                loop_state.write_keys(t.as_fd());
            }
            at += 1;
        }
        if signals.is_some() && ready[at] {
            if let Some(s) = &signals {
                while let Ok(Some(info)) = s.read_signal() {
                    loop_state.signalled(
                        info.ssi_signo as i32,
                        ends,
                        keys_to.as_ref(),
                        raw.as_ref(),
                    );
                }
            }
        }
        let now = Instant::now();
        for s in sources.iter_mut().filter(|s| s.open) {
            if s.deadline().is_some_and(|d| d <= now) {
                s.stream.flush(&mut out);
                s.since = None;
                write_all(s.to, &mut out);
            }
        }
        loop_state.linger(&mut sources, terminal_at, &mut out);
    }
    drop(raw);
    let _ = signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&watched), None);
    match loop_state.status {
        Some(s) => s,
        None => wait_end(child),
    }
}

/// What the loop knows besides its sources.
struct Loop {
    child: Pid,
    /// The command's raw wait status, once it ended.
    status: Option<i32>,
    /// When it ended, or its terminal last gave output after that.
    ended_at: Option<Instant>,
    /// Keys read from envwrap's stdin, not yet written to the command's terminal.
    keys: Vec<u8>,
    keys_open: bool,
    /// A SIGTERM, SIGHUP or SIGINT came after the command ended: the relay
    /// stops waiting for a process it left behind holding an output.
    told_to_stop: bool,
}

impl Loop {
    /// The command ended and every output with it.
    fn done(&self, sources: &[Source<'_>]) -> bool {
        self.status.is_some() && sources.iter().all(|s| !s.open)
    }

    fn timeout(&self, sources: &[Source<'_>]) -> PollTimeout {
        let now = Instant::now();
        let lingering = self.ended_at.map(|e| e + LINGER);
        let first = sources
            .iter()
            .filter(|s| s.open)
            .filter_map(Source::deadline)
            .chain(lingering)
            .min();
        match first {
            None => PollTimeout::NONE,
            Some(d) => {
                let ms = d.saturating_duration_since(now).as_millis() + 1;
                PollTimeout::try_from(ms.min(60_000) as i32).unwrap_or(PollTimeout::MAX)
            }
        }
    }

    /// After the command ended, its terminal is read until it is closed or
    /// quiet for [`LINGER`].
    fn linger(&mut self, sources: &mut [Source<'_>], terminal: Option<usize>, out: &mut Vec<u8>) {
        let (Some(ended), Some(t)) = (self.ended_at, terminal) else {
            return;
        };
        if let Some(s) = sources.get_mut(t).filter(|s| s.open) {
            if Instant::now() >= ended + LINGER {
                s.end(out);
            }
        }
    }

    fn read_keys(&mut self, buf: &mut [u8]) {
        match unistd::read(
            std::io::stdin().as_fd(),
            &mut buf[..CHUNK - self.keys.len()],
        ) {
            Ok(0) | Err(Errno::EIO) => self.keys_open = false,
            Ok(n) => self.keys.extend_from_slice(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => self.keys_open = false,
        }
    }

    fn write_keys(&mut self, to: BorrowedFd<'_>) {
        match unistd::write(to, &self.keys) {
            Ok(n) => {
                self.keys.drain(..n);
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => self.keys.clear(),
        }
    }

    fn signalled(
        &mut self,
        signo: i32,
        ends: &Ends,
        terminal: Option<&OwnedFd>,
        raw: Option<&Raw>,
    ) {
        let Ok(sig) = Signal::try_from(signo) else {
            return;
        };
        match sig {
            Signal::SIGCHLD => self.reap(terminal, raw),
            Signal::SIGWINCH => {
                if let (Some(own), Some(t)) = (terminal::own(ends), terminal) {
                    terminal::copy_window_size(own, t.as_fd());
                }
            }
            // On a terminal of its own, the command gets no signal from
            // envwrap's: whatever reaches envwrap is passed on. Without one,
            // the terminal sends SIGINT and SIGQUIT to the command too.
            Signal::SIGTERM | Signal::SIGHUP | Signal::SIGINT if self.status.is_some() => {
                self.told_to_stop = true;
            }
            Signal::SIGINT | Signal::SIGQUIT if terminal.is_none() => {}
            other => {
                let _ = signal::kill(self.child, other);
            }
        }
    }

    /// The command ended, or stopped (a stop on its own terminal: envwrap
    /// stops too, and continues it when continued itself, as a shell's job).
    fn reap(&mut self, terminal: Option<&OwnedFd>, raw: Option<&Raw>) {
        loop {
            match waitpid(
                self.child,
                Some(WaitPidFlag::WNOHANG | WaitPidFlag::WUNTRACED),
            ) {
                Ok(ws @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => {
                    self.ended(crate::exit::raw_wait_status(ws).unwrap_or_default());
                }
                Ok(WaitStatus::Stopped(..)) => {
                    if let Some(r) = raw {
                        r.leave();
                    }
                    let _ = signal::kill(Pid::this(), Signal::SIGSTOP);
                    if let Some(r) = raw {
                        r.again();
                    }
                    if let Some(t) = terminal {
                        if let Some(own) = terminal::own(&super::Ends::now()) {
                            terminal::copy_window_size(own, t.as_fd());
                        }
                    }
                    let _ = signal::kill(self.child, Signal::SIGCONT);
                    continue;
                }
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return,
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return,
            }
            return;
        }
    }

    fn ended(&mut self, raw: i32) {
        self.status = Some(raw);
        self.ended_at = Some(Instant::now());
        self.keys_open = false;
    }
}

/// Wait for the command's end (the relay stopped early).
fn wait_end(child: Pid) -> i32 {
    loop {
        match waitpid(child, None) {
            Ok(ws) => {
                if let Some(raw) = crate::exit::raw_wait_status(ws) {
                    return raw;
                }
            }
            Err(Errno::EINTR) => continue,
            Err(_) => return (crate::exit::OWN_ERROR as i32) << 8,
        }
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    if let Ok(flags) = fcntl(fd, FcntlArg::F_GETFL) {
        let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
        let _ = fcntl(fd, FcntlArg::F_SETFL(flags));
    }
}

/// Write `out` to envwrap's stream `to` whole, waiting while it is full; then
/// empty `out`. An error (the reader went away) drops the bytes: the command's
/// output goes nowhere else.
fn write_all(to: i32, out: &mut Vec<u8>) {
    // SAFETY: envwrap's standard streams stay open for its whole life.
    let fd = unsafe { BorrowedFd::borrow_raw(to) };
    let mut rest = out.as_slice();
    while !rest.is_empty() {
        match unistd::write(fd, rest) {
            Ok(n) => rest = &rest[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut f = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = poll(&mut f, PollTimeout::NONE);
            }
            Err(_) => break,
        }
    }
    out.clear();
}
