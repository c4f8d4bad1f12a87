//! I/O accounting: the engine's own counters match what a lookup must read, with and without
//! the block cache, with O_DIRECT reads and with pinned level-0 metadata.

use strata::{Db, Options};

fn key(i: u32) -> String {
    format!("key{:08}", i * 2)
}

fn missing_key(i: u32) -> String {
    format!("key{:08}", i * 2 + 1)
}

fn load(options: Options) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options).expect("open");
    for i in 0..5000 {
        db.put(key(i), [7u8; 100]).expect("put");
    }
    db.compact().expect("compact");
    assert_eq!(db.stats().runs, 1);
    db.reset_stats();
    (dir, db)
}

#[test]
fn without_a_cache_every_lookup_reads_filter_index_and_data_from_the_device() {
    let (_dir, db) = load(
        Options::default()
            .block_cache_bytes(0)
            .direct_reads(true)
            .bits_per_key(10.0)
            .expect("valid"),
    );
    for i in 0..1000 {
        assert!(db.get(key(i)).expect("get").is_some());
    }
    let io = db.stats().io;
    assert_eq!(io.point_lookups, 1000);
    assert_eq!(io.data_block_reads_total(), 1000);
    assert_eq!(io.index_block_reads_total(), 1000);
    assert_eq!(io.filter_block_reads_total(), 1000);
    assert_eq!(io.unnecessary_data_reads_total(), 0);
    // The run is on the level the policy's full compaction chose (level 1 under static
    // leveling, the last level under dynamic sizing).
    let level = db.version().last_non_empty_level().expect("one run");
    assert_eq!(io.filter_probes[level], 1000, "the run is on level {level}");

    db.reset_stats();
    for i in 0..1000 {
        assert!(db.get(missing_key(i)).expect("get").is_none());
    }
    let io = db.stats().io;
    assert_eq!(io.filter_block_reads_total(), 1000);
    assert_eq!(
        io.filter_negatives_total() + io.filter_false_positives_total(),
        1000
    );
    assert_eq!(
        io.data_block_reads_total(),
        io.filter_false_positives_total(),
        "only false positives read a data block"
    );
    assert_eq!(
        io.unnecessary_data_reads_total(),
        io.filter_false_positives_total()
    );
    assert!(io.filter_false_positives_total() < 40, "~1% at 10 bits/key");
}

#[test]
fn with_a_cache_repeated_lookups_hit_it() {
    // Uniform filters: one filter block per file, read once (the default elastic filters probe
    // a second module where the first passes, a second block).
    let (_dir, db) = load(
        Options::default()
            .block_cache_bytes(8 << 20)
            .bits_per_key(10.0)
            .expect("valid"),
    );
    for _ in 0..3 {
        for i in 0..100 {
            assert!(db.get(key(i)).expect("get").is_some());
        }
    }
    let io = db.stats().io;
    assert_eq!(io.index_block_reads_total(), 1);
    assert_eq!(io.filter_block_reads_total(), 1);
    assert!(
        io.data_block_reads_total() <= 10,
        "100 neighbouring keys share a few blocks"
    );
    assert_eq!(io.data_cache_hits + io.data_block_reads_total(), 300);
    assert!(db.stats().block_cache_bytes > 0);
}

