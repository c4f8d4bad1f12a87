//! The filter-memory allocation solver (DESIGN.md §2; Mnemosyne §4.1, Theorem 4.1, Algorithm 1,
//! "sort-and-search").
//!
//! Given items (files or sorted runs), each with `n_i` entries and `z_i` expected zero-result
//! lookups that probe it, and a filter budget of `M` bits, choose bits per key `bpk_i >= 0` for
//! every item so as to
//!
//! ```text
//! minimise   sum_i z_i * eps_i                                   [Mnemosyne eq. 3]
//! subject to sum_i n_i * (-ln eps_i) / c <= M,   0 < eps_i <= 1
//! ```
//!
//! with `eps_i = exp(-c * bpk_i)` (DESIGN.md §1; `c = ln2sq` unless a constant fitted to the measured
//! filter is given). The problem is convex; its solution (Theorem 4.1) keeps a filter on a set `S`
//! that is a prefix of the items sorted by `z_i / n_i` descending, and gives every kept item
//! `eps_i = (n_i / z_i) * exp(C)` for one constant `C` (eq. 4). [`Problem::solve`] finds `S` and
//! `C` in `O(F log F)` for `F` items (the sort dominates; the search is one linear pass). The same
//! solver, with other weights, is Monkey on the actual shape ([`monkey_items`]) and Monkey-general
//! ([`monkey_general_items`]).
//!
//! This module is pure: no I/O, no engine types. The allocators of DESIGN.md §3 build a [`Problem`]
//! from the tree shape and read the answer from the [`Allocation`].

use crate::error::{Error, Result};
use crate::filter::bloom::LN2_SQUARED;

/// `(ln 2)^2 ~= 0.4805`: the FPR constant `c` of an ideal Bloom filter with the optimal number of
/// hash functions, `eps = exp(-c * bpk)` (DESIGN.md §1). The default of [`Problem::fpr_constant`].
pub const DEFAULT_FPR_CONSTANT: f64 = LN2_SQUARED;

/// Smallest FPR constant accepted. A filter with `c = 0.01` needs 460 bits per key for a 1%
/// false-positive rate; anything below is not a filter, and a tiny `c` would overflow
/// `bpk = ... / c` to infinity.
pub const MIN_FPR_CONSTANT: f64 = 0.01;

/// Largest FPR constant accepted: `ln 2`. No filter of `bpk` bits per key can have a
/// false-positive rate below `2^-bpk` (information-theoretic bound), i.e. `c <= ln 2`.
pub const MAX_FPR_CONSTANT: f64 = std::f64::consts::LN_2;

/// One file or sorted run: what the solver allocates filter memory to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    /// `n_i`: entries (keys, tombstones included) the item's filter would hold.
    pub entries: u64,
    /// `z_i`: expected zero-result point lookups that probe the item (the key is not in it).
    /// Finite and `>= 0`; the allocation depends only on the ratios between items' weights.
    pub weight: f64,
}

impl Item {
    /// An item with `entries` entries and zero-result weight `weight`.
    pub fn new(entries: u64, weight: f64) -> Self {
        Item { entries, weight }
    }
}

/// Which items may keep a filter (DESIGN.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Variant {
    /// The optimum of eq. 3: any real `bpk > 0` is allowed; an item is dropped (bpk 0) only if
    /// its optimal FPR would exceed 1 (Algorithm 1 as written).
    #[default]
    Pure,
    /// The variant of the paper's RocksDB implementation (Mnemosyne §4.1, "Implementation"):
    /// RocksDB cannot build a filter below 1 bit per key, so Algorithm 1's line 10 drops the last
    /// item while its bpk would be below 1 (`eps > exp(-c)`). Every kept item then has
    /// `bpk >= 1`. This is a heuristic for a non-convex problem, not its optimum (see
    /// [`Problem::solve`]).
    MinimumBitsPerKeyOne,
}

/// An allocation problem: items, a budget, the FPR model and the variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    items: Vec<Item>,
    memory_bits: f64,
    fpr_constant: f64,
    variant: Variant,
}

