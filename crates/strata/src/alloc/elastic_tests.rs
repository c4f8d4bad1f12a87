use super::*;
use crate::alloc::test_support::{flush as flush_into, outputs};
use crate::alloc::AsDyn;
use crate::alloc::{JobInput, JobKind};

/// A flush into run 99.
fn flush(outputs: &[NewFile]) -> FilterJob<'_> {
    flush_into(outputs, 99)
}

fn file(number: u64, lo: &str, hi: &str, entries: u64, bits: f64) -> FileMetadata {
    FileMetadata::new(number, lo.as_bytes(), hi.as_bytes())
        .with_entries(entries)
        .with_file_bytes(entries * 100)
        .with_filter(bits, (entries as f64 * bits / 8.0) as u64)
}

/// The whole modules of a selection.
fn whole(in_use: Vec<InUse>) -> Vec<usize> {
    in_use.iter().map(|used| used.modules).collect()
}

/// The state of files with three 1-bit modules each, `(file, modules in use)`.
fn three_module_state(files: &[(u64, u8)]) -> PolicyState {
    let files: Vec<(u64, u8, u8)> = files
        .iter()
        .map(|&(number, in_use)| (number, 3, in_use))
        .collect();
    module_state(&files)
}

/// Bits in use over the tree's entries, and the budget's bits.
fn in_use_and_budget(allocator: &Elastic, tree: &Version) -> (f64, f64) {
    let mut bits = 0.0;
    let mut entries = 0.0;
    for (_, run, file) in tree.files() {
        bits += allocator.as_dyn().bits_per_key_in_use(run, file) * file.entries() as f64;
        entries += file.entries() as f64;
    }
    (bits, allocator.bits_per_key_budget() * entries)
}

/// Runs `job` on `tree` and returns the tree after it (each output a run of its own on level
/// `level`, over `range`), as the engine would install it.
fn apply(
    allocator: &Elastic,
    tree: &Version,
    job: &FilterJob<'_>,
    level: usize,
    range: (&str, &str),
) -> Version {
    let bits = allocator.allocate(tree, job);
    assert_eq!(bits.len(), job.outputs.len());
    let mut builder = Version::builder();
    for (file_level, run, existing) in tree.files() {
        if !job.is_input(existing.number()) {
            builder = builder.add_file(file_level, run, existing.copy_facts());
        }
    }
    for (output, bits) in job.outputs.iter().zip(bits) {
        let built =
            crate::alloc::built_file_bits_per_key(bits, allocator.output_module_bits(level));
        // Each output a run of its own (flushes: one file each).
        builder = builder.add_file(
            level,
            output.file_number,
            file(output.file_number, range.0, range.1, output.entries, built),
        );
    }
    builder.build().expect("builds")
}

#[test]
fn the_greedy_choice_never_exceeds_the_budget_and_prefers_value_per_bit() {
    let candidate = |number, entries: f64, weight, modules| Candidate {
        number,
        entries,
        weight,
        module_bits: 1.0,
        modules,
        partitions: 1,
        family: FilterFamily::Bloom,
    };
    // Two files of 1,000 entries, one reached by every lookup, one by a tenth of them.
    let candidates = [candidate(1, 1000.0, 1.0, 6), candidate(2, 1000.0, 0.1, 6)];
    for budget in [0.0, 500.0, 1000.0, 2500.0, 4000.0, 12_000.0, 20_000.0] {
        let in_use = whole(select(&candidates, budget));
        let used: f64 = in_use.iter().map(|&modules| modules as f64 * 1000.0).sum();
        assert!(used <= budget, "{used} over {budget}");
        // Spent to within one module, or everything on disk is in use.
        assert!(
            used > budget - 1000.0 || in_use == [6, 6],
            "{used} of {budget}: {in_use:?}"
        );
        assert!(in_use[0] >= in_use[1], "the hot file first: {in_use:?}");
    }
    // With 4 modules' worth, the hot file's third module (gain 1 * e^-0.96 * (1 - e^-0.48))
    // is still worth more than the cold file's first (0.1 * (1 - e^-0.48)).
    assert_eq!(whole(select(&candidates, 4000.0)), vec![4, 0]);
    // No module of a zero-entry or zero-module candidate.
    let odd = [candidate(1, 0.0, 1.0, 6), candidate(2, 10.0, 1.0, 0)];
    assert_eq!(whole(select(&odd, 1e9)), vec![0, 0]);
}

#[test]
fn a_flush_into_an_empty_tree_gets_its_share_in_use_and_more_on_disk() {
    let allocator = Elastic::new(2.0).expect("valid");
    let files = outputs(&[1000]);
    let tree = apply(
        &allocator,
        &Version::default(),
        &flush(&files),
        0,
        ("a", "z"),
    );
    let (_, _, only) = tree.files().next().expect("one file");
    // Modules of the budget's 2 bits per key, six on disk (a level-0 file), one in use: exactly
    // the budget. Below level 0, modules of half the budget.
    assert_eq!(allocator.as_dyn().filter_module_bits_per_key(0), 2.0);
    assert_eq!(allocator.as_dyn().filter_module_bits_per_key(1), 1.0);
    assert_eq!(allocator.as_dyn().filter_module_bits_per_key(5), 1.0);
    assert!((only.bits_per_key() - 12.0).abs() < 1e-9);
    assert_eq!(
        allocator.filter_modules_in_use(99, only),
        ModulesInUse::prefix(1)
    );
    assert!((allocator.as_dyn().bits_per_key_in_use(99, only) - 2.0).abs() < 1e-9);
    assert_eq!(allocator.as_dyn().bits_per_key_cap(), Some(2.0));
}

#[test]
fn the_budget_is_a_hard_cap_and_spent_as_the_tree_changes() {
    // A tree that grows by flushes and then merges them: the modules in use never exceed the
    // budget and never fall below 0.95 of it, although no file is rewritten.
    let allocator = Elastic::new(2.0).expect("valid");
    let mut tree = Version::default();
    let mut next = 1u64;
    for round in 0..6 {
        for _ in 0..3 {
            let files = vec![NewFile {
                file_number: next,
                entries: 1000,
                access: None,
                filter_layout: crate::FilterLayout::default(),
            }];
            next += 1;
            tree = apply(&allocator, &tree, &flush(&files), 0, ("k00a", "k15z"));
            let (used, budget) = in_use_and_budget(&allocator, &tree);
            assert!(
                used <= budget * (1.0 + 1e-9),
                "round {round}: {used} > {budget}"
            );
            assert!(
                used >= 0.95 * budget,
                "round {round}: {used} < 0.95 x {budget}"
            );
        }
        // Merge everything into the last level as 16 key-range-partitioned files.
        let inputs: Vec<JobInput> = tree
            .files()
            .map(|(level, run_id, file)| JobInput {
                level,
                run_id,
                file_number: file.number(),
            })
            .collect();
        let total: u64 = tree.files().map(|(_, _, file)| file.entries()).sum();
        let merged: Vec<NewFile> = (0..16)
            .map(|i| NewFile {
                file_number: next + i,
                entries: total / 16,
                access: None,
                filter_layout: crate::FilterLayout::default(),
            })
            .collect();
        next += 16;
        let job = FilterJob {
            kind: JobKind::Compaction,
            inputs: &inputs,
            output_level: 2,
            output_run_id: 99,
            outputs: &merged,
        };
        let bits = allocator.allocate(&tree, &job);
        let mut builder = Version::builder();
        for (index, (output, bits)) in merged.iter().zip(bits).enumerate() {
            let (lo, hi) = (format!("k{index:02}a"), format!("k{index:02}z"));
            builder = builder.add_file(
                2,
                99,
                file(output.file_number, &lo, &hi, output.entries, bits),
            );
        }
        tree = builder.build().expect("builds");
        let (used, budget) = in_use_and_budget(&allocator, &tree);
        assert!(
            used <= budget * (1.0 + 1e-9),
            "merge {round}: {used} > {budget}"
        );
        assert!(
            used >= 0.95 * budget,
            "merge {round}: {used} < 0.95 x {budget}"
        );
    }
}

