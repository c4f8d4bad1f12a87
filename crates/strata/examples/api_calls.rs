//! The Rust API's cost per call for the operations `scripts/bench_python_bindings.py` times
//! through the Python module, on the same data, so that the script can subtract one from the
//! other and report what the binding adds per call.
//!
//! ```text
//! cargo run --release -p strata --example api_calls -- --keys 1000000 --runs 3 --seed 42
//! ```
//!
//! Flags: `--keys N` (default 1000000, at least 1000), `--runs R` (default 3), `--seed S`
//! (default 42), `--dir PATH` (where each run's fresh database is created and removed; default a
//! temporary directory), `--compact` (settle with a full compaction instead of flush + wait).
//! Prints one JSON object on standard output (progress goes to standard error): the nanoseconds
//! per operation of every row in every run, their medians, and the tree shape after loading.
//!
//! The data, which the Python script generates identically:
//!
//! * SplitMix64 with state `s`: `s += 0x9E3779B97F4A7C15; z = s; z = (z ^ z >> 30) *
//!   0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB; return z ^ z >> 31` (wrapping
//!   64-bit arithmetic).
//! * `permutation(n, seed)`: `0..n` shuffled by Fisher-Yates from the last position down: for
//!   `i` from `n - 1` to 1, swap positions `i` and `next() % (i + 1)` of a SplitMix64 whose
//!   state starts at `seed`.
//! * The key of number `j` is `j` in 16 ASCII decimal digits, zero-padded (`0000000000000042`).
//!   The store holds the even numbers `2i` for `i` in `0..n`; a miss asks for an odd number
//!   `2i + 1`, which falls between two stored keys.
//! * The value of number `j` is `j * 0x9E3779B97F4A7C15` (wrapping, 64 bits) in 16 lowercase
//!   hexadecimal digits, repeated seven times and cut to 100 bytes.
//!
//! The rows (each run on a fresh database with the same data):
//!
//! * `put`: the `n` keys in the order `permutation(n, seed)`, one `put` each; ns per put.
//! * the load is settled: `flush` then `wait_for_compactions` (or `compact` with `--compact`).
//! * `get_hit`: every stored key once, in the order `permutation(n, seed + 1)`; ns per get.
//! * `get_miss`: every odd number `2i + 1` once, in the order `permutation(n, seed + 2)`.
//! * `multi_get_100`: the stored keys in the order `permutation(n, seed + 3)`, 100 per call, each
//!   call reading from one snapshot as the Python module's `multi_get` does; ns per call.
//! * `iterate`: a full forward scan; ns per entry.
//! * `write_batch_1000`: `max(1, n / 10000)` batches of 1,000 puts of new keys (the odd numbers in
//!   the order `permutation(n, seed + 2)`, batch `b` taking positions `1000b..1000(b + 1)`), each
//!   batch built and written; ns per batch.
//!
//! Options: a 64 MiB write buffer, an 8 MiB block cache, no compression, no sync on writes, the
//! write-ahead log on, filters as `Options::default()` has them (10 bits per key), as the Python
//! script opens the module's database.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use strata::{Db, Options, WriteBatch};

/// SplitMix64's increment; also the multiplier of the values.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Puts per batch in the `write_batch_1000` row.
const BATCH_PUTS: usize = 1000;
/// Keys per call in the `multi_get_100` row.
const MULTI_GET_KEYS: usize = 100;
/// The rows, in the order they run and are printed.
const ROWS: [&str; 6] = [
    "put",
    "get_hit",
    "get_miss",
    "multi_get_100",
    "iterate",
    "write_batch_1000",
];

struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64 { state: seed };
    for i in (1..n).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

fn key(number: u64) -> Vec<u8> {
    format!("{number:016}").into_bytes()
}

fn value(number: u64) -> Vec<u8> {
    let mut text = format!("{:016x}", number.wrapping_mul(GOLDEN)).repeat(7);
    text.truncate(100);
    text.into_bytes()
}

