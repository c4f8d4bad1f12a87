//! The full in-memory index of level 0's keys that EcoTune's top level needs (DESIGN.md §6; the
//! policy asks for it through `CompactionPolicy::indexes_top_level`).
//!
//! EcoTune never merges its top-level runs among themselves, so there are many of them, and a
//! read that opened each one would pay for all. The index has two halves, as the paper's index of
//! the top level holds full keys (EcoTune §4.2, "Top Level"):
//!
//! * **Ordered**: every level-0 run's user keys, sorted ([`RunKeys`]). A range lookup opens only
//!   the runs holding a key it reads (`db/top_iter.rs`): for a range `[a, b]`, the runs with a
//!   key in it; for an open-ended scan, each run when the scan reaches its first key. The set is
//!   per run, not "the newest run of a key": an older run may hold the version of a key an older
//!   snapshot reads, so a run is left out only when it holds no key of the range at all.
//! * **Hashed**: every key's 64-bit filter hash (`filter::bloom::key_hash`, the hash the lookup
//!   already computed) mapped to the newest level-0 run holding a key with that hash, so a point
//!   lookup probes at most that one run, and a key the table does not hold skips level 0
//!   altogether. Two keys may share an entry; the table is still exact in what it promises (a
//!   hash with no entry is in no level-0 run, and a key in level 0 is in the run its hash names or
//!   an older one), so the lookup probes the named run first and the older ones only if the key
//!   is not there (a hash collision, about `top keys / 2^64`). The ordered half could answer
//!   point lookups too, by a binary search per run; the table does it in one probe whatever the
//!   number of runs.
//!
//! Memory (`TopLevelIndex::memory_bytes`): a key's bytes plus 4 (the ordered half) and a 17-byte
//! slot plus the table's slack (the hashed half). The top level holds about a hundredth of the
//! tree's bytes (`S = M_tree / max(100, K)`), so with entries of one size throughout the index
//! costs about `8 * (key + 21) / 100` bits per entry of the tree, plus the table's slack;
//! `Stats::top_index_bytes` reports the measured figure and `strata bench` prints it per entry
//! of the tree ("top-level index: ... bits per entry of the tree").
//!
//! One index belongs to one version: it is built with the read view that carries the version
//! (`DbInner::install_current_version`), so a reader holding an old view holds the index that
//! matches it. A run's keys are carried from the index before while its files are the same; a
//! flush adds the flushed memtable's keys under the new run, and any other new or rewritten run is
//! read from its files. The hashed half is carried too when the runs that left were the oldest
//! (a TM compaction) and made again from the runs' keys otherwise (no file read).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::error::Result;
use crate::filter::bloom::key_hash;
use crate::key::{user_key, MAX_SEQUENCE};
use crate::memtable::MemTable;
use crate::version::{Run, Version};

/// A hasher for keys that are hashes already: the value is the hash.
#[derive(Debug, Default, Clone, Copy)]
struct Passthrough(u64);

impl Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type HashToRun = HashMap<u64, u64, BuildHasherDefault<Passthrough>>;

/// One level-0 run's user keys, ascending and distinct, packed into one buffer.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RunKeys {
    bytes: Vec<u8>,
    /// Where each key ends in `bytes`.
    ends: Vec<u32>,
}

impl RunKeys {
    /// The keys `keys` yields, which must come in ascending order (a repeat is kept once).
    /// `None` if they do not fit the 32-bit offsets (4 GiB of keys in one run) or are out of
    /// order.
    pub(crate) fn from_sorted<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Option<RunKeys> {
        let mut run = RunKeys::default();
        for key in keys {
            run.push(key)?;
        }
        run.shrink_to_fit();
        Some(run)
    }

    /// Appends `key`, which must not sort before the last one (a repeat is kept once); `None`
    /// if it does, or if the keys no longer fit the 32-bit offsets.
    fn push(&mut self, key: &[u8]) -> Option<()> {
        match self.last() {
            Some(last) if last == key => return Some(()),
            Some(last) if last > key => return None,
            _ => {}
        }
        self.bytes.extend_from_slice(key);
        self.ends.push(u32::try_from(self.bytes.len()).ok()?);
        Some(())
    }

    fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The `i`-th key; empty past the end.
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(before) => self
                .ends
                .get(before)
                .map_or(self.bytes.len(), |&e| e as usize),
            None => 0,
        };
        let end = self.ends.get(i).map_or(start, |&e| e as usize);
        self.bytes.get(start..end).unwrap_or_default()
    }

    fn last(&self) -> Option<&[u8]> {
        self.len().checked_sub(1).map(|i| self.key(i))
    }

    /// The position of the first key `>= target` (`len()` if none).
    pub(crate) fn lower_bound(&self, target: &[u8]) -> usize {
        let mut low = 0;
        let mut high = self.len();
        while low < high {
            let middle = low + (high - low) / 2;
            if self.key(middle) < target {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The first key `>= target`, if any.
    #[cfg(test)]
    pub(crate) fn first_at_or_after(&self, target: &[u8]) -> Option<&[u8]> {
        let at = self.lower_bound(target);
        (at < self.len()).then(|| self.key(at))
    }

    /// True if some key lies in `[low, high]`.
    #[cfg(test)]
    pub(crate) fn any_in(&self, low: &[u8], high: &[u8]) -> bool {
        self.first_at_or_after(low).is_some_and(|key| key <= high)
    }

    fn memory_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4
    }
}

/// A run's entry in the index: its id, its files (ascending) and its keys.
#[derive(Debug, Clone)]
struct IndexedRun {
    id: u64,
    files: Vec<u64>,
    keys: Arc<RunKeys>,
}

/// The index of one version's level 0 (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct TopLevelIndex {
    newest_run: HashToRun,
    /// The level-0 runs the index covers, ascending by id.
    runs: Vec<IndexedRun>,
}

/// `version`'s level-0 runs as `(run, its file numbers ascending)`, ascending by run.
fn level0_files(version: &Version) -> Vec<(u64, Vec<u64>)> {
    let mut runs: Vec<(u64, Vec<u64>)> = version.levels()[0]
        .runs()
        .iter()
        .map(|run| {
            let mut files: Vec<u64> = run.files().iter().map(|file| file.number()).collect();
            files.sort_unstable();
            (run.id(), files)
        })
        .collect();
    runs.sort_unstable();
    runs
}

impl TopLevelIndex {
    /// The newest level-0 run holding a key whose hash is `hash`, or `None` if no level-0 run
    /// holds one.
    pub(crate) fn newest_run(&self, hash: u64) -> Option<u64> {
        self.newest_run.get(&hash).copied()
    }

    /// The user keys of level-0 run `id`, if the index holds them.
    pub(crate) fn run_keys(&self, id: u64) -> Option<&Arc<RunKeys>> {
        let at = self.runs.binary_search_by_key(&id, |run| run.id).ok()?;
        self.runs.get(at).map(|run| &run.keys)
    }

    /// Distinct key hashes held.
    pub(crate) fn entries(&self) -> u64 {
        self.newest_run.len() as u64
    }

