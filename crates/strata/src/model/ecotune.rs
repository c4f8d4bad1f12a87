//! Strata's model of EcoTune (DESIGN.md §6, §7.8; docs/decisions/ecotune-departures.md): its three
//! levels as the policy sizes them and the merges of one round as its dynamic program schedules
//! them. EcoTune takes no size ratio: its tree is a function of the data, the write buffer, the
//! workload's long scans (`r`, `K`) and the speed of merging against writing (`T_c / T_w`).
//!
//! - **Top level** (level 0): a unit of `S = max(buffer, N / max(100, K))` entries taken as whole
//!   flushes, `u = round(S / buffer)` of them (`EcoTune::unit_bytes`, `unit_flushes`); on average
//!   `(u - 1) / 2` flushed runs wait there, as `(trigger - 1) / 2` wait on level 0 under the other
//!   policies. Its full key index sends a point lookup to the one run holding the key, or to none:
//!   a lookup of a missing key reads nothing there, so the top level takes no filter memory; the
//!   index takes [`index_bits_per_key`] per key of a full top level from the memory budget
//!   instead ([`index_bits`]): [`TOP_INDEX_HASHED_BITS_PER_KEY`] for the hashed half point lookups
//!   probe, the key's bytes and a 4-byte offset for the ordered half range lookups read.
//!   A range lookup opens only the top-level runs holding a key it reads
//!   ([`top_runs_sought`]).
//! - **Main level** (level 1): `R = round(N / (Ccap * S))` units a round, between 2 and
//!   `max_units` (`EcoTune::units`). The round's schedule is the dynamic program's (Algorithm 2,
//!   `compaction::ecotune::dp`) for the round parameters the policy would log; the main level after
//!   arrival `k` holds the runs `dp::run_sizes` gives, `k` units in all.
//! - **Last level** (level 2): one run of the rest, `N - top - (R + 1)/2 * S` entries (at least
//!   one unit).
//!
//! Lookups are costed on every arrival's tree (main runs newest first, then the last run) and
//! averaged over the round. An update is rewritten by the TM compaction that makes its unit
//! (once), by the schedule's ML merges (their units over `R`) and by the global compaction that
//! closes the round, which rewrites the round's `R` units with the last level:
//! `(R * S + last) / (R * S)` per entry. That is the merges' cost as the dynamic program sees
//! them — it charges the global compaction `(Ccap + 1) * R` units — with the last level's actual
//! size in place of `Ccap * R` units.

use super::check;
use super::per_run::{ModelLevel, RunTree};
use crate::compaction::ecotune::dp::{run_sizes, Dp, Merge, RoundParameters};
use crate::compaction::ecotune::EcoTuneSettings;
use crate::error::{Error, Result};

/// Bits of memory the top level's hashed key index takes per key: a slot of a 64-bit key hash, a
/// 64-bit run id and a control byte (`db/top_index.rs`; the table's slack comes on top).
pub const TOP_INDEX_HASHED_BITS_PER_KEY: f64 = 17.0 * 8.0;

/// Bits of memory the ordered half of the top level's index takes per key beside the key's own
/// bytes: the 4-byte offset where the key ends in its run's packed keys (`db/top_index.rs`).
pub const TOP_INDEX_ORDERED_OVERHEAD_BITS_PER_KEY: f64 = 4.0 * 8.0;

/// Bits of memory the top level's index takes per key of `key_bytes` bytes: the hashed half's
/// slot and the ordered half's key and offset.
pub fn index_bits_per_key(key_bytes: f64) -> f64 {
    TOP_INDEX_HASHED_BITS_PER_KEY
        + TOP_INDEX_ORDERED_OVERHEAD_BITS_PER_KEY
        + key_bytes.max(0.0) * 8.0
}

/// `(u, S)`: the flushes a unit is made of and its entries, `S = max(buffer, N / max(100, K))`
/// rounded to whole flushes (`EcoTune::unit_bytes`, `EcoTune::unit_flushes`).
pub fn unit(entries: f64, buffer_entries: f64, scan_length: f64) -> (f64, f64) {
    let wanted = (entries / scan_length.max(100.0)).max(buffer_entries);
    let flushes = (wanted / buffer_entries).round().clamp(1.0, 1e6);
    (flushes, flushes * buffer_entries)
}

