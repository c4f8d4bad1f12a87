//! EcoTune's dynamic programs (DESIGN.md §6; EcoTune §4.3, Algorithms 1 and 2), as pure functions.
//!
//! A round of EcoTune receives `R` unit runs, one every `T_w`, into the main level; the DP decides
//! which main-level runs to merge and when, to maximise the queries served over the round (the
//! integral of query speed over time). Query speed with `e` main-level runs is
//! `q(e) = 1 / ((e + 2) * r + (1 - r) * (1 + f))`, and `beta_q * q(e)` while a merge runs.
//!
//! Three programs, as DESIGN.md §6 states them:
//!
//! * [`Dp::simple`], `f(e, c)` (§4.3.1): merges finish within one arrival interval and do not
//!   slow queries;
//! * [`Dp::algorithm1`], `f(e, c, m)` (Algorithm 1, with the correction of DESIGN.md §6 of the last merge's
//!   run count, `q'(e + 1)`);
//! * [`Dp::algorithm2`], `f(e, b, c, m)` (Algorithm 2): merges that span several arrivals, with
//!   the units that arrive meanwhile pending (`b`). This is the one the policy follows; the other
//!   two validate it (DESIGN.md §6's exact checks, in the tests).
//!
//! The ceilings of `x * T_c / T_w` are taken with a relative tolerance (DESIGN.md §6: `T_c / T_w = 1/3`
//! with `x = 3` must count one arrival, however the floating-point product rounds).

use std::collections::HashMap;

/// Relative tolerance of the arrival counts' ceilings.
const CEIL_TOLERANCE: f64 = 1e-9;

/// The parameters of one round (DESIGN.md §6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundParameters {
    /// `r`: the fraction of queries that pay for every main-level run, in `[0, 1]`: the long
    /// range scans (the paper's `r`), and short seeks too where runs have no range filters (the
    /// policy measures which, `EcoTune::long_scan_ratio`).
    pub long_scan_ratio: f64,
    /// `f`: the filters' false-positive rate, in `[0, 1]`.
    pub false_positive_rate: f64,
    /// `beta_q`: query speed while a main-level merge runs, as a fraction of `q(e)`, in `[0, 1]`.
    pub beta_q: f64,
    /// `T_w`: time between two unit runs (any unit, the same as `T_c`'s), positive.
    pub t_w: f64,
    /// `T_c`: time to rewrite one unit run, positive.
    pub t_c: f64,
    /// `R`: unit runs in a round (main-level capacity over the unit size), at least 1.
    pub units: u32,
    /// `Ccap`: last-level size over main-level capacity.
    pub ccap: u32,
}

impl RoundParameters {
    /// Query speed with `e` main-level runs.
    pub fn q(&self, e: u32) -> f64 {
        let r = self.long_scan_ratio;
        1.0 / ((f64::from(e) + 2.0) * r + (1.0 - r) * (1.0 + self.false_positive_rate))
    }

    /// Query speed with `e` main-level runs while a merge runs.
    pub fn q_merging(&self, e: u32) -> f64 {
        self.beta_q * self.q(e)
    }

    /// `ceil(units * T_c / T_w)`: arrivals up to and including the first one at or after a merge
    /// of `units` units that starts at an arrival ends.
    pub fn arrivals_until_merged(&self, units: u32) -> u32 {
        let ratio = f64::from(units) * self.t_c / self.t_w;
        // The tolerance keeps an exact multiple (1/3 * 3) from rounding up to the next arrival.
        let arrivals = (ratio * (1.0 - CEIL_TOLERANCE)).ceil();
        // Units and times are finite and positive (`validate`); `as` saturates.
        arrivals.max(0.0) as u32
    }

    /// Queries served while a main-level merge of `units` units runs with `e` main-level runs at
    /// its start (DESIGN.md §6 `MergeScore`).
    pub fn merge_score(&self, e: u32, units: u32) -> f64 {
        let during = self.arrivals_until_merged(units).saturating_sub(1);
        let mut score = 0.0;
        for i in 0..during {
            score += self.t_w * self.q_merging(e + i);
        }
        let merge_time = f64::from(units) * self.t_c;
        score + self.q_merging(e + during) * (merge_time - f64::from(during) * self.t_w)
    }

