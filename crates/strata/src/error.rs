//! Error values returned by every fallible Strata operation.
//!
//! Errors are values, never panics: a corrupt file, a torn log or an invalid option becomes one of
//! these variants with enough context (file, offset, field) for a person to act on it.

use std::path::PathBuf;

/// The result type of every fallible Strata call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error, Clone)]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What Strata was doing (e.g. "reading table 000012.sst").
        context: String,
        /// The underlying error.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },

    /// A file's contents are damaged or not in Strata's format.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// The file that holds the damage.
        file: PathBuf,
        /// Byte offset of the damaged record or block.
        offset: u64,
        /// What check failed.
        reason: String,
    },

    /// A caller passed an invalid value (an option out of range, a key over the size limit...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Another process (or another `Db` in this process) holds the database's lock file.
    #[error("database at {0} is locked by another process")]
    Locked(PathBuf),

    /// An earlier background write or fsync failed; the engine refuses further writes until it is
    /// reopened, because after a failed fsync the operating system may have dropped the data.
    #[error("database is read-only after a background error: {0}")]
    Background(String),

    /// The database was closed.
    #[error("database is closed")]
    Closed,

    /// A write, flush or compaction was asked of a database opened with
    /// [`Db::open_read_only`](crate::Db::open_read_only), which never writes to its directory.
    #[error("database opened read-only: writes, flushes and compactions are refused")]
    ReadOnly,
}

impl Error {
    /// Wraps an `std::io::Error` with a description of what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// Builds a [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
