//! `strata::check` and `strata::repair` on a real multi-level database: every corruption case is
//! reported with the right file (and offset where one applies), a sound database reports nothing,
//! and a repaired database serves every entry of every sound table with its newest version.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use strata::{
    check, repair, table_entries, CheckReport, Db, Options, Problem, RepairMode, Severity,
    TableEntry,
};

/// Small buffers, files and blocks so that a few hundred writes make several levels, several
/// data blocks per table and several tables per level.
/// No background compactions: the tree's shape comes from the test's own flushes and full
/// compaction alone, so it always spans level 0 and level 1 (with leveling in the background it
/// sometimes settled into one level, depending on timing).
fn options() -> Options {
    Options::default()
        .compaction_policy(std::sync::Arc::new(strata::compaction::Manual))
        .write_buffer_bytes(4096)
        .target_file_bytes(4096)
        .block_bytes(256)
        .level0_compaction_trigger(2)
        .access_statistics(true)
        .bits_per_key(10.0)
        .expect("bits per key")
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A closed database and the newest value of every key written (`None`: deleted).
struct Built {
    dir: tempfile::TempDir,
    model: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Keys written after the last flush: their newest version is only in the WAL.
    wal_keys: BTreeSet<Vec<u8>>,
    /// Live tables by level when the database closed.
    levels: Vec<Vec<u64>>,
}

impl Built {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn table(&self, number: u64) -> PathBuf {
        self.path().join(format!("{number:06}.sst"))
    }
}

/// Overwrites, deletes and flushes, a full compaction into level 1 after the fifth round and
/// level-0 runs after it (so level 1 keeps the newest version of the keys the last round skips),
/// then a few writes left in the WAL (three records at least), then close.
fn build() -> Built {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let mut model = BTreeMap::new();
    for round in 0..6u32 {
        for i in 0..120u32 {
            if (i + round) % 3 == 0 {
                continue;
            }
            let value = format!("round{round}-value{i}-{}", "x".repeat(20)).into_bytes();
            db.put(key(i), &value).expect("put");
            model.insert(key(i), Some(value));
        }
        for i in (round..120).step_by(11) {
            db.delete(key(i)).expect("delete");
            model.insert(key(i), None);
        }
        db.flush().expect("flush");
        if round == 4 {
            db.compact().expect("compact");
        }
    }
    db.wait_for_compactions().expect("compactions");
    let mut wal_keys = BTreeSet::new();
    // The last one, key 501, is new: a torn WAL tail takes it away entirely.
    for i in [3u32, 500, 77, 501] {
        let value = format!("wal-{i}").into_bytes();
        db.put(key(i), &value).expect("put");
        model.insert(key(i), Some(value));
        wal_keys.insert(key(i));
    }
    let version = db.version();
    let levels: Vec<Vec<u64>> = version
        .levels()
        .iter()
        .map(|level| {
            level
                .runs()
                .iter()
                .flat_map(|run| run.files().iter().map(|f| f.number()))
                .collect()
        })
        .collect();
    db.close().expect("close");
    drop(db);
    let non_empty = levels.iter().filter(|files| !files.is_empty()).count();
    assert!(
        non_empty >= 2,
        "the test database has several levels: {levels:?}"
    );
    Built {
        dir,
        model,
        wal_keys,
        levels,
    }
}

fn run_check(path: &Path) -> CheckReport {
    check(path, &Options::default()).expect("check runs")
}

fn flip(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[offset as usize] ^= 0x5a;
    std::fs::write(path, &bytes).expect("write");
}

/// The footer's handles: (index, filter, properties) offsets and sizes.
struct Footer {
    index: (u64, u64),
    filter: (u64, u64),
    properties: (u64, u64),
    offset: u64,
}

fn footer(path: &Path) -> Footer {
    let bytes = std::fs::read(path).expect("read");
    let start = bytes.len() - 60;
    let fixed = |at: usize| {
        u64::from_le_bytes(
            bytes[start + at..start + at + 8]
                .try_into()
                .expect("8 bytes"),
        )
    };
    Footer {
        index: (fixed(0), fixed(8)),
        filter: (fixed(16), fixed(24)),
        properties: (fixed(32), fixed(40)),
        offset: start as u64,
    }
}

/// Start offsets of the complete records of a log file (WAL or manifest framing).
fn record_offsets(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).expect("read");
    let mut offsets = Vec::new();
    let mut offset = 0usize;
    while offset + 9 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().expect("4"));
        let end = offset + 9 + length as usize;
        if end > bytes.len() {
            break;
        }
        offsets.push(offset as u64);
        offset = end;
    }
    offsets
}

