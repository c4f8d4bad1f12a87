//! Reads a table file: point lookups through the filter, index and one data block; every block
//! verified by its CRC32C on every read from the device, and cached in the shared block cache.
//!
//! I/O accounting happens here, where the device is touched: a block-cache miss is one block read
//! of its kind (data, index, filter) on the level the caller names, of the bytes read from the
//! file (the stored, possibly compressed, block and its trailer).
//!
//! A compressed block is decompressed on the miss path, right after its checksum is verified, and
//! the block cache and pinned blocks hold it uncompressed, so a cache hit never decompresses. The
//! time spent decompressing is counted in `Stats`.
//!
//! A table's filter has zero, one or several modules (DESIGN.md §1, modular filter). Where they are is
//! learnt once, when the file is opened: a version-1 footer names the single filter block; a
//! version-2 footer names a modular filter index, read and checked at open like the properties
//! block (and, like it, not counted as a lookup's block read). Each module is a block of its own
//! on disk: its own device read, counted as a filter block read on the lookup's level, and a probe
//! reads module `j + 1` only if modules `1..=j` all said "maybe". In the block cache, though, a
//! file's modules are one entry (keyed by the first module's offset) holding the modules in use
//! that probes have read so far: a probe makes one cache lookup however many modules it passes,
//! as a single-filter file's does, and a module the entry lacks is read and the entry replaced by
//! one that holds it too. When the allocation takes modules out of use (elastic filters, DESIGN.md
//! §3.5), the next probe cuts the entry to its modules in use, and the modules cut become an entry
//! no probe looks up, which ages out unless they come back into use
//! (docs/decisions/filter-modules-one-cache-entry.md).
//!
//! A partitioned table (version-3 footer, `partition.rs`) has its top-level index read, checked
//! and decoded at open, and held by the reader for its life (counted in its pinned bytes, not as a
//! lookup's block read). A lookup searches it in memory for the one partition that can hold its
//! key, then reads that partition's filter modules and index partition as above: each partition
//! is its own block-cache entry and, on a miss, one filter or index block read. When index and
//! filter blocks are pinned, every index block or partition is read at open and held instead,
//! and each filter block (module, or module of a partition) is read by the first probe that
//! needs it and held from then on: modules no lookup probes (elastic filters' spare ones) are
//! never read.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::block::{Block, BlockIter, HandleCoding};
use super::compression::{decompress_block, BLOCK_TYPE_UNCOMPRESSED};
use super::format::{
    verify_stored_block, BlockHandle, Footer, IndexKeys, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::partition::PartitionIndex;
use super::properties::TableProperties;
use super::readahead::{Readahead, ScanReadahead};
use super::table_file_name;
use crate::cache::{BlockCache, CachedBlock};
use crate::env::{FileSystem, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filter::modular::decode_index;
use crate::filter::modular::ModulesInUse;
use crate::filter::range::RangeFilter;
use crate::filter::Filter;
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
    /// The filter modules' blocks in probe order; empty when the table has no filter or is
    /// partitioned.
    filter_modules: Vec<BlockHandle>,
    /// A partitioned table's top-level index (`partition.rs`), always held.
    partitions: Option<PartitionIndex>,
    /// Where the data blocks end: the first byte of any other block.
    data_end: u64,
    /// True when index and filter blocks are held outside the cache.
    pinned: bool,
    /// When pinned: the index block, or every index partition in order; empty otherwise.
    pinned_index: Vec<Arc<Block>>,
    /// When pinned: a slot for every filter module in probe order, or every filter partition
    /// (partition-major, as [`PartitionIndex::all_filter_handles`]), filled by the first probe
    /// that reads it and held for the reader's life; empty otherwise. Filled lazily because a
    /// file's modules are not all in use (elastic filters keep spare ones on disk, DESIGN.md §3.5):
    /// pinning every module at open would hold the bits on disk, not the budget in use. When
    /// the allocation takes held modules out of use, the engine replaces the reader with a copy
    /// that holds only the modules in use ([`TableReader::without_filters_out_of_use`]), so a
    /// probe reads a slot with one plain load.
    pinned_filters: Vec<OnceLock<Arc<Filter>>>,
    /// When pinned: the modules in use this reader was last checked against
    /// ([`ModulesInUse::code`]; `u64::MAX` before any), so the engine's sweep after a refresh
    /// that moved nothing costs one load per file.
    pinned_layout: AtomicU64,
    /// Set when a probe pins a block that `pinned_layout` does not have in use (a lookup that
    /// chose its modules before the allocation moved), so the next sweep looks again.
    pinned_out_of_use: AtomicBool,
    /// The file's range filter (`filter/range.rs`), read, checked and decoded at open and held
    /// for the reader's life, like a partitioned table's top-level index: a bounded iterator
    /// asks it before it reads anything of the file.
    range_filter: Option<RangeFilter>,
    /// The table cache's count of open readers and pinned bytes, decremented when this reader
    /// closes (`None` for readers opened outside the cache: `strata check`, fuzzing).
    open_readers: Option<Arc<OpenReaders>>,
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if let Some(open) = &self.open_readers {
            open.readers.fetch_sub(1, AtomicOrdering::Relaxed);
            open.pinned_bytes
                .fetch_sub(self.pinned_bytes(), AtomicOrdering::Relaxed);
            open.range_filter_bytes
                .fetch_sub(self.range_filter_bytes(), AtomicOrdering::Relaxed);
        }
    }
}

