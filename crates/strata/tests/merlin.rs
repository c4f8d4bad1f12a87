//! End to end: Merlin's per-file access statistics (DESIGN.md §4) through a real `Db` — recorded on
//! the lookup path, handed over at flush, inherited through compactions, persisted across a
//! restart, and counted in the memory statistics.

use strata::{Db, Options};

fn options() -> Options {
    Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(64 * 1024)
        .access_statistics(true)
}

fn options_sample_every() -> u32 {
    Options::default().access_sample_every
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn lookups_are_attributed_to_the_files_they_probe_and_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..20_000 {
        db.put(key(i), b"some value bytes").expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");

    // Empty lookups over the whole key range: every run whose range holds the key is probed.
    let lookups = 4_000u32;
    for i in 0..lookups {
        // Scattered over the key range (Merlin estimates rates; a sequential sweep would
        // probe each file in one burst and then decay).
        let missing = format!("key{:08}x", (i * 7919) % 20_000).into_bytes();
        assert!(db.get(&missing).expect("get").is_none());
    }
    let version = db.version();
    let mut total_z = 0.0;
    for (_, _, file) in version.files() {
        let estimate = file.state().access_estimate().expect("statistics are on");
        assert!(estimate.q >= 0.0 && estimate.z >= 0.0 && estimate.x >= 0.0);
        assert!(estimate.x <= 1e-9, "no lookup found its key: {estimate:?}");
        total_z += estimate.z;
    }
    // Each lookup probes one file per run that covers its key: between 1 and the run count.
    let runs = version.run_count() as f64;
    assert!(
        total_z > 0.8 * f64::from(lookups) && total_z < 1.2 * runs * f64::from(lookups),
        "sum of z {total_z} for {lookups} lookups over {runs} runs"
    );
    let stats = db.stats();
    assert!(stats.access_statistics_bytes > 0);
    assert!(stats.total_memory_bytes >= stats.access_statistics_bytes);

    // Existing-key lookups are hits in the file holding the key.
    for i in 0..1_000 {
        assert!(db.get(key(i * 7)).expect("get").is_some());
    }
    let before: Vec<(u64, f64, f64)> = db
        .version()
        .files()
        .map(|(_, _, f)| {
            let e = f.state().access_estimate().expect("on");
            (f.number(), e.q, e.x)
        })
        .collect();
    assert!(before.iter().any(|&(_, _, x)| x > 0.0), "{before:?}");
    db.close().expect("close");

    // After a restart the estimates are the same (no lookup happened in between).
    let db = Db::open(dir.path(), options()).expect("reopen");
    let after: Vec<(u64, f64, f64)> = db
        .version()
        .files()
        .map(|(_, _, f)| {
            let e = f.state().access_estimate().expect("on");
            (f.number(), e.q, e.x)
        })
        .collect();
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.0, a.0);
        assert!((b.1 - a.1).abs() < 1e-6 * b.1.max(1.0), "{b:?} vs {a:?}");
        assert!((b.2 - a.2).abs() < 1e-6 * b.2.max(1.0), "{b:?} vs {a:?}");
    }
}

#[test]
fn compaction_outputs_inherit_the_probes_of_their_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    for i in 0..10_000 {
        db.put(key(i), b"v").expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    for i in 0..3_000u32 {
        let missing = format!("key{:08}x", (i * 3) % 10_000).into_bytes();
        db.get(&missing).expect("get");
    }
    let probed_before: f64 = db
        .version()
        .files()
        .map(|(_, _, f)| f.state().access_estimate().expect("on").q)
        .sum();
    assert!(probed_before > 0.0);
    // Rewrite everything: the compaction outputs start from inherited statistics, not zero.
    db.compact().expect("compact");
    let version = db.version();
    let inherited: f64 = version
        .files()
        .map(|(_, _, f)| f.state().access_estimate().expect("on").q)
        .sum();
    assert!(
        inherited > 0.3 * probed_before,
        "inherited {inherited} vs probed before {probed_before}"
    );
    // Without statistics, files report none.
    drop(db);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default().access_statistics(false)).expect("open");
    db.put(b"a", b"b").expect("put");
    db.flush().expect("flush");
    assert!(db
        .version()
        .files()
        .all(|(_, _, f)| f.state().access_estimate().is_none()));
    assert_eq!(db.stats().access_statistics_bytes, 0);
}

/// The default options keep the statistics (the default allocator, elastic filters, weighs
/// files by them): a lookup on a flushed file shows in its estimate and in the memory report.
#[test]
fn the_default_options_keep_access_statistics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default();
    assert!(options.access_statistics && options.keeps_access_statistics());
    let db = Db::open(dir.path(), options).expect("open");
    db.put(b"a", b"b").expect("put");
    db.flush().expect("flush");
    // Enough lookups that the default's sample (one in `access_sample_every`) takes some.
    let lookups = 20 * options_sample_every();
    for _ in 0..lookups {
        assert!(db.get(b"a").expect("get").is_some());
    }
    let version = db.version();
    let estimates: Vec<f64> = version
        .files()
        .map(|(_, _, f)| f.state().access_estimate().expect("kept by default").q)
        .collect();
    assert_eq!(estimates.len(), 1);
    assert!(
        estimates[0] > 0.0,
        "the lookups were recorded: {estimates:?}"
    );
    assert!(db.stats().access_statistics_bytes > 0);
}

