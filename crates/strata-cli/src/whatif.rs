//! `strata whatif`: one parameter of a design problem swept through the cost models (DESIGN.md §7;
//! `strata::model`), printed as a table (or JSON) and drawn as two SVG panels:
//!
//! | `--sweep` | upper panel | lower panel |
//! | --- | --- | --- |
//! | `memory` (filter bits per entry) | zero-result lookup I/O, uniform vs Monkey filters per policy (Monkey Fig. 7) | throughput of each optimisation step (Monkey Fig. 11) |
//! | `size-ratio` | lookup I/O against update I/O, one curve per policy over `T` (Monkey Fig. 8) | throughput against `T` |
//! | `entries` (data size) | levels, leveling and Garnering at `c` = 0.4 … 1.0 | zero-result lookup I/O |
//! | `entry-size`, `lookups` (share of point lookups; the rest are updates) | the tuner's best throughput per policy | that design's point-lookup I/O |
//!
//! Monkey's Fig. 11 steps, at the same total memory (filters plus the `--buffer-bytes` buffer):
//! (1) leveling at `--size-ratio` with uniform filters; (2) the same design with Monkey's
//! filters; (3) the tuner's policy and size ratio with the buffer kept; (4) the tuner with the
//! memory split tuned too.

use std::io::Write;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::Serialize;
use strata::model::tuner::{
    evaluate_with, tune_with_replays, Design, TuningProblem, GARNERING_SCALING_FACTORS,
    REPLAYED_CANDIDATES,
};
use strata::model::ModelPolicy;
use strata::policy::FilterAllocatorKind;

use crate::chart::{count_label as entries_label, plot_error, thousands, PALETTE};
use crate::error::{CliError, CliResult};
use crate::tune::{parse_device, parse_workload, policy_label};

/// The parameter `strata whatif` sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sweep {
    /// Filter memory in bits per entry.
    Memory,
    /// The size ratio `T`.
    SizeRatio,
    /// The number of entries (spaced geometrically).
    Entries,
    /// Bytes per entry.
    EntrySize,
    /// The share of point lookups in the workload (the rest are updates).
    Lookups,
}

impl Sweep {
    fn default_range(self) -> (f64, f64) {
        match self {
            Sweep::Memory => (0.5, 16.0),
            Sweep::SizeRatio => (2.0, 20.0),
            Sweep::Entries => (1e6, 1e11),
            Sweep::EntrySize => (16.0, 4096.0),
            Sweep::Lookups => (0.0, 1.0),
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Sweep::Memory => "filter memory (bits per entry)",
            Sweep::SizeRatio => "size ratio T",
            Sweep::Entries => "entries",
            Sweep::EntrySize => "entry size (bytes)",
            Sweep::Lookups => "point lookups (share of operations; the rest are updates)",
        }
    }
}

