//! Filter-memory allocation (DESIGN.md §3): how many bits per key each new table file's filter gets.
//!
//! The engine asks its [`FilterAllocator`] once per flush or compaction, when the job has written
//! every output file's entries and is about to build their filters. The allocator sees the tree as
//! it is (a read-only [`Version`]) and the job ([`FilterJob`]: its inputs and all its outputs with
//! their final entry counts), so policies that re-divide the budget per run or per file (Monkey,
//! Mnemosyne, Mnemosyne+) need no engine changes. An allocator never does I/O.
//!
//! # One allocation at a time, against the tree the job installs into
//!
//! The engine holds one install lock from the allocation until the job's version edit is
//! installed, and every flush, compaction and trivial move installs under it. So the tree the
//! allocator is shown is exactly the tree the job's outputs join (`tree - inputs + outputs`), and
//! a budget guard computed on it (DESIGN.md §3.3) holds after the install: no concurrent job can have
//! sized its files against a different tree. (Strata's rule; the paper's RocksDB fork allocates per
//! file against whatever version is current and ends 19-74% over its budget.)

pub mod cache_model;
pub mod elastic;
mod mnemosyne;
mod mnemosyne_plus;
mod monkey;
pub(crate) mod registry;
pub mod s3_fifo_model;
pub use crate::solver;
#[cfg(test)]
mod allocation_tests;
mod uniform;

pub use crate::filter::modular::ModulesInUse;
pub use elastic::{CachedFalsePositives, Elastic};
pub use mnemosyne::{Mnemosyne, Overuse};
pub use mnemosyne_plus::MnemosynePlus;
pub use monkey::Monkey;
pub use registry::{FilterAllocatorKind, FilterSettings, PredictedShape};
pub use uniform::Uniform;

use std::fmt::Debug;

use crate::stats::merlin::AccessEstimate;
use crate::version::{FileMetadata, Version};

/// The most bits per key a file's filter can hold when the allocator's budget (the module size,
/// DESIGN.md §1) is `bits_per_key_budget`: six modules, the last at most 64 bits per key. An allocation
/// above it (a solver's optimum for a tiny, hot file) builds this much; `FileMetadata::bits_per_key`
/// records what was built.
pub fn max_file_bits_per_key(bits_per_key_budget: f64) -> f64 {
    crate::filter::modular::max_bits_per_key(bits_per_key_budget)
}

/// The bits per key a file's filter holds when the allocator answers `bits_per_key` and its
/// budget (the module size, DESIGN.md §1) is `bits_per_key_budget`: the sum of the modules the table
/// builder writes (0 for no filter; each module at most 64 bits per key). This is what
/// `FileMetadata::bits_per_key` records; simulators that write no table use it to record the same.
pub fn built_file_bits_per_key(bits_per_key: f64, bits_per_key_budget: f64) -> f64 {
    match crate::filter::modular::module_bits_per_key(bits_per_key, bits_per_key_budget).as_slice()
    {
        [] => 0.0,
        modules => modules.iter().sum(),
    }
}

/// DESIGN.md §2's per-layout constant for one solve over filters of these `(entries, family)`: the
/// entries-weighted mean of the families' constants ([`crate::FilterFamily::fpr_constant`]),
/// `ln2sq` when there are no entries. Exact when every filter is of one family (`Options::
/// filter_family` Bloom or Ribbon only); under `auto` (Bloom for flushes, Ribbon below) one
/// constant for a mixed set is an approximation: the closed form of DESIGN.md §2 has one `c`.
pub(crate) fn fpr_constant_of(
    filters: impl IntoIterator<Item = (u64, crate::FilterFamily)>,
) -> f64 {
    let (weighted, entries) =
        filters
            .into_iter()
            .fold((0.0, 0.0), |(weighted, entries), (n, family)| {
                let n = n as f64;
                (weighted + n * family.fpr_constant(), entries + n)
            });
    if entries > 0.0 {
        weighted / entries
    } else {
        crate::FilterFamily::Bloom.fpr_constant()
    }
}

/// How often (in lookups) the engine calls [`LiveDecisions::refresh`]: at the lookups whose
/// number is a multiple of it.
pub const REFRESH_EVERY_LOOKUPS: u64 = 1024;

/// Why a file is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// A memtable flush (output on level 0).
    Flush,
    /// A compaction.
    Compaction,
}

