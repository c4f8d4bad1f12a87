//! `strata tune`: the design Monkey's holistic tuner recommends for a data size, a workload, a
//! device and a memory budget (`strata::model::tuner`, DESIGN.md §7), over every registered merge
//! policy, with the runners-up and their predicted costs.
//!
//! The data size, entry size, memory and workload mix can come from an existing database instead
//! (`strata tune DB` or `--from-db DB`, `tune_inputs.rs`): the mix of its live window of recent
//! queries (`Db::recent_workload`) once that holds enough of them, else its lifetime totals
//! (`Db::workload`), EcoTune's long scans (`r`, `K`) included. The device can come from a short
//! probe (`--measure-device`), and the recommendation can be written as an options file
//! (`--options-out`, `strata::options_file`) that `strata bench --options` and
//! `Options::from_file` take.
//!
//! Designs the model cannot tell apart within the spread of its measured costs are ties
//! (`strata::model::ties`, DESIGN.md §7.5): the probe's spread, or `--spread`, decides which; the
//! tie goes to the design with the fewest merge I/Os per update, listed first.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use strata::model::ties::{break_ties, CostSpread, TieBreak};
use strata::model::tuner::{
    buildable_size_ratio, tune_with_replays, CpuCosts, Design, Device, LongScans, TuningProblem,
    Workload, REPLAYED_CANDIDATES,
};
use strata::model::writes::{WritePricing, COUNTED_TREES, WARM_UP_TREES};
use strata::model::ModelPolicy;

use strata::options_file::{CompactionSection, FilterSection, OptionsFile};
use strata::policy::FilterAllocatorKind;

use crate::error::{CliError, CliResult};
use crate::tune_inputs::{
    measure_database, measure_device, measure_processor, MeasuredDatabase, DEFAULT_PROBE,
    DEFAULT_PROCESSOR_PROBE,
};

/// Arguments of `strata tune`.
#[derive(Debug, Clone, clap::Args)]
pub struct TuneArgs {
    /// Tune for this existing database (the same as `--from-db DB`).
    #[arg(value_name = "DB", conflicts_with = "from_db")]
    pub db: Option<PathBuf>,
    /// Entries in the database (with `--from-db`: the database's, unless given).
    #[arg(long)]
    pub entries: Option<f64>,
    /// Bytes per entry, key + value (with `--from-db`: as stored, unless given).
    #[arg(long)]
    pub entry_size: Option<f64>,
    /// Bytes of an average user key: EcoTune's top-level index holds every key of its top level
    /// (with `--from-db`: the database's files' boundary keys, unless given; else 16, at most
    /// the entry size).
    #[arg(long)]
    pub key_size: Option<f64>,
    /// Memory for the write buffer and the filters together, in bits per entry (with
    /// `--from-db`: the filters' current bits per key plus `--buffer-bytes`, unless given).
    #[arg(long)]
    pub memory_bits_per_key: Option<f64>,
    /// Fix the write buffer at this many bytes (the rest goes to the filters) instead of letting
    /// the tuner split the memory.
    #[arg(long)]
    pub buffer_bytes: Option<f64>,
    /// The workload: `lookups=P,empty=F,updates=U,ranges=Q,selectivity=S` (proportions of point
    /// lookups, updates and range lookups; `empty` the fraction of point lookups that find
    /// nothing; `selectivity` the fraction of entries a range returns). Missing parts are 0,
    /// `empty` 0.5. EcoTune's long scans may be given as `long-scans=R` (their share of point
    /// and range lookups) and `scan-length=K` (entries each, default 100); without them every
    /// range lookup is a long scan when it returns at least 16 entries. Default
    /// `lookups=0.5,empty=0.5,updates=0.5`, or for a database the mix it has served.
    #[arg(long)]
    pub workload: Option<String>,
    /// The device: `read-us=R,write-us=W,page-bytes=P` (microseconds per page read and write),
    /// `merge-read-us` (per page a merge reads in order; default `read-us`, as Monkey charges
    /// it), and the processor's share of each operation, in microseconds: `cpu-lookup-us` per
    /// lookup, `cpu-run-us` per run a lookup probes, `cpu-update-us` per update, `cpu-merge-us`
    /// per entry a merge rewrites (Strata's addition to Monkey's I/O-only model; 0 when not
    /// given), `cpu-seek-run-us` per run a range lookup seeks (the iterator's whole time over
    /// the runs it positions in; 0, the default, prices a range lookup as a lookup and a run
    /// probed per run), `cpu-block-us` per data block a point lookup searches beyond its run's
    /// probe (0 when not given), `merge-threads` (threads merges run on beside the operations,
    /// their pages sharing the device with the lookups' reads; 0, the default here, charges
    /// merges to the operations as Monkey does; `--measure-device` prices them beside the
    /// operations on the compaction threads the foreground leaves a processor), `merge-share` (the
    /// share of the merges' processor time the operations' thread pays beside them, 0 to 1; 0 when
    /// not given; `--measure-device` sets one over the processors where the compaction and flush
    /// threads and the foreground outnumber them) and `flush-us` (a
    /// flush's fixed cost: creating, syncing and installing its file; 0 when not given). Default `read-us=100,write-us=100,page-bytes=4096` with no processor costs, or
    /// what `--measure-device` measures.
    #[arg(long)]
    pub device: Option<String>,
    /// Tune for an existing database: its entries, entry size and filter memory from its tree,
    /// the workload mix from its live window of recent queries (`Db::recent_workload`) once it
    /// holds 1,000 queries, else from its lifetime totals (`Db::workload`). Flags given
    /// explicitly win.
    #[arg(long, value_name = "DB")]
    pub from_db: Option<PathBuf>,
    /// With a database, take the mix from its lifetime totals even when its window of recent
    /// queries is full enough.
    #[arg(long)]
    pub lifetime_mix: bool,
    /// Measure the device in this directory (a 64 MiB file written and synced, then 2,000 random
    /// reads of two pages, a data block's span, with direct I/O; the file is removed) and the processor's costs on the engine
    /// itself (a scratch database of 16 runs: timed updates, empty and present lookups on one
    /// run, empty lookups and seeks on 16, a full compaction; removed) instead of assuming
    /// `--device`'s default.
    #[arg(long, value_name = "DIR")]
    pub measure_device: Option<PathBuf>,
    /// Write the recommended design as an options file (TOML) for `strata bench --options` and
    /// `Options::from_file`.
    #[arg(long, value_name = "FILE")]
    pub options_out: Option<PathBuf>,
    /// Write every design the table shows (`--show` of them, best first) as an options file in
    /// this directory: `1.toml` is the recommendation, `2.toml` the first runner-up, and so on
    /// (to run the runners-up beside the recommendation).
    #[arg(long, value_name = "DIR")]
    pub candidates_out: Option<PathBuf>,
    /// Discard designs whose point lookups cost more I/Os than this.
    #[arg(long)]
    pub max_lookup_io: Option<f64>,
    /// Discard designs whose updates cost more I/Os than this.
    #[arg(long)]
    pub max_update_io: Option<f64>,
    /// Runs of one write buffer waiting on level 0 on average, which every lookup probes too.
    /// Default `(level0_compaction_trigger - 1) / 2` of Strata's default options (1.5); 0 gives
    /// Monkey's tree, where flushes merge straight into level 1.
    #[arg(long, value_name = "RUNS")]
    pub level0_runs: Option<f64>,
    /// How far each measured cost may be from a repeated measurement, as factors of at least 1:
    /// `device=K,processor=K,flush=K` (missing parts 1). A runner-up at least as fast as the
    /// best once one cost group moves within its factor is tied with it, and the tie goes to
    /// the design with the fewest merge I/Os per update (`strata::model::ties`). Default: what
    /// `--measure-device` measured (its timed rounds' second slowest over second fastest), else no spread.
    #[arg(long)]
    pub spread: Option<String>,
    /// Runners-up to print (text output).
    #[arg(long, default_value_t = 5)]
    pub show: usize,
    /// Candidates whose merges per update are priced by replaying their merge policy
    /// (`strata::model::tuner::tune_with_replays`, DESIGN.md §7.5): the best this many, again
    /// until the best this many are replayed; 0 ranks every design by the closed form.
    #[arg(long, default_value_t = REPLAYED_CANDIDATES)]
    pub replayed_candidates: usize,
    /// Print `{"recommended": D, "candidates": [D, ...]}` as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Take one auto-tune decision on this database and apply it (`Db::auto_tune_now`): the
    /// design in force against the tuner's best for the mix served since the last decision,
    /// switched when the gain pays for the rewrite; recorded in the database. Every other flag
    /// but `--apply-options` and `--json` is ignored.
    #[arg(long, value_name = "DB")]
    pub apply: Option<PathBuf>,
    /// The options file to open `--apply`'s database with (its merge policy, filters and
    /// `[auto_tune]` settings); default options when not given. Give the options the database
    /// runs with: a database opened with another merge policy or filter allocator than the one
    /// a recorded run-time switch was made from runs the options' and clears that record, as
    /// any open does (docs/DESIGN.md §10).
    #[arg(long, value_name = "FILE", requires = "apply")]
    pub apply_options: Option<PathBuf>,
}

