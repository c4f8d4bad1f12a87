//! End-to-end tests of the `strata` binary: the data commands on a temporary database, exit
//! codes, and small `strata bench` runs whose JSON is checked field by field.

use std::path::Path;
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

/// Runs a command that must succeed and returns its stdout.
fn ok(args: &[&str]) -> String {
    let output = strata(args);
    assert!(
        output.status.success(),
        "strata {args:?} failed: {}",
        stderr(&output)
    );
    stdout(&output)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn put_get_delete_scan_stats_round_trip() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let db = path_str(&db);
    ok(&["put", db, "apple", "red"]);
    ok(&["put", db, "banana", "yellow"]);
    ok(&["put", db, "cherry", "dark red"]);
    ok(&["put", db, "banana", "green"]);
    assert_eq!(ok(&["get", db, "banana"]), "green\n");
    assert_eq!(
        ok(&["scan", db]),
        "apple\tred\nbanana\tgreen\ncherry\tdark red\n"
    );
    assert_eq!(
        ok(&["scan", db, "--from", "b", "--to", "cherry"]),
        "banana\tgreen\n"
    );
    assert_eq!(ok(&["scan", db, "--limit", "1"]), "apple\tred\n");
    assert_eq!(
        ok(&["scan", db, "--hex", "--from", "0x63"]),
        "0x636865727279\t0x6461726b20726564\n"
    );

    ok(&["delete", db, "banana"]);
    let missing = strata(&["get", db, "banana"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(ok(&["scan", db]), "apple\tred\ncherry\tdark red\n");

    ok(&["put", db, "--hex", "0x00ff", "0x0102"]);
    assert_eq!(ok(&["get", db, "--hex", "00FF"]), "0x0102\n");

    let stats = ok(&["stats", db]);
    assert!(stats.contains("policy: compaction=leveling"), "{stats}");
    assert!(stats.contains("last sequence"), "{stats}");
}

#[test]
fn get_of_a_missing_key_exits_1_with_a_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let db = path_str(&db);
    ok(&["put", db, "present", "1"]);
    let output = strata(&["get", db, "absent"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("key not found: absent"));
}

#[test]
fn errors_exit_2_with_a_message_and_no_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nowhere = dir.path().join("nowhere");
    let nowhere = path_str(&nowhere);
    let cases: &[&[&str]] = &[
        &["get", nowhere, "k"],
        &["scan", nowhere],
        &["stats", nowhere],
        &["delete", nowhere, "k"],
        &["get", nowhere, "--hex", "xyz"],
        &["bench", "--num", "2000", "--key-size", "3"],
        &["bench", "--num", "100", "--bits-per-key", "-1"],
        &[
            "bench",
            "--num",
            "100",
            "--compaction",
            "tiering",
            "--size-ratio",
            "2.5",
        ],
        &["bench", "--num", "100", "--workloads", "fillrandom,nosuch"],
        &["bench", "--num", "100", "--cache-bytes", "8 parsecs"],
    ];
    for args in cases {
        let output = strata(args);
        assert_eq!(output.status.code(), Some(2), "strata {args:?}");
        let message = stderr(&output);
        assert!(!message.is_empty(), "strata {args:?} printed no error");
        assert!(!message.contains("panicked"), "strata {args:?}: {message}");
    }
    assert!(!Path::new(nowhere).exists(), "only put creates a database");
}

const RESULT_FIELDS: &[&str] = &[
    "engine",
    "phase",
    "ops",
    "ops_per_sec",
    "latency_us",
    "io_per_op",
    "unnecessary_data_reads_per_lookup",
    "false_positives_per_lookup",
    "avg_bits_per_key",
    "bits_per_key_budget",
    "write_amp",
    "levels",
    "runs",
];

const CONFIG_FIELDS: &[&str] = &[
    "workloads",
    "num",
    "reads",
    "key_size",
    "value_size",
    "seed",
    "bits_per_key",
    "cache_bytes",
    "direct_reads",
    "compaction",
    "size_ratio",
    "write_buffer_bytes",
    "seek_nexts",
    "db",
    "json",
    "settle",
    "quick",
];

fn check_results(report: &Value, phases: &[&str]) {
    for field in CONFIG_FIELDS {
        assert!(report["config"].get(field).is_some(), "config.{field}");
    }
    let results = report["results"].as_array().expect("results array");
    assert_eq!(results.len(), phases.len());
    for (result, phase) in results.iter().zip(phases) {
        for field in RESULT_FIELDS {
            assert!(result.get(field).is_some(), "{phase}: missing {field}");
        }
        assert_eq!(result["engine"], "strata");
        assert_eq!(result["phase"], *phase);
        assert_eq!(result["ops"], 2000);
        assert!(result["ops_per_sec"].as_f64().expect("number") > 0.0);
        for field in ["p50", "p99", "p999", "mean"] {
            let latency = result["latency_us"][field].as_f64().expect("number");
            assert!(latency > 0.0, "{phase}: latency_us.{field} = {latency}");
        }
        for field in ["data", "index", "filter"] {
            assert!(result["io_per_op"][field].as_f64().expect("number") >= 0.0);
        }
        assert_eq!(result["bits_per_key_budget"].as_f64(), Some(10.0));
    }
}

#[test]
fn tiny_bench_writes_one_json_result_per_phase() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let output = ok(&["bench", "--num", "2000", "--json", path_str(&json)]);
    assert!(output.contains("summary"), "{output}");
    let text = std::fs::read_to_string(&json).expect("JSON written");
    let report: Value = serde_json::from_str(&text).expect("valid JSON");
    check_results(
        &report,
        &["fillrandom", "readrandom", "readmissing", "seekrandom"],
    );
    assert_eq!(report["config"]["num"], 2000);
    assert_eq!(report["config"]["reads"], 2000);
    assert_eq!(report["config"]["seed"], 42);
    assert_eq!(report["config"]["db"], Value::Null);
    assert!(report["results"][0]["write_amp"].as_f64().is_some());
}

