//! `strata::check`: an offline, read-only verification of every file of a database.
//!
//! Recovery (`db/open.rs`) stops at the first damage it meets and reads table blocks only when a
//! lookup or compaction needs them, so a flipped bit in a cold block, a table the manifest names
//! but nobody has read since, or a damaged log behind a sound one stays invisible until it costs
//! data. `check` reads everything, with the engine's own decoders, and reports each problem with
//! its file, the offset where known, and what is wrong, instead of stopping at the first.
//!
//! It never takes the `LOCK` and never writes: it may run beside an open database (a file that a
//! flush or compaction is writing at that moment may then show as damaged or orphaned; check a
//! closed database for a verdict). It never panics on corrupt input: every decoder it calls
//! returns errors as values.
//!
//! What is verified:
//!
//! * `CURRENT` exists and names a manifest;
//! * the manifest: every record's checksum, every edit decodes and applies, the counters exist;
//! * every table the manifest names: it exists; footer; the checksum of every block (data, index,
//!   every filter module, the modular filter index, properties); the properties agree with the
//!   manifest (entries, smallest and largest keys, sequence range, file size) and with what the
//!   blocks hold; keys strictly increase in internal-key order within and across blocks; no
//!   sequence number is above the manifest's last sequence;
//! * table files the manifest does not name (orphans: a warning, and verified like the others,
//!   their damage reported as warnings too: no data is lost with them);
//! * the WALs at or after the manifest's log number (all of them if the manifest is unusable):
//!   every record's checksum and write batch; a torn tail is a warning, other damage an error;
//! * the `ACCESS` snapshot, if present (checksum and decode).

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::key::{compare_internal_keys, parse_internal_key, ValueKind};
use crate::options::Options;
use crate::stats::access_file;
use crate::stats::BlockKind;
use crate::table::block::BlockIter;
use crate::table::format::{BlockHandle, IndexKeys};
use crate::table::index_iter::IndexIter;
use crate::table::properties::TableProperties;
use crate::table::reader::{ReadMode, TableReader};
use crate::table::table_file_name;
use crate::version::edit::MANIFEST_FORMAT_VERSION;
use crate::version::set::CURRENT_FILE;
use crate::version::{FileMetadata, Version, VersionEdit};
use crate::wal::{read_log, wal_path, LogDamageKind, WriteBatch};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing, but `Db::open` handles it without losing acknowledged data: an orphan
    /// table, a torn WAL tail, a manifest record cut short by a crash.
    Warning,
    /// Damage: data or metadata that cannot be read as written.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One thing `check` found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file that holds it.
    pub file: PathBuf,
    /// Byte offset of the damaged record or block, when one can be named.
    pub offset: Option<u64>,
    /// Whether it is damage or only worth knowing.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    fn error(file: impl Into<PathBuf>, offset: Option<u64>, message: impl Into<String>) -> Self {
        Problem {
            file: file.into(),
            offset,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    fn warning(file: impl Into<PathBuf>, offset: Option<u64>, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(file, offset, message)
        }
    }

    /// A problem from an engine error: a corruption keeps its file and offset; anything else
    /// (an I/O error) is charged to `file` without an offset.
    fn from_error(file: &Path, error: Error) -> Self {
        match error {
            Error::Corruption {
                file,
                offset,
                reason,
            } => Problem::error(file, Some(offset), reason),
            other => Problem::error(file, None, other.to_string()),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.file.display())?;
        if let Some(offset) = self.offset {
            write!(f, " at offset {offset}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// What `check` verified and what it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Every problem, in the order found (CURRENT, manifest, tables, WALs, ACCESS).
    pub problems: Vec<Problem>,
    /// Manifest records read.
    pub manifest_records: u64,
    /// Table files read (named by the manifest or not).
    pub tables: u64,
    /// Blocks whose checksum was verified (data, index, filter modules, properties, modular
    /// filter index).
    pub blocks: u64,
    /// Table entries read and found in order.
    pub entries: u64,
    /// WAL files read.
    pub wal_files: u64,
    /// WAL records whose checksum and write batch verified.
    pub wal_records: u64,
}

impl CheckReport {
    /// True when no problem is an [`Severity::Error`] (warnings allowed).
    pub fn is_sound(&self) -> bool {
        self.errors() == 0
    }

    /// Number of problems of severity [`Severity::Error`].
    pub fn errors(&self) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count()
    }

    /// Number of problems of severity [`Severity::Warning`].
    pub fn warnings(&self) -> usize {
        self.problems.len() - self.errors()
    }
}

/// Verifies every file of the database in `dir` without writing anything (see the module
/// documentation for what is checked). Problems are values in the report; `Err` only when the
/// directory itself cannot be listed. `options` supplies the file system.
pub fn check(dir: &Path, options: &Options) -> Result<CheckReport> {
    let fs = options.file_system.as_ref();
    let names = fs.list_dir(dir)?;
    let mut report = CheckReport::default();
    let manifest = check_manifest(dir, fs, &mut report);
    let tables_on_disk: BTreeSet<u64> = names
        .iter()
        .filter_map(|name| parse_number(name, ".sst"))
        .collect();
    let named = match &manifest {
        Some(manifest) => check_named_tables(dir, fs, manifest, &tables_on_disk, &mut report),
        None => BTreeSet::new(),
    };
    for &number in tables_on_disk.difference(&named) {
        check_orphan_table(dir, fs, number, manifest.is_some(), &mut report);
    }

    let mut wal_numbers: Vec<u64> = names
        .iter()
        .filter_map(|name| parse_number(name, ".log"))
        .filter(|&number| manifest.as_ref().is_none_or(|m| number >= m.log_number))
        .collect();
    wal_numbers.sort_unstable();
    for (index, &number) in wal_numbers.iter().enumerate() {
        let later_logs = wal_numbers.len() - index - 1;
        check_wal(fs, &wal_path(dir, number), later_logs, &mut report);
    }

    let access_path = dir.join(access_file::ACCESS_FILE);
    if let Err(error) = access_file::load(fs, dir) {
        let mut problem = Problem::from_error(&access_path, error);
        problem.message.push_str(
            " (Db::open tolerates this: access statistics start afresh; repair sets the file aside)",
        );
        report.problems.push(problem);
    }
    Ok(report)
}

/// Scans every table the manifest names and compares it with the manifest's record of it;
/// returns the numbers named.
fn check_named_tables(
    dir: &Path,
    fs: &dyn FileSystem,
    manifest: &ManifestSummary,
    tables_on_disk: &BTreeSet<u64>,
    report: &mut CheckReport,
) -> BTreeSet<u64> {
    let mut named = BTreeSet::new();
    for (level, run_id, file) in manifest.version.files() {
        if !named.insert(file.number) {
            continue;
        }
        let path = dir.join(table_file_name(file.number));
        if !tables_on_disk.contains(&file.number) {
            report.problems.push(Problem::error(
                &path,
                None,
                format!("table named by the manifest (level {level}, run {run_id}) is missing"),
            ));
            continue;
        }
        let scan = scan_table(fs, dir, file.number, &mut |_, _| {});
        report.add_scan(&scan);
        let Some(properties) = &scan.properties else {
            continue;
        };
        compare_with_manifest(&path, file, &scan, properties, report);
        if let Some(largest) = scan.largest_sequence {
            if largest > manifest.last_sequence {
                report.problems.push(Problem::error(
                    &path,
                    None,
                    format!(
                        "holds sequence number {largest}, above the manifest's last \
                         sequence {} (reads would not see it)",
                        manifest.last_sequence
                    ),
                ));
            }
        }
    }
    named
}

/// Reports every way the manifest's record of table `file` disagrees with the table.
fn compare_with_manifest(
    path: &Path,
    file: &FileMetadata,
    scan: &TableScan,
    properties: &TableProperties,
    report: &mut CheckReport,
) {
    let mut disagree = |what: &str, manifest: String, table: String| {
        report.problems.push(Problem::error(
            path,
            None,
            format!("manifest says {what} {manifest}, the table holds {table}"),
        ));
    };
    if file.file_bytes != scan.file_bytes {
        disagree(
            "file size",
            file.file_bytes.to_string(),
            scan.file_bytes.to_string(),
        );
    }
    if file.entries != properties.entries {
        disagree(
            "entries",
            file.entries.to_string(),
            properties.entries.to_string(),
        );
    }
    if file.smallest != properties.smallest {
        disagree(
            "smallest key",
            describe_key(&file.smallest),
            describe_key(&properties.smallest),
        );
    }
    if file.largest != properties.largest {
        disagree(
            "largest key",
            describe_key(&file.largest),
            describe_key(&properties.largest),
        );
    }
    if (file.smallest_sequence, file.largest_sequence)
        != (properties.smallest_sequence, properties.largest_sequence)
    {
        disagree(
            "sequence range",
            format!("{}..={}", file.smallest_sequence, file.largest_sequence),
            format!(
                "{}..={}",
                properties.smallest_sequence, properties.largest_sequence
            ),
        );
    }
}

/// Scans table `number`, which the manifest does not name; with a manifest it is an orphan,
/// whose damage is only a warning.
fn check_orphan_table(
    dir: &Path,
    fs: &dyn FileSystem,
    number: u64,
    has_manifest: bool,
    report: &mut CheckReport,
) {
    let path = dir.join(table_file_name(number));
    if has_manifest {
        report.problems.push(Problem::warning(
            &path,
            None,
            "orphan table: not named by the manifest (Db::open deletes it)",
        ));
    }
    let mut scan = scan_table(fs, dir, number, &mut |_, _| {});
    if has_manifest {
        // An orphan is no part of the database: damage in it (a table a crash cut short
        // while a flush or compaction was writing it, the usual way an orphan arises) loses
        // nothing, and Db::open deletes it.
        for problem in &mut scan.problems {
            problem.severity = Severity::Warning;
            problem
                .message
                .push_str(" (in an orphan table, which Db::open deletes)");
        }
    }
    report.add_scan(&scan);
}

/// What the manifest says, when it can be read.
pub(crate) struct ManifestSummary {
    pub(crate) version: Version,
    pub(crate) log_number: u64,
    pub(crate) last_sequence: u64,
}

/// Reads `CURRENT` and the manifest it names, reporting each problem; `None` if there is no
/// usable tree (no `CURRENT`, no manifest, or damage before the end).
fn check_manifest(
    dir: &Path,
    fs: &dyn FileSystem,
    report: &mut CheckReport,
) -> Option<ManifestSummary> {
    let path = manifest_named_by_current(dir, fs, report)?;
    let bytes = match fs.read_to_end(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            report.problems.push(Problem::from_error(&path, error));
            return None;
        }
    };
    let contents = read_log(&bytes);
    let mut usable = true;
    if let Some(damage) = &contents.damage {
        match &damage.kind {
            LogDamageKind::Truncated => report.problems.push(Problem::warning(
                &path,
                Some(damage.offset),
                format!(
                    "last manifest record cut short ({} bytes; an edit whose job never \
                     finished, ignored by Db::open)",
                    damage.dropped_bytes
                ),
            )),
            LogDamageKind::Corrupt(reason) => {
                usable = false;
                report.problems.push(Problem::error(
                    &path,
                    Some(damage.offset),
                    format!(
                        "{reason} ({} bytes from here unreadable)",
                        damage.dropped_bytes
                    ),
                ));
            }
        }
    }
    let (version, counters) = replay_manifest(&path, &contents.records, report)?;
    if !usable {
        // The records after the damage may hold the counters: their absence says nothing more.
        return None;
    }
    for (what, value) in [
        ("log number", counters.log_number),
        ("next file number", counters.next_file_number),
        ("last sequence", counters.last_sequence),
        ("next run id", counters.next_run_id),
    ] {
        if value.is_none() {
            usable = false;
            report.problems.push(Problem::error(
                &path,
                None,
                format!("manifest has no {what}"),
            ));
        }
    }
    if let Some(next) = counters.next_file_number {
        if let Some(number) = version
            .files()
            .map(|(_, _, f)| f.number)
            .filter(|&n| n >= next)
            .max()
        {
            report.problems.push(Problem::error(
                &path,
                None,
                format!("table {number} is not below the next file number {next}"),
            ));
        }
    }
    usable.then_some(ManifestSummary {
        version,
        log_number: counters.log_number.unwrap_or(0),
        last_sequence: counters.last_sequence.unwrap_or(0),
    })
}

