//! Lazy leveling (DESIGN.md §5.3, Dostoevsky): tiering on every level but the last, one run on the
//! last. An upper level holds up to `T - 1` runs; when the `T`-th arrives, all its runs merge into
//! one new run of the next level (whole runs, no partial compaction). A merge into the last level
//! takes the last level's run with it, so the last level stays one run. Level 0 merges on
//! `level0_compaction_trigger` runs, as in the other policies.
//!
//! **How the last level is found.** The last level is the deepest non-empty level (level 1 when
//! the tree is empty), and it grows as the data grows: its capacity is `base * T^(L-1)` bytes
//! (`base = write_buffer_bytes * T` unless set, leveling's sizes), and a merge into a last level
//! that holds more than that writes its output one level deeper, where it becomes the new last
//! level and the old one turns into a tiered level. Growing on a merge costs no extra rewrite:
//! the last level's run is rewritten by that merge anyway (a last level may therefore exceed its
//! capacity by up to one merge until the next one arrives). A fixed last level, as Tiering has,
//! was the alternative; it makes lazy leveling plain tiering until the data reaches that level,
//! which for a small database is never, whereas Dostoevsky's last level is the one the data needs
//! (`L = ceil(log_T(N/B))` levels). The growth stops at [`LazyLeveling::with_last_level`] (6 by
//! default, as for the other policies); there the last level takes every merge.
//!
//! If the last level empties (a deletion-heavy workload), the deepest non-empty tiered level
//! becomes the last one and its runs are merged into one in place. A last level holding several
//! runs (a tree written by another policy) is merged in place the same way.

use super::SizeRatio;
use super::{
    merge_last_level, merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy,
    JobAction, OutputRun, RunningCompactions,
};
use super::{CompactionKind, CompactionSettings};
use crate::error::Result;
use crate::version::Version;

/// The lazy-leveling merge policy (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct LazyLeveling {
    size_ratio: SizeRatio,
    base_level_bytes: Option<u64>,
    last_level: usize,
}

impl LazyLeveling {
    /// Lazy leveling with size ratio `T` (runs per upper level before a merge; whole number,
    /// 2..=1000), last-level growth up to level 6.
    pub fn new(size_ratio: f64) -> Result<Self> {
        Ok(LazyLeveling {
            size_ratio: SizeRatio::whole("lazy leveling size_ratio", size_ratio)?,
            base_level_bytes: None,
            last_level: super::DEFAULT_LAST_LEVEL,
        })
    }

    /// Sets the level-1 capacity `base` in bytes, from which the last level's capacity
    /// `base * T^(L-1)` follows; by default `write_buffer_bytes * T`.
    pub fn with_base_level_bytes(mut self, bytes: u64) -> Self {
        self.base_level_bytes = Some(bytes.max(1));
        self
    }

    /// The deepest level the last level may grow to (`1..MAX_LEVELS`); 6 by default.
    pub fn with_last_level(mut self, last_level: usize) -> Result<Self> {
        self.last_level = super::check_last_level(last_level)?;
        Ok(self)
    }

    /// The size ratio `T`.
    pub fn size_ratio(&self) -> SizeRatio {
        self.size_ratio
    }

    /// The current last level of `tree`: its deepest non-empty level, level 1 at least.
    pub fn current_last_level(&self, tree: &Version) -> usize {
        tree.last_non_empty_level().unwrap_or(0).max(1)
    }

    /// Capacity in bytes of `level` when it is the last level: `base * T^(level-1)`.
    pub fn last_level_capacity(&self, context: &CompactionContext, level: usize) -> f64 {
        let base = self
            .base_level_bytes
            .map(|b| b as f64)
            .unwrap_or(context.write_buffer_bytes as f64 * self.size_ratio.get())
            .max(1.0);
        base * self.size_ratio.get().powi(level as i32 - 1)
    }
}

