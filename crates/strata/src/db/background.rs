//! Background work: the flush thread (immutable memtables → level-0 runs), the compaction thread
//! (policy-chosen jobs, and full manual compactions), obsolete-file deletion, and shutdown.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::policy_switch::Switch;
use super::top_index::TopLevelIndex;
use super::{DbInner, ReadView};
use crate::alloc::{FilterAllocator, JobKind};
use crate::compaction::executor::{
    check_recency_order, finish_outputs, inputs_exist, run_compaction, trivial_move,
    ExecutorContext, ModuleBits, PendingTable,
};
use crate::compaction::{CompactionContext, CompactionJob, JobAction, RunningCompactions};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::user_key;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::policy::{CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings};
use crate::stats::merlin::Merlin;
use crate::stats::{add, IoCounters};
use crate::table::iter::TableIter;
use crate::table::reader::ReadMode;
use crate::table::{table_file_name, TableBuilder};
use crate::version::set::VersionSet;
use crate::version::{AddedFile, Run, Version, VersionEdit};

const IDLE_WAIT: Duration = Duration::from_millis(100);

/// A flushed memtable's table file, its filter not yet built.
pub(crate) struct Level0Write {
    pub(crate) pending: PendingTable,
    /// The level-0 run the file will form.
    pub(crate) run_id: u64,
    /// Versions left out: hidden by a newer version of their key that every live snapshot sees.
    pub(crate) hidden_entries: u64,
}

/// Writes a memtable's entries into a new table file whose filter is not yet built; `None` if the
/// memtable is empty. Versions no reader can see any more are left out: with `smallest_snapshot`
/// the oldest sequence number a live snapshot reads at, the rule compaction uses
/// (`MemTable::for_each_visible_entry`).
#[allow(clippy::too_many_arguments)] // The flush's inputs: the engine's parts a flush reads.
pub(crate) fn write_level0_entries(
    dir: &Path,
    fs: &dyn FileSystem,
    versions: &VersionSet,
    options: &Options,
    filter_module_bits: f64,
    merlin: Option<&Arc<Merlin>>,
    mem: &Arc<MemTable>,
    smallest_snapshot: u64,
) -> Result<Option<Level0Write>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let number = versions.new_file_number();
    let run_id = versions.new_run_id();
    let path = dir.join(table_file_name(number));
    let mut builder = TableBuilder::new(
        path.clone(),
        fs.create_writable(&path)?,
        options.block_bytes,
        options.block_restart_interval,
    );
    builder.set_index_restart_interval(options.index_block_restart_interval);
    // Filters above the budget are split into modules of the budget's size (DESIGN.md §1).
    builder.set_filter_module_bits(filter_module_bits);
    builder.set_metadata_partitioning(options.metadata_partitioning());
    builder.set_filter_families(options.filter_family, true);
    builder.set_range_filter_bits(options.range_filter_bits);
    // A flush is never bottommost (RocksDB's `GetCompressionFlush`): level 0's choice.
    builder.set_compression(options.compression.for_output(0, false));
    let hidden_entries =
        mem.for_each_visible_entry(smallest_snapshot, |key, value| builder.add(key, value))?;
    // Merlin's flush hand-over (DESIGN.md §4): the memtable's probes, scaled to the whole horizon.
    let inherited = merlin.map(|merlin| mem.access.hand_over(merlin.lookups(), merlin.recorded()));
    Ok(Some(Level0Write {
        pending: PendingTable {
            number,
            builder,
            inherited,
        },
        run_id,
        hidden_entries,
    }))
}

/// Builds the filter of a flushed file against `tree` (the version it joins) and finishes it.
pub(crate) fn finish_level0_table(
    allocator: &dyn FilterAllocator,
    merlin: Option<&Arc<Merlin>>,
    counters: &IoCounters,
    tree: &Version,
    pending: PendingTable,
    run_id: u64,
) -> Result<AddedFile> {
    let (mut files, written, compression) = finish_outputs(
        allocator,
        merlin,
        tree,
        JobKind::Flush,
        &[],
        0,
        run_id,
        vec![pending],
    )?;
    add(&counters.flush_write_bytes, written);
    counters.count_compression(0, &compression);
    files
        .pop()
        .ok_or_else(|| Error::InvalidArgument("a flush produced no file".into()))
}

/// Bytes of `job`'s input files in `version` (the tree the job was picked from).
fn input_file_bytes(job: &CompactionJob, version: &Version) -> u64 {
    job.inputs
        .iter()
        .flat_map(|input| input.file_numbers.iter())
        .filter_map(|&number| {
            version
                .files()
                .find(|(_, _, file)| file.number() == number)
                .map(|(_, _, file)| file.file_bytes())
        })
        .sum()
}

