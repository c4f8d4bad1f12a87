//! Auto-tune's decision (DESIGN.md §10, "Self-tuning"): given the tree as it is, the workload the
//! database served since the last decision and the device, whether to switch the running
//! database to the merge policy and size ratio the tuner ([`super::tuner`]) ranks first.
//!
//! A pure function of its inputs and of the state the previous decisions left
//! ([`AutoTuneState`], which the engine keeps in its manifest so a restart resumes it); the
//! engine gathers the inputs, applies a switch (`Db::set_compaction_policy`) and logs the
//! decision (`db/auto_tune.rs`).
//!
//! **What is compared.** The write buffer cannot change on a running database, so the tuner
//! solves the problem with the buffer fixed at the engine's and the filters' memory at the
//! allocator's budget over the tree's entries. The design in force is priced by the same models
//! at its own policy and size ratio ([`super::tuner::evaluate_with`]; leveling with dynamic
//! level bytes as leveling), its writes replayed as the tuning's best designs' are
//! ([`super::tuner::evaluate_replayed`]) until the engine has measured its merges: then at the
//! merges per update measured on it over the mix since the last switch
//! ([`AutoTuneState::merges_measured`]; the replay counts a full tree's steady state and
//! over-counts a fill's, docs/decisions/auto-tune-prices-the-design-in-force-at-its-measured-merges.md).
//! The filter allocator is not switched: the models price Monkey's
//! allocation, which the per-file allocators (Mnemosyne, Mnemosyne+, elastic filters) solve
//! from measured statistics on every flush and compaction; designs are priced with Monkey's
//! filters, or with uniform filters when uniform filters are in force.
//!
//! **When it switches.** Only when all of these hold (the hysteresis that keeps it from
//! oscillating on a mix near a boundary between two designs):
//! - the best design is not the one in force (another policy, or a size ratio more than 5%
//!   away);
//! - it is predicted at least [`AutoTuneOptions::min_gain`] faster;
//! - the time it is predicted to save over the horizon exceeds what the switch is predicted to
//!   cost. The horizon is how long the mix is expected to last: as many operations again as it
//!   has served so far (over consecutive decisions whose mixes agree within [`MIX_TOLERANCE`];
//!   [`AutoTuneState::mix_operations`]), at most [`AutoTuneOptions::horizon_intervals`] of the
//!   last interval's operations — a mix that has just begun is not trusted to last, one that
//!   has held for long is. Operations, not decisions: intervals are uneven (a decision held back
//!   by its share of a core covers more), and a fill's lengthen as its decisions slow down, so
//!   as many intervals again as it has held would trust it for several times what it has
//!   served. A growing tree is priced at the size it reaches over the horizon, at the entries it
//!   gained per operation while the mix held ([`AutoTuneState::growth_per_operation`]). The
//!   switch costs a round trip: one rewrite of the whole tree into the new design (reached
//!   through ordinary compactions, which rewrite every entry about once) and one out of it when
//!   the mix moves on (leaving a tiered level merges its runs, rewriting them again), pages read
//!   and written at the device's costs;
//! - the same design was ranked first by the last [`AutoTuneOptions::confirmations`]
//!   decisions in a row.
//!
//! While a mix with updates has its write costs unmeasured (no compaction has finished, or fewer
//! than [`MIN_SAMPLES`] writes were timed; [`MeasuredCosts`]), the design in force is kept when
//! designs are priced with measured costs: pricing writes as pages at the device settings until
//! then ranks designs by a cost the engine then replaces, and a switch taken on it (during a
//! fill, typically) is one the measured costs may not have taken. A read-only mix is decided.
//!
//! **Merging for reads.** A design's models price its settled shape; the tree a phase of reads
//! finds is the one the writes before it left: runs waiting on level 0 below its trigger, which
//! no merge takes while nothing is written, and which every seek and every lookup's filters
//! probe. When a decision is not a switch and its interval extends a stretch of reads (its writes,
//! with the stretch's before it, fill less than one write buffer: level 0 gains no run;
//! [`AutoTuneState::reads_held`]), it prices the design in force on the tree as it is (its level-0
//! runs as they are) against one sorted run (leveling with a single level), for the interval's
//! reads (its writes meet the design, which the merge does not change). The engine is asked to
//! merge the whole tree into one run (a full compaction) when one run is at least
//! [`AutoTuneOptions::min_gain`] faster, the time it saves over the stretch's horizon (the
//! operations the stretch has served, at most [`AutoTuneOptions::horizon_intervals`] of this
//! interval's) exceeds the merge's (every entry rewritten once by one job, at the merges'
//! measured seconds per entry, else its pages at the device's costs), and the stretch has held for
//! [`AutoTuneOptions::confirmations`] decisions or the merge pays for itself within the one
//! interval just measured. The design is not switched: the next writes build on the one run
//! under the same policy. [`AutoTuneOptions::compact_for_reads`] turns it off.
//!
//! **When a decision is due.** Every [`AutoTuneOptions::every_operations`] operations, or after
//! [`AutoTuneOptions::every_seconds`] with fewer; and sooner in two cases
//! ([`AutoTuneState::due_early`]; [`AutoTuneOptions::early_decisions_after`] 0 turns both off):
//! - the operations since the last decision, once there are
//!   [`AutoTuneOptions::early_decisions_after`] of them, are not that decision's mix (within
//!   [`MIX_TOLERANCE`]): a phase that changes the mix is priced at its start. The first such
//!   decision sees the old mix's tail with the new one's start, so the next, on the new mix
//!   alone, usually follows as soon;
//! - the last decision priced a merge for reads that gains at least
//!   [`AutoTuneOptions::min_gain`] but has not paid yet, and the operations it said the stretch
//!   still needs to pay for it ([`ReadMerge::pays_after`]) were served. The horizon expects
//!   the stretch to last as many operations again as it has served (the intervals after a change
//!   of mix are uneven, so it counts operations, not decisions), each saving what this
//!   interval's do; so while the stretch's reads save alike, the merge comes when what the
//!   unmerged runs have cost them reaches the merge's price. That is the ski-rental rule: a
//!   stretch then pays, in slower reads and the merge, at most twice what the better of merging
//!   at its start and never merging would have cost, however long it turns out to last.
//!
//! A tree smaller than [`AutoTuneOptions::max_size_ratio`] write buffers is kept as it is: some
//! candidates are a single level there, where the per-level formulas rank how the levels round
//! rather than the tree the design will serve (a filling database would otherwise be switched,
//! while it is small, to a design chosen for its first megabytes). Designs whose predicted
//! throughput is not finite are never ranked.

use serde::{Deserialize, Serialize};

use super::ties::{break_ties, CostSpread};
use super::tuner::{
    evaluate_replayed, evaluate_with, evaluate_with_writes, tune, CpuCosts, Design, Device, Tuning,
    TuningProblem, Workload,
};
use super::writes::ReplayedWrites;
use super::ModelPolicy;
use crate::alloc::FilterAllocatorKind;
use crate::compaction::{CompactionKind, CompactionSettings};
use crate::error::{Error, Result};
use crate::stats::WorkloadTotals;

/// Decisions kept in [`AutoTuneState::history`] (and so in the manifest).
pub const HISTORY: usize = 8;

/// Two size ratios closer than this share (relative) are the same design.
const SAME_SIZE_RATIO: f64 = 0.05;

/// Two intervals' mixes are the same mix when every share of the operations (point lookups,
/// empty point lookups, range lookups, updates) differs by at most this much.
pub const MIX_TOLERANCE: f64 = 0.10;

/// How auto-tune decides (`Options::auto_tune`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoTuneOptions {
    /// Operations (point lookups, range lookups and entries written) between two decisions.
    pub every_operations: u64,
    /// Seconds after which a decision is taken even if fewer than `every_operations`
    /// operations were served since the last (and at least one was); 0 decides by operations
    /// alone. Operations differ in cost by orders of magnitude (a scan costs what a hundred
    /// writes do): a phase of slow operations would otherwise run on a design chosen for the
    /// last phase for as long as `every_operations` of them take.
    pub every_seconds: f64,
    /// The largest share of one core the background thread's decisions may take, in `(0, 1]`:
    /// after a decision that took `d` seconds the next waits at least `d / max_processor_share`
    /// seconds from the first's start, whatever `every_operations` and `every_seconds` say. A
    /// decision on a growing tree of a million entries prices dozens of designs and replays their
    /// merges (tens of milliseconds); on a busy machine those are taken from the operations it
    /// tunes for. The time is the decision's elapsed time, its manifest write included.
    /// `Db::auto_tune_now` is not held back.
    pub max_processor_share: f64,
    /// The least predicted gain in operations per second, as a share of the design in force's,
    /// that is worth a switch (0.10: 10% faster).
    pub min_gain: f64,
    /// Decisions in a row that must rank the same design first before it is switched to (1:
    /// switch at the first).
    pub confirmations: u32,
    /// The longest horizon over which a switch must pay for itself, in intervals of the last
    /// interval's operations (the horizon is as many operations again as the mix has served, up to
    /// this many of the last interval's).
    pub horizon_intervals: f64,
    /// The largest size ratio a switch may choose. The tuner's shallowest designs (one or two
    /// levels, `T` in the hundreds) are a tiered level of `T - 1` runs that every lookup and
    /// scan probes, or a leveled one that every flush rewrites; on a workload that shifts, the
    /// way back out of one costs far more than the one rewrite a decision prices.
    pub max_size_ratio: f64,
    /// Seconds per random page read (`Omega`).
    pub seconds_per_read: f64,
    /// A page write's cost relative to a read (`phi`).
    pub write_read_cost_ratio: f64,
    /// A merge's in-order page read's cost relative to a random read (`rho`).
    pub merge_read_cost_ratio: f64,
    /// Bytes per page.
    pub page_bytes: f64,
    /// Price designs with the costs the engine measured on the running database
    /// ([`MeasuredCosts`]) where it has measured them, the four device settings above standing
    /// in for what it has not; `false` prices every design with the device settings alone
    /// (Monkey's page-I/O model).
    pub measured_costs: bool,
    /// Merge the whole tree into one sorted run when a stretch of reads is predicted to save more
    /// than the merge costs (module documentation, "Merging for reads"); `false` never does.
    pub compact_for_reads: bool,
    /// Decisions before `every_operations` and `every_seconds` (module documentation, "When a
    /// decision is due"): at once when at least this many operations since the last decision
    /// are not that decision's mix (a share moved by more than [`MIX_TOLERANCE`]), so a phase
    /// that changes the mix is priced at its start; and when the operations a merge for reads
    /// needed to pay for itself were served ([`ReadMerge::pays_after`]). 0 decides at the
    /// cadence alone.
    pub early_decisions_after: u64,
}

impl Default for AutoTuneOptions {
    /// A decision every 250,000 operations or 60 seconds, or after 5,000 when the mix changes,
    /// taking at most 5% of a core; a switch for 10% or more, confirmed twice, paid back within
    /// 20 intervals, to a size ratio of at most 16; merges for reads on; the device `strata tune`
    /// assumes by default (100 µs reads, writes and merge reads alike, 4 KiB pages).
    fn default() -> Self {
        AutoTuneOptions {
            every_operations: 250_000,
            every_seconds: 60.0,
            max_processor_share: 0.05,
            min_gain: 0.10,
            confirmations: 2,
            horizon_intervals: 20.0,
            max_size_ratio: 16.0,
            seconds_per_read: 100e-6,
            write_read_cost_ratio: 1.0,
            merge_read_cost_ratio: 1.0,
            page_bytes: 4096.0,
            measured_costs: true,
            compact_for_reads: true,
            early_decisions_after: 5_000,
        }
    }
}

impl AutoTuneOptions {
    /// An [`Error::InvalidArgument`] naming the first setting out of range.
    pub fn validate(&self) -> Result<()> {
        if self.every_operations == 0 {
            return Err(invalid(
                "auto_tune.every_operations must be at least 1".into(),
            ));
        }
        if self.confirmations == 0 {
            return Err(invalid("auto_tune.confirmations must be at least 1".into()));
        }
        if !(self.max_processor_share > 0.0 && self.max_processor_share <= 1.0) {
            return Err(invalid(format!(
                "auto_tune.max_processor_share must be in (0, 1], got {}",
                self.max_processor_share
            )));
        }
        if !(self.max_size_ratio.is_finite() && self.max_size_ratio >= 2.0) {
            return Err(invalid(format!(
                "auto_tune.max_size_ratio must be finite and >= 2, got {}",
                self.max_size_ratio
            )));
        }
        for (name, value, positive) in [
            ("min_gain", self.min_gain, false),
            ("every_seconds", self.every_seconds, false),
            ("horizon_intervals", self.horizon_intervals, true),
            ("seconds_per_read", self.seconds_per_read, true),
            ("write_read_cost_ratio", self.write_read_cost_ratio, false),
            ("merge_read_cost_ratio", self.merge_read_cost_ratio, false),
            ("page_bytes", self.page_bytes, true),
        ] {
            let ok = value.is_finite() && if positive { value > 0.0 } else { value >= 0.0 };
            if !ok {
                let bound = if positive { "> 0" } else { ">= 0" };
                return Err(invalid(format!(
                    "auto_tune.{name} must be finite and {bound}, got {value}"
                )));
            }
        }
        Ok(())
    }

    /// Seconds one rewrite of the tree costs: the entries at the merges' measured seconds per
    /// entry over the threads merges run on ([`TreeFacts::merge_threads`], at least one) when
    /// `costs` has it, else its pages read and written at the device's costs. The measured
    /// seconds are each merge's own elapsed time, so `k` threads rewrite the tree in `1 / k` of
    /// their sum: the same background time the write price charges merges (`device_with`).
    fn rewrite_seconds(&self, facts: &TreeFacts, costs: &MeasuredCosts) -> f64 {
        if let Some(per_entry) = costs.merge_seconds_per_entry {
            return facts.entries as f64 * per_entry / facts.merge_threads.max(1.0);
        }
        let pages = facts.entries as f64 * facts.entry_bytes / self.page_bytes;
        pages * (self.merge_read_cost_ratio + self.write_read_cost_ratio) * self.seconds_per_read
    }

    /// Seconds a full compaction of `facts`'s tree costs: one rewrite of every entry by a single
    /// job (a full compaction runs alone, on one thread).
    fn full_compaction_seconds(&self, facts: &TreeFacts, costs: &MeasuredCosts) -> f64 {
        self.rewrite_seconds(
            &TreeFacts {
                merge_threads: 1.0,
                ..*facts
            },
            costs,
        )
    }

    /// Seconds a switch costs: a round trip, a rewrite of the tree as it is (`now`) into the
    /// new design and one of the tree the horizon ends with (`then`, [`TreeFacts::grown`]) out
    /// of it.
    fn switch_seconds(&self, now: &TreeFacts, then: &TreeFacts, costs: &MeasuredCosts) -> f64 {
        self.rewrite_seconds(now, costs) + self.rewrite_seconds(then, costs)
    }

    /// The device as the tuner takes it with the options' settings alone (no processor terms:
    /// Monkey's I/O model).
    pub fn device(&self) -> Device {
        Device {
            seconds_per_read: self.seconds_per_read,
            write_read_cost_ratio: self.write_read_cost_ratio,
            merge_read_cost_ratio: self.merge_read_cost_ratio,
            page_bytes: self.page_bytes,
            cpu: CpuCosts::default(),
        }
    }

    /// The device as the tuner takes it with `costs` measured on the running database
    /// ([`MeasuredCosts`]) and merges running on `merge_threads` threads: a page read at its
    /// measured seconds, a probe of a run at its measured processor time; and, once both the
    /// foreground seconds per write and the merges' seconds per entry are measured, writes
    /// priced by them instead of by pages, with the tuner's background-merge model
    /// (`CpuCosts::merge_threads`): an update costs its foreground seconds, and the entries its
    /// merges rewrite on their way down cost the merges' measured elapsed seconds each, spread
    /// over the merge threads; an operation takes the longer of the two. The merges' pages are
    /// then not priced again (`phi = rho = 0`): the measured seconds per merged entry include
    /// them. The stalls are not priced: they measure only the merges that fell so far behind
    /// that writers waited, not the merges a phase leaves behind for the next or the processor
    /// they take from the writers (DESIGN.md §10, "Measured costs").
    pub fn device_with(
        &self,
        costs: &MeasuredCosts,
        merge_threads: f64,
        merge_share: f64,
    ) -> Device {
        let mut device = self.device();
        if let Some(seconds) = costs.seconds_per_read {
            device.seconds_per_read = seconds;
        }
        if let Some(seconds) = costs.seconds_per_lookup {
            device.cpu.seconds_per_lookup = seconds;
        }
        if let Some(seconds) = costs.seconds_per_run_probed {
            device.cpu.seconds_per_run_probed = seconds;
        }
        if let Some(seconds) = costs.seconds_per_run_sought {
            device.cpu.seconds_per_run_sought = seconds;
        }
        if let Some(seconds) = costs.seconds_per_block_searched {
            device.cpu.seconds_per_block_searched = seconds;
        }
        if let (Some(update), Some(merge)) =
            (costs.seconds_per_update, costs.merge_seconds_per_entry)
        {
            device.write_read_cost_ratio = 0.0;
            device.merge_read_cost_ratio = 0.0;
            device.cpu.seconds_per_update = update;
            device.cpu.seconds_per_entry_merged = merge;
            device.cpu.merge_threads = merge_threads.max(1.0);
            // The writers' part of the merges' processor time, as a share of the merges' elapsed
            // seconds the tuner prices them at (DESIGN.md §7.5, "The writer's part of the merges'
            // processor time").
            if let Some(processor) = costs.merge_processor_seconds_per_entry {
                device.cpu.foreground_share_of_merges =
                    (merge_share.max(0.0) * processor / merge).clamp(0.0, 1.0);
            }
        }
        device
    }
}

/// Timed samples (probes of one kind, writes, probed reads) needed before their mean replaces a
/// setting.
pub const MIN_SAMPLES: u64 = 64;

/// Write buffers' worth of entries written under the design in force before its measured merges
/// per update price it ([`AutoTuneState::merges_measured`]): enough flushes that the merges they
/// feed are counted, not the luck of which compaction finished inside a short span.
pub const MERGES_MEASURED_FLUSHES: f64 = 8.0;

/// Page reads auto-tune's read probe times (`db/auto_tune.rs`): the [`MIN_SAMPLES`] a price
/// needs.
pub const PROBE_READS: u64 = MIN_SAMPLES;

/// What the engine measured on the running database since it opened (`Db::reset_stats` does not
/// clear them), the raw inputs of [`MeasuredCosts`]. The engine gathers them from counters it
/// keeps anyway: the lookups' timed probes (one lookup in sixteen times each file it probes, by
/// what the probe read), a sample of timed writes (one write call in sixteen), the writers'
/// stalls, and the compactions' elapsed time and bytes written. Kept in each decision, so the
/// record shows what its prices came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Measurements {
    /// Timed probes of live files that read a data block from the device.
    pub device_block_probes: u64,
    /// Their nanoseconds in all.
    pub device_block_nanos: u64,
    /// Timed probes that read a data block the block cache held.
    pub cached_block_probes: u64,
    /// Their nanoseconds in all.
    pub cached_block_nanos: u64,
    /// Timed probes that read no data block (the filter, or the index, said no).
    pub rejected_probes: u64,
    /// Their nanoseconds in all.
    pub rejected_nanos: u64,
    /// Entries written by the timed writes.
    pub timed_write_entries: u64,
    /// The timed writes' elapsed nanoseconds in all, less the stalls writers recorded meanwhile.
    pub timed_write_nanos: u64,
    /// Entries written.
    pub write_entries: u64,
    /// Microseconds writers spent stalled (slowed down or stopped) for flushes and merges.
    pub write_stall_micros: u64,
    /// Bytes compactions wrote.
    pub compaction_write_bytes: u64,
    /// Compactions' elapsed microseconds.
    pub compaction_micros: u64,
    /// The processor time their threads spent in them, microseconds: 0 where the system does not
    /// report it (`IoStats::compaction_processor_micros`).
    pub compaction_processor_micros: u64,
    /// Page reads the read probe timed: random pages of the tree's largest file, read the way
    /// lookups read (direct I/O when the database reads direct), outside the block cache. Taken
    /// when a decision finds fewer than [`MIN_SAMPLES`] timed probes that read the device.
    pub probed_reads: u64,
    /// Their nanoseconds in all.
    pub probed_read_nanos: u64,
    /// Device reads of one block each that lookups and scans made (read-ahead fills left out),
    /// every one counted, not a sample.
    pub block_reads: u64,
    /// Their elapsed nanoseconds in all.
    pub block_read_nanos: u64,
    /// Seeks of the timed iterators (one iterator in sixteen times its calls).
    pub timed_seeks: u64,
    /// Runs those seeks positioned themselves in.
    pub timed_seek_runs: u64,
    /// The timed iterators' processor nanoseconds in their calls, their device reads left out.
    pub timed_seek_nanos: u64,
    /// Timed point lookups (one in sixteen).
    pub timed_lookups: u64,
    /// Their nanoseconds outside their file probes (the memtables, the read view, the
    /// statistics).
    pub timed_lookup_nanos: u64,
}