impl Problem {
    /// A problem with a budget of `memory_bits` bits (`M`) in total. Fails if `memory_bits` is
    /// negative or not finite, an item's weight is negative or not finite, or the weights' sum
    /// overflows.
    pub fn with_memory_bits(items: Vec<Item>, memory_bits: f64) -> Result<Self> {
        if !memory_bits.is_finite() || memory_bits < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "filter memory must be finite and >= 0 bits, got {memory_bits}"
            )));
        }
        if let Some((index, item)) = items
            .iter()
            .enumerate()
            .find(|(_, item)| !item.weight.is_finite() || item.weight < 0.0)
        {
            return Err(Error::InvalidArgument(format!(
                "item {index}: zero-result weight must be finite and >= 0, got {}",
                item.weight
            )));
        }
        // The cost is at most the sum of the weights; keep it finite.
        let total_weight: f64 = items.iter().map(|item| item.weight).sum();
        if !total_weight.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "the zero-result weights must have a finite sum, got {total_weight}"
            )));
        }
        Ok(Problem {
            items,
            memory_bits,
            fpr_constant: DEFAULT_FPR_CONSTANT,
            variant: Variant::Pure,
        })
    }

    /// A problem whose budget is `bits_per_key` times the items' total entries:
    /// `M = bpk_target * sum(n_i)` (DESIGN.md §2 notation). Fails like [`Problem::with_memory_bits`].
    pub fn with_bits_per_key(items: Vec<Item>, bits_per_key: f64) -> Result<Self> {
        if !bits_per_key.is_finite() || bits_per_key < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "bits per key must be finite and >= 0, got {bits_per_key}"
            )));
        }
        let memory_bits = bits_per_key * total_entries(&items);
        Problem::with_memory_bits(items, memory_bits)
    }

    /// Uses `c` in `eps = exp(-c * bpk)` instead of `ln2sq` (DESIGN.md §1: a constant fitted to the
    /// measured FPR of the blocked layout). Must lie in
    /// [`MIN_FPR_CONSTANT`]`..=`[`MAX_FPR_CONSTANT`].
    pub fn fpr_constant(mut self, c: f64) -> Result<Self> {
        if !(MIN_FPR_CONSTANT..=MAX_FPR_CONSTANT).contains(&c) {
            return Err(Error::InvalidArgument(format!(
                "FPR constant must be between {MIN_FPR_CONSTANT} and ln 2, got {c}"
            )));
        }
        self.fpr_constant = c;
        Ok(self)
    }

    /// Selects the variant ([`Variant::Pure`] by default).
    pub fn variant(mut self, variant: Variant) -> Self {
        self.variant = variant;
        self
    }

    /// The items, in the order given.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// `M`, the budget in bits.
    pub fn memory_bits(&self) -> f64 {
        self.memory_bits
    }

    /// `M / sum(n_i)`, the budget in bits per key (0 when there are no entries).
    pub fn bits_per_key_target(&self) -> f64 {
        let entries = total_entries(&self.items);
        if entries > 0.0 {
            self.memory_bits / entries
        } else {
            0.0
        }
    }

    /// Solves the problem: Mnemosyne Algorithm 1, as DESIGN.md §2 states it.
    ///
    /// 1. If `M = 0`, every bpk is 0. Items with `z_i = 0` or `n_i = 0` get bpk 0 (a filter
    ///    would serve no zero-result lookup, or hold nothing); the rest are sorted by `z_i / n_i`
    ///    descending [Algorithm 1, line 5] (compared as `ln z_i - ln n_i`, which cannot overflow;
    ///    ties keep input order).
    /// 2. `S` starts as all of them; `C = -(M * c + S2) / S1` with `S1 = sum_{i in S} n_i` and
    ///    `S2 = sum_{i in S} n_i * ln(n_i / z_i)` [eq. 4; Algorithm 1, lines 6-8].
    /// 3. While the last item `j` of `S` has `ln eps_j = ln(n_j / z_j) + C > 0` (pure form:
    ///    `eps_j > 1`) or `> -c` ([`Variant::MinimumBitsPerKeyOne`]: `bpk_j < 1`), remove it from
    ///    `S` (bpk 0) and recompute `C` over the shorter prefix [Algorithm 1, lines 9-17].
    /// 4. For `i` in `S`: `bpk_i = -(ln(n_i / z_i) + C) / c` [Algorithm 1, line 20], clamped at 0
    ///    against rounding.
    ///
    /// Numerically, the same quantities are computed in a form that cannot cancel (identical in
    /// exact arithmetic). Write `l_i = ln(z_i / n_i)` (sorted descending) and, for the prefix of
    /// the first `k` items, `S1_k = sum_{i<=k} n_i` and `T_k = sum_{i<=k} n_i * (l_i - l_k) >= 0`
    /// (so `S2 = -(T_k + S1_k * l_k)`). Then
    ///
    /// * for the prefix's last item, `ln eps_k = T_k / S1_k - (M / S1_k) * c`
    ///   [eq. 4 with the `S2` above], the difference of two non-negative numbers;
    /// * `C = l_k + ln eps_k` [eq. 4: `eps_k = (n_k / z_k) * exp(C)`];
    /// * `bpk_k = -ln eps_k / c` and `bpk_i = bpk_k + (l_i - l_k) / c` for `i` in `S` [line 20],
    ///   a sum of non-negative terms;
    /// * `T_{k+1} = T_k + S1_k * (l_k - l_{k+1})` and `S1_{k+1} = S1_k + n_{k+1}`: running sums
    ///   of non-negative terms, accumulated from the front for every prefix and read back during
    ///   the backward scan. (Algorithm 1 instead subtracts each removed item from running totals
    ///   of `S1` and `S2`; with an item of `10^19` entries next to small ones, `S2` is `~10^22`,
    ///   and the tiny differences that decide whether it keeps a filter drown in its rounding.)
    ///
    /// Complexity `O(F log F)` for `F` items, dominated by the sort; `O(F)` scratch space. Well
    /// under a millisecond for `F = 1,000` (DESIGN.md §2 asks for that, and for under 10 ms at
    /// `F = 10,000`).
    ///
    /// The pure form is the optimum of eq. 3 (the problem is convex and the result satisfies its
    /// KKT conditions: every kept item has `z_i * eps_i / n_i = exp(C)`, every dropped one
    /// `z_i / n_i <= exp(C)`). The minimum-bpk-1 variant is not an optimum: removing an item
    /// whose bpk was in `(0, 1)` hands its memory to the others and lowers `C`, so with the final
    /// `C` a dropped item may have `z / n > exp(C + c)`, i.e. line 20 would now give it more than
    /// 1 bit per key (DESIGN.md §2's own 6-run example at 2 bits/key: the dropped last level would get
    /// 2.1 bits). What holds is the condition at the time of removal (`z_j / n_j <=
    /// exp(C_j + c)` with `C_j` the constant of the prefix ending at `j`). The variant can also
    /// cost slightly more than uniform allocation, even at `bpk_target >= 1`.
    pub fn solve(&self) -> Allocation {
        let c = self.fpr_constant;
        let mut bits_per_key = vec![0.0; self.items.len()];
        if self.memory_bits <= 0.0 {
            // Step 1: no memory, no filters.
            return self.allocation(bits_per_key, None, 0);
        }
        let mut candidates: Vec<Candidate> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.entries > 0 && item.weight > 0.0)
            .map(|(index, item)| Candidate {
                index,
                entries: item.entries,
                // l_i = ln(z_i / n_i) as a difference of logs: neither a tiny weight nor a huge
                // entry count can overflow the ratio.
                log_density: item.weight.ln() - (item.entries as f64).ln(),
            })
            .collect();
        // Step 1: sort by z_i / n_i descending [Algorithm 1, line 5]; ties by input order so the
        // result does not depend on the sort's stability.
        candidates.sort_unstable_by(|a, b| {
            b.log_density
                .total_cmp(&a.log_density)
                .then(a.index.cmp(&b.index))
        });

        // prefix[k - 1] = (S1_k, T_k) for the first k candidates [Algorithm 1, lines 6-7, in the
        // form above]: S1 exact in u128, T a sum of non-negative terms.
        let mut prefix: Vec<(u128, f64)> = Vec::with_capacity(candidates.len());
        let mut entries_sum: u128 = 0;
        let mut spread: f64 = 0.0;
        let mut previous_log_density = None;
        for candidate in &candidates {
            if let Some(previous) = previous_log_density {
                // T_{k+1} = T_k + S1_k * (l_k - l_{k+1}); the gap is >= 0 by the sort.
                spread += entries_sum as f64 * (previous - candidate.log_density);
            }
            entries_sum += u128::from(candidate.entries);
            previous_log_density = Some(candidate.log_density);
            prefix.push((entries_sum, spread));
        }

        // Step 3: the largest ln eps a kept item may have [Algorithm 1, line 10; §4.1].
        let log_fpr_limit = match self.variant {
            Variant::Pure => 0.0,
            Variant::MinimumBitsPerKeyOne => -c,
        };
        let mut kept = candidates.len();
        // (l_k, ln eps_k) of the last kept item.
        let mut last_kept = None;
        while kept > 0 {
            let last = &candidates[kept - 1];
            let (entries_sum, spread) = prefix[kept - 1];
            let entries_sum = entries_sum as f64;
            // ln eps_k = ln(n_k / z_k) + C = T_k / S1_k - (M / S1_k) * c [eq. 4]. M / S1 cannot
            // overflow (S1 >= 1), unlike Algorithm 1's M * c.
            let log_fpr = spread / entries_sum - (self.memory_bits / entries_sum) * c;
            if log_fpr > log_fpr_limit {
                kept -= 1;
            } else {
                last_kept = Some((last.log_density, log_fpr));
                break;
            }
        }
        let Some((last_log_density, last_log_fpr)) = last_kept else {
            return self.allocation(bits_per_key, None, 0);
        };

        // Step 4: bpk_i = -(ln(n_i / z_i) + C) / c = bpk_k + (l_i - l_k) / c [line 20].
        let last_bits_per_key = (-last_log_fpr / c).max(0.0);
        for candidate in &candidates[..kept] {
            bits_per_key[candidate.index] =
                last_bits_per_key + (candidate.log_density - last_log_density) / c;
        }
        // C = ln(z_k / n_k) + ln eps_k [eq. 4].
        let constant = last_log_density + last_log_fpr;
        self.allocation(bits_per_key, Some(constant), kept)
    }

    /// The reference the solver must never lose to (DESIGN.md §3.1, uniform filters): every item gets
    /// `bpk_target = M / sum(n_i)`, whatever its weight. Has no constant `C`.
    pub fn uniform(&self) -> Allocation {
        let bits_per_key_target = self.bits_per_key_target();
        let bits_per_key = vec![bits_per_key_target; self.items.len()];
        let kept = if bits_per_key_target > 0.0 {
            self.items.iter().filter(|item| item.entries > 0).count()
        } else {
            0
        };
        self.allocation(bits_per_key, None, kept)
    }

    fn allocation(&self, bits_per_key: Vec<f64>, constant: Option<f64>, kept: usize) -> Allocation {
        let predicted_cost = predicted_cost(&self.items, &bits_per_key, self.fpr_constant);
        let memory_bits = self
            .items
            .iter()
            .zip(&bits_per_key)
            .map(|(item, bits)| item.entries as f64 * bits)
            .sum();
        Allocation {
            bits_per_key,
            constant,
            kept,
            predicted_cost,
            memory_bits,
            fpr_constant: self.fpr_constant,
            variant: self.variant,
        }
    }
}