/// Parses `name=value,name=value` into the given names' values; unknown or malformed parts are
/// errors naming the flag.
fn parse_pairs(flag: &str, text: &str, names: &[&str]) -> CliResult<Vec<Option<f64>>> {
    let mut values = vec![None; names.len()];
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(|| {
            CliError::InvalidArgument(format!("--{flag}: `{part}` is not name=value"))
        })?;
        let index = names
            .iter()
            .position(|n| *n == name.trim())
            .ok_or_else(|| {
                CliError::InvalidArgument(format!(
                    "--{flag}: unknown `{name}` (expected one of {})",
                    names.join(", ")
                ))
            })?;
        let value: f64 = value.trim().parse().map_err(|_| {
            CliError::InvalidArgument(format!("--{flag}: `{value}` is not a number"))
        })?;
        values[index] = Some(value);
    }
    Ok(values)
}

/// A design as `--json` prints it (stable field names, read by scripts).
#[derive(Debug, Serialize)]
struct DesignJson {
    policy: &'static str,
    /// Garnering's `c` (absent for the other policies).
    #[serde(skip_serializing_if = "Option::is_none")]
    garnering_c: Option<f64>,
    size_ratio: f64,
    levels: usize,
    buffer_bytes: f64,
    filter_bits_per_key: f64,
    filter_allocation: &'static str,
    model: &'static str,
    predicted: PredictedJson,
    writes: WritesJson,
}

/// Where a design's merges per update came from (`strata::model::writes::WritePricing`).
#[derive(Debug, Serialize)]
struct WritesJson {
    /// `closed form`, `replay` or `closed form (replay refused)`.
    priced_by: &'static str,
    /// The replay's merges per update (absent unless the replay priced them).
    #[serde(skip_serializing_if = "Option::is_none")]
    merges_per_update: Option<f64>,
    /// The closed form's, which the replay replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_form_merges_per_update: Option<f64>,
}

impl WritesJson {
    fn of(pricing: &WritePricing) -> Self {
        let closed_form = match pricing {
            WritePricing::Replay {
                closed_form_merges, ..
            } => Some(*closed_form_merges),
            _ => None,
        };
        WritesJson {
            priced_by: pricing.source(),
            merges_per_update: pricing.replayed_merges(),
            closed_form_merges_per_update: closed_form,
        }
    }

    /// The table's column: `9.38 replay (closed 7.50)`, or the source alone.
    fn column(&self) -> String {
        match (self.merges_per_update, self.closed_form_merges_per_update) {
            (Some(replayed), Some(closed)) => format!("{replayed:.2} replay (closed {closed:.2})"),
            _ => self.priced_by.to_string(),
        }
    }
}

#[derive(Debug, Serialize)]
struct PredictedJson {
    zero_result_lookup_io: f64,
    existing_lookup_io: f64,
    point_lookup_io: f64,
    update_io: f64,
    range_io: f64,
    io_per_operation: f64,
    cpu_us_per_operation: f64,
    throughput_ops: f64,
}

/// `garnering(c=0.8)` for Garnering, the registry name otherwise.
pub(crate) fn policy_label(policy: ModelPolicy) -> String {
    match policy.garnering_c() {
        Some(scaling_factor) => format!("garnering(c={scaling_factor})"),
        None => policy.name().to_string(),
    }
}

fn to_json(design: &Design, entries: f64) -> DesignJson {
    let p = design.predicted;
    DesignJson {
        policy: design.policy.name(),
        garnering_c: design.policy.garnering_c(),
        size_ratio: design.size_ratio,
        levels: design.levels,
        buffer_bytes: design.buffer_bits / 8.0,
        filter_bits_per_key: design.filter_bits / entries,
        filter_allocation: design.filters.name(),
        model: design.policy.model(),
        predicted: PredictedJson {
            zero_result_lookup_io: p.zero_result_lookup_io,
            existing_lookup_io: p.existing_lookup_io,
            point_lookup_io: p.point_lookup_io,
            update_io: p.update_io,
            range_io: p.range_io,
            io_per_operation: p.io_per_operation,
            cpu_us_per_operation: p.cpu_seconds_per_operation * 1e6,
            throughput_ops: p.throughput_ops,
        },
        writes: WritesJson::of(&design.writes),
    }
}

/// Where each input of the tuning problem came from, for the report.
struct Inputs {
    problem: TuningProblem,
    lines: Vec<String>,
    spread: CostSpread,
}

/// `--spread`'s `device=K,processor=K,flush=K`.
fn parse_spread(text: &str) -> CliResult<CostSpread> {
    let values = parse_pairs("spread", text, &["device", "processor", "flush"])?;
    Ok(CostSpread {
        device: values[0].unwrap_or(1.0),
        processor: values[1].unwrap_or(1.0),
        flush: values[2].unwrap_or(1.0),
    })
}

