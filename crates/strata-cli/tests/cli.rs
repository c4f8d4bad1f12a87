//! End-to-end tests of the `strata` binary: the data commands on a temporary database, exit
//! codes, `strata inspect` on databases written through the library, and small `strata bench`
//! runs whose JSON is checked field by field.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("the strata binary runs")
}

/// How long a database closed in this process may still look locked to the next open. The lock
/// is an `flock`: a child that another test thread spawns while the database is open shares the
/// lock file's descriptor until its `exec` closes it, which on a busy machine can come after the
/// test has closed the database.
const LOCK_SETTLE_ATTEMPTS: u32 = 100;
const LOCK_SETTLE_PAUSE: Duration = Duration::from_millis(10);

/// Opens a database in this process, retrying while it is `Locked` (see [`LOCK_SETTLE_ATTEMPTS`]).
fn open_db(path: &Path, options: strata::Options) -> strata::Db {
    for _ in 0..LOCK_SETTLE_ATTEMPTS {
        match strata::Db::open(path, options.clone()) {
            Err(strata::Error::Locked(_)) => std::thread::sleep(LOCK_SETTLE_PAUSE),
            opened => return opened.expect("open"),
        }
    }
    panic!("{} stayed locked", path.display());
}

/// [`ok`] for a command on a database this process has just closed: retries while the command
/// reports it locked (see [`LOCK_SETTLE_ATTEMPTS`]).
fn ok_after_close(args: &[&str]) -> String {
    for _ in 0..LOCK_SETTLE_ATTEMPTS {
        let output = strata(args);
        if !stderr(&output).contains("locked by another process") {
            assert!(
                output.status.success(),
                "strata {args:?} failed: {}",
                stderr(&output)
            );
            return stdout(&output);
        }
        std::thread::sleep(LOCK_SETTLE_PAUSE);
    }
    panic!("strata {args:?}: the database stayed locked");
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

/// Runs `strata bench` with `args` and `--json`: its output and the JSON report.
fn bench_with_json(args: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let mut argv = vec!["bench"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--json", path_str(&json)]);
    let output = ok(&argv);
    let report =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    (output, report)
}

/// The report's result of the first `phase`.
fn phase_result<'a>(report: &'a Value, phase: &str) -> &'a Value {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|row| row["phase"] == phase)
        .unwrap_or_else(|| panic!("no {phase} result"))
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
    assert!(stats.contains("policy: compaction=manual"), "{stats}");
    assert!(stats.contains("last sequence"), "{stats}");

    let json: Value = serde_json::from_str(&ok(&["stats", db, "--json"])).expect("stats JSON");
    assert_eq!(
        json["compaction_policy"],
        "manual (no background compaction)"
    );
    // Five puts and one delete: the last sequence counts all six.
    assert_eq!(json["last_sequence"], 6, "{json}");
    assert_eq!(
        json["io"]["data_block_reads"].as_array().map(Vec::len),
        Some(16)
    );
    assert!(json["levels"].is_array(), "{json}");
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
        &["inspect", nowhere],
        &["inspect", nowhere, "--json"],
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

#[test]
fn commands_refuse_a_directory_without_a_database_and_leave_it_empty() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("create dir");
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a database").expect("write file");
    for path in [&empty, &file] {
        let path = path_str(path);
        for args in [
            &["inspect", path][..],
            &["get", path, "k"],
            &["scan", path],
            &["stats", path],
        ] {
            let output = strata(args);
            assert_eq!(output.status.code(), Some(2), "strata {args:?}");
            let message = stderr(&output);
            assert!(
                message.contains("is not a Strata database"),
                "strata {args:?}: {message}"
            );
        }
    }
    let left: Vec<_> = std::fs::read_dir(&empty).expect("list").collect();
    assert!(left.is_empty(), "nothing is created: {left:?}");
}

/// Keys `{prefix}{i:05}` for `i` in `range`, values 100 bytes.
fn put_keys(db: &strata::Db, prefix: &str, range: std::ops::Range<u32>) {
    for i in range {
        db.put(format!("{prefix}{i:05}"), [b'v'; 100]).expect("put");
    }
}

/// A database of two flushed level-0 runs (300 and 200 keys, the second ending in a non-UTF-8
/// key) with 8 bits per key; returns the library's entry count.
fn write_two_runs(path: &Path, access_statistics: bool) -> u64 {
    let options = strata::Options::default()
        .bits_per_key(8.0)
        .expect("valid budget")
        .access_statistics(access_statistics);
    let db = open_db(path, options);
    put_keys(&db, "key", 0..300);
    db.flush().expect("flush");
    put_keys(&db, "key", 300..499);
    db.put(b"key\xff\x00", b"binary").expect("put");
    db.flush().expect("flush");
    let entries = db.stats().entries();
    db.close().expect("close");
    entries
}

