use std::collections::BTreeMap;

use super::*;
use crate::compaction::test_support::tree;
use crate::key::ValueKind;

/// Every run's keys, as `run_keys` would read them from its files.
fn keys_of<'a>(
    runs: &'a BTreeMap<u64, Vec<&'a str>>,
) -> impl FnMut(&Run) -> Result<Vec<Vec<u8>>> + 'a {
    |run: &Run| {
        Ok(runs
            .get(&run.id())
            .map(|keys| keys.iter().map(|k| k.as_bytes().to_vec()).collect())
            .unwrap_or_default())
    }
}

fn level0(ids: &[u64]) -> Version {
    let files: Vec<(usize, u64, u64, &str, &str, u64)> =
        ids.iter().map(|&id| (0, id, id, "a", "z", 100)).collect();
    tree(&files)
}

fn hash(key: &str) -> u64 {
    key_hash(key.as_bytes())
}

#[test]
fn a_key_maps_to_the_newest_run_holding_it_and_absent_keys_to_none() {
    let runs = BTreeMap::from([(1, vec!["a", "b"]), (2, vec!["b", "c"]), (3, vec!["d"])]);
    let version = level0(&[3, 2, 1]);
    let index = TopLevelIndex::for_version(None, &version, None, keys_of(&runs)).expect("builds");
    assert_eq!(index.newest_run(hash("a")), Some(1));
    assert_eq!(
        index.newest_run(hash("b")),
        Some(2),
        "the newer of two runs"
    );
    assert_eq!(index.newest_run(hash("c")), Some(2));
    assert_eq!(index.newest_run(hash("d")), Some(3));
    assert_eq!(index.newest_run(hash("e")), None);
    assert_eq!(index.entries(), 4);
    assert!(index.covers(&version));
    assert!(!index.covers(&level0(&[3, 2])));
    assert!(index.memory_bytes() >= 4 * 16);
}

#[test]
fn a_flush_adds_the_memtables_keys_and_a_tm_compaction_drops_the_oldest_runs() {
    let runs = BTreeMap::from([(1, vec!["a", "b"]), (2, vec!["b", "c"])]);
    let first =
        TopLevelIndex::for_version(None, &level0(&[2, 1]), None, keys_of(&runs)).expect("builds");
    // A flush of run 3: its keys come from the memtable, no file is read.
    let mem = MemTable::new(1, 0, 4 << 20);
    mem.insert(10, ValueKind::Value, b"c", b"v");
    mem.insert(11, ValueKind::Deletion, b"x", b"");
    let after_flush = TopLevelIndex::for_version(
        Some(&first),
        &level0(&[3, 2, 1]),
        Some(&mem),
        |run: &Run| panic!("read run {} although the memtable was flushed", run.id()),
    )
    .expect("builds");
    assert_eq!(after_flush.newest_run(hash("c")), Some(3));
    assert_eq!(
        after_flush.newest_run(hash("x")),
        Some(3),
        "a tombstone is a key"
    );
    assert_eq!(after_flush.newest_run(hash("a")), Some(1));
    // A TM compaction took runs 1 and 2 while run 4 was flushed: entries of 1 and 2 go, "c"
    // stays with run 3, and run 4 (no memtable given) is read from its files.
    let runs = BTreeMap::from([(4, vec!["a"])]);
    let after_tm =
        TopLevelIndex::for_version(Some(&after_flush), &level0(&[4, 3]), None, keys_of(&runs))
            .expect("builds");
    assert_eq!(after_tm.newest_run(hash("b")), None);
    assert_eq!(after_tm.newest_run(hash("c")), Some(3));
    assert_eq!(after_tm.newest_run(hash("a")), Some(4));
    assert_eq!(after_tm.entries(), 3);
    assert!(after_tm.covers(&level0(&[4, 3])));
}

