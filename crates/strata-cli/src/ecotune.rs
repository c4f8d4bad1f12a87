//! `strata ecotune`: solves one round of EcoTune's dynamic program (DESIGN.md §6, Algorithm 2;
//! `strata::compaction::ecotune::dp`) and prints the schedule it chooses in the paper's Table 4
//! notation (the main-level layout after each unit run's arrival), the merges, the score (queries
//! served over the round, in the units of `T_w` times queries per unit time), the event
//! simulator's score of the same schedule, and the time the solve took.

use std::io::Write;
use std::time::Instant;

use serde::Serialize;
use strata::compaction::ecotune::dp::{layouts, simulate, Dp, RoundParameters};

use crate::error::{CliError, CliResult};

/// `strata ecotune`.
#[derive(Debug, Clone, clap::Args)]
pub struct EcotuneArgs {
    /// `R`: unit runs per round (the paper: 29).
    #[arg(long, default_value_t = 29)]
    pub rounds_units: u32,
    /// `Ccap`: last-level size over the main level's capacity (the paper: 3).
    #[arg(long, default_value_t = 3)]
    pub ccap: u32,
    /// `T_c / T_w`: time to rewrite one unit run over the time between two (the paper: about 0.1).
    #[arg(long, default_value_t = 0.1)]
    pub tc_over_tw: f64,
    /// `r`: the fraction of queries that are long range scans.
    #[arg(long, default_value_t = 0.3)]
    pub long_scan_ratio: f64,
    /// `beta_q`: query speed while a main-level merge runs, as a fraction (default: an even
    /// split of threads between queries and merges).
    #[arg(long, default_value_t = 0.5)]
    pub beta_q: f64,
    /// `f`: the filters' false-positive rate.
    #[arg(long, default_value_t = 0.01)]
    pub fpr: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    parameters: ParametersReport,
    score: f64,
    simulated_score: f64,
    solve_seconds: f64,
    layouts: Vec<String>,
    merges: Vec<MergeReport>,
}

#[derive(Debug, Serialize)]
struct ParametersReport {
    units: u32,
    ccap: u32,
    tc_over_tw: f64,
    long_scan_ratio: f64,
    beta_q: f64,
    fpr: f64,
}

#[derive(Debug, Serialize)]
struct MergeReport {
    start_arrival: u32,
    units: u32,
    runs: u32,
    global: bool,
}

/// Runs the command.
pub fn run(args: &EcotuneArgs, out: &mut dyn Write) -> CliResult<()> {
    let parameters = RoundParameters {
        long_scan_ratio: args.long_scan_ratio,
        false_positive_rate: args.fpr,
        beta_q: args.beta_q,
        t_w: 1.0,
        t_c: args.tc_over_tw,
        units: args.rounds_units,
        ccap: args.ccap,
    };
    let started = Instant::now();
    let mut dp = Dp::new(parameters).map_err(CliError::InvalidArgument)?;
    let score = dp.algorithm2_score();
    let schedule = dp.schedule();
    let solve_seconds = started.elapsed().as_secs_f64();
    let simulated_score = simulate(&parameters, &schedule).map_err(CliError::CheckFailed)?;
    let report = Report {
        parameters: ParametersReport {
            units: args.rounds_units,
            ccap: args.ccap,
            tc_over_tw: args.tc_over_tw,
            long_scan_ratio: args.long_scan_ratio,
            beta_q: args.beta_q,
            fpr: args.fpr,
        },
        score,
        simulated_score,
        solve_seconds,
        layouts: layouts(args.rounds_units, &schedule),
        merges: schedule
            .iter()
            .enumerate()
            .map(|(index, merge)| MergeReport {
                start_arrival: merge.start_arrival,
                units: merge.units,
                runs: merge.runs,
                global: index + 1 == schedule.len(),
            })
            .collect(),
    };
    let io = |e| CliError::io("writing the schedule", e);
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::InvalidArgument(format!("serializing the report: {e}")))?;
        return writeln!(out, "{text}").map_err(io);
    }
    writeln!(
        out,
        "EcoTune round: R = {}, Ccap = {}, T_c/T_w = {}, r = {}, beta_q = {}, f = {}",
        args.rounds_units, args.ccap, args.tc_over_tw, args.long_scan_ratio, args.beta_q, args.fpr
    )
    .map_err(io)?;
    writeln!(
        out,
        "score {score:.6} (simulated {simulated_score:.6}), solved in {:.3} ms",
        solve_seconds * 1e3
    )
    .map_err(io)?;
    writeln!(out, "layouts (Table 4): {}", report.layouts.join(", ")).map_err(io)?;
    for merge in &report.merges {
        writeln!(
            out,
            "  {} at arrival {}: {} runs, {} units",
            if merge.global { "global" } else { "merge" },
            merge.start_arrival,
            merge.runs,
            merge.units
        )
        .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_args;

    #[test]
    fn prints_the_schedule_its_score_and_the_simulators() {
        let args: EcotuneArgs = parse_args(&[
            "ecotune",
            "--rounds-units",
            "7",
            "--tc-over-tw",
            "0.4",
            "--long-scan-ratio",
            "0.3",
        ]);
        let mut out = Vec::new();
        run(&args, &mut out).expect("runs");
        let text = String::from_utf8(out).expect("utf8");
        assert!(
            text.contains("layouts (Table 4): 1, 11, 3, 31, 32, 321, 3211"),
            "{text}"
        );
        assert!(
            text.contains("global at arrival 7: 4 runs, 28 units"),
            "{text}"
        );
        let mut json = Vec::new();
        let args = EcotuneArgs {
            json: true,
            ..args.clone()
        };
        run(&args, &mut json).expect("runs");
        let value: serde_json::Value = serde_json::from_slice(&json).expect("json");
        let (score, simulated) = (
            value["score"].as_f64().expect("score"),
            value["simulated_score"].as_f64().expect("simulated"),
        );
        assert!(
            (score - simulated).abs() < 1e-9 * score,
            "{score} {simulated}"
        );
        let bad = EcotuneArgs {
            beta_q: 2.0,
            ..args
        };
        assert!(run(&bad, &mut Vec::new()).is_err());
    }
}
