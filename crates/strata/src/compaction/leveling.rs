//! Leveling (DESIGN.md §5.1): one sorted run per disk level, level `i` holding up to
//! `base * T^(i-1)` bytes. Level 0 (flushed runs, tiered) is merged into the base level when it
//! has `level0_compaction_trigger` runs. An over-full level compacts *one file* — the one whose
//! key range overlaps the fewest bytes of the next level relative to its own size (RocksDB's
//! `kMinOverlappingRatio`) — with the overlapping files below: partial compaction keeps each job
//! small. With `dynamic_level_bytes` the capacities are set bottom-up from the last level's actual
//! size (RocksDB's `level_compaction_dynamic_level_bytes`, the Mnemosyne paper's "bottom-up"
//! construction); level 0 then merges straight into the first level whose capacity is needed.

use super::SizeRatio;
use super::{
    default_full_compaction, merge_or_move, whole_run, CompactionContext, CompactionJob,
    CompactionPolicy, JobAction, OutputRun, RunInput, RunningCompactions,
};
use crate::error::Result;
use crate::version::{Version, MAX_LEVELS};

/// The leveling merge policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Leveling {
    size_ratio: SizeRatio,
    base_level_bytes: Option<u64>,
    dynamic_level_bytes: bool,
    last_level: usize,
}

impl Leveling {
    /// Leveling with size ratio `T` (>= 2), level-1 capacity `write_buffer * T`, static sizing
    /// and levels 1..=6.
    pub fn new(size_ratio: f64) -> Result<Self> {
        Ok(Leveling {
            size_ratio: SizeRatio::new("size_ratio", size_ratio)?,
            base_level_bytes: None,
            dynamic_level_bytes: false,
            last_level: super::DEFAULT_LAST_LEVEL,
        })
    }

    /// Sets the level-1 (base level) capacity in bytes; by default `write_buffer_bytes * T`.
    pub fn with_base_level_bytes(mut self, bytes: u64) -> Self {
        self.base_level_bytes = Some(bytes.max(1));
        self
    }

    /// Sizes levels bottom-up from the last level (see the module docs).
    pub fn with_dynamic_level_bytes(mut self, dynamic: bool) -> Self {
        self.dynamic_level_bytes = dynamic;
        self
    }

    /// The deepest level used (`1..MAX_LEVELS`); 6 by default, as in RocksDB.
    pub fn with_last_level(mut self, last_level: usize) -> Result<Self> {
        self.last_level = super::check_last_level(last_level)?;
        Ok(self)
    }

    /// The size ratio `T`.
    pub fn size_ratio(&self) -> SizeRatio {
        self.size_ratio
    }

    fn base_bytes(&self, context: &CompactionContext) -> f64 {
        self.base_level_bytes
            .map(|b| b as f64)
            .unwrap_or(context.write_buffer_bytes as f64 * self.size_ratio.get())
            .max(1.0)
    }

    /// Capacity of every level (index = level; 0 for level 0 and unused levels) and the level
    /// that level 0 merges into.
    pub fn level_capacities(
        &self,
        tree: &Version,
        context: &CompactionContext,
    ) -> (Vec<f64>, usize) {
        let base = self.base_bytes(context);
        let mut capacity = vec![0.0; MAX_LEVELS];
        if !self.dynamic_level_bytes {
            for (level, slot) in capacity
                .iter_mut()
                .enumerate()
                .take(self.last_level + 1)
                .skip(1)
            {
                *slot = base * self.size_ratio.get().powi(level as i32 - 1);
            }
            return (capacity, 1);
        }
        let last = self.last_level;
        let disk_empty = tree.levels()[1..=last].iter().all(|l| l.is_empty());
        if disk_empty {
            capacity[last] = base;
            return (capacity, last);
        }
        capacity[last] = (tree.levels()[last].bytes() as f64).max(base);
        let mut base_level = last;
        while base_level > 1 && capacity[base_level] > base {
            capacity[base_level - 1] = capacity[base_level] / self.size_ratio.get();
            base_level -= 1;
        }
        // Level 0 must never merge below older data: if a level above the computed base level
        // holds data (say, after a full compaction into level 1), level 0 merges into it, and its
        // zero capacity then drains it down level by level.
        if let Some(first) = (1..base_level).find(|&level| !tree.levels()[level].is_empty()) {
            base_level = first;
        }
        (capacity, base_level)
    }
}