#[test]
fn files_reached_by_fewer_lookups_get_fewer_bits() {
    // Two level-1 files of the same size: one covers "a".."y", the other only "y".."z". Without
    // statistics the weights are the key-range shares, so the narrow file gets fewer modules.
    let tree = Version::builder()
        .add_file(1, 1, file(1, "a", "y", 10_000, 0.0))
        .add_file(2, 2, file(2, "y", "z", 10_000, 0.0))
        .build()
        .expect("builds");
    let allocator = Elastic::new(4.0).expect("valid");
    let files = outputs(&[2_000]);
    let after = apply(&allocator, &tree, &flush(&files), 0, ("a", "z"));
    let bits_of = |number: u64| {
        after
            .files()
            .find(|(_, _, file)| file.number() == number)
            .map(|(_, run, file)| allocator.as_dyn().bits_per_key_in_use(run, file))
            .expect("file")
    };
    // The existing files were written by no elastic allocator: opaque, without a filter.
    assert_eq!(bits_of(1), 0.0);
    // The flushed file, reached by every lookup, gets all six modules (of (4 + 10) / 6 bits:
    // level 0's holds the headroom above the budget).
    assert!((bits_of(1000) - 14.0).abs() < 1e-9, "{}", bits_of(1000));

    // Two files with elastic layouts (three 1-bit modules each) and equal entries, one over
    // "a".."y" (24/25 of the range), one over "ya".."z" (1/25), and a third file the state does
    // not name, so the restart divides the budget again: 2 bits per key over 20,000 entries is
    // 40,000 bits, four modules. The wide file's third module still avoids more per bit than
    // the narrow file's first.
    let tree = Version::builder()
        .add_file(1, 1, file(1, "a", "y", 10_000, 3.0))
        .add_file(1, 1, file(2, "ya", "z", 10_000, 3.0))
        .add_file(2, 2, file(3, "a", "z", 1, 0.0))
        .policy_state(three_module_state(&[(1, 0), (2, 0)]))
        .build()
        .expect("builds");
    let allocator = Elastic::new(2.0).expect("valid");
    allocator.as_dyn().restore(&tree);
    let modules_of = |number: u64| {
        tree.files()
            .find(|(_, _, file)| file.number() == number)
            .map(|(_, run, file)| allocator.filter_modules_in_use(run, file).modules)
            .expect("file")
    };
    assert_eq!((modules_of(1), modules_of(2), modules_of(3)), (3, 1, 0));
}

#[test]
fn the_state_round_trips_and_a_restart_resumes_it_exactly() {
    let allocator = Elastic::new(2.0).expect("valid");
    let mut tree = Version::default();
    for number in 1..=5u64 {
        let files = vec![NewFile {
            file_number: number,
            entries: 1000 * number,
            access: None,
            filter_layout: crate::FilterLayout::default(),
        }];
        tree = apply(&allocator, &tree, &flush(&files), 0, ("a", "z"));
    }
    let state = allocator.as_dyn().policy_state().expect("state");
    assert_eq!(state.owner, OWNER);
    let decoded = Selection::decode(&state.bytes).expect("decodes");
    assert_eq!(decoded, **allocator.selection.load());

    // A new process: the same tree with the state in its manifest.
    let mut builder = Version::builder();
    for (level, run, file) in tree.files() {
        builder = builder.add_file(level, run, file.copy_facts());
    }
    let recovered = builder.policy_state(state.clone()).build().expect("builds");
    let restarted = Elastic::new(2.0).expect("valid");
    restarted.as_dyn().restore(&recovered);
    for (_, run, file) in recovered.files() {
        assert_eq!(
            restarted.filter_modules_in_use(run, file),
            allocator.filter_modules_in_use(run, file),
            "file {}",
            file.number()
        );
    }

    // Bytes that are not a state: ignored, the budget divided again within the cap.
    for bad in [
        &b""[..],
        &[9u8][..],
        &state.bytes[..state.bytes.len() - 1],
        &[state.bytes.clone(), vec![0]].concat()[..],
    ] {
        assert!(Selection::decode(bad).is_none());
        let mut builder = Version::builder();
        for (level, run, file) in tree.files() {
            builder = builder.add_file(level, run, file.copy_facts());
        }
        let recovered = builder
            .policy_state(PolicyState {
                owner: OWNER.to_string(),
                bytes: bad.to_vec(),
            })
            .build()
            .expect("builds");
        let restarted = Elastic::new(2.0).expect("valid");
        restarted.as_dyn().restore(&recovered);
        let (used, budget) = in_use_and_budget(&restarted, &recovered);
        assert!(used <= budget + 1e-9, "{used} > {budget}");
    }
}

#[test]
fn invalid_settings_are_refused() {
    assert!(Elastic::new(-1.0).is_err());
    assert!(Elastic::new(f64::NAN).is_err());
    assert!(Elastic::new(2.0)
        .expect("valid")
        .with_module_bits(0.1)
        .is_err());
    for bad in [0.4, 64.5, f64::NAN, f64::INFINITY] {
        assert!(Elastic::new(2.0)
            .expect("valid")
            .with_level0_module_bits(bad)
            .is_err());
    }
    assert!(Elastic::new(2.0)
        .expect("valid")
        .with_disk_modules(7)
        .is_err());
    assert!(Elastic::new(2.0)
        .expect("valid")
        .with_disk_modules(0)
        .is_err());
    // A zero budget builds no filter and uses none.
    let allocator = Elastic::new(0.0).expect("valid");
    let files = outputs(&[100]);
    assert_eq!(
        allocator.allocate(&Version::default(), &flush(&files)),
        vec![0.0]
    );
}

