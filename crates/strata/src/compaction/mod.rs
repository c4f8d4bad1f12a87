//! Compaction: *what* to merge is decided by a [`CompactionPolicy`] (one file per policy, DESIGN.md §5),
//! *how* is the executor's job (`executor.rs`: a k-way merge that keeps every version a live
//! snapshot can see and drops tombstones only where nothing older lies below).
//!
//! A policy reads the public, read-only [`Version`] and returns a [`CompactionJob`] or nothing. It
//! says everything it decides, a trivial move included: a job that moves one file down without
//! rewriting it is a [`JobAction::Move`], set by [`merge_or_move`], which every policy here passes
//! its picks through (lsm-tree's `Choice::Move`, LevelDB's `IsTrivialMove`). It does no I/O, so it can be unit-tested on synthetic trees. It keeps no state of its own: what
//! must outlive a restart (Garnering's logical level count) it returns with a job as a
//! [`PolicyState`], which the engine logs in the manifest with the job's version edit and shows
//! back through [`Version::policy_state`].
//!
//! Several compaction workers may run jobs at once (`Options::max_background_compactions`). A
//! policy is shown the jobs in flight ([`RunningCompactions`]) and must not pick a job that shares
//! an input file with one of them or writes to a level one of them writes to; the engine checks
//! both and postpones a job that does. Those two rules keep concurrent installs sound: inputs are
//! never consumed twice, and the runs a level receives get their ids (their recency order) from
//! one job at a time.
//!
//! The write-stall decision is the policy's too ([`CompactionPolicy::write_pressure`]): leveling
//! and tiering count level-0 runs, a policy with another top level (EcoTune) says what "behind"
//! means for it.

pub mod ecotune;
pub(crate) mod executor;
mod garnering;
mod lazy_leveling;
mod leveling;
mod manual;
mod moose;
#[cfg(test)]
mod one_level;
pub(crate) mod output_cuts;
#[cfg(test)]
mod picker_tests;
mod size_ratio;
mod tiering;

pub use garnering::{
    decode_level_count, encode_level_count, garnering_capacities, garnering_level_count, Garnering,
    GARNERING_STATE_OWNER,
};
pub use lazy_leveling::LazyLeveling;
pub use leveling::Leveling;
pub use manual::Manual;
pub use moose::{Moose, MooseSettings};
pub use size_ratio::{SizeRatio, MAX_SIZE_RATIO};
pub use tiering::Tiering;

use std::fmt::{self, Debug};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::alloc::registry::{parse_name, PredictedShape};
use crate::error::{Error, Result};
use ecotune::{EcoTune, EcoTuneSettings};

pub use crate::version::job::{CompactionJob, JobAction, OutputRun, RunInput, RunningCompactions};
pub use crate::version::PolicyState;
use crate::version::Version;

/// A compaction (merge) policy by name (DESIGN.md §5): the registry. Registering a policy is this
/// file only: its `mod` line above, a variant here, its name in [`CompactionKind::name`] and
/// [`CompactionKind::all`], and its arm in [`CompactionKind::build`] (docs/ARCHITECTURE.md,
/// "Adding a merge policy"). Everything that loops over "all policies" uses `all()`.
///
/// With the `clap` feature the kinds derive `clap::ValueEnum`, so the CLI parses the same names
/// (the variants' doc comments are its `--help` text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum CompactionKind {
    /// One run per level (`strata::compaction::Leveling`), level sizes from level 1 down: the
    /// tree grows top-down.
    Leveling,
    /// Leveling with dynamic level bytes (RocksDB's `level_compaction_dynamic_level_bytes`):
    /// level sizes from the last level up, the tree grows bottom-up.
    LevelingDynamic,
    /// Up to `T - 1` runs per level (`strata::compaction::Tiering`).
    Tiering,
    /// Dostoevsky's lazy leveling (`strata::compaction::LazyLeveling`, DESIGN.md §5.3): tiering on
    /// every level but the last, which holds one run.
    LazyLeveling,
    /// Autumn's Garnering (`strata::compaction::Garnering`, DESIGN.md §5.4): leveling whose level
    /// ratios grow toward the top, with delayed last-level compaction; `c` sets the growth.
    Garnering,
    /// EcoTune (`strata::compaction::ecotune::EcoTune`, DESIGN.md §6): a size-triggered top level with
    /// a full key index, a main level of runs merged on a dynamic program's schedule, and a last
    /// level of one run. Takes no size ratio.
    Ecotune,
    /// The EcoTune paper's Moose baseline (`strata::compaction::Moose`): levels 1 to 3 hold up
    /// to 3 runs each, ratio 7 between them and 6 into the last level 4, capacities set from the
    /// last level up. Takes no size ratio.
    Moose,
    /// The example of docs/ARCHITECTURE.md, "Adding a merge policy" (`one_level.rs`, tests only):
    /// every flushed run merged into one run on level 1. Takes no size ratio.
    #[cfg(test)]
    OneLevel,
}

