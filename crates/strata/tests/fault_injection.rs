//! Faults injected through the file system at named points (`strata::env::FaultPoint`): each
//! test is named after what it caught. The random version of these runs in `strata stress
//! --fault-rate` (crates/strata-cli/tests/stress.rs).

use std::sync::Arc;

use strata::env::{Fault, FaultInjectionFileSystem, FaultOp, FaultPoint, FileKind};
use strata::policy::{CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings};
use strata::{Db, Error, Options};

fn options(fs: &FaultInjectionFileSystem) -> Options {
    Options::default()
        .write_buffer_bytes(64 * 1024)
        .file_system(Arc::new(fs.clone()))
}

fn key(i: u32) -> String {
    format!("key{i:05}")
}

/// A database of 500 keys whose next WAL append fails: the engine is in its error state.
fn failed_after_500_keys(dir: &std::path::Path, fs: &FaultInjectionFileSystem) -> Db {
    let db = Db::open(dir, options(fs)).expect("open");
    for i in 0..500 {
        db.put(key(i), format!("value{i}")).expect("put");
    }
    fail_the_next_wal_append(&db, fs);
    db
}

fn fail_the_next_wal_append(db: &Db, fs: &FaultInjectionFileSystem) {
    fs.arm(FaultPoint {
        op: FaultOp::Append,
        file: Some(FileKind::Wal),
        skip: 0,
        fault: Fault::Io,
    });
    db.put(b"failing", b"x").expect_err("the WAL append fails");
}

/// Found by `strata stress --fault-rate`: a flush whose manifest fsync failed left its table
/// file unreferenced in memory, and closing the database deleted it; but the edit had reached the
/// manifest (buffered bytes are written when the writer is dropped, and a failed fsync does not
/// say the bytes are not on disk), so the reopened database named a table that was gone and
/// every read of its keys failed. No file is deleted once a manifest write has failed.
#[test]
fn a_failed_manifest_sync_deletes_no_table_the_manifest_may_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let db = Db::open(dir.path(), options(&fs)).expect("open");
    for i in 0..500 {
        db.put(key(i), format!("value{i}")).expect("put");
    }
    fs.arm(FaultPoint {
        op: FaultOp::Sync,
        file: Some(FileKind::Manifest),
        skip: 0,
        fault: Fault::Io,
    });
    let error = db.flush().expect_err("the flush's manifest sync fails");
    assert!(error.to_string().contains("injected fault"), "{error}");
    // The engine is in its error state: writes are refused with a clear error, reads go on.
    assert!(matches!(db.put(b"later", b"x"), Err(Error::Background(_))));
    assert_eq!(
        db.get(key(7)).expect("reads go on").as_deref(),
        Some(&b"value7"[..])
    );
    db.close().expect("close");
    drop(db);
    fs.clear();
    let db = Db::open(dir.path(), options(&fs)).expect("reopen");
    for i in 0..500 {
        assert_eq!(
            db.get(key(i))
                .unwrap_or_else(|e| panic!("get of {} after reopen: {e}", key(i)))
                .as_deref(),
            Some(format!("value{i}").as_bytes()),
        );
    }
    assert!(
        db.get(b"later").expect("get").is_none(),
        "a refused write is not there"
    );
}

/// A full disk (`ENOSPC` on every append, flush and creation): the write that hits it fails
/// with the operating system's message, later writes are refused, reads go on, and once space is
/// freed a reopen resumes with everything acknowledged.
#[test]
fn a_full_disk_fails_writes_clearly_and_a_reopen_after_freeing_space_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let db = Db::open(dir.path(), options(&fs)).expect("open");
    for i in 0..300 {
        db.put(key(i), vec![b'v'; 200])
            .expect("put before the disk fills");
    }
    let mut acknowledged = 300;
    fs.set_no_space(true);
    let mut first_error = None;
    for i in 300..5_000 {
        match db.put(key(i), vec![b'v'; 200]) {
            Ok(()) => acknowledged = i + 1,
            Err(error) => {
                first_error = Some(error);
                break;
            }
        }
    }
    let error = first_error.expect("a full disk fails a write");
    assert!(
        error.to_string().contains("No space left on device"),
        "{error}"
    );
    assert!(matches!(db.put(b"after", b"x"), Err(Error::Background(_))));
    assert!(db.get(key(0)).expect("reads go on").is_some());
    let _ = db.close();
    drop(db);
    fs.set_no_space(false);
    let db = Db::open(dir.path(), options(&fs)).expect("reopen after freeing space");
    for i in 0..acknowledged {
        assert!(db.get(key(i)).expect("get").is_some(), "{} lost", key(i));
    }
    db.put(b"after", b"x").expect("writes resume");
}

