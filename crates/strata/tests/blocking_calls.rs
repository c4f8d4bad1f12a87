//! Every blocking call returns: several threads call `compact()`, `flush()`,
//! `wait_for_compactions()` and `sync_wal()` at once while others write, and another thread closes the database.
//! Each call must return, with the right result: `Ok` while the database is open, `Error::Closed`
//! once it is closed, never a hang.
//!
//! Each scenario runs under a watchdog: if a call has not returned within `DEADLINE`, the test
//! fails naming the calls still running instead of hanging the suite.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata::compaction::{CompactionPolicy, Leveling, Tiering};
use strata::{Db, Error, Options};

/// Far longer than any call here needs on a loaded machine (each runs in milliseconds).
const DEADLINE: Duration = Duration::from_secs(120);

fn options(policy: Arc<dyn CompactionPolicy>) -> Options {
    Options::default()
        .write_buffer_bytes(8 * 1024)
        .target_file_bytes(8 * 1024)
        .block_bytes(1024)
        .level0_compaction_trigger(2)
        // More workers than the default, so jobs run side by side while the calls wait.
        .max_background_compactions(3)
        .compaction_policy(policy)
}

fn leveling() -> Arc<dyn CompactionPolicy> {
    Arc::new(Leveling::new(3.0).expect("valid size ratio"))
}

fn tiering() -> Arc<dyn CompactionPolicy> {
    Arc::new(Tiering::new(3.0).expect("valid size ratio"))
}

/// One of the `Db` calls the close test runs in a loop.
type EntryPoint = fn(&Db) -> strata::Result<()>;

/// Calls in flight, by name, so that a hang names what hung.
#[derive(Default)]
struct InFlight(Mutex<BTreeMap<String, usize>>);

impl InFlight {
    fn run<T>(&self, name: &str, call: impl FnOnce() -> T) -> T {
        *self
            .0
            .lock()
            .expect("in-flight lock")
            .entry(name.to_string())
            .or_default() += 1;
        let result = call();
        let mut calls = self.0.lock().expect("in-flight lock");
        if let Some(count) = calls.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                calls.remove(name);
            }
        }
        result
    }

    fn describe(&self) -> String {
        format!("{:?}", self.0.lock().expect("in-flight lock"))
    }
}

/// A body that closes `db` once `rounds` has counted `at_least` rounds of the readers and the
/// database `lookups` point lookups (or 20 s have passed), telling the readers through `closing`
/// first: their last round runs after the close began.
fn close_after(
    db: &Db,
    in_flight: &Arc<InFlight>,
    closing: &Arc<AtomicBool>,
    rounds: &Arc<AtomicUsize>,
    at_least: usize,
    lookups: u64,
) -> Box<dyn FnOnce() + Send> {
    let (db, in_flight, closing) = (db.clone(), Arc::clone(in_flight), Arc::clone(closing));
    let rounds = Arc::clone(rounds);
    Box::new(move || {
        let start = Instant::now();
        while (rounds.load(Ordering::SeqCst) < at_least || db.workload().point_lookups < lookups)
            && start.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        closing.store(true, Ordering::SeqCst);
        in_flight.run("close", || db.close()).expect("close");
    })
}

/// Runs `threads` bodies and fails the test if they have not all finished within `DEADLINE`.
fn run_with_watchdog(in_flight: &Arc<InFlight>, bodies: Vec<Box<dyn FnOnce() + Send>>) {
    let (done, finished) = mpsc::channel();
    let count = bodies.len();
    for body in bodies {
        let done = done.clone();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            let _ = done.send(outcome.err().map(|panic| {
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a thread panicked".into())
            }));
        });
    }
    let start = Instant::now();
    for _ in 0..count {
        let remaining = DEADLINE.saturating_sub(start.elapsed());
        match finished.recv_timeout(remaining) {
            Ok(None) => {}
            Ok(Some(panic)) => panic!("a thread failed: {panic}"),
            Err(_) => panic!(
                "a blocking call did not return within {DEADLINE:?}; calls still running: {}",
                in_flight.describe()
            ),
        }
    }
}

fn value(writer: usize, round: usize, i: usize) -> Vec<u8> {
    format!("w{writer}-r{round}-i{i}-{}", "x".repeat(40)).into_bytes()
}

