//! What surrounds the blocks of a table file: block handles, the per-block trailer and the footer.
//!
//! # Block handle
//!
//! Locates a block's contents in the file: `offset` (of the contents' first byte) and `size` (the
//! contents' length, *without* the trailer). Stored two ways:
//!
//! * in index-block values and anywhere else variable-length is fine: `offset:varint64
//!   size:varint64` (2 to 20 bytes);
//! * in the footer, which must have a fixed length: `offset:fixed64 size:fixed64` (16 bytes).
//!
//! # Block trailer
//!
//! Every block is written as
//!
//! ```text
//! contents[size] | block_type:u8 | checksum:fixed32
//! ```
//!
//! * `block_type` says how `contents` are stored (`compression.rs`): 0 = uncompressed, 1 = LZ4,
//!   2 = Zstd, the last two as `uncompressed_len:varint32 | compressed bytes`; any other value is
//!   rejected as corruption.
//! * `checksum` = CRC-32C (Castagnoli) of `contents || block_type`, little-endian, unmasked: of the
//!   bytes as stored, so damage is caught before a decompressor sees them.
//!
//! So the block at handle `(offset, size)` occupies `size + 5` bytes from `offset`, and the next
//! block starts right after it; `size` is the stored (possibly compressed) length.
//!
//! Compressed blocks did not change the format version. The type byte is the block's own format
//! version: builds from before compression already reject every type but 0 with a corruption
//! error naming the file and offset, so no build can misread a compressed block, and a table
//! written without compression is byte for byte what it was. A version bump would only move that
//! refusal from the first compressed block an old build reads to the file's open, at the price of
//! doubling the versions (each filter layout with and without compression) and of making files
//! that hold no compressed block (every file of a database with `CompressionPolicy::none`, the
//! default) unreadable to older builds for nothing. RocksDB made the same choice: a compression
//! type is a block-type byte, not a table format version.
//!
//! # Footer
//!
//! The last [`FOOTER_LEN`] = 60 bytes of every table file:
//!
//! ```text
//! offset  0: index block handle       offset:fixed64 size:fixed64
//! offset 16: filter block handle      offset:fixed64 size:fixed64   (size 0: the table has no filter)
//! offset 32: properties block handle  offset:fixed64 size:fixed64
//! offset 48: format_version:fixed32   layout (1, 2 or 3) | index format flags (bits 8, 9)
//! offset 52: magic:fixed64            TABLE_MAGIC, the bytes "STRATA01"
//! ```
//!
//! The format version's low byte is the file's *layout*; it says what the filter handle names:
//!
//! * **1**: the table's one Bloom filter block (`filter/bloom.rs`), or nothing (size 0);
//! * **2**: a modular filter index block (`filter/modular.rs`, DESIGN.md §1) that locates the two to
//!   six Bloom filter blocks ("modules") of the table's filter.
//! * **3**: a partitioned table (`partition.rs`): the *index* handle names the top-level index,
//!   which locates every index partition and filter partition; the filter handle is unused and
//!   must be `(0, 0)` (how many filter modules each partition has is in the properties block).
//!
//! Bits 8 and 9 say how the index is encoded ([`IndexFormat`]; files written before them have
//! neither and keep reading as they did):
//!
//! * **bit 8, delta-encoded handles** ([`INDEX_DELTA_HANDLES`]): in every index block (the one
//!   index block, or each index partition) a restart entry's value is the data block's handle
//!   `offset:varint64 size:varint64`, and every other entry's value is its `size:varint64` alone:
//!   data blocks are written back to back, so its offset is the previous entry's offset + size +
//!   the 5-byte trailer (RocksDB's `format_version = 4`). Every file this build writes has it.
//! * **bit 9, user-key index** ([`INDEX_USER_KEYS`]): index keys, and a partitioned file's
//!   partition keys in the top-level index, are user keys ordered bytewise, not internal keys
//!   (RocksDB's `format_version = 3`). The writer sets it when no user key continues from one data
//!   block into the next, which is what makes a user key enough to pick the block; otherwise the
//!   file keeps internal keys (the separator then carries the sequence number that splits the
//!   user key's versions between the two blocks).
//!
//! Together they halve an index entry (a shortened user key of a few bytes and a 2-byte size
//! instead of the key, its 8-byte trailer and a 5- to 6-byte handle), so an index block or
//! partition covers about twice the data. A build from before them rejects such files by their
//! version instead of misreading the index.
//!
//! A writer uses the lowest layout that describes the file: tables with zero or one filter module
//! are written as version 1, byte for byte as before modular filters existed, so builds from
//! before them still read those; only tables with a split filter are version 2, which such a
//! build rejects by its version instead of misreading the index as a filter; only tables whose
//! index or filter is large enough to be partitioned are version 3, which older builds likewise
//! reject instead of reading the top-level index as an index. This build reads all three.
//!
//! A reader reads the last 60 bytes, checks the magic (is this a Strata table at all?) and then the
//! version (can this build read it?), and follows the handles. The footer carries no checksum of
//! its own: the magic, the version and the bounds check in [`Footer::check_bounds`] catch damage
//! that would send a reader astray, and every block a handle points to is checksummed. A filter
//! block is never empty, so size 0 is free to mean "no filter".
//!
//! A change to any layout in this file or in `block.rs` bumps the table format version, so that a
//! build meeting a file it cannot read fails loudly instead of misreading it.

