//! The engines a benchmark drives: one small trait, implemented for Strata and (with the `peers`
//! feature) for RocksDB and fjall, so the same workload runs through each and is counted the same
//! way.
//!
//! Every engine is configured from one [`EngineConfig`]; each implementation says how it mapped
//! the settings ([`Engine::settings`]) and where it could not match them, and the report prints
//! that mapping. I/O counters come from each engine's own statistics: block-cache misses by block
//! kind, filter probes and false positives. Where an engine cannot say, the figure is `None`
//! (JSON `null`). The peers sit behind the cargo features `peer-rocksdb` and `peer-fjall`
//! (`peers` = both).

#[cfg(feature = "peer-fjall")]
mod fjall_engine;
#[cfg(feature = "peer-rocksdb")]
mod rocksdb_engine;
#[cfg(feature = "peer-rocksdb")]
mod rocksdb_perf;
// Arithmetic only; used by the RocksDB engine, tested in every build.
#[cfg_attr(not(feature = "peer-rocksdb"), allow(dead_code))]
mod rocksdb_reads;
// Parsing only; used by the RocksDB engine, tested in every build.
#[cfg_attr(not(feature = "peer-rocksdb"), allow(dead_code))]
mod rocksdb_events;
mod strata_engine;

pub use strata_engine::StrataEngine;

use std::path::Path;

use serde::Serialize;

use super::CompactionKind;
use crate::error::CliResult;

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Strata, this project.
    Strata,
    /// RocksDB through the `rocksdb` crate (needs `--features peers`).
    Rocksdb,
    /// RocksDB with its Ribbon filter (`Standard128Ribbon`) instead of Bloom, at the same filter
    /// memory per key (the Bloom-equivalent bits per key RocksDB takes are derived from it and
    /// printed; needs `--features peers`).
    #[serde(rename = "rocksdb-ribbon")]
    RocksdbRibbon,
    /// fjall through the `fjall` crate (needs `--features peers`).
    Fjall,
}

impl EngineKind {
    /// The name in reports and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Strata => "strata",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::RocksdbRibbon => "rocksdb-ribbon",
            EngineKind::Fjall => "fjall",
        }
    }
}

/// The settings every engine is configured from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineConfig {
    /// Data block size in bytes.
    pub block_bytes: usize,
    /// Bloom filter bits per key (the budget, for allocating policies).
    pub bits_per_key: f64,
    /// Block cache capacity in bytes.
    pub cache_bytes: u64,
    /// Memtable size in bytes.
    pub write_buffer_bytes: u64,
    /// Size at which compactions cut output files.
    pub target_file_bytes: u64,
    /// Size ratio between levels.
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (Strata's Garnering only).
    pub garnering_c: f64,
    /// EcoTune's settings (Strata's EcoTune only).
    pub ecotune: strata::compaction::ecotune::EcoTuneSettings,
    /// Merge policy.
    pub compaction: CompactionKind,
    /// Read table files with O_DIRECT.
    pub direct_reads: bool,
    /// Largest read-ahead of a scan (Strata's `Options::scan_readahead_max_bytes`).
    pub scan_readahead_bytes: u64,
    /// Keep index and filter blocks pinned in memory rather than in the block cache.
    pub pin_index_filter: bool,
    /// How the peers lay out and cache index and filter blocks (Strata ignores it).
    pub peer_config: super::PeerConfig,
    /// Strata's index block restart interval (`None`: Strata's default).
    pub index_restart_interval: Option<usize>,
    /// Compaction workers (`None`: Strata's default); RocksDB gets as many compaction threads.
    pub max_background_compactions: Option<usize>,
    /// Strata's partitioning threshold (`None`: Strata's default; `u64::MAX`: never).
    pub partition_metadata_above_bytes: Option<u64>,
    /// Strata's index partition size (`None`: Strata's default).
    pub metadata_block_bytes: Option<u64>,
    /// A cap in bytes on Strata's filters in use (elastic filters only; peers ignore it).
    pub filter_budget_bytes: Option<u64>,
    /// Strata's filter rebuild rate limit (`Options::filter_rebuild_bytes_per_sec`; `None`:
    /// Strata's default).
    pub filter_rebuild_rate: Option<u64>,
    /// Elastic filters' modules on disk per new file (`None`: the default).
    pub elastic_disk_modules: Option<usize>,
    /// The family of Strata's filters (RocksDB's family is the engine kind's; fjall's is Bloom).
    #[serde(serialize_with = "crate::bench::serialize_filter_family")]
    pub filter_family: strata::FilterFamilies,
    /// Strata's range filters (`Options::range_filter_bits`; 0 = none).
    pub range_filter_bits: u32,
    /// Strata's auto-tune (`Options::auto_tune`; `None`: off).
    pub auto_tune: Option<strata::model::auto_tune::AutoTuneOptions>,
    /// Keep Merlin's access statistics in Strata (DESIGN.md §4).
    pub access_statistics: bool,
    /// Record one lookup in this many in them.
    pub access_sample_every: u32,
    /// Weight of their recent window.
    pub access_recent_weight: f64,
    /// Strata's filter-allocation policy (peers only have uniform filters).
    pub filter_policy: super::FilterAllocatorKind,
    /// Entries the benchmark loads (`--num`), for allocators that predict the tree (Monkey).
    pub expected_entries: u64,
    /// Bytes of one key and value.
    pub entry_bytes: u64,
    /// Block compression by level, with a bottommost choice (`--compression`).
    #[serde(serialize_with = "super::serialize_compression")]
    pub compression: strata::CompressionPolicy,
}

