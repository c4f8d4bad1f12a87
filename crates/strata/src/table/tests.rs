//! Table round trips: builder → reader → point lookups and iteration, modular filters (DESIGN.md §1),
//! and corruption handling.

use std::sync::Arc;

use super::block::{Block, BlockIter, HandleCoding};
use super::compression::{Compression, BLOCK_TYPE_UNCOMPRESSED};
use super::format::{verify_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use super::index_iter::IndexIter;
use super::iter::TableIter;
use super::reader::ReadMode;
use super::table_cache::TableFile;
use super::TableCache;
use super::{table_file_name, TableBuilder};
use crate::cache::BlockCache;
use crate::env::{FileSystem, RealFileSystem};
use crate::error::Error;
use crate::filter::bloom::{false_positive_rate, key_hash, BloomFilter};
use crate::filter::modular::ModulesInUse;
use crate::filter::modular::{combined_false_positive_rate, decode_index};
use crate::iterator::InternalIterator;
use crate::key::{encode_internal_key, lookup_key, parse_internal_key, ValueKind};
use crate::memtable::Lookup;
use crate::stats::IoCounters;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

struct Fixture {
    dir: tempfile::TempDir,
    counters: Arc<IoCounters>,
    tables: Arc<TableCache>,
}

/// Writes table 7 with the even keys `2i`: value `v{i}` at sequence `100 + i`, an older `old{i}`
/// at sequence `i`, and for every 10th key a tombstone at sequence `1000 + i`.
fn fixture(count: u64, bits_per_key: f64, cache_bytes: u64) -> Fixture {
    modular_fixture(count, bits_per_key, f64::INFINITY, cache_bytes)
}

/// [`fixture`] with filter modules of `module_bits` bits per key (DESIGN.md §1).
fn modular_fixture(count: u64, bits_per_key: f64, module_bits: f64, cache_bytes: u64) -> Fixture {
    build_fixture(
        count,
        bits_per_key,
        module_bits,
        Compression::None,
        cache_bytes,
        0,
    )
}

/// [`fixture`] with data and index blocks compressed by `compression`.
fn compressed_fixture(count: u64, compression: Compression, cache_bytes: u64) -> Fixture {
    build_fixture(count, 10.0, f64::INFINITY, compression, cache_bytes, 0)
}

fn build_fixture(
    count: u64,
    bits_per_key: f64,
    module_bits: f64,
    compression: Compression,
    cache_bytes: u64,
    range_filter_bits: u32,
) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = RealFileSystem;
    let path = dir.path().join(table_file_name(7));
    let mut builder = TableBuilder::new(
        path,
        fs.create_writable(&dir.path().join(table_file_name(7)))
            .expect("create"),
        4096,
        16,
    );
    builder.set_filter_module_bits(module_bits);
    builder.set_compression(compression);
    builder.set_range_filter_bits(range_filter_bits);
    for i in 0..count {
        let user_key = key(2 * i);
        if i % 10 == 0 {
            builder
                .add(
                    &encode_internal_key(&user_key, 1000 + i, ValueKind::Deletion),
                    b"",
                )
                .expect("add");
        }
        builder
            .add(
                &encode_internal_key(&user_key, 100 + i, ValueKind::Value),
                format!("v{i}").as_bytes(),
            )
            .expect("add");
        builder
            .add(
                &encode_internal_key(&user_key, i, ValueKind::Value),
                format!("old{i}").as_bytes(),
            )
            .expect("add");
    }
    let summary = builder.finish(bits_per_key, 1, 3).expect("finish");
    assert_eq!(summary.properties.entries, count * 2 + count.div_ceil(10));
    assert_eq!(summary.properties.level, 1);
    let counters = Arc::new(IoCounters::default());
    let tables = table_cache(dir.path(), cache_bytes, &counters);
    Fixture {
        dir,
        counters,
        tables,
    }
}

fn table_cache(
    dir: &std::path::Path,
    cache_bytes: u64,
    counters: &Arc<IoCounters>,
) -> Arc<TableCache> {
    Arc::new(TableCache::new(
        dir.to_path_buf(),
        Arc::new(RealFileSystem),
        10,
        Arc::new(BlockCache::new(cache_bytes)),
        counters.clone(),
        false,
    ))
}

impl Fixture {
    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join(table_file_name(7))
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(self.path()).expect("read table")
    }
}

/// The newest value of `user_key` in `table`, probing its filter on level 1.
fn newest(table: &super::reader::TableReader, user_key: &[u8]) -> Lookup {
    table
        .get(
            &lookup_key(user_key, u64::MAX >> 8),
            user_key,
            key_hash(user_key),
            1,
            ModulesInUse::ALL,
        )
        .expect("get")
        .result
}

/// The table's footer, and its filter modules decoded straight from the file bytes (no reader, no
/// counters): what the tests compare the reader's behaviour with.
fn decode_modules(bytes: &[u8]) -> (Footer, Vec<BlockHandle>, Vec<BloomFilter>) {
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).expect("footer");
    let block = |handle: BlockHandle| {
        let start = handle.offset as usize;
        let end = start + handle.size as usize + super::format::BLOCK_TRAILER_LEN;
        verify_block(bytes[start..end].to_vec()).expect("block")
    };
    let handles = match footer.filter_handle() {
        None => Vec::new(),
        Some(handle) if footer.has_modular_filter() => {
            decode_index(&block(handle)).expect("modular filter index")
        }
        Some(handle) => vec![handle],
    };
    let filters = handles
        .iter()
        .map(|&handle| BloomFilter::decode(block(handle)).expect("module"))
        .collect();
    (footer, handles, filters)
}

#[test]
fn point_lookups_see_the_newest_visible_version() {
    let fixture = fixture(2000, 10.0, 1 << 20);
    let table = fixture.tables.open(7, false).expect("open");
    let get = |user_key: &[u8], sequence: u64| {
        table
            .get(
                &lookup_key(user_key, sequence),
                user_key,
                key_hash(user_key),
                1,
                ModulesInUse::ALL,
            )
            .expect("get")
            .result
    };
    assert_eq!(get(&key(6), u64::MAX >> 8), Lookup::Found(b"v3".to_vec()));
    assert_eq!(get(&key(6), 102), Lookup::Found(b"old3".to_vec()));
    assert_eq!(
        get(&key(6), 2),
        Lookup::Absent,
        "nothing visible before sequence 3"
    );
    assert_eq!(get(&key(20), u64::MAX >> 8), Lookup::Deleted);
    assert_eq!(get(&key(20), 1000), Lookup::Found(b"v10".to_vec()));
    // Missing keys: odd numbers are not in the file.
    let mut false_positives = 0;
    for i in 0..2000 {
        if get(&key(2 * i + 1), u64::MAX >> 8) != Lookup::Absent {
            false_positives += 1;
        }
    }
    assert_eq!(false_positives, 0, "a missing key is never found");
    let stats = fixture.counters.snapshot();
    assert!(stats.filter_probes[1] >= 2000);
    assert!(
        stats.filter_negatives[1] > 1900,
        "10 bits/key rejects ~99% of missing keys, got {} negatives",
        stats.filter_negatives[1]
    );
    assert_eq!(
        stats.filter_negatives[1] + stats.filter_false_positives[1],
        stats.filter_probes[1] - 4,
        "every probe that finds nothing is a negative or a false positive (the lookup of key 6 at \
         sequence 2 sees no version and counts as a false positive)"
    );
}

#[test]
fn iteration_returns_every_entry_in_order_and_seeks() {
    let fixture = fixture(3000, 0.0, 0);
    let table = fixture.tables.open(7, false).expect("open");
    let mut iter = TableIter::new(table, ReadMode::Cached { level: 0 });
    iter.seek_to_first();
    let mut count = 0;
    let mut previous: Option<Vec<u8>> = None;
    while iter.valid() {
        if let Some(previous) = &previous {
            assert_eq!(
                crate::key::compare_internal_keys(previous, iter.key()),
                std::cmp::Ordering::Less
            );
        }
        previous = Some(iter.key().to_vec());
        count += 1;
        iter.next();
    }
    iter.status().expect("no error");
    assert_eq!(count, 3000 * 2 + 300);
    iter.seek(&lookup_key(&key(1001), u64::MAX >> 8));
    let parsed = parse_internal_key(iter.key()).expect("key");
    assert_eq!(parsed.user_key, key(1002));
    iter.seek(&lookup_key(&key(999_999), u64::MAX >> 8));
    assert!(!iter.valid());
    // Without a cache every data block is a device read.
    assert!(fixture.counters.snapshot().data_block_reads[0] > 10);
}