use std::cmp::Ordering;

use crate::coding::{put_fixed32, put_fixed64, put_varint64, Decoder};
use crate::key::{compare_internal_keys, user_key};

/// Length of the trailer after every block's contents: type byte and CRC-32C.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

#[cfg(test)]
use super::compression::decompress_block;
pub(crate) use super::compression::BLOCK_TYPE_UNCOMPRESSED;
use super::compression::{BLOCK_TYPE_LZ4, BLOCK_TYPE_ZSTD};

/// The footer's fixed length: three handles of 16 bytes, the version and the magic.
pub(crate) const FOOTER_LEN: usize = 3 * BlockHandle::FIXED_LEN + 4 + 8;

/// The last 8 bytes of every table file: "STRATA01" read as a little-endian u64, so the file ends
/// with that text in a hex dump.
pub(crate) const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"STRATA01");

/// Table format of files whose filter handle names a single Bloom filter block (or no filter).
pub(crate) const TABLE_FORMAT_VERSION: u32 = 1;

/// Table format of files whose filter handle names a modular filter index (DESIGN.md §1).
pub(crate) const TABLE_FORMAT_VERSION_MODULAR_FILTER: u32 = 2;

/// Table format of partitioned files: the index handle names a top-level partition index.
pub(crate) const TABLE_FORMAT_VERSION_PARTITIONED: u32 = 3;

/// Footer version bit: index blocks store delta-encoded block handles (see the module docs).
pub(crate) const INDEX_DELTA_HANDLES: u32 = 1 << 8;

/// Footer version bit: index keys are user keys (see the module docs).
pub(crate) const INDEX_USER_KEYS: u32 = 1 << 9;

/// The footer version's low byte: the file's layout.
const LAYOUT_MASK: u32 = 0xff;

/// How index keys are stored and ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexKeys {
    /// Internal keys (user key and trailer), ordered by `compare_internal_keys`.
    Internal,
    /// User keys, ordered bytewise (no user key spans two data blocks of the file).
    User,
}

impl IndexKeys {
    /// The order of the index's keys.
    pub(crate) fn comparator(self) -> fn(&[u8], &[u8]) -> Ordering {
        match self {
            IndexKeys::Internal => compare_internal_keys,
            IndexKeys::User => bytewise,
        }
    }

    /// What to seek the index for to find the block that may hold internal key `target`.
    pub(crate) fn seek_key(self, target: &[u8]) -> &[u8] {
        match self {
            IndexKeys::Internal => target,
            IndexKeys::User => user_key(target),
        }
    }

