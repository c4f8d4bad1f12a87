//! Designs the tuner cannot tell apart, and the rule that picks among them (DESIGN.md §7.5,
//! "Ties").
//!
//! [`super::tuner::tune`] ranks designs by predicted throughput, however small the difference.
//! Its inputs are measured (`strata tune --measure-device`: the device probe's random reads, the
//! processor probe's lookups and flushes), and a measurement repeated on the same machine moves:
//! the probes time several rounds, and the rounds disagree by a factor, the [`CostSpread`]. A
//! runner-up that is at least as fast as the best once a single measured cost moves within its
//! spread is *tied* with it: a second measurement could have ranked it first. [`break_ties`]
//! finds the tied designs by evaluating each again with each cost group moved to either end of its
//! spread (the device's costs, the processor's, a flush's), and picks among them the one with
//! the fewest merge I/Os per update (`Prediction::update_io`), the model's order deciding between
//! equals. Those merges come from one source: a tied design the tuning priced by the closed form
//! is replayed, as the best ones were, before it is compared with them.
//!
//! Why the write cost breaks the tie: of the model's terms it is the one measured least
//! reliably. The device reads a lookup makes agree with the engine's counters within a few
//! percent on every design (docs/BENCHMARKS.md, "Tuner vs reality with all seven merge policies
//! as candidates"), while the bytes a phase's merges write depend on which merges fall inside it
//! (one design's phase wrote 4.8 to 22.6 times the user's bytes over three runs) and the closed
//! form the tuner uses is 0.66 to 1.38 of the engine's write amplification ("Model vs measurement
//! per seek and per write"). Between designs the model cannot separate, the one that merges least
//! leaves the least to that error, and its merges, which run beside the operations, take the
//! least from them. A workload without updates keeps the model's best.
//!
//! The check is exact for the model: with merges charged to the operations a design's seconds
//! are linear in each cost, and with merges on their own threads the larger of a sum and the
//! foreground's seconds beside them (`tuner::foreground_beside_merges`, homogeneous of degree one
//! and nondecreasing in each cost), so moving one cost by a factor `k` moves every design's
//! seconds by a factor between 1 and `k`;
//! a design slower than the best by more than the largest spread cannot tie and is not
//! re-evaluated. (EcoTune's round depends on the throughput itself, so for it the check is the
//! model's at the moved costs, as for every design.)

use super::tuner::{
    evaluate_as_priced, evaluate_replayed, Design, Tuning, TuningProblem, MAX_WRITE_REPLAYS,
};
use super::writes::WritePricing;
use crate::error::{Error, Result};

/// How far the measured costs may be from what a repeated measurement gives: for each group, the
/// factor (at least 1) between the probe's timed rounds, slow over fast ([`CostSpread::of_rounds`]).
/// A cost may be that many times smaller or larger than measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpread {
    /// The device's costs per page (random read, write, in-order read): the random-read rounds'.
    pub device: f64,
    /// The processor's costs (per lookup, per run probed, per update, per entry merged): the
    /// timed lookup rounds'.
    pub processor: f64,
    /// A flush's fixed cost: the timed flushes'.
    pub flush: f64,
}

impl CostSpread {
    /// No spread: every measured cost taken as exact (the model's ranking stands).
    pub const NONE: CostSpread = CostSpread {
        device: 1.0,
        processor: 1.0,
        flush: 1.0,
    };

    /// The spread of repeated timings of one thing: from five timings on, the second slowest
    /// over the second fastest (the probes take the median round as the cost, so one round
    /// slowed by another process, or one fast by luck, moves neither the cost nor its spread: a
    /// flush's sync on a busy disk can take twenty times another's); the slowest over the
    /// fastest for two to four; 1 for fewer. A timing that is not finite and positive is an
    /// [`Error::InvalidArgument`].
    pub fn of_rounds(rounds: &[f64]) -> Result<f64> {
        if let Some(bad) = rounds.iter().find(|t| !(t.is_finite() && **t > 0.0)) {
            return Err(Error::InvalidArgument(format!(
                "a timed round must be finite and > 0 seconds, got {bad}"
            )));
        }
        let mut sorted = rounds.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        Ok(match n {
            0 | 1 => 1.0,
            2..=4 => sorted[n - 1] / sorted[0],
            _ => sorted[n - 2] / sorted[1],
        })
    }

    fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("device", self.device),
            ("processor", self.processor),
            ("flush", self.flush),
        ] {
            if !(value.is_finite() && value >= 1.0) {
                return Err(Error::InvalidArgument(format!(
                    "the {name} cost spread must be a finite factor >= 1, got {value}"
                )));
            }
        }
        Ok(())
    }

    fn largest(&self) -> f64 {
        self.device.max(self.processor).max(self.flush)
    }
}

/// The tuning with its ties broken, and the ties.
#[derive(Debug, Clone, PartialEq)]
pub struct TieBreak {
    /// The tuning: the pick is the recommendation and the first candidate, the other candidates
    /// follow in the model's order (with the tied designs [`break_ties`] replayed at their new
    /// prices).
    pub tuning: Tuning,
    /// The designs tied with the model's best, the model's best first, in the model's order (one
    /// design: no tie).
    pub tied: Vec<Design>,
    /// The pick's rank in the model's order (1: the model's best).
    pub model_rank: usize,
}

/// `problem` with one cost group moved: every problem the spread allows with a single group at
/// either end of its spread (the others as measured). The device's three page costs move one at
/// a time (a random read, a page write, a page a merge reads in order), each keeping the other
/// two's seconds.
fn moved_costs(problem: &TuningProblem, spread: &CostSpread) -> Vec<TuningProblem> {
    let mut moved = Vec::new();
    for factor in [spread.device, 1.0 / spread.device] {
        if spread.device > 1.0 {
            let mut read = *problem;
            read.device.seconds_per_read *= factor;
            read.device.write_read_cost_ratio /= factor;
            read.device.merge_read_cost_ratio /= factor;
            let mut write = *problem;
            write.device.write_read_cost_ratio *= factor;
            let mut merge_read = *problem;
            merge_read.device.merge_read_cost_ratio *= factor;
            moved.extend([read, write, merge_read]);
        }
    }
    for factor in [spread.processor, 1.0 / spread.processor] {
        if spread.processor > 1.0 {
            let scaled = |edit: fn(&mut TuningProblem, f64)| {
                let mut p = *problem;
                edit(&mut p, factor);
                p
            };
            moved.extend([
                scaled(|p, k| p.device.cpu.seconds_per_lookup *= k),
                scaled(|p, k| p.device.cpu.seconds_per_run_probed *= k),
                scaled(|p, k| p.device.cpu.seconds_per_run_sought *= k),
                scaled(|p, k| p.device.cpu.seconds_per_update *= k),
                scaled(|p, k| p.device.cpu.seconds_per_entry_merged *= k),
            ]);
        }
    }
    for factor in [spread.flush, 1.0 / spread.flush] {
        if spread.flush > 1.0 {
            let mut p = *problem;
            p.device.cpu.seconds_per_flush *= factor;
            moved.push(p);
        }
    }
    moved
}

/// `design`'s throughput on `problem`, its writes priced as the tuning priced them (the
/// replay's merges stay: a moved cost moves no byte written).
fn again(problem: &TuningProblem, design: &Design) -> Result<f64> {
    Ok(evaluate_as_priced(problem, design)?
        .predicted
        .throughput_ops)
}

/// The merge I/Os per update `design` is predicted to cost (`Prediction::update_io`), the order
/// ties are broken in. A problem that prices a merge's pages at nothing (auto-tune once it has
/// measured the write costs: merges are priced by the stalls they cause, `rho = phi = 0`, and
/// every design's `update_io` is 0) is priced again with a page written at a page read's cost,
/// so that designs are still told apart by the merges they do: `update_io` is the merges per
/// update times `(rho + phi) / B`, the same factor for every design of one problem.
fn merge_ios(problem: &TuningProblem, design: &Design) -> Result<f64> {
    let device = &problem.device;
    if device.write_read_cost_ratio + device.merge_read_cost_ratio > 0.0 {
        return Ok(design.predicted.update_io);
    }
    let mut priced = *problem;
    priced.device.write_read_cost_ratio = 1.0;
    Ok(evaluate_as_priced(&priced, design)?.predicted.update_io)
}

