//! RocksDB (through the `rocksdb` crate, which builds RocksDB from source) behind the benchmark's
//! [`Engine`] trait, configured like Strata wherever RocksDB allows it.
//!
//! I/O counters come from RocksDB's statistics tickers: block-cache misses by block kind
//! (`rocksdb.block.cache.{data,index,filter}.miss`), filter outcomes
//! (`rocksdb.bloom.filter.useful` = negatives, `.full.positive` − `.full.true.positive` = false
//! positives), and bytes written by flushes, compactions and the WAL. Tickers cannot be reset, so
//! the engine keeps a baseline and reports differences. The user's bytes are counted by the
//! engine itself, `key + value` per put and `key` per delete as Strata counts them: RocksDB's
//! `rocksdb.bytes.written` counts the write batch as encoded (a 12-byte header per batch, a type
//! byte and varint lengths per entry: 16 of 288 bytes for a 16-byte key and 256-byte value), which
//! would lower its write amplification against Strata's by that share. Compaction bytes by output
//! level come from the info log's compaction events (`rocksdb_events`).
//!
//! Blocks read by the benchmark's lookups and scans (data, index and filter blocks, their bytes)
//! and the unnecessary data-block reads of its point lookups come from RocksDB's perf context,
//! counted at `PerfStatsLevel::EnableCount` and read before and after each operation on the
//! thread that runs it (`rocksdb_perf`, `rocksdb_reads`): flushes and compactions run on RocksDB's
//! own threads and are not counted, as Strata counts only its lookups' and scans' block reads.
//! (The `rocksdb.block.cache.*.miss` tickers would also count compactions' input reads, which
//! look their blocks up in the block cache; they are used only if the perf context cannot be
//! read.) A lookup that returned nothing read only unnecessary data blocks; one that found its
//! key read the block holding it last, and when it read data blocks both from the device and from
//! the cache the count cannot say which one held the key: the engine then reports the lower end
//! (the holding block read from the device) as `unnecessary_data_reads` and the upper end beside
//! it. Reading the counters costs two reads of a dozen integers per operation, no calls into
//! RocksDB.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rocksdb::perf::{PerfContext, PerfMetric, PerfStatsLevel};
use rocksdb::statistics::{Histogram, Ticker};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, Direction,
    IteratorMode, Options, ReadOptions, UniversalCompactOptions, WaitForCompactOptions, WriteBatch,
    DB,
};
use strata::{Compression, CompressionPolicy};

use super::rocksdb_perf;
use super::rocksdb_reads::ReadTally;
use super::{
    read_scan, BatchOp, CompressionCounters, Engine, EngineConfig, EngineCounters, LevelShape,
    ScanOutcome, TreeShape, WriteCauses,
};
use crate::bench::{CompactionKind, PeerConfig};
use crate::error::{CliError, CliResult};

/// The tickers the harness reads, in the order of [`Baseline`].
const TICKERS: [Ticker; 15] = [
    Ticker::BlockCacheDataMiss,
    Ticker::BlockCacheIndexMiss,
    Ticker::BlockCacheFilterMiss,
    Ticker::BloomFilterUseful,
    Ticker::BloomFilterFullPositive,
    Ticker::BloomFilterFullTruePositive,
    Ticker::WalFileBytes,
    Ticker::FlushWriteBytes,
    Ticker::CompactWriteBytes,
    Ticker::StallMicros,
    // Block compression in flushes and compactions: uncompressed bytes of blocks stored
    // compressed, their compressed bytes, bytes of blocks written with no compression configured
    // (bypassed) and of blocks kept raw because they did not compress enough (rejected), and
    // blocks decompressed.
    Ticker::BytesCompressedFrom,
    Ticker::BytesCompressedTo,
    Ticker::BytesCompressionBypassed,
    Ticker::BytesCompressionRejected,
    Ticker::NumberBlockDecompressed,
];

type Baseline = [u64; TICKERS.len()];

fn peer_error(error: rocksdb::Error) -> CliError {
    CliError::Peer {
        engine: "rocksdb",
        message: error.into_string(),
    }
}