    /// `None` if every parameter is in range, else what is not.
    pub fn validate(&self) -> Option<String> {
        let unit = |value: f64| (0.0..=1.0).contains(&value);
        if !unit(self.long_scan_ratio) || !unit(self.false_positive_rate) || !unit(self.beta_q) {
            return Some(format!(
                "r, f and beta_q must lie in [0, 1], got {}, {}, {}",
                self.long_scan_ratio, self.false_positive_rate, self.beta_q
            ));
        }
        if !(self.t_w.is_finite() && self.t_w > 0.0 && self.t_c.is_finite() && self.t_c > 0.0) {
            return Some(format!(
                "T_w and T_c must be positive, got {} and {}",
                self.t_w, self.t_c
            ));
        }
        if self.units == 0 {
            return Some("a round needs at least one unit run".into());
        }
        None
    }
}

/// The memoised programs over one round's parameters. Each table keeps, with every value, the
/// size `x` of the first final run that achieves it (the schedule walks those).
#[derive(Debug)]
pub struct Dp {
    parameters: RoundParameters,
    simple: HashMap<(u32, u32), f64>,
    algorithm1: HashMap<(u32, u32, u32), f64>,
    algorithm2: HashMap<(u32, u32, u32, u32), (f64, u32)>,
}

impl Dp {
    /// The programs for `parameters` (checked by [`RoundParameters::validate`]).
    pub fn new(parameters: RoundParameters) -> Result<Dp, String> {
        if let Some(problem) = parameters.validate() {
            return Err(problem);
        }
        Ok(Dp {
            parameters,
            simple: HashMap::new(),
            algorithm1: HashMap::new(),
            algorithm2: HashMap::new(),
        })
    }

    /// The round's parameters.
    pub fn parameters(&self) -> &RoundParameters {
        &self.parameters
    }

    /// §4.3.1's program at the root: `T_w * q(0) + f(0, R)`.
    pub fn simple_score(&mut self) -> f64 {
        let p = self.parameters;
        p.t_w * p.q(0) + self.simple(0, p.units)
    }

    /// `f(e, c)`: merges finish within one arrival interval (`x * T_c <= T_w`) at full speed.
    pub fn simple(&mut self, e: u32, c: u32) -> f64 {
        if c <= 1 {
            return 0.0;
        }
        if let Some(&value) = self.simple.get(&(e, c)) {
            return value;
        }
        let p = self.parameters;
        let mut best = p.t_w * p.q(e + 1) + self.simple(e + 1, c - 1);
        for x in 2..c {
            let merge_time = f64::from(x) * p.t_c;
            if merge_time > p.t_w {
                break;
            }
            let score =
                self.simple(e, x) + (p.t_w - merge_time) * p.q(e + 1) + self.simple(e + 1, c - x);
            if score > best {
                best = score;
            }
        }
        self.simple.insert((e, c), best);
        best
    }

    /// Algorithm 1 at the root: `T_w * q(0) + f(0, R, Ccap * R)`.
    pub fn algorithm1_score(&mut self) -> f64 {
        let p = self.parameters;
        p.t_w * p.q(0) + self.algorithm1(0, p.units, p.ccap * p.units)
    }

    /// `f(e, c, m)` (Algorithm 1 with DESIGN.md §6's `q'(e + 1)` for the ending merge).
    pub fn algorithm1(&mut self, e: u32, c: u32, m: u32) -> f64 {
        let p = self.parameters;
        if c <= 1 {
            return f64::from(m + c) * p.t_c * p.q_merging(e + 1);
        }
        if let Some(&value) = self.algorithm1.get(&(e, c, m)) {
            return value;
        }
        let mut best = p.t_w * p.q(e + 1) + self.algorithm1(e + 1, c - 1, m + 1);
        for x in 2..c {
            let score = self.algorithm1(e, x, 0)
                + (p.t_w - f64::from(x) * p.t_c) * p.q(e + 1)
                + self.algorithm1(e + 1, c - x, m + x);
            if score > best {
                best = score;
            }
        }
        self.algorithm1.insert((e, c, m), best);
        best
    }