/// A file of the job's input, by level, run and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobInput {
    /// Level the file is on.
    pub level: usize,
    /// Run the file belongs to.
    pub run_id: u64,
    /// File number.
    pub file_number: u64,
}

/// The flush or compaction a new file belongs to.
#[derive(Debug, Clone, Copy)]
pub struct FilterJob<'a> {
    /// Flush or compaction.
    pub kind: JobKind,
    /// Files the job replaces (empty for a flush). The tree after the job is the current tree
    /// without these, plus the job's outputs.
    pub inputs: &'a [JobInput],
    /// Level the outputs go to.
    pub output_level: usize,
    /// Run the outputs join.
    pub output_run_id: u64,
    /// Every output file of the job, in key order, with its final entry count.
    pub outputs: &'a [NewFile],
}

impl FilterJob<'_> {
    /// True if `file_number` is one of the job's inputs.
    pub fn is_input(&self, file_number: u64) -> bool {
        self.inputs
            .iter()
            .any(|input| input.file_number == file_number)
    }

    /// Entries in all the job's outputs.
    pub fn output_entries(&self) -> u64 {
        self.outputs.iter().map(|file| file.entries).sum()
    }
}

/// The file about to get a filter: what is known of a job's output before its filter exists (its
/// size and filter are what the allocator's answer decides, so it has no
/// [`FileMetadata`] yet).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewFile {
    /// Number of the new file.
    pub file_number: u64,
    /// Entries in the new file (the filter holds one hash per distinct user key).
    pub entries: u64,
    /// Merlin's estimate of the lookups that will probe the new file, from the statistics it
    /// inherits (DESIGN.md §4: an empty window reports the inherited `q'`, `x'`). `None` when the
    /// engine keeps no access statistics.
    pub access: Option<AccessEstimate>,
    /// The family its filter will be built in, and the key-range partitions it will have if its
    /// modules are of the allocator's module size
    /// at its level ([`ModuleSizing::filter_module_bits_per_key`]; `table/partition.rs`; 1 when
    /// unpartitioned): what [`ModulesInUse::extra_partitions`] can count on and which curve
    /// prices its bits. The file's `FileMetadata` records the layout it got.
    pub filter_layout: crate::FilterLayout,
}

/// What the engine measured that prices a filter rebuild (DESIGN.md §3.5 "Rebuild, priced"): the
/// allocator weighs the device reads a bigger filter would avoid over the file's expected
/// remaining life against the bytes the rebuild reads and writes, both in bytes of device time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RebuildPricing {
    /// The clock the files' measured probe rates are read against
    /// ([`FileState::empty_probes_per_sec`](crate::version::FileState::empty_probes_per_sec)).
    pub now: std::time::Instant,
    /// Bytes flushed per second lately (`None`: no write measured). A level's data turns over
    /// about once per its size in arriving bytes, so a file's expected remaining life is its
    /// level's bytes over this rate.
    pub flush_bytes_per_sec: Option<f64>,
    /// The longest life credited to a file: when nothing is written, no compaction will replace
    /// it, but the lookups seen so far are no promise for ever.
    pub horizon_secs: f64,
    /// Device bytes one avoided data-block read is worth (the block size: a random read of a
    /// block is taken to cost what reading the block's bytes in sequence does, which favours
    /// not rebuilding).
    pub read_cost_bytes: f64,
}

/// A file whose filter is worth rebuilding with more bits on disk (DESIGN.md §3.5 "Rebuild,
/// priced"), as an allocator prices it.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterRebuild {
    /// The file's level.
    pub level: usize,
    /// The file's run.
    pub run_id: u64,
    /// The file.
    pub file_number: u64,
    /// Data-block reads per second the tree's filters would avoid after the rebuild, beyond
    /// what they avoid now (the rebuilt file's gain less what the others give up to it).
    pub avoided_reads_per_sec: f64,
    /// The file's expected remaining life the gain is counted over, in seconds.
    pub life_secs: f64,
    /// Bytes the rebuild reads and writes (the engine rewrites the whole file).
    pub cost_bytes: u64,
}

impl FilterRebuild {
    /// Bytes of device time the rebuild saves, net of its cost, at `read_cost_bytes` per
    /// avoided read.
    pub fn net_saving_bytes(&self, read_cost_bytes: f64) -> f64 {
        self.avoided_reads_per_sec * self.life_secs * read_cost_bytes - self.cost_bytes as f64
    }
}

