//! Monkey's holistic tuner (DESIGN.md §7; Monkey Algorithm 1 + Algorithm 5, eqs. 41-52): for a data
//! size, a workload, a device and a memory budget, the merge policy, size ratio and split of
//! memory between the write buffer and the filters with the most operations per second.
//!
//! For `L = 1 ..= ceil(log2(N/B))` the size ratio is `T = max(2, (N/B)^(1/L))`; for each policy
//! the memory split comes from Newton-Raphson on
//! `h(x) = x - (1/beta) * ln(alpha*beta/gamma * (M_hat - x))`, `x` the filter bits, started at
//! `M_hat - one page` and stopped when a step is at most one page ([`split_memory`]). Each
//! candidate is then evaluated as the engine would build it — the integer number of levels its
//! buffer gives, Monkey's filters on those runs costed exactly by the §2 solver, of which eq. 7
//! is the `L -> infinity` limit ([`evaluate`]) — and candidates are ranked by that prediction.
//! (Ranking by the discrete design and its exact cost rather than by the continuous-`L`
//! asymptotic cost the split optimises is Strata's choice: the discrete design is what a user
//! gets, and on one- or two-level trees eq. 7 can even rank uniform filters above Monkey's.)
//! SLA bounds discard candidates, and so does a depth the engine's policy does not build
//! (leveling, tiering and lazy leveling stop at level 6 by default).
//!
//! Every design is also evaluated with uniform filters at the same split (listed, never better
//! than Monkey's filters in the model).
//!
//! Every registered merge policy is a candidate. Leveling with dynamic level bytes takes
//! leveling's model (the idealised shape is its tree) and is listed beside leveling. Lazy
//! leveling and Garnering (`c` in [`GARNERING_SCALING_FACTORS`]) join with Strata's own per-run
//! models ([`super::per_run`], DESIGN.md §7.4), EcoTune and Moose, which take no size ratio, with
//! models of their own ([`super::ecotune`], [`super::moose`], DESIGN.md §7.8); each design says
//! which model its figures come from ([`ModelPolicy::model`]). Monkey's split derivation has no
//! coefficients for them, so each is evaluated at both the leveling split and the tiering split
//! of its `T` and keeps the better (Strata's choice; a fixed buffer is kept as given): EcoTune
//! and Moose once, at the `T` of [`own_size_ratio`]. Every policy is costed on its own runs the
//! same way, so the comparison between policies is even, and at the size ratio the engine builds
//! it with ([`buildable_size_ratio`]: whole runs per level for tiering and lazy leveling).
//!
//! The write term of the best candidates is then re-priced (DESIGN.md §7.5, "Writes priced by
//! the replay"): the closed form's merges per update give way to those of each design's replay on
//! the simulator ([`super::writes::replay_design_writes`], a long stream of updates, no I/O) for
//! the best [`REPLAYED_CANDIDATES`], and the candidates are sorted again until the best are all
//! replayed; each design says which source priced its writes ([`Design::writes`]).
//!
//! [`tune`] is a pure function of its [`TuningProblem`] (no I/O): the engine's workload
//! statistics convert with [`Workload::from_totals`] and [`Workload::from_mix`], and the ranked
//! [`Tuning::candidates`] carry every design's predicted costs ([`Tuning::best_of`] finds the
//! one a policy would run, to hold against the recommendation).
//!
//! Strata's departures from Monkey's throughput `1/(theta * Omega)`, each off by default so the
//! published model is what a problem without them gets: a processor term ([`CpuCosts`]), a
//! merge's in-order page reads priced apart ([`Device::merge_read_cost_ratio`]) and level 0's
//! waiting runs ([`TuningProblem::level0_runs`]). `strata tune --measure-device` measures the
//! first two on the machine and the engine; docs/BENCHMARKS.md holds what each changed.

use super::writes::{replay_design_writes, DesignWrites, ReplayedWrites, WritePricing};
use super::{
    ecotune, existing_lookup_cost, merges_per_update, moose, per_run, range_cost, ModelPolicy,
};
use crate::alloc::FilterAllocatorKind;
use crate::compaction::ecotune::{EcoTuneSettings, DEFAULT_TC_OVER_TW};
use crate::compaction::{CompactionKind, Moose};
use crate::error::{Error, Result};
use crate::solver::monkey_general_last_level_weight;
use crate::solver::DEFAULT_FPR_CONSTANT as LN2_SQUARED;
use crate::stats::workload::LONG_SCAN_MIN_ENTRIES;
use crate::stats::{WorkloadMix, WorkloadTotals};

/// What the workload does, as proportions of its operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Point lookups (`z`).
    pub point_lookups: f64,
    /// Fraction of point lookups that find nothing (`f0`), in `[0, 1]`.
    pub zero_result_fraction: f64,
    /// Range lookups (`q`).
    pub range_lookups: f64,
    /// Fraction of the entries a range lookup returns (`s`).
    pub selectivity: f64,
    /// Updates (`w`): inserts, overwrites and deletes.
    pub updates: f64,
    /// EcoTune's `r` and `K` as the engine measured them; `None`: read off the range lookups
    /// ([`Workload::long_scans`]).
    pub long_scans: Option<LongScans>,
    /// Bytes of an average user key the workload reads and writes, where known; `None`:
    /// [`DEFAULT_KEY_BYTES`] ([`TuningProblem::key_bytes`]). Only EcoTune's top-level index
    /// depends on it: it holds every top-level key (DESIGN.md §6).
    pub key_bytes: Option<f64>,
}

/// The key size the tuner assumes when the workload does not give one: db_bench's default
/// `key_size`, at most the entry's bytes.
pub const DEFAULT_KEY_BYTES: f64 = 16.0;

/// The long range scans of a workload (EcoTune's `r` and `K`, DESIGN.md §6, "The workload the
/// engine measures"): scans of at least `LONG_SCAN_MIN_ENTRIES` (16) entries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongScans {
    /// `r`: the share of queries (point and range lookups) that are long scans, in `[0, 1]`.
    pub share_of_queries: f64,
    /// `K`: entries an average long scan returns (0 when there is none).
    pub entries: f64,
}

impl Workload {
    /// `r` and `K` on a tree of `entries` entries: as measured if given, else every range lookup
    /// is a long scan of `s * N` entries when that is at least 16 entries, and none is otherwise.
    pub fn long_scans(&self, entries: f64) -> LongScans {
        if let Some(measured) = self.long_scans {
            return measured;
        }
        let queries = self.point_lookups + self.range_lookups;
        let length = self.selectivity * entries;
        if queries > 0.0 && length >= LONG_SCAN_MIN_ENTRIES as f64 {
            LongScans {
                share_of_queries: self.range_lookups / queries,
                entries: length,
            }
        } else {
            LongScans {
                share_of_queries: 0.0,
                entries: 0.0,
            }
        }
    }

    /// The workload the engine's counts describe on a tree of `entries` entries (DESIGN.md §7's
    /// proportions, `stats::workload`): point lookups, range lookups (seeks) and writes as shares
    /// of their sum, the zero-result fraction, the selectivity of an average range lookup, and
    /// the long scans (`r`, `K`) when the totals count them (a record from a build before the
    /// long-scan counts leaves them to [`Workload::long_scans`]). `None` if they count no
    /// operation. The lifetime totals are `Db::workload`, the engine's live window
    /// `Db::recent_workload` ([`Workload::from_mix`]).
    pub fn from_totals(totals: &WorkloadTotals, entries: u64) -> Option<Workload> {
        let queries = totals.point_lookups.saturating_add(totals.seeks);
        let operations = queries.saturating_add(totals.writes) as f64;
        if operations == 0.0 {
            return None;
        }
        let zero_result_fraction = if totals.point_lookups == 0 {
            0.0
        } else {
            1.0 - totals.point_lookups_found as f64 / totals.point_lookups as f64
        };
        let selectivity = if totals.seeks == 0 || entries == 0 {
            0.0
        } else {
            (totals.scan_entries as f64 / totals.seeks as f64 / entries as f64).min(1.0)
        };
        let long_scans = (totals.long_scans > 0 || totals.seeks == 0).then(|| LongScans {
            share_of_queries: if queries == 0 {
                0.0
            } else {
                totals.long_scans as f64 / queries as f64
            },
            entries: if totals.long_scans == 0 {
                0.0
            } else {
                totals.long_scan_entries as f64 / totals.long_scans as f64
            },
        });
        Some(Workload {
            point_lookups: totals.point_lookups as f64 / operations,
            zero_result_fraction: zero_result_fraction.clamp(0.0, 1.0),
            range_lookups: totals.seeks as f64 / operations,
            selectivity,
            updates: totals.writes as f64 / operations,
            long_scans,
            key_bytes: None,
        })
    }

    /// [`Workload::from_totals`] of the engine's live window (`Db::recent_workload`: the last
    /// 50,000 to 56,250 queries and the writes among them).
    pub fn from_mix(mix: &WorkloadMix, entries: u64) -> Option<Workload> {
        Workload::from_totals(&mix.counts, entries)
    }
}

/// The storage device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Device {
    /// Seconds per page read (`Omega`).
    pub seconds_per_read: f64,
    /// Cost of a page write relative to a page read (`phi`).
    pub write_read_cost_ratio: f64,
    /// Cost of a page a merge reads relative to a page a lookup reads (`rho`). Monkey's `W`
    /// charges a merge's reads as lookups' reads (`rho = 1`); a merge reads its inputs in
    /// order with readahead, which on a solid-state drive costs a fraction of a random read, so
    /// `W = merges * (rho + phi) / B` (Strata's departure when `rho != 1`; DESIGN.md §7).
    pub merge_read_cost_ratio: f64,
    /// Bytes per page.
    pub page_bytes: f64,
    /// The processor's share of each operation (all zero: Monkey's I/O-only model).
    pub cpu: CpuCosts,
}

/// Processor time per unit of work: Strata's addition to Monkey's model, which counts only I/Os
/// (DESIGN.md §7's `tau = 1/(theta * Omega)`). When the filters leave almost nothing to read, as on a
/// workload of empty lookups, an I/O-only model ranks designs by false positives alone, while
/// what a lookup really costs is a probe of every run: finding the run's file, hashing into its
/// filter. A design with fewer runs is then faster, which I/Os cannot show. With these figures
/// an operation costs `theta * Omega + cpu` seconds, where `cpu` is
/// - a point lookup: `per_lookup + per_run_probed * runs probed` (every run for an empty
///   lookup; for a key that exists, the runs above the last level and half the last level's,
///   the position [`super::existing_lookup_cost`] assumes),
/// - a range lookup: `per_lookup + per_run_probed * runs` (one seek per run),
/// - an update: `per_update + per_entry_merged * merges + per_flush / buffer entries`,
///   `merges` the times a merge rewrites the entry on its way down (the `sum_i w_i` of `W`).
///
/// With `merge_threads = 0` every cost is charged to the operation as Monkey charges `W`'s I/Os:
/// merges slow the operations down one for one. An engine that merges on background threads
/// (Strata, RocksDB) runs them beside the operations instead: with `merge_threads = k > 0`, an
/// operation costs `max(foreground, background / k)` seconds, the foreground being its lookups'
/// I/Os and processor time and its updates' insert, the background its merges' page reads and
/// writes (`W * Omega`) and their processor time. The merges have their own threads but share the
/// device, so the foreground's reads wait behind their pages ([`foreground_beside_merges`]):
/// merges cost a workload whose lookups read from the device nearly their device time, one
/// served from memory nothing until they cannot keep up.
///
/// `strata tune --measure-device` measures them on the engine itself.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuCosts {
    /// Seconds every point or range lookup costs whatever the tree: the memtables, the version.
    pub seconds_per_lookup: f64,
    /// Seconds per sorted run a lookup probes: the run's file, its filter probe.
    pub seconds_per_run_probed: f64,
    /// Seconds per sorted run a range lookup seeks: positioning in the run and merging its
    /// entries with the others' up to the range's end, the iterator's fixed work shared among
    /// its runs (`seconds_per_lookup` is then not added). 0 prices a range lookup as a lookup
    /// and a run probed per run.
    pub seconds_per_run_sought: f64,
    /// Seconds a point lookup's data-block read adds beyond a run probed, wherever the block
    /// comes from: its index search and the search of the block (the timed probes that read a
    /// cached block less the ones the filter answered). A device read adds `Omega` to it.
    pub seconds_per_block_searched: f64,
    /// Seconds per update in the foreground: its WAL record and memtable insert.
    pub seconds_per_update: f64,
    /// Seconds per entry a merge reads and writes again.
    pub seconds_per_entry_merged: f64,
    /// Threads merges run on beside the operations; 0 charges merges to the operations
    /// (Monkey's model).
    pub merge_threads: f64,
    /// Seconds a flush costs beyond its pages: creating, syncing and installing its file. An
    /// update pays `1 / buffer entries` of it, background work like its merges: what keeps a
    /// tiny write buffer from looking free.
    pub seconds_per_flush: f64,
    /// Share of the merges' processor time (`seconds_per_entry_merged` per entry merged) that the
    /// thread running the operations pays, with merges beside it (`merge_threads > 0`):
    /// [`foreground_share_of_merges`] where the merges' and the flush's threads and the
    /// operations' outnumber the processors and all of them take turns on every processor; 0
    /// where the background has processors of its own (DESIGN.md §7.5, "The writer's part of the
    /// merges' processor time").
    pub foreground_share_of_merges: f64,
}

impl CpuCosts {
    /// Processor seconds in the foreground of `w`'s operations (not divided by their total):
    /// point lookups that probe `probed` runs and read `z` blocks, range lookups that seek
    /// `range_runs` runs, updates.
    fn foreground(&self, w: &Workload, probed: f64, z: f64, range_runs: f64) -> f64 {
        w.point_lookups
            * (self.seconds_per_lookup
                + self.seconds_per_run_probed * probed
                + self.seconds_per_block_searched * z)
            + w.range_lookups * self.range_lookup(range_runs)
            + w.updates * self.seconds_per_update
    }

    /// Processor seconds of a range lookup that seeks `runs` runs: `runs` times
    /// [`CpuCosts::seconds_per_run_sought`] when that is measured (an iterator's whole time,
    /// the memtables' part included), else a lookup's fixed price and a run probed's per run.
    fn range_lookup(&self, runs: f64) -> f64 {
        if self.seconds_per_run_sought > 0.0 {
            self.seconds_per_run_sought * runs
        } else {
            self.seconds_per_lookup + self.seconds_per_run_probed * runs
        }
    }

    fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("processor seconds per lookup", self.seconds_per_lookup),
            (
                "processor seconds per run probed",
                self.seconds_per_run_probed,
            ),
            (
                "processor seconds per run sought",
                self.seconds_per_run_sought,
            ),
            (
                "processor seconds per block searched",
                self.seconds_per_block_searched,
            ),
            ("processor seconds per update", self.seconds_per_update),
            (
                "processor seconds per entry merged",
                self.seconds_per_entry_merged,
            ),
            ("merge threads", self.merge_threads),
            ("seconds per flush", self.seconds_per_flush),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(invalid(format!(
                    "{name} must be finite and >= 0, got {value}"
                )));
            }
        }
        Ok(())
    }
}

/// Garnering's scaling factors the tuner tries (DESIGN.md §7).
pub const GARNERING_SCALING_FACTORS: [f64; 4] = [0.4, 0.6, 0.8, 1.0];

