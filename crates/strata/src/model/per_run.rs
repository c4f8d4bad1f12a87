//! Strata's own models for lazy leveling and Garnering (DESIGN.md §7, last paragraph; neither paper
//! gives a closed form): the policy's idealised tree written out as its sorted runs, and its
//! costs read off those runs — `R` from the §2 allocation solver (Monkey's rule: every run
//! weighted 1, so each run's false-positive rate follows its size), `Q = s*N/B + runs`, and
//! `W = (1+phi)/B * sum_i w_i` with `w_i = (r_i - 1)/2` for a leveled level whose capacity is
//! `r_i` times the one above (the write buffer above level 1) and `(T-1)/T` for a tiered level.
//! With every `r_i = T` these are Monkey's eq. 10 and eq. 11, and for leveling and tiering the
//! runs' `R` is the exact finite-`L` form ([`super::zero_result_cost_exact`]) of which eq. 7 is
//! the `L -> infinity` limit.
//!
//! The idealised trees follow DESIGN.md §7's convention for leveling: the last level holds
//! `N (T-1)/T` entries and the levels above follow the policy's capacity ratios.
//! - **Lazy leveling** (DESIGN.md §5.3): leveling's level sizes; every level but the last holds
//!   `T - 1` equal runs, the last one run.
//! - **Garnering** (DESIGN.md §5.4): `L` from the exact level-count formula with level 1's base at
//!   `T` write buffers (as the engine sets it), level `i` sized in proportion to
//!   `C_i = base * T^(i-1) / c^((2L-1-i) i / 2)`, so `r_i = T / c^(L-i)` (level 1 against the
//!   buffer: `T / c^(L-1)`). At `c = 1` this is leveling's tree exactly.

use super::{check, check_filter_bits, check_size_ratio, ModelPolicy};
use crate::compaction::CompactionKind;
use crate::compaction::{garnering_capacities, garnering_level_count};
use crate::error::Result;
use crate::solver::{Item, Problem};

/// One disk level of a policy's idealised tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelLevel {
    /// Entries on the level.
    pub entries: f64,
    /// Sorted runs on the level, of equal size: 1 when leveled, `T - 1` when tiered (a real
    /// number when `T` is, as in Monkey's tiering forms).
    pub runs: f64,
    /// The level's capacity over the capacity above it (`r_i`; level 1 against the buffer).
    pub ratio: f64,
}

/// A policy's idealised tree, level 1 first (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RunTree {
    /// The disk levels, level 1 first.
    pub levels: Vec<ModelLevel>,
}

impl RunTree {
    /// Sorted runs in the tree: what a zero-result lookup without filters, or a range lookup,
    /// probes.
    pub fn runs(&self) -> f64 {
        self.levels.iter().map(|level| level.runs).sum()
    }

    /// Runs a lookup for a key on the last level probes: every run above that level, then on
    /// average half of the last level's runs and the one holding the key (`(k+1)/2` of `k`
    /// runs, newest first). The key's position is the one Monkey's `V` assumes (DESIGN.md §7).
    pub fn runs_probed_for_existing_key(&self) -> f64 {
        match self.levels.split_last() {
            Some((last, above)) => {
                above.iter().map(|level| level.runs).sum::<f64>() + (last.runs + 1.0) / 2.0
            }
            None => 0.0,
        }
    }

    /// Entries in the tree.
    pub fn entries(&self) -> f64 {
        self.levels.iter().map(|level| level.entries).sum()
    }

    /// Entries of every sorted run, level 1's first (integer run counts only).
    pub fn run_entries(&self) -> Vec<f64> {
        self.levels
            .iter()
            .flat_map(|level| {
                let runs = level.runs.round().max(1.0) as usize;
                std::iter::repeat_n(level.entries / runs as f64, runs)
            })
            .collect()
    }
}

/// Disk levels of `policy`'s idealised tree of `entries` entries of `entry_bits` bits with a
/// write buffer of `buffer_bits` (DESIGN.md §7's shape; Garnering: DESIGN.md §5.4's exact count with a
/// level-1 base of `T` buffers, which equals the shape's count at `c = 1`).
pub fn levels(
    policy: ModelPolicy,
    entries: f64,
    entry_bits: f64,
    buffer_bits: f64,
    size_ratio: f64,
) -> Result<usize> {
    let shape = super::shape(entries, entry_bits, buffer_bits, size_ratio)?;
    Ok(match policy.garnering_c() {
        Some(scaling_factor) => {
            check_scaling_factor(scaling_factor)?;
            let buffer_entries = buffer_bits / entry_bits;
            garnering_level_count(
                entries,
                buffer_entries * size_ratio,
                size_ratio,
                scaling_factor,
            )
        }
        None => shape.levels,
    })
}

