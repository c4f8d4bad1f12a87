//! Sorted key/value blocks with prefix-compressed keys and restart points (the LevelDB block
//! format, `table/block_builder.cc`): the unit a table file is read in, cached in and searched in.
//! Data blocks, index blocks and the properties block all use this layout.
//!
//! # Byte layout
//!
//! ```text
//! block        := entry* restart* num_restarts
//! entry        := shared_key_len:varint32 unshared_key_len:varint32 value_len:varint32
//!                 unshared_key_bytes[unshared_key_len] value_bytes[value_len]
//! restart      := fixed32          offset of a restart entry from the start of the block
//! num_restarts := fixed32          number of restart offsets
//! ```
//!
//! Varints are LEB128 and fixed-width integers little-endian (`coding.rs`).
//!
//! * An entry's key is `previous_key[..shared_key_len] ++ unshared_key_bytes`: consecutive sorted
//!   keys usually share a prefix, which is stored once.
//! * Every `restart_interval`-th entry (the 0th, the R-th, the 2R-th, ...) is a *restart entry*: it
//!   stores its whole key (`shared_key_len = 0`) and its offset is listed in the restart array. A
//!   seek binary-searches the restart entries' keys and then scans at most `R - 1` entries, so R
//!   trades block size (small R = less prefix sharing) against seek cost. Default R = 16.
//! * The *entry region* is the first `len - 4 - 4 * num_restarts` bytes. A block with entries has
//!   `restart[0] = 0`, strictly increasing restart offsets, all inside the entry region and each at
//!   an entry boundary. A block without entries is `num_restarts = 0` alone: the 4 bytes
//!   `00 00 00 00`.
//! * Keys are strictly increasing under the comparator the block is read with (bytewise for index
//!   and properties blocks keyed by user-visible strings, internal-key order (`key.rs`) for data
//!   blocks). The block does not record its comparator; the table file's reader knows it.
//! * A block is smaller than 4 GiB; table builders cut blocks at a few KiB (default 4 KiB).
//!
//! Example, restart interval 2, entries `apple → 1`, `apply → 2`, `banana → 3` (36 bytes):
//!
//! ```text
//! offset  0: 00 05 01 "apple" "1"      restart entry
//! offset  9: 04 01 01 "y" "2"          shares "appl" with "apple"
//! offset 14: 00 06 01 "banana" "3"     restart entry
//! offset 24: 00 00 00 00  0e 00 00 00  restart offsets 0 and 14
//! offset 32: 02 00 00 00               2 restarts
//! ```
//!
//! The block is wrapped by a 5-byte type-and-checksum trailer on disk (`format.rs`); nothing here
//! checks integrity beyond structure. Decoding damaged bytes never panics: [`Block::decode`] checks
//! the restart array, and [`BlockIter`] checks every entry it decodes, stops, and reports the
//! problem through [`BlockIter::error`].

// Reverse iteration (`seek_to_last`, `prev`) and a few accessors are part of the block API but not
// yet used by the engine.
#![allow(dead_code)]

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::format::BlockHandle;
use crate::coding::{get_fixed32, get_varint32, put_fixed32, put_varint32, Decoder};

/// Entries between two restart points when the caller has no reason to choose otherwise
/// (LevelDB's default).
pub(crate) const DEFAULT_RESTART_INTERVAL: usize = 16;

/// Bytes of one restart offset, and of the restart count.
const FIXED32_LEN: usize = 4;

/// Converts an in-block length or offset to the 32 bits the format stores it in.
fn to_u32(value: usize) -> u32 {
    u32::try_from(value)
        .expect("block lengths and offsets stay below 4 GiB: keys are size-checked on write and table builders cut blocks at a few KiB")
}

/// Builds one block from entries added in increasing key order.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    restart_interval: usize,
    /// Encoded entries so far (the entry region).
    buffer: Vec<u8>,
    /// Offsets of the restart entries in `buffer`.
    restarts: Vec<u32>,
    /// Entries added since the last `finish`.
    entries: usize,
    /// Entries added since the last restart entry (restart entry included).
    entries_since_restart: usize,
    /// The key of the last entry added, kept whole to compute the next shared prefix.
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// A builder that writes a restart entry every `restart_interval` entries (0 is treated as 1:
    /// every key stored whole).
    pub(crate) fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            restart_interval: restart_interval.max(1),
            buffer: Vec::new(),
            restarts: Vec::new(),
            entries: 0,
            entries_since_restart: 0,
            last_key: Vec::new(),
        }
    }

    /// Appends an entry. The caller guarantees that `key` sorts strictly after the previous key
    /// under the comparator the block will be read with; the builder cannot check it because it
    /// does not know that comparator.
    ///
    /// # Panics
    /// If the block would reach 4 GiB (keys and values are size-checked long before that).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.entries == 0 || self.entries_since_restart == self.restart_interval {
            self.restarts.push(to_u32(self.buffer.len()));
            self.entries_since_restart = 0;
            0
        } else {
            common_prefix_len(&self.last_key, key)
        };
        let unshared = &key[shared..];
        put_varint32(&mut self.buffer, to_u32(shared));
        put_varint32(&mut self.buffer, to_u32(unshared.len()));
        put_varint32(&mut self.buffer, to_u32(value.len()));
        self.buffer.extend_from_slice(unshared);
        self.buffer.extend_from_slice(value);
        // The next entry starts here and its offset may become a restart offset: it must fit too.
        to_u32(self.buffer.len());

        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.entries += 1;
        self.entries_since_restart += 1;
    }

    /// True if the next entry added will be a restart entry (stores its whole key).
    pub(crate) fn next_is_restart(&self) -> bool {
        self.entries == 0 || self.entries_since_restart == self.restart_interval
    }

    /// The length `finish` would return now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buffer.len() + self.restarts.len() * FIXED32_LEN + FIXED32_LEN
    }

    /// True when no entry was added since the last `finish`.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries added since the last `finish`.
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// The key of the last entry added (empty if none). `finish` clears it, so a table builder
    /// that needs the block's last key for its index entry reads it before finishing.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and returns the block's contents; the builder is then empty and
    /// ready for the next block.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut contents = std::mem::take(&mut self.buffer);
        contents.reserve(self.restarts.len() * FIXED32_LEN + FIXED32_LEN);
        for &offset in &self.restarts {
            put_fixed32(&mut contents, offset);
        }
        put_fixed32(&mut contents, to_u32(self.restarts.len()));
        self.restarts.clear();
        self.entries = 0;
        self.entries_since_restart = 0;
        self.last_key.clear();
        contents
    }
}

