//! Versions: immutable snapshots of the tree's shape (levels → sorted runs → table files), the
//! edits between them, and the manifest that makes them durable.
//!
//! Readers take an `Arc<Version>` and never block writers or compactions; a flush or compaction
//! builds the next version from the current one plus a version edit and swaps it in. A table
//! file lives as long as any version (held by a reader, iterator or snapshot) refers to it: when its
//! last [`FileMetadata`] reference drops, its number goes to the obsolete list and the engine
//! deletes it (`db::files`).
//!
//! [`Version`], [`Level`], [`Run`] and [`FileMetadata`] are the public, read-only view of the tree
//! that compaction and filter-allocation policies read: they can look, not touch. Code outside the
//! crate (simulators, policy tests) makes trees with [`VersionBuilder`], which applies the same
//! edits the engine applies.

mod builder;
pub(crate) mod edit;
mod file_state;
pub mod job;
pub(crate) mod key_space;
pub(crate) mod set;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::key::{compare_internal_keys, user_key};
use crate::table::properties::TableProperties;
use crate::table::TableSlot;
pub use builder::VersionBuilder;
pub use edit::PolicyState;
pub(crate) use edit::{AddedFile, DeletedFile, VersionEdit};
pub(crate) use file_state::{AccessHandle, ObsoleteFiles};
pub use file_state::{FileState, RECENT_MIN_PROBES, RECENT_WINDOW_PROBES};

pub use crate::limits::MAX_LEVELS;
pub use crate::stats::lookups::{LookupCounts, ProbeOutcome, ProbeTime, ProbeTimes};

/// A table file as the engine knows it: the one shape of a file's metadata, shared by the
/// versions (the tree), the version edits that add files (logged in the manifest, `edit.rs`) and
/// the table builder's result (`FileMetadata::from_properties`). Where a file sits (level, run)
/// is not part of it: that is the tree's business, so a trivial move re-places the same
/// `Arc<FileMetadata>` instead of copying it.
///
/// Its fields are the file's facts, the ones a version edit logs in the manifest (and policies
/// and filter allocators read); what the engine holds for the file at run time (its open reader,
/// access statistics and lookup counters) is its [`FileState`], one handle away
/// ([`FileMetadata::state`]).
///
/// A file's properties block (`table::properties`) records a few facts only the table reader
/// needs (its data-block count, filter modules, and the level and run it was first written to);
/// everything else it holds is this type's.
pub struct FileMetadata {
    pub(crate) number: u64,
    pub(crate) file_bytes: u64,
    pub(crate) entries: u64,
    /// Smallest and largest internal keys.
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
    pub(crate) smallest_sequence: u64,
    pub(crate) largest_sequence: u64,
    pub(crate) bits_per_key: f64,
    pub(crate) filter_bytes: u64,
    /// The filter's family and key-range partitions (`table/partition.rs`; 1 for an
    /// unpartitioned filter or none). Logged in the manifest, so the filter allocator can price
    /// the file's bits by its family and put a module in use in part of the file
    /// (`alloc::ModulesInUse`) without opening it.
    pub(crate) filter_layout: crate::FilterLayout,
    /// The file's runtime state: its open reader, access statistics, lookup counters and
    /// obsolete report. Shared by every `FileMetadata` of this file (an edit that re-adds a
    /// removed file with changed facts makes a second one): the file is obsolete only when the
    /// last is gone.
    state: Arc<FileState>,
}

impl std::fmt::Debug for FileMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMetadata")
            .field("number", &self.number)
            .field("file_bytes", &self.file_bytes)
            .field("entries", &self.entries)
            .field("bits_per_key", &self.bits_per_key)
            .finish()
    }
}

/// Two `FileMetadata` are equal when they describe the same file with the same facts (their
/// open readers and access statistics are not compared).
impl PartialEq for FileMetadata {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number
            && self.file_bytes == other.file_bytes
            && self.entries == other.entries
            && self.smallest == other.smallest
            && self.largest == other.largest
            && self.smallest_sequence == other.smallest_sequence
            && self.largest_sequence == other.largest_sequence
            && self.bits_per_key.to_bits() == other.bits_per_key.to_bits()
            && self.filter_bytes == other.filter_bytes
            && self.filter_layout == other.filter_layout
    }
}

