//! What the shim stands on, and knows no policy: errno, `environ`, C strings and
//! raw system calls ([`sys`]), the real libc functions and the walk that finds
//! them ([`real`], [`next_object`]), libc calls bound lazily ([`cold`]), the
//! per-thread scratch region the filtered arrays live in ([`scratch`]), and the
//! constructor's arena ([`ctor_arena`]).

pub mod cold;
pub mod ctor_arena;
pub mod fs;
pub mod next_object;
pub mod real;
pub mod scratch;
pub mod sys;
