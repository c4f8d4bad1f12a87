//! Tree-shape invariants after loading enough data for several levels (40k small keys through a
//! 32 KiB write buffer) and letting the policy settle:
//!
//! * leveling: at most one run per disk level, every level within its capacity (static sizing:
//!   `write_buffer_bytes * T^i`; dynamic sizing: `Leveling::level_capacities`), nothing above the
//!   dynamic base level;
//! * tiering: fewer than `T` runs per level;
//! * both: level 0 below its compaction trigger, every run's files disjoint and in key order,
//!   runs newest first, `Stats` agreeing with `Db::version`, every key readable, write
//!   amplification above 1, and `Db::compact` leaving one run that holds exactly the live keys.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::compaction::{CompactionContext, CompactionPolicy, Leveling, Tiering};
use strata::version::Version;
use strata::{Db, Options};

const KEYS: u32 = 40_000;
const WRITE_BUFFER_BYTES: usize = 32 * 1024;
const LEVEL0_TRIGGER: usize = 3;
/// Compaction outputs are cut at this size, so disk levels hold several files per run.
const TARGET_FILE_BYTES: u64 = 32 * 1024;

fn options(policy: Arc<dyn CompactionPolicy>) -> Options {
    Options::default()
        .write_buffer_bytes(WRITE_BUFFER_BYTES)
        .target_file_bytes(TARGET_FILE_BYTES)
        .block_cache_bytes(1 << 20)
        .level0_compaction_trigger(LEVEL0_TRIGGER)
        // The shapes are the merge policy's alone: no priced filter rebuild rewrites a file
        // (and its bytes) between the version and the statistics a check compares.
        .filter_rebuild_bytes_per_sec(0)
        .compaction_policy(policy)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Loads `KEYS` keys in a scattered order, overwrites every 10th and deletes every 20th, flushes
/// and settles. Returns the live keys and values.
fn load(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for n in 0..KEYS {
        // 7919 is prime and does not divide KEYS: a permutation of 0..KEYS.
        let i = (n * 7919) % KEYS;
        let value = format!("value-{i}-{n}").into_bytes();
        db.put(key(i), &value).expect("put");
        model.insert(key(i), value);
    }
    for i in (0..KEYS).step_by(10) {
        let value = format!("overwritten-{i}").into_bytes();
        db.put(key(i), &value).expect("put");
        model.insert(key(i), value);
    }
    for i in (0..KEYS).step_by(20) {
        db.delete(key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    model
}

/// Invariants every policy keeps: files of a run are disjoint and in key order, runs of a level
/// are newest first, and `Stats` describes the same tree as `Db::version`.
fn check_runs_and_stats(db: &Db, version: &Version) {
    for (level_index, level) in version.levels().iter().enumerate() {
        for pair in level.runs().windows(2) {
            assert!(
                pair[0].id() > pair[1].id(),
                "level {level_index}: runs {} and {} not newest first",
                pair[0].id(),
                pair[1].id()
            );
        }
        for run in level.runs() {
            assert!(!run.files().is_empty(), "level {level_index}: empty run");
            for file in run.files() {
                assert!(
                    file.smallest_user_key() <= file.largest_user_key(),
                    "file {} has an inverted key range",
                    file.number()
                );
                assert!(file.entries() > 0, "file {} is empty", file.number());
            }
            for pair in run.files().windows(2) {
                assert!(
                    pair[0].largest_user_key() < pair[1].smallest_user_key(),
                    "level {level_index} run {}: files {} and {} overlap or are out of order",
                    run.id(),
                    pair[0].number(),
                    pair[1].number()
                );
            }
        }
    }
    let stats = db.stats();
    assert_eq!(stats.runs, version.run_count(), "{stats}");
    let from_version: Vec<(usize, usize, usize, u64, u64)> = version
        .levels()
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, l.runs().len(), l.file_count(), l.bytes(), l.entries()))
        .collect();
    let from_stats: Vec<(usize, usize, usize, u64, u64)> = stats
        .levels
        .iter()
        .map(|l| (l.level, l.runs, l.files, l.bytes, l.entries))
        .collect();
    assert_eq!(from_stats, from_version, "stats levels vs version levels");
}

/// Every live key reads back its value, deleted keys read as absent, and a full scan returns
/// exactly the model.
fn check_contents(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for i in 0..KEYS {
        let got = db.get(key(i)).expect("get").map(|v| v.into_vec());
        assert_eq!(got.as_ref(), model.get(&key(i)), "get key {i}");
    }
    let mut expected = model.iter();
    let mut count = 0;
    for entry in db.iter() {
        let (k, v) = entry.expect("iterator entry");
        let (ek, ev) = expected
            .next()
            .expect("scan returned more keys than were written");
        assert_eq!((&k, &v.into_vec()), (ek, ev), "scan entry {count}");
        count += 1;
    }
    assert_eq!(count, model.len(), "scan length");
}

/// After the shape checks: write amplification is above 1, and a full compaction leaves one run
/// holding exactly the live keys (overwritten versions and tombstones are gone).
fn check_full_compaction(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let stats = db.stats();
    assert!(stats.io.compactions > 0, "{stats}");
    assert!(
        stats.io.write_amplification() > 1.0,
        "write amplification {} after {} compactions",
        stats.io.write_amplification(),
        stats.io.compactions
    );
    db.compact().expect("compact");
    let version = db.version();
    assert_eq!(
        version.run_count(),
        1,
        "compact left {:?}",
        db.stats().levels
    );
    assert_eq!(
        version.entries(),
        model.len() as u64,
        "a full compaction with no snapshot keeps one entry per live key"
    );
    // The policy may move part of that run down afterwards (static sizing keeps the run on
    // the deepest level even where it exceeds that level's capacity): compare the statistics
    // with the tree once it is settled.
    db.wait_for_compactions().expect("settle");
    check_runs_and_stats(db, &db.version());
    check_contents(db, model);
}

fn context() -> CompactionContext {
    CompactionContext {
        level0_compaction_trigger: LEVEL0_TRIGGER,
        ..CompactionContext::new(WRITE_BUFFER_BYTES as u64)
    }
}

fn level_bytes(version: &Version) -> Vec<(usize, u64)> {
    version
        .levels()
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, l.bytes()))
        .collect()
}

