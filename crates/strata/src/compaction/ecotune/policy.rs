//! EcoTune as a [`CompactionPolicy`] (DESIGN.md §6): the three-level layout and the runtime picker that
//! follows the dynamic program's schedule.
//!
//! Layout on Strata's levels:
//! * **level 0 is the top level**: flushed runs, never merged among themselves, up to `S` bytes.
//!   The engine keeps a full in-memory index of its keys ([`CompactionPolicy::indexes_top_level`])
//!   so a point lookup probes at most one of its runs;
//! * **level 1 is the main level**: a sequence of runs. A *TM compaction* merges the whole top
//!   level into one new run there (a unit run); an *ML compaction* merges some of its runs into
//!   one, in place (the output keeps the newest input's run id, so the runs around it keep their
//!   recency order);
//! * **the last level** (level 2, or the deepest non-empty level of a tree that another policy
//!   built) holds one run. A *global compaction* merges the closed round's main-level runs and
//!   the last level into it, while the next round's unit runs keep arriving.
//!
//! A **round** is `R` unit runs. The TM compaction that brings a round's first unit starts it:
//! it computes `S = max(write buffer, M_tree / max(100, K))`, the unit a TM job takes (`S` in
//! whole flushes, by the measured flush size: the top level triggers on that many runs, or on `S`
//! bytes), `R` (the projected last level over `Ccap` units), `T_w = unit / flush rate` and `T_c = unit /
//! compaction rate` from the engine's [`MeasuredRates`](super::super::MeasuredRates), takes `f`
//! from the filters on disk, and logs
//! all of it with the job (owner [`ROUND_STATE_OWNER`]). The DP's schedule is a pure function of
//! that record, so a restart re-solves the same schedule; the policy only caches it. ML
//! compactions log how many of the round's scheduled merges are done (owner
//! [`MERGES_STATE_OWNER`]); the two records have one writer each (TM jobs never overlap one
//! another; ML merges run one at a time), so concurrent jobs never overwrite each other's state.
//!
//! The picker, in order: a TM compaction when the top level holds `S` bytes and none is running;
//! the closed round's global compaction once no merge holds its runs; the schedule's next ML merge
//! once its arrival has come and no other merge (ML or global) runs. A merge that runs late
//! simply starts late (the runs it names are counted oldest first, so later arrivals do not shift
//! them); merges still pending when a round closes are dropped, and the global compaction takes
//! their runs. With two compaction workers one is always free for TM compactions, as in the paper.

use std::sync::Arc;

use parking_lot::Mutex;

use super::dp::{Dp, Merge, RoundParameters};
use crate::coding::{put_fixed64, put_varint64, Decoder};
use crate::compaction::{
    merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy, JobAction,
    OutputRun, PolicyState, RunInput, RunningCompactions, WritePressure,
};
use crate::compaction::{CompactionKind, CompactionSettings};
use crate::error::{Error, Result};
use crate::version::{Run, Version};

/// Manifest owner of the round in progress.
pub const ROUND_STATE_OWNER: &str = "ecotune.round";
/// Manifest owner of the count of the round's ML merges done.
pub const MERGES_STATE_OWNER: &str = "ecotune.merges";
const STATE_FORMAT: u8 = 1;

/// The main level (DESIGN.md §6): level 1.
pub const MAIN_LEVEL: usize = 1;
/// The last level of a tree EcoTune built from scratch.
pub const LAST_LEVEL: usize = 2;

/// `T_c / T_w` before the engine has measured either rate (the paper's setting, DESIGN.md §6).
pub const DEFAULT_TC_OVER_TW: f64 = 0.1;

/// `r` before the engine has measured it, on a tree with no earlier round (the workload of the
/// paper's main experiments, DESIGN.md §6).
pub const DEFAULT_LONG_SCAN_RATIO: f64 = 0.3;

/// `K` before the engine has seen a long scan (the paper's 100).
pub const DEFAULT_SCAN_LENGTH: u32 = 100;

