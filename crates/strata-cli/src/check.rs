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
            "salvaged_from": t.salvaged_from,
        })).collect::<Vec<_>>(),
        "salvaged": report.salvaged.iter().map(|s| json!({
            "number": s.number,
            "salvaged_into": s.salvaged_into,
            "damage": s.damage,
            "located_by": s.located_by.map(|l| l.to_string()),
            "entries_kept": s.entries_kept,
            "blocks_kept": s.blocks_kept,
            "blocks_lost": s.blocks_lost,
            "entries_lost": s.entries_lost,
            "lost_block_offsets": s.lost_block_offsets,
            "notes": s.notes,
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
    text.push_str(&salvage_text(report));
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

/// One line per damaged table: what salvage kept and lost, and how it found the blocks.
fn salvage_text(report: &RepairReport) -> String {
    let mut text = String::new();
    for salvaged in &report.salvaged {
        let unknown = || "an unknown number of".to_string();
        text.push_str(&format!(
            "salvaged {:06}.sst{}: kept {} entries in {} blocks; lost {} blocks ({} entries); \
             blocks found by {}\n",
            salvaged.number,
            salvaged
                .salvaged_into
                .map_or(String::new(), |n| format!(" into {n:06}.sst")),
            salvaged.entries_kept,
            salvaged.blocks_kept,
            salvaged.blocks_lost.map_or_else(unknown, |n| n.to_string()),
            salvaged
                .entries_lost
                .map_or_else(unknown, |n| n.to_string()),
            salvaged
                .located_by
                .map_or("nothing (no block was readable)".to_string(), |l| l
                    .to_string()),
        ));
        for note in &salvaged.notes {
            text.push_str(&format!("  {note}\n"));
        }
    }
    if report.salvaged.iter().any(|s| s.entries_lost != Some(0)) {
        text.push_str(
            "note: where a lost block held a key's newest version or tombstone, the newest \
             surviving version (older) is what reads now\n",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::{BlockLocation, SalvagedTable};

    #[test]
    fn the_repair_text_names_each_salvaged_table_with_what_it_kept_and_lost() {
        let report = RepairReport {
            repaired: true,
            salvaged: vec![
                SalvagedTable {
                    number: 7,
                    salvaged_into: Some(12),
                    damage: "block checksum mismatch".into(),
                    located_by: Some(BlockLocation::Index),
                    entries_kept: 900,
                    blocks_kept: 14,
                    blocks_lost: Some(1),
                    entries_lost: Some(64),
                    lost_block_offsets: vec![4096],
                    notes: Vec::new(),
                },
                SalvagedTable {
                    number: 8,
                    salvaged_into: Some(13),
                    damage: "bad magic".into(),
                    located_by: Some(BlockLocation::Framing),
                    entries_kept: 10,
                    blocks_kept: 1,
                    blocks_lost: None,
                    entries_lost: None,
                    lost_block_offsets: Vec::new(),
                    notes: vec!["framing walk stopped at offset 300".into()],
                },
            ],
            ..Default::default()
        };
        let text = repair_text(&report);
        assert!(text.contains(
            "salvaged 000007.sst into 000012.sst: kept 900 entries in 14 blocks; lost 1 blocks \
             (64 entries); blocks found by index\n"
        ), "{text}");
        assert!(text.contains("lost an unknown number of blocks (an unknown number of entries)"));
        assert!(text.contains("  framing walk stopped at offset 300\n"));
        assert!(text.contains("newest surviving version"));
        let json = repair_json(&report);
        assert_eq!(json["salvaged"][0]["entries_lost"].as_u64(), Some(64));
        assert_eq!(json["salvaged"][1]["located_by"].as_str(), Some("framing"));
        assert_eq!(json["salvaged"][1]["blocks_lost"], Value::Null);
    }
}
