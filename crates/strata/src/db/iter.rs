//! User-facing iterators: a merge of the memtables and every run, filtered to the newest visible
//! version of each key, tombstones hidden, within bounds.

use std::cell::Cell;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use super::top_iter::{LazyRun, TopLevelIter};
use super::{DbInner, Key, ReadView, Value};
use crate::error::Result;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::key::{lookup_key, parse_internal_key, ValueKind};
use crate::stats::{add, thread_device_read_nanos};
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
    /// One iterator in sixteen a thread makes is timed ([`super::read::timed`] of the thread's
    /// count of iterators made): the processor nanoseconds spent so far inside its own calls
    /// (its making, seeks and steps), the device reads they made left out. `None` when it is
    /// not timed. On drop they are counted against its seeks and the runs they sought
    /// (`IoCounters::count_timed_seeks`), auto-tune's processor price of a range lookup. Two
    /// clock reads per call of a timed iterator (about 40 ns each on this project's test
    /// machine) are counted in with it.
    processor_nanos: Option<u64>,
    /// Keeps the read view's memtables and version alive.
    _view: Arc<ReadView>,
}

thread_local! {
    /// Iterators this thread has made, the numbers the timing sample is drawn from: a count per
    /// thread, so picking the sample touches no shared word.
    static ITERATORS_MADE: Cell<u64> = const { Cell::new(0) };
}

/// A clock reading and the calling thread's device-read nanoseconds at the same moment: the
/// start of a timed call.
struct CallStart {
    at: Instant,
    device_read_nanos: u64,
}

impl CallStart {
    fn now() -> CallStart {
        CallStart {
            at: Instant::now(),
            device_read_nanos: thread_device_read_nanos(),
        }
    }

    /// Nanoseconds since the start less the device reads this thread made meanwhile.
    fn processor_nanos(&self) -> u64 {
        let elapsed = u64::try_from(self.at.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let reads = thread_device_read_nanos().wrapping_sub(self.device_read_nanos);
        elapsed.saturating_sub(reads)
    }
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
        let made = ITERATORS_MADE.with(|made| {
            let number = made.get();
            made.set(number.wrapping_add(1));
            number
        });
        let started = super::read::timed(made).then(CallStart::now);
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
            processor_nanos: started.map(|started| started.processor_nanos()),
            _view: view,
        }
    }

    /// Runs `call`, adding its processor time to the iterator's when it is timed.
    fn timed<R>(&mut self, call: impl FnOnce(&mut Self) -> R) -> R {
        if self.processor_nanos.is_none() {
            return call(self);
        }
        let started = CallStart::now();
        let result = call(self);
        let nanos = started.processor_nanos();
        if let Some(total) = &mut self.processor_nanos {
            *total = total.saturating_add(nanos);
        }
        result
    }

    /// Positions the iterator so the next item is the first key `>= key` (and within bounds).
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.timed(|iter| iter.seek_untimed(key));
    }

    fn seek_untimed(&mut self, key: &[u8]) {
        self.count_seek();
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
            Bound::Included(key) => self.seek_untimed(&key),
            Bound::Excluded(key) => {
                let mut after = key;
                after.push(0);
                self.seek_untimed(&after);
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
        if let (Some(nanos), true) = (self.processor_nanos, self.seeks > 0) {
            let runs_per_seek: u64 = self.runs_per_level.iter().sum();
            self.inner.counters.count_timed_seeks(
                self.seeks,
                self.seeks.saturating_mul(runs_per_seek),
                nanos,
            );
        }
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
        self.timed(DbIterator::next_entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{BlockKind, IoCounters};
    use crate::{Db, Options};

    /// A timed call's processor time leaves out the device reads the calling thread counted
    /// meanwhile, and only that thread's.
    #[test]
    fn a_timed_call_leaves_out_the_device_reads_its_thread_made() {
        let counters = IoCounters::default();
        let started = CallStart::now();
        counters.count_block_read(BlockKind::Data, 1, 4096, 5_000_000_000);
        assert!(
            started.processor_nanos() < 1_000_000_000,
            "a five-second read counted as processor time"
        );
        // Another thread's reads are its own: they do not shorten this thread's time.
        let started = CallStart::now();
        std::thread::scope(|scope| {
            scope.spawn(|| counters.count_block_read(BlockKind::Data, 1, 4096, 5_000_000_000));
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(started.processor_nanos() >= 20_000_000);
    }

    /// One iterator in sixteen a thread makes is timed; each counts its seeks, the runs they
    /// positioned themselves in and its processor time once dropped, on every thread that makes
    /// iterators.
    #[test]
    fn iterators_time_one_in_sixteen_and_count_their_seeks_and_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        // Two runs on level 0 (two flushes, under the compaction trigger).
        for round in 0..2u64 {
            for i in 0..500u64 {
                db.put(format!("key{:05}", i * 2 + round), [7u8; 20])
                    .expect("put");
            }
            db.flush().expect("flush");
        }
        let runs: u64 = db.inner.view.load_full().version.levels()[0].runs().len() as u64;
        assert_eq!(runs, 2);
        let counters = &db.inner.counters;
        assert_eq!(
            counters
                .timed_seeks
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        let threads = 4u64;
        let per_thread = 1_024u64;
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let db = &db;
                scope.spawn(move || {
                    for i in 0..per_thread {
                        let mut iter = db.iter();
                        iter.seek(format!("key{:05}", (i * 7 + thread) % 1_000));
                        let read = iter.by_ref().take(10).count();
                        assert!(read > 0);
                    }
                });
            }
        });
        let load = |counter: &std::sync::atomic::AtomicU64| {
            counter.load(std::sync::atomic::Ordering::Relaxed)
        };
        let timed = load(&counters.timed_seeks);
        // The sample is a hash of each thread's count: the same 1,024 numbers on every thread.
        let per_thread_timed = (0..per_thread)
            .filter(|&n| super::super::read::timed(n))
            .count();
        assert_eq!(timed, threads * per_thread_timed as u64);
        assert!((48..=80).contains(&per_thread_timed), "{per_thread_timed}");
        // Every seek of this tree positions itself in both runs.
        assert_eq!(load(&counters.timed_seek_runs), timed * runs);
        assert!(load(&counters.timed_seek_nanos) > 0);
        assert_eq!(load(&counters.seeks), threads * per_thread);
        // The measurements auto-tune reads give a processor price per run sought.
        let costs = db.inner.measurements().costs(30.0);
        let per_run = costs.seconds_per_run_sought.expect("enough seeks timed");
        assert!(per_run > 0.0 && per_run < 0.1, "{per_run}");
        db.close().expect("close");
    }
}
