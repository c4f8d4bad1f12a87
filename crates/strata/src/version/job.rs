//! A compaction job as the policies return it and the executor runs it: the runs taken as input,
//! where the output goes, the jobs in flight, and the check that a job keeps the tree's recency
//! order. These describe versions (which runs of which level a merge reads and writes), so they
//! live with the versions; `compaction/` decides and runs jobs.

use std::sync::Arc;

use super::{FileMetadata, PolicyState, Version};
use crate::error::{Error, Result};

/// The jobs compaction workers are running, as a policy sees them when it picks the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunningCompactions {
    jobs: Vec<CompactionJob>,
}

impl RunningCompactions {
    /// No job in flight.
    pub fn none() -> Self {
        RunningCompactions::default()
    }

    /// The given jobs in flight (for simulators and tests).
    pub fn new(jobs: Vec<CompactionJob>) -> Self {
        RunningCompactions { jobs }
    }

    /// The jobs in flight.
    pub fn jobs(&self) -> &[CompactionJob] {
        &self.jobs
    }

    /// True if no job is in flight.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// True if a running job takes file `number` as input.
    pub fn holds_file(&self, number: u64) -> bool {
        self.jobs.iter().any(|job| {
            job.inputs
                .iter()
                .any(|input| input.file_numbers.contains(&number))
        })
    }

    /// True if a running job takes any file of run `run_id` on `level` as input.
    pub fn holds_run(&self, level: usize, run_id: u64) -> bool {
        self.jobs.iter().any(|job| {
            job.inputs
                .iter()
                .any(|input| input.level == level && input.run_id == run_id)
        })
    }

    /// True if a running job writes its output to `level`.
    pub fn writes_level(&self, level: usize) -> bool {
        self.jobs.iter().any(|job| job.output_level == level)
    }

    /// True if a running job writes to `level` in a way `job` may not run beside: see
    /// [`RunningCompactions::conflict`].
    fn writes_level_against(&self, job: &CompactionJob) -> bool {
        self.jobs.iter().any(|running| {
            running.output_level == job.output_level && !running.may_share_output_level(job)
        })
    }

    /// Why `job` may not start beside the running jobs, or `None` if it may: it shares an input
    /// file with one of them, or writes to a level one of them writes to. One pair may share an
    /// output level: a job that starts a new run there and a job that rewrites runs of that level
    /// in place (its output joins one of its own input runs, EcoTune's main-level merges,
    /// DESIGN.md §6). The new run takes a fresh id, newer than every run; the rewrite keeps an
    /// existing one; whichever installs first, recency order holds.
    pub fn conflict(&self, job: &CompactionJob) -> Option<String> {
        if job.is_state_only() {
            return None;
        }
        if let Some(number) = job
            .inputs
            .iter()
            .flat_map(|input| input.file_numbers.iter())
            .find(|&&number| self.holds_file(number))
        {
            return Some(format!("file {number} is an input of a running job"));
        }
        if self.writes_level_against(job) {
            return Some(format!(
                "a running job writes to level {}",
                job.output_level
            ));
        }
        None
    }

    pub(crate) fn push(&mut self, job: CompactionJob) {
        self.jobs.push(job);
    }

    /// Removes one job equal to `job` (it finished).
    pub(crate) fn remove(&mut self, job: &CompactionJob) {
        if let Some(index) = self.jobs.iter().position(|j| j == job) {
            self.jobs.swap_remove(index);
        }
    }
}

/// Where a job's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputRun {
    /// Join this existing run of the output level (leveling's partial compaction).
    Existing(u64),
    /// Start a new run (newer than every run already on the output level).
    New,
}

/// Files of one run taken as input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInput {
    /// The run's level.
    pub level: usize,
    /// The run.
    pub run_id: u64,
    /// Numbers of the run's files that are merged.
    pub file_numbers: Vec<u64>,
}

/// How the engine carries a job out: the policy's decision, as lsm-tree's `Choice::{Merge, Move}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobAction {
    /// Merge the inputs into new files (the executor's k-way merge).
    #[default]
    Merge,
    /// Move the job's input files (one, or a few adjacent files of one run) to the output level
    /// by a manifest edit, without rewriting them (RocksDB's trivial move, LevelDB's
    /// `IsTrivialMove`): each file keeps its filter and access statistics. Valid only for a job
    /// `trivial_move_files` accepts; policies set it through `compaction::merge_or_move`.
    Move,
}