#[test]
fn a_refresh_moves_bits_from_files_whose_data_stays_cached() {
    // Two files over the two halves of the range, equal in size, three 1-bit modules each; a
    // budget of three modules. Lookups read 1,000 data blocks in each: all of file 1's came
    // from the block cache, all of file 2's from the device. A false positive in file 1 costs
    // no I/O, so after a refresh the budget goes to file 2.
    let (tree, allocator) = two_halves();
    assert!(allocator.as_dyn().refreshes_without_statistics());
    allocator.as_dyn().restore(&tree);
    let modules = |number: u64| whole_modules_in_use(&allocator, &tree, number);
    assert_eq!(
        (modules(1), modules(2)),
        (2, 1),
        "the restart keeps the state"
    );
    // 1,000 empty lookups reached each file in the last second, and each read a data block.
    for (_, _, file) in tree.files() {
        let misses = if file.number() == 2 { 1_000 } else { 0 };
        counted(file, 1_000, 0, 1_000, misses);
    }
    assert_eq!(
        tree.files()
            .map(|(_, _, f)| f.state().data_block_reads())
            .collect::<Vec<_>>(),
        vec![(1_000, 0), (1_000, 1_000)]
    );
    allocator.as_dyn().refresh(&tree);
    assert_eq!((modules(1), modules(2)), (0, 3));
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!(used <= budget + 1e-9, "{used} > {budget}");
}

#[test]
fn a_refresh_follows_the_cache_over_many_probes_not_at_a_jump_of_the_window() {
    // The files of the test above, 200,000 empty lookups in each: file 1's reads all hit the
    // cache, file 2's all missed, and a refresh gives file 2 the budget. Then the cache turns
    // around: file 1's reads all miss, file 2's all hit. After 66,000 probes of that, the
    // window of counts the cache model reads moves on at once (`RECENT_WINDOW_PROBES`) and
    // holds only the turned probes, so the measured costs alone would give file 1 the budget;
    // averaged over the newest 65,536 probes, the last 6,000 of them moved them less than a
    // tenth of the way, and the budget stays. Once the turn has lasted many horizons, the
    // budget follows it (DESIGN.md §3.5 "Cache misses, smoothed").
    let (tree, allocator) = two_halves();
    allocator.as_dyn().restore(&tree);
    let modules = |number: u64| whole_modules_in_use(&allocator, &tree, number);
    let lookups = |probes: u64, turned: bool| {
        for (_, _, file) in tree.files() {
            let misses = if (file.number() == 1) == turned {
                probes
            } else {
                0
            };
            counted(file, probes, 0, probes, misses);
        }
        allocator.as_dyn().refresh(&tree);
    };
    lookups(200_000, false);
    assert_eq!((modules(1), modules(2)), (0, 3));
    lookups(60_000, true);
    lookups(6_000, true);
    assert_eq!(
        (modules(1), modules(2)),
        (0, 3),
        "a jump of the window is not followed at once"
    );
    for _ in 0..20 {
        lookups(65_536, true);
    }
    assert_eq!((modules(1), modules(2)), (3, 0), "a lasting turn is");
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!(used <= budget + 1e-9, "{used} > {budget}");
}

#[test]
fn a_refresh_keeps_bits_in_cached_files_when_cached_false_positives_are_measured_dear() {
    // The files of the test above, read alike: file 1's blocks all cached, file 2's all read
    // from the device. Timed probes now price a cached false positive at half a device read
    // (a probe the filter answers 100 ns, one with a cached block 600, one with a device read
    // 1,100), as reads served by the page cache make it. Priced by probe times, file 1's false
    // positives still cost, and it keeps a module where the floor alone gave it none; priced
    // by device reads (the default), the times change nothing.
    let (tree, allocator) = two_halves();
    let allocator = allocator.with_cached_false_positives(CachedFalsePositives::ProbeTimes);
    let (_, by_reads) = two_halves();
    assert_eq!(
        by_reads.cached_false_positives,
        CachedFalsePositives::DeviceReads
    );
    allocator.as_dyn().restore(&tree);
    by_reads.as_dyn().restore(&tree);
    for (_, _, file) in tree.files() {
        let misses = if file.number() == 2 { 1_000 } else { 0 };
        counted(file, 1_000, 0, 1_000, misses);
        let time = |probes: u64, mean: u64| crate::version::ProbeTime {
            probes,
            nanos: probes * mean,
        };
        let times = if file.number() == 1 {
            crate::version::ProbeTimes {
                rejected: time(20, 100),
                cached_block: time(20, 600),
                ..Default::default()
            }
        } else {
            crate::version::ProbeTimes {
                device_block: time(20, 1_100),
                ..Default::default()
            }
        };
        file.state().add_lookup_counts(
            crate::version::LookupCounts {
                probe_times: times,
                ..Default::default()
            },
            std::time::Instant::now(),
        );
    }
    allocator.as_dyn().refresh(&tree);
    let modules = |number: u64| whole_modules_in_use(&allocator, &tree, number);
    assert_eq!((modules(1), modules(2)), (1, 2));
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!(used <= budget + 1e-9, "{used} > {budget}");
    by_reads.as_dyn().refresh(&tree);
    let modules = |number: u64| whole_modules_in_use(&by_reads, &tree, number);
    assert_eq!((modules(1), modules(2)), (0, 3));
}

#[test]
fn level_zero_outputs_get_six_whole_budget_modules_and_deeper_outputs_the_setting() {
    // A flush into level 0 and a compaction into level 1, each of one 1,000-key output: the
    // level-0 file is written with all six modules of the whole budget (every lookup the
    // memtable does not answer probes it, so its optimum lies far above the budget), the
    // level-1 file with the three modules of half the budget of the setting; the budget in use
    // is the same either way.
    let allocator = Elastic::new(2.0).expect("valid");
    let files = outputs(&[1000]);
    let tree = apply(
        &allocator,
        &Version::default(),
        &flush(&files),
        0,
        ("a", "z"),
    );
    let (_, _, level0) = tree.files().next().expect("one file");
    assert!((level0.bits_per_key() - 12.0).abs() < 1e-9);
    assert_eq!(
        allocator.filter_modules_in_use(99, level0),
        ModulesInUse::prefix(1)
    );
    let inputs = [JobInput {
        level: 0,
        run_id: 99,
        file_number: level0.number(),
    }];
    let merged = outputs(&[1000]);
    let job = FilterJob {
        kind: JobKind::Compaction,
        inputs: &inputs,
        output_level: 1,
        output_run_id: 7,
        outputs: &merged,
    };
    let tree = apply(&allocator, &tree, &job, 1, ("a", "z"));
    let (level, _, level1) = tree.files().next().expect("one file");
    assert_eq!(level, 1);
    // Six on level 1 at this budget (`level_one_outputs_hold_the_budget_plus_their_headroom`).
    assert!((level1.bits_per_key() - 6.0).abs() < 1e-9);
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!((used - budget).abs() < 1e-9, "{used} against {budget}");
    // A setting of six modules gives six on every level.
    let six = Elastic::new(2.0)
        .expect("valid")
        .with_disk_modules(6)
        .expect("valid");
    let tree = apply(&six, &Version::default(), &job, 1, ("a", "z"));
    let (_, _, wide) = tree.files().next().expect("one file");
    assert!((wide.bits_per_key() - 6.0).abs() < 1e-9);
    // Below level 1, the setting: three modules of half the budget.
    let deeper = FilterJob {
        output_level: 2,
        ..job
    };
    let tree = apply(&allocator, &Version::default(), &deeper, 2, ("a", "z"));
    let (_, _, level2) = tree.files().next().expect("one file");
    assert!((level2.bits_per_key() - 3.0).abs() < 1e-9);
    // The level-0 module size is a setting of its own; the deeper one does not move it.
    let fine = Elastic::new(2.0)
        .expect("valid")
        .with_level0_module_bits(1.0)
        .expect("valid")
        .with_module_bits(0.5)
        .expect("valid");
    assert_eq!(fine.as_dyn().filter_module_bits_per_key(0), 1.0);
    assert_eq!(fine.as_dyn().filter_module_bits_per_key(1), 0.5);
    let tree = apply(&fine, &Version::default(), &flush(&files), 0, ("a", "z"));
    let (_, _, level0) = tree.files().next().expect("one file");
    assert!((level0.bits_per_key() - 6.0).abs() < 1e-9);
    assert_eq!(
        fine.filter_modules_in_use(99, level0),
        ModulesInUse::prefix(2)
    );
}

