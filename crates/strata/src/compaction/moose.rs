//! Moose-style fluid merging (registered as `moose` in `policy.rs`): per-level run counts `K_i` and per-level size
//! ratios `T_i` (the EcoTune paper's Moose baseline: 5 levels, 3 runs per non-last level, ratio 7,
//! 6 into the last level; Dostoevsky's fluid LSM with per-level parameters).
//!
//! Level capacities are set from the last level up, like dynamic level bytes: `C_L` is the last
//! level's size, `C_i = C_(i+1) / T_i`, but never below `K_i` write buffers, so that a young tree
//! still has room for `K_i` flushed runs per level. A level holds up to `K_i` runs; data arriving
//! from above joins the level's newest run while that run is below `C_i / K_i` (rewritten in
//! place), else starts a new run. A level over its capacity or its run count merges all its runs
//! into the next level; a merge into the last level takes the last level's run with it, so the
//! last level stays one run. Level 0 merges on `level0_compaction_trigger` runs.
//!
//! Levels are picked deepest first, so a level makes room before the one above pours into it.
//!
//! A tree another policy built may reach below the configured last level; then the deepest
//! non-empty level is the last one, and the levels above it repeat the top level's `K` and `T`
//! (the settings are counted from the last level up).

use super::{
    merge_last_level, merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy,
    JobAction, OutputRun, RunningCompactions, SizeRatio,
};
use super::{CompactionKind, CompactionSettings};
use crate::error::{Error, Result};
use crate::version::Version;

/// Moose's shape as [`crate::policy::CompactionSettings`] names it (see [`Moose::new`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MooseSettings {
    /// `K_i`, the runs of levels `1..last`, level 1 first.
    pub runs_per_level: Vec<usize>,
    /// `T_i = C_(i+1) / C_i` for levels `1..last`, level 1 first.
    pub ratios: Vec<f64>,
}

/// The Moose merge policy (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Moose {
    /// `K_i` for levels `1..last`; index 0 is level 1.
    runs_per_level: Vec<usize>,
    /// `T_i = C_(i+1) / C_i` for levels `1..last`; index 0 is the ratio of level 2 to level 1.
    ratios: Vec<SizeRatio>,
}

impl Moose {
    /// A tree whose last level is `runs_per_level.len() + 1`, with `K_i` runs on level `i`
    /// (`runs_per_level[i - 1]`, 1..=64) and `C_(i+1) / C_i = ratios[i - 1]` (2..=1000).
    pub fn new(runs_per_level: Vec<usize>, ratios: Vec<f64>) -> Result<Self> {
        if runs_per_level.is_empty() || runs_per_level.len() != ratios.len() {
            return Err(Error::InvalidArgument(format!(
                "moose needs one run count and one ratio per non-last level, got {} and {}",
                runs_per_level.len(),
                ratios.len()
            )));
        }
        super::check_last_level(runs_per_level.len() + 1)?;
        if let Some(k) = runs_per_level.iter().find(|k| !(1..=64).contains(*k)) {
            return Err(Error::InvalidArgument(format!(
                "moose runs per level must lie in 1..=64, got {k}"
            )));
        }
        let ratios = ratios
            .into_iter()
            .map(|t| SizeRatio::new("moose ratios", t))
            .collect::<Result<_>>()?;
        Ok(Moose {
            runs_per_level,
            ratios,
        })
    }

    /// The EcoTune paper's Moose: levels 1 to 4 (level 0 is flushed runs), 3 runs on levels 1 to
    /// 3, ratio 7 between them and 6 into the last level.
    pub fn ecotune_paper() -> Self {
        Moose {
            runs_per_level: vec![3, 3, 3],
            ratios: [7.0, 7.0, 6.0].map(SizeRatio::from_valid).to_vec(),
        }
    }

    /// `K_i` of levels `1..last` as configured, level 1 first.
    pub fn runs_per_level(&self) -> &[usize] {
        &self.runs_per_level
    }

    /// `T_i = C_(i+1) / C_i` of levels `1..last` as configured, level 1 first.
    pub fn ratios(&self) -> Vec<f64> {
        self.ratios.iter().map(|t| t.get()).collect()
    }

    /// The configured last level.
    pub fn configured_last_level(&self) -> usize {
        self.runs_per_level.len() + 1
    }

    /// The last level of `tree`: the configured one, or the deepest non-empty level below it.
    pub fn last_level(&self, tree: &Version) -> usize {
        self.configured_last_level()
            .max(tree.last_non_empty_level().unwrap_or(0))
    }

    /// The index into the settings of `level` (1..last) when `last` is the last level: counted
    /// from the last level up, the top setting repeated above the configured levels.
    fn setting(&self, level: usize, last: usize) -> usize {
        let configured = self.runs_per_level.len();
        configured.saturating_sub(last - level)
    }

