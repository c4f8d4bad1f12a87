//! I/O accounting and engine statistics (DESIGN.md §8), and the per-file access observer hook that
//! Merlin's statistics (DESIGN.md §4) plug into.
//!
//! Every counter is a relaxed atomic: counting never takes a lock on the read path. A block read
//! is counted where it happens — in the table reader, on a block-cache miss — so benchmarks count
//! device reads exactly, by kind and by level.

pub(crate) mod access_file;
pub mod lookups;
pub(crate) mod merlin;
mod report;
pub(crate) mod workload;

pub use report::{LevelStats, Stats};
pub use workload::{WorkloadMix, WorkloadTotals, LONG_SCAN_MIN_ENTRIES, MIN_WINDOW_QUERIES};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::limits::MAX_LEVELS;
use merlin::Merlin;

/// What a block holds, for I/O accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Key/value entries.
    Data = 0,
    /// Fence pointers to data blocks.
    Index = 1,
    /// A Bloom filter (or one module of a modular filter).
    Filter = 2,
}

pub(crate) const BLOCK_KINDS: usize = 3;

type PerLevel = [AtomicU64; MAX_LEVELS];

thread_local! {
    /// Nanoseconds of the device reads this thread has counted ([`IoCounters::count_block_read`]),
    /// wrapping: a caller reads it before and after some work to leave that work's device reads
    /// out of its time ([`thread_device_read_nanos`]).
    static THREAD_DEVICE_READ_NANOS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The nanoseconds of device reads the calling thread has counted so far (wrapping; only the
/// difference of two readings means anything): a timed iterator subtracts the difference
/// across one of its calls from the call's elapsed time, which leaves its processor time.
pub(crate) fn thread_device_read_nanos() -> u64 {
    THREAD_DEVICE_READ_NANOS.with(std::cell::Cell::get)
}

fn per_level() -> PerLevel {
    std::array::from_fn(|_| AtomicU64::new(0))
}

/// The engine's live counters. Snapshotted into [`IoStats`] by `Db::stats()`.
pub(crate) struct IoCounters {
    /// Blocks read from the device (block-cache misses), by kind and level.
    pub(crate) block_reads: [PerLevel; BLOCK_KINDS],
    /// Block-cache hits, by kind.
    pub(crate) block_cache_hits: [AtomicU64; BLOCK_KINDS],
    /// Bytes read from table files by lookups and scans (not compaction).
    pub(crate) read_bytes: AtomicU64,
    pub(crate) flush_write_bytes: AtomicU64,
    /// Versions flushes left out, hidden by a newer version of their key in the same memtable.
    pub(crate) flush_hidden_entries: AtomicU64,
    /// Every compaction's bytes written (policy jobs and full compactions, not filter rebuilds).
    pub(crate) compaction_write_bytes: AtomicU64,
    /// Of those, the policy's merges, by output level (level 0: level-0 runs merged into one).
    pub(crate) merge_write_bytes: PerLevel,
    /// Of those, full compactions (`Db::compact`).
    pub(crate) full_compaction_write_bytes: AtomicU64,
    /// Files moved to another level without being rewritten, and their bytes (never written).
    pub(crate) trivial_moves: AtomicU64,
    pub(crate) trivial_move_bytes: AtomicU64,
    pub(crate) compaction_read_bytes: AtomicU64,
    pub(crate) wal_write_bytes: AtomicU64,
    /// Bytes of keys and values the user wrote (write amplification's denominator).
    pub(crate) user_write_bytes: AtomicU64,
    pub(crate) wal_syncs: AtomicU64,
    pub(crate) filter_probes: PerLevel,
    pub(crate) filter_negatives: PerLevel,
    pub(crate) filter_false_positives: PerLevel,
    /// Files consulted by point lookups (key in range, not answered by a newer file), by level.
    pub(crate) files_probed: PerLevel,
    /// Files with a filter whose filter a lookup skipped (the allocator said it is not worth it).
    pub(crate) filter_skips: PerLevel,
    /// Files a bounded iterator asked its range filter about, by level.
    pub(crate) range_filter_probes: PerLevel,
    /// Files a bounded iterator left out because their range filter said the range is empty.
    pub(crate) range_filter_negatives: PerLevel,
    /// Runs an iterator seek positioned itself in, by level.
    pub(crate) seek_runs: PerLevel,
    /// Data blocks read from the device for a point lookup that did not hold the key.
    pub(crate) unnecessary_data_reads: PerLevel,
    /// Point lookups, counted here only while access statistics are off: with them on, Merlin's
    /// `D` counts them (see [`Self::count_lookups_with`]). Read through [`Self::point_lookups`].
    pub(crate) point_lookups: AtomicU64,
    /// Merlin, when access statistics are on: its `D` is the one lookup counter.
    lookup_clock: OnceLock<Arc<Merlin>>,
    /// Merlin's `D` at the last [`Self::reset`].
    lookups_at_reset: AtomicU64,
    /// Bytes held now by read-ahead windows (scans' and compactions'): a gauge of memory, not
    /// a count, so [`Self::reset`] leaves it alone.
    readahead_buffer_bytes: AtomicU64,
    pub(crate) point_lookups_found: AtomicU64,
    pub(crate) seeks: AtomicU64,
    /// Entries iterators returned (added when an iterator is dropped).
    pub(crate) scan_entries: AtomicU64,
    /// Range lookups that returned at least `workload::LONG_SCAN_MIN_ENTRIES` entries each.
    pub(crate) long_scans: AtomicU64,
    /// Entries the long scans returned.
    pub(crate) long_scan_entries: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) compaction_micros: AtomicU64,
    /// Processor time the compactions' threads spent in them ([`thread_processor_nanos`]).
    pub(crate) compaction_processor_micros: AtomicU64,
    /// Files rewritten to rebuild their filter (DESIGN.md §3.5 "Rebuild, priced").
    pub(crate) filter_rebuilds: AtomicU64,
    pub(crate) filter_rebuild_read_bytes: AtomicU64,
    pub(crate) filter_rebuild_write_bytes: AtomicU64,
    pub(crate) write_slowdowns: AtomicU64,
    pub(crate) write_stops: AtomicU64,
    pub(crate) write_stall_micros: AtomicU64,
    /// Uncompressed bytes of the data and index blocks flushes and compactions wrote, by level.
    pub(crate) block_bytes_uncompressed: PerLevel,
    /// The same blocks' bytes as stored (compressed or raw; trailers excluded), by level.
    pub(crate) block_bytes_stored: PerLevel,
    /// Blocks stored compressed.
    pub(crate) blocks_compressed: AtomicU64,
    /// Blocks a compressing level stored raw because compression did not save an eighth.
    pub(crate) blocks_left_uncompressed: AtomicU64,
    pub(crate) compress_nanos: AtomicU64,
    /// Compressed blocks read from the device and decompressed.
    pub(crate) blocks_decompressed: AtomicU64,
    pub(crate) decompress_nanos: AtomicU64,
    /// Elapsed time of the device reads behind `block_reads` (lookups' and scans' cache misses).
    pub(crate) block_read_nanos: AtomicU64,
    /// Scans' read-ahead (`table/readahead.rs`): device reads that filled a window, their bytes,
    /// and data blocks served from a window without a device read of their own.
    pub(crate) scan_readahead_reads: AtomicU64,
    pub(crate) scan_readahead_bytes: AtomicU64,
    pub(crate) scan_readahead_nanos: AtomicU64,
    pub(crate) scan_readahead_blocks: AtomicU64,
    /// Entries the user's write calls wrote (auto-tune's measured write costs, `db/write.rs`).
    pub(crate) write_entries: AtomicU64,
    /// Entries the timed write calls wrote: a call is timed when it carries the entry count
    /// across a multiple of `WRITE_TIMING_EVERY`.
    pub(crate) timed_write_entries: AtomicU64,
    /// The timed write calls' elapsed nanoseconds, less the stalls writers recorded meanwhile.
    pub(crate) timed_write_nanos: AtomicU64,
    /// The timed probes of every file, live or since deleted, by `lookups::ProbeOutcome`:
    /// probes and nanoseconds (auto-tune's measured read costs; a file's own sample,
    /// `FileState`'s, goes with the file when a compaction deletes it).
    pub(crate) probe_times: [(AtomicU64, AtomicU64); 3],
    /// The timed iterators' seeks (one iterator in sixteen times its calls, `db/iter.rs`), the
    /// runs those seeks positioned themselves in, and the processor nanoseconds the iterators
    /// spent inside their own calls, their device reads left out (auto-tune's price of a run a
    /// range lookup seeks, `model::auto_tune::Measurements`).
    pub(crate) timed_seeks: AtomicU64,
    pub(crate) timed_seek_runs: AtomicU64,
    pub(crate) timed_seek_nanos: AtomicU64,
    /// The timed lookups (one in sixteen) and their nanoseconds outside their file probes: the
    /// memtables, the read view, the statistics (auto-tune's price of a lookup).
    pub(crate) timed_lookups: AtomicU64,
    pub(crate) timed_lookup_nanos: AtomicU64,
}

impl Default for IoCounters {
    fn default() -> Self {
        IoCounters {
            block_reads: std::array::from_fn(|_| per_level()),
            block_cache_hits: std::array::from_fn(|_| AtomicU64::new(0)),
            read_bytes: AtomicU64::new(0),
            flush_write_bytes: AtomicU64::new(0),
            flush_hidden_entries: AtomicU64::new(0),
            compaction_write_bytes: AtomicU64::new(0),
            merge_write_bytes: per_level(),
            full_compaction_write_bytes: AtomicU64::new(0),
            trivial_moves: AtomicU64::new(0),
            trivial_move_bytes: AtomicU64::new(0),
            compaction_read_bytes: AtomicU64::new(0),
            wal_write_bytes: AtomicU64::new(0),
            user_write_bytes: AtomicU64::new(0),
            wal_syncs: AtomicU64::new(0),
            filter_probes: per_level(),
            filter_negatives: per_level(),
            filter_false_positives: per_level(),
            files_probed: per_level(),
            filter_skips: per_level(),
            range_filter_probes: per_level(),
            range_filter_negatives: per_level(),
            seek_runs: per_level(),
            unnecessary_data_reads: per_level(),
            point_lookups: AtomicU64::new(0),
            lookup_clock: OnceLock::new(),
            lookups_at_reset: AtomicU64::new(0),
            readahead_buffer_bytes: AtomicU64::new(0),
            point_lookups_found: AtomicU64::new(0),
            seeks: AtomicU64::new(0),
            scan_entries: AtomicU64::new(0),
            long_scans: AtomicU64::new(0),
            long_scan_entries: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            compaction_micros: AtomicU64::new(0),
            compaction_processor_micros: AtomicU64::new(0),
            filter_rebuilds: AtomicU64::new(0),
            filter_rebuild_read_bytes: AtomicU64::new(0),
            filter_rebuild_write_bytes: AtomicU64::new(0),
            write_slowdowns: AtomicU64::new(0),
            write_stops: AtomicU64::new(0),
            write_stall_micros: AtomicU64::new(0),
            block_bytes_uncompressed: per_level(),
            block_bytes_stored: per_level(),
            blocks_compressed: AtomicU64::new(0),
            blocks_left_uncompressed: AtomicU64::new(0),
            compress_nanos: AtomicU64::new(0),
            blocks_decompressed: AtomicU64::new(0),
            decompress_nanos: AtomicU64::new(0),
            block_read_nanos: AtomicU64::new(0),
            scan_readahead_reads: AtomicU64::new(0),
            scan_readahead_bytes: AtomicU64::new(0),
            scan_readahead_nanos: AtomicU64::new(0),
            scan_readahead_blocks: AtomicU64::new(0),
            write_entries: AtomicU64::new(0),
            timed_write_entries: AtomicU64::new(0),
            timed_seeks: AtomicU64::new(0),
            timed_seek_runs: AtomicU64::new(0),
            timed_seek_nanos: AtomicU64::new(0),
            timed_lookups: AtomicU64::new(0),
            timed_lookup_nanos: AtomicU64::new(0),
            timed_write_nanos: AtomicU64::new(0),
            probe_times: Default::default(),
        }
    }
}

pub(crate) fn add(counter: &AtomicU64, value: u64) {
    counter.fetch_add(value, Ordering::Relaxed);
}

fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

fn load_levels(counters: &PerLevel) -> [u64; MAX_LEVELS] {
    std::array::from_fn(|i| load(&counters[i]))
}

impl IoCounters {
    /// Takes Merlin's `D` as the count of point lookups from now on: a lookup then counts itself
    /// once, in Merlin's `begin_lookup`, not also in [`Self::point_lookups`]'s counter. A
    /// read-modify-write on a shared word costs a lookup tens of nanoseconds, several percent of
    /// one the block cache answers. Set once, at open, before the first lookup.
    pub(crate) fn count_lookups_with(&self, merlin: &Arc<Merlin>) {
        if self.lookup_clock.set(Arc::clone(merlin)).is_ok() {
            self.lookups_at_reset
                .store(merlin.lookups(), Ordering::Relaxed);
        }
    }

    /// A read-ahead window that held `before` bytes now holds `after`.
    pub(crate) fn count_readahead_buffer(&self, before: usize, after: usize) {
        let (before, after) = (before as u64, after as u64);
        if after >= before {
            self.readahead_buffer_bytes
                .fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.readahead_buffer_bytes
                .fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Bytes held now by read-ahead windows.
    pub(crate) fn readahead_buffer_bytes(&self) -> u64 {
        load(&self.readahead_buffer_bytes)
    }

    /// Point lookups since the last [`Self::reset`].
    pub(crate) fn point_lookups(&self) -> u64 {
        match self.lookup_clock.get() {
            Some(merlin) => merlin
                .lookups()
                .saturating_sub(self.lookups_at_reset.load(Ordering::Relaxed)),
            None => load(&self.point_lookups),
        }
    }

    pub(crate) fn count_block_read(&self, kind: BlockKind, level: usize, bytes: u64, nanos: u64) {
        add(
            &self.block_reads[kind as usize][level.min(MAX_LEVELS - 1)],
            1,
        );
        add(&self.read_bytes, bytes);
        add(&self.block_read_nanos, nanos);
        THREAD_DEVICE_READ_NANOS.with(|total| total.set(total.get().wrapping_add(nanos)));
    }

    /// Counts one timed lookup that spent `nanos` outside its file probes.
    pub(crate) fn count_timed_lookup(&self, nanos: u64) {
        add(&self.timed_lookups, 1);
        add(&self.timed_lookup_nanos, nanos);
    }

    /// Counts what one timed iterator measured over its life: `seeks` seeks, positioned in
    /// `runs` runs in all, and `nanos` processor nanoseconds spent in its calls outside device
    /// reads.
    pub(crate) fn count_timed_seeks(&self, seeks: u64, runs: u64, nanos: u64) {
        add(&self.timed_seeks, seeks);
        add(&self.timed_seek_runs, runs);
        add(&self.timed_seek_nanos, nanos);
    }

    /// Counts what compressing a new table file's blocks on `level` did.
    pub(crate) fn count_compression(&self, level: usize, counts: &CompressionCounts) {
        let level = level.min(MAX_LEVELS - 1);
        add(&self.block_bytes_uncompressed[level], counts.raw_bytes);
        add(&self.block_bytes_stored[level], counts.stored_bytes);
        add(&self.blocks_compressed, counts.compressed_blocks);
        add(&self.blocks_left_uncompressed, counts.raw_blocks);
        add(&self.compress_nanos, counts.compress_nanos);
    }

    /// Counts the bytes a compaction wrote: a full compaction's (`full`), or a policy merge's
    /// into `output_level`.
    pub(crate) fn count_compaction_write(&self, full: bool, output_level: usize, bytes: u64) {
        add(&self.compaction_write_bytes, bytes);
        if full {
            add(&self.full_compaction_write_bytes, bytes);
        } else {
            add(
                &self.merge_write_bytes[output_level.min(MAX_LEVELS - 1)],
                bytes,
            );
        }
    }

    /// Counts `files` files moved to another level without being rewritten.
    pub(crate) fn count_trivial_move(&self, files: u64, file_bytes: u64) {
        add(&self.trivial_moves, files);
        add(&self.trivial_move_bytes, file_bytes);
    }

    /// Counts one block decompressed after a device read.
    pub(crate) fn count_decompression(&self, nanos: u64) {
        add(&self.blocks_decompressed, 1);
        add(&self.decompress_nanos, nanos);
    }

    /// The device reads of one block each that lookups and scans made (data, index and filter
    /// blocks; read-ahead fills, which read several, left out) and their elapsed nanoseconds:
    /// what a page read costs on this device under the load it has, auto-tune's read price
    /// when the lookups' timed probes are too few (`model::auto_tune::Measurements`).
    pub(crate) fn single_block_reads(&self) -> (u64, u64) {
        let reads: u64 = self
            .block_reads
            .iter()
            .flat_map(|levels| levels.iter().map(load))
            .sum();
        let reads = reads.saturating_sub(load(&self.scan_readahead_reads));
        let nanos = load(&self.block_read_nanos).saturating_sub(load(&self.scan_readahead_nanos));
        (reads, nanos)
    }

    /// Counts a read-ahead window's fill: one device read of `bytes` for a data block on
    /// `level`, which took `nanos`.
    pub(crate) fn count_readahead_read(&self, level: usize, bytes: u64, nanos: u64) {
        self.count_block_read(BlockKind::Data, level, bytes, nanos);
        add(&self.scan_readahead_reads, 1);
        add(&self.scan_readahead_bytes, bytes);
        add(&self.scan_readahead_nanos, nanos);
    }

    /// Counts a data block served from a read-ahead window (no device read of its own).
    pub(crate) fn count_readahead_block(&self) {
        add(&self.scan_readahead_blocks, 1);
    }

    pub(crate) fn count_cache_hit(&self, kind: BlockKind) {
        self.count_cache_hits(kind, 1);
    }

    /// Counts `hits` blocks of `kind` served by the block cache at once: a file's filter
    /// modules, probed from one cache entry, are counted with one shared-word update.
    pub(crate) fn count_cache_hits(&self, kind: BlockKind, hits: u64) {
        if hits > 0 {
            add(&self.block_cache_hits[kind as usize], hits);
        }
    }

    /// Counts a timed probe of any file that took `nanos` and read what `outcome` says.
    pub(crate) fn count_probe_time(&self, outcome: lookups::ProbeOutcome, nanos: u64) {
        let (probes, total) = &self.probe_times[outcome.index()];
        add(probes, 1);
        add(total, nanos);
    }

    /// The timed probes [`IoCounters::count_probe_time`] counted.
    pub(crate) fn probe_times(&self) -> lookups::ProbeTimes {
        let time = |outcome: lookups::ProbeOutcome| {
            let (probes, nanos) = &self.probe_times[outcome.index()];
            lookups::ProbeTime {
                probes: load(probes),
                nanos: load(nanos),
            }
        };
        lookups::ProbeTimes {
            rejected: time(lookups::ProbeOutcome::Rejected),
            cached_block: time(lookups::ProbeOutcome::CachedBlock),
            device_block: time(lookups::ProbeOutcome::DeviceBlock),
        }
    }

    /// The counters of the workload mix (`workload::WorkloadTotals`; `writes` is left 0).
    pub(crate) fn workload_counts(&self) -> WorkloadTotals {
        WorkloadTotals {
            point_lookups: self.point_lookups(),
            point_lookups_found: load(&self.point_lookups_found),
            seeks: load(&self.seeks),
            scan_entries: load(&self.scan_entries),
            long_scans: load(&self.long_scans),
            long_scan_entries: load(&self.long_scan_entries),
            writes: 0,
        }
    }

    /// Sets every counter to zero (between benchmark phases).
    pub(crate) fn reset(&self) {
        let all_levels = self.block_reads.iter().chain([
            &self.filter_probes,
            &self.filter_negatives,
            &self.filter_false_positives,
            &self.files_probed,
            &self.filter_skips,
            &self.range_filter_probes,
            &self.range_filter_negatives,
            &self.seek_runs,
            &self.unnecessary_data_reads,
            &self.block_bytes_uncompressed,
            &self.block_bytes_stored,
            &self.merge_write_bytes,
        ]);
        for levels in all_levels {
            for counter in levels {
                counter.store(0, Ordering::Relaxed);
            }
        }
        for counter in self.block_cache_hits.iter().chain([
            &self.read_bytes,
            &self.flush_write_bytes,
            &self.flush_hidden_entries,
            &self.compaction_write_bytes,
            &self.full_compaction_write_bytes,
            &self.trivial_moves,
            &self.trivial_move_bytes,
            &self.compaction_read_bytes,
            &self.wal_write_bytes,
            &self.user_write_bytes,
            &self.wal_syncs,
            &self.point_lookups,
            &self.point_lookups_found,
            &self.seeks,
            &self.scan_entries,
            &self.long_scans,
            &self.long_scan_entries,
            &self.flushes,
            &self.compactions,
            &self.compaction_micros,
            &self.compaction_processor_micros,
            &self.filter_rebuilds,
            &self.filter_rebuild_read_bytes,
            &self.filter_rebuild_write_bytes,
            &self.write_slowdowns,
            &self.write_stops,
            &self.write_stall_micros,
            &self.blocks_compressed,
            &self.blocks_left_uncompressed,
            &self.compress_nanos,
            &self.blocks_decompressed,
            &self.decompress_nanos,
            &self.block_read_nanos,
            &self.scan_readahead_reads,
            &self.scan_readahead_bytes,
            &self.scan_readahead_nanos,
            &self.scan_readahead_blocks,
            &self.write_entries,
            &self.timed_write_entries,
            &self.timed_write_nanos,
            &self.timed_seeks,
            &self.timed_seek_runs,
            &self.timed_seek_nanos,
            &self.timed_lookups,
            &self.timed_lookup_nanos,
        ]) {
            counter.store(0, Ordering::Relaxed);
        }
        for (probes, nanos) in &self.probe_times {
            probes.store(0, Ordering::Relaxed);
            nanos.store(0, Ordering::Relaxed);
        }
        if let Some(merlin) = self.lookup_clock.get() {
            self.lookups_at_reset
                .store(merlin.lookups(), Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> IoStats {
        let reads = |kind: BlockKind| load_levels(&self.block_reads[kind as usize]);
        IoStats {
            data_block_reads: reads(BlockKind::Data),
            index_block_reads: reads(BlockKind::Index),
            filter_block_reads: reads(BlockKind::Filter),
            data_cache_hits: load(&self.block_cache_hits[BlockKind::Data as usize]),
            index_cache_hits: load(&self.block_cache_hits[BlockKind::Index as usize]),
            filter_cache_hits: load(&self.block_cache_hits[BlockKind::Filter as usize]),
            read_bytes: load(&self.read_bytes),
            flush_write_bytes: load(&self.flush_write_bytes),
            flush_hidden_entries: load(&self.flush_hidden_entries),
            compaction_write_bytes: load(&self.compaction_write_bytes),
            merge_write_bytes: load_levels(&self.merge_write_bytes),
            full_compaction_write_bytes: load(&self.full_compaction_write_bytes),
            trivial_moves: load(&self.trivial_moves),
            trivial_move_bytes: load(&self.trivial_move_bytes),
            compaction_read_bytes: load(&self.compaction_read_bytes),
            wal_write_bytes: load(&self.wal_write_bytes),
            user_write_bytes: load(&self.user_write_bytes),
            wal_syncs: load(&self.wal_syncs),
            filter_probes: load_levels(&self.filter_probes),
            filter_negatives: load_levels(&self.filter_negatives),
            filter_false_positives: load_levels(&self.filter_false_positives),
            files_probed: load_levels(&self.files_probed),
            filter_skips: load_levels(&self.filter_skips),
            range_filter_probes: load_levels(&self.range_filter_probes),
            range_filter_negatives: load_levels(&self.range_filter_negatives),
            seek_runs: load_levels(&self.seek_runs),
            unnecessary_data_reads: load_levels(&self.unnecessary_data_reads),
            point_lookups: self.point_lookups(),
            point_lookups_found: load(&self.point_lookups_found),
            seeks: load(&self.seeks),
            scan_entries: load(&self.scan_entries),
            flushes: load(&self.flushes),
            compactions: load(&self.compactions),
            compaction_micros: load(&self.compaction_micros),
            compaction_processor_micros: load(&self.compaction_processor_micros),
            filter_rebuilds: load(&self.filter_rebuilds),
            filter_rebuild_read_bytes: load(&self.filter_rebuild_read_bytes),
            filter_rebuild_write_bytes: load(&self.filter_rebuild_write_bytes),
            write_slowdowns: load(&self.write_slowdowns),
            write_stops: load(&self.write_stops),
            write_stall_micros: load(&self.write_stall_micros),
            block_bytes_uncompressed: load_levels(&self.block_bytes_uncompressed),
            block_bytes_stored: load_levels(&self.block_bytes_stored),
            blocks_compressed: load(&self.blocks_compressed),
            blocks_left_uncompressed: load(&self.blocks_left_uncompressed),
            compress_nanos: load(&self.compress_nanos),
            blocks_decompressed: load(&self.blocks_decompressed),
            decompress_nanos: load(&self.decompress_nanos),
            block_read_nanos: load(&self.block_read_nanos),
            scan_readahead_reads: load(&self.scan_readahead_reads),
            scan_readahead_bytes: load(&self.scan_readahead_bytes),
            scan_readahead_nanos: load(&self.scan_readahead_nanos),
            scan_readahead_blocks: load(&self.scan_readahead_blocks),
        }
    }
}

/// A snapshot of the I/O counters since open or the last `Db::reset_stats()`. Arrays are indexed
/// by level.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoStats {
    /// Data blocks read from the device (block-cache misses), by level.
    pub data_block_reads: [u64; MAX_LEVELS],
    /// Index blocks read from the device, by level: whole-file index blocks and, in partitioned
    /// tables (`Options::partition_metadata_above_bytes`), index partitions (the top-level index
    /// is read when the table opens and held, and is not counted).
    pub index_block_reads: [u64; MAX_LEVELS],
    /// Filter blocks read from the device, by level: filter modules and, in partitioned tables,
    /// filter partitions (one per module probed).
    pub filter_block_reads: [u64; MAX_LEVELS],
    /// Data-block cache hits.
    pub data_cache_hits: u64,
    /// Index-block cache hits.
    pub index_cache_hits: u64,
    /// Filter-block cache hits.
    pub filter_cache_hits: u64,
    /// Bytes read from table files by lookups and scans.
    pub read_bytes: u64,
    /// Bytes written by flushes.
    pub flush_write_bytes: u64,
    /// Entries flushes left out: older versions of a key hidden by a newer version in the same
    /// memtable that every live snapshot sees (the rule compaction drops them by).
    pub flush_hidden_entries: u64,
    /// Bytes written by compactions: the policy's merges and full compactions, not filter
    /// rebuilds (`merge_write_bytes` summed plus `full_compaction_write_bytes`).
    pub compaction_write_bytes: u64,
    /// Bytes the compaction policy's merges wrote, by the level they wrote: index 0 holds
    /// level-0 runs merged into one level-0 run (RocksDB's intra-L0 compaction), index `L` the
    /// merges into level `L` (from level 0 or from level `L - 1`, or a level merged in place).
    pub merge_write_bytes: [u64; MAX_LEVELS],
    /// Bytes full compactions (`Db::compact`) wrote.
    pub full_compaction_write_bytes: u64,
    /// Files the policy moved to another level without rewriting them (trivial moves).
    pub trivial_moves: u64,
    /// Bytes of those files: moved, never written (not in any write count).
    pub trivial_move_bytes: u64,
    /// Bytes read by compactions.
    pub compaction_read_bytes: u64,
    /// Bytes written to the write-ahead log.
    pub wal_write_bytes: u64,
    /// Bytes of keys and values written by the user.
    pub user_write_bytes: u64,
    /// WAL fsyncs.
    pub wal_syncs: u64,
    /// Filter probes, by level.
    pub filter_probes: [u64; MAX_LEVELS],
    /// Probes the filter answered "definitely not here", by level.
    pub filter_negatives: [u64; MAX_LEVELS],
    /// Probes the filter let through although the file did not hold the key, by level.
    pub filter_false_positives: [u64; MAX_LEVELS],
    /// Files a point lookup consulted (key in range, not answered by a newer file), by level.
    pub files_probed: [u64; MAX_LEVELS],
    /// Probes of files that have a filter whose filter was skipped (DESIGN.md §3.3-3.4), by level.
    pub filter_skips: [u64; MAX_LEVELS],
    /// Files a bounded iterator (both bounds set) asked its range filter about, by level.
    pub range_filter_probes: [u64; MAX_LEVELS],
    /// Files a bounded iterator left out because their range filter said no key lies in its
    /// bounds (it reads nothing of them), by level.
    pub range_filter_negatives: [u64; MAX_LEVELS],
    /// Runs an iterator seek positioned itself in (each read at least an index block of one of
    /// the run's files, cached or not), by level: the runs a range lookup pays for.
    pub seek_runs: [u64; MAX_LEVELS],
    /// Data blocks read from the device by point lookups that did not hold the key, by level.
    pub unnecessary_data_reads: [u64; MAX_LEVELS],
    /// Point lookups (`get`).
    pub point_lookups: u64,
    /// Point lookups that found a value.
    pub point_lookups_found: u64,
    /// Iterator seeks (a scan from the start of the key space counts as one).
    pub seeks: u64,
    /// Entries iterators returned (counted when each iterator is dropped).
    pub scan_entries: u64,
    /// Memtable flushes completed.
    pub flushes: u64,
    /// Compactions completed (filter rebuilds not included).
    pub compactions: u64,
    /// Time spent in compactions, microseconds.
    pub compaction_micros: u64,
    /// Processor time the compactions' threads spent in them, microseconds (0 where the system
    /// does not report a thread's processor time: Linux's `/proc/thread-self/schedstat`).
    pub compaction_processor_micros: u64,
    /// Table files rewritten in place to give their filter more bits on disk (elastic
    /// filters' priced rebuild, DESIGN.md §3.5; `Options::filter_rebuild_bytes_per_sec`).
    pub filter_rebuilds: u64,
    /// Bytes those rebuilds read (the rewritten files' sizes).
    pub filter_rebuild_read_bytes: u64,
    /// Bytes those rebuilds wrote (not in `compaction_write_bytes`).
    pub filter_rebuild_write_bytes: u64,
    /// Writes delayed because level 0 or the memtables were filling up.
    pub write_slowdowns: u64,
    /// Writes stopped until a flush or compaction caught up.
    pub write_stops: u64,
    /// Total time writers spent stalled, microseconds.
    pub write_stall_micros: u64,
    /// Uncompressed bytes of the data and index blocks that flushes and compactions wrote, by the
    /// level written to (filter and properties blocks are never compressed and not counted).
    pub block_bytes_uncompressed: [u64; MAX_LEVELS],
    /// The same blocks' bytes as stored, compressed or raw, trailers excluded, by level.
    pub block_bytes_stored: [u64; MAX_LEVELS],
    /// Blocks stored compressed.
    pub blocks_compressed: u64,
    /// Blocks written on a compressing level but stored raw: compressing them did not save an
    /// eighth of their bytes.
    pub blocks_left_uncompressed: u64,
    /// Time spent in the compressor (flush and compaction threads), nanoseconds: elapsed time
    /// around each call (`Instant`), as RocksDB's `compression.times.nanos`, so it includes any
    /// time the thread was descheduled; a per-call thread-CPU clock would cost more than an LZ4
    /// call on a 4 KiB block.
    pub compress_nanos: u64,
    /// Compressed blocks read from table files and decompressed (block-cache misses and
    /// compaction inputs; the cache holds blocks uncompressed, so hits cost nothing).
    pub blocks_decompressed: u64,
    /// Time spent in the decompressor, nanoseconds (elapsed, like `compress_nanos`).
    pub decompress_nanos: u64,
    /// Elapsed time of the device reads counted in `data_block_reads`, `index_block_reads` and
    /// `filter_block_reads` (lookups' and scans' block-cache misses, decompression included;
    /// compaction inputs not), nanoseconds: the time lookups and scans wait on the device, which
    /// neither CPU time nor block counts show. Elapsed like `decompress_nanos`.
    pub block_read_nanos: u64,
    /// Device reads a scan's read-ahead made (`Options::scan_readahead_max_bytes`): each one
    /// read of several data blocks' bytes, and each also counted once in `data_block_reads`
    /// (on the level of the block that started it), in `read_bytes` (all its bytes) and in
    /// `block_read_nanos`.
    pub scan_readahead_reads: u64,
    /// Bytes those reads read.
    pub scan_readahead_bytes: u64,
    /// Elapsed time of those reads, nanoseconds (also in `block_read_nanos`): the device reads
    /// of one block each are `block_read_nanos` less these.
    pub scan_readahead_nanos: u64,
    /// Data blocks a scan took from a read-ahead window without a device read of their own
    /// (not in `data_block_reads`): a scan's data blocks that missed the block cache are
    /// `data_block_reads` plus these.
    pub scan_readahead_blocks: u64,
}

impl IoStats {
    /// Data blocks read from the device, all levels.
    pub fn data_block_reads_total(&self) -> u64 {
        self.data_block_reads.iter().sum()
    }
    /// Index blocks read from the device, all levels.
    pub fn index_block_reads_total(&self) -> u64 {
        self.index_block_reads.iter().sum()
    }
    /// Filter blocks read from the device, all levels.
    pub fn filter_block_reads_total(&self) -> u64 {
        self.filter_block_reads.iter().sum()
    }
    /// Filter probes, all levels.
    pub fn filter_probes_total(&self) -> u64 {
        self.filter_probes.iter().sum()
    }
    /// Filter false positives, all levels.
    pub fn filter_false_positives_total(&self) -> u64 {
        self.filter_false_positives.iter().sum()
    }
    /// Skipped filter probes, all levels.
    pub fn filter_skips_total(&self) -> u64 {
        self.filter_skips.iter().sum()
    }

    /// Range filter probes over every level.
    pub fn range_filter_probes_total(&self) -> u64 {
        self.range_filter_probes.iter().sum()
    }

    /// Files left out by their range filter over every level.
    pub fn range_filter_negatives_total(&self) -> u64 {
        self.range_filter_negatives.iter().sum()
    }

    /// Runs iterator seeks positioned themselves in, over every level.
    pub fn seek_runs_total(&self) -> u64 {
        self.seek_runs.iter().sum()
    }
    /// Filter negatives, all levels.
    pub fn filter_negatives_total(&self) -> u64 {
        self.filter_negatives.iter().sum()
    }
    /// Unnecessary data-block reads, all levels.
    pub fn unnecessary_data_reads_total(&self) -> u64 {
        self.unnecessary_data_reads.iter().sum()
    }
    /// Uncompressed bytes of data and index blocks written, all levels.
    pub fn block_bytes_uncompressed_total(&self) -> u64 {
        self.block_bytes_uncompressed.iter().sum()
    }
    /// Stored bytes of data and index blocks written, all levels.
    pub fn block_bytes_stored_total(&self) -> u64 {
        self.block_bytes_stored.iter().sum()
    }
    /// Uncompressed over stored bytes of the data and index blocks written (2.0 = half the
    /// space); 1.0 before any write or without compression.
    pub fn compression_ratio(&self) -> f64 {
        let stored = self.block_bytes_stored_total();
        if stored == 0 {
            return 1.0;
        }
        self.block_bytes_uncompressed_total() as f64 / stored as f64
    }
    /// Bytes written to table files: flushes, compactions and filter rebuilds. Every byte the
    /// engine appends to a table file is in exactly one of the three.
    pub fn table_write_bytes(&self) -> u64 {
        self.flush_write_bytes + self.compaction_write_bytes + self.filter_rebuild_write_bytes
    }

    /// Bytes written to table files over bytes the user wrote ([`IoStats::table_write_bytes`]
    /// / `user_write_bytes`, as RocksDB's flush and compaction bytes over the user's: the WAL is
    /// not counted); 0 before any write. Filter rebuilds count: they rewrite files on the
    /// device as compactions do.
    pub fn write_amplification(&self) -> f64 {
        if self.user_write_bytes == 0 {
            return 0.0;
        }
        self.table_write_bytes() as f64 / self.user_write_bytes as f64
    }

    /// Bytes written, by what wrote them, in a fixed order: `wal`, `flush`, `L0->L0` (level-0
    /// runs merged into one), `->L1` ... (the policy's merges into each level), `full`
    /// (`Db::compact`), `rebuild` (filter rebuilds). Causes that wrote nothing are left out.
    /// Every cause but `wal` is in [`IoStats::table_write_bytes`], which they sum to.
    pub fn write_causes(&self) -> Vec<(String, u64)> {
        let mut causes = vec![
            ("wal".to_string(), self.wal_write_bytes),
            ("flush".to_string(), self.flush_write_bytes),
            ("L0->L0".to_string(), self.merge_write_bytes[0]),
        ];
        causes.extend(
            self.merge_write_bytes
                .iter()
                .enumerate()
                .skip(1)
                .map(|(level, &bytes)| (format!("->L{level}"), bytes)),
        );
        causes.push(("full".to_string(), self.full_compaction_write_bytes));
        causes.push(("rebuild".to_string(), self.filter_rebuild_write_bytes));
        causes.retain(|(_, bytes)| *bytes > 0);
        causes
    }
}

/// One file a point lookup consulted, for per-file access statistics (DESIGN.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileProbe {
    pub(crate) file_number: u64,
    /// True if the file held the key (a value or a tombstone).
    pub(crate) found: bool,
}

/// Receives what the engine learns about file accesses. The default is a no-op; Merlin (DESIGN.md §4)
/// implements it. Called on the lookup path without any lock held, so implementations must not
/// block.
pub(crate) trait AccessObserver: Send + Sync {
    /// A point lookup finished; `probes` are the files it consulted, newest first.
    fn lookup_finished(&self, probes: &[FileProbe]);
    /// A compaction emitted an entry read from `source_file` into `output_file`.
    fn compaction_entry(&self, source_file: u64, output_file: u64);
}

/// The default observer: ignores everything.
pub(crate) struct NoopObserver;

impl AccessObserver for NoopObserver {
    fn lookup_finished(&self, _probes: &[FileProbe]) {}
    fn compaction_entry(&self, _source_file: u64, _output_file: u64) {}
}

/// What compressing a table's blocks did, summed over the blocks offered to the compressor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CompressionCounts {
    /// Uncompressed bytes of the blocks offered.
    pub(crate) raw_bytes: u64,
    /// Bytes those blocks occupy as stored (compressed or raw), trailers excluded.
    pub(crate) stored_bytes: u64,
    /// Blocks stored compressed.
    pub(crate) compressed_blocks: u64,
    /// Blocks stored raw because compressing did not save an eighth.
    pub(crate) raw_blocks: u64,
    /// Elapsed time spent in the compressor, nanoseconds.
    pub(crate) compress_nanos: u64,
}

impl CompressionCounts {
    pub(crate) fn add(&mut self, other: &CompressionCounts) {
        self.raw_bytes += other.raw_bytes;
        self.stored_bytes += other.stored_bytes;
        self.compressed_blocks += other.compressed_blocks;
        self.raw_blocks += other.raw_blocks;
        self.compress_nanos += other.compress_nanos;
    }
}

/// Processor time the calling thread has used, in nanoseconds, where the system reports it: on
/// Linux the first field of `/proc/thread-self/schedstat` (time on a processor); `None`
/// elsewhere or when it cannot be read. Compactions count theirs
/// (`IoCounters::compaction_processor_micros`): auto-tune prices the part of it a writer pays
/// where merges share its processors (DESIGN.md §10, "Measured costs").
pub(crate) fn thread_processor_nanos() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    /// A thread's processor time, where the system reports it, grows while the thread works and
    /// not while it sleeps.
    #[test]
    fn a_threads_processor_time_counts_its_work_not_its_sleep() {
        let Some(before) = super::thread_processor_nanos() else {
            // Not Linux, or no `/proc`: compactions then count no processor time.
            assert!(!std::path::Path::new("/proc/thread-self/schedstat").exists());
            return;
        };
        // Work until 10 ms of processor time are counted, under a deadline far beyond what that
        // takes on a busy machine: a fixed stretch of wall time would count only the share of
        // it the scheduler gave this thread beside the other tests.
        let started = std::time::Instant::now();
        let mut x = 0u64;
        let worked = loop {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let now = super::thread_processor_nanos().expect("still readable");
            if now - before >= 10_000_000 {
                break now;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{} ns counted in 30 s of work",
                now - before
            );
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        let slept = super::thread_processor_nanos().expect("still readable");
        assert!(slept - worked < 50_000_000, "{} ns asleep", slept - worked);
    }

    use super::*;

    /// Auto-tune's counted read price takes the device reads of one block each: a read-ahead
    /// fill (several blocks in one read) is left out of both the count and the time.
    #[test]
    fn single_block_reads_leave_out_read_ahead_fills() {
        let counters = IoCounters::default();
        assert_eq!(counters.single_block_reads(), (0, 0));
        counters.count_block_read(BlockKind::Data, 2, 4096, 700);
        counters.count_block_read(BlockKind::Index, 1, 4096, 500);
        counters.count_block_read(BlockKind::Filter, 0, 4096, 300);
        counters.count_readahead_read(2, 65_536, 9_000);
        assert_eq!(counters.single_block_reads(), (3, 1_500));
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.data_block_reads_total(), 2);
        assert_eq!(snapshot.block_read_nanos, 10_500);
        assert_eq!(snapshot.scan_readahead_nanos, 9_000);
        counters.reset();
        assert_eq!(counters.single_block_reads(), (0, 0));
        assert_eq!(counters.snapshot().scan_readahead_nanos, 0);
    }

    #[test]
    fn counters_snapshot_and_reset() {
        let counters = IoCounters::default();
        counters.count_block_read(BlockKind::Data, 2, 4096, 700);
        counters.count_block_read(BlockKind::Filter, 40, 100, 300); // clamped to the last level slot
        add(&counters.user_write_bytes, 100);
        add(&counters.flush_write_bytes, 150);
        add(&counters.compaction_write_bytes, 250);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.data_block_reads[2], 1);
        assert_eq!(snapshot.filter_block_reads[MAX_LEVELS - 1], 1);
        assert_eq!(snapshot.read_bytes, 4196);
        assert_eq!(snapshot.block_read_nanos, 1000);
        assert!((snapshot.write_amplification() - 4.0).abs() < 1e-12);
        assert_eq!(snapshot.compression_ratio(), 1.0);
        counters.count_compression(
            1,
            &CompressionCounts {
                raw_bytes: 8_000,
                stored_bytes: 2_000,
                compressed_blocks: 2,
                raw_blocks: 1,
                compress_nanos: 50,
            },
        );
        counters.count_decompression(30);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.block_bytes_uncompressed[1], 8_000);
        assert_eq!(snapshot.block_bytes_stored_total(), 2_000);
        assert!((snapshot.compression_ratio() - 4.0).abs() < 1e-12);
        assert_eq!(
            (
                snapshot.blocks_compressed,
                snapshot.blocks_left_uncompressed
            ),
            (2, 1)
        );
        assert_eq!(
            (
                snapshot.compress_nanos,
                snapshot.blocks_decompressed,
                snapshot.decompress_nanos
            ),
            (50, 1, 30)
        );
        counters.reset();
        assert_eq!(counters.snapshot(), IoStats::default());
    }
}
