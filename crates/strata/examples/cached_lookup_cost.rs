//! Cached point lookups of five configurations side by side, interleaved block by block, for a
//! cost of a few percent that a loaded machine hides between whole runs: `Options::default()`
//! (elastic filters at 10 bits per key with access statistics recording one lookup in 16, DESIGN.md
//! §3.5 and §4), the same recording one lookup in 4 (the default before), elastic filters without
//! statistics, and uniform filters at 10 bits per key with and without them.
//!
//! ```text
//! cargo run --release -p strata --features internal-benches --example cached_lookup_cost -- [KEYS] [ROUNDS] [BLOCK] [SEED] [FLUSH] [MODE] [per-block]
//! ```
//!
//! Each configuration gets its own database in a temporary directory, filled with the same `KEYS`
//! keys in the same shuffled order (16-digit decimal keys and 100-byte values, the benchmark
//! harness's; 4 MiB memtables, an 8 MiB block cache: the main job's shape), flushed every `FLUSH`
//! puts and settled after each flush, so that the trees' shapes do not depend on the load. A warm-up
//! block of lookups per configuration follows; then `ROUNDS` rounds, each timing one block of
//! `BLOCK` absent-key lookups and one of `BLOCK` present-key lookups in every configuration, in
//! an order that rotates from round to round (`MODE` `mixed`, the default; `phased` times present
//! keys only in the first half of the rounds and absent keys only in the second, as the harness's
//! readrandom and readmissing phases follow each other). Absent keys are drawn from `KEYS / 10` gaps and
//! recur, as in the harness's `readmissing`. Every lookup's answer is checked.
//!
//! Prints each tree's shape, then per configuration and kind the median block's lookups per
//! second and the median over rounds of the default's lookups per second over that
//! configuration's in the same round (ratios of neighbouring blocks, which a change of load
//! between runs does not move; below 1, the default is slower), with the lower and upper quartile
//! of those ratios; last, per configuration, its point lookups, unnecessary data reads, block reads
//! by kind and block cache hits by kind (a filter module probed from the cache counts as a hit:
//! more hits per lookup than uniform filters' means more modules probed). With `per-block`, each
//! timed block of absent keys also prints, to standard error, its lookups per second, what it read
//! from the device (data and filter blocks), its cache hits by kind and each file's bits per key in
//! use after it: whether a configuration keeps reading after its cache is warm. Defaults: 500,000
//! keys, 40 rounds, 20,000 lookups per block, seed 42, a flush every 20,000 puts.

use std::time::Instant;

use strata::bench_internals::SplitMix64;
use strata::{Db, Options};

/// A draw in `0..n` from the seeded stream.
fn below(stream: &mut SplitMix64, n: u64) -> u64 {
    stream.next_u64() % n.max(1)
}

fn present_key(i: u64) -> String {
    format!("{i:016}")
}

/// Absent key number `gap`: the harness's, 15 digits and a dot, between two present keys.
fn absent_key(gap: u64) -> String {
    format!("{gap:015}.")
}

struct Config {
    name: &'static str,
    options: fn() -> Options,
}

fn uniform() -> Options {
    Options::default()
        .bits_per_key(10.0)
        .expect("10 bits per key is valid")
}

const CONFIGS: [Config; 5] = [
    Config {
        name: "default (elastic, statistics)",
        options: Options::default,
    },
    Config {
        name: "default, 1 lookup in 4 recorded",
        options: || Options::default().access_sample_every(4),
    },
    Config {
        name: "elastic, no statistics",
        options: || Options::default().access_statistics(false),
    },
    Config {
        name: "uniform, statistics",
        options: || uniform().access_statistics(true),
    },
    Config {
        name: "uniform, no statistics",
        options: || uniform().access_statistics(false),
    },
];

/// Stops the program with `message` and the usage line.
fn usage(message: &str) -> ! {
    eprintln!(
        "cached_lookup_cost: {message}\nusage: cached_lookup_cost [KEYS] [ROUNDS] [BLOCK] [SEED] [FLUSH] [mixed|phased] [per-block]"
    );
    std::process::exit(2)
}

