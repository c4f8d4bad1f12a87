//! What a benchmark phase measured, and how it is printed (a table row per phase, the tree shape)
//! and written (`--json`).
//!
//! I/O figures come from each engine's own counters ([`EngineCounters`]), zeroed at the start of
//! each phase: a "block read" is a block-cache miss, i.e. a read from the file system (from the
//! device with `--direct-reads`). A figure an engine cannot report is `null` in the JSON and `-`
//! in the table.

use std::io::{self, Write};
use std::time::Duration;

use super::engine::{
    EngineCounters, PredictedBlockReads, PredictedWriteAmp, TreeShape, WriteCauses,
};
use super::workload::Workload;
use super::Variant;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Per-operation latencies of one phase, in nanoseconds (reported in microseconds).
pub struct Latencies {
    histogram: Histogram<u64>,
}

impl Latencies {
    /// Longest latency recorded exactly: one hour, in nanoseconds (longer ones are clamped).
    const MAX_NANOS: u64 = 3_600 * 1_000_000_000;

    /// An empty recorder: 1 ns to 1 h at 3 significant digits (0.1% error, ~200 KiB).
    pub fn new() -> Self {
        let histogram = Histogram::new_with_bounds(1, Self::MAX_NANOS, 3).unwrap_or_else(|_| {
            unreachable!("bounds 1..1h with 3 significant figures are valid for hdrhistogram")
        });
        Latencies { histogram }
    }

    /// Records one operation.
    pub fn record(&mut self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.histogram
            .saturating_record(nanos.clamp(1, Self::MAX_NANOS));
    }

    /// p50, p99, p99.9 and mean, in microseconds.
    pub fn summary(&self) -> LatencyUs {
        let us = |nanos: u64| nanos as f64 / 1000.0;
        LatencyUs {
            p50: us(self.histogram.value_at_quantile(0.50)),
            p99: us(self.histogram.value_at_quantile(0.99)),
            p999: us(self.histogram.value_at_quantile(0.999)),
            mean: self.histogram.mean() / 1000.0,
        }
    }
}

/// Latency percentiles in microseconds (JSON `latency_us`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyUs {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Mean.
    pub mean: f64,
}

/// Blocks read from the file system per operation, by kind (JSON `io_per_op`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IoPerOp {
    /// Data blocks per operation.
    pub data: Option<f64>,
    /// Index blocks per operation.
    pub index: Option<f64>,
    /// Filter blocks per operation.
    pub filter: Option<f64>,
}

