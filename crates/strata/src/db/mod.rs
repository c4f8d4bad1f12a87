//! The database: open and recovery, the write path (group commit), the read path, snapshots,
//! iterators and the background flush and compaction threads.
//!
//! Concurrency in one paragraph: writers queue their batches and one of them, holding the commit
//! lock, writes the whole group to the WAL and the memtable, then publishes the new last sequence
//! number. Readers never lock: they read the last sequence number, then load the current
//! [`ReadView`] (memtables + version) from an `ArcSwap`, and ignore anything newer than their
//! sequence number. The flush thread turns immutable memtables into level-0 runs; the compaction
//! thread asks the policy for jobs. Each installs a new version through the manifest and swaps in
//! a new read view.

mod auto_tune;
mod background;
mod filter_rebuild;
mod info_log;
mod iter;
mod manual_compaction;
mod open;
mod policy_switch;
mod predicted_writes;
mod read;
mod study;
mod top_index;
mod top_iter;
mod write;

pub use iter::DbIterator;
pub use study::TracedProbe;

use std::collections::{BTreeMap, VecDeque};
use std::ops::{Bound, Deref, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::alloc::FilterAllocator;
use crate::cache::BlockCache;
use crate::compaction::CompactionPolicy;
use crate::env::{FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::memtable::MemTable;
use crate::options::{Options, WriteOptions};
use crate::stats::access_file;
use crate::stats::merlin::Merlin;
use crate::stats::{AccessObserver, IoCounters, LevelStats, Stats, WorkloadMix, WorkloadTotals};
use crate::sync::atomic::AtomicBool;
use crate::sync::thread::JoinHandle;
use crate::sync::{Condvar, Mutex};
use crate::table::TableCache;
use crate::version::set::VersionSet;
use crate::version::Version;
use crate::wal::{LogWriter, WriteBatch};
use info_log::InfoLog;

/// A user key as returned by iterators.
pub type Key = Vec<u8>;

/// A value read from the store. Dereferences to `[u8]`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(Vec<u8>);

impl Value {
    /// The bytes, owned.
    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

impl Deref for Value {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Value {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Value({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl PartialEq<[u8]> for Value {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}

impl PartialEq<&[u8]> for Value {
    fn eq(&self, other: &&[u8]) -> bool {
        self.0 == *other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Value {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.0 == other[..]
    }
}

impl From<Vec<u8>> for Value {
    fn from(bytes: Vec<u8>) -> Self {
        Value(bytes)
    }
}

/// What readers see: the memtables and the version, swapped atomically as a unit.
pub(crate) struct ReadView {
    pub(crate) mem: Arc<MemTable>,
    /// Immutable memtables waiting for flush, newest first.
    pub(crate) immutable: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
    /// The filter allocator in effect: `options.filter_allocator` at open, or the one a
    /// `Db::set_filter_allocator` switched to (`policy_switch`). In the view because lookups ask
    /// it which filters to skip and already load the view; everything else that asks the
    /// allocator reads it here too (`DbInner::filter_allocator`), never from `options`.
    pub(crate) filter_allocator: Arc<dyn FilterAllocator>,
    /// The index of `version`'s level-0 keys, when the compaction policy keeps one (EcoTune's
    /// top level; `top_index`). Built with the view, so it always matches its version.
    pub(crate) top_index: Option<Arc<top_index::TopLevelIndex>>,
}

/// State guarded by the commit lock: the active WAL, memtable switching, and the buffers a
/// commit group reuses so that committing allocates nothing of its own.
pub(crate) struct CommitState {
    pub(crate) wal: Option<LogWriter>,
    pub(crate) wal_number: u64,
    /// The batches of the group being committed (empty between groups; kept for its capacity).
    pub(crate) group_batches: Vec<WriteBatch>,
    /// The queued writes the group answers (empty between groups; kept for its capacity).
    pub(crate) group_followers: Vec<Arc<PendingWrite>>,
    /// The batch `Db::put` and `Db::delete` encode into when they lead a group themselves, so a
    /// single write needs no batch allocation of its own.
    /// `None` while a group uses it, or after a write too large to keep.
    pub(crate) single_write: Option<WriteBatch>,
}

impl CommitState {
    pub(crate) fn new(wal: Option<LogWriter>, wal_number: u64) -> Self {
        CommitState {
            wal,
            wal_number,
            group_batches: Vec::new(),
            group_followers: Vec::new(),
            single_write: None,
        }
    }
}

/// A write waiting for a group-commit leader.
pub(crate) struct PendingWrite {
    pub(crate) batch: Mutex<Option<WriteBatch>>,
    pub(crate) sync: bool,
    pub(crate) result: std::sync::OnceLock<Result<()>>,
}

/// Background-thread coordination.
///
/// Manual compactions are tickets (`manual_compaction.rs`), not a shared flag: each
/// `Db::compact` call takes a ticket and waits for the answer stored under it.
#[derive(Default)]
pub(crate) struct BackgroundState {
    pub(crate) shutting_down: bool,
    pub(crate) compaction_requested: bool,
    pub(crate) manual_compactions: manual_compaction::ManualCompactions,
    pub(crate) flush_in_progress: bool,
    /// Policy jobs the compaction workers are running (shown to the policy when it picks).
    pub(crate) running: crate::compaction::RunningCompactions,
    /// The worker running a full (manual) compaction; it runs alone.
    pub(crate) full_compaction_worker: Option<usize>,
    /// Compaction workers still alive; the last to exit answers the queued tickets.
    pub(crate) compaction_workers: usize,
    /// While above 0, no compaction worker starts a job (`Db::rewrite_filters`, `study.rs`).
    pub(crate) compaction_pauses: usize,
}

impl BackgroundState {
    /// True if no compaction (policy or full) is running.
    pub(crate) fn compactions_idle(&self) -> bool {
        self.running.is_empty() && self.full_compaction_worker.is_none()
    }

    /// True if a worker may register a policy job: not closing, not paused, and no full
    /// compaction queued or running (it runs alone).
    pub(crate) fn policy_jobs_may_start(&self) -> bool {
        !self.shutting_down
            && self.compaction_pauses == 0
            && !self.manual_compactions.pending()
            && self.full_compaction_worker.is_none()
    }
}

/// The shared engine behind every `Db` clone, snapshot and iterator.
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    /// The merge policy in effect: `options.compaction_policy` at open, or the policy a
    /// `Db::set_compaction_policy` switched to (`policy_switch`). Everything that asks the
    /// policy reads it here, never from `options`.
    pub(crate) compaction_policy: ArcSwap<Arc<dyn CompactionPolicy>>,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) lock: Mutex<Option<Box<dyn FileLock>>>,
    pub(crate) versions: VersionSet,
    pub(crate) tables: Arc<TableCache>,
    pub(crate) block_cache: Arc<BlockCache>,
    pub(crate) counters: Arc<IoCounters>,
    pub(crate) observer: Option<Arc<dyn AccessObserver>>,
    pub(crate) view: ArcSwap<ReadView>,
    /// Guards memtable switches and view updates (short critical sections).
    pub(crate) view_lock: Mutex<()>,
    /// Held from a job's filter allocation to its install (flush, compaction, trivial move), so
    /// the allocator always sizes filters against the tree the job joins (`crate::alloc`).
    pub(crate) install_lock: Mutex<()>,
    /// Held by a compaction worker from reading the jobs in flight to registering the job it
    /// picked, so two workers never pick against the same picture of what is running.
    pub(crate) pick_lock: Mutex<()>,
    /// Flush and compaction rates, measured for policies that time their work
    /// (`CompactionContext::rates`).
    pub(crate) rates: Mutex<background::RateTracker>,
    /// Held for the whole of a `Db::rewrite_filters` (`study.rs`): rewrites run one at a time.
    pub(crate) filter_rewrite_lock: Mutex<()>,
    /// When idle compaction workers next price a filter rebuild (`filter_rebuild.rs`). Taken
    /// after `background`, never before it.
    pub(crate) rebuild_schedule: Mutex<filter_rebuild::RebuildSchedule>,
    pub(crate) commit: Mutex<CommitState>,
    pub(crate) pending: Mutex<VecDeque<Arc<PendingWrite>>>,
    pub(crate) snapshots: Mutex<BTreeMap<u64, usize>>,
    pub(crate) background_error: Mutex<Option<Error>>,
    pub(crate) background: Mutex<BackgroundState>,
    /// Signalled when there is background work.
    pub(crate) work_available: Condvar,
    /// Signalled when a background job finishes (writers waiting out a stall, `flush`, `compact`).
    pub(crate) work_done: Condvar,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set first thing in `close`; every entry point checks it.
    pub(crate) closed: AtomicBool,
    /// Held for the whole of `close`, so that a second `close` returns only once the first has
    /// finished (threads joined, WAL synced, directory lock released).
    pub(crate) close_lock: Mutex<()>,
    /// Merlin's per-file access statistics and global lookup counter `D` (DESIGN.md §4), when kept.
    pub(crate) merlin: Option<Arc<Merlin>>,
    /// When access statistics were last saved (`stats::access_file`).
    pub(crate) access_saved_at: Mutex<Option<std::time::Instant>>,
    pub(crate) info_log: InfoLog,
    /// The workload totals up to the last reset of the counters (restored from the manifest on
    /// open); the live counters are added to it (`stats::workload`).
    pub(crate) workload_base: Mutex<WorkloadTotals>,
    /// The live window over the workload totals (`stats::workload::WorkloadWindow`); its anchor
    /// is logged with the totals.
    pub(crate) workload_window: Mutex<crate::stats::workload::WorkloadWindow>,
    /// Auto-tune's measurements up to the last reset of the counters; the live counters are
    /// added to it (`auto_tune.rs`), so `Db::reset_stats` does not lose them.
    pub(crate) measurement_base: Mutex<crate::model::auto_tune::Measurements>,
    /// True once auto-tune has run its read probe (`auto_tune.rs`), whatever came of it: it runs
    /// at most once per open.
    pub(crate) read_probe_tried: std::sync::atomic::AtomicBool,
    /// Auto-tune's state (`auto_tune.rs`): restored from the manifest, held for a whole decision.
    pub(crate) auto_tune: Mutex<crate::model::auto_tune::AutoTuneState>,
    /// When auto-tune's last decision was taken in this open (`auto_tune.rs`): the interval's
    /// elapsed time, which the design in force's measured throughput is taken over. `None`
    /// before the first.
    pub(crate) auto_tune_decided_at: Mutex<Option<std::time::Instant>>,
    pub(crate) wal_records_recovered: u64,
    pub(crate) wal_bytes_dropped: u64,
    /// Opened by [`Db::open_read_only`]: no lock, no WAL, no background threads, and every entry
    /// point that would write to the directory fails with [`Error::ReadOnly`].
    pub(crate) read_only: bool,
}

/// Shuts the engine down when the last `Db` handle is dropped.
struct CloseOnDrop(Arc<DbInner>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        // Errors at close were already recorded as the background error; nothing to report here.
        let _ = self.0.close();
    }
}

/// An open database. Cheap to clone (an `Arc` inside); clones share one engine and can be sent to
/// other threads. The engine closes when the last clone is dropped or on [`Db::close`].
///
/// # Guarantees
/// * `flush()` returns once the memtables' contents are durable in table files and the manifest.
/// * A write with `WriteOptions { sync: true }` survives a crash of the machine once acknowledged;
///   any acknowledged write survives a crash of the process.
/// * After a crash the store holds a prefix of the acknowledged writes: never a later write
///   without an earlier one, never part of a batch.
/// * Keys are at most [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES), values at most
///   [`MAX_VALUE_BYTES`](crate::MAX_VALUE_BYTES); larger ones are an `InvalidArgument` error.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
    _close: Arc<CloseOnDrop>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in directory `path`, replaying
    /// its write-ahead logs. A second open of the same directory fails with [`Error::Locked`]
    /// (a [`Db::open_read_only`] takes no lock and is not refused).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_with_observer(path.as_ref(), options, None)
    }

    /// Opens the existing database in `path` for reading only, like RocksDB's `OpenForReadOnly`:
    /// it reads `CURRENT`, the manifest, the write-ahead logs at or above the manifest's log
    /// number (replayed into a memtable kept in memory, so acknowledged writes that were never
    /// flushed are seen) and, when access statistics are kept, the `ACCESS` file — and writes
    /// nothing, ever: no `LOCK`, no WAL, no manifest, no table, no `LOG`, no `ACCESS` save, no
    /// deletion of any file, and no background threads. It therefore works on a full disk and
    /// leaves every file byte-identical.
    ///
    /// Reads, iterators, snapshots, [`Db::stats`], [`Db::version`] and [`Db::close`] work as
    /// usual. [`Db::put`], [`Db::delete`], [`Db::write`], [`Db::flush`], [`Db::compact`] and
    /// [`Db::rewrite_filters`] fail with [`Error::ReadOnly`]; so does
    /// [`Db::wait_for_compactions`] when the compaction policy has work to do (nothing will do
    /// it), while it returns `Ok` when there is none.
    ///
    /// No directory lock is taken, so a read-only session can run beside a process (or a `Db` in
    /// this process) that has the database open for writing. It sees the database as of its own
    /// open. If the writer compacts meanwhile it may delete a table file this session has not
    /// opened yet; reads of that file then fail with an I/O error (never a wrong answer), and a
    /// new read-only open sees the new state. `create_if_missing` and `error_if_exists` are
    /// ignored: a missing directory, or one without `CURRENT`, is [`Error::InvalidArgument`], and
    /// nothing is created.
    ///
    /// The filter allocator in `options` is told about the recovered tree
    /// ([`LiveDecisions::restore`](crate::alloc::LiveDecisions::restore)): give a read-only
    /// session its own allocator rather than one a writing `Db` uses.
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = open::open_read_only(path.as_ref(), options)?;
        Ok(Db {
            _close: Arc::new(CloseOnDrop(Arc::clone(&inner))),
            inner,
        })
    }

    /// True if this database was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// Opens with an access observer (per-file statistics, DESIGN.md §4).
    pub(crate) fn open_with_observer(
        path: &Path,
        options: Options,
        observer: Option<Arc<dyn AccessObserver>>,
    ) -> Result<Db> {
        let inner = open::open(path, options, observer)?;
        Ok(Db {
            _close: Arc::new(CloseOnDrop(Arc::clone(&inner))),
            inner,
        })
    }

    /// Stores `value` under `key`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, self.default_write_options())
    }

    /// Stores `value` under `key` with explicit write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: WriteOptions,
    ) -> Result<()> {
        self.inner
            .write_single(ValueKind::Value, key.as_ref(), value.as_ref(), options.sync)
    }

    /// Removes `key` (a no-op if it is absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let sync = self.default_write_options().sync;
        self.inner
            .write_single(ValueKind::Deletion, key.as_ref(), &[], sync)
    }

    /// Applies a batch atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, self.default_write_options())
    }

    /// Applies a batch atomically with explicit write options.
    pub fn write_opt(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        self.inner.write(batch, options.sync)
    }

    fn default_write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.inner.options.sync_writes,
        }
    }

    /// Makes every write acknowledged so far durable against a power loss, like a write with
    /// `WriteOptions { sync: true }` but without writing anything: it fsyncs the current
    /// write-ahead log under the commit lock. For a writer that acknowledges unsynced writes and
    /// syncs on a timer (`strata serve --sync everysec`). Writes in an earlier log, one the
    /// database switched away from when its memtable filled, become durable when that memtable's
    /// flush is (the log is then no longer needed). A closed database gives [`Error::Closed`], a
    /// read-only one [`Error::ReadOnly`]; a failed fsync is the background error from then on.
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.sync_wal()
    }

    /// The newest value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>> {
        self.inner.check_open()?;
        self.inner.get(key.as_ref(), None)
    }

    /// A frozen view of the database as of now. It stays valid (and keeps the versions it needs
    /// from being compacted away) until dropped.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::clone(&self.inner))
    }

    /// Iterates every key in order, over a consistent snapshot taken now.
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates the keys in `bounds`, over a consistent snapshot taken now.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, bounds: R) -> DbIterator {
        // As in `get`: the view first, then the sequence number (see `DbInner::get`).
        let view = self.inner.view.load_full();
        let sequence = self.inner.versions.last_sequence();
        DbIterator::new(
            Arc::clone(&self.inner),
            sequence,
            owned_bounds(&bounds),
            Some(view),
        )
    }

    /// Flushes the memtables to table files; returns when they are durable in the manifest.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Flushes, then compacts the whole tree into one sorted run.
    pub fn compact(&self) -> Result<()> {
        self.inner.check_writable()?;
        self.inner.flush()?;
        self.inner.compact_all()
    }

    /// Waits until the compaction policy has no more work to do (benchmarks settle the tree with
    /// it before read phases). It returns when the tree is settled — no frozen memtable, no job
    /// running or picked — or with the background error, or `Error::Closed` once the database
    /// closes; under a write stream that keeps the policy busy it waits until the stream lets
    /// the tree settle (RocksDB's `WaitForCompact` likewise).
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_for_compactions()
    }

    /// Switches the merge policy of the running database to the registered policy `kind` with
    /// `settings` (`strata::policy`), without a reopen. Compactions already running finish as
    /// their policy picked them; every later pick, and the write-stall decision, asks the new
    /// policy, and the tree reaches its shape through ordinary compactions. The switch is logged
    /// in the manifest: a reopen with the same `Options` keeps it, a reopen whose options name a
    /// different policy runs that one instead (`db/policy_switch.rs`). An invalid setting is
    /// [`Error::InvalidArgument`] and changes nothing; a read-only database gives
    /// [`Error::ReadOnly`], and one that refuses writes after a failure its background error.
    pub fn set_compaction_policy(
        &self,
        kind: crate::policy::CompactionKind,
        settings: crate::policy::CompactionSettings,
    ) -> Result<()> {
        self.inner.set_compaction_policy(kind, &settings)
    }

    /// Switches the filter allocator of the running database to the registered allocator `kind`
    /// with `settings` (`strata::policy`), without a reopen: every file flushed or compacted from
    /// then on gets the filter it decides, and which filters lookups skip is its call at once.
    /// Existing filters stay as built until compaction rewrites them (or
    /// [`Db::rewrite_filters`] does). Logged in the manifest like
    /// [`Db::set_compaction_policy`], with the same rule on reopen. An allocator that needs
    /// access statistics (Mnemosyne+) on a database that keeps none, or an invalid setting, is
    /// [`Error::InvalidArgument`] and changes nothing; a read-only database gives
    /// [`Error::ReadOnly`], and one that refuses writes after a failure its background error.
    pub fn set_filter_allocator(
        &self,
        kind: crate::policy::FilterAllocatorKind,
        settings: crate::policy::FilterSettings,
    ) -> Result<()> {
        self.inner.set_filter_allocator(kind, &settings)
    }

    /// The name of the filter allocator in effect (the configured one, or the one
    /// [`Db::set_filter_allocator`] switched to).
    pub fn filter_allocator_name(&self) -> String {
        self.inner.filter_allocator().name()
    }

    /// Bits per key of each live file's filter that lookups use now, by file number: 0 for a
    /// filter the allocator skips, the modules in use for elastic filters (fewer than the file
    /// holds on disk when the allocation has taken some out of use), the whole filter otherwise.
    /// Their entry-weighted mean is `Stats::effective_bits_per_key`.
    pub fn filter_bits_in_use(&self) -> std::collections::BTreeMap<u64, f64> {
        let view = self.inner.view.load_full();
        let allocator = &view.filter_allocator;
        view.version
            .files()
            .map(|(_, run, file)| (file.number(), allocator.bits_per_key_in_use(run, file)))
            .collect()
    }

    /// What a point lookup is predicted to cost on the tree as it is now, by the per-file form of
    /// the cost models (`strata::model::tree`): the files' real bits per key, the filters the
    /// allocator skips, index and filter blocks taken as cached. `strata bench` prints it beside
    /// the measured I/Os.
    pub fn predicted_lookup_cost(&self) -> crate::model::tree::TreeLookupCost {
        let view = self.inner.view.load_full();
        let allocator = &view.filter_allocator;
        crate::model::tree::lookup_cost(&view.version, &|run, file| {
            allocator.filter_in_use(run, file)
        })
    }

    /// What a point lookup is predicted to read from the device on the tree as it is now,
    /// through this database's block cache (`strata::model::tree::device_reads`): data, index
    /// and filter blocks per lookup, for lookups of missing keys and of existing ones, each
    /// stream taken alone and the cache settled under it. `strata bench` prints it beside the
    /// measured block reads.
    pub fn predicted_device_reads(&self) -> crate::model::tree::TreeDeviceReads {
        let view = self.inner.view.load_full();
        let allocator = &view.filter_allocator;
        crate::model::tree::device_reads(
            &view.version,
            &|run, file| allocator.filter_in_use(run, file),
            &self.cache_setting(),
        )
    }

    /// [`Db::predicted_device_reads`] for streams whose keys recur
    /// (`strata::model::tree::stream_device_reads`): a caller that knows how many distinct keys
    /// each stream draws from, and how many lookups it makes, gets the reads of those lookups
    /// (DESIGN.md §7.6, "Recurring keys"). `history`: what the streams have been through
    /// ([`Db::stream_history`] when they began, the filters followed since), or `None` for a
    /// cache full of other blocks and filters as now. `strata bench` passes each read phase's.
    pub fn predicted_stream_device_reads(
        &self,
        streams: &crate::model::tree::LookupStreams,
        history: Option<&crate::model::tree::StreamHistory>,
    ) -> crate::model::tree::TreeDeviceReads {
        let view = self.inner.view.load_full();
        let allocator = &view.filter_allocator;
        crate::model::tree::stream_device_reads(
            &view.version,
            &|run, file| allocator.filter_in_use(run, file),
            &self.cache_setting(),
            streams,
            history,
        )
    }

    /// The history of a stream of lookups that begins now, as
    /// [`Db::predicted_stream_device_reads`] takes it (DESIGN.md §7.6, "A phase's history"): the
    /// block cache's bytes in use and, per live file, the data blocks it holds; the caller notes
    /// the filter bits in use as the stream goes (`StreamHistory::note_bits_in_use` with
    /// [`Db::filter_bits_in_use`]). A block counts as data when it lies
    /// before the file's index and filters, which the file's open reader knows; for a file whose
    /// reader is not open, every sorted block is counted (its index partitions with its data
    /// blocks). Walks the whole cache: for a caller about to start a phase, such as `strata
    /// bench`, not for a hot path.
    pub fn stream_history(&self) -> crate::model::tree::StreamHistory {
        use crate::table::table_cache::TableFile;
        let cache = &self.inner.block_cache;
        let view = self.inner.view.load_full();
        let data_end: std::collections::HashMap<u64, Option<u64>> = view
            .version
            .files()
            .map(|(_, _, file)| {
                let end = file.table_slot().held().map(|reader| reader.data_end());
                (file.number(), end)
            })
            .collect();
        let mut data_blocks = std::collections::BTreeMap::new();
        for (number, offset) in cache.sorted_blocks() {
            if let Some(end) = data_end.get(&number) {
                if end.is_none_or(|end| offset < end) {
                    *data_blocks.entry(number).or_insert(0u64) += 1;
                }
            }
        }
        crate::model::tree::StreamHistory {
            cache_used_bytes: cache.used_bytes(),
            cached_data_blocks: data_blocks,
            ..Default::default()
        }
    }

    /// What a short scan — a seek, then `entries - 1` more entries — is predicted to read from
    /// the device on the tree as it is now, through this database's block cache
    /// (`strata::model::seek::seek_reads`), the seek key uniform over the tree's key range.
    /// `bounded`: the scan is a range with both ends set (`Db::range(a..b)` spanning `entries`
    /// keys), so runs whose files miss it are left out and this database's range filters, if it
    /// builds any, are asked. Level-0 runs in the top-level index (EcoTune) are priced as the
    /// scan opens them, only when it reaches a key they hold. `strata bench` prints it beside the
    /// measured reads of `seekrandom`.
    pub fn predicted_seek_reads(
        &self,
        entries: u64,
        bounded: bool,
    ) -> crate::model::seek::TreeSeekReads {
        let view = self.inner.view.load_full();
        let options = &self.inner.options;
        let scan = crate::model::seek::ScanSetting {
            entries,
            bounded,
            range_filter_bits: options.range_filter_bits,
            range_filter_last_level: options.range_filter_last_level,
            level0_indexed: view.top_index.is_some(),
        };
        crate::model::seek::seek_reads(&view.version, &self.cache_setting(), &scan)
    }

    /// What the write stream `stream` is predicted to cost in table bytes written
    /// (`strata::model::writes`): this database's merge policy, as built, replayed on the
    /// simulator's synthetic tree over the stream's entries in flushes of its entries per flush,
    /// with this database's write buffer, output file size, level-0 trigger and the table bytes
    /// per entry of its tree; and Monkey's closed form on the tree's levels where the policy has
    /// one. `strata bench` prints it beside the measured write amplification of a settled write
    /// phase. No I/O. A stream of no entries or user bytes per entry that are not positive is
    /// [`Error::InvalidArgument`].
    pub fn predicted_write_amplification(
        &self,
        stream: &crate::model::writes::WriteStream,
    ) -> Result<crate::model::writes::PredictedWrites> {
        predicted_writes::predict(&self.inner, stream)
    }

    /// The block cache as the models see it.
    fn cache_setting(&self) -> crate::model::tree::CacheSetting {
        let options = &self.inner.options;
        crate::model::tree::CacheSetting {
            capacity_bytes: options.block_cache_bytes,
            block_bytes: options.block_bytes as u64,
            metadata_pinned: options.pin_filter_and_index_blocks,
            level0_metadata_pinned: options.pin_filter_and_index_blocks
                || options.pin_l0_filter_and_index_blocks,
        }
    }

    /// The name of the merge policy in effect (the configured one, or the one
    /// [`Db::set_compaction_policy`] switched to).
    pub fn compaction_policy_name(&self) -> String {
        self.inner.compaction_policy().name()
    }

    /// Engine statistics: I/O counters, tree shape, memory, recovery facts.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Zeroes the I/O counters (between benchmark phases). The lifetime workload totals
    /// ([`Db::workload`]) and the costs auto-tune measured since the database opened keep what
    /// the counters held.
    pub fn reset_stats(&self) {
        let mut base = self.inner.workload_base.lock();
        *base = base.plus_counts(&self.inner.counters.workload_counts());
        let mut measured = self.inner.measurement_base.lock();
        *measured = measured.plus(&self.inner.counted_measurements());
        self.inner.counters.reset();
    }

    /// What the database has served since it was created, across restarts: point lookups (and
    /// how many found their key), range lookups and the entries they returned, and entries
    /// written. Kept in the manifest at every flush and at close, so what a crash loses is what
    /// was counted after the last flush. `strata tune --from-db` tunes for this mix.
    pub fn workload(&self) -> WorkloadTotals {
        self.inner.workload()
    }

    /// The workload over the engine's live window: the last 50,000 to 56,250 queries and the
    /// writes among them (`stats::workload::WorkloadWindow`), what compaction policies read as
    /// `CompactionContext::workload` (EcoTune's measured `r` and `K`, DESIGN.md §6). Kept across
    /// reopens with the lifetime totals.
    pub fn recent_workload(&self) -> WorkloadMix {
        self.inner.workload_mix()
    }

    /// Takes one auto-tune decision now (DESIGN.md §10, "Self-tuning";
    /// `strata::model::auto_tune`) with `Options::auto_tune`'s settings, or the defaults when
    /// auto-tune is off, and applies it: prices the design in force and the tuner's best for the
    /// mix served since the last decision, switches the merge policy and size ratio when the
    /// rules allow, logs the decision in the info log and records it in the manifest. Returns
    /// the decision. `strata tune --apply` calls it. A read-only database gives
    /// [`Error::ReadOnly`]; in the engine's error state (after a failed write or background job)
    /// it is refused with that error, as `Db::compact` is: a decision records itself in the
    /// manifest, and neither a switch nor a merge for reads could run.
    pub fn auto_tune_now(&self) -> Result<crate::model::auto_tune::Decision> {
        let options = self.inner.options.auto_tune.unwrap_or_default();
        self.inner.auto_tune_once(&options)
    }

    /// Auto-tune's last decisions, oldest first (at most `model::auto_tune::HISTORY`; empty
    /// before the first), kept across restarts.
    pub fn auto_tune_history(&self) -> Vec<crate::model::auto_tune::Decision> {
        self.inner.auto_tune_history()
    }

    /// The current tree shape (read-only).
    pub fn version(&self) -> Arc<Version> {
        self.inner.versions.current()
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops background work, syncs the WAL and releases the directory lock. Later calls on any
    /// clone return [`Error::Closed`]. Called automatically when the last clone is dropped.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

pub(crate) fn owned_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(
    bounds: &R,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let own = |bound: Bound<&K>| match bound {
        Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(bounds.start_bound()), own(bounds.end_bound()))
}

/// A frozen, owned view of the database. `Send + Sync`, storable, independent of the `Db` handle
/// it came from.
pub struct Snapshot {
    inner: Arc<DbInner>,
    sequence: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("sequence", &self.sequence)
            .finish()
    }
}