#[test]
fn inspect_prints_levels_runs_files_and_the_averages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    assert_eq!(write_two_runs(&db, false), 500);
    let text = ok_after_close(&[
        "inspect",
        path_str(&db),
        "--access-statistics",
        "off",
        "--filter-policy",
        "uniform",
        "--bits-per-key",
        "8",
    ]);
    assert!(
        text.contains("filters: uniform(8) — budget 8.00 bits/key, no cap"),
        "{text}"
    );
    assert!(
        text.contains("bits/key: actual 8.00 (+0.00 vs budget); skipped filters as 0: 8.00"),
        "{text}"
    );
    assert!(text.contains("access statistics: off"), "{text}");
    assert!(
        text.contains("tree: 1 level, 2 runs, 2 files, 500 entries"),
        "{text}"
    );
    assert!(text.contains("level 0: 2 runs, 500 entries"), "{text}");
    assert!(text.contains("1 file, 300 entries"), "{text}");
    assert!(text.contains("1 file, 200 entries"), "{text}");
    // Key ranges, with the non-UTF-8 bytes escaped; no estimates without statistics.
    assert!(text.contains("key00000 .. key00299"), "{text}");
    assert!(text.contains("key00300 .. key\\xff\\x00"), "{text}");
    let file_row = text
        .lines()
        .find(|line| line.ends_with("key00000 .. key00299"))
        .expect("a row for the first run's file");
    assert_eq!(file_row.split_whitespace().filter(|&c| c == "-").count(), 6);
    // Bits per key on disk, then in use: a uniform filter is used whole.
    assert!(text.contains("bits/key in use"), "{text}");
    assert_eq!(
        file_row.split_whitespace().nth(3),
        Some("8.00"),
        "{file_row}"
    );
    assert_eq!(
        file_row.split_whitespace().nth(4),
        Some("8.00"),
        "{file_row}"
    );

    // With Mnemosyne named, the header shows its cap and the distance to it.
    let text = ok_after_close(&[
        "inspect",
        path_str(&db),
        "--filter-policy",
        "mnemosyne",
        "--bits-per-key",
        "8",
    ]);
    assert!(text.contains("cap 9.60"), "{text}");
    assert!(text.contains("-1.60 vs cap"), "{text}");
}

#[test]
fn inspect_json_has_every_file_and_its_entries_sum_to_the_stats() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let entries = write_two_runs(&db, false);
    let output = ok_after_close(&[
        "inspect",
        path_str(&db),
        "--json",
        "--access-statistics",
        "off",
        "--filter-policy",
        "uniform",
        "--bits-per-key",
        "8",
    ]);
    let report: Value = serde_json::from_str(&output).expect("valid JSON");
    assert_eq!(report["filter_allocator"], "uniform(8)");
    assert_eq!(report["bits_per_key_budget"].as_f64(), Some(8.0));
    assert_eq!(report["bits_per_key_cap"], Value::Null);
    assert_eq!(report["average_bits_per_key"].as_f64(), Some(8.0));
    assert_eq!(report["effective_bits_per_key"].as_f64(), Some(8.0));
    assert_eq!(
        report["average_over_budget_bits_per_key"].as_f64(),
        Some(0.0)
    );
    assert_eq!(report["access_statistics"], false);
    assert_eq!(report["entries"].as_u64(), Some(entries));

    let mut file_entries = 0;
    let mut files = 0;
    for level in report["levels"].as_array().expect("levels") {
        let mut level_entries = 0;
        for run in level["runs"].as_array().expect("runs") {
            let mut run_entries = 0;
            for file in run["files"].as_array().expect("files") {
                for field in ["number", "bytes", "filter_bytes"] {
                    assert!(file[field].as_u64().is_some(), "{field}: {file}");
                }
                assert_eq!(file["bits_per_key"].as_f64(), Some(8.0));
                assert_eq!(file["bits_per_key_in_use"].as_f64(), Some(8.0));
                assert!(file["smallest_key"].as_str().is_some());
                assert_eq!(file["merlin"], Value::Null);
                assert_eq!(file["naive"], Value::Null);
                run_entries += file["entries"].as_u64().expect("entries");
                files += 1;
            }
            assert_eq!(run["entries"].as_u64(), Some(run_entries));
            level_entries += run_entries;
        }
        assert_eq!(level["entries"].as_u64(), Some(level_entries));
        file_entries += level_entries;
    }
    assert_eq!(files, 2);
    assert_eq!(file_entries, entries);
    assert_eq!(
        report["levels"][0]["runs"][0]["files"][0]["largest_key"],
        "key\\xff\\x00"
    );
}

#[test]
fn inspect_shows_access_estimates_restored_from_the_access_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    write_two_runs(&db, true);
    {
        let options = strata::Options::default()
            .bits_per_key(8.0)
            .expect("valid budget")
            .access_statistics(true)
            // Every lookup recorded: the 144 below then reach every file, as each file's
            // estimate is checked (the default records one in 16).
            .access_sample_every(1);
        let db = open_db(&db, options);
        for i in (0..499).step_by(7) {
            let key = format!("key{i:05}");
            assert!(db.get(&key).expect("get").is_some(), "{key}");
            let missing = format!("key{i:05}x");
            assert!(db.get(&missing).expect("get").is_none(), "{missing}");
        }
        db.close().expect("close saves the ACCESS file");
    }
    let output = ok_after_close(&["inspect", path_str(&db), "--json", "--access-statistics"]);
    let report: Value = serde_json::from_str(&output).expect("valid JSON");
    assert_eq!(report["access_statistics"], true);
    assert!(report["access_statistics_bytes"].as_u64().expect("bytes") > 0);
    let mut probes = 0.0;
    for run in report["levels"][0]["runs"].as_array().expect("runs") {
        for file in run["files"].as_array().expect("files") {
            for estimator in ["merlin", "naive"] {
                for field in ["q", "x", "z"] {
                    let value = file[estimator][field].as_f64();
                    assert!(
                        value.is_some_and(|v| v >= 0.0),
                        "{estimator}.{field}: {file}"
                    );
                }
            }
            probes += file["merlin"]["q"].as_f64().expect("number");
            assert!(
                file["merlin"]["z"].as_f64().expect("number") > 0.0,
                "{file}"
            );
        }
    }
    assert!(probes > 0.0);

    // With statistics off the same database shows no estimates; on is the default, as
    // `Options::default()`'s, and the flag alone means on.
    let text = ok_after_close(&["inspect", path_str(&db), "--access-statistics", "off"]);
    assert!(text.contains("access statistics: off"), "{text}");
    let text = ok_after_close(&["inspect", path_str(&db), "--access-statistics"]);
    assert!(text.contains("access statistics: on"), "{text}");
    let text = ok_after_close(&["inspect", path_str(&db)]);
    assert!(text.contains("access statistics: on"), "{text}");
}

