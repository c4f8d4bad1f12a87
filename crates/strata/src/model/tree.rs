//! The cost models on an actual tree (Strata's per-file form of DESIGN.md §7; DESIGN.md §7 validation (c)):
//! the I/Os a point lookup is predicted to cost on a given `Version`, with the bits per key its
//! files' filters really have and the filters lookups really skip, so the model can be held
//! against what the engine counts on the same tree (`strata bench` prints both).
//!
//! The closed forms assume an idealised shape (every level full, `T` between levels, one
//! allocation per level). A real tree is not that: level 0 holds a few runs, the last level is
//! partly full, Mnemosyne+ gives every file its own bits per key, and some filters are skipped.
//! This form drops the shape assumption and keeps the others of Monkey's model:
//!
//! - a lookup visits the runs in the engine's probe order (level 0 newest first, then each
//!   level's runs newest first) and probes the file of a run whose key range holds the key, if
//!   any: a key falls in file `f` with probability `c_f`, the share of the tree's key range `f`
//!   covers, with keys taken as spread evenly over that range (keys are read as numbers from
//!   their first 8 bytes after the prefix every key shares; a run that covers a narrow range,
//!   such as a file moved down alone, is probed only that often);
//! - a file's filter answers "maybe" with the rate its layout gives `b` bits per key for its
//!   entries (`filter::bloom::expected_false_positive_rate`: DESIGN.md §1's `exp(-ln2sq * b)` but for
//!   the rounding of a small filter up to whole 64-byte blocks and the blocks' uneven loads), and
//!   always when it has no filter or the allocator skips it;
//! - every "maybe" costs one data-block read and the block holding an existing key costs one more
//!   (index and filter blocks are taken as cached or pinned; what the block cache serves is not
//!   modelled, so with a cache that holds data blocks the measurement is lower);
//! - an existing key is in run `r` with probability `entries_r / N` (distinct keys; an overwritten
//!   key counts in every run that holds a version, which is what the newer runs' filters see).
//!
//! So `R = sum_r p_r` and `V = 1 + sum_r (n_r / N) * sum_{r' before r} p_r'`, with
//! `p_r = sum_{f in r} c_f * fpr_f` the chance that run `r` costs a lookup a wasted read.

use crate::version::key_space::KeySpace;
use crate::version::{FileMetadata, Version};

/// What one point lookup is predicted to cost on a tree, in data-block reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeLookupCost {
    /// A lookup of a key the tree does not hold (`R`).
    pub zero_result_io: f64,
    /// A lookup of a key the tree holds (`V`).
    pub existing_io: f64,
    /// Runs a lookup probes.
    pub runs: usize,
}

