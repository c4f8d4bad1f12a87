//! User-facing iterators: a merge of the memtables and every run, filtered to the newest visible
//! version of each key, tombstones hidden, within bounds.

use std::ops::Bound;
use std::sync::Arc;

use super::top_iter::{LazyRun, TopLevelIter};
use super::{DbInner, Key, ReadView, Value};
use crate::error::Result;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::key::{lookup_key, parse_internal_key, ValueKind};
use crate::stats::add;
use crate::table::iter::RunIter;
use crate::table::reader::ReadMode;
use crate::version::FileMetadata;

/// An owned iterator over `(key, value)` pairs in key order, reading a consistent snapshot taken
/// when it was created. Holds the memtables and table files it reads, so flushes and compactions
/// running meanwhile do not disturb it. Yields `Err` once (then ends) if a file is damaged.
pub struct DbIterator {
    inner: Arc<DbInner>,
    merged: MergingIterator,
    sequence: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// Set once positioned; `next` lazily positions on first use.
    positioned: bool,
    finished: bool,
    /// Entries returned so far, added to the engine's `scan_entries` counter on drop (one
    /// atomic add per iterator rather than per entry).
    returned: u64,
    /// Seeks of this iterator (with `returned`, whether its range lookups were long scans).
    seeks: u64,
    /// The runs every seek positions itself in, by level (`IoStats::seek_runs`).
    runs_per_level: Vec<u64>,
    /// Keeps the read view's memtables and version alive.
    _view: Arc<ReadView>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("sequence", &self.sequence)
            .finish()
    }
}

impl DbIterator {
    pub(crate) fn new(
        inner: Arc<DbInner>,
        sequence: u64,
        bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
        view: Option<Arc<ReadView>>,
    ) -> DbIterator {
        let view = view.unwrap_or_else(|| inner.view.load_full());
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(view.mem.iter()));
        for mem in &view.immutable {
            children.push(Box::new(mem.iter()));
        }
        let closed = closed_range(&bounds);
        let mut runs_per_level = vec![0; view.version.levels().len()];
        for (level_index, level) in view.version.levels().iter().enumerate() {
            let pin = inner.options.pins_metadata_on(level_index);
            let mut indexed = Vec::new();
            for run in level.runs() {
                // Level 0's runs the top-level index holds are opened lazily (`top_iter.rs`).
                let keys = (level_index == 0)
                    .then_some(view.top_index.as_ref())
                    .flatten()
                    .and_then(|index| index.run_keys(run.id()));
                if let Some(keys) = keys {
                    indexed.push(LazyRun {
                        keys: Arc::clone(keys),
                        files: run.files().to_vec(),
                    });
                    continue;
                }
                let files = match closed {
                    Some((lo, hi)) => files_in_range(&inner, run.files(), lo, hi, level_index, pin),
                    None => run.files().to_vec(),
                };
                if files.is_empty() {
                    continue;
                }
                runs_per_level[level_index] += 1;
                children.push(Box::new(RunIter::new(
                    files,
                    Arc::clone(&inner.tables),
                    ReadMode::Cached { level: level_index },
                    pin,
                )));
            }
            if !indexed.is_empty() {
                children.push(Box::new(TopLevelIter::new(
                    Arc::clone(&inner),
                    indexed,
                    upper_user_key(&bounds.1),
                    pin,
                )));
            }
        }
        DbIterator {
            merged: MergingIterator::new(children),
            inner,
            sequence,
            lower: bounds.0,
            upper: bounds.1,
            positioned: false,
            finished: false,
            returned: 0,
            seeks: 0,
            runs_per_level,
            _view: view,
        }
    }

    /// Positions the iterator so the next item is the first key `>= key` (and within bounds).
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.count_seek();
        let key = key.as_ref();
        let target = match &self.lower {
            Bound::Included(lower) if lower.as_slice() > key => lower.clone(),
            Bound::Excluded(lower) if lower.as_slice() >= key => {
                let mut after = lower.clone();
                after.push(0);
                after
            }
            _ => key.to_vec(),
        };
        self.merged.seek(&lookup_key(&target, self.sequence));
        self.positioned = true;
        self.finished = false;
    }

    fn position_at_start(&mut self) {
        match self.lower.clone() {
            Bound::Unbounded => {
                self.count_seek();
                self.merged.seek_to_first();
                self.positioned = true;
            }
            Bound::Included(key) => self.seek(key),
            Bound::Excluded(key) => {
                let mut after = key;
                after.push(0);
                self.seek(after);
            }
        }
    }

    fn count_seek(&mut self) {
        let counters = &self.inner.counters;
        add(&counters.seeks, 1);
        self.seeks += 1;
        for (level, &runs) in self.runs_per_level.iter().enumerate() {
            if runs > 0 {
                if let Some(counter) = counters.seek_runs.get(level) {
                    add(counter, runs);
                }
            }
        }
    }

    fn beyond_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => false,
            Bound::Included(upper) => key > upper.as_slice(),
            Bound::Excluded(upper) => key >= upper.as_slice(),
        }
    }

    fn next_entry(&mut self) -> Option<Result<(Key, Value)>> {
        if self.finished {
            return None;
        }
        if !self.positioned {
            self.position_at_start();
        }
        while self.merged.valid() {
            let Some(parsed) = parse_internal_key(self.merged.key()) else {
                self.finished = true;
                return Some(Err(crate::Error::corruption(
                    &self.inner.dir,
                    0,
                    "malformed internal key during iteration",
                )));
            };
            if parsed.sequence > self.sequence {
                self.merged.next();
                continue;
            }
            if self.beyond_upper(parsed.user_key) {
                break;
            }
            let user_key = parsed.user_key.to_vec();
            let entry = (parsed.kind == ValueKind::Value).then(|| self.merged.value().to_vec());
            // Skip the older versions of this key.
            self.merged.next();
            while self.merged.valid()
                && parse_internal_key(self.merged.key()).is_some_and(|p| p.user_key == user_key)
            {
                self.merged.next();
            }
            if let Some(value) = entry {
                self.returned += 1;
                return Some(Ok((user_key, Value(value))));
            }
        }
        self.finished = true;
        if let Err(error) = self.merged.status() {
            return Some(Err(error));
        }
        None
    }
}