/// A tuning problem: the data, the workload, the device, the memory and the SLA bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TuningProblem {
    /// Entries (`N`).
    pub entries: f64,
    /// Bytes per entry (`E / 8`).
    pub entry_bytes: f64,
    /// Memory for the write buffer and the filters together, in bits (`M_hat`).
    pub memory_bits: f64,
    /// The workload.
    pub workload: Workload,
    /// The device.
    pub device: Device,
    /// Fix the write buffer at this many bits instead of choosing the split (the rest of the
    /// memory goes to the filters).
    pub fixed_buffer_bits: Option<f64>,
    /// Discard designs whose point lookups cost more I/Os than this.
    pub max_point_lookup_io: Option<f64>,
    /// Discard designs whose updates cost more I/Os than this.
    pub max_update_io: Option<f64>,
    /// Runs of one write buffer each that flushes leave above level 1 on average (0: Monkey's
    /// tree, where a flush merges straight into level 1). Strata, like RocksDB, merges level 0
    /// into level 1 once it holds `level0_compaction_trigger` runs, so a lookup also probes
    /// the runs waiting there: `(trigger - 1) / 2` on average, 1.5 at the default of 4 (Strata's
    /// addition, DESIGN.md §7). They weigh most where filter memory is short: a design that gives
    /// its filters nothing leaves them unfiltered too.
    pub level0_runs: f64,
    /// Bytes of block cache a range lookup's data blocks go through (0: none, Monkey's model, in
    /// which every run a range lookup seeks costs a page read). With a cache, the blocks of the
    /// small runs every seek lands in (level 0's, the upper levels') are requested far more
    /// often per block than the last level's and the cache holds them: a range lookup costs the
    /// misses of its requests through the model of the engine's S3-FIFO eviction
    /// ([`range_cost_through_cache`], Strata's addition, DESIGN.md §7.5). Point lookups are
    /// priced without it.
    pub block_cache_bytes: f64,
    /// Share of a point lookup's data-block reads (`Z`) the device serves, in `0..=1`; the rest
    /// come from the block cache at `CpuCosts::seconds_per_block_searched` alone. 1 is Monkey's
    /// model, every one a page read. Auto-tune passes the share the engine's timed probes
    /// measured on the design in force over the mix (a hot spot the cache holds is read from
    /// memory), and every candidate is priced at it (Strata's addition, DESIGN.md §10).
    pub point_read_miss_share: f64,
}

/// What a design is predicted to cost, per operation of each kind (I/Os) and overall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// A point lookup that finds nothing (`R`).
    pub zero_result_lookup_io: f64,
    /// A point lookup that finds its key (`V`).
    pub existing_lookup_io: f64,
    /// The workload's mix of point lookups (`Z`).
    pub point_lookup_io: f64,
    /// An update (`W`: a merge's page reads weighted by `rho`, its writes by `phi`).
    pub update_io: f64,
    /// A range lookup (`Q`).
    pub range_io: f64,
    /// The workload's average I/Os per operation (`theta`).
    pub io_per_operation: f64,
    /// The workload's average processor seconds per operation ([`CpuCosts`]; 0 without them).
    pub cpu_seconds_per_operation: f64,
    /// Operations per second: `tau = 1 / (theta * Omega + cpu)`, Monkey's `1 / (theta * Omega)`
    /// when the device has no processor costs; with merges on background threads, one over the
    /// larger of the foreground and background seconds ([`CpuCosts`]).
    pub throughput_ops: f64,
}

/// A design and its predicted costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    /// The merge policy.
    pub policy: ModelPolicy,
    /// How the filter memory is spread: [`FilterAllocatorKind::Monkey`] (every run's
    /// false-positive rate proportional to its size, DESIGN.md §2, §7: what the tuner
    /// recommends) or [`FilterAllocatorKind::Uniform`] (the same bits per key on every run, the
    /// state of the art Monkey measures itself against [Monkey eqs. 55-56]).
    pub filters: FilterAllocatorKind,
    /// The size ratio `T`.
    pub size_ratio: f64,
    /// Disk levels of the idealised tree this buffer gives.
    pub levels: usize,
    /// Write-buffer memory in bits.
    pub buffer_bits: f64,
    /// Filter memory in bits (Monkey's allocation over the levels).
    pub filter_bits: f64,
    /// What it costs.
    pub predicted: Prediction,
    /// Where its merges per update (`W`'s and the merge processor time's) came from: the
    /// closed form, or the replay for the best candidates ([`REPLAYED_CANDIDATES`]).
    pub writes: WritePricing,
}

/// The tuner's answer: the best design and every candidate it evaluated (best first; candidates
/// an SLA bound discarded are not listed).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// The design with the most operations per second.
    pub recommended: Design,
    /// Every admissible candidate, best first.
    pub candidates: Vec<Design>,
}

impl Tuning {
    /// The best candidate that runs `kind` (Garnering at any `c`) with `filters`, if any is
    /// listed: the design to hold against [`Tuning::recommended`] when `kind` is what a database
    /// runs now.
    pub fn best_of(&self, kind: CompactionKind, filters: FilterAllocatorKind) -> Option<&Design> {
        self.candidates
            .iter()
            .find(|design| design.policy.kind() == kind && design.filters == filters)
    }
}

impl Design {
    /// True if `other` builds the same tree with the same filters: the same size ratio, levels,
    /// split and filter allocation, and predicted costs equal to rounding (the policy may differ
    /// where two policies coincide).
    pub fn is_same_design_as(&self, other: &Design) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
        let (p, q) = (&self.predicted, &other.predicted);
        self.filters == other.filters
            && self.levels == other.levels
            && close(self.size_ratio, other.size_ratio)
            && close(self.buffer_bits, other.buffer_bits)
            && close(p.zero_result_lookup_io, q.zero_result_lookup_io)
            && close(p.existing_lookup_io, q.existing_lookup_io)
            && close(p.update_io, q.update_io)
            && close(p.range_io, q.range_io)
            && close(p.throughput_ops, q.throughput_ops)
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

impl TuningProblem {
    fn validate(&self) -> Result<()> {
        let positive = |name: &str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(invalid(format!(
                    "{name} must be finite and > 0, got {value}"
                )))
            }
        };
        let non_negative = |name: &str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(invalid(format!(
                    "{name} must be finite and >= 0, got {value}"
                )))
            }
        };
        positive("entries", self.entries)?;
        positive("entry bytes", self.entry_bytes)?;
        positive("memory bits", self.memory_bits)?;
        positive("seconds per read", self.device.seconds_per_read)?;
        positive("page bytes", self.device.page_bytes)?;
        non_negative("level-0 runs", self.level0_runs)?;
        non_negative("block cache bytes", self.block_cache_bytes)?;
        if !(0.0..=1.0).contains(&self.point_read_miss_share) {
            return Err(invalid(format!(
                "the share of point reads the device serves must be in 0..=1, got {}",
                self.point_read_miss_share
            )));
        }
        non_negative("write/read cost ratio", self.device.write_read_cost_ratio)?;
        non_negative(
            "merge-read/read cost ratio",
            self.device.merge_read_cost_ratio,
        )?;
        self.device.cpu.validate()?;
        let w = &self.workload;
        non_negative("point lookups", w.point_lookups)?;
        non_negative("range lookups", w.range_lookups)?;
        non_negative("updates", w.updates)?;
        non_negative("selectivity", w.selectivity)?;
        if let Some(key_bytes) = w.key_bytes {
            non_negative("key bytes", key_bytes)?;
        }
        if w.point_lookups + w.range_lookups + w.updates <= 0.0 {
            return Err(invalid("the workload has no operations".into()));
        }
        if let Some(scans) = w.long_scans {
            let valid = (0.0..=1.0).contains(&scans.share_of_queries)
                && scans.entries.is_finite()
                && scans.entries >= 0.0;
            if !valid {
                return Err(invalid(format!(
                    "long scans must be a share of queries in [0, 1] of a finite length >= 0, \
                     got {} of {}",
                    scans.share_of_queries, scans.entries
                )));
            }
        }
        if !(0.0..=1.0).contains(&w.zero_result_fraction) || !(0.0..=1.0).contains(&w.selectivity) {
            return Err(invalid(format!(
                "zero-result fraction and selectivity must be in [0, 1], got {} and {}",
                w.zero_result_fraction, w.selectivity
            )));
        }
        if let Some(buffer) = self.fixed_buffer_bits {
            if !(buffer.is_finite() && buffer > 0.0 && buffer <= self.memory_bits) {
                return Err(invalid(format!(
                    "a fixed buffer must be in (0, {}] bits, got {buffer}",
                    self.memory_bits
                )));
            }
        }
        if self.memory_bits <= self.page_bits() {
            return Err(invalid(format!(
                "memory of {} bits does not hold one page of write buffer ({} bits)",
                self.memory_bits,
                self.page_bits()
            )));
        }
        Ok(())
    }

    fn page_bits(&self) -> f64 {
        self.device.page_bytes * 8.0
    }

    /// Bytes of an average user key: the workload's if it gives one, else [`DEFAULT_KEY_BYTES`];
    /// never more than an entry's bytes.
    pub fn key_bytes(&self) -> f64 {
        self.workload
            .key_bytes
            .unwrap_or(DEFAULT_KEY_BYTES)
            .min(self.entry_bytes)
    }

    /// `B`: entries per page.
    fn entries_per_page(&self) -> f64 {
        (self.device.page_bytes / self.entry_bytes).max(1.0)
    }
}

/// The costs of `policy` at size ratio `T` with `buffer_bits` of write buffer and the rest of the
/// memory in Monkey's filters, on the idealised tree (DESIGN.md §7).
pub fn evaluate(
    problem: &TuningProblem,
    policy: ModelPolicy,
    size_ratio: f64,
    buffer_bits: f64,
) -> Result<Design> {
    evaluate_with(
        problem,
        policy,
        size_ratio,
        buffer_bits,
        FilterAllocatorKind::Monkey,
    )
}

/// [`evaluate`] with the filter memory spread as `filters` says: with uniform filters every run
/// has the false-positive rate `exp(-M/N * ln2sq)`, so `R` is the runs times that rate
/// [Monkey eqs. 55-56] and `p_L` is that rate. The models price Monkey's and uniform filters
/// only: another allocator is an [`Error::InvalidArgument`]. EcoTune and Moose take no size
/// ratio: `size_ratio` is only recorded in the design (the tuner passes [`own_size_ratio`]).
/// EcoTune's round depends on how fast merges run against writes (`T_c / T_w`), which depends on
/// the throughput being predicted: it is evaluated at the engine's default `T_c / T_w` (0.1), then
/// again at the ratio that prediction gives ([`merge_over_write_time`]).
pub fn evaluate_with(
    problem: &TuningProblem,
    policy: ModelPolicy,
    size_ratio: f64,
    buffer_bits: f64,
    filters: FilterAllocatorKind,
) -> Result<Design> {
    evaluate_with_writes(problem, policy, size_ratio, buffer_bits, filters, None)
}

/// [`evaluate_with`] with the merges per update `replayed` found in place of the closed form's
/// (`None`: the closed form's); the design records which ([`Design::writes`]).
pub fn evaluate_with_writes(
    problem: &TuningProblem,
    policy: ModelPolicy,
    size_ratio: f64,
    buffer_bits: f64,
    filters: FilterAllocatorKind,
    replayed: Option<ReplayedWrites>,
) -> Result<Design> {
    problem.validate()?;
    if !(buffer_bits.is_finite() && buffer_bits > 0.0 && buffer_bits <= problem.memory_bits) {
        return Err(invalid(format!(
            "buffer bits must be in (0, {}], got {buffer_bits}",
            problem.memory_bits
        )));
    }
    let first = price(
        problem,
        policy,
        size_ratio,
        buffer_bits,
        filters,
        DEFAULT_TC_OVER_TW,
        replayed,
    )?;
    if policy.kind() != CompactionKind::Ecotune {
        return Ok(first);
    }
    let tc_over_tw = merge_over_write_time(problem, &first);
    price(
        problem,
        policy,
        size_ratio,
        buffer_bits,
        filters,
        tc_over_tw,
        replayed,
    )
}

/// `T_c / T_w` for EcoTune at `design`'s predicted throughput: the seconds a merge takes to
/// rewrite a unit over the seconds between two units, `w * tau * (seconds per entry rewritten)`,
/// the entry's share of a merge's page reads and writes (`(rho + phi) * Omega / B`) and its
/// processor time, over the merge threads when merges run beside the operations. Clamped to
/// `[0.001, 1000]` (a workload without updates still gets a program to solve).
pub fn merge_over_write_time(problem: &TuningProblem, design: &Design) -> f64 {
    let w = &problem.workload;
    let total = w.point_lookups + w.range_lookups + w.updates;
    let device = &problem.device;
    let mut per_entry = (device.merge_read_cost_ratio + device.write_read_cost_ratio)
        * device.seconds_per_read
        / problem.entries_per_page()
        + device.cpu.seconds_per_entry_merged;
    if device.cpu.merge_threads > 0.0 {
        per_entry /= device.cpu.merge_threads;
    }
    let ratio = w.updates / total * design.predicted.throughput_ops * per_entry;
    // Without updates merges take no share of the time, whatever the throughput: a read-only
    // mix on a tree the block cache holds is priced at no device read and an unbounded
    // throughput, and `0 * inf` is not a ratio.
    if w.updates <= 0.0 || ratio.is_nan() {
        return 1e-3;
    }
    ratio.clamp(1e-3, 1e3)
}

/// Memory bits EcoTune's top-level key index takes beside `buffer_bits` of write buffer (0 for
/// the other policies), both its halves for keys of [`TuningProblem::key_bytes`]: it comes out
/// of the filters' memory.
pub fn top_index_bits(problem: &TuningProblem, policy: ModelPolicy, buffer_bits: f64) -> f64 {
    if policy.kind() != CompactionKind::Ecotune {
        return 0.0;
    }
    let n = problem.entries;
    let buffer_entries = buffer_bits / (problem.entry_bytes * 8.0);
    ecotune::index_bits(
        n,
        buffer_entries,
        problem.workload.long_scans(n).entries,
        problem.key_bytes(),
    )
}

/// A policy's tree as the tuner costs it.
struct PolicyShape {
    /// Disk levels.
    levels: usize,
    /// The runs lookups probe (filtered), one tree per moment the costs are averaged over: one
    /// for every policy but EcoTune, whose main level changes over a round (one per arrival).
    trees: Vec<per_run::RunTree>,
    /// Times a merge rewrites an entry on its way down.
    merges: f64,
    /// Runs a range lookup seeks beside the trees': EcoTune's top-level runs holding a key in
    /// its range (`ecotune::top_runs_sought`; filters do not cover them, point lookups find
    /// them through the key index). Level 0's waiting runs under the other policies are priced
    /// with the trees' ([`TuningProblem::level0_runs`]).
    unfiltered_runs: f64,
}

/// `policy`'s tree for `problem` with `buffer_bits` of write buffer and `filter_bits` of filters
/// (EcoTune's round sees the filters' uniform false-positive rate as its `f`).
fn policy_shape(
    problem: &TuningProblem,
    policy: ModelPolicy,
    size_ratio: f64,
    buffer_bits: f64,
    filter_bits: f64,
    tc_over_tw: f64,
) -> Result<PolicyShape> {
    let n = problem.entries;
    let entry_bits = problem.entry_bytes * 8.0;
    let buffer_entries = buffer_bits / entry_bits;
    // Level 0's waiting runs join the tree as a level: they take filter memory and probes.
    let level0 = |mut tree: per_run::RunTree| {
        if problem.level0_runs > 0.0 {
            tree.levels.insert(
                0,
                per_run::ModelLevel {
                    entries: buffer_entries * problem.level0_runs,
                    runs: problem.level0_runs,
                    ratio: 1.0,
                },
            );
        }
        tree
    };
    match policy.kind() {
        CompactionKind::Moose => {
            // Level 0 pours on its trigger, `2 * level0_runs + 1` buffers (its average waiting
            // runs are `(trigger - 1) / 2`).
            let pour = (2.0 * problem.level0_runs + 1.0) * buffer_entries;
            let tree = moose::tree(&Moose::ecotune_paper(), n, buffer_entries, pour)?;
            Ok(PolicyShape {
                levels: tree.runs.levels.len(),
                trees: vec![level0(tree.runs)],
                merges: tree.merges_per_update,
                unfiltered_runs: 0.0,
            })
        }
        CompactionKind::Ecotune => {
            let scans = problem.workload.long_scans(n);
            let tree = ecotune::tree(&ecotune::EcoTuneInputs {
                entries: n,
                buffer_entries,
                long_scan_ratio: scans.share_of_queries,
                scan_length: scans.entries,
                false_positive_rate: (-filter_bits / n * LN2_SQUARED).exp().min(1.0),
                tc_over_tw,
                settings: EcoTuneSettings::default(),
            })?;
            // Monkey's range lookups are closed ranges of `s * N` entries (DESIGN.md §7).
            let sought = ecotune::top_runs_sought(
                tree.top_runs,
                buffer_entries,
                problem.workload.selectivity,
            );
            Ok(PolicyShape {
                levels: 2,
                merges: tree.merges_per_update,
                unfiltered_runs: sought,
                trees: tree.arrivals,
            })
        }
        _ => {
            let levels = per_run::levels(policy, n, entry_bits, buffer_bits, size_ratio)?;
            Ok(PolicyShape {
                levels,
                trees: vec![level0(per_run::run_tree(policy, n, size_ratio, levels)?)],
                merges: merges_per_update(policy, levels, size_ratio)?,
                unfiltered_runs: 0.0,
            })
        }
    }
}