    /// Algorithm 2 at the root: `f(0, 0, R, Ccap * R)` (it includes the first `T_w`).
    pub fn algorithm2_score(&mut self) -> f64 {
        let p = self.parameters;
        self.algorithm2(0, 0, p.units, p.ccap * p.units)
    }

    /// `f(e, b, c, m)` (Algorithm 2): `e` final runs, `b` pending units already created, `c`
    /// units still to come, `m` units from outside that join the merge ending this sub-problem.
    pub fn algorithm2(&mut self, e: u32, b: u32, c: u32, m: u32) -> f64 {
        self.algorithm2_with_choice(e, b, c, m).0
    }

    /// [`Dp::algorithm2`] and the size of the first final run that achieves it (0 when `c == 0`:
    /// the sub-problem ends with its merge).
    pub fn algorithm2_with_choice(&mut self, e: u32, b: u32, c: u32, m: u32) -> (f64, u32) {
        let p = self.parameters;
        if c == 0 {
            return (p.merge_score(e + b, m + b), 0);
        }
        if let Some(&value) = self.algorithm2.get(&(e, b, c, m)) {
            return value;
        }
        let mut best = if b > 0 {
            self.algorithm2(e + 1, b - 1, c, m + 1)
        } else {
            p.t_w * p.q(e) + self.algorithm2(e + 1, 0, c - 1, m + 1)
        };
        let mut choice = 1;
        for x in 2..b + c {
            let arrivals = p.arrivals_until_merged(x);
            let (mut score, pending) = if x <= b {
                (p.merge_score(e + b, x), b - x + arrivals)
            } else {
                (self.algorithm2(e, b, x - b, 0), arrivals)
            };
            let available = b + c - x;
            if pending > available {
                continue;
            }
            score += (f64::from(arrivals) * p.t_w - f64::from(x) * p.t_c) * p.q(e + pending);
            score += self.algorithm2(e + 1, pending, available - pending, m + x);
            // Ties: the smaller x wins, as in the paper.
            if score > best {
                best = score;
                choice = x;
            }
        }
        self.algorithm2.insert((e, b, c, m), (best, choice));
        (best, choice)
    }
}

/// One merge of a round's schedule: it starts at arrival `start_arrival` (unit `k` arrives at
/// `k * T_w`), rewrites `units` units (so it takes `units * T_c`), and merges `runs` main-level
/// runs, the ones at positions `first_run..first_run + runs` in age order (oldest first), into
/// one. The last merge of a schedule is the round's global compaction (its `units` include the
/// last level's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    /// The arrival it starts at (1 = the first unit's).
    pub start_arrival: u32,
    /// Units rewritten.
    pub units: u32,
    /// Main-level runs merged into one.
    pub runs: u32,
    /// Age position (0 = oldest) of the first run merged.
    pub first_run: u32,
}

impl Merge {
    /// The merge that ends a sub-problem `f(e, b, 0, m)` started with `e0` final runs at
    /// `arrival`: its own final runs and pending units, with the `m` units from outside.
    fn ending(e: u32, b: u32, m: u32, arrival: u32, e0: u32) -> Merge {
        Merge {
            start_arrival: arrival,
            units: m + b,
            runs: e - e0 + b,
            first_run: e0,
        }
    }

    /// The merge of the `units` oldest pending units, just after the `e` final runs.
    fn of_pending(arrival: u32, units: u32, e: u32) -> Merge {
        Merge {
            start_arrival: arrival,
            units,
            runs: units,
            first_run: e,
        }
    }
}