fn leveling_has_one_run_per_level_within_capacity(size_ratio: f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Leveling::new(size_ratio).expect("valid size ratio");
    let db = Db::open(dir.path(), options(Arc::new(policy.clone()))).expect("open");
    let model = load(&db);
    let version = db.version();
    check_runs_and_stats(&db, &version);

    assert!(
        version.levels()[0].runs().len() < LEVEL0_TRIGGER,
        "level 0 has {} runs after settling",
        version.levels()[0].runs().len()
    );
    let deepest = version.last_non_empty_level().expect("data on disk");
    assert!(
        deepest >= 2,
        "the test needs several levels: {:?}",
        level_bytes(&version)
    );
    let base = WRITE_BUFFER_BYTES as f64 * size_ratio;
    let (capacities, base_level) = policy.level_capacities(&version, &context());
    assert_eq!(base_level, 1, "static sizing merges level 0 into level 1");
    for (level_index, level) in version.levels().iter().enumerate().skip(1) {
        assert!(
            level.runs().len() <= 1,
            "leveling: level {level_index} has {} runs",
            level.runs().len()
        );
        if (1..=6).contains(&level_index) {
            let expected = base * size_ratio.powi(level_index as i32 - 1);
            assert!(
                (capacities[level_index] - expected).abs() < 1e-6,
                "level {level_index} capacity {} != write_buffer_bytes * T^{level_index}",
                capacities[level_index]
            );
        }
        if level_index < deepest {
            assert!(
                level.bytes() as f64 <= capacities[level_index],
                "level {level_index} holds {} bytes, capacity {}: {:?}",
                level.bytes(),
                capacities[level_index],
                level_bytes(&version)
            );
        }
    }
    check_contents(&db, &model);
    check_full_compaction(&db, &model);
}

#[test]
fn leveling_t4_has_one_run_per_level_within_capacity() {
    leveling_has_one_run_per_level_within_capacity(4.0);
}

#[test]
fn leveling_t2_has_one_run_per_level_within_capacity() {
    leveling_has_one_run_per_level_within_capacity(2.0);
}

