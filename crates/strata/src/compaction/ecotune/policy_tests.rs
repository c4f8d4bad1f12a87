use super::*;
use crate::compaction::ecotune::dp::layouts;
use crate::compaction::test_support::{tree, tree_with_states, CONTEXT};
use crate::version::tests::file_metadata;
use crate::version::FileMetadata;

const UNIT: u64 = 1000;

fn parameters(units: u32, t_c: f64) -> RoundParameters {
    RoundParameters {
        long_scan_ratio: 0.3,
        false_positive_rate: 0.01,
        beta_q: 0.5,
        t_w: 1.0,
        t_c,
        units,
        ccap: 3,
    }
}

fn round(number: u64, arrivals: u32, boundary_run: u64, parameters: RoundParameters) -> Round {
    Round {
        number,
        unit_bytes: UNIT,
        unit_flushes: 1,
        boundary_run,
        arrivals,
        parameters,
    }
}

fn policy() -> EcoTune {
    EcoTune::new(EcoTuneSettings::default()).expect("valid settings")
}

/// A synthetic tree the policy's jobs are applied to at once, as if each took no time.
struct Synthetic {
    version: Version,
    next_run: u64,
    next_file: u64,
}

impl Synthetic {
    fn new(version: Version) -> Self {
        let next = version
            .files()
            .map(|(_, run, f)| run.max(f.number()))
            .max()
            .unwrap_or(0)
            + 1;
        Synthetic {
            version,
            next_run: next,
            next_file: next,
        }
    }

    fn file(&mut self, bytes: u64) -> FileMetadata {
        self.next_file += 1;
        file_metadata(self.next_file, "a", "z")
            .with_file_bytes(bytes)
            .with_entries(bytes / 100)
    }

    /// A flush of one unit into a new top-level run.
    fn flush(&mut self) {
        let file = self.file(UNIT);
        self.next_run += 1;
        self.version = self
            .version
            .to_builder()
            .add_file(0, self.next_run, file)
            .build()
            .expect("flush applies");
    }

    /// Applies `job`: one output file holding its inputs' bytes.
    fn apply(&mut self, job: &CompactionJob) {
        let outputs = if job.is_state_only() {
            Vec::new()
        } else {
            let bytes = input_bytes(&self.version, job).iter().sum();
            vec![self.file(bytes)]
        };
        self.next_run += 1;
        self.version = self
            .version
            .with_job_applied(job, self.next_run, outputs)
            .expect("the policy's job applies");
    }

    /// Picks and applies jobs until the policy has none; a new policy object for every pick, so
    /// nothing but the manifest's state carries over (as after a restart).
    fn settle(&mut self) -> Vec<CompactionJob> {
        self.settle_seeing(|_, _| {})
    }

    /// [`Synthetic::settle`], showing `before` each job and the tree it is picked on.
    fn settle_seeing(
        &mut self,
        mut before: impl FnMut(&Synthetic, &CompactionJob),
    ) -> Vec<CompactionJob> {
        let mut jobs = Vec::new();
        while let Some(job) = policy().pick(&self.version, &CONTEXT, &RunningCompactions::none()) {
            before(self, &job);
            self.apply(&job);
            jobs.push(job);
            assert!(jobs.len() < 100, "the policy keeps picking: {jobs:?}");
        }
        jobs
    }

    /// The main level's run sizes in units, oldest first, in Table 4's notation.
    fn main_layout(&self) -> String {
        self.version.levels()[MAIN_LEVEL]
            .runs()
            .iter()
            .rev()
            .map(|run| (run.bytes() / UNIT).to_string())
            .collect()
    }
}

/// Bytes of each input run of `job`, in the job's order (newest first).
fn input_bytes(version: &Version, job: &CompactionJob) -> Vec<u64> {
    job.inputs
        .iter()
        .map(|input| {
            version.levels()[input.level]
                .runs()
                .iter()
                .find(|run| run.id() == input.run_id)
                .map_or(0, Run::bytes)
        })
        .collect()
}