    /// `K_i` of `level` (1..last).
    fn runs_allowed(&self, level: usize, last: usize) -> usize {
        self.runs_per_level[self.setting(level, last)]
    }

    /// Capacities `C_1..C_(L-1)` in bytes (index 0 is level 1), from the last level's size up.
    pub fn capacities(&self, tree: &Version, context: &CompactionContext) -> Vec<f64> {
        let last = self.last_level(tree);
        let buffer = context.write_buffer_bytes.max(1) as f64;
        let mut capacity = tree.levels()[last].bytes() as f64;
        let mut capacities = vec![0.0; last - 1];
        for level in (1..last).rev() {
            capacity /= self.ratios[self.setting(level, last)].get();
            capacity = capacity.max(buffer * self.runs_allowed(level, last) as f64);
            capacities[level - 1] = capacity;
        }
        capacities
    }

    /// The job that moves every run of `level` into `level + 1`.
    fn pour(
        &self,
        tree: &Version,
        level: usize,
        capacities: &[f64],
        reason: String,
    ) -> CompactionJob {
        let levels = tree.levels();
        let last = self.last_level(tree);
        let target = level + 1;
        let mut inputs: Vec<_> = levels[level]
            .runs()
            .iter()
            .map(|run| whole_run(level, run))
            .collect();
        let mut output_run = OutputRun::New;
        if target == last {
            inputs.extend(
                levels[target]
                    .runs()
                    .iter()
                    .map(|run| whole_run(target, run)),
            );
        } else if let Some(newest) = levels[target].runs().first() {
            let run_capacity = capacities[target - 1] / self.runs_allowed(target, last) as f64;
            if (newest.bytes() as f64) < run_capacity {
                inputs.push(whole_run(target, newest));
                output_run = OutputRun::Existing(newest.id());
            }
        }
        CompactionJob {
            inputs,
            output_level: target,
            output_run,
            reason,
            state: None,
            action: JobAction::Merge,
        }
    }
}