/// One write of a batch.
#[allow(
    dead_code,
    reason = "batches and deletes are driven by the YCSB and Mnemosyne workloads"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Store a value.
    Put(Vec<u8>, Vec<u8>),
    /// Remove a key.
    Delete(Vec<u8>),
}

/// What a seek-and-scan returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanOutcome {
    /// Entries read (the seeked entry included).
    pub entries: u64,
    /// True if the first entry's key equals the seek key.
    pub first_matched: bool,
}

/// Reads up to `count` keys of an engine's iterator, positioned at `from`, into a
/// [`ScanOutcome`]; the first error ends the scan.
pub fn read_scan<K: AsRef<[u8]>>(
    from: &[u8],
    keys: impl Iterator<Item = CliResult<K>>,
    count: u64,
) -> CliResult<ScanOutcome> {
    let mut outcome = ScanOutcome::default();
    for key in keys.take(usize::try_from(count).unwrap_or(usize::MAX)) {
        let key = key?;
        if outcome.entries == 0 {
            outcome.first_matched = key.as_ref() == from;
        }
        outcome.entries += 1;
    }
    Ok(outcome)
}

/// Cumulative counters since the last reset. `None`: the engine cannot say.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EngineCounters {
    /// Data blocks read from the file system (block-cache misses).
    pub data_block_reads: Option<u64>,
    /// Index blocks read from the file system.
    pub index_block_reads: Option<u64>,
    /// Filter blocks read from the file system.
    pub filter_block_reads: Option<u64>,
    /// Bytes of table blocks read from the file system by the benchmark's own operations (Strata's
    /// counters; RocksDB's perf context on the benchmark thread; fjall has no such counter).
    pub read_bytes: Option<u64>,
    /// Filter probes.
    pub filter_probes: Option<u64>,
    /// Probes of files with a filter whose filter the allocator skipped (Strata).
    pub filter_skips: Option<u64>,
    /// Filter probes on the deepest non-empty level (Strata).
    pub last_level_filter_probes: Option<u64>,
    /// Files a bounded scan asked its range filter about (Strata with range filters).
    pub range_filter_probes: Option<u64>,
    /// Of those, the files the range filter ruled out (nothing of them read).
    pub range_filter_negatives: Option<u64>,
    /// Runs iterator seeks positioned themselves in, over every level (Strata).
    pub seek_runs: Option<u64>,
    /// Data blocks read from the file system, by level (Strata; deeper levels summed into the
    /// last slot).
    pub data_block_reads_by_level: Option<[u64; CAUSE_LEVELS]>,
    /// Block-cache hits by kind: data, index, filter (Strata).
    pub cache_hits: Option<IoByKind>,
    /// Elapsed time lookups and scans spent reading blocks from the file system, decompression
    /// included, microseconds (Strata): the wait on the device that CPU time does not show.
    pub block_read_micros: Option<u64>,
    /// Scans' read-ahead (Strata): device reads that filled a read-ahead window (each also one
    /// of `data_block_reads`), and data blocks taken from a window without a device read.
    pub scan_readahead_reads: Option<u64>,
    pub scan_readahead_blocks: Option<u64>,
    /// Skipped filter probes on the deepest non-empty level (Strata).
    pub last_level_filter_skips: Option<u64>,
    /// Probes a filter let through although the file did not hold the key.
    pub filter_false_positives: Option<u64>,
    /// Data blocks read from the file system by lookups that did not find the key there.
    pub unnecessary_data_reads: Option<u64>,
    /// Where the engine's count of `unnecessary_data_reads` is a range, its upper end (that
    /// count is then the lower end): RocksDB, whose lookups that found their key after reading
    /// data blocks both from the device and from the cache do not say which one held the key.
    /// `None` where the count is exact or absent.
    pub unnecessary_data_reads_max: Option<u64>,
    /// Bytes of keys and values written by the user.
    pub user_write_bytes: Option<u64>,
    /// Bytes written to table files: flushes, compactions and (Strata) filter rebuilds. The WAL
    /// is not counted (in either engine's figure).
    pub table_write_bytes: Option<u64>,
    /// Bytes of records written to the WAL (Strata's `wal_write_bytes`, RocksDB's
    /// `rocksdb.wal.bytes`; neither counts the log's block framing).
    pub wal_write_bytes: Option<u64>,
    /// `table_write_bytes` by what wrote them, where the engine says.
    pub write_causes: Option<WriteCauses>,
    /// Writes (or write groups) the engine delayed or stopped to let flushes and compactions
    /// catch up (Strata: slowdowns + stops; RocksDB: the `rocksdb.db.write.stall` histogram's
    /// count, one per delayed write group).
    pub write_stalls: Option<u64>,
    /// Of `write_stalls`, the delays (Strata: 1 ms each while level 0 is at its slowdown
    /// trigger) and the stops (until a flush or compaction finishes); `None` where the engine
    /// does not tell them apart.
    pub write_slowdowns: Option<u64>,
    pub write_stops: Option<u64>,
    /// Time writers spent in those stalls, microseconds (RocksDB: `rocksdb.stall.micros`).
    pub write_stall_micros: Option<u64>,
    /// Wall-clock time compaction jobs ran, summed over concurrent jobs, microseconds (Strata's
    /// `compaction_micros`; `None` for the peers).
    pub compaction_micros: Option<u64>,
    /// What block compression did in flushes and compactions (Strata and RocksDB; fjall does not
    /// say).
    pub compression: Option<CompressionCounters>,
    /// Files rewritten to rebuild their filter, and the bytes those rewrites read plus wrote
    /// (Strata's elastic filters, `Options::filter_rebuild_bytes_per_sec`; the peers have no
    /// such thing).
    pub filter_rebuilds: Option<u64>,
    pub filter_rebuild_bytes: Option<u64>,
}

