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
use super::{CompactionKind, CompactionSettings};
use std::sync::Arc;

use crate::error::Result;
use crate::version::{FileMetadata, Version, MAX_LEVELS};

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
        .flat_map(|run| run.overlapping(smallest, largest))
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
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let kind = if self.dynamic_level_bytes {
            CompactionKind::LevelingDynamic
        } else {
            CompactionKind::Leveling
        };
        let settings = CompactionSettings::of_levels(
            self.size_ratio.get(),
            self.base_level_bytes,
            self.last_level,
        );
        Some((kind, settings))
    }

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
/// slowed down (`level0_slowdown_writes_trigger`). RocksDB's intra-L0 compaction
/// (`LevelCompactionBuilder::PickIntraL0Compaction`, `FindIntraL0Compaction`): once level 0
/// holds `level0_compaction_trigger + 2` runs, merge the newest runs no running job holds into
/// one level-0 run, taking older ones only while the bytes merged per run merged away do not
/// grow, and only if that takes at least `level0_compaction_trigger` runs (and at least 2). The
/// byte rule keeps a large run (the output of the last such merge) out of the next one: without
/// it every merge rewrote everything merged before it, and under a steady load these merges
/// wrote about as many bytes as the flushes. The output keeps the newest input's run id, so it
/// stays newer than the older runs (held or left out) and older than every run flushed while it
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
    let trigger = context.level0_compaction_trigger.max(1);
    let level0_runs = tree.levels()[0].runs();
    if level0_runs.len() < trigger + 2 {
        return None;
    }
    // Level 0's runs, newest first: the ones newer than every run a running job holds, then
    // only while the bytes per run merged away do not grow.
    let free = intra_level0_span(
        level0_runs
            .iter()
            .take_while(|run| !running.holds_run(0, run.id())),
    );
    if free.len() < trigger.max(2) {
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

/// The newest of `runs` (newest first) that an intra-level-0 merge takes: older runs join while
/// the merge's bytes per run merged away (its inputs but the one its output replaces) do not
/// grow (RocksDB's `FindIntraL0Compaction`).
fn intra_level0_span<'a>(
    runs: impl Iterator<Item = &'a crate::version::Run>,
) -> Vec<&'a crate::version::Run> {
    let mut span: Vec<&crate::version::Run> = Vec::new();
    let mut bytes = 0u64;
    let mut bytes_per_run_merged_away = u64::MAX;
    for run in runs {
        let with = bytes.saturating_add(run.bytes());
        // With `run`, `span.len()` runs are merged away.
        if !span.is_empty() {
            let per_run = with / span.len() as u64;
            if per_run > bytes_per_run_merged_away {
                break;
            }
            bytes_per_run_merged_away = per_run;
        }
        bytes = with;
        span.push(run);
    }
    span
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

/// Leveling's picking rules for the given level sizes (RocksDB's leveled picker,
/// `LevelCompactionBuilder::SetupInitialFiles`): a disk level holding several runs is first
/// merged in place; then the levels that need a job are tried most urgent first, by score
/// ([`level_scores`]): level 0 merges into the base level, any other level moves its file with
/// the least overlap below (`kMinOverlappingRatio`) into the next level. A candidate that
/// conflicts with a running job gives way to the next one. While level 0's merge into the base
/// level waits for a running job, its runs flushed since may be merged among themselves
/// ([`merge_within_level0`]), and the base level moves nothing down: that would keep the merge
/// from level 0 waiting (RocksDB's `skipped_l0_to_base`).
pub(crate) fn pick_leveled(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    shape: &LeveledShape<'_>,
) -> Option<CompactionJob> {
    // A disk level with several runs (a tree written by another policy, before a reopen or a
    // `Db::set_compaction_policy`) is first merged into one run in place. Until then nothing
    // else may move data into or out of it: a file taken from one of its runs, or merged into
    // one of them, would pass the level's other runs in recency order (the engine refuses such
    // a job). So while the in-place merge waits for a running job, the level is left alone.
    merge_levels_in_place(tree, running, shape.last_level)
        .or_else(|| pick_by_score(tree, context, running, shape))
        .map(|job| merge_or_move(job, tree))
}

