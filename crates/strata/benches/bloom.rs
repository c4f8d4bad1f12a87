//! Filter microbenchmarks: the Bloom filter (`filter/bloom.rs`) and, beside it at the same bits
//! per key, the Ribbon filter (`filter/ribbon.rs`):
//!
//! * `{bloom,ribbon}_probe/{10,5,2}bpk/{hit,miss}`: one `may_contain_hash` on a filter of
//!   1,000,000 keys (Bloom: 1.2 MiB at 10 bits/key, 244 KiB at 2: far past a 48 KiB L1d, inside
//!   the 2 MiB per-core L2 of the project's machine; Ribbon the same within 64 bytes), with a
//!   precomputed key hash. Hits probe inserted keys, misses keys that were never inserted; both
//!   in random order, so each probe touches a random part of the filter. Successive probes are
//!   independent, so the CPU overlaps their cache misses: this is probe throughput, not the
//!   latency of one isolated probe. A Ribbon miss stops at the first result column that
//!   disagrees, a hit checks every column.
//! * `{bloom,ribbon}_build/{10,5,2}bpk`: a table file's filter build, `*FilterBuilder::new`,
//!   1,000,000 `add_hash` calls and `finish` (Bloom: sets the bits; Ribbon: banding, back
//!   substitution; both serialize). Throughput is in keys, so criterion reports time per key.

mod common;

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use strata::bench_internals::{build_filter, key_hash, Filter};
use strata::FilterFamily;

/// Keys in the filter.
const KEYS: usize = 1_000_000;

/// The seed table files use for their filter.
const FILTER_SEED: u32 = 0;

const BITS_PER_KEY: [f64; 3] = [10.0, 5.0, 2.0];

fn key_hashes(count: usize, seed: u64) -> Vec<u64> {
    common::random_keys(count, seed)
        .iter()
        .map(|key| key_hash(key))
        .collect()
}

/// Benchmarks `may_contain` on the inserted (`hit`) and absent (`miss`) hashes, cycling through
/// them in order; prints the filter's size and measured false-positive rate first.
fn bench_probes(
    group: &mut BenchmarkGroup<'_, WallTime>,
    label: &str,
    size_bytes: usize,
    may_contain: impl Fn(u64) -> bool,
    present: &[u64],
    absent: &[u64],
) {
    let false_positives = absent.iter().filter(|&&hash| may_contain(hash)).count();
    eprintln!(
        "{label}: filter of {size_bytes} bytes, measured false-positive rate {:.4}",
        false_positives as f64 / absent.len() as f64
    );
    for (name, hashes) in [("hit", present), ("miss", absent)] {
        group.bench_function(format!("{label}/{name}"), |b| {
            let mut next = 0;
            b.iter(|| {
                let hash = hashes[next];
                next += 1;
                if next == hashes.len() {
                    next = 0;
                }
                may_contain(black_box(hash))
            });
        });
    }
}

/// Probes of a `family` filter at every bits per key, in group `name`.
fn bench_family_probes(c: &mut Criterion, name: &str, family: FilterFamily) {
    let present = key_hashes(KEYS, 1);
    let absent = key_hashes(KEYS, 2);
    let mut group = c.benchmark_group(name);
    for bits_per_key in BITS_PER_KEY {
        let filter = Filter::decode(build_filter(family, bits_per_key, FILTER_SEED, &present))
            .expect("filter decodes");
        bench_probes(
            &mut group,
            &format!("{bits_per_key}bpk"),
            filter.size_bytes(),
            |hash| filter.may_contain_hash(hash),
            &present,
            &absent,
        );
    }
    group.finish();
}

fn bloom_probe(c: &mut Criterion) {
    bench_family_probes(c, "bloom_probe", FilterFamily::Bloom);
}

fn ribbon_probe(c: &mut Criterion) {
    bench_family_probes(c, "ribbon_probe", FilterFamily::Ribbon);
}

fn bench_builds(c: &mut Criterion, name: &str, family: FilterFamily) {
    let hashes = key_hashes(KEYS, 1);
    let mut group = c.benchmark_group(name);
    // One iteration takes milliseconds: a few flat samples suffice.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(KEYS as u64));
    for bits_per_key in BITS_PER_KEY {
        group.bench_function(format!("{bits_per_key}bpk"), |b| {
            b.iter(|| build_filter(family, bits_per_key, FILTER_SEED, black_box(&hashes)));
        });
    }
    group.finish();
}

fn bloom_build(c: &mut Criterion) {
    bench_builds(c, "bloom_build", FilterFamily::Bloom);
}

fn ribbon_build(c: &mut Criterion) {
    bench_builds(c, "ribbon_build", FilterFamily::Ribbon);
}

criterion_group!(
    benches,
    bloom_probe,
    ribbon_probe,
    bloom_build,
    ribbon_build
);
criterion_main!(benches);
