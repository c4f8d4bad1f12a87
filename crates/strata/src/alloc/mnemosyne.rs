//! `Mnemosyne` (DESIGN.md §3.3): the filter budget re-divided over the tree's sorted runs at every
//! flush and compaction, with no knowledge of the workload.
//!
//! At each job the allocator takes the shape *after the job* (live runs minus the job's inputs,
//! plus its outputs), gives every run weight `z = 1` (each sorted run is probed once by a
//! zero-result lookup whose key is in its range), solves DESIGN.md §2 with `M = bpk_target * sum(n)`,
//! and hands the job's outputs their run's solved bits per key, then:
//!
//! 1. rounds (minimum-bpk-1 variant only; the pure form keeps the real value): below 0.5 becomes
//!    0, `[0.5, 1)` becomes 1;
//! 2. applies the budget guard: the tree's average bits per key after the job — filter bits of the
//!    live files that are neither the job's inputs nor skipped, plus the bits the job's outputs
//!    get, over all entries after the job (files without filters included) — may not exceed the
//!    cap, `bpk_target * (1 + max_overuse)` ([`Overuse::Fraction`], default 20%, the paper's) or
//!    `bpk_target + b` ([`Overuse::Bits`]). Outputs are guarded in key order, each against the
//!    bits of the outputs before it;
//! 3. rounds again (the guarded value may fall below 0.5: then no filter).
//!
//! Files already written keep their filters (no filter is rebuilt outside a flush or compaction),
//! which is why the guard is needed: after a run of flushes, level-0 files sized for a shallower
//! tree can hold more than their share. Rounding up from `[0.5, 1)` can take the average over the
//! cap by at most half a bit on the file it rounds; `Stats` reports the actual average beside the
//! cap.
//!
//! At query time a run whose most recently solved bits per key is 0 has its filters skipped, and
//! the guard counts those files as 0 bits (their filter blocks are never loaded into the cache).
//! A skipped file whose run later solves above 0 starts probing its filter again only if the
//! cap has room for its bits once the job's outputs are served (Strata's rule: DESIGN.md §3.3 is
//! silent, and letting every such file back in unconditionally would take the average over the
//! cap without any new file being written). Files come back in order of their run's solved bits
//! per key, highest first; the others stay skipped until a later job finds room.
//!
//! The guard is exact because the engine allocates and installs under one lock (see the module
//! doc of [`crate::alloc`]): the tree shown here is the tree the outputs join.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{
    BudgetGuard, FilterAllocator, FilterJob, JobKind, LiveDecisions, ModulesInUse, NewFile, Uniform,
};
use crate::error::{Error, Result};
use crate::solver::{Item, Problem, Variant};
use crate::version::{FileMetadata, Version};

/// How far the budget guard lets the tree's average bits per key exceed the budget (DESIGN.md §3.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overuse {
    /// At most `bpk_target * (1 + f)` (the paper's 20%: `Fraction(0.2)`, the default).
    Fraction(f64),
    /// At most `bpk_target + b` bits per key (the paper's "+1 bit" option: `Bits(1.0)`).
    Bits(f64),
}

impl Default for Overuse {
    fn default() -> Self {
        Overuse::Fraction(0.2)
    }
}

impl Overuse {
    /// The cap on the tree's average bits per key for a budget of `bits_per_key_target`.
    pub(super) fn cap(self, bits_per_key_target: f64) -> f64 {
        match self {
            Overuse::Fraction(fraction) => bits_per_key_target * (1.0 + fraction),
            Overuse::Bits(bits) => bits_per_key_target + bits,
        }
    }

    /// `self` if its amount is finite and `>= 0`.
    pub(super) fn validated(self) -> Result<Self> {
        let (Overuse::Fraction(amount) | Overuse::Bits(amount)) = self;
        if !amount.is_finite() || amount < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "max_overuse must be finite and >= 0, got {amount}"
            )));
        }
        Ok(self)
    }
}