fn files_named(dir: &Path, wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_file() && wanted(&path.file_name().expect("name").to_string_lossy()))
        .collect();
    files.sort();
    files
}

fn manifest(dir: &Path) -> PathBuf {
    let mut manifests = files_named(dir, |name| name.starts_with("MANIFEST-"));
    assert_eq!(manifests.len(), 1, "one manifest");
    manifests.remove(0)
}

/// The WAL holding the writes made after the last flush.
fn live_wal(dir: &Path) -> PathBuf {
    files_named(dir, |name| name.ends_with(".log"))
        .into_iter()
        .find(|path| std::fs::metadata(path).expect("metadata").len() > 0)
        .expect("a non-empty WAL")
}

/// The only error of `report`, which must name `file`; also prints it (the report quotes it).
fn sole_error<'a>(report: &'a CheckReport, file: &Path, case: &str) -> &'a Problem {
    let errors: Vec<&Problem> = report
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .collect();
    for problem in &report.problems {
        println!("{case}: {problem}");
    }
    assert!(!errors.is_empty(), "{case}: no error reported: {report:?}");
    assert!(
        errors.iter().all(|p| p.file == file),
        "{case}: every error names {}: {errors:#?}",
        file.display()
    );
    assert!(!report.is_sound());
    errors[0]
}

/// A table on the deepest non-empty level (it has a filter and several data blocks).
fn deep_table(built: &Built) -> u64 {
    let level = built
        .levels
        .iter()
        .rposition(|files| !files.is_empty())
        .expect("a non-empty level");
    built.levels[level][0]
}

#[test]
fn a_sound_database_reports_no_problem_and_counts_what_it_read() {
    let built = build();
    let report = run_check(built.path());
    assert_eq!(report.problems, Vec::<Problem>::new());
    assert!(report.is_sound());
    let tables: usize = built.levels.iter().map(Vec::len).sum();
    assert_eq!(report.tables, tables as u64);
    assert!(report.blocks > 3 * report.tables, "{report:?}");
    assert!(report.entries >= 120, "{report:?}");
    assert_eq!(report.wal_records, built.wal_keys.len() as u64);
    assert!(report.manifest_records >= 1);
}

#[test]
fn damaged_table_blocks_are_reported_with_file_and_block_offset() {
    let built = build();
    let number = deep_table(&built);
    let path = built.table(number);
    let layout = footer(&path);
    assert!(layout.filter.1 > 0, "the table has a filter");
    let original = std::fs::read(&path).expect("read");
    // (case, byte to flip, offset the problem must name)
    let cases = [
        ("data block", 3, 0),
        ("index block", layout.index.0 + 2, layout.index.0),
        ("filter block", layout.filter.0 + 30, layout.filter.0),
        (
            "properties block",
            layout.properties.0 + 1,
            layout.properties.0,
        ),
        ("footer", layout.offset + 55, layout.offset),
    ];
    for (case, byte, offset) in cases {
        flip(&path, byte);
        let report = run_check(built.path());
        let problem = sole_error(&report, &path, case);
        assert_eq!(problem.offset, Some(offset), "{case}: {problem}");
        std::fs::write(&path, &original).expect("restore");
    }
    // The index and properties sizes were used: the blocks lie inside the file.
    assert!(layout.index.1 > 0 && layout.properties.1 > 0);
    assert!(run_check(built.path()).problems.is_empty());
}

