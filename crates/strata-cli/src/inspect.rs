//! `strata inspect DB`: the tree file by file — levels, runs, each table's entries, bytes, filter
//! bits per key (on disk, and in use by lookups) and key range, and Merlin's access estimates (DESIGN.md §4) beside the naive
//! baseline's — under a header comparing the tree's average bits per key with the filter
//! allocator's budget and cap (DESIGN.md §3).
//!
//! The command opens the database read-only (`Db::open_read_only`), reads `Db::version()` and
//! `Db::stats()`, and closes it. A read-only open writes nothing: the tree printed is the tree on
//! disk (a non-empty WAL is replayed into memory, not flushed into a level-0 file), inspecting
//! never reshapes it, and Merlin's statistics are read from the `ACCESS` file but not saved
//! back. It works beside a process that has the database open.
//!
//! The filter allocator is an open-time option, not stored in the database: the header shows the
//! allocator given on the command line (`--filter-policy`, `--bits-per-key`), which should be the
//! one the database is written with. Files keep the bits per key they were written with whatever
//! it is.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use strata::alloc::FilterAllocator;
use strata::compaction::Manual;
use strata::version::{FileMetadata, Version};
use strata::{AccessEstimate, Db, Options, Stats};

use crate::commands::check_is_database;
use crate::error::{CliError, CliResult};
use crate::policies::{CompactionKind, FilterAllocatorKind, FilterSettings};

/// How `inspect` opens the database.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InspectOptions {
    /// Open with `Options::access_statistics(true)`: estimates saved in the ACCESS file are
    /// restored and shown.
    pub access_statistics: bool,
    /// The filter allocator named in the header.
    pub filter_policy: FilterAllocatorKind,
    /// The allocator's budget in bits per key.
    pub bits_per_key: f64,
}

fn allocator(options: &InspectOptions) -> CliResult<Arc<dyn FilterAllocator>> {
    // A read-only open allocates no filter: the allocator only names itself and its budget and
    // cap in the header. Monkey's tree prediction plays no part, so it gets a minimal one.
    Ok(options.filter_policy.build(&FilterSettings {
        bits_per_key: options.bits_per_key,
        compaction: CompactionKind::Leveling,
        size_ratio: 10.0,
        expected_entries: 1,
        buffer_entries: 1,
        budget_bytes: None,
        disk_modules: None,
    })?)
}

/// Merlin's or the naive baseline's estimate for one file (DESIGN.md §4): `q` probes, `x` of them
/// found their key in the file, `z = q - x` zero-result probes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EstimateReport {
    /// Probes: point lookups that reached the file.
    pub q: f64,
    /// Probes that found their key in the file.
    pub x: f64,
    /// Zero-result probes (the ones a filter saves).
    pub z: f64,
}

impl From<AccessEstimate> for EstimateReport {
    fn from(estimate: AccessEstimate) -> Self {
        EstimateReport {
            q: estimate.q,
            x: estimate.x,
            z: estimate.z,
        }
    }
}

/// One table file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    /// File number (the file is `{number:06}.sst`).
    pub number: u64,
    /// Entries, tombstones and overwritten versions included.
    pub entries: u64,
    /// Size on disk.
    pub bytes: u64,
    /// Bits per key of the file's filter (0 = none).
    pub bits_per_key: f64,
    /// Bits per key of the filter that lookups use now (`Db::filter_bits_in_use`): 0 for a
    /// skipped filter, fewer than `bits_per_key` where elastic filters keep modules out of use.
    pub bits_per_key_in_use: f64,
    /// Bytes of the filter block.
    pub filter_bytes: u64,
    /// Smallest user key, printable (see [`printable_key`]).
    pub smallest_key: String,
    /// Largest user key, printable.
    pub largest_key: String,
    /// Merlin's estimate; `None` when the database is opened without access statistics.
    pub merlin: Option<EstimateReport>,
    /// The naive baseline's estimate (counters since the file was written).
    pub naive: Option<EstimateReport>,
}

