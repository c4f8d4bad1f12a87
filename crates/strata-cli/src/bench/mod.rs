//! `strata bench`: a db_bench-like benchmark. Runs the `--workloads` phases in order against one
//! database per engine (`--engines strata,rocksdb,fjall`; the peers need `--features peers`),
//! printing a table row per phase (throughput, latency percentiles, block reads per operation
//! from the engine's own counters) and the tree shape before each read phase; `--json` writes the
//! configuration and every phase's result for scripts.
//!
//! Each phase zeroes the engine's counters when it starts and reads them when it ends, so its
//! figures are its own. Background flushes and compactions
//! left over from a fill phase may still run during the next phase unless `--settle` is given.
//!
//! Built-in sanity checks: after a fill phase (either fill writes every key `0..num`), every
//! `readrandom` lookup and every `seekrandom` seek must find its key; `readmissing` must find
//! none. A failed check is an error (exit code 2).
//!
//! `workload.rs` holds the key format and generators, `report.rs` the result types and printing.

pub mod compare;
pub mod cpu;
pub mod distribution;
pub mod engine;
pub mod ops;
pub mod options_file;
pub mod plot;
pub mod preset;
pub mod report;
pub mod workload;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use distribution::{KeyChooser, KeyDistribution};
use engine::{Engine, EngineConfig, EngineKind, TreeShape};
use ops::{Mix, Op, StreamSpec};
use serde::Serialize;
use std::str::FromStr;
use strata::CompressionPolicy;

use crate::error::{CliError, CliResult};
// The names of the policies come from the CLI's one registry; re-exported for the engines.
pub use crate::policies::{CompactionKind, FilterAllocatorKind};
use report::{Latencies, PhaseCounts, PhaseResult, SeriesPoint};
use workload::{FillOrder, KeyFormat, PhaseSpec, Workload};

/// Keys in a full run; `--quick` uses [`QUICK_NUM`].
const DEFAULT_NUM: u64 = 1_000_000;
/// Keys (and read operations) in a `--quick` run: about a minute or less on 2 cores in release.
const QUICK_NUM: u64 = 500_000;
/// Memtable size of a `--quick` run: small enough that the 500,000 keys (about 60 MiB) make a
/// tree of several levels, so the run measures table reads and not just the memtable.
const QUICK_WRITE_BUFFER_BYTES: u64 = 4 << 20;
/// Memtable size of a full run (the engine's and RocksDB's default).
const DEFAULT_WRITE_BUFFER_BYTES: u64 = 64 << 20;

/// How the peers (RocksDB, fjall) are configured where the benchmark's settings leave them a
/// choice Strata does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PeerConfig {
    /// As each peer's own experts would set it up for the same memory: RocksDB with partitioned
    /// index and filters (4 KiB partitions, top level pinned, index and filter blocks cached at
    /// high priority, level-0 metadata pinned) so a cache miss reads one small partition and a
    /// small cache's shards never hold less than one index block; fjall with its own defaults
    /// (pinned level-0/1 index and level-0 filter blocks, partitioned index and filters from
    /// level 3). With `--pin-index-filter` both pin every table's index and filter.
    Expert,
    /// Shaped like Strata today: one unpartitioned index block and one filter block per table,
    /// nothing pinned unless `--pin-index-filter`. With a small cache RocksDB's shards can then be
    /// smaller than one index block, which never stays cached: use it only to compare table
    /// layouts, not engines.
    StrataLike,
}

/// One configuration a benchmark runs: an engine with a filter policy, a merge policy and a
/// filter budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Variant {
    /// The engine.
    pub engine: EngineKind,
    /// Strata's filter policy (peers: uniform).
    pub filter_policy: FilterAllocatorKind,
    /// The merge policy.
    pub compaction: CompactionKind,
    /// Filter bits per key (the budget).
    pub bits_per_key: f64,
    /// True when several budgets run, so labels name theirs.
    #[serde(skip)]
    pub label_bits_per_key: bool,
    /// Garnering's `c` (DESIGN.md §5.4) for a Garnering configuration, `None` for the other policies.
    pub garnering_c: Option<f64>,
    /// True when several `c` run, so Garnering labels name theirs.
    #[serde(skip)]
    pub label_garnering_c: bool,
    /// Strata keeps Merlin's access statistics (always for an allocator that needs them; peers:
    /// false).
    pub access_statistics: bool,
    /// True when statistics on and off are compared, so labels say which.
    #[serde(skip)]
    pub label_access_statistics: bool,
}

impl Variant {
    /// `strata/uniform/leveling`, with `@2bpk` when several budgets are compared and `@c0.6`
    /// when several Garnering `c` are.
    pub fn label(&self) -> String {
        let mut label = format!(
            "{}/{}/{}",
            self.engine.name(),
            self.filter_policy.name(),
            self.compaction.name()
        );
        if let Some(c) = self.garnering_c.filter(|_| self.label_garnering_c) {
            label.push_str(&format!("@c{c}"));
        }
        if self.label_bits_per_key {
            label.push_str(&format!("@{}bpk", self.bits_per_key));
        }
        if self.label_access_statistics && self.engine == EngineKind::Strata {
            label.push_str(if self.access_statistics {
                "@stats"
            } else {
                "@nostats"
            });
        }
        label
    }
}

/// Time-series points per phase when `--sample-every` is not given.
const SERIES_POINTS_PER_PHASE: u64 = 100;

/// Time-series points at least between two that run the cost model (`Bench::sample`): ten
/// predictions in a phase of the default hundred points.
const PREDICTIONS_EVERY_POINTS: u64 = 10;