/// Garnering's default scaling factor `c` (DESIGN.md §5.4, the Autumn paper's recommendation).
pub const DEFAULT_GARNERING_C: f64 = 0.8;

/// What a compaction policy is built from besides its kind. A setting a policy does not have is
/// ignored by it. The optional ones are written only when set, so a record of settings reads and
/// writes as it did before they existed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionSettings {
    /// The size ratio `T` (EcoTune and Moose have none and ignore it).
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (`0 < c <= 1`; 1 is plain leveling).
    pub garnering_c: f64,
    /// EcoTune's settings.
    #[serde(default)]
    pub ecotune: EcoTuneSettings,
    /// The level-1 capacity in bytes of leveling, lazy leveling and Garnering (`None`: the write
    /// buffer times `T`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_level_bytes: Option<u64>,
    /// The deepest level leveling, tiering, lazy leveling and Garnering use (`None`: each
    /// policy's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_level: Option<usize>,
    /// Moose's runs per level and ratios (`None`: the EcoTune paper's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moose: Option<MooseSettings>,
}

impl CompactionSettings {
    /// Settings with size ratio `size_ratio`, Garnering's default `c` and every other setting
    /// at its default.
    pub fn with_size_ratio(size_ratio: f64) -> Self {
        CompactionSettings {
            size_ratio,
            garnering_c: DEFAULT_GARNERING_C,
            ecotune: EcoTuneSettings::default(),
            base_level_bytes: None,
            last_level: None,
            moose: None,
        }
    }

    /// The settings of a policy with size ratio `size_ratio`, level-1 capacity
    /// `base_level_bytes` and deepest level `last_level` (left unset at the default).
    pub(crate) fn of_levels(
        size_ratio: f64,
        base_level_bytes: Option<u64>,
        last_level: usize,
    ) -> CompactionSettings {
        CompactionSettings {
            base_level_bytes,
            last_level: (last_level != DEFAULT_LAST_LEVEL).then_some(last_level),
            ..CompactionSettings::with_size_ratio(size_ratio)
        }
    }

    /// `policy` with the base-level and last-level settings that are set.
    fn sized<P: LevelSettings>(&self, mut policy: P) -> Result<P> {
        if let Some(bytes) = self.base_level_bytes {
            policy = policy.base_level_bytes(bytes);
        }
        match self.last_level {
            Some(level) => policy.last_level(level),
            None => Ok(policy),
        }
    }
}

/// The level settings of [`CompactionSettings`] the level-sizing policies take.
trait LevelSettings: Sized {
    /// The level-1 capacity (a policy without one ignores it).
    fn base_level_bytes(self, bytes: u64) -> Self;
    /// The deepest level; an invalid one is an [`Error::InvalidArgument`].
    fn last_level(self, level: usize) -> Result<Self>;
}

