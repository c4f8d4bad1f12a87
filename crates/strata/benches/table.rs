//! Table-read microbenchmark (`table/reader.rs`):
//!
//! * `table_get_cached/{hit,miss}`: one `TableReader::get` in a table file of 100,000 entries
//!   (random 16-byte keys, 100-byte values, 4 KiB blocks, restart interval 16, 10 bits/key)
//!   whose filter, index and data blocks are all in the block cache (a warm-up pass reads them
//!   all; the cache is far larger than the file). A hit probes the cached filter, seeks the
//!   cached index block, seeks the cached data block and copies out the value; a miss is
//!   answered by the cached filter (about 1% false positives go on to the index and data block).
//!   Keys in random order, with the lookup key and key hash precomputed, as the read path
//!   computes them once per `Db::get`. The table reader comes from the table cache before timing.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use strata::bench_internals::{
    encode_internal_key, key_hash, lookup_key, Lookup, TableBuilder, TableCache, ValueKind,
    MAX_SEQUENCE,
};

/// Entries in the table file.
const ENTRIES: usize = 100_000;

const TABLE_NUMBER: u64 = 1;
const LEVEL: usize = 1;
const BITS_PER_KEY: f64 = 10.0;
const BLOCK_BYTES: usize = 4096;
const RESTART_INTERVAL: usize = 16;

/// Far larger than the table file, so nothing is evicted.
const BLOCK_CACHE_BYTES: u64 = 256 << 20;

/// What one lookup passes to `TableReader::get`.
struct Probe {
    lookup_key: Vec<u8>,
    user_key: [u8; common::KEY_BYTES],
    key_hash: u64,
}

fn probes(user_keys: &[[u8; common::KEY_BYTES]]) -> Vec<Probe> {
    user_keys
        .iter()
        .map(|user_key| Probe {
            lookup_key: lookup_key(user_key, MAX_SEQUENCE),
            user_key: *user_key,
            key_hash: key_hash(user_key),
        })
        .collect()
}

fn table_get_cached(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let keys = common::random_keys(ENTRIES, 7);
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let value = common::value();
    let mut builder = TableBuilder::create(dir.path(), TABLE_NUMBER, BLOCK_BYTES, RESTART_INTERVAL)
        .expect("create table file");
    for (sequence, user_key) in (1..).zip(&sorted) {
        builder
            .add(
                &encode_internal_key(user_key, sequence, ValueKind::Value),
                &value,
            )
            .expect("add entry");
    }
    let file_bytes = builder
        .finish(BITS_PER_KEY, LEVEL as u64)
        .expect("finish table file");

    let tables = TableCache::new(dir.path().to_path_buf(), BLOCK_CACHE_BYTES);
    let reader = tables.get(TABLE_NUMBER).expect("open table file");
    // `keys` is in generation order, which is random with respect to key order.
    let present = probes(&keys);
    let absent = probes(&common::random_keys(ENTRIES, 8));
    // Warm-up: every filter, index and data block into the cache.
    for probe in &present {
        let found = reader
            .get(
                &probe.lookup_key,
                &probe.user_key,
                probe.key_hash,
                LEVEL,
                false,
            )
            .expect("lookup");
        assert_eq!(found, Lookup::Found(value.clone()));
    }
    eprintln!(
        "table_get_cached: table file of {file_bytes} bytes, block cache holds {} bytes",
        tables.block_cache_used_bytes()
    );

    let mut group = c.benchmark_group("table_get_cached");
    for (name, probes) in [("hit", &present), ("miss", &absent)] {
        group.bench_function(name, |b| {
            let mut next = 0;
            b.iter(|| {
                let probe = &probes[next];
                next += 1;
                if next == probes.len() {
                    next = 0;
                }
                reader
                    .get(
                        black_box(&probe.lookup_key),
                        &probe.user_key,
                        probe.key_hash,
                        LEVEL,
                        false,
                    )
                    .expect("lookup")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, table_get_cached);
criterion_main!(benches);