/// Decides the bits per key of every new file's filter (DESIGN.md §3): what every allocator must
/// answer. What only some allocators do — guard a cap, keep query-time decisions from live
/// statistics, size filter modules below the budget, rebuild filters — are capabilities
/// ([`BudgetGuard`], [`LiveDecisions`], [`ModuleSizing`], [`FilterRebuilds`]) an allocator
/// offers through the accessors below; the engine reads them through the methods of
/// `dyn FilterAllocator`, which give every capability's neutral answer when it is absent.
pub trait FilterAllocator: Send + Sync + Debug {
    /// A short name for reports (`uniform(10)`).
    fn name(&self) -> String;

    /// The filter budget in bits per key.
    fn bits_per_key_budget(&self) -> f64;

    /// Bits per key for every output of `job`, in `job.outputs` order (0 = no filter). `tree`
    /// is the tree the outputs join, before the job's inputs leave it. Called once per flush or
    /// compaction.
    fn allocate(&self, tree: &Version, job: &FilterJob<'_>) -> Vec<f64>;

    /// How many of `file`'s filter modules lookups probe, in probe order (`file` is a file of
    /// run `run_id`): [`ModulesInUse::NONE`] skips the filter (its optimal bits per key is now
    /// 0, so a probe only costs CPU and possibly a block read), [`ModulesInUse::ALL`] (the
    /// default) probes them all; elastic filters (DESIGN.md §3.5) answer a prefix, which may be
    /// one module longer in some partitions of a partitioned filter. Called on the lookup path:
    /// must not block.
    fn filter_modules_in_use(&self, _run_id: u64, _file: &FileMetadata) -> ModulesInUse {
        ModulesInUse::ALL
    }

    /// The cap the allocator holds the filters in use under, if it guards one.
    fn budget_guard(&self) -> Option<&dyn BudgetGuard> {
        None
    }

    /// The query-time decisions the allocator derives from live statistics, if it keeps any.
    fn live_decisions(&self) -> Option<&dyn LiveDecisions> {
        None
    }

    /// The sizing of filter modules below the budget, if the allocator sizes them itself.
    fn module_sizing(&self) -> Option<&dyn ModuleSizing> {
        None
    }

    /// Filter rebuilds, if the allocator can ever ask for one.
    fn filter_rebuilds(&self) -> Option<&dyn FilterRebuilds> {
        None
    }
}

/// A cap on the filters in use (the budget guard of DESIGN.md §3.3; elastic filters' hard cap,
/// §3.5). Uniform spends exactly the budget and static Monkey whatever its prediction gives: they
/// guard nothing.
pub trait BudgetGuard {
    /// The most the tree's average bits per key in use may reach.
    fn bits_per_key_cap(&self) -> f64;

    /// The filter budget in bytes, when one caps the filters in use besides the bits per key
    /// (`Options` takes the budget in bits per key and optionally in bytes). `None` (the
    /// default): the bits per key alone.
    fn filter_budget_bytes(&self) -> Option<u64> {
        None
    }
}

/// Query-time decisions derived from live statistics (which filters are skipped, which modules
/// are in use), kept in memory or in the manifest.
pub trait LiveDecisions {
    /// Called once when a database opens, with the recovered tree (Merlin's statistics restored,
    /// before any lookup): decisions that live only in memory are derived again here, within the
    /// cap.
    fn restore(&self, tree: &Version);

    /// Called on the lookup path every [`REFRESH_EVERY_LOOKUPS`] lookups, by the thread that
    /// makes the lookup whose number is a multiple of it (any lookup thread, so possibly by two
    /// at once), with the tree lookups are reading: decisions that depend on live statistics
    /// (Mnemosyne+'s skip threshold) are derived again. Must not block; may take as long as one
    /// solve. The default does nothing.
    fn refresh(&self, _tree: &Version) {}

    /// True if [`LiveDecisions::refresh`] should also be called when the engine keeps no access
    /// statistics (elastic filters re-divide by the measured cache misses). Default false.
    fn refreshes_without_statistics(&self) -> bool {
        false
    }

    /// True if the decisions need per-file access statistics (Merlin, DESIGN.md §4): the engine
    /// then keeps them whatever `Options::access_statistics` says. Default false.
    fn needs_access_statistics(&self) -> bool {
        false
    }