/// A count by block kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoByKind {
    pub data: u64,
    pub index: u64,
    pub filter: u64,
}

/// Levels [`WriteCauses::merges_into`] tells apart (RocksDB's 7, Strata's deeper levels summed
/// into the last).
pub const CAUSE_LEVELS: usize = 8;

/// Bytes written to table files, by what wrote them (Strata's `IoStats` counters; RocksDB's
/// compaction events in its info log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct WriteCauses {
    /// Flushes of memtables to level 0.
    pub flush: u64,
    /// Merges of level-0 files into one level-0 output (RocksDB's intra-L0 compactions).
    pub level0_merges: u64,
    /// The policy's merges into each level (index = output level; index 0 is unused).
    pub merges_into: [u64; CAUSE_LEVELS],
    /// Full compactions (Strata's `Db::compact`, RocksDB's manual `CompactRange`).
    pub full: u64,
    /// Files rewritten to rebuild their filter (Strata's elastic filters).
    pub filter_rebuilds: u64,
    /// Files moved to another level without being rewritten (no bytes written).
    pub trivial_moves: u64,
}

impl WriteCauses {
    /// Every byte counted.
    pub fn total(&self) -> u64 {
        self.flush
            + self.level0_merges
            + self.merges_into.iter().sum::<u64>()
            + self.full
            + self.filter_rebuilds
    }

    /// `(cause, bytes)` of the causes that wrote something, in a fixed order: `flush`,
    /// `L0->L0`, `->L1` ..., `full`, `rebuild`.
    pub fn named(&self) -> Vec<(String, u64)> {
        let mut causes = vec![
            ("flush".to_string(), self.flush),
            ("L0->L0".to_string(), self.level0_merges),
        ];
        causes.extend(
            self.merges_into
                .iter()
                .enumerate()
                .skip(1)
                .map(|(level, &bytes)| (format!("->L{level}"), bytes)),
        );
        causes.push(("full".to_string(), self.full));
        causes.push(("rebuild".to_string(), self.filter_rebuilds));
        causes.retain(|(_, bytes)| *bytes > 0);
        causes
    }
}

/// What block compression did, from the engine's own counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompressionCounters {
    /// Uncompressed bytes of the blocks flushes and compactions wrote through the compressor.
    pub uncompressed_bytes: u64,
    /// The same blocks' bytes as stored.
    pub stored_bytes: u64,
    /// Time compressing (elapsed around each call), nanoseconds (`None`: the engine does not
    /// time it).
    pub compress_nanos: Option<u64>,
    /// Time decompressing (block-cache misses and compaction inputs), nanoseconds.
    pub decompress_nanos: Option<u64>,
    /// Blocks decompressed.
    pub blocks_decompressed: u64,
}