/// The designs of `tuning` (from [`super::tuner::tune`] on `problem`) tied with its best within
/// `spread`, and the tuning with the tie broken toward the fewest merge I/Os per update (module
/// docs). The merges are compared on one pricing: where some tied designs' writes were priced by
/// their replays and others' by the closed form, the others are replayed too
/// ([`evaluate_replayed`]) and kept among the ties only if still tied; the closed form priced
/// designs' merges at 0.50-1.02 of their replays in a sitting of recipe 27, so without this a
/// design ranked far down won on merges it was never replayed for. With [`CostSpread::NONE`], or
/// a workload without updates, the tuning is unchanged (ties are still listed where the spread
/// shows them). A spread below 1 or not finite is an
/// [`Error::InvalidArgument`].
pub fn break_ties(
    problem: &TuningProblem,
    tuning: &Tuning,
    spread: &CostSpread,
) -> Result<TieBreak> {
    spread.validate()?;
    let best = tuning.recommended;
    let moved = moved_costs(problem, spread);
    let best_moved: Vec<f64> = moved
        .iter()
        .map(|p| again(p, &best))
        .collect::<Result<_>>()?;
    let floor = best.predicted.throughput_ops / spread.largest();
    let ties_best = |design: &Design| -> Result<bool> {
        if design.predicted.throughput_ops < floor {
            return Ok(false);
        }
        let mut ties = design.predicted.throughput_ops >= best.predicted.throughput_ops;
        for (p, best_there) in moved.iter().zip(&best_moved) {
            if ties {
                break;
            }
            ties = again(p, design)? >= *best_there;
        }
        Ok(ties)
    };
    let mut tied = vec![best];
    for design in tuning.candidates.iter().skip(1) {
        if ties_best(design)? {
            tied.push(*design);
        }
    }
    let (tied, repriced) = on_one_pricing(problem, tied, &ties_best)?;
    // The fewest merge I/Os per update; the first in the model's order among equals.
    let pick = if problem.workload.updates > 0.0 {
        let merges = tied
            .iter()
            .map(|design| merge_ios(problem, design))
            .collect::<Result<Vec<f64>>>()?;
        let mut pick = 0;
        for (i, ios) in merges.iter().enumerate() {
            if *ios < merges[pick] {
                pick = i;
            }
        }
        tied[pick]
    } else {
        best
    };
    let ordered = in_model_order(&tuning.candidates, &repriced);
    let model_rank = ordered.iter().position(|d| *d == pick).map_or(1, |i| i + 1);
    let mut candidates = Vec::with_capacity(ordered.len());
    candidates.push(pick);
    candidates.extend(ordered.iter().filter(|d| **d != pick).copied());
    Ok(TieBreak {
        tuning: Tuning {
            recommended: pick,
            candidates,
        },
        tied,
        model_rank,
    })
}

/// `tied` with its merges on one pricing: where the tuning replayed some of the tied designs, the
/// others are replayed too (at most [`MAX_WRITE_REPLAYS`]) and kept only if `ties_best` still
/// holds for them replayed; a design left unreplayed is dropped, so it is not picked. Returns the
/// ties and the designs replayed here (tied or not).
fn on_one_pricing(
    problem: &TuningProblem,
    tied: Vec<Design>,
    ties_best: &dyn Fn(&Design) -> Result<bool>,
) -> Result<(Vec<Design>, Vec<Design>)> {
    let replayed_any = tied
        .iter()
        .any(|d| matches!(d.writes, WritePricing::Replay { .. }));
    if problem.workload.updates <= 0.0 || !replayed_any {
        return Ok((tied, Vec::new()));
    }
    let mut kept = Vec::with_capacity(tied.len());
    let mut repriced = Vec::new();
    for design in tied {
        if design.writes != WritePricing::ClosedForm {
            kept.push(design);
            continue;
        }
        if repriced.len() >= MAX_WRITE_REPLAYS {
            continue;
        }
        let replayed = evaluate_replayed(problem, &design)?;
        repriced.push(replayed);
        if matches!(replayed.writes, WritePricing::Replay { .. }) && ties_best(&replayed)? {
            kept.push(replayed);
        }
    }
    Ok((kept, repriced))
}