#[test]
fn truncated_and_missing_tables_are_reported() {
    let built = build();
    let number = deep_table(&built);
    let path = built.table(number);
    let len = std::fs::metadata(&path).expect("metadata").len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open")
        .set_len(len - 100)
        .expect("truncate");
    let report = run_check(built.path());
    let problem = sole_error(&report, &path, "truncated table");
    assert_eq!(problem.offset, Some(len - 100 - 60), "{problem}");

    std::fs::remove_file(&path).expect("remove");
    let report = run_check(built.path());
    let problem = sole_error(&report, &path, "missing table");
    assert!(problem.message.contains("missing"), "{problem}");
}

#[test]
fn an_orphan_table_is_a_warning() {
    let built = build();
    let orphan = built.path().join("999990.sst");
    std::fs::copy(built.table(deep_table(&built)), &orphan).expect("copy");
    let report = run_check(built.path());
    for problem in &report.problems {
        println!("orphan table: {problem}");
    }
    assert!(report.is_sound(), "{report:?}");
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].file, orphan);
    assert_eq!(report.problems[0].severity, Severity::Warning);
    assert!(report.problems[0].message.contains("orphan"));
}

/// Found by `strata crash-test` once its children ran `check` after every crash: a table a crash
/// cut short while a flush was writing it (here: empty) is an orphan, and its damage loses
/// nothing (Db::open deletes it), so it is a warning, not an error.
#[test]
fn a_damaged_orphan_table_left_by_a_crash_is_a_warning() {
    let built = build();
    let orphan = built.path().join("999991.sst");
    std::fs::write(&orphan, b"").expect("an empty table file");
    let report = run_check(built.path());
    assert!(report.is_sound(), "{report:?}");
    assert!(report.problems.len() >= 2, "{report:?}");
    for problem in &report.problems {
        assert_eq!(problem.file, orphan);
        assert_eq!(problem.severity, Severity::Warning, "{problem}");
    }
}

#[test]
fn manifest_and_current_damage_is_reported() {
    let built = build();
    let manifest = manifest(built.path());
    let original = std::fs::read(&manifest).expect("read");
    flip(&manifest, 12);
    let report = run_check(built.path());
    let problem = sole_error(&report, &manifest, "flipped manifest byte");
    assert_eq!(problem.offset, Some(0));
    // Without a usable manifest the tables are still read, each one an orphan no more.
    assert!(report.tables > 0 && report.entries > 0);
    std::fs::write(&manifest, &original).expect("restore");

    let current = built.path().join("CURRENT");
    let named = std::fs::read(&current).expect("read");
    std::fs::remove_file(&current).expect("remove");
    let report = run_check(built.path());
    sole_error(&report, &current, "missing CURRENT");
    assert!(report.tables > 0);

    std::fs::write(&current, b"MANIFEST-999999\n").expect("write");
    let report = run_check(built.path());
    let problem = sole_error(&report, &current, "CURRENT naming a missing manifest");
    assert!(problem.message.contains("MANIFEST-999999"), "{problem}");
    std::fs::write(&current, b"MANIFEST-../x\n").expect("write");
    let report = run_check(built.path());
    let problem = sole_error(&report, &current, "CURRENT not naming a manifest");
    assert_eq!(problem.offset, Some(0));
    std::fs::write(&current, named).expect("restore");
    assert!(run_check(built.path()).problems.is_empty());
}