/// The three policies with a base level and a last level.
macro_rules! level_settings {
    ($($policy:ty),*) => {$(
        impl LevelSettings for $policy {
            fn base_level_bytes(self, bytes: u64) -> Self {
                self.with_base_level_bytes(bytes)
            }
            fn last_level(self, level: usize) -> Result<Self> {
                self.with_last_level(level)
            }
        }
    )*};
}
level_settings!(Leveling, LazyLeveling, Garnering);

impl LevelSettings for Tiering {
    /// Tiering's levels are counted in runs, not bytes: no base level.
    fn base_level_bytes(self, _bytes: u64) -> Self {
        self
    }
    fn last_level(self, level: usize) -> Result<Self> {
        self.with_last_level(level)
    }
}

impl CompactionKind {
    /// Every registered compaction policy.
    pub fn all() -> &'static [CompactionKind] {
        &[
            CompactionKind::Leveling,
            CompactionKind::LevelingDynamic,
            CompactionKind::Tiering,
            CompactionKind::LazyLeveling,
            CompactionKind::Garnering,
            CompactionKind::Ecotune,
            CompactionKind::Moose,
            #[cfg(test)]
            CompactionKind::OneLevel,
        ]
    }

    /// The name in options files, on the command line, in reports and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CompactionKind::Leveling => "leveling",
            CompactionKind::LevelingDynamic => "leveling-dynamic",
            CompactionKind::Tiering => "tiering",
            CompactionKind::LazyLeveling => "lazy-leveling",
            CompactionKind::Garnering => "garnering",
            CompactionKind::Ecotune => "ecotune",
            CompactionKind::Moose => "moose",
            #[cfg(test)]
            CompactionKind::OneLevel => "one-level",
        }
    }

    /// True for policies that keep several runs per level on every level (Monkey then predicts a
    /// tiered tree). Lazy leveling's last level is one run, like leveling's, and its many upper
    /// runs are small: Monkey predicts it as leveled.
    pub fn is_tiered(self) -> bool {
        self == CompactionKind::Tiering
    }

    /// True for policies built from a size ratio `T` (all but EcoTune, Moose and the example).
    pub fn uses_size_ratio(self) -> bool {
        match self {
            CompactionKind::Ecotune | CompactionKind::Moose => false,
            #[cfg(test)]
            CompactionKind::OneLevel => false,
            _ => true,
        }
    }

    /// The policy with `settings`; an invalid setting (a size ratio below 2, `c` outside
    /// `(0, 1]`) is an [`Error::InvalidArgument`].
    pub fn build(self, settings: &CompactionSettings) -> Result<Arc<dyn CompactionPolicy>> {
        let size_ratio = settings.size_ratio;
        Ok(match self {
            CompactionKind::Leveling => Arc::new(settings.sized(Leveling::new(size_ratio)?)?),
            CompactionKind::LevelingDynamic => {
                Arc::new(settings.sized(Leveling::new(size_ratio)?.with_dynamic_level_bytes(true))?)
            }
            CompactionKind::Tiering => Arc::new(settings.sized(Tiering::new(size_ratio)?)?),
            CompactionKind::LazyLeveling => {
                Arc::new(settings.sized(LazyLeveling::new(size_ratio)?)?)
            }
            CompactionKind::Garnering => {
                Arc::new(settings.sized(
                    Garnering::new(size_ratio)?.with_scaling_factor(settings.garnering_c)?,
                )?)
            }
            CompactionKind::Ecotune => Arc::new(EcoTune::new(settings.ecotune)?),
            CompactionKind::Moose => Arc::new(match &settings.moose {
                Some(moose) => Moose::new(moose.runs_per_level.clone(), moose.ratios.clone())?,
                None => Moose::ecotune_paper(),
            }),
            #[cfg(test)]
            CompactionKind::OneLevel => Arc::new(one_level::OneLevel),
        })
    }
}

impl PredictedShape for CompactionKind {
    fn is_tiered(&self) -> bool {
        CompactionKind::is_tiered(*self)
    }
}