/// The levels that need a job, most urgent first: `(level, score)`. Level 0 counts once it
/// holds `level0_compaction_trigger` runs no running job holds, its score those runs over the
/// trigger; a level above the last counts once the bytes of its files no running job holds
/// exceed its capacity, its score their ratio (RocksDB's `ComputeCompactionScore`, which
/// leaves files being compacted out of both). A level above the dynamic base level has no
/// capacity: anything left there is drained down before any over-full level, after level 0.
/// So an over-full base level moves files down before level 0 merges into it again, unless
/// level 0 is the more pressing: each merge from level 0 rewrites the base level, and the
/// fuller the base level, the more bytes it rewrites for the same level-0 bytes.
pub(crate) fn level_scores(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    capacity: &[f64],
    last_level: usize,
) -> Vec<(usize, f64)> {
    let levels = tree.levels();
    let trigger = context.level0_compaction_trigger.max(1);
    let free_level0_runs = levels[0]
        .runs()
        .iter()
        .filter(|run| !running.holds_run(0, run.id()))
        .count();
    // (rank, level, score): drained levels rank above over-full ones, level 0 above both.
    let mut ranked: Vec<(u8, usize, f64)> = Vec::new();
    if free_level0_runs >= trigger {
        ranked.push((0, 0, free_level0_runs as f64 / trigger as f64));
    }
    for (level, l) in levels.iter().enumerate().take(last_level).skip(1) {
        if l.bytes() == 0 {
            continue;
        }
        let free_bytes: u64 = l
            .runs()
            .iter()
            .flat_map(|run| run.files().iter())
            .filter(|file| !running.holds_file(file.number()))
            .map(|file| file.file_bytes())
            .sum();
        match capacity.get(level).copied().unwrap_or(0.0) {
            c if c > 0.0 => {
                let score = free_bytes as f64 / c;
                if score > 1.0 {
                    ranked.push((0, level, score));
                }
            }
            _ if free_bytes > 0 => ranked.push((1, level, f64::INFINITY)),
            _ => {}
        }
    }
    if ranked.iter().any(|&(rank, _, _)| rank == 1) {
        for entry in ranked.iter_mut().filter(|entry| entry.1 == 0) {
            entry.0 = 2;
        }
    }
    // Stable: on equal scores level 0 (pushed first) and then the upper level go first.
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.2.total_cmp(&a.2)));
    ranked
        .into_iter()
        .map(|(_, level, score)| (level, score))
        .collect()
}