impl Default for Leveling {
    /// Size ratio 10, static level sizes, levels 1..=6 (RocksDB's defaults but for dynamic sizing).
    fn default() -> Self {
        Leveling {
            size_ratio: SizeRatio::DEFAULT,
            base_level_bytes: None,
            dynamic_level_bytes: false,
            last_level: super::DEFAULT_LAST_LEVEL,
        }
    }
}

/// Bytes of the files of `tree`'s level `level` that overlap `[smallest, largest]`.
fn overlapping_bytes(tree: &Version, level: usize, smallest: &[u8], largest: &[u8]) -> u64 {
    tree.levels()[level]
        .runs()
        .iter()
        .flat_map(|run| run.overlapping_files(smallest, largest))
        .map(|f| f.file_bytes())
        .sum()
}

/// Input and output for merging `upper` (already chosen) into `output_level`'s single run.
fn merge_into(
    tree: &Version,
    mut inputs: Vec<RunInput>,
    smallest: &[u8],
    largest: &[u8],
    output_level: usize,
    reason: String,
) -> CompactionJob {
    let output_runs = tree.levels()[output_level].runs();
    let output_run = match output_runs.first() {
        Some(run) => {
            let overlapping = run.overlapping_files(smallest, largest);
            if !overlapping.is_empty() {
                inputs.push(RunInput {
                    level: output_level,
                    run_id: run.id(),
                    file_numbers: overlapping.iter().map(|f| f.number()).collect(),
                });
            }
            OutputRun::Existing(run.id())
        }
        None => OutputRun::New,
    };
    CompactionJob {
        inputs,
        output_level,
        output_run,
        reason,
        state: None,
        action: JobAction::Merge,
    }
}

impl CompactionPolicy for Leveling {
    fn name(&self) -> String {
        format!(
            "leveling(T={}{})",
            self.size_ratio,
            if self.dynamic_level_bytes {
                ", dynamic"
            } else {
                ""
            }
        )
    }

    /// One run per disk level.
    fn max_runs(&self, _level: usize, _last_level: usize) -> usize {
        1
    }

    fn full_compaction(
        &self,
        tree: &Version,
        context: &CompactionContext,
    ) -> Option<CompactionJob> {
        // With bottom-up sizing the data's home is the last level; static sizing keeps it on the
        // deepest non-empty level (the trait's default).
        let mut job = default_full_compaction(tree, context)?;
        if self.dynamic_level_bytes {
            job.output_level = self.last_level;
        }
        Some(merge_or_move(job, tree))
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let (capacity, base_level) = self.level_capacities(tree, context);
        pick_leveled(
            tree,
            context,
            running,
            &LeveledShape {
                capacity: &capacity,
                base_level,
                last_level: self.last_level,
            },
        )
    }
}

/// While a running job merges level 0 into the base level, the runs flushed since it started
/// pile up on level 0 and the next merge into the base level grows with them, until writers are
/// slowed down (`level0_slowdown_writes_trigger`). RocksDB's intra-L0 compaction: once at least
/// `level0_compaction_trigger` runs (and at least 2) newer than every run the running job holds
/// have gathered, merge them into one level-0 run. The output keeps the newest input's run id, so
/// it stays newer than the runs the running job holds and older than every run flushed while it
/// merges (run ids order level 0 by recency).
fn merge_within_level0(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
) -> Option<CompactionJob> {
    let level0_is_merging = running
        .jobs()
        .iter()
        .any(|job| job.inputs.iter().any(|input| input.level == 0));
    if !level0_is_merging || running.writes_level(0) {
        return None;
    }
    // Level 0's runs, newest first: the ones newer than every run a running job holds.
    let free: Vec<&crate::version::Run> = tree.levels()[0]
        .runs()
        .iter()
        .take_while(|run| !running.holds_run(0, run.id()))
        .collect();
    if free.len() < context.level0_compaction_trigger.max(2) {
        return None;
    }
    let newest = free.first()?.id();
    Some(CompactionJob {
        inputs: free.iter().map(|run| whole_run(0, run)).collect(),
        output_level: 0,
        output_run: OutputRun::Existing(newest),
        reason: format!(
            "{} level-0 runs flushed while level 0 merges into the base level",
            free.len()
        ),
        state: None,
        action: JobAction::Merge,
    })
}

