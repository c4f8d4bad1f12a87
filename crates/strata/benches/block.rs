//! Sorted-block microbenchmark (`table/block.rs`):
//!
//! * `block_seek/value_{100,8}B`: `BlockIter::new` plus `seek` to a key present in one data block
//!   of about 4 KiB (cut the way the table builder cuts: the first entry that reaches 4096 bytes
//!   ends it) holding internal keys of random 16-byte user keys, restart interval 16, ordered by
//!   `compare_internal_keys`, as a table lookup does once it has the data block from the cache.
//!   The seek is a binary search over the restart points, then a linear scan of at most 16
//!   entries. With 100-byte values (the `strata bench` default) the block holds about 30 entries
//!   and 2 restart points; with 8-byte values about 120 entries and 8 restart points. Targets are
//!   the block's keys in random order, as lookup keys at the newest sequence number.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use strata::bench_internals::{
    encode_internal_key, lookup_key, BlockBuilder, DataBlock, ValueKind, MAX_SEQUENCE,
};

/// The table builder's default block size.
const BLOCK_BYTES: usize = 4096;

/// The default restart interval.
const RESTART_INTERVAL: usize = 16;

/// Builds one data block from the smallest of a set of random keys; returns it with lookup keys
/// for every user key in it, in random order.
fn data_block(value_bytes: usize) -> (DataBlock, Vec<Vec<u8>>) {
    // Many more keys than fit in one block; the block takes the smallest.
    let mut user_keys = common::random_keys(1000, 3);
    user_keys.sort_unstable();
    let value = vec![0x5a; value_bytes];
    let mut builder = BlockBuilder::new(RESTART_INTERVAL);
    let mut in_block = Vec::new();
    for (sequence, user_key) in (1..).zip(&user_keys) {
        builder.add(
            &encode_internal_key(user_key, sequence, ValueKind::Value),
            &value,
        );
        in_block.push(lookup_key(user_key, MAX_SEQUENCE));
        if builder.estimated_size() >= BLOCK_BYTES {
            break;
        }
    }
    let contents = builder.finish();
    let bytes = contents.len();
    let block = DataBlock::decode(contents).expect("a freshly built block decodes");
    eprintln!(
        "block_seek/value_{value_bytes}B: {bytes} bytes, {} entries, {} restart points",
        in_block.len(),
        block.num_restarts()
    );
    common::shuffle(&mut in_block, &mut common::Rng::new(4));
    (block, in_block)
}

fn block_seek(c: &mut Criterion) {
    let mut group = c.benchmark_group("block_seek");
    for value_bytes in [common::VALUE_BYTES, 8] {
        let (block, targets) = data_block(value_bytes);
        for target in &targets {
            let mut iter = block.iter();
            iter.seek(target);
            assert!(iter.valid(), "every target is in the block");
        }
        group.bench_function(format!("value_{value_bytes}B"), |b| {
            let mut next = 0;
            b.iter(|| {
                let target = &targets[next];
                next += 1;
                if next == targets.len() {
                    next = 0;
                }
                let mut iter = block.iter();
                iter.seek(black_box(target));
                iter.value().len()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, block_seek);
criterion_main!(benches);
