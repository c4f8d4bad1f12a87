//! `strata simulate`: the real compaction policy and filter allocator run on a synthetic tree with
//! no I/O (the idea of mini-lsm's compaction simulator), printing the tree after every flush and
//! every compaction, then write amplification, sorted runs, levels and filter bits per key.
//!
//! What is real: every decision. Jobs come from [`CompactionPolicy::pick`] (state-only jobs
//! included, logged as the engine logs them; with `--max-background-compactions W > 1` up to `W`
//! jobs are in flight, shown to the policy as [`RunningCompactions`], and a job that conflicts
//! with them is postponed as the engine postpones it). Every new file's bits per key come from
//! [`FilterAllocator::allocate`], asked once per flush or compaction with the tree the outputs
//! join, as `compaction::executor::finish_outputs` asks it; the file records what the table
//! builder would build ([`built_file_bits_per_key`]). Jobs are installed with
//! [`Version::with_job_applied`], which refuses what the engine refuses (a job that breaks the
//! recency order, overlapping files in a run). A single-file job into a deeper level with no
//! overlap is a trivial move, as in the engine: the file moves, nothing is written.
//!
//! What is modelled (the data):
//! * Keys are `u64`s (8 bytes, big-endian) in a key space of `K` keys (`--key-space`, default
//!   `--num`). A flush writes `B / E` entries (a memtable of `B` bytes holds that many entries of
//!   `E` bytes), modelled as distinct uniform keys (a memtable keeps every version of a key, but
//!   two writes of one key in one memtable are rare when `K` is well above `B / E`; a file's
//!   density is capped at one entry per key). Its key range is the smallest and largest of them,
//!   drawn from the order statistics of `B / E` uniform keys with a seeded RNG (`--seed`).
//!   `--num` entries make `ceil(num / (B / E))` flushes.
//! * A compaction's output is the merge of its inputs. Overwrite model: each input file holds a
//!   uniform random subset of the keys in its range, independently of the others, so on a stretch
//!   of keys covered by files with densities `d_i = entries_i / range_i` the merge keeps
//!   `width * (1 - Π (1 - d_i))` distinct keys (the expected size of a union of independent
//!   random subsets). Outputs hold the rounded total, at most the sum of the inputs, cut into
//!   files of `--target-file-bytes` whose key ranges divide the covered keys by expected entries.
//! * A file's bytes are its data, `entries * E`; its filter's bytes, `bits_per_key * entries / 8`
//!   rounded up, are reported apart. Write amplification is (bytes flushed + bytes compacted) /
//!   bytes flushed.
//!
//! The predicted lookup cost is not printed here: `strata whatif` and `strata tune` print the cost
//! models' predictions (DESIGN.md §7).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use strata::alloc::{
    built_file_bits_per_key, FilterAllocator, FilterJob, JobInput, JobKind, NewFile,
};
use strata::compaction::{
    CompactionContext, CompactionJob, CompactionPolicy, OutputRun, RunningCompactions,
    WritePressure,
};
use strata::version::{FileMetadata, Version};

use crate::error::{CliError, CliResult};
use crate::policies::{CompactionKind, FilterAllocatorKind, FilterSettings};

/// Jobs one flush may set off before the simulation calls the policy diverging.
const MAX_JOBS_PER_FLUSH: usize = 100_000;

