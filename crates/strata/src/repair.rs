//! `strata::repair`: rebuilds a database's manifest from the files in its directory, in the
//! spirit of LevelDB's and RocksDB's `RepairDB`, for when the manifest or `CURRENT` is lost or
//! damaged, or a table is.
//!
//! 1. Take the `LOCK` (no `Db` may have the database open) and run [`check`]; with
//!    [`RepairMode::IfDamaged`] a database without errors is left alone.
//! 2. Read every table file in full ([`check`]'s table scan: footer, every block's checksum, key
//!    order, properties). A sound table is kept; a damaged one is moved into `lost/`.
//! 3. Replay each WAL's records up to the first damage in that log into one new table (the
//!    bytes after the damage are counted as dropped), then move the logs into `lost/`.
//! 4. Order the kept tables so that newer data shadows older data: every table becomes its own
//!    level-0 run, and a run is searched before another whenever it holds a newer version of a
//!    key both hold. Ordering by the tables' largest sequence number alone is not enough: a
//!    compaction output can hold one very new key beside old versions of others that a
//!    shallower table has overwritten. So the order is a topological sort of "holds a newer
//!    version of a shared key than" (acyclic for tables that came from one tree, since the
//!    tree's own run order satisfies it), ties broken by largest sequence number, newest first.
//! 5. Write a fresh manifest with those runs, a last sequence number above every one seen, a next
//!    file number above every file present and a log number above every WAL, then replace
//!    `CURRENT` atomically (`CURRENT.tmp`, fsync, rename, directory fsync). Superseded manifests
//!    and a damaged `ACCESS` snapshot go into `lost/`.
//!
//! Nothing is deleted: whatever is not used is moved into `lost/` (`docs/FORMAT.md`). Like
//! LevelDB's repair, a table no manifest names (say, a compaction input whose deletion a crash
//! interrupted) is kept, so a key whose tombstone a later compaction dropped may reappear.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check::{check, parse_number, scan_table, CheckReport};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::key::parse_internal_key;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::access_file;
use crate::table::{table_file_name, TableBuilder};
use crate::version::edit::MANIFEST_FORMAT_VERSION;
use crate::version::set::{manifest_name, CURRENT_FILE};
use crate::version::{AddedFile, FileMetadata, Version, VersionEdit};
use crate::wal::{read_log, wal_path, LogWriter, WriteBatch};

/// The subdirectory damaged and superseded files are moved into.
pub const LOST_DIR: &str = "lost";

/// When [`repair`] rebuilds the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairMode {
    /// Only when [`check`] reports an error (missing or damaged `CURRENT`, manifest, table,
    /// WAL record or `ACCESS` snapshot).
    #[default]
    IfDamaged,
    /// Always, even for a sound database.
    Always,
}

/// A table the repaired manifest keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptTable {
    /// File number (`{number:06}.sst`).
    pub number: u64,
    /// Entries it holds (every version and tombstone).
    pub entries: u64,
    /// Its sequence number range.
    pub smallest_sequence: u64,
    /// Its sequence number range.
    pub largest_sequence: u64,
}

/// A file moved into `lost/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// Where it was.
    pub file: PathBuf,
    /// Where it is now.
    pub moved_to: PathBuf,
    /// Why.
    pub reason: String,
}

/// What [`repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The check run first, on the database as it was.
    pub before: CheckReport,
    /// False when the database was sound and [`RepairMode::IfDamaged`] left it alone.
    pub repaired: bool,
    /// The tables in the new manifest, in search order (newest first), including the one
    /// written from the WALs.
    pub kept_tables: Vec<KeptTable>,
    /// Entries in the kept tables.
    pub kept_entries: u64,
    /// Files moved into `lost/`.
    pub set_aside: Vec<SetAside>,
    /// WAL records replayed into the new table.
    pub wal_records_replayed: u64,
    /// WAL bytes from the first damage in each log to its end, not replayed.
    pub wal_bytes_dropped: u64,
    /// The table the WAL records were written to, if any.
    pub wal_table: Option<u64>,
    /// The new manifest.
    pub manifest: Option<PathBuf>,
    /// The last sequence number the new manifest records.
    pub last_sequence: u64,
    /// Pairs of tables whose newer-than relation was circular (not expected from tables of one
    /// tree); such tables are ordered by largest sequence number and the keys they share may
    /// read an older version.
    pub ordering_conflicts: u64,
}