/// RocksDB with the benchmark's settings.
pub struct RocksDbEngine {
    db: DB,
    /// Holds the statistics object the tickers are read from.
    options: Options,
    baseline: Mutex<Baseline>,
    /// `block_read_byte` of the opening thread's perf context at the last reset.
    read_bytes_baseline: Mutex<u64>,
    /// Count of the `rocksdb.db.write.stall` histogram (one per delayed write group) at the last
    /// reset; histograms cannot be reset either.
    stalls_baseline: Mutex<u64>,
    /// Bytes of keys and values written through this engine, and their count at the last reset.
    user_write_bytes: AtomicU64,
    user_write_baseline: AtomicU64,
    /// The info log (`<dir>/LOG`) and its length at the last reset: the compaction events
    /// after it are the ones since.
    info_log: PathBuf,
    info_log_baseline: Mutex<u64>,
    settings: Vec<String>,
    filter: RocksDbFilter,
    /// Block reads of the benchmark's lookups and scans since the last reset.
    reads: ReadTally,
}

/// RocksDB's filter family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RocksDbFilter {
    /// The full (format 5, cache-local) Bloom filter at the benchmark's bits per key.
    Bloom,
    /// `Standard128Ribbon` at the benchmark's bits per key of *memory*: RocksDB takes a
    /// Bloom-equivalent bits per key (the Bloom filter whose false-positive rate the Ribbon filter
    /// is to match), derived by [`ribbon_bloom_equivalent`].
    Ribbon,
}

/// `BloomMath::StandardFpRate`: a standard Bloom filter's false-positive rate at `bits_per_key`
/// with `probes` hash functions, `(1 - e^(-k / b))^k`.
fn standard_fp_rate(bits_per_key: f64, probes: f64) -> f64 {
    (1.0 - (-probes / bits_per_key).exp()).powf(probes)
}

/// RocksDB's rate for its cache-local (512-bit block) Bloom filter, as its `BloomMath::
/// CacheLocalFpRate` models it: the average of the standard rate at one standard deviation of
/// the Poisson load above and below the mean keys per block.
fn cache_local_fp_rate(bits_per_key: f64, probes: f64) -> f64 {
    let keys_per_block = 512.0 / bits_per_key;
    let spread = keys_per_block.sqrt();
    let crowded = standard_fp_rate(512.0 / (keys_per_block + spread), probes);
    let uncrowded = standard_fp_rate(512.0 / (keys_per_block - spread).max(1e-9), probes);
    (crowded + uncrowded) / 2.0
}

/// The probes RocksDB's `FastLocalBloomImpl::ChooseNumProbes` gives `bits_per_key`.
fn rocksdb_bloom_probes(bits_per_key: f64) -> f64 {
    let millibits = bits_per_key * 1000.0;
    let thresholds = [
        2080.0, 3580.0, 5100.0, 6640.0, 8300.0, 10070.0, 11720.0, 14001.0, 16050.0, 18300.0,
        22001.0, 25501.0,
    ];
    match thresholds.iter().position(|&limit| millibits <= limit) {
        Some(index) => index as f64 + 1.0,
        None if millibits > 50_000.0 => 24.0,
        None => ((millibits - 1.0) / 2000.0).floor() - 1.0,
    }
}