/// One phase's result, one element of the JSON `results` array. Field names are a contract with
/// the scripts that read the JSON: extend, never rename.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseResult {
    /// The engine (`strata`, `rocksdb`, `fjall`).
    pub engine: &'static str,
    /// Strata's filter-allocation policy (`uniform` for the peers).
    pub filter_policy: &'static str,
    /// The merge policy.
    pub compaction: &'static str,
    /// `engine/filter_policy/compaction`.
    pub configuration: String,
    /// 1-based run number (`--runs`).
    pub run: usize,
    /// The workload's name.
    pub phase: Workload,
    /// Operations (puts, gets or seeks).
    pub ops: u64,
    /// Operations per second of wall-clock time.
    pub ops_per_sec: f64,
    /// Per-operation latency.
    pub latency_us: LatencyUs,
    /// Block reads per operation.
    pub io_per_op: IoPerOp,
    /// Bytes of table blocks read from the file system per operation (`None`: the engine does
    /// not count them).
    pub read_bytes_per_op: Option<f64>,
    /// Data blocks read by point lookups from files that did not hold the key, per lookup
    /// (0 in phases without point lookups).
    pub unnecessary_data_reads_per_lookup: Option<f64>,
    /// Where the engine's count is a range (RocksDB: lookups that found their key after reading
    /// data blocks both from the device and from the cache), its upper end per lookup;
    /// `unnecessary_data_reads_per_lookup` is then the lower end. `null` where the count is exact.
    pub unnecessary_data_reads_max_per_lookup: Option<f64>,
    /// Filter false positives per point lookup (0 in phases without point lookups).
    pub false_positives_per_lookup: Option<f64>,
    /// Filter probes per point lookup.
    pub filter_probes_per_lookup: Option<f64>,
    /// Probes of files with a filter whose filter the allocator skipped, per point lookup
    /// (Strata's Mnemosyne policies; `null` for peers).
    pub filter_skips_per_lookup: Option<f64>,
    /// Of the deepest level's filter probes and skips, the fraction skipped (`null` if none).
    pub last_level_skipped_fraction: Option<f64>,
    /// The Mnemosyne paper's own metric: (data blocks read − lookups that found their key) per
    /// point lookup. Unlike `unnecessary_data_reads_per_lookup` it can be computed for every
    /// engine that counts data-block reads, but it also counts data blocks of newer runs read
    /// before the one holding the key as necessary.
    pub paper_unnecessary_reads_per_lookup: Option<f64>,
    /// Entry-weighted mean bits per key of the live filters at the end of the phase.
    pub avg_bits_per_key: Option<f64>,
    /// The same with filters the allocator skips counted as 0 bits (Strata only).
    pub effective_bits_per_key: Option<f64>,
    /// The least `effective_bits_per_key` over the phase: its time-series samples and its end
    /// (the filter memory in use, against the budget, at its lowest).
    pub effective_bits_per_key_min: Option<f64>,
    /// The most over the same samples.
    pub effective_bits_per_key_max: Option<f64>,
    /// The filter budget in bits per key.
    pub bits_per_key_budget: Option<f64>,
    /// The budget guard's cap (Strata's Mnemosyne policies only).
    pub bits_per_key_cap: Option<f64>,
    /// (flush + compaction bytes written) / user bytes written during the phase; with
    /// `--settle`, the figure of a phase that wrote (a fill, or a mix with updates) also includes
    /// the flush and compactions of the settle that follows it (before the next read phase, and
    /// after the last phase). 0 for phases that write nothing.
    pub write_amp: Option<f64>,
    /// `write_amp` of the phase alone, before the settle that followed it (`null` if none did).
    pub write_amp_before_settle: Option<f64>,
    /// The bytes behind `write_amp` (same span): bytes of keys and values the user wrote (every
    /// engine counts `key + value` per put and `key` per delete; RocksDB's own
    /// `rocksdb.bytes.written` adds its write-batch framing), bytes written to table files, and
    /// bytes of WAL records (not in `write_amp`).
    pub user_write_bytes: Option<u64>,
    pub table_write_bytes: Option<u64>,
    pub wal_write_bytes: Option<u64>,
    /// `table_write_bytes` by cause (flush, level-0 merges, merges into each level, full
    /// compactions, filter rebuilds), where the engine says.
    pub write_causes: Option<WriteCauses>,
    /// Write groups delayed or stopped by the engine's write stalls during the phase; `null`
    /// where the engine does not count them (fjall).
    pub write_stalls: Option<u64>,
    /// Of `write_stalls`, the delays and the stops (`null` where the engine does not tell them
    /// apart: RocksDB, fjall).
    pub write_slowdowns: Option<u64>,
    pub write_stops: Option<u64>,
    /// Time writers spent stalled during the phase, milliseconds.
    pub write_stall_ms: Option<f64>,
    /// Writes the background writer did during the phase (`readwhilewriting`, `ecotune`), and
    /// their rate in writes per second.
    pub background_writes: u64,
    pub background_writes_per_sec: f64,
    /// Bytes of the live filters on disk (serialized, with each format's rounding) and of those
    /// in use (nominal: bits per key in use times entries) at the end of the phase, where the
    /// engine reports them; the difference is mostly elastic filters' disk overhead.
    pub filter_bytes_on_disk: Option<u64>,
    pub filter_bytes_in_use: Option<u64>,
    /// Compaction jobs' wall-clock time over the phase's (Strata only; above 1 when jobs ran
    /// side by side): the share of the phase compaction workers were busy, not CPU time.
    pub compaction_busy_share: Option<f64>,
    /// Compaction threads' CPU time over the whole process's during the phase (Linux
    /// `/proc/self/task`; Strata's and RocksDB's compaction threads, `bench::cpu`); `null`
    /// where it cannot be read.
    pub compaction_cpu_share: Option<f64>,
    /// CPU seconds the process spent over the phase, in all threads and in compaction and flush
    /// threads (Linux `/proc/self`; `null` elsewhere): divided by the operations, what one
    /// costs where compactions and queries share the cores.
    pub cpu_seconds: Option<super::cpu::CpuSeconds>,
    /// The compaction policy's state at the end of the phase (Strata's EcoTune: its round).
    pub compaction_state: Option<String>,
    /// The merge policy in force at the end of the phase and auto-tune's decisions (Strata).
    pub design: Option<String>,
    /// Range filter probes and the files they ruled out, per operation (Strata with
    /// `--range-filter-bits`: bounded scans ask one per file their range meets).
    pub range_filter_probes_per_op: Option<f64>,
    pub range_filter_negatives_per_op: Option<f64>,
    /// Runs iterator seeks positioned themselves in, per operation (Strata).
    pub seek_runs_per_op: Option<f64>,
    /// Data blocks read from the file system per operation, by level (Strata; index = level,
    /// deeper levels summed into the last).
    pub data_reads_per_op_by_level: Option<Vec<f64>>,
    /// Block-cache hits per operation, by kind (Strata).
    pub cache_hits_per_op: Option<IoPerOp>,
    /// Microseconds per operation that lookups and scans spent reading blocks from the file
    /// system (elapsed, decompression included; Strata): the wait on the device.
    pub block_read_us_per_op: Option<f64>,
    /// Device reads per operation that filled a scan's read-ahead window (Strata; each also
    /// counted in the data block reads).
    pub scan_readahead_reads_per_op: Option<f64>,
    /// Data blocks per operation scans took from a read-ahead window without a device read of
    /// their own (Strata; not in the data block reads).
    pub scan_readahead_blocks_per_op: Option<f64>,
    /// Memory of the open files' range filters at the end of the phase (Strata).
    pub range_filter_bytes: Option<u64>,
    /// Index and filter blocks pinned outside the block cache at the end of the phase (Strata).
    pub pinned_bytes: Option<u64>,
    /// Files whose filter was rebuilt during the phase, and the bytes the rebuilds read plus
    /// wrote (Strata's elastic filters, `--filter-rebuild-rate`; `null` for the peers).
    pub filter_rebuilds: Option<u64>,
    pub filter_rebuild_bytes: Option<u64>,
    /// Live table bytes / bytes of the newest version of each key (`key_size + value_size` per
    /// live key), at the end of the phase; `null` before anything reached a table file.
    pub space_amp: Option<f64>,
    /// Bytes of live table files at the end of the phase (the space the tree takes).
    pub table_bytes: u64,
    /// Uncompressed bytes of the data and index blocks the phase's flushes and compactions wrote
    /// (Strata's counters; RocksDB's `bytes.compressed.from` + `bytes.compression_bypassed` +
    /// `bytes.compression.rejected`; `null` for fjall, which does not say).
    pub block_bytes_uncompressed: Option<u64>,
    /// The same blocks' bytes as stored, compressed or raw.
    pub block_bytes_stored: Option<u64>,
    /// `block_bytes_uncompressed / block_bytes_stored` (`null` if nothing was written).
    pub compression_ratio: Option<f64>,
    /// Time spent compressing during the phase (elapsed around each call), microseconds (Strata
    /// only).
    pub compress_us: Option<f64>,
    /// Time spent decompressing during the phase (cache misses, compaction inputs),
    /// microseconds.
    pub decompress_us: Option<f64>,
    /// Blocks decompressed during the phase.
    pub blocks_decompressed: Option<u64>,
    /// Non-empty levels at the end of the phase.
    pub levels: usize,
    /// Sorted runs at the end of the phase.
    pub runs: usize,
    /// Device reads per lookup the cost model predicts on the tree the phase read, through the
    /// engine's block cache (`strata::model::tree::device_reads`: the stream of missing keys for
    /// readmissing, of existing keys for readrandom), by block kind, beside the measured
    /// `io_per_op`. Strata only.
    pub predicted_reads_per_lookup: Option<PredictedBlockReads>,
    /// The same model taking every lookup as a key not looked up before and the phase as
    /// unending (`strata::model::tree::device_reads`), where `predicted_reads_per_lookup` saw
    /// the phase's recurring keys and length (`stream_device_reads`; DESIGN.md §7.6,
    /// "Recurring keys"): what the prediction was before it saw them.
    pub predicted_reads_per_lookup_new_keys: Option<PredictedBlockReads>,
    /// The data blocks the same lookups probe, each taken as a device read (the model without
    /// the block cache: `R` for readmissing, `V` for readrandom).
    pub predicted_data_reads_per_lookup_without_cache: Option<f64>,
    /// Device reads per seek (a short scan of `--seek-nexts` + 1 entries) the cost model
    /// predicts on the tree a seekrandom phase read, through the engine's block cache
    /// (`strata::model::seek::seek_reads`), by block kind, beside the measured `io_per_op`.
    /// Strata only.
    pub predicted_reads_per_seek: Option<PredictedBlockReads>,
    /// Table bytes written per user byte the cost models predict for a fill phase's flushes and
    /// compactions, settle included (`Db::predicted_write_amplification`: the merge policy
    /// replayed over the phase's stream, and Monkey's closed form on the settled tree), beside
    /// the measured `write_amp`. Strata only; load and fillrandom phases with `--settle`.
    pub predicted_write_amp: Option<PredictedWriteAmp>,
    /// Strata's timed probes at the end of the phase (`TreeShape::probe_times`).
    pub probe_times: Option<super::engine::ProbeTimes>,
}

