//! EcoTune end to end (DESIGN.md §6; `strata::compaction::ecotune`): a database under a stream of
//! overwrites goes through several rounds, keeps the three-level shape, answers every read with
//! the newest value, probes at most one top-level run per point lookup through the top-level
//! index (none for an absent key), and keeps its rounds and its index across a reopen.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::compaction::ecotune::{stored_round, EcoTune, EcoTuneSettings, MAIN_LEVEL};
use strata::{Db, Options};

const KEYS: u32 = 20_000;
const WRITE_BUFFER: usize = 8 * 1024;

/// `K` is fixed at the paper's 100: measured live, it would take in the full scans `check` runs
/// (20,000 entries each), and a round starting after one would shrink `S` to one write buffer, a
/// unit to one flush, so the top level would never hold two runs.
fn options() -> Options {
    Options::default()
        .write_buffer_bytes(WRITE_BUFFER)
        .target_file_bytes(256 * 1024)
        .block_cache_bytes(256 * 1024)
        .bits_per_key(6.0)
        .expect("valid")
        .compaction_policy(Arc::new(
            EcoTune::new(EcoTuneSettings {
                scan_length: Some(100),
                ..EcoTuneSettings::default()
            })
            .expect("valid"),
        ))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32, pass: u32) -> Vec<u8> {
    format!("value-{i}-{pass}-{}", "x".repeat(80)).into_bytes()
}

/// Writes every key once per pass, in a scattered order.
fn write_passes(db: &Db, model: &mut BTreeMap<u32, u32>, passes: std::ops::Range<u32>) {
    for pass in passes {
        for n in 0..KEYS {
            let i = (n * 7919 + pass * 131) % KEYS;
            db.put(key(i), value(i, pass)).expect("put");
            model.insert(i, pass);
        }
    }
}

fn check(db: &Db, model: &BTreeMap<u32, u32>) {
    for (&i, &pass) in model.iter().step_by(7) {
        assert_eq!(
            db.get(key(i)).expect("get"),
            Some(value(i, pass).into()),
            "key {i}"
        );
    }
    let mut scanned = 0;
    for (entry, (&i, &pass)) in db.iter().zip(model.iter()) {
        let (k, v) = entry.expect("scan");
        assert_eq!((k.to_vec(), v.to_vec()), (key(i), value(i, pass)));
        scanned += 1;
    }
    assert_eq!(scanned, model.len());
    assert_eq!(
        db.iter().count(),
        model.len(),
        "no entry beyond the model's"
    );
}

/// Level-0 files probed over `lookups` (a point lookup each).
fn level0_probes(db: &Db, lookups: impl Fn(&Db)) -> u64 {
    let before = db.stats().io.files_probed[0];
    lookups(db);
    db.stats().io.files_probed[0] - before
}