/// The most urgent level's job (see [`level_scores`]).
fn pick_by_score(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    shape: &LeveledShape<'_>,
) -> Option<CompactionJob> {
    let mut level0_waits = false;
    let scores = level_scores(tree, context, running, shape.capacity, shape.last_level);
    for (level, score) in scores {
        if level == 0 {
            if let Some(job) = merge_level0(tree, running, shape.base_level) {
                return Some(job);
            }
            level0_waits = true;
            if let Some(job) =
                merge_within_level0(tree, context, running).and_then(|job| free(running, job))
            {
                return Some(job);
            }
        } else if level0_waits && level == shape.base_level {
            continue;
        } else if let Some(job) = move_from_level(tree, context, running, level, score) {
            return Some(job);
        }
    }
    None
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

/// Every level-0 run merged into the base level, if no running job is in the way.
fn merge_level0(
    tree: &Version,
    running: &RunningCompactions,
    base_level: usize,
) -> Option<CompactionJob> {
    let level0_runs = tree.levels()[0].runs();
    if level0_runs.is_empty() || several_runs(tree, base_level) {
        return None;
    }
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
    free(running, job)
}

/// Level `level`'s file with the least overlap below, moved into the next level; `None` if
/// every candidate conflicts with a running job.
fn move_from_level(
    tree: &Version,
    context: &CompactionContext,
    running: &RunningCompactions,
    level: usize,
    score: f64,
) -> Option<CompactionJob> {
    if running.writes_level(level + 1) || several_runs(tree, level) || several_runs(tree, level + 1)
    {
        return None;
    }
    let run = tree.levels()[level].runs().first()?;
    let ratio = |f: &Arc<FileMetadata>| {
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
    candidates.into_iter().find_map(|(_, file)| {
        let mut files = expanded_inputs(tree, running, level, run, file);
        let mut reason = match files.len() {
            1 => format!("level {level} score {score:.2}"),
            n => format!("level {level} score {score:.2}, {n} files within the overlap below"),
        };
        let mut moved = false;
        if files.len() == 1 {
            let max_bytes = context
                .target_file_bytes
                .saturating_mul(MOVE_BYTES_PER_FILE_BYTES);
            let extended = extended_move(tree, running, level, run, file, max_bytes);
            if extended.len() > 1 {
                reason = format!(
                    "level {level} score {score:.2}, {} adjacent files over nothing below",
                    extended.len()
                );
                files = extended;
                moved = true;
            }
        }
        let smallest = files.first()?.smallest_user_key();
        let largest = files.last()?.largest_user_key();
        let inputs = vec![RunInput {
            level,
            run_id: run.id(),
            file_numbers: files.iter().map(|f| f.number()).collect(),
        }];
        let mut job = merge_into(tree, inputs, smallest, largest, level + 1, reason);
        if moved {
            job.action = JobAction::Move;
        }
        free(running, job)
    })
}

/// Most files one trivial move takes (RocksDB's `kMaxMultiTrivialMove`).
const MAX_FILES_PER_MOVE: usize = 4;

/// Bytes one trivial move may take, in target file sizes (RocksDB's default
/// `max_compaction_bytes`: 25 times `target_file_size_base`).
const MOVE_BYTES_PER_FILE_BYTES: u64 = 25;

/// The files of `run` (on `level`) that move down with `file` when `file` overlaps nothing on
/// the next level: `file` and the files next to it in key order, first towards larger keys and
/// then towards smaller ones, while the key range from the first file to the last still
/// overlaps nothing on the next level, no running job holds the file, the file does not share
/// a user key with the one beyond it, the move takes at most [`MAX_FILES_PER_MOVE`] files and
/// `max_bytes` bytes. RocksDB's `TryExtendNonL0TrivialMove`, which extends the same way: a
/// one-file move takes one job and one manifest edit per file, and while the files wait their
/// turn the next level's merges may land beneath them and turn their later moves into merges.
/// `[file]` alone if `file` overlaps the next level. Sorted by key.
fn extended_move(
    tree: &Version,
    running: &RunningCompactions,
    level: usize,
    run: &crate::version::Run,
    file: &Arc<FileMetadata>,
    max_bytes: u64,
) -> Vec<Arc<FileMetadata>> {
    let overlaps_below = |smallest: &[u8], largest: &[u8]| {
        tree.levels().get(level + 1).is_some_and(|below| {
            below
                .runs()
                .iter()
                .any(|r| !r.overlapping_files(smallest, largest).is_empty())
        })
    };
    let mut moved = vec![Arc::clone(file)];
    if overlaps_below(file.smallest_user_key(), file.largest_user_key()) {
        return moved;
    }
    let files = run.files();
    let Some(start) = files.iter().position(|f| f.number() == file.number()) else {
        return moved;
    };
    let mut total = file.file_bytes();
    // One step of the extension: false where it stops.
    let mut take = |next: &Arc<FileMetadata>,
                    beyond: Option<&Arc<FileMetadata>>,
                    right: bool,
                    moved: &mut Vec<Arc<FileMetadata>>| {
        if moved.len() >= MAX_FILES_PER_MOVE || running.holds_file(next.number()) {
            return false;
        }
        let (smallest, largest) = if right {
            (file.smallest_user_key(), next.largest_user_key())
        } else {
            (next.smallest_user_key(), file.largest_user_key())
        };
        if overlaps_below(smallest, largest) {
            return false;
        }
        let shares_key = beyond.is_some_and(|b| {
            if right {
                next.largest_user_key() == b.smallest_user_key()
            } else {
                next.smallest_user_key() == b.largest_user_key()
            }
        });
        if shares_key {
            return false;
        }
        total = total.saturating_add(next.file_bytes());
        if total > max_bytes {
            return false;
        }
        if right {
            moved.push(Arc::clone(next));
        } else {
            moved.insert(0, Arc::clone(next));
        }
        true
    };
    for i in start + 1..files.len() {
        if !take(&files[i], files.get(i + 1), true, &mut moved) {
            break;
        }
    }
    for i in (0..start).rev() {
        let beyond = i.checked_sub(1).and_then(|j| files.get(j));
        if !take(&files[i], beyond, false, &mut moved) {
            break;
        }
    }
    moved
}

/// The files of `run` (on `level`) that move down with `file`: those the merge rewrites the
/// next level's files for anyway. `file` overlaps some files of the next level; the other files
/// of `run` within their key range join it when they add no file of the next level to the job
/// (and no running job holds them), so each next-level file is rewritten once for all of them
/// rather than once per file moved down. RocksDB's `CompactionPicker::SetupOtherInputs`: first
/// every file of `run` overlapping that range, if the next-level files they overlap are the
/// same; else the files lying wholly within it. RocksDB also caps the job at
/// `max_compaction_bytes`; here the next-level files bound it already (the added files lie
/// within their range). Sorted by key, `file` among them.
fn expanded_inputs(
    tree: &Version,
    running: &RunningCompactions,
    level: usize,
    run: &crate::version::Run,
    file: &Arc<FileMetadata>,
) -> Vec<Arc<FileMetadata>> {
    let alone = vec![Arc::clone(file)];
    let Some(below) = tree.levels().get(level + 1).and_then(|l| l.runs().first()) else {
        return alone;
    };
    let under = below.overlapping_files(file.smallest_user_key(), file.largest_user_key());
    let (Some(first), Some(last)) = (under.first(), under.last()) else {
        return alone;
    };
    let start = file.smallest_user_key().min(first.smallest_user_key());
    let limit = file.largest_user_key().max(last.largest_user_key());
    let idle = |files: &[Arc<FileMetadata>]| files.iter().all(|f| !running.holds_file(f.number()));
    let overlapping = run.overlapping_files(start, limit);
    if let (Some(low), Some(high)) = (overlapping.first(), overlapping.last()) {
        if overlapping.len() > 1 && idle(&overlapping) {
            let under_all =
                below.overlapping_files(low.smallest_user_key(), high.largest_user_key());
            if under_all.len() == under.len() && idle(&under_all) {
                return overlapping;
            }
        }
    }
    let within: Vec<Arc<FileMetadata>> = run
        .files()
        .iter()
        .filter(|f| f.smallest_user_key() >= start && f.largest_user_key() <= limit)
        .cloned()
        .collect();
    if within.len() > 1 && idle(&within) {
        return within;
    }
    alone
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
    fn an_intra_level0_merge_leaves_out_the_output_of_the_last_one() {
        let policy = Leveling::new(10.0).expect("valid");
        // Runs 10-11 held by a merge into level 1; run 12 (4000 bytes) is the output of an
        // earlier merge within level 0; runs 13-16 (1000 each) were flushed since.
        let mut files = vec![
            (0, 10, 100, "c", "f", 1000),
            (0, 11, 101, "c", "f", 1000),
            (0, 12, 102, "c", "f", 4000),
        ];
        for (index, run) in (13..=16u64).enumerate() {
            files.push((0, run, 103 + index as u64, "c", "f", 1000));
        }
        files.push((1, 5, 3, "a", "z", 9000));
        let shape = tree(&files);
        let down = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        let held = CompactionJob {
            inputs: down
                .inputs
                .iter()
                .filter(|input| input.level == 1 || input.run_id <= 11)
                .cloned()
                .collect(),
            ..down
        };
        let running = RunningCompactions::new(vec![held]);
        let job = policy.pick(&shape, &CONTEXT, &running).expect("a job");
        assert_eq!(job.output_level, 0);
        let runs: Vec<u64> = job.inputs.iter().map(|input| input.run_id).collect();
        // Bytes per run merged away: 2000, 1500, 1333 with runs 16 to 13; run 12 would make it
        // 2000.
        assert_eq!(runs, vec![16, 15, 14, 13], "run 12 left out");
        assert_eq!(job.output_run, OutputRun::Existing(16));
        // Runs 10, 15 and 16 on level 0, run 10 held: two free runs reach the trigger (2 in the
        // test context), but level 0 holds fewer than the trigger plus 2.
        let few = tree(&[files[0], files[5], files[6], files[7]]);
        let held_few = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![whole_run(0, &few.levels()[0].runs()[2])],
            output_level: 1,
            output_run: OutputRun::Existing(5),
            reason: String::new(),
            state: None,
            action: JobAction::Merge,
        }]);
        let job = policy.pick(&few, &CONTEXT, &held_few);
        assert!(
            job.as_ref().is_none_or(|job| job.output_level != 0),
            "{job:?}: level 0 under the trigger plus 2"
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
    fn files_within_the_overlap_below_move_down_together() {
        let policy = Leveling::new(10.0).expect("valid");
        // Level 1 (capacity 10,000) holds 15,000. File 1 has the least overlap; file 2 lies
        // within the range of the one level-2 file file 1 overlaps, so it joins the merge.
        let shape = tree(&[
            (1, 5, 1, "b", "c", 4000),
            (1, 5, 2, "d", "e", 3000),
            (1, 5, 3, "g", "h", 4000),
            (1, 5, 4, "m", "n", 4000),
            (2, 6, 7, "a", "f", 2000),
            (2, 6, 8, "g", "z", 40000),
        ]);
        let none = RunningCompactions::none();
        let job = policy.pick(&shape, &CONTEXT, &none).expect("a job");
        assert_eq!(job.output_level, 2);
        assert_eq!(job.inputs.len(), 2);
        assert_eq!(job.inputs[0].file_numbers, vec![1, 2]);
        assert_eq!(job.inputs[1].file_numbers, vec![7]);

        // With file 2 held by a running job (level 1 still over full without it), file 1 goes
        // alone.
        let held = CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 5,
                file_numbers: vec![2],
            }],
            output_level: 1,
            output_run: OutputRun::Existing(5),
            reason: "held".into(),
            state: None,
            action: JobAction::Merge,
        };
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::new(vec![held]))
            .expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![1]);
        assert_eq!(job.inputs[1].file_numbers, vec![7]);

        // A neighbour that would pull in another level-2 file stays (file 2 reaches file 8).
        let wider = tree(&[
            (1, 5, 1, "b", "c", 4000),
            (1, 5, 2, "d", "h", 3000),
            (1, 5, 4, "m", "n", 5000),
            (2, 6, 7, "a", "f", 2000),
            (2, 6, 8, "g", "z", 40000),
        ]);
        let job = policy.pick(&wider, &CONTEXT, &none).expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![1]);
        assert_eq!(job.inputs[1].file_numbers, vec![7]);
    }

    #[test]
    fn a_move_over_nothing_below_takes_up_to_four_adjacent_files() {
        let policy = Leveling::new(10.0).expect("valid");
        let none = RunningCompactions::none();
        // Level 1 (capacity 10,000) holds 21,000. File 1 overlaps level 2's file 20; files 2 to
        // 7 overlap nothing there. File 2 (least overlap, first in key order) moves with the
        // next three, and no more: at most four files a move.
        let mut files = vec![(1, 5, 1, "a", "b", 3000)];
        let names = ["c", "e", "g", "i", "k", "m"];
        for (i, name) in names.iter().enumerate() {
            files.push((1, 5, 2 + i as u64, name, name, 3000));
        }
        files.push((2, 6, 20, "a", "b", 9000));
        files.push((2, 6, 21, "x", "z", 9000));
        let job = policy.pick(&tree(&files), &CONTEXT, &none).expect("a job");
        assert_eq!(job.action, JobAction::Move, "{job:?}");
        assert_eq!(job.inputs.len(), 1);
        assert_eq!(job.inputs[0].file_numbers, vec![2, 3, 4, 5]);
        assert_eq!(
            (job.output_level, job.output_run),
            (2, OutputRun::Existing(6))
        );

        // A level-2 file between files 3 and 4 stops the move at file 3: the range of the
        // files moved, gaps included, overlaps nothing below.
        let mut gap = files.clone();
        gap.push((2, 6, 22, "f", "f", 100));
        let job = policy.pick(&tree(&gap), &CONTEXT, &none).expect("a job");
        assert_eq!(job.action, JobAction::Move, "{job:?}");
        assert_eq!(job.inputs[0].file_numbers, vec![2, 3]);

        // A file a running job holds stops it too (file 4 here).
        let held = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 5,
                file_numbers: vec![4],
            }],
            output_level: 1,
            output_run: OutputRun::Existing(5),
            reason: "held".into(),
            state: None,
            action: JobAction::Merge,
        }]);
        let job = policy.pick(&tree(&files), &CONTEXT, &held).expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![2, 3]);

        // At most 25 target files' bytes (25,000 here): two files of 9,000 bytes, not three.
        let big: Vec<_> = files
            .iter()
            .map(|&(level, run, number, low, high, bytes)| {
                (
                    level,
                    run,
                    number,
                    low,
                    high,
                    if level == 1 { 9000 } else { bytes },
                )
            })
            .collect();
        let job = policy.pick(&tree(&big), &CONTEXT, &none).expect("a job");
        assert_eq!(job.action, JobAction::Move, "{job:?}");
        assert_eq!(job.inputs[0].file_numbers, vec![2, 3]);
        let wide = CompactionContext {
            target_file_bytes: 10_000,
            ..CONTEXT
        };
        let job = policy.pick(&tree(&big), &wide, &none).expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![2, 3, 4, 5]);
    }

    #[test]
    fn a_move_extends_towards_smaller_keys_after_larger_ones() {
        // Files 1 to 5 of level 1 overlap nothing on level 2; a running job holds file 4.
        // Starting from file 3, the move takes no file to its right and files 2 and 1 to
        // its left, in key order.
        let shape = tree(&[
            (1, 5, 1, "a", "a", 100),
            (1, 5, 2, "c", "c", 100),
            (1, 5, 3, "e", "e", 100),
            (1, 5, 4, "g", "g", 100),
            (1, 5, 5, "i", "i", 100),
            (2, 6, 9, "x", "z", 100),
        ]);
        let held = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 5,
                file_numbers: vec![4],
            }],
            output_level: 1,
            output_run: OutputRun::Existing(5),
            reason: "held".into(),
            state: None,
            action: JobAction::Merge,
        }]);
        let run = &shape.levels()[1].runs()[0];
        let third = Arc::clone(&run.files()[2]);
        let numbers = |files: Vec<Arc<FileMetadata>>| -> Vec<u64> {
            files.iter().map(|f| f.number()).collect()
        };
        let moved = extended_move(&shape, &held, 1, run, &third, u64::MAX);
        assert_eq!(numbers(moved), vec![1, 2, 3]);
        // Without the held file: files 3, 4, 5 to the right, then file 2 (four in all).
        let none = RunningCompactions::none();
        let moved = extended_move(&shape, &none, 1, run, &third, u64::MAX);
        assert_eq!(numbers(moved), vec![2, 3, 4, 5]);
        // A file that overlaps the next level moves alone.
        let over = tree(&[
            (1, 5, 1, "a", "a", 100),
            (1, 5, 2, "c", "c", 100),
            (2, 6, 9, "c", "z", 100),
        ]);
        let run = &over.levels()[1].runs()[0];
        let second = Arc::clone(&run.files()[1]);
        assert_eq!(
            numbers(extended_move(&over, &none, 1, run, &second, u64::MAX)),
            vec![2]
        );
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