#[test]
fn level_zero_modules_hold_the_headroom_below_eight_bits_and_a_quarter_of_the_budget_above() {
    // Six level-0 modules hold at least the budget plus the headroom up to a budget of 6, where
    // half the budget (the deeper files' size) already does; from a budget of 8 up levels 0 and 1
    // are written in modules of a quarter of the budget, deeper levels in halves as before.
    for (budget, level0, level1, deeper) in [
        (1.0, 11.0 / 6.0, 0.5, 0.5),
        (2.0, 2.0, 1.0, 1.0),
        (3.0, 13.0 / 6.0, 1.5, 1.5),
        (4.0, 14.0 / 6.0, 2.0, 2.0),
        (6.0, 3.0, 3.0, 3.0),
        (8.0, 2.0, 2.0, 4.0),
        (10.0, 2.5, 2.5, 5.0),
        (20.0, 5.0, 5.0, 10.0),
        (64.0, 16.0, 16.0, 32.0),
    ] {
        let allocator = Elastic::new(budget).expect("valid");
        let sizing = allocator.as_dyn();
        assert!(
            (sizing.filter_module_bits_per_key(0) - level0).abs() < 1e-12,
            "budget {budget}: level 0 {}",
            sizing.filter_module_bits_per_key(0)
        );
        assert_eq!(
            sizing.filter_module_bits_per_key(1),
            level1,
            "budget {budget}"
        );
        assert_eq!(
            sizing.filter_module_bits_per_key(2),
            deeper,
            "budget {budget}"
        );
        assert_eq!(
            sizing.filter_module_bits_per_key(4),
            deeper,
            "budget {budget}"
        );
        assert!(
            6.0 * level0 >= budget + super::LEVEL0_HEADROOM_BITS_PER_KEY - 1e-9
                || level0 == deeper
                || budget >= super::HIGH_BUDGET_BITS_PER_KEY
        );
    }
    // The default engine's budget of 10: five modules of 2.5 bits on level 0, the budget plus a
    // quarter (12.5 bits per key on disk, where four modules of 5 bits held 20 and six 30), four
    // in use.
    let default = Elastic::default();
    let files = outputs(&[1000]);
    let tree = apply(&default, &Version::default(), &flush(&files), 0, ("a", "z"));
    let (_, _, level0) = tree.files().next().expect("one file");
    assert!(
        (level0.bits_per_key() - 12.5).abs() < 1e-9,
        "{}",
        level0.bits_per_key()
    );
    assert_eq!(
        default.filter_modules_in_use(99, level0),
        ModulesInUse::prefix(4)
    );
}

#[test]
fn level_zero_modules_on_disk_hold_the_budget_plus_the_headroom_and_no_more() {
    // Modules of the level-0 size on disk for a flushed file, by budget: six below a budget of 5
    // (modules of (budget + 10) / 6 bits), then as many modules of half the budget as hold the
    // budget plus 10, never fewer than the deeper files' three; from a budget of 8 up five of a
    // quarter of the budget, the budget plus a quarter.
    for (budget, modules) in [
        (1.0, 6),
        (2.0, 6),
        (3.0, 6),
        (4.0, 6),
        (5.0, 6),
        (6.0, 6),
        (7.0, 5),
        (8.0, 5),
        (10.0, 5),
        (12.0, 5),
        (20.0, 5),
        (64.0, 5),
    ] {
        let allocator = Elastic::new(budget).expect("valid");
        assert_eq!(allocator.level0_disk_modules(), modules, "budget {budget}");
        let module = allocator.as_dyn().filter_module_bits_per_key(0);
        let on_disk = modules as f64 * module;
        let headroom = super::top_level_headroom(0, budget);
        assert!(
            on_disk >= budget + headroom - 1e-9 || modules == 6,
            "budget {budget}: {on_disk} bits on disk"
        );
        assert!(
            on_disk - module < budget + headroom - 1e-9 || modules == 3,
            "budget {budget}: one module fewer would hold the headroom"
        );
        let files = outputs(&[1000]);
        let tree = apply(
            &allocator,
            &Version::default(),
            &flush(&files),
            0,
            ("a", "z"),
        );
        let (_, _, level0) = tree.files().next().expect("one file");
        assert!(
            (level0.bits_per_key() - on_disk).abs() < 1e-9,
            "budget {budget}: {} on disk",
            level0.bits_per_key()
        );
    }
    // The setting for every file raises level 0's floor too, never lowers it.
    let wide = Elastic::default().with_disk_modules(6).expect("valid");
    assert_eq!(wide.level0_disk_modules(), 6);
    let narrow = Elastic::new(2.0)
        .expect("valid")
        .with_disk_modules(1)
        .expect("valid");
    assert_eq!(narrow.level0_disk_modules(), 6);
    // A level-0 module size of its own: as many as hold the budget plus the headroom, at most
    // six (twelve 1-bit modules would hold 2 + 10).
    let fine = Elastic::new(2.0)
        .expect("valid")
        .with_level0_module_bits(1.0)
        .expect("valid");
    assert_eq!(fine.level0_disk_modules(), 6);
    let coarse = Elastic::new(2.0)
        .expect("valid")
        .with_level0_module_bits(4.0)
        .expect("valid");
    assert_eq!(coarse.level0_disk_modules(), 3);
}