impl FromStr for CompactionKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        parse_name(
            "compaction policy",
            name,
            CompactionKind::all(),
            CompactionKind::name,
        )
    }
}

impl fmt::Display for CompactionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Engine settings a policy needs to size levels and judge write pressure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionContext {
    /// Bytes of one memtable when it is flushed (`Options::write_buffer_bytes`).
    pub write_buffer_bytes: u64,
    /// Level-0 runs that trigger a level-0 compaction.
    pub level0_compaction_trigger: usize,
    /// Level-0 runs at which writes slow down (`Options::level0_slowdown_writes_trigger`).
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 runs at which writes stop (`Options::level0_stop_writes_trigger`).
    pub level0_stop_writes_trigger: usize,
    /// Rates the engine measured (EcoTune's `T_w` and `T_c`, DESIGN.md §6); unknown in tests and
    /// simulators unless they set them.
    pub rates: MeasuredRates,
    /// The workload over the engine's live window (`stats::workload`; DESIGN.md §6, "The workload
    /// the engine measures"): EcoTune's `r` and `K` unless its settings fix them. `None` where
    /// nothing is measured (tests, simulators, the write path's pressure checks).
    pub workload: Option<crate::stats::WorkloadMix>,
    /// Whether runs above the last level carry range filters (`Options::range_filter_bits`):
    /// with them a closed short seek reads only the runs holding its range, without them it
    /// opens every run, as a long scan does (EcoTune's `q(e)`, DESIGN.md §6).
    pub range_filters: bool,
    /// Bytes of a compaction's output file (`Options::target_file_bytes`). Leveling extends a
    /// trivial move to adjacent files up to 25 times this (RocksDB's default
    /// `max_compaction_bytes`, `target_file_size_base * 25`).
    pub target_file_bytes: u64,
}

/// Rates the engine measures for policies that time their work (EcoTune, DESIGN.md §6): how fast
/// flushed bytes arrive and how fast a compaction worker writes. Each is a moving average over
/// recent flushes and jobs; `None` until one has been seen.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MeasuredRates {
    /// Bytes flushed per second of wall time, between consecutive flushes.
    pub flush_bytes_per_sec: Option<f64>,
    /// Bytes a compaction job writes per second of its own run time.
    pub compaction_bytes_per_sec: Option<f64>,
    /// Bytes of a flushed file.
    pub flush_bytes: Option<f64>,
}

impl MeasuredRates {
    /// Nothing measured yet.
    pub const UNKNOWN: MeasuredRates = MeasuredRates {
        flush_bytes_per_sec: None,
        compaction_bytes_per_sec: None,
        flush_bytes: None,
    };
}

impl CompactionContext {
    /// A context with RocksDB's level-0 triggers (4 to compact, 20 to slow down, 36 to stop)
    /// and files of one write buffer's bytes (set `target_file_bytes` where they differ).
    pub fn new(write_buffer_bytes: u64) -> Self {
        CompactionContext {
            write_buffer_bytes,
            level0_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            rates: MeasuredRates::UNKNOWN,
            workload: None,
            range_filters: false,
            target_file_bytes: write_buffer_bytes,
        }
    }
}

/// How far compaction is behind the writes, as the policy judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WritePressure {
    /// Writes go at full speed.
    None,
    /// Each write group is delayed briefly so compaction gets CPU.
    Slowdown,
    /// Writes that need a new memtable wait until a job finishes.
    Stop,
}

/// The level-0 rule of leveling and tiering (RocksDB's `level0_slowdown_writes_trigger` and
/// `level0_stop_writes_trigger`): pressure from the number of flushed runs waiting on level 0.
pub fn level0_write_pressure(tree: &Version, context: &CompactionContext) -> WritePressure {
    let runs = tree.levels()[0].runs().len();
    if runs >= context.level0_stop_writes_trigger {
        WritePressure::Stop
    } else if runs >= context.level0_slowdown_writes_trigger {
        WritePressure::Slowdown
    } else {
        WritePressure::None
    }
}

