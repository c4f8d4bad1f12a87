//! `Db::open_read_only`: it sees every acknowledged write (tables on several levels and WAL
//! contents never flushed), writes nothing (every file byte-identical afterwards, not one mutating
//! file-system call), refuses every write entry point with `Error::ReadOnly`, runs beside a
//! writing `Db` in the same process, fails cleanly on a missing database, and works on a file
//! system where every write and sync fails (a full disk), where a normal open cannot.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use strata::compaction::{Leveling, Manual};
use strata::env::{
    FaultInjectionFileSystem, FileLock, FileSystem, RandomAccessFile, RealFileSystem, WritableFile,
};
use strata::{Db, Error, Options, WriteBatch, WriteOptions};

/// What the store must hold: the newest value of every key ever written, `None` if deleted.
type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Small buffers so that a few thousand keys make a tree of several levels.
fn writing_options() -> Options {
    Options::default()
        .write_buffer_bytes(32 * 1024)
        .target_file_bytes(32 * 1024)
        .compaction_policy(Arc::new(Leveling::default()))
}

/// Options for a read-only session: its own allocator and a policy that never picks a job.
fn reading_options() -> Options {
    Options::default().compaction_policy(Arc::new(Manual))
}

fn put(db: &Db, model: &mut Model, k: Vec<u8>, v: Vec<u8>) {
    db.put(&k, &v).expect("put");
    model.insert(k, Some(v));
}

/// Builds a closed database with runs on level 0 and on at least two deeper levels, plus writes
/// that are only in the WAL (overwrites, deletes and new keys acknowledged after the last
/// flush). Returns what it must hold.
fn build_database(path: &Path) -> Model {
    let mut model = Model::new();
    let db = Db::open(path, writing_options()).expect("open");
    // About 2.3 MB of entries through a 32 KiB write buffer: compactions fill levels 1 and 2.
    for i in 0..20_000 {
        put(&db, &mut model, key(i), vec![b'a' + (i % 26) as u8; 100]);
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    db.close().expect("close");
    // Two level-0 runs on top, overwriting old keys, under a policy that cannot merge them away
    // before the shape is checked.
    let db = Db::open(path, writing_options().compaction_policy(Arc::new(Manual))).expect("reopen");
    for round in 0..2u32 {
        for i in (round..20_000).step_by(97) {
            put(
                &db,
                &mut model,
                key(i),
                format!("round{round}-{i}").into_bytes(),
            );
        }
        db.flush().expect("flush");
    }
    // WAL only: never flushed, acknowledged (a batch with a delete, overwrites, new keys).
    let mut batch = WriteBatch::new();
    for i in (0..20_000).step_by(1001) {
        batch.delete(key(i));
        model.insert(key(i), None);
    }
    db.write(batch).expect("write");
    for i in (5..20_000).step_by(499) {
        put(&db, &mut model, key(i), format!("wal-{i}").into_bytes());
    }
    for i in 30_000..30_050 {
        put(
            &db,
            &mut model,
            key(i),
            format!("wal-only-{i}").into_bytes(),
        );
    }
    let version = db.version();
    let levels = version.levels();
    assert!(
        levels[0].runs().len() >= 2,
        "level 0 has the flushed runs: {}",
        levels[0].runs().len()
    );
    let deeper = levels.iter().skip(1).filter(|l| !l.is_empty()).count();
    assert!(deeper >= 2, "tables on two levels below level 0: {deeper}");
    db.close().expect("close");
    let wal_bytes: u64 = list(path)
        .iter()
        .filter(|(name, _)| name.ends_with(".log"))
        .map(|(_, bytes)| bytes.len() as u64)
        .sum();
    assert!(wal_bytes > 0, "the last writes are only in the WAL");
    model
}

/// Every file in the directory, by name, with its contents.
fn list(path: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(path)
        .expect("list")
        .map(|entry| {
            let entry = entry.expect("entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(entry.path()).expect("read");
            (name, bytes)
        })
        .collect()
}

/// Asserts the database holds exactly `model`: every key by `get`, and a full scan.
fn assert_holds(db: &Db, model: &Model) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).expect("get").map(|v| v.into_vec()),
            v.clone(),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .map(|entry| entry.expect("scan"))
        .map(|(k, v)| (k, v.into_vec()))
        .collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    assert_eq!(scanned.len(), expected.len());
    assert!(scanned == expected, "the scan differs from the model");
}