/// The tuning problem `args` describe (measuring what they ask to be measured).
fn problem(args: &TuneArgs) -> CliResult<Inputs> {
    let mut lines = Vec::new();
    let measured: Option<MeasuredDatabase> = match args.db.as_ref().or(args.from_db.as_ref()) {
        Some(path) => {
            let measured = measure_database(path)?;
            let describe = |totals: &strata::WorkloadTotals| {
                format!(
                    "{} point lookups ({} found), {} range lookups returning {} entries ({} long scans of {} entries), {} writes",
                    totals.point_lookups,
                    totals.point_lookups_found,
                    totals.seeks,
                    totals.scan_entries,
                    totals.long_scans,
                    totals.long_scan_entries,
                    totals.writes
                )
            };
            lines.push(format!(
                "from {}: {} entries of {:.1} bytes as stored, filters {:.2} bits/key; served {} over its life, {} in its window of recent queries",
                path.display(),
                measured.entries,
                measured.entry_bytes,
                measured.filter_bits_per_key,
                describe(&measured.totals),
                describe(&measured.recent.counts)
            ));
            Some(measured)
        }
        None => None,
    };
    let required = |value: Option<f64>, from_db: Option<f64>, flag: &str| {
        value.or(from_db).ok_or_else(|| {
            CliError::InvalidArgument(format!("--{flag} is required (or give --from-db)"))
        })
    };
    let entries = required(
        args.entries,
        measured.as_ref().map(|m| m.entries as f64),
        "entries",
    )?;
    let entry_size = required(
        args.entry_size,
        measured.as_ref().map(|m| m.entry_bytes),
        "entry-size",
    )?;
    let memory_bits_per_key = required(
        args.memory_bits_per_key,
        measured
            .as_ref()
            .map(|m| {
                m.filter_bits_per_key + args.buffer_bytes.unwrap_or(0.0) * 8.0 / m.entries as f64
            })
            // A database whose entries are all still in its memtable has no filters to measure.
            .filter(|&bits| bits > 0.0),
        "memory-bits-per-key",
    )?;
    if args.memory_bits_per_key.is_none() {
        lines.push(format!(
            "memory: the database's filters{} ({memory_bits_per_key:.2} bits per entry); give --memory-bits-per-key for another budget",
            if args.buffer_bytes.is_some() {
                " plus --buffer-bytes"
            } else {
                ""
            }
        ));
    }
    if !(entries.is_finite() && entries >= 1.0 && entry_size.is_finite() && entry_size > 0.0) {
        return Err(CliError::InvalidArgument(format!(
            "--entries must be at least 1 and --entry-size above 0, got {entries} and {entry_size}"
        )));
    }
    let key_size = args
        .key_size
        .or(measured.as_ref().and_then(|m| m.key_bytes));
    if let Some(bytes) = key_size {
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(CliError::InvalidArgument(format!(
                "--key-size must be finite and at least 0, got {bytes}"
            )));
        }
    }
    let from_database = measured.as_ref().and_then(|m| m.mix(args.lifetime_mix));
    let mut workload = match (&args.workload, from_database) {
        (Some(text), _) => parse_workload(text)?,
        (None, Some((mix, source))) => {
            let scans = mix.long_scans(entries);
            lines.push(format!(
                "workload from the database's {source}: lookups={:.4},empty={:.4},updates={:.4},ranges={:.4},selectivity={:.3e},long-scans={:.4},scan-length={:.0}",
                mix.point_lookups,
                mix.zero_result_fraction,
                mix.updates,
                mix.range_lookups,
                mix.selectivity,
                scans.share_of_queries,
                scans.entries
            ));
            mix
        }
        (None, None) => {
            if measured.is_some() {
                lines.push(
                    "the database has served no operation yet: the default workload is assumed"
                        .to_string(),
                );
            }
            parse_workload("lookups=0.5,empty=0.5,updates=0.5")?
        }
    };
    let mut spread = CostSpread::NONE;
    let device = match (&args.device, &args.measure_device) {
        (Some(text), _) => parse_device(text)?,
        (None, Some(dir)) => {
            let measured = measure_device(dir, DEFAULT_PROBE)?;
            lines.push(format!(
                "device measured in {}: {:.1} us per random data-block read (two 4 KiB pages, direct I/O), {:.2} us per page read in order (2 MiB direct reads), {:.2} us per page written and synced: read-us={:.1},merge-read-us={:.2},write-us={:.2}",
                dir.display(),
                measured.seconds_per_read * 1e6,
                measured.seconds_per_merge_read * 1e6,
                measured.seconds_per_write * 1e6,
                measured.seconds_per_read * 1e6,
                measured.seconds_per_merge_read * 1e6,
                measured.seconds_per_write * 1e6
            ));
            let processor = measure_processor(
                dir,
                entry_size,
                measured.seconds_per_write,
                DEFAULT_PROCESSOR_PROBE,
            )?;
            let cpu = processor.costs;
            spread = CostSpread {
                device: measured.read_spread,
                processor: processor.lookup_spread,
                flush: processor.flush_spread,
            };
            lines.push(format!(
                "measured costs' spread (second slowest timed round over second fastest): random reads x{:.2}, lookups x{:.2}, flushes x{:.2}: spread=device={:.3},processor={:.3},flush={:.3}",
                spread.device, spread.processor, spread.flush, spread.device, spread.processor, spread.flush
            ));
            lines.push(format!(
                "processor measured on the engine: {:.3} us per lookup, {:.3} us per run probed, {:.3} us per run sought, {:.3} us per block searched, {:.3} us per update, {:.3} us per entry merged, {:.0} us per flush, merges on {} thread(s) beside the operations, {:.3} of their processor time paid by the operations' thread: cpu-lookup-us={:.3},cpu-run-us={:.3},cpu-seek-run-us={:.3},cpu-block-us={:.3},cpu-update-us={:.3},cpu-merge-us={:.3},flush-us={:.0},merge-threads={},merge-share={:.3}",
                cpu.seconds_per_lookup * 1e6,
                cpu.seconds_per_run_probed * 1e6,
                cpu.seconds_per_run_sought * 1e6,
                cpu.seconds_per_block_searched * 1e6,
                cpu.seconds_per_update * 1e6,
                cpu.seconds_per_entry_merged * 1e6,
                cpu.seconds_per_flush * 1e6,
                cpu.merge_threads,
                cpu.foreground_share_of_merges,
                cpu.seconds_per_lookup * 1e6,
                cpu.seconds_per_run_probed * 1e6,
                cpu.seconds_per_run_sought * 1e6,
                cpu.seconds_per_block_searched * 1e6,
                cpu.seconds_per_update * 1e6,
                cpu.seconds_per_entry_merged * 1e6,
                cpu.seconds_per_flush * 1e6,
                cpu.merge_threads,
                cpu.foreground_share_of_merges
            ));
            Device {
                cpu,
                ..measured.device
            }
        }
        (None, None) => parse_device("read-us=100,write-us=100,page-bytes=4096")?,
    };
    if let Some(text) = &args.spread {
        spread = parse_spread(text)?;
    }
    let level0_runs = args.level0_runs.unwrap_or_else(default_level0_runs);
    workload.key_bytes = key_size;
    lines.insert(
        0,
        format!(
            "{entries} entries of {entry_size} bytes ({} byte keys), {memory_bits_per_key} bits per entry of memory; workload lookups={},empty={},updates={},ranges={},selectivity={}; device {:.1} us per read, write/read cost {:.3}, merge-read/read cost {:.3}, {} byte pages; processor {:.3} us per lookup, {:.3} per run probed, {:.3} per run sought, {:.3} per block searched, {:.3} per update, {:.3} per entry merged; {} level-0 runs",
            key_size.map_or_else(
                || format!("{}", strata::model::tuner::DEFAULT_KEY_BYTES.min(entry_size)),
                |bytes| format!("{bytes:.1}")
            ),
            workload.point_lookups,
            workload.zero_result_fraction,
            workload.updates,
            workload.range_lookups,
            workload.selectivity,
            device.seconds_per_read * 1e6,
            device.write_read_cost_ratio,
            device.merge_read_cost_ratio,
            device.page_bytes,
            device.cpu.seconds_per_lookup * 1e6,
            device.cpu.seconds_per_run_probed * 1e6,
            device.cpu.seconds_per_run_sought * 1e6,
            device.cpu.seconds_per_block_searched * 1e6,
            device.cpu.seconds_per_update * 1e6,
            device.cpu.seconds_per_entry_merged * 1e6,
            level0_runs
        ),
    );
    Ok(Inputs {
        problem: TuningProblem {
            entries,
            entry_bytes: entry_size,
            memory_bits: memory_bits_per_key * entries,
            workload,
            device,
            fixed_buffer_bits: args.buffer_bytes.map(|bytes| bytes * 8.0),
            max_point_lookup_io: args.max_lookup_io,
            max_update_io: args.max_update_io,
            level0_runs,
            block_cache_bytes: 0.0,
            point_read_miss_share: 1.0,
        },
        lines,
        spread,
    })
}