impl EngineCounters {
    /// (flush + compaction bytes) / user bytes, when both are known and the user wrote.
    pub fn write_amplification(&self) -> Option<f64> {
        match (self.table_write_bytes, self.user_write_bytes) {
            (Some(_), Some(0)) => Some(0.0),
            (Some(table), Some(user)) => Some(table as f64 / user as f64),
            _ => None,
        }
    }
}

/// One level of an engine's tree.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LevelShape {
    /// Level index (0 = flushed runs).
    pub level: usize,
    /// Sorted runs.
    pub runs: usize,
    /// Table files.
    pub files: usize,
    /// Entries, where known.
    pub entries: Option<u64>,
    /// Bytes of table files.
    pub bytes: u64,
    /// Mean filter bits per key, where known.
    pub bits_per_key: Option<f64>,
}

/// The tree an engine is reading from.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TreeShape {
    /// Non-empty levels, top down.
    pub levels: Vec<LevelShape>,
    /// Bytes of live table files.
    pub table_bytes: u64,
    /// Bytes in memtables, where known.
    pub memtable_bytes: Option<u64>,
    /// Entry-weighted mean bits per key of the live filters, where known.
    pub avg_bits_per_key: Option<f64>,
    /// The filter budget in bits per key, where the engine has one.
    pub bits_per_key_budget: Option<f64>,
    /// The mean with filters the allocator skips counted as 0 bits (Strata), where known.
    pub effective_bits_per_key: Option<f64>,
    /// The budget guard's cap in bits per key (Strata's Mnemosyne policies), where there is one.
    pub bits_per_key_cap: Option<f64>,
    /// Bytes of every live filter on disk, where known: with elastic filters more than is in use
    /// (the disk overhead of keeping modules beyond those in use).
    pub filter_bytes_on_disk: Option<u64>,
    /// Bytes of the filters lookups use (Strata), where known.
    pub filter_bytes_in_use: Option<u64>,
    /// What the cost model predicts a point lookup costs on this tree (Strata's per-file form,
    /// `strata::model::tree`), where the engine has the model and the bench asked for it
    /// ([`Engine::predicted_lookup_io`]): [`Engine::shape`] leaves it out, as the model takes
    /// far longer than the rest of the shape and the bench reads the shape while a phase runs.
    pub predicted_lookup_io: Option<PredictedLookupIo>,
    /// The compaction policy's state in words (Strata's EcoTune: its round), where shown.
    pub compaction_state: Option<String>,
    /// The merge policy in force and, with auto-tune, its decisions so far (Strata), where
    /// shown: what a phase of a shifting workload ran under.
    pub design: Option<String>,
    /// Memory of the range filters of open table files (Strata), where known.
    pub range_filter_bytes: Option<u64>,
    /// EcoTune's top-level index: `(keys, bytes)` (Strata's `Stats::top_index_entries` and
    /// `top_index_bytes`), where kept.
    pub top_index: Option<(u64, u64)>,
    /// Index and filter blocks held outside the block cache (Strata's pinned metadata:
    /// `--pin-index-filter`, level 0's), where known: with elastic filters only the modules in
    /// use stay pinned, so this follows the budget, not the bits on disk.
    pub pinned_bytes: Option<u64>,
    /// Memory of Merlin's per-file access statistics (Strata's `Stats::access_statistics_bytes`;
    /// 0 when it keeps none), where known.
    pub access_statistics_bytes: Option<u64>,
    /// Mean time of the probes point lookups timed, by what they read past the filter, and
    /// what a false positive on a cached block costs as a share of a device read (Strata's
    /// sample, `Stats::probe_times`; pooled over the live files since each was first probed).
    pub probe_times: Option<ProbeTimes>,
}

/// Timed probes as Strata's lookups sample them (`Stats::probe_times`), in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ProbeTimes {
    /// A probe the filter (or index) answered without a data block.
    pub rejected_us: Option<f64>,
    /// A probe that read a data block the block cache held.
    pub cached_block_us: Option<f64>,
    /// A probe that read its data block from the device.
    pub device_block_us: Option<f64>,
    /// `(cached - rejected) / (device - rejected)`, once enough of each were timed: what
    /// elastic filters price a cached false positive at (`alloc::cache_model`).
    pub cached_false_positive_cost: Option<f64>,
}