/// One point of a phase's time series (JSON `series`): throughput over the last interval and the
/// tree's average filter bits per key, for plots of the shape of Mnemosyne's Fig. 11.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// `engine/filter_policy/compaction`.
    pub configuration: String,
    /// The engine.
    pub engine: &'static str,
    /// The filter policy.
    pub filter_policy: &'static str,
    /// The merge policy.
    pub compaction: &'static str,
    /// 1-based run number.
    pub run: usize,
    /// The phase.
    pub phase: Workload,
    /// Operations of the phase done so far.
    pub ops_done: u64,
    /// Seconds since the phase began.
    pub seconds: f64,
    /// Throughput since the previous point.
    pub ops_per_sec: f64,
    /// The live tree's average filter bits per key, where the engine can say.
    pub avg_bits_per_key: Option<f64>,
    /// The same with skipped filters counted as 0 bits (Strata only).
    pub effective_bits_per_key: Option<f64>,
    /// Device reads per lookup the cost model predicted on the tree and filters in force at
    /// this point of a point-read phase (`PhaseResult::predicted_reads_per_lookup` at a moment;
    /// Strata only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_reads_per_lookup: Option<PredictedBlockReads>,
    /// Every lookup a new key at this point
    /// (`PhaseResult::predicted_reads_per_lookup_new_keys` at a moment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_reads_per_lookup_new_keys: Option<PredictedBlockReads>,
    /// The model without the block cache at this point
    /// (`PhaseResult::predicted_data_reads_per_lookup_without_cache` at a moment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_data_reads_per_lookup_without_cache: Option<f64>,
}

/// Whether the bench prices `phase` per point lookup against the cost model: `readmissing`,
/// `readrandom` and `readhot` ([`lookup_predictions`]).
pub fn priced_per_lookup(phase: Workload) -> bool {
    matches!(
        phase,
        Workload::Readmissing
            | Workload::Mix(crate::bench::Mix::ReadRandom | crate::bench::Mix::ReadHot)
    )
}

/// The lookup predictions a point-read phase is held to, from the engine's model on the tree as
/// it is: `(through the block cache, data reads without it)` for the stream of missing keys
/// (readmissing) or of existing ones (readrandom, and readhot over the tree's whole key range: the
/// stream's range is for the recurring form, `Bench::lookup_streams`); none for other phases.
pub fn lookup_predictions(
    phase: Workload,
    shape: &TreeShape,
) -> (Option<PredictedBlockReads>, Option<f64>) {
    match (phase, shape.predicted_lookup_io) {
        (Workload::Readmissing, Some(predicted)) => (
            Some(predicted.zero_result_device),
            Some(predicted.zero_result),
        ),
        (
            Workload::Mix(crate::bench::Mix::ReadRandom | crate::bench::Mix::ReadHot),
            Some(predicted),
        ) => (Some(predicted.existing_device), Some(predicted.existing)),
        _ => (None, None),
    }
}

/// What a phase counted itself, beside the engine's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PhaseCounts {
    /// Operations run.
    pub ops: u64,
    /// Point lookups (of existing and of missing keys).
    pub lookups: u64,
    /// Lookups (and seeks) of keys that exist.
    pub existing_lookups: u64,
    /// Lookups of existing keys that found their key (seeks that landed exactly on it).
    pub found: u64,
    /// Lookups of never-written keys that found something (must stay 0).
    pub missing_hits: u64,
    /// Entries read by seeks and scans.
    pub entries_read: u64,
    /// Writes done by the background writer of `readwhilewriting`.
    pub background_writes: u64,
    /// New keys inserted (YCSB D and E, Mnemosyne type I).
    pub inserts: u64,
}

impl PhaseCounts {
    /// Adds another query thread's counts (its background writes are the writer's, not its).
    pub fn add(&mut self, other: &PhaseCounts) {
        self.ops += other.ops;
        self.lookups += other.lookups;
        self.existing_lookups += other.existing_lookups;
        self.found += other.found;
        self.missing_hits += other.missing_hits;
        self.entries_read += other.entries_read;
        self.inserts += other.inserts;
    }
}

fn per(count: u64, ops: u64) -> f64 {
    if ops == 0 {
        0.0
    } else {
        count as f64 / ops as f64
    }
}

