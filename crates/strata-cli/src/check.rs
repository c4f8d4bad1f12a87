//! `strata check` and `strata repair`: the engine's [`strata::check`] and [`strata::repair`]
//! with a printed (or JSON) report.
//!
//! `check` only reads: it neither opens the database nor takes its lock. Damage found is a
//! normal outcome that scripts test for, like `get` of an absent key: exit code 1 (with the
//! report on stdout and a one-line verdict on stderr); 2 stays for a check that could not run.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};
use strata::{CheckReport, Options, Problem, RepairMode, RepairReport};

use crate::error::{CliError, CliResult};

fn existing_directory(db: &Path) -> CliResult<()> {
    if !db.exists() {
        return Err(CliError::NoDatabase(db.to_path_buf()));
    }
    if !db.is_dir() {
        return Err(CliError::NotADatabase(db.to_path_buf()));
    }
    Ok(())
}

fn write_out(out: &mut dyn Write, text: &str) -> CliResult<()> {
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::io("writing to stdout", e))
}

fn problem_json(problem: &Problem) -> Value {
    json!({
        "file": problem.file.display().to_string(),
        "offset": problem.offset,
        "severity": problem.severity.to_string(),
        "message": problem.message,
    })
}

fn check_json(report: &CheckReport) -> Value {
    json!({
        "sound": report.is_sound(),
        "errors": report.errors(),
        "warnings": report.warnings(),
        "manifest_records": report.manifest_records,
        "tables": report.tables,
        "blocks": report.blocks,
        "entries": report.entries,
        "wal_files": report.wal_files,
        "wal_records": report.wal_records,
        "problems": report.problems.iter().map(problem_json).collect::<Vec<_>>(),
    })
}

fn check_text(report: &CheckReport) -> String {
    let mut text = String::new();
    for problem in &report.problems {
        text.push_str(&format!("{problem}\n"));
    }
    text.push_str(&format!(
        "checked {} manifest records, {} tables ({} blocks, {} entries), {} WAL files ({} \
         records): {} errors, {} warnings\n",
        report.manifest_records,
        report.tables,
        report.blocks,
        report.entries,
        report.wal_files,
        report.wal_records,
        report.errors(),
        report.warnings()
    ));
    text
}

/// True if `db` holds any of a database's own files (`CURRENT`, a manifest, a table): a
/// directory without them is not a damaged database but none at all (exit code 2, as for the
/// other commands).
fn has_database_files(db: &Path) -> CliResult<bool> {
    let entries =
        std::fs::read_dir(db).map_err(|e| CliError::io(format!("listing {}", db.display()), e))?;
    Ok(entries.filter_map(Result::ok).any(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        name == "CURRENT" || name.starts_with("MANIFEST-") || name.ends_with(".sst")
    }))
}

/// `strata check DB [--json]`: prints every problem and a summary; `Err(Damaged)` (exit code 1)
/// when any problem is an error.
pub fn check(db: &Path, json: bool, out: &mut dyn Write) -> CliResult<()> {
    existing_directory(db)?;
    if !has_database_files(db)? {
        return Err(CliError::NotADatabase(db.to_path_buf()));
    }
    let report = strata::check(db, &Options::default())?;
    let text = if json {
        format!("{:#}\n", check_json(&report))
    } else {
        let mut text = check_text(&report);
        text.push_str(if report.is_sound() {
            "sound\n"
        } else {
            "DAMAGED (`strata repair` rebuilds the manifest from the sound files)\n"
        });
        text
    };
    write_out(out, &text)?;
    if report.is_sound() {
        Ok(())
    } else {
        Err(CliError::Damaged(format!(
            "{} is damaged: {} errors",
            db.display(),
            report.errors()
        )))
    }
}

/// `strata repair DB [--json] [--always]`.
pub fn repair(db: &Path, json: bool, always: bool, out: &mut dyn Write) -> CliResult<()> {
    existing_directory(db)?;
    let mode = if always {
        RepairMode::Always
    } else {
        RepairMode::IfDamaged
    };
    let report = strata::repair(db, &Options::default(), mode)?;
    let text = if json {
        format!("{:#}\n", repair_json(&report))
    } else {
        repair_text(&report)
    };
    write_out(out, &text)
}

fn repair_json(report: &RepairReport) -> Value {
    json!({
        "repaired": report.repaired,
        "before": check_json(&report.before),
        "kept_tables": report.kept_tables.iter().map(|t| json!({
            "number": t.number,
            "entries": t.entries,
            "smallest_sequence": t.smallest_sequence,
            "largest_sequence": t.largest_sequence,
        })).collect::<Vec<_>>(),
        "kept_entries": report.kept_entries,
        "set_aside": report.set_aside.iter().map(|s| json!({
            "file": s.file.display().to_string(),
            "moved_to": s.moved_to.display().to_string(),
            "reason": s.reason,
        })).collect::<Vec<_>>(),
        "wal_records_replayed": report.wal_records_replayed,
        "wal_bytes_dropped": report.wal_bytes_dropped,
        "wal_table": report.wal_table,
        "manifest": report.manifest.as_ref().map(|m| m.display().to_string()),
        "last_sequence": report.last_sequence,
        "ordering_conflicts": report.ordering_conflicts,
    })
}

fn repair_text(report: &RepairReport) -> String {
    let mut text = String::from("before:\n");
    text.push_str(&check_text(&report.before));
    if !report.repaired {
        text.push_str("sound: nothing to repair (--always rebuilds the manifest anyway)\n");
        return text;
    }
    text.push_str(&format!(
        "kept {} tables ({} entries), newest first: {}\n",
        report.kept_tables.len(),
        report.kept_entries,
        report
            .kept_tables
            .iter()
            .map(|t| format!("{:06}.sst", t.number))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    text.push_str(&format!(
        "replayed {} WAL records{}; dropped {} WAL bytes after damage\n",
        report.wal_records_replayed,
        report
            .wal_table
            .map_or(String::new(), |n| format!(" into {n:06}.sst")),
        report.wal_bytes_dropped
    ));
    for aside in &report.set_aside {
        text.push_str(&format!(
            "set aside {} -> {}: {}\n",
            aside.file.display(),
            aside.moved_to.display(),
            aside.reason
        ));
    }
    if report.ordering_conflicts > 0 {
        text.push_str(&format!(
            "warning: {} tables disagree on which holds the newer versions; ordered by largest \
             sequence number\n",
            report.ordering_conflicts
        ));
    }
    if let Some(manifest) = &report.manifest {
        text.push_str(&format!(
            "wrote {} (last sequence {}); CURRENT names it\n",
            manifest.display(),
            report.last_sequence
        ));
    }
    text
}
