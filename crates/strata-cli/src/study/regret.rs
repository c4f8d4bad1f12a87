//! `strata study regret`: each filter allocator against the optimum, on the tree that
//! allocator built. A comparison of two allocators in `strata bench` also compares two trees:
//! the shapes differ from run to run (2 to 6 runs in the measurements of docs/BENCHMARKS.md) and the shape
//! alone can swing the reads per lookup more than the allocation does. The regret is the
//! shape-independent figure: the unnecessary reads a policy's filters cost, divided by what the
//! per-file optimum (Mnemosyne eq. 3, fed the exact per-file zero-result counts of the same
//! lookups) costs on the same tree with the same budget.
//!
//! Method, per policy:
//! 1. load `--num` keys in the seeded order `strata bench` uses (leveling, `--size-ratio`, a
//!    small write buffer and files), with the policy as the filter allocator, then flush and
//!    let compactions finish (with `--no-settle`, only those already running: `close` waits for
//!    them);
//! 2. reopen with a policy that never compacts and the same allocator (which restores its own
//!    state: skipped filters, elastic modules in use), replay `--lookups` lookups (a fraction
//!    `--empty-fraction` of absent keys inside the key range, drawn from `--distribution`,
//!    the same keys for every policy), and count unnecessary data-block reads: the policy's;
//! 3. trace the same lookups (`Db::trace_lookups`) for every file's exact `z_i`, rewrite every
//!    filter to the optimum for that `z` at the budget (`Db::rewrite_filters`), reopen with
//!    uniform filters (which probe every filter as built) and replay: the optimum's.
//!
//! 4. (the same tree) rewrite every filter to uniform filters at the budget and replay: what
//!    uniform filters would read on the tree this policy built ("vs unif", shape-independent
//!    like the regret).
//!
//! The measure is `strata study headroom`'s: no block cache, index and filter blocks pinned,
//! so every data block a lookup reads is counted. With `--block-cache-bytes`, every replay runs
//! with a block cache of that size (data blocks compete for it), after an unmeasured replay of
//! the same lookups that warms it: the optimum, fed `z` alone, is then no longer the optimum
//! (a false positive on a cached block costs nothing), and "vs unif" is the figure to read. The policy's filter bits in use
//! (`Stats::effective_bits_per_key`, skipped filters and unused modules as 0) are reported
//! beside it: a policy allowed over the budget (Mnemosyne's 20% guard) can beat the optimum
//! of the budget.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use strata::alloc::cache_model::CacheModel;
use strata::alloc::{FilterAllocator, Uniform};
use strata::{Db, FilterFamily, Options};

use super::headroom::{
    optimal_bits_weighted, positions, rewrite, shape_signature, Position, Workload,
};
use super::RunArgs;
use super::{
    load, report_error, shape_summary, tree_shape, write_json, InUseRange, LevelShape, ScratchDir,
    TreeArgs,
};
use crate::bench::distribution::KeyDistribution;
use crate::bench::parse_count;
use crate::bench::workload::KeyFormat;
use crate::error::{CliError, CliResult};
use crate::policies::{CompactionKind, FilterAllocatorKind, FilterSettings};

/// `strata study regret`.
#[derive(Debug, Clone, clap::Args)]
pub struct RegretArgs {
    /// Keys loaded.
    #[arg(long, default_value = "600000", value_parser = parse_count)]
    pub num: u64,
    /// The tree: entry sizes, size ratio, buffer and file sizes.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// The filter budget in bits per key.
    #[arg(long, default_value_t = 2.0)]
    pub bits_per_key: f64,
    /// Point lookups replayed.
    #[arg(long, default_value = "200000", value_parser = parse_count)]
    pub lookups: u64,
    /// Fraction of the lookups that look for absent keys.
    #[arg(long, default_value_t = 1.0)]
    pub empty_fraction: f64,
    /// Key distribution of the lookups (as `strata bench --distribution`).
    #[arg(long, default_value = "uniform")]
    pub distribution: KeyDistribution,
    /// Freeze the tree as the load leaves it (after a flush, with the compactions already
    /// running finished) instead of letting compactions settle it: an unsettled tree, as a
    /// live database has between compactions.
    #[arg(long)]
    pub no_settle: bool,
    /// Record access statistics (Merlin, DESIGN.md §4) while the policy's own filters answer the
    /// lookups, so that policies which re-divide the budget from live statistics (elastic
    /// filters, Mnemosyne+'s skips) learn the workload during the replay. Mnemosyne+ records
    /// them in any case. `on` or `off` (the flag alone: `on`); default `Options::default()`'s,
    /// on (before statistics were on by default the study ran without them: `off` repeats
    /// those runs).
    #[arg(long, num_args = 0..=1, default_missing_value = "on", value_parser = crate::bench::parse_on_off)]
    pub access_statistics: Option<bool>,
    /// With access statistics, record one point lookup in this many (`Options::access_sample_every`,
    /// DESIGN.md §4); default `Options::default()`'s.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub access_sample_every: Option<u32>,
    /// Let the policy's filters be rebuilt (`Options::filter_rebuild_bytes_per_sec`, elastic
    /// filters' priced rebuild, DESIGN.md §3.5) at this many bytes per second while the lookups are
    /// replayed as a warm-up, round after round, until a round brings no rebuild (at most
    /// 20 rounds); then the measured replay. 0 (the default): no rebuild, no warm-up.
    #[arg(long, default_value = "0", value_parser = crate::bench::parse_bytes)]
    pub rebuild_rate: u64,
    /// A block cache of this many bytes for the replays (data blocks only compete for it:
    /// index and filters stay pinned), each measured replay preceded by an unmeasured one that
    /// warms it. 0 (the default): no cache, every data block read counted.
    #[arg(long, default_value = "0", value_parser = crate::bench::parse_bytes)]
    pub block_cache_bytes: u64,
    /// With `--block-cache-bytes`: keep index and filter blocks in the block cache, as Strata
    /// does by default, instead of pinned, so that the replays pay a cache lookup per filter
    /// module probed and filters compete with data for the cache.
    #[arg(long)]
    pub cache_metadata: bool,
    /// Modules every new file of elastic filters gets on disk at least (1 to 6; default 3).
    #[arg(long)]
    pub elastic_disk_modules: Option<usize>,
    /// The filter family every filter is built in (`bloom` or `ribbon`; `Options::filter_family`):
    /// the policies', the optimum's and uniform filters' on the same tree. The optimum and the
    /// predictions price a bit with the family's constant (DESIGN.md §2, §3.5 "Filter families").
    #[arg(long, default_value = "bloom", value_parser = parse_one_family)]
    pub filter_family: FilterFamily,
    /// Write, per policy and file, the weights the policy's allocation rests on beside the
    /// exact counts the study traces, as CSV to FILE (columns: [`WEIGHTS_HEADER`]): how far the
    /// estimates that divide the budget are from the ones the optimum is given.
    #[arg(long, value_name = "FILE")]
    pub dump_weights: Option<std::path::PathBuf>,
    /// The allocators compared, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uniform,monkey,mnemosyne,mnemosyne-plus,elastic"
    )]
    pub filter_policies: Vec<FilterAllocatorKind>,
    /// The seed, the directory and the JSON report.
    #[command(flatten)]
    pub run: RunArgs,
}