/// The bytes of `job`'s input files on each level they come from, as the info log prints them
/// (`level 2: 2097152 bytes, level 3: 6291456 bytes`): with the bytes written, what a merge
/// read from the level it empties and from the level it rewrites (RocksDB's `Rn` and `Rnp1`).
fn input_bytes_by_level(job: &CompactionJob, version: &Version) -> String {
    let mut by_level: std::collections::BTreeMap<usize, u64> = std::collections::BTreeMap::new();
    for input in &job.inputs {
        let bytes: u64 = version
            .files()
            .filter(|(level, _, file)| {
                *level == input.level && input.file_numbers.contains(&file.number())
            })
            .map(|(_, _, file)| file.file_bytes())
            .sum();
        *by_level.entry(input.level).or_default() += bytes;
    }
    by_level
        .iter()
        .map(|(level, bytes)| format!("level {level}: {bytes} bytes"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn spawn_threads(inner: &Arc<DbInner>) -> Result<()> {
    let mut threads = inner.threads.lock();
    let workers = inner.options.max_background_compactions.max(1);
    inner.background.lock().compaction_workers = workers;
    let bodies = std::iter::once(BackgroundThread::Flush)
        .chain((0..workers).map(BackgroundThread::Compaction))
        .chain(inner.options.auto_tune.map(|_| BackgroundThread::AutoTune));
    for thread in bodies {
        let shared = Arc::clone(inner);
        let handle = crate::sync::thread::Builder::new()
            .name(thread.name())
            .spawn(move || {
                let _exit = ThreadExit {
                    inner: &shared,
                    thread,
                };
                match thread {
                    BackgroundThread::Flush => flush_loop(&shared),
                    BackgroundThread::Compaction(worker) => compaction_loop(&shared, worker),
                    BackgroundThread::AutoTune => {
                        if let Some(options) = shared.options.auto_tune {
                            super::auto_tune::auto_tune_loop(&shared, options);
                        }
                    }
                }
            });
        match handle {
            Ok(handle) => threads.push(handle),
            Err(error) => {
                // Workers that never started never exit: count them out, so the last one that
                // did start still answers the tickets when it goes.
                let unstarted = match thread {
                    BackgroundThread::Flush => workers,
                    BackgroundThread::Compaction(n) => workers - n,
                    BackgroundThread::AutoTune => 0,
                };
                let mut background = inner.background.lock();
                background.compaction_workers -= unstarted;
                if background.compaction_workers == 0 {
                    background.manual_compactions.close(Error::Closed);
                }
                return Err(Error::io("starting a background thread", error));
            }
        }
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum BackgroundThread {
    Flush,
    /// Compaction worker `n` (`Options::max_background_compactions` of them).
    Compaction(usize),
    /// Auto-tune's decisions (`auto_tune.rs`), when `Options::auto_tune` is set.
    AutoTune,
}

impl BackgroundThread {
    fn name(self) -> String {
        match self {
            BackgroundThread::Flush => "strata-flush".into(),
            BackgroundThread::Compaction(n) => format!("strata-compaction-{n}"),
            BackgroundThread::AutoTune => "strata-auto-tune".into(),
        }
    }
}

/// Runs when a background thread ends, normally or by a panic (in a user-supplied policy or
/// allocator, or a bug): a panic becomes the background error, so writers and `flush` callers
/// stop waiting; the compaction tickets are answered — by the last worker to go, or at once when a
/// worker panicked (every later compaction would fail with the background error anyway) — so no
/// `compact` caller waits for workers that are gone; and every waiter is woken.
struct ThreadExit<'a> {
    inner: &'a DbInner,
    thread: BackgroundThread,
}

impl Drop for ThreadExit<'_> {
    fn drop(&mut self) {
        let panicked = crate::sync::thread::panicking();
        if panicked {
            self.inner.set_background_error(&Error::Background(format!(
                "the {} thread panicked",
                self.thread.name()
            )));
        }
        let mut background = self.inner.background.lock();
        match self.thread {
            BackgroundThread::Compaction(worker) => {
                if background.full_compaction_worker == Some(worker) {
                    background.full_compaction_worker = None;
                }
                background.compaction_workers = background.compaction_workers.saturating_sub(1);
                if panicked || background.compaction_workers == 0 {
                    let answer = self.inner.background_error().unwrap_or(Error::Closed);
                    background.manual_compactions.close(answer);
                }
            }
            BackgroundThread::Flush => background.flush_in_progress = false,
            BackgroundThread::AutoTune => {}
        }
        self.inner.work_available.notify_all();
        self.inner.work_done.notify_all();
    }
}

fn flush_loop(inner: &DbInner) {
    loop {
        {
            let mut background = inner.background.lock();
            loop {
                if background.shutting_down {
                    return;
                }
                if inner.background_error().is_none() && !inner.view.load().immutable.is_empty() {
                    break;
                }
                inner.work_available.wait_for(&mut background, IDLE_WAIT);
            }
            background.flush_in_progress = true;
        }
        let result = inner.flush_oldest_immutable();
        if let Err(error) = &result {
            inner.set_background_error(error);
        }
        let mut background = inner.background.lock();
        background.flush_in_progress = false;
        background.compaction_requested = true;
        inner.work_available.notify_all();
        inner.work_done.notify_all();
    }
}

/// Why a compaction job runs: counted as a compaction (the policy's, or a full compaction for
/// `Db::compact`), or as a filter rebuild (`filter_rebuild.rs`: one output however large, its
/// bytes in the rebuild counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobPurpose {
    Compaction,
    FullCompaction,
    FilterRebuild,
}

/// What a compaction worker wakes up to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CompactionTask {
    /// A full compaction for the queued `Db::compact` tickets (runs alone).
    Full,
    /// Jobs the policy picks, until it picks none.
    Policy,
}

fn compaction_loop(inner: &DbInner, worker: usize) {
    loop {
        let task = {
            let mut background = inner.background.lock();
            loop {
                if background.shutting_down {
                    // Queued tickets are answered `Closed` by the last `ThreadExit`.
                    return;
                }
                let failed = inner.background_error().is_some();
                match next_compaction_task(&background, failed, || {
                    inner.filter_rebuild_due(Instant::now())
                }) {
                    Some(CompactionTask::Full) => {
                        background.full_compaction_worker = Some(worker);
                        // One full compaction serves every ticket queued before it starts.
                        background.manual_compactions.start();
                        break CompactionTask::Full;
                    }
                    Some(CompactionTask::Policy) => {
                        background.compaction_requested = false;
                        break CompactionTask::Policy;
                    }
                    None => {}
                }
                inner.work_available.wait_for(&mut background, IDLE_WAIT);
            }
        };
        let result = match task {
            CompactionTask::Full => inner.run_full_compaction(),
            CompactionTask::Policy => inner.run_policy_compactions(),
        };
        if let Err(error) = &result {
            // A failed job may have left the manifest or the tree half-written: the same sticky
            // error whether the policy or a caller asked for it.
            if !matches!(error, Error::Closed) {
                inner.set_background_error(error);
            }
        }
        let mut background = inner.background.lock();
        if let CompactionTask::Full = task {
            background.full_compaction_worker = None;
            background.manual_compactions.finish(&result);
        }
        inner.work_available.notify_all();
        inner.work_done.notify_all();
    }
}

/// The work a compaction worker may start now, or `None` to wait. `failed` says the engine is
/// in its sticky error state: then only a queued full compaction starts, so that its tickets are
/// answered (with the error) and `Db::compact` returns. A policy job or a priced filter rebuild
/// would fail at once, and each failure wakes the other workers, which would fail in turn: the
/// workers would spin on the processors for as long as the database stays open.
fn next_compaction_task(
    background: &super::BackgroundState,
    failed: bool,
    rebuild_due: impl FnOnce() -> bool,
) -> Option<CompactionTask> {
    // `Db::rewrite_filters` pauses compactions (`db::study`).
    if background.compaction_pauses > 0 {
        return None;
    }
    if background.manual_compactions.pending() {
        // A full compaction waits for the running jobs and then runs alone.
        return background
            .compactions_idle()
            .then_some(CompactionTask::Full);
    }
    // A request made during a full compaction waits for it to end.
    (!failed
        && background.full_compaction_worker.is_none()
        && (background.compaction_requested || rebuild_due()))
    .then_some(CompactionTask::Policy)
}

/// A policy job registered in `BackgroundState::running`; dropping it (the job finished, failed
/// or its worker panicked) removes it and wakes the other workers and every waiter.
struct RunningJob<'a> {
    inner: &'a DbInner,
    job: CompactionJob,
}