/// The sizes a leveled policy gives its levels, from which [`pick_leveled`] decides. Leveling
/// and Garnering (DESIGN.md §5.4, leveling with other capacities) share the picking rules through it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeveledShape<'a> {
    /// Capacity in bytes of every level (index = level; 0 for level 0). A level between
    /// `base_level` and `last_level` with zero capacity is drained down.
    pub(crate) capacity: &'a [f64],
    /// The level that level 0 merges into.
    pub(crate) base_level: usize,
    /// The deepest level: it never moves data further down.
    pub(crate) last_level: usize,
}

/// Leveling's picking rules for the given level sizes, in order: a disk level holding several
/// runs is merged in place; level 0 with `level0_compaction_trigger` runs merges into the base
/// level; then the most over-full level above the last moves its file with the least overlap
/// below (`kMinOverlappingRatio`) into the next level. A candidate that conflicts with a running
/// job gives way to the next one.
pub(crate) fn pick_leveled(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    shape: &LeveledShape<'_>,
) -> Option<CompactionJob> {
    let LeveledShape {
        capacity,
        base_level,
        last_level,
    } = *shape;
    // A disk level with several runs (a tree written by another policy, before a reopen or a
    // `Db::set_compaction_policy`) is first merged into one run in place. Until then nothing
    // else may move data into or out of it: a file taken from one of its runs, or merged into
    // one of them, would pass the level's other runs in recency order (the engine refuses such
    // a job). So while the in-place merge waits for a running job, the level is left alone.
    merge_levels_in_place(tree, running, last_level)
        .or_else(|| merge_level0(tree, context, running, base_level))
        .or_else(|| move_from_over_full_level(tree, running, capacity, last_level))
        .map(|job| merge_or_move(job, tree))
}

/// Whether `job` may run beside the running jobs.
fn free(running: &RunningCompactions, job: CompactionJob) -> Option<CompactionJob> {
    running.conflict(&job).is_none().then_some(job)
}

/// True if disk level `level` holds several runs (see [`pick_leveled`]).
fn several_runs(tree: &Version, level: usize) -> bool {
    tree.levels().get(level).is_some_and(|l| l.runs().len() > 1)
}

/// A disk level (down to `last_level`) with several runs, merged into one run in place.
fn merge_levels_in_place(
    tree: &Version,
    running: &RunningCompactions,
    last_level: usize,
) -> Option<CompactionJob> {
    let levels = tree.levels();
    for (level, l) in levels.iter().enumerate().take(last_level + 1).skip(1) {
        if l.runs().len() > 1 {
            let job = CompactionJob {
                inputs: l.runs().iter().map(|run| whole_run(level, run)).collect(),
                output_level: level,
                output_run: OutputRun::New,
                reason: format!("level {level} has {} runs", l.runs().len()),
                state: None,
                action: JobAction::Merge,
            };
            if let Some(job) = free(running, job) {
                return Some(job);
            }
        }
    }
    None
}

/// Level 0 at its trigger merged into the base level (or, if that conflicts, level 0's runs
/// among themselves).
fn merge_level0(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    base_level: usize,
) -> Option<CompactionJob> {
    let levels = tree.levels();
    let level0_runs = levels[0].runs();
    if level0_runs.len() >= context.level0_compaction_trigger.max(1)
        && !several_runs(tree, base_level)
    {
        let smallest = level0_runs.iter().map(|r| r.smallest_user_key()).min()?;
        let largest = level0_runs.iter().map(|r| r.largest_user_key()).max()?;
        let inputs = level0_runs.iter().map(|run| whole_run(0, run)).collect();
        let job = merge_into(
            tree,
            inputs,
            smallest,
            largest,
            base_level,
            format!("level 0 has {} runs", level0_runs.len()),
        );
        if let Some(job) = free(running, job) {
            return Some(job);
        }
        if let Some(job) =
            merge_within_level0(tree, context, running).and_then(|job| free(running, job))
        {
            return Some(job);
        }
    }
    None
}

