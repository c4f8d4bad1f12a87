//! `Monkey(static)` (DESIGN.md §3.2): the baseline from the Monkey paper. Before loading, predict the
//! final tree from the configured number of entries, the write buffer and the size ratio `T`,
//! solve DESIGN.md §2 once over the predicted levels, and give every new file the bits per key of the
//! level it is written to.
//!
//! # The predicted shape (Strata's rule; DESIGN.md §3.2 capacities, compared with DESIGN.md §7)
//!
//! With `N = expected_entries`, `B = write_buffer_entries` and `T = size_ratio`, disk level
//! `i >= 1` has capacity `C_i = floor(B * T^i)` entries (level 1 = `B * T`; DESIGN.md §3.2). The
//! predicted tree has `L` levels, `L` the smallest `L >= 1` with `C_1 + ... + C_L >= N`. Levels
//! `1..L-1` are full (`n_i = C_i`) and level `L` holds the remainder `N - (C_1 + ... + C_(L-1))`
//! (between 1 and `C_L` entries), so the predicted levels hold exactly `N` entries. Without the
//! floor, `sum_{i<=L} C_i >= N` is `T^L >= N (T-1) / (B T) + 1`, i.e. the same `L` as DESIGN.md §7's
//! `L = max(1, ceil(log_T(N/B * (T-1)/T)))` except when `N (T-1) / (B T)` is exactly a power of
//! `T` (then this rule needs one level more). The level sizes differ from §7's idealised
//! `N (T-1)/T / T^(L-i)`: this rule fills the upper levels to capacity (what a tree grown
//! top-down holds), §7 assumes a full tree whose last level is `T` times the one above.
//!
//! One solver item per predicted level: `n_i` entries, weight 1 (plain Monkey: every lookup is
//! zero-result, `f0 = 1`), or DESIGN.md §2's Monkey-general weights when a zero-result fraction
//! `f0 < 1` is set: 1 above the last level and `f0` (leveling) or
//! `g = 1 - (1 - f0) T / (2 (T - 1))` (tiering) on it. Under tiering each level is modelled as
//! one item rather than `T - 1` runs: runs of one level share their bpk, and giving every level
//! the same number of runs scales every weight by the same factor, which does not change the
//! solution. The budget is `M = bpk_target * N` bits and the solver runs in its default variant
//! ([`Variant::Pure`](crate::solver::Variant::Pure)), so
//! `sum_i n_i * bpk_i = bpk_target * N` over the predicted levels.
//!
//! # Which file gets what
//!
//! A file written to level 0 gets `bpk_target` (Monkey applies "to Level 1 and onward"); a file
//! written to level `i` in `1..=L` gets the stored `bpk_i`; a file on a level deeper than `L`
//! gets `bpk_target` (DESIGN.md §3.2). The allocator looks only at the job's output level: whether the
//! tree grows top-down or bottom-up is the compaction policy's business (leveling with
//! `dynamic_level_bytes` off or on), and both share this one list. That is the point of the
//! baseline: when the real tree does not match the prediction, the filter memory is over-used
//! (top-down) or under-used (bottom-up), the failure modes Mnemosyne describes. A file that a
//! compaction moves down without rewriting it (a trivial move) keeps the bits per key of the level
//! it was written to: the allocator is only consulted when a filter is built. Bits per key are not
//! capped here; the filter builder clamps anything above 64.

use super::{FilterAllocator, FilterJob, Uniform};
use crate::error::{Error, Result};
use crate::solver::{monkey_general_items, Problem, RunShape};
use crate::version::Version;

/// Monkey's static per-level allocation (DESIGN.md §3.2), solved once at construction.
#[derive(Debug, Clone, PartialEq)]
pub struct Monkey {
    bits_per_key_target: f64,
    expected_entries: u64,
    write_buffer_entries: u64,
    size_ratio: f64,
    zero_result_fraction: f64,
    tiering: bool,
    /// Predicted entries of levels `1..=L` (index 0 is level 1).
    level_entries: Vec<u64>,
    /// Solved bits per key of levels `1..=L` (index 0 is level 1).
    level_bits_per_key: Vec<f64>,
}

impl Monkey {
    /// Largest size ratio accepted (one level would then hold the whole tree anyway).
    pub const MAX_SIZE_RATIO: f64 = 1e6;