#[test]
fn wal_damage_is_reported_torn_tails_as_warnings() {
    let built = build();
    let wal = live_wal(built.path());
    let offsets = record_offsets(&wal);
    assert!(offsets.len() >= 3, "{offsets:?}");
    let original = std::fs::read(&wal).expect("read");

    std::fs::write(&wal, &original[..original.len() - 3]).expect("tear");
    let report = run_check(built.path());
    for problem in &report.problems {
        println!("torn WAL tail: {problem}");
    }
    assert!(report.is_sound(), "a torn tail is a warning: {report:?}");
    assert_eq!(report.problems.len(), 1);
    let problem = &report.problems[0];
    assert_eq!(problem.file, wal);
    assert_eq!(problem.severity, Severity::Warning);
    assert_eq!(problem.offset, offsets.last().copied());
    assert!(problem.message.contains("torn tail"), "{problem}");

    let mut damaged = original.clone();
    damaged[offsets[1] as usize + 12] ^= 0x01;
    std::fs::write(&wal, &damaged).expect("write");
    let report = run_check(built.path());
    let problem = sole_error(&report, &wal, "corrupt WAL record in the middle");
    assert_eq!(problem.offset, Some(offsets[1]));
    assert!(problem.message.contains("checksum"), "{problem}");
    assert_eq!(report.wal_records, 1);

    // A damaged length field in the middle looks like a torn tail to the log reader; the sound
    // record after it gives it away.
    let mut damaged = original.clone();
    damaged[offsets[1] as usize + 6] ^= 0x01;
    std::fs::write(&wal, &damaged).expect("write");
    let report = run_check(built.path());
    let problem = sole_error(
        &report,
        &wal,
        "damaged length of a WAL record in the middle",
    );
    assert_eq!(problem.offset, Some(offsets[1]));
    assert!(problem.message.contains("not a torn tail"), "{problem}");
}

#[test]
fn a_damaged_access_snapshot_is_reported() {
    let built = build();
    let access = built.path().join("ACCESS");
    assert!(access.exists(), "access statistics were on");
    flip(&access, 10);
    let report = run_check(built.path());
    let problem = sole_error(&report, &access, "corrupt ACCESS");
    assert_eq!(problem.offset, Some(0));
}

