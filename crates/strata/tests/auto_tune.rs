//! Auto-tune on a real database (`Options::auto_tune`, `Db::auto_tune_now`, DESIGN.md §10
//! "Self-tuning"): decisions switch the running database, are kept across a reopen, show in
//! `Stats`, run in the background, and every call returns beside writers, readers and a close.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::compaction::{CompactionPolicy, Leveling, Tiering};
use strata::model::auto_tune::AutoTuneOptions;
use strata::{Db, Error, Options};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:010}").into_bytes()
}

fn tiering() -> Arc<dyn CompactionPolicy> {
    Arc::new(Tiering::new(8.0).expect("valid size ratio"))
}

fn options(auto_tune: Option<AutoTuneOptions>) -> Options {
    Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(64 * 1024)
        .compaction_policy(tiering())
        .auto_tune(auto_tune)
}

/// Decides at the first decision that ranks a design first, so a test needs few operations.
fn eager() -> AutoTuneOptions {
    AutoTuneOptions {
        every_operations: 2_000,
        confirmations: 1,
        ..AutoTuneOptions::default()
    }
}

fn load(db: &Db, n: u64) {
    for i in 0..n {
        db.put(key(i), [7u8; 100]).expect("put");
    }
    db.flush().expect("flush");
}

/// Point lookups, half of them of absent keys.
fn read(db: &Db, n: u64, entries: u64) {
    for i in 0..n {
        let k = if i % 2 == 0 { i % entries } else { entries + i };
        db.get(key(k)).expect("get");
    }
}

/// [`eager`], but the background thread never comes to a decision: the test decides.
fn by_hand() -> AutoTuneOptions {
    AutoTuneOptions {
        every_operations: u64::MAX,
        every_seconds: 0.0,
        early_decisions_after: 0,
        ..eager()
    }
}

