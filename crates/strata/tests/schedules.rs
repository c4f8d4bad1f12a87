//! The background coordination under the `shuttle` schedule explorer: each test runs a small
//! scenario thousands of times, each time in another interleaving of the engine's threads (the
//! flush thread, two compaction workers) and the callers'. Every lock, condition-variable wait,
//! notification, spawn and join of the coordination (`strata`'s `crate::sync`) is a point where
//! shuttle picks the next thread; its PCT scheduler ("A Randomized Scheduler with Probabilistic
//! Guarantees of Finding Bugs", Burckhardt et al., ASPLOS 2010) gives each schedule random thread
//! priorities and changes them at a few random points. A schedule in which every thread waits is a
//! deadlock and fails the test (shuttle never times a timed wait out), so "every call returns" is
//! checked in every schedule, and so are the results.
//!
//! Built only with the `strata` feature `shuttle`:
//!
//! ```sh
//! cargo test -p strata --features shuttle --test schedules --release
//! STRATA_SCHEDULES=10000 cargo test -p strata --features shuttle --test schedules --release
//! ```
//!
//! `STRATA_SCHEDULES` sets the schedules per scenario (default 1,000), `STRATA_SCHEDULE_SEED` the
//! first seed (default 1). docs/TESTING.md, "Schedules explored", says how these tests were
//! shown to find the two concurrency bugs this coordination had.
#![cfg(feature = "shuttle")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use shuttle::scheduler::PctScheduler;
use shuttle::{thread, Config, MaxSteps, Runner};
use strata::env::{Fault, FaultInjectionFileSystem, FaultOp, FaultPoint, FileKind};
use strata::policy::{CompactionKind, CompactionSettings};
use strata::{Db, Error, Options};

/// Schedules per scenario: `STRATA_SCHEDULES`, or 1,000.
fn schedules() -> usize {
    std::env::var("STRATA_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

/// The first PCT seed; each scenario derives its own from it.
fn seed() -> u64 {
    std::env::var("STRATA_SCHEDULE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Runs `scenario` under `schedules()` PCT schedules (depth 3: two priority changes per
/// schedule) and prints how many ran and how long they took; on a failure, says which schedule
/// (counting from 1) failed before shuttle's own report goes on.
fn explore(name: &str, scenario_seed: u64, scenario: impl Fn() + Send + Sync + 'static) {
    let count = schedules();
    let started = Arc::new(AtomicUsize::new(0));
    let mut config = Config::new();
    // The engine's calls (table building, compaction) need more than shuttle's 32 KiB default.
    config.stack_size = 1 << 20;
    // A schedule of these scenarios takes a few thousand steps; far more is a livelock.
    config.max_steps = MaxSteps::FailAfter(200_000);
    let scheduler = PctScheduler::new_from_seed(seed() ^ scenario_seed, 3, count);
    let runner = Runner::new(scheduler, config);
    let counter = Arc::clone(&started);
    let begin = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runner.run(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            scenario();
        })
    }));
    let ran = started.load(Ordering::Relaxed);
    match outcome {
        Ok(_) => println!(
            "{name}: {ran} schedules in {:.1} s",
            begin.elapsed().as_secs_f64()
        ),
        Err(panic) => {
            eprintln!(
                "{name}: schedule {ran} of {count} failed after {:.1} s",
                begin.elapsed().as_secs_f64()
            );
            std::panic::resume_unwind(panic);
        }
    }
    assert_eq!(ran, count, "{name}: every schedule ran");
}

/// A fresh directory for one schedule, in memory where the machine has `/dev/shm`.
fn scratch() -> tempfile::TempDir {
    let shm = PathBuf::from("/dev/shm");
    let builder = tempfile::Builder::new()
        .prefix("strata-schedule-")
        .tempdir_in(&shm);
    match builder {
        Ok(dir) => dir,
        Err(_) => tempfile::tempdir().expect("tempdir"),
    }
}

/// A small engine: 4 KiB memtables, a compaction after two level-0 runs, two compaction
/// workers and the flush thread.
fn options() -> Options {
    Options::default()
        .write_buffer_bytes(4096)
        .level0_compaction_trigger(2)
        .max_background_compactions(2)
        .compaction_policy(
            CompactionKind::Leveling
                .build(&CompactionSettings::with_size_ratio(10.0))
                .expect("leveling builds"),
        )
}