#[test]
fn a_change_of_another_shape_remakes_the_hashes_from_the_kept_runs_keys() {
    let runs = BTreeMap::from([(1, vec!["a"]), (2, vec!["b"]), (3, vec!["c"])]);
    let all = TopLevelIndex::for_version(None, &level0(&[3, 2, 1]), None, keys_of(&runs))
        .expect("builds");
    // Run 2 left while the older run 1 stayed: not a TM compaction's shape.
    let mut read = Vec::new();
    let rebuilt = TopLevelIndex::for_version(Some(&all), &level0(&[3, 1]), None, |run: &Run| {
        read.push(run.id());
        keys_of(&runs)(run)
    })
    .expect("builds");
    assert!(read.is_empty(), "no file read again: {read:?}");
    assert!(rebuilt.run_keys(2).is_none());
    assert_eq!(rebuilt.newest_run(hash("b")), None);
    assert_eq!(rebuilt.newest_run(hash("a")), Some(1));
    // A memtable is not taken for a run that is not the newest one added to a carried index.
    let mem = MemTable::new(1, 0, 4 << 20);
    mem.insert(1, ValueKind::Value, b"zzz", b"v");
    let fresh = TopLevelIndex::for_version(None, &level0(&[3]), Some(&mem), keys_of(&runs))
        .expect("builds");
    assert_eq!(fresh.newest_run(hash("zzz")), None);
    assert_eq!(fresh.newest_run(hash("c")), Some(3));
    // A read error is the caller's to handle.
    let failed = TopLevelIndex::for_version(None, &level0(&[1]), None, |_: &Run| {
        Err(crate::Error::corruption("000001.sst", 0, "unreadable"))
    });
    assert!(failed.is_err());
}

#[test]
fn an_in_place_merge_into_the_newest_level0_run_rebuilds_from_the_files() {
    // Leveling's intra-L0 merge (`merge_within_level0`), picked before a switch to EcoTune and
    // installed after it: runs 1 and 2 merge into run 3, which keeps its id but gets a new file
    // (number 4) holding all three runs' keys. The merged-away runs are the oldest, but their
    // keys did not leave level 0.
    let runs = BTreeMap::from([(1, vec!["a"]), (2, vec!["b"]), (3, vec!["c"])]);
    let before = TopLevelIndex::for_version(None, &level0(&[3, 2, 1]), None, keys_of(&runs))
        .expect("builds");
    let merged = tree(&[(0, 3, 4, "a", "z", 100)]);
    let runs = BTreeMap::from([(3, vec!["a", "b", "c"])]);
    assert!(!before.covers(&merged));
    let after =
        TopLevelIndex::for_version(Some(&before), &merged, None, keys_of(&runs)).expect("builds");
    assert_eq!(
        after.newest_run(hash("a")),
        Some(3),
        "a key merged into run 3"
    );
    assert_eq!(after.newest_run(hash("b")), Some(3));
    assert_eq!(after.newest_run(hash("c")), Some(3));
    assert_eq!(after.entries(), 3);
    // A rewrite in place of the same run set (a filter rebuild) is not covered either: its file
    // changed, so the index is made again rather than trusted.
    let rewritten = tree(&[
        (0, 3, 5, "a", "z", 100),
        (0, 2, 2, "a", "z", 100),
        (0, 1, 1, "a", "z", 100),
    ]);
    assert!(!before.covers(&rewritten));
}

fn keys_in(keys: &RunKeys) -> Vec<&[u8]> {
    (0..keys.len()).map(|i| keys.key(i)).collect()
}

