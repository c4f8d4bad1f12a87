//! The shared block cache and the table-handle cache.
//!
//! One byte-bounded cache (`quick_cache`, S3-FIFO eviction) holds data, index and filter blocks of
//! every table, so under memory pressure filters compete with index and data blocks for the same
//! bytes, as DESIGN.md §1 requires. Keys are `(file number, block offset)`; file numbers are never
//! reused, so a deleted file's blocks just age out. A file's filter modules in use (DESIGN.md §1,
//! modular filter) are one entry, keyed by the first module's offset, so that a probe that passes
//! one module reads the next without a further lookup (see `table/reader.rs`). The table cache
//! keeps open table readers (file handle, footer, properties, pinned blocks), bounded by
//! `max_open_files`.

#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use crate::filter::Filter;
use crate::table::block::Block;

/// Bookkeeping bytes per cached block beyond its contents (key, handle, `Arc`).
pub(crate) const ENTRY_OVERHEAD_BYTES: u64 = 64;

/// Share of the cache's bytes its main queue holds (`quick_cache`'s "hot allocation"); the rest is
/// the small queue every block first enters. Set here, not left to the library's default, because
/// the cache model (`alloc::s3_fifo_model`) rests on it.
pub(crate) const MAIN_QUEUE_SHARE: f64 = 0.97;

/// Blocks evicted from the small queue that the cache remembers (its ghost queue), per block the
/// cache is estimated to hold (`quick_cache`'s "ghost allocation"); a ghost requested again
/// enters the main queue directly.
pub(crate) const GHOST_SHARE: f64 = 0.5;

/// The blocks a cache of `capacity_bytes` is estimated to hold (4 KiB each), which sizes its
/// tables and its ghost queue.
pub(crate) fn estimated_blocks(capacity_bytes: u64) -> u64 {
    (capacity_bytes / 4096).clamp(16, 1 << 24)
}

/// A cached block: a sorted key/value block (data or index), or a file's (or filter
/// partition's) leading filter modules, decoded, in probe order: the modules in use that probes
/// have read so far (`table/reader.rs`).
#[derive(Clone)]
pub(crate) enum CachedBlock {
    Sorted(Arc<Block>),
    FilterModules(Arc<[Filter]>),
}

impl CachedBlock {
    /// The memory the entry holds: a sorted block's, or every module's bits and header.
    pub(crate) fn size_bytes(&self) -> u64 {
        match self {
            CachedBlock::Sorted(block) => block.size_bytes() as u64,
            CachedBlock::FilterModules(modules) => modules
                .iter()
                .map(|filter| (filter.size_bytes() + std::mem::size_of::<Filter>()) as u64)
                .sum(),
        }
    }
}

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), CachedBlock> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &CachedBlock) -> u64 {
        block.size_bytes() + ENTRY_OVERHEAD_BYTES
    }
}

/// The shared, byte-bounded block cache. A capacity of 0 disables caching.
pub(crate) struct BlockCache {
    cache: Option<Cache<(u64, u64), CachedBlock, BlockWeighter>>,
    capacity_bytes: u64,
    /// Lookups made ([`BlockCache::get`]), counted in tests only: they check how many a probe
    /// costs.
    #[cfg(test)]
    lookups: AtomicU64,
}

impl BlockCache {
    pub(crate) fn new(capacity_bytes: u64) -> Self {
        let cache = (capacity_bytes > 0).then(|| {
            // quick_cache sizes its tables from an item-count estimate; assume 4 KiB blocks.
            let estimated_items = estimated_blocks(capacity_bytes) as usize;
            let options = OptionsBuilder::new()
                .estimated_items_capacity(estimated_items)
                .weight_capacity(capacity_bytes)
                .hot_allocation(MAIN_QUEUE_SHARE)
                .ghost_allocation(GHOST_SHARE)
                .build();
            match options {
                Ok(options) => Cache::with_options(
                    options,
                    BlockWeighter,
                    Default::default(),
                    Default::default(),
                ),
                // Unreachable with both sizes set; the library's defaults are the same shares.
                Err(_) => Cache::with_weighter(estimated_items, capacity_bytes, BlockWeighter),
            }
        });
        BlockCache {
            cache,
            capacity_bytes,
            #[cfg(test)]
            lookups: AtomicU64::new(0),
        }
    }

    pub(crate) fn get(&self, file_number: u64, offset: u64) -> Option<CachedBlock> {
        #[cfg(test)]
        self.lookups.fetch_add(1, Ordering::Relaxed);
        self.cache.as_ref()?.get(&(file_number, offset))
    }

    /// Lookups made so far ([`BlockCache::get`]).
    #[cfg(test)]
    pub(crate) fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    pub(crate) fn insert(&self, file_number: u64, offset: u64, block: CachedBlock) {
        if let Some(cache) = &self.cache {
            cache.insert((file_number, offset), block);
        }
    }

    /// Takes the block at `(file_number, offset)` out of the cache, if it holds it.
    pub(crate) fn remove(&self, file_number: u64, offset: u64) -> Option<CachedBlock> {
        self.cache
            .as_ref()?
            .remove(&(file_number, offset))
            .map(|(_, block)| block)
    }

    /// Bytes currently held.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weight())
    }

    pub(crate) fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// The `(file number, offset)` of every sorted block (data or index) the cache holds now,
    /// in no order. Walks the whole cache, a shard at a time: for a caller that reports what the
    /// cache holds (`Db::stream_history`), not for the read path.
    pub(crate) fn sorted_blocks(&self) -> Vec<(u64, u64)> {
        self.cache.as_ref().map_or_else(Vec::new, |cache| {
            cache
                .iter()
                .filter(|(_, block)| matches!(block, CachedBlock::Sorted(_)))
                .map(|(key, _)| key)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::block::BlockBuilder;

    fn block(entries: usize) -> CachedBlock {
        let mut builder = BlockBuilder::new(16);
        for i in 0..entries {
            builder.add(format!("key{i:06}").as_bytes(), &[0u8; 100]);
        }
        CachedBlock::Sorted(Arc::new(
            Block::decode(builder.finish()).expect("valid block"),
        ))
    }

    #[test]
    fn cache_stays_within_its_byte_budget() {
        let cache = BlockCache::new(64 * 1024);
        for offset in 0..200u64 {
            cache.insert(1, offset * 4096, block(35));
        }
        assert!(
            cache.used_bytes() <= 64 * 1024,
            "used {}",
            cache.used_bytes()
        );
        assert!(
            cache.used_bytes() > 32 * 1024,
            "used {}",
            cache.used_bytes()
        );
        assert!(
            cache.get(1, 199 * 4096).is_some(),
            "the newest block is cached"
        );
    }

    #[test]
    fn sorted_blocks_list_what_the_cache_holds_but_filter_modules() {
        let cache = BlockCache::new(1 << 20);
        cache.insert(1, 0, block(3));
        cache.insert(1, 4096, block(3));
        cache.insert(2, 0, block(3));
        let modules: Arc<[Filter]> = Vec::new().into();
        cache.insert(2, 8192, CachedBlock::FilterModules(modules));
        let mut held = cache.sorted_blocks();
        held.sort_unstable();
        assert_eq!(held, vec![(1, 0), (1, 4096), (2, 0)]);
        assert!(BlockCache::new(0).sorted_blocks().is_empty());
    }

    #[test]
    fn zero_capacity_disables_caching() {
        let cache = BlockCache::new(0);
        cache.insert(1, 0, block(3));
        assert!(cache.get(1, 0).is_none());
        assert_eq!(cache.used_bytes(), 0);
    }
}