/// The costs [`Measurements`] give, each `None` while too little was measured for it (then the
/// options' device settings price it). See [`AutoTuneOptions::device_with`] for how they price a
/// design.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeasuredCosts {
    /// Seconds per page a lookup reads from the device (`Omega`): the mean timed probe that read
    /// its block from the device less the mean one whose block was cached (the rest of a probe
    /// is the same in both), or the former alone when the latter is not measured; with fewer
    /// than [`MIN_SAMPLES`] such probes, the mean device read of one block the lookups and scans
    /// made once they made that many ([`Measurements::block_reads`]; then
    /// [`MeasuredCosts::read_counted`] is true: a workload of scans times no probe), else the
    /// read probe's mean page read ([`Measurements::probed_reads`]; then
    /// [`MeasuredCosts::read_probed`] is true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_read: Option<f64>,
    /// True when [`MeasuredCosts::seconds_per_read`] comes from the read probe rather than from
    /// the lookups' timed probes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_probed: bool,
    /// True when [`MeasuredCosts::seconds_per_read`] is the mean of the lookups' and scans'
    /// device reads of one block ([`Measurements::block_reads`]): the lookups timed too few
    /// probes that read the device, the reads counted at least [`MIN_SAMPLES`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_counted: bool,
    /// Processor seconds a point lookup spends outside its file probes: the timed lookups'
    /// mean (the memtables, the read view, the statistics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_lookup: Option<f64>,
    /// Processor seconds per run a lookup probes: the mean probe that read no data block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_run_probed: Option<f64>,
    /// Processor seconds a range lookup spends per run it seeks: the timed iterators' time in
    /// their calls, device reads left out, over the runs their seeks positioned themselves in
    /// (making the iterator, seeking every run, merging and stepping through the entries read),
    /// once [`MIN_SAMPLES`] seeks were timed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_run_sought: Option<f64>,
    /// Processor seconds a data-block read adds to a probe wherever the block comes from: the
    /// mean timed probe that read a cached block less the mean one that read none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_block_searched: Option<f64>,
    /// Foreground seconds per entry written, stalls excluded: the timed writes' mean per entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_per_update: Option<f64>,
    /// Seconds writers waited for flushes and merges per entry the merges wrote: the foreground
    /// price of a merged entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_seconds_per_entry_merged: Option<f64>,
    /// Elapsed seconds compactions took per entry they wrote: the price of rewriting the tree
    /// when a switch is priced (a switch rewrites it in a burst, on the device and processors
    /// the operations use, so it is priced at the merges' whole time, not at their stalls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_seconds_per_entry: Option<f64>,
    /// Processor seconds compactions' threads spent per entry they wrote
    /// ([`Measurements::compaction_processor_micros`]): the part of a merge that takes a
    /// processor, which a writer sharing its processors with the merges pays its part of
    /// (`tuner::CpuCosts::foreground_share_of_merges`). `None` where the system does not report
    /// a thread's processor time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_processor_seconds_per_entry: Option<f64>,
}

impl Measurements {
    /// Both measurements' counts added (saturating), as one would count over both their spans.
    pub fn plus(&self, other: &Measurements) -> Measurements {
        Measurements {
            device_block_probes: self
                .device_block_probes
                .saturating_add(other.device_block_probes),
            device_block_nanos: self
                .device_block_nanos
                .saturating_add(other.device_block_nanos),
            cached_block_probes: self
                .cached_block_probes
                .saturating_add(other.cached_block_probes),
            cached_block_nanos: self
                .cached_block_nanos
                .saturating_add(other.cached_block_nanos),
            rejected_probes: self.rejected_probes.saturating_add(other.rejected_probes),
            rejected_nanos: self.rejected_nanos.saturating_add(other.rejected_nanos),
            timed_write_entries: self
                .timed_write_entries
                .saturating_add(other.timed_write_entries),
            timed_write_nanos: self
                .timed_write_nanos
                .saturating_add(other.timed_write_nanos),
            write_entries: self.write_entries.saturating_add(other.write_entries),
            write_stall_micros: self
                .write_stall_micros
                .saturating_add(other.write_stall_micros),
            compaction_write_bytes: self
                .compaction_write_bytes
                .saturating_add(other.compaction_write_bytes),
            compaction_micros: self
                .compaction_micros
                .saturating_add(other.compaction_micros),
            compaction_processor_micros: self
                .compaction_processor_micros
                .saturating_add(other.compaction_processor_micros),
            probed_reads: self.probed_reads.saturating_add(other.probed_reads),
            probed_read_nanos: self
                .probed_read_nanos
                .saturating_add(other.probed_read_nanos),
            block_reads: self.block_reads.saturating_add(other.block_reads),
            block_read_nanos: self.block_read_nanos.saturating_add(other.block_read_nanos),
            timed_seeks: self.timed_seeks.saturating_add(other.timed_seeks),
            timed_seek_runs: self.timed_seek_runs.saturating_add(other.timed_seek_runs),
            timed_seek_nanos: self.timed_seek_nanos.saturating_add(other.timed_seek_nanos),
            timed_lookups: self.timed_lookups.saturating_add(other.timed_lookups),
            timed_lookup_nanos: self
                .timed_lookup_nanos
                .saturating_add(other.timed_lookup_nanos),
        }
    }

    /// What was measured between `earlier` and these measurements, the counts of both taken
    /// since the database opened; `None` when a count went back (the database reopened between
    /// them, and its counters started again).
    pub fn since(&self, earlier: &Measurements) -> Option<Measurements> {
        let sub = |now: u64, then: u64| now.checked_sub(then);
        Some(Measurements {
            device_block_probes: sub(self.device_block_probes, earlier.device_block_probes)?,
            device_block_nanos: sub(self.device_block_nanos, earlier.device_block_nanos)?,
            cached_block_probes: sub(self.cached_block_probes, earlier.cached_block_probes)?,
            cached_block_nanos: sub(self.cached_block_nanos, earlier.cached_block_nanos)?,
            rejected_probes: sub(self.rejected_probes, earlier.rejected_probes)?,
            rejected_nanos: sub(self.rejected_nanos, earlier.rejected_nanos)?,
            timed_write_entries: sub(self.timed_write_entries, earlier.timed_write_entries)?,
            timed_write_nanos: sub(self.timed_write_nanos, earlier.timed_write_nanos)?,
            write_entries: sub(self.write_entries, earlier.write_entries)?,
            write_stall_micros: sub(self.write_stall_micros, earlier.write_stall_micros)?,
            compaction_write_bytes: sub(
                self.compaction_write_bytes,
                earlier.compaction_write_bytes,
            )?,
            compaction_micros: sub(self.compaction_micros, earlier.compaction_micros)?,
            compaction_processor_micros: sub(
                self.compaction_processor_micros,
                earlier.compaction_processor_micros,
            )?,
            probed_reads: sub(self.probed_reads, earlier.probed_reads)?,
            probed_read_nanos: sub(self.probed_read_nanos, earlier.probed_read_nanos)?,
            block_reads: sub(self.block_reads, earlier.block_reads)?,
            block_read_nanos: sub(self.block_read_nanos, earlier.block_read_nanos)?,
            timed_seeks: sub(self.timed_seeks, earlier.timed_seeks)?,
            timed_seek_runs: sub(self.timed_seek_runs, earlier.timed_seek_runs)?,
            timed_seek_nanos: sub(self.timed_seek_nanos, earlier.timed_seek_nanos)?,
            timed_lookups: sub(self.timed_lookups, earlier.timed_lookups)?,
            timed_lookup_nanos: sub(self.timed_lookup_nanos, earlier.timed_lookup_nanos)?,
        })
    }

    /// The costs these measurements give for entries of `entry_bytes` bytes as stored (module
    /// documentation of [`MeasuredCosts`]); a cost without [`MIN_SAMPLES`] samples, or without a
    /// compaction, is `None`.
    pub fn costs(&self, entry_bytes: f64) -> MeasuredCosts {
        let mean = |samples: u64, nanos: u64| {
            (samples >= MIN_SAMPLES).then(|| nanos as f64 * 1e-9 / samples as f64)
        };
        let device = mean(self.device_block_probes, self.device_block_nanos);
        let cached = mean(self.cached_block_probes, self.cached_block_nanos);
        let rejected = mean(self.rejected_probes, self.rejected_nanos);
        let timed_read = device
            .map(|device| match cached {
                Some(cached) if device > cached => device - cached,
                _ => device,
            })
            .filter(|seconds| *seconds > 0.0);
        let counted_read = mean(self.block_reads, self.block_read_nanos).filter(|s| *s > 0.0);
        let probed_read = mean(self.probed_reads, self.probed_read_nanos).filter(|s| *s > 0.0);
        let read_counted = timed_read.is_none() && counted_read.is_some();
        let read_probed = timed_read.is_none() && !read_counted && probed_read.is_some();
        // A write is never free: the floor is a nanosecond.
        let seconds_per_update =
            mean(self.timed_write_entries, self.timed_write_nanos).map(|write| write.max(1e-9));
        let entries_merged = (entry_bytes.is_finite() && entry_bytes > 0.0)
            .then(|| self.compaction_write_bytes as f64 / entry_bytes)
            .filter(|entries| *entries >= 1.0);
        MeasuredCosts {
            seconds_per_read: timed_read.or(counted_read).or(probed_read),
            read_probed,
            read_counted,
            seconds_per_lookup: mean(self.timed_lookups, self.timed_lookup_nanos)
                .filter(|seconds| *seconds > 0.0),
            seconds_per_run_probed: rejected,
            seconds_per_block_searched: cached
                .zip(rejected)
                .map(|(cached, rejected)| cached - rejected)
                .filter(|seconds| *seconds > 0.0),
            seconds_per_run_sought: (self.timed_seeks >= MIN_SAMPLES && self.timed_seek_runs > 0)
                .then(|| self.timed_seek_nanos as f64 * 1e-9 / self.timed_seek_runs as f64)
                .filter(|seconds| *seconds > 0.0),
            seconds_per_update,
            stall_seconds_per_entry_merged: entries_merged
                .map(|entries| self.write_stall_micros as f64 * 1e-6 / entries),
            merge_seconds_per_entry: entries_merged
                .map(|entries| self.compaction_micros as f64 * 1e-6 / entries)
                .filter(|seconds| *seconds > 0.0),
            merge_processor_seconds_per_entry: entries_merged
                .map(|entries| self.compaction_processor_micros as f64 * 1e-6 / entries)
                .filter(|seconds| *seconds > 0.0),
        }
    }
}

impl std::fmt::Display for MeasuredCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let micros = |value: Option<f64>| {
            value.map_or_else(
                || "unmeasured".to_string(),
                |s| format!("{:.3} us", s * 1e6),
            )
        };
        let read_source = match (self.seconds_per_read, self.read_probed, self.read_counted) {
            (None, _, _) => "",
            (Some(_), true, _) => " (read probe)",
            (Some(_), false, true) => " (block reads)",
            (Some(_), false, false) => " (timed lookups)",
        };
        write!(
            f,
            "read {}{read_source}, lookup {}, run probed {}, block searched {}, run sought {}, \
             write {}, stall per entry merged {}, merge per entry {} ({} on a processor)",
            micros(self.seconds_per_read),
            micros(self.seconds_per_lookup),
            micros(self.seconds_per_run_probed),
            micros(self.seconds_per_block_searched),
            micros(self.seconds_per_run_sought),
            micros(self.seconds_per_update),
            micros(self.stall_seconds_per_entry_merged),
            micros(self.merge_seconds_per_entry),
            micros(self.merge_processor_seconds_per_entry)
        )
    }
}

/// The tree, the memory and the engine's measurements a decision is taken for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeFacts {
    /// Entries in the tree's files.
    pub entries: u64,
    /// Bytes per entry as stored.
    pub entry_bytes: f64,
    /// The write buffer, in bits (fixed: it cannot change on a running database).
    pub buffer_bits: f64,
    /// The filters' memory, in bits.
    pub filter_bits: f64,
    /// Runs that wait on level 0 on average (`TuningProblem::level0_runs`).
    pub level0_runs: f64,
    /// Sorted runs in the tree now, level 0's included (0: not counted; no merge for reads is
    /// then priced).
    pub runs_now: u32,
    /// Runs on level 0 now.
    pub level0_runs_now: u32,
    /// The block cache's bytes (`Options::block_cache_bytes`): range lookups are priced through
    /// it (`TuningProblem::block_cache_bytes`).
    pub block_cache_bytes: f64,
    /// Threads the engine runs merges on (`Options::max_background_compactions`): measured
    /// merges are priced as background work spread over them (`AutoTuneOptions::device_with`).
    pub merge_threads: f64,
    /// The part of the merges' processor time the writers pay where the merge, flush and
    /// writing threads outnumber the processors (`tuner::foreground_share_of_merges` of the
    /// merge threads and the machine's processors; 0 where the merges have processors of their
    /// own).
    pub merge_share: f64,
    /// Bytes of an average user key (`Workload::key_bytes`; `model::tree::boundary_key_bytes`
    /// estimates it from the files' boundary keys), `None` when unknown (an empty tree).
    pub key_bytes: Option<f64>,
    /// What the engine measured on the running database ([`Measurements`]).
    pub measurements: Measurements,
}

impl TreeFacts {
    /// Why a decision on this tree keeps the design without pricing it, if it does: an empty
    /// tree, or one smaller than `max_size_ratio` write buffers (module documentation).
    fn unpriced(&self, options: &AutoTuneOptions) -> Option<String> {
        if self.entries == 0 || !(self.entry_bytes.is_finite() && self.entry_bytes > 0.0) {
            return Some("the tree holds no entries yet".into());
        }
        let tree_bits = self.entries as f64 * self.entry_bytes * 8.0;
        (tree_bits < self.buffer_bits * options.max_size_ratio).then(|| {
            format!(
                "the tree ({:.1} MiB) is smaller than {} write buffers: some designs are a \
                 single level there, and the models rank how levels round, not the tree to come",
                tree_bits / 8.0 / (1u64 << 20) as f64,
                options.max_size_ratio
            )
        })
    }

    /// The tree after `operations` more operations that each add `growth_per_operation` entries
    /// (a fill): the tree designs are priced for, since a design chosen while a tree fills serves
    /// the tree it fills to, and a small tree's merges per update say little of a large one's.
    /// The filters' memory grows with the entries at the same bits per entry.
    pub fn grown(&self, growth_per_operation: f64, operations: f64) -> TreeFacts {
        let added = growth_per_operation * operations.max(0.0);
        if !(added.is_finite() && added >= 1.0) || self.entries == 0 {
            return *self;
        }
        let entries = self.entries.saturating_add(added as u64);
        TreeFacts {
            entries,
            filter_bits: self.filter_bits * entries as f64 / self.entries as f64,
            ..*self
        }
    }

    /// The measurements and the costs they give, when `options` price with measured costs.
    fn measured(&self, options: &AutoTuneOptions) -> Option<(Measurements, MeasuredCosts)> {
        options
            .measured_costs
            .then(|| (self.measurements, self.measurements.costs(self.entry_bytes)))
    }

    /// The tuner's problem for this tree and `workload`: the write buffer fixed, the filters'
    /// memory beside it, the keys at the tree's key size unless the workload gives one.
    pub(crate) fn problem(&self, workload: Workload, device: Device) -> TuningProblem {
        TuningProblem {
            entries: self.entries as f64,
            entry_bytes: self.entry_bytes,
            memory_bits: self.buffer_bits + self.filter_bits.max(0.0),
            workload: Workload {
                key_bytes: workload.key_bytes.or(self.key_bytes),
                ..workload
            },
            device,
            fixed_buffer_bits: Some(self.buffer_bits),
            max_point_lookup_io: None,
            max_update_io: None,
            level0_runs: self.level0_runs,
            block_cache_bytes: self.block_cache_bytes,
            point_read_miss_share: 1.0,
        }
    }
}

/// The design in force.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentDesign {
    /// The merge policy's registry entry.
    pub kind: CompactionKind,
    /// Its settings.
    pub settings: CompactionSettings,
    /// True if uniform filters are in force (designs are then priced with them; with any other
    /// allocator, with Monkey's).
    pub uniform_filters: bool,
}

/// The workload mix a decision saw, as proportions of its operations (DESIGN.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixRecord {
    /// Point lookups (`z`).
    pub point_lookups: f64,
    /// Share of point lookups that found nothing (`f0`).
    pub zero_result_fraction: f64,
    /// Range lookups (`q`).
    pub range_lookups: f64,
    /// Share of the entries a range lookup returned (`s`).
    pub selectivity: f64,
    /// Updates (`w`).
    pub updates: f64,
}

impl MixRecord {
    /// True when `other` is the same mix within [`MIX_TOLERANCE`].
    pub fn same_mix_as(&self, other: &MixRecord) -> bool {
        let empty = |m: &MixRecord| m.point_lookups * m.zero_result_fraction;
        [
            (self.point_lookups, other.point_lookups),
            (empty(self), empty(other)),
            (self.range_lookups, other.range_lookups),
            (self.updates, other.updates),
        ]
        .iter()
        .all(|(a, b)| (a - b).abs() <= MIX_TOLERANCE)
    }
}

impl From<Workload> for MixRecord {
    fn from(w: Workload) -> Self {
        MixRecord {
            point_lookups: w.point_lookups,
            zero_result_fraction: w.zero_result_fraction,
            range_lookups: w.range_lookups,
            selectivity: w.selectivity,
            updates: w.updates,
        }
    }
}

/// A design as a decision lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateRecord {
    /// The merge policy.
    pub policy: CompactionKind,
    /// Its size ratio.
    pub size_ratio: f64,
    /// Garnering's `c`, for Garnering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub garnering_c: Option<f64>,
    /// Predicted operations per second.
    pub predicted_ops: f64,
}

impl CandidateRecord {
    fn of(design: &Design) -> CandidateRecord {
        CandidateRecord {
            policy: design.policy.kind(),
            size_ratio: design.size_ratio,
            garnering_c: design.policy.garnering_c(),
            predicted_ops: design.predicted.throughput_ops,
        }
    }

    /// `policy(T=..)` as reports print it.
    pub fn label(&self) -> String {
        match self.garnering_c {
            Some(c) => format!("{}(T={:.2}, c={c})", self.policy, self.size_ratio),
            None => format!("{}(T={:.2})", self.policy, self.size_ratio),
        }
    }

    fn same_design_as(&self, other: &CandidateRecord) -> bool {
        let model_kind = |kind: CompactionKind| match kind {
            CompactionKind::LevelingDynamic => CompactionKind::Leveling,
            other => other,
        };
        model_kind(self.policy) == model_kind(other.policy)
            && (self.size_ratio - other.size_ratio).abs()
                <= SAME_SIZE_RATIO * self.size_ratio.max(other.size_ratio)
            && self.garnering_c == other.garnering_c
    }
}