/// One sorted run and its subtotals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Run id (a larger id is newer).
    pub id: u64,
    /// Entries in the run's files.
    pub entries: u64,
    /// Bytes of the run's files.
    pub bytes: u64,
    /// Entry-weighted mean bits per key of the run's filters.
    pub bits_per_key: f64,
    /// The run's files in key order.
    pub files: Vec<FileReport>,
}

/// One non-empty level and its subtotals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelReport {
    /// Level index (0 = flushed runs).
    pub level: usize,
    /// Entries in the level's files.
    pub entries: u64,
    /// Bytes of the level's files.
    pub bytes: u64,
    /// Entry-weighted mean bits per key of the level's filters.
    pub bits_per_key: f64,
    /// The level's runs, newest first.
    pub runs: Vec<RunReport>,
}

/// Everything `inspect` prints, as text or JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectReport {
    /// The filter allocator's name (`Stats::filter_allocator`).
    pub filter_allocator: String,
    /// The allocator's budget in bits per key.
    pub bits_per_key_budget: f64,
    /// The budget guard's cap, `None` for allocators without one.
    pub bits_per_key_cap: Option<f64>,
    /// Entry-weighted mean bits per key of all filters at their real size.
    pub average_bits_per_key: f64,
    /// The same with filters the allocator skips counted as 0 bits.
    pub effective_bits_per_key: f64,
    /// `average - budget`: positive over, negative under.
    pub average_over_budget_bits_per_key: f64,
    /// `effective - budget`.
    pub effective_over_budget_bits_per_key: f64,
    /// `average - cap`, `None` without a cap.
    pub average_over_cap_bits_per_key: Option<f64>,
    /// `effective - cap`, `None` without a cap.
    pub effective_over_cap_bits_per_key: Option<f64>,
    /// True if the database was opened with access statistics.
    pub access_statistics: bool,
    /// Memory of the access statistics (0 when off).
    pub access_statistics_bytes: u64,
    /// Entries in all table files (the sum of the levels').
    pub entries: u64,
    /// Bytes of all table files.
    pub bytes: u64,
    /// Non-empty levels, top down.
    pub levels: Vec<LevelReport>,
}

/// Bytes as text: valid UTF-8 as is, except `\` as `\\` and control characters as `\xNN`
/// (ASCII) or `\u{NN}`; every byte of an invalid sequence as `\xNN`. Distinct keys stay
/// distinct.
pub fn printable_key(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_ascii_control() {
                text.push_str(&format!("\\x{:02x}", u32::from(c)));
            } else if c == '\\' || c.is_control() {
                text.extend(c.escape_default());
            } else {
                text.push(c);
            }
        }
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// `sum(bits_per_key * entries) / sum(entries)`, 0 for no entries.
fn weighted_bits_per_key(bits_and_entries: impl Iterator<Item = (f64, u64)>) -> f64 {
    let (bits, entries) = bits_and_entries.fold((0.0, 0u64), |(bits, entries), (b, e)| {
        (bits + b * e as f64, entries + e)
    });
    if entries == 0 {
        0.0
    } else {
        bits / entries as f64
    }
}

fn file_report(file: &FileMetadata, in_use: &BTreeMap<u64, f64>) -> FileReport {
    FileReport {
        number: file.number(),
        entries: file.entries(),
        bytes: file.file_bytes(),
        bits_per_key: file.bits_per_key(),
        bits_per_key_in_use: in_use
            .get(&file.number())
            .copied()
            .unwrap_or_else(|| file.bits_per_key()),
        filter_bytes: file.filter_bytes(),
        smallest_key: printable_key(file.smallest_user_key()),
        largest_key: printable_key(file.largest_user_key()),
        merlin: file.state().access_estimate().map(EstimateReport::from),
        naive: file
            .state()
            .naive_access_estimate()
            .map(EstimateReport::from),
    }
}