fn key(writer: usize, n: usize) -> Vec<u8> {
    format!("w{writer}-key{n:03}").into_bytes()
}

fn value(writer: usize, n: usize) -> Vec<u8> {
    format!("value of writer {writer}, write {n}").into_bytes()
}

/// `Ok`, or `Error::Closed` once a `close` may have begun: nothing else.
fn ok_or_closed(call: &str, result: strata::Result<()>) -> bool {
    match result {
        Ok(()) => true,
        Err(Error::Closed) => false,
        Err(error) => panic!("{call}: {error}"),
    }
}

/// Two threads each write, flush and call `compact()` twice while a third closes the database:
/// every call returns `Ok` (or `Error::Closed` once the close began), every `compact()` ticket is
/// answered, and every acknowledged write is there after a reopen. The reported hang: one of two
/// concurrent `compact()` callers lost its answer and waited forever.
#[test]
fn concurrent_compact_with_writes_and_close() {
    explore("compact with writes and close", 0x11, || {
        let dir = scratch();
        let db = Db::open(dir.path(), options()).expect("open");
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let db = db.clone();
                thread::spawn(move || {
                    let mut acknowledged = Vec::new();
                    for n in 0..2 {
                        if !ok_or_closed("put", db.put(key(writer, n), value(writer, n))) {
                            break;
                        }
                        acknowledged.push(n);
                        // A level-0 run for the full compaction (and the policy) to merge.
                        if !ok_or_closed("flush", db.flush()) {
                            break;
                        }
                        if !ok_or_closed("compact", db.compact()) {
                            break;
                        }
                    }
                    acknowledged
                })
            })
            .collect();
        let closer = {
            let db = db.clone();
            thread::spawn(move || db.close())
        };
        let acknowledged: Vec<Vec<usize>> = writers
            .into_iter()
            .map(|writer| writer.join().expect("writer"))
            .collect();
        closer.join().expect("closer").expect("close");
        drop(db);
        let db = Db::open(dir.path(), options()).expect("reopen");
        for (writer, written) in acknowledged.iter().enumerate() {
            for &n in written {
                assert_eq!(
                    db.get(key(writer, n)).expect("get").as_deref(),
                    Some(&value(writer, n)[..]),
                    "acknowledged write {n} of writer {writer}"
                );
            }
        }
        db.close().expect("close after reopen");
    });
}

/// A full compaction (`compact()`) racing a compaction worker's pick: two level-0 runs, whose
/// merge a worker picks while a caller's ticket starts a full compaction on the other worker. A
/// worker that registered a job whose runs the full compaction had removed ended in a background
/// error; it must pick again. No background error, every write readable.
#[test]
fn a_full_compaction_racing_a_workers_pick() {
    explore("full compaction racing a pick", 0x22, || {
        let dir = scratch();
        let db = Db::open(dir.path(), options()).expect("open");
        db.put(key(0, 1), value(0, 1)).expect("put");
        db.flush().expect("first flush");
        db.put(key(0, 2), value(0, 2)).expect("put");
        let compactor = {
            let db = db.clone();
            thread::spawn(move || db.compact())
        };
        // The second run: the policy's trigger, while the ticket may already be queued.
        db.flush().expect("second flush");
        compactor
            .join()
            .expect("compactor")
            .expect("full compaction");
        db.wait_for_compactions()
            .expect("no background error after the race");
        db.put(key(0, 3), value(0, 3))
            .expect("writes still succeed");
        db.flush().expect("third flush");
        db.wait_for_compactions().expect("no background error");
        for n in 1..=3 {
            assert_eq!(
                db.get(key(0, n)).expect("get").as_deref(),
                Some(&value(0, n)[..])
            );
        }
        let stats = db.stats();
        assert_eq!(stats.io.flushes, 3);
        assert!(stats.io.compactions >= 1, "the full compaction ran");
        db.close().expect("close");
    });
}

fn is_injected(error: &Error) -> bool {
    error.to_string().contains("injected fault")
}