/// One decision: what it saw, what it ranked, what it did and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The decision's number (1 for the database's first).
    pub number: u64,
    /// Operations served since the previous decision.
    pub operations: u64,
    /// The mix of those operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<MixRecord>,
    /// Entries in the tree.
    pub entries: u64,
    /// The design in force, as the models price it (`None` when they cannot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<CandidateRecord>,
    /// The tuner's top three, best first.
    #[serde(default)]
    pub candidates: Vec<CandidateRecord>,
    /// The best design's predicted gain over the design in force (0.25: 25% faster).
    pub gain: f64,
    /// Intervals the mix has held, this one included (0 when there was no mix).
    #[serde(default)]
    pub mix_held: u32,
    /// Operations the mix has served over those intervals, this one included (0 when there was
    /// no mix, and in records from builds that did not count them): the horizon a switch must
    /// pay for itself over ([`AutoTuneState::mix_operations`]).
    #[serde(default)]
    pub mix_operations: u64,
    /// Seconds the best design is predicted to save over the horizon.
    pub saved_seconds: f64,
    /// Seconds the switch is predicted to cost.
    pub switch_seconds: f64,
    /// Entries the designs were priced at: the tree the horizon ends with when it grows
    /// ([`TreeFacts::grown`]; 0 when nothing was priced, and in records from builds that priced
    /// the tree as it was).
    #[serde(default)]
    pub priced_entries: u64,
    /// Decisions in a row that ranked the best design first, this one included.
    pub streak: u32,
    /// True if the database was switched to the best design.
    pub switched: bool,
    /// Why it switched or did not.
    pub reason: String,
    /// What the engine had measured (`None` in records from builds that priced with the
    /// device settings alone, and when `AutoTuneOptions::measured_costs` is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measurements>,
    /// The costs the designs were priced with, from `measured` (`None` as for `measured`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<MeasuredCosts>,
    /// How far the measured costs moved over the intervals the mix has held
    /// ([`AutoTuneState::cost_spread`]; `None` when designs were not priced with measured
    /// costs, or not priced at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<CostSpread>,
    /// Designs tied with the model's best within that spread, the model's best included
    /// ([`super::ties`]; 1: no tie; 0 when nothing was ranked, and in records from builds that
    /// did not break ties).
    #[serde(default)]
    pub tied: u32,
    /// The best design's rank in the model's order: above 1 when a tie went to a design with
    /// fewer merges per update than the model's best (0 as for `tied`).
    #[serde(default)]
    pub model_rank: u32,
    /// Merges per update the design in force was measured to make while in force on this mix
    /// ([`AutoTuneState::merges_measured`]), which priced its writes; `None` when too little was
    /// measured (the replay priced them) or the mix has no updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges_measured: Option<f64>,
    /// Merges per update the replay gives the design in force (the model's prediction, recorded
    /// beside the measurement); `None` when nothing was replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges_replayed: Option<f64>,
    /// Share of the point lookups' data-block reads the device served on the design in force
    /// over the mix ([`AutoTuneState::point_read_miss_share`]), at which every design's point
    /// lookups were priced; `None` when too few were timed (every read then priced as a page
    /// read) or designs were not priced with measured costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_read_misses: Option<f64>,
    /// Intervals in a row, this one included, whose writes together filled less than one write
    /// buffer: a stretch of reads, over which level 0 gains no run ([`AutoTuneState::reads_held`];
    /// 0 in records from builds that did not count it).
    #[serde(default)]
    pub reads_held: u32,
    /// Entries written over those intervals.
    #[serde(default)]
    pub reads_held_writes: u64,
    /// Operations served over those intervals (0 in records from builds that did not count
    /// them).
    #[serde(default)]
    pub reads_held_operations: u64,
    /// What merging the tree into one run for the stretch of reads was priced at (module
    /// documentation, "Merging for reads"); `None` when it was not priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_reads: Option<ReadMerge>,
}

/// A merge of the whole tree into one sorted run for a stretch of reads, as a decision priced it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadMerge {
    /// Sorted runs in the tree when it was priced.
    pub runs: u32,
    /// The design in force's predicted reads per second on the tree as it is (its level-0 runs
    /// as they are), for the interval's reads alone.
    pub as_is_ops: f64,
    /// Predicted reads per second on one run.
    pub one_run_ops: f64,
    /// Seconds one run is predicted to save over the stretch's horizon.
    pub saved_seconds: f64,
    /// Seconds the merge is predicted to take.
    pub merge_seconds: f64,
    /// True if the engine was asked to merge.
    pub merged: bool,
    /// When the merge was not asked for but one run gains at least `min_gain`: the operations
    /// still to serve before the stretch's would pay for the merge (0: they have, and the stretch
    /// waits for its confirmations). The next decision is due then (module documentation, "When a
    /// decision is due"). `None` otherwise, and when the horizon's cap would never let it pay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pays_after: Option<u64>,
}

impl ReadMerge {
    /// One run's predicted gain over the tree as it is (0.25: 25% faster).
    pub fn gain(&self) -> f64 {
        if self.as_is_ops > 0.0 {
            self.one_run_ops / self.as_is_ops - 1.0
        } else {
            0.0
        }
    }
}

impl Decision {
    /// A decision that keeps the design in force, for `reason`, with nothing priced yet.
    pub fn kept(
        number: u64,
        operations: u64,
        mix: Option<Workload>,
        entries: u64,
        reason: String,
    ) -> Decision {
        Decision {
            number,
            operations,
            mix: mix.map(MixRecord::from),
            entries,
            current: None,
            candidates: Vec::new(),
            gain: 0.0,
            mix_held: 0,
            mix_operations: 0,
            saved_seconds: 0.0,
            switch_seconds: 0.0,
            priced_entries: 0,
            streak: 0,
            switched: false,
            reason,
            measured: None,
            costs: None,
            spread: None,
            tied: 0,
            model_rank: 0,
            merges_measured: None,
            merges_replayed: None,
            point_read_misses: None,
            reads_held: 0,
            reads_held_writes: 0,
            reads_held_operations: 0,
            for_reads: None,
        }
    }

    /// True if the decision asked the engine to merge the tree into one run for reads.
    pub fn merges_for_reads(&self) -> bool {
        self.for_reads.is_some_and(|merge| merge.merged)
    }

    /// The decision with the measurements it saw and the costs they gave.
    fn measured(self, measured: Option<(Measurements, MeasuredCosts)>) -> Decision {
        Decision {
            measured: measured.map(|(measurements, _)| measurements),
            costs: measured.map(|(_, costs)| costs),
            ..self
        }
    }

    /// The decision with the design in force as priced and the top candidates.
    fn with(self, current: Option<CandidateRecord>, candidates: Vec<CandidateRecord>) -> Decision {
        Decision {
            current,
            candidates,
            ..self
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let priced = |record: &CandidateRecord| {
            format!("{} at {:.0} ops/s", record.label(), record.predicted_ops)
        };
        let merges = match (self.merges_replayed, self.merges_measured) {
            (None, None) => String::new(),
            (replayed, measured) => {
                let of = |m: Option<f64>| m.map_or_else(|| "-".to_string(), |m| format!("{m:.2}"));
                format!(
                    " (merges per update: replay {}, measured {})",
                    of(replayed),
                    of(measured)
                )
            }
        };
        let current = self.current.as_ref().map_or_else(
            || "unpriced".to_string(),
            |c| format!("{}{merges}", priced(c)),
        );
        let best = self
            .candidates
            .first()
            .map_or_else(|| "none".to_string(), priced);
        let spread =
            |s: &CostSpread| format!("device x{:.2}, processor x{:.2}", s.device, s.processor);
        // A spread of 1 ties only designs the model prices alike (leveling with and without
        // dynamic level bytes), which is not worth a word unless the pick is not the model's
        // first.
        let spread_moves = |s: &CostSpread| s.device > 1.0 || s.processor > 1.0;
        let ties = match (self.tied, &self.spread) {
            (2.., Some(s)) if spread_moves(s) || self.model_rank > 1 => format!(
                ", {} tied within the costs' spread ({}): the fewest merges per update, the \
                 model's rank {}",
                self.tied,
                spread(s),
                self.model_rank
            ),
            (_, Some(s)) if spread_moves(s) => {
                format!(", no tie within the costs' spread ({})", spread(s))
            }
            _ => String::new(),
        };
        let grown = if self.priced_entries > self.entries {
            format!(" (priced at {} as it grows)", self.priced_entries)
        } else {
            String::new()
        };
        let grown = match self.point_read_misses {
            Some(share) => format!("{grown}, point reads {:.1}% from the device", share * 100.0),
            None => grown,
        };
        write!(
            f,
            "decision {}: {} ops, {} entries{grown}, mix held {}x ({} ops); in force {current}, \
             best {best} ({:+.1}%, saves {:.1} s against a switch of {:.1} s, ranked first \
             {}x{ties}): {} — {}",
            self.number,
            self.operations,
            self.entries,
            self.mix_held,
            self.mix_operations,
            self.gain * 100.0,
            self.saved_seconds,
            self.switch_seconds,
            self.streak,
            if self.switched { "switch" } else { "keep" },
            self.reason
        )?;
        if let Some(merge) = &self.for_reads {
            write!(
                f,
                "; reads held {}x: one run of {} at {:.0} ops/s ({:+.1}%), saves {:.1} s against \
                 a merge of {:.1} s: {}",
                self.reads_held,
                merge.runs,
                merge.one_run_ops,
                merge.gain() * 100.0,
                merge.saved_seconds,
                merge.merge_seconds,
                match (merge.merged, merge.pays_after) {
                    (true, _) => "merge".to_string(),
                    (false, Some(after)) =>
                        format!("no merge yet, pays after {after} more operations"),
                    (false, None) => "no merge".to_string(),
                }
            )?;
        }
        match &self.costs {
            Some(costs) => write!(f, " [measured: {costs}]"),
            None => Ok(()),
        }
    }
}

/// What auto-tune carries from one decision to the next (kept in the manifest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoTuneState {
    /// Decisions taken.
    pub decisions: u64,
    /// Switches made.
    pub switches: u64,
    /// The workload totals' operations (point lookups, range lookups, writes) at the last
    /// decision: the next decision's interval starts there.
    pub operations_at_last: u64,
    /// The totals at the last decision, so the next sees only its own interval's mix.
    pub point_lookups: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub point_lookups_found: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub seeks: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub scan_entries: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub writes: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub long_scans: u64,
    /// See [`AutoTuneState::point_lookups`].
    pub long_scan_entries: u64,
    /// The last decisions, oldest first (at most [`HISTORY`]).
    pub history: Vec<Decision>,
}

impl AutoTuneState {
    /// The operations `totals` counts.
    pub fn operations(totals: &WorkloadTotals) -> u64 {
        totals
            .point_lookups
            .saturating_add(totals.seeks)
            .saturating_add(totals.writes)
    }

    /// What `totals` counts since the last decision (all of it before the first; counters that
    /// went back, as after a restore from an older manifest, count from zero).
    pub fn interval(&self, totals: &WorkloadTotals) -> WorkloadTotals {
        WorkloadTotals {
            point_lookups: totals.point_lookups.saturating_sub(self.point_lookups),
            point_lookups_found: totals
                .point_lookups_found
                .saturating_sub(self.point_lookups_found),
            seeks: totals.seeks.saturating_sub(self.seeks),
            scan_entries: totals.scan_entries.saturating_sub(self.scan_entries),
            long_scans: totals.long_scans.saturating_sub(self.long_scans),
            long_scan_entries: totals
                .long_scan_entries
                .saturating_sub(self.long_scan_entries),
            writes: totals.writes.saturating_sub(self.writes),
        }
    }

    /// Records `decision`, taken at `totals`.
    pub fn record(&mut self, decision: Decision, totals: &WorkloadTotals) {
        self.decisions = decision.number;
        if decision.switched {
            self.switches += 1;
        }
        self.operations_at_last = AutoTuneState::operations(totals);
        self.point_lookups = totals.point_lookups;
        self.point_lookups_found = totals.point_lookups_found;
        self.seeks = totals.seeks;
        self.scan_entries = totals.scan_entries;
        self.writes = totals.writes;
        self.long_scans = totals.long_scans;
        self.long_scan_entries = totals.long_scan_entries;
        self.history.push(decision);
        if self.history.len() > HISTORY {
            let excess = self.history.len() - HISTORY;
            self.history.drain(..excess);
        }
    }

    /// Intervals `mix` has held, this one included: one more than the last decision's count if
    /// the last decision saw the same mix, else one.
    fn mix_held(&self, mix: &MixRecord) -> u32 {
        match self.history.last() {
            Some(last) if last.mix.is_some_and(|m| m.same_mix_as(mix)) => {
                last.mix_held.max(1).saturating_add(1)
            }
            _ => 1,
        }
    }

    /// Operations `mix` has served over the intervals it has held, this interval's `operations`
    /// included: the last decision's count and these if the last decision saw the same mix, else
    /// these. A record from a build that did not count them is taken as that many intervals of
    /// its own operations.
    pub fn mix_operations(&self, mix: &MixRecord, operations: u64) -> u64 {
        match self.history.last() {
            Some(last) if last.mix.is_some_and(|m| m.same_mix_as(mix)) => {
                let before = if last.mix_operations > 0 {
                    last.mix_operations
                } else {
                    last.operations
                        .saturating_mul(u64::from(last.mix_held.max(1)))
                };
                before.saturating_add(operations)
            }
            _ => operations,
        }
    }

    /// The stretch of reads this interval extends (`Decision::reads_held`), when it served
    /// `interval` and a write buffer holds `buffer_entries`: one interval more than the last
    /// decision's stretch while the stretch's writes stay under one buffer; a new stretch of one
    /// interval when this one alone stays under; none when it does not.
    pub fn reads_held(&self, interval: &WorkloadTotals, buffer_entries: f64) -> ReadsHeld {
        let before = match self.history.last() {
            Some(last) => ReadsHeld {
                intervals: last.reads_held,
                writes: last.reads_held_writes,
                operations: last.reads_held_operations,
            },
            None => ReadsHeld::default(),
        };
        let under = |entries: u64| (entries as f64) < buffer_entries;
        let this = ReadsHeld {
            intervals: 1,
            writes: interval.writes,
            operations: AutoTuneState::operations(interval),
        };
        let stretch = before.writes.saturating_add(this.writes);
        if before.intervals > 0 && under(stretch) {
            ReadsHeld {
                intervals: before.intervals.saturating_add(1),
                writes: stretch,
                operations: before.operations.saturating_add(this.operations),
            }
        } else if under(this.writes) {
            this
        } else {
            ReadsHeld::default()
        }
    }

    /// True when a decision is due before `options.every_operations` and
    /// `options.every_seconds` (module documentation, "When a decision is due") on `interval`,
    /// what the database served since the last decision, over a tree of `entries` entries:
    /// - the last decision priced a merge for reads that would pay after `n` more operations
    ///   ([`ReadMerge::pays_after`]), and `interval` served them (at least one);
    /// - or `interval` served at least `options.early_decisions_after` and its mix is not the
    ///   last decision's.
    ///
    /// Never when `options.early_decisions_after` is 0.
    pub fn due_early(
        &self,
        options: &AutoTuneOptions,
        interval: &WorkloadTotals,
        entries: u64,
    ) -> bool {
        let Some(last) = self
            .history
            .last()
            .filter(|_| options.early_decisions_after > 0)
        else {
            return false;
        };
        let served = AutoTuneState::operations(interval);
        let merge_pays = last
            .for_reads
            .filter(|merge| !merge.merged)
            .and_then(|merge| merge.pays_after)
            .is_some_and(|after| served >= after.max(1));
        let mix_changed = served >= options.early_decisions_after
            && match (last.mix, mix_of(interval, entries)) {
                (Some(before), Some(now)) => !before.same_mix_as(&MixRecord::from(now)),
                _ => false,
            };
        merge_pays || mix_changed
    }

    /// How far the costs the engine measured moved over the intervals `mix_held` counts (this
    /// one, ending at `now`, and the ones before it the same mix held, as far back as
    /// [`AutoTuneState::history`] reaches): each interval is a round of the same measurement
    /// (the probes `strata tune` times in rounds), and [`CostSpread::of_rounds`] over the rounds
    /// that measured a cost on their own (at least [`MIN_SAMPLES`] samples) gives its spread.
    /// The device's spread is the page reads' (from lookups or the read probe); the processor's
    /// the largest of a run probed's, a run sought's and an update's foreground seconds. Auto-tune prices no
    /// flush apart, so the flush's spread is 1. A mix that has just begun has one round: no
    /// spread, and the model's ranking stands.
    pub fn cost_spread(&self, now: &Measurements, mix_held: u32, entry_bytes: f64) -> CostSpread {
        let held = (mix_held as usize).min(self.history.len());
        let mut snapshots: Vec<&Measurements> = self.history[self.history.len() - held..]
            .iter()
            .filter_map(|decision| decision.measured.as_ref())
            .collect();
        snapshots.push(now);
        let (mut reads, mut runs, mut sought, mut updates) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for pair in snapshots.windows(2) {
            let Some(round) = pair[1].since(pair[0]) else {
                continue;
            };
            let costs = round.costs(entry_bytes);
            reads.extend(costs.seconds_per_read);
            runs.extend(costs.seconds_per_run_probed.filter(|s| *s > 0.0));
            sought.extend(costs.seconds_per_run_sought);
            updates.extend(costs.seconds_per_update);
        }
        let of = |rounds: &[f64]| CostSpread::of_rounds(rounds).unwrap_or(1.0);
        CostSpread {
            device: of(&reads),
            processor: of(&runs).max(of(&sought)).max(of(&updates)),
            flush: 1.0,
        }
    }

    /// Merges per update the engine measured on the design in force over the intervals `mix`
    /// has held (`mix_held`, as far back as [`AutoTuneState::history`] reaches, and not before
    /// the last switch): the entries its compactions wrote over the entries written, from the
    /// measurements the decisions recorded up to `now`. `None` while that span wrote fewer than
    /// [`MERGES_MEASURED_FLUSHES`] write buffers of `buffer_entries` (too few merges to count),
    /// or a count went back (a reopen).
    pub fn merges_measured(
        &self,
        now: &Measurements,
        mix_held: u32,
        entry_bytes: f64,
        buffer_entries: f64,
    ) -> Option<f64> {
        let held = (mix_held.saturating_sub(1) as usize).min(self.history.len());
        let recent = &self.history[self.history.len() - held..];
        // A switch's decision measured the tree before the switch: the span starts there, with
        // the design switched to in force since.
        let start = recent.iter().rposition(|d| d.switched).unwrap_or(0);
        let first = recent[start..].iter().find_map(|d| d.measured)?;
        let span = now.since(&first)?;
        let written = span.write_entries as f64;
        if !(entry_bytes > 0.0 && written >= MERGES_MEASURED_FLUSHES * buffer_entries.max(1.0)) {
            return None;
        }
        Some(span.compaction_write_bytes as f64 / entry_bytes / written)
    }

    /// Share of the timed probes that read a data block whose block came from the device, over
    /// the intervals the mix has held (this one, ending at `now`, and the ones before it as far
    /// back as [`AutoTuneState::history`] reaches, not before the last switch): how much of a
    /// point lookup's block reads the block cache left to the device on the design in force.
    /// `None` while fewer than [`MIN_SAMPLES`] such probes were timed, or a count went back.
    pub fn point_read_miss_share(&self, now: &Measurements, mix_held: u32) -> Option<f64> {
        let back = (mix_held.max(1) as usize).min(self.history.len());
        let recent = &self.history[self.history.len() - back..];
        // The span starts at the snapshot of the decision before the mix's first (or of the
        // last switch's decision within it): this interval's start when the mix has just begun.
        let start = recent.iter().rposition(|d| d.switched).unwrap_or(0);
        let span = match recent[start..].iter().find_map(|d| d.measured) {
            Some(first) => now.since(&first)?,
            None if self.history.is_empty() => *now,
            None => return None,
        };
        let probes = span
            .device_block_probes
            .saturating_add(span.cached_block_probes);
        (probes >= MIN_SAMPLES).then(|| span.device_block_probes as f64 / probes as f64)
    }

    /// Entries the tree gained per operation served while the mix held: since the first
    /// decision of the mix the history still has, over the operations of the intervals after it
    /// (this one's, `operations`, included), when the tree now has `entries` and the mix has
    /// held `mix_held` intervals (0 when it has just begun or the tree shrank). Per operation,
    /// not per interval: intervals are uneven (a decision held back by its share of a core
    /// covers more operations than one that was not).
    pub fn growth_per_operation(&self, entries: u64, mix_held: u32, operations: u64) -> f64 {
        let back = (mix_held.saturating_sub(1) as usize).min(self.history.len());
        if back == 0 {
            return 0.0;
        }
        let since = self.history.len() - back;
        let served = self.history[since + 1..]
            .iter()
            .fold(operations, |sum, d| sum.saturating_add(d.operations));
        if served == 0 {
            return 0.0;
        }
        entries.saturating_sub(self.history[since].entries) as f64 / served as f64
    }

