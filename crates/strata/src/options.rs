//! Engine options: documented defaults, chainable setters, and validation on open.

use std::sync::Arc;

use crate::alloc::{Elastic, FilterAllocator, Uniform};
use crate::compaction::CompactionPolicy;
use crate::env::{FileSystem, RealFileSystem};
use crate::error::{Error, Result};
use crate::table::compression::CompressionPolicy;
use crate::table::partition::MetadataPartitioning;
use crate::wal::WalRecoveryMode;

pub use crate::limits::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES};
/// Default of [`Options::filter_rebuild_bytes_per_sec`]: 8 MiB/s, a small share of a device's
/// bandwidth, so rebuilds never compete with compactions for long.
pub const DEFAULT_FILTER_REBUILD_BYTES_PER_SEC: u64 = 8 << 20;

/// Default [`Options::partition_metadata_above_bytes`].
pub(crate) const DEFAULT_PARTITION_METADATA_ABOVE_BYTES: u64 = 64 << 10;

/// How a database is opened and run. `Options::default()` is a sensible embedded configuration;
/// each field documents its default.
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes a memtable holds before it is frozen and flushed. Default 64 MiB.
    pub write_buffer_bytes: usize,
    /// Memtables (active + immutable) before writes stop to wait for flushes. Default 2.
    pub max_write_buffers: usize,
    /// Target size of an uncompressed data block. Default 4 KiB.
    pub block_bytes: usize,
    /// How each level's data and index blocks are compressed (none, LZ4 or Zstd, per level, with
    /// a bottommost override; see [`CompressionPolicy`] for the choices and why the default is
    /// none). The block cache holds blocks uncompressed. Default [`CompressionPolicy::none`].
    pub compression: CompressionPolicy,
    /// Entries between full keys (restart points) in a data block. Default 16.
    pub block_restart_interval: usize,
    /// Entries between full keys (restart points) in an index block (RocksDB's
    /// `index_block_restart_interval`). Between restarts each index key stores only what differs
    /// from the previous one, so neighbouring separators that share a long prefix cost a few
    /// bytes instead of a whole key; a seek scans at most this many entries after its binary
    /// search. Readers of every format version handle any interval. Default 4: on 128-byte keys
    /// it keeps most of interval 16's saving in index bytes at interval 1's instructions per
    /// cached lookup (measured, docs/BENCHMARKS.md "Index restart interval").
    pub index_block_restart_interval: usize,
    /// Partition the index and filter of a table file whose whole-file index block or largest
    /// filter module would be larger than this many bytes (RocksDB's partitioned index and
    /// filters, `table/partition.rs`): such a file's index and filter are written as blocks of
    /// about [`Options::metadata_block_bytes`] plus a small top-level index the open reader keeps
    /// in memory, so a block-cache miss reads one small partition instead of a whole index or
    /// filter. Smaller files keep the unpartitioned layout byte for byte. `u64::MAX` never
    /// partitions. At least `metadata_block_bytes`. Default 64 KiB: with a 1 MiB cache over a
    /// 64 MiB-file tree, thresholds of 4, 16 and 64 KiB cut index and filter reads per lookup
    /// alike (to 1-2% of the unpartitioned layout's; the tree's shape moves the figure more than
    /// the threshold does), while partitioning small files costs instructions on every cached
    /// lookup and saves no I/O (a top-level search before the filter probe: +19% per cached
    /// `readmissing` lookup over 1.8-3.2 MiB files partitioned at 4 KiB). 64 KiB keeps files up to
    /// about 10 MiB (at 16-byte keys and 4 KiB blocks) unpartitioned and bounds what one miss
    /// reads to 64 KiB (docs/BENCHMARKS.md, "Partitioned index and filters"). Ignored (nothing
    /// is partitioned) with [`Options::pin_filter_and_index_blocks`]: pinned whole blocks are
    /// never re-read, and the top-level search only costs instructions (1.15-2.30M pinned
    /// `readmissing` lookups/s unpartitioned against 1.15-1.52M partitioned, 1M keys).
    pub partition_metadata_above_bytes: u64,
    /// Target size of an index partition of a partitioned table (RocksDB's
    /// `metadata_block_size`); its filter partitions hold the keys of the same data blocks.
    /// Between 256 B and 16 MiB. Default 4 KiB.
    pub metadata_block_bytes: usize,
    /// Compaction output files are cut at about this size. Default 64 MiB. A leveled merge whose
    /// range overlaps files of the level below its output cuts its outputs at their boundaries
    /// from half this size and lets an output grow up to twice it before a boundary comes
    /// (RocksDB's rule for non-bottommost outputs).
    pub target_file_bytes: u64,
    /// Capacity of the shared block cache (data, index and filter blocks). Default 32 MiB;
    /// 0 disables the cache.
    pub block_cache_bytes: u64,
    /// Most table readers held open at once (each holds one file descriptor, and, where pinned,
    /// its index and filter blocks); past it the least recently used are closed and reopened
    /// when next read. Default 1000.
    pub max_open_files: usize,
    /// Keep level-0 files' index and filter blocks pinned in memory instead of in the block cache.
    /// Default `false`.
    pub pin_l0_filter_and_index_blocks: bool,
    /// Keep every table's index and filter blocks pinned in memory (RocksDB's behaviour with
    /// `cache_index_and_filter_blocks = false`): indexes are read when a file is opened, each
    /// filter block when a lookup first probes it (so elastic filters' spare modules are never
    /// held), and from then on lookups read only data blocks from the device; the pinned bytes
    /// count in `Stats::total_memory_bytes`. Default `false`: filters compete for the block
    /// cache (DESIGN.md §1).
    pub pin_filter_and_index_blocks: bool,
    /// Read table files with O_DIRECT, bypassing the page cache, so that I/O counts are device
    /// reads. Default `false`.
    pub direct_reads: bool,
    /// Bytes a compaction reads from an input file at a time (RocksDB's
    /// `compaction_readahead_size`, 2 MiB by default there too). A compaction walks its inputs
    /// front to back, so one large read replaces hundreds of block-sized ones; with
    /// [`Options::direct_reads`] there is no kernel readahead, and without this every 4 KiB data
    /// block of an input would be a separate device read. 0 reads block by block. Default 2 MiB;
    /// at most 256 MiB. Each input run being merged holds one such buffer.
    pub compaction_readahead_bytes: usize,
    /// Largest read-ahead of a scan, bytes (RocksDB's `max_auto_readahead_size`, 256 KiB there
    /// too). An iterator that has read two consecutive data blocks of a table file reads the
    /// next ones ahead: on its next block-cache miss in that file it reads the block and the
    /// 8 KiB after it in one device read, and each later read ahead is twice as long, up to
    /// this many bytes (`table/readahead.rs`). Blocks it takes from the read-ahead enter the
    /// block cache as blocks read one at a time do; bytes it read ahead and never reached do
    /// not. Point lookups and scans that read one or two blocks of a file never read ahead.
    /// With [`Options::direct_reads`] there is no kernel readahead, and without this a long
    /// scan is one device read per data block. 0 turns it off; at most 64 MiB. Default 256 KiB;
    /// each table file an iterator has open holds at most one such buffer.
    pub scan_readahead_max_bytes: usize,
    /// Compaction workers: jobs that may run at once (each on its own thread, beside the flush
    /// thread). The policy is shown the jobs in flight and picks around them
    /// (`compaction::RunningCompactions`). Between 1 and 64; default 2 (chosen by measurement on
    /// a 2-core machine, docs/BENCHMARKS.md).
    pub max_background_compactions: usize,
    /// Keep Merlin's per-file access statistics (DESIGN.md §4: which files point lookups probe, and
    /// whether they find their key there), readable through `FileState::access_estimate`.
    /// Costs about 580 bytes per table file and a few atomic operations per lookup. Default
    /// `true`: elastic filters, the default allocator, weigh files by these estimates, which is
    /// what makes them pay on a skewed workload (docs/BENCHMARKS.md, "Access statistics on by
    /// default"); `false` saves their cost where lookups are known to be uniform. Always on when
    /// the filter allocator needs them (Mnemosyne+).
    pub access_statistics: bool,
    /// Record one point lookup in this many in the access statistics (DESIGN.md §4), chosen by a
    /// hash of the lookup's number so that a workload with a period does not line up with the
    /// sample. Default 16: recording every lookup cost 4% of the instructions of a cached absent
    /// lookup; measured round by round beside the same engine at one in 4, one in 16 served
    /// 1.6% more cached absent lookups/s (median of six runs), while the skewed workload's
    /// unnecessary reads and elastic filters' regret stayed within their targets
    /// (docs/decisions/access-statistics-one-lookup-in-16-by-hash.md); 1 records every lookup
    /// of the recording thread. Estimates are rescaled to all lookups.
    pub access_sample_every: u32,
    /// Weight `r` of the recent window in Merlin's estimates (DESIGN.md §4), in `[0, 1]`: the rest,
    /// `1 - r`, goes to the file's whole history. Higher values follow a change of workload
    /// sooner (a file whose lookups used to find their key and now miss is priced by its recent
    /// misses), lower ones smooth a steady workload's noise. Default 0.75 (DESIGN.md §4 leaves `r` to
    /// Strata; chosen by measurement, docs/decisions/merlin-recent-weight.md).
    pub access_recent_weight: f64,
    /// Level-0 runs that trigger a level-0 compaction. Default 4.
    pub level0_compaction_trigger: usize,
    /// Level-0 runs at which each write is delayed by 1 ms. Default 20.
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 runs at which writes stop until compaction catches up. Default 36.
    pub level0_stop_writes_trigger: usize,
    /// What to do with a damaged WAL at open. Default `TolerateCorruptedTail`.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Fsync the WAL on every write unless `WriteOptions` says otherwise. Default `false`.
    pub sync_writes: bool,
    /// Skip the WAL (writes since the last flush are lost on a crash). Default `false`.
    pub disable_wal: bool,
    /// Decides each new file's filter bits per key, and which of its filter modules lookups
    /// probe. Default [`Elastic::default`]: elastic filters (Strata's own allocation, DESIGN.md
    /// §3.5) with a budget of 10 bits per key in use, re-divided between files at every flush,
    /// compaction and refresh; three modules of 5 bits per key on disk per file at least. At 10
    /// bits per key they ran within the run-to-run noise of uniform filters' lookups per second
    /// with a third fewer false positives, and 1.1-1.3x their lookups per second at 2 bits per
    /// key (docs/BENCHMARKS.md, "Elastic filters as the default"). [`Options::bits_per_key`]
    /// sets uniform filters instead.
    pub filter_allocator: Arc<dyn FilterAllocator>,
    /// The family new filters are built in (DESIGN.md §3.5 "Filter families"): Bloom only (the
    /// default), Ribbon only, or `FilterFamilies::Automatic` (Bloom for flushes and small
    /// filters, Ribbon for other compaction outputs). Files of both families mix in one tree;
    /// each filter block says which it is.
    pub filter_family: crate::FilterFamilies,
    /// Range filters (`filter/range.rs`, Strata's own design after SNARF): 0 (the default)
    /// writes none; `b` in 1..=20 gives every new table file a range filter whose
    /// false-positive rate for a range that maps to `w` positions is about `(1 + w) * 2^-b`, at
    /// about `b + 4.6` bits per key (on the benchmark's keys) held in memory while the file is
    /// open (`Stats`' `range_filter_bytes`). A bounded iterator (`Db::range` with both ends set) then skips
    /// every file whose filter rules its range out, without reading any of its blocks; it pays
    /// for short, selective ranges in trees of many runs (EcoTune's main level).
    pub range_filter_bits: u32,
    /// Whether compactions into the last level build range filters too (false by default). The
    /// last level holds most keys (nine in ten at size ratio 10), so nearly every range a user
    /// asks for reaches it and its filter rules out almost nothing, while building one costs
    /// about 100 ns per key on the compaction path; as RocksDB's `optimize_filters_for_hits`
    /// leaves the bottom level's point filters out, Strata leaves the last level's range
    /// filters out (docs/decisions/range-filters.md). Files without a filter are always read,
    /// so seeks stay exact either way. Flushes and compactions into upper levels are unaffected.
    pub range_filter_last_level: bool,
    /// The most bytes per second (read plus written) that filter rebuilds may take: when the
    /// filter allocator finds a file whose filter would avoid more device reads over the
    /// file's expected life, with more bits on disk, than rewriting it costs (elastic filters'
    /// priced rebuild, DESIGN.md §3.5), an idle compaction worker rewrites it, and the next rebuild
    /// waits until this rate allows. 0 turns rebuilds off. Default 8 MiB/s. Allocators other
    /// than elastic filters never ask for one.
    pub filter_rebuild_bytes_per_sec: u64,
    /// Decides what to compact. Default leveling with size ratio 10.
    pub compaction_policy: Arc<dyn CompactionPolicy>,
    /// Auto-tune (DESIGN.md §10, "Self-tuning"): `Some` starts a background task that, every
    /// `every_operations` operations, prices the design in force and the tuner's best for the
    /// mix the database served since its last decision, and switches the merge policy and size
    /// ratio when the gain pays for a round trip of rewrites over the time the mix has held, with
    /// hysteresis
    /// (`strata::model::auto_tune`). Every decision is logged in the info log, shown by
    /// `Stats::auto_tune`, and kept in the manifest so a restart resumes it. Default `None`
    /// (off): on a shifting workload it finishes ahead of every fixed design, but phases shorter
    /// than a switch takes to pay run more than 10% behind that phase's best fixed design
    /// (docs/BENCHMARKS.md, recipe 38).
    pub auto_tune: Option<crate::model::auto_tune::AutoTuneOptions>,
    /// The file system all I/O goes through. Default: the operating system's.
    pub file_system: Arc<dyn FileSystem>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("write_buffer_bytes", &self.write_buffer_bytes)
            .field("max_write_buffers", &self.max_write_buffers)
            .field("block_bytes", &self.block_bytes)
            .field("block_restart_interval", &self.block_restart_interval)
            .field(
                "index_block_restart_interval",
                &self.index_block_restart_interval,
            )
            .field("compression", &self.compression.to_string())
            .field(
                "partition_metadata_above_bytes",
                &self.partition_metadata_above_bytes,
            )
            .field("metadata_block_bytes", &self.metadata_block_bytes)
            .field("target_file_bytes", &self.target_file_bytes)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("max_open_files", &self.max_open_files)
            .field(
                "pin_l0_filter_and_index_blocks",
                &self.pin_l0_filter_and_index_blocks,
            )
            .field(
                "pin_filter_and_index_blocks",
                &self.pin_filter_and_index_blocks,
            )
            .field("direct_reads", &self.direct_reads)
            .field(
                "compaction_readahead_bytes",
                &self.compaction_readahead_bytes,
            )
            .field("scan_readahead_max_bytes", &self.scan_readahead_max_bytes)
            .field(
                "max_background_compactions",
                &self.max_background_compactions,
            )
            .field("access_statistics", &self.access_statistics)
            .field("access_sample_every", &self.access_sample_every)
            .field("access_recent_weight", &self.access_recent_weight)
            .field("level0_compaction_trigger", &self.level0_compaction_trigger)
            .field(
                "level0_slowdown_writes_trigger",
                &self.level0_slowdown_writes_trigger,
            )
            .field(
                "level0_stop_writes_trigger",
                &self.level0_stop_writes_trigger,
            )
            .field("wal_recovery_mode", &self.wal_recovery_mode)
            .field("sync_writes", &self.sync_writes)
            .field("disable_wal", &self.disable_wal)
            .field("filter_allocator", &self.filter_allocator.name())
            .field("filter_family", &self.filter_family.name())
            .field("range_filter_bits", &self.range_filter_bits)
            .field("range_filter_last_level", &self.range_filter_last_level)
            .field(
                "filter_rebuild_bytes_per_sec",
                &self.filter_rebuild_bytes_per_sec,
            )
            .field("compaction_policy", &self.compaction_policy.name())
            .field("auto_tune", &self.auto_tune)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_bytes: 64 << 20,
            max_write_buffers: 2,
            block_bytes: 4096,
            block_restart_interval: 16,
            index_block_restart_interval: 4,
            compression: CompressionPolicy::none(),
            partition_metadata_above_bytes: DEFAULT_PARTITION_METADATA_ABOVE_BYTES,
            metadata_block_bytes: 4096,
            target_file_bytes: 64 << 20,
            block_cache_bytes: 32 << 20,
            max_open_files: 1000,
            pin_l0_filter_and_index_blocks: false,
            pin_filter_and_index_blocks: false,
            direct_reads: false,
            compaction_readahead_bytes: 2 << 20,
            scan_readahead_max_bytes: 256 << 10,
            max_background_compactions: 2,
            access_statistics: true,
            access_sample_every: 16,
            access_recent_weight: crate::stats::merlin::DEFAULT_RECENT_WEIGHT,
            level0_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            wal_recovery_mode: WalRecoveryMode::TolerateCorruptedTail,
            sync_writes: false,
            disable_wal: false,
            filter_allocator: Arc::new(Elastic::default()),
            filter_family: crate::FilterFamilies::default(),
            range_filter_bits: 0,
            range_filter_last_level: false,
            filter_rebuild_bytes_per_sec: DEFAULT_FILTER_REBUILD_BYTES_PER_SEC,
            compaction_policy: crate::policy::default_compaction_policy(),
            auto_tune: None,
            file_system: Arc::new(RealFileSystem),
        }
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        impl Options {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> Self {
                    self.$name = value;
                    self
                }
            )*
        }
    };
}