/// Index blocks with a restart every 4 or 16 entries (prefix-compressed separators) find every
/// key and seek like an index that stores every key whole, in fewer bytes.
#[test]
fn sparse_index_restarts_find_every_key_in_a_smaller_index() {
    let mut index_sizes = Vec::new();
    for interval in [1, 4, 16] {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = RealFileSystem;
        let path = dir.path().join(table_file_name(7));
        let mut builder = TableBuilder::new(
            path.clone(),
            fs.create_writable(&path).expect("create"),
            512,
            16,
        );
        builder.set_index_restart_interval(interval);
        let long_key = |i: u64| format!("{i:0>100}").into_bytes();
        for i in 0..2_000u64 {
            builder
                .add(
                    &encode_internal_key(&long_key(2 * i), 5, ValueKind::Value),
                    format!("v{i}").as_bytes(),
                )
                .expect("add");
        }
        builder.finish(10.0, 1, 1).expect("finish");
        let counters = Arc::new(IoCounters::default());
        let tables = table_cache(dir.path(), 0, &counters);
        let table = tables.open(7, false).expect("open");
        index_sizes.push(table.footer().index.size);
        for i in 0..2_000u64 {
            let present = long_key(2 * i);
            assert_eq!(
                newest(&table, &present),
                Lookup::Found(format!("v{i}").into_bytes()),
                "interval {interval}, key {i}"
            );
            let absent = long_key(2 * i + 1);
            assert_eq!(newest(&table, &absent), Lookup::Absent);
        }
        let mut iter = TableIter::new(table, ReadMode::Cached { level: 1 });
        for i in (0..4_000u64).step_by(37) {
            iter.seek(&lookup_key(&long_key(i), u64::MAX >> 8));
            let parsed = parse_internal_key(iter.key()).expect("key");
            assert_eq!(parsed.user_key, long_key(i.div_ceil(2) * 2), "seek {i}");
        }
        iter.seek(&lookup_key(&long_key(4_000), u64::MAX >> 8));
        assert!(!iter.valid());
        iter.status().expect("no error");
    }
    assert!(
        index_sizes[1] * 2 < index_sizes[0] && index_sizes[2] < index_sizes[1],
        "{index_sizes:?}"
    );
}

/// A compaction walks its inputs through a read-ahead window: the same entries as a block-by-block
/// walk, the data region read once in window-sized pieces (nothing past it, nothing cached), and a
/// damaged data block still a corruption error naming the file.
#[test]
fn readahead_iteration_reads_the_data_region_once_in_large_pieces() {
    let fixture = modular_fixture(3000, 6.5, 2.0, 1 << 20);
    let (footer, handles, _) = decode_modules(&fixture.bytes());
    let data_end = handles
        .iter()
        .map(|h| h.offset)
        .chain([
            footer.index.offset,
            footer.properties.offset,
            footer.filter.offset,
        ])
        .min()
        .expect("handles");
    let walk = |iter: &mut TableIter| {
        let mut entries = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            entries.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        iter.status().map(|()| entries)
    };
    let table = fixture.tables.open(7, false).expect("open");
    let plain = walk(&mut TableIter::new(table.clone(), ReadMode::Compaction)).expect("plain");
    let before = fixture.counters.snapshot();
    let chunk = 16 * 1024;
    let mut iter = TableIter::new(table.clone(), ReadMode::Compaction).with_readahead(chunk);
    let read_ahead = walk(&mut iter).expect("readahead");
    assert_eq!(read_ahead, plain);
    let after = fixture.counters.snapshot();
    // The index block (read as before) plus the data region, once.
    assert_eq!(
        after.compaction_read_bytes - before.compaction_read_bytes,
        footer.index.size + 5 + data_end,
        "data region of {data_end} bytes"
    );
    assert!(
        data_end > 4 * chunk as u64,
        "the table spans several windows"
    );
    // Nothing entered the block cache on the way.
    assert_eq!(after.data_block_reads, before.data_block_reads);

    let path = fixture.path();
    let mut damaged = fixture.bytes();
    damaged[data_end as usize / 2] ^= 0x20;
    std::fs::write(&path, &damaged).expect("write");
    let tables = table_cache(fixture.dir.path(), 0, &fixture.counters);
    let table = tables.open(7, false).expect("open damaged");
    let mut iter = TableIter::new(table, ReadMode::Compaction).with_readahead(chunk);
    match walk(&mut iter) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, path),
        other => panic!("expected corruption, got {:?}", other.map(|e| e.len())),
    }
}

/// Walks `iter` from `start` (the first entry when `None`) for at most `limit` entries.
fn scan_entries(
    iter: &mut TableIter,
    start: Option<&[u8]>,
    limit: usize,
) -> crate::error::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    match start {
        Some(target) => iter.seek(target),
        None => iter.seek_to_first(),
    }
    let mut entries = Vec::new();
    while iter.valid() && entries.len() < limit {
        entries.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next();
    }
    iter.status().map(|()| entries)
}

/// A scan's read-ahead (`readahead::ScanReadahead`) on tables stored raw and compressed, with no
/// block cache so that every data block a scan loads misses: the same entries as block-by-block
/// reads; the data blocks reached through fewer device reads, each data block read once either
/// alone, as a window's fill or from a window; the same bytes read in total (nothing read twice
/// or past the data blocks); and a scan of one or two blocks never reads ahead.
#[test]
fn a_long_scan_reads_ahead_with_fewer_device_reads_and_the_same_entries() {
    for compression in [Compression::None, Compression::Lz4] {
        let fixture = compressed_fixture(3000, compression, 0);
        let table = fixture.tables.open(7, false).expect("open");
        let mode = ReadMode::Cached { level: 2 };
        let before = fixture.counters.snapshot();
        let plain = scan_entries(&mut TableIter::new(table.clone(), mode), None, usize::MAX)
            .expect("plain");
        let middle = fixture.counters.snapshot();
        let mut iter = TableIter::new(table.clone(), mode).with_scan_readahead(256 << 10);
        let read_ahead = scan_entries(&mut iter, None, usize::MAX).expect("read ahead");
        let after = fixture.counters.snapshot();
        assert_eq!(read_ahead, plain, "{compression:?}");
        assert_eq!(plain.len(), 6300);

        let blocks = middle.data_block_reads[2] - before.data_block_reads[2];
        let device_reads = after.data_block_reads[2] - middle.data_block_reads[2];
        let fills = after.scan_readahead_reads - middle.scan_readahead_reads;
        let served = after.scan_readahead_blocks - middle.scan_readahead_blocks;
        assert!(blocks >= 20, "{compression:?}: {blocks} data blocks");
        assert_eq!(middle.scan_readahead_reads, before.scan_readahead_reads);
        assert!(fills >= 2, "{compression:?}: {fills} fills");
        // Two blocks alone, then the fills (8, 16, ... KiB ahead: a handful for the file).
        assert_eq!(device_reads, 2 + fills, "{compression:?}");
        assert!(device_reads * 3 < blocks, "{device_reads} of {blocks}");
        assert_eq!(device_reads + served, blocks, "{compression:?}");
        assert_eq!(
            after.read_bytes - middle.read_bytes,
            middle.read_bytes - before.read_bytes,
            "{compression:?}: the same bytes, fewer reads"
        );

        // A short scan (within the first two blocks it loads) never reads ahead.
        for start in [0u64, 1500, 4000] {
            let target = lookup_key(&key(2 * start), u64::MAX >> 8);
            let mut iter = TableIter::new(table.clone(), mode).with_scan_readahead(256 << 10);
            let before = fixture.counters.snapshot();
            let short = scan_entries(&mut iter, Some(&target), 20).expect("short");
            let after = fixture.counters.snapshot();
            let mut plain_iter = TableIter::new(table.clone(), mode);
            assert_eq!(
                short,
                scan_entries(&mut plain_iter, Some(&target), 20).expect("plain")
            );
            assert_eq!(after.scan_readahead_reads, before.scan_readahead_reads);
            assert_eq!(after.scan_readahead_blocks, before.scan_readahead_blocks);
        }
    }
}

/// Seeks anywhere, forwards and backwards, into and out of a read-ahead window, each followed by
/// a scan of some length: the same entries with read-ahead as without, through a block cache
/// (which hits and misses in turn) and without one.
#[test]
fn seeks_in_the_middle_give_the_same_entries_with_and_without_read_ahead() {
    for cache_bytes in [0, 64 << 10] {
        let fixture = compressed_fixture(3000, Compression::Lz4, cache_bytes);
        let table = fixture.tables.open(7, false).expect("open");
        let mode = ReadMode::Cached { level: 1 };
        let mut with = TableIter::new(table.clone(), mode).with_scan_readahead(32 << 10);
        let mut without = TableIter::new(table.clone(), mode);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..60 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let start = (state >> 33) % 6_100;
            let length = ((state >> 20) % 700) as usize;
            let target = lookup_key(&key(start), u64::MAX >> 8);
            let got = scan_entries(&mut with, Some(&target), length).expect("with");
            let want = scan_entries(&mut without, Some(&target), length).expect("without");
            assert_eq!(got, want, "seek to {start}, {length} entries");
        }
        assert!(fixture.counters.snapshot().scan_readahead_reads > 0);
    }
}

/// A damaged data block inside a read-ahead window: the scan gives the entries before it, then a
/// corruption error naming the file, never a panic and never the damaged block's entries.
#[test]
fn a_damaged_block_inside_a_read_ahead_window_is_a_corruption_error() {
    let fixture = compressed_fixture(3000, Compression::None, 0);
    let path = fixture.path();
    let original = fixture.bytes();
    let data_end = {
        let table = fixture.tables.open(7, false).expect("open");
        table
            .footer()
            .index
            .offset
            .min(table.footer().properties.offset) as usize
    };
    let plain = {
        let table = fixture.tables.open(7, false).expect("open");
        scan_entries(
            &mut TableIter::new(table, ReadMode::Cached { level: 0 }),
            None,
            usize::MAX,
        )
        .expect("plain")
    };
    // Past the first blocks, so inside windows; a spread over the data blocks.
    for position in (5 * 4096..data_end).step_by(data_end / 23) {
        let mut damaged = original.clone();
        damaged[position] ^= 0x20;
        std::fs::write(&path, &damaged).expect("write");
        let tables = table_cache(fixture.dir.path(), 0, &fixture.counters);
        let table = tables.open(7, false).expect("open damaged");
        let mut iter =
            TableIter::new(table, ReadMode::Cached { level: 0 }).with_scan_readahead(256 << 10);
        iter.seek_to_first();
        let mut entries = Vec::new();
        while iter.valid() {
            entries.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        match iter.status() {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, path, "{position}"),
            other => panic!("byte {position}: expected corruption, got {other:?}"),
        }
        assert!(entries.len() < plain.len(), "{position}");
        assert_eq!(entries, plain[..entries.len()], "{position}");
    }
}