    /// Plain Monkey (leveling, every lookup zero-result) for a tree expected to hold
    /// `expected_entries` entries, written through a buffer of `write_buffer_entries` entries,
    /// with size ratio `size_ratio`. `bits_per_key_target` must be finite and in `0..=64`,
    /// `expected_entries` and `write_buffer_entries` at least 1, `size_ratio` finite and in
    /// `2..=1e6`.
    pub fn new(
        bits_per_key_target: f64,
        expected_entries: u64,
        write_buffer_entries: u64,
        size_ratio: f64,
    ) -> Result<Self> {
        if !bits_per_key_target.is_finite()
            || !(0.0..=Uniform::MAX_BITS_PER_KEY).contains(&bits_per_key_target)
        {
            return Err(Error::InvalidArgument(format!(
                "bits_per_key_target must be between 0 and {}, got {bits_per_key_target}",
                Uniform::MAX_BITS_PER_KEY
            )));
        }
        if expected_entries == 0 {
            return Err(Error::InvalidArgument(
                "expected_entries must be at least 1, got 0".to_string(),
            ));
        }
        if write_buffer_entries == 0 {
            return Err(Error::InvalidArgument(
                "write_buffer_entries must be at least 1, got 0".to_string(),
            ));
        }
        if !size_ratio.is_finite() || !(2.0..=Self::MAX_SIZE_RATIO).contains(&size_ratio) {
            return Err(Error::InvalidArgument(format!(
                "size_ratio must be between 2 and {}, got {size_ratio}",
                Self::MAX_SIZE_RATIO
            )));
        }
        let mut monkey = Monkey {
            bits_per_key_target,
            expected_entries,
            write_buffer_entries,
            size_ratio,
            zero_result_fraction: 1.0,
            tiering: false,
            level_entries: predicted_level_entries(
                expected_entries,
                write_buffer_entries,
                size_ratio,
            ),
            level_bits_per_key: Vec::new(),
        };
        monkey.solve()?;
        Ok(monkey)
    }

    /// Monkey-general (DESIGN.md §2; Monkey §4.4): a fraction `f0` of point lookups are zero-result,
    /// the rest find their key (worst case: on the last level). Default 1 (plain Monkey). Fails
    /// unless `0 <= f0 <= 1`.
    pub fn with_zero_result_fraction(mut self, zero_result_fraction: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&zero_result_fraction) {
            return Err(Error::InvalidArgument(format!(
                "zero_result_fraction must be between 0 and 1, got {zero_result_fraction}"
            )));
        }
        self.zero_result_fraction = zero_result_fraction;
        self.solve()?;
        Ok(self)
    }

    /// Weights the last level for tiering (`true`) or leveling (`false`, the default); matters
    /// only with a zero-result fraction below 1 (DESIGN.md §2, Monkey-general).
    pub fn with_tiering(mut self, tiering: bool) -> Result<Self> {
        self.tiering = tiering;
        self.solve()?;
        Ok(self)
    }

    /// Predicted entries of levels `1..=L`; index 0 is level 1.
    pub fn level_entries(&self) -> &[u64] {
        &self.level_entries
    }

    /// Bits per key of levels `1..=L`; index 0 is level 1.
    pub fn level_bits_per_key(&self) -> &[f64] {
        &self.level_bits_per_key
    }

    /// Bits per key of a file written to `level` (see the module doc).
    pub fn bits_per_key_for_level(&self, level: usize) -> f64 {
        level
            .checked_sub(1)
            .and_then(|index| self.level_bits_per_key.get(index))
            .copied()
            .unwrap_or(self.bits_per_key_target)
    }

    /// Solves DESIGN.md §2 once over the predicted levels with `M = bpk_target * N`.
    fn solve(&mut self) -> Result<()> {
        let runs: Vec<RunShape> = self
            .level_entries
            .iter()
            .enumerate()
            .map(|(index, &entries)| RunShape {
                level: index + 1,
                entries,
            })
            .collect();
        // A full last level holds T - 1 runs tiered, one leveled.
        let last_level_runs = if self.tiering {
            self.size_ratio - 1.0
        } else {
            1.0
        };
        let items = monkey_general_items(&runs, self.zero_result_fraction, last_level_runs)?;
        let memory_bits = self.bits_per_key_target * self.expected_entries as f64;
        let allocation = Problem::with_memory_bits(items, memory_bits)?.solve();
        self.level_bits_per_key = allocation.bits_per_key().to_vec();
        Ok(())
    }
}

