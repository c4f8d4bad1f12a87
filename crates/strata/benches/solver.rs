//! The filter-allocation solver (DESIGN.md §2, `alloc/solver.rs`): one `Problem::solve` over F random
//! files (entries 10^3..10^7, weights with 10% zeros, as live statistics would give), for both
//! variants at 2 bits/key. DESIGN.md §2 asks for well under 1 ms at F = 1,000 and under 10 ms at
//! F = 10,000; the targets are 50 µs and 1 ms
//! (a solve runs at every flush and compaction, so it must cost far less than either).

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use strata::alloc::solver::{Item, Problem, Variant};

fn items(count: usize, seed: u64) -> Vec<Item> {
    let mut rng = common::Rng::new(seed);
    (0..count)
        .map(|_| {
            let entries = 1_000 + rng.below(10_000_000) as u64;
            let weight = if rng.below(10) == 0 {
                0.0
            } else {
                rng.below(1_000_000) as f64 / 7.0
            };
            Item::new(entries, weight)
        })
        .collect()
}

fn solver(c: &mut Criterion) {
    let mut group = c.benchmark_group("solver");
    for files in [1_000usize, 10_000] {
        for (name, variant) in [
            ("pure", Variant::Pure),
            ("min1", Variant::MinimumBitsPerKeyOne),
        ] {
            let problem = Problem::with_bits_per_key(items(files, 42), 2.0)
                .expect("valid problem")
                .variant(variant);
            group.bench_with_input(BenchmarkId::new(name, files), &problem, |b, problem| {
                b.iter(|| black_box(problem.solve()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, solver);
criterion_main!(benches);
