//! `strata stress`: Strata's `db_stress`. N threads run random operations — put, delete, batch,
//! get, scans, snapshots, flush, compact, wait_for_compactions, reopen — against an
//! expected-state oracle (`oracle.rs`), and every read is checked. With `--fault-rate` the
//! database runs on the fault-injecting file system: writes fail at random (I/O errors and
//! `ENOSPC`), the engine must refuse later writes with a clear error and keep serving reads, and
//! after the faults are cleared and the database reopened everything acknowledged must be there.
//!
//! With `--journal` it is the child of the crash test (`crash.rs`): every write is journaled
//! before it is issued and again when acknowledged, so that after the process is killed the next
//! child can check the reopened database against what was acknowledged and what was in flight.
//!
//! On a violation it prints the seed, the operation and the expected and actual values, and exits
//! non-zero.

pub mod crash;
mod journal;
pub mod oracle;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{FaultInjectionFileSystem, FaultPoint, RandomFaults};
use strata::model::auto_tune::AutoTuneOptions;
use strata::{Db, Error, Options, WriteBatch, WriteOptions};

use crate::error::{CliError, CliResult};
use crate::policies::{CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings};
use journal::Journal;
use oracle::{decode_value, describe, key_bytes, key_index, value_bytes, ExpectedState, Outcome};

/// How long reads go on (and are checked) in the engine's error state before the reopen.
const ERROR_STATE_READS: Duration = Duration::from_millis(50);

/// `strata stress` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct StressArgs {
    /// Database directory (default: a new temporary directory, removed afterwards).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seed of every random choice (each thread's generator is seeded from it).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Distinct keys.
    #[arg(long, default_value_t = 10_000)]
    pub keys: usize,
    /// Typical value size in bytes (values range from half to 1.5x it; one in 64 is 16x).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Merge policy.
    #[arg(long, value_enum, default_value = "leveling")]
    pub compaction: CompactionKind,
    /// Filter allocator (Mnemosyne+ runs with access statistics).
    #[arg(long, value_enum, default_value = "uniform")]
    pub filter_policy: FilterAllocatorKind,
    /// Filter budget in bits per key.
    #[arg(long, default_value_t = 4.0)]
    pub bits_per_key: f64,
    /// The family filters are built in: bloom, ribbon or auto (`Options::filter_family`).
    #[arg(long, default_value = "bloom", value_parser = parse_filter_family)]
    pub filter_family: strata::FilterFamilies,
    /// Range filters on every table file (`Options::range_filter_bits`; 0 turns them off). On
    /// by default so that every scan of the run, a bounded iterator, goes through them.
    #[arg(long, default_value_t = 6)]
    pub range_filter_bits: u32,
    /// Partition every table's index and filter into 256-byte partitions (`Options::
    /// partition_metadata_above_bytes`), so partitioned filters and elastic filters' partly used
    /// modules are exercised.
    #[arg(long)]
    pub partitioned: bool,
    /// Pin every table's index and filter blocks outside the block cache
    /// (`Options::pin_filter_and_index_blocks`; tables are then not partitioned), so that pinned
    /// filter blocks are read by first probes and readers holding modules out of use are
    /// replaced while workers look up through them.
    #[arg(long)]
    pub pin_index_filter: bool,
    /// Bytes per second elastic filters' priced rebuilds may take
    /// (`Options::filter_rebuild_bytes_per_sec`; KiB/MiB suffixes accepted; 0 turns them off).
    /// High by default, so that rebuilds run among the workers' operations.
    #[arg(long, default_value = "64MiB", value_parser = crate::bench::parse_bytes)]
    pub filter_rebuild_rate: u64,
    /// Merlin's access statistics, `on` or `off` (the flag alone: `on`; default
    /// `Options::default()`'s, on; always on for Mnemosyne+).
    #[arg(long, num_args = 0..=1, default_missing_value = "on", value_parser = crate::bench::parse_on_off)]
    pub access_statistics: Option<bool>,
    /// Probability that a write-side file operation (create, append, flush, sync, rename) fails
    /// with an I/O error or ENOSPC. 0 runs on the real file system's behaviour.
    #[arg(long, default_value_t = 0.0)]
    pub fault_rate: f64,
    /// Probability that a file read fails or comes back short.
    #[arg(long, default_value_t = 0.0)]
    pub read_fault_rate: f64,
    /// Fraction of writes issued with `sync`.
    #[arg(long, default_value_t = 0.05)]
    pub sync_fraction: f64,
    /// Close and reopen the database about every this many seconds (0: only after faults).
    #[arg(long, default_value_t = 3.0)]
    pub reopen_every: f64,
    /// Memtable size in bytes (small, so that flushes and compactions are frequent).
    #[arg(long, default_value_t = 64 * 1024)]
    pub write_buffer_bytes: usize,
    /// Compaction workers (`Options::max_background_compactions`): more than the engine's
    /// default, so that jobs run side by side often.
    #[arg(long, default_value_t = 3)]
    pub max_background_compactions: usize,
    /// Auto-tune on (`Options::auto_tune`, DESIGN.md §10), deciding far more often than its
    /// defaults (every 2,000 operations or 0.2 s, early after 500, for any gain that pays, at a
    /// size ratio of at most 4), so that its switches and merges for reads run beside the
    /// workers, the reopens and the faults; a tenth of the maintenance operations then ask for a
    /// decision at once (`Db::auto_tune_now`).
    #[arg(long)]
    pub auto_tune: bool,
    /// Crash-test child: the journal of writes (`crash.rs`).
    #[arg(long, hide = true)]
    pub journal: Option<PathBuf>,
    /// Crash-test child: kill the process (SIGKILL) at this point (`OP:FILE:SKIP`, e.g.
    /// `append:manifest:3`), armed once the start-up check has passed.
    #[arg(long, hide = true)]
    pub crash_at: Option<String>,
}

