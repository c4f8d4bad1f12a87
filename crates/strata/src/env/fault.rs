//! A file system that fails on demand, for testing the engine's error handling (RocksDB's
//! `FaultInjectionTestFS`, Pebble's `vfs/errorfs`).
//!
//! Three ways to inject a fault, all of which can be combined:
//!
//! * **switches** that make every later operation of one class fail (`set_fail_appends`,
//!   `set_fail_syncs`, `set_fail_reads`) or simulate a full disk (`set_no_space`: appends,
//!   flushes and creations fail with `ENOSPC`);
//! * **named points** ([`FaultPoint`]): the n-th operation of a kind on a kind of file (the third
//!   append to a manifest, the first rename onto `CURRENT`, a read of a table) fails with an I/O
//!   error, `ENOSPC` or a short read, or crashes the process on the spot ([`Fault::Crash`]), so a
//!   crash test can stop the engine inside a flush, a compaction, a manifest rewrite or an
//!   access-statistics save;
//! * **random faults** at a rate per operation, from a seeded generator (`set_random_faults`), for
//!   stress runs.
//!
//! What counts as which kind of file comes from its name (docs/FORMAT.md): [`FileKind::of`].

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, FileSystem, RandomAccessFile, RealFileSystem, WritableFile};
use crate::error::{Error, Result};
use crate::random::SplitMix64;

/// What a file is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A write-ahead log (`NNNNNN.log`).
    Wal,
    /// A table file (`NNNNNN.sst`).
    Table,
    /// A manifest (`MANIFEST-NNNNNN`).
    Manifest,
    /// `CURRENT`, or the temporary file it is written through.
    Current,
    /// The access-statistics snapshot (`ACCESS`) or its temporary file.
    AccessStatistics,
    /// Anything else: the info log, `LOCK`, directories.
    Other,
}

impl FileKind {
    /// The kind of the file at `path`, from its name.
    pub fn of(path: &Path) -> FileKind {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.ends_with(".log") && name.trim_end_matches(".log").parse::<u64>().is_ok() {
            FileKind::Wal
        } else if name.ends_with(".sst") {
            FileKind::Table
        } else if name.starts_with("MANIFEST") {
            FileKind::Manifest
        } else if name.starts_with("CURRENT") {
            FileKind::Current
        } else if name.starts_with("ACCESS") {
            FileKind::AccessStatistics
        } else {
            FileKind::Other
        }
    }
}

/// A file-system operation a fault can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// Creating (or truncating) a file for writing.
    Create,
    /// Appending to a file.
    Append,
    /// Pushing a file's buffered bytes to the operating system.
    Flush,
    /// Fsyncing a file or a directory (a directory counts as [`FileKind::Other`]).
    Sync,
    /// Renaming a file (the kind is the destination's).
    Rename,
    /// Reading a file: a positional read of a table, or a whole-file read (logs, manifest).
    Read,
}

impl FaultOp {
    fn writes(self) -> bool {
        !matches!(self, FaultOp::Read)
    }
}

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The operation fails with an I/O error.
    Io,
    /// The operation fails with `ENOSPC` ("No space left on device").
    NoSpace,
    /// A read returns fewer bytes than asked for (on other operations: an I/O error).
    ShortRead,
    /// The process kills itself with `SIGKILL` before the operation happens: no destructor runs
    /// and nothing buffered in user space reaches the operating system.
    Crash,
}

/// One armed fault: the `(skip + 1)`-th operation `op` on a file of kind `file` (any kind if
/// `None`) suffers `fault`, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPoint {
    /// The operation.
    pub op: FaultOp,
    /// The kind of file, or any.
    pub file: Option<FileKind>,
    /// How many matching operations pass before the fault fires.
    pub skip: u64,
    /// What happens.
    pub fault: Fault,
}

