//! Open table readers: each held in its file's runtime state ([`TableSlot`], in the version's
//! `FileState`), at most `Options::max_open_files` of them at a time.
//!
//! A point lookup that probes a run goes straight from the run's file metadata (a [`TableFile`]:
//! the version's `FileMetadata`) to the file's
//! reader (as fjall keeps its tables in the version and RocksDB keeps
//! `FileDescriptor::table_reader` when the table cache is unbounded): one uncontended read lock
//! (two atomic operations), instead of a hash-map lookup under a shard lock and a reference-count
//! increment and decrement per probed run. (An `ArcSwapOption` measured about 100 instructions a
//! load, no cheaper than the hash map; the lock about 20.) The slot is shared by every version that names
//! the file (a trivial move keeps it), so the reader lives exactly as long as the file is in the
//! tree: when the last version naming a deleted file goes, its slot goes, and with it the reader,
//! its pinned blocks and its file descriptor (an iterator that still reads the file keeps its own
//! reference, as it keeps the version).
//!
//! The bound on open files stays: the cache keeps a ring of the slots it filled (weak references,
//! so it never keeps a file alive) and, when more than `max_open_files` are filled, empties the
//! least recently used ones by the CLOCK rule (a lookup marks its slot used; the hand clears the
//! mark and empties a slot it finds unmarked). An emptied slot is refilled by the next lookup that
//! needs it, exactly as a reader evicted from an LRU cache is reopened. Opening is the slow path:
//! it reads the footer, properties and (if pinned) the index and filter blocks from the device, so
//! the ring's lock is only taken next to that I/O.
//!
//! A table that fails to open fills no slot: the error goes to the caller and the next lookup
//! tries again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use super::reader::{OpenReaders, TableReader};
use crate::cache::BlockCache;
use crate::env::FileSystem;
use crate::error::Result;
use crate::filter::modular::ModulesInUse;
use crate::stats::IoCounters;

/// A table file as the table layer needs to know it: its number, its largest internal key (where
/// a run iterator seeks) and the slot that holds its open reader. The version's `FileMetadata`
/// is the one implementation (the slot is its `FileState`'s); the table layer names this trait
/// instead of the version's types.
pub(crate) trait TableFile: Send + Sync {
    /// The file's number (its name on disk).
    fn number(&self) -> u64;
    /// The largest internal key in the file.
    fn largest_key(&self) -> &[u8];
    /// The slot that holds the file's open reader.
    fn table_slot(&self) -> &Arc<TableSlot>;
}

impl<T: TableFile + ?Sized> TableFile for &T {
    fn number(&self) -> u64 {
        (**self).number()
    }

    fn largest_key(&self) -> &[u8] {
        (**self).largest_key()
    }

    fn table_slot(&self) -> &Arc<TableSlot> {
        (**self).table_slot()
    }
}

impl<T: TableFile + ?Sized> TableFile for Arc<T> {
    fn number(&self) -> u64 {
        (**self).number()
    }

    fn largest_key(&self) -> &[u8] {
        (**self).largest_key()
    }

    fn table_slot(&self) -> &Arc<TableSlot> {
        (**self).table_slot()
    }
}

/// Where a table file's open reader lives: in the file's runtime state (`version::FileState`),
/// shared by every version that names the file. Empty until a read opens the file, and again after the cache's bound empties it.
#[derive(Default)]
pub(crate) struct TableSlot {
    /// Read-locked for the length of a lookup in the file; write-locked only to fill or empty
    /// the slot (the CLOCK hand skips a slot in use rather than wait for it).
    reader: RwLock<Option<Arc<TableReader>>>,
    /// Set by every read that finds the reader here; cleared by the CLOCK hand, which empties
    /// only slots whose mark it finds clear (used since the hand last passed: kept).
    recently_used: AtomicBool,
}

impl TableSlot {
    /// True if the slot holds a reader.
    #[cfg(test)]
    pub(crate) fn is_filled(&self) -> bool {
        self.reader.read().is_some()
    }

    /// The reader the slot holds now, if any, without marking it used: for a caller that
    /// reports on the file (`Db::stream_history`), which should not keep it open.
    pub(crate) fn held(&self) -> Option<Arc<TableReader>> {
        self.reader.read().clone()
    }

