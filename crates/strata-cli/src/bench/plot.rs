//! SVG plots (plotters) of a `strata bench` run:
//!
//! - the comparison (`--plot FILE`): one row per phase, with median ops/s per configuration on
//!   the left and the figure that matters for the phase on the right — data-block reads per
//!   operation with the unnecessary ones (false positives) beside them for phases that read,
//!   write amplification for phases that only write — each bar labelled with its ratio to the
//!   first configuration;
//! - the time series (`FILE-series.svg`): throughput and the tree's average filter bits per key
//!   over the first run, every phase laid end to end on one axis of operations, one line per
//!   configuration (the shape of the Mnemosyne paper's Fig. 11).

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::compare::MedianRow;
use super::report::SeriesPoint;
use super::workload::Workload;
use crate::chart::{count_label, plot_error, thousands, PALETTE};
use crate::error::CliResult;

/// `name.svg` → `name-series.svg`.
pub fn series_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "plot".to_string(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-series.svg"))
}

/// A phase as the comparison tells phases apart: its workload and which occurrence of it.
type PhaseKey = (Workload, usize);

/// One bar: its value, the value it is a ratio of (the first configuration's), and a lighter
/// companion drawn beside it (unnecessary reads beside all reads).
struct Bar {
    value: f64,
    ratio: Option<f64>,
    companion: Option<f64>,
}

/// Draws one panel of bars, one per configuration, each labelled with its ratio.
fn draw_bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    path: &Path,
    title: &str,
    y_desc: &str,
    bars: &[Option<Bar>],
) -> CliResult<()> {
    let top = bars
        .iter()
        .flatten()
        .map(|bar| bar.value.max(bar.companion.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.25 } else { 1.0 };
    let slots = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(8)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..slots, 0.0..top)
        .map_err(|e| plot_error(path, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_desc)
        .y_label_formatter(&|v| thousands(*v))
        .label_style(("sans-serif", 13))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(|e| plot_error(path, e))?;
    for (index, bar) in bars.iter().enumerate() {
        let Some(bar) = bar else { continue };
        let color = PALETTE[index % PALETTE.len()];
        let x = index as f64;
        let (left, width) = match bar.companion {
            Some(_) => (x + 0.1, 0.4),
            None => (x + 0.15, 0.7),
        };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(left, 0.0), (left + width, bar.value)],
                color.filled(),
            )))
            .map_err(|e| plot_error(path, e))?;
        if let Some(companion) = bar.companion {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x + 0.5, 0.0), (x + 0.9, companion)],
                    color.mix(0.35).filled(),
                )))
                .map_err(|e| plot_error(path, e))?;
        }
        let label = match bar.ratio {
            Some(ratio) => format!("{} ({ratio:.2}x)", thousands(bar.value)),
            None => thousands(bar.value),
        };
        chart
            .draw_series(std::iter::once(Text::new(
                label,
                (
                    x + 0.1,
                    bar.value.max(bar.companion.unwrap_or(0.0)) + top * 0.04,
                ),
                ("sans-serif", 12),
            )))
            .map_err(|e| plot_error(path, e))?;
    }
    Ok(())
}