thread_local! {
    /// The key buffers of the index and data block iterators of this thread's last point lookup
    /// (`TableReader::get`), reused so that a lookup allocates nothing but the value it returns.
    static LOOKUP_KEY_BUFFERS: Cell<(Vec<u8>, Vec<u8>)> =
        const { Cell::new((Vec::new(), Vec::new())) };
}

/// The result of looking a key up in one file.
pub(crate) struct FileLookup {
    pub(crate) result: Lookup,
    /// `Some(from_device)` when the lookup read a data block (from the device when the block
    /// cache did not hold it); `None` when the filter or the index answered.
    pub(crate) data_block: Option<bool>,
    /// True when the file has a filter that the lookup did not probe (the allocator had no
    /// module of it in use where the key falls).
    pub(crate) filter_skipped: bool,
}

impl TableReader {
    /// Opens table `number` in `dir` for a one-off read by a tool (check, repair's salvage):
    /// buffered reads, nothing pinned, a private cache of 0 bytes and private counters, so
    /// nothing it reads is kept or counted in a database's statistics.
    pub(crate) fn open_uncounted(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
    ) -> Result<TableReader> {
        TableReader::open(
            fs,
            dir,
            number,
            false,
            Arc::new(BlockCache::new(0)),
            Arc::new(IoCounters::default()),
            false,
        )
    }