/// The flags of `strata bench`. Scripts depend on these names: add, never rename.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Phases to run, in order. A phase other than a fill may end in `@OPS`, the operations it
    /// runs instead of `--reads` (`seekrandom@20000`): phases of one run can then last alike.
    #[arg(
        long,
        value_delimiter = ',',
        action = clap::ArgAction::Set,
        value_parser = PhaseSpec::from_str,
        default_value = "fillrandom,readrandom,readmissing,seekrandom"
    )]
    pub workloads: Vec<PhaseSpec>,
    /// Key distribution of reads, updates and seeks: uniform, zipfian[:theta],
    /// normal[:mean:stddev] (fractions of the key range), latest[:theta] [default: each
    /// workload's own: uniform for the db_bench ones, zipfian 0.99 for YCSB, latest for YCSB D].
    #[arg(long, value_parser = KeyDistribution::from_str)]
    pub distribution: Option<KeyDistribution>,
    /// Engines to run, each on its own fresh database (rocksdb and fjall need a build with
    /// `--features peers`).
    #[arg(long, value_enum, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "strata")]
    pub engines: Vec<EngineKind>,
    /// Keys written by a fill phase [default: 1000000, or 500000 with --quick].
    #[arg(long, value_parser = parse_count)]
    pub num: Option<u64>,
    /// Operations of each read phase [default: --num].
    #[arg(long, value_parser = parse_count)]
    pub reads: Option<u64>,
    /// Key size in bytes (the zero-padded decimal key index).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes (random bytes, compressible as --compression-ratio says).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Block compression of every engine (the peers configured the same way): a comma list of
    /// none, lz4, zstd or zstd:LEVEL, one per level from level 0 (deeper levels take the last),
    /// and optionally one with `-bottom` for the bottommost level: `none`, `lz4`, `zstd`,
    /// `lz4,zstd-bottom`, `none,none,lz4`. Strata's `Options::compression`.
    #[arg(long, default_value = "none", value_parser = parse_compression)]
    pub compression: CompressionPolicy,
    /// Fraction of each value that is random (db_bench's --compression_ratio): the rest repeats
    /// it, so values compress to about this fraction of their size. 1 = incompressible. The same
    /// seed draws the same keys whatever the ratio.
    #[arg(long, default_value_t = DEFAULT_COMPRESSION_RATIO)]
    pub compression_ratio: f64,
    /// Seed of every random choice (key order, read keys, values).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Bloom filter bits per key, the filter budget (a comma list compares budgets, e.g.
    /// 2,3,4,5).
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "10")]
    pub bits_per_key: Vec<f64>,
    /// Block cache capacity (bytes; KiB/MiB/GiB suffixes accepted).
    #[arg(long, default_value = "8MiB", value_parser = parse_bytes)]
    pub cache_bytes: u64,
    /// Read table files with O_DIRECT, so that block reads are device reads.
    #[arg(long)]
    pub direct_reads: bool,
    /// Largest read-ahead of a Strata scan that reads a file's blocks in order
    /// (`Options::scan_readahead_max_bytes`; 0 turns it off).
    #[arg(long, default_value = "256KiB", value_parser = parse_bytes)]
    pub scan_readahead_bytes: u64,
    /// Keep every table's index and filter blocks pinned in memory (outside the block cache),
    /// as RocksDB does with `cache_index_and_filter_blocks = false`.
    #[arg(long)]
    pub pin_index_filter: bool,
    /// How RocksDB and fjall are configured where Strata's settings leave them a choice:
    /// `expert` (what their own experts would choose at the same memory, printed with each run)
    /// or `strata-like` (one unpartitioned index and filter block per table, as Strata has).
    #[arg(long, value_enum, default_value = "expert")]
    pub peer_config: PeerConfig,
    /// Strata's index block restart interval (`Options::index_block_restart_interval`; default
    /// Strata's own). RocksDB's equivalent stays at its default of 1.
    #[arg(long)]
    pub index_restart_interval: Option<usize>,
    /// Compaction workers (Strata's `Options::max_background_compactions`; default Strata's
    /// own). RocksDB gets the same number of compaction threads (`max_background_jobs` = this + 1,
    /// one of them for flushes); fjall keeps its own worker pool.
    #[arg(long)]
    pub max_background_compactions: Option<usize>,
    /// The background writer's rate in MB/s (10^6 bytes of keys and values per second): a
    /// steady write stream beside the measured queries. Applies to `readwhilewriting` (default:
    /// full speed) and `ecotune` (default 2 MB/s).
    #[arg(long)]
    pub write_rate: Option<f64>,
    /// EcoTune's `beta_q` (`--compaction ecotune`): query speed while a main-level merge runs,
    /// as a share of the speed without.
    #[arg(long, default_value_t = 0.5)]
    pub ecotune_beta_q: f64,
    /// Fixes EcoTune's `r` (the share of long scans among queries). Without it the engine
    /// measures `r` over the queries it serves (DESIGN.md §6), as for any user; `--ecotune-r
    /// workload` gives it the first `ecotune:r` workload's ratio instead.
    #[arg(long)]
    pub ecotune_r: Option<String>,
    /// EcoTune's full index of the top level's keys (`--ecotune-top-level-index false` turns it
    /// off, to measure what it saves).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub ecotune_top_level_index: bool,
    /// Closed-loop query threads running a mix's operations (each its own seeded stream of
    /// `--reads` operations; latencies are the first thread's). Mixes that insert keys take 1.
    #[arg(long, default_value_t = 1)]
    pub query_threads: usize,
    /// Strata partitions the index and filter of a table whose whole-file index block or largest
    /// filter module would exceed this many bytes (`Options::partition_metadata_above_bytes`;
    /// default Strata's own; `never` keeps every table unpartitioned).
    #[arg(long, value_parser = parse_partition_threshold)]
    pub partition_metadata_above_bytes: Option<u64>,
    /// A cap in bytes on Strata's filters in use besides `--bits-per-key` (elastic filters only,
    /// `Elastic::with_budget_bytes`; KiB/MiB/GiB suffixes accepted).
    #[arg(long, value_parser = parse_bytes)]
    pub filter_budget_bytes: Option<u64>,
    /// Bytes per second (read plus written) Strata's filter rebuilds may take
    /// (`Options::filter_rebuild_bytes_per_sec`; elastic filters only; 0 turns them off;
    /// KiB/MiB/GiB suffixes accepted). Default: Strata's, 8 MiB.
    #[arg(long, value_parser = parse_bytes)]
    pub filter_rebuild_rate: Option<u64>,
    /// Modules every new file of Strata's elastic filters gets on disk at least
    /// (`Elastic::with_disk_modules`, 1 to 6; default 3).
    #[arg(long)]
    pub elastic_disk_modules: Option<usize>,
    /// The family Strata's filters are built in: bloom, ribbon, or auto (Bloom for flushes and
    /// small filters, Ribbon for other compaction outputs; `Options::filter_family`).
    #[arg(long, default_value = "bloom", value_parser = parse_filter_family)]
    pub filter_family: strata::FilterFamilies,
    /// Strata's range filters (`Options::range_filter_bits`): 0 (the default) writes none; 1 to
    /// 20 gives every table file one, which bounded short seeks (EcoTune's workload) ask before
    /// reading a run.
    #[arg(long, default_value_t = 0)]
    pub range_filter_bits: u32,
    /// Strata's auto-tune (`Options::auto_tune`, DESIGN.md §10 "Self-tuning"): the engine
    /// prices its design against the tuner's best for the mix it served since its last
    /// decision and switches its merge policy and size ratio when that pays; the design in
    /// force is printed after every phase. Peers run as configured.
    #[arg(long)]
    pub auto_tune: bool,
    /// Operations between two auto-tune decisions (`AutoTuneOptions::every_operations`;
    /// default the engine's, 250,000). Implies `--auto-tune`.
    #[arg(long, value_name = "OPS")]
    pub auto_tune_every: Option<u64>,
    /// Seconds after which auto-tune decides even before `--auto-tune-every` operations
    /// (`AutoTuneOptions::every_seconds`; default the engine's, 60; 0: by operations alone).
    /// Implies `--auto-tune`.
    #[arg(long, value_name = "SECONDS")]
    pub auto_tune_every_seconds: Option<f64>,
    /// The largest share of one core auto-tune's decisions may take, in (0, 1]: after a decision
    /// of `d` seconds the next waits `d / SHARE` (`AutoTuneOptions::max_processor_share`; default
    /// the engine's, 0.05). Implies `--auto-tune`.
    #[arg(long, value_name = "SHARE")]
    pub auto_tune_max_processor_share: Option<f64>,
    /// Whether auto-tune merges the whole tree into one run when a stretch of reads is predicted
    /// to save more than the merge costs (`AutoTuneOptions::compact_for_reads`): `on` (the
    /// engine's default) or `off`. Implies `--auto-tune`.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub auto_tune_merge_for_reads: Option<bool>,
    /// Operations after which auto-tune decides at once when the mix changed since its last
    /// decision; it also decides as soon as a merge for reads would pay
    /// (`AutoTuneOptions::early_decisions_after`; default the engine's, 5,000; 0: only every
    /// `--auto-tune-every` operations or `--auto-tune-every-seconds`). Implies `--auto-tune`.
    #[arg(long, value_name = "OPS")]
    pub auto_tune_early_after: Option<u64>,
    /// The least predicted gain, as a share of the design in force's operations per second, that
    /// is worth a switch (`AutoTuneOptions::min_gain`; default the engine's, 0.10). Implies
    /// `--auto-tune`.
    #[arg(long, value_name = "SHARE")]
    pub auto_tune_min_gain: Option<f64>,
    /// Decisions in a row that must rank the same design first before auto-tune switches to it,
    /// at least 1 (`AutoTuneOptions::confirmations`; default the engine's, 2). Implies
    /// `--auto-tune`.
    #[arg(long, value_name = "N")]
    pub auto_tune_confirmations: Option<u32>,
    /// The longest horizon, in intervals, over which a switch must pay for its round trip
    /// (`AutoTuneOptions::horizon_intervals`; default the engine's, 20). Implies `--auto-tune`.
    #[arg(long, value_name = "INTERVALS")]
    pub auto_tune_horizon: Option<f64>,
    /// Size of an index partition of Strata's partitioned tables (`Options::metadata_block_bytes`;
    /// default Strata's own, 4 KiB).
    #[arg(long, value_parser = parse_bytes)]
    pub metadata_block_bytes: Option<u64>,
    /// Merlin's per-file access statistics (DESIGN.md §4) in Strata: `on` or `off`, or `on,off`
    /// to compare both (the flag alone means `on`). The default is `Options::default()`'s (on);
    /// Mnemosyne+ keeps them whatever this says. Their memory is taken from the block cache.
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 0..=1,
        default_missing_value = "on",
        action = clap::ArgAction::Set,
        value_parser = parse_on_off
    )]
    pub access_statistics: Option<Vec<bool>>,
    /// Record one point lookup in this many in Merlin's statistics (Strata's
    /// `Options::access_sample_every`; default Strata's own, 16).
    #[arg(long)]
    pub access_sample_every: Option<u32>,
    /// Weight of the recent window in Merlin's estimates, in [0, 1] (Strata's
    /// `Options::access_recent_weight`, DESIGN.md §4's `r`).
    #[arg(long, default_value_t = 0.75)]
    pub access_recent_weight: f64,
    /// Merge policies to run (a comma list compares them).
    #[arg(long, value_enum, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "leveling")]
    pub compaction: Vec<CompactionKind>,
    /// Filter-allocation policies to run on Strata (a comma list compares them). The default is
    /// `Options::default()`'s: elastic filters, Strata's own allocation. Peers run their uniform
    /// filters at the same budget whatever is given here
    #[arg(long, value_enum, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "elastic")]
    pub filter_policy: Vec<FilterAllocatorKind>,
    /// Repeat every configuration this many times (medians are reported).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Run every engine and policy given in one invocation, alternating their order from run to
    /// run, and print medians and ratios against the first.
    #[arg(long)]
    pub compare: bool,
    /// Draw the comparison (median ops/s per phase and configuration) as an SVG; with a `.svg`
    /// name ending in `-series.svg` beside it, the throughput and bits-per-key time series.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Record a time-series point (throughput, average bits per key) every this many operations
    /// [default: a hundredth of each phase, so every phase has 100 points].
    #[arg(long, value_parser = parse_count)]
    pub sample_every: Option<u64>,
    /// Size ratio T of the compaction policy (a whole number for tiering and lazy leveling).
    #[arg(long, default_value_t = 10.0)]
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (DESIGN.md §5.4; `0 < c <= 1`, 1 is plain leveling); a comma
    /// list runs Garnering once per `c`, alternating with the other configurations.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "0.8")]
    pub garnering_c: Vec<f64>,
    /// Memtable size (bytes; KiB/MiB/GiB suffixes accepted) [default: 64MiB, or 4MiB with
    /// --quick].
    #[arg(long, value_parser = parse_bytes)]
    pub write_buffer_bytes: Option<u64>,
    /// Size at which compactions cut output table files (bytes; KiB/MiB/GiB suffixes accepted):
    /// Strata's `target_file_bytes`, RocksDB's `target_file_size_base`; fjall keeps its own rule
    /// (see its settings line).
    #[arg(long, value_parser = parse_bytes, default_value = "64MiB")]
    pub target_file_bytes: u64,
    /// Entries read after each seek by seekrandom.
    #[arg(long, default_value_t = 10)]
    pub seek_nexts: u64,
    /// seekrandom reads the closed range `[key i, key i + seek_nexts + 1)`: the engine is told
    /// the upper bound before it seeks (Strata's range filters can then leave runs out; RocksDB's
    /// `iterate_upper_bound`). Default: open seeks, as db_bench's.
    #[arg(long, default_value_t = false)]
    pub seek_bounded: bool,
    /// Database directory, reused if it exists [default: a fresh temporary directory, deleted
    /// afterwards].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Write the configuration and results as JSON to FILE (`-` for stdout; the table then goes
    /// to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Before each read phase, flush and wait for compactions, then print the tree; after the
    /// last phase too if it wrote. A phase that wrote (a fill, a mix with updates) counts the
    /// settle after it in its write amplification (`w-amp`; the phase alone in the JSON's
    /// `write_amp_before_settle`).
    #[arg(long)]
    pub settle: bool,
    /// With --settle, also compact the whole tree (level 0 included) before each read phase:
    /// the number of level-0 runs alone can swing a point-lookup comparison by 40%.
    #[arg(long)]
    pub settle_l0: bool,
    /// During fill phases, wait for the flush and the compactions the writes caused every
    /// quarter write buffer (`Db::wait_for_compactions`), so that the tree's shape follows from
    /// the keys written, not from how background work raced the writer: every filter policy and
    /// every run of one engine then reads the same unsettled tree, and a read comparison between
    /// them is one of policies, not of shapes. Fill throughput then includes the waits.
    #[arg(long)]
    pub paced_fill: bool,
    /// Preset for a run of about a minute: --num 500000, --write-buffer-bytes 4MiB and --settle,
    /// unless given.
    #[arg(long)]
    pub quick: bool,
    /// A named set of flags, applied before the flags given after it (which override it):
    /// quick, memory-pressure, paper-mnemosyne, ycsb (see `strata bench --help` and
    /// docs/BENCHMARKS.md).
    #[arg(long, value_enum)]
    pub preset: Option<preset::Preset>,
    /// An options file (TOML, `strata::options_file`; `strata tune --options-out` writes one):
    /// its settings become the bench flags that say the same, applied before the flags given
    /// after it (which override it), so peers run the same settings. A setting the bench has no
    /// flag for must have its default.
    #[arg(long, value_name = "FILE")]
    pub options: Option<PathBuf>,
    /// Size the Mnemosyne workloads as the paper's times this factor: `--num` and `--reads` become
    /// the first Mnemosyne workload's load and operation counts (type I: 20M and 80M, type II:
    /// 21M and 41M) times the factor, unless given.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Block cache as a fraction of the data size (`num * (key_size + value_size)`); overrides
    /// --cache-bytes (the papers' "cache of 5% of the data" is 0.05).
    #[arg(long)]
    pub cache_fraction: Option<f64>,
}

/// db_bench's default `--compression_ratio`, used whatever `--compression` is, so that runs with
/// and without compression write the same values and their space and I/O compare directly
/// (without compression the values' contents change nothing an engine does).
pub const DEFAULT_COMPRESSION_RATIO: f64 = 0.5;

/// `on`/`off` (also `true`/`false`, `yes`/`no`, `1`/`0`).
pub fn parse_on_off(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}

fn parse_filter_family(text: &str) -> Result<strata::FilterFamilies, String> {
    strata::FilterFamilies::parse(text).map_err(|error| error.to_string())
}

/// Writes a filter family by its name.
pub fn serialize_filter_family<S: serde::Serializer>(
    families: &strata::FilterFamilies,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(families.name())
}

