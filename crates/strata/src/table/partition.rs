//! Partitioned index and filters (RocksDB's "Partitioned Index/Filters", with `partition_filters`
//! and filter partitions cut at the index partitions' boundaries): how a large table file's index
//! and filter are split into small blocks, and the top-level index that locates them.
//!
//! # Why
//!
//! An unpartitioned table has one index block and one filter block per filter module, each read
//! whole on a block-cache miss. For a 64 MiB file those are hundreds of KiB: a small cache cannot
//! keep them, and every miss re-reads all of it to answer one lookup. Split into partitions of
//! about `Options::metadata_block_bytes` (default 4 KiB), a miss reads one index partition and one
//! filter partition (per module probed); a small top-level index, held by the open reader like the
//! footer and properties, says which.
//!
//! # When ([`MetadataPartitioning`])
//!
//! Per file, by size, when the builder finishes it: a file is partitioned when its whole-file index
//! block (uncompressed) or one of its whole-file filter modules would exceed
//! `Options::partition_metadata_above_bytes`. Every other file keeps the unpartitioned layout byte
//! for byte (table format version 1 or 2), so small files, and every file an older build wrote,
//! are unchanged. Partitioned files are table format version 3 (`format.rs`).
//!
//! # Layout (table format version 3)
//!
//! ```text
//! data block* | filter partition* | properties block | index partition* | top-level index | footer
//! ```
//!
//! * **Index partitions**: ordinary index blocks (same entries as an unpartitioned index: separator
//!   key → data-block handle), each holding the entries of consecutive data blocks; the builder
//!   closes a partition once it reaches `metadata_block_bytes`. Compressed like index blocks.
//! * **Filter partitions**: for index partition `p` and filter module `j` (0-based, `M` modules,
//!   `filter/modular.rs`), one Bloom filter block (`filter/bloom.rs`, seed `j`, module `j`'s bits per
//!   key) over the distinct user keys of partition `p`'s data blocks. A user key whose versions
//!   span two data blocks of different partitions is in both partitions' filters. Stored raw,
//!   written partition by partition (`p0 m0, p0 m1, ..., p1 m0, ...`).
//! * **Top-level index**: a block in the format of `block.rs`, one entry per partition in order:
//!
//!   ```text
//!   key   = partition p's last index key (at or above every key of its data blocks: an internal
//!           key, or a user key when the file's index holds user keys, `format.rs`)
//!   value = index partition handle: offset:varint64 size:varint64
//!           module count M: u8
//!           M filter partition handles: offset:varint64 size:varint64
//!   ```
//!
//!   Stored raw. Keys strictly increase (in the index's order); `M` equals the properties block's
//!   module count in every entry; every handle lies before the footer and names a non-empty block;
//!   at least one entry. Anything else is corruption.
//!
//! A point lookup finds the first partition whose last key is at or above its lookup key (a binary
//! search of the top-level index, in memory), probes that partition's filter modules, then seeks
//! that partition's index block: the same data block an unpartitioned index would pick, since
//! index entries keep their order across partitions. The filter partition holds every user key of
//! the data block the lookup reads, so its "absent" is as sound as the whole filter's.
//!
//! `bits_per_key` and `filter_bytes` in the properties stay exact: the first is the sum of the
//! modules' bits per key (each partition's module `j` is built at module `j`'s bits per key), the
//! second the total of every filter partition's contents.

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::Block;
use super::format::{BlockHandle, IndexKeys};
use crate::coding::Decoder;
use crate::filter::modular::MAX_MODULES;
use crate::key::{parse_internal_key, user_key};

/// When the table builder partitions a file's index and filter (`Options::
/// partition_metadata_above_bytes` and `Options::metadata_block_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetadataPartitioning {
    /// Partition a file whose whole-file index block or largest filter module would be larger
    /// than this many bytes; `u64::MAX` never partitions.
    pub(crate) above_bytes: u64,
    /// Bytes at which an index partition is closed (its filter partitions follow its cut).
    pub(crate) block_bytes: usize,
}

impl MetadataPartitioning {
    /// Never partition: every file keeps the unpartitioned layout.
    pub(crate) const NEVER: MetadataPartitioning = MetadataPartitioning {
        above_bytes: u64::MAX,
        block_bytes: usize::MAX,
    };

