//! RocksDB's block reads by block kind, as its perf context counts them on one thread, and the
//! unnecessary data-block reads of a point lookup derived from them the way Strata counts its own
//! (data blocks read from the device in files that did not hold the key). The reading of the perf
//! context itself is `rocksdb_perf` (with the `peer-rocksdb` feature); this part is plain
//! arithmetic, built and tested in every build.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Indices of the `PerfContextBase` counters read (`include/rocksdb/perf_context.h` of RocksDB
/// 11.8, counting its `uint64_t` members from 0).
pub const BLOCK_CACHE_HIT_COUNT: usize = 1;
pub const BLOCK_READ_COUNT: usize = 2;
pub const BLOCK_READ_BYTE: usize = 3;
const BLOCK_CACHE_INDEX_HIT_COUNT: usize = 6;
const INDEX_BLOCK_READ_COUNT: usize = 9;
const BLOCK_CACHE_FILTER_HIT_COUNT: usize = 10;
const FILTER_BLOCK_READ_COUNT: usize = 11;
const COMPRESSION_DICT_BLOCK_READ_COUNT: usize = 12;
pub const DATA_BLOCK_READ_BYTE: usize = 109;
pub const METADATA_BLOCK_READ_BYTE: usize = 113;
/// `PerfContextBase`'s counters: every field read lies below.
pub const COUNTERS: usize = 120;

/// Cumulative block reads of one thread (or differences of two readings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockReads {
    /// Data blocks read from the device: all block reads but index, filter and compression
    /// dictionary blocks (table-opening reads of metadata blocks too, see `metadata_bytes`).
    pub data: u64,
    /// Index blocks (and index partitions) read from the device.
    pub index: u64,
    /// Filter blocks (and filter partitions and their index) read from the device.
    pub filter: u64,
    /// Data blocks found in the block cache: all cache hits but index and filter ones.
    pub data_cache_hits: u64,
    /// Bytes of blocks read from the device, of every kind.
    pub bytes: u64,
    /// Bytes of metadata blocks read (a table file opened: footer's meta-index, properties);
    /// those reads are in `data`.
    pub metadata_bytes: u64,
}

impl BlockReads {
    /// The reads between `earlier` and `self`.
    pub fn since(self, earlier: BlockReads) -> BlockReads {
        BlockReads {
            data: self.data.saturating_sub(earlier.data),
            index: self.index.saturating_sub(earlier.index),
            filter: self.filter.saturating_sub(earlier.filter),
            data_cache_hits: self.data_cache_hits.saturating_sub(earlier.data_cache_hits),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            metadata_bytes: self.metadata_bytes.saturating_sub(earlier.metadata_bytes),
        }
    }

    /// From the perf context's counters, by field index.
    pub fn from_counters(at: impl Fn(usize) -> u64) -> BlockReads {
        let reads = at(BLOCK_READ_COUNT);
        let index = at(INDEX_BLOCK_READ_COUNT);
        let filter = at(FILTER_BLOCK_READ_COUNT);
        let dictionary = at(COMPRESSION_DICT_BLOCK_READ_COUNT);
        let hits = at(BLOCK_CACHE_HIT_COUNT);
        BlockReads {
            data: reads
                .saturating_sub(index)
                .saturating_sub(filter)
                .saturating_sub(dictionary),
            index,
            filter,
            data_cache_hits: hits
                .saturating_sub(at(BLOCK_CACHE_INDEX_HIT_COUNT))
                .saturating_sub(at(BLOCK_CACHE_FILTER_HIT_COUNT)),
            bytes: at(BLOCK_READ_BYTE),
            metadata_bytes: at(METADATA_BLOCK_READ_BYTE),
        }
    }
}

/// What one point lookup's block reads say about its unnecessary data-block reads, as Strata
/// counts them: data blocks read from the device in files that did not hold the key.
///
/// A lookup that found nothing read only unnecessary blocks. A lookup that found its key read
/// the block holding it last (RocksDB stops at the first file holding the key), from the device
/// or from the cache; the reads say which when all its data blocks came from one place, and
/// otherwise the count is a range of one: `low` assumes the holding block was read from the
/// device, `high` that it came from the cache. A lookup that opened a table file read metadata
/// blocks counted as data reads: `low` counts none of its reads, `high` all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnnecessaryReads {
    pub low: u64,
    pub high: u64,
}

