//! A file system that fails on demand, for testing the engine's error handling.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, RealFileSystem, WritableFile};
use crate::error::{Error, Result};

#[derive(Default)]
struct Faults {
    fail_appends: AtomicBool,
    fail_syncs: AtomicBool,
    fail_reads: AtomicBool,
    injected: AtomicU64,
}

/// Wraps another [`FileSystem`] (the real one by default) and makes appends, syncs or reads fail
/// while the matching switch is on. Clones share the switches.
#[derive(Clone)]
pub struct FaultInjectionFileSystem {
    inner: Arc<dyn FileSystem>,
    faults: Arc<Faults>,
}

impl Default for FaultInjectionFileSystem {
    fn default() -> Self {
        Self::new(Arc::new(RealFileSystem))
    }
}

impl FaultInjectionFileSystem {
    /// Wraps `inner`; no faults are active until a switch is turned on.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        FaultInjectionFileSystem {
            inner,
            faults: Arc::new(Faults::default()),
        }
    }

    /// Makes every later `append` and `flush` fail (or succeed again with `false`).
    pub fn set_fail_appends(&self, fail: bool) {
        self.faults.fail_appends.store(fail, Ordering::SeqCst);
    }

    /// Makes every later `sync` (file or directory) fail.
    pub fn set_fail_syncs(&self, fail: bool) {
        self.faults.fail_syncs.store(fail, Ordering::SeqCst);
    }

    /// Makes every later random-access read fail.
    pub fn set_fail_reads(&self, fail: bool) {
        self.faults.fail_reads.store(fail, Ordering::SeqCst);
    }

    /// How many operations have been failed on purpose.
    pub fn injected_faults(&self) -> u64 {
        self.faults.injected.load(Ordering::SeqCst)
    }
}

fn injected(faults: &Faults, what: &str) -> Error {
    faults.injected.fetch_add(1, Ordering::SeqCst);
    Error::io(
        format!("{what} (injected fault)"),
        std::io::Error::other("injected fault"),
    )
}

struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    faults: Arc<Faults>,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.faults.fail_appends.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "append"));
        }
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        if self.faults.fail_appends.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "flush"));
        }
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        if self.faults.fail_syncs.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "sync"));
        }
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    faults: Arc<Faults>,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if self.faults.fail_reads.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "read"));
        }
        self.inner.read_at(offset, len)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl FileSystem for FaultInjectionFileSystem {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.inner.create_dir_all(path)
    }

    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.faults.fail_appends.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "create"));
        }
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.create_writable(path)?,
            faults: self.faults.clone(),
        }))
    }

    fn open_random_access(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.open_random_access(path, direct)?,
            faults: self.faults.clone(),
        }))
    }

    fn read_to_end(&self, path: &Path) -> Result<Vec<u8>> {
        if self.faults.fail_reads.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "read"));
        }
        self.inner.read_to_end(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        if self.faults.fail_appends.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "rename"));
        }
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.inner.remove_file(path)
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        if self.faults.fail_syncs.load(Ordering::SeqCst) {
            return Err(injected(&self.faults, "sync directory"));
        }
        self.inner.sync_dir(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}