    /// True when no file can be partitioned.
    pub(crate) fn is_never(&self) -> bool {
        self.above_bytes == u64::MAX
    }
}

/// Appends a top-level index entry's value: the index partition's handle, then its filter
/// partitions' (at most [`MAX_MODULES`]).
pub(crate) fn encode_partition_value(
    dst: &mut Vec<u8>,
    index: BlockHandle,
    filters: &[BlockHandle],
) {
    index.encode_to(dst);
    // The builder writes at most MAX_MODULES (6) modules.
    dst.push(filters.len().min(MAX_MODULES) as u8);
    for handle in filters.iter().take(MAX_MODULES) {
        handle.encode_to(dst);
    }
}

/// The first 8 bytes of `user_key`, zero-padded, as a big-endian number. For user keys `a` and
/// `b`, `prefix(a) < prefix(b)` implies `a < b` (bytewise): at the first byte where the padded
/// prefixes differ, either both keys have a byte and `a`'s is smaller, or `a` has ended there
/// (its padding 0 below `b`'s byte), making `a` a proper prefix of `b`. Equal prefixes decide
/// nothing.
fn user_key_prefix(user_key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let len = user_key.len().min(8);
    if let (Some(to), Some(from)) = (bytes.get_mut(..len), user_key.get(..len)) {
        to.copy_from_slice(from);
    }
    u64::from_be_bytes(bytes)
}

/// Where a partition's key lies in [`PartitionIndex`]'s `keys`, and what the search compares
/// first.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PartitionKey {
    /// The user key starts with the index's shared prefix (so `prefix` orders it).
    shares_prefix: bool,
    /// [`user_key_prefix`] of the user key after the shared prefix.
    prefix: u64,
    start: usize,
    end: usize,
}

/// A decoded top-level index: every partition's last key and the handles of its index and filter
/// partitions, held by the open reader for the file's life and searched in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionIndex {
    /// Every partition's last index key, concatenated.
    keys: Vec<u8>,
    /// Length of the user-key prefix the partition keys share, `keys[..shared_len]`: the common
    /// prefix of the first and the last but one (the last partition's key is often a short
    /// successor such as `"1"`, which shares nothing with the others).
    shared_len: usize,
    /// Per partition: whether its user key starts with the shared prefix, the 8 bytes after it
    /// as a big-endian number (zero-padded; see [`user_key_prefix`]), and where its key lies in
    /// `keys`.
    key_ranges: Vec<PartitionKey>,
    index_handles: Vec<BlockHandle>,
    /// `modules` handles per partition, partition-major.
    filter_handles: Vec<BlockHandle>,
    modules: usize,
    /// Whether the partition keys are internal keys or user keys (the file's index format).
    key_order: IndexKeys,
}

