//! Range filter microbenchmarks (`filter/range.rs`), on the benchmark harness's keys (16-byte
//! zero-padded decimal indexes, 1,000,000 of them, dense):
//!
//! * `range_filter_build/b{6,10}`: a table file's range filter build, `RangeFilterBuilder::add`
//!   for every key and `finish` (alphabets, knots, Rice-coded positions, serialized). Throughput
//!   is in keys, so criterion reports time per key.
//! * `range_filter_probe/b{6,10}/{hit,empty}`: one `may_contain_range`, in random order, for
//!   the one-key range `[key i, key i + 1]` (`hit`) or an empty range between two keys (`empty`:
//!   `[key i + ".", key i + ".~"]`, below key `i`'s last digit: the bench's missing keys).
//!
//! Each setting first prints the filter's memory in bits per key and the measured false-positive
//! rate of the empty ranges.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use strata::bench_internals::{build_range_filter, RangeFilter};

/// Keys in the filter.
const KEYS: u64 = 1_000_000;

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// The probe order: a fixed permutation-like walk over the keys (a multiplicative step).
fn order(count: u64) -> Vec<u64> {
    (0..count).map(|n| (n * 7_919 + 13) % KEYS).collect()
}

fn benches(c: &mut Criterion) {
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let mut build = c.benchmark_group("range_filter_build");
    build.sampling_mode(SamplingMode::Flat);
    build.sample_size(10);
    build.throughput(Throughput::Elements(KEYS));
    for bits in [6u32, 10] {
        build.bench_function(format!("b{bits}"), |b| {
            b.iter(|| black_box(build_range_filter(black_box(&keys), bits)))
        });
    }
    build.finish();

    let mut probe = c.benchmark_group("range_filter_probe");
    for bits in [6u32, 10] {
        let filter = RangeFilter::decode(&build_range_filter(&keys, bits)).expect("decodes");
        let walk = order(100_000);
        let hits: Vec<(Vec<u8>, Vec<u8>)> = walk.iter().map(|&i| (key(i), key(i + 1))).collect();
        let empties: Vec<(Vec<u8>, Vec<u8>)> = walk
            .iter()
            .map(|&i| {
                let stem = &key(i)[..15];
                ([stem, b"."].concat(), [stem, b".~"].concat())
            })
            .collect();
        let false_positives = empties
            .iter()
            .filter(|(lo, hi)| filter.may_contain_range(lo, hi))
            .count();
        eprintln!(
            "b = {bits}: {:.2} bits per key in memory, empty-range false-positive rate {:.5}",
            filter.memory_bytes() as f64 * 8.0 / KEYS as f64,
            false_positives as f64 / empties.len() as f64
        );
        for (name, ranges) in [("hit", &hits), ("empty", &empties)] {
            probe.bench_function(format!("b{bits}/{name}"), |b| {
                let mut next = 0;
                b.iter(|| {
                    let (lo, hi) = &ranges[next];
                    next = (next + 1) % ranges.len();
                    black_box(filter.may_contain_range(black_box(lo), black_box(hi)))
                })
            });
        }
    }
    probe.finish();
}

criterion_group!(range_filter, benches);
criterion_main!(range_filter);