/// `bits_per_key_target` if it is finite and in `0..=64`.
pub(super) fn validated_target(bits_per_key_target: f64) -> Result<f64> {
    if !bits_per_key_target.is_finite()
        || !(0.0..=Uniform::MAX_BITS_PER_KEY).contains(&bits_per_key_target)
    {
        return Err(Error::InvalidArgument(format!(
            "bits_per_key_target must be between 0 and {}, got {bits_per_key_target}",
            Uniform::MAX_BITS_PER_KEY
        )));
    }
    Ok(bits_per_key_target)
}

/// DESIGN.md §3.3's budget guard over a job's outputs, in key order: each output gets its `wanted`
/// bits per key (rounded), lowered so that `kept_bits` plus the bits given so far stay within
/// `allowed_bits`, then rounded again. Rounding `[0.5, 1)` up to 1 may exceed the room: that is
/// the overshoot DESIGN.md §3.3 allows (reported, not hidden: `Stats::effective_bits_per_key`).
/// Returns the bits per key given and adds their bits to `kept_bits`.
pub(super) fn guard_outputs(
    variant: Variant,
    allowed_bits: f64,
    kept_bits: &mut f64,
    outputs: &[NewFile],
    wanted: impl IntoIterator<Item = f64>,
) -> Vec<f64> {
    let mut bits = Vec::with_capacity(outputs.len());
    for (output, wanted) in outputs.iter().zip(wanted) {
        let wanted = round(variant, wanted).min(Uniform::MAX_BITS_PER_KEY);
        let room = if output.entries == 0 {
            wanted
        } else {
            ((allowed_bits - *kept_bits) / output.entries as f64).max(0.0)
        };
        let given = if wanted > room {
            round(variant, room).min(wanted)
        } else {
            wanted
        };
        *kept_bits += given * output.entries as f64;
        bits.push(given);
    }
    bits
}

/// Lets skipped files whose filters are wanted again (`returning`, with a priority) resume
/// probing, highest priority first, while their bits fit under `allowed_bits`; the others join
/// `skipped`.
pub(super) fn admit_returning(
    mut returning: Vec<(f64, &Arc<FileMetadata>)>,
    allowed_bits: f64,
    kept_bits: &mut f64,
    skipped: &mut HashSet<u64>,
) {
    returning.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.number().cmp(&b.1.number())));
    for (_, file) in returning {
        if *kept_bits + file_bits(file) <= allowed_bits {
            *kept_bits += file_bits(file);
        } else {
            skipped.insert(file.number());
        }
    }
}

/// Skips filters in use, the least valuable first (`value`, lowest first; ties: the larger filter
/// first), until the filters in use in `tree` fit under `cap` bits per key on average. For a
/// recovered tree ([`FilterAllocator::restore`]): which filters were skipped lives only in memory,
/// so a reopened database would otherwise count, load and probe every filter it has (a tree that
/// held 2.17 bits per key in use under a cap of 2.4 held 3.49 after a restart).
pub(super) fn skip_until_under_cap(
    tree: &Version,
    cap: f64,
    skipped: &mut HashSet<u64>,
    value: impl Fn(&FileMetadata) -> f64,
) {
    let entries: u64 = tree.files().map(|(_, _, file)| file.entries()).sum();
    let allowed_bits = cap * entries as f64;
    let mut in_use: Vec<(f64, f64, u64)> = tree
        .files()
        .filter(|(_, _, file)| file.bits_per_key() > 0.0 && !skipped.contains(&file.number()))
        .map(|(_, _, file)| (value(file), file_bits(file), file.number()))
        .collect();
    let mut used_bits: f64 = in_use.iter().map(|(_, bits, _)| bits).sum();
    in_use.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(a.2.cmp(&b.2))
    });
    for (_, bits, number) in in_use {
        if used_bits <= allowed_bits {
            break;
        }
        used_bits -= bits;
        skipped.insert(number);
    }
}

/// What the latest allocation decided for lookups: the files whose filters are skipped.
#[derive(Debug, Default)]
struct Solved {
    skipped_files: HashSet<u64>,
}