impl crate::table::table_cache::TableFile for FileMetadata {
    fn number(&self) -> u64 {
        self.number
    }

    fn largest_key(&self) -> &[u8] {
        &self.largest
    }

    fn table_slot(&self) -> &Arc<TableSlot> {
        self.state.table_slot()
    }
}

impl FileMetadata {
    /// The metadata of file `number`, `file_bytes` long, from the properties its table builder
    /// wrote (or a reader read back), with the access statistics it starts with.
    pub(crate) fn from_properties(
        number: u64,
        file_bytes: u64,
        properties: &TableProperties,
        filter_layout: crate::FilterLayout,
        access: Option<AccessHandle>,
    ) -> Self {
        FileMetadata {
            number,
            file_bytes,
            entries: properties.entries,
            smallest: properties.smallest.clone(),
            largest: properties.largest.clone(),
            smallest_sequence: properties.smallest_sequence,
            largest_sequence: properties.largest_sequence,
            bits_per_key: properties.bits_per_key,
            filter_bytes: properties.filter_bytes,
            filter_layout: crate::FilterLayout {
                partitions: filter_layout.partitions.max(1),
                ..filter_layout
            },
            state: FileState::new(number, access),
        }
    }

    /// The same facts as `facts`, sharing `self`'s runtime state: `facts` re-adds the file
    /// `self` describes.
    fn with_facts_of(&self, facts: &FileMetadata) -> Self {
        FileMetadata {
            number: facts.number,
            file_bytes: facts.file_bytes,
            entries: facts.entries,
            smallest: facts.smallest.clone(),
            largest: facts.largest.clone(),
            smallest_sequence: facts.smallest_sequence,
            largest_sequence: facts.largest_sequence,
            bits_per_key: facts.bits_per_key,
            filter_bytes: facts.filter_bytes,
            filter_layout: facts.filter_layout,
            state: Arc::clone(&self.state),
        }
    }

    /// The file's runtime state (open reader, access statistics, lookup counters), shared by
    /// every `FileMetadata` of the file and kept through trivial moves.
    pub fn state(&self) -> &FileState {
        &self.state
    }

    /// The file number (its name is `{number:06}.sst`).
    pub fn number(&self) -> u64 {
        self.number
    }
    /// Size on disk in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }
    /// Entries, tombstones and overwritten versions included.
    pub fn entries(&self) -> u64 {
        self.entries
    }
    /// Smallest user key in the file.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }
    /// Largest user key in the file.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }
    /// Bits per key of the file's filter (0 = no filter), chosen when the file was written.
    pub fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }
    /// Bytes of the file's filter block.
    pub fn filter_bytes(&self) -> u64 {
        self.filter_bytes
    }
    /// The key-range partitions the file's filter is split into (1 unless partitioned).
    pub fn filter_partitions(&self) -> u32 {
        self.filter_layout.partitions
    }
    /// The family the file's filter modules are built in.
    pub fn filter_family(&self) -> crate::FilterFamily {
        self.filter_layout.family
    }
    /// Newest sequence number in the file.
    pub fn largest_sequence(&self) -> u64 {
        self.largest_sequence
    }

    /// True if `user_key` is within the file's key range.
    pub fn contains_user_key(&self, key: &[u8]) -> bool {
        self.smallest_user_key() <= key && key <= self.largest_user_key()
    }

    /// True if the file's key range intersects `[smallest, largest]` (user keys).
    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        !(self.largest_user_key() < smallest || self.smallest_user_key() > largest)
    }
}

/// A sorted run: files with disjoint key ranges, ordered by key. Runs are ordered by recency:
/// a larger id is newer.
#[derive(Debug, Clone)]
pub struct Run {
    pub(crate) id: u64,
    pub(crate) files: Vec<Arc<FileMetadata>>,
    /// The files' key ranges in the form a point lookup searches ([`Run::file_for_key`]),
    /// built at the first lookup. Whoever changes `files` resets it (`Version::apply`).
    pub(crate) key_index: OnceLock<RunKeyIndex>,
}