    fn mark_used(&self) {
        // Read first: a lookup writes the shared cache line only once per pass of the hand.
        if !self.recently_used.load(Ordering::Relaxed) {
            self.recently_used.store(true, Ordering::Relaxed);
        }
    }
}

/// The filled slots in CLOCK order and the hand's position.
#[derive(Default)]
struct Clock {
    slots: Vec<Weak<TableSlot>>,
    hand: usize,
}

impl Clock {
    /// Empties slots until at most `capacity` are filled (or lookups hold the rest), returning
    /// the readers taken out (the caller drops them outside the lock: dropping the last
    /// reference closes a file).
    fn evict_over(&mut self, capacity: usize) -> Vec<Arc<TableReader>> {
        let mut evicted = Vec::new();
        if self.slots.len() <= capacity {
            return evicted;
        }
        // Forget slots whose file left the tree (their reader went with them) or that were
        // emptied; what is left is exactly the filled slots.
        self.slots.retain(|weak| {
            weak.upgrade().is_some_and(|slot| {
                // A slot being read is filled (only the lock's holders can empty it).
                slot.reader.try_read().is_none_or(|reader| reader.is_some())
            })
        });
        // A step clears a mark (at most one pass), removes a slot, or passes a slot in use. The
        // budget ends the walk if lookups hold too many slots: the bound is then restored by a
        // later open rather than by waiting for them.
        let mut steps = 3 * self.slots.len();
        while self.slots.len() > capacity && steps > 0 {
            steps -= 1;
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let Some(slot) = self.slots.get(self.hand).and_then(Weak::upgrade) else {
                self.slots.remove(self.hand);
                continue;
            };
            if slot.recently_used.swap(false, Ordering::Relaxed) {
                self.hand += 1;
                continue;
            }
            // A slot a lookup is reading right now is in use: pass it like a marked one.
            let Some(mut reader) = slot.reader.try_write() else {
                self.hand += 1;
                continue;
            };
            if let Some(reader) = reader.take() {
                evicted.push(reader);
            }
            self.slots.remove(self.hand);
        }
        evicted
    }
}