/// The user's report: three threads, each writing a few hundred keys and then calling
/// `compact()`, in a loop. Before the fix one `compact()` never returned within seconds: two
/// callers shared one result slot, and the second request cleared the first caller's result.
fn concurrent_compact_calls_all_return(policy: Arc<dyn CompactionPolicy>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(policy)).expect("open");
    let in_flight = Arc::new(InFlight::default());
    const THREADS: usize = 3;
    const ROUNDS: usize = 12;
    const KEYS: usize = 300;
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for writer in 0..THREADS {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            for round in 0..ROUNDS {
                for i in 0..KEYS {
                    db.put(format!("w{writer}-k{i:04}"), value(writer, round, i))
                        .expect("put");
                }
                in_flight
                    .run(&format!("compact (thread {writer})"), || db.compact())
                    .expect("compact");
            }
        }));
    }
    run_with_watchdog(&in_flight, bodies);
    // Every thread's last round is what the store holds, and the last compaction left one run.
    for writer in 0..THREADS {
        for i in (0..KEYS).step_by(37) {
            assert_eq!(
                db.get(format!("w{writer}-k{i:04}"))
                    .expect("get")
                    .as_deref(),
                Some(value(writer, ROUNDS - 1, i).as_slice())
            );
        }
    }
    db.compact().expect("final compact");
    assert_eq!(
        db.version().run_count(),
        1,
        "a full compaction leaves one run"
    );
}

#[test]
fn concurrent_compact_calls_all_return_under_leveling() {
    concurrent_compact_calls_all_return(leveling());
}

#[test]
fn concurrent_compact_calls_all_return_under_tiering() {
    concurrent_compact_calls_all_return(tiering());
}