/// Level 0's average waiting runs under Strata's default options: a flush adds one, and at
/// `level0_compaction_trigger` they merge into level 1, so `(trigger - 1) / 2` wait on average.
fn default_level0_runs() -> f64 {
    (strata::Options::default().level0_compaction_trigger.max(1) - 1) as f64 / 2.0
}

pub(crate) fn parse_workload(text: &str) -> CliResult<Workload> {
    let workload = parse_pairs(
        "workload",
        text,
        &[
            "lookups",
            "empty",
            "updates",
            "ranges",
            "selectivity",
            "long-scans",
            "scan-length",
        ],
    )?;
    let long_scans = match (workload[5], workload[6]) {
        (None, None) => None,
        (share, length) => Some(LongScans {
            share_of_queries: share.unwrap_or(0.0),
            entries: length.unwrap_or(f64::from(strata::compaction::ecotune::DEFAULT_SCAN_LENGTH)),
        }),
    };
    Ok(Workload {
        point_lookups: workload[0].unwrap_or(0.0),
        zero_result_fraction: workload[1].unwrap_or(0.5),
        updates: workload[2].unwrap_or(0.0),
        range_lookups: workload[3].unwrap_or(0.0),
        selectivity: workload[4].unwrap_or(0.0),
        long_scans,
        key_bytes: None,
    })
}

pub(crate) fn parse_device(text: &str) -> CliResult<Device> {
    let device = parse_pairs(
        "device",
        text,
        &[
            "read-us",
            "write-us",
            "page-bytes",
            "merge-read-us",
            "cpu-lookup-us",
            "cpu-run-us",
            "cpu-update-us",
            "cpu-merge-us",
            "merge-threads",
            "flush-us",
            "cpu-seek-run-us",
            "cpu-block-us",
            "merge-share",
        ],
    )?;
    let read_us = device[0].unwrap_or(100.0);
    let write_us = device[1].unwrap_or(read_us);
    if !(read_us.is_finite() && read_us > 0.0 && write_us.is_finite() && write_us >= 0.0) {
        return Err(CliError::InvalidArgument(format!(
            "--device: read-us must be > 0 and write-us >= 0, got {read_us} and {write_us}"
        )));
    }
    let merge_read_us = device[3].unwrap_or(read_us);
    if let Some(bad) = device[3..]
        .iter()
        .flatten()
        .find(|v| !(v.is_finite() && **v >= 0.0))
    {
        return Err(CliError::InvalidArgument(format!(
            "--device: merge-read-us, the processor costs (cpu-*-us), merge-threads and flush-us must be finite and >= 0, got {bad}"
        )));
    }
    let merge_share = device[12].unwrap_or(0.0);
    if merge_share > 1.0 {
        return Err(CliError::InvalidArgument(format!(
            "--device: merge-share is a share of the merges' processor time, from 0 to 1, got {merge_share}"
        )));
    }
    let cpu = CpuCosts {
        seconds_per_lookup: device[4].unwrap_or(0.0) * 1e-6,
        seconds_per_run_probed: device[5].unwrap_or(0.0) * 1e-6,
        seconds_per_run_sought: device[10].unwrap_or(0.0) * 1e-6,
        seconds_per_block_searched: device[11].unwrap_or(0.0) * 1e-6,
        seconds_per_update: device[6].unwrap_or(0.0) * 1e-6,
        seconds_per_entry_merged: device[7].unwrap_or(0.0) * 1e-6,
        merge_threads: device[8].unwrap_or(0.0),
        seconds_per_flush: device[9].unwrap_or(0.0) * 1e-6,
        foreground_share_of_merges: merge_share,
    };
    Ok(Device {
        seconds_per_read: read_us * 1e-6,
        write_read_cost_ratio: write_us / read_us,
        merge_read_cost_ratio: merge_read_us / read_us,
        page_bytes: device[2].unwrap_or(4096.0),
        cpu,
    })
}

/// A design as an options file: the merge policy and size ratio (the tuner costs tiering and
/// lazy leveling at a whole `T`, [`buildable_size_ratio`]; rounding again is a no-op), the
/// write buffer, and its filters at the design's bits per key (Monkey's with the tree it
/// predicts, or uniform).
fn options_file(design: &Design, problem: &TuningProblem) -> OptionsFile {
    let (policy, garnering_c) = (design.policy.kind(), design.policy.garnering_c());
    let allocator = design.filters;
    let monkey = allocator == FilterAllocatorKind::Monkey;
    let buffer_bytes = (design.buffer_bits / 8.0).max(1.0);
    OptionsFile {
        write_buffer_bytes: Some(buffer_bytes.round() as usize),
        compaction: Some(CompactionSection {
            policy,
            // EcoTune and Moose take no size ratio (the design's `T` is only where their
            // memory split was taken).
            size_ratio: design
                .policy
                .has_size_ratio()
                .then(|| buildable_size_ratio(design.policy, design.size_ratio)),
            garnering_c,
            long_scan_ratio: None,
            beta_q: None,
            ccap: None,
            scan_length: None,
        }),
        filters: Some(FilterSection {
            allocator,
            bits_per_key: design.filter_bits / problem.entries,
            // Monkey predicts its tree from the entries and the write buffer; uniform needs neither.
            expected_entries: monkey.then(|| problem.entries.round() as u64),
            buffer_entries: monkey
                .then(|| (buffer_bytes / problem.entry_bytes).round().max(1.0) as u64),
            budget_bytes: None,
            disk_modules: None,
            family: None,
        }),
        ..OptionsFile::default()
    }
}

