//! The public `Stats` snapshot and its human-readable rendering.

use std::fmt;

use super::IoStats;

/// Shape and size of one level.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LevelStats {
    /// Level index (0 = flushed runs).
    pub level: usize,
    /// Sorted runs in the level.
    pub runs: usize,
    /// Table files in the level.
    pub files: usize,
    /// Bytes of table files.
    pub bytes: u64,
    /// Entries (tombstones and old versions included).
    pub entries: u64,
    /// Bytes of filter blocks.
    pub filter_bytes: u64,
    /// Entry-weighted mean bits per key of the level's filters.
    pub bits_per_key: f64,
}

/// A point-in-time view of the engine: I/O counters, tree shape, memory and recovery facts.
/// Serializes with every field under its own name (`strata stats --json`, the Python module's
/// `Db.stats()`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Stats {
    /// I/O and operation counters since open or the last reset.
    pub io: IoStats,
    /// Non-empty levels, top down.
    pub levels: Vec<LevelStats>,
    /// Sorted runs in the tree.
    pub runs: usize,
    /// Bytes in the active and immutable memtables.
    pub memtable_bytes: u64,
    /// Bytes of the memtables' key filters (a fixed fraction of the write buffer each,
    /// `memtable/key_filter.rs`), besides `memtable_bytes`.
    pub memtable_filter_bytes: u64,
    /// Entries in the active and immutable memtables (not yet in any table file).
    pub memtable_entries: u64,
    /// Memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// Bytes held by the block cache.
    pub block_cache_bytes: u64,
    /// The block cache's capacity in bytes.
    pub block_cache_capacity_bytes: u64,
    /// Index and filter blocks pinned outside the cache (level-0 pinning).
    pub pinned_bytes: u64,
    /// Merlin's per-file access statistics (DESIGN.md §4), 0 when they are off.
    pub access_statistics_bytes: u64,
    /// Key hashes in the top-level index (EcoTune's full index of level 0's keys, DESIGN.md §6); 0
    /// without one.
    pub top_index_entries: u64,
    /// Memory of the top-level index.
    pub top_index_bytes: u64,
    /// Memory of the range filters (`Options::range_filter_bits`) of open table files.
    pub range_filter_bytes: u64,
    /// Bytes held now by read-ahead windows: scans' (`Options::scan_readahead_max_bytes` at most
    /// per table a scan reads in order) and compactions' (one window per input file).
    pub readahead_buffer_bytes: u64,
    /// memtables + block cache + pinned blocks + access statistics + top-level index + range
    /// filters + read-ahead windows.
    pub total_memory_bytes: u64,
    /// Entry-weighted mean bits per key of all live filters at their real size (files without a
    /// filter count as 0).
    pub average_bits_per_key: f64,
    /// The same mean with filters the allocator currently skips counted as 0 bits (they are never
    /// probed, so never loaded into the cache): what the budget guard holds to the cap (DESIGN.md §3).
    /// Equals [`Stats::average_bits_per_key`] for policies that never skip.
    pub effective_bits_per_key: f64,
    /// The filter allocator's budget in bits per key.
    pub bits_per_key_budget: f64,
    /// The filter allocator's budget in bytes, when it has one besides the bits per key
    /// (`FilterAllocator::filter_budget_bytes`).
    pub filter_budget_bytes: Option<u64>,
    /// Bytes of the filters in use: [`Stats::effective_bits_per_key`] over every entry, in bytes
    /// (what a byte budget caps).
    pub filter_bytes_in_use: u64,
    /// The budget guard's cap in bits per key (Mnemosyne, Mnemosyne+), `None` for policies that
    /// do not guard their budget.
    pub bits_per_key_cap: Option<f64>,
    /// The tree's write amplification since open: (flush + compaction bytes) / user bytes.
    pub write_amplification: f64,
    /// The newest sequence number.
    pub last_sequence: u64,
    /// Complete WAL records replayed at open.
    pub wal_records_recovered: u64,
    /// WAL bytes dropped at open because of a torn or corrupt tail (see `WalRecoveryMode`).
    pub wal_bytes_dropped: u64,
    /// The sticky background error, if a write or fsync failed.
    pub background_error: Option<String>,
    /// Names of the active compaction policy and filter allocator.
    pub compaction_policy: String,
    /// The compaction policy's manifest state in words (EcoTune's round), if it shows one
    /// (`CompactionPolicy::describe_state`).
    pub compaction_state: Option<String>,
    /// Name of the filter allocator.
    pub filter_allocator: String,
    /// Auto-tune's last decisions in words, oldest first (`Db::auto_tune_history`; empty before
    /// the first).
    pub auto_tune: Vec<String>,
    /// The probes point lookups timed in the live files (one lookup in 16), pooled, by what
    /// they read past the filter, since each file was first probed in this process: what
    /// elastic filters price a false positive on a cached block by (DESIGN.md §3.5,
    /// `alloc::cache_model`).
    pub probe_times: super::lookups::ProbeTimes,
}

