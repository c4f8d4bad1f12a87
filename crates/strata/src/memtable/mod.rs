//! The memtable: recent writes in a concurrent skiplist, keyed by internal key.
//!
//! Writers insert under the engine's commit lock (one at a time, in sequence order); readers never
//! lock: they look up or scan with a sequence number and ignore newer entries. A full memtable
//! becomes immutable and is flushed to a level-0 table by the background flush thread.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;

use crate::iterator::InternalIterator;
use crate::key::{
    compare_internal_keys, encode_internal_key, parse_internal_key, LookupKey, SequenceNumber,
    ValueKind,
};
use crate::stats::merlin::MemtableAccess;

/// An internal key ordered by [`compare_internal_keys`].
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct InternalKey(pub(crate) Box<[u8]>);

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An internal key borrowed from any buffer, ordered like [`InternalKey`]: `get` searches the
/// skiplist with a probe key built on the stack instead of allocating an `InternalKey`.
#[repr(transparent)]
#[derive(PartialEq, Eq)]
struct InternalKeyRef([u8]);

impl InternalKeyRef {
    fn new(key: &[u8]) -> &InternalKeyRef {
        // SAFETY: `InternalKeyRef` is `repr(transparent)` over `[u8]`, so `&[u8]` and
        // `&InternalKeyRef` have the same layout and pointer metadata (the length); the returned
        // reference borrows `key` for the same lifetime.
        unsafe { &*(key as *const [u8] as *const InternalKeyRef) }
    }
}

impl Ord for InternalKeyRef {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Equality and order agree with `InternalKey`'s (bytewise equality, `compare_internal_keys`).
impl std::borrow::Borrow<InternalKeyRef> for InternalKey {
    fn borrow(&self) -> &InternalKeyRef {
        InternalKeyRef::new(&self.0)
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

/// Per-entry bookkeeping the skiplist adds beyond key and value (node, tower, allocation slack);
/// an estimate used for the write-buffer size and memory accounting.
const ENTRY_OVERHEAD_BYTES: usize = 64;

/// A sorted in-memory table of recent writes.
pub(crate) struct MemTable {
    map: SkipMap<InternalKey, Box<[u8]>>,
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
            map: SkipMap::new(),
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
        let key = encode_internal_key(user_key, sequence, kind);
        let bytes = key.len() + value.len() + ENTRY_OVERHEAD_BYTES;
        self.map
            .insert(InternalKey(key.into_boxed_slice()), value.into());
        self.approximate_bytes
            .fetch_add(bytes, AtomicOrdering::Relaxed);
        self.entries.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// The newest version of `user_key` with a sequence number `<= sequence`.
    pub(crate) fn get(&self, user_key: &[u8], sequence: SequenceNumber) -> Lookup {
        let start = LookupKey::new(user_key, sequence);
        let start = InternalKeyRef::new(start.as_bytes());
        let Some(entry) = self
            .map
            .range::<InternalKeyRef, _>((Bound::Included(start), Bound::Unbounded))
            .next()
        else {
            return Lookup::Absent;
        };
        match parse_internal_key(&entry.key().0) {
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
        self.map.is_empty()
    }

    /// Visits every entry in internal-key order (a flush's single pass; no re-seeking).
    pub(crate) fn for_each_entry<E>(
        &self,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for entry in self.map.iter() {
            visit(&entry.key().0, entry.value())?;
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

/// An owned iterator over a memtable. It holds the current entry's key and value and re-seeks the
/// skiplist on `next` (O(log n) a step), which keeps it free of borrows so it can live inside a
/// user-facing iterator or snapshot.
pub(crate) struct MemTableIter {
    table: Arc<MemTable>,
    current: Option<(InternalKey, Box<[u8]>)>,
}

impl MemTableIter {
    fn position(&mut self, bound: Bound<InternalKey>) {
        self.current = self
            .table
            .map
            .range((bound, Bound::Unbounded))
            .next()
            .map(|entry| (entry.key().clone(), entry.value().clone()));
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
        self.position(Bound::Included(InternalKey(target.into())));
    }

    fn next(&mut self) {
        if let Some((key, _)) = self.current.take() {
            self.position(Bound::Excluded(key));
        }
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(key, _)| &key.0)
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(_, value)| value)
    }

    fn status(&self) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::lookup_key;

    /// `InternalKeyRef` (built with the one `unsafe` cast in this module) sees the bytes it was
    /// made from and orders like `InternalKey`.
    #[test]
    fn borrowed_keys_order_like_owned_keys() {
        let keys = [
            lookup_key(b"a", 5),
            encode_internal_key(b"a", 5, ValueKind::Value),
            encode_internal_key(b"a", 4, ValueKind::Deletion),
            encode_internal_key(b"ab", 9, ValueKind::Value),
            lookup_key(b"b", 0),
        ];
        for x in &keys {
            assert_eq!(&InternalKeyRef::new(x).0, x.as_slice());
            for y in &keys {
                let owned = InternalKey(x.clone().into_boxed_slice())
                    .cmp(&InternalKey(y.clone().into_boxed_slice()));
                assert_eq!(InternalKeyRef::new(x).cmp(InternalKeyRef::new(y)), owned);
                assert_eq!(InternalKeyRef::new(x) == InternalKeyRef::new(y), x == y);
            }
        }
    }

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
}
