//! End-to-end behaviour of the public API: reads, writes, batches, iterators, snapshots,
//! flush, compaction and reopen.

use strata::{Db, Error, Options, WriteBatch};

fn small_options() -> Options {
    Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(64 * 1024)
        .block_cache_bytes(1 << 20)
}

#[test]
fn put_get_delete_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"alpha", b"1").expect("put");
    db.put(b"beta", b"2").expect("put");
    db.delete(b"alpha").expect("delete");
    assert_eq!(db.get(b"alpha").expect("get"), None);
    assert_eq!(db.get(b"beta").expect("get").as_deref(), Some(&b"2"[..]));
    drop(db);
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(db.get(b"alpha").expect("get"), None);
    assert_eq!(db.get(b"beta").expect("get").as_deref(), Some(&b"2"[..]));
}

#[test]
fn many_writes_survive_flushes_compactions_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    for i in 0..20_000u32 {
        db.put(
            format!("key{:06}", (i * 7919) % 20_000),
            format!("value{i}"),
        )
        .expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let stats = db.stats();
    assert!(stats.io.flushes > 0, "{stats}");
    assert!(stats.io.compactions > 0, "{stats}");
    assert!(
        stats.levels.iter().any(|l| l.level >= 1),
        "compactions moved data below level 0: {stats}"
    );
    for i in (0..20_000u32).step_by(97) {
        let expected = format!("value{i}");
        let key = format!("key{:06}", (i * 7919) % 20_000);
        assert_eq!(
            db.get(&key).expect("get").as_deref(),
            Some(expected.as_bytes())
        );
    }
    let keys: Vec<Vec<u8>> = db.iter().map(|r| r.expect("entry").0).collect();
    assert_eq!(keys.len(), 20_000);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    db.compact().expect("compact");
    assert_eq!(db.stats().runs, 1);
    db.close().expect("close");
    assert!(matches!(db.get(b"key000001"), Err(Error::Closed)));
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(db.iter().count(), 20_000);
    assert!(db.get(b"key000001").expect("get").is_some());
}

#[test]
fn batches_snapshots_and_ranges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let mut batch = WriteBatch::new();
    batch.put(b"a", b"1").put(b"b", b"2").put(b"c", b"3");
    db.write(batch).expect("write");
    let snapshot = db.snapshot();
    db.put(b"b", b"20").expect("put");
    db.delete(b"c").expect("delete");
    db.flush().expect("flush");
    assert_eq!(snapshot.get(b"b").expect("get").as_deref(), Some(&b"2"[..]));
    assert_eq!(snapshot.get(b"c").expect("get").as_deref(), Some(&b"3"[..]));
    let frozen: Vec<(Vec<u8>, Vec<u8>)> = snapshot
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.into_vec())).expect("entry"))
        .collect();
    assert_eq!(frozen.len(), 3);
    db.compact().expect("compact");
    assert_eq!(
        snapshot.get(b"b").expect("get").as_deref(),
        Some(&b"2"[..]),
        "compaction kept the snapshot's version"
    );
    let now: Vec<Vec<u8>> = db
        .range(b"a".as_slice()..b"c".as_slice())
        .map(|r| r.expect("entry").0)
        .collect();
    assert_eq!(now, vec![b"a".to_vec(), b"b".to_vec()]);
    let mut iter = db.iter();
    iter.seek(b"b");
    assert_eq!(
        iter.next().map(|r| r.expect("entry").1.into_vec()),
        Some(b"20".to_vec())
    );
    assert!(iter.next().is_none());
}

#[test]
fn second_open_is_locked_and_limits_are_enforced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    assert!(matches!(
        Db::open(dir.path(), small_options()),
        Err(Error::Locked(_))
    ));
    let huge_key = vec![0u8; strata::MAX_KEY_BYTES + 1];
    assert!(matches!(
        db.put(&huge_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Db::open(dir.path().join("other"), small_options().write_buffer_bytes(1)),
        Err(Error::InvalidArgument(m)) if m.contains("write_buffer_bytes")
    ));
}