/// Waits up to a minute for the background thread to have taken `decisions` decisions in all.
fn wait_for_decisions(db: &Db, decisions: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.auto_tune_history().len() < decisions {
        assert!(
            Instant::now() < deadline,
            "no decision {decisions} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_read_mostly_database_is_switched_off_tiering_and_the_decision_is_kept() {
    // Priced with the device settings alone, which rank tiering's extra runs dear on this mix
    // whatever the machine: the switch, its record and the reopen are what is tested here (the
    // measured costs of a debug build with 64 KiB buffers stall writers for many microseconds
    // per merged entry, which keeps tiering).
    let by_hand = || AutoTuneOptions {
        measured_costs: false,
        ..by_hand()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("open");
    load(&db, 20_000);
    read(&db, 200_000, 20_000);
    let decision = db.auto_tune_now().expect("decides");
    assert_eq!(decision.number, 1);
    let best = decision.candidates.first().expect("ranked designs").clone();
    assert!(decision.mix.expect("a mix").point_lookups > 0.85);
    assert!(decision.switched, "{decision}");
    assert_ne!(best.policy.name(), "tiering", "{decision}");
    assert!(
        db.compaction_policy_name().starts_with(best.policy.name()),
        "{} after {decision}",
        db.compaction_policy_name()
    );
    let stats = db.stats();
    assert_eq!(stats.auto_tune.len(), db.auto_tune_history().len());
    assert!(stats.auto_tune.last().expect("a line").contains("switch"));
    assert!(stats.to_string().contains("auto-tune decision"));
    let history = db.auto_tune_history();
    db.close().expect("close");

    // The same options again: the switch stands and the history resumes.
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("reopen");
    assert_eq!(db.auto_tune_history(), history);
    assert!(db.compaction_policy_name().starts_with(best.policy.name()));
    read(&db, 10_000, 20_000);
    let next = db.auto_tune_now().expect("decides");
    assert_eq!(next.number, history.len() as u64 + 1);
    assert_eq!(next.operations, 10_000);
    db.close().expect("close");
}

#[test]
fn a_decision_records_what_the_engine_measured_and_keeps_it_across_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("open");
    load(&db, 20_000);
    db.compact().expect("compact");
    read(&db, 20_000, 20_000);
    let decision = db.auto_tune_now().expect("decides");
    let measured = decision.measured.expect("measurements recorded");
    assert_eq!(measured.write_entries, 20_000);
    // One put in sixteen is timed: each carries the count across a multiple of 16.
    assert_eq!(measured.timed_write_entries, 20_000 / 16);
    assert!(measured.timed_write_nanos > 0);
    assert!(measured.compaction_write_bytes > 0 && measured.compaction_micros > 0);
    let timed_probes =
        measured.rejected_probes + measured.cached_block_probes + measured.device_block_probes;
    assert!(timed_probes > 0, "{measured:?}");
    let costs = decision.costs.expect("costs recorded");
    assert!(costs.seconds_per_update.expect("1,250 timed writes") > 0.0);
    assert!(costs.merge_seconds_per_entry.expect("a compaction") > 0.0);
    // Where the system reports a thread's processor time, the compactions counted theirs: some
    // of their elapsed time, never more than their thread could have spent.
    if std::path::Path::new("/proc/thread-self/schedstat").exists() {
        assert!(measured.compaction_processor_micros > 0, "{measured:?}");
        assert!(
            measured.compaction_processor_micros <= measured.compaction_micros + 1_000,
            "{measured:?}"
        );
        assert!(costs.merge_processor_seconds_per_entry.expect("counted") > 0.0);
    }
    assert!(
        decision.to_string().contains("[measured: read"),
        "{decision}"
    );
    assert!(db
        .stats()
        .auto_tune
        .last()
        .expect("a line")
        .contains("[measured: read"));
    let history = db.auto_tune_history();
    db.close().expect("close");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("reopen");
    assert_eq!(db.auto_tune_history(), history);
    // With measured costs off, a decision prices with the device settings and records none.
    let off = AutoTuneOptions {
        measured_costs: false,
        ..by_hand()
    };
    db.close().expect("close");
    let db = Db::open(dir.path(), options(Some(off))).expect("reopen");
    read(&db, 1_000, 20_000);
    let plain = db.auto_tune_now().expect("decides");
    assert!(plain.measured.is_none() && plain.costs.is_none(), "{plain}");
    db.close().expect("close");
}

#[test]
fn the_measurements_outlive_a_reset_of_the_counters_and_the_files_they_were_taken_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("open");
    load(&db, 20_000);
    db.compact().expect("compact");
    read(&db, 20_000, 20_000);
    let before = db
        .auto_tune_now()
        .expect("decides")
        .measured
        .expect("measurements recorded");
    let timed_probes = |m: &strata::model::auto_tune::Measurements| {
        m.rejected_probes + m.cached_block_probes + m.device_block_probes
    };
    assert!(timed_probes(&before) > 0, "{before:?}");
    assert!(before.compaction_write_bytes > 0 && before.timed_write_entries > 0);
    // The counters are zeroed, as between benchmark phases; a full compaction then deletes
    // every file the timed probes were taken on.
    db.reset_stats();
    assert_eq!(db.stats().io.compaction_write_bytes, 0);
    db.compact().expect("compact");
    let after = db
        .auto_tune_now()
        .expect("decides")
        .measured
        .expect("measurements recorded");
    assert_eq!(after.write_entries, before.write_entries);
    assert_eq!(after.timed_write_entries, before.timed_write_entries);
    assert_eq!(after.timed_write_nanos, before.timed_write_nanos);
    assert_eq!(after.write_stall_micros, before.write_stall_micros);
    assert_eq!(
        (
            after.device_block_probes,
            after.cached_block_probes,
            after.rejected_probes
        ),
        (
            before.device_block_probes,
            before.cached_block_probes,
            before.rejected_probes
        )
    );
    assert_eq!(after.rejected_nanos, before.rejected_nanos);
    // The second compaction's bytes and time add to the first's.
    assert!(
        after.compaction_write_bytes > before.compaction_write_bytes,
        "{after:?}"
    );
    assert!(after.compaction_micros >= before.compaction_micros);
    // What is counted after the reset adds to what was counted before it.
    for i in 0..1_600u64 {
        db.put(key(i), [9u8; 100]).expect("put");
    }
    read(&db, 1_600, 20_000);
    let later = db
        .auto_tune_now()
        .expect("decides")
        .measured
        .expect("measurements recorded");
    assert_eq!(later.write_entries, before.write_entries + 1_600);
    assert_eq!(later.timed_write_entries, before.timed_write_entries + 100);
    assert!(timed_probes(&later) > timed_probes(&after), "{later:?}");
    db.close().expect("close");
}

#[test]
fn the_background_thread_decides_every_so_many_operations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(eager()))).expect("open");
    load(&db, 5_000);
    read(&db, 20_000, 5_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.auto_tune_history().is_empty() {
        assert!(Instant::now() < deadline, "no decision within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = &db.auto_tune_history()[0];
    assert!(first.operations >= 2_000, "{first}");
    db.close().expect("close");
    // Without auto-tune no thread decides, but a decision can still be asked for.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(None)).expect("open");
    load(&db, 5_000);
    read(&db, 20_000, 5_000);
    std::thread::sleep(Duration::from_millis(500));
    assert!(db.auto_tune_history().is_empty());
    let decision = db.auto_tune_now().expect("decides with the defaults");
    assert_eq!(decision.number, 1);
    db.close().expect("close");
}

#[test]
fn the_background_thread_decides_after_so_many_seconds_when_operations_are_slow() {
    // Operations too few for `every_operations`: the time bound decides once some were served.
    // The whole core: a slow decision (a manifest write on a busy machine) does not hold the
    // next one back past the waits below.
    let timed = AutoTuneOptions {
        every_operations: u64::MAX,
        every_seconds: 0.3,
        max_processor_share: 1.0,
        ..eager()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(timed))).expect("open");
    load(&db, 500);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.auto_tune_history().is_empty() {
        assert!(Instant::now() < deadline, "no decision within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = &db.auto_tune_history()[0];
    assert!(first.operations >= 1 && first.operations <= 500, "{first}");
    // The first decision may have seen part of the writes (the clock starts at the open); the
    // next, 0.3 s later, sees the rest. Once the 500 writes are all decided on, no operation:
    // no further decision however long it waits.
    let decided = |history: &[strata::model::auto_tune::Decision]| -> u64 {
        history.iter().map(|decision| decision.operations).sum()
    };
    while decided(&db.auto_tune_history()) < 500 {
        assert!(
            Instant::now() < deadline,
            "the 500 writes undecided after 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let history = db.auto_tune_history();
    assert_eq!(decided(&history), 500);
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(db.auto_tune_history().len(), history.len());
    db.close().expect("close");
    // With the time bound off, the same database decides by operations alone: none here.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("open");
    load(&db, 500);
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(db.auto_tune_history().is_empty());
    db.close().expect("close");
}

#[test]
fn a_change_of_mix_is_decided_at_once_and_the_same_mix_waits_for_the_cadence() {
    // No cadence: the background thread decides early or not at all.
    let early = AutoTuneOptions {
        early_decisions_after: 2_000,
        ..by_hand()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(early))).expect("open");
    load(&db, 5_000);
    // Nothing to change from before a first decision; this one sees the writes.
    let first = db.auto_tune_now().expect("decides");
    assert!(first.mix.expect("a mix").updates > 0.99, "{first}");
    // Lookups after writes: fewer than 2,000 are not decided on, however long they wait ...
    read(&db, 1_500, 5_000);
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(db.auto_tune_history().len(), 1);
    // ... 2,000 are, in the background.
    read(&db, 500, 5_000);
    wait_for_decisions(&db, 2);
    let second = db.auto_tune_history()[1].clone();
    assert_eq!(second.operations, 2_000, "{second}");
    assert!(second.mix.expect("a mix").point_lookups > 0.99, "{second}");
    // More of the same mix waits for the cadence, here never.
    read(&db, 10_000, 5_000);
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(db.auto_tune_history().len(), 2);
    // Early decisions off: none for a change of mix either.
    db.close().expect("close");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("reopen");
    load(&db, 5_000);
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(db.auto_tune_history().len(), 2);
    db.close().expect("close");
}

/// Decisions at most every so often as their time allows: with a share of a core so small that
/// any decision (a manifest write at least, microseconds) holds the next back for over a quarter
/// of an hour, one decision however many operations follow; with the whole core, several. Both
/// databases get the same operations in bursts a few polls apart; `Db::auto_tune_now` is never
/// held back.
#[test]
fn decisions_take_no_more_than_their_share_of_a_core() {
    let decisions = |share: f64| {
        let held = AutoTuneOptions {
            every_operations: 2_000,
            every_seconds: 0.0,
            max_processor_share: share,
            ..eager()
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options(Some(held))).expect("open");
        load(&db, 3_000);
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.auto_tune_history().is_empty() {
            assert!(Instant::now() < deadline, "no decision within 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        for burst in 0..4 {
            read(&db, 3_000, 3_000);
            // Several polls (every 200 ms) after each burst, and after the last a second.
            let pause = if burst == 3 { 1_000 } else { 700 };
            std::thread::sleep(Duration::from_millis(pause));
        }
        let taken = db.auto_tune_history().len();
        let asked = db.auto_tune_now().expect("decides at once");
        assert_eq!(asked.number as usize, taken + 1);
        db.close().expect("close");
        taken
    };
    assert_eq!(decisions(1e-9), 1);
    assert!(decisions(1.0) >= 3);
}

/// Leveling with a level-0 trigger of 8, so that flushed runs wait on level 0 (a tree of
/// several runs after a fill), and a block cache of 64 KiB, so that the tree is read from the
/// device (a tree the cache holds is priced at no device read, one run or many).
fn unsettled_leveling(auto_tune: AutoTuneOptions) -> Options {
    let mut options = Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(64 * 1024)
        .block_cache_bytes(64 * 1024)
        .compaction_policy(Arc::new(Leveling::new(10.0).expect("valid size ratio")))
        .auto_tune(Some(auto_tune));
    options.level0_compaction_trigger = 8;
    options
}

/// `n` short range lookups (ten entries each) over the first `entries` keys.
fn seek(db: &Db, n: u64, entries: u64) {
    let mut iter = db.iter();
    for i in 0..n {
        iter.seek(key(i * 7_919 % entries));
        // Every key sought is present: at least it is read.
        assert!(iter.by_ref().take(10).count() >= 1);
    }
}

fn runs(db: &Db) -> usize {
    db.version()
        .levels()
        .iter()
        .map(|level| level.runs().len())
        .sum()
}

/// A leveled database of 20,000 entries whose last decision saw the fill, kept without a switch:
/// the fill is taken with options that never switch, and the database reopened with `auto_tune`.
/// Priced with the device settings alone, as the switch test above is: the merge, its record and
/// the data after it are what is tested, whatever the machine's costs.
fn filled_and_reopened(dir: &std::path::Path, auto_tune: AutoTuneOptions) -> Db {
    let never = AutoTuneOptions {
        min_gain: 1e9,
        compact_for_reads: false,
        ..auto_tune
    };
    let db = Db::open(dir, unsettled_leveling(never)).expect("open");
    load(&db, 20_000);
    db.wait_for_compactions().expect("settled");
    let filled = db.auto_tune_now().expect("decides");
    // The fill's interval wrote dozens of buffers: no stretch of reads.
    assert_eq!((filled.reads_held, filled.for_reads), (0, None), "{filled}");
    assert!(!filled.switched);
    db.close().expect("close");
    Db::open(dir, unsettled_leveling(auto_tune)).expect("reopen")
}

fn priced() -> AutoTuneOptions {
    AutoTuneOptions {
        measured_costs: false,
        confirmations: 1,
        ..by_hand()
    }
}

#[test]
fn a_stretch_of_seeks_merges_the_tree_into_one_run_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = filled_and_reopened(dir.path(), priced());
    let before = runs(&db);
    assert!(before > 2, "level 0 keeps runs below its trigger: {before}");
    seek(&db, 2_000, 20_000);
    let decision = db.auto_tune_now().expect("decides");
    assert!(!decision.switched, "{decision}");
    assert_eq!(decision.reads_held, 1);
    let merge = decision
        .for_reads
        .unwrap_or_else(|| panic!("a merge priced: {decision}"));
    assert_eq!(merge.runs as usize, before);
    assert!(merge.merged, "{decision}");
    assert!(merge.saved_seconds > merge.merge_seconds);
    // `auto_tune_now` returns when the merge has run: one run, every key in it.
    assert_eq!(runs(&db), 1);
    for i in 0..20_000 {
        assert_eq!(
            db.get(key(i)).expect("get").as_deref(),
            Some(&[7u8; 100][..])
        );
    }
    // One run has nothing left to merge; the record and the log say what was done.
    seek(&db, 2_000, 20_000);
    let after = db.auto_tune_now().expect("decides");
    assert_eq!(after.reads_held, 2);
    assert_eq!(after.for_reads, None, "{after}");
    assert!(db.auto_tune_history().iter().any(|d| d.merges_for_reads()));
    db.close().expect("close");
    let log = std::fs::read_to_string(dir.path().join("LOG")).expect("info log");
    assert!(
        log.contains("merged the tree into one run for reads"),
        "{log}"
    );
}

#[test]
fn a_merge_for_reads_that_has_not_paid_yet_is_decided_again_once_it_has() {
    // The test takes the stretch's first decision; the background thread, without a cadence
    // and never early for a change of mix, takes the one the merge's price sets.
    let waiting = AutoTuneOptions {
        confirmations: 2,
        early_decisions_after: u64::MAX,
        ..priced()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = filled_and_reopened(dir.path(), waiting);
    let before = runs(&db);
    seek(&db, 20, 20_000);
    let first = db.auto_tune_now().expect("decides");
    let merge = first
        .for_reads
        .unwrap_or_else(|| panic!("a merge priced: {first}"));
    assert!(!merge.merged, "{first}");
    let after = merge
        .pays_after
        .unwrap_or_else(|| panic!("it would pay: {first}"));
    assert!(after > 1, "{first}");
    // One seek short of paying: no decision.
    seek(&db, after - 1, 20_000);
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(db.auto_tune_history().len(), 2, "{first}");
    assert_eq!(runs(&db), before);
    // The seek that pays: the background thread decides, merges, and loses nothing.
    seek(&db, 1, 20_000);
    wait_for_decisions(&db, 3);
    let second = db.auto_tune_history()[2].clone();
    assert_eq!(second.operations, after, "{second}");
    assert_eq!(second.reads_held_operations, 20 + after, "{second}");
    assert!(second.merges_for_reads(), "{second}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs(&db) > 1 {
        assert!(Instant::now() < deadline, "no merge within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..20_000 {
        assert_eq!(
            db.get(key(i)).expect("get").as_deref(),
            Some(&[7u8; 100][..])
        );
    }
    db.close().expect("close");
}

#[test]
fn merges_for_reads_off_leave_the_tree_as_it_is() {
    let off = AutoTuneOptions {
        compact_for_reads: false,
        ..priced()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = filled_and_reopened(dir.path(), off);
    let before = runs(&db);
    seek(&db, 2_000, 20_000);
    let decision = db.auto_tune_now().expect("decides");
    assert_eq!(decision.for_reads, None, "{decision}");
    assert_eq!(decision.reads_held, 1);
    assert_eq!(runs(&db), before);
    db.close().expect("close");
}

#[test]
fn concurrent_decisions_that_merge_for_reads_beside_readers_and_a_close_all_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = filled_and_reopened(dir.path(), priced());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let (mut decided, mut merged) = (0u32, 0u32);
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    // Reads only: every decision's interval extends the stretch of reads.
                    match db.get(key(i * 7_919 % 20_000)) {
                        Ok(value) => assert!(value.is_some()),
                        Err(Error::Closed) => break,
                        Err(error) => panic!("get: {error}"),
                    }
                    i += 4;
                    if i % 256 < 4 {
                        match db.auto_tune_now() {
                            Ok(decision) => {
                                decided += 1;
                                merged += u32::from(decision.merges_for_reads());
                            }
                            Err(Error::Closed) => break,
                            Err(error) => panic!("auto_tune_now: {error}"),
                        }
                    }
                }
                (decided, merged)
            })
        })
        .collect();
    // A seeker, whose seeks make merging pay.
    let seeker = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut iter = db.iter();
                for i in 0..200u64 {
                    iter.seek(key(i * 7_919 % 20_000));
                    let _ = iter.by_ref().take(10).count();
                }
            }
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    db.close().expect("close");
    stop.store(true, Ordering::Relaxed);
    let (mut decided, mut merged) = (0, 0);
    for worker in workers {
        let (d, m) = worker.join().expect("a decider returned");
        decided += d;
        merged += m;
    }
    seeker.join().expect("the seeker returned");
    assert!(decided >= 4, "{decided} decisions in 2 s");
    assert!(merged >= 1, "no decision merged for reads in {decided}");
    // Every key is still there, in one run or more.
    let db = Db::open(dir.path(), options(None)).expect("reopen");
    for i in 0..20_000 {
        assert_eq!(
            db.get(key(i)).expect("get").as_deref(),
            Some(&[7u8; 100][..])
        );
    }
    db.close().expect("close");
}