impl RegretArgs {
    /// Whether the policy's replay keeps access statistics: the flag, else the engine's default.
    fn access_statistics(&self) -> bool {
        self.access_statistics
            .unwrap_or(Options::default().access_statistics)
    }

    /// One point lookup in this many is recorded: the flag, else the engine's default.
    fn access_sample_every(&self) -> u32 {
        self.access_sample_every
            .unwrap_or(Options::default().access_sample_every)
    }
}

/// One policy on its own tree.
#[derive(Debug, Clone, Serialize)]
struct Row {
    policy: String,
    /// The tree the policy built (per non-empty level).
    shape: Vec<LevelShape>,
    runs: usize,
    files: usize,
    /// Filter bits per key lookups used (skipped filters and unused modules as 0).
    effective_bits_per_key: f64,
    /// Filter bits per key on disk.
    average_bits_per_key: f64,
    /// Filter bits per key in use during the load (sampled; the least once a last level
    /// existed).
    in_use_during_load: InUseRange,
    policy_unnecessary_reads_per_lookup: f64,
    optimal_unnecessary_reads_per_lookup: f64,
    /// Uniform filters at the budget rewritten on the same tree, the same lookups.
    uniform_unnecessary_reads_per_lookup: f64,
    /// Policy / uniform on the same tree; `null` when uniform read nothing unnecessary.
    versus_uniform: Option<f64>,
    /// Lookups per second of the measured replay with the policy's filters, and with uniform
    /// filters rewritten on the same tree (one thread each, one replay each: noisier than the
    /// read counts, and the uniform replay runs on freshly rewritten files).
    policy_lookups_per_sec: f64,
    uniform_lookups_per_sec: f64,
    /// With a block cache: the optimum of `z_i * c_i`, `c_i` the share of file `i`'s data-block
    /// reads that missed the cache under uniform filters (one step of a fixed point, since the
    /// misses change with the allocation), on the same tree and lookups; `null` without a cache.
    cache_weighted_unnecessary_reads_per_lookup: Option<f64>,
    /// Policy / optimum; `null` when the optimum read nothing unnecessary.
    regret: Option<f64>,
    /// Files a lookup probed, on average.
    probes_per_lookup: f64,
    /// With `--rebuild-rate`: the warm-up rounds replayed, and the filter rebuilds they
    /// brought (files, bytes read plus written).
    warmup_rounds: u32,
    filter_rebuilds: u64,
    filter_rebuild_bytes: u64,
    /// DESIGN.md §1's model, `sum_i z_i * exp(-ln2sq * b_i) / lookups`, on the traced counts with
    /// the bits in use of the policy and of the optimum.
    policy_predicted_per_lookup: f64,
    optimal_predicted_per_lookup: f64,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    study: &'static str,
    num: u64,
    /// Key and value sizes, size ratio, buffer and file sizes.
    #[serde(flatten)]
    tree: &'a TreeArgs,
    bits_per_key: f64,
    lookups: u64,
    empty_fraction: f64,
    distribution: String,
    settled: bool,
    access_statistics: bool,
    access_sample_every: u32,
    rebuild_rate: u64,
    block_cache_bytes: u64,
    cache_metadata: bool,
    elastic_disk_modules: Option<usize>,
    filter_family: &'static str,
    seed: u64,
    rows: &'a [Row],
}

/// The columns of `--dump-weights`, one row per policy and file: where the file sits, its
/// entries and filter bits (on disk, in use at the end of the policy's replay), Merlin's
/// estimate (`q`, `z`, `z` as a share of every file's; empty without access statistics), the
/// empty and found probes the lookup path counted in it (every replay, warm-up included), the
/// exact zero-result probes the trace found (and their share), the cache model's predicted miss
/// chance and false-positive cost at uniform filters' pass rate (what elastic filters multiply
/// `z` by, cached false positives priced by device reads), the weight elastic filters give the
/// file and its share (for other policies: what elastic filters would give it), the data-block reads and
/// misses under the policy's filters, the smoothed miss share under uniform filters (what the
/// cache-weighted optimum multiplies `z` by; empty without a cache), the bits per key of
/// the optimum and of the cache-weighted optimum, the policy's bits in use when the measured
/// replay began, and the data-block reads and misses of the measured replay alone (warm-up left
/// out) under the policy's filters, and its misses under the cache-weighted optimum's (empty
/// without a cache).
const WEIGHTS_HEADER: &str = "policy,seed,level,run,index,entries,bits_on_disk,bits_in_use,\
merlin_q,merlin_z,merlin_z_share,counted_empty,counted_found,exact_z,exact_z_share,\
model_miss_chance,model_fp_cost,elastic_weight,elastic_weight_share,reads_policy,misses_policy,\
miss_share_uniform,optimal_bits,cache_weighted_optimal_bits,bits_in_use_before_replay,\
replay_reads_policy,replay_misses_policy,replay_misses_cache_weighted";