/// Builds an index block: keys mapped to data-block handles, coded as [`HandleCoding`] says (a
/// delta-coded entry that is not a restart entry stores only its block's size when the block
/// follows the previous entry's; `format.rs`).
#[derive(Debug)]
pub(crate) struct IndexBlockBuilder {
    block: BlockBuilder,
    coding: HandleCoding,
    /// The last entry's handle (`None` after `finish`).
    previous: Option<BlockHandle>,
    value: Vec<u8>,
}

impl IndexBlockBuilder {
    pub(crate) fn new(restart_interval: usize, coding: HandleCoding) -> Self {
        IndexBlockBuilder {
            block: BlockBuilder::new(restart_interval),
            coding,
            previous: None,
            value: Vec::with_capacity(BlockHandle::MAX_ENCODED_LEN),
        }
    }

    /// Appends an entry; `key` sorts after the previous one in the index's order.
    pub(crate) fn add(&mut self, key: &[u8], handle: BlockHandle) {
        self.value.clear();
        let follows = self.previous.and_then(|p| {
            p.len_with_trailer()
                .and_then(|len| p.offset.checked_add(len))
        }) == Some(handle.offset);
        if self.coding == HandleCoding::Delta && follows && !self.block.next_is_restart() {
            crate::coding::put_varint64(&mut self.value, handle.size);
        } else {
            handle.encode_to(&mut self.value);
        }
        self.block.add(key, &self.value);
        self.previous = Some(handle);
    }

    /// The length `finish` would return now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.block.estimated_size()
    }

    /// True when no entry was added since the last `finish`.
    pub(crate) fn is_empty(&self) -> bool {
        self.block.is_empty()
    }

    /// The block's contents; the builder is then empty.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.previous = None;
        self.block.finish()
    }
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A decoded block whose restart array has been checked. Immutable; shared through the block
/// cache as `Arc<Block>` and read through [`BlockIter`]s.
pub(crate) struct Block {
    contents: Vec<u8>,
    /// Where the restart array starts, which is also the length of the entry region.
    restarts_offset: usize,
    num_restarts: usize,
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block")
            .field("size_bytes", &self.contents.len())
            .field("num_restarts", &self.num_restarts)
            .finish()
    }
}

impl Block {
    /// Takes ownership of a block's contents (without the on-disk trailer) and checks its restart
    /// array: the count fits, the first offset is 0, offsets strictly increase and lie inside the
    /// entry region. Entries themselves are checked as iterators decode them. The error is a
    /// reason for the caller to wrap in `Error::Corruption` with the file and block offset.
    pub(crate) fn decode(contents: Vec<u8>) -> Result<Block, String> {
        let len = contents.len();
        let count_offset = len
            .checked_sub(FIXED32_LEN)
            .ok_or_else(|| format!("block of {len} bytes is too short for its restart count"))?;
        let num_restarts = contents
            .get(count_offset..)
            .and_then(get_fixed32)
            .ok_or_else(|| format!("block of {len} bytes has no restart count"))?
            as usize;
        let max_restarts = count_offset / FIXED32_LEN;
        if num_restarts > max_restarts {
            return Err(format!(
                "block of {len} bytes claims {num_restarts} restart points but at most \
                 {max_restarts} fit"
            ));
        }
        let restarts_offset = count_offset - num_restarts * FIXED32_LEN;
        if num_restarts == 0 && restarts_offset != 0 {
            return Err(format!(
                "block has a {restarts_offset}-byte entry region but no restart points"
            ));
        }
        let restart_array = contents
            .get(restarts_offset..count_offset)
            .unwrap_or_default();
        let mut previous: Option<usize> = None;
        for (index, bytes) in restart_array.chunks_exact(FIXED32_LEN).enumerate() {
            let offset = get_fixed32(bytes).map_or(usize::MAX, |offset| offset as usize);
            match previous {
                None if offset != 0 => {
                    return Err(format!("first restart point is at offset {offset}, not 0"));
                }
                Some(previous) if offset <= previous => {
                    return Err(format!(
                        "restart point {index} at offset {offset} does not follow the previous \
                         one at {previous}"
                    ));
                }
                _ => {}
            }
            if offset >= restarts_offset {
                return Err(format!(
                    "restart point {index} at offset {offset} lies outside the \
                     {restarts_offset}-byte entry region"
                ));
            }
            previous = Some(offset);
        }
        Ok(Block {
            contents,
            restarts_offset,
            num_restarts,
        })
    }

    /// Bytes of the block's contents: what it costs the block cache.
    pub(crate) fn size_bytes(&self) -> usize {
        self.contents.len()
    }

    /// True for a block without entries.
    pub(crate) fn is_empty(&self) -> bool {
        self.num_restarts == 0
    }

    /// Number of restart points (0 for an empty block).
    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// An iterator over this block, not yet positioned.
    pub(crate) fn iter(self: &Arc<Self>, compare: fn(&[u8], &[u8]) -> Ordering) -> BlockIter {
        BlockIter::new(Arc::clone(self), compare)
    }

    /// The entry region: every entry, without the restart array.
    fn entry_region(&self) -> &[u8] {
        self.contents
            .get(..self.restarts_offset)
            .unwrap_or_default()
    }

    /// Offset of restart entry `index`. Callers pass `index < num_restarts`, which `decode` made
    /// readable; any other index answers the end of the entry region, where iteration stops.
    fn restart_point(&self, index: usize) -> usize {
        if index >= self.num_restarts {
            return self.restarts_offset;
        }
        let at = self.restarts_offset + index * FIXED32_LEN;
        self.contents
            .get(at..)
            .and_then(get_fixed32)
            .map_or(self.restarts_offset, |offset| offset as usize)
    }