impl Snapshot {
    fn new(inner: Arc<DbInner>) -> Snapshot {
        let mut snapshots = inner.snapshots.lock();
        // Registered under the lock so that a compaction cannot choose its smallest snapshot
        // between our reading the sequence and registering it.
        let sequence = inner.versions.last_sequence();
        *snapshots.entry(sequence).or_insert(0) += 1;
        drop(snapshots);
        Snapshot { inner, sequence }
    }

    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The value of `key` as of the snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Value>> {
        self.inner.check_open()?;
        self.inner.get(key.as_ref(), Some(self.sequence))
    }

    /// Iterates every key as of the snapshot.
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// Iterates the keys in `bounds` as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, bounds: R) -> DbIterator {
        DbIterator::new(
            Arc::clone(&self.inner),
            self.sequence,
            owned_bounds(&bounds),
            None,
        )
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snapshots = self.inner.snapshots.lock();
        if let Some(count) = snapshots.get_mut(&self.sequence) {
            *count -= 1;
            if *count == 0 {
                snapshots.remove(&self.sequence);
            }
        }
    }
}

impl DbInner {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// [`DbInner::check_open`], then [`Error::ReadOnly`] for a read-only database: the check of
    /// every entry point that writes (a write, a flush, a compaction, a filter rewrite).
    /// Lifetime workload totals (`Db::workload`).
    pub(crate) fn workload(&self) -> WorkloadTotals {
        let mut totals = self.counters.workload_counts();
        totals.writes = self.versions.last_sequence();
        self.workload_base.lock().plus_counts(&totals)
    }

