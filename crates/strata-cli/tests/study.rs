//! End-to-end tests of `strata study` at tiny sizes: the tables and the JSON have the expected
//! rows and fields, the budgets hold, and the per-file optimum does not lose to uniform filters.

use std::process::Command;

use serde_json::Value;

fn study(args: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("report.json");
    let json_arg = json.to_str().expect("temporary paths are UTF-8");
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("study")
        .args(args)
        .args(["--json", json_arg])
        .output()
        .expect("the strata binary runs");
    assert!(
        output.status.success(),
        "strata study {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report is written");
    let report = serde_json::from_str(&text).expect("the report is JSON");
    (String::from_utf8_lossy(&output.stdout).into_owned(), report)
}

fn number(value: &Value, field: &str) -> f64 {
    value[field]
        .as_f64()
        .unwrap_or_else(|| panic!("field {field} is a number in {value}"))
}

#[test]
fn headroom_reports_every_workload_budget_and_policy() {
    let (table, report) = study(&[
        "headroom",
        "--num",
        "4000",
        "--lookups",
        "3000",
        "--write-buffer-bytes",
        "16KiB",
        "--target-file-bytes",
        "16KiB",
        "--budgets",
        "2,5",
    ]);
    assert!(table.contains("headroom (Mnemosyne Fig. 4)"), "{table}");
    for heading in [
        "uniform f0 = 0:",
        "uniform f0 = 0.5:",
        "uniform f0 = 1:",
        "normal(5/62) f0 = 0:",
        "normal(5/62) f0 = 1:",
    ] {
        assert!(table.contains(heading), "{heading} missing from\n{table}");
    }
    assert_eq!(report["study"], "headroom");
    assert!(number(&report, "files") >= 4.0, "a tree of several files");
    let rows = report["rows"].as_array().expect("rows");
    // 2 distributions x 3 zero-result fractions x 2 budgets x 3 policies.
    assert_eq!(rows.len(), 36);
    let mut totals = std::collections::HashMap::new();
    for row in rows {
        for field in [
            "unnecessary_reads_per_lookup",
            "predicted_per_lookup",
            "data_block_reads_per_lookup",
            "filter_false_positives_per_lookup",
            "average_bits_per_key",
        ] {
            assert!(number(row, field) >= 0.0, "{field} in {row}");
        }
        assert_eq!(number(row, "lookups"), 3000.0);
        // Every policy spends the budget, no more (files without filters count as 0 bits).
        let budget = number(row, "budget_bits_per_key");
        assert!(
            number(row, "average_bits_per_key") <= budget + 1e-6,
            "over budget: {row}"
        );
        let policy = row["policy"].as_str().expect("policy").to_string();
        let entry = totals.entry(policy).or_insert((0.0, 0.0));
        entry.0 += number(row, "unnecessary_reads_per_lookup");
        entry.1 += number(row, "predicted_per_lookup");
    }
    let (uniform, uniform_model) = totals["uniform"];
    let (optimal, optimal_model) = totals["optimal"];
    let (_, monkey_model) = totals["monkey"];
    // The model's optimum is optimal for the model; measured, it wins over all rows together.
    assert!(optimal_model <= uniform_model && optimal_model <= monkey_model + 1e-9);
    assert!(optimal <= uniform, "optimal {optimal} vs uniform {uniform}");
}

#[test]
fn merlin_accuracy_reports_every_checkpoint() {
    let (table, report) = study(&[
        "merlin-accuracy",
        "--num",
        "3000",
        "--ops",
        "4000",
        "--checkpoints",
        "4",
        "--write-buffer-bytes",
        "16KiB",
        "--target-file-bytes",
        "16KiB",
    ]);
    assert!(
        table.contains("merlin-accuracy (Mnemosyne Fig. 10)"),
        "{table}"
    );
    assert!(table.contains("DESIGN.md §4 target"), "{table}");
    assert_eq!(report["study"], "merlin-accuracy");
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    let mut previous_lookups = 0.0;
    for row in results {
        let lookups = number(row, "lookups");
        assert!(lookups > previous_lookups, "lookups grow: {row}");
        previous_lookups = lookups;
        assert!(number(row, "files") >= 1.0);
        assert!(
            number(row, "true_total_z") > 0.0,
            "absent-key lookups probe files"
        );
        for estimator in ["merlin", "naive"] {
            let accuracy = &row[estimator];
            let cosine = number(accuracy, "cosine_similarity");
            assert!((-1.0..=1.0).contains(&cosine), "{accuracy}");
            assert!(number(accuracy, "euclidean_distance") >= 0.0);
            assert!(number(accuracy, "total_z") >= 0.0);
        }
    }
    assert_eq!(number(&results[3], "operations"), 4000.0);
}