/// Memory bits the top level's key index takes when the top level is full (one unit of keys of
/// `key_bytes` bytes).
pub fn index_bits(entries: f64, buffer_entries: f64, scan_length: f64, key_bytes: f64) -> f64 {
    unit(entries, buffer_entries, scan_length).1 * index_bits_per_key(key_bytes)
}

/// Top-level runs a range lookup opens (`db/top_iter.rs`), of `runs` runs of `run_entries` keys
/// each spread over the key range, for a range holding `selectivity` of the tree's keys: the runs
/// holding a key in it, `runs * (1 - (1 - s)^run_entries)`. A closed range and an open scan of
/// the same entries alike: a scan waits on the next run's first key from the index and opens it
/// only when it reads that far.
pub fn top_runs_sought(runs: f64, run_entries: f64, selectivity: f64) -> f64 {
    if !(runs > 0.0 && run_entries > 0.0) {
        return 0.0;
    }
    // A selectivity that is not a number reads nothing.
    let s = if selectivity.is_nan() {
        0.0
    } else {
        selectivity.clamp(0.0, 1.0)
    };
    // (1 - s)^m, the chance a run of m keys holds none of the range's.
    let missed = (run_entries * (-s).ln_1p()).exp();
    runs * (1.0 - missed)
}

/// What EcoTune's tree is built from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EcoTuneInputs {
    /// Entries in the tree (`N`).
    pub entries: f64,
    /// Entries of one write buffer.
    pub buffer_entries: f64,
    /// `r`: the share of queries that are long range scans, in `[0, 1]`.
    pub long_scan_ratio: f64,
    /// `K`: entries of a long range scan.
    pub scan_length: f64,
    /// `f`: the filters' false-positive rate the round's program sees, in `[0, 1]`.
    pub false_positive_rate: f64,
    /// `T_c / T_w`: the time to rewrite a unit over the time between two units.
    pub tc_over_tw: f64,
    /// `Ccap`, `beta_q` and `max_units` (the registry's defaults are the paper's).
    pub settings: EcoTuneSettings,
}

/// EcoTune's idealised tree over one round and what an update costs on it.
#[derive(Debug, Clone, PartialEq)]
pub struct EcoTuneTree {
    /// `S`, entries of a unit (whole flushes).
    pub unit_entries: f64,
    /// Flushes a unit is made of.
    pub unit_flushes: u32,
    /// Flushed runs waiting on the top level on average: `(u - 1) / 2`.
    pub top_runs: f64,
    /// The round's parameters as the policy would log them (`T_w = 1`), the measured ones on the
    /// model's grid (`r`, `f` and `T_c` within half a percent; `f` is 0 without long scans).
    pub parameters: RoundParameters,
    /// The round's schedule, its global compaction last.
    pub schedule: Vec<Merge>,
    /// The runs below the top level after each arrival: the main level's newest first, then the
    /// last level's one run.
    pub arrivals: Vec<RunTree>,
    /// Entries of the last level.
    pub last_entries: f64,
    /// Times a merge rewrites an entry on its way to the last level (see the module docs).
    pub merges_per_update: f64,
}

impl EcoTuneTree {
    /// Runs below the top level, averaged over the round's arrivals.
    pub fn average_runs(&self) -> f64 {
        self.arrivals.iter().map(RunTree::runs).sum::<f64>() / self.arrivals.len().max(1) as f64
    }
}

/// Schedules [`schedule`] found lately, with their parameters on the grid ([`on_grid`]), newest
/// last.
static SCHEDULES: std::sync::Mutex<Vec<(RoundParameters, Vec<Merge>)>> =
    std::sync::Mutex::new(Vec::new());

/// How many schedules [`SCHEDULES`] keeps: a decision asks for a few rounds per candidate and per
/// cost its tie-break moves (`model::ties`), which a list this long holds.
const REMEMBERED_SCHEDULES: usize = 64;

