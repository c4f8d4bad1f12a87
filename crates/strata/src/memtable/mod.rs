//! The memtable: recent writes in a skiplist, keyed by internal key.
//!
//! Writers insert under the engine's commit lock (one at a time, in sequence order); readers never
//! lock: they look up or scan with a sequence number and ignore newer entries. A full memtable
//! becomes immutable and is flushed to a level-0 table by the background flush thread.
//!
//! The skiplist ([`skiplist`]) keeps its nodes, keys and values in an arena of large chunks, so
//! an insert makes no heap allocation of its own (one per chunk, megabytes apart), and freeing
//! a memtable frees its chunks, not its entries one by one. The memtable's size is the arena
//! bytes its entries use (nodes, keys, values): the heap it holds is that plus at most one
//! partly used chunk and the list of chunks, and a test checks both bounds.

mod key_filter;
mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::filter::bloom::key_hash;
use crate::iterator::InternalIterator;
use crate::key::{user_key, HiddenVersions, SequenceNumber, ValueKind};
use crate::stats::merlin::MemtableAccess;
use key_filter::KeyFilter;
use skiplist::{Position, SkipList, Target};

/// What a memtable (or any newer source) says about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The newest visible version is this value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// No visible version here; look in older sources.
    Absent,
}

/// A sorted in-memory table of recent writes.
pub(crate) struct MemTable {
    list: SkipList,
    /// Every user key inserted, so a lookup of another key skips the skiplist.
    key_filter: KeyFilter,
    entries: AtomicU64,
    /// Number of the WAL that holds this memtable's writes.
    wal_number: u64,
    /// The lookups that probed this memtable since it became active, handed over to the file
    /// it is flushed into (Merlin, DESIGN.md §4 "At flush").
    pub(crate) access: MemtableAccess,
}

impl MemTable {
    /// An empty memtable whose writes go to log `wal_number`, for a write buffer of
    /// `write_buffer_bytes` (which sizes its key filter), the engine's lookup count being
    /// `first_lookup_number`.
    pub(crate) fn new(
        wal_number: u64,
        first_lookup_number: u64,
        write_buffer_bytes: usize,
    ) -> Self {
        MemTable {
            list: SkipList::new(),
            key_filter: KeyFilter::for_write_buffer(write_buffer_bytes),
            entries: AtomicU64::new(0),
            wal_number,
            access: MemtableAccess::new(first_lookup_number),
        }
    }

    pub(crate) fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts one entry. Callers serialize inserts and give each a unique sequence number.
    pub(crate) fn insert(
        &self,
        sequence: SequenceNumber,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) {
        // Before the entry: a reader that can see the entry sees its key's bits (`key_filter`).
        self.key_filter.add(key_hash(user_key));
        self.list.insert(user_key, sequence, kind, value);
        self.entries.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// The newest version of `user_key` with a sequence number `<= sequence`.
    pub(crate) fn get(&self, user_key: &[u8], sequence: SequenceNumber) -> Lookup {
        self.get_hashed(user_key, key_hash(user_key), sequence)
    }

    /// [`MemTable::get`] for a key whose filter hash (`filter::bloom::key_hash`) the caller has.
    pub(crate) fn get_hashed(
        &self,
        user_key: &[u8],
        hash: u64,
        sequence: SequenceNumber,
    ) -> Lookup {
        if !self.key_filter.may_contain(hash) {
            return Lookup::Absent;
        }
        // The largest kind byte sorts first at equal sequence, so the seek lands on the newest
        // version at or below `sequence` (`crate::key::lookup_key`).
        let target = Target {
            user_key,
            trailer: (sequence << 8) | 0xff,
        };
        let Some(position) = self.list.seek(target) else {
            return Lookup::Absent;
        };
        if !self.list.user_key_is(position, user_key) {
            return Lookup::Absent;
        }
        match ValueKind::from_byte((self.list.trailer(position) & 0xff) as u8) {
            Some(ValueKind::Value) => {
                let mut value = Vec::new();
                self.list.read_value(position, &mut value);
                Lookup::Found(value)
            }
            Some(ValueKind::Deletion) => Lookup::Deleted,
            None => Lookup::Absent,
        }
    }

    /// Bytes of the memtable's entries as stored (nodes, keys, values in the arena). The heap
    /// holds at most one partly used arena chunk and the list of chunks more.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.list.used_bytes()
    }