/// Rebuilds the manifest of the database in `dir` from its files (see the module
/// documentation). `options` supplies the file system, block sizes and the filter budget for
/// the table written from the WALs. `Err` when the database is locked, the directory holds none
/// of a database's files (`CURRENT`, a manifest, a table) or a write fails; damage is
/// never an error here, it is what gets repaired.
pub fn repair(dir: &Path, options: &Options, mode: RepairMode) -> Result<RepairReport> {
    let fs = options.file_system.as_ref();
    refuse_non_database(fs, dir)?;
    let _lock = fs.lock(&dir.join("LOCK"))?;
    let before = check(dir, options)?;
    let mut report = RepairReport {
        repaired: mode == RepairMode::Always || !before.is_sound(),
        before,
        ..Default::default()
    };
    if !report.repaired {
        return Ok(report);
    }
    let mut files = DirectoryFiles::list(fs, dir)?;

    // The WALs, up to the first damage in each, into one new table.
    let (mem, mut last_sequence) = replay_wals(fs, dir, &files.wals, &mut report)?;
    if !mem.is_empty() {
        let number = files.take_file_number();
        write_wal_table(fs, dir, options, &mem, number)?;
        report.wal_table = Some(number);
        files.tables.push(number);
    }

    // Every table read in full; the damaged ones set aside.
    let (candidates, holders) =
        scan_candidates(fs, dir, &files.tables, &mut last_sequence, &mut report)?;
    let edges = newer_than_edges(holders);
    let order = newest_first(
        &candidates
            .iter()
            .map(|c| c.file.as_ref())
            .collect::<Vec<_>>(),
        &edges,
    );
    report.ordering_conflicts = order.conflicts;

    let mut edit = level0_runs_edit(&candidates, &order, &mut report);
    let manifest_number = files.take_file_number();
    edit.log_number = Some(files.next_file_number);
    edit.next_file_number = Some(files.next_file_number + 1);
    edit.last_sequence = Some(last_sequence);
    report.last_sequence = last_sequence;
    report.manifest = Some(install_manifest(fs, dir, &edit, manifest_number)?);
    set_aside_replaced_files(fs, dir, &files, &mut report)?;
    fs.sync_dir(dir)?;
    Ok(report)
}

/// Refuses a directory with none of a database's own files: repairing it would move its `.log`
/// files into lost/ and make it a database.
fn refuse_non_database(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if !fs.list_dir(dir)?.iter().any(|n| {
        n == CURRENT_FILE || n.starts_with("MANIFEST-") || parse_number(n, ".sst").is_some()
    }) {
        return Err(Error::InvalidArgument(format!(
            "{} holds no CURRENT, manifest or table file: not a Strata database",
            dir.display()
        )));
    }
    Ok(())
}

/// The numbered files of a database directory, and the next file number free after them.
struct DirectoryFiles {
    /// Table numbers, ascending.
    tables: Vec<u64>,
    /// WAL numbers, ascending.
    wals: Vec<u64>,
    manifests: Vec<u64>,
    /// Above every file present (and every number taken since).
    next_file_number: u64,
}

impl DirectoryFiles {
    fn list(fs: &dyn FileSystem, dir: &Path) -> Result<DirectoryFiles> {
        let names = fs.list_dir(dir)?;
        let mut tables: Vec<u64> = names
            .iter()
            .filter_map(|n| parse_number(n, ".sst"))
            .collect();
        tables.sort_unstable();
        let mut wals: Vec<u64> = names
            .iter()
            .filter_map(|n| parse_number(n, ".log"))
            .collect();
        wals.sort_unstable();
        let manifests: Vec<u64> = names
            .iter()
            .filter_map(|n| {
                n.strip_prefix("MANIFEST-")
                    .and_then(|n| parse_number(n, ""))
            })
            .collect();
        let next_file_number = tables
            .iter()
            .chain(&wals)
            .chain(&manifests)
            .max()
            .map_or(1, |n| n + 1);
        Ok(DirectoryFiles {
            tables,
            wals,
            manifests,
            next_file_number,
        })
    }

    /// A new file number.
    fn take_file_number(&mut self) -> u64 {
        let number = self.next_file_number;
        self.next_file_number += 1;
        number
    }
}