/// The comparison: one row per phase (see the module docs).
pub fn draw_comparison(path: &Path, rows: &[MedianRow]) -> CliResult<()> {
    let mut phases: Vec<PhaseKey> = Vec::new();
    let mut configurations: Vec<&str> = Vec::new();
    for row in rows {
        if !phases.contains(&(row.phase, row.occurrence)) {
            phases.push((row.phase, row.occurrence));
        }
        if !configurations.contains(&row.configuration.as_str()) {
            configurations.push(&row.configuration);
        }
    }
    let legend_rows = configurations.len().div_ceil(3) as u32;
    let header = 40 + 22 * legend_rows;
    let row_height = 260;
    let height = header + row_height * phases.len().max(1) as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let (top, body) = root.split_vertically(header);
    top.draw(&Text::new(
        "medians per phase; ratios against the first configuration",
        (12, 8),
        ("sans-serif", 20),
    ))
    .map_err(|e| plot_error(path, e))?;
    for (index, configuration) in configurations.iter().enumerate() {
        let (column, line) = ((index % 3) as i32, (index / 3) as i32);
        let (x, y) = (12 + column * 360, 38 + line * 22);
        let color = PALETTE[index % PALETTE.len()];
        top.draw(&Rectangle::new([(x, y), (x + 14, y + 12)], color.filled()))
            .map_err(|e| plot_error(path, e))?;
        top.draw(&Text::new(
            configuration.to_string(),
            (x + 20, y),
            ("sans-serif", 14),
        ))
        .map_err(|e| plot_error(path, e))?;
    }
    let panels = body.split_evenly((phases.len().max(1), 2));
    for (p, &(phase, occurrence)) in phases.iter().enumerate() {
        let name = if occurrence > 1 {
            format!("{} #{occurrence}", phase.name())
        } else {
            phase.name()
        };
        let of_phase = |configuration: &str| {
            rows.iter().find(|r| {
                r.phase == phase && r.occurrence == occurrence && r.configuration == configuration
            })
        };
        let throughput: Vec<Option<Bar>> = configurations
            .iter()
            .map(|c| {
                of_phase(c).map(|r| Bar {
                    value: r.ops_per_sec,
                    ratio: r.ops_per_sec_ratio,
                    companion: None,
                })
            })
            .collect();
        draw_bars(
            &panels[2 * p],
            path,
            &format!("{name}: throughput"),
            "ops/s",
            &throughput,
        )?;
        let first = configurations.first().and_then(|c| of_phase(c));
        if phase.is_write() {
            let first_amp = first.and_then(|r| r.write_amp);
            let amplification: Vec<Option<Bar>> = configurations
                .iter()
                .map(|c| {
                    let amp = of_phase(c)?.write_amp?;
                    Some(Bar {
                        value: amp,
                        ratio: first_amp.filter(|&f| f > 0.0).map(|f| amp / f),
                        companion: None,
                    })
                })
                .collect();
            draw_bars(
                &panels[2 * p + 1],
                path,
                &format!("{name}: write amplification"),
                "bytes written / bytes put",
                &amplification,
            )?;
        } else {
            let reads: Vec<Option<Bar>> = configurations
                .iter()
                .map(|c| {
                    let row = of_phase(c)?;
                    Some(Bar {
                        value: row.data_io_per_op?,
                        ratio: row.data_io_ratio,
                        companion: row.unnecessary_data_reads_per_lookup,
                    })
                })
                .collect();
            draw_bars(
                &panels[2 * p + 1],
                path,
                &format!("{name}: data-block reads per op (light: unnecessary, per lookup)"),
                "blocks per op",
                &reads,
            )?;
        }
    }
    root.present().map_err(|e| plot_error(path, e))
}

/// Where each phase of the first run starts on the shared axis: phases in the order they ran,
/// each as long as its longest configuration's. A configuration's points form consecutive
/// segments (a new one when the phase changes or its operation count starts again).
fn segments(points: &[&SeriesPoint]) -> (Vec<(String, u64)>, Vec<usize>) {
    let mut segment_of = Vec::with_capacity(points.len());
    let mut phases: Vec<(String, u64)> = Vec::new();
    let mut current: Option<(&str, Workload, u64, usize)> = None;
    for point in points {
        let index = match current {
            Some((configuration, phase, last_ops, index))
                if configuration == point.configuration
                    && phase == point.phase
                    && point.ops_done > last_ops =>
            {
                index
            }
            Some((configuration, _, _, index)) if configuration == point.configuration => index + 1,
            _ => 0,
        };
        if phases.len() <= index {
            phases.push((point.phase.name(), 0));
        }
        phases[index].1 = phases[index].1.max(point.ops_done);
        segment_of.push(index);
        current = Some((&point.configuration, point.phase, point.ops_done, index));
    }
    (phases, segment_of)
}

