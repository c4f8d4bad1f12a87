//! `strata::repair`: rebuilds a database's manifest from the files in its directory, in the
//! spirit of LevelDB's and RocksDB's `RepairDB`, for when the manifest or `CURRENT` is lost or
//! damaged, or a table is.
//!
//! 1. Take the `LOCK` (no `Db` may have the database open) and run [`check`]; with
//!    [`RepairMode::IfDamaged`] a database without errors is left alone.
//! 2. Read every table file in full ([`check`]'s table scan: footer, every block's checksum, key
//!    order, properties). A sound table is kept. A damaged one is salvaged, as LevelDB's
//!    `Repairer::RepairTable` does: the entries of every data block that verifies are copied, in
//!    order and with their sequence numbers and tombstones, into a new table built like a flush
//!    (the filter rebuilt at the filter allocator's budget), which is kept like a sound table; the
//!    damaged original is moved into `lost/` unchanged. The blocks are found by the index, or, when
//!    the footer or index is damaged, by walking the blocks' framing (`table/salvage.rs`). The
//!    report says per table how many entries were kept and how many blocks (and, where the
//!    properties tell, entries) were lost.
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
//! interrupted) is kept, so a key whose tombstone a later compaction dropped may reappear. For the
//! same reason, when a lost block held a key's newest version (or its tombstone), the newest
//! version that survives elsewhere, an older one, is what the repaired database serves: the
//! ordering above lets every surviving version keep its place, but cannot restore what is lost.
//!
//! A crash between writing a salvaged table and moving the damaged original into `lost/` leaves
//! both; the next repair salvages the original again, and the two copies hold the same versions
//! with the same sequence numbers, so either serves them.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check::{check, parse_number, scan_table, CheckReport, Severity};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::key::{parse_internal_key, MAX_SEQUENCE};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::access_file;
use crate::table::salvage::salvage_table;
pub use crate::table::salvage::BlockLocation;
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
    /// The damaged table whose readable entries it holds, if it was written by salvage.
    pub salvaged_from: Option<u64>,
}

/// A damaged table whose readable data blocks were copied into a new table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvagedTable {
    /// The damaged table (now in `lost/`).
    pub number: u64,
    /// The table its entries were copied into; `None` when no data block was readable.
    pub salvaged_into: Option<u64>,
    /// What `check` found wrong with it (its first error).
    pub damage: String,
    /// How its data blocks were found; `None` when none was.
    pub located_by: Option<BlockLocation>,
    /// Entries copied (every version and tombstone of the sound data blocks).
    pub entries_kept: u64,
    /// Data blocks copied.
    pub blocks_kept: u64,
    /// Data blocks lost, when the number of data blocks is known (from a readable index or
    /// properties block).
    pub blocks_lost: Option<u64>,
    /// Entries lost, when the properties block was readable.
    pub entries_lost: Option<u64>,
    /// Offsets of the lost data blocks that could be named (the index's, or out of order).
    pub lost_block_offsets: Vec<u64>,
    /// Why the index was not used, where a framing walk stopped, in words.
    pub notes: Vec<String>,
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
    /// Damaged tables and what salvage read from each, in file-number order.
    pub salvaged: Vec<SalvagedTable>,
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
    let tables = files.tables.clone();
    let mut tables_scan = TablesScan {
        fs,
        dir,
        options,
        files: &mut files,
        last_sequence: &mut last_sequence,
        report: &mut report,
        candidates: Vec::new(),
        holders: KeyHolders::new(),
    };
    for number in tables {
        tables_scan.scan(number)?;
    }
    let (candidates, holders) = (tables_scan.candidates, tables_scan.holders);
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
    // No snapshot outlives a closed database: one version of each key, as a flush at open keeps.
    write_table(fs, dir, options, number, &mut |builder| {
        mem.for_each_visible_entry(MAX_SEQUENCE, |key, value| builder.add(key, value))
            .map(|_| ())
    })
}

/// Writes table `number` as a flush would build it (block sizes, compression and a filter at the
/// filter allocator's budget, from `options`), its entries added in internal-key order by `add`.
fn write_table(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &Options,
    number: u64,
    add: &mut dyn FnMut(&mut TableBuilder) -> Result<()>,
) -> Result<()> {
    let path = dir.join(table_file_name(number));
    let mut builder = TableBuilder::new(
        path.clone(),
        fs.create_writable(&path)?,
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
    add(&mut builder)?;
    builder.finish(budget, 0, 0)?;
    Ok(())
}

/// A sound table the repaired manifest keeps.
struct Candidate {
    number: u64,
    /// The damaged table it was salvaged from.
    salvaged_from: Option<u64>,
    file: Arc<FileMetadata>,
}

/// Per user key: (candidate index, the key's newest sequence number in that table).
type KeyHolders = HashMap<Vec<u8>, Vec<(usize, u64)>>;

/// Reads every table in full (see [`TablesScan::scan`]) and gathers the candidates.
struct TablesScan<'a> {
    fs: &'a dyn FileSystem,
    dir: &'a Path,
    options: &'a Options,
    files: &'a mut DirectoryFiles,
    /// Raised to every candidate's largest sequence number.
    last_sequence: &'a mut u64,
    report: &'a mut RepairReport,
    candidates: Vec<Candidate>,
    /// Per user key, the candidates holding it.
    holders: KeyHolders,
}

