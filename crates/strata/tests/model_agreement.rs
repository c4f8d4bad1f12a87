//! The cost models against the engine's own counters on small settled trees, under leveling and
//! tiering (DESIGN.md §7.6): device reads per short scan (`Db::predicted_seek_reads`) within 10%
//! of the data blocks the scans read without a block cache, and table bytes written per user byte
//! (`Db::predicted_write_amplification`, the policy replayed) within 10% of what the flushes and
//! compactions wrote. With a cache that holds part of the tree the seek model goes through the
//! model of the cache's S3-FIFO eviction (DESIGN.md §7.6): there the measured reads must lie
//! between 0.65 and 1.10 of the prediction, the band set when the model was Che's LRU
//! approximation (which missed how S3-FIFO keeps the often-landed blocks of the upper runs), kept
//! so that a change that widens the gap beyond it fails.
//!
//! The load waits for compactions after every flush (it flushes itself every `FLUSH_ENTRIES`
//! puts), so the engine makes the decisions the replay makes, at the same points, whatever the
//! machine's load: the test checks the model, not the scheduler.

use std::sync::Arc;

use strata::compaction::{CompactionPolicy, Leveling, Tiering};
use strata::model::writes::WriteStream;
use strata::{Db, Options};

mod common;
use common::{put_settling, SplitMix64};

const KEYS: u64 = 24_000;
const FLUSH_ENTRIES: u64 = 500;
const VALUE_BYTES: usize = 100;
const SCANS: u64 = 4_000;
const SCAN_ENTRIES: u64 = 11;
const TOLERANCE: f64 = 0.10;

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn options(policy: Arc<dyn CompactionPolicy>, cache_bytes: u64) -> Options {
    Options::default()
        .write_buffer_bytes(128 * 1024)
        .target_file_bytes(128 * 1024)
        .level0_compaction_trigger(4)
        .block_cache_bytes(cache_bytes)
        .pin_filter_and_index_blocks(true)
        .compaction_policy(policy)
}

/// Writes keys `0..KEYS` once each in a shuffled order, flushing and settling every
/// `FLUSH_ENTRIES` puts.
fn load(db: &Db) {
    let order = SplitMix64::new(7).shuffled(KEYS);
    put_settling(db, order.into_iter().map(key), VALUE_BYTES, FLUSH_ENTRIES);
}

fn within(predicted: f64, measured: f64, what: &str) {
    between(predicted, measured, 1.0 - TOLERANCE, 1.0 + TOLERANCE, what);
}

fn between(predicted: f64, measured: f64, low: f64, high: f64, what: &str) {
    let ratio = measured / predicted;
    assert!(
        (low..=high).contains(&ratio),
        "{what}: predicted {predicted:.4}, measured {measured:.4} (ratio {ratio:.3})"
    );
}

fn check(name: &str, policy: Arc<dyn CompactionPolicy>) {
    for cache_bytes in [0, 512 * 1024] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options(Arc::clone(&policy), cache_bytes)).expect("open");
        load(&db);
        let stats = db.stats();
        assert!(
            stats.levels.iter().map(|l| l.runs).sum::<usize>() >= 2,
            "{name}: the tree should have several runs: {:?}",
            stats.levels
        );

        // Writes: table bytes per user byte, the replay over the same stream.
        let io = &stats.io;
        let measured = io.table_write_bytes() as f64 / io.user_write_bytes as f64;
        let stream = WriteStream {
            entries: KEYS,
            entries_per_flush: KEYS / io.flushes,
            key_space: None,
            user_bytes_per_entry: (16 + VALUE_BYTES) as f64,
        };
        let predicted = db.predicted_write_amplification(&stream).expect("predicts");
        let per_user_byte = predicted
            .table_bytes_per_user_byte(predicted.replay)
            .expect("positive user bytes");
        // Printed with `--nocapture`: the margin left, and where the bytes went.
        eprintln!(
            "{name}, cache {cache_bytes}: write amplification predicted {per_user_byte:.4}, \
             measured {measured:.4} (ratio {:.3}); written by cause {:?}; flushed bytes per \
             entry {:.2}, the tree's {:.2}",
            measured / per_user_byte,
            io.write_causes(),
            io.flush_write_bytes as f64 / KEYS as f64,
            predicted.table_bytes_per_entry,
        );
        within(
            per_user_byte,
            measured,
            &format!("{name}: write amplification"),
        );

        // Seeks: a scan of 11 entries from a uniformly drawn existing key.
        db.reset_stats();
        let mut draws = SplitMix64::new(11);
        for _ in 0..SCANS {
            let mut iter = db.iter();
            iter.seek(key(draws.below(KEYS)));
            let read = iter.take(SCAN_ENTRIES as usize).count();
            assert!(read as u64 >= 1);
        }
        let measured = db.stats().io.data_block_reads_total() as f64 / SCANS as f64;
        let predicted = db.predicted_seek_reads(SCAN_ENTRIES, false);
        assert_eq!(predicted.reads.index, 0.0, "index blocks are pinned");
        let what = format!("{name}: data blocks per seek, cache {cache_bytes}");
        if cache_bytes == 0 {
            within(predicted.reads.data, measured, &what);
        } else {
            between(predicted.reads.data, measured, 0.65, 1.0 + TOLERANCE, &what);
        }
        db.close().expect("close");
    }
}