/// The number of sorted runs on each level.
fn runs_per_level(db: &Db) -> Vec<usize> {
    db.version()
        .levels()
        .iter()
        .map(|l| l.runs().len())
        .collect()
}

#[test]
fn a_read_only_open_sees_every_table_level_and_the_unflushed_wal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = build_database(dir.path());
    let shape = {
        let db = Db::open_read_only(dir.path(), reading_options()).expect("open read-only");
        assert!(db.is_read_only());
        assert_holds(&db, &model);
        // A range and a snapshot read the same state.
        let snapshot = db.snapshot();
        assert_eq!(
            snapshot.get(key(30_001)).expect("get").as_deref(),
            Some(&b"wal-only-30001"[..])
        );
        assert_eq!(
            snapshot.get(key(1001)).expect("get"),
            None,
            "deleted in the WAL"
        );
        let range: Vec<_> = db
            .range(key(30_000)..key(30_010))
            .map(|e| e.expect("range").0)
            .collect();
        assert_eq!(range, (30_000..30_010).map(key).collect::<Vec<_>>());
        let stats = db.stats();
        assert!(stats.wal_records_recovered > 0, "{stats}");
        assert_eq!(stats.wal_bytes_dropped, 0);
        assert!(stats.memtable_bytes > 0, "the replayed WAL is in memory");
        let shape = runs_per_level(&db);
        db.close().expect("close");
        assert!(matches!(db.get(key(1)), Err(Error::Closed)));
        shape
    };
    // The WAL was not flushed into a level-0 run: a normal open does that, and finds the shape
    // the read-only session showed plus that one run.
    let db = Db::open(dir.path(), reading_options()).expect("open");
    let reopened = runs_per_level(&db);
    assert_eq!(reopened[0], shape[0] + 1, "{shape:?} then {reopened:?}");
    assert_eq!(reopened[1..], shape[1..]);
    assert_holds(&db, &model);
}

#[test]
fn a_read_only_session_leaves_every_file_byte_identical() {
    let dir = tempfile::tempdir().expect("tempdir");
    // With access statistics, so that the ACCESS file exists and would be saved at close.
    let options = || writing_options().access_statistics(true);
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = Model::new();
    for i in 0..3_000 {
        put(&db, &mut model, key(i), vec![b'v'; 50]);
    }
    db.flush().expect("flush");
    for i in 0..100 {
        db.get(key(i * 7)).expect("get");
    }
    for i in 3_000..3_100 {
        put(&db, &mut model, key(i), b"in the WAL".to_vec());
    }
    db.close().expect("close");
    let before = list(dir.path());
    for name in ["CURRENT", "LOG", "ACCESS"] {
        assert!(
            before.contains_key(name),
            "{name} exists: {:?}",
            before.keys()
        );
    }

    let db = Db::open_read_only(dir.path(), reading_options().access_statistics(true))
        .expect("open read-only");
    assert_holds(&db, &model);
    for i in 0..2_000 {
        db.get(key(i * 3)).expect("get");
    }
    let _ = db.stats().to_string();
    let _ = db.version().run_count();
    let held = db.snapshot();
    let clone = db.clone();
    db.close().expect("close");
    drop((held, clone, db));
    assert!(
        list(dir.path()) == before,
        "the directory changed: {:?} -> {:?}",
        before.keys().collect::<Vec<_>>(),
        list(dir.path()).keys().collect::<Vec<_>>()
    );

    // A handle dropped without `close` writes nothing either.
    drop(Db::open_read_only(dir.path(), reading_options()).expect("open read-only"));
    assert!(list(dir.path()) == before, "the drop changed the directory");
}

/// A file system that refuses, and records, every call that could change the directory.
#[derive(Default)]
struct RefuseChanges {
    attempts: Mutex<Vec<String>>,
}

