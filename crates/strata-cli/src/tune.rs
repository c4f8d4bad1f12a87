//! `strata tune`: the design Monkey's holistic tuner recommends for a data size, a workload, a
//! device and a memory budget (`strata::model::tuner`, SPEC §7), with the runners-up and their
//! predicted costs.
//!
//! What is not here yet (issue 16): tuning from a live database (`--from-db`), the device probe,
//! options files, and candidates for lazy leveling and Garnering (they need Strata's own models).

use std::io::Write;

use serde::Serialize;
use strata::model::tuner::{tune, Design, Device, TuningProblem, Workload};
use strata::model::MergePolicy;

use crate::error::{CliError, CliResult};

/// Arguments of `strata tune`.
#[derive(Debug, Clone, clap::Args)]
pub struct TuneArgs {
    /// Entries in the database.
    #[arg(long)]
    pub entries: f64,
    /// Bytes per entry (key + value).
    #[arg(long)]
    pub entry_size: f64,
    /// Memory for the write buffer and the filters together, in bits per entry.
    #[arg(long)]
    pub memory_bits_per_key: f64,
    /// Fix the write buffer at this many bytes (the rest goes to the filters) instead of letting
    /// the tuner split the memory.
    #[arg(long)]
    pub buffer_bytes: Option<f64>,
    /// The workload: `lookups=P,empty=F,updates=U,ranges=Q,selectivity=S` (proportions of point
    /// lookups, updates and range lookups; `empty` the fraction of point lookups that find
    /// nothing; `selectivity` the fraction of entries a range returns). Missing parts are 0,
    /// `empty` 0.5.
    #[arg(long, default_value = "lookups=0.5,empty=0.5,updates=0.5")]
    pub workload: String,
    /// The device: `read-us=R,write-us=W,page-bytes=P` (microseconds per page read and write).
    #[arg(long, default_value = "read-us=100,write-us=100,page-bytes=4096")]
    pub device: String,
    /// Discard designs whose point lookups cost more I/Os than this.
    #[arg(long)]
    pub max_lookup_io: Option<f64>,
    /// Discard designs whose updates cost more I/Os than this.
    #[arg(long)]
    pub max_update_io: Option<f64>,
    /// Runners-up to print (text output).
    #[arg(long, default_value_t = 5)]
    pub show: usize,
    /// Print `{"recommended": D, "candidates": [D, ...]}` as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
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

/// A design as `--json` prints it (issue 16's field names).
#[derive(Debug, Serialize)]
struct DesignJson {
    policy: &'static str,
    size_ratio: f64,
    levels: usize,
    buffer_bytes: f64,
    filter_bits_per_key: f64,
    filter_allocation: &'static str,
    model: &'static str,
    predicted: PredictedJson,
}

#[derive(Debug, Serialize)]
struct PredictedJson {
    zero_result_lookup_io: f64,
    existing_lookup_io: f64,
    point_lookup_io: f64,
    update_io: f64,
    range_io: f64,
    io_per_operation: f64,
    throughput_ops: f64,
}

fn policy_name(policy: MergePolicy) -> &'static str {
    match policy {
        MergePolicy::Leveling => "leveling",
        MergePolicy::Tiering => "tiering",
    }
}

fn to_json(design: &Design, entries: f64) -> DesignJson {
    let p = design.predicted;
    DesignJson {
        policy: policy_name(design.policy),
        size_ratio: design.size_ratio,
        levels: design.levels,
        buffer_bytes: design.buffer_bits / 8.0,
        filter_bits_per_key: design.filter_bits / entries,
        filter_allocation: "monkey",
        model: "monkey closed form (SPEC §7)",
        predicted: PredictedJson {
            zero_result_lookup_io: p.zero_result_lookup_io,
            existing_lookup_io: p.existing_lookup_io,
            point_lookup_io: p.point_lookup_io,
            update_io: p.update_io,
            range_io: p.range_io,
            io_per_operation: p.io_per_operation,
            throughput_ops: p.throughput_ops,
        },
    }
}