    /// State kept in the manifest, logged with every flush's and compaction's version edit after
    /// [`FilterAllocator::allocate`] (which filter modules are in use, for elastic filters), so
    /// that it survives a restart as it was. `None` (the default): nothing to keep.
    fn policy_state(&self) -> Option<crate::version::PolicyState> {
        None
    }
}

/// Filter modules sized apart from the budget (elastic filters, DESIGN.md §3.5).
pub trait ModuleSizing {
    /// Bits per key of one filter module of a file written to `output_level` (DESIGN.md §1): the
    /// table builder splits a filter with more bits per key than this into modules of this size.
    /// Elastic filters write level-0 files in larger modules than deeper ones (DESIGN.md §3.5
    /// "Modules on disk").
    fn filter_module_bits_per_key(&self, output_level: usize) -> f64;

    /// Bits per key of `file`'s filter that lookups use: those of its modules in use.
    fn bits_per_key_in_use(&self, file: &FileMetadata) -> f64;

    /// Bits per key of one of `file`'s modules, or 0 for a filter in one piece.
    fn module_bits_per_key_of(&self, file: &FileMetadata) -> f64;
}

/// Filters rebuilt with more bits on disk when that repays its cost (DESIGN.md §3.5 "Rebuild,
/// priced").
pub trait FilterRebuilds {
    /// The file whose filter most repays a rebuild, priced by `pricing`, or `None`. The engine
    /// asks when its compaction workers are idle and its rebuild rate limit allows, and rewrites
    /// the file in place; the allocator then sizes the new file's filter as for any compaction
    /// output. Pure: no I/O, no state change.
    fn filter_rebuild(&self, tree: &Version, pricing: &RebuildPricing) -> Option<FilterRebuild>;
}

/// A concrete allocator seen as the engine sees it (tests call the capability answers of
/// `dyn FilterAllocator` on concrete allocators).
#[cfg(test)]
pub(crate) trait AsDyn {
    fn as_dyn(&self) -> &dyn FilterAllocator;
}

#[cfg(test)]
impl<A: FilterAllocator> AsDyn for A {
    fn as_dyn(&self) -> &dyn FilterAllocator {
        self
    }
}

/// Every capability's answer for any allocator, neutral where the allocator lacks it: what the
/// engine calls.
impl<'a> dyn FilterAllocator + 'a {
    /// True if lookups should not probe the filter of `file`, a file of run `run_id`.
    pub fn skip_filter(&self, run_id: u64, file: &FileMetadata) -> bool {
        self.filter_modules_in_use(run_id, file).is_none()
    }

    /// Bits per key of `file`'s filter that lookups use: 0 when the filter is skipped, the
    /// modules in use when only a prefix is. What `Stats::effective_bits_per_key` and the
    /// per-file cost model count.
    pub fn bits_per_key_in_use(&self, run_id: u64, file: &FileMetadata) -> f64 {
        match self.module_sizing() {
            Some(sizing) => sizing.bits_per_key_in_use(file),
            None if self.skip_filter(run_id, file) => 0.0,
            None => file.bits_per_key(),
        }
    }

    /// The part of `file`'s filter that lookups use ([`crate::FilterInUse`]): its bits per key
    /// as `bits_per_key_in_use` gives them, and its modules' size where it is in modules. What
    /// the per-file cost model prices a probe with (`model::tree`).
    pub fn filter_in_use(&self, run_id: u64, file: &FileMetadata) -> crate::filter::FilterInUse {
        let bits = self.bits_per_key_in_use(run_id, file);
        match self.module_sizing() {
            Some(sizing) => crate::filter::FilterInUse {
                bits_per_key: bits,
                module_bits_per_key: sizing.module_bits_per_key_of(file),
            },
            None => crate::filter::FilterInUse::whole(bits),
        }
    }

    /// [`BudgetGuard::bits_per_key_cap`], or `None` if the allocator guards no cap.
    pub fn bits_per_key_cap(&self) -> Option<f64> {
        self.budget_guard().map(BudgetGuard::bits_per_key_cap)
    }

    /// [`BudgetGuard::filter_budget_bytes`], or `None`.
    pub fn filter_budget_bytes(&self) -> Option<u64> {
        self.budget_guard()
            .and_then(BudgetGuard::filter_budget_bytes)
    }

    /// [`ModuleSizing::filter_module_bits_per_key`] for a file written to `output_level`; the
    /// budget by default (the paper's modular filter).
    pub fn filter_module_bits_per_key(&self, output_level: usize) -> f64 {
        self.module_sizing().map_or_else(
            || self.bits_per_key_budget(),
            |sizing| sizing.filter_module_bits_per_key(output_level),
        )
    }