    /// The streak of the design ranked first last time, if `best` is that design.
    fn streak_of(&self, best: &CandidateRecord) -> u32 {
        match self.history.last() {
            Some(last) if !last.switched => match last.candidates.first() {
                Some(previous) if previous.same_design_as(best) => last.streak,
                _ => 0,
            },
            _ => 0,
        }
    }
}

/// The workload mix (proportions of operations, DESIGN.md §7) `totals` describe over a tree of
/// `entries` entries ([`Workload::from_totals`]); `None` if they count no operation.
pub fn mix_of(totals: &WorkloadTotals, entries: u64) -> Option<Workload> {
    Workload::from_totals(totals, entries)
}

/// A stretch of reads (`AutoTuneState::reads_held`): intervals in a row whose writes together
/// fill less than one write buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadsHeld {
    /// Intervals, the last included (0: no stretch).
    pub intervals: u32,
    /// Entries written over them.
    pub writes: u64,
    /// Operations served over them.
    pub operations: u64,
}

/// What a decision asks of the engine: keep the design, or switch to this one.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The decision, to record.
    pub decision: Decision,
    /// The policy and settings to switch to, when it switches.
    pub switch_to: Option<(CompactionKind, CompactionSettings)>,
}

/// Decides (module documentation) on `interval`, the workload totals since the last decision.
/// Never fails on a tree or a workload the models cannot price: that is a decision to keep, with
/// the reason; an invalid `options` is an [`Error::InvalidArgument`].
pub fn decide(
    options: &AutoTuneOptions,
    facts: &TreeFacts,
    interval: &WorkloadTotals,
    current: &CurrentDesign,
    state: &AutoTuneState,
) -> Result<Verdict> {
    // Long: the module documentation's steps in their order, each an early keep with its
    // reason built from the same locals; split, every step would take and return them all.
    options.validate()?;
    let number = state.decisions + 1;
    let operations = AutoTuneState::operations(interval);
    let mix = mix_of(interval, facts.entries);
    let measured = facts.measured(options);
    let costs = measured.map(|(_, costs)| costs).unwrap_or_default();
    // Counted from the first decision that sees the mix, priced or not, so a fill's horizon
    // includes the decisions a small tree or unmeasured writes kept unpriced.
    let mix_held = mix.map_or(0, |mix| state.mix_held(&MixRecord::from(mix)));
    let mix_operations = mix.map_or(0, |mix| {
        state.mix_operations(&MixRecord::from(mix), operations)
    });
    let buffer_entries = facts.buffer_bits / (facts.entry_bytes * 8.0);
    let stretch = state.reads_held(interval, buffer_entries);
    let keep = |reason: String, current, candidates| Verdict {
        decision: Decision {
            mix_held,
            mix_operations,
            reads_held: stretch.intervals,
            reads_held_writes: stretch.writes,
            reads_held_operations: stretch.operations,
            ..Decision::kept(number, operations, mix, facts.entries, reason)
                .with(current, candidates)
                .measured(measured)
        },
        switch_to: None,
    };
    let workload = match (mix, TreeFacts::unpriced(facts, options)) {
        (None, _) => {
            return Ok(keep(
                "no operation since the last decision".into(),
                None,
                Vec::new(),
            ))
        }
        (Some(_), Some(reason)) => return Ok(keep(reason, None, Vec::new())),
        (Some(workload), None) => workload,
    };
    if let Some(reason) = writes_unmeasured(&workload, measured.as_ref()) {
        return Ok(keep(reason, None, Vec::new()));
    }
    // The design in force's merges per update as the engine measured them while it was in force
    // on this mix, when enough was written: they replace the replay's (module documentation).
    let merges_measured = measured.and_then(|(now, _)| {
        let buffer_entries = facts.buffer_bits / (facts.entry_bytes * 8.0);
        state.merges_measured(&now, mix_held, facts.entry_bytes, buffer_entries)
    });
    if let Some(kept) = keeping_up(&workload, &costs, merges_measured, facts, current) {
        let (reason, record) = kept;
        let verdict = keep(reason, Some(record), Vec::new());
        return Ok(Verdict {
            decision: Decision {
                merges_measured,
                ..verdict.decision
            },
            ..verdict
        });
    }
    // The mix is expected to last as many operations again as it has served, at most
    // `horizon_intervals` of this interval's (module documentation). Counted in operations,
    // not intervals: intervals are uneven, and a fill's grow as its decisions take longer.
    let interval_operations = operations as f64;
    let horizon_operations = (mix_operations as f64)
        .max(interval_operations)
        .min(options.horizon_intervals * interval_operations);
    let horizon_intervals = if interval_operations > 0.0 {
        horizon_operations / interval_operations
    } else {
        0.0
    };
    let grown = facts.grown(
        state.growth_per_operation(facts.entries, mix_held, operations),
        horizon_operations,
    );
    let point_read_misses =
        measured.and_then(|(now, _)| state.point_read_miss_share(&now, mix_held));
    let problem = TuningProblem {
        point_read_miss_share: point_read_misses.unwrap_or(1.0),
        ..grown.problem(
            workload,
            options.device_with(&costs, facts.merge_threads, facts.merge_share),
        )
    };
    let filters = if current.uniform_filters {
        FilterAllocatorKind::Uniform
    } else {
        FilterAllocatorKind::Monkey
    };
    let tuning = match tune(&problem) {
        Ok(tuning) => tuning,
        Err(error) => {
            return Ok(keep(
                format!("the tuner found no design: {error}"),
                None,
                Vec::new(),
            ))
        }
    };
    let switchable = switchable(&tuning.candidates, filters, options, &current.settings);
    let spread = measured
        .map(|(now, _)| state.cost_spread(&now, mix_held, facts.entry_bytes))
        .unwrap_or(CostSpread::NONE);
    let (ranked, tied, model_rank) = match ranked_with_ties(&problem, &switchable, &spread) {
        Ok(ranked) => ranked,
        Err(error) => {
            return Ok(keep(
                format!("the ties could not be checked: {error}"),
                None,
                Vec::new(),
            ))
        }
    };
    let candidates: Vec<CandidateRecord> = ranked.iter().take(3).map(CandidateRecord::of).collect();
    let Some(best) = ranked.first() else {
        return Ok(keep("the tuner ranked no design".into(), None, candidates));
    };
    let priced = current_design_priced(&problem, current, filters, merges_measured);
    let (current_design, current_replayed_merges) = match priced {
        Ok(priced) => priced,
        Err(reason) => return Ok(keep(reason, None, candidates)),
    };
    let current_record = CandidateRecord {
        policy: current.kind,
        ..CandidateRecord::of(&current_design)
    };
    let best_record = CandidateRecord::of(best);
    let current_ops = current_design.predicted.throughput_ops;
    let best_ops = best.predicted.throughput_ops;
    let gain = if current_ops > 0.0 {
        best_ops / current_ops - 1.0
    } else {
        0.0
    };
    let saved_per_interval = (operations as f64 * (1.0 / current_ops - 1.0 / best_ops)).max(0.0);
    let saved_seconds = saved_per_interval * horizon_intervals;
    let switch_seconds = options.switch_seconds(facts, &grown, &costs);
    let same = best_record.same_design_as(&current_record);
    let streak = if same {
        0
    } else {
        state.streak_of(&best_record) + 1
    };
    let seconds = SwitchSeconds {
        saved: saved_seconds,
        saved_per_interval,
        switch: switch_seconds,
    };
    let (switched, reason) = verdict(options, same, gain, seconds, streak);
    let switch_to = switched.then(|| switch_settings(best, &current.settings));
    // A switch reshapes the tree through its own merges; a merge for reads is priced only
    // without one.
    let for_reads = (!switched)
        .then(|| {
            let stretch = ReadStretch {
                operations,
                held: stretch,
                costs: &costs,
            };
            merge_for_reads(options, facts, &problem, current, filters, &stretch)
        })
        .flatten();
    Ok(Verdict {
        decision: Decision {
            gain,
            mix_held,
            mix_operations,
            reads_held: stretch.intervals,
            reads_held_writes: stretch.writes,
            reads_held_operations: stretch.operations,
            for_reads,
            saved_seconds,
            switch_seconds,
            priced_entries: grown.entries,
            streak,
            switched,
            spread: measured.map(|_| spread),
            tied,
            model_rank,
            merges_measured: merges_measured.filter(|_| workload.updates > 0.0),
            merges_replayed: current_replayed_merges,
            point_read_misses: point_read_misses.filter(|_| workload.point_lookups > 0.0),
            ..Decision::kept(number, operations, mix, facts.entries, reason)
                .with(Some(current_record), candidates)
                .measured(measured)
        },
        switch_to,
    })
}

/// The stretch of reads a merge for reads is priced over.
struct ReadStretch<'a> {
    /// Operations in the interval just measured.
    operations: u64,
    /// The stretch, this interval included.
    held: ReadsHeld,
    /// The costs designs were priced with.
    costs: &'a MeasuredCosts,
}

/// A merge of the whole tree into one run for the stretch of reads, priced (module
/// documentation, "Merging for reads"); `None` when it is not priced: the option is off, the tree
/// is one run already (or its runs were not counted), the interval wrote a buffer or more, or the
/// models cannot price the design in force.
fn merge_for_reads(
    options: &AutoTuneOptions,
    facts: &TreeFacts,
    problem: &TuningProblem,
    current: &CurrentDesign,
    filters: FilterAllocatorKind,
    stretch: &ReadStretch<'_>,
) -> Option<ReadMerge> {
    if !options.compact_for_reads || facts.runs_now <= 1 || stretch.held.intervals == 0 {
        return None;
    }
    let (reads_only, read_share) = reads_alone(problem)?;
    let read_operations = stretch.operations as f64 * read_share;
    let problem = &reads_only;
    let buffer_bits = problem.fixed_buffer_bits.unwrap_or(problem.memory_bits);
    let as_is = TuningProblem {
        level0_runs: f64::from(facts.level0_runs_now),
        ..*problem
    };
    let policy = priced_policy(current).ok()?;
    let as_is_ops = evaluate_with(
        &as_is,
        policy,
        current.settings.size_ratio,
        buffer_bits,
        filters,
    )
    .ok()?
    .predicted
    .throughput_ops;
    // One sorted run is leveling with a single level: a size ratio above the tree's write
    // buffers makes the models' shape one level (`model::shape`).
    let buffers = problem.entries * problem.entry_bytes * 8.0 / buffer_bits;
    let one_level = (buffers + 1.0).max(2.0);
    let one_run = TuningProblem {
        level0_runs: 0.0,
        ..*problem
    };
    let one_run_ops = evaluate_with(
        &one_run,
        ModelPolicy::LEVELING,
        one_level,
        buffer_bits,
        filters,
    )
    .ok()?
    .predicted
    .throughput_ops;
    if !(as_is_ops.is_finite() && as_is_ops > 0.0 && one_run_ops.is_finite() && one_run_ops > 0.0) {
        return None;
    }
    // The horizon is the operations the stretch has served (the intervals after a change of mix
    // are uneven), at most `horizon_intervals` of this interval's.
    let interval_operations = stretch.operations as f64;
    let longest = options.horizon_intervals * interval_operations;
    let horizon = (stretch.held.operations as f64)
        .max(interval_operations)
        .min(longest);
    let saved_per_interval = (read_operations * (1.0 / as_is_ops - 1.0 / one_run_ops)).max(0.0);
    let saved_per_operation = if interval_operations > 0.0 {
        saved_per_interval / interval_operations
    } else {
        0.0
    };
    let mut merge = ReadMerge {
        runs: facts.runs_now,
        as_is_ops,
        one_run_ops,
        saved_seconds: saved_per_operation * horizon,
        merge_seconds: options.full_compaction_seconds(facts, stretch.costs),
        merged: false,
        pays_after: None,
    };
    // As for a switch, a merge that pays for itself within the interval just measured does not
    // wait for the confirmations.
    let pays_at_once = saved_per_interval > merge.merge_seconds;
    let gains = merge.gain() >= options.min_gain;
    merge.merged = (stretch.held.intervals >= options.confirmations || pays_at_once)
        && gains
        && merge.saved_seconds > merge.merge_seconds;
    if !merge.merged && gains {
        merge.pays_after = pays_after(
            merge.merge_seconds,
            saved_per_operation,
            stretch.held.operations,
            longest,
        );
    }
    Some(merge)
}

/// `problem` with its workload's reads alone, and their share of its operations; `None` without
/// reads. The merge changes the tree the reads find, not the design the writes meet: both trees
/// are priced on the interval's reads alone (a stretch writes under one buffer; priced as one
/// level, those writes would each rewrite the whole tree).
fn reads_alone(problem: &TuningProblem) -> Option<(TuningProblem, f64)> {
    let w = &problem.workload;
    let reads = w.point_lookups + w.range_lookups;
    let total = reads + w.updates;
    if !(reads > 0.0 && total.is_finite()) {
        return None;
    }
    let reads_only = TuningProblem {
        workload: Workload {
            point_lookups: w.point_lookups / reads,
            range_lookups: w.range_lookups / reads,
            updates: 0.0,
            ..*w
        },
        ..*problem
    };
    Some((reads_only, reads / total))
}

/// The operations a stretch of reads that has served `served` still has to serve before one
/// run's saving, `saved_per_operation` seconds each, exceeds a merge of `merge_seconds`
/// ([`ReadMerge::pays_after`]; module documentation, "When a decision is due"): the first such
/// count, 0 when the stretch's already does (it waits for its confirmations); `None` when no
/// saving or a horizon capped at `longest` operations would never pay.
fn pays_after(
    merge_seconds: f64,
    saved_per_operation: f64,
    served: u64,
    longest: f64,
) -> Option<u64> {
    if saved_per_operation.is_nan() || saved_per_operation <= 0.0 {
        return None;
    }
    let needed = merge_seconds / saved_per_operation;
    if !(needed.is_finite() && needed <= longest) {
        return None;
    }
    let remaining = needed - served as f64;
    Some(if remaining < 0.0 {
        0
    } else {
        remaining.floor() as u64 + 1
    })
}

/// Why a decision on `workload` keeps the design without pricing it, if it does: the mix has
/// updates and designs are priced with measured costs (`measured` is `Some`), but the write costs
/// are not measured yet (module documentation).
fn writes_unmeasured(
    workload: &Workload,
    measured: Option<&(Measurements, MeasuredCosts)>,
) -> Option<String> {
    let (_, costs) = measured?;
    let unmeasured = costs.seconds_per_update.is_none() || costs.merge_seconds_per_entry.is_none();
    (workload.updates > 0.0 && unmeasured).then(|| {
        format!(
            "write costs not measured yet (needs a finished compaction and {MIN_SAMPLES} timed \
             writes; measured: {costs})"
        )
    })
}

/// Why a decision on a mix of updates alone keeps the design in force without asking the tuner, if
/// it does, with the design in force as priced: its merges, at the merges per update measured on
/// it (`merges_measured`) and the merges' measured seconds per entry over the merge threads, take
/// no longer than its writes' foreground seconds. Writes are then priced at the foreground's
/// seconds, and no design writes faster than that: every design's update costs `max(foreground,
/// background)` with the same foreground (`AutoTuneOptions::device_with`), so no design can gain,
/// and the tuner's replays (most of a decision's time on a large tree) would only show a tie.
/// Not where the writers pay part of the merges' processor time (`TreeFacts::merge_share`, with
/// that time measured): a design that merges less then writes faster, and the tuner prices it.
fn keeping_up(
    workload: &Workload,
    costs: &MeasuredCosts,
    merges_measured: Option<f64>,
    facts: &TreeFacts,
    current: &CurrentDesign,
) -> Option<(String, CandidateRecord)> {
    let updates_only = workload.point_lookups <= 0.0 && workload.range_lookups <= 0.0;
    let (foreground, merge, merges) = (
        costs.seconds_per_update?,
        costs.merge_seconds_per_entry?,
        merges_measured?,
    );
    let background = merges * merge / facts.merge_threads.max(1.0);
    let shared = facts.merge_share > 0.0 && costs.merge_processor_seconds_per_entry.is_some();
    (!shared && updates_only && workload.updates > 0.0 && background <= foreground).then(|| {
        let record = CandidateRecord {
            policy: current.kind,
            size_ratio: current.settings.size_ratio,
            garnering_c: (current.kind == CompactionKind::Garnering)
                .then_some(current.settings.garnering_c),
            predicted_ops: 1.0 / foreground,
        };
        let reason = format!(
            "the design in force's merges keep up with its writes ({merges:.2} merges per update \
             measured, {:.3} us of merging per update on {} thread(s) against {:.3} us in the \
             foreground): on updates alone no design writes faster",
            background * 1e6,
            facts.merge_threads.max(1.0),
            foreground * 1e6
        );
        (reason, record)
    })
}

/// What a switch is predicted to save and to cost, in seconds.
struct SwitchSeconds {
    /// Saved over the horizon.
    saved: f64,
    /// Saved over one interval of the last interval's operations.
    saved_per_interval: f64,
    /// The round trip's rewrites.
    switch: f64,
}

/// Whether to switch and why (module documentation).
fn verdict(
    options: &AutoTuneOptions,
    same: bool,
    gain: f64,
    seconds: SwitchSeconds,
    streak: u32,
) -> (bool, String) {
    let SwitchSeconds {
        saved: saved_seconds,
        saved_per_interval,
        switch: switch_seconds,
    } = seconds;
    // A switch that pays for its round trip within the one interval just measured is not a mix
    // near the boundary between two designs, which is what the confirmations guard against.
    let pays_at_once = saved_per_interval > switch_seconds;
    if same {
        (false, "the design in force is ranked first".to_string())
    } else if gain.is_nan() || gain < options.min_gain {
        (
            false,
            format!(
                "predicted gain {:.1}% is below the {:.1}% a switch needs",
                gain * 100.0,
                options.min_gain * 100.0
            ),
        )
    } else if saved_seconds <= switch_seconds {
        (
            false,
            format!(
                "the switch ({switch_seconds:.1} s of rewrites, there and back) would not pay \
                 for itself over the horizon ({saved_seconds:.1} s saved)"
            ),
        )
    } else if streak < options.confirmations && !pays_at_once {
        (
            false,
            format!(
                "ranked first {streak} time(s) in a row; {} needed",
                options.confirmations
            ),
        )
    } else if streak < options.confirmations {
        (
            true,
            format!(
                "{:.1}% faster, saves {saved_per_interval:.1} s in one interval against \
                 {switch_seconds:.1} s of rewrites: paid back within an interval, so not \
                 waiting for {} confirmations",
                gain * 100.0,
                options.confirmations
            ),
        )
    } else {
        (
            true,
            format!(
                "{:.1}% faster, saves {saved_seconds:.1} s against {switch_seconds:.1} s of \
                 rewrites, ranked first {streak} times in a row",
                gain * 100.0
            ),
        )
    }
}

/// The designs ranked for a switch, best first: priced with `filters`, at a size ratio of at most
/// the options' cap, and buildable from the settings in force (the tuner's one-level designs can
/// ask for a size ratio above the policies' limit).
fn switchable<'a>(
    designs: &'a [Design],
    filters: FilterAllocatorKind,
    options: &AutoTuneOptions,
    in_force: &CompactionSettings,
) -> Vec<&'a Design> {
    designs
        .iter()
        .filter(|design| design.filters == filters)
        .filter(|design| design.size_ratio <= options.max_size_ratio)
        // A prediction that is not a finite positive throughput is a model's failure, not a
        // reason to switch.
        .filter(|design| {
            let ops = design.predicted.throughput_ops;
            ops.is_finite() && ops > 0.0
        })
        .filter(|design| {
            let (kind, settings) = switch_settings(design, in_force);
            kind.build(&settings).is_ok()
        })
        .collect()
}

/// `ranked` (best first) with its ties within `spread` broken toward the fewest merges per update
/// ([`break_ties`], as `strata tune` breaks them): the pick first, then the others in the model's
/// order; with the number of designs tied with the model's best (itself included) and the
/// pick's rank in the model's order.
fn ranked_with_ties(
    problem: &TuningProblem,
    ranked: &[&Design],
    spread: &CostSpread,
) -> Result<(Vec<Design>, u32, u32)> {
    let Some(best) = ranked.first() else {
        return Ok((Vec::new(), 0, 0));
    };
    let tuning = Tuning {
        recommended: **best,
        candidates: ranked.iter().map(|design| **design).collect(),
    };
    let broken = break_ties(problem, &tuning, spread)?;
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok((
        broken.tuning.candidates,
        count(broken.tied.len()),
        count(broken.model_rank),
    ))
}

