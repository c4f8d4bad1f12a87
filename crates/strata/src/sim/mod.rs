//! The compaction simulator behind `strata simulate`: the real compaction policy and filter
//! allocator run on a synthetic tree with no I/O (the idea of mini-lsm's compaction simulator),
//! reporting the tree after every flush and every compaction, then write amplification, sorted
//! runs, levels and filter bits per key.
//!
//! What is real: every decision. Jobs come from [`CompactionPolicy::pick`] (state-only jobs
//! included, logged as the engine logs them; with [`SimConfig::max_background_compactions`]
//! `W > 1` up to `W` jobs are in flight, shown to the policy as [`RunningCompactions`], and a job
//! that conflicts with them is postponed as the engine postpones it). Every new file's bits per
//! key come from [`FilterAllocator::allocate`], asked once per flush or compaction with the tree
//! the outputs join, as `compaction::executor::finish_outputs` asks it; the file records what the
//! table builder would build ([`built_file_bits_per_key`]). Flushes are installed with the
//! version builder ([`Version::to_builder`]) and jobs with [`Version::with_job_applied`], which
//! refuse what the engine refuses (a job that breaks the recency order, overlapping files in a
//! run). Whether a job is a trivial move (the file moves, nothing is written) is the policy's
//! decision, the job's [`JobAction`]; a move the tree does not allow is merged, as the engine
//! merges it.
//!
//! What is modelled (the data):
//! * Keys are `u64`s (8 bytes, big-endian) in a key space of `K` keys ([`SimConfig::key_space`],
//!   default [`SimConfig::num`]). A flush writes `B / E` entries (a memtable of `B` bytes holds
//!   that many entries of `E` bytes), modelled as distinct uniform keys (a memtable keeps every
//!   version of a key, but two writes of one key in one memtable are rare when `K` is well above
//!   `B / E`; a file's density is capped at one entry per key). Its key range is the smallest and
//!   largest of them, drawn from the order statistics of `B / E` uniform keys with the caller's
//!   [`UniformDraws`] (the library has no `rand` dependency; `strata simulate` passes a seeded
//!   generator). `num` entries make `ceil(num / (B / E))` flushes.
//! * A compaction's output is the merge of its inputs (`merge.rs`). Overwrite model: each input
//!   file holds a uniform random subset of the keys in its range, independently of the others, so
//!   on a stretch of keys covered by files with densities `d_i = entries_i / range_i` the merge
//!   keeps `width * (1 - Π (1 - d_i))` distinct keys (the expected size of a union of independent
//!   random subsets). Outputs hold the rounded total, at most the sum of the inputs, cut into
//!   files of [`SimConfig::target_file_bytes`] whose key ranges divide the covered keys by
//!   expected entries; an output joining a leveled run above one run is cut as the engine's
//!   executor cuts it (`compaction::output_cuts`): where it crosses a file boundary of the level
//!   below once it holds half the target (plus 5% per boundary crossed, up to 90%), at twice the
//!   target at most where the job overlaps files below.
//! * A file's bytes are its data, `entries * E`; its filter's bytes, `bits_per_key * entries / 8`
//!   rounded up, are reported apart. Write amplification is (bytes flushed + bytes compacted) /
//!   bytes flushed.
//!
//! The simulator predicts no lookup cost: the cost models do (`crate::model`, DESIGN.md §7), and
//! `strata whatif` and `strata tune` print their predictions.

mod merge;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::alloc::FilterAllocatorKind;
use crate::alloc::{
    built_file_bits_per_key, FilterAllocator, FilterJob, JobInput, JobKind, NewFile,
};
use crate::compaction::output_cuts::NextLevelBoundaries;
use crate::compaction::{
    CompactionContext, CompactionJob, CompactionPolicy, JobAction, OutputRun, RunningCompactions,
    WritePressure,
};
use crate::compaction::{CompactionKind, CompactionSettings};
use crate::error::{Error, Result};
use crate::random::SplitMix64;