/// The path of the manifest `CURRENT` names, if `CURRENT` can be read, names one and it exists;
/// otherwise `None`, with the problem reported.
fn manifest_named_by_current(
    dir: &Path,
    fs: &dyn FileSystem,
    report: &mut CheckReport,
) -> Option<PathBuf> {
    let current_path = dir.join(CURRENT_FILE);
    if !fs.exists(&current_path) {
        report.problems.push(Problem::error(
            &current_path,
            None,
            "CURRENT is missing: the database has no live manifest (repair rebuilds one)",
        ));
        return None;
    }
    let current = match fs.read_to_end(&current_path) {
        Ok(bytes) => bytes,
        Err(error) => {
            report
                .problems
                .push(Problem::from_error(&current_path, error));
            return None;
        }
    };
    let Some(name) = parse_current(&current) else {
        report.problems.push(Problem::error(
            &current_path,
            Some(0),
            format!(
                "CURRENT does not name a manifest (it holds {:?})",
                String::from_utf8_lossy(&current[..current.len().min(64)])
            ),
        ));
        return None;
    };
    let path = dir.join(name);
    if !fs.exists(&path) {
        report.problems.push(Problem::error(
            &current_path,
            None,
            format!("CURRENT names {name}, which is missing"),
        ));
        return None;
    }
    Some(path)
}