#[test]
fn the_round_record_round_trips_and_malformed_records_are_ignored() {
    let record = round(7, 3, 42, parameters(29, 0.1));
    let state = record.encode();
    assert_eq!(state.owner, ROUND_STATE_OWNER);
    assert_eq!(Round::decode(&state.bytes), Some(record));
    for cut in 0..state.bytes.len() {
        assert_eq!(Round::decode(&state.bytes[..cut]), None, "cut at {cut}");
    }
    let mut trailing = state.bytes.clone();
    trailing.push(0);
    assert_eq!(Round::decode(&trailing), None);
    let mut other_format = state.bytes.clone();
    other_format[0] = 9;
    assert_eq!(Round::decode(&other_format), None);
    // Out-of-range parameters (r = 2) are refused, not solved.
    let bad = Round {
        parameters: RoundParameters {
            long_scan_ratio: 2.0,
            ..record.parameters
        },
        ..record
    };
    assert_eq!(Round::decode(&bad.encode().bytes), None);

    let merges = encode_merges_done(7, 4);
    assert_eq!(merges.owner, MERGES_STATE_OWNER);
    assert_eq!(decode_merges_done(&merges.bytes), Some((7, 4)));
    assert_eq!(decode_merges_done(&merges.bytes[..2]), None);
}