    /// [`LiveDecisions::refresh`], if the allocator keeps live decisions.
    pub fn refresh(&self, tree: &Version) {
        if let Some(live) = self.live_decisions() {
            live.refresh(tree);
        }
    }

    /// [`LiveDecisions::restore`], if the allocator keeps live decisions.
    pub fn restore(&self, tree: &Version) {
        if let Some(live) = self.live_decisions() {
            live.restore(tree);
        }
    }

    /// [`LiveDecisions::refreshes_without_statistics`]; false without live decisions.
    pub fn refreshes_without_statistics(&self) -> bool {
        self.live_decisions()
            .is_some_and(LiveDecisions::refreshes_without_statistics)
    }

    /// [`LiveDecisions::needs_access_statistics`]; false without live decisions.
    pub fn needs_access_statistics(&self) -> bool {
        self.live_decisions()
            .is_some_and(LiveDecisions::needs_access_statistics)
    }

    /// [`LiveDecisions::policy_state`]; `None` without live decisions.
    pub fn policy_state(&self) -> Option<crate::version::PolicyState> {
        self.live_decisions().and_then(LiveDecisions::policy_state)
    }

    /// [`FilterRebuilds::filter_rebuild`]; `None` for an allocator that never rebuilds.
    pub fn filter_rebuild(
        &self,
        tree: &Version,
        pricing: &RebuildPricing,
    ) -> Option<FilterRebuild> {
        self.filter_rebuilds()
            .and_then(|rebuilds| rebuilds.filter_rebuild(tree, pricing))
    }

    /// True if [`FilterRebuilds::filter_rebuild`] can ever answer a file: the engine's idle
    /// compaction workers then wake up to ask.
    pub fn rebuilds_filters(&self) -> bool {
        self.filter_rebuilds().is_some()
    }
}

/// Jobs for the allocators' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{FilterJob, JobKind, NewFile};

    /// New files numbered from 1000 with these entry counts, without access statistics.
    pub(crate) fn outputs(entries: &[u64]) -> Vec<NewFile> {
        entries
            .iter()
            .enumerate()
            .map(|(index, &entries)| NewFile {
                file_number: 1000 + index as u64,
                entries,
                access: None,
                filter_layout: crate::FilterLayout::default(),
            })
            .collect()
    }

    /// A flush of `outputs` into level-0 run `run_id`.
    pub(crate) fn flush(outputs: &[NewFile], run_id: u64) -> FilterJob<'_> {
        FilterJob {
            kind: JobKind::Flush,
            inputs: &[],
            output_level: 0,
            output_run_id: run_id,
            outputs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_solver_constant_is_the_families_by_entries() {
        use crate::FilterFamily::{Bloom, Ribbon};
        let bloom = Bloom.fpr_constant();
        let ribbon = Ribbon.fpr_constant();
        assert!((bloom - std::f64::consts::LN_2.powi(2)).abs() < 1e-12);
        assert!((ribbon - std::f64::consts::LN_2 / 1.058).abs() < 1e-12);
        // The curves and the constants agree.
        for bits in [1.0, 2.5, 7.0] {
            assert!((Bloom.false_positive_rate(bits) - (-bloom * bits).exp()).abs() < 1e-12);
            assert!((Ribbon.false_positive_rate(bits) - (-ribbon * bits).exp()).abs() < 1e-12);
        }
        assert_eq!(fpr_constant_of([]), bloom);
        assert_eq!(fpr_constant_of([(10, Ribbon), (0, Bloom)]), ribbon);
        let mixed = fpr_constant_of([(300, Bloom), (100, Ribbon)]);
        assert!((mixed - (0.75 * bloom + 0.25 * ribbon)).abs() < 1e-12);
    }

    #[test]
    fn a_built_filter_records_what_its_modules_hold() {
        assert_eq!(built_file_bits_per_key(0.0, 10.0), 0.0);
        assert_eq!(built_file_bits_per_key(f64::NAN, 10.0), 0.0);
        assert_eq!(built_file_bits_per_key(7.5, 10.0), 7.5);
        assert_eq!(built_file_bits_per_key(25.0, 10.0), 25.0);
        // Far past what six modules can hold: capped like the table builder caps it.
        assert_eq!(
            built_file_bits_per_key(1e6, 10.0),
            max_file_bits_per_key(10.0)
        );
    }
}