/// Every key of the model through `get` and the iterator, except `allowed`, whose values are
/// checked against `expected_instead`.
fn assert_serves(
    db: &Db,
    model: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    expected_instead: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) {
    let mut expected = model.clone();
    expected.extend(expected_instead.clone());
    for (key, value) in &expected {
        let got = db.get(key).expect("get").map(|v| v.into_vec());
        assert_eq!(&got, value, "key {}", String::from_utf8_lossy(key));
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .map(|entry| entry.expect("iterate"))
        .map(|(k, v)| (k, v.into_vec()))
        .collect();
    let live: Vec<(Vec<u8>, Vec<u8>)> = expected
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    assert_eq!(scanned, live);
}

fn lost(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("lost"))
        .map(|entries| {
            entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn repair_rebuilds_a_deleted_manifest_and_current() {
    let built = build();
    std::fs::remove_file(manifest(built.path())).expect("remove manifest");
    std::fs::remove_file(built.path().join("CURRENT")).expect("remove CURRENT");
    let report = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(report.repaired);
    let tables: usize = built.levels.iter().map(Vec::len).sum();
    // Every table plus the one written from the WAL.
    assert_eq!(report.kept_tables.len(), tables + 1, "{report:#?}");
    assert_eq!(report.wal_records_replayed, built.wal_keys.len() as u64);
    assert_eq!(report.wal_bytes_dropped, 0);
    assert!(report
        .set_aside
        .iter()
        .all(|s| !s.file.to_string_lossy().ends_with(".sst")));
    assert!(run_check(built.path()).problems.is_empty());
    let db = Db::open(built.path(), options()).expect("open repaired");
    assert_serves(&db, &built.model, &BTreeMap::new());
    db.close().expect("close");
    // A sound database is left alone.
    let again = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(!again.repaired);
}

#[test]
fn repair_replaces_a_corrupt_manifest() {
    let built = build();
    let manifest = manifest(built.path());
    flip(&manifest, 12);
    assert!(Db::open(built.path(), options()).is_err());
    let report = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(report.repaired);
    let name = manifest
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        lost(built.path()).contains(&name),
        "{:?}",
        lost(built.path())
    );
    let db = Db::open(built.path(), options()).expect("open repaired");
    assert_serves(&db, &built.model, &BTreeMap::new());
    db.close().expect("close");
}

#[test]
fn repair_replays_each_wal_up_to_its_damage_and_counts_the_dropped_bytes() {
    let built = build();
    let wal = live_wal(built.path());
    let last = *record_offsets(&wal).last().expect("records");
    let original = std::fs::read(&wal).expect("read");
    let torn_len = original.len() - 3;
    std::fs::write(&wal, &original[..torn_len]).expect("tear");
    std::fs::remove_file(built.path().join("CURRENT")).expect("remove CURRENT");
    let report = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(report.repaired);
    assert_eq!(report.wal_records_replayed, built.wal_keys.len() as u64 - 1);
    assert_eq!(report.wal_bytes_dropped, torn_len as u64 - last);
    let wal_name = wal
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(lost(built.path()).contains(&wal_name));
    let db = Db::open(built.path(), options()).expect("open repaired");
    // Key 501 was written only in the torn record.
    let instead: BTreeMap<Vec<u8>, Option<Vec<u8>>> = [(key(501), None)].into_iter().collect();
    assert_serves(&db, &built.model, &instead);
    db.close().expect("close");
}

/// Where a test flips a byte of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    /// A byte in the middle of the data blocks.
    DataBlock,
    /// A byte in the middle of the index block.
    Index,
    /// A byte in the middle of the filter block.
    Filter,
    /// A byte of the footer's magic number.
    Footer,
}

/// Flips one byte of `path` where `damage` says.
fn damage_table(path: &Path, damage: Damage) {
    let footer = footer(path);
    assert!(footer.filter.1 > 0, "{} has a filter", path.display());
    let data_end = footer.filter.0.min(footer.properties.0).min(footer.index.0);
    let offset = match damage {
        Damage::DataBlock => data_end / 2,
        Damage::Index => footer.index.0 + footer.index.1 / 2,
        Damage::Filter => footer.filter.0 + footer.filter.1 / 2,
        Damage::Footer => footer.offset + 55,
    };
    flip(path, offset);
}

/// Every table's entries, by table number.
fn entries_of_tables(
    dir: &Path,
    numbers: impl IntoIterator<Item = u64>,
) -> HashMap<u64, Vec<TableEntry>> {
    numbers
        .into_iter()
        .map(|number| {
            let entries = table_entries(dir, number, &Options::default()).expect("read");
            (number, entries)
        })
        .collect()
}

/// The entries of `written` that `kept` lacks, checking that `kept` holds the others unchanged
/// and in order; returns the lost entries and the number of contiguous runs they form.
fn lost_entries(written: &[TableEntry], kept: &[TableEntry]) -> (Vec<TableEntry>, usize) {
    let mut lost = Vec::new();
    let mut runs = 0;
    let mut kept_iter = kept.iter().peekable();
    let mut in_run = false;
    for entry in written {
        if kept_iter.peek() == Some(&entry) {
            kept_iter.next();
            in_run = false;
        } else {
            lost.push(entry.clone());
            runs += usize::from(!in_run);
            in_run = true;
        }
    }
    assert_eq!(
        kept_iter.next(),
        None,
        "salvage kept an entry never written"
    );
    (lost, runs)
}

/// Each key's newest version among `tables`' entries except `lost` (`None` for a tombstone),
/// with the WAL's keys from the model on top: what a repaired database must serve.
fn newest_surviving(
    tables: &HashMap<u64, Vec<TableEntry>>,
    lost: &[TableEntry],
    built: &Built,
) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
    let lost: BTreeSet<(Vec<u8>, u64)> = lost.iter().map(|e| (e.key.clone(), e.sequence)).collect();
    let mut newest: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> = BTreeMap::new();
    for entry in tables.values().flatten() {
        if lost.contains(&(entry.key.clone(), entry.sequence)) {
            continue;
        }
        let slot = newest
            .entry(entry.key.clone())
            .or_insert((entry.sequence, entry.value.clone()));
        if entry.sequence > slot.0 {
            *slot = (entry.sequence, entry.value.clone());
        }
    }
    let mut expected: BTreeMap<Vec<u8>, Option<Vec<u8>>> =
        newest.into_iter().map(|(k, (_, v))| (k, v)).collect();
    for key in &built.wal_keys {
        expected.insert(key.clone(), built.model[key].clone());
    }
    // Keys the model has that no surviving version holds read as absent.
    for key in built.model.keys() {
        expected.entry(key.clone()).or_insert(None);
    }
    expected
}