/// Faults at random, from a seeded generator: each write-side operation (create, append, flush,
/// sync, rename) fails with probability `write_rate` (an I/O error or `ENOSPC`, half and half);
/// each read with probability `read_rate` (an I/O error or a short read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomFaults {
    /// Probability that a write-side operation fails.
    pub write_rate: f64,
    /// Probability that a read fails or comes back short.
    pub read_rate: f64,
    /// Seed of the generator (runs with the same seed and the same operation order fail alike).
    pub seed: u64,
}

#[derive(Default)]
struct Faults {
    fail_appends: AtomicBool,
    fail_syncs: AtomicBool,
    fail_reads: AtomicBool,
    no_space: AtomicBool,
    injected: AtomicU64,
    armed: Mutex<Vec<FaultPoint>>,
    random: Mutex<Option<(RandomFaults, SplitMix64)>>,
}

/// Wraps another [`FileSystem`] (the real one by default) and injects faults on demand (see the
/// module documentation). Clones share their faults.
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

impl std::fmt::Debug for FaultInjectionFileSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjectionFileSystem")
            .field("injected", &self.injected_faults())
            .finish()
    }
}

impl FaultInjectionFileSystem {
    /// Wraps `inner`; no faults are active until one is turned on.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        FaultInjectionFileSystem {
            inner,
            faults: Arc::new(Faults::default()),
        }
    }

    /// Makes every later `append`, `flush`, creation and rename fail (or succeed again with
    /// `false`).
    pub fn set_fail_appends(&self, fail: bool) {
        self.faults.fail_appends.store(fail, Ordering::SeqCst);
    }

    /// Makes every later `sync` (file or directory) fail.
    pub fn set_fail_syncs(&self, fail: bool) {
        self.faults.fail_syncs.store(fail, Ordering::SeqCst);
    }

    /// Makes every later read fail.
    pub fn set_fail_reads(&self, fail: bool) {
        self.faults.fail_reads.store(fail, Ordering::SeqCst);
    }

    /// Simulates a full disk: every later append, flush and file creation fails with `ENOSPC`
    /// until turned off (space freed).
    pub fn set_no_space(&self, full: bool) {
        self.faults.no_space.store(full, Ordering::SeqCst);
    }

    /// Arms a one-shot fault at a named point.
    pub fn arm(&self, point: FaultPoint) {
        self.faults.armed.lock().push(point);
    }

    /// Faults at random from now on (`None` stops them).
    pub fn set_random_faults(&self, random: Option<RandomFaults>) {
        *self.faults.random.lock() =
            random.map(|r| (r, SplitMix64::new(r.seed ^ 0x9E37_79B9_7F4A_7C15)));
    }

    /// Turns every fault off: switches, armed points and random faults.
    pub fn clear(&self) {
        self.set_fail_appends(false);
        self.set_fail_syncs(false);
        self.set_fail_reads(false);
        self.set_no_space(false);
        self.faults.armed.lock().clear();
        self.set_random_faults(None);
    }

    /// How many operations have been failed on purpose.
    pub fn injected_faults(&self) -> u64 {
        self.faults.injected.load(Ordering::SeqCst)
    }

    /// Armed points that have not fired yet.
    pub fn armed_points(&self) -> Vec<FaultPoint> {
        self.faults.armed.lock().clone()
    }
}

/// Ends the process at once, as a crash would: no destructor runs and nothing buffered in user
/// space is written.
fn crash_now() -> ! {
    // SAFETY: kill(2) takes two integers and touches no memory of ours; sending SIGKILL to our
    // own process id ends the process, which is what a crash point is for. Exercised by
    // `tests/fault_injection.rs` (`a_crash_point_kills_the_process_with_sigkill`).
    unsafe {
        libc::kill(std::process::id() as libc::pid_t, libc::SIGKILL);
    }
    // SIGKILL can be neither caught nor ignored; if sending it failed, abort instead (SIGABRT,
    // which may leave a core file where SIGKILL leaves none).
    std::process::abort()
}