/// The tuning problem `args` describe.
fn problem(args: &TuneArgs) -> CliResult<TuningProblem> {
    let workload = parse_pairs(
        "workload",
        &args.workload,
        &["lookups", "empty", "updates", "ranges", "selectivity"],
    )?;
    let device = parse_pairs(
        "device",
        &args.device,
        &["read-us", "write-us", "page-bytes"],
    )?;
    let read_us = device[0].unwrap_or(100.0);
    let write_us = device[1].unwrap_or(read_us);
    if !(read_us.is_finite() && read_us > 0.0 && write_us.is_finite() && write_us >= 0.0) {
        return Err(CliError::InvalidArgument(format!(
            "--device: read-us must be > 0 and write-us >= 0, got {read_us} and {write_us}"
        )));
    }
    Ok(TuningProblem {
        entries: args.entries,
        entry_bytes: args.entry_size,
        memory_bits: args.memory_bits_per_key * args.entries,
        workload: Workload {
            point_lookups: workload[0].unwrap_or(0.0),
            zero_result_fraction: workload[1].unwrap_or(0.5),
            updates: workload[2].unwrap_or(0.0),
            range_lookups: workload[3].unwrap_or(0.0),
            selectivity: workload[4].unwrap_or(0.0),
        },
        device: Device {
            seconds_per_read: read_us * 1e-6,
            write_read_cost_ratio: write_us / read_us,
            page_bytes: device[2].unwrap_or(4096.0),
        },
        fixed_buffer_bits: args.buffer_bytes.map(|bytes| bytes * 8.0),
        max_point_lookup_io: args.max_lookup_io,
        max_update_io: args.max_update_io,
    })
}

fn write_error(error: std::io::Error) -> CliError {
    CliError::io("writing the tuning", error)
}

/// Runs `strata tune`.
pub fn run(args: &TuneArgs, out: &mut dyn Write) -> CliResult<()> {
    let problem = problem(args)?;
    let tuning = tune(&problem)?;
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
    writeln!(
        out,
        "{} entries of {} bytes, {} bits per entry of memory; workload {}; device {}",
        args.entries, args.entry_size, args.memory_bits_per_key, args.workload, args.device
    )
    .map_err(write_error)?;
    writeln!(
        out,
        "model: Monkey's closed forms (SPEC §7), filters allocated by Monkey; leveling and tiering only"
    )
    .map_err(write_error)?;
    writeln!(
        out,
        "{:<4} {:<9} {:>8} {:>6} {:>12} {:>9} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "rank",
        "policy",
        "T",
        "levels",
        "buffer MiB",
        "filt b/k",
        "R io",
        "V io",
        "W io",
        "Q io",
        "ops/s"
    )
    .map_err(write_error)?;
    for (rank, design) in tuning.candidates.iter().take(args.show.max(1)).enumerate() {
        let p = design.predicted;
        writeln!(
            out,
            "{:<4} {:<9} {:>8.2} {:>6} {:>12.2} {:>9.2} {:>8.4} {:>8.4} {:>8.4} {:>8.2} {:>12.0}",
            rank + 1,
            policy_name(design.policy),
            design.size_ratio,
            design.levels,
            design.buffer_bits / 8.0 / 1048576.0,
            design.filter_bits / problem.entries,
            p.zero_result_lookup_io,
            p.existing_lookup_io,
            p.update_io,
            p.range_io,
            p.throughput_ops
        )
        .map_err(write_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(recommended["policy"], "leveling");
    }

    #[test]
    fn bad_workloads_and_devices_are_usage_errors() {
        let mut out = Vec::new();
        for extra in [
            ["--workload", "lookups=abc"],
            ["--workload", "reads=0.5"],
            ["--workload", "lookups"],
            ["--device", "read-us=0"],
        ] {
            assert!(run(&args(&extra), &mut out).is_err(), "{extra:?}");
        }
        let mut out = Vec::new();
        run(&args(&["--show", "3"]), &mut out).expect("tune");
        let text = String::from_utf8(out).expect("UTF-8");
        let rows = text
            .lines()
            .filter(|l| matches!(l.split_whitespace().nth(1), Some("leveling" | "tiering")))
            .count();
        assert_eq!(rows, 3, "{text}");
    }
}