/// Damages one table per entry of `damages` (distinct tables, deepest level first), repairs,
/// and checks each salvage against the tables' contents before the damage: the salvaged table
/// holds every entry of the damaged one except those of the lost blocks, unchanged and in
/// order; the report counts them; and the database serves, for every key, its newest version
/// among the surviving entries. Returns the repair report and the damaged tables.
fn repair_after(built: &Built, damages: &[Damage]) -> (strata::RepairReport, Vec<(u64, Damage)>) {
    let before = entries_of_tables(built.path(), built.levels.iter().flatten().copied());
    let mut victims: Vec<u64> = built.levels.iter().rev().flatten().copied().collect();
    victims.retain(|&n| footer(&built.table(n)).filter.1 > 0);
    assert!(
        victims.len() >= damages.len(),
        "enough tables with filters: {victims:?}"
    );
    let damaged: Vec<(u64, Damage)> = victims.into_iter().zip(damages.iter().copied()).collect();
    for &(number, damage) in &damaged {
        damage_table(&built.table(number), damage);
    }
    let report = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(report.repaired);
    assert_eq!(report.ordering_conflicts, 0);
    let mut all_lost = Vec::new();
    for &(number, damage) in &damaged {
        let salvaged = report
            .salvaged
            .iter()
            .find(|s| s.number == number)
            .unwrap_or_else(|| panic!("{number} salvaged: {report:#?}"));
        println!("{damage:?}: {salvaged:?}");
        assert!(lost(built.path()).contains(&format!("{number:06}.sst")));
        assert!(!built.table(number).exists());
        let into = salvaged.salvaged_into.expect("a salvaged table");
        let kept = table_entries(built.path(), into, &Options::default()).expect("salvaged reads");
        assert_eq!(kept.len() as u64, salvaged.entries_kept);
        let (lost_here, runs) = lost_entries(&before[&number], &kept);
        assert!(report
            .kept_tables
            .iter()
            .any(|t| t.number == into && t.salvaged_from == Some(number)));
        match damage {
            Damage::DataBlock => {
                assert_eq!(salvaged.blocks_lost, Some(1), "{damage:?}");
                assert_eq!(runs, 1, "one block's entries are lost");
                assert_eq!(salvaged.lost_block_offsets.len(), 1);
            }
            Damage::Index | Damage::Filter | Damage::Footer => {
                assert_eq!(salvaged.blocks_lost, Some(0), "{damage:?}");
                assert!(lost_here.is_empty(), "{damage:?} loses no entry");
            }
        }
        assert_eq!(
            salvaged.entries_lost,
            Some(lost_here.len() as u64),
            "{damage:?}"
        );
        let expected_location = match damage {
            Damage::DataBlock | Damage::Filter => strata::BlockLocation::Index,
            Damage::Index | Damage::Footer => strata::BlockLocation::Framing,
        };
        assert_eq!(salvaged.located_by, Some(expected_location), "{damage:?}");
        all_lost.extend(lost_here);
    }
    assert!(run_check(built.path()).problems.is_empty());
    let expected = newest_surviving(&before, &all_lost, built);
    let db = Db::open(built.path(), options()).expect("open repaired");
    assert_serves(&db, &expected, &BTreeMap::new());
    db.close().expect("close");
    (report, damaged)
}

#[test]
fn repair_salvages_the_sound_blocks_of_a_table_with_a_damaged_data_block() {
    let built = build();
    let (report, damaged) = repair_after(&built, &[Damage::DataBlock]);
    let salvaged = &report.salvaged[0];
    assert!(salvaged.entries_kept > 0);
    assert!(salvaged.entries_lost.expect("known") > 0);
    // Some key's newest version was in the lost block, unless the WAL overwrote them all: then an
    // older version (or nothing) is what reads now, as `newest_surviving` expects.
    println!("damaged table {}: {salvaged:?}", damaged[0].0);
}