fn check_scaling_factor(scaling_factor: f64) -> Result<()> {
    check(
        "Garnering's c",
        scaling_factor,
        scaling_factor > 0.0 && scaling_factor <= 1.0,
        "in (0, 1]",
    )
}

/// `policy`'s idealised tree of `entries` entries on `levels` disk levels (see the module docs;
/// leveling with dynamic level bytes is leveling's tree). EcoTune and Moose, whose trees take no
/// size ratio, are an [`crate::Error::InvalidArgument`]: `super::ecotune` and `super::moose`
/// build theirs.
pub fn run_tree(
    policy: ModelPolicy,
    entries: f64,
    size_ratio: f64,
    levels: usize,
) -> Result<RunTree> {
    policy.check_size_ratio_tree()?;
    check("entries", entries, entries > 0.0, "finite and > 0")?;
    check_size_ratio(size_ratio)?;
    let t = size_ratio;
    let levels = levels.max(1);
    let last = entries * (t - 1.0) / t;
    // Level sizes from the top, and each level's ratio to the one above.
    let (sizes, ratios): (Vec<f64>, Vec<f64>) = match policy.garnering_c() {
        Some(scaling_factor) => {
            check_scaling_factor(scaling_factor)?;
            // Level count and base are clamped as the engine clamps them.
            let capacities = garnering_capacities(1.0, t, scaling_factor, levels);
            let levels = levels.min(capacities.len() - 1);
            let top = &capacities[1..=levels];
            let last_capacity = top[levels - 1];
            let sizes = top.iter().map(|c| last * c / last_capacity).collect();
            let ratios = (0..levels)
                .map(|i| {
                    let above = if i == 0 { 1.0 / t } else { top[i - 1] };
                    top[i] / above
                })
                .collect();
            (sizes, ratios)
        }
        None => (
            (1..=levels)
                .map(|i| last / t.powi((levels - i) as i32))
                .collect(),
            vec![t; levels],
        ),
    };
    let levels = sizes.len();
    let levels = sizes
        .iter()
        .zip(ratios)
        .enumerate()
        .map(|(index, (&entries, ratio))| {
            let tiered = match policy.kind() {
                CompactionKind::Tiering => true,
                CompactionKind::LazyLeveling => index + 1 < levels,
                _ => false,
            };
            ModelLevel {
                entries,
                runs: if tiered { t - 1.0 } else { 1.0 },
                ratio,
            }
        })
        .collect();
    Ok(RunTree { levels })
}

/// What a zero-result lookup costs on `tree` with `filter_bits` of filters spread by Monkey's
/// rule (the §2 solver, every run weighted 1): `(R, p_last)`, the expected runs read and the
/// false-positive rate of the last run (1 when the solver leaves it unfiltered).
pub fn zero_result_cost(tree: &RunTree, filter_bits: f64) -> Result<(f64, f64)> {
    check_filter_bits(filter_bits)?;
    // One item per level: `k` equal runs of `n/k` entries, each weighted 1, get the same
    // false-positive rate `(n/k) e^C` as one item of `n` entries weighted `k`, and cost as much.
    // The solver counts entries in whole keys; a level below one entry is counted as one.
    let items: Vec<Item> = tree
        .levels
        .iter()
        .map(|level| Item::new(level.entries.round().max(1.0) as u64, level.runs))
        .collect();
    let allocation = Problem::with_memory_bits(items, filter_bits)?.solve();
    let last = allocation.false_positive_rates().last().unwrap_or(1.0);
    Ok((allocation.predicted_cost(), last))
}

/// Zero-result cost on `tree` with the same `filter_bits / entries` bits per key on every run:
/// `runs * exp(-M/N * ln2sq)`.
pub fn zero_result_cost_uniform(tree: &RunTree, filter_bits: f64, entries: f64) -> Result<f64> {
    check("entries", entries, entries > 0.0, "finite and > 0")?;
    check_filter_bits(filter_bits)?;
    let per_run = (-filter_bits / entries * crate::solver::DEFAULT_FPR_CONSTANT).exp();
    Ok(tree.runs() * per_run)
}