#[test]
fn writes_that_resume_during_a_merge_for_reads_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = filled_and_reopened(dir.path(), priced());
    seek(&db, 2_000, 20_000);
    // The writer starts as soon as a decision asking for a merge is recorded: the merge runs
    // after the record, so the writes meet it running.
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while !db.auto_tune_history().iter().any(|d| d.merges_for_reads()) {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "no merge asked for"
                );
                std::thread::yield_now();
            }
            let mut acknowledged = Vec::new();
            for i in 0..5_000u64 {
                match db.put(key(100_000 + i), [9u8; 100]) {
                    Ok(()) => acknowledged.push(100_000 + i),
                    Err(Error::Closed) => break,
                    Err(error) => panic!("put: {error}"),
                }
            }
            acknowledged
        })
    };
    let decision = db.auto_tune_now().expect("decides");
    assert!(decision.merges_for_reads(), "{decision}");
    let acknowledged = writer.join().expect("the writer returned");
    assert_eq!(acknowledged.len(), 5_000);
    db.close().expect("close");
    // Every key of the fill and every acknowledged write, after a reopen.
    let db = Db::open(dir.path(), options(None)).expect("reopen");
    for i in (0..20_000).chain(acknowledged) {
        let expected: &[u8] = if i < 20_000 { &[7u8; 100] } else { &[9u8; 100] };
        assert_eq!(db.get(key(i)).expect("get").as_deref(), Some(expected));
    }
    db.close().expect("close");
}

