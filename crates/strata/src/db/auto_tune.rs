//! Auto-tune on a running database (`Options::auto_tune`, DESIGN.md §10 "Self-tuning"): the
//! engine's half of `crate::model::auto_tune`. It gathers a decision's inputs — the tree's
//! entries and entry size, the write buffer and the filter budget, the workload totals since the
//! last decision, the merge policy in force — asks the pure decision, applies a switch through
//! `Db::set_compaction_policy`, and records the decision: a line in the info log and the
//! decision state in the manifest (owner [`AUTO_TUNE_OWNER`]), so `Stats::auto_tune` shows the
//! last decisions and a restart resumes the hysteresis where it was.
//!
//! Decisions are taken by a background thread every `every_operations` operations (it looks at
//! the operation count every [`POLL`]), or at once by `Db::auto_tune_now` (`strata tune
//! --apply`). One decision runs at a time (the state's lock).

use std::time::Duration;

use super::DbInner;
use crate::error::Result;
use crate::model::auto_tune::{
    decide, AutoTuneOptions, AutoTuneState, CurrentDesign, Decision, Measurements, TreeFacts,
};
use crate::version::{PolicyState, Version, VersionEdit};

/// The owner of auto-tune's state among the manifest's policy states.
pub(crate) const AUTO_TUNE_OWNER: &str = "engine.auto-tune";

/// How often the background thread looks at the operation count.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// The state `tree`'s manifest records, or a fresh one; and, when the record cannot be read
/// (damaged or from a newer build), a line for the info log saying it starts afresh. The state
/// is advice about when to switch, not data: losing it costs a decision or two, so an unreadable
/// record does not refuse the open.
pub(crate) fn state_at_open(tree: &Version) -> (AutoTuneState, Option<String>) {
    let Some(bytes) = tree.policy_state(AUTO_TUNE_OWNER) else {
        return (AutoTuneState::default(), None);
    };
    if bytes.is_empty() {
        return (AutoTuneState::default(), None);
    }
    let parsed = std::str::from_utf8(bytes)
        .map_err(|error| error.to_string())
        .and_then(|text| toml::from_str(text).map_err(|error| error.to_string()));
    match parsed {
        Ok(state) => (state, None),
        Err(error) => (
            AutoTuneState::default(),
            Some(format!(
                "auto-tune's recorded state is unreadable ({error}); it starts afresh"
            )),
        ),
    }
}

/// Auto-tune's state as a manifest record.
fn state_record(state: &AutoTuneState) -> Result<PolicyState> {
    let text = toml::to_string(state).map_err(|error| {
        crate::error::Error::InvalidArgument(format!(
            "auto-tune's state cannot be recorded: {error}"
        ))
    })?;
    Ok(PolicyState {
        owner: AUTO_TUNE_OWNER.to_string(),
        bytes: text.into_bytes(),
    })
}

impl DbInner {
    /// Takes one decision with `options` and applies it (module documentation).
    pub(crate) fn auto_tune_once(&self, options: &AutoTuneOptions) -> Result<Decision> {
        self.check_writable()?;
        options.validate()?;
        let mut state = self.auto_tune.lock();
        let totals = self.workload();
        let interval = state.interval(&totals);
        let view = self.view.load_full();
        let tree = &view.version;
        let entries = tree.entries();
        let facts = TreeFacts {
            entries,
            entry_bytes: if entries == 0 {
                0.0
            } else {
                tree.bytes() as f64 / entries as f64
            },
            buffer_bits: self.options.write_buffer_bytes as f64 * 8.0,
            filter_bits: view.filter_allocator.bits_per_key_budget() * entries as f64,
            level0_runs: self.options.level0_compaction_trigger.saturating_sub(1) as f64 / 2.0,
            measurements: self.measurements(),
        };
        let policy = self.compaction_policy();
        let decision = match policy.registered() {
            Some((kind, settings)) => {
                let current = CurrentDesign {
                    kind,
                    settings,
                    uniform_filters: view.filter_allocator.name().starts_with("uniform("),
                };
                drop(view);
                let verdict = decide(options, &facts, &interval, &current, &state)?;
                let mut decision = verdict.decision;
                if let Some((kind, settings)) = &verdict.switch_to {
                    // A switch that fails (a closed database, a failed manifest write) is
                    // recorded as kept, with the error, when the record can still be written.
                    if let Err(error) = self.set_compaction_policy(*kind, settings) {
                        decision.switched = false;
                        decision.reason = format!("the switch failed: {error}");
                    }
                }
                decision
            }
            None => Decision::kept(
                state.decisions + 1,
                AutoTuneState::operations(&interval),
                None,
                entries,
                format!(
                    "the merge policy in force, {}, is not a registered one",
                    policy.name()
                ),
            ),
        };
        self.info_log.log(format!("auto-tune {decision}"));
        let mut next = state.clone();
        next.record(decision.clone(), &totals);
        let edit = VersionEdit {
            policy_states: vec![state_record(&next)?],
            ..Default::default()
        };
        {
            let _install = self.install_lock.lock();
            self.versions.log_and_apply(edit)?;
        }
        *state = next;
        Ok(decision)
    }

