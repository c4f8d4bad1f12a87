//! Internal keys: the user key plus an 8-byte trailer `(sequence << 8) | kind`, little-endian.
//!
//! Every entry in a memtable, table block or compaction stream is keyed by an internal key.
//! Ordering: user key ascending (bytewise), then sequence number *descending*, so that a forward
//! scan meets the newest version of a key first. The format is in `docs/FORMAT.md`.

use std::cmp::Ordering;

/// Monotonically increasing number given to every write; the newest version of a key wins.
pub type SequenceNumber = u64;

/// The largest sequence number that fits in the 56 bits the trailer leaves for it.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// Length of the internal-key trailer in bytes.
pub const TRAILER_LEN: usize = 8;

/// What an entry records about its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence number.
    Deletion = 0,
    /// A value was written at this sequence number.
    Value = 1,
}

impl ValueKind {
    pub(crate) fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            _ => None,
        }
    }
}

/// Packs a sequence number and kind into the trailer value.
pub(crate) fn pack_trailer(sequence: SequenceNumber, kind: ValueKind) -> u64 {
    (sequence << 8) | kind as u64
}

/// Builds an internal key (the memtable packs its entries itself; index separators, tests and
/// the microbenchmarks use this).
pub(crate) fn encode_internal_key(
    user_key: &[u8],
    sequence: SequenceNumber,
    kind: ValueKind,
) -> Vec<u8> {
    let mut key = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    key.extend_from_slice(user_key);
    key.extend_from_slice(&pack_trailer(sequence, kind).to_le_bytes());
    key
}

/// The internal key that sorts before every entry of `user_key` visible at `sequence`: seeking to it
/// lands on the newest version with a sequence number `<= sequence`. The kind byte is the largest
/// so that, at equal sequence, it sorts first.
pub(crate) fn lookup_key(user_key: &[u8], sequence: SequenceNumber) -> Vec<u8> {
    let mut key = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    key.extend_from_slice(user_key);
    key.extend_from_slice(&lookup_trailer(sequence));
    key
}

/// The trailer of [`lookup_key`]: sequence `sequence`, kind byte `0xff`.
fn lookup_trailer(sequence: SequenceNumber) -> [u8; TRAILER_LEN] {
    ((sequence << 8) | 0xff).to_le_bytes()
}

/// Bytes of a [`LookupKey`] kept on the stack: user keys up to 248 bytes need no allocation.
const LOOKUP_KEY_INLINE_BYTES: usize = 256;

/// [`lookup_key`] built on the stack when it fits, so that a point lookup allocates nothing for
/// its probe key (one per memtable and one for the tables; longer keys go to the heap).
pub(crate) struct LookupKey {
    inline: [u8; LOOKUP_KEY_INLINE_BYTES],
    inline_len: usize,
    /// The whole key when it does not fit `inline` (empty otherwise).
    heap: Vec<u8>,
}

impl LookupKey {
    // Inlined so the key is built in the caller's frame, not built and then copied there.
    #[inline]
    pub(crate) fn new(user_key: &[u8], sequence: SequenceNumber) -> Self {
        let mut inline = [0; LOOKUP_KEY_INLINE_BYTES];
        let len = user_key.len() + TRAILER_LEN;
        match inline.get_mut(..len) {
            Some(key) => {
                let (user, trailer) = key.split_at_mut(user_key.len());
                user.copy_from_slice(user_key);
                trailer.copy_from_slice(&lookup_trailer(sequence));
                LookupKey {
                    inline,
                    inline_len: len,
                    heap: Vec::new(),
                }
            }
            None => LookupKey {
                inline,
                inline_len: 0,
                heap: lookup_key(user_key, sequence),
            },
        }
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self.inline.get(..self.inline_len) {
            Some(key) if self.heap.is_empty() => key,
            _ => &self.heap,
        }
    }
}

/// A decoded view of an internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedKey<'a> {
    pub(crate) user_key: &'a [u8],
    pub(crate) sequence: SequenceNumber,
    pub(crate) kind: ValueKind,
}

/// Splits an internal key; `None` if it is shorter than the trailer or has an unknown kind.
pub(crate) fn parse_internal_key(key: &[u8]) -> Option<ParsedKey<'_>> {
    let split = key.len().checked_sub(TRAILER_LEN)?;
    let (user_key, trailer) = key.split_at(split);
    let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
    let kind = ValueKind::from_byte((trailer & 0xff) as u8)?;
    Some(ParsedKey {
        user_key,
        sequence: trailer >> 8,
        kind,
    })
}

/// Which versions of a key no reader can see any more: LevelDB's compaction rule, applied at flush
/// and in compaction. Entries are shown in internal-key order (each user key's versions newest
/// first); once a version with a sequence number `<= smallest_snapshot` has been met for a key, every
/// reader (the live snapshots, and every later read) sees that version or a newer one, so every
/// older version of the key is hidden and may be dropped. A version newer than the smallest
/// snapshot keeps the one after it, which that snapshot may read.
///
/// The rule says nothing about tombstones beyond that: the newest version of a key, tombstone or
/// value, is never hidden (a tombstone is dropped only by a compaction that writes the bottom of
/// the tree for its key, `crate::compaction::executor`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HiddenVersions {
    /// The oldest sequence number a live snapshot reads at (the newest one when there is none).
    smallest_snapshot: SequenceNumber,
    /// The sequence number of the previous entry of the current user key (`None` before a key's
    /// first entry).
    newer: Option<SequenceNumber>,
}

impl HiddenVersions {
    pub(crate) fn new(smallest_snapshot: SequenceNumber) -> Self {
        HiddenVersions {
            smallest_snapshot,
            newer: None,
        }
    }