fn parse_compression(text: &str) -> Result<CompressionPolicy, String> {
    text.parse()
        .map_err(|error: strata::Error| error.to_string())
}

/// Serializes a compression policy as the text `--compression` takes.
pub fn serialize_compression<S: serde::Serializer>(
    policy: &CompressionPolicy,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(policy)
}

/// The resolved configuration, as recorded in the JSON's `config`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchConfig {
    pub workloads: Vec<Workload>,
    /// Each phase's own operations (`--workloads NAME@OPS`), beside `workloads`; `None` runs
    /// `reads`.
    pub phase_ops: Vec<Option<u64>>,
    pub distribution: Option<KeyDistribution>,
    pub engines: Vec<EngineKind>,
    pub num: u64,
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    #[serde(serialize_with = "serialize_compression")]
    pub compression: CompressionPolicy,
    pub compression_ratio: f64,
    pub seed: u64,
    pub bits_per_key: Vec<f64>,
    pub cache_bytes: u64,
    pub direct_reads: bool,
    pub scan_readahead_bytes: u64,
    pub pin_index_filter: bool,
    pub peer_config: PeerConfig,
    pub index_restart_interval: Option<usize>,
    pub max_background_compactions: Option<usize>,
    pub write_rate: Option<f64>,
    pub ecotune_beta_q: f64,
    pub ecotune_r: Option<String>,
    pub ecotune_top_level_index: bool,
    pub query_threads: usize,
    pub partition_metadata_above_bytes: Option<u64>,
    pub metadata_block_bytes: Option<u64>,
    pub filter_budget_bytes: Option<u64>,
    pub filter_rebuild_rate: Option<u64>,
    pub elastic_disk_modules: Option<usize>,
    #[serde(serialize_with = "serialize_filter_family")]
    pub filter_family: strata::FilterFamilies,
    pub range_filter_bits: u32,
    pub auto_tune: Option<strata::model::auto_tune::AutoTuneOptions>,
    pub access_statistics: Vec<bool>,
    pub access_sample_every: u32,
    pub access_recent_weight: f64,
    pub compaction: Vec<CompactionKind>,
    pub filter_policy: Vec<FilterAllocatorKind>,
    pub size_ratio: f64,
    pub garnering_c: Vec<f64>,
    pub write_buffer_bytes: u64,
    pub target_file_bytes: u64,
    pub seek_nexts: u64,
    pub seek_bounded: bool,
    pub runs: usize,
    pub compare: bool,
    pub plot: Option<PathBuf>,
    pub sample_every: Option<u64>,
    /// Engine versions, filled in as engines open.
    pub engine_versions: Vec<(String, String)>,
    /// `null` when the benchmark ran in a temporary directory.
    pub db: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub settle: bool,
    pub settle_l0: bool,
    pub paced_fill: bool,
    pub quick: bool,
    pub preset: Option<preset::Preset>,
}

impl BenchConfig {
    /// Applies the defaults that depend on other flags (`--quick`, `--reads`) and checks ranges
    /// the engine does not check itself.
    pub fn resolve(args: &BenchArgs) -> CliResult<Self> {
        let paper_sizes = match args.scale {
            Some(scale) if scale.is_finite() && scale > 0.0 => Some(
                args.workloads
                    .iter()
                    .find_map(|phase| match phase.workload {
                        Workload::Mix(mix) => mix.paper_sizes(scale),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        CliError::InvalidArgument(
                            "--scale sizes the Mnemosyne workloads; --workloads has none".into(),
                        )
                    })?,
            ),
            Some(scale) => {
                return Err(CliError::InvalidArgument(format!(
                    "--scale must be a positive number, got {scale}"
                )))
            }
            None => None,
        };
        let num = args
            .num
            .or(paper_sizes.map(|(load, _)| load))
            .unwrap_or(if args.quick { QUICK_NUM } else { DEFAULT_NUM });
        if args.value_size > strata::MAX_VALUE_BYTES {
            return Err(CliError::InvalidArgument(format!(
                "--value-size {} is larger than the engine's limit of {} bytes",
                args.value_size,
                strata::MAX_VALUE_BYTES
            )));
        }
        if args.workloads.is_empty() {
            return Err(CliError::InvalidArgument("--workloads is empty".into()));
        }
        if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
            return Err(CliError::InvalidArgument(format!(
                "--compression-ratio must be in (0, 1], got {}",
                args.compression_ratio
            )));
        }
        let write_buffer_bytes = args.write_buffer_bytes.unwrap_or(if args.quick {
            QUICK_WRITE_BUFFER_BYTES
        } else {
            DEFAULT_WRITE_BUFFER_BYTES
        });
        if usize::try_from(write_buffer_bytes).is_err() {
            return Err(CliError::InvalidArgument(format!(
                "--write-buffer-bytes {write_buffer_bytes} does not fit in memory"
            )));
        }
        if args.engines.is_empty() {
            return Err(CliError::InvalidArgument("--engines is empty".into()));
        }
        let compiled_in = |kind: EngineKind| match kind {
            EngineKind::Strata => true,
            EngineKind::Rocksdb | EngineKind::RocksdbRibbon => cfg!(feature = "peer-rocksdb"),
            EngineKind::Fjall => cfg!(feature = "peer-fjall"),
        };
        if let Some(peer) = args.engines.iter().find(|&&kind| !compiled_in(kind)) {
            return Err(CliError::InvalidArgument(format!(
                "engine {} needs a build with `--features peers` (see the README)",
                peer.name()
            )));
        }
        if args.compaction.is_empty()
            || args.filter_policy.is_empty()
            || args.bits_per_key.is_empty()
        {
            return Err(CliError::InvalidArgument(
                "--compaction, --filter-policy and --bits-per-key need at least one value".into(),
            ));
        }
        if args.runs == 0 {
            return Err(CliError::InvalidArgument(
                "--runs must be at least 1".into(),
            ));
        }
        if args.query_threads == 0 {
            return Err(CliError::InvalidArgument(
                "--query-threads must be at least 1".into(),
            ));
        }
        if let Some(rate) = args.write_rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(CliError::InvalidArgument(format!(
                    "--write-rate must be a positive number of MB/s, got {rate}"
                )));
            }
        }
        if args.sample_every == Some(0) {
            return Err(CliError::InvalidArgument(
                "--sample-every must be at least 1".into(),
            ));
        }
        let variants = args.engines.len()
            * args.compaction.len()
            * args.filter_policy.len()
            * args.bits_per_key.len()
            * args.access_statistics.as_ref().map_or(1, Vec::len);
        if args.db.is_some() && (variants > 1 || args.runs > 1) {
            return Err(CliError::InvalidArgument(
                "--db names one database; it cannot be used with several engines, policies or runs"
                    .into(),
            ));
        }
        if let Some(&c) = args
            .garnering_c
            .iter()
            .find(|&&c| !(c.is_finite() && c > 0.0 && c <= 1.0))
        {
            return Err(CliError::InvalidArgument(format!(
                "--garnering-c: every c must be in (0, 1], got {c}"
            )));
        }
        if args.garnering_c.is_empty() {
            return Err(CliError::InvalidArgument(
                "--garnering-c needs at least one value".into(),
            ));
        }
        if let Some(r) = args.ecotune_r.as_deref() {
            let number = r.trim().parse::<f64>();
            if r != "workload" && !number.is_ok_and(|r| (0.0..=1.0).contains(&r)) {
                return Err(CliError::InvalidArgument(format!(
                    "--ecotune-r: a ratio in [0, 1] or `workload`, got {r:?}"
                )));
            }
        }
        if let Some(distribution) = &args.distribution {
            distribution.validate().map_err(CliError::InvalidArgument)?;
        }
        let access_statistics = match &args.access_statistics {
            Some(list) if list.is_empty() => {
                return Err(CliError::InvalidArgument(
                    "--access-statistics needs on or off".into(),
                ))
            }
            Some(list) => list.clone(),
            None => vec![strata::Options::default().access_statistics],
        };
        let config = BenchConfig {
            workloads: args.workloads.iter().map(|phase| phase.workload).collect(),
            phase_ops: args.workloads.iter().map(|phase| phase.ops).collect(),
            distribution: args.distribution,
            engines: args.engines.clone(),
            num,
            reads: args
                .reads
                .or(paper_sizes.map(|(_, operations)| operations))
                .unwrap_or(num),
            key_size: args.key_size,
            value_size: args.value_size,
            compression: args.compression.clone(),
            compression_ratio: args.compression_ratio,
            seed: args.seed,
            bits_per_key: args.bits_per_key.clone(),
            cache_bytes: match args.cache_fraction {
                Some(fraction) if fraction.is_finite() && fraction > 0.0 => {
                    (num as f64 * (args.key_size + args.value_size) as f64 * fraction) as u64
                }
                Some(fraction) => {
                    return Err(CliError::InvalidArgument(format!(
                        "--cache-fraction must be a positive number, got {fraction}"
                    )))
                }
                None => args.cache_bytes,
            },
            direct_reads: args.direct_reads,
            scan_readahead_bytes: args.scan_readahead_bytes,
            pin_index_filter: args.pin_index_filter,
            peer_config: args.peer_config,
            index_restart_interval: args.index_restart_interval,
            max_background_compactions: args.max_background_compactions,
            write_rate: args.write_rate,
            ecotune_beta_q: args.ecotune_beta_q,
            ecotune_r: args.ecotune_r.clone(),
            ecotune_top_level_index: args.ecotune_top_level_index,
            query_threads: args.query_threads,
            partition_metadata_above_bytes: args.partition_metadata_above_bytes,
            metadata_block_bytes: args.metadata_block_bytes,
            filter_budget_bytes: args.filter_budget_bytes,
            filter_rebuild_rate: args.filter_rebuild_rate,
            elastic_disk_modules: args.elastic_disk_modules,
            filter_family: args.filter_family,
            range_filter_bits: args.range_filter_bits,
            auto_tune: (args.auto_tune
                || args.auto_tune_every.is_some()
                || args.auto_tune_every_seconds.is_some()
                || args.auto_tune_max_processor_share.is_some()
                || args.auto_tune_merge_for_reads.is_some()
                || args.auto_tune_early_after.is_some()
                || args.auto_tune_min_gain.is_some()
                || args.auto_tune_confirmations.is_some()
                || args.auto_tune_horizon.is_some())
            .then(|| {
                let defaults = strata::model::auto_tune::AutoTuneOptions::default();
                strata::model::auto_tune::AutoTuneOptions {
                    every_operations: args.auto_tune_every.unwrap_or(defaults.every_operations),
                    every_seconds: args
                        .auto_tune_every_seconds
                        .unwrap_or(defaults.every_seconds),
                    max_processor_share: args
                        .auto_tune_max_processor_share
                        .unwrap_or(defaults.max_processor_share),
                    compact_for_reads: args
                        .auto_tune_merge_for_reads
                        .unwrap_or(defaults.compact_for_reads),
                    early_decisions_after: args
                        .auto_tune_early_after
                        .unwrap_or(defaults.early_decisions_after),
                    min_gain: args.auto_tune_min_gain.unwrap_or(defaults.min_gain),
                    confirmations: args
                        .auto_tune_confirmations
                        .unwrap_or(defaults.confirmations),
                    horizon_intervals: args.auto_tune_horizon.unwrap_or(defaults.horizon_intervals),
                    ..defaults
                }
            }),
            access_statistics,
            access_sample_every: args
                .access_sample_every
                .unwrap_or(strata::Options::default().access_sample_every),
            access_recent_weight: args.access_recent_weight,
            compaction: args.compaction.clone(),
            filter_policy: args.filter_policy.clone(),
            runs: args.runs,
            compare: args.compare,
            plot: args.plot.clone(),
            sample_every: args.sample_every,
            engine_versions: Vec::new(),
            size_ratio: args.size_ratio,
            garnering_c: args.garnering_c.clone(),
            write_buffer_bytes,
            target_file_bytes: args.target_file_bytes,
            seek_nexts: args.seek_nexts,
            seek_bounded: args.seek_bounded,
            db: args.db.clone(),
            json: args.json.clone(),
            settle: args.settle || args.quick || args.settle_l0,
            settle_l0: args.settle_l0,
            paced_fill: args.paced_fill,
            quick: args.quick,
            preset: args.preset,
        };
        // The auto-tune flags' values are the engine's to check: a bad one is a usage error
        // here, before any engine runs.
        if let Some(auto_tune) = &config.auto_tune {
            auto_tune.validate().map_err(|error| {
                CliError::InvalidArgument(match error {
                    strata::Error::InvalidArgument(message) => message,
                    other => other.to_string(),
                })
            })?;
        }
        Ok(config)
    }

    /// Every configuration to run: engines × filter policies × merge policies; a peer runs
    /// once with its own uniform filters at the same budget (it has no other), whatever
    /// policies Strata runs, and only with leveling or tiering.
    pub fn variants(&self) -> Vec<Variant> {
        let mut variants = Vec::new();
        for &engine in &self.engines {
            let filter_policies = if engine == EngineKind::Strata {
                self.filter_policy.clone()
            } else {
                vec![FilterAllocatorKind::Uniform]
            };
            for &filter_policy in &filter_policies {
                for &compaction in &self.compaction {
                    // Lazy leveling and Garnering run on Strata only (no peer has them).
                    if engine != EngineKind::Strata && !crate::policies::peers_have(compaction) {
                        continue;
                    }
                    let garnering_cs: Vec<Option<f64>> = match compaction {
                        CompactionKind::Garnering => {
                            self.garnering_c.iter().copied().map(Some).collect()
                        }
                        _ => vec![None],
                    };
                    // Statistics are Strata's; a peer, or an allocator that always keeps
                    // them, runs once.
                    let statistics: Vec<bool> = if engine != EngineKind::Strata {
                        vec![false]
                    } else if filter_policy.needs_access_statistics() {
                        vec![true]
                    } else {
                        self.access_statistics.clone()
                    };
                    for &garnering_c in &garnering_cs {
                        for &bits_per_key in &self.bits_per_key {
                            for &access_statistics in &statistics {
                                variants.push(Variant {
                                    engine,
                                    filter_policy,
                                    compaction,
                                    bits_per_key,
                                    label_bits_per_key: self.bits_per_key.len() > 1,
                                    garnering_c,
                                    label_garnering_c: self.garnering_c.len() > 1,
                                    access_statistics,
                                    label_access_statistics: self.access_statistics.len() > 1,
                                });
                            }
                        }
                    }
                }
            }
        }
        variants
    }

    /// EcoTune's settings: `r` measured by the engine unless `--ecotune-r` fixes it (a number,
    /// or `workload` for the first `ecotune:r` workload's), `beta_q` from `--ecotune-beta-q`,
    /// the rest the paper's.
    pub fn ecotune_settings(&self) -> strata::compaction::ecotune::EcoTuneSettings {
        let defaults = strata::compaction::ecotune::EcoTuneSettings::default();
        let long_scan_ratio = match self.ecotune_r.as_deref() {
            None => None,
            Some("workload") => self.workloads.iter().find_map(|workload| match workload {
                Workload::Mix(Mix::EcoTune { long_scan_ratio }) => Some(*long_scan_ratio),
                _ => None,
            }),
            Some(number) => number.trim().parse::<f64>().ok(),
        };
        strata::compaction::ecotune::EcoTuneSettings {
            long_scan_ratio,
            beta_q: self.ecotune_beta_q,
            top_level_index: self.ecotune_top_level_index,
            ..defaults
        }
    }

    /// The settings every engine is configured from (data blocks of 4 KiB, as RocksDB's
    /// default).
    pub fn engine_config(&self, variant: &Variant) -> EngineConfig {
        EngineConfig {
            block_bytes: 4096,
            bits_per_key: variant.bits_per_key,
            cache_bytes: self.cache_bytes,
            write_buffer_bytes: self.write_buffer_bytes,
            target_file_bytes: self.target_file_bytes,
            size_ratio: self.size_ratio,
            garnering_c: variant
                .garnering_c
                .unwrap_or(crate::policies::DEFAULT_GARNERING_C),
            ecotune: self.ecotune_settings(),
            compaction: variant.compaction,
            direct_reads: self.direct_reads,
            scan_readahead_bytes: self.scan_readahead_bytes,
            pin_index_filter: self.pin_index_filter,
            peer_config: self.peer_config,
            index_restart_interval: self.index_restart_interval,
            max_background_compactions: self.max_background_compactions,
            partition_metadata_above_bytes: self.partition_metadata_above_bytes,
            metadata_block_bytes: self.metadata_block_bytes,
            filter_budget_bytes: self.filter_budget_bytes,
            filter_rebuild_rate: self.filter_rebuild_rate,
            elastic_disk_modules: self.elastic_disk_modules,
            filter_family: self.filter_family,
            range_filter_bits: self.range_filter_bits,
            auto_tune: self.auto_tune,
            access_statistics: variant.access_statistics,
            access_sample_every: self.access_sample_every,
            access_recent_weight: self.access_recent_weight,
            filter_policy: variant.filter_policy,
            expected_entries: self.num,
            entry_bytes: (self.key_size + self.value_size) as u64,
            compression: self.compression.clone(),
        }
    }
}