/// A compaction to run: merge the inputs into `output_level`, or move its files there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionJob {
    /// Inputs, newest run first.
    pub inputs: Vec<RunInput>,
    /// Level of the output run.
    pub output_level: usize,
    /// The run the outputs join.
    pub output_run: OutputRun,
    /// Why the policy chose this job (for logs and `strata simulate`).
    pub reason: String,
    /// State the policy keeps in the manifest, logged with this job's version edit (see the
    /// module docs). `None` leaves the policy's state as it is.
    pub state: Option<PolicyState>,
    /// Merge the inputs, or move the one input file ([`JobAction`]).
    pub action: JobAction,
}

impl CompactionJob {
    /// A decision that changes only the policy's state (Garnering's level-count increment): no
    /// files are read or written; the engine logs the state in the manifest.
    pub fn state_only(state: PolicyState, reason: impl Into<String>) -> Self {
        CompactionJob {
            inputs: Vec::new(),
            output_level: 0,
            output_run: OutputRun::New,
            reason: reason.into(),
            state: Some(state),
            action: JobAction::Merge,
        }
    }

    /// True for a decision made by [`CompactionJob::state_only`].
    pub fn is_state_only(&self) -> bool {
        self.inputs.is_empty() && self.state.is_some()
    }

    /// Number of input files.
    pub fn input_file_count(&self) -> usize {
        self.inputs.iter().map(|i| i.file_numbers.len()).sum()
    }

    /// True if the job's output joins one of its own input runs on the output level: it
    /// rewrites runs of that level in place and takes no new run id.
    pub fn rewrites_in_place(&self) -> bool {
        match self.output_run {
            OutputRun::Existing(id) => self
                .inputs
                .iter()
                .any(|input| input.level == self.output_level && input.run_id == id),
            OutputRun::New => false,
        }
    }

    /// True if `self` and `other`, both writing to the same level, may run at once: one starts a
    /// new run and the other rewrites runs in place (see [`RunningCompactions::conflict`]).
    fn may_share_output_level(&self, other: &CompactionJob) -> bool {
        let new_run = |job: &CompactionJob| job.output_run == OutputRun::New;
        (new_run(self) && other.rewrites_in_place()) || (self.rewrites_in_place() && new_run(other))
    }
}

/// The files `job` may move instead of merging (a trivial move), sorted by key, or why it may
/// not: a trivial move takes files of one run into a deeper level, either into a new run or into
/// an existing run none of whose files overlaps the key range from its first file's smallest key
/// to its last file's largest. The one rule behind `compaction::merge_or_move` (the policies'
/// decision), the executor's check of a move and the simulator's moves. A policy decides a move
/// of one file through `merge_or_move`; a move of several adjacent files (RocksDB's
/// `TryExtendNonL0TrivialMove`) only where it sets [`JobAction::Move`] itself.
pub(crate) fn trivial_move_check<'v>(
    job: &CompactionJob,
    version: &'v Version,
) -> std::result::Result<Vec<&'v Arc<FileMetadata>>, &'static str> {
    let [input] = job.inputs.as_slice() else {
        return Err("it does not take exactly one run");
    };
    if input.file_numbers.is_empty() {
        return Err("it takes no file");
    }
    if input.level >= job.output_level {
        return Err("its output level is not below its input");
    }
    let run = version
        .levels()
        .get(input.level)
        .and_then(|level| level.runs().iter().find(|r| r.id() == input.run_id))
        .ok_or("its run is not in the tree")?;
    let mut files = Vec::with_capacity(input.file_numbers.len());
    for number in &input.file_numbers {
        let file = run
            .files()
            .iter()
            .find(|f| f.number() == *number)
            .ok_or("its file is not in the tree")?;
        if files
            .iter()
            .any(|f: &&Arc<FileMetadata>| f.number() == *number)
        {
            return Err("it names a file twice");
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    let output_level = version
        .levels()
        .get(job.output_level)
        .ok_or("its output level does not exist")?;
    if let OutputRun::Existing(id) = job.output_run {
        let run = output_level
            .runs()
            .iter()
            .find(|r| r.id() == id)
            .ok_or("its output run does not exist")?;
        let (Some(first), Some(last)) = (files.first(), files.last()) else {
            return Err("it takes no file");
        };
        if !run
            .overlapping_files(first.smallest_user_key(), last.largest_user_key())
            .is_empty()
        {
            return Err("its files overlap the output run");
        }
    }
    Ok(files)
}

/// The files `job` may move instead of merging, or `None` (see [`trivial_move_check`]).
pub(crate) fn trivial_move_files<'v>(
    job: &CompactionJob,
    version: &'v Version,
) -> Option<Vec<&'v Arc<FileMetadata>>> {
    trivial_move_check(job, version).ok()
}

