//! The work of one range filter (`filter/range.rs`) split into phases, so that
//! `scripts/range_filter_probe_instructions.sh` can count each phase's instructions under
//! callgrind by difference: every phase runs the phases before it, then its own.
//!
//! ```text
//! cargo run --release -p strata --features internal-benches --example range_filter_instructions -- \
//!     PHASE BITS [KEYS] [PROBES] [SEED]
//! ```
//!
//! * `keys`: draws `KEYS` distinct numbers of `0..4 * KEYS` (SplitMix64 from `SEED`, default 42),
//!   sorted, each written as 16 zero-padded ASCII decimal digits (the benchmark harness's keys; a
//!   table file holds about a quarter of the key space), and `PROBES` ranges `[key i, key i + 1]`
//!   for random numbers `i` (the one-key seeks of `seekrandom --seek-bounded`: some hold a key,
//!   most do not).
//! * `build`: also builds the filter block at `BITS` (`RangeFilterBuilder::add` for every key,
//!   then `finish`).
//! * `dump` (not measured): `build`, then prints the block in hexadecimal (how the tests' fixture
//!   of a block written by an earlier build was made).
//! * `decode`: also decodes it (`RangeFilter::decode`, as a table reader does at open).
//! * `probe`: also asks `may_contain_range` of every range.
//! * `check` (not measured): also checks every answer against the keys (a range holding a key
//!   answered "no" is a false negative: the program panics) and counts the false positives.
//!
//! Prints one line: the phase, the block's bytes, the decoded filter's memory, for `probe` and
//! `check` the ranges answered "maybe", and for `check` the ranges that hold a key and the false
//! positives among the empty ranges; these counts must not change when only the decoder changes.
//!
//! Defaults: 200,000 keys, 200,000 probes.

use std::hint::black_box;

use strata::bench_internals::{build_range_filter, RangeFilter, SplitMix64};

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// Argument `at` as a number, `default` when absent; an error naming it when it is not a number.
fn arg(args: &[String], at: usize, default: u64) -> Result<u64, String> {
    match args.get(at) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {at} is not a number: {s}")),
        None => Ok(default),
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: range_filter_instructions keys|build|dump|decode|probe|check BITS [KEYS] [PROBES] [SEED]";
    let phase = args.get(1).ok_or(usage)?.as_str();
    let rank = match phase {
        "keys" => 0,
        "build" | "dump" => 1,
        "decode" => 2,
        "probe" => 3,
        "check" => 4,
        _ => return Err(usage.to_string()),
    };
    let bits = arg(&args, 2, 0)?;
    if !(1..=20).contains(&bits) {
        return Err(format!("BITS must be 1 to 20, got {bits}; {usage}"));
    }
    let bits = bits as u32;
    let count = arg(&args, 3, 200_000)?;
    let probes = arg(&args, 4, 200_000)?;
    let mut stream = SplitMix64::new(arg(&args, 5, 42)?);
    let space = 4 * count;
    let mut numbers: Vec<u64> = Vec::with_capacity(count as usize);
    let mut taken = vec![false; space as usize];
    while (numbers.len() as u64) < count {
        let n = stream.next_u64() % space;
        if !taken[n as usize] {
            taken[n as usize] = true;
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    let keys: Vec<Vec<u8>> = numbers.iter().map(|&n| key(n)).collect();
    let starts: Vec<u64> = (0..probes).map(|_| stream.next_u64() % space).collect();
    let ranges: Vec<(Vec<u8>, Vec<u8>)> = starts.iter().map(|&i| (key(i), key(i + 1))).collect();
    if rank == 0 {
        println!(
            "keys {} ranges {}",
            black_box(&keys).len(),
            black_box(&ranges).len()
        );
        return Ok(());
    }
    let block = build_range_filter(black_box(&keys), bits);
    if rank == 1 {
        println!("build block_bytes {}", black_box(&block).len());
        if phase == "dump" {
            let hex: String = block.iter().map(|byte| format!("{byte:02x}")).collect();
            println!("{hex}");
        }
        return Ok(());
    }
    let filter = RangeFilter::decode(black_box(&block))
        .map_err(|error| format!("the built filter does not decode: {error}"))?;
    if rank == 2 {
        println!(
            "decode block_bytes {} memory_bytes {}",
            block.len(),
            black_box(&filter).memory_bytes()
        );
        return Ok(());
    }
    let mut maybe = 0u64;
    let mut answers = Vec::with_capacity(if rank == 4 { ranges.len() } else { 0 });
    for (lo, hi) in &ranges {
        let answer = filter.may_contain_range(black_box(lo), black_box(hi));
        maybe += u64::from(answer);
        if rank == 4 {
            answers.push(answer);
        }
    }
    if rank == 3 {
        println!(
            "probe block_bytes {} memory_bytes {} maybe {maybe}",
            block.len(),
            filter.memory_bytes()
        );
        return Ok(());
    }
    let (mut holding, mut false_positives) = (0u64, 0u64);
    for (&i, &answer) in starts.iter().zip(&answers) {
        let holds = taken[i as usize] || taken.get(i as usize + 1).copied().unwrap_or(false);
        if holds && !answer {
            return Err(format!("a false negative at {i}"));
        }
        holding += u64::from(holds);
        false_positives += u64::from(!holds && answer);
    }
    println!(
        "check block_bytes {} memory_bytes {} maybe {maybe} holding {holding} \
         false_positives {false_positives} empty {}",
        block.len(),
        filter.memory_bytes(),
        probes - holding
    );
    Ok(())
}