/// What EcoTune is built from (DESIGN.md §6; the paper's values are the defaults).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EcoTuneSettings {
    /// `Ccap`: last-level size over main-level capacity.
    pub ccap: u32,
    /// `K`: entries of a long range scan; the top level holds `M_tree / max(100, K)` bytes.
    /// `None` (the default): measured by the engine over its live window (DESIGN.md §6, "The
    /// workload the engine measures"), 100 until a long scan is seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_length: Option<u32>,
    /// `r`: the share of queries that are long range scans. `None` (the default): measured by
    /// the engine over its live window; until it has seen enough queries, the previous round's
    /// `r`, or [`DEFAULT_LONG_SCAN_RATIO`] on a new tree. A value fixes `r`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_scan_ratio: Option<f64>,
    /// `beta_q`: query speed while an ML merge runs, as a share of the speed without (the paper's
    /// even split of threads between queries and merges gives 0.5).
    pub beta_q: f64,
    /// The largest `R`: a round's DP has `O(R^4)` states (R = 32 solves in well under a second).
    pub max_units: u32,
    /// Keep the full index of the top level's keys (DESIGN.md §6); off only to measure what it saves.
    pub top_level_index: bool,
}

impl Default for EcoTuneSettings {
    fn default() -> Self {
        EcoTuneSettings {
            ccap: 3,
            scan_length: None,
            long_scan_ratio: None,
            beta_q: 0.5,
            max_units: 32,
            top_level_index: true,
        }
    }
}

impl EcoTuneSettings {
    /// `Err` naming the first setting out of range.
    pub fn validate(&self) -> Result<()> {
        let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        if self.ccap == 0 || self.ccap > 100 {
            return Err(Error::InvalidArgument(format!(
                "ecotune ccap must be between 1 and 100, got {}",
                self.ccap
            )));
        }
        if self.scan_length == Some(0) {
            return Err(Error::InvalidArgument(
                "ecotune scan_length must be at least 1".into(),
            ));
        }
        if !self.long_scan_ratio.is_none_or(unit) || !unit(self.beta_q) {
            return Err(Error::InvalidArgument(format!(
                "ecotune long_scan_ratio and beta_q must lie in [0, 1], got {:?} and {}",
                self.long_scan_ratio, self.beta_q
            )));
        }
        if !(2..=48).contains(&self.max_units) {
            return Err(Error::InvalidArgument(format!(
                "ecotune max_units must be between 2 and 48, got {}",
                self.max_units
            )));
        }
        Ok(())
    }
}

/// The round in progress, as the TM compaction that started it (or brought its latest unit)
/// logged it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Rounds started since the tree was created (1 = the first).
    pub number: u64,
    /// `S`: the top level's capacity in bytes.
    pub unit_bytes: u64,
    /// Flushes a unit run is made of: `S` over the measured flush size, rounded to the nearest
    /// whole number (at least 1). A TM compaction starts once the top level holds this many runs
    /// (or `S` bytes).
    pub unit_flushes: u32,
    /// Main-level runs with ids up to this one belong to earlier rounds (the global compaction's
    /// inputs); 0 if none did.
    pub boundary_run: u64,
    /// Unit runs of this round brought so far (TM compactions picked).
    pub arrivals: u32,
    /// The DP's inputs (`units` is `R`).
    pub parameters: RoundParameters,
}

impl Round {
    /// True once every unit run of the round has been brought: the round's runs are closed and
    /// wait for its global compaction.
    pub fn is_closed(&self) -> bool {
        self.arrivals >= self.parameters.units
    }

    /// The record's manifest form.
    pub fn encode(&self) -> PolicyState {
        let mut bytes = vec![STATE_FORMAT];
        put_varint64(&mut bytes, self.number);
        put_varint64(&mut bytes, self.unit_bytes);
        put_varint64(&mut bytes, u64::from(self.unit_flushes));
        put_varint64(&mut bytes, self.boundary_run);
        put_varint64(&mut bytes, u64::from(self.arrivals));
        put_varint64(&mut bytes, u64::from(self.parameters.units));
        put_varint64(&mut bytes, u64::from(self.parameters.ccap));
        let p = &self.parameters;
        for value in [
            p.long_scan_ratio,
            p.false_positive_rate,
            p.beta_q,
            p.t_w,
            p.t_c,
        ] {
            put_fixed64(&mut bytes, value.to_bits());
        }
        PolicyState {
            owner: ROUND_STATE_OWNER.into(),
            bytes,
        }
    }