/// The report for a version, the stats read with it and the bits per key in use of its files
/// (`Db::filter_bits_in_use`; a file missing there is taken as using its whole filter).
pub fn build_report(
    version: &Version,
    stats: &Stats,
    in_use: &BTreeMap<u64, f64>,
    access_statistics: bool,
) -> InspectReport {
    let levels: Vec<LevelReport> = version
        .levels()
        .iter()
        .enumerate()
        .filter(|(_, level)| !level.is_empty())
        .map(|(index, level)| {
            let runs: Vec<RunReport> = level
                .runs()
                .iter()
                .map(|run| {
                    let files: Vec<FileReport> =
                        run.files().iter().map(|f| file_report(f, in_use)).collect();
                    RunReport {
                        id: run.id(),
                        entries: files.iter().map(|f| f.entries).sum(),
                        bytes: files.iter().map(|f| f.bytes).sum(),
                        bits_per_key: weighted_bits_per_key(
                            files.iter().map(|f| (f.bits_per_key, f.entries)),
                        ),
                        files,
                    }
                })
                .collect();
            let files = || runs.iter().flat_map(|run| &run.files);
            LevelReport {
                level: index,
                entries: runs.iter().map(|r| r.entries).sum(),
                bytes: runs.iter().map(|r| r.bytes).sum(),
                bits_per_key: weighted_bits_per_key(files().map(|f| (f.bits_per_key, f.entries))),
                runs,
            }
        })
        .collect();
    let budget = stats.bits_per_key_budget;
    let cap = stats.bits_per_key_cap;
    InspectReport {
        filter_allocator: stats.filter_allocator.clone(),
        bits_per_key_budget: budget,
        bits_per_key_cap: cap,
        average_bits_per_key: stats.average_bits_per_key,
        effective_bits_per_key: stats.effective_bits_per_key,
        average_over_budget_bits_per_key: stats.average_bits_per_key - budget,
        effective_over_budget_bits_per_key: stats.effective_bits_per_key - budget,
        average_over_cap_bits_per_key: cap.map(|cap| stats.average_bits_per_key - cap),
        effective_over_cap_bits_per_key: cap.map(|cap| stats.effective_bits_per_key - cap),
        access_statistics,
        access_statistics_bytes: stats.access_statistics_bytes,
        entries: levels.iter().map(|l| l.entries).sum(),
        bytes: levels.iter().map(|l| l.bytes).sum(),
        levels,
    }
}

/// `+0.50` / `-1.25`.
fn signed(value: f64) -> String {
    format!("{value:+.2}")
}