/// Replays each WAL's records up to its first damage into a memtable; returns it and the largest
/// sequence number replayed, and counts the records replayed and the bytes dropped.
fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    wal_numbers: &[u64],
    report: &mut RepairReport,
) -> Result<(MemTable, u64)> {
    // Never looked up: the smallest key filter.
    let mem = MemTable::new(0, 0, 0);
    let mut last_sequence = 0u64;
    for &number in wal_numbers {
        let path = wal_path(dir, number);
        let bytes = fs.read_to_end(&path)?;
        let contents = read_log(&bytes);
        let mut dropped = contents.damage.as_ref().map_or(0, |d| d.dropped_bytes);
        for (offset, record) in &contents.records {
            match WriteBatch::decode(record) {
                Ok((sequence, entries)) => {
                    for (i, entry) in entries.iter().enumerate() {
                        let entry_sequence = sequence + i as u64;
                        mem.insert(entry_sequence, entry.kind, entry.key, entry.value);
                        last_sequence = last_sequence.max(entry_sequence);
                    }
                    report.wal_records_replayed += 1;
                }
                Err(_) => {
                    dropped = bytes.len() as u64 - offset;
                    break;
                }
            }
        }
        report.wal_bytes_dropped += dropped;
    }
    Ok((mem, last_sequence))
}

/// Writes the replayed WAL entries into table `number`, built as a flush would build it.
fn write_wal_table(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    mem: &MemTable,
    number: u64,
) -> Result<()> {
    let path = dir.join(table_file_name(number));
    let mut builder = TableBuilder::new(
        path,
        fs.create_writable(&dir.join(table_file_name(number)))?,
        options.block_bytes,
        options.block_restart_interval,
    );
    builder.set_index_restart_interval(options.index_block_restart_interval);
    let budget = options.filter_allocator.bits_per_key_budget();
    builder.set_filter_module_bits(budget);
    builder.set_metadata_partitioning(options.metadata_partitioning());
    builder.set_filter_families(options.filter_family, true);
    builder.set_range_filter_bits(options.range_filter_bits);
    builder.set_compression(options.compression.for_output(0, false));
    mem.for_each_entry(|key, value| builder.add(key, value))?;
    builder.finish(budget, 0, 0)?;
    Ok(())
}

/// A sound table the repaired manifest keeps.
struct Candidate {
    number: u64,
    file: Arc<FileMetadata>,
}

/// Per user key: (candidate index, the key's newest sequence number in that table).
type KeyHolders = HashMap<Vec<u8>, Vec<(usize, u64)>>;

/// Reads every table in full: a sound one with entries becomes a candidate (raising
/// `last_sequence` to its largest sequence number), any other is set aside. Returns the
/// candidates and, per user key, the candidates holding it.
fn scan_candidates(
    fs: &dyn FileSystem,
    dir: &Path,
    table_numbers: &[u64],
    last_sequence: &mut u64,
    report: &mut RepairReport,
) -> Result<(Vec<Candidate>, KeyHolders)> {
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut holders = KeyHolders::new();
    for &number in table_numbers {
        let index = candidates.len();
        let mut keys: Vec<(Vec<u8>, u64)> = Vec::new();
        let scan = scan_table(fs, dir, number, &mut |key, _| {
            // Internal-key order puts a user key's newest version first.
            if let Some(parsed) = parse_internal_key(key) {
                if keys.last().is_none_or(|(last, _)| last != parsed.user_key) {
                    keys.push((parsed.user_key.to_vec(), parsed.sequence));
                }
            }
        });
        let sound_properties = scan.properties.as_ref().filter(|_| scan.is_sound());
        let Some(properties) = sound_properties else {
            let reason = scan
                .problems
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            set_aside(fs, dir, &table_file_name(number), reason, report)?;
            continue;
        };
        if scan.entries == 0 {
            set_aside(
                fs,
                dir,
                &table_file_name(number),
                "table holds no entries".into(),
                report,
            )?;
            continue;
        }
        *last_sequence = (*last_sequence).max(properties.largest_sequence);
        for (user_key, sequence) in keys {
            holders.entry(user_key).or_default().push((index, sequence));
        }
        candidates.push(Candidate {
            number,
            file: Arc::new(FileMetadata::from_properties(
                number,
                scan.file_bytes,
                properties,
                scan.filter_layout,
                None,
            )),
        });
    }
    Ok((candidates, holders))
}

/// "Must be searched before": from each table holding a key's newest version to each holding
/// an older one.
fn newer_than_edges(holders: KeyHolders) -> HashSet<(usize, usize)> {
    let mut edges: HashSet<(usize, usize)> = HashSet::new();
    for list in holders.values() {
        if list.len() < 2 {
            continue;
        }
        for (i, &(a, a_sequence)) in list.iter().enumerate() {
            for &(b, b_sequence) in &list[i + 1..] {
                if a_sequence > b_sequence {
                    edges.insert((a, b));
                } else if b_sequence > a_sequence {
                    edges.insert((b, a));
                }
            }
        }
    }
    edges
}