/// Found by `strata stress --auto-tune --fault-rate`: after a failed WAL append (the manifest
/// still writable) `Db::auto_tune_now` took and recorded decisions in the error state, and asked
/// for merges for reads that could only fail. It is refused with the background error, as
/// `Db::compact` is, and records nothing.
#[test]
fn an_auto_tune_decision_is_refused_in_the_error_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let db = Db::open(dir.path(), options(&fs)).expect("open");
    for i in 0..500 {
        db.put(key(i), format!("value{i}")).expect("put");
    }
    let before = db.auto_tune_now().expect("decides before the fault");
    fail_the_next_wal_append(&db, &fs);
    for i in 0..500 {
        db.get(key(i)).expect("reads go on");
    }
    assert!(matches!(db.auto_tune_now(), Err(Error::Background(_))));
    assert_eq!(db.auto_tune_history().last(), Some(&before));
    db.close().expect("close");
}

/// Noticed beside the auto-tune fix above: a user's `Db::set_compaction_policy` and
/// `Db::set_filter_allocator` also checked only closed and read-only, so after a failed WAL
/// append the engine, refusing every write, still appended their switches to the manifest. Both
/// are refused with the background error and change nothing, and a reopen runs the policies it
/// ran before.
#[test]
fn a_policy_switch_is_refused_in_the_error_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let db = failed_after_500_keys(dir.path(), &fs);
    let (policy, allocator) = (db.compaction_policy_name(), db.filter_allocator_name());
    let switched = db.set_compaction_policy(
        CompactionKind::Tiering,
        CompactionSettings::with_size_ratio(4.0),
    );
    assert!(
        matches!(switched, Err(Error::Background(_))),
        "{switched:?}"
    );
    let switched = db.set_filter_allocator(
        FilterAllocatorKind::Uniform,
        FilterSettings {
            bits_per_key: 3.0,
            compaction: CompactionKind::Leveling,
            size_ratio: 10.0,
            expected_entries: 10_000,
            buffer_entries: 500,
            budget_bytes: None,
            disk_modules: None,
        },
    );
    assert!(
        matches!(switched, Err(Error::Background(_))),
        "{switched:?}"
    );
    assert_eq!(db.compaction_policy_name(), policy);
    assert_eq!(db.filter_allocator_name(), allocator);
    db.close().expect("close");
    drop(db);
    fs.clear();
    let db = Db::open(dir.path(), options(&fs)).expect("reopen");
    assert_eq!(db.compaction_policy_name(), policy);
    assert_eq!(db.filter_allocator_name(), allocator);
    assert_eq!(
        db.get(key(7)).expect("get").as_deref(),
        Some(&b"value7"[..])
    );
    db.close().expect("close");
}

const CRASH_CHILD_DIR: &str = "STRATA_FAULT_CRASH_CHILD_DIR";

/// The child of `a_crash_point_kills_the_process_with_sigkill`: arms a crash point on the third
/// WAL append and writes until it fires.
#[test]
#[ignore = "the child process of a_crash_point_kills_the_process_with_sigkill"]
fn crash_point_child() {
    let Ok(dir) = std::env::var(CRASH_CHILD_DIR) else {
        return;
    };
    let fs = FaultInjectionFileSystem::default();
    let db = Db::open(&dir, options(&fs)).expect("child open");
    fs.arm(FaultPoint {
        op: FaultOp::Append,
        file: Some(FileKind::Wal),
        skip: 2,
        fault: Fault::Crash,
    });
    for i in 0..1_000 {
        db.put(key(i), b"v").expect("child put");
    }
    panic!("the crash point never fired");
}

/// `Fault::Crash` ends the process with `SIGKILL` at the armed point (the `unsafe` call to
/// kill(2) in `env/fault.rs`): the child dies by signal 9 after exactly one acknowledged write
/// (each put is one WAL record of a header and a payload append: the second put's header is the
/// third append), and the database it leaves opens with that write.
#[test]
fn a_crash_point_kills_the_process_with_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "crash_point_child",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(CRASH_CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("child runs");
    assert_eq!(status.signal(), Some(9), "{status}");
    let fs = FaultInjectionFileSystem::default();
    let db = Db::open(dir.path(), options(&fs)).expect("reopen");
    assert!(
        db.get(key(0)).expect("get").is_some(),
        "the first put was acknowledged"
    );
    assert!(
        db.get(key(1)).expect("get").is_none(),
        "the second put never reached the WAL"
    );
}