    /// The user key of an index key.
    pub(crate) fn user_key(self, index_key: &[u8]) -> &[u8] {
        match self {
            IndexKeys::Internal => user_key(index_key),
            IndexKeys::User => index_key,
        }
    }

    /// The index key stored for internal-key separator `separator`.
    pub(crate) fn stored(self, separator: &[u8]) -> &[u8] {
        self.seek_key(separator)
    }
}

fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// How a table's index is encoded: its keys and its block handles (footer version bits 8-9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexFormat {
    pub(crate) keys: IndexKeys,
    /// Non-restart index entries store only the block's size (see the module docs).
    pub(crate) delta_handles: bool,
}

impl IndexFormat {
    /// The index of files written before bits 8-9: internal keys, whole handles.
    #[cfg(test)]
    pub(crate) const LEGACY: IndexFormat = IndexFormat {
        keys: IndexKeys::Internal,
        delta_handles: false,
    };

    /// The footer version bits of this format.
    fn flags(self) -> u32 {
        let keys = match self.keys {
            IndexKeys::Internal => 0,
            IndexKeys::User => INDEX_USER_KEYS,
        };
        keys | if self.delta_handles {
            INDEX_DELTA_HANDLES
        } else {
            0
        }
    }
}

/// Where a block's contents lie in a table file; `size` excludes the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct BlockHandle {
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl BlockHandle {
    /// Longest varint encoding: two 10-byte varints.
    pub(crate) const MAX_ENCODED_LEN: usize = 20;

    /// Length of the fixed-width encoding used in the footer.
    const FIXED_LEN: usize = 16;

    pub(crate) fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Appends `offset` and `size` as varints (index-block values).
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a varint-encoded handle; `None` if the input is truncated or malformed.
    pub(crate) fn decode_from(decoder: &mut Decoder<'_>) -> Option<BlockHandle> {
        let offset = decoder.varint64()?;
        let size = decoder.varint64()?;
        Some(BlockHandle { offset, size })
    }

    /// Bytes the block occupies in the file, trailer included; `None` on overflow (a corrupt
    /// handle).
    pub(crate) fn len_with_trailer(&self) -> Option<u64> {
        self.size.checked_add(BLOCK_TRAILER_LEN as u64)
    }

    fn encode_fixed_to(&self, dst: &mut Vec<u8>) {
        put_fixed64(dst, self.offset);
        put_fixed64(dst, self.size);
    }

    fn decode_fixed_from(decoder: &mut Decoder<'_>) -> Option<BlockHandle> {
        let offset = decoder.fixed64()?;
        let size = decoder.fixed64()?;
        Some(BlockHandle { offset, size })
    }
}

/// The trailer to write after stored contents of `block_type`: the type and the CRC-32C of the
/// contents and type. For writers that append contents and trailer separately, without copying.
pub(crate) fn block_trailer(contents: &[u8], block_type: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let checksum = crc32c::crc32c_append(crc32c::crc32c(contents), &[block_type]);
    let [c0, c1, c2, c3] = checksum.to_le_bytes();
    [block_type, c0, c1, c2, c3]
}

/// Appends uncompressed `contents` followed by its trailer to `dst`.
pub(crate) fn append_block(dst: &mut Vec<u8>, contents: &[u8]) {
    append_stored_block(dst, contents, BLOCK_TYPE_UNCOMPRESSED);
}

/// Appends stored contents of `block_type` (compressed or not) followed by their trailer.
pub(crate) fn append_stored_block(dst: &mut Vec<u8>, stored: &[u8], block_type: u8) {
    dst.reserve(stored.len() + BLOCK_TRAILER_LEN);
    dst.extend_from_slice(stored);
    dst.extend_from_slice(&block_trailer(stored, block_type));
}

