//! Reads a table file: point lookups through the filter, index and one data block; every block
//! verified by its CRC32C on every read from the device, and cached in the shared block cache.
//!
//! I/O accounting happens here, where the device is touched: a block-cache miss is one block read
//! of its kind (data, index, filter) on the level the caller names.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use quick_cache::sync::Cache;

use super::block::{Block, BlockIter};
use super::format::{verify_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use super::properties::TableProperties;
use super::table_file_name;
use crate::cache::{BlockCache, CachedBlock};
use crate::coding::Decoder;
use crate::env::{FileSystem, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filter::bloom::BloomFilter;
use crate::key::{compare_internal_keys, parse_internal_key, ValueKind};
use crate::memtable::Lookup;
use crate::stats::{add, BlockKind, IoCounters};

/// How a block is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// Through the block cache; misses count as device reads of the lookup/scan path.
    Cached { level: usize },
    /// Straight from the file, not cached (compaction input); counts compaction bytes read.
    Compaction,
}

/// An open table file.
pub(crate) struct TableReader {
    number: u64,
    path: PathBuf,
    file: Arc<dyn RandomAccessFile>,
    footer: Footer,
    properties: TableProperties,
    cache: Arc<BlockCache>,
    counters: Arc<IoCounters>,
    /// Index and filter held outside the cache (level-0 pinning).
    pinned_index: Option<Arc<Block>>,
    pinned_filter: Option<Arc<BloomFilter>>,
    /// Shared total of pinned bytes, decremented when this reader closes.
    pinned_total: Option<Arc<AtomicU64>>,
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if let Some(total) = &self.pinned_total {
            total.fetch_sub(self.pinned_bytes(), AtomicOrdering::Relaxed);
        }
    }
}

/// The result of looking a key up in one file.
pub(crate) struct FileLookup {
    pub(crate) result: Lookup,
}