#[test]
fn leveling_seeks_and_writes_agree_with_the_counters() {
    check("leveling", Arc::new(Leveling::new(4.0).expect("policy")));
}

#[test]
fn tiering_seeks_and_writes_agree_with_the_counters() {
    check("tiering", Arc::new(Tiering::new(4.0).expect("policy")));
}

/// Lookups of missing keys that recur, after a phase of existing keys has filled the block cache:
/// the lookup model given the history `Db::stream_history` read as the lookups began (the data
/// blocks the cache held, its bytes in use) within 10% of the data blocks they read
/// (DESIGN.md §7.6, "A phase's history"), and closer than the model that takes the cache as full
/// of other blocks.
///
/// Each figure is the median of five databases, each with draws of its own, since which blocks
/// the cache keeps depends on its per-instance random hashing (shards, S3-FIFO queues). The 10%
/// check runs with filters of 7 bits a key, where the lookups read about 2,200 blocks; with 10
/// bits a key they read about 190 (the false positives' first reads, the rest cached), too few for
/// a 10% check: there one database measured 0.99 to 1.32 times the prediction over twelve runs,
/// and the median of five 1.01 to 1.14 over eight (the model a few percent low when the
/// false-positive blocks hardly churn the cache), so with 10 bits only "closer than a full cache"
/// (0.00266 predicted against about 0.0017 measured) is checked.
#[test]
fn recurring_missing_keys_from_the_cache_a_phase_left_agree_with_the_counters() {
    for bits_per_key in [7.0, 10.0] {
        let mut trials: Vec<MissingAfterExisting> = (0..5)
            .map(|trial| missing_after_existing(trial, bits_per_key))
            .collect();
        for t in &trials {
            eprintln!(
                "missing keys after existing ones, {bits_per_key} bits a key: predicted {:.5} \
                 (a full cache {:.5}), measured {:.5}; {} data blocks cached when they began",
                t.predicted, t.full, t.measured, t.cached
            );
        }
        trials.sort_by(|a, b| (a.measured / a.predicted).total_cmp(&(b.measured / b.predicted)));
        let median = &trials[trials.len() / 2];
        let off = |predicted: f64| (predicted / median.measured - 1.0).abs();
        assert!(
            off(median.predicted) < off(median.full),
            "{bits_per_key} bits a key: the history brings the model closer: predicted {}, \
             a full cache {}, measured {} (the median of five databases)",
            median.predicted,
            median.full,
            median.measured
        );
        if bits_per_key < 10.0 {
            within(
                median.predicted,
                median.measured,
                "data blocks per missing-key lookup (the median of five databases)",
            );
        }
    }
}

/// One database of [`recurring_missing_keys_from_the_cache_a_phase_left_agree_with_the_counters`]:
/// data blocks per missing-key lookup, predicted with the phase's history and with a full cache,
/// and measured.
struct MissingAfterExisting {
    predicted: f64,
    full: f64,
    measured: f64,
    cached: u64,
}

