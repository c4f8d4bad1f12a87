//! The memtable's skiplist: nodes laid out in an arena of 64-bit atomic words, one writer at a
//! time, readers without locks. RocksDB's `InlineSkipList` over its `Arena` is the model; this
//! one is written in safe Rust.
//!
//! Every byte the skiplist shares between threads lives in an `AtomicU64`. A writer fills a new
//! node with relaxed stores while no reader can reach it, then links it into each level with a
//! release store; a reader follows links with acquire loads, so it sees every word of any node it
//! reaches. There is no unsafe code and no data race by construction: a stale read can only be
//! an older link, which a skiplist tolerates (the reader misses a node inserted after it passed).
//! Nodes are never removed; the arena is freed with the memtable.
//!
//! A node, in words around its address `a` (the tower below it, as in RocksDB):
//!
//! ```text
//! a - 1 - l    link of level l (address of the next node on that level, 0 = none)
//! a            meta: user-key length (low 32 bits) | value length (high 32 bits)
//! a + 1        trailer: (sequence << 8) | kind, as in the internal key
//! a + 2 ..     user key, 8 bytes a word, big-endian, the last word zero-padded
//! ..           value, packed the same way
//! ```
//!
//! Big-endian words make a word comparison a bytewise comparison: two user keys compare as
//! their words do (the zero padding sorts a key before every longer key it prefixes), then by
//! length. A search packs its key into words once and then compares words. Only the writer
//! needs a node's height; a reader follows level `l` only of nodes it reached through a level-`l`
//! link, which are that tall.
//!
//! Allocation in the arena is a bump of an offset; chunks grow from 4 KiB to 1 MiB, so small
//! memtables stay small and large ones make one allocation per megabyte, not one per entry. An
//! insert therefore makes no heap allocation of its own except when a chunk fills. The list's
//! size for the write-buffer limit is the bytes handed out ([`SkipList::used_bytes`]), so that an
//! empty memtable is not full because its first chunk is allocated.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use zerocopy::FromZeros;

use crate::key::{SequenceNumber, ValueKind, TRAILER_LEN};

/// Tallest tower. With a branching factor of 4 this indexes 4^12 (16 million) entries at full
/// speed and stays correct (only slower) beyond.
const MAX_HEIGHT: usize = 12;

/// Each level holds about one in `BRANCHING` of the nodes of the level below (LevelDB's and
/// RocksDB's choice: 1.33 links a node on average, against 2 for a branching factor of 2).
const BRANCHING: u64 = 4;

/// Words of a node before its user key.
const HEADER_WORDS: usize = 2;

/// First chunk: 512 words (4 KiB); each next chunk doubles, up to `MAX_CHUNK_WORDS`.
const FIRST_CHUNK_WORDS: usize = 512;
/// 1 MiB chunks once the memtable is past 2 MiB.
const MAX_CHUNK_WORDS: usize = 1 << 17;

/// The directory of chunks: segment `s` holds `FIRST_SEGMENT_SLOTS << s` chunk slots, so the
/// directory starts at a few hundred bytes and never runs out (2^32 chunks).
const FIRST_SEGMENT_SLOTS: usize = 64;
const SEGMENTS: usize = 26;

/// Address of a node: chunk number in the high 32 bits, word offset in the chunk in the low 32.
/// 0 is "no node": word 0 of chunk 0 is never handed out.
type NodeAddress = u64;
const NONE: NodeAddress = 0;

#[inline]
fn words_for(bytes: usize) -> usize {
    bytes / 8 + usize::from(!bytes.is_multiple_of(8))
}

/// The `index`-th big-endian word of `bytes`, zero-padded past its end.
#[inline]
fn word_of(bytes: &[u8], index: usize) -> u64 {
    let start = index * 8;
    match bytes.get(start..start + 8) {
        Some(word) => {
            let mut array = [0u8; 8];
            array.copy_from_slice(word);
            u64::from_be_bytes(array)
        }
        None => {
            let mut array = [0u8; 8];
            let tail = bytes.get(start..).unwrap_or(&[]);
            array[..tail.len()].copy_from_slice(tail);
            u64::from_be_bytes(array)
        }
    }
}

/// Where chunk `chunk` sits in the directory: (segment, slot).
#[inline]
fn locate(chunk: usize) -> (usize, usize) {
    if chunk < FIRST_SEGMENT_SLOTS {
        // The first 64 chunks (over 50 MiB) all sit in segment 0.
        return (0, chunk);
    }
    let group = chunk / FIRST_SEGMENT_SLOTS + 1;
    let segment = (usize::BITS - 1 - group.leading_zeros()) as usize;
    let first_of_segment = FIRST_SEGMENT_SLOTS * ((1 << segment) - 1);
    (segment, chunk - first_of_segment)
}