/// One file's line of `--dump-weights` ([`WEIGHTS_HEADER`]).
#[derive(Debug, Clone, Default)]
struct FileWeights {
    position: Position,
    entries: u64,
    bits_on_disk: f64,
    bits_in_use: f64,
    /// Merlin's `(q, z)`, all lookups' scale.
    merlin: Option<(f64, f64)>,
    counted_empty: u64,
    counted_found: u64,
    exact_z: f64,
    miss_chance: f64,
    false_positive_cost: f64,
    /// What elastic filters weigh the file by: Merlin's `z` (or, without statistics, the counted
    /// empty probes per second) times the false-positive cost.
    elastic_weight: f64,
    reads: u64,
    misses: u64,
    miss_share_uniform: Option<f64>,
    optimal_bits: f64,
    cache_weighted_bits: Option<f64>,
    /// The bits in use when the measured replay started (after the warm-up replay, if any).
    bits_in_use_before_replay: f64,
    /// The data-block reads and misses of the measured replay alone, under the policy's filters.
    replay_reads: u64,
    replay_misses: u64,
    /// The misses of the cache-weighted optimum's measured replay (empty without a cache).
    replay_misses_cache_weighted: Option<u64>,
}

/// The weights behind `allocator`'s allocation on `version`, file by file, with the exact
/// counts `workload` traced.
fn file_weights(
    version: &strata::version::Version,
    allocator: &dyn FilterAllocator,
    workload: &Workload,
    bits_per_key: f64,
) -> Vec<FileWeights> {
    let at = positions(version);
    let now = Instant::now();
    // Elastic filters as the study builds them price a cached false positive by device reads
    // (`CachedFalsePositives::DeviceReads`, DESIGN.md §3.5).
    let model = CacheModel::calibrate(version.files().map(|(_, _, file)| file.as_ref()), now)
        .device_reads_only();
    version
        .files()
        .filter_map(|(_, run, file)| {
            let position = *at.get(&file.number())?;
            let counts = file.state().lookup_counts(now);
            let (reads, misses) = file.state().data_block_reads();
            let merlin = file.state().access_estimate().map(|e| (e.q, e.z));
            let pass = file.filter_family().false_positive_rate(bits_per_key);
            let false_positive_cost = model.false_positive_cost(file, pass);
            let reach = match merlin {
                Some((q, z)) if q > 0.0 || z > 0.0 => z,
                _ => strata::alloc::cache_model::empty_probe_rate(&counts).unwrap_or(0.0),
            };
            Some(FileWeights {
                position,
                entries: file.entries(),
                bits_on_disk: file.bits_per_key(),
                bits_in_use: allocator.bits_per_key_in_use(run, file),
                merlin,
                counted_empty: counts.empty_probes,
                counted_found: counts.found_probes,
                exact_z: workload.z_of(position),
                miss_chance: model.miss_chance(file, pass),
                false_positive_cost,
                elastic_weight: reach * false_positive_cost,
                reads,
                misses,
                ..FileWeights::default()
            })
        })
        .collect()
}

/// Creates the `--dump-weights` CSV at `path` with its header.
fn open_weights(path: &std::path::Path) -> CliResult<std::io::BufWriter<std::fs::File>> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path).map_err(|e| CliError::io("creating the weights file", e))?,
    );
    writeln!(file, "{WEIGHTS_HEADER}").map_err(report_error)?;
    Ok(file)
}

/// Appends `rows` (one policy's) to the `--dump-weights` CSV `out`.
fn write_weights(
    out: &mut dyn Write,
    policy: &str,
    seed: u64,
    rows: &[FileWeights],
) -> std::io::Result<()> {
    let share = |value: f64, total: f64| if total > 0.0 { value / total } else { 0.0 };
    let merlin_total: f64 = rows.iter().filter_map(|r| r.merlin).map(|(_, z)| z).sum();
    let exact_total: f64 = rows.iter().map(|r| r.exact_z).sum();
    let weight_total: f64 = rows.iter().map(|r| r.elastic_weight).sum();
    let optional = |value: Option<f64>| value.map_or(String::new(), |v| format!("{v:.6}"));
    for row in rows {
        let (level, run, index) = row.position;
        writeln!(
            out,
            "{policy},{seed},{level},{run},{index},{},{:.4},{:.4},{},{},{},{},{},{},{:.6},{:.6},\
             {:.6},{:.6},{:.6},{},{},{},{:.4},{},{:.4},{},{},{}",
            row.entries,
            row.bits_on_disk,
            row.bits_in_use,
            optional(row.merlin.map(|(q, _)| q)),
            optional(row.merlin.map(|(_, z)| z)),
            optional(row.merlin.map(|(_, z)| share(z, merlin_total))),
            row.counted_empty,
            row.counted_found,
            row.exact_z,
            share(row.exact_z, exact_total),
            row.miss_chance,
            row.false_positive_cost,
            row.elastic_weight,
            share(row.elastic_weight, weight_total),
            row.reads,
            row.misses,
            optional(row.miss_share_uniform),
            row.optimal_bits,
            optional(row.cache_weighted_bits),
            row.bits_in_use_before_replay,
            row.replay_reads,
            row.replay_misses,
            row.replay_misses_cache_weighted
                .map_or(String::new(), |m| m.to_string()),
        )?;
    }
    Ok(())
}

/// One family, not Strata's automatic choice: the optimum prices every file's bits alike.
fn parse_one_family(text: &str) -> Result<FilterFamily, String> {
    match strata::FilterFamilies::parse(text).map_err(|error| error.to_string())? {
        strata::FilterFamilies::Only(family) => Ok(family),
        strata::FilterFamilies::Automatic => {
            Err("the regret study builds every filter in one family: bloom or ribbon".to_string())
        }
    }
}

