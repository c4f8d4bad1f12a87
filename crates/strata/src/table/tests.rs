//! Table round trips: builder → reader → point lookups and iteration, and corruption handling.

use std::sync::Arc;

use super::iter::TableIter;
use super::reader::{ReadMode, TableCache};
use super::{table_file_name, TableBuilder};
use crate::cache::BlockCache;
use crate::env::{FileSystem, RealFileSystem};
use crate::error::Error;
use crate::filter::bloom::key_hash;
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
    let tables = Arc::new(TableCache::new(
        dir.path().to_path_buf(),
        Arc::new(RealFileSystem),
        10,
        Arc::new(BlockCache::new(cache_bytes)),
        counters.clone(),
        false,
    ));
    Fixture {
        dir,
        counters,
        tables,
    }
}

#[test]
fn point_lookups_see_the_newest_visible_version() {
    let fixture = fixture(2000, 10.0, 1 << 20);
    let table = fixture.tables.get(7, false).expect("open");
    let get = |user_key: &[u8], sequence: u64| {
        table
            .get(
                &lookup_key(user_key, sequence),
                user_key,
                key_hash(user_key),
                1,
                false,
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
    let table = fixture.tables.get(7, false).expect("open");
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

#[test]
fn a_flipped_byte_anywhere_is_a_corruption_error_naming_the_file_never_a_panic() {
    let fixture = fixture(300, 10.0, 0);
    let path = fixture.dir.path().join(table_file_name(7));
    let original = std::fs::read(&path).expect("read");
    let step = (original.len() / 97).max(1);
    for position in (0..original.len()).step_by(step) {
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
        let outcome = tables.get(7, false).and_then(|table| {
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
                    false,
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