impl PartitionIndex {
    /// Decodes a top-level index block's contents, checking everything the module doc lists:
    /// `modules` is the properties block's module count and `blocks_end` the offset of the footer.
    /// Never panics; the error is a reason for the caller to wrap in `Error::Corruption`.
    // Long: the checks run in the order the module doc lists them, each on the fields read
    // before it.
    pub(crate) fn decode(
        contents: Vec<u8>,
        modules: usize,
        blocks_end: u64,
        key_order: IndexKeys,
    ) -> Result<PartitionIndex, String> {
        if modules > MAX_MODULES {
            return Err(format!(
                "a partitioned table cannot have {modules} filter modules (at most {MAX_MODULES})"
            ));
        }
        let block = Arc::new(Block::decode(contents)?);
        let compare = key_order.comparator();
        let mut iter = block.iter(compare);
        let mut index = PartitionIndex {
            keys: Vec::new(),
            shared_len: 0,
            key_ranges: Vec::new(),
            index_handles: Vec::new(),
            filter_handles: Vec::new(),
            modules,
            key_order,
        };
        let check = |what: &str, partition: usize, handle: BlockHandle| -> Result<(), String> {
            let end = handle
                .len_with_trailer()
                .and_then(|len| handle.offset.checked_add(len));
            if handle.size == 0 || !matches!(end, Some(end) if end <= blocks_end) {
                return Err(format!(
                    "partition {partition}'s {what} (offset {}, size {}) is empty or reaches past \
                     the {blocks_end} bytes before the footer",
                    handle.offset, handle.size
                ));
            }
            Ok(())
        };
        iter.seek_to_first();
        while iter.valid() {
            let partition = index.len();
            let key = iter.key();
            if key_order == IndexKeys::Internal && parse_internal_key(key).is_none() {
                return Err(format!(
                    "top-level index key of partition {partition} is not an internal key"
                ));
            }
            if let Some(previous) = index.last_key() {
                if compare(previous, key) != Ordering::Less {
                    return Err(format!(
                        "top-level index key of partition {partition} does not follow the \
                         previous partition's"
                    ));
                }
            }
            let mut decoder = Decoder::new(iter.value());
            let malformed =
                || format!("top-level index entry of partition {partition} is malformed");
            let index_handle = BlockHandle::decode_from(&mut decoder).ok_or_else(malformed)?;
            check("index partition", partition, index_handle)?;
            let count = usize::from(decoder.u8().ok_or_else(malformed)?);
            if count != modules {
                return Err(format!(
                    "partition {partition} lists {count} filter partitions, the properties \
                     {modules} filter modules"
                ));
            }
            for _ in 0..count {
                let handle = BlockHandle::decode_from(&mut decoder).ok_or_else(malformed)?;
                check("filter partition", partition, handle)?;
                index.filter_handles.push(handle);
            }
            if !decoder.is_empty() {
                return Err(format!(
                    "top-level index entry of partition {partition} has trailing bytes"
                ));
            }
            let start = index.keys.len();
            index.keys.extend_from_slice(key);
            index.key_ranges.push(PartitionKey {
                shares_prefix: false,
                prefix: 0,
                start,
                end: index.keys.len(),
            });
            index.index_handles.push(index_handle);
            iter.next();
        }
        if let Some(reason) = iter.error() {
            return Err(format!("top-level index: {reason}"));
        }
        if index.is_empty() {
            return Err("top-level index lists no partitions".to_string());
        }
        let first = key_order.user_key(index.key(0));
        let last_but_one = key_order.user_key(index.key(index.len().saturating_sub(2)));
        let shared_len = first
            .iter()
            .zip(last_but_one)
            .take_while(|(a, b)| a == b)
            .count();
        let shared = first.get(..shared_len).unwrap_or_default().to_vec();
        index.shared_len = shared_len;
        for partition in 0..index.len() {
            let prefix = key_order
                .user_key(index.key(partition))
                .strip_prefix(shared.as_slice())
                .map(user_key_prefix);
            if let (Some(prefix), Some(key)) = (prefix, index.key_ranges.get_mut(partition)) {
                key.shares_prefix = true;
                key.prefix = prefix;
            }
        }
        index.keys.shrink_to_fit();
        index.key_ranges.shrink_to_fit();
        index.index_handles.shrink_to_fit();
        index.filter_handles.shrink_to_fit();
        Ok(index)
    }

    /// Number of partitions.
    pub(crate) fn len(&self) -> usize {
        self.index_handles.len()
    }

    /// True when there are no partitions (never, for a decoded index).
    pub(crate) fn is_empty(&self) -> bool {
        self.index_handles.is_empty()
    }

    /// Filter modules per partition (0 without a filter).
    pub(crate) fn modules(&self) -> usize {
        self.modules
    }

    /// Partition `partition`'s last index key (empty past the end).
    pub(crate) fn key(&self, partition: usize) -> &[u8] {
        self.key_ranges
            .get(partition)
            .and_then(|key| self.keys.get(key.start..key.end))
            .unwrap_or_default()
    }

    fn last_key(&self) -> Option<&[u8]> {
        self.len().checked_sub(1).map(|last| self.key(last))
    }