/// The counters a manifest's edits set, the last value of each.
#[derive(Default)]
struct ManifestCounters {
    log_number: Option<u64>,
    next_file_number: Option<u64>,
    last_sequence: Option<u64>,
    next_run_id: Option<u64>,
}

/// Applies the manifest's records (`(offset, record)`) in order; `None`, with the problem
/// reported, at the first that does not decode, is not of the current format (the first) or
/// does not apply.
fn replay_manifest(
    path: &Path,
    records: &[(u64, Vec<u8>)],
    report: &mut CheckReport,
) -> Option<(Version, ManifestCounters)> {
    let mut version = Version::default();
    let mut counters = ManifestCounters::default();
    for (index, (offset, record)) in records.iter().enumerate() {
        report.manifest_records += 1;
        let edit = match VersionEdit::decode(record) {
            Ok(edit) => edit,
            Err(reason) => {
                report.problems.push(Problem::error(
                    path,
                    Some(*offset),
                    format!("version edit does not decode: {reason}"),
                ));
                return None;
            }
        };
        if index == 0 && edit.format_version != Some(MANIFEST_FORMAT_VERSION) {
            report.problems.push(Problem::error(
                path,
                Some(*offset),
                format!(
                    "first manifest record has format version {:?}, expected {MANIFEST_FORMAT_VERSION}",
                    edit.format_version
                ),
            ));
            return None;
        }
        version = match version.apply(&edit, None) {
            Ok(version) => version,
            Err(reason) => {
                report.problems.push(Problem::error(
                    path,
                    Some(*offset),
                    format!("version edit does not apply: {reason}"),
                ));
                return None;
            }
        };
        counters.log_number = edit.log_number.or(counters.log_number);
        counters.next_file_number = edit.next_file_number.or(counters.next_file_number);
        counters.last_sequence = edit.last_sequence.or(counters.last_sequence);
        counters.next_run_id = edit.next_run_id.or(counters.next_run_id);
    }
    Some((version, counters))
}

