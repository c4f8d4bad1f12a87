//! Strata's model of Moose (DESIGN.md §5.6, §7.8; docs/decisions/moose-capacities.md): the tree the
//! policy keeps, as sorted runs, from its per-level run counts `K_i` and ratios `T_i`. Moose takes
//! no size ratio, so its tree is a function of the data, the write buffer and level 0's pour, not
//! of a `T` the tuner chooses.
//!
//! - **Capacities** as `compaction::Moose::capacities` sets them: from the last level up,
//!   `C_i = max(C_(i+1) / T_i, K_i` write buffers`)`. The idealised tree holds every level full
//!   (Monkey's convention, DESIGN.md §7.1): `N = C_1 + ... + C_(L-1) + C_L`, solved for the last
//!   level's `C_L`. A tree too small to fill its floors keeps half its entries on the last level
//!   and spreads the rest over the levels above in proportion to their floors.
//! - **Runs**: `K_i` on level `i` (the most the policy lets it hold, as Monkey's tiering counts
//!   `T - 1` runs a level), one on the last level.
//! - **Merges per entry** on its way down: `max(r_i - 1, K_i) / (K_i + 1)` on a level whose
//!   capacity is `r_i` times the data arriving into it (level 1 against level 0's pour of
//!   `level0_compaction_trigger` buffers, every other level against the full level above), `K = 1`
//!   on the last level. This is the per-level form of Dostoevsky's fluid LSM-tree read exactly so
//!   that it gives leveling's `(T-1)/2` at `K = 1` and tiering's `(T-1)/T` at `K = T - 1`
//!   (DESIGN.md §7.3, §7.4): the figures of every policy the tuner compares follow one convention.
//!   The floor of `K_i / (K_i + 1)` is the write that brings an entry into the level, which no
//!   level an entry passes through spares it: a level held at its floor of `K_i` buffers is at
//!   most what arrives into it (`r_i <= 1`) and empties into the next at every arrival, yet each
//!   entry is written into it once, as a tiered level of `K_i` runs writes each entry once
//!   (tiering's `(T-1)/T` at `T = K_i + 1`). Without the floor, a tree between the floors' 9
//!   buffers and about 12 was priced at no merge at all, so a write-only mix cost nothing and its
//!   predicted throughput was infinite.

use super::check;
use super::per_run::{ModelLevel, RunTree};
use crate::compaction::Moose;
use crate::error::Result;

/// Moose's idealised tree and what an update costs on it.
#[derive(Debug, Clone, PartialEq)]
pub struct MooseTree {
    /// Levels 1 to the last, level 1 first (level 0 is not included: the tuner adds its waiting
    /// runs as it does for every policy).
    pub runs: RunTree,
    /// Capacities `C_1..C_(L-1)` in entries, level 1 first (`Moose::capacities` in entries).
    pub capacities: Vec<f64>,
    /// Times a merge rewrites an entry on its way to the last level (`sum_i w_i`).
    pub merges_per_update: f64,
}

/// Capacities `C_1..C_(L-1)` (entries) of `moose` when its last level holds `last` entries.
pub fn capacities(moose: &Moose, last: f64, buffer_entries: f64) -> Vec<f64> {
    let (runs, ratios) = (moose.runs_per_level(), moose.ratios());
    let mut capacity = last;
    let mut capacities = vec![0.0; runs.len()];
    for index in (0..runs.len()).rev() {
        capacity = (capacity / ratios[index]).max(buffer_entries * runs[index] as f64);
        capacities[index] = capacity;
    }
    capacities
}

/// Times a merge writes an entry on a level of `runs` runs whose capacity is `ratio` times what
/// arrives into it: `max(ratio - 1, runs) / (runs + 1)` (module documentation: at least the write
/// that brings the entry there).
fn level_merges(ratio: f64, runs: f64) -> f64 {
    (ratio - 1.0).max(runs) / (runs + 1.0)
}

