//! Opening a database: lock, manifest recovery, WAL replay (with the configured
//! [`WalRecoveryMode`](crate::wal::WalRecoveryMode)), a flush of what was replayed, clean-up of
//! files no version needs, and the background threads. A read-only open
//! ([`open_read_only`]) does the reading half of that: manifest recovery and WAL replay into a
//! memtable that stays in memory, and nothing else.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::background::{finish_level0_table, spawn_threads, write_level0_entries};
use super::info_log::InfoLog;
use super::policy_switch::{policies_at_open, PoliciesAtOpen};
use super::{BackgroundState, CommitState, DbInner, ReadView};
use crate::alloc::FilterAllocator;
use crate::cache::BlockCache;
use crate::env::FileLock;
use crate::error::{Error, Result};
use crate::key::MAX_SEQUENCE;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::access_file;
use crate::stats::merlin::Merlin;
use crate::stats::{AccessObserver, IoCounters, WorkloadTotals};
use crate::sync::atomic::AtomicBool;
use crate::sync::{Condvar, Mutex};
use crate::table::TableCache;
use crate::version::set::{VersionSet, CURRENT_FILE};
use crate::version::{AccessHandle, AddedFile, VersionEdit};
use crate::wal::{read_log, wal_path, LogWriter, WalRecoveryMode, WriteBatch};

struct Replay {
    records: u64,
    dropped_bytes: u64,
    max_sequence: u64,
}

/// Replays WALs numbered `>= log_number` into `mem`, oldest first, stopping at the first damage.
fn replay_wals(
    dir: &Path,
    options: &Options,
    wal_numbers: &[u64],
    mem: &MemTable,
    info_log: &InfoLog,
) -> Result<Replay> {
    let fs = options.file_system.as_ref();
    let mut replay = Replay {
        records: 0,
        dropped_bytes: 0,
        max_sequence: 0,
    };
    for (index, &number) in wal_numbers.iter().enumerate() {
        let path = wal_path(dir, number);
        let bytes = fs.read_to_end(&path)?;
        let contents = read_log(&bytes);
        let mut damage = contents.damage.clone();
        for (offset, record) in &contents.records {
            match WriteBatch::decode(record) {
                Ok((sequence, entries)) => {
                    for (i, entry) in entries.iter().enumerate() {
                        mem.insert(sequence + i as u64, entry.kind, entry.key, entry.value);
                    }
                    if !entries.is_empty() {
                        replay.max_sequence =
                            replay.max_sequence.max(sequence + entries.len() as u64 - 1);
                    }
                    replay.records += 1;
                }
                Err(reason) => {
                    damage = Some(crate::wal::LogDamage {
                        offset: *offset,
                        kind: crate::wal::LogDamageKind::Corrupt(format!(
                            "malformed write batch: {reason}"
                        )),
                        dropped_bytes: bytes.len() as u64 - offset,
                    });
                    break;
                }
            }
        }
        if let Some(damage) = damage {
            if options.wal_recovery_mode == WalRecoveryMode::AbsoluteConsistency {
                return Err(damage.to_error(&path));
            }
            // Point-in-time recovery: nothing after the damage, in this log or later ones, is
            // replayed, so the store keeps a prefix of the acknowledged writes.
            let mut dropped = damage.dropped_bytes;
            for &later in &wal_numbers[index + 1..] {
                dropped += fs
                    .read_to_end(&wal_path(dir, later))
                    .map_or(0, |b| b.len() as u64);
            }
            replay.dropped_bytes += dropped;
            info_log.log(format!(
                "WAL {} damaged at offset {}: {}; dropped {dropped} bytes (this log's tail and {} later logs)",
                path.display(),
                damage.offset,
                damage.to_error(&path),
                wal_numbers.len() - index - 1
            ));
            break;
        }
    }
    Ok(replay)
}

/// The WAL numbers in a directory listing (ascending) and the highest WAL or table number.
fn wal_numbers_and_highest_file_number(names: &[String]) -> (Vec<u64>, u64) {
    let parse = |name: &str, suffix: &str| {
        name.strip_suffix(suffix)
            .and_then(|n| n.parse::<u64>().ok())
    };
    let mut wal_numbers: Vec<u64> = names.iter().filter_map(|n| parse(n, ".log")).collect();
    wal_numbers.sort_unstable();
    let highest_number = names
        .iter()
        .filter_map(|n| parse(n, ".log").or_else(|| parse(n, ".sst")))
        .max()
        .unwrap_or(0);
    (wal_numbers, highest_number)
}