/// `Options::access_recent_weight` reaches the estimates: after lookups that found their keys
/// are followed by lookups that miss, a weight of 1 prices a file by its recent misses alone,
/// a weight of 0 by its whole history (mostly hits), and the default lies between.
#[test]
fn the_recent_weight_decides_how_fast_estimates_follow_a_shift_from_hits_to_misses() {
    let z_after_shift = |weight: f64| -> f64 {
        let dir = tempfile::tempdir().expect("tempdir");
        // Leveling: the misses must reach the level-0 file (EcoTune's top-level index would
        // answer them without a probe).
        let options = Options::default()
            .compaction_policy(std::sync::Arc::new(strata::compaction::Leveling::default()))
            .write_buffer_bytes(1 << 20)
            .access_statistics(true)
            // Every lookup recorded: the test checks the weighting's arithmetic, which one in
            // `Options::access_sample_every`'s default 4 would blur with sampling noise.
            .access_sample_every(1)
            .access_recent_weight(weight);
        let db = Db::open(dir.path(), options).expect("open");
        for i in 0..2_000 {
            db.put(key(i), b"v").expect("put");
        }
        db.flush().expect("flush");
        for i in 0..3_000 {
            assert!(db.get(key((i * 7) % 2_000)).expect("get").is_some());
        }
        for i in 0..1_000 {
            let missing = format!("key{:08}x", (i * 7) % 2_000).into_bytes();
            assert!(db.get(&missing).expect("get").is_none());
        }
        let version = db.version();
        let files: Vec<_> = version.files().collect();
        assert_eq!(files.len(), 1, "one flushed file");
        let estimate = files[0]
            .2
            .state()
            .access_estimate()
            .expect("statistics are on");
        assert!((estimate.q - 4_000.0).abs() < 400.0, "{estimate:?}");
        estimate.z
    };
    let (history, default, recent) = (z_after_shift(0.0), z_after_shift(0.5), z_after_shift(1.0));
    // Whole history: 1,000 misses of 4,000 probes. Recent window: all 64 probes missed.
    assert!((history - 1_000.0).abs() < 150.0, "r = 0: {history}");
    assert!(recent > 3_600.0, "r = 1: {recent}");
    assert!(
        history < default && default < recent,
        "{history} {default} {recent}"
    );
    assert!(
        Db::open(
            tempfile::tempdir().expect("tempdir").path(),
            Options::default().access_recent_weight(2.0)
        )
        .is_err(),
        "an invalid weight is refused at open"
    );
}

/// An allocator that gives every file 10 bits per key and counts its refreshes, by thread.
#[derive(Debug, Default)]
struct CountingRefreshes {
    by_thread: std::sync::Mutex<std::collections::HashMap<std::thread::ThreadId, u64>>,
}

impl strata::alloc::FilterAllocator for CountingRefreshes {
    fn name(&self) -> String {
        "counting-refreshes".to_string()
    }

    fn bits_per_key_budget(&self) -> f64 {
        10.0
    }

    fn allocate(
        &self,
        _tree: &strata::version::Version,
        job: &strata::alloc::FilterJob<'_>,
    ) -> Vec<f64> {
        vec![10.0; job.outputs.len()]
    }

    fn live_decisions(&self) -> Option<&dyn strata::alloc::LiveDecisions> {
        Some(self)
    }
}

impl strata::alloc::LiveDecisions for CountingRefreshes {
    fn restore(&self, _tree: &strata::version::Version) {}

    fn refresh(&self, _tree: &strata::version::Version) {
        let mut by_thread = self.by_thread.lock().expect("not poisoned");
        *by_thread.entry(std::thread::current().id()).or_default() += 1;
    }
}

/// With statistics kept, the allocator is refreshed at every lookup whose number is a multiple of
/// `REFRESH_EVERY_LOOKUPS`, whichever of several concurrent lookup threads makes it and whether
/// or not that lookup is recorded (one in 16 is): exactly once per multiple, every lookup
/// answered, every call returning.
#[test]
fn concurrent_lookups_refresh_the_allocator_once_per_multiple_of_the_period() {
    let dir = tempfile::tempdir().expect("tempdir");
    let allocator = std::sync::Arc::new(CountingRefreshes::default());
    let db = Db::open(
        dir.path(),
        options().filter_allocator(std::sync::Arc::clone(&allocator) as _),
    )
    .expect("open");
    for i in 0..2_000 {
        db.put(key(i), b"v").expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    const THREADS: u32 = 4;
    const LOOKUPS: u32 = 8_192;
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let db = &db;
            scope.spawn(move || {
                for i in 0..LOOKUPS {
                    let n = (i * 31 + thread * 7) % 2_000;
                    if i % 2 == 0 {
                        assert!(db.get(key(n)).expect("get").is_some(), "{n}");
                    } else {
                        let missing = format!("key{n:08}x").into_bytes();
                        assert!(db.get(&missing).expect("get").is_none(), "{n}");
                    }
                }
            });
        }
    });
    let lookups = u64::from(THREADS * LOOKUPS);
    let by_thread = allocator.by_thread.lock().expect("not poisoned").clone();
    let refreshes: u64 = by_thread.values().sum();
    assert_eq!(
        refreshes,
        lookups / strata::alloc::REFRESH_EVERY_LOOKUPS,
        "refreshes by thread: {by_thread:?}"
    );
}
