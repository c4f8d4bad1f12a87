//! `Mnemosyne+` (DESIGN.md §3.4): the filter budget re-divided over the tree's *files* at every flush
//! and compaction, weighted by Merlin's per-file estimates of the empty lookups that probe them
//! (DESIGN.md §4).
//!
//! At each job: one solver item per file of the tree after the job (live files minus the job's
//! inputs, plus its outputs) with `n_i` entries and weight `z_i` (Merlin's estimate; a new file's
//! is its inherited `q' - x'`); solve DESIGN.md §2 with `M = bpk_target * sum(n)`; give each output its
//! solved bits per key; round (minimum-bpk-1 variant only), guard, round again, as Mnemosyne does.
//!
//! * **Cold start** (from the paper's artifact): before any point lookup has been recorded the
//!   policy is Mnemosyne. After that, a new file whose estimated `q` is 0 gets Mnemosyne's
//!   per-run bits per key capped at `bpk_target` — on every level, including the last (Strata's
//!   rule; the artifact gives a last-level file with `q = 0` no filter at all, which is how its
//!   Mnemosyne+ came to read more data blocks than uniform filters after a write burst without
//!   lookups: the files written during the burst are exactly the ones the next lookups probe).
//! * **Query-time skipping**: a file's filter is skipped while its current optimal bits per key
//!   is 0, i.e. `z_i / n_i < exp(C + 0.5 * c)` with the `C` of the latest solve and the file's
//!   *current* `z_i` (so a file whose lookups start after it was written uses its filter again as
//!   soon as they arrive). Strata's rule: the skipped set is re-derived about every 1,024
//!   lookups (`refresh`) and at every flush and compaction; under the first-come guard a refresh
//!   only adds files to it, and a skipped file whose lookups came back probes its filter again at
//!   the next flush or compaction that has room for its bits under the cap (standby filters also
//!   let a refresh swap it in for filters worth less per bit).
//! * **Standby filters** (Strata's rule, on by default; [`MnemosynePlus::with_standby_filters`]):
//!   the filters in use are chosen by avoided reads per bit under the cap, not first come, first
//!   served, and a file whose optimum is 0 still gets a (skipped) filter a later workload can use.
//! * **Budget guard**: skipped files count 0 bits (DESIGN.md §3.4): their filter blocks are never
//!   loaded, so their memory goes to the files lookups do probe. The cap holds at every moment
//!   because a skipped file only returns to probing through the guard (above), as in Mnemosyne.
//!   The paper's fork re-enabled filters freely and ended 19-74% over its budget.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::mnemosyne::{
    admit_returning, avoided_reads, file_bits, fpr_constant_after, guard_outputs,
    skip_until_under_cap, solve_runs, validated_target, Overuse,
};
use super::{
    BudgetGuard, FilterAllocator, FilterJob, LiveDecisions, ModulesInUse, NewFile, Uniform,
};
use crate::error::Result;
use crate::solver::{Item, Problem, Variant};
use crate::version::{FileMetadata, Version};

/// Mnemosyne+'s per-file, workload-aware allocation (DESIGN.md §3.4).
#[derive(Debug)]
pub struct MnemosynePlus {
    bits_per_key_target: f64,
    overuse: Overuse,
    variant: Variant,
    /// `C` of the latest solve as `f64` bits; NaN before the first workload-aware solve (then
    /// no filter is skipped).
    constant: AtomicU64,
    /// Files whose filters lookups skip (their optimal bits per key is 0); they count 0 bits in
    /// the guard.
    skipped: ArcSwap<HashSet<u64>>,
    /// Standby filters (on by default; see [`MnemosynePlus::with_standby_filters`]).
    standby: bool,
}

impl MnemosynePlus {
    /// Mnemosyne+ with a budget of `bits_per_key_target` bits per key (finite, in `0..=64`), the
    /// default guard (20% over), the solver's default variant and standby filters.
    pub fn new(bits_per_key_target: f64) -> Result<Self> {
        Ok(MnemosynePlus {
            bits_per_key_target: validated_target(bits_per_key_target)?,
            overuse: Overuse::default(),
            variant: Variant::default(),
            constant: AtomicU64::new(f64::NAN.to_bits()),
            skipped: ArcSwap::from_pointee(HashSet::new()),
            standby: true,
        })
    }

    /// Standby filters, Strata's extension (on by default: it holds the cap without refusing a
    /// valuable filter; `false` gives DESIGN.md §3.4's first-come guard): the filters in use
    /// are chosen by value under the cap instead of first come, first served.
    ///
    /// * A new file whose optimal bits per key is 0 gets a filter of Mnemosyne's bits for its
    ///   run (capped at the budget) that starts skipped: it costs disk, not memory (skipped
    ///   filters count 0 in the guard), and is there if the workload turns to it.
    /// * At a job, when the outputs want more bits than the cap leaves, filters in use that
    ///   avoid fewer reads per bit (`z (1 - fpr(b)) / (b n)`) than the outputs' would are
    ///   skipped to make room (if what they avoid is under 9/10 of what the room buys).
    /// * Every refresh lets a skipped filter with a full window replace filters in use worth
    ///   less per bit, never raising the bits in use.
    ///
    /// Why: the guard serves files in the order they are written, so after a change of
    /// workload the files that matter now are squeezed by filters sized for the old one, and
    /// nothing is rebuilt. On the type-II phases run in sequence (f0 = 0, 0.5, 1), uniform
    /// keys, the first-come guard read 1.7-4.4x Mnemosyne's unnecessary blocks at 3-7 bits per
    /// key (more than uniform filters from 4); with standby filters it read less than the
    /// first-come guard in 34 of 36 cells and less than uniform filters in all 36. After a
    /// write burst (`tests/mnemosyne_plus.rs`, loaded machine) 4 of 44 three-run trees read
    /// more than uniform filters (worst 1.028x) against 16 of 97 (worst 1.068x) for the
    /// first-come guard.
    pub fn with_standby_filters(mut self, standby: bool) -> Self {
        self.standby = standby;
        self
    }

