//! SVG plots (plotters): the comparison of median throughput per phase and configuration, and
//! the time series of throughput and average filter bits per key over a run (the shape of the
//! Mnemosyne paper's Fig. 11).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::compare::MedianRow;
use super::report::SeriesPoint;
use super::workload::Workload;
use crate::error::{CliError, CliResult};

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn plot_error(path: &Path, error: impl std::fmt::Display) -> CliError {
    CliError::io(
        format!("drawing {}", path.display()),
        std::io::Error::other(error.to_string()),
    )
}

/// `name.svg` → `name-series.svg`.
pub fn series_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "plot".to_string(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-series.svg"))
}

/// Grouped bars: one group per phase, one bar per configuration, height = median ops/s.
pub fn draw_comparison(path: &Path, rows: &[MedianRow]) -> CliResult<()> {
    let mut phases: Vec<Workload> = Vec::new();
    let mut configurations: Vec<&str> = Vec::new();
    for row in rows {
        if !phases.contains(&row.phase) {
            phases.push(row.phase);
        }
        if !configurations.contains(&row.configuration.as_str()) {
            configurations.push(&row.configuration);
        }
    }
    let top = rows.iter().map(|r| r.ops_per_sec).fold(1.0, f64::max) * 1.15;
    let slots = (configurations.len() + 1) as f64;
    let width = phases.len() as f64 * slots;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("median throughput per phase", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..width, 0.0..top)
        .map_err(|e| plot_error(path, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ops/s")
        .draw()
        .map_err(|e| plot_error(path, e))?;
    for (c, configuration) in configurations.iter().enumerate() {
        let color = PALETTE[c % PALETTE.len()];
        let bars: Vec<Rectangle<(f64, f64)>> = rows
            .iter()
            .filter(|r| r.configuration == *configuration)
            .filter_map(|r| {
                let p = phases.iter().position(|&phase| phase == r.phase)? as f64;
                let x = p * slots + c as f64 + 0.5;
                Some(Rectangle::new(
                    [(x, 0.0), (x + 0.9, r.ops_per_sec)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(|e| plot_error(path, e))?
            .label(*configuration)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    for (p, phase) in phases.iter().enumerate() {
        let x = p as f64 * slots + slots / 2.0;
        chart
            .draw_series(std::iter::once(Text::new(
                phase.name(),
                (x - 0.8, top * 0.02),
                ("sans-serif", 15),
            )))
            .map_err(|e| plot_error(path, e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| plot_error(path, e))?;
    root.present().map_err(|e| plot_error(path, e))
}

/// Two panels over the operations of the first run: throughput, and the tree's average bits
/// per key, one line per (configuration, phase).
pub fn draw_series(path: &Path, points: &[SeriesPoint]) -> CliResult<()> {
    let first_run: Vec<&SeriesPoint> = points.iter().filter(|p| p.run == 1).collect();
    let mut lines: Vec<(String, Workload)> = Vec::new();
    for point in &first_run {
        let key = (point.configuration.clone(), point.phase);
        if !lines.contains(&key) {
            lines.push(key);
        }
    }
    let max_ops = first_run
        .iter()
        .map(|p| p.ops_done)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let max_throughput = first_run.iter().map(|p| p.ops_per_sec).fold(1.0, f64::max) * 1.1;
    let max_bits = first_run
        .iter()
        .filter_map(|p| p.avg_bits_per_key)
        .fold(1.0, f64::max)
        * 1.2;
    let root = SVGBackend::new(path, (960, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(path, e))?;
    let (upper, lower) = root.split_vertically(360);
    let mut throughput = ChartBuilder::on(&upper)
        .caption("throughput over the run (run 1)", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..max_ops, 0.0..max_throughput)
        .map_err(|e| plot_error(path, e))?;
    throughput
        .configure_mesh()
        .y_desc("ops/s")
        .draw()
        .map_err(|e| plot_error(path, e))?;
    let mut bits = ChartBuilder::on(&lower)
        .caption("average filter bits per key", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..max_ops, 0.0..max_bits)
        .map_err(|e| plot_error(path, e))?;
    bits.configure_mesh()
        .x_desc("operations into the phase")
        .y_desc("bits/key")
        .draw()
        .map_err(|e| plot_error(path, e))?;
    for (i, (configuration, phase)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mine: Vec<&&SeriesPoint> = first_run
            .iter()
            .filter(|p| &p.configuration == configuration && p.phase == *phase)
            .collect();
        let label = format!("{configuration} {}", phase.name());
        throughput
            .draw_series(LineSeries::new(
                mine.iter().map(|p| (p.ops_done as f64, p.ops_per_sec)),
                color,
            ))
            .map_err(|e| plot_error(path, e))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        bits.draw_series(LineSeries::new(
            mine.iter()
                .filter_map(|p| Some((p.ops_done as f64, p.avg_bits_per_key?))),
            color,
        ))
        .map_err(|e| plot_error(path, e))?;
    }
    throughput
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| plot_error(path, e))?;
    root.present().map_err(|e| plot_error(path, e))
}
