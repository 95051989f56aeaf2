//! The `extern "C"` entry points: each hook hands its call to [`crate::filter`]
//! and then to the real libc function; the constructor ([`init`]) sets up the
//! process's state. Nothing below this layer is an entry point.

pub mod describe;
pub mod exec;
pub mod fork;
pub mod init;
pub mod popen;
pub mod spawn;
pub mod system;