impl PhaseResult {
    /// Widens the phase's filter-memory range to take in `samples` (the phase's time-series
    /// points); the result starts with the phase's end alone.
    pub fn include_filter_samples<'a>(
        &mut self,
        samples: impl IntoIterator<Item = &'a SeriesPoint>,
    ) {
        for value in samples.into_iter().filter_map(|p| p.effective_bits_per_key) {
            self.effective_bits_per_key_min = Some(
                self.effective_bits_per_key_min
                    .map_or(value, |m| m.min(value)),
            );
            self.effective_bits_per_key_max = Some(
                self.effective_bits_per_key_max
                    .map_or(value, |m| m.max(value)),
            );
        }
    }

    /// Makes the phase's lookup predictions the mean of the predictions at its time-series
    /// points (`samples`, equally spaced in operations) and at its end, which this result
    /// starts with: the filters in force can change during a phase (elastic filters move modules
    /// in and out of use as the lookups' window shifts), so the tree and filters at the end alone
    /// are not what the whole phase read. Points without a prediction are left out.
    pub fn average_lookup_predictions<'a>(
        &mut self,
        samples: impl IntoIterator<Item = &'a SeriesPoint>,
    ) {
        let Some(end) = self.predicted_reads_per_lookup else {
            return;
        };
        let (mut sum, mut count) = (end, 1.0);
        let mut new_keys = self.predicted_reads_per_lookup_new_keys.map(|p| (p, 1.0));
        let mut uncached = self
            .predicted_data_reads_per_lookup_without_cache
            .map(|u| (u, 1.0));
        for point in samples {
            if let Some(p) = point.predicted_reads_per_lookup {
                sum.data += p.data;
                sum.index += p.index;
                sum.filter += p.filter;
                count += 1.0;
            }
            if let (Some((total, n)), Some(p)) =
                (new_keys.as_mut(), point.predicted_reads_per_lookup_new_keys)
            {
                total.data += p.data;
                total.index += p.index;
                total.filter += p.filter;
                *n += 1.0;
            }
            if let (Some((total, n)), Some(u)) = (
                uncached.as_mut(),
                point.predicted_data_reads_per_lookup_without_cache,
            ) {
                *total += u;
                *n += 1.0;
            }
        }
        self.predicted_reads_per_lookup = Some(PredictedBlockReads {
            data: sum.data / count,
            index: sum.index / count,
            filter: sum.filter / count,
        });
        self.predicted_data_reads_per_lookup_without_cache = uncached.map(|(total, n)| total / n);
        self.predicted_reads_per_lookup_new_keys = new_keys.map(|(total, n)| PredictedBlockReads {
            data: total.data / n,
            index: total.index / n,
            filter: total.filter / n,
        });
    }

    /// Whether the phase wrote: a fill, or any phase whose operations wrote user bytes (a mix
    /// with updates, a background writer).
    pub fn wrote(&self) -> bool {
        self.phase.is_write() || self.user_write_bytes.is_some_and(|bytes| bytes > 0)
    }

    /// Builds a phase's result from its counts, latencies, wall time and the engine's counters
    /// and tree taken at the end of the phase (counters zeroed at its start).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        variant: &Variant,
        run: usize,
        phase: Workload,
        counts: &PhaseCounts,
        latencies: &Latencies,
        elapsed: Duration,
        io: &EngineCounters,
        shape: &TreeShape,
    ) -> Self {
        let seconds = elapsed.as_secs_f64();
        let per_op = |count: Option<u64>| count.map(|c| per(c, counts.ops));
        let lookups = counts.lookups;
        let per_lookup = |count: Option<u64>| count.map(|c| per(c, lookups));
        PhaseResult {
            engine: variant.engine.name(),
            filter_policy: variant.filter_policy.name(),
            compaction: variant.compaction.name(),
            configuration: variant.label(),
            run,
            phase,
            ops: counts.ops,
            ops_per_sec: if seconds > 0.0 {
                counts.ops as f64 / seconds
            } else {
                0.0
            },
            latency_us: latencies.summary(),
            io_per_op: IoPerOp {
                data: per_op(io.data_block_reads),
                index: per_op(io.index_block_reads),
                filter: per_op(io.filter_block_reads),
            },
            read_bytes_per_op: per_op(io.read_bytes),
            unnecessary_data_reads_per_lookup: per_lookup(io.unnecessary_data_reads),
            unnecessary_data_reads_max_per_lookup: per_lookup(io.unnecessary_data_reads_max),
            false_positives_per_lookup: per_lookup(io.filter_false_positives),
            filter_probes_per_lookup: per_lookup(io.filter_probes),
            filter_skips_per_lookup: per_lookup(io.filter_skips),
            last_level_skipped_fraction: match (
                io.last_level_filter_skips,
                io.last_level_filter_probes,
            ) {
                (Some(skips), Some(probes)) if skips + probes > 0 => {
                    Some(skips as f64 / (skips + probes) as f64)
                }
                _ => None,
            },
            paper_unnecessary_reads_per_lookup: per_lookup(
                io.data_block_reads
                    .map(|reads| reads.saturating_sub(counts.found.min(lookups))),
            ),
            space_amp: None,
            avg_bits_per_key: shape.avg_bits_per_key,
            effective_bits_per_key: shape.effective_bits_per_key,
            effective_bits_per_key_min: shape.effective_bits_per_key,
            effective_bits_per_key_max: shape.effective_bits_per_key,
            bits_per_key_budget: shape.bits_per_key_budget,
            bits_per_key_cap: shape.bits_per_key_cap,
            write_amp: io.write_amplification(),
            write_amp_before_settle: None,
            user_write_bytes: io.user_write_bytes,
            table_write_bytes: io.table_write_bytes,
            wal_write_bytes: io.wal_write_bytes,
            write_causes: io.write_causes,
            write_stalls: io.write_stalls,
            write_slowdowns: io.write_slowdowns,
            write_stops: io.write_stops,
            write_stall_ms: io.write_stall_micros.map(|micros| micros as f64 / 1e3),
            compaction_cpu_share: None,
            cpu_seconds: None,
            compaction_state: shape.compaction_state.clone(),
            design: shape.design.clone(),
            range_filter_probes_per_op: per_op(io.range_filter_probes),
            range_filter_negatives_per_op: per_op(io.range_filter_negatives),
            seek_runs_per_op: per_op(io.seek_runs),
            data_reads_per_op_by_level: io
                .data_block_reads_by_level
                .map(|levels| levels.iter().map(|&reads| per(reads, counts.ops)).collect()),
            cache_hits_per_op: io.cache_hits.map(|hits| IoPerOp {
                data: Some(per(hits.data, counts.ops)),
                index: Some(per(hits.index, counts.ops)),
                filter: Some(per(hits.filter, counts.ops)),
            }),
            block_read_us_per_op: per_op(io.block_read_micros),
            scan_readahead_reads_per_op: per_op(io.scan_readahead_reads),
            scan_readahead_blocks_per_op: per_op(io.scan_readahead_blocks),
            range_filter_bytes: shape.range_filter_bytes,
            pinned_bytes: shape.pinned_bytes,
            filter_rebuilds: io.filter_rebuilds,
            filter_rebuild_bytes: io.filter_rebuild_bytes,
            compaction_busy_share: io
                .compaction_micros
                .filter(|_| seconds > 0.0)
                .map(|micros| micros as f64 / 1e6 / seconds),
            filter_bytes_on_disk: shape.filter_bytes_on_disk,
            filter_bytes_in_use: shape.filter_bytes_in_use,
            background_writes: counts.background_writes,
            background_writes_per_sec: if seconds > 0.0 {
                counts.background_writes as f64 / seconds
            } else {
                0.0
            },
            table_bytes: 0,
            block_bytes_uncompressed: None,
            block_bytes_stored: None,
            compression_ratio: None,
            compress_us: None,
            decompress_us: None,
            blocks_decompressed: None,
            levels: shape.levels.len(),
            runs: shape.runs(),
            probe_times: shape.probe_times,
            predicted_reads_per_seek: None,
            predicted_write_amp: None,
            predicted_reads_per_lookup: lookup_predictions(phase, shape).0,
            predicted_reads_per_lookup_new_keys: None,
            predicted_data_reads_per_lookup_without_cache: lookup_predictions(phase, shape).1,
        }
        .with_compression(io, shape)
    }

    /// Sets the table bytes and compression figures from counters and tree taken now (at the end
    /// of the phase, or after the settle that follows a write phase).
    pub fn with_compression(mut self, io: &EngineCounters, shape: &TreeShape) -> Self {
        self.table_bytes = shape.table_bytes;
        let compression = io.compression;
        self.block_bytes_uncompressed = compression.map(|c| c.uncompressed_bytes);
        self.block_bytes_stored = compression.map(|c| c.stored_bytes);
        self.compression_ratio = compression
            .filter(|c| c.stored_bytes > 0)
            .map(|c| c.uncompressed_bytes as f64 / c.stored_bytes as f64);
        self.compress_us = compression
            .and_then(|c| c.compress_nanos)
            .map(|nanos| nanos as f64 / 1e3);
        self.decompress_us = compression
            .and_then(|c| c.decompress_nanos)
            .map(|nanos| nanos as f64 / 1e3);
        self.blocks_decompressed = compression.map(|c| c.blocks_decompressed);
        self
    }
}