impl TableReader {
    /// Opens table `number` in `dir`; reads and checks the footer and properties, and pins the
    /// index and filter blocks if `pin` is set.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        direct_reads: bool,
        cache: Arc<BlockCache>,
        counters: Arc<IoCounters>,
        pin: bool,
    ) -> Result<TableReader> {
        let path = dir.join(table_file_name(number));
        let file = fs.open_random_access(&path, direct_reads)?;
        let len = file.len();
        if len < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file of {len} bytes is too short to be a table"),
            ));
        }
        let footer_offset = len - FOOTER_LEN as u64;
        let footer_bytes = file.read_at(footer_offset, FOOTER_LEN)?;
        let footer = Footer::decode(&footer_bytes)
            .and_then(|footer| footer.check_bounds(len).map(|()| footer))
            .map_err(|reason| Error::corruption(&path, footer_offset, reason))?;
        let properties_raw = read_raw(file.as_ref(), &path, footer.properties)?;
        let properties = TableProperties::decode(&properties_raw)
            .map_err(|reason| Error::corruption(&path, footer.properties.offset, reason))?;
        let mut reader = TableReader {
            number,
            path,
            file,
            footer,
            properties,
            cache,
            counters,
            pinned_index: None,
            pinned_filter: None,
            pinned_total: None,
        };
        if pin {
            let index = reader.read_raw(reader.footer.index)?;
            reader.pinned_index = Some(Arc::new(reader.decode_block(index, reader.footer.index)?));
            if let Some(handle) = reader.footer.filter_handle() {
                let raw = reader.read_raw(handle)?;
                reader.pinned_filter = Some(Arc::new(reader.decode_filter(raw, handle)?));
            }
        }
        Ok(reader)
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    #[allow(
        dead_code,
        reason = "read by `strata inspect` and the filter policies (issue 5)"
    )]
    pub(crate) fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// Bytes of blocks held outside the cache.
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.pinned_index
            .as_ref()
            .map_or(0, |b| b.size_bytes() as u64)
            + self
                .pinned_filter
                .as_ref()
                .map_or(0, |f| f.size_bytes() as u64)
    }

    fn read_raw(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        read_raw(self.file.as_ref(), &self.path, handle)
    }

    fn decode_block(&self, contents: Vec<u8>, handle: BlockHandle) -> Result<Block> {
        Block::decode(contents)
            .map_err(|reason| Error::corruption(&self.path, handle.offset, reason))
    }

    fn decode_filter(&self, contents: Vec<u8>, handle: BlockHandle) -> Result<BloomFilter> {
        BloomFilter::decode(contents)
            .map_err(|reason| Error::corruption(&self.path, handle.offset, reason))
    }

    fn count_read(&self, kind: BlockKind, mode: ReadMode, handle: BlockHandle) {
        let bytes = handle.size + BLOCK_TRAILER_LEN as u64;
        match mode {
            ReadMode::Cached { level } => self.counters.count_block_read(kind, level, bytes),
            ReadMode::Compaction => add(&self.counters.compaction_read_bytes, bytes),
        }
    }

    /// A data or index block, from the cache or the device.
    pub(crate) fn sorted_block(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        mode: ReadMode,
    ) -> Result<Arc<Block>> {
        self.sorted_block_traced(handle, kind, mode)
            .map(|(block, _)| block)
    }

    /// Like `sorted_block`, also telling whether the block came from the device.
    fn sorted_block_traced(
        &self,
        handle: BlockHandle,
        kind: BlockKind,
        mode: ReadMode,
    ) -> Result<(Arc<Block>, bool)> {
        if kind == BlockKind::Index {
            if let Some(index) = &self.pinned_index {
                return Ok((Arc::clone(index), false));
            }
        }
        if let ReadMode::Cached { .. } = mode {
            if let Some(CachedBlock::Sorted(block)) = self.cache.get(self.number, handle.offset) {
                self.counters.count_cache_hit(kind);
                return Ok((block, false));
            }
        }
        let raw = self.read_raw(handle)?;
        self.count_read(kind, mode, handle);
        let block = Arc::new(self.decode_block(raw, handle)?);
        if let ReadMode::Cached { .. } = mode {
            self.cache.insert(
                self.number,
                handle.offset,
                CachedBlock::Sorted(Arc::clone(&block)),
            );
        }
        Ok((block, true))
    }

    fn filter(&self, handle: BlockHandle, level: usize) -> Result<Arc<BloomFilter>> {
        if let Some(filter) = &self.pinned_filter {
            return Ok(Arc::clone(filter));
        }
        if let Some(CachedBlock::Filter(filter)) = self.cache.get(self.number, handle.offset) {
            self.counters.count_cache_hit(BlockKind::Filter);
            return Ok(filter);
        }
        let raw = self.read_raw(handle)?;
        self.count_read(BlockKind::Filter, ReadMode::Cached { level }, handle);
        let filter = Arc::new(self.decode_filter(raw, handle)?);
        self.cache.insert(
            self.number,
            handle.offset,
            CachedBlock::Filter(Arc::clone(&filter)),
        );
        Ok(filter)
    }

    /// An iterator over the index block.
    pub(crate) fn index_iter(&self, mode: ReadMode) -> Result<BlockIter> {
        let index = self.sorted_block(self.footer.index, BlockKind::Index, mode)?;
        Ok(BlockIter::new(index, compare_internal_keys))
    }

    /// Decodes a data-block handle stored in the index.
    pub(crate) fn decode_handle(&self, value: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_from(&mut Decoder::new(value)).ok_or_else(|| {
            Error::corruption(
                &self.path,
                self.footer.index.offset,
                "malformed block handle in index",
            )
        })
    }

    pub(crate) fn block_error(&self, iter: &BlockIter, handle: BlockHandle) -> Result<()> {
        match iter.error() {
            Some(reason) => Err(Error::corruption(
                &self.path,
                handle.offset,
                reason.to_string(),
            )),
            None => Ok(()),
        }
    }

    /// Looks up the newest version of `user_key` visible at the sequence encoded in `lookup_key`.
    /// `key_hash` is the key's filter hash; `skip_filter` bypasses the filter (the allocator says
    /// it is not worth probing). Counts filter probes, negatives, false positives and unnecessary
    /// data-block reads on `level`.
    pub(crate) fn get(
        &self,
        lookup_key: &[u8],
        user_key: &[u8],
        key_hash: u64,
        level: usize,
        skip_filter: bool,
    ) -> Result<FileLookup> {
        let counters = &self.counters;
        let level_slot = level.min(crate::version::MAX_LEVELS - 1);
        let mut filter_passed = false;
        if let (Some(handle), false) = (self.footer.filter_handle(), skip_filter) {
            let filter = self.filter(handle, level)?;
            add(&counters.filter_probes[level_slot], 1);
            if !filter.may_contain_hash(key_hash) {
                add(&counters.filter_negatives[level_slot], 1);
                return Ok(FileLookup {
                    result: Lookup::Absent,
                });
            }
            filter_passed = true;
        }
        let mode = ReadMode::Cached { level };
        let mut index = self.index_iter(mode)?;
        index.seek(lookup_key);
        self.block_error(&index, self.footer.index)?;
        let result = if index.valid() {
            let handle = self.decode_handle(index.value())?;
            let (block, read_from_device) =
                self.sorted_block_traced(handle, BlockKind::Data, mode)?;
            let mut iter = BlockIter::new(block, compare_internal_keys);
            iter.seek(lookup_key);
            self.block_error(&iter, handle)?;
            let found = if iter.valid() {
                let parsed = parse_internal_key(iter.key()).ok_or_else(|| {
                    Error::corruption(
                        &self.path,
                        handle.offset,
                        "malformed internal key in data block",
                    )
                })?;
                (parsed.user_key == user_key).then(|| match parsed.kind {
                    ValueKind::Value => Lookup::Found(iter.value().to_vec()),
                    ValueKind::Deletion => Lookup::Deleted,
                })
            } else {
                None
            };
            if found.is_none() && read_from_device {
                add(&counters.unnecessary_data_reads[level_slot], 1);
            }
            found.unwrap_or(Lookup::Absent)
        } else {
            Lookup::Absent
        };
        if filter_passed && result == Lookup::Absent {
            add(&counters.filter_false_positives[level_slot], 1);
        }
        Ok(FileLookup { result })
    }
}