/// The most over-full level's file with the least overlap below, moved into the next level.
fn move_from_over_full_level(
    tree: &Version,
    running: &RunningCompactions,
    capacity: &[f64],
    last_level: usize,
) -> Option<CompactionJob> {
    let levels = tree.levels();
    // Over-full levels (score = bytes / capacity > 1), most over-full first, move one file
    // down. Levels above the dynamic base level have no capacity: anything left there moves
    // down first. A level whose every candidate conflicts with a running job gives way to the
    // next one.
    let mut over_full: Vec<(usize, f64)> = (1..last_level)
        .filter_map(|level| {
            let bytes = levels[level].bytes() as f64;
            if bytes == 0.0 {
                return None;
            }
            let level_capacity = capacity.get(level).copied().unwrap_or(0.0);
            let score = if level_capacity > 0.0 {
                bytes / level_capacity
            } else {
                f64::INFINITY
            };
            (score > 1.0).then_some((level, score))
        })
        .collect();
    over_full.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (level, score) in over_full {
        if running.writes_level(level + 1)
            || several_runs(tree, level)
            || several_runs(tree, level + 1)
        {
            continue;
        }
        let Some(run) = levels[level].runs().first() else {
            continue;
        };
        let ratio = |f: &std::sync::Arc<crate::version::FileMetadata>| {
            overlapping_bytes(tree, level + 1, f.smallest_user_key(), f.largest_user_key()) as f64
                / f.file_bytes().max(1) as f64
        };
        let mut candidates: Vec<_> = run
            .files()
            .iter()
            .filter(|f| !running.holds_file(f.number()))
            .map(|f| (ratio(f), f))
            .collect();
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, file) in candidates {
            let inputs = vec![RunInput {
                level,
                run_id: run.id(),
                file_numbers: vec![file.number()],
            }];
            let job = merge_into(
                tree,
                inputs,
                file.smallest_user_key(),
                file.largest_user_key(),
                level + 1,
                format!("level {level} score {score:.2}"),
            );
            if let Some(job) = free(running, job) {
                return Some(job);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{tree, CONTEXT};

    #[test]
    fn level0_merges_into_the_base_level_with_overlapping_files() {
        let policy = Leveling::new(10.0).expect("valid");
        let shape = tree(&[
            (0, 10, 1, "c", "f", 1000),
            (0, 11, 2, "e", "h", 1000),
            (1, 5, 3, "a", "b", 3000),
            (1, 5, 4, "d", "g", 3000),
            (1, 5, 5, "x", "z", 3000),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 1);
        assert_eq!(job.output_run, OutputRun::Existing(5));
        assert_eq!(job.inputs.len(), 3);
        assert_eq!(job.inputs[0].run_id, 11, "newest run first");
        assert_eq!(
            job.inputs[2].file_numbers,
            vec![4],
            "only the overlapping level-1 file"
        );
    }

    #[test]
    fn runs_flushed_while_level0_merges_down_are_merged_into_one_level0_run() {
        let policy = Leveling::new(10.0).expect("valid");
        // Level 0: runs 10-13 (held by the running merge into level 1), then 14-18 flushed since.
        let mut files = Vec::new();
        for (index, run) in (10..=18u64).enumerate() {
            files.push((0, run, 100 + index as u64, "c", "f", 1000));
        }
        files.push((1, 5, 3, "a", "z", 9000));
        let shape = tree(&files);
        let running_down = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(running_down.output_level, 1);
        assert_eq!(
            running_down.inputs.len(),
            10,
            "nine level-0 runs and level 1's file"
        );
        // Pretend the merge down took only runs 10-13 (the ones there when it started).
        let held = CompactionJob {
            inputs: running_down
                .inputs
                .iter()
                .filter(|input| input.level == 1 || input.run_id <= 13)
                .cloned()
                .collect(),
            ..running_down
        };
        let running = RunningCompactions::new(vec![held.clone()]);
        let job = policy.pick(&shape, &CONTEXT, &running).expect("a job");
        assert_eq!(job.output_level, 0);
        assert_eq!(
            job.output_run,
            OutputRun::Existing(18),
            "the newest input's id"
        );
        let runs: Vec<u64> = job.inputs.iter().map(|input| input.run_id).collect();
        assert_eq!(runs, vec![18, 17, 16, 15, 14], "newest first, none held");
        assert!(running.conflict(&job).is_none());
        // Another such merge may not start beside it (both write level 0), and with fewer
        // free runs than the trigger there is none.
        let both = RunningCompactions::new(vec![held.clone(), job]);
        assert!(policy.pick(&shape, &CONTEXT, &both).is_none());
        // Runs 12 and 13 held, only run 14 free: under the trigger (2 in the test context).
        let few = tree(&[files[2], files[3], files[4], files[9]]);
        let held_few = CompactionJob {
            inputs: held
                .inputs
                .iter()
                .filter(|input| input.level == 1 || input.run_id >= 12)
                .cloned()
                .collect(),
            ..held
        };
        let job = policy.pick(&few, &CONTEXT, &RunningCompactions::new(vec![held_few]));
        assert!(
            job.as_ref().is_none_or(|job| job.output_level != 0),
            "{job:?}: too few free runs"
        );
    }

    #[test]
    fn an_over_full_level_moves_the_file_with_the_least_overlap() {
        let policy = Leveling::new(10.0).expect("valid");
        // Level 1 capacity is 10_000 bytes; it holds 12_000.
        let shape = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "d", "f", 4000),
            (1, 5, 3, "g", "i", 4000),
            (2, 6, 7, "a", "c", 9000),
            (2, 6, 8, "g", "i", 500),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
        assert_eq!(
            job.inputs[0].file_numbers,
            vec![2],
            "file 2 overlaps nothing below"
        );
        assert_eq!(job.inputs.len(), 1);
        assert_eq!(job.output_run, OutputRun::Existing(6));
    }

    #[test]
    fn a_movable_pick_is_returned_as_a_move_and_any_other_as_a_merge() {
        let policy = Leveling::new(10.0).expect("valid");
        let none = RunningCompactions::none();
        // File 2 overlaps nothing below: moved (the policy says so, the executor only checks).
        let lone = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "d", "f", 4000),
            (1, 5, 3, "g", "i", 4000),
            (2, 6, 7, "a", "c", 9000),
            (2, 6, 8, "g", "i", 500),
        ]);
        let job = policy.pick(&lone, &CONTEXT, &none).expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![2]);
        assert_eq!(job.action, JobAction::Move);
        // Every level-1 file overlaps level 2: the least-overlapping one is merged with it.
        let overlapping = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "d", "f", 4000),
            (1, 5, 3, "g", "i", 4000),
            (2, 6, 7, "a", "i", 9000),
        ]);
        let job = policy.pick(&overlapping, &CONTEXT, &none).expect("a job");
        assert_eq!(job.inputs.len(), 2);
        assert_eq!(job.action, JobAction::Merge);
        // Two level-0 runs into level 1: a merge, whatever they overlap.
        let level0 = tree(&[(0, 10, 1, "a", "b", 1000), (0, 11, 2, "x", "y", 1000)]);
        let job = policy.pick(&level0, &CONTEXT, &none).expect("a job");
        assert_eq!(job.action, JobAction::Merge);
        // `Db::compact` on a tree of one level-0 file moves it to level 1, as the engine always
        // did; on a tree of two files it merges them.
        let one_file = tree(&[(0, 10, 1, "a", "b", 1000)]);
        let full = policy.full_compaction(&one_file, &CONTEXT).expect("a job");
        assert_eq!((full.output_level, full.action), (1, JobAction::Move));
        let full = policy.full_compaction(&level0, &CONTEXT).expect("a job");
        assert_eq!(full.action, JobAction::Merge);
        // A state-only decision is never a move.
        let state = crate::compaction::encode_level_count(3);
        let job = merge_or_move(CompactionJob::state_only(state, "grow"), &lone);
        assert_eq!(job.action, JobAction::Merge);
    }

    #[test]
    fn a_tree_in_shape_needs_no_job() {
        let policy = Leveling::new(10.0).expect("valid");
        let shape = tree(&[(0, 9, 1, "a", "z", 1000), (1, 5, 2, "a", "z", 9000)]);
        assert_eq!(
            policy.pick(&shape, &CONTEXT, &RunningCompactions::none()),
            None
        );
    }

    #[test]
    fn dynamic_level_bytes_sizes_levels_from_the_bottom() {
        let policy = Leveling::new(10.0)
            .expect("valid")
            .with_dynamic_level_bytes(true);
        let empty = tree(&[(0, 9, 1, "a", "z", 1000)]);
        let (_, base_level) = policy.level_capacities(&empty, &CONTEXT);
        assert_eq!(
            base_level, 6,
            "an empty tree flushes straight into the last level"
        );
        // Last level holds 1_000_000 bytes: capacities 1e6, 1e5, 1e4 (base = 10_000).
        let shape = tree(&[(6, 3, 2, "a", "z", 1_000_000)]);
        let (capacity, base_level) = policy.level_capacities(&shape, &CONTEXT);
        assert_eq!(base_level, 4);
        assert!((capacity[5] - 100_000.0).abs() < 1e-6);
        assert!((capacity[4] - 10_000.0).abs() < 1e-6);
    }

    #[test]
    fn invalid_size_ratio_is_rejected() {
        assert!(Leveling::new(1.5).is_err());
        assert!(Leveling::new(f64::NAN).is_err());
        assert!(Leveling::new(4.0)
            .expect("valid")
            .with_last_level(0)
            .is_err());
    }
}