setters! {
    /// Sets [`Options::create_if_missing`].
    create_if_missing: bool,
    /// Sets [`Options::error_if_exists`].
    error_if_exists: bool,
    /// Sets [`Options::write_buffer_bytes`].
    write_buffer_bytes: usize,
    /// Sets [`Options::max_write_buffers`].
    max_write_buffers: usize,
    /// Sets [`Options::block_bytes`].
    block_bytes: usize,
    /// Sets [`Options::block_restart_interval`].
    block_restart_interval: usize,
    /// Sets [`Options::index_block_restart_interval`].
    index_block_restart_interval: usize,
    /// Sets [`Options::compression`].
    compression: CompressionPolicy,
    /// Sets [`Options::filter_family`].
    filter_family: crate::FilterFamilies,
    /// Sets [`Options::range_filter_bits`].
    range_filter_bits: u32,
    /// Sets [`Options::range_filter_last_level`].
    range_filter_last_level: bool,
    /// Sets [`Options::filter_rebuild_bytes_per_sec`].
    filter_rebuild_bytes_per_sec: u64,
    /// Sets [`Options::auto_tune`].
    auto_tune: Option<crate::model::auto_tune::AutoTuneOptions>,
    /// Sets [`Options::partition_metadata_above_bytes`].
    partition_metadata_above_bytes: u64,
    /// Sets [`Options::metadata_block_bytes`].
    metadata_block_bytes: usize,
    /// Sets [`Options::target_file_bytes`].
    target_file_bytes: u64,
    /// Sets [`Options::block_cache_bytes`].
    block_cache_bytes: u64,
    /// Sets [`Options::max_open_files`].
    max_open_files: usize,
    /// Sets [`Options::pin_l0_filter_and_index_blocks`].
    pin_l0_filter_and_index_blocks: bool,
    /// Sets [`Options::pin_filter_and_index_blocks`].
    pin_filter_and_index_blocks: bool,
    /// Sets [`Options::direct_reads`].
    direct_reads: bool,
    /// Sets [`Options::compaction_readahead_bytes`].
    compaction_readahead_bytes: usize,
    /// Sets [`Options::scan_readahead_max_bytes`].
    scan_readahead_max_bytes: usize,
    /// Sets [`Options::max_background_compactions`].
    max_background_compactions: usize,
    /// Sets [`Options::access_statistics`].
    access_statistics: bool,
    /// Sets [`Options::access_sample_every`].
    access_sample_every: u32,
    /// Sets [`Options::access_recent_weight`].
    access_recent_weight: f64,
    /// Sets [`Options::level0_compaction_trigger`].
    level0_compaction_trigger: usize,
    /// Sets [`Options::level0_slowdown_writes_trigger`].
    level0_slowdown_writes_trigger: usize,
    /// Sets [`Options::level0_stop_writes_trigger`].
    level0_stop_writes_trigger: usize,
    /// Sets [`Options::wal_recovery_mode`].
    wal_recovery_mode: WalRecoveryMode,
    /// Sets [`Options::sync_writes`].
    sync_writes: bool,
    /// Sets [`Options::disable_wal`].
    disable_wal: bool,
    /// Sets [`Options::filter_allocator`].
    filter_allocator: Arc<dyn FilterAllocator>,
    /// Sets [`Options::compaction_policy`].
    compaction_policy: Arc<dyn CompactionPolicy>,
    /// Sets [`Options::file_system`].
    file_system: Arc<dyn FileSystem>,
}