#[test]
fn bad_settings_and_read_only_databases_are_typed_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    for bad in [
        AutoTuneOptions {
            every_operations: 0,
            ..AutoTuneOptions::default()
        },
        AutoTuneOptions {
            every_seconds: -1.0,
            ..AutoTuneOptions::default()
        },
        AutoTuneOptions {
            every_seconds: f64::NAN,
            ..AutoTuneOptions::default()
        },
        AutoTuneOptions {
            max_processor_share: 0.0,
            ..AutoTuneOptions::default()
        },
        AutoTuneOptions {
            max_processor_share: 1.5,
            ..AutoTuneOptions::default()
        },
        AutoTuneOptions {
            max_processor_share: f64::NAN,
            ..AutoTuneOptions::default()
        },
    ] {
        assert!(matches!(
            Db::open(dir.path(), options(Some(bad))),
            Err(Error::InvalidArgument(_))
        ));
    }
    let db = Db::open(dir.path(), options(None)).expect("open");
    load(&db, 1_000);
    db.close().expect("close");
    let reader = Db::open_read_only(dir.path(), options(None)).expect("read-only open");
    assert!(matches!(reader.auto_tune_now(), Err(Error::ReadOnly)));
    assert!(matches!(
        Db::open(dir.path(), options(None)).and_then(|db| {
            db.close()?;
            db.auto_tune_now()
        }),
        Err(Error::Closed)
    ));
}

