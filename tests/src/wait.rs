//! Polling: real programs (a tmux server, a pane's shell) act asynchronously, so tests
//! wait for a condition with a deadline instead of sleeping a fixed time.

use std::thread;
use std::time::{Duration, Instant};

/// Poll `cond` until it returns true or `timeout` passes; returns the last result.
/// Polls quickly at first (1 ms), then backs off to 25 ms.
pub fn wait_for(mut cond: impl FnMut() -> bool, timeout: Duration) -> bool {
    let start = Instant::now();
    let mut delay = Duration::from_millis(1);
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= timeout {
            return cond();
        }
        thread::sleep(delay.min(timeout.saturating_sub(start.elapsed())));
        delay = (delay * 2).min(Duration::from_millis(25));
    }
}

/// [`wait_for`], panicking with `what` on timeout.
#[track_caller]
pub fn wait_until(what: &str, cond: impl FnMut() -> bool, timeout: Duration) {
    if !wait_for(cond, timeout) {
        panic!("timed out after {timeout:?} waiting for {what}");
    }
}
