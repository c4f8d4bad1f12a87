//! Thin wrappers that let the criterion microbenchmarks in `crates/strata/benches/` (separate
//! crates) reach crate-internal types: the Bloom and Ribbon filters, sorted blocks, the memtable and the table
//! reader. Compiled only with the `internal-benches` cargo feature and hidden from the docs: this is
//! not part of Strata's API and may change with the internals it wraps.
//!
//! Every wrapper forwards to the engine's own code and does nothing else beyond setup (opening a
//! file, choosing the internal-key comparator); the benchmarks measure the engine, not the
//! wrappers. Methods are `#[inline]` so that a call from a bench crate costs what the same call
//! costs inside the engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::env::{FileSystem, RealFileSystem};
use crate::error::Result;
use crate::filter::bloom;
use crate::key;
use crate::memtable;
use crate::stats::IoCounters;
use crate::table::{self, block, reader, table_file_name};

/// The engine's seeded generator, for the examples' and benchmarks' streams.
pub use crate::random::SplitMix64;

pub use crate::key::{SequenceNumber, ValueKind, MAX_SEQUENCE};

/// The hash every filter is probed with: XXH3-64 of the user key (`filter::bloom::key_hash`).
#[inline]
pub fn key_hash(user_key: &[u8]) -> u64 {
    bloom::key_hash(user_key)
}

/// An internal key: `user_key` followed by the `(sequence << 8) | kind` trailer.
pub fn encode_internal_key(user_key: &[u8], sequence: SequenceNumber, kind: ValueKind) -> Vec<u8> {
    key::encode_internal_key(user_key, sequence, kind)
}

/// The internal key a point lookup of `user_key` at `sequence` seeks to.
pub fn lookup_key(user_key: &[u8], sequence: SequenceNumber) -> Vec<u8> {
    key::lookup_key(user_key, sequence)
}

/// Builds a range filter block (`filter/range.rs`) over sorted distinct `user_keys` at
/// `quantum_bits`, as the table builder does.
pub fn build_range_filter(user_keys: &[Vec<u8>], quantum_bits: u32) -> Vec<u8> {
    let mut builder = crate::filter::range::RangeFilterBuilder::new();
    for key in user_keys {
        builder.add(key);
    }
    builder.finish(quantum_bits)
}

/// A decoded range filter, as a table reader holds it.
pub struct RangeFilter(crate::filter::range::RangeFilter);

impl RangeFilter {
    /// Decodes a block; the error is the corruption reason.
    pub fn decode(block: &[u8]) -> std::result::Result<Self, String> {
        crate::filter::range::RangeFilter::decode(block).map(RangeFilter)
    }

    /// False only if no key lies in `[lo, hi]`.
    #[inline]
    pub fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.0.may_contain_range(lo, hi)
    }

    /// Bytes the decoded filter holds.
    pub fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
}

/// Builds one filter module of `family` over `hashes` (each a [`key_hash`]) at `bits_per_key`
/// with hash seed `seed`, as the table builder does (`FilterFamily::build`); empty when there is
/// no filter.
#[inline]
pub fn build_filter(
    family: crate::FilterFamily,
    bits_per_key: f64,
    seed: u32,
    hashes: &[u64],
) -> Vec<u8> {
    family.build(bits_per_key, seed, hashes)
}

/// A decoded filter module of either family, as the block cache holds it (`filter::Filter`).
pub struct Filter(crate::filter::Filter);

impl Filter {
    /// Decodes a serialized module (its first byte says the family); the error is the
    /// corruption reason.
    pub fn decode(bytes: Vec<u8>) -> std::result::Result<Self, String> {
        crate::filter::Filter::decode(bytes).map(Filter)
    }

    /// False when the key with this [`key_hash`] is certainly absent.
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        self.0.may_contain_hash(hash)
    }

    /// Serialized size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.0.size_bytes()
    }
}