fn read_raw(file: &dyn RandomAccessFile, path: &Path, handle: BlockHandle) -> Result<Vec<u8>> {
    let len = handle
        .len_with_trailer()
        .filter(|&len| {
            handle
                .offset
                .checked_add(len)
                .is_some_and(|end| end <= file.len())
        })
        .ok_or_else(|| {
            Error::corruption(
                path,
                handle.offset,
                "block handle points past the end of the file",
            )
        })?;
    let raw = file.read_at(handle.offset, len as usize)?;
    verify_block(raw).map_err(|reason| Error::corruption(path, handle.offset, reason))
}

/// Open table readers, bounded by `max_open_files` (least recently used closed first).
pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    readers: Cache<u64, Arc<TableReader>>,
    block_cache: Arc<BlockCache>,
    counters: Arc<IoCounters>,
    direct_reads: bool,
    pinned_total: Arc<AtomicU64>,
}

impl TableCache {
    pub(crate) fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        max_open_files: usize,
        block_cache: Arc<BlockCache>,
        counters: Arc<IoCounters>,
        direct_reads: bool,
    ) -> Self {
        TableCache {
            dir,
            fs,
            readers: Cache::new(max_open_files.max(1)),
            block_cache,
            counters,
            direct_reads,
            pinned_total: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The reader of table `number`, opening it if needed. `pin` pins its index and filter.
    pub(crate) fn get(&self, number: u64, pin: bool) -> Result<Arc<TableReader>> {
        if let Some(reader) = self.readers.get(&number) {
            // A reader first opened unpinned (say, by a compaction) is reopened pinned when a
            // lookup on a pinning level asks for it.
            if !pin || reader.pinned_index.is_some() {
                return Ok(reader);
            }
        }
        let mut reader = TableReader::open(
            self.fs.as_ref(),
            &self.dir,
            number,
            self.direct_reads,
            Arc::clone(&self.block_cache),
            Arc::clone(&self.counters),
            pin,
        )?;
        if pin {
            self.pinned_total
                .fetch_add(reader.pinned_bytes(), AtomicOrdering::Relaxed);
            reader.pinned_total = Some(Arc::clone(&self.pinned_total));
        }
        let reader = Arc::new(reader);
        self.readers.insert(number, Arc::clone(&reader));
        Ok(reader)
    }

    /// Closes table `number` (it was deleted).
    pub(crate) fn evict(&self, number: u64) {
        self.readers.remove(&number);
    }

    /// Bytes pinned by open readers.
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.pinned_total.load(AtomicOrdering::Relaxed)
    }
}