/// Merlin (DESIGN.md §4): restored from the last snapshot in the `ACCESS` file if there is a sound
/// one, and attached to every recovered file. `None` when access statistics are off. Only reads.
fn restore_access_statistics(
    dir: &Path,
    options: &Options,
    filter_allocator: &dyn FilterAllocator,
    versions: &VersionSet,
    info_log: &InfoLog,
) -> Result<Option<Arc<Merlin>>> {
    // The allocator in effect may be a switched one that needs the statistics the configured one
    // did not.
    if !(options.keeps_access_statistics() || filter_allocator.needs_access_statistics()) {
        return Ok(None);
    }
    let restored = match access_file::load(options.file_system.as_ref(), dir) {
        Ok(restored) => restored,
        Err(error) => {
            info_log.log(format!("access statistics start afresh: {error}"));
            None
        }
    };
    let (merlin, mut files) = match restored {
        Some(restored) => (
            Merlin::from_state(restored.state, options.access_recent_weight)?,
            restored.files,
        ),
        None => (Merlin::new(options.access_recent_weight)?, HashMap::new()),
    };
    let merlin = Arc::new(merlin.with_sampling(u64::from(options.access_sample_every)));
    for (_, _, file) in versions.current().files() {
        file.state().attach_access(AccessHandle {
            file: Arc::new(files.remove(&file.number()).unwrap_or_default()),
            merlin: Arc::clone(&merlin),
        });
    }
    Ok(Some(merlin))
}

/// Creates `dir` if it is missing and `create_if_missing` allows, and locks it: the lock, and
/// whether a database is there already (refused if `error_if_exists`).
fn lock_dir(dir: &Path, options: &Options) -> Result<(Box<dyn FileLock>, bool)> {
    let fs = options.file_system.as_ref();
    if !fs.exists(dir) {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "database {} does not exist and create_if_missing is off",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
    }
    let lock = fs.lock(&dir.join("LOCK"))?;
    let exists = fs.exists(&dir.join(CURRENT_FILE));
    if exists && options.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "database {} already exists and error_if_exists is on",
            dir.display()
        )));
    }
    Ok((lock, exists))
}

/// The new WAL `wal_number`, created and its directory entry synced; `None` when the WAL is off.
fn create_wal(dir: &Path, options: &Options, wal_number: u64) -> Result<Option<LogWriter>> {
    if options.disable_wal {
        return Ok(None);
    }
    let fs = options.file_system.as_ref();
    let file = fs.create_writable(&wal_path(dir, wal_number))?;
    fs.sync_dir(dir)?;
    Ok(Some(LogWriter::new(file)))
}

/// Writes what the WALs replayed into `recovered` as a level-0 table of the current version,
/// with the filter `allocator` gives it: the file to add, `None` if nothing was replayed.
fn flush_replayed(
    dir: &Path,
    options: &Options,
    versions: &VersionSet,
    allocator: &dyn FilterAllocator,
    merlin: Option<&Arc<Merlin>>,
    counters: &IoCounters,
    recovered: &Arc<MemTable>,
) -> Result<Option<AddedFile>> {
    // Recovery runs before any background thread: the current version is the tree the file joins.
    // No snapshot exists yet: one version of each key is all a reader can see.
    let Some(write) = write_level0_entries(
        dir,
        options.file_system.as_ref(),
        versions,
        options,
        allocator.filter_module_bits_per_key(0),
        merlin,
        recovered,
        MAX_SEQUENCE,
    )?
    else {
        return Ok(None);
    };
    finish_level0_table(
        allocator,
        merlin,
        counters,
        &versions.current(),
        write.pending,
        write.run_id,
    )
    .map(Some)
}