/// Flips bytes of a single-filter file and of a four-module file (2, 2, 2 and 0.5 bits per key):
/// a sample of the data blocks, and every byte from the first filter module to the end (modules,
/// modular filter index, properties, index, footer). Lookups of present keys read every module.
#[test]
fn a_flipped_byte_anywhere_is_a_corruption_error_naming_the_file_never_a_panic() {
    for (bits_per_key, module_bits) in [(10.0, f64::INFINITY), (6.5, 2.0)] {
        let fixture = modular_fixture(300, bits_per_key, module_bits, 0);
        let (_, handles, _) = decode_modules(&fixture.bytes());
        let filter_start = handles.first().expect("a filter").offset as usize;
        flip_every_byte(&fixture, filter_start);
    }
}

fn flip_every_byte(fixture: &Fixture, filter_start: usize) {
    let path = fixture.path();
    let original = std::fs::read(&path).expect("read");
    let step = (filter_start / 97).max(1);
    let positions = (0..filter_start)
        .step_by(step)
        .chain(filter_start..original.len());
    for position in positions {
        let mut damaged = original.clone();
        damaged[position] ^= 0x20;
        std::fs::write(&path, &damaged).expect("write");
        let tables = TableCache::new(
            fixture.dir.path().to_path_buf(),
            Arc::new(RealFileSystem),
            10,
            Arc::new(BlockCache::new(0)),
            fixture.counters.clone(),
            false,
        );
        let outcome = tables.open(7, false).and_then(|table| {
            let mut iter = TableIter::new(table.clone(), ReadMode::Cached { level: 0 });
            iter.seek_to_first();
            while iter.valid() {
                iter.next();
            }
            iter.status()?;
            for i in 0..300 {
                let user_key = key(2 * i);
                table.get(
                    &lookup_key(&user_key, u64::MAX >> 8),
                    &user_key,
                    key_hash(&user_key),
                    0,
                    ModulesInUse::ALL,
                )?;
            }
            Ok(())
        });
        match outcome {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, path, "byte {position}"),
            Err(other) => panic!("byte {position}: expected corruption, got {other}"),
            Ok(()) => panic!("byte {position}: damage went unnoticed"),
        }
    }
}

/// A file of 2000 keys at 6.5 bits per key with 2-bit modules has four modules (2, 2, 2, 0.5),
/// finds every key it holds, pinned or not, and describes its filter in footer and properties.
#[test]
fn multi_module_round_trip_has_no_false_negatives() {
    let fixture = modular_fixture(2000, 6.5, 2.0, 1 << 20);
    let (footer, handles, modules) = decode_modules(&fixture.bytes());
    assert_eq!(footer.layout(), 2);
    let module_bits: Vec<f64> = modules.iter().map(BloomFilter::bits_per_key).collect();
    assert_eq!(module_bits, [2.0, 2.0, 2.0, 0.5]);
    let seeds: Vec<u32> = modules.iter().map(BloomFilter::seed).collect();
    assert_eq!(seeds, [0, 1, 2, 3]);
    for pin in [false, true] {
        let table = fixture.tables.open(7, pin).expect("open");
        let properties = table.properties();
        assert_eq!(properties.filter_modules, 4);
        assert_eq!(properties.bits_per_key, 6.5);
        let module_bytes: u64 = handles.iter().map(|handle| handle.size).sum();
        assert_eq!(properties.filter_bytes, module_bytes);
        // Pinned: the index at open, each module once a probe first reads it.
        let index_bytes = table.pinned_bytes();
        if pin {
            assert!(
                index_bytes > 0 && index_bytes < 2000,
                "pinned at open: the index alone, got {index_bytes} bytes"
            );
        } else {
            assert_eq!(index_bytes, 0);
        }
        for i in 0..2000 {
            let expected = if i % 10 == 0 {
                Lookup::Deleted
            } else {
                Lookup::Found(format!("v{i}").into_bytes())
            };
            assert_eq!(newest(&table, &key(2 * i)), expected, "key {}", 2 * i);
            assert_eq!(newest(&table, &key(2 * i + 1)), Lookup::Absent);
        }
        if pin {
            assert_eq!(
                table.pinned_bytes() - index_bytes,
                module_bytes,
                "every module probed is held"
            );
        }
    }
    let stats = fixture.counters.snapshot();
    assert_eq!(
        stats.filter_probes[1],
        2 * 2 * 2000,
        "one probe per file lookup"
    );
}

/// Elastic filters (DESIGN.md §3.5) probe a prefix of a file's modules: with only the first of the
/// four modules in use, absent keys pass at the first module's rate (2 bits per key), with all
/// four at the whole filter's (6.5), with none every lookup goes to the index; present keys are
/// found in every case.
#[test]
fn a_prefix_of_the_modules_answers_at_its_own_rate() {
    let fixture = modular_fixture(2000, 6.5, 2.0, 1 << 20);
    let table = fixture.tables.open(7, false).expect("open");
    let mut rates = Vec::new();
    for modules in [1usize, 4, usize::MAX, 0].map(ModulesInUse::prefix) {
        let before = fixture.counters.snapshot();
        for i in 0..2000 {
            let present = table
                .get(
                    &lookup_key(&key(2 * i), u64::MAX >> 8),
                    &key(2 * i),
                    key_hash(&key(2 * i)),
                    1,
                    modules,
                )
                .expect("get")
                .result;
            assert_ne!(
                present,
                Lookup::Absent,
                "key {} with {modules:?} modules",
                2 * i
            );
            let absent = table
                .get(
                    &lookup_key(&key(2 * i + 1), u64::MAX >> 8),
                    &key(2 * i + 1),
                    key_hash(&key(2 * i + 1)),
                    1,
                    modules,
                )
                .expect("get")
                .result;
            assert_eq!(absent, Lookup::Absent);
        }
        let after = fixture.counters.snapshot();
        let probes = after.filter_probes[1] - before.filter_probes[1];
        let negatives = after.filter_negatives[1] - before.filter_negatives[1];
        if modules.is_none() {
            assert_eq!(probes, 0, "no module in use: no probe");
            continue;
        }
        assert_eq!(probes, 4000, "one probe per lookup");
        // Absent keys that passed every module in use.
        rates.push((2000 - negatives) as f64 / 2000.0);
    }
    let (one, four, all) = (rates[0], rates[1], rates[2]);
    assert_eq!(four, all, "all four modules are the whole filter");
    // exp(-ln2sq * 2) = 0.38 and exp(-ln2sq * 6.5) = 0.044, within the blocked layout's spread.
    assert!((0.25..0.5).contains(&one), "first module only: {one}");
    assert!(all < 0.1 && all < one / 3.0, "every module: {all}");
}

/// A file whose bits per key fit one module has the blocks Strata wrote before modular filters
/// existed: `testdata/v1_single_filter.sst` was written by the single-filter builder (commit
/// 5daed5e) with `fixture(100, 10.0, _)`. Its data, filter and properties blocks are unchanged
/// byte for byte; its index block differs where shortened index keys (`separator.rs`) replaced
/// whole ones and where the index flags (`format.rs`: user keys, delta-encoded handles) made it
/// smaller, and both files answer every lookup alike.
#[test]
fn single_module_files_are_unchanged() {
    let before = include_bytes!("testdata/v1_single_filter.sst");
    let (old_footer, _, _) = decode_modules(before);
    let blocks_end = old_footer.index.offset as usize;
    let mut files = Vec::new();
    for module_bits in [f64::INFINITY, 0.0, 10.0, 12.0, 9.6] {
        let fixture = modular_fixture(100, 10.0, module_bits, 0);
        let bytes = fixture.bytes();
        let (footer, _, _) = decode_modules(&bytes);
        assert_eq!(footer.layout(), old_footer.layout());
        assert_eq!(
            old_footer.index_format(),
            super::format::IndexFormat::LEGACY
        );
        assert_eq!(
            bytes[..blocks_end],
            before[..blocks_end],
            "module size {module_bits}: a single-module file's blocks must not change"
        );
        assert!(footer.index.size <= old_footer.index.size);
        files.push(bytes);
    }
    assert!(files.windows(2).all(|pair| pair[0] == pair[1]));
    // Compression::None (the default) writes the same bytes, too.
    assert_eq!(
        build_fixture(100, 10.0, f64::INFINITY, Compression::None, 0, 0).bytes(),
        files[0]
    );
    // Between 10 and 10.5 bits per key with 10-bit modules the remainder is folded: one module.
    let folded = modular_fixture(100, 10.4, 10.0, 0);
    let (footer, _, modules) = decode_modules(&folded.bytes());
    assert_eq!(footer.layout(), 1);
    assert_eq!(modules.len(), 1);
}