/// Arguments of `strata whatif`.
#[derive(Debug, Clone, clap::Args)]
pub struct WhatifArgs {
    /// The parameter to sweep.
    #[arg(long, value_enum)]
    pub sweep: Sweep,
    /// First value of the sweep [default: memory 0.5, size-ratio 2, entries 1e6, entry-size 16,
    /// lookups 0].
    #[arg(long)]
    pub from: Option<f64>,
    /// Last value of the sweep [default: memory 16, size-ratio 20, entries 1e11, entry-size 4096,
    /// lookups 1].
    #[arg(long)]
    pub to: Option<f64>,
    /// Values in the sweep (at least 2).
    #[arg(long, default_value_t = 50)]
    pub points: usize,
    /// Entries in the database.
    #[arg(long, default_value_t = 1e8)]
    pub entries: f64,
    /// Bytes per entry.
    #[arg(long, default_value_t = 128.0)]
    pub entry_size: f64,
    /// Filter memory in bits per entry.
    #[arg(long, default_value_t = 10.0)]
    pub memory_bits_per_key: f64,
    /// Write-buffer bytes (KiB/MiB/GiB suffixes accepted).
    #[arg(long, default_value = "64MiB", value_parser = crate::bench::parse_bytes)]
    pub buffer_bytes: u64,
    /// Size ratio `T` of the fixed designs.
    #[arg(long, default_value_t = 10.0)]
    pub size_ratio: f64,
    /// The workload, as `strata tune` takes it.
    #[arg(long, default_value = "lookups=0.5,empty=0.5,updates=0.5")]
    pub workload: String,
    /// The device, as `strata tune` takes it.
    #[arg(long, default_value = "read-us=100,write-us=100,page-bytes=4096")]
    pub device: String,
    /// Candidates of the tuned designs (the memory sweep's last two steps, the entry-size and
    /// lookups sweeps) whose merges per update are priced by replaying their merge policy, as
    /// `strata tune --replayed-candidates` takes it; 0 ranks by the closed form alone, as
    /// Monkey's figures do.
    #[arg(long, default_value_t = REPLAYED_CANDIDATES)]
    pub replayed_candidates: usize,
    /// Draw the two panels into this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print `{"sweep": S, "rows": [...]}` as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One design at one value of the sweep.
#[derive(Debug, Clone, Serialize)]
struct Row {
    x: f64,
    series: String,
    policy: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    garnering_c: Option<f64>,
    filter_allocation: &'static str,
    model: &'static str,
    size_ratio: f64,
    levels: usize,
    buffer_bytes: f64,
    filter_bits_per_key: f64,
    zero_result_lookup_io: f64,
    existing_lookup_io: f64,
    point_lookup_io: f64,
    update_io: f64,
    range_io: f64,
    throughput_ops: f64,
    /// Which panel draws the row: 0 upper, 1 lower, 2 both.
    #[serde(skip)]
    panel: u8,
}

impl Row {
    fn new(x: f64, series: String, design: &Design, entries: f64, panel: u8) -> Row {
        let p = design.predicted;
        Row {
            x,
            series,
            policy: design.policy.name(),
            garnering_c: design.policy.garnering_c(),
            filter_allocation: design.filters.name(),
            model: design.policy.model(),
            size_ratio: design.size_ratio,
            levels: design.levels,
            buffer_bytes: design.buffer_bits / 8.0,
            filter_bits_per_key: design.filter_bits / entries,
            zero_result_lookup_io: p.zero_result_lookup_io,
            existing_lookup_io: p.existing_lookup_io,
            point_lookup_io: p.point_lookup_io,
            update_io: p.update_io,
            range_io: p.range_io,
            throughput_ops: p.throughput_ops,
            panel,
        }
    }
}

fn invalid(message: String) -> CliError {
    CliError::InvalidArgument(message)
}

/// The sweep's values: geometric for entries, linear otherwise.
fn values(sweep: Sweep, from: f64, to: f64, points: usize) -> CliResult<Vec<f64>> {
    if !(2..=10_000).contains(&points) {
        return Err(invalid(format!(
            "--points must be between 2 and 10000, got {points}"
        )));
    }
    let (low, high) = match sweep {
        Sweep::Memory => (0.0, 1e4),
        Sweep::SizeRatio => (2.0, 1e4),
        Sweep::Entries => (1.0, 1e15),
        Sweep::EntrySize => (1.0, 1e9),
        Sweep::Lookups => (0.0, 1.0),
    };
    let inside = |v: f64| v.is_finite() && v >= low && v <= high;
    if !(inside(from) && inside(to) && from < to) {
        return Err(invalid(format!(
            "--from and --to must satisfy {low} <= from < to <= {high} for --sweep {}, got {from} and {to}",
            sweep_name(sweep)
        )));
    }
    let steps = (points - 1) as f64;
    Ok((0..points)
        .map(|i| {
            let f = i as f64 / steps;
            match sweep {
                Sweep::Entries => (from.ln() + f * (to.ln() - from.ln())).exp(),
                _ => from + f * (to - from),
            }
        })
        .collect())
}

fn sweep_name(sweep: Sweep) -> &'static str {
    match sweep {
        Sweep::Memory => "memory",
        Sweep::SizeRatio => "size-ratio",
        Sweep::Entries => "entries",
        Sweep::EntrySize => "entry-size",
        Sweep::Lookups => "lookups",
    }
}