/// The registry's filter settings (`crate::policy::FilterSettings`), named here so the simulator
/// needs nothing above the policies it runs (the cost models replay designs on it).
type FilterSettings = crate::alloc::FilterSettings<CompactionKind>;
use crate::version::job::trivial_move_files;
use crate::version::{FileMetadata, Version};

use merge::{key_number, merge};

/// Jobs one flush may set off before the simulation calls the policy diverging.
const MAX_JOBS_PER_FLUSH: usize = 100_000;

/// Uniform draws in `[0, 1)`: where the flushed files' key ranges get their randomness. The same
/// draws give the same simulation.
pub type UniformDraws = Box<dyn FnMut() -> f64>;

/// What a simulation runs: the policies (as the registry names them, [`crate::policy`]) and the
/// data model (module docs). The field names are `strata simulate`'s flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Compaction policy.
    pub compaction: CompactionKind,
    /// Filter allocator.
    pub filter_policy: FilterAllocatorKind,
    /// Filter budget in bits per key.
    pub bits_per_key: f64,
    /// Entries written (each flush takes `write_buffer_bytes / entry_bytes` of them).
    pub num: u64,
    /// Bytes of a memtable when it is flushed (the size of every flushed file).
    pub write_buffer_bytes: u64,
    /// Size ratio `T` between adjacent levels.
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (DESIGN.md §5.4).
    pub garnering_c: f64,
    /// Bytes of one entry (key, value and overhead).
    pub entry_bytes: u64,
    /// Distinct keys writes are drawn from (`None`: `num`).
    pub key_space: Option<u64>,
    /// Compaction output file size (`None`: `write_buffer_bytes`).
    pub target_file_bytes: Option<u64>,
    /// Level-0 runs that trigger a level-0 compaction.
    pub level0_compaction_trigger: usize,
    /// Jobs in flight at once (the policy sees the others when it picks).
    pub max_background_compactions: usize,
}

/// Uniform draws in `[0, 1)` from SplitMix64 (the library has no `rand`): the same seed, the same
/// key ranges. What the cost models' replays draw from (`Db::predicted_write_amplification`,
/// `model::writes::replay_design_writes`).
pub fn seeded_draws(seed: u64) -> UniformDraws {
    let mut stream =
        SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D);
    Box::new(move || stream.unit())
}

/// A [`SimConfig`] field out of range: which one and what it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidSetting {
    /// The field's name (`entry_bytes`).
    pub field: &'static str,
    /// What it must be (`must be at least 1`).
    pub requirement: &'static str,
}

impl fmt::Display for InvalidSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.requirement)
    }
}

impl std::error::Error for InvalidSetting {}

impl From<InvalidSetting> for Error {
    fn from(invalid: InvalidSetting) -> Self {
        Error::InvalidArgument(invalid.to_string())
    }
}

impl SimConfig {
    /// The first field out of range, if any (the policies' own settings are checked when they
    /// are built, by [`Simulation::new`]).
    pub fn check(&self) -> std::result::Result<(), InvalidSetting> {
        let invalid = |field, requirement| Err(InvalidSetting { field, requirement });
        if self.num == 0 {
            return invalid("num", "must be at least 1");
        }
        if self.entry_bytes == 0 {
            return invalid("entry_bytes", "must be at least 1");
        }
        if self.write_buffer_bytes < self.entry_bytes {
            return invalid("write_buffer_bytes", "must hold at least one entry");
        }
        if self.max_background_compactions == 0 {
            return invalid("max_background_compactions", "must be at least 1");
        }
        if self.level0_compaction_trigger == 0 {
            return invalid("level0_compaction_trigger", "must be at least 1");
        }
        let key_space = self.key_space();
        if key_space == 0 || key_space > 1 << 53 {
            return invalid("key_space", "must be between 1 and 2^53");
        }
        if self.target_file_bytes() == 0 {
            return invalid("target_file_bytes", "must be at least 1");
        }
        Ok(())
    }

    /// Distinct keys writes are drawn from.
    pub fn key_space(&self) -> u64 {
        self.key_space.unwrap_or(self.num)
    }