    /// The workload over the live window ([`crate::stats::workload::WorkloadWindow`]), moved
    /// to end now: what compaction policies read (`CompactionContext::workload`).
    pub(crate) fn workload_mix(&self) -> crate::stats::WorkloadMix {
        let now = self.workload();
        self.workload_window.lock().observe(&now)
    }

    /// The manifest record of [`DbInner::workload`], with the live window's anchor.
    pub(crate) fn workload_state(&self) -> crate::version::PolicyState {
        let now = self.workload();
        let anchor = {
            let mut window = self.workload_window.lock();
            window.observe(&now);
            window.anchor()
        };
        crate::version::PolicyState {
            owner: crate::stats::workload::WORKLOAD_OWNER.to_string(),
            bytes: now.encode(Some(&anchor)),
        }
    }

    /// The filter allocator in effect (see `ReadView::filter_allocator`).
    pub(crate) fn filter_allocator(&self) -> Arc<dyn FilterAllocator> {
        Arc::clone(&self.view.load().filter_allocator)
    }

    /// The merge policy in effect (see the field).
    pub(crate) fn compaction_policy(&self) -> Arc<dyn CompactionPolicy> {
        let policy = self.compaction_policy.load();
        Arc::clone(&**policy)
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(())
    }

    /// `check_writable`, and the background error if there is one: for the calls that change
    /// the database beyond a write (a policy switch, an auto-tune decision, a filter rewrite),
    /// which a database that refuses writes refuses too, as it does `Db::compact`
    /// (docs/decisions/sticky-errors.md).
    pub(crate) fn check_changeable(&self) -> Result<()> {
        self.check_writable()?;
        match self.background_error() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The oldest sequence number any live snapshot reads at (or the newest, if none).
    pub(crate) fn smallest_snapshot(&self) -> u64 {
        let snapshots = self.snapshots.lock();
        snapshots
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.versions.last_sequence())
    }