/// The whole JSON document.
#[derive(Debug, Serialize)]
struct BenchReport<'a> {
    config: &'a BenchConfig,
    results: &'a [PhaseResult],
    /// Medians over `--runs` per (configuration, phase), with ratios against the first.
    medians: &'a [compare::MedianRow],
    /// Throughput and average bits per key every `--sample-every` operations.
    series: &'a [SeriesPoint],
}

/// Parses a count: digits with optional `_` separators (`1_000_000`).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    digits
        .parse::<u64>()
        .map_err(|_| format!("{text:?} is not a non-negative whole number"))
}

/// Parses a byte size: a count, optionally followed by `K`/`KiB`, `M`/`MiB` or `G`/`GiB`
/// (binary units, case-insensitive).
/// `--partition-metadata-above-bytes`: a byte count, or `never` (`u64::MAX`).
fn parse_partition_threshold(text: &str) -> Result<u64, String> {
    if text.trim() == "never" {
        return Ok(u64::MAX);
    }
    parse_bytes(text)
}

pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '_'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("{text:?}: unknown unit (use KiB, MiB or GiB)")),
    };
    parse_count(number)?
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// A temporary database directory, removed when dropped (after the database is closed).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn create() -> CliResult<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path =
            std::env::temp_dir().join(format!("strata-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover directory in the temp dir is not worth failing the run for.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn report_error(error: io::Error) -> CliError {
    CliError::io("writing the benchmark report", error)
}

/// Runs `strata bench`.
pub fn run(args: &BenchArgs) -> CliResult<()> {
    // With `--json -` stdout carries only the JSON, so the table goes to stderr.
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    let (table, progress): (Box<dyn Write>, bool) = if json_to_stdout {
        (Box::new(io::stderr()), false)
    } else {
        (
            Box::new(io::stdout()),
            io::stdout().is_terminal() && io::stderr().is_terminal(),
        )
    };
    run_with(args, table, progress, &mut io::stdout().lock())
}

/// Runs `strata bench` with the tables written to `table` and the JSON report of `--json -`
/// to `json` (the library's `run_json`); no progress bar.
pub fn run_to(args: &BenchArgs, table: Box<dyn Write>, json: &mut dyn Write) -> CliResult<()> {
    run_with(args, table, false, json)
}

fn run_with(
    args: &BenchArgs,
    mut out: Box<dyn Write>,
    progress: bool,
    json_out: &mut dyn Write,
) -> CliResult<()> {
    let mut config = BenchConfig::resolve(args)?;
    let format = KeyFormat::new(config.num, config.key_size).map_err(CliError::InvalidArgument)?;
    let variants = config.variants();
    let mut results = Vec::new();
    let mut counts = Vec::new();
    let mut series = Vec::new();
    let mut versions: Vec<(String, String)> = Vec::new();
    for run in 1..=config.runs {
        // Alternate the order from run to run so that no configuration always goes first (or
        // last, with a warmer page cache or a busier machine).
        let mut order = variants.clone();
        order.rotate_left((run - 1) % variants.len().max(1));
        for variant in order {
            let temp_dir = match &config.db {
                Some(_) => None,
                None => Some(TempDir::create()?),
            };
            let dir = match (&config.db, &temp_dir) {
                (Some(path), _) => path.clone(),
                (None, Some(temp)) => temp.path.clone(),
                (None, None) => unreachable!("a temporary directory exists when --db is absent"),
            };
            let mut bench = Bench::new(&config, variant, run, format, out.as_mut(), progress);
            let outcome = bench.run_all(&dir);
            results.append(&mut bench.results);
            counts.append(&mut bench.counts);
            series.append(&mut bench.series);
            if let Some(version) = bench.version.take() {
                if !versions.contains(&version) {
                    versions.push(version);
                }
            }
            // The engine is closed inside `run_all`; only now may its temporary directory go.
            drop(temp_dir);
            outcome?;
        }
    }
    config.engine_versions = versions;
    writeln!(out, "\nsummary").map_err(report_error)?;
    report::write_header(out.as_mut()).map_err(report_error)?;
    for (result, phase_counts) in results.iter().zip(&counts) {
        report::write_row(out.as_mut(), result, phase_counts).map_err(report_error)?;
    }
    let medians = compare::medians(&variants, &results);
    if variants.len() > 1 || config.runs > 1 || config.compare {
        compare::write_table(out.as_mut(), &medians, config.runs).map_err(report_error)?;
    }
    out.flush().map_err(report_error)?;
    if let Some(path) = &config.json {
        write_json(path, &config, &results, &medians, &series, json_out)?;
    }
    if let Some(path) = &config.plot {
        let series_path = plot::series_path(path);
        plot::draw_comparison(path, &medians)?;
        plot::draw_series(&series_path, &series)?;
        writeln!(
            out,
            "plots: {} and {}",
            path.display(),
            series_path.display()
        )
        .map_err(report_error)?;
    }
    Ok(())
}

fn write_json(
    path: &Path,
    config: &BenchConfig,
    results: &[PhaseResult],
    medians: &[compare::MedianRow],
    series: &[SeriesPoint],
    stdout: &mut dyn Write,
) -> CliResult<()> {
    let report = BenchReport {
        config,
        results,
        medians,
        series,
    };
    let mut text = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::io("encoding the JSON report", io::Error::other(e)))?;
    text.push('\n');
    if path == Path::new("-") {
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::io("writing the JSON report to stdout", e))
    } else {
        std::fs::write(path, text)
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
    }
}