    /// Compaction output file size.
    pub fn target_file_bytes(&self) -> u64 {
        self.target_file_bytes.unwrap_or(self.write_buffer_bytes)
    }

    /// Entries one flush writes (`write_buffer_bytes / entry_bytes`; 0 if `entry_bytes` is).
    pub fn flush_entries(&self) -> u64 {
        self.write_buffer_bytes
            .checked_div(self.entry_bytes)
            .unwrap_or(0)
    }
}

/// One level of the tree after a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelShape {
    /// Level index.
    pub level: usize,
    /// Sorted runs.
    pub runs: usize,
    /// Table files.
    pub files: usize,
    /// Entries.
    pub entries: u64,
    /// Data bytes.
    pub bytes: u64,
    /// Filter bits per key over the level (entry-weighted).
    pub bits_per_key: f64,
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// A memtable flushed to a new level-0 run.
    Flush,
    /// A compaction merged files.
    Compaction,
    /// A compaction moved one file down without rewriting it.
    TrivialMove,
    /// A state-only decision of the policy (`CompactionJob::state_only`).
    PolicyState,
    /// A job that conflicted with those in flight (left for a later pick, as the engine does).
    Postponed,
}

/// The tree after one flush or job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Step number, from 1.
    pub step: u64,
    /// What happened.
    pub kind: StepKind,
    /// "flush" or the job's reason.
    pub reason: String,
    /// Files the step read.
    pub files_in: usize,
    /// Files the step wrote or moved.
    pub files_out: usize,
    /// Data bytes the step wrote.
    pub bytes_written: u64,
    /// The policy's write pressure after the step (`none`, `slowdown`, `stop`).
    pub write_pressure: &'static str,
    /// Non-empty levels.
    pub levels: Vec<LevelShape>,
}

/// The simulation's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// `compaction_policy.name()`.
    pub compaction: String,
    /// `filter_allocator.name()`.
    pub filter_allocator: String,
    /// Flushes.
    pub flushes: u64,
    /// Compactions that rewrote files.
    pub compactions: u64,
    /// Files moved down by trivial moves (a move may take several adjacent files).
    pub trivial_moves: u64,
    /// State-only decisions.
    pub policy_states: u64,
    /// Jobs postponed for a conflict with those in flight.
    pub postponed: u64,
    /// The most jobs in flight at once (at most [`SimConfig::max_background_compactions`]).
    pub most_jobs_in_flight: usize,
    /// Entries flushed.
    pub entries_flushed: u64,
    /// Entries in the tree at the end.
    pub entries: u64,
    /// Data bytes flushed.
    pub bytes_flushed: u64,
    /// Data bytes written by compactions.
    pub bytes_compacted: u64,
    /// (bytes flushed + bytes compacted) / bytes flushed.
    pub write_amplification: f64,
    /// Sorted runs at the end.
    pub sorted_runs: usize,
    /// Non-empty levels at the end.
    pub levels: usize,
    /// Filter bits per key in use over the whole tree (entry-weighted; skipped filters and
    /// modules not in use count 0): what the budget caps.
    pub bits_per_key: f64,
    /// Filter bits per key on disk over the whole tree (entry-weighted).
    pub bits_per_key_on_disk: f64,
    /// The allocator's budget.
    pub bits_per_key_budget: f64,
    /// Filter bytes of the tree.
    pub filter_bytes: u64,
}

/// A synthetic tree driven by a real policy and allocator.
pub struct Simulation {
    policy: Arc<dyn CompactionPolicy>,
    allocator: Arc<dyn FilterAllocator>,
    context: CompactionContext,
    tree: Version,
    uniform: UniformDraws,
    key_space: u64,
    entry_bytes: u64,
    flush_entries: u64,
    /// Entries the simulation writes ([`SimConfig::num`]).
    num: u64,
    flushes_left: u64,
    target_file_entries: u64,
    max_in_flight: usize,
    next_file_number: u64,
    next_run_id: u64,
    next_sequence: u64,
    step: u64,
    summary: Summary,
}