    /// Memory the index holds: the hash table's slots (a key and a run id each, plus a control
    /// byte), as allocated, and the runs' packed keys.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let slot = std::mem::size_of::<(u64, u64)>() + 1;
        let ordered: usize = self
            .runs
            .iter()
            .map(|run| {
                run.keys.memory_bytes()
                    + run.files.capacity() * 8
                    + std::mem::size_of::<IndexedRun>()
            })
            .sum();
        (self.newest_run.capacity() * slot + ordered) as u64
    }

    /// True if the index covers exactly `version`'s level-0 runs, file for file.
    pub(crate) fn covers(&self, version: &Version) -> bool {
        let wanted = level0_files(version);
        wanted.len() == self.runs.len()
            && wanted
                .iter()
                .zip(&self.runs)
                .all(|((id, files), run)| *id == run.id && *files == run.files)
    }

    fn insert(&mut self, hash: u64, run: u64) {
        let entry = self.newest_run.entry(hash).or_insert(run);
        *entry = (*entry).max(run);
    }

    /// The keys of the run `previous` held with the same files, if any.
    fn carried(previous: Option<&TopLevelIndex>, id: u64, files: &[u64]) -> Option<IndexedRun> {
        let previous = previous?;
        let at = previous.runs.binary_search_by_key(&id, |run| run.id).ok()?;
        previous
            .runs
            .get(at)
            .filter(|run| run.files == files)
            .cloned()
    }

    /// The index for `version`, made from `previous` (the index of an earlier version, if any)
    /// where it can be: runs it holds with the same files keep their keys; a new run that is
    /// the newest and the only new one, beside a `previous`, takes `flushed`'s keys (the memtable
    /// just flushed); any other is read with `run_keys` (every user key of a run, ascending). The
    /// hash table is carried when the runs that left were `previous`'s oldest and no kept run
    /// changed, else made again from the runs' keys.
    pub(crate) fn for_version(
        previous: Option<&TopLevelIndex>,
        version: &Version,
        flushed: Option<&MemTable>,
        mut run_keys: impl FnMut(&Run) -> Result<Vec<Vec<u8>>>,
    ) -> Result<TopLevelIndex> {
        let wanted = level0_files(version);
        let newest = wanted.last().map(|(id, _)| *id);
        let mut runs = Vec::with_capacity(wanted.len());
        let mut added = Vec::new();
        let mut missing = Vec::new();
        for (id, files) in &wanted {
            match Self::carried(previous, *id, files) {
                Some(run) => runs.push(run),
                None => missing.push((*id, files.clone())),
            }
        }
        // Only a flush adds a level-0 run: one new run, the newest, beside an index carried over
        // from the version before the flush, is the flushed memtable's.
        let from_memtable = match (missing.as_slice(), flushed) {
            ([(id, _)], Some(mem)) if previous.is_some() && Some(*id) == newest => Some(mem),
            _ => None,
        };
        let level0 = version.levels()[0].runs();
        for (id, files) in missing {
            let out_of_order = || {
                crate::Error::InvalidArgument(format!(
                    "level-0 run {id}: keys out of order or over 4 GiB, not indexed"
                ))
            };
            let keys = match from_memtable {
                Some(mem) => {
                    // Its user keys: the newest version of each is enough.
                    let mut keys = RunKeys::default();
                    mem.for_each_visible_entry(MAX_SEQUENCE, |key, _| {
                        keys.push(user_key(key)).ok_or_else(out_of_order)
                    })?;
                    keys.shrink_to_fit();
                    keys
                }
                None => {
                    let read = match level0.iter().find(|run| run.id() == id) {
                        Some(run) => run_keys(run)?,
                        None => Vec::new(),
                    };
                    RunKeys::from_sorted(read.iter().map(Vec::as_slice)).ok_or_else(out_of_order)?
                }
            };
            added.push(id);
            runs.push(IndexedRun {
                id,
                files,
                keys: Arc::new(keys),
            });
        }
        runs.sort_unstable_by_key(|run| run.id);
        let carried = Self::carried_hashes(previous, &runs, &added);
        let fill: Vec<u64> = match carried {
            Some(_) => added,
            None => runs.iter().map(|run| run.id).collect(),
        };
        let mut index = TopLevelIndex {
            newest_run: carried.unwrap_or_default(),
            runs,
        };
        for id in fill {
            if let Some(keys) = index.run_keys(id).cloned() {
                for i in 0..keys.len() {
                    index.insert(key_hash(keys.key(i)), id);
                }
            }
        }
        Ok(index)
    }

    /// `previous`'s hash table with the runs that left dropped, if that is all that changed
    /// besides the `added` runs (ids): the runs that left must be its oldest, every added run
    /// newer than every kept one (a kept id among `added` was rewritten in place: a merge into
    /// it that keeps its id, or a filter rebuild).
    fn carried_hashes(
        previous: Option<&TopLevelIndex>,
        runs: &[IndexedRun],
        added: &[u64],
    ) -> Option<HashToRun> {
        let previous = previous?;
        let held = |id: u64| runs.binary_search_by_key(&id, |run| run.id).is_ok();
        let kept: Vec<u64> = previous
            .runs
            .iter()
            .map(|run| run.id)
            .filter(|&id| held(id))
            .collect();
        let oldest_kept = kept.first().copied().unwrap_or(u64::MAX);
        let newest_kept = kept.last().copied().unwrap_or(0);
        let dropped_oldest = previous
            .runs
            .iter()
            .filter(|run| !held(run.id))
            .all(|run| run.id < oldest_kept);
        if !dropped_oldest || added.iter().any(|&id| id <= newest_kept) {
            return None;
        }
        let mut table = previous.newest_run.clone();
        table.retain(|_, run| *run >= oldest_kept);
        Some(table)
    }
}

#[cfg(test)]
#[path = "top_index_tests.rs"]
mod tests;