#[test]
fn handles_are_send_and_sync_and_owned() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_send<T: Send + 'static>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<strata::Snapshot>();
    assert_send::<strata::DbIterator>();
    // A snapshot and an iterator outlive the handle they came from and move across threads.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"k", b"v").expect("put");
    let snapshot = db.snapshot();
    let iter = db.iter();
    let clone = db.clone();
    drop(db);
    let reader = std::thread::spawn(move || {
        let value = snapshot.get(b"k").expect("get");
        let keys: Vec<Vec<u8>> = iter.map(|e| e.expect("entry").0).collect();
        (value, keys)
    });
    let (value, keys) = reader.join().expect("thread");
    assert_eq!(value.as_deref(), Some(&b"v"[..]));
    assert_eq!(keys, vec![b"k".to_vec()]);
    clone
        .put(b"k2", b"v2")
        .expect("the remaining clone still writes");
}

/// Entries of every table file, summed over the tree.
fn entries_on_disk(db: &Db) -> u64 {
    db.version()
        .files()
        .map(|(_, _, file)| file.entries())
        .sum()
}

#[test]
fn flush_writes_only_the_newest_version_of_an_overwritten_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options().write_buffer_bytes(1 << 20)).expect("open");
    for round in 0..5u32 {
        for key in 0..100u32 {
            db.put(format!("key{key:03}"), format!("value{key}-{round}"))
                .expect("put");
        }
    }
    db.flush().expect("flush");
    assert_eq!(entries_on_disk(&db), 100, "one version of each key");
    assert_eq!(db.stats().io.flush_hidden_entries, 400);
    for key in 0..100u32 {
        assert_eq!(
            db.get(format!("key{key:03}")).expect("get").as_deref(),
            Some(format!("value{key}-4").as_bytes())
        );
    }
    drop(db);
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(entries_on_disk(&db), 100);
    assert_eq!(
        db.get(b"key042").expect("get").as_deref(),
        Some(&b"value42-4"[..])
    );
}

#[test]
fn flush_keeps_the_version_a_snapshot_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"k", b"v1").expect("put");
    db.put(b"k", b"v2").expect("put");
    let snapshot = db.snapshot();
    db.put(b"k", b"v3").expect("put");
    db.put(b"k", b"v4").expect("put");
    db.flush().expect("flush");
    // v4 and v3 are newer than the snapshot, v2 is what it reads; v1 no one can read.
    assert_eq!(entries_on_disk(&db), 3);
    assert_eq!(db.stats().io.flush_hidden_entries, 1);
    assert_eq!(
        snapshot.get(b"k").expect("get").as_deref(),
        Some(&b"v2"[..])
    );
    assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v4"[..]));
    db.compact().expect("compact");
    assert_eq!(
        snapshot.get(b"k").expect("get").as_deref(),
        Some(&b"v2"[..])
    );
    drop(snapshot);
    drop(db);
    // Reopened, the snapshot is gone but its version is still on disk until a compaction.
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(entries_on_disk(&db), 3);
    assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v4"[..]));
    db.compact().expect("compact");
    assert_eq!(entries_on_disk(&db), 1, "no snapshot left: one version");
    assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v4"[..]));
}

#[test]
fn flush_keeps_tombstones_that_hide_older_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"gone", b"old").expect("put");
    db.put(b"kept", b"old").expect("put");
    db.flush().expect("flush");
    // In the next memtable: a value then a tombstone for `gone`, a tombstone then a value for
    // `kept`. Only the newest of each reaches the file, the tombstone among them.
    db.put(b"gone", b"new").expect("put");
    db.delete(b"gone").expect("delete");
    db.delete(b"kept").expect("delete");
    db.put(b"kept", b"new").expect("put");
    db.flush().expect("flush");
    assert_eq!(entries_on_disk(&db), 4, "two files of two entries each");
    assert_eq!(db.stats().io.flush_hidden_entries, 2);
    assert_eq!(db.get(b"gone").expect("get"), None);
    assert_eq!(db.get(b"kept").expect("get").as_deref(), Some(&b"new"[..]));
    drop(db);
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(db.get(b"gone").expect("get"), None);
    assert_eq!(db.get(b"kept").expect("get").as_deref(), Some(&b"new"[..]));
    let keys: Vec<Vec<u8>> = db.iter().map(|r| r.expect("entry").0).collect();
    assert_eq!(keys, vec![b"kept".to_vec()]);
}