    /// Opens table `number` in `dir`; reads and checks the footer, properties and modular filter
    /// index, and pins the index and all filter modules if `pin` is set.
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
        let footer = read_footer(file.as_ref(), &path)?;
        let properties_raw = read_block(file.as_ref(), &path, footer.properties, None)?;
        let properties = TableProperties::decode(&properties_raw)
            .map_err(|reason| Error::corruption(&path, footer.properties.offset, reason))?;
        let partitions = read_partition_index(file.as_ref(), &path, &footer, &properties)?;
        let filter_modules = filter_modules(file.as_ref(), &path, &footer)?;
        if partitions.is_none() && properties.filter_modules != filter_modules.len() as u64 {
            return Err(Error::corruption(
                &path,
                footer.properties.offset,
                format!(
                    "properties say {} filter modules but the footer locates {}",
                    properties.filter_modules,
                    filter_modules.len()
                ),
            ));
        }
        let range_filter = read_range_filter(file.as_ref(), &path, &footer, &properties)?;
        let data_end = data_end(
            &footer,
            &filter_modules,
            partitions.as_ref(),
            properties.range_filter,
        );
        let mut reader = TableReader {
            number,
            path,
            file,
            footer,
            properties,
            cache,
            counters,
            filter_modules,
            partitions,
            data_end,
            pinned: false,
            pinned_index: Vec::new(),
            pinned_filters: Vec::new(),
            pinned_layout: AtomicU64::new(u64::MAX),
            pinned_out_of_use: AtomicBool::new(false),
            range_filter,
            open_readers: None,
        };
        if pin {
            reader.pin_index_and_filter_slots()?;
        }
        Ok(reader)
    }

    /// Reads and holds every index block (or partition), and makes an empty slot for every
    /// filter block, which the first probe that needs it fills.
    fn pin_index_and_filter_slots(&mut self) -> Result<()> {
        let mut pinned_index = Vec::new();
        for handle in self.index_block_handles() {
            let raw = self.read_raw(handle)?;
            pinned_index.push(Arc::new(self.decode_block(raw, handle)?));
        }
        self.pinned_filters = self
            .filter_block_handles()
            .iter()
            .map(|_| OnceLock::new())
            .collect();
        self.pinned_index = pinned_index;
        self.pinned = true;
        Ok(())
    }

    /// Counts this reader, and the bytes it pins, in `open` until it drops.
    pub(crate) fn counted_in(mut self, open: Arc<OpenReaders>) -> Self {
        open.readers.fetch_add(1, AtomicOrdering::Relaxed);
        open.pinned_bytes
            .fetch_add(self.pinned_bytes(), AtomicOrdering::Relaxed);
        open.range_filter_bytes
            .fetch_add(self.range_filter_bytes(), AtomicOrdering::Relaxed);
        self.open_readers = Some(open);
        self
    }

    /// False only if the file's range filter says no key of the file lies in `[lo, hi]` (both
    /// inclusive); true for a file without one.
    pub(crate) fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.range_filter
            .as_ref()
            .is_none_or(|filter| filter.may_contain_range(lo, hi))
    }

    /// True if the file has a range filter.
    pub(crate) fn has_range_filter(&self) -> bool {
        self.range_filter.is_some()
    }

    /// Memory of the decoded range filter (0 without one).
    pub(crate) fn range_filter_bytes(&self) -> u64 {
        self.range_filter
            .as_ref()
            .map_or(0, |filter| filter.memory_bytes() as u64)
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// True if the index and filter blocks are held outside the block cache.
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// The filter's family (from its first module block's format byte; Bloom when there is no
    /// filter or the block cannot be read) and key-range partitions (`table/partition.rs`; 1
    /// for an unpartitioned file or one without a filter).
    pub(crate) fn filter_layout(&self) -> crate::FilterLayout {
        let partitions = match &self.partitions {
            Some(partitions) if partitions.modules() > 0 => {
                u32::try_from(partitions.len()).unwrap_or(u32::MAX)
            }
            _ => 1,
        };
        let family = self
            .filter_block_handles()
            .first()
            .and_then(|&handle| self.file.read_at(handle.offset, 1).ok())
            .and_then(|bytes| bytes.first().copied())
            .map_or(crate::FilterFamily::Bloom, |byte| {
                if byte == crate::filter::ribbon::FORMAT_VERSION
                    || byte == crate::filter::ribbon::SHARED_FORMAT_VERSION
                {
                    crate::FilterFamily::Ribbon
                } else {
                    crate::FilterFamily::Bloom
                }
            });
        crate::FilterLayout { family, partitions }
    }

    #[allow(dead_code, reason = "read by `strata inspect` and the filter policies")]
    pub(crate) fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The footer (read by `strata::check`, which walks every block it names).
    pub(crate) fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Every filter block: the filter modules in probe order, or every filter partition of a
    /// partitioned table (empty without a filter).
    pub(crate) fn filter_block_handles(&self) -> &[BlockHandle] {
        match &self.partitions {
            Some(partitions) => partitions.all_filter_handles(),
            None => &self.filter_modules,
        }
    }

    /// Every index block: the one index block, or every index partition in key order.
    pub(crate) fn index_block_handles(&self) -> Vec<BlockHandle> {
        match &self.partitions {
            Some(partitions) => partitions.all_index_handles().to_vec(),
            None => vec![self.footer.index],
        }
    }

    /// A partitioned table's top-level index; `None` for an unpartitioned table.
    pub(crate) fn partitions(&self) -> Option<&PartitionIndex> {
        self.partitions.as_ref()
    }

    /// The file's length in bytes.
    pub(crate) fn file_len(&self) -> u64 {
        self.file.len()
    }

    /// Reads filter block `handle` (a module or a filter partition) from the device, bypassing the
    /// cache and the counters, and decodes it: `strata::check` verifies every block, including
    /// filters lookups may skip.
    pub(crate) fn verify_filter_module(&self, handle: BlockHandle) -> Result<()> {
        let raw = self.read_raw(handle)?;
        self.decode_filter(raw, handle).map(|_| ())
    }

    /// Bytes of blocks held outside the cache (filter blocks once a probe has read them).
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.partitions
            .as_ref()
            .map_or(0, |partitions| partitions.size_bytes() as u64)
            + self
                .pinned_index
                .iter()
                .map(|b| b.size_bytes() as u64)
                .sum::<u64>()
            + self
                .pinned_filters
                .iter()
                .filter_map(OnceLock::get)
                .map(|f| f.size_bytes() as u64)
                .sum::<u64>()
    }

    /// True if filter block `slot` (its place in [`TableReader::filter_block_handles`]) is
    /// probed under `in_use`.
    fn filter_slot_in_use(&self, slot: usize, in_use: ModulesInUse) -> bool {
        match &self.partitions {
            None => slot < in_use.in_partition(0, 1),
            Some(partitions) => {
                let modules = partitions.modules().max(1);
                slot % modules < in_use.in_partition(slot / modules, partitions.len())
            }
        }
    }

    /// A copy of this reader that holds only the pinned filter blocks `in_use` probes, or `None`
    /// when it holds none that `in_use` does not (or is not pinned). When the allocator takes
    /// modules out of use (elastic filters moving the budget, DESIGN.md §3.5), the engine puts the
    /// copy in the file's slot (`TableCache::trim_pinned_filters`) and the blocks out of use go
    /// with the old reader once the lookups in it finish: pinned filter memory follows the
    /// modules in use, and a probe still reads a pinned block with one plain load. The copy
    /// shares the file, the pinned index and the blocks it keeps; it is not counted anywhere until
    /// [`TableReader::counted_in`].
    pub(crate) fn without_filters_out_of_use(&self, in_use: ModulesInUse) -> Option<TableReader> {
        if self.pinned_filters.is_empty() {
            return None;
        }
        let code = in_use.code();
        // Cleared before the scan: a block pinned out of use after it sets the flag again.
        let stray = self.pinned_out_of_use.swap(false, AtomicOrdering::SeqCst);
        if self.pinned_layout.swap(code, AtomicOrdering::SeqCst) == code && !stray {
            return None;
        }
        let held_out_of_use = self
            .pinned_filters
            .iter()
            .enumerate()
            .any(|(slot, held)| held.get().is_some() && !self.filter_slot_in_use(slot, in_use));
        if !held_out_of_use {
            return None;
        }
        let pinned_filters = self
            .pinned_filters
            .iter()
            .enumerate()
            .map(|(slot, held)| match held.get() {
                Some(filter) if self.filter_slot_in_use(slot, in_use) => {
                    OnceLock::from(Arc::clone(filter))
                }
                _ => OnceLock::new(),
            })
            .collect();
        Some(TableReader {
            number: self.number,
            path: self.path.clone(),
            file: Arc::clone(&self.file),
            footer: self.footer,
            properties: self.properties.clone(),
            cache: Arc::clone(&self.cache),
            counters: Arc::clone(&self.counters),
            filter_modules: self.filter_modules.clone(),
            partitions: self.partitions.clone(),
            data_end: self.data_end,
            pinned: self.pinned,
            pinned_index: self.pinned_index.clone(),
            pinned_filters,
            pinned_layout: AtomicU64::new(code),
            pinned_out_of_use: AtomicBool::new(false),
            range_filter: self.range_filter.clone(),
            open_readers: None,
        })
    }

    /// Reads, verifies and (if stored compressed) decompresses the block at `handle`.
    fn read_raw(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        read_block(self.file.as_ref(), &self.path, handle, Some(&self.counters))
    }

    fn decode_block(&self, contents: Vec<u8>, handle: BlockHandle) -> Result<Block> {
        Block::decode(contents)
            .map_err(|reason| Error::corruption(&self.path, handle.offset, reason))
    }

    fn decode_filter(&self, contents: Vec<u8>, handle: BlockHandle) -> Result<Filter> {
        Filter::decode(contents)
            .map_err(|reason| Error::corruption(&self.path, handle.offset, reason))
    }

    /// Reads the block at `handle` (as `read_raw`) and counts the read: a lookup's or scan's
    /// (`ReadMode::Cached`) with its elapsed time, a compaction's in its read bytes.
    fn read_counted(
        &self,
        kind: BlockKind,
        mode: ReadMode,
        handle: BlockHandle,
    ) -> Result<Vec<u8>> {
        let bytes = handle.size + BLOCK_TRAILER_LEN as u64;
        match mode {
            ReadMode::Cached { level } => {
                let start = Instant::now();
                let raw = self.read_raw(handle)?;
                let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.counters.count_block_read(kind, level, bytes, nanos);
                Ok(raw)
            }
            ReadMode::Compaction => {
                let raw = self.read_raw(handle)?;
                add(&self.counters.compaction_read_bytes, bytes);
                Ok(raw)
            }
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
        if let ReadMode::Cached { .. } = mode {
            if let Some(CachedBlock::Sorted(block)) = self.cache.get(self.number, handle.offset) {
                self.counters.count_cache_hit(kind);
                return Ok((block, false));
            }
        }
        let raw = self.read_counted(kind, mode, handle)?;
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

    /// A data block read through `readahead` for a front-to-back walk (a compaction input): not
    /// cached, and the compaction read counter is charged what the window actually read.
    /// The counters this reader charges its reads to.
    pub(crate) fn counters(&self) -> Arc<IoCounters> {
        Arc::clone(&self.counters)
    }

    pub(crate) fn sequential_block(
        &self,
        handle: BlockHandle,
        readahead: &mut Readahead,
    ) -> Result<Arc<Block>> {
        let len = block_len(self.file.as_ref(), &self.path, handle)?;
        let before = readahead.bytes_read();
        let raw = readahead.read(self.file.as_ref(), handle.offset, len, self.data_end())?;
        check_full_read(&raw, len, &self.path, handle)?;
        add(
            &self.counters.compaction_read_bytes,
            readahead.bytes_read() - before,
        );
        let contents = decode_stored_block(raw, &self.path, handle, Some(&self.counters))?;
        Ok(Arc::new(self.decode_block(contents, handle)?))
    }

    /// A data block for a scan that reads ahead (`ScanReadahead`, `Options::scan_readahead_max_bytes`):
    /// from the block cache, or on a miss, once the scan's loads of this file have been
    /// sequential, from the read-ahead window (one device read fills it with the block and the
    /// blocks after it, counted as one data block read on `level` of all its bytes; a block
    /// taken from the window is counted as such, not as a device read). Until the loads are
    /// sequential the block is read alone, as [`TableReader::sorted_block`]. The block enters the
    /// cache either way, so turning read-ahead on or off changes how a scan's misses reach the
    /// device, not what the cache holds afterwards. Its checksum is checked when it is taken.
    pub(crate) fn scan_block(
        &self,
        handle: BlockHandle,
        level: usize,
        readahead: &mut ScanReadahead,
    ) -> Result<Arc<Block>> {
        let mode = ReadMode::Cached { level };
        let len = block_len(self.file.as_ref(), &self.path, handle)?;
        if !readahead.observe(handle.offset, len as u64) {
            return self.sorted_block(handle, BlockKind::Data, mode);
        }
        if let Some(CachedBlock::Sorted(block)) = self.cache.get(self.number, handle.offset) {
            self.counters.count_cache_hit(BlockKind::Data);
            return Ok(block);
        }
        let start = Instant::now();
        let (raw, fresh) =
            readahead.read(self.file.as_ref(), handle.offset, len, self.data_end())?;
        let contents = check_full_read(&raw, len, &self.path, handle)
            .and_then(|()| decode_stored_block(raw, &self.path, handle, Some(&self.counters)));
        if fresh > 0 {
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.counters.count_readahead_read(level, fresh, nanos);
        } else {
            self.counters.count_readahead_block();
        }
        let block = Arc::new(self.decode_block(contents?, handle)?);
        self.cache.insert(
            self.number,
            handle.offset,
            CachedBlock::Sorted(Arc::clone(&block)),
        );
        Ok(block)
    }

    /// Where the data blocks end: the first byte of the filter modules or partitions, the
    /// modular filter index, the properties, the index block or partitions, or the top-level
    /// index, whichever the builder placed first.
    pub(crate) fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Whether pinned filter block `slot` (a module, or a module of a filter partition; its
    /// place in [`TableReader::filter_block_handles`]) at `handle` may hold `key_hash`: probed in
    /// place (one load, no reference count taken), or, on its first probe, read from the device,
    /// counted as one filter block read on `level`, and held.
    fn pinned_filter_may_contain(
        &self,
        held: &OnceLock<Arc<Filter>>,
        slot: usize,
        handle: BlockHandle,
        level: usize,
        key_hash: u64,
    ) -> Result<bool> {
        if let Some(filter) = held.get() {
            return Ok(filter.may_contain_hash(key_hash));
        }
        // First probe of this block: read, count and hold it (two probes racing both read
        // it; one copy is kept and counted in the pinned bytes).
        let raw = self.read_counted(BlockKind::Filter, ReadMode::Cached { level }, handle)?;
        let filter = Arc::new(self.decode_filter(raw, handle)?);
        let may_contain = filter.may_contain_hash(key_hash);
        let size = filter.size_bytes() as u64;
        if held.set(filter).is_ok() {
            if let Some(open) = &self.open_readers {
                open.pinned_bytes.fetch_add(size, AtomicOrdering::Relaxed);
            }
            // A lookup that chose its modules before the allocation moved may pin a block
            // the reader was trimmed to go without: the next sweep replaces the reader again.
            let layout = self.pinned_layout.load(AtomicOrdering::SeqCst);
            if ModulesInUse::from_code(layout)
                .is_some_and(|in_use| !self.filter_slot_in_use(slot, in_use))
            {
                self.pinned_out_of_use.store(true, AtomicOrdering::SeqCst);
            }
        }
        Ok(may_contain)
    }

    /// Index block `slot` (the index block, or an index partition; its place in
    /// [`TableReader::index_block_handles`]) at `handle`: pinned, cached or read, and whether it
    /// came from the device.
    pub(super) fn index_block_traced(
        &self,
        slot: usize,
        handle: BlockHandle,
        mode: ReadMode,
    ) -> Result<(Arc<Block>, bool)> {
        if let Some(block) = self.pinned_index.get(slot) {
            return Ok((Arc::clone(block), false));
        }
        self.sorted_block_traced(handle, BlockKind::Index, mode)
    }

    /// Index partition `partition` of a partitioned table, with its handle.
    pub(crate) fn index_partition(
        &self,
        partition: usize,
        mode: ReadMode,
    ) -> Result<(Arc<Block>, BlockHandle)> {
        let handle = self
            .partitions
            .as_ref()
            .and_then(|partitions| partitions.index_handle(partition))
            .ok_or_else(|| {
                Error::corruption(
                    &self.path,
                    self.footer.index.offset,
                    format!("no index partition {partition}"),
                )
            })?;
        let (block, _) = self.index_block_traced(partition, handle, mode)?;
        Ok((block, handle))
    }

    /// An iterator over index block (or partition) `block` in the file's index order, decoding
    /// its handles; keys are rebuilt in `key_buffer`.
    pub(crate) fn index_block_iter(&self, block: Arc<Block>, key_buffer: Vec<u8>) -> BlockIter {
        let format = self.footer.index_format();
        BlockIter::with_key_buffer(block, format.keys.comparator(), key_buffer)
            .decoding_handles(HandleCoding::of(format.delta_handles))
    }

    /// How the file's index keys are stored and ordered.
    pub(crate) fn index_keys(&self) -> IndexKeys {
        self.footer.index_format().keys
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
    /// `key_hash` is the key's filter hash; `in_use` says how many of the filter's modules to
    /// probe, in order, in the partition that covers the key ([`ModulesInUse::NONE`] bypasses
    /// the filter: the allocator says it is not worth probing; [`ModulesInUse::ALL`] probes
    /// every module; elastic filters, DESIGN.md §3.5, probe a prefix). Counts filter probes,
    /// negatives, false positives and unnecessary data-block reads on `level`.
    pub(crate) fn get(
        &self,
        lookup_key: &[u8],
        user_key: &[u8],
        key_hash: u64,
        level: usize,
        in_use: ModulesInUse,
    ) -> Result<FileLookup> {
        let counters = &self.counters;
        let level_slot = level.min(crate::limits::MAX_LEVELS - 1);
        let Some(target) = self.lookup_target(lookup_key, in_use) else {
            return Ok(self.above_every_partition(level_slot, in_use));
        };
        let skip_filter = target.filter_modules == 0;
        let mut filter_passed = false;
        if !target.filter_handles.is_empty() && !skip_filter {
            // One probe per file lookup, however many modules it reads (DESIGN.md §1: module j + 1 is
            // read only if modules 1..=j all said "maybe").
            add(&counters.filter_probes[level_slot], 1);
            if !self.filter_modules_may_contain(&target, level, key_hash)? {
                add(&counters.filter_negatives[level_slot], 1);
                return Ok(FileLookup {
                    result: Lookup::Absent,
                    data_block: None,
                    filter_skipped: false,
                });
            }
            filter_passed = true;
        }
        let (result, data_block) =
            self.search_blocks(&target, lookup_key, user_key, level, level_slot)?;
        if filter_passed && result == Lookup::Absent {
            add(&counters.filter_false_positives[level_slot], 1);
        }
        Ok(FileLookup {
            result,
            data_block,
            filter_skipped: skip_filter && !target.filter_handles.is_empty(),
        })
    }

    /// The index block and filter modules that can answer a lookup of `lookup_key`: the
    /// file's, or those of the one partition whose keys cover it. `None` when the key is above
    /// every partition of a partitioned file.
    #[inline]
    fn lookup_target(&self, lookup_key: &[u8], in_use: ModulesInUse) -> Option<LookupTarget<'_>> {
        match &self.partitions {
            None => Some(LookupTarget {
                index_slot: 0,
                index_handle: self.footer.index,
                filter_slot: 0,
                filter_handles: self.filter_modules.as_slice(),
                filter_modules: in_use.in_partition(0, 1),
            }),
            Some(partitions) => {
                let partition = partitions.find(lookup_key)?;
                Some(LookupTarget {
                    index_slot: partition,
                    index_handle: partitions.index_handle(partition).unwrap_or_default(),
                    filter_slot: partition * partitions.modules(),
                    filter_handles: partitions.filter_handles(partition),
                    filter_modules: in_use.in_partition(partition, partitions.len()),
                })
            }
        }
    }

    /// A lookup key above every key of a partitioned file: the top-level index answers without
    /// a read, counted as the filter's negative when there is a filter to ask.
    #[cold]
    fn above_every_partition(&self, level_slot: usize, in_use: ModulesInUse) -> FileLookup {
        let modules = self.partitions.as_ref().map_or(0, PartitionIndex::modules);
        let skip_filter = in_use.is_none();
        if modules > 0 && !skip_filter {
            add(&self.counters.filter_probes[level_slot], 1);
            add(&self.counters.filter_negatives[level_slot], 1);
        }
        FileLookup {
            result: Lookup::Absent,
            data_block: None,
            filter_skipped: modules > 0 && skip_filter,
        }
    }

    /// Probes `target`'s filter modules in use, in order: false at the first that says no.
    #[inline]
    fn filter_modules_may_contain(
        &self,
        target: &LookupTarget<'_>,
        level: usize,
        key_hash: u64,
    ) -> Result<bool> {
        let in_use = target.filter_modules.min(target.filter_handles.len());
        if self.pinned_filters.is_empty() {
            return self.cached_filter_modules_may_contain(target, in_use, level, key_hash);
        }
        for (module, &handle) in target.filter_handles.iter().enumerate().take(in_use) {
            let slot = target.filter_slot + module;
            // Every filter block has a slot (`pin_index_and_filter_slots`); "maybe" is the
            // safe answer were one missing.
            let Some(held) = self.pinned_filters.get(slot) else {
                continue;
            };
            if !self.pinned_filter_may_contain(held, slot, handle, level, key_hash)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Probes the first `in_use` of `target`'s filter modules through the block cache, where
    /// they are one entry (keyed by the first module's offset) holding the modules probes have
    /// read so far, in order: one cache lookup for the whole probe, however many modules it
    /// passes, when the entry holds the modules in use ([`TableReader::refill_filter_modules`]
    /// otherwise).
    #[inline]
    fn cached_filter_modules_may_contain(
        &self,
        target: &LookupTarget<'_>,
        in_use: usize,
        level: usize,
        key_hash: u64,
    ) -> Result<bool> {
        let Some(first) = target.filter_handles.first() else {
            return Ok(true);
        };
        let Some(CachedBlock::FilterModules(held)) = self.cache.get(self.number, first.offset)
        else {
            return self.refill_filter_modules(target, &[], in_use, level, key_hash);
        };
        if held.len() != in_use {
            return self.refill_filter_modules(target, &held, in_use, level, key_hash);
        }
        Ok(self.cached_modules_may_contain(&held, key_hash))
    }

    /// [`TableReader::cached_filter_modules_may_contain`] when the file's cache entry holds
    /// `held`, not the first `in_use` modules:
    ///
    /// * more (the allocation took some out of use, DESIGN.md §3.5): the entry is cut to the
    ///   modules in use, so the cache holds and charges only those in the entry probes find, and
    ///   the rest become an entry of their own keyed by the first one's offset, which no probe
    ///   looks up and which ages out of the cache unless they come back into use;
    /// * fewer: after the modules held, a module is taken from such an entry of modules cut
    ///   earlier, or read from the device (one filter block read on `level`) only when every
    ///   module before it said "maybe" (DESIGN.md §1); the entry is then replaced by one that
    ///   holds them too.
    #[cold]
    fn refill_filter_modules(
        &self,
        target: &LookupTarget<'_>,
        held: &[Filter],
        in_use: usize,
        level: usize,
        key_hash: u64,
    ) -> Result<bool> {
        let handles = target.filter_handles;
        let Some(first) = handles.first() else {
            return Ok(true);
        };
        if held.len() > in_use {
            let (kept, cut) = held.split_at(in_use);
            self.cache.insert(
                self.number,
                first.offset,
                CachedBlock::FilterModules(kept.into()),
            );
            if let Some(cut_first) = handles.get(in_use) {
                self.cache.insert(
                    self.number,
                    cut_first.offset,
                    CachedBlock::FilterModules(cut.into()),
                );
            }
            return Ok(self.cached_modules_may_contain(kept, key_hash));
        }
        if !self.cached_modules_may_contain(held, key_hash) {
            return Ok(false);
        }
        let mut modules = Vec::with_capacity(in_use);
        modules.extend(held.iter().cloned());
        let mut may_contain = true;
        if let Some(cut_first) = handles.get(held.len()) {
            if let Some(CachedBlock::FilterModules(cut)) =
                self.cache.remove(self.number, cut_first.offset)
            {
                let (taken, rest) = cut.split_at(cut.len().min(in_use - held.len()));
                if let (Some(rest_first), false) = (handles.get(in_use), rest.is_empty()) {
                    self.cache.insert(
                        self.number,
                        rest_first.offset,
                        CachedBlock::FilterModules(rest.into()),
                    );
                }
                may_contain = self.cached_modules_may_contain(taken, key_hash);
                modules.extend(taken.iter().cloned());
            }
        }
        while may_contain && modules.len() < in_use {
            let Some(&handle) = handles.get(modules.len()) else {
                break;
            };
            let raw = self.read_counted(BlockKind::Filter, ReadMode::Cached { level }, handle)?;
            let filter = self.decode_filter(raw, handle)?;
            may_contain = filter.may_contain_hash(key_hash);
            modules.push(filter);
        }
        self.cache.insert(
            self.number,
            first.offset,
            CachedBlock::FilterModules(modules.into()),
        );
        Ok(may_contain)
    }

    /// Probes cached `modules` in order: false at the first that says no. Each module probed is
    /// a filter cache hit, all counted with one update of the shared counter.
    #[inline]
    fn cached_modules_may_contain(&self, modules: &[Filter], key_hash: u64) -> bool {
        let mut probed = 0;
        let mut may_contain = true;
        for filter in modules {
            probed += 1;
            if !filter.may_contain_hash(key_hash) {
                may_contain = false;
                break;
            }
        }
        self.counters.count_cache_hits(BlockKind::Filter, probed);
        may_contain
    }

    /// Searches `target`'s index block for the data block that may hold `lookup_key`, and that
    /// block for the key: what the file holds for `user_key`, and `Some(from_device)` if a
    /// data block was read. Reuses this thread's key buffers ([`LOOKUP_KEY_BUFFERS`]).
    #[inline]
    fn search_blocks(
        &self,
        target: &LookupTarget<'_>,
        lookup_key: &[u8],
        user_key: &[u8],
        level: usize,
        level_slot: usize,
    ) -> Result<(Lookup, Option<bool>)> {
        let mode = ReadMode::Cached { level };
        // A buffer lost to an error below is simply allocated again by the next lookup.
        let (index_key_buffer, mut data_key_buffer) = LOOKUP_KEY_BUFFERS.take();
        let (index_block, _) =
            self.index_block_traced(target.index_slot, target.index_handle, mode)?;
        let mut index = self.index_block_iter(index_block, index_key_buffer);
        index.seek(self.index_keys().seek_key(lookup_key));
        self.block_error(&index, target.index_handle)?;
        let mut data_block = None;
        let result = if index.valid() {
            let handle = index.handle();
            let (block, read_from_device) =
                self.sorted_block_traced(handle, BlockKind::Data, mode)?;
            data_block = Some(read_from_device);
            let mut iter =
                BlockIter::with_key_buffer(block, compare_internal_keys, data_key_buffer);
            iter.seek(lookup_key);
            self.block_error(&iter, handle)?;
            let found = self.entry_for(&iter, handle, user_key)?;
            if found.is_none() && read_from_device {
                add(&self.counters.unnecessary_data_reads[level_slot], 1);
            }
            data_key_buffer = iter.into_key_buffer();
            found.unwrap_or(Lookup::Absent)
        } else {
            Lookup::Absent
        };
        LOOKUP_KEY_BUFFERS.set((index.into_key_buffer(), data_key_buffer));
        Ok((result, data_block))
    }

    /// What the entry `iter` (in the data block at `handle`) was sought to says of `user_key`:
    /// its value or tombstone, or `None` if the entry is another key's or there is none.
    #[inline]
    fn entry_for(
        &self,
        iter: &BlockIter,
        handle: BlockHandle,
        user_key: &[u8],
    ) -> Result<Option<Lookup>> {
        if !iter.valid() {
            return Ok(None);
        }
        let parsed = parse_internal_key(iter.key()).ok_or_else(|| {
            Error::corruption(
                &self.path,
                handle.offset,
                "malformed internal key in data block",
            )
        })?;
        Ok((parsed.user_key == user_key).then(|| match parsed.kind {
            ValueKind::Value => Lookup::Found(iter.value().to_vec()),
            ValueKind::Deletion => Lookup::Deleted,
        }))
    }
}

/// The index block and filter modules that can answer one lookup (`TableReader::lookup_target`).
struct LookupTarget<'a> {
    /// The index block's place in [`TableReader::index_block_handles`], and its handle.
    index_slot: usize,
    index_handle: BlockHandle,
    /// The first filter module's place in the reader's filter slots, the modules' blocks, and
    /// how many of them the lookup probes.
    filter_slot: usize,
    filter_handles: &'a [BlockHandle],
    filter_modules: usize,
}

/// The file's footer, checked against the file's length.
fn read_footer(file: &dyn RandomAccessFile, path: &Path) -> Result<Footer> {
    let len = file.len();
    if len < FOOTER_LEN as u64 {
        return Err(Error::corruption(
            path,
            0,
            format!("file of {len} bytes is too short to be a table"),
        ));
    }
    let footer_offset = len - FOOTER_LEN as u64;
    let footer_bytes = file.read_at(footer_offset, FOOTER_LEN)?;
    Footer::decode(&footer_bytes)
        .and_then(|footer| footer.check_bounds(len).map(|()| footer))
        .map_err(|reason| Error::corruption(path, footer_offset, reason))
}

/// A partitioned table's top-level index (`partition.rs`), read, checked and decoded; `None`
/// for a table that is not partitioned.
fn read_partition_index(
    file: &dyn RandomAccessFile,
    path: &Path,
    footer: &Footer,
    properties: &TableProperties,
) -> Result<Option<PartitionIndex>> {
    if !footer.is_partitioned() {
        return Ok(None);
    }
    let raw = read_block(file, path, footer.index, None)?;
    let blocks_end = file.len() - FOOTER_LEN as u64;
    let modules = usize::try_from(properties.filter_modules).unwrap_or(usize::MAX);
    PartitionIndex::decode(raw, modules, blocks_end, footer.index_format().keys)
        .map(Some)
        .map_err(|reason| Error::corruption(path, footer.index.offset, reason))
}

/// The file's range filter (`filter/range.rs`), if its properties name one, read, checked and
/// decoded; its block must end before the properties block.
fn read_range_filter(
    file: &dyn RandomAccessFile,
    path: &Path,
    footer: &Footer,
    properties: &TableProperties,
) -> Result<Option<RangeFilter>> {
    let Some(handle) = properties.range_filter else {
        return Ok(None);
    };
    if handle
        .len_with_trailer()
        .and_then(|len| handle.offset.checked_add(len))
        .is_none_or(|end| end > footer.properties.offset)
    {
        return Err(Error::corruption(
            path,
            footer.properties.offset,
            format!(
                "range filter block at {} of {} bytes does not end before the properties",
                handle.offset, handle.size
            ),
        ));
    }
    let raw = read_block(file, path, handle, None)?;
    RangeFilter::decode(&raw)
        .map(Some)
        .map_err(|reason| Error::corruption(path, handle.offset, reason))
}

/// Where the data blocks end: the first byte of any other block (index, properties, filter,
/// filter modules, partitions, range filter).
fn data_end(
    footer: &Footer,
    filter_modules: &[BlockHandle],
    partitions: Option<&PartitionIndex>,
    range_filter: Option<BlockHandle>,
) -> u64 {
    let mut data_end = footer.index.offset.min(footer.properties.offset);
    if footer.filter.size > 0 {
        data_end = data_end.min(footer.filter.offset);
    }
    data_end = filter_modules
        .iter()
        .fold(data_end, |end, module| end.min(module.offset));
    if let Some(partitions) = partitions {
        data_end = data_end.min(partitions.first_block_offset());
    }
    if let Some(handle) = range_filter {
        data_end = data_end.min(handle.offset);
    }
    data_end
}

/// The blocks of the table's filter modules in probe order, from the footer and, for a version-2
/// footer, the modular filter index (DESIGN.md §1). Every module must lie before the footer.
fn filter_modules(
    file: &dyn RandomAccessFile,
    path: &Path,
    footer: &Footer,
) -> Result<Vec<BlockHandle>> {
    let Some(handle) = footer.filter_handle() else {
        return Ok(Vec::new());
    };
    if !footer.has_modular_filter() {
        return Ok(vec![handle]);
    }
    let raw = read_block(file, path, handle, None)?;
    let modules =
        decode_index(&raw).map_err(|reason| Error::corruption(path, handle.offset, reason))?;
    let blocks_end = file.len().saturating_sub(FOOTER_LEN as u64);
    for (module, module_handle) in modules.iter().enumerate() {
        let end = module_handle
            .len_with_trailer()
            .and_then(|len| module_handle.offset.checked_add(len));
        if !matches!(end, Some(end) if end <= blocks_end) {
            return Err(Error::corruption(
                path,
                handle.offset,
                format!(
                    "filter module {module} (offset {}, size {}) reaches past the {blocks_end} \
                     bytes before the footer",
                    module_handle.offset, module_handle.size
                ),
            ));
        }
    }
    Ok(modules)
}

/// The length of the block at `handle` with its trailer, if it lies inside the file.
fn block_len(file: &dyn RandomAccessFile, path: &Path, handle: BlockHandle) -> Result<usize> {
    handle
        .len_with_trailer()
        .filter(|&len| {
            handle
                .offset
                .checked_add(len)
                .is_some_and(|end| end <= file.len())
        })
        .map(|len| len as usize)
        .ok_or_else(|| {
            Error::corruption(
                path,
                handle.offset,
                "block handle points past the end of the file",
            )
        })
}

/// Checks a block's stored bytes (contents and trailer, as read from the file at `handle`): its
/// checksum and type, and decompresses it if it is stored compressed, counting the
/// decompression's time and blocks in `counters` when given.
fn decode_stored_block(
    raw: Vec<u8>,
    path: &Path,
    handle: BlockHandle,
    counters: Option<&IoCounters>,
) -> Result<Vec<u8>> {
    let corruption = |reason: String| Error::corruption(path, handle.offset, reason);
    let (stored, block_type) = verify_stored_block(raw).map_err(corruption)?;
    if block_type == BLOCK_TYPE_UNCOMPRESSED {
        return Ok(stored);
    }
    let start = std::time::Instant::now();
    let contents = decompress_block(block_type, stored).map_err(corruption)?;
    if let Some(counters) = counters {
        counters.count_decompression(start.elapsed().as_nanos() as u64);
    }
    Ok(contents)
}

/// Reads the block at `handle`, checks it and decompresses it (see [`decode_stored_block`]).
fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    counters: Option<&IoCounters>,
) -> Result<Vec<u8>> {
    let len = block_len(file, path, handle)?;
    let raw = file.read_at(handle.offset, len)?;
    check_full_read(&raw, len, path, handle)?;
    decode_stored_block(raw, path, handle, counters)
}

/// A block read that came back with fewer bytes than the block holds (a file truncated under
/// the engine, or a failing device) is a corruption error that says so, not a checksum
/// mismatch over part of the block.
fn check_full_read(raw: &[u8], len: usize, path: &Path, handle: BlockHandle) -> Result<()> {
    if raw.len() == len {
        return Ok(());
    }
    Err(Error::corruption(
        path,
        handle.offset,
        format!(
            "short read: block of {len} bytes, the file gave {}",
            raw.len()
        ),
    ))
}

/// Readers alive and the bytes they pin, kept by every reader the cache opens (decremented when
/// it drops).
#[derive(Default)]
pub(crate) struct OpenReaders {
    pub(crate) readers: AtomicUsize,
    pub(crate) pinned_bytes: AtomicU64,
    /// Memory of the open readers' range filters (`filter/range.rs`).
    pub(crate) range_filter_bytes: AtomicU64,
}