/// A figure with `decimals` places, or `-` when the engine cannot say.
pub fn optional(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(value) => format!("{value:.decimals$}"),
        None => "-".to_string(),
    }
}

/// The `bpk use/disk` cell: the filter bits per key lookups use (what the filter budget is about:
/// the engine's effective bits per key), then the bits per key on disk after a slash where they
/// differ at one decimal (elastic filters keep modules beyond those in use, DESIGN.md §3.5). An
/// engine that reports only one figure shows it alone; `-` when it reports neither.
pub fn bits_per_key_cell(in_use: Option<f64>, on_disk: Option<f64>) -> String {
    match (in_use, on_disk) {
        (Some(in_use), Some(on_disk)) => {
            let (in_use, on_disk) = (format!("{in_use:.1}"), format!("{on_disk:.1}"));
            if in_use == on_disk {
                in_use
            } else {
                format!("{in_use}/{on_disk}")
            }
        }
        (Some(only), None) | (None, Some(only)) => format!("{only:.1}"),
        (None, None) => "-".to_string(),
    }
}

/// The table header matching [`write_row`].
pub fn write_header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<8} {:<16} {:>9} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} {:>6} {:>12} {:>9} {:>9}",
        "engine",
        "phase",
        "ops",
        "ops/s",
        "p50_us",
        "p99_us",
        "p999_us",
        "mean_us",
        "data/op",
        "idx/op",
        "flt/op",
        "unnec/lk",
        "fp/lk",
        "w-amp",
        "s-amp",
        "bpk use/disk",
        "found",
        "stall_ms"
    )
}