/// A version-1 table written before modular filters opens and answers lookups.
#[test]
fn version_1_files_still_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join(table_file_name(7)),
        include_bytes!("testdata/v1_single_filter.sst"),
    )
    .expect("write fixture");
    let counters = Arc::new(IoCounters::default());
    let tables = table_cache(dir.path(), 0, &counters);
    for pin in [false, true] {
        let table = tables.open(7, pin).expect("open a version-1 table");
        assert_eq!(table.properties().filter_modules, 1);
        assert_eq!(table.properties().bits_per_key, 10.0);
        for i in 0..100 {
            let expected = if i % 10 == 0 {
                Lookup::Deleted
            } else {
                Lookup::Found(format!("v{i}").into_bytes())
            };
            assert_eq!(newest(&table, &key(2 * i)), expected);
        }
    }
    let mut negatives = 0;
    let table = tables.open(7, false).expect("open");
    for i in 0..1000 {
        if newest(&table, &key(2 * i + 1)) == Lookup::Absent {
            negatives += 1;
        }
    }
    assert_eq!(negatives, 1000);
    assert!(counters.snapshot().filter_negatives[1] > 950);
}

/// DESIGN.md §1: the combined FPR of independent modules is the product of theirs. 200k keys at 6 bits
/// per key in three 2-bit modules, 200k absent lookups through the table reader.
#[test]
fn combined_fpr_of_modules_is_the_product_of_theirs() {
    let count = 200_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 64 << 20);
    let (_, _, modules) = decode_modules(&fixture.bytes());
    assert_eq!(modules.len(), 3);
    let table = fixture.tables.open(7, false).expect("open");
    let absent: Vec<Vec<u8>> = (0..count).map(|i| key(2 * i + 1)).collect();
    let module_rates: Vec<f64> = modules
        .iter()
        .map(|module| {
            let maybe = absent
                .iter()
                .filter(|user_key| module.may_contain_hash(key_hash(user_key)))
                .count();
            maybe as f64 / count as f64
        })
        .collect();
    for user_key in &absent {
        assert_eq!(newest(&table, user_key), Lookup::Absent);
    }
    let stats = fixture.counters.snapshot();
    assert_eq!(stats.filter_probes[1], count);
    let measured = stats.filter_false_positives[1] as f64 / count as f64;
    let product = combined_false_positive_rate(&module_rates);
    let formula = false_positive_rate(6.0);
    println!(
        "module FPRs {module_rates:.4?} (formula {:.4} each), combined measured {measured:.5}, \
         product of modules {product:.5}, formula exp(-ln2sq * 6) {formula:.5}",
        false_positive_rate(2.0)
    );
    for rate in &module_rates {
        let ratio = rate / false_positive_rate(2.0);
        assert!((1.0 / 1.5..=1.5).contains(&ratio), "module FPR {rate}");
    }
    assert!(
        (measured / product - 1.0).abs() < 0.1,
        "combined {measured} vs product {product}"
    );
    assert!(
        (1.0 / 1.5..=1.5).contains(&(measured / formula)),
        "combined {measured} vs formula {formula}"
    );
    assert_eq!(
        stats.filter_negatives[1] + stats.filter_false_positives[1],
        count
    );
}

/// DESIGN.md §1: a probe reads module j + 1 only if modules 1..=j said "maybe". With the block cache
/// disabled every module a lookup needs is one device read, so over 10k absent keys on a 3-module
/// file the filter reads are exactly 10k (module 1) + the keys module 1 passed (module 2) + the
/// keys modules 1 and 2 passed (module 3).
#[test]
fn a_negative_lookup_reads_module_2_only_when_module_1_said_maybe() {
    let count = 10_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let (_, handles, modules) = decode_modules(&fixture.bytes());
    assert_eq!(modules.len(), 3);
    let table = fixture.tables.open(7, false).expect("open");
    let mut passed = [0u64; 3];
    for i in 0..count {
        let user_key = key(2 * i + 1);
        let hash = key_hash(&user_key);
        for (module, filter) in modules.iter().enumerate() {
            if !filter.may_contain_hash(hash) {
                break;
            }
            passed[module] += 1;
        }
        assert_eq!(newest(&table, &user_key), Lookup::Absent);
    }
    let stats = fixture.counters.snapshot();
    let module_2_reads = passed[0];
    let module_3_reads = passed[1];
    println!(
        "{count} absent lookups: module 1 read {count} times, module 2 {module_2_reads} \
         (module 1 FPR {:.4}, formula {:.4}), module 3 {module_3_reads}; {} passed all three",
        module_2_reads as f64 / count as f64,
        false_positive_rate(2.0),
        passed[2]
    );
    assert_eq!(
        stats.filter_block_reads[1],
        count + module_2_reads + module_3_reads
    );
    let expected_module_2 = false_positive_rate(2.0) * count as f64;
    assert!(
        (1.0 / 1.5..=1.5).contains(&(module_2_reads as f64 / expected_module_2)),
        "module 2 read {module_2_reads} times, expected about {expected_module_2:.0}"
    );
    assert_eq!(stats.filter_probes[1], count);
    assert_eq!(stats.filter_false_positives[1], passed[2]);
    // Only lookups that passed every module reach the index and a data block.
    assert_eq!(stats.index_block_reads[1], passed[2]);
    assert_eq!(stats.data_block_reads[1], passed[2]);
    // The modules are separate blocks at separate offsets.
    assert_eq!(
        handles
            .iter()
            .map(|handle| handle.offset)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        3
    );
}

/// Each module is read from the device once, by the first probe that needs it, and then served
/// from the cache (where the file's modules share one entry); pinned tables hold each module the
/// first probe that needs it reads.
#[test]
fn modules_are_cached_and_pinned_one_by_one() {
    let count = 5_000;
    let cached = modular_fixture(count, 6.0, 2.0, 16 << 20);
    let table = cached.tables.open(7, false).expect("open");
    // Module 1 alone answers this key: only it is read.
    let (_, _, modules) = decode_modules(&cached.bytes());
    let rejected_by_module_1 = (0..)
        .map(|i| key(2 * i + 1))
        .find(|user_key| !modules[0].may_contain_hash(key_hash(user_key)))
        .expect("module 1 rejects most absent keys");
    assert_eq!(newest(&table, &rejected_by_module_1), Lookup::Absent);
    assert_eq!(cached.counters.snapshot().filter_block_reads[1], 1);
    for i in 0..count {
        assert_eq!(newest(&table, &key(2 * i + 1)), Lookup::Absent);
    }
    let stats = cached.counters.snapshot();
    assert_eq!(stats.filter_block_reads[1], 3, "each module read once");
    assert!(stats.filter_cache_hits > count);

    // Pinned (no cache): a module is read by the first probe that needs it and held; module 1
    // alone answers the first key, so the others are not read until a key passes it.
    let pinned = modular_fixture(count, 6.0, 2.0, 0);
    let table = pinned.tables.open(7, true).expect("open pinned");
    let index_bytes = table.pinned_bytes();
    assert_eq!(pinned.counters.snapshot().filter_block_reads[1], 0);
    assert_eq!(newest(&table, &rejected_by_module_1), Lookup::Absent);
    assert_eq!(pinned.counters.snapshot().filter_block_reads[1], 1);
    let module_1 = table.pinned_bytes() - index_bytes;
    assert!(module_1 > 0, "module 1 is held");
    for i in 0..count {
        assert_eq!(newest(&table, &key(2 * i + 1)), Lookup::Absent);
    }
    let stats = pinned.counters.snapshot();
    assert_eq!(
        stats.filter_block_reads[1], 3,
        "each module read once, then held"
    );
    assert_eq!(stats.filter_cache_hits, 0);
    assert_eq!(stats.filter_probes[1], count + 1);
    assert!(table.pinned_bytes() > index_bytes + 2 * module_1);
}

/// A table cache over `fixture`'s directory whose block cache of 16 MiB the test holds too.
fn table_cache_with_block_cache(fixture: &Fixture) -> (Arc<TableCache>, Arc<BlockCache>) {
    let cache = Arc::new(BlockCache::new(16 << 20));
    let tables = Arc::new(TableCache::new(
        fixture.dir.path().to_path_buf(),
        Arc::new(RealFileSystem),
        10,
        Arc::clone(&cache),
        fixture.counters.clone(),
        false,
    ));
    (tables, cache)
}

/// The first absent key (`2i + 1`) whose hash the first `passes` of `modules` say "maybe" to and
/// module `passes` (0-based) rejects.
fn absent_key_rejected_by_module(modules: &[BloomFilter], passes: usize) -> Vec<u8> {
    (0..)
        .map(|i| key(2 * i + 1))
        .find(|user_key| {
            let hash = key_hash(user_key);
            modules[..passes]
                .iter()
                .all(|module| module.may_contain_hash(hash))
                && !modules[passes].may_contain_hash(hash)
        })
        .expect("some absent key is rejected by exactly this module")
}

/// The modules a cached file's filter entry holds, if any (keyed by its first module's offset).
fn cached_modules(cache: &BlockCache, first_module: BlockHandle) -> Option<usize> {
    match cache.get(7, first_module.offset) {
        Some(crate::cache::CachedBlock::FilterModules(modules)) => Some(modules.len()),
        _ => None,
    }
}