impl Simulation {
    /// A simulation of `config`, its key ranges drawn from `uniform`; an
    /// [`Error::InvalidArgument`] for a field out of range ([`SimConfig::check`]) or a policy
    /// setting its registry refuses.
    pub fn new(config: &SimConfig, uniform: UniformDraws) -> Result<Self> {
        config.check()?;
        let key_space = config.key_space();
        let flush_entries = config.flush_entries();
        let policy = config.compaction.build(&CompactionSettings {
            garnering_c: config.garnering_c,
            ..CompactionSettings::with_size_ratio(config.size_ratio)
        })?;
        let allocator = config.filter_policy.build(&FilterSettings {
            bits_per_key: config.bits_per_key,
            compaction: config.compaction,
            size_ratio: config.size_ratio,
            expected_entries: config.num.min(key_space),
            buffer_entries: flush_entries,
            budget_bytes: None,
            disk_modules: None,
        })?;
        let mut context = CompactionContext::new(config.write_buffer_bytes);
        context.level0_compaction_trigger = config.level0_compaction_trigger;
        context.target_file_bytes = config.target_file_bytes();
        let summary = Summary {
            compaction: policy.name(),
            filter_allocator: allocator.name(),
            flushes: 0,
            compactions: 0,
            trivial_moves: 0,
            policy_states: 0,
            postponed: 0,
            most_jobs_in_flight: 0,
            entries_flushed: 0,
            entries: 0,
            bytes_flushed: 0,
            bytes_compacted: 0,
            write_amplification: 0.0,
            sorted_runs: 0,
            levels: 0,
            bits_per_key: 0.0,
            bits_per_key_on_disk: 0.0,
            bits_per_key_budget: allocator.bits_per_key_budget(),
            filter_bytes: 0,
        };
        Ok(Simulation {
            policy,
            allocator,
            context,
            tree: Version::default(),
            uniform,
            key_space,
            entry_bytes: config.entry_bytes,
            flush_entries,
            num: config.num,
            flushes_left: config.num.div_ceil(flush_entries),
            target_file_entries: (config.target_file_bytes() / config.entry_bytes).max(1),
            max_in_flight: config.max_background_compactions,
            next_file_number: 1,
            next_run_id: 1,
            next_sequence: 1,
            step: 0,
            summary,
        })
    }

    /// Replays `policy` — a live database's, as it was built, with whatever state it keeps in
    /// the tree — instead of the one [`SimConfig::compaction`] names (the cost models'
    /// prediction of a database's write amplification, `Db::predicted_write_amplification`).
    pub fn with_policy(mut self, policy: Arc<dyn CompactionPolicy>) -> Self {
        self.summary.compaction = policy.name();
        self.policy = policy;
        self
    }

    /// Flushes `entries` entries each (at least 1) instead of `write_buffer_bytes / entry_bytes`,
    /// the write buffer still sizing the policy's levels: a memtable holds fewer entries than its
    /// bytes over a table file's bytes per entry (its nodes take more room), and the engine's own
    /// count of flushes says how many. The flushes left follow: `num / entries`, rounded up.
    pub fn with_flush_entries(mut self, entries: u64) -> Self {
        let entries = entries.max(1);
        self.flushes_left = self.num.div_ceil(entries);
        self.flush_entries = entries;
        self
    }