/// The predicted entries of levels `1..=L` (module doc): capacities `floor(B * T^i)`, all full
/// but the last, which holds the remainder. `expected_entries >= 1`, `B >= 1`, `T >= 2`, so the
/// loop ends within 64 levels.
fn predicted_level_entries(
    expected_entries: u64,
    write_buffer_entries: u64,
    size_ratio: f64,
) -> Vec<u64> {
    let mut levels = Vec::new();
    let mut remaining = expected_entries;
    let mut capacity = write_buffer_entries as f64;
    while remaining > 0 {
        capacity *= size_ratio;
        // `as` saturates at u64::MAX, and B * T >= 2, so every level holds at least 2 entries.
        let entries = remaining.min(capacity.floor() as u64);
        levels.push(entries);
        remaining -= entries;
    }
    levels
}

impl FilterAllocator for Monkey {
    fn name(&self) -> String {
        let mut name = format!(
            "monkey(bpk={}, N={}, T={}",
            self.bits_per_key_target, self.expected_entries, self.size_ratio
        );
        if self.zero_result_fraction < 1.0 {
            name.push_str(&format!(", f0={}", self.zero_result_fraction));
        }
        if self.tiering {
            name.push_str(", tiering");
        }
        name.push(')');
        name
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.bits_per_key_target
    }

