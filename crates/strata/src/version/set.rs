//! The version set: the current [`Version`], the counters (file numbers, sequence numbers, run
//! ids, the oldest live WAL) and the manifest that makes every change durable.
//!
//! Manifest protocol: every change is one [`VersionEdit`] record appended to `MANIFEST-NNNNNN` and
//! fsynced before the new version is installed. On open the engine replays the manifest named by
//! `CURRENT`, then writes a fresh manifest holding one edit with the whole tree and switches
//! `CURRENT` to it atomically (write `CURRENT.tmp`, fsync, rename, fsync the directory), so a crash
//! at any point leaves either the old or the new manifest in force. A read-only open
//! ([`VersionSet::load_read_only`]) only reads `CURRENT` and the manifest.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::edit::MANIFEST_FORMAT_VERSION;
use super::{AddedFile, ObsoleteFiles, Version, VersionEdit};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::wal::{read_log, LogDamageKind, LogWriter};

/// Name of the file that points at the live manifest.
pub(crate) const CURRENT_FILE: &str = "CURRENT";

pub(crate) fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

struct ManifestWriter {
    number: u64,
    log: LogWriter,
    /// Set when an append or fsync failed. The failed record may be torn in the file (its header
    /// written, its payload not): a later record appended behind it would be read back as part of
    /// it, and recovery would drop it as a truncated tail — or reject the manifest — even though
    /// its version was installed and its deleted files removed. So after a failure the manifest
    /// takes no more edits; a reopen writes a fresh one.
    failed: Option<String>,
}

/// Counters recovered from a manifest.
pub(crate) struct Recovered {
    version: Version,
    log_number: u64,
    next_file_number: u64,
    last_sequence: u64,
    next_run_id: u64,
    manifest_number: u64,
}

/// The current version, the counters, and the manifest.
pub(crate) struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    current: ArcSwap<Version>,
    manifest: Mutex<Option<ManifestWriter>>,
    next_file_number: AtomicU64,
    /// The newest sequence number visible to readers.
    last_sequence: AtomicU64,
    /// WALs numbered below this hold nothing that is not in table files.
    log_number: AtomicU64,
    next_run_id: AtomicU64,
    obsolete: Arc<ObsoleteFiles>,
    /// A manifest write failed (kept after `close`, unlike the writer).
    manifest_failed: AtomicBool,
    /// Loaded by [`VersionSet::load_read_only`]: there is no manifest to log edits to, ever.
    read_only: bool,
}

impl VersionSet {
    /// Opens the version set of an existing database (`exists = true`) or starts an empty one,
    /// then writes a fresh manifest and points `CURRENT` at it.
    /// `used_file_numbers` is the largest file number found in the directory (a WAL created after
    /// the last manifest edit may be above the manifest's counter); new numbers start above it.
    pub(crate) fn open(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        exists: bool,
        used_file_numbers: u64,
    ) -> Result<VersionSet> {
        let obsolete = Arc::new(ObsoleteFiles::default());
        let recovered = if exists {
            recover(dir, fs.as_ref(), &obsolete)?
        } else {
            Recovered {
                version: Version::default(),
                log_number: 0,
                next_file_number: 1,
                last_sequence: 0,
                next_run_id: 1,
                manifest_number: 0,
            }
        };
        let manifest_number = recovered.manifest_number;
        let set = VersionSet::from_recovered(dir, fs, recovered, obsolete);
        set.mark_file_number_used(used_file_numbers);
        set.start_new_manifest(manifest_number)?;
        Ok(set)
    }