/// Block reads per point lookup, as the model predicts them for a tree.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PredictedLookupIo {
    /// Data blocks a lookup of a missing key probes (`R`), every one taken as a device read
    /// (the model without the block cache).
    pub zero_result: f64,
    /// The same for a lookup of an existing key (`V`).
    pub existing: f64,
    /// Device reads of a lookup of a missing key through the block cache, by kind.
    pub zero_result_device: PredictedBlockReads,
    /// The same for a lookup of an existing key.
    pub existing_device: PredictedBlockReads,
}

/// Table bytes written per user byte, as a model predicts them for a write phase.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PredictedWriteAmp {
    /// The engine's merge policy replayed on a synthetic tree over the phase's stream.
    pub replay: f64,
    /// Monkey's closed form on the settled tree's levels, where the policy has one.
    pub closed_form: Option<f64>,
    /// Disk levels the closed form counted.
    pub levels: usize,
}

/// Device reads per operation by block kind, as a model predicts them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PredictedBlockReads {
    /// Data blocks.
    pub data: f64,
    /// Index blocks.
    pub index: f64,
    /// Filter blocks.
    pub filter: f64,
}

impl TreeShape {
    /// Sorted runs in the tree.
    pub fn runs(&self) -> usize {
        self.levels.iter().map(|l| l.runs).sum()
    }
}

/// A key-value engine under benchmark. Object-safe; the harness holds a `Box<dyn Engine>` and
/// shares it with a background writer thread (`readwhilewriting`), hence `Sync`.
pub trait Engine: Sync {
    /// The engine's name (`strata`, `rocksdb`, `fjall`).
    fn name(&self) -> &'static str;
    /// The engine's version string.
    fn version(&self) -> String;
    /// How the [`EngineConfig`] was mapped onto this engine's own settings, one line each, with
    /// any setting that could not be matched said so.
    fn settings(&self) -> Vec<String>;
    /// Stores a value (WAL on, no fsync).
    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()>;
    /// Reads a value.
    fn get(&self, key: &[u8]) -> CliResult<Option<Vec<u8>>>;
    /// Removes a key.
    #[allow(dead_code, reason = "driven by the YCSB and Mnemosyne workloads")]
    fn delete(&self, key: &[u8]) -> CliResult<()>;
    /// Applies a batch atomically.
    #[allow(dead_code, reason = "driven by the YCSB and Mnemosyne workloads")]
    fn write_batch(&self, ops: &[BatchOp]) -> CliResult<()>;
    /// Seeks to `from` and reads up to `count` entries.
    fn scan(&self, from: &[u8], count: u64) -> CliResult<ScanOutcome>;
    /// Reads up to `count` entries of the closed range `[from, until)`: the engine is told the
    /// upper bound before it seeks (Strata: `Db::range`, which lets range filters leave runs
    /// out; RocksDB: `iterate_upper_bound`; fjall: `range`).
    fn scan_bounded(&self, from: &[u8], until: &[u8], count: u64) -> CliResult<ScanOutcome>;
    /// Flushes memtables to table files.
    fn flush(&self) -> CliResult<()>;
    /// Waits until background compactions are done.
    fn wait_for_compactions(&self) -> CliResult<()>;
    /// Compacts the whole tree (level 0 included) and waits for it (`--settle-l0`).
    fn compact_all(&self) -> CliResult<()>;
    /// Counters since the last reset.
    fn counters(&self) -> EngineCounters;
    /// Zeroes the counters.
    fn reset_counters(&self);
    /// The tree's current shape.
    fn shape(&self) -> TreeShape;
    /// Device reads per short scan of `entries` entries (`bounded`: a range with both ends
    /// set) the engine's cost model predicts on its current tree, where it has one (Strata's
    /// `Db::predicted_seek_reads`).
    fn predicted_seek_reads(&self, _entries: u64, _bounded: bool) -> Option<PredictedBlockReads> {
        None
    }
    /// What the engine's cost model predicts a point lookup costs on its current tree, where it
    /// has one (Strata's `Db::predicted_lookup_cost` and `Db::predicted_device_reads`). It runs
    /// the model over every live file and the block cache: tens to hundreds of milliseconds on
    /// a tree of tens of files, so the bench keeps it out of a phase's time.
    fn predicted_lookup_io(&self) -> Option<PredictedLookupIo> {
        None
    }
    /// Device reads per point lookup the engine's cost model predicts on its current tree for
    /// lookup streams whose keys recur (`(missing, existing)`), given what the streams have been
    /// through (`history`), where it has one (Strata's `Db::predicted_stream_device_reads`).
    fn predicted_stream_lookup_reads(
        &self,
        _streams: &strata::model::tree::LookupStreams,
        _history: Option<&strata::model::tree::StreamHistory>,
    ) -> Option<(PredictedBlockReads, PredictedBlockReads)> {
        None
    }
    /// The history of a stream of lookups that begins now, where the engine's cost model reads
    /// one (Strata's `Db::stream_history`).
    fn stream_history(&self) -> Option<strata::model::tree::StreamHistory> {
        None
    }
    /// Bits per key of each live file's filter that lookups use now, by file number, where the
    /// engine reports them (Strata's `Db::filter_bits_in_use`).
    fn filter_bits_in_use(&self) -> Option<std::collections::BTreeMap<u64, f64>> {
        None
    }
    /// Table bytes written per user byte the engine's cost model predicts for the write phase
    /// that just settled — `entries` entries of `user_bytes_per_entry` bytes, every one a new key
    /// when `key_space` is `None`, in the flushes the engine counted since its counters were
    /// zeroed — where it has one (Strata's `Db::predicted_write_amplification`).
    fn predicted_write_amplification(
        &self,
        _entries: u64,
        _key_space: Option<u64>,
        _user_bytes_per_entry: f64,
    ) -> Option<PredictedWriteAmp> {
        None
    }
    /// Closes the engine (flushing nothing it does not have to).
    fn close(self: Box<Self>) -> CliResult<()>;
}