/// The study's options (`TreeArgs::measured_options`) with the filters in `args`' family.
fn options(
    args: &RegretArgs,
    allocator: Arc<dyn FilterAllocator>,
    frozen: bool,
) -> CliResult<Options> {
    Ok(Options {
        filter_family: strata::FilterFamilies::Only(args.filter_family),
        access_statistics: args.access_statistics(),
        access_sample_every: args.access_sample_every(),
        ..args.tree.measured_options(allocator, frozen)?
    })
}

fn allocator(args: &RegretArgs, kind: FilterAllocatorKind) -> CliResult<Arc<dyn FilterAllocator>> {
    let buffer_entries =
        args.tree.write_buffer_bytes / (args.tree.key_size + args.tree.value_size).max(1) as u64;
    Ok(kind.build(&FilterSettings {
        bits_per_key: args.bits_per_key,
        compaction: CompactionKind::Leveling,
        size_ratio: args.tree.size_ratio,
        expected_entries: args.num,
        buffer_entries,
        budget_bytes: None,
        disk_modules: args
            .elastic_disk_modules
            .filter(|_| kind == FilterAllocatorKind::Elastic),
    })?)
}

/// Replays the workload (`Workload::replay`) and returns the unnecessary data-block reads per
/// lookup; with a block cache (`warm`), after an unmeasured replay that fills it.
fn replay(db: &Db, workload: &Workload, warm: bool) -> CliResult<f64> {
    replay_timed(db, workload, warm).map(|(reads, _)| reads)
}

/// [`replay`], and the measured replay's lookups per second (one thread; the tree and the
/// lookups are the same for every allocation replayed on it, so the rates compare the
/// allocations' lookup cost on one tree).
fn replay_timed(db: &Db, workload: &Workload, warm: bool) -> CliResult<(f64, f64)> {
    if warm {
        workload.replay(db)?;
    }
    let started = Instant::now();
    workload.replay(db)?;
    let seconds = started.elapsed().as_secs_f64();
    let lookups = workload.keys.len().max(1) as f64;
    let unnecessary = db.stats().io.unnecessary_data_reads_total();
    Ok((unnecessary as f64 / lookups, lookups / seconds.max(1e-9)))
}

/// Data-block reads and misses, by file position.
type FileReads = HashMap<Position, (u64, u64)>;

/// Every file's data-block reads and misses so far (`FileState::data_block_reads`), by position.
fn file_reads(db: &Db) -> FileReads {
    let version = db.version();
    let at = positions(&version);
    version
        .files()
        .filter_map(|(_, _, file)| {
            at.get(&file.number())
                .map(|&position| (position, file.state().data_block_reads()))
        })
        .collect()
}

/// [`replay_timed`] with the warm-up (if `warm`) before `between` is called, and each file's
/// data-block reads and misses in the measured replay alone.
fn replay_per_file(
    db: &Db,
    workload: &Workload,
    warm: bool,
    between: &mut dyn FnMut(&Db),
) -> CliResult<(f64, f64, FileReads)> {
    if warm {
        workload.replay(db)?;
    }
    between(db);
    let before = file_reads(db);
    let (reads, rate) = replay_timed(db, workload, false)?;
    let measured = file_reads(db)
        .into_iter()
        .map(|(position, (reads, misses))| {
            let (reads_before, misses_before) = before.get(&position).copied().unwrap_or((0, 0));
            (
                position,
                (
                    reads.saturating_sub(reads_before),
                    misses.saturating_sub(misses_before),
                ),
            )
        })
        .collect();
    Ok((reads, rate, measured))
}

/// Most warm-up rounds `--rebuild-rate` replays.
const MAX_WARMUP_ROUNDS: u32 = 20;

/// Replays `workload` round after round, letting the engine rebuild filters after each, until
/// a round brings none (or [`MAX_WARMUP_ROUNDS`]); returns the rounds replayed, the rebuilds
/// and their bytes read plus written.
fn warm_up(db: &Db, workload: &Workload) -> CliResult<(u32, u64, u64)> {
    let (mut rebuilds, mut bytes) = (0, 0);
    for round in 1..=MAX_WARMUP_ROUNDS {
        // The replay resets the counters first: what they show after the wait is this round's.
        workload.replay(db)?;
        // One price check comes within a second of an idle worker; the rebuilds it starts
        // follow one another at the rate limit, and the wait below sees them through.
        std::thread::sleep(std::time::Duration::from_millis(1_200));
        db.wait_for_compactions()?;
        let io = db.stats().io;
        rebuilds += io.filter_rebuilds;
        bytes += io.filter_rebuild_read_bytes + io.filter_rebuild_write_bytes;
        if io.filter_rebuilds == 0 {
            return Ok((round, rebuilds, bytes));
        }
    }
    Ok((MAX_WARMUP_ROUNDS, rebuilds, bytes))
}

fn validate(args: &RegretArgs) -> CliResult<()> {
    let invalid = |message: String| Err(CliError::InvalidArgument(message));
    if args.lookups == 0 {
        return invalid("--lookups must be at least 1".into());
    }
    if !(args.bits_per_key.is_finite() && args.bits_per_key > 0.0) {
        return invalid(format!(
            "--bits-per-key must be positive, got {}",
            args.bits_per_key
        ));
    }
    if !(0.0..=1.0).contains(&args.empty_fraction) {
        return invalid(format!(
            "--empty-fraction must lie in [0, 1], got {}",
            args.empty_fraction
        ));
    }
    if args.num < 20 {
        return invalid("--num must be at least 20 (absent keys lie between keys)".into());
    }
    if args.filter_policies.is_empty() {
        return invalid("--filter-policies names no allocator".into());
    }
    if args.cache_metadata && args.block_cache_bytes == 0 {
        return invalid("--cache-metadata needs a block cache (--block-cache-bytes)".into());
    }
    Ok(())
}