/// DESIGN.md §1 with the block cache: a file's modules in use are one cache entry, so a probe
/// that passes module 1 reads module 2 with no further cache lookup (and no device read), as a
/// single-filter file's probe costs one lookup.
#[test]
fn a_probe_passing_cached_modules_makes_one_cache_lookup() {
    let count = 5_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let (tables, cache) = table_cache_with_block_cache(&fixture);
    let (_, handles, modules) = decode_modules(&fixture.bytes());
    assert_eq!(modules.len(), 3);
    let table = tables.open(7, false).expect("open");
    for i in 0..count {
        assert_eq!(
            probe_with(&table, &key(2 * i + 1), ModulesInUse::ALL),
            Lookup::Absent
        );
    }
    assert_eq!(fixture.counters.snapshot().filter_block_reads[1], 3);
    assert_eq!(cached_modules(&cache, handles[0]), Some(3));
    for passes in 0..3 {
        let user_key = absent_key_rejected_by_module(&modules, passes);
        let lookups = cache.lookups();
        let before = fixture.counters.snapshot();
        assert_eq!(
            probe_with(&table, &user_key, ModulesInUse::ALL),
            Lookup::Absent
        );
        let after = fixture.counters.snapshot();
        assert_eq!(
            cache.lookups() - lookups,
            1,
            "a probe through {} modules makes one cache lookup",
            passes + 1
        );
        assert_eq!(after.filter_block_reads[1], before.filter_block_reads[1]);
        assert_eq!(
            after.filter_cache_hits - before.filter_cache_hits,
            passes as u64 + 1,
            "every module probed is counted as a filter cache hit"
        );
        assert_eq!(after.index_block_reads[1], before.index_block_reads[1]);
    }

    // A single-filter file's probe costs the same one lookup.
    let single = fixture_with_cache_bytes(count, 0);
    let (tables, cache) = table_cache_with_block_cache(&single);
    let table = tables.open(7, false).expect("open");
    let user_key = key(1);
    probe_with(&table, &user_key, ModulesInUse::ALL);
    let lookups = cache.lookups();
    let reads = single.counters.snapshot().filter_block_reads[1];
    probe_with(&table, &user_key, ModulesInUse::ALL);
    // The filter's lookup, plus the index and data blocks' if the filter said "maybe".
    let filter_said_maybe = single.counters.snapshot().filter_false_positives[1] > 0;
    let expected = if filter_said_maybe { 3 } else { 1 };
    assert_eq!(cache.lookups() - lookups, expected);
    assert_eq!(single.counters.snapshot().filter_block_reads[1], reads);
}

/// [`fixture`] at 10 bits per key, one module.
fn fixture_with_cache_bytes(count: u64, cache_bytes: u64) -> Fixture {
    fixture(count, 10.0, cache_bytes)
}

/// DESIGN.md §3.5's hard cap through the block cache: the entry probes find holds, and the cache
/// charges for it, only the modules in use. A probe reads a module the entry lacks only when the
/// modules before it said "maybe" and adds it to the entry; when the allocation takes modules out
/// of use the next probe cuts the entry to those in use and leaves the rest in an entry of their
/// own, which no probe looks up (it ages out of the cache), and from which a module back in use is
/// taken without a device read.
#[test]
fn the_cached_filter_entry_holds_and_charges_only_the_modules_in_use() {
    let count = 5_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let (tables, cache) = table_cache_with_block_cache(&fixture);
    let (_, handles, modules) = decode_modules(&fixture.bytes());
    let table = tables.open(7, false).expect("open");
    assert_eq!(cache.used_bytes(), 0);
    // Each module's bits and its header, held by value in the entry.
    let header = std::mem::size_of::<crate::filter::Filter>() as u64;
    let charge = |modules: &[BloomFilter]| {
        modules
            .iter()
            .map(|module| module.size_bytes() as u64 + header)
            .sum::<u64>()
            + crate::cache::ENTRY_OVERHEAD_BYTES
    };
    let reads = || fixture.counters.snapshot().filter_block_reads[1];

    // Module 1 alone answers: the entry holds module 1, and only it is read.
    let rejected_by_1 = absent_key_rejected_by_module(&modules, 0);
    probe_with(&table, &rejected_by_1, ModulesInUse::ALL);
    assert_eq!(reads(), 1);
    assert_eq!(cached_modules(&cache, handles[0]), Some(1));
    assert_eq!(cache.used_bytes(), charge(&modules[..1]));

    // A key modules 1 and 2 pass and module 3 rejects: modules 2 and 3 are read and added.
    let rejected_by_3 = absent_key_rejected_by_module(&modules, 2);
    probe_with(&table, &rejected_by_3, ModulesInUse::ALL);
    assert_eq!(reads(), 3);
    assert_eq!(cached_modules(&cache, handles[0]), Some(3));
    assert_eq!(cache.used_bytes(), charge(&modules));
    // No index or data block was read: the cache holds the filter entry alone.
    assert_eq!(fixture.counters.snapshot().index_block_reads[1], 0);

    // The allocation takes modules 2 and 3 out of use: the next probe cuts the entry, and modules
    // 2 and 3 become an entry of their own, keyed by module 2's offset.
    let lookups = cache.lookups();
    probe_with(&table, &rejected_by_1, ModulesInUse::prefix(1));
    assert_eq!(cache.lookups() - lookups, 1);
    assert_eq!(cached_modules(&cache, handles[0]), Some(1));
    assert_eq!(cached_modules(&cache, handles[1]), Some(2));
    assert_eq!(
        cache.used_bytes(),
        charge(&modules[..1]) + charge(&modules[1..])
    );
    assert_eq!(reads(), 3, "cutting the entry reads nothing");
    // With one module in use, a key module 1 passes goes on to the index and a data block.
    let before = fixture.counters.snapshot();
    probe_with(&table, &rejected_by_3, ModulesInUse::prefix(1));
    let after = fixture.counters.snapshot();
    assert_eq!(after.filter_block_reads[1], before.filter_block_reads[1]);
    assert_eq!(
        after.filter_false_positives[1] - before.filter_false_positives[1],
        1
    );
    assert_eq!(after.index_block_reads[1] - before.index_block_reads[1], 1);
    let sorted_blocks = cache.used_bytes() - charge(&modules[..1]) - charge(&modules[1..]);

    // Module 2 back in use: taken from the cut entry (no device read), which keeps module 3.
    let rejected_by_2 = absent_key_rejected_by_module(&modules, 1);
    probe_with(&table, &rejected_by_2, ModulesInUse::prefix(2));
    assert_eq!(reads(), 3);
    assert_eq!(cached_modules(&cache, handles[0]), Some(2));
    assert_eq!(cached_modules(&cache, handles[1]), None);
    assert_eq!(cached_modules(&cache, handles[2]), Some(1));
    assert_eq!(
        cache.used_bytes(),
        charge(&modules[..2]) + charge(&modules[2..]) + sorted_blocks
    );
    // Then a probe with two modules in use makes one cache lookup.
    let lookups = cache.lookups();
    probe_with(&table, &rejected_by_2, ModulesInUse::prefix(2));
    assert_eq!(cache.lookups() - lookups, 1);

    // Gone from the cache, a module back in use is read from the device again.
    assert!(cache.remove(7, handles[2].offset).is_some());
    probe_with(&table, &rejected_by_3, ModulesInUse::ALL);
    assert_eq!(reads(), 4);
    assert_eq!(cached_modules(&cache, handles[0]), Some(3));
    assert_eq!(cache.used_bytes(), charge(&modules) + sorted_blocks);
}

/// Probes `user_key` in `table` with `in_use` modules (level 1).
fn probe_with(table: &super::reader::TableReader, user_key: &[u8], in_use: ModulesInUse) -> Lookup {
    table
        .get(
            &lookup_key(user_key, u64::MAX >> 8),
            user_key,
            key_hash(user_key),
            1,
            in_use,
        )
        .expect("get")
        .result
}

/// A pinned reader holds only the modules in use (DESIGN.md §3.5's hard cap): when the
/// allocation takes held modules out of use, the trimmed copy keeps the ones in use and the old
/// reader's going uncounts the rest; a module back in use is read again by its first probe, and
/// a reader that holds nothing out of use is kept as it is.
#[test]
fn pinned_modules_taken_out_of_use_are_let_go() {
    let count = 5_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let table = fixture.tables.open(7, true).expect("open pinned");
    let index_bytes = table.pinned_bytes();
    assert_eq!(fixture.tables.pinned_bytes(), index_bytes);
    let absent = |i: u64| key(2 * i + 1);
    // Every module in use: absent keys pass module 1 often enough that all three are read.
    for i in 0..count {
        assert_eq!(
            probe_with(&table, &absent(i), ModulesInUse::ALL),
            Lookup::Absent
        );
    }
    let all_three = table.pinned_bytes();
    assert_eq!(fixture.counters.snapshot().filter_block_reads[1], 3);
    assert_eq!(fixture.tables.pinned_bytes(), all_three, "counted as held");
    assert!(
        fixture.tables.trimmed(&table, ModulesInUse::ALL).is_none(),
        "nothing out of use"
    );
    // One module in use: the copy holds module 1; dropping the old reader uncounts the others.
    let trimmed = fixture
        .tables
        .trimmed(&table, ModulesInUse::prefix(1))
        .expect("modules 2 and 3 are out of use");
    drop(table);
    let module_1 = trimmed.pinned_bytes() - index_bytes;
    assert!(module_1 > 0 && trimmed.pinned_bytes() < all_three);
    assert_eq!(fixture.tables.pinned_bytes(), index_bytes + module_1);
    let reads = fixture.counters.snapshot().filter_block_reads[1];
    for i in 0..count {
        assert_eq!(
            probe_with(&trimmed, &absent(i), ModulesInUse::prefix(1)),
            Lookup::Absent
        );
    }
    assert_eq!(
        fixture.counters.snapshot().filter_block_reads[1],
        reads,
        "module 1 kept, not read again"
    );
    assert!(fixture
        .tables
        .trimmed(&trimmed, ModulesInUse::prefix(1))
        .is_none());
    // Module 2 back in use: read again by its first probe.
    for i in 0..count {
        assert_eq!(
            probe_with(&trimmed, &absent(i), ModulesInUse::prefix(2)),
            Lookup::Absent
        );
    }
    assert_eq!(fixture.counters.snapshot().filter_block_reads[1], reads + 1);
    // No module in use (a skipped filter): nothing of the filter is held.
    let bare = fixture
        .tables
        .trimmed(&trimmed, ModulesInUse::NONE)
        .expect("modules 1 and 2 are out of use");
    drop(trimmed);
    assert_eq!(bare.pinned_bytes(), index_bytes);
    assert_eq!(fixture.tables.pinned_bytes(), index_bytes);
    drop(bare);
    assert_eq!(
        fixture.tables.pinned_bytes(),
        0,
        "closing uncounts the rest"
    );
}