impl RefuseChanges {
    fn refuse(&self, what: &str, path: &Path) -> Error {
        self.attempts
            .lock()
            .push(format!("{what} {}", path.display()));
        Error::InvalidArgument(format!("{what} {} refused by the test", path.display()))
    }
}

impl FileSystem for RefuseChanges {
    fn create_dir_all(&self, path: &Path) -> strata::Result<()> {
        Err(self.refuse("create_dir_all", path))
    }
    fn create_writable(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        Err(self.refuse("create_writable", path))
    }
    fn open_random_access(
        &self,
        path: &Path,
        direct: bool,
    ) -> strata::Result<Arc<dyn RandomAccessFile>> {
        RealFileSystem.open_random_access(path, direct)
    }
    fn read_to_end(&self, path: &Path) -> strata::Result<Vec<u8>> {
        RealFileSystem.read_to_end(path)
    }
    fn rename(&self, from: &Path, _to: &Path) -> strata::Result<()> {
        Err(self.refuse("rename", from))
    }
    fn remove_file(&self, path: &Path) -> strata::Result<()> {
        Err(self.refuse("remove_file", path))
    }
    fn list_dir(&self, path: &Path) -> strata::Result<Vec<String>> {
        RealFileSystem.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        RealFileSystem.exists(path)
    }
    fn sync_dir(&self, path: &Path) -> strata::Result<()> {
        Err(self.refuse("sync_dir", path))
    }
    fn lock(&self, path: &Path) -> strata::Result<Box<dyn FileLock>> {
        Err(self.refuse("lock", path))
    }
}

#[test]
fn a_read_only_session_makes_no_call_that_could_change_the_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = build_database(dir.path());
    let fs = Arc::new(RefuseChanges::default());
    let options = reading_options()
        .access_statistics(true)
        .file_system(fs.clone());
    // A normal open cannot even start on this file system...
    assert!(Db::open(dir.path(), options.clone()).is_err());
    assert!(!fs.attempts.lock().is_empty());
    fs.attempts.lock().clear();
    // ...a read-only one never asks.
    let db = Db::open_read_only(dir.path(), options).expect("open read-only");
    assert_holds(&db, &model);
    assert!(db.put(b"k", b"v").is_err());
    assert!(db.flush().is_err());
    db.close().expect("close");
    assert_eq!(*fs.attempts.lock(), Vec::<String>::new());
}

#[test]
fn every_write_entry_point_fails_with_the_read_only_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = build_database(dir.path());
    let before = list(dir.path());
    let db = Db::open_read_only(dir.path(), reading_options()).expect("open read-only");
    let read_only = |what: &str, result: strata::Result<()>| match result {
        Err(Error::ReadOnly) => {}
        other => panic!("{what}: expected Error::ReadOnly, got {other:?}"),
    };
    read_only("put", db.put(b"new", b"value"));
    read_only(
        "put_opt",
        db.put_opt(b"new", b"value", WriteOptions { sync: true }),
    );
    read_only("delete", db.delete(key(5)));
    let mut batch = WriteBatch::new();
    batch.put(b"a", b"b").delete(key(6));
    read_only("write", db.write(batch));
    read_only("empty write", db.write(WriteBatch::new()));
    read_only("flush", db.flush());
    read_only("compact", db.compact());
    read_only("rewrite_filters", db.rewrite_filters(&|_| 1.0));
    let message = Error::ReadOnly.to_string();
    assert!(message.contains("read-only"), "{message}");
    // Nothing was applied, and the session still reads.
    assert_eq!(db.get(b"new").expect("get"), None);
    assert_holds(&db, &model);
    // The policy picks nothing: there is nothing to wait for.
    db.wait_for_compactions().expect("nothing to wait for");
    db.close().expect("close");
    // After close, `Closed` comes first, as for a writable database.
    assert!(matches!(db.put(b"k", b"v"), Err(Error::Closed)));

    // Under a policy that has work (three level-0 runs against a trigger of 2, after the normal
    // reopen below flushes the WAL), waiting would never end: the read-only error instead.
    drop(Db::open(dir.path(), reading_options()).expect("open"));
    let busy = reading_options()
        .compaction_policy(Arc::new(Leveling::default()))
        .level0_compaction_trigger(2);
    let db = Db::open_read_only(dir.path(), busy).expect("open read-only");
    let shape: Vec<usize> = db
        .version()
        .levels()
        .iter()
        .map(|l| l.runs().len())
        .collect();
    assert!(shape[0] >= 2, "{shape:?}");
    read_only("wait_for_compactions", db.wait_for_compactions());
    db.close().expect("close");
    assert!(
        list(dir.path()) != before,
        "the normal open flushed the WAL"
    );
}