/// The upper end of a range on user keys, if any (an excluded end taken as included).
fn upper_user_key(upper: &Bound<Vec<u8>>) -> Option<Vec<u8>> {
    match upper {
        Bound::Included(key) | Bound::Excluded(key) => Some(key.clone()),
        Bound::Unbounded => None,
    }
}

/// Both ends of `bounds` when both are set (an excluded end is taken as included: the files a
/// closed range keeps are a superset of those the open one needs).
fn closed_range(bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> Option<(&[u8], &[u8])> {
    match bounds {
        (Bound::Included(lo) | Bound::Excluded(lo), Bound::Included(hi) | Bound::Excluded(hi)) => {
            Some((lo.as_slice(), hi.as_slice()))
        }
        _ => None,
    }
}

/// The files of a run a bounded iterator must read: those whose key range meets `[lo, hi]`
/// and whose range filter (`filter/range.rs`), if they have one, does not rule the range out.
/// A file that cannot be opened is kept, so the iterator reports its error when it reads it.
/// Every seek of the iterator lands inside its bounds (`DbIterator::seek` clamps to the lower
/// one and stops at the upper one), so a file with no key in them is never needed.
fn files_in_range(
    inner: &DbInner,
    files: &[Arc<FileMetadata>],
    lo: &[u8],
    hi: &[u8],
    level: usize,
    pin: bool,
) -> Vec<Arc<FileMetadata>> {
    let counters = &inner.counters;
    // A run's files are sorted by key and disjoint: the ones meeting `[lo, hi]` are a slice.
    let first = files.partition_point(|file| file.largest_user_key() < lo);
    files[first..]
        .iter()
        .take_while(|file| file.smallest_user_key() <= hi)
        .filter(|file| {
            let verdict = inner.tables.with_reader(file, pin, |reader| {
                Ok(reader
                    .has_range_filter()
                    .then(|| reader.may_contain_range(lo, hi)))
            });
            match verdict {
                Ok(Some(maybe)) => {
                    add(&counters.range_filter_probes[level], 1);
                    if !maybe {
                        add(&counters.range_filter_negatives[level], 1);
                    }
                    maybe
                }
                Ok(None) | Err(_) => true,
            }
        })
        .cloned()
        .collect()
}

impl Drop for DbIterator {
    fn drop(&mut self) {
        if self.returned > 0 {
            add(&self.inner.counters.scan_entries, self.returned);
            // The entries shared evenly among the iterator's seeks: each is a long scan if its
            // share reaches the threshold (EcoTune's `r`, DESIGN.md §6).
            let long = crate::stats::workload::LONG_SCAN_MIN_ENTRIES;
            if self.seeks > 0 && self.returned >= long.saturating_mul(self.seeks) {
                add(&self.inner.counters.long_scans, self.seeks);
                add(&self.inner.counters.long_scan_entries, self.returned);
            }
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Key, Value)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
    }
}