/// A run's file boundaries for [`Run::file_for_key`]: the prefix every file's smallest and
/// largest user key share, and after it the first 8 bytes of each boundary as a big-endian word.
/// A lookup key without the prefix lies outside every file (the keys between two keys with a
/// prefix have it too); otherwise a binary search over the words finds the file, and only a
/// word tie compares whole keys. Full user-key comparisons (a `memcmp` call each, two to four
/// per run) cost about 150 instructions per probed run; this costs one prefix comparison and a
/// search over a small array of integers.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunKeyIndex {
    prefix: Vec<u8>,
    smallest_words: Vec<u64>,
    largest_words: Vec<u64>,
}

/// The 8 bytes of `key` from `at` as a big-endian word, zero-padded: of two keys with the same
/// first `at` bytes, `word(a) < word(b)` implies `a < b` bytewise, and `>` implies `>`.
#[inline]
fn word_after(key: &[u8], at: usize) -> u64 {
    let end = key.len().min(at.saturating_add(8));
    let taken = end.saturating_sub(at);
    // The 8 bytes that end at `end`, shifted so the ones before `at` fall off: one load
    // whatever the length, where copying a short tail would be a `memcpy` call.
    if let Some(window) = end
        .checked_sub(8)
        .and_then(|start| key.get(start..end))
        .and_then(|window| <[u8; 8]>::try_from(window).ok())
    {
        return u64::from_be_bytes(window)
            .checked_shl(8 * (8 - taken) as u32)
            .unwrap_or(0);
    }
    // A key under 8 bytes.
    let mut array = [0u8; 8];
    for (slot, &byte) in array.iter_mut().zip(key.get(at..).unwrap_or(&[])) {
        *slot = byte;
    }
    u64::from_be_bytes(array)
}

impl RunKeyIndex {
    fn new(files: &[Arc<FileMetadata>]) -> Self {
        let mut prefix: &[u8] = files.first().map_or(&[], |f| f.smallest_user_key());
        for file in files {
            for key in [file.smallest_user_key(), file.largest_user_key()] {
                let shared = prefix.iter().zip(key).take_while(|(a, b)| a == b).count();
                prefix = &prefix[..shared];
            }
        }
        let word_after_prefix = |key: &[u8]| word_after(key, prefix.len());
        RunKeyIndex {
            prefix: prefix.to_vec(),
            smallest_words: files
                .iter()
                .map(|f| word_after_prefix(f.smallest_user_key()))
                .collect(),
            largest_words: files
                .iter()
                .map(|f| word_after_prefix(f.largest_user_key()))
                .collect(),
        }
    }
}

impl Run {
    /// The run's id (larger is newer).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The run's files in key order.
    pub fn files(&self) -> &[Arc<FileMetadata>] {
        &self.files
    }
    /// Total entries.
    pub fn entries(&self) -> u64 {
        self.files.iter().map(|f| f.entries).sum()
    }
    /// Total bytes on disk.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.file_bytes).sum()
    }
    /// Smallest user key of the run.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.files.first().map_or(&[], |f| f.smallest_user_key())
    }
    /// Largest user key of the run.
    pub fn largest_user_key(&self) -> &[u8] {
        self.files.last().map_or(&[], |f| f.largest_user_key())
    }

    /// The file whose range may hold `user_key` (binary search on the largest keys, through the
    /// run's `RunKeyIndex`).
    pub fn file_for_key(&self, key: &[u8]) -> Option<&Arc<FileMetadata>> {
        let index = self.key_index.get_or_init(|| RunKeyIndex::new(&self.files));
        if !key.starts_with(&index.prefix) {
            return None;
        }
        let word = word_after(key, index.prefix.len());
        // The first file whose largest key is at or after `key`: words decide unless they tie.
        let mut at = index.largest_words.partition_point(|&w| w < word);
        while index.largest_words.get(at) == Some(&word)
            && self
                .files
                .get(at)
                .is_some_and(|file| file.largest_user_key() < key)
        {
            at += 1;
        }
        let file = self.files.get(at)?;
        match index.smallest_words.get(at)?.cmp(&word) {
            Ordering::Less => Some(file),
            Ordering::Greater => None,
            Ordering::Equal => (file.smallest_user_key() <= key).then_some(file),
        }
    }

    /// Files whose ranges intersect `[smallest, largest]`.
    pub fn overlapping_files(&self, smallest: &[u8], largest: &[u8]) -> Vec<Arc<FileMetadata>> {
        self.overlapping(smallest, largest).to_vec()
    }

    /// The files whose ranges intersect `[smallest, largest]`, in key order: one stretch of the
    /// run (its files are disjoint and in key order), found by two binary searches. Leveling asks
    /// this of every file of a level as it chooses one to merge.
    pub fn overlapping(&self, smallest: &[u8], largest: &[u8]) -> &[Arc<FileMetadata>] {
        let first = self
            .files
            .partition_point(|f| f.largest_user_key() < smallest);
        let end = self
            .files
            .partition_point(|f| f.smallest_user_key() <= largest);
        self.files.get(first..end.max(first)).unwrap_or_default()
    }
}