fn write_error(error: std::io::Error) -> CliError {
    CliError::io("writing the tuning", error)
}

/// Runs `strata tune`.
/// A small database's filters alone may not hold one page of write buffer, which the tuner
/// cannot split: with the memory taken from the database, say which flag gives it enough.
fn refuse_memory_below_one_page(args: &TuneArgs, problem: &TuningProblem) -> CliResult<()> {
    let page_bits = crate::tune_inputs::PAGE_BYTES as f64 * 8.0;
    if args.memory_bits_per_key.is_none()
        && args.buffer_bytes.is_none()
        && problem.memory_bits <= page_bits
    {
        return Err(CliError::InvalidArgument(format!(
            "the database's filters ({:.0} bits for {} entries) do not hold one {} byte page of \
             write buffer; give --buffer-bytes (the write buffer it runs with) or \
             --memory-bits-per-key",
            problem.memory_bits,
            problem.entries,
            crate::tune_inputs::PAGE_BYTES
        )));
    }
    Ok(())
}

pub fn run(args: &TuneArgs, out: &mut dyn Write) -> CliResult<()> {
    if let Some(db) = &args.apply {
        return crate::tune_apply::apply(db, args.apply_options.as_deref(), args.json, out);
    }
    let inputs = problem(args)?;
    refuse_memory_below_one_page(args, &inputs.problem)?;
    let problem = inputs.problem;
    let tuning = tune_with_replays(&problem, args.replayed_candidates)?;
    let ties = break_ties(&problem, &tuning, &inputs.spread)?;
    let tuning = &ties.tuning;
    if let Some(path) = &args.options_out {
        options_file(&tuning.recommended, &problem).write(path)?;
    }
    if let Some(dir) = &args.candidates_out {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
        for (rank, design) in tuning.candidates.iter().take(args.show.max(1)).enumerate() {
            options_file(design, &problem).write(&dir.join(format!("{}.toml", rank + 1)))?;
        }
    }
    if args.json {
        #[derive(Serialize)]
        struct Output {
            recommended: DesignJson,
            candidates: Vec<DesignJson>,
        }
        let output = Output {
            recommended: to_json(&tuning.recommended, problem.entries),
            candidates: tuning
                .candidates
                .iter()
                .map(|d| to_json(d, problem.entries))
                .collect(),
        };
        let text = serde_json::to_string_pretty(&output).map_err(|e| {
            CliError::InvalidArgument(format!("cannot encode the tuning as JSON: {e}"))
        })?;
        writeln!(out, "{text}").map_err(write_error)?;
        return Ok(());
    }
    for line in &inputs.lines {
        writeln!(out, "{line}").map_err(write_error)?;
    }
    if let Some(path) = &args.options_out {
        writeln!(
            out,
            "recommended design written to {} (strata bench --options, Options::from_file)",
            path.display()
        )
        .map_err(write_error)?;
    }
    writeln!(
        out,
        "filters: Monkey's allocation (recommended) or uniform (for comparison); every design costed on its own runs (DESIGN.md §7): Monkey's model for leveling (with or without dynamic level bytes) and tiering, Strata's per-run model (`strata::model::per_run`) for lazy leveling and Garnering, its EcoTune and Moose models (`strata::model::ecotune`, `moose`; they take no size ratio: T is where their memory split was taken)"
    )
    .map_err(write_error)?;
    let updates = problem.workload.updates > 0.0;
    writeln!(
        out,
        "writes: {} (DESIGN.md §7.5)",
        if updates && args.replayed_candidates > 0 {
            format!(
                "the best {} designs' merges per update priced by their replays \
                 (each design's merge policy on the simulator, {WARM_UP_TREES} x N updates to \
                 warm up, then {COUNTED_TREES} x N counted), the others' by the closed form",
                args.replayed_candidates
            )
        } else if updates {
            "every design's merges per update by the closed form (--replayed-candidates 0)".into()
        } else {
            "no updates: every design's by the closed form, which no cost here depends on".into()
        }
    )
    .map_err(write_error)?;
    writeln!(out, "{}", describe_ties(&ties, &inputs.spread, updates)).map_err(write_error)?;
    writeln!(
        out,
        "{:<4} {:<18} {:<8} {:>8} {:>6} {:>12} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>28} {:>12}",
        "rank",
        "policy",
        "filters",
        "T",
        "levels",
        "buffer MiB",
        "filt b/k",
        "R io",
        "V io",
        "W io",
        "Q io",
        "cpu us",
        "merges/update, priced by",
        "ops/s"
    )
    .map_err(write_error)?;
    for (rank, design) in tuning.candidates.iter().take(args.show.max(1)).enumerate() {
        let p = design.predicted;
        writeln!(
            out,
            "{:<4} {:<18} {:<8} {:>8.2} {:>6} {:>12.2} {:>9.2} {:>8.4} {:>8.4} {:>8.4} {:>8.2} {:>8.3} {:>28} {:>12.0}",
            rank + 1,
            policy_label(design.policy),
            design.filters.name(),
            design.size_ratio,
            design.levels,
            design.buffer_bits / 8.0 / 1048576.0,
            design.filter_bits / problem.entries,
            p.zero_result_lookup_io,
            p.existing_lookup_io,
            p.update_io,
            p.range_io,
            p.cpu_seconds_per_operation * 1e6,
            WritesJson::of(&design.writes).column(),
            p.throughput_ops
        )
        .map_err(write_error)?;
    }
    Ok(())
}