/// The manifest `CURRENT` names, if it names one (`MANIFEST-<number>\n`), by the rules
/// `Db::open` reads it with, so that check reads the file open would.
pub(crate) fn parse_current(bytes: &[u8]) -> Option<&str> {
    let name = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    let number = name.strip_prefix("MANIFEST-")?;
    (!name.contains('/') && number.parse::<u64>().is_ok()).then_some(name)
}

/// `NNNNNN<suffix>` → `NNNNNN`, for names exactly as the engine writes them (six or more digits,
/// zero-padded), so that the number names this very file back.
pub(crate) fn parse_number(name: &str, suffix: &str) -> Option<u64> {
    let number: u64 = name.strip_suffix(suffix)?.parse().ok()?;
    (format!("{number:06}{suffix}") == name).then_some(number)
}

fn describe_key(internal_key: &[u8]) -> String {
    match parse_internal_key(internal_key) {
        Some(parsed) => format!(
            "{:?}@{}",
            String::from_utf8_lossy(parsed.user_key),
            parsed.sequence
        ),
        None => format!("{} malformed bytes", internal_key.len()),
    }
}

/// What reading one table file found.
pub(crate) struct TableScan {
    pub(crate) problems: Vec<Problem>,
    /// The properties block, if the file opened.
    pub(crate) properties: Option<TableProperties>,
    pub(crate) file_bytes: u64,
    pub(crate) blocks: u64,
    pub(crate) entries: u64,
    pub(crate) smallest_sequence: Option<u64>,
    pub(crate) largest_sequence: Option<u64>,
    /// The filter's family and key-range partitions, if the file opened (the default layout
    /// otherwise).
    pub(crate) filter_layout: crate::FilterLayout,
}

