//! The file-system abstraction every byte of Strata's I/O goes through.
//!
//! The engine never calls `std::fs` directly: it asks a [`FileSystem`]. [`RealFileSystem`] is the
//! operating system's; [`FaultInjectionFileSystem`] wraps it and fails writes or syncs on demand so
//! tests can check that a failed fsync puts the engine into its sticky error state;
//! [`WrapWritable`] is the real one with each file created for writing passed through a function
//! (instrumentation of the write path).

mod fault;
mod real;
mod wrap;

pub use fault::{Fault, FaultInjectionFileSystem, FaultOp, FaultPoint, FileKind, RandomFaults};
pub use real::RealFileSystem;
pub use wrap::WrapWritable;

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

/// A file opened for appending (WAL, manifest, table being built).
pub trait WritableFile: Send {
    /// Appends bytes (possibly buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Pushes buffered bytes to the operating system (survives a process crash, not a power loss).
    fn flush(&mut self) -> Result<()>;
    /// Flushes and fsyncs the file's data (survives a power loss).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A function that fsyncs the data flushed to the file so far and may run on any thread
    /// without the file (so a caller can sync outside the lock that guards the appends), or
    /// `None` when the file has none: the caller then uses [`WritableFile::sync`]. The default
    /// is `None`.
    fn sync_handle(&self) -> Option<SyncHandle> {
        None
    }
}

/// See [`WritableFile::sync_handle`].
pub type SyncHandle = Box<dyn FnOnce() -> Result<()> + Send>;

/// A file read at arbitrary offsets (table files).
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; a short file is an error.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>>;
    /// The file's size in bytes.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An exclusive advisory lock on a file; released when dropped.
pub trait FileLock: Send + Sync {}

/// Everything the engine needs from a file system.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Creates (or truncates) a file for appending.
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads; `direct` asks for O_DIRECT (page cache bypassed).
    fn open_random_access(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole file (logs, manifest, CURRENT).
    fn read_to_end(&self, path: &Path) -> Result<Vec<u8>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Deletes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Names of the entries of a directory.
    fn list_dir(&self, path: &Path) -> Result<Vec<String>>;
    /// True if the path exists.
    fn exists(&self, path: &Path) -> bool;
    /// Fsyncs a directory so that renames and creations in it are durable.
    fn sync_dir(&self, path: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing); `Error::Locked` if another holder
    /// has it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}