/// The grid's step for the measured round parameters, relative: 1%.
const GRID_STEP: f64 = 0.01;

/// `parameters` with their measured values (`r`, `f`, `T_c`) rounded to the nearest point of a
/// geometric grid of [`GRID_STEP`], and `f` taken as 0 when `r` is 0.
///
/// - With no long scans (`r = 0`) every main-level run count has the same query speed,
///   `q(e) = 1 / (1 + f)`, so every schedule's score is the same multiple of it and `f` changes
///   no schedule's rank.
/// - `r` and `T_c / T_w` are measured, and two measurements of them differ by more than 1% (the
///   merge and write timings' spreads, DESIGN.md §10); the schedule for the grid point is the
///   program's optimum for parameters within half a step of the given. Without the grid, two
///   decisions' inputs that differ in their last bits, or by less than a measurement can tell
///   apart, each ran the whole program (measured on the shifting workload's fill: 30 programs of
///   5-35 ms each, most of auto-tune's decision time).
fn on_grid(parameters: RoundParameters) -> RoundParameters {
    // Values out of range are left as given, for the program to refuse.
    let snap = |x: f64| {
        if x > 0.0 && x.is_finite() {
            let step = GRID_STEP.ln_1p();
            ((x.ln() / step).round() * step).exp()
        } else {
            x
        }
    };
    let share = |x: f64| if x <= 1.0 { snap(x).min(1.0) } else { x };
    let long_scan_ratio = share(parameters.long_scan_ratio);
    RoundParameters {
        long_scan_ratio,
        false_positive_rate: if long_scan_ratio == 0.0
            && (0.0..=1.0).contains(&parameters.false_positive_rate)
        {
            0.0
        } else {
            share(parameters.false_positive_rate)
        },
        t_c: snap(parameters.t_c),
        ..parameters
    }
}