/// The filters' memory beside `buffer_bits` of write buffer and `policy`'s top-level key index
/// ([`top_index_bits`]); an error where EcoTune's index does not fit.
fn filter_bits_beside(
    problem: &TuningProblem,
    policy: ModelPolicy,
    buffer_bits: f64,
) -> Result<f64> {
    let index_bits = top_index_bits(problem, policy, buffer_bits);
    let filter_bits = problem.memory_bits - buffer_bits - index_bits;
    if filter_bits < 0.0 {
        return Err(invalid(format!(
            "EcoTune's top-level key index ({index_bits:.0} bits) does not fit beside a \
             {buffer_bits:.0}-bit buffer in {:.0} bits of memory",
            problem.memory_bits
        )));
    }
    Ok(filter_bits)
}

/// [`evaluate_with`] at a given `T_c / T_w` (used by EcoTune only).
fn price(
    problem: &TuningProblem,
    policy: ModelPolicy,
    size_ratio: f64,
    buffer_bits: f64,
    filters: FilterAllocatorKind,
    tc_over_tw: f64,
    replayed: Option<ReplayedWrites>,
) -> Result<Design> {
    let n = problem.entries;
    let filter_bits = filter_bits_beside(problem, policy, buffer_bits)?;
    let shape = policy_shape(
        problem,
        policy,
        size_ratio,
        buffer_bits,
        filter_bits,
        tc_over_tw,
    )?;
    let w = &problem.workload;
    // The discrete design's own runs: Monkey's allocation costed exactly on them (the §2 solver;
    // eq. 7 is its L -> infinity limit), uniform filters spreading the same memory over the
    // runs' entries (DESIGN.md §7: "N the actual sum of level sizes"); averaged over the
    // moments of the shape.
    let moments = shape.trees.len().max(1) as f64;
    let (mut r, mut p_last, mut runs, mut runs_existing) = (0.0, 0.0, 0.0, 0.0);
    for tree in &shape.trees {
        let (tree_r, tree_p) = zero_result_cost(tree, filter_bits, filters)?;
        r += tree_r / moments;
        p_last += tree_p / moments;
        runs += tree.runs() / moments;
        runs_existing += tree.runs_probed_for_existing_key() / moments;
    }
    let v = existing_lookup_cost(policy, r, p_last, size_ratio);
    // Z = v/(v+1) * V + R/(v+1) [Monkey eq. 13] with f0 = 1/(v+1).
    let z = (1.0 - w.zero_result_fraction) * v + w.zero_result_fraction * r;
    let b = problem.entries_per_page();
    let rho_phi = problem.device.merge_read_cost_ratio + problem.device.write_read_cost_ratio;
    let merges = replayed.map_or(shape.merges, |r| r.merges_per_update);
    let u = merges * rho_phi / b;
    let q = if policy.has_size_ratio() {
        range_cost(policy, w.selectivity, n, b, shape.levels, size_ratio)? + problem.level0_runs
    } else {
        w.selectivity * n / b + runs + shape.unfiltered_runs
    };
    // What the block cache serves of them: the same requests, run by run, through its model.
    let q = (q - range_reads_cached(&shape.trees, w, b, problem)).max(0.0);
    let total = w.point_lookups + w.range_lookups + w.updates;
    // The device serves `point_read_miss_share` of the point lookups' block reads.
    let z_device = z * problem.point_read_miss_share;
    let theta = (w.point_lookups * z_device + w.range_lookups * q + w.updates * u) / total;
    let cpu = &problem.device.cpu;
    let probed = (1.0 - w.zero_result_fraction) * runs_existing + w.zero_result_fraction * runs;
    let omega = problem.device.seconds_per_read;
    let range_runs = runs + shape.unfiltered_runs;
    let foreground_cpu = cpu.foreground(w, probed, z, range_runs) / total;
    let buffer_entries = (buffer_bits / (problem.entry_bytes * 8.0)).max(1.0);
    let merge_cpu = w.updates
        * (cpu.seconds_per_entry_merged * merges + cpu.seconds_per_flush / buffer_entries)
        / total;
    let cpu_seconds = foreground_cpu + merge_cpu;
    let seconds = if cpu.merge_threads > 0.0 {
        seconds_beside_merges(
            cpu,
            (foreground_cpu, merge_cpu),
            w.updates * merges / total,
            theta * omega,
            w.updates * u / total * omega,
        )
    } else {
        theta * omega + cpu_seconds
    };
    Ok(Design {
        policy,
        filters,
        size_ratio,
        levels: shape.levels,
        buffer_bits,
        filter_bits,
        predicted: Prediction {
            zero_result_lookup_io: r,
            existing_lookup_io: v,
            point_lookup_io: z,
            update_io: u,
            range_io: q,
            io_per_operation: theta,
            cpu_seconds_per_operation: cpu_seconds,
            throughput_ops: 1.0 / seconds,
        },
        writes: WritePricing::of(replayed, shape.merges),
    })
}

/// An operation's seconds with merges beside the operations (`cpu.merge_threads > 0`), from its
/// parts per operation of the mix: the foreground's and the merges' processor seconds, the
/// entries its merges rewrite, its device seconds in all and the merges' share of them. The
/// foreground pays its part of the merges' processor time where they share its processor
/// (`CpuCosts::foreground_share_of_merges`) and waits behind their pages on the device
/// ([`foreground_beside_merges`]); the merges take their threads' time; the slower paces.
fn seconds_beside_merges(
    cpu: &CpuCosts,
    (foreground_cpu, merge_cpu): (f64, f64),
    merged_entries: f64,
    device_seconds: f64,
    merge_device: f64,
) -> f64 {
    let shared = cpu.foreground_share_of_merges.clamp(0.0, 1.0)
        * cpu.seconds_per_entry_merged
        * merged_entries;
    let foreground = foreground_beside_merges(
        foreground_cpu + shared,
        device_seconds - merge_device,
        merge_device,
    );
    let background = (merge_device + merge_cpu) / cpu.merge_threads;
    foreground.max(background)
}

/// Threads merges run on beside the operations when their processor costs were measured alone
/// (`strata tune --measure-device`): the engine's compaction threads, at most the processors one
/// foreground thread leaves, at least one.
pub fn merge_threads_beside(compaction_threads: usize, processors: usize) -> f64 {
    compaction_threads.min(processors.saturating_sub(1)).max(1) as f64
}

/// The share of the merges' processor time that one thread running the operations pays
/// ([`CpuCosts::foreground_share_of_merges`]) beside `compaction_threads` merge threads and a
/// flush thread on `processors` processors: where those threads outnumber the processors the
/// scheduler gives each of them turns on every processor, and the merges' processor time comes
/// out of the operations' thread in proportion to its processor, `1 / processors`; where they
/// do not, the merges run on processors of their own and take nothing (0).
pub fn foreground_share_of_merges(compaction_threads: usize, processors: usize) -> f64 {
    let processors = processors.max(1);
    if compaction_threads + 2 > processors {
        1.0 / processors as f64
    } else {
        0.0
    }
}

/// An operation's foreground seconds beside merges on their own threads that keep the device
/// busy `merges` seconds per operation: `cpu` seconds of the processor and `reads` seconds of
/// device reads when the device is its own. The processor is not shared (the merges have their
/// threads), the device is: a read that finds it busy with a merge's pages waits, so each read
/// takes `1 / (1 - u)` of its time alone, `u = merges / s` the share of the time the device spends
/// on merges (a single server's waiting, as in M/M/1). Then `s = cpu + reads / (1 - merges / s)`,
/// the larger root of `s^2 - (cpu + reads + merges) s + cpu * merges = 0`. Without merges it is
/// `cpu + reads`; without reads, `max(cpu, merges)` (the device cannot merge more than it has
/// time for); in between, a workload whose lookups read from the device pays nearly all its
/// merges' device time (Monkey's serial charge), one whose lookups are served from memory nearly
/// none. Homogeneous of degree one and nondecreasing in each argument, so a cost moved by a
/// factor moves the seconds by at most that factor (`model::ties` relies on it).
pub fn foreground_beside_merges(cpu: f64, reads: f64, merges: f64) -> f64 {
    let (cpu, reads, merges) = (cpu.max(0.0), reads.max(0.0), merges.max(0.0));
    // (cpu + reads + merges)^2 - 4 cpu merges, written so that no term cancels another.
    let discriminant = (cpu - merges).powi(2) + reads * (reads + 2.0 * (cpu + merges));
    (cpu + reads + merges + discriminant.sqrt()) / 2.0
}

/// Data blocks per range lookup of `w` that `problem`'s block cache serves on `trees` (the
/// moments of a design's shape, averaged): each tree's [`range_requests`] less its
/// [`range_cost_through_cache`]; 0 without a cache or without range lookups (Monkey's `Q`).
fn range_reads_cached(
    trees: &[per_run::RunTree],
    w: &Workload,
    entries_per_page: f64,
    problem: &TuningProblem,
) -> f64 {
    if problem.block_cache_bytes <= 0.0 || w.range_lookups <= 0.0 {
        return 0.0;
    }
    let moments = trees.len().max(1) as f64;
    trees
        .iter()
        .map(|tree| {
            range_requests(tree, w.selectivity, entries_per_page)
                - range_cost_through_cache(tree, w.selectivity, entries_per_page, problem)
        })
        .sum::<f64>()
        / moments
}

/// Data blocks a range lookup of `selectivity` requests from `tree`'s runs: one per run (the
/// block its seek lands on) and the `s * n_r / B` block boundaries its entries cross in each run
/// of `n_r` entries, `B` = `entries_per_page` (`s * N / B` in all: Monkey's `Q` on these runs).
pub fn range_requests(tree: &per_run::RunTree, selectivity: f64, entries_per_page: f64) -> f64 {
    let b = entries_per_page.max(1.0);
    tree.levels
        .iter()
        .map(|level| level.runs + selectivity * level.entries / b)
        .sum()
}

/// Device reads per range lookup on `tree` through `problem`'s block cache
/// ([`TuningProblem::block_cache_bytes`]): [`range_requests`] run by run, each level's requests
/// spread evenly over its runs' `n / B` data blocks, the misses given by the model of the
/// engine's S3-FIFO eviction (`alloc::s3_fifo_model`, as [`super::seek`] prices a real tree's
/// seeks) with the cache holding only these blocks. A run of a write buffer that every seek
/// lands in has its blocks requested `T^i` times as often as level `i`'s and stays cached where
/// the last level's blocks do not: on recipe 38's `seekrandom` (docs/BENCHMARKS.md) the cache
/// served 1.55 of the 3.33 data blocks a seek requested.
pub fn range_cost_through_cache(
    tree: &per_run::RunTree,
    selectivity: f64,
    entries_per_page: f64,
    problem: &TuningProblem,
) -> f64 {
    use crate::alloc::cache_model::BlockGroup;
    use crate::alloc::s3_fifo_model::S3Fifo;
    let b = entries_per_page.max(1.0);
    let page_bytes = problem.device.page_bytes;
    let groups: Vec<BlockGroup> = tree
        .levels
        .iter()
        .filter(|level| level.entries > 0.0 && level.runs > 0.0)
        .map(|level| {
            let blocks = (level.entries / b).max(level.runs);
            BlockGroup {
                blocks,
                block_bytes: page_bytes,
                rate: (level.runs + selectivity * level.entries / b) / blocks,
            }
        })
        .collect();
    let capacity = if problem.block_cache_bytes.is_finite() {
        problem.block_cache_bytes as u64
    } else {
        u64::MAX
    };
    let time = S3Fifo::of_block_cache(capacity).settle(&groups);
    groups
        .iter()
        .map(|g| g.blocks * g.rate * time.miss_chance(g))
        .sum()
}

/// `(R, p_L)` on `runs` with `filter_bits` spread by `filters`: Monkey's (the §2 solver) or
/// uniform (every run at `exp(-M/N * ln2sq)`); the models price no other allocator.
fn zero_result_cost(
    runs: &per_run::RunTree,
    filter_bits: f64,
    filters: FilterAllocatorKind,
) -> Result<(f64, f64)> {
    match filters {
        FilterAllocatorKind::Monkey => per_run::zero_result_cost(runs, filter_bits),
        FilterAllocatorKind::Uniform => Ok((
            per_run::zero_result_cost_uniform(runs, filter_bits, runs.entries())?,
            (-filter_bits / runs.entries() * LN2_SQUARED).exp().min(1.0),
        )),
        other => Err(invalid(format!(
            "the cost models price monkey and uniform filters only, not {other}"
        ))),
    }
}

/// Filter bits `x` of the best split of `total_bits` between buffer and filters for a cost
/// `alpha * exp(-beta x) + gamma * ln(1 / (total - x))` (up to constants) [Monkey eqs. 41-52]:
/// Newton-Raphson on `h(x) = x - (1/beta) ln(alpha beta / gamma * (total - x))`, from
/// `x0 = total - page`, until a step is at most one page. 0 when `total <= gamma/(alpha beta)`
/// (filters cannot pay), `total - page` when `gamma = 0` (nothing gains from a larger buffer).
/// `h` is increasing and convex, so the iteration from the right end descends monotonically to
/// the root.
pub fn split_memory(alpha: f64, beta: f64, gamma: f64, total_bits: f64, page_bits: f64) -> f64 {
    let last = (total_bits - page_bits).max(0.0);
    if alpha <= 0.0 || beta <= 0.0 || last <= 0.0 {
        return 0.0;
    }
    if gamma <= 0.0 {
        return last;
    }
    if total_bits <= gamma / (alpha * beta) {
        return 0.0;
    }
    let h = |x: f64| x - (alpha * beta / gamma * (total_bits - x)).ln() / beta;
    let slope = |x: f64| 1.0 + 1.0 / (beta * (total_bits - x));
    let mut x = last;
    if h(x) <= 0.0 {
        // The root lies beyond the last page: everything but one page goes to the filters.
        return last;
    }
    for _ in 0..200 {
        let step = h(x) / slope(x);
        x = (x - step).clamp(0.0, last);
        if step.abs() <= page_bits || x == 0.0 {
            break;
        }
    }
    x
}

/// The size ratio the engine builds `policy` with when asked for `size_ratio`: tiering and lazy
/// leveling hold whole runs per level, so theirs is the nearest whole number (at least 2);
/// leveling and Garnering take a real `T`. The tuner costs every candidate at this ratio, so
/// the design it predicts is the one an options file builds (Monkey's Algorithm 1 takes the
/// real `T = (N/B)^(1/L)` for every policy).
pub fn buildable_size_ratio(policy: ModelPolicy, size_ratio: f64) -> f64 {
    match policy.kind() {
        CompactionKind::Tiering | CompactionKind::LazyLeveling => size_ratio.round().max(2.0),
        // Leveling (either kind) and Garnering; EcoTune and Moose take none.
        _ => size_ratio,
    }
}

/// The `T` whose Monkey splits EcoTune and Moose are evaluated at (they take no size ratio):
/// Moose's largest ratio between levels (7 in the registry's shape), EcoTune's `Ccap + 1` (its
/// last level over its main level at a round's end, `Ccap`, plus the main level: 4). For the
/// other policies, `T` is what the tuner's loop chooses; this returns `None`.
pub fn own_size_ratio(policy: ModelPolicy) -> Option<f64> {
    match policy.kind() {
        CompactionKind::Moose => Some(
            Moose::ecotune_paper()
                .ratios()
                .into_iter()
                .fold(2.0, f64::max),
        ),
        CompactionKind::Ecotune => Some(f64::from(EcoTuneSettings::default().ccap) + 1.0),
        _ => None,
    }
}