#[test]
fn concurrent_decisions_beside_writers_readers_and_a_close_all_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(eager()))).expect("open");
    load(&db, 5_000);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..2u64 {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                match db.put(key(10_000 + t * 1_000_000 + i), [1u8; 50]) {
                    Ok(()) | Err(Error::Closed) => {}
                    Err(error) => panic!("put: {error}"),
                }
                match db.get(key(i % 5_000)) {
                    Ok(_) | Err(Error::Closed) => {}
                    Err(error) => panic!("get: {error}"),
                }
                i += 1;
            }
        }));
    }
    let deciders: Vec<_> = (0..3)
        .map(|_| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut decided = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    match db.auto_tune_now() {
                        Ok(_) => decided += 1,
                        Err(Error::Closed) => break,
                        Err(error) => panic!("auto_tune_now: {error}"),
                    }
                    let _ = db.auto_tune_history();
                    let _ = db.stats();
                }
                decided
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    db.close().expect("close");
    stop.store(true, Ordering::Relaxed);
    let decided: u32 = deciders
        .into_iter()
        .map(|t| t.join().expect("a decider returned"))
        .sum();
    for t in threads {
        t.join().expect("a worker returned");
    }
    assert!(decided >= 3, "{decided} decisions in 2 s");
    // Numbers are consecutive: decisions ran one at a time.
    let db = Db::open(dir.path(), options(None)).expect("reopen");
    let history = db.auto_tune_history();
    assert!(!history.is_empty());
    for pair in history.windows(2) {
        assert_eq!(pair[1].number, pair[0].number + 1);
    }
    db.close().expect("close");
}

