//! fjall (through the `fjall` crate, 3.1.13 on lsm-tree 3.1.10) behind the benchmark's [`Engine`]
//! trait, configured like Strata wherever fjall allows it. One database, one keyspace.
//!
//! What fjall cannot do the same way is said in [`Engine::settings`]: it has no direct I/O and no
//! tiering, it sizes level 1 from its table target size, it truncates the filter's bits per key to
//! a whole number, and it has no call that waits for compactions; the adapter runs fjall's own
//! compaction strategy on the calling thread until it picks nothing (see
//! [`FjallEngine::wait_for_compactions`]).
//!
//! Counters come from fjall's `metrics` feature (lsm-tree's `Metrics` of the benchmark keyspace's
//! tree, `Keyspace::metrics`), read as a difference from a baseline taken at
//! [`Engine::reset_counters`]. What each figure is, checked against where lsm-tree 3.1.10
//! increments it:
//!
//! - data, index and filter block reads: `{data,index,filter}_block_load_io`, incremented in
//!   `table::util::load_block` only after a block-cache miss, when the block was read from the
//!   table file (`Block::from_file`); point reads, the volatile (unpinned) block index and
//!   iterators all load through it. Compactions read with their own scanner, outside the cache, and
//!   are not counted; nor are pinned index and filter blocks, which are read once when a table is
//!   opened, outside the cache. fjall's internal meta keyspace has its own counters and is not
//!   included (it shares the block cache, though).
//! - filter false positives: `filter_queries − io_skipped_by_filter`. `Table::get` counts a query
//!   with a skip when the filter rejects the key, and a query alone when the filter let the key
//!   through and the table's point read found no entry for it: exactly the false positives.
//! - filter probes: `None`. fjall deliberately does not count a probe that the filter let through
//!   and that found the key (lsm-tree issue #246), and a lookup's result does not say whether it
//!   came from a memtable or a table, so the true positives, and with them the probes, cannot be
//!   derived.
//! - unnecessary data reads: `None`; fjall does not say which block reads served lookups that
//!   missed.
//!
//! The bytes the user wrote are counted by the adapter (keys and values handed to fjall); fjall
//! does not count the bytes its flushes and compactions write, so that figure is `None`.
//!
//! The tree's shape, the memtable rotation and the compaction loop use fjall's `#[doc(hidden)]`
//! but public items (`Keyspace::tree`, `Keyspace::config`, `AbstractTree`,
//! `Keyspace::rotate_memtable`, `Snapshot::seqno`), and so do the counters (`Keyspace::metrics`,
//! which fjall calls experimental): they may change in a fjall release that
//! `Cargo.lock` does not pin.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fjall::compaction::Leveled;
use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    HashRatioPolicy, PartitioningPolicy, PinningPolicy, RestartIntervalPolicy,
};
use fjall::{
    AbstractTree, CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode,
};

use super::{
    read_scan, BatchOp, Engine, EngineConfig, EngineCounters, LevelShape, ScanOutcome, TreeShape,
};
use crate::bench::{CompactionKind, PeerConfig};
use crate::error::{CliError, CliResult};

/// The crate version the adapter was written against (`Cargo.lock` pins it; fjall exposes no
/// version constant).
const FJALL_VERSION: &str = "fjall 3.1.13 (lsm-tree 3.1.10)";
/// The keyspace every operation goes to.
const KEYSPACE: &str = "bench";
/// Level-0 tables that trigger a compaction (Strata's and RocksDB's level-0 trigger).
const L0_THRESHOLD: u8 = 4;
/// Entries between full keys in a data block (Strata's `block_restart_interval`).
const DATA_BLOCK_RESTART_INTERVAL: u8 = 16;
/// The smallest and largest data block fjall documents.
const BLOCK_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=(1 << 20);
/// How often flush and settle look at fjall's state.
const POLL: Duration = Duration::from_millis(5);
/// The longest `flush` waits for the flush workers.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The longest `wait_for_compactions` runs compactions.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Levels of fjall's tree (lsm-tree's `DEFAULT_LEVEL_COUNT`, which fjall does not let a keyspace
/// change).
const FJALL_LEVELS: usize = 7;