#[test]
fn run_keys_are_sorted_distinct_and_answer_range_questions() {
    let keys = RunKeys::from_sorted([&b"b"[..], b"b", b"d", b"fff"]).expect("sorted");
    assert_eq!(
        keys_in(&keys),
        [&b"b"[..], b"d", b"fff"],
        "a repeat kept once"
    );
    assert_eq!(keys.first_at_or_after(b""), Some(&b"b"[..]));
    assert_eq!(keys.first_at_or_after(b"c"), Some(&b"d"[..]));
    assert_eq!(keys.first_at_or_after(b"d"), Some(&b"d"[..]));
    assert_eq!(keys.first_at_or_after(b"ff"), Some(&b"fff"[..]));
    assert_eq!(keys.first_at_or_after(b"g"), None);
    assert!(keys.any_in(b"c", b"d"));
    assert!(keys.any_in(b"a", b"b"));
    assert!(!keys.any_in(b"e", b"ff"), "between two keys");
    assert!(!keys.any_in(b"g", b"z"), "past the last key");
    assert_eq!(keys.lower_bound(b"zz"), 3);
    assert_eq!(keys.key(7), b"", "past the end: empty, no panic");
    // The empty key is a key.
    let with_empty = RunKeys::from_sorted([&b""[..], b"a"]).expect("sorted");
    assert_eq!(with_empty.first_at_or_after(b""), Some(&b""[..]));
    // Out of order: refused, and the index with it (lookups then go without it).
    assert!(RunKeys::from_sorted([&b"b"[..], b"a"]).is_none());
    let runs = BTreeMap::from([(1, vec!["b", "a"])]);
    assert!(TopLevelIndex::for_version(None, &level0(&[1]), None, keys_of(&runs)).is_err());
    let empty = RunKeys::from_sorted(std::iter::empty()).expect("empty");
    assert_eq!(empty.first_at_or_after(b"a"), None);
    assert!(!empty.any_in(b"", b"zzz"));
}

#[test]
fn every_run_keeps_its_own_keys_and_unchanged_runs_share_them_across_versions() {
    let runs = BTreeMap::from([(1, vec!["a", "m"]), (2, vec!["m", "z"])]);
    let first =
        TopLevelIndex::for_version(None, &level0(&[2, 1]), None, keys_of(&runs)).expect("builds");
    // "m" is in both runs: the ordered half names both (an older snapshot may read run 1's
    // version), the hashed half only the newest.
    let holding = |index: &TopLevelIndex, low: &[u8], high: &[u8]| -> Vec<u64> {
        [1, 2, 3]
            .into_iter()
            .filter(|&id| index.run_keys(id).is_some_and(|k| k.any_in(low, high)))
            .collect()
    };
    assert_eq!(holding(&first, b"m", b"m"), [1, 2]);
    assert_eq!(holding(&first, b"b", b"l"), Vec::<u64>::new());
    assert_eq!(holding(&first, b"n", b"zz"), [2]);
    assert_eq!(first.newest_run(hash("m")), Some(2));
    // A flush of run 3: runs 1 and 2 keep their keys (the same allocation), run 3 takes the
    // memtable's, tombstones included.
    let mem = MemTable::new(1, 0, 4 << 20);
    mem.insert(10, ValueKind::Value, b"c", b"v1");
    mem.insert(11, ValueKind::Value, b"c", b"v2");
    mem.insert(12, ValueKind::Deletion, b"q", b"");
    let second = TopLevelIndex::for_version(
        Some(&first),
        &level0(&[3, 2, 1]),
        Some(&mem),
        |run: &Run| panic!("read run {} although its keys were held", run.id()),
    )
    .expect("builds");
    for id in [1, 2] {
        assert!(Arc::ptr_eq(
            first.run_keys(id).expect("held"),
            second.run_keys(id).expect("held")
        ));
    }
    assert_eq!(
        keys_in(second.run_keys(3).expect("held")),
        [&b"c"[..], b"q"],
        "one entry a key, a tombstone too"
    );
    assert_eq!(holding(&second, b"b", b"d"), [3]);
    assert_eq!(holding(&second, b"a", b"z"), [1, 2, 3]);
    let memory = second.memory_bytes();
    assert!(memory > first.memory_bytes(), "{memory}");
    // Five keys of one byte: at least their bytes and offsets, and the hash table's slots.
    assert!(memory >= 5 * (1 + 4) + 4 * 17, "{memory}");
}