impl TableScan {
    pub(crate) fn is_sound(&self) -> bool {
        self.problems.iter().all(|p| p.severity != Severity::Error)
    }
}

impl CheckReport {
    fn add_scan(&mut self, scan: &TableScan) {
        self.tables += 1;
        self.blocks += scan.blocks;
        self.entries += scan.entries;
        self.problems.extend(scan.problems.iter().cloned());
    }
}

/// Reads every block of table `number` and checks it (footer, checksums, decoding, key order,
/// agreement with its properties), calling `visit` with each internal key in file order. Never
/// fails: everything wrong is a problem in the result.
pub(crate) fn scan_table(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> TableScan {
    let path = dir.join(table_file_name(number));
    let mut scan = TableScan {
        problems: Vec::new(),
        properties: None,
        file_bytes: 0,
        blocks: 0,
        entries: 0,
        smallest_sequence: None,
        largest_sequence: None,
        filter_layout: crate::FilterLayout::default(),
    };
    let reader = match TableReader::open_uncounted(fs, dir, number) {
        Ok(reader) => reader,
        Err(error) => {
            scan.problems.push(Problem::from_error(&path, error));
            return scan;
        }
    };
    scan.file_bytes = reader.file_len();
    scan.filter_layout = reader.filter_layout();
    let properties = reader.properties().clone();
    check_metadata_blocks(&reader, &path, &mut scan);
    let mut index = match IndexIter::open(&reader, ReadMode::Compaction) {
        Ok(index) => index,
        Err(error) => {
            scan.problems.push(Problem::from_error(&path, error));
            scan.properties = Some(properties);
            return scan;
        }
    };
    // The index block, or every index partition (read as the walk below reaches them).
    scan.blocks += reader.index_block_handles().len() as u64;
    let mut walk = DataWalk::new(reader.index_keys());
    index.seek_to_first(&reader);
    while index.valid() {
        walk.data_blocks += 1;
        let index_key = index.key().to_vec();
        let handle = index.handle();
        check_data_block(
            &reader, &path, handle, &index_key, &mut walk, &mut scan, visit,
        );
        walk.previous_index_key = Some(index_key);
        index.next(&reader);
    }
    if let Err(error) = index.status(&reader) {
        scan.problems.push(Problem::from_error(&path, error));
    }
    if scan.is_sound() {
        check_properties_agree(&reader, &path, &properties, &walk, &mut scan);
    }
    scan.properties = Some(properties);
    scan
}

/// Counts the blocks `TableReader::open` verified and verifies every filter module.
fn check_metadata_blocks(reader: &TableReader, path: &Path, scan: &mut TableScan) {
    // Footer, properties and (version 2) the modular filter index or (version 3) the top-level
    // partition index were verified by `open`.
    scan.blocks +=
        1 + u64::from(reader.footer().has_modular_filter() || reader.footer().is_partitioned());
    // The range filter block, also checked and decoded by `open`; the data walk asks it for
    // every key.
    scan.blocks += u64::from(reader.has_range_filter());
    for &handle in reader.filter_block_handles() {
        match reader.verify_filter_module(handle) {
            Ok(()) => scan.blocks += 1,
            Err(error) => scan.problems.push(Problem::from_error(path, error)),
        }
    }
}

/// What the walk over a table's data blocks carries from key to key and block to block.
struct DataWalk {
    /// How index keys are ordered (`table/format.rs`).
    index_keys: IndexKeys,
    /// The last key seen (`None` after a damaged block: order across it cannot be judged).
    previous_key: Option<Vec<u8>>,
    first_key: Option<Vec<u8>>,
    data_blocks: u64,
    previous_index_key: Option<Vec<u8>>,
    /// True once the range filter ruled out a key the file holds (reported once per file).
    range_filter_missed: bool,
}

impl DataWalk {
    fn new(index_keys: IndexKeys) -> Self {
        DataWalk {
            index_keys,
            previous_key: None,
            first_key: None,
            data_blocks: 0,
            previous_index_key: None,
            range_filter_missed: false,
        }
    }

    /// True if `key` is above index key `index_key` in the index's order (`table/format.rs`): a
    /// user-key index orders user keys bytewise.
    fn above_index(&self, key: &[u8], index_key: &[u8]) -> bool {
        match self.index_keys {
            IndexKeys::Internal => compare_internal_keys(key, index_key).is_gt(),
            IndexKeys::User => crate::key::user_key(key) > index_key,
        }
    }
}

/// Reads the data block at `handle` (index entry `index_key`) and checks each of its keys and
/// its last key against the index entry.
fn check_data_block(
    reader: &TableReader,
    path: &Path,
    handle: BlockHandle,
    index_key: &[u8],
    walk: &mut DataWalk,
    scan: &mut TableScan,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) {
    let block = match reader.sorted_block(handle, BlockKind::Data, ReadMode::Compaction) {
        Ok(block) => block,
        Err(error) => {
            scan.problems.push(Problem::from_error(path, error));
            // Order across the damaged block cannot be judged.
            walk.previous_key = None;
            return;
        }
    };
    scan.blocks += 1;
    let mut iter = BlockIter::new(block, compare_internal_keys);
    iter.seek_to_first();
    let mut last_in_block: Option<Vec<u8>> = None;
    while iter.valid() {
        let key = iter.key();
        let Some(parsed) = parse_internal_key(key) else {
            scan.problems.push(Problem::error(
                path,
                Some(handle.offset),
                "malformed internal key in data block",
            ));
            break;
        };
        let first_in_block = last_in_block.is_none();
        let entry = KeyInBlock {
            key,
            user_key: parsed.user_key,
            first_in_block,
        };
        check_key(reader, path, handle, &entry, walk, scan);
        scan.smallest_sequence = Some(
            scan.smallest_sequence
                .map_or(parsed.sequence, |s| s.min(parsed.sequence)),
        );
        scan.largest_sequence = Some(
            scan.largest_sequence
                .map_or(parsed.sequence, |s| s.max(parsed.sequence)),
        );
        visit(key, iter.value());
        scan.entries += 1;
        if walk.first_key.is_none() {
            walk.first_key = Some(key.to_vec());
        }
        walk.previous_key = Some(key.to_vec());
        last_in_block = Some(key.to_vec());
        iter.next();
    }
    if let Err(error) = reader.block_error(&iter, handle) {
        scan.problems.push(Problem::from_error(path, error));
    }
    match &last_in_block {
        None => scan.problems.push(Problem::error(
            path,
            Some(handle.offset),
            "empty data block",
        )),
        Some(last) if walk.above_index(last, index_key) => scan.problems.push(Problem::error(
            path,
            Some(reader.footer().index.offset),
            format!(
                "index entry {} is below the last key {} of its data block at offset {}",
                match walk.index_keys {
                    IndexKeys::Internal => describe_key(index_key),
                    IndexKeys::User => format!("{:?}", String::from_utf8_lossy(index_key)),
                },
                describe_key(last),
                handle.offset
            ),
        )),
        Some(_) => {}
    }
}

/// A well-formed internal key of a data block, as [`check_key`] checks it.
struct KeyInBlock<'a> {
    key: &'a [u8],
    user_key: &'a [u8],
    first_in_block: bool,
}