/// Mnemosyne's per-run allocation (DESIGN.md §3.3).
#[derive(Debug)]
pub struct Mnemosyne {
    bits_per_key_target: f64,
    overuse: Overuse,
    variant: Variant,
    solved: ArcSwap<Solved>,
}

/// A sorted run of the tree after a job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RunAfter {
    pub(super) run_id: u64,
    pub(super) entries: u64,
}

impl Mnemosyne {
    /// Mnemosyne with a budget of `bits_per_key_target` bits per key (finite, in `0..=64`), the
    /// default guard (20% over) and the solver's default variant.
    pub fn new(bits_per_key_target: f64) -> Result<Self> {
        Ok(Mnemosyne {
            bits_per_key_target: validated_target(bits_per_key_target)?,
            overuse: Overuse::default(),
            variant: Variant::default(),
            solved: ArcSwap::from_pointee(Solved::default()),
        })
    }

    /// Sets the budget guard's allowance. Fails unless the amount is finite and `>= 0`.
    pub fn with_max_overuse(mut self, overuse: Overuse) -> Result<Self> {
        self.overuse = overuse.validated()?;
        Ok(self)
    }

    /// Sets the solver variant (DESIGN.md §2): [`Variant::Pure`] (default) or
    /// [`Variant::MinimumBitsPerKeyOne`] (the paper's, with rounding).
    pub fn with_variant(mut self, variant: Variant) -> Self {
        self.variant = variant;
        self
    }

    /// The cap the guard holds the tree's average bits per key to.
    pub fn cap(&self) -> f64 {
        self.overuse.cap(self.bits_per_key_target)
    }
}

/// DESIGN.md §3.3's rounding: with the minimum-bpk-1 variant, below 0.5 becomes 0 and `[0.5, 1)`
/// becomes 1; the pure form keeps the real value.
pub(super) fn round(variant: Variant, bits: f64) -> f64 {
    {
        match variant {
            Variant::Pure => bits,
            Variant::MinimumBitsPerKeyOne if bits < 0.5 => 0.0,
            Variant::MinimumBitsPerKeyOne if bits < 1.0 => 1.0,
            Variant::MinimumBitsPerKeyOne => bits,
        }
    }
}

/// The sorted runs of `tree` after `job`: each run's files that are not inputs, the outputs added
/// to their run (new or existing), runs left empty dropped. Newest level first, as in the tree.
fn runs_after(tree: &Version, job: &FilterJob<'_>) -> Vec<RunAfter> {
    let mut runs = Vec::new();
    let mut output_run_seen = false;
    for level in tree.levels() {
        for run in level.runs() {
            let mut entries: u64 = run
                .files()
                .iter()
                .filter(|file| !job.is_input(file.number()))
                .map(|file| file.entries())
                .sum();
            if run.id() == job.output_run_id {
                entries += job.output_entries();
                output_run_seen = true;
            }
            if entries > 0 {
                runs.push(RunAfter {
                    run_id: run.id(),
                    entries,
                });
            }
        }
    }
    if !output_run_seen && job.output_entries() > 0 {
        runs.push(RunAfter {
            run_id: job.output_run_id,
            entries: job.output_entries(),
        });
    }
    runs
}

/// DESIGN.md §2's per-layout constant for a solve over the tree after `job`: the filters of the
/// files that stay and of the job's outputs, by family ([`crate::alloc::fpr_constant_of`]).
pub(super) fn fpr_constant_after(tree: &Version, job: &FilterJob<'_>) -> f64 {
    let staying = tree
        .files()
        .filter(|(_, _, file)| !job.is_input(file.number()))
        .map(|(_, _, file)| (file.entries(), file.filter_family()));
    let outputs = job
        .outputs
        .iter()
        .map(|output| (output.entries, output.filter_layout.family));
    super::fpr_constant_of(staying.chain(outputs))
}

