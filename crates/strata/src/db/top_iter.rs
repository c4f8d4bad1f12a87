//! Level 0 of a range lookup through the top-level index (EcoTune, DESIGN.md §6; `top_index.rs`):
//! the level's runs merged as one stream that opens a run only when the lookup reaches a key the
//! run holds, as the paper's scan reaches the top level through its index of full keys (EcoTune
//! §4.2, "Top Level").
//!
//! At a seek to `t`, each run's first key at or after `t` comes from the index (a binary search
//! in the run's keys); a run with none, or whose first one lies past the lookup's upper bound,
//! is never opened. The others wait, ordered by that first key `s`. While the smallest waiting
//! `s` lies at or before the opened runs' next key (or none is open), the iterator stands on a
//! *marker* for it: the internal key of `s` at sequence [`MAX_SEQUENCE`], which sorts before
//! every version of `s` and which no reader sees (no write is given that sequence, so every
//! snapshot's sequence is below it; `DbIterator` steps over entries newer than its snapshot).
//! Stepping past the marker opens the runs waiting on `s`, positioned at `s`. So a run is opened
//! only when the whole lookup, all levels merged, reaches its first key: a scan that stops before
//! it never reads it. Nothing the stream has returned lies at or after `s`, so the merge stays
//! in order, and the stream's entries up to its position are exactly those of every level-0 run:
//! a run is left out only while it holds no key up to that position. Every version a run holds
//! comes with it, so snapshots read the level-0 versions they would read from every run.
//!
//! A closed seek `[a, b)` thus opens the runs holding a key in `[a, b]`, and a scan opens the
//! runs holding a key it returns; before this, every seek opened every level-0 run (or asked each
//! one's range filter), one index block at least each, and then (until the marker) a scan also
//! opened the run holding the level's first key past its start, read or not.

use std::cmp::Ordering;
use std::sync::Arc;

use super::top_index::RunKeys;
use super::DbInner;
use crate::error::Result;
use crate::iterator::{InternalIterator, MergingIterator};
use crate::key::{
    compare_internal_keys, encode_internal_key, lookup_key, user_key, ValueKind, MAX_SEQUENCE,
};
use crate::stats::add;
use crate::table::iter::RunIter;
use crate::table::reader::ReadMode;
use crate::version::FileMetadata;

/// One level-0 run the iterator may open.
pub(crate) struct LazyRun {
    /// Its user keys, from the top-level index.
    pub(crate) keys: Arc<RunKeys>,
    pub(crate) files: Vec<Arc<FileMetadata>>,
}

/// Level 0's runs as one lazily opened merge (module docs).
pub(crate) struct TopLevelIter {
    inner: Arc<DbInner>,
    runs: Vec<LazyRun>,
    opened: Vec<bool>,
    merged: MergingIterator,
    /// Runs not opened that hold a key at or after the last seek's target (and not past
    /// `upper`), as `(index of that first key in the run's keys, run)`, the smallest key last.
    pending: Vec<(usize, usize)>,
    /// The lookup's upper bound on user keys, inclusive (an excluded bound is taken as included:
    /// a run holding only the bound itself is opened for nothing, never missed).
    upper: Option<Vec<u8>>,
    /// The internal key of the last seek.
    target: Vec<u8>,
    /// The marker the iterator stands on (module docs): the smallest waiting first key at
    /// sequence `MAX_SEQUENCE`, when it sorts at or before the opened runs' next entry.
    marker: Option<Vec<u8>>,
    pin: bool,
}

impl TopLevelIter {
    pub(crate) fn new(
        inner: Arc<DbInner>,
        runs: Vec<LazyRun>,
        upper: Option<Vec<u8>>,
        pin: bool,
    ) -> TopLevelIter {
        TopLevelIter {
            inner,
            opened: vec![false; runs.len()],
            runs,
            merged: MergingIterator::new(Vec::new()),
            pending: Vec::new(),
            upper,
            target: Vec::new(),
            marker: None,
            pin,
        }
    }

    /// The first key of pending entry `(key, run)`.
    fn start(&self, (key, run): (usize, usize)) -> &[u8] {
        self.runs.get(run).map_or(&[], |lazy| lazy.keys.key(key))
    }

    /// Stands on the marker of the smallest waiting first key if the opened runs' stream has
    /// reached it (or ended), else on the stream.
    fn settle(&mut self) {
        self.marker = self.pending.last().and_then(|&next| {
            let start = self.start(next);
            let reached = !self.merged.valid() || user_key(self.merged.key()) >= start;
            reached.then(|| encode_internal_key(start, MAX_SEQUENCE, ValueKind::Value))
        });
    }

    /// Steps past the marker: opens every run waiting on its key.
    fn open_marked(&mut self) {
        let Some(marker) = self.marker.take() else {
            return;
        };
        let start = user_key(&marker).to_vec();
        while let Some(&next) = self.pending.last() {
            if self.start(next) > start.as_slice() {
                break;
            }
            self.pending.pop();
            self.open(next);
        }
    }

    fn open(&mut self, next: (usize, usize)) {
        let run = next.1;
        let Some(lazy) = self.runs.get(run) else {
            return;
        };
        let from = lookup_key(self.start(next), MAX_SEQUENCE);
        // The seek's own target when the run's first key is the target's user key: entries newer
        // than the lookup's sequence sort before it.
        let from = match compare_internal_keys(&from, &self.target) {
            Ordering::Less => self.target.clone(),
            _ => from,
        };
        let mut iter = RunIter::new(
            lazy.files.clone(),
            Arc::clone(&self.inner.tables),
            ReadMode::Cached { level: 0 },
            self.pin,
        );
        iter.seek(&from);
        self.opened[run] = true;
        add(&self.inner.counters.seek_runs[0], 1);
        self.merged.push(Box::new(iter));
    }
}

impl InternalIterator for TopLevelIter {
    fn valid(&self) -> bool {
        self.marker.is_some() || self.merged.valid()
    }

    fn seek_to_first(&mut self) {
        self.seek(&lookup_key(&[], MAX_SEQUENCE));
    }

    fn seek(&mut self, target: &[u8]) {
        self.target = target.to_vec();
        let opened = self.opened.iter().filter(|&&opened| opened).count() as u64;
        if opened > 0 {
            add(&self.inner.counters.seek_runs[0], opened);
        }
        self.merged.seek(target);
        let from = user_key(target);
        let mut pending = Vec::new();
        for (run, lazy) in self.runs.iter().enumerate() {
            if self.opened[run] {
                continue;
            }
            let keys = &lazy.keys;
            let first = keys.lower_bound(from);
            let in_bounds = first < keys.len()
                && self
                    .upper
                    .as_deref()
                    .is_none_or(|upper| keys.key(first) <= upper);
            if in_bounds {
                pending.push((first, run));
            }
        }
        // The smallest first key last; ties in any order.
        pending.sort_unstable_by(|&a, &b| self.start(b).cmp(self.start(a)));
        self.pending = pending;
        self.settle();
    }

    fn next(&mut self) {
        if self.marker.is_some() {
            self.open_marked();
        } else {
            self.merged.next();
        }
        self.settle();
    }

    fn key(&self) -> &[u8] {
        match &self.marker {
            Some(marker) => marker,
            None => self.merged.key(),
        }
    }

    fn value(&self) -> &[u8] {
        match &self.marker {
            Some(_) => &[],
            None => self.merged.value(),
        }
    }

    fn status(&self) -> Result<()> {
        self.merged.status()
    }
}
