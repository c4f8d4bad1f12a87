//! Comparisons: medians over `--runs` per (configuration, phase) and ratios against the first
//! configuration, printed as a table and written to the JSON's `medians`.

use std::io::{self, Write};

use serde::Serialize;

use super::report::{optional, PhaseResult};
use super::workload::Workload;
use super::Variant;

/// Medians of one configuration's phase over all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MedianRow {
    /// `engine/filter_policy/compaction`.
    pub configuration: String,
    /// The engine.
    pub engine: &'static str,
    /// The filter policy.
    pub filter_policy: &'static str,
    /// The merge policy.
    pub compaction: &'static str,
    /// The phase.
    pub phase: Workload,
    /// Which occurrence of `phase` in the workload list (1-based): `--workloads
    /// load,readmissing,overwrite,readmissing` has two `readmissing` phases, compared apart.
    pub occurrence: usize,
    /// Runs the medians are taken over.
    pub runs: usize,
    /// Median operations per second.
    pub ops_per_sec: f64,
    /// `ops_per_sec` / the first configuration's median for the same phase.
    pub ops_per_sec_ratio: Option<f64>,
    /// Median p50 latency, microseconds.
    pub latency_p50_us: f64,
    /// Median p99 latency, microseconds.
    pub latency_p99_us: f64,
    /// Median data blocks read per operation.
    pub data_io_per_op: Option<f64>,
    /// `data_io_per_op` / the first configuration's.
    pub data_io_ratio: Option<f64>,
    /// Median index blocks read per operation.
    pub index_io_per_op: Option<f64>,
    /// Median filter blocks read per operation.
    pub filter_io_per_op: Option<f64>,
    /// Median filter false positives per point lookup.
    pub false_positives_per_lookup: Option<f64>,
    /// Median unnecessary data-block reads per point lookup (where the engine counts a range,
    /// its lower end).
    pub unnecessary_data_reads_per_lookup: Option<f64>,
    /// `unnecessary_data_reads_per_lookup` / the first configuration's.
    pub unnecessary_data_reads_ratio: Option<f64>,
    /// Median upper end of the range, where the engine counts one (RocksDB).
    pub unnecessary_data_reads_max_per_lookup: Option<f64>,
    /// Median write amplification (with `--settle`, including the settle after the phase).
    pub write_amp: Option<f64>,
    /// Median write amplification of the phase alone, before the settle after it (`None` if no
    /// settle followed it).
    pub write_amp_before_settle: Option<f64>,
    /// Median time writers spent in write stalls, milliseconds.
    pub write_stall_ms: Option<f64>,
}

/// The median of the values, `None` if any run could not report one.
fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut values: Vec<f64> = values.collect::<Option<Vec<f64>>>()?;
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    })
}

fn ratio(value: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (value, base) {
        (Some(value), Some(base)) if base > 0.0 => Some(value / base),
        _ => None,
    }
}

/// Medians per (configuration, phase), configurations in the order given, phases in run order;
/// ratios against the first configuration.
pub fn medians(variants: &[Variant], results: &[PhaseResult]) -> Vec<MedianRow> {
    // A phase is its workload and its occurrence in the run's sequence (results are in run
    // order, so the n-th result of a workload in one configuration's run is its n-th phase).
    let mut seen: Vec<(&str, usize, Workload)> = Vec::new();
    let keyed: Vec<((Workload, usize), &PhaseResult)> = results
        .iter()
        .map(|result| {
            let key = (result.configuration.as_str(), result.run, result.phase);
            let occurrence = 1 + seen.iter().filter(|&&earlier| earlier == key).count();
            seen.push(key);
            ((result.phase, occurrence), result)
        })
        .collect();
    let mut phases: Vec<(Workload, usize)> = Vec::new();
    for (phase, _) in &keyed {
        if !phases.contains(phase) {
            phases.push(*phase);
        }
    }
    let mut rows: Vec<MedianRow> = Vec::new();
    for variant in variants {
        let label = variant.label();
        for &(phase, occurrence) in &phases {
            let runs: Vec<&PhaseResult> = keyed
                .iter()
                .filter(|(key, r)| r.configuration == label && *key == (phase, occurrence))
                .map(|(_, r)| *r)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let of = |f: &dyn Fn(&PhaseResult) -> Option<f64>| median(runs.iter().map(|r| f(r)));
            rows.push(MedianRow {
                configuration: label.clone(),
                engine: variant.engine.name(),
                filter_policy: variant.filter_policy.name(),
                compaction: variant.compaction.name(),
                phase,
                occurrence,
                runs: runs.len(),
                ops_per_sec: of(&|r| Some(r.ops_per_sec)).unwrap_or(0.0),
                ops_per_sec_ratio: None,
                latency_p50_us: of(&|r| Some(r.latency_us.p50)).unwrap_or(0.0),
                latency_p99_us: of(&|r| Some(r.latency_us.p99)).unwrap_or(0.0),
                data_io_per_op: of(&|r| r.io_per_op.data),
                data_io_ratio: None,
                index_io_per_op: of(&|r| r.io_per_op.index),
                filter_io_per_op: of(&|r| r.io_per_op.filter),
                false_positives_per_lookup: of(&|r| r.false_positives_per_lookup),
                unnecessary_data_reads_per_lookup: of(&|r| r.unnecessary_data_reads_per_lookup),
                unnecessary_data_reads_ratio: None,
                unnecessary_data_reads_max_per_lookup: of(&|r| {
                    r.unnecessary_data_reads_max_per_lookup
                }),
                write_amp: of(&|r| r.write_amp),
                write_amp_before_settle: of(&|r| r.write_amp_before_settle),
                write_stall_ms: of(&|r| r.write_stall_ms),
            });
        }
    }
    let Some(first) = variants.first().map(Variant::label) else {
        return rows;
    };
    type Bases = ((Workload, usize), f64, Option<f64>, Option<f64>);
    let bases: Vec<Bases> = rows
        .iter()
        .filter(|r| r.configuration == first)
        .map(|r| {
            (
                (r.phase, r.occurrence),
                r.ops_per_sec,
                r.data_io_per_op,
                r.unnecessary_data_reads_per_lookup,
            )
        })
        .collect();
    for row in &mut rows {
        let key = (row.phase, row.occurrence);
        if let Some(&(_, ops, data, unnecessary)) = bases.iter().find(|b| b.0 == key) {
            row.ops_per_sec_ratio = ratio(Some(row.ops_per_sec), Some(ops));
            row.data_io_ratio = ratio(row.data_io_per_op, data);
            row.unnecessary_data_reads_ratio =
                ratio(row.unnecessary_data_reads_per_lookup, unnecessary);
        }
    }
    rows
}