/// A database of `keys` keys in one flushed level-0 run, with no block cache and no level-0
/// compaction: every index and filter block it reads is the reader's (pinned) or the device's.
fn one_uncached_run(options: Options, keys: u32) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = options
        .block_cache_bytes(0)
        .level0_compaction_trigger(100)
        .level0_slowdown_writes_trigger(100)
        .level0_stop_writes_trigger(100);
    let db = Db::open(dir.path(), options).expect("open");
    for i in 0..keys {
        db.put(key(i), [1u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    (dir, db)
}

#[test]
fn pinned_level0_metadata_is_not_read_through_the_cache() {
    let (_dir, db) = one_uncached_run(
        Options::default().pin_l0_filter_and_index_blocks(true),
        2000,
    );
    db.reset_stats();
    for i in 0..500 {
        assert!(db.get(key(i)).expect("get").is_some());
    }
    // The index is pinned at open; each filter module is read by the first lookup that probes
    // it and held from then on (elastic filters keep spare modules on disk that no lookup
    // reads: at the default budget of 10, four 2.5-bit modules in use of five), so a second
    // pass reads data blocks only.
    let first = db.stats();
    let modules_read = first.io.filter_block_reads_total();
    assert!(
        (1..=4).contains(&modules_read),
        "{modules_read} filter modules read"
    );
    db.reset_stats();
    for i in 0..500 {
        assert!(db.get(key(i)).expect("get").is_some());
    }
    let stats = db.stats();
    assert!(stats.levels[0].level == 0 && stats.levels.len() == 1);
    assert_eq!(stats.io.index_block_reads_total(), 0, "index pinned");
    assert_eq!(stats.io.filter_block_reads_total(), 0, "filter pinned");
    assert_eq!(stats.io.data_block_reads_total(), 500);
    assert!(stats.pinned_bytes > 0);
    assert_eq!(
        stats.total_memory_bytes,
        stats.memtable_bytes
            + stats.memtable_filter_bytes
            + stats.block_cache_bytes
            + stats.pinned_bytes
            + stats.top_index_bytes
            + stats.access_statistics_bytes
    );
}

/// Every point lookup counts its probe of each file it reaches (found or empty), and one lookup
/// in sixteen times its probes whole, by what they read past the filter: the elastic filters'
/// cache model prices a false positive on a cached block by these times.
#[test]
fn lookups_count_their_probes_per_file_and_time_a_sample_of_them() {
    let (_dir, db) = load(Options::default().bits_per_key(10.0).expect("valid"));
    // 800 lookups of present keys, then 800 of missing keys inside the file's range: the one
    // file is reached by all 1,600, and one lookup in 16, picked by a hash of its number, is
    // timed (about 50 of each kind).
    for i in 0..800 {
        assert!(db.get(key(i)).expect("get").is_some());
    }
    for i in 0..800 {
        assert!(db.get(missing_key(i)).expect("get").is_none());
    }
    let version = db.version();
    let files: Vec<_> = version.files().map(|(_, _, file)| file.clone()).collect();
    assert_eq!(files.len(), 1, "one file holds every key");
    let counts = files[0].state().lookup_counts(std::time::Instant::now());
    assert_eq!((counts.found_probes, counts.empty_probes), (800, 800));
    assert!(counts.seconds > 0.0);
    let times = counts.probe_times;
    let timed = times.rejected.probes + times.cached_block.probes + times.device_block.probes;
    assert!((85..=115).contains(&timed), "{times:?}");
    // A present key's probe always reads a data block; a missing key's almost never passes a
    // filter of 10 bits per key.
    assert!(times.cached_block.probes + times.device_block.probes >= 40);
    assert!(times.rejected.probes >= 40, "{times:?}");
    for time in [times.rejected, times.cached_block, times.device_block] {
        assert_eq!(time.probes == 0, time.nanos == 0, "{times:?}");
    }
    assert!(
        times.cached_block.probes > 0,
        "the cache serves the blocks read again: {times:?}"
    );
    // Every found probe read a data block; few empty ones passed the filter.
    assert!(
        (800..880).contains(&counts.data_block_reads),
        "{} data blocks read",
        counts.data_block_reads
    );
    assert!(counts.data_block_misses <= counts.data_block_reads);
}

/// With pinned metadata, the default elastic filters hold the modules lookups probe, not every
/// module on disk: after lookups of every key and of as many absent ones, the pinned bytes are
/// well under those of uniform filters of the bits the elastic files hold on disk.
#[test]
fn pinned_elastic_filters_hold_the_modules_in_use_not_the_spare_ones() {
    let pinned = |options: Options| {
        let (_dir, db) = one_uncached_run(options.pin_filter_and_index_blocks(true), 4000);
        for i in 0..4000 {
            assert!(db.get(key(i)).expect("get").is_some());
            assert!(db.get(missing_key(i)).expect("get").is_none());
        }
        let stats = db.stats();
        (stats.pinned_bytes, stats.average_bits_per_key)
    };
    let (elastic, on_disk) = pinned(Options::default());
    assert!(
        on_disk > 10.0,
        "spare modules on disk: {on_disk} bits per key"
    );
    let (uniform, _) = pinned(Options::default().bits_per_key(on_disk).expect("valid"));
    // The spare modules' bits, in bytes, less a margin for the blocked filters' rounding.
    let spare = ((on_disk - 10.0) * 4000.0 / 8.0) as u64;
    assert!(
        elastic + spare / 2 < uniform,
        "elastic {elastic} pinned bytes against uniform's {uniform} (spare modules {spare} bytes)"
    );
}

/// Pinned filter memory follows the allocation (DESIGN.md §3.5's hard cap): with a budget in bytes
/// that held both modules in use of one run, a second run of as many keys halves every file's
/// share, and the flush that installs it lets the first run's reader go of the module it no
/// longer uses, before any lookup reaches it. Switching the allocator to a smaller budget does
/// the same.
#[test]
fn pinned_filters_let_go_of_modules_the_allocation_takes_out_of_use() {
    let keys = 4000;
    // 10 bits per key for one run of `keys` keys: two of its three 5-bit modules.
    let budget_bytes = u64::from(keys) * 10 / 8;
    let elastic = strata::alloc::Elastic::default()
        .with_budget_bytes(budget_bytes)
        .expect("valid");
    let options = Options {
        filter_allocator: std::sync::Arc::new(elastic),
        ..Options::default()
    };
    let (_dir, db) = one_uncached_run(options.pin_filter_and_index_blocks(true), keys);
    let at_open = db.stats().pinned_bytes;
    for i in 0..keys {
        assert!(db.get(missing_key(i)).expect("get").is_none());
    }
    let two_modules = db.stats().pinned_bytes - at_open;
    // Two 5-bit modules of `keys` keys, give or take the blocked filters' rounding.
    assert!(
        two_modules > budget_bytes * 9 / 10,
        "two modules held: {two_modules} bytes"
    );
    for i in keys..2 * keys {
        db.put(key(i), [1u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    let after_flush = db.stats().pinned_bytes - at_open;
    assert!(
        after_flush < two_modules * 6 / 10,
        "the first run keeps one module of two: {after_flush} of {two_modules} bytes pinned"
    );
    // Lookups of both runs pin the new run's module in use, one per file: within the budget.
    for i in 0..2 * keys {
        assert!(db.get(key(i)).expect("get").is_some());
        assert!(db.get(missing_key(i)).expect("get").is_none());
    }
    let stats = db.stats();
    assert!(
        stats.effective_bits_per_key < 5.5,
        "{} bits per key in use",
        stats.effective_bits_per_key
    );
    // A switch to a budget of one bit per key, which no 5-bit module fits: the switch keeps the
    // stored choice (elastic filters restore it), and the next flush re-divides the budget and
    // takes every module out of use, so nothing of any filter stays pinned.
    let pinned_before_switch = stats.pinned_bytes;
    db.set_filter_allocator(
        strata::policy::FilterAllocatorKind::Elastic,
        strata::policy::FilterSettings {
            bits_per_key: 1.0,
            compaction: strata::policy::CompactionKind::Leveling,
            size_ratio: 10.0,
            expected_entries: u64::from(2 * keys),
            buffer_entries: u64::from(keys),
            budget_bytes: None,
            disk_modules: None,
        },
    )
    .expect("switch");
    db.put(key(2 * keys), [1u8; 100]).expect("put");
    db.flush().expect("flush");
    let after_switch = db.stats().pinned_bytes;
    assert!(
        after_switch + budget_bytes * 8 / 10 < pinned_before_switch,
        "{after_switch} bytes pinned after the switch, {pinned_before_switch} before"
    );
    for i in 0..2 * keys {
        assert!(db.get(key(i)).expect("get").is_some());
        assert!(db.get(missing_key(i)).expect("get").is_none());
    }
    let stats = db.stats();
    assert!(stats.effective_bits_per_key <= 1.0);
    assert!(
        stats.pinned_bytes < after_switch + 2048,
        "no filter module pinned again: {} bytes, {after_switch} after the switch",
        stats.pinned_bytes
    );
}

/// Lookups racing to read a pinned filter block for the first time hold one copy and count it
/// once: the pinned bytes after four threads' first lookups equal one thread's.
#[test]
fn racing_first_probes_of_a_pinned_filter_count_it_once() {
    let warmed = |threads: u32| {
        let options = Options::default()
            .bits_per_key(10.0)
            .expect("valid")
            .pin_filter_and_index_blocks(true);
        let (_dir, db) = one_uncached_run(options, 4000);
        let at_open = db.stats().pinned_bytes;
        let barrier = std::sync::Barrier::new(threads as usize);
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let (db, barrier) = (&db, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    for i in 0..4000 {
                        let i = (i + thread * 997) % 4000;
                        assert!(db.get(key(i)).expect("get").is_some());
                        assert!(db.get(missing_key(i)).expect("get").is_none());
                    }
                });
            }
        });
        let stats = db.stats();
        assert!(stats.pinned_bytes > at_open, "the filter is held");
        db.close().expect("close");
        stats.pinned_bytes
    };
    assert_eq!(warmed(4), warmed(1));
}

/// Bytes appended to files, by kind, as the file system sees them.
#[derive(Default)]
struct AppendedBytes {
    tables: std::sync::atomic::AtomicU64,
    wal: std::sync::atomic::AtomicU64,
}

struct CountingFile {
    inner: Box<dyn strata::env::WritableFile>,
    kind: strata::env::FileKind,
    appended: std::sync::Arc<AppendedBytes>,
}

impl strata::env::WritableFile for CountingFile {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        self.inner.append(data)?;
        let counter = match self.kind {
            strata::env::FileKind::Table => &self.appended.tables,
            strata::env::FileKind::Wal => &self.appended.wal,
            _ => return Ok(()),
        };
        counter.fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
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
    fn sync_handle(&self) -> Option<strata::env::SyncHandle> {
        self.inner.sync_handle()
    }
}

#[test]
fn bytes_written_by_cause_add_up_to_the_bytes_the_file_system_saw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let appended = std::sync::Arc::new(AppendedBytes::default());
    let policy = strata::compaction::Leveling::new(2.0).expect("valid");
    let options = Options::default()
        .write_buffer_bytes(32 * 1024)
        .target_file_bytes(16 * 1024)
        .compaction_policy(std::sync::Arc::new(policy))
        .file_system({
            // Every byte appended to a table file or a WAL counted by the file system.
            let appended = std::sync::Arc::clone(&appended);
            std::sync::Arc::new(strata::env::WrapWritable::new(
                move |path: &std::path::Path, inner: Box<dyn strata::env::WritableFile>| {
                    Box::new(CountingFile {
                        inner,
                        kind: strata::env::FileKind::of(path),
                        appended: std::sync::Arc::clone(&appended),
                    }) as Box<dyn strata::env::WritableFile>
                },
            ))
        });
    let db = Db::open(dir.path(), options).expect("open");
    // Random keys (every level-0 run spans the key space) and updates of earlier keys.
    let mut state = 7u64;
    for _ in 0..12_000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        db.put(key((state >> 33) as u32 % 6000), [3u8; 60])
            .expect("put");
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("wait");
    let before_full = db.stats().io;
    db.compact().expect("compact");
    let io = db.stats().io;
    let load = std::sync::atomic::Ordering::Relaxed;

    // Every byte appended to a table file is counted once, by the job that wrote it.
    assert_eq!(io.table_write_bytes(), appended.tables.load(load), "{io:?}");
    let merges: u64 = io.merge_write_bytes.iter().sum();
    assert_eq!(
        merges + io.full_compaction_write_bytes,
        io.compaction_write_bytes
    );
    let causes = io.write_causes();
    let cause = |name: &str| causes.iter().find(|(c, _)| c == name).map(|(_, b)| *b);
    let tables: u64 = causes
        .iter()
        .filter(|(c, _)| c != "wal")
        .map(|(_, b)| b)
        .sum();
    assert_eq!(tables, io.table_write_bytes(), "{causes:?}");
    assert_eq!(cause("flush"), Some(io.flush_write_bytes));
    assert_eq!(cause("wal"), Some(io.wal_write_bytes));
    // The WAL's records, without the log's own framing.
    assert!(io.wal_write_bytes > 0 && io.wal_write_bytes <= appended.wal.load(load));
    // The policy merged into level 1 and deeper before the full compaction, which wrote the
    // rest; write amplification counts them all.
    assert!(io.merge_write_bytes[1] > 0, "{causes:?}");
    assert!(
        io.merge_write_bytes[2..].iter().sum::<u64>() > 0,
        "{causes:?}"
    );
    assert_eq!(before_full.full_compaction_write_bytes, 0);
    assert!(cause("full").is_some_and(|bytes| bytes > 0), "{causes:?}");
    let expected = io.table_write_bytes() as f64 / io.user_write_bytes as f64;
    assert!((io.write_amplification() - expected).abs() < 1e-12);
    db.reset_stats();
    let io = db.stats().io;
    assert_eq!(io.write_causes(), Vec::new());
    assert_eq!((io.trivial_moves, io.trivial_move_bytes), (0, 0));
}