    /// What the engine measured since it opened, for pricing designs with this machine's
    /// costs: the counters' measurements up to the last `Db::reset_stats` (kept in
    /// `measurement_base`) and since. Read under the base's lock, which a reset holds while it
    /// moves the counters into the base, so nothing is counted twice.
    pub(crate) fn measurements(&self) -> Measurements {
        let base = self.measurement_base.lock();
        base.plus(&self.counted_measurements())
    }

    /// What the counters hold since they were last reset: the timed probes of every file the
    /// lookups probed (live or since deleted), the timed writes, the stalls and the compactions.
    pub(crate) fn counted_measurements(&self) -> Measurements {
        let load = |counter: &std::sync::atomic::AtomicU64| {
            counter.load(std::sync::atomic::Ordering::Relaxed)
        };
        let counters = &self.counters;
        let probes = counters.probe_times();
        Measurements {
            device_block_probes: probes.device_block.probes,
            device_block_nanos: probes.device_block.nanos,
            cached_block_probes: probes.cached_block.probes,
            cached_block_nanos: probes.cached_block.nanos,
            rejected_probes: probes.rejected.probes,
            rejected_nanos: probes.rejected.nanos,
            timed_write_entries: load(&counters.timed_write_entries),
            timed_write_nanos: load(&counters.timed_write_nanos),
            write_entries: load(&counters.write_entries),
            write_stall_micros: load(&counters.write_stall_micros),
            compaction_write_bytes: load(&counters.compaction_write_bytes),
            compaction_micros: load(&counters.compaction_micros),
        }
    }

    /// The last decisions, oldest first.
    pub(crate) fn auto_tune_history(&self) -> Vec<Decision> {
        self.auto_tune.lock().history.clone()
    }

    /// The last decisions in words, oldest first (`Stats::auto_tune`).
    pub(crate) fn auto_tune_lines(&self) -> Vec<String> {
        let state = self.auto_tune.lock();
        state.history.iter().map(ToString::to_string).collect()
    }

    /// True when the background thread should decide: enough operations since the last
    /// decision.
    fn auto_tune_due(&self, options: &AutoTuneOptions) -> bool {
        let done = AutoTuneState::operations(&self.workload());
        let last = self.auto_tune.lock().operations_at_last;
        done.saturating_sub(last) >= options.every_operations
    }
}

/// The auto-tune thread's body: decides whenever enough operations have passed, until the
/// database closes. A failed decision is logged, not made the background error: the database
/// keeps the design it has, which is always a valid one.
pub(crate) fn auto_tune_loop(inner: &DbInner, options: AutoTuneOptions) {
    loop {
        {
            let mut background = inner.background.lock();
            if background.shutting_down {
                return;
            }
            inner.work_available.wait_for(&mut background, POLL);
            if background.shutting_down {
                return;
            }
        }
        if inner.background_error().is_some() || !inner.auto_tune_due(&options) {
            continue;
        }
        if let Err(error) = inner.auto_tune_once(&options) {
            inner
                .info_log
                .log(format!("auto-tune could not decide: {error}"));
        }
    }
}