/// The answer to a [`Problem`].
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    bits_per_key: Vec<f64>,
    constant: Option<f64>,
    kept: usize,
    predicted_cost: f64,
    memory_bits: f64,
    fpr_constant: f64,
    variant: Variant,
}

impl Allocation {
    /// Bits per key of every item, in the problem's item order (`>= 0`; 0 = no filter). Finite;
    /// not capped at what a filter builder accepts (a tiny, hot item can be given more than 64).
    pub fn bits_per_key(&self) -> &[f64] {
        &self.bits_per_key
    }

    /// The constant `C` of eq. 4 over the final set `S`: every kept item has
    /// `eps_i = (n_i / z_i) * exp(C)`. `None` when no item keeps a filter (no memory, no
    /// weights, or the variant dropped everything) and for the uniform reference. DESIGN.md §3.4's
    /// skip test compares `z_i / n_i` with `exp(C + 0.5 * c)`.
    pub fn constant(&self) -> Option<f64> {
        self.constant
    }

    /// `|S|`: how many items keep a filter (bpk > 0, except where rounding made it exactly 0).
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// The model's cost, `sum_i z_i * eps_i` with `eps_i = exp(-c * bpk_i)` [eq. 3]: expected
    /// false positives (or unfiltered probes) of the zero-result lookups. Items with no entries
    /// count 0 (nothing to read).
    pub fn predicted_cost(&self) -> f64 {
        self.predicted_cost
    }

    /// Filter memory the allocation uses, `sum_i n_i * bpk_i` bits (the left side of eq. 3's
    /// constraint). Equals `M` when at least one item keeps a filter.
    pub fn memory_bits(&self) -> f64 {
        self.memory_bits
    }

    /// The FPR constant `c` the allocation was solved with.
    pub fn fpr_constant(&self) -> f64 {
        self.fpr_constant
    }

    /// The false-positive rate `exp(-c * bpk_i)` of every item's filter (1 = no filter).
    pub fn false_positive_rates(&self) -> impl Iterator<Item = f64> + '_ {
        self.bits_per_key
            .iter()
            .map(move |bits| (-self.fpr_constant * bits).exp())
    }

    /// Bits per key that Algorithm 1's line 20 gives an item with `entries` entries and weight
    /// `weight` under this allocation's `C`: `max(0, (ln(z / n) - C) / c)`, and for
    /// [`Variant::MinimumBitsPerKeyOne`] 0 if that is below 1 (Mnemosyne+ prices a new file this
    /// way, Mnemosyne §5.2.3). Reproduces [`Allocation::bits_per_key`] for the kept items. 0 if
    /// there is no `C`, or `entries`/`weight` is 0 or the weight is not finite. Caveat: with the
    /// variant, an item the solve dropped can get more than 1 bit here (see [`Problem::solve`]).
    pub fn bits_per_key_at(&self, entries: u64, weight: f64) -> f64 {
        let Some(constant) = self.constant else {
            return 0.0;
        };
        if entries == 0 || !(weight > 0.0 && weight.is_finite()) {
            return 0.0;
        }
        let log_density = weight.ln() - (entries as f64).ln();
        let bits = ((log_density - constant) / self.fpr_constant).max(0.0);
        match self.variant {
            Variant::MinimumBitsPerKeyOne if bits < 1.0 => 0.0,
            _ => bits,
        }
    }
}

/// Monkey on the actual shape (DESIGN.md §2, "IdealMonkey"): one item per sorted run with weight 1,
/// so that the solver makes every run's FPR proportional to its size — Monkey's rule.
pub fn monkey_items(run_entries: &[u64]) -> Vec<Item> {
    run_entries
        .iter()
        .map(|&entries| Item::new(entries, 1.0))
        .collect()
}

/// A sorted run: the level it is on and its entries (input of [`monkey_general_items`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    /// Level of the run (the largest level present is taken as the last level).
    pub level: usize,
    /// Entries in the run.
    pub entries: u64,
}

/// The weight of a last-level run under Monkey-general (DESIGN.md §2; Monkey §4.4, eq. 13) when a
/// fraction `zero_result_fraction` (`f0`) of point lookups find nothing and the rest target
/// existing keys (worst case: on the last level), and the last level holds `k =
/// last_level_runs` runs: `g = f0 + (1 - f0) (k - 1) / (2k)`. A non-empty lookup passes on
/// average `(k - 1) / 2` of the `k` runs before the one holding its key, so each last-level run
/// is probed in vain by every zero-result lookup and by a fraction `(k - 1) / (2k)` of the others.
///
/// * Leveling, `k = 1`: `f0` — existing-key lookups end at the last level, so its filter only
///   helps the zero-result ones.
/// * Tiering, `k = T - 1`: `g = 1 - (1 - f0) * T / (2 * (T - 1))` (equals `f0` at `T = 2`).
///
/// Fails unless `0 <= f0 <= 1` and `k >= 1` is finite.
pub fn monkey_general_last_level_weight(
    zero_result_fraction: f64,
    last_level_runs: f64,
) -> Result<f64> {
    let f0 = zero_result_fraction;
    if !(0.0..=1.0).contains(&f0) {
        return Err(Error::InvalidArgument(format!(
            "zero-result fraction must be between 0 and 1, got {f0}"
        )));
    }
    let k = last_level_runs;
    if !k.is_finite() || k < 1.0 {
        return Err(Error::InvalidArgument(format!(
            "the last level's runs must be finite and >= 1, got {k}"
        )));
    }
    if k == 1.0 {
        return Ok(f0);
    }
    // g = 1 - (1 - f0) (k + 1) / (2k), the same as f0 + (1 - f0) (k - 1) / (2k); written so that
    // with k = T - 1 it is Monkey's 1 - (1 - f0) T / (2 (T - 1)) [DESIGN.md §2; Monkey §4.4]
    // operation for operation. In [f0, 1] for k >= 1.
    Ok(1.0 - (1.0 - f0) * (k + 1.0) / (2.0 * k))
}

/// Monkey-general items (DESIGN.md §2): weight 1 for every run above the last level and
/// [`monkey_general_last_level_weight`] for every run on it (the largest `level` in `runs`),
/// which holds `last_level_runs` runs when full (1 leveled, `T - 1` tiered).
pub fn monkey_general_items(
    runs: &[RunShape],
    zero_result_fraction: f64,
    last_level_runs: f64,
) -> Result<Vec<Item>> {
    let last_level_weight =
        monkey_general_last_level_weight(zero_result_fraction, last_level_runs)?;
    let last_level = runs.iter().map(|run| run.level).max().unwrap_or(0);
    Ok(runs
        .iter()
        .map(|run| {
            let weight = if run.level == last_level {
                last_level_weight
            } else {
                1.0
            };
            Item::new(run.entries, weight)
        })
        .collect())
}