impl Options {
    /// True if the engine keeps access statistics: asked for, or needed by the allocator.
    pub fn keeps_access_statistics(&self) -> bool {
        self.access_statistics || self.filter_allocator.needs_access_statistics()
    }

    /// Uniform filters of `bits_per_key` (0..=64) for every file (what RocksDB, LevelDB,
    /// Pebble and fjall do).
    pub fn bits_per_key(self, bits_per_key: f64) -> Result<Self> {
        Ok(self.filter_allocator(Arc::new(Uniform::new(bits_per_key)?)))
    }

    /// Elastic filters (the default allocation, [`Elastic`]) with a budget of
    /// `bits_per_key` (0..=64) bits per key in use.
    pub fn filter_budget_bits_per_key(self, bits_per_key: f64) -> Result<Self> {
        Ok(self.filter_allocator(Arc::new(Elastic::new(bits_per_key)?)))
    }

    /// When the table builder partitions a file's index and filter: never when every file's
    /// index and filter blocks are pinned (partitions save cache misses, and pinned blocks have
    /// none).
    pub(crate) fn metadata_partitioning(&self) -> MetadataPartitioning {
        if self.pin_filter_and_index_blocks {
            return MetadataPartitioning::NEVER;
        }
        MetadataPartitioning {
            above_bytes: self.partition_metadata_above_bytes,
            block_bytes: self.metadata_block_bytes,
        }
    }