/// Checks a block as read from disk (`handle.size + BLOCK_TRAILER_LEN` bytes from
/// `handle.offset`): the checksum, then that the type is one this build reads. Returns the stored
/// contents (still compressed, reusing the buffer) and the type, for [`decompress_block`]. The
/// error is a reason for the caller to wrap in `Error::Corruption` with the file and offset.
pub(crate) fn verify_stored_block(mut raw: Vec<u8>) -> Result<(Vec<u8>, u8), String> {
    let contents_len = raw.len().checked_sub(BLOCK_TRAILER_LEN).ok_or_else(|| {
        format!(
            "block of {} bytes is shorter than its {BLOCK_TRAILER_LEN}-byte trailer",
            raw.len()
        )
    })?;
    let (covered, checksum_bytes) = raw.split_at(contents_len + 1);
    let stored = crate::coding::get_fixed32(checksum_bytes)
        .ok_or_else(|| "block trailer has no checksum".to_string())?;
    let computed = crc32c::crc32c(covered);
    if stored != computed {
        return Err(format!(
            "block checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
        ));
    }
    let block_type = covered.last().copied().unwrap_or(BLOCK_TYPE_UNCOMPRESSED);
    if ![BLOCK_TYPE_UNCOMPRESSED, BLOCK_TYPE_LZ4, BLOCK_TYPE_ZSTD].contains(&block_type) {
        return Err(format!(
            "unknown block type {block_type} (this build reads 0 = uncompressed, 1 = LZ4, \
             2 = Zstd)"
        ));
    }
    raw.truncate(contents_len);
    Ok((raw, block_type))
}

/// Checks a block as read from disk and returns its uncompressed contents: [`verify_stored_block`]
/// then [`decompress_block`].
#[cfg(test)]
pub(crate) fn verify_block(raw: Vec<u8>) -> Result<Vec<u8>, String> {
    let (stored, block_type) = verify_stored_block(raw)?;
    decompress_block(block_type, stored)
}

/// The fixed-length record at the end of a table file that locates its index, filter and
/// properties blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) index: BlockHandle,
    /// Size 0 when the table has no filter; see [`Footer::filter_handle`].
    pub(crate) filter: BlockHandle,
    pub(crate) properties: BlockHandle,
    pub(crate) format_version: u32,
}

impl Footer {
    /// A footer of the current format version.
    pub(crate) fn new(index: BlockHandle, filter: BlockHandle, properties: BlockHandle) -> Self {
        Footer {
            index,
            filter,
            properties,
            format_version: TABLE_FORMAT_VERSION,
        }
    }

    /// A version-2 footer, whose `filter_index` handle names a modular filter index block.
    pub(crate) fn with_modular_filter(
        index: BlockHandle,
        filter_index: BlockHandle,
        properties: BlockHandle,
    ) -> Self {
        Footer {
            index,
            filter: filter_index,
            properties,
            format_version: TABLE_FORMAT_VERSION_MODULAR_FILTER,
        }
    }

    /// A version-3 footer: `top_level` names the partitioned table's top-level index
    /// (`partition.rs`); the filter handle is `(0, 0)`.
    pub(crate) fn partitioned(top_level: BlockHandle, properties: BlockHandle) -> Self {
        Footer {
            index: top_level,
            filter: BlockHandle::new(0, 0),
            properties,
            format_version: TABLE_FORMAT_VERSION_PARTITIONED,
        }
    }

    /// The same footer with its index encoded as `format` says (version bits 8-9).
    pub(crate) fn with_index_format(mut self, format: IndexFormat) -> Self {
        self.format_version = (self.format_version & LAYOUT_MASK) | format.flags();
        self
    }

    /// The file's layout: 1, 2 or 3 (the version's low byte).
    pub(crate) fn layout(&self) -> u32 {
        self.format_version & LAYOUT_MASK
    }

    /// How the file's index is encoded.
    pub(crate) fn index_format(&self) -> IndexFormat {
        IndexFormat {
            keys: if self.format_version & INDEX_USER_KEYS != 0 {
                IndexKeys::User
            } else {
                IndexKeys::Internal
            },
            delta_handles: self.format_version & INDEX_DELTA_HANDLES != 0,
        }
    }

    /// True when the index handle names a top-level partition index (layout 3).
    pub(crate) fn is_partitioned(&self) -> bool {
        self.layout() == TABLE_FORMAT_VERSION_PARTITIONED
    }

