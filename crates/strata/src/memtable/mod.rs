//! The memtable: recent writes in a concurrent skiplist, keyed by internal key.
//!
//! Writers insert under the engine's commit lock (one at a time, in sequence order); readers never
//! lock: they look up or scan with a sequence number and ignore newer entries. A full memtable
//! becomes immutable and is flushed to a level-0 table by the background flush thread.
//!
//! Each entry is one heap buffer, `internal key || value`, with the internal key's length beside
//! it ([`MemEntry`]); the skiplist orders entries by the internal-key prefix alone. One buffer
//! instead of a boxed key and a boxed value halves the allocations an insert makes: what is left
//! is that buffer and crossbeam's skiplist node. The size accounting counts both, as the
//! allocator rounds them ([`entry_heap_bytes`]), because the write-buffer limit depends on it.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use crossbeam_skiplist::SkipSet;

use crate::iterator::InternalIterator;
use crate::key::{
    compare_internal_keys, lookup_key, pack_trailer, parse_internal_key, SequenceNumber, ValueKind,
    TRAILER_LEN,
};
use crate::stats::merlin::MemtableAccess;

/// One memtable entry: `internal key || value` in a single buffer, ordered by the internal key
/// ([`compare_internal_keys`]); the value plays no part in the order.
#[derive(Clone)]
pub(crate) struct MemEntry {
    bytes: Box<[u8]>,
    /// Length of the internal-key prefix of `bytes` (user key plus trailer); keys are at most
    /// `MAX_KEY_BYTES` long, so it fits.
    internal_key_len: u32,
}

impl MemEntry {
    /// Builds the entry with exactly one allocation of `user_key + 8 + value` bytes.
    fn new(user_key: &[u8], sequence: SequenceNumber, kind: ValueKind, value: &[u8]) -> Self {
        let internal_key_len = user_key.len() + TRAILER_LEN;
        let mut bytes = Vec::with_capacity(internal_key_len + value.len());
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(&pack_trailer(sequence, kind).to_le_bytes());
        bytes.extend_from_slice(value);
        MemEntry::from_parts(bytes, internal_key_len)
    }

    /// An entry with no value, for seeking to `internal_key`.
    fn seek_target(internal_key: Vec<u8>) -> Self {
        let internal_key_len = internal_key.len();
        MemEntry::from_parts(internal_key, internal_key_len)
    }

    fn from_parts(bytes: Vec<u8>, internal_key_len: usize) -> Self {
        MemEntry {
            // The capacity is exact (or the vector came from a caller), so this does not
            // reallocate when the length equals the capacity.
            bytes: bytes.into_boxed_slice(),
            // Internal keys are checked against `MAX_KEY_BYTES` (64 KiB) before they get here;
            // a longer one saturates, which only a seek target could be, and it then sorts as
            // its first 4 GiB, after every stored key of that prefix.
            internal_key_len: u32::try_from(internal_key_len).unwrap_or(u32::MAX),
        }
    }

    pub(crate) fn internal_key(&self) -> &[u8] {
        let end = (self.internal_key_len as usize).min(self.bytes.len());
        &self.bytes[..end]
    }

    pub(crate) fn value(&self) -> &[u8] {
        let start = (self.internal_key_len as usize).min(self.bytes.len());
        &self.bytes[start..]
    }
}

impl PartialEq for MemEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for MemEntry {}

impl Ord for MemEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(self.internal_key(), other.internal_key())
    }
}

impl PartialOrd for MemEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

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

/// Bytes the allocator hands out for a request of `size` bytes: glibc's malloc (the allocator
/// Rust uses by default on Linux) adds an 8-byte header and rounds the chunk to 16 bytes, with a
/// 32-byte minimum.
const fn allocated_bytes(size: usize) -> usize {
    let chunk = (size + 8 + 15) & !15;
    if chunk < 32 {
        32
    } else {
        chunk
    }
}

/// Bytes of crossbeam's skiplist node before its tower: the key ([`MemEntry`], 24 bytes), the
/// empty value and the reference count and height (8 bytes).
const NODE_HEADER_BYTES: usize = std::mem::size_of::<MemEntry>() + 8;

/// Average tower height of crossbeam's skiplist: each level is kept with probability 1/2, so the
/// mean height is 2 pointers of 8 bytes.
const MEAN_TOWER_BYTES: usize = 2 * 8;

/// The heap bytes one entry costs: its buffer and its skiplist node, as the allocator rounds
/// them. Used for the write-buffer limit, so it must not undercount (a test checks it against
/// the allocator).
pub(crate) const fn entry_heap_bytes(internal_key_len: usize, value_len: usize) -> usize {
    allocated_bytes(internal_key_len + value_len)
        + allocated_bytes(NODE_HEADER_BYTES + MEAN_TOWER_BYTES)
}

/// A sorted in-memory table of recent writes.
pub(crate) struct MemTable {
    set: SkipSet<MemEntry>,
    approximate_bytes: AtomicUsize,
    entries: AtomicU64,
    /// Number of the WAL that holds this memtable's writes.
    wal_number: u64,
    /// The lookups that probed this memtable since it became active, handed over to the file
    /// it is flushed into (Merlin, SPEC §4 "At flush").
    pub(crate) access: MemtableAccess,
}