/// The registry entry that builds `design`, keeping the settings in force it does not set (the
/// levels' base and depth).
fn switch_settings(
    design: &Design,
    in_force: &CompactionSettings,
) -> (CompactionKind, CompactionSettings) {
    let mut settings = CompactionSettings {
        size_ratio: design.size_ratio,
        ..in_force.clone()
    };
    if let Some(c) = design.policy.garnering_c() {
        settings.garnering_c = c;
    }
    (design.policy.kind(), settings)
}

/// The design in force priced by the models, with the merges per update its replay gave (`None`
/// without updates, or when the replay refused it); or why it cannot be priced. With
/// `merges_measured`, its writes are priced at those merges per update instead of the replay's.
fn current_design_priced(
    problem: &TuningProblem,
    current: &CurrentDesign,
    filters: FilterAllocatorKind,
    merges_measured: Option<f64>,
) -> std::result::Result<(Design, Option<f64>), String> {
    let policy = priced_policy(current)?;
    evaluate_with(
        problem,
        policy,
        current.settings.size_ratio,
        problem.fixed_buffer_bits.unwrap_or(problem.memory_bits),
        filters,
    )
    // Its writes priced as the tuning's best are (`tuner::evaluate_replayed`).
    .and_then(|design| evaluate_replayed(problem, &design))
    .and_then(|design| {
        let replayed = design.writes.replayed_merges();
        match merges_measured {
            Some(merges) if problem.workload.updates > 0.0 && merges.is_finite() => {
                let measured = ReplayedWrites {
                    merges_per_update: merges.max(0.0),
                    flushes: 0,
                    scale: 1.0,
                };
                let priced = evaluate_with_writes(
                    problem,
                    policy,
                    current.settings.size_ratio,
                    design.buffer_bits,
                    filters,
                    Some(measured),
                )?;
                Ok((priced, replayed))
            }
            _ => Ok((design, replayed)),
        }
    })
    .map_err(|error| format!("the design in force cannot be priced: {error}"))
}