/// `W = (1+phi)/B * sum_i w_i` (see the module docs).
pub fn update_cost(
    tree: &RunTree,
    size_ratio: f64,
    entries_per_page: f64,
    write_read_cost_ratio: f64,
) -> f64 {
    let per_entry: f64 = tree
        .levels
        .iter()
        .map(|level| {
            if level.runs == 1.0 {
                (level.ratio - 1.0) / 2.0
            } else {
                (size_ratio - 1.0) / size_ratio
            }
        })
        .sum();
    per_entry * (1.0 + write_read_cost_ratio) / entries_per_page.max(1.0)
}

/// `Q = s*N/B + runs` (DESIGN.md §7).
pub fn range_cost(tree: &RunTree, selectivity: f64, entries: f64, entries_per_page: f64) -> f64 {
    selectivity * entries / entries_per_page.max(1.0) + tree.runs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model;

    const N: f64 = 1e8;

    fn tree(policy: ModelPolicy, t: f64, levels: usize) -> RunTree {
        run_tree(policy, N, t, levels).expect("tree")
    }

    fn garnering(c: f64) -> ModelPolicy {
        ModelPolicy::garnering(c)
    }

    fn entries(tree: &RunTree) -> Vec<f64> {
        tree.levels.iter().map(|level| level.entries).collect()
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-9 * y.abs())
    }

    #[test]
    fn the_runs_of_each_policy() {
        let leveling = tree(ModelPolicy::LEVELING, 4.0, 3);
        assert_eq!(leveling.runs(), 3.0);
        let shape = model::shape(N, 8.0, N * 8.0 / 4.0f64.powi(3), 4.0).expect("shape");
        assert_eq!(shape.levels, 3);
        assert!(close(&entries(&leveling), &shape.level_entries));
        let tiering = tree(ModelPolicy::TIERING, 4.0, 3);
        assert_eq!(tiering.runs(), 9.0);
        assert_eq!(tiering.run_entries().len(), 9);
        assert!(close(&entries(&tiering), &shape.level_entries));
        let lazy = tree(ModelPolicy::LAZY_LEVELING, 4.0, 3);
        assert_eq!(lazy.runs(), 3.0 + 3.0 + 1.0);
        let runs: Vec<f64> = lazy.levels.iter().map(|level| level.runs).collect();
        assert_eq!(runs, [3.0, 3.0, 1.0]);
        assert!(close(&entries(&lazy), &shape.level_entries));
        // A real T gives a real number of runs per tiered level, as Monkey's forms do.
        assert_eq!(tree(ModelPolicy::TIERING, 3.5, 2).runs(), 5.0);
        // Garnering at c = 1 is leveling; below 1 the upper levels shrink (ratios grow upward).
        let at_one = tree(garnering(1.0), 4.0, 3);
        assert!(close(&entries(&at_one), &entries(&leveling)));
        assert!(at_one.levels.iter().all(|level| level.ratio == 4.0));
        let g = tree(garnering(0.8), 4.0, 3);
        assert_eq!(g.runs(), 3.0);
        let ratios: Vec<f64> = g.levels.iter().map(|level| level.ratio).collect();
        assert!(close(&ratios, &[4.0 / 0.64, 4.0 / 0.8, 4.0]), "{ratios:?}");
        let (last, leveling_last) = (entries(&g)[2], entries(&leveling)[2]);
        assert!((last - leveling_last).abs() <= 1e-9 * last);
        assert!(g.levels[0].entries < leveling.levels[0].entries);
    }

    /// For leveling and tiering the runs' `R` is the exact finite-`L` form, and it approaches
    /// Monkey's eq. 7 as `T^L` grows.
    #[test]
    fn the_solver_on_the_runs_is_the_exact_form() {
        for (policy, t, levels) in [
            (ModelPolicy::LEVELING, 10.0, 4),
            (ModelPolicy::TIERING, 4.0, 4),
            (ModelPolicy::LAZY_LEVELING, 5.0, 4),
            (garnering(0.6), 3.0, 5),
        ] {
            let tree = tree(policy, t, levels);
            let bits = 10.0 * tree.entries();
            let (r, last) = zero_result_cost(&tree, bits).expect("cost");
            let exact = model::zero_result_cost_exact(bits, &tree.run_entries()).expect("exact");
            assert!(
                (r - exact).abs() <= 1e-6 * exact,
                "{policy:?}: {r} vs {exact}"
            );
            assert!(last > 0.0 && last < 1.0);
        }
        let leveling = tree(ModelPolicy::LEVELING, 10.0, 4);
        let (r, _) = zero_result_cost(&leveling, 10.0 * N).expect("cost");
        let closed =
            model::zero_result_cost(ModelPolicy::LEVELING, 10.0 * N, N, 10.0, 4).expect("closed");
        assert!((r - closed).abs() / closed < 0.05, "{r} vs {closed}");
    }

    #[test]
    fn update_and_range_costs_reduce_to_monkeys_forms() {
        let (b, phi) = (32.0, 1.0);
        for (policy, t, levels) in [
            (ModelPolicy::LEVELING, 4.0, 5),
            (ModelPolicy::TIERING, 6.0, 3),
        ] {
            let tree = tree(policy, t, levels);
            let w = update_cost(&tree, t, b, phi);
            let monkey = model::update_cost(policy, levels, b, t, phi).expect("priced");
            assert!((w - monkey).abs() < 1e-12, "{policy:?}: {w} vs {monkey}");
            let q = range_cost(&tree, 1e-4, N, b);
            let monkey = model::range_cost(policy, 1e-4, N, b, levels, t).expect("priced");
            assert!((q - monkey).abs() < 1e-9);
        }
        // Lazy leveling merges each entry about once per tiered level and (T-1)/2 times at the
        // last: less than leveling's (T-1)/2 per level, more than tiering's.
        let (t, levels) = (5.0, 4);
        let lazy = update_cost(&tree(ModelPolicy::LAZY_LEVELING, t, levels), t, b, phi);
        let expected = (3.0 * 4.0 / 5.0 + 2.0) * 2.0 / b;
        assert!((lazy - expected).abs() < 1e-12);
        assert!(
            lazy < model::update_cost(ModelPolicy::LEVELING, levels, b, t, phi).expect("priced")
        );
        assert!(
            lazy > model::update_cost(ModelPolicy::TIERING, levels, b, t, phi).expect("priced")
        );
        // Garnering's larger upper ratios cost more merging per level than leveling's.
        let g = update_cost(&tree(garnering(0.8), t, levels), t, b, phi);
        assert!(g > model::update_cost(ModelPolicy::LEVELING, levels, b, t, phi).expect("priced"));
        // The policy-level functions give the runs' figures.
        for policy in [ModelPolicy::LAZY_LEVELING, garnering(0.8), garnering(0.4)] {
            let runs = tree(policy, t, levels);
            let w = model::update_cost(policy, levels, b, t, phi).expect("priced");
            assert!(
                (w - update_cost(&runs, t, b, phi)).abs() < 1e-12,
                "{policy:?}"
            );
            let q = model::range_cost(policy, 1e-4, N, b, levels, t).expect("priced");
            assert!(
                (q - range_cost(&runs, 1e-4, N, b)).abs() < 1e-9,
                "{policy:?}"
            );
            let (r, last) = zero_result_cost(&runs, 5.0 * N).expect("cost");
            let closed = model::zero_result_cost(policy, 5.0 * N, N, t, levels).expect("r");
            assert_eq!(r, closed);
            let p_last = model::last_level_fpr(policy, 5.0 * N, N, t, levels).expect("p");
            assert_eq!(last, p_last);
            let uniform = model::zero_result_cost_uniform(policy, 5.0 * N, N, t, levels);
            assert!(
                (uniform.expect("uniform")
                    - zero_result_cost_uniform(&runs, 5.0 * N, N).expect("u"))
                .abs()
                    < 1e-12
            );
        }
    }

    /// DESIGN.md §5.4's example: base 256 MB, T = 5, 87 GB give 5, 4 and 3 levels at c = 1, 0.8 and
    /// 0.4; with a 256/5 MB buffer `levels` reproduces it, and leveling's shape gives 5.
    #[test]
    fn garnering_levels_follow_the_exact_formula() {
        let mb = 1e6 * 8.0;
        let (data_bits, buffer_bits) = (87e3 * mb, 256.0 / 5.0 * mb);
        // One "entry" per bit: sizes in the formula's own unit.
        for (c, want) in [(1.0, 5), (0.8, 4), (0.4, 3)] {
            let got = levels(garnering(c), data_bits, 1.0, buffer_bits, 5.0).expect("levels");
            assert_eq!(got, want, "c = {c}");
        }
        let leveling = levels(ModelPolicy::LEVELING, data_bits, 1.0, buffer_bits, 5.0);
        assert_eq!(leveling.expect("levels"), 5);
        assert!(levels(garnering(0.0), 1e6, 8.0, 1e4, 4.0).is_err());
        assert!(levels(garnering(1.5), 1e6, 8.0, 1e4, 4.0).is_err());
    }
}
