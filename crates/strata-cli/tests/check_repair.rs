//! `strata check` and `strata repair` end to end: exit codes, the printed problem (file and
//! offset), the JSON report, and a repaired database that checks sound.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("the strata binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A closed database of a few flushed tables; returns its table files.
fn write_database(path: &Path) -> Vec<PathBuf> {
    let options = strata::Options::default()
        .write_buffer_bytes(4096)
        .target_file_bytes(4096)
        .block_bytes(256);
    let db = strata::Db::open(path, options).expect("open");
    for round in 0..3u32 {
        for i in 0..60u32 {
            db.put(format!("key{i:03}"), format!("value-{round}-{i}-padding"))
                .expect("put");
        }
        db.flush().expect("flush");
    }
    db.put("in-the-wal", "yes").expect("put");
    db.close().expect("close");
    drop(db);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(path)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    tables.sort();
    assert!(!tables.is_empty());
    tables
}

#[test]
fn check_exits_0_when_sound_and_1_with_the_damaged_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().to_str().expect("utf-8 path");
    let tables = write_database(dir.path());

    let output = strata(&["check", db]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("0 errors, 0 warnings"), "{text}");
    assert!(text.ends_with("sound\n"), "{text}");

    let output = strata(&["check", db, "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(report["sound"], Value::Bool(true));
    assert_eq!(report["tables"].as_u64(), Some(tables.len() as u64));
    assert_eq!(report["wal_records"].as_u64(), Some(1));
    assert!(report["problems"].as_array().expect("array").is_empty());

    let damaged = &tables[0];
    let mut bytes = std::fs::read(damaged).expect("read");
    bytes[2] ^= 0x10;
    std::fs::write(damaged, &bytes).expect("write");
    let output = strata(&["check", db]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    let line = format!(
        "error: {} at offset 0: block checksum mismatch",
        damaged.display()
    );
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("1 errors"), "{text}");
    assert!(
        stderr(&output).contains("is damaged: 1 errors"),
        "{}",
        stderr(&output)
    );

    let output = strata(&["check", db, "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(report["sound"], Value::Bool(false));
    let problem = &report["problems"][0];
    assert_eq!(problem["file"].as_str(), damaged.to_str());
    assert_eq!(problem["offset"].as_u64(), Some(0));
    assert_eq!(problem["severity"].as_str(), Some("error"));

    let output = strata(&["repair", db, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(report["repaired"], Value::Bool(true));
    assert_eq!(report["wal_records_replayed"].as_u64(), Some(1));
    let set_aside = report["set_aside"].as_array().expect("array");
    assert!(set_aside
        .iter()
        .any(|s| s["file"].as_str() == damaged.to_str()));
    let name = damaged.file_name().expect("name");
    assert!(dir.path().join("lost").join(name).exists());
    // The damaged first block is lost; the table's other blocks are salvaged into a new table.
    let salvaged = &report["salvaged"][0];
    assert_eq!(salvaged["blocks_lost"].as_u64(), Some(1), "{salvaged}");
    assert_eq!(salvaged["located_by"].as_str(), Some("index"));
    let into = salvaged["salvaged_into"]
        .as_u64()
        .expect("salvaged into a table");
    assert!(report["kept_tables"]
        .as_array()
        .expect("array")
        .iter()
        .any(|t| t["number"].as_u64() == Some(into)));

    let output = strata(&["check", db]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let output = strata(&["repair", db]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stdout(&output).contains("nothing to repair"),
        "{}",
        stdout(&output)
    );
    let output = strata(&["get", db, "in-the-wal"]);
    assert_eq!(stdout(&output), "yes\n");
}

#[test]
fn check_and_repair_of_a_missing_directory_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nothing-here");
    let missing = missing.to_str().expect("utf-8 path");
    for command in ["check", "repair"] {
        let output = strata(&[command, missing]);
        assert_eq!(output.status.code(), Some(2), "{command}");
        assert!(
            stderr(&output).contains("no database"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn check_and_repair_of_a_directory_without_a_database_exit_2_and_leave_it_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("000001.log"), b"not ours").expect("write");
    let path = dir.path().to_str().expect("utf-8 path");
    for command in ["check", "repair"] {
        let output = strata(&[command, path]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            stdout(&output)
        );
        assert!(stderr(&output).contains("not a"), "{}", stderr(&output));
    }
    assert!(dir.path().join("000001.log").exists());
    assert!(!dir.path().join("lost").exists());
    assert!(!dir.path().join("LOCK").exists());
}
