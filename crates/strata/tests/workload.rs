//! `Db::workload`: the lifetime workload totals `strata tune --from-db` tunes for, kept across
//! counter resets, flushes and reopens.

use strata::{Db, Options, WorkloadTotals};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// 100 puts, 50 hits and 30 misses, one seek returning 10 entries and one whole scan.
fn serve(db: &Db) {
    for i in 0..100 {
        db.put(key(i), b"value").expect("put");
    }
    for i in 0..50 {
        assert!(db.get(key(i)).expect("get").is_some());
    }
    for i in 1_000..1_030 {
        assert!(db.get(key(i)).expect("get").is_none());
    }
    let mut iter = db.iter();
    iter.seek(key(20));
    assert_eq!(iter.by_ref().take(10).count(), 10);
    drop(iter);
    assert_eq!(db.iter().count(), 100);
}

#[test]
fn totals_count_every_operation_survive_resets_and_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    assert_eq!(db.workload(), WorkloadTotals::default());
    serve(&db);
    let once = WorkloadTotals {
        point_lookups: 80,
        point_lookups_found: 50,
        seeks: 2,
        scan_entries: 110,
        // The whole scan (100 entries) is a long scan; the seek of 10 is not.
        long_scans: 1,
        long_scan_entries: 100,
        writes: 100,
    };
    assert_eq!(db.workload(), once);
    db.reset_stats();
    assert_eq!(db.workload(), once, "a counter reset keeps the totals");
    assert_eq!(db.stats().io.point_lookups, 0);
    db.close().expect("close");

    // No flush happened: close recorded them.
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    assert_eq!(db.workload(), once);
    // Overwrites of the same keys: the write count still grows by every entry written.
    serve(&db);
    db.flush().expect("flush");
    let twice = WorkloadTotals {
        point_lookups: 160,
        point_lookups_found: 100,
        seeks: 4,
        scan_entries: 220,
        long_scans: 2,
        long_scan_entries: 200,
        writes: 200,
    };
    assert_eq!(db.workload(), twice);
    db.close().expect("close");

    let read_only = Db::open_read_only(dir.path(), Options::default()).expect("read-only");
    assert_eq!(read_only.workload(), twice);
}

#[test]
fn a_flush_records_the_totals_so_a_crash_keeps_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    serve(&db);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let recorded = db.workload();
    // A crash: the handle is leaked, so close never runs; the manifest has what the flush logged.
    std::mem::forget(db);
    let copy = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(dir.path()).expect("list") {
        let entry = entry.expect("entry");
        if entry.file_name() == "LOCK" {
            continue;
        }
        // The leaked handle's background threads still run and may delete a file they made
        // obsolete (a log the flush retired) between the listing and the copy: a crash at
        // that moment would not have it either. Any other error fails the test.
        match std::fs::copy(entry.path(), copy.path().join(entry.file_name())) {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => panic!("copy {:?}: {error}", entry.file_name()),
        }
    }
    let db = Db::open_read_only(copy.path(), Options::default()).expect("open the copy");
    assert_eq!(db.workload(), recorded);
}