    /// True if table files on `level` keep their index and filter blocks pinned.
    pub(crate) fn pins_metadata_on(&self, level: usize) -> bool {
        self.pin_filter_and_index_blocks || (level == 0 && self.pin_l0_filter_and_index_blocks)
    }

    /// Checks every field; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<()> {
        if let Some(auto_tune) = &self.auto_tune {
            auto_tune.validate()?;
        }
        self.validate_memory()?;
        self.validate_blocks()?;
        self.validate_files_and_levels()
    }

    /// Write buffers and access statistics.
    fn validate_memory(&self) -> Result<()> {
        let wb = self.write_buffer_bytes;
        check(
            (4096..=(1 << 34)).contains(&wb),
            "write_buffer_bytes",
            "between 4 KiB and 16 GiB",
            wb,
        )?;
        check(
            (1..=1_000_000).contains(&self.access_sample_every),
            "access_sample_every",
            "between 1 and 1,000,000",
            self.access_sample_every,
        )?;
        check(
            (0.0..=1.0).contains(&self.access_recent_weight),
            "access_recent_weight",
            "between 0 and 1",
            self.access_recent_weight,
        )?;
        check(
            (1..=64).contains(&self.max_write_buffers),
            "max_write_buffers",
            "between 1 and 64",
            self.max_write_buffers,
        )?;
        Ok(())
    }

    /// Blocks, their compression, indexes and filters.
    fn validate_blocks(&self) -> Result<()> {
        check(
            (256..=(64 << 20)).contains(&self.block_bytes),
            "block_bytes",
            "between 256 B and 64 MiB",
            self.block_bytes,
        )?;
        check(
            (1..=1024).contains(&self.block_restart_interval),
            "block_restart_interval",
            "between 1 and 1024",
            self.block_restart_interval,
        )?;
        self.compression.validate()?;
        check(
            self.range_filter_bits <= 20,
            "range_filter_bits",
            "between 0 (no range filters) and 20",
            self.range_filter_bits,
        )?;
        check(
            (1..=1024).contains(&self.index_block_restart_interval),
            "index_block_restart_interval",
            "between 1 and 1024",
            self.index_block_restart_interval,
        )?;
        check(
            (256..=(16 << 20)).contains(&self.metadata_block_bytes),
            "metadata_block_bytes",
            "between 256 B and 16 MiB",
            self.metadata_block_bytes,
        )?;
        check(
            self.partition_metadata_above_bytes >= self.metadata_block_bytes as u64,
            "partition_metadata_above_bytes",
            "at least metadata_block_bytes (a smaller index or filter would make one partition)",
            self.partition_metadata_above_bytes,
        )?;
        Ok(())
    }

    /// Files, background work and the level-0 triggers.
    fn validate_files_and_levels(&self) -> Result<()> {
        check(
            self.target_file_bytes >= 4096,
            "target_file_bytes",
            "at least 4 KiB",
            self.target_file_bytes,
        )?;
        check(
            self.compaction_readahead_bytes <= 256 << 20,
            "compaction_readahead_bytes",
            "at most 256 MiB",
            self.compaction_readahead_bytes,
        )?;
        check(
            self.scan_readahead_max_bytes <= 64 << 20,
            "scan_readahead_max_bytes",
            "at most 64 MiB",
            self.scan_readahead_max_bytes,
        )?;
        check(
            (1..=64).contains(&self.max_background_compactions),
            "max_background_compactions",
            "between 1 and 64",
            self.max_background_compactions,
        )?;
        check(
            self.max_open_files >= 16,
            "max_open_files",
            "at least 16",
            self.max_open_files,
        )?;
        check(
            self.level0_compaction_trigger >= 1,
            "level0_compaction_trigger",
            "at least 1",
            self.level0_compaction_trigger,
        )?;
        check(
            self.level0_slowdown_writes_trigger >= self.level0_compaction_trigger,
            "level0_slowdown_writes_trigger",
            "at least level0_compaction_trigger",
            self.level0_slowdown_writes_trigger,
        )?;
        check(
            self.level0_stop_writes_trigger >= self.level0_slowdown_writes_trigger,
            "level0_stop_writes_trigger",
            "at least level0_slowdown_writes_trigger",
            self.level0_stop_writes_trigger,
        )?;
        Ok(())
    }
}