/// Writers, `compact()`, `flush()` and `wait_for_compactions()` callers (two of each) all at
/// once; then `close()` from yet another thread while they go on. Every call returns; before the
/// close each returns `Ok`, after it `Ok` or `Error::Closed` (a call that was already done when the
/// close began may still report `Ok`), never another error.
fn every_entry_point_returns_across_a_close(policy: Arc<dyn CompactionPolicy>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(policy)).expect("open");
    let in_flight = Arc::new(InFlight::default());
    let closing = Arc::new(AtomicBool::new(false));
    let calls_before_close = Arc::new(AtomicUsize::new(0));
    let closed_errors = Arc::new(AtomicUsize::new(0));
    // Keys whose put was acknowledged (each writer's own keys, and `shared-key`).
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();

    // Every call's result: `Ok`, or `Closed` once the close has begun.
    let check = {
        let (closing, closed_errors) = (Arc::clone(&closing), Arc::clone(&closed_errors));
        move |what: &str, result: strata::Result<()>| -> bool {
            match result {
                Ok(()) => true,
                Err(Error::Closed) => {
                    assert!(
                        closing.load(Ordering::SeqCst),
                        "{what} returned Closed before the close began"
                    );
                    closed_errors.fetch_add(1, Ordering::SeqCst);
                    false
                }
                Err(other) => panic!("{what} failed: {other}"),
            }
        }
    };
    let entry_points: [(&str, EntryPoint); 5] = [
        ("put", |db| db.put(b"shared-key", vec![7u8; 100])),
        ("compact", Db::compact),
        ("flush", Db::flush),
        ("wait_for_compactions", Db::wait_for_compactions),
        // Syncs the log outside the commit lock while the others write and switch memtables.
        ("sync_wal", Db::sync_wal),
    ];
    for (name, call) in entry_points {
        for thread in 0..2 {
            let (db, in_flight, check) = (db.clone(), Arc::clone(&in_flight), check.clone());
            let calls = Arc::clone(&calls_before_close);
            let closing = Arc::clone(&closing);
            let acknowledged = Arc::clone(&acknowledged);
            bodies.push(Box::new(move || {
                let label = format!("{name} (thread {thread})");
                for i in 0u64.. {
                    // Writers write their own keys between calls, so that there is something to
                    // flush and compact.
                    if name == "put" {
                        let own = format!("t{thread}-{i:06}");
                        let result = in_flight.run(&label, || db.put(&own, vec![i as u8; 100]));
                        if !check(&label, result) {
                            return;
                        }
                        acknowledged.lock().expect("acknowledged").push(own);
                    }
                    let result = in_flight.run(&label, || call(&db));
                    if !check(&label, result) {
                        return;
                    }
                    if name == "put" {
                        acknowledged
                            .lock()
                            .expect("acknowledged")
                            .push("shared-key".into());
                    }
                    if !closing.load(Ordering::SeqCst) {
                        calls.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
    }
    {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        let (closing, calls) = (Arc::clone(&closing), Arc::clone(&calls_before_close));
        let acknowledged = Arc::clone(&acknowledged);
        bodies.push(Box::new(move || {
            // Let every entry point run a while before closing under it: 400 calls, and at least
            // one acknowledged put (on a loaded machine the calls that find nothing to do can
            // reach 400 before a writer is first scheduled).
            let start = Instant::now();
            let ready = || {
                calls.load(Ordering::SeqCst) >= 400
                    && !acknowledged.lock().expect("acknowledged").is_empty()
            };
            while !ready() && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(5));
            }
            closing.store(true, Ordering::SeqCst);
            in_flight.run("close", || db.close()).expect("close");
        }));
    }
    run_with_watchdog(&in_flight, bodies);
    assert!(
        calls_before_close.load(Ordering::SeqCst) > 0,
        "no call completed before the close"
    );
    // All ten looping threads ended on `Closed` (they loop until they see it).
    assert_eq!(closed_errors.load(Ordering::SeqCst), 10);
    // Every entry point keeps returning `Closed` after the close.
    assert!(matches!(db.compact(), Err(Error::Closed)));
    assert!(matches!(db.flush(), Err(Error::Closed)));
    assert!(matches!(db.wait_for_compactions(), Err(Error::Closed)));
    assert!(matches!(db.sync_wal(), Err(Error::Closed)));
    assert!(matches!(db.put(b"k", b"v"), Err(Error::Closed)));
    assert!(db.close().is_ok(), "a second close is a no-op");
    drop(db);
    // Nothing acknowledged before the close is lost: the store reopens with every key whose put
    // returned `Ok`. (Whether any `shared-key` put got in before the close depends on timing,
    // so only acknowledged keys are required.)
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let acknowledged = acknowledged.lock().expect("acknowledged").clone();
    assert!(
        !acknowledged.is_empty(),
        "no put was acknowledged before the close"
    );
    for key in &acknowledged {
        assert!(
            db.get(key).expect("get").is_some(),
            "{key} was acknowledged before the close and is lost"
        );
    }
}

#[test]
fn every_entry_point_returns_across_a_close_under_leveling() {
    every_entry_point_returns_across_a_close(leveling());
}

#[test]
fn every_entry_point_returns_across_a_close_under_tiering() {
    every_entry_point_returns_across_a_close(tiering());
}

/// Several threads close at once: each `close()` returns only once the database is closed, so
/// that the directory can be reopened right after any of them returns (before the fix a second
/// `close()` returned `Ok` at once while the first was still joining threads and held the lock).
#[test]
fn concurrent_close_calls_all_wait_for_the_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(leveling())).expect("open");
    for i in 0..2_000 {
        db.put(format!("k{i:05}"), vec![1u8; 100]).expect("put");
    }
    let in_flight = Arc::new(InFlight::default());
    // One reopen at a time: two closers reopening at once would lock each other out.
    let reopen = Arc::new(Mutex::new(()));
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for thread in 0..4 {
        let (db, in_flight, reopen) = (db.clone(), Arc::clone(&in_flight), Arc::clone(&reopen));
        let path = dir.path().to_path_buf();
        bodies.push(Box::new(move || {
            in_flight
                .run(&format!("close (thread {thread})"), || db.close())
                .expect("close");
            let _one_at_a_time = reopen.lock().expect("reopen lock");
            let reopened = Db::open(&path, Options::default())
                .unwrap_or_else(|e| panic!("reopen after close returned: {e}"));
            assert!(reopened.get(b"k01999").expect("get").is_some());
            reopened.close().expect("close the reopened database");
        }));
    }
    run_with_watchdog(&in_flight, bodies);
}

/// A compaction policy that panics when asked for a full compaction (a user-supplied policy with
/// a bug). The panic kills the compaction thread; before the fix the `compact()` callers waited
/// for it forever.
#[derive(Debug)]
struct PanicsOnFullCompaction(Leveling);

impl CompactionPolicy for PanicsOnFullCompaction {
    fn name(&self) -> String {
        "panics-on-full-compaction".into()
    }
    fn pick(
        &self,
        tree: &strata::version::Version,
        context: &strata::compaction::CompactionContext,
        running: &strata::compaction::RunningCompactions,
    ) -> Option<strata::compaction::CompactionJob> {
        self.0.pick(tree, context, running)
    }
    fn full_compaction(
        &self,
        _tree: &strata::version::Version,
        _context: &strata::compaction::CompactionContext,
    ) -> Option<strata::compaction::CompactionJob> {
        panic!("a policy bug (this panic is part of the test)");
    }
}

#[test]
fn a_panicking_policy_fails_every_caller_instead_of_hanging() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Arc::new(PanicsOnFullCompaction(
        Leveling::new(3.0).expect("valid size ratio"),
    ));
    let db = Db::open(dir.path(), options(policy)).expect("open");
    for i in 0..1_000 {
        db.put(format!("k{i:05}"), vec![2u8; 100]).expect("put");
    }
    let in_flight = Arc::new(InFlight::default());
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for thread in 0..3 {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            let result = in_flight.run(&format!("compact (thread {thread})"), || db.compact());
            match result {
                Err(Error::Background(message)) => {
                    assert!(message.contains("panicked"), "unexpected error: {message}")
                }
                other => panic!("compact after a policy panic returned {other:?}"),
            }
        }));
    }
    run_with_watchdog(&in_flight, bodies);
    // The engine is in its sticky error state: writes and flushes fail at once, reads go on.
    assert!(matches!(db.put(b"k", b"v"), Err(Error::Background(_))));
    assert!(matches!(db.flush(), Err(Error::Background(_))));
    assert!(matches!(db.compact(), Err(Error::Background(_))));
    assert!(db.get(b"k00999").expect("reads go on").is_some());
    db.close().expect("close");
    drop(db);
    // Nothing acknowledged is lost.
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    for i in (0..1_000).step_by(97) {
        assert!(db.get(format!("k{i:05}")).expect("get").is_some());
    }
}