    /// Bytes of the key filter, fixed when the memtable was made.
    pub(crate) fn key_filter_bytes(&self) -> usize {
        self.key_filter.bytes()
    }

    /// Number of entries (all versions and tombstones).
    pub(crate) fn entries(&self) -> u64 {
        self.entries.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Visits, in internal-key order (a flush's single pass), the entries a reader can still
    /// see: the newest version of each user key, and an older one only while a newer one is
    /// newer than `smallest_snapshot` (the oldest sequence number a live snapshot reads at), by
    /// the rule compaction uses ([`HiddenVersions`]). A flush writes these (RocksDB's flush drops
    /// hidden versions too, by its own snapshot rule); tombstones are kept like values. Returns
    /// the number of entries left out.
    pub(crate) fn for_each_visible_entry<E>(
        &self,
        smallest_snapshot: SequenceNumber,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut rule = HiddenVersions::new(smallest_snapshot);
        let (mut key, mut previous, mut value) = (Vec::new(), Vec::new(), Vec::new());
        let mut hidden_entries = 0;
        let mut position = self.list.first();
        while let Some(at) = position {
            self.list.read_internal_key(at, &mut key);
            let new_user_key = previous.is_empty() || user_key(&key) != user_key(&previous);
            if rule.hidden(new_user_key, self.list.trailer(at) >> 8) {
                hidden_entries += 1;
            } else {
                self.list.read_value(at, &mut value);
                visit(&key, &value)?;
            }
            std::mem::swap(&mut key, &mut previous);
            position = self.list.after(at);
        }
        Ok(hidden_entries)
    }

    /// An owned iterator over every entry in internal-key order.
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            table: Arc::clone(self),
            position: None,
            key: Vec::new(),
            value: Vec::new(),
        }
    }
}