/// The flush thread fails (an injected I/O error at its table file's first append) while one
/// caller asks for a flush, one waits for compactions, one asks for a full compaction and the
/// main thread writes: every call returns; `flush()` reports the failure; the others return
/// `Ok` only if they finished before the failure could concern them (the waits before the
/// memtable was frozen, the full compaction of an empty tree), otherwise the same error. After
/// that the error is sticky — every write, flush, wait and compaction reports it — reads go on,
/// and `close()` returns.
#[test]
fn a_failing_flush_racing_flush_and_wait_for_compactions() {
    explore("failing flush racing flush and waits", 0x33, || {
        let dir = scratch();
        let fs = FaultInjectionFileSystem::default();
        let db = Db::open(
            dir.path(),
            options().file_system(Arc::new(fs.clone()) as Arc<dyn strata::env::FileSystem>),
        )
        .expect("open");
        db.put(key(0, 1), value(0, 1)).expect("put");
        fs.arm(FaultPoint {
            op: FaultOp::Append,
            file: Some(FileKind::Table),
            skip: 0,
            fault: Fault::Io,
        });
        let call = |f: fn(&Db) -> strata::Result<()>| {
            let db = db.clone();
            thread::spawn(move || f(&db))
        };
        let flusher = call(Db::flush);
        let waiter = call(Db::wait_for_compactions);
        let compactor = call(Db::compact);
        let wrote = db.put(key(0, 2), value(0, 2));
        let flushed = flusher.join().expect("flusher");
        let waited = waiter.join().expect("waiter");
        let compacted = compactor.join().expect("compactor");
        match &flushed {
            Err(error) if is_injected(error) => {}
            other => panic!("flush must report the failed flush: {other:?}"),
        }
        for (call, result) in [("wait", &waited), ("compact", &compacted), ("put", &wrote)] {
            if let Err(error) = result {
                assert!(is_injected(error), "{call}: {error}");
            }
        }
        // Sticky: reported to every later caller, whatever it waits for.
        for (call, result) in [
            ("flush", db.flush()),
            ("wait_for_compactions", db.wait_for_compactions()),
            ("compact", db.compact()),
            ("put", db.put(key(0, 3), value(0, 3))),
        ] {
            match result {
                Err(error) if is_injected(&error) => {}
                other => panic!("{call} after the failure: {other:?}"),
            }
        }
        assert_eq!(
            db.get(key(0, 1)).expect("reads go on").as_deref(),
            Some(&value(0, 1)[..])
        );
        if wrote.is_ok() {
            assert_eq!(
                db.get(key(0, 2)).expect("reads go on").as_deref(),
                Some(&value(0, 2)[..])
            );
        }
        db.close().expect("close in the error state");
    });
}

/// The merge policy switches (leveling to tiering and back) while a writer makes level-0 runs
/// the workers compact and a caller asks for a full compaction: no background error, every
/// call returns, every write is readable, and the database ends in a state the policy in effect
/// leaves alone.
#[test]
fn a_policy_switch_during_compactions() {
    explore("policy switch during compactions", 0x44, || {
        let dir = scratch();
        let db = Db::open(dir.path(), options()).expect("open");
        let writer = {
            let db = db.clone();
            thread::spawn(move || {
                for n in 0..3 {
                    db.put(key(0, n), value(0, n)).expect("put");
                    db.flush().expect("flush");
                }
            })
        };
        let switcher = {
            let db = db.clone();
            thread::spawn(move || {
                db.set_compaction_policy(
                    CompactionKind::Tiering,
                    CompactionSettings::with_size_ratio(4.0),
                )
                .expect("switch to tiering");
                db.set_compaction_policy(
                    CompactionKind::Leveling,
                    CompactionSettings::with_size_ratio(10.0),
                )
                .expect("switch back to leveling");
            })
        };
        let compacted = db.compact();
        writer.join().expect("writer");
        switcher.join().expect("switcher");
        compacted.expect("full compaction");
        db.wait_for_compactions().expect("no background error");
        for n in 0..3 {
            assert_eq!(
                db.get(key(0, n)).expect("get").as_deref(),
                Some(&value(0, n)[..])
            );
        }
        assert_eq!(db.stats().io.flushes, 3);
        db.close().expect("close");
    });
}