    pub(crate) fn background_error(&self) -> Option<Error> {
        self.background_error.lock().clone()
    }

    /// Records the first background error; every later write fails with it.
    pub(crate) fn set_background_error(&self, error: &Error) {
        let mut slot = self.background_error.lock();
        if slot.is_none() {
            self.info_log.log(format!("background error: {error}"));
            *slot = Some(Error::Background(error.to_string()));
        }
        drop(slot);
        let _guard = self.background.lock();
        self.work_done.notify_all();
    }

    /// Merlin's `D`: point lookups issued so far (0 when access statistics are off).
    pub(crate) fn lookup_count(&self) -> u64 {
        self.merlin.as_ref().map_or(0, |merlin| merlin.lookups())
    }

    /// Saves the access statistics snapshot (`stats::access_file`) if they are kept and `force` is
    /// set or the last save is a second old. Failures are logged, never fatal.
    pub(crate) fn save_access_statistics(&self, force: bool) {
        let Some(merlin) = &self.merlin else {
            return;
        };
        if self.read_only {
            // Loaded at open, updated in memory by this session's lookups, never saved.
            return;
        }
        {
            let mut saved_at = self.access_saved_at.lock();
            let now = std::time::Instant::now();
            if !force && saved_at.is_some_and(|at| now.duration_since(at).as_secs_f64() < 1.0) {
                return;
            }
            *saved_at = Some(now);
        }
        let version = self.versions.current();
        let mut seen = std::collections::HashSet::new();
        let files: Vec<(u64, &crate::stats::merlin::FileAccess)> = version
            .files()
            .filter(|(_, _, file)| seen.insert(file.number()))
            .filter_map(|(_, _, file)| {
                file.state()
                    .access()
                    .map(|access| (file.number(), access.file.as_ref()))
            })
            .collect();
        let bytes = access_file::encode(&merlin.state(), &files);
        if let Err(error) = access_file::save(self.fs.as_ref(), &self.dir, &bytes) {
            self.info_log
                .log(format!("could not save access statistics: {error}"));
        }
    }