#[test]
fn reads_the_cache_serves_are_priced_by_the_read_probe_once_and_the_record_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand()))).expect("open");
    load(&db, 20_000);
    db.compact().expect("compact");
    // One hot key: the block cache serves every lookup but the first, so the lookups time
    // almost no device read.
    for _ in 0..5_000 {
        db.get(key(17)).expect("get");
    }
    let decision = db.auto_tune_now().expect("decides");
    let measured = decision.measured.expect("measurements recorded");
    assert!(measured.device_block_probes < 64, "{measured:?}");
    assert_eq!(measured.probed_reads, 64, "{measured:?}");
    assert!(measured.probed_read_nanos > 0);
    let costs = decision.costs.expect("costs recorded");
    let probed = costs.seconds_per_read.expect("the probe prices reads");
    assert!(costs.read_probed, "{decision}");
    assert!(
        (probed - measured.probed_read_nanos as f64 * 1e-9 / 64.0).abs() < 1e-12,
        "{decision}"
    );
    assert!(decision.to_string().contains("(read probe)"), "{decision}");
    let line = db.stats().auto_tune.last().expect("a line").clone();
    assert!(line.contains("(read probe)"), "{line}");
    // The probe runs once per open: the next decision reuses its reads.
    read(&db, 2_000, 20_000);
    let next = db.auto_tune_now().expect("decides");
    assert_eq!(next.measured.expect("recorded").probed_reads, 64);
    db.close().expect("close");
    let log = std::fs::read_to_string(dir.path().join("LOG")).expect("info log");
    assert_eq!(
        log.matches("auto-tune's read probe: 64 random 4096-byte reads")
            .count(),
        1,
        "{log}"
    );
    assert!(log.contains("(read probe)"), "{log}");
    assert!(log.contains("ms)"), "the decision's time is logged: {log}");
}

#[test]
fn a_database_that_times_enough_device_reads_prices_them_from_its_lookups() {
    // No block cache: every lookup that passes the filters reads the device (the page cache
    // here), and the lookups time well over 64 such probes, so no probe is run.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Some(by_hand())).block_cache_bytes(0)).expect("open");
    load(&db, 20_000);
    db.compact().expect("compact");
    for i in 0..4_000 {
        db.get(key(i * 5)).expect("get");
    }
    let decision = db.auto_tune_now().expect("decides");
    let measured = decision.measured.expect("measurements recorded");
    assert!(measured.device_block_probes >= 64, "{measured:?}");
    assert_eq!(measured.probed_reads, 0, "{measured:?}");
    let costs = decision.costs.expect("costs recorded");
    assert!(
        costs.seconds_per_read.is_some() && !costs.read_probed,
        "{decision}"
    );
    assert!(
        decision.to_string().contains("(timed lookups)"),
        "{decision}"
    );
    db.close().expect("close");
}