/// fjall's per-level compression policy for Strata's, and how it was mapped. fjall 3.1 has LZ4
/// and no Zstd, and no bottommost choice: Zstd becomes LZ4 (said so), and the bottommost choice is
/// given to fjall's last level, where its leveled strategy keeps most of the data. Index blocks get
/// the data blocks' policy, as Strata and RocksDB compress both.
fn compression_policy(policy: &strata::CompressionPolicy) -> (CompressionPolicy, String) {
    let fjall_type = |compression: strata::Compression| match compression {
        strata::Compression::None => CompressionType::None,
        strata::Compression::Lz4 | strata::Compression::Zstd { .. } => CompressionType::Lz4,
    };
    let mut choices: Vec<strata::Compression> = (0..FJALL_LEVELS)
        .map(|level| policy.for_output(level, false))
        .collect();
    if let (Some(bottommost), Some(last)) = (policy.bottommost(), choices.last_mut()) {
        *last = bottommost;
    }
    let types: Vec<CompressionType> = choices.iter().map(|&c| fjall_type(c)).collect();
    let mut note = format!(
        "compression of data and index blocks by level L0..L6: [{}]",
        types
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if policy.bottommost().is_some() {
        note.push_str(" (bottommost approximated by fjall's last level, L6)");
    }
    if choices
        .iter()
        .any(|c| matches!(c, strata::Compression::Zstd { .. }))
    {
        note.push_str("; ZSTD NOT AVAILABLE in fjall 3.1: LZ4 used instead (NOT the same)");
    }
    (CompressionPolicy::new(types), note)
}

fn peer_error(error: impl std::fmt::Display) -> CliError {
    CliError::Peer {
        engine: "fjall",
        message: error.to_string(),
    }
}

fn invalid(message: String) -> CliError {
    CliError::InvalidArgument(format!("fjall: {message}"))
}

/// The fjall counters the adapter reports, cumulative since the keyspace was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct FjallCounts {
    /// Data blocks read from the table files (block-cache misses).
    data_block_reads: u64,
    /// Index blocks read from the table files (block-cache misses).
    index_block_reads: u64,
    /// Filter blocks read from the table files (block-cache misses).
    filter_block_reads: u64,
    /// Filter probes that rejected the key, plus those that let it through and the table did not
    /// hold it (lsm-tree's `filter_queries`; probes that found the key are not counted).
    filter_misses: u64,
    /// Filter probes that rejected the key (lsm-tree's `io_skipped_by_filter`).
    filter_negatives: u64,
}

impl FjallCounts {
    /// Reads the counters of `keyspace`'s tree (fjall does not re-export lsm-tree's `Metrics`
    /// type, so the keyspace is passed). lsm-tree exposes block reads only as "loads" less "loads
    /// served by the cache", two atomics read one after the other; the counters are read again
    /// until two readings agree, so the differences are those of one instant when no lookup is
    /// running (as when the harness reads them), and within a few blocks otherwise.
    fn read(keyspace: &Keyspace) -> Self {
        let metrics = keyspace.metrics();
        let raw = || {
            [
                metrics.data_block_load_cached_count(),
                metrics.data_block_load_count(),
                metrics.index_block_load_cached_count(),
                metrics.index_block_load_count(),
                metrics.filter_block_load_cached_count(),
                metrics.filter_block_load_count(),
                metrics.filter_queries(),
                metrics.io_skipped_by_filter(),
            ]
            .map(|count| u64::try_from(count).unwrap_or(u64::MAX))
        };
        let mut reading = raw();
        for _ in 0..8 {
            let again = raw();
            if again == reading {
                break;
            }
            reading = again;
        }
        let [data_cached, data, index_cached, index, filter_cached, filter, queries, skipped] =
            reading;
        FjallCounts {
            data_block_reads: data.saturating_sub(data_cached),
            index_block_reads: index.saturating_sub(index_cached),
            filter_block_reads: filter.saturating_sub(filter_cached),
            filter_misses: queries,
            filter_negatives: skipped,
        }
    }

    /// The counts since `baseline`.
    fn since(self, baseline: FjallCounts) -> FjallCounts {
        FjallCounts {
            data_block_reads: self
                .data_block_reads
                .saturating_sub(baseline.data_block_reads),
            index_block_reads: self
                .index_block_reads
                .saturating_sub(baseline.index_block_reads),
            filter_block_reads: self
                .filter_block_reads
                .saturating_sub(baseline.filter_block_reads),
            filter_misses: self.filter_misses.saturating_sub(baseline.filter_misses),
            filter_negatives: self
                .filter_negatives
                .saturating_sub(baseline.filter_negatives),
        }
    }

    /// Probes the filter let through although the table did not hold the key.
    fn filter_false_positives(self) -> u64 {
        self.filter_misses.saturating_sub(self.filter_negatives)
    }
}

/// fjall with the benchmark's settings.
pub struct FjallEngine {
    // The keyspace is declared first so that it is dropped before the database.
    keyspace: Keyspace,
    db: Database,
    /// Key and value bytes handed to fjall since the database was opened.
    user_write_bytes: AtomicU64,
    /// `user_write_bytes` at the last reset.
    user_write_baseline: AtomicU64,
    /// fjall's counters at the last reset.
    counts_baseline: Mutex<FjallCounts>,
    settings: Vec<String>,
}