/// An item that may keep a filter (`n_i > 0`, `z_i > 0`), as the search sees it.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    /// Position in the problem's item list.
    index: usize,
    /// `n_i`.
    entries: u64,
    /// `l_i = ln(z_i / n_i)`.
    log_density: f64,
}

/// `sum_i n_i` as a float (exact up to 2^53 per partial sum; summed in `u128`).
fn total_entries(items: &[Item]) -> f64 {
    items
        .iter()
        .map(|item| u128::from(item.entries))
        .sum::<u128>() as f64
}

/// `sum_i z_i * exp(-c * bpk_i)` over items with entries [eq. 3].
fn predicted_cost(items: &[Item], bits_per_key: &[f64], c: f64) -> f64 {
    items
        .iter()
        .zip(bits_per_key)
        .filter(|(item, _)| item.entries > 0)
        .map(|(item, bits)| item.weight * (-c * bits).exp())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const C: f64 = DEFAULT_FPR_CONSTANT;

    /// DESIGN.md §2's 6-run tree: three level-0 runs of 36k entries, then runs of 145k, 580k, 1.17M.
    fn spec_six_runs() -> Vec<Item> {
        monkey_items(&[36_000, 36_000, 36_000, 145_000, 580_000, 1_170_000])
    }

    fn solve(items: &[Item], bits_per_key: f64, variant: Variant) -> (Problem, Allocation) {
        let problem = Problem::with_bits_per_key(items.to_vec(), bits_per_key)
            .expect("valid problem")
            .variant(variant);
        let allocation = problem.solve();
        (problem, allocation)
    }

    fn relative_error(actual: f64, expected: f64) -> f64 {
        (actual - expected).abs() / expected.abs().max(f64::MIN_POSITIVE)
    }

    /// `ln(z / n)` of an item that may keep a filter.
    fn log_density(item: &Item) -> f64 {
        item.weight.ln() - (item.entries as f64).ln()
    }

    /// Tolerance for comparing `ln(z eps / n)` with `C`: 1e-9 absolute (relative 1e-9 on
    /// `z eps / n`), widened to 1e-9 relative once `|C| > 1`. A huge budget on a few entries
    /// makes `C` about -1.7e7 (`exp(C)` underflows), where one ulp of `C` is already 4e-9.
    fn log_tolerance(constant: f64) -> f64 {
        1e-9 * constant.abs().max(1.0)
    }

    fn may_keep_filter(item: &Item) -> bool {
        item.entries > 0 && item.weight > 0.0
    }

    fn cost_of(items: &[Item], bits_per_key: &[f64], c: f64) -> f64 {
        predicted_cost(items, bits_per_key, c)
    }

    /// Reference 1: exhaustive over which subset `S` of the items keeps a filter. For each `S`,
    /// eq. 4's closed form over `S` is a feasible point if every `eps_i <= 1`; the optimum of the
    /// convex problem is one of them (its `S` is `{i : eps_i < 1}`), so the cheapest feasible one
    /// is the optimum. Independent of Theorem 4.1 (does not assume `S` is a prefix).
    fn exhaustive_optimum(items: &[Item], memory_bits: f64, c: f64) -> f64 {
        let candidates: Vec<&Item> = items.iter().filter(|item| may_keep_filter(item)).collect();
        let unfiltered: f64 = candidates.iter().map(|item| item.weight).sum();
        let mut best = unfiltered; // S empty: every candidate probed in vain.
        if memory_bits <= 0.0 {
            return best;
        }
        for mask in 1u32..(1 << candidates.len()) {
            let chosen = |k: usize| mask & (1 << k) != 0;
            let (mut s1, mut s2) = (0.0, 0.0);
            for (k, item) in candidates.iter().enumerate() {
                if chosen(k) {
                    let n = item.entries as f64;
                    s1 += n;
                    s2 += -n * log_density(item);
                }
            }
            let constant = -(memory_bits * c + s2) / s1;
            let mut cost = 0.0;
            let mut feasible = true;
            for (k, item) in candidates.iter().enumerate() {
                if chosen(k) {
                    let log_fpr = constant - log_density(item);
                    if log_fpr > 1e-12 {
                        feasible = false;
                        break;
                    }
                    cost += item.weight * log_fpr.exp();
                } else {
                    cost += item.weight;
                }
            }
            if feasible && cost < best {
                best = cost;
            }
        }
        best
    }

    /// Reference 2: water-filling. The KKT conditions say `bpk_i = max(0, (ln(z_i/n_i) - C)/c)`
    /// for the `C` at which memory used equals `M`; memory used falls as `C` grows, so bisect on
    /// `C`. Returns the bits per key.
    fn water_filling(items: &[Item], memory_bits: f64, c: f64) -> Vec<f64> {
        let allocate = |constant: f64| -> Vec<f64> {
            items
                .iter()
                .map(|item| {
                    if may_keep_filter(item) {
                        ((log_density(item) - constant) / c).max(0.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        let used = |bits: &[f64]| -> f64 {
            items
                .iter()
                .zip(bits)
                .map(|(item, b)| item.entries as f64 * b)
                .sum()
        };
        let densities: Vec<f64> = items
            .iter()
            .filter(|item| may_keep_filter(item))
            .map(log_density)
            .collect();
        if densities.is_empty() || memory_bits <= 0.0 {
            return vec![0.0; items.len()];
        }
        let total: f64 = items
            .iter()
            .filter(|item| may_keep_filter(item))
            .map(|item| item.entries as f64)
            .sum();
        let max_density = densities.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min_density = densities.iter().copied().fold(f64::INFINITY, f64::min);
        // Memory at `hi` is 0; at `lo` every candidate gets more than `M / total` bits per key.
        let mut hi = max_density;
        let mut lo = min_density - memory_bits * c / total - 1.0;
        for _ in 0..300 {
            let mid = 0.5 * (lo + hi);
            if used(&allocate(mid)) > memory_bits {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        allocate(0.5 * (lo + hi))
    }

    /// The constant of eq. 4 over the prefix of the sorted candidates ending at each candidate:
    /// `(item index, C_j)` in sorted order (what Algorithm 1 computes when it tests item `j`).
    fn prefix_constants(items: &[Item], memory_bits: f64, c: f64) -> Vec<(usize, f64)> {
        let mut order: Vec<usize> = (0..items.len())
            .filter(|&i| may_keep_filter(&items[i]))
            .collect();
        order.sort_by(|&a, &b| {
            log_density(&items[b])
                .total_cmp(&log_density(&items[a]))
                .then(a.cmp(&b))
        });
        let (mut s1, mut s2) = (0.0, 0.0);
        order
            .into_iter()
            .map(|i| {
                let n = items[i].entries as f64;
                s1 += n;
                s2 += -n * log_density(&items[i]);
                (i, -(memory_bits * c + s2) / s1)
            })
            .collect()
    }

    /// The third option DESIGN.md §2 quotes: solve the pure form, raise every bpk in (0, 1) to 1 and
    /// re-solve the others with what memory is left.
    fn pure_raised_to_one(items: &[Item], bits_per_key: f64) -> Vec<f64> {
        let (problem, pure) = solve(items, bits_per_key, Variant::Pure);
        let raised: Vec<bool> = pure
            .bits_per_key()
            .iter()
            .map(|&b| b > 0.0 && b < 1.0)
            .collect();
        let raised_bits: f64 = items
            .iter()
            .zip(&raised)
            .filter(|(_, &r)| r)
            .map(|(item, _)| item.entries as f64)
            .sum();
        let rest: Vec<Item> = items
            .iter()
            .zip(&raised)
            .filter(|(_, &r)| !r)
            .map(|(item, _)| *item)
            .collect();
        let rest_solved = Problem::with_memory_bits(rest, problem.memory_bits() - raised_bits)
            .expect("valid")
            .solve();
        let mut rest_bits = rest_solved.bits_per_key().iter();
        raised
            .iter()
            .map(|&r| {
                if r {
                    1.0
                } else {
                    *rest_bits.next().expect("one per unraised item")
                }
            })
            .collect()
    }

    #[test]
    fn spec_example_pure_form_at_two_bits_is_0_491_of_uniform() {
        let items = spec_six_runs();
        let (problem, pure) = solve(&items, 2.0, Variant::Pure);
        let uniform = problem.uniform();
        let ratio = pure.predicted_cost() / uniform.predicted_cost();
        assert_eq!((ratio * 1000.0).round(), 491.0, "ratio {ratio}");
        let last = pure.bits_per_key()[5];
        assert_eq!((last * 100.0).round(), 87.0, "last level gets {last} bits");
        assert_eq!(pure.kept(), 6);
        let rounded: Vec<f64> = pure
            .bits_per_key()
            .iter()
            .map(|b| (b * 1000.0).round() / 1000.0)
            .collect();
        assert_eq!(rounded, [8.118, 8.118, 8.118, 5.218, 2.332, 0.872]);
        // Monkey's rule: FPR proportional to run size.
        let fprs: Vec<f64> = pure.false_positive_rates().collect();
        for (item, fpr) in items.iter().zip(&fprs) {
            assert!(relative_error(fpr / item.entries as f64, fprs[0] / 36_000.0) < 1e-9);
        }
        assert!(relative_error(pure.memory_bits(), 2.0 * 2_003_000.0) < 1e-12);
    }

    #[test]
    fn spec_example_minimum_one_bit_variant_at_two_bits_is_0_549_of_uniform() {
        let items = spec_six_runs();
        let (problem, variant) = solve(&items, 2.0, Variant::MinimumBitsPerKeyOne);
        let ratio = variant.predicted_cost() / problem.uniform().predicted_cost();
        assert_eq!((ratio * 1000.0).round(), 549.0, "ratio {ratio}");
        assert_eq!(
            variant.bits_per_key()[5],
            0.0,
            "the last level keeps no filter"
        );
        assert_eq!(variant.kept(), 5);
        let rounded: Vec<f64> = variant
            .bits_per_key()
            .iter()
            .map(|b| (b * 1000.0).round() / 1000.0)
            .collect();
        assert_eq!(rounded, [9.342, 9.342, 9.342, 6.442, 3.557, 0.0]);
        // "58% of the keys" are on the last level.
        assert_eq!((1_170_000.0 / 2_003_000.0 * 100.0_f64).round(), 58.0);
        assert!(relative_error(variant.memory_bits(), 2.0 * 2_003_000.0) < 1e-12);
    }

    #[test]
    fn spec_example_raising_sub_one_bit_filters_to_one_is_0_492_of_uniform() {
        let items = spec_six_runs();
        let bits = pure_raised_to_one(&items, 2.0);
        assert_eq!(bits[5], 1.0);
        let uniform = cost_of(&items, &[2.0; 6], C);
        let ratio = cost_of(&items, &bits, C) / uniform;
        assert_eq!((ratio * 1000.0).round(), 492.0, "ratio {ratio}");
    }

    #[test]
    fn spec_example_all_three_agree_from_three_bits_per_key() {
        let items = spec_six_runs();
        for bits_per_key in [3.0, 4.0, 6.0, 10.0] {
            let (_, pure) = solve(&items, bits_per_key, Variant::Pure);
            let (_, variant) = solve(&items, bits_per_key, Variant::MinimumBitsPerKeyOne);
            let raised = pure_raised_to_one(&items, bits_per_key);
            for ((p, v), r) in pure
                .bits_per_key()
                .iter()
                .zip(variant.bits_per_key())
                .zip(&raised)
            {
                assert!(relative_error(*v, *p) < 1e-12, "{bits_per_key}: {p} vs {v}");
                assert!(relative_error(*r, *p) < 1e-12, "{bits_per_key}: {p} vs {r}");
            }
        }
    }

    /// DESIGN.md §7 "exact finite-L value": on the idealised leveled shape (level `i` of `L` holds
    /// `N (T-1)/T / T^(L-i)` entries) with `z = 1` per run, the pure solver's cost is
    /// `exp(-(M / sum n) c) * exp(H)`, `H = -sum w_i ln w_i`, `w_i = n_i / sum n`.
    #[test]
    fn pure_cost_equals_the_exact_finite_l_value_on_idealised_leveled_shapes() {
        let total = 1e10;
        let mut checked = 0;
        for size_ratio in [2.0_f64, 3.0, 4.0, 5.0, 10.0] {
            for levels in 1..=7_i32 {
                let runs: Vec<u64> = (1..=levels)
                    .map(|i| {
                        (total * (size_ratio - 1.0) / size_ratio / size_ratio.powi(levels - i))
                            .round() as u64
                    })
                    .collect();
                let entries: f64 = runs.iter().map(|&n| n as f64).sum();
                let entropy: f64 = runs
                    .iter()
                    .map(|&n| {
                        let w = n as f64 / entries;
                        -w * w.ln()
                    })
                    .sum();
                for bits_per_key in [1.5, 2.0, 5.0, 10.0, 20.0] {
                    let (problem, pure) = solve(&monkey_items(&runs), bits_per_key, Variant::Pure);
                    assert_eq!(pure.kept(), runs.len(), "T={size_ratio} L={levels}");
                    let exact = (-(problem.memory_bits() / entries) * C).exp() * entropy.exp();
                    assert!(
                        relative_error(pure.predicted_cost(), exact) < 1e-9,
                        "T={size_ratio} L={levels} bpk={bits_per_key}: {} vs {exact}",
                        pure.predicted_cost()
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 5 * 7 * 5);
    }

    /// A reading of the paper's minimum-one-bit variant says its dropped files satisfy
    /// `z/n <= exp(C + c)`. With the final `C` they do not, on DESIGN.md §2's example: dropping the last level (bpk 0.87 < 1) gives its
    /// memory to the others and lowers `C`, after which line 20 would give that run 2.1 bits.
    /// What holds is the condition with the `C` of the prefix at the time of removal.
    #[test]
    fn variant_dropped_run_violates_spec_final_constant_condition_on_spec_example() {
        let items = spec_six_runs();
        let (problem, variant) = solve(&items, 2.0, Variant::MinimumBitsPerKeyOne);
        let constant = variant.constant().expect("five runs keep filters");
        let last = items[5];
        assert!(
            log_density(&last) > constant + C,
            "the final-C condition of DESIGN.md §2 fails"
        );
        let would_get = variant.bits_per_key_at(last.entries, last.weight);
        assert_eq!((would_get * 10.0).round(), 21.0, "{would_get}");
        // The removal-time condition holds.
        let prefixes = prefix_constants(&items, problem.memory_bits(), C);
        let (index, constant_at_removal) = prefixes[5];
        assert_eq!(index, 5);
        assert!(log_density(&last) <= constant_at_removal + C);
    }

    /// The variant is a heuristic: here, at `bpk_target = 1.65 >= 1` (so uniform is feasible for
    /// it), it costs 0.4% more than uniform filters. The pure form does not.
    #[test]
    fn variant_can_cost_more_than_uniform() {
        let items = vec![Item::new(2_314_179, 2155.46), Item::new(6_066_889, 9778.13)];
        let (problem, variant) = solve(&items, 1.645, Variant::MinimumBitsPerKeyOne);
        let uniform = problem.uniform().predicted_cost();
        let ratio = variant.predicted_cost() / uniform;
        assert!(ratio > 1.004 && ratio < 1.005, "ratio {ratio}");
        let pure = problem.clone().variant(Variant::Pure).solve();
        assert!(pure.predicted_cost() <= uniform);
    }

    #[test]
    fn degenerate_inputs_give_zeros_without_nan() {
        // Empty input.
        let empty = Problem::with_bits_per_key(Vec::new(), 10.0).expect("valid");
        assert_eq!(empty.memory_bits(), 0.0);
        assert_eq!(empty.bits_per_key_target(), 0.0);
        for allocation in [empty.solve(), empty.uniform()] {
            assert!(allocation.bits_per_key().is_empty());
            assert_eq!(allocation.constant(), None);
            assert_eq!(allocation.kept(), 0);
            assert_eq!(allocation.predicted_cost(), 0.0);
            assert_eq!(allocation.memory_bits(), 0.0);
        }
        let empty = Problem::with_memory_bits(Vec::new(), 1e6).expect("valid");
        assert!(empty.solve().bits_per_key().is_empty());

        // All weights zero: nothing to gain from any filter.
        let items = vec![Item::new(100, 0.0), Item::new(1_000, 0.0)];
        let allocation = Problem::with_bits_per_key(items, 8.0)
            .expect("valid")
            .solve();
        assert_eq!(allocation.bits_per_key(), &[0.0, 0.0]);
        assert_eq!(allocation.constant(), None);
        assert_eq!(allocation.predicted_cost(), 0.0);
        assert_eq!(allocation.bits_per_key_at(100, 1.0), 0.0);

        // No memory.
        let items = vec![Item::new(100, 1.0), Item::new(1_000, 5.0)];
        for variant in [Variant::Pure, Variant::MinimumBitsPerKeyOne] {
            let allocation = Problem::with_memory_bits(items.clone(), 0.0)
                .expect("valid")
                .variant(variant)
                .solve();
            assert_eq!(allocation.bits_per_key(), &[0.0, 0.0]);
            assert_eq!(allocation.kept(), 0);
            assert_eq!(allocation.predicted_cost(), 6.0);
        }

        // No entries at all, and items without entries or weight next to real ones.
        let allocation = Problem::with_bits_per_key(vec![Item::new(0, 3.0)], 10.0)
            .expect("valid")
            .solve();
        assert_eq!(allocation.bits_per_key(), &[0.0]);
        assert_eq!(
            allocation.predicted_cost(),
            0.0,
            "an empty item costs nothing"
        );
        let items = vec![
            Item::new(0, 3.0),
            Item::new(500, 0.0),
            Item::new(1_000, 2.0),
        ];
        let allocation = Problem::with_bits_per_key(items, 4.0)
            .expect("valid")
            .solve();
        assert_eq!(allocation.bits_per_key()[..2], [0.0, 0.0]);
        assert!(
            relative_error(allocation.bits_per_key()[2], 6.0) < 1e-12,
            "all of M"
        );
        assert_eq!(allocation.kept(), 1);

        // The minimum-1 variant with less than one bit for the best item keeps nothing.
        let items = vec![Item::new(1_000, 1.0), Item::new(1_000, 1.0)];
        let allocation = Problem::with_memory_bits(items, 999.0)
            .expect("valid")
            .variant(Variant::MinimumBitsPerKeyOne)
            .solve();
        assert_eq!(allocation.bits_per_key(), &[0.0, 0.0]);
        assert_eq!(allocation.constant(), None);
        assert_eq!(allocation.predicted_cost(), 2.0);
    }

    #[test]
    fn extreme_magnitudes_stay_finite() {
        let items = vec![
            Item::new(u64::MAX, f64::MIN_POSITIVE),
            Item::new(1, 1e300),
            Item::new(u64::MAX, 5e-324),
            Item::new(1, 1e-300),
            Item::new(7, 1e307),
        ];
        for memory_bits in [0.0, 1e-300, 1.0, 1e20, 1e300] {
            for variant in [Variant::Pure, Variant::MinimumBitsPerKeyOne] {
                for c in [MIN_FPR_CONSTANT, C, MAX_FPR_CONSTANT] {
                    let problem = Problem::with_memory_bits(items.clone(), memory_bits)
                        .expect("valid")
                        .fpr_constant(c)
                        .expect("valid")
                        .variant(variant);
                    let allocation = problem.solve();
                    for &bits in allocation.bits_per_key() {
                        assert!(bits.is_finite() && bits >= 0.0, "{memory_bits} {bits}");
                    }
                    assert!(allocation.predicted_cost().is_finite());
                    assert!(allocation.memory_bits().is_finite());
                    // Not checked when the budget per key is subnormal (below 2.2e-308 bits):
                    // such floats have too few significant digits to meet it to 1e-9.
                    if problem.bits_per_key_target() >= f64::MIN_POSITIVE {
                        assert!(
                            allocation.memory_bits() <= memory_bits * (1.0 + 1e-9),
                            "{memory_bits} {c} {variant:?}: {allocation:?}"
                        );
                    }
                    assert!(allocation.constant().is_none_or(f64::is_finite));
                    assert!(problem.uniform().predicted_cost().is_finite());
                }
            }
        }
    }

    #[test]
    fn invalid_arguments_are_rejected() {
        let item = |weight| vec![Item::new(10, weight)];
        for weight in [f64::NAN, f64::INFINITY, -1.0, f64::NEG_INFINITY] {
            assert!(
                Problem::with_memory_bits(item(weight), 10.0).is_err(),
                "{weight}"
            );
            assert!(
                Problem::with_bits_per_key(item(weight), 1.0).is_err(),
                "{weight}"
            );
        }
        for budget in [f64::NAN, f64::INFINITY, -1.0] {
            assert!(Problem::with_memory_bits(item(1.0), budget).is_err());
            assert!(Problem::with_bits_per_key(item(1.0), budget).is_err());
        }
        let problem = || Problem::with_memory_bits(item(1.0), 10.0).expect("valid");
        for c in [f64::NAN, 0.0, 0.009, 0.7, -0.4, f64::INFINITY] {
            assert!(problem().fpr_constant(c).is_err(), "{c}");
        }
        assert!(problem().fpr_constant(0.3).is_ok());
        assert!(Problem::with_memory_bits(item(-0.0), 10.0).is_ok());
        let overflowing = vec![Item::new(1, f64::MAX), Item::new(1, f64::MAX)];
        assert!(Problem::with_memory_bits(overflowing, 10.0).is_err());
    }

    #[test]
    fn a_fitted_fpr_constant_changes_the_model_consistently() {
        let items = spec_six_runs();
        let c = 0.38;
        let problem = Problem::with_bits_per_key(items.clone(), 3.0)
            .expect("valid")
            .fpr_constant(c)
            .expect("valid");
        let allocation = problem.solve();
        assert_eq!(allocation.fpr_constant(), c);
        let constant = allocation.constant().expect("kept");
        for (item, bits) in items.iter().zip(allocation.bits_per_key()) {
            assert!((log_density(item) - c * bits - constant).abs() < 1e-9);
        }
        let reference = water_filling(&items, problem.memory_bits(), c);
        assert!(relative_error(allocation.predicted_cost(), cost_of(&items, &reference, c)) < 1e-9);
        // The same budget with the default constant gives the same bits here (z = 1 everywhere,
        // nothing dropped: bpk_i = M/N + (ln(1/n_i) - mean) / c), but a different cost.
        let default = Problem::with_bits_per_key(items, 3.0)
            .expect("valid")
            .solve();
        assert!(default.predicted_cost() < allocation.predicted_cost());
    }

    #[test]
    fn bits_per_key_at_reproduces_the_kept_items() {
        let items = vec![
            Item::new(1_000, 50.0),
            Item::new(10_000, 40.0),
            Item::new(100_000, 30.0),
            Item::new(1_000_000, 1.0),
        ];
        for variant in [Variant::Pure, Variant::MinimumBitsPerKeyOne] {
            let (_, allocation) = solve(&items, 1.0, variant);
            assert!(
                allocation.kept() < items.len(),
                "{variant:?} drops the cold run"
            );
            for (item, &bits) in items.iter().zip(allocation.bits_per_key()) {
                if bits > 0.0 {
                    let again = allocation.bits_per_key_at(item.entries, item.weight);
                    assert!(relative_error(again, bits) < 1e-12);
                }
            }
            assert_eq!(allocation.bits_per_key_at(0, 1.0), 0.0);
            assert_eq!(allocation.bits_per_key_at(10, 0.0), 0.0);
            assert_eq!(allocation.bits_per_key_at(10, f64::NAN), 0.0);
            // Colder than everything kept: no filter.
            assert_eq!(allocation.bits_per_key_at(1_000_000_000, 1e-6), 0.0);
        }
    }

    #[test]
    fn result_does_not_depend_on_input_order() {
        let items = vec![
            Item::new(5_000, 3.0),
            Item::new(80_000, 1.0),
            Item::new(1_000, 0.0),
            Item::new(300, 9.0),
            Item::new(2_000_000, 0.5),
            Item::new(40_000, 2.0),
        ];
        let reversed: Vec<Item> = items.iter().rev().copied().collect();
        for variant in [Variant::Pure, Variant::MinimumBitsPerKeyOne] {
            for bits_per_key in [0.5, 2.0, 8.0] {
                let (_, forward) = solve(&items, bits_per_key, variant);
                let (_, backward) = solve(&reversed, bits_per_key, variant);
                let backward: Vec<f64> = backward.bits_per_key().iter().rev().copied().collect();
                assert_eq!(forward.bits_per_key(), backward.as_slice());
            }
        }
    }

    #[test]
    fn monkey_on_the_actual_shape_gives_each_run_weight_one() {
        let items = monkey_items(&[10, 0, 300]);
        assert_eq!(
            items,
            vec![Item::new(10, 1.0), Item::new(0, 1.0), Item::new(300, 1.0)]
        );
        assert!(monkey_items(&[]).is_empty());
    }

    #[test]
    fn monkey_general_weights_follow_monkey_section_4_4() {
        assert_eq!(
            monkey_general_last_level_weight(0.3, 1.0).expect("valid"),
            0.3
        );
        // g = 1 - (1 - f0) T / (2 (T - 1)): equals f0 at T = 2.
        for f0 in [0.0, 0.25, 0.5, 1.0] {
            let g = monkey_general_last_level_weight(f0, 2.0 - 1.0).expect("valid");
            assert!((g - f0).abs() < 1e-15);
        }
        for (f0, size_ratio) in [(0.1, 3.0), (0.5, 4.0), (0.9, 10.0)] {
            // Each last-level run: every zero-result lookup, and the non-empty ones that pass it
            // before reaching their key's run ((T - 2) / 2 of the T - 1 runs on average).
            let in_vain = f0 + (1.0 - f0) * (size_ratio - 2.0) / (2.0 * (size_ratio - 1.0));
            let g = monkey_general_last_level_weight(f0, size_ratio - 1.0).expect("valid");
            assert!((g - in_vain).abs() < 1e-15);
        }
        let g = monkey_general_last_level_weight(0.5, 10.0 - 1.0).expect("valid");
        assert!((g - (1.0 - 0.5 * 10.0 / 18.0)).abs() < 1e-15);
        assert!((g - 0.722_222).abs() < 1e-6);
        for f0 in [-0.1, 1.1, f64::NAN] {
            assert!(monkey_general_last_level_weight(f0, 1.0).is_err());
        }
        for size_ratio in [1.5, f64::NAN, f64::INFINITY] {
            assert!(monkey_general_last_level_weight(0.5, size_ratio - 1.0).is_err());
        }

        let runs = [
            RunShape {
                level: 0,
                entries: 10,
            },
            RunShape {
                level: 1,
                entries: 100,
            },
            RunShape {
                level: 2,
                entries: 1_000,
            },
            RunShape {
                level: 2,
                entries: 900,
            },
        ];
        let leveled = monkey_general_items(&runs, 0.2, 1.0).expect("valid");
        let weights: Vec<f64> = leveled.iter().map(|item| item.weight).collect();
        assert_eq!(weights, vec![1.0, 1.0, 0.2, 0.2]);
        assert_eq!(leveled[3].entries, 900);
        let tiered = monkey_general_items(&runs, 0.2, 4.0 - 1.0).expect("valid");
        let g = 1.0 - 0.8 * 4.0 / 6.0;
        let weights: Vec<f64> = tiered.iter().map(|item| item.weight).collect();
        assert_eq!(weights, vec![1.0, 1.0, g, g]);
        assert!(monkey_general_items(&[], 0.5, 1.0)
            .expect("valid")
            .is_empty());
        // With f0 = 0 the last level gets no filter at all (Mnemosyne §4.1, "Connection with
        // Monkey": existing-key lookups only).
        let items = monkey_general_items(&runs, 0.0, 1.0).expect("valid");
        let (_, allocation) = solve(&items, 4.0, Variant::Pure);
        assert_eq!(allocation.bits_per_key()[2..], [0.0, 0.0]);
    }

    fn entries_strategy() -> impl Strategy<Value = u64> {
        prop_oneof![
            1 => Just(0u64),
            4 => 1u64..1_000,
            8 => 1u64..1_000_000_000,
        ]
    }

    fn weight_strategy() -> impl Strategy<Value = f64> {
        prop_oneof![
            1 => Just(0.0),
            8 => (-3.0f64..3.0).prop_map(|e| 10f64.powf(e)),
        ]
    }

    fn items_strategy(max_len: usize) -> impl Strategy<Value = Vec<Item>> {
        proptest::collection::vec(
            (entries_strategy(), weight_strategy()).prop_map(|(n, z)| Item::new(n, z)),
            0..=max_len,
        )
    }

    fn variant_strategy() -> impl Strategy<Value = Variant> {
        prop_oneof![Just(Variant::Pure), Just(Variant::MinimumBitsPerKeyOne)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// The whole budget is spent when at least one item keeps a filter (and a non-clamped
        /// kept item exists); never more than the budget in any case.
        #[test]
        fn budget_is_met(
            items in items_strategy(40),
            bits_per_key in 0.05f64..20.0,
            variant in variant_strategy(),
        ) {
            let (problem, allocation) = solve(&items, bits_per_key, variant);
            let budget = problem.memory_bits();
            prop_assert!(allocation.memory_bits() <= budget * (1.0 + 1e-9));
            if allocation.bits_per_key().iter().any(|&b| b > 0.0) {
                prop_assert!(
                    relative_error(allocation.memory_bits(), budget) < 1e-9,
                    "used {} of {}", allocation.memory_bits(), budget
                );
            } else {
                prop_assert_eq!(allocation.kept(), 0);
            }
        }

        /// No `eps > 1`, no `bpk < 0`, nothing non-finite; the variant keeps only `bpk >= 1`.
        #[test]
        fn fprs_are_probabilities(
            items in items_strategy(40),
            bits_per_key in 0.0f64..30.0,
            variant in variant_strategy(),
        ) {
            let (_, allocation) = solve(&items, bits_per_key, variant);
            for (&bits, fpr) in allocation.bits_per_key().iter().zip(allocation.false_positive_rates()) {
                prop_assert!(bits.is_finite() && bits >= 0.0);
                // Not > 0: a tiny hot item can get so many bits that exp() underflows.
                prop_assert!((0.0..=1.0).contains(&fpr));
                if variant == Variant::MinimumBitsPerKeyOne && bits > 0.0 {
                    prop_assert!(bits >= 1.0 - 1e-9, "{}", bits);
                }
            }
            prop_assert!(allocation.predicted_cost().is_finite());
            let positive = allocation.bits_per_key().iter().filter(|&&b| b > 0.0).count();
            prop_assert!(positive <= allocation.kept());
        }

        /// KKT of eq. 3 (pure form): every kept item has `z_i eps_i / n_i = exp(C)` (compared
        /// in log space, i.e. relative 1e-9, see `log_tolerance`), every dropped one
        /// `z_i / n_i <= exp(C)`; items without weight or entries get 0.
        #[test]
        fn pure_form_satisfies_kkt(
            items in items_strategy(40),
            bits_per_key in 0.05f64..20.0,
        ) {
            let (_, allocation) = solve(&items, bits_per_key, Variant::Pure);
            let Some(constant) = allocation.constant() else {
                prop_assert!(allocation.bits_per_key().iter().all(|&b| b == 0.0));
                prop_assert!(items.iter().all(|item| !may_keep_filter(item)));
                return Ok(());
            };
            for (item, &bits) in items.iter().zip(allocation.bits_per_key()) {
                if !may_keep_filter(item) {
                    prop_assert_eq!(bits, 0.0);
                } else if bits > 0.0 {
                    let ratio = log_density(item) - C * bits; // ln(z eps / n)
                    prop_assert!(
                        (ratio - constant).abs() < log_tolerance(constant),
                        "{} vs {}", ratio, constant
                    );
                } else {
                    prop_assert!(log_density(item) <= constant + log_tolerance(constant));
                }
            }
        }

        /// The minimum-bpk-1 variant: kept items share the constant; a dropped item `j` has
        /// `z_j / n_j <= exp(C_j + c)` with `C_j` the constant of the prefix ending at `j`, when
        /// Algorithm 1 tested it (not necessarily with the final `C`, see
        /// `variant_dropped_run_violates_spec_final_constant_condition_on_spec_example`).
        #[test]
        fn variant_satisfies_its_stopping_conditions(
            items in items_strategy(40),
            bits_per_key in 0.05f64..20.0,
        ) {
            let (problem, allocation) =
                solve(&items, bits_per_key, Variant::MinimumBitsPerKeyOne);
            let constant = allocation.constant();
            for (item, &bits) in items.iter().zip(allocation.bits_per_key()) {
                if bits > 0.0 {
                    let constant = constant.expect("an item kept a filter");
                    let ratio = log_density(item) - C * bits;
                    prop_assert!((ratio - constant).abs() < log_tolerance(constant));
                }
            }
            let prefixes = prefix_constants(&items, problem.memory_bits(), C);
            // The kept items are the first `kept` of the sorted order; the rest were removed.
            for (position, &(index, constant_at_test)) in prefixes.iter().enumerate() {
                let kept = allocation.bits_per_key()[index] > 0.0;
                prop_assert_eq!(kept, position < allocation.kept());
                if !kept {
                    prop_assert!(
                        log_density(&items[index])
                            <= constant_at_test + C + log_tolerance(constant_at_test)
                    );
                }
            }
        }

        /// The pure form never costs more than uniform filters with the same memory.
        #[test]
        fn pure_form_is_never_worse_than_uniform(
            items in items_strategy(40),
            bits_per_key in 0.0f64..20.0,
        ) {
            let (problem, allocation) = solve(&items, bits_per_key, Variant::Pure);
            let uniform = problem.uniform();
            prop_assert!(
                allocation.predicted_cost() <= uniform.predicted_cost() * (1.0 + 1e-12) + 1e-300,
                "{} > {}", allocation.predicted_cost(), uniform.predicted_cost()
            );
        }

        /// The pure form equals the exhaustive optimum (every subset that could keep filters,
        /// eq. 4 on it) on small instances.
        #[test]
        fn pure_form_matches_exhaustive_reference(
            items in items_strategy(7),
            bits_per_key in 0.0f64..12.0,
        ) {
            let (problem, allocation) = solve(&items, bits_per_key, Variant::Pure);
            let reference = exhaustive_optimum(&items, problem.memory_bits(), C);
            prop_assert!(
                relative_error(allocation.predicted_cost(), reference) < 1e-6
                    || (allocation.predicted_cost() - reference).abs() < 1e-300,
                "{} vs {}", allocation.predicted_cost(), reference
            );
        }

        /// The pure form equals water-filling (bisection on the Lagrange multiplier) on larger
        /// instances, item by item.
        #[test]
        fn pure_form_matches_water_filling_reference(
            items in items_strategy(60),
            bits_per_key in 0.05f64..12.0,
        ) {
            let (problem, allocation) = solve(&items, bits_per_key, Variant::Pure);
            let reference = water_filling(&items, problem.memory_bits(), C);
            let reference_cost = cost_of(&items, &reference, C);
            prop_assert!(
                relative_error(allocation.predicted_cost(), reference_cost) < 1e-6
                    || (allocation.predicted_cost() - reference_cost).abs() < 1e-300,
                "{} vs {}", allocation.predicted_cost(), reference_cost
            );
            for (&bits, &expected) in allocation.bits_per_key().iter().zip(&reference) {
                prop_assert!((bits - expected).abs() < 1e-6 * (1.0 + expected));
            }
        }

        /// No panic, NaN or infinity on any valid input, however extreme.
        #[test]
        fn never_panics_or_produces_nan(
            items in proptest::collection::vec(
                (
                    any::<u64>(),
                    prop_oneof![Just(0.0), (-300.0f64..300.0).prop_map(|e| 10f64.powf(e))],
                )
                    .prop_map(|(n, z)| Item::new(n, z)),
                0..30,
            ),
            log_memory in -300.0f64..300.0,
            c in MIN_FPR_CONSTANT..=MAX_FPR_CONSTANT,
            variant in variant_strategy(),
        ) {
            let memory_bits = 10f64.powf(log_memory);
            let problem = Problem::with_memory_bits(items, memory_bits)
                .expect("valid")
                .fpr_constant(c)
                .expect("valid")
                .variant(variant);
            let allocation = problem.solve();
            for &bits in allocation.bits_per_key() {
                prop_assert!(bits.is_finite() && bits >= 0.0);
            }
            prop_assert!(allocation.predicted_cost().is_finite());
            prop_assert!(allocation.memory_bits().is_finite());
            if problem.bits_per_key_target() >= f64::MIN_POSITIVE {
                prop_assert!(allocation.memory_bits() <= memory_bits * (1.0 + 1e-9));
            }
            prop_assert!(allocation.constant().is_none_or(f64::is_finite));
        }
    }
}