/// Two files of 10,000 keys over the two halves of the range, three 1-bit modules each (2 and 1
/// in use), and elastic filters with a budget of three modules, not yet restored.
#[test]
fn level_one_outputs_hold_the_budget_plus_their_headroom() {
    // Modules of half the budget on disk for a level-1 output, by budget: as many as hold the
    // budget plus 4 bits per key, at least the deeper files' three, at most six; from a budget
    // of 8 up five of a quarter of the budget, the budget plus a quarter.
    for (budget, modules, on_disk) in [
        (1.0, 6, 3.0),
        (2.0, 6, 6.0),
        (3.0, 5, 7.5),
        (4.0, 4, 8.0),
        (6.0, 4, 12.0),
        (7.0, 4, 14.0),
        (8.0, 5, 10.0),
        (10.0, 5, 12.5),
        (20.0, 5, 25.0),
        (64.0, 5, 80.0),
    ] {
        let allocator = Elastic::new(budget).expect("valid");
        assert_eq!(allocator.level1_disk_modules(), modules, "budget {budget}");
        let module = allocator.as_dyn().filter_module_bits_per_key(1);
        assert_eq!(modules as f64 * module, on_disk, "budget {budget}");
        let headroom = super::top_level_headroom(1, budget);
        assert!(
            on_disk >= budget + headroom - 1e-9 || modules == 6,
            "budget {budget}: {on_disk} bits on disk"
        );
        assert!(
            on_disk - module < budget + headroom - 1e-9 || modules == 3,
            "budget {budget}: one module fewer would hold the headroom"
        );
    }
    // The setting for every file raises level 1's floor too, never lowers it.
    let wide = Elastic::default().with_disk_modules(6).expect("valid");
    assert_eq!(wide.level1_disk_modules(), 6);
}

#[test]
fn a_level_one_file_gets_the_bits_present_key_lookups_want_where_level_zero_is_empty() {
    // The tree present-key lookups found worst at a budget of 2: no level 0, one level-1 file
    // over the whole range, the rest of the keys in one last-level file. Every lookup probes the
    // level-1 file first and finds nothing there for most keys (the last level answers them,
    // with no empty probe): the level-1 file's optimum is the whole budget (6 bits per key
    // here), the last level's nothing. Written with three 1-bit modules, as every level below 0
    // was, it held at most 3 bits and the rest of the budget went where it bought nothing; a
    // level-1 output now holds six and takes them. The same file written to level 2 keeps three.
    for (level, on_disk) in [(1usize, 6usize), (2, 3)] {
        let allocator = Elastic::new(2.0).expect("valid");
        let file_of = |file_number: u64, entries: u64| NewFile {
            file_number,
            entries,
            access: None,
            filter_layout: crate::FilterLayout::default(),
        };
        let compaction = |outputs, output_level| FilterJob {
            kind: JobKind::Compaction,
            inputs: &[],
            output_level,
            output_run_id: 10 + output_level as u64,
            outputs,
        };
        // The level-1 file first, as a load writes it (no lookups yet): its share of the
        // budget is 2 bits per key, so it gets no more modules than its level's floor.
        let hot = [file_of(2, 2_000)];
        let tree = apply(
            &allocator,
            &Version::default(),
            &compaction(&hot, level),
            level,
            ("a", "z"),
        );
        let last = [file_of(1, 4_000)];
        let tree = apply(&allocator, &tree, &compaction(&last, 3), 3, ("a", "z"));
        for (_, _, file) in tree.files() {
            if file.number() == 2 {
                counted(file, 6_000, 3_000, 3_000, 3_000);
            } else {
                counted(file, 0, 6_000, 6_000, 6_000);
            }
        }
        allocator.as_dyn().refresh(&tree);
        let (_, run, hot) = tree
            .files()
            .find(|(_, _, file)| file.number() == 2)
            .expect("the hot file");
        assert!(
            (hot.bits_per_key() - on_disk as f64).abs() < 1e-9,
            "level {level}"
        );
        let in_use = allocator.as_dyn().bits_per_key_in_use(run, hot);
        if level == 1 {
            assert_eq!(whole_modules_in_use(&allocator, &tree, 2), 6);
            assert_eq!(in_use, 6.0);
        } else {
            assert!(in_use <= 3.0, "level 2: {in_use}");
        }
        let (used, budget) = in_use_and_budget(&allocator, &tree);
        assert!(used <= budget + 1e-9, "{used} against {budget}");
    }
}

fn two_halves() -> (Version, Elastic) {
    let tree = Version::builder()
        .add_file(1, 1, file(1, "a", "m", 10_000, 3.0))
        .add_file(1, 1, file(2, "n", "z", 10_000, 3.0))
        .policy_state(three_module_state(&[(1, 2), (2, 1)]))
        .build()
        .expect("builds");
    (tree, Elastic::new(1.5).expect("valid"))
}

/// The whole modules file `number` of `tree` has in use.
fn whole_modules_in_use(allocator: &Elastic, tree: &Version, number: u64) -> usize {
    tree.files()
        .find(|(_, _, file)| file.number() == number)
        .map(|(_, run, file)| allocator.filter_modules_in_use(run, file).modules)
        .expect("file")
}

/// Pretends lookups did `empty`, `found`, `reads` and `misses` in `file` over the last second.
fn counted(file: &FileMetadata, empty: u64, found: u64, reads: u64, misses: u64) {
    file.state().add_lookup_counts(
        crate::version::LookupCounts {
            seconds: 1.0,
            empty_probes: empty,
            found_probes: found,
            data_block_reads: reads,
            data_block_misses: misses,
            ..crate::version::LookupCounts::default()
        },
        std::time::Instant::now(),
    );
}

#[test]
fn without_statistics_the_counted_empty_probes_weigh_files_not_their_key_ranges() {
    // Two files over the two halves of the range, alike in size, no block cache (every read
    // misses). Lookups of keys that exist: the first file's all found their key, the second's
    // found nothing. By key range they weigh the same; by what was counted, only the second
    // gains from a filter.
    let (tree, allocator) = two_halves();
    allocator.as_dyn().restore(&tree);
    let modules = |number: u64| whole_modules_in_use(&allocator, &tree, number);
    for (_, _, file) in tree.files() {
        if file.number() == 1 {
            counted(file, 0, 1_000, 1_000, 1_000);
        } else {
            counted(file, 1_000, 0, 400, 400);
        }
    }
    allocator.as_dyn().refresh(&tree);
    assert_eq!((modules(1), modules(2)), (0, 3));
}