/// An owned iterator over a memtable: the `Arc` keeps the arena alive, the position is a node of
/// it, and `next` follows the node's level-0 link. The current key and value are copied into
/// buffers the iterator reuses, so that `key` and `value` can hand out plain slices.
pub(crate) struct MemTableIter {
    table: Arc<MemTable>,
    position: Option<Position>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl MemTableIter {
    fn settle(&mut self, position: Option<Position>) {
        self.position = position;
        match position {
            Some(at) => {
                self.table.list.read_internal_key(at, &mut self.key);
                self.table.list.read_value(at, &mut self.value);
            }
            None => {
                self.key.clear();
                self.value.clear();
            }
        }
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.position.is_some()
    }

    fn seek_to_first(&mut self) {
        let first = self.table.list.first();
        self.settle(first);
    }

    fn seek(&mut self, target: &[u8]) {
        let found = self.table.list.seek(Target::from_internal_key(target));
        self.settle(found);
    }

    fn next(&mut self) {
        if let Some(at) = self.position {
            let next = self.table.list.after(at);
            self.settle(next);
        }
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn status(&self) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting_allocator::heap_count;
    use crate::key::{compare_internal_keys, lookup_key, pack_trailer, parse_internal_key};
    use std::cmp::Ordering;

    #[test]
    fn get_sees_the_newest_visible_version() {
        let table = MemTable::new(1, 0, 4 << 20);
        table.insert(1, ValueKind::Value, b"k", b"v1");
        table.insert(2, ValueKind::Value, b"k", b"v2");
        table.insert(3, ValueKind::Deletion, b"k", b"");
        table.insert(4, ValueKind::Value, b"kk", b"other");
        assert_eq!(table.get(b"k", 0), Lookup::Absent);
        assert_eq!(table.get(b"k", 1), Lookup::Found(b"v1".to_vec()));
        assert_eq!(table.get(b"k", 2), Lookup::Found(b"v2".to_vec()));
        assert_eq!(table.get(b"k", 3), Lookup::Deleted);
        assert_eq!(table.get(b"k", 99), Lookup::Deleted);
        assert_eq!(table.get(b"j", 99), Lookup::Absent);
        assert_eq!(table.get(b"kk", 99), Lookup::Found(b"other".to_vec()));
        assert_eq!(table.entries(), 4);
    }

    #[test]
    fn iterator_walks_internal_key_order_and_seeks() {
        let table = Arc::new(MemTable::new(1, 0, 4 << 20));
        table.insert(1, ValueKind::Value, b"b", b"1");
        table.insert(2, ValueKind::Value, b"a", b"2");
        table.insert(3, ValueKind::Value, b"b", b"3");
        let mut iter = table.iter();
        iter.seek_to_first();
        let mut seen = Vec::new();
        while iter.valid() {
            let parsed = parse_internal_key(iter.key()).expect("internal key");
            seen.push((
                parsed.user_key.to_vec(),
                parsed.sequence,
                iter.value().to_vec(),
            ));
            iter.next();
        }
        assert_eq!(
            seen,
            vec![
                (b"a".to_vec(), 2, b"2".to_vec()),
                (b"b".to_vec(), 3, b"3".to_vec()),
                (b"b".to_vec(), 1, b"1".to_vec()),
            ]
        );
        iter.seek(&lookup_key(b"b", 2));
        assert_eq!(parse_internal_key(iter.key()).map(|p| p.sequence), Some(1));
    }

    /// An insert allocates nothing of its own: the arena makes one allocation per chunk. The
    /// memtable's size (the arena bytes its entries use) is never more than the heap it holds,
    /// and less by at most one partly used chunk, the list of chunks and the allocator's
    /// rounding of chunks it maps from the OS to whole pages.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "200,000 inserts are hours under Miri, and its allocator is not glibc's"
    )]
    fn inserts_allocate_only_arena_chunks_and_the_accounting_bounds_the_heap() {
        for (key_len, value_len, count) in [
            (16usize, 100usize, 100_000u64),
            (1, 0, 50_000),
            (128, 384, 20_000),
            (24, 1000, 10_000),
        ] {
            let keys: Vec<Vec<u8>> = (0..count)
                .map(|i| {
                    let mut key = format!("{i:0width$}", width = key_len).into_bytes();
                    key.truncate(key_len);
                    key
                })
                .collect();
            let value = vec![b'v'; value_len];
            let before = heap_count();
            let table = MemTable::new(1, 0, 4 << 20);
            for (i, key) in keys.iter().enumerate() {
                table.insert(i as u64 + 1, ValueKind::Value, key, &value);
            }
            let after = heap_count();
            let allocations = after.allocations - before.allocations;
            assert!(
                allocations <= 2 + count / 100,
                "{allocations} allocations for {count} inserts ({key_len}/{value_len})"
            );
            let real = usize::try_from(after.live_bytes - before.live_bytes).expect("grew");
            // A chunk the allocator maps from the OS is rounded up to whole 4 KiB pages.
            let page_rounding = allocations as usize * 4096;
            // The key filter is one allocation, made with the memtable.
            let counted = table.approximate_bytes() + table.key_filter_bytes();
            eprintln!(
                "{key_len}-byte keys, {value_len}-byte values: {:.1} bytes per entry accounted, \
                 {:.1} on the heap",
                counted as f64 / count as f64,
                real as f64 / count as f64
            );
            assert!(
                counted <= real && real <= counted + (1 << 20) + 8 * 1024 + page_rounding,
                "{key_len}-byte keys, {value_len}-byte values: accounted {counted} bytes, the \
                 heap holds {real}"
            );
            // The arena's own count of its heap is the allocator's, up to malloc's headers and
            // page rounding.
            let allocated = table.list.allocated_bytes() + table.key_filter_bytes();
            assert!(
                allocated <= real && real <= allocated + 64 * 64 + page_rounding,
                "{allocated} vs {real}"
            );
            assert_eq!(table.entries(), count);
        }
    }