/// Opens `kind` in `dir` with `config`.
pub fn open(kind: EngineKind, dir: &Path, config: &EngineConfig) -> CliResult<Box<dyn Engine>> {
    match kind {
        EngineKind::Strata => Ok(Box::new(StrataEngine::open(dir, config)?)),
        #[cfg(feature = "peer-rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocksdb_engine::RocksDbEngine::open(
            dir,
            config,
            rocksdb_engine::RocksDbFilter::Bloom,
        )?)),
        #[cfg(feature = "peer-rocksdb")]
        EngineKind::RocksdbRibbon => Ok(Box::new(rocksdb_engine::RocksDbEngine::open(
            dir,
            config,
            rocksdb_engine::RocksDbFilter::Ribbon,
        )?)),
        #[cfg(feature = "peer-fjall")]
        EngineKind::Fjall => Ok(Box::new(fjall_engine::FjallEngine::open(dir, config)?)),
        #[allow(unreachable_patterns, reason = "reachable when a peer feature is off")]
        _ => Err(crate::error::CliError::InvalidArgument(format!(
            "engine {} needs a build with `--features peers` (see the README)",
            kind.name()
        ))),
    }
}

#[cfg(test)]
pub(crate) mod conformance {
    //! The behaviour every engine must show, run against each engine compiled in.
    use super::*;

    pub(crate) fn config() -> EngineConfig {
        EngineConfig {
            block_bytes: 4096,
            bits_per_key: 10.0,
            cache_bytes: 1 << 20,
            write_buffer_bytes: 64 << 10,
            target_file_bytes: 64 << 20,
            size_ratio: 4.0,
            ecotune: Default::default(),
            garnering_c: crate::policies::DEFAULT_GARNERING_C,
            compaction: CompactionKind::Leveling,
            direct_reads: false,
            scan_readahead_bytes: 256 << 10,
            pin_index_filter: false,
            peer_config: super::super::PeerConfig::StrataLike,
            index_restart_interval: None,
            max_background_compactions: None,
            partition_metadata_above_bytes: None,
            metadata_block_bytes: None,
            filter_budget_bytes: None,
            filter_rebuild_rate: None,
            elastic_disk_modules: None,
            filter_family: strata::FilterFamilies::default(),
            range_filter_bits: 0,
            auto_tune: None,
            access_statistics: false,
            access_sample_every: 1,
            access_recent_weight: 0.75,
            filter_policy: super::super::FilterAllocatorKind::Uniform,
            expected_entries: 3000,
            entry_bytes: 109,
            compression: strata::CompressionPolicy::none(),
        }
    }

    pub(crate) fn exercise(kind: EngineKind) {
        exercise_with(kind, &config());
    }

