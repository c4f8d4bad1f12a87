//! Short index keys: the key an index entry stores for a data block need not be the block's last
//! key, only a key at least as large as every key of the block and smaller than every key of the
//! next block (LevelDB's `FindShortestSeparator` / `FindShortSuccessor`). Shorter index keys make
//! smaller index blocks, so fewer bytes per lookup when index blocks are read from the device and
//! more room in the block cache.
//!
//! Index keys stay internal keys, ordered by the same comparator as today, so the table format is
//! unchanged: a shortened user key `s` (with `last < s < next` in user-key order) is stored with
//! the largest trailer (sequence [`MAX_SEQUENCE`], kind `Value`), which orders it before every
//! version of `s` and after every version of the block's last user key. A reader seeks the index
//! for the first entry at or above its target exactly as before, and builds that predate this
//! module read such files unchanged. When the last user key of a block continues into the next
//! block (one user key spanning the boundary) or nothing shorter exists, the index key is the
//! block's last internal key, as before.

use crate::key::{encode_internal_key, parse_internal_key, ValueKind, MAX_SEQUENCE};

/// The shortest byte string `s` with `start < s < limit` found by incrementing one byte of
/// `start` and cutting after it, if it is shorter than `start`. `None` when `start` is a prefix
/// of `limit`, `start >= limit`, or no shorter string exists.
fn shortest_user_separator(start: &[u8], limit: &[u8]) -> Option<Vec<u8>> {
    let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
    if common >= start.len().min(limit.len()) {
        // One is a prefix of the other: nothing strictly between them is shorter than `start`.
        return None;
    }
    let (start_byte, limit_byte) = (start[common], limit[common]);
    if start_byte >= limit_byte {
        return None;
    }
    if start_byte + 1 < limit_byte {
        // `start[..common] + (start_byte + 1)` is above `start` and below `limit`.
        let mut separator = start[..=common].to_vec();
        separator[common] += 1;
        return (separator.len() < start.len()).then_some(separator);
    }
    // `start_byte + 1 == limit_byte`: keep `start_byte` and increment the first later byte of
    // `start` that can be, cutting after it; still below `limit` because of the byte at `common`.
    let position = (common + 1..start.len()).find(|&i| start[i] < 0xff)?;
    let mut separator = start[..=position].to_vec();
    separator[position] += 1;
    (separator.len() < start.len()).then_some(separator)
}

/// The shortest byte string above `key` found by incrementing its first byte below 0xff and
/// cutting after it, if it is shorter than `key`.
fn short_user_successor(key: &[u8]) -> Option<Vec<u8>> {
    let position = key.iter().position(|&b| b < 0xff)?;
    let mut successor = key[..=position].to_vec();
    successor[position] += 1;
    (successor.len() < key.len()).then_some(successor)
}

/// Index key for a data block whose last internal key is `last`, followed by a block starting at
/// internal key `next`: a shortened user key with the largest trailer, or `last` itself.
pub(crate) fn index_separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let (Some(last_parsed), Some(next_parsed)) =
        (parse_internal_key(last), parse_internal_key(next))
    else {
        return last.to_vec();
    };
    match shortest_user_separator(last_parsed.user_key, next_parsed.user_key) {
        Some(user_key) => encode_internal_key(&user_key, MAX_SEQUENCE, ValueKind::Value),
        None => last.to_vec(),
    }
}

/// Index key for the table's last data block, whose last internal key is `last`: a short user
/// key above it with the largest trailer, or `last` itself.
pub(crate) fn index_successor(last: &[u8]) -> Vec<u8> {
    let Some(parsed) = parse_internal_key(last) else {
        return last.to_vec();
    };
    match short_user_successor(parsed.user_key) {
        Some(user_key) => encode_internal_key(&user_key, MAX_SEQUENCE, ValueKind::Value),
        None => last.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::compare_internal_keys;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    #[test]
    fn separators_of_typical_keys() {
        assert_eq!(
            shortest_user_separator(b"the quick brown", b"the slow"),
            Some(b"the r".to_vec())
        );
        // Adjacent bytes at the first difference: the next byte of `start` is incremented.
        assert_eq!(
            shortest_user_separator(b"user:1234567", b"user:2"),
            Some(b"user:13".to_vec())
        );
        assert_eq!(shortest_user_separator(b"abc", b"abcd"), None);
        assert_eq!(shortest_user_separator(b"abd", b"abc"), None);
        assert_eq!(shortest_user_separator(b"a\xff\xff", b"b"), None);
        // Dense decimal keys differ only in their last digits: nothing shorter exists.
        assert_eq!(shortest_user_separator(b"0000123456", b"0000123457"), None);
        assert_eq!(short_user_successor(b"abc"), Some(b"b".to_vec()));
        assert_eq!(short_user_successor(b"\xff\xffa"), None);
        assert_eq!(
            short_user_successor(b"\xff\xfeab"),
            Some(b"\xff\xff".to_vec())
        );
        assert_eq!(short_user_successor(b""), None);
    }

    #[test]
    fn a_user_key_spanning_two_blocks_keeps_its_sequence() {
        let last = encode_internal_key(b"key", 9, ValueKind::Value);
        let next = encode_internal_key(b"key", 3, ValueKind::Value);
        assert_eq!(index_separator(&last, &next), last);
    }

    proptest! {
        #[test]
        fn separators_lie_between_the_blocks(
            mut a in prop::collection::vec(any::<u8>(), 0..24),
            mut b in prop::collection::vec(any::<u8>(), 0..24),
            seq_a in 0u64..1000,
            seq_b in 0u64..1000,
        ) {
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            let last = encode_internal_key(&a, seq_a, ValueKind::Value);
            let next = encode_internal_key(&b, seq_b, ValueKind::Deletion);
            prop_assume!(compare_internal_keys(&last, &next) == Ordering::Less);
            let separator = index_separator(&last, &next);
            prop_assert!(compare_internal_keys(&last, &separator) != Ordering::Greater);
            prop_assert_eq!(compare_internal_keys(&separator, &next), Ordering::Less);
            prop_assert!(separator.len() <= last.len());
            let successor = index_successor(&last);
            prop_assert!(compare_internal_keys(&last, &successor) != Ordering::Greater);
            prop_assert!(successor.len() <= last.len());
            if let Some(s) = shortest_user_separator(&a, &b) {
                prop_assert!(a < s && s < b && s.len() < a.len());
            }
        }
    }
}
