//! A Bloom filter over the user keys of one memtable (RocksDB's memtable whole-key filtering), so
//! that a point lookup of a key the memtable does not hold — most lookups, on a tree larger than a
//! memtable — answers from one word instead of descending the skiplist, whose nodes are scattered
//! over megabytes of arena and cost a cache miss per level.
//!
//! Register-blocked: each key sets [`BITS_PER_KEY_SET`] bits of one 64-bit word, chosen by its
//! filter hash (`filter::bloom::key_hash`, which the lookup computes once for the memtables and the
//! table files' filters). Writers add under the commit lock with `fetch_or`; readers load without
//! one. A reader only looks for entries at or below a sequence number it read with `Acquire` after
//! the writer's `Release` store of it (`VersionSet::set_last_sequence`), and the writer adds the
//! key's bits before inserting the entry and publishing the number, so every entry a reader may see
//! has its bits visible to that reader.
//!
//! The filter's size is fixed when the memtable is made, at [`KeyFilter::BUFFER_FRACTION`] of the
//! write buffer: about 16 bits per entry for entries of 128 bytes (false positives near 0.5%), 4
//! for entries of 32 bytes (about 10%). A memtable that grows past its write buffer (one large
//! batch) only fills its filter further: answers stay correct, more of them are "maybe".

use std::sync::atomic::{AtomicU64, Ordering};

use crate::filter::bloom::mix64;

/// Bits each key sets in its word.
const BITS_PER_KEY_SET: u32 = 4;

/// Bounds of the filter's size in 64-bit words (512 bytes to 16 MiB).
const MIN_WORDS: usize = 64;
const MAX_WORDS: usize = 2 << 20;

/// The memtable's key filter (see the module's documentation).
pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
    /// `words.len() - 1` (the length is a power of two).
    mask: u64,
}

impl KeyFilter {
    /// The filter's bytes per byte of write buffer.
    pub(crate) const BUFFER_FRACTION: usize = 64;

    /// A filter for a memtable of about `write_buffer_bytes`: a sixty-fourth of it, rounded to a
    /// power of two words within the bounds.
    pub(crate) fn for_write_buffer(write_buffer_bytes: usize) -> Self {
        let words = (write_buffer_bytes / Self::BUFFER_FRACTION / 8)
            .clamp(MIN_WORDS, MAX_WORDS)
            .next_power_of_two()
            .min(MAX_WORDS);
        KeyFilter {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: words as u64 - 1,
        }
    }

    /// The word a key of filter hash `hash` lives in, and the bits it sets there.
    #[inline]
    fn locate(&self, hash: u64) -> (usize, u64) {
        let mixed = mix64(hash);
        // The word from the high half, the bits from 6-bit fields of the low half: independent
        // parts of a well-mixed hash.
        let word = ((mixed >> 32) & self.mask) as usize;
        let bits = (0..BITS_PER_KEY_SET).fold(0u64, |bits, probe| {
            bits | 1u64 << ((mixed >> (6 * probe)) & 63)
        });
        (word, bits)
    }

    /// Adds a key by its filter hash. Called before the key's entry is inserted.
    #[inline]
    pub(crate) fn add(&self, hash: u64) {
        let (word, bits) = self.locate(hash);
        self.words[word].fetch_or(bits, Ordering::Relaxed);
    }

    /// False if no key of filter hash `hash` was added; true if one may have been.
    #[inline]
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        let (word, bits) = self.locate(hash);
        self.words[word].load(Ordering::Relaxed) & bits == bits
    }

    /// The filter's memory in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::bloom::key_hash;

    #[test]
    fn every_added_key_may_be_contained_and_few_others_are() {
        // 8 MiB of write buffer: 128 KiB of filter, 16 bits for each of 65,536 keys.
        let filter = KeyFilter::for_write_buffer(8 << 20);
        assert_eq!(filter.bytes(), 128 << 10);
        let keys = 65_536u32;
        for i in 0..keys {
            filter.add(key_hash(format!("key:{i:012}").as_bytes()));
        }
        for i in 0..keys {
            assert!(filter.may_contain(key_hash(format!("key:{i:012}").as_bytes())));
        }
        let trials = 100_000u32;
        let false_positives = (0..trials)
            .filter(|i| filter.may_contain(key_hash(format!("absent:{i:012}").as_bytes())))
            .count();
        // Four bits of one word at 16 bits per key: about 0.4% in theory; 1% bounds it.
        assert!(
            false_positives < (trials / 100) as usize,
            "{false_positives} false positives in {trials}"
        );
    }

    #[test]
    fn size_is_a_power_of_two_within_bounds() {
        assert_eq!(KeyFilter::for_write_buffer(0).bytes(), MIN_WORDS * 8);
        assert_eq!(KeyFilter::for_write_buffer(1000).bytes(), MIN_WORDS * 8);
        assert_eq!(KeyFilter::for_write_buffer(3 << 20).bytes(), 64 << 10);
        assert_eq!(
            KeyFilter::for_write_buffer(usize::MAX).bytes(),
            MAX_WORDS * 8
        );
        let empty = KeyFilter::for_write_buffer(4 << 20);
        assert!(!empty.may_contain(key_hash(b"anything")));
    }
}
