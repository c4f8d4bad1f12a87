//! Range filters end to end (`Options::range_filter_bits`, `filter/range.rs`): a bounded
//! iterator leaves out every run whose range filter rules its range out (counted by the
//! engine), returns exactly what a filter-less database returns (tombstones and overwrites
//! included), mixes with files written without a filter, survives a reopen and a full
//! compaction, passes `strata check`, and refuses an invalid setting.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use strata::policy::{CompactionKind, CompactionSettings};
use strata::{Db, Error, Options};

const KEYS: u64 = 4000;

/// SplitMix64: a seeded stream of numbers for the random ranges.
struct Numbers(u64);

impl Numbers {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % bound
    }
}
/// Runs of the layered tree: run `j` holds the keys `i` with `i % RUNS == j`.
const RUNS: u64 = 8;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64, version: u64) -> Vec<u8> {
    format!("value-{i}-{version}").into_bytes()
}

/// Leveling that leaves level 0 alone (a high trigger), so flushed runs stay separate runs.
fn options(range_filter_bits: u32) -> Options {
    Options::default()
        .write_buffer_bytes(1 << 20)
        .level0_compaction_trigger(64)
        .level0_slowdown_writes_trigger(100)
        .level0_stop_writes_trigger(120)
        .range_filter_bits(range_filter_bits)
        .compaction_policy(
            CompactionKind::Leveling
                .build(&CompactionSettings::with_size_ratio(10.0))
                .expect("valid"),
        )
}

/// `RUNS` interleaved runs, then a run of overwrites (every 5th key) and one of tombstones
/// (every 16th key): the model of what the database holds.
fn layered(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for run in 0..RUNS {
        for i in (run..KEYS).step_by(RUNS as usize) {
            db.put(key(i), value(i, 0)).expect("put");
            model.insert(key(i), value(i, 0));
        }
        db.flush().expect("flush");
    }
    for i in (0..KEYS).step_by(5) {
        db.put(key(i), value(i, 1)).expect("put");
        model.insert(key(i), value(i, 1));
    }
    db.flush().expect("flush");
    for i in (0..KEYS).step_by(16) {
        db.delete(key(i)).expect("delete");
        model.remove(&key(i));
    }
    db.flush().expect("flush");
    model
}