/// One level of the tree: its sorted runs, newest first.
#[derive(Debug, Clone, Default)]
pub struct Level {
    pub(crate) runs: Vec<Run>,
}

impl Level {
    /// Sorted runs, newest first.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }
    /// Total bytes of the level.
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(Run::bytes).sum()
    }
    /// Total entries of the level.
    pub fn entries(&self) -> u64 {
        self.runs.iter().map(Run::entries).sum()
    }
    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.runs.iter().map(|r| r.files.len()).sum()
    }
    /// True if the level has no runs.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

/// An immutable shape of the tree: `levels()[0]` holds flushed runs, deeper levels hold older
/// data. Every run of level `i` is newer than every run of level `i + 1`.
///
/// A version also carries the state policies keep in the manifest ([`PolicyState`]): it changes
/// only through version edits, so a policy that reads it from the tree it is shown keeps no state
/// of its own that a restart could lose.
#[derive(Debug, Clone)]
pub struct Version {
    pub(crate) levels: Vec<Level>,
    pub(crate) policy_states: BTreeMap<String, Vec<u8>>,
}

impl Default for Version {
    fn default() -> Self {
        Version {
            levels: vec![Level::default(); MAX_LEVELS],
            policy_states: BTreeMap::new(),
        }
    }
}

impl Version {
    /// All levels (always [`MAX_LEVELS`] of them; deep ones are usually empty).
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The state `owner` last logged in the manifest (see [`PolicyState`]), if any.
    pub fn policy_state(&self, owner: &str) -> Option<&[u8]> {
        self.policy_states.get(owner).map(Vec::as_slice)
    }