impl MemTable {
    pub(crate) fn new(wal_number: u64, first_lookup_number: u64) -> Self {
        MemTable {
            set: SkipSet::new(),
            approximate_bytes: AtomicUsize::new(0),
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
        let bytes = entry_heap_bytes(user_key.len() + TRAILER_LEN, value.len());
        // Sequence numbers are unique, so no entry with this internal key exists: `insert`
        // would replace one, `get_or_insert` skips that check's removal path.
        drop(
            self.set
                .get_or_insert(MemEntry::new(user_key, sequence, kind, value)),
        );
        self.approximate_bytes
            .fetch_add(bytes, AtomicOrdering::Relaxed);
        self.entries.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// The newest version of `user_key` with a sequence number `<= sequence`.
    pub(crate) fn get(&self, user_key: &[u8], sequence: SequenceNumber) -> Lookup {
        let start = MemEntry::seek_target(lookup_key(user_key, sequence));
        let Some(found) = self.set.range(start..).next() else {
            return Lookup::Absent;
        };
        let entry = found.value();
        match parse_internal_key(entry.internal_key()) {
            Some(parsed) if parsed.user_key == user_key => match parsed.kind {
                ValueKind::Value => Lookup::Found(entry.value().to_vec()),
                ValueKind::Deletion => Lookup::Deleted,
            },
            _ => Lookup::Absent,
        }
    }

    /// Estimated memory use in bytes.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries (all versions and tombstones).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> u64 {
        self.entries.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Visits every entry in internal-key order (a flush's single pass; no re-seeking).
    pub(crate) fn for_each_entry<E>(
        &self,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for found in self.set.iter() {
            let entry = found.value();
            visit(entry.internal_key(), entry.value())?;
        }
        Ok(())
    }

    /// An owned iterator over every entry in internal-key order.
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            table: Arc::clone(self),
            current: None,
        }
    }
}

/// An owned iterator over a memtable. It holds a copy of the current entry and re-seeks the
/// skiplist on `next` (O(log n) a step), which keeps it free of borrows so it can live inside a
/// user-facing iterator or snapshot.
pub(crate) struct MemTableIter {
    table: Arc<MemTable>,
    current: Option<MemEntry>,
}

impl MemTableIter {
    fn position(&mut self, bound: Bound<MemEntry>) {
        self.current = self
            .table
            .set
            .range((bound, Bound::Unbounded))
            .next()
            .map(|entry| entry.value().clone());
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.position(Bound::Unbounded);
    }

    fn seek(&mut self, target: &[u8]) {
        self.position(Bound::Included(MemEntry::seek_target(target.to_vec())));
    }

    fn next(&mut self) {
        if let Some(entry) = self.current.take() {
            self.position(Bound::Excluded(entry));
        }
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], MemEntry::internal_key)
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], MemEntry::value)
    }

    fn status(&self) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting_allocator::heap_count;

    #[test]
    fn get_sees_the_newest_visible_version() {
        let table = MemTable::new(1, 0);
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
        let table = Arc::new(MemTable::new(1, 0));
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

    /// One allocation for the entry's buffer and one for crossbeam's node; no other.
    #[test]
    fn an_insert_makes_two_allocations_and_the_accounting_covers_them() {
        let table = MemTable::new(1, 0);
        // The thread's first skiplist operation registers it with crossbeam's epoch collector
        // (an allocation of its own, once per thread); get it done before counting.
        drop(table.get(b"warm-up", 0));
        // Entries of several shapes, so the rounding of both allocations varies.
        for (round, (key_len, value_len)) in [(16, 100), (1, 0), (128, 384), (24, 1000), (8, 8)]
            .into_iter()
            .enumerate()
        {
            let before = heap_count();
            let bytes_before = table.approximate_bytes();
            let count = 2_000u64;
            for i in 0..count {
                let mut key = vec![b'k'; key_len];
                let tag = i.to_be_bytes();
                let tail = key.len().saturating_sub(tag.len());
                key[tail..].copy_from_slice(&tag[8 - (key_len - tail)..]);
                let value = vec![b'v'; value_len];
                let start = heap_count().allocations;
                table.insert(round as u64 * count + i + 1, ValueKind::Value, &key, &value);
                assert_eq!(
                    heap_count().allocations - start,
                    2,
                    "allocations of one insert ({key_len}-byte key, {value_len}-byte value)"
                );
            }
            // The key and value vectors above are freed, so the live bytes that remain are the
            // memtable's own.
            let real = (heap_count().live_bytes - before.live_bytes) as f64 / count as f64;
            let counted = (table.approximate_bytes() - bytes_before) as f64 / count as f64;
            assert!(
                counted >= real * 0.95 && counted <= real * 1.10,
                "{key_len}-byte keys, {value_len}-byte values: accounted {counted:.1} bytes an \
                 entry, the heap holds {real:.1}"
            );
        }
    }

    proptest::proptest! {
        /// The memtable against a model: a map from (user key, newest sequence first) to the
        /// write. Checks the flush order, every point lookup at every sequence number, and the
        /// iterator's seeks.
        #[test]
        fn memtable_matches_an_ordered_map(
            writes in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..12), proptest::bool::ANY,
                 proptest::collection::vec(proptest::num::u8::ANY, 0..20)),
                1..120,
            ),
        ) {
            use std::cmp::Reverse;
            use std::collections::BTreeMap;
            let table = Arc::new(MemTable::new(1, 0));
            type ModelKey = (Vec<u8>, Reverse<u64>);
            let mut model: BTreeMap<ModelKey, (ValueKind, Vec<u8>)> = BTreeMap::new();
            for (i, (key, is_put, value)) in writes.iter().enumerate() {
                let sequence = i as u64 + 1;
                let kind = if *is_put { ValueKind::Value } else { ValueKind::Deletion };
                let value = if *is_put { value.clone() } else { Vec::new() };
                table.insert(sequence, kind, key, &value);
                model.insert((key.clone(), Reverse(sequence)), (kind, value));
            }
            let mut flushed = Vec::new();
            table
                .for_each_entry(|key, value| {
                    flushed.push((key.to_vec(), value.to_vec()));
                    Ok::<(), ()>(())
                })
                .expect("visit");
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
        }
    }
}