    proptest::proptest! {
        // Under Miri two cases of at most 24 writes (a case of 120 writes is thousands of
        // lookups, minutes there) and no regression file (Miri's isolation has no file system).
        #![proptest_config(proptest::test_runner::Config {
            cases: if cfg!(miri) { 2 } else { proptest::test_runner::Config::default().cases },
            failure_persistence: if cfg!(miri) {
                None
            } else {
                proptest::test_runner::Config::default().failure_persistence
            },
            ..proptest::test_runner::Config::default()
        })]
        /// The memtable against a model: a map from (user key, newest sequence first) to the
        /// write. Checks the flush order, every point lookup at every sequence number, and the
        /// iterator's seeks.
        #[test]
        fn memtable_matches_an_ordered_map(
            writes in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..12), proptest::bool::ANY,
                 proptest::collection::vec(proptest::num::u8::ANY, 0..20)),
                1..if cfg!(miri) { 24 } else { 120 },
            ),
            snapshot_at in 0u64..130,
        ) {
            use std::cmp::Reverse;
            use std::collections::{BTreeMap, BTreeSet};
            let table = Arc::new(MemTable::new(1, 0, 4 << 20));
            type ModelKey = (Vec<u8>, Reverse<u64>);
            let mut model: BTreeMap<ModelKey, (ValueKind, Vec<u8>)> = BTreeMap::new();
            for (i, (key, is_put, value)) in writes.iter().enumerate() {
                let sequence = i as u64 + 1;
                let kind = if *is_put { ValueKind::Value } else { ValueKind::Deletion };
                let value = if *is_put { value.clone() } else { Vec::new() };
                table.insert(sequence, kind, key, &value);
                model.insert((key.clone(), Reverse(sequence)), (kind, value));
            }
            // Sequence numbers start at 1: a snapshot at 0 hides nothing.
            let mut flushed = Vec::new();
            let hidden = table
                .for_each_visible_entry(0, |key, value| {
                    flushed.push((key.to_vec(), value.to_vec()));
                    Ok::<(), ()>(())
                })
                .expect("visit");
            proptest::prop_assert_eq!(hidden, 0);
            let expected: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .map(|((key, Reverse(sequence)), (kind, value))| {
                    let mut internal = key.clone();
                    internal.extend_from_slice(&pack_trailer(*sequence, *kind).to_le_bytes());
                    (internal, value.clone())
                })
                .collect();
            proptest::prop_assert_eq!(&flushed, &expected);

            let last = writes.len() as u64;
            for (key, _, _) in &writes {
                for sequence in 0..=last + 1 {
                    let newest = model
                        .range((key.clone(), Reverse(sequence))..)
                        .next()
                        .filter(|((k, _), _)| k == key);
                    let want = match newest {
                        Some((_, (ValueKind::Value, value))) => Lookup::Found(value.clone()),
                        Some((_, (ValueKind::Deletion, _))) => Lookup::Deleted,
                        None => Lookup::Absent,
                    };
                    proptest::prop_assert_eq!(table.get(key, sequence), want);
                }
                // A seek to the key at the last sequence lands on its newest entry, and `next`
                // walks on through the model's order.
                let mut iter = table.iter();
                iter.seek(&lookup_key(key, last));
                let position = expected
                    .iter()
                    .position(|(internal, _)| {
                        compare_internal_keys(internal, &lookup_key(key, last)) != Ordering::Less
                    })
                    .expect("the key was written");
                for (internal, value) in &expected[position..] {
                    proptest::prop_assert!(iter.valid());
                    proptest::prop_assert_eq!(iter.key(), &internal[..]);
                    proptest::prop_assert_eq!(iter.value(), &value[..]);
                    iter.next();
                }
                proptest::prop_assert!(!iter.valid());
            }

            // What a flush keeps with the oldest snapshot at `snapshot`: a memtable of only those
            // entries answers every read at or after the snapshot as the whole one does.
            let last = writes.len() as u64;
            let snapshot = snapshot_at.min(last);
            let kept = Arc::new(MemTable::new(2, 0, 4 << 20));
            let hidden = table
                .for_each_visible_entry(snapshot, |internal, value| {
                    let parsed = parse_internal_key(internal).ok_or(())?;
                    kept.insert(parsed.sequence, parsed.kind, parsed.user_key, value);
                    Ok::<(), ()>(())
                })
                .expect("visit");
            proptest::prop_assert_eq!(hidden + kept.entries(), last);
            let keys: BTreeSet<&Vec<u8>> = writes.iter().map(|(key, _, _)| key).collect();
            for key in keys {
                for sequence in snapshot..=last {
                    proptest::prop_assert_eq!(kept.get(key, sequence), table.get(key, sequence));
                }
                // Only what a read at some sequence from the snapshot on can return is kept.
                let versions = model.range((key.clone(), Reverse(u64::MAX))..)
                    .take_while(|((k, _), _)| k == key)
                    .count() as u64;
                let newer_than_snapshot = model.range((key.clone(), Reverse(u64::MAX))..)
                    .take_while(|((k, Reverse(sequence)), _)| k == key && *sequence > snapshot)
                    .count() as u64;
                let mut kept_versions = 0;
                kept.for_each_visible_entry(0, |internal, _| {
                    kept_versions += u64::from(user_key(internal) == key.as_slice());
                    Ok::<(), ()>(())
                }).expect("visit");
                proptest::prop_assert_eq!(kept_versions, versions.min(newer_than_snapshot + 1));
            }
        }
    }
}