/// A lookup that chose its modules before the allocation moved may pin a module out of use in
/// the trimmed reader: the reader notes it, and the next sweep with the same choice trims it
/// again (it does not skip a reader whose choice looks unchanged).
#[test]
fn a_module_pinned_out_of_use_after_a_trim_is_trimmed_again() {
    let count = 2_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let table = fixture.tables.open(7, true).expect("open pinned");
    let index_bytes = table.pinned_bytes();
    for i in 0..count {
        assert_eq!(
            probe_with(&table, &key(2 * i + 1), ModulesInUse::ALL),
            Lookup::Absent
        );
    }
    let trimmed = fixture
        .tables
        .trimmed(&table, ModulesInUse::prefix(1))
        .expect("trimmed");
    drop(table);
    let one_module = trimmed.pinned_bytes();
    // A stale lookup probes with all three modules: modules 2 and 3 are pinned again.
    for i in 0..count {
        assert_eq!(
            probe_with(&trimmed, &key(2 * i + 1), ModulesInUse::ALL),
            Lookup::Absent
        );
    }
    assert!(trimmed.pinned_bytes() > one_module);
    let again = fixture
        .tables
        .trimmed(&trimmed, ModulesInUse::prefix(1))
        .expect("the stray modules are trimmed");
    drop(trimmed);
    assert_eq!(again.pinned_bytes(), one_module);
    assert_eq!(fixture.tables.pinned_bytes(), one_module);
    assert!(one_module > index_bytes);
}

/// Four threads probe a file's reader through its slot, each under a different choice of
/// modules (as lookups racing a re-division see), while a fifth trims the slot's reader to
/// changing choices (the engine's sweep, which write-locks the slot the probes read-lock): every
/// probe answers, and once the threads are done and one choice holds, only its module is
/// pinned and the cache's count equals what the one remaining reader holds.
#[test]
fn racing_probes_and_trims_keep_pinned_bytes_exact() {
    use crate::version::tests::file_metadata;

    let count = 2_000;
    let fixture = modular_fixture(count, 6.0, 2.0, 0);
    let file = file_metadata(7, "a", "z");
    let probe = |user_key: &[u8], in_use: ModulesInUse| {
        fixture
            .tables
            .with_reader(&file, true, |table| Ok(probe_with(table, user_key, in_use)))
            .expect("lookup")
    };
    std::thread::scope(|scope| {
        for thread in 0..4_usize {
            let probe = &probe;
            scope.spawn(move || {
                for round in 0..20_usize {
                    let in_use = ModulesInUse::prefix((thread + round) % 4);
                    for i in (0..count).step_by(7) {
                        assert_eq!(probe(&key(2 * i + 1), in_use), Lookup::Absent);
                        assert_ne!(probe(&key(2 * i), in_use), Lookup::Absent);
                    }
                }
            });
        }
        let (tables, file) = (&fixture.tables, &file);
        scope.spawn(move || {
            for round in 0..200_usize {
                tables.trim_pinned_filters(file, ModulesInUse::prefix(round % 3));
                std::thread::yield_now();
            }
        });
    });
    for i in 0..count {
        assert_eq!(
            probe(&key(2 * i + 1), ModulesInUse::prefix(1)),
            Lookup::Absent
        );
    }
    fixture
        .tables
        .trim_pinned_filters(&file, ModulesInUse::prefix(1));
    let reader = fixture.tables.reader(&file, true).expect("reader");
    assert_eq!(fixture.tables.open_readers(), 1, "the old readers are gone");
    assert_eq!(fixture.tables.pinned_bytes(), reader.pinned_bytes());
    drop(reader);
    // Module 1 alone: the same bytes as a fresh reader that probed with module 1 only.
    let fresh = fixture.tables.open(7, true).expect("open");
    for i in 0..count {
        assert_eq!(
            probe_with(&fresh, &key(2 * i + 1), ModulesInUse::prefix(1)),
            Lookup::Absent
        );
    }
    let held = fixture
        .tables
        .reader(&file, true)
        .expect("reader")
        .pinned_bytes();
    assert_eq!(held, fresh.pinned_bytes());
}

/// Readers held in file metadata (`table_cache.rs`): at most `max_open_files` slots are filled;
/// past that the CLOCK hand empties a slot not used since it last passed, keeping one that was;
/// an emptied slot reopens on its next use; dropping the metadata closes its reader; a file that
/// fails to open fills nothing and is retried.
#[test]
fn held_readers_are_bounded_and_follow_their_metadata() {
    use crate::version::tests::file_metadata;
    use crate::version::FileMetadata;

    let fixture = fixture(200, 10.0, 1 << 20);
    let tables = TableCache::new(
        fixture.dir.path().to_path_buf(),
        Arc::new(RealFileSystem),
        2,
        Arc::new(BlockCache::new(1 << 20)),
        fixture.counters.clone(),
        false,
    );
    // Three metadata entries for table 7, each with a slot of its own (as three files would be).
    let files: Vec<FileMetadata> = (0..3).map(|_| file_metadata(7, "a", "z")).collect();
    let lookup = |file: &FileMetadata, i: u64| {
        tables
            .with_reader(file, false, |table| Ok(newest(table, &key(2 * i))))
            .expect("lookup")
    };
    let filled = || -> Vec<bool> { files.iter().map(|f| f.table_slot().is_filled()).collect() };
    assert_eq!(lookup(&files[0], 1), Lookup::Found(b"v1".to_vec()));
    assert_eq!(lookup(&files[1], 2), Lookup::Found(b"v2".to_vec()));
    assert_eq!(filled(), [true, true, false]);
    assert_eq!(tables.open_readers(), 2);
    // A third reader is one too many: every slot was used since the hand last passed, so the
    // hand clears every mark and empties the first.
    assert_eq!(lookup(&files[2], 3), Lookup::Found(b"v3".to_vec()));
    assert_eq!(filled(), [false, true, true]);
    assert_eq!(tables.open_readers(), 2);
    // File 2 is used again, file 1 is not: reopening file 0 empties file 1's slot.
    assert_eq!(lookup(&files[2], 4), Lookup::Found(b"v4".to_vec()));
    assert_eq!(lookup(&files[0], 5), Lookup::Found(b"v5".to_vec()));
    assert_eq!(filled(), [true, false, true]);
    assert_eq!(tables.open_readers(), 2);
    // A shared reader outlives its slot only as long as its holder keeps it.
    let shared = tables.reader(&files[2], false).expect("reader");
    drop(files);
    assert_eq!(tables.open_readers(), 1, "only the shared reader is left");
    drop(shared);
    assert_eq!(tables.open_readers(), 0);
    // A file that does not open fills no slot and is tried again.
    let file = file_metadata(7, "a", "z");
    let path = fixture.path();
    let saved = std::fs::read(&path).expect("read");
    std::fs::write(&path, b"short").expect("damage");
    for _ in 0..2 {
        assert!(matches!(
            tables.with_reader(&file, false, |_| Ok(())),
            Err(Error::Corruption { .. })
        ));
        assert!(!file.table_slot().is_filled());
    }
    std::fs::write(&path, saved).expect("restore");
    assert_eq!(lookup(&file, 6), Lookup::Found(b"v6".to_vec()));
    assert_eq!(tables.open_readers(), 1);
}

/// The trailer type byte of every data block and of the index block, read straight from the file
/// bytes (the index decompressed if need be).
pub(crate) fn block_types(bytes: &[u8]) -> (Vec<u8>, u8) {
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).expect("footer");
    let trailer_type = |handle: BlockHandle| bytes[(handle.offset + handle.size) as usize];
    let start = footer.index.offset as usize;
    let end = start + footer.index.size as usize + BLOCK_TRAILER_LEN;
    let index = Block::decode(verify_block(bytes[start..end].to_vec()).expect("index block"))
        .expect("index decodes");
    let format = footer.index_format();
    let mut iter = BlockIter::new(Arc::new(index), format.keys.comparator())
        .decoding_handles(HandleCoding::of(format.delta_handles));
    iter.seek_to_first();
    let mut data_types = Vec::new();
    while iter.valid() {
        data_types.push(trailer_type(iter.handle()));
        iter.next();
    }
    assert_eq!(iter.error(), None);
    (data_types, trailer_type(footer.index))
}