fn estimate_columns(estimate: Option<EstimateReport>) -> String {
    match estimate {
        Some(e) => format!("{:>9.1} {:>9.1} {:>9.1}", e.q, e.x, e.z),
        None => format!("{:>9} {:>9} {:>9}", "-", "-", "-"),
    }
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn entries(count: u64) -> String {
    format!("{count} {}", if count == 1 { "entry" } else { "entries" })
}

/// Writes the report as text.
pub fn write_text(report: &InspectReport, out: &mut dyn Write) -> std::io::Result<()> {
    let cap = match report.bits_per_key_cap {
        Some(cap) => format!("cap {cap:.2}"),
        None => "no cap".into(),
    };
    writeln!(
        out,
        "filters: {} — budget {:.2} bits/key, {cap}",
        report.filter_allocator, report.bits_per_key_budget
    )?;
    let versus = |value: f64, over_cap: Option<f64>| {
        let mut text = format!(
            "{value:.2} ({} vs budget",
            signed(value - report.bits_per_key_budget)
        );
        if let Some(over_cap) = over_cap {
            text.push_str(&format!(", {} vs cap", signed(over_cap)));
        }
        text.push(')');
        text
    };
    writeln!(
        out,
        "bits/key: actual {}; skipped filters as 0: {}",
        versus(
            report.average_bits_per_key,
            report.average_over_cap_bits_per_key
        ),
        versus(
            report.effective_bits_per_key,
            report.effective_over_cap_bits_per_key
        )
    )?;
    if report.access_statistics {
        writeln!(
            out,
            "access statistics: on, {} bytes",
            report.access_statistics_bytes
        )?;
    } else {
        writeln!(
            out,
            "access statistics: off (estimates show -; --access-statistics restores them)"
        )?;
    }
    let run_count: usize = report.levels.iter().map(|l| l.runs.len()).sum();
    let file_count: usize = report
        .levels
        .iter()
        .flat_map(|l| &l.runs)
        .map(|r| r.files.len())
        .sum();
    writeln!(
        out,
        "tree: {}, {}, {}, {}, {} bytes",
        plural(report.levels.len(), "level", "levels"),
        plural(run_count, "run", "runs"),
        plural(file_count, "file", "files"),
        entries(report.entries),
        report.bytes
    )?;
    if report.levels.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "    {:>8} {:>10} {:>12} {:>8} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  keys",
        "file",
        "entries",
        "bytes",
        "bits/key",
        "in use",
        "filter B",
        "merlin q",
        "x",
        "z",
        "naive q",
        "x",
        "z"
    )?;
    for level in &report.levels {
        writeln!(
            out,
            "level {}: {}, {}, {} bytes, {:.2} bits/key",
            level.level,
            plural(level.runs.len(), "run", "runs"),
            entries(level.entries),
            level.bytes,
            level.bits_per_key
        )?;
        for run in &level.runs {
            writeln!(
                out,
                "  run {}: {}, {}, {} bytes, {:.2} bits/key",
                run.id,
                plural(run.files.len(), "file", "files"),
                entries(run.entries),
                run.bytes,
                run.bits_per_key
            )?;
            for file in &run.files {
                writeln!(
                    out,
                    "    {:>8} {:>10} {:>12} {:>8.2} {:>6.2} {:>10} {} {}  {} .. {}",
                    format!("{:06}", file.number),
                    file.entries,
                    file.bytes,
                    file.bits_per_key,
                    file.bits_per_key_in_use,
                    file.filter_bytes,
                    estimate_columns(file.merlin),
                    estimate_columns(file.naive),
                    file.smallest_key,
                    file.largest_key
                )?;
            }
        }
    }
    Ok(())
}

/// `strata inspect DB`: opens the database, prints its tree (text, or JSON with `json`), closes.
pub fn inspect(
    path: &Path,
    options: &InspectOptions,
    json: bool,
    out: &mut dyn Write,
) -> CliResult<()> {
    check_is_database(path)?;
    let db_options = Options::default()
        .create_if_missing(false)
        .access_statistics(options.access_statistics)
        .filter_allocator(allocator(options)?)
        .compaction_policy(Arc::new(Manual));
    // Asked for, or needed by the allocator (Mnemosyne+).
    let access_statistics = db_options.keeps_access_statistics();
    let db = Db::open_read_only(path, db_options)?;
    let report = build_report(
        &db.version(),
        &db.stats(),
        &db.filter_bits_in_use(),
        access_statistics,
    );
    db.close()?;
    let write_error = |e| CliError::io("writing to stdout", e);
    if json {
        serde_json::to_writer_pretty(&mut *out, &report)
            .map_err(|e| CliError::io("writing to stdout", e.into()))?;
        writeln!(out).map_err(write_error)
    } else {
        write_text(&report, out).map_err(write_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_key_escapes_invalid_utf8_backslashes_and_control_characters() {
        assert_eq!(printable_key(b"key42"), "key42");
        assert_eq!(printable_key("clé".as_bytes()), "clé");
        assert_eq!(printable_key(b"a\xffb\x00"), "a\\xffb\\x00");
        assert_eq!(printable_key(b"\\xff"), "\\\\xff");
        assert_eq!(printable_key(b"tab\there"), "tab\\x09here");
        assert_eq!(printable_key("nel\u{85}".as_bytes()), "nel\\u{85}");
    }

    #[test]
    fn weighted_bits_per_key_weights_by_entries() {
        assert_eq!(weighted_bits_per_key(std::iter::empty()), 0.0);
        assert_eq!(weighted_bits_per_key([(10.0, 0)].into_iter()), 0.0);
        let mean = weighted_bits_per_key([(10.0, 300), (2.0, 100)].into_iter());
        assert!((mean - 8.0).abs() < 1e-12, "{mean}");
    }
}