/// The line saying which designs tie and which the tie went to (`updates`: the workload has
/// some; without, the model's best is kept).
fn describe_ties(ties: &TieBreak, spread: &CostSpread, updates: bool) -> String {
    let within = format!(
        "within the measured costs' spread (device x{:.2}, processor x{:.2}, flush x{:.2})",
        spread.device, spread.processor, spread.flush
    );
    if ties.tied.len() < 2 {
        return format!("ties: none {within}; the model's best is recommended");
    }
    let tied: Vec<String> = ties
        .tied
        .iter()
        .map(|d| {
            format!(
                "{} T={:.2} ({:.0} ops/s, W {:.4})",
                policy_label(d.policy),
                d.size_ratio,
                d.predicted.throughput_ops,
                d.predicted.update_io
            )
        })
        .collect();
    let rule = if updates {
        "the fewest merge I/Os per update"
    } else {
        "the model's best (no updates to merge)"
    };
    format!(
        "ties: {} designs {within}: {}; recommended: {rule}, the model's rank {} (ranks below: the rest in the model's order)",
        ties.tied.len(),
        tied.join(", "),
        ties.model_rank
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::policy::CompactionKind;

    fn args(extra: &[&str]) -> TuneArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: TuneArgs,
        }
        let mut argv = vec![
            "tune",
            "--entries",
            "100000000",
            "--entry-size",
            "128",
            "--memory-bits-per-key",
            "10",
        ];
        argv.extend_from_slice(extra);
        Wrapper::try_parse_from(argv).expect("valid arguments").args
    }

    /// [`args`] at a million entries: the replays of the best candidates build a tree at every
    /// flush and merge, a few files at a million entries, hundreds at a hundred million, where a
    /// tune took a quarter of a minute in a test build.
    fn args_at_a_million(extra: &[&str]) -> TuneArgs {
        TuneArgs {
            entries: Some(1e6),
            ..args(extra)
        }
    }

    /// Without a database or `--key-size` the tuner assumes 16-byte keys; a longer key makes
    /// EcoTune's top-level index, and so its design, cost more memory.
    #[test]
    fn the_key_size_prices_ecotunes_top_level_index() {
        let default = problem(&args(&[])).expect("problem").problem;
        assert_eq!(default.workload.key_bytes, None);
        assert_eq!(default.key_bytes(), strata::model::tuner::DEFAULT_KEY_BYTES);
        let long = problem(&args(&["--key-size", "100"]))
            .expect("problem")
            .problem;
        assert_eq!(long.key_bytes(), 100.0);
        let buffer = 64.0 * 8.0 * 1048576.0;
        let index = |p: &TuningProblem| {
            strata::model::tuner::top_index_bits(p, ModelPolicy::ECOTUNE, buffer)
        };
        assert!(index(&long) > index(&default) * 2.0);
        let lines = problem(&args(&["--key-size", "100"]))
            .expect("problem")
            .lines;
        assert!(lines[0].contains("(100.0 byte keys)"), "{}", lines[0]);
    }

    #[test]
    fn json_output_has_the_issues_fields_and_the_recommendation_first() {
        let mut out = Vec::new();
        run(
            &args(&["--workload", "lookups=0.9,empty=0.5,updates=0.1", "--json"]),
            &mut out,
        )
        .expect("tune");
        let value: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
        let recommended = &value["recommended"];
        for field in [
            "policy",
            "size_ratio",
            "levels",
            "buffer_bytes",
            "filter_bits_per_key",
            "filter_allocation",
            "model",
        ] {
            assert!(!recommended[field].is_null(), "missing {field}");
        }
        for field in [
            "zero_result_lookup_io",
            "existing_lookup_io",
            "update_io",
            "range_io",
            "throughput_ops",
        ] {
            assert!(
                recommended["predicted"][field].is_number(),
                "missing predicted.{field}"
            );
        }
        assert_eq!(&value["candidates"][0], recommended);
        // The best designs' writes are priced by their replays, and say so.
        assert_eq!(recommended["writes"]["priced_by"], "replay");
        let replayed = recommended["writes"]["merges_per_update"].as_f64();
        let closed = recommended["writes"]["closed_form_merges_per_update"].as_f64();
        assert!(replayed.expect("replayed") > 0.0 && closed.expect("closed form") > 0.0);
        let by_closed_form = value["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .filter(|c| c["writes"]["priced_by"] == "closed form")
            .count();
        assert!(by_closed_form > 0, "the rest keep the closed form");
        // The table says which source priced each design's writes.
        let mut text = Vec::new();
        run(
            &args(&[
                "--workload",
                "lookups=0.9,empty=0.5,updates=0.1",
                "--show",
                "3",
            ]),
            &mut text,
        )
        .expect("tune");
        let text = String::from_utf8(text).expect("UTF-8");
        assert!(text.contains("merges/update, priced by"), "{text}");
        assert!(text.contains(" replay (closed "), "{text}");
        assert!(text.contains("writes: the best 5 designs"), "{text}");
        // Without replays every design keeps the closed form.
        let mut closed = Vec::new();
        run(
            &args(&[
                "--workload",
                "lookups=0.9,empty=0.5,updates=0.1",
                "--replayed-candidates",
                "0",
                "--json",
            ]),
            &mut closed,
        )
        .expect("tune");
        let closed: serde_json::Value = serde_json::from_slice(&closed).expect("JSON");
        let closed = closed["candidates"].as_array().expect("candidates");
        assert!(closed
            .iter()
            .all(|c| c["writes"]["priced_by"] == "closed form"));
        // The balanced default mix: lazy leveling (Strata's per-run model) is predicted best.
        assert_eq!(recommended["policy"], "lazy-leveling");
        assert_eq!(recommended["model"], "strata per-run model (DESIGN.md §7)");
        let candidates = value["candidates"].as_array().expect("candidates");
        let leveling = candidates
            .iter()
            .find(|c| c["policy"] == "leveling")
            .expect("leveling is a candidate");
        assert_eq!(
            leveling["model"],
            "monkey, exact on the design's runs (DESIGN.md §7)"
        );
        assert!(leveling.get("garnering_c").is_none());
        let garnering: Vec<f64> = candidates
            .iter()
            .filter(|c| c["policy"] == "garnering")
            .filter_map(|c| c["garnering_c"].as_f64())
            .collect();
        for c in [0.4, 0.6, 0.8, 1.0] {
            assert!(garnering.contains(&c), "Garnering at c = {c}");
        }
    }

    /// Processor costs given with `--device` reach the prediction: each design's processor
    /// microseconds per operation are in the JSON and lower its throughput; without them the
    /// figure is 0 and the prediction is Monkey's.
    #[test]
    fn processor_costs_on_the_device_reach_the_prediction() {
        let tuned = |device: &str| {
            let mut out = Vec::new();
            let workload = "lookups=0.9,empty=1,updates=0.1";
            run(
                &args_at_a_million(&["--workload", workload, "--device", device, "--json"]),
                &mut out,
            )
            .expect("tune");
            serde_json::from_slice::<serde_json::Value>(&out).expect("JSON")
        };
        let io_only = tuned("read-us=100");
        let with_cpu =
            tuned("read-us=100,cpu-lookup-us=1,cpu-run-us=0.5,cpu-update-us=2,cpu-merge-us=0.1");
        let io = &io_only["recommended"]["predicted"];
        assert_eq!(io["cpu_us_per_operation"], 0.0);
        let cpu = &with_cpu["recommended"]["predicted"];
        // At least the lookups' fixed microsecond and one probed run each.
        let per_op = cpu["cpu_us_per_operation"].as_f64().expect("number");
        assert!(per_op >= 0.9 * 1.5 + 0.1 * 2.0, "{cpu}");
        let throughput = |v: &serde_json::Value| v["throughput_ops"].as_f64().expect("number");
        assert!(throughput(cpu) < throughput(io), "{cpu} vs {io}");
        let seconds = cpu["io_per_operation"].as_f64().expect("number") * 100e-6 + per_op * 1e-6;
        assert!((throughput(cpu) - 1.0 / seconds).abs() <= 1e-6 * throughput(cpu));
    }

    /// A range lookup's processor price: with `cpu-seek-run-us` it is that much per run sought
    /// (and no lookup's fixed price), without it a lookup and a run probed per run; a point
    /// lookup's block search adds `cpu-block-us` per block it reads. Both reach the parsed
    /// device and the printed inputs.
    #[test]
    fn seek_and_block_search_prices_on_the_device_reach_the_prediction() {
        let device =
            parse_device("read-us=100,cpu-seek-run-us=4.5,cpu-block-us=0.8").expect("parses");
        assert!((device.cpu.seconds_per_run_sought - 4.5e-6).abs() < 1e-15);
        assert!((device.cpu.seconds_per_block_searched - 0.8e-6).abs() < 1e-15);
        let plain = parse_device("read-us=100").expect("parses");
        assert_eq!(plain.cpu.seconds_per_run_sought, 0.0);
        assert_eq!(plain.cpu.seconds_per_block_searched, 0.0);
        let tuned = |device: &str, workload: &str| {
            let mut out = Vec::new();
            run(
                &args(&["--workload", workload, "--device", device, "--json"]),
                &mut out,
            )
            .expect("tune");
            let json = serde_json::from_slice::<serde_json::Value>(&out).expect("JSON");
            json["recommended"]["predicted"]["cpu_us_per_operation"]
                .as_f64()
                .expect("number")
        };
        // Range lookups alone: at least 4.5 us of processor a run sought, one run at the least.
        let ranges = "ranges=1,selectivity=0.000001";
        let sought = tuned("read-us=100,cpu-seek-run-us=4.5", ranges);
        assert!(sought >= 4.5, "{sought}");
        assert_eq!(tuned("read-us=100", ranges), 0.0);
        // Present-key lookups read a block each: the block search is paid.
        let found = "lookups=1,empty=0";
        assert!(tuned("read-us=100,cpu-block-us=0.8", found) >= 0.8 * 0.99);
        let mut out = Vec::new();
        run(
            &args(&[
                "--device",
                "read-us=100,cpu-seek-run-us=4.5,cpu-block-us=0.8",
            ]),
            &mut out,
        )
        .expect("tune");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.contains("4.500 per run sought, 0.800 per block searched"),
            "{text}"
        );
    }

    /// With a spread the recommendation is the tied design with the fewest merge I/Os per
    /// update; without one (or a spread too narrow to tie anything) it is the model's best.
    #[test]
    fn a_spread_breaks_ties_toward_the_fewest_merges() {
        let tuned = |extra: &[&str]| {
            let mut argv = vec![
                "--workload",
                "lookups=0.756,empty=1,updates=0.244",
                "--device",
                "read-us=73.8,write-us=53.7,merge-read-us=11.6,cpu-lookup-us=0.02,cpu-run-us=0.593,cpu-update-us=6.8,flush-us=8700",
                "--json",
            ];
            argv.extend_from_slice(extra);
            let mut out = Vec::new();
            run(&args_at_a_million(&argv), &mut out).expect("tune");
            serde_json::from_slice::<serde_json::Value>(&out).expect("JSON")
        };
        let w = |v: &serde_json::Value| v["predicted"]["update_io"].as_f64().expect("number");
        let ops =
            |v: &serde_json::Value| v["predicted"]["throughput_ops"].as_f64().expect("number");
        let model = tuned(&[]);
        let narrow = tuned(&["--spread", "device=1,processor=1,flush=1"]);
        assert_eq!(model, narrow);
        let wide = tuned(&["--spread", "processor=1.6"]);
        let best = &model["recommended"];
        let pick = &wide["recommended"];
        assert_eq!(&wide["candidates"][0], pick);
        assert!(w(pick) <= w(best), "{pick} against {best}");
        // A tie is within the spread of the model's best.
        assert!(ops(pick) * 1.6 >= ops(best), "{pick} against {best}");
        // The same designs, reordered.
        let count = |v: &serde_json::Value| v["candidates"].as_array().expect("list").len();
        assert_eq!(count(&model), count(&wide));
        let mut out = Vec::new();
        for bad in ["device=0.5", "processor=x", "flush=-1", "disk=2", "device"] {
            assert!(run(&args(&["--spread", bad]), &mut out).is_err(), "{bad}");
        }
        // The text output says which designs tie.
        run(
            &args_at_a_million(&["--spread", "processor=1.6", "--show", "2"]),
            &mut out,
        )
        .expect("tune");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.lines().any(|l| l.starts_with("ties: ")), "{text}");
    }

    #[test]
    fn bad_workloads_and_devices_are_usage_errors() {
        let mut out = Vec::new();
        for extra in [
            ["--workload", "lookups=abc"],
            ["--workload", "reads=0.5"],
            ["--workload", "lookups"],
            ["--device", "read-us=0"],
            ["--device", "cpu-run-us=-1"],
            ["--device", "merge-read-us=-2"],
            ["--device", "merge-threads=-1"],
            ["--device", "cpu-merge-us=inf"],
            ["--device", "cpu-seek-run-us=-0.5"],
            ["--device", "cpu-block-us=NaN"],
        ] {
            assert!(run(&args(&extra), &mut out).is_err(), "{extra:?}");
        }
        let mut out = Vec::new();
        run(&args(&["--show", "3"]), &mut out).expect("tune");
        let text = String::from_utf8(out).expect("UTF-8");
        let rows = text
            .lines()
            .filter(|l| {
                l.split_whitespace().nth(1).is_some_and(|policy| {
                    ["leveling", "tiering", "lazy-leveling", "garnering(c="]
                        .iter()
                        .any(|name| policy.starts_with(name))
                })
            })
            .count();
        assert_eq!(rows, 3, "{text}");
    }

    fn bare_args(argv: &[&str]) -> TuneArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: TuneArgs,
        }
        let mut all = vec!["tune"];
        all.extend_from_slice(argv);
        Wrapper::try_parse_from(all).expect("valid arguments").args
    }

    #[test]
    fn a_database_supplies_the_data_and_the_mix_and_explicit_flags_win() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = strata::Db::open(dir.path(), strata::Options::default()).expect("open");
        for i in 0..2_000u32 {
            db.put(format!("key{i:06}"), [1u8; 100]).expect("put");
        }
        // 6,000 lookups (a third find nothing) against 2,000 writes: a read-mostly mix.
        for i in 0..3_000u32 {
            db.get(format!("key{i:06}")).expect("get");
            db.get(format!("key{:06}", i % 2_000)).expect("get");
        }
        db.flush().expect("flush");
        db.close().expect("close");
        let db_path = dir.path().to_str().expect("UTF-8 path");
        let inputs = problem(&bare_args(&["--from-db", db_path])).expect("measures");
        let p = inputs.problem;
        assert_eq!(p.entries, 2_000.0);
        assert!(p.entry_bytes > 100.0);
        assert!(
            (p.workload.point_lookups - 0.75).abs() < 1e-9,
            "{:?}",
            p.workload
        );
        assert!((p.workload.updates - 0.25).abs() < 1e-9);
        assert!((p.workload.zero_result_fraction - 1_000.0 / 6_000.0).abs() < 1e-9);
        assert!(
            (p.memory_bits / p.entries - 10.0).abs() < 0.5,
            "the filters' bits per key: {}",
            p.memory_bits / p.entries
        );
        assert!(inputs
            .lines
            .iter()
            .any(|l| l.contains("6000 point lookups")));
        let explicit = problem(&bare_args(&[
            "--from-db",
            db_path,
            "--entries",
            "1000000",
            "--workload",
            "lookups=0.1,updates=0.9",
        ]))
        .expect("measures")
        .problem;
        assert_eq!(explicit.entries, 1_000_000.0);
        assert_eq!(explicit.workload.point_lookups, 0.1);
        // The keys ("key000000") are 9 bytes; an explicit --key-size wins, and a workload given
        // as text keeps the database's key size.
        assert_eq!(p.workload.key_bytes, Some(9.0));
        assert_eq!(p.key_bytes(), 9.0);
        assert_eq!(explicit.workload.key_bytes, Some(9.0));
        let keyed = problem(&bare_args(&["--from-db", db_path, "--key-size", "40"]))
            .expect("measures")
            .problem;
        assert_eq!(keyed.key_bytes(), 40.0);
        assert!(problem(&bare_args(&["--from-db", db_path, "--key-size=-1"])).is_err());
        assert!(problem(&bare_args(&["--from-db", db_path, "--key-size", "NaN"])).is_err());
        // Without a database the sizes are required.
        assert!(problem(&bare_args(&["--entries", "1000"])).is_err());
        // 2,000 entries' filters hold less than one page of write buffer: the error names the
        // flags that give the tuner memory, and either flag runs.
        let mut out = Vec::new();
        let error = run(&bare_args(&[db_path]), &mut out).expect_err("too little memory");
        assert!(
            matches!(&error, CliError::InvalidArgument(m) if m.contains("--buffer-bytes")),
            "{error}"
        );
        for flag in [
            ["--buffer-bytes", "65536"],
            ["--memory-bits-per-key", "100"],
        ] {
            let mut out = Vec::new();
            let mut argv = vec![db_path];
            argv.extend_from_slice(&flag);
            run(&bare_args(&argv), &mut out).expect("tunes with the flag");
            assert!(!out.is_empty());
        }
    }

    /// `strata tune DB` tunes for the database's window of recent queries once it holds 1,000
    /// of them (long scans included), `--lifetime-mix` for its lifetime totals, and flags win.
    #[test]
    fn a_database_given_by_position_is_tuned_for_its_recent_queries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = strata::Db::open(dir.path(), strata::Options::default()).expect("open");
        for i in 0..3_000u32 {
            db.put(format!("key{i:06}"), [1u8; 100]).expect("put");
        }
        // 2,000 queries: half point lookups of keys that exist, half scans of 40 entries.
        for i in 0..1_000u32 {
            db.get(format!("key{:06}", i)).expect("get");
            let mut iter = db.iter();
            iter.seek(format!("key{:06}", i));
            assert_eq!(iter.take(40).count(), 40);
        }
        db.flush().expect("flush");
        db.close().expect("close");
        let db_path = dir.path().to_str().expect("UTF-8 path");
        let inputs = problem(&bare_args(&[db_path])).expect("measures");
        let w = inputs.problem.workload;
        // The window spans the 2,000 queries and the 3,000 writes before them (all since the
        // window's start).
        assert!((w.point_lookups - 0.2).abs() < 1e-9, "{w:?}");
        assert!((w.range_lookups - 0.2).abs() < 1e-9, "{w:?}");
        assert!((w.updates - 0.6).abs() < 1e-9, "{w:?}");
        let scans = w.long_scans.expect("counted");
        assert!((scans.share_of_queries - 0.5).abs() < 1e-9);
        assert!((scans.entries - 40.0).abs() < 1e-9);
        assert!(inputs
            .lines
            .iter()
            .any(|l| l.contains("window of recent queries")));
        let lifetime = problem(&bare_args(&[db_path, "--lifetime-mix"])).expect("measures");
        assert!(lifetime.lines.iter().any(|l| l.contains("lifetime totals")));
        let explicit = problem(&bare_args(&[
            db_path,
            "--workload",
            "lookups=1,long-scans=0.4",
        ]))
        .expect("measures")
        .problem;
        assert_eq!(explicit.workload.point_lookups, 1.0);
        let given = explicit.workload.long_scans.expect("given");
        assert_eq!((given.share_of_queries, given.entries), (0.4, 100.0));
        // The database by position and by flag at once is a usage error.
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: TuneArgs,
        }
        assert!(Wrapper::try_parse_from(["tune", db_path, "--from-db", db_path]).is_err());
        // Every registered policy is among the candidates the JSON lists.
        let mut out = Vec::new();
        let sized = [
            db_path,
            "--entries",
            "1000000",
            "--memory-bits-per-key",
            "10",
            "--json",
        ];
        run(&bare_args(&sized), &mut out).expect("tune");
        let value: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
        let policies: std::collections::BTreeSet<&str> = value["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .filter_map(|c| c["policy"].as_str())
            .collect();
        assert_eq!(policies.len(), 7, "{policies:?}");
    }

    #[test]
    fn the_recommendation_written_as_an_options_file_opens_and_benches() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("design.toml");
        let mut out = Vec::new();
        let path_text = path.to_str().expect("UTF-8 path");
        run(
            &args(&[
                "--workload",
                "lookups=0.9,empty=0.5,updates=0.1",
                "--options-out",
                path_text,
            ]),
            &mut out,
        )
        .expect("tune");
        let file = OptionsFile::read(&path).expect("written");
        let compaction = file.compaction.as_ref().expect("a policy");
        let filters = file.filters.as_ref().expect("filters");
        assert_eq!(filters.allocator, FilterAllocatorKind::Monkey);
        assert_eq!(filters.expected_entries, Some(100_000_000));
        assert!(compaction.size_ratio.is_some_and(|t| t >= 2.0));
        let options = strata::Options::from_file(&path).expect("a valid design");
        assert_eq!(
            Some(options.write_buffer_bytes),
            file.write_buffer_bytes,
            "the buffer the tuner chose"
        );
        let flags = crate::bench::options_file::flags(&file).expect("the bench can run it");
        assert!(flags.iter().any(|f| f == "--compaction"));
        // The runners-up as options files, ranked.
        let ranked = dir.path().join("ranked");
        let ranked_text = ranked.to_str().expect("UTF-8 path");
        run(
            &args(&["--show", "3", "--candidates-out", ranked_text]),
            &mut Vec::new(),
        )
        .expect("tune");
        for rank in 1..=3 {
            let path = ranked.join(format!("{rank}.toml"));
            strata::Options::from_file(&path).expect("a valid design");
        }
        assert!(!ranked.join("4.toml").exists());
        // A write-heavy mix recommends tiering, costed and written at a whole T.
        run(
            &args(&[
                "--workload",
                "lookups=0.02,updates=0.98",
                "--options-out",
                path_text,
            ]),
            &mut out,
        )
        .expect("tune");
        let file = OptionsFile::read(&path).expect("written");
        let compaction = file.compaction.as_ref().expect("a policy");
        assert_eq!(compaction.policy, CompactionKind::Tiering);
        let t = compaction.size_ratio.expect("T");
        assert_eq!(t, t.round());
        strata::Options::from_file(&path).expect("a valid design");
        let text = String::from_utf8(out).expect("UTF-8");
        // `out` holds the earlier runs' tables too: this run's is the last.
        let row = text
            .lines()
            .rfind(|l| l.starts_with("1 "))
            .expect("the recommendation's row");
        let table_t: f64 = row
            .split_whitespace()
            .nth(3)
            .and_then(|t| t.parse().ok())
            .expect("T");
        assert_eq!(table_t, t, "the table shows the T that is written: {row}");
    }
}