/// `flush()` under a write stream that never stops: it waits for the memtables frozen before it
/// was called, not for a moment with no immutable memtable at all (which a steady stream of
/// writes into small buffers may never leave).
#[test]
fn flush_returns_under_a_steady_write_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        options(leveling())
            .write_buffer_bytes(4 * 1024)
            .max_write_buffers(8),
    )
    .expect("open");
    let in_flight = Arc::new(InFlight::default());
    let flushes_done = Arc::new(AtomicUsize::new(0));
    const FLUSHERS: usize = 2;
    const FLUSHES: usize = 20;
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for writer in 0..2 {
        let (db, done) = (db.clone(), Arc::clone(&flushes_done));
        bodies.push(Box::new(move || {
            let mut i = 0u64;
            while done.load(Ordering::SeqCst) < FLUSHERS * FLUSHES {
                db.put(format!("w{writer}-{i:08}"), vec![3u8; 200])
                    .expect("put");
                i += 1;
            }
        }));
    }
    for thread in 0..FLUSHERS {
        let (db, in_flight, done) = (
            db.clone(),
            Arc::clone(&in_flight),
            Arc::clone(&flushes_done),
        );
        bodies.push(Box::new(move || {
            for round in 0..FLUSHES {
                let key = format!("flusher{thread}-{round}");
                db.put(&key, b"before the flush").expect("put");
                in_flight
                    .run(&format!("flush (thread {thread})"), || db.flush())
                    .expect("flush");
                // What was written before the flush is in a table file: no memtable answers
                // for it (a traced lookup is empty when a memtable holds the key).
                let probes = db.trace_lookup(&key).expect("trace");
                assert_eq!(
                    probes.last().map(|&(_, found)| found),
                    Some(true),
                    "{key} is not in a table file after flush returned: {probes:?}"
                );
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    run_with_watchdog(&in_flight, bodies);
}

/// `rewrite_filters` pauses the compaction workers and waits out their running jobs; `compact`
/// waits for them to drain and then runs alone. Several callers of each, beside writers, with
/// three workers: every call returns, and nothing written is lost.
#[test]
fn filter_rewrites_and_compactions_wait_for_each_other_across_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(tiering())).expect("open");
    let in_flight = Arc::new(InFlight::default());
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for writer in 0..2usize {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            for round in 0..6 {
                for i in 0..300 {
                    db.put(format!("w{writer}-k{i:04}"), value(writer, round, i))
                        .expect("put");
                }
                in_flight
                    .run(&format!("compact (writer {writer})"), || db.compact())
                    .expect("compact");
            }
        }));
    }
    for rewriter in 0..2usize {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            for round in 0..6 {
                let bits = 4.0 + (rewriter * 6 + round) as f64;
                in_flight
                    .run(&format!("rewrite_filters (thread {rewriter})"), || {
                        db.rewrite_filters(&|_| bits)
                    })
                    .expect("rewrite_filters");
                in_flight
                    .run(&format!("wait_for_compactions (thread {rewriter})"), || {
                        db.wait_for_compactions()
                    })
                    .expect("wait_for_compactions");
            }
        }));
    }
    run_with_watchdog(&in_flight, bodies);
    for writer in 0..2usize {
        for i in 0..300 {
            assert_eq!(
                db.get(format!("w{writer}-k{i:04}"))
                    .expect("get")
                    .map(|v| v.into_vec()),
                Some(value(writer, 5, i)),
                "writer {writer} key {i}"
            );
        }
    }
}