#[test]
fn read_only_opens_beside_a_writing_db_in_the_same_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing compacts under the writer: a compaction would delete table files the reader has
    // not opened yet, and its reads of them would fail (see `Db::open_read_only`).
    let writer_options = || writing_options().compaction_policy(Arc::new(Manual));
    let writer = Db::open(dir.path(), writer_options()).expect("open");
    let mut model = Model::new();
    for i in 0..2_000 {
        put(&writer, &mut model, key(i), b"flushed".to_vec());
    }
    writer.flush().expect("flush");
    for i in 0..100 {
        // Acknowledged, in the writer's WAL (pushed to the OS after each write), not flushed.
        put(&writer, &mut model, key(i), b"unflushed".to_vec());
    }
    // No lock is taken, so the writer's lock does not keep the reader out.
    let reader = Db::open_read_only(dir.path(), reading_options()).expect("open read-only");
    assert_holds(&reader, &model);
    // The reader sees the database as of its open; the writer goes on undisturbed.
    writer.put(key(5), b"later").expect("put");
    writer.flush().expect("flush");
    assert_eq!(
        reader.get(key(5)).expect("get").as_deref(),
        Some(&b"unflushed"[..])
    );
    assert_eq!(
        writer.get(key(5)).expect("get").as_deref(),
        Some(&b"later"[..])
    );
    // A second writer is still refused: the writer's lock is untouched by the reader.
    assert!(matches!(
        Db::open(dir.path(), writer_options()),
        Err(Error::Locked(_))
    ));
    writer.close().expect("close");
    // With the writer gone, a writable open works while the reader is still open.
    let reopened = Db::open(dir.path(), writer_options()).expect("reopen");
    assert_eq!(
        reopened.get(key(5)).expect("get").as_deref(),
        Some(&b"later"[..])
    );
    assert_holds(&reader, &model);
    reader.close().expect("close");
}

#[test]
fn a_read_only_open_of_a_missing_database_fails_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    match Db::open_read_only(&missing, Options::default()) {
        Err(Error::InvalidArgument(message)) => {
            assert!(message.contains("does not exist"), "{message}")
        }
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
    assert!(!missing.exists(), "nothing is created");

    // An existing directory without a database: refused, and left empty.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    match Db::open_read_only(&empty, Options::default()) {
        Err(Error::InvalidArgument(message)) => {
            assert!(message.contains("no database"), "{message}")
        }
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
    assert!(list(&empty).is_empty(), "nothing is created");
}

#[test]
fn a_read_only_open_reads_where_every_write_and_sync_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = build_database(dir.path());
    let before = list(dir.path());
    // A full disk: every create, append, flush, rename and sync fails.
    let fs = FaultInjectionFileSystem::default();
    fs.set_fail_appends(true);
    fs.set_fail_syncs(true);
    let options = reading_options().file_system(Arc::new(fs.clone()));
    // Today's normal open writes a new manifest, and fails.
    assert!(Db::open(dir.path(), options.clone()).is_err());
    let faults_after_normal_open = fs.injected_faults();
    assert!(faults_after_normal_open > 0);

    let db = Db::open_read_only(dir.path(), options).expect("open read-only on a full disk");
    assert_holds(&db, &model);
    println!("{}", db.stats());
    db.close().expect("close");
    assert_eq!(
        fs.injected_faults(),
        faults_after_normal_open,
        "the read-only session attempted no write or sync"
    );
    // Nothing changed: the failed normal open could not create, rename or append to anything.
    assert!(list(dir.path()) == before, "the directory changed");
}