/// `moose`'s idealised tree of `entries` entries with a write buffer of `buffer_entries` entries
/// and level 0 pouring `level0_pour_entries` entries into level 1 at a time (see the module docs).
pub fn tree(
    moose: &Moose,
    entries: f64,
    buffer_entries: f64,
    level0_pour_entries: f64,
) -> Result<MooseTree> {
    check("entries", entries, entries > 0.0, "finite and > 0")?;
    check(
        "buffer entries",
        buffer_entries,
        buffer_entries > 0.0,
        "finite and > 0",
    )?;
    check(
        "level-0 pour entries",
        level0_pour_entries,
        level0_pour_entries > 0.0,
        "finite and > 0",
    )?;
    let floors = capacities(moose, 0.0, buffer_entries);
    let floor_total: f64 = floors.iter().sum();
    let (upper, last) = if floor_total >= entries {
        // Too small to fill the floors: half on the last level, the rest by the floors.
        let half = entries / 2.0;
        let upper = floors.iter().map(|f| f / floor_total * half).collect();
        (upper, half)
    } else {
        // `last + sum C_i(last)` grows with `last`: bisect for the last level that makes `N`.
        let total = |last: f64| last + capacities(moose, last, buffer_entries).iter().sum::<f64>();
        let (mut low, mut high) = (0.0, entries);
        for _ in 0..200 {
            let mid = (low + high) / 2.0;
            if total(mid) > entries {
                high = mid;
            } else {
                low = mid;
            }
        }
        (capacities(moose, low, buffer_entries), low)
    };
    let runs = moose.runs_per_level();
    let mut levels = Vec::with_capacity(upper.len() + 1);
    let mut above = level0_pour_entries;
    let mut merges = 0.0;
    for (index, &capacity) in upper.iter().enumerate() {
        let k = runs[index] as f64;
        let ratio = capacity / above;
        merges += level_merges(ratio, k);
        levels.push(ModelLevel {
            entries: capacity,
            runs: k,
            ratio,
        });
        above = capacity;
    }
    let ratio = last / above;
    merges += level_merges(ratio, 1.0);
    levels.push(ModelLevel {
        entries: last,
        runs: 1.0,
        ratio,
    });
    Ok(MooseTree {
        runs: RunTree { levels },
        capacities: upper,
        merges_per_update: merges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{tree as version, CONTEXT};
    use crate::compaction::CompactionPolicy;

    /// The model's capacities are the policy's on a tree whose last level holds the model's last
    /// level, and its run counts are the most the policy allows.
    #[test]
    fn the_model_tree_is_the_policys_shape() {
        let moose = Moose::ecotune_paper();
        // One byte per entry: the policy's bytes are the model's entries.
        let buffer = CONTEXT.write_buffer_bytes as f64;
        let model = tree(&moose, 5_000_000.0, buffer, 4.0 * buffer).expect("tree");
        let last = model.runs.levels.last().expect("a last level").entries;
        let shape = version(&[(4, 1, 1, "a", "z", last.round() as u64)]);
        let policy = moose.capacities(&shape, &CONTEXT);
        assert_eq!(policy.len(), model.capacities.len());
        for (p, m) in policy.iter().zip(&model.capacities) {
            assert!((p - m).abs() <= 1.0, "{policy:?} vs {:?}", model.capacities);
        }
        let total = model.runs.entries();
        assert!((total - 5_000_000.0).abs() < 1.0, "{total}");
        for (index, level) in model.runs.levels.iter().enumerate() {
            assert_eq!(
                level.runs as usize,
                moose.max_runs(index + 1, 4),
                "level {index}"
            );
        }
        // 7, 7 and 6 between the levels, above the floors.
        let ratios: Vec<f64> = model.runs.levels.iter().map(|l| l.ratio).collect();
        for (got, want) in ratios[1..].iter().zip([7.0, 7.0, 6.0]) {
            assert!((got - want).abs() < 1e-9, "{ratios:?}");
        }
        // Merges per entry: level 1 at its ratio to level 0's pour (at least the 3/4 of the
        // write that brings an entry in), then (7-1)/4 twice, then the last level's (6-1)/2.
        assert!(ratios[0] > 1.0 && ratios[0] < 4.0, "{ratios:?}");
        let expected = 0.75 + 1.5 + 1.5 + 2.5;
        assert!((model.merges_per_update - expected).abs() < 1e-9);
    }

    /// A tree between the floors' 9 write buffers and 12: every level above the last at its
    /// floor of 3 buffers, no more than what arrives into it, and the last level smaller than
    /// the level above it. Each entry is still written into every level on its way down (the
    /// replay in DESIGN.md §7.6, "Writes": Moose's levels 1 to 3 each wrote the whole load once),
    /// so the merges per entry are at least a tiered level's 3/4 on each of the three and the
    /// last level's 1/2, never 0.
    #[test]
    fn a_tree_at_its_floors_still_writes_each_entry_into_every_level() {
        let moose = Moose::ecotune_paper();
        let buffer = 16_384.0;
        // 9.5 buffers; level 0 pours 4 buffers at a time (1.5 runs waiting on average).
        let model = tree(&moose, 9.5 * buffer, buffer, 4.0 * buffer).expect("tree");
        assert_eq!(model.capacities, vec![3.0 * buffer; 3]);
        let ratios: Vec<f64> = model.runs.levels.iter().map(|l| l.ratio).collect();
        assert!(ratios.iter().all(|&r| r <= 1.0), "{ratios:?}");
        assert!(
            (model.merges_per_update - (3.0 * 0.75 + 0.5)).abs() < 1e-9,
            "{}",
            model.merges_per_update
        );
        // On either side of the floors' edge, the merges never fall below those writes.
        for buffers in [2.0, 6.0, 9.0, 9.5, 11.0, 12.0, 13.0, 20.0, 100.0, 1000.0] {
            let merges = tree(&moose, buffers * buffer, buffer, 4.0 * buffer)
                .expect("tree")
                .merges_per_update;
            assert!(merges >= 2.75 - 1e-9, "{buffers} buffers: {merges}");
        }
    }

    /// The tuner on a write-only mix over a 200,000-entry tree of 116-byte entries with a
    /// 2 MiB write buffer (11 buffers, between the floors and the first full level: the tree
    /// on which auto-tune saw Moose predicted at an infinite throughput): the updates cost the
    /// tree's merges and the throughput is finite.
    #[test]
    fn a_write_only_mix_on_a_small_tree_has_a_finite_predicted_throughput() {
        use crate::alloc::FilterAllocatorKind;
        use crate::model::tuner::{evaluate_with, CpuCosts, Device, TuningProblem, Workload};
        use crate::model::ModelPolicy;
        let (entries, entry_bytes) = (200_000.0, 116.0);
        let buffer_bits = (2u64 << 20) as f64 * 8.0;
        let problem = TuningProblem {
            entries,
            entry_bytes,
            memory_bits: buffer_bits + 10.0 * entries,
            workload: Workload {
                point_lookups: 0.0,
                zero_result_fraction: 0.0,
                range_lookups: 0.0,
                selectivity: 0.0,
                updates: 1.0,
                long_scans: None,
                key_bytes: None,
            },
            device: Device {
                seconds_per_read: 1e-4,
                write_read_cost_ratio: 1.0,
                merge_read_cost_ratio: 1.0,
                page_bytes: 4096.0,
                cpu: CpuCosts::default(),
            },
            fixed_buffer_bits: Some(buffer_bits),
            max_point_lookup_io: None,
            max_update_io: None,
            level0_runs: 1.5,
            block_cache_bytes: 0.0,
            point_read_miss_share: 1.0,
        };
        let design = evaluate_with(
            &problem,
            ModelPolicy::MOOSE,
            7.0,
            buffer_bits,
            FilterAllocatorKind::Monkey,
        )
        .expect("priced");
        let buffer_entries = buffer_bits / (entry_bytes * 8.0);
        let shape = tree(
            &Moose::ecotune_paper(),
            entries,
            buffer_entries,
            4.0 * buffer_entries,
        )
        .expect("tree");
        let ratios: Vec<f64> = shape.runs.levels.iter().map(|l| l.ratio).collect();
        assert!(ratios.iter().all(|&r| r <= 1.0), "{ratios:?}");
        let b = 4096.0 / entry_bytes;
        let u = design.predicted.update_io;
        assert!((u - shape.merges_per_update * 2.0 / b).abs() < 1e-12, "{u}");
        assert!(u >= 2.75 * 2.0 / b, "{u}");
        let ops = design.predicted.throughput_ops;
        assert!(ops.is_finite() && ops > 0.0, "{ops}");
        assert!((ops - 1.0 / (u * 1e-4)).abs() / ops < 1e-9, "{ops}");
    }

    #[test]
    fn a_small_tree_keeps_its_floors_and_bad_input_is_an_error() {
        let moose = Moose::ecotune_paper();
        // Floors of 3 buffers of 100 entries: 900 entries above the last level.
        let small = tree(&moose, 1_000.0, 100.0, 400.0).expect("tree");
        assert_eq!(small.capacities, vec![300.0, 300.0, 300.0]);
        assert!((small.runs.entries() - 1_000.0).abs() < 1e-6);
        let tiny = tree(&moose, 600.0, 100.0, 400.0).expect("tree");
        assert!((tiny.runs.entries() - 600.0).abs() < 1e-6);
        assert_eq!(tiny.runs.levels.last().expect("last").entries, 300.0);
        assert!(tree(&moose, 0.0, 100.0, 400.0).is_err());
        assert!(tree(&moose, 1e6, f64::NAN, 400.0).is_err());
        assert!(tree(&moose, 1e6, 100.0, -1.0).is_err());
    }
}