fn scan(db: &Db, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range((lo, hi))
        .map(|entry| {
            let (k, v) = entry.expect("scan");
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn expected(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .range((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A range's lower and upper bound.
type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Random bounded ranges: one key, a few keys, an empty gap, and wide ones, with every kind of
/// bound.
fn ranges(seed: u64, count: usize) -> Vec<Range> {
    let mut rng = Numbers(seed);
    (0..count)
        .map(|n| {
            let i = rng.below(KEYS + 10);
            let width = match n % 4 {
                0 => 1,
                1 => 1 + rng.below(5),
                2 => 0,
                _ => 1 + rng.below(599),
            };
            let lo = key(i);
            let lo = match n % 3 {
                0 => Bound::Included(lo),
                1 => Bound::Excluded(lo),
                // Between key i - 1 and key i: "key0000012" + "." sorts before "key00000120".
                _ => Bound::Included([key(i).as_slice(), b"."].concat()),
            };
            let hi = if width == 0 {
                Bound::Included([key(i).as_slice(), b"~"].concat())
            } else if n % 2 == 0 {
                Bound::Excluded(key(i + width))
            } else {
                Bound::Included(key(i + width))
            };
            (lo, hi)
        })
        .collect()
}

#[test]
fn bounded_iterators_skip_the_runs_a_range_filter_rules_out_and_return_the_same_entries() {
    let with = tempfile::tempdir().expect("tempdir");
    let without = tempfile::tempdir().expect("tempdir");
    let db = Db::open(with.path(), options(8)).expect("open");
    let plain = Db::open(without.path(), options(0)).expect("open");
    let model = layered(&db);
    assert_eq!(layered(&plain), model);
    assert_eq!(db.version().levels()[0].runs().len(), RUNS as usize + 2);
    db.reset_stats();
    plain.reset_stats();
    for (lo, hi) in ranges(7, 2000) {
        let want = expected(&model, lo.clone(), hi.clone());
        assert_eq!(scan(&db, lo.clone(), hi.clone()), want, "{lo:?}..{hi:?}");
        assert_eq!(scan(&plain, lo, hi), want);
    }
    let io = db.stats().io;
    assert_eq!(plain.stats().io.range_filter_probes_total(), 0);
    // A one-key range lies in one or two of the eight interleaved runs (and in the overwrite
    // and tombstone runs for some keys): most probes must say no.
    let (probes, negatives) = (
        io.range_filter_probes_total(),
        io.range_filter_negatives_total(),
    );
    assert!(probes >= 2000 * 4, "{probes} probes");
    assert!(
        negatives * 2 >= probes,
        "{negatives} of {probes} probes ruled a run out"
    );
    // Range filter memory is counted while the files are open.
    let stats = db.stats();
    assert!(stats.range_filter_bytes > 0);
    assert!(stats.total_memory_bytes >= stats.range_filter_bytes);
    assert_eq!(plain.stats().range_filter_bytes, 0);
    // Unbounded iterators never ask range filters.
    db.reset_stats();
    assert_eq!(db.iter().count(), model.len());
    let mut tail = db.range(key(KEYS - 10)..);
    assert!(tail.next().is_some());
    assert_eq!(db.stats().io.range_filter_probes_total(), 0);
    let report = strata::check::check(with.path(), &options(8)).expect("check");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    db.close().expect("close");
    plain.close().expect("close");
}

/// Files written without a range filter mix with files that have one; both survive a reopen
/// and a full compaction, after which the one output run answers an empty range without
/// reading anything.
#[test]
fn range_filters_mix_with_older_files_and_survive_reopen_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(0)).expect("open");
    let mut model = BTreeMap::new();
    for i in (0..KEYS).step_by(2) {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    db.flush().expect("flush");
    db.close().expect("close");
    let db = Db::open(dir.path(), options(6)).expect("reopen with range filters");
    for i in (1..KEYS).step_by(2) {
        db.put(key(i), value(i, 1)).expect("put");
        model.insert(key(i), value(i, 1));
    }
    db.flush().expect("flush");
    db.reset_stats();
    for (lo, hi) in ranges(11, 500) {
        assert_eq!(scan(&db, lo.clone(), hi.clone()), expected(&model, lo, hi));
    }
    let io = db.stats().io;
    // Only the new run has a filter: at most one probe per range.
    assert!(io.range_filter_probes_total() <= 500);
    assert!(io.range_filter_probes_total() > 0);
    db.close().expect("close");
    // The full compaction writes the last level: with its range filters kept.
    let db = Db::open(dir.path(), options(6).range_filter_last_level(true)).expect("reopen");
    db.compact().expect("compact");
    db.reset_stats();
    for (lo, hi) in ranges(13, 500) {
        assert_eq!(scan(&db, lo.clone(), hi.clone()), expected(&model, lo, hi));
    }
    assert!(db.stats().io.range_filter_probes_total() > 0);
    // An empty range between two keys: ruled out, nothing read.
    db.reset_stats();
    let gap = [key(100).as_slice(), b"x"].concat();
    let gap_end = [key(100).as_slice(), b"y"].concat();
    assert_eq!(db.range(gap..gap_end).count(), 0);
    let io = db.stats().io;
    assert!(io.range_filter_negatives_total() >= 1);
    assert_eq!(io.data_block_reads.iter().sum::<u64>(), 0);
    assert_eq!(io.index_block_reads.iter().sum::<u64>(), 0);
    db.close().expect("close");
}

#[test]
fn range_filter_bits_above_20_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    match Db::open(dir.path(), options(21)) {
        Err(Error::InvalidArgument(message)) => {
            assert!(message.contains("range_filter_bits"), "{message}")
        }
        Err(other) => panic!("expected InvalidArgument, got {other}"),
        Ok(_) => panic!("range_filter_bits 21 accepted"),
    }
    // The options file spells it the same way.
    let options = strata::options_file::OptionsFile::parse("range_filter_bits = 7")
        .expect("parses")
        .apply_to(Options::default())
        .expect("valid");
    assert_eq!(options.range_filter_bits, 7);
}

/// Concurrent bounded iterators while flushes and compactions change the tree: every one sees
/// a consistent snapshot (the values of one write generation).
#[test]
fn bounded_iterators_stay_consistent_while_the_tree_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(
        Db::open(
            dir.path(),
            Options::default()
                .write_buffer_bytes(64 * 1024)
                .range_filter_bits(6),
        )
        .expect("open"),
    );
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).expect("put");
    }
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for generation in 1..4 {
                for i in 0..KEYS {
                    db.put(key(i), value(i, generation)).expect("put");
                }
                db.flush().expect("flush");
            }
        })
    };
    let readers: Vec<_> = (0..3u64)
        .map(|seed| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut rng = Numbers(seed);
                for _ in 0..1500 {
                    let i = rng.below(KEYS - 3);
                    let got: Vec<_> = db
                        .range(key(i)..key(i + 3))
                        .map(|entry| entry.expect("scan"))
                        .collect();
                    assert_eq!(got.len(), 3, "key {i}");
                    for (n, (k, v)) in got.iter().enumerate() {
                        assert_eq!(k.to_vec(), key(i + n as u64));
                        let text = String::from_utf8(v.to_vec()).expect("utf8");
                        assert!(text.starts_with(&format!("value-{}-", i + n as u64)));
                    }
                }
            })
        })
        .collect();
    writer.join().expect("writer");
    for reader in readers {
        reader.join().expect("reader");
    }
    db.wait_for_compactions().expect("wait");
    for i in (0..KEYS).step_by(97) {
        assert_eq!(
            db.range(key(i)..=key(i))
                .next()
                .map(|e| e.expect("scan").1.to_vec()),
            Some(value(i, 3))
        );
    }
}