/// What one run did.
#[derive(Debug, Default)]
struct Counts {
    puts: AtomicU64,
    deletes: AtomicU64,
    batches: AtomicU64,
    gets: AtomicU64,
    scans: AtomicU64,
    scanned_keys: AtomicU64,
    snapshots: AtomicU64,
    flushes: AtomicU64,
    compactions: AtomicU64,
    waits: AtomicU64,
    reopens: AtomicU64,
    failed_writes: AtomicU64,
    rejected_writes: AtomicU64,
    read_errors: AtomicU64,
    unverifiable: AtomicU64,
    verified_after_reopen: AtomicU64,
    /// Filter rebuilds the engine ran, summed over the database's openings.
    filter_rebuilds: AtomicU64,
    /// Decisions taken by `Db::auto_tune_now` (a call refused in the engine's error state is
    /// not one).
    decisions_asked: AtomicU64,
    /// Auto-tune's decisions in all (the last decision's number, which a reopen resumes) and the
    /// switches and merges for reads among those the history kept at each close.
    decisions: AtomicU64,
    switches_seen: AtomicU64,
    merges_seen: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Everything the worker threads share.
struct Stress {
    args: StressArgs,
    dir: PathBuf,
    fs: FaultInjectionFileSystem,
    /// The open database; a reopen takes the write lock, every operation a read lock.
    db: RwLock<Option<Db>>,
    oracle: ExpectedState,
    journal: Option<Journal>,
    counts: Counts,
    violation: Mutex<Option<String>>,
    stop: AtomicBool,
    /// Set when a write failed: the engine is in its error state until reopened.
    needs_reopen: AtomicBool,
    /// When the engine entered its error state: reads go on (and are checked) for a while before
    /// the reopen, because an engine in its error state must keep serving them.
    error_since: Mutex<Option<Instant>>,
    /// Crash-test child: batches in flight when the last process died (each all or nothing).
    in_flight_batches: Mutex<Vec<journal::Batch>>,
    last_reopen: Mutex<Instant>,
}

/// Parses `OP:FILE:SKIP` for `--crash-at`.
pub fn parse_crash_point(text: &str) -> CliResult<FaultPoint> {
    use strata::env::{Fault, FaultOp, FileKind};
    let parts: Vec<&str> = text.split(':').collect();
    let [op, file, skip] = parts.as_slice() else {
        return Err(CliError::InvalidArgument(format!(
            "--crash-at {text:?}: expected OP:FILE:SKIP"
        )));
    };
    let op = match *op {
        "create" => FaultOp::Create,
        "append" => FaultOp::Append,
        "flush" => FaultOp::Flush,
        "sync" => FaultOp::Sync,
        "rename" => FaultOp::Rename,
        other => {
            return Err(CliError::InvalidArgument(format!(
                "--crash-at: unknown operation {other:?}"
            )))
        }
    };
    let file = match *file {
        "wal" => FileKind::Wal,
        "table" => FileKind::Table,
        "manifest" => FileKind::Manifest,
        "current" => FileKind::Current,
        "access" => FileKind::AccessStatistics,
        other => {
            return Err(CliError::InvalidArgument(format!(
                "--crash-at: unknown file kind {other:?}"
            )))
        }
    };
    let skip = skip
        .parse()
        .map_err(|_| CliError::InvalidArgument(format!("--crash-at: bad count {skip:?}")))?;
    Ok(FaultPoint {
        op,
        file: Some(file),
        skip,
        fault: Fault::Crash,
    })
}

impl Stress {
    fn options(&self) -> CliResult<Options> {
        let args = &self.args;
        let size_ratio = 4.0;
        let entry_bytes = (args.value_size + 12) as u64;
        let allocator = args.filter_policy.build(&FilterSettings {
            bits_per_key: args.bits_per_key,
            compaction: args.compaction,
            size_ratio,
            expected_entries: args.keys as u64,
            buffer_entries: (args.write_buffer_bytes as u64 / (entry_bytes + 72)).max(1),
            budget_bytes: None,
            disk_modules: None,
        })?;
        let merlin = args.filter_policy.needs_access_statistics();
        let options = Options::default()
            .write_buffer_bytes(args.write_buffer_bytes)
            .target_file_bytes(args.write_buffer_bytes as u64)
            .block_bytes(1024)
            .block_cache_bytes(256 * 1024)
            .level0_compaction_trigger(2)
            .max_background_compactions(args.max_background_compactions)
            .access_statistics(
                merlin
                    || args
                        .access_statistics
                        .unwrap_or(Options::default().access_statistics),
            )
            .compaction_policy(
                args.compaction
                    .build(&CompactionSettings::with_size_ratio(size_ratio))?,
            )
            .filter_allocator(allocator)
            .filter_family(args.filter_family)
            .range_filter_bits(args.range_filter_bits)
            .filter_rebuild_bytes_per_sec(args.filter_rebuild_rate)
            .pin_filter_and_index_blocks(args.pin_index_filter)
            .auto_tune(args.auto_tune.then(often))
            .file_system(Arc::new(self.fs.clone()));
        let options = if args.partitioned {
            options
                .metadata_block_bytes(256)
                .partition_metadata_above_bytes(256)
        } else {
            options
        };
        options.validate()?;
        Ok(options)
    }