/// Elastic filters' priced rebuild (a one-file compaction an idle worker starts on its own) runs
/// beside `compact()`, `flush()` and `wait_for_compactions()` callers (two of each), writers and
/// lookups, and then a `close()`: every call returns, `Ok` before the close and `Ok` or
/// `Error::Closed` after it, at least one rebuild ran meanwhile, and every acknowledged write is
/// there after a reopen.
#[test]
fn every_entry_point_returns_while_filters_are_rebuilt() {
    // Buffers and files of 32 KiB rather than the other tests' 8 KiB: with 8 KiB the tree had
    // six levels of tiny files and, on a loaded machine, a compaction backlog that never left a
    // worker idle for a minute (only an idle worker prices a rebuild).
    let options = || {
        options(leveling())
            .write_buffer_bytes(32 * 1024)
            .target_file_bytes(32 * 1024)
            .access_statistics(true)
            .filter_rebuild_bytes_per_sec(256 << 20)
            .filter_allocator(Arc::new(
                strata::alloc::Elastic::new(2.0)
                    .expect("valid")
                    .with_disk_modules(1)
                    .expect("valid"),
            ))
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..20_000u32 {
        db.put(format!("key{i:08}"), vec![1u8; 40]).expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let in_flight = Arc::new(InFlight::default());
    let closing = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let ok_or_closed = {
        let closing = Arc::clone(&closing);
        move |what: &str, result: strata::Result<()>| -> bool {
            match result {
                Ok(()) => true,
                Err(Error::Closed) => {
                    assert!(closing.load(Ordering::SeqCst), "{what}: Closed too early");
                    false
                }
                Err(other) => panic!("{what} failed: {other}"),
            }
        }
    };
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    let entry_points: [(&str, EntryPoint); 3] = [
        ("compact", Db::compact),
        ("flush", Db::flush),
        ("wait_for_compactions", Db::wait_for_compactions),
    ];
    for (name, call) in entry_points {
        for thread in 0..2 {
            let (db, in_flight, check) = (db.clone(), Arc::clone(&in_flight), ok_or_closed.clone());
            bodies.push(Box::new(move || {
                let label = format!("{name} (thread {thread})");
                loop {
                    if !check(&label, in_flight.run(&label, || call(&db))) {
                        return;
                    }
                    // Room for the rebuilds: only an idle compaction worker prices one, so the
                    // calls leave the workers idle between them (with a call every 150 ms and a
                    // writer every 200 us, a loaded machine's worker was busy for a whole minute:
                    // over a thousand flushes, two thousand compactions and no idle moment).
                    std::thread::sleep(Duration::from_millis(400));
                }
            }));
        }
    }
    for thread in 0..2 {
        let (db, in_flight, check) = (db.clone(), Arc::clone(&in_flight), ok_or_closed.clone());
        let acknowledged = Arc::clone(&acknowledged);
        bodies.push(Box::new(move || {
            let label = format!("put (thread {thread})");
            for i in 0u64.. {
                let key = format!("key{:08}-w{thread}", (i * 7919) % 20_000);
                if !check(&label, in_flight.run(&label, || db.put(&key, b"new"))) {
                    return;
                }
                acknowledged.lock().expect("acknowledged").push(key);
                std::thread::sleep(Duration::from_millis(2));
            }
        }));
    }
    for thread in 0..2 {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            let label = format!("get (thread {thread})");
            // Absent keys in the lowest tenth of the range: the files there earn rebuilds.
            for n in 0u64.. {
                let key = format!("key{:08}x", (n * 7919) % 2_000);
                match in_flight.run(&label, || db.get(&key)) {
                    Ok(found) => assert!(found.is_none(), "{key}"),
                    Err(Error::Closed) => return,
                    Err(other) => panic!("{label} failed: {other}"),
                }
            }
        }));
    }
    {
        let (db, in_flight, closing) = (db.clone(), Arc::clone(&in_flight), Arc::clone(&closing));
        bodies.push(Box::new(move || {
            let start = Instant::now();
            while db.stats().io.filter_rebuilds == 0 && start.elapsed() < Duration::from_secs(90) {
                std::thread::sleep(Duration::from_millis(50));
            }
            // A little longer, so that more calls overlap the rebuilds.
            std::thread::sleep(Duration::from_millis(500));
            let rebuilds = db.stats().io.filter_rebuilds;
            closing.store(true, Ordering::SeqCst);
            in_flight.run("close", || db.close()).expect("close");
            assert!(rebuilds > 0, "no filter rebuild within 90 s");
        }));
    }
    run_with_watchdog(&in_flight, bodies);
    drop(db);
    let db = Db::open(&dir, Options::default()).expect("reopen");
    for key in acknowledged
        .lock()
        .expect("acknowledged")
        .iter()
        .step_by(13)
    {
        assert_eq!(
            db.get(key).expect("get").as_deref(),
            Some(b"new".as_slice()),
            "{key}"
        );
    }
    for i in (0..20_000u32).step_by(101) {
        assert!(db.get(format!("key{i:08}")).expect("get").is_some());
    }
}