/// Checks one key of the data block at `handle` against the range filter, the key before it
/// and, for a block's first key, the index entry before the block.
fn check_key(
    reader: &TableReader,
    path: &Path,
    handle: BlockHandle,
    entry: &KeyInBlock<'_>,
    walk: &mut DataWalk,
    scan: &mut TableScan,
) {
    let KeyInBlock {
        key,
        user_key,
        first_in_block,
    } = *entry;
    if !walk.range_filter_missed && !reader.may_contain_range(user_key, user_key) {
        // One report per file: a filter that misses one key likely misses many.
        walk.range_filter_missed = true;
        scan.problems.push(Problem::error(
            path,
            Some(handle.offset),
            format!(
                "the range filter rules out key {} that the file holds",
                describe_key(key)
            ),
        ));
    }
    if let Some(previous) = &walk.previous_key {
        if compare_internal_keys(previous, key) != std::cmp::Ordering::Less {
            scan.problems.push(Problem::error(
                path,
                Some(handle.offset),
                format!(
                    "keys out of order: {} does not come after {}",
                    describe_key(key),
                    describe_key(previous)
                ),
            ));
        }
    }
    // A user-key index is sound only if no user key continues from the block before: this
    // block's first key must be above the previous index entry.
    if let (true, IndexKeys::User, Some(previous_index)) =
        (first_in_block, walk.index_keys, &walk.previous_index_key)
    {
        if !walk.above_index(key, previous_index) {
            scan.problems.push(Problem::error(
                path,
                Some(handle.offset),
                format!(
                    "the user-key index entry {:?} before the data block at offset {} is not \
                     below its first key {}",
                    String::from_utf8_lossy(previous_index),
                    handle.offset,
                    describe_key(key)
                ),
            ));
        }
    }
}