impl UnnecessaryReads {
    /// The unnecessary reads of one lookup with block reads `reads` that `found` its key.
    pub fn of_lookup(reads: BlockReads, found: bool) -> UnnecessaryReads {
        let data = reads.data;
        if reads.metadata_bytes > 0 {
            return UnnecessaryReads { low: 0, high: data };
        }
        if !found || data == 0 {
            return UnnecessaryReads {
                low: data,
                high: data,
            };
        }
        if reads.data_cache_hits == 0 {
            // Every data block came from the device, the holding one too.
            let exact = data - 1;
            return UnnecessaryReads {
                low: exact,
                high: exact,
            };
        }
        UnnecessaryReads {
            low: data - 1,
            high: data,
        }
    }
}

/// The block reads of an engine's own operations since the last reset, summed over the threads
/// that ran them from per-operation readings of each thread's perf context.
#[derive(Debug, Default)]
pub struct ReadTally {
    data: AtomicU64,
    index: AtomicU64,
    filter: AtomicU64,
    bytes: AtomicU64,
    unnecessary_low: AtomicU64,
    unnecessary_high: AtomicU64,
    /// Set when an operation ran on a thread without a perf context: the sums miss it.
    incomplete: AtomicBool,
}

/// [`ReadTally`]'s sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TalliedReads {
    pub data: u64,
    pub index: u64,
    pub filter: u64,
    pub bytes: u64,
    pub unnecessary: UnnecessaryReads,
}

impl ReadTally {
    /// Adds the reads of one operation, from the readings before and after it (`None`: the
    /// thread has no perf context); returns them.
    pub fn operation(
        &self,
        before: Option<BlockReads>,
        after: Option<BlockReads>,
    ) -> Option<BlockReads> {
        let (Some(before), Some(after)) = (before, after) else {
            self.incomplete.store(true, Ordering::Relaxed);
            return None;
        };
        let reads = after.since(before);
        for (sum, value) in [
            (&self.data, reads.data),
            (&self.index, reads.index),
            (&self.filter, reads.filter),
            (&self.bytes, reads.bytes),
        ] {
            if value > 0 {
                sum.fetch_add(value, Ordering::Relaxed);
            }
        }
        Some(reads)
    }

    /// [`ReadTally::operation`] for a point lookup that `found` its key (or not), with its
    /// unnecessary reads.
    pub fn lookup(&self, before: Option<BlockReads>, after: Option<BlockReads>, found: bool) {
        if let Some(reads) = self.operation(before, after) {
            let unnecessary = UnnecessaryReads::of_lookup(reads, found);
            if unnecessary.high > 0 {
                self.unnecessary_low
                    .fetch_add(unnecessary.low, Ordering::Relaxed);
                self.unnecessary_high
                    .fetch_add(unnecessary.high, Ordering::Relaxed);
            }
        }
    }

    /// The sums, `None` if an operation could not be counted.
    pub fn sums(&self) -> Option<TalliedReads> {
        if self.incomplete.load(Ordering::Relaxed) {
            return None;
        }
        Some(TalliedReads {
            data: self.data.load(Ordering::Relaxed),
            index: self.index.load(Ordering::Relaxed),
            filter: self.filter.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            unnecessary: UnnecessaryReads {
                low: self.unnecessary_low.load(Ordering::Relaxed),
                high: self.unnecessary_high.load(Ordering::Relaxed),
            },
        })
    }