/// A chunk of the arena, set once by the writer.
type ChunkSlot = OnceLock<Box<[AtomicU64]>>;

/// Chunks of atomic words behind a directory that readers walk without locks.
struct Arena {
    /// Segment 0 of the directory, held inline: the chunks of a memtable under about 50 MiB
    /// are found with one bounds check and one load, the hot step of every search.
    first_segment: [ChunkSlot; FIRST_SEGMENT_SLOTS],
    /// Segments 1 and up (index `segment - 1`), allocated when first needed.
    later_segments: [OnceLock<Box<[ChunkSlot]>>; SEGMENTS - 1],
    /// Bytes of the words handed out so far (nodes with their keys and values).
    used_bytes: AtomicUsize,
    /// Heap bytes of every chunk and directory segment allocated so far.
    allocated_bytes: AtomicUsize,
}

/// What only the writer touches: the bump pointer and the height generator.
struct WriterState {
    /// The key being inserted, packed into words (kept for its capacity).
    key_words: Vec<u64>,
    chunk: usize,
    /// Next free word in `chunk`.
    offset: usize,
    /// Xorshift state for tower heights (any fixed seed: heights only affect speed).
    random: u64,
}

impl Arena {
    fn new() -> Self {
        Arena {
            first_segment: std::array::from_fn(|_| OnceLock::new()),
            later_segments: std::array::from_fn(|_| OnceLock::new()),
            used_bytes: AtomicUsize::new(0),
            allocated_bytes: AtomicUsize::new(0),
        }
    }

    /// The words of chunk `chunk` (empty if it was never allocated, which no published address
    /// can name).
    #[inline]
    fn chunk(&self, chunk: usize) -> &[AtomicU64] {
        let slot = match self.first_segment.get(chunk) {
            Some(slot) => Some(slot),
            None => self.later_slot(chunk),
        };
        slot.and_then(OnceLock::get).map_or(&[], |words| &words[..])
    }

    /// The directory slot of a chunk past segment 0 (`None` if its segment was never allocated).
    #[cold]
    fn later_slot(&self, chunk: usize) -> Option<&ChunkSlot> {
        let (segment, slot) = locate(chunk);
        self.later_segments
            .get(segment.checked_sub(1)?)
            .and_then(OnceLock::get)
            .and_then(|slots| slots.get(slot))
    }

    /// Hands out `words` consecutive words in one chunk (writer only).
    fn allocate(&self, writer: &mut WriterState, words: usize) -> NodeAddress {
        if writer.offset + words > self.chunk(writer.chunk).len() {
            let next = if self.chunk(writer.chunk).is_empty() {
                writer.chunk
            } else {
                writer.chunk + 1
            };
            let size = (FIRST_CHUNK_WORDS << next.min(20))
                .min(MAX_CHUNK_WORDS)
                .max(words);
            self.install_chunk(next, size);
            writer.chunk = next;
            writer.offset = 0;
        }
        let address = ((writer.chunk as u64) << 32) | writer.offset as u64;
        writer.offset += words;
        self.used_bytes
            .fetch_add(words * 8, AtomicOrdering::Relaxed);
        address
    }

    fn install_chunk(&self, chunk: usize, words: usize) {
        let (segment, slot) = locate(chunk);
        let slot = if segment == 0 {
            self.first_segment.get(slot)
        } else {
            let Some(segment_slots) = self.later_segments.get(segment - 1) else {
                return;
            };
            let slots = segment_slots.get_or_init(|| {
                let slots = FIRST_SEGMENT_SLOTS << segment;
                self.allocated_bytes.fetch_add(
                    slots * std::mem::size_of::<ChunkSlot>(),
                    AtomicOrdering::Relaxed,
                );
                (0..slots).map(|_| OnceLock::new()).collect()
            });
            slots.get(slot)
        };
        if let Some(slot) = slot {
            slot.get_or_init(|| {
                // Zeroed memory from the allocator (calloc: fresh pages are zero already), not
                // a loop that writes every word of a megabyte.
                <[AtomicU64] as FromZeros>::new_box_zeroed_with_elems(words)
                    .unwrap_or_else(|_| (0..words).map(|_| AtomicU64::new(0)).collect())
            });
            self.allocated_bytes
                .fetch_add(words * 8, AtomicOrdering::Relaxed);
        }
    }
}