#[test]
fn a_file_whose_few_reads_missed_under_many_bits_is_still_seen_cached() {
    // Two small files (1,000 keys) and a larger one (10,000), each reached by 10,000 empty
    // lookups a second, with reads and misses as an LRU cache of characteristic time 100
    // byte-seconds gives them (Che). The first holds many bits: its 30 false positives found
    // its blocks cold (29 missed). The second, with one module, sees 6,200 reads and the cache
    // serves all but 12. Weighed by the miss share measured under that allocation, the first
    // would look like cold data (`(29 + 4) / (30 + 4)`) and keep three modules, leaving the
    // larger file none; predicted at uniform filters' rate it is as cached as the second.
    let tree = Version::builder()
        .add_file(0, 1, file(1, "a", "z", 1_000, 3.0))
        .add_file(0, 2, file(2, "a", "z", 1_000, 3.0))
        .add_file(1, 3, file(3, "a", "z", 10_000, 3.0))
        .policy_state(three_module_state(&[(1, 3), (2, 1), (3, 0)]))
        .build()
        .expect("builds");
    let allocator = Elastic::new(1.0).expect("valid");
    allocator.as_dyn().restore(&tree);
    let modules = |number: u64| whole_modules_in_use(&allocator, &tree, number);
    for (_, _, file) in tree.files() {
        match file.number() {
            1 => counted(file, 10_000, 0, 30, 29),
            2 => counted(file, 10_000, 0, 6_200, 12),
            _ => counted(file, 10_000, 0, 6_200, 3_340),
        }
    }
    allocator.as_dyn().refresh(&tree);
    assert_eq!(
        modules(3),
        1,
        "the larger file, whose reads miss, gets a module"
    );
    assert_eq!(
        modules(1),
        modules(2),
        "the two small files are weighed alike"
    );
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!(used <= budget + 1e-9, "{used} > {budget}");
}

#[test]
fn a_refresh_on_an_older_tree_than_the_last_job_changes_nothing() {
    // A lookup that loaded the tree before a flush installed calls refresh with that tree after
    // the flush stored its selection: the flushed file must keep its modules.
    let allocator = Elastic::new(2.0).expect("valid");
    let first = outputs(&[1000]);
    let before = apply(
        &allocator,
        &Version::default(),
        &flush(&first),
        0,
        ("a", "z"),
    );
    let second = vec![NewFile {
        file_number: 2000,
        entries: 1000,
        access: None,
        filter_layout: crate::FilterLayout::default(),
    }];
    let after = apply(&allocator, &before, &flush(&second), 0, ("a", "z"));
    let stored = (**allocator.selection.load()).clone();
    allocator.as_dyn().refresh(&before);
    assert_eq!(**allocator.selection.load(), stored);
    let (used, budget) = in_use_and_budget(&allocator, &after);
    assert!(
        used >= 0.95 * budget && used <= budget + 1e-9,
        "{used} of {budget}"
    );
}

#[test]
fn a_large_unpartitioned_files_module_is_taken_when_the_greedy_would_leave_the_budget_unspent() {
    // The tree `strata bench --paced-fill --num 200000` built: three level-0 files of 7,153
    // entries with six 1-bit modules each, and a last-level file of 171,672 entries, without
    // partitions, with three; every file reached by every lookup; 2 bits per key.
    let candidate = |number, entries: f64, modules| Candidate {
        number,
        entries,
        weight: 1.0,
        module_bits: 1.0,
        modules,
        partitions: 1,
        family: FilterFamily::Bloom,
    };
    let candidates = [
        candidate(1, 7_153.0, 6),
        candidate(2, 7_153.0, 6),
        candidate(3, 7_153.0, 6),
        candidate(4, 171_672.0, 3),
    ];
    let budget = 2.0 * candidates.iter().map(|c| c.entries).sum::<f64>();
    // The greedy choice alone: every small module is worth more per bit, and the large file's
    // second module no longer fits: over a fifth of the budget unspent.
    let greedy = select_from(&candidates, budget, &[0; 4]);
    assert_eq!(greedy[3].modules, 1);
    assert!(bits_in_use(&candidates, &greedy) < 0.8 * budget);
    // Repaired: the large file's second module first, the small files share the rest.
    let in_use = select(&candidates, budget);
    let spent = bits_in_use(&candidates, &in_use);
    assert!(
        spent >= 0.95 * budget && spent <= budget * (1.0 + 1e-12),
        "{spent} of {budget}"
    );
    assert_eq!(in_use[3].modules, 2);
    assert!(
        in_use[..3].iter().all(|used| used.modules >= 1),
        "{in_use:?}"
    );
    // A choice the greedy spends in full is left as it is.
    let small = [candidate(1, 1_000.0, 6), candidate(2, 1_000.0, 6)];
    assert_eq!(
        select(&small, 4_000.0),
        select_from(&small, 4_000.0, &[0; 2])
    );
}

#[test]
fn a_module_that_does_not_fit_whole_is_put_in_use_in_some_partitions() {
    let candidate = |number, entries: f64, partitions| Candidate {
        number,
        entries,
        weight: 1.0,
        module_bits: 1.0,
        modules: 3,
        partitions,
        family: FilterFamily::Bloom,
    };
    // 2.5 modules' worth of one 40-partition file: two whole modules and half the partitions.
    let in_use = select(&[candidate(1, 4000.0, 40)], 10_000.0);
    assert_eq!(
        in_use,
        vec![InUse {
            modules: 2,
            extra: 20
        }]
    );
    // An unpartitioned file cannot take part of a module; a partitioned one never takes all
    // of its partitions (that would be a whole module, which did not fit), and what it takes
    // never exceeds the budget.
    for budget in [0.0, 99.0, 100.0, 3_999.0, 4_001.0, 7_950.0, 11_999.0] {
        let whole = select(&[candidate(1, 4000.0, 1)], budget);
        assert_eq!(whole[0].extra, 0);
        let split = select(&[candidate(1, 4000.0, 40)], budget);
        let used = (split[0].modules as f64 + f64::from(split[0].extra) / 40.0) * 4000.0;
        assert!(used <= budget, "{used} over {budget}: {split:?}");
        assert!(used > budget - 100.0, "{used} of {budget}: {split:?}");
        assert!(split[0].extra < 40);
        assert_eq!(split[0].modules, whole[0].modules);
    }
}