/// The runs after `job` and Mnemosyne's per-run solve over them (`z = 1` per run): solved bits
/// per key by run id.
pub(super) fn solve_runs(
    tree: &Version,
    job: &FilterJob<'_>,
    bits_per_key_target: f64,
    variant: Variant,
) -> (Vec<RunAfter>, HashMap<u64, f64>) {
    let runs = runs_after(tree, job);
    let items: Vec<Item> = runs.iter().map(|run| Item::new(run.entries, 1.0)).collect();
    let constant = fpr_constant_after(tree, job);
    let solved_bits = match Problem::with_bits_per_key(items, bits_per_key_target)
        .and_then(|problem| problem.fpr_constant(constant))
    {
        Ok(problem) => problem.variant(variant).solve().bits_per_key().to_vec(),
        // Unreachable with a validated target and unit weights; fall back to no filters rather
        // than fail the job.
        Err(_) => vec![0.0; runs.len()],
    };
    let solved = runs
        .iter()
        .zip(&solved_bits)
        .map(|(run, &bits)| (run.run_id, bits))
        .collect();
    (runs, solved)
}

impl FilterAllocator for Mnemosyne {
    fn name(&self) -> String {
        let variant = match self.variant {
            Variant::Pure => "",
            Variant::MinimumBitsPerKeyOne => ",min1",
        };
        format!(
            "mnemosyne({}{variant}, cap {:.2})",
            self.bits_per_key_target,
            self.cap()
        )
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.bits_per_key_target
    }

    fn allocate(&self, tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        let (runs, solved) = solve_runs(tree, job, self.bits_per_key_target, self.variant);
        let output_run_bits = solved.get(&job.output_run_id).copied().unwrap_or(0.0);

        // The guard's numerator before the outputs: live files that stay and are not skipped.
        // Files skipped before whose run now solves above 0 wait in `returning`.
        let previous = self.solved.load();
        let entries_after: u64 = runs.iter().map(|run| run.entries).sum();
        let mut kept_bits = 0.0;
        let mut skipped_files = HashSet::new();
        let mut returning: Vec<(f64, &Arc<FileMetadata>)> = Vec::new();
        for level in tree.levels() {
            for run in level.runs() {
                let run_bits = solved.get(&run.id()).copied().unwrap_or(0.0);
                for file in run.files() {
                    if job.is_input(file.number()) || file.bits_per_key() <= 0.0 {
                        continue;
                    }
                    if run_bits <= 0.0 {
                        skipped_files.insert(file.number());
                    } else if previous.skipped_files.contains(&file.number()) {
                        returning.push((run_bits, file));
                    } else {
                        kept_bits += file_bits(file);
                    }
                }
            }
        }
        let allowed_bits = self.cap() * entries_after as f64;
        let wanted = std::iter::repeat_n(output_run_bits, job.outputs.len());
        let bits = guard_outputs(
            self.variant,
            allowed_bits,
            &mut kept_bits,
            job.outputs,
            wanted,
        );
        admit_returning(returning, allowed_bits, &mut kept_bits, &mut skipped_files);
        self.solved.store(Arc::new(Solved { skipped_files }));
        bits
    }

    fn filter_modules_in_use(&self, _run_id: u64, file: &FileMetadata) -> ModulesInUse {
        if file.bits_per_key() > 0.0 && self.solved.load().skipped_files.contains(&file.number()) {
            ModulesInUse::NONE
        } else {
            ModulesInUse::ALL
        }
    }

    fn budget_guard(&self) -> Option<&dyn BudgetGuard> {
        Some(self)
    }

    fn live_decisions(&self) -> Option<&dyn LiveDecisions> {
        Some(self)
    }
}

impl BudgetGuard for Mnemosyne {
    fn bits_per_key_cap(&self) -> f64 {
        self.cap()
    }
}