pub(crate) fn open(
    dir: &Path,
    options: Options,
    observer: Option<Arc<dyn AccessObserver>>,
) -> Result<Arc<DbInner>> {
    options.validate()?;
    let fs = Arc::clone(&options.file_system);
    let (lock, exists) = lock_dir(dir, &options)?;
    let info_log = InfoLog::open(fs.as_ref(), dir);
    info_log.log(format!("opening {} with {options:?}", dir.display()));

    let names = fs.list_dir(dir)?;
    let (mut wal_numbers, highest_number) = wal_numbers_and_highest_file_number(&names);

    let versions = VersionSet::open(dir, Arc::clone(&fs), exists, highest_number)?;
    wal_numbers.retain(|&n| n >= versions.log_number());
    let policies = policies_at_open(&options, &versions.current())?;
    for note in &policies.notes {
        info_log.log(note.clone());
    }
    let merlin = restore_access_statistics(
        dir,
        &options,
        policies.filter_allocator.as_ref(),
        &versions,
        &info_log,
    )?;

    let recovered = Arc::new(MemTable::new(
        0,
        merlin.as_ref().map_or(0, |m| m.lookups()),
        options.write_buffer_bytes,
    ));
    let replay = replay_wals(dir, &options, &wal_numbers, &recovered, &info_log)?;
    versions.set_last_sequence(versions.last_sequence().max(replay.max_sequence));

    let counters = Arc::new(IoCounters::default());
    let wal_number = versions.new_file_number();
    let wal = create_wal(dir, &options, wal_number)?;
    let mut edit = VersionEdit {
        log_number: Some(wal_number),
        ..Default::default()
    };
    // The allocator learns the recovered tree (and its own state in the manifest) before it
    // sizes the recovered table's filter.
    policies.filter_allocator.restore(&versions.current());
    if let Some(file) = flush_replayed(
        dir,
        &options,
        &versions,
        policies.filter_allocator.as_ref(),
        merlin.as_ref(),
        &counters,
        &recovered,
    )? {
        info_log.log(format!(
            "recovered {} WAL records ({} entries) into table {}",
            replay.records, file.file.entries, file.file.number
        ));
        edit.new_files.push(file);
        edit.policy_states
            .extend(policies.filter_allocator.policy_state());
    }
    edit.policy_states.extend(policies.clear.iter().cloned());
    versions.log_and_apply(edit)?;
    // Which filters lookups skip is not persisted: the allocator re-derives it from the recovered
    // tree and statistics before the first lookup, within its cap.
    policies.filter_allocator.restore(&versions.current());
    counters.reset();

    let mem = Arc::new(MemTable::new(
        wal_number,
        merlin.as_ref().map_or(0, |m| m.lookups()),
        options.write_buffer_bytes,
    ));
    let inner = assemble(
        dir,
        options,
        observer,
        RecoveredState {
            versions,
            merlin,
            info_log,
            replay,
            counters,
            mem,
            policies,
        },
        Mode::ReadWrite {
            lock,
            commit: CommitState::new(wal, wal_number),
        },
    );
    remove_orphan_tables(&inner)?;
    inner.delete_obsolete_files();
    spawn_threads(&inner)?;
    Ok(inner)
}

/// What a read-only open needs and a normal open also has: the database's state as read from its
/// files.
struct RecoveredState {
    versions: VersionSet,
    merlin: Option<Arc<Merlin>>,
    info_log: InfoLog,
    replay: Replay,
    counters: Arc<IoCounters>,
    /// The memtable readers start with: a new, empty one after a normal open (what was replayed
    /// is in a level-0 table by then), the replayed one after a read-only open.
    mem: Arc<MemTable>,
    /// The merge policy and filter allocator to run: the configured ones or switches the
    /// manifest keeps (`policy_switch`).
    policies: PoliciesAtOpen,
}

/// What only a normal open has.
enum Mode {
    ReadWrite {
        lock: Box<dyn FileLock>,
        commit: CommitState,
    },
    ReadOnly,
}