    fn allocate(&self, _tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        vec![self.bits_per_key_for_level(job.output_level); job.outputs.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::JobKind;
    use crate::alloc::NewFile;

    fn memory_bits(monkey: &Monkey) -> f64 {
        monkey
            .level_entries()
            .iter()
            .zip(monkey.level_bits_per_key())
            .map(|(&entries, bits)| entries as f64 * bits)
            .sum()
    }

    fn job(output_level: usize) -> FilterJob<'static> {
        FilterJob {
            kind: if output_level == 0 {
                JobKind::Flush
            } else {
                JobKind::Compaction
            },
            inputs: &[],
            output_level,
            output_run_id: 1,
            outputs: &[],
        }
    }

    #[test]
    fn predicted_shape_fills_upper_levels_and_puts_the_remainder_last() {
        // B = 1000, T = 10: capacities 10k, 100k, 1M, ...
        let shape = |n| {
            Monkey::new(2.0, n, 1000, 10.0)
                .expect("valid")
                .level_entries
        };
        assert_eq!(shape(1), vec![1]);
        assert_eq!(shape(10_000), vec![10_000]);
        assert_eq!(shape(10_001), vec![10_000, 1]);
        assert_eq!(shape(110_000), vec![10_000, 100_000]);
        assert_eq!(shape(1_000_000), vec![10_000, 100_000, 890_000]);
        // Non-integer T: capacities floor(100 * 2.5^i) = 250, 625, 1562.
        let shape = Monkey::new(2.0, 2000, 100, 2.5)
            .expect("valid")
            .level_entries;
        assert_eq!(shape, vec![250, 625, 1125]);
    }

    #[test]
    fn upper_levels_get_more_bits_and_the_budget_is_met_exactly() {
        for (bits, n, buffer, ratio) in [
            (2.0, 1_000_000, 1000, 10.0),
            (5.0, 1_000_000, 100, 4.0),
            (10.0, 123_456_789, 4096, 10.0),
            (1.0, 50_000, 64, 2.0),
        ] {
            let monkey = Monkey::new(bits, n, buffer, ratio).expect("valid");
            let levels = monkey.level_bits_per_key();
            assert_eq!(levels.len(), monkey.level_entries().len());
            assert!(levels.len() >= 3, "{levels:?}");
            for pair in levels.windows(2) {
                assert!(pair[0] > pair[1], "{levels:?}");
            }
            assert!(levels.iter().all(|&b| b >= 0.0));
            let expected = bits * n as f64;
            let relative = (memory_bits(&monkey) - expected).abs() / expected;
            assert!(relative < 1e-9, "{relative} for {levels:?}");
        }
    }

    #[test]
    fn level_zero_and_levels_beyond_the_prediction_get_the_target() {
        let monkey = Monkey::new(2.0, 1_000_000, 1000, 10.0).expect("valid");
        let levels = monkey.level_bits_per_key().to_vec();
        assert_eq!(levels.len(), 3);
        let tree = Version::default();
        let file = NewFile {
            file_number: 7,
            entries: 500,
            access: None,
            filter_layout: crate::FilterLayout::default(),
        };
        let outputs = [file; 2];
        let bits_at = |level: usize| {
            let job = FilterJob {
                outputs: &outputs,
                ..job(level)
            };
            let bits = monkey.allocate(&tree, &job);
            assert_eq!(bits.len(), 2);
            assert_eq!(bits[0], bits[1]);
            bits[0]
        };
        assert_eq!(bits_at(0), 2.0);
        for (index, &bits) in levels.iter().enumerate() {
            assert_eq!(bits_at(index + 1), bits);
        }
        assert_eq!(bits_at(4), 2.0);
        assert_eq!(bits_at(60), 2.0);
        assert_eq!(monkey.bits_per_key_budget(), 2.0);
        assert_eq!(monkey.name(), "monkey(bpk=2, N=1000000, T=10)");
    }

    #[test]
    fn monkey_general_with_all_lookups_empty_is_plain_monkey() {
        let plain = Monkey::new(3.0, 1_000_000, 1000, 10.0).expect("valid");
        let general = plain.clone().with_zero_result_fraction(1.0).expect("valid");
        assert_eq!(general.level_bits_per_key(), plain.level_bits_per_key());
        let tiered = plain.clone().with_tiering(true).expect("valid");
        assert_eq!(tiered.level_bits_per_key(), plain.level_bits_per_key());
    }

    #[test]
    fn monkey_general_gives_the_last_level_fewer_bits_when_some_lookups_find_their_key() {
        let plain = Monkey::new(3.0, 1_000_000, 1000, 10.0).expect("valid");
        let last = plain.level_bits_per_key().len() - 1;
        for tiering in [false, true] {
            let general = plain
                .clone()
                .with_tiering(tiering)
                .and_then(|m| m.with_zero_result_fraction(0.5))
                .expect("valid");
            let (plain_bits, general_bits) =
                (plain.level_bits_per_key(), general.level_bits_per_key());
            assert!(general_bits[last] < plain_bits[last], "{general_bits:?}");
            // The memory saved on the last level goes to the levels above.
            assert!(general_bits[0] > plain_bits[0]);
            let expected = 3.0 * 1e6;
            assert!((memory_bits(&general) - expected).abs() / expected < 1e-9);
            assert!(general.name().contains("f0=0.5"));
        }
        // Leveling weights the last level with f0, tiering with g > f0 at T = 10, so tiering
        // leaves the last level more bits.
        let leveled = plain.clone().with_zero_result_fraction(0.5).expect("valid");
        let tiered = plain
            .with_tiering(true)
            .and_then(|m| m.with_zero_result_fraction(0.5))
            .expect("valid");
        assert!(tiered.level_bits_per_key()[last] > leveled.level_bits_per_key()[last]);
    }

    #[test]
    fn invalid_arguments_are_rejected_with_the_field_named() {
        let rejects = |result: Result<Monkey>, field: &str| match result {
            Err(Error::InvalidArgument(message)) => {
                assert!(message.contains(field), "{message} should name {field}")
            }
            other => panic!("expected InvalidArgument for {field}, got {other:?}"),
        };
        for bits in [-1.0, f64::NAN, f64::INFINITY, 65.0] {
            rejects(Monkey::new(bits, 1000, 10, 10.0), "bits_per_key_target");
        }
        rejects(Monkey::new(2.0, 0, 10, 10.0), "expected_entries");
        rejects(Monkey::new(2.0, 1000, 0, 10.0), "write_buffer_entries");
        for ratio in [1.5, 0.0, -3.0, f64::NAN, f64::INFINITY, 1e7] {
            rejects(Monkey::new(2.0, 1000, 10, ratio), "size_ratio");
        }
        let valid = Monkey::new(2.0, 1000, 10, 10.0).expect("valid");
        for fraction in [-0.1, 1.1, f64::NAN] {
            rejects(
                valid.clone().with_zero_result_fraction(fraction),
                "zero_result_fraction",
            );
        }
        assert!(Monkey::new(0.0, 1000, 10, 10.0).is_ok());
        assert!(Monkey::new(64.0, u64::MAX, 1, 2.0).is_ok());
    }

    #[test]
    fn zero_budget_gives_no_filters() {
        let monkey = Monkey::new(0.0, 1_000_000, 1000, 10.0).expect("valid");
        assert!(monkey.level_bits_per_key().iter().all(|&b| b == 0.0));
        assert_eq!(monkey.bits_per_key_for_level(0), 0.0);
    }
}