/// The new manifest's edit: every candidate its own level-0 run, in `order` (search order), and
/// the next run id; records the kept tables in `report`.
fn level0_runs_edit(
    candidates: &[Candidate],
    order: &Order,
    report: &mut RepairReport,
) -> VersionEdit {
    let runs = order.order.len() as u64;
    let mut edit = VersionEdit {
        format_version: Some(MANIFEST_FORMAT_VERSION),
        ..Default::default()
    };
    for (position, &index) in order.order.iter().enumerate() {
        let candidate = &candidates[index];
        let file = &candidate.file;
        report.kept_entries += file.entries;
        report.kept_tables.push(KeptTable {
            number: candidate.number,
            entries: file.entries,
            smallest_sequence: file.smallest_sequence,
            largest_sequence: file.largest_sequence,
        });
        edit.new_files.push(AddedFile {
            level: 0,
            // Higher run ids are newer runs: the first in search order gets the highest.
            run_id: runs - position as u64,
            file: Arc::clone(file),
        });
    }
    edit.next_run_id = Some(runs + 1);
    edit
}

/// Checks that `edit` builds a valid version, writes it as manifest `manifest_number` and
/// points `CURRENT` at it; returns the manifest's path.
fn install_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    edit: &VersionEdit,
    manifest_number: u64,
) -> Result<PathBuf> {
    let manifest_path = dir.join(manifest_name(manifest_number));
    Version::default()
        .apply(edit, None)
        .map_err(|reason| Error::corruption(&manifest_path, 0, reason))?;

    // The damaged tables are already in lost/. The old manifests and the WALs stay in place
    // until CURRENT names the new manifest, so a crash before the switch leaves the database as
    // it was plus one unreferenced table; after the switch, the new log number makes every old
    // WAL obsolete, so moving them is only tidying.
    let mut writer = LogWriter::new(fs.create_writable(&manifest_path)?);
    writer.add_record(&edit.encode())?;
    writer.sync()?;
    drop(writer);
    let temp = dir.join("CURRENT.tmp");
    let mut current = fs.create_writable(&temp)?;
    current.append(format!("{}\n", manifest_name(manifest_number)).as_bytes())?;
    current.sync()?;
    drop(current);
    fs.rename(&temp, &dir.join(CURRENT_FILE))?;
    fs.sync_dir(dir)?;
    Ok(manifest_path)
}

/// Moves what the new manifest replaced into `lost/`: the old manifests, the replayed WALs and
/// a damaged `ACCESS` snapshot.
fn set_aside_replaced_files(
    fs: &dyn FileSystem,
    dir: &Path,
    files: &DirectoryFiles,
    report: &mut RepairReport,
) -> Result<()> {
    for &number in &files.manifests {
        set_aside(
            fs,
            dir,
            &manifest_name(number),
            "superseded by the repaired manifest".into(),
            report,
        )?;
    }
    for &number in &files.wals {
        let name = wal_path(dir, number);
        let name = name
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        set_aside(
            fs,
            dir,
            &name,
            "replayed into the repaired database (up to its first damage)".into(),
            report,
        )?;
    }
    if access_file::load(fs, dir).is_err() {
        set_aside(
            fs,
            dir,
            access_file::ACCESS_FILE,
            "damaged access statistics snapshot".into(),
            report,
        )?;
    }
    Ok(())
}

/// Moves `dir/name` to `dir/lost/name` (or `name.1`, `name.2`... if taken).
fn set_aside(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    reason: String,
    report: &mut RepairReport,
) -> Result<()> {
    let lost = dir.join(LOST_DIR);
    fs.create_dir_all(&lost)?;
    let mut target = lost.join(name);
    let mut suffix = 0;
    while fs.exists(&target) {
        suffix += 1;
        target = lost.join(format!("{name}.{suffix}"));
    }
    let file = dir.join(name);
    fs.rename(&file, &target)?;
    report.set_aside.push(SetAside {
        file,
        moved_to: target,
        reason,
    });
    Ok(())
}

struct Order {
    order: Vec<usize>,
    conflicts: u64,
}