/// The write buffers `policy` is evaluated at, from Monkey's leveling and tiering `splits`:
/// those beside which EcoTune's top-level index fits (every split for the other policies). The
/// index grows with the buffer (a unit is at least one flush), so when neither split leaves it
/// room the buffer gives way: about the largest buffer that leaves the index room, which leaves
/// the filters next to nothing, and half of it, which leaves them some (the better of the two
/// is kept). A fixed buffer does not give way. `None`: the index fits beside no buffer of a page
/// or more.
fn fitting_buffers(
    problem: &TuningProblem,
    policy: ModelPolicy,
    (leveling, tiering): (f64, f64),
) -> Option<(f64, f64)> {
    let fits =
        |buffer: f64| buffer + top_index_bits(problem, policy, buffer) <= problem.memory_bits;
    match (fits(leveling), fits(tiering)) {
        (true, true) => return Some((leveling, tiering)),
        (true, false) => return Some((leveling, leveling)),
        (false, true) => return Some((tiering, tiering)),
        (false, false) => {}
    }
    let page = problem.page_bits();
    if problem.fixed_buffer_bits.is_some() || !fits(page) {
        return None;
    }
    // Bisection between a page, which fits, and the larger split, which does not.
    let (mut low, mut high) = (page, leveling.max(tiering).max(page));
    for _ in 0..64 {
        let middle = 0.5 * (low + high);
        if fits(middle) {
            low = middle;
        } else {
            high = middle;
        }
    }
    // A sliver below the boundary, where rounding cannot tip the sum over the budget; the
    // index's whole flushes make `fits` step, so each buffer is checked again.
    let largest = low * (1.0 - 1e-6);
    let half = (0.5 * low).max(page);
    match (fits(largest), fits(half)) {
        (true, true) => Some((largest, half)),
        (true, false) => Some((largest, largest)),
        (false, true) => Some((half, half)),
        (false, false) => None,
    }
}

/// Monkey's holistic tuner over every merge policy the models cover (see the module docs), the
/// best [`REPLAYED_CANDIDATES`] candidates' writes priced by their replays.
pub fn tune(problem: &TuningProblem) -> Result<Tuning> {
    tune_with_replays(problem, REPLAYED_CANDIDATES)
}

/// [`tune`] with the best `replayed` candidates' writes priced by their replays (0: the closed
/// form's order, every design's writes by the closed form).
pub fn tune_with_replays(problem: &TuningProblem, replayed: usize) -> Result<Tuning> {
    problem.validate()?;
    let pages = (problem.entries / problem.entries_per_page()).max(2.0);
    let max_levels = pages.log2().ceil().max(1.0) as usize;
    let mut candidates = Vec::new();
    for levels in 1..=max_levels {
        let size_ratio = pages.powf(1.0 / levels as f64).max(2.0);
        let designs = designs_at(problem, size_ratio)?;
        candidates.extend(
            designs
                .into_iter()
                .filter(|design| admissible(problem, design)),
        );
    }
    // EcoTune and Moose take no size ratio: once, at their own `T`'s splits.
    // EcoTune's top-level index must fit beside a buffer ([`fitting_buffers`]).
    for policy in [ModelPolicy::ECOTUNE, ModelPolicy::MOOSE] {
        let t = own_size_ratio(policy).unwrap_or(2.0);
        let splits = monkey_buffers(problem, t)?;
        let Some((leveling_buffer, tiering_buffer)) = fitting_buffers(problem, policy, splits)
        else {
            continue;
        };
        let best = better_split(problem, policy, t, leveling_buffer, tiering_buffer)?;
        let uniform = evaluate_with(
            problem,
            policy,
            t,
            best.buffer_bits,
            FilterAllocatorKind::Uniform,
        )?;
        candidates.extend(
            [best, uniform]
                .into_iter()
                .filter(|design| admissible(problem, design)),
        );
    }
    candidates.sort_by(|a, b| {
        b.predicted
            .throughput_ops
            .total_cmp(&a.predicted.throughput_ops)
    });
    let candidates = replay_top_writes(problem, distinct_designs(candidates), replayed)?;
    let recommended = *candidates
        .first()
        .ok_or_else(|| invalid("no design meets the SLA bounds".into()))?;
    Ok(Tuning {
        recommended,
        candidates,
    })
}

/// The write-buffer bits of Monkey's memory split at size ratio `t` for leveling and for
/// tiering [Monkey eqs. 41-52]; a fixed buffer is kept as given.
fn monkey_buffers(problem: &TuningProblem, t: f64) -> Result<(f64, f64)> {
    let n = problem.entries;
    let b = problem.entries_per_page();
    let w = &problem.workload;
    // `1 + phi` in Monkey's eqs. 41-52: a merge's page read and write, with `rho` for the read.
    let rho_phi = problem.device.merge_read_cost_ratio + problem.device.write_read_cost_ratio;
    let page_bits = problem.page_bits();
    let beta = LN2_SQUARED / n;
    let f0 = w.zero_result_fraction;
    let leveling = (
        w.point_lookups * t.powf(t / (t - 1.0)) / (t - 1.0) * f0.powf((t - 1.0) / t),
        (w.range_lookups + w.updates * (t - 1.0) * rho_phi / (2.0 * b)) / t.ln(),
    );
    // A tiered last level holds `T - 1` runs.
    let g = monkey_general_last_level_weight(f0, t - 1.0)?;
    let tiering = (
        w.point_lookups * t.powf(t / (t - 1.0)) * g.powf((t - 1.0) / t),
        (w.range_lookups * (t - 1.0) + w.updates * (t - 1.0) * rho_phi / (t * b)) / t.ln(),
    );
    let buffer = |(alpha, gamma): (f64, f64)| {
        problem.memory_bits
            - match problem.fixed_buffer_bits {
                Some(buffer) => problem.memory_bits - buffer,
                None => split_memory(alpha, beta, gamma, problem.memory_bits, page_bits),
            }
    };
    Ok((buffer(leveling), buffer(tiering)))
}

/// `policy` at size ratio `t` with Monkey's filters, at whichever of the two buffers gives the
/// more throughput (the leveling split on a tie).
fn better_split(
    problem: &TuningProblem,
    policy: ModelPolicy,
    t: f64,
    leveling_buffer: f64,
    tiering_buffer: f64,
) -> Result<Design> {
    let at_leveling = evaluate(problem, policy, t, leveling_buffer)?;
    if tiering_buffer == leveling_buffer {
        return Ok(at_leveling);
    }
    let at_tiering = evaluate(problem, policy, t, tiering_buffer)?;
    Ok(
        if at_tiering.predicted.throughput_ops > at_leveling.predicted.throughput_ops {
            at_tiering
        } else {
            at_leveling
        },
    )
}

/// Every design with a size ratio at `t`, each at the size ratio the engine builds it with:
/// leveling with dynamic level bytes and leveling at the leveling split (dynamic first: the
/// idealised tree is its own, where static leveling's last level is full only as it reaches its
/// capacity, so on the tie the models give them it is listed first), tiering at the tiering
/// split, lazy leveling and Garnering at the better of the two splits, all with Monkey's
/// filters, then each again with uniform filters.
fn designs_at(problem: &TuningProblem, t: f64) -> Result<Vec<Design>> {
    let (leveling_buffer, tiering_buffer) = monkey_buffers(problem, t)?;
    let per_run_policies = std::iter::once(ModelPolicy::LAZY_LEVELING).chain(
        GARNERING_SCALING_FACTORS
            .iter()
            .map(|&scaling_factor| ModelPolicy::garnering(scaling_factor)),
    );
    let mut designs = vec![
        evaluate(problem, ModelPolicy::LEVELING_DYNAMIC, t, leveling_buffer)?,
        evaluate(problem, ModelPolicy::LEVELING, t, leveling_buffer)?,
        evaluate(
            problem,
            ModelPolicy::TIERING,
            buildable_size_ratio(ModelPolicy::TIERING, t),
            tiering_buffer,
        )?,
    ];
    for policy in per_run_policies {
        let t = buildable_size_ratio(policy, t);
        designs.push(better_split(
            problem,
            policy,
            t,
            leveling_buffer,
            tiering_buffer,
        )?);
    }
    // Every design also with uniform filters at the same split: the allocation Monkey improves
    // on, listed so the candidates show what the allocation is worth. (Mnemosyne and
    // Mnemosyne+ solve Monkey's problem from measured statistics; on the model's uniform
    // lookups their allocation is Monkey's, so the model has no separate figure for them.)
    let uniform: Vec<Design> = designs
        .iter()
        .map(|d| {
            evaluate_with(
                problem,
                d.policy,
                d.size_ratio,
                d.buffer_bits,
                FilterAllocatorKind::Uniform,
            )
        })
        .collect::<Result<_>>()?;
    designs.extend(uniform);
    Ok(designs)
}

/// True if the engine builds `design` and it meets the problem's SLA bounds. A design deeper
/// than the engine's policy goes is not what the engine builds (its last level would take the
/// rest): Strata's leveling, tiering and lazy leveling stop at level 6 by default, Garnering at
/// its own count.
fn admissible(problem: &TuningProblem, design: &Design) -> bool {
    let deepest = match design.policy.kind() {
        // Garnering counts its own levels; EcoTune's and Moose's depths are fixed.
        CompactionKind::Garnering | CompactionKind::Ecotune | CompactionKind::Moose => {
            crate::limits::MAX_LEVELS - 1
        }
        _ => crate::compaction::DEFAULT_LAST_LEVEL,
    };
    design.levels <= deepest
        && problem
            .max_point_lookup_io
            .is_none_or(|bound| design.predicted.point_lookup_io <= bound)
        && problem
            .max_update_io
            .is_none_or(|bound| design.predicted.update_io <= bound)
}

/// One entry per distinct design of `candidates` (sorted best first), the best of each:
/// - one split per policy, filters and size ratio: tiering and lazy leveling round several
///   level counts' `T` to the same whole number, each with the split its real `T` gave; those
///   are one design at several splits, and the best split is the design's;
/// - Garnering at `c = 1` builds leveling's tree, and at `T = 2` tiering and lazy leveling
///   hold one run a level as leveling does; such a design costs exactly what the one listed
///   first does (the sort is stable, so the policy evaluated first — leveling before tiering
///   before the per-run policies — is the one kept).
///
/// Leveling with and without dynamic level bytes cost the same in the models but build different
/// trees (static leveling's last level is partly full): both are listed.
fn distinct_designs(candidates: Vec<Design>) -> Vec<Design> {
    let leveling_pair = |a: ModelPolicy, b: ModelPolicy| {
        let leveling = [CompactionKind::Leveling, CompactionKind::LevelingDynamic];
        a.kind() != b.kind() && leveling.contains(&a.kind()) && leveling.contains(&b.kind())
    };
    let mut distinct: Vec<Design> = Vec::with_capacity(candidates.len());
    for design in candidates {
        let listed = distinct.iter().any(|kept| {
            (kept.policy == design.policy
                && kept.filters == design.filters
                && kept.size_ratio == design.size_ratio)
                || (kept.is_same_design_as(&design) && !leveling_pair(kept.policy, design.policy))
        });
        if !listed {
            distinct.push(design);
        }
    }
    distinct
}

/// Candidates whose writes [`tune`] prices by the replay: the best five by the closed form, and
/// again until the best five of the new order are all replayed. Five: the recipe checks the
/// best three, and two more leave room for a replayed design to fall below the third without
/// an unreplayed one taking its place unseen; every replay costs the tuning a simulation
/// (DESIGN.md §7.5 gives the cost), so a tuning replays at most [`MAX_WRITE_REPLAYS`] designs
/// (a design's Monkey and uniform variants share one replay).
pub const REPLAYED_CANDIDATES: usize = 5;

/// Replays one tuning makes at most, however the order moves as designs are re-priced. The
/// replay finds more merges than the closed form for most leveled designs, so a re-priced design
/// tends to fall and let the next one up: on the recorded mixes of docs/BENCHMARKS.md recipe 27
/// the best five settled after 5 to 27 replays. Past the bound the designs not yet replayed keep
/// the closed form (and say so).
pub const MAX_WRITE_REPLAYS: usize = 48;

/// `design` evaluated again on `problem` with its merges priced as they were
/// ([`Design::writes`]): what a tie-break moving one cost re-evaluates.
pub fn evaluate_as_priced(problem: &TuningProblem, design: &Design) -> Result<Design> {
    let replayed = match design.writes {
        WritePricing::Replay { replayed, .. } => Some(replayed),
        _ => None,
    };
    evaluate_with_writes(
        problem,
        design.policy,
        design.size_ratio,
        design.buffer_bits,
        design.filters,
        replayed,
    )
}

/// The design to replay for `design` on `problem` (the level-0 trigger from
/// [`TuningProblem::level0_runs`], the average runs waiting there being `(trigger - 1) / 2`).
fn design_writes(problem: &TuningProblem, design: &Design) -> DesignWrites {
    DesignWrites {
        policy: design.policy,
        size_ratio: design.size_ratio,
        entries: problem.entries,
        entry_bytes: problem.entry_bytes,
        buffer_bytes: design.buffer_bits / 8.0,
        level0_compaction_trigger: (2.0 * problem.level0_runs + 1.0).round().max(1.0) as usize,
        flush_entries: None,
    }
}

/// `design` with its writes priced by its replay, as [`tune`] prices its best candidates: what a
/// design outside the tuning's best (the one a database runs now, say) is held against them
/// with. A design already replayed, or a workload without updates, is evaluated as it was
/// priced; a design the replay refuses keeps the closed form and says so.
pub fn evaluate_replayed(problem: &TuningProblem, design: &Design) -> Result<Design> {
    if problem.workload.updates <= 0.0 || design.writes != WritePricing::ClosedForm {
        return evaluate_as_priced(problem, design);
    }
    match replay_design_writes(&design_writes(problem, design)) {
        Ok(replayed) => evaluate_with_writes(
            problem,
            design.policy,
            design.size_ratio,
            design.buffer_bits,
            design.filters,
            Some(replayed),
        ),
        Err(_) => Ok(Design {
            writes: WritePricing::ReplayRefused,
            ..evaluate_as_priced(problem, design)?
        }),
    }
}