    /// Decodes the header of the entry at `offset` and checks that it fits in the entry region
    /// and shares no more than `previous_key_len` key bytes.
    fn decode_entry(&self, offset: usize, previous_key_len: usize) -> Result<EntryLayout, String> {
        let region = self.entry_region();
        let truncated = || format!("entry at offset {offset} has a truncated header");
        let mut position = offset;
        let mut next_varint = || -> Result<usize, String> {
            let (value, used) = region
                .get(position..)
                .and_then(get_varint32)
                .ok_or_else(truncated)?;
            position += used;
            Ok(value as usize)
        };
        let shared = next_varint()?;
        let unshared_len = next_varint()?;
        let value_len = next_varint()?;
        if shared > previous_key_len {
            return Err(format!(
                "entry at offset {offset} shares {shared} key bytes but the previous key has only \
                 {previous_key_len}"
            ));
        }
        let key_end = position.checked_add(unshared_len);
        let value_end = key_end.and_then(|key_end| key_end.checked_add(value_len));
        match (key_end, value_end) {
            (Some(key_end), Some(value_end)) if value_end <= region.len() => Ok(EntryLayout {
                shared,
                unshared_key: position..key_end,
                value: key_end..value_end,
            }),
            _ => Err(format!(
                "entry at offset {offset} with a {unshared_len}-byte key suffix and a \
                 {value_len}-byte value overruns the {}-byte entry region",
                region.len()
            )),
        }
    }

    /// The whole key of restart entry `index`, borrowed from the block.
    fn restart_key(&self, index: usize) -> Result<&[u8], String> {
        let layout = self.decode_entry(self.restart_point(index), 0)?;
        Ok(self
            .entry_region()
            .get(layout.unshared_key)
            .unwrap_or_default())
    }
}

/// Where one entry's parts lie in the block, as checked by `Block::decode_entry`.
struct EntryLayout {
    shared: usize,
    unshared_key: Range<usize>,
    value: Range<usize>,
}

impl EntryLayout {
    /// Offset just past the entry.
    fn end(&self) -> usize {
        self.value.end
    }
}

/// A cursor over one block's entries. It owns an `Arc<Block>`, so it can live inside owned
/// table and database iterators and keeps the block alive after the cache evicts it.
///
/// A new iterator is not positioned; call one of the `seek*` methods first. `key` and `value` are
/// meaningful only while `valid()`. Once an entry fails to decode the iterator stays invalid for
/// good and `error()` says why; an iterator that simply ran off either end has no error.
#[derive(Debug)]
pub(crate) struct BlockIter {
    block: Arc<Block>,
    compare: fn(&[u8], &[u8]) -> Ordering,
    /// Offset of the current entry; `block.restarts_offset` when not on an entry.
    current: usize,
    /// Offset just past the current entry: where `next` decodes.
    next_offset: usize,
    /// Index of the last restart point at or before `current`.
    restart_index: usize,
    /// The current key, rebuilt in place from each entry's shared prefix and suffix; the only
    /// buffer the iterator writes to.
    key: Vec<u8>,
    /// The current value's range in the block.
    value: Range<usize>,
    /// For an index block: how its values hold data-block handles, and the current entry's
    /// handle decoded (a delta-encoded value needs the previous entry's).
    handles: Option<HandleCoding>,
    handle: BlockHandle,
    error: Option<String>,
}

/// How an index block's values hold data-block handles (table footer version bit 8,
/// `format.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandleCoding {
    /// Every value is `offset:varint64 size:varint64`.
    Whole,
    /// A restart entry's value is the whole handle; any other entry's is either the whole handle
    /// or `size:varint64` alone, the block starting right after the previous entry's block and
    /// its trailer.
    Delta,
}

impl HandleCoding {
    /// The coding of an index written with delta-encoded handles or without.
    pub(crate) fn of(delta_handles: bool) -> HandleCoding {
        if delta_handles {
            HandleCoding::Delta
        } else {
            HandleCoding::Whole
        }
    }

    /// Decodes the handle in index value `value`; `previous` is the handle of the entry before
    /// (`None` at a restart entry, which must hold a whole handle).
    fn decode(
        self,
        value: &[u8],
        previous: Option<BlockHandle>,
    ) -> Result<BlockHandle, &'static str> {
        let mut decoder = Decoder::new(value);
        let first = decoder.varint64().ok_or("malformed block handle")?;
        if self == HandleCoding::Whole || !decoder.is_empty() {
            let size = decoder.varint64().ok_or("malformed block handle")?;
            if self == HandleCoding::Delta && !decoder.is_empty() {
                return Err("block handle with trailing bytes");
            }
            return Ok(BlockHandle::new(first, size));
        }
        // `size:varint64` alone: the block after the previous one.
        let previous = previous.ok_or("a restart entry holds a delta-encoded block handle")?;
        let offset = previous
            .len_with_trailer()
            .and_then(|len| previous.offset.checked_add(len))
            .ok_or("delta-encoded block handle past the largest offset")?;
        Ok(BlockHandle::new(offset, first))
    }
}

impl BlockIter {
    /// An unpositioned iterator over `block`, ordering keys with `compare`.
    pub(crate) fn new(block: Arc<Block>, compare: fn(&[u8], &[u8]) -> Ordering) -> Self {
        Self::with_key_buffer(block, compare, Vec::new())
    }

    /// Like [`BlockIter::new`], rebuilding keys in `key_buffer` (its contents are discarded): a
    /// point lookup passes the buffer of its previous lookup so that it allocates none.
    pub(crate) fn with_key_buffer(
        block: Arc<Block>,
        compare: fn(&[u8], &[u8]) -> Ordering,
        mut key_buffer: Vec<u8>,
    ) -> Self {
        key_buffer.clear();
        let end = block.restarts_offset;
        let num_restarts = block.num_restarts;
        BlockIter {
            block,
            compare,
            current: end,
            next_offset: end,
            restart_index: num_restarts,
            key: key_buffer,
            value: 0..0,
            handles: None,
            handle: BlockHandle::default(),
            error: None,
        }
    }

    /// The same iterator decoding each entry's value as a data-block handle coded as `coding`
    /// ([`BlockIter::handle`]); a value that does not decode is corruption. For index blocks.
    pub(crate) fn decoding_handles(mut self, coding: HandleCoding) -> Self {
        self.handles = Some(coding);
        self
    }

