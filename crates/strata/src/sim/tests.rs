use std::collections::HashSet;

use super::merge::merge;
use super::*;
use crate::alloc::max_file_bits_per_key;

/// `strata simulate`'s defaults with a small tree: 60 flushes of 1,000 entries, compaction
/// outputs of 2,000, size ratio 3, 5 bits per key.
fn config() -> SimConfig {
    SimConfig {
        compaction: CompactionKind::Leveling,
        filter_policy: FilterAllocatorKind::Elastic,
        bits_per_key: 5.0,
        num: 60_000,
        write_buffer_bytes: 116_000,
        size_ratio: 3.0,
        garnering_c: crate::policy::DEFAULT_GARNERING_C,
        entry_bytes: 116,
        key_space: None,
        target_file_bytes: Some(232_000),
        level0_compaction_trigger: 4,
        max_background_compactions: 1,
    }
}

/// SplitMix64's uniform draws from `seed`.
fn draws(seed: u64) -> UniformDraws {
    let mut stream = SplitMix64::new(seed);
    Box::new(move || stream.unit())
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

/// Leveling with two workers picks a second job beside a running one where two levels need a
/// job at once: at T = 2 a merge from level 0 and a move between deeper levels do. Whether they
/// coincide depends on the draws (each level's job may be done before the next flush, and by
/// RocksDB's score a level's bytes held by a running job do not count): on 60 flushes of seed
/// 42 static leveling's moves of several adjacent files drain the levels before they do, so
/// the tree here takes 120.
#[test]
fn leveling_with_two_workers_runs_two_jobs_at_once() {
    for compaction in [CompactionKind::Leveling, CompactionKind::LevelingDynamic] {
        let config = SimConfig {
            compaction,
            filter_policy: FilterAllocatorKind::Uniform,
            size_ratio: 2.0,
            num: 120_000,
            max_background_compactions: 2,
            ..config()
        };
        let summary = Simulation::new(&config, draws(42))
            .expect("valid settings")
            .run(&mut |_, _| -> Result<()> { Ok(()) })
            .expect("runs");
        assert_eq!(summary.most_jobs_in_flight, 2, "{}", compaction.name());
    }
}

#[test]
fn every_policy_with_every_allocator_keeps_the_tree_valid() {
    for &compaction in CompactionKind::all() {
        for &filter_policy in FilterAllocatorKind::all() {
            for workers in [1, 2] {
                let config = SimConfig {
                    compaction,
                    filter_policy,
                    max_background_compactions: workers,
                    ..config()
                };
                let label = format!("{} {} W={workers}", compaction.name(), filter_policy.name());
                let simulation = Simulation::new(&config, draws(42)).expect("valid settings");
                let cap = simulation.allocator.bits_per_key_cap();
                let policy = std::sync::Arc::clone(&simulation.policy);
                let mut flushed = 0;
                let mut steps = 0;
                let mut last_tree = Version::default();
                let summary = simulation
                    .run(&mut |step, tree| -> Result<()> {
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
                            assert!(file.bits_per_key() <= max_file_bits_per_key(5.0), "{label}");
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
                // Jobs here finish before the next flush, so a second job is in flight only when
                // two levels need one at once (see the test below for leveling).
                assert!(
                    (1..=workers).contains(&summary.most_jobs_in_flight),
                    "{label}: {} jobs in flight",
                    summary.most_jobs_in_flight
                );
                assert_eq!(summary.sorted_runs, last_tree.run_count(), "{label}");
                // The shape the policy states (`CompactionPolicy::max_runs`). Moose's merges
                // take a level's K runs down while a flush or an upper merge may add one more, so
                // its final tree may hold one run above K on a level.
                let last = last_tree.last_non_empty_level().unwrap_or(1).max(1);
                let in_flight = usize::from(compaction == CompactionKind::Moose);
                for (index, level) in last_tree.levels().iter().enumerate().skip(1) {
                    let most = policy.max_runs(index, last) + in_flight;
                    assert!(
                        level.runs().len() <= most,
                        "{label}: level {index} has {} runs, at most {most}",
                        level.runs().len()
                    );
                }
                if compaction == CompactionKind::Moose {
                    assert!(last <= 4, "{label}: nothing below Moose's last level 4");
                }
                if compaction == CompactionKind::Ecotune {
                    let below: usize = last_tree.levels()[2..].iter().map(|l| l.runs().len()).sum();
                    assert!(below <= 1, "{label}: one last-level run");
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
    let pieces = merge(&full.iter().collect::<Vec<_>>(), 300, None);
    assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 1000);
    assert_eq!(pieces.len(), 4);
    assert_eq!(pieces.first().map(|p| p.smallest), Some(0));
    assert_eq!(pieces.last().map(|p| p.largest), Some(999));
    for pair in pieces.windows(2) {
        assert!(pair[0].largest < pair[1].smallest, "{pieces:?}");
    }
    // Two half-dense files over the same keys: 1000 * (1 - 0.5 * 0.5) = 750 distinct.
    let half = [file(1, 0, 999, 500), file(2, 0, 999, 500)];
    let pieces = merge(&half.iter().collect::<Vec<_>>(), 10_000, None);
    assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 750);
    // Disjoint files: nothing overwritten, the gap between them left out of both ends.
    let apart = [file(1, 0, 99, 50), file(2, 1000, 1099, 50)];
    let pieces = merge(&apart.iter().collect::<Vec<_>>(), 50, None);
    assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 100);
    assert_eq!(pieces.first().map(|p| p.smallest), Some(0));
    assert_eq!(pieces.last().map(|p| p.largest), Some(1099));
    // Narrow ranges cut into more files than keys: no empty or overlapping file.
    let narrow = [file(1, 10, 12, 3), file(2, 10, 12, 3)];
    let pieces = merge(&narrow.iter().collect::<Vec<_>>(), 1, None);
    assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 3);
    for piece in &pieces {
        assert!(piece.smallest <= piece.largest && piece.entries > 0);
    }
    for pair in pieces.windows(2) {
        assert!(pair[0].largest < pair[1].smallest, "{pieces:?}");
    }
}

#[test]
fn a_merge_above_files_below_is_cut_at_their_boundaries_as_the_executor_cuts_it() {
    let file =
        FileMetadata::new(1, &0u64.to_be_bytes(), &9_999u64.to_be_bytes()).with_entries(10_000);
    let inputs = [&file];
    let spans = |pieces: &[super::merge::Piece]| -> Vec<(u64, u64, u64)> {
        pieces
            .iter()
            .map(|p| (p.smallest, p.largest, p.entries))
            .collect()
    };
    // No run below: ten files of the target.
    let plain = merge(&inputs, 1_000, None);
    assert_eq!(plain.len(), 10);
    assert!(plain.iter().all(|p| p.entries == 1_000), "{plain:?}");
    // A run below the merge's range but not overlapping it: the target still ends every file.
    let elsewhere = merge(&inputs, 1_000, Some(&[(20_000, 29_999)]));
    assert_eq!(spans(&elsewhere), spans(&plain));
    // Files below at 0..=599 and 700..=9,999: the first output ends where the keys leave the
    // first file below, holding 600 >= 55% of the target; the next crosses into the second file
    // with 100 (< 55%) and grows to twice the target inside it, as do the ones after it.
    let pieces = merge(&inputs, 1_000, Some(&[(0, 599), (700, 9_999)]));
    assert_eq!(
        spans(&pieces),
        vec![
            (0, 599, 600),
            (600, 2_599, 2_000),
            (2_600, 4_599, 2_000),
            (4_600, 6_599, 2_000),
            (6_600, 8_599, 2_000),
            (8_600, 9_999, 1_400),
        ]
    );
    // Four files below of 2,500 keys: an output that crossed two boundaries (leaving one file,
    // entering the next) is cut from 60% of the target, so one holding 500 runs on and one
    // holding 1,000 ends at the boundary.
    let quarters = [(0, 2_499), (2_500, 4_999), (5_000, 7_499), (7_500, 9_999)];
    let pieces = merge(&inputs, 1_000, Some(&quarters));
    assert_eq!(
        spans(&pieces),
        vec![
            (0, 1_999, 2_000),
            (2_000, 3_999, 2_000),
            (4_000, 4_999, 1_000),
            (5_000, 6_999, 2_000),
            (7_000, 8_999, 2_000),
            (9_000, 9_999, 1_000),
        ]
    );
    // Half-dense input: the shares are rounded to the merge's total, no file overlaps the next.
    let sparse =
        FileMetadata::new(2, &0u64.to_be_bytes(), &9_999u64.to_be_bytes()).with_entries(3_333);
    let pieces = merge(&[&sparse], 400, Some(&quarters));
    assert_eq!(pieces.iter().map(|p| p.entries).sum::<u64>(), 3_333);
    assert!(pieces.iter().all(|p| p.entries <= 801), "{pieces:?}");
    for pair in pieces.windows(2) {
        assert!(pair[0].largest < pair[1].smallest, "{pieces:?}");
    }
}

#[test]
fn invalid_settings_are_errors() {
    type Spoil = fn(&mut SimConfig);
    let invalid: [(&str, Spoil); 7] = [
        ("entry_bytes", |c| c.entry_bytes = 0),
        ("num", |c| c.num = 0),
        ("max_background_compactions", |c| {
            c.max_background_compactions = 0
        }),
        ("key_space", |c| c.key_space = Some(0)),
        ("size_ratio", |c| c.size_ratio = 1.0),
        ("bits_per_key", |c| c.bits_per_key = -1.0),
        ("write_buffer_bytes", |c| c.write_buffer_bytes = 10),
    ];
    for (what, spoil) in invalid {
        let mut config = config();
        spoil(&mut config);
        assert!(Simulation::new(&config, draws(42)).is_err(), "{what}");
    }
    // A field out of range is named as the field; the policies' own settings are not checked
    // before they are built.
    let mut config = config();
    config.entry_bytes = 0;
    assert_eq!(
        config.check(),
        Err(InvalidSetting {
            field: "entry_bytes",
            requirement: "must be at least 1"
        })
    );
    config = SimConfig {
        size_ratio: 1.0,
        ..self::config()
    };
    assert_eq!(config.check(), Ok(()));
}

#[test]
fn a_flush_writes_one_file_of_the_buffer_entries_with_the_allocators_bits() {
    // Uniform filters: every file's filter holds the budget's 5 bits per key (the default
    // elastic filters write three modules of half the budget on disk).
    let config = SimConfig {
        num: 5000,
        filter_policy: FilterAllocatorKind::Uniform,
        ..config()
    };
    let mut steps = Vec::new();
    let summary = Simulation::new(&config, draws(42))
        .expect("valid settings")
        .run(&mut |step, _| -> Result<()> {
            steps.push(step.clone());
            Ok(())
        })
        .expect("runs");
    assert_eq!(summary.flushes, 5);
    assert_eq!(steps.len() as u64, steps.last().expect("a step").step);
    assert_eq!(steps[0].kind, StepKind::Flush);
    assert_eq!(steps[0].levels[0].entries, 1000);
    assert_eq!(steps[0].levels[0].bits_per_key, 5.0);
}

#[test]
fn seeded_draws_are_uniform_in_the_unit_interval_and_repeat_per_seed() {
    let mut a = seeded_draws(7);
    let mut b = seeded_draws(7);
    let mut other = seeded_draws(8);
    let draws: Vec<f64> = (0..10_000).map(|_| a()).collect();
    assert!(draws.iter().all(|&x| (0.0..1.0).contains(&x)));
    let mean = draws.iter().sum::<f64>() / draws.len() as f64;
    assert!((mean - 0.5).abs() < 0.02, "{mean}");
    assert!(draws.iter().all(|&x| x == b()));
    assert_ne!(draws[0], other());
}