/// Prints the medians with ratios against the first configuration. `w-amp` includes the settle
/// after a phase where `--settle` ran one, `w-phase` is the phase alone (`-`: no settle followed).
pub fn write_table(out: &mut dyn Write, rows: &[MedianRow], runs: usize) -> io::Result<()> {
    writeln!(
        out,
        "\nmedians of {runs} run(s); ratios against {}",
        rows.first().map_or("-", |r| r.configuration.as_str())
    )?;
    writeln!(
        out,
        "{:<32} {:<16} {:>10} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>6} {:>7} {:>9}",
        "configuration",
        "phase",
        "ops/s",
        "ratio",
        "p50_us",
        "p99_us",
        "data/op",
        "ratio",
        "idx/op",
        "flt/op",
        "fp/lk",
        "unnec/lk",
        "ratio",
        "w-amp",
        "w-phase",
        "stall_ms"
    )?;
    for row in rows {
        writeln!(
            out,
            "{:<32} {:<16} {:>10.0} {:>7} {:>8.2} {:>8.2} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>6} {:>7} {:>9}",
            row.configuration,
            if row.occurrence > 1 {
                format!("{}#{}", row.phase.name(), row.occurrence)
            } else {
                row.phase.name()
            },
            row.ops_per_sec,
            optional(row.ops_per_sec_ratio, 2),
            row.latency_p50_us,
            row.latency_p99_us,
            optional(row.data_io_per_op, 3),
            optional(row.data_io_ratio, 2),
            optional(row.index_io_per_op, 3),
            optional(row.filter_io_per_op, 3),
            optional(row.false_positives_per_lookup, 4),
            optional(row.unnecessary_data_reads_per_lookup, 4),
            optional(row.unnecessary_data_reads_ratio, 2),
            optional(row.write_amp, 2),
            optional(row.write_amp_before_settle, 2),
            optional(row.write_stall_ms, 1),
        )?;
    }
    write_unnecessary_ranges(out, rows)
}

/// Under the table, for configurations whose engine counts unnecessary reads as a range
/// (RocksDB), the median upper end and the first configuration's ratio against it.
fn write_unnecessary_ranges(out: &mut dyn Write, rows: &[MedianRow]) -> io::Result<()> {
    for row in rows {
        let (Some(low), Some(high)) = (
            row.unnecessary_data_reads_per_lookup,
            row.unnecessary_data_reads_max_per_lookup,
        ) else {
            continue;
        };
        if low == 0.0 && high == 0.0 {
            continue;
        }
        // The first configuration's figure over this one's, at both ends.
        let first = rows
            .iter()
            .find(|r| (r.phase, r.occurrence) == (row.phase, row.occurrence))
            .and_then(|r| r.unnecessary_data_reads_per_lookup);
        writeln!(
            out,
            "{} {}: unnecessary reads per lookup {low:.4} to {high:.4} (median ends); the first configuration's over them: {} to {}",
            row.configuration,
            row.phase.name(),
            optional(ratio(first, Some(low)), 2),
            optional(ratio(first, Some(high)), 2),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_unknown() {
        assert_eq!(
            median([Some(3.0), Some(1.0), Some(2.0)].into_iter()),
            Some(2.0)
        );
        assert_eq!(median([Some(4.0), Some(1.0)].into_iter()), Some(2.5));
        assert_eq!(median([Some(4.0), None].into_iter()), None);
        assert_eq!(median(std::iter::empty()), None);
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
    }
}