/// The predicted cost of a point lookup on `tree` (module documentation). `bits_in_use(run_id,
/// file)` is the bits per key of the file's filter lookups use
/// (`FilterAllocator::bits_per_key_in_use`: 0 when skipped, a prefix of modules for elastic
/// filters; the modules' combined rate is taken as one filter of their summed bits, DESIGN.md §1).
pub fn lookup_cost(
    tree: &Version,
    bits_in_use: &dyn Fn(u64, &FileMetadata) -> f64,
) -> TreeLookupCost {
    let Some(space) = KeySpace::of_tree(tree) else {
        return TreeLookupCost {
            zero_result_io: 0.0,
            existing_io: 1.0,
            runs: 0,
        };
    };
    // (entries, chance of a wasted read) of every run, in probe order.
    let runs: Vec<(f64, f64)> = tree
        .levels()
        .iter()
        .flat_map(|level| level.runs())
        .filter(|run| run.entries() > 0)
        .map(|run| {
            let wasted = run
                .files()
                .iter()
                .map(|file| {
                    let rate = file
                        .filter_family()
                        .expected_false_positive_rate(file.entries(), bits_in_use(run.id(), file));
                    space.coverage(file.smallest_user_key(), file.largest_user_key()) * rate
                })
                .sum::<f64>();
            (run.entries() as f64, wasted)
        })
        .collect();
    let total: f64 = runs.iter().map(|&(entries, _)| entries).sum();
    let zero_result_io = runs.iter().map(|&(_, wasted)| wasted).sum();
    let mut before = 0.0;
    let mut existing_io = 1.0;
    for &(entries, wasted) in &runs {
        existing_io += entries / total * before;
        before += wasted;
    }
    TreeLookupCost {
        zero_result_io,
        existing_io,
        runs: runs.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::bloom::expected_false_positive_rate;

    fn file(number: u64, lo: &str, hi: &str, entries: u64, bits: f64) -> FileMetadata {
        FileMetadata::new(number, lo.as_bytes(), hi.as_bytes())
            .with_entries(entries)
            .with_file_bytes(entries * 100)
            .with_filter(bits, (entries as f64 * bits / 8.0) as u64)
    }

    /// Every filter in use, whole.
    fn never(_: u64, file: &FileMetadata) -> f64 {
        file.bits_per_key()
    }

    /// The file's filter in use unless `skipped`.
    fn in_use_unless(skipped: bool, file: &FileMetadata) -> f64 {
        if skipped {
            0.0
        } else {
            file.bits_per_key()
        }
    }

    #[test]
    fn a_leveled_tree_with_uniform_filters_costs_the_sum_of_its_rates() {
        // Three runs of 100, 1,000 and 10,000 entries at 10 bits per key.
        let tree = Version::builder()
            .add_file(1, 1, file(1, "a", "z", 100, 10.0))
            .add_file(2, 2, file(2, "a", "z", 1_000, 10.0))
            .add_file(3, 3, file(3, "a", "z", 10_000, 10.0))
            .build()
            .expect("builds");
        let p = |entries| expected_false_positive_rate(entries, 10.0);
        let cost = lookup_cost(&tree, &never);
        assert_eq!(cost.runs, 3);
        assert!((cost.zero_result_io - (p(100) + p(1_000) + p(10_000))).abs() < 1e-12);
        // An existing key is in run 2 with probability 1000/11100 (run 1 probed before it) and
        // in run 3 with 10000/11100 (runs 1 and 2 before it).
        let expected = 1.0 + (1_000.0 * p(100) + 10_000.0 * (p(100) + p(1_000))) / 11_100.0;
        assert!((cost.existing_io - expected).abs() < 1e-12);
    }

    #[test]
    fn files_weigh_by_the_key_range_they_cover_and_skipped_filters_always_answer_maybe() {
        // Level 0's files cover "a".."m" and "n".."z", 12/25 of the range "a".."z" each.
        let tree = Version::builder()
            .add_file(0, 9, file(1, "a", "m", 300, 0.0))
            .add_file(0, 9, file(2, "n", "z", 100, 5.0))
            .add_file(1, 4, file(3, "a", "z", 1_000, 8.0))
            .build()
            .expect("builds");
        let p5 = expected_false_positive_rate(100, 5.0);
        let p8 = expected_false_positive_rate(1_000, 8.0);
        let share = 12.0 / 25.0;
        let cost = lookup_cost(&tree, &never);
        assert!((cost.zero_result_io - (share + share * p5 + p8)).abs() < 1e-12);
        let skip_level_one = |run: u64, file: &FileMetadata| in_use_unless(run == 4, file);
        let skipped = lookup_cost(&tree, &skip_level_one);
        assert!((skipped.zero_result_io - (share + share * p5 + 1.0)).abs() < 1e-12);
        // No lookup of an existing key probes past the last run: its filter does not matter.
        assert!((skipped.existing_io - cost.existing_io).abs() < 1e-12);
        let skip_level_zero = |run: u64, file: &FileMetadata| in_use_unless(run == 9, file);
        let skipped = lookup_cost(&tree, &skip_level_zero);
        let expected = 1.0 + 1_000.0 / 1_400.0 * (2.0 * share);
        assert!((skipped.existing_io - expected).abs() < 1e-12);
    }

    #[test]
    fn a_run_over_a_narrow_range_is_rarely_probed() {
        // Keys "k000".."k999"; the second run covers "k100".."k199", about a tenth of the range.
        let tree = Version::builder()
            .add_file(1, 1, file(1, "k000", "k999", 1_000, 0.0))
            .add_file(2, 2, file(2, "k100", "k199", 100, 0.0))
            .build()
            .expect("builds");
        let cost = lookup_cost(&tree, &never);
        assert!(
            (cost.zero_result_io - 1.1).abs() < 0.01,
            "{}",
            cost.zero_result_io
        );
    }

    #[test]
    fn an_empty_tree_costs_nothing_but_the_missing_key_check() {
        let tree = Version::builder().build().expect("builds");
        let cost = lookup_cost(&tree, &never);
        assert_eq!(cost.zero_result_io, 0.0);
        assert_eq!(cost.existing_io, 1.0);
        assert_eq!(cost.runs, 0);
    }
}