impl TablesScan<'_> {
    /// Reads table `number` in full: a sound one with entries becomes a candidate; a damaged one
    /// is salvaged into a new table (which becomes a candidate) and set aside; an empty one is set
    /// aside.
    fn scan(&mut self, number: u64) -> Result<()> {
        match self.scan_one(number, None) {
            Ok(()) => Ok(()),
            Err(Unusable::Empty) => set_aside(
                self.fs,
                self.dir,
                &table_file_name(number),
                "table holds no entries".into(),
                self.report,
            ),
            Err(Unusable::Damaged(problems)) => self.salvage(number, problems),
        }
    }

    /// Reads table `number`; `Err` with its problems when it is damaged.
    fn scan_one(
        &mut self,
        number: u64,
        salvaged_from: Option<u64>,
    ) -> std::result::Result<(), Unusable> {
        let index = self.candidates.len();
        let mut keys: Vec<(Vec<u8>, u64)> = Vec::new();
        let scan = scan_table(self.fs, self.dir, number, &mut |key, _| {
            // Internal-key order puts a user key's newest version first.
            if let Some(parsed) = parse_internal_key(key) {
                if keys.last().is_none_or(|(last, _)| last != parsed.user_key) {
                    keys.push((parsed.user_key.to_vec(), parsed.sequence));
                }
            }
        });
        let sound_properties = scan.properties.as_ref().filter(|_| scan.is_sound());
        let Some(properties) = sound_properties else {
            return Err(Unusable::Damaged(
                scan.problems
                    .iter()
                    .filter(|p| p.severity == Severity::Error)
                    .map(|p| p.to_string())
                    .collect(),
            ));
        };
        if scan.entries == 0 {
            return Err(Unusable::Empty);
        }
        *self.last_sequence = (*self.last_sequence).max(properties.largest_sequence);
        for (user_key, sequence) in keys {
            self.holders
                .entry(user_key)
                .or_default()
                .push((index, sequence));
        }
        self.candidates.push(Candidate {
            number,
            salvaged_from,
            file: Arc::new(FileMetadata::from_properties(
                number,
                scan.file_bytes,
                properties,
                scan.filter_layout,
                None,
            )),
        });
        Ok(())
    }

    /// Copies the readable entries of damaged table `number` into a new table, scans that as a
    /// candidate, and sets the original aside.
    fn salvage(&mut self, number: u64, problems: Vec<String>) -> Result<()> {
        let salvage = salvage_table(self.fs, self.dir, number)?;
        let salvaged_into = if salvage.entries.is_empty() {
            None
        } else {
            let new_number = self.files.take_file_number();
            let mut entries = salvage.entries.iter();
            write_table(
                self.fs,
                self.dir,
                self.options,
                new_number,
                &mut |builder| entries.try_for_each(|(key, value)| builder.add(key, value)),
            )?;
            Some(new_number)
        };
        let mut reason = problems.join("; ");
        reason.push_str(&match salvaged_into {
            Some(new_number) => format!(
                "; its {} readable entries were copied into {}",
                salvage.entries.len(),
                table_file_name(new_number)
            ),
            None => "; no data block was readable".into(),
        });
        set_aside(
            self.fs,
            self.dir,
            &table_file_name(number),
            reason,
            self.report,
        )?;
        self.report.salvaged.push(SalvagedTable {
            number,
            salvaged_into,
            damage: problems.first().cloned().unwrap_or_default(),
            located_by: salvage.located_by,
            entries_kept: salvage.entries.len() as u64,
            blocks_kept: salvage.blocks_kept,
            blocks_lost: salvage.blocks_lost,
            entries_lost: salvage.entries_lost,
            lost_block_offsets: salvage.lost_block_offsets,
            notes: salvage.notes,
        });
        if let Some(new_number) = salvaged_into {
            if let Err(unusable) = self.scan_one(new_number, Some(number)) {
                // A table just written and synced that does not read back: the device is failing.
                let problems = match unusable {
                    Unusable::Empty => "it holds no entries".to_string(),
                    Unusable::Damaged(problems) => problems.join("; "),
                };
                return Err(Error::corruption(
                    self.dir.join(table_file_name(new_number)),
                    0,
                    format!(
                        "the table salvaged from {} does not read back: {problems}",
                        table_file_name(number),
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Why [`TablesScan::scan_one`] did not take a table.
enum Unusable {
    /// Sound, but without entries.
    Empty,
    /// Damaged: its errors.
    Damaged(Vec<String>),
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
            salvaged_from: candidate.salvaged_from,
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