#[test]
fn bench_on_a_given_db_settles_and_leaves_the_keys_behind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("bench-db");
    let db = path_str(&db);
    // A small write buffer so the keys reach table files and the read phases do block I/O.
    let output = strata(&[
        "bench",
        "--num",
        "2000",
        "--db",
        db,
        "--workloads",
        "fillseq,readrandom,readmissing",
        "--write-buffer-bytes",
        "64KiB",
        "--settle",
        "--json",
        "-",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("stdout is only JSON");
    check_results(&report, &["fillseq", "readrandom", "readmissing"]);
    let results = &report["results"];
    assert!(results[0]["write_amp"].as_f64().expect("number") >= 1.0);
    assert!(results[1]["runs"].as_u64().expect("number") >= 1);
    assert!(results[1]["avg_bits_per_key"].as_f64().expect("number") > 9.0);
    // Lookups of present keys read data blocks; missing keys are mostly stopped by filters.
    assert!(results[1]["io_per_op"]["data"].as_f64().expect("number") > 0.0);
    let false_positives = results[2]["false_positives_per_lookup"]
        .as_f64()
        .expect("number");
    assert!(false_positives < 0.2, "{false_positives}");
    assert!(stderr(&output).contains("tree strata before readrandom"));

    // Values are random bytes (newlines included): --hex keeps one entry per line.
    let first_two = ok(&["scan", db, "--hex", "--limit", "2"]);
    assert_eq!(first_two.lines().count(), 2);
    assert!(first_two.starts_with("0x30303030303030303030303030303030\t0x"));
    let value = strata(&["get", db, "0000000000001999"]);
    assert!(value.status.success());
    assert_eq!(
        strata(&["get", db, "000000000000199."]).status.code(),
        Some(1)
    );
}