/// A topological order of `files` under `edges` (`(a, b)`: `a` before `b`), choosing among the
/// files free to go next the one with the largest sequence number (then the higher number).
/// Files left on a cycle follow in that same order, counted as conflicts.
fn newest_first(files: &[&FileMetadata], edges: &HashSet<(usize, usize)>) -> Order {
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    let mut predecessors = vec![0usize; files.len()];
    for &(before, after) in edges {
        successors[before].push(after);
        predecessors[after] += 1;
    }
    let priority = |i: usize| (files[i].largest_sequence, files[i].number, i);
    let mut ready: BinaryHeap<(u64, u64, usize)> = (0..files.len())
        .filter(|&i| predecessors[i] == 0)
        .map(priority)
        .collect();
    let mut order = Vec::with_capacity(files.len());
    let mut placed = vec![false; files.len()];
    while let Some((_, _, index)) = ready.pop() {
        order.push(index);
        placed[index] = true;
        for &next in &successors[index] {
            predecessors[next] -= 1;
            if predecessors[next] == 0 {
                ready.push(priority(next));
            }
        }
    }
    let mut rest: Vec<usize> = (0..files.len()).filter(|&i| !placed[i]).collect();
    rest.sort_unstable_by_key(|&i| std::cmp::Reverse(priority(i)));
    let conflicts = rest.len() as u64;
    order.extend(rest);
    Order { order, conflicts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::RealFileSystem;
    use crate::key::{encode_internal_key, ValueKind};
    use crate::version::tests::file_metadata;
    use crate::Db;

    /// Writes table `number` holding `entries` (user key, sequence, value), given in internal-key
    /// order.
    fn write_table(dir: &Path, number: u64, entries: &[(&str, u64, &str)]) {
        let path = dir.join(table_file_name(number));
        let file = RealFileSystem.create_writable(&path).expect("create");
        let mut builder = TableBuilder::new(path, file, 4096, 16);
        for &(key, sequence, value) in entries {
            let internal = encode_internal_key(key.as_bytes(), sequence, ValueKind::Value);
            builder.add(&internal, value.as_bytes()).expect("add");
        }
        builder.finish(10.0, 0, 0).expect("finish");
    }

    /// A deeper table can hold a newer key than every key of a shallower one beside an older
    /// version of a key the shallower one overwrote: ordering by largest sequence number would
    /// let the old version win.
    #[test]
    fn repair_orders_runs_by_which_holds_the_newer_version_not_by_largest_sequence() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Table 1: a compaction output with k's first version and m, written last of all.
        write_table(dir.path(), 1, &[("k", 1, "old"), ("m", 10, "newest")]);
        // Table 2: a flush that overwrote k after table 1's k but before m.
        write_table(dir.path(), 2, &[("a", 4, "a"), ("k", 5, "newer")]);
        let report =
            repair(dir.path(), &Options::default(), RepairMode::IfDamaged).expect("repair");
        assert!(report.repaired, "no CURRENT: repair is needed");
        let order: Vec<u64> = report.kept_tables.iter().map(|t| t.number).collect();
        assert_eq!(order, [2, 1], "table 2 holds k's newer version");
        assert_eq!(report.last_sequence, 10);
        let db = Db::open(dir.path(), Options::default()).expect("open");
        assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"newer"[..]));
        assert_eq!(db.get("m").expect("get").as_deref(), Some(&b"newest"[..]));
        assert_eq!(db.get("a").expect("get").as_deref(), Some(&b"a"[..]));
        db.close().expect("close");
    }

    #[test]
    fn newest_first_follows_the_edges_before_the_sequence_numbers() {
        // File 0 has the largest sequence number but holds an older version than file 2.
        let files: Vec<FileMetadata> = [(1, 300), (2, 100), (3, 50)]
            .into_iter()
            .map(|(n, largest)| file_metadata(n, "a", "z").with_sequences(1, largest))
            .collect();
        let refs: Vec<&FileMetadata> = files.iter().collect();
        let plain = newest_first(&refs, &HashSet::new());
        assert_eq!(plain.order, [0, 1, 2]);
        let edges: HashSet<(usize, usize)> = [(2, 0)].into_iter().collect();
        let ordered = newest_first(&refs, &edges);
        assert_eq!(ordered.order, [1, 2, 0]);
        assert_eq!(ordered.conflicts, 0);
        let cycle: HashSet<(usize, usize)> = [(2, 0), (0, 2)].into_iter().collect();
        let broken = newest_first(&refs, &cycle);
        assert_eq!(broken.order, [1, 0, 2]);
        assert_eq!(broken.conflicts, 2);
    }
}
