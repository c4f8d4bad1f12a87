//! Memtable microbenchmarks (`memtable/mod.rs`), random 16-byte keys and 100-byte values:
//!
//! * `memtable_insert/fill_100k`: 100,000 `insert`s into a fresh memtable, timed as one iteration
//!   (creating the empty memtable and dropping the full one are not timed). An insert's cost grows
//!   with the skiplist's size, so this is the average over a fill from 0 to 100,000 entries; the
//!   throughput line gives inserts per second.
//! * `memtable_get/{hit,miss}`: one `get` at the newest sequence number in a memtable of 100,000
//!   entries, for a present key (which copies out its 100-byte value) or an absent one, in random
//!   order.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use strata::bench_internals::{MemTable, ValueKind, MAX_SEQUENCE};

/// Entries per memtable.
const ENTRIES: usize = 100_000;

fn fill(table: &MemTable, keys: &[[u8; common::KEY_BYTES]], value: &[u8]) {
    for (sequence, key) in (1..).zip(keys) {
        table.insert(sequence, ValueKind::Value, key, value);
    }
}

fn memtable_insert(c: &mut Criterion) {
    let keys = common::random_keys(ENTRIES, 5);
    let value = common::value();
    let mut group = c.benchmark_group("memtable_insert");
    // One iteration takes tens of milliseconds: a few flat samples suffice.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(ENTRIES as u64));
    group.bench_function("fill_100k", |b| {
        b.iter_batched(
            MemTable::new,
            |table| {
                fill(&table, black_box(&keys), &value);
                table
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn memtable_get(c: &mut Criterion) {
    let keys = common::random_keys(ENTRIES, 5);
    let absent = common::random_keys(ENTRIES, 6);
    let table = MemTable::new();
    fill(&table, &keys, &common::value());
    eprintln!(
        "memtable_get: {ENTRIES} entries, approximately {} bytes",
        table.approximate_bytes()
    );
    let mut group = c.benchmark_group("memtable_get");
    // `keys` is in insertion order, which is random with respect to key order.
    for (name, probes) in [("hit", &keys), ("miss", &absent)] {
        group.bench_function(name, |b| {
            let mut next = 0;
            b.iter(|| {
                let key = &probes[next];
                next += 1;
                if next == probes.len() {
                    next = 0;
                }
                table.get(black_box(key), MAX_SEQUENCE)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, memtable_insert, memtable_get);
criterion_main!(benches);
