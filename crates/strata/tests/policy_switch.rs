//! `Db::set_compaction_policy`: switching the merge policy of a running database. Every switch
//! between registered policies keeps every write and reaches the new policy's shape through
//! ordinary compactions; the switch survives a reopen with the same options and gives way to a
//! reopen with different ones; concurrent switches, writers and manual compactions all return.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::policy::{CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings};
use strata::version::Version;
use strata::{Db, Error, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const SIZE_RATIO: f64 = 3.0;

fn settings() -> CompactionSettings {
    CompactionSettings::with_size_ratio(SIZE_RATIO)
}

fn options(kind: CompactionKind) -> Options {
    let mut options = Options::default()
        .write_buffer_bytes(8 * 1024)
        .target_file_bytes(8 * 1024)
        .block_cache_bytes(1 << 20)
        .level0_compaction_trigger(2)
        .compaction_policy(kind.build(&settings()).expect("a registered policy builds"));
    options.max_background_compactions = 2;
    options
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

/// Writes keys `from..to` in a scattered order (with an overwrite of every 5th), into the db and
/// the model.
fn write(db: &Db, model: &mut Model, from: u32, to: u32, round: u32) {
    let count = to - from;
    for n in 0..count {
        let i = from + (n * 7919) % count;
        let value = format!("value-{i}-round-{round}-{}", "v".repeat(24)).into_bytes();
        db.put(key(i), &value).expect("put");
        model.insert(key(i), value);
        if n % 5 == 0 {
            let value = format!("over-{i}-{round}").into_bytes();
            db.put(key(i), &value).expect("overwrite");
            model.insert(key(i), value);
        }
    }
}

fn check(db: &Db, model: &Model) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).expect("get").as_deref(),
            Some(v.as_slice()),
            "key {}",
            String::from_utf8_lossy(k)
        );
    }
    let scanned: Model = db
        .iter()
        .map(|entry| entry.expect("scan"))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(scanned.len(), model.len(), "scan length");
    assert!(scanned == *model, "the scan differs from the model");
}

/// The shape each policy promises once settled, on the disk levels (level 0 aside): the runs
/// per level its `CompactionPolicy::max_runs` states.
fn assert_settled_shape(kind: CompactionKind, tree: &Version) {
    let policy = kind.build(&settings()).expect("builds");
    let levels = tree.levels();
    let last = (1..levels.len())
        .rev()
        .find(|&l| !levels[l].is_empty())
        .unwrap_or(1);
    for (level, l) in levels.iter().enumerate().skip(1) {
        let runs = l.runs().len();
        let allowed = policy.max_runs(level, last);
        assert!(
            runs <= allowed,
            "{kind}: level {level} holds {runs} runs, at most {allowed} allowed"
        );
    }
    // EcoTune: below the main level, one run in all.
    if kind == CompactionKind::Ecotune {
        let below_main: usize = levels.iter().skip(2).map(|l| l.runs().len()).sum();
        assert!(
            below_main <= 1,
            "ecotune: {below_main} runs below the main level"
        );
    }
}

#[test]
fn every_switch_between_registered_policies_keeps_every_write_and_reaches_the_new_shape() {
    for &from in CompactionKind::all() {
        for &to in CompactionKind::all() {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = Db::open(dir.path(), options(from)).expect("open");
            let mut model = Model::new();
            write(&db, &mut model, 0, 2_500, 0);
            db.set_compaction_policy(to, settings()).expect("switch");
            assert_eq!(db.compaction_policy_name(), name_of(to), "{from} -> {to}");
            write(&db, &mut model, 1_000, 4_000, 1);
            db.flush().expect("flush");
            db.wait_for_compactions().expect("settle");
            check(&db, &model);
            assert_settled_shape(to, &db.version());
            db.close().expect("close");
        }
    }
}

fn name_of(kind: CompactionKind) -> String {
    kind.build(&settings()).expect("builds").name()
}

#[test]
fn a_switch_survives_a_reopen_with_the_same_options_and_gives_way_to_new_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = Model::new();
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("open");
    write(&db, &mut model, 0, 1_000, 0);
    db.set_compaction_policy(CompactionKind::Tiering, settings())
        .expect("switch");
    db.close().expect("close");

    // Same options: the switch stands, for a read-only open too.
    let read_only =
        Db::open_read_only(dir.path(), options(CompactionKind::Leveling)).expect("read-only");
    assert_eq!(
        read_only.compaction_policy_name(),
        name_of(CompactionKind::Tiering)
    );
    check(&read_only, &model);
    assert!(matches!(
        read_only.set_compaction_policy(CompactionKind::Leveling, settings()),
        Err(Error::ReadOnly)
    ));
    drop(read_only);
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("reopen");
    assert_eq!(
        db.compaction_policy_name(),
        name_of(CompactionKind::Tiering)
    );
    write(&db, &mut model, 500, 1_500, 1);
    db.close().expect("close");

    // Options naming another policy win, and the switch is cleared for good.
    let db = Db::open(dir.path(), options(CompactionKind::Garnering)).expect("reopen");
    assert_eq!(
        db.compaction_policy_name(),
        name_of(CompactionKind::Garnering)
    );
    check(&db, &model);
    db.close().expect("close");
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("reopen");
    assert_eq!(
        db.compaction_policy_name(),
        name_of(CompactionKind::Leveling),
        "the overridden switch does not come back"
    );
    check(&db, &model);
    db.close().expect("close");
}