    /// Loads the version set of an existing database without writing anything: `CURRENT` and
    /// the manifest it names are read, no manifest is started, and [`VersionSet::log_and_apply`]
    /// fails with [`Error::ReadOnly`]. For `Db::open_read_only`.
    pub(crate) fn load_read_only(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<VersionSet> {
        let obsolete = Arc::new(ObsoleteFiles::default());
        let recovered = recover(dir, fs.as_ref(), &obsolete)?;
        let mut set = VersionSet::from_recovered(dir, fs, recovered, obsolete);
        set.read_only = true;
        Ok(set)
    }

    fn from_recovered(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        recovered: Recovered,
        obsolete: Arc<ObsoleteFiles>,
    ) -> VersionSet {
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: ArcSwap::from_pointee(recovered.version),
            manifest: Mutex::new(None),
            next_file_number: AtomicU64::new(recovered.next_file_number),
            last_sequence: AtomicU64::new(recovered.last_sequence),
            log_number: AtomicU64::new(recovered.log_number),
            next_run_id: AtomicU64::new(recovered.next_run_id),
            obsolete,
            manifest_failed: AtomicBool::new(false),
            read_only: false,
        }
    }

    fn start_new_manifest(&self, previous: u64) -> Result<()> {
        let number = self.new_file_number();
        let path = self.dir.join(manifest_name(number));
        let mut log = LogWriter::new(self.fs.create_writable(&path)?);
        let mut snapshot = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            ..Default::default()
        };
        self.fill_counters(&mut snapshot);
        let version = self.current();
        for (level, run_id, file) in version.files() {
            snapshot.new_files.push(AddedFile {
                level,
                run_id,
                file: Arc::clone(file),
            });
        }
        snapshot.policy_states.extend(version.policy_states());
        log.add_record(&snapshot.encode())?;
        log.sync()?;
        let temp = self.dir.join("CURRENT.tmp");
        let mut current = self.fs.create_writable(&temp)?;
        current.append(format!("{}\n", manifest_name(number)).as_bytes())?;
        current.sync()?;
        drop(current);
        self.fs.rename(&temp, &self.dir.join(CURRENT_FILE))?;
        self.fs.sync_dir(&self.dir)?;
        *self.manifest.lock() = Some(ManifestWriter {
            number,
            log,
            failed: None,
        });
        if previous != 0 {
            // The old manifest is superseded; failing to delete it only wastes space.
            let _ = self.fs.remove_file(&self.dir.join(manifest_name(previous)));
        }
        Ok(())
    }

    fn fill_counters(&self, edit: &mut VersionEdit) {
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.last_sequence = Some(self.last_sequence.load(Ordering::SeqCst));
        edit.next_run_id = Some(self.next_run_id.load(Ordering::SeqCst));
        edit.log_number
            .get_or_insert(self.log_number.load(Ordering::SeqCst));
    }

    /// Records `edit` durably in the manifest, then installs the version it produces.
    pub(crate) fn log_and_apply(&self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let mut manifest = self.manifest.lock();
        let writer = manifest.as_mut().ok_or(Error::Closed)?;
        if let Some(failure) = &writer.failed {
            return Err(Error::Background(format!(
                "an earlier manifest write failed ({failure}); reopen the database"
            )));
        }
        self.fill_counters(&mut edit);
        let current = self.current();
        let next = current
            .apply(&edit, Some(&self.obsolete))
            .map_err(|reason| {
                Error::corruption(
                    self.dir.join(manifest_name(writer.number)),
                    writer.log.len(),
                    format!("version edit does not apply: {reason}"),
                )
            })?;
        if let Err(error) = writer
            .log
            .add_record(&edit.encode())
            .and_then(|()| writer.log.sync())
        {
            writer.failed = Some(error.to_string());
            self.manifest_failed.store(true, Ordering::SeqCst);
            return Err(error);
        }
        if let Some(log_number) = edit.log_number {
            self.log_number.fetch_max(log_number, Ordering::SeqCst);
        }
        let next = Arc::new(next);
        self.current.store(Arc::clone(&next));
        Ok(next)
    }

    /// True after a manifest write failed. The failed edit may have reached the file anyway (a
    /// failed fsync does not say the bytes are not there, and buffered bytes reach the file when
    /// the writer is dropped), so until a reopen reads the manifest back, no file may be deleted:
    /// the files the failed edit added are obsolete in memory but may be live on disk.
    pub(crate) fn manifest_in_doubt(&self) -> bool {
        self.manifest_failed.load(Ordering::SeqCst)
    }

    /// The current version.
    pub(crate) fn current(&self) -> Arc<Version> {
        self.current.load_full()
    }

    /// Allocates a file number (tables, WALs, manifests share one counter).
    pub(crate) fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// Makes sure future file numbers are above `number` (recovery found a WAL this high).
    pub(crate) fn mark_file_number_used(&self, number: u64) {
        self.next_file_number
            .fetch_max(number + 1, Ordering::SeqCst);
    }

    /// Allocates a sorted-run id; later ids are newer runs.
    pub(crate) fn new_run_id(&self) -> u64 {
        self.next_run_id.fetch_add(1, Ordering::SeqCst)
    }

    pub(crate) fn last_sequence(&self) -> u64 {
        self.last_sequence.load(Ordering::Acquire)
    }

    pub(crate) fn set_last_sequence(&self, sequence: u64) {
        self.last_sequence.store(sequence, Ordering::Release);
    }

    pub(crate) fn log_number(&self) -> u64 {
        self.log_number.load(Ordering::SeqCst)
    }

    pub(crate) fn obsolete_files(&self) -> &Arc<ObsoleteFiles> {
        &self.obsolete
    }

    /// Number of the live manifest.
    #[cfg(test)]
    pub(crate) fn manifest_number(&self) -> u64 {
        self.manifest.lock().as_ref().map_or(0, |m| m.number)
    }

    /// Stops accepting edits (the database is closing).
    pub(crate) fn close(&self) {
        *self.manifest.lock() = None;
    }
}

