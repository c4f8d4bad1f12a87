//! The internal iterator interface and the k-way merging iterator built on it.
//!
//! Memtables, table files, runs and the whole tree all expose sorted internal-key streams through
//! [`InternalIterator`]; [`MergingIterator`] merges any number of them (the read path's scans and
//! the compaction executor's input). Ties between equal internal keys cannot happen: every entry
//! has a unique sequence number.

use std::cmp::Ordering;

use crate::error::Result;
use crate::key::compare_internal_keys;

/// A positioned cursor over a sorted stream of `(internal key, value)` entries.
pub(crate) trait InternalIterator: Send {
    /// True while positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// The current internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met (an invalid iterator may have stopped because of it).
    fn status(&self) -> Result<()>;
    /// The table file the current entry comes from, where the iterator knows it (compaction
    /// attributes each emitted entry to its source file, DESIGN.md §4).
    fn current_file_number(&self) -> Option<u64> {
        None
    }
}

impl InternalIterator for Box<dyn InternalIterator> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
    fn current_file_number(&self) -> Option<u64> {
        (**self).current_file_number()
    }
}

/// Merges child iterators into one sorted stream. The children are kept in a binary min-heap of
/// indices ordered by their current key, so each step costs O(log k) comparisons.
pub(crate) struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of valid children, a min-heap on the child's current key.
    heap: Vec<usize>,
}

impl MergingIterator {
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            heap: Vec::new(),
        }
    }

    /// Adds `child`, positioned already (at or after the merge's position, so the stream stays
    /// sorted): a merge that opens its inputs lazily (`db/top_iter.rs`).
    pub(crate) fn push(&mut self, child: Box<dyn InternalIterator>) {
        let index = self.children.len();
        let valid = child.valid();
        self.children.push(child);
        if valid {
            self.heap.push(index);
            self.sift_up(self.heap.len() - 1);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(self.heap[i], self.heap[parent]) {
                return;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        compare_internal_keys(self.children[a].key(), self.children[b].key()) == Ordering::Less
    }

    fn rebuild(&mut self) {
        self.heap = (0..self.children.len())
            .filter(|&i| self.children[i].valid())
            .collect();
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            let right = left + 1;
            let mut smallest = i;
            if left < n && self.less(self.heap[left], self.heap[smallest]) {
                smallest = left;
            }
            if right < n && self.less(self.heap[right], self.heap[smallest]) {
                smallest = right;
            }
            if smallest == i {
                return;
            }
            self.heap.swap(i, smallest);
            i = smallest;
        }
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        for child in &mut self.children {
            child.seek_to_first();
        }
        self.rebuild();
    }

    fn seek(&mut self, target: &[u8]) {
        for child in &mut self.children {
            child.seek(target);
        }
        self.rebuild();
    }

    fn next(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        self.children[top].next();
        if !self.children[top].valid() {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
    }

    fn key(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&i| self.children[i].key())
    }

    fn value(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&i| self.children[i].value())
    }

    fn status(&self) -> Result<()> {
        for child in &self.children {
            child.status()?;
        }
        Ok(())
    }

    fn current_file_number(&self) -> Option<u64> {
        self.heap
            .first()
            .and_then(|&i| self.children[i].current_file_number())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::key::{encode_internal_key, ValueKind};

    /// A vector-backed iterator for tests.
    pub(crate) struct VecIterator {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        position: usize,
    }

    impl VecIterator {
        pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            let position = entries.len();
            VecIterator { entries, position }
        }
    }

    impl InternalIterator for VecIterator {
        fn valid(&self) -> bool {
            self.position < self.entries.len()
        }
        fn seek_to_first(&mut self) {
            self.position = 0;
        }
        fn seek(&mut self, target: &[u8]) {
            self.position = self
                .entries
                .partition_point(|(k, _)| compare_internal_keys(k, target) == Ordering::Less);
        }
        fn next(&mut self) {
            self.position += 1;
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.position].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.position].1
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn merging_iterator_produces_the_sorted_union() {
        let mut all = Vec::new();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for child in 0..5u64 {
            let mut entries = Vec::new();
            for i in 0..50u64 {
                let key = encode_internal_key(
                    format!("k{:03}", (i * 7 + child * 13) % 97).as_bytes(),
                    child * 1000 + i,
                    ValueKind::Value,
                );
                entries.push((key.clone(), vec![child as u8]));
                all.push(key);
            }
            children.push(Box::new(VecIterator::new(entries)));
        }
        all.sort_by(|a, b| compare_internal_keys(a, b));
        let mut merged = MergingIterator::new(children);
        merged.seek_to_first();
        let mut seen = Vec::new();
        while merged.valid() {
            seen.push(merged.key().to_vec());
            merged.next();
        }
        assert_eq!(seen, all);
        merged.seek(&all[100]);
        assert_eq!(merged.key(), &all[100][..]);
    }

    #[test]
    fn a_child_pushed_mid_stream_joins_the_merge_in_order() {
        let key = |k: &str, seq| encode_internal_key(k.as_bytes(), seq, ValueKind::Value);
        let first = VecIterator::new(vec![(key("a", 1), vec![]), (key("d", 2), vec![])]);
        let mut merged = MergingIterator::new(vec![Box::new(first)]);
        merged.seek_to_first();
        assert_eq!(merged.key(), &key("a", 1)[..]);
        merged.next();
        // A child whose first key lies after the merge's position, and one that is exhausted.
        let mut later = VecIterator::new(vec![(key("b", 3), vec![]), (key("e", 4), vec![])]);
        later.seek(&key("b", 3));
        merged.push(Box::new(later));
        merged.push(Box::new(VecIterator::new(Vec::new())));
        let mut seen = Vec::new();
        while merged.valid() {
            seen.push(merged.key().to_vec());
            merged.next();
        }
        assert_eq!(seen, [key("b", 3), key("d", 2), key("e", 4)]);
    }
}