impl LiveDecisions for Mnemosyne {
    /// Re-solves over the recovered runs (DESIGN.md §3.3: skip the filters of runs whose latest solved
    /// bits per key is 0), then holds the cap by skipping the filters worth the fewest avoided
    /// empty probes per bit: an empty lookup probes one file of every run, so a file's share of
    /// its run's `z = 1` is its share of the run's entries.
    fn restore(&self, tree: &Version) {
        let job = FilterJob {
            kind: JobKind::Flush,
            inputs: &[],
            output_level: 0,
            output_run_id: u64::MAX,
            outputs: &[],
        };
        let (runs, solved) = solve_runs(tree, &job, self.bits_per_key_target, self.variant);
        let run_entries: HashMap<u64, u64> =
            runs.iter().map(|run| (run.run_id, run.entries)).collect();
        let mut skipped_files = HashSet::new();
        let mut run_of = HashMap::new();
        for level in tree.levels() {
            for run in level.runs() {
                let run_bits = solved.get(&run.id()).copied().unwrap_or(0.0);
                for file in run.files() {
                    run_of.insert(file.number(), run.id());
                    if run_bits <= 0.0 && file.bits_per_key() > 0.0 {
                        skipped_files.insert(file.number());
                    }
                }
            }
        }
        skip_until_under_cap(tree, self.cap(), &mut skipped_files, |file| {
            let run = run_of
                .get(&file.number())
                .and_then(|run_id| run_entries.get(run_id))
                .copied()
                .unwrap_or(0);
            let z = file.entries() as f64 / run.max(1) as f64;
            avoided_reads(z, file.bits_per_key(), file.filter_family()) / file_bits(file).max(1.0)
        });
        self.solved.store(Arc::new(Solved { skipped_files }));
    }
}

/// Empty probes a filter of `bits_per_key` avoids for a file probed `z` times by lookups that do
/// not find their key there (DESIGN.md §1's false-positive model).
pub(super) fn avoided_reads(z: f64, bits_per_key: f64, family: crate::FilterFamily) -> f64 {
    z * (1.0 - family.false_positive_rate(bits_per_key))
}