fn missing_after_existing(trial: u64, bits_per_key: f64) -> MissingAfterExisting {
    use strata::alloc::Uniform;
    use strata::model::tree::{LookupStream, LookupStreams};
    const MISSING: u64 = 12_000;
    const LOOKUPS: u64 = 120_000;
    const CACHE_BYTES: u64 = 1 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let options = options(Arc::new(Leveling::new(4.0).expect("policy")), CACHE_BYTES)
        .filter_allocator(Arc::new(Uniform::new(bits_per_key).expect("valid")));
    let db = Db::open(dir.path(), options).expect("open");
    load(&db);
    let mut draws = SplitMix64::new(5 + trial);
    for _ in 0..KEYS {
        assert!(db.get(key(draws.below(KEYS))).expect("reads").is_some());
    }
    let history = db.stream_history();
    let cached: u64 = history.cached_data_blocks.values().sum();
    assert!(cached > 0, "{history:?}");
    assert!(history.cache_used_bytes <= CACHE_BYTES, "{history:?}");
    db.reset_stats();
    // Missing keys: key `i` with a suffix, between keys `i` and `i + 1`.
    let missing = |i: u64| {
        let mut k = key(i);
        k.push(b'm');
        k
    };
    for _ in 0..LOOKUPS {
        assert!(db
            .get(missing(draws.below(MISSING) * (KEYS / MISSING)))
            .expect("reads")
            .is_none());
    }
    let measured = db.stats().io.data_block_reads_total() as f64 / LOOKUPS as f64;
    let streams = LookupStreams {
        missing: LookupStream {
            distinct_keys: Some(MISSING as f64),
            lookups: Some(LOOKUPS as f64),
        },
        existing: LookupStream::NEW_KEYS,
        key_range: None,
    };
    let predicted = db
        .predicted_stream_device_reads(&streams, Some(&history))
        .zero_result
        .data;
    let full = db
        .predicted_stream_device_reads(&streams, None)
        .zero_result
        .data;
    db.close().expect("close");
    MissingAfterExisting {
        predicted,
        full,
        measured,
        cached,
    }
}

/// Lookups confined to a tenth of the keys (a hot range, as the bench's `readhot` reads the first
/// percent) read only the data blocks that hold them: predicted with the range
/// (`LookupStreams::key_range`, DESIGN.md §7.6, "A range of keys") within 10% of the counters
/// through a cache that holds the range's blocks and through one that does not, where the model
/// of the whole key range sees 1.3 to hundreds of times the reads. The tree: every key compacted into one run,
/// then three flushes of overwrites, so that each run's keys lie alike over its range, as the
/// model takes them (a leveled tree whose last level took its key ranges at different times
/// holds more keys of the level above in the ranges moved first).
#[test]
fn lookups_confined_to_a_hot_range_agree_with_the_counters() {
    use strata::alloc::Uniform;
    use strata::model::tree::{LookupStream, LookupStreams};
    const HOT: u64 = KEYS / 10;
    const LOOKUPS: u64 = 60_000;
    // (cache bytes, how many times the reads the whole key range's model sees at least): 1 MiB
    // holds the range's blocks, which then miss once each; 96 KiB holds about a third of them.
    for (cache_bytes, whole_over) in [(1u64 << 20, 100.0), (96 << 10, 1.3)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = options(Arc::new(Leveling::new(4.0).expect("policy")), cache_bytes)
            .filter_allocator(Arc::new(Uniform::new(10.0).expect("valid")));
        let db = Db::open(dir.path(), options).expect("open");
        load(&db);
        db.compact().expect("compacts");
        let overwrites = SplitMix64::new(3).shuffled(KEYS).into_iter().take(1_500);
        put_settling(&db, overwrites.map(key), VALUE_BYTES, FLUSH_ENTRIES);
        let runs: usize = db.version().levels().iter().map(|l| l.runs().len()).sum();
        assert!(runs >= 2, "{runs} runs");
        let history = db.stream_history();
        db.reset_stats();
        let mut draws = SplitMix64::new(11);
        for _ in 0..LOOKUPS {
            assert!(db.get(key(draws.below(HOT))).expect("reads").is_some());
        }
        let measured = db.stats().io.data_block_reads_total() as f64 / LOOKUPS as f64;
        let streams = |key_range| LookupStreams {
            missing: LookupStream::NEW_KEYS,
            existing: LookupStream {
                distinct_keys: Some(HOT as f64),
                lookups: Some(LOOKUPS as f64),
            },
            key_range,
        };
        let predicted = db
            .predicted_stream_device_reads(&streams(Some((key(0), key(HOT - 1)))), Some(&history))
            .existing
            .data;
        let whole = db
            .predicted_stream_device_reads(&streams(None), Some(&history))
            .existing
            .data;
        eprintln!(
            "a hot tenth of the keys on {runs} runs through {cache_bytes} bytes of cache: \
             predicted {predicted:.5} (the whole key range {whole:.5}), measured {measured:.5}"
        );
        within(predicted, measured, "data blocks per lookup in a hot range");
        assert!(whole > whole_over * measured, "{whole} {measured}");
        db.close().expect("close");
    }
}
