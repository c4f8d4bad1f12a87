//! Auto-tune on a running database (`Options::auto_tune`, DESIGN.md §10 "Self-tuning"): the
//! engine's half of `crate::model::auto_tune`. It gathers a decision's inputs — the tree's
//! entries and entry size, the write buffer and the filter budget, the workload totals since the
//! last decision, the merge policy in force — asks the pure decision, applies a switch through
//! `Db::set_compaction_policy`, and records the decision: a line in the info log and the
//! decision state in the manifest (owner [`AUTO_TUNE_OWNER`]), so `Stats::auto_tune` shows the
//! last decisions and a restart resumes the hysteresis where it was.
//!
//! Decisions are taken by a background thread every `every_operations` operations, or after
//! `every_seconds` with fewer, or sooner when the mix changes or a merge for reads would pay
//! (`AutoTuneState::due_early`; it looks at the operation count every [`POLL`]), but no sooner
//! after the last than its time allows (`max_processor_share`); or at once by
//! `Db::auto_tune_now` (`strata tune --apply`). One decision runs at a time (the state's lock).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::DbInner;
use crate::env::FileSystem;
use crate::error::Result;
use crate::model::auto_tune::{
    decide, AutoTuneOptions, AutoTuneState, CurrentDesign, Decision, Measurements, TreeFacts,
    MIN_SAMPLES, PROBE_READS,
};
use crate::model::tree::boundary_key_bytes;
use crate::table::table_file_name;
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
    /// Takes one decision with `options` and applies it (module documentation), the merge for
    /// reads it asks for included: returns when that merge has run.
    pub(crate) fn auto_tune_once(&self, options: &AutoTuneOptions) -> Result<Decision> {
        let decision = self.auto_tune_decide(options)?;
        self.merge_for_reads_if_decided(&decision);
        Ok(decision)
    }

    /// Runs the full compaction `decision` asks for when it merges for reads
    /// (`model::auto_tune`, "Merging for reads"), and logs it. Not when a full compaction is
    /// already queued or running (another caller's decision, or `Db::compact`): that one leaves
    /// the tree one run too. A failure is logged: a merge that could not run leaves the tree as
    /// it was, and a failed job has already set the background error.
    pub(crate) fn merge_for_reads_if_decided(&self, decision: &Decision) {
        if !decision.merges_for_reads() {
            return;
        }
        {
            let background = self.background.lock();
            if background.manual_compactions.pending()
                || background.full_compaction_worker.is_some()
            {
                self.info_log.log(format!(
                    "auto-tune decision {}: a full compaction is already under way; no second \
                     merge for reads",
                    decision.number
                ));
                return;
            }
        }
        let started = Instant::now();
        let outcome = match self.compact_all() {
            Ok(()) => format!(
                "merged the tree into one run for reads in {:.2} s",
                started.elapsed().as_secs_f64()
            ),
            Err(error) => format!("could not merge the tree for reads: {error}"),
        };
        self.info_log
            .log(format!("auto-tune decision {}: {outcome}", decision.number));
    }

    /// Takes one decision with `options` and applies a switch (module documentation); a merge
    /// for reads is left to [`DbInner::merge_for_reads_if_decided`], so that the background
    /// thread holds the next decision back by the decision's time alone.
    pub(crate) fn auto_tune_decide(&self, options: &AutoTuneOptions) -> Result<Decision> {
        self.check_changeable()?;
        options.validate()?;
        let started = Instant::now();
        let mut state = self.auto_tune.lock();
        let totals = self.workload();
        let interval = state.interval(&totals);
        // The interval's throughput as served, for the log beside what the models predicted.
        let elapsed = self
            .auto_tune_decided_at
            .lock()
            .replace(started)
            .map(|at| started.duration_since(at).as_secs_f64());
        let view = self.view.load_full();
        if options.measured_costs {
            self.probe_reads_if_unmeasured(&view.version);
        }
        let facts = self.tree_facts(&view);
        let entries = facts.entries;
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
        let served = match elapsed {
            Some(seconds) if seconds > 0.0 => format!(
                "; {:.0} ops/s served over the interval",
                AutoTuneState::operations(&interval) as f64 / seconds
            ),
            _ => String::new(),
        };
        self.info_log.log(format!(
            "auto-tune {decision} (decided in {:.1} ms{served})",
            started.elapsed().as_secs_f64() * 1e3
        ));
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

    /// What a decision knows of the tree `view` reads: its entries and their size, its key size,
    /// the write buffer, the filters' memory and what the engine measured.
    pub(crate) fn tree_facts(&self, view: &super::ReadView) -> TreeFacts {
        let tree = &view.version;
        let entries = tree.entries();
        let count = |runs: usize| u32::try_from(runs).unwrap_or(u32::MAX);
        TreeFacts {
            entries,
            entry_bytes: if entries == 0 {
                0.0
            } else {
                tree.bytes() as f64 / entries as f64
            },
            buffer_bits: self.options.write_buffer_bytes as f64 * 8.0,
            filter_bits: view.filter_allocator.bits_per_key_budget() * entries as f64,
            level0_runs: self.options.level0_compaction_trigger.saturating_sub(1) as f64 / 2.0,
            runs_now: count(tree.levels().iter().map(|level| level.runs().len()).sum()),
            level0_runs_now: count(tree.levels()[0].runs().len()),
            block_cache_bytes: self.options.block_cache_bytes as f64,
            merge_threads: self.options.max_background_compactions as f64,
            merge_share: crate::model::tuner::foreground_share_of_merges(
                self.options.max_background_compactions,
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
            key_bytes: boundary_key_bytes(tree),
            measurements: self.measurements(),
        }
    }

    /// Runs the read probe (`read_probe`) once per open, when the lookups have not yet timed
    /// [`MIN_SAMPLES`] probes that read the device nor the lookups and scans made that many
    /// device reads of one block, and adds its reads to the measurements: a
    /// workload whose reads the block cache mostly serves (a hot spot) times too few device reads
    /// to price them, and the probe's price stands in until it does (docs/decisions, "Auto-tune's
    /// read price"). A failed probe is logged and leaves reads at the device setting.
    fn probe_reads_if_unmeasured(&self, tree: &Version) {
        let measured = self.measurements();
        if self.read_probe_tried.load(Ordering::Relaxed)
            || measured.device_block_probes >= MIN_SAMPLES
            || measured.block_reads >= MIN_SAMPLES
        {
            return;
        }
        let Some(file) = tree
            .files()
            .map(|(_, _, file)| file)
            .filter(|file| file.file_bytes() >= PROBE_PAGE_BYTES)
            .max_by_key(|file| file.file_bytes())
        else {
            // No file to read yet: try again at a later decision.
            return;
        };
        self.read_probe_tried.store(true, Ordering::Relaxed);
        let path = self.dir.join(table_file_name(file.number()));
        match read_probe(&*self.fs, &path, self.options.direct_reads, file.number()) {
            Ok(nanos) => {
                let mut base = self.measurement_base.lock();
                base.probed_reads = base.probed_reads.saturating_add(PROBE_READS);
                base.probed_read_nanos = base.probed_read_nanos.saturating_add(nanos);
                self.info_log.log(format!(
                    "auto-tune's read probe: {PROBE_READS} random {PROBE_PAGE_BYTES}-byte reads of \
                     file {} ({}), {:.1} us each",
                    file.number(),
                    if self.options.direct_reads {
                        "direct"
                    } else {
                        "buffered"
                    },
                    nanos as f64 / PROBE_READS as f64 / 1e3
                ));
            }
            Err(error) => self.info_log.log(format!(
                "auto-tune's read probe failed ({error}); reads stay priced at the device setting \
                 until the lookups time enough"
            )),
        }
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
        let (block_reads, block_read_nanos) = counters.single_block_reads();
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
            compaction_processor_micros: load(&counters.compaction_processor_micros),
            // The read probe adds its reads to the base (`probe_reads_if_unmeasured`).
            probed_reads: 0,
            probed_read_nanos: 0,
            block_reads,
            block_read_nanos,
            timed_seeks: load(&counters.timed_seeks),
            timed_seek_runs: load(&counters.timed_seek_runs),
            timed_seek_nanos: load(&counters.timed_seek_nanos),
            timed_lookups: load(&counters.timed_lookups),
            timed_lookup_nanos: load(&counters.timed_lookup_nanos),
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
    /// decision, or some operations and `every_seconds` since `since` (the last decision's
    /// time, or the thread's start), or earlier when the mix changed or a merge for reads
    /// would pay ([`AutoTuneState::due_early`]).
    fn auto_tune_due(&self, options: &AutoTuneOptions, since: Instant) -> bool {
        let totals = self.workload();
        let state = self.auto_tune.lock();
        let interval = state.interval(&totals);
        let served = AutoTuneState::operations(&interval);
        served >= options.every_operations
            || (served > 0
                && options.every_seconds > 0.0
                && since.elapsed().as_secs_f64() >= options.every_seconds)
            || state.due_early(options, &interval, self.view.load().version.entries())
    }
}

/// Bytes of one read of the read probe: the page the models price (`AutoTuneOptions::page_bytes`
/// by default) and the alignment direct I/O needs.
pub(crate) const PROBE_PAGE_BYTES: u64 = 4096;

/// Times [`PROBE_READS`] reads of random [`PROBE_PAGE_BYTES`]-byte pages of the file at `path`,
/// opened with direct I/O when `direct` (as the table cache opens it for lookups); returns their
/// nanoseconds in all. The pages are chosen by a generator seeded with `seed`. Reading outside
/// the block cache, every read goes to the device, or with buffered reads to the page cache,
/// which is where a lookup's block-cache miss goes too.
pub(crate) fn read_probe(fs: &dyn FileSystem, path: &Path, direct: bool, seed: u64) -> Result<u64> {
    let file = fs.open_random_access(path, direct)?;
    let pages = file.len() / PROBE_PAGE_BYTES;
    if pages == 0 {
        return Err(crate::error::Error::InvalidArgument(format!(
            "{} is smaller than a {PROBE_PAGE_BYTES}-byte page",
            path.display()
        )));
    }
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut nanos = 0u64;
    for _ in 0..PROBE_READS {
        // SplitMix64: any spread of pages will do, and the same file reads the same pages.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let page = (z ^ (z >> 31)) % pages;
        let started = Instant::now();
        let bytes = file.read_at(page * PROBE_PAGE_BYTES, PROBE_PAGE_BYTES as usize)?;
        nanos = nanos.saturating_add(started.elapsed().as_nanos() as u64);
        std::hint::black_box(bytes);
    }
    Ok(nanos.max(1))
}

/// How long after a decision's start the next may start: the decision's time `took` over the
/// share of a core decisions may take (`AutoTuneOptions::max_processor_share`, validated in
/// `(0, 1]`); the longest wait a `Duration` holds when that overflows.
fn hold_after(took: Duration, max_processor_share: f64) -> Duration {
    Duration::try_from_secs_f64(took.as_secs_f64() / max_processor_share).unwrap_or(Duration::MAX)
}

/// The auto-tune thread's body: decides whenever enough operations have passed and the last
/// decision's time allows ([`hold_after`]), until the database closes. A failed decision is
/// logged, not made the background error: the database keeps the design it has, which is always
/// a valid one.
pub(crate) fn auto_tune_loop(inner: &DbInner, options: AutoTuneOptions) {
    let mut last_decision = Instant::now();
    let mut hold = Duration::ZERO;
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
        if inner.background_error().is_some()
            || last_decision.elapsed() < hold
            || !inner.auto_tune_due(&options, last_decision)
        {
            continue;
        }
        last_decision = Instant::now();
        let decided = inner.auto_tune_decide(&options);
        hold = hold_after(last_decision.elapsed(), options.max_processor_share);
        match decided {
            Ok(decision) => inner.merge_for_reads_if_decided(&decision),
            Err(error) => inner
                .info_log
                .log(format!("auto-tune could not decide: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tuner::top_index_bits;
    use crate::model::ModelPolicy;
    use crate::{Db, Options};

    #[test]
    fn a_database_of_long_keys_prices_ecotunes_index_at_its_key_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = Options::default()
            .write_buffer_bytes(64 * 1024)
            .target_file_bytes(64 * 1024);
        let db = Db::open(dir.path(), options).expect("open");
        // Keys that do not compress (stored entries are then larger than the keys, as the
        // models take them): the number, then bytes of a multiplicative hash.
        let mut state = 1u64;
        for i in 0..5_000u64 {
            let mut key = format!("{i:08}").into_bytes();
            while key.len() < 200 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                key.push((state >> 56) as u8);
            }
            db.put(&key, [1u8; 50]).expect("put");
        }
        db.flush().expect("flush");
        let view = db.inner.view.load_full();
        let facts = db.inner.tree_facts(&view);
        // Every key is 200 bytes; the estimate reads the files' boundary keys.
        assert_eq!(facts.key_bytes, Some(200.0));
        let totals = crate::stats::WorkloadTotals {
            point_lookups: 1_000,
            ..Default::default()
        };
        let workload = crate::model::auto_tune::mix_of(&totals, facts.entries).expect("a mix");
        let problem = facts.problem(workload, AutoTuneOptions::default().device());
        assert_eq!(problem.key_bytes(), 200.0);
        let buffer = facts.buffer_bits;
        let unknown = TreeFacts {
            key_bytes: None,
            ..facts
        }
        .problem(workload, AutoTuneOptions::default().device());
        let per_key = crate::model::ecotune::index_bits_per_key;
        let ratio = top_index_bits(&problem, ModelPolicy::ECOTUNE, buffer)
            / top_index_bits(&unknown, ModelPolicy::ECOTUNE, buffer);
        assert!(
            (ratio - per_key(200.0) / per_key(16.0)).abs() < 1e-9,
            "{ratio}"
        );
        drop(view);
        db.close().expect("close");
    }

    #[test]
    fn a_decision_holds_the_next_back_by_its_time_over_the_share() {
        let ms = Duration::from_millis;
        assert_eq!(hold_after(ms(60), 0.05), ms(1_200));
        assert_eq!(hold_after(ms(60), 1.0), ms(60));
        assert_eq!(hold_after(Duration::ZERO, 0.05), Duration::ZERO);
        // A share so small the wait overflows: the longest wait, not a panic.
        assert_eq!(hold_after(ms(60), 1e-300), Duration::MAX);
        assert_eq!(hold_after(Duration::MAX, 0.5), Duration::MAX);
    }

    #[test]
    fn the_read_probe_times_its_reads_and_a_file_too_small_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = crate::env::RealFileSystem;
        let path = dir.path().join("probed");
        std::fs::write(&path, vec![3u8; 64 * 1024]).expect("write");
        let nanos = read_probe(&fs, &path, false, 7).expect("probe");
        assert!(nanos > 0);
        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, [1u8; 100]).expect("write");
        assert!(matches!(
            read_probe(&fs, &tiny, false, 7),
            Err(crate::error::Error::InvalidArgument(_))
        ));
        assert!(read_probe(&fs, &dir.path().join("absent"), false, 7).is_err());
    }
}