/// Builds the engine around what an open recovered. Starts no thread and touches no file.
fn assemble(
    dir: &Path,
    options: Options,
    observer: Option<Arc<dyn AccessObserver>>,
    recovered: RecoveredState,
    mode: Mode,
) -> Arc<DbInner> {
    if let Some(merlin) = &recovered.merlin {
        recovered.counters.count_lookups_with(merlin);
    }
    let fs = Arc::clone(&options.file_system);
    let block_cache = Arc::new(BlockCache::new(options.block_cache_bytes));
    let tables = Arc::new(
        TableCache::new(
            dir.to_path_buf(),
            Arc::clone(&fs),
            options.max_open_files,
            Arc::clone(&block_cache),
            Arc::clone(&recovered.counters),
            options.direct_reads,
        )
        .with_scan_readahead(options.scan_readahead_max_bytes),
    );
    let view = ReadView {
        mem: recovered.mem,
        immutable: Vec::new(),
        version: recovered.versions.current(),
        filter_allocator: Arc::clone(&recovered.policies.filter_allocator),
        // Built from level 0's files once the engine is assembled (below).
        top_index: None,
    };
    let (lock, commit, read_only) = match mode {
        Mode::ReadWrite { lock, commit } => (Some(lock), commit, false),
        Mode::ReadOnly => (None, CommitState::new(None, 0), true),
    };
    let (workload_base, window_anchor) =
        workload_at_open(&recovered.versions.current(), &recovered.info_log);
    let totals_at_open = WorkloadTotals {
        writes: recovered.versions.last_sequence(),
        ..workload_base
    };
    let (auto_tune, auto_tune_note) =
        super::auto_tune::state_at_open(&recovered.versions.current());
    if let Some(note) = auto_tune_note {
        recovered.info_log.log(note);
    }
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        fs,
        lock: Mutex::new(lock),
        versions: recovered.versions,
        compaction_policy: ArcSwap::from_pointee(recovered.policies.compaction_policy),
        tables,
        block_cache,
        counters: recovered.counters,
        observer,
        view: ArcSwap::from_pointee(view),
        view_lock: Mutex::new(()),
        install_lock: Mutex::new(()),
        pick_lock: Mutex::new(()),
        rates: Mutex::new(super::background::RateTracker::default()),
        filter_rewrite_lock: Mutex::new(()),
        rebuild_schedule: Mutex::new(super::filter_rebuild::RebuildSchedule::new(
            std::time::Instant::now(),
        )),
        commit: Mutex::new(commit),
        pending: Mutex::new(VecDeque::new()),
        snapshots: Mutex::new(BTreeMap::new()),
        background_error: Mutex::new(None),
        background: Mutex::new(BackgroundState::default()),
        work_available: Condvar::new(),
        work_done: Condvar::new(),
        threads: Mutex::new(Vec::new()),
        closed: AtomicBool::new(false),
        close_lock: Mutex::new(()),
        merlin: recovered.merlin,
        access_saved_at: Mutex::new(None),
        workload_base: Mutex::new(workload_base),
        workload_window: Mutex::new(crate::stats::workload::WorkloadWindow::resume(
            crate::stats::workload::WINDOW_QUERIES,
            window_anchor,
            &totals_at_open,
        )),
        info_log: recovered.info_log,
        measurement_base: Mutex::new(Default::default()),
        read_probe_tried: std::sync::atomic::AtomicBool::new(false),
        auto_tune: Mutex::new(auto_tune),
        auto_tune_decided_at: Mutex::new(None),
        wal_records_recovered: recovered.replay.records,
        wal_bytes_dropped: recovered.replay.dropped_bytes,
        read_only,
        options,
    });
    // The top-level index (EcoTune) from level 0's files, before the first lookup.
    inner.install_current_version(None);
    inner
}