impl Stats {
    /// Total entries in table files.
    pub fn entries(&self) -> u64 {
        self.levels.iter().map(|l| l.entries).sum()
    }

    /// Total bytes of table files.
    pub fn table_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.bytes).sum()
    }

    /// What a false positive on a cached block costs as a share of one read from the device,
    /// from [`Stats::probe_times`] (`stats::lookups::cached_false_positive_cost`); `None`
    /// until enough probes of each kind were timed.
    pub fn cached_false_positive_cost(&self) -> Option<f64> {
        super::lookups::cached_false_positive_cost(&self.probe_times)
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `bytes written by cause: wal 1.00 MiB, flush ..., ->L1 ... MiB (x.xx per user byte); N
/// trivial moves (M MiB not rewritten)`.
fn write_causes_line(io: &super::IoStats) -> String {
    let per_user = |bytes: u64| {
        if io.user_write_bytes == 0 {
            String::new()
        } else {
            format!(" ({:.2}x)", bytes as f64 / io.user_write_bytes as f64)
        }
    };
    let causes: Vec<String> = io
        .write_causes()
        .iter()
        .map(|(cause, bytes)| format!("{cause} {:.2} MiB{}", mib(*bytes), per_user(*bytes)))
        .collect();
    format!(
        "bytes written by cause: {}; {} trivial moves ({:.2} MiB not rewritten)",
        if causes.is_empty() {
            "none".to_string()
        } else {
            causes.join(", ")
        },
        io.trivial_moves,
        mib(io.trivial_move_bytes)
    )
}

impl Stats {
    /// The policies, their state and budgets, and what the filters and indexes hold.
    fn fmt_policy(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "policy: compaction={} filters={} (budget {:.2} bits/key{}, actual {:.2}, without skipped filters {:.2})",
            self.compaction_policy,
            self.filter_allocator,
            self.bits_per_key_budget,
            match self.bits_per_key_cap {
                Some(cap) => format!(", cap {cap:.2}"),
                None => String::new(),
            },
            self.average_bits_per_key,
            self.effective_bits_per_key
        )?;
        if let Some(state) = &self.compaction_state {
            writeln!(f, "compaction state: {state}")?;
        }
        for decision in &self.auto_tune {
            writeln!(f, "auto-tune {decision}")?;
        }
        let times = &self.probe_times;
        if let (Some(rejected), Some(cached), Some(device)) = (
            times.rejected.mean_nanos(),
            times.cached_block.mean_nanos(),
            times.device_block.mean_nanos(),
        ) {
            writeln!(
                f,
                "probes timed: {:.2} us answered by the filter, {:.2} us with a cached data block, {:.2} us with a device read; a cached false positive costs {} of a device read",
                rejected / 1e3,
                cached / 1e3,
                device / 1e3,
                self.cached_false_positive_cost()
                    .map_or_else(|| "(too few probes timed)".to_string(), |k| format!("{k:.3}"))
            )?;
        }
        if self.top_index_entries > 0 {
            writeln!(
                f,
                "top-level index: {} keys in {:.3} MiB",
                self.top_index_entries,
                mib(self.top_index_bytes)
            )?;
        }
        if self.range_filter_bytes > 0 {
            let entries = self.entries();
            writeln!(
                f,
                "range filters: {:.3} MiB in open files ({:.2} bits per entry of the tree)",
                mib(self.range_filter_bytes),
                if entries == 0 {
                    0.0
                } else {
                    self.range_filter_bytes as f64 * 8.0 / entries as f64
                }
            )?;
        }
        if let Some(budget) = self.filter_budget_bytes {
            writeln!(
                f,
                "filter memory in use: {:.3} MiB of a {:.3} MiB budget",
                mib(self.filter_bytes_in_use),
                mib(budget)
            )?;
        }
        Ok(())
    }

    /// One row per level.
    fn fmt_levels(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>5} {:>5} {:>6} {:>12} {:>12} {:>10} {:>8}",
            "level", "runs", "files", "entries", "MiB", "filterKiB", "bits/key"
        )?;
        for level in &self.levels {
            writeln!(
                f,
                "{:>5} {:>5} {:>6} {:>12} {:>12.2} {:>10.1} {:>8.2}",
                level.level,
                level.runs,
                level.files,
                level.entries,
                mib(level.bytes),
                level.filter_bytes as f64 / 1024.0,
                level.bits_per_key
            )?;
        }
        Ok(())
    }

    /// Memory, I/O, compression and background jobs.
    fn fmt_io(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "memory: memtables {:.2} MiB ({} immutable; key filters {:.3} MiB), block cache {:.2}/{:.2} MiB, pinned {:.2} MiB, access statistics {:.3} MiB, read-ahead windows {:.3} MiB, total {:.2} MiB",
            mib(self.memtable_bytes),
            self.immutable_memtables,
            mib(self.memtable_filter_bytes),
            mib(self.block_cache_bytes),
            mib(self.block_cache_capacity_bytes),
            mib(self.pinned_bytes),
            mib(self.access_statistics_bytes),
            mib(self.readahead_buffer_bytes),
            mib(self.total_memory_bytes)
        )?;
        let io = &self.io;
        writeln!(
            f,
            "reads from device: data {} index {} filter {} blocks ({:.2} MiB); cache hits data {} index {} filter {}",
            io.data_block_reads_total(),
            io.index_block_reads_total(),
            io.filter_block_reads_total(),
            mib(io.read_bytes),
            io.data_cache_hits,
            io.index_cache_hits,
            io.filter_cache_hits
        )?;
        writeln!(
            f,
            "lookups {} (found {}), filter probes {} negatives {} false positives {}, unnecessary data reads {}",
            io.point_lookups,
            io.point_lookups_found,
            io.filter_probes_total(),
            io.filter_negatives_total(),
            io.filter_false_positives_total(),
            io.unnecessary_data_reads_total()
        )?;
        writeln!(
            f,
            "writes: user {:.2} MiB, WAL {:.2} MiB ({} syncs), flush {:.2} MiB, compaction {:.2} MiB written / {:.2} MiB read; write amplification {:.2}",
            mib(io.user_write_bytes),
            mib(io.wal_write_bytes),
            io.wal_syncs,
            mib(io.flush_write_bytes),
            mib(io.compaction_write_bytes),
            mib(io.compaction_read_bytes),
            self.write_amplification
        )?;
        writeln!(f, "{}", write_causes_line(io))?;
        writeln!(
            f,
            "compression: {} data+index block MiB written as {:.2} MiB stored (ratio {:.2}; {} blocks compressed, {} left raw); compress {:.1} ms, decompress {:.1} ms ({} blocks)",
            format_args!("{:.2}", mib(io.block_bytes_uncompressed_total())),
            mib(io.block_bytes_stored_total()),
            io.compression_ratio(),
            io.blocks_compressed,
            io.blocks_left_uncompressed,
            io.compress_nanos as f64 / 1e6,
            io.decompress_nanos as f64 / 1e6,
            io.blocks_decompressed
        )?;
        let compressed_levels: Vec<String> = (0..io.block_bytes_stored.len())
            .filter(|&level| io.block_bytes_stored[level] != io.block_bytes_uncompressed[level])
            .map(|level| {
                format!(
                    "L{level} {:.2} -> {:.2} MiB",
                    mib(io.block_bytes_uncompressed[level]),
                    mib(io.block_bytes_stored[level])
                )
            })
            .collect();
        if !compressed_levels.is_empty() {
            writeln!(f, "compression by level: {}", compressed_levels.join(", "))?;
        }
        writeln!(
            f,
            "jobs: {} flushes, {} compactions ({:.1} s); stalls: {} slowdowns, {} stops, {:.1} ms",
            io.flushes,
            io.compactions,
            io.compaction_micros as f64 / 1e6,
            io.write_slowdowns,
            io.write_stops,
            io.write_stall_micros as f64 / 1e3
        )?;
        if io.filter_rebuilds > 0 {
            writeln!(
                f,
                "filter rebuilds: {} files, {} bytes read, {} bytes written",
                io.filter_rebuilds, io.filter_rebuild_read_bytes, io.filter_rebuild_write_bytes
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_policy(f)?;
        self.fmt_levels(f)?;
        self.fmt_io(f)?;
        write!(
            f,
            "recovery: {} WAL records replayed, {} bytes dropped; last sequence {}",
            self.wal_records_recovered, self.wal_bytes_dropped, self.last_sequence
        )?;
        if let Some(error) = &self.background_error {
            write!(f, "\nbackground error: {error}")?;
        }
        Ok(())
    }
}
