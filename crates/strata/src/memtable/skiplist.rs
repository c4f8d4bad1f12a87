//! The memtable's skiplist: nodes laid out in an arena of 64-bit atomic words, one writer at a
//! time, readers without locks. RocksDB's `InlineSkipList` over its `Arena` is the model.
//!
//! Every byte the skiplist shares between threads lives in an `AtomicU64`. A writer fills a new
//! node with relaxed stores while no reader can reach it, then links it into each level with a
//! release store; a reader follows links with acquire loads, so it sees every word of any node it
//! reaches. A stale read can only be an older link, which a skiplist tolerates (the reader misses
//! a node inserted after it passed). Nodes are never removed; the arena is freed with the list.
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
//! link, which are that tall ([`Node::levels`] carries that knowledge, so a link outside the
//! tower cannot be named).
//!
//! A node's address is the memory address of its meta word. It used to be a chunk
//! number and an offset, translated through a chunk directory at every step of a search; that
//! translation and its bounds checks were a third of an insert's instructions (docs/BENCHMARKS.md,
//! "Write path"). The price is `unsafe` in one place, [`Node::at_address`], whose contract the
//! callers meet: an address is only ever the head, a link loaded from a node of the same list,
//! or a [`Position`] the list checks is its own. Chunks never move or shrink (leaked boxed slices,
//! freed with the list; see [`Chunk`] for why not boxes) and live as long as the list, so such an
//! address stays valid for as long as the list is borrowed.
//!
//! Allocation in the arena is a bump of an offset; chunks grow from 4 KiB to 1 MiB, so small
//! memtables stay small and large ones make one allocation per megabyte, not one per entry. An
//! insert therefore makes no heap allocation of its own except when a chunk fills. The list's
//! size for the write-buffer limit is the bytes handed out ([`SkipList::used_bytes`]), so that an
//! empty memtable is not full because its first chunk is allocated.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::Mutex;
use zerocopy::FromZeros;

use crate::key::{SequenceNumber, ValueKind, TRAILER_LEN};
use crate::limits::{MAX_KEY_BYTES, MAX_VALUE_BYTES};

/// Tallest tower. With a branching factor of 4 this indexes 4^12 (16 million) entries at full
/// speed and stays correct (only slower) beyond.
const MAX_HEIGHT: usize = 12;

/// Each level holds about one in `BRANCHING` of the nodes of the level below (LevelDB's and
/// RocksDB's choice: 1.33 links a node on average, against 2 for a branching factor of 2).
const BRANCHING: u64 = 4;

/// Words of a node before its user key.
const HEADER_WORDS: usize = 2;

/// First chunk: 512 words (4 KiB); each next chunk doubles, up to `MAX_CHUNK_WORDS`.
#[cfg(not(miri))]
const FIRST_CHUNK_WORDS: usize = 512;
/// 1 MiB chunks once the memtable is past 2 MiB.
#[cfg(not(miri))]
const MAX_CHUNK_WORDS: usize = 1 << 17;
/// Under Miri (which runs the tests about a million times slower) chunks are small, so that
/// the few entries a test can afford there still fill many chunks and cross their boundaries.
#[cfg(miri)]
const FIRST_CHUNK_WORDS: usize = 32;
#[cfg(miri)]
const MAX_CHUNK_WORDS: usize = 256;

// A node's meta word holds both lengths in 32 bits each; the engine's limits fit.
const _: () = assert!(MAX_KEY_BYTES <= u32::MAX as usize);
const _: () = assert!(MAX_VALUE_BYTES <= u32::MAX as usize);

/// Address of a node: the memory address of its meta word (exposed provenance), 0 = no node.
type NodeAddress = usize;
const NONE: NodeAddress = 0;

/// Distinguishes lists, so that a [`Position`] is only ever read through the list it came from.
static NEXT_LIST_ID: AtomicU64 = AtomicU64::new(1);

/// Words needed for `bytes` bytes.
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