/// `Ok` if `ok`, else an error naming `field`, the `rule` it breaks and its `value`.
fn check(ok: bool, field: &str, rule: &str, value: impl std::fmt::Display) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{field} must be {rule}, got {value}"
        )))
    }
}

/// Per-write options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Fsync the WAL before acknowledging the write (it then survives a power loss). With `false`
    /// the write survives a process crash but not an operating-system crash.
    pub sync: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_field() {
        Options::default().validate().expect("defaults are valid");
        let error = Options::default().write_buffer_bytes(10).validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("write_buffer_bytes"))
        );
        let error = Options::default().level0_stop_writes_trigger(1).validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("level0_stop_writes_trigger"))
        );
        assert!(Options::default().bits_per_key(-3.0).is_err());
        assert!(Options::default()
            .filter_budget_bits_per_key(f64::NAN)
            .is_err());
        // Strata's own allocation is the default; the setters choose theirs.
        assert_eq!(
            Options::default().filter_allocator.name(),
            Elastic::default().name()
        );
        assert_eq!(
            Options::default().filter_allocator.bits_per_key_budget(),
            10.0
        );
        let budget = Options::default()
            .filter_budget_bits_per_key(4.0)
            .expect("valid");
        assert_eq!(
            budget.filter_allocator.name(),
            Elastic::new(4.0).expect("valid").name()
        );
        let uniform = Options::default().bits_per_key(4.0).expect("valid");
        assert_eq!(uniform.filter_allocator.name(), "uniform(4)");
        for weight in [-0.1, 1.5, f64::NAN] {
            let error = Options::default().access_recent_weight(weight).validate();
            assert!(
                matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("access_recent_weight")),
                "{weight}"
            );
        }
        let error = Options::default()
            .index_block_restart_interval(0)
            .validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("index_block_restart_interval"))
        );
        let error = Options::default()
            .compaction_readahead_bytes(1 << 30)
            .validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("compaction_readahead_bytes"))
        );
        let error = Options::default()
            .scan_readahead_max_bytes((64 << 20) + 1)
            .validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("scan_readahead_max_bytes"))
        );
        for bytes in [0, 4096, 64 << 20] {
            assert!(
                Options::default()
                    .scan_readahead_max_bytes(bytes)
                    .validate()
                    .is_ok(),
                "{bytes}"
            );
        }
        for bytes in [0, 255, (16 << 20) + 1] {
            let error = Options::default().metadata_block_bytes(bytes).validate();
            assert!(
                matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("metadata_block_bytes")),
                "{bytes}"
            );
        }
        let error = Options::default()
            .metadata_block_bytes(8192)
            .partition_metadata_above_bytes(4096)
            .validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("partition_metadata_above_bytes"))
        );
        Options::default()
            .partition_metadata_above_bytes(u64::MAX)
            .validate()
            .expect("never partitioning is valid");
        let error = Options::default().access_sample_every(0).validate();
        assert!(
            matches!(&error, Err(Error::InvalidArgument(m)) if m.contains("access_sample_every"))
        );
    }

    #[test]
    fn pinned_metadata_is_never_partitioned() {
        let options = Options::default().partition_metadata_above_bytes(4096);
        assert_eq!(options.metadata_partitioning().above_bytes, 4096);
        assert!(options
            .pin_filter_and_index_blocks(true)
            .metadata_partitioning()
            .is_never());
    }
}