#[test]
fn ecotune_goes_through_rounds_and_probes_one_top_level_run_per_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = BTreeMap::new();
    write_passes(&db, &mut model, 0..3);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    check(&db, &model);

    let version = db.version();
    let round = stored_round(&version).expect("a round is logged");
    assert!(round.number >= 2, "rounds so far: {round:?}");
    let levels = version.levels();
    assert!(levels[MAIN_LEVEL].runs().len() <= round.parameters.units as usize);
    let below: usize = levels[MAIN_LEVEL + 1..]
        .iter()
        .map(|l| l.runs().len())
        .sum();
    assert_eq!(below, 1, "one last-level run");
    assert!(
        db.stats().compaction_policy.starts_with("ecotune"),
        "{}",
        db.stats().compaction_policy
    );

    // Small memtables stay in the top level (S is at least three write buffers here) until it
    // holds several runs, each spanning the whole key range.
    let unit_bytes = round.unit_bytes;
    assert!(unit_bytes > 2 * WRITE_BUFFER as u64, "S = {unit_bytes}");
    let mut pass = 3;
    let last_pass_keys: Vec<u32> = loop {
        let keys: Vec<u32> = (0..KEYS).skip(pass as usize).step_by(400).collect();
        for &i in &keys {
            db.put(key(i), value(i, pass)).expect("put");
            model.insert(i, pass);
        }
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
        if db.version().levels()[0].runs().len() >= 2 {
            break keys;
        }
        pass += 1;
        assert!(
            pass < 40,
            "the top level never held two runs: {:?}, {}",
            stored_round(&db.version()),
            db.stats()
        );
    };
    let stats = db.stats();
    assert!(stats.top_index_entries > 0, "{stats}");
    assert!(stats.top_index_bytes >= stats.top_index_entries * 16);
    assert!(stats.total_memory_bytes >= stats.top_index_bytes);

    // Present keys: at most one top-level run each; absent keys: none (the index says so).
    let present = 2_000u64;
    let probes = level0_probes(&db, |db| {
        for i in (0..KEYS).step_by((KEYS as usize) / present as usize) {
            assert!(db.get(key(i)).expect("get").is_some());
        }
    });
    assert!(
        probes <= present,
        "{probes} level-0 probes for {present} lookups"
    );
    // Keys of the newest run: found in the first (and only) run probed.
    let probes = level0_probes(&db, |db| {
        for &i in &last_pass_keys {
            assert_eq!(db.get(key(i)).expect("get"), Some(value(i, pass).into()));
        }
    });
    assert_eq!(probes, last_pass_keys.len() as u64, "one probe each");
    let probes = level0_probes(&db, |db| {
        for i in 0..2_000u32 {
            assert!(db.get(format!("key{i:08}-absent")).expect("get").is_none());
        }
    });
    assert_eq!(probes, 0, "an absent key skips the top level");
    check(&db, &model);

    // A reopen rebuilds the index from the files and resumes the round: the round as it is at
    // close, not `round`. The loop above may have run a TM compaction (level 0 reaching the
    // round's `unit_flushes` runs on the way to two), and a TM compaction on a closed round
    // starts the next one; where the first phase leaves the round is timing-dependent (`S`, the
    // flushes a unit and `R` come from the measured flush size and the tree's size when the
    // round started).
    let entries = stats.top_index_entries;
    let at_close = stored_round(&db.version()).expect("a round is logged");
    assert!(
        at_close.number >= round.number,
        "{at_close:?} after {round:?}"
    );
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.stats().top_index_entries, entries);
    let reopened = stored_round(&db.version()).expect("the round survives");
    assert_eq!(reopened, at_close);
    let probes = level0_probes(&db, |db| {
        for i in 0..500u32 {
            assert!(db.get(format!("key{i:08}-absent")).expect("get").is_none());
        }
    });
    assert_eq!(probes, 0);
    check(&db, &model);
    write_passes(&db, &mut model, 5..6);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    check(&db, &model);
    db.close().expect("close");
}

/// The index appears with a switch to EcoTune and goes with a switch away.
#[test]
fn the_top_level_index_follows_a_policy_switch() {
    use strata::policy::{CompactionKind, CompactionSettings};
    let dir = tempfile::tempdir().expect("tempdir");
    // One flush of about 12 KB, under S (one 64 KiB write buffer): it stays in the top level.
    let db = Db::open(
        dir.path(),
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .compaction_policy(Arc::new(strata::compaction::Leveling::default())),
    )
    .expect("open");
    let mut model = BTreeMap::new();
    for i in 0..100 {
        db.put(key(i), value(i, 0)).expect("put");
        model.insert(i, 0);
    }
    db.flush().expect("flush");
    assert!(!db.version().levels()[0].is_empty());
    assert_eq!(db.stats().top_index_entries, 0, "leveling keeps no index");
    db.set_compaction_policy(
        CompactionKind::Ecotune,
        CompactionSettings::with_size_ratio(4.0),
    )
    .expect("switch");
    assert_eq!(db.version().levels()[0].entries(), 100);
    assert_eq!(db.stats().top_index_entries, 100);
    db.set_compaction_policy(
        CompactionKind::Leveling,
        CompactionSettings::with_size_ratio(10.0),
    )
    .expect("switch back");
    assert_eq!(db.stats().top_index_entries, 0);
    check(&db, &model);
    db.close().expect("close");
}