/// What only the writer touches: the arena's chunks, the bump pointer and the height generator.
/// Readers never see the chunk list; they reach nodes through links.
struct WriterState {
    /// The key being inserted, packed into words (kept for its capacity).
    key_words: Vec<u64>,
    /// Every chunk of the arena. A chunk's words never move, so addresses into it stay valid
    /// while the list lives, however this vector grows.
    chunks: Vec<Chunk>,
    /// Address of the last chunk's first word (0 before the first chunk).
    chunk_base: usize,
    /// Words in the last chunk.
    chunk_words: usize,
    /// Next free word in the last chunk.
    offset: usize,
    /// Xorshift state for tower heights (any fixed seed: heights only affect speed).
    random: u64,
}

/// One chunk of the arena: a boxed slice of words, held as a raw pointer (the box leaked) and
/// boxed again only to be freed.
///
/// Not a `Box` because moving a `Box` (into the chunk list, say) asserts that the box is the
/// only way to its memory: under Rust's aliasing rules (the Stacked Borrows model Miri checks)
/// that move invalidates every pointer derived from the box before it, the exposed addresses
/// readers turn back into nodes among them. Miri reported exactly that when the chunks were
/// `Box<[AtomicU64]>`: the first read of a link after the chunk was pushed had no valid
/// provenance. A leaked box's pointer is never asserted unique again until `drop`.
struct Chunk(NonNull<[AtomicU64]>);

impl Chunk {
    fn new(words: usize) -> Self {
        let boxed = <[AtomicU64] as FromZeros>::new_box_zeroed_with_elems(words)
            .unwrap_or_else(|_| (0..words).map(|_| AtomicU64::new(0)).collect());
        Chunk(NonNull::from(Box::leak(boxed)))
    }

    /// Address of the first word, its provenance exposed for [`Node::at_address`].
    fn base_address(&self) -> usize {
        self.0.cast::<AtomicU64>().as_ptr().expose_provenance()
    }

    fn words(&self) -> usize {
        self.0.len()
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` of a `Box<[AtomicU64]>` in `Chunk::new`
        // and is boxed again only here, once. The chunk is dropped with its list (which owns
        // the writer state and so this chunk) when no borrow of the list is left, and every node,
        // link or position is used only through such a borrow, so no pointer into it is used
        // after this.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

// SAFETY: a `Chunk` owns its words as a `Box<[AtomicU64]>` would, and `Box<[AtomicU64]>` is
// `Send`; only the writer, under the list's lock, touches the chunk itself.
unsafe impl Send for Chunk {}

impl WriterState {
    /// Hands out `words` consecutive zeroed words in one chunk: the address of the first.
    fn allocate(&mut self, words: usize, counters: &Counters) -> usize {
        if self.offset + words > self.chunk_words {
            let size = (FIRST_CHUNK_WORDS << self.chunks.len().min(20))
                .min(MAX_CHUNK_WORDS)
                .max(words);
            let chunk = Chunk::new(size);
            self.chunk_base = chunk.base_address();
            self.chunk_words = chunk.words();
            self.offset = 0;
            let grows = self.chunks.len() == self.chunks.capacity();
            let before = self.chunks.capacity();
            self.chunks.push(chunk);
            let directory = if grows {
                (self.chunks.capacity() - before) * std::mem::size_of::<Chunk>()
            } else {
                0
            };
            counters
                .allocated_bytes
                .fetch_add(size * 8 + directory, AtomicOrdering::Relaxed);
        }
        let address = self.chunk_base + self.offset * std::mem::size_of::<AtomicU64>();
        self.offset += words;
        counters
            .used_bytes
            .fetch_add(words * 8, AtomicOrdering::Relaxed);
        address
    }
}

/// The arena's sizes, readable by anyone.
struct Counters {
    /// Bytes of the words handed out so far (nodes with their keys and values).
    used_bytes: AtomicUsize,
    /// Heap bytes of every chunk and of the chunk list allocated so far.
    allocated_bytes: AtomicUsize,
}

/// A sorted list of (user key, trailer) → value entries; see the module documentation.
pub(crate) struct SkipList {
    /// Address of the head node: a full-height tower with an empty key that no entry is ever
    /// compared with.
    head: NodeAddress,
    /// Tallest tower so far (at least 1).
    height: AtomicUsize,
    /// This list's identity, carried by every [`Position`] it hands out.
    id: u64,
    counters: Counters,
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

/// A node of a list borrowed for `'a`: `at` is its meta word; `levels` is how many of its links
/// the way it was reached proves it has (its level-`l` link was followed, so it has `l + 1`).
#[derive(Clone, Copy)]
struct Node<'a> {
    at: *const AtomicU64,
    levels: usize,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> Node<'a> {
    /// The node at `address`, known to have at least `levels` links.
    ///
    /// # Safety
    /// `address` must be the address of a node of a list that outlives `'a` (the head, a link
    /// loaded from one of its nodes, or a position it handed out), that node's words published
    /// to this thread (its meta and body written before the release store that linked it, read
    /// after an acquire load of that link or under the writer's lock), and the node must have at
    /// least `levels` links below its meta word.
    #[inline]
    unsafe fn at_address(address: NodeAddress, levels: usize) -> Node<'a> {
        Node {
            at: std::ptr::with_exposed_provenance(address),
            levels,
            _list: PhantomData,
        }
    }