    /// Sets the budget guard's allowance. Fails unless the amount is finite and `>= 0`.
    pub fn with_max_overuse(mut self, overuse: Overuse) -> Result<Self> {
        self.overuse = overuse.validated()?;
        Ok(self)
    }

    /// Sets the solver variant (DESIGN.md §2).
    pub fn with_variant(mut self, variant: Variant) -> Self {
        self.variant = variant;
        self
    }

    /// The cap the guard holds the tree's average bits per key to.
    pub fn cap(&self) -> f64 {
        self.overuse.cap(self.bits_per_key_target)
    }

    fn constant(&self) -> f64 {
        f64::from_bits(self.constant.load(Ordering::Relaxed))
    }

    /// Strata's rule, a departure from DESIGN.md §3.4 (docs/decisions/mnemosyne-plus-fills-the-budget.md): if the tree after the
    /// job would hold fewer filter bits than the budget (`held` bits in the files that stay and
    /// probe their filters, plus what the outputs want), the outputs that lookups probe get the
    /// difference, divided among them by the same solve restricted to them.
    ///
    /// Why: the paper's solve prices every file of the tree, but only the job's outputs receive their
    /// share; the files that stay keep the bits they were given when *they* were written. When
    /// those are below today's optimum (the shape, or the estimates, moved since), the tree
    /// spends less than its budget and never gets it back, as no filter is rebuilt. Measured on
    /// "lookups, write burst, lookups" 3-run trees: Mnemosyne+ held 1.75-1.85 bits per key at a
    /// budget of 2 and read up to 1.16x what uniform filters read. With a fixed set of other
    /// files, the solve over the outputs alone with the spare bits is the optimum for the
    /// outputs (for Bloom filters it adds the same bits per key to every output the global solve
    /// gave bits), so each output gets the larger of the two answers; the budget guard then
    /// holds the cap as before.
    fn fill_budget(&self, outputs: &[NewFile], wanted: &mut [f64], held: f64, entries: u64) {
        let warm: Vec<usize> = outputs
            .iter()
            .enumerate()
            .filter(|(_, output)| {
                output.entries > 0 && output.access.is_some_and(|estimate| estimate.q > 0.0)
            })
            .map(|(index, _)| index)
            .collect();
        let cold_bits: f64 = outputs
            .iter()
            .zip(wanted.iter())
            .enumerate()
            .filter(|(index, _)| !warm.contains(index))
            .map(|(_, (output, bits))| bits * output.entries as f64)
            .sum();
        let spare = self.bits_per_key_target * entries as f64 - held - cold_bits;
        let warm_entries: u64 = warm.iter().map(|&index| outputs[index].entries).sum();
        if spare <= 0.0 || warm_entries == 0 {
            return;
        }
        let items = warm
            .iter()
            .map(|&index| {
                let z = outputs[index].access.map_or(0.0, |estimate| estimate.z);
                Item::new(outputs[index].entries, z.max(0.0))
            })
            .collect();
        let bits_per_key = (spare / warm_entries as f64).min(Uniform::MAX_BITS_PER_KEY);
        let fpr_constant = super::fpr_constant_of(
            warm.iter()
                .map(|&index| (outputs[index].entries, outputs[index].filter_layout.family)),
        );
        let Ok(problem) = Problem::with_bits_per_key(items, bits_per_key)
            .and_then(|problem| problem.fpr_constant(fpr_constant))
        else {
            return;
        };
        let filled = problem.variant(self.variant).solve();
        for (&index, &bits) in warm.iter().zip(filled.bits_per_key()) {
            if let Some(slot) = wanted.get_mut(index) {
                *slot = slot.max(bits);
            }
        }
    }
}

/// The files of the tree after a job (those that stay, then the job's outputs) as the solver
/// sees them.
struct FilesAfterJob<'v> {
    /// Every file's entries and access estimate `z`: the staying files, then the outputs.
    items: Vec<Item>,
    /// The files that stay, with their `z`.
    staying: Vec<(&'v Arc<FileMetadata>, f64)>,
    /// Index in `items` of the first output.
    first_output: usize,
    entries_after: u64,
    /// True if any file or output has recorded a lookup.
    any_lookup: bool,
}

