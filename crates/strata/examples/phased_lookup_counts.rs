//! One configuration of `cached_lookup_cost`'s phased run, alone, for callgrind: absent-key
//! lookups after present-key ones on the same tree, the absent ones inside one function
//! (`absent_lookups`) that callgrind can be told to count alone.
//!
//! ```text
//! cargo build --release -p strata --features internal-benches --example phased_lookup_counts
//! phased_lookup_counts fill DIR CONFIG                   # the tree, as cached_lookup_cost's
//! cp -a DIR RUN && valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no \
//!     --toggle-collect='*absent_lookups*' phased_lookup_counts run RUN CONFIG 100000 80000
//! ```
//!
//! `CONFIG` is `default` (elastic filters at 10 bits per key with access statistics),
//! `elastic-nostats`, `uniform` (10 bits per key, no statistics), or, to bound what the number of
//! modules probed is worth, the default with whole-budget modules on level 0 (`whole-level0`) or
//! on every level (`whole-modules`). `fill` writes 500,000 keys
//! (16-digit decimal keys, 100-byte values) in `cached_lookup_cost`'s shuffled order (seed 42),
//! flushing every 22,000 puts and settling after each flush, with 4 MiB memtables and an 8 MiB
//! block cache: level 0 three files, level 2 one. `run` opens a copy (lookups may rewrite
//! filters), looks up `PRESENT` present keys, then `ABSENT` absent ones drawn from 50,000 gaps
//! (they recur, as in the harness's `readmissing`), and prints the absent phase's lookups per
//! second, filter modules probed from the cache, index and data block cache hits, block reads and
//! each file's bits per key in use. Divide callgrind's totals by `ABSENT` for counts per lookup,
//! which do not depend on the machine's load. docs/BENCHMARKS.md, entry "The absent-key gap after
//! present keys".

use std::sync::Arc;
use std::time::Instant;

use strata::alloc::Elastic;
use strata::bench_internals::SplitMix64;
use strata::{Db, Options};

const KEYS: u64 = 500_000;
const SEED: u64 = 42;
const FLUSH_ENTRIES: u64 = 22_000;

/// A draw in `0..n` from the seeded stream.
fn below(stream: &mut SplitMix64, n: u64) -> u64 {
    stream.next_u64() % n.max(1)
}

fn usage(message: &str) -> ! {
    eprintln!(
        "phased_lookup_counts: {message}\nusage: phased_lookup_counts fill DIR CONFIG | run DIR CONFIG PRESENT ABSENT \
         (CONFIG: default, elastic-nostats, uniform, whole-level0, whole-modules)"
    );
    std::process::exit(2)
}

fn options(config: &str) -> Options {
    let options = match config {
        "default" => Options::default(),
        "elastic-nostats" => Options::default().access_statistics(false),
        "uniform" => Options::default()
            .bits_per_key(10.0)
            .unwrap_or_else(|error| usage(&error.to_string()))
            .access_statistics(false),
        "whole-level0" => whole_modules(false),
        "whole-modules" => whole_modules(true),
        other => usage(&format!("unknown configuration {other:?}")),
    };
    options
        .write_buffer_bytes(4 << 20)
        .block_cache_bytes(8 << 20)
}

/// The default with modules of the whole budget (10 bits per key) on level 0, and on every level
/// when `everywhere`.
fn whole_modules(everywhere: bool) -> Options {
    let elastic = Elastic::new(10.0).and_then(|elastic| elastic.with_level0_module_bits(10.0));
    let elastic = if everywhere {
        elastic.and_then(|elastic| elastic.with_module_bits(10.0))
    } else {
        elastic
    };
    match elastic {
        Ok(elastic) => Options::default().filter_allocator(Arc::new(elastic)),
        Err(error) => usage(&error.to_string()),
    }
}

fn count(args: &[String], index: usize) -> u64 {
    args.get(index)
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| usage(&format!("argument {index} must be a whole number")))
}

/// The absent phase, alone in a function so that callgrind counts it alone.
#[inline(never)]
fn absent_lookups(db: &Db, keys: &[String]) {
    for key in keys {
        assert!(db.get(key).expect("get").is_none(), "{key}");
    }
}

fn fill(dir: &str, config: &str) {
    let mut order: Vec<u64> = (0..KEYS).collect();
    let mut stream = SplitMix64::new(SEED);
    for i in (1..order.len()).rev() {
        order.swap(i, below(&mut stream, i as u64 + 1) as usize);
    }
    let db = Db::open(dir, options(config)).expect("open");
    for (n, &i) in order.iter().enumerate() {
        db.put(format!("{i:016}"), [b'v'; 100]).expect("put");
        if (n as u64 + 1).is_multiple_of(FLUSH_ENTRIES) {
            db.flush().expect("flush");
            db.wait_for_compactions().expect("settle");
        }
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
}

fn run(dir: &str, config: &str, present: u64, absent: u64) {
    let db = Db::open(dir, options(config)).expect("open");
    let mut stream = SplitMix64::new(SEED + 1);
    for _ in 0..present {
        let key = format!("{:016}", below(&mut stream, KEYS));
        assert!(db.get(&key).expect("get").is_some(), "{key}");
    }
    let keys: Vec<String> = (0..absent)
        .map(|_| format!("{:015}.", below(&mut stream, KEYS / 10)))
        .collect();
    let before = db.stats().io;
    let started = Instant::now();
    absent_lookups(&db, &keys);
    let seconds = started.elapsed().as_secs_f64();
    let after = db.stats().io;
    let bits: Vec<String> = db
        .filter_bits_in_use()
        .values()
        .map(|bits| format!("{bits:.2}"))
        .collect();
    println!(
        "{config}: {absent} absent lookups after {present} present, {:.0}/s; cache hits filter {} index {} data {}; block reads filter {} data {}; bits per key in use by file {}",
        absent as f64 / seconds.max(f64::MIN_POSITIVE),
        after.filter_cache_hits - before.filter_cache_hits,
        after.index_cache_hits - before.index_cache_hits,
        after.data_cache_hits - before.data_cache_hits,
        after.filter_block_reads_total() - before.filter_block_reads_total(),
        after.data_block_reads_total() - before.data_block_reads_total(),
        bits.join(" ")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(dir), Some(config)) = (args.get(1), args.get(2), args.get(3)) else {
        usage("missing arguments")
    };
    match mode.as_str() {
        "fill" => fill(dir, config),
        "run" => run(dir, config, count(&args, 4), count(&args, 5)),
        other => usage(&format!("unknown mode {other:?}")),
    }
}