/// A tree dominated by one large file (like the default 64 MiB files): with whole modules the budget
/// could be spent to 0.80 at best; with the large file's module put in use partition by
/// partition it is spent to within one partition's share, and never over.
#[test]
fn a_tree_dominated_by_one_partitioned_file_spends_its_budget() {
    let big = file(1, "a", "m", 100_000, 3.0).with_filter_partitions(40);
    let small = file(2, "n", "z", 1_000, 3.0);
    let tree = Version::builder()
        .add_file(2, 1, big)
        .add_file(1, 2, small)
        .policy_state(three_module_state(&[(1, 2), (2, 3)]))
        .build()
        .expect("builds");
    let allocator = Elastic::new(2.5).expect("valid");
    allocator.as_dyn().restore(&tree);
    let (used, budget) = in_use_and_budget(&allocator, &tree);
    assert!((used - 203_000.0).abs() < 1e-6, "the stored state: {used}");
    allocator.as_dyn().refresh(&tree);
    let (used, budget_after) = in_use_and_budget(&allocator, &tree);
    assert_eq!(budget, budget_after);
    assert!(used <= budget * (1.0 + 1e-12), "{used} over {budget}");
    assert!(
        used >= budget - 100_000.0 / 40.0,
        "{used} of {budget}: within one partition"
    );
    let (_, run, big) = tree
        .files()
        .find(|(_, _, file)| file.number() == 1)
        .expect("big");
    let in_use = allocator.filter_modules_in_use(run, big);
    assert!(
        (1..40).contains(&in_use.extra_partitions),
        "part of a module: {in_use:?}"
    );

    // The partly used module survives a restart (state version 2), and a version-1 state (no
    // partial modules) still reads.
    let state = allocator.as_dyn().policy_state().expect("state");
    let mut builder = Version::builder();
    for (level, run, file) in tree.files() {
        builder = builder.add_file(level, run, file.copy_facts());
    }
    let recovered = builder.policy_state(state).build().expect("builds");
    let restarted = Elastic::new(2.5).expect("valid");
    restarted.as_dyn().restore(&recovered);
    for (_, run, file) in recovered.files() {
        assert_eq!(
            restarted.filter_modules_in_use(run, file),
            allocator.filter_modules_in_use(run, file)
        );
    }
    assert_eq!(in_use_and_budget(&restarted, &recovered).0, used);
    let mut v1 = vec![1u8];
    put_varint64(&mut v1, 1);
    put_varint64(&mut v1, 7);
    put_fixed64(&mut v1, 1.0f64.to_bits());
    v1.extend([3, 2]);
    let old = Selection::decode(&v1).expect("version 1 reads");
    assert_eq!(
        old.files[&7],
        Layout {
            module_bits: 1.0,
            modules: 3,
            in_use: 2,
            extra: 0
        }
    );
}

/// A budget in bytes caps the filters in use below what the bits per key allow, and is spent.
#[test]
fn a_budget_in_bytes_caps_the_filters_in_use() {
    assert!(Elastic::new(4.0)
        .expect("valid")
        .with_budget_bytes(0)
        .is_err());
    let allocator = Elastic::new(4.0)
        .expect("valid")
        .with_budget_bytes(2_000)
        .expect("valid");
    assert_eq!(allocator.as_dyn().filter_budget_bytes(), Some(2_000));
    assert!(
        allocator.name().contains("2000 bytes"),
        "{}",
        allocator.name()
    );
    let mut tree = Version::default();
    for number in 1..=8u64 {
        let files = vec![NewFile {
            file_number: number,
            entries: 1_000,
            access: None,
            filter_layout: crate::FilterLayout::default(),
        }];
        tree = apply(&allocator, &tree, &flush(&files), 0, ("a", "z"));
        let (used, per_key_budget) = in_use_and_budget(&allocator, &tree);
        let budget = per_key_budget.min(16_000.0);
        assert!(used <= budget + 1e-6, "{used} bits over {budget}");
        // Within one 2-bit module of a 1,000-entry file.
        assert!(used >= budget - 2_000.0, "{used} bits of {budget}");
    }
    // 8,000 entries at 4 bits per key would be 32,000 bits: the 16,000 bits of the byte budget
    // are what is in use.
    let (used, _) = in_use_and_budget(&allocator, &tree);
    assert!((14_000.0..=16_000.0).contains(&used), "{used}");
}

/// DESIGN.md §3.5 "Filter families": a bit of a Ribbon filter avoids more false positives than a
/// bit of a Bloom filter, so with room for one module the greedy choice gives it to the Ribbon
/// file of two otherwise equal files.
#[test]
fn modules_are_priced_by_their_familys_curve() {
    let candidate = |number, family| Candidate {
        number,
        entries: 1000.0,
        weight: 1.0,
        module_bits: 1.0,
        modules: 3,
        partitions: 1,
        family,
    };
    let bloom = candidate(1, FilterFamily::Bloom);
    let ribbon = candidate(2, FilterFamily::Ribbon);
    assert!(value_per_bit(&ribbon, 0) > value_per_bit(&bloom, 0));
    assert_eq!(whole(select(&[bloom, ribbon], 1000.0)), vec![0, 1]);
}

/// The state of files with 1-bit modules, `(file, modules on disk, modules in use)`.
fn module_state(files: &[(u64, u8, u8)]) -> PolicyState {
    let selection = Selection {
        files: files
            .iter()
            .map(|&(number, modules, in_use)| {
                (
                    number,
                    Layout {
                        module_bits: 1.0,
                        modules,
                        in_use,
                        extra: 0,
                    },
                )
            })
            .collect(),
    };
    PolicyState {
        owner: OWNER.to_string(),
        bytes: selection.encode(),
    }
}

/// Two files over the two halves of the range, 10,000 entries and 1,000,000 bytes each, with
/// the given `(modules on disk, modules in use, empty probes)`, under elastic filters of 2 bits
/// per key (1-bit modules).
fn rebuild_tree(first: (u8, u8, u64), second: (u8, u8, u64)) -> (Elastic, Version) {
    let tree = Version::builder()
        .add_file(2, 1, file(1, "a", "m", 10_000, f64::from(first.0)))
        .add_file(2, 1, file(2, "n", "z", 10_000, f64::from(second.0)))
        .policy_state(module_state(&[
            (1, first.0, first.1),
            (2, second.0, second.1),
        ]))
        .build()
        .expect("builds");
    for ((_, _, file), probes) in tree.files().zip([first.2, second.2]) {
        file.state().add_empty_probes(probes);
    }
    let allocator = Elastic::new(2.0)
        .expect("valid")
        .with_module_bits(1.0)
        .expect("valid");
    allocator.as_dyn().restore(&tree);
    (allocator, tree)
}

/// Pricing ten seconds after the files were made, with no writes (the horizon is the life).
fn pricing(flush_bytes_per_sec: Option<f64>) -> RebuildPricing {
    RebuildPricing {
        now: std::time::Instant::now() + std::time::Duration::from_secs(10),
        flush_bytes_per_sec,
        horizon_secs: 600.0,
        read_cost_bytes: 4096.0,
    }
}