fn arg(args: &[String], index: usize, default: u64) -> u64 {
    args.get(index).map_or(default, |text| {
        text.parse().unwrap_or_else(|_| {
            usage(&format!(
                "argument {index} must be a whole number, got {text:?}"
            ))
        })
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn quartiles(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 4], values[values.len() * 3 / 4])
}

/// One timed block of absent keys (`per-block`): its rate, what it read and hit by kind, and
/// each file's bits per key in use after it.
fn report_block(round: usize, name: &str, rate: f64, db: &Db, before: &strata::stats::IoStats) {
    let after = db.stats().io;
    let bits: Vec<String> = db
        .filter_bits_in_use()
        .values()
        .map(|bits| format!("{bits:.2}"))
        .collect();
    eprintln!(
        "round {round} {name}: {rate:.0} lookups/s; device reads data {} filter {}; cache hits data {} index {} filter {}; bits per key in use {}",
        after.data_block_reads_total() - before.data_block_reads_total(),
        after.filter_block_reads_total() - before.filter_block_reads_total(),
        after.data_cache_hits - before.data_cache_hits,
        after.index_cache_hits - before.index_cache_hits,
        after.filter_cache_hits - before.filter_cache_hits,
        bits.join(" ")
    );
}

/// Times `count` lookups of keys drawn from `stream` in `db`: present keys when `present`.
fn block(db: &Db, keys: u64, present: bool, count: u64, stream: &mut SplitMix64) -> f64 {
    let gaps = (keys / 10).max(1);
    let lookups: Vec<String> = (0..count)
        .map(|_| {
            if present {
                present_key(below(stream, keys))
            } else {
                absent_key(below(stream, gaps))
            }
        })
        .collect();
    let started = Instant::now();
    for key in &lookups {
        let found = db.get(key).expect("get").is_some();
        assert_eq!(found, present, "{key}");
    }
    count as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keys = arg(&args, 1, 500_000).max(10);
    let rounds = arg(&args, 2, 40).max(1) as usize;
    let per_block = arg(&args, 3, 20_000).max(1);
    let seed = arg(&args, 4, 42);
    // Puts between flushes (a 4 MiB memtable holds about 21,000 of these entries): the fill
    // flushes and waits for the compactions at these points itself, so every configuration's
    // tree has the same shape whatever the machine's load.
    let flush_entries = arg(&args, 5, 20_000).max(1);
    let phased = match args.get(6).map(String::as_str) {
        None | Some("mixed") => false,
        Some("phased") => true,
        Some(other) => usage(&format!("MODE is mixed or phased, got {other:?}")),
    };
    let per_block_report = match args.get(7).map(String::as_str) {
        None => false,
        Some("per-block") => true,
        Some(other) => usage(&format!("the last argument is per-block, got {other:?}")),
    };

    let dir = tempfile::tempdir().expect("temporary directory");
    let mut order: Vec<u64> = (0..keys).collect();
    let mut stream = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        order.swap(i, below(&mut stream, i as u64 + 1) as usize);
    }
    let value = [b'v'; 100];
    let dbs: Vec<Db> = CONFIGS
        .iter()
        .enumerate()
        .map(|(index, config)| {
            let options = (config.options)()
                .write_buffer_bytes(4 << 20)
                .block_cache_bytes(8 << 20);
            let db = Db::open(dir.path().join(index.to_string()), options).expect("open");
            for (n, &i) in order.iter().enumerate() {
                db.put(present_key(i), value).expect("put");
                if (n as u64 + 1).is_multiple_of(flush_entries) {
                    db.flush().expect("flush");
                    db.wait_for_compactions().expect("settle");
                }
            }
            db.flush().expect("flush");
            db.wait_for_compactions().expect("settle");
            let stats = db.stats();
            println!(
                "{}: {} runs, {:.2} bits per key in use; levels (level runs files entries):{}",
                config.name,
                stats.runs,
                stats.effective_bits_per_key,
                stats
                    .levels
                    .iter()
                    .map(|l| format!(" L{} {} {} {}", l.level, l.runs, l.files, l.entries))
                    .collect::<String>()
            );
            db
        })
        .collect();

    let mut streams: Vec<SplitMix64> = (0..dbs.len())
        .map(|_| SplitMix64::new(seed.wrapping_add(1)))
        .collect();
    for (db, stream) in dbs.iter().zip(&mut streams) {
        if !phased {
            block(db, keys, false, per_block, stream);
        }
        block(db, keys, true, per_block, stream);
    }
    // rates[kind][config][round]
    let mut rates = vec![vec![Vec::with_capacity(rounds); dbs.len()]; 2];
    for round in 0..rounds {
        for step in 0..dbs.len() {
            let index = (round + step) % dbs.len();
            let kinds: &[(usize, bool)] = match (phased, round < rounds / 2) {
                (false, _) => &[(0, false), (1, true)],
                (true, true) => &[(1, true)],
                (true, false) => &[(0, false)],
            };
            for &(kind, present) in kinds {
                let before = dbs[index].stats().io;
                let rate = block(&dbs[index], keys, present, per_block, &mut streams[index]);
                if per_block_report && !present {
                    report_block(round, CONFIGS[index].name, rate, &dbs[index], &before);
                }
                rates[kind][index].push(rate);
            }
        }
    }

    println!(
        "{rounds} rounds of {per_block} lookups per block and configuration, {keys} keys, seed {seed}"
    );
    println!(
        "{:<32} {:<7} {:>12} {:>14} {:>20}",
        "configuration", "keys", "lookups/s", "default/this", "(quartiles)"
    );
    for (kind, name) in ["absent", "present"].into_iter().enumerate() {
        for (index, config) in CONFIGS.iter().enumerate() {
            let mut own = rates[kind][index].clone();
            let mut ratios: Vec<f64> = rates[kind][index]
                .iter()
                .zip(&rates[kind][0])
                .map(|(rate, default)| default / rate)
                .collect();
            let ratio = median(&mut ratios);
            let (low, high) = quartiles(&mut ratios);
            println!(
                "{:<32} {:<7} {:>12.0} {:>14.3} {:>9.3} - {:.3}",
                config.name,
                name,
                median(&mut own),
                ratio,
                low,
                high
            );
        }
    }
    for (index, config) in CONFIGS.iter().enumerate() {
        let io = dbs[index].stats().io;
        println!(
            "{}: {} point lookups, {} unnecessary data reads; block reads data {} index {} filter {}; cache hits data {} index {} filter {}",
            config.name,
            io.point_lookups,
            io.unnecessary_data_reads_total(),
            io.data_block_reads_total(),
            io.index_block_reads_total(),
            io.filter_block_reads_total(),
            io.data_cache_hits,
            io.index_cache_hits,
            io.filter_cache_hits
        );
    }
}