impl<'v> FilesAfterJob<'v> {
    fn gather(tree: &'v Version, job: &FilterJob<'_>) -> Self {
        let mut items = Vec::new();
        let mut staying = Vec::new();
        let mut entries_after = 0u64;
        let mut any_lookup = false;
        for (_, _, file) in tree.files() {
            if job.is_input(file.number()) {
                continue;
            }
            let estimate = file.state().access_estimate().unwrap_or_default();
            any_lookup |= estimate.q > 0.0;
            items.push(Item::new(file.entries(), estimate.z.max(0.0)));
            staying.push((file, estimate.z.max(0.0)));
            entries_after += file.entries();
        }
        let first_output = items.len();
        for output in job.outputs {
            let estimate = output.access.unwrap_or_default();
            any_lookup |= estimate.q > 0.0;
            items.push(Item::new(output.entries, estimate.z.max(0.0)));
            entries_after += output.entries;
        }
        FilesAfterJob {
            items,
            staying,
            first_output,
            entries_after,
            any_lookup,
        }
    }
}

impl MnemosynePlus {
    /// The bits per key each output wants before the guard, and the solve's constant `C` (NaN
    /// when there was no solve); `None` if the solve failed. Outputs nobody has probed get
    /// Mnemosyne's bits for the output run (`mnemosyne_bits`, at most the target); with no
    /// lookup recorded at all (a cold start) every output does, as under Mnemosyne. The solve
    /// consumes `after.items`.
    fn wanted_bits(
        &self,
        job: &FilterJob<'_>,
        after: &mut FilesAfterJob<'_>,
        mnemosyne_bits: f64,
        fpr_constant: f64,
    ) -> Option<(Vec<f64>, f64)> {
        if !after.any_lookup {
            // Cold start: no lookup recorded yet, behave as Mnemosyne (and skip nothing).
            return Some((vec![mnemosyne_bits; job.outputs.len()], f64::NAN));
        }
        let items = std::mem::take(&mut after.items);
        let allocation = Problem::with_bits_per_key(items, self.bits_per_key_target)
            .and_then(|problem| problem.fpr_constant(fpr_constant))
            .map(|problem| problem.variant(self.variant).solve())
            .ok()?;
        let wanted = job
            .outputs
            .iter()
            .enumerate()
            .map(|(index, output)| {
                let cold = output.access.is_none_or(|estimate| estimate.q <= 0.0);
                if cold {
                    mnemosyne_bits.min(self.bits_per_key_target)
                } else {
                    allocation.bits_per_key()[after.first_output + index]
                }
            })
            .collect();
        Some((wanted, allocation.constant().unwrap_or(f64::NAN)))
    }
}