#[test]
fn repair_salvage_keeps_every_entry_when_only_the_filter_is_damaged() {
    let built = build();
    let (report, _) = repair_after(&built, &[Damage::Filter]);
    let salvaged = &report.salvaged[0];
    assert_eq!(salvaged.entries_lost, Some(0));
    assert_eq!(salvaged.blocks_lost, Some(0));
    assert!(salvaged.entries_kept > 0);
}

#[test]
fn repair_salvages_tables_with_damaged_data_index_filter_and_footer_and_is_idempotent() {
    let built = build();
    let (report, damaged) = repair_after(
        &built,
        &[
            Damage::DataBlock,
            Damage::Index,
            Damage::Filter,
            Damage::Footer,
        ],
    );
    assert_eq!(report.salvaged.len(), damaged.len());
    // A second repair finds a sound database and, forced, rebuilds the same contents.
    let contents = |dir: &Path| {
        let db = Db::open(dir, options()).expect("open");
        let all: Vec<(Vec<u8>, Vec<u8>)> = db
            .iter()
            .map(|entry| entry.expect("iterate"))
            .map(|(k, v)| (k, v.into_vec()))
            .collect();
        db.close().expect("close");
        all
    };
    let first = contents(built.path());
    let again = repair(built.path(), &options(), RepairMode::IfDamaged).expect("repair");
    assert!(!again.repaired);
    let forced = repair(built.path(), &options(), RepairMode::Always).expect("repair");
    assert!(forced.repaired);
    assert!(forced.salvaged.is_empty());
    assert_eq!(forced.kept_entries, report.kept_entries);
    assert_eq!(contents(built.path()), first);
}

/// Every single flipped byte of a table, and of the manifest, is found (never a panic) and
/// charged to that file as an error; the one exception is the length field of the manifest's
/// last record, whose damage cannot be told from a torn tail (a warning).
#[test]
fn every_flipped_byte_of_a_table_and_the_manifest_is_detected() {
    let built = build();
    let number = deep_table(&built);
    let table = built.table(number);
    let manifest = manifest(built.path());
    let last_record = *record_offsets(&manifest).last().expect("records");
    let last_length = last_record as usize + 4..last_record as usize + 8;
    // The manifest's flips are judged with the other tables moved away (each check would read
    // them all; their absence is charged to the tables, not to the manifest).
    let aside = tempfile::tempdir().expect("tempdir");
    for other in files_named(built.path(), |name| name.ends_with(".sst")) {
        if other != table {
            let name = other.file_name().expect("name");
            std::fs::rename(&other, aside.path().join(name)).expect("move");
        }
    }
    for path in [&table, &manifest] {
        let original = std::fs::read(path).expect("read");
        let mut undetected = Vec::new();
        let mut warned = Vec::new();
        for position in 0..original.len() {
            let mut damaged = original.clone();
            damaged[position] ^= 0x21;
            std::fs::write(path, &damaged).expect("write");
            let severity = if path == &table {
                // The table's own scan, as check runs it (much faster than checking every file).
                table_entries(built.path(), number, &Options::default())
                    .err()
                    .map(|_| Severity::Error)
            } else {
                let report = run_check(built.path());
                report
                    .problems
                    .iter()
                    .filter(|p| &p.file == path)
                    .map(|p| p.severity)
                    .max()
            };
            match severity {
                Some(Severity::Error) => {}
                Some(Severity::Warning) => warned.push(position),
                None => undetected.push(position),
            }
        }
        std::fs::write(path, &original).expect("restore");
        assert_eq!(
            undetected,
            Vec::<usize>::new(),
            "flips of {} that check missed ({} bytes)",
            path.display(),
            original.len()
        );
        assert!(
            warned
                .iter()
                .all(|p| path == &manifest && last_length.contains(p)),
            "flips of {} reported only as warnings: {warned:?}",
            path.display()
        );
    }
}