impl Faults {
    /// The fault, if any, that operation `op` on a file of kind `kind` suffers now.
    fn decide(&self, op: FaultOp, kind: FileKind) -> Option<Fault> {
        let switched = match op {
            FaultOp::Create | FaultOp::Append | FaultOp::Flush | FaultOp::Rename => {
                self.fail_appends.load(Ordering::SeqCst)
            }
            FaultOp::Sync => self.fail_syncs.load(Ordering::SeqCst),
            FaultOp::Read => self.fail_reads.load(Ordering::SeqCst),
        };
        if switched {
            return Some(Fault::Io);
        }
        if self.no_space.load(Ordering::SeqCst)
            && matches!(op, FaultOp::Create | FaultOp::Append | FaultOp::Flush)
        {
            return Some(Fault::NoSpace);
        }
        {
            let mut armed = self.armed.lock();
            let matching = armed
                .iter_mut()
                .position(|p| p.op == op && p.file.is_none_or(|f| f == kind));
            if let Some(index) = matching {
                if armed[index].skip == 0 {
                    return Some(armed.remove(index).fault);
                }
                armed[index].skip -= 1;
            }
        }
        let mut random = self.random.lock();
        let (faults, state) = random.as_mut()?;
        let rate = if op.writes() {
            faults.write_rate
        } else {
            faults.read_rate
        };
        if rate <= 0.0 || state.unit() >= rate {
            return None;
        }
        let coin = state.next_u64() & 1 == 0;
        Some(match (op.writes(), coin) {
            (true, true) => Fault::Io,
            (true, false) => Fault::NoSpace,
            (false, true) => Fault::Io,
            (false, false) => Fault::ShortRead,
        })
    }