/// A skiplist of internal-key entries, ordered by user key ascending, then trailer descending
/// (`crate::key::compare_internal_keys`).
pub(crate) struct SkipList {
    arena: Arena,
    head: NodeAddress,
    /// Height of the tallest tower; readers start their descent there.
    height: AtomicUsize,
    writer: Mutex<WriterState>,
}

/// A target for a search: a user key and a trailer.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) user_key: &'a [u8],
    pub(crate) trailer: u64,
}

impl<'a> Target<'a> {
    /// Splits an internal key as `compare_internal_keys` does (a key shorter than the trailer
    /// has an empty user key and trailer 0).
    pub(crate) fn from_internal_key(key: &'a [u8]) -> Self {
        let split = key.len().saturating_sub(TRAILER_LEN);
        let trailer = key
            .get(split..)
            .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
            .map_or(0, u64::from_le_bytes);
        Target {
            user_key: key.get(..split).unwrap_or(&[]),
            trailer,
        }
    }
}

/// Words a reader's search key keeps on the stack: user keys up to 64 bytes need no allocation.
const INLINE_KEY_WORDS: usize = 8;

/// Appends the big-endian words of `user_key` to `out`.
fn pack_key(user_key: &[u8], out: &mut Vec<u64>) {
    for_each_word(user_key, |word| out.push(word));
}

/// Calls `visit` with each big-endian word of `bytes`, the last zero-padded: whole words
/// straight from 8-byte chunks, without [`word_of`]'s per-word bounds logic.
#[inline]
fn for_each_word(bytes: &[u8], mut visit: impl FnMut(u64)) {
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut array = [0u8; 8];
        array.copy_from_slice(chunk);
        visit(u64::from_be_bytes(array));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut array = [0u8; 8];
        array[..tail.len()].copy_from_slice(tail);
        visit(u64::from_be_bytes(array));
    }
}

/// A user key packed into words for a reader's search (the writer packs into a buffer it
/// keeps, see [`WriterState::key_words`]).
struct PackedKey {
    inline: [u64; INLINE_KEY_WORDS],
    heap: Vec<u64>,
    words: usize,
}

impl PackedKey {
    fn new(user_key: &[u8]) -> Self {
        let words = words_for(user_key.len());
        let mut packed = PackedKey {
            inline: [0; INLINE_KEY_WORDS],
            heap: Vec::new(),
            words,
        };
        if words <= INLINE_KEY_WORDS {
            for (index, slot) in packed.inline.iter_mut().take(words).enumerate() {
                *slot = word_of(user_key, index);
            }
        } else {
            pack_key(user_key, &mut packed.heap);
        }
        packed
    }

    fn words(&self) -> &[u64] {
        if self.words <= INLINE_KEY_WORDS {
            &self.inline[..self.words]
        } else {
            &self.heap
        }
    }
}

/// A search target with its user key packed into big-endian words once, so that each of the
/// ~30 comparisons of a search compares words.
struct SearchKey<'a> {
    words: &'a [u64],
    len: usize,
    trailer: u64,
}

impl SearchKey<'_> {
    #[inline]
    fn words(&self) -> &[u64] {
        self.words
    }
}

/// A node seen through its chunk: `at` indexes its meta word, its tower lies just below.
#[derive(Clone, Copy)]
struct Node<'a> {
    words: &'a [AtomicU64],
    at: usize,
}

impl<'a> Node<'a> {
    #[inline]
    fn word(self, index: usize) -> u64 {
        self.words
            .get(index)
            .map_or(0, |word| word.load(AtomicOrdering::Relaxed))
    }

    /// (user-key length, value length).
    #[inline]
    fn lengths(self) -> (usize, usize) {
        let meta = self.word(self.at);
        ((meta & 0xffff_ffff) as usize, (meta >> 32) as usize)
    }

    #[inline]
    fn trailer(self) -> u64 {
        self.word(self.at + 1)
    }