/// Decides the next compaction from the tree's shape (DESIGN.md §5).
pub trait CompactionPolicy: Send + Sync + Debug {
    /// A short name for reports (`leveling(T=10)`).
    fn name(&self) -> String;

    /// The next job, or `None` when the tree is in shape or every job it needs conflicts with
    /// `running` (see [`RunningCompactions::conflict`]). The engine moves a [`JobAction::Move`]
    /// job's file and merges every other job, so a policy passes its pick through
    /// [`merge_or_move`] to have a movable pick moved.
    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob>;

    /// The most runs disk level `level` (1 and deeper) holds once compactions have caught up,
    /// when `last_level` is the deepest non-empty level: the shape the policy promises, stated
    /// once for the simulator, the tests and reports. The default, `usize::MAX`, promises
    /// nothing.
    fn max_runs(&self, _level: usize, _last_level: usize) -> usize {
        usize::MAX
    }

    /// How far compaction is behind (the engine slows or stops writes on it). By default the
    /// level-0 rule ([`level0_write_pressure`]).
    fn write_pressure(&self, tree: &Version, context: &CompactionContext) -> WritePressure {
        level0_write_pressure(tree, context)
    }

    /// The registry entry that builds this policy again: its kind and settings
    /// ([`CompactionKind::build`]), or `None` for a policy outside the registry (a user's own,
    /// `Manual`). Auto-tune reads it to know the design in force (`crate::model::auto_tune`).
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        None
    }

    /// The policy's manifest state in words, for `Stats` and reports (EcoTune's round), or
    /// `None` if it keeps none worth showing.
    fn describe_state(&self, _tree: &Version) -> Option<String> {
        None
    }

    /// True if the engine should keep a full in-memory index of level 0's keys (key to run), so a
    /// point lookup probes at most one level-0 run (EcoTune's top level, DESIGN.md §6, whose runs
    /// are never merged among themselves). An optional capability like the filter allocator's
    /// (`alloc::FilterAllocator::budget_guard`), but a yes-or-no one: the engine builds and
    /// keeps the index itself and asks the policy nothing more, so `false` is its absence.
    fn indexes_top_level(&self) -> bool {
        false
    }

    /// The job that compacts the whole tree into one run (`Db::compact`): by default every run
    /// into the deepest non-empty level (level 1 at least), moved if it is one movable file
    /// ([`merge_or_move`]).
    fn full_compaction(
        &self,
        tree: &Version,
        context: &CompactionContext,
    ) -> Option<CompactionJob> {
        default_full_compaction(tree, context)
    }
}

/// Every run of the tree merged into one new run on the deepest non-empty level (level 1 at
/// least).
pub fn default_full_compaction(
    tree: &Version,
    _context: &CompactionContext,
) -> Option<CompactionJob> {
    let last = tree.last_non_empty_level()?;
    let inputs: Vec<RunInput> = tree
        .levels()
        .iter()
        .enumerate()
        .flat_map(|(level, l)| l.runs().iter().map(move |run| whole_run(level, run)))
        .collect();
    let job = CompactionJob {
        inputs,
        output_level: last.max(1),
        output_run: OutputRun::New,
        reason: "full compaction".into(),
        state: None,
        action: JobAction::Merge,
    };
    Some(merge_or_move(job, tree))
}

/// `job` as a policy returns it: a [`JobAction::Move`] if it may be done by moving its file (it
/// takes exactly one file from one run into a deeper level, into a new run or into an existing
/// run none of whose files overlaps it: RocksDB's trivial move), a [`JobAction::Merge`]
/// otherwise. A job the policy already marked a move of several adjacent files of one run
/// (leveling's extended move, RocksDB's `TryExtendNonL0TrivialMove`) stays a move if the same
/// rule accepts it. The policies pass every pick through this, so the rule is in one place; the
/// executor checks a move against the same rule when it runs it.
pub fn merge_or_move(mut job: CompactionJob, tree: &Version) -> CompactionJob {
    let movable = (job.action == JobAction::Move || job.input_file_count() == 1)
        && crate::version::job::trivial_move_files(&job, tree).is_some();
    job.action = if movable {
        JobAction::Move
    } else {
        JobAction::Merge
    };
    job
}