    /// Fails (or crashes) if a fault is due; `Ok(Some(ShortRead))` asks the caller to cut a read.
    fn check(&self, op: FaultOp, path: &Path) -> Result<Option<Fault>> {
        let kind = FileKind::of(path);
        let Some(fault) = self.decide(op, kind) else {
            return Ok(None);
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        let what = format!("{op:?} of {} (injected fault)", path.display());
        match fault {
            Fault::Crash => crash_now(),
            Fault::ShortRead if op == FaultOp::Read => Ok(Some(Fault::ShortRead)),
            Fault::NoSpace => Err(Error::io(
                what,
                std::io::Error::from_raw_os_error(libc::ENOSPC),
            )),
            Fault::Io | Fault::ShortRead => {
                Err(Error::io(what, std::io::Error::other("injected fault")))
            }
        }
    }
}

struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    path: std::path::PathBuf,
    faults: Arc<Faults>,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.faults.check(FaultOp::Append, &self.path)?;
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.faults.check(FaultOp::Flush, &self.path)?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.faults.check(FaultOp::Sync, &self.path)?;
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    path: std::path::PathBuf,
    faults: Arc<Faults>,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let fault = self.faults.check(FaultOp::Read, &self.path)?;
        let mut bytes = self.inner.read_at(offset, len)?;
        if fault == Some(Fault::ShortRead) {
            bytes.truncate(len / 2);
        }
        Ok(bytes)
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
        self.faults.check(FaultOp::Create, path)?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.create_writable(path)?,
            path: path.to_path_buf(),
            faults: self.faults.clone(),
        }))
    }

    fn open_random_access(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.open_random_access(path, direct)?,
            path: path.to_path_buf(),
            faults: self.faults.clone(),
        }))
    }

    fn read_to_end(&self, path: &Path) -> Result<Vec<u8>> {
        let fault = self.faults.check(FaultOp::Read, path)?;
        let mut bytes = self.inner.read_to_end(path)?;
        if fault == Some(Fault::ShortRead) {
            bytes.truncate(bytes.len() / 2);
        }
        Ok(bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.faults.check(FaultOp::Rename, to)?;
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
        // A directory is not a named file: its syncs count as `FileKind::Other`.
        self.faults.check(FaultOp::Sync, Path::new(""))?;
        self.inner.sync_dir(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_kinds_come_from_names() {
        for (name, kind) in [
            ("/db/000012.log", FileKind::Wal),
            ("/db/000012.sst", FileKind::Table),
            ("/db/MANIFEST-000003", FileKind::Manifest),
            ("/db/CURRENT", FileKind::Current),
            ("/db/CURRENT.tmp", FileKind::Current),
            ("/db/ACCESS", FileKind::AccessStatistics),
            ("/db/ACCESS.tmp", FileKind::AccessStatistics),
            ("/db/LOG", FileKind::Other),
            ("/db/LOCK", FileKind::Other),
        ] {
            assert_eq!(FileKind::of(Path::new(name)), kind, "{name}");
        }
    }

    #[test]
    fn an_armed_point_fires_once_after_its_skips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectionFileSystem::default();
        fs.arm(FaultPoint {
            op: FaultOp::Append,
            file: Some(FileKind::Manifest),
            skip: 2,
            fault: Fault::NoSpace,
        });
        let mut table = fs
            .create_writable(&dir.path().join("000001.sst"))
            .expect("create");
        let mut manifest = fs
            .create_writable(&dir.path().join("MANIFEST-000002"))
            .expect("create");
        // Appends to other kinds of file do not count.
        for _ in 0..5 {
            table.append(b"t").expect("table append");
        }
        manifest.append(b"1").expect("first");
        manifest.append(b"2").expect("second");
        let error = manifest.append(b"3").expect_err("the third fails");
        assert!(
            error.to_string().contains("No space left on device"),
            "{error}"
        );
        manifest
            .append(b"4")
            .expect("one-shot: the fourth succeeds");
        assert_eq!(fs.injected_faults(), 1);
        assert!(fs.armed_points().is_empty());
    }

    #[test]
    fn no_space_fails_writes_until_cleared_and_reads_go_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectionFileSystem::default();
        let path = dir.path().join("000001.log");
        let mut file = fs.create_writable(&path).expect("create");
        file.append(b"hello").expect("append");
        file.flush().expect("flush");
        fs.set_no_space(true);
        assert!(file.append(b"more").is_err());
        assert!(fs.create_writable(&dir.path().join("x.sst")).is_err());
        assert_eq!(fs.read_to_end(&path).expect("reads work"), b"hello");
        fs.clear();
        file.append(b" world").expect("space freed");
        file.flush().expect("flush");
        assert_eq!(fs.read_to_end(&path).expect("read"), b"hello world");
    }

    #[test]
    fn short_reads_return_fewer_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectionFileSystem::default();
        let path = dir.path().join("000001.sst");
        let mut file = fs.create_writable(&path).expect("create");
        file.append(&[7u8; 100]).expect("append");
        file.flush().expect("flush");
        fs.arm(FaultPoint {
            op: FaultOp::Read,
            file: Some(FileKind::Table),
            skip: 0,
            fault: Fault::ShortRead,
        });
        let reader = fs.open_random_access(&path, false).expect("open");
        assert_eq!(reader.read_at(0, 40).expect("short read").len(), 20);
        assert_eq!(reader.read_at(0, 40).expect("full read").len(), 40);
    }

    #[test]
    fn random_faults_follow_the_rate_and_the_seed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let count_failures = |seed| {
            let fs = FaultInjectionFileSystem::default();
            let mut file = fs
                .create_writable(&dir.path().join(format!("{seed}.log")))
                .expect("create");
            fs.set_random_faults(Some(RandomFaults {
                write_rate: 0.1,
                read_rate: 0.0,
                seed,
            }));
            (0..2_000)
                .map(|_| file.append(b"x").is_err())
                .collect::<Vec<_>>()
        };
        let first = count_failures(42);
        assert_eq!(first, count_failures(42), "same seed, same faults");
        let failures = first.iter().filter(|&&failed| failed).count();
        // 2,000 draws at p = 0.1: 200 expected, the standard deviation is about 13.
        assert!((130..=270).contains(&failures), "{failures} failures");
    }
}