/// The round's merge schedule (`Dp::schedule`) for `parameters`, remembered: the dynamic program is nearly all of a tuner run's work (about 18 million
/// instructions a schedule at a million entries), and auto-tune asks for the same rounds decision
/// after decision while the tree and the mix hold ([`tree`] asks for grid points, [`on_grid`]). A
/// pure function of `parameters`, so a remembered schedule is the one the program would find
/// again.
fn schedule(parameters: RoundParameters) -> Result<Vec<Merge>> {
    // A panic elsewhere while the list was held leaves a list still valid: take it.
    let remembered = || {
        SCHEDULES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some((_, found)) = remembered().iter().find(|(key, _)| *key == parameters) {
        return Ok(found.clone());
    }
    let schedule = Dp::new(parameters)
        .map_err(Error::InvalidArgument)?
        .schedule();
    let mut schedules = remembered();
    if schedules.len() >= REMEMBERED_SCHEDULES {
        schedules.remove(0);
    }
    schedules.push((parameters, schedule.clone()));
    Ok(schedule)
}

/// EcoTune's tree for `inputs` (see the module docs).
pub fn tree(inputs: &EcoTuneInputs) -> Result<EcoTuneTree> {
    let n = inputs.entries;
    check("entries", n, n >= 1.0, "finite and >= 1")?;
    let buffer = inputs.buffer_entries;
    check("buffer entries", buffer, buffer > 0.0, "finite and > 0")?;
    let k = inputs.scan_length;
    check("scan length", k, k >= 0.0, "finite and >= 0")?;
    inputs.settings.validate()?;
    let ccap = inputs.settings.ccap.max(1);
    let (unit_flushes, unit) = unit(n, buffer, k);
    let top_runs = (unit_flushes - 1.0) / 2.0;
    let top = top_runs * buffer;
    // `R` as `EcoTune::units`: what lies below the top level over `Ccap` units.
    let below = (n - top).max(unit);
    let units = (below / (f64::from(ccap) * unit))
        .round()
        .clamp(2.0, f64::from(inputs.settings.max_units.max(2))) as u32;
    let parameters = on_grid(RoundParameters {
        long_scan_ratio: inputs.long_scan_ratio,
        false_positive_rate: inputs.false_positive_rate,
        beta_q: inputs.settings.beta_q,
        t_w: 1.0,
        t_c: inputs.tc_over_tw,
        units,
        ccap,
    });
    let schedule = schedule(parameters)?;
    let r = f64::from(units);
    let last = (below - (r + 1.0) / 2.0 * unit).max(unit);
    let arrivals = run_sizes(units, &schedule)
        .into_iter()
        .map(|sizes| {
            let mut levels: Vec<ModelLevel> = sizes
                .iter()
                .rev()
                .map(|&size| ModelLevel {
                    entries: f64::from(size) * unit,
                    runs: 1.0,
                    ratio: 1.0,
                })
                .collect();
            levels.push(ModelLevel {
                entries: last,
                runs: 1.0,
                ratio: 1.0 + last / (r * unit),
            });
            RunTree { levels }
        })
        .collect();
    let ml_units: u32 = schedule
        .iter()
        .take(schedule.len().saturating_sub(1))
        .map(|merge| merge.units)
        .sum();
    let merges_per_update = 1.0 + f64::from(ml_units) / r + (r * unit + last) / (r * unit);
    Ok(EcoTuneTree {
        unit_entries: unit,
        unit_flushes: unit_flushes as u32,
        top_runs,
        parameters,
        schedule,
        arrivals,
        last_entries: last,
        merges_per_update,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::ecotune::dp;

    fn inputs(entries: f64, r: f64, tc_over_tw: f64) -> EcoTuneInputs {
        EcoTuneInputs {
            entries,
            buffer_entries: 1_000.0,
            long_scan_ratio: r,
            scan_length: 100.0,
            false_positive_rate: 0.01,
            tc_over_tw,
            settings: EcoTuneSettings::default(),
        }
    }

    /// A remembered schedule is the program's: the same inputs give the same tree again, its
    /// parameters are remembered, and the list holds at most its bound.
    #[test]
    fn remembered_schedules_are_the_programs() {
        let first = tree(&inputs(1.3e6, 0.2, 0.1)).expect("tree");
        let again = tree(&inputs(1.3e6, 0.2, 0.1)).expect("tree");
        assert_eq!(first, again);
        let mut dp = Dp::new(first.parameters).expect("valid");
        assert_eq!(again.schedule, dp.schedule());
        // Other tests run trees beside this one, so the list may have moved on since; a tree
        // asked for now is remembered now.
        let _ = tree(&inputs(1.7e6, 0.25, 0.1)).expect("tree");
        for r in 0..(REMEMBERED_SCHEDULES as u32 + 4) {
            let _ = tree(&inputs(1.0e6 + f64::from(r) * 50_000.0, 0.3, 0.1)).expect("tree");
        }
        let schedules = SCHEDULES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert!(schedules.len() <= REMEMBERED_SCHEDULES);
        for (parameters, schedule) in schedules.iter() {
            assert_eq!(*schedule, Dp::new(*parameters).expect("valid").schedule());
        }
    }

    /// The grid: within half a step of the input, the same point for inputs closer than their
    /// last bits or within one step's rounding, `r` at most 1, and without long scans `f` taken
    /// as 0 — which changes no schedule, every run count then querying at the same speed.
    #[test]
    fn measured_round_parameters_snap_to_a_grid_that_keeps_the_programs_schedule() {
        let at = |r: f64, f: f64, t_c: f64| RoundParameters {
            long_scan_ratio: r,
            false_positive_rate: f,
            beta_q: 0.5,
            t_w: 1.0,
            t_c,
            units: 24,
            ccap: 3,
        };
        for (r, f, t_c) in [
            (0.3, 0.05, 0.222_967),
            (0.999_9, 0.01, 4.0),
            (1e-4, 1.0, 1e-3),
        ] {
            let snapped = on_grid(at(r, f, t_c));
            for (given, got) in [
                (r, snapped.long_scan_ratio),
                (f, snapped.false_positive_rate),
                (t_c, snapped.t_c),
            ] {
                assert!(
                    (got / given - 1.0).abs() <= 0.005 + 1e-12,
                    "{given} -> {got}"
                );
            }
            assert!(snapped.long_scan_ratio <= 1.0 && snapped.false_positive_rate <= 1.0);
            assert_eq!((snapped.units, snapped.ccap, snapped.beta_q), (24, 3, 0.5));
            assert_eq!(on_grid(snapped), snapped, "a grid point is its own");
        }
        // Two decisions' T_c that differ in their last bits, or by 0.1%, ask for one round.
        assert_eq!(
            on_grid(at(0.3, 0.05, 0.222_967_338_156_881_72)),
            on_grid(at(0.3, 0.05, 0.222_967_338_156_881_7))
        );
        assert_eq!(
            on_grid(at(0.3, 0.05, 0.2230)).t_c,
            on_grid(at(0.3, 0.05, 0.2231)).t_c
        );
        // No long scans: f is 0, and the program's schedule is the one it finds at any f.
        let without_scans = on_grid(at(0.0, 0.058_8, 0.223));
        assert_eq!(without_scans.false_positive_rate, 0.0);
        assert_eq!(without_scans.long_scan_ratio, 0.0);
        for f in [0.0, 0.058_8, 0.5] {
            let mut dp = Dp::new(at(0.0, f, without_scans.t_c)).expect("valid");
            assert_eq!(
                dp.schedule(),
                Dp::new(without_scans).expect("valid").schedule(),
                "f = {f}"
            );
        }
        // Out-of-range values are left for the program to refuse.
        assert!(on_grid(at(f64::NAN, 0.1, 0.1)).long_scan_ratio.is_nan());
        assert_eq!(on_grid(at(1.5, 0.1, 0.1)).long_scan_ratio, 1.5);
        assert_eq!(on_grid(at(0.3, 1.5, 0.1)).false_positive_rate, 1.5);
        assert_eq!(on_grid(at(0.3, 0.1, -1.0)).t_c, -1.0);
    }

    /// Several threads asking for trees at once (auto-tune beside `strata tune` or a served
    /// database's decisions): every call returns, and each gets the program's own schedule whether
    /// it found it remembered or computed it.
    #[test]
    fn concurrent_callers_all_get_the_programs_schedule() {
        let threads: Vec<_> = (0..6u32)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..8u32)
                        .map(|i| {
                            // Half the threads share inputs, half ask for their own.
                            let entries = 1.0e6 + f64::from((t % 3) * 8 + i) * 25_000.0;
                            tree(&inputs(entries, 0.3, 0.1)).expect("tree")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in threads {
            for found in handle.join().expect("a caller panicked") {
                let mut dp = Dp::new(found.parameters).expect("valid");
                assert_eq!(found.schedule, dp.schedule());
            }
        }
    }

    /// The model's round is the policy's: `S`, `R`, the schedule the program gives those
    /// parameters, and main-level layouts that add up to the arrivals.
    #[test]
    fn the_round_is_the_dynamic_programs() {
        // N = 2.4M: S = 24,000 entries (24 flushes), R = round(2.4M - 11,500) / 72,000) = 33
        // clamped to 32.
        let model = tree(&inputs(2.4e6, 0.3, 0.1)).expect("tree");
        assert_eq!(model.unit_flushes, 24);
        assert_eq!(model.unit_entries, 24_000.0);
        assert_eq!(model.top_runs, 11.5);
        assert_eq!(model.parameters.units, 32);
        let mut dp = Dp::new(model.parameters).expect("valid");
        assert_eq!(model.schedule, dp.schedule());
        assert_eq!(model.arrivals.len(), 32);
        for (k, tree) in model.arrivals.iter().enumerate() {
            let main: f64 = tree.levels[..tree.levels.len() - 1]
                .iter()
                .map(|level| level.entries)
                .sum();
            assert!(
                (main - (k + 1) as f64 * 24_000.0).abs() < 1e-6,
                "arrival {k}"
            );
        }
        // Its score, by the event simulator, is the program's.
        let simulated = dp::simulate(&model.parameters, &model.schedule).expect("valid");
        assert!((simulated - dp.algorithm2_score()).abs() <= 1e-9 * simulated);
        // Merges per update: TM, the schedule's ML merges, the global compaction.
        let ml: u32 = model.schedule[..model.schedule.len() - 1]
            .iter()
            .map(|m| m.units)
            .sum();
        let expected =
            1.0 + f64::from(ml) / 32.0 + (32.0 * 24_000.0 + model.last_entries) / (32.0 * 24_000.0);
        assert!((model.merges_per_update - expected).abs() < 1e-12);
        let total = model.last_entries + 33.0 / 2.0 * 24_000.0 + 11.5 * 1_000.0;
        assert!((total - 2.4e6).abs() < 1e-6, "{total}");
    }

    /// The program merges more eagerly the more queries are long scans: fewer main-level runs on
    /// average, more merging per update.
    #[test]
    fn long_scans_buy_fewer_runs_with_more_merging() {
        let points = tree(&inputs(1e6, 0.0, 0.1)).expect("tree");
        let scans = tree(&inputs(1e6, 0.9, 0.1)).expect("tree");
        assert!(scans.average_runs() < points.average_runs());
        assert!(scans.merges_per_update > points.merges_per_update);
        // With no long scan nothing is gained by an ML merge that slows queries: none is run.
        assert_eq!(points.schedule.len(), 1, "{:?}", points.schedule);
    }

    /// The index holds every key of a full top level twice: a 17-byte slot in the hashed half
    /// and the key with a 4-byte offset in the ordered half.
    #[test]
    fn the_index_prices_both_halves_for_the_key_size() {
        assert_eq!(index_bits_per_key(16.0), (17.0 + 16.0 + 4.0) * 8.0);
        assert_eq!(index_bits_per_key(-1.0), (17.0 + 4.0) * 8.0);
        // N = 2.4M, buffers of 1,000 entries, K = 100: S = 24,000 keys.
        let bits = index_bits(2.4e6, 1_000.0, 100.0, 24.0);
        assert_eq!(bits, 24_000.0 * (17.0 + 24.0 + 4.0) * 8.0);
        assert!(index_bits(2.4e6, 1_000.0, 100.0, 100.0) > bits);
    }

    /// A range opens the top runs holding one of its keys, open or closed alike.
    #[test]
    fn a_range_opens_the_top_runs_holding_its_keys() {
        // Ten runs of 1,000 keys, a range of 1e-4 of the keys: (1 - 1e-4)^1000 = e^-0.1 missed.
        let missed = (1000.0 * (-1e-4f64).ln_1p()).exp();
        assert!((missed - (-0.1f64).exp()).abs() < 1e-5);
        let sought = top_runs_sought(10.0, 1_000.0, 1e-4);
        assert!((sought - 10.0 * (1.0 - missed)).abs() < 1e-12);
        assert!(sought > 0.95 && sought < 0.96, "{sought}");
        // A range over everything opens every run, an empty one none.
        assert_eq!(top_runs_sought(10.0, 1_000.0, 1.0), 10.0);
        assert_eq!(top_runs_sought(10.0, 1_000.0, 0.0), 0.0);
        assert_eq!(top_runs_sought(0.0, 1_000.0, 0.5), 0.0);
        assert_eq!(top_runs_sought(10.0, 1_000.0, f64::NAN), 0.0);
    }

    #[test]
    fn a_small_tree_has_two_units_and_bad_input_is_an_error() {
        let small = tree(&inputs(5_000.0, 0.3, 0.1)).expect("tree");
        assert_eq!(small.parameters.units, 2);
        assert_eq!(small.unit_flushes, 1);
        assert!(small.last_entries >= small.unit_entries);
        assert!(tree(&inputs(0.0, 0.3, 0.1)).is_err());
        assert!(tree(&inputs(1e6, 1.5, 0.1)).is_err());
        assert!(tree(&inputs(1e6, 0.3, 0.0)).is_err());
        assert!(tree(&EcoTuneInputs {
            buffer_entries: f64::INFINITY,
            ..inputs(1e6, 0.3, 0.1)
        })
        .is_err());
    }
}