/// The real file system, but appends to table files wait while `held` is set; `started` says one
/// is waiting.
#[derive(Default)]
struct HeldTableWrites {
    held: Arc<(Mutex<bool>, std::sync::Condvar)>,
    started: Arc<AtomicBool>,
}

struct HeldFile {
    inner: Box<dyn strata::env::WritableFile>,
    held: Arc<(Mutex<bool>, std::sync::Condvar)>,
    started: Arc<AtomicBool>,
}

impl strata::env::WritableFile for HeldFile {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        let (held, changed) = &*self.held;
        let mut guard = held.lock().expect("held");
        while *guard {
            self.started.store(true, Ordering::SeqCst);
            guard = changed.wait(guard).expect("held");
        }
        drop(guard);
        self.inner.append(data)
    }
    fn flush(&mut self) -> strata::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> strata::Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl HeldTableWrites {
    /// The real file system, with appends to table files held while `held` is set.
    fn file_system(&self) -> Arc<dyn strata::env::FileSystem> {
        let (held, started) = (Arc::clone(&self.held), Arc::clone(&self.started));
        Arc::new(strata::env::WrapWritable::new(
            move |path: &std::path::Path, inner: Box<dyn strata::env::WritableFile>| {
                if path.extension().is_some_and(|e| e == "sst") {
                    return Box::new(HeldFile {
                        inner,
                        held: Arc::clone(&held),
                        started: Arc::clone(&started),
                    }) as Box<dyn strata::env::WritableFile>;
                }
                inner
            },
        ))
    }
}

/// Leveling that counts its picks (the workers' and `wait_for_compactions`' own).
#[derive(Debug, Default)]
struct CountsPicks {
    inner: Leveling,
    picks: AtomicUsize,
}

impl CompactionPolicy for CountsPicks {
    fn name(&self) -> String {
        "counts-picks".into()
    }
    fn pick(
        &self,
        tree: &strata::version::Version,
        context: &strata::compaction::CompactionContext,
        running: &strata::compaction::RunningCompactions,
    ) -> Option<strata::compaction::CompactionJob> {
        self.picks.fetch_add(1, Ordering::SeqCst);
        self.inner.pick(tree, context, running)
    }
}