/// Checks that the table's properties agree with what the walk over its blocks found.
fn check_properties_agree(
    reader: &TableReader,
    path: &Path,
    properties: &TableProperties,
    walk: &DataWalk,
    scan: &mut TableScan,
) {
    let properties_offset = Some(reader.footer().properties.offset);
    let (entries, smallest_sequence, largest_sequence) =
        (scan.entries, scan.smallest_sequence, scan.largest_sequence);
    let mut disagree = |what: &str, properties: String, blocks: String| {
        scan.problems.push(Problem::error(
            path,
            properties_offset,
            format!("properties say {what} {properties}, the blocks hold {blocks}"),
        ));
    };
    if properties.entries != entries {
        disagree(
            "entries",
            properties.entries.to_string(),
            entries.to_string(),
        );
    }
    if properties.data_blocks != walk.data_blocks {
        disagree(
            "data blocks",
            properties.data_blocks.to_string(),
            walk.data_blocks.to_string(),
        );
    }
    if let (Some(first), Some(last)) = (&walk.first_key, &walk.previous_key) {
        if *first != properties.smallest {
            disagree(
                "smallest key",
                describe_key(&properties.smallest),
                describe_key(first),
            );
        }
        if *last != properties.largest {
            disagree(
                "largest key",
                describe_key(&properties.largest),
                describe_key(last),
            );
        }
    }
    if let (Some(smallest), Some(largest)) = (smallest_sequence, largest_sequence) {
        if (smallest, largest) != (properties.smallest_sequence, properties.largest_sequence) {
            disagree(
                "sequence range",
                format!(
                    "{}..={}",
                    properties.smallest_sequence, properties.largest_sequence
                ),
                format!("{smallest}..={largest}"),
            );
        }
    }
}