    /// The level-`level` link (only valid for a node at least `level + 1` tall).
    #[inline]
    fn link(self, level: usize) -> Option<&'a AtomicU64> {
        self.at
            .checked_sub(1 + level)
            .and_then(|index| self.words.get(index))
    }

    #[inline]
    fn next(self, level: usize) -> NodeAddress {
        self.link(level)
            .map_or(NONE, |link| link.load(AtomicOrdering::Acquire))
    }

    /// The words of the user key.
    #[inline]
    fn key_words(self, key_len: usize) -> &'a [AtomicU64] {
        let first = self.at + HEADER_WORDS;
        self.words
            .get(first..first + words_for(key_len))
            .unwrap_or(&[])
    }

    /// Orders this node against `key`.
    #[inline]
    fn compare(self, key: &SearchKey) -> Ordering {
        let (key_len, _) = self.lengths();
        for (stored, &wanted) in self.key_words(key_len).iter().zip(key.words()) {
            let stored = stored.load(AtomicOrdering::Relaxed);
            if stored != wanted {
                return stored.cmp(&wanted);
            }
        }
        key_len
            .cmp(&key.len)
            .then_with(|| key.trailer.cmp(&self.trailer()))
    }
}

impl SkipList {
    pub(crate) fn new() -> Self {
        let arena = Arena::new();
        let mut writer = WriterState {
            key_words: Vec::new(),
            chunk: 0,
            offset: 0,
            random: 0x2545_f491_4f6c_dd1d,
        };
        // Word 0 stays unused so that address 0 means "no node"; the head is a node with a full
        // tower and an empty key, never compared.
        arena.allocate(&mut writer, 1);
        let head = arena.allocate(&mut writer, MAX_HEIGHT + HEADER_WORDS) + MAX_HEIGHT as u64;
        SkipList {
            arena,
            head,
            height: AtomicUsize::new(1),
            writer: Mutex::new(writer),
        }
    }

    /// Bytes of the arena's words in use: the nodes, keys and values inserted (and the head).
    /// The heap holds more by at most the unused rest of the current chunk (under 1 MiB, or
    /// under the used bytes while chunks still double) and the chunk directory.
    pub(crate) fn used_bytes(&self) -> usize {
        self.arena.used_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Heap bytes the arena holds (chunks and directory), which is all the list allocates.
    #[cfg(test)]
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes.load(AtomicOrdering::Relaxed)
    }