impl Drop for RunningJob<'_> {
    fn drop(&mut self) {
        let mut background = self.inner.background.lock();
        background.running.remove(&self.job);
        // The job's end may let a job that conflicted with it start.
        background.compaction_requested = true;
        self.inner.work_available.notify_all();
        self.inner.work_done.notify_all();
    }
}

/// The moving averages behind [`crate::compaction::MeasuredRates`]: each new sample weighs
/// [`RateTracker::WEIGHT`], so the figure follows a change of write rate within a few flushes
/// and one odd interval does not swing it.
#[derive(Debug, Default)]
pub(crate) struct RateTracker {
    last_flush: Option<Instant>,
    flush_bytes_per_sec: Option<f64>,
    compaction_bytes_per_sec: Option<f64>,
    flush_bytes: Option<f64>,
}

impl RateTracker {
    const WEIGHT: f64 = 0.25;

    fn blend(average: Option<f64>, sample: f64) -> Option<f64> {
        if !sample.is_finite() || sample <= 0.0 {
            return average;
        }
        Some(average.map_or(sample, |a| a + Self::WEIGHT * (sample - a)))
    }

    /// A flush of `bytes` finished at `now`: the interval since the previous flush is a sample.
    pub(crate) fn flushed(&mut self, bytes: u64, now: Instant) {
        self.flush_bytes = Self::blend(self.flush_bytes, bytes as f64);
        if let Some(last) = self.last_flush {
            let seconds = now.duration_since(last).as_secs_f64();
            if seconds > 0.0 {
                self.flush_bytes_per_sec =
                    Self::blend(self.flush_bytes_per_sec, bytes as f64 / seconds);
            }
        }
        self.last_flush = Some(now);
    }

    /// A compaction job wrote `bytes` in `elapsed`.
    pub(crate) fn compacted(&mut self, bytes: u64, elapsed: std::time::Duration) {
        let seconds = elapsed.as_secs_f64();
        if bytes > 0 && seconds > 0.0 {
            self.compaction_bytes_per_sec =
                Self::blend(self.compaction_bytes_per_sec, bytes as f64 / seconds);
        }
    }

    /// The flush rate as of `now`: the moving average, or less once the time since the last
    /// flush is longer than a flush at that rate takes (writes slowed or stopped), and `None`
    /// before two flushes.
    pub(crate) fn recent_flush_bytes_per_sec(&self, now: Instant) -> Option<f64> {
        let average = self.flush_bytes_per_sec?;
        let (Some(last), Some(bytes)) = (self.last_flush, self.flush_bytes) else {
            return Some(average);
        };
        let since = now.saturating_duration_since(last).as_secs_f64();
        if since > 0.0 {
            Some(average.min(bytes / since))
        } else {
            Some(average)
        }
    }

    pub(crate) fn rates(&self) -> crate::compaction::MeasuredRates {
        crate::compaction::MeasuredRates {
            flush_bytes_per_sec: self.flush_bytes_per_sec,
            compaction_bytes_per_sec: self.compaction_bytes_per_sec,
            flush_bytes: self.flush_bytes,
        }
    }
}

