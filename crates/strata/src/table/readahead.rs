//! Large sequential reads of a table file: a compaction's walk of its inputs, and a scan's
//! read-ahead once it reads a file's blocks in order.
//!
//! A compaction reads every data block of every input file in order. Read block by block, that is
//! one `pread` per 4 KiB block: the kernel's readahead hides the cost when reads go through the
//! page cache, but with `Options::direct_reads` (O_DIRECT) there is no kernel readahead and every
//! block is a device round trip, which starved compactions and stalled writers (a load ran at
//! 0.19x RocksDB's throughput with direct reads on). RocksDB reads compaction inputs in 2 MiB chunks
//! (`compaction_readahead_size`); [`Readahead`] does the same: it keeps one window of the file and
//! serves blocks from it, refilling it with one read when a block falls outside.
//!
//! A scan does not know how far it will read, so it reads ahead only once its reads look
//! sequential, as RocksDB's iterators do (auto-readahead, `BlockPrefetcher`): [`ScanReadahead`]
//! watches the data blocks a file's iterator loads, and once two consecutive blocks of the file
//! have been loaded in a row (from the cache or the device), the next block-cache miss reads
//! that block and [`INITIAL_SCAN_READAHEAD_BYTES`] after it in one device read, and every later
//! fill reads twice as far ahead, up to `Options::scan_readahead_max_bytes`. A load that does
//! not follow the one before (a seek elsewhere) starts the count over at the initial size. A
//! long scan of 100 entries of 264 bytes reads about 6.5 data blocks of 4 KiB: one device read
//! each without read-ahead; two single reads and then one or two fills with it.
//!
//! The window never extends past `limit` (the end of the file's data blocks), so reading ahead
//! does not drag the filter and index blocks in with the last chunk. Blocks are copied out of the
//! window so that each decoded block owns its bytes, like a block read on its own; each is
//! checked against its own checksum when it is taken from the window, so a corrupt block inside
//! a window is an error of that block, met when the scan reaches it.

use std::sync::Arc;

use crate::env::RandomAccessFile;
use crate::error::Result;
use crate::stats::IoCounters;

/// A read-ahead window over one file.
pub(crate) struct Readahead {
    chunk_bytes: usize,
    window_offset: u64,
    window: Vec<u8>,
    bytes_read: u64,
    /// Where the window's memory is counted (`IoCounters::readahead_buffer_bytes`), and how
    /// much of it this window has counted there.
    gauge: Option<(Arc<IoCounters>, usize)>,
}

impl Drop for Readahead {
    fn drop(&mut self) {
        if let Some((counters, counted)) = &self.gauge {
            counters.count_readahead_buffer(*counted, 0);
        }
    }
}

impl Readahead {
    /// A window refilled `chunk_bytes` at a time (0 reads exactly the requested bytes).
    pub(crate) fn new(chunk_bytes: usize) -> Self {
        Readahead {
            chunk_bytes,
            window_offset: 0,
            window: Vec::new(),
            bytes_read: 0,
            gauge: None,
        }
    }

    /// Counts the window's memory in `counters` while the window lives (`Stats`'s total memory).
    pub(crate) fn counted_in(mut self, counters: Arc<IoCounters>) -> Self {
        self.gauge = Some((counters, 0));
        self
    }

    /// Changes how far the next refill reads from the block that needs it.
    pub(crate) fn set_chunk_bytes(&mut self, chunk_bytes: usize) {
        self.chunk_bytes = chunk_bytes;
    }

