//! Bloom filter microbenchmarks (`filter/bloom.rs`):
//!
//! * `bloom_probe/{10,2}bpk/{hit,miss}`: one `may_contain_hash` on a filter of 1,000,000 keys
//!   (1.2 MiB at 10 bits/key, 244 KiB at 2: far past a 48 KiB L1d, inside the 2 MiB per-core L2
//!   of the project's machine), with a precomputed key hash. Hits probe inserted keys, misses
//!   keys that were never inserted; both in random order, so each probe touches a random 64-byte
//!   block. Successive probes are independent, so the CPU overlaps their cache misses: this is
//!   probe throughput, not the latency of one isolated probe.
//! * `bloom_build/{10,2}bpk`: a table file's filter build, `BloomFilterBuilder::new`, 1,000,000
//!   `add_hash` calls and `finish` (which sets the bits and serializes).

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use strata::bench_internals::{key_hash, BloomFilter, BloomFilterBuilder};

/// Keys in the filter.
const KEYS: usize = 1_000_000;

/// The seed table files use for their filter.
const FILTER_SEED: u32 = 0;

const BITS_PER_KEY: [f64; 2] = [10.0, 2.0];

fn key_hashes(count: usize, seed: u64) -> Vec<u64> {
    common::random_keys(count, seed)
        .iter()
        .map(|key| key_hash(key))
        .collect()
}

fn build(bits_per_key: f64, hashes: &[u64]) -> Vec<u8> {
    let mut builder = BloomFilterBuilder::new(bits_per_key, FILTER_SEED);
    for &hash in hashes {
        builder.add_hash(hash);
    }
    builder.finish()
}

fn bloom_probe(c: &mut Criterion) {
    let present = key_hashes(KEYS, 1);
    let absent = key_hashes(KEYS, 2);
    let mut group = c.benchmark_group("bloom_probe");
    for bits_per_key in BITS_PER_KEY {
        let filter = BloomFilter::decode(build(bits_per_key, &present)).expect("filter decodes");
        let false_positives = absent
            .iter()
            .filter(|&&hash| filter.may_contain_hash(hash))
            .count();
        eprintln!(
            "bloom_probe/{bits_per_key}bpk: filter of {} bytes, measured false-positive rate {:.4}",
            filter.size_bytes(),
            false_positives as f64 / absent.len() as f64
        );
        for (name, hashes) in [("hit", &present), ("miss", &absent)] {
            group.bench_function(format!("{bits_per_key}bpk/{name}"), |b| {
                let mut next = 0;
                b.iter(|| {
                    let hash = hashes[next];
                    next += 1;
                    if next == hashes.len() {
                        next = 0;
                    }
                    filter.may_contain_hash(black_box(hash))
                });
            });
        }
    }
    group.finish();
}

fn bloom_build(c: &mut Criterion) {
    let hashes = key_hashes(KEYS, 1);
    let mut group = c.benchmark_group("bloom_build");
    // One iteration takes milliseconds: a few flat samples suffice.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(KEYS as u64));
    for bits_per_key in BITS_PER_KEY {
        group.bench_function(format!("{bits_per_key}bpk"), |b| {
            b.iter(|| build(bits_per_key, black_box(&hashes)));
        });
    }
    group.finish();
}

criterion_group!(benches, bloom_probe, bloom_build);
criterion_main!(benches);