/// One input run resolved against the version: level, run id and the files taken from it.
pub(crate) type ResolvedRun = (usize, u64, Vec<Arc<FileMetadata>>);

/// True if every input run and file `job` names is in `version`.
pub(crate) fn inputs_exist(job: &CompactionJob, version: &Version) -> bool {
    resolve_inputs(job, version).is_ok()
}

/// The job's input files, resolved against the version, newest run first.
pub(crate) fn resolve_inputs(job: &CompactionJob, version: &Version) -> Result<Vec<ResolvedRun>> {
    let mut resolved = Vec::new();
    for input in &job.inputs {
        let run = version
            .levels()
            .get(input.level)
            .and_then(|level| level.runs().iter().find(|r| r.id() == input.run_id))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "compaction job names run {} on level {}, which does not exist",
                    input.run_id, input.level
                ))
            })?;
        let mut files = Vec::new();
        for &number in &input.file_numbers {
            let file = run
                .files()
                .iter()
                .find(|f| f.number() == number)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "compaction job names file {number}, not in run {} of level {}",
                        input.run_id, input.level
                    ))
                })?;
            files.push(Arc::clone(file));
        }
        resolved.push((input.level, input.run_id, files));
    }
    Ok(resolved)
}

/// True if any of `files` (disjoint, in key order) shares keys with `file`: the first whose
/// largest key is not below `file`'s smallest starts at or before `file`'s largest.
fn any_overlaps(files: &[Arc<FileMetadata>], file: &FileMetadata) -> bool {
    let first = files.partition_point(|f| f.largest_user_key() < file.smallest_user_key());
    files
        .get(first)
        .is_some_and(|f| f.smallest_user_key() <= file.largest_user_key())
}

/// A run's place in read order: by level, then newest (largest id) first.
type Position = (usize, std::cmp::Reverse<u64>);

fn position(level: usize, run_id: u64) -> Position {
    (level, std::cmp::Reverse(run_id))
}

/// True if `file`, of the run at `at` and not an input, stays on its side of the job's output
/// at `output`: only the input runs sharing keys with it constrain where it may end up; newer
/// than all of them it must stay newer than the output, older than all of them older, and it
/// may not lie between them.
fn keeps_its_side(
    file: &FileMetadata,
    at: Position,
    output: Position,
    inputs: &[ResolvedRun],
) -> bool {
    let mut sharing = inputs
        .iter()
        .filter(|(_, _, files)| any_overlaps(files, file))
        .map(|(level, run_id, _)| position(*level, *run_id));
    let Some(first) = sharing.next() else {
        return true;
    };
    let (newest, oldest) = sharing.fold((first, first), |(newest, oldest), p| {
        (newest.min(p), oldest.max(p))
    });
    if at < newest {
        at < output
    } else if at > oldest {
        at > output
    } else {
        false
    }
}