#[test]
fn settings_out_of_range_are_refused() {
    for bad in [
        EcoTuneSettings {
            ccap: 0,
            ..Default::default()
        },
        EcoTuneSettings {
            scan_length: Some(0),
            ..Default::default()
        },
        EcoTuneSettings {
            long_scan_ratio: Some(1.5),
            ..Default::default()
        },
        EcoTuneSettings {
            beta_q: f64::NAN,
            ..Default::default()
        },
        EcoTuneSettings {
            max_units: 1,
            ..Default::default()
        },
    ] {
        assert!(
            matches!(EcoTune::new(bad), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn the_top_level_is_merged_whole_once_it_holds_s_bytes() {
    let policy = policy();
    assert_eq!(
        policy.pick(&tree(&[]), &CONTEXT, &RunningCompactions::none()),
        None
    );
    // A round whose units are 3 flushes of S = 3,000 bytes: two runs of 1,000 bytes wait.
    let unit = Round {
        unit_bytes: 3 * UNIT,
        unit_flushes: 3,
        ..round(1, 1, 0, parameters(7, 0.4))
    };
    let state = [unit.encode()];
    let two = tree_with_states(
        &[(0, 2, 2, "c", "z", 1000), (0, 1, 1, "a", "m", 1000)],
        &state,
    );
    assert_eq!(
        policy.pick(&two, &CONTEXT, &RunningCompactions::none()),
        None
    );
    // A third run, or S bytes in fewer runs, starts the TM compaction.
    let three = tree_with_states(
        &[
            (0, 3, 3, "c", "z", 1000),
            (0, 2, 2, "c", "z", 1000),
            (0, 1, 1, "a", "m", 1000),
        ],
        &state,
    );
    assert!(policy
        .pick(&three, &CONTEXT, &RunningCompactions::none())
        .is_some());
    let big = tree_with_states(
        &[(0, 2, 2, "c", "z", 2000), (0, 1, 1, "a", "m", 1000)],
        &state,
    );
    assert!(policy
        .pick(&big, &CONTEXT, &RunningCompactions::none())
        .is_some());
    // Without a round, S is one write buffer (1,000 bytes in CONTEXT) on a tree this small, a
    // unit one flush: any flushed run starts round 1.
    let full = tree(&[(0, 2, 2, "c", "z", 500), (0, 1, 1, "a", "m", 600)]);
    let job = policy
        .pick(&full, &CONTEXT, &RunningCompactions::none())
        .expect("a TM compaction");
    assert_eq!(job.output_level, MAIN_LEVEL);
    assert_eq!(job.output_run, OutputRun::New);
    let runs: Vec<u64> = job.inputs.iter().map(|i| i.run_id).collect();
    assert_eq!(runs, [2, 1], "every top-level run, newest first");
    // It starts round 1 and logs it.
    let state = job.state.as_ref().expect("the round record");
    let started = Round::decode(&state.bytes).expect("decodes");
    assert_eq!(
        (started.number, started.arrivals, started.boundary_run),
        (1, 1, 0)
    );
    assert_eq!(started.unit_bytes, CONTEXT.write_buffer_bytes);
    assert_eq!(
        started.parameters.units, 2,
        "a tiny tree's rounds are the shortest"
    );
    // Without measured rates T_c / T_w is the paper's 0.1.
    assert_eq!(
        started.parameters.t_c / started.parameters.t_w,
        DEFAULT_TC_OVER_TW
    );
    // A TM compaction already running (it holds the top level) blocks another.
    let running = RunningCompactions::new(vec![job]);
    assert_eq!(policy.pick(&full, &CONTEXT, &running), None);
}

#[test]
fn a_round_has_r_units_of_m_over_100_bytes_and_the_measured_times() {
    let policy = policy();
    // 606,000 bytes in the tree: S = max(1000, 606,000 / 100) = 6,060; flushes of 4,000
    // bytes, so a unit is 2 flushes (6,060 / 4,000 = 1.5, rounded), 8,000 bytes, and
    // R = 600,000 / (3 * 8,000) = 25.
    let files = [
        (0, 9, 9, "a", "z", 6_000),
        (1, 5, 5, "a", "z", 100_000),
        (2, 1, 1, "a", "z", 500_000),
    ];
    let context = CompactionContext {
        rates: crate::compaction::MeasuredRates {
            flush_bytes_per_sec: Some(3_000.0),
            compaction_bytes_per_sec: Some(60_000.0),
            flush_bytes: Some(4_000.0),
        },
        ..CONTEXT
    };
    let started = policy.next_round(None, &tree(&files), &context);
    assert_eq!((started.unit_bytes, started.unit_flushes), (6_060, 2));
    assert_eq!(started.parameters.units, 25);
    assert_eq!(
        started.boundary_run, 5,
        "the main level's run is an earlier round's"
    );
    assert!((started.parameters.t_w - 8_000.0 / 3_000.0).abs() < 1e-12);
    assert!((started.parameters.t_c - 8_000.0 / 60_000.0).abs() < 1e-12);
    // A tree of 10 MB: S = 100,060, 25 flushes, R = 10,000,000 / (3 * 100,000) = 33.3, capped
    // at max_units = 32.
    let bigger = [
        (0, 9, 9, "a", "z", 6_000),
        (1, 5, 5, "a", "z", 2_000_000),
        (2, 1, 1, "a", "z", 8_000_000),
    ];
    let capped = policy.next_round(None, &tree(&bigger), &context);
    assert_eq!((capped.unit_flushes, capped.parameters.units), (25, 32));
    // 10 bits per key of Bloom filter below the top level.
    let f = started.parameters.false_positive_rate;
    assert!(
        (f - crate::filter::bloom::false_positive_rate(10.0)).abs() < 1e-12,
        "{f}"
    );
    // A round in progress only counts the arrival.
    let next = policy.next_round(Some(&started), &tree(&files), &context);
    assert_eq!(
        next,
        Round {
            arrivals: 2,
            ..started
        }
    );
}

/// The picker follows the DP's schedule: the paper's Table 4 round (R = 7, `T_c / T_w` in
/// (1/3, 1/2]), unit by unit, then the global compaction and the next round.
#[test]
fn the_picker_reaches_the_schedules_layout_after_every_unit() {
    let p = parameters(7, 0.4);
    let expected = layouts(7, &policy().schedule(&p));
    assert_eq!(expected, ["1", "11", "3", "31", "32", "321", "3211"]);
    // A round whose first TM compaction is still to come (arrivals 0), and a last level.
    let mut tree = Synthetic::new(tree_with_states(
        &[(2, 1, 1, "a", "z", 21 * UNIT)],
        &[round(1, 0, 0, p).encode()],
    ));
    let mut seen = Vec::new();
    for arrival in 1..=7 {
        tree.flush();
        let mut layout_at_global = None;
        let jobs = tree.settle_seeing(|tree, job| {
            if job.reason.starts_with("global") {
                layout_at_global = Some(tree.main_layout());
            }
        });
        assert!(jobs[0].reason.starts_with("TM"), "{:?}", jobs[0]);
        if arrival < 7 {
            assert_eq!(layout_at_global, None, "the round is still open");
            seen.push(tree.main_layout());
        } else {
            // The round closed: its global compaction took the layout the schedule reached.
            let global = jobs.last().expect("a global compaction");
            assert!(global.reason.starts_with("global"), "{global:?}");
            assert_eq!(global.output_level, LAST_LEVEL);
            seen.extend(layout_at_global);
            assert_eq!(
                tree.main_layout(),
                "",
                "the main level is empty after the global"
            );
            assert_eq!(tree.version.levels()[LAST_LEVEL].runs().len(), 1);
            assert_eq!(tree.version.levels()[LAST_LEVEL].bytes(), 28 * UNIT);
        }
    }
    assert_eq!(seen, expected);
    let merges_logged = merges_done(&tree.version, 1);
    assert_eq!(merges_logged as usize, policy().schedule(&p).len() - 1);
    // The next unit starts round 2, solved from the tree as it is now.
    tree.flush();
    let jobs = tree.settle();
    let round2 = stored_round(&tree.version).expect("round 2");
    assert_eq!((round2.number, round2.arrivals), (2, 1), "{jobs:?}");
    assert_eq!(round2.boundary_run, 0, "no earlier round's run is left");
}

/// ML merges run beside TM compactions (each on its own worker, as in the paper), one merge at
/// a time, and never beside the global compaction.
#[test]
fn merges_run_beside_tm_compactions_one_merge_at_a_time() {
    let p = parameters(7, 0.4);
    // Three unit runs of round 1 (the schedule merges all three at the third arrival), a full
    // top level, and a last level.
    let files = [
        (0, 20, 20, "a", "z", UNIT),
        (1, 12, 12, "a", "z", UNIT),
        (1, 11, 11, "a", "z", UNIT),
        (1, 10, 10, "a", "z", UNIT),
        (2, 1, 1, "a", "z", 21 * UNIT),
    ];
    let shape = tree_with_states(&files, &[round(1, 3, 0, p).encode()]);
    let policy = policy();
    let none = RunningCompactions::none();
    let tm = policy.pick(&shape, &CONTEXT, &none).expect("the TM first");
    assert!(tm.reason.starts_with("TM"), "{tm:?}");
    let ml = policy
        .pick(&shape, &CONTEXT, &RunningCompactions::new(vec![tm.clone()]))
        .expect("the ML merge beside it");
    assert!(ml.reason.starts_with("ML"), "{ml:?}");
    let runs: Vec<u64> = ml.inputs.iter().map(|i| i.run_id).collect();
    assert_eq!(runs, [12, 11, 10]);
    assert_eq!(
        ml.output_run,
        OutputRun::Existing(12),
        "in place, as the newest input"
    );
    assert_eq!(ml.state, Some(encode_merges_done(1, 1)));
    assert!(ml.rewrites_in_place());
    // Both at once: nothing more. The ML alone: the TM may go.
    let both = RunningCompactions::new(vec![tm.clone(), ml.clone()]);
    assert_eq!(policy.pick(&shape, &CONTEXT, &both), None);
    let only_ml = RunningCompactions::new(vec![ml.clone()]);
    assert_eq!(policy.pick(&shape, &CONTEXT, &only_ml), Some(tm.clone()));
    // A global compaction in flight (writing the last level) holds merges back.
    let global = CompactionJob {
        inputs: vec![RunInput {
            level: LAST_LEVEL,
            run_id: 1,
            file_numbers: vec![1],
        }],
        output_level: LAST_LEVEL,
        output_run: OutputRun::New,
        reason: "global".into(),
        state: None,
        action: JobAction::Merge,
    };
    let beside_global = RunningCompactions::new(vec![tm, global]);
    assert_eq!(policy.pick(&shape, &CONTEXT, &beside_global), None);
    // Before its arrival a merge waits.
    let early = tree_with_states(&files[1..], &[round(1, 2, 0, p).encode()]);
    assert_eq!(policy.pick(&early, &CONTEXT, &none), None);
}

/// A closed round's runs go to the last level with the global compaction while the next round's
/// units keep arriving; the next round's runs (newer than its boundary) stay.
#[test]
fn the_global_compaction_takes_only_the_closed_rounds_runs() {
    let p = parameters(7, 0.4);
    let files = [
        (1, 31, 31, "a", "z", UNIT),
        (1, 30, 30, "a", "z", UNIT),
        (1, 12, 12, "a", "z", 4 * UNIT),
        (1, 11, 11, "a", "z", 3 * UNIT),
        (2, 1, 1, "a", "z", 21 * UNIT),
    ];
    // Round 2 started (boundary 12) and has brought two units.
    let shape = tree_with_states(&files, &[round(2, 2, 12, p).encode()]);
    let policy = policy();
    let global = policy
        .pick(&shape, &CONTEXT, &RunningCompactions::none())
        .expect("the global compaction");
    assert!(global.reason.starts_with("global: round 1"), "{global:?}");
    let inputs: Vec<(usize, u64)> = global.inputs.iter().map(|i| (i.level, i.run_id)).collect();
    assert_eq!(inputs, [(1, 12), (1, 11), (2, 1)]);
    assert_eq!(global.output_level, LAST_LEVEL);
    // While a merge of round 1 still holds run 11, the global waits.
    let held = CompactionJob {
        inputs: vec![RunInput {
            level: MAIN_LEVEL,
            run_id: 11,
            file_numbers: vec![11],
        }],
        output_level: MAIN_LEVEL,
        output_run: OutputRun::Existing(11),
        reason: "ML".into(),
        state: None,
        action: JobAction::Merge,
    };
    let job = policy.pick(&shape, &CONTEXT, &RunningCompactions::new(vec![held]));
    assert!(
        job.as_ref()
            .is_none_or(|job| !job.reason.starts_with("global")),
        "{job:?}"
    );
}

/// A tree another policy built (levels 1 to 3, no EcoTune state): the first TM compaction starts
/// round 1 with the old runs closed, and the global compaction merges them into the deepest
/// level.
#[test]
fn a_tree_from_another_policy_is_taken_over() {
    let files = [
        (0, 40, 40, "a", "z", UNIT),
        (1, 3, 3, "a", "z", 2 * UNIT),
        (2, 2, 2, "a", "z", 5 * UNIT),
        (3, 1, 1, "a", "z", 20 * UNIT),
    ];
    let mut tree = Synthetic::new(tree(&files));
    let jobs = tree.settle();
    assert!(jobs[0].reason.starts_with("TM"), "{jobs:?}");
    let started = Round::decode(&jobs[0].state.as_ref().expect("a round").bytes).expect("decodes");
    assert_eq!(started.boundary_run, 3);
    let global = jobs
        .iter()
        .find(|j| j.reason.starts_with("global"))
        .expect("a global");
    assert_eq!(global.output_level, 3);
    let inputs: Vec<(usize, u64)> = global.inputs.iter().map(|i| (i.level, i.run_id)).collect();
    assert_eq!(inputs, [(1, 3), (2, 2), (3, 1)]);
    // Round 1's unit stays on the main level.
    assert_eq!(tree.main_layout(), "1");
    assert_eq!(tree.version.levels()[3].bytes(), 27 * UNIT);
}

#[test]
fn writes_slow_down_at_twice_the_top_levels_capacity_and_stop_at_four_times() {
    let policy = policy();
    let pressure = |bytes: u64| {
        let shape = tree_with_states(
            &[(0, 5, 5, "a", "z", bytes)],
            &[round(1, 1, 0, parameters(7, 0.4)).encode()],
        );
        policy.write_pressure(&shape, &CONTEXT)
    };
    assert_eq!(pressure(UNIT), WritePressure::None);
    assert_eq!(pressure(2 * UNIT - 1), WritePressure::None);
    assert_eq!(pressure(2 * UNIT), WritePressure::Slowdown);
    assert_eq!(pressure(4 * UNIT), WritePressure::Stop);
    assert!(policy.indexes_top_level());
    let without = EcoTune::new(EcoTuneSettings {
        top_level_index: false,
        ..EcoTuneSettings::default()
    })
    .expect("valid");
    assert!(!without.indexes_top_level());
    assert!(
        without.name().contains("no top-level index"),
        "{}",
        without.name()
    );
}

/// The engine's conflict rule: two jobs may share an output level only if one starts a new run
/// and the other rewrites runs of that level in place.
#[test]
fn a_new_run_and_an_in_place_rewrite_may_share_a_level_and_nothing_else_may() {
    let job = |inputs: &[(usize, u64, u64)], output_run: OutputRun| CompactionJob {
        inputs: inputs
            .iter()
            .map(|&(level, run_id, file)| RunInput {
                level,
                run_id,
                file_numbers: vec![file],
            })
            .collect(),
        output_level: 1,
        output_run,
        reason: "test".into(),
        state: None,
        action: JobAction::Merge,
    };
    let new_run = job(&[(0, 20, 20)], OutputRun::New);
    let rewrite = job(&[(1, 12, 12), (1, 11, 11)], OutputRun::Existing(12));
    let other_rewrite = job(&[(1, 10, 10), (1, 9, 9)], OutputRun::Existing(10));
    let join_other = job(&[(0, 21, 21)], OutputRun::Existing(12));
    let another_new = job(&[(0, 22, 22)], OutputRun::New);
    assert!(rewrite.rewrites_in_place());
    assert!(
        !join_other.rewrites_in_place(),
        "joins a run it does not take as input"
    );
    let running = |jobs: &[&CompactionJob]| {
        RunningCompactions::new(jobs.iter().map(|&j| j.clone()).collect())
    };
    assert_eq!(running(&[&new_run]).conflict(&rewrite), None);
    assert_eq!(running(&[&rewrite]).conflict(&new_run), None);
    assert!(running(&[&new_run]).conflict(&another_new).is_some());
    assert!(running(&[&rewrite]).conflict(&other_rewrite).is_some());
    assert!(running(&[&rewrite]).conflict(&join_other).is_some());
    // A shared input file conflicts whatever the outputs.
    let same_input = job(&[(1, 12, 12)], OutputRun::New);
    assert!(running(&[&rewrite]).conflict(&same_input).is_some());
}

/// The window's mix of `queries` queries, a share `r` of them long scans of `k` entries.
fn mix(queries: u64, r: f64, k: u64) -> crate::stats::WorkloadMix {
    let long_scans = (queries as f64 * r).round() as u64;
    crate::stats::WorkloadMix {
        counts: crate::stats::WorkloadTotals {
            point_lookups: queries / 2,
            seeks: queries - queries / 2,
            long_scans,
            long_scan_entries: long_scans * k,
            scan_entries: long_scans * k,
            ..Default::default()
        },
    }
}

#[test]
fn r_and_k_come_from_the_engines_window_unless_set() {
    let files = [
        (0, 9, 9, "a", "z", 6_000),
        (1, 5, 5, "a", "z", 100_000),
        (2, 1, 1, "a", "z", 500_000),
    ];
    let live = policy();
    assert_eq!(live.settings().long_scan_ratio, None, "live by default");
    // Nothing measured, no earlier round: the paper's r and K.
    let first = live.next_round(None, &tree(&files), &CONTEXT);
    assert_eq!(first.parameters.long_scan_ratio, DEFAULT_LONG_SCAN_RATIO);
    assert_eq!(first.unit_bytes, 606_000 / 100);
    // The window says r = 0.1 with scans of 400 entries: the round takes both (S = M / 400).
    let measured = CompactionContext {
        workload: Some(mix(20_000, 0.1, 400)),
        ..CONTEXT
    };
    let round = live.next_round(None, &tree(&files), &measured);
    assert!((round.parameters.long_scan_ratio - 0.1).abs() < 1e-12);
    assert_eq!(round.unit_bytes, 606_000 / 400);
    assert_eq!(live.long_scan_ratio(None, &measured), (0.1, true));
    // The mix changes to r = 0.5: the next round follows it; a round in progress keeps its r
    // (its schedule is a function of its record).
    let changed = CompactionContext {
        workload: Some(mix(20_000, 0.5, 100)),
        ..CONTEXT
    };
    let closed = Round {
        arrivals: round.parameters.units,
        ..round
    };
    let next = live.next_round(Some(&closed), &tree(&files), &changed);
    assert_eq!(next.number, round.number + 1);
    assert!((next.parameters.long_scan_ratio - 0.5).abs() < 1e-12);
    let open = live.next_round(Some(&round), &tree(&files), &changed);
    assert_eq!(open.parameters, round.parameters);
    // Too few queries in the window: the previous round's r stands.
    let sparse = CompactionContext {
        workload: Some(mix(500, 0.9, 100)),
        ..CONTEXT
    };
    let kept = live.next_round(Some(&closed), &tree(&files), &sparse);
    assert!((kept.parameters.long_scan_ratio - 0.1).abs() < 1e-12);
    assert_eq!(live.long_scan_ratio(Some(&closed), &sparse), (0.1, false));
    // A setting overrides the window.
    let fixed = EcoTune::new(EcoTuneSettings {
        long_scan_ratio: Some(0.7),
        scan_length: Some(100),
        ..EcoTuneSettings::default()
    })
    .expect("valid");
    let round = fixed.next_round(None, &tree(&files), &measured);
    assert!((round.parameters.long_scan_ratio - 0.7).abs() < 1e-12);
    assert_eq!(round.unit_bytes, 606_000 / 100);
    assert!(fixed.name().contains("r=0.7"));
    assert!(live.name().contains("r=live"));
}

#[test]
fn without_range_filters_short_seeks_pay_per_run_as_long_scans_do() {
    let files = [
        (0, 9, 9, "a", "z", 6_000),
        (1, 5, 5, "a", "z", 100_000),
        (2, 1, 1, "a", "z", 500_000),
    ];
    let live = policy();
    // Half the queries are range lookups, a tenth long scans (the rest short seeks).
    let window = mix(20_000, 0.1, 400);
    let with_filters = CompactionContext {
        workload: Some(window),
        ..CONTEXT
    };
    assert_eq!(live.long_scan_ratio(None, &with_filters), (0.1, true));
    let without = CompactionContext {
        range_filters: false,
        ..with_filters
    };
    assert_eq!(
        live.long_scan_ratio(None, &without),
        (0.5, true),
        "every range lookup opens every run"
    );
    let round = live.next_round(None, &tree(&files), &without);
    assert!((round.parameters.long_scan_ratio - 0.5).abs() < 1e-12);
    // The paper's formula is unchanged: each query paying per run counts `e + 2` runs.
    let p = round.parameters;
    assert!((p.q(3) - 1.0 / (5.0 * 0.5 + 0.5 * (1.0 + p.false_positive_rate))).abs() < 1e-12);
    // K still comes from the long scans alone.
    assert_eq!(round.unit_bytes, 606_000 / 400);
    // A setting is taken as it is.
    let fixed = EcoTune::new(EcoTuneSettings {
        long_scan_ratio: Some(0.2),
        ..EcoTuneSettings::default()
    })
    .expect("valid");
    assert_eq!(fixed.long_scan_ratio(None, &without), (0.2, false));
}