/// The time series: two panels over the first run, phases end to end (see the module docs).
pub fn draw_series(path: &Path, points: &[SeriesPoint]) -> CliResult<()> {
    let first_run: Vec<&SeriesPoint> = points.iter().filter(|p| p.run == 1).collect();
    let (phases, segment_of) = segments(&first_run);
    let mut starts = Vec::with_capacity(phases.len());
    let mut total = 0u64;
    for (_, length) in &phases {
        starts.push(total);
        total += length;
    }
    let x_of = |i: usize| (starts[segment_of[i]] + first_run[i].ops_done) as f64;
    let total = total.max(1) as f64;
    let mut configurations: Vec<&str> = Vec::new();
    for point in &first_run {
        if !configurations.contains(&point.configuration.as_str()) {
            configurations.push(&point.configuration);
        }
    }
    let max_throughput = first_run.iter().map(|p| p.ops_per_sec).fold(1.0, f64::max) * 1.2;
    let max_bits = first_run
        .iter()
        .filter_map(|p| p.avg_bits_per_key)
        .fold(1.0, f64::max)
        * 1.3;
    let root = SVGBackend::new(path, (1100, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let (upper, lower) = root.split_vertically(380);
    let panels = [
        (
            upper,
            "throughput over the first run",
            "ops/s",
            max_throughput,
        ),
        (lower, "average filter bits per key", "bits/key", max_bits),
    ];
    for (panel, (area, title, y_desc, top)) in panels.iter().enumerate() {
        let mut chart = ChartBuilder::on(area)
            .caption(*title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(75)
            .build_cartesian_2d(0.0..total, 0.0..*top)
            .map_err(|e| plot_error(path, e))?;
        chart
            .configure_mesh()
            .x_desc("operations, phases end to end")
            .y_desc(*y_desc)
            .x_label_formatter(&|v| count_label(*v))
            .y_label_formatter(&|v| thousands(*v))
            .label_style(("sans-serif", 13))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(|e| plot_error(path, e))?;
        // Phase boundaries and names, inside the plot (clear of the axis labels).
        for ((name, _), &start) in phases.iter().zip(&starts) {
            let x = start as f64;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, 0.0), (x, *top)],
                    BLACK.mix(0.4),
                )))
                .map_err(|e| plot_error(path, e))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (x + total * 0.005, *top * 0.97),
                    ("sans-serif", 13),
                )))
                .map_err(|e| plot_error(path, e))?;
        }
        for (c, configuration) in configurations.iter().enumerate() {
            let color = PALETTE[c % PALETTE.len()];
            for segment in 0..phases.len() {
                let line: Vec<(f64, f64)> = (0..first_run.len())
                    .filter(|&i| {
                        first_run[i].configuration == *configuration && segment_of[i] == segment
                    })
                    .filter_map(|i| {
                        let y = if panel == 0 {
                            Some(first_run[i].ops_per_sec)
                        } else {
                            first_run[i].avg_bits_per_key
                        };
                        Some((x_of(i), y?))
                    })
                    .collect();
                let series = chart
                    .draw_series(LineSeries::new(line, color.stroke_width(2)))
                    .map_err(|e| plot_error(path, e))?;
                if segment == 0 && panel == 1 {
                    series.label(*configuration).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                }
            }
        }
        if panel == 1 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .label_font(("sans-serif", 13))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| plot_error(path, e))?;
        }
    }
    root.present().map_err(|e| plot_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(configuration: &str, phase: Workload, ops_done: u64) -> SeriesPoint {
        SeriesPoint {
            configuration: configuration.into(),
            engine: "strata",
            filter_policy: "uniform",
            compaction: "leveling",
            run: 1,
            phase,
            ops_done,
            seconds: 0.0,
            ops_per_sec: 1.0,
            avg_bits_per_key: None,
            effective_bits_per_key: None,
            predicted_reads_per_lookup: None,
            predicted_reads_per_lookup_new_keys: None,
            predicted_data_reads_per_lookup_without_cache: None,
        }
    }

    /// Phases line up end to end across configurations, a repeated phase is a segment of its
    /// own, and each segment is as long as its longest configuration's.
    #[test]
    fn phases_are_laid_end_to_end() {
        let points = [
            point("a", Workload::Fillrandom, 50),
            point("a", Workload::Fillrandom, 100),
            point("a", Workload::Readmissing, 10),
            point("a", Workload::Readmissing, 20),
            point("a", Workload::Readmissing, 10),
            point("b", Workload::Fillrandom, 120),
            point("b", Workload::Readmissing, 20),
            point("b", Workload::Readmissing, 5),
        ];
        let refs: Vec<&SeriesPoint> = points.iter().collect();
        let (phases, segment_of) = segments(&refs);
        assert_eq!(
            phases,
            [
                ("fillrandom".to_string(), 120),
                ("readmissing".to_string(), 20),
                ("readmissing".to_string(), 10)
            ]
        );
        assert_eq!(segment_of, [0, 0, 1, 1, 2, 0, 1, 2]);
    }
}
