//! libenvshim.so: the LD_PRELOAD front end of envshim.
//!
//! Placeholder: the interposition layer (the exec family, posix_spawn, system,
//! popen) lands with its own issue. The crate is already `#![no_std]` without
//! `alloc`, which is the property the exec path depends on: see
//! docs/adr/0002-compiled-policy.md.
#![no_std]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort() takes no arguments, is async-signal-safe and never returns.
    unsafe { libc::abort() }
}