/// The Bloom-equivalent bits per key to give RocksDB's Ribbon filter so that it holds about
/// `bits_per_key` bits per key: a Ribbon filter of false-positive rate `f` holds
/// `log2(1/f) * (1 + RIBBON_SPACE_OVERHEAD)` bits per key, so the Bloom-equivalent `x` solves
/// `cache_local_fp_rate(x) = 2^(-bits_per_key / (1 + overhead))` (bisection). The bench prints
/// the mapping and the filter bits per key RocksDB's table properties then report, so the match
/// is checked in every run rather than assumed.
pub fn ribbon_bloom_equivalent(bits_per_key: f64) -> f64 {
    if bits_per_key <= 0.0 {
        return 0.0;
    }
    let target = (-bits_per_key / (1.0 + RIBBON_SPACE_OVERHEAD) * std::f64::consts::LN_2).exp();
    let rate = |x: f64| cache_local_fp_rate(x, rocksdb_bloom_probes(x));
    let (mut low, mut high) = (bits_per_key * 0.5, bits_per_key * 4.0 + 4.0);
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if rate(middle) > target {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

/// Space a Ribbon filter spends beyond `log2(1/f)` bits per key (slots over keys, for banding to
/// succeed): a few percent in RocksDB's configuration; calibrated against the table properties
/// of the bench's runs (docs/BENCHMARKS.md).
const RIBBON_SPACE_OVERHEAD: f64 = 0.05;

/// RocksDB's type for one of Strata's compressions.
fn compression_type(compression: Compression) -> DBCompressionType {
    match compression {
        Compression::None => DBCompressionType::None,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Zstd { .. } => DBCompressionType::Zstd,
    }
}

/// The Zstd level of the first Zstd choice in `choices`, if any.
fn zstd_level(choices: &[Compression]) -> Option<i32> {
    choices.iter().find_map(|c| match c {
        Compression::Zstd { level } => Some(*level),
        _ => None,
    })
}

/// Sets RocksDB's `compression_per_level`, `bottommost_compression` and their Zstd levels from
/// Strata's policy, and says how. The two apply to the same blocks (RocksDB compresses data and
/// index blocks, never filters, and keeps a block raw unless it saves 1/8, as Strata does), and
/// RocksDB's bottommost test is Strata's (no older data for the output's keys below it). Where
/// they differ: RocksDB has one Zstd level for all non-bottommost levels (the first one given is
/// used), and with `level_compaction_dynamic_level_bytes` its per-level list counts from the base
/// level, not from level 1.
fn configure_compression(options: &mut Options, policy: &CompressionPolicy) -> String {
    // RocksDB's CompressionOptions defaults besides the level: window_bits -14, strategy 0, no
    // dictionary.
    const WINDOW_BITS: i32 = -14;
    let levels: Vec<DBCompressionType> = policy
        .levels()
        .iter()
        .map(|&c| compression_type(c))
        .collect();
    // compression_per_level takes precedence over `compression`; set both so that RocksDB's own
    // flush path (which consults `compression` when the list is empty) agrees.
    options.set_compression_type(levels.first().copied().unwrap_or(DBCompressionType::None));
    options.set_compression_per_level(&levels);
    let mut text = format!(
        "compression_per_level [{}] (deeper levels take the last)",
        policy
            .levels()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let distinct_zstd_levels: std::collections::BTreeSet<i32> = policy
        .levels()
        .iter()
        .filter_map(|c| match c {
            Compression::Zstd { level } => Some(*level),
            _ => None,
        })
        .collect();
    if let Some(level) = zstd_level(policy.levels()) {
        options.set_compression_options(WINDOW_BITS, level, 0, 0);
        text.push_str(&format!(", Zstd level {level}"));
        if distinct_zstd_levels.len() > 1 {
            text.push_str(" (RocksDB has one Zstd level for these levels: NOT the same levels)");
        }
    }
    match policy.bottommost() {
        Some(bottommost) => {
            options.set_bottommost_compression_type(compression_type(bottommost));
            text.push_str(&format!("; bottommost_compression {bottommost}"));
            if let Compression::Zstd { level } = bottommost {
                options.set_bottommost_compression_options(WINDOW_BITS, level, 0, 0, true);
            }
        }
        None => text.push_str("; no bottommost_compression"),
    }
    text
}

impl RocksDbEngine {
    /// Opens (or creates) a RocksDB database in `dir`.
    pub fn open(dir: &Path, config: &EngineConfig, filter: RocksDbFilter) -> CliResult<Self> {
        let mut options = Options::default();
        options.create_if_missing(true);
        options.enable_statistics();
        let write_buffer = usize::try_from(config.write_buffer_bytes).unwrap_or(usize::MAX);
        options.set_write_buffer_size(write_buffer);
        options.set_max_write_buffer_number(2);
        options.set_target_file_size_base(config.target_file_bytes);
        options.set_level_zero_file_num_compaction_trigger(4);
        options.set_use_direct_reads(config.direct_reads);
        // As many compaction threads as Strata's workers: RocksDB gives a quarter of its
        // background jobs (at least one) to flushes, the rest to compactions.
        let compactions = config
            .max_background_compactions
            .unwrap_or(strata::Options::default().max_background_compactions);
        let jobs = i32::try_from(compactions + 1).unwrap_or(i32::MAX);
        options.set_max_background_jobs(jobs);
        let mut settings = vec![
            format!(
                "max_background_jobs {jobs} ({compactions} compaction threads, one flush thread, as Strata's)"
            ),
            format!("write_buffer_size {write_buffer} x max_write_buffer_number 2"),
            format!(
                "target_file_size_base {} bytes; level0 trigger 4",
                config.target_file_bytes
            ),
            configure_compression(&mut options, &config.compression),
            format!("use_direct_reads {}", config.direct_reads),
        ];
        match config.compaction {
            CompactionKind::Leveling | CompactionKind::LevelingDynamic => {
                let dynamic = config.compaction == CompactionKind::LevelingDynamic;
                options.set_compaction_style(DBCompactionStyle::Level);
                options.set_level_compaction_dynamic_level_bytes(dynamic);
                options.set_max_bytes_for_level_multiplier(config.size_ratio);
                let base = (config.write_buffer_bytes as f64 * config.size_ratio) as u64;
                options.set_max_bytes_for_level_base(base);
                settings.push(format!(
                    "compaction leveling: max_bytes_for_level_multiplier {}, max_bytes_for_level_base {base} (Strata's write buffer x T), dynamic_level_bytes {dynamic} (as Strata's)",
                    config.size_ratio
                ));
            }
            CompactionKind::Tiering => {
                options.set_compaction_style(DBCompactionStyle::Universal);
                let mut universal = UniversalCompactOptions::default();
                let ratio = config.size_ratio.round() as i32;
                universal.set_min_merge_width(ratio.max(2));
                options.set_universal_compaction_options(&universal);
                settings.push(format!(
                    "compaction tiering approximated by universal compaction with min_merge_width {} (RocksDB has no per-level tiering)",
                    ratio.max(2)
                ));
            }
            // Every other merge policy is Strata's own.
            _ => {
                return Err(CliError::InvalidArgument(format!(
                    "RocksDB has no {} compaction (the bench runs it on Strata only)",
                    config.compaction.name()
                )));
            }
        }
        let mut table = BlockBasedOptions::default();
        table.set_block_size(config.block_bytes);
        let filter_setting = match filter {
            RocksDbFilter::Bloom => {
                table.set_bloom_filter(config.bits_per_key, false);
                format!("full Bloom filter {} bits/key", config.bits_per_key)
            }
            RocksDbFilter::Ribbon => {
                let equivalent = ribbon_bloom_equivalent(config.bits_per_key);
                table.set_ribbon_filter(equivalent);
                format!(
                    "Ribbon filter (Standard128Ribbon) at {equivalent:.3} Bloom-equivalent bits/key, for {} bits/key of filter memory",
                    config.bits_per_key
                )
            }
        };
        let cache = Cache::new_lru_cache(usize::try_from(config.cache_bytes).unwrap_or(usize::MAX));
        table.set_block_cache(&cache);
        // Strata keeps index and filter blocks in the block cache unless asked to pin them.
        table.set_cache_index_and_filter_blocks(!config.pin_index_filter);
        let expert_cached = config.peer_config == PeerConfig::Expert && !config.pin_index_filter;
        if expert_cached {
            // What RocksDB's wiki ("Partitioned Index/Filters", "Block Cache") recommends when
            // index and filter blocks must share a bounded cache: partitions of 4 KiB, so a miss
            // reads one partition and no shard of a small cache is smaller than what it must hold;
            // the top-level index pinned; metadata cached at high priority; level 0 pinned.
            table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            table.set_partition_filters(true);
            table.set_metadata_block_size(4096);
            table.set_pin_top_level_index_and_filter(true);
            table.set_cache_index_and_filter_blocks_with_high_priority(true);
            table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        } else {
            table.set_pin_l0_filter_and_index_blocks_in_cache(false);
        }
        options.set_block_based_table_factory(&table);
        settings.push(format!(
            "block_size {}; {filter_setting} (format_version default); LRU block cache {} bytes",
            config.block_bytes, config.cache_bytes
        ));
        settings.push(if config.pin_index_filter {
            "index and filter blocks held by table readers, outside the cache (cache_index_and_filter_blocks false)".to_string()
        } else if expert_cached {
            "peer config expert: partitioned index and filters (index_type kTwoLevelIndexSearch, partition_filters true, metadata_block_size 4096), pin_top_level_index_and_filter true, cache_index_and_filter_blocks true with high priority, pin_l0_filter_and_index_blocks_in_cache true".to_string()
        } else {
            "peer config strata-like: one index block and one filter block per table, in the block cache (cache_index_and_filter_blocks true), nothing pinned".to_string()
        });
        settings.push("WAL on, sync false (RocksDB's default WriteOptions)".to_string());
        rocksdb::perf::set_perf_stats(PerfStatsLevel::EnableCount);
        settings.push(
            "perf level EnableCount on every thread that runs lookups and scans (their block reads by kind, and the unnecessary data-block reads of lookups, from the perf context)"
                .to_string(),
        );
        let db = DB::open(&options, dir).map_err(peer_error)?;
        let engine = RocksDbEngine {
            db,
            options,
            baseline: Mutex::new([0; TICKERS.len()]),
            read_bytes_baseline: Mutex::new(0),
            stalls_baseline: Mutex::new(0),
            user_write_bytes: AtomicU64::new(0),
            user_write_baseline: AtomicU64::new(0),
            info_log: dir.join("LOG"),
            info_log_baseline: Mutex::new(0),
            settings,
            filter,
            reads: ReadTally::default(),
        };
        engine.reset_counters();
        Ok(engine)
    }

    /// One field of `rocksdb.aggregated-table-properties` (summed over every table), e.g.
    /// `filter block size` or `# entries`; `None` if RocksDB does not report it.
    fn table_property(&self, name: &str) -> Option<f64> {
        let text = self
            .db
            .property_value("rocksdb.aggregated-table-properties")
            .ok()
            .flatten()?;
        text.split(';').find_map(|part| {
            let (key, value) = part.split_once('=')?;
            (key.trim() == name).then(|| value.trim().parse().ok())?
        })
    }

    /// Filter bits per key over every table (`filter block size` over `# entries`).
    fn filter_bits_per_key(&self) -> Option<f64> {
        let entries = self.table_property("# entries")?;
        (entries > 0.0).then(|| {
            self.table_property("filter block size")
                .map(|bytes| bytes * 8.0 / entries)
        })?
    }

    fn tickers(&self) -> Baseline {
        std::array::from_fn(|i| self.options.get_ticker_count(TICKERS[i]))
    }

    /// Write groups RocksDB has delayed or stopped (`DBImpl::DelayWrite` records one histogram
    /// sample per delayed group, with the time delayed).
    fn write_stalls(&self) -> u64 {
        self.options
            .get_histogram_data(Histogram::WriteStall)
            .count()
    }

    fn count_user_bytes(&self, bytes: usize) {
        self.user_write_bytes
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn info_log_len(&self) -> u64 {
        std::fs::metadata(&self.info_log).map_or(0, |m| m.len())
    }

    /// Compaction bytes by cause since the last reset, from the info log's events; `None` if
    /// the log cannot be read.
    fn compaction_causes(&self) -> Option<WriteCauses> {
        let log = std::fs::read(&self.info_log).ok()?;
        let from = *self
            .info_log_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A shorter log than at the reset was rolled over: read all of it.
        let from = usize::try_from(from).unwrap_or(0);
        let since = log.get(from..).unwrap_or(&log);
        Some(super::rocksdb_events::compaction_causes(
            &String::from_utf8_lossy(since),
        ))
    }

    /// Bytes of blocks this thread has read (its perf context; see the module's doc).
    fn block_read_bytes() -> u64 {
        PerfContext::default().metric(PerfMetric::BlockReadByte)
    }

    /// Runs `operation` (a scan) with its block reads counted.
    fn counted<T>(&self, operation: impl FnOnce() -> T) -> T {
        let before = rocksdb_perf::reads();
        let outcome = operation();
        self.reads.operation(before, rocksdb_perf::reads());
        outcome
    }
}

impl Engine for RocksDbEngine {
    fn name(&self) -> &'static str {
        match self.filter {
            RocksDbFilter::Bloom => "rocksdb",
            RocksDbFilter::Ribbon => "rocksdb-ribbon",
        }
    }

    fn version(&self) -> String {
        "11.8.1 (rocksdb crate 0.25)".to_string()
    }

    fn settings(&self) -> Vec<String> {
        self.settings.clone()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
        self.db.put(key, value).map_err(peer_error)?;
        self.count_user_bytes(key.len() + value.len());
        Ok(())
    }

    fn get(&self, key: &[u8]) -> CliResult<Option<Vec<u8>>> {
        let before = rocksdb_perf::reads();
        let value = self.db.get_pinned(key).map_err(peer_error)?;
        self.reads
            .lookup(before, rocksdb_perf::reads(), value.is_some());
        Ok(value.map(|value| value.to_vec()))
    }

    fn delete(&self, key: &[u8]) -> CliResult<()> {
        self.db.delete(key).map_err(peer_error)?;
        self.count_user_bytes(key.len());
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp]) -> CliResult<()> {
        let mut batch = WriteBatch::default();
        let mut bytes = 0;
        for op in ops {
            match op {
                BatchOp::Put(key, value) => {
                    batch.put(key, value);
                    bytes += key.len() + value.len();
                }
                BatchOp::Delete(key) => {
                    batch.delete(key);
                    bytes += key.len();
                }
            }
        }
        self.db.write(batch).map_err(peer_error)?;
        self.count_user_bytes(bytes);
        Ok(())
    }

    fn scan(&self, from: &[u8], count: u64) -> CliResult<ScanOutcome> {
        // Counted from the iterator's creation, which seeks and reads the first blocks.
        self.counted(|| {
            let iterator = self
                .db
                .iterator(IteratorMode::From(from, Direction::Forward));
            let keys = iterator.map(|entry| entry.map(|(key, _)| key).map_err(peer_error));
            read_scan(from, keys, count)
        })
    }

    fn scan_bounded(&self, from: &[u8], until: &[u8], count: u64) -> CliResult<ScanOutcome> {
        let mut read_options = ReadOptions::default();
        read_options.set_iterate_upper_bound(until.to_vec());
        self.counted(|| {
            let iterator = self
                .db
                .iterator_opt(IteratorMode::From(from, Direction::Forward), read_options);
            let keys = iterator.map(|entry| entry.map(|(key, _)| key).map_err(peer_error));
            read_scan(from, keys, count)
        })
    }

    fn flush(&self) -> CliResult<()> {
        self.db.flush().map_err(peer_error)
    }

    fn wait_for_compactions(&self) -> CliResult<()> {
        let mut wait = WaitForCompactOptions::default();
        wait.set_flush(true);
        self.db.wait_for_compact(&wait).map_err(peer_error)
    }

    fn compact_all(&self) -> CliResult<()> {
        self.db.flush().map_err(peer_error)?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        self.wait_for_compactions()
    }

    fn counters(&self) -> EngineCounters {
        let now = self.tickers();
        let base = *self
            .baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let delta: Baseline = std::array::from_fn(|i| now[i].saturating_sub(base[i]));
        let user = self
            .user_write_bytes
            .load(Ordering::Relaxed)
            .saturating_sub(self.user_write_baseline.load(Ordering::Relaxed));
        let [data, index, filter, useful, positive, true_positive, wal, flush, compact, stall_micros, compressed_from, compressed_to, bypassed, rejected, decompressed] =
            delta;
        let stalls_base = *self
            .stalls_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let read_bytes_base = *self
            .read_bytes_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The perf context's counts where its layout reads as the C API says (see
        // `rocksdb_perf`); the tickers, which also count compactions' reads, otherwise.
        let tallied = self.reads.sums().filter(|_| rocksdb_perf::layout_agrees());
        EngineCounters {
            data_block_reads: Some(tallied.map_or(data, |t| t.data)),
            index_block_reads: Some(tallied.map_or(index, |t| t.index)),
            filter_block_reads: Some(tallied.map_or(filter, |t| t.filter)),
            read_bytes: Some(tallied.map_or_else(
                || Self::block_read_bytes().saturating_sub(read_bytes_base),
                |t| t.bytes,
            )),
            filter_probes: Some(useful + positive),
            filter_false_positives: Some(positive.saturating_sub(true_positive)),
            unnecessary_data_reads: tallied.map(|t| t.unnecessary.low),
            unnecessary_data_reads_max: tallied.map(|t| t.unnecessary.high),
            user_write_bytes: Some(user),
            table_write_bytes: Some(flush + compact),
            wal_write_bytes: Some(wal),
            write_causes: self
                .compaction_causes()
                .map(|causes| WriteCauses { flush, ..causes }),
            // RocksDB never skips a filter.
            filter_skips: None,
            last_level_filter_probes: None,
            last_level_filter_skips: None,
            // No range filters are configured for RocksDB (prefix Bloom filters need a prefix
            // extractor the benchmark's keys have no natural choice for).
            range_filter_probes: None,
            range_filter_negatives: None,
            seek_runs: None,
            data_block_reads_by_level: None,
            cache_hits: None,
            block_read_micros: None,
            scan_readahead_reads: None,
            scan_readahead_blocks: None,
            write_stalls: Some(self.write_stalls().saturating_sub(stalls_base)),
            write_stall_micros: Some(stall_micros),
            compaction_micros: None,
            write_slowdowns: None,
            write_stops: None,
            // No filter is rebuilt outside a compaction.
            filter_rebuilds: None,
            filter_rebuild_bytes: None,
            // Compression and decompression times are histograms RocksDB fills only at a
            // statistics level above its default (`kExceptDetailedTimers`); not timed here.
            compression: Some(CompressionCounters {
                uncompressed_bytes: compressed_from + bypassed + rejected,
                stored_bytes: compressed_to + bypassed + rejected,
                compress_nanos: None,
                decompress_nanos: None,
                blocks_decompressed: decompressed,
            }),
        }
    }

    fn reset_counters(&self) {
        self.reads.reset();
        *self
            .baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = self.tickers();
        *self
            .read_bytes_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Self::block_read_bytes();
        *self
            .stalls_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = self.write_stalls();
        self.user_write_baseline.store(
            self.user_write_bytes.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        *self
            .info_log_baseline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = self.info_log_len();
    }

    fn shape(&self) -> TreeShape {
        let mut levels: Vec<LevelShape> = Vec::new();
        if let Ok(files) = self.db.live_files() {
            for file in files {
                let level = usize::try_from(file.level).unwrap_or(0);
                let index = match levels.iter().position(|l| l.level == level) {
                    Some(index) => index,
                    None => {
                        levels.push(LevelShape {
                            level,
                            entries: Some(0),
                            ..LevelShape::default()
                        });
                        levels.len() - 1
                    }
                };
                let shape = &mut levels[index];
                shape.files += 1;
                shape.bytes += file.size as u64;
                shape.entries = shape
                    .entries
                    .map(|e| e + file.num_entries + file.num_deletions);
            }
        }
        levels.sort_by_key(|l| l.level);
        let universal = self.settings.iter().any(|line| line.contains("universal"));
        for level in &mut levels {
            // Level 0 files are runs of their own; under leveling each deeper level is one run.
            // Universal compaction keeps its sorted runs as level-0 files or whole levels.
            level.runs = if level.level == 0 {
                level.files
            } else if universal {
                level.files.min(1)
            } else {
                1
            };
        }
        let memtable_bytes = self
            .db
            .property_int_value("rocksdb.cur-size-all-mem-tables")
            .ok()
            .flatten();
        TreeShape {
            table_bytes: levels.iter().map(|l| l.bytes).sum(),
            levels,
            memtable_bytes,
            // What the filters hold, from the table properties; RocksDB has no budget of its own.
            avg_bits_per_key: self.filter_bits_per_key(),
            effective_bits_per_key: None,
            bits_per_key_cap: None,
            bits_per_key_budget: None,
            filter_bytes_on_disk: self.table_property("filter block size").map(|b| b as u64),
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

    fn close(self: Box<Self>) -> CliResult<()> {
        self.db.flush().map_err(peer_error)
    }
}