/// Validates a policy's deepest level (`1..MAX_LEVELS`).
/// The deepest level leveling, tiering and lazy leveling use unless told otherwise (RocksDB's
/// `num_levels = 7`: levels 0 to 6). Garnering computes its own level count.
pub const DEFAULT_LAST_LEVEL: usize = 6;

pub(crate) fn check_last_level(last_level: usize) -> crate::Result<usize> {
    if !(1..crate::limits::MAX_LEVELS).contains(&last_level) {
        return Err(crate::Error::InvalidArgument(format!(
            "last_level must be between 1 and {}, got {last_level}",
            crate::limits::MAX_LEVELS - 1
        )));
    }
    Ok(last_level)
}

/// The job that merges every run of level `last` into one new run on it, if it holds more than
/// one (lazy leveling's and Moose's last level, which stays a single run; also a tree another
/// policy left with several runs there).
pub(crate) fn merge_last_level(tree: &Version, last: usize) -> Option<CompactionJob> {
    let runs = tree.levels().get(last)?.runs();
    (runs.len() > 1).then(|| CompactionJob {
        inputs: runs.iter().map(|run| whole_run(last, run)).collect(),
        output_level: last,
        output_run: OutputRun::New,
        reason: format!("last level {last} has {} runs", runs.len()),
        state: None,
        action: JobAction::Merge,
    })
}

/// A run input holding all files of `run`.
pub(crate) fn whole_run(level: usize, run: &crate::version::Run) -> RunInput {
    RunInput {
        level,
        run_id: run.id(),
        file_numbers: run.files().iter().map(|f| f.number()).collect(),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::CompactionContext;
    use std::sync::Arc;

    use crate::version::tests::{file_metadata, new_file};
    use crate::version::{Version, VersionEdit};

    /// The engine settings policy tests run with: a 1,000-byte write buffer, level-0 trigger 2,
    /// range filters on every run (EcoTune's setup, where its `r` is the long scans' share).
    pub(crate) const CONTEXT: CompactionContext = CompactionContext {
        write_buffer_bytes: 1000,
        level0_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 20,
        level0_stop_writes_trigger: 36,
        rates: super::MeasuredRates::UNKNOWN,
        workload: None,
        range_filters: true,
        target_file_bytes: 1000,
    };

    /// The `(level, run)` of every input of `job`, in order.
    pub(crate) fn runs_of(job: &super::CompactionJob) -> Vec<(usize, u64)> {
        job.inputs.iter().map(|i| (i.level, i.run_id)).collect()
    }

    /// Builds a version from `(level, run_id, number, smallest, largest, bytes)` tuples.
    pub(crate) fn tree(files: &[(usize, u64, u64, &str, &str, u64)]) -> Version {
        tree_with_states(files, &[])
    }

    /// [`tree`] with policy states in its manifest.
    pub(crate) fn tree_with_states(
        files: &[(usize, u64, u64, &str, &str, u64)],
        states: &[super::PolicyState],
    ) -> Version {
        let edit = VersionEdit {
            new_files: files
                .iter()
                .map(|&(level, run, number, lo, hi, bytes)| {
                    let mut added = new_file(level, run, number, lo, hi);
                    added.file = Arc::new(
                        file_metadata(number, lo, hi)
                            .with_file_bytes(bytes)
                            .with_entries(bytes / 100),
                    );
                    added
                })
                .collect(),
            policy_states: states.to_vec(),
            ..Default::default()
        };
        Version::default()
            .apply(&edit, None)
            .expect("valid test tree")
    }
}