/// One benchmark run: the configuration, where it reports, and what it measured so far.
struct Bench<'a> {
    config: &'a BenchConfig,
    variant: Variant,
    /// 1-based run number (`--runs`).
    run: usize,
    series: Vec<SeriesPoint>,
    /// `(engine, version)` once the engine is open.
    version: Option<(String, String)>,
    /// Keys the database holds (fills set it to `num`; inserts add to it).
    live_keys: u64,
    /// When the current phase began, and the last time-series point `(ops, time)`.
    phase_started: Instant,
    last_sample: (u64, Instant),
    /// Time the cost model's predictions at time-series points took in the current phase (made
    /// only while the measuring thread is the database's only client), left out of the phase's
    /// time: the phase times the engine, not the bench's model.
    paused: Duration,
    /// The measuring thread is the database's only client in the current phase (no other
    /// query thread, no background writer): the bench may stop the phase's clock for its own
    /// work, and predicts lookups at time-series points.
    measuring_alone: bool,
    /// The predictions at the last time-series point that computed them, the tree and filters
    /// they were computed on and the point's number: a point on the same tree and filters, or
    /// fewer than [`PREDICTIONS_EVERY_POINTS`] points later, takes them again.
    point_predictions: Option<(PointState, u64, PointPredictions)>,
    /// What the current read phase's lookups have been through, which their prediction takes
    /// in (DESIGN.md §7.6, "A phase's history"): the block cache as the phase found it, and each
    /// file's filter bits in use, noted at every time-series point.
    stream_history: Option<strata::model::tree::StreamHistory>,
    /// Operations between time-series points in the current phase.
    sample_interval: u64,
    /// Operations of the current phase when it is not a fill: its `--workloads NAME@OPS`, else
    /// `--reads`.
    phase_reads: u64,
    format: KeyFormat,
    out: &'a mut dyn Write,
    /// Show a percentage while a phase runs (stdout is a terminal and carries no JSON).
    progress: bool,
    results: Vec<PhaseResult>,
    counts: Vec<PhaseCounts>,
}

/// What a time-series point's lookup predictions were computed on: each level's runs, files
/// and entries, and each live file's filter bits in use (`Engine::filter_bits_in_use`).
#[derive(Debug, Clone, PartialEq)]
struct PointState {
    levels: Vec<(usize, usize, usize, Option<u64>)>,
    bits: Option<std::collections::BTreeMap<u64, f64>>,
}

impl PointState {
    fn of(shape: &TreeShape, bits: Option<std::collections::BTreeMap<u64, f64>>) -> PointState {
        PointState {
            levels: shape
                .levels
                .iter()
                .map(|level| (level.level, level.runs, level.files, level.entries))
                .collect(),
            bits,
        }
    }
}

/// A time-series point's lookup predictions (`SeriesPoint`'s).
#[derive(Debug, Clone, Copy, Default)]
struct PointPredictions {
    new_keys: Option<engine::PredictedBlockReads>,
    without_cache: Option<f64>,
    recurring: Option<engine::PredictedBlockReads>,
}

impl<'a> Bench<'a> {
    /// A bench of `variant`'s run number `run` writing its tables to `out`, before any phase.
    fn new(
        config: &'a BenchConfig,
        variant: Variant,
        run: usize,
        format: KeyFormat,
        out: &'a mut dyn Write,
        progress: bool,
    ) -> Bench<'a> {
        Bench {
            config,
            variant,
            run,
            format,
            out,
            progress,
            results: Vec::new(),
            counts: Vec::new(),
            series: Vec::new(),
            version: None,
            live_keys: 0,
            phase_started: Instant::now(),
            last_sample: (0, Instant::now()),
            paused: Duration::ZERO,
            measuring_alone: true,
            point_predictions: None,
            stream_history: None,
            sample_interval: 1,
            phase_reads: config.reads,
        }
    }
}