/// Without the top-level index (a setting, to measure what it saves) every top-level run whose
/// key range covers a key is probed.
#[test]
fn without_the_index_lookups_probe_every_top_level_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = EcoTuneSettings {
        top_level_index: false,
        ..EcoTuneSettings::default()
    };
    // A 64 KiB write buffer: three small flushes stay in the top level (S is one write buffer
    // on a tree this small).
    let db = Db::open(
        dir.path(),
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .bits_per_key(6.0)
            .expect("valid")
            .compaction_policy(Arc::new(EcoTune::new(settings).expect("valid"))),
    )
    .expect("open");
    let mut model = BTreeMap::new();
    for pass in 0..3 {
        for i in (pass..KEYS).step_by(1000) {
            db.put(key(i), value(i, pass)).expect("put");
            model.insert(i, pass);
        }
        db.flush().expect("flush");
    }
    db.wait_for_compactions().expect("settle");
    let top_runs = db.version().levels()[0].runs().len() as u64;
    assert_eq!(top_runs, 3, "{:?}", db.version().levels()[0]);
    assert_eq!(db.stats().top_index_entries, 0);
    let probes = level0_probes(&db, |db| {
        for i in 0..100u32 {
            assert!(db
                .get(format!("key{:08}-absent", i * 97))
                .expect("get")
                .is_none());
        }
    });
    // Each absent key inside the runs' common range reaches every run's filter.
    assert!(
        probes >= 2 * 100,
        "{probes} level-0 probes for 100 absent keys"
    );
    check(&db, &model);
    db.close().expect("close");
}