#[test]
fn a_trivial_move_is_counted_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    for i in 0..100 {
        db.put(key(i), [5u8; 50]).expect("put");
    }
    db.flush().expect("flush");
    let flushed = db.stats().io.flush_write_bytes;
    // One level-0 file and nothing below: a full compaction moves it to level 1.
    db.compact().expect("compact");
    let io = db.stats().io;
    assert_eq!(io.trivial_moves, 1);
    assert_eq!(io.trivial_move_bytes, flushed);
    assert_eq!(io.compaction_write_bytes, 0);
    assert_eq!(io.table_write_bytes(), flushed);
}

/// A scan's read-ahead (`Options::scan_readahead_max_bytes`) with O_DIRECT reads and no block
/// cache: a long scan reaches the same entries through fewer device reads, each data block
/// either read alone, as a read-ahead fill, or taken from a fill; point lookups and short scans
/// never read ahead; turning it off reads every data block alone.
#[test]
fn long_scans_read_ahead_and_point_lookups_never_do() {
    let options = |readahead: usize| {
        Options::default()
            .block_cache_bytes(0)
            .direct_reads(true)
            .scan_readahead_max_bytes(readahead)
    };
    let (dir, db) = load(options(256 << 10));
    let scan = |db: &Db, from: u32, entries: usize| -> Vec<(Vec<u8>, Vec<u8>)> {
        db.range(key(from)..)
            .take(entries)
            .map(|entry| {
                let (key, value) = entry.expect("entry");
                (key, value.to_vec())
            })
            .collect()
    };

    for i in 0..500 {
        assert!(db.get(key(i * 7)).expect("get").is_some());
        assert!(db.get(missing_key(i * 7)).expect("get").is_none());
    }
    // Scans of 10 entries of 100 bytes: within one or two data blocks.
    for i in 0..200 {
        assert_eq!(scan(&db, i * 23, 10).len(), 10);
    }
    let io = db.stats().io;
    assert!(io.data_block_reads_total() > 200);
    assert_eq!(io.scan_readahead_reads, 0);
    assert_eq!(io.scan_readahead_blocks, 0);

    // A scan's window is memory while the iterator lives: in the stats and their total.
    assert_eq!(db.stats().readahead_buffer_bytes, 0);
    let mut open = db.range(key(100)..);
    for _ in 0..1000 {
        open.next().expect("entry").expect("entry");
    }
    let during = db.stats();
    assert!(during.readahead_buffer_bytes > 0, "{during:?}");
    assert!(during.readahead_buffer_bytes <= 2 * (256 << 10) + 8192);
    assert!(during.total_memory_bytes >= during.readahead_buffer_bytes);
    drop(open);
    assert_eq!(db.stats().readahead_buffer_bytes, 0);

    db.reset_stats();
    let with = scan(&db, 100, 3000);
    let on = db.stats().io;
    drop(db);
    let db = Db::open(dir.path(), options(0)).expect("reopen");
    db.reset_stats();
    let without = scan(&db, 100, 3000);
    let off = db.stats().io;
    assert_eq!(with.len(), 3000);
    assert_eq!(with, without);

    // 3,000 entries of about 115 bytes: some 90 data blocks of 4 KiB, each read alone when off.
    assert!(off.data_block_reads_total() > 60, "{off:?}");
    assert_eq!(off.scan_readahead_reads + off.scan_readahead_blocks, 0);
    assert!(on.scan_readahead_reads > 0);
    assert_eq!(
        on.data_block_reads_total() + on.scan_readahead_blocks,
        off.data_block_reads_total(),
        "every data block the scan reached, read alone, as a fill or from one"
    );
    assert!(
        on.data_block_reads_total() * 5 < off.data_block_reads_total(),
        "{} device reads with read-ahead, {} without",
        on.data_block_reads_total(),
        off.data_block_reads_total()
    );
    assert!(on.scan_readahead_bytes <= on.read_bytes);
}