    /// Bytes read from the file so far (what a reader's I/O counters should be charged).
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The `len` bytes at `offset`, from the window or from one read that extends the window to
    /// `chunk_bytes` from `offset` (never past `limit`, but always the whole request). The caller
    /// has checked that the request lies inside the file; if the file still gives fewer bytes
    /// (a short read: a file truncated under the engine, or a failing device), the answer is
    /// shorter than `len`, and the caller reports it (a block's checksum cannot be checked on
    /// part of it).
    pub(crate) fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        offset: u64,
        len: usize,
        limit: u64,
    ) -> Result<Vec<u8>> {
        let end = offset + len as u64;
        let window_end = self.window_offset + self.window.len() as u64;
        if offset < self.window_offset || end > window_end {
            let want_end = offset
                .saturating_add(self.chunk_bytes as u64)
                .min(limit)
                .max(end);
            // A block that straddles the window's end keeps its first part; only the bytes
            // after the window are read, so no byte is read twice in a front-to-back walk.
            let (read_from, mut window) = if (self.window_offset..window_end).contains(&offset) {
                let kept = self
                    .window
                    .split_off((offset - self.window_offset) as usize);
                (window_end, kept)
            } else {
                (offset, Vec::new())
            };
            let fresh = file.read_at(read_from, (want_end - read_from) as usize)?;
            self.bytes_read += fresh.len() as u64;
            window.extend_from_slice(&fresh);
            self.window = window;
            self.window_offset = offset;
            if let Some((counters, counted)) = &mut self.gauge {
                let now = self.window.capacity();
                counters.count_readahead_buffer(*counted, now);
                *counted = now;
            }
        }
        let from = (offset - self.window_offset) as usize;
        let to = (from + len).min(self.window.len());
        Ok(self.window.get(from..to).unwrap_or_default().to_vec())
    }
}

/// The read-ahead a scan starts with: RocksDB's `initial_auto_readahead_size`.
pub(crate) const INITIAL_SCAN_READAHEAD_BYTES: usize = 8 << 10;

/// Consecutive data blocks a file's iterator loads before it reads ahead: RocksDB's
/// `num_file_reads_for_auto_readahead`.
const SEQUENTIAL_BLOCKS_BEFORE_READAHEAD: u32 = 2;

/// A scan's read-ahead over one table file (see the module documentation): the access pattern
/// that turns it on, the size of the next fill, and the window.
pub(crate) struct ScanReadahead {
    max_bytes: usize,
    next_bytes: usize,
    /// Data blocks loaded in a row, each starting where the one before ended.
    sequential_blocks: u32,
    /// Where the last data block loaded ended (its trailer included).
    last_end: Option<u64>,
    window: Readahead,
}

impl ScanReadahead {
    /// Read-ahead of at most `max_bytes` (positive), its window's memory counted in `counters`.
    pub(crate) fn new(max_bytes: usize, counters: Arc<IoCounters>) -> Self {
        ScanReadahead {
            max_bytes,
            next_bytes: INITIAL_SCAN_READAHEAD_BYTES.min(max_bytes),
            sequential_blocks: 0,
            last_end: None,
            window: Readahead::new(0).counted_in(counters),
        }
    }

    /// Notes that the iterator loads the block at `offset` of `len` bytes (trailer included),
    /// and says whether that block's read, if the cache misses, reads ahead.
    pub(crate) fn observe(&mut self, offset: u64, len: u64) -> bool {
        if self.last_end == Some(offset) {
            self.sequential_blocks = self.sequential_blocks.saturating_add(1);
        } else {
            self.sequential_blocks = 0;
            self.next_bytes = INITIAL_SCAN_READAHEAD_BYTES.min(self.max_bytes);
        }
        self.last_end = offset.checked_add(len);
        self.sequential_blocks >= SEQUENTIAL_BLOCKS_BEFORE_READAHEAD
    }