    /// The first partition whose last key is at or above internal key `target` (in the index's
    /// order: internal-key order, or bytewise on `target`'s user key for a user-key index): the one
    /// whose index partition an unpartitioned index's seek to `target` would land in. `None` when
    /// `target` is above every key of the file.
    pub(crate) fn find(&self, target: &[u8]) -> Option<usize> {
        let keys = &self.keys;
        let compare = self.key_order.comparator();
        let seek_key = self.key_order.seek_key(target);
        let full = |start: usize, end: usize| {
            compare(keys.get(start..end).unwrap_or_default(), seek_key) == Ordering::Less
        };
        let target_user_key = user_key(target);
        let shared = keys.get(..self.shared_len).unwrap_or_default();
        let partition = match target_user_key.strip_prefix(shared) {
            // Keys that share the partition keys' common prefix order by what follows it: most
            // steps of the search are decided by its next 8 bytes, one integer comparison, and
            // only equal ones compare whole internal keys.
            Some(rest) => {
                let target_prefix = user_key_prefix(rest);
                self.key_ranges.partition_point(|key| {
                    if key.shares_prefix && key.prefix != target_prefix {
                        return key.prefix < target_prefix;
                    }
                    full(key.start, key.end)
                })
            }
            None => self
                .key_ranges
                .partition_point(|key| full(key.start, key.end)),
        };
        (partition < self.len()).then_some(partition)
    }

    /// Partition `partition`'s index block.
    pub(crate) fn index_handle(&self, partition: usize) -> Option<BlockHandle> {
        self.index_handles.get(partition).copied()
    }

    /// Partition `partition`'s filter blocks, one per module in probe order.
    pub(crate) fn filter_handles(&self, partition: usize) -> &[BlockHandle] {
        let start = partition.saturating_mul(self.modules);
        self.filter_handles
            .get(start..start.saturating_add(self.modules))
            .unwrap_or_default()
    }

    /// Every index partition's handle, in key order.
    pub(crate) fn all_index_handles(&self) -> &[BlockHandle] {
        &self.index_handles
    }

    /// Every filter partition's handle, partition-major.
    pub(crate) fn all_filter_handles(&self) -> &[BlockHandle] {
        &self.filter_handles
    }

    /// The lowest offset of any partition: where the data blocks end at the latest.
    pub(crate) fn first_block_offset(&self) -> u64 {
        self.index_handles
            .iter()
            .chain(&self.filter_handles)
            .map(|handle| handle.offset)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Bytes this decoded index holds in memory (counted as pinned by the reader that holds it).
    pub(crate) fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.keys.capacity()
            + self.key_ranges.capacity() * std::mem::size_of::<PartitionKey>()
            + (self.index_handles.capacity() + self.filter_handles.capacity())
                * std::mem::size_of::<BlockHandle>()
    }

    /// Re-encodes the top-level index block (restart interval 1): what the fuzz target compares.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut builder = super::block::BlockBuilder::new(1);
        let mut value = Vec::new();
        for partition in 0..self.len() {
            value.clear();
            let index = self.index_handle(partition).unwrap_or_default();
            encode_partition_value(&mut value, index, self.filter_handles(partition));
            builder.add(self.key(partition), &value);
        }
        builder.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{compare_internal_keys, encode_internal_key, ValueKind};
    use crate::table::block::BlockBuilder;

    fn key(user: &str, sequence: u64) -> Vec<u8> {
        encode_internal_key(user.as_bytes(), sequence, ValueKind::Value)
    }

    fn top_level(entries: &[(Vec<u8>, BlockHandle, Vec<BlockHandle>)]) -> Vec<u8> {
        let mut builder = BlockBuilder::new(1);
        for (key, index, filters) in entries {
            let mut value = Vec::new();
            encode_partition_value(&mut value, *index, filters);
            builder.add(key, &value);
        }
        builder.finish()
    }

    fn sample() -> Vec<(Vec<u8>, BlockHandle, Vec<BlockHandle>)> {
        vec![
            (
                key("b", 5),
                BlockHandle::new(1_000, 100),
                vec![BlockHandle::new(10, 20), BlockHandle::new(35, 20)],
            ),
            (
                key("b", 2),
                BlockHandle::new(1_105, 90),
                vec![BlockHandle::new(60, 20), BlockHandle::new(85, 20)],
            ),
            (
                key("f", 9),
                BlockHandle::new(1_200, 80),
                vec![BlockHandle::new(110, 20), BlockHandle::new(135, 20)],
            ),
        ]
    }