    /// The current index entry's data-block handle (see [`BlockIter::decoding_handles`];
    /// `(0, 0)` when not valid or not decoding handles).
    pub(crate) fn handle(&self) -> BlockHandle {
        self.handle
    }

    /// The key buffer, for the next [`BlockIter::with_key_buffer`].
    pub(crate) fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    /// True when positioned on an entry.
    pub(crate) fn valid(&self) -> bool {
        self.error.is_none() && self.current < self.block.restarts_offset
    }

    /// The current entry's key (empty when not valid).
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current entry's value (empty when not valid).
    pub(crate) fn value(&self) -> &[u8] {
        self.block
            .contents
            .get(self.value.clone())
            .unwrap_or_default()
    }

    /// Why decoding stopped, if the block turned out to be malformed. The message names the
    /// offset inside the block; the caller adds the file and the block's offset in it.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The block being iterated.
    pub(crate) fn block(&self) -> &Arc<Block> {
        &self.block
    }

    /// Positions at the first entry (invalid if the block is empty).
    pub(crate) fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart_point(0);
        self.parse_next_entry();
    }

    /// Positions at the last entry (invalid if the block is empty).
    pub(crate) fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart_point(self.block.num_restarts - 1);
        while self.parse_next_entry() && self.next_offset < self.block.restarts_offset {}
    }

    /// Positions at the first entry whose key is `>= target`, or invalid if there is none:
    /// binary search over the restart entries' keys for the last one `< target`, then a forward
    /// scan of at most one restart interval.
    pub(crate) fn seek(&mut self, target: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        // Invariant: every restart key before `left` is < target; every one after `right` is
        // >= target. Restart 0 is the starting point even when its key is already >= target.
        let mut left = 0;
        let mut right = self.block.num_restarts - 1;
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            match self.block.restart_key(mid) {
                Ok(key) => {
                    if (self.compare)(key, target) == Ordering::Less {
                        left = mid;
                    } else {
                        right = mid - 1;
                    }
                }
                Err(reason) => {
                    self.corrupt(reason);
                    return;
                }
            }
        }
        self.seek_to_restart_point(left);
        while self.parse_next_entry() {
            if (self.compare)(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    /// Moves to the next entry (invalid past the last one). No effect when not valid.
    pub(crate) fn next(&mut self) {
        if self.valid() {
            self.parse_next_entry();
        }
    }

    /// Moves to the previous entry (invalid before the first one). No effect when not valid.
    /// Costs a scan from the preceding restart point: keys are prefix-compressed forwards only.
    pub(crate) fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                // `original` was the first entry.
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart_point(self.restart_index);
        while self.parse_next_entry() && self.next_offset < original {}
    }

    /// Leaves the iterator unpositioned (without recording an error).
    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.next_offset = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
        self.key.clear();
        self.value = 0..0;
        self.handle = BlockHandle::default();
    }

    /// Records the first corruption found and leaves the iterator invalid for good.
    fn corrupt(&mut self, reason: String) {
        if self.error.is_none() {
            self.error = Some(reason);
        }
        self.invalidate();
    }

    /// Prepares to decode restart entry `index` next; the caller then calls `parse_next_entry`.
    fn seek_to_restart_point(&mut self, index: usize) {
        self.key.clear();
        self.restart_index = index;
        self.next_offset = self.block.restart_point(index);
        self.value = 0..0;
    }

    /// Decodes the entry at `next_offset` into `key` and `value`; false (and invalid) at the end
    /// of the block or on a malformed entry, which is recorded in `error`.
    fn parse_next_entry(&mut self) -> bool {
        if self.error.is_some() {
            return false;
        }
        let offset = self.next_offset;
        if offset >= self.block.restarts_offset {
            self.invalidate();
            return false;
        }
        let layout = match self.block.decode_entry(offset, self.key.len()) {
            Ok(layout) => layout,
            Err(reason) => {
                self.corrupt(reason);
                return false;
            }
        };
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= offset
        {
            self.restart_index += 1;
        }
        // A scan and a seek must see the same keys, so a restart entry reached by scanning must
        // not lean on the previous key, and a restart offset must not point into an entry.
        let restart_offset = self.block.restart_point(self.restart_index);
        if restart_offset == offset && layout.shared != 0 {
            self.corrupt(format!(
                "restart entry at offset {offset} shares {} key bytes instead of 0",
                layout.shared
            ));
            return false;
        }
        let next_restart = self.block.restart_point(self.restart_index + 1);
        if next_restart < layout.end() {
            self.corrupt(format!(
                "restart point at offset {next_restart} falls inside the entry at offset {offset}"
            ));
            return false;
        }
        if let Some(coding) = self.handles {
            // Entries are decoded in order from a restart entry, so `self.handle` is the
            // previous entry's unless this is a restart entry.
            let previous = (restart_offset != offset).then_some(self.handle);
            let value = self
                .block
                .contents
                .get(layout.value.clone())
                .unwrap_or_default();
            match coding.decode(value, previous) {
                Ok(handle) => self.handle = handle,
                Err(reason) => {
                    self.corrupt(format!("index entry at offset {offset}: {reason}"));
                    return false;
                }
            }
        }
        self.key.truncate(layout.shared);
        self.key.extend_from_slice(
            self.block
                .contents
                .get(layout.unshared_key.clone())
                .unwrap_or_default(),
        );
        self.current = offset;
        self.next_offset = layout.end();
        self.value = layout.value;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{compare_internal_keys, encode_internal_key, lookup_key, ValueKind};
    use proptest::prelude::*;

    type Compare = fn(&[u8], &[u8]) -> Ordering;

    fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn build(entries: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Vec<u8> {
        let mut builder = BlockBuilder::new(restart_interval);
        for (key, value) in entries {
            builder.add(key, value);
        }
        builder.finish()
    }

    fn decode(contents: Vec<u8>) -> Arc<Block> {
        Arc::new(Block::decode(contents).expect("a built block decodes"))
    }

    fn collect_forward(iter: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut seen = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            seen.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        seen
    }

    fn collect_backward(iter: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut seen = Vec::new();
        iter.seek_to_last();
        while iter.valid() {
            seen.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.prev();
        }
        seen.reverse();
        seen
    }

    /// The model of `seek`: the first entry whose key is >= target.
    fn expected_seek<'a>(
        entries: &'a [(Vec<u8>, Vec<u8>)],
        target: &[u8],
        compare: Compare,
    ) -> Option<&'a (Vec<u8>, Vec<u8>)> {
        entries
            .iter()
            .find(|(key, _)| compare(key, target) != Ordering::Less)
    }

    fn assert_seek(
        iter: &mut BlockIter,
        entries: &[(Vec<u8>, Vec<u8>)],
        target: &[u8],
        compare: Compare,
    ) {
        iter.seek(target);
        match expected_seek(entries, target, compare) {
            Some((key, value)) => {
                assert!(iter.valid(), "seek({target:?}) should find {key:?}");
                assert_eq!(iter.key(), &key[..], "seek({target:?})");
                assert_eq!(iter.value(), &value[..], "seek({target:?})");
            }
            None => assert!(!iter.valid(), "seek({target:?}) should run off the end"),
        }
        assert_eq!(iter.error(), None);
    }

    /// Builds a block from sorted `entries`, then checks a full scan both ways and seeks to every
    /// key and to every probe against the model.
    fn check_round_trip(
        entries: &[(Vec<u8>, Vec<u8>)],
        probes: &[Vec<u8>],
        restart_interval: usize,
        compare: Compare,
    ) {
        let mut builder = BlockBuilder::new(restart_interval);
        for (key, value) in entries {
            builder.add(key, value);
            assert_eq!(builder.last_key(), &key[..]);
        }
        assert_eq!(builder.entries(), entries.len());
        assert_eq!(builder.is_empty(), entries.is_empty());
        let estimated = builder.estimated_size();
        let contents = builder.finish();
        assert_eq!(contents.len(), estimated);
        assert!(builder.is_empty());
        assert_eq!(builder.last_key(), b"");

        let block = decode(contents);
        assert_eq!(
            block.num_restarts(),
            entries.len().div_ceil(restart_interval)
        );
        let mut iter = block.iter(compare);
        assert!(!iter.valid(), "a new iterator is unpositioned");
        assert_eq!(collect_forward(&mut iter), entries);
        assert_eq!(collect_backward(&mut iter), entries);
        for (key, _) in entries {
            assert_seek(&mut iter, entries, key, compare);
        }
        for probe in probes {
            assert_seek(&mut iter, entries, probe, compare);
        }
        // Seeking then stepping continues from the sought entry.
        if let Some((key, _)) = entries.get(entries.len() / 2) {
            iter.seek(key);
            let position = entries.len() / 2;
            for expected in &entries[position..] {
                assert!(iter.valid());
                assert_eq!(iter.key(), &expected.0[..]);
                iter.next();
            }
            assert!(!iter.valid());
        }
        assert_eq!(iter.error(), None);
    }

    /// Probes for bytewise keys: before the first, just after each key, between keys and after
    /// the last.
    fn bytewise_probes(entries: &[(Vec<u8>, Vec<u8>)], extra: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut probes = vec![Vec::new()];
        for (key, _) in entries {
            let mut after = key.clone();
            after.push(0);
            probes.push(after);
            if let Some((&last, head)) = key.split_last() {
                if last > 0 {
                    let mut before = head.to_vec();
                    before.push(last - 1);
                    before.push(0xff);
                    probes.push(before);
                }
            }
        }
        if let Some((last, _)) = entries.last() {
            let mut past = last.clone();
            past.push(0xff);
            probes.push(past);
        }
        probes.extend_from_slice(extra);
        probes
    }

    const RESTART_INTERVALS: [usize; 3] = [1, 2, DEFAULT_RESTART_INTERVAL];

    #[test]
    fn layout_matches_the_documented_example() {
        let entries = vec![
            (b"apple".to_vec(), b"1".to_vec()),
            (b"apply".to_vec(), b"2".to_vec()),
            (b"banana".to_vec(), b"3".to_vec()),
        ];
        let mut expected = Vec::new();
        expected.extend_from_slice(b"\x00\x05\x01apple1");
        expected.extend_from_slice(b"\x04\x01\x01y2");
        expected.extend_from_slice(b"\x00\x06\x01banana3");
        expected.extend_from_slice(&[0, 0, 0, 0, 14, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(build(&entries, 2), expected);
        assert_eq!(expected.len(), 36);
    }

    #[test]
    fn empty_block_decodes_and_iterates_as_empty() {
        let contents = BlockBuilder::new(DEFAULT_RESTART_INTERVAL).finish();
        assert_eq!(contents, [0, 0, 0, 0]);
        let block = decode(contents);
        assert!(block.is_empty());
        assert_eq!(block.size_bytes(), 4);
        let mut iter = block.iter(bytewise);
        iter.seek_to_first();
        assert!(!iter.valid());
        iter.seek_to_last();
        assert!(!iter.valid());
        iter.seek(b"anything");
        assert!(!iter.valid());
        iter.seek(b"");
        assert!(!iter.valid());
        iter.next();
        iter.prev();
        assert!(!iter.valid());
        assert_eq!(iter.key(), b"");
        assert_eq!(iter.value(), b"");
        assert_eq!(iter.error(), None);
    }

    #[test]
    fn builder_is_reusable_after_finish() {
        let mut builder = BlockBuilder::new(4);
        builder.add(b"zebra", b"first block");
        builder.add(b"zebu", b"first block");
        let first = builder.finish();
        // The second block starts with a restart entry even though "zeal" shares a prefix with
        // the last key of the first block.
        let second_entries = vec![
            (b"zeal".to_vec(), b"a".to_vec()),
            (b"zero".to_vec(), b"b".to_vec()),
        ];
        for (key, value) in &second_entries {
            builder.add(key, value);
        }
        let second = builder.finish();
        assert_eq!(second, build(&second_entries, 4));
        assert_eq!(
            collect_forward(&mut decode(second).iter(bytewise)),
            second_entries
        );
        assert_eq!(collect_forward(&mut decode(first).iter(bytewise)).len(), 2);
    }

    #[test]
    fn restart_interval_zero_stores_every_key_whole() {
        let entries = vec![(b"aa".to_vec(), Vec::new()), (b"ab".to_vec(), Vec::new())];
        let block = decode(build(&entries, 0));
        assert_eq!(block.num_restarts(), 2);
        assert_eq!(collect_forward(&mut block.iter(bytewise)), entries);
    }

    #[test]
    fn empty_keys_and_values_round_trip() {
        let entries = vec![
            (Vec::new(), Vec::new()),
            (b"a".to_vec(), Vec::new()),
            (b"b".to_vec(), vec![0; 300]),
        ];
        for interval in RESTART_INTERVALS {
            check_round_trip(
                &entries,
                &bytewise_probes(&entries, &[]),
                interval,
                bytewise,
            );
        }
    }

    #[test]
    fn large_block_seeks_across_many_restarts() {
        let entries: Vec<_> = (0u32..5_000)
            .map(|i| {
                (
                    format!("key{:08}", i * 3).into_bytes(),
                    i.to_le_bytes().to_vec(),
                )
            })
            .collect();
        let probes: Vec<_> = (0u32..15_001)
            .step_by(7)
            .map(|i| format!("key{i:08}").into_bytes())
            .collect();
        for interval in RESTART_INTERVALS {
            check_round_trip(&entries, &probes, interval, bytewise);
        }
    }

    /// Internal keys with several versions per user key, sorted in internal-key order.
    fn internal_entries(versions: &[(Vec<u8>, Vec<u64>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (user_key, sequences) in versions {
            for (i, &sequence) in sequences.iter().enumerate() {
                let kind = if i % 3 == 2 {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let key = encode_internal_key(user_key, sequence, kind);
                entries.push((key, sequence.to_le_bytes().to_vec()));
            }
        }
        entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        entries
    }

    #[test]
    fn internal_key_lookups_find_the_newest_visible_version() {
        let entries = internal_entries(&[
            (b"a".to_vec(), vec![1, 5, 9]),
            (b"ab".to_vec(), vec![2]),
            (b"b".to_vec(), vec![3, 4, 7, 8, 10]),
        ]);
        let block = decode(build(&entries, 2));
        let mut iter = block.iter(compare_internal_keys);
        // Visible at 8: the version written at 8.
        iter.seek(&lookup_key(b"b", 8));
        assert!(iter.valid());
        assert_eq!(
            iter.key(),
            &encode_internal_key(b"b", 8, ValueKind::Value)[..]
        );
        // Visible at 6: the version written at 4.
        iter.seek(&lookup_key(b"b", 6));
        assert_eq!(iter.value(), &4u64.to_le_bytes()[..]);
        // Nothing of "b" is visible at 2: the seek lands past "b".
        iter.seek(&lookup_key(b"b", 2));
        assert!(!iter.valid());
        // Newest first within a user key.
        iter.seek(&lookup_key(b"a", u64::MAX >> 8));
        assert_eq!(iter.value(), &9u64.to_le_bytes()[..]);
    }

    fn sorted_entries() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        // A small alphabet makes long shared prefixes common.
        prop::collection::btree_map(
            prop::collection::vec(0u8..4, 0..12),
            prop::collection::vec(any::<u8>(), 0..20),
            0..200,
        )
        .prop_map(|map| map.into_iter().collect())
    }

    proptest! {
        #[test]
        fn bytewise_blocks_round_trip(
            entries in sorted_entries(),
            extra_probes in prop::collection::vec(prop::collection::vec(0u8..5, 0..12), 0..20),
        ) {
            let probes = bytewise_probes(&entries, &extra_probes);
            for interval in RESTART_INTERVALS {
                check_round_trip(&entries, &probes, interval, bytewise);
            }
        }

        #[test]
        fn internal_key_blocks_round_trip(
            versions in prop::collection::btree_map(
                prop::collection::vec(0u8..4, 0..8),
                prop::collection::btree_set(0u64..50, 1..5),
                0..60,
            ),
            probes in prop::collection::vec(
                (prop::collection::vec(0u8..4, 0..8), 0u64..60),
                0..30,
            ),
        ) {
            let versions: Vec<(Vec<u8>, Vec<u64>)> = versions
                .into_iter()
                .map(|(key, sequences)| (key, sequences.into_iter().collect()))
                .collect();
            let entries = internal_entries(&versions);
            let mut targets: Vec<Vec<u8>> = probes
                .iter()
                .map(|(user_key, sequence)| lookup_key(user_key, *sequence))
                .collect();
            for (user_key, _) in &versions {
                targets.push(lookup_key(user_key, 0));
                targets.push(lookup_key(user_key, 60));
                let mut after = user_key.clone();
                after.push(0);
                targets.push(lookup_key(&after, 60));
            }
            targets.push(lookup_key(b"", 60));
            targets.push(lookup_key(&[9; 9], 0));
            for interval in RESTART_INTERVALS {
                check_round_trip(&entries, &targets, interval, compare_internal_keys);
            }
        }

        #[test]
        fn garbage_never_panics(
            garbage in prop::collection::vec(any::<u8>(), 0..300),
            targets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..8),
        ) {
            exercise_without_panicking(garbage, &targets);
        }

        #[test]
        fn garbage_entries_behind_a_valid_restart_array_never_panic(
            entry_region in prop::collection::vec(any::<u8>(), 1..200),
            restart_picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
            targets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..8),
        ) {
            // Restart offsets that pass `Block::decode`, so the iterator meets the garbage.
            let mut restarts: Vec<u32> = restart_picks
                .iter()
                .map(|pick| pick.index(entry_region.len()) as u32)
                .chain([0])
                .collect();
            restarts.sort_unstable();
            restarts.dedup();
            exercise_without_panicking(with_restarts(&entry_region, &restarts), &targets);
        }

        #[test]
        fn damaged_blocks_never_panic(
            entries in sorted_entries(),
            interval in prop::sample::select(RESTART_INTERVALS.to_vec()),
            cut in any::<prop::sample::Index>(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
            targets in prop::collection::vec(prop::collection::vec(0u8..4, 0..12), 0..8),
        ) {
            let contents = build(&entries, interval);
            // Truncated at any point.
            let truncated = contents[..cut.index(contents.len())].to_vec();
            exercise_without_panicking(truncated, &targets);
            // Bytes damaged anywhere, restart array and count included.
            let mut flipped = contents;
            for (position, mask) in &flips {
                let at = position.index(flipped.len());
                flipped[at] ^= mask;
            }
            exercise_without_panicking(flipped, &targets);
        }
    }

    /// Decodes arbitrary bytes and drives every iterator operation over them; the only
    /// assertions are the iterator's own invariants, since garbage may well be a valid block.
    fn exercise_without_panicking(contents: Vec<u8>, targets: &[Vec<u8>]) {
        let len = contents.len();
        let Ok(block) = Block::decode(contents) else {
            return;
        };
        let block = Arc::new(block);
        for compare in [bytewise as Compare, compare_internal_keys] {
            let mut iter = block.iter(compare);
            iter.seek_to_first();
            // Each entry takes at least 3 header bytes, so a scan is bounded.
            let mut steps = 0;
            while iter.valid() {
                assert!(iter.error().is_none());
                steps += 1;
                assert!(steps <= len / 3, "scan yielded more entries than fit");
                iter.next();
            }
            check_error_is_sticky(&mut iter);

            let mut iter = block.iter(compare);
            iter.seek_to_last();
            let mut steps = 0;
            while iter.valid() {
                steps += 1;
                assert!(
                    steps <= len / 3,
                    "reverse scan yielded more entries than fit"
                );
                iter.prev();
            }
            check_error_is_sticky(&mut iter);

            let mut iter = block.iter(compare);
            for target in targets {
                iter.seek(target);
                if iter.valid() {
                    let _ = (iter.key(), iter.value());
                    iter.next();
                    iter.prev();
                }
            }
            check_error_is_sticky(&mut iter);
        }
    }

    fn check_error_is_sticky(iter: &mut BlockIter) {
        if let Some(reason) = iter.error().map(str::to_string) {
            assert!(!iter.valid());
            assert_eq!(iter.key(), b"");
            assert_eq!(iter.value(), b"");
            iter.seek_to_first();
            assert!(!iter.valid());
            iter.seek(b"");
            assert!(!iter.valid());
            assert_eq!(iter.error(), Some(reason.as_str()));
        }
    }

    // Each structural check, one damaged block apiece. Blocks are assembled by hand so the
    // damage is exactly the one under test.

    fn with_restarts(entry_region: &[u8], restarts: &[u32]) -> Vec<u8> {
        let mut contents = entry_region.to_vec();
        for &offset in restarts {
            put_fixed32(&mut contents, offset);
        }
        put_fixed32(&mut contents, restarts.len() as u32);
        contents
    }

    fn decode_error(contents: Vec<u8>) -> String {
        Block::decode(contents).expect_err("damaged restart array must be rejected")
    }

    /// Scans the whole block and returns the error the iterator reports.
    fn scan_error(contents: Vec<u8>) -> String {
        let block = decode(contents);
        let mut iter = block.iter(bytewise);
        iter.seek_to_first();
        while iter.valid() {
            iter.next();
        }
        iter.error()
            .expect("the scan must report the damage")
            .to_string()
    }

    #[test]
    fn decode_rejects_a_damaged_restart_array() {
        let entry = b"\x00\x01\x00a";
        assert!(decode_error(vec![]).contains("too short"));
        assert!(decode_error(vec![1, 0, 0]).contains("too short"));
        assert!(decode_error(vec![2, 0, 0, 0]).contains("at most 0 fit"));
        assert!(decode_error(vec![0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).contains("restart points"));
        assert!(decode_error(with_restarts(entry, &[])).contains("no restart points"));
        assert!(decode_error(with_restarts(entry, &[1])).contains("not 0"));
        assert!(decode_error(with_restarts(entry, &[0, 0])).contains("does not follow"));
        assert!(decode_error(with_restarts(entry, &[0, 4])).contains("outside"));
        // A restart array covering the whole block leaves no room for entries.
        assert!(decode_error(with_restarts(b"", &[0])).contains("outside"));
    }

    #[test]
    fn iterator_reports_malformed_entries() {
        // Header cut short: a varint with its continuation bit set and nothing after it.
        let reason = scan_error(with_restarts(b"\x00\x80", &[0]));
        assert!(reason.contains("truncated header"), "{reason}");
        // A value longer than the entry region.
        let reason = scan_error(with_restarts(b"\x00\x01\x09a", &[0]));
        assert!(reason.contains("overruns"), "{reason}");
        // Shares more bytes than the previous key has.
        let reason = scan_error(with_restarts(b"\x00\x01\x00a\x02\x00\x00", &[0]));
        assert!(reason.contains("shares 2 key bytes"), "{reason}");
        // A restart entry that is prefix-compressed against the key before it.
        let reason = scan_error(with_restarts(b"\x00\x01\x00a\x01\x01\x00b", &[0, 4]));
        assert!(reason.contains("restart entry at offset 4"), "{reason}");
        // A restart offset pointing into the middle of an entry.
        let reason = scan_error(with_restarts(b"\x00\x02\x00ab\x00\x01\x00c", &[0, 2]));
        assert!(reason.contains("falls inside"), "{reason}");
    }

    #[test]
    fn seek_reports_a_malformed_restart_entry() {
        // Restart 1 is garbage; binary search decodes it first.
        let contents = with_restarts(b"\x00\x01\x00a\x00\x7f\x00", &[0, 4]);
        let block = decode(contents);
        let mut iter = block.iter(bytewise);
        iter.seek(b"b");
        assert!(!iter.valid());
        assert!(iter
            .error()
            .is_some_and(|reason| reason.contains("offset 4")));
    }

    /// `count` data-block handles laid back to back from offset 0 (sizes vary), with `gaps`
    /// listing the entries whose block does not follow the previous one.
    fn handles(count: usize, gaps: &[usize]) -> Vec<BlockHandle> {
        let mut offset = 0u64;
        (0..count)
            .map(|i| {
                if gaps.contains(&i) {
                    offset += 1_000;
                }
                let handle = BlockHandle::new(offset, 3_000 + (i as u64 * 37) % 2_000);
                offset += handle.size + super::super::format::BLOCK_TRAILER_LEN as u64;
                handle
            })
            .collect()
    }

    fn index_block(
        keys: &[Vec<u8>],
        handles: &[BlockHandle],
        restart_interval: usize,
        coding: HandleCoding,
    ) -> Arc<Block> {
        let mut builder = IndexBlockBuilder::new(restart_interval, coding);
        for (key, &handle) in keys.iter().zip(handles) {
            builder.add(key, handle);
        }
        decode(builder.finish())
    }

    /// Every way of reaching an index entry (scan forward and back, seek to each key and between
    /// keys) decodes its handle, with whole or delta-coded values, whatever the restart interval,
    /// and also where a block does not follow the previous one.
    #[test]
    fn index_blocks_decode_their_handles_however_they_are_reached() {
        let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("k{i:03}").into_bytes()).collect();
        for gaps in [&[][..], &[5, 6, 17]] {
            let handles = handles(keys.len(), gaps);
            for interval in [1, 2, 3, 4, 16] {
                for coding in [HandleCoding::Whole, HandleCoding::Delta] {
                    let block = index_block(&keys, &handles, interval, coding);
                    let mut iter =
                        BlockIter::new(Arc::clone(&block), bytewise).decoding_handles(coding);
                    iter.seek_to_first();
                    for (key, handle) in keys.iter().zip(&handles) {
                        assert!(iter.valid());
                        assert_eq!((iter.key(), iter.handle()), (&key[..], *handle));
                        iter.next();
                    }
                    assert!(!iter.valid() && iter.error().is_none());
                    iter.seek_to_last();
                    for (key, handle) in keys.iter().zip(&handles).rev() {
                        assert_eq!((iter.key(), iter.handle()), (&key[..], *handle));
                        iter.prev();
                    }
                    assert!(!iter.valid() && iter.error().is_none());
                    for (i, (key, handle)) in keys.iter().zip(&handles).enumerate() {
                        iter.seek(key);
                        assert_eq!(iter.handle(), *handle, "seek {i}");
                        // Just above key i - 1: lands on key i.
                        if let Some(previous) = i.checked_sub(1) {
                            let mut between = keys[previous].clone();
                            between.push(0);
                            iter.seek(&between);
                            assert_eq!(iter.handle(), *handle, "seek above {previous}");
                        }
                    }
                    iter.seek(b"z");
                    assert!(!iter.valid());
                    assert_eq!(iter.handle(), BlockHandle::default());
                }
            }
        }
    }

    /// Delta coding stores a non-restart entry's size alone: the block is smaller than with whole
    /// handles, by the offsets it leaves out.
    #[test]
    fn delta_coded_index_blocks_are_smaller() {
        let keys: Vec<Vec<u8>> = (0..64).map(|i| format!("k{i:03}").into_bytes()).collect();
        let handles: Vec<BlockHandle> = handles(keys.len(), &[])
            .into_iter()
            .map(|h| BlockHandle::new(h.offset + (1 << 20), h.size))
            .collect();
        let whole = index_block(&keys, &handles, 4, HandleCoding::Whole);
        let delta = index_block(&keys, &handles, 4, HandleCoding::Delta);
        // 48 of 64 entries drop a 3-byte offset (offsets above 1 MiB take 3 varint bytes).
        assert_eq!(whole.size_bytes() - delta.size_bytes(), 48 * 3);
    }

    #[test]
    fn damaged_index_values_are_corruption_not_panics() {
        let read = |contents: Vec<u8>, coding: HandleCoding| {
            let block = decode(contents);
            let mut iter = block.iter(bytewise).decoding_handles(coding);
            iter.seek_to_first();
            while iter.valid() {
                iter.next();
            }
            iter.error().map(str::to_string)
        };
        // A restart entry holding a size alone.
        let size_only = with_restarts(b"\x00\x01\x01a\x05", &[0]);
        let reason = read(size_only.clone(), HandleCoding::Delta).expect("error");
        assert!(reason.contains("restart entry holds a delta"), "{reason}");
        assert!(read(size_only, HandleCoding::Whole).is_some());
        // An empty value, and a truncated varint.
        for value in [&b""[..], b"\x80"] {
            let mut entry = vec![0, 1, value.len() as u8, b'a'];
            entry.extend_from_slice(value);
            for coding in [HandleCoding::Whole, HandleCoding::Delta] {
                let reason = read(with_restarts(&entry, &[0]), coding).expect("error");
                assert!(reason.contains("malformed block handle"), "{reason}");
            }
        }
        // Three varints where a handle has two.
        let reason = read(
            with_restarts(b"\x00\x01\x03a\x01\x02\x03", &[0]),
            HandleCoding::Delta,
        )
        .expect("error");
        assert!(reason.contains("trailing"), "{reason}");
        // A delta after a handle at the largest offset overflows instead of wrapping.
        let mut entries = vec![0u8, 1, 0, b'a'];
        let mut whole = Vec::new();
        BlockHandle::new(u64::MAX - 3, 1).encode_to(&mut whole);
        entries[2] = whole.len() as u8;
        entries.extend_from_slice(&whole);
        entries.extend_from_slice(&[1, 1, 1, b'b', 7]);
        let reason = read(with_restarts(&entries, &[0]), HandleCoding::Delta).expect("error");
        assert!(reason.contains("past the largest offset"), "{reason}");
    }

    proptest! {
        /// Any keys, contiguous handles and restart interval: a delta-coded index answers every
        /// seek with the handle a whole-coded one gives.
        #[test]
        fn delta_and_whole_index_blocks_agree(
            keys in prop::collection::btree_set(prop::collection::vec(any::<u8>(), 0..12), 1..80),
            interval in 1usize..8,
            probes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..20),
        ) {
            let keys: Vec<Vec<u8>> = keys.into_iter().collect();
            let handles = handles(keys.len(), &[]);
            let whole = index_block(&keys, &handles, interval, HandleCoding::Whole);
            let delta = index_block(&keys, &handles, interval, HandleCoding::Delta);
            let mut a = BlockIter::new(whole, bytewise).decoding_handles(HandleCoding::Whole);
            let mut b = BlockIter::new(delta, bytewise).decoding_handles(HandleCoding::Delta);
            for target in keys.iter().chain(&probes) {
                a.seek(target);
                b.seek(target);
                prop_assert_eq!(a.valid(), b.valid());
                prop_assert_eq!(a.handle(), b.handle());
                prop_assert_eq!(a.key(), b.key());
                if b.valid() {
                    b.prev();
                    a.prev();
                    prop_assert_eq!(a.handle(), b.handle());
                }
            }
            prop_assert!(a.error().is_none() && b.error().is_none());
        }
    }
}