/// `wait_for_compactions` while a flush is slow: it waits for the flush, quietly. It used to ask
/// the compaction workers for a job every time round; a worker found none, which woke the waiter,
/// which asked again — the two spun for as long as the flush ran (found by the schedule explorer,
/// `tests/schedules.rs`, as a schedule that never ended while the flush thread did not run).
#[test]
fn wait_for_compactions_does_not_spin_the_workers_while_a_flush_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = Arc::new(HeldTableWrites::default());
    let policy = Arc::new(CountsPicks::default());
    let db = Db::open(
        dir.path(),
        Options::default()
            .max_background_compactions(2)
            .compaction_policy(Arc::clone(&policy) as Arc<dyn CompactionPolicy>)
            .file_system(fs.file_system()),
    )
    .expect("open");
    db.put(b"key", b"value").expect("put");
    *fs.held.0.lock().expect("held") = true;
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !fs.started.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the flush never reached its table"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let waiter = {
        let db = db.clone();
        std::thread::spawn(move || db.wait_for_compactions())
    };
    let before = policy.picks.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    let during = policy.picks.load(Ordering::SeqCst) - before;
    *fs.held.0.lock().expect("held") = false;
    fs.held.1.notify_all();
    flusher.join().expect("flusher").expect("flush");
    waiter
        .join()
        .expect("waiter")
        .expect("wait_for_compactions");
    // A wake-up every 100 ms (the timed wait) is a few picks; the spin made thousands.
    assert!(
        during <= 20,
        "{during} picks in 300 ms while the flush was held"
    );
    assert_eq!(db.get(b"key").expect("get").as_deref(), Some(&b"value"[..]));
    db.close().expect("close");
}

/// `workload()` and `recent_workload()` (the window's lock, also taken by flushes and by
/// compaction picks), two callers each, while writers, readers and `flush()` callers run, then
/// across a close: every call returns, the lifetime totals a caller sees never go down, and the
/// window never holds more than the lifetime totals.
#[test]
fn workload_readers_return_beside_writes_flushes_and_a_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default().write_buffer_bytes(64 * 1024)).expect("open");
    let in_flight = Arc::new(InFlight::default());
    let closing = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    let ok_or_closed = |what: &str, result: strata::Result<()>| -> bool {
        match result {
            Ok(()) => true,
            Err(Error::Closed) => false,
            Err(other) => panic!("{what} failed: {other}"),
        }
    };
    for thread in 0..2 {
        let (writer, in_flight_writer) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            let (db, in_flight) = (writer, in_flight_writer);
            let label = format!("put and get (thread {thread})");
            for i in 0u64.. {
                let key = format!("t{thread}-{i:08}");
                if !ok_or_closed(&label, in_flight.run(&label, || db.put(&key, [1u8; 64]))) {
                    return;
                }
                match in_flight.run(&label, || db.get(&key)) {
                    Ok(found) => assert!(found.is_some(), "{key} was acknowledged"),
                    Err(Error::Closed) => return,
                    Err(other) => panic!("{label} failed: {other}"),
                }
            }
        }));
        let (flusher, in_flight_flusher) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            let (db, in_flight) = (flusher, in_flight_flusher);
            let label = format!("flush (thread {thread})");
            while ok_or_closed(&label, in_flight.run(&label, || db.flush())) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
        let (reader, in_flight_reader) = (db.clone(), Arc::clone(&in_flight));
        let (closing, reads) = (Arc::clone(&closing), Arc::clone(&reads));
        bodies.push(Box::new(move || {
            let (db, in_flight) = (reader, in_flight_reader);
            let label = format!("workload (thread {thread})");
            let mut last_lookups = 0;
            loop {
                // Read before the calls: one full round runs after the close began.
                let closed = closing.load(Ordering::SeqCst);
                let totals = in_flight.run(&label, || db.workload());
                let mix = in_flight.run(&label, || db.recent_workload());
                let after = in_flight.run(&label, || db.workload());
                assert!(
                    totals.point_lookups >= last_lookups,
                    "lifetime lookups went down"
                );
                last_lookups = totals.point_lookups;
                assert!(
                    mix.counts.queries() <= after.queries() && mix.counts.writes <= after.writes,
                    "the window {mix:?} holds more than the lifetime totals {after:?}"
                );
                reads.fetch_add(1, Ordering::SeqCst);
                if closed {
                    return;
                }
            }
        }));
    }
    bodies.push(close_after(&db, &in_flight, &closing, &reads, 200, 2_000));
    run_with_watchdog(&in_flight, bodies);
    // The close came after the readers, writers and flushes had overlapped a while.
    assert!(
        reads.load(Ordering::SeqCst) >= 200,
        "the workload readers ran"
    );
    let totals = db.workload();
    assert!(
        totals.writes > 0 && totals.point_lookups >= 2_000,
        "{totals:?}"
    );
    let mix = db.recent_workload();
    assert!(
        mix.counts.queries() <= totals.queries(),
        "{mix:?} against {totals:?}"
    );
}