/// Each algorithm writes every data block and the index block compressed (the fixture's blocks
/// compress well), in a smaller file that answers every lookup and scan like the uncompressed one.
#[test]
fn compressed_tables_round_trip_for_every_algorithm() {
    let count = 2000;
    let uncompressed_bytes = fixture(count, 10.0, 0).bytes().len();
    for compression in [
        Compression::Lz4,
        Compression::ZSTD,
        Compression::Zstd { level: 19 },
    ] {
        let fixture = compressed_fixture(count, compression, 1 << 20);
        let bytes = fixture.bytes();
        let (data_types, index_type) = block_types(&bytes);
        assert!(data_types.len() > 10, "{compression}");
        assert!(
            data_types.iter().all(|&t| t == compression.block_type()),
            "{compression}: {data_types:?}"
        );
        assert_eq!(index_type, compression.block_type(), "{compression}");
        assert!(
            bytes.len() * 4 < uncompressed_bytes * 3,
            "{compression}: {} bytes, uncompressed {uncompressed_bytes}",
            bytes.len()
        );
        for pin in [false, true] {
            let table = fixture.tables.open(7, pin).expect("open");
            for i in 0..count {
                let expected = if i % 10 == 0 {
                    Lookup::Deleted
                } else {
                    Lookup::Found(format!("v{i}").into_bytes())
                };
                assert_eq!(newest(&table, &key(2 * i)), expected, "{compression}");
                assert_eq!(newest(&table, &key(2 * i + 1)), Lookup::Absent);
            }
            let mut iter = TableIter::new(Arc::clone(&table), ReadMode::Compaction);
            iter.seek_to_first();
            let mut entries = 0;
            while iter.valid() {
                entries += 1;
                iter.next();
            }
            iter.status().expect("clean scan");
            assert_eq!(entries, count * 2 + count / 10, "{compression}");
        }
    }
}

/// A cache miss reads the stored (compressed) block, counts its stored bytes and decompresses it
/// once; the cache then serves the uncompressed block without decompressing again.
#[test]
fn the_cache_holds_uncompressed_blocks_and_read_bytes_are_stored_bytes() {
    let fixture = compressed_fixture(2000, Compression::Lz4, 1 << 20);
    let table = fixture.tables.open(7, false).expect("open");
    let bytes = fixture.bytes();
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).expect("footer");
    fixture.counters.reset();
    assert_eq!(
        newest(&table, &key(2)),
        Lookup::Found(b"v1".to_vec()),
        "first lookup"
    );
    let first = fixture.counters.snapshot();
    // Filter, index and one data block from the device; index and data block decompressed.
    assert_eq!(first.data_block_reads[1], 1);
    assert_eq!(first.index_block_reads[1], 1);
    assert_eq!(first.blocks_decompressed, 2);
    let index = IndexIter::open(&table, ReadMode::Compaction).expect("index");
    let mut index = index;
    index.seek_to_first(&table);
    let first_data = index.handle();
    let filter = footer.filter_handle().expect("filter");
    let stored = |handle: BlockHandle| handle.size + BLOCK_TRAILER_LEN as u64;
    assert_eq!(
        first.read_bytes,
        stored(footer.index) + stored(filter) + stored(first_data),
        "read bytes are the bytes read from the file"
    );
    assert_eq!(
        bytes[(first_data.offset + first_data.size) as usize],
        Compression::Lz4.block_type(),
        "the data block is stored compressed"
    );
    fixture.counters.reset();
    assert_eq!(newest(&table, &key(4)), Lookup::Found(b"v2".to_vec()));
    let second = fixture.counters.snapshot();
    assert_eq!(second.data_block_reads[1] + second.index_block_reads[1], 0);
    assert_eq!(second.blocks_decompressed, 0, "cache hits never decompress");
    assert_eq!(second.read_bytes, 0);
    assert_eq!(second.data_cache_hits, 1);
}

/// Rewrites the stored contents of the block at `handle` with `rewrite` and recomputes its
/// checksum, so the damage reaches the decompressor.
fn rewrite_block(path: &std::path::Path, handle: BlockHandle, rewrite: impl Fn(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).expect("read");
    let start = handle.offset as usize;
    let end = start + handle.size as usize;
    let block_type = bytes[end];
    let mut stored = bytes[start..end].to_vec();
    rewrite(&mut stored);
    assert_eq!(stored.len(), handle.size as usize, "rewrites keep the size");
    let trailer = super::format::block_trailer(&stored, block_type);
    bytes[start..end].copy_from_slice(&stored);
    bytes[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
    std::fs::write(path, bytes).expect("write");
}

/// Damage behind a valid checksum (a bug or a hostile file, not a bit flip) — garbage in the
/// compressed stream, or an uncompressed length that is not the truth — is a corruption error
/// naming the file and the block's offset, for both algorithms; and a flipped byte anywhere in a
/// compressed file is caught like in an uncompressed one.
#[test]
fn a_damaged_compressed_block_is_a_corruption_error_with_file_and_offset() {
    for compression in [Compression::Lz4, Compression::ZSTD] {
        type Rewrite = Box<dyn Fn(&mut Vec<u8>)>;
        let rewrites: Vec<(&str, Rewrite)> = vec![
            (
                "garbage stream",
                Box::new(|stored: &mut Vec<u8>| {
                    for byte in stored.iter_mut().skip(2) {
                        *byte = 0xff;
                    }
                }),
            ),
            (
                "length lie",
                // The block's length header is a 2-byte varint (blocks of 128 B to 16 KiB): add
                // one to its low 7 bits, keeping the continuation bit.
                Box::new(|stored: &mut Vec<u8>| {
                    assert!(stored[0] & 0x80 != 0 && stored[1] & 0x80 == 0);
                    stored[0] = 0x80 | ((stored[0] & 0x7f) ^ 0x01);
                }),
            ),
            (
                "huge claim",
                Box::new(|stored: &mut Vec<u8>| {
                    stored[1] = 0xff;
                    stored[2] = 0xff;
                    stored[3] = 0x7f;
                }),
            ),
        ];
        for (name, rewrite) in rewrites {
            let fixture = compressed_fixture(300, compression, 0);
            let table = fixture.tables.open(7, false).expect("open");
            let mut index = IndexIter::open(&table, ReadMode::Compaction).expect("index");
            index.seek_to_first(&table);
            let handle = index.handle();
            drop(table);
            rewrite_block(&fixture.path(), handle, &*rewrite);
            let table = fixture.tables.open(7, false).expect("open");
            let user_key = key(0);
            let outcome = table.get(
                &lookup_key(&user_key, u64::MAX >> 8),
                &user_key,
                key_hash(&user_key),
                1,
                ModulesInUse::NONE,
            );
            match outcome {
                Err(Error::Corruption {
                    file,
                    offset,
                    reason,
                }) => {
                    assert_eq!(file, fixture.path(), "{compression} {name}");
                    assert_eq!(offset, handle.offset, "{compression} {name}");
                    assert!(
                        reason.contains("decompress") || reason.contains("claims"),
                        "{compression} {name}: {reason}"
                    );
                }
                Err(other) => panic!("{compression} {name}: expected corruption, got {other}"),
                Ok(_) => panic!("{compression} {name}: damage went unnoticed"),
            }
        }
        let fixture = compressed_fixture(300, compression, 0);
        let (_, handles, _) = decode_modules(&fixture.bytes());
        let filter_start = handles.first().expect("a filter").offset as usize;
        flip_every_byte(&fixture, filter_start);
    }
}

/// A block that does not save an eighth stays raw even on a compressing level: values of random
/// bytes give data blocks that LZ4 cannot shrink.
#[test]
fn incompressible_blocks_stay_raw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(table_file_name(7));
    let mut builder = TableBuilder::new(
        path.clone(),
        RealFileSystem.create_writable(&path).expect("create"),
        4096,
        16,
    );
    builder.set_compression(Compression::Lz4);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..500u64 {
        let value: Vec<u8> = (0..200)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        builder
            .add(&encode_internal_key(&key(i), 1, ValueKind::Value), &value)
            .expect("add");
    }
    let summary = builder.finish(10.0, 1, 1).expect("finish");
    let (data_types, _) = block_types(&std::fs::read(&path).expect("read"));
    assert!(data_types.len() > 20);
    assert!(data_types.iter().all(|&t| t == BLOCK_TYPE_UNCOMPRESSED));
    assert_eq!(
        summary.compression.raw_blocks,
        data_types.len() as u64,
        "every data block was offered and kept raw"
    );
    assert_eq!(
        summary.compression.compressed_blocks, 1,
        "the index block compresses"
    );
}

/// Compression through the engine: `Options::compression` chooses each file's compression by the
/// level it is written to, `Stats` counts what it did, and a compressed database reopens.
mod engine {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{CompressionPolicy, Db, Options};

    const KEYS: u32 = 20_000;

    fn options(policy: &str) -> Options {
        Options::default()
            .write_buffer_bytes(32 * 1024)
            .target_file_bytes(32 * 1024)
            .block_cache_bytes(1 << 20)
            .level0_compaction_trigger(3)
            .compression(policy.parse::<CompressionPolicy>().expect("policy"))
            // Static sizing with a small level 1 (64 KiB, size ratio 10): the load reaches
            // level 2 even compressed.
            .compaction_policy(std::sync::Arc::new(
                crate::compaction::Leveling::default().with_base_level_bytes(64 * 1024),
            ))
    }