    /// Every policy state, by owner.
    pub fn policy_states(&self) -> impl Iterator<Item = PolicyState> + '_ {
        self.policy_states.iter().map(|(owner, bytes)| PolicyState {
            owner: owner.clone(),
            bytes: bytes.clone(),
        })
    }

    /// Index of the deepest non-empty level, if any.
    pub fn last_non_empty_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|level| !level.is_empty())
    }

    /// Total entries in the tree.
    pub fn entries(&self) -> u64 {
        self.levels.iter().map(Level::entries).sum()
    }

    /// Total bytes of table files.
    pub fn bytes(&self) -> u64 {
        self.levels.iter().map(Level::bytes).sum()
    }

    /// Number of sorted runs across all levels.
    pub fn run_count(&self) -> usize {
        self.levels.iter().map(|l| l.runs.len()).sum()
    }

    /// Every live file with its level and run id.
    pub fn files(&self) -> impl Iterator<Item = (usize, u64, &Arc<FileMetadata>)> + '_ {
        self.levels.iter().enumerate().flat_map(|(level, l)| {
            l.runs
                .iter()
                .flat_map(move |run| run.files.iter().map(move |f| (level, run.id, f)))
        })
    }

    /// Applies an edit, producing the next version. `Err` if the edit does not fit this version
    /// (a deleted file that is not there, overlapping files in one run).
    pub(crate) fn apply(
        &self,
        edit: &VersionEdit,
        sink: Option<&Arc<ObsoleteFiles>>,
    ) -> Result<Version, String> {
        self.clone().applied(edit, sink)
    }

    /// [`Version::apply`] on the tree itself, which it consumes: for a caller that holds a copy
    /// of its own (the version builder), one clone of the tree fewer.
    pub(crate) fn applied(
        self,
        edit: &VersionEdit,
        sink: Option<&Arc<ObsoleteFiles>>,
    ) -> Result<Version, String> {
        let mut next = self;
        // Files deleted and re-added by the same edit (a trivial move) keep their runtime state
        // (open reader, statistics, obsolete report): the removed `Arc` itself goes to the new place.
        let mut removed: Vec<Arc<FileMetadata>> = Vec::new();
        for deleted in &edit.deleted_files {
            let level = next
                .levels
                .get_mut(deleted.level)
                .ok_or_else(|| format!("deleted file on level {} out of range", deleted.level))?;
            let run = level
                .runs
                .iter_mut()
                .find(|r| r.id == deleted.run_id)
                .ok_or_else(|| {
                    format!(
                        "deleted file {} names run {} not on level {}",
                        deleted.number, deleted.run_id, deleted.level
                    )
                })?;
            let before = run.files.len();
            run.files.retain(|f| {
                let keep = f.number != deleted.number;
                if !keep {
                    removed.push(Arc::clone(f));
                }
                keep
            });
            if run.files.len() == before {
                return Err(format!(
                    "deleted file {} is not in run {} of level {}",
                    deleted.number, deleted.run_id, deleted.level
                ));
            }
            level.runs.retain(|r| !r.files.is_empty());
        }
        let mut added = Vec::with_capacity(edit.new_files.len());
        for new in &edit.new_files {
            let level = next
                .levels
                .get_mut(new.level)
                .ok_or_else(|| format!("new file on level {} out of range", new.level))?;
            let metadata = match removed.iter().find(|old| old.number == new.file.number) {
                Some(old) if **old == *new.file => Arc::clone(old),
                Some(old) => Arc::new(old.with_facts_of(&new.file)),
                None => Arc::clone(&new.file),
            };
            match level.runs.iter_mut().find(|r| r.id == new.run_id) {
                Some(run) => {
                    let index = run.files.partition_point(|f| {
                        compare_internal_keys(&f.smallest, &metadata.smallest) == Ordering::Less
                    });
                    run.files.insert(index, Arc::clone(&metadata));
                }
                None => {
                    let index = level.runs.partition_point(|r| r.id > new.run_id);
                    level.runs.insert(
                        index,
                        Run {
                            id: new.run_id,
                            files: vec![Arc::clone(&metadata)],
                            key_index: OnceLock::new(),
                        },
                    );
                }
            }
            added.push(metadata);
        }
        for state in &edit.policy_states {
            next.policy_states
                .insert(state.owner.clone(), state.bytes.clone());
        }
        // The runs' files may have changed: their lookup indexes are rebuilt on first use.
        for run in next
            .levels
            .iter_mut()
            .flat_map(|level| level.runs.iter_mut())
        {
            run.key_index = OnceLock::new();
        }
        next.check_runs_are_sorted()?;
        // Only now, with the edit known to fit, do the new files report their obsolescence.
        if let Some(sink) = sink {
            for file in added {
                file.state.report_obsolete_to(sink);
            }
        }
        Ok(next)
    }

    fn check_runs_are_sorted(&self) -> Result<(), String> {
        for (level_index, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                for pair in run.files.windows(2) {
                    if pair[0].largest_user_key() >= pair[1].smallest_user_key() {
                        return Err(format!(
                            "files {} and {} of run {} on level {} overlap",
                            pair[0].number, pair[1].number, run.id, level_index
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::table::table_cache::TableFile;

    /// File `number` with user keys `lo..=hi` (sequence 1, 10 entries, 1,000 bytes, a 10
    /// bits-per-key filter of 16 bytes), added to run `run_id` of `level`.
    pub(crate) fn new_file(
        level: usize,
        run_id: u64,
        number: u64,
        lo: &str,
        hi: &str,
    ) -> AddedFile {
        AddedFile {
            level,
            run_id,
            file: Arc::new(file_metadata(number, lo, hi)),
        }
    }

    impl AddedFile {
        /// The added file's metadata, to change before the edit is applied.
        pub(crate) fn file_mut(&mut self) -> &mut FileMetadata {
            Arc::get_mut(&mut self.file).expect("a test file not yet shared")
        }
    }

    /// The metadata [`new_file`] adds.
    pub(crate) fn file_metadata(number: u64, lo: &str, hi: &str) -> FileMetadata {
        FileMetadata::new(number, lo.as_bytes(), hi.as_bytes())
            .with_entries(10)
            .with_file_bytes(1000)
            .with_sequences(1, 1)
            .with_filter(10.0, 16)
    }

    /// The word after a shared prefix orders keys as bytewise comparison does whenever the
    /// words differ, for keys shorter and longer than 8 bytes and windows that run off the end.
    #[test]
    fn word_after_orders_keys_as_bytes_do() {
        let keys: Vec<Vec<u8>> = [
            "",
            "a",
            "ab",
            "ab\0",
            "abc",
            "abcdefgh",
            "abcdefghi",
            "abcdefgi",
            "abcdefg",
            "abd",
            "b",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abc\u{ff}",
        ]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
        assert_eq!(
            word_after(b"abcdefghij", 0),
            u64::from_be_bytes(*b"abcdefgh")
        );
        assert_eq!(
            word_after(b"abcdefghij", 3),
            u64::from_be_bytes(*b"defghij\0")
        );
        assert_eq!(
            word_after(b"abc", 1),
            u64::from_be_bytes(*b"bc\0\0\0\0\0\0")
        );
        assert_eq!(word_after(b"abcdefghij", 10), 0);
        for a in &keys {
            for b in &keys {
                let shared = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                for at in 0..=shared {
                    let (wa, wb) = (word_after(a, at), word_after(b, at));
                    if wa < wb {
                        assert!(a < b, "{a:?} {b:?} at {at}");
                    } else if wa > wb {
                        assert!(a > b, "{a:?} {b:?} at {at}");
                    }
                }
            }
        }
    }

    /// `file_for_key` through the run's key index answers as a plain binary search over whole
    /// keys, for keys that share a long prefix, tie in the 8 bytes after it, are shorter or
    /// longer than the boundaries, or lack the prefix; and the index follows the run's files
    /// through a later edit.
    #[test]
    fn file_for_key_matches_a_search_over_whole_keys() {
        let bounds = [
            ("user00000000010", "user00000000019"),
            ("user00000000020", "user00000000029zz"),
            ("user00000000029zzz", "user00000000030"),
            ("user000000000300", "user000000000400000000000a"),
            ("user000000000400000000000b", "user000000000400000000000c"),
            ("user00000000050", "user00000000099"),
        ];
        let edit = VersionEdit {
            new_files: bounds
                .iter()
                .enumerate()
                .map(|(i, (lo, hi))| new_file(1, 1, i as u64 + 1, lo, hi))
                .collect(),
            ..Default::default()
        };
        let naive = |run: &Run, key: &[u8]| {
            let index = run.files.partition_point(|f| f.largest_user_key() < key);
            run.files
                .get(index)
                .filter(|f| f.smallest_user_key() <= key)
                .map(|f| f.number)
        };
        let mut probes: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"user".to_vec(),
            b"user0".to_vec(),
            b"usex".to_vec(),
            b"zzz".to_vec(),
            b"a".to_vec(),
        ];
        for (lo, hi) in bounds {
            for key in [lo, hi] {
                let key = key.as_bytes();
                probes.push(key.to_vec());
                probes.push([key, b"\0"].concat());
                probes.push([key, b"a"].concat());
                probes.push(key[..key.len() - 1].to_vec());
            }
        }
        for i in 0..1_200 {
            probes.push(format!("user{i:011}").into_bytes());
            probes.push(format!("user{i:012}").into_bytes());
        }
        let version = Version::default().apply(&edit, None).expect("apply");
        let run = &version.levels[1].runs[0];
        for key in &probes {
            assert_eq!(
                run.file_for_key(key).map(|f| f.number),
                naive(run, key),
                "key {:?}",
                String::from_utf8_lossy(key)
            );
        }
        // Delete a file after the index was built: the next version's index must not keep it.
        let removal = VersionEdit {
            deleted_files: vec![DeletedFile {
                level: 1,
                run_id: 1,
                number: 2,
            }],
            ..Default::default()
        };
        let next = version.apply(&removal, None).expect("apply");
        let run = &next.levels[1].runs[0];
        for key in &probes {
            assert_eq!(run.file_for_key(key).map(|f| f.number), naive(run, key));
        }
        assert!(run.file_for_key(b"user00000000025").is_none());
    }

    #[test]
    fn apply_adds_and_removes_files_and_orders_runs() {
        let edit = VersionEdit {
            new_files: vec![
                new_file(0, 1, 1, "a", "m"),
                new_file(0, 2, 2, "c", "z"),
                new_file(1, 3, 4, "n", "z"),
                new_file(1, 3, 3, "a", "f"),
            ],
            ..Default::default()
        };
        let version = Version::default().apply(&edit, None).expect("apply");
        let ids: Vec<u64> = version.levels[0].runs.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2, 1], "newest run first");
        let numbers: Vec<u64> = version.levels[1].runs[0]
            .files
            .iter()
            .map(|f| f.number)
            .collect();
        assert_eq!(numbers, vec![3, 4], "files in key order");
        assert_eq!(
            version.levels[1].runs[0]
                .file_for_key(b"g")
                .map(|f| f.number),
            None
        );
        assert_eq!(
            version.levels[1].runs[0]
                .file_for_key(b"q")
                .map(|f| f.number),
            Some(4)
        );
        let removal = VersionEdit {
            deleted_files: vec![DeletedFile {
                level: 0,
                run_id: 1,
                number: 1,
            }],
            ..Default::default()
        };
        let next = version.apply(&removal, None).expect("apply");
        assert_eq!(next.levels[0].runs.len(), 1);
        assert!(
            next.apply(&removal, None).is_err(),
            "deleting twice is an error"
        );
    }

    #[test]
    fn a_moved_file_is_obsolete_only_when_every_version_has_let_go() {
        let sink = Arc::new(ObsoleteFiles::default());
        let add = VersionEdit {
            new_files: vec![new_file(1, 1, 7, "a", "b")],
            ..Default::default()
        };
        let v1 = Version::default().apply(&add, Some(&sink)).expect("apply");
        let moved = VersionEdit {
            deleted_files: vec![DeletedFile {
                level: 1,
                run_id: 1,
                number: 7,
            }],
            new_files: vec![new_file(2, 2, 7, "a", "b")],
            ..Default::default()
        };
        let v2 = v1.apply(&moved, Some(&sink)).expect("move");
        let removal = VersionEdit {
            deleted_files: vec![DeletedFile {
                level: 2,
                run_id: 2,
                number: 7,
            }],
            ..Default::default()
        };
        let v3 = v2.apply(&removal, Some(&sink)).expect("remove");
        // An edit holds the files it adds, as a version does.
        drop((add, moved));
        drop(v2);
        assert!(
            sink.take().is_empty(),
            "v1 (an old reader) still holds file 7"
        );
        drop(v1);
        assert_eq!(sink.take(), vec![7]);
        drop(v3);
    }

    /// A trivial move re-places the removed file's own `Arc` (same reader slot, same
    /// statistics); a re-add with other facts gets them, still sharing the file's liveness.
    #[test]
    fn a_re_added_file_keeps_its_reader_and_liveness_and_takes_new_facts() {
        let sink = Arc::new(ObsoleteFiles::default());
        let v1 = Version::default()
            .apply(
                &VersionEdit {
                    new_files: vec![new_file(1, 1, 7, "a", "b")],
                    ..Default::default()
                },
                Some(&sink),
            )
            .expect("apply");
        let original = Arc::clone(&v1.levels[1].runs[0].files[0]);
        let removal = DeletedFile {
            level: 1,
            run_id: 1,
            number: 7,
        };
        let moved = v1
            .apply(
                &VersionEdit {
                    deleted_files: vec![removal],
                    new_files: vec![new_file(2, 2, 7, "a", "b")],
                    ..Default::default()
                },
                Some(&sink),
            )
            .expect("move");
        assert!(Arc::ptr_eq(&moved.levels[2].runs[0].files[0], &original));
        let mut changed = new_file(1, 1, 7, "a", "b");
        changed.file_mut().bits_per_key = 3.0;
        let rewritten = v1
            .apply(
                &VersionEdit {
                    deleted_files: vec![removal],
                    new_files: vec![changed],
                    ..Default::default()
                },
                Some(&sink),
            )
            .expect("re-add");
        let file = &rewritten.levels[1].runs[0].files[0];
        assert_eq!(file.bits_per_key(), 3.0);
        assert!(Arc::ptr_eq(file.table_slot(), original.table_slot()));
        assert!(std::ptr::eq(file.state(), original.state()));
        drop((v1, moved, original));
        assert!(sink.take().is_empty(), "the re-added file is still live");
        drop(rewritten);
        assert_eq!(sink.take(), vec![7]);
    }

    /// The files of an edit that does not apply never report themselves obsolete: no version
    /// ever held them, so the engine must not delete them on their account.
    #[test]
    fn files_of_an_edit_that_does_not_apply_are_not_reported() {
        let sink = Arc::new(ObsoleteFiles::default());
        let overlapping = VersionEdit {
            new_files: vec![new_file(1, 1, 1, "a", "m"), new_file(1, 1, 2, "k", "z")],
            ..Default::default()
        };
        assert!(Version::default().apply(&overlapping, Some(&sink)).is_err());
        drop(overlapping);
        assert!(sink.take().is_empty());
    }

    /// The two binary searches find what a look at every file finds, over random runs and
    /// ranges (inverted ones, points and ones outside the run included).
    #[test]
    fn a_runs_overlapping_files_are_every_file_that_overlaps() {
        let mut rng = crate::random::SplitMix64::new(11);
        let mut number = 0;
        for _ in 0..300 {
            let mut points: Vec<u64> = (0..2 * (rng.next_u64() % 8))
                .map(|_| rng.next_u64() % 100)
                .collect();
            points.sort_unstable();
            points.dedup();
            let mut builder = Version::builder();
            for pair in points.chunks_exact(2) {
                number += 1;
                let (smallest, largest) = (format!("{:02}", pair[0]), format!("{:02}", pair[1]));
                builder = builder.add_file(
                    1,
                    1,
                    FileMetadata::new(number, smallest.as_bytes(), largest.as_bytes()),
                );
            }
            let tree = builder.build().expect("disjoint files");
            let Some(run) = tree.levels()[1].runs().first() else {
                continue;
            };
            for _ in 0..20 {
                let (a, b) = (rng.next_u64() % 105, rng.next_u64() % 105);
                let (smallest, largest) = (format!("{a:02}"), format!("{b:02}"));
                let (smallest, largest) = (smallest.as_bytes(), largest.as_bytes());
                let every: Vec<u64> = run
                    .files()
                    .iter()
                    .filter(|f| f.overlaps(smallest, largest))
                    .map(|f| f.number())
                    .collect();
                let found: Vec<u64> = run
                    .overlapping_files(smallest, largest)
                    .iter()
                    .map(|f| f.number())
                    .collect();
                assert_eq!(found, every, "[{a}, {b}] over {points:?}");
            }
        }
    }

    #[test]
    fn overlapping_files_in_one_run_are_rejected() {
        let edit = VersionEdit {
            new_files: vec![new_file(1, 1, 1, "a", "m"), new_file(1, 1, 2, "k", "z")],
            ..Default::default()
        };
        assert!(Version::default().apply(&edit, None).is_err());
    }

    #[test]
    fn dropped_references_report_obsolete_files() {
        let sink = Arc::new(ObsoleteFiles::default());
        let edit = VersionEdit {
            new_files: vec![new_file(0, 1, 7, "a", "b")],
            ..Default::default()
        };
        let version = Version::default().apply(&edit, Some(&sink)).expect("apply");
        drop(edit);
        let removal = VersionEdit {
            deleted_files: vec![DeletedFile {
                level: 0,
                run_id: 1,
                number: 7,
            }],
            ..Default::default()
        };
        let next = version.apply(&removal, Some(&sink)).expect("apply");
        assert!(sink.take().is_empty(), "the old version still holds file 7");
        drop(version);
        assert_eq!(sink.take(), vec![7]);
        drop(next);
    }
}