/// Runs the study.
pub fn run(args: &RegretArgs, out: &mut dyn Write) -> CliResult<()> {
    validate(args)?;
    let format = KeyFormat::new(args.num, args.tree.key_size).map_err(CliError::InvalidArgument)?;
    let scratch = ScratchDir::new(args.run.dir.as_deref(), "regret")?;
    std::fs::create_dir_all(&scratch.path)
        .map_err(|e| CliError::io("creating the study directory", e))?;
    let started = Instant::now();
    let fpr_constant = args.filter_family.fpr_constant();
    let mut dump = args.dump_weights.as_deref().map(open_weights).transpose()?;
    let mut rows = Vec::new();
    for &kind in &args.filter_policies {
        let dir = scratch.path.join(kind.name());
        // 1. Load with the policy, settle.
        let db = Db::open(&dir, options(args, allocator(args, kind)?, false)?)?;
        let in_use_during_load = load(&db, &format, args.tree.value_size, args.run.seed)?;
        db.flush()?;
        if !args.no_settle {
            db.wait_for_compactions()?;
        }
        db.close()?;
        drop(db);
        // 2. The policy's own filters, on the frozen tree.
        let frozen_allocator = allocator(args, kind)?;
        let db = Db::open(
            &dir,
            options(args, Arc::clone(&frozen_allocator), true)?
                .access_statistics(args.access_statistics())
                .filter_rebuild_bytes_per_sec(args.rebuild_rate)
                .block_cache_bytes(args.block_cache_bytes)
                .pin_filter_and_index_blocks(!args.cache_metadata),
        )?;
        let mut workload = Workload::draw(
            &format,
            args.distribution,
            args.empty_fraction,
            args.lookups,
            args.run.seed ^ 0x005e_ed0f_1005,
        )?;
        let (warmup_rounds, filter_rebuilds, filter_rebuild_bytes) = if args.rebuild_rate > 0 {
            warm_up(&db, &workload)?
        } else {
            (0, 0, 0)
        };
        let version = db.version();
        let shape = tree_shape(&version);
        let files = version.files().count();
        let runs = version.run_count();
        let signature = shape_signature(&version);
        drop(version);
        let stats = db.stats();
        let warm = args.block_cache_bytes > 0;
        let mut in_use_before = HashMap::new();
        let (policy_reads, policy_lookups_per_sec, policy_replay) =
            replay_per_file(&db, &workload, warm, &mut |db| {
                let version = db.version();
                let at = positions(&version);
                for (_, run, file) in version.files() {
                    if let Some(&position) = at.get(&file.number()) {
                        let bits = frozen_allocator.bits_per_key_in_use(run, file);
                        in_use_before.insert(position, bits);
                    }
                }
            })?;
        workload.trace(&db)?;
        let version = db.version();
        let mut weights = if dump.is_some() {
            file_weights(
                &version,
                frozen_allocator.as_ref(),
                &workload,
                args.bits_per_key,
            )
        } else {
            Vec::new()
        };
        for row in &mut weights {
            row.bits_in_use_before_replay =
                in_use_before.get(&row.position).copied().unwrap_or(0.0);
            let (reads, misses) = policy_replay.get(&row.position).copied().unwrap_or((0, 0));
            row.replay_reads = reads;
            row.replay_misses = misses;
        }
        let at = positions(&version);
        let lookups = workload.keys.len().max(1) as f64;
        // DESIGN.md §1's model of what the filters in use cost on the traced counts.
        let policy_predicted = version
            .files()
            .map(|(_, run, file)| {
                let z = at.get(&file.number()).map_or(0.0, |&p| workload.z_of(p));
                z * (-fpr_constant * frozen_allocator.bits_per_key_in_use(run, file)).exp()
            })
            .sum::<f64>()
            / lookups;
        drop(version);
        db.close()?;
        drop(db);
        // 3. The optimum on the same tree: uniform filters probe every filter as built.
        let uniform: Arc<dyn FilterAllocator> = Arc::new(Uniform::new(args.bits_per_key)?);
        let db = Db::open(
            &dir,
            options(args, uniform, true)?
                .block_cache_bytes(args.block_cache_bytes)
                .pin_filter_and_index_blocks(!args.cache_metadata),
        )?;
        // Uniform filters on the same tree, for the same lookups.
        let uniform_bits: HashMap<_, f64> = positions(&db.version())
            .into_values()
            .map(|position| (position, args.bits_per_key))
            .collect();
        rewrite(&db, &uniform_bits, args.bits_per_key, &signature)?;
        let (uniform_reads, uniform_lookups_per_sec) = replay_timed(&db, &workload, warm)?;
        let cache_weighted_reads = if warm {
            // The miss share of each file's data-block reads under uniform filters, smoothed as
            // elastic filters smooth it.
            let version = db.version();
            let at = positions(&version);
            let misses: HashMap<_, f64> = version
                .files()
                .filter_map(|(_, _, file)| {
                    let (reads, missed) = file.state().data_block_reads();
                    at.get(&file.number())
                        .map(|&p| (p, (missed as f64 + 4.0) / (reads as f64 + 4.0)))
                })
                .collect();
            let bits =
                optimal_bits_weighted(&version, &workload, args.bits_per_key, fpr_constant, |p| {
                    misses.get(&p).copied().unwrap_or(1.0)
                })?;
            drop(version);
            for row in &mut weights {
                row.miss_share_uniform = misses.get(&row.position).copied();
                row.cache_weighted_bits = bits.get(&row.position).copied();
            }
            rewrite(&db, &bits, args.bits_per_key, &signature)?;
            let (reads, _, measured) = replay_per_file(&db, &workload, warm, &mut |_| {})?;
            for row in &mut weights {
                row.replay_misses_cache_weighted =
                    measured.get(&row.position).map(|&(_, misses)| misses);
            }
            Some(reads)
        } else {
            None
        };
        let bits = optimal_bits_weighted(
            &db.version(),
            &workload,
            args.bits_per_key,
            fpr_constant,
            |_| 1.0,
        )?;
        let optimal_predicted = bits
            .iter()
            .map(|(&position, &b)| workload.z_of(position) * (-fpr_constant * b).exp())
            .sum::<f64>()
            / lookups;
        for row in &mut weights {
            row.optimal_bits = bits.get(&row.position).copied().unwrap_or(0.0);
        }
        if let Some(out) = dump.as_mut() {
            write_weights(out, kind.name(), args.run.seed, &weights).map_err(report_error)?;
        }
        rewrite(&db, &bits, args.bits_per_key, &signature)?;
        let optimal_reads = replay(&db, &workload, warm)?;
        db.close()?;
        drop(db);
        eprintln!(
            "regret: {} done ({:.0} s): {}",
            kind.name(),
            started.elapsed().as_secs_f64(),
            shape_summary(&shape)
        );
        rows.push(Row {
            policy: kind.name().to_string(),
            shape,
            runs,
            files,
            effective_bits_per_key: stats.effective_bits_per_key,
            average_bits_per_key: stats.average_bits_per_key,
            in_use_during_load,
            policy_unnecessary_reads_per_lookup: policy_reads,
            optimal_unnecessary_reads_per_lookup: optimal_reads,
            regret: (optimal_reads > 0.0).then(|| policy_reads / optimal_reads),
            uniform_unnecessary_reads_per_lookup: uniform_reads,
            versus_uniform: (uniform_reads > 0.0).then(|| policy_reads / uniform_reads),
            policy_lookups_per_sec,
            uniform_lookups_per_sec,
            cache_weighted_unnecessary_reads_per_lookup: cache_weighted_reads,
            policy_predicted_per_lookup: policy_predicted,
            optimal_predicted_per_lookup: optimal_predicted,
            probes_per_lookup: workload.probes_per_lookup,
            warmup_rounds,
            filter_rebuilds,
            filter_rebuild_bytes,
        });
    }
    if let Some(mut file) = dump {
        file.flush().map_err(report_error)?;
    }
    print_table(out, args, &rows).map_err(report_error)?;
    if let Some(path) = &args.run.json {
        write_json(
            path,
            &Report {
                study: "regret",
                num: args.num,
                tree: &args.tree,
                bits_per_key: args.bits_per_key,
                lookups: args.lookups,
                empty_fraction: args.empty_fraction,
                distribution: args.distribution.to_string(),
                settled: !args.no_settle,
                access_statistics: args.access_statistics(),
                access_sample_every: args.access_sample_every(),
                rebuild_rate: args.rebuild_rate,
                block_cache_bytes: args.block_cache_bytes,
                cache_metadata: args.cache_metadata,
                elastic_disk_modules: args.elastic_disk_modules,
                filter_family: args.filter_family.name(),
                seed: args.run.seed,
                rows: &rows,
            },
        )?;
    }
    Ok(())
}