/// By default compactions into the last level build no range filter (nearly every range reaches
/// it): flushed runs and upper levels keep theirs, the last level's files have none, and every
/// bounded seek returns what a database with filters everywhere returns.
#[test]
fn the_last_level_gets_no_range_filter_by_default_and_seeks_stay_exact() {
    let layered_options = |last_level: bool| {
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .target_file_bytes(64 * 1024)
            .range_filter_bits(8)
            .range_filter_last_level(last_level)
            .compaction_policy(
                CompactionKind::Leveling
                    .build(&CompactionSettings::with_size_ratio(4.0))
                    .expect("valid"),
            )
    };
    let skip_dir = tempfile::tempdir().expect("tempdir");
    let keep_dir = tempfile::tempdir().expect("tempdir");
    let skip = Db::open(skip_dir.path(), layered_options(false)).expect("open");
    let keep = Db::open(keep_dir.path(), layered_options(true)).expect("open");
    let mut model = BTreeMap::new();
    for version in 0..3 {
        for n in 0..KEYS {
            let i = (n * 7919 + version * 31) % KEYS;
            for db in [&skip, &keep] {
                db.put(key(i), value(i, version)).expect("put");
            }
            model.insert(key(i), value(i, version));
        }
    }
    for i in (0..KEYS).step_by(16) {
        for db in [&skip, &keep] {
            db.delete(key(i)).expect("delete");
        }
        model.remove(&key(i));
    }
    for db in [&skip, &keep] {
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
    }
    let version = skip.version();
    let last = version.last_non_empty_level().expect("a tree");
    assert!(last >= 1, "a compacted tree: last level {last}");
    // A level's files and the range-filter probes one one-key range per file makes: one per
    // file that has a filter.
    let filtered = |db: &Db, level: usize| {
        db.reset_stats();
        // A range over one present key of each file of the level: one probe per filtered file.
        let v = db.version();
        let mut probed_files = 0;
        for run in v.levels()[level].runs() {
            for file in run.files() {
                let lo = file.smallest_user_key().to_vec();
                let mut hi = lo.clone();
                hi.push(0);
                // The key may be a tombstone: the probe is what counts here.
                let _ = db.range(lo..hi).count();
                probed_files += 1;
            }
        }
        (probed_files, db.stats().io.range_filter_probes[level])
    };
    let (files, probes) = filtered(&skip, last);
    assert!(files > 0);
    assert_eq!(
        probes, 0,
        "no last-level file of the default has a range filter"
    );
    let keep_last = keep.version().last_non_empty_level().expect("a tree");
    let (files, probes) = filtered(&keep, keep_last);
    assert!(
        probes >= files as u64,
        "{probes} probes over {files} files: all filtered"
    );
    // (Flushed runs keep theirs: the first test here rules runs of level 0 out.)
    // Every kind of bounded range returns exactly the model's entries, with and without.
    for (lo, hi) in ranges(17, 1500) {
        let want = expected(&model, lo.clone(), hi.clone());
        assert_eq!(scan(&skip, lo.clone(), hi.clone()), want, "{lo:?}..{hi:?}");
        assert_eq!(scan(&keep, lo, hi), want);
    }
    skip.close().expect("close");
    keep.close().expect("close");
}