#[test]
fn an_invalid_switch_changes_nothing_and_a_closed_database_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("open");
    let before = db.compaction_policy_name();
    let bad = CompactionSettings::with_size_ratio(1.0);
    assert!(matches!(
        db.set_compaction_policy(CompactionKind::Tiering, bad),
        Err(Error::InvalidArgument(_))
    ));
    let bad_c = CompactionSettings {
        garnering_c: 0.0,
        ..CompactionSettings::with_size_ratio(3.0)
    };
    assert!(matches!(
        db.set_compaction_policy(CompactionKind::Garnering, bad_c),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.compaction_policy_name(), before);
    db.close().expect("close");
    assert!(matches!(
        db.set_compaction_policy(CompactionKind::Tiering, settings()),
        Err(Error::Closed)
    ));
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("reopen");
    assert_eq!(db.compaction_policy_name(), before, "nothing was logged");
}

#[test]
fn concurrent_switches_writers_and_manual_compactions_all_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path(), options(CompactionKind::Leveling)).expect("open"));
    let switchers: Vec<_> = (0..3)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for n in 0..20 {
                    let all = CompactionKind::all();
                    let kind = all[(t * 7 + n) % all.len()];
                    db.set_compaction_policy(kind, settings()).expect("switch");
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut model = Model::new();
                write(&db, &mut model, t * 10_000, t * 10_000 + 2_000, t);
                model
            })
        })
        .collect();
    let compactors: Vec<_> = (0..2)
        .map(|_| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for _ in 0..3 {
                    db.compact().expect("compact");
                    db.wait_for_compactions().expect("wait");
                }
            })
        })
        .collect();
    for handle in switchers.into_iter().chain(compactors) {
        handle.join().expect("thread returned");
    }
    let mut model = Model::new();
    for handle in writers {
        model.extend(handle.join().expect("writer returned"));
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    check(&db, &model);
    let in_effect = db.compaction_policy_name();
    db.close().expect("close");
    let db = Db::open(dir.path(), options(CompactionKind::Leveling)).expect("reopen");
    assert_eq!(
        db.compaction_policy_name(),
        in_effect,
        "the last switch is the one kept"
    );
    check(&db, &model);
    assert_on_disk(dir.path());
}

fn assert_on_disk(dir: &Path) {
    let report = strata::check(dir, &Options::default()).expect("check runs");
    assert!(
        report.problems.is_empty(),
        "strata::check found problems: {:?}",
        report.problems
    );
}

fn filter_settings(bits_per_key: f64) -> FilterSettings {
    FilterSettings {
        bits_per_key,
        compaction: CompactionKind::Leveling,
        size_ratio: SIZE_RATIO,
        expected_entries: 10_000,
        buffer_entries: 200,
        budget_bytes: None,
        disk_modules: None,
    }
}

fn allocator_name(kind: FilterAllocatorKind, bits_per_key: f64) -> String {
    kind.build(&filter_settings(bits_per_key))
        .expect("builds")
        .name()
}