/// The budget guard's numerator: files that stay and keep probing their filters. Files whose
/// optimal bits per key is now 0 are skipped and count 0; files skipped before whose optimum is
/// above 0 again wait for room (`returning`).
struct GuardNumerator<'v> {
    skipped: HashSet<u64>,
    /// Files skipped before that may come back, with their lookups per entry.
    returning: Vec<(f64, &'v Arc<FileMetadata>)>,
    /// Bits of the filters kept in use.
    kept_bits: f64,
    /// The files whose filters stay in use, with their `z`.
    kept: Vec<(&'v Arc<FileMetadata>, f64)>,
}

impl<'v> GuardNumerator<'v> {
    fn of(
        staying: Vec<(&'v Arc<FileMetadata>, f64)>,
        constant: Threshold,
        previous: &HashSet<u64>,
    ) -> Self {
        let mut guard = GuardNumerator {
            skipped: HashSet::new(),
            returning: Vec::new(),
            kept_bits: 0.0,
            kept: Vec::new(),
        };
        for (file, z) in staying {
            if file.bits_per_key() <= 0.0 {
                continue;
            }
            if optimal_is_zero(constant, file.entries(), z) {
                guard.skipped.insert(file.number());
            } else if previous.contains(&file.number()) {
                guard
                    .returning
                    .push((z / file.entries().max(1) as f64, file));
            } else {
                guard.kept_bits += file_bits(file);
                guard.kept.push((file, z));
            }
        }
        guard
    }

    /// Makes room by value: if the outputs want more than the cap leaves, skips filters in use
    /// that avoid fewer reads per bit than the outputs' filters would.
    fn make_room_by_value(&mut self, outputs: &[NewFile], wanted: &[f64], allowed_bits: f64) {
        let want: f64 = outputs
            .iter()
            .zip(wanted)
            .map(|(output, bits)| bits * output.entries as f64)
            .sum();
        let gain: f64 = outputs
            .iter()
            .zip(wanted)
            .map(|(output, bits)| {
                let z = output.access.map_or(0.0, |estimate| estimate.z.max(0.0));
                avoided_reads(z, *bits, output.filter_layout.family)
            })
            .sum();
        let deficit = want - (allowed_bits - self.kept_bits);
        if deficit > 0.0 && want > 0.0 {
            let density_out = gain / want;
            let mut in_use: Vec<FilterValue> = self
                .kept
                .iter()
                .map(|(file, z)| FilterValue::of(file, *z))
                .collect();
            in_use.sort_by(|a, b| a.per_bit.total_cmp(&b.per_bit));
            let (end, freed, lost) = cheapest_to_free(&in_use, 0, deficit, 0.9 * density_out);
            if end > 0 && lost < 0.9 * density_out * freed.min(deficit) {
                self.kept_bits -= freed;
                self.skipped
                    .extend(in_use[..end].iter().map(|value| value.file_number));
            }
        }
    }

    /// A probed output the guard gave fewer bits than `standby_bits` and whose optimum is 0 gets
    /// `standby_bits` but is skipped (it counts 0 against the cap).
    fn skip_cold_outputs(
        &mut self,
        outputs: &[NewFile],
        bits: &mut [f64],
        standby_bits: f64,
        constant: Threshold,
    ) {
        for (output, given) in outputs.iter().zip(bits.iter_mut()) {
            let z = output.access.map_or(0.0, |estimate| estimate.z.max(0.0));
            let warm = output.access.is_some_and(|estimate| estimate.q > 0.0);
            if warm && *given < standby_bits && optimal_is_zero(constant, output.entries, z) {
                // Counted by the guard at `given`; skipped, it counts 0.
                self.kept_bits -= *given * output.entries as f64;
                *given = standby_bits;
                self.skipped.insert(output.file_number);
            }
        }
    }
}

impl FilterAllocator for MnemosynePlus {
    fn name(&self) -> String {
        let variant = match self.variant {
            Variant::Pure => "",
            Variant::MinimumBitsPerKeyOne => ",min1",
        };
        let standby = if self.standby {
            ""
        } else {
            ", first-come guard"
        };
        format!(
            "mnemosyne+({}{variant}, cap {:.2}{standby})",
            self.bits_per_key_target,
            self.cap()
        )
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.bits_per_key_target
    }

    fn allocate(&self, tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        let mut after = FilesAfterJob::gather(tree, job);
        let (_, per_run) = solve_runs(tree, job, self.bits_per_key_target, self.variant);
        let mnemosyne_bits = per_run.get(&job.output_run_id).copied().unwrap_or(0.0);
        let fpr_constant = fpr_constant_after(tree, job);
        let Some((mut wanted, constant)) =
            self.wanted_bits(job, &mut after, mnemosyne_bits, fpr_constant)
        else {
            return vec![0.0; job.outputs.len()];
        };
        self.constant.store(constant.to_bits(), Ordering::Relaxed);
        let constant = Threshold {
            constant,
            fpr_constant,
        };
        let (any_lookup, entries_after) = (after.any_lookup, after.entries_after);
        let mut guard = GuardNumerator::of(after.staying, constant, &self.skipped.load());
        if any_lookup {
            let returning_bits = guard
                .returning
                .iter()
                .map(|(_, file)| file_bits(file))
                .sum::<f64>();
            let held = guard.kept_bits + returning_bits;
            self.fill_budget(job.outputs, &mut wanted, held, entries_after);
        }
        let allowed_bits = self.cap() * entries_after as f64;
        if self.standby && any_lookup {
            guard.make_room_by_value(job.outputs, &wanted, allowed_bits);
        }
        let mut bits = guard_outputs(
            self.variant,
            allowed_bits,
            &mut guard.kept_bits,
            job.outputs,
            wanted,
        );
        if self.standby && any_lookup {
            let standby_bits = mnemosyne_bits.min(self.bits_per_key_target);
            guard.skip_cold_outputs(job.outputs, &mut bits, standby_bits, constant);
        }
        // The most probed (per entry) come back first, while there is room.
        admit_returning(
            guard.returning,
            allowed_bits,
            &mut guard.kept_bits,
            &mut guard.skipped,
        );
        self.skipped.store(Arc::new(guard.skipped));
        bits
    }

    fn filter_modules_in_use(&self, _run_id: u64, file: &FileMetadata) -> ModulesInUse {
        if file.bits_per_key() > 0.0 && self.skipped.load().contains(&file.number()) {
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

impl BudgetGuard for MnemosynePlus {
    fn bits_per_key_cap(&self) -> f64 {
        self.cap()
    }
}

impl LiveDecisions for MnemosynePlus {
    fn needs_access_statistics(&self) -> bool {
        true
    }

    /// Re-solves over the live files' current estimates so the skip threshold `C` stays on the
    /// scale of the estimates it is compared with (they grow with `D` and change as windows
    /// fill), and skips the filters of files whose optimal bits per key has dropped to 0. A
    /// refresh only ever adds files to the skipped set: a skipped file probes its filter again
    /// only when a flush or compaction finds room for it under the cap (Strata's rule: DESIGN.md
    /// §3.4 re-evaluates per probe, which cannot hold the cap once skipped files count 0).
    fn refresh(&self, tree: &Version) {
        if self.constant().is_nan() {
            return; // cold start: nothing is skipped until a job solves with lookups recorded
        }
        let estimates = current_estimates(tree);
        let Some(constant) = self.solve_constant(&estimates) else {
            return;
        };
        let newly_cold: Vec<u64> = estimates
            .iter()
            .filter(|(file, z)| {
                file.bits_per_key() > 0.0
                    && window_is_full(file)
                    && optimal_is_zero(constant, file.entries(), *z)
            })
            .map(|(file, _)| file.number())
            .collect();
        let (swapped_in, swapped_out) = if self.standby {
            self.standby_swaps(&estimates, &newly_cold, constant)
        } else {
            (Vec::new(), Vec::new())
        };
        if newly_cold.is_empty() && swapped_in.is_empty() {
            return;
        }
        // Compare-and-swap: a concurrent allocation's set is extended, never overwritten.
        self.skipped.rcu(|current| {
            let mut next = HashSet::clone(current);
            next.extend(newly_cold.iter().copied());
            next.extend(swapped_out.iter().copied());
            for number in &swapped_in {
                next.remove(number);
            }
            next
        });
    }

    /// After a restart the skipped set (in memory only) is empty, and every filter the tree
    /// holds (standby filters included) would count and be probed. Re-derive it from the
    /// restored estimates: skip the filters whose optimum is 0 (as a job would; no lookup
    /// recorded yet means cold start, nothing skipped for that), then, if the filters in use are
    /// still over the cap, skip those worth the fewest avoided reads per bit until they fit.
    fn restore(&self, tree: &Version) {
        let estimates = current_estimates(tree);
        let any_lookup = estimates.iter().any(|(file, _)| {
            file.state()
                .access_estimate()
                .is_some_and(|estimate| estimate.q > 0.0)
        });
        let mut skipped = HashSet::new();
        if any_lookup {
            if let Some(constant) = self.solve_constant(&estimates) {
                skipped.extend(
                    estimates
                        .iter()
                        .filter(|(file, z)| {
                            file.bits_per_key() > 0.0
                                && optimal_is_zero(constant, file.entries(), *z)
                        })
                        .map(|(file, _)| file.number()),
                );
            }
        }
        let z_of: std::collections::HashMap<u64, f64> = estimates
            .iter()
            .map(|(file, z)| (file.number(), *z))
            .collect();
        skip_until_under_cap(tree, self.cap(), &mut skipped, |file| {
            FilterValue::of(file, z_of.get(&file.number()).copied().unwrap_or(0.0)).per_bit
        });
        self.skipped.store(Arc::new(skipped));
    }
}

/// Every live file with Merlin's current `z` estimate (0 for a file without statistics).
fn current_estimates(tree: &Version) -> Vec<(&Arc<FileMetadata>, f64)> {
    tree.files()
        .map(|(_, _, file)| {
            let z = file
                .state()
                .access_estimate()
                .map_or(0.0, |estimate| estimate.z);
            (file, z.max(0.0))
        })
        .collect()
}

impl MnemosynePlus {
    /// Solves DESIGN.md §2 over the files' estimates (priced by their families' constant) and
    /// records its `C` (the skip threshold).
    fn solve_constant(&self, estimates: &[(&Arc<FileMetadata>, f64)]) -> Option<Threshold> {
        let items = estimates
            .iter()
            .map(|(file, z)| Item::new(file.entries(), *z))
            .collect();
        let fpr_constant = super::fpr_constant_of(
            estimates
                .iter()
                .map(|(file, _)| (file.entries(), file.filter_family())),
        );
        let problem = Problem::with_bits_per_key(items, self.bits_per_key_target)
            .and_then(|problem| problem.fpr_constant(fpr_constant))
            .ok()?;
        let constant = problem.variant(self.variant).solve().constant()?;
        self.constant.store(constant.to_bits(), Ordering::Relaxed);
        Some(Threshold {
            constant,
            fpr_constant,
        })
    }

    /// Standby filters' refresh (see [`MnemosynePlus::with_standby_filters`]): skipped filters
    /// with a full window and a non-zero optimum, most valuable first, replace filters in use
    /// of lower value (avoided reads per bit, `z (1 - fpr(b)) / (b n)`), as long as the replaced
    /// filters hold at least the incoming one's bits and avoid less than 9/10 of its reads.
    /// Returns (files to probe again, files to skip).
    fn standby_swaps(
        &self,
        estimates: &[(&Arc<FileMetadata>, f64)],
        newly_cold: &[u64],
        constant: Threshold,
    ) -> (Vec<u64>, Vec<u64>) {
        let skipped = self.skipped.load();
        let mut in_use: Vec<_> = estimates
            .iter()
            .filter(|(file, _)| {
                file.bits_per_key() > 0.0
                    && !skipped.contains(&file.number())
                    && !newly_cold.contains(&file.number())
            })
            .map(|(file, z)| FilterValue::of(file, *z))
            .collect();
        let mut waiting: Vec<_> = estimates
            .iter()
            .filter(|(file, z)| {
                file.bits_per_key() > 0.0
                    && skipped.contains(&file.number())
                    && window_is_full(file)
                    && !optimal_is_zero(constant, file.entries(), *z)
            })
            .map(|(file, z)| FilterValue::of(file, *z))
            .collect();
        in_use.sort_by(|a, b| a.per_bit.total_cmp(&b.per_bit));
        waiting.sort_by(|a, b| b.per_bit.total_cmp(&a.per_bit));
        let (mut swapped_in, mut swapped_out) = (Vec::new(), Vec::new());
        let mut next = 0;
        for candidate in waiting {
            let (end, freed, lost) =
                cheapest_to_free(&in_use, next, candidate.bits, candidate.per_bit);
            if freed < candidate.bits || lost >= 0.9 * candidate.avoided {
                break;
            }
            swapped_in.push(candidate.file_number);
            swapped_out.extend(in_use[next..end].iter().map(|value| value.file_number));
            next = end;
        }
        (swapped_in, swapped_out)
    }
}

/// A file's filter priced by what it saves: standby filters keep the filters worth the most
/// avoided reads per bit under the cap.
#[derive(Debug, Clone, Copy)]
struct FilterValue {
    per_bit: f64,
    avoided: f64,
    bits: f64,
    file_number: u64,
}

impl FilterValue {
    fn of(file: &FileMetadata, z: f64) -> Self {
        let bits = file_bits(file);
        let avoided = avoided_reads(z, file.bits_per_key(), file.filter_family());
        FilterValue {
            per_bit: avoided / bits.max(1.0),
            avoided,
            bits,
            file_number: file.number(),
        }
    }
}

/// From `in_use[start..]` (sorted by value per bit, lowest first), takes filters worth less than
/// `below` per bit until `needed` bits are freed or none is left: returns the end of the taken
/// range, the bits freed and the avoided reads lost.
fn cheapest_to_free(
    in_use: &[FilterValue],
    start: usize,
    needed: f64,
    below: f64,
) -> (usize, f64, f64) {
    let (mut end, mut freed, mut lost) = (start, 0.0, 0.0);
    while freed < needed {
        match in_use.get(end) {
            Some(value) if value.per_bit < below => {
                freed += value.bits;
                lost += value.avoided;
                end += 1;
            }
            _ => break,
        }
    }
    (end, freed, lost)
}

/// True once a file's window holds `w` probes (DESIGN.md §4), so its estimate rests on its own recent
/// probes rather than on one or two of them or on what it inherited. Strata's rule: a refresh
/// skips only such files. Between jobs a skipped filter's bits cannot go anywhere else, so a
/// wrong skip only adds reads: with the window alone weighing in (`r = 1`), files probed a few
/// times since a write burst looked unprobed and skipping them took Mnemosyne+ to 1.12x uniform
/// filters' reads on 3-run trees.
fn window_is_full(file: &FileMetadata) -> bool {
    file.state()
        .access()
        .is_some_and(|handle| handle.file.window_len() >= crate::stats::merlin::WINDOW)
}

/// The skip test of one solve (DESIGN.md §3.4): its `C` and its per-layout constant `c` (DESIGN.md §2;
/// the filters' families, [`crate::alloc::fpr_constant_of`]).
#[derive(Debug, Clone, Copy)]
struct Threshold {
    constant: f64,
    fpr_constant: f64,
}

/// DESIGN.md §3.4: a file's optimal bits per key is 0 when `z / n < exp(C + 0.5 c)` (no `C`, no skip).
fn optimal_is_zero(threshold: Threshold, entries: u64, z: f64) -> bool {
    !threshold.constant.is_nan()
        && entries > 0
        && z / (entries as f64) < (threshold.constant + 0.5 * threshold.fpr_constant).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::AsDyn;
    use crate::alloc::JobKind;
    use crate::stats::merlin::AccessEstimate;

    #[test]
    fn the_skip_threshold_uses_the_solves_constant() {
        // z / n = exp(C + 0.5 ln2sq + 0.05): above the threshold `exp(C + 0.5 c)` with Bloom's
        // constant, below it with Ribbon's larger one. Without a `C`, nothing is skipped.
        let bloom = crate::FilterFamily::Bloom.fpr_constant();
        let ribbon = crate::FilterFamily::Ribbon.fpr_constant();
        let constant = -3.0;
        let density = (constant + 0.5 * bloom + 0.05_f64).exp();
        let z = density * 1000.0;
        let threshold = |fpr_constant| Threshold {
            constant,
            fpr_constant,
        };
        assert!(0.5 * bloom + 0.05 < 0.5 * ribbon);
        assert!(!optimal_is_zero(threshold(bloom), 1000, z));
        assert!(optimal_is_zero(threshold(ribbon), 1000, z));
        assert!(!optimal_is_zero(
            Threshold {
                constant: f64::NAN,
                fpr_constant: bloom
            },
            1000,
            0.0
        ));
    }

    fn flush(outputs: &[NewFile]) -> FilterJob<'_> {
        FilterJob {
            kind: JobKind::Flush,
            inputs: &[],
            output_level: 0,
            output_run_id: 9,
            outputs,
        }
    }

    fn output(entries: u64, q: f64, x: f64) -> NewFile {
        NewFile {
            file_number: 100,
            entries,
            access: Some(AccessEstimate { q, x, z: q - x }),
            filter_layout: crate::FilterLayout::default(),
        }
    }

    #[test]
    fn cold_start_behaves_as_mnemosyne_and_skips_nothing() {
        let allocator = MnemosynePlus::new(2.0).expect("valid");
        let files = [output(1000, 0.0, 0.0)];
        let bits = allocator.allocate(&Version::default(), &flush(&files));
        assert!((bits[0] - 2.0).abs() < 1e-9, "{bits:?}");
        assert!(allocator.constant().is_nan());
        assert!(allocator.as_dyn().needs_access_statistics());
    }

    #[test]
    fn a_probed_new_file_gets_its_solved_share_within_the_cap() {
        let allocator = MnemosynePlus::new(2.0).expect("valid");
        // Alone in the tree, a probed file takes the whole budget.
        let files = [output(1000, 500.0, 100.0)];
        let bits = allocator.allocate(&Version::default(), &flush(&files));
        assert!((bits[0] - 2.0).abs() < 1e-9, "{bits:?}");
        assert!(!allocator.constant().is_nan());
        // A file probed only by lookups that find their key (z = 0) needs no filter.
        let files = [output(1000, 500.0, 500.0)];
        let bits = allocator.allocate(&Version::default(), &flush(&files));
        assert_eq!(bits[0], 0.0);
    }

    /// A tree of one level-1 file of `entries` at `bits` bits per key whose lookups Merlin
    /// estimates at `z` empty probes.
    fn probed_tree(entries: u64, bits: f64, z: f64) -> Version {
        use crate::stats::merlin::{FileAccess, Inherited, Merlin};
        use crate::version::tests::new_file;
        use crate::version::{AccessHandle, VersionEdit};
        let mut file = new_file(1, 1, 7, "a", "z");
        let metadata = file.file_mut();
        metadata.entries = entries;
        metadata.file_bytes = entries * 100;
        metadata.bits_per_key = bits;
        let edit = VersionEdit {
            new_files: vec![file],
            ..Default::default()
        };
        let tree = Version::default().apply(&edit, None).expect("valid tree");
        for (_, _, file) in tree.files() {
            file.state().attach_access(AccessHandle {
                file: Arc::new(FileAccess::from_inherited(Inherited {
                    q_prime: z,
                    x_prime: 0.0,
                    naive_q: z,
                    naive_x: 0.0,
                })),
                merlin: Arc::new(Merlin::default()),
            });
        }
        tree
    }

    #[test]
    fn outputs_get_the_budget_the_files_that_stay_leave_unspent() {
        let allocator = MnemosynePlus::new(2.0).expect("valid");
        // Same empty probes per entry as the staying file: the global solve alone gives 2.0.
        let files = [output(1000, 100.0, 0.0)];
        // The staying file holds 0.5 bits per key (4,500 bits): the budget of 20,000 bits
        // leaves 15,500 for the output, within the cap (24,000).
        let tree = probed_tree(9000, 0.5, 900.0);
        assert!(tree
            .files()
            .all(|(_, _, f)| f.state().access_estimate().is_some()));
        let bits = allocator.allocate(&tree, &flush(&files));
        assert!((bits[0] - 15.5).abs() < 1e-6, "{bits:?}");
        // At the budget already: the solve's share, then the guard (24,000 - 22,500 bits).
        let tree = probed_tree(9000, 2.5, 900.0);
        let bits = allocator.allocate(&tree, &flush(&files));
        assert!((bits[0] - 1.5).abs() < 1e-6, "{bits:?}");
        // A cold output is not filled: it keeps Mnemosyne's bits capped at the budget.
        let cold = [output(1000, 0.0, 0.0)];
        let bits = allocator.allocate(&probed_tree(9000, 0.5, 900.0), &flush(&cold));
        assert!(bits[0] <= 2.0 + 1e-9, "{bits:?}");
    }

    /// Mnemosyne+ with DESIGN.md §3.4's first-come guard instead of standby filters.
    fn first_come() -> MnemosynePlus {
        MnemosynePlus::new(2.0)
            .expect("valid")
            .with_standby_filters(false)
    }

    #[test]
    fn standby_filters_give_a_zero_optimum_output_a_skipped_filter() {
        // The staying file is probed by empty lookups; the output only by lookups that find
        // their key in it (z = 0), so its optimum is 0.
        let tree = probed_tree(9000, 2.0, 900.0);
        let files = [output(1000, 500.0, 500.0)];
        let plain = first_come();
        assert_eq!(plain.allocate(&tree, &flush(&files))[0], 0.0);
        assert!(plain.name().contains("first-come"), "{}", plain.name());
        // Standby filters are the default.
        let standby = MnemosynePlus::new(2.0).expect("valid");
        let bits = standby.allocate(&tree, &flush(&files));
        assert!(bits[0] > 0.0 && bits[0] <= 2.0, "{bits:?}");
        assert!(standby.skipped.load().contains(&100), "it starts skipped");
        assert!(!standby.name().contains("first-come"), "{}", standby.name());
    }

    #[test]
    fn a_refresh_swaps_a_valuable_standby_filter_for_less_valuable_ones_in_use() {
        use crate::stats::merlin::{FileAccess, Inherited, Merlin};
        use crate::version::tests::new_file;
        use crate::version::{AccessHandle, VersionEdit};
        // File 7: 4 bits per key, probed rarely. File 8: 2 bits per key, skipped, probed by
        // every lookup lately (a full window of misses).
        let mut cold = new_file(1, 1, 7, "a", "m");
        (cold.file_mut().entries, cold.file_mut().bits_per_key) = (1000, 4.0);
        let mut hot = new_file(2, 2, 8, "a", "z");
        (hot.file_mut().entries, hot.file_mut().bits_per_key) = (1000, 2.0);
        let edit = VersionEdit {
            new_files: vec![cold, hot],
            ..Default::default()
        };
        let tree = Version::default().apply(&edit, None).expect("valid tree");
        let merlin = Arc::new(Merlin::default());
        let accesses: Vec<Arc<FileAccess>> = (0..2)
            .map(|_| Arc::new(FileAccess::from_inherited(Inherited::default())))
            .collect();
        for (index, (_, _, file)) in tree.files().enumerate() {
            file.state().attach_access(AccessHandle {
                file: Arc::clone(&accesses[index]),
                merlin: Arc::clone(&merlin),
            });
        }
        let number_of = |index: usize| tree.files().nth(index).map(|(_, _, f)| f.number());
        let (cold_index, hot_index) = if number_of(0) == Some(7) {
            (0, 1)
        } else {
            (1, 0)
        };
        for lookup in 0..2000u64 {
            let ticket = merlin.begin_lookup();
            accesses[hot_index].record(ticket.lookup_number, false);
            if lookup % 100 == 0 {
                accesses[cold_index].record(ticket.lookup_number, false);
            }
            merlin.end_lookup(ticket);
        }
        for standby in [false, true] {
            let allocator = MnemosynePlus::new(3.0)
                .expect("valid")
                .with_standby_filters(standby);
            allocator.skipped.store(Arc::new(HashSet::from([8])));
            allocator
                .constant
                .store((-10.0f64).to_bits(), Ordering::Relaxed);
            allocator.as_dyn().refresh(&tree);
            let skipped = allocator.skipped.load();
            if standby {
                assert!(!skipped.contains(&8) && skipped.contains(&7), "{skipped:?}");
            } else {
                assert!(skipped.contains(&8) && !skipped.contains(&7), "{skipped:?}");
            }
        }
    }

    #[test]
    fn standby_makes_room_for_a_valuable_output_by_skipping_a_filter_worth_less_per_bit() {
        // The staying file holds 2.6 bits per key (23,400 of the cap's 24,000 bits) and is
        // probed rarely (z = 90); the output is probed by every lookup (z = 1,000).
        let tree = probed_tree(9000, 2.6, 90.0);
        let files = [output(1000, 1000.0, 0.0)];
        let plain = first_come();
        let squeezed = plain.allocate(&tree, &flush(&files))[0];
        assert!(
            (squeezed - 0.6).abs() < 1e-6,
            "the guard leaves 600 bits: {squeezed}"
        );
        let standby = MnemosynePlus::new(2.0).expect("valid");
        let bits = standby.allocate(&tree, &flush(&files))[0];
        assert!(bits > 2.0, "room was made: {bits}");
        assert!(
            standby.skipped.load().contains(&7),
            "by skipping the staying file's filter"
        );
        // The bits in use stay under the cap: the output's alone.
        assert!(bits * 1000.0 <= 2.4 * 10_000.0 + 1e-6);
    }

    #[test]
    fn a_restart_rederives_the_skipped_filters_within_the_cap() {
        use crate::stats::merlin::{FileAccess, Inherited, Merlin};
        use crate::version::tests::new_file;
        use crate::version::{AccessHandle, VersionEdit};
        // Recovered: file 1 probed by every empty lookup, file 2 by a few, file 3 only by
        // lookups that find their keys (z = 0, a standby filter); 4 bits per key each, 4.0 in
        // all over a cap of 2.4 with nothing skipped.
        let specs = [
            (1, 1, "a", "z", 2_000.0),
            (2, 2, "a", "m", 200.0),
            (3, 2, "n", "z", 0.0),
        ];
        let edit = VersionEdit {
            new_files: specs
                .iter()
                .map(|&(number, level, lo, hi, _)| {
                    let mut file = new_file(level, level as u64, number, lo, hi);
                    let metadata = file.file_mut();
                    (metadata.entries, metadata.file_bytes, metadata.bits_per_key) =
                        (2_000, 200_000, 4.0);
                    file
                })
                .collect(),
            ..Default::default()
        };
        let tree = Version::default().apply(&edit, None).expect("valid tree");
        let merlin = Arc::new(Merlin::default());
        for (_, _, file) in tree.files() {
            let z = specs
                .iter()
                .find(|spec| spec.0 == file.number())
                .map_or(0.0, |spec| spec.4);
            file.state().attach_access(AccessHandle {
                file: Arc::new(FileAccess::from_inherited(Inherited {
                    q_prime: z + 100.0,
                    x_prime: 100.0,
                    naive_q: z + 100.0,
                    naive_x: 100.0,
                })),
                merlin: Arc::clone(&merlin),
            });
        }
        let allocator = MnemosynePlus::new(2.0).expect("valid");
        allocator.as_dyn().restore(&tree);
        let skipped = |number: u64| {
            tree.files().any(|(_, run, file)| {
                file.number() == number && allocator.as_dyn().skip_filter(run, file)
            })
        };
        assert!(skipped(3), "its optimum is 0");
        assert!(!skipped(1), "the most valuable filter stays in use");
        assert!(skipped(2), "16,000 bits in use is over the cap's 14,400");
        let in_use: f64 = tree
            .files()
            .filter(|(_, _, file)| !skipped(file.number()))
            .map(|(_, _, file)| file_bits(file))
            .sum();
        assert!(in_use <= allocator.cap() * 6_000.0 + 1e-6, "{in_use}");
        assert!(
            !allocator.constant().is_nan(),
            "the skip threshold is solved again"
        );
    }

    #[test]
    fn invalid_settings_are_rejected() {
        assert!(MnemosynePlus::new(f64::NAN).is_err());
        assert!(MnemosynePlus::new(2.0)
            .expect("valid")
            .with_max_overuse(Overuse::Fraction(f64::NAN))
            .is_err());
        assert_eq!(MnemosynePlus::new(2.0).expect("valid").cap(), 2.4);
    }
}