impl FjallEngine {
    /// Opens (or creates) a fjall database in `dir`, with one keyspace.
    pub fn open(dir: &Path, config: &EngineConfig) -> CliResult<Self> {
        if !BLOCK_BYTES_RANGE.contains(&config.block_bytes) {
            return Err(invalid(format!(
                "block size {} is outside fjall's 1 KiB..=1 MiB",
                config.block_bytes
            )));
        }
        let block_bytes = u32::try_from(config.block_bytes)
            .map_err(|_| invalid(format!("block size {} is too large", config.block_bytes)))?;
        if !config.bits_per_key.is_finite() || config.bits_per_key < 0.0 {
            return Err(invalid(format!(
                "bits per key {} must be a finite number >= 0",
                config.bits_per_key
            )));
        }
        if !config.size_ratio.is_finite() || config.size_ratio <= 1.0 {
            return Err(invalid(format!(
                "size ratio {} must be a finite number > 1",
                config.size_ratio
            )));
        }
        let worker_threads = std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
            .min(4);
        let mut settings = Vec::new();

        // Data blocks.
        settings.push(format!(
            "data_block_size_policy all({block_bytes}); data block restart interval {DATA_BLOCK_RESTART_INTERVAL}, index block 1; data-block hash index off (hash ratio 0)"
        ));

        // Filters.
        let filter_policy = if config.bits_per_key > 0.0 {
            // fjall allocates m = n × ⌊bits per key⌋ bits and k = max(1, ⌊bits per key × ln 2⌋)
            // probes (lsm-tree 3.1.10, `standard_bloom::Builder::with_bpk`).
            let whole_bits = config.bits_per_key.floor();
            let probes = (config.bits_per_key * std::f64::consts::LN_2)
                .floor()
                .max(1.0);
            settings.push(format!(
                "filter: standard Bloom BitsPerKey({}) on every level, the last included (expect_point_read_hits false); fjall truncates it to {whole_bits} bits/key with {probes} probes",
                config.bits_per_key
            ));
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(config.bits_per_key as f32),
            ))
        } else {
            settings.push("filter: none (bits per key 0; FilterPolicy::disabled)".to_string());
            FilterPolicy::disabled()
        };

        // Block cache.
        settings.push(format!(
            "cache_size {} bytes: one cache for data, index and filter blocks (fjall's internal meta keyspace shares it)",
            config.cache_bytes
        ));

        // Memtable.
        settings.push(format!(
            "max_memtable_size {} bytes; fjall flushes in the background and halts writes at 4 sealed memtables (fixed; Strata and RocksDB allow 2 memtables in all)",
            config.write_buffer_bytes
        ));

        // Compaction. fjall sizes level 1 as table_target_size × l0_threshold; to give level 1
        // Strata's capacity (write buffer × T, as the RocksDB run does), the table target size is
        // write buffer × T / l0_threshold.
        let level_one_bytes = (config.write_buffer_bytes as f64 * config.size_ratio) as u64;
        let table_target_bytes = (level_one_bytes / u64::from(L0_THRESHOLD)).max(1);
        let strategy = Leveled::default()
            .with_l0_threshold(L0_THRESHOLD)
            .with_table_target_size(table_target_bytes)
            .with_level_ratio_policy(vec![config.size_ratio as f32]);
        let leveled = format!(
            "Leveled: level_ratio_policy [{}], l0_threshold {L0_THRESHOLD}, table_target_size {table_target_bytes} (= write buffer × T / {L0_THRESHOLD}, so that fjall's level 1 = table_target_size × l0_threshold = {level_one_bytes} bytes, Strata's write buffer × T; compaction output tables are therefore {table_target_bytes} bytes, not Strata's 64 MiB; flushes cut tables at 64 MiB); 7 levels, filled from the last level up (like RocksDB's dynamic level bytes)",
            config.size_ratio
        );
        settings.push(match config.compaction {
            CompactionKind::Leveling | CompactionKind::LevelingDynamic => {
                format!("compaction {leveled}")
            }
            CompactionKind::Tiering => format!(
                "compaction: TIERING NOT SUPPORTED by fjall 3.1.13 (lsm-tree's size-tiered strategy is unimplemented; fjall keyspaces take only Leveled or FIFO); ran {leveled} instead"
            ),
            // Every other merge policy is Strata's own.
            _ => {
                return Err(CliError::InvalidArgument(format!(
                    "fjall has no {} compaction (the bench runs it on Strata only)",
                    config.compaction.name()
                )))
            }
        });

        // Compression (data and index blocks: see `compression_policy`).
        settings.push("journal (WAL) uncompressed, as Strata's and RocksDB's WAL".to_string());

        // Direct reads.
        settings.push(if config.direct_reads {
            "direct reads REQUESTED BUT NOT APPLIED: not supported by fjall (buffered I/O through the page cache)".to_string()
        } else {
            "direct reads: not supported by fjall (buffered I/O), off as requested".to_string()
        });

        // Index and filter blocks.
        let pin = config.pin_index_filter;
        let expert = config.peer_config == PeerConfig::Expert;
        settings.push(if pin {
            "index and filter blocks of every table pinned in memory, outside the block cache (index/filter pinning policy all(true))".to_string()
        } else if expert {
            "peer config expert: fjall's default pinning (level-0/1 index and level-0 filter blocks pinned, the rest through the block cache)".to_string()
        } else {
            "peer config strata-like: index and filter blocks read through the block cache on every level (pinning policy all(false); fjall's default pins level-0/1 index and level-0 filter blocks)".to_string()
        });
        settings.push(if expert {
            "peer config expert: fjall's default partitioning (index and filters partitioned from level 3)".to_string()
        } else {
            "peer config strata-like: one (unpartitioned) index block and one filter block per table on every level (partitioning policy all(false); fjall's default partitions from level 3)"
                .to_string()
        });

        // Writes.
        settings.push(
            "journal (WAL) on: each write is handed to the OS without fsync (manual_journal_persist false, PersistMode::Buffer), as RocksDB's sync=false; fjall fsyncs the journal before each memtable flush"
                .to_string(),
        );
        settings.push(format!(
            "{worker_threads} background worker threads shared by flushes and compactions (fjall's default min(cores, 4)); write stalls at fjall's fixed 20 level-0 runs (delay) and 30 (halt)"
        ));

        // Harness operations.
        settings.push(
            "flush: rotate the memtable, then wait until fjall holds no sealed memtable"
                .to_string(),
        );
        settings.push(format!(
            "wait_for_compactions: fjall has no way to wait; the adapter runs fjall's own compaction strategy on the calling thread until it picks nothing and no background compaction is running (at most {} minutes)",
            SETTLE_TIMEOUT.as_secs() / 60
        ));
        settings.push(
            "compact_all (--settle-l0): flush, settle, then fjall's major compaction (Keyspace::major_compact): one sorted run in the last level, 64 MB tables"
                .to_string(),
        );
        settings.push(
            "counters: fjall's `metrics` feature (the bench keyspace's lsm-tree Metrics, since the reset): data/index/filter block reads = block-cache misses read from the table file (compaction reads and pinned blocks bypass the cache and are not counted); filter false positives = filter_queries − io_skipped_by_filter (probes the filter passed whose table held no entry for the key)"
                .to_string(),
        );
        settings.push(
            "counters fjall cannot give (null): filter probes (fjall does not count probes that found the key), unnecessary data reads (block reads are not attributed to lookups that missed), flush/compaction bytes; user bytes are counted by the adapter (keys + values handed to fjall)"
                .to_string(),
        );
        settings.push(
            "shape: fjall's current version (runs, tables, bytes, entries incl. tombstones per level); bits/key = filter block bytes × 8 / entries, block headers included"
                .to_string(),
        );

        let (compression, compression_note) = compression_policy(&config.compression);
        settings.push(compression_note);

        let options = KeyspaceCreateOptions::default()
            .max_memtable_size(config.write_buffer_bytes)
            .data_block_size_policy(BlockSizePolicy::all(block_bytes))
            .data_block_restart_interval_policy(RestartIntervalPolicy::all(
                DATA_BLOCK_RESTART_INTERVAL,
            ))
            .data_block_hash_ratio_policy(HashRatioPolicy::all(0.0))
            .data_block_compression_policy(compression.clone())
            .index_block_compression_policy(compression)
            .filter_policy(filter_policy)
            .expect_point_read_hits(false)
            .manual_journal_persist(false)
            .compaction_strategy(Arc::new(strategy));
        // The expert configuration keeps fjall's own defaults where `--pin-index-filter` does not
        // ask for pinning.
        let options = if pin || !expert {
            options
                .index_block_pinning_policy(PinningPolicy::all(pin))
                .filter_block_pinning_policy(PinningPolicy::all(pin))
        } else {
            options
        };
        let options = if expert {
            options
        } else {
            options
                .index_block_partitioning_policy(PartitioningPolicy::all(false))
                .filter_block_partitioning_policy(PartitioningPolicy::all(false))
        };
        let db = Database::builder(dir)
            .cache_size(config.cache_bytes)
            .journal_compression(CompressionType::None)
            .manual_journal_persist(false)
            .worker_threads(worker_threads)
            .open()
            .map_err(peer_error)?;
        let keyspace = db.keyspace(KEYSPACE, || options).map_err(peer_error)?;
        let counts_baseline = Mutex::new(FjallCounts::read(&keyspace));
        Ok(FjallEngine {
            keyspace,
            db,
            user_write_bytes: AtomicU64::new(0),
            user_write_baseline: AtomicU64::new(0),
            counts_baseline,
            settings,
        })
    }

    fn count_user_bytes(&self, bytes: usize) {
        self.user_write_bytes
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Fails if fjall has been poisoned by a failed background write (its workers stop).
    fn check_healthy(&self) -> CliResult<()> {
        self.db.persist(PersistMode::Buffer).map_err(peer_error)
    }

    /// True when fjall has no memtable waiting to be flushed.
    fn flushed(&self) -> bool {
        self.keyspace.sealed_memtable_count() == 0 && self.db.outstanding_flushes() == 0
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn version(&self) -> String {
        FJALL_VERSION.to_string()
    }

    fn settings(&self) -> Vec<String> {
        self.settings.clone()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
        self.keyspace.insert(key, value).map_err(peer_error)?;
        self.count_user_bytes(key.len() + value.len());
        Ok(())
    }

    fn get(&self, key: &[u8]) -> CliResult<Option<Vec<u8>>> {
        Ok(self
            .keyspace
            .get(key)
            .map_err(peer_error)?
            .map(|value| value.to_vec()))
    }

    fn delete(&self, key: &[u8]) -> CliResult<()> {
        self.keyspace.remove(key).map_err(peer_error)?;
        self.count_user_bytes(key.len());
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp]) -> CliResult<()> {
        let mut batch = self.db.batch();
        let mut bytes = 0;
        for op in ops {
            match op {
                BatchOp::Put(key, value) => {
                    batch.insert(&self.keyspace, key.as_slice(), value.as_slice());
                    bytes += key.len() + value.len();
                }
                BatchOp::Delete(key) => {
                    batch.remove(&self.keyspace, key.as_slice());
                    bytes += key.len();
                }
            }
        }
        batch.commit().map_err(peer_error)?;
        self.count_user_bytes(bytes);
        Ok(())
    }

    fn scan(&self, from: &[u8], count: u64) -> CliResult<ScanOutcome> {
        let keys = self.keyspace.range(from..).map(|guard| {
            guard
                .into_inner()
                .map(|(key, _value)| key)
                .map_err(peer_error)
        });
        read_scan(from, keys, count)
    }

    fn scan_bounded(&self, from: &[u8], until: &[u8], count: u64) -> CliResult<ScanOutcome> {
        let keys = self.keyspace.range(from..until).map(|guard| {
            guard
                .into_inner()
                .map(|(key, _value)| key)
                .map_err(peer_error)
        });
        read_scan(from, keys, count)
    }

    /// Seals the active memtable (fjall queues it for its flush workers) and waits until no sealed
    /// memtable is left, i.e. every write is in a table file. fjall's own
    /// `rotate_memtable_and_wait` waits without a bound; this one gives up after
    /// [`FLUSH_TIMEOUT`] and stops early if fjall reports a failed background write.
    fn flush(&self) -> CliResult<()> {
        self.keyspace.rotate_memtable().map_err(peer_error)?;
        let start = Instant::now();
        while !self.flushed() {
            self.check_healthy()?;
            if start.elapsed() > FLUSH_TIMEOUT {
                return Err(peer_error(format!(
                    "memtables not flushed after {} s",
                    FLUSH_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// fjall has no call that waits for compactions, and its workers only compact when a flush
    /// asks them to (a bounded number of times per flush), so an idle fjall is not necessarily a
    /// settled one. This runs the keyspace's own compaction strategy (the one its workers run)
    /// on the calling thread until a run leaves the tree unchanged (the strategy picked nothing)
    /// while no flush is pending and no background compaction is running.
    ///
    /// Garbage collection uses the current sequence number less one, the watermark fjall itself
    /// sets when no snapshot is open (`SnapshotTracker::pullup`).
    fn wait_for_compactions(&self) -> CliResult<()> {
        let tree = &self.keyspace.tree;
        let strategy = Arc::clone(&self.keyspace.config.compaction_strategy);
        let start = Instant::now();
        loop {
            self.check_healthy()?;
            if start.elapsed() > SETTLE_TIMEOUT {
                return Err(peer_error(format!(
                    "compactions did not settle within {} s",
                    SETTLE_TIMEOUT.as_secs()
                )));
            }
            if !self.flushed() || self.db.active_compactions() > 0 {
                std::thread::sleep(POLL);
                continue;
            }
            let before = tree.current_version().id();
            let watermark = self.db.snapshot().seqno().saturating_sub(1);
            tree.compact(strategy.clone(), watermark)
                .map_err(peer_error)?;
            if tree.current_version().id() == before
                && self.flushed()
                && self.db.active_compactions() == 0
            {
                return Ok(());
            }
        }
    }

    /// Flushes, settles, then runs fjall's major compaction (`Keyspace::major_compact`, on the
    /// calling thread): every table is merged into one sorted run in the last level, cut at
    /// fjall's fixed 64 MB tables, with fjall's own garbage-collection watermark.
    fn compact_all(&self) -> CliResult<()> {
        self.flush()?;
        self.wait_for_compactions()?;
        self.keyspace.major_compact().map_err(peer_error)?;
        self.wait_for_compactions()
    }

    fn counters(&self) -> EngineCounters {
        let user = self
            .user_write_bytes
            .load(Ordering::Relaxed)
            .saturating_sub(self.user_write_baseline.load(Ordering::Relaxed));
        let baseline = *self
            .counts_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let counts = FjallCounts::read(&self.keyspace).since(baseline);
        EngineCounters {
            data_block_reads: Some(counts.data_block_reads),
            index_block_reads: Some(counts.index_block_reads),
            filter_block_reads: Some(counts.filter_block_reads),
            // fjall's metrics count blocks, not bytes.
            read_bytes: None,
            // Probes = negatives + false positives + true positives, and fjall does not count
            // the true positives (`Table::get` counts a query only when the filter rejects the
            // key or the table misses it; lsm-tree issue #246). The adapter cannot count them
            // either: a lookup's result does not say whether a table or a memtable served it.
            filter_probes: None,
            filter_false_positives: Some(counts.filter_false_positives()),
            // fjall does not attribute data-block reads to the lookups that missed the table.
            unnecessary_data_reads: None,
            unnecessary_data_reads_max: None,
            user_write_bytes: Some(user),
            // fjall does not count the bytes its flushes and compactions write.
            table_write_bytes: None,
            wal_write_bytes: None,
            write_causes: None,
            // fjall never skips a filter.
            filter_skips: None,
            last_level_filter_probes: None,
            last_level_filter_skips: None,
            // fjall has no range filters.
            range_filter_probes: None,
            range_filter_negatives: None,
            seek_runs: None,
            data_block_reads_by_level: None,
            cache_hits: None,
            block_read_micros: None,
            scan_readahead_reads: None,
            scan_readahead_blocks: None,
            // fjall sleeps writers (10 ms while level 0 is over its limit, 100 ms while too many
            // sealed memtables wait) but counts neither.
            write_stalls: None,
            write_stall_micros: None,
            compaction_micros: None,
            write_slowdowns: None,
            write_stops: None,
            // No filter is rebuilt outside a compaction.
            filter_rebuilds: None,
            filter_rebuild_bytes: None,
            // fjall's metrics do not count compressed or uncompressed bytes.
            compression: None,
        }
    }

    fn reset_counters(&self) {
        *self
            .counts_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = FjallCounts::read(&self.keyspace);
        self.user_write_baseline.store(
            self.user_write_bytes.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }

    fn shape(&self) -> TreeShape {
        let version = self.keyspace.tree.current_version();
        let mut levels = Vec::new();
        let mut filter_bits = 0u64;
        let mut entries = 0u64;
        for (index, level) in version.iter_levels().enumerate() {
            if level.is_empty() {
                continue;
            }
            let (mut level_entries, mut level_filter_bits) = (0u64, 0u64);
            for table in level.iter().flat_map(|run| run.iter()) {
                level_entries += table.metadata.item_count;
                level_filter_bits += u64::from(table.filter_size()) * 8;
            }
            entries += level_entries;
            filter_bits += level_filter_bits;
            levels.push(LevelShape {
                level: index,
                runs: level.run_count(),
                files: level.table_count(),
                entries: Some(level_entries),
                bytes: level.size(),
                bits_per_key: (level_entries > 0)
                    .then(|| level_filter_bits as f64 / level_entries as f64),
            });
        }
        TreeShape {
            levels,
            table_bytes: self.keyspace.disk_space(),
            memtable_bytes: Some(self.db.write_buffer_size()),
            avg_bits_per_key: (entries > 0).then(|| filter_bits as f64 / entries as f64),
            effective_bits_per_key: None,
            bits_per_key_cap: None,
            // fjall gives every table the configured bits per key; it has no budget of its own.
            bits_per_key_budget: None,
            filter_bytes_on_disk: Some(filter_bits / 8),
            filter_bytes_in_use: None,
            predicted_lookup_io: None,
            compaction_state: None,
            design: None,
            range_filter_bytes: None,
            top_index: None,
            pinned_bytes: None,
            access_statistics_bytes: None,
            probe_times: None,
        }
    }

    /// Hands the journal to the OS and fsyncs it, then drops the keyspace and the database
    /// (which stops fjall's workers). Memtables are not flushed: the journal holds them.
    fn close(self: Box<Self>) -> CliResult<()> {
        self.db.persist(PersistMode::SyncAll).map_err(peer_error)?;
        let FjallEngine { keyspace, db, .. } = *self;
        drop(keyspace);
        drop(db);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::engine::conformance::config;

    fn fill(engine: &FjallEngine, keys: u32) {
        for i in 0..keys {
            engine
                .put(format!("key{i:06}").as_bytes(), &[b'v'; 100])
                .expect("put");
        }
    }

    #[test]
    fn fjall_settles_to_what_its_strategy_wants() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = FjallEngine::open(dir.path(), &config()).expect("open");
        fill(&engine, 20_000);
        engine.flush().expect("flush");
        assert_eq!(engine.keyspace.sealed_memtable_count(), 0);
        engine.wait_for_compactions().expect("settle");
        let shape = engine.shape();
        let level0 = shape
            .levels
            .iter()
            .find(|l| l.level == 0)
            .map_or(0, |l| l.files);
        assert!(level0 < usize::from(L0_THRESHOLD), "{shape:?}");
        let entries: u64 = shape.levels.iter().filter_map(|l| l.entries).sum();
        assert_eq!(entries, 20_000, "{shape:?}");
        assert_eq!(
            shape.table_bytes,
            shape.levels.iter().map(|l| l.bytes).sum::<u64>()
        );
        let bits = shape.avg_bits_per_key.expect("bits per key");
        assert!((10.0..11.0).contains(&bits), "{shape:?}");
        // Settled: a second wait changes nothing.
        let before = engine.keyspace.tree.current_version().id();
        engine.wait_for_compactions().expect("settle again");
        assert_eq!(engine.keyspace.tree.current_version().id(), before);
        Box::new(engine).close().expect("close");
    }

    #[test]
    fn fjall_counts_user_bytes_since_the_reset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = FjallEngine::open(dir.path(), &config()).expect("open");
        engine.put(b"a", b"bc").expect("put");
        assert_eq!(engine.counters().user_write_bytes, Some(3));
        engine.reset_counters();
        engine.delete(b"a").expect("delete");
        engine
            .write_batch(&[
                BatchOp::Put(b"de".to_vec(), b"f".to_vec()),
                BatchOp::Delete(b"g".to_vec()),
            ])
            .expect("batch");
        let counters = engine.counters();
        assert_eq!(counters.user_write_bytes, Some(1 + 3 + 1));
        assert_eq!(counters.table_write_bytes, None);
        assert_eq!(counters.write_amplification(), None);
        // Nothing was read from a table since the reset; probes are never known.
        assert_eq!(counters.data_block_reads, Some(0));
        assert_eq!(counters.filter_false_positives, Some(0));
        assert_eq!(counters.filter_probes, None);
        assert_eq!(counters.unnecessary_data_reads, None);
    }

    #[test]
    fn compression_maps_levels_bottommost_and_zstd() {
        let (policy, note) = compression_policy(&"none,lz4,zstd-bottom".parse().expect("policy"));
        assert_eq!(
            &*policy,
            &[
                CompressionType::None,
                CompressionType::Lz4,
                CompressionType::Lz4,
                CompressionType::Lz4,
                CompressionType::Lz4,
                CompressionType::Lz4,
                CompressionType::Lz4,
            ]
        );
        assert!(note.contains("ZSTD NOT AVAILABLE"), "{note}");
        assert!(note.contains("L6"), "{note}");
        let (policy, note) = compression_policy(&strata::CompressionPolicy::none());
        assert!(policy.iter().all(|&c| c == CompressionType::None));
        assert!(!note.contains("NOT"), "{note}");
    }

    #[test]
    fn fjall_compresses_as_configured() {
        crate::bench::engine::conformance::exercise_compressed_with(
            crate::bench::engine::EngineKind::Fjall,
            "lz4",
        );
    }

    #[test]
    fn fjall_counts_block_reads_and_filter_outcomes_of_lookups() {
        const KEYS: u32 = 20_000;
        let dir = tempfile::tempdir().expect("tempdir");
        // A 64 KiB cache over about 2 MiB of tables.
        let tiny_cache = EngineConfig {
            cache_bytes: 64 << 10,
            ..config()
        };
        let engine = FjallEngine::open(dir.path(), &tiny_cache).expect("open");
        fill(&engine, KEYS);
        engine.flush().expect("flush");
        engine.wait_for_compactions().expect("settle");
        let metrics = engine.keyspace.metrics();

        // Keys that are there: their blocks are read from the table files.
        engine.reset_counters();
        let data_loads = metrics.data_block_load_count();
        for i in (0..KEYS).step_by(7) {
            let key = format!("key{i:06}");
            assert!(engine.get(key.as_bytes()).expect("get").is_some(), "{key}");
        }
        let data_loads = (metrics.data_block_load_count() - data_loads) as u64;
        let hits = engine.counters();
        let data_reads = hits.data_block_reads.expect("data block reads");
        assert!(data_reads > 0, "{hits:?}");
        assert!(data_reads <= data_loads, "{hits:?}, {data_loads} loads");
        assert!(
            hits.index_block_reads.expect("index block reads") > 0,
            "{hits:?}"
        );
        assert!(
            hits.filter_block_reads.expect("filter block reads") > 0,
            "{hits:?}"
        );
        assert_eq!(hits.filter_probes, None);

        // Keys that are not there, each just after a stored key: every table whose key range
        // covers one (one per run at most) is probed, and each probe is a negative or a false
        // positive.
        let absent: Vec<Vec<u8>> = (0..KEYS - 1)
            .step_by(3)
            .map(|i| format!("key{i:06}x").into_bytes())
            .collect();
        let version = engine.keyspace.tree.current_version();
        let probes: usize = absent
            .iter()
            .map(|key| {
                version
                    .iter_levels()
                    .flat_map(|level| level.iter())
                    .filter(|run| run.get_for_key(key).is_some())
                    .count()
            })
            .sum();
        // (A key between two tables of a run is not probed there.)
        assert!(probes > absent.len() / 2, "{probes} probes");
        engine.reset_counters();
        let (queries, negatives) = (metrics.filter_queries(), metrics.io_skipped_by_filter());
        let (data_loads, filter_loads) = (
            metrics.data_block_load_count(),
            metrics.filter_block_load_count(),
        );
        for key in &absent {
            assert_eq!(engine.get(key).expect("get"), None);
        }
        let queries = metrics.filter_queries() - queries;
        let negatives = metrics.io_skipped_by_filter() - negatives;
        let data_loads = (metrics.data_block_load_count() - data_loads) as u64;
        let filter_loads = metrics.filter_block_load_count() - filter_loads;
        let misses = engine.counters();
        // Every probe was counted, as a negative or a false positive, and loaded the filter.
        assert_eq!(queries, probes);
        assert_eq!(filter_loads, probes);
        let false_positives = misses.filter_false_positives.expect("false positives");
        assert_eq!(false_positives, (probes - negatives) as u64, "{misses:?}");
        // A false positive costs one data-block load (the block the key would be in); a
        // negative costs none.
        assert_eq!(data_loads, false_positives, "{misses:?}");
        let data_reads = misses.data_block_reads.expect("data block reads");
        assert!(data_reads <= false_positives, "{misses:?}");
        // 10 bits per key: about 0.8 % false positives.
        assert!(false_positives > 0, "{misses:?}, {probes} probes");
        assert!(
            (false_positives as f64) < 0.03 * probes as f64,
            "{misses:?}, {probes} probes"
        );
        assert_eq!(misses.filter_probes, None);
        Box::new(engine).close().expect("close");
    }

    #[test]
    fn fjall_close_keeps_unflushed_writes_in_the_journal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = FjallEngine::open(dir.path(), &config()).expect("open");
        engine.put(b"kept", b"value").expect("put");
        Box::new(engine).close().expect("close");
        let engine = FjallEngine::open(dir.path(), &config()).expect("reopen");
        assert_eq!(
            engine.get(b"kept").expect("get").as_deref(),
            Some(&b"value"[..])
        );
    }

    #[test]
    fn fjall_says_what_it_cannot_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut wanted = config();
        wanted.compaction = CompactionKind::Tiering;
        wanted.direct_reads = true;
        let engine = FjallEngine::open(dir.path(), &wanted).expect("open");
        let settings = engine.settings().join("\n");
        assert!(settings.contains("TIERING NOT SUPPORTED"), "{settings}");
        assert!(settings.contains("NOT APPLIED"), "{settings}");
        assert!(FjallEngine::open(
            tempfile::tempdir().expect("tempdir").path(),
            &EngineConfig {
                block_bytes: 100,
                ..config()
            }
        )
        .is_err());
    }
}