    /// [`exercise`] with the peers in their expert configuration; their settings say so.
    #[cfg(any(feature = "peer-rocksdb", feature = "peer-fjall"))]
    pub(crate) fn exercise_expert(kind: EngineKind) {
        let expert = EngineConfig {
            peer_config: super::super::PeerConfig::Expert,
            ..config()
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open(kind, dir.path(), &expert).expect("open");
        let settings = engine.settings().join("\n");
        assert!(settings.contains("peer config expert"), "{settings}");
        engine.close().expect("close");
        exercise_with(kind, &expert);
    }

    pub(crate) fn exercise_with(kind: EngineKind, config: &EngineConfig) {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open(kind, dir.path(), config).expect("open");
        assert_eq!(engine.name(), kind.name());
        assert!(!engine.settings().is_empty());
        for i in 0..3000u32 {
            engine
                .put(format!("key{i:06}").as_bytes(), &[b'v'; 100])
                .expect("put");
        }
        engine.delete(b"key000010").expect("delete");
        engine
            .write_batch(&[
                BatchOp::Put(b"key000011".to_vec(), b"batched".to_vec()),
                BatchOp::Delete(b"key000012".to_vec()),
            ])
            .expect("batch");
        engine.flush().expect("flush");
        engine.wait_for_compactions().expect("settle");
        engine.reset_counters();
        assert_eq!(engine.get(b"key000010").expect("get"), None);
        assert_eq!(
            engine.get(b"key000011").expect("get").as_deref(),
            Some(&b"batched"[..])
        );
        assert_eq!(engine.get(b"key000012").expect("get"), None);
        assert_eq!(
            engine.get(b"key000013").expect("get").map(|v| v.len()),
            Some(100)
        );
        assert_eq!(engine.get(b"nope").expect("get"), None);
        // The lookups above read data blocks (the cache was cold for them): the bytes counted
        // are those blocks', not a count of something else (4 KiB blocks of 100-byte values).
        let reads = engine.counters();
        if let (Some(data), Some(bytes)) = (reads.data_block_reads, reads.read_bytes) {
            assert!(data > 0, "{reads:?}");
            assert!(bytes >= data * 1024, "{reads:?}");
        }
        let scan = engine.scan(b"key000009", 4).expect("scan");
        assert_eq!(
            scan,
            ScanOutcome {
                entries: 4,
                first_matched: true
            }
        );
        let scan = engine.scan(b"key0029955", 10).expect("scan");
        assert_eq!(scan.entries, 4, "key002996..key002999");
        assert!(!scan.first_matched);
        let shape = engine.shape();
        assert!(shape.table_bytes > 0, "{shape:?}");
        assert!(!shape.levels.is_empty());
        let counters = engine.counters();
        if let (Some(user), Some(table)) = (counters.user_write_bytes, counters.table_write_bytes) {
            assert_eq!(
                (user, table),
                (0, 0),
                "counters were reset after the writes"
            );
        }
        engine.close().expect("close");
    }

    #[test]
    fn strata_behaves_like_a_key_value_store() {
        exercise(EngineKind::Strata);
    }

    #[test]
    fn strata_compresses_as_configured() {
        exercise_compressed(EngineKind::Strata);
    }

    /// With LZ4 on every level and Zstd at the bottom, compressible values take less table space
    /// than without compression, and everything reads back.
    pub(crate) fn exercise_compressed(kind: EngineKind) {
        exercise_compressed_with(kind, "lz4,zstd-bottom");
    }

    /// [`exercise_compressed`] with `policy`.
    pub(crate) fn exercise_compressed_with(kind: EngineKind, policy: &str) {
        let table_bytes = |policy: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            let config = EngineConfig {
                compression: policy.parse().expect("policy"),
                ..config()
            };
            let engine = open(kind, dir.path(), &config).expect("open");
            let value = [b'x'; 100];
            for i in 0..3000u32 {
                engine
                    .put(format!("key{i:06}").as_bytes(), &value)
                    .expect("put");
            }
            engine.flush().expect("flush");
            engine.wait_for_compactions().expect("settle");
            engine.compact_all().expect("compact");
            for i in (0..3000u32).step_by(97) {
                assert_eq!(
                    engine
                        .get(format!("key{i:06}").as_bytes())
                        .expect("get")
                        .as_deref(),
                    Some(&value[..])
                );
            }
            let bytes = engine.shape().table_bytes;
            engine.close().expect("close");
            bytes
        };
        let raw = table_bytes("none");
        let compressed = table_bytes(policy);
        assert!(
            compressed * 4 < raw,
            "{kind:?}: {compressed} bytes compressed, {raw} raw"
        );
    }

    #[cfg(feature = "peer-rocksdb")]
    #[test]
    fn rocksdb_behaves_like_a_key_value_store() {
        exercise(EngineKind::Rocksdb);
        exercise_expert(EngineKind::Rocksdb);
    }

