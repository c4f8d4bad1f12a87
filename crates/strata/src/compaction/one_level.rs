//! The example policy of docs/ARCHITECTURE.md, "Adding a merge policy" (tests only): every run
//! flushed to level 0 is merged, with level 1's run, into one run on level 1 once level 0 holds
//! `level0_compaction_trigger` runs. The whole tree is one level; a run found deeper (another
//! policy's tree) is merged up with them.

use super::{
    merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy, JobAction,
    OutputRun, RunningCompactions,
};
use crate::version::Version;

/// The one-level example policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneLevel;

impl CompactionPolicy for OneLevel {
    fn name(&self) -> String {
        "one-level".into()
    }

    /// One run on level 1, none below.
    fn max_runs(&self, level: usize, _last_level: usize) -> usize {
        usize::from(level == 1)
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let levels = tree.levels();
        let flushed = levels[0].runs().len();
        let in_shape = levels.get(1).map_or(0, |l| l.runs().len()) <= 1
            && levels.iter().skip(2).all(|l| l.is_empty());
        if flushed < context.level0_compaction_trigger.max(1) && in_shape {
            return None;
        }
        let job = CompactionJob {
            inputs: levels
                .iter()
                .enumerate()
                .flat_map(|(level, l)| l.runs().iter().map(move |run| whole_run(level, run)))
                .collect(),
            output_level: 1,
            output_run: OutputRun::New,
            reason: format!("level 0 has {flushed} runs; every run merges into level 1"),
            state: None,
            action: JobAction::Merge,
        };
        let job = merge_or_move(job, tree);
        running.conflict(&job).is_none().then_some(job)
    }
}