/// `strata simulate` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// Compaction policy.
    #[arg(long, value_enum, default_value = "leveling")]
    pub compaction: CompactionKind,
    /// Filter allocator.
    #[arg(long, value_enum, default_value = "elastic")]
    pub filter_policy: FilterAllocatorKind,
    /// Filter budget in bits per key.
    #[arg(long, default_value_t = 10.0)]
    pub bits_per_key: f64,
    /// Entries written (each flush takes `write_buffer_bytes / entry_bytes` of them).
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Bytes of a memtable when it is flushed (the size of every flushed file).
    #[arg(long, default_value_t = 4 << 20)]
    pub write_buffer_bytes: u64,
    /// Size ratio `T` between adjacent levels.
    #[arg(long, default_value_t = 10.0)]
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (DESIGN.md §5.4).
    #[arg(long, default_value_t = crate::policies::DEFAULT_GARNERING_C)]
    pub garnering_c: f64,
    /// Bytes of one entry (key, value and overhead).
    #[arg(long, default_value_t = 116)]
    pub entry_bytes: u64,
    /// Distinct keys writes are drawn from (default: `--num`).
    #[arg(long)]
    pub key_space: Option<u64>,
    /// Compaction output file size (default: `--write-buffer-bytes`).
    #[arg(long)]
    pub target_file_bytes: Option<u64>,
    /// Level-0 runs that trigger a level-0 compaction.
    #[arg(long, default_value_t = 4)]
    pub level0_compaction_trigger: usize,
    /// Jobs in flight at once (the policy sees the others when it picks).
    #[arg(long, default_value_t = 1)]
    pub max_background_compactions: usize,
    /// Seed of the key-range draws.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print one JSON object per step and a summary object.
    #[arg(long)]
    pub json: bool,
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
    /// Trivial moves.
    pub trivial_moves: u64,
    /// State-only decisions.
    pub policy_states: u64,
    /// Jobs postponed for a conflict with those in flight.
    pub postponed: u64,
    /// The most jobs in flight at once (at most `--max-background-compactions`).
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
    rng: StdRng,
    key_space: u64,
    entry_bytes: u64,
    flush_entries: u64,
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
    /// A simulation with `args`' policies and data model; `Err` for invalid arguments.
    pub fn new(args: &SimulateArgs) -> CliResult<Self> {
        let invalid = |what: &str| Err(CliError::InvalidArgument(what.to_string()));
        if args.num == 0 {
            return invalid("--num must be at least 1");
        }
        if args.entry_bytes == 0 {
            return invalid("--entry-bytes must be at least 1");
        }
        if args.write_buffer_bytes < args.entry_bytes {
            return invalid("--write-buffer-bytes must hold at least one entry");
        }
        if args.max_background_compactions == 0 {
            return invalid("--max-background-compactions must be at least 1");
        }
        if args.level0_compaction_trigger == 0 {
            return invalid("--level0-compaction-trigger must be at least 1");
        }
        let key_space = args.key_space.unwrap_or(args.num);
        if key_space == 0 || key_space > 1 << 53 {
            return invalid("--key-space must be between 1 and 2^53");
        }
        let target_file_bytes = args.target_file_bytes.unwrap_or(args.write_buffer_bytes);
        if target_file_bytes == 0 {
            return invalid("--target-file-bytes must be at least 1");
        }
        let flush_entries = args.write_buffer_bytes / args.entry_bytes;
        let policy = args
            .compaction
            .build(&crate::policies::CompactionSettings {
                size_ratio: args.size_ratio,
                garnering_c: args.garnering_c,
                ecotune: Default::default(),
            })?;
        let allocator = args.filter_policy.build(&FilterSettings {
            bits_per_key: args.bits_per_key,
            compaction: args.compaction,
            size_ratio: args.size_ratio,
            expected_entries: args.num.min(key_space),
            buffer_entries: flush_entries,
            budget_bytes: None,
            disk_modules: None,
        })?;
        let mut context = CompactionContext::new(args.write_buffer_bytes);
        context.level0_compaction_trigger = args.level0_compaction_trigger;
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
            rng: StdRng::seed_from_u64(args.seed),
            key_space,
            entry_bytes: args.entry_bytes,
            flush_entries,
            flushes_left: args.num.div_ceil(flush_entries),
            target_file_entries: (target_file_bytes / args.entry_bytes).max(1),
            max_in_flight: args.max_background_compactions,
            next_file_number: 1,
            next_run_id: 1,
            next_sequence: 1,
            step: 0,
            summary,
        })
    }

    /// Runs every flush and the compactions each sets off, calling `observe` after every step
    /// with the step and the tree after it; returns the totals.
    pub fn run(
        mut self,
        observe: &mut dyn FnMut(&Step, &Version) -> CliResult<()>,
    ) -> CliResult<Summary> {
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

    fn flush(&mut self) -> CliResult<Step> {
        let entries = self.flush_entries;
        let (smallest, largest) = self.flushed_key_range(entries);
        let number = self.new_file_number();
        let run_id = self.new_run_id();
        let outputs = [NewFile {
            file_number: number,
            entries,
            access: None,
            filter_layout: strata::FilterLayout::default(),
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
            .file(number, smallest, largest, entries, bits.first().copied())
            .with_sequences(first_sequence, self.next_sequence - 1);
        self.tree = self
            .tree
            .to_builder()
            .add_file(0, run_id, file)
            .build()
            .map_err(CliError::from)?;
        let bytes = entries * self.entry_bytes;
        self.summary.flushes += 1;
        self.summary.entries_flushed += entries;
        self.summary.bytes_flushed += bytes;
        Ok(self.step(StepKind::Flush, "flush".into(), 0, 1, bytes))
    }

    /// Picks and completes jobs until the policy picks none: up to `max_in_flight` picked before
    /// the oldest completes, each picked with the others shown as running.
    fn compact(
        &mut self,
        observe: &mut dyn FnMut(&Step, &Version) -> CliResult<()>,
    ) -> CliResult<()> {
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
                    return Err(CliError::InvalidArgument(format!(
                        "{} picked more than {MAX_JOBS_PER_FLUSH} jobs after one flush",
                        self.summary.compaction
                    )));
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

    fn complete(&mut self, job: &CompactionJob) -> CliResult<Step> {
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
                        CliError::InvalidArgument(format!(
                            "job ({}) names file {number} of run {} on level {}, not in the tree",
                            job.reason, input.run_id, input.level
                        ))
                    })?;
                inputs.push((input.level, input.run_id, Arc::clone(file)));
            }
        }
        if let Some(file) = self.trivial_move(job, &inputs) {
            let new_run_id = self.next_run_id;
            self.tree = self.tree.with_job_applied(job, new_run_id, vec![file])?;
            if job.output_run == OutputRun::New {
                self.next_run_id += 1;
            }
            self.summary.trivial_moves += 1;
            return Ok(self.step(StepKind::TrivialMove, job.reason.clone(), 1, 1, 0));
        }
        let output_run_id = match job.output_run {
            OutputRun::Existing(id) => id,
            OutputRun::New => self.new_run_id(),
        };
        let input_files: Vec<&FileMetadata> = inputs.iter().map(|(_, _, f)| f.as_ref()).collect();
        let pieces = merge(&input_files, self.target_file_entries);
        let numbers: Vec<u64> = pieces.iter().map(|_| self.new_file_number()).collect();
        let outputs: Vec<NewFile> = pieces
            .iter()
            .zip(&numbers)
            .map(|(piece, &number)| NewFile {
                file_number: number,
                entries: piece.entries,
                access: None,
                filter_layout: strata::FilterLayout::default(),
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

    /// The engine's trivial move (`compaction::executor::trivial_move`): one input file, going
    /// deeper, into a new run or an existing run it does not overlap. Returns the moved file.
    fn trivial_move(
        &self,
        job: &CompactionJob,
        inputs: &[(usize, u64, Arc<FileMetadata>)],
    ) -> Option<FileMetadata> {
        let [(level, _, file)] = inputs else {
            return None;
        };
        if *level >= job.output_level {
            return None;
        }
        if let OutputRun::Existing(id) = job.output_run {
            let run = self
                .tree
                .levels()
                .get(job.output_level)?
                .runs()
                .iter()
                .find(|r| r.id() == id)?;
            if !run
                .overlapping_files(file.smallest_user_key(), file.largest_user_key())
                .is_empty()
            {
                return None;
            }
        }
        Some(file.copy_facts())
    }

    fn allocate(&self, job: &FilterJob<'_>) -> CliResult<Vec<f64>> {
        let bits = self.allocator.allocate(&self.tree, job);
        if bits.len() != job.outputs.len() {
            return Err(CliError::InvalidArgument(format!(
                "filter allocator {} answered {} bits-per-key values for {} files",
                self.summary.filter_allocator,
                bits.len(),
                job.outputs.len()
            )));
        }
        Ok(bits)
    }

    /// A new file's metadata; `bits` is the allocator's answer, recorded as the table builder
    /// would build it.
    fn file(
        &self,
        number: u64,
        smallest: u64,
        largest: u64,
        entries: u64,
        bits: Option<f64>,
    ) -> FileMetadata {
        let module_bits = self.allocator.filter_module_bits_per_key();
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
        let low: f64 = self.rng.gen();
        let high: f64 = self.rng.gen();
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

/// One output file of a merge: its key range and entries.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Piece {
    smallest: u64,
    largest: u64,
    entries: u64,
}

/// A stretch of keys `[start, end)` covered by the same input files, and the distinct keys the
/// merge expects in it (module docs: `width * (1 - Π (1 - d_i))`).
struct Segment {
    start: u64,
    end: u64,
    expected: f64,
}

fn user_key_number(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let take = key.len().min(8);
    bytes[..take].copy_from_slice(&key[..take]);
    u64::from_be_bytes(bytes)
}

/// The merge of `inputs` cut into files of about `target_entries` entries (module docs).
fn merge(inputs: &[&FileMetadata], target_entries: u64) -> Vec<Piece> {
    let ranges: Vec<(u64, u64, f64)> = inputs
        .iter()
        .map(|f| {
            let smallest = user_key_number(f.smallest_user_key());
            let largest = user_key_number(f.largest_user_key()).max(smallest);
            let width = (largest - smallest + 1) as f64;
            (smallest, largest, (f.entries() as f64 / width).min(1.0))
        })
        .collect();
    let mut points: Vec<u64> = ranges
        .iter()
        .flat_map(|&(smallest, largest, _)| [smallest, largest.saturating_add(1)])
        .collect();
    points.sort_unstable();
    points.dedup();
    let segments: Vec<Segment> = points
        .windows(2)
        .filter_map(|pair| {
            let (start, end) = (pair[0], pair[1]);
            let missed: f64 = ranges
                .iter()
                .filter(|&&(smallest, largest, _)| smallest <= start && end - 1 <= largest)
                .map(|&(_, _, density)| 1.0 - density)
                .product();
            let expected = (end - start) as f64 * (1.0 - missed);
            (expected > 0.0).then_some(Segment {
                start,
                end,
                expected,
            })
        })
        .collect();
    let input_entries: u64 = inputs.iter().map(|f| f.entries()).sum();
    let expected: f64 = segments.iter().map(|s| s.expected).sum();
    let entries = (expected.round() as u64).clamp(1, input_entries.max(1));
    let Some(last) = segments.last() else {
        return Vec::new();
    };
    let last_key = last.end - 1;
    let files = entries.div_ceil(target_entries.max(1)).max(1);
    // Cut k sits where the expected entries reach k/files of the total.
    let cut = |k: u64| -> (u64, u64) {
        let target = expected * k as f64 / files as f64;
        let mut before = 0.0;
        for segment in &segments {
            if before + segment.expected >= target {
                let fraction = ((target - before) / segment.expected).clamp(0.0, 1.0);
                let key =
                    segment.start + ((segment.end - segment.start) as f64 * fraction).ceil() as u64;
                // The previous file ends before `key`; this one starts at it (or at the next
                // covered key).
                return (key.saturating_sub(1), key.min(segment.end - 1));
            }
            before += segment.expected;
        }
        (last_key, last_key)
    };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut start = segments.first().map_or(0, |s| s.start);
    let mut assigned = 0;
    for k in 1..=files {
        let (end, next_start) = if k == files {
            (last_key, last_key)
        } else {
            cut(k)
        };
        let share = (entries as f64 * k as f64 / files as f64).round() as u64 - assigned;
        assigned += share;
        if end >= start {
            pieces.push(Piece {
                smallest: start,
                largest: end,
                entries: share,
            });
            start = next_start.max(end + 1);
        } else if let Some(previous) = pieces.last_mut() {
            // Too narrow a stretch for its own file: its entries join the previous one.
            previous.entries += share;
        } else {
            // Too narrow and first: carried to the next file (`start` stays).
            assigned -= share;
        }
    }
    pieces.retain(|p| p.entries > 0);
    pieces
}

fn write_step(out: &mut dyn Write, step: &Step, json: bool) -> CliResult<()> {
    let io = |e| CliError::io("writing to stdout", e);
    if json {
        serde_json::to_writer(&mut *out, step).map_err(|e| io(e.into()))?;
        return writeln!(out).map_err(io);
    }
    let what = match step.kind {
        StepKind::Flush => "flush".to_string(),
        StepKind::Compaction => format!(
            "compaction ({} files in, {} out, {} written): {}",
            step.files_in,
            step.files_out,
            bytes_text(step.bytes_written),
            step.reason
        ),
        StepKind::TrivialMove => format!("trivial move: {}", step.reason),
        StepKind::PolicyState => format!("policy state: {}", step.reason),
        StepKind::Postponed => format!("postponed: {}", step.reason),
    };
    writeln!(out, "step {}: {what}", step.step).map_err(io)?;
    if step.kind == StepKind::Postponed {
        return Ok(());
    }
    for level in &step.levels {
        writeln!(
            out,
            "  L{:<2} {:>3} runs {:>5} files {:>12} entries {:>10} {:>6.2} bits/key",
            level.level,
            level.runs,
            level.files,
            level.entries,
            bytes_text(level.bytes),
            level.bits_per_key
        )
        .map_err(io)?;
    }
    if step.write_pressure != "none" {
        writeln!(out, "  write pressure: {}", step.write_pressure).map_err(io)?;
    }
    Ok(())
}

fn write_summary(out: &mut dyn Write, summary: &Summary, json: bool) -> CliResult<()> {
    let io = |e| CliError::io("writing to stdout", e);
    if json {
        serde_json::to_writer(&mut *out, &serde_json::json!({ "summary": summary }))
            .map_err(|e| io(e.into()))?;
        return writeln!(out).map_err(io);
    }
    let s = summary;
    let lines = [
        format!("{} with {}", s.compaction, s.filter_allocator),
        format!(
            "flushes {}, compactions {}, trivial moves {}, policy-state decisions {}, postponed {}, \
             most jobs in flight {}",
            s.flushes,
            s.compactions,
            s.trivial_moves,
            s.policy_states,
            s.postponed,
            s.most_jobs_in_flight
        ),
        format!(
            "write amplification {:.3} ({} flushed + {} compacted, / {} flushed)",
            s.write_amplification,
            bytes_text(s.bytes_flushed),
            bytes_text(s.bytes_compacted),
            bytes_text(s.bytes_flushed)
        ),
        format!(
            "sorted runs {}, levels {}, entries {} of {} flushed",
            s.sorted_runs, s.levels, s.entries, s.entries_flushed
        ),
        format!(
            "filters {:.3} bits/key in use over the tree ({:.3} on disk, budget {}), {}",
            s.bits_per_key,
            s.bits_per_key_on_disk,
            s.bits_per_key_budget,
            bytes_text(s.filter_bytes)
        ),
    ];
    for line in lines {
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(())
}

fn bytes_text(bytes: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Runs `strata simulate`.
pub fn run(args: &SimulateArgs, out: &mut dyn Write) -> CliResult<()> {
    let simulation = Simulation::new(args)?;
    let summary = simulation.run(&mut |step, _| write_step(out, step, args.json))?;
    if !args.json {
        writeln!(out).map_err(|e| CliError::io("writing to stdout", e))?;
    }
    write_summary(out, &summary, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashSet;
    use strata::alloc::max_file_bits_per_key;

    #[derive(Parser)]
    #[command(args_override_self = true)]
    struct Command {
        #[command(flatten)]
        args: SimulateArgs,
    }

    fn args(extra: &[&str]) -> SimulateArgs {
        let base = [
            "simulate",
            "--num",
            "60000",
            "--write-buffer-bytes",
            "116000",
            "--target-file-bytes",
            "232000",
            "--size-ratio",
            "3",
            "--bits-per-key",
            "5",
        ];
        let all: Vec<&str> = base.iter().chain(extra).copied().collect();
        Command::try_parse_from(all).expect("parses").args
    }

    /// A tree as the engine keeps it: files of a run sorted and disjoint, numbers unique.
    fn check_tree(tree: &Version) {
        let mut numbers = HashSet::new();
        for (level, run_id, file) in tree.files() {
            assert!(
                numbers.insert(file.number()),
                "file {} twice",
                file.number()
            );
            assert!(file.smallest_user_key() <= file.largest_user_key());
            assert!(
                file.entries() > 0,
                "empty file on level {level} run {run_id}"
            );
        }
        for level in tree.levels() {
            for run in level.runs() {
                for pair in run.files().windows(2) {
                    assert!(pair[0].largest_user_key() < pair[1].smallest_user_key());
                }
            }
        }
    }

    #[test]
    fn every_policy_with_every_allocator_keeps_the_tree_valid() {
        for &compaction in CompactionKind::all() {
            for &filter_policy in FilterAllocatorKind::all() {
                for workers in ["1", "2"] {
                    let args = args(&[
                        "--compaction",
                        compaction.name(),
                        "--filter-policy",
                        filter_policy.name(),
                        "--max-background-compactions",
                        workers,
                    ]);
                    let label =
                        format!("{} {} W={workers}", compaction.name(), filter_policy.name());
                    let simulation = Simulation::new(&args).expect("valid arguments");
                    let cap = simulation.allocator.bits_per_key_cap();
                    let mut flushed = 0;
                    let mut steps = 0;
                    let mut last_tree = Version::default();
                    let summary = simulation
                        .run(&mut |step, tree| {
                            steps += 1;
                            assert_eq!(step.step, steps, "{label}");
                            check_tree(tree);
                            if step.kind == StepKind::Flush {
                                flushed += 1000;
                            }
                            assert!(
                                tree.entries() <= flushed,
                                "{label}: entries grew past what was flushed"
                            );
                            for file in tree.files().map(|(_, _, f)| f) {
                                assert!(
                                    file.bits_per_key() <= max_file_bits_per_key(5.0),
                                    "{label}"
                                );
                            }
                            last_tree = tree.clone();
                            Ok(())
                        })
                        .expect("runs");
                    assert_eq!(summary.flushes, 60, "{label}");
                    assert_eq!(summary.entries_flushed, 60_000, "{label}");
                    assert_eq!(summary.entries, last_tree.entries(), "{label}");
                    assert!(summary.entries <= summary.entries_flushed, "{label}");
                    assert!(summary.compactions > 0, "{label}");
                    assert!(summary.write_amplification >= 1.0, "{label}");
                    if workers == "2"
                        && matches!(
                            compaction,
                            CompactionKind::Leveling | CompactionKind::LevelingDynamic
                        )
                    {
                        // Level-0 and deeper merges overlap: the policy picked beside a job.
                        assert_eq!(summary.most_jobs_in_flight, 2, "{label}");
                    }
                    assert_eq!(summary.sorted_runs, last_tree.run_count(), "{label}");
                    let disk_levels = &last_tree.levels()[1..];
                    match compaction {
                        CompactionKind::Leveling | CompactionKind::LevelingDynamic => {
                            for level in disk_levels {
                                assert!(level.runs().len() <= 1, "{label}: leveling");
                            }
                        }
                        CompactionKind::Tiering => {
                            for level in disk_levels {
                                assert!(level.runs().len() <= 2, "{label}: T - 1 = 2 runs");
                            }
                        }
                        CompactionKind::LazyLeveling => {
                            let last = last_tree.last_non_empty_level().unwrap_or(0);
                            for (index, level) in last_tree.levels().iter().enumerate().skip(1) {
                                let most = if index == last { 1 } else { 2 };
                                assert!(
                                    level.runs().len() <= most,
                                    "{label}: level {index} has {} runs",
                                    level.runs().len()
                                );
                            }
                        }
                        CompactionKind::Garnering => {
                            for level in disk_levels {
                                assert!(level.runs().len() <= 1, "{label}: garnering is leveled");
                            }
                        }
                        CompactionKind::Ecotune => {
                            let main = disk_levels[0].runs().len();
                            assert!(main <= 32, "{label}: at most R runs on the main level");
                            let below: usize =
                                disk_levels[1..].iter().map(|l| l.runs().len()).sum();
                            assert!(below <= 1, "{label}: one last-level run");
                        }
                        CompactionKind::Moose => {
                            // Levels 1 to 3 hold at most K = 3 runs (one more may arrive while
                            // a merge takes the level down), the last level 4 one.
                            for level in &disk_levels[..3] {
                                assert!(level.runs().len() <= 4, "{label}: K = 3 per level");
                            }
                            assert!(disk_levels[3].runs().len() <= 1, "{label}: last level");
                            assert!(
                                disk_levels[4..].iter().all(|l| l.is_empty()),
                                "{label}: nothing below level 4"
                            );
                        }
                    }
                    assert!(last_tree.levels()[0].runs().len() < 4, "{label}: level 0");
                    match filter_policy {
                        FilterAllocatorKind::Uniform => {
                            assert!((summary.bits_per_key - 5.0).abs() < 1e-9, "{label}")
                        }
                        _ => {
                            assert!(summary.bits_per_key > 2.5, "{label}");
                            if let Some(cap) = cap {
                                assert!(summary.bits_per_key <= cap + 1e-9, "{label}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_merge_keeps_the_expected_distinct_keys_in_disjoint_files() {
        let file = |number: u64, smallest: u64, largest: u64, entries: u64| {
            FileMetadata::new(number, &smallest.to_be_bytes(), &largest.to_be_bytes())
                .with_entries(entries)
        };
        // Two files holding every key of the same 1,000: the union is the 1,000.
        let full = [file(1, 0, 999, 1000), file(2, 0, 999, 1000)];
        let pieces = merge(&full.iter().collect::<Vec<_>>(), 300);
        assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 1000);
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.first().map(|p| p.smallest), Some(0));
        assert_eq!(pieces.last().map(|p| p.largest), Some(999));
        for pair in pieces.windows(2) {
            assert!(pair[0].largest < pair[1].smallest, "{pieces:?}");
        }
        // Two half-dense files over the same keys: 1000 * (1 - 0.5 * 0.5) = 750 distinct.
        let half = [file(1, 0, 999, 500), file(2, 0, 999, 500)];
        let pieces = merge(&half.iter().collect::<Vec<_>>(), 10_000);
        assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 750);
        // Disjoint files: nothing overwritten, the gap between them left out of both ends.
        let apart = [file(1, 0, 99, 50), file(2, 1000, 1099, 50)];
        let pieces = merge(&apart.iter().collect::<Vec<_>>(), 50);
        assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 100);
        assert_eq!(pieces.first().map(|p| p.smallest), Some(0));
        assert_eq!(pieces.last().map(|p| p.largest), Some(1099));
        // Narrow ranges cut into more files than keys: no empty or overlapping file.
        let narrow = [file(1, 10, 12, 3), file(2, 10, 12, 3)];
        let pieces = merge(&narrow.iter().collect::<Vec<_>>(), 1);
        assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 3);
        for piece in &pieces {
            assert!(piece.smallest <= piece.largest && piece.entries > 0);
        }
        for pair in pieces.windows(2) {
            assert!(pair[0].largest < pair[1].smallest, "{pieces:?}");
        }
    }

    #[test]
    fn invalid_arguments_are_errors() {
        for extra in [
            &["--entry-bytes", "0"][..],
            &["--num", "0"],
            &["--max-background-compactions", "0"],
            &["--key-space", "0"],
            &["--size-ratio", "1"],
            &["--bits-per-key=-1"],
            &["--write-buffer-bytes", "10"],
        ] {
            assert!(Simulation::new(&args(extra)).is_err(), "{extra:?}");
        }
    }

    #[test]
    fn json_prints_one_object_per_step_and_a_summary() {
        let mut out = Vec::new();
        // Uniform filters: every file's filter holds the budget's 5 bits per key (the default
        // elastic filters write three modules of half the budget on disk).
        run(
            &args(&["--json", "--num", "5000", "--filter-policy", "uniform"]),
            &mut out,
        )
        .expect("runs");
        let text = String::from_utf8(out).expect("utf-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect();
        let (summary, steps) = lines.split_last().expect("output");
        assert_eq!(summary["summary"]["flushes"], 5);
        assert_eq!(
            steps.len() as u64,
            steps.last().expect("a step")["step"].as_u64().expect("n")
        );
        assert_eq!(steps[0]["kind"], "flush");
        assert_eq!(steps[0]["levels"][0]["entries"], 1000);
        assert_eq!(steps[0]["levels"][0]["bits_per_key"], 5.0);
    }
}