/// Re-prices the writes of the best [`REPLAYED_CANDIDATES`] of `candidates` (sorted best first)
/// with each design's replay ([`replay_design_writes`]) and sorts them again, until the best
/// ones are all replayed or [`MAX_WRITE_REPLAYS`] replays are spent (DESIGN.md §7.5, "Writes
/// priced by the replay"). A workload without updates keeps the closed form (no merge enters
/// its cost). A design the replay refuses keeps the closed form and says so.
fn replay_top_writes(
    problem: &TuningProblem,
    mut candidates: Vec<Design>,
    top: usize,
) -> Result<Vec<Design>> {
    if problem.workload.updates <= 0.0 {
        return Ok(candidates);
    }
    // One replay per policy, size ratio and buffer (the filters write nothing).
    let mut replays: Vec<(DesignWrites, Option<ReplayedWrites>)> = Vec::new();
    while let Some(index) = candidates
        .iter()
        .take(top)
        .position(|d| d.writes == WritePricing::ClosedForm)
    {
        let design = candidates[index];
        let writes = design_writes(problem, &design);
        let replayed = match replays.iter().find(|(w, _)| *w == writes) {
            Some((_, replayed)) => *replayed,
            None if replays.len() < MAX_WRITE_REPLAYS => {
                let replayed = replay_design_writes(&writes).ok();
                replays.push((writes, replayed));
                replayed
            }
            None => break,
        };
        // Every candidate of the same policy, size ratio and buffer (its other filters) shares
        // the replay.
        for candidate in candidates
            .iter_mut()
            .filter(|d| d.writes == WritePricing::ClosedForm && design_writes(problem, d) == writes)
        {
            *candidate = match replayed {
                Some(replayed) => evaluate_with_writes(
                    problem,
                    candidate.policy,
                    candidate.size_ratio,
                    candidate.buffer_bits,
                    candidate.filters,
                    Some(replayed),
                )?,
                None => Design {
                    writes: WritePricing::ReplayRefused,
                    ..*candidate
                },
            };
        }
        candidates.sort_by(|a, b| {
            b.predicted
                .throughput_ops
                .total_cmp(&a.predicted.throughput_ops)
        });
    }
    Ok(candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(workload: Workload, bits_per_entry: f64) -> TuningProblem {
        let entries = 1e8;
        TuningProblem {
            entries,
            entry_bytes: 128.0,
            memory_bits: bits_per_entry * entries,
            workload,
            device: Device {
                seconds_per_read: 1e-4,
                write_read_cost_ratio: 1.0,
                merge_read_cost_ratio: 1.0,
                page_bytes: 4096.0,
                cpu: CpuCosts::default(),
            },
            fixed_buffer_bits: None,
            max_point_lookup_io: None,
            max_update_io: None,
            level0_runs: 0.0,
            block_cache_bytes: 0.0,
            point_read_miss_share: 1.0,
        }
    }

    /// Leveling at `T = 4` with Monkey's filters and with uniform ones.
    fn leveling_at_4(p: &TuningProblem, buffer_bits: f64) -> (Design, Design) {
        let monkey = evaluate(p, ModelPolicy::LEVELING, 4.0, buffer_bits).expect("ok");
        let uniform = evaluate_with(
            p,
            ModelPolicy::LEVELING,
            4.0,
            buffer_bits,
            FilterAllocatorKind::Uniform,
        )
        .expect("ok");
        (monkey, uniform)
    }

    /// The tuner's answers for the balanced mix and a write-heavy one (10 bits per entry).
    fn balanced_and_write_heavy() -> Vec<Tuning> {
        [
            BALANCED,
            Workload {
                updates: 0.9,
                ..BALANCED
            },
        ]
        .into_iter()
        .map(|workload| tune(&problem(workload, 10.0)).expect("tune"))
        .collect()
    }

    /// Point lookups only, every one empty.
    const EMPTY_LOOKUPS: Workload = Workload {
        point_lookups: 1.0,
        zero_result_fraction: 1.0,
        range_lookups: 0.0,
        selectivity: 0.0,
        updates: 0.0,
        long_scans: None,
        key_bytes: None,
    };

    const BALANCED: Workload = Workload {
        point_lookups: 0.5,
        zero_result_fraction: 0.5,
        range_lookups: 0.0,
        selectivity: 0.0,
        updates: 0.5,
        long_scans: None,
        key_bytes: None,
    };

    /// Short range lookups alone on a tree the block cache holds whole: no design reads the
    /// device, so every one is priced at an unbounded throughput, and EcoTune's `T_c / T_w`
    /// (no updates: no merges) must still be a ratio for the tuning to go on.
    #[test]
    fn a_read_only_mix_on_a_tree_the_cache_holds_is_tuned() {
        let seeks = Workload {
            point_lookups: 0.0,
            zero_result_fraction: 0.0,
            range_lookups: 1.0,
            selectivity: 5e-4,
            updates: 0.0,
            long_scans: None,
            key_bytes: None,
        };
        let p = TuningProblem {
            entries: 20_000.0,
            memory_bits: 10.0 * 20_000.0 + 8.0 * 65_536.0,
            fixed_buffer_bits: Some(8.0 * 65_536.0),
            entry_bytes: 124.0,
            block_cache_bytes: 32.0 * 1048576.0,
            ..problem(seeks, 10.0)
        };
        // EcoTune's first pricing (at the smallest `T_c / T_w`) reads nothing from the device.
        let ecotune = evaluate(&p, ModelPolicy::ECOTUNE, 4.0, 8.0 * 65_536.0).expect("priced");
        let tuning = tune(&p).expect("tunes");
        assert!(!tuning.candidates.is_empty());
        for design in tuning.candidates.iter().chain([&ecotune]) {
            let ratio = merge_over_write_time(&p, design);
            assert_eq!(ratio, 1e-3, "{design:?}");
        }
        // With updates the ratio is the merges' share, clamped as before.
        let updating = TuningProblem {
            workload: BALANCED,
            ..p
        };
        let unbounded = Design {
            predicted: Prediction {
                throughput_ops: f64::INFINITY,
                ..ecotune.predicted
            },
            ..ecotune
        };
        assert_eq!(merge_over_write_time(&updating, &unbounded), 1e3);
        assert_eq!(merge_over_write_time(&p, &unbounded), 1e-3);
    }

    /// The continuous cost whose minimum `split_memory` finds:
    /// `alpha exp(-beta x) + gamma ln(1 / (total - x))`.
    fn continuous_cost(alpha: f64, beta: f64, gamma: f64, total: f64, x: f64) -> f64 {
        alpha * (-beta * x).exp() - gamma * (total - x).ln()
    }

    #[test]
    fn newton_split_matches_a_fine_grid_search_within_one_page() {
        let page = 4096.0 * 8.0;
        for (alpha, gamma, total) in [
            (1.0, 0.01, 8e8),
            (0.3, 0.2, 5e8),
            (2.0, 0.001, 1e9),
            (0.05, 0.5, 3e8),
        ] {
            let beta = LN2_SQUARED / 1e8;
            let x = split_memory(alpha, beta, gamma, total, page);
            // Grid over [0, total - page] in steps of a page.
            let mut best = (f64::INFINITY, 0.0);
            let mut g = 0.0;
            while g <= total - page {
                let cost = continuous_cost(alpha, beta, gamma, total, g);
                if cost < best.0 {
                    best = (cost, g);
                }
                g += page;
            }
            assert!(
                (x - best.1).abs() <= page,
                "alpha {alpha}, gamma {gamma}: newton {x}, grid {}",
                best.1
            );
        }
        // No point lookups: no filters. No updates or ranges: all but a page to filters.
        assert_eq!(split_memory(0.0, 1e-8, 1.0, 1e9, page), 0.0);
        assert_eq!(split_memory(1.0, 1e-8, 0.0, 1e9, page), 1e9 - page);
    }

    #[test]
    fn the_tuner_prefers_leveling_for_lookups_and_tiering_for_writes() {
        let reads = Workload {
            point_lookups: 0.95,
            updates: 0.05,
            ..BALANCED
        };
        let writes = Workload {
            point_lookups: 0.02,
            updates: 0.98,
            ..BALANCED
        };
        let for_reads = tune(&problem(reads, 10.0)).expect("tune");
        let for_writes = tune(&problem(writes, 10.0)).expect("tune");
        let best = |tuning: &Tuning, policy: ModelPolicy| {
            tuning
                .candidates
                .iter()
                .filter(|c| c.policy == policy)
                .map(|c| c.predicted.throughput_ops)
                .fold(0.0, f64::max)
        };
        // Among Monkey's two, leveling for lookups and tiering for writes; overall, a policy
        // with a leveled last level for lookups (lazy leveling, with Dostoevsky, beats plain
        // leveling on this mix: cheaper updates, the same last-level lookups).
        assert!(best(&for_reads, ModelPolicy::LEVELING) > best(&for_reads, ModelPolicy::TIERING));
        assert!(best(&for_writes, ModelPolicy::TIERING) > best(&for_writes, ModelPolicy::LEVELING));
        assert_ne!(for_reads.recommended.policy, ModelPolicy::TIERING);
        assert_eq!(for_writes.recommended.policy, ModelPolicy::TIERING);
        // Every policy the models cover is a candidate, Garnering at each c.
        for policy in [
            ModelPolicy::LEVELING,
            ModelPolicy::TIERING,
            ModelPolicy::LAZY_LEVELING,
        ]
        .into_iter()
        .chain(
            GARNERING_SCALING_FACTORS
                .iter()
                .map(|&scaling_factor| ModelPolicy::garnering(scaling_factor)),
        ) {
            assert!(best(&for_reads, policy) > 0.0, "{policy:?} missing");
        }
        for tuning in [&for_reads, &for_writes] {
            let best = tuning.recommended.predicted.throughput_ops;
            assert!(tuning
                .candidates
                .iter()
                .all(|c| c.predicted.throughput_ops <= best));
            assert_eq!(tuning.candidates[0], tuning.recommended);
            assert!(
                tuning.candidates.len() >= 28,
                "several L, every policy, both allocations"
            );
            assert_eq!(tuning.recommended.filters, FilterAllocatorKind::Monkey);
            // A uniform-filter candidate never beats Monkey's filters on the same design.
            for uniform in tuning
                .candidates
                .iter()
                .filter(|c| c.filters == FilterAllocatorKind::Uniform)
            {
                let monkey = tuning
                    .candidates
                    .iter()
                    .find(|c| {
                        c.filters == FilterAllocatorKind::Monkey
                            && c.policy == uniform.policy
                            && c.size_ratio == uniform.size_ratio
                            && c.buffer_bits == uniform.buffer_bits
                    })
                    .expect("the same design with Monkey's filters");
                assert!(
                    monkey.predicted.throughput_ops >= uniform.predicted.throughput_ops,
                    "{uniform:?}"
                );
            }
        }
        // A read-heavy workload gives most memory to the filters.
        let r = for_reads.recommended;
        assert!(r.filter_bits > r.buffer_bits, "{r:?}");
    }

    #[test]
    fn sla_bounds_discard_designs_and_bad_input_is_an_error() {
        let bounded = TuningProblem {
            max_update_io: Some(0.0),
            ..problem(BALANCED, 10.0)
        };
        assert!(tune(&bounded).is_err(), "no design writes for free");
        let some = TuningProblem {
            max_point_lookup_io: Some(1.2),
            ..problem(BALANCED, 10.0)
        };
        let tuning = tune(&some).expect("tune");
        assert!(tuning
            .candidates
            .iter()
            .all(|c| c.predicted.point_lookup_io <= 1.2));
        assert!(tune(&TuningProblem {
            entries: f64::NAN,
            ..problem(BALANCED, 10.0)
        })
        .is_err());
        assert!(tune(&TuningProblem {
            memory_bits: 1.0,
            ..problem(BALANCED, 10.0)
        })
        .is_err());
        // A fixed buffer is kept by every candidate.
        let fixed = TuningProblem {
            fixed_buffer_bits: Some(8.0 * 8.0 * 1048576.0),
            ..problem(BALANCED, 10.0)
        };
        let tuning = tune(&fixed).expect("tune");
        assert!(tuning
            .candidates
            .iter()
            .all(|c| c.buffer_bits == 8.0 * 8.0 * 1048576.0));
        assert!(tune(&TuningProblem {
            fixed_buffer_bits: Some(-1.0),
            ..problem(BALANCED, 10.0)
        })
        .is_err());
    }

    /// The per-run policies are costed on their own trees: Garnering below `c = 1` needs fewer
    /// levels than leveling for the same buffer, and at `c = 1` costs what leveling's exact
    /// per-run form does.
    #[test]
    fn per_run_policies_are_evaluated_on_their_own_trees() {
        let p = problem(BALANCED, 10.0);
        let buffer = 8.0 * 8.0 * 1048576.0;
        let leveling = evaluate(&p, ModelPolicy::LEVELING, 4.0, buffer).expect("ok");
        let garnering = |c| evaluate(&p, ModelPolicy::garnering(c), 4.0, buffer).expect("ok");
        assert!(garnering(0.4).levels < leveling.levels);
        let at_one = garnering(1.0);
        assert_eq!(at_one.levels, leveling.levels);
        let runs = super::per_run::run_tree(ModelPolicy::LEVELING, p.entries, 4.0, leveling.levels)
            .expect("tree");
        let exact = super::super::zero_result_cost_exact(at_one.filter_bits, &runs.run_entries())
            .expect("exact");
        let r = at_one.predicted.zero_result_lookup_io;
        assert!((r - exact).abs() <= 1e-6 * exact, "{r} vs {exact}");
        assert_eq!(at_one.predicted.update_io, leveling.predicted.update_io);
        let lazy = evaluate(&p, ModelPolicy::LAZY_LEVELING, 4.0, buffer).expect("ok");
        assert!(lazy.predicted.update_io < leveling.predicted.update_io);
        assert!(lazy.predicted.range_io > leveling.predicted.range_io);
    }

    /// Uniform filters cost every run the same rate: more than Monkey's on a deep tree, the same
    /// on a single run.
    #[test]
    fn uniform_filters_cost_the_runs_times_one_rate() {
        let p = problem(BALANCED, 10.0);
        let buffer = 8.0 * 8.0 * 1048576.0;
        let (monkey, uniform) = leveling_at_4(&p, buffer);
        assert_eq!(monkey.filters, FilterAllocatorKind::Monkey);
        assert_eq!(uniform.filters, FilterAllocatorKind::Uniform);
        // The memory spread over the runs' entries (N the actual sum of level sizes).
        let runs =
            per_run::run_tree(ModelPolicy::LEVELING, p.entries, 4.0, uniform.levels).expect("runs");
        let rate = (-uniform.filter_bits / runs.entries() * LN2_SQUARED).exp();
        let r = uniform.predicted.zero_result_lookup_io;
        assert!((r - uniform.levels as f64 * rate).abs() < 1e-12);
        assert!(r > monkey.predicted.zero_result_lookup_io);
        assert!((uniform.predicted.existing_lookup_io - (r - rate + 1.0)).abs() < 1e-12);
        assert_eq!(uniform.predicted.update_io, monkey.predicted.update_io);
        // The models price Monkey's and uniform filters only: another allocator is refused.
        for &filters in FilterAllocatorKind::all() {
            let design = evaluate_with(&p, ModelPolicy::LEVELING, 4.0, buffer, filters);
            assert_eq!(
                design.is_ok(),
                matches!(
                    filters,
                    FilterAllocatorKind::Monkey | FilterAllocatorKind::Uniform
                ),
                "{filters}"
            );
        }
    }

    #[test]
    fn evaluate_agrees_with_the_exact_form_and_approaches_the_closed_form() {
        let p = problem(BALANCED, 10.0);
        let design = evaluate(&p, ModelPolicy::LEVELING, 10.0, 64.0 * 8.0 * 1048576.0).expect("ok");
        let runs = per_run::run_tree(ModelPolicy::LEVELING, p.entries, 10.0, design.levels)
            .expect("runs")
            .run_entries();
        let r = super::super::zero_result_cost_exact(design.filter_bits, &runs).expect("ok");
        let closed = super::super::zero_result_cost(
            ModelPolicy::LEVELING,
            design.filter_bits,
            p.entries,
            10.0,
            design.levels,
        )
        .expect("ok");
        assert!(design.levels >= 2, "{design:?}");
        assert!((design.predicted.zero_result_lookup_io - r).abs() <= 1e-6 * r);
        assert!(
            (r - closed).abs() / closed < 0.05,
            "T^L >= 100: {r} vs {closed}"
        );
        let r = design.predicted.zero_result_lookup_io;
        assert!(
            (design.predicted.point_lookup_io
                - (0.5 * design.predicted.existing_lookup_io + 0.5 * r))
                .abs()
                < 1e-12
        );
        assert!(design.predicted.throughput_ops > 0.0);
    }

    /// The processor term: an operation's seconds are its I/Os times `Omega` plus its processor
    /// time, computed from the design's runs and merges as [`CpuCosts`] says; without processor
    /// costs the prediction is Monkey's I/O-only one.
    #[test]
    fn processor_costs_follow_the_runs_probed_and_the_merges() {
        let cpu = CpuCosts {
            seconds_per_lookup: 1e-6,
            seconds_per_run_probed: 2e-7,
            seconds_per_run_sought: 0.0,
            seconds_per_block_searched: 0.0,
            seconds_per_update: 3e-6,
            seconds_per_entry_merged: 5e-7,
            merge_threads: 0.0,
            seconds_per_flush: 0.0,
            foreground_share_of_merges: 0.0,
        };
        let with_cpu = |workload: Workload| TuningProblem {
            device: Device {
                cpu,
                ..problem(workload, 10.0).device
            },
            ..problem(workload, 10.0)
        };
        let buffer = 8.0 * 8.0 * 1048576.0;
        let empty = EMPTY_LOOKUPS;
        let existing = Workload {
            zero_result_fraction: 0.0,
            ..empty
        };
        let updates = Workload {
            point_lookups: 0.0,
            updates: 1.0,
            ..empty
        };
        for (policy, t) in [
            (ModelPolicy::LEVELING, 4.0),
            (ModelPolicy::TIERING, 4.0),
            (ModelPolicy::LAZY_LEVELING, 5.0),
            (ModelPolicy::garnering(0.6), 4.0),
        ] {
            let io_only = evaluate(&problem(empty, 10.0), policy, t, buffer).expect("ok");
            assert_eq!(io_only.predicted.cpu_seconds_per_operation, 0.0);
            let design = evaluate(&with_cpu(empty), policy, t, buffer).expect("ok");
            let runs = per_run::run_tree(policy, 1e8, t, design.levels).expect("tree");
            let cpu_seconds = 1e-6 + 2e-7 * runs.runs();
            let p = design.predicted;
            assert!(
                (p.cpu_seconds_per_operation - cpu_seconds).abs() < 1e-15,
                "{p:?}"
            );
            assert_eq!(p.io_per_operation, io_only.predicted.io_per_operation);
            let expected = 1.0 / (p.io_per_operation * 1e-4 + cpu_seconds);
            assert!(
                (p.throughput_ops - expected).abs() <= 1e-9 * expected,
                "{p:?}"
            );
            // A key that exists stops at its run: no more probes than an empty lookup (fewer
            // when the last level holds several runs).
            let found = evaluate(&with_cpu(existing), policy, t, buffer).expect("ok");
            let probed = runs.runs_probed_for_existing_key();
            assert!(probed <= runs.runs());
            let cpu_seconds = 1e-6 + 2e-7 * probed;
            assert!((found.predicted.cpu_seconds_per_operation - cpu_seconds).abs() < 1e-15);
            // An update pays its insert and every merge that rewrites it.
            let update = evaluate(&with_cpu(updates), policy, t, buffer).expect("ok");
            let merges = merges_per_update(policy, update.levels, t).expect("priced");
            let cpu_seconds = 3e-6 + 5e-7 * merges;
            assert!((update.predicted.cpu_seconds_per_operation - cpu_seconds).abs() < 1e-15);
            let u = update.predicted.update_io;
            assert!(
                (u - merges * 2.0 / (4096.0 / 128.0)).abs() < 1e-12,
                "{u} {merges}"
            );
            // A merge's in-order page reads at a tenth of a lookup's random read.
            let cheap_reads = TuningProblem {
                device: Device {
                    merge_read_cost_ratio: 0.1,
                    ..with_cpu(updates).device
                },
                ..with_cpu(updates)
            };
            let cheap = evaluate(&cheap_reads, policy, t, buffer).expect("ok");
            let u = cheap.predicted.update_io;
            assert!(
                (u - merges * 1.1 / (4096.0 / 128.0)).abs() < 1e-12,
                "{u} {merges}"
            );
        }
        // Merges beside the operations: an update-only workload costs the larger of its insert,
        // its merges' device time (one device, however many threads) and its merges over the
        // threads; a lookup-only one is unchanged.
        let threads = |k: f64, workload: Workload| TuningProblem {
            device: Device {
                cpu: CpuCosts {
                    merge_threads: k,
                    ..cpu
                },
                ..with_cpu(workload).device
            },
            ..with_cpu(workload)
        };
        for (policy, t) in [(ModelPolicy::LEVELING, 4.0), (ModelPolicy::TIERING, 4.0)] {
            let serial = evaluate(&with_cpu(updates), policy, t, buffer).expect("ok");
            let p = serial.predicted;
            let merges = merges_per_update(policy, serial.levels, t).expect("priced");
            let background = p.update_io * 1e-4 + 5e-7 * merges;
            for k in [1.0, 2.0] {
                let beside = evaluate(&threads(k, updates), policy, t, buffer).expect("ok");
                let device = p.update_io * 1e-4;
                let expected = 1.0 / f64::max(3e-6, device).max(background / k);
                let got = beside.predicted.throughput_ops;
                assert!(
                    (got - expected).abs() <= 1e-9 * expected,
                    "{got} {expected}"
                );
                assert!(got > p.throughput_ops);
                assert_eq!(
                    beside.predicted.cpu_seconds_per_operation,
                    p.cpu_seconds_per_operation
                );
            }
            let lookups = evaluate(&with_cpu(empty), policy, t, buffer).expect("ok");
            let beside = evaluate(&threads(1.0, empty), policy, t, buffer).expect("ok");
            assert_eq!(
                beside.predicted.throughput_ops,
                lookups.predicted.throughput_ops
            );
        }
        // A flush's fixed cost is shared by the buffer's entries: a smaller buffer pays more.
        let flushing = |buffer_bits: f64| {
            let problem = TuningProblem {
                device: Device {
                    cpu: CpuCosts {
                        seconds_per_flush: 1e-3,
                        ..cpu
                    },
                    ..with_cpu(updates).device
                },
                ..with_cpu(updates)
            };
            let design = evaluate(&problem, ModelPolicy::LEVELING, 4.0, buffer_bits).expect("ok");
            let plain =
                evaluate(&with_cpu(updates), ModelPolicy::LEVELING, 4.0, buffer_bits).expect("ok");
            design.predicted.cpu_seconds_per_operation - plain.predicted.cpu_seconds_per_operation
        };
        let entries = buffer / (128.0 * 8.0);
        assert!((flushing(buffer) - 1e-3 / entries).abs() < 1e-15);
        assert!(flushing(buffer / 64.0) > 60.0 * flushing(buffer));
        // Tiering at T = 4 on three levels: 3 runs a level, a key on the last level found after
        // the six above it and two of the last level's three on average.
        let tiering = per_run::run_tree(ModelPolicy::TIERING, 1e8, 4.0, 3).expect("tree");
        assert_eq!(tiering.runs(), 9.0);
        assert_eq!(tiering.runs_probed_for_existing_key(), 8.0);
        assert_eq!(
            merges_per_update(ModelPolicy::TIERING, 3, 4.0).expect("priced"),
            2.25
        );
        assert_eq!(
            merges_per_update(ModelPolicy::LEVELING, 3, 4.0).expect("priced"),
            4.5
        );
        // Negative or non-finite processor costs are refused.
        let bad = TuningProblem {
            device: Device {
                cpu: CpuCosts {
                    seconds_per_run_probed: -1.0,
                    seconds_per_run_sought: 0.0,
                    seconds_per_block_searched: 0.0,
                    ..cpu
                },
                ..problem(empty, 10.0).device
            },
            ..problem(empty, 10.0)
        };
        assert!(tune(&bad).is_err());
    }

    /// On empty lookups with plenty of filter memory an I/O-only model barely separates the
    /// designs; once a probed run costs processor time, the tuner prefers fewer runs.
    #[test]
    fn a_processor_cost_per_run_moves_the_tuner_to_fewer_runs() {
        let empty = Workload {
            point_lookups: 0.9,
            zero_result_fraction: 1.0,
            range_lookups: 0.0,
            selectivity: 0.0,
            updates: 0.1,
            long_scans: None,
            key_bytes: None,
        };
        let runs = |design: &Design| {
            per_run::run_tree(design.policy, 1e8, design.size_ratio, design.levels)
                .expect("tree")
                .runs()
        };
        let io_only = tune(&problem(empty, 16.0)).expect("tune").recommended;
        let with_cpu = TuningProblem {
            device: Device {
                cpu: CpuCosts {
                    seconds_per_lookup: 1e-6,
                    seconds_per_run_probed: 1e-7,
                    seconds_per_run_sought: 0.0,
                    seconds_per_block_searched: 0.0,
                    seconds_per_update: 2e-6,
                    seconds_per_entry_merged: 1e-8,
                    merge_threads: 0.0,
                    seconds_per_flush: 0.0,
                    foreground_share_of_merges: 0.0,
                },
                seconds_per_read: 1e-6,
                ..problem(empty, 16.0).device
            },
            ..problem(empty, 16.0)
        };
        let io_only_fast = TuningProblem {
            device: Device {
                seconds_per_read: 1e-6,
                ..problem(empty, 16.0).device
            },
            ..problem(empty, 16.0)
        };
        let fast = tune(&io_only_fast).expect("tune").recommended;
        assert_eq!(
            fast.policy, io_only.policy,
            "Omega alone scales an I/O-only model"
        );
        let cpu = tune(&with_cpu).expect("tune").recommended;
        assert!(runs(&cpu) < runs(&io_only), "{cpu:?} vs {io_only:?}");
    }

    /// Designs that coincide are listed once: Garnering at `c = 1` is leveling, at `T = 2`
    /// tiering and lazy leveling are too, and a whole-run policy at one `T` is listed at its
    /// best split only. Leveling with and without dynamic level bytes cost the same but build
    /// different trees: each is listed, dynamic first.
    #[test]
    fn coinciding_designs_are_listed_once() {
        let p = problem(BALANCED, 10.0);
        let buffer = 8.0 * 8.0 * 1048576.0;
        let leveling = evaluate(&p, ModelPolicy::LEVELING, 4.0, buffer).expect("ok");
        let garnering_1 = evaluate(&p, ModelPolicy::garnering(1.0), 4.0, buffer).expect("ok");
        assert!(garnering_1.is_same_design_as(&leveling));
        let tiering = evaluate(&p, ModelPolicy::TIERING, 4.0, buffer).expect("ok");
        assert!(!tiering.is_same_design_as(&leveling));
        let (_, uniform) = leveling_at_4(&p, buffer);
        assert!(!uniform.is_same_design_as(&leveling));
        for workload in [
            BALANCED,
            Workload {
                updates: 0.0,
                ..BALANCED
            },
        ] {
            let tuning = tune(&problem(workload, 10.0)).expect("tune");
            let mut leveling_pairs = 0;
            for (i, a) in tuning.candidates.iter().enumerate() {
                for b in &tuning.candidates[i + 1..] {
                    let kinds = (a.policy.kind(), b.policy.kind());
                    if kinds == (CompactionKind::LevelingDynamic, CompactionKind::Leveling) {
                        leveling_pairs += usize::from(a.is_same_design_as(b));
                        continue;
                    }
                    // On a tie, dynamic level bytes is listed first.
                    let static_first =
                        kinds == (CompactionKind::Leveling, CompactionKind::LevelingDynamic);
                    assert!(
                        !(static_first && a.is_same_design_as(b)),
                        "{a:?} before {b:?}"
                    );
                    if static_first {
                        continue;
                    }
                    assert!(!a.is_same_design_as(b), "{a:?} listed twice");
                    assert!(
                        !(a.policy == b.policy
                            && a.filters == b.filters
                            && a.size_ratio == b.size_ratio),
                        "{a:?} and {b:?}: one design at two splits"
                    );
                    assert!(a.predicted.throughput_ops >= b.predicted.throughput_ops);
                }
            }
            assert!(
                leveling_pairs > 0,
                "static leveling beside dynamic at the same design"
            );
            // No Garnering at c = 1 is left where leveling at the same split is listed.
            assert!(!tuning.candidates.iter().any(|d| {
                d.policy.garnering_c() == Some(1.0)
                    && tuning
                        .candidates
                        .iter()
                        .any(|l| l.policy == ModelPolicy::LEVELING && l.is_same_design_as(d))
            }));
        }
    }

    /// Tiering and lazy leveling hold whole runs per level: the tuner costs them at the whole
    /// size ratio the engine builds, not at Monkey's real `T`.
    #[test]
    fn whole_run_policies_are_costed_at_a_buildable_size_ratio() {
        assert_eq!(buildable_size_ratio(ModelPolicy::TIERING, 2.56), 3.0);
        assert_eq!(buildable_size_ratio(ModelPolicy::LAZY_LEVELING, 1.2), 2.0);
        assert_eq!(buildable_size_ratio(ModelPolicy::LEVELING, 2.56), 2.56);
        let garnering = ModelPolicy::garnering(0.8);
        assert_eq!(buildable_size_ratio(garnering, 2.56), 2.56);
        for tuning in balanced_and_write_heavy() {
            for design in &tuning.candidates {
                assert_eq!(
                    design.size_ratio,
                    buildable_size_ratio(design.policy, design.size_ratio),
                    "{design:?}"
                );
            }
            assert!(tuning
                .candidates
                .iter()
                .any(|d| d.policy == ModelPolicy::TIERING));
        }
    }

    /// Level 0's waiting runs join every design's tree: they take filter memory, add runs to
    /// probe, and keep a design that gives its filters nothing from looking free.
    #[test]
    fn level_zero_runs_are_probed_and_filtered_like_the_others() {
        let empty = EMPTY_LOOKUPS;
        let cpu = CpuCosts {
            seconds_per_run_probed: 1e-7,
            seconds_per_run_sought: 0.0,
            seconds_per_block_searched: 0.0,
            ..CpuCosts::default()
        };
        let base = TuningProblem {
            device: Device {
                cpu,
                ..problem(empty, 10.0).device
            },
            ..problem(empty, 10.0)
        };
        let with_level0 = TuningProblem {
            level0_runs: 1.5,
            ..base
        };
        let buffer = 8.0 * 8.0 * 1048576.0;
        for policy in [ModelPolicy::LEVELING, ModelPolicy::TIERING] {
            let without = evaluate(&base, policy, 4.0, buffer).expect("ok").predicted;
            let with = evaluate(&with_level0, policy, 4.0, buffer)
                .expect("ok")
                .predicted;
            assert!(with.zero_result_lookup_io > without.zero_result_lookup_io);
            assert!(
                (with.cpu_seconds_per_operation - without.cpu_seconds_per_operation - 1.5e-7).abs()
                    < 1e-15
            );
            assert_eq!(with.range_io, without.range_io + 1.5);
        }
        // With no filter memory, level 0's runs are read on every lookup: a design cannot get
        // its filters for free.
        let starved = TuningProblem {
            memory_bits: 8.0 * 8.0 * 1048576.0 + 1.0,
            ..with_level0
        };
        let design =
            evaluate(&starved, ModelPolicy::LEVELING, 4.0, 8.0 * 8.0 * 1048576.0).expect("ok");
        assert!(design.predicted.zero_result_lookup_io > 1.5 + design.levels as f64 - 0.01);
        assert!(tune(&TuningProblem {
            level0_runs: -1.0,
            ..base
        })
        .is_err());
    }

    /// Point lookups' block reads are priced at the share the device serves (the rest at the
    /// block search alone); 1 is Monkey's model, a share outside 0..=1 is refused.
    #[test]
    fn point_reads_are_priced_at_the_share_the_device_serves() {
        let lookups = Workload {
            point_lookups: 1.0,
            zero_result_fraction: 0.0,
            range_lookups: 0.0,
            selectivity: 0.0,
            updates: 0.0,
            long_scans: None,
            key_bytes: None,
        };
        let base = problem(lookups, 10.0);
        let cpu = CpuCosts {
            seconds_per_block_searched: 2e-6,
            ..CpuCosts::default()
        };
        let at = |share: f64| {
            let p = TuningProblem {
                point_read_miss_share: share,
                device: Device { cpu, ..base.device },
                ..base
            };
            evaluate(&p, ModelPolicy::LEVELING, 10.0, 8.0 * 8.0 * 1048576.0)
                .expect("ok")
                .predicted
        };
        let (all, tenth, none) = (at(1.0), at(0.1), at(0.0));
        let z = all.point_lookup_io;
        assert!(z >= 1.0, "{all:?}");
        assert!((all.io_per_operation - z).abs() < 1e-12);
        assert!((tenth.io_per_operation - 0.1 * z).abs() < 1e-12);
        assert_eq!(none.io_per_operation, 0.0);
        // The block search is paid on every block read, cached or not.
        for p in [all, tenth, none] {
            assert!(
                (p.cpu_seconds_per_operation - 2e-6 * z).abs() < 1e-15,
                "{p:?}"
            );
        }
        let omega = base.device.seconds_per_read;
        assert!((1.0 / none.throughput_ops - 2e-6 * z).abs() < 1e-12);
        assert!((1.0 / all.throughput_ops - (omega + 2e-6) * z).abs() < 1e-12);
        for share in [1.5, -0.1, f64::NAN] {
            assert!(tune(&TuningProblem {
                point_read_miss_share: share,
                ..base
            })
            .is_err());
        }
    }

    /// A range lookup's processor time is a run sought's price times the runs it seeks, when
    /// that price is measured; a run probed's otherwise. Point lookups keep a run probed's.
    #[test]
    fn a_run_sought_is_priced_apart_from_a_run_probed() {
        let scans = Workload {
            point_lookups: 0.0,
            zero_result_fraction: 0.0,
            range_lookups: 1.0,
            selectivity: 1e-5,
            updates: 0.0,
            long_scans: None,
            key_bytes: None,
        };
        let probed_only = CpuCosts {
            seconds_per_run_probed: 1e-7,
            ..CpuCosts::default()
        };
        let sought = CpuCosts {
            seconds_per_run_sought: 5e-6,
            ..probed_only
        };
        let with = |workload: Workload, cpu: CpuCosts| {
            let base = problem(workload, 10.0);
            let p = TuningProblem {
                device: Device { cpu, ..base.device },
                ..base
            };
            evaluate(&p, ModelPolicy::TIERING, 4.0, 8.0 * 8.0 * 1048576.0)
                .expect("ok")
                .predicted
        };
        let (before, after) = (with(scans, probed_only), with(scans, sought));
        let runs = before.cpu_seconds_per_operation / 1e-7;
        assert!(runs > 2.0, "{runs}");
        assert!(
            (after.cpu_seconds_per_operation - runs * 5e-6).abs() < 1e-12,
            "{after:?}"
        );
        assert_eq!(after.range_io, before.range_io);
        assert!(after.throughput_ops < before.throughput_ops);
        // Point lookups do not seek.
        let points = with(EMPTY_LOOKUPS, probed_only);
        assert_eq!(with(EMPTY_LOOKUPS, sought), points);
        // A price below 0 is refused.
        let base = problem(scans, 10.0);
        assert!(tune(&TuningProblem {
            device: Device {
                cpu: CpuCosts {
                    seconds_per_run_sought: -1.0,
                    ..probed_only
                },
                ..base.device
            },
            ..base
        })
        .is_err());
    }

    /// Recipe 38's `seekrandom` as auto-tune priced it (docs/BENCHMARKS.md, "Auto-tune's seek
    /// price"): 1,046,391 entries of 116 bytes, 2 MiB write buffers, leveling at `T = 10`, scans
    /// of 11 entries alone, level 0's 1.5 waiting runs and a 5,761,600-byte block cache. Without
    /// the cache a scan costs Monkey's `Q = s N / B + L` plus level 0's runs, 3.81 page reads;
    /// the engine read 1.77 data blocks per seek from the device, the cache serving 1.55 of the
    /// 3.33 it requested. Through the cache the small runs every seek lands in stay cached.
    #[test]
    fn a_range_lookup_is_priced_through_the_block_cache() {
        let entries = 1_046_391.0;
        let seeks = Workload {
            point_lookups: 0.0,
            zero_result_fraction: 0.0,
            range_lookups: 1.0,
            selectivity: 11.0 / entries,
            updates: 0.0,
            long_scans: None,
            key_bytes: None,
        };
        let buffer = (2u64 << 20) as f64 * 8.0;
        let uncached = TuningProblem {
            entries,
            entry_bytes: 116.0,
            memory_bits: buffer + 10.0 * entries,
            fixed_buffer_bits: Some(buffer),
            level0_runs: 1.5,
            ..problem(seeks, 10.0)
        };
        let cached = TuningProblem {
            block_cache_bytes: 5_761_600.0,
            ..uncached
        };
        let b = 4096.0 / 116.0;
        let monkey = evaluate(&uncached, ModelPolicy::LEVELING, 10.0, buffer).expect("ok");
        assert_eq!(monkey.levels, 2);
        // Without a cache, Monkey's Q is unchanged.
        let q = 11.0 / b + 2.0 + 1.5;
        assert!((monkey.predicted.range_io - q).abs() < 1e-9, "{monkey:?}");
        let design = evaluate(&cached, ModelPolicy::LEVELING, 10.0, buffer).expect("ok");
        let reads = design.predicted.range_io;
        // Level 0's 1.5 runs (3.1 MB) are cached, and part of level 1 (11 MB): about 2.1 reads
        // where the engine read 1.77 (with 1 run on level 0) and the per-file model on its tree
        // predicted 1.80 (`model::seek`).
        assert!(reads > 1.9 && reads < 2.3, "{reads}");
        assert!(
            design.predicted.throughput_ops > monkey.predicted.throughput_ops * 1.6,
            "{design:?}"
        );
        // Every page the scans request fits in a large cache: nothing is read.
        let everything = TuningProblem {
            block_cache_bytes: 1e12,
            ..uncached
        };
        let held = evaluate(&everything, ModelPolicy::LEVELING, 10.0, buffer).expect("ok");
        assert!(held.predicted.range_io < 1e-6, "{held:?}");
        // Point lookups are priced as before.
        assert_eq!(
            design.predicted.zero_result_lookup_io,
            monkey.predicted.zero_result_lookup_io
        );
        // More runs, more of them cached: tiering's small runs are cheaper per run sought.
        let tiering = |p: &TuningProblem| {
            evaluate(p, ModelPolicy::TIERING, 10.0, buffer)
                .expect("ok")
                .predicted
                .range_io
        };
        assert!(tiering(&cached) < tiering(&uncached) - 1.5);
        assert!(tune(&TuningProblem {
            block_cache_bytes: f64::NAN,
            ..cached
        })
        .is_err());
    }

    /// The tuner proposes only trees the engine builds as modelled: no leveling, tiering or lazy
    /// leveling design deeper than the policies' default last level.
    #[test]
    fn no_design_is_deeper_than_the_engine_builds() {
        // Small pages and a large tree: Monkey's loop reaches far more than six levels.
        for tuning in balanced_and_write_heavy() {
            for design in &tuning.candidates {
                if design.policy.kind() != CompactionKind::Garnering {
                    assert!(
                        design.levels <= crate::compaction::DEFAULT_LAST_LEVEL,
                        "{design:?}"
                    );
                }
            }
        }
        let deepest = evaluate(
            &problem(BALANCED, 10.0),
            ModelPolicy::LEVELING,
            2.0,
            8.0 * 4096.0,
        )
        .expect("ok");
        assert!(
            deepest.levels > crate::compaction::DEFAULT_LAST_LEVEL,
            "the loop reaches it"
        );
    }

    /// Every registered merge policy is a candidate, with Monkey's filters and with uniform
    /// ones, and `best_of` finds each.
    #[test]
    fn every_registered_policy_is_a_candidate() {
        let scans = Workload {
            point_lookups: 0.3,
            range_lookups: 0.3,
            selectivity: 1e-6,
            updates: 0.4,
            ..BALANCED
        };
        for workload in [BALANCED, scans] {
            let tuning = tune(&problem(workload, 10.0)).expect("tune");
            let registered: Vec<CompactionKind> = CompactionKind::all()
                .iter()
                .copied()
                .filter(|&kind| ModelPolicy::covers(kind))
                .collect();
            assert_eq!(registered.len(), 7);
            for kind in registered {
                for filters in [FilterAllocatorKind::Monkey, FilterAllocatorKind::Uniform] {
                    let best = tuning.best_of(kind, filters).expect("a candidate");
                    assert_eq!(best.policy.kind(), kind);
                    assert!(tuning
                        .candidates
                        .iter()
                        .filter(|d| d.policy.kind() == kind && d.filters == filters)
                        .all(|d| d.predicted.throughput_ops <= best.predicted.throughput_ops));
                }
            }
            // EcoTune and Moose at their own T, with their own depths.
            let ecotune = tuning
                .best_of(CompactionKind::Ecotune, FilterAllocatorKind::Monkey)
                .expect("listed");
            assert_eq!((ecotune.size_ratio, ecotune.levels), (4.0, 2));
            let moose = tuning
                .best_of(CompactionKind::Moose, FilterAllocatorKind::Monkey)
                .expect("listed");
            assert_eq!((moose.size_ratio, moose.levels), (7.0, 4));
        }
    }

    /// EcoTune's and Moose's figures come from their own trees: range lookups seek every run of
    /// the tree (EcoTune's top level too), updates pay the tree's merges, and EcoTune's
    /// top-level index comes out of the filters' memory.
    #[test]
    fn ecotune_and_moose_are_costed_on_their_own_trees() {
        let w = Workload {
            point_lookups: 0.3,
            range_lookups: 0.3,
            selectivity: 1e-6,
            updates: 0.4,
            ..BALANCED
        };
        let p = problem(w, 10.0);
        let buffer = 8.0 * 8.0 * 1048576.0;
        let buffer_entries = buffer / (128.0 * 8.0);
        let b = 4096.0 / 128.0;
        let moose = evaluate(&p, ModelPolicy::MOOSE, 7.0, buffer).expect("ok");
        let tree =
            super::super::moose::tree(&Moose::ecotune_paper(), 1e8, buffer_entries, buffer_entries)
                .expect("tree");
        assert!((moose.predicted.update_io - tree.merges_per_update * 2.0 / b).abs() < 1e-12);
        assert!((moose.predicted.range_io - (100.0 / b + tree.runs.runs())).abs() < 1e-9);
        assert_eq!(moose.filter_bits, p.memory_bits - buffer);
        let ecotune = evaluate(&p, ModelPolicy::ECOTUNE, 4.0, buffer).expect("ok");
        let index = top_index_bits(&p, ModelPolicy::ECOTUNE, buffer);
        // S = N / 100 = 1e6 entries (whole flushes: 15 of 65,536), each with a 17-byte slot in
        // the hashed half and its 16 bytes (the default key size) and a 4-byte offset in the
        // ordered half.
        let unit = 15.0 * buffer_entries;
        assert_eq!(p.key_bytes(), DEFAULT_KEY_BYTES);
        assert!((index - unit * (17.0 + 16.0 + 4.0) * 8.0).abs() < 1e-6);
        assert!((ecotune.filter_bits - (p.memory_bits - buffer - index)).abs() < 1e-6);
        // Longer keys take more of the filters' memory.
        let long_keys = problem(
            Workload {
                key_bytes: Some(64.0),
                ..w
            },
            10.0,
        );
        assert_eq!(
            top_index_bits(&long_keys, ModelPolicy::ECOTUNE, buffer),
            unit * (17.0 + 64.0 + 4.0) * 8.0
        );
        let ecotune_long = evaluate(&long_keys, ModelPolicy::ECOTUNE, 4.0, buffer).expect("ok");
        assert!(ecotune_long.filter_bits < ecotune.filter_bits);
        // A key size is at most the entry's bytes.
        let huge_keys = problem(
            Workload {
                key_bytes: Some(1e6),
                ..w
            },
            10.0,
        );
        assert_eq!(huge_keys.key_bytes(), 128.0);
        // A range of 100 entries seeks the main and last levels' runs and the 7 waiting top runs
        // of 65,536 keys only where they hold one of its keys: about 0.44 of a run, not 7.
        assert!(ecotune.predicted.range_io > 100.0 / b + 1.0);
        let sought = ecotune::top_runs_sought(7.0, buffer_entries, 1e-6);
        assert!(
            (sought - 7.0 * (1.0 - (-0.065_536f64).exp())).abs() < 1e-4,
            "{sought}"
        );
        // The same tree (r and K given, the same T_c / T_w) under ranges of 100,000 entries,
        // which hold keys of every top run: all 7 are sought.
        let fixed = |selectivity: f64| {
            let scans = problem(
                Workload {
                    selectivity,
                    long_scans: Some(LongScans {
                        share_of_queries: 0.5,
                        entries: 100.0,
                    }),
                    ..w
                },
                10.0,
            );
            price(
                &scans,
                ModelPolicy::ECOTUNE,
                4.0,
                buffer,
                FilterAllocatorKind::Monkey,
                0.1,
                None,
            )
            .expect("ok")
            .predicted
            .range_io
        };
        let wide = ecotune::top_runs_sought(7.0, buffer_entries, 1e-3);
        assert!(wide > 6.99, "{wide}");
        let extra = (1e-3 * 1e8 - 100.0) / b + wide - sought;
        assert!(
            (fixed(1e-3) - fixed(1e-6) - extra).abs() < 1e-9,
            "{} {} {extra}",
            fixed(1e-3),
            fixed(1e-6)
        );
        // A memory budget the index does not fit in is refused, not overcommitted.
        let small = TuningProblem {
            memory_bits: buffer + index / 2.0,
            ..p
        };
        assert!(evaluate(&small, ModelPolicy::ECOTUNE, 4.0, buffer).is_err());
    }

    /// Where EcoTune's or Moose's model predicts more throughput than every other policy's,
    /// the tuner recommends it: EcoTune on a small tree whose queries are mostly long scans
    /// (its dynamic program keeps the main level to few runs), Moose on a write-heavy small tree
    /// of empty lookups whose probes cost processor time; neither once the reason is gone.
    #[test]
    fn the_tuner_picks_ecotune_and_moose_where_their_models_win() {
        // A million entries, level 0's waiting runs as the engine's defaults leave them.
        let small = |workload: Workload, bits: f64| TuningProblem {
            entries: 1e6,
            memory_bits: bits * 1e6,
            level0_runs: 1.5,
            ..problem(workload, bits)
        };
        let scans = Workload {
            point_lookups: 0.3,
            zero_result_fraction: 0.0,
            range_lookups: 0.6,
            selectivity: 1e-4,
            updates: 0.1,
            long_scans: None,
            key_bytes: None,
        };
        let tuning = tune(&small(scans, 10.0)).expect("tune");
        assert_eq!(
            tuning.recommended.policy,
            ModelPolicy::ECOTUNE,
            "{:?}",
            tuning.recommended
        );
        let r = &tuning.recommended;
        let again = evaluate_as_priced(&small(scans, 10.0), r).expect("ok");
        assert_eq!(&again, r);
        for &kind in CompactionKind::all()
            .iter()
            .filter(|&&k| ModelPolicy::covers(k))
        {
            let best = tuning
                .best_of(kind, FilterAllocatorKind::Monkey)
                .expect("listed");
            assert!(
                best.predicted.throughput_ops <= r.predicted.throughput_ops,
                "{kind}"
            );
        }
        // Where Monkey's splits give a buffer too large for the top-level index to fit beside
        // (16 bits an entry: the split's buffer, 64-byte keys), the buffer gives way and
        // EcoTune stays a candidate, its index within the budget.
        let roomy = TuningProblem {
            entries: 1e6,
            memory_bits: 16.0 * 1e6,
            level0_runs: 1.5,
            ..problem(
                Workload {
                    key_bytes: Some(64.0),
                    ..scans
                },
                16.0,
            )
        };
        let (leveling, tiering) = monkey_buffers(&roomy, 4.0).expect("splits");
        let index_fits = |buffer: f64| {
            buffer + top_index_bits(&roomy, ModelPolicy::ECOTUNE, buffer) <= roomy.memory_bits
        };
        assert!(!index_fits(leveling) && !index_fits(tiering));
        let (largest, half) =
            fitting_buffers(&roomy, ModelPolicy::ECOTUNE, (leveling, tiering)).expect("fits");
        assert!(index_fits(largest) && index_fits(half) && half < largest);
        assert!(!index_fits(largest * 1.01));
        let ecotune = tune(&roomy)
            .expect("tune")
            .best_of(CompactionKind::Ecotune, FilterAllocatorKind::Monkey)
            .copied()
            .expect("EcoTune listed");
        assert!(ecotune.filter_bits >= 0.0);
        // A fixed buffer does not give way.
        let fixed = TuningProblem {
            fixed_buffer_bits: Some(leveling),
            ..roomy
        };
        assert_eq!(
            fitting_buffers(&fixed, ModelPolicy::ECOTUNE, (leveling, leveling)),
            None
        );
        // Without long scans EcoTune's main level buys nothing.
        let points = Workload {
            point_lookups: 0.9,
            range_lookups: 0.0,
            ..scans
        };
        let tuning = tune(&small(points, 10.0)).expect("tune");
        assert_ne!(tuning.recommended.policy, ModelPolicy::ECOTUNE);

        let empty_writes = Workload {
            point_lookups: 0.5,
            zero_result_fraction: 1.0,
            range_lookups: 0.0,
            selectivity: 0.0,
            updates: 0.5,
            long_scans: None,
            key_bytes: None,
        };
        let with_cpu = |workload: Workload| TuningProblem {
            device: Device {
                seconds_per_read: 2e-5,
                merge_read_cost_ratio: 0.1,
                cpu: CpuCosts {
                    seconds_per_lookup: 2e-6,
                    seconds_per_run_probed: 5e-7,
                    seconds_per_run_sought: 0.0,
                    seconds_per_block_searched: 0.0,
                    seconds_per_update: 3e-6,
                    seconds_per_entry_merged: 3e-7,
                    merge_threads: 0.0,
                    seconds_per_flush: 2e-3,
                    foreground_share_of_merges: 0.0,
                },
                ..small(workload, 5.0).device
            },
            ..small(workload, 5.0)
        };
        // Moose's own model of its merges (its replay finds more, and ranks a Garnering design
        // first here: `tune` re-prices the best candidates' writes).
        let tuning = tune_with_replays(&with_cpu(empty_writes), 0).expect("tune");
        assert_eq!(
            tuning.recommended.policy,
            ModelPolicy::MOOSE,
            "{:?}",
            tuning.recommended
        );
        let moose = &tuning.recommended;
        let runner_up = tuning
            .candidates
            .iter()
            .find(|d| d.policy != ModelPolicy::MOOSE)
            .expect("others");
        assert!(moose.predicted.throughput_ops > runner_up.predicted.throughput_ops);
        // Found keys on a read-mostly mix: not Moose's ten runs.
        let reads = Workload {
            point_lookups: 0.95,
            zero_result_fraction: 0.0,
            updates: 0.05,
            ..empty_writes
        };
        assert_ne!(
            tune_with_replays(&with_cpu(reads), 0)
                .expect("tune")
                .recommended
                .policy,
            ModelPolicy::MOOSE
        );
    }

    /// The engine's workload statistics convert to the tuner's workload: the lifetime totals
    /// and the live window alike, EcoTune's long scans included.
    #[test]
    fn the_engines_workload_converts() {
        let totals = WorkloadTotals {
            point_lookups: 6_000,
            point_lookups_found: 1_500,
            seeks: 2_000,
            scan_entries: 100_000,
            long_scans: 1_000,
            long_scan_entries: 90_000,
            writes: 2_000,
        };
        let w = Workload::from_totals(&totals, 1_000_000).expect("a mix");
        assert!((w.point_lookups - 0.6).abs() < 1e-12);
        assert!((w.range_lookups - 0.2).abs() < 1e-12);
        assert!((w.updates - 0.2).abs() < 1e-12);
        assert!((w.zero_result_fraction - 0.75).abs() < 1e-12);
        assert!((w.selectivity - 50.0 / 1e6).abs() < 1e-15);
        let scans = w.long_scans(1e6);
        assert!((scans.share_of_queries - 0.125).abs() < 1e-12);
        assert_eq!(scans.entries, 90.0);
        let mix = WorkloadMix { counts: totals };
        assert_eq!(Workload::from_mix(&mix, 1_000_000), Some(w));
        assert_eq!(Workload::from_totals(&WorkloadTotals::default(), 10), None);
        // Derived when not measured: every range lookup long at s * N >= 16, none below.
        let derived = Workload {
            long_scans: None,
            key_bytes: None,
            ..w
        };
        assert_eq!(derived.long_scans(1e6).share_of_queries, 0.25);
        assert_eq!(derived.long_scans(1e5).share_of_queries, 0.0);
        // Out-of-range long scans are refused.
        let bad = Workload {
            long_scans: Some(LongScans {
                share_of_queries: 1.5,
                entries: 10.0,
            }),
            ..w
        };
        assert!(tune(&problem(bad, 10.0)).is_err());
    }

    /// Mnemosyne's type-I mix (half empty lookups, half updates) on a million 128-byte entries
    /// with 16 bits per entry, on the device and processor costs a probe measured (the recorded
    /// inputs of `model::ties`' tests).
    fn recorded_write_heavy() -> TuningProblem {
        let entries = 1e6;
        TuningProblem {
            entries,
            entry_bytes: 128.0,
            memory_bits: 16.0 * entries,
            workload: Workload {
                point_lookups: 0.5,
                zero_result_fraction: 1.0,
                range_lookups: 0.0,
                selectivity: 0.0,
                updates: 0.5,
                long_scans: None,
                key_bytes: None,
            },
            device: Device {
                seconds_per_read: 73.8e-6,
                write_read_cost_ratio: 0.728,
                merge_read_cost_ratio: 0.158,
                page_bytes: 4096.0,
                cpu: CpuCosts {
                    seconds_per_lookup: 0.020e-6,
                    seconds_per_run_probed: 0.593e-6,
                    seconds_per_run_sought: 0.0,
                    seconds_per_block_searched: 0.0,
                    seconds_per_update: 6.802e-6,
                    seconds_per_entry_merged: 0.0,
                    merge_threads: 0.0,
                    seconds_per_flush: 8700e-6,
                    foreground_share_of_merges: 0.0,
                },
            },
            fixed_buffer_bits: None,
            max_point_lookup_io: None,
            max_update_io: None,
            level0_runs: 1.5,
            block_cache_bytes: 0.0,
            point_read_miss_share: 1.0,
        }
    }

    /// An operation's foreground beside merges that share its device: the limits, the waiting
    /// reads' fixed point, and the properties `model::ties` relies on.
    #[test]
    fn reads_wait_behind_merges_on_the_shared_device() {
        assert_eq!(foreground_beside_merges(3.0, 0.0, 0.0), 3.0);
        assert!((foreground_beside_merges(3.0, 2.0, 0.0) - 5.0).abs() < 1e-12);
        // Without reads the device still cannot merge more than the time it has.
        assert!((foreground_beside_merges(3.0, 0.0, 5.0) - 5.0).abs() < 1e-12);
        assert!((foreground_beside_merges(6.0, 0.0, 5.0) - 6.0).abs() < 1e-12);
        for (cpu, reads, merges) in [
            (1.0, 10.0, 2.0),
            (3.0, 0.5, 0.5),
            (0.1, 20.0, 15.0),
            (2.0, 2.0, 2.0),
            (1e-7, 3e-5, 1e-6),
        ] {
            let s = foreground_beside_merges(cpu, reads, merges);
            // Each read takes 1 / (1 - u) of its time alone, u the device's share on merges.
            let waited = cpu + reads / (1.0 - merges / s);
            assert!((s - waited).abs() <= 1e-9 * s, "{s} {waited}");
            // Between merges wholly beside the operations and wholly charged to them.
            assert!(s >= (cpu + reads).max(merges) && s <= cpu + reads + merges);
            let k = 3.7;
            let scaled = foreground_beside_merges(k * cpu, k * reads, k * merges);
            assert!((scaled - k * s).abs() <= 1e-9 * k * s);
            for (dc, dr, dm) in [(0.1, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.0, 0.1)] {
                let moved = foreground_beside_merges(cpu + dc * s, reads + dr * s, merges + dm * s);
                assert!(moved >= s);
            }
        }
        // Lookups that read from the device pay nearly all the merges' device time, lookups
        // served from memory nearly none.
        let read_bound = foreground_beside_merges(0.1, 20.0, 1.0) - 20.1;
        assert!(read_bound > 0.99 && read_bound <= 1.0, "{read_bound}");
        let processor_bound = foreground_beside_merges(20.0, 0.1, 1.0) - 20.1;
        assert!(processor_bound < 0.01, "{processor_bound}");
        assert_eq!(foreground_beside_merges(-1.0, -1.0, -1.0), 0.0);
    }

    /// Merges beside a writer that shares its processor with them: on updates alone, with merges
    /// that keep up on their thread, every design writes at the foreground's speed unless the
    /// writer pays its processor's part of the merges' processor time; then the design that
    /// merges less writes faster, by that part exactly. On the 2-core machine the shifting
    /// preset's fills took the writer's processor time plus half the background's to within 13%
    /// for six designs, the writer's alone 0.55-0.84 of it (docs/BENCHMARKS.md, "Write time
    /// against processor time").
    #[test]
    fn a_writer_that_shares_its_processor_pays_for_the_merges_on_it() {
        assert_eq!(foreground_share_of_merges(2, 2), 0.5);
        assert_eq!(foreground_share_of_merges(2, 4), 0.0);
        assert_eq!(foreground_share_of_merges(2, 3), 1.0 / 3.0);
        assert_eq!(foreground_share_of_merges(1, 1), 1.0);
        assert_eq!(foreground_share_of_merges(4, 0), 1.0);
        let problem = |share: f64| TuningProblem {
            workload: Workload {
                point_lookups: 0.0,
                updates: 1.0,
                ..recorded_write_heavy().workload
            },
            device: Device {
                write_read_cost_ratio: 0.0,
                merge_read_cost_ratio: 0.0,
                cpu: CpuCosts {
                    seconds_per_update: 2.5e-6,
                    seconds_per_entry_merged: 0.1e-6,
                    merge_threads: 1.0,
                    seconds_per_flush: 0.0,
                    foreground_share_of_merges: share,
                    ..CpuCosts::default()
                },
                ..recorded_write_heavy().device
            },
            ..recorded_write_heavy()
        };
        // A 1 MiB buffer out of the 16 bits per entry.
        let buffer = 8.0 * (1 << 20) as f64;
        let priced = |share: f64, policy: ModelPolicy| {
            evaluate(&problem(share), policy, 10.0, buffer)
                .expect("priced")
                .predicted
        };
        let (leveling, tiering) = (ModelPolicy::LEVELING, ModelPolicy::TIERING);
        // Alone on its processor: both at the foreground's 2.5 us (their merges keep up).
        for policy in [leveling, tiering] {
            let alone = priced(0.0, policy).throughput_ops;
            assert!((alone - 1.0 / 2.5e-6).abs() < 1.0, "{alone}");
        }
        // Sharing it with the merges on two processors: each pays half its merges' processor
        // time, the design's processor time beyond the writes' own.
        let mut merging = Vec::new();
        for policy in [leveling, tiering] {
            let shared = priced(0.5, policy);
            let merges_time = shared.cpu_seconds_per_operation - 2.5e-6;
            assert!(merges_time > 0.0 && merges_time < 2.5e-6, "{merges_time}");
            let expected = 1.0 / (2.5e-6 + 0.5 * merges_time);
            assert!(
                (shared.throughput_ops - expected).abs() / expected < 1e-9,
                "{} against {expected}",
                shared.throughput_ops
            );
            merging.push((merges_time, shared.throughput_ops));
        }
        // Leveling merges more, so it writes slower.
        assert!(
            merging[0].0 > merging[1].0 && merging[0].1 < merging[1].1,
            "{merging:?}"
        );
    }

    #[test]
    fn merges_get_the_processors_the_foreground_leaves() {
        assert_eq!(merge_threads_beside(2, 2), 1.0);
        assert_eq!(merge_threads_beside(2, 8), 2.0);
        assert_eq!(merge_threads_beside(4, 3), 2.0);
        assert_eq!(merge_threads_beside(2, 1), 1.0);
        assert_eq!(merge_threads_beside(0, 8), 1.0);
    }

    /// Found running `strata tune` with merges beside the operations on the costs it measured
    /// for a mix of existing-key lookups and updates (Mnemosyne's type II, direct reads): priced
    /// as if the merges' pages took nothing from the lookups' reads, a size ratio of 31.5 with a
    /// buffer of 0.03 MiB merging 33 times per update came first. Priced with the reads waiting
    /// behind the merges, the best design keeps a buffer of tenths of a MiB and a small ratio.
    #[test]
    fn merges_beside_lookups_that_read_the_device_are_not_free() {
        let problem = TuningProblem {
            workload: Workload {
                point_lookups: 0.756,
                zero_result_fraction: 0.0,
                updates: 0.244,
                ..recorded_write_heavy().workload
            },
            device: Device {
                seconds_per_read: 28.0e-6,
                write_read_cost_ratio: 3.19 / 28.0,
                merge_read_cost_ratio: 5.64 / 28.0,
                page_bytes: 4096.0,
                cpu: CpuCosts {
                    seconds_per_lookup: 0.225e-6,
                    seconds_per_run_probed: 0.310e-6,
                    seconds_per_run_sought: 2.661e-6,
                    seconds_per_block_searched: 1.250e-6,
                    seconds_per_update: 1.970e-6,
                    seconds_per_entry_merged: 0.649e-6,
                    merge_threads: 1.0,
                    seconds_per_flush: 929e-6,
                    foreground_share_of_merges: 0.0,
                },
            },
            // 1,000,000 entries of 128 bytes, 16 bits of memory per entry.
            ..recorded_write_heavy()
        };
        let best = tune_with_replays(&problem, 0).expect("tuned").recommended;
        let buffer_mib = best.buffer_bits / 8.0 / (1 << 20) as f64;
        assert!(
            best.size_ratio < 10.0 && buffer_mib > 0.1,
            "T = {}, buffer {buffer_mib} MiB ({:?})",
            best.size_ratio,
            best.policy
        );
    }

    /// The closed form ranks leveling at a small size ratio first; its replay finds it merging
    /// more than the closed form says, and the replay's best is another design, which the
    /// tuner recommends: priced by its replay, the closed form's favourite is slower.
    #[test]
    fn the_replay_prices_the_best_candidates_writes_and_its_order_wins() {
        let problem = recorded_write_heavy();
        let tuning = tune(&problem).expect("tune");
        // The best five are priced by their replays, and the list is sorted by what it says.
        for design in tuning.candidates.iter().take(REPLAYED_CANDIDATES) {
            let WritePricing::Replay {
                replayed,
                closed_form_merges,
            } = design.writes
            else {
                panic!("not replayed: {design:?}");
            };
            assert!(replayed.merges_per_update > 0.0 && closed_form_merges > 0.0);
        }
        let ops: Vec<f64> = tuning
            .candidates
            .iter()
            .map(|d| d.predicted.throughput_ops)
            .collect();
        assert!(ops.windows(2).all(|w| w[0] >= w[1]), "sorted best first");
        assert_eq!(tuning.recommended, tuning.candidates[0]);
        // The closed form's order: every candidate evaluated without its replay.
        let closed_form_best = tuning
            .candidates
            .iter()
            .map(|d| {
                evaluate_with(&problem, d.policy, d.size_ratio, d.buffer_bits, d.filters)
                    .expect("evaluates")
            })
            .max_by(|a, b| {
                a.predicted
                    .throughput_ops
                    .total_cmp(&b.predicted.throughput_ops)
            })
            .expect("candidates");
        assert_eq!(closed_form_best.writes, WritePricing::ClosedForm);
        let recommended = tuning.recommended;
        assert!(
            (closed_form_best.policy, closed_form_best.size_ratio)
                != (recommended.policy, recommended.size_ratio),
            "the two prices should disagree here: {closed_form_best:?}"
        );
        assert!(
            closed_form_best.predicted.throughput_ops > recommended.predicted.throughput_ops,
            "the closed form flatters its favourite"
        );
        let repriced = evaluate_replayed(&problem, &closed_form_best).expect("replays");
        let merges = repriced.writes.replayed_merges().expect("replayed");
        let WritePricing::Replay {
            closed_form_merges, ..
        } = repriced.writes
        else {
            unreachable!("replayed")
        };
        assert!(
            merges > 1.1 * closed_form_merges,
            "{merges} {closed_form_merges}"
        );
        assert!(
            repriced.predicted.throughput_ops < recommended.predicted.throughput_ops,
            "by its replay the closed form's best ({:.0} ops/s) is behind the pick ({:.0})",
            repriced.predicted.throughput_ops,
            recommended.predicted.throughput_ops
        );
        // Re-evaluated as priced, a design gives the same figures (what a tie-break relies on).
        let again = evaluate_as_priced(&problem, &recommended).expect("evaluates");
        assert_eq!(again, recommended);
    }

    /// Without updates no merge enters the cost: nothing is replayed, the closed form's order
    /// stands.
    #[test]
    fn a_mix_without_updates_replays_nothing() {
        let reads = TuningProblem {
            workload: Workload {
                point_lookups: 1.0,
                updates: 0.0,
                ..recorded_write_heavy().workload
            },
            ..recorded_write_heavy()
        };
        let tuning = tune(&reads).expect("tune");
        assert!(tuning
            .candidates
            .iter()
            .all(|d| d.writes == WritePricing::ClosedForm));
        let recommended = tuning.recommended;
        assert_eq!(
            evaluate_replayed(&reads, &recommended).expect("evaluates"),
            recommended
        );
    }
}