/// Opens table readers into their files' slots and bounds how many the slots hold.
pub(crate) struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    block_cache: Arc<BlockCache>,
    counters: Arc<IoCounters>,
    direct_reads: bool,
    /// Most readers the slots hold at once (`Options::max_open_files`).
    capacity: usize,
    clock: Mutex<Clock>,
    /// Readers alive (open file descriptors) and their pinned bytes, wherever they are held.
    open: Arc<OpenReaders>,
    /// Largest read-ahead of the scans of the files it opens (`Options::scan_readahead_max_bytes`;
    /// 0, the default here, none).
    scan_readahead_max_bytes: usize,
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
            block_cache,
            counters,
            direct_reads,
            capacity: max_open_files.max(1),
            clock: Mutex::new(Clock::default()),
            open: Arc::new(OpenReaders::default()),
            scan_readahead_max_bytes: 0,
        }
    }

    /// Lets scans of the files it opens read ahead up to `max_bytes` at a time (0: never).
    pub(crate) fn with_scan_readahead(mut self, max_bytes: usize) -> Self {
        self.scan_readahead_max_bytes = max_bytes;
        self
    }

    /// See [`TableCache::with_scan_readahead`].
    pub(crate) fn scan_readahead_max_bytes(&self) -> usize {
        self.scan_readahead_max_bytes
    }

    /// Runs `read` on `file`'s reader, opening it into the file's slot first if the slot is empty
    /// (or holds an unpinned reader and `pin` asks for pinned index and filter blocks). The
    /// lookup path: no reference count is taken when the reader is already there.
    pub(crate) fn with_reader<T>(
        &self,
        file: &impl TableFile,
        pin: bool,
        read: impl FnOnce(&TableReader) -> Result<T>,
    ) -> Result<T> {
        let slot = file.table_slot();
        {
            let held = slot.reader.read();
            if let Some(reader) = held.as_deref() {
                if !pin || reader.is_pinned() {
                    slot.mark_used();
                    return read(reader);
                }
            }
        }
        let reader = self.open_into(slot, file.number(), pin)?;
        read(&reader)
    }

    /// If `file`'s reader is open and pins filter blocks that `in_use` does not probe, puts a
    /// copy holding only those in use in the file's slot (`TableReader::without_filters_out_of_use`):
    /// the engine's sweep after the allocation moved. The old reader, and with it the blocks out
    /// of use, goes when the lookups in it finish (they hold the slot's read lock) and any other
    /// holder lets it go. Opens nothing, marks nothing used, and leaves a slot that another
    /// thread filled or emptied in the meantime as it is.
    pub(crate) fn trim_pinned_filters(&self, file: &impl TableFile, in_use: ModulesInUse) {
        let slot = file.table_slot();
        let Some(current) = slot.reader.read().clone() else {
            return;
        };
        let Some(trimmed) = self.trimmed(&current, in_use) else {
            return;
        };
        let replaced = {
            let mut held = slot.reader.write();
            match held.as_ref() {
                Some(reader) if Arc::ptr_eq(reader, &current) => held.replace(trimmed),
                _ => None,
            }
        };
        // The old reader closes here, outside the lock, if nothing else holds it.
        drop((replaced, current));
    }

    /// `reader` without its pinned filter blocks out of use, counted in this cache's open
    /// readers and pinned bytes; `None` if it holds none.
    pub(crate) fn trimmed(
        &self,
        reader: &TableReader,
        in_use: ModulesInUse,
    ) -> Option<Arc<TableReader>> {
        reader
            .without_filters_out_of_use(in_use)
            .map(|copy| Arc::new(copy.counted_in(Arc::clone(&self.open))))
    }

    /// `file`'s reader, shared (iterators and compactions, which hold it while they walk the
    /// file). Opens it into the file's slot like [`TableCache::with_reader`].
    pub(crate) fn reader(&self, file: &impl TableFile, pin: bool) -> Result<Arc<TableReader>> {
        let slot = file.table_slot();
        let held = slot.reader.read().clone();
        if let Some(reader) = held {
            if !pin || reader.is_pinned() {
                slot.mark_used();
                return Ok(reader);
            }
        }
        self.open_into(slot, file.number(), pin)
    }

    /// Opens table `number` without holding it anywhere: the caller's reference is the only one
    /// (tests and the table benchmark, which have no file metadata).
    pub(crate) fn open(&self, number: u64, pin: bool) -> Result<Arc<TableReader>> {
        TableReader::open(
            self.fs.as_ref(),
            &self.dir,
            number,
            self.direct_reads,
            Arc::clone(&self.block_cache),
            Arc::clone(&self.counters),
            pin,
        )
        .map(|reader| Arc::new(reader.counted_in(Arc::clone(&self.open))))
    }

    /// Opens table `number` into `slot`, then empties slots over the bound. A reader opened
    /// concurrently by another thread is replaced (both are correct; one is dropped).
    fn open_into(&self, slot: &Arc<TableSlot>, number: u64, pin: bool) -> Result<Arc<TableReader>> {
        let reader = self.open(number, pin)?;
        slot.recently_used.store(true, Ordering::Relaxed);
        let (replaced, evicted) = {
            let mut clock = self.clock.lock();
            let replaced = slot.reader.write().replace(Arc::clone(&reader));
            if replaced.is_none() {
                clock.slots.push(Arc::downgrade(slot));
            }
            (replaced, clock.evict_over(self.capacity))
        };
        // Closing files happens here, outside the lock.
        drop((replaced, evicted));
        Ok(reader)
    }

    /// Bytes pinned by open readers.
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.open.pinned_bytes.load(Ordering::Relaxed)
    }

    /// Memory of the range filters open readers hold.
    pub(crate) fn range_filter_bytes(&self) -> u64 {
        self.open.range_filter_bytes.load(Ordering::Relaxed)
    }

    /// Readers alive, i.e. table files open, wherever the readers are held.
    #[cfg(test)]
    pub(crate) fn open_readers(&self) -> usize {
        self.open.readers.load(Ordering::Relaxed)
    }
}