/// DESIGN.md §6's event simulator: the queries `merges` serve, by the time model alone. Unit `k`
/// arrives at `k * T_w` (every `k >= 1`, during the global compaction too) and adds a run; a
/// merge starts at an arrival, counts its runs until it ends, and replaces them with one; one
/// merge at a time. Speed is `q(runs)`, `beta_q * q(runs)` while a merge runs; the score is its
/// integral from 0 to the end of the last merge. `Err` names a schedule the model forbids.
pub fn simulate(parameters: &RoundParameters, merges: &[Merge]) -> Result<f64, String> {
    let p = parameters;
    let tolerance = CEIL_TOLERANCE * p.t_w.max(p.t_c);
    let mut state = Timeline {
        score: 0.0,
        time: 0.0,
        runs: 0,
        next_arrival: 1,
    };
    for merge in merges {
        let start = f64::from(merge.start_arrival) * p.t_w;
        if merge.start_arrival == 0 || start < state.time - tolerance {
            return Err(format!(
                "a merge at arrival {} starts before the previous one ended ({})",
                merge.start_arrival, state.time
            ));
        }
        // Up to the arrival the merge starts at, that arrival included.
        state.advance(p, start, false, true, tolerance);
        if merge.runs == 0 || merge.first_run + merge.runs > state.runs {
            return Err(format!(
                "a merge of runs {}..{} at arrival {} with {} runs",
                merge.first_run,
                merge.first_run + merge.runs,
                merge.start_arrival,
                state.runs
            ));
        }
        let end = start + f64::from(merge.units) * p.t_c;
        // Arrivals strictly during the merge add runs at the slowed speed.
        state.advance(p, end, true, false, tolerance);
        state.runs -= merge.runs - 1;
    }
    Ok(state.score)
}

/// The simulator's clock: the score so far, the time, the main level's runs and the next arrival.
struct Timeline {
    score: f64,
    time: f64,
    runs: u32,
    next_arrival: u32,
}

impl Timeline {
    /// Integrates the speed up to `until`, adding each arrival on the way (and one at `until`
    /// itself if `inclusive`).
    fn advance(
        &mut self,
        p: &RoundParameters,
        until: f64,
        merging: bool,
        inclusive: bool,
        tolerance: f64,
    ) {
        loop {
            let arrival = f64::from(self.next_arrival) * p.t_w;
            let arrives = if inclusive {
                arrival <= until + tolerance
            } else {
                arrival < until - tolerance
            };
            let step_end = if arrives { arrival.min(until) } else { until };
            let speed = if merging {
                p.q_merging(self.runs)
            } else {
                p.q(self.runs)
            };
            self.score += (step_end - self.time).max(0.0) * speed;
            self.time = self.time.max(step_end);
            if !arrives {
                break;
            }
            self.runs += 1;
            self.next_arrival += 1;
        }
    }
}

/// The main level's run sizes in units, oldest first, after each of the round's `units` arrivals
/// once the merges started at it are done (the round's last merge, the global compaction, is not
/// applied): what [`layouts`] prints and the cost model of EcoTune's tree averages over
/// (`model::ecotune`).
pub fn run_sizes(units: u32, merges: &[Merge]) -> Vec<Vec<u32>> {
    let ml_merges = &merges[..merges.len().saturating_sub(1)];
    let mut runs: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for arrival in 1..=units {
        runs.push(1);
        for merge in ml_merges.iter().filter(|m| m.start_arrival == arrival) {
            let first = merge.first_run as usize;
            let last = (first + merge.runs as usize).min(runs.len());
            if first < last {
                let size: u32 = runs.drain(first..last).sum();
                runs.insert(first, size);
            }
        }
        out.push(runs.clone());
    }
    out
}

/// The main-level layout after each of the round's `units` arrivals once the merges started at
/// it are done, in the paper's Table 4 notation: run sizes in units, oldest first, concatenated
/// (`321` = runs of 3, 2 and 1 units; `17+3+1` once a run has ten units or more). The round's
/// last merge (the global compaction) is not applied.
pub fn layouts(units: u32, merges: &[Merge]) -> Vec<String> {
    let mut out = Vec::new();
    for runs in run_sizes(units, merges) {
        // Table 4's digits, or sizes joined by `+` once one has two digits (unambiguous).
        let separator = if runs.iter().any(|&size| size >= 10) {
            "+"
        } else {
            ""
        };
        out.push(
            runs.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(separator),
        );
    }
    out
}