    /// Decodes [`Round::encode`]'s bytes; `None` for anything malformed or out of range (the
    /// policy then starts a new round at the next TM compaction, as on a fresh tree).
    pub fn decode(bytes: &[u8]) -> Option<Round> {
        let mut d = Decoder::new(bytes);
        if d.u8()? != STATE_FORMAT {
            return None;
        }
        let number = d.varint64()?;
        let unit_bytes = d.varint64()?;
        let unit_flushes = u32::try_from(d.varint64()?).ok()?;
        let boundary_run = d.varint64()?;
        let arrivals = u32::try_from(d.varint64()?).ok()?;
        let units = u32::try_from(d.varint64()?).ok()?;
        let ccap = u32::try_from(d.varint64()?).ok()?;
        let mut next = || d.fixed64().map(f64::from_bits);
        let parameters = RoundParameters {
            long_scan_ratio: next()?,
            false_positive_rate: next()?,
            beta_q: next()?,
            t_w: next()?,
            t_c: next()?,
            units,
            ccap,
        };
        if !d.is_empty()
            || parameters.validate().is_some()
            || unit_bytes == 0
            || unit_flushes == 0
            || units > 64
        {
            return None;
        }
        Some(Round {
            number,
            unit_bytes,
            unit_flushes,
            boundary_run,
            arrivals,
            parameters,
        })
    }
}

/// `(round, merges done)` in the manifest form of [`MERGES_STATE_OWNER`].
pub fn encode_merges_done(round: u64, done: u32) -> PolicyState {
    let mut bytes = vec![STATE_FORMAT];
    put_varint64(&mut bytes, round);
    put_varint64(&mut bytes, u64::from(done));
    PolicyState {
        owner: MERGES_STATE_OWNER.into(),
        bytes,
    }
}

/// Decodes [`encode_merges_done`]'s bytes.
pub fn decode_merges_done(bytes: &[u8]) -> Option<(u64, u32)> {
    let mut d = Decoder::new(bytes);
    if d.u8()? != STATE_FORMAT {
        return None;
    }
    let round = d.varint64()?;
    let done = u32::try_from(d.varint64()?).ok()?;
    d.is_empty().then_some((round, done))
}

/// The round stored in `tree`'s manifest state, if any and decodable.
pub fn stored_round(tree: &Version) -> Option<Round> {
    tree.policy_state(ROUND_STATE_OWNER).and_then(Round::decode)
}

/// ML merges of `round` done, by `tree`'s manifest state (0 if the record is another round's).
fn merges_done(tree: &Version, round: u64) -> u32 {
    tree.policy_state(MERGES_STATE_OWNER)
        .and_then(decode_merges_done)
        .filter(|&(of, _)| of == round)
        .map_or(0, |(_, done)| done)
}

/// The EcoTune merge policy (module docs).
#[derive(Debug)]
pub struct EcoTune {
    settings: EcoTuneSettings,
    /// The schedule of the last round solved, by its parameters: a cache of a pure function of
    /// the manifest's round record, never state of its own.
    schedule: Mutex<Option<(RoundParameters, Arc<Vec<Merge>>)>>,
}

impl Clone for EcoTune {
    fn clone(&self) -> Self {
        EcoTune::new(self.settings).unwrap_or_else(|_| EcoTune {
            settings: self.settings,
            schedule: Mutex::new(None),
        })
    }
}