    /// Compressible values: a key-dependent prefix and a run of text.
    fn value(i: u32) -> Vec<u8> {
        format!("value-{i}-{}", "lorem ipsum dolor sit amet ".repeat(3)).into_bytes()
    }

    fn load(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut model = BTreeMap::new();
        for n in 0..KEYS {
            let i = (n * 7919) % KEYS;
            db.put(key(u64::from(i)), value(i)).expect("put");
            model.insert(key(u64::from(i)), value(i));
        }
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
        model
    }

    /// Data-block types of every live file, with its level.
    fn file_block_types(db: &Db) -> Vec<(usize, Vec<u8>)> {
        db.version()
            .files()
            .map(|(level, _, file)| {
                let bytes = std::fs::read(db.path().join(table_file_name(file.number())))
                    .expect("read table");
                (level, block_types(&bytes).0)
            })
            .collect()
    }

    fn read_back(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        for (k, v) in model {
            assert_eq!(db.get(k).expect("get").as_deref(), Some(&v[..]));
        }
        let scanned: Vec<(Vec<u8>, Vec<u8>)> = db
            .iter()
            .map(|entry| {
                let (k, v) = entry.expect("scan");
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(scanned, expected);
    }

    /// `none,lz4,zstd`: level 0 raw, level 1 LZ4, deeper Zstd. A file trivially moved down keeps
    /// the compression it was written with (as in RocksDB), so a deeper file may hold a shallower
    /// level's choice, never a deeper one's, and level 0 never compresses.
    #[test]
    fn each_level_gets_its_compression() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options("none,lz4,zstd")).expect("open");
        let model = load(&db);
        let files = file_block_types(&db);
        let type_of = |level: usize| match level {
            0 => BLOCK_TYPE_UNCOMPRESSED,
            1 => Compression::Lz4.block_type(),
            _ => Compression::ZSTD.block_type(),
        };
        let deepest = files.iter().map(|(level, _)| *level).max().expect("files");
        assert!(deepest >= 2, "the load reaches level 2");
        for level in 1..=deepest {
            assert!(
                files
                    .iter()
                    .any(|(l, types)| *l == level && types.iter().all(|&t| t == type_of(level))),
                "some level-{level} file is written with level {level}'s compression: {files:?}"
            );
        }
        for (level, types) in &files {
            let allowed: Vec<u8> = (1..=*level).map(type_of).collect();
            for &t in types {
                assert!(
                    allowed.contains(&t) || (*level == 0 && t == BLOCK_TYPE_UNCOMPRESSED),
                    "level {level} holds a block of type {t}"
                );
            }
        }
        let io = db.stats().io;
        assert_eq!(
            io.block_bytes_uncompressed[0], io.block_bytes_stored[0],
            "flushes store raw"
        );
        for level in 1..=deepest {
            assert!(
                io.block_bytes_stored[level] * 2 < io.block_bytes_uncompressed[level],
                "level {level}: {} bytes stored of {}",
                io.block_bytes_stored[level],
                io.block_bytes_uncompressed[level]
            );
        }
        assert!(io.compression_ratio() > 1.5, "{}", io.compression_ratio());
        let report = db.stats().to_string();
        assert!(report.contains("compression: "), "{report}");
        let by_level = report
            .lines()
            .find(|line| line.starts_with("compression by level: "))
            .unwrap_or_else(|| panic!("no per-level line: {report}"));
        assert!(by_level.contains("L1 "), "{by_level}");
        assert!(
            !by_level.contains("L0 "),
            "level 0 is not compressed: {by_level}"
        );
        assert!(io.blocks_compressed > 0 && io.compress_nanos > 0);
        assert!(
            io.blocks_decompressed > 0 && io.decompress_nanos > 0,
            "compactions read compressed inputs"
        );
        read_back(&db, &model);
        db.close().expect("close");
    }

    /// `lz4,zstd-bottom`: after a full compaction every file holds the oldest data for its keys,
    /// so all of them are Zstd; before it, non-bottom outputs are LZ4. The database reopens and
    /// reads back everything, cold (block cache empty, every block decompressed from the file).
    #[test]
    fn bottommost_outputs_use_zstd_and_a_compressed_database_reopens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let model = {
            let db = Db::open(dir.path(), options("lz4,zstd-bottom")).expect("open");
            let model = load(&db);
            let files = file_block_types(&db);
            let lz4 = Compression::Lz4.block_type();
            let zstd = Compression::ZSTD.block_type();
            assert!(files
                .iter()
                .all(|(level, types)| *level > 0 || types.iter().all(|&t| t == lz4)));
            db.compact().expect("compact");
            let files = file_block_types(&db);
            assert!(!files.is_empty());
            for (level, types) in &files {
                assert!(
                    types.iter().all(|&t| t == zstd),
                    "level {level} after a full compaction: {types:?}"
                );
            }
            read_back(&db, &model);
            db.close().expect("close");
            model
        };
        // Reopened with a different policy: the files say how they are stored.
        let db = Db::open(dir.path(), options("none")).expect("reopen");
        db.reset_stats();
        read_back(&db, &model);
        let io = db.stats().io;
        assert!(io.blocks_decompressed > 0);
        assert!(io.data_block_reads_total() > 0);
        db.close().expect("close");
    }
}

/// [`fixture`] (even keys, tombstones and old versions) with a range filter of `quantum_bits`.
fn range_fixture(count: u64, quantum_bits: u32) -> Fixture {
    build_fixture(
        count,
        10.0,
        f64::INFINITY,
        Compression::None,
        0,
        quantum_bits,
    )
}

/// A file with a range filter names it in its properties (version 3), holds it from open (its
/// memory counted by the cache), says "maybe" for every key it holds and for every range around
/// one, and rules out almost every gap between its keys and everything outside its key range.
#[test]
fn a_range_filter_finds_every_key_and_rules_out_gaps() {
    let fixture = range_fixture(2000, 8);
    let table = fixture.tables.open(7, false).expect("open");
    assert!(table.has_range_filter());
    let properties = table.properties();
    let handle = properties.range_filter.expect("a range filter handle");
    assert!(handle.size > 0 && handle.offset < table.footer().properties.offset);
    assert!(table.range_filter_bytes() > 0);
    assert_eq!(
        fixture.tables.range_filter_bytes(),
        table.range_filter_bytes()
    );
    let mut gaps_ruled_out = 0u64;
    for i in 0..2000 {
        let (held, gap) = (key(2 * i), key(2 * i + 1));
        assert!(table.may_contain_range(&held, &held), "key {i}");
        assert!(table.may_contain_range(&gap[..gap.len() - 1], &held));
        gaps_ruled_out += u64::from(!table.may_contain_range(&gap, &gap));
    }
    // At b = 8 about 2^-8 of the gaps is a false positive; allow 5%.
    assert!(
        gaps_ruled_out >= 1900,
        "{gaps_ruled_out} of 2000 gaps ruled out"
    );
    assert!(!table.may_contain_range(b"a", b"key"));
    assert!(!table.may_contain_range(&key(4000), b"z"));
    assert!(table.may_contain_range(b"a", b"z"));
    drop(table);
    assert_eq!(
        fixture.tables.range_filter_bytes(),
        0,
        "dropped with the reader"
    );
    // Without a range filter: properties keep their old version and every range may hold keys.
    let plain = fixture_without_range_filter();
    let table = plain.tables.open(7, false).expect("open");
    assert!(!table.has_range_filter() && table.properties().range_filter.is_none());
    assert!(table.may_contain_range(b"a", b"b"));
}

fn fixture_without_range_filter() -> Fixture {
    range_fixture(100, 0)
}

/// A flipped byte anywhere from the first filter block on (the range filter included) is a
/// corruption error naming the file.
#[test]
fn a_flipped_byte_in_a_range_filter_is_a_corruption_error() {
    let fixture = range_fixture(300, 6);
    let (_, handles, _) = decode_modules(&fixture.bytes());
    let filter_start = handles.first().expect("a filter").offset as usize;
    flip_every_byte(&fixture, filter_start);
}

/// Damage behind a valid checksum (a hostile file or a bug): garbage in the range filter block
/// is a corruption error at the block's offset, never a panic, and a truncated block too.
#[test]
fn a_malformed_range_filter_behind_a_valid_checksum_is_refused_at_open() {
    for seed in 0..64u64 {
        let fixture = range_fixture(300, 6);
        let handle = {
            let table = fixture.tables.open(7, false).expect("open");
            table.properties().range_filter.expect("range filter")
        };
        rewrite_block(&fixture.path(), handle, |stored| {
            // The version byte stays 1 and the quantum bits valid, so the decoder goes deep.
            let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for byte in stored.iter_mut().skip(3) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if state % 4 == 0 {
                    *byte = (state >> 24) as u8;
                }
            }
        });
        let tables = table_cache(fixture.dir.path(), 0, &fixture.counters);
        match tables.open(7, false) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, fixture.path());
                assert_eq!(offset, handle.offset, "seed {seed}");
            }
            // Garbage that still decodes is a valid (if useless) filter; it must answer.
            Ok(table) => {
                let _ = table.may_contain_range(&key(0), &key(10));
            }
            Err(other) => panic!("seed {seed}: expected corruption, got {other}"),
        }
    }
}