#[test]
fn a_filter_allocator_switch_decides_new_files_and_survives_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let configured = || options(CompactionKind::Leveling).access_statistics(true);
    let db = Db::open(dir.path(), configured()).expect("open");
    let mut model = Model::new();
    write(&db, &mut model, 0, 1_500, 0);
    db.flush().expect("flush");
    // Settled, so that no job allocated before the switch installs after it.
    db.wait_for_compactions().expect("settle");
    let before: Vec<(u64, f64)> = db
        .version()
        .files()
        .map(|(_, _, f)| (f.number(), f.bits_per_key()))
        .collect();
    assert!(!before.is_empty());
    db.set_filter_allocator(FilterAllocatorKind::Uniform, filter_settings(3.0))
        .expect("switch");
    assert_eq!(
        db.filter_allocator_name(),
        allocator_name(FilterAllocatorKind::Uniform, 3.0)
    );
    assert_eq!(db.stats().bits_per_key_budget, 3.0);
    // Writes after the switch, flushed on their own (a file of only new keys): its filter has
    // the new budget, the files written before keep theirs.
    for i in 50_000..50_400u32 {
        let value = format!("late-{i}").into_bytes();
        db.put(key(i), &value).expect("put");
        model.insert(key(i), value);
    }
    db.flush().expect("flush");
    let tree = db.version();
    for (_, _, file) in tree.files() {
        // Files written before the switch keep the filter they were written with.
        let expected = before
            .iter()
            .find(|(number, _)| *number == file.number())
            .map_or(3.0, |&(_, bits)| bits);
        assert!(
            (file.bits_per_key() - expected).abs() < 1e-9,
            "file {} has {} bits per key, expected {expected}",
            file.number(),
            file.bits_per_key()
        );
    }
    check(&db, &model);
    db.close().expect("close");

    let db = Db::open(dir.path(), configured()).expect("reopen");
    assert_eq!(
        db.filter_allocator_name(),
        allocator_name(FilterAllocatorKind::Uniform, 3.0),
        "the same options keep the switch"
    );
    check(&db, &model);
    db.close().expect("close");
    let monkey = FilterAllocatorKind::Monkey
        .build(&filter_settings(6.0))
        .expect("builds");
    let db = Db::open(
        dir.path(),
        configured().filter_allocator(Arc::clone(&monkey)),
    )
    .expect("reopen with another allocator");
    assert_eq!(db.filter_allocator_name(), monkey.name(), "new options win");
    db.close().expect("close");
    let db = Db::open(dir.path(), configured()).expect("reopen");
    assert_eq!(
        db.filter_allocator_name(),
        Options::default().filter_allocator.name(),
        "the overridden switch is gone"
    );
    check(&db, &model);
}

#[test]
fn every_allocator_can_be_switched_to_and_keeps_every_write() {
    for &kind in FilterAllocatorKind::all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(
            dir.path(),
            options(CompactionKind::Leveling).access_statistics(true),
        )
        .expect("open");
        let mut model = Model::new();
        write(&db, &mut model, 0, 1_500, 0);
        db.set_filter_allocator(kind, filter_settings(4.0))
            .expect("switch");
        write(&db, &mut model, 1_000, 3_000, 1);
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
        check(&db, &model);
        assert_eq!(db.filter_allocator_name(), allocator_name(kind, 4.0));
        db.close().expect("close");
    }
}

#[test]
fn an_allocator_that_needs_statistics_is_refused_where_none_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(
        dir.path(),
        options(CompactionKind::Leveling).access_statistics(false),
    )
    .expect("open");
    let before = db.filter_allocator_name();
    for kind in [
        FilterAllocatorKind::MnemosynePlus,
        FilterAllocatorKind::MnemosynePlusFirstCome,
    ] {
        match db.set_filter_allocator(kind, filter_settings(4.0)) {
            Err(Error::InvalidArgument(message)) => {
                assert!(message.contains("access statistics"), "{message}")
            }
            other => panic!("{kind}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(matches!(
        db.set_filter_allocator(FilterAllocatorKind::Uniform, filter_settings(-2.0)),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.filter_allocator_name(), before);
}

#[test]
fn concurrent_allocator_switches_readers_writers_and_compactions_all_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(
        Db::open(
            dir.path(),
            options(CompactionKind::Leveling).access_statistics(true),
        )
        .expect("open"),
    );
    let mut seed = Model::new();
    write(&db, &mut seed, 100_000, 101_000, 9);
    let seed = Arc::new(seed);
    let switchers: Vec<_> = (0..3)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for n in 0..15 {
                    let all = FilterAllocatorKind::all();
                    let kind = all[(t * 5 + n) % all.len()];
                    let bits = [2.0, 5.0, 10.0][n % 3];
                    db.set_filter_allocator(kind, filter_settings(bits))
                        .expect("switch");
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = Arc::clone(&db);
            let seed = Arc::clone(&seed);
            std::thread::spawn(move || {
                for _ in 0..3 {
                    check_seed(&db, &seed);
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut model = Model::new();
                write(&db, &mut model, t * 10_000, t * 10_000 + 2_000, t);
                db.compact().expect("compact");
                model
            })
        })
        .collect();
    for handle in switchers.into_iter().chain(readers) {
        handle.join().expect("thread returned");
    }
    let mut model = (*seed).clone();
    for handle in writers {
        model.extend(handle.join().expect("writer returned"));
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    check(&db, &model);
}

/// Every seed key reads back its value (the writers never touch them; a concurrent scan would
/// see their keys too, so only point reads).
fn check_seed(db: &Db, seed: &Model) {
    for (k, v) in seed {
        assert_eq!(
            db.get(k).expect("get").as_deref(),
            Some(v.as_slice()),
            "seed key {}",
            String::from_utf8_lossy(k)
        );
    }
}
