//! The full in-memory index of level 0's keys that EcoTune's top level needs (DESIGN.md §6; the
//! policy asks for it through `CompactionPolicy::indexes_top_level`).
//!
//! EcoTune never merges its top-level runs among themselves, so there are many of them, and a
//! point lookup that probed each one's filter would pay for all. The index maps every key of
//! level 0 to the newest level-0 run holding it, so a lookup probes at most that one run; a key
//! the index does not hold skips level 0 altogether.
//!
//! Keys are held as their 64-bit filter hash (`filter::bloom::key_hash`, the hash the lookup
//! already computed), not whole: two keys may then share an entry. The index is still exact in
//! what it promises: a hash with no entry is in no level-0 run, and the entry of a hash names the
//! newest run holding any key with that hash, so a key in level 0 is in that run or an older one.
//! The lookup therefore probes the named run first and, only if the key is not there (a hash
//! collision, about `top keys / 2^64`), the older runs too. Holding hashes costs about 16 bytes
//! a key plus the table's slack (`TopLevelIndex::memory_bytes`); with a top level of
//! `M_tree / 100` bytes that is well under a bit per key of the tree for entries over 20 bytes.
//!
//! One index belongs to one version: it is built with the read view that carries the version
//! (`DbInner::install_current_version`), so a reader holding an old view holds the index that
//! matches it. A flush adds the flushed memtable's keys under the new run; a TM compaction drops
//! the runs it took (always the oldest ones, so their entries are exactly those naming them); a
//! change of any other shape, and the first index after an open or a policy switch, is built by
//! reading level 0's files.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// The index of one version's level 0 (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct TopLevelIndex {
    newest_run: HashToRun,
    /// The level-0 runs the index covers, ascending.
    runs: Vec<u64>,
    /// Their files, as `(run, file number)`, ascending: a run rewritten in place (a merge into it
    /// that keeps its id, or a filter rebuild) keeps its id but not its file.
    files: Vec<(u64, u64)>,
}

/// `version`'s level-0 files as `(run, file number)`, ascending.
fn level0_files(version: &Version) -> Vec<(u64, u64)> {
    let mut files: Vec<(u64, u64)> = version.levels()[0]
        .runs()
        .iter()
        .flat_map(|run| {
            run.files()
                .iter()
                .map(move |file| (run.id(), file.number()))
        })
        .collect();
    files.sort_unstable();
    files
}

/// The file numbers of run `id` in `files` (a `level0_files` list).
fn files_of(files: &[(u64, u64)], id: u64) -> impl Iterator<Item = u64> + '_ {
    files
        .iter()
        .filter(move |(run, _)| *run == id)
        .map(|(_, file)| *file)
}

impl TopLevelIndex {
    /// The newest level-0 run holding a key whose hash is `hash`, or `None` if no level-0 run
    /// holds one.
    pub(crate) fn newest_run(&self, hash: u64) -> Option<u64> {
        self.newest_run.get(&hash).copied()
    }

    /// Distinct key hashes held.
    pub(crate) fn entries(&self) -> u64 {
        self.newest_run.len() as u64
    }

    /// Memory the index holds: its table's slots (a key and a run id each, plus a control
    /// byte), as allocated.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let slot = std::mem::size_of::<(u64, u64)>() + 1;
        (self.newest_run.capacity() * slot + self.runs.capacity() * 8 + self.files.capacity() * 16)
            as u64
    }

    /// True if the index covers exactly `version`'s level-0 runs, file for file.
    pub(crate) fn covers(&self, version: &Version) -> bool {
        level0_files(version) == self.files
    }

    fn insert(&mut self, hash: u64, run: u64) {
        let entry = self.newest_run.entry(hash).or_insert(run);
        *entry = (*entry).max(run);
    }

    /// The index for `version`, made from `previous` (the index of an earlier version, if any)
    /// where it can be: runs `previous` covers that left level 0 are dropped if they were its
    /// oldest, runs it does not cover are added, from `flushed` (the memtable just flushed) if
    /// it is the only one, else by reading their files with `run_keys` (every user key of a
    /// run). Anything else is built from the files.
    pub(crate) fn for_version(
        previous: Option<&TopLevelIndex>,
        version: &Version,
        flushed: Option<&MemTable>,
        mut run_keys: impl FnMut(&Run) -> Result<Vec<Vec<u8>>>,
    ) -> Result<TopLevelIndex> {
        let level0 = version.levels()[0].runs();
        let mut wanted: Vec<u64> = level0.iter().map(Run::id).collect();
        wanted.sort_unstable();
        let files = level0_files(version);
        let mut derived = previous.is_some();
        let mut index = match previous {
            Some(previous) => {
                let kept: Vec<u64> = previous
                    .runs
                    .iter()
                    .copied()
                    .filter(|id| wanted.binary_search(id).is_ok())
                    .collect();
                let dropped_oldest = previous
                    .runs
                    .iter()
                    .filter(|id| wanted.binary_search(id).is_err())
                    .all(|dropped| kept.first().is_none_or(|oldest| dropped < oldest));
                // A kept run with other files was rewritten in place: a merge into it (Leveling's
                // intra-L0 merge, picked before a switch to this policy) brought it the keys of
                // the runs that left, so their entries cannot simply be dropped.
                let rewritten = kept
                    .iter()
                    .any(|&id| !files_of(&previous.files, id).eq(files_of(&files, id)));
                if dropped_oldest && !rewritten {
                    let mut index = previous.clone();
                    if kept.len() < previous.runs.len() {
                        let oldest_kept = kept.first().copied().unwrap_or(u64::MAX);
                        index.newest_run.retain(|_, run| *run >= oldest_kept);
                        index.runs = kept;
                    }
                    index
                } else {
                    derived = false;
                    TopLevelIndex::default()
                }
            }
            None => TopLevelIndex::default(),
        };
        let missing: Vec<&Run> = level0
            .iter()
            .filter(|run| index.runs.binary_search(&run.id()).is_err())
            .collect();
        // Only a flush adds a level-0 run: one new run, the newest, beside an index carried over
        // from the version before the flush, is the flushed memtable's.
        let newest = wanted.last().copied();
        match (missing.as_slice(), flushed) {
            ([run], Some(mem)) if derived && Some(run.id()) == newest => {
                let id = run.id();
                // Its user keys: the newest version of each is enough.
                mem.for_each_visible_entry(MAX_SEQUENCE, |key, _| {
                    index.insert(key_hash(user_key(key)), id);
                    Ok::<(), crate::Error>(())
                })?;
            }
            _ => {
                for run in &missing {
                    for key in run_keys(run)? {
                        index.insert(key_hash(&key), run.id());
                    }
                }
            }
        }
        index.runs = wanted;
        index.files = files;
        Ok(index)
    }
}

#[cfg(test)]
#[path = "top_index_tests.rs"]
mod tests;