/// Opens the database in `dir` for reading only (`Db::open_read_only`): reads `CURRENT`, the
/// manifest, the `ACCESS` file (if access statistics are kept) and the WALs at or above the
/// manifest's log number, and writes nothing at all, so that it works on a full disk, on a
/// directory another process is writing, and leaves every file byte-identical.
///
/// * No `LOCK` is taken: taking it would create the file if missing (a write), the file system
///   offers only an exclusive lock, and a reader must not keep the owner from opening (nor be
///   kept out by it), as with RocksDB's `OpenForReadOnly`. What it sees is the state as of the
///   open; a writer that compacts meanwhile may delete a table file this session has not opened
///   yet, and reads of it then fail with an I/O error (never a wrong answer).
/// * The replayed WAL contents stay in an in-memory memtable; nothing is flushed.
/// * No new WAL, no manifest, no `LOG` (the info log is a no-op), no `ACCESS` save, no deletion
///   of orphan tables or obsolete files, no background threads.
/// * `create_if_missing` and `error_if_exists` are ignored: nothing is created, and an existing
///   database is what a read-only open is for.
pub(crate) fn open_read_only(dir: &Path, options: Options) -> Result<Arc<DbInner>> {
    options.validate()?;
    let fs = Arc::clone(&options.file_system);
    if !fs.exists(dir) {
        return Err(Error::InvalidArgument(format!(
            "database {} does not exist (a read-only open creates nothing)",
            dir.display()
        )));
    }
    if !fs.exists(&dir.join(CURRENT_FILE)) {
        return Err(Error::InvalidArgument(format!(
            "{} holds no database (no {CURRENT_FILE} file)",
            dir.display()
        )));
    }
    let info_log = InfoLog::disabled();
    // The manifest before the listing: a writer that flushes meanwhile raises the log number only
    // after its WAL's contents are in a table. Listing first, we could read that newer manifest
    // and skip the WAL that followed the listing, missing acknowledged writes; this way a WAL the
    // writer deletes after the listing fails the open with an I/O error instead.
    let versions = VersionSet::load_read_only(dir, Arc::clone(&fs))?;
    let (mut wal_numbers, _) = wal_numbers_and_highest_file_number(&fs.list_dir(dir)?);
    wal_numbers.retain(|&n| n >= versions.log_number());
    // A read-only open cannot clear an overridden switch; it only ignores it.
    let policies = policies_at_open(&options, &versions.current())?;
    let merlin = restore_access_statistics(
        dir,
        &options,
        policies.filter_allocator.as_ref(),
        &versions,
        &info_log,
    )?;
    let mem = Arc::new(MemTable::new(
        0,
        merlin.as_ref().map_or(0, |m| m.lookups()),
        options.write_buffer_bytes,
    ));
    let replay = replay_wals(dir, &options, &wal_numbers, &mem, &info_log)?;
    versions.set_last_sequence(versions.last_sequence().max(replay.max_sequence));
    policies.filter_allocator.restore(&versions.current());
    Ok(assemble(
        dir,
        options,
        None,
        RecoveredState {
            versions,
            merlin,
            info_log,
            replay,
            counters: Arc::new(IoCounters::default()),
            mem,
            policies,
        },
        Mode::ReadOnly,
    ))
}

/// Deletes table files that no version refers to (outputs of a job that crashed before its
/// manifest edit).
fn remove_orphan_tables(inner: &DbInner) -> Result<()> {
    let version = inner.versions.current();
    let live: std::collections::HashSet<u64> =
        version.files().map(|(_, _, f)| f.number()).collect();
    for name in inner.fs.list_dir(&inner.dir)? {
        if let Some(number) = name
            .strip_suffix(".sst")
            .and_then(|n| n.parse::<u64>().ok())
        {
            if !live.contains(&number) {
                inner.info_log.log(format!("removing orphan table {name}"));
                let _ = inner.fs.remove_file(&inner.dir.join(&name));
            }
        }
    }
    Ok(())
}

/// The lifetime workload totals the manifest recorded (`stats::workload`) and the anchor of the
/// live window it logged with them; zero for a new database, one written before the record
/// existed, or a record this build cannot read. Without a recorded anchor the window starts at
/// zero: it spans the lifetime totals until it holds a window's queries.
fn workload_at_open(
    tree: &crate::version::Version,
    info_log: &InfoLog,
) -> (WorkloadTotals, WorkloadTotals) {
    let Some(bytes) = tree.policy_state(crate::stats::workload::WORKLOAD_OWNER) else {
        return (WorkloadTotals::default(), WorkloadTotals::default());
    };
    match WorkloadTotals::decode(bytes) {
        Some((totals, anchor)) => (totals, anchor.unwrap_or_default()),
        None => {
            info_log.log("the recorded workload totals are unreadable; they start afresh");
            (WorkloadTotals::default(), WorkloadTotals::default())
        }
    }
}