    /// Starts the sums again (between phases, with no operation running).
    pub fn reset(&self) {
        for sum in [
            &self.data,
            &self.index,
            &self.filter,
            &self.bytes,
            &self.unnecessary_low,
            &self.unnecessary_high,
        ] {
            sum.store(0, Ordering::Relaxed);
        }
        self.incomplete.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(data: u64, data_cache_hits: u64) -> BlockReads {
        BlockReads {
            data,
            data_cache_hits,
            ..BlockReads::default()
        }
    }

    #[test]
    fn lookups_that_found_nothing_read_only_unnecessary_blocks() {
        let counted = UnnecessaryReads::of_lookup(reads(3, 2), false);
        assert_eq!(counted, UnnecessaryReads { low: 3, high: 3 });
        let none = UnnecessaryReads::of_lookup(reads(0, 4), false);
        assert_eq!(none, UnnecessaryReads { low: 0, high: 0 });
    }

    #[test]
    fn a_found_key_s_own_block_is_necessary_and_ambiguous_only_with_mixed_sources() {
        // All from the device: the holding block was one of them.
        let device = UnnecessaryReads::of_lookup(reads(3, 0), true);
        assert_eq!(device, UnnecessaryReads { low: 2, high: 2 });
        // Nothing from the device: nothing unnecessary.
        let cached = UnnecessaryReads::of_lookup(reads(0, 2), true);
        assert_eq!(cached, UnnecessaryReads { low: 0, high: 0 });
        // Both: the holding block came from one or the other.
        let mixed = UnnecessaryReads::of_lookup(reads(2, 1), true);
        assert_eq!(mixed, UnnecessaryReads { low: 1, high: 2 });
    }

    #[test]
    fn a_lookup_that_opened_a_table_is_bounded_by_none_and_all_of_its_reads() {
        let opened = BlockReads {
            data: 4,
            metadata_bytes: 900,
            ..BlockReads::default()
        };
        let counted = UnnecessaryReads::of_lookup(opened, false);
        assert_eq!(counted, UnnecessaryReads { low: 0, high: 4 });
    }

    #[test]
    fn data_reads_are_block_reads_less_index_filter_and_dictionary_reads() {
        let mut fields = [0u64; COUNTERS];
        fields[BLOCK_READ_COUNT] = 10;
        fields[INDEX_BLOCK_READ_COUNT] = 2;
        fields[FILTER_BLOCK_READ_COUNT] = 3;
        fields[COMPRESSION_DICT_BLOCK_READ_COUNT] = 1;
        fields[BLOCK_CACHE_HIT_COUNT] = 9;
        fields[BLOCK_CACHE_INDEX_HIT_COUNT] = 4;
        fields[BLOCK_CACHE_FILTER_HIT_COUNT] = 1;
        fields[BLOCK_READ_BYTE] = 40_960;
        let counted = BlockReads::from_counters(|field| fields[field]);
        assert_eq!(
            counted,
            BlockReads {
                data: 4,
                index: 2,
                filter: 3,
                data_cache_hits: 4,
                bytes: 40_960,
                metadata_bytes: 0,
            }
        );
        let later = BlockReads { data: 6, ..counted };
        assert_eq!(later.since(counted).data, 2);
        assert_eq!(counted.since(later).data, 0);
    }

    #[test]
    fn the_tally_sums_operations_and_lookups_and_says_when_one_went_uncounted() {
        let tally = ReadTally::default();
        let zero = BlockReads::default();
        let scan = BlockReads {
            data: 5,
            index: 1,
            bytes: 24_576,
            ..zero
        };
        assert_eq!(tally.operation(Some(zero), Some(scan)), Some(scan));
        // A lookup that found nothing after reading two data blocks, one that found its key
        // reading one from the device and one from the cache.
        tally.lookup(Some(zero), Some(reads(2, 0)), false);
        tally.lookup(Some(zero), Some(reads(1, 1)), true);
        let sums = tally.sums().expect("every operation counted");
        assert_eq!((sums.data, sums.index, sums.filter), (8, 1, 0));
        assert_eq!(sums.bytes, 24_576);
        assert_eq!(sums.unnecessary, UnnecessaryReads { low: 2, high: 3 });
        tally.lookup(None, Some(reads(1, 0)), false);
        assert_eq!(tally.sums(), None);
        tally.reset();
        assert_eq!(tally.sums(), Some(TalliedReads::default()));
    }
}