    #[test]
    fn decodes_finds_and_re_encodes() {
        let bytes = top_level(&sample());
        let index =
            PartitionIndex::decode(bytes.clone(), 2, 2_000, IndexKeys::Internal).expect("valid");
        assert_eq!(index.len(), 3);
        assert_eq!(index.modules(), 2);
        assert_eq!(index.key(1), key("b", 2).as_slice());
        assert_eq!(index.index_handle(2), Some(BlockHandle::new(1_200, 80)));
        assert_eq!(
            index.filter_handles(1),
            &[BlockHandle::new(60, 20), BlockHandle::new(85, 20)]
        );
        assert_eq!(index.first_block_offset(), 10);
        assert_eq!(index.encode(), bytes);
        // A user key spanning the first boundary: newer versions in partition 0, older in 1.
        assert_eq!(index.find(&key("a", 1)), Some(0));
        assert_eq!(index.find(&key("b", 7)), Some(0));
        assert_eq!(index.find(&key("b", 5)), Some(0));
        assert_eq!(index.find(&key("b", 4)), Some(1));
        assert_eq!(index.find(&key("b", 2)), Some(1));
        assert_eq!(index.find(&key("b", 1)), Some(2));
        assert_eq!(index.find(&key("f", 9)), Some(2));
        assert_eq!(index.find(&key("f", 8)), None);
        assert_eq!(index.find(&key("g", 100)), None);
    }

    proptest::proptest! {
        #[test]
        fn a_smaller_prefix_means_a_smaller_user_key(
            a in proptest::collection::vec(0u8..4, 0..12),
            b in proptest::collection::vec(0u8..4, 0..12),
        ) {
            if user_key_prefix(&a) < user_key_prefix(&b) {
                proptest::prop_assert!(a < b, "{a:?} {b:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn find_agrees_with_a_scan_when_keys_share_a_prefix(
            suffixes in proptest::collection::btree_set(
                proptest::collection::vec(0u8..3, 0..11), 1..40),
            targets in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..11), proptest::bool::ANY, 0u64..4), 1..40),
            with_successor in proptest::bool::ANY,
        ) {
            let entries: Vec<(Vec<u8>, BlockHandle, Vec<BlockHandle>)> = suffixes
                .iter()
                .map(|suffix| {
                    let user = [b"shared/".as_slice(), suffix].concat();
                    let key = encode_internal_key(&user, 5, ValueKind::Value);
                    (key, BlockHandle::new(10, 10), Vec::new())
                })
                .collect();
            let mut entries = entries;
            if with_successor {
                // A last key like the builder's short successor, sharing nothing with the rest.
                let key = encode_internal_key(b"t", 5, ValueKind::Value);
                entries.push((key, BlockHandle::new(10, 10), Vec::new()));
            }
            let index = PartitionIndex::decode(top_level(&entries), 0, 1_000, IndexKeys::Internal).expect("valid");
            for (suffix, shared, sequence) in targets {
                let user = if shared { [b"shared/".as_slice(), &suffix].concat() } else { suffix };
                let target = encode_internal_key(&user, 3 + sequence, ValueKind::Value);
                let scan = (0..index.len())
                    .find(|&p| compare_internal_keys(index.key(p), &target).is_ge());
                proptest::prop_assert_eq!(index.find(&target), scan);
            }
        }
    }

    #[test]
    fn decode_names_what_is_wrong() {
        let mut entries = sample();
        let wrong_modules =
            PartitionIndex::decode(top_level(&entries), 1, 2_000, IndexKeys::Internal);
        assert!(matches!(&wrong_modules, Err(m) if m.contains("lists 2 filter partitions")));
        let past_end = PartitionIndex::decode(top_level(&entries), 2, 1_250, IndexKeys::Internal);
        assert!(matches!(&past_end, Err(m) if m.contains("partition 2's index partition")));
        assert!(
            PartitionIndex::decode(top_level(&[]), 0, 2_000, IndexKeys::Internal)
                .is_err_and(|m| m.contains("no partitions"))
        );
        entries.swap(0, 1);
        assert!(
            PartitionIndex::decode(top_level(&entries), 2, 2_000, IndexKeys::Internal)
                .is_err_and(|m| m.contains("does not follow"))
        );
        entries.swap(0, 1);
        entries[1].2[0].size = 0;
        assert!(
            PartitionIndex::decode(top_level(&entries), 2, 2_000, IndexKeys::Internal)
                .is_err_and(|m| m.contains("partition 1's filter partition"))
        );
        let valid = top_level(&sample());
        for cut in 0..valid.len() {
            assert!(
                PartitionIndex::decode(valid[..cut].to_vec(), 2, 2_000, IndexKeys::Internal)
                    .is_err()
            );
        }
    }
}