/// With access statistics on, Merlin's lookup count is the engine's count of point lookups:
/// several threads' lookups are each counted once, with statistics on and off, and a counter reset
/// starts the count over without touching the lifetime totals.
#[test]
fn concurrent_lookups_are_each_counted_once_with_and_without_statistics() {
    for statistics in [true, false] {
        let (_dir, db) = load(Options::default().access_statistics(statistics));
        let threads = 4u32;
        let per_thread = 2_000u32;
        let count = |db: &Db| {
            std::thread::scope(|scope| {
                for thread in 0..threads {
                    scope.spawn(move || {
                        for i in 0..per_thread {
                            let i = (thread * per_thread + i) % 5000;
                            assert!(db.get(key(i)).expect("get").is_some());
                            assert!(db.get(missing_key(i)).expect("get").is_none());
                        }
                    });
                }
            });
        };
        let before = db.workload().point_lookups;
        count(&db);
        let lookups = u64::from(2 * threads * per_thread);
        let io = db.stats().io;
        assert_eq!(io.point_lookups, lookups, "statistics {statistics}");
        assert_eq!(
            io.point_lookups_found,
            lookups / 2,
            "statistics {statistics}"
        );
        db.reset_stats();
        assert_eq!(db.stats().io.point_lookups, 0, "statistics {statistics}");
        count(&db);
        assert_eq!(
            db.stats().io.point_lookups,
            lookups,
            "statistics {statistics}"
        );
        assert_eq!(
            db.workload().point_lookups - before,
            2 * lookups,
            "statistics {statistics}"
        );
    }
}