/// Reads that fail or come back short while compactions read their inputs through the
/// read-ahead window (caught by `strata stress --read-fault-rate`: a short read of a window
/// panicked the compaction thread with a slice index out of range). Every call returns; a
/// compaction that hits one fails with an error instead of a panic; once the faults stop, a
/// reopen finds every acknowledged key.
#[test]
fn short_reads_under_compaction_fail_the_job_and_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let options = || {
        options(&fs)
            .write_buffer_bytes(16 * 1024)
            .target_file_bytes(16 * 1024)
            .level0_compaction_trigger(2)
            // Small windows, so that each input is read in many pieces.
            .compaction_readahead_bytes(4096)
    };
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..3_000 {
        db.put(key(i), vec![b'v'; 60]).expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    // Short reads of table files, at many points of the compaction's reads (each point fires
    // once, on the n-th table read after it is armed).
    for skip in (2..200).step_by(7) {
        fs.arm(FaultPoint {
            op: FaultOp::Read,
            file: Some(FileKind::Table),
            skip,
            fault: Fault::ShortRead,
        });
    }
    // A full compaction reads every file front to back: a short read fails it (and the engine
    // enters its error state) with an error that says so, never a panic.
    let result = db.compact();
    let panicked = db
        .stats()
        .background_error
        .is_some_and(|error| error.contains("panicked"));
    assert!(!panicked, "{result:?}");
    let error = result.expect_err("a short read fails the compaction");
    assert!(
        error.to_string().contains("short read"),
        "the error says what happened: {error}"
    );
    let _ = db.close();
    drop(db);
    // The points that did not fire are disarmed.
    fs.clear();
    let db = Db::open(dir.path(), options()).expect("reopen without faults");
    for i in 0..3_000 {
        assert!(db.get(key(i)).expect("get").is_some(), "{} lost", key(i));
    }
}

/// Once the engine is in its sticky error state, compaction workers start no policy job (each
/// would fail at once and wake the others to fail in turn), yet every entry point still returns:
/// several threads at once call `compact` (a queued full compaction still starts, so its ticket
/// is answered), `wait_for_compactions`, `flush`, `put`, `get`, `auto_tune_now` and
/// `set_compaction_policy`, and then `close`.
#[test]
fn in_the_error_state_every_call_from_several_threads_returns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectionFileSystem::default();
    let db = Arc::new(Db::open(dir.path(), options(&fs)).expect("open"));
    for i in 0..500 {
        db.put(key(i), format!("value{i}")).expect("put");
    }
    fs.arm(FaultPoint {
        op: FaultOp::Sync,
        file: Some(FileKind::Manifest),
        skip: 0,
        fault: Fault::Io,
    });
    db.flush().expect_err("the flush's manifest sync fails");
    let (done, finished) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..7)
        .map(|t| {
            let db = Arc::clone(&db);
            let done = done.clone();
            std::thread::spawn(move || {
                for round in 0..28u32 {
                    match (t + round as usize) % 7 {
                        0 => assert!(db.compact().is_err(), "a full compaction fails"),
                        5 => assert!(
                            matches!(db.auto_tune_now(), Err(Error::Background(_))),
                            "an auto-tune decision is refused"
                        ),
                        6 => assert!(
                            matches!(
                                db.set_compaction_policy(
                                    CompactionKind::Tiering,
                                    CompactionSettings::with_size_ratio(4.0)
                                ),
                                Err(Error::Background(_))
                            ),
                            "a policy switch is refused"
                        ),
                        1 => assert!(db.wait_for_compactions().is_err()),
                        2 => assert!(db.flush().is_err()),
                        3 => assert!(matches!(db.put(b"later", b"x"), Err(Error::Background(_)))),
                        _ => assert_eq!(
                            db.get(key(7)).expect("reads go on").as_deref(),
                            Some(&b"value7"[..])
                        ),
                    }
                }
                done.send(t).expect("report");
            })
        })
        .collect();
    drop(done);
    for _ in 0..threads.len() {
        finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("every call returns");
    }
    for thread in threads {
        thread.join().expect("no panic");
    }
    db.close().expect("close");
}