/// The repair table: one table of 15,223 entries in 4 KiB blocks (like the one whose three
/// flipped bytes cost 13,722 entries when repair set whole tables aside), damaged one way per
/// row on a fresh copy, then repaired; prints entries kept per damage kind. Run with
/// `cargo test -p strata --release --test check_repair repair_salvage_table -- --nocapture`.
#[test]
fn repair_salvage_table_of_entries_kept_per_damage_kind() {
    const ENTRIES: u32 = 15_223;
    let options = || {
        Options::default()
            .write_buffer_bytes(64 << 20)
            .target_file_bytes(64 << 20)
            .block_bytes(4096)
            .bits_per_key(10.0)
            .expect("bits per key")
    };
    let source = tempfile::tempdir().expect("tempdir");
    let db = Db::open(source.path(), options()).expect("open");
    for i in 0..ENTRIES {
        let value = format!("value-{i:06}-{}", "v".repeat(37));
        db.put(format!("user{i:08}"), value).expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
    drop(db);
    let tables = files_named(source.path(), |name| name.ends_with(".sst"));
    assert_eq!(tables.len(), 1, "one table");
    let table_name = tables[0].file_name().expect("name").to_owned();

    let cases: [(&str, &[&str]); 6] = [
        (
            "3 bytes in 3 data blocks",
            &["data 1/4", "data 2/4", "data 3/4"],
        ),
        ("1 byte in the index block", &["index"]),
        ("1 byte in the filter block", &["filter"]),
        ("1 byte in the properties block", &["properties"]),
        ("1 byte in the footer", &["footer"]),
        ("the index block and 1 data block", &["index", "data 2/4"]),
    ];
    println!("| damage | entries kept | of | data blocks kept | lost | found by |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    for (name, flips) in cases {
        let copy = tempfile::tempdir().expect("tempdir");
        for file in files_named(source.path(), |_| true) {
            let to = copy.path().join(file.file_name().expect("name"));
            std::fs::copy(&file, to).expect("copy");
        }
        let table = copy.path().join(&table_name);
        let footer = footer(&table);
        let data_end = footer.filter.0.min(footer.properties.0).min(footer.index.0);
        for flip_at in flips {
            let offset = match *flip_at {
                "data 1/4" => data_end / 4,
                "data 2/4" => data_end / 2,
                "data 3/4" => data_end * 3 / 4,
                "index" => footer.index.0 + footer.index.1 / 2,
                "filter" => footer.filter.0 + footer.filter.1 / 2,
                "properties" => footer.properties.0 + footer.properties.1 / 2,
                _ => footer.offset + 55,
            };
            flip(&table, offset);
        }
        let report = repair(copy.path(), &options(), RepairMode::IfDamaged).expect("repair");
        assert_eq!(report.salvaged.len(), 1, "{name}: {report:#?}");
        let salvaged = &report.salvaged[0];
        let lost_blocks = salvaged
            .blocks_lost
            .map_or("unknown".to_string(), |n| n.to_string());
        println!(
            "| {name} | {} | {ENTRIES} | {} | {lost_blocks} | {} |",
            salvaged.entries_kept,
            salvaged.blocks_kept,
            salvaged
                .located_by
                .map_or("-".to_string(), |l| l.to_string())
        );
        let db = Db::open(copy.path(), options()).expect("open repaired");
        assert_eq!(db.iter().count() as u64, salvaged.entries_kept, "{name}");
        db.close().expect("close");
        match name {
            "3 bytes in 3 data blocks" => {
                assert_eq!(salvaged.blocks_lost, Some(3), "{name}");
                let lost = salvaged.entries_lost.expect("counts known");
                assert_eq!(salvaged.entries_kept + lost, u64::from(ENTRIES));
                assert!(lost < 3 * 100, "{name}: {lost} entries lost");
            }
            "the index block and 1 data block" => {
                // The framing walk stops at the damaged block; the index cannot locate the next.
                assert!(salvaged.entries_kept < u64::from(ENTRIES));
                assert!(salvaged.entries_kept > u64::from(ENTRIES) / 3, "{name}");
            }
            _ => {
                assert_eq!(salvaged.entries_kept, u64::from(ENTRIES), "{name}");
                assert_eq!(salvaged.blocks_lost, Some(0), "{name}");
            }
        }
    }
}