/// Reads one WAL: every record's checksum and write batch. `later_logs` is how many logs
/// recovery would also drop if this one is damaged (it replays a prefix of the writes).
fn check_wal(fs: &dyn FileSystem, path: &Path, later_logs: usize, report: &mut CheckReport) {
    report.wal_files += 1;
    let bytes = match fs.read_to_end(path) {
        Ok(bytes) => bytes,
        Err(error) => {
            report.problems.push(Problem::from_error(path, error));
            return;
        }
    };
    let contents = read_log(&bytes);
    let later = if later_logs == 0 {
        String::new()
    } else {
        format!(" and the {later_logs} later log(s)")
    };
    for (offset, record) in &contents.records {
        if let Err(reason) = WriteBatch::decode(record) {
            report.problems.push(Problem::error(
                path,
                Some(*offset),
                format!(
                    "malformed write batch: {reason}; recovery drops this record, the {} bytes \
                     after it{later}",
                    bytes.len() as u64 - offset
                ),
            ));
            return;
        }
        report.wal_records += 1;
    }
    if let Some(damage) = contents.damage {
        report.problems.push(match damage.kind {
            LogDamageKind::Truncated => Problem::warning(
                path,
                Some(damage.offset),
                format!(
                    "torn tail: the last record is cut short by the end of the file ({} bytes, \
                     a write a crash interrupted; recovery drops them{later})",
                    damage.dropped_bytes
                ),
            ),
            LogDamageKind::Corrupt(reason) => Problem::error(
                path,
                Some(damage.offset),
                format!(
                    "{reason}; recovery drops this record, the {} bytes from here{later}",
                    damage.dropped_bytes
                ),
            ),
        });
    }
}

/// One entry of a table file, as [`table_entries`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// The user key.
    pub key: Vec<u8>,
    /// Its sequence number.
    pub sequence: u64,
    /// The value; `None` for a tombstone.
    pub value: Option<Vec<u8>>,
}

/// Every entry of table `number` in `dir`, in file order (like LevelDB's `sst_dump`), after the
/// same verification `check` does: the first problem found is returned as
/// [`Error::Corruption`]. For tools and tests that need to know what a table holds.
pub fn table_entries(dir: &Path, number: u64, options: &Options) -> Result<Vec<TableEntry>> {
    let mut entries = Vec::new();
    let scan = scan_table(
        options.file_system.as_ref(),
        dir,
        number,
        &mut |key, value| {
            if let Some(parsed) = parse_internal_key(key) {
                entries.push(TableEntry {
                    key: parsed.user_key.to_vec(),
                    sequence: parsed.sequence,
                    value: (parsed.kind == ValueKind::Value).then(|| value.to_vec()),
                });
            }
        },
    );
    match scan
        .problems
        .into_iter()
        .find(|p| p.severity == Severity::Error)
    {
        Some(problem) => Err(Error::corruption(
            problem.file,
            problem.offset.unwrap_or(0),
            problem.message,
        )),
        None => Ok(entries),
    }
}