/// The filter bits of `file`.
pub(super) fn file_bits(file: &FileMetadata) -> f64 {
    file.bits_per_key() * file.entries() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::test_support::{flush, outputs};
    use crate::alloc::AsDyn;
    use crate::alloc::{JobInput, JobKind};
    use crate::version::tests::new_file;
    use crate::version::VersionEdit;

    /// A tree from `(level, run_id, number, smallest, largest, entries)`, every filter at
    /// `bits` bits per key.
    fn tree_with_bits(files: &[(usize, u64, u64, &str, &str, u64)], bits: f64) -> Version {
        let edit = VersionEdit {
            new_files: files
                .iter()
                .map(|&(level, run, number, lo, hi, entries)| {
                    let mut file = new_file(level, run, number, lo, hi);
                    let metadata = file.file_mut();
                    metadata.entries = entries;
                    metadata.file_bytes = entries * 100;
                    metadata.bits_per_key = bits;
                    file
                })
                .collect(),
            ..Default::default()
        };
        Version::default().apply(&edit, None).expect("valid tree")
    }

    fn tree(files: &[(usize, u64, u64, &str, &str, u64)]) -> Version {
        tree_with_bits(files, 2.0)
    }

    /// The average bits per key of the filters lookups probe.
    fn in_use(allocator: &dyn FilterAllocator, tree: &Version) -> f64 {
        let (mut bits, mut entries) = (0.0, 0);
        for (_, run, file) in tree.files() {
            entries += file.entries();
            if !allocator.skip_filter(run, file) {
                bits += file_bits(file);
            }
        }
        bits / entries as f64
    }

    #[test]
    fn a_restart_skips_the_least_valuable_filters_until_the_cap_holds() {
        // A recovered tree whose filters (4 bits per key everywhere) are over the cap of 2.4:
        // the skipped set was lost with the process.
        let tree = tree_with_bits(
            &[
                (1, 1, 1, "a", "z", 1_000),
                (2, 2, 2, "a", "m", 4_500),
                (2, 2, 3, "n", "z", 4_500),
            ],
            4.0,
        );
        let allocator = Mnemosyne::new(2.0).expect("valid");
        assert!((in_use(&allocator, &tree) - 4.0).abs() < 1e-9);
        allocator.as_dyn().restore(&tree);
        let after = in_use(&allocator, &tree);
        assert!(after <= allocator.cap() + 1e-9, "{after}");
        // Every empty lookup probes the level-1 file, but only one of the two level-2 files:
        // their filters avoid fewer reads per bit and go first.
        let skipped = |number: u64| {
            tree.files().any(|(_, run, file)| {
                file.number() == number && allocator.as_dyn().skip_filter(run, file)
            })
        };
        assert!(!skipped(1));
        assert!(skipped(2) != skipped(3), "one is enough");
        // 40,000 bits less one level-2 filter (18,000) over 10,000 entries.
        assert!((after - 2.2).abs() < 1e-9, "{after}");
    }

    #[test]
    fn an_empty_tree_gives_the_first_flush_the_whole_budget() {
        let allocator = Mnemosyne::new(2.0).expect("valid");
        let files = outputs(&[1000]);
        let bits = allocator.allocate(&Version::default(), &flush(&files, 1));
        assert_eq!(bits.len(), 1);
        assert!((bits[0] - 2.0).abs() < 1e-9, "{bits:?}");
    }

    #[test]
    fn smaller_runs_get_more_bits_and_the_solve_spends_the_budget() {
        // Tree: a level-1 run of 4,000 and a level-2 run of 16,000 entries (files 1-3), all at
        // 2 bits/key. Flushing a 1,000-entry run: the new run is the smallest, so it gets the most.
        let shape = tree(&[
            (1, 5, 1, "a", "z", 4000),
            (2, 6, 2, "a", "m", 8000),
            (2, 6, 3, "n", "z", 8000),
        ]);
        let allocator = Mnemosyne::new(2.0).expect("valid");
        let files = outputs(&[1000]);
        let bits = allocator.allocate(&shape, &flush(&files, 9));
        // Monkey's rule with z = 1: eps proportional to n. The solve over (1000, 4000, 16000):
        let expected = Problem::with_bits_per_key(
            vec![
                Item::new(1000, 1.0),
                Item::new(4000, 1.0),
                Item::new(16000, 1.0),
            ],
            2.0,
        )
        .expect("problem")
        .solve();
        assert!((bits[0] - expected.bits_per_key()[0]).abs() < 1e-9);
        assert!(bits[0] > 2.0);
    }

    #[test]
    fn ribbon_filters_are_solved_with_ribbons_constant() {
        // The shape above with every filter, the new one's too, in Ribbon: DESIGN.md §2's per-layout
        // constant is Ribbon's (`ln 2 / 1.058`), and the solve is the one with that constant.
        let mut shape = tree(&[
            (1, 5, 1, "a", "z", 4000),
            (2, 6, 2, "a", "m", 8000),
            (2, 6, 3, "n", "z", 8000),
        ]);
        let edit = VersionEdit {
            new_files: shape
                .files()
                .map(|(level, run, file)| {
                    let key = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).expect("utf8");
                    let (lo, hi) = (key(file.smallest_user_key()), key(file.largest_user_key()));
                    let mut added = new_file(level, run, file.number(), &lo, &hi);
                    let metadata = added.file_mut();
                    metadata.entries = file.entries();
                    metadata.file_bytes = file.file_bytes();
                    metadata.bits_per_key = 2.0;
                    metadata.filter_layout.family = crate::FilterFamily::Ribbon;
                    added
                })
                .collect(),
            ..Default::default()
        };
        shape = Version::default().apply(&edit, None).expect("valid tree");
        let allocator = Mnemosyne::new(2.0).expect("valid");
        let mut files = outputs(&[1000]);
        files[0].filter_layout.family = crate::FilterFamily::Ribbon;
        let bits = allocator.allocate(&shape, &flush(&files, 9));
        let problem = |family: crate::FilterFamily| {
            Problem::with_bits_per_key(
                vec![
                    Item::new(1000, 1.0),
                    Item::new(4000, 1.0),
                    Item::new(16000, 1.0),
                ],
                2.0,
            )
            .and_then(|problem| problem.fpr_constant(family.fpr_constant()))
            .expect("problem")
            .solve()
            .bits_per_key()[0]
        };
        let ribbon = problem(crate::FilterFamily::Ribbon);
        let bloom = problem(crate::FilterFamily::Bloom);
        assert!((bits[0] - ribbon).abs() < 1e-9, "{bits:?} vs {ribbon}");
        assert!((ribbon - bloom).abs() > 1e-3, "{ribbon} vs {bloom}");
    }

    #[test]
    fn the_guard_holds_the_average_to_the_cap() {
        // A tree whose files already hold 3 bits/key on average (written when the tree was
        // shallower): the cap is 2.4, so a new run gets only what is left under it.
        let shape = tree_with_bits(&[(1, 5, 1, "a", "z", 10_000)], 3.0);
        let allocator = Mnemosyne::new(2.0).expect("valid");
        let files = outputs(&[10_000]);
        let bits = allocator.allocate(&shape, &flush(&files, 9));
        // (3 * 10,000 + b * 10,000) / 20,000 <= 2.4  =>  b <= 1.8.
        assert!((bits[0] - 1.8).abs() < 1e-9, "{bits:?}");
        let average = (3.0 * 10_000.0 + bits[0] * 10_000.0) / 20_000.0;
        assert!(average <= allocator.cap() + 1e-9);

        // The "+1 bit" option: cap 3.0, so b <= 3.0 and the solver's share (2.0... the equal
        // split) fits.
        let bits_cap = Mnemosyne::new(2.0)
            .expect("valid")
            .with_max_overuse(Overuse::Bits(1.0))
            .expect("valid");
        assert_eq!(bits_cap.cap(), 3.0);
        let given = bits_cap.allocate(&shape, &flush(&files, 9));
        assert!((given[0] - 2.0).abs() < 1e-9, "{given:?}");
    }

    #[test]
    fn outputs_are_guarded_in_order_and_the_variant_rounds() {
        // Everything already at 4 bits/key over 10,000 entries; a compaction of file 1 (level 1)
        // into a new level-2 run with two outputs. Inputs leave the tree, so only file 2 (5,000
        // entries at 4 bits) stays: room = 2.4 * 15,000 - 20,000 = 16,000 bits for 10,000 new
        // entries.
        let shape = tree_with_bits(
            &[(1, 5, 1, "a", "m", 10_000), (2, 6, 2, "n", "z", 5_000)],
            4.0,
        );
        let inputs = [JobInput {
            level: 1,
            run_id: 5,
            file_number: 1,
        }];
        let files = outputs(&[6_000, 4_000]);
        let job = FilterJob {
            kind: JobKind::Compaction,
            inputs: &inputs,
            output_level: 2,
            output_run_id: 6,
            outputs: &files,
        };
        let allocator = Mnemosyne::new(2.0).expect("valid");
        let bits = allocator.allocate(&shape, &job);
        // One run after the job (15,000 entries), solved at 2.0; the first output takes 2.0
        // (12,000 bits), the second gets the 4,000 left: 1.0.
        assert!((bits[0] - 2.0).abs() < 1e-9, "{bits:?}");
        assert!((bits[1] - 1.0).abs() < 1e-9, "{bits:?}");

        // Minimum-1 variant with a room of 0.6 bits/key: rounds to 1 (the allowed overshoot);
        // with 0.4: no filter.
        let one = outputs(&[1000]);
        let min1 = Variant::MinimumBitsPerKeyOne;
        let mut kept = 0.0;
        assert_eq!(
            guard_outputs(min1, 600.0, &mut kept, &one, [2.0]),
            vec![1.0]
        );
        assert_eq!(kept, 1000.0, "the overshoot is counted");
        let mut kept = 0.0;
        assert_eq!(
            guard_outputs(min1, 400.0, &mut kept, &one, [2.0]),
            vec![0.0]
        );
        let mut kept = 0.0;
        assert_eq!(
            guard_outputs(Variant::Pure, 400.0, &mut kept, &one, [2.0]),
            vec![0.4]
        );
        assert_eq!(round(Variant::MinimumBitsPerKeyOne, 0.4), 0.0);
        assert_eq!(round(Variant::MinimumBitsPerKeyOne, 0.6), 1.0);
        assert_eq!(round(Variant::MinimumBitsPerKeyOne, 1.7), 1.7);
        assert_eq!(round(Variant::Pure, 0.3), 0.3);
    }

    #[test]
    fn runs_that_solve_to_zero_are_skipped_and_count_zero_in_the_guard() {
        // A tiny budget (1,000 bits) over a tiny level-0 run and a huge last run: the pure
        // solve gives the last run eps > 1, i.e. 0 bits, so its filters are skipped from now on.
        let shape = tree_with_bits(
            &[(0, 7, 1, "a", "z", 100), (1, 5, 2, "a", "z", 1_000_000)],
            0.001,
        );
        let allocator = Mnemosyne::new(0.001).expect("valid");
        let files = outputs(&[100]);
        let bits = allocator.allocate(&shape, &flush(&files, 9));
        assert!(bits[0] > 0.0);
        let last = &shape.levels()[1].runs()[0].files()[0];
        assert!(allocator.as_dyn().skip_filter(5, last));
        let first = &shape.levels()[0].runs()[0].files()[0];
        assert!(!allocator.as_dyn().skip_filter(7, first));
    }

    #[test]
    fn skipped_files_come_back_only_when_the_cap_has_room() {
        // Minimum-1 variant at 1.5 bits/key: a last run 10x the first solves below 1 bit and is
        // dropped (skipped).
        let allocator = Mnemosyne::new(1.5)
            .expect("valid")
            .with_variant(Variant::MinimumBitsPerKeyOne);
        let shape = tree_with_bits(
            &[(1, 5, 1, "a", "z", 10_000), (2, 6, 2, "a", "z", 100_000)],
            1.5,
        );
        let files = outputs(&[10_000]);
        allocator.allocate(&shape, &flush(&files, 9));
        let last = &shape.levels()[2].runs()[0].files()[0];
        assert!(
            allocator.as_dyn().skip_filter(6, last),
            "the big run is dropped"
        );

        // The tree then becomes a single run (the level-1 and level-0 data compacted away): the
        // big run solves to 1.5 bits again, but its 150,000 bits fit under the cap (1.8 * 100,000)
        // only without a new output taking the room first.
        let single = tree_with_bits(&[(2, 6, 2, "a", "z", 100_000)], 1.5);
        let none: Vec<NewFile> = Vec::new();
        allocator.allocate(&single, &flush(&none, 6));
        let last = &single.levels()[2].runs()[0].files()[0];
        assert!(
            !allocator.as_dyn().skip_filter(6, last),
            "room: back in use"
        );

        // Drop it again, then a job whose outputs take the room: it stays skipped.
        allocator.allocate(&shape, &flush(&files, 9));
        assert!(allocator.as_dyn().skip_filter(6, last));
        let crowded = tree_with_bits(&[(2, 6, 2, "a", "z", 100_000)], 1.5);
        let big_output = outputs(&[20_000]);
        let bits = allocator.allocate(&crowded, &flush(&big_output, 9));
        // After the job: 120,000 entries, cap 216,000 bits; the new run takes its solved share
        // first, and 150,000 more bits do not fit beside it.
        assert!(bits[0] > 1.0, "{bits:?}");
        assert!(bits[0] * 20_000.0 + 150_000.0 > 1.8 * 120_000.0);
        assert!(
            allocator.as_dyn().skip_filter(6, last),
            "no room: still skipped"
        );
    }

    #[test]
    fn invalid_settings_are_rejected() {
        assert!(Mnemosyne::new(-1.0).is_err());
        assert!(Mnemosyne::new(f64::NAN).is_err());
        assert!(Mnemosyne::new(2.0)
            .expect("valid")
            .with_max_overuse(Overuse::Fraction(-0.1))
            .is_err());
        assert!(Mnemosyne::new(2.0)
            .expect("valid")
            .with_max_overuse(Overuse::Bits(f64::INFINITY))
            .is_err());
    }
}