/// The models' policy for the design in force, or why it has none.
fn priced_policy(current: &CurrentDesign) -> std::result::Result<ModelPolicy, String> {
    let kind = match current.kind {
        // Dynamic level bytes change where the levels start, not the shape the models price.
        CompactionKind::LevelingDynamic => CompactionKind::Leveling,
        kind => kind,
    };
    ModelPolicy::new(kind, current.settings.garnering_c)
        .map_err(|error| format!("the design in force cannot be priced: {error}"))
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> TreeFacts {
        TreeFacts {
            entries: 1_000_000,
            entry_bytes: 128.0,
            buffer_bits: (2u64 << 20) as f64 * 8.0,
            filter_bits: 10.0 * 1_000_000.0,
            level0_runs: 1.5,
            runs_now: 0,
            level0_runs_now: 0,
            block_cache_bytes: 0.0,
            merge_threads: 1.0,
            merge_share: 0.0,
            key_bytes: None,
            measurements: Measurements::default(),
        }
    }

    /// `lookups` point lookups (half of them empty) and `writes` entries written.
    fn totals(lookups: u64, writes: u64) -> WorkloadTotals {
        WorkloadTotals {
            point_lookups: lookups,
            point_lookups_found: lookups / 2,
            writes,
            ..WorkloadTotals::default()
        }
    }

    fn design(kind: CompactionKind, size_ratio: f64) -> CurrentDesign {
        CurrentDesign {
            kind,
            settings: CompactionSettings::with_size_ratio(size_ratio),
            uniform_filters: false,
        }
    }

    /// The hysteresis tests' options: designs priced with the device settings alone (Monkey's
    /// page-I/O model), so their rankings do not depend on what an engine measured.
    fn quick() -> AutoTuneOptions {
        AutoTuneOptions {
            confirmations: 2,
            measured_costs: false,
            ..AutoTuneOptions::default()
        }
    }

    /// [`quick`] pricing with the costs `TreeFacts::measurements` give.
    fn measuring() -> AutoTuneOptions {
        AutoTuneOptions {
            measured_costs: true,
            ..quick()
        }
    }

    #[test]
    fn a_read_heavy_mix_moves_tiering_to_the_tuners_best_once_it_has_held_long_enough() {
        // Each interval: 900,000 lookups and 100,000 writes, the same mix every time.
        let current = design(CompactionKind::Tiering, 10.0);
        let mut state = AutoTuneState::default();
        let mut decisions = Vec::new();
        for n in 1..=10u64 {
            let at = totals(900_000 * n, 100_000 * n);
            let verdict = decide(&quick(), &facts(), &state.interval(&at), &current, &state)
                .expect("decides");
            let decision = verdict.decision.clone();
            state.record(verdict.decision, &at);
            decisions.push(decision.clone());
            if let Some((kind, settings)) = verdict.switch_to {
                assert_eq!(kind, decision.candidates[0].policy);
                assert_eq!(settings.size_ratio, decision.candidates[0].size_ratio);
                kind.build(&settings)
                    .expect("the switched-to policy builds");
                break;
            }
        }
        let first = &decisions[0];
        assert_ne!(
            first.candidates[0].policy,
            CompactionKind::Tiering,
            "{first}"
        );
        assert!(first.gain >= 0.10, "{first}");
        assert_eq!((first.mix_held, first.streak), (1, 1));
        // A mix seen once is trusted for one interval: not enough to pay for a round trip.
        assert!(first.reason.contains("pay for itself"), "{first}");
        // Every decision saw the same mix: the horizon, and so the seconds saved, grows with it.
        for (i, decision) in decisions.iter().enumerate() {
            assert_eq!(decision.mix_held, i as u32 + 1, "{decision}");
            let per_interval = first.saved_seconds;
            let expected = per_interval * (i as f64 + 1.0).min(quick().horizon_intervals);
            assert!(
                (decision.saved_seconds - expected).abs() <= 1e-6 * expected,
                "{decision}"
            );
            assert!((decision.switch_seconds - first.switch_seconds).abs() < 1e-9);
        }
        let last = decisions.last().expect("decisions");
        assert!(last.switched, "never switched: {last}");
        assert!(last.saved_seconds > last.switch_seconds && last.streak >= 2);
        // It switched at the first decision where the horizon paid for the round trip.
        for earlier in &decisions[..decisions.len() - 1] {
            assert!(earlier.saved_seconds <= earlier.switch_seconds, "{earlier}");
        }
        assert_eq!(state.switches, 1);
    }

    #[test]
    fn a_new_mix_starts_its_horizon_again_and_the_horizon_is_capped() {
        let current = design(CompactionKind::Leveling, 10.0);
        let mut state = AutoTuneState::default();
        let reads = totals(900_000, 100_000);
        let options = AutoTuneOptions {
            horizon_intervals: 3.0,
            ..quick()
        };
        for expected in [1, 2, 3, 4] {
            let verdict = decide(&options, &facts(), &reads, &current, &state).expect("decides");
            assert_eq!(verdict.decision.mix_held, expected);
            assert_eq!(
                verdict.decision.mix_operations,
                u64::from(expected) * 1_000_000
            );
            state.record(verdict.decision, &reads);
        }
        // The horizon stops at three intervals however long the mix holds.
        let held = state.history.last().expect("a decision").clone();
        let third = &state.history[state.history.len() - 2];
        assert!((held.saved_seconds - third.saved_seconds).abs() <= 1e-9 * third.saved_seconds);
        // Writes now: another mix, trusted for one interval again.
        let writes = totals(100_000, 900_000);
        let verdict = decide(&options, &facts(), &writes, &current, &state).expect("decides");
        assert_eq!(verdict.decision.mix_held, 1, "{}", verdict.decision);
        assert_eq!(verdict.decision.mix_operations, 1_000_000);
        let near = MixRecord::from(mix_of(&reads, 1_000_000).expect("a mix"));
        let nudged = MixRecord {
            point_lookups: near.point_lookups - 0.05,
            updates: near.updates + 0.05,
            ..near
        };
        assert!(near.same_mix_as(&nudged));
        assert!(!near.same_mix_as(&MixRecord::from(mix_of(&writes, 1_000_000).expect("mix"))));
        // A record from a build without the count reads as held zero times.
        let text = toml::to_string(&held)
            .expect("encodes")
            .replace("mix_held = 4\n", "");
        let old: Decision = toml::from_str(&text).expect("decodes");
        assert_eq!(old.mix_held, 0);
        // One without the operations counted: as many intervals of its own operations as it
        // held, then this one's.
        let text = toml::to_string(&held)
            .expect("encodes")
            .replace("mix_operations = 4000000\n", "");
        let old: Decision = toml::from_str(&text).expect("decodes");
        assert_eq!((old.mix_held, old.mix_operations), (4, 0));
        let resumed = AutoTuneState {
            history: vec![old],
            ..AutoTuneState::default()
        };
        let mix = MixRecord::from(mix_of(&reads, 1_000_000).expect("a mix"));
        assert_eq!(resumed.mix_operations(&mix, 500_000), 4_500_000);
    }

    /// What an engine measures after a fill of `facts()`'s tree at `write_micros` per put
    /// (stalls included), `stall_share` of it stalled, merges writing every entry `merged` times
    /// at a microsecond each; lookups' device reads at 80 us (20 us of it the cached part).
    fn measured(write_micros: f64, stall_share: f64, merged: f64) -> Measurements {
        let writes = 1_000_000u64;
        let write_nanos = (writes as f64 * write_micros * 1e3) as u64;
        let merged_entries = writes as f64 * merged;
        Measurements {
            device_block_probes: 1_000,
            device_block_nanos: 1_000 * 80_000,
            cached_block_probes: 1_000,
            cached_block_nanos: 1_000 * 20_000,
            rejected_probes: 1_000,
            rejected_nanos: 1_000 * 500,
            timed_write_entries: writes / 16,
            // The timed writes' time without their stalls.
            timed_write_nanos: (write_nanos as f64 * (1.0 - stall_share) / 16.0) as u64,
            write_entries: writes,
            write_stall_micros: (write_nanos as f64 * stall_share / 1e3) as u64,
            compaction_write_bytes: (merged_entries * facts().entry_bytes) as u64,
            compaction_micros: merged_entries as u64,
            compaction_processor_micros: 0,
            probed_reads: 0,
            probed_read_nanos: 0,
            block_reads: 0,
            block_read_nanos: 0,
            timed_seeks: 0,
            timed_seek_runs: 0,
            timed_seek_nanos: 0,
            timed_lookups: 0,
            timed_lookup_nanos: 0,
        }
    }

    /// Decides `rounds` times on the same interval of `lookups` lookups and `writes` writes,
    /// recording each decision, and returns the decisions up to the first switch.
    fn decide_rounds(
        options: &AutoTuneOptions,
        facts: &TreeFacts,
        current: &CurrentDesign,
        (lookups, writes): (u64, u64),
        rounds: u64,
    ) -> Vec<Decision> {
        decide_each_round(options, current, rounds, |n| {
            (*facts, totals(lookups * n, writes * n))
        })
    }

    /// Decides `rounds` times, on the tree and lifetime totals `round(n)` gives after `n`
    /// intervals, recording each decision; returns the decisions up to the first switch.
    fn decide_each_round(
        options: &AutoTuneOptions,
        current: &CurrentDesign,
        rounds: u64,
        round: impl Fn(u64) -> (TreeFacts, WorkloadTotals),
    ) -> Vec<Decision> {
        let mut state = AutoTuneState::default();
        let mut decisions = Vec::new();
        for n in 1..=rounds {
            let (facts, at) = round(n);
            let verdict =
                decide(options, &facts, &state.interval(&at), current, &state).expect("decides");
            decisions.push(verdict.decision.clone());
            state.record(verdict.decision, &at);
            if verdict.switch_to.is_some() {
                break;
            }
        }
        decisions
    }

    /// The point lookups' block reads are priced at the share the device served on the design
    /// in force over the mix: a hot spot the cache holds is predicted at its cached price, the
    /// share is counted from the mix's first interval (or the last switch), and without enough
    /// timed probes every read stays a page read.
    #[test]
    fn point_lookups_are_priced_at_the_measured_share_of_reads_from_the_device() {
        let per_interval = |device: u64, cached: u64| Measurements {
            device_block_probes: device,
            device_block_nanos: device * 80_000,
            cached_block_probes: cached,
            cached_block_nanos: cached * 20_000,
            rejected_probes: 1_000,
            rejected_nanos: 1_000 * 500,
            ..Measurements::default()
        };
        // Read-only intervals of 1,000,000 lookups; the probes timed in each: 50 from the
        // device, 950 cached (a hot spot the cache holds).
        let hot = |n: u64| per_interval(50 * n, 950 * n);
        let leveling = design(CompactionKind::Leveling, 10.0);
        let decisions = decide_each_round(&measuring(), &leveling, 3, |n| {
            (
                TreeFacts {
                    measurements: hot(n),
                    ..facts()
                },
                totals(1_000_000 * n, 0),
            )
        });
        for decision in &decisions {
            let share = decision.point_read_misses.expect("timed enough");
            assert!((share - 0.05).abs() < 1e-12, "{decision}");
            assert!(decision
                .to_string()
                .contains("point reads 5.0% from the device"));
            let costs = decision.costs.expect("measured");
            // A cached probe less a rejected one: 19.5 us searched per block.
            let searched = costs.seconds_per_block_searched.expect("measured");
            assert!((searched - 19.5e-6).abs() < 1e-12, "{searched}");
        }
        // Priced as if every block came from the device, the same tree is predicted slower.
        let cold = |n: u64| per_interval(1_000 * n, 0);
        let all_device = decide_each_round(&measuring(), &leveling, 1, |n| {
            (
                TreeFacts {
                    measurements: cold(n),
                    ..facts()
                },
                totals(1_000_000 * n, 0),
            )
        });
        let predicted = |d: &Decision| d.current.as_ref().expect("priced").predicted_ops;
        assert_eq!(all_device[0].point_read_misses, Some(1.0));
        assert!(predicted(&decisions[0]) > 1.5 * predicted(&all_device[0]));
        // The span: the mix's intervals since the last switch.
        let mut state = AutoTuneState::default();
        let record = |state: &mut AutoTuneState, measured: Measurements, switched: bool| {
            let mut decision = Decision::kept(state.decisions + 1, 1, None, 1, String::new());
            decision.measured = Some(measured);
            decision.switched = switched;
            state.record(decision, &totals(state.decisions + 1, 0));
        };
        // No history yet: since the database opened.
        assert_eq!(state.point_read_miss_share(&hot(1), 1), Some(0.05));
        record(&mut state, per_interval(1_000, 0), false);
        record(&mut state, per_interval(1_000, 0), true);
        // After the switch, 100 of 1,100 more probes read the device.
        let now = per_interval(1_100, 1_000);
        let share = state.point_read_miss_share(&now, 5).expect("enough");
        assert!((share - 100.0 / 1_100.0).abs() < 1e-12, "{share}");
        // Too few probes since the switch, and a count that went back.
        assert_eq!(
            state.point_read_miss_share(&per_interval(1_010, 20), 5),
            None
        );
        assert_eq!(state.point_read_miss_share(&per_interval(10, 10), 5), None);
    }

    #[test]
    fn measured_costs_that_make_writes_cheap_keep_leveling_on_a_write_heavy_mix() {
        // A write-heavy mix: 20,000 writes for every 250 lookups.
        let mix = (250, 20_000);
        let leveling = design(CompactionKind::Leveling, 10.0);
        // Priced as page I/O at the default device, leveling's merges make its writes the
        // dearest: another design is ranked first and switched to once the horizon pays.
        // (Priced by its replay, leveling is less far behind than the closed form said: the
        // switch pays over a horizon of 30 intervals, not the default 20.)
        let longer = AutoTuneOptions {
            horizon_intervals: 40.0,
            ..quick()
        };
        let paged = decide_rounds(&longer, &facts(), &leveling, mix, 30);
        let first = &paged[0];
        assert!(first.costs.is_none() && first.measured.is_none());
        assert_ne!(
            first.candidates[0].policy,
            CompactionKind::Leveling,
            "{first}"
        );
        assert!(first.gain >= 0.10, "{first}");
        assert!(
            paged.last().expect("decisions").switched,
            "never switched: {first}"
        );
        // Measured: a put takes 2 us in the foreground, writers never waited for a merge, and
        // merges took 0.1 us per entry they wrote: they keep up with every design's writes on
        // their thread, so every design writes at the same foreground price, and none is worth a
        // switch.
        let cheap = TreeFacts {
            measurements: Measurements {
                compaction_micros: 800_000,
                compaction_processor_micros: 0,
                ..measured(2.0, 0.0, 8.0)
            },
            ..facts()
        };
        let kept = decide_rounds(&measuring(), &cheap, &leveling, mix, 20);
        assert_eq!(kept.len(), 20);
        for decision in &kept {
            assert!(!decision.switched, "{decision}");
            let costs = decision.costs.expect("costs recorded");
            assert!((costs.seconds_per_update.expect("measured") - 2e-6).abs() < 1e-9);
            assert_eq!(costs.stall_seconds_per_entry_merged, Some(0.0));
            assert!(decision.gain < 0.10, "{decision}");
            assert_eq!(decision.measured, Some(cheap.measurements));
        }
        // The same measurements with measured costs turned off price pages again.
        let unmeasured = decide_rounds(&longer, &cheap, &leveling, mix, 30);
        assert!(unmeasured[0].costs.is_none() && unmeasured[0].measured.is_none());
        assert!(unmeasured.last().expect("decisions").switched);
    }

    #[test]
    fn measured_costs_that_make_writes_expensive_still_switch_from_leveling() {
        let mix = (250, 20_000);
        let leveling = design(CompactionKind::Leveling, 10.0);
        // Writers waited for merges two thirds of the time: 20 us per put, 13.3 of it stalled,
        // and each entry a merge wrote took it 3 us: leveling's merges take longer per put than
        // the put's 6.7 us in the foreground, so they pace its writes.
        let dear = TreeFacts {
            measurements: Measurements {
                compaction_micros: 3 * 8_000_000,
                compaction_processor_micros: 0,
                ..measured(20.0, 2.0 / 3.0, 8.0)
            },
            ..facts()
        };
        let longer = AutoTuneOptions {
            horizon_intervals: 40.0,
            ..measuring()
        };
        let decisions = decide_rounds(&longer, &dear, &leveling, mix, 40);
        let first = &decisions[0];
        let costs = first.costs.expect("costs recorded");
        let stall = costs.stall_seconds_per_entry_merged.expect("measured");
        assert!((stall - 20e-6 * 2.0 / 3.0 / 8.0).abs() < 1e-9, "{first}");
        assert!((costs.seconds_per_update.expect("measured") - 20e-6 / 3.0).abs() < 1e-9);
        assert_ne!(
            first.candidates[0].policy,
            CompactionKind::Leveling,
            "{first}"
        );
        assert!(first.gain >= 0.10, "{first}");
        let last = decisions.last().expect("decisions");
        assert!(last.switched, "never switched: {last}");
        // The round trip is priced at the merges' measured 3 us per entry on their one thread:
        // two rewrites of the million entries.
        assert!((last.switch_seconds - 6.0).abs() < 1e-6, "{last}");
    }

    #[test]
    fn a_mix_with_writes_keeps_the_design_until_its_write_costs_are_measured() {
        let mix = (250, 20_000);
        let leveling = design(CompactionKind::Leveling, 10.0);
        let wants_writes = "write costs not measured yet";
        // Nothing measured: every decision on the write-heavy mix keeps leveling unpriced, where
        // page-I/O pricing of the same facts switches away from it (the test above).
        let kept = decide_rounds(&measuring(), &facts(), &leveling, mix, 20);
        assert_eq!(kept.len(), 20);
        for decision in &kept {
            assert!(
                !decision.switched && decision.reason.starts_with(wants_writes),
                "{decision}"
            );
            assert!(decision.candidates.is_empty() && decision.current.is_none());
            assert_eq!(decision.measured, Some(Measurements::default()));
        }
        // Reads measured, writes timed 64 times, but no compaction finished: still kept.
        let no_compaction = TreeFacts {
            measurements: Measurements {
                compaction_write_bytes: 0,
                compaction_micros: 0,
                compaction_processor_micros: 0,
                ..measured(2.0, 0.0, 8.0)
            },
            ..facts()
        };
        let verdict = decide(
            &measuring(),
            &no_compaction,
            &totals(250, 20_000),
            &leveling,
            &AutoTuneState::default(),
        )
        .expect("decides");
        let costs = verdict.decision.costs.expect("costs recorded");
        assert!(
            costs.seconds_per_update.is_some() && costs.stall_seconds_per_entry_merged.is_none()
        );
        assert!(
            verdict.decision.reason.starts_with(wants_writes),
            "{}",
            verdict.decision
        );
        assert!(verdict.switch_to.is_none());
        // A compaction finished but fewer than 64 writes were timed: still kept.
        let few_timed = TreeFacts {
            measurements: Measurements {
                timed_write_entries: MIN_SAMPLES - 1,
                ..measured(2.0, 0.0, 8.0)
            },
            ..facts()
        };
        let verdict = decide(
            &measuring(),
            &few_timed,
            &totals(250, 20_000),
            &leveling,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(
            verdict.decision.reason.starts_with(wants_writes),
            "{}",
            verdict.decision
        );
        // A read-only mix on the same unmeasured tree is priced and decided.
        let reads = decide(
            &measuring(),
            &facts(),
            &totals(1_000_000, 0),
            &design(CompactionKind::Tiering, 10.0),
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(
            !reads.decision.reason.starts_with(wants_writes),
            "{}",
            reads.decision
        );
        assert!(!reads.decision.candidates.is_empty() && reads.decision.current.is_some());
        // With measured costs off, writes are priced as pages and the mix is decided.
        let paged = decide(
            &quick(),
            &facts(),
            &totals(250, 20_000),
            &leveling,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!paged.decision.candidates.is_empty(), "{}", paged.decision);
    }

    #[test]
    fn measurements_give_costs_once_sampled_enough() {
        let m = measured(4.0, 0.25, 5.0);
        let costs = m.costs(128.0);
        assert!((costs.seconds_per_read.expect("measured") - 60e-6).abs() < 1e-12);
        assert!((costs.seconds_per_run_probed.expect("measured") - 0.5e-6).abs() < 1e-12);
        assert!((costs.seconds_per_update.expect("measured") - 3e-6).abs() < 1e-12);
        let stall = costs.stall_seconds_per_entry_merged.expect("measured");
        assert!((stall - 0.2e-6).abs() < 1e-12);
        assert!((costs.merge_seconds_per_entry.expect("measured") - 1e-6).abs() < 1e-12);
        assert_eq!(costs.seconds_per_run_sought, None);
        // Seeks timed: their processor time over the runs they sought, once there are enough.
        let seeking = Measurements {
            timed_seeks: MIN_SAMPLES,
            timed_seek_runs: 4 * MIN_SAMPLES,
            timed_seek_nanos: 4 * MIN_SAMPLES * 6_000,
            ..m
        };
        let sought = seeking.costs(128.0).seconds_per_run_sought.expect("timed");
        assert!((sought - 6e-6).abs() < 1e-12, "{sought}");
        let device = AutoTuneOptions::default().device_with(&seeking.costs(128.0), 2.0, 0.0);
        assert!((device.cpu.seconds_per_run_sought - 6e-6).abs() < 1e-12);
        assert!(seeking
            .costs(128.0)
            .to_string()
            .contains("run sought 6.000 us"));
        let few = Measurements {
            timed_seeks: MIN_SAMPLES - 1,
            ..seeking
        };
        assert_eq!(few.costs(128.0).seconds_per_run_sought, None);
        // Lookups timed whole: their time outside the file probes, once there are enough.
        let looked_up = Measurements {
            timed_lookups: MIN_SAMPLES,
            timed_lookup_nanos: MIN_SAMPLES * 1_500,
            ..m
        };
        let lookup = looked_up.costs(128.0).seconds_per_lookup.expect("timed");
        assert!((lookup - 1.5e-6).abs() < 1e-12, "{lookup}");
        let device = AutoTuneOptions::default().device_with(&looked_up.costs(128.0), 2.0, 0.0);
        assert!((device.cpu.seconds_per_lookup - 1.5e-6).abs() < 1e-12);
        assert_eq!(m.costs(128.0).seconds_per_lookup, None);
        let spans = seeking.since(&m).expect("counts only grew");
        assert_eq!(spans.timed_seek_runs, 4 * MIN_SAMPLES);
        assert_eq!(m.plus(&spans), seeking);
        // Too few samples, no compaction, no entry size: nothing is priced from them.
        let thin = Measurements {
            device_block_probes: MIN_SAMPLES - 1,
            rejected_probes: MIN_SAMPLES - 1,
            timed_write_entries: MIN_SAMPLES - 1,
            compaction_write_bytes: 0,
            ..m
        };
        assert_eq!(thin.costs(128.0), MeasuredCosts::default());
        assert_eq!(m.costs(0.0).merge_seconds_per_entry, None);
        assert_eq!(m.costs(f64::NAN).stall_seconds_per_entry_merged, None);
        // Device probes no slower than cached ones: the device mean alone.
        let flat = Measurements {
            cached_block_nanos: 1_000 * 90_000,
            ..m
        };
        assert!((flat.costs(128.0).seconds_per_read.expect("measured") - 80e-6).abs() < 1e-12);
        // The device the tuner gets: measured where measured, the options' settings elsewhere.
        let device = AutoTuneOptions::default().device_with(&costs, 1.0, 0.0);
        assert!((device.seconds_per_read - 60e-6).abs() < 1e-12);
        assert_eq!(
            (device.write_read_cost_ratio, device.merge_read_cost_ratio),
            (0.0, 0.0)
        );
        // Merges priced at their elapsed seconds per entry, as background work on the thread
        // given (the stalls are recorded, not priced).
        assert!((device.cpu.seconds_per_entry_merged - 1e-6).abs() < 1e-12);
        assert_eq!(device.cpu.merge_threads, 1.0);
        assert_eq!(
            AutoTuneOptions::default()
                .device_with(&costs, 2.0, 0.0)
                .cpu
                .merge_threads,
            2.0
        );
        let partial = AutoTuneOptions::default().device_with(
            &MeasuredCosts {
                seconds_per_update: None,
                ..costs
            },
            1.0,
            0.0,
        );
        assert_eq!(partial.write_read_cost_ratio, 1.0);
        assert_eq!(partial.cpu.seconds_per_entry_merged, 0.0);
        assert_eq!(
            AutoTuneOptions::default().device_with(&MeasuredCosts::default(), 1.0, 0.0),
            AutoTuneOptions::default().device()
        );
    }

    #[test]
    fn the_read_probe_prices_reads_until_the_lookups_time_enough_device_reads() {
        // A hot spot the cache holds: 25 timed device reads, too few for a price; the probe's
        // 64 reads at 418 us each price them, and the record says where the price came from.
        let hot = Measurements {
            device_block_probes: 25,
            device_block_nanos: 25 * 430_000,
            probed_reads: PROBE_READS,
            probed_read_nanos: PROBE_READS * 418_000,
            ..measured(4.0, 0.25, 5.0)
        };
        let costs = hot.costs(128.0);
        assert!((costs.seconds_per_read.expect("probed") - 418e-6).abs() < 1e-12);
        assert!(costs.read_probed);
        assert!(
            costs.to_string().contains("418.000 us (read probe)"),
            "{costs}"
        );
        let device = AutoTuneOptions::default().device_with(&costs, 1.0, 0.0);
        assert!((device.seconds_per_read - 418e-6).abs() < 1e-12);
        // Once the lookups timed enough device reads, their price replaces the probe's.
        let timed = Measurements {
            device_block_probes: MIN_SAMPLES,
            device_block_nanos: MIN_SAMPLES * 80_000,
            ..hot
        };
        let costs = timed.costs(128.0);
        assert!((costs.seconds_per_read.expect("timed") - 60e-6).abs() < 1e-12);
        assert!(!costs.read_probed);
        assert!(
            costs.to_string().contains("60.000 us (timed lookups)"),
            "{costs}"
        );
        // Neither: unmeasured, priced at the setting.
        let neither = Measurements {
            probed_reads: 0,
            probed_read_nanos: 0,
            ..hot
        };
        assert_eq!(neither.costs(128.0).seconds_per_read, None);
        assert!(!neither.costs(128.0).read_probed);
        assert!(!neither.costs(128.0).read_counted);
        // Scans time no probe, but their device reads, every one counted, price a read once
        // there are enough of them, before the probe (taken once, perhaps under a fill's merges).
        let scanned = Measurements {
            block_reads: MIN_SAMPLES - 1,
            block_read_nanos: (MIN_SAMPLES - 1) * 41_000,
            ..hot
        };
        assert!(scanned.costs(128.0).read_probed, "too few counted reads");
        let scanned = Measurements {
            block_reads: 1_000,
            block_read_nanos: 1_000 * 41_000,
            ..hot
        };
        let costs = scanned.costs(128.0);
        assert!((costs.seconds_per_read.expect("counted") - 41e-6).abs() < 1e-12);
        assert!(costs.read_counted && !costs.read_probed);
        assert!(
            costs.to_string().contains("41.000 us (block reads)"),
            "{costs}"
        );
        // The lookups' timed price still comes first.
        let costs = timed.plus(&Measurements {
            block_reads: 1_000,
            block_read_nanos: 1_000 * 41_000,
            ..Measurements::default()
        });
        let costs = costs.costs(128.0);
        assert!((costs.seconds_per_read.expect("timed") - 60e-6).abs() < 1e-12);
        assert!(!costs.read_counted && !costs.read_probed);
        // Counted reads add up and subtract like the other counts.
        assert_eq!(scanned.plus(&scanned).block_reads, 2_000);
        assert_eq!(
            scanned
                .plus(&scanned)
                .since(&scanned)
                .map(|span| span.block_read_nanos),
            Some(1_000 * 41_000)
        );
        // The probe's reads add up like the other counts.
        assert_eq!(hot.plus(&hot).probed_reads, 2 * PROBE_READS);
        assert_eq!(hot.plus(&hot).probed_read_nanos, 2 * PROBE_READS * 418_000);
        // Older records, without the probe's fields or the source, still read.
        let record = toml::to_string(&neither.costs(128.0)).expect("serialize");
        assert!(!record.contains("read_probed"), "{record}");
        let parsed: MeasuredCosts = toml::from_str(&record).expect("parse");
        assert_eq!(parsed, neither.costs(128.0));
    }

    #[test]
    fn the_problem_prices_ecotunes_index_at_the_trees_key_size() {
        use crate::model::tuner::{top_index_bits, DEFAULT_KEY_BYTES};
        let workload = mix_of(&totals(1_000, 0), 1_000_000).expect("a mix");
        let device = AutoTuneOptions::default().device();
        let buffer = (2u64 << 20) as f64 * 8.0;
        let unknown = facts().problem(workload, device);
        assert_eq!(unknown.key_bytes(), DEFAULT_KEY_BYTES);
        let long = TreeFacts {
            key_bytes: Some(100.0),
            ..facts()
        }
        .problem(workload, device);
        assert_eq!(long.key_bytes(), 100.0);
        let short_index = top_index_bits(&unknown, ModelPolicy::ECOTUNE, buffer);
        let long_index = top_index_bits(&long, ModelPolicy::ECOTUNE, buffer);
        // The index holds the same keys at 100 bytes each instead of 16.
        let per_key = |bytes| crate::model::ecotune::index_bits_per_key(bytes);
        let expected = per_key(100.0) / per_key(DEFAULT_KEY_BYTES);
        assert!(expected > 3.0);
        assert!(
            (long_index / short_index - expected).abs() < 1e-9,
            "{long_index} against {short_index}"
        );
        // A key size the workload gives wins over the tree's.
        let given = TreeFacts {
            key_bytes: Some(100.0),
            ..facts()
        }
        .problem(
            Workload {
                key_bytes: Some(40.0),
                ..workload
            },
            device,
        );
        assert_eq!(given.key_bytes(), 40.0);
    }

    /// One interval's measurements: `probes` lookups' probes that read no block at
    /// `run_nanos` each and `writes` timed writes at `write_nanos` per entry, with a finished
    /// compaction that never stalled the writers (so write costs are measured).
    fn interval_measured(run_nanos: u64, write_nanos: u64) -> Measurements {
        let (probes, writes) = (1_000u64, 1_000u64);
        Measurements {
            device_block_probes: 100,
            device_block_nanos: 100 * 100_000,
            rejected_probes: probes,
            rejected_nanos: probes * run_nanos,
            timed_write_entries: writes,
            timed_write_nanos: writes * write_nanos,
            write_entries: writes * 16,
            compaction_write_bytes: (writes as f64 * 16.0 * 8.0 * facts().entry_bytes) as u64,
            compaction_micros: writes * 16 * 8,
            compaction_processor_micros: 0,
            ..Measurements::default()
        }
    }

    /// Decides once per interval of `mix` (lookups, writes), the engine's measurements growing by
    /// each of `rounds` in turn; the decisions.
    fn decide_measured(
        options: &AutoTuneOptions,
        current: &CurrentDesign,
        (lookups, writes): (u64, u64),
        rounds: &[Measurements],
    ) -> Vec<Decision> {
        let mut state = AutoTuneState::default();
        let mut now = Measurements::default();
        let mut decisions = Vec::new();
        for (n, round) in (1..).zip(rounds) {
            now = now.plus(round);
            let facts = TreeFacts {
                measurements: now,
                ..facts()
            };
            let at = totals(lookups * n, writes * n);
            let verdict =
                decide(options, &facts, &state.interval(&at), current, &state).expect("decides");
            decisions.push(verdict.decision.clone());
            state.record(verdict.decision, &at);
        }
        decisions
    }

    #[test]
    fn the_costs_spread_over_the_intervals_the_mix_has_held() {
        let mut state = AutoTuneState::default();
        let mut now = Measurements::default();
        // Four intervals whose probes took 0.5, 1, 2 and 0.75 us per run and whose writes took
        // 2, 3, 2 and 2 us per entry.
        let rounds = [(500, 2_000), (1_000, 3_000), (2_000, 2_000), (750, 2_000)];
        for (n, (run, write)) in (1..).zip(rounds) {
            now = now.plus(&interval_measured(run, write));
            let decision = Decision {
                measured: Some(now),
                mix_held: n,
                ..Decision::kept(n.into(), 1, None, 1, "test".into())
            };
            state.record(decision, &totals(n.into(), 0));
        }
        let more = now.plus(&interval_measured(1_000, 2_000));
        // The mix held five intervals: the four recorded and the one ending now. The first
        // began before the first decision, where no measurement was recorded: four rounds (1, 2,
        // 0.75 and 1 us per run probed), the slowest over the fastest (the writes' 3 us over
        // 2 us spread less); the device reads the same price in every round.
        let spread = state.cost_spread(&more, 5, facts().entry_bytes);
        assert!((spread.processor - 2.0 / 0.75).abs() < 1e-9, "{spread:?}");
        assert!((spread.device - 1.0).abs() < 1e-9, "{spread:?}");
        assert_eq!(spread.flush, 1.0);
        // Held two intervals: the last recorded (0.75 us) and this one (1 us).
        let spread = state.cost_spread(&more, 2, facts().entry_bytes);
        assert!((spread.processor - 1.0 / 0.75).abs() < 1e-9, "{spread:?}");
        // A mix that has just begun has one round: no spread.
        assert_eq!(
            state.cost_spread(&more, 1, facts().entry_bytes),
            CostSpread::NONE
        );
        // Counters that went back (the database reopened) give no round across the reopen.
        let reopened = interval_measured(1_000, 2_000);
        assert_eq!(reopened.since(&now), None);
        assert_eq!(
            state.cost_spread(&reopened, 1, facts().entry_bytes),
            CostSpread::NONE
        );
        // An interval of too few samples measures nothing on its own.
        let few = now.plus(&Measurements {
            rejected_probes: MIN_SAMPLES - 1,
            rejected_nanos: (MIN_SAMPLES - 1) * 100_000,
            ..Measurements::default()
        });
        let spread = state.cost_spread(&few, 2, facts().entry_bytes);
        assert!((spread.processor - 1.0).abs() < 1e-9, "{spread:?}");
    }

    #[test]
    fn designs_tied_within_the_measured_spread_go_to_the_fewest_merges() {
        let mix = (20_000, 5_000);
        let leveling = design(CompactionKind::Leveling, 10.0);
        // The same costs measured in every interval: no spread, the model's order stands.
        let steady = decide_measured(
            &measuring(),
            &leveling,
            mix,
            &[interval_measured(1_000, 3_000); 6],
        );
        for decision in &steady {
            assert_eq!(decision.spread, Some(CostSpread::NONE), "{decision}");
            // Designs the model prices alike (leveling with and without dynamic level bytes)
            // are tied even without a spread; the model's first stays first.
            assert_eq!(decision.model_rank, 1, "{decision}");
            // Nothing moved, nothing to say about ties.
            assert!(!decision.to_string().contains("spread"), "{decision}");
        }
        // Runs probed measured at 0.3 to 3 us from interval to interval: designs within that
        // spread of the model's best are tied with it.
        let moving: Vec<Measurements> = [300, 3_000, 1_000, 300, 3_000, 1_000]
            .iter()
            .map(|run| interval_measured(*run, 3_000))
            .collect();
        let decisions = decide_measured(&measuring(), &leveling, mix, &moving);
        // The first decision has one round, no spread; from the fourth on, the rounds spread
        // the processor's costs tenfold (3 us over 0.3 us).
        assert_eq!(decisions[0].spread, Some(CostSpread::NONE));
        let tie = &decisions[3];
        assert!(
            (tie.spread.expect("priced").processor - 10.0).abs() < 1e-9,
            "{tie}"
        );
        assert!(tie.tied >= 2 && tie.model_rank > 1, "{tie}");
        assert!(
            tie.to_string().contains(&format!(
                "{} tied within the costs' spread (device x1.00, processor x10.00): the fewest \
                 merges per update, the model's rank {}",
                tie.tied, tie.model_rank
            )),
            "{tie}"
        );
        // The pick merges less per update than the model's best, which the decisions without a
        // spread ranked first.
        let model_best = &steady[0].candidates[0];
        let pick = &tie.candidates[0];
        let workload = mix_of(&totals(mix.0, mix.1), 1_000_000).expect("a mix");
        let mut problem = facts().problem(workload, measuring().device());
        problem.device.write_read_cost_ratio = 1.0;
        let merges = |record: &CandidateRecord| {
            let policy = ModelPolicy::new(record.policy, record.garnering_c.unwrap_or(1.0))
                .expect("a policy");
            let buffer = problem.fixed_buffer_bits.expect("fixed");
            evaluate_with(
                &problem,
                policy,
                record.size_ratio,
                buffer,
                FilterAllocatorKind::Monkey,
            )
            .expect("priced")
            .predicted
            .update_io
        };
        assert!(
            merges(pick) < merges(model_best),
            "{pick:?} against {model_best:?}"
        );
        // Neither is worth a switch: the pick is not predicted 10% faster than leveling.
        assert!(decisions.iter().all(|d| !d.switched));
        // Without updates a tie keeps the model's best, as `strata tune` does.
        let reads = decide_measured(&measuring(), &leveling, (20_000, 0), &moving);
        assert!(reads.iter().all(|d| d.model_rank == 1), "{}", reads[3]);
    }

    #[test]
    fn measurements_add_up_across_spans() {
        let a = measured(2.0, 0.1, 6.0);
        let b = measured(4.0, 0.2, 3.0);
        let sum = a.plus(&b);
        assert_eq!(sum.device_block_probes, 2_000);
        assert_eq!(
            sum.timed_write_nanos,
            a.timed_write_nanos + b.timed_write_nanos
        );
        assert_eq!(
            sum.compaction_write_bytes,
            a.compaction_write_bytes + b.compaction_write_bytes
        );
        assert_eq!(
            sum.write_stall_micros,
            a.write_stall_micros + b.write_stall_micros
        );
        assert_eq!(a.plus(&Measurements::default()), a);
        let full = Measurements {
            device_block_nanos: u64::MAX,
            ..a
        };
        assert_eq!(full.plus(&a).device_block_nanos, u64::MAX);
    }

    #[test]
    fn records_and_options_from_builds_without_measured_costs_decode() {
        let decision = decide(
            &measuring(),
            &TreeFacts {
                measurements: measured(2.0, 0.1, 6.0),
                ..facts()
            },
            &totals(900_000, 100_000),
            &design(CompactionKind::Tiering, 10.0),
            &AutoTuneState::default(),
        )
        .expect("decides")
        .decision;
        assert!(decision.measured.is_some() && decision.costs.is_some());
        assert!(
            decision.to_string().contains("[measured: read 60.000 us"),
            "{decision}"
        );
        let text = toml::to_string(&decision).expect("encodes");
        let back: Decision = toml::from_str(&text).expect("decodes");
        assert_eq!(back, decision);
        // A record written before the measurements were kept: no `measured`, no `costs`.
        let old = Decision {
            measured: None,
            costs: None,
            ..decision
        };
        let text = toml::to_string(&old).expect("encodes");
        assert!(
            !text.contains("measured") && !text.contains("costs"),
            "{text}"
        );
        let back: Decision = toml::from_str(&text).expect("decodes");
        assert_eq!((back.measured, back.costs), (None, None));
        // Options written before the setting existed price with measured costs.
        let options: AutoTuneOptions = toml::from_str("min_gain = 0.2\n").expect("decodes");
        assert!(options.measured_costs && options.min_gain == 0.2);
    }

    /// The measurements of a fill on the shifting workload (docs/BENCHMARKS.md, recipe 38), as
    /// its decision line recorded them when the tree reached 300,405 entries: a put took
    /// `write_micros` in the foreground, writers stalled `stall_micros` per entry the merges
    /// wrote, merges took `merge_micros` per entry they wrote, and reads were priced by the read
    /// probe's 141.5 us.
    fn fill_measurements(write_micros: f64, stall_micros: f64, merge_micros: f64) -> Measurements {
        let writes = 300_000u64;
        let merged = 1_000_000u64;
        Measurements {
            timed_write_entries: writes / 16,
            timed_write_nanos: (writes as f64 / 16.0 * write_micros * 1e3) as u64,
            write_entries: writes,
            write_stall_micros: (merged as f64 * stall_micros) as u64,
            compaction_write_bytes: merged * 116,
            compaction_micros: (merged as f64 * merge_micros) as u64,
            compaction_processor_micros: 0,
            probed_reads: PROBE_READS,
            probed_read_nanos: PROBE_READS * 141_500,
            ..Measurements::default()
        }
    }

    /// The shifting workload's tree as the fill's decision saw it: 300,405 entries of 116 bytes,
    /// 2 MiB write buffers, 10 bits per key of filters, merges on the engine's two threads.
    fn filling_tree(measurements: Measurements) -> TreeFacts {
        TreeFacts {
            entries: 300_405,
            entry_bytes: 116.0,
            buffer_bits: (2u64 << 20) as f64 * 8.0,
            filter_bits: 10.0 * 300_405.0,
            level0_runs: 1.5,
            runs_now: 0,
            level0_runs_now: 0,
            block_cache_bytes: 0.0,
            merge_threads: 2.0,
            merge_share: 0.0,
            key_bytes: Some(16.0),
            measurements,
        }
    }

    /// Decides on a fill: each interval writes 28,600 entries and the tree grows by 28,610
    /// from 14,305 (as the shifting workload's fill did), `rounds` times, with `measurements`;
    /// returns the decisions up to the first switch.
    fn decide_fill(measurements: Measurements, rounds: u64) -> Vec<Decision> {
        decide_fill_measured(rounds, |_| measurements)
    }

    /// The loop of [`decide_fill`], with the engine's measurements as they stand after `n`
    /// intervals given by `measured(n)`.
    fn decide_fill_measured(rounds: u64, measured: impl Fn(u64) -> Measurements) -> Vec<Decision> {
        let leveling = design(CompactionKind::Leveling, 10.0);
        decide_each_round(&measuring(), &leveling, rounds, |n| {
            let tree = TreeFacts {
                entries: 14_305 + 28_610 * (n - 1),
                filter_bits: 10.0 * (14_305 + 28_610 * (n - 1)) as f64,
                ..filling_tree(measured(n))
            };
            (tree, totals(0, 28_600 * n))
        })
    }

    /// A fill whose intervals lengthen (decisions held back by their share of a core cover more
    /// writes as they slow down): the horizon is the writes the mix has served, not as many
    /// intervals again of the last one's, so a growing tree is priced at no more than twice its
    /// entries. Counted in intervals (8 of 28,600 writes, then each twice the one before), the
    /// priced decisions here would have trusted the fill for 10-14 intervals of the last one's
    /// where it had served 2.1-3.5, and priced the tree at 2.1-2.7 times its entries.
    #[test]
    fn a_fill_of_lengthening_intervals_is_priced_as_long_again_as_it_has_lasted() {
        let interval = |n: u64| 28_600 * (1u64 << n.saturating_sub(8));
        let written = |n: u64| (1..=n).map(interval).sum::<u64>();
        let leveling = design(CompactionKind::Leveling, 10.0);
        // Merges that keep up: nothing pays for a switch, so every round decides.
        let measurements = fill_measurements(1.667, 0.027, 0.1262);
        let decisions = decide_each_round(&measuring(), &leveling, 14, |n| {
            // One entry in the tree per entry written.
            let tree = TreeFacts {
                entries: written(n),
                filter_bits: 10.0 * written(n) as f64,
                ..filling_tree(measurements)
            };
            (tree, totals(0, written(n)))
        });
        assert_eq!(decisions.len(), 14);
        let mut priced = 0;
        for (n, decision) in (1..).zip(&decisions) {
            assert_eq!(decision.operations, interval(n), "{decision}");
            assert_eq!(decision.mix_operations, written(n), "{decision}");
            assert!(!decision.switched, "{decision}");
            if decision.priced_entries == 0 {
                continue;
            }
            priced += 1;
            // As many writes again as the fill has served (under the cap of 20 intervals), one
            // entry each.
            let horizon = written(n).min(20 * interval(n));
            assert!(
                decision.priced_entries.abs_diff(written(n) + horizon) <= 1,
                "{decision}"
            );
            assert!(
                decision.priced_entries <= 2 * decision.entries,
                "{decision}"
            );
        }
        assert!(priced >= 4, "{decisions:?}");
    }

    #[test]
    fn merges_that_cannot_keep_up_on_the_merge_threads_make_a_fill_switch_from_leveling() {
        // Writers barely stalled (0.027 us per merged entry), but every entry a merge wrote took
        // 1.262 us of merging: leveling's merges, on two threads, take longer per put than the
        // put itself, so the fill is the merges' to pace, sooner or later. Priced by stalls, the
        // designs wrote at one price (tiering was ranked first by 1.2-3.0%, and leveling kept
        // through the fill).
        let decisions = decide_fill(fill_measurements(1.667, 0.027, 1.262), 34);
        let last = decisions.last().expect("decisions");
        assert!(last.switched, "never switched: {last}");
        assert_ne!(
            last.candidates[0].policy,
            CompactionKind::Leveling,
            "{last}"
        );
        // Switched in the first half of the fill, a few decisions after the tree was large
        // enough to price (16 write buffers, about 290,000 entries here).
        assert!(last.entries < 500_000, "{last}");
        for (i, decision) in decisions.iter().enumerate() {
            // The mix held from the first decision on, priced or not: the horizon of a fill
            // counts the intervals a small tree was kept unpriced.
            assert_eq!(decision.mix_held, i as u32 + 1, "{decision}");
        }
        let first_priced = decisions
            .iter()
            .find(|decision| decision.current.is_some())
            .expect("a priced decision");
        assert!(first_priced.entries >= 280_000, "{first_priced}");
        // Priced at the tree the horizon ends with: the tree grew 28,610 entries per interval,
        // over as many writes again as the mix has served (intervals of one size here).
        let expected = first_priced.entries + 28_610 * u64::from(first_priced.mix_held);
        assert!(
            first_priced.priced_entries.abs_diff(expected) <= u64::from(first_priced.mix_held),
            "{first_priced}"
        );
        // The round trip: the tree as it is into the new design and the grown tree out of it,
        // at 1.262 us per entry on two threads.
        let round_trip = (last.entries + last.priced_entries) as f64 * 1.262e-6 / 2.0;
        assert!((last.switch_seconds - round_trip).abs() < 1e-3, "{last}");
        assert!(last.gain >= 0.5, "{last}");
        // Merges that keep up (a tenth of the time per merged entry) leave the fill to the
        // foreground, where every design writes at one price: leveling is kept.
        for decision in decide_fill(fill_measurements(1.667, 0.027, 0.1262), 34) {
            assert!(!decision.switched, "{decision}");
            assert!(decision.gain < 0.10, "{decision}");
        }
    }

    /// [`decide_fill`] with the engine's counts growing as a fill's do: each interval writes
    /// 28,600 entries (3.477 us each in the foreground), and its compactions write `merges`
    /// entries of 116 bytes per entry written, at `merge_micros` each. Returns every decision,
    /// up to the first switch.
    fn decide_fill_counted(merges: f64, merge_micros: f64, rounds: u64) -> Vec<Decision> {
        decide_fill_measured(rounds, |n| {
            let writes = 28_600 * n;
            let merged = (writes as f64 * merges) as u64;
            Measurements {
                timed_write_entries: writes / 16,
                timed_write_nanos: (writes as f64 / 16.0 * 3_477.0) as u64,
                write_entries: writes,
                compaction_write_bytes: merged * 116,
                compaction_micros: (merged as f64 * merge_micros) as u64,
                compaction_processor_micros: 0,
                probed_reads: PROBE_READS,
                probed_read_nanos: PROBE_READS * 31_600,
                ..Measurements::default()
            }
        })
    }

    /// The fill of the test above on a machine where the writer shares its processors with the
    /// merges (`TreeFacts::merge_share` 0.5, two processors) and the merges' processor time is
    /// measured (0.54 us per merged entry of their 2.543 us, the shifting workload's fill on
    /// leveling): leveling's writes pay half its merges' processor time, so designs that merge
    /// less write faster, and the decisions rank them instead of keeping leveling untried.
    #[test]
    fn a_fill_whose_writer_shares_its_processors_with_the_merges_ranks_the_designs() {
        let leveling = design(CompactionKind::Leveling, 10.0);
        let measured = |n: u64| {
            let writes = 28_600 * n;
            let merged = (writes as f64 * 2.72) as u64;
            Measurements {
                timed_write_entries: writes / 16,
                timed_write_nanos: (writes as f64 / 16.0 * 3_477.0) as u64,
                write_entries: writes,
                compaction_write_bytes: merged * 116,
                compaction_micros: (merged as f64 * 2.543) as u64,
                compaction_processor_micros: (merged as f64 * 0.54) as u64,
                probed_reads: PROBE_READS,
                probed_read_nanos: PROBE_READS * 31_600,
                ..Measurements::default()
            }
        };
        let decisions = decide_each_round(&measuring(), &leveling, 34, |n| {
            let tree = TreeFacts {
                entries: 14_305 + 28_610 * (n - 1),
                filter_bits: 10.0 * (14_305 + 28_610 * (n - 1)) as f64,
                merge_share: 0.5,
                ..filling_tree(measured(n))
            };
            (tree, totals(0, 28_600 * n))
        });
        let ranked: Vec<&Decision> = decisions
            .iter()
            .filter(|d| !d.candidates.is_empty())
            .collect();
        assert!(ranked.len() >= 10, "{}", ranked.len());
        // 3.477 us of its own and half of 2.72 merged entries at 0.54 us on a processor.
        let per_write = 3.477e-6 + 0.5 * 2.72 * 0.54e-6;
        for decision in &ranked {
            assert!(!decision.reason.contains("keep up"), "{decision}");
            let current = decision.current.as_ref().expect("priced");
            assert!(
                (current.predicted_ops * per_write - 1.0).abs() < 0.02,
                "{decision}"
            );
            assert!(decision.gain > 0.0, "{decision}");
        }
        // The same fill on processors of the merges' own: kept, every design at one price.
        for decision in decide_fill_counted(2.72, 2.543, 34) {
            assert!(!decision.switched, "{decision}");
            assert_eq!(decision.gain, 0.0, "{decision}");
        }
    }

    #[test]
    fn the_design_in_force_is_priced_at_the_merges_measured_on_it() {
        // The shifting workload's fill on leveling T = 10 (recipe 38): its compactions wrote 2.72
        // entries per entry written over the fill, at 2.543 us each on two threads, against a
        // replay of 4.7-9.2 merges per update of the grown tree (steady updates of a full tree,
        // not inserts into a growing one). Priced at its replay, leveling was predicted half as
        // fast as tiering and switched from; at its measured merges, its merges (3.459 us per
        // write on two threads) keep up with its 3.477 us writes: no design writes faster, and
        // it is kept without asking the tuner.
        let kept = decide_fill_counted(2.72, 2.543, 34);
        assert_eq!(kept.len(), 34);
        let priced: Vec<&Decision> = kept.iter().filter(|d| d.current.is_some()).collect();
        assert!(priced.len() >= 20, "{}", priced.len());
        for decision in &priced {
            assert!(!decision.switched, "{decision}");
            assert_eq!(decision.gain, 0.0, "{decision}");
            let measured = decision.merges_measured.expect("measured merges");
            assert!((measured - 2.72).abs() < 0.01, "{decision}");
            assert!(decision.reason.contains("keep up"), "{decision}");
            assert!(decision.candidates.is_empty(), "{decision}");
            let current = decision.current.as_ref().expect("priced");
            // At the foreground's price, 3.477 us per write.
            assert!(
                (current.predicted_ops * 3.477e-6 - 1.0).abs() < 1e-3,
                "{decision}"
            );
            assert!(decision.to_string().contains("measured 2.72"), "{decision}");
        }
        // 3.0 measured: its merges (3.815 us per write) fall behind its writes, so the tuner
        // ranks the designs, the design in force at its measured merges (the replay's recorded
        // beside them): the designs its merges' 9.7% would go to do not gain the 10% a switch
        // needs.
        let behind = decide_fill_counted(3.0, 2.543, 34);
        assert_eq!(behind.len(), 34);
        let ranked: Vec<&Decision> = behind.iter().filter(|d| !d.candidates.is_empty()).collect();
        assert!(ranked.len() >= 20, "{}", ranked.len());
        for decision in &ranked {
            assert!(!decision.switched, "{decision}");
            assert!(decision.gain > 0.0 && decision.gain < 0.10, "{decision}");
            let measured = decision.merges_measured.expect("measured merges");
            assert!((measured - 3.0).abs() < 0.01, "{decision}");
            let replayed = decision.merges_replayed.expect("replayed merges");
            assert!(replayed > 4.0, "{decision}");
        }
        // The same fill whose merges wrote what the replay predicts (8 per entry written): they
        // cannot keep up on two threads, and the switch is made as before.
        let switched = decide_fill_counted(8.0, 2.543, 34);
        let last = switched.last().expect("decisions");
        assert!(last.switched, "{last}");
        assert_ne!(
            last.candidates[0].policy,
            CompactionKind::Leveling,
            "{last}"
        );
        assert!(
            last.merges_measured.is_some_and(|m| (m - 8.0).abs() < 0.01),
            "{last}"
        );
        assert!(last.gain >= 0.5, "{last}");
    }

    #[test]
    fn merges_are_measured_over_the_mix_since_the_last_switch_and_need_enough_writes() {
        let snapshot = |writes: u64, merged: u64| Measurements {
            write_entries: writes,
            compaction_write_bytes: merged * 100,
            ..Measurements::default()
        };
        let decision = |mix_held: u32, switched: bool, measured: Measurements| Decision {
            mix_held,
            switched,
            measured: Some(measured),
            ..Decision::kept(1, 1, None, 1, String::new())
        };
        let state = AutoTuneState {
            history: vec![
                decision(1, false, snapshot(0, 0)),
                decision(2, false, snapshot(100_000, 500_000)),
                decision(3, true, snapshot(200_000, 1_000_000)),
                decision(4, false, snapshot(300_000, 1_300_000)),
            ],
            ..AutoTuneState::default()
        };
        let now = snapshot(400_000, 1_400_000);
        // Since the switch (the third decision): 400,000 entries merged for 200,000 written.
        let merges = state.merges_measured(&now, 5, 100.0, 1_000.0);
        assert_eq!(merges, Some(2.0));
        // A mix held two intervals reaches back one decision: 100,000 over 100,000.
        assert_eq!(state.merges_measured(&now, 2, 100.0, 1_000.0), Some(1.0));
        // Without the switch, the span reaches back to the mix's first decision: 1,400,000
        // over 400,000.
        let unswitched = AutoTuneState {
            history: state
                .history
                .iter()
                .map(|d| Decision {
                    switched: false,
                    ..d.clone()
                })
                .collect(),
            ..state.clone()
        };
        assert_eq!(
            unswitched.merges_measured(&now, 5, 100.0, 1_000.0),
            Some(3.5)
        );
        // A mix that has just begun has nothing to measure against.
        assert_eq!(state.merges_measured(&now, 1, 100.0, 1_000.0), None);
        // Fewer than eight buffers written: not measured.
        assert_eq!(state.merges_measured(&now, 2, 100.0, 20_000.0), None);
        // Counts that went back (a reopen): not measured.
        assert_eq!(
            state.merges_measured(&snapshot(10, 10), 5, 100.0, 1.0),
            None
        );
    }

    #[test]
    fn a_switch_that_pays_back_within_one_interval_does_not_wait_for_confirmation() {
        // Short scans on tiering T = 10: every seek probes each of its runs, and one interval's
        // 25,000 seeks on a leveled tree would save more than the round trip costs.
        let tiering = design(CompactionKind::Tiering, 10.0);
        let seeks = |n: u64| WorkloadTotals {
            seeks: 25_000 * n,
            scan_entries: 250_000 * n,
            ..WorkloadTotals::default()
        };
        let state = AutoTuneState::default();
        let verdict = decide(
            &quick(),
            &facts(),
            &state.interval(&seeks(1)),
            &tiering,
            &state,
        )
        .expect("decides");
        let decision = &verdict.decision;
        assert_eq!((decision.mix_held, decision.streak), (1, 1), "{decision}");
        assert!(decision.switched, "{decision}");
        assert!(
            decision.saved_seconds > decision.switch_seconds,
            "{decision}"
        );
        assert!(decision.reason.contains("within an interval"), "{decision}");
        let (kind, _) = verdict.switch_to.expect("a switch");
        assert_ne!(kind, CompactionKind::Tiering);
        // A tenth of the interval does not pay for the round trip by itself: it waits for the
        // confirmation (and a horizon long enough), as before.
        let short = WorkloadTotals {
            seeks: 2_500,
            scan_entries: 25_000,
            ..WorkloadTotals::default()
        };
        let waited = decide(&quick(), &facts(), &short, &tiering, &state).expect("decides");
        assert!(!waited.decision.switched, "{}", waited.decision);
        assert!(waited.switch_to.is_none());
    }

    #[test]
    fn a_read_only_mix_on_a_large_tree_ranks_only_designs_the_engine_builds() {
        // 100 million entries: the tuner's one-level design asks for T in the hundreds of
        // thousands, above the policies' limit; it must not be ranked, let alone switched to.
        let big = TreeFacts {
            entries: 100_000_000,
            filter_bits: 10.0 * 100_000_000.0,
            ..facts()
        };
        let reads = WorkloadTotals {
            point_lookups: 1_000_000,
            ..WorkloadTotals::default()
        };
        let options = AutoTuneOptions {
            confirmations: 1,
            ..AutoTuneOptions::default()
        };
        let verdict = decide(
            &options,
            &big,
            &reads,
            &design(CompactionKind::Tiering, 10.0),
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!verdict.decision.candidates.is_empty());
        for candidate in &verdict.decision.candidates {
            assert!(
                candidate.size_ratio <= options.max_size_ratio,
                "{}",
                verdict.decision
            );
        }
        if let Some((kind, settings)) = verdict.switch_to {
            kind.build(&settings)
                .expect("the switched-to design builds");
        }
    }

    #[test]
    fn the_best_design_in_force_is_kept() {
        let interval = totals(900_000, 100_000);
        let first = decide(
            &quick(),
            &facts(),
            &interval,
            &design(CompactionKind::Tiering, 10.0),
            &AutoTuneState::default(),
        )
        .expect("decides");
        let best = &first.decision.candidates[0];
        let current = CurrentDesign {
            kind: best.policy,
            settings: CompactionSettings {
                garnering_c: best
                    .garnering_c
                    .unwrap_or(crate::compaction::DEFAULT_GARNERING_C),
                ..CompactionSettings::with_size_ratio(best.size_ratio)
            },
            uniform_filters: false,
        };
        let again = decide(
            &quick(),
            &facts(),
            &interval,
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!again.decision.switched);
        assert_eq!(again.decision.reason, "the design in force is ranked first");
        assert!(again.decision.gain.abs() < 1e-9, "{}", again.decision);
    }

    /// `seeks` short range lookups of 10 entries each and nothing else.
    fn seeks(seeks: u64) -> WorkloadTotals {
        WorkloadTotals {
            seeks,
            scan_entries: seeks * 10,
            ..WorkloadTotals::default()
        }
    }

    /// [`facts`] on a leveled tree of `level0` runs waiting on level 0 above its two levels.
    fn unsettled(level0: u32) -> TreeFacts {
        TreeFacts {
            runs_now: level0 + 2,
            level0_runs_now: level0,
            ..facts()
        }
    }

    #[test]
    fn a_stretch_of_reads_merges_the_tree_into_one_run_once_it_pays_for_the_merge() {
        let current = design(CompactionKind::Leveling, 10.0);
        let options = AutoTuneOptions {
            min_gain: 0.10,
            ..quick()
        };
        let mut state = AutoTuneState::default();
        let mut merges = Vec::new();
        for n in 1..=3u64 {
            let verdict = decide(
                &options,
                &unsettled(3),
                &state.interval(&seeks(10_000 * n)),
                &current,
                &state,
            )
            .expect("decides");
            let decision = verdict.decision;
            assert_eq!(decision.reads_held as u64, n, "{decision}");
            assert!(!decision.switched, "{decision}");
            let merge = decision.for_reads.expect("a merge priced");
            // Five runs sought per seek as the tree is, one after the merge.
            assert_eq!(merge.runs, 5);
            assert!(merge.one_run_ops > merge.as_is_ops * 1.5, "{decision}");
            // A full compaction of a million 128-byte entries at the device settings: its
            // pages read and written at 100 us each.
            let pages = 1_000_000.0 * 128.0 / 4096.0;
            assert!((merge.merge_seconds - pages * 2.0 * 100e-6).abs() < 1e-9);
            // The saving grows with the stretch's horizon.
            let per_interval = 10_000.0 * (1.0 / merge.as_is_ops - 1.0 / merge.one_run_ops);
            assert!((merge.saved_seconds - per_interval * n as f64).abs() < 1e-9);
            // Not within one interval: the merge waits for the confirmations.
            assert!(per_interval < merge.merge_seconds, "{decision}");
            assert_eq!(
                merge.merged,
                n >= 2 && merge.saved_seconds > merge.merge_seconds,
                "{decision}"
            );
            assert!(decision.to_string().contains("reads held"), "{decision}");
            merges.push(merge.merged);
            state.record(decision, &seeks(10_000 * n));
        }
        // The first decision of a stretch waits for the confirmations; the second merges.
        assert_eq!(merges, [false, true, true]);
    }

    #[test]
    fn no_merge_for_reads_on_one_run_on_writes_with_the_option_off_or_for_a_small_saving() {
        let current = design(CompactionKind::Leveling, 10.0);
        let options = AutoTuneOptions {
            confirmations: 1,
            ..quick()
        };
        let state = AutoTuneState::default();
        let for_reads =
            |options: &AutoTuneOptions, facts: &TreeFacts, interval: &WorkloadTotals| {
                decide(options, facts, interval, &current, &state)
                    .expect("decides")
                    .decision
            };
        // One run already, or runs not counted.
        let one = TreeFacts {
            runs_now: 1,
            level0_runs_now: 0,
            ..facts()
        };
        assert_eq!(for_reads(&options, &one, &seeks(20_000)).for_reads, None);
        assert_eq!(
            for_reads(&options, &facts(), &seeks(20_000)).for_reads,
            None
        );
        // The option off.
        let off = AutoTuneOptions {
            compact_for_reads: false,
            ..options
        };
        assert_eq!(
            for_reads(&off, &unsettled(3), &seeks(20_000)).for_reads,
            None
        );
        // An interval that wrote a write buffer or more is no stretch of reads.
        let buffer_entries = (2u64 << 20) / 128;
        let written = WorkloadTotals {
            writes: buffer_entries,
            ..seeks(20_000)
        };
        let decision = for_reads(&options, &unsettled(3), &written);
        assert_eq!((decision.reads_held, decision.for_reads), (0, None));
        // Ten seeks save less than the merge costs: priced, not merged.
        let decision = for_reads(&options, &unsettled(3), &seeks(10));
        let merge = decision.for_reads.expect("priced");
        assert!(!merge.merged && merge.saved_seconds < merge.merge_seconds);
        // Writes under a buffer extend the stretch and leave the reads' prices as they were: the
        // saving counts the reads alone.
        let reads_alone = for_reads(&options, &unsettled(3), &seeks(20_000));
        let with_writes = for_reads(
            &options,
            &unsettled(3),
            &WorkloadTotals {
                writes: 5_000,
                ..seeks(20_000)
            },
        );
        assert_eq!(with_writes.reads_held, 1);
        let (alone, mixed) = (
            reads_alone.for_reads.expect("priced"),
            with_writes.for_reads.expect("priced"),
        );
        assert!((alone.as_is_ops - mixed.as_is_ops).abs() < 1e-9 * alone.as_is_ops);
        assert!((alone.one_run_ops - mixed.one_run_ops).abs() < 1e-9 * alone.one_run_ops);
        assert!((alone.saved_seconds - mixed.saved_seconds).abs() < 1e-9 * alone.saved_seconds);
        // An interval whose seeks alone pay for the merge merges at the stretch's first
        // decision, confirmations or not.
        let confirming = AutoTuneOptions {
            confirmations: 3,
            ..options
        };
        let decision = for_reads(&confirming, &unsettled(3), &seeks(2_000_000));
        let merge = decision.for_reads.expect("priced");
        assert_eq!(decision.reads_held, 1);
        assert!(
            merge.merged && merge.saved_seconds > merge.merge_seconds,
            "{decision}"
        );
    }

    #[test]
    fn a_stretch_of_reads_lasts_while_its_writes_fill_less_than_one_buffer() {
        let mut state = AutoTuneState::default();
        let decided = |held: u32, writes: u64, operations: u64| Decision {
            reads_held: held,
            reads_held_writes: writes,
            reads_held_operations: operations,
            ..Decision::kept(1, 1, None, 1, String::new())
        };
        // An interval of `writes` entries written beside 1,000 seeks.
        let interval = |writes: u64| WorkloadTotals {
            seeks: 1_000,
            writes,
            ..WorkloadTotals::default()
        };
        let held = |intervals: u32, writes: u64, operations: u64| ReadsHeld {
            intervals,
            writes,
            operations,
        };
        assert_eq!(state.reads_held(&interval(10), 100.0), held(1, 10, 1_010));
        assert_eq!(state.reads_held(&interval(100), 100.0), held(0, 0, 0));
        state.history.push(decided(3, 60, 5_000));
        // The stretch goes on while its writes stay under a buffer, counting its operations ...
        assert_eq!(state.reads_held(&interval(39), 100.0), held(4, 99, 6_039));
        // ... and a new one starts when they would not, if this interval alone stays under.
        assert_eq!(state.reads_held(&interval(40), 100.0), held(1, 40, 1_040));
        assert_eq!(state.reads_held(&interval(100), 100.0), held(0, 0, 0));
        // A buffer of no entries (or an unknown one) holds no stretch.
        assert_eq!(state.reads_held(&interval(0), 0.0), held(0, 0, 0));
        assert_eq!(state.reads_held(&interval(0), f64::NAN), held(0, 0, 0));
    }

    #[test]
    fn a_merge_not_paid_yet_says_when_it_would_and_the_next_decision_is_due_then() {
        let current = design(CompactionKind::Leveling, 10.0);
        let options = AutoTuneOptions {
            min_gain: 0.10,
            ..quick()
        };
        let mut state = AutoTuneState::default();
        let first = decide(
            &options,
            &unsettled(3),
            &state.interval(&seeks(10_000)),
            &current,
            &state,
        )
        .expect("decides")
        .decision;
        let merge = first.for_reads.expect("priced");
        assert!(!merge.merged, "{first}");
        let per_operation = merge.saved_seconds / 10_000.0;
        let needed = merge.merge_seconds / per_operation;
        let after = merge.pays_after.expect("it would pay");
        // The stretch's 10,000 seeks and `after` more save more than the merge's seconds, one
        // fewer do not.
        assert_eq!(after, (needed - 10_000.0).floor() as u64 + 1, "{first}");
        assert!(first
            .to_string()
            .contains(&format!("pays after {after} more")));
        state.record(first, &seeks(10_000));
        // The next decision is due once `after` more operations were served, not before.
        let upto = |more: u64| state.interval(&seeks(10_000 + more));
        assert!(!state.due_early(&options, &upto(after - 1), 1_000_000));
        assert!(state.due_early(&options, &upto(after), 1_000_000));
        // Then the stretch has paid for the merge over its uneven intervals, and it merges.
        let second = decide(&options, &unsettled(3), &upto(after), &current, &state)
            .expect("decides")
            .decision;
        let merge = second.for_reads.expect("priced");
        assert_eq!(second.reads_held, 2);
        assert_eq!(second.reads_held_operations, 10_000 + after);
        assert!(
            (merge.saved_seconds - per_operation * (10_000 + after) as f64).abs()
                < 1e-9 * merge.saved_seconds,
            "{second}"
        );
        assert!(merge.merged && merge.pays_after.is_none(), "{second}");
        state.record(second, &seeks(10_000 + after));
        // A merge asked for sets no early decision.
        let later = state.interval(&seeks(20_000 + after));
        assert!(!state.due_early(&options, &later, 1_000_000));
        // A gain under `min_gain` sets none either: the merge would never be asked for.
        let demanding = AutoTuneOptions {
            min_gain: 1e6,
            ..options
        };
        let small = decide(
            &demanding,
            &unsettled(3),
            &seeks(10_000),
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides")
        .decision;
        assert_eq!(small.for_reads.expect("priced").pays_after, None, "{small}");
    }

    #[test]
    fn a_merge_pays_after_the_first_count_whose_saving_exceeds_it() {
        // One second of merge at a millisecond saved per operation: 1,001 operations in all.
        assert_eq!(pays_after(1.0, 1e-3, 0, 1e6), Some(1_001));
        assert_eq!(pays_after(1.0, 1e-3, 600, 1e6), Some(401));
        // Paid already: due at once, for the confirmations.
        assert_eq!(pays_after(1.0, 1e-3, 5_000, 1e6), Some(0));
        // Never: no saving, an unpriced one, or a horizon capped below the count.
        assert_eq!(pays_after(1.0, 0.0, 0, 1e6), None);
        assert_eq!(pays_after(1.0, f64::NAN, 0, 1e6), None);
        assert_eq!(pays_after(1.0, 1e-3, 0, 999.0), None);
        assert_eq!(pays_after(f64::INFINITY, 1e-3, 0, f64::INFINITY), None);
    }

    #[test]
    fn a_decision_is_due_early_when_the_mix_changes_after_enough_operations() {
        let options = AutoTuneOptions {
            early_decisions_after: 5_000,
            ..quick()
        };
        let writes = |writes: u64| WorkloadTotals {
            writes,
            ..WorkloadTotals::default()
        };
        let entries = 1_000_000;
        let mut state = AutoTuneState::default();
        // No decision yet: nothing to change from.
        assert!(!state.due_early(&options, &seeks(1_000_000), entries));
        let decided = Decision::kept(
            1,
            100_000,
            mix_of(&writes(100_000), entries),
            entries,
            "".into(),
        );
        state.record(decided, &writes(100_000));
        let then = |totals: WorkloadTotals| state.interval(&totals);
        let seeks_after = |n: u64| WorkloadTotals {
            writes: 100_000,
            ..seeks(n)
        };
        // Seeks after writes: due at 5,000 operations, not before.
        assert!(!state.due_early(&options, &then(seeks_after(4_999)), entries));
        assert!(state.due_early(&options, &then(seeks_after(5_000)), entries));
        // More writes are the same mix; a few seeks among them too (a share within the
        // tolerance).
        assert!(!state.due_early(&options, &then(writes(200_000)), entries));
        let few = WorkloadTotals {
            writes: 200_000,
            ..seeks(5_000)
        };
        assert!(!state.due_early(&options, &then(few), entries));
        // Turned off.
        let off = AutoTuneOptions {
            early_decisions_after: 0,
            ..options
        };
        assert!(!state.due_early(&off, &then(seeks_after(1_000_000)), entries));
    }

    #[test]
    fn a_record_without_the_stretch_of_reads_reads_as_none_held() {
        let mut decision = Decision::kept(4, 10, None, 100, "kept".into());
        decision.reads_held = 2;
        decision.for_reads = Some(ReadMerge {
            runs: 4,
            as_is_ops: 100.0,
            one_run_ops: 150.0,
            saved_seconds: 2.0,
            merge_seconds: 1.0,
            merged: true,
            pays_after: None,
        });
        decision.reads_held_operations = 7_000;
        let text = toml::to_string(&decision).expect("serializes");
        let back: Decision = toml::from_str(&text).expect("parses");
        assert_eq!(back, decision);
        assert!(back.merges_for_reads());
        assert!((decision.for_reads.expect("set").gain() - 0.5).abs() < 1e-12);
        // A record written before the stretch was counted.
        let older: String = text
            .lines()
            .filter(|line| !line.starts_with("reads_held"))
            .take_while(|line| !line.starts_with("[for_reads]"))
            .map(|line| format!("{line}\n"))
            .collect();
        let back: Decision = toml::from_str(&older).expect("parses");
        assert_eq!((back.reads_held, back.for_reads), (0, None));
        assert_eq!(back.reads_held_operations, 0);
        assert!(!back.merges_for_reads());
    }

    #[test]
    fn a_small_gain_or_a_short_horizon_keeps_the_design() {
        let current = design(CompactionKind::Tiering, 10.0);
        let interval = totals(900_000, 100_000);
        let demanding = AutoTuneOptions {
            min_gain: 1e6,
            confirmations: 1,
            ..quick()
        };
        let kept = decide(
            &demanding,
            &facts(),
            &interval,
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!kept.decision.switched);
        assert!(kept.decision.reason.contains("below"), "{}", kept.decision);
        // Ten operations cannot pay for rewriting a million entries.
        let short = decide(
            &AutoTuneOptions {
                confirmations: 1,
                ..quick()
            },
            &facts(),
            &totals(9, 1),
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!short.decision.switched);
        assert!(
            short.decision.reason.contains("pay for itself"),
            "{}",
            short.decision
        );
        assert!(short.decision.switch_seconds > short.decision.saved_seconds);
    }

    #[test]
    fn no_operations_or_no_entries_keep_the_design_with_a_reason() {
        let current = design(CompactionKind::Leveling, 10.0);
        let none = decide(
            &quick(),
            &facts(),
            &WorkloadTotals::default(),
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!none.decision.switched && none.decision.mix.is_none());
        assert!(none.decision.reason.contains("no operation"));
        let empty = TreeFacts {
            entries: 0,
            entry_bytes: 0.0,
            ..facts()
        };
        let kept = decide(
            &quick(),
            &empty,
            &totals(10, 10),
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(kept.decision.reason.contains("no entries"));
    }

    #[test]
    fn a_tree_smaller_than_max_size_ratio_buffers_is_kept_as_it_is() {
        // 16 write buffers of 2 MiB: 32 MiB. A tree of 200,000 entries of 128 bytes holds 24.4.
        let small = TreeFacts {
            entries: 200_000,
            filter_bits: 10.0 * 200_000.0,
            ..facts()
        };
        let writes = totals(0, 100_000);
        let current = design(CompactionKind::Leveling, 10.0);
        let options = AutoTuneOptions {
            confirmations: 1,
            ..quick()
        };
        let kept = decide(
            &options,
            &small,
            &writes,
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(!kept.decision.switched && kept.switch_to.is_none());
        assert!(
            kept.decision
                .reason
                .contains("smaller than 16 write buffers"),
            "{}",
            kept.decision
        );
        assert!(kept.decision.candidates.is_empty());
        // A lower cap lets the same tree be priced.
        let priced = decide(
            &AutoTuneOptions {
                max_size_ratio: 8.0,
                ..options
            },
            &small,
            &writes,
            &current,
            &AutoTuneState::default(),
        )
        .expect("decides");
        assert!(
            !priced.decision.candidates.is_empty(),
            "{}",
            priced.decision
        );
        for candidate in &priced.decision.candidates {
            assert!(candidate.predicted_ops.is_finite() && candidate.predicted_ops > 0.0);
        }
    }

    #[test]
    fn a_flip_flopping_best_resets_the_streak() {
        let current = design(CompactionKind::Tiering, 10.0);
        let reads = totals(900_000, 100_000);
        let mut state = AutoTuneState::default();
        let first = decide(&quick(), &facts(), &reads, &current, &state).expect("decides");
        let first_best = first.decision.candidates[0].clone();
        state.record(first.decision, &reads);
        // A different best recorded last time: the streak starts again.
        let mut other = state.clone();
        if let Some(last) = other.history.last_mut() {
            last.candidates[0].size_ratio = first_best.size_ratio * 3.0;
        }
        let next = decide(&quick(), &facts(), &reads, &current, &other).expect("decides");
        assert_eq!(next.decision.streak, 1);
        assert!(!next.decision.switched);
    }

    #[test]
    fn invalid_options_are_refused_and_the_state_keeps_its_last_decisions() {
        for bad in [
            AutoTuneOptions {
                every_operations: 0,
                ..AutoTuneOptions::default()
            },
            AutoTuneOptions {
                confirmations: 0,
                ..AutoTuneOptions::default()
            },
            AutoTuneOptions {
                min_gain: f64::NAN,
                ..AutoTuneOptions::default()
            },
            AutoTuneOptions {
                seconds_per_read: 0.0,
                ..AutoTuneOptions::default()
            },
            AutoTuneOptions {
                page_bytes: -1.0,
                ..AutoTuneOptions::default()
            },
            AutoTuneOptions {
                max_size_ratio: 1.5,
                ..AutoTuneOptions::default()
            },
        ] {
            assert!(matches!(bad.validate(), Err(Error::InvalidArgument(_))));
            let result = decide(
                &bad,
                &facts(),
                &totals(10, 10),
                &design(CompactionKind::Leveling, 10.0),
                &AutoTuneState::default(),
            );
            assert!(matches!(result, Err(Error::InvalidArgument(_))));
        }
        let mut state = AutoTuneState::default();
        for n in 1..=(HISTORY as u64 + 3) {
            let at = totals(n * 10, n);
            let verdict = decide(
                &quick(),
                &facts(),
                &state.interval(&at),
                &design(CompactionKind::Leveling, 10.0),
                &state,
            )
            .expect("decides");
            assert_eq!(verdict.decision.number, n);
            assert_eq!(verdict.decision.operations, 11);
            state.record(verdict.decision, &at);
        }
        assert_eq!(state.history.len(), HISTORY);
        assert_eq!(state.history[0].number, 4);
        let text = toml::to_string(&state).expect("encodes");
        let back: AutoTuneState = toml::from_str(&text).expect("decodes");
        assert_eq!(back, state);
    }

    #[test]
    fn the_mix_is_the_proportions_of_the_interval() {
        let interval = WorkloadTotals {
            point_lookups: 60,
            point_lookups_found: 15,
            seeks: 20,
            scan_entries: 2_000,
            writes: 20,
            ..WorkloadTotals::default()
        };
        let mix = mix_of(&interval, 1_000).expect("a mix");
        assert!((mix.point_lookups - 0.6).abs() < 1e-12);
        assert!((mix.zero_result_fraction - 0.75).abs() < 1e-12);
        assert!((mix.range_lookups - 0.2).abs() < 1e-12);
        assert!((mix.selectivity - 0.1).abs() < 1e-12);
        assert!((mix.updates - 0.2).abs() < 1e-12);
        assert!(mix_of(&WorkloadTotals::default(), 10).is_none());
        let state = AutoTuneState {
            point_lookups: 100,
            writes: 5,
            ..AutoTuneState::default()
        };
        // Counters that went back (an older manifest) count from zero, never underflow.
        let interval = state.interval(&totals(40, 50));
        assert_eq!((interval.point_lookups, interval.writes), (0, 45));
    }
}