impl CompactionPolicy for LazyLeveling {
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let settings = CompactionSettings::of_levels(
            self.size_ratio.get(),
            self.base_level_bytes,
            self.last_level,
        );
        Some((CompactionKind::LazyLeveling, settings))
    }

    fn name(&self) -> String {
        format!("lazy-leveling(T={})", self.size_ratio)
    }

    /// Tiering's `T - 1` on every level above the last, one run on the last.
    fn max_runs(&self, level: usize, last_level: usize) -> usize {
        if level >= last_level {
            1
        } else {
            self.size_ratio.runs_per_level()
        }
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let levels = tree.levels();
        let last = self.current_last_level(tree);
        let free = |job: CompactionJob| {
            running
                .conflict(&job)
                .is_none()
                .then(|| merge_or_move(job, tree))
        };
        if let Some(job) = merge_last_level(tree, last).and_then(free) {
            return Some(job);
        }
        for (level, l) in levels.iter().enumerate().take(last) {
            let trigger = if level == 0 {
                context.level0_compaction_trigger.max(1)
            } else {
                self.size_ratio.runs_per_level() + 1
            };
            if l.runs().len() < trigger {
                continue;
            }
            let mut inputs: Vec<_> = l.runs().iter().map(|run| whole_run(level, run)).collect();
            let mut output_level = level + 1;
            let mut reason = format!(
                "level {level} has {} runs (trigger {trigger})",
                l.runs().len()
            );
            if output_level == last {
                // Into the last level: its run joins the merge (leveled last level). An over-full
                // last level moves one level deeper with this merge (module docs).
                inputs.extend(levels[last].runs().iter().map(|run| whole_run(last, run)));
                let capacity = self.last_level_capacity(context, last);
                let bytes = levels[last].bytes() as f64;
                if bytes > capacity && last < self.last_level {
                    output_level = last + 1;
                    reason.push_str(&format!(
                        "; last level {last} holds {bytes:.0} > {capacity:.0} bytes: the merge \
                         starts level {output_level}"
                    ));
                }
            }
            let job = CompactionJob {
                inputs,
                output_level,
                output_run: OutputRun::New,
                reason,
                state: None,
                action: JobAction::Merge,
            };
            // A level whose runs a running job holds, or whose next level a running job writes,
            // waits for that job; a deeper level may go on meanwhile.
            if let Some(job) = free(job) {
                return Some(job);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{runs_of, tree, CONTEXT};
    use crate::compaction::RunInput;

    #[test]
    fn upper_levels_are_tiered() {
        let policy = LazyLeveling::new(3.0).expect("valid");
        // Last level 3. Level 1 has two runs (< T = 3): nothing to do.
        let files = vec![
            (1, 20, 1, "a", "m", 1000),
            (1, 21, 2, "b", "z", 1000),
            (3, 1, 3, "a", "z", 90_000),
        ];
        assert_eq!(
            policy.pick(&tree(&files), &CONTEXT, &RunningCompactions::none()),
            None
        );
        let mut files = files;
        files.push((1, 22, 4, "c", "d", 1000));
        let job = policy
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(1, 22), (1, 21), (1, 20)]);
        assert_eq!(job.output_level, 2, "a new run on the tiered level 2");
        assert_eq!(job.output_run, OutputRun::New);
    }

    #[test]
    fn a_merge_into_the_last_level_takes_its_run() {
        let policy = LazyLeveling::new(3.0).expect("valid");
        // Last level 2 (capacity 3000 * 3 = 9000 with base = 1000 * 3) holds 5000.
        let shape = tree(&[
            (1, 20, 1, "a", "m", 1000),
            (1, 21, 2, "b", "z", 1000),
            (1, 22, 4, "c", "d", 1000),
            (2, 1, 3, "a", "z", 5000),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(1, 22), (1, 21), (1, 20), (2, 1)]);
        assert_eq!(job.output_level, 2);
        // Level 0 on its own trigger (2) merges into the last level 1 with its run.
        let shape = tree(&[
            (0, 30, 1, "a", "m", 100),
            (0, 31, 2, "a", "m", 100),
            (1, 3, 3, "a", "z", 500),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(0, 31), (0, 30), (1, 3)]);
        assert_eq!(job.output_level, 1);
    }

    #[test]
    fn an_over_full_last_level_grows_one_level_deeper_on_the_next_merge() {
        let policy = LazyLeveling::new(3.0)
            .expect("valid")
            .with_last_level(2)
            .expect("valid");
        // Last level 1 (capacity 3000) holds 4000: the level-0 merge starts level 2.
        let files = [
            (0, 30, 1, "a", "m", 100),
            (0, 31, 2, "a", "m", 100),
            (1, 3, 3, "a", "z", 4000),
        ];
        let job = policy
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(0, 31), (0, 30), (1, 3)]);
        assert_eq!(job.output_level, 2);
        // At the growth limit the last level takes the merge whatever its size.
        let files = [
            (1, 20, 1, "a", "m", 1000),
            (1, 21, 2, "b", "z", 1000),
            (1, 22, 4, "c", "d", 1000),
            (2, 1, 3, "a", "z", 1_000_000),
        ];
        let job = policy
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
    }

    #[test]
    fn a_last_level_with_several_runs_is_merged_in_place() {
        let policy = LazyLeveling::new(4.0).expect("valid");
        let shape = tree(&[(2, 5, 1, "a", "m", 100), (2, 6, 2, "a", "m", 100)]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
        assert_eq!(runs_of(&job), vec![(2, 6), (2, 5)]);
    }

    #[test]
    fn conflicting_candidates_give_way_to_the_next() {
        let policy = LazyLeveling::new(2.0).expect("valid");
        // Level 0 (trigger 2) and level 1 (T = 2) both want to merge; last level 3.
        let shape = tree(&[
            (0, 30, 1, "a", "m", 100),
            (0, 31, 2, "a", "m", 100),
            (1, 20, 3, "a", "m", 1000),
            (1, 21, 4, "a", "m", 1000),
            (3, 1, 5, "a", "z", 90_000),
        ]);
        let running = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![RunInput {
                level: 0,
                run_id: 29,
                file_numbers: vec![99],
            }],
            output_level: 1,
            output_run: OutputRun::New,
            reason: String::new(),
            state: None,
            action: JobAction::Merge,
        }]);
        let job = policy.pick(&shape, &CONTEXT, &running).expect("a job");
        assert_eq!(
            job.output_level, 2,
            "level 1 goes on while level 1 is written"
        );
        assert_eq!(runs_of(&job), vec![(1, 21), (1, 20)]);
    }

    #[test]
    fn invalid_options_are_rejected() {
        assert!(LazyLeveling::new(1.0).is_err());
        assert!(LazyLeveling::new(2.5).is_err());
        assert!(LazyLeveling::new(f64::NAN).is_err());
        let policy = LazyLeveling::new(4.0).expect("valid");
        assert!(policy.clone().with_last_level(0).is_err());
        assert!(policy.with_last_level(16).is_err());
    }
}