#[test]
fn a_saturated_file_that_lookups_reach_is_priced_for_a_rebuild() {
    // File 1 holds one module on disk, file 2 three; the budget (4 bits per key of one file)
    // gives one and three. Both are reached by the same lookups, so the optimum is two and two:
    // file 1 needs a module it does not have.
    let made = std::time::Instant::now();
    let (allocator, tree) = rebuild_tree((1, 1, 10_000), (3, 3, 10_000));
    assert!(allocator.as_dyn().rebuilds_filters());
    let priced = pricing(None);
    // The files were made between `made` and ten seconds before the pricing: a stall there
    // (a busy machine) lengthens their life so far beyond ten seconds.
    let most_secs = priced.now.duration_since(made).as_secs_f64();
    let rebuild = allocator
        .filter_rebuild(&tree, &priced)
        .expect("a rebuild pays");
    assert_eq!(
        (rebuild.level, rebuild.run_id, rebuild.file_number),
        (2, 1, 1)
    );
    // About 1,000 empty probes per second in each file: 1000 * (eps(1) + eps(3)) reads now,
    // 2000 * eps(2) after, with eps(b) = exp(-ln2sq b).
    let eps = |bits: f64| FilterFamily::Bloom.false_positive_rate(bits);
    let expected = 1000.0 * (eps(1.0) + eps(3.0) - 2.0 * eps(2.0));
    let least = 0.99 * expected * 10.0 / most_secs;
    assert!(
        (least..1.01 * expected).contains(&rebuild.avoided_reads_per_sec),
        "{} vs {expected} (at least {least})",
        rebuild.avoided_reads_per_sec
    );
    assert_eq!(rebuild.life_secs, 600.0);
    // The file read and written, plus one module's bits for its 10,000 keys.
    assert_eq!(rebuild.cost_bytes, 2_000_000 + 1_250);
    assert!(rebuild.net_saving_bytes(4096.0) > 0.0);
    // Pricing changes nothing.
    assert_eq!(
        tree.files()
            .map(|(_, run, file)| allocator.filter_modules_in_use(run, file).modules)
            .collect::<Vec<_>>(),
        vec![1, 3]
    );
}

#[test]
fn a_rebuild_is_not_asked_for_when_it_does_not_pay() {
    // No lookups: nothing to avoid.
    let (allocator, tree) = rebuild_tree((1, 1, 0), (3, 3, 0));
    assert_eq!(
        allocator.as_dyn().filter_rebuild(&tree, &pricing(None)),
        None
    );
    // A short life: the level turns over in a millisecond at this write rate.
    let (allocator, tree) = rebuild_tree((1, 1, 10_000), (3, 3, 10_000));
    assert_eq!(
        allocator
            .as_dyn()
            .filter_rebuild(&tree, &pricing(Some(2e9))),
        None
    );
    // The same at a write rate that leaves the level ten seconds: it pays again.
    let rebuild = allocator
        .filter_rebuild(&tree, &pricing(Some(2e5)))
        .expect("pays over ten seconds");
    assert!((rebuild.life_secs - 10.0).abs() < 1e-9);
    // Enough modules on disk: the greedy takes two of file 1's three without a rebuild.
    let (allocator, tree) = rebuild_tree((3, 2, 10_000), (3, 2, 10_000));
    assert_eq!(
        allocator.as_dyn().filter_rebuild(&tree, &pricing(None)),
        None
    );
    // A file the allocator did not write (opaque) is never rebuilt.
    let tree_opaque = Version::builder()
        .add_file(2, 1, file(1, "a", "m", 10_000, 1.0))
        .add_file(2, 1, file(2, "n", "z", 10_000, 3.0))
        .build()
        .expect("builds");
    for (_, _, file) in tree_opaque.files() {
        file.state().add_empty_probes(10_000);
    }
    allocator.as_dyn().restore(&tree_opaque);
    assert_eq!(
        allocator
            .as_dyn()
            .filter_rebuild(&tree_opaque, &pricing(None)),
        None
    );
    // No filters at all: nothing to rebuild.
    assert!(!Elastic::new(0.0)
        .expect("valid")
        .as_dyn()
        .rebuilds_filters());
}

#[test]
fn the_file_probed_more_is_rebuilt_first() {
    // Both files saturated at one module, with a budget for four: each wants two. File 2 is
    // probed four times as often, so its rebuild saves more.
    let (allocator, tree) = rebuild_tree((1, 1, 1_000), (1, 1, 4_000));
    let rebuild = allocator
        .filter_rebuild(&tree, &pricing(None))
        .expect("pays");
    assert_eq!(rebuild.file_number, 2);
}

#[test]
fn a_probe_memo_round_trips_and_only_answers_for_its_own_selection() {
    let cases = [
        ModulesInUse::NONE,
        ModulesInUse::ALL,
        ModulesInUse::prefix(2),
        ModulesInUse {
            modules: 5,
            extra_partitions: 7,
        },
        ModulesInUse {
            modules: 0,
            extra_partitions: (1 << 24) - 1,
        },
    ];
    for generation in [0, 1, 41, u64::from(u32::MAX) - 1, u64::from(u32::MAX)] {
        for in_use in cases {
            let word = ProbeMemo::encode(generation, in_use).expect("fits");
            assert_ne!(word, 0, "0 is no memo");
            assert_eq!(ProbeMemo::decode(generation, word), Some(in_use));
            assert_eq!(ProbeMemo::decode(generation.wrapping_add(1), word), None);
        }
        assert_eq!(ProbeMemo::decode(generation, 0), None);
    }
    // What does not fit one word is not memoised (the probe asks the selection).
    assert_eq!(ProbeMemo::encode(3, ModulesInUse::prefix(255)), None);
    let too_many = ModulesInUse {
        modules: 1,
        extra_partitions: 1 << 24,
    };
    assert_eq!(ProbeMemo::encode(3, too_many), None);
}

#[test]
fn a_probe_reads_its_files_memo_until_a_selection_is_stored() {
    let (tree, allocator) = two_halves();
    allocator.as_dyn().restore(&tree);
    let (_, run, first) = tree.files().next().expect("file 1");
    assert_eq!(first.state().allocator_memo(), 0, "no probe yet");
    assert_eq!(
        allocator.filter_modules_in_use(run, first),
        ModulesInUse::prefix(2)
    );
    assert_ne!(
        first.state().allocator_memo(),
        0,
        "the first probe writes the memo"
    );
    // While the selection stands, the memo answers (forged here to tell it from the selection).
    let generation = allocator.generation.load(AtomicOrdering::Relaxed);
    let forged = ProbeMemo::encode(generation, ModulesInUse::prefix(3)).expect("fits");
    first.state().set_allocator_memo(forged);
    assert_eq!(
        allocator.filter_modules_in_use(run, first),
        ModulesInUse::prefix(3)
    );
    // Another allocator over the same files never takes this one's memo.
    let other = Elastic::new(1.5).expect("valid");
    other.as_dyn().restore(&tree);
    assert_eq!(
        other.filter_modules_in_use(run, first),
        ModulesInUse::prefix(2)
    );
    // Any store of a selection (a job, a restore, a refresh that changed it) retires the memos.
    first.state().set_allocator_memo(forged);
    allocator.as_dyn().restore(&tree);
    assert_eq!(
        allocator.filter_modules_in_use(run, first),
        ModulesInUse::prefix(2)
    );
    // A refresh that changes nothing keeps them.
    first.state().set_allocator_memo(
        ProbeMemo::encode(
            allocator.generation.load(AtomicOrdering::Relaxed),
            ModulesInUse::prefix(3),
        )
        .expect("fits"),
    );
    allocator.as_dyn().refresh(&tree);
    assert_eq!(
        allocator.filter_modules_in_use(run, first),
        ModulesInUse::prefix(3)
    );
}
