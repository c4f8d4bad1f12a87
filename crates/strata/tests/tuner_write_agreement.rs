//! The tuner's write term against the engine's counters (DESIGN.md §7.5, "Writes priced by the
//! replay"): a candidate design's replay (`model::writes::replay_design_writes`, what `tuner::tune`
//! prices its best candidates' writes with) predicts the bytes merges write per byte flushed over a
//! long stream of updates, and a small real database of that design, loaded and then updated as
//! long, writes what it predicts within 15%, for leveling, tiering, lazy leveling and Moose.
//!
//! As in `model_agreement.rs`, the database flushes itself every `FLUSH_ENTRIES` puts and waits
//! for its compactions after each flush, so the engine makes its decisions at the points the
//! replay makes them, whatever the machine's load: the test checks the model, not the scheduler.

use strata::model::writes::{replay_design_writes, DesignWrites};
use strata::model::ModelPolicy;
use strata::policy::CompactionSettings;
use strata::{Db, Options};

mod common;
use common::{put_settling, SplitMix64};

const KEYS: u64 = 12_000;
const FLUSH_ENTRIES: u64 = 300;
const VALUE_BYTES: usize = 100;
const WRITE_BUFFER_BYTES: usize = 64 * 1024;
/// Trees' worth of updates after the load (the replay's count, `writes::COUNTED_TREES`).
const UPDATE_TREES: u64 = 4;
const TOLERANCE: f64 = 0.15;

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// Loads `KEYS` keys, then updates `UPDATE_TREES * KEYS` uniformly drawn ones; returns the bytes
/// merges wrote per byte flushed during the updates, the replay's prediction, and the closed form's
/// merges per update for the design (`None` for Moose).
fn measure(policy: ModelPolicy, size_ratio: f64) -> (f64, f64) {
    let kind = policy.kind();
    let settings = CompactionSettings {
        garnering_c: policy.garnering_c().unwrap_or(1.0),
        ..CompactionSettings::with_size_ratio(size_ratio)
    };
    let options = Options::default()
        .write_buffer_bytes(WRITE_BUFFER_BYTES)
        .level0_compaction_trigger(4)
        .compaction_policy(kind.build(&settings).expect("policy"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options).expect("open");
    let order = SplitMix64::new(7).shuffled(KEYS);
    put_settling(&db, order.into_iter().map(key), VALUE_BYTES, FLUSH_ENTRIES);
    let stats = db.stats();
    let (bytes, entries) = stats
        .levels
        .iter()
        .fold((0, 0), |(b, e), l| (b + l.bytes, e + l.entries));
    let table_bytes_per_entry = bytes as f64 / entries as f64;
    db.reset_stats();
    let mut draws = SplitMix64::new(11);
    let updates = (0..UPDATE_TREES * KEYS).map(|_| key(draws.below(KEYS)));
    put_settling(&db, updates, VALUE_BYTES, FLUSH_ENTRIES);
    let io = db.stats().io;
    let measured = io.compaction_write_bytes as f64 / io.flush_write_bytes as f64;
    let replayed = replay_design_writes(&DesignWrites {
        policy,
        size_ratio,
        entries: KEYS as f64,
        entry_bytes: table_bytes_per_entry,
        buffer_bytes: WRITE_BUFFER_BYTES as f64,
        level0_compaction_trigger: 4,
        flush_entries: Some(FLUSH_ENTRIES as f64),
    })
    .expect("replays");
    db.close().expect("close");
    eprintln!(
        "{kind:?} T={size_ratio}: merges per byte flushed measured {measured:.3}, replayed \
         {:.3} (ratio {:.3}); flushes {}, written by cause {:?}",
        replayed.merges_per_update,
        measured / replayed.merges_per_update,
        io.flushes,
        io.write_causes(),
    );
    (measured, replayed.merges_per_update)
}

fn agrees(policy: ModelPolicy, size_ratio: f64) {
    let (measured, replayed) = measure(policy, size_ratio);
    let ratio = measured / replayed;
    assert!(
        (1.0 - TOLERANCE..=1.0 + TOLERANCE).contains(&ratio),
        "{:?}: measured {measured:.3} merges per update, replayed {replayed:.3} (ratio {ratio:.3})",
        policy.kind()
    );
}

#[test]
fn leveling_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::LEVELING, 4.0);
}

#[test]
fn tiering_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::TIERING, 4.0);
}

#[test]
fn lazy_leveling_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::LAZY_LEVELING, 4.0);
}

#[test]
fn moose_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::MOOSE, 4.0);
}

#[test]
fn garnering_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::garnering(0.6), 4.0);
}

#[test]
fn dynamic_leveling_writes_what_its_replay_predicts() {
    agrees(ModelPolicy::LEVELING_DYNAMIC, 4.0);
}