    /// Memory of Merlin's per-file statistics over `version`'s files (0 without statistics).
    fn access_statistics_bytes(&self, version: &Version) -> u64 {
        if self.merlin.is_none() {
            return 0;
        }
        let files = version
            .files()
            .map(|(_, _, file)| file.number())
            .collect::<std::collections::HashSet<_>>()
            .len();
        (files * crate::stats::merlin::FileAccess::memory_bytes()) as u64
    }

    pub(crate) fn stats(&self) -> Stats {
        // The tree and the allocator's skip decisions change together under the install lock;
        // holding it here keeps the averages of one snapshot consistent.
        let install = self.install_lock.lock();
        let view = self.view.load_full();
        let version = &view.version;
        let allocator = &view.filter_allocator;
        let filters = FilterTotals::of(version, allocator.as_ref());
        let (levels, filter_bits, skipped_bits, entries_total) = (
            filters.levels,
            filters.filter_bits,
            filters.skipped_bits,
            filters.entries,
        );
        drop(install);
        let memtable_bytes = (view.mem.approximate_bytes()
            + view
                .immutable
                .iter()
                .map(|m| m.approximate_bytes())
                .sum::<usize>()) as u64;
        let memtable_filter_bytes = std::iter::once(&view.mem)
            .chain(&view.immutable)
            .map(|m| m.key_filter_bytes() as u64)
            .sum::<u64>();
        let io = self.counters.snapshot();
        let block_cache_bytes = self.block_cache.used_bytes();
        let pinned_bytes = self.tables.pinned_bytes();
        let range_filter_bytes = self.tables.range_filter_bytes();
        let readahead_buffer_bytes = self.counters.readahead_buffer_bytes();
        let access_statistics_bytes = self.access_statistics_bytes(version);
        let (top_index_entries, top_index_bytes) = view
            .top_index
            .as_ref()
            .map_or((0, 0), |index| (index.entries(), index.memory_bytes()));
        Stats {
            write_amplification: io.write_amplification(),
            io,
            runs: version.run_count(),
            levels,
            memtable_bytes,
            memtable_filter_bytes,
            memtable_entries: view.mem.entries()
                + view.immutable.iter().map(|m| m.entries()).sum::<u64>(),
            immutable_memtables: view.immutable.len(),
            block_cache_bytes,
            block_cache_capacity_bytes: self.block_cache.capacity_bytes(),
            pinned_bytes,
            access_statistics_bytes,
            top_index_entries,
            top_index_bytes,
            range_filter_bytes,
            readahead_buffer_bytes,
            total_memory_bytes: memtable_bytes
                + memtable_filter_bytes
                + block_cache_bytes
                + pinned_bytes
                + access_statistics_bytes
                + top_index_bytes
                + range_filter_bytes
                + readahead_buffer_bytes,
            average_bits_per_key: if entries_total == 0 {
                0.0
            } else {
                filter_bits / entries_total as f64
            },
            effective_bits_per_key: if entries_total == 0 {
                0.0
            } else {
                (filter_bits - skipped_bits) / entries_total as f64
            },
            bits_per_key_budget: allocator.bits_per_key_budget(),
            filter_budget_bytes: allocator.filter_budget_bytes(),
            // Bits in use, rounded to whole bytes (never negative: skipped bits are part of them).
            filter_bytes_in_use: ((filter_bits - skipped_bits).max(0.0) / 8.0).round() as u64,
            bits_per_key_cap: allocator.bits_per_key_cap(),
            last_sequence: self.versions.last_sequence(),
            wal_records_recovered: self.wal_records_recovered,
            wal_bytes_dropped: self.wal_bytes_dropped,
            background_error: self.background_error().map(|e| e.to_string()),
            compaction_policy: self.compaction_policy().name(),
            compaction_state: self.compaction_policy().describe_state(version),
            auto_tune: self.auto_tune_lines(),
            filter_allocator: view.filter_allocator.name(),
            probe_times: {
                let now = std::time::Instant::now();
                version.files().fold(
                    crate::version::ProbeTimes::default(),
                    |times, (_, _, file)| times.plus(file.state().lookup_counts(now).probe_times),
                )
            },
        }
    }
}