    /// The `len` bytes at `offset` (a data block and its trailer), from the window or from one
    /// device read that fills it with the block and the next fill's bytes after it (never past
    /// `limit`), and how many bytes were read from the file for it (0: served from the window).
    /// Each fill doubles the next one's read-ahead, up to the maximum. A short read gives a
    /// short answer, as [`Readahead::read`].
    pub(crate) fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        offset: u64,
        len: usize,
        limit: u64,
    ) -> Result<(Vec<u8>, u64)> {
        self.window
            .set_chunk_bytes(len.saturating_add(self.next_bytes));
        let before = self.window.bytes_read();
        let bytes = self.window.read(file, offset, len, limit)?;
        let fresh = self.window.bytes_read() - before;
        if fresh > 0 {
            self.next_bytes = self.next_bytes.saturating_mul(2).min(self.max_bytes);
        }
        Ok((bytes, fresh))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    /// A file in memory that records every read it serves.
    struct RecordingFile {
        bytes: Vec<u8>,
        reads: Mutex<Vec<(u64, usize)>>,
    }

    impl RandomAccessFile for RecordingFile {
        fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
            self.reads.lock().push((offset, len));
            Ok(self.bytes[offset as usize..offset as usize + len].to_vec())
        }
        fn len(&self) -> u64 {
            self.bytes.len() as u64
        }
    }

    fn file(len: usize) -> RecordingFile {
        RecordingFile {
            bytes: (0..len).map(|i| (i * 31 % 251) as u8).collect(),
            reads: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn sequential_blocks_are_served_from_few_large_reads() {
        let file = file(100_000);
        let limit = 90_000;
        let mut readahead = Readahead::new(16_384);
        let mut offset = 0u64;
        while offset < limit {
            let len = (1_000 + offset as usize % 3_000).min((limit - offset) as usize);
            let block = readahead.read(&file, offset, len, limit).expect("read");
            assert_eq!(block, &file.bytes[offset as usize..offset as usize + len]);
            offset += len as u64;
        }
        let reads = file.reads.lock().clone();
        // Contiguous reads that cover the data region exactly once, none past the limit, each
        // at most one window long.
        let mut next = 0;
        for &(read_offset, read_len) in &reads {
            assert_eq!(read_offset, next, "{reads:?}");
            assert!(read_len <= 16_384, "{reads:?}");
            next += read_len as u64;
        }
        assert_eq!(next, limit, "{reads:?}");
        assert!(reads.len() >= 6 && reads.len() <= 12, "{reads:?}");
        assert_eq!(readahead.bytes_read(), limit);
    }

    /// A file whose reads at or after `short_from` return half of what was asked.
    struct ShortFile {
        inner: RecordingFile,
        short_from: u64,
    }

    impl RandomAccessFile for ShortFile {
        fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
            let len = if offset >= self.short_from {
                len / 2
            } else {
                len
            };
            self.inner.read_at(offset, len)
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
    }

    #[test]
    fn a_short_read_gives_a_short_answer_instead_of_a_panic() {
        let file = ShortFile {
            inner: file(50_000),
            short_from: 8_192,
        };
        let mut readahead = Readahead::new(4_096);
        // Whole reads before the short region.
        let first = readahead.read(&file, 0, 4_096, 50_000).expect("read");
        assert_eq!(first.len(), 4_096);
        // The window ends at 4,096; the next blocks straddle into reads that come back short.
        for (offset, len) in [(4_000u64, 900usize), (8_192, 3_000), (12_000, 20_000)] {
            let block = readahead
                .read(&file, offset, len, 50_000)
                .expect("no panic");
            assert!(block.len() <= len);
            let start = offset as usize;
            assert_eq!(
                block,
                &file.inner.bytes[start..start + block.len()],
                "what it gives is the file's bytes"
            );
        }
        // A fresh window of 4,096 bytes comes back as 2,048: a 3,000-byte block is short.
        let short = readahead.read(&file, 30_000, 3_000, 50_000).expect("read");
        assert_eq!(short, &file.inner.bytes[30_000..32_048]);
    }

    #[test]
    fn a_block_larger_than_the_chunk_or_behind_the_window_is_read_whole() {
        let file = file(50_000);
        let mut readahead = Readahead::new(4_096);
        let big = readahead.read(&file, 100, 10_000, 50_000).expect("big");
        assert_eq!(big, &file.bytes[100..10_100]);
        // Behind the window: a new read, still correct.
        let back = readahead.read(&file, 0, 50, 50_000).expect("back");
        assert_eq!(back, &file.bytes[0..50]);
        // A request past the limit (a metadata block) is still read whole.
        let tail = readahead.read(&file, 49_000, 1_000, 40_000).expect("tail");
        assert_eq!(tail, &file.bytes[49_000..50_000]);
        assert_eq!(
            file.reads.lock().clone(),
            vec![(100, 10_000), (0, 4_096), (49_000, 1_000)]
        );
    }

    /// Blocks of `block` bytes walked front to back through a scan's read-ahead: two loads
    /// before it reads ahead; fills of the block plus 8, 16, 32 KiB ... capped at the maximum;
    /// every block's bytes right; a load that does not follow the one before starts over.
    #[test]
    fn a_scan_reads_ahead_after_two_sequential_blocks_and_doubles_each_fill() {
        let block = 4_101usize;
        let file = file(block * 120);
        let limit = (block * 120) as u64;
        let counters = Arc::new(IoCounters::default());
        let mut scan = ScanReadahead::new(32 << 10, Arc::clone(&counters));
        let mut fills = Vec::new();
        for index in 0..60u64 {
            let offset = index * block as u64;
            let ahead = scan.observe(offset, block as u64);
            assert_eq!(ahead, index >= 2, "block {index}");
            if !ahead {
                continue;
            }
            let (bytes, fresh) = scan.read(&file, offset, block, limit).expect("read");
            assert_eq!(bytes, &file.bytes[offset as usize..offset as usize + block]);
            if fresh > 0 {
                fills.push(fresh);
            }
        }
        // The first fill reads its block and 8 KiB; each fill after it starts where the window
        // ended (it keeps the straddling block's first part) and reads twice as far ahead, up to
        // 32 KiB past the block that needs it.
        let reads = file.reads.lock().clone();
        assert_eq!(reads.len(), fills.len());
        assert_eq!(reads[0], (2 * block as u64, block + (8 << 10)));
        let ends: Vec<u64> = reads.iter().map(|&(o, l)| o + l as u64).collect();
        for pair in reads.windows(2) {
            assert_eq!(pair[1].0, pair[0].0 + pair[0].1 as u64, "{reads:?}");
        }
        assert!(
            fills.iter().all(|&f| f <= (block + (32 << 10)) as u64),
            "{fills:?}"
        );
        assert!(
            fills.len() <= 12,
            "58 blocks in {} fills: {fills:?}",
            fills.len()
        );
        assert!(ends.last().is_some_and(|&end| end >= 60 * block as u64));

        // A seek elsewhere: two loads alone again, then a fill of the block and 8 KiB.
        assert!(!scan.observe(100 * block as u64, block as u64));
        assert!(!scan.observe(101 * block as u64, block as u64));
        assert!(scan.observe(102 * block as u64, block as u64));
        let offset = 102 * block as u64;
        let (bytes, fresh) = scan.read(&file, offset, block, limit).expect("read");
        assert_eq!(bytes, &file.bytes[offset as usize..offset as usize + block]);
        assert_eq!(fresh, (block + (8 << 10)) as u64);
    }

    /// A window's memory is in the counters' gauge while it lives, follows its refills, and
    /// leaves the gauge when the window is dropped; two windows add up.
    #[test]
    fn windows_count_their_memory_while_they_live() {
        let file = file(1 << 20);
        let limit = 1 << 20;
        let counters = Arc::new(IoCounters::default());
        let mut first = Readahead::new(64 << 10).counted_in(Arc::clone(&counters));
        assert_eq!(counters.readahead_buffer_bytes(), 0);
        first.read(&file, 0, 4_096, limit).expect("read");
        let held = counters.readahead_buffer_bytes();
        assert!((64 << 10..=128 << 10).contains(&held), "{held}");
        let mut second = ScanReadahead::new(32 << 10, Arc::clone(&counters));
        for index in 0..3u64 {
            let offset = index * 4_096;
            if second.observe(offset, 4_096) {
                second.read(&file, offset, 4_096, limit).expect("read");
            }
        }
        let both = counters.readahead_buffer_bytes();
        assert!(both >= held + 4_096 + (8 << 10), "{both} after {held}");
        counters.reset();
        assert_eq!(
            counters.readahead_buffer_bytes(),
            both,
            "a gauge, not a count"
        );
        drop(first);
        assert_eq!(counters.readahead_buffer_bytes(), both - held);
        drop(second);
        assert_eq!(counters.readahead_buffer_bytes(), 0);
    }

    #[test]
    fn zero_chunk_reads_exactly_what_is_asked() {
        let file = file(10_000);
        let mut readahead = Readahead::new(0);
        for offset in [0u64, 500, 4_000] {
            let block = readahead.read(&file, offset, 300, 10_000).expect("read");
            assert_eq!(block, &file.bytes[offset as usize..offset as usize + 300]);
        }
        assert_eq!(readahead.bytes_read(), 900);
    }
}