impl Bench<'_> {
    fn run_all(&mut self, dir: &Path) -> CliResult<()> {
        let config = self.config;
        let kind = self.variant.engine;
        let engine_config = config.engine_config(&self.variant);
        writeln!(
            self.out,
            "\n{} (run {}/{}) bench: db {} ({}), num {}, reads {}, key {} B, value {} B, seed {}{}",
            self.variant.label(),
            self.run,
            config.runs,
            dir.display(),
            if config.db.is_some() {
                "reused if present"
            } else {
                "temporary"
            },
            config.num,
            config.reads,
            config.key_size,
            config.value_size,
            config.seed,
            if config.paced_fill {
                ", fills paced (a wait for flushes and compactions every quarter write buffer)"
            } else {
                ""
            },
        )
        .map_err(report_error)?;
        let engine = engine::open(kind, dir, &engine_config)?;
        self.version = Some((engine.name().to_string(), engine.version()));
        writeln!(
            self.out,
            "  {} {} settings:",
            engine.name(),
            engine.version()
        )
        .map_err(report_error)?;
        for line in engine.settings() {
            writeln!(self.out, "    {line}").map_err(report_error)?;
        }
        let outcome = self.run_phases(engine.as_ref());
        let closed = engine.close();
        outcome?;
        closed?;
        self.out.flush().map_err(report_error)
    }

    fn run_phases(&mut self, engine: &dyn Engine) -> CliResult<()> {
        // Set once a fill phase wrote every key `0..num`: from then on reads must find them all.
        let mut filled = false;
        let workloads = self.config.workloads.clone();
        for (index, &workload) in workloads.iter().enumerate() {
            if !workload.is_write() {
                if self.config.settle {
                    self.settle(engine)?;
                }
                writeln!(self.out).map_err(report_error)?;
                report::write_tree(
                    self.out,
                    &format!("{} before {}", engine.name(), workload.name()),
                    &engine.shape(),
                )
                .map_err(report_error)?;
            }
            if index == 0 || !workloads[index - 1].is_write() || !workload.is_write() {
                writeln!(self.out).map_err(report_error)?;
                report::write_header(self.out).map_err(report_error)?;
            }
            engine.reset_counters();
            self.phase_reads = self
                .config
                .phase_ops
                .get(index)
                .copied()
                .flatten()
                .unwrap_or(self.config.reads);
            self.stream_history = self
                .lookup_streams(workload)
                .and_then(|_| engine.stream_history());
            self.phase_started = Instant::now();
            self.last_sample = (0, self.phase_started);
            self.paused = Duration::ZERO;
            self.measuring_alone = true;
            self.point_predictions = None;
            let phase_ops = if workload.fills() {
                self.config.num
            } else {
                self.phase_reads
            };
            self.sample_interval = self
                .config
                .sample_every
                .unwrap_or((phase_ops / SERIES_POINTS_PER_PHASE).max(1));
            let mut latencies = Latencies::new();
            let series_start = self.series.len();
            let cpu_before = cpu::CpuSample::now();
            let started = Instant::now();
            let counts = match workload {
                Workload::Fillseq | Workload::Fillrandom | Workload::Load => {
                    self.fill(engine, workload, &mut latencies)?
                }
                Workload::Readmissing => self.read_missing(engine, &mut latencies)?,
                Workload::Seekrandom => self.seek(engine, &mut latencies)?,
                Workload::Mix(mix) => self.stream(engine, mix, &mut latencies)?,
            };
            // The bench's own work at time-series points is not the engine's (`Self::sample`).
            let elapsed = started.elapsed().saturating_sub(self.paused);
            if workload.fills() {
                self.live_keys = self.live_keys.max(self.format.num());
            }
            self.live_keys += counts.inserts;
            let mut shape = engine.shape();
            if report::priced_per_lookup(workload) {
                shape.predicted_lookup_io = engine.predicted_lookup_io();
            }
            let logical_bytes =
                self.live_keys as f64 * (self.config.key_size + self.config.value_size) as f64;
            let mut result = PhaseResult::new(
                &self.variant,
                self.run,
                workload,
                &counts,
                &latencies,
                elapsed,
                &engine.counters(),
                &shape,
            );
            let cpu_after = cpu::CpuSample::now();
            let recurring = result
                .predicted_reads_per_lookup
                .and(self.recurring_lookup_prediction(engine, workload));
            if let Some(recurring) = recurring {
                result.predicted_reads_per_lookup_new_keys = result.predicted_reads_per_lookup;
                result.predicted_reads_per_lookup = Some(recurring);
            }
            if workload == Workload::Seekrandom {
                result.predicted_reads_per_seek = engine
                    .predicted_seek_reads(self.config.seek_nexts + 1, self.config.seek_bounded);
            }
            result.compaction_cpu_share = cpu_before
                .zip(cpu_after)
                .and_then(|(before, after)| after.compaction_share_since(&before));
            result.cpu_seconds = cpu_before
                .zip(cpu_after)
                .and_then(|(before, after)| after.seconds_since(&before));
            // The filter memory in use over the phase, not only at its end (the budget is a cap at every moment).
            result.include_filter_samples(self.series.get(series_start..).unwrap_or_default());
            // The lookup predictions over the phase, not only at its end (the filters in force
            // can change while it runs).
            result.average_lookup_predictions(self.series.get(series_start..).unwrap_or_default());
            // A prediction from the phase's history (the cache it found, the filter bits at every
            // time-series point) prices the whole phase by itself: the one at its end, which
            // takes in every point, stands. A mean with the points' own, each from the history
            // so far, would weigh the phase's first filters most.
            if let Some(end) = recurring.filter(|_| self.stream_history.is_some()) {
                result.predicted_reads_per_lookup = Some(end);
            }
            // Live table bytes over the bytes of the newest version of each key; only what is
            // in table files counts, so the figure is meaningful once the tree is settled.
            result.space_amp = (logical_bytes > 0.0 && shape.table_bytes > 0)
                .then(|| shape.table_bytes as f64 / logical_bytes);
            report::write_row(self.out, &result, &counts).map_err(report_error)?;
            report::write_compression(self.out, &result).map_err(report_error)?;
            report::write_write_causes(self.out, &result).map_err(report_error)?;
            report::write_background(self.out, &result).map_err(report_error)?;
            if counts.background_writes > 0 {
                // The writer changed the tree during the phase: show where it ended.
                report::write_tree(
                    self.out,
                    &format!("{} after {}", engine.name(), workload.name()),
                    &shape,
                )
                .map_err(report_error)?;
            }
            report::write_unnecessary_range(self.out, &result).map_err(report_error)?;
            report::write_prediction(self.out, &result).map_err(report_error)?;
            report::write_probe_times(self.out, &result).map_err(report_error)?;
            if self.paused >= Duration::from_millis(1) {
                writeln!(
                    self.out,
                    "  bench: {:.3} s of cost-model predictions at time-series points left out of \
                     the phase's time",
                    self.paused.as_secs_f64()
                )
                .map_err(report_error)?;
            }
            self.out.flush().map_err(report_error)?;
            self.results.push(result);
            self.counts.push(counts);
            self.check(workload, &counts, filled)?;
            filled |= workload.fills();
        }
        // The last phase's writes pay for their flush and compactions too.
        if self.config.settle && self.results.last().is_some_and(PhaseResult::wrote) {
            self.settle(engine)?;
        }
        Ok(())
    }

    /// Flushes and waits for compactions. The counters were zeroed when the previous phase began,
    /// so if that phase wrote (a fill, or a mix with updates), its write amplification is updated
    /// to include the flush and compactions its writes caused.
    fn settle(&mut self, engine: &dyn Engine) -> CliResult<()> {
        let started = Instant::now();
        engine.flush()?;
        engine.wait_for_compactions()?;
        if self.config.settle_l0 {
            engine.compact_all()?;
        }
        let seconds = started.elapsed().as_secs_f64();
        let counters = engine.counters();
        let write_amp = counters.write_amplification();
        match self.results.last_mut() {
            Some(previous) if previous.wrote() => {
                previous.write_amp_before_settle = previous.write_amp;
                previous.write_amp = write_amp;
                previous.user_write_bytes = counters.user_write_bytes;
                previous.table_write_bytes = counters.table_write_bytes;
                previous.wal_write_bytes = counters.wal_write_bytes;
                previous.write_causes = counters.write_causes;
                // The space and compression figures of a write phase include its settle too.
                *previous = previous
                    .clone()
                    .with_compression(&counters, &engine.shape());
                report::write_compression(self.out, previous).map_err(report_error)?;
                report::write_write_causes(self.out, previous).map_err(report_error)?;
                writeln!(
                    self.out,
                    "settled in {seconds:.2} s: {} write amplification including the settle {}",
                    previous.phase.name(),
                    report::optional(write_amp, 2)
                )
                .map_err(report_error)?;
                // The replay starts from an empty tree and draws new keys: it prices the fills
                // that write every key once in random order.
                if matches!(previous.phase, Workload::Load | Workload::Fillrandom) {
                    let user_bytes_per_entry =
                        (self.config.key_size + self.config.value_size) as f64;
                    previous.predicted_write_amp = engine.predicted_write_amplification(
                        previous.ops,
                        None,
                        user_bytes_per_entry,
                    );
                }
                report::write_write_prediction(self.out, previous)
            }
            _ => writeln!(self.out, "settled in {seconds:.2} s"),
        }
        .map_err(report_error)
    }

    /// Records a time-series point every `--sample-every` operations of a phase (by default a
    /// hundredth of the phase): its throughput, the filters' bits per key and, in a phase priced
    /// per lookup, the cost model's prediction. The model runs over every live file and the
    /// block cache (over 100 ms on a tree of 60 files), so it runs again only when the tree or
    /// the filters in use have changed, at most every [`PREDICTIONS_EVERY_POINTS`] points, and
    /// only while the measuring thread is the database's only client, the phase's clock
    /// stopped meanwhile (`Self::paused`); with other clients the clock cannot stop, and the
    /// points carry no prediction.
    fn sample(&mut self, engine: &dyn Engine, workload: Workload, done: u64) {
        if !done.is_multiple_of(self.sample_interval) {
            return;
        }
        let now = Instant::now();
        let (last_ops, last_time) = self.last_sample;
        let interval = now.duration_since(last_time).as_secs_f64();
        let seconds = now
            .duration_since(self.phase_started)
            .saturating_sub(self.paused)
            .as_secs_f64();
        let shape = engine.shape();
        let priced = report::priced_per_lookup(workload);
        let bits = (priced || self.stream_history.is_some())
            .then(|| engine.filter_bits_in_use())
            .flatten();
        if let (Some(history), Some(bits)) = (self.stream_history.as_mut(), bits.as_ref()) {
            history.note_bits_in_use(bits);
        }
        // With other clients running, the clock cannot stop: only the phase's end is predicted.
        let mut predicting = Duration::ZERO;
        let predicted = if priced && self.measuring_alone {
            let state = PointState::of(&shape, bits);
            let points = done / self.sample_interval;
            match &self.point_predictions {
                Some((seen, since, predicted))
                    if *seen == state || points < since + PREDICTIONS_EVERY_POINTS =>
                {
                    *predicted
                }
                _ => {
                    let started = Instant::now();
                    let predicted = self.point_predictions_now(engine, workload);
                    predicting = started.elapsed();
                    self.point_predictions = Some((state, points, predicted));
                    predicted
                }
            }
        } else {
            PointPredictions::default()
        };
        self.series.push(SeriesPoint {
            configuration: self.variant.label(),
            engine: self.variant.engine.name(),
            filter_policy: self.variant.filter_policy.name(),
            compaction: self.variant.compaction.name(),
            run: self.run,
            phase: workload,
            ops_done: done,
            seconds,
            ops_per_sec: if interval > 0.0 {
                (done - last_ops) as f64 / interval
            } else {
                0.0
            },
            avg_bits_per_key: shape.avg_bits_per_key,
            effective_bits_per_key: shape.effective_bits_per_key,
            predicted_reads_per_lookup: predicted.recurring.or(predicted.new_keys),
            predicted_reads_per_lookup_new_keys: predicted.recurring.and(predicted.new_keys),
            predicted_data_reads_per_lookup_without_cache: predicted.without_cache,
        });
        self.paused += predicting;
        self.last_sample = (done, now + predicting);
    }

    /// The engine's lookup predictions for `workload` on its tree and filters now: for every
    /// key new (with and without the cache) and, where the phase's keys recur, for its stream.
    fn point_predictions_now(&self, engine: &dyn Engine, workload: Workload) -> PointPredictions {
        let shape = TreeShape {
            predicted_lookup_io: engine.predicted_lookup_io(),
            ..TreeShape::default()
        };
        let (new_keys, without_cache) = report::lookup_predictions(workload, &shape);
        let recurring = new_keys.and_then(|_| self.predicted_recurring(engine, workload));
        PointPredictions {
            new_keys,
            without_cache,
            recurring,
        }
    }

    /// The keys a point-read phase draws from and its lookups (DESIGN.md §7.6, "Recurring
    /// keys" and "A range of keys"): readmissing's missing keys, alike; readrandom's `--num`
    /// keys and readhot's first percent of them (a range: the keys are zero-padded decimals),
    /// alike unless `--distribution` says otherwise (then none: the model takes keys alike). The
    /// other workloads are not priced per lookup.
    fn lookup_streams(&self, workload: Workload) -> Option<strata::model::tree::LookupStreams> {
        use strata::model::tree::{LookupStream, LookupStreams};
        let reads = self.phase_reads as f64;
        let alike = matches!(
            self.config.distribution,
            None | Some(KeyDistribution::Uniform)
        );
        let existing = |keys: u64| LookupStream {
            distinct_keys: Some(keys as f64),
            lookups: Some(reads * self.config.query_threads.max(1) as f64),
        };
        match workload {
            Workload::Readmissing => Some(LookupStreams {
                missing: LookupStream {
                    distinct_keys: Some(self.format.missing_gaps().max(1) as f64),
                    lookups: Some(reads),
                },
                existing: LookupStream::NEW_KEYS,
                key_range: None,
            }),
            Workload::Mix(Mix::ReadRandom) if alike => Some(LookupStreams {
                missing: LookupStream::NEW_KEYS,
                existing: existing(self.format.num()),
                key_range: None,
            }),
            Workload::Mix(Mix::ReadHot) if alike => {
                let hot = ops::hot_keys(self.format.num()).max(1);
                let (mut smallest, mut largest) = (Vec::new(), Vec::new());
                self.format.present_key(0, &mut smallest);
                self.format.present_key(hot - 1, &mut largest);
                Some(LookupStreams {
                    missing: LookupStream::NEW_KEYS,
                    existing: existing(hot),
                    key_range: Some((smallest, largest)),
                })
            }
            _ => None,
        }
    }

    /// The engine's lookup prediction for `workload`'s stream as it recurs
    /// ([`Self::lookup_streams`]), where it has one, after taking the filters in use now into
    /// the phase's history.
    fn recurring_lookup_prediction(
        &mut self,
        engine: &dyn Engine,
        workload: Workload,
    ) -> Option<engine::PredictedBlockReads> {
        if let (Some(history), Some(bits)) =
            (self.stream_history.as_mut(), engine.filter_bits_in_use())
        {
            history.note_bits_in_use(&bits);
        }
        self.predicted_recurring(engine, workload)
    }

    /// The engine's prediction for `workload`'s recurring stream on the phase's history as
    /// noted so far, where it has one.
    fn predicted_recurring(
        &self,
        engine: &dyn Engine,
        workload: Workload,
    ) -> Option<engine::PredictedBlockReads> {
        let streams = self.lookup_streams(workload)?;
        let (missing, existing) =
            engine.predicted_stream_lookup_reads(&streams, self.stream_history.as_ref())?;
        Some(if workload == Workload::Readmissing {
            missing
        } else {
            existing
        })
    }

    /// After a fill of every key, lookups of existing keys must all find them and lookups of
    /// missing keys none.
    fn check(&mut self, workload: Workload, counts: &PhaseCounts, filled: bool) -> CliResult<()> {
        let name = workload.name();
        if counts.missing_hits > 0 {
            return Err(CliError::CheckFailed(format!(
                "{name} found {} keys that were never written",
                counts.missing_hits
            )));
        }
        if counts.found != counts.existing_lookups {
            if filled {
                return Err(CliError::CheckFailed(format!(
                    "{name} found {} of {} existing keys after a fill of every key",
                    counts.found, counts.existing_lookups
                )));
            }
            writeln!(
                self.out,
                "note: {name} found {} of {} keys (no fill phase ran before it, so the database may not hold them all)",
                counts.found, counts.existing_lookups
            )
            .map_err(report_error)?;
        }
        Ok(())
    }

    fn fill(
        &mut self,
        engine: &dyn Engine,
        workload: Workload,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, workload);
        let order = if workload == Workload::Load {
            FillOrder::Hashed(
                StreamSpec::new(Mix::YcsbA, self.format.num(), 0, self.config.seed).load(),
            )
        } else {
            FillOrder::new(workload, self.format.num(), &mut rng)
                .map_err(CliError::InvalidArgument)?
        };
        let mut progress = Progress::new(self.progress, workload, order.len());
        let (mut key, mut value) = (Vec::new(), Vec::new());
        // `--paced-fill`: a wait every quarter write buffer of entries, so that at most one
        // memtable switch (and the compactions its flush triggers) happens between two waits.
        let entry_bytes = (self.config.key_size + self.config.value_size).max(1) as u64;
        let pace = self
            .config
            .paced_fill
            .then(|| (self.config.write_buffer_bytes / 4 / entry_bytes).max(1));
        for op in 0..order.len() {
            if pace.is_some_and(|pace| op > 0 && op.is_multiple_of(pace)) {
                engine.wait_for_compactions()?;
            }
            self.format.present_key(order.index(op), &mut key);
            workload::compressible_value(
                self.config.value_size,
                self.config.compression_ratio,
                &mut rng,
                &mut value,
            );
            let started = Instant::now();
            engine.put(&key, &value)?;
            latencies.record(started.elapsed());
            progress.tick(op, self.out);
            self.sample(engine, workload, op + 1);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: order.len(),
            ..PhaseCounts::default()
        })
    }

    /// Point lookups of absent keys inside the key range.
    fn read_missing(
        &mut self,
        engine: &dyn Engine,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let workload = Workload::Readmissing;
        let mut rng = workload::phase_rng(self.config.seed, workload);
        let mut progress = Progress::new(self.progress, workload, self.phase_reads);
        let mut key = Vec::new();
        let mut missing_hits = 0;
        for done in 0..self.phase_reads {
            let gap = workload::random_missing_gap(&self.format, &mut rng);
            self.format.missing_key(gap, &mut key);
            let started = Instant::now();
            let value = engine.get(&key)?;
            latencies.record(started.elapsed());
            missing_hits += u64::from(value.is_some());
            progress.tick(done, self.out);
            self.sample(engine, workload, done + 1);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: self.phase_reads,
            lookups: self.phase_reads,
            missing_hits,
            ..PhaseCounts::default()
        })
    }

    /// Runs a mix's operation stream over keys `0..num` (inserts extend the key range). For
    /// `readwhilewriting` a second thread overwrites random keys at full speed until the
    /// measured reads are done.
    fn stream(
        &mut self,
        engine: &dyn Engine,
        mix: Mix,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let workload = Workload::Mix(mix);
        let mut spec = StreamSpec::new(mix, self.format.num(), self.phase_reads, self.config.seed);
        if let Some(distribution) = self.config.distribution {
            spec = spec.with_distribution(distribution);
        }
        // Inserts go past `num`: the keys must still fit in `key_size` digits.
        KeyFormat::new(spec.key_capacity(), self.config.key_size)
            .map_err(CliError::InvalidArgument)?;
        let ops = spec.ops().map_err(CliError::InvalidArgument)?;
        let writer_ops = spec
            .background_writes()
            .map_err(CliError::InvalidArgument)?;
        let query_threads = self.config.query_threads.max(1);
        self.measuring_alone = query_threads == 1 && writer_ops.is_none();
        if query_threads > 1 && mix.proportions().insert > 0.0 {
            return Err(CliError::InvalidArgument(format!(
                "--query-threads {query_threads}: {mix} inserts new keys, which one stream \
                 numbers; run it with one query thread"
            )));
        }
        // The other query threads' streams: the same mix, each with its own seed.
        let mut more_streams = Vec::with_capacity(query_threads - 1);
        for thread in 1..query_threads {
            let seeded = StreamSpec {
                seed: spec.seed ^ (thread as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ..spec
            };
            more_streams.push(seeded.ops().map_err(CliError::InvalidArgument)?);
        }
        // The writer's rate in bytes per second (`None`: as fast as it can).
        let write_rate = match (self.config.write_rate, mix) {
            (Some(rate), _) => Some(rate * 1e6),
            (None, Mix::EcoTune { .. }) => Some(ECOTUNE_DEFAULT_WRITE_MB_S * 1e6),
            (None, _) => None,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let format = self.format;
        let (seed, value_size) = (self.config.seed, self.config.value_size);
        let entry_bytes = (self.config.key_size + value_size) as f64;
        let compression_ratio = self.config.compression_ratio;
        std::thread::scope(|scope| {
            let writer = writer_ops.map(|writes| {
                let stop = &stop;
                scope.spawn(move || -> CliResult<u64> {
                    let mut rng = workload::phase_rng(seed ^ 0x5752_4954_4552, workload);
                    let (mut key, mut value) = (Vec::new(), Vec::new());
                    let mut written = 0;
                    let started = Instant::now();
                    for op in writes {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        if let Op::Update(index) | Op::Insert(index) = op {
                            format.present_key(index, &mut key);
                            workload::compressible_value(
                                value_size,
                                compression_ratio,
                                &mut rng,
                                &mut value,
                            );
                            engine.put(&key, &value)?;
                            written += 1;
                            if let Some(rate) = write_rate {
                                pace(started, written as f64 * entry_bytes / rate, stop);
                            }
                        }
                    }
                    Ok(written)
                })
            });
            let others: Vec<_> = more_streams
                .into_iter()
                .map(|stream| scope.spawn(move || query_stream(engine, format, stream, value_size)))
                .collect();
            let measured = self.run_ops(engine, workload, ops, latencies);
            let mut other_counts = Vec::with_capacity(others.len());
            for handle in others {
                other_counts.push(handle.join().unwrap_or_else(|_| {
                    Err(CliError::CheckFailed("a query thread panicked".into()))
                }));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let background = match writer {
                Some(handle) => handle.join().unwrap_or_else(|_| {
                    Err(CliError::CheckFailed(
                        "the background writer panicked".into(),
                    ))
                })?,
                None => 0,
            };
            let mut counts = measured?;
            for other in other_counts {
                counts.add(&other?);
            }
            counts.background_writes = background;
            Ok(counts)
        })
    }

    fn run_ops(
        &mut self,
        engine: &dyn Engine,
        workload: Workload,
        ops: impl Iterator<Item = Op>,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, workload);
        let mut progress = Progress::new(self.progress, workload, self.phase_reads);
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let mut counts = PhaseCounts::default();
        for op in ops {
            let started = Instant::now();
            match op {
                Op::Insert(index) | Op::Update(index) => {
                    self.format.present_key(index, &mut key);
                    workload::compressible_value(
                        self.config.value_size,
                        self.config.compression_ratio,
                        &mut rng,
                        &mut value,
                    );
                    engine.put(&key, &value)?;
                    counts.inserts += u64::from(matches!(op, Op::Insert(_)));
                }
                Op::Read(index) => {
                    self.format.present_key(index, &mut key);
                    counts.lookups += 1;
                    counts.existing_lookups += 1;
                    counts.found += u64::from(engine.get(&key)?.is_some());
                }
                Op::ReadMissing(gap) => {
                    self.format.missing_key(gap, &mut key);
                    counts.lookups += 1;
                    counts.missing_hits += u64::from(engine.get(&key)?.is_some());
                }
                Op::Scan {
                    start,
                    len,
                    bounded,
                } => {
                    counts.entries_read +=
                        scan(engine, self.format, start, len, bounded, &mut key)?;
                }
                Op::ReadModifyWrite(index) => {
                    self.format.present_key(index, &mut key);
                    counts.lookups += 1;
                    counts.existing_lookups += 1;
                    counts.found += u64::from(engine.get(&key)?.is_some());
                    workload::compressible_value(
                        self.config.value_size,
                        self.config.compression_ratio,
                        &mut rng,
                        &mut value,
                    );
                    engine.put(&key, &value)?;
                }
            }
            latencies.record(started.elapsed());
            progress.tick(counts.ops, self.out);
            counts.ops += 1;
            self.sample(engine, workload, counts.ops);
        }
        progress.finish(self.out);
        Ok(counts)
    }

    /// Seek to a random existing key, then read `seek_nexts` more entries (db_bench's
    /// `seekrandom` with `--seek_nexts`), in a closed range with `--seek-bounded`.
    fn seek(&mut self, engine: &dyn Engine, latencies: &mut Latencies) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, Workload::Seekrandom);
        let mut progress = Progress::new(self.progress, Workload::Seekrandom, self.phase_reads);
        let distribution = self.config.distribution.unwrap_or(KeyDistribution::Uniform);
        let mut chooser =
            KeyChooser::new(distribution, self.format.num()).map_err(CliError::InvalidArgument)?;
        let (mut key, mut until) = (Vec::new(), Vec::new());
        let (mut found, mut entries_read) = (0, 0);
        for done in 0..self.phase_reads {
            let index = chooser.next(&mut rng, self.format.num());
            self.format.present_key(index, &mut key);
            let started = Instant::now();
            let count = self.config.seek_nexts + 1;
            let outcome = if self.config.seek_bounded {
                self.format
                    .present_key(index.saturating_add(count), &mut until);
                engine.scan_bounded(&key, &until, count)?
            } else {
                engine.scan(&key, count)?
            };
            latencies.record(started.elapsed());
            found += u64::from(outcome.first_matched);
            entries_read += outcome.entries;
            progress.tick(done, self.out);
            self.sample(engine, Workload::Seekrandom, done + 1);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: self.phase_reads,
            found,
            existing_lookups: self.phase_reads,
            entries_read,
            ..PhaseCounts::default()
        })
    }
}