/// One table row; `found` is printed for read phases.
pub fn write_row(
    out: &mut dyn Write,
    result: &PhaseResult,
    counts: &PhaseCounts,
) -> io::Result<()> {
    let found = if counts.existing_lookups == 0 {
        "-".to_string()
    } else {
        counts.found.to_string()
    };
    writeln!(
        out,
        "{:<8} {:<16} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} {:>6} {:>12} {:>9} {:>9}",
        result.engine,
        result.phase.name(),
        result.ops,
        result.ops_per_sec,
        result.latency_us.p50,
        result.latency_us.p99,
        result.latency_us.p999,
        result.latency_us.mean,
        optional(result.io_per_op.data, 3),
        optional(result.io_per_op.index, 3),
        optional(result.io_per_op.filter, 3),
        optional(result.unnecessary_data_reads_per_lookup, 4),
        optional(result.false_positives_per_lookup, 4),
        optional(result.write_amp, 2),
        optional(result.space_amp, 2),
        bits_per_key_cell(result.effective_bits_per_key, result.avg_bits_per_key),
        found,
        optional(result.write_stall_ms, 1)
    )
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A line under a point-read phase's row where the engine's count of unnecessary data-block
/// reads is a range (RocksDB's), with both ends.
pub fn write_unnecessary_range(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    let (Some(low), Some(high)) = (
        result.unnecessary_data_reads_per_lookup,
        result.unnecessary_data_reads_max_per_lookup,
    ) else {
        return Ok(());
    };
    if high == 0.0 {
        return Ok(());
    }
    writeln!(
        out,
        "  unnecessary data-block reads per lookup between {low:.4} (counted: a found key's own block taken as read from the device) and {high:.4} (taken as cached where its lookup read blocks of both kinds)"
    )
}

/// A line under a point-read or seek phase's row with the cost model's prediction for the tree
/// it read (Strata only), beside what the engine counted: device reads per lookup (or per seek)
/// by block kind through the block cache, then, for lookups, the data blocks the model without
/// the cache predicts.
pub fn write_prediction(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    if let Some(predicted) = result.predicted_reads_per_seek {
        write!(
            out,
            "  model (strata::model::seek): device reads per seek predicted/measured: {}",
            predicted_by_kind(&predicted, result)
        )?;
        // The model counts the data blocks a scan reaches; with read-ahead some of them come
        // from a window, not a device read of their own.
        let from_windows = result
            .scan_readahead_blocks_per_op
            .filter(|&blocks| blocks > 0.0);
        return match (from_windows, result.io_per_op.data) {
            (Some(blocks), Some(data)) => writeln!(
                out,
                "; data blocks reached (device reads plus blocks from read-ahead) {:.4} ({})",
                data + blocks,
                ratio(Some(data + blocks), predicted.data)
            ),
            _ => writeln!(out),
        };
    }
    let Some(predicted) = result.predicted_reads_per_lookup else {
        return Ok(());
    };
    let measured = &result.io_per_op;
    write!(
        out,
        "  model (strata::model::tree): device reads per lookup predicted/measured: {}",
        predicted_by_kind(&predicted, result)
    )?;
    if let Some(new_keys) = result.predicted_reads_per_lookup_new_keys {
        write!(
            out,
            "; every key new data {:.4} ({}), index {:.4} ({}), filter {:.4} ({})",
            new_keys.data,
            ratio(measured.data, new_keys.data),
            new_keys.index,
            ratio(measured.index, new_keys.index),
            new_keys.filter,
            ratio(measured.filter, new_keys.filter),
        )?;
    }
    match result.predicted_data_reads_per_lookup_without_cache {
        Some(uncached) => writeln!(
            out,
            "; without the cache data {uncached:.4} ({})",
            ratio(measured.data, uncached)
        ),
        None => writeln!(out),
    }
}

/// measured/predicted, or `-` where either is missing or the prediction prints as 0.0000 (no
/// ratio worth printing).
fn ratio(measured: Option<f64>, predicted: f64) -> String {
    optional(
        measured
            .filter(|_| predicted >= 0.5e-4)
            .map(|measured| measured / predicted),
        2,
    )
}

/// `data P/M (R), index P/M (R), filter P/M (R)`: predicted and measured reads per operation by
/// block kind, with measured/predicted.
fn predicted_by_kind(predicted: &PredictedBlockReads, result: &PhaseResult) -> String {
    let measured = &result.io_per_op;
    format!(
        "data {:.4}/{} ({}), index {:.4}/{} ({}), filter {:.4}/{} ({})",
        predicted.data,
        optional(measured.data, 4),
        ratio(measured.data, predicted.data),
        predicted.index,
        optional(measured.index, 4),
        ratio(measured.index, predicted.index),
        predicted.filter,
        optional(measured.filter, 4),
        ratio(measured.filter, predicted.filter),
    )
}

/// A line after a settled fill phase with the cost models' write amplification (Strata only),
/// beside the measured one: the policy replayed, then the closed form on the settled tree.
pub fn write_write_prediction(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    let Some(predicted) = result.predicted_write_amp else {
        return Ok(());
    };
    let measured = result.write_amp;
    let closed_form = match predicted.closed_form {
        Some(closed_form) => format!("{closed_form:.2} ({})", ratio(measured, closed_form)),
        None => "none for this policy".to_string(),
    };
    writeln!(
        out,
        "  model (strata::model::writes): table bytes written per user byte predicted/measured: replay {:.3}/{} ({}); closed form on the tree's {} disk levels {closed_form}",
        predicted.replay,
        optional(measured, 3),
        ratio(measured, predicted.replay),
        predicted.levels,
    )
}

/// A line under a read phase's row with Strata's timed probes, when lookups timed probes of
/// every kind: what a false positive costs with its block cached and from the device.
pub fn write_probe_times(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    let Some(times) = result.probe_times.filter(|_| !result.phase.is_write()) else {
        return Ok(());
    };
    let (Some(rejected), Some(cached), Some(device)) = (
        times.rejected_us,
        times.cached_block_us,
        times.device_block_us,
    ) else {
        return Ok(());
    };
    writeln!(
        out,
        "  probes timed (strata, one lookup in 16, since each file was first probed): {rejected:.2} us answered by the filter, {cached:.2} us with a cached data block, {device:.2} us with a device read; a cached false positive costs {} of a device read",
        optional(times.cached_false_positive_cost, 3)
    )
}

/// A line under a phase's row saying what block compression did in it, when the engine counts
/// it and there was anything to say (blocks written or decompressed).
/// For a phase that wrote: its table bytes by cause beside its write amplification, and its WAL
/// bytes (`  writes: user U MiB, tables T MiB (W x): flush F (f x), ->L1 ...; N trivial moves;
/// WAL B MiB`).
pub fn write_write_causes(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    let (Some(user), Some(table)) = (result.user_write_bytes, result.table_write_bytes) else {
        return Ok(());
    };
    if user == 0 && table == 0 {
        return Ok(());
    }
    let per_user = |bytes: u64| {
        if user == 0 {
            "-".to_string()
        } else {
            format!("{:.2}x", bytes as f64 / user as f64)
        }
    };
    let causes = match &result.write_causes {
        Some(causes) => {
            format!(
                ": {}; {} trivial moves",
                causes
                    .named()
                    .iter()
                    .map(|(cause, bytes)| format!(
                        "{cause} {:.2} MiB ({})",
                        mib(*bytes),
                        per_user(*bytes)
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                causes.trivial_moves
            ) + &if causes.total() == table {
                String::new()
            } else {
                // RocksDB's causes come from its info log, its total from its tickers.
                format!(" (causes sum to {:.2} MiB)", mib(causes.total()))
            }
        }
        None => String::new(),
    };
    writeln!(
        out,
        "  writes: user {:.2} MiB, tables {:.2} MiB ({}){causes}; WAL {}",
        mib(user),
        mib(table),
        per_user(table),
        result
            .wal_write_bytes
            .map_or_else(|| "-".to_string(), |wal| format!("{:.2} MiB", mib(wal)))
    )
}

pub fn write_compression(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    let (Some(uncompressed), Some(stored), Some(decompressed)) = (
        result.block_bytes_uncompressed,
        result.block_bytes_stored,
        result.blocks_decompressed,
    ) else {
        return Ok(());
    };
    if uncompressed == 0 && decompressed == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  compression: {:.2} MiB of blocks written as {:.2} MiB (ratio {}), compress {} ms; {} blocks decompressed in {} ms; tables {:.2} MiB",
        mib(uncompressed),
        mib(stored),
        optional(result.compression_ratio, 2),
        optional(result.compress_us.map(|us| us / 1e3), 1),
        decompressed,
        optional(result.decompress_us.map(|us| us / 1e3), 1),
        mib(result.table_bytes)
    )
}

/// For a phase with a background writer: the writes it did, the write stalls, and how much of
/// the phase compaction took (wall-clock busy share and CPU share).
pub fn write_background(out: &mut dyn Write, result: &PhaseResult) -> io::Result<()> {
    if let (Some(probes), Some(negatives)) = (
        result.range_filter_probes_per_op,
        result.range_filter_negatives_per_op,
    ) {
        if probes > 0.0 {
            writeln!(
                out,
                "  range filters: {probes:.3} probes and {negatives:.3} files ruled out per op; {} MiB in memory",
                optional(result.range_filter_bytes.map(mib), 2)
            )?;
        }
    }
    if let Some(runs) = result.seek_runs_per_op.filter(|&runs| runs > 0.0) {
        writeln!(out, "  range lookups: {runs:.3} runs sought per op")?;
    }
    if let (Some(rebuilds), Some(bytes)) = (result.filter_rebuilds, result.filter_rebuild_bytes) {
        if rebuilds > 0 {
            writeln!(
                out,
                "  filter rebuilds: {rebuilds} files, {:.2} MiB read and written",
                mib(bytes)
            )?;
        }
    }
    if result.background_writes == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  background writer: {} writes ({:.0}/s); write stalls {} ({} ms); compaction busy share {}, CPU share {}; CPU {}",
        result.background_writes,
        result.background_writes_per_sec,
        result
            .write_stalls
            .map_or_else(|| "-".to_string(), |n| n.to_string()),
        optional(result.write_stall_ms, 1),
        optional(result.compaction_busy_share, 3),
        optional(result.compaction_cpu_share, 3),
        result.cpu_seconds.map_or_else(
            || "-".to_string(),
            |cpu| format!(
                "{:.2} s ({:.2} compaction, {:.2} flush), {:.2} us/op",
                cpu.total,
                cpu.compaction,
                cpu.flush,
                cpu.total * 1e6 / result.ops.max(1) as f64
            )
        ),
    )
}

/// Prints the tree: per non-empty level its runs, files, entries, size and filter bits per key,
/// plus the memtables (whose entries are not yet in any level).
pub fn write_tree(out: &mut dyn Write, title: &str, shape: &TreeShape) -> io::Result<()> {
    let entries: Option<u64> = shape.levels.iter().map(|l| l.entries).sum();
    writeln!(
        out,
        "tree {title}: {} levels, {} runs, {} files, {} entries in tables ({:.2} MiB), memtables {} MiB, filters {} bits/key{}",
        shape.levels.len(),
        shape.runs(),
        shape.levels.iter().map(|l| l.files).sum::<usize>(),
        entries.map_or("?".to_string(), |e| e.to_string()),
        mib(shape.table_bytes),
        optional(shape.memtable_bytes.map(mib), 2),
        optional(shape.avg_bits_per_key, 2),
        match (shape.effective_bits_per_key, shape.bits_per_key_cap) {
            (Some(effective), Some(cap)) =>
                format!(" ({effective:.2} without skipped filters; budget cap {cap:.2})"),
            _ => String::new(),
        }
    )?;
    for level in &shape.levels {
        writeln!(
            out,
            "  L{:<2} runs {:>3}  files {:>5}  entries {:>11}  {:>9.2} MiB  {:>6} bits/key",
            level.level,
            level.runs,
            level.files,
            level.entries.map_or("?".to_string(), |e| e.to_string()),
            mib(level.bytes),
            optional(level.bits_per_key, 2)
        )?;
    }
    if let Some(state) = &shape.compaction_state {
        writeln!(out, "  compaction state: {state}")?;
    }
    if let Some(design) = &shape.design {
        writeln!(out, "  design in force: {design}")?;
    }
    if let (Some(in_use), Some(on_disk)) = (shape.filter_bytes_in_use, shape.filter_bytes_on_disk) {
        writeln!(
            out,
            "  filter memory: {:.2} MiB in use, {:.2} MiB on disk; pinned index and filters {}",
            mib(in_use),
            mib(on_disk),
            shape
                .pinned_bytes
                .map_or("?".to_string(), |bytes| format!("{:.2} MiB", mib(bytes)))
        )?;
    }
    if let Some(bytes) = shape.access_statistics_bytes {
        writeln!(
            out,
            "  access statistics: {:.1} KiB{}",
            bytes as f64 / 1024.0,
            if bytes == 0 { " (not kept)" } else { "" }
        )?;
    }
    if let (Some((keys, bytes)), Some(entries)) = (shape.top_index, entries) {
        writeln!(
            out,
            "  top-level index: {keys} keys in {:.3} MiB ({:.1} bytes per key, {:.3} bits per entry of the tree)",
            mib(bytes),
            bytes as f64 / keys.max(1) as f64,
            bytes as f64 * 8.0 / entries.max(1) as f64
        )?;
    }
    if let (Some(bytes), Some(entries)) = (shape.range_filter_bytes.filter(|&b| b > 0), entries) {
        writeln!(
            out,
            "  range filters: {:.2} MiB in open files ({:.2} bits per entry)",
            mib(bytes),
            bytes as f64 * 8.0 / entries.max(1) as f64
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::engine::{EngineKind, PredictedLookupIo};
    use crate::bench::{CompactionKind, FilterAllocatorKind};

    /// The summary's bits per key column shows what the budget is about, the bits in use, and
    /// the bits on disk beside them only where they differ.
    #[test]
    fn bits_per_key_cell_shows_in_use_then_on_disk() {
        assert_eq!(bits_per_key_cell(Some(10.0), Some(15.0)), "10.0/15.0");
        assert_eq!(bits_per_key_cell(Some(9.96), Some(9.98)), "10.0");
        assert_eq!(bits_per_key_cell(Some(10.0), Some(10.0)), "10.0");
        assert_eq!(bits_per_key_cell(None, Some(7.5)), "7.5");
        assert_eq!(bits_per_key_cell(Some(2.0), None), "2.0");
        assert_eq!(bits_per_key_cell(None, None), "-");
        let mut header = Vec::new();
        write_header(&mut header).expect("writes");
        let header = String::from_utf8(header).expect("utf-8");
        assert!(header.contains(" bpk use/disk "), "{header}");
    }

    #[test]
    fn latency_summary_is_in_microseconds() {
        let mut latencies = Latencies::new();
        for micros in 1..=1000u64 {
            latencies.record(Duration::from_micros(micros));
        }
        let summary = latencies.summary();
        assert!((summary.p50 - 500.0).abs() < 1.0, "{summary:?}");
        assert!((summary.p99 - 990.0).abs() < 2.0, "{summary:?}");
        assert!((summary.mean - 500.5).abs() < 1.0, "{summary:?}");
    }

    #[test]
    fn per_operation_figures_divide_by_ops_and_lookups() {
        let io = EngineCounters {
            data_block_reads: Some(30),
            filter_false_positives: Some(5),
            unnecessary_data_reads: Some(4),
            ..EngineCounters::default()
        };
        let counts = PhaseCounts {
            ops: 10,
            lookups: 10,
            existing_lookups: 10,
            found: 10,
            ..PhaseCounts::default()
        };
        let variant = Variant {
            engine: EngineKind::Strata,
            filter_policy: FilterAllocatorKind::Uniform,
            compaction: CompactionKind::Leveling,
            bits_per_key: 10.0,
            label_bits_per_key: false,
            garnering_c: None,
            label_garnering_c: false,
            access_statistics: false,
            label_access_statistics: false,
        };
        let result = PhaseResult::new(
            &variant,
            1,
            Workload::Mix(crate::bench::ops::Mix::ReadRandom),
            &counts,
            &Latencies::new(),
            Duration::from_millis(500),
            &io,
            &TreeShape::default(),
        );
        assert_eq!(result.io_per_op.data, Some(3.0));
        assert_eq!(result.io_per_op.index, None, "unknown stays unknown");
        assert_eq!(result.false_positives_per_lookup, Some(0.5));
        assert_eq!(result.unnecessary_data_reads_per_lookup, Some(0.4));
        assert_eq!(result.ops_per_sec, 20.0);
        assert_eq!(result.write_amp, None);
        assert_eq!(optional(None, 2), "-");
        assert_eq!(optional(Some(1.23456), 2), "1.23");
    }

    /// The phase's filter-memory range takes in its samples and its end: a dip mid-phase shows
    /// in the minimum though the phase ends at the budget; samples without filters are skipped.
    #[test]
    fn the_filter_range_covers_every_sample_and_the_end() {
        let variant = Variant {
            engine: EngineKind::Strata,
            filter_policy: FilterAllocatorKind::Mnemosyne,
            compaction: CompactionKind::Leveling,
            bits_per_key: 2.0,
            label_bits_per_key: false,
            garnering_c: None,
            label_garnering_c: false,
            access_statistics: false,
            label_access_statistics: false,
        };
        let ended_with = |shape: &TreeShape| {
            PhaseResult::new(
                &variant,
                1,
                Workload::Fillrandom,
                &PhaseCounts::default(),
                &Latencies::new(),
                Duration::from_millis(10),
                &EngineCounters::default(),
                shape,
            )
        };
        let mut result = ended_with(&TreeShape {
            effective_bits_per_key: Some(2.0),
            ..TreeShape::default()
        });
        assert_eq!(result.effective_bits_per_key_min, Some(2.0));
        assert_eq!(result.effective_bits_per_key_max, Some(2.0));
        let point = |bits: Option<f64>| SeriesPoint {
            configuration: variant.label(),
            engine: "strata",
            filter_policy: "mnemosyne",
            compaction: "leveling",
            run: 1,
            phase: Workload::Fillrandom,
            ops_done: 0,
            seconds: 0.0,
            ops_per_sec: 0.0,
            avg_bits_per_key: bits,
            effective_bits_per_key: bits,
            predicted_reads_per_lookup: None,
            predicted_reads_per_lookup_new_keys: None,
            predicted_data_reads_per_lookup_without_cache: None,
        };
        let samples = [
            point(None),
            point(Some(1.58)),
            point(Some(2.04)),
            point(Some(1.9)),
        ];
        result.include_filter_samples(&samples);
        assert_eq!(result.effective_bits_per_key_min, Some(1.58));
        assert_eq!(result.effective_bits_per_key_max, Some(2.04));
        assert_eq!(result.effective_bits_per_key, Some(2.0));
        // A peer that reports no filter memory has no range.
        let mut peer = ended_with(&TreeShape::default());
        peer.include_filter_samples(&samples[..1]);
        assert_eq!(peer.effective_bits_per_key_min, None);
    }

    /// A readmissing phase's predictions are the mean over its samples and its end (the filters
    /// in force moved during the phase); samples without a prediction are left out, and a phase
    /// the model does not price (a fill) stays without one.
    #[test]
    fn lookup_predictions_are_averaged_over_the_phase() {
        let variant = Variant {
            engine: EngineKind::Strata,
            filter_policy: FilterAllocatorKind::Elastic,
            compaction: CompactionKind::Ecotune,
            bits_per_key: 3.0,
            label_bits_per_key: false,
            garnering_c: None,
            label_garnering_c: false,
            access_statistics: false,
            label_access_statistics: false,
        };
        let reads = |data: f64| PredictedBlockReads {
            data,
            index: data / 10.0,
            filter: 0.0,
        };
        let shape = |data: f64| TreeShape {
            predicted_lookup_io: Some(PredictedLookupIo {
                zero_result: 2.0 * data,
                existing: 1.0,
                zero_result_device: reads(data),
                existing_device: reads(0.9),
            }),
            ..TreeShape::default()
        };
        let ended = |phase: Workload, data: f64| {
            PhaseResult::new(
                &variant,
                1,
                phase,
                &PhaseCounts::default(),
                &Latencies::new(),
                Duration::from_millis(10),
                &EngineCounters::default(),
                &shape(data),
            )
        };
        let point = |data: Option<f64>| {
            let (through, without) = match data {
                Some(d) => lookup_predictions(Workload::Readmissing, &shape(d)),
                None => (None, None),
            };
            SeriesPoint {
                configuration: variant.label(),
                engine: "strata",
                filter_policy: "elastic",
                compaction: "ecotune",
                run: 1,
                phase: Workload::Readmissing,
                ops_done: 0,
                seconds: 0.0,
                ops_per_sec: 0.0,
                avg_bits_per_key: None,
                effective_bits_per_key: None,
                predicted_reads_per_lookup: through,
                predicted_reads_per_lookup_new_keys: None,
                predicted_data_reads_per_lookup_without_cache: without,
            }
        };
        let samples = [point(Some(0.40)), point(None), point(Some(0.30))];
        let mut result = ended(Workload::Readmissing, 0.20);
        assert_eq!(result.predicted_reads_per_lookup, Some(reads(0.20)));
        result.average_lookup_predictions(&samples);
        let averaged = result.predicted_reads_per_lookup.expect("a prediction");
        assert!((averaged.data - 0.30).abs() < 1e-12, "{averaged:?}");
        assert!((averaged.index - 0.030).abs() < 1e-12, "{averaged:?}");
        let without = result
            .predicted_data_reads_per_lookup_without_cache
            .expect("a prediction without the cache");
        assert!((without - 0.60).abs() < 1e-12, "{without}");
        // No sample: the end's prediction as it was.
        let mut alone = ended(Workload::Readmissing, 0.20);
        alone.average_lookup_predictions(&[]);
        assert_eq!(alone.predicted_reads_per_lookup, Some(reads(0.20)));
        // A fill is not priced per lookup, whatever its samples hold.
        let mut fill = ended(Workload::Fillrandom, 0.20);
        fill.average_lookup_predictions(&samples);
        assert_eq!(fill.predicted_reads_per_lookup, None);
        assert_eq!(
            lookup_predictions(Workload::Fillrandom, &shape(0.2)),
            (None, None)
        );
    }
}