/// The engine's sorted-block builder (`table/block.rs`).
pub struct BlockBuilder(block::BlockBuilder);

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` entries.
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder(block::BlockBuilder::new(restart_interval))
    }

    /// Appends an entry; keys must arrive in increasing order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        self.0.add(key, value);
    }

    /// The block's size if finished now.
    pub fn estimated_size(&self) -> usize {
        self.0.estimated_size()
    }

    /// Returns the block's contents and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        self.0.finish()
    }
}

/// A decoded block of internal keys (a data block), shared as the block cache shares it.
pub struct DataBlock(Arc<block::Block>);

impl DataBlock {
    /// Decodes block contents; the error is the corruption reason.
    pub fn decode(contents: Vec<u8>) -> std::result::Result<Self, String> {
        block::Block::decode(contents).map(|block| DataBlock(Arc::new(block)))
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.0.num_restarts()
    }

    /// A new, unpositioned iterator ordering keys as internal keys, as a table lookup creates one.
    #[inline]
    pub fn iter(&self) -> BlockIter {
        BlockIter(block::BlockIter::new(
            Arc::clone(&self.0),
            key::compare_internal_keys,
        ))
    }
}

/// The engine's block iterator, ordering keys with `compare_internal_keys`.
pub struct BlockIter(block::BlockIter);

impl BlockIter {
    /// Positions at the first entry `>= target`.
    #[inline]
    pub fn seek(&mut self, target: &[u8]) {
        self.0.seek(target);
    }

    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.0.valid()
    }

    /// The current key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.0.key()
    }

    /// The current value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.0.value()
    }
}

/// What a memtable or table file says about a key (mirrors the engine's `Lookup`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is this value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// No visible version.
    Absent,
}

impl From<memtable::Lookup> for Lookup {
    #[inline]
    fn from(lookup: memtable::Lookup) -> Self {
        match lookup {
            memtable::Lookup::Found(value) => Lookup::Found(value),
            memtable::Lookup::Deleted => Lookup::Deleted,
            memtable::Lookup::Absent => Lookup::Absent,
        }
    }
}

/// The engine's skiplist memtable (`memtable/mod.rs`).
pub struct MemTable(memtable::MemTable);

impl MemTable {
    /// An empty memtable (WAL number and first lookup number 0) for the default write buffer.
    #[allow(
        clippy::new_without_default,
        reason = "mirrors the engine's constructor"
    )]
    pub fn new() -> Self {
        MemTable(memtable::MemTable::new(
            0,
            0,
            crate::Options::default().write_buffer_bytes,
        ))
    }

    /// Inserts one entry; each insert takes a new sequence number.
    #[inline]
    pub fn insert(&self, sequence: SequenceNumber, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.0.insert(sequence, kind, user_key, value);
    }

    /// The newest version of `user_key` with a sequence number `<= sequence`.
    #[inline]
    pub fn get(&self, user_key: &[u8], sequence: SequenceNumber) -> Lookup {
        self.0.get(user_key, sequence).into()
    }

    /// Estimated memory use in bytes.
    pub fn approximate_bytes(&self) -> usize {
        self.0.approximate_bytes()
    }
}

/// The engine's table-file writer (`table/builder.rs`), writing table `number` in a directory
/// through the real file system.
pub struct TableBuilder(table::TableBuilder);

impl TableBuilder {
    /// Creates table file `number` in `dir` with the given data-block size and restart interval.
    pub fn create(
        dir: &Path,
        number: u64,
        block_bytes: usize,
        restart_interval: usize,
    ) -> Result<Self> {
        let path = dir.join(table_file_name(number));
        let file = RealFileSystem.create_writable(&path)?;
        Ok(TableBuilder(table::TableBuilder::new(
            path,
            file,
            block_bytes,
            restart_interval,
        )))
    }

    /// Appends an entry; `key` is an internal key greater than every key added before.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.add(key, value)
    }

    /// Writes the filter (`bits_per_key`, 0 = none), properties, index and footer, and fsyncs.
    /// Returns the file's size in bytes.
    pub fn finish(self, bits_per_key: f64, level: u64) -> Result<u64> {
        self.0
            .finish(bits_per_key, level, 0)
            .map(|summary| summary.file_bytes)
    }
}

/// The engine's table cache over a directory on the real file system, with its own block cache
/// and I/O counters.
pub struct TableCache {
    tables: table::TableCache,
    block_cache: Arc<BlockCache>,
}

impl TableCache {
    /// Table readers for the files in `dir`, sharing a block cache of `block_cache_bytes`
    /// (buffered reads).
    pub fn new(dir: PathBuf, block_cache_bytes: u64) -> Self {
        let block_cache = Arc::new(BlockCache::new(block_cache_bytes));
        let tables = table::TableCache::new(
            dir,
            Arc::new(RealFileSystem),
            100,
            Arc::clone(&block_cache),
            Arc::new(IoCounters::default()),
            false,
        );
        TableCache {
            tables,
            block_cache,
        }
    }

    /// A new reader of table `number`, opened unpinned (index and filter go through the cache).
    pub fn get(&self, number: u64) -> Result<TableReader> {
        self.tables.open(number, false).map(TableReader)
    }

    /// Bytes currently held by the block cache.
    pub fn block_cache_used_bytes(&self) -> u64 {
        self.block_cache.used_bytes()
    }
}

/// An open table file (`table/reader.rs`).
pub struct TableReader(Arc<reader::TableReader>);

impl TableReader {
    /// `TableReader::get`: a point lookup through the filter, the index and one data block, each
    /// from the block cache or the file. `lookup_key` is [`lookup_key`] of `user_key`, `key_hash`
    /// its [`key_hash`] (the read path computes both once per `Db::get`).
    #[inline]
    pub fn get(
        &self,
        lookup_key: &[u8],
        user_key: &[u8],
        key_hash: u64,
        level: usize,
        skip_filter: bool,
    ) -> Result<Lookup> {
        self.0
            .get(
                lookup_key,
                user_key,
                key_hash,
                level,
                if skip_filter {
                    crate::alloc::ModulesInUse::NONE
                } else {
                    crate::alloc::ModulesInUse::ALL
                },
            )
            .map(|found| found.result.into())
    }
}