/// A leveled merge whose range overlaps files of the level below its output cuts its outputs at
/// their boundaries and lets an output grow past the target, up to twice it, where no boundary
/// comes (RocksDB's limit for non-bottommost outputs): some files end above the target, none
/// above twice it (plus the filter, index and footer written after the last key).
#[test]
fn leveled_outputs_grow_past_the_target_between_boundaries_below_but_not_past_twice_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Leveling::new(4.0).expect("valid size ratio");
    let db = Db::open(dir.path(), options(Arc::new(policy))).expect("open");
    let model = load(&db);
    let version = db.version();
    check_runs_and_stats(&db, &version);
    // What a file holds beyond the data the cut compares with the limit: one entry, the last
    // data block's tail, the filter, the index and the footer.
    let metadata_slack = TARGET_FILE_BYTES / 4;
    let disk_files: Vec<(usize, u64)> = version
        .files()
        .filter(|(level, _, _)| *level > 0)
        .map(|(level, _, file)| (level, file.file_bytes()))
        .collect();
    assert!(
        disk_files
            .iter()
            .all(|&(_, bytes)| bytes <= 2 * TARGET_FILE_BYTES + metadata_slack),
        "a file above twice the target: {disk_files:?}"
    );
    assert!(
        disk_files
            .iter()
            .any(|&(_, bytes)| bytes > TARGET_FILE_BYTES + metadata_slack),
        "no file grew past the target: {disk_files:?}"
    );
    check_contents(&db, &model);
}

#[test]
fn dynamic_leveling_sizes_levels_from_the_bottom() {
    let dir = tempfile::tempdir().expect("tempdir");
    let size_ratio = 3.0;
    let policy = Leveling::new(size_ratio)
        .expect("valid size ratio")
        .with_dynamic_level_bytes(true);
    let db = Db::open(dir.path(), options(Arc::new(policy.clone()))).expect("open");
    let model = load(&db);
    let version = db.version();
    check_runs_and_stats(&db, &version);

    assert!(
        version.levels()[0].runs().len() < LEVEL0_TRIGGER,
        "level 0 has {} runs after settling",
        version.levels()[0].runs().len()
    );
    let (capacities, base_level) = policy.level_capacities(&version, &context());
    let last_level = 6;
    assert!(
        !version.levels()[last_level].is_empty(),
        "dynamic sizing fills the last level first: {:?}",
        level_bytes(&version)
    );
    assert!(
        base_level < last_level,
        "the test needs more than one disk level: {:?}",
        level_bytes(&version)
    );
    for (level_index, level) in version.levels().iter().enumerate().skip(1) {
        assert!(
            level.runs().len() <= 1,
            "leveling: level {level_index} has {} runs",
            level.runs().len()
        );
        if level_index < base_level || level_index > last_level {
            assert!(
                level.is_empty(),
                "level {level_index} is outside the dynamic levels {base_level}..={last_level}: {:?}",
                level_bytes(&version)
            );
        } else if level_index < last_level {
            assert!(
                level.bytes() as f64 <= capacities[level_index],
                "level {level_index} holds {} bytes, capacity {}: {:?}",
                level.bytes(),
                capacities[level_index],
                level_bytes(&version)
            );
        }
    }
    // Capacities shrink by T from the last level up to the base level.
    for level_index in base_level..last_level {
        let ratio = capacities[level_index + 1] / capacities[level_index];
        assert!(
            (ratio - size_ratio).abs() < 1e-9,
            "capacity ratio between levels {level_index} and {} is {ratio}",
            level_index + 1
        );
    }
    check_contents(&db, &model);
    check_full_compaction(&db, &model);
}

fn tiering_keeps_fewer_than_t_runs_per_level(size_ratio: u32, last_level: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Tiering::new(f64::from(size_ratio))
        .expect("valid size ratio")
        .with_last_level(last_level)
        .expect("valid last level");
    let db = Db::open(dir.path(), options(Arc::new(policy))).expect("open");
    let model = load(&db);
    let version = db.version();
    check_runs_and_stats(&db, &version);

    assert!(
        version.levels()[0].runs().len() < LEVEL0_TRIGGER,
        "level 0 has {} runs after settling",
        version.levels()[0].runs().len()
    );
    let deepest = version.last_non_empty_level().expect("data on disk");
    assert!(
        deepest >= 2,
        "the test needs several levels: {:?}",
        level_bytes(&version)
    );
    assert!(
        deepest <= last_level,
        "data below the last level {last_level}: {:?}",
        level_bytes(&version)
    );
    for (level_index, level) in version.levels().iter().enumerate().skip(1) {
        assert!(
            level.runs().len() < size_ratio as usize,
            "tiering: level {level_index} has {} runs, T = {size_ratio}",
            level.runs().len()
        );
    }
    check_contents(&db, &model);
    check_full_compaction(&db, &model);
}