    /// Runs every flush and the compactions each sets off, calling `observe` after every step
    /// with the step and the tree after it (an error from `observe` ends the run); returns the
    /// totals.
    pub fn run<E: From<Error>>(
        mut self,
        observe: &mut dyn FnMut(&Step, &Version) -> std::result::Result<(), E>,
    ) -> std::result::Result<Summary, E> {
        while self.flushes_left > 0 {
            self.flushes_left -= 1;
            let step = self.flush()?;
            observe(&step, &self.tree)?;
            self.compact(observe)?;
        }
        let tree = &self.tree;
        let summary = &mut self.summary;
        summary.entries = tree.entries();
        summary.write_amplification = if summary.bytes_flushed == 0 {
            0.0
        } else {
            (summary.bytes_flushed + summary.bytes_compacted) as f64 / summary.bytes_flushed as f64
        };
        summary.sorted_runs = tree.run_count();
        summary.levels = tree.levels().iter().filter(|l| !l.is_empty()).count();
        summary.bits_per_key_on_disk = weighted_bits_per_key(tree.files().map(|(_, _, f)| f));
        let (in_use, entries) = tree
            .files()
            .fold((0.0, 0u64), |(bits, entries), (_, run, f)| {
                (
                    bits + self.allocator.bits_per_key_in_use(run, f) * f.entries() as f64,
                    entries + f.entries(),
                )
            });
        summary.bits_per_key = if entries == 0 {
            0.0
        } else {
            in_use / entries as f64
        };
        summary.filter_bytes = tree.files().map(|(_, _, f)| f.filter_bytes()).sum();
        Ok(self.summary)
    }

    fn flush(&mut self) -> Result<Step> {
        let entries = self.flush_entries;
        let (smallest, largest) = self.flushed_key_range(entries);
        let number = self.new_file_number();
        let run_id = self.new_run_id();
        let outputs = [NewFile {
            file_number: number,
            entries,
            access: None,
            filter_layout: crate::filter::FilterLayout::default(),
        }];
        let job = FilterJob {
            kind: JobKind::Flush,
            inputs: &[],
            output_level: 0,
            output_run_id: run_id,
            outputs: &outputs,
        };
        let bits = self.allocate(&job)?;
        let first_sequence = self.next_sequence;
        self.next_sequence += entries;
        let file = self
            .file(number, 0, smallest, largest, entries, bits.first().copied())
            .with_sequences(first_sequence, self.next_sequence - 1);
        self.tree = self.tree.to_builder().add_file(0, run_id, file).build()?;
        let bytes = entries * self.entry_bytes;
        self.summary.flushes += 1;
        self.summary.entries_flushed += entries;
        self.summary.bytes_flushed += bytes;
        Ok(self.step(StepKind::Flush, "flush".into(), 0, 1, bytes))
    }

    /// Picks and completes jobs until the policy picks none: up to `max_in_flight` picked before
    /// the oldest completes, each picked with the others shown as running.
    fn compact<E: From<Error>>(
        &mut self,
        observe: &mut dyn FnMut(&Step, &Version) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut in_flight: VecDeque<CompactionJob> = VecDeque::new();
        let mut jobs = 0;
        loop {
            while in_flight.len() < self.max_in_flight {
                let running = RunningCompactions::new(in_flight.iter().cloned().collect());
                let Some(job) = self.policy.pick(&self.tree, &self.context, &running) else {
                    break;
                };
                jobs += 1;
                if jobs > MAX_JOBS_PER_FLUSH {
                    return Err(Error::InvalidArgument(format!(
                        "{} picked more than {MAX_JOBS_PER_FLUSH} jobs after one flush",
                        self.summary.compaction
                    ))
                    .into());
                }
                if job.is_state_only() {
                    // The engine logs a state-only decision at once, under the pick lock.
                    self.tree = self.tree.with_job_applied(&job, 0, Vec::new())?;
                    self.summary.policy_states += 1;
                    let step = self.step(StepKind::PolicyState, job.reason, 0, 0, 0);
                    observe(&step, &self.tree)?;
                    continue;
                }
                if let Some(conflict) = running.conflict(&job) {
                    self.summary.postponed += 1;
                    let reason = format!("{} (postponed: {conflict})", job.reason);
                    let step = self.step(StepKind::Postponed, reason, 0, 0, 0);
                    observe(&step, &self.tree)?;
                    break;
                }
                in_flight.push_back(job);
                let most = &mut self.summary.most_jobs_in_flight;
                *most = (*most).max(in_flight.len());
            }
            let Some(job) = in_flight.pop_front() else {
                return Ok(());
            };
            let step = self.complete(&job)?;
            observe(&step, &self.tree)?;
        }
    }