    /// RocksDB's Ribbon filter at a memory per key: the filters RocksDB's table properties
    /// report hold that memory (within 10%) at 2 and 6 bits per key, and the engine works.
    #[cfg(feature = "peer-rocksdb")]
    #[test]
    fn rocksdb_ribbon_holds_the_filter_memory_asked_for() {
        exercise(EngineKind::RocksdbRibbon);
        for bits in [2.0, 6.0] {
            let config = EngineConfig {
                bits_per_key: bits,
                write_buffer_bytes: 4 << 20,
                ..config()
            };
            let dir = tempfile::tempdir().expect("tempdir");
            let engine = open(EngineKind::RocksdbRibbon, dir.path(), &config).expect("open");
            let settings = engine.settings().join("\n");
            assert!(settings.contains("Bloom-equivalent"), "{settings}");
            for i in 0..20_000u32 {
                engine
                    .put(format!("key{i:08}").as_bytes(), &[b'v'; 20])
                    .expect("put");
            }
            engine.flush().expect("flush");
            let held = engine
                .shape()
                .avg_bits_per_key
                .expect("filter bits per key");
            assert!(
                (held / bits - 1.0).abs() < 0.10,
                "{bits} bits/key asked, {held} held\n{settings}"
            );
            engine.close().expect("close");
        }
    }

    /// RocksDB's unnecessary data-block reads, counted from its perf context, on a tree whose
    /// reads are known: three level-0 files without filters, each spanning the whole key range
    /// (file `f` holds the keys `i` with `i % 3 == f`), and a block cache too small to keep a
    /// block. A lookup visits the files newest first and reads one data block in each until one
    /// holds the key: an absent key reads three, all unnecessary; a key of the oldest file reads
    /// three of which two are unnecessary; a key of the newest reads one, necessary.
    #[cfg(feature = "peer-rocksdb")]
    #[test]
    fn rocksdb_counts_the_unnecessary_data_reads_of_lookups_as_strata_does() {
        let config = EngineConfig {
            bits_per_key: 0.0,
            cache_bytes: 0,
            write_buffer_bytes: 4 << 20,
            ..config()
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open(EngineKind::Rocksdb, dir.path(), &config).expect("open");
        let key = |i: u32| format!("key{i:08}");
        for file in 0..3u32 {
            for i in (file..3_000).step_by(3) {
                engine.put(key(i).as_bytes(), &[b'v'; 100]).expect("put");
            }
            engine.flush().expect("flush");
        }
        let levels = engine.shape().levels;
        assert_eq!(levels.len(), 1, "{levels:?}");
        assert_eq!(levels[0].files, 3, "{levels:?}");
        let lookup = |bytes: &[u8]| -> (bool, EngineCounters) {
            engine.reset_counters();
            let found = engine.get(bytes).expect("get").is_some();
            (found, engine.counters())
        };
        // Between key 1500 and key 1501: in every file's range, in none.
        let (found, absent) = lookup(b"key00001500x");
        assert!(!found);
        assert_eq!(absent.data_block_reads, Some(3), "{absent:?}");
        assert_eq!(absent.unnecessary_data_reads, Some(3), "{absent:?}");
        assert_eq!(absent.unnecessary_data_reads_max, Some(3), "{absent:?}");
        // Every block came from the device: the holding one too, so the count is exact.
        let (found, oldest) = lookup(key(1_500).as_bytes());
        assert!(found);
        assert_eq!(oldest.data_block_reads, Some(3), "{oldest:?}");
        assert_eq!(oldest.unnecessary_data_reads, Some(2), "{oldest:?}");
        assert_eq!(oldest.unnecessary_data_reads_max, Some(2), "{oldest:?}");
        let (found, newest) = lookup(key(1_502).as_bytes());
        assert!(found);
        assert_eq!(newest.data_block_reads, Some(1), "{newest:?}");
        assert_eq!(newest.unnecessary_data_reads, Some(0), "{newest:?}");
        // Index blocks are counted apart from data blocks: one per file visited.
        assert_eq!(newest.index_block_reads, Some(1), "{newest:?}");
        assert!(
            newest.read_bytes.is_some_and(|bytes| bytes > 0),
            "{newest:?}"
        );
        // Scans count their block reads too, and no unnecessary ones.
        engine.reset_counters();
        let scanned = engine.scan(key(0).as_bytes(), 10).expect("scan");
        assert_eq!(scanned.entries, 10);
        let scan = engine.counters();
        assert!(
            scan.data_block_reads.is_some_and(|reads| reads >= 3),
            "{scan:?}"
        );
        assert_eq!(scan.unnecessary_data_reads, Some(0), "{scan:?}");
        engine.close().expect("close");
    }

    #[cfg(feature = "peer-rocksdb")]
    #[test]
    fn rocksdb_compresses_as_configured() {
        exercise_compressed(EngineKind::Rocksdb);
    }

    #[cfg(feature = "peer-fjall")]
    #[test]
    fn fjall_behaves_like_a_key_value_store() {
        exercise(EngineKind::Fjall);
        exercise_expert(EngineKind::Fjall);
    }
}