/// Level-0 runs iterator seeks positioned themselves in over `lookups`.
fn level0_seek_runs(db: &Db, lookups: impl FnOnce(&Db)) -> u64 {
    let before = db.stats().io.seek_runs[0];
    lookups(db);
    db.stats().io.seek_runs[0] - before
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What `range` of a model gives: `(key, value)` pairs in `[low, high)` (`high` `None`: to the
/// end).
fn model_range(model: &Model, low: &[u8], high: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .range(low.to_vec()..)
        .take_while(|(k, _)| high.is_none_or(|h| k.as_slice() < h))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn collect(iter: strata::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.map(|entry| {
        let (k, v) = entry.expect("scan");
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

/// Every `[low, high)` and `[low, ..)` of `bounds` read through `range` against `expected`.
fn check_ranges(
    bounds: &[Vec<u8>],
    expected: &Model,
    range: impl Fn(&[u8], Option<&[u8]>) -> strata::DbIterator,
) {
    for low in bounds {
        assert_eq!(collect(range(low, None)), model_range(expected, low, None));
        for high in bounds.iter().filter(|high| *high >= low) {
            assert_eq!(
                collect(range(low, Some(high))),
                model_range(expected, low, Some(high)),
                "[{:?}, {:?})",
                String::from_utf8_lossy(low),
                String::from_utf8_lossy(high)
            );
        }
    }
}

/// Range lookups reach the top level through the index's keys: a closed seek opens only the
/// top-level runs holding a key in its range, a scan the runs it passes through, and every
/// snapshot still reads the versions older runs hold (overwrites and deletes across runs).
#[test]
fn range_lookups_open_only_the_top_level_runs_holding_their_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A 64 KiB write buffer: three small flushes stay in the top level.
    let db = Db::open(
        dir.path(),
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .bits_per_key(6.0)
            .expect("valid")
            .compaction_policy(Arc::new(
                EcoTune::new(EcoTuneSettings::default()).expect("valid"),
            )),
    )
    .expect("open");
    let k = |i: u32| key(i * 1000);
    let mut model = Model::new();
    // Run A: keys 0, 1000, ..., 19000.
    for i in 0..20 {
        db.put(k(i), value(i, 0)).expect("put");
        model.insert(k(i), value(i, 0));
    }
    db.flush().expect("flush");
    let (first, first_model) = (db.snapshot(), model.clone());
    // Run B: the even thousands overwritten, 3000 and 7000 deleted, 19000 untouched.
    for i in (0..20).step_by(2) {
        db.put(k(i), value(i, 1)).expect("put");
        model.insert(k(i), value(i, 1));
    }
    for i in [3, 7] {
        db.delete(k(i)).expect("delete");
        model.remove(&k(i));
    }
    db.flush().expect("flush");
    let (second, second_model) = (db.snapshot(), model.clone());
    // Run C: keys between the others, 1500 and 2500, and 3000 again.
    for key in [key(1500), key(2500), k(3)] {
        db.put(&key, b"c").expect("put");
        model.insert(key, b"c".to_vec());
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    assert_eq!(
        db.version().levels()[0].runs().len(),
        3,
        "{:?}",
        db.version()
    );
    // Only run C holds a key in [1500, 1501).
    let (low, high) = (key(1500), key(1501));
    let runs = level0_seek_runs(&db, |db| {
        assert_eq!(
            collect(db.range(low.clone()..high.clone())),
            model_range(&model, &low, Some(&high))
        );
    });
    assert_eq!(
        runs, 1,
        "one top-level run opened for a key only run C holds"
    );
    // A range between every run's keys opens none.
    let runs = level0_seek_runs(&db, |db| {
        assert!(collect(db.range(key(1600)..key(1700))).is_empty());
    });
    assert_eq!(runs, 0);
    // 19000 is only in run A: a scan from it opens A alone, however long.
    let runs = level0_seek_runs(&db, |db| {
        assert_eq!(
            collect(db.range(k(19)..)),
            model_range(&model, &k(19), None)
        );
    });
    assert_eq!(runs, 1);
    // 18000 is in A and B (not C): a scan from it opens those two.
    let runs = level0_seek_runs(&db, |db| {
        assert_eq!(
            collect(db.range(k(18)..)),
            model_range(&model, &k(18), None)
        );
    });
    assert_eq!(runs, 2);
    // 3000: written in A, deleted in B, written again in C; each snapshot reads its own.
    for (view, expected) in [
        (collect(first.range(k(3)..k(4))), &first_model),
        (collect(second.range(k(3)..k(4))), &second_model),
        (collect(db.range(k(3)..k(4))), &model),
    ] {
        assert_eq!(view, model_range(expected, &k(3), Some(&k(4))));
    }
    // Every range, closed and open, in every view, against the models.
    let bounds: Vec<Vec<u8>> = (0..=40).map(|i| key(i * 500)).chain([key(1501)]).collect();
    check_ranges(&bounds, &first_model, |low, high| match high {
        Some(high) => first.range(low.to_vec()..high.to_vec()),
        None => first.range(low.to_vec()..),
    });
    check_ranges(&bounds, &second_model, |low, high| match high {
        Some(high) => second.range(low.to_vec()..high.to_vec()),
        None => second.range(low.to_vec()..),
    });
    check_ranges(&bounds, &model, |low, high| match high {
        Some(high) => db.range(low.to_vec()..high.to_vec()),
        None => db.range(low.to_vec()..),
    });
    // Seeks within one iterator, backwards and forwards, see the same.
    let mut iter = db.iter();
    for target in [k(10), k(2), key(2500), k(19), k(0)] {
        iter.seek(&target);
        let got: Vec<_> = iter
            .by_ref()
            .take(3)
            .map(|e| e.expect("scan").0.to_vec())
            .collect();
        let want: Vec<_> = model
            .range(target.clone()..)
            .take(3)
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(got, want, "seek to {:?}", String::from_utf8_lossy(&target));
    }
    drop((first, second, iter));
    db.close().expect("close");
}

/// A scan opens a top-level run only when it reads up to the run's first key past its start:
/// one that stops before it, on keys of the levels below, reads nothing of it (it waits on the
/// run's first key from the index), and every snapshot still reads the versions the run holds.
#[test]
fn a_scan_opens_no_top_level_run_it_stops_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .bits_per_key(6.0)
            .expect("valid")
            .compaction_policy(Arc::new(
                EcoTune::new(EcoTuneSettings::default()).expect("valid"),
            )),
    )
    .expect("open");
    let k = |i: u32| key(i * 1000);
    let mut model = Model::new();
    // Keys 0, 1000, ..., 19000 below the top level.
    for i in 0..20 {
        db.put(k(i), value(i, 0)).expect("put");
        model.insert(k(i), value(i, 0));
    }
    db.compact().expect("compact");
    let before = db.snapshot();
    let before_model = model.clone();
    // One top-level run: 5500 (new) and 9000 (overwritten).
    for (key, v) in [(key(5500), b"new".to_vec()), (k(9), b"over".to_vec())] {
        db.put(&key, &v).expect("put");
        model.insert(key, v);
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    assert_eq!(
        db.version().levels()[0].runs().len(),
        1,
        "{:?}",
        db.version()
    );
    let scan = |db: &Db, from: &[u8], n: usize| {
        level0_seek_runs(db, |db| {
            let mut iter = db.iter();
            iter.seek(from);
            let got: Vec<_> = iter.take(n).map(|e| e.expect("scan")).collect();
            let want: Vec<_> = model.range(from.to_vec()..).take(n).collect();
            assert_eq!(got.len(), want.len());
            for ((gk, gv), (wk, wv)) in got.iter().zip(want) {
                assert_eq!((gk.to_vec(), gv.to_vec()), (wk.clone(), wv.clone()));
            }
        })
    };
    // 0..=5000 lie below 5500, the run's first key: six entries read, the run never opened
    // (before the marker, every scan opened the run holding the level's next key at its seek).
    assert_eq!(scan(&db, &k(0), 6), 0);
    assert_eq!(scan(&db, &k(3), 3), 0);
    // The seventh entry from 0 is 5500, the run's: it is opened then, once.
    assert_eq!(scan(&db, &k(0), 7), 1);
    // From 6000 the run's next key is 9000 (its newer version wins): three entries stop short.
    assert_eq!(scan(&db, &k(6), 3), 0);
    assert_eq!(scan(&db, &k(6), 4), 1);
    // Whole scans, and the snapshot taken before the run, read what the models hold.
    let all: Vec<_> = db
        .iter()
        .map(|e| e.expect("scan"))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(all, model_range(&model, b"", None));
    assert_eq!(
        collect(before.range(k(0)..)),
        model_range(&before_model, b"", None)
    );
    assert_eq!(
        collect(db.range(k(5)..k(10))),
        model_range(&model, &k(5), Some(&k(10)))
    );
    drop(before);
    db.close().expect("close");
}

/// `queries` queries: half point lookups, a quarter long scans of 40 entries, a quarter short
/// seeks of one entry (long scans' share 0.25, `K` = 40; range lookups' share 0.5).
fn serve_quarter_long_scans(db: &Db, queries: u32) {
    for q in 0..queries {
        let start = key((q * 7919) % (KEYS - 100));
        match q % 4 {
            0 | 1 => {
                db.get(&start).expect("get");
            }
            2 => {
                let mut iter = db.iter();
                iter.seek(&start);
                assert_eq!(iter.take(40).count(), 40);
            }
            _ => {
                let mut iter = db.iter();
                iter.seek(&start);
                assert_eq!(iter.take(1).count(), 1);
            }
        }
    }
}

#[test]
fn rounds_take_r_from_the_queries_the_engine_serves_and_keep_the_window_across_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = BTreeMap::new();
    write_passes(&db, &mut model, 0..1);
    db.wait_for_compactions().expect("settle");
    let first = stored_round(&db.version()).expect("a round");
    assert_eq!(
        first.parameters.long_scan_ratio, 0.3,
        "no queries yet: the paper's r"
    );

    serve_quarter_long_scans(&db, 4_000);
    let mix = db.recent_workload();
    assert_eq!(mix.counts.queries(), 4_000);
    assert_eq!(mix.long_scan_ratio(), Some(0.25));
    assert_eq!(mix.long_scan_length(), Some(40.0));
    assert_eq!(mix.range_lookup_ratio(), Some(0.5));
    // Writes alone: the rounds started now take the window's r. Without range filters (these
    // options) a short seek opens every run as a long scan does, so the DP's r is the share of
    // all range lookups (DESIGN.md §6, "`r` without range filters").
    write_passes(&db, &mut model, 1..3);
    db.wait_for_compactions().expect("settle");
    let round = stored_round(&db.version()).expect("a round");
    assert!(round.number > first.number + 1, "{round:?}");
    assert_eq!(round.parameters.long_scan_ratio, 0.5);
    assert!(
        db.stats()
            .compaction_state
            .as_deref()
            .unwrap_or("")
            .contains("r = 0.500"),
        "{:?}",
        db.stats().compaction_state
    );

    // The window is logged with the totals: a reopen resumes it.
    let before = db.recent_workload();
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.recent_workload(), before);
    // Point lookups only: once they fill a window, r is 0.
    for i in 0..57_000u32 {
        db.get(key(i % KEYS)).expect("get");
    }
    let mix = db.recent_workload();
    assert_eq!(mix.long_scan_ratio(), Some(0.0));
    assert!(mix.counts.queries() >= 50_000 && mix.counts.queries() <= 57_000);
    write_passes(&db, &mut model, 3..5);
    db.wait_for_compactions().expect("settle");
    let round = stored_round(&db.version()).expect("a round");
    assert_eq!(round.parameters.long_scan_ratio, 0.0);
    check(&db, &model);
}