    /// The filter block's handle (version 1) or the modular filter index's (version 2), or `None`
    /// if the table was written without a filter.
    pub(crate) fn filter_handle(&self) -> Option<BlockHandle> {
        (self.filter.size != 0).then_some(self.filter)
    }

    /// True when the filter handle names a modular filter index rather than a Bloom filter.
    pub(crate) fn has_modular_filter(&self) -> bool {
        self.layout() == TABLE_FORMAT_VERSION_MODULAR_FILTER
    }

    /// The footer's [`FOOTER_LEN`] bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::with_capacity(FOOTER_LEN);
        self.index.encode_fixed_to(&mut dst);
        self.filter.encode_fixed_to(&mut dst);
        self.properties.encode_fixed_to(&mut dst);
        put_fixed32(&mut dst, self.format_version);
        put_fixed64(&mut dst, TABLE_MAGIC);
        dst
    }

    /// Decodes the last [`FOOTER_LEN`] bytes of a table file, checking the length, the magic
    /// number and that the format version is one this build reads.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer, String> {
        if bytes.len() != FOOTER_LEN {
            return Err(format!(
                "table footer is {} bytes, expected {FOOTER_LEN} (file too short?)",
                bytes.len()
            ));
        }
        let malformed = || "malformed table footer".to_string();
        let magic = bytes
            .get(FOOTER_LEN - 8..)
            .and_then(crate::coding::get_fixed64)
            .ok_or_else(malformed)?;
        if magic != TABLE_MAGIC {
            return Err(format!(
                "not a Strata table file (bad magic {magic:#018x}, expected {TABLE_MAGIC:#018x})"
            ));
        }
        let mut decoder = Decoder::new(bytes);
        let index = BlockHandle::decode_fixed_from(&mut decoder).ok_or_else(malformed)?;
        let filter = BlockHandle::decode_fixed_from(&mut decoder).ok_or_else(malformed)?;
        let properties = BlockHandle::decode_fixed_from(&mut decoder).ok_or_else(malformed)?;
        let format_version = decoder.fixed32().ok_or_else(malformed)?;
        let layout = format_version & LAYOUT_MASK;
        let flags = format_version & !LAYOUT_MASK;
        if !(TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION_PARTITIONED).contains(&layout)
            || flags & !(INDEX_DELTA_HANDLES | INDEX_USER_KEYS) != 0
        {
            return Err(format!(
                "unsupported table format version {format_version:#x} (this build reads layouts \
                 {TABLE_FORMAT_VERSION}..={TABLE_FORMAT_VERSION_PARTITIONED} with index flags \
                 {INDEX_DELTA_HANDLES:#x} and {INDEX_USER_KEYS:#x})"
            ));
        }
        if layout == TABLE_FORMAT_VERSION_PARTITIONED && filter != BlockHandle::default() {
            return Err(format!(
                "partitioned table footer has a filter handle ({}, {}), expected (0, 0)",
                filter.offset, filter.size
            ));
        }
        Ok(Footer {
            index,
            filter,
            properties,
            format_version,
        })
    }

    /// Checks that every block the footer points to (trailer included) lies before the footer in
    /// a file of `file_len` bytes, so a damaged handle is reported as corruption instead of
    /// becoming a huge or out-of-range read.
    pub(crate) fn check_bounds(&self, file_len: u64) -> Result<(), String> {
        let blocks_end = file_len
            .checked_sub(FOOTER_LEN as u64)
            .ok_or_else(|| format!("file of {file_len} bytes is shorter than a table footer"))?;
        let handles = [
            ("index", Some(self.index)),
            ("filter", self.filter_handle()),
            ("properties", Some(self.properties)),
        ];
        for (name, handle) in handles {
            let Some(handle) = handle else { continue };
            let end = handle
                .len_with_trailer()
                .and_then(|len| handle.offset.checked_add(len));
            if !matches!(end, Some(end) if end <= blocks_end) {
                return Err(format!(
                    "{name} block handle (offset {}, size {}) reaches past the {blocks_end} bytes \
                     before the footer",
                    handle.offset, handle.size
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn block_handles_round_trip_as_varints() {
        let handles = [
            BlockHandle::new(0, 0),
            BlockHandle::new(1, 127),
            BlockHandle::new(128, 4096),
            BlockHandle::new(u64::MAX, u64::MAX),
        ];
        let mut encoded = Vec::new();
        for handle in &handles {
            let before = encoded.len();
            handle.encode_to(&mut encoded);
            assert!(encoded.len() - before <= BlockHandle::MAX_ENCODED_LEN);
        }
        let mut decoder = Decoder::new(&encoded);
        for handle in &handles {
            assert_eq!(BlockHandle::decode_from(&mut decoder), Some(*handle));
        }
        assert!(decoder.is_empty());
        assert_eq!(BlockHandle::decode_from(&mut decoder), None);

        // Every strict prefix of an encoding is truncated.
        let mut one = Vec::new();
        BlockHandle::new(300, 70_000).encode_to(&mut one);
        for cut in 0..one.len() {
            assert_eq!(
                BlockHandle::decode_from(&mut Decoder::new(&one[..cut])),
                None
            );
        }
    }

    #[test]
    fn block_trailer_layout() {
        let mut written = Vec::new();
        append_block(&mut written, b"hello");
        assert_eq!(written.len(), 5 + BLOCK_TRAILER_LEN);
        assert_eq!(&written[..5], b"hello");
        assert_eq!(written[5], BLOCK_TYPE_UNCOMPRESSED);
        let checksum = crc32c::crc32c(b"hello\x00");
        assert_eq!(&written[6..], &checksum.to_le_bytes());
        assert_eq!(
            &written[5..],
            &block_trailer(b"hello", BLOCK_TYPE_UNCOMPRESSED)
        );
        assert_eq!(verify_block(written), Ok(b"hello".to_vec()));
    }

    #[test]
    fn verify_block_catches_every_damaged_byte() {
        for contents in [&b""[..], b"x", b"a block of moderate length \x00\xff"] {
            let mut written = Vec::new();
            append_block(&mut written, contents);
            assert_eq!(verify_block(written.clone()).as_deref(), Ok(contents));
            for position in 0..written.len() {
                for mask in [0x01, 0x80, 0xff] {
                    let mut damaged = written.clone();
                    damaged[position] ^= mask;
                    let reason =
                        verify_block(damaged).expect_err("a flipped byte must fail verification");
                    assert!(reason.contains("checksum mismatch"), "{reason}");
                }
            }
        }
    }

    #[test]
    fn verify_block_rejects_short_input_and_unknown_types() {
        for len in 0..BLOCK_TRAILER_LEN {
            let reason = verify_block(vec![0; len]).expect_err("shorter than a trailer");
            assert!(reason.contains("shorter than"), "{reason}");
        }
        // A correctly checksummed block of a type this build does not know.
        let mut raw = b"data\x07".to_vec();
        raw.extend_from_slice(&crc32c::crc32c(&raw).to_le_bytes());
        let reason = verify_block(raw).expect_err("unknown type");
        assert!(reason.contains("unknown block type 7"), "{reason}");
        // All-zero bytes (a hole in a sparse file) do not pass.
        assert!(verify_block(vec![0; 64]).is_err());
    }

    fn sample_footer() -> Footer {
        Footer::new(
            BlockHandle::new(9_000, 300),
            BlockHandle::new(8_000, 995),
            BlockHandle::new(9_305, 120),
        )
    }

    #[test]
    fn footer_layout_is_pinned() {
        let encoded = sample_footer().encode();
        assert_eq!(encoded.len(), FOOTER_LEN);
        assert_eq!(FOOTER_LEN, 60);
        assert_eq!(&encoded[..8], &9_000u64.to_le_bytes());
        assert_eq!(&encoded[8..16], &300u64.to_le_bytes());
        assert_eq!(&encoded[16..24], &8_000u64.to_le_bytes());
        assert_eq!(&encoded[24..32], &995u64.to_le_bytes());
        assert_eq!(&encoded[32..40], &9_305u64.to_le_bytes());
        assert_eq!(&encoded[40..48], &120u64.to_le_bytes());
        assert_eq!(&encoded[48..52], &[1, 0, 0, 0]);
        assert_eq!(&encoded[52..], b"STRATA01");
    }

    #[test]
    fn footer_round_trips() {
        let footer = sample_footer();
        assert_eq!(Footer::decode(&footer.encode()), Ok(footer));
        assert_eq!(footer.filter_handle(), Some(footer.filter));

        let no_filter = Footer::new(
            BlockHandle::new(0, 10),
            BlockHandle::default(),
            BlockHandle::new(15, 4),
        );
        let decoded = Footer::decode(&no_filter.encode()).expect("valid footer");
        assert_eq!(decoded, no_filter);
        assert_eq!(decoded.filter_handle(), None);
        assert!(!decoded.has_modular_filter());

        let modular = Footer::with_modular_filter(
            BlockHandle::new(9_000, 300),
            BlockHandle::new(8_900, 52),
            BlockHandle::new(9_305, 120),
        );
        let encoded = modular.encode();
        assert_eq!(&encoded[48..52], &[2, 0, 0, 0]);
        let decoded = Footer::decode(&encoded).expect("valid version-2 footer");
        assert_eq!(decoded, modular);
        assert!(decoded.has_modular_filter());
        assert_eq!(decoded.filter_handle(), Some(BlockHandle::new(8_900, 52)));
    }

    #[test]
    fn footer_rejects_bad_length_magic_and_version() {
        let encoded = sample_footer().encode();
        for len in [0, FOOTER_LEN - 1, FOOTER_LEN + 1] {
            let mut bytes = encoded.clone();
            bytes.resize(len, 0);
            let reason = Footer::decode(&bytes).expect_err("wrong length");
            assert!(reason.contains("expected 60"), "{reason}");
        }

        for position in FOOTER_LEN - 8..FOOTER_LEN {
            let mut bytes = encoded.clone();
            bytes[position] ^= 0x20;
            let reason = Footer::decode(&bytes).expect_err("bad magic");
            assert!(
                reason.starts_with("not a Strata table file (bad magic"),
                "{reason}"
            );
        }
        let reason = Footer::decode(&[0; FOOTER_LEN]).expect_err("zeros");
        assert!(reason.contains("bad magic"), "{reason}");

        // Unknown layouts, and unknown flag bits beside a known layout.
        for version in [0u32, 4, u32::MAX, 1 << 10 | 1, 0x301 | 1 << 16, 0x104] {
            let mut bytes = encoded.clone();
            bytes[48..52].copy_from_slice(&version.to_le_bytes());
            let reason = Footer::decode(&bytes).expect_err("unknown version");
            assert!(
                reason.contains(&format!("unsupported table format version {version:#x}")),
                "{reason}"
            );
        }
    }

    /// The index format rides in bits 8-9 of the version beside every layout, and a footer
    /// without them (every file written before them) reads as the legacy index.
    #[test]
    fn index_format_flags_round_trip_beside_every_layout() {
        let handles = (BlockHandle::new(9_000, 300), BlockHandle::new(8_900, 52));
        let properties = BlockHandle::new(9_305, 120);
        let layouts = [
            Footer::new(handles.0, handles.1, properties),
            Footer::with_modular_filter(handles.0, handles.1, properties),
            Footer::partitioned(handles.0, properties),
        ];
        for footer in layouts {
            assert_eq!(footer.index_format(), IndexFormat::LEGACY);
            let layout = footer.layout();
            for (keys, delta_handles) in [
                (IndexKeys::Internal, false),
                (IndexKeys::Internal, true),
                (IndexKeys::User, false),
                (IndexKeys::User, true),
            ] {
                let format = IndexFormat {
                    keys,
                    delta_handles,
                };
                let flagged = footer.with_index_format(format);
                let encoded = flagged.encode();
                let version = u32::from_le_bytes(encoded[48..52].try_into().expect("4 bytes"));
                assert_eq!(version & 0xff, layout);
                assert_eq!(version & INDEX_DELTA_HANDLES != 0, delta_handles);
                assert_eq!(version & INDEX_USER_KEYS != 0, keys == IndexKeys::User);
                let decoded = Footer::decode(&encoded).expect("valid");
                assert_eq!(decoded, flagged);
                assert_eq!(decoded.layout(), layout);
                assert_eq!(decoded.index_format(), format);
                assert_eq!(decoded.is_partitioned(), footer.is_partitioned());
                assert_eq!(decoded.has_modular_filter(), footer.has_modular_filter());
            }
        }
        // The key order and seek key of each form.
        let internal = crate::key::encode_internal_key(b"apple", 7, crate::key::ValueKind::Value);
        assert_eq!(IndexKeys::User.seek_key(&internal), b"apple");
        assert_eq!(IndexKeys::Internal.seek_key(&internal), internal.as_slice());
        assert_eq!(IndexKeys::User.user_key(b"apple"), b"apple");
        assert_eq!(IndexKeys::Internal.user_key(&internal), b"apple");
        assert_eq!((IndexKeys::User.comparator())(b"ab", b"b"), Ordering::Less);
    }

    #[test]
    fn partitioned_footer_round_trips_and_rejects_a_filter_handle() {
        let footer = Footer::partitioned(BlockHandle::new(9_000, 300), BlockHandle::new(8_000, 90));
        let encoded = footer.encode();
        assert_eq!(&encoded[48..52], &3u32.to_le_bytes());
        let decoded = Footer::decode(&encoded).expect("valid");
        assert!(decoded.is_partitioned() && !decoded.has_modular_filter());
        assert_eq!(decoded.filter_handle(), None);
        let mut with_filter = encoded.clone();
        with_filter[16] = 1;
        let reason = Footer::decode(&with_filter).expect_err("filter handle in version 3");
        assert!(reason.contains("expected (0, 0)"), "{reason}");
    }

    #[test]
    fn footer_bounds_check() {
        let footer = sample_footer();
        // The properties block ends at 9_305 + 120 + 5 = 9_430, the last block byte.
        let file_len = 9_430 + FOOTER_LEN as u64;
        assert_eq!(footer.check_bounds(file_len), Ok(()));
        let reason = footer
            .check_bounds(file_len - 1)
            .expect_err("one byte short");
        assert!(reason.starts_with("properties block handle"), "{reason}");
        assert!(footer.check_bounds(FOOTER_LEN as u64 - 1).is_err());

        let mut huge = footer;
        huge.index = BlockHandle::new(u64::MAX - 2, 10);
        let reason = huge.check_bounds(file_len).expect_err("overflowing handle");
        assert!(reason.starts_with("index block handle"), "{reason}");

        // An absent filter is not checked, whatever its offset.
        let mut no_filter = footer;
        no_filter.filter = BlockHandle::new(u64::MAX, 0);
        assert_eq!(no_filter.check_bounds(file_len), Ok(()));
    }

    proptest! {
        #[test]
        fn verify_block_round_trips_and_catches_damage(
            contents in prop::collection::vec(any::<u8>(), 0..2_000),
            position in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let mut written = Vec::new();
            append_block(&mut written, &contents);
            prop_assert_eq!(verify_block(written.clone()), Ok(contents));
            let at = position.index(written.len());
            written[at] ^= mask;
            prop_assert!(verify_block(written).is_err());
        }

        #[test]
        fn footers_round_trip(
            handles in prop::array::uniform6(any::<u64>()),
        ) {
            let [a, b, c, d, e, f] = handles;
            let footer = Footer::new(
                BlockHandle::new(a, b),
                BlockHandle::new(c, d),
                BlockHandle::new(e, f),
            );
            prop_assert_eq!(Footer::decode(&footer.encode()), Ok(footer));
        }

        #[test]
        fn footer_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = Footer::decode(&bytes);
        }
    }
}