    fn arm_random_faults(&self) {
        if self.args.fault_rate > 0.0 || self.args.read_fault_rate > 0.0 {
            self.fs.set_random_faults(Some(RandomFaults {
                write_rate: self.args.fault_rate,
                read_rate: self.args.read_fault_rate,
                seed: self.args.seed ^ self.counts.reopens.load(Ordering::Relaxed),
            }));
        }
    }

    fn faults_on(&self) -> bool {
        self.args.fault_rate > 0.0 || self.args.read_fault_rate > 0.0
    }

    /// Records the first violation and stops every thread.
    fn violation(&self, message: String) {
        let mut slot = self.violation.lock();
        if slot.is_none() {
            *slot = Some(format!("seed {}: {message}", self.args.seed));
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Reads `key` from `db` and checks it decodes to a value of that key; `Err` for an engine
    /// error, `Ok(Err(_))` for a value that is not one the oracle could have written.
    fn read(&self, db: &Db, key: usize) -> strata::Result<Result<Option<u64>, String>> {
        Ok(match db.get(key_bytes(key))? {
            None => Ok(None),
            Some(value) => decode_value(key, &value, self.args.value_size).map(Some),
        })
    }

    /// An engine error from a read: expected with read faults on, a violation otherwise.
    fn read_error(&self, what: &str, error: &Error) {
        if self.args.read_fault_rate > 0.0 {
            bump(&self.counts.read_errors);
        } else {
            self.violation(format!("{what} failed: {error}"));
        }
    }

    /// How a write ended, from the engine's answer.
    fn write_outcome(&self, what: &str, result: &strata::Result<()>) -> Outcome {
        match result {
            Ok(()) => Outcome::Acked,
            // Refused before reaching the log: the engine was already in its error state.
            Err(Error::Background(_)) if self.faults_on() => {
                bump(&self.counts.rejected_writes);
                self.enter_error_state();
                Outcome::Rejected
            }
            Err(Error::Io { .. }) if self.faults_on() => {
                bump(&self.counts.failed_writes);
                self.enter_error_state();
                Outcome::Failed
            }
            Err(Error::Closed) => Outcome::Rejected,
            Err(error) => {
                self.violation(format!("{what} failed: {error}"));
                Outcome::Failed
            }
        }
    }

    fn enter_error_state(&self) {
        self.error_since.lock().get_or_insert_with(Instant::now);
        self.needs_reopen.store(true, Ordering::SeqCst);
    }

    /// True when a reopen is due: periodically, or once the error state has lasted a while.
    fn reopen_due(&self) -> bool {
        if self.needs_reopen.load(Ordering::SeqCst) {
            return self
                .error_since
                .lock()
                .is_none_or(|since| since.elapsed() >= ERROR_STATE_READS);
        }
        self.args.reopen_every > 0.0
            && self.last_reopen.lock().elapsed().as_secs_f64() >= self.args.reopen_every
    }

    fn write_options(&self, rng: &mut StdRng) -> WriteOptions {
        WriteOptions {
            sync: rng.gen_bool(self.args.sync_fraction.clamp(0.0, 1.0)),
        }
    }

    /// A put or a delete of one key.
    fn write_one(&self, db: &Db, rng: &mut StdRng, delete: bool) {
        let key = rng.gen_range(0..self.oracle.len());
        let mut state = self.oracle.lock(key);
        let generation = (!delete).then(|| state.take_generation());
        let index = state.start(generation);
        let batch_id = self.journal_start(&[(key, generation)]);
        let mut batch = WriteBatch::new();
        match generation {
            Some(generation) => {
                batch.put(
                    key_bytes(key),
                    value_bytes(key, generation, self.args.value_size),
                );
                bump(&self.counts.puts);
            }
            None => {
                batch.delete(key_bytes(key));
                bump(&self.counts.deletes);
            }
        }
        let result = db.write_opt(batch, self.write_options(rng));
        let outcome = self.write_outcome(&format!("write of key {key}"), &result);
        self.journal_finish(batch_id, outcome);
        state.finish(index, outcome);
    }

    /// A batch of puts and deletes over 2-8 distinct keys, applied atomically.
    fn write_batch(&self, db: &Db, rng: &mut StdRng) {
        let mut keys: Vec<usize> = (0..rng.gen_range(2..=8))
            .map(|_| rng.gen_range(0..self.oracle.len()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut states = self.oracle.lock_many(&keys);
        let mut batch = WriteBatch::new();
        let mut started = Vec::with_capacity(keys.len());
        let mut journaled = Vec::with_capacity(keys.len());
        for (state, &key) in states.iter_mut().zip(&keys) {
            let generation = rng.gen_bool(0.8).then(|| state.take_generation());
            match generation {
                Some(generation) => batch.put(
                    key_bytes(key),
                    value_bytes(key, generation, self.args.value_size),
                ),
                None => batch.delete(key_bytes(key)),
            };
            started.push(state.start(generation));
            journaled.push((key, generation));
        }
        let batch_id = self.journal_start(&journaled);
        let result = db.write_opt(batch, self.write_options(rng));
        let outcome = self.write_outcome(&format!("batch over keys {keys:?}"), &result);
        self.journal_finish(batch_id, outcome);
        for (state, index) in states.iter_mut().zip(started) {
            state.finish(index, outcome);
        }
        bump(&self.counts.batches);
    }

    fn journal_start(&self, writes: &[(usize, Option<u64>)]) -> u64 {
        match &self.journal {
            Some(journal) => journal.start(writes).unwrap_or_else(|error| {
                self.violation(format!("journal write failed: {error}"));
                0
            }),
            None => 0,
        }
    }

    fn journal_finish(&self, batch_id: u64, outcome: Outcome) {
        if let (Some(journal), Outcome::Acked) = (&self.journal, outcome) {
            if let Err(error) = journal.acked(batch_id) {
                self.violation(format!("journal write failed: {error}"));
            }
        }
    }

    /// A point read under the key's lock: exactly the newest acknowledged state.
    fn get(&self, db: &Db, rng: &mut StdRng) {
        let key = rng.gen_range(0..self.oracle.len());
        let state = self.oracle.lock(key);
        bump(&self.counts.gets);
        match self.read(db, key) {
            Err(error) => self.read_error(&format!("get of key {key}"), &error),
            Ok(Err(damage)) => self.violation(format!("get of key {key}: {damage}")),
            Ok(Ok(seen)) if seen != state.acked() => self.violation(format!(
                "get of key {key}: expected {}, read {}",
                describe(state.acked()),
                describe(seen)
            )),
            Ok(Ok(_)) => {}
        }
    }

    /// The window of states each key in `range` may be seen in by a read that starts now.
    fn window_starts(&self, range: std::ops::Range<usize>) -> Vec<u64> {
        range
            .map(|key| self.oracle.lock(key).window_start())
            .collect()
    }

    /// Checks what a lock-free read saw for every key of `range` (`seen[i]` for key
    /// `range.start + i`) against the windows opened by `starts`.
    fn check_window(
        &self,
        what: &str,
        range: std::ops::Range<usize>,
        starts: &[u64],
        seen: &[Option<u64>],
    ) {
        for ((key, &start), &value) in range.zip(starts).zip(seen) {
            let state = self.oracle.lock(key);
            match state.allows_in_window(start, state.window_end(), value) {
                Some(true) => {}
                Some(false) => {
                    self.violation(format!(
                        "{what}: key {key} read {} but its states from the read's start on are \
                         acked {} (window {start}..={}, next generation {})",
                        describe(value),
                        describe(state.acked()),
                        state.window_end(),
                        state.next_generation()
                    ));
                    return;
                }
                None => bump(&self.counts.unverifiable),
            }
        }
    }

    /// Collects what an iterator yields for the keys of `range`, checking order and values.
    fn collect_range(
        &self,
        what: &str,
        iter: strata::DbIterator,
        range: &std::ops::Range<usize>,
    ) -> Option<Vec<Option<u64>>> {
        let mut seen = vec![None; range.len()];
        let mut previous: Option<usize> = None;
        for entry in iter {
            let (key, value) = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    self.read_error(what, &error);
                    return None;
                }
            };
            let Some(index) = key_index(&key).filter(|k| range.contains(k)) else {
                self.violation(format!(
                    "{what}: key {:?} outside the range {range:?}",
                    String::from_utf8_lossy(&key)
                ));
                return None;
            };
            if previous.is_some_and(|p| p >= index) {
                self.violation(format!("{what}: key {index} after key {previous:?}"));
                return None;
            }
            previous = Some(index);
            match decode_value(index, &value, self.args.value_size) {
                Ok(generation) => seen[index - range.start] = Some(generation),
                Err(damage) => {
                    self.violation(format!("{what}: key {index}: {damage}"));
                    return None;
                }
            }
        }
        Some(seen)
    }

    fn random_range(&self, rng: &mut StdRng) -> std::ops::Range<usize> {
        let start = rng.gen_range(0..self.oracle.len());
        let end = (start + rng.gen_range(1..=100)).min(self.oracle.len());
        start..end
    }

    /// A range scan over the live database.
    fn scan(&self, db: &Db, rng: &mut StdRng) {
        let range = self.random_range(rng);
        let starts = self.window_starts(range.clone());
        let iter = db.range(key_bytes(range.start)..key_bytes(range.end));
        let what = format!("scan of keys {range:?}");
        if let Some(seen) = self.collect_range(&what, iter, &range) {
            self.check_window(&what, range.clone(), &starts, &seen);
            bump(&self.counts.scans);
            self.counts
                .scanned_keys
                .fetch_add(range.len() as u64, Ordering::Relaxed);
        }
    }

    /// A snapshot: point reads and a scan of the same keys through it must agree with each other
    /// (and a second scan with the first), and fall in the window of states around its creation.
    fn snapshot(&self, db: &Db, rng: &mut StdRng) {
        let range = self.random_range(rng);
        let starts = self.window_starts(range.clone());
        let snapshot = db.snapshot();
        let what = format!("snapshot {} of keys {range:?}", snapshot.sequence());
        let mut gets = Vec::with_capacity(range.len());
        for key in range.clone() {
            match snapshot.get(key_bytes(key)) {
                Ok(None) => gets.push(None),
                Ok(Some(value)) => match decode_value(key, &value, self.args.value_size) {
                    Ok(generation) => gets.push(Some(generation)),
                    Err(damage) => {
                        return self.violation(format!("{what}: get of key {key}: {damage}"))
                    }
                },
                Err(error) => return self.read_error(&what, &error),
            }
        }
        // Let other threads write meanwhile: the snapshot must not move.
        std::thread::yield_now();
        let iter = snapshot.range(key_bytes(range.start)..key_bytes(range.end));
        let Some(scanned) = self.collect_range(&what, iter, &range) else {
            return;
        };
        if scanned != gets {
            let key = range.start
                + scanned
                    .iter()
                    .zip(&gets)
                    .take_while(|(a, b)| a == b)
                    .count();
            let i = key - range.start;
            return self.violation(format!(
                "{what}: key {key}: the snapshot's scan read {} but its get read {}",
                describe(scanned[i]),
                describe(gets[i])
            ));
        }
        self.check_window(&what, range, &starts, &gets);
        bump(&self.counts.snapshots);
    }

    /// A flush, a full compaction or a wait for the policy's compactions.
    fn maintenance(&self, db: &Db, rng: &mut StdRng) {
        let (what, result) = match rng.gen_range(0..10) {
            0..=5 => {
                bump(&self.counts.flushes);
                ("flush", db.flush())
            }
            6..=7 => {
                bump(&self.counts.waits);
                ("wait_for_compactions", db.wait_for_compactions())
            }
            8 if self.args.auto_tune => (
                "auto_tune_now",
                db.auto_tune_now()
                    .map(|_| bump(&self.counts.decisions_asked)),
            ),
            _ => {
                bump(&self.counts.compactions);
                ("compact", db.compact())
            }
        };
        match result {
            Ok(()) => {}
            Err(Error::Background(_) | Error::Io { .. } | Error::Corruption { .. })
                if self.faults_on() =>
            {
                self.enter_error_state()
            }
            Err(error) => self.violation(format!("{what} failed: {error}")),
        }
    }

    /// One random operation by a worker.
    fn step(&self, rng: &mut StdRng) {
        if self.reopen_due() {
            return self.reopen();
        }
        let guard = self.db.read();
        let Some(db) = guard.as_ref() else {
            return;
        };
        match rng.gen_range(0..1000) {
            0..=299 => self.write_one(db, rng, false),
            300..=379 => self.write_one(db, rng, true),
            380..=459 => self.write_batch(db, rng),
            460..=779 => self.get(db, rng),
            780..=899 => self.scan(db, rng),
            900..=989 => self.snapshot(db, rng),
            _ => self.maintenance(db, rng),
        }
    }

    /// Closes and reopens the database (faults cleared), then checks every key against what it
    /// may hold after a reopen and resolves the keys whose failed writes turned out durable.
    fn reopen(&self) {
        let mut guard = self.db.write();
        // Another thread may have reopened while this one waited for the lock.
        if !self.reopen_due() {
            return;
        }
        if let Some(db) = guard.take() {
            let _ = db.close();
            self.counts
                .filter_rebuilds
                .fetch_add(db.stats().io.filter_rebuilds, Ordering::Relaxed);
            self.count_decisions(&db);
        }
        self.fs.clear();
        let db = match self.options().and_then(|o| Ok(Db::open(&self.dir, o)?)) {
            Ok(db) => db,
            Err(error) => {
                return self.violation(format!("reopen failed: {error}"));
            }
        };
        bump(&self.counts.reopens);
        if let Err(message) = self.verify_all(&db) {
            return self.violation(message);
        }
        self.needs_reopen.store(false, Ordering::SeqCst);
        *self.error_since.lock() = None;
        *self.last_reopen.lock() = Instant::now();
        if let Some(point) = &self.args.crash_at {
            match parse_crash_point(point) {
                Ok(point) => self.fs.arm(point),
                Err(error) => return self.violation(error.to_string()),
            }
        }
        self.arm_random_faults();
        *guard = Some(db);
    }

    /// After a reopen: every key holds its newest acked state or a failed write after it; a full
    /// scan agrees with the point reads; the filter cap holds.
    fn verify_all(&self, db: &Db) -> Result<(), String> {
        let mut resolved = Vec::with_capacity(self.oracle.len());
        for key in 0..self.oracle.len() {
            let mut state = self.oracle.lock(key);
            let seen = match self.read(db, key) {
                Ok(Ok(seen)) => seen,
                Ok(Err(damage)) => return Err(format!("after reopen, key {key}: {damage}")),
                Err(error) => return Err(format!("after reopen, get of key {key}: {error}")),
            };
            let allowed = state.after_reopen();
            if !allowed.contains(&seen) {
                return Err(format!(
                    "after reopen, key {key} holds {} but must hold {} (or a failed write after \
                     it: {:?})",
                    describe(seen),
                    describe(state.acked()),
                    allowed
                ));
            }
            state.resolve(seen);
            resolved.push(seen);
        }
        // A batch in flight at a crash is all or nothing: either every put of it is there or none
        // is (and if it is there, its deletes are too).
        for batch in std::mem::take(&mut *self.in_flight_batches.lock()) {
            let puts: Vec<bool> = batch
                .iter()
                .filter(|(_, generation)| generation.is_some())
                .map(|&(key, generation)| resolved[key] == generation)
                .collect();
            let applied = puts.first().copied().unwrap_or(false);
            let partial = puts.iter().any(|&p| p != applied)
                || (applied
                    && batch
                        .iter()
                        .any(|&(key, generation)| generation.is_none() && resolved[key].is_some()));
            if partial {
                return Err(format!(
                    "after reopen, a batch in flight at the crash is partly applied: writes                      {batch:?}, keys now hold {:?}",
                    batch.iter().map(|&(k, _)| resolved[k]).collect::<Vec<_>>()
                ));
            }
        }
        let range = 0..self.oracle.len();
        let scanned = self
            .collect_range("full scan after reopen", db.iter(), &range)
            .ok_or_else(|| {
                self.violation
                    .lock()
                    .clone()
                    .unwrap_or_else(|| "full scan after reopen failed".into())
            })?;
        if let Some(key) = (0..resolved.len()).find(|&k| resolved[k] != scanned[k]) {
            return Err(format!(
                "after reopen, key {key}: a full scan read {} but a get read {}",
                describe(scanned[key]),
                describe(resolved[key])
            ));
        }
        self.counts
            .verified_after_reopen
            .fetch_add(resolved.len() as u64, Ordering::Relaxed);
        let stats = db.stats();
        // The min-1 variant rounds each file up to whole bits: its cap holds up to rounding.
        let tolerance = if self.args.filter_policy == FilterAllocatorKind::MnemosyneMin1 {
            0.1
        } else {
            1e-9
        };
        if let Some(cap) = stats.bits_per_key_cap {
            if stats.effective_bits_per_key > cap + tolerance {
                return Err(format!(
                    "after reopen, {} bits/key in use exceed the cap of {cap}",
                    stats.effective_bits_per_key
                ));
            }
        }
        if let Some(journal) = &self.journal {
            journal
                .rewrite(&resolved, |key| self.oracle.lock(key).next_generation())
                .map_err(|error| format!("rewriting the journal: {error}"))?;
        }
        Ok(())
    }

    /// Counts what auto-tune's history shows of the opening `db` just closed: decisions in all,
    /// and the switches and merges for reads among the decisions since the last count (the
    /// history keeps the last few, so a busy opening shows fewer than it made).
    fn count_decisions(&self, db: &Db) {
        let counted = self.counts.decisions.load(Ordering::Relaxed);
        let history = db.auto_tune_history();
        for decision in history.iter().filter(|d| d.number > counted) {
            if decision.switched {
                bump(&self.counts.switches_seen);
            }
            if decision.merges_for_reads() {
                bump(&self.counts.merges_seen);
            }
        }
        if let Some(last) = history.last() {
            self.counts
                .decisions
                .fetch_max(last.number, Ordering::Relaxed);
        }
    }

    fn report(&self, elapsed: Duration) -> String {
        let c = &self.counts;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        format!(
            "{:.1} s, {} threads, seed {}, {} keys, {} / {} (bits/key {}, family {}{}), faults write {} read {}\n\
             puts {}  deletes {}  batches {}  gets {}  scans {} ({} keys)  snapshots {}\n\
             flushes {}  compactions {}  waits {}  reopens {} ({} keys verified after reopens)  \
             filter rebuilds {}\n\
             failed writes {}  rejected writes {}  read errors {}  injected faults {}  \
             unverifiable scan keys {}",
            elapsed.as_secs_f64(),
            self.args.threads,
            self.args.seed,
            self.args.keys,
            self.args.compaction.name(),
            self.args.filter_policy.name(),
            self.args.bits_per_key,
            self.args.filter_family.name(),
            match (self.args.partitioned, self.args.pin_index_filter) {
                (true, true) => ", partitioned, pinned",
                (true, false) => ", partitioned",
                (false, true) => ", pinned",
                (false, false) => "",
            },
            self.args.fault_rate,
            self.args.read_fault_rate,
            get(&c.puts),
            get(&c.deletes),
            get(&c.batches),
            get(&c.gets),
            get(&c.scans),
            get(&c.scanned_keys),
            get(&c.snapshots),
            get(&c.flushes),
            get(&c.compactions),
            get(&c.waits),
            get(&c.reopens),
            get(&c.verified_after_reopen),
            get(&c.filter_rebuilds),
            get(&c.failed_writes),
            get(&c.rejected_writes),
            get(&c.read_errors),
            self.fs.injected_faults(),
            get(&c.unverifiable),
        ) + &if self.args.auto_tune {
            format!(
                "\nauto-tune: {} decisions ({} asked for); among those the history kept at the \
                 closes, {} switches and {} merges for reads asked of the engine",
                get(&c.decisions),
                get(&c.decisions_asked),
                get(&c.switches_seen),
                get(&c.merges_seen),
            )
        } else {
            String::new()
        }
    }
}

/// Runs `strata stress`; `Err(Violation)` on a violation (the message names the seed, the
/// operation, and what was expected and read).
pub fn run(args: &StressArgs, out: &mut dyn std::io::Write) -> CliResult<()> {
    if args.threads == 0 || args.keys == 0 {
        return Err(CliError::InvalidArgument(
            "--threads and --keys must be at least 1".into(),
        ));
    }
    for (name, rate) in [
        ("--fault-rate", args.fault_rate),
        ("--read-fault-rate", args.read_fault_rate),
        ("--sync-fraction", args.sync_fraction),
    ] {
        if !(0.0..=1.0).contains(&rate) {
            return Err(CliError::InvalidArgument(format!(
                "{name} must be between 0 and 1, got {rate}"
            )));
        }
    }
    if !args.duration.is_finite() || args.duration < 0.0 {
        return Err(CliError::InvalidArgument(format!(
            "--duration must be a number of seconds >= 0, got {}",
            args.duration
        )));
    }
    let temporary;
    let dir = match &args.db {
        Some(dir) => dir.clone(),
        None => {
            temporary = tempfile_dir()?;
            temporary.path().to_path_buf()
        }
    };
    let (oracle, journal, in_flight_batches) = match &args.journal {
        Some(path) => {
            let (states, journal) = Journal::open(path, args.keys)?;
            let in_flight = journal.in_flight.clone();
            (ExpectedState::from_states(states), Some(journal), in_flight)
        }
        None => (ExpectedState::new(args.keys), None, Vec::new()),
    };
    let stress = Arc::new(Stress {
        args: args.clone(),
        dir,
        fs: FaultInjectionFileSystem::default(),
        db: RwLock::new(None),
        oracle,
        journal,
        counts: Counts::default(),
        violation: Mutex::new(None),
        stop: AtomicBool::new(false),
        needs_reopen: AtomicBool::new(true),
        error_since: Mutex::new(None),
        in_flight_batches: Mutex::new(in_flight_batches),
        last_reopen: Mutex::new(Instant::now()),
    });
    let start = Instant::now();
    // A crash-test child first checks every file of the database the last child left behind
    // (`strata::check`): after a crash, warnings (an orphan table, a torn WAL or manifest tail)
    // are expected; an error is corruption no crash may cause.
    if args.journal.is_some() && stress.dir.join("CURRENT").exists() {
        let report = strata::check(&stress.dir, &stress.options()?)?;
        if report.errors() > 0 {
            let problems: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
            return Err(CliError::Violation(format!(
                "seed {}: the database left by the crash is damaged: {}",
                args.seed,
                problems.join("; ")
            )));
        }
    }
    // The first open checks the database against the journal (a crash-test child) or an empty
    // oracle (a fresh database), and arms faults.
    stress.reopen();
    if let Some(violation) = stress.violation.lock().clone() {
        return Err(CliError::Violation(violation));
    }
    if args.journal.is_some() {
        writeln!(out, "verified {} keys after reopen", args.keys)
            .and_then(|()| out.flush())
            .map_err(|e| CliError::io("writing to stdout", e))?;
    }
    let deadline = start + Duration::from_secs_f64(args.duration);
    let threads: Vec<_> = (0..args.threads)
        .map(|thread| {
            let stress = Arc::clone(&stress);
            let seed = args
                .seed
                .wrapping_mul(1_000_003)
                .wrapping_add(thread as u64);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                while !stress.stopped() && Instant::now() < deadline {
                    stress.step(&mut rng);
                }
            })
        })
        .collect();
    for thread in threads {
        if thread.join().is_err() {
            stress.violation("a worker thread panicked".into());
        }
    }
    // A last reopen checks everything once more (and ends any error state).
    if !stress.stopped() {
        stress.needs_reopen.store(true, Ordering::SeqCst);
        stress.reopen();
    }
    let elapsed = start.elapsed();
    if let Some(db) = stress.db.write().take() {
        db.close()?;
        stress
            .counts
            .filter_rebuilds
            .fetch_add(db.stats().io.filter_rebuilds, Ordering::Relaxed);
        stress.count_decisions(&db);
    }
    writeln!(out, "{}", stress.report(elapsed))
        .map_err(|e| CliError::io("writing to stdout", e))?;
    let violation = stress.violation.lock().clone();
    match violation {
        Some(violation) => Err(CliError::Violation(violation)),
        None => {
            writeln!(out, "no violations").map_err(|e| CliError::io("writing to stdout", e))?;
            Ok(())
        }
    }
}

fn tempfile_dir() -> CliResult<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("strata-stress-")
        .tempdir()
        .map_err(|e| CliError::io("creating a temporary directory", e))
}

/// The directory of a crash-test database's journal.
pub fn journal_path(db: &Path) -> PathBuf {
    db.with_extension("journal")
}
/// Auto-tune for `--auto-tune`: decisions far more often than the defaults, a switch for any
/// gain that pays at once, priced with the device settings (the measured costs of a small
/// database under faults say little), early decisions after 500 operations.
fn often() -> AutoTuneOptions {
    AutoTuneOptions {
        every_operations: 2_000,
        every_seconds: 0.2,
        max_processor_share: 1.0,
        min_gain: 0.0,
        confirmations: 1,
        max_size_ratio: 4.0,
        measured_costs: false,
        early_decisions_after: 500,
        ..AutoTuneOptions::default()
    }
}

/// Parses `--filter-family`.
fn parse_filter_family(text: &str) -> Result<strata::FilterFamilies, String> {
    strata::FilterFamilies::parse(text).map_err(|error| error.to_string())
}