impl DbInner {
    pub(super) fn compaction_context(&self) -> CompactionContext {
        CompactionContext {
            write_buffer_bytes: self.options.write_buffer_bytes as u64,
            level0_compaction_trigger: self.options.level0_compaction_trigger,
            level0_slowdown_writes_trigger: self.options.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: self.options.level0_stop_writes_trigger,
            rates: crate::compaction::MeasuredRates::UNKNOWN,
            workload: None,
            range_filters: self.options.range_filter_bits > 0,
            target_file_bytes: self.options.target_file_bytes,
        }
    }

    /// [`DbInner::compaction_context`] with the measured rates, for picking a job. Only picks
    /// read the rates: the write path asks for write pressure on every group and takes no lock
    /// for them.
    pub(super) fn picking_context(&self) -> CompactionContext {
        CompactionContext {
            rates: self.rates.lock().rates(),
            workload: Some(self.workload_mix()),
            ..self.compaction_context()
        }
    }

    /// Puts the version set's current version into the read view.
    pub(super) fn install_current_version(&self, flushed: Option<&Arc<MemTable>>) {
        let view_guard = self.view_lock.lock();
        let view = self.view.load_full();
        let immutable = view
            .immutable
            .iter()
            .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
            .cloned()
            .collect();
        let version = self.versions.current();
        let top_index = self.top_index_for(
            view.top_index.as_ref(),
            &version,
            flushed.map(|mem| mem.as_ref()),
        );
        self.view.store(Arc::new(ReadView {
            mem: Arc::clone(&view.mem),
            immutable,
            version: Arc::clone(&version),
            filter_allocator: Arc::clone(&view.filter_allocator),
            top_index,
        }));
        // The sweep below takes table slots' locks; the view lock is not needed for it.
        drop(view_guard);
        self.release_unused_pinned_filters(&version, view.filter_allocator.as_ref());
    }

    /// Lets every open pinned reader of `version` go of the filter blocks `allocator` no longer
    /// has in use (`TableCache::trim_pinned_filters`): after a flush, a compaction, a refresh or
    /// a switch moved the allocation, the pinned filter memory follows the modules in use, in
    /// files no lookup reaches too, so it stays within the budget (DESIGN.md §3.5's hard cap). One
    /// pass over the files, no I/O (a reader whose choice did not move costs one load); nothing
    /// to do when no metadata is pinned.
    pub(super) fn release_unused_pinned_filters(
        &self,
        version: &Version,
        allocator: &dyn FilterAllocator,
    ) {
        if !self.options.pin_filter_and_index_blocks && !self.options.pin_l0_filter_and_index_blocks
        {
            return;
        }
        for (_, run, file) in version.files() {
            self.tables
                .trim_pinned_filters(file, allocator.filter_modules_in_use(run, file));
        }
    }

    /// The top-level index for `version` if the compaction policy keeps one (`top_index.rs`):
    /// `previous` as it is if it still matches, else made from it and `flushed` (the memtable
    /// just flushed) or from level 0's files. An index that cannot be built (a read error) is
    /// logged and left out: lookups then probe every level-0 run, as without one.
    pub(super) fn top_index_for(
        &self,
        previous: Option<&Arc<TopLevelIndex>>,
        version: &Version,
        flushed: Option<&MemTable>,
    ) -> Option<Arc<TopLevelIndex>> {
        if !self.compaction_policy().indexes_top_level() {
            return None;
        }
        if let Some(previous) = previous.filter(|index| index.covers(version)) {
            return Some(Arc::clone(previous));
        }
        let built =
            TopLevelIndex::for_version(previous.map(Arc::as_ref), version, flushed, |run| {
                self.run_user_keys(run)
            });
        match built {
            Ok(index) => Some(Arc::new(index)),
            Err(error) => {
                self.info_log.log(format!(
                    "top-level index not built ({error}): lookups probe every level-0 run"
                ));
                None
            }
        }
    }