/// The read commands open read-only and take no lock: they read a database another process (here
/// this one) has open for writing, as of its last flushed WAL record.
#[test]
fn read_commands_read_a_database_another_process_has_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("db");
    write_two_runs(&path, false);
    let db = open_db(&path, strata::Options::default());
    db.put(b"written while open", b"seen").expect("put");
    let text = ok(&["inspect", path_str(&path), "--bits-per-key", "8"]);
    assert!(text.contains("level 0: 2 runs, 500 entries"), "{text}");
    assert_eq!(
        ok(&["get", path_str(&path), "written while open"]),
        "seen\n"
    );
    assert!(ok(&["stats", path_str(&path)]).contains("last sequence"));
    // The writer is undisturbed.
    db.put(b"after", b"the readers").expect("put");
    db.close().expect("close");
    assert_eq!(ok(&["get", path_str(&path), "after"]), "the readers\n");
}

/// Every file in a directory, by name, with its contents.
fn directory_contents(path: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(path)
        .expect("list")
        .map(|entry| {
            let entry = entry.expect("entry");
            let bytes = std::fs::read(entry.path()).expect("read");
            (entry.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

/// `get`, `scan`, `stats` and `inspect` write nothing: no manifest, no level-0 run from the WAL,
/// no `LOG`, no `ACCESS` save. Before read-only opens each of them wrote a new manifest and
/// flushed a non-empty WAL into a new level-0 run.
#[test]
fn read_commands_leave_the_database_byte_identical() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("db");
    write_two_runs(&path, true);
    {
        // Acknowledged writes left in the WAL only.
        let db = open_db(&path, strata::Options::default().access_statistics(true));
        db.put(b"in the wal", b"only").expect("put");
        db.delete(b"key00007").expect("delete");
        db.close().expect("close");
    }
    let before = directory_contents(&path);
    assert!(before.keys().any(|name| name.ends_with(".log")));
    let db = path_str(&path);
    assert_eq!(ok(&["get", db, "in the wal"]), "only\n");
    assert_eq!(strata(&["get", db, "key00007"]).status.code(), Some(1));
    assert_eq!(
        ok(&["get", db, "key00008"]),
        format!("{}\n", "v".repeat(100))
    );
    let scanned = ok(&["scan", db]);
    assert_eq!(
        scanned.lines().count(),
        500,
        "500 keys, one deleted, one added"
    );
    let stats = ok(&["stats", db]);
    assert!(stats.contains("last sequence"), "{stats}");
    ok(&["inspect", db, "--bits-per-key", "8"]);
    ok(&["inspect", db, "--json", "--access-statistics"]);
    let after = directory_contents(&path);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &before {
        assert!(after[name] == *bytes, "{name} changed");
    }
}

/// Each `put` opens the database, which flushes the previous command's WAL into a level-0 run;
/// 50 of them used to leave 52 level-0 runs behind. The write commands now run the policy's
/// compactions once level 0 reaches the trigger (4 by default), so it stays below it.
#[test]
fn fifty_puts_leave_level_0_bounded_by_the_compaction_trigger() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("db");
    let db = path_str(&path);
    let trigger = strata::Options::default().level0_compaction_trigger;
    let mut slowest = Duration::ZERO;
    for i in 0..50 {
        let start = std::time::Instant::now();
        ok(&["put", db, &format!("key{i:02}"), &format!("value{i}")]);
        slowest = slowest.max(start.elapsed());
        if i % 10 == 9 {
            ok(&["delete", db, &format!("key{:02}", i - 1)]);
        }
    }
    println!("slowest put: {slowest:?}");
    let reader = strata::Db::open_read_only(&path, strata::Options::default()).expect("open");
    let level0 = reader.version().levels()[0].runs().len();
    assert!(
        level0 < trigger,
        "{level0} level-0 runs after 50 puts (trigger {trigger})"
    );
    assert!(
        reader.version().run_count() <= trigger,
        "{}",
        reader.stats()
    );
    for i in 0..50 {
        let expected = (i % 10 != 8).then(|| format!("value{i}").into_bytes());
        assert_eq!(
            reader
                .get(format!("key{i:02}"))
                .expect("get")
                .map(|v| v.into_vec()),
            expected,
            "key{i:02}"
        );
    }
    reader.close().expect("close");
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
        // The filter memory in use over the phase brackets its end.
        let in_use = |field: &str| result[field].as_f64();
        if let (Some(min), Some(end), Some(max)) = (
            in_use("effective_bits_per_key_min"),
            in_use("effective_bits_per_key"),
            in_use("effective_bits_per_key_max"),
        ) {
            assert!(min <= end && end <= max, "{phase}: {min} {end} {max}");
        } else {
            assert!(
                result["effective_bits_per_key"].is_null(),
                "{phase}: a phase with filters in use records their range"
            );
        }
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

/// The tree printed before each read phase says how much filter memory is in use and on disk,
/// and what is pinned; the JSON records the pinned bytes, which with `--pin-index-filter` hold
/// the index and the filter modules lookups probed.
#[test]
fn bench_prints_filter_memory_and_pinned_bytes() {
    let (output, report) = bench_with_json(&[
        "--num",
        "5000",
        "--workloads",
        "fillrandom,readmissing",
        "--write-buffer-bytes",
        "64KiB",
        "--pin-index-filter",
    ]);
    assert!(
        output.contains("filter memory: ") && output.contains("pinned index and filters "),
        "{output}"
    );
    let pinned = phase_result(&report, "readmissing")["pinned_bytes"]
        .as_u64()
        .expect("pinned bytes");
    assert!(pinned > 0, "index and filters pinned: {pinned}");
}

/// `--filter-budget-bytes` caps elastic filters' memory: at 16 bits per key the 20,000 keys
/// would take about 40 KB; the 4 KiB budget holds them under 2 bits per key in use. Other
/// allocators refuse it.
#[test]
fn bench_caps_elastic_filters_at_a_budget_in_bytes() {
    let (_, report) = bench_with_json(&[
        "--num",
        "20000",
        "--workloads",
        "fillrandom,readmissing",
        "--bits-per-key",
        "16",
        "--filter-policy",
        "elastic",
        "--filter-budget-bytes",
        "4KiB",
        "--write-buffer-bytes",
        "64KiB",
        "--target-file-bytes",
        "64KiB",
    ]);
    let read = phase_result(&report, "readmissing");
    let most = read["effective_bits_per_key_max"].as_f64().expect("max");
    // 32,768 bits over the 16,384 or more entries in tables once the load is done: at most 2
    // bits per key (the cap itself, in bytes, is checked by `tests/elastic.rs` in the engine).
    assert!(most <= 2.0, "{most} bits/key in use: over 4 KiB");
    // The disk overhead: elastic filters keep more modules on disk than are in use.
    let in_use = read["filter_bytes_in_use"].as_u64().expect("bytes in use");
    let on_disk = read["filter_bytes_on_disk"]
        .as_u64()
        .expect("bytes on disk");
    assert!(in_use <= 4096 + 1, "{in_use} bytes in use");
    assert!(on_disk > in_use, "{on_disk} bytes on disk, {in_use} in use");
    assert!(most > 1.0, "the byte budget is spent: {most}");
    let refused = strata(&[
        "bench",
        "--num",
        "2000",
        "--filter-policy",
        "mnemosyne",
        "--filter-budget-bytes",
        "4KiB",
    ]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("needs elastic filters"),
        "{}",
        stderr(&refused)
    );
}

/// `--filter-family ribbon` builds Strata's filters as Ribbon filters; the JSON says so, and an
/// unknown family is refused.
#[test]
fn bench_builds_ribbon_filters_when_asked() {
    let (output, report) = bench_with_json(&[
        "--num",
        "5000",
        "--workloads",
        "fillrandom,readrandom,readmissing",
        "--filter-family",
        "ribbon",
    ]);
    assert!(output.contains("family ribbon"), "{output}");
    assert_eq!(report["config"]["filter_family"], "ribbon");
    assert_eq!(phase_result(&report, "readrandom")["ops"], 5000);
    let refused = strata(&["bench", "--num", "100", "--filter-family", "xor"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("unknown filter family"),
        "{}",
        stderr(&refused)
    );
}

/// EcoTune's workload with a rate-limited writer and two query threads: both threads' queries
/// are counted, and the writer keeps to its rate.
#[test]
fn bench_runs_ecotune_queries_on_threads_beside_a_rate_limited_writer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    ok(&[
        "bench",
        "--num",
        "5000",
        "--reads",
        "3000",
        "--workloads",
        "fillrandom,ecotune:0.3",
        "--query-threads",
        "2",
        "--write-rate",
        "0.05",
        "--json",
        path_str(&json),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    assert_eq!(report["config"]["query_threads"], 2);
    let phase = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|row| row["phase"] == "ecotune:0.3")
        .expect("the ecotune phase");
    assert_eq!(phase["ops"], 6000, "two threads of 3,000 queries");
    // 0.05 MB/s of 116-byte entries is 431 writes per second; pacing keeps the writer at or
    // under it (plus the slack of its first millisecond).
    let rate = phase["background_writes_per_sec"].as_f64().expect("rate");
    assert!(rate <= 431.0 * 1.1 + 50.0, "{rate} writes/s");
    let busy = phase["compaction_busy_share"]
        .as_f64()
        .expect("Strata's compaction time");
    assert!(busy >= 0.0, "{busy}");
    for bad in [
        &["bench", "--num", "100", "--query-threads", "0"][..],
        &["bench", "--num", "100", "--write-rate", "-1"][..],
        &[
            "bench",
            "--num",
            "100",
            "--workloads",
            "fillrandom,ycsb-d",
            "--query-threads",
            "2",
        ][..],
    ] {
        let refused = strata(bad);
        assert!(!refused.status.success(), "{bad:?}");
    }
}

/// A phase's `@OPS` replaces `--reads` for it alone; the others run `--reads`, the fill
/// `--num`; a count on a fill is refused before anything runs.
#[test]
fn bench_phases_run_their_own_operation_counts() {
    let (_, report) = bench_with_json(&[
        "--num",
        "3000",
        "--reads",
        "500",
        "--workloads",
        "fillrandom,readrandom@1200,seekrandom@40,readmissing",
    ]);
    assert_eq!(phase_result(&report, "fillrandom")["ops"], 3000);
    assert_eq!(phase_result(&report, "readrandom")["ops"], 1200);
    assert_eq!(phase_result(&report, "seekrandom")["ops"], 40);
    assert_eq!(phase_result(&report, "readmissing")["ops"], 500);
    assert_eq!(
        report["config"]["phase_ops"],
        serde_json::json!([null, 1200, 40, null])
    );
    let refused = strata(&["bench", "--num", "100", "--workloads", "fillrandom@50"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("takes no operation count"),
        "{}",
        stderr(&refused)
    );
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
    // Every block read is at least a few hundred bytes (4 KiB data blocks, whole filters).
    let bytes = results[1]["read_bytes_per_op"].as_f64().expect("number");
    let blocks: f64 = ["data", "index", "filter"]
        .iter()
        .map(|kind| results[1]["io_per_op"][kind].as_f64().expect("number"))
        .sum();
    assert!(
        bytes >= 256.0 * blocks && bytes > 0.0,
        "{bytes} bytes for {blocks} blocks"
    );
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

/// `--paced-fill` waits for flushes and compactions during the fill, so the tree a read phase
/// sees follows from the keys alone: every filter policy and every run gets the same shape
/// (levels, runs, files and entries per level; bytes differ with the filters written).
#[test]
fn paced_fills_give_every_policy_and_run_the_same_tree() {
    let output = ok(&[
        "bench",
        "--num",
        "20000",
        "--reads",
        "2000",
        "--workloads",
        "fillrandom,readmissing",
        "--write-buffer-bytes",
        "64KiB",
        "--size-ratio",
        "4",
        "--bits-per-key",
        "2",
        "--filter-policy",
        "uniform,elastic",
        "--runs",
        "2",
        "--paced-fill",
    ]);
    assert_eq!(output.matches("fills paced").count(), 4, "{output}");
    // Each tree: its summary up to the entries, and each level's runs, files and entries.
    let mut trees: Vec<Vec<String>> = Vec::new();
    let mut lines = output.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(summary) = line.strip_prefix("tree strata before readmissing: ") else {
            continue;
        };
        let summary = summary
            .split(" entries")
            .next()
            .expect("summary")
            .to_string();
        let mut tree = vec![summary];
        while let Some(level) = lines.next_if(|next| next.starts_with("  L")) {
            let fields: Vec<&str> = level.split_whitespace().collect();
            tree.push(fields[..7].join(" "));
        }
        trees.push(tree);
    }
    assert_eq!(trees.len(), 4, "{output}");
    assert!(
        trees[0].len() >= 3,
        "a tree of two levels or more: {trees:?}"
    );
    for tree in &trees[1..] {
        assert_eq!(tree, &trees[0], "{output}");
    }
}

#[test]
fn compare_runs_alternate_configurations_and_write_medians_and_plots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("compare.json");
    let plot = dir.path().join("compare.svg");
    let output = ok(&[
        "bench",
        "--num",
        "3000",
        "--compaction",
        "leveling,tiering",
        "--size-ratio",
        "3",
        "--write-buffer-bytes",
        "64KiB",
        "--runs",
        "2",
        "--compare",
        "--sample-every",
        "1000",
        "--json",
        path_str(&json),
        "--plot",
        path_str(&plot),
    ]);
    assert!(output.contains("medians of 2 run(s)"), "{output}");
    let text = std::fs::read_to_string(&json).expect("JSON written");
    let report: Value = serde_json::from_str(&text).expect("valid JSON");
    // Stable through a round trip: what a script reads back is what was written.
    let again: Value =
        serde_json::from_str(&serde_json::to_string(&report).expect("encode")).expect("decode");
    assert_eq!(again, report);
    let results = report["results"].as_array().expect("results");
    assert_eq!(
        results.len(),
        2 * 2 * 4,
        "2 configurations x 2 runs x 4 phases"
    );
    // Run 2 starts with the configuration that went second in run 1.
    let first_of_run = |run: u64| {
        results
            .iter()
            .find(|r| r["run"] == run)
            .map(|r| r["configuration"].clone())
            .expect("a result")
    };
    assert_ne!(first_of_run(1), first_of_run(2));
    let medians = report["medians"].as_array().expect("medians");
    assert_eq!(medians.len(), 2 * 4);
    for row in medians
        .iter()
        .filter(|r| r["configuration"] == "strata/elastic/leveling")
    {
        assert_eq!(row["ops_per_sec_ratio"].as_f64(), Some(1.0));
        assert_eq!(row["runs"], 2);
    }
    assert!(medians
        .iter()
        .any(|r| r["configuration"] == "strata/elastic/tiering"
            && r["ops_per_sec_ratio"].as_f64().is_some()));
    let series = report["series"].as_array().expect("series");
    assert!(
        series.len() >= 2 * 2 * 4 * 3,
        "a point every 1000 operations"
    );
    for path in [plot.clone(), dir.path().join("compare-series.svg")] {
        let svg = std::fs::read_to_string(&path).expect("plot written");
        assert!(
            svg.contains("<svg") && svg.contains("</svg>"),
            "{}",
            path.display()
        );
    }
}

/// Without `--sample-every` every phase gets 100 points; the comparison plot shows each phase's
/// throughput beside its write amplification or block reads, with ratios, and the series plot
/// names every phase.
#[test]
fn plots_show_every_phase_with_the_figure_that_matters_and_enough_points() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("plots.json");
    let plot = dir.path().join("plots.svg");
    ok(&[
        "bench",
        "--num",
        "2000",
        "--workloads",
        "fillrandom,readrandom,readmissing",
        "--filter-policy",
        "uniform,monkey",
        "--bits-per-key",
        "4",
        "--json",
        path_str(&json),
        "--plot",
        path_str(&plot),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("valid JSON");
    let series = report["series"].as_array().expect("series");
    for configuration in ["strata/uniform/leveling", "strata/monkey/leveling"] {
        for phase in ["fillrandom", "readrandom", "readmissing"] {
            let points = series
                .iter()
                .filter(|p| p["configuration"] == configuration && p["phase"] == phase)
                .count();
            assert!(points >= 50, "{configuration} {phase}: {points} points");
        }
    }
    let comparison = std::fs::read_to_string(&plot).expect("plot written");
    for text in [
        "fillrandom: throughput",
        "fillrandom: write amplification",
        "readmissing: data-block reads per op",
        "(1.00x)",
        "strata/monkey/leveling",
    ] {
        assert!(comparison.contains(text), "comparison plot lacks {text}");
    }
    let timeline =
        std::fs::read_to_string(dir.path().join("plots-series.svg")).expect("series written");
    for phase in ["fillrandom", "readrandom", "readmissing"] {
        assert!(timeline.contains(phase), "series plot lacks {phase}");
    }
}

#[test]
fn mixed_workloads_and_distributions_run_and_check_their_reads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("mixes.json");
    ok(&[
        "bench",
        "--workloads",
        "load,ycsb-a,ycsb-d,ycsb-e,mnemosyne-i,mnemosyne-ii:0.5,overwrite,readhot,readwhilewriting",
        "--num",
        "2000",
        "--reads",
        "1000",
        "--distribution",
        "zipfian:0.9",
        "--json",
        path_str(&json),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    let phases: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["phase"].as_str().expect("phase name"))
        .collect();
    assert_eq!(
        phases,
        vec![
            "load",
            "ycsb-a",
            "ycsb-d",
            "ycsb-e",
            "mnemosyne-i",
            "mnemosyne-ii:0.5",
            "overwrite",
            "readhot",
            "readwhilewriting"
        ]
    );
    assert_eq!(report["config"]["distribution"], "zipfian:0.9");
    // An unknown workload is a clear error, not a panic.
    let output = strata(&["bench", "--workloads", "ycsb-z", "--num", "100"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unknown workload"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn presets_expand_and_later_flags_override_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("preset.json");
    ok(&[
        "bench",
        "--preset",
        "ycsb",
        "--num",
        "1500",
        "--reads",
        "500",
        "--value-size",
        "64",
        "--json",
        path_str(&json),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    assert_eq!(report["config"]["preset"], "ycsb");
    assert_eq!(report["config"]["num"], 1500, "the later --num wins");
    assert_eq!(report["config"]["value_size"], 64);
    assert_eq!(report["config"]["key_size"], 24, "from the preset");
    assert_eq!(report["results"].as_array().map(Vec::len), Some(7));
}

/// A small end-to-end run through each peer compiled in.
#[cfg(any(feature = "peer-rocksdb", feature = "peer-fjall"))]
#[test]
fn peers_run_the_same_workloads() {
    let mut engines = Vec::new();
    if cfg!(feature = "peer-rocksdb") {
        engines.push("rocksdb");
    }
    if cfg!(feature = "peer-fjall") {
        engines.push("fjall");
    }
    for engine in engines {
        let dir = tempfile::tempdir().expect("temp dir");
        let json = dir.path().join("peer.json");
        ok(&[
            "bench",
            "--engines",
            engine,
            "--num",
            "2000",
            "--settle",
            "--json",
            path_str(&json),
        ]);
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
        let results = report["results"].as_array().expect("results");
        assert_eq!(results.len(), 4);
        assert!(results.iter().all(|r| r["engine"] == engine));
        // RocksDB's perf context counts the bytes its lookups read; fjall has no such counter.
        for result in results {
            let bytes = &result["read_bytes_per_op"];
            if engine == "rocksdb" {
                assert!(bytes.as_f64().is_some_and(|b| b >= 0.0), "{result}");
            } else {
                assert!(bytes.is_null(), "{result}");
            }
        }
    }
}

#[test]
fn the_monkey_filter_policy_gives_levels_different_bits_per_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("monkey.json");
    let output = ok(&[
        "bench",
        "--workloads",
        "fillrandom,readmissing",
        "--num",
        "40000",
        "--write-buffer-bytes",
        "256KiB",
        "--size-ratio",
        "4",
        "--bits-per-key",
        "4",
        "--filter-policy",
        "uniform,monkey",
        "--settle",
        "--json",
        path_str(&json),
    ]);
    assert!(output.contains("monkey"), "{output}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    let policies: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["filter_policy"].as_str().expect("policy"))
        .collect();
    assert_eq!(policies, vec!["uniform", "uniform", "monkey", "monkey"]);
    // Uniform prints every level at the budget; Monkey does not.
    let monkey_part = output
        .split("strata/monkey")
        .nth(1)
        .expect("monkey section");
    let level_bits: Vec<f64> = monkey_part
        .lines()
        .filter(|line| line.trim_start().starts_with('L') && line.contains("bits/key"))
        .filter_map(|line| line.split_whitespace().rev().nth(1)?.parse().ok())
        .collect();
    // Which levels exist after the settle depends on timing (level 1 may have just been merged
    // into level 2), so either side of the budget shows it: more bits on a smaller level, or
    // fewer on the largest.
    assert!(
        level_bits.iter().any(|&bits| !(3.5..=4.5).contains(&bits)),
        "Monkey gives levels other bits than the budget of 4: {level_bits:?}\n{output}"
    );
}

/// Reading a database through the CLI does not reshape it: ten level-0 runs written under a
/// policy that never compacts are still ten runs after `strata stats` and `strata get` (under the
/// default policy a background compaction could merge them while the command runs; whether it
/// does in time depends on timing, so `commands::tests` also checks the options).
#[test]
fn read_commands_do_not_compact_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let manual = || {
        strata::Options::default()
            .compaction_policy(std::sync::Arc::new(strata::compaction::Manual))
    };
    let db = open_db(&path, manual());
    for run in 0..10u32 {
        db.put(format!("key{run}"), b"value").expect("put");
        db.flush().expect("flush");
    }
    assert_eq!(db.version().run_count(), 10);
    db.close().expect("close");
    let path_text = path.to_str().expect("utf-8 path");
    ok_after_close(&["stats", path_text]);
    ok_after_close(&["get", path_text, "key3"]);
    let db = open_db(&path, manual());
    assert_eq!(
        db.version().run_count(),
        10,
        "the CLI left the shape as it was"
    );
    assert_eq!(db.get("key3").expect("get").as_deref(), Some(&b"value"[..]));
}

/// A workload list that repeats a phase ("lookups, write burst, lookups") compares each
/// occurrence on its own: the medians are not taken over both phases together.
#[test]
fn a_repeated_phase_is_compared_per_occurrence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("repeat.json");
    let output = ok(&[
        "bench",
        "--workloads",
        "fillrandom,readmissing,overwrite,readmissing",
        "--num",
        "3000",
        "--reads",
        "2000",
        "--compare",
        "--runs",
        "2",
        "--json",
        path_str(&json),
    ]);
    assert!(output.contains("readmissing#2"), "{output}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON")).expect("valid");
    let medians = report["medians"].as_array().expect("medians");
    let lookups: Vec<u64> = medians
        .iter()
        .filter(|row| row["phase"] == "readmissing")
        .map(|row| row["occurrence"].as_u64().expect("occurrence"))
        .collect();
    assert_eq!(lookups, vec![1, 2]);
    assert!(medians.iter().all(|row| row["runs"] == 2), "{medians:?}");
}

#[test]
fn simulate_prints_a_json_object_per_step_and_refuses_bad_arguments() {
    let text = ok(&[
        "simulate",
        "--compaction",
        "tiering",
        "--filter-policy",
        "mnemosyne",
        "--num",
        "20000",
        "--write-buffer-bytes",
        "116000",
        "--size-ratio",
        "3",
        "--json",
    ]);
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    let (summary, steps) = lines.split_last().expect("output");
    let summary = &summary["summary"];
    assert_eq!(summary["flushes"], 20);
    assert_eq!(summary["compaction"], "tiering(T=3)");
    assert!(summary["write_amplification"].as_f64().expect("a number") > 1.0);
    assert!(steps.iter().any(|step| step["kind"] == "compaction"));
    let refused = strata(&["simulate", "--entry-bytes", "0"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--entry-bytes"));
}

/// `--garnering-c` takes a list: Garnering runs once per `c`, beside the other policies, each
/// labelled with its `c`; a `c` outside (0, 1] is refused before anything runs.
#[test]
fn bench_runs_garnering_once_per_c_and_refuses_a_bad_c() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    ok(&[
        "bench",
        "--num",
        "3000",
        "--workloads",
        "fillrandom,readrandom",
        "--compaction",
        "leveling,garnering",
        "--garnering-c",
        "0.4,0.8",
        "--size-ratio",
        "3",
        "--json",
        path_str(&json),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("valid JSON");
    let mut configurations: Vec<String> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["configuration"].as_str().expect("a label").to_string())
        .collect();
    configurations.sort();
    configurations.dedup();
    assert_eq!(
        configurations,
        [
            "strata/elastic/garnering@c0.4",
            "strata/elastic/garnering@c0.8",
            "strata/elastic/leveling"
        ]
    );
    for bad in ["0", "1.5", "0.4,nan"] {
        let refused = strata(&["bench", "--num", "1000", "--garnering-c", bad]);
        assert_eq!(refused.status.code(), Some(2), "{bad}");
        assert!(stderr(&refused).contains("--garnering-c"), "{bad}");
    }
}

#[test]
fn bench_runs_the_design_an_options_file_describes_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = dir.path().join("design.toml");
    std::fs::write(
        &options,
        "write_buffer_bytes = 262144\n\
         [compaction]\npolicy = \"garnering\"\nsize_ratio = 3.0\ngarnering_c = 0.6\n\
         [filters]\nallocator = \"mnemosyne\"\nbits_per_key = 4.0\n",
    )
    .expect("writes");
    let json = dir.path().join("out.json");
    ok(&[
        "bench",
        "--num",
        "3000",
        "--workloads",
        "fillrandom,readrandom",
        "--options",
        path_str(&options),
        "--bits-per-key",
        "5",
        "--json",
        path_str(&json),
    ]);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("valid JSON");
    let config = &report["config"];
    assert_eq!(config["compaction"][0], "garnering", "{config}");
    assert_eq!(config["size_ratio"].as_f64(), Some(3.0));
    assert_eq!(config["garnering_c"][0].as_f64(), Some(0.6));
    assert_eq!(config["filter_policy"][0], "mnemosyne");
    assert_eq!(config["write_buffer_bytes"], 262_144);
    assert_eq!(
        config["bits_per_key"][0].as_f64(),
        Some(5.0),
        "a flag after --options overrides the file"
    );

    for bad in [
        "write_bufer_bytes = 1\n",
        "[compaction]\npolicy = \"levelling\"\n",
        "block_bytes = 16384\n",
    ] {
        std::fs::write(&options, bad).expect("writes");
        let output = strata(&["bench", "--num", "100", "--options", path_str(&options)]);
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        let message = stderr(&output);
        assert!(message.contains("options file"), "{bad:?}: {message}");
        assert!(!message.contains("panicked"), "{bad:?}: {message}");
    }
}

#[test]
fn bench_prints_the_models_prediction_beside_each_point_read_phase() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let output = ok(&[
        "bench",
        "--num",
        "20000",
        "--reads",
        "2000",
        "--write-buffer-bytes",
        "256KiB",
        "--target-file-bytes",
        "256KiB",
        "--bits-per-key",
        "3",
        "--settle",
        "--json",
        path_str(&json),
    ]);
    assert_eq!(
        output.matches("model (strata::model::tree)").count(),
        2,
        "readrandom and readmissing: {output}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("valid JSON");
    for result in report["results"].as_array().expect("results") {
        let predicted = result["predicted_data_reads_per_lookup_without_cache"].as_f64();
        let through_cache = &result["predicted_reads_per_lookup"];
        match result["phase"].as_str().expect("phase") {
            // An existing key costs its own block plus the false positives before it.
            "readrandom" => assert!(predicted.is_some_and(|p| p >= 1.0), "{result}"),
            // At 3 bits/key every run's filter lets about 12% of lookups through.
            "readmissing" => assert!(predicted.is_some_and(|p| p > 0.0 && p < 1.0), "{result}"),
            _ => {
                assert_eq!(predicted, None, "{result}");
                assert!(through_cache.is_null(), "{result}");
                continue;
            }
        }
        // The bench's default 8 MiB cache holds this 2.3 MB tree whole: taking every key as new,
        // a settled cache serves every block; over the phase's 2,000 lookups of its recurring
        // keys, each block the phase touches misses once, on its first request, as measured.
        let new_keys = result["predicted_reads_per_lookup_new_keys"]["data"]
            .as_f64()
            .expect("predicted data reads, every key new");
        assert!((0.0..0.01).contains(&new_keys), "{result}");
        let data = through_cache["data"]
            .as_f64()
            .expect("predicted data reads");
        let measured = result["io_per_op"]["data"].as_f64().expect("measured");
        assert!(data < predicted.unwrap_or(0.0), "{result}");
        if measured > 0.05 {
            assert!(
                (0.75..1.33).contains(&(measured / data)),
                "measured {measured} against {data}: {result}"
            );
        }
        for kind in ["index", "filter"] {
            let reads = through_cache[kind].as_f64().expect("predicted reads");
            assert!((0.0..0.01).contains(&reads), "{kind}: {result}");
        }
        // The probes Strata's lookups timed: a probe the filter answers costs less than one
        // that reads a data block, and the cached price, once known, is a share of a device
        // read's.
        let times = &result["probe_times"];
        if let (Some(rejected), Some(cached)) = (
            times["rejected_us"].as_f64(),
            times["cached_block_us"].as_f64(),
        ) {
            assert!(rejected > 0.0 && rejected < cached, "{result}");
        }
        if let Some(cost) = times["cached_false_positive_cost"].as_f64() {
            assert!((0.001..=1.0).contains(&cost), "{result}");
        }
    }
    assert!(
        output.contains("probes timed (strata, one lookup in 16"),
        "a line under the read phases: {output}"
    );
}