    fn complete(&mut self, job: &CompactionJob) -> Result<Step> {
        let mut inputs: Vec<(usize, u64, Arc<FileMetadata>)> = Vec::new();
        for input in &job.inputs {
            for &number in &input.file_numbers {
                let file = self
                    .tree
                    .levels()
                    .get(input.level)
                    .and_then(|level| level.runs().iter().find(|r| r.id() == input.run_id))
                    .and_then(|run| run.files().iter().find(|f| f.number() == number))
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "job ({}) names file {number} of run {} on level {}, not in the tree",
                            job.reason, input.run_id, input.level
                        ))
                    })?;
                inputs.push((input.level, input.run_id, Arc::clone(file)));
            }
        }
        let moved = match job.action {
            JobAction::Move => trivial_move_files(job, &self.tree),
            JobAction::Merge => None,
        };
        if let Some(files) = moved {
            let moved: Vec<FileMetadata> = files.iter().map(|file| file.copy_facts()).collect();
            let count = moved.len();
            let new_run_id = self.next_run_id;
            self.tree = self.tree.with_job_applied(job, new_run_id, moved)?;
            if job.output_run == OutputRun::New {
                self.next_run_id += 1;
            }
            self.summary.trivial_moves += count as u64;
            return Ok(self.step(StepKind::TrivialMove, job.reason.clone(), count, count, 0));
        }
        let output_run_id = match job.output_run {
            OutputRun::Existing(id) => id,
            OutputRun::New => self.new_run_id(),
        };
        let input_files: Vec<&FileMetadata> = inputs.iter().map(|(_, _, f)| f.as_ref()).collect();
        // The engine's executor cuts a leveled output at the boundaries of the files below
        // (`compaction::output_cuts`), on the tree as it is before the job.
        let below: Option<Vec<(u64, u64)>> =
            NextLevelBoundaries::for_job(&self.tree, job).map(|below| {
                let ranges = below.file_ranges().iter();
                ranges
                    .map(|&(smallest, largest)| (key_number(smallest), key_number(largest)))
                    .collect()
            });
        let pieces = merge(&input_files, self.target_file_entries, below.as_deref());
        let numbers: Vec<u64> = pieces.iter().map(|_| self.new_file_number()).collect();
        let outputs: Vec<NewFile> = pieces
            .iter()
            .zip(&numbers)
            .map(|(piece, &number)| NewFile {
                file_number: number,
                entries: piece.entries,
                access: None,
                filter_layout: crate::filter::FilterLayout::default(),
            })
            .collect();
        let job_inputs: Vec<JobInput> = inputs
            .iter()
            .map(|(level, run_id, file)| JobInput {
                level: *level,
                run_id: *run_id,
                file_number: file.number(),
            })
            .collect();
        let filter_job = FilterJob {
            kind: JobKind::Compaction,
            inputs: &job_inputs,
            output_level: job.output_level,
            output_run_id,
            outputs: &outputs,
        };
        let bits = self.allocate(&filter_job)?;
        let smallest_sequence = input_files.iter().map(|f| f.smallest_sequence());
        let smallest_sequence = smallest_sequence.min().unwrap_or(0);
        let largest_sequence = input_files.iter().map(|f| f.largest_sequence()).max();
        let largest_sequence = largest_sequence.unwrap_or(0);
        let mut files = Vec::with_capacity(pieces.len());
        let mut bytes = 0;
        for ((piece, &number), bits) in pieces.iter().zip(&numbers).zip(bits) {
            bytes += piece.entries * self.entry_bytes;
            files.push(
                self.file(
                    number,
                    job.output_level,
                    piece.smallest,
                    piece.largest,
                    piece.entries,
                    Some(bits),
                )
                .with_sequences(smallest_sequence, largest_sequence),
            );
        }
        let files_out = files.len();
        self.tree = self.tree.with_job_applied(job, output_run_id, files)?;
        self.summary.compactions += 1;
        self.summary.bytes_compacted += bytes;
        Ok(self.step(
            StepKind::Compaction,
            job.reason.clone(),
            inputs.len(),
            files_out,
            bytes,
        ))
    }

    fn allocate(&self, job: &FilterJob<'_>) -> Result<Vec<f64>> {
        let bits = self.allocator.allocate(&self.tree, job);
        if bits.len() != job.outputs.len() {
            return Err(Error::InvalidArgument(format!(
                "filter allocator {} answered {} bits-per-key values for {} files",
                self.summary.filter_allocator,
                bits.len(),
                job.outputs.len()
            )));
        }
        Ok(bits)
    }

    /// A new file's metadata on `level`; `bits` is the allocator's answer, recorded as the table
    /// builder would build it.
    fn file(
        &self,
        number: u64,
        level: usize,
        smallest: u64,
        largest: u64,
        entries: u64,
        bits: Option<f64>,
    ) -> FileMetadata {
        let module_bits = self.allocator.filter_module_bits_per_key(level);
        let bits_per_key = built_file_bits_per_key(bits.unwrap_or(0.0), module_bits);
        let filter_bytes = (bits_per_key * entries as f64 / 8.0).ceil() as u64;
        FileMetadata::new(number, &smallest.to_be_bytes(), &largest.to_be_bytes())
            .with_entries(entries)
            .with_file_bytes(entries * self.entry_bytes)
            .with_filter(bits_per_key, filter_bytes)
    }

    /// The smallest and largest of `entries` distinct uniform keys of the key space: drawn from
    /// their order statistics (`P(min > x) = (1 - x)^n`, so `min = 1 - U^(1/n)` of the space,
    /// and symmetrically the max), not by drawing every key.
    fn flushed_key_range(&mut self, entries: u64) -> (u64, u64) {
        let last = self.key_space - 1;
        if entries >= self.key_space {
            return (0, last);
        }
        let n = entries as f64;
        let space = self.key_space as f64;
        let low = (self.uniform)();
        let high = (self.uniform)();
        let smallest = (space * (1.0 - low.powf(1.0 / n))).floor() as u64;
        let largest = (space * high.powf(1.0 / n)).floor() as u64;
        let smallest = smallest.min(last);
        let largest = largest.min(last).max(smallest);
        (smallest, largest)
    }

    fn new_file_number(&mut self) -> u64 {
        self.next_file_number += 1;
        self.next_file_number - 1
    }

    fn new_run_id(&mut self) -> u64 {
        self.next_run_id += 1;
        self.next_run_id - 1
    }

    fn step(
        &mut self,
        kind: StepKind,
        reason: String,
        files_in: usize,
        files_out: usize,
        bytes_written: u64,
    ) -> Step {
        self.step += 1;
        let write_pressure = match self.policy.write_pressure(&self.tree, &self.context) {
            WritePressure::None => "none",
            WritePressure::Slowdown => "slowdown",
            WritePressure::Stop => "stop",
        };
        Step {
            step: self.step,
            kind,
            reason,
            files_in,
            files_out,
            bytes_written,
            write_pressure,
            levels: level_shapes(&self.tree),
        }
    }
}

/// The non-empty levels of `tree`.
pub fn level_shapes(tree: &Version) -> Vec<LevelShape> {
    tree.levels()
        .iter()
        .enumerate()
        .filter(|(_, level)| !level.is_empty())
        .map(|(index, level)| LevelShape {
            level: index,
            runs: level.runs().len(),
            files: level.file_count(),
            entries: level.entries(),
            bytes: level.bytes(),
            bits_per_key: weighted_bits_per_key(
                level.runs().iter().flat_map(|run| run.files().iter()),
            ),
        })
        .collect()
}

/// Filter bits per key over `files`, weighted by entries.
fn weighted_bits_per_key<'a>(files: impl Iterator<Item = &'a Arc<FileMetadata>>) -> f64 {
    let (bits, entries) = files.fold((0.0, 0u64), |(bits, entries), file| {
        (
            bits + file.bits_per_key() * file.entries() as f64,
            entries + file.entries(),
        )
    });
    if entries == 0 {
        0.0
    } else {
        bits / entries as f64
    }
}