/// Checks that a job keeps the tree's recency order: every run outside the job that overlaps its
/// key range and is newer than all inputs stays newer than the output, every one older than all
/// inputs stays older, and none lies between inputs. A policy that breaks this would make reads
/// return stale versions, so the job is refused (the engine then stops taking writes) instead.
pub(crate) fn check_recency_order(job: &CompactionJob, version: &Version) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::InvalidArgument(format!(
            "compaction job refused ({}): {what}",
            job.reason
        )))
    };
    if job.inputs.is_empty() {
        return refuse("it has no inputs".into());
    }
    if let Some(input) = job.inputs.iter().find(|i| i.level > job.output_level) {
        return refuse(format!(
            "input on level {} is below the output level",
            input.level
        ));
    }
    let output = match job.output_run {
        OutputRun::Existing(id) => position(job.output_level, id),
        // A new run is the newest of its level.
        OutputRun::New => position(job.output_level, u64::MAX),
    };
    let mut inputs = resolve_inputs(job, version)?;
    // Each input run's files in key order: a run's files are disjoint, so their largest keys are
    // in order too, and whether any of them shares keys with a file is one binary search (every
    // file of the tree is checked against every input run; a scan of the inputs made the check
    // quadratic in a large job over a large tree).
    for (_, _, files) in &mut inputs {
        files.sort_unstable_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    }
    let mut input_numbers: Vec<u64> = job
        .inputs
        .iter()
        .flat_map(|input| input.file_numbers.iter().copied())
        .collect();
    input_numbers.sort_unstable();
    let is_input = |number: u64| input_numbers.binary_search(&number).is_ok();
    // The keys the inputs span: a file outside them shares keys with none, and in each run the
    // files inside them are one stretch, found by two binary searches.
    let input_files = || inputs.iter().flat_map(|(_, _, files)| files.iter());
    let (Some(span_smallest), Some(span_largest)) = (
        input_files().map(|f| f.smallest_user_key()).min(),
        input_files().map(|f| f.largest_user_key()).max(),
    ) else {
        // No input file: no file of the tree shares keys with the inputs.
        return Ok(());
    };
    // A run newer than every input run, or older than every one, is on the right side of the
    // output whatever keys it shares with them when it is on the same side of the output: its
    // files need no look.
    let input_positions = || job.inputs.iter().map(|i| position(i.level, i.run_id));
    let (Some(newest_input), Some(oldest_input)) =
        (input_positions().min(), input_positions().max())
    else {
        return refuse("it has no inputs".into());
    };
    for (level_index, level) in version.levels().iter().enumerate() {
        for run in level.runs() {
            let at = position(level_index, run.id());
            if (at < newest_input && at < output) || (at > oldest_input && at > output) {
                continue;
            }
            let files = run.files();
            let first = files.partition_point(|f| f.largest_user_key() < span_smallest);
            let end = files.partition_point(|f| f.smallest_user_key() <= span_largest);
            let spanned = files.get(first..end.max(first)).unwrap_or_default();
            for file in spanned.iter().filter(|f| !is_input(f.number())) {
                if !keeps_its_side(file, at, output, &inputs) {
                    return refuse(format!(
                        "file {} (level {level_index}, run {}) shares keys with the job's inputs and would end up on the wrong side of its output on level {}",
                        file.number(),
                        run.id(),
                        job.output_level
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// The recency check as first written: every file of the tree that is not an input against
    /// every input file. The check now looks only where a violation can be; both must agree.
    fn check_by_scanning_every_file(job: &CompactionJob, version: &Version) -> Result<()> {
        use std::cmp::Reverse;
        let position = |level: usize, run_id: u64| (level, Reverse(run_id));
        let refuse = |what: String| {
            Err(Error::InvalidArgument(format!(
                "compaction job refused ({}): {what}",
                job.reason
            )))
        };
        if job.inputs.is_empty() {
            return refuse("it has no inputs".into());
        }
        if let Some(input) = job.inputs.iter().find(|i| i.level > job.output_level) {
            return refuse(format!(
                "input on level {} is below the output level",
                input.level
            ));
        }
        let output = match job.output_run {
            OutputRun::Existing(id) => position(job.output_level, id),
            OutputRun::New => position(job.output_level, u64::MAX),
        };
        let inputs = resolve_inputs(job, version)?;
        let is_input = |number: u64| job.inputs.iter().any(|i| i.file_numbers.contains(&number));
        for (level_index, level) in version.levels().iter().enumerate() {
            for run in level.runs() {
                let at = position(level_index, run.id());
                for file in run.files().iter().filter(|f| !is_input(f.number())) {
                    let mut range = None;
                    for (input_level, input_run, files) in &inputs {
                        if files
                            .iter()
                            .any(|f| f.overlaps(file.smallest_user_key(), file.largest_user_key()))
                        {
                            let p = position(*input_level, *input_run);
                            range = Some(match range {
                                None => (p, p),
                                Some((newest, oldest)) => (p.min(newest), p.max(oldest)),
                            });
                        }
                    }
                    let Some((newest, oldest)) = range else {
                        continue;
                    };
                    let fine = if at < newest {
                        at < output
                    } else if at > oldest {
                        at > output
                    } else {
                        false
                    };
                    if !fine {
                        return refuse(format!(
                            "file {} (level {level_index}, run {}) shares keys with the job's inputs and would end up on the wrong side of its output on level {}",
                            file.number(),
                            run.id(),
                            job.output_level
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn below(rng: &mut SplitMix64, n: u64) -> u64 {
        rng.next_u64() % n
    }

    /// A tree of up to four levels of up to three runs each, every run's files disjoint ranges
    /// of three-digit keys, ranges overlapping freely across runs.
    fn random_tree(rng: &mut SplitMix64, number: &mut u64) -> Version {
        let mut builder = Version::builder();
        let mut run_id = 1_000;
        for level in 0..4 {
            for _ in 0..below(rng, 4) {
                run_id -= 1;
                let mut points: Vec<u64> = (0..2 + 2 * below(rng, 6))
                    .map(|_| below(rng, 1_000))
                    .collect();
                points.sort_unstable();
                points.dedup();
                for pair in points.chunks_exact(2) {
                    *number += 1;
                    let (smallest, largest) =
                        (format!("{:03}", pair[0]), format!("{:03}", pair[1]));
                    let file = FileMetadata::new(*number, smallest.as_bytes(), largest.as_bytes());
                    builder = builder.add_file(level, run_id, file);
                }
            }
        }
        builder.build().expect("a valid tree")
    }

    /// A job over `tree`'s runs: one to three input runs, a nonempty share of each one's files,
    /// an output level and run drawn at random (often against the recency order, so that both
    /// answers come up).
    fn random_job(rng: &mut SplitMix64, tree: &Version) -> Option<CompactionJob> {
        let runs: Vec<(usize, &super::super::Run)> = tree
            .levels()
            .iter()
            .enumerate()
            .flat_map(|(level, l)| l.runs().iter().map(move |run| (level, run)))
            .filter(|(_, run)| !run.files().is_empty())
            .collect();
        if runs.is_empty() {
            return None;
        }
        let mut inputs: Vec<RunInput> = Vec::new();
        for _ in 0..1 + below(rng, 3) {
            let (level, run) = runs[below(rng, runs.len() as u64) as usize];
            if inputs
                .iter()
                .any(|i| i.run_id == run.id() && i.level == level)
            {
                continue;
            }
            let files = run.files();
            let start = below(rng, files.len() as u64) as usize;
            let end = start + 1 + below(rng, (files.len() - start) as u64) as usize;
            let mut file_numbers: Vec<u64> = files[start..end].iter().map(|f| f.number()).collect();
            if below(rng, 2) == 0 {
                file_numbers.reverse();
            }
            inputs.push(RunInput {
                level,
                run_id: run.id(),
                file_numbers,
            });
        }
        let deepest = inputs.iter().map(|i| i.level).max().unwrap_or(0);
        let output_level =
            (deepest + below(rng, 3) as usize).saturating_sub(below(rng, 2) as usize);
        let output_run = match tree.levels()[output_level].runs() {
            [] => OutputRun::New,
            existing if below(rng, 2) == 0 => {
                OutputRun::Existing(existing[below(rng, existing.len() as u64) as usize].id())
            }
            _ => OutputRun::New,
        };
        Some(CompactionJob {
            inputs,
            output_level,
            output_run,
            reason: "random".into(),
            state: None,
            action: JobAction::Merge,
        })
    }

    #[test]
    fn the_recency_check_agrees_with_a_scan_of_every_file() {
        let (mut kept, mut refused) = (0, 0);
        let mut number = 0;
        for seed in 0..400 {
            let mut rng = SplitMix64::new(seed);
            let tree = random_tree(&mut rng, &mut number);
            for _ in 0..25 {
                let Some(job) = random_job(&mut rng, &tree) else {
                    continue;
                };
                let checked = check_recency_order(&job, &tree);
                let scanned = check_by_scanning_every_file(&job, &tree);
                assert_eq!(
                    format!("{checked:?}"),
                    format!("{scanned:?}"),
                    "seed {seed}: {job:?}"
                );
                if checked.is_ok() {
                    kept += 1;
                } else {
                    refused += 1;
                }
            }
        }
        // Both answers came up often enough for the agreement to mean something.
        eprintln!("{kept} jobs kept, {refused} refused");
        assert!(
            kept > 500 && refused > 500,
            "{kept} kept, {refused} refused"
        );
    }
}
