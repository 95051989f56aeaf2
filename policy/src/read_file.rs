//! Reading a file a policy names, by the rule of [`crate::readable`]: never
//! blocking, regular files only, at most the kind's limit.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::io_reason;
use crate::readable::{self, Limit, Unreadable};

/// Why a file a policy names could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The system said no: missing, permission denied, ...
    Io(io::Error),
    /// It is there, but it is not a file a policy reads ([`crate::readable`]).
    Unreadable(Unreadable),
}

impl ReadError {
    /// Missing.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// There, but not a file a policy reads: an error even for an optional
    /// import, which tolerates only a file it cannot read (yet).
    pub fn is_unusable(&self) -> bool {
        matches!(self, ReadError::Unreadable(_))
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => f.write_str(&io_reason(e)),
            ReadError::Unreadable(u) => write!(f, "it {u}"),
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// Open `path` for reading by the rule: its kind is judged before it is opened
/// (a device is never opened), opened with `O_NONBLOCK | O_NOCTTY` (a FIFO
/// planted after that look cannot block the open), and judged again on the open
/// descriptor, which is what is read.
pub fn open(path: &Path, limit: Limit) -> Result<File, ReadError> {
    let md = std::fs::metadata(path)?;
    readable::judge(md.mode(), md.len(), limit).map_err(ReadError::Unreadable)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let md = file.metadata()?;
    readable::judge(md.mode(), md.len(), limit).map_err(ReadError::Unreadable)?;
    Ok(file)
}

/// Read an opened file (see [`open`]) to its end, at most `limit`.
pub fn read_opened(file: File, limit: Limit) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    file.take(limit.bytes + 1).read_to_end(&mut bytes)?;
    readable::judge_read(bytes.len() as u64, limit).map_err(ReadError::Unreadable)?;
    Ok(bytes)
}

/// [`open`] and [`read_opened`].
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, ReadError> {
    read_opened(open(path, limit)?, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readable::{FileKind, ENV_FILE};
    use std::time::{Duration, Instant};

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("envpolicy-read-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let d = dir("fifo");
        let fifo = d.join("names.env");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let start = Instant::now();
        let err = read(&fifo, ENV_FILE).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(matches!(
            err,
            ReadError::Unreadable(Unreadable::NotRegular(FileKind::Fifo))
        ));
        assert_eq!(err.to_string(), "it is a FIFO, not a regular file");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_sparse_file_over_the_limit_is_not_read() {
        let d = dir("sparse");
        let big = d.join("big.env");
        let f = File::create(&big).unwrap();
        f.set_len(3 << 30).unwrap();
        let err = read(&big, ENV_FILE).unwrap_err();
        assert_eq!(err.to_string(), "it is larger than 1048576 bytes");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_device_and_a_missing_file() {
        let err = read(Path::new("/dev/null"), ENV_FILE).unwrap_err();
        assert!(matches!(
            err,
            ReadError::Unreadable(Unreadable::NotRegular(FileKind::CharDevice))
        ));
        let missing = read(Path::new("/nonexistent/envpolicy/x.env"), ENV_FILE).unwrap_err();
        assert!(missing.is_not_found());
    }
}