/// `Db::stream_history` (a walk of the whole block cache) and the lookup model from it return
/// while several threads write, read, flush and compact, three threads ask at once, and the
/// database closes under them; every history stays within the cache's capacity.
#[test]
fn stream_histories_return_beside_reads_writes_and_a_close() {
    use strata::model::tree::{LookupStream, LookupStreams};
    const CACHE_BYTES: u64 = 256 * 1024;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        options(leveling()).block_cache_bytes(CACHE_BYTES),
    )
    .expect("open");
    let in_flight = Arc::new(InFlight::default());
    let closing = Arc::new(AtomicBool::new(false));
    let histories = Arc::new(AtomicUsize::new(0));
    let most_cached = Arc::new(AtomicUsize::new(0));
    let mut bodies: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
    for thread in 0..2 {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        bodies.push(Box::new(move || {
            let label = format!("put, get and flush (thread {thread})");
            for i in 0u64.. {
                let key = format!("t{thread}-{:08}", i % 4_000);
                let result = in_flight.run(&label, || {
                    db.put(&key, [2u8; 64])?;
                    db.get(format!("t{}-{:08}", 1 - thread, i.wrapping_mul(7) % 4_000))?;
                    if i % 500 == 0 {
                        db.flush()?;
                    }
                    Ok(())
                });
                match result {
                    Ok(()) => {}
                    Err(Error::Closed) => return,
                    Err(other) => panic!("{label} failed: {other}"),
                }
            }
        }));
    }
    for thread in 0..3 {
        let (db, in_flight) = (db.clone(), Arc::clone(&in_flight));
        let (closing, histories) = (Arc::clone(&closing), Arc::clone(&histories));
        let most_cached = Arc::clone(&most_cached);
        bodies.push(Box::new(move || {
            let label = format!("stream history (thread {thread})");
            let streams = LookupStreams {
                missing: LookupStream {
                    distinct_keys: Some(1_000.0),
                    lookups: Some(10_000.0),
                },
                existing: LookupStream::NEW_KEYS,
                key_range: None,
            };
            loop {
                let closed = closing.load(Ordering::SeqCst);
                let mut history = in_flight.run(&label, || db.stream_history());
                assert!(
                    history.cache_used_bytes <= CACHE_BYTES,
                    "{} bytes in a cache of {CACHE_BYTES}",
                    history.cache_used_bytes
                );
                let blocks: u64 = history.cached_data_blocks.values().sum();
                assert!(blocks * 1024 <= CACHE_BYTES, "{blocks} blocks cached");
                most_cached.fetch_max(blocks as usize, Ordering::SeqCst);
                history.note_bits_in_use(&db.filter_bits_in_use());
                let reads = in_flight.run(&label, || {
                    db.predicted_stream_device_reads(&streams, Some(&history))
                });
                assert!(reads.zero_result.data.is_finite() && reads.zero_result.data >= 0.0);
                histories.fetch_add(1, Ordering::SeqCst);
                if closed {
                    return;
                }
            }
        }));
    }
    bodies.push(close_after(
        &db, &in_flight, &closing, &histories, 100, 20_000,
    ));
    run_with_watchdog(&in_flight, bodies);
    assert!(
        histories.load(Ordering::SeqCst) >= 100,
        "the history readers ran"
    );
    assert!(
        most_cached.load(Ordering::SeqCst) > 0,
        "a history saw data blocks in the cache"
    );
    assert!(db.workload().point_lookups >= 20_000);
}