/// An indicatif progress bar on stderr while a phase runs; hidden when the report does not go
/// to a terminal (so it never mixes with `--json -` or a redirected report).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(enabled: bool, workload: Workload, total: u64) -> Self {
        let bar = enabled.then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr_with_hz(5),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:>16} [{bar:40}] {pos}/{len} {per_sec} eta {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(workload.name());
            bar
        });
        Progress { bar }
    }

    fn tick(&mut self, done: u64, _out: &mut dyn Write) {
        // Every 1024 operations keeps the bar's bookkeeping out of the latencies.
        if let Some(bar) = &self.bar {
            if done.is_multiple_of(1024) {
                bar.set_position(done);
            }
        }
    }

    fn finish(&self, _out: &mut dyn Write) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The background writer's rate for `ecotune` without `--write-rate`, in MB/s.
pub const ECOTUNE_DEFAULT_WRITE_MB_S: f64 = 2.0;

/// Sleeps until `due_seconds` after `started` (a rate-limited writer ahead of its schedule),
/// in slices of at most 50 ms so that `stop` ends it promptly; returns at once when behind.
fn pace(started: Instant, due_seconds: f64, stop: &std::sync::atomic::AtomicBool) {
    loop {
        let ahead = due_seconds - started.elapsed().as_secs_f64();
        // Below a millisecond the sleep would cost more than it paces.
        if ahead < 0.001 || stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(ahead.min(0.05)));
    }
}

/// Runs [`Op::Scan`]: `len` entries from key `start`, in the closed range `[start, start + len)`
/// when `bounded`. Returns the entries read.
fn scan(
    engine: &dyn Engine,
    format: KeyFormat,
    start: u64,
    len: u64,
    bounded: bool,
    key: &mut Vec<u8>,
) -> CliResult<u64> {
    format.present_key(start, key);
    Ok(if bounded {
        let mut until = Vec::with_capacity(key.len());
        format.present_key(start.saturating_add(len), &mut until);
        engine.scan_bounded(key, &until, len)?.entries
    } else {
        engine.scan(key, len)?.entries
    })
}