#[test]
fn tiering_t3_keeps_fewer_than_t_runs_per_level() {
    tiering_keeps_fewer_than_t_runs_per_level(3, 6);
}

/// With only two disk levels the last one fills up and merges its runs in place.
#[test]
fn tiering_t2_with_two_levels_merges_the_last_level_in_place() {
    tiering_keeps_fewer_than_t_runs_per_level(2, 2);
}

/// With only two disk levels, level 1 keeps to its capacity and level 2 takes everything else.
#[test]
fn leveling_with_two_levels_keeps_level_1_within_capacity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let size_ratio = 2.0;
    let policy = Leveling::new(size_ratio)
        .expect("valid size ratio")
        .with_last_level(2)
        .expect("valid last level");
    let db = Db::open(dir.path(), options(Arc::new(policy.clone()))).expect("open");
    let model = load(&db);
    let version = db.version();
    check_runs_and_stats(&db, &version);
    assert_eq!(
        version.last_non_empty_level(),
        Some(2),
        "{:?}",
        level_bytes(&version)
    );
    let (capacities, _) = policy.level_capacities(&version, &context());
    let level1 = &version.levels()[1];
    assert!(level1.runs().len() <= 1 && version.levels()[2].runs().len() == 1);
    assert!(
        level1.bytes() as f64 <= capacities[1],
        "level 1 holds {} bytes, capacity {}",
        level1.bytes(),
        capacities[1]
    );
    assert!(
        version.levels()[2].bytes() as f64 > capacities[1] * size_ratio,
        "the last level is over its nominal size, so it is unbounded: {:?}",
        level_bytes(&version)
    );
    check_contents(&db, &model);
    check_full_compaction(&db, &model);
}

#[test]
fn shape_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy: Arc<dyn CompactionPolicy> = Arc::new(Leveling::new(4.0).expect("valid"));
    let db = Db::open(dir.path(), options(Arc::clone(&policy))).expect("open");
    let model = load(&db);
    let before: Vec<Vec<(u64, Vec<u64>)>> = shape_of(&db.version());
    drop(db);
    let db = Db::open(dir.path(), options(policy)).expect("reopen");
    // Nothing was left in the WAL (everything was flushed), so reopening adds no run.
    assert_eq!(shape_of(&db.version()), before, "tree shape after reopen");
    check_runs_and_stats(&db, &db.version());
    check_contents(&db, &model);
}

/// Per level, each run's id and file numbers.
fn shape_of(version: &Version) -> Vec<Vec<(u64, Vec<u64>)>> {
    version
        .levels()
        .iter()
        .map(|l| {
            l.runs()
                .iter()
                .map(|r| (r.id(), r.files().iter().map(|f| f.number()).collect()))
                .collect()
        })
        .collect()
}

/// Keys written in ascending order leave every level-1 file over nothing on level 2, so leveling
/// moves them down several adjacent files a job (RocksDB's `TryExtendNonL0TrivialMove`): the
/// data reads back after such moves, and after a reopen replays them from the manifest.
#[test]
fn data_moved_several_files_a_move_reads_back_after_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy: Arc<dyn CompactionPolicy> = Arc::new(Leveling::new(4.0).expect("valid"));
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir.path(), options(Arc::clone(&policy))).expect("open");
        for i in 0..KEYS {
            let value = format!("ascending-{i}").into_bytes();
            db.put(key(i), &value).expect("put");
            model.insert(key(i), value);
        }
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
        let io = db.stats().io;
        assert!(io.trivial_moves > 0, "{io:?}");
        check_runs_and_stats(&db, &db.version());
        check_contents(&db, &model);
    }
    let log = std::fs::read_to_string(dir.path().join("LOG")).expect("LOG");
    let extended: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("adjacent files over nothing below"))
        .collect();
    assert!(!extended.is_empty(), "no move of several files:\n{log}");
    assert!(
        extended
            .iter()
            .all(|line| line.starts_with("moved") || line.contains(" moved ")),
        "{extended:?}"
    );
    let db = Db::open(dir.path(), options(policy)).expect("reopen");
    check_runs_and_stats(&db, &db.version());
    check_contents(&db, &model);
}