fn recover(dir: &Path, fs: &dyn FileSystem, obsolete: &Arc<ObsoleteFiles>) -> Result<Recovered> {
    let current_path = dir.join(CURRENT_FILE);
    let current = fs.read_to_end(&current_path)?;
    let name = std::str::from_utf8(&current)
        .ok()
        .and_then(|text| text.strip_suffix('\n'))
        .filter(|name| name.starts_with("MANIFEST-") && !name.contains('/'))
        .ok_or_else(|| Error::corruption(&current_path, 0, "CURRENT does not name a manifest"))?;
    let manifest_number: u64 = name["MANIFEST-".len()..]
        .parse()
        .map_err(|_| Error::corruption(&current_path, 0, "CURRENT names a malformed manifest"))?;
    let manifest_path = dir.join(name);
    let bytes = fs.read_to_end(&manifest_path)?;
    replay_manifest(&bytes, &manifest_path, manifest_number, Some(obsolete))
}

/// Rebuilds the tree and the counters from the bytes of manifest `manifest_number`: every edit
/// decoded and applied in order. Split from [`recover`] so the fuzz targets
/// (`crate::fuzz_targets::manifest`) replay arbitrary bytes through exactly the code `open` runs.
/// `obsolete` is where files that edits delete are queued for removal (`None`: nowhere).
pub(crate) fn replay_manifest(
    bytes: &[u8],
    manifest_path: &Path,
    manifest_number: u64,
    obsolete: Option<&Arc<ObsoleteFiles>>,
) -> Result<Recovered> {
    let contents = read_log(bytes);
    if let Some(damage) = &contents.damage {
        // A manifest edit is appended and fsynced before its version is used, so a record cut
        // short at the end is an edit whose job never completed: ignore it. Anything else is
        // damage to acknowledged state.
        if damage.kind != LogDamageKind::Truncated {
            return Err(damage.to_error(manifest_path));
        }
    }
    let mut version = Version::default();
    let (mut log_number, mut next_file_number, mut last_sequence, mut next_run_id) =
        (None, None, None, None);
    for (index, (offset, record)) in contents.records.iter().enumerate() {
        let edit = VersionEdit::decode(record)
            .map_err(|reason| Error::corruption(manifest_path, *offset, reason))?;
        if index == 0 && edit.format_version.is_none() {
            return Err(Error::corruption(
                manifest_path,
                *offset,
                "first manifest record has no format version",
            ));
        }
        version = version
            .apply(&edit, obsolete)
            .map_err(|reason| Error::corruption(manifest_path, *offset, reason))?;
        log_number = edit.log_number.or(log_number);
        next_file_number = edit.next_file_number.or(next_file_number);
        last_sequence = edit.last_sequence.or(last_sequence);
        next_run_id = edit.next_run_id.or(next_run_id);
    }
    let missing =
        |what: &str| Error::corruption(manifest_path, 0, format!("manifest has no {what}"));
    // New file numbers start above the manifest's own; the largest number leaves none (and `+ 1`
    // would overflow), so a CURRENT naming it is damage, not a database to open.
    let first_free_number = manifest_number.checked_add(1).ok_or_else(|| {
        Error::corruption(
            manifest_path,
            0,
            format!("manifest number {manifest_number} leaves no file numbers"),
        )
    })?;
    Ok(Recovered {
        version,
        log_number: log_number.ok_or_else(|| missing("log number"))?,
        next_file_number: next_file_number
            .ok_or_else(|| missing("next file number"))?
            .max(first_free_number),
        last_sequence: last_sequence.ok_or_else(|| missing("last sequence"))?,
        next_run_id: next_run_id.ok_or_else(|| missing("next run id"))?,
        manifest_number,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::RealFileSystem;
    use crate::version::tests::new_file;

    #[test]
    fn edits_survive_reopen_and_old_manifests_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(RealFileSystem);
        let set = VersionSet::open(dir.path(), fs.clone(), false, 0).expect("create");
        let first_manifest = set.manifest_number();
        set.set_last_sequence(42);
        let run = set.new_run_id();
        set.log_and_apply(VersionEdit {
            new_files: vec![new_file(0, run, set.new_file_number(), "a", "k")],
            log_number: Some(5),
            ..Default::default()
        })
        .expect("apply");
        set.close();
        drop(set);
        let set = VersionSet::open(dir.path(), fs.clone(), true, 0).expect("reopen");
        assert_eq!(set.last_sequence(), 42);
        assert_eq!(set.log_number(), 5);
        assert_eq!(set.current().levels[0].runs.len(), 1);
        assert!(set.new_run_id() > run);
        assert!(!dir.path().join(manifest_name(first_manifest)).exists());
    }

    /// Found by `strata stress --fault-rate`: a manifest append that failed after the record's
    /// header was written left a torn record; the next job's edit was appended behind it, its
    /// version installed and its input files deleted, and recovery read the torn record's length
    /// over the next edit, dropped both as a truncated tail, and named deleted files.
    #[test]
    fn after_a_failed_manifest_write_no_edit_is_appended_behind_it() {
        use crate::env::{Fault, FaultInjectionFileSystem, FaultOp, FaultPoint, FileKind};
        let dir = tempfile::tempdir().expect("tempdir");
        let faults = FaultInjectionFileSystem::default();
        let fs: Arc<dyn FileSystem> = Arc::new(faults.clone());
        let set = VersionSet::open(dir.path(), fs.clone(), false, 0).expect("create");
        let acked = new_file(0, set.new_run_id(), set.new_file_number(), "a", "c");
        set.log_and_apply(VersionEdit {
            new_files: vec![acked.clone()],
            ..Default::default()
        })
        .expect("first edit");
        // The next record's header is appended, its payload is not.
        faults.arm(FaultPoint {
            op: FaultOp::Append,
            file: Some(FileKind::Manifest),
            skip: 1,
            fault: Fault::Io,
        });
        let torn = new_file(0, set.new_run_id(), set.new_file_number(), "d", "f");
        assert!(set
            .log_and_apply(VersionEdit {
                new_files: vec![torn],
                ..Default::default()
            })
            .is_err());
        let later = new_file(0, set.new_run_id(), set.new_file_number(), "g", "i");
        match set.log_and_apply(VersionEdit {
            new_files: vec![later],
            ..Default::default()
        }) {
            Err(Error::Background(message)) => {
                assert!(
                    message.contains("earlier manifest write failed"),
                    "{message}"
                )
            }
            other => panic!("an edit behind a failed one was accepted: {other:?}"),
        }
        assert_eq!(
            set.current().files().count(),
            1,
            "nothing new was installed"
        );
        set.close();
        drop(set);
        // The reopened manifest holds exactly what was acknowledged.
        let set = VersionSet::open(dir.path(), fs, true, 0).expect("reopen");
        let numbers: Vec<u64> = set.current().files().map(|(_, _, f)| f.number()).collect();
        assert_eq!(numbers, vec![acked.file.number]);
    }

    #[test]
    fn a_read_only_load_recovers_the_tree_writes_nothing_and_refuses_edits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(RealFileSystem);
        let set = VersionSet::open(dir.path(), fs.clone(), false, 0).expect("create");
        set.set_last_sequence(7);
        set.log_and_apply(VersionEdit {
            new_files: vec![new_file(
                0,
                set.new_run_id(),
                set.new_file_number(),
                "a",
                "k",
            )],
            log_number: Some(3),
            ..Default::default()
        })
        .expect("apply");
        let manifest = dir.path().join(manifest_name(set.manifest_number()));
        set.close();
        drop(set);
        let listing = |path: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(path)
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        let (names, bytes) = (listing(dir.path()), std::fs::read(&manifest).expect("read"));

        let set = VersionSet::load_read_only(dir.path(), fs).expect("load");
        assert_eq!(set.last_sequence(), 7);
        assert_eq!(set.log_number(), 3);
        assert_eq!(set.current().levels[0].runs.len(), 1);
        let refused = set.log_and_apply(VersionEdit::default());
        assert!(matches!(refused, Err(Error::ReadOnly)), "{refused:?}");
        drop(set);
        assert_eq!(listing(dir.path()), names, "no manifest was started");
        assert_eq!(std::fs::read(&manifest).expect("read"), bytes);
    }

    /// Found while writing the manifest fuzz target (whose framed replay uses this number):
    /// recovering a manifest numbered `u64::MAX` computed `manifest_number + 1`, which panicked on
    /// the overflow in debug builds and wrapped to 0 in release builds.
    #[test]
    fn a_current_naming_manifest_u64_max_is_corruption_not_an_overflow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(RealFileSystem);
        let set = VersionSet::open(dir.path(), fs.clone(), false, 0).expect("create");
        let number = set.manifest_number();
        drop(set);
        let largest = dir.path().join(manifest_name(u64::MAX));
        std::fs::rename(dir.path().join(manifest_name(number)), &largest).expect("rename");
        std::fs::write(
            dir.path().join(CURRENT_FILE),
            format!("{}\n", manifest_name(u64::MAX)),
        )
        .expect("write CURRENT");
        match VersionSet::open(dir.path(), fs, true, 0) {
            Err(Error::Corruption { file, reason, .. }) => {
                assert_eq!(file, largest);
                assert!(reason.contains("leaves no file numbers"), "{reason}");
            }
            other => panic!("expected corruption, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_flipped_manifest_byte_is_a_corruption_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(RealFileSystem);
        let set = VersionSet::open(dir.path(), fs.clone(), false, 0).expect("create");
        let number = set.manifest_number();
        set.log_and_apply(VersionEdit {
            new_files: vec![new_file(0, 1, set.new_file_number(), "a", "k")],
            ..Default::default()
        })
        .expect("apply");
        drop(set);
        let path = dir.path().join(manifest_name(number));
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[12] ^= 0x01;
        std::fs::write(&path, &bytes).expect("write");
        match VersionSet::open(dir.path(), fs, true, 0) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
            other => panic!("expected corruption, got {:?}", other.map(|_| ())),
        }
    }
}