impl CompactionPolicy for Moose {
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let settings = CompactionSettings {
            moose: Some(MooseSettings {
                runs_per_level: self.runs_per_level.clone(),
                ratios: self.ratios.iter().map(|ratio| ratio.get()).collect(),
            }),
            ..CompactionSettings::with_size_ratio(SizeRatio::DEFAULT.get())
        };
        Some((CompactionKind::Moose, settings))
    }

    fn name(&self) -> String {
        let list = |values: Vec<String>| values.join("/");
        format!(
            "moose(K={},T={})",
            list(self.runs_per_level.iter().map(|k| k.to_string()).collect()),
            list(self.ratios.iter().map(|t| t.to_string()).collect())
        )
    }

    /// `K_i` runs on every level above the last, one on the last.
    fn max_runs(&self, level: usize, last_level: usize) -> usize {
        if level >= last_level {
            1
        } else {
            self.runs_allowed(level, last_level)
        }
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let levels = tree.levels();
        let last = self.last_level(tree);
        let free = |job: CompactionJob| {
            running
                .conflict(&job)
                .is_none()
                .then(|| merge_or_move(job, tree))
        };
        if let Some(job) = merge_last_level(tree, last).and_then(free) {
            return Some(job);
        }
        let capacities = self.capacities(tree, context);
        // Deepest first: a level makes room before the level above pours into it.
        for level in (1..last).rev() {
            let runs = levels[level].runs().len();
            let bytes = levels[level].bytes() as f64;
            let capacity = capacities[level - 1];
            let allowed = self.runs_allowed(level, last);
            if runs > allowed || (runs > 0 && bytes > capacity) {
                let reason = format!(
                    "level {level} holds {runs} runs (K = {allowed}) and {bytes:.0} of \
                     {capacity:.0} bytes"
                );
                if let Some(job) = free(self.pour(tree, level, &capacities, reason)) {
                    return Some(job);
                }
            }
        }
        let trigger = context.level0_compaction_trigger.max(1);
        if levels[0].runs().len() >= trigger {
            let reason = format!(
                "level 0 has {} runs (trigger {trigger})",
                levels[0].runs().len()
            );
            return free(self.pour(tree, 0, &capacities, reason));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{runs_of, tree, CONTEXT};

    #[test]
    fn capacities_follow_the_last_level_up_with_a_floor_of_k_buffers() {
        let moose = Moose::ecotune_paper();
        // Last level 4 holds 4.2 MB: C_3 = 700,000, C_2 = 100,000, C_1 = 14,286 (floor 3,000).
        let shape = tree(&[(4, 1, 1, "a", "z", 4_200_000)]);
        let capacities = moose.capacities(&shape, &CONTEXT);
        assert_eq!(capacities.len(), 3);
        assert!((capacities[2] - 700_000.0).abs() < 1.0);
        assert!((capacities[1] - 100_000.0).abs() < 1.0);
        assert!((capacities[0] - 100_000.0 / 7.0).abs() < 1.0);
        // An empty tree: every level at its floor of K write buffers.
        let empty = moose.capacities(&tree(&[]), &CONTEXT);
        assert_eq!(empty, vec![3000.0, 3000.0, 3000.0]);
    }

    #[test]
    fn arriving_data_joins_the_newest_run_until_it_is_full_then_starts_a_new_one() {
        let moose = Moose::ecotune_paper();
        // Level 0 at its trigger (2); level 1's newest run (id 20) holds 1,000 of its run
        // capacity 14,286 / 3: the merge rewrites it in place.
        let files = [
            (0, 30, 1, "a", "m", 500),
            (0, 31, 2, "a", "m", 500),
            (1, 20, 3, "a", "z", 1000),
            (4, 1, 4, "a", "z", 4_200_000),
        ];
        let job = moose
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(0, 31), (0, 30), (1, 20)]);
        assert_eq!(job.output_level, 1);
        assert_eq!(job.output_run, OutputRun::Existing(20));
        // A full newest run: the arriving data starts a new run.
        let mut files = files;
        files[2] = (1, 20, 3, "a", "z", 5000);
        let job = moose
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(0, 31), (0, 30)]);
        assert_eq!(job.output_run, OutputRun::New);
    }

    #[test]
    fn a_full_level_pours_into_the_next_deepest_first_and_the_last_level_stays_one_run() {
        let moose = Moose::ecotune_paper();
        // Level 1 over its count (4 runs > K = 3) and level 3 over its capacity (800,000 >
        // 700,000): level 3 goes first, with the last level's run.
        let files = [
            (1, 20, 1, "a", "z", 100),
            (1, 21, 2, "a", "z", 100),
            (1, 22, 3, "a", "z", 100),
            (1, 23, 4, "a", "z", 100),
            (3, 10, 5, "a", "z", 800_000),
            (4, 1, 6, "a", "z", 4_200_000),
        ];
        let job = moose
            .pick(&tree(&files), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(runs_of(&job), vec![(3, 10), (4, 1)]);
        assert_eq!((job.output_level, job.output_run), (4, OutputRun::New));
        // With level 3 in shape, level 1 pours into level 2 (empty: a new run).
        let job = moose
            .pick(&tree(&files[..4]), &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
        assert_eq!(runs_of(&job).len(), 4);
        assert_eq!(job.output_run, OutputRun::New);
        // Two runs on the last level merge in place.
        let job = moose
            .pick(
                &tree(&[(4, 1, 1, "a", "m", 10), (4, 2, 2, "n", "z", 10)]),
                &CONTEXT,
                &RunningCompactions::none(),
            )
            .expect("a job");
        assert_eq!((job.output_level, runs_of(&job).len()), (4, 2));
    }

    #[test]
    fn a_tree_reaching_below_the_configured_last_level_keeps_its_deepest_level_last() {
        let moose = Moose::ecotune_paper();
        // Leveling left runs on levels 2 and 6: level 6 is the last level, level 5 gets the
        // last ratio (6) and K = 3, levels above it repeat ratio 7.
        let shape = tree(&[(2, 5, 1, "a", "z", 50_000), (6, 1, 2, "a", "z", 6_000_000)]);
        assert_eq!(moose.last_level(&shape), 6);
        let capacities = moose.capacities(&shape, &CONTEXT);
        assert_eq!(capacities.len(), 5);
        assert!((capacities[4] - 1_000_000.0).abs() < 1.0);
        assert!((capacities[3] - 1_000_000.0 / 7.0).abs() < 1.0);
        // Level 2 holds 50,000 > C_2 = 1e6 / 7^3 = 2,915 (floor 3,000): it pours into level 3.
        let job = moose
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!((runs_of(&job), job.output_level), (vec![(2, 5)], 3));
    }

    #[test]
    fn invalid_settings_are_refused() {
        assert!(Moose::new(vec![], vec![]).is_err());
        assert!(Moose::new(vec![3], vec![7.0, 6.0]).is_err());
        assert!(Moose::new(vec![0], vec![7.0]).is_err());
        assert!(Moose::new(vec![3], vec![1.0]).is_err());
        assert!(Moose::new(vec![3; 20], vec![7.0; 20]).is_err());
        assert_eq!(
            Moose::new(vec![3, 3, 3], vec![7.0, 7.0, 6.0]).expect("valid"),
            Moose::ecotune_paper()
        );
    }
}