impl EcoTune {
    /// EcoTune with `settings` (checked by [`EcoTuneSettings::validate`]).
    pub fn new(settings: EcoTuneSettings) -> Result<EcoTune> {
        settings.validate()?;
        Ok(EcoTune {
            settings,
            schedule: Mutex::new(None),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &EcoTuneSettings {
        &self.settings
    }

    /// `S` for `tree`: `M_tree / max(100, K)`, at least one write buffer (a unit run is never
    /// smaller than a flush).
    pub fn unit_bytes(&self, tree: &Version, context: &CompactionContext) -> u64 {
        let divisor = u64::from(self.scan_length(context).max(100));
        (tree.bytes() / divisor)
            .max(context.write_buffer_bytes)
            .max(1)
    }

    /// `K`: the setting, else the average long scan of the engine's window, else
    /// [`DEFAULT_SCAN_LENGTH`].
    pub fn scan_length(&self, context: &CompactionContext) -> u32 {
        self.settings.scan_length.unwrap_or_else(|| {
            context
                .workload
                .and_then(|mix| mix.long_scan_length())
                .map_or(DEFAULT_SCAN_LENGTH, |k| k.round().clamp(1.0, 1e9) as u32)
        })
    }

    /// `r` for a round starting now, and whether the engine measured it: the setting, else the
    /// share of the window's queries that pay for every main-level run, else (too few queries in
    /// the window) the previous round's `r`, else [`DEFAULT_LONG_SCAN_RATIO`]. The queries that
    /// pay per run are the long scans where runs have range filters (the paper's `r`: a closed
    /// short seek then reads about one run), and every range lookup, short seeks too, where
    /// they have none (a short seek then opens every run). DESIGN.md §6, "`r` without range
    /// filters".
    pub fn long_scan_ratio(
        &self,
        previous: Option<&Round>,
        context: &CompactionContext,
    ) -> (f64, bool) {
        if let Some(r) = self.settings.long_scan_ratio {
            return (r, false);
        }
        let measured = context.workload.and_then(|mix| {
            if context.range_filters {
                mix.long_scan_ratio()
            } else {
                mix.range_lookup_ratio()
            }
        });
        match measured {
            Some(r) if r.is_finite() => (r.clamp(0.0, 1.0), true),
            _ => (
                previous.map_or(DEFAULT_LONG_SCAN_RATIO, |p| p.parameters.long_scan_ratio),
                false,
            ),
        }
    }

    /// The flushes a unit run is made of for a top level of `unit_bytes`, and the bytes they
    /// hold: `S` over the measured flush size (the write buffer before one is measured), to the
    /// nearest whole number, at least 1. Units of whole flushes keep the DP's unit what a TM job
    /// actually takes: with 1 MiB flushes and `S` = 1.2 MB a byte trigger alone would take two
    /// flushes each time, units of 2 MiB.
    pub fn unit_flushes(&self, unit_bytes: u64, context: &CompactionContext) -> (u32, f64) {
        let flush_bytes = context
            .rates
            .flush_bytes
            .unwrap_or(context.write_buffer_bytes as f64)
            .max(1.0);
        let flushes = (unit_bytes as f64 / flush_bytes).round().clamp(1.0, 1e6);
        (flushes as u32, flushes * flush_bytes)
    }

    /// `R` for a round of units of `unit_bytes` (what a TM job takes): the last level as it will
    /// be after the closing global compaction (every level below the top) over `Ccap` units,
    /// between 2 and `max_units`.
    pub fn units(&self, tree: &Version, unit_bytes: u64) -> u32 {
        let below_top: u64 = tree.levels().iter().skip(1).map(|l| l.bytes()).sum();
        let per_round = u64::from(self.settings.ccap) * unit_bytes.max(1);
        let units = (below_top + per_round / 2) / per_round;
        u32::try_from(units)
            .unwrap_or(u32::MAX)
            .clamp(2, self.settings.max_units)
    }

    /// The round a TM compaction picked now brings a unit to: `round` with one more arrival, or
    /// a new round if `round` is closed (or there is none yet).
    pub fn next_round(
        &self,
        round: Option<&Round>,
        tree: &Version,
        context: &CompactionContext,
    ) -> Round {
        if let Some(round) = round.filter(|r| !r.is_closed()) {
            return Round {
                arrivals: round.arrivals + 1,
                ..*round
            };
        }
        let unit_bytes = self.unit_bytes(tree, context);
        let (unit_flushes, taken) = self.unit_flushes(unit_bytes, context);
        let units = self.units(tree, taken as u64);
        let (t_w, t_c) = match (
            context.rates.flush_bytes_per_sec,
            context.rates.compaction_bytes_per_sec,
        ) {
            (Some(flush), Some(compaction)) if flush > 0.0 && compaction > 0.0 => {
                (taken / flush, taken / compaction)
            }
            _ => (1.0, DEFAULT_TC_OVER_TW),
        };
        Round {
            number: round.map_or(1, |r| r.number + 1),
            unit_bytes,
            unit_flushes,
            boundary_run: tree.levels()[MAIN_LEVEL]
                .runs()
                .iter()
                .map(Run::id)
                .max()
                .unwrap_or(0),
            arrivals: 1,
            parameters: RoundParameters {
                long_scan_ratio: self.long_scan_ratio(round, context).0,
                false_positive_rate: filter_false_positive_rate(tree),
                beta_q: self.settings.beta_q,
                t_w,
                t_c,
                units,
                ccap: self.settings.ccap,
            },
        }
    }

    /// The DP's schedule for `parameters` (solved once per round, then cached). Invalid
    /// parameters (a corrupt record) give no ML merges.
    pub fn schedule(&self, parameters: &RoundParameters) -> Arc<Vec<Merge>> {
        let mut cache = self.schedule.lock();
        if let Some((cached, schedule)) = cache.as_ref() {
            if cached == parameters {
                return Arc::clone(schedule);
            }
        }
        let schedule = Arc::new(
            Dp::new(*parameters)
                .map(|mut dp| dp.schedule())
                .unwrap_or_default(),
        );
        *cache = Some((*parameters, Arc::clone(&schedule)));
        schedule
    }

    /// Where a round starting now takes `r` from, for the job's reason.
    fn r_source(&self, previous: Option<&Round>, context: &CompactionContext) -> &'static str {
        if self.settings.long_scan_ratio.is_some() {
            "set"
        } else if self.long_scan_ratio(previous, context).1 {
            "measured"
        } else if previous.is_some() {
            "previous round's, too few queries measured"
        } else {
            "default, too few queries measured"
        }
    }

    /// The TM compaction, if the top level holds `S` bytes and none is running.
    fn tm_compaction(
        &self,
        tree: &Version,
        round: Option<&Round>,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let top = &tree.levels()[0];
        let (unit_bytes, unit_flushes) = match round {
            Some(round) => (round.unit_bytes, round.unit_flushes),
            None => {
                let unit_bytes = self.unit_bytes(tree, context);
                (unit_bytes, self.unit_flushes(unit_bytes, context).0)
            }
        };
        let full = top.bytes() >= unit_bytes || top.runs().len() >= unit_flushes as usize;
        if top.is_empty() || !full {
            return None;
        }
        let tm_running = running.jobs().iter().any(|job| {
            job.output_level == MAIN_LEVEL && job.output_run == OutputRun::New
                || job.inputs.iter().any(|input| input.level == 0)
        });
        if tm_running {
            return None;
        }
        let next = self.next_round(round, tree, context);
        let job = CompactionJob {
            inputs: top.runs().iter().map(|run| whole_run(0, run)).collect(),
            output_level: MAIN_LEVEL,
            output_run: OutputRun::New,
            reason: format!(
                "TM: top level holds {} runs, {} bytes (S = {unit_bytes}, {unit_flushes} flushes a unit; round {}, unit {} of {}{})",
                top.runs().len(),
                top.bytes(),
                next.number,
                next.arrivals,
                next.parameters.units,
                if next.arrivals == 1 {
                    let p = &next.parameters;
                    format!(
                        "; round starts: S = {} bytes, T_w = {:.3} s, T_c = {:.3} s, f = {:.4}, r = {:.3} ({})",
                        next.unit_bytes,
                        p.t_w,
                        p.t_c,
                        p.false_positive_rate,
                        p.long_scan_ratio,
                        self.r_source(round, context)
                    )
                } else {
                    String::new()
                }
            ),
            state: Some(next.encode()),
            action: JobAction::Merge,
        };
        running.conflict(&job).is_none().then_some(job)
    }

    /// The closed round's global compaction: its main-level runs and every run below into the
    /// last level, once no running job holds any of them. Also picked, with no main-level runs,
    /// when the levels below hold more than one run (a tree another policy built).
    fn global_compaction(
        &self,
        tree: &Version,
        round: Option<&Round>,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let round = round?;
        let boundary = if round.is_closed() {
            u64::MAX
        } else {
            round.boundary_run
        };
        let levels = tree.levels();
        let closed: Vec<&Run> = levels[MAIN_LEVEL]
            .runs()
            .iter()
            .filter(|run| run.id() <= boundary)
            .collect();
        let last = tree
            .last_non_empty_level()
            .unwrap_or(LAST_LEVEL)
            .max(LAST_LEVEL);
        let runs_below: usize = levels[LAST_LEVEL..=last]
            .iter()
            .map(|l| l.runs().len())
            .sum();
        // Nothing closed, and the last level is one run: nothing to do. (Several runs below the
        // main level come from a tree another policy built; they are merged into one.)
        if closed.is_empty() && runs_below <= 1 {
            return None;
        }
        let busy = closed
            .iter()
            .any(|run| running.holds_run(MAIN_LEVEL, run.id()))
            || running
                .jobs()
                .iter()
                .any(|job| job.output_level >= LAST_LEVEL);
        if busy {
            return None;
        }
        let mut inputs: Vec<RunInput> = closed
            .iter()
            .map(|run| whole_run(MAIN_LEVEL, run))
            .collect();
        for (level, l) in levels.iter().enumerate().take(last + 1).skip(LAST_LEVEL) {
            inputs.extend(l.runs().iter().map(|run| whole_run(level, run)));
        }
        let job = CompactionJob {
            inputs,
            output_level: last,
            output_run: OutputRun::New,
            reason: format!(
                "global: round {} closed ({} main-level runs into level {last})",
                if round.is_closed() {
                    round.number
                } else {
                    round.number - 1
                },
                closed.len()
            ),
            state: None,
            action: JobAction::Merge,
        };
        running.conflict(&job).is_none().then_some(job)
    }

    /// The schedule's next ML merge, once its arrival has come and no other merge runs.
    fn ml_compaction(
        &self,
        tree: &Version,
        round: Option<&Round>,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let round = round.filter(|r| !r.is_closed())?;
        let merging = running.jobs().iter().any(|job| {
            job.output_level >= LAST_LEVEL
                || job.output_level == MAIN_LEVEL && job.rewrites_in_place()
        });
        if merging {
            return None;
        }
        let done = merges_done(tree, round.number);
        let schedule = self.schedule(&round.parameters);
        // The schedule's last merge is the global compaction, picked on its own.
        let next = schedule
            .get(..schedule.len().saturating_sub(1))?
            .get(done as usize)?;
        if round.arrivals < next.start_arrival {
            return None;
        }
        // The round's runs, oldest first (a level lists its runs newest first).
        let runs: Vec<&Run> = tree.levels()[MAIN_LEVEL]
            .runs()
            .iter()
            .rev()
            .filter(|run| run.id() > round.boundary_run)
            .collect();
        let first = next.first_run as usize;
        let merged = runs.get(first..first + next.runs as usize)?;
        let state = encode_merges_done(round.number, done + 1);
        let reason = format!(
            "ML: round {} merge {} of {} ({} units, runs {}..{} oldest first, scheduled at unit {}, now {})",
            round.number,
            done + 1,
            schedule.len() - 1,
            next.units,
            first,
            first + merged.len(),
            next.start_arrival,
            round.arrivals
        );
        let job = match merged {
            // A merge of one run changes nothing: count it done.
            [] | [_] => CompactionJob::state_only(state, reason),
            _ => CompactionJob {
                // Newest first, into the newest input's run: the runs around keep their order.
                inputs: merged
                    .iter()
                    .rev()
                    .map(|run| whole_run(MAIN_LEVEL, run))
                    .collect(),
                output_level: MAIN_LEVEL,
                output_run: OutputRun::Existing(merged.last()?.id()),
                reason,
                state: Some(state),
                action: JobAction::Merge,
            },
        };
        running.conflict(&job).is_none().then_some(job)
    }
}

/// The filters' false-positive rate below the top level, weighted by entries (`f` of
/// `q(e)`); 0 without filters.
fn filter_false_positive_rate(tree: &Version) -> f64 {
    let (mut weighted, mut entries) = (0.0, 0.0);
    for level in tree.levels().iter().skip(1) {
        for run in level.runs() {
            for file in run.files() {
                let n = file.entries() as f64;
                weighted += n * file
                    .filter_family()
                    .false_positive_rate(file.bits_per_key());
                entries += n;
            }
        }
    }
    if entries > 0.0 {
        (weighted / entries).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl CompactionPolicy for EcoTune {
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let settings = CompactionSettings {
            ecotune: self.settings,
            ..CompactionSettings::with_size_ratio(crate::compaction::SizeRatio::DEFAULT.get())
        };
        Some((CompactionKind::Ecotune, settings))
    }

    fn name(&self) -> String {
        let or_live = |v: Option<String>| v.unwrap_or_else(|| "live".to_string());
        format!(
            "ecotune(Ccap={},K={},r={},beta_q={}{})",
            self.settings.ccap,
            or_live(self.settings.scan_length.map(|k| k.to_string())),
            or_live(self.settings.long_scan_ratio.map(|r| r.to_string())),
            self.settings.beta_q,
            if self.settings.top_level_index {
                ""
            } else {
                ",no top-level index"
            }
        )
    }

    /// At most a round's units on the main level (level 1); one run below it.
    fn max_runs(&self, level: usize, _last_level: usize) -> usize {
        if level <= 1 {
            self.settings.max_units as usize
        } else {
            1
        }
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let round = stored_round(tree);
        self.tm_compaction(tree, round.as_ref(), context, running)
            .or_else(|| self.global_compaction(tree, round.as_ref(), running))
            .or_else(|| self.ml_compaction(tree, round.as_ref(), running))
            .map(|job| merge_or_move(job, tree))
    }

    /// Writes slow down once the top level holds twice its capacity and stop at four times: the
    /// TM compaction is behind (the top level is never merged otherwise).
    fn write_pressure(&self, tree: &Version, context: &CompactionContext) -> WritePressure {
        let unit_bytes =
            stored_round(tree).map_or_else(|| self.unit_bytes(tree, context), |r| r.unit_bytes);
        let top = tree.levels()[0].bytes();
        if top >= unit_bytes.saturating_mul(4) {
            WritePressure::Stop
        } else if top >= unit_bytes.saturating_mul(2) {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    fn indexes_top_level(&self) -> bool {
        self.settings.top_level_index
    }

    fn describe_state(&self, tree: &Version) -> Option<String> {
        let round = stored_round(tree)?;
        let p = &round.parameters;
        let schedule = self.schedule(p);
        Some(format!(
            "round {}: unit {} of R = {}, S = {} bytes ({} flushes a unit), T_w = {:.3} s, \
             T_c = {:.3} s (T_c/T_w = {:.3}), f = {:.4}, r = {:.3}, ML merges {} of {} done",
            round.number,
            round.arrivals,
            p.units,
            round.unit_bytes,
            round.unit_flushes,
            p.t_w,
            p.t_c,
            p.t_c / p.t_w,
            p.false_positive_rate,
            p.long_scan_ratio,
            merges_done(tree, round.number),
            schedule.len().saturating_sub(1)
        ))
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
