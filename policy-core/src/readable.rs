//! Which files a policy may read, and how much of each: regular files only, each
//! kind under a size limit.
//!
//! Every file a policy names is read by processes that did not choose it: the
//! policy file and its imports by envwrap, including the compile that
//! libenvshim.so runs while a program's constructor waits, and the imported env
//! files again by the shim at every exec. A FIFO blocks that read until a writer
//! comes; a device or a socket may block, or never end; a huge or sparse file makes
//! the reader allocate and read gigabytes while the host waits. None of these can
//! be a policy's input, so only a regular file is read, and at most its kind's
//! [`Limit`]. Anything else is an error that names the file, and the fail-closed
//! floor applies (docs/security.md, "Bad input").
//!
//! This module is the rule; the front ends apply it the same way: open without
//! blocking (`O_NONBLOCK | O_NOCTTY`, so opening a FIFO returns at once and a
//! terminal never becomes the controlling one), `fstat` the open descriptor, ask
//! [`judge`], and read at most the limit plus one byte, so that a file that grows
//! while it is read is caught too.

/// The most a front end reads of one kind of file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// The limit in bytes, as messages print it.
    pub text: &'static str,
}

/// A policy file (docs/policy.md, "Limits").
pub const POLICY_FILE: Limit = Limit {
    bytes: 1 << 20,
    text: "1048576",
};
/// An imported env file: its names are compiled, and its values are read again
/// at every exec, so it must stay small.
pub const ENV_FILE: Limit = Limit {
    bytes: 1 << 20,
    text: "1048576",
};
/// An imported config file (JSON or TOML).
pub const CONFIG_FILE: Limit = Limit {
    bytes: 4 << 20,
    text: "4194304",
};
/// A compiled cache file.
pub const CACHE_FILE: Limit = Limit {
    bytes: 16 << 20,
    text: "16777216",
};

/// A program envwrap reads to say what it is (`doctor` parses the whole file;
/// `--preload` reads its headers): never a policy's input, but read by the same
/// rule, so that a FIFO or a device named as a program never blocks envwrap and
/// a huge or sparse file is not read into memory.
pub const PROGRAM: Limit = Limit {
    bytes: 1 << 30,
    text: "1073741824",
};

/// What `st_mode` says a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    SymbolicLink,
    Unknown,
}

impl FileKind {
    /// The kind in the `S_IFMT` bits of `mode` (the same values on every Linux
    /// architecture).
    pub const fn from_mode(mode: u32) -> FileKind {
        match mode & 0o170_000 {
            0o100_000 => FileKind::Regular,
            0o040_000 => FileKind::Directory,
            0o010_000 => FileKind::Fifo,
            0o140_000 => FileKind::Socket,
            0o020_000 => FileKind::CharDevice,
            0o060_000 => FileKind::BlockDevice,
            0o120_000 => FileKind::SymbolicLink,
            _ => FileKind::Unknown,
        }
    }

    /// With its article, for messages: "a FIFO".
    pub const fn describe(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::SymbolicLink => "a symbolic link",
            FileKind::Unknown => "not a regular file",
        }
    }
}

/// Why a file a policy names is not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not a regular file.
    NotRegular(FileKind),
    /// Larger than its kind's limit.
    TooLarge(Limit),
}

impl Unreadable {
    /// The reason, to follow the file's name in a message: "is a FIFO, not a
    /// regular file", "is larger than 1048576 bytes". Never any of the contents.
    pub fn parts(self) -> [&'static str; 3] {
        match self {
            Unreadable::NotRegular(FileKind::Unknown) => ["is not a regular file", "", ""],
            Unreadable::NotRegular(FileKind::Directory) => ["is a directory", "", ""],
            Unreadable::NotRegular(kind) => ["is ", kind.describe(), ", not a regular file"],
            Unreadable::TooLarge(limit) => ["is larger than ", limit.text, " bytes"],
        }
    }
}

impl core::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for part in self.parts() {
            f.write_str(part)?;
        }
        Ok(())
    }
}

/// May a file with this `st_mode` and `st_size` be read under `limit`? The one
/// rule every front end applies to an open descriptor's `fstat`.
pub const fn judge(mode: u32, size: u64, limit: Limit) -> Result<(), Unreadable> {
    match FileKind::from_mode(mode) {
        FileKind::Regular if size > limit.bytes => Err(Unreadable::TooLarge(limit)),
        FileKind::Regular => Ok(()),
        kind => Err(Unreadable::NotRegular(kind)),
    }
}

/// Did a read that asked for at most `limit.bytes + 1` bytes get more than the
/// limit (the file grew while it was read)?
pub const fn judge_read(got: u64, limit: Limit) -> Result<(), Unreadable> {
    if got > limit.bytes {
        Err(Unreadable::TooLarge(limit))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        assert_eq!(judge(0o100_644, 10, ENV_FILE), Ok(()));
        assert_eq!(judge(0o100_644, 1 << 20, ENV_FILE), Ok(()));
        assert_eq!(
            judge(0o100_644, (1 << 20) + 1, ENV_FILE),
            Err(Unreadable::TooLarge(ENV_FILE))
        );
        for (mode, kind) in [
            (0o010_644, FileKind::Fifo),
            (0o140_755, FileKind::Socket),
            (0o020_666, FileKind::CharDevice),
            (0o060_660, FileKind::BlockDevice),
            (0o040_755, FileKind::Directory),
        ] {
            assert_eq!(judge(mode, 0, ENV_FILE), Err(Unreadable::NotRegular(kind)));
        }
    }

    #[test]
    fn reasons_read_as_sentences() {
        let fifo = Unreadable::NotRegular(FileKind::Fifo).to_string();
        assert_eq!(fifo, "is a FIFO, not a regular file");
        let big = Unreadable::TooLarge(POLICY_FILE).to_string();
        assert_eq!(big, "is larger than 1048576 bytes");
        assert_eq!(POLICY_FILE.text, POLICY_FILE.bytes.to_string());
        assert_eq!(ENV_FILE.text, ENV_FILE.bytes.to_string());
        assert_eq!(CONFIG_FILE.text, CONFIG_FILE.bytes.to_string());
        assert_eq!(CACHE_FILE.text, CACHE_FILE.bytes.to_string());
    }
}