const PER_RUN_SHOWN: ModelPolicy = ModelPolicy::garnering(0.8);

/// Every design the sweep evaluates, in series order.
fn rows(args: &WhatifArgs) -> CliResult<Vec<Row>> {
    let (default_from, default_to) = args.sweep.default_range();
    let xs = values(
        args.sweep,
        args.from.unwrap_or(default_from),
        args.to.unwrap_or(default_to),
        args.points,
    )?;
    let base = TuningProblem {
        entries: args.entries,
        entry_bytes: args.entry_size,
        memory_bits: 1.0,
        workload: parse_workload(&args.workload)?,
        device: parse_device(&args.device)?,
        fixed_buffer_bits: None,
        max_point_lookup_io: None,
        max_update_io: None,
        level0_runs: 0.0,
        block_cache_bytes: 0.0,
        point_read_miss_share: 1.0,
    };
    let buffer_bits = args.buffer_bytes.max(1) as f64 * 8.0;
    let tune = |problem: &TuningProblem| tune_with_replays(problem, args.replayed_candidates);
    let mut rows = Vec::new();
    for x in xs {
        let mut problem = base;
        let mut filter_bits_per_key = args.memory_bits_per_key;
        let mut size_ratio = args.size_ratio;
        match args.sweep {
            Sweep::Memory => filter_bits_per_key = x,
            Sweep::SizeRatio => size_ratio = x,
            Sweep::Entries => problem.entries = x,
            Sweep::EntrySize => problem.entry_bytes = x,
            Sweep::Lookups => {
                problem.workload.point_lookups = x;
                problem.workload.updates = 1.0 - x;
            }
        }
        if !(filter_bits_per_key.is_finite() && filter_bits_per_key >= 0.0) {
            return Err(invalid(format!(
                "--memory-bits-per-key must be >= 0, got {filter_bits_per_key}"
            )));
        }
        // The fixed designs' memory: the buffer plus the filters.
        problem.memory_bits = buffer_bits + filter_bits_per_key * problem.entries;
        let fixed = |policy, filters, t| evaluate_with(&problem, policy, t, buffer_bits, filters);
        let entries = problem.entries;
        let mut push = |series: String, design: &Design, panel: u8| {
            rows.push(Row::new(x, series, design, entries, panel));
        };
        match args.sweep {
            Sweep::Memory => {
                for policy in [ModelPolicy::LEVELING, ModelPolicy::TIERING] {
                    for filters in [FilterAllocatorKind::Uniform, FilterAllocatorKind::Monkey] {
                        let design = fixed(policy, filters, size_ratio)?;
                        push(
                            format!("{}, {} filters", policy.name(), filters.name()),
                            &design,
                            0,
                        );
                    }
                }
                for policy in [ModelPolicy::LAZY_LEVELING, PER_RUN_SHOWN] {
                    let design = fixed(policy, FilterAllocatorKind::Monkey, size_ratio)?;
                    push(
                        format!("{}, monkey filters", policy_label(policy)),
                        &design,
                        0,
                    );
                }
                let uniform = fixed(
                    ModelPolicy::LEVELING,
                    FilterAllocatorKind::Uniform,
                    size_ratio,
                )?;
                push("1: leveling, uniform filters".into(), &uniform, 1);
                let monkey = fixed(
                    ModelPolicy::LEVELING,
                    FilterAllocatorKind::Monkey,
                    size_ratio,
                )?;
                push("2: + Monkey's filters".into(), &monkey, 1);
                // A tuner may keep the design it is given: each step is the better of its
                // recommendation and the step before (the tuner's size ratios are Monkey's
                // `(N/B)^(1/L)`, which need not include `--size-ratio`).
                let better = |a: Design, b: Design| {
                    if b.predicted.throughput_ops > a.predicted.throughput_ops {
                        b
                    } else {
                        a
                    }
                };
                let kept_buffer = better(
                    monkey,
                    tune(&TuningProblem {
                        fixed_buffer_bits: Some(buffer_bits),
                        ..problem
                    })?
                    .recommended,
                );
                push("3: + tuned policy and T".into(), &kept_buffer, 1);
                let free = better(kept_buffer, tune(&problem)?.recommended);
                push("4: + tuned memory split".into(), &free, 1);
            }
            Sweep::SizeRatio => {
                for policy in [
                    ModelPolicy::LEVELING,
                    ModelPolicy::TIERING,
                    ModelPolicy::LAZY_LEVELING,
                    PER_RUN_SHOWN,
                ] {
                    let design = fixed(policy, FilterAllocatorKind::Monkey, size_ratio)?;
                    push(policy_label(policy), &design, 2);
                }
            }
            Sweep::Entries => {
                let uniform = fixed(
                    ModelPolicy::LEVELING,
                    FilterAllocatorKind::Uniform,
                    size_ratio,
                )?;
                push("leveling, uniform filters".into(), &uniform, 2);
                let monkey = fixed(
                    ModelPolicy::LEVELING,
                    FilterAllocatorKind::Monkey,
                    size_ratio,
                )?;
                push("leveling, monkey filters".into(), &monkey, 2);
                for &scaling_factor in &GARNERING_SCALING_FACTORS {
                    let policy = ModelPolicy::garnering(scaling_factor);
                    let design = fixed(policy, FilterAllocatorKind::Monkey, size_ratio)?;
                    push(
                        format!("{}, monkey filters", policy_label(policy)),
                        &design,
                        2,
                    );
                }
            }
            Sweep::EntrySize | Sweep::Lookups => {
                let tuning = tune(&TuningProblem {
                    fixed_buffer_bits: Some(buffer_bits),
                    ..problem
                })?;
                // The tuner's best design of each policy (candidates are sorted best first).
                let mut seen: Vec<String> = Vec::new();
                for design in &tuning.candidates {
                    let label = policy_label(design.policy);
                    if !seen.contains(&label) {
                        push(format!("best {label}"), design, 2);
                        seen.push(label);
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// One panel: what its y is, what its x is (the sweep value or another field), and its title.
struct Panel {
    title: String,
    x_desc: String,
    y_desc: &'static str,
    x: fn(&Row) -> f64,
    y: fn(&Row) -> f64,
    /// x drawn as log10 (labels in entries).
    log_x: bool,
    /// y drawn as log10 (I/O costs that span orders of magnitude).
    log_y: bool,
    /// Draw a marker at every point (curves whose x is not the sweep value).
    markers: bool,
    /// Where the legend sits (where the curves are not).
    legend: SeriesLabelPosition,
}

fn panels(args: &WhatifArgs) -> [Panel; 2] {
    let sweep_x: fn(&Row) -> f64 = |r| r.x;
    let axis = args.sweep.axis().to_string();
    let simple = |title: &str, y_desc: &'static str, y: fn(&Row) -> f64| Panel {
        title: title.to_string(),
        x_desc: axis.clone(),
        y_desc,
        x: sweep_x,
        y,
        log_x: args.sweep == Sweep::Entries,
        log_y: false,
        markers: false,
        legend: SeriesLabelPosition::UpperRight,
    };
    let log_y = |panel: Panel| Panel {
        log_y: true,
        ..panel
    };
    let legend = |legend, panel: Panel| Panel { legend, ..panel };
    match args.sweep {
        Sweep::Memory => [
            log_y(simple(
                &format!(
                    "zero-result lookup cost, T = {}, uniform vs Monkey filters",
                    args.size_ratio
                ),
                "I/O per lookup (log scale)",
                |r| r.zero_result_lookup_io,
            )),
            legend(
                SeriesLabelPosition::LowerRight,
                simple("throughput of each optimisation step", "ops/s", |r| {
                    r.throughput_ops
                }),
            ),
        ],
        Sweep::SizeRatio => [
            Panel {
                title: format!(
                    "lookup vs update cost over T = {}..{} (Monkey's filters)",
                    thousands(args.from.unwrap_or(2.0)),
                    thousands(args.to.unwrap_or(20.0))
                ),
                x_desc: "update cost (I/O per update)".into(),
                y_desc: "zero-result lookup I/O (log scale)",
                x: |r| r.update_io,
                y: |r| r.zero_result_lookup_io,
                log_x: false,
                log_y: true,
                markers: true,
                legend: SeriesLabelPosition::UpperRight,
            },
            legend(
                SeriesLabelPosition::LowerLeft,
                simple("throughput", "ops/s", |r| r.throughput_ops),
            ),
        ],
        Sweep::Entries => [
            legend(
                SeriesLabelPosition::UpperLeft,
                simple(&format!("levels, T = {}", args.size_ratio), "levels", |r| {
                    r.levels as f64
                }),
            ),
            legend(
                SeriesLabelPosition::UpperLeft,
                simple("zero-result lookup cost", "I/O per lookup", |r| {
                    r.zero_result_lookup_io
                }),
            ),
        ],
        Sweep::EntrySize | Sweep::Lookups => [
            simple(
                "the tuner's best design of each policy: throughput",
                "ops/s",
                |r| r.throughput_ops,
            ),
            log_y(simple(
                "the same designs: point-lookup cost",
                "I/O per lookup (log scale)",
                |r| r.point_lookup_io,
            )),
        ],
    }
}

fn draw(path: &Path, args: &WhatifArgs, rows: &[Row]) -> CliResult<()> {
    let root = SVGBackend::new(path, (1000, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let (upper, lower) = root.split_vertically(450);
    for (index, (area, panel)) in [upper, lower].iter().zip(panels(args).iter()).enumerate() {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.panel == 2 || r.panel as usize == index)
            .collect();
        let x_of = |r: &Row| {
            let x = (panel.x)(r);
            if panel.log_x {
                x.max(1.0).log10()
            } else {
                x
            }
        };
        let y_of = |r: &Row| {
            let y = (panel.y)(r);
            if panel.log_y {
                y.max(1e-9).log10()
            } else {
                y
            }
        };
        let (mut x_low, mut x_high) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y_low, mut y_high) = (f64::INFINITY, f64::NEG_INFINITY);
        for row in &mine {
            let (x, y) = (x_of(row), y_of(row));
            if x.is_finite() && y.is_finite() {
                x_low = x_low.min(x);
                x_high = x_high.max(x);
                y_low = y_low.min(y);
                y_high = y_high.max(y);
            }
        }
        if !x_low.is_finite() {
            // Nothing finite to draw: an empty unit frame.
            (x_low, x_high) = (0.0, 1.0);
        } else if x_high <= x_low {
            x_high = x_low + 1.0;
        }
        if !y_low.is_finite() {
            (y_low, y_high) = (0.0, 1.0);
        }
        let (y_low, y_high) = if panel.log_y {
            // Whole decades around the data.
            let (low, high) = (y_low.floor(), y_high.ceil());
            (low, if high > low { high } else { low + 1.0 })
        } else {
            (0.0, if y_high > 0.0 { y_high * 1.1 } else { 1.0 })
        };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(x_low..x_high, y_low..y_high)
            .map_err(|e| plot_error(path, e))?;
        let log_x = panel.log_x;
        let x_formatter = move |v: &f64| {
            if log_x {
                entries_label(10f64.powf(*v))
            } else {
                thousands(*v)
            }
        };
        let log_y = panel.log_y;
        let y_formatter = move |v: &f64| {
            if log_y {
                let value = 10f64.powf(*v);
                if value < 0.001 {
                    format!("{value:.0e}")
                } else {
                    thousands(value)
                }
            } else {
                thousands(*v)
            }
        };
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc)
            .x_label_formatter(&x_formatter)
            .y_label_formatter(&y_formatter)
            .label_style(("sans-serif", 14))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(|e| plot_error(path, e))?;
        let mut series: Vec<&str> = Vec::new();
        for row in &mine {
            if !series.contains(&row.series.as_str()) {
                series.push(&row.series);
            }
        }
        for (i, name) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> = mine
                .iter()
                .filter(|r| r.series == *name)
                .map(|r| (x_of(r), y_of(r)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| plot_error(path, e))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            if panel.markers {
                chart
                    .draw_series(
                        points
                            .iter()
                            .map(|&point| Circle::new(point, 2, color.filled())),
                    )
                    .map_err(|e| plot_error(path, e))?;
            }
        }
        chart
            .configure_series_labels()
            .position(panel.legend.clone())
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_error(path, e))?;
    }
    root.present().map_err(|e| plot_error(path, e))
}

fn write_error(error: std::io::Error) -> CliError {
    CliError::io("writing the sweep", error)
}

/// Runs `strata whatif`.
pub fn run(args: &WhatifArgs, out: &mut dyn Write) -> CliResult<()> {
    let rows = rows(args)?;
    if let Some(path) = &args.svg {
        draw(path, args, &rows)?;
    }
    if args.json {
        #[derive(Serialize)]
        struct Output<'a> {
            sweep: Sweep,
            rows: &'a [Row],
        }
        let text = serde_json::to_string_pretty(&Output {
            sweep: args.sweep,
            rows: &rows,
        })
        .map_err(|e| invalid(format!("cannot encode the sweep as JSON: {e}")))?;
        writeln!(out, "{text}").map_err(write_error)?;
        return Ok(());
    }
    writeln!(
        out,
        "sweep {} ({}); every design costed on its own runs (DESIGN.md §7): Monkey's model for leveling and tiering, Strata's per-run model for lazy leveling and Garnering",
        sweep_name(args.sweep),
        args.sweep.axis()
    )
    .map_err(write_error)?;
    writeln!(
        out,
        "{:>12} {:<36} {:>7} {:>6} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "x",
        "series",
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
    for row in &rows {
        writeln!(
            out,
            "{:>12} {:<36} {:>7.2} {:>6} {:>10.2} {:>8.2} {:>8.4} {:>8.4} {:>8.4} {:>8.2} {:>12}",
            if args.sweep == Sweep::Entries {
                entries_label(row.x)
            } else {
                format!("{:.3}", row.x)
            },
            row.series,
            row.size_ratio,
            row.levels,
            row.buffer_bytes / 1048576.0,
            row.filter_bits_per_key,
            row.zero_result_lookup_io,
            row.existing_lookup_io,
            row.update_io,
            row.range_io,
            thousands(row.throughput_ops)
        )
        .map_err(write_error)?;
    }
    if let Some(path) = &args.svg {
        writeln!(out, "plot written to {}", path.display()).map_err(write_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(argv: &[&str]) -> WhatifArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: WhatifArgs,
        }
        let mut all = vec!["whatif"];
        all.extend_from_slice(argv);
        Wrapper::try_parse_from(all).expect("valid arguments").args
    }

    fn series<'a>(rows: &'a [Row], name: &str) -> Vec<&'a Row> {
        rows.iter().filter(|r| r.series == name).collect()
    }

    /// Monkey's Fig. 7 and Fig. 11 in the model: Monkey's filters never cost more than uniform
    /// ones, more memory means fewer false positives, and every optimisation step is at least as
    /// fast as the one before. Ranked by the closed form alone, as Monkey's figures are (the
    /// replays, which the plots below exercise, would add a minute of simulation in a test build).
    #[test]
    fn the_memory_sweep_reproduces_monkeys_orderings() {
        let rows = rows(&args(&[
            "--sweep",
            "memory",
            "--points",
            "12",
            "--replayed-candidates",
            "0",
        ]))
        .expect("sweep");
        for policy in ["leveling", "tiering"] {
            let uniform = series(&rows, &format!("{policy}, uniform filters"));
            let monkey = series(&rows, &format!("{policy}, monkey filters"));
            assert_eq!(uniform.len(), 12);
            for (u, m) in uniform.iter().zip(&monkey) {
                assert!(m.zero_result_lookup_io <= u.zero_result_lookup_io + 1e-12);
            }
            // More memory, fewer false positives.
            assert!(monkey[11].zero_result_lookup_io < monkey[0].zero_result_lookup_io);
        }
        let steps: Vec<Vec<&Row>> = [
            "1: leveling, uniform filters",
            "2: + Monkey's filters",
            "3: + tuned policy and T",
            "4: + tuned memory split",
        ]
        .iter()
        .map(|name| series(&rows, name))
        .collect();
        for i in 0..12 {
            for pair in steps.windows(2) {
                let (before, after) = (pair[0][i].throughput_ops, pair[1][i].throughput_ops);
                assert!(after >= before * (1.0 - 1e-9), "{i}: {before} then {after}");
            }
        }
    }

    #[test]
    fn the_size_ratio_sweep_trades_lookups_for_updates() {
        let rows = rows(&args(&["--sweep", "size-ratio", "--points", "10"])).expect("sweep");
        let leveling = series(&rows, "leveling");
        let tiering = series(&rows, "tiering");
        assert_eq!(leveling.len(), 10);
        // Leveling: a larger T costs updates and saves lookups; tiering the other way round.
        assert!(leveling[9].update_io > leveling[0].update_io);
        assert!(tiering[9].point_lookup_io > tiering[0].point_lookup_io);
        assert!(tiering[9].update_io < leveling[9].update_io);
    }

    #[test]
    fn the_entries_sweep_counts_garnerings_levels() {
        let rows = rows(&args(&["--sweep", "entries", "--points", "6", "--json"])).expect("sweep");
        let leveling = series(&rows, "leveling, monkey filters");
        let g04 = series(&rows, "garnering(c=0.4), monkey filters");
        assert_eq!(leveling.len(), 6);
        assert!(leveling[5].levels > leveling[0].levels);
        for (l, g) in leveling.iter().zip(&g04) {
            assert!(g.levels <= l.levels);
        }
        assert!(g04[5].levels < leveling[5].levels);
        // Uniform filters cost more as the tree deepens; Monkey's stay nearly flat.
        let uniform = series(&rows, "leveling, uniform filters");
        assert!(uniform[5].zero_result_lookup_io > uniform[0].zero_result_lookup_io);
    }

    #[test]
    fn bad_sweeps_are_usage_errors_and_the_plot_is_written() {
        for argv in [
            vec!["--sweep", "memory", "--points", "1"],
            vec!["--sweep", "lookups", "--to", "1.5"],
            vec!["--sweep", "size-ratio", "--from", "1"],
            vec!["--sweep", "memory", "--from", "5", "--to", "2"],
            vec!["--sweep", "entries", "--workload", "lookups=x"],
        ] {
            let mut out = Vec::new();
            assert!(run(&args(&argv), &mut out).is_err(), "{argv:?}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        // A million entries (the entries sweep sets its own): the tuned designs' replays build a
        // tree at every flush and merge, a few files here where the default hundred million make
        // hundreds and took minutes in a test build.
        for sweep in ["memory", "size-ratio", "entries", "entry-size", "lookups"] {
            let path = dir.path().join(format!("{sweep}.svg"));
            let sweep_args = ["--sweep", sweep, "--points", "5", "--entries", "1e6"];
            let mut out = Vec::new();
            let mut with_svg = sweep_args.to_vec();
            with_svg.extend(["--svg", path.to_str().expect("UTF-8")]);
            run(&args(&with_svg), &mut out).expect("sweep");
            let svg = std::fs::read_to_string(&path).expect("written");
            assert!(svg.starts_with("<svg"), "{sweep}");
            let first = rows(&args(&sweep_args)).expect("sweep");
            assert!(
                svg.contains(first[0].series.as_str()),
                "{sweep}: the legend names {}",
                first[0].series
            );
            let text = String::from_utf8(out).expect("UTF-8");
            assert!(text.lines().count() > 5, "{sweep}: {text}");
        }
    }
}