struct Args {
    keys: usize,
    runs: usize,
    seed: u64,
    dir: Option<PathBuf>,
    compact: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        keys: 1_000_000,
        runs: 3,
        seed: 42,
        dir: None,
        compact: false,
    };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut operand = |name: &str| words.next().ok_or_else(|| format!("{name} needs a value"));
        match word.as_str() {
            "--keys" => args.keys = number(&operand("--keys")?, "--keys")?,
            "--runs" => args.runs = number(&operand("--runs")?, "--runs")?,
            "--seed" => args.seed = number(&operand("--seed")?, "--seed")?,
            "--dir" => args.dir = Some(PathBuf::from(operand("--dir")?)),
            "--compact" => args.compact = true,
            "-h" | "--help" => {
                println!(
                    "usage: api_calls [--keys N] [--runs R] [--seed S] [--dir PATH] [--compact]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if args.keys < BATCH_PUTS {
        return Err(format!("--keys must be at least {BATCH_PUTS}"));
    }
    if args.runs == 0 {
        return Err("--runs must be at least 1".to_string());
    }
    Ok(args)
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{name}: {text:?} is not a non-negative integer"))
}

/// The keys and values of every row, in the order the rows use them.
struct Workload {
    put_keys: Vec<Vec<u8>>,
    put_values: Vec<Vec<u8>>,
    hit_keys: Vec<Vec<u8>>,
    miss_keys: Vec<Vec<u8>>,
    multi_get_keys: Vec<Vec<u8>>,
    batch_keys: Vec<Vec<u8>>,
    batch_values: Vec<Vec<u8>>,
}

impl Workload {
    /// FNV-1a (64 bits) over the first 1,000 entries of every list: the Python script computes
    /// the same over its data and compares, so both sides are known to run on the same data.
    fn sample_digest(&self) -> String {
        let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
        for list in [
            &self.put_keys,
            &self.put_values,
            &self.hit_keys,
            &self.miss_keys,
            &self.multi_get_keys,
            &self.batch_keys,
            &self.batch_values,
        ] {
            for item in list.iter().take(1000) {
                for &byte in item {
                    hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
                }
            }
        }
        format!("{hash:016x}")
    }

    fn new(n: usize, seed: u64) -> Workload {
        let stored = |i: usize| 2 * i as u64;
        let absent = |i: usize| 2 * i as u64 + 1;
        let put_order = permutation(n, seed);
        let hit_order = permutation(n, seed.wrapping_add(1));
        let miss_order = permutation(n, seed.wrapping_add(2));
        let multi_get_order = permutation(n, seed.wrapping_add(3));
        let batches = (n / 10_000).max(1);
        let batch_numbers: Vec<u64> = miss_order[..batches * BATCH_PUTS]
            .iter()
            .map(|&i| absent(i))
            .collect();
        Workload {
            put_keys: put_order.iter().map(|&i| key(stored(i))).collect(),
            put_values: put_order.iter().map(|&i| value(stored(i))).collect(),
            hit_keys: hit_order.iter().map(|&i| key(stored(i))).collect(),
            miss_keys: miss_order.iter().map(|&i| key(absent(i))).collect(),
            multi_get_keys: multi_get_order.iter().map(|&i| key(stored(i))).collect(),
            batch_keys: batch_numbers.iter().map(|&j| key(j)).collect(),
            batch_values: batch_numbers.iter().map(|&j| value(j)).collect(),
        }
    }
}

/// Nanoseconds per operation of `operations` operations that took `started.elapsed()`.
fn per_op(started: Instant, operations: usize) -> f64 {
    started.elapsed().as_nanos() as f64 / operations as f64
}

struct RunResult {
    ns_per_op: Vec<(&'static str, f64)>,
    /// (level, runs, files, entries) of every non-empty level after the load settled.
    levels: Vec<(usize, usize, usize, u64)>,
}

fn one_run(dir: &Path, work: &Workload, compact: bool) -> strata::Result<RunResult> {
    let options = Options::default()
        .write_buffer_bytes(64 << 20)
        .block_cache_bytes(8 << 20)
        .sync_writes(false)
        .disable_wal(false);
    let db = Db::open(dir, options)?;
    let n = work.put_keys.len();
    let mut rows = Vec::new();

    let started = Instant::now();
    for (key, value) in work.put_keys.iter().zip(&work.put_values) {
        db.put(key, value)?;
    }
    rows.push(("put", per_op(started, n)));

    if compact {
        db.compact()?;
    } else {
        db.flush()?;
        db.wait_for_compactions()?;
    }
    let levels = db
        .stats()
        .levels
        .iter()
        .map(|level| (level.level, level.runs, level.files, level.entries))
        .collect();

    let started = Instant::now();
    for key in &work.hit_keys {
        black_box(db.get(key)?);
    }
    rows.push(("get_hit", per_op(started, work.hit_keys.len())));

    let started = Instant::now();
    for key in &work.miss_keys {
        black_box(db.get(key)?);
    }
    rows.push(("get_miss", per_op(started, work.miss_keys.len())));

    let started = Instant::now();
    let mut calls = 0;
    for chunk in work.multi_get_keys.chunks(MULTI_GET_KEYS) {
        // As the module's multi_get: one snapshot per call, the values collected in order.
        let snapshot = db.snapshot();
        let values = chunk
            .iter()
            .map(|key| snapshot.get(key))
            .collect::<strata::Result<Vec<_>>>()?;
        black_box(values);
        calls += 1;
    }
    rows.push(("multi_get_100", per_op(started, calls)));

    let started = Instant::now();
    let mut entries = 0;
    for entry in db.iter() {
        black_box(entry?);
        entries += 1;
    }
    rows.push(("iterate", per_op(started, entries)));
    if entries != n {
        eprintln!("warning: the scan saw {entries} entries, {n} were written");
    }

    let started = Instant::now();
    let mut batches = 0;
    for (keys, values) in work
        .batch_keys
        .chunks(BATCH_PUTS)
        .zip(work.batch_values.chunks(BATCH_PUTS))
    {
        let mut batch = WriteBatch::new();
        for (key, value) in keys.iter().zip(values) {
            batch.put(key, value);
        }
        db.write(batch)?;
        batches += 1;
    }
    rows.push(("write_batch_1000", per_op(started, batches)));

    db.close()?;
    Ok(RunResult {
        ns_per_op: rows,
        levels,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    eprintln!(
        "api_calls: generating {} keys (seed {})",
        args.keys, args.seed
    );
    let work = Workload::new(args.keys, args.seed);
    let temporary = match &args.dir {
        Some(_) => None,
        None => Some(tempfile::tempdir()?),
    };
    let base = match (&args.dir, &temporary) {
        (Some(dir), _) => dir.clone(),
        (None, Some(temporary)) => temporary.path().to_path_buf(),
        (None, None) => unreachable!("a temporary directory is made when --dir is absent"),
    };
    std::fs::create_dir_all(&base)?;

    let mut results = Vec::new();
    for run in 0..args.runs {
        let dir = base.join(format!("api_calls-run{run}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let result = one_run(&dir, &work, args.compact)?;
        std::fs::remove_dir_all(&dir)?;
        eprintln!(
            "api_calls: run {}: {}",
            run + 1,
            result
                .ns_per_op
                .iter()
                .map(|(row, ns)| format!("{row} {ns:.0} ns"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        results.push(result);
    }

    let mut out = String::from("{\n");
    out.push_str(&format!(
        "  \"config\": {{\"keys\": {}, \"runs\": {}, \"seed\": {}, \"settle\": {}, \"key_bytes\": 16, \"value_bytes\": 100, \"write_buffer_bytes\": {}, \"block_cache_bytes\": {}}},\n",
        args.keys,
        args.runs,
        args.seed,
        json_string(if args.compact { "compact" } else { "flush+wait_for_compactions" }),
        64u64 << 20,
        8u64 << 20
    ));
    out.push_str(&format!(
        "  \"sample_digest\": {},\n",
        json_string(&work.sample_digest())
    ));
    out.push_str("  \"units\": {\"put\": \"ns per put\", \"get_hit\": \"ns per get\", \"get_miss\": \"ns per get\", \"multi_get_100\": \"ns per call of 100 keys\", \"iterate\": \"ns per entry\", \"write_batch_1000\": \"ns per batch of 1000 puts\"},\n");
    out.push_str("  \"runs\": [\n");
    for (index, result) in results.iter().enumerate() {
        let rows: Vec<String> = result
            .ns_per_op
            .iter()
            .map(|(row, ns)| format!("{}: {ns:.1}", json_string(row)))
            .collect();
        let levels: Vec<String> = result
            .levels
            .iter()
            .map(|(level, runs, files, entries)| {
                format!(
                    "{{\"level\": {level}, \"runs\": {runs}, \"files\": {files}, \"entries\": {entries}}}"
                )
            })
            .collect();
        out.push_str(&format!(
            "    {{\"ns_per_op\": {{{}}}, \"levels\": [{}]}}{}\n",
            rows.join(", "),
            levels.join(", "),
            if index + 1 < results.len() { "," } else { "" }
        ));
    }
    out.push_str("  ],\n");
    let medians: Vec<String> = ROWS
        .iter()
        .map(|row| {
            let values = results
                .iter()
                .flat_map(|result| result.ns_per_op.iter())
                .filter(|(name, _)| name == row)
                .map(|(_, ns)| *ns)
                .collect();
            format!("{}: {:.1}", json_string(row), median(values))
        })
        .collect();
    out.push_str(&format!(
        "  \"median_ns_per_op\": {{{}}}\n",
        medians.join(", ")
    ));
    out.push('}');
    println!("{out}");
    Ok(())
}

fn main() {
    if let Err(error) = run() {
        eprintln!("api_calls: {error}");
        std::process::exit(1);
    }
}