/// `candidates` (the model's order) with the designs in `repriced` at their new prices, sorted
/// again by predicted throughput (stable: equals keep the model's order).
fn in_model_order(candidates: &[Design], repriced: &[Design]) -> Vec<Design> {
    let mut ordered = candidates.to_vec();
    if repriced.is_empty() {
        return ordered;
    }
    for design in &mut ordered {
        let same = |r: &&Design| {
            r.policy == design.policy
                && r.filters == design.filters
                && r.size_ratio == design.size_ratio
                && r.buffer_bits == design.buffer_bits
        };
        if let Some(again) = repriced.iter().find(same) {
            *design = *again;
        }
    }
    ordered.sort_by(|a, b| {
        b.predicted
            .throughput_ops
            .total_cmp(&a.predicted.throughput_ops)
    });
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::CompactionKind;
    use crate::model::tuner::{tune, tune_with_replays, CpuCosts, Device, Workload};

    /// The inputs `strata tune --measure-device` printed for mnemosyne-ii:1 in the sitting of
    /// docs/BENCHMARKS.md, "Tuner vs reality with all seven merge policies as candidates": 1M
    /// entries of 128 bytes, 16 bits per entry, 75.6% empty lookups and 24.4% updates.
    fn recorded_problem(updates: f64) -> TuningProblem {
        let entries = 1e6;
        TuningProblem {
            entries,
            entry_bytes: 128.0,
            memory_bits: 16.0 * entries,
            workload: Workload {
                point_lookups: 1.0 - updates,
                zero_result_fraction: 1.0,
                range_lookups: 0.0,
                selectivity: 0.0,
                updates,
                long_scans: None,
                key_bytes: None,
            },
            device: Device {
                seconds_per_read: 73.8e-6,
                write_read_cost_ratio: 0.728,
                merge_read_cost_ratio: 0.158,
                page_bytes: 4096.0,
                cpu: CpuCosts {
                    seconds_per_lookup: 0.020e-6,
                    seconds_per_run_probed: 0.593e-6,
                    seconds_per_run_sought: 0.0,
                    seconds_per_block_searched: 0.0,
                    seconds_per_update: 6.802e-6,
                    seconds_per_entry_merged: 0.0,
                    merge_threads: 0.0,
                    seconds_per_flush: 8700e-6,
                    foreground_share_of_merges: 0.0,
                },
            },
            fixed_buffer_bits: None,
            max_point_lookup_io: None,
            max_update_io: None,
            level0_runs: 1.5,
            block_cache_bytes: 0.0,
            point_read_miss_share: 1.0,
        }
    }

    fn spread(device: f64, processor: f64, flush: f64) -> CostSpread {
        CostSpread {
            device,
            processor,
            flush,
        }
    }

    /// Checks what `broken` says against `tuning` and `problem`, independently of how
    /// [`break_ties`] found it.
    fn check(problem: &TuningProblem, tuning: &Tuning, spread: &CostSpread, broken: &TieBreak) {
        let best = tuning.recommended;
        assert_eq!(broken.tied[0], best, "the model's best heads the ties");
        let is_replayed = |d: &Design| matches!(d.writes, WritePricing::Replay { .. });
        let settings = |d: &Design| (d.policy, d.filters, d.size_ratio, d.buffer_bits);
        // The candidates are the model's, the pick first, the rest in the model's order; a
        // design the tuning priced by the closed form may come back replayed.
        let listed = &broken.tuning.candidates;
        assert_eq!(listed.len(), tuning.candidates.len());
        assert_eq!(listed[0], broken.tuning.recommended);
        for design in listed {
            let before = tuning
                .candidates
                .iter()
                .find(|d| settings(d) == settings(design))
                .expect("a candidate of the tuning");
            assert!(
                before == design
                    || (before.writes == WritePricing::ClosedForm && is_replayed(design)),
                "{design:?}"
            );
        }
        let rest = &listed[1..];
        if listed.iter().all(|d| tuning.candidates.contains(d)) {
            let kept: Vec<Design> = tuning
                .candidates
                .iter()
                .filter(|d| **d != broken.tuning.recommended)
                .copied()
                .collect();
            assert_eq!(rest, &kept[..]);
            assert_eq!(
                tuning.candidates[broken.model_rank - 1],
                broken.tuning.recommended
            );
        } else {
            assert!(rest
                .windows(2)
                .all(|w| w[0].predicted.throughput_ops >= w[1].predicted.throughput_ops));
        }
        // The pick is tied and merges least among the ties.
        assert!(broken.tied.contains(&broken.tuning.recommended));
        for design in &broken.tied {
            assert!(
                broken.tuning.recommended.predicted.update_io <= design.predicted.update_io,
                "{design:?}"
            );
        }
        // Every candidate is tied exactly when some single moved cost ranks it at least level
        // with the best (checked here on every candidate, without the shortcut); where some tied
        // designs were replayed, only replayed ones are.
        let mixed = problem.workload.updates > 0.0 && broken.tied.iter().any(is_replayed);
        let moved = moved_costs(problem, spread);
        for design in listed.iter().filter(|d| **d != best) {
            let level_somewhere = design.predicted.throughput_ops >= best.predicted.throughput_ops
                || moved.iter().any(|p| {
                    again(p, design).expect("evaluates") >= again(p, &best).expect("evaluates")
                });
            let eligible = !mixed || is_replayed(design);
            assert_eq!(
                broken.tied.contains(design),
                level_somewhere && eligible,
                "{design:?}"
            );
        }
    }

    #[test]
    fn without_a_spread_the_models_ranking_stands() {
        let problem = recorded_problem(0.244);
        let tuning = tune(&problem).expect("tune");
        let broken = break_ties(&problem, &tuning, &CostSpread::NONE).expect("breaks");
        assert_eq!(broken.tuning, tuning);
        assert_eq!(broken.model_rank, 1);
        check(&problem, &tuning, &CostSpread::NONE, &broken);
    }

    #[test]
    fn the_recorded_near_tie_goes_to_the_design_that_merges_least() {
        let problem = recorded_problem(0.244);
        // The closed form's order, the one the sitting ranked by (the replay re-prices these
        // designs' writes and orders them otherwise: `tuner`'s tests).
        let tuning = tune_with_replays(&problem, 0).expect("tune");
        // The model's order as the sitting printed it: Garnering c = 0.8 ahead of the two
        // levelings by 1.8%, with more merge I/Os per update.
        let [first, second, third] = [0, 1, 2].map(|i| tuning.candidates[i]);
        assert_eq!(first.policy.kind(), CompactionKind::Garnering);
        assert_eq!(second.policy.kind(), CompactionKind::LevelingDynamic);
        assert_eq!(third.policy.kind(), CompactionKind::Leveling);
        let gap = first.predicted.throughput_ops / second.predicted.throughput_ops;
        assert!(gap > 1.0 && gap < 1.03, "{gap}");
        assert!(second.predicted.update_io < first.predicted.update_io);
        // A spread of 1.6 in the processor's costs alone: at 1.6 times fewer seconds per run
        // probed, the levelings' one more run costs less than Garnering's extra merges.
        let spread = spread(1.0, 1.6, 1.0);
        let broken = break_ties(&problem, &tuning, &spread).expect("breaks");
        check(&problem, &tuning, &spread, &broken);
        assert!(broken.tied.len() >= 3, "{:?}", broken.tied);
        assert!(broken.tied.contains(&second));
        assert!(
            broken.tuning.recommended.predicted.update_io <= second.predicted.update_io,
            "{:?}",
            broken.tuning.recommended
        );
        assert!(broken.model_rank > 1);
        // Ties are never far: within the largest spread of the model's best.
        for design in &broken.tied {
            assert!(design.predicted.throughput_ops * 1.6 >= first.predicted.throughput_ops);
        }
        // A spread too small to close the gap leaves the ranking as it was.
        let narrow = spread_of(1.001);
        let kept = break_ties(&problem, &tuning, &narrow).expect("breaks");
        check(&problem, &tuning, &narrow, &kept);
        assert_eq!(kept.tied, vec![first]);
        assert_eq!(kept.tuning, tuning);
    }

    #[test]
    fn merges_priced_at_nothing_still_break_ties_by_the_merges() {
        // Auto-tune's problem once it has measured the write costs: a merge's pages priced at
        // nothing (`rho = phi = 0`), its stalls per entry merged priced instead. Every design's
        // `update_io` is then 0; the tie still goes to the fewest merges.
        let mut problem = recorded_problem(0.244);
        problem.device.write_read_cost_ratio = 0.0;
        problem.device.merge_read_cost_ratio = 0.0;
        problem.device.cpu.seconds_per_entry_merged = 0.05e-6;
        // The closed form's order, whose near-tie this recorded problem holds (the replay's
        // writes separate its designs).
        let tuning = tune_with_replays(&problem, 0).expect("tune");
        assert!(tuning
            .candidates
            .iter()
            .all(|d| d.predicted.update_io == 0.0));
        let spread = spread(1.0, 3.0, 1.0);
        let broken = break_ties(&problem, &tuning, &spread).expect("breaks");
        check(&problem, &tuning, &spread, &broken);
        let mut paged = problem;
        paged.device.write_read_cost_ratio = 1.0;
        let merges = |design: &Design| {
            evaluate_as_priced(&paged, design)
                .expect("evaluates")
                .predicted
                .update_io
        };
        let pick = merges(&broken.tuning.recommended);
        assert!(broken.tied.len() >= 2, "{:?}", broken.tied);
        for design in &broken.tied {
            assert!(pick <= merges(design), "{design:?}");
        }
        assert!(pick < merges(&tuning.recommended), "{:?}", broken.tied);
        assert!(broken.model_rank > 1);
    }

    /// The inputs `strata tune --measure-device` printed for mnemosyne-ii:1 in the sitting of
    /// docs/BENCHMARKS.md, "The replay's flush bound": merges on one thread beside the
    /// operations, half their processor time paid by the operations' thread.
    fn sitting_with_the_share() -> (TuningProblem, CostSpread) {
        let mut problem = recorded_problem(0.244);
        problem.device.seconds_per_read = 87.2e-6;
        problem.device.write_read_cost_ratio = 0.052;
        problem.device.merge_read_cost_ratio = 0.093;
        problem.device.cpu = CpuCosts {
            seconds_per_lookup: 0.047e-6,
            seconds_per_run_probed: 0.190e-6,
            seconds_per_run_sought: 2.587e-6,
            seconds_per_block_searched: 1.111e-6,
            seconds_per_update: 2.761e-6,
            seconds_per_entry_merged: 0.518e-6,
            merge_threads: 1.0,
            seconds_per_flush: 919e-6,
            foreground_share_of_merges: 0.5,
        };
        (problem, spread(1.084, 1.575, 1.132))
    }

    /// The tie the sitting's rule broke toward Garnering c = 1 at T = 2.37, the model's rank 16,
    /// whose writes only the closed form had priced (0.0249 merge I/Os per update against
    /// 0.039-0.045 for the tied designs replayed): the closed form prices Garnering's merges below its
    /// replay, and the pick ran 15% below the fastest of the three. Now every tied design is
    /// replayed before their merges are compared.
    #[test]
    fn tied_designs_are_compared_on_their_replays_not_the_closed_form() {
        let (problem, spread) = sitting_with_the_share();
        let tuning = tune(&problem).expect("tune");
        let best = tuning.recommended;
        assert!(
            matches!(best.writes, WritePricing::Replay { .. }),
            "{best:?}"
        );
        let broken = break_ties(&problem, &tuning, &spread).expect("breaks");
        check(&problem, &tuning, &spread, &broken);
        // What the rule saw before: a tied design priced by the closed form, merging less than
        // every replayed one.
        let moved = moved_costs(&problem, &spread);
        let tied_as_priced = |d: &Design| {
            d.predicted.throughput_ops >= best.predicted.throughput_ops
                || moved
                    .iter()
                    .any(|p| again(p, d).expect("evaluates") >= again(p, &best).expect("evaluates"))
        };
        let closed_tied: Vec<&Design> = tuning
            .candidates
            .iter()
            .filter(|d| d.writes == WritePricing::ClosedForm && tied_as_priced(d))
            .collect();
        let least_replayed = tuning
            .candidates
            .iter()
            .filter(|d| matches!(d.writes, WritePricing::Replay { .. }) && tied_as_priced(d))
            .map(|d| d.predicted.update_io)
            .fold(f64::INFINITY, f64::min);
        assert!(
            closed_tied
                .iter()
                .any(|d| d.predicted.update_io < least_replayed),
            "{closed_tied:?}"
        );
        // Now: every tied design replayed, still tied at its replayed price, the pick the one
        // that merges least of them.
        assert!(broken.tied.len() >= 2, "{:?}", broken.tied);
        assert!(broken
            .tied
            .iter()
            .all(|d| matches!(d.writes, WritePricing::Replay { .. })));
        let pick = broken.tuning.recommended;
        for design in &broken.tied {
            assert!(tied_as_priced(design), "{design:?}");
            assert!(
                pick.predicted.update_io <= design.predicted.update_io,
                "{design:?}"
            );
        }
        // The candidates: the pick first, the rest in the model's order at their new prices,
        // none lost.
        assert_eq!(broken.tuning.candidates.len(), tuning.candidates.len());
        assert_eq!(broken.tuning.candidates[0], pick);
        assert!(broken.tuning.candidates[1..]
            .windows(2)
            .all(|w| { w[0].predicted.throughput_ops >= w[1].predicted.throughput_ops }));
        let rank_of_pick = broken.tuning.candidates[1..]
            .iter()
            .filter(|d| d.predicted.throughput_ops > pick.predicted.throughput_ops)
            .count()
            + 1;
        assert_eq!(broken.model_rank, rank_of_pick);
        eprintln!(
            "pick {:?} T={:.2} rank {} W {:.4}; tied {}",
            pick.policy,
            pick.size_ratio,
            broken.model_rank,
            pick.predicted.update_io,
            broken.tied.len()
        );
    }

    fn spread_of(factor: f64) -> CostSpread {
        spread(factor, factor, factor)
    }

    #[test]
    fn every_cost_group_can_tie_and_a_workload_without_updates_keeps_the_best() {
        let problem = recorded_problem(0.244);
        let tuning = tune(&problem).expect("tune");
        for spread in [
            spread(1.3, 1.0, 1.0),
            spread(1.0, 1.3, 1.0),
            spread(1.0, 1.0, 3.0),
            spread_of(2.0),
        ] {
            let broken = break_ties(&problem, &tuning, &spread).expect("breaks");
            check(&problem, &tuning, &spread, &broken);
        }
        let reads = recorded_problem(0.0);
        let tuning = tune(&reads).expect("tune");
        let broken = break_ties(&reads, &tuning, &spread_of(2.0)).expect("breaks");
        check(&reads, &tuning, &spread_of(2.0), &broken);
        assert_eq!(broken.tuning, tuning);
        assert_eq!(broken.model_rank, 1);
    }

    #[test]
    fn bad_spreads_and_rounds_are_errors() {
        let problem = recorded_problem(0.244);
        let tuning = tune(&problem).expect("tune");
        for bad in [0.5, 0.0, f64::NAN, f64::INFINITY, -2.0] {
            assert!(break_ties(&problem, &tuning, &spread(bad, 1.0, 1.0)).is_err());
            assert!(break_ties(&problem, &tuning, &spread(1.0, bad, 1.0)).is_err());
            assert!(break_ties(&problem, &tuning, &spread(1.0, 1.0, bad)).is_err());
        }
        assert_eq!(
            CostSpread::of_rounds(&[2.0, 1.0, 1.5]).expect("spread"),
            2.0
        );
        // From five rounds the slowest and the fastest are left out: one sync twenty times
        // another's does not widen the spread.
        let five = CostSpread::of_rounds(&[1.0, 20.0, 1.5, 1.2, 0.5]).expect("spread");
        assert!((five - 1.5 / 1.0).abs() < 1e-12, "{five}");
        assert_eq!(CostSpread::of_rounds(&[3.0]).expect("spread"), 1.0);
        assert_eq!(CostSpread::of_rounds(&[]).expect("spread"), 1.0);
        assert!(CostSpread::of_rounds(&[1.0, 0.0]).is_err());
        assert!(CostSpread::of_rounds(&[1.0, f64::NAN]).is_err());
    }
}