    /// Every user key of `run`, in order, read from its files (uncached, as a compaction reads).
    fn run_user_keys(&self, run: &Run) -> Result<Vec<Vec<u8>>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for file in run.files() {
            let table = self.tables.reader(file, false)?;
            let mut iter = TableIter::new(table, ReadMode::Compaction);
            iter.seek_to_first();
            while iter.valid() {
                let key = user_key(iter.key());
                if keys.last().is_none_or(|last| last.as_slice() != key) {
                    keys.push(key.to_vec());
                }
                iter.next();
            }
            iter.status()?;
        }
        Ok(keys)
    }

    pub(crate) fn flush_oldest_immutable(&self) -> Result<()> {
        let view = self.view.load_full();
        let Some(mem) = view.immutable.last().cloned() else {
            return Ok(());
        };
        // The WAL of the next-older... next-newer memtable is the oldest one still needed.
        let next_log = view
            .immutable
            .iter()
            .rev()
            .nth(1)
            .unwrap_or(&view.mem)
            .wal_number();
        let start = Instant::now();
        // One allocator for the whole flush: the module size its filter is built with and the
        // allocation that sizes it must agree (a policy switch takes effect at the next job).
        let allocator = self.filter_allocator();
        let written = write_level0_entries(
            &self.dir,
            self.fs.as_ref(),
            &self.versions,
            &self.options,
            allocator.filter_module_bits_per_key(0),
            self.merlin.as_ref(),
            &mem,
            self.smallest_snapshot(),
        )?;
        let hidden_entries = written.as_ref().map_or(0, |write| write.hidden_entries);
        // From the allocation to the install, no other job may change the tree (`crate::alloc`).
        let _install = self.install_lock.lock();
        let file = match written {
            Some(write) => Some(finish_level0_table(
                allocator.as_ref(),
                self.merlin.as_ref(),
                &self.counters,
                &self.versions.current(),
                write.pending,
                write.run_id,
            )?),
            None => None,
        };
        let mut edit = VersionEdit {
            log_number: Some(next_log),
            ..Default::default()
        };
        let description = match file.as_ref().map(|added| &added.file) {
            Some(file) => format!(
                "flushed {} entries ({} hidden versions left out) to {} ({} bytes, {:.2} \
                 bits/key) in {:.1} ms",
                file.entries,
                hidden_entries,
                table_file_name(file.number),
                file.file_bytes,
                file.bits_per_key,
                start.elapsed().as_secs_f64() * 1e3
            ),
            None => "flushed an empty memtable".to_string(),
        };
        let flushed_bytes = file.as_ref().map(|added| added.file.file_bytes);
        edit.new_files.extend(file);
        edit.policy_states.push(self.workload_state());
        edit.policy_states.extend(allocator.policy_state());
        self.versions.log_and_apply(edit)?;
        self.install_current_version(Some(&mem));
        drop(_install);
        add(&self.counters.flushes, 1);
        add(&self.counters.flush_hidden_entries, hidden_entries);
        if let Some(bytes) = flushed_bytes {
            self.rates.lock().flushed(bytes, Instant::now());
        }
        self.save_access_statistics(false);
        self.info_log.log(description);
        self.delete_obsolete_files();
        Ok(())
    }

    /// What the compaction executor needs from this engine; outputs are cut at
    /// `target_file_bytes`.
    pub(super) fn executor_context<'a>(
        &'a self,
        observer: &'a dyn crate::stats::AccessObserver,
        target_file_bytes: u64,
    ) -> ExecutorContext<'a> {
        ExecutorContext {
            dir: self.dir.clone(),
            fs: self.fs.as_ref(),
            tables: &self.tables,
            versions: &self.versions,
            observer,
            merlin: self.merlin.as_ref(),
            block_bytes: self.options.block_bytes,
            restart_interval: self.options.block_restart_interval,
            index_restart_interval: self.options.index_block_restart_interval,
            target_file_bytes,
            readahead_bytes: self.options.compaction_readahead_bytes,
            // Filters above the module size are split into modules (DESIGN.md §1), of the size the
            // allocator gives the output level.
            filter_module_bits: ModuleBits::of(self.filter_allocator().as_ref()),
            metadata_partitioning: self.options.metadata_partitioning(),
            filter_family: self.options.filter_family,
            range_filter_bits: self.options.range_filter_bits,
            range_filter_last_level: self.options.range_filter_last_level,
            compression: &self.options.compression,
        }
    }

    fn run_job_for(&self, job: &CompactionJob, purpose: JobPurpose) -> Result<()> {
        let version = self.versions.current();
        let start = Instant::now();
        let processor_start = crate::stats::thread_processor_nanos();
        let observer = self.observer.clone();
        let noop = crate::stats::NoopObserver;
        let target_file_bytes = match purpose {
            JobPurpose::Compaction | JobPurpose::FullCompaction => self.options.target_file_bytes,
            // One output, however large the file (a flushed file may exceed the target size).
            JobPurpose::FilterRebuild => u64::MAX,
        };
        let context =
            self.executor_context(observer.as_deref().unwrap_or(&noop), target_file_bytes);
        check_recency_order(job, &version)?;
        let (edit, moved, written, _install) = match self.move_edit(job, &version) {
            Some(edit) => (edit, true, 0, self.install_lock.lock()),
            None => {
                let mut pending =
                    run_compaction(&context, job, &version, self.smallest_snapshot())?;
                // From the allocation to the install, no other job may change the tree.
                let install = self.install_lock.lock();
                let allocator = self.filter_allocator();
                let (new_files, written, compression) = finish_outputs(
                    allocator.as_ref(),
                    self.merlin.as_ref(),
                    &self.versions.current(),
                    JobKind::Compaction,
                    &pending.inputs,
                    pending.output_level,
                    pending.output_run_id,
                    std::mem::take(&mut pending.outputs),
                )?;
                if purpose != JobPurpose::FilterRebuild {
                    self.counters.count_compaction_write(
                        purpose == JobPurpose::FullCompaction,
                        pending.output_level,
                        written,
                    );
                }
                self.counters
                    .count_compression(pending.output_level, &compression);
                let mut edit = pending.edit(new_files);
                edit.policy_states.extend(allocator.policy_state());
                (edit, false, written, install)
            }
        };
        let mut edit = edit;
        edit.policy_states.extend(job.state.iter().cloned());
        let outputs = edit.new_files.len();
        self.versions.log_and_apply(edit)?;
        self.install_current_version(None);
        drop(_install);
        self.save_access_statistics(false);
        let micros = start.elapsed().as_micros() as u64;
        match purpose {
            JobPurpose::Compaction | JobPurpose::FullCompaction => {
                if moved {
                    self.counters.count_trivial_move(
                        job.input_file_count() as u64,
                        input_file_bytes(job, &version),
                    );
                } else {
                    self.rates.lock().compacted(written, start.elapsed());
                }
                add(&self.counters.compactions, 1);
                add(&self.counters.compaction_micros, micros);
                if let (Some(started), Some(ended)) =
                    (processor_start, crate::stats::thread_processor_nanos())
                {
                    add(
                        &self.counters.compaction_processor_micros,
                        ended.saturating_sub(started) / 1_000,
                    );
                }
            }
            JobPurpose::FilterRebuild => {
                self.filter_rebuilt(input_file_bytes(job, &version), written);
            }
        }
        self.info_log.log(format!(
            "{} {} files ({}) into {outputs} files ({written} bytes) on level {} in {:.1} ms: {}",
            match (moved, purpose) {
                (true, _) => "moved",
                (false, JobPurpose::Compaction | JobPurpose::FullCompaction) => "compacted",
                (false, JobPurpose::FilterRebuild) => "rewrote",
            },
            job.input_file_count(),
            input_bytes_by_level(job, &version),
            job.output_level,
            micros as f64 / 1e3,
            job.reason
        ));
        drop(version);
        self.delete_obsolete_files();
        Ok(())
    }

    /// The edit that carries out a [`JobAction::Move`] job, or `None` for a job to merge. A move
    /// the executor refuses (the policy misjudged the shape) is logged and merged instead, the
    /// way every job of another shape is carried out.
    fn move_edit(&self, job: &CompactionJob, version: &Version) -> Option<VersionEdit> {
        if job.action != JobAction::Move {
            return None;
        }
        match trivial_move(job, version, &self.versions) {
            Ok(edit) => Some(edit),
            Err(refused) => {
                self.info_log.log(format!("{refused}; merged instead"));
                None
            }
        }
    }

    /// Runs jobs the policy picks until it picks none (or only jobs that conflict with those in
    /// flight), a pause or a manual compaction is asked for, or the database closes. Several
    /// workers run this at once; each registers its job before the next one picks.
    fn run_policy_compactions(&self) -> Result<()> {
        loop {
            let pick = self.pick_lock.lock();
            let running = {
                let background = self.background.lock();
                if !background.policy_jobs_may_start() {
                    return Ok(());
                }
                background.running.clone()
            };
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            let version = self.versions.current();
            let picked = self
                .compaction_policy()
                .pick(&version, &self.picking_context(), &running);
            // With no policy job to run, a priced filter rebuild may use the worker
            // (`filter_rebuild.rs`).
            let (job, purpose) = match picked {
                Some(job) => (job, JobPurpose::Compaction),
                None => match self.pick_filter_rebuild(&version, &running) {
                    Some((job, _price)) => (job, JobPurpose::FilterRebuild),
                    None => return Ok(()),
                },
            };
            drop(version);
            if job.is_state_only() {
                // Logged while the pick lock is held: no worker picks against the old state.
                self.apply_policy_state(&job)?;
                continue;
            }
            {
                let mut background = self.background.lock();
                if !background.policy_jobs_may_start() {
                    return Ok(());
                }
                if let Some(conflict) = background.running.conflict(&job) {
                    // The policy was shown every job in flight (only this lock's holder adds
                    // one): it broke the rule. Postpone the job rather than risk the tree.
                    drop(background);
                    self.info_log.log(format!(
                        "postponed a compaction ({}): {conflict}",
                        job.reason
                    ));
                    return Ok(());
                }
                // A full compaction or a filter rewrite waits for the registered jobs, not for
                // a worker between its pick and this registration: one may have started and
                // finished in between and removed the job's inputs. Pick again on the tree as
                // it is (once registered, the job's inputs are safe: neither starts while a job
                // is registered).
                if !inputs_exist(&job, &self.versions.current()) {
                    drop(background);
                    self.info_log.log(format!(
                        "picked again: the inputs of a compaction ({}) left the tree before it \
                         started",
                        job.reason
                    ));
                    continue;
                }
                background.running.push(job.clone());
                // Another worker may find a job that does not conflict with this one.
                background.compaction_requested = true;
                self.work_available.notify_all();
            }
            drop(pick);
            let running = RunningJob { inner: self, job };
            self.run_job_for(&running.job, purpose)?;
            // Writers waiting out a level-0 stall go on after every job (`RunningJob::drop`).
            drop(running);
        }
    }

    /// Logs a state-only decision of the policy (see `CompactionJob::state_only`) in the
    /// manifest and installs the version that carries it.
    fn apply_policy_state(&self, job: &CompactionJob) -> Result<()> {
        let _install = self.install_lock.lock();
        let edit = VersionEdit {
            policy_states: job.state.iter().cloned().collect(),
            ..Default::default()
        };
        self.versions.log_and_apply(edit)?;
        self.install_current_version(None);
        self.info_log
            .log(format!("compaction policy state changed: {}", job.reason));
        Ok(())
    }

    /// `Db::set_compaction_policy`: logs the switch, then swaps the policy (module docs of
    /// `compaction_switch`).
    pub(crate) fn set_compaction_policy(
        &self,
        kind: CompactionKind,
        settings: &CompactionSettings,
    ) -> Result<()> {
        self.check_changeable()?;
        let policy = kind.build(settings)?;
        let state = Switch::<CompactionKind> {
            configured: self.options.compaction_policy.name(),
            kind,
            settings: settings.clone(),
        }
        .to_state()?;
        // No worker is between a pick and its registration while the policy changes, so every
        // registered job was picked by the policy in effect when it was registered.
        let _pick = self.pick_lock.lock();
        let previous = {
            let _install = self.install_lock.lock();
            let edit = VersionEdit {
                policy_states: vec![state],
                ..Default::default()
            };
            self.versions.log_and_apply(edit)?;
            let previous = self.compaction_policy.swap(Arc::new(Arc::clone(&policy)));
            // The view gains (or drops) the top-level index the new policy keeps.
            self.install_current_version(None);
            previous
        };
        self.info_log.log(format!(
            "compaction policy switched from {} to {}",
            previous.name(),
            policy.name()
        ));
        let mut background = self.background.lock();
        background.compaction_requested = true;
        self.work_available.notify_all();
        // Writers waiting out a stall re-ask the new policy's write pressure.
        self.work_done.notify_all();
        Ok(())
    }

    /// `Db::set_filter_allocator`: logs the switch and installs a read view with the new
    /// allocator (module docs of `policy_switch`).
    pub(crate) fn set_filter_allocator(
        &self,
        kind: FilterAllocatorKind,
        settings: &FilterSettings,
    ) -> Result<()> {
        self.check_changeable()?;
        if kind.needs_access_statistics() && self.merlin.is_none() {
            return Err(Error::InvalidArgument(format!(
                "filter allocator {kind} needs per-file access statistics, which this database \
                 does not keep: open it with Options::access_statistics"
            )));
        }
        let allocator = kind.build(settings)?;
        let state = Switch::<FilterAllocatorKind> {
            configured: self.options.filter_allocator.name(),
            kind,
            settings: *settings,
        }
        .to_state()?;
        // Every flush and compaction allocates and installs under this lock: none sizes its
        // filters with one allocator and installs after the switch to the other.
        let _install = self.install_lock.lock();
        let edit = VersionEdit {
            policy_states: vec![state],
            ..Default::default()
        };
        self.versions.log_and_apply(edit)?;
        let version = self.versions.current();
        // Which filters lookups skip is the new allocator's call from the first lookup on.
        allocator.restore(&version);
        let previous = {
            let _view = self.view_lock.lock();
            let view = self.view.load_full();
            let top_index = self.top_index_for(view.top_index.as_ref(), &version, None);
            self.view.store(Arc::new(ReadView {
                mem: Arc::clone(&view.mem),
                immutable: view.immutable.clone(),
                version: Arc::clone(&version),
                filter_allocator: Arc::clone(&allocator),
                top_index,
            }));
            Arc::clone(&view.filter_allocator)
        };
        self.release_unused_pinned_filters(&version, allocator.as_ref());
        self.info_log.log(format!(
            "filter allocator switched from {} to {}",
            previous.name(),
            allocator.name()
        ));
        Ok(())
    }

    fn run_full_compaction(&self) -> Result<()> {
        if let Some(error) = self.background_error() {
            return Err(error);
        }
        let version = self.versions.current();
        let job = self
            .compaction_policy()
            .full_compaction(&version, &self.compaction_context());
        drop(version);
        match job {
            Some(job) => self.run_job_for(&job, JobPurpose::FullCompaction),
            None => Ok(()),
        }
    }

    /// Runs a full compaction on the compaction thread and waits for it: one that starts after
    /// this call (it covers everything flushed before the call). Any number of threads may call
    /// it at once; each gets the result of the compaction that served its ticket, or
    /// `Error::Closed` if the database closed first.
    pub(crate) fn compact_all(&self) -> Result<()> {
        // A read-only database has no compaction thread to answer the ticket.
        self.check_writable()?;
        let mut background = self.background.lock();
        if background.shutting_down {
            return Err(self.background_error().unwrap_or(Error::Closed));
        }
        let ticket = background.manual_compactions.issue()?;
        self.work_available.notify_all();
        loop {
            if let Some(result) = background.manual_compactions.take(ticket) {
                return result;
            }
            // The timed wait only bounds the cost of a missed wake-up: the ticket is always
            // answered, by the compaction thread or by its exit (`ThreadExit`).
            self.work_done.wait_for(&mut background, IDLE_WAIT);
        }
    }

    /// Waits until the policy picks no job and no flush or compaction is running or queued. On a
    /// read-only database nothing ever compacts: `Ok` if the policy has nothing to do, otherwise
    /// [`Error::ReadOnly`] rather than a wait that would never end.
    pub(crate) fn wait_for_compactions(&self) -> Result<()> {
        if self.read_only {
            self.check_open()?;
            let work = self.compaction_policy().pick(
                &self.versions.current(),
                &self.picking_context(),
                &RunningCompactions::none(),
            );
            return match work {
                Some(_) => Err(Error::ReadOnly),
                None => Ok(()),
            };
        }
        loop {
            self.check_open()?;
            let mut background = self.background.lock();
            // Checked under the background lock, which `set_background_error` notifies under:
            // checked before it, the error could be set and notified between the check and the
            // wait, and the wait would last until its timeout.
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            let compactions_idle = background.compactions_idle();
            let flushing = background.flush_in_progress || !self.view.load().immutable.is_empty();
            let policy_has_work = self
                .compaction_policy()
                .pick(
                    &self.versions.current(),
                    &self.picking_context(),
                    &RunningCompactions::none(),
                )
                .is_some();
            if compactions_idle && !background.compaction_requested && !flushing && !policy_has_work
            {
                return Ok(());
            }
            // Ask the workers for the policy's job only when none runs and none is asked for: a
            // flush's end and a job's end ask anyway, and a request while a flush or a job is
            // what this waits for would find nothing to do, wake this waiter, and be made
            // again — the two would spin for as long as the flush ran (found by the schedule
            // explorer, `tests/schedules.rs`).
            if compactions_idle && policy_has_work && !background.compaction_requested {
                background.compaction_requested = true;
                self.work_available.notify_all();
            }
            self.work_done.wait_for(&mut background, IDLE_WAIT);
        }
    }

    /// Deletes table files no version refers to any more, and WALs older than the log number.
    ///
    /// Nothing is deleted once a manifest write has failed (`VersionSet::manifest_in_doubt`): the
    /// next open removes whatever the manifest it reads does not name.
    pub(crate) fn delete_obsolete_files(&self) {
        // A read-only session's files are another session's to delete (or this database's next
        // writable open's).
        if self.read_only || self.versions.manifest_in_doubt() {
            return;
        }
        let candidates = self.versions.obsolete_files().take();
        let version = self.versions.current();
        let live: HashSet<u64> = version.files().map(|(_, _, f)| f.number()).collect();
        for number in candidates {
            if live.contains(&number) {
                continue;
            }
            if let Err(error) = self.fs.remove_file(&self.dir.join(table_file_name(number))) {
                self.info_log
                    .log(format!("could not delete obsolete table {number}: {error}"));
            }
        }
        let log_number = self.versions.log_number();
        if let Ok(names) = self.fs.list_dir(&self.dir) {
            for name in names {
                if let Some(number) = name
                    .strip_suffix(".log")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    if number < log_number {
                        let _ = self.fs.remove_file(&self.dir.join(&name));
                    }
                }
            }
        }
    }

    /// Stops the background threads, syncs the WAL and releases the lock.
    ///
    /// Several threads may call it at once: the first closes, the others wait for it to finish
    /// and return `Ok`.
    pub(crate) fn close(&self) -> Result<()> {
        let _closing = self.close_lock.lock();
        if self.closed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Ok(());
        }
        {
            let mut background = self.background.lock();
            background.shutting_down = true;
            self.work_available.notify_all();
            self.work_done.notify_all();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for thread in threads {
            let _ = thread.join();
        }
        let result = {
            let mut commit = self.commit.lock();
            let result = match commit.wal.as_mut() {
                Some(wal) if self.background_error().is_none() => wal.sync(),
                _ => Ok(()),
            };
            commit.wal = None;
            result
        };
        self.save_access_statistics(true);
        if !self.read_only && self.background_error().is_none() {
            // The workload since the last flush (a read-mostly database may never flush).
            let edit = VersionEdit {
                policy_states: vec![self.workload_state()],
                ..Default::default()
            };
            if let Err(error) = self.versions.log_and_apply(edit) {
                self.info_log.log(format!(
                    "could not record the workload totals at close: {error}"
                ));
            }
        }
        self.versions.close();
        self.delete_obsolete_files();
        self.info_log.log("closed");
        *self.lock.lock() = None;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::{next_compaction_task, CompactionTask};
    use crate::db::BackgroundState;

    /// After a background error a worker starts no policy job or filter rebuild (each would
    /// fail at once and wake the other workers to fail in turn, a spin for as long as the
    /// database stays open), but still starts a queued full compaction, whose tickets must be
    /// answered.
    #[test]
    fn a_failed_engine_starts_only_the_full_compactions_that_answer_tickets() {
        let mut background = BackgroundState {
            compaction_requested: true,
            ..Default::default()
        };
        let due = || true;
        assert_eq!(
            next_compaction_task(&background, false, due),
            Some(CompactionTask::Policy)
        );
        assert_eq!(next_compaction_task(&background, true, due), None);
        background.compaction_requested = false;
        assert_eq!(
            next_compaction_task(&background, false, due),
            Some(CompactionTask::Policy),
            "a priced rebuild is due"
        );
        assert_eq!(next_compaction_task(&background, true, due), None);
        assert_eq!(next_compaction_task(&background, false, || false), None);
        background.manual_compactions.issue().expect("ticket");
        assert_eq!(
            next_compaction_task(&background, true, due),
            Some(CompactionTask::Full)
        );
        background.full_compaction_worker = Some(0);
        assert_eq!(
            next_compaction_task(&background, false, due),
            None,
            "runs alone"
        );
        background.full_compaction_worker = None;
        background.compaction_pauses = 1;
        assert_eq!(
            next_compaction_task(&background, false, due),
            None,
            "paused"
        );
    }

    use super::RateTracker;
    use std::time::{Duration, Instant};

    #[test]
    fn rates_are_moving_averages_of_flushes_and_jobs() {
        let mut rates = RateTracker::default();
        assert_eq!(rates.rates(), crate::compaction::MeasuredRates::UNKNOWN);
        let start = Instant::now();
        // The first flush gives a size but no interval yet.
        rates.flushed(1_000, start);
        assert_eq!(rates.rates().flush_bytes_per_sec, None);
        assert_eq!(rates.rates().flush_bytes, Some(1_000.0));
        rates.flushed(1_000, start + Duration::from_secs(1));
        assert_eq!(rates.rates().flush_bytes_per_sec, Some(1_000.0));
        // A new sample weighs a quarter.
        rates.flushed(1_000, start + Duration::from_millis(1_500));
        assert_eq!(rates.rates().flush_bytes_per_sec, Some(1_250.0));
        rates.compacted(4_000, Duration::from_secs(2));
        rates.compacted(0, Duration::from_secs(2));
        rates.compacted(4_000, Duration::ZERO);
        assert_eq!(rates.rates().compaction_bytes_per_sec, Some(2_000.0));
    }
}