    #[inline]
    fn node(&self, address: NodeAddress) -> Node<'_> {
        Node {
            words: self.arena.chunk((address >> 32) as usize),
            at: (address & 0xffff_ffff) as usize,
        }
    }

    /// The first node at or after `key`, and (when `predecessors` is given) the last node
    /// before it on every level.
    fn find(
        &self,
        key: &SearchKey,
        mut predecessors: Option<&mut [NodeAddress; MAX_HEIGHT]>,
    ) -> NodeAddress {
        let mut address = self.head;
        let mut node = self.node(address);
        let mut level = self
            .height
            .load(AtomicOrdering::Relaxed)
            .clamp(1, MAX_HEIGHT)
            - 1;
        // The node that ended the search on the level above: known to be at or after `key`, so
        // meeting it again one level down needs no comparison (RocksDB's `last_bigger`). About
        // one level in two ends on it with a branching factor of 4.
        let mut last_bigger = NONE;
        loop {
            let next_address = node.next(level);
            if next_address != NONE && next_address != last_bigger {
                let next = self.node(next_address);
                if next.compare(key) == Ordering::Less {
                    address = next_address;
                    node = next;
                    continue;
                }
                last_bigger = next_address;
            }
            if let Some(predecessors) = predecessors.as_deref_mut() {
                predecessors[level] = address;
            }
            if level == 0 {
                return next_address;
            }
            level -= 1;
        }
    }

    /// Inserts an entry; an entry with the same user key and trailer is left as it is (sequence
    /// numbers are unique, so this only happens to a replayed write). Inserts are serialized by
    /// the writer lock; readers run alongside.
    pub(crate) fn insert(
        &self,
        user_key: &[u8],
        sequence: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
    ) {
        let trailer = crate::key::pack_trailer(sequence, kind);
        let mut writer = self.writer.lock();
        let mut key_words = std::mem::take(&mut writer.key_words);
        key_words.clear();
        pack_key(user_key, &mut key_words);
        let key = SearchKey {
            words: &key_words,
            len: user_key.len(),
            trailer,
        };
        let mut predecessors = [self.head; MAX_HEIGHT];
        let found = self.find(&key, Some(&mut predecessors));
        if found != NONE && self.node(found).compare(&key) == Ordering::Equal {
            writer.key_words = key_words;
            return;
        }
        let height = random_height(&mut writer.random);
        let value_words = words_for(value.len());
        let words = height + HEADER_WORDS + key.words().len() + value_words;
        let address = self.arena.allocate(&mut writer, words) + height as u64;
        let node = self.node(address);
        // Not reachable yet: relaxed stores are enough; the release stores below publish them.
        // Keys are at most 64 KiB and values at most 64 MiB (checked by the write path; a log
        // record, and so a replayed entry, is under 4 GiB): both lengths fit their 32 bits.
        let meta = (user_key.len() as u64 & 0xffff_ffff) | ((value.len() as u64) << 32);
        let body = node.words.get(node.at..).unwrap_or(&[]);
        let mut slots = body.iter();
        let mut store = |word: u64| {
            if let Some(slot) = slots.next() {
                slot.store(word, AtomicOrdering::Relaxed);
            }
        };
        store(meta);
        store(trailer);
        for &word in key.words() {
            store(word);
        }
        for_each_word(value, &mut store);
        if height > self.height.load(AtomicOrdering::Relaxed) {
            // Levels above the old height start at the head (already in `predecessors`).
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        for (level, &predecessor) in predecessors.iter().enumerate().take(height) {
            let (Some(predecessor_link), Some(own_link)) =
                (self.node(predecessor).link(level), node.link(level))
            else {
                continue;
            };
            own_link.store(
                predecessor_link.load(AtomicOrdering::Relaxed),
                AtomicOrdering::Relaxed,
            );
            // Publishes the node on this level: a reader that loads this link (acquire) sees
            // every word stored above.
            predecessor_link.store(address, AtomicOrdering::Release);
        }
        // The writer lock is held to here: linking is the part that must not interleave.
        writer.key_words = key_words;
        drop(writer);
    }

    /// The first entry at or after `target` (`None` past the end).
    pub(crate) fn seek(&self, target: Target<'_>) -> Option<Position> {
        let packed = PackedKey::new(target.user_key);
        let key = SearchKey {
            words: packed.words(),
            len: target.user_key.len(),
            trailer: target.trailer,
        };
        Position::at(self.find(&key, None))
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<Position> {
        Position::at(self.node(self.head).next(0))
    }

    /// The entry after `position`.
    pub(crate) fn after(&self, position: Position) -> Option<Position> {
        Position::at(self.node(position.0).next(0))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    /// The entry's trailer: `(sequence << 8) | kind`.
    pub(crate) fn trailer(&self, position: Position) -> u64 {
        self.node(position.0).trailer()
    }

    /// True when the entry's user key is `user_key`.
    pub(crate) fn user_key_is(&self, position: Position, user_key: &[u8]) -> bool {
        let node = self.node(position.0);
        let (key_len, _) = node.lengths();
        key_len == user_key.len()
            && node
                .key_words(key_len)
                .iter()
                .enumerate()
                .all(|(index, word)| word.load(AtomicOrdering::Relaxed) == word_of(user_key, index))
    }

    /// Replaces `internal_key` with the entry's internal key (user key, then trailer).
    pub(crate) fn read_internal_key(&self, position: Position, internal_key: &mut Vec<u8>) {
        let node = self.node(position.0);
        let (key_len, _) = node.lengths();
        internal_key.clear();
        read_words(node.words, node.at + HEADER_WORDS, key_len, internal_key);
        internal_key.extend_from_slice(&node.trailer().to_le_bytes());
    }

    /// Replaces `value` with the entry's value.
    pub(crate) fn read_value(&self, position: Position, value: &mut Vec<u8>) {
        let node = self.node(position.0);
        let (key_len, value_len) = node.lengths();
        value.clear();
        read_words(
            node.words,
            node.at + HEADER_WORDS + words_for(key_len),
            value_len,
            value,
        );
    }
}

/// Appends `len` bytes packed in big-endian words from `node[first..]` to `out`.
fn read_words(node: &[AtomicU64], first: usize, len: usize, out: &mut Vec<u8>) {
    out.reserve(len);
    let mut left = len;
    for word in node.iter().skip(first).take(words_for(len)) {
        let bytes = word.load(AtomicOrdering::Relaxed).to_be_bytes();
        let take = left.min(8);
        out.extend_from_slice(&bytes[..take]);
        left -= take;
    }
}

/// The height of a new tower: 1, then one more with probability 1/`BRANCHING` each time.
fn random_height(state: &mut u64) -> usize {
    let mut height = 1;
    while height < MAX_HEIGHT {
        // Xorshift64 (Marsaglia).
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        if !state.is_multiple_of(BRANCHING) {
            break;
        }
        height += 1;
    }
    height
}

/// An entry of the list (a node address; never "none").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position(NodeAddress);

impl Position {
    fn at(address: NodeAddress) -> Option<Position> {
        (address != NONE).then_some(Position(address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn the_directory_maps_every_chunk_to_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        for chunk in 0..100_000 {
            let (segment, slot) = locate(chunk);
            assert!(segment < SEGMENTS);
            assert!(slot < FIRST_SEGMENT_SLOTS << segment, "chunk {chunk}");
            assert!(seen.insert((segment, slot)), "chunk {chunk} shares a slot");
        }
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(63), (0, 63));
        assert_eq!(locate(64), (1, 0));
        assert_eq!(locate(64 + 127), (1, 127));
        assert_eq!(locate(64 + 128), (2, 0));
    }

    #[test]
    fn words_pack_bytes_big_endian_with_zero_padding() {
        assert_eq!(word_of(b"", 0), 0);
        assert_eq!(word_of(b"\x01", 0), 1 << 56);
        assert_eq!(
            word_of(b"abcdefghij", 1),
            u64::from_be_bytes(*b"ij\0\0\0\0\0\0")
        );
        let node: Vec<AtomicU64> = (0..2)
            .map(|i| AtomicU64::new(word_of(b"abcdefghij", i)))
            .collect();
        let mut out = Vec::new();
        read_words(&node, 0, 10, &mut out);
        assert_eq!(out, b"abcdefghij");
    }

    #[test]
    fn entries_larger_than_a_chunk_get_a_chunk_of_their_own() {
        let list = SkipList::new();
        let big = vec![9u8; 3 * MAX_CHUNK_WORDS * 8];
        list.insert(b"b", 1, ValueKind::Value, &big);
        list.insert(b"a", 2, ValueKind::Value, b"small");
        list.insert(b"c", 3, ValueKind::Value, &big[..100]);
        let mut value = Vec::new();
        let first = list.first().expect("entries");
        list.read_value(first, &mut value);
        assert_eq!(value, b"small");
        let second = list.after(first).expect("second");
        list.read_value(second, &mut value);
        assert_eq!(value, big);
        let third = list.after(second).expect("third");
        list.read_value(third, &mut value);
        assert_eq!(value, &big[..100]);
        assert!(list.after(third).is_none());
        assert!(list.allocated_bytes() >= big.len());
    }

    /// Readers scan while one writer inserts: every scan is strictly ordered, every entry it sees
    /// is whole (its value matches its key), and it sees at least every entry inserted before it
    /// started.
    #[test]
    fn readers_see_whole_entries_in_order_while_a_writer_inserts() {
        const ENTRIES: u64 = 20_000;
        let list = Arc::new(SkipList::new());
        let inserted = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let value_of = |key: u64| format!("value-{key}-{}", "x".repeat((key % 40) as usize));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (list, inserted, done) = (list.clone(), inserted.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut scans = 0;
                    let (mut key, mut value) = (Vec::new(), Vec::new());
                    while !done.load(AtomicOrdering::Acquire) || scans < 3 {
                        let at_least = inserted.load(AtomicOrdering::Acquire);
                        let mut seen = 0u64;
                        let mut previous: Option<Vec<u8>> = None;
                        let mut position = list.first();
                        while let Some(at) = position {
                            list.read_internal_key(at, &mut key);
                            list.read_value(at, &mut value);
                            let user_key = &key[..key.len() - TRAILER_LEN];
                            let number: u64 = std::str::from_utf8(user_key)
                                .expect("utf8")
                                .trim_start_matches('k')
                                .parse()
                                .expect("number");
                            assert_eq!(value, value_of(number).as_bytes());
                            if let Some(previous) = &previous {
                                assert!(previous < &key, "scan out of order");
                            }
                            previous = Some(key.clone());
                            seen += 1;
                            position = list.after(at);
                        }
                        assert!(seen >= at_least, "scan saw {seen} of {at_least}");
                        scans += 1;
                    }
                    scans
                })
            })
            .collect();
        // Keys in a scattered order, so inserts land all over the list.
        for i in 0..ENTRIES {
            let key = (i * 7_919) % ENTRIES;
            list.insert(
                format!("k{key:06}").as_bytes(),
                i + 1,
                ValueKind::Value,
                value_of(key).as_bytes(),
            );
            inserted.store(i + 1, AtomicOrdering::Release);
        }
        done.store(true, AtomicOrdering::Release);
        for reader in readers {
            assert!(reader.join().expect("reader") >= 3);
        }
    }
}
