//! Tiering (DESIGN.md §5.2): up to `T - 1` sorted runs per level; when the `T`-th run arrives, all
//! runs of the level are merged into one new run of the next level (whole runs, no partial
//! compaction). Level 0 merges on `level0_compaction_trigger` runs instead. The last level merges
//! its runs in place.

use super::SizeRatio;
use super::{
    merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy, JobAction,
    OutputRun, RunningCompactions,
};
use super::{CompactionKind, CompactionSettings};
use crate::error::Result;
use crate::version::Version;

/// The tiering merge policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Tiering {
    size_ratio: SizeRatio,
    last_level: usize,
}

impl Tiering {
    /// Tiering with size ratio `T` (runs per level before a merge), `T >= 2`, levels 1..=6.
    pub fn new(size_ratio: f64) -> Result<Self> {
        Ok(Tiering {
            size_ratio: SizeRatio::whole("tiering size_ratio", size_ratio)?,
            last_level: super::DEFAULT_LAST_LEVEL,
        })
    }

    /// The deepest level used (`1..MAX_LEVELS`).
    pub fn with_last_level(mut self, last_level: usize) -> Result<Self> {
        self.last_level = super::check_last_level(last_level)?;
        Ok(self)
    }

    /// The size ratio `T`.
    pub fn size_ratio(&self) -> SizeRatio {
        self.size_ratio
    }
}

impl CompactionPolicy for Tiering {
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let settings = CompactionSettings::of_levels(self.size_ratio.get(), None, self.last_level);
        Some((CompactionKind::Tiering, settings))
    }

    fn name(&self) -> String {
        format!("tiering(T={})", self.size_ratio)
    }

    /// Fewer than `T` runs per level: a level's `T`-th run triggers its merge.
    fn max_runs(&self, _level: usize, _last_level: usize) -> usize {
        self.size_ratio.runs_per_level()
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        for (level, l) in tree.levels().iter().enumerate().take(self.last_level + 1) {
            let trigger = if level == 0 {
                context.level0_compaction_trigger.max(1)
            } else {
                self.size_ratio.runs_per_level() + 1
            };
            if l.runs().len() < trigger || (level == self.last_level && l.runs().len() < 2) {
                continue;
            }
            let output_level = (level + 1).min(self.last_level);
            let job = CompactionJob {
                inputs: l.runs().iter().map(|run| whole_run(level, run)).collect(),
                output_level,
                output_run: OutputRun::New,
                reason: format!(
                    "level {level} has {} runs (trigger {trigger})",
                    l.runs().len()
                ),
                state: None,
                action: JobAction::Merge,
            };
            // A level whose runs a running job holds, or whose next level a running job
            // writes, waits for that job; a deeper level may go on meanwhile.
            if running.conflict(&job).is_none() {
                return Some(merge_or_move(job, tree));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{tree, CONTEXT};

    #[test]
    fn the_t_th_run_merges_the_level_into_a_new_run_below() {
        let policy = Tiering::new(3.0).expect("valid");
        let shape = tree(&[
            (1, 3, 1, "a", "m", 1000),
            (1, 4, 2, "b", "z", 1000),
            (2, 1, 3, "a", "z", 9000),
        ]);
        assert_eq!(
            policy.pick(&shape, &CONTEXT, &RunningCompactions::none()),
            None,
            "two runs < T = 3"
        );
        let shape = tree(&[
            (1, 3, 1, "a", "m", 1000),
            (1, 4, 2, "b", "z", 1000),
            (1, 5, 4, "c", "d", 1000),
            (2, 1, 3, "a", "z", 9000),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
        assert_eq!(job.output_run, OutputRun::New);
        let runs: Vec<u64> = job.inputs.iter().map(|i| i.run_id).collect();
        assert_eq!(runs, vec![5, 4, 3], "whole runs, newest first");
    }

    #[test]
    fn level0_uses_its_own_trigger_and_the_last_level_merges_in_place() {
        let policy = Tiering::new(4.0)
            .expect("valid")
            .with_last_level(2)
            .expect("valid");
        let shape = tree(&[(0, 8, 1, "a", "m", 10), (0, 9, 2, "a", "m", 10)]);
        assert_eq!(
            policy
                .pick(&shape, &CONTEXT, &RunningCompactions::none())
                .map(|j| j.output_level),
            Some(1)
        );
        let shape = tree(&[
            (2, 1, 1, "a", "m", 10),
            (2, 2, 2, "a", "m", 10),
            (2, 3, 3, "a", "m", 10),
            (2, 4, 4, "a", "m", 10),
        ]);
        assert_eq!(
            policy
                .pick(&shape, &CONTEXT, &RunningCompactions::none())
                .map(|j| j.output_level),
            Some(2)
        );
        assert!(Tiering::new(2.5).is_err());
    }
}