    /// Word `index` of the node's body (0 = meta, 1 = trailer, then key and value words), or
    /// 0 past the body's end.
    #[inline]
    fn body_word(self, index: usize) -> u64 {
        if index >= HEADER_WORDS && index >= self.body_words() {
            return 0;
        }
        // SAFETY: `at_address`'s contract: `at` is the meta word of a whole, published node of a
        // list alive for `'a`, whose body holds the meta, the trailer and the words its meta
        // counts; `index` is below `body_words()` (or names the meta or trailer).
        unsafe { (*self.at.add(index)).load(AtomicOrdering::Relaxed) }
    }

    /// Words of the body: header, key and value.
    #[inline]
    fn body_words(self) -> usize {
        let (key_len, value_len) = self.lengths();
        HEADER_WORDS + words_for(key_len) + words_for(value_len)
    }

    #[inline]
    fn lengths(self) -> (usize, usize) {
        // SAFETY: as in `body_word`; the meta word is the body's first.
        let meta = unsafe { (*self.at).load(AtomicOrdering::Relaxed) };
        ((meta & 0xffff_ffff) as usize, (meta >> 32) as usize)
    }

    #[inline]
    fn trailer(self) -> u64 {
        self.body_word(1)
    }

    /// The link of `level`, if the node is known to have it.
    #[inline]
    fn link(self, level: usize) -> Option<&'a AtomicU64> {
        if level >= self.levels {
            return None;
        }
        // SAFETY: `at_address`'s contract: the node has at least `levels` links, the one of level
        // `l` at `at - 1 - l`, inside the same chunk, alive for `'a`.
        Some(unsafe { &*self.at.sub(1 + level) })
    }

    /// Address of the next node on `level` (acquire: its words are visible once this returns).
    #[inline]
    fn next(self, level: usize) -> NodeAddress {
        self.link(level).map_or(NONE, |link| {
            link.load(AtomicOrdering::Acquire) as NodeAddress
        })
    }

    /// The node `next(level)` names (`None` at the end of the level).
    #[inline]
    fn successor(self, level: usize) -> Option<Node<'a>> {
        let address = self.next(level);
        // SAFETY: a non-zero link of a node of this list is the address of another node of the
        // list, published by the release store that wrote the link and seen by the acquire load
        // in `next`; a node linked on `level` is at least `level + 1` tall.
        (address != NONE).then(|| unsafe { Node::at_address(address, level + 1) })
    }

    /// Calls `visit` with each of `count` body words from `first` (stops at the body's end).
    #[inline]
    fn for_each_body_word(self, first: usize, count: usize, mut visit: impl FnMut(u64)) {
        let end = (first + count).min(self.body_words());
        for index in first..end {
            // SAFETY: as in `body_word`; `index < body_words()`.
            visit(unsafe { (*self.at.add(index)).load(AtomicOrdering::Relaxed) });
        }
    }

    /// Orders the node against a search key: user key (bytewise), then trailer descending.
    #[inline]
    fn compare(self, key: &SearchKey) -> Ordering {
        let (key_len, _) = self.lengths();
        let stored_words = words_for(key_len);
        let wanted = key.words();
        for (index, &wanted) in wanted.iter().enumerate().take(stored_words) {
            // SAFETY: as in `body_word`; `HEADER_WORDS + index` is a key word of the body.
            let stored =
                unsafe { (*self.at.add(HEADER_WORDS + index)).load(AtomicOrdering::Relaxed) };
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
        let counters = Counters {
            used_bytes: AtomicUsize::new(0),
            allocated_bytes: AtomicUsize::new(0),
        };
        let mut writer = WriterState {
            key_words: Vec::new(),
            chunks: Vec::new(),
            chunk_base: 0,
            chunk_words: 0,
            offset: 0,
            random: 0x2545_f491_4f6c_dd1d,
        };
        // The head: a full tower, meta 0 (empty key and value), trailer 0; zeroed links are
        // "none".
        let head =
            writer.allocate(MAX_HEIGHT + HEADER_WORDS, &counters) + MAX_HEIGHT * size_of::<u64>();
        SkipList {
            head,
            height: AtomicUsize::new(1),
            id: NEXT_LIST_ID.fetch_add(1, AtomicOrdering::Relaxed),
            counters,
            writer: Mutex::new(writer),
        }
    }

    /// Bytes of the entries as stored (nodes, keys, values): the write-buffer size.
    pub(crate) fn used_bytes(&self) -> usize {
        self.counters.used_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Heap bytes of the arena's chunks and chunk list.
    #[cfg(test)]
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.counters.allocated_bytes.load(AtomicOrdering::Relaxed)
    }

    #[inline]
    fn head(&self) -> Node<'_> {
        // SAFETY: the head was allocated by `new` with `MAX_HEIGHT` links below its meta word,
        // in a chunk the list owns; it is published to every thread that can borrow the list.
        unsafe { Node::at_address(self.head, MAX_HEIGHT) }
    }

    /// The node of a position, if the position is this list's.
    #[inline]
    fn node_of(&self, position: Position) -> Option<Node<'_>> {
        // SAFETY: positions are made only from nodes reached on level 0 (so with one link) of the
        // list whose id they carry; ids are unique, so this is that list, borrowed for the
        // node's lifetime, and its nodes were published to the thread that made the position
        // (a position crossing threads carries the happens-before of its transfer).
        (position.list == self.id).then(|| unsafe { Node::at_address(position.address, 1) })
    }

    fn position(&self, node: Option<Node<'_>>) -> Option<Position> {
        node.map(|node| Position {
            list: self.id,
            address: node.at.expose_provenance(),
        })
    }

    /// The first node whose key is `>= key` (`None` past the end). With `predecessors`, records
    /// the last node `< key` on every level (the head where none is).
    fn find<'a>(
        &'a self,
        key: &SearchKey,
        mut predecessors: Option<&mut [Node<'a>; MAX_HEIGHT]>,
    ) -> Option<Node<'a>> {
        let mut node = self.head();
        let mut level = self
            .height
            .load(AtomicOrdering::Relaxed)
            .clamp(1, MAX_HEIGHT)
            - 1;
        // The node that ended the level above: already known not to be `< key` (RocksDB's
        // `last_bigger`), so it is not compared again.
        let mut last_bigger = NONE;
        loop {
            let next_address = node.next(level);
            let mut next = None;
            if next_address != NONE {
                // SAFETY: as in `Node::successor`.
                let candidate = unsafe { Node::at_address(next_address, level + 1) };
                if next_address != last_bigger && candidate.compare(key) == Ordering::Less {
                    node = candidate;
                    continue;
                }
                last_bigger = next_address;
                next = Some(candidate);
            }
            if let Some(predecessors) = predecessors.as_deref_mut() {
                predecessors[level] = node;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    /// Inserts an entry. An entry with the same user key and trailer is kept as it is (the
    /// engine never writes one twice: sequence numbers are unique).
    pub(crate) fn insert(
        &self,
        user_key: &[u8],
        sequence: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
    ) {
        // Longer inputs cannot reach here (the engine and the log decoder enforce the limits,
        // and the assertion at the top ties the limits to the meta word); were one to, its
        // lengths are cut to fit, consistently with the words written.
        let user_key = user_key.get(..MAX_KEY_BYTES).unwrap_or(user_key);
        let value = value.get(..u32::MAX as usize).unwrap_or(value);
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
        let mut predecessors = [self.head(); MAX_HEIGHT];
        let found = self.find(&key, Some(&mut predecessors));
        if found.is_some_and(|node| node.compare(&key) == Ordering::Equal) {
            writer.key_words = key_words;
            return;
        }
        let height = random_height(&mut writer.random);
        let value_words = words_for(value.len());
        let words = height + HEADER_WORDS + key.words().len() + value_words;
        let first = writer.allocate(words, &self.counters);
        let address = first + height * size_of::<u64>();
        // SAFETY: `allocate` handed out `words` zeroed words of a chunk the list owns: `height`
        // links, then the body written below before any link to the node is published; only
        // this thread (holding the writer's lock) can reach it until then.
        let node = unsafe { Node::at_address(address, height) };
        let meta = user_key.len() as u64 | ((value.len() as u64) << 32);
        let mut index = 0;
        let mut store = |word: u64| {
            // SAFETY: the node's body has `HEADER_WORDS + key words + value words` words, and
            // exactly that many are stored, in order, by the calls below.
            unsafe { (*node.at.add(index)).store(word, AtomicOrdering::Relaxed) };
            index += 1;
        };
        store(meta);
        store(trailer);
        for &word in key.words() {
            store(word);
        }
        for_each_word(value, &mut store);
        if height > self.height.load(AtomicOrdering::Relaxed) {
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        for (level, predecessor) in predecessors.iter().enumerate().take(height) {
            let (Some(predecessor_link), Some(own_link)) =
                (predecessor.link(level), node.link(level))
            else {
                continue;
            };
            own_link.store(
                predecessor_link.load(AtomicOrdering::Relaxed),
                AtomicOrdering::Relaxed,
            );
            predecessor_link.store(address as u64, AtomicOrdering::Release);
        }
        writer.key_words = key_words;
        drop(writer);
    }

    /// The first entry `>= target` in internal-key order.
    pub(crate) fn seek(&self, target: Target<'_>) -> Option<Position> {
        let packed = PackedKey::new(target.user_key);
        let key = SearchKey {
            words: packed.words(),
            len: target.user_key.len(),
            trailer: target.trailer,
        };
        self.position(self.find(&key, None))
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<Position> {
        self.position(self.head().successor(0))
    }

    /// The entry after `position`.
    pub(crate) fn after(&self, position: Position) -> Option<Position> {
        self.position(self.node_of(position).and_then(|node| node.successor(0)))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    /// The trailer of the entry at `position`.
    pub(crate) fn trailer(&self, position: Position) -> u64 {
        self.node_of(position).map_or(0, Node::trailer)
    }

    /// Whether the entry at `position` has user key `user_key`.
    pub(crate) fn user_key_is(&self, position: Position, user_key: &[u8]) -> bool {
        let Some(node) = self.node_of(position) else {
            return false;
        };
        let (key_len, _) = node.lengths();
        key_len == user_key.len()
            && (0..words_for(key_len))
                .all(|index| node.body_word(HEADER_WORDS + index) == word_of(user_key, index))
    }

    /// Copies the internal key (user key, then trailer) of the entry at `position`.
    pub(crate) fn read_internal_key(&self, position: Position, internal_key: &mut Vec<u8>) {
        internal_key.clear();
        let Some(node) = self.node_of(position) else {
            return;
        };
        let (key_len, _) = node.lengths();
        read_words(node, HEADER_WORDS, key_len, internal_key);
        internal_key.extend_from_slice(&node.trailer().to_le_bytes());
    }

    /// Copies the value of the entry at `position`.
    pub(crate) fn read_value(&self, position: Position, value: &mut Vec<u8>) {
        value.clear();
        let Some(node) = self.node_of(position) else {
            return;
        };
        let (key_len, value_len) = node.lengths();
        read_words(node, HEADER_WORDS + words_for(key_len), value_len, value);
    }
}

/// Appends `len` bytes packed in the node's body words from `first`.
fn read_words(node: Node<'_>, first: usize, len: usize, out: &mut Vec<u8>) {
    out.reserve(len);
    let mut left = len;
    node.for_each_body_word(first, words_for(len), |word| {
        let bytes = word.to_be_bytes();
        let take = left.min(8);
        out.extend_from_slice(&bytes[..take]);
        left -= take;
    });
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

/// An entry of a list: the list's id and the node's address. Only the list it came from reads
/// it; any other list treats it as no entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    list: u64,
    address: NodeAddress,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn words_pack_bytes_big_endian_with_zero_padding() {
        assert_eq!(word_of(b"", 0), 0);
        assert_eq!(word_of(b"\x01", 0), 1 << 56);
        assert_eq!(
            word_of(b"abcdefghij", 1),
            u64::from_be_bytes(*b"ij\0\0\0\0\0\0")
        );
        // Through a node: key and value of every length from 0 to 17 bytes come back whole.
        let list = SkipList::new();
        let bytes = b"abcdefghijklmnopq";
        for len in 0..=bytes.len() {
            list.insert(
                &bytes[..len],
                len as u64 + 1,
                ValueKind::Value,
                &bytes[..len],
            );
        }
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let mut position = list.first();
        for len in 0..=bytes.len() {
            let at = position.expect("entry");
            list.read_internal_key(at, &mut key);
            list.read_value(at, &mut value);
            assert_eq!(&key[..len], &bytes[..len]);
            assert_eq!(key.len(), len + TRAILER_LEN);
            assert_eq!(value, &bytes[..len]);
            assert!(list.user_key_is(at, &bytes[..len]));
            if len < bytes.len() {
                assert!(!list.user_key_is(at, &bytes[..len + 1]));
            }
            assert!(!list.user_key_is(at, b"z"));
            position = list.after(at);
        }
        assert!(position.is_none());
    }

    /// A position names an entry of the list that made it; another list treats it as no entry
    /// instead of reading another arena's memory.
    #[test]
    fn a_position_is_read_only_by_its_own_list() {
        let (one, other) = (SkipList::new(), SkipList::new());
        one.insert(b"key", 1, ValueKind::Value, b"value");
        other.insert(b"key", 1, ValueKind::Value, b"value");
        let position = one.first().expect("entry");
        let (mut key, mut value) = (Vec::new(), Vec::new());
        other.read_internal_key(position, &mut key);
        other.read_value(position, &mut value);
        assert!(key.is_empty() && value.is_empty());
        assert_eq!(other.trailer(position), 0);
        assert!(!other.user_key_is(position, b"key"));
        assert!(other.after(position).is_none());
        one.read_value(position, &mut value);
        assert_eq!(value, b"value");
        assert_eq!(
            one.trailer(position),
            crate::key::pack_trailer(1, ValueKind::Value)
        );
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
        // Under Miri 200 entries (still about ten chunks there) and two scans.
        const ENTRIES: u64 = if cfg!(miri) { 200 } else { 20_000 };
        const MIN_SCANS: usize = if cfg!(miri) { 2 } else { 3 };
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
                    while !done.load(AtomicOrdering::Acquire) || scans < MIN_SCANS {
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
            assert!(reader.join().expect("reader") >= MIN_SCANS);
        }
    }
}