    /// Whether the next entry, of sequence number `sequence`, is hidden; `new_user_key` when its
    /// user key differs from the previous entry's.
    pub(crate) fn hidden(&mut self, new_user_key: bool, sequence: SequenceNumber) -> bool {
        if new_user_key {
            self.newer = None;
        }
        let hidden = self
            .newer
            .is_some_and(|newer| newer <= self.smallest_snapshot);
        self.newer = Some(sequence);
        hidden
    }
}

/// The user-key part of an internal key (the whole slice if it is too short to have a trailer).
pub(crate) fn user_key(key: &[u8]) -> &[u8] {
    &key[..key.len().saturating_sub(TRAILER_LEN)]
}

fn trailer(key: &[u8]) -> u64 {
    let start = key.len().saturating_sub(TRAILER_LEN);
    key.get(start..)
        .and_then(|bytes| bytes.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

/// Orders internal keys: user key ascending, then trailer (sequence, kind) descending.
pub(crate) fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    compare_bytes(user_key(a), user_key(b)).then_with(|| trailer(b).cmp(&trailer(a)))
}

/// Bytewise order, the same as `<[u8]>::cmp`, compared eight bytes at a time as big-endian
/// words in line. This is the comparison a memtable insert makes about 30 times on its way down
/// the skiplist; for short keys the call into `memcmp` cost more than the comparison itself.
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.len().min(b.len());
    let (a_words, a_tail) = a[..common].as_chunks::<8>();
    let (b_words, b_tail) = b[..common].as_chunks::<8>();
    for index in 0..a_words.len().min(b_words.len()) {
        let x = u64::from_be_bytes(a_words[index]);
        let y = u64::from_be_bytes(b_words[index]);
        if x != y {
            return x.cmp(&y);
        }
    }
    for index in 0..a_tail.len().min(b_tail.len()) {
        let (x, y) = (a_tail[index], b_tail[index]);
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_keys_on_the_stack_and_the_heap_match_lookup_key() {
        for len in [0, 1, 16, 128, 247, 248, 249, 1000] {
            let user_key: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            for sequence in [0, 7, MAX_SEQUENCE] {
                let key = LookupKey::new(&user_key, sequence);
                assert_eq!(key.as_bytes(), lookup_key(&user_key, sequence), "{len}");
                assert_eq!(key.heap.is_empty(), len <= 248, "{len}: inline iff it fits");
            }
        }
    }

    #[test]
    fn newer_versions_sort_first() {
        let old = encode_internal_key(b"k", 5, ValueKind::Value);
        let new = encode_internal_key(b"k", 9, ValueKind::Deletion);
        let other = encode_internal_key(b"l", 1, ValueKind::Value);
        assert_eq!(compare_internal_keys(&new, &old), Ordering::Less);
        assert_eq!(compare_internal_keys(&old, &other), Ordering::Less);
        // A lookup key at sequence 9 sorts at or before the entry written at 9.
        assert_eq!(
            compare_internal_keys(&lookup_key(b"k", 9), &new),
            Ordering::Less
        );
        assert_eq!(
            compare_internal_keys(&lookup_key(b"k", 8), &new),
            Ordering::Greater
        );
    }

    #[test]
    fn parse_round_trips_and_rejects_garbage() {
        let key = encode_internal_key(b"abc", 42, ValueKind::Deletion);
        let parsed = parse_internal_key(&key).expect("valid key");
        assert_eq!(parsed.user_key, b"abc");
        assert_eq!(parsed.sequence, 42);
        assert_eq!(parsed.kind, ValueKind::Deletion);
        assert!(parse_internal_key(b"short").is_none());
        let mut bad = key.clone();
        let kind_pos = bad.len() - TRAILER_LEN;
        bad[kind_pos] = 7;
        assert!(parse_internal_key(&bad).is_none());
    }

    #[test]
    fn hidden_versions_keep_what_a_snapshot_reads() {
        // No snapshot (the smallest is the newest sequence): one version per key.
        let mut rule = HiddenVersions::new(100);
        let seen: Vec<bool> = [(true, 9), (false, 7), (false, 3), (true, 8), (false, 2)]
            .iter()
            .map(|&(new_key, sequence)| rule.hidden(new_key, sequence))
            .collect();
        assert_eq!(seen, [false, true, true, false, true]);
        // A snapshot at 5: versions 9 and 7 are newer than it, so 3 (what it reads) stays; 1 goes.
        let mut rule = HiddenVersions::new(5);
        let seen: Vec<bool> = [(true, 9), (false, 7), (false, 3), (false, 1), (true, 4)]
            .iter()
            .map(|&(new_key, sequence)| rule.hidden(new_key, sequence))
            .collect();
        assert_eq!(seen, [false, false, false, true, false]);
        // A version at exactly the snapshot's sequence is what it reads: older ones go.
        let mut rule = HiddenVersions::new(7);
        assert!(!rule.hidden(true, 7));
        assert!(rule.hidden(false, 6));
    }

    proptest::proptest! {
        /// The word-at-a-time comparison is `<[u8]>::cmp`, for every length and at every
        /// position of the first difference (short alphabets make common prefixes likely).
        #[test]
        fn compare_bytes_is_slice_order(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
        ) {
            proptest::prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
            proptest::prop_assert_eq!(compare_bytes(&b, &a), b.cmp(&a));
            let mut longer = a.clone();
            longer.extend_from_slice(&b);
            proptest::prop_assert_eq!(compare_bytes(&a, &longer), a.cmp(&longer));
            proptest::prop_assert_eq!(compare_bytes(&a, &a), std::cmp::Ordering::Equal);
        }

        #[test]
        fn compare_bytes_orders_high_bytes_unsigned(
            a in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
        ) {
            proptest::prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        }
    }
}