/// Per-level rows and the tree's filter bits in all and out of use (skipped filters, modules not
/// in use), for [`DbInner::stats`].
#[derive(Default)]
struct FilterTotals {
    levels: Vec<LevelStats>,
    filter_bits: f64,
    skipped_bits: f64,
    entries: u64,
}

impl FilterTotals {
    fn of(version: &Version, allocator: &dyn FilterAllocator) -> Self {
        let mut totals = FilterTotals::default();
        for (index, level) in version.levels().iter().enumerate() {
            if level.is_empty() {
                continue;
            }
            let mut level_bits = 0.0;
            let mut filter_bytes = 0;
            for run in level.runs() {
                for file in run.files() {
                    let bits = file.bits_per_key() * file.entries() as f64;
                    level_bits += bits;
                    filter_bytes += file.filter_bytes();
                    // Skipped filters and modules not in use (elastic filters) count 0.
                    totals.skipped_bits += bits
                        - allocator.bits_per_key_in_use(run.id(), file) * file.entries() as f64;
                }
            }
            let entries = level.entries();
            totals.filter_bits += level_bits;
            totals.entries += entries;
            totals.levels.push(LevelStats {
                level: index,
                runs: level.runs().len(),
                files: level.file_count(),
                bytes: level.bytes(),
                entries,
                filter_bytes,
                bits_per_key: if entries == 0 {
                    0.0
                } else {
                    level_bits / entries as f64
                },
            });
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::FileProbe;

    #[derive(Default)]
    struct RecordingObserver {
        lookups: Mutex<Vec<Vec<FileProbe>>>,
        compaction_entries: Mutex<Vec<(u64, u64)>>,
    }

    impl AccessObserver for RecordingObserver {
        fn lookup_finished(&self, probes: &[FileProbe]) {
            self.lookups.lock().push(probes.to_vec());
        }
        fn compaction_entry(&self, source_file: u64, output_file: u64) {
            self.compaction_entries
                .lock()
                .push((source_file, output_file));
        }
    }

    /// Open descriptors of files under `dir` (Linux: the links in /proc/self/fd).
    fn open_descriptors_under(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .map(|entries| {
                entries
                    .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
                    .filter(|target| target.starts_with(dir))
                    .filter(|target| target.extension().is_some_and(|e| e == "sst"))
                    .count()
            })
            .unwrap_or(0)
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out: {what}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Table readers live in their files' metadata (`table::table_cache`): lookups stay correct
    /// across flushes, compactions and reopens (read-write and read-only); a compaction that
    /// deletes files closes their readers and descriptors once no version names them; and no
    /// more than `max_open_files` readers are held, however many files the tree has.
    #[test]
    fn table_readers_follow_their_files_and_stay_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = |i: u32| format!("key{i:06}");
        let value = |round: u32, i: u32| format!("value-{round}-{i}-{}", "x".repeat(40));
        const KEYS: u32 = 6000;
        let options = |pin: bool| {
            Options::default()
                .write_buffer_bytes(64 << 10)
                .target_file_bytes(8 << 10)
                .max_open_files(16)
                .pin_filter_and_index_blocks(pin)
        };
        let check_all = |db: &Db, round: u32| {
            for i in 0..KEYS {
                let expected = (i % 3 != 0).then(|| value(round, i).into_bytes());
                assert_eq!(
                    db.get(key(i)).expect("get").map(|v| v.to_vec()),
                    expected,
                    "key {i} after round {round}"
                );
                assert_eq!(db.get(format!("{}x", key(i))).expect("get"), None);
            }
        };
        for pin in [true, false] {
            let db = Db::open(dir.path(), options(pin)).expect("open");
            for round in 0..3 {
                for i in 0..KEYS {
                    db.put(key(i), value(round, i)).expect("put");
                }
                for i in (0..KEYS).step_by(3) {
                    db.delete(key(i)).expect("delete");
                }
                db.flush().expect("flush");
                check_all(&db, round);
                db.wait_for_compactions().expect("compactions");
                check_all(&db, round);
                let files = db.version().files().count();
                assert!(
                    files > 16,
                    "the tree must hold more files than max_open_files"
                );
                assert!(
                    db.inner.tables.open_readers() <= 16,
                    "{} readers open with max_open_files 16",
                    db.inner.tables.open_readers()
                );
            }
            // A full compaction rewrites every file: the old readers go with the old files. No
            // lookup has opened the new files yet.
            db.compact().expect("compact");
            wait_until("readers of deleted files closed", || {
                db.inner.tables.open_readers() == 0
            });
            if cfg!(target_os = "linux") {
                assert_eq!(open_descriptors_under(dir.path()), 0);
            }
            check_all(&db, 2);
            let open = db.inner.tables.open_readers();
            assert!((1..=16).contains(&open), "{open} readers open");
            if cfg!(target_os = "linux") {
                assert_eq!(open_descriptors_under(dir.path()), open);
            }
            db.close().expect("close");
            drop(db);
            let read_only = Db::open_read_only(dir.path(), options(pin)).expect("read-only");
            check_all(&read_only, 2);
            assert!(read_only.inner.tables.open_readers() <= 16);
            drop(read_only);
        }
    }

    /// A table that fails to open fills no slot: the lookup gets the error, and once the file
    /// is readable again the next lookup opens it.
    #[test]
    fn a_table_that_fails_to_open_is_retried() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Leveling: nothing opens the table before the first lookup (EcoTune's top-level index
        // reads level 0's files at open).
        let options = || {
            Options::default().compaction_policy(Arc::new(crate::compaction::Leveling::default()))
        };
        {
            let db = Db::open(dir.path(), options()).expect("open");
            db.put(b"k", b"v").expect("put");
            db.flush().expect("flush");
            db.close().expect("close");
        }
        let db = Db::open(dir.path(), options()).expect("reopen");
        let number = db.version().files().next().expect("one file").2.number();
        let path = dir.path().join(crate::table::table_file_name(number));
        let saved = std::fs::read(&path).expect("read table");
        std::fs::write(&path, b"not a table").expect("damage");
        for _ in 0..2 {
            match db.get(b"k") {
                Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
                other => panic!("expected a corruption error, got {other:?}"),
            }
        }
        assert_eq!(db.inner.tables.open_readers(), 0);
        std::fs::write(&path, &saved).expect("repair");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
        assert_eq!(db.inner.tables.open_readers(), 1);
    }

    #[test]
    fn the_observer_sees_probed_files_and_compaction_sources() {
        let dir = tempfile::tempdir().expect("tempdir");
        let observer = Arc::new(RecordingObserver::default());
        // Leveling: lookups probe level-0 runs by key range (EcoTune's top-level index would
        // skip a run that cannot hold the key).
        let options = Options::default()
            .compaction_policy(Arc::new(crate::compaction::Leveling::default()))
            .level0_compaction_trigger(10);
        let db = Db::open_with_observer(dir.path(), options, Some(observer.clone())).expect("open");
        // Two level-0 runs over the same key range: "k1".."k9" old, then "k5" rewritten.
        for i in 1..10 {
            db.put(format!("k{i}"), b"old").expect("put");
        }
        db.flush().expect("flush");
        db.put(b"k5", b"new").expect("put");
        db.put(b"k9", b"new").expect("put");
        db.flush().expect("flush");
        let version = db.version();
        let runs = version.levels()[0].runs();
        assert_eq!(runs.len(), 2);
        let (newer, older) = (runs[0].files()[0].number(), runs[1].files()[0].number());

        assert_eq!(db.get(b"k5").expect("get").as_deref(), Some(&b"new"[..]));
        assert_eq!(db.get(b"k3").expect("get").as_deref(), Some(&b"old"[..]));
        assert_eq!(db.get(b"k0").expect("get"), None);
        let lookups = observer.lookups.lock().clone();
        assert_eq!(lookups.len(), 3);
        // k5 is answered by the newer run alone.
        assert_eq!(
            lookups[0],
            vec![FileProbe {
                file_number: newer,
                found: true
            }]
        );
        // k3 is below the newer run's range (k5..k9): only the older run is probed.
        assert_eq!(
            lookups[1],
            vec![FileProbe {
                file_number: older,
                found: true
            }]
        );
        // k0 is outside both ranges: no file is probed.
        assert!(lookups[2].is_empty());
        assert_eq!(db.get(b"k7").expect("get").as_deref(), Some(&b"old"[..]));
        let k7 = observer.lookups.lock().last().cloned().expect("lookup");
        assert_eq!(
            k7,
            vec![
                FileProbe {
                    file_number: newer,
                    found: false
                },
                FileProbe {
                    file_number: older,
                    found: true
                }
            ],
            "k7 is in the newer run's range but only the older run holds it"
        );

        db.compact().expect("compact");
        let entries = observer.compaction_entries.lock().clone();
        // The full compaction keeps the newest version of k1..k9 (9 entries); each is attributed
        // to the file it came from.
        assert_eq!(entries.len(), 9);
        let from_newer = entries
            .iter()
            .filter(|(source, _)| *source == newer)
            .count();
        let from_older = entries
            .iter()
            .filter(|(source, _)| *source == older)
            .count();
        assert_eq!((from_newer, from_older), (2, 7));
        // The full compaction's one output file, wherever the policy puts it (level 1 under
        // static leveling, the last level under dynamic sizing).
        let version = db.version();
        let (_, _, file) = version.files().next().expect("one output file");
        let output = file.number();
        assert!(entries.iter().all(|(_, out)| *out == output));
    }
}
