//! End to end: the engine hooks of `strata study` (`db/study.rs`) — `trace_lookup` names exactly
//! the files a lookup probes without recording anything, and `rewrite_filters` changes filters
//! and nothing else.

use std::sync::Arc;

use strata::compaction::Leveling;
use strata::{Db, Options};

const KEYS: u32 = 12_000;

fn options() -> Options {
    Options::default()
        .write_buffer_bytes(32 * 1024)
        .target_file_bytes(32 * 1024)
        .level0_compaction_trigger(4)
        .access_statistics(true)
        .compaction_policy(Arc::new(Leveling::new(4.0).expect("leveling")))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat(40)).into_bytes()
}

/// Loads keys `0..KEYS`, overwrites every third, deletes every seventh, and leaves a few level-0
/// runs on top of a settled tree, so lookups meet several runs, tombstones and stale versions.
fn build(db: &Db) {
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).expect("put");
    }
    for i in (0..KEYS).step_by(3) {
        db.put(key(i), value(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    for i in (0..KEYS).step_by(7) {
        db.delete(key(i)).expect("delete");
    }
    db.flush().expect("flush");
    for i in (0..KEYS).step_by(11) {
        db.put(key(i), value(i, 2)).expect("put");
    }
    db.flush().expect("flush");
}

fn expected(i: u32) -> Option<Vec<u8>> {
    if i.is_multiple_of(11) {
        Some(value(i, 2))
    } else if i.is_multiple_of(7) {
        None
    } else if i.is_multiple_of(3) {
        Some(value(i, 1))
    } else {
        Some(value(i, 0))
    }
}

/// Every file's (level, run id, smallest key, largest key, entries).
type Shape = Vec<(usize, u64, Vec<u8>, Vec<u8>, u64)>;

fn shape(db: &Db) -> Shape {
    db.version()
        .files()
        .map(|(level, run, file)| {
            (
                level,
                run,
                file.smallest_user_key().to_vec(),
                file.largest_user_key().to_vec(),
                file.entries(),
            )
        })
        .collect()
}

fn estimates(db: &Db) -> Vec<(u64, f64, f64)> {
    db.version()
        .files()
        .map(|(_, _, file)| {
            let estimate = file.state().access_estimate().expect("statistics are on");
            (file.number(), estimate.q, estimate.x)
        })
        .collect()
}

#[test]
fn trace_lookup_names_the_probed_files_and_records_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    build(&db);
    db.wait_for_compactions().expect("settle");
    let version = db.version();
    assert!(
        version.run_count() >= 3,
        "several runs: {}",
        version.run_count()
    );
    // Some lookups first, so that Merlin has statistics that tracing could disturb.
    for i in (0..KEYS).step_by(13) {
        assert_eq!(
            db.get(key(i)).expect("get").map(|v| v.to_vec()),
            expected(i)
        );
    }
    db.reset_stats();
    let before = estimates(&db);

    // Which runs hold which keys, from the files' key ranges of the tree the trace ran against.
    let runs_covering = |user_key: &[u8]| -> Vec<u64> {
        let traced = db.trace_lookups([user_key], |_| {}).expect("trace");
        traced
            .levels()
            .iter()
            .flat_map(|level| level.runs())
            .filter_map(|run| run.file_for_key(user_key).map(|f| f.number()))
            .collect()
    };
    let mut present_probes = 0;
    for i in 0..KEYS {
        let user_key = key(i);
        let trace = db.trace_lookup(&user_key).expect("trace");
        let covering = runs_covering(&user_key);
        let numbers: Vec<u64> = trace.iter().map(|(number, _)| *number).collect();
        assert_eq!(
            numbers,
            covering[..numbers.len()],
            "key {i}: probes follow the runs newest first"
        );
        // Every key was written, so some file holds it (a value or a tombstone) — unless it was
        // deleted and a compaction into the bottom of the tree dropped the tombstone with the
        // value: then every covering run is probed in vain, and there may be none (a compaction
        // that cut its outputs at the next level's boundaries can leave the key between two
        // files of every run).
        match trace.split_last() {
            None => {
                assert_eq!(expected(i), None, "key {i}: a live key is in some file");
                assert!(
                    covering.is_empty(),
                    "key {i}: {covering:?} cover it, none probed"
                );
            }
            Some((last, rest)) => {
                if expected(i).is_some() || last.1 {
                    assert!(last.1, "key {i}: the last probe finds the key");
                } else {
                    assert_eq!(numbers, covering, "key {i}: a dropped key probes every run");
                }
                assert!(rest.iter().all(|(_, found)| !found), "key {i}: {trace:?}");
            }
        }
        present_probes += trace.len();

        // A key between two written keys is in no file: every covering run is probed, in vain.
        let mut missing = user_key.clone();
        missing.push(b'x');
        let trace = db.trace_lookup(&missing).expect("trace");
        assert!(trace.iter().all(|(_, found)| !found));
        let numbers: Vec<u64> = trace.iter().map(|(number, _)| *number).collect();
        assert_eq!(numbers, runs_covering(&missing), "missing key after {i}");
    }
    assert!(
        present_probes > KEYS as usize,
        "some keys are found below a newer run"
    );

    // Nothing recorded, nothing counted on the lookup path.
    assert_eq!(estimates(&db), before, "Merlin's statistics are untouched");
    let io = db.stats().io;
    assert_eq!(io.point_lookups, 0);
    assert_eq!(io.files_probed.iter().sum::<u64>(), 0);
    assert_eq!(io.filter_probes_total(), 0);
    assert_eq!(
        io.data_block_reads_total() + io.index_block_reads_total(),
        0
    );
    assert_eq!(
        io.data_cache_hits + io.index_cache_hits + io.filter_cache_hits,
        0
    );

    // A deleted key: a real lookup probes the same files as its trace, down to the tombstone.
    assert_eq!(db.get(key(7)).expect("get"), None);
    let io = db.stats().io;
    assert_eq!(io.point_lookups, 1);
    assert_eq!(io.files_probed.iter().sum::<u64>(), {
        // The one `get` of key 7 probes the runs down to its tombstone.
        let trace = db.trace_lookup(key(7)).expect("trace");
        trace.len() as u64
    });

    // A key still in the memtable is answered there: no file is probed.
    db.put(b"key00000005", b"in the memtable").expect("put");
    assert!(db.trace_lookup(b"key00000005").expect("trace").is_empty());

    // `trace_lookups` traces against one view and returns its tree.
    let mut traced = 0;
    let tree = db
        .trace_lookups((0..100).map(key), |probes| traced += probes.len())
        .expect("trace");
    assert!(traced > 0);
    assert_eq!(tree.run_count(), db.version().run_count());
}

#[test]
fn rewrite_filters_changes_only_the_filters() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options()).expect("open");
        build(&db);
        db.wait_for_compactions().expect("settle");
        let shape_before = shape(&db);
        let numbers_before: Vec<u64> = db.version().files().map(|(_, _, f)| f.number()).collect();
        // Bits per key depend on the file's key range, so they can be checked after the rewrite
        // (the file numbers change): 0 (no filter) for some files, fractions, above the budget.
        let bits_for_key = |smallest: &[u8]| -> f64 {
            let digit = smallest.last().copied().unwrap_or(b'0') % 5;
            [0.0, 1.5, 4.0, 7.25, 13.0][digit as usize]
        };
        db.rewrite_filters(&|file| bits_for_key(file.smallest_user_key()))
            .expect("rewrite");
        assert_eq!(shape(&db), shape_before, "levels, runs, ranges, entries");
        let version = db.version();
        let mut with_filter = 0;
        for (_, _, file) in version.files() {
            assert!(
                !numbers_before.contains(&file.number()),
                "file {} was rewritten",
                file.number()
            );
            let asked = bits_for_key(file.smallest_user_key());
            assert!(
                (file.bits_per_key() - asked).abs() < 1e-9,
                "file {}: {} bits per key, asked {asked}",
                file.number(),
                file.bits_per_key()
            );
            assert_eq!(file.filter_bytes() == 0, asked == 0.0);
            with_filter += usize::from(asked > 0.0);
            assert!(
                file.state().access_estimate().is_some(),
                "statistics carried over"
            );
        }
        assert!(with_filter > 0 && with_filter < version.files().count());
        for i in 0..KEYS {
            assert_eq!(
                db.get(key(i)).expect("get").map(|v| v.to_vec()),
                expected(i),
                "key {i}"
            );
        }
        // The tree is still one the compaction policy is content with, and writes go on.
        db.put(key(KEYS), value(KEYS, 0)).expect("put");
        db.wait_for_compactions().expect("settle");
        assert_eq!(
            db.get(key(KEYS)).expect("get").map(|v| v.to_vec()),
            Some(value(KEYS, 0))
        );
        db.close().expect("close");
    }
    // Reopen: the manifest names the rewritten files; old files are gone.
    let db = Db::open(dir.path(), options()).expect("reopen");
    for i in 0..=KEYS {
        let want = if i == KEYS {
            Some(value(KEYS, 0))
        } else {
            expected(i)
        };
        assert_eq!(db.get(key(i)).expect("get").map(|v| v.to_vec()), want);
    }
    let live: Vec<u64> = db.version().files().map(|(_, _, f)| f.number()).collect();
    let tables = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert_eq!(tables, live.len(), "no obsolete table left behind");
}

#[test]
fn rewrite_filters_refuses_bad_bits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..1000 {
        db.put(key(i), value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    assert!(db.rewrite_filters(&|_| f64::NAN).is_err());
    assert!(db.rewrite_filters(&|_| -1.0).is_err());
    // The refusal happens before any file is touched; the database still works.
    db.rewrite_filters(&|_| 6.0).expect("rewrite");
    assert_eq!(
        db.get(key(3)).expect("get").map(|v| v.to_vec()),
        Some(value(3, 0))
    );
}