impl Dp {
    /// The schedule Algorithm 2 chooses for the round (DESIGN.md §6 "Schedule"), its global
    /// compaction last.
    pub fn schedule(&mut self) -> Vec<Merge> {
        let p = self.parameters;
        let mut merges = Vec::new();
        self.walk(0, 0, p.units, p.ccap * p.units, 0, 0, &mut merges);
        merges
    }

    /// Walks the argmax from state `(e, b, c, m)` at arrival `arrival`, the sub-problem having
    /// started with `e0` final runs; returns the arrival at which its ending merge starts.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        e: u32,
        b: u32,
        c: u32,
        m: u32,
        arrival: u32,
        e0: u32,
        merges: &mut Vec<Merge>,
    ) -> u32 {
        if c == 0 {
            merges.push(Merge::ending(e, b, m, arrival, e0));
            return arrival;
        }
        let (_, x) = self.algorithm2_with_choice(e, b, c, m);
        let p = self.parameters;
        if x <= 1 {
            return if b > 0 {
                self.walk(e + 1, b - 1, c, m + 1, arrival, e0, merges)
            } else {
                self.walk(e + 1, 0, c - 1, m + 1, arrival + 1, e0, merges)
            };
        }
        let arrivals = p.arrivals_until_merged(x);
        let available = b + c - x;
        let (pending, next) = if x <= b {
            merges.push(Merge::of_pending(arrival, x, e));
            (b - x + arrivals, arrival + arrivals)
        } else {
            let end = self.walk(e, b, x - b, 0, arrival, e, merges);
            (arrivals, end + arrivals)
        };
        self.walk(
            e + 1,
            pending,
            available.saturating_sub(pending),
            m + x,
            next,
            e0,
            merges,
        )
    }
}

/// Every schedule in Algorithm 2's space (nested first-final-run choices, with its feasibility
/// rule) for the round, scored by [`simulate`]: (the best score, schedules scored). For tests
/// and small `R` only (the count grows exponentially).
pub fn brute_force(parameters: &RoundParameters) -> (f64, u64) {
    fn all(
        p: &RoundParameters,
        e: u32,
        b: u32,
        c: u32,
        m: u32,
        arrival: u32,
        e0: u32,
    ) -> Vec<(Vec<Merge>, u32)> {
        if c == 0 {
            return vec![(vec![Merge::ending(e, b, m, arrival, e0)], arrival)];
        }
        let mut out = Vec::new();
        let firsts = if b > 0 {
            all(p, e + 1, b - 1, c, m + 1, arrival, e0)
        } else {
            all(p, e + 1, 0, c - 1, m + 1, arrival + 1, e0)
        };
        out.extend(firsts);
        for x in 2..b + c {
            let arrivals = p.arrivals_until_merged(x);
            let available = b + c - x;
            if x <= b {
                let pending = b - x + arrivals;
                if pending > available {
                    continue;
                }
                let merge = Merge::of_pending(arrival, x, e);
                for (rest, end) in all(
                    p,
                    e + 1,
                    pending,
                    available - pending,
                    m + x,
                    arrival + arrivals,
                    e0,
                ) {
                    let mut merges = vec![merge];
                    merges.extend(rest);
                    out.push((merges, end));
                }
            } else {
                let pending = arrivals;
                if pending > available {
                    continue;
                }
                for (left, left_end) in all(p, e, b, x - b, 0, arrival, e) {
                    for (rest, end) in all(
                        p,
                        e + 1,
                        pending,
                        available - pending,
                        m + x,
                        left_end + arrivals,
                        e0,
                    ) {
                        let mut merges = left.clone();
                        merges.extend(rest);
                        out.push((merges, end));
                    }
                }
            }
        }
        out
    }
    let p = parameters;
    let schedules = all(p, 0, 0, p.units, p.ccap * p.units, 0, 0);
    let mut best = f64::NEG_INFINITY;
    for (merges, _) in &schedules {
        if let Ok(score) = simulate(p, merges) {
            best = best.max(score);
        }
    }
    (best, schedules.len() as u64)
}

#[cfg(test)]
#[path = "dp_tests.rs"]
mod tests;