fn print_table(out: &mut dyn Write, args: &RegretArgs, rows: &[Row]) -> std::io::Result<()> {
    writeln!(
        out,
        "regret: {} keys ({} B keys, {} B values), leveling T = {}, {} bits/key of {} filters, \
         {} lookups ({} absent, {}); unnecessary data-block reads per lookup, {}, index and filters \
         {}; \"uniform\": uniform filters rewritten on the policy's tree",
        args.num,
        args.tree.key_size,
        args.tree.value_size,
        args.tree.size_ratio,
        args.bits_per_key,
        args.filter_family.name(),
        args.lookups,
        args.empty_fraction,
        args.distribution,
        match args.block_cache_bytes {
            0 => "block cache off".to_string(),
            bytes => format!("a {bytes}-byte block cache warmed by one replay"),
        },
        if args.cache_metadata {
            "in the block cache"
        } else {
            "pinned"
        }
    )?;
    writeln!(
        out,
        "{:<28} {:>6} {:>6} {:>8} {:>8} {:>11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>8}  tree",
        "policy",
        "runs",
        "files",
        "in use",
        "on disk",
        "load in use",
        "policy",
        "optimal",
        "regret",
        "model pol",
        "model opt",
        "uniform",
        "vs unif"
    )?;
    for row in rows {
        writeln!(
            out,
            "{:<28} {:>6} {:>6} {:>8.2} {:>8.2} {:>11} {:>9.4} {:>9.4} {:>7} {:>9.4} {:>9.4} {:>9.4} {:>8}  {}",
            row.policy,
            row.runs,
            row.files,
            row.effective_bits_per_key,
            row.average_bits_per_key,
            format!(
                "{}-{:.2}",
                row.in_use_during_load
                    .least
                    .map_or("-".to_string(), |least| format!("{least:.2}")),
                row.in_use_during_load.most
            ),
            row.policy_unnecessary_reads_per_lookup,
            row.optimal_unnecessary_reads_per_lookup,
            row.regret.map_or("-".to_string(), |r| format!("{r:.3}")),
            row.policy_predicted_per_lookup,
            row.optimal_predicted_per_lookup,
            row.uniform_unnecessary_reads_per_lookup,
            row.versus_uniform
                .map_or("-".to_string(), |r| format!("{r:.3}")),
            shape_summary(&row.shape)
        )?;
        writeln!(
            out,
            "{:<28} lookups/s: {:.0}, uniform filters on this tree {:.0} ({:.3} of uniform's)",
            "",
            row.policy_lookups_per_sec,
            row.uniform_lookups_per_sec,
            row.policy_lookups_per_sec / row.uniform_lookups_per_sec.max(1e-9)
        )?;
        if let Some(reads) = row.cache_weighted_unnecessary_reads_per_lookup {
            writeln!(
                out,
                "{:<28} cache-weighted optimum: {reads:.4} ({} of uniform's on this tree)",
                "",
                if row.uniform_unnecessary_reads_per_lookup > 0.0 {
                    format!("{:.3}", reads / row.uniform_unnecessary_reads_per_lookup)
                } else {
                    "-".to_string()
                }
            )?;
        }
        if row.warmup_rounds > 0 {
            writeln!(
                out,
                "{:<28} warm-up: {} rounds, {} filter rebuilds ({:.2} MiB read and written)",
                "",
                row.warmup_rounds,
                row.filter_rebuilds,
                row.filter_rebuild_bytes as f64 / (1 << 20) as f64
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_args;

    /// A 20,000-key tree of 64 KiB buffers and files, with `extra` flags.
    fn small(extra: &[&str]) -> RegretArgs {
        let mut args = vec![
            "regret",
            "--num",
            "20000",
            "--write-buffer-bytes",
            "64KiB",
            "--target-file-bytes",
            "64KiB",
        ];
        args.extend_from_slice(extra);
        parse_args(&args)
    }

    #[test]
    fn a_sampling_rate_out_of_range_is_refused() {
        #[derive(clap::Parser)]
        struct Alone {
            #[command(flatten)]
            args: RegretArgs,
        }
        for bad in ["0", "1000001", "x"] {
            let parsed =
                <Alone as clap::Parser>::try_parse_from(["regret", "--access-sample-every", bad]);
            let error = parsed.err().expect("refused");
            assert!(error.to_string().contains("access-sample-every"), "{error}");
        }
    }

    #[test]
    fn every_policy_is_measured_against_the_optimum_of_its_own_tree() {
        let args = small(&[
            "--lookups",
            "4000",
            "--filter-policies",
            "uniform,mnemosyne,elastic",
        ]);
        let mut out = Vec::new();
        run(&args, &mut out).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        for policy in ["uniform", "mnemosyne", "elastic"] {
            let line = text
                .lines()
                .find(|line| line.starts_with(policy))
                .unwrap_or_else(|| panic!("a row for {policy}:\n{text}"));
            let fields: Vec<&str> = line.split_whitespace().collect();
            let in_use: f64 = fields[3].parse().expect("in use");
            // The load's least and most bits in use (the tree had a last level long before
            // the end of a 20,000-key load into 64 KiB buffers).
            let (least, most) = fields[5].split_once('-').expect("least-most");
            let (least, most): (f64, f64) = (
                least.parse().expect("least in use"),
                most.parse().expect("most in use"),
            );
            assert!(
                0.0 < least && least <= most && most <= 2.0 * 1.2 + 1e-9,
                "{line}"
            );
            if policy == "uniform" || policy == "elastic" {
                assert!(most <= 2.0 + 1e-9, "a hard cap: {line}");
            }
            let policy_reads: f64 = fields[6].parse().expect("policy reads");
            let optimal_reads: f64 = fields[7].parse().expect("optimal reads");
            assert!(in_use > 0.0 && in_use <= 2.0 * 1.2 + 1e-9, "{line}");
            assert!(policy_reads > 0.0 && optimal_reads > 0.0, "{line}");
            // The optimum of the budget reads less than uniform filters on the same tree. (Not
            // checked for elastic filters here: with files this small every 1-bit module is
            // rounded up to whole 64-byte blocks, so their filters hold more bits than the
            // budget counts; docs/BENCHMARKS.md.)
            if policy == "uniform" {
                assert!(optimal_reads <= policy_reads * 1.05, "{line}");
                // Uniform filters rewritten on uniform's own tree read what its own did.
                let uniform_reads: f64 = fields[11].parse().expect("uniform reads");
                assert!(
                    (uniform_reads - policy_reads).abs() <= 0.02 * policy_reads + 1e-9,
                    "{line}"
                );
            }
        }
        // The unsettled tree: frozen as the load leaves it.
        let unsettled = small(&[
            "--lookups",
            "2000",
            "--filter-policies",
            "uniform,elastic",
            "--no-settle",
            "--access-statistics",
            "--access-sample-every",
            "2",
            "--empty-fraction",
            "0.5",
            "--block-cache-bytes",
            "256KiB",
        ]);
        assert!(unsettled.no_settle && unsettled.access_statistics == Some(true));
        assert_eq!(unsettled.access_sample_every(), 2);
        assert_eq!(
            small(&[]).access_sample_every(),
            Options::default().access_sample_every
        );
        assert_eq!(unsettled.block_cache_bytes, 256 << 10);
        let mut out = Vec::new();
        run(&unsettled, &mut out).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("block cache warmed by one replay"), "{text}");
        assert!(text.contains("cache-weighted optimum:"), "{text}");
        // Each policy's lookup rate beside uniform filters' on its tree, both measured.
        let rates: Vec<(f64, f64)> = text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("lookups/s: "))
            .map(|rest| {
                let (policy, rest) = rest
                    .split_once(", uniform filters on this tree ")
                    .expect("rates");
                let uniform = rest.split_whitespace().next().expect("uniform rate");
                (
                    policy.parse().expect("policy rate"),
                    uniform.parse().expect("uniform rate"),
                )
            })
            .collect();
        assert_eq!(rates.len(), 2, "{text}");
        assert!(rates.iter().all(|&(p, u)| p > 0.0 && u > 0.0), "{text}");
        for policy in ["uniform", "elastic"] {
            assert!(text.lines().any(|line| line.starts_with(policy)), "{text}");
        }
        assert!(run(
            &parse_args::<RegretArgs>(&["regret", "--lookups", "0"]),
            &mut Vec::new()
        )
        .is_err());
    }

    /// `--filter-family ribbon` builds every filter of the study as a Ribbon filter and prices
    /// the optimum's bits with Ribbon's constant: uniform filters of 2 bits per key let through
    /// about 0.7x the absent keys per probe that Bloom filters do (measured per file probed, so
    /// the two trees' shapes do not matter; files of about 9,000 keys, where neither family's
    /// rounding adds bits), and the optimum still reads no more than uniform filters. Strata's
    /// automatic choice is refused.
    #[test]
    fn ribbon_filters_are_measured_against_a_ribbon_optimum() {
        let uniform_row = |family: &str| -> (f64, f64) {
            let dir = tempfile::tempdir().expect("tempdir");
            let json = dir.path().join("regret.json");
            let args: RegretArgs = parse_args(&[
                "regret",
                "--num",
                "40000",
                "--lookups",
                "8000",
                "--filter-policies",
                "uniform",
                "--filter-family",
                family,
                "--json",
                json.to_str().expect("utf8 path"),
            ]);
            run(&args, &mut Vec::new()).expect("runs");
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON"))
                    .expect("valid JSON");
            assert_eq!(report["filter_family"], family);
            let row = &report["rows"][0];
            let field = |name: &str| row[name].as_f64().expect(name);
            let probes = field("probes_per_lookup");
            assert!(probes > 0.0);
            (
                field("policy_unnecessary_reads_per_lookup") / probes,
                field("optimal_unnecessary_reads_per_lookup") / probes,
            )
        };
        let (bloom, _) = uniform_row("bloom");
        let (ribbon, ribbon_optimum) = uniform_row("ribbon");
        assert!(
            ribbon < 0.8 * bloom,
            "Ribbon {ribbon} against Bloom {bloom} false positives per probe"
        );
        assert!(ribbon_optimum <= ribbon * 1.05, "{ribbon_optimum} {ribbon}");
        assert_eq!(parse_one_family("ribbon"), Ok(FilterFamily::Ribbon));
        assert!(parse_one_family("auto")
            .expect_err("refused")
            .contains("one family"));
    }

    #[test]
    fn the_weights_behind_an_allocation_are_dumped_beside_the_exact_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("weights.csv");
        let args = small(&[
            "--lookups",
            "3000",
            "--filter-policies",
            "uniform,elastic",
            "--no-settle",
            "--access-statistics",
            "--dump-weights",
            path.to_str().expect("utf8 path"),
        ]);
        run(&args, &mut Vec::new()).expect("runs");
        let text = std::fs::read_to_string(&path).expect("the weights file");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(WEIGHTS_HEADER));
        let columns: Vec<&str> = WEIGHTS_HEADER.split(',').collect();
        let column = |name: &str| columns.iter().position(|c| *c == name).expect(name);
        let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
        assert!(rows.iter().all(|row| row.len() == columns.len()), "{text}");
        for policy in ["uniform", "elastic"] {
            let mine: Vec<&Vec<&str>> = rows.iter().filter(|row| row[0] == policy).collect();
            assert!(mine.len() > 1, "{policy}: {text}");
            let sum = |name: &str| -> f64 {
                mine.iter()
                    .map(|row| row[column(name)].parse::<f64>().expect(name))
                    .sum()
            };
            // Every lookup is traced: the exact shares cover all zero-result probes, and
            // Merlin (recording every lookup of one thread) estimated some of them.
            assert!(
                (sum("exact_z_share") - 1.0).abs() < 1e-3,
                "{policy}: {text}"
            );
            assert!(
                (sum("merlin_z_share") - 1.0).abs() < 1e-3,
                "{policy}: {text}"
            );
            assert!(sum("exact_z") > 0.0 && sum("counted_empty") > 0.0);
            // The measured replay's own reads: without a cache every one missed, and there is
            // no cache-weighted optimum.
            assert!(sum("replay_reads_policy") > 0.0, "{policy}: {text}");
            assert_eq!(sum("replay_reads_policy"), sum("replay_misses_policy"));
            assert!(sum("replay_reads_policy") <= sum("counted_empty") + sum("counted_found"));
            assert!(mine
                .iter()
                .all(|row| row[column("replay_misses_cache_weighted")].is_empty()));
            // The optimum spends the budget of 2 bits per key (up to rounding of the columns).
            let bits = mine
                .iter()
                .map(|row| {
                    row[column("optimal_bits")].parse::<f64>().expect("bits")
                        * row[column("entries")].parse::<f64>().expect("entries")
                })
                .sum::<f64>();
            let budget = 2.0 * sum("entries");
            assert!((bits - budget).abs() <= 1e-3 * budget, "{bits} of {budget}");
        }
    }

    #[test]
    fn filters_can_stay_in_the_block_cache_for_the_replays() {
        let cached = small(&[
            "--lookups",
            "2000",
            "--filter-policies",
            "elastic",
            "--no-settle",
            "--block-cache-bytes",
            "256KiB",
            "--cache-metadata",
        ]);
        assert!(cached.cache_metadata);
        let mut out = Vec::new();
        run(&cached, &mut out).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.contains("index and filters in the block cache"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|line| line.starts_with("elastic"))
            .unwrap_or_else(|| panic!("a row for elastic:\n{text}"));
        let reads: f64 = row
            .split_whitespace()
            .nth(6)
            .expect("field")
            .parse()
            .expect("reads");
        assert!(reads > 0.0, "{row}");
        // Without a cache there is nothing to keep them in: refused, with the flag named.
        let refused = run(
            &small(&["--cache-metadata", "--filter-policies", "elastic"]),
            &mut Vec::new(),
        );
        let message = refused.expect_err("refused").to_string();
        assert!(message.contains("--cache-metadata"), "{message}");
    }

    #[test]
    fn a_rebuild_rate_warms_the_filters_up_before_the_measured_replay() {
        // Skewed lookups of absent keys on a frozen tree whose elastic filters learn them from
        // access statistics: the warm-up rebuilds the files the lookups favour, until a round
        // brings no rebuild. One module on disk per file (half the budget) leaves every file
        // saturated, so the files the lookups favour are worth a rebuild whatever shape the
        // unsettled tree took; with three, a tree whose favoured files still had a module to
        // spare priced no rebuild (1 run in 15 at 742274f, 4 in 34 at d01be3f).
        let args = small(&[
            "--lookups",
            "4000",
            "--filter-policies",
            "elastic",
            "--elastic-disk-modules",
            "1",
            "--access-statistics",
            "--distribution",
            "zipfian",
            "--rebuild-rate",
            "64MiB",
        ]);
        assert_eq!(args.rebuild_rate, 64 << 20);
        let mut out = Vec::new();
        run(&args, &mut out).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        let warm_up = text
            .lines()
            .find(|line| line.trim_start().starts_with("warm-up:"))
            .unwrap_or_else(|| panic!("a warm-up line:\n{text}"));
        let fields: Vec<&str> = warm_up.split_whitespace().collect();
        let rounds: u32 = fields[1].parse().expect("rounds");
        let rebuilds: u64 = fields[3].parse().expect("rebuilds");
        assert!((2..=MAX_WARMUP_ROUNDS).contains(&rounds), "{text}");
        assert!(rebuilds > 0, "{text}");
    }
}