/// One extra query thread of `--query-threads`: runs `ops` (no inserts) and counts them.
fn query_stream(
    engine: &dyn Engine,
    format: KeyFormat,
    ops: impl Iterator<Item = Op>,
    value_size: usize,
) -> CliResult<PhaseCounts> {
    let mut key = Vec::new();
    let mut value = vec![b'u'; value_size];
    let mut counts = PhaseCounts::default();
    for op in ops {
        match op {
            Op::Read(index) => {
                format.present_key(index, &mut key);
                counts.lookups += 1;
                counts.existing_lookups += 1;
                counts.found += u64::from(engine.get(&key)?.is_some());
            }
            Op::ReadMissing(gap) => {
                format.missing_key(gap, &mut key);
                counts.lookups += 1;
                counts.missing_hits += u64::from(engine.get(&key)?.is_some());
            }
            Op::Scan {
                start,
                len,
                bounded,
            } => {
                counts.entries_read += scan(engine, format, start, len, bounded, &mut key)?;
            }
            Op::Update(index) | Op::ReadModifyWrite(index) => {
                format.present_key(index, &mut key);
                if matches!(op, Op::ReadModifyWrite(_)) {
                    counts.lookups += 1;
                    counts.existing_lookups += 1;
                    counts.found += u64::from(engine.get(&key)?.is_some());
                }
                value.rotate_left(1);
                engine.put(&key, &value)?;
            }
            // Refused before the threads start: a mix with inserts runs on one thread.
            Op::Insert(_) => {}
        }
        counts.ops += 1;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse_with_units_and_separators() {
        assert_eq!(parse_bytes("8MiB"), Ok(8 << 20));
        assert_eq!(parse_bytes("64m"), Ok(64 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert!(parse_bytes("8 parsecs").is_err());
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("99999999999999999999G").is_err());
        assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
        assert!(parse_count("-5").is_err());
    }

    fn config(flags: &[&str]) -> CliResult<BenchConfig> {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: BenchArgs,
        }
        let argv = std::iter::once("bench").chain(flags.iter().copied());
        let wrapper = Wrapper::try_parse_from(argv)
            .map_err(|error| CliError::InvalidArgument(error.to_string()))?;
        BenchConfig::resolve(&wrapper.args)
    }

    /// The auto-tune flags reach the engine's options, each implying `--auto-tune`; a value the
    /// engine refuses is a usage error.
    #[test]
    fn auto_tune_flags_set_the_engines_options() {
        assert_eq!(config(&[]).expect("plain").auto_tune, None);
        let defaults = strata::model::auto_tune::AutoTuneOptions::default();
        assert_eq!(
            config(&["--auto-tune"]).expect("on").auto_tune,
            Some(defaults)
        );
        let set = config(&[
            "--auto-tune-min-gain",
            "0.03",
            "--auto-tune-confirmations",
            "1",
            "--auto-tune-horizon",
            "40",
        ])
        .expect("set")
        .auto_tune
        .expect("implied");
        assert_eq!(
            (set.min_gain, set.confirmations, set.horizon_intervals),
            (0.03, 1, 40.0)
        );
        assert_eq!(set.every_operations, defaults.every_operations);
        for bad in [
            "--auto-tune-confirmations=0",
            "--auto-tune-min-gain=-0.1",
            "--auto-tune-horizon=NaN",
            "--auto-tune-every-seconds=-1",
        ] {
            let error = config(&[bad]).expect_err("refused");
            assert!(error.to_string().contains("auto_tune."), "{bad:?}: {error}");
        }
    }

    /// The paper-ecotune preset resolves to the setup its doc names.
    #[test]
    fn the_ecotune_paper_preset_resolves_to_the_papers_setup() {
        let flags = preset::Preset::PaperEcotune.flags();
        let config = config(flags).expect("the preset's flags resolve");
        assert_eq!((config.key_size, config.value_size), (8, 256));
        assert!(config.direct_reads);
        assert_eq!(config.cache_bytes, 8 << 20);
        assert_eq!(config.query_threads, 2);
        assert_eq!(config.write_rate, Some(2.0));
        assert_eq!(config.num, 1_000_000);
        // r is the engine's to measure, not the workload's.
        assert_eq!(config.ecotune_settings().long_scan_ratio, None);
    }

    /// EcoTune's `r` is the engine's unless `--ecotune-r` fixes it (a ratio, or the workload's).
    #[test]
    fn ecotune_r_is_measured_unless_fixed() {
        let live = config(&["--workloads", "fillrandom,ecotune:0.1"]).expect("live");
        assert_eq!(live.ecotune_settings().long_scan_ratio, None);
        let workload = config(&["--workloads", "ecotune:0.1", "--ecotune-r", "workload"])
            .expect("the workload's");
        assert_eq!(workload.ecotune_settings().long_scan_ratio, Some(0.1));
        let fixed = config(&["--ecotune-r", "0.4"]).expect("fixed");
        assert_eq!(fixed.ecotune_settings().long_scan_ratio, Some(0.4));
        assert!(config(&["--ecotune-r", "1.5"]).is_err());
        assert!(config(&["--ecotune-r", "lots"]).is_err());
    }

    /// Statistics follow `Options::default()` unless given; `on,off` runs Strata both ways,
    /// labelled, while a peer and an allocator that always keeps them run once.
    #[test]
    fn access_statistics_default_to_the_engines_and_a_list_compares_them() {
        let default = config(&[]).expect("defaults");
        assert_eq!(
            default.access_statistics,
            vec![strata::Options::default().access_statistics]
        );
        assert_eq!(
            config(&["--access-statistics"])
                .expect("bare")
                .access_statistics,
            vec![true]
        );
        assert_eq!(
            config(&["--access-statistics", "off"])
                .expect("off")
                .access_statistics,
            vec![false]
        );
        assert!(config(&["--access-statistics", "sometimes"]).is_err());

        let both = config(&[
            "--access-statistics",
            "on,off",
            "--filter-policy",
            "elastic,mnemosyne-plus",
        ])
        .expect("both");
        let labels: Vec<String> = both.variants().iter().map(Variant::label).collect();
        assert_eq!(
            labels,
            [
                "strata/elastic/leveling@stats",
                "strata/elastic/leveling@nostats",
                "strata/mnemosyne-plus/leveling@stats",
            ]
        );
        let variants = both.variants();
        assert_eq!(
            variants
                .iter()
                .map(|v| both.engine_config(v).access_statistics)
                .collect::<Vec<_>>(),
            [true, false, true]
        );
        assert!(
            config(&["--access-statistics", "on,off", "--db", "/tmp/x"]).is_err(),
            "one --db cannot hold two configurations"
        );
    }

    /// An engine in memory whose cost model takes `model_delay` a call, and counts its calls;
    /// with `filters_change` its one file's filter bits in use change at every look.
    struct SlowModel {
        entries: std::sync::Mutex<std::collections::BTreeMap<Vec<u8>, Vec<u8>>>,
        model_delay: Duration,
        model_calls: std::sync::atomic::AtomicU64,
        filters_change: bool,
        looks: std::sync::atomic::AtomicU64,
    }

    impl SlowModel {
        fn new(model_delay: Duration, filters_change: bool) -> SlowModel {
            SlowModel {
                entries: Default::default(),
                model_delay,
                model_calls: Default::default(),
                filters_change,
                looks: Default::default(),
            }
        }

        /// The model's calls so far.
        fn calls(&self) -> u64 {
            self.model_calls.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl Engine for SlowModel {
        fn name(&self) -> &'static str {
            "slow-model"
        }
        fn version(&self) -> String {
            "0".into()
        }
        fn settings(&self) -> Vec<String> {
            Vec::new()
        }
        fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
            let mut entries = self.entries.lock().expect("not poisoned");
            entries.insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn get(&self, key: &[u8]) -> CliResult<Option<Vec<u8>>> {
            Ok(self.entries.lock().expect("not poisoned").get(key).cloned())
        }
        fn delete(&self, key: &[u8]) -> CliResult<()> {
            self.entries.lock().expect("not poisoned").remove(key);
            Ok(())
        }
        fn write_batch(&self, _ops: &[engine::BatchOp]) -> CliResult<()> {
            Err(CliError::InvalidArgument("no batches here".into()))
        }
        fn scan(&self, _from: &[u8], _count: u64) -> CliResult<engine::ScanOutcome> {
            Ok(engine::ScanOutcome::default())
        }
        fn scan_bounded(
            &self,
            _from: &[u8],
            _until: &[u8],
            _count: u64,
        ) -> CliResult<engine::ScanOutcome> {
            Ok(engine::ScanOutcome::default())
        }
        fn flush(&self) -> CliResult<()> {
            Ok(())
        }
        fn wait_for_compactions(&self) -> CliResult<()> {
            Ok(())
        }
        fn compact_all(&self) -> CliResult<()> {
            Ok(())
        }
        fn counters(&self) -> engine::EngineCounters {
            engine::EngineCounters::default()
        }
        fn reset_counters(&self) {}
        fn shape(&self) -> TreeShape {
            TreeShape::default()
        }
        fn predicted_lookup_io(&self) -> Option<engine::PredictedLookupIo> {
            self.model_calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(self.model_delay);
            let reads = engine::PredictedBlockReads {
                data: 0.01,
                index: 0.0,
                filter: 0.0,
            };
            Some(engine::PredictedLookupIo {
                zero_result: 0.02,
                existing: 1.0,
                zero_result_device: reads,
                existing_device: reads,
            })
        }
        fn filter_bits_in_use(&self) -> Option<std::collections::BTreeMap<u64, f64>> {
            let looks = self
                .looks
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let bits = if self.filters_change {
                looks as f64
            } else {
                10.0
            };
            Some([(1, bits)].into())
        }
        fn close(self: Box<Self>) -> CliResult<()> {
            Ok(())
        }
    }

    /// Runs `fillrandom,readmissing` over 2,000 keys on `engine`: the bench afterwards.
    fn bench_on<'a>(
        config: &'a BenchConfig,
        engine: &SlowModel,
        out: &'a mut Vec<u8>,
    ) -> Bench<'a> {
        let mut bench = Bench::new(
            config,
            config.variants()[0],
            1,
            KeyFormat::new(config.num, config.key_size).expect("format"),
            out,
            false,
        );
        bench.run_phases(engine).expect("the phases run");
        bench
    }

    /// A phase times the engine, not the bench's model: the model runs at the first time-series
    /// point of a lookup phase and again only when the tree or filters change, its time left out
    /// of the phase's; a write phase does not run it.
    #[test]
    fn a_phase_leaves_the_cost_models_time_out() {
        let config = config(&[
            "--engines",
            "strata",
            "--workloads",
            "fillrandom,readmissing",
            "--num",
            "2000",
            "--reads",
            "2000",
        ])
        .expect("flags");
        let engine = SlowModel::new(Duration::from_millis(200), false);
        let mut out = Vec::new();
        let bench = bench_on(&config, &engine, &mut out);
        let calls = engine.calls();
        // One at the lookup phase's first point (the tree never changes) and one at its end;
        // none for the fill.
        assert_eq!(calls, 2, "model calls");
        let missing = bench
            .results
            .iter()
            .find(|result| result.phase == Workload::Readmissing)
            .expect("a readmissing phase");
        // 2,000 lookups of a map in memory take a few milliseconds; the model alone 200.
        let seconds = missing.ops as f64 / missing.ops_per_sec;
        assert!(
            seconds < 0.100,
            "the phase took {seconds} s: the model's 200 ms are in it"
        );
        let points = bench
            .series
            .iter()
            .filter(|point| point.phase == Workload::Readmissing)
            .collect::<Vec<_>>();
        assert_eq!(points.len(), 100);
        assert!(points
            .iter()
            .all(|point| point.predicted_reads_per_lookup.is_some()));
        drop(bench);
        let text = String::from_utf8(out).expect("text");
        assert!(
            text.contains("of cost-model predictions at time-series points left out"),
            "{text}"
        );
        // Filters that change at every point: the model runs at most every tenth point.
        let changing = SlowModel::new(Duration::from_millis(1), true);
        let mut out = Vec::new();
        let bench = bench_on(&config, &changing, &mut out);
        let calls = changing.calls();
        // Points 1, 11, ..., 91 of the lookup phase's 100, and its end.
        assert_eq!(calls, 11, "model calls");
        assert_eq!(bench.series.len(), 200);
    }
}
