//! Tests of the Ribbon filter (`filter/ribbon.rs`): no false negatives, measured FPR against the
//! model and against the blocked Bloom filter at equal memory, real-valued bits per key, seed
//! independence, construction retries, and the decoder's validation.

use super::*;
use crate::filter::bloom::{self, key_hash, BloomFilter, BloomFilterBuilder};
use proptest::prelude::*;

/// Hashes of `count` distinct random-looking 8-byte keys; `offset` selects a disjoint range, so
/// sets generated with non-overlapping ranges share no key (as in the Bloom filter's tests).
fn key_hashes(offset: u64, count: u64) -> Vec<u64> {
    (offset..offset + count)
        .map(|i| key_hash(&mix64(i.wrapping_add(0x9e37_79b9_7f4a_7c15)).to_le_bytes()))
        .collect()
}

fn build_bytes(bits_per_key: f64, seed: u32, hashes: &[u64]) -> Vec<u8> {
    let mut builder = RibbonFilterBuilder::new(bits_per_key, seed);
    for &hash in hashes {
        builder.add_hash(hash);
    }
    builder.finish()
}

fn build(bits_per_key: f64, seed: u32, hashes: &[u64]) -> RibbonFilter {
    RibbonFilter::decode(build_bytes(bits_per_key, seed, hashes))
        .expect("a freshly built filter decodes")
}

fn measured_fpr(filter: &RibbonFilter, absent: &[u64]) -> f64 {
    let hits = absent
        .iter()
        .filter(|&&hash| filter.may_contain_hash(hash))
        .count();
    hits as f64 / absent.len() as f64
}

fn bloom_fpr(bloom: &BloomFilter, absent: &[u64]) -> f64 {
    let hits = absent
        .iter()
        .filter(|&&hash| bloom.may_contain_hash(hash))
        .count();
    hits as f64 / absent.len() as f64
}

/// A Bloom filter over `hashes` using the same bytes as `ribbon` (within one 64-byte block):
/// its bits per key is the Ribbon's whole serialized size in bits over the key count.
fn bloom_at_equal_memory(ribbon: &RibbonFilter, hashes: &[u64]) -> BloomFilter {
    let bits_per_key = (ribbon.size_bytes() * 8) as f64 / hashes.len() as f64;
    let mut builder = BloomFilterBuilder::new(bits_per_key, 0);
    for &hash in hashes {
        builder.add_hash(hash);
    }
    BloomFilter::decode(builder.finish()).expect("a freshly built bloom filter decodes")
}

fn valid_filter_bytes() -> Vec<u8> {
    build_bytes(7.5, 3, &key_hashes(0, 300))
}

fn assert_no_false_negatives(filter: &RibbonFilter, hashes: &[u64], context: &str) {
    for &hash in hashes {
        assert!(filter.may_contain_hash(hash), "false negative: {context}");
    }
}

#[test]
fn fpr_model_and_inverse() {
    assert_eq!(false_positive_rate(0.0), 1.0);
    assert_eq!(false_positive_rate(-3.0), 1.0);
    assert_eq!(false_positive_rate(f64::NAN), 1.0);
    // 2^-(10 / 1.05) = 0.001365...
    assert!((false_positive_rate(10.0) - 2f64.powf(-10.0 / MODEL_SLOTS_PER_KEY)).abs() < 1e-12);
    for bpk in [0.1, 0.5, 1.3, 2.0, 7.5, 10.0, 20.0] {
        let back = bits_per_key_for_rate(false_positive_rate(bpk));
        assert!(
            (back - bpk).abs() < 1e-9,
            "bpk {bpk} round-tripped to {back}"
        );
        // The point of Ribbon: lower than the Bloom formula at the same memory.
        assert!(false_positive_rate(bpk) < bloom::false_positive_rate(bpk));
    }
    assert_eq!(bits_per_key_for_rate(1.0), 0.0);
    assert_eq!(bits_per_key_for_rate(2.0), 0.0);
    assert_eq!(bits_per_key_for_rate(f64::NAN), 0.0);
    assert_eq!(bits_per_key_for_rate(0.0), f64::INFINITY);
    // About 30% fewer bits than Bloom's formula for the same FPR.
    let ratio = bits_per_key_for_rate(0.01) / bloom::bits_per_key_for_rate(0.01);
    assert!(
        (0.65..0.8).contains(&ratio),
        "ribbon/bloom bits ratio {ratio}"
    );
}

#[test]
fn no_false_negatives_for_fractional_bpk_and_several_seeds() {
    for bpk in [0.5, 1.0, 1.3, 2.5, 7.5, 10.0, 23.7, 64.0] {
        for seed in [0, 1, 0xdead_beef, u32::MAX] {
            for count in [1, 2, 7, 127, 128, 129, 1000, 20_000] {
                let inserted = key_hashes(count * 31, count);
                let filter = build(bpk, seed, &inserted);
                assert_eq!(filter.seed(), seed);
                assert_eq!(filter.bits_per_key(), bpk);
                assert!(filter.is_solved());
                assert_eq!(
                    filter.size_bytes() as u64,
                    serialized_len(count as usize, bpk)
                );
                assert_no_false_negatives(
                    &filter,
                    &inserted,
                    &format!("bpk {bpk} seed {seed} count {count}"),
                );
            }
        }
    }
}

/// Large filters at every whole bits per key the FPR table covers, plus the extremes.
#[test]
fn no_false_negatives_on_large_filters() {
    let inserted = key_hashes(0, 300_000);
    for bpk in [1.0, 3.0, 6.0, 16.0] {
        let filter = build(bpk, 0, &inserted);
        assert_no_false_negatives(&filter, &inserted, &format!("300k keys at bpk {bpk}"));
    }
}

#[test]
fn solution_bytes_follow_bits_per_key() {
    for (keys, bpk, segments) in [
        (1u64, 10.0, 1u64), // rounded up to one segment
        (128, 1.0, 1),      // exactly 128 bits
        (129, 1.0, 2),      // one bit over
        (1000, 2.5, 20),    // 2500 bits -> 19.53 segments
        (1_000_000, 2.5, 19_532),
        (10, 64.0, 5),
        (10, 1000.0, 5), // clamped to 64 bits per key
    ] {
        assert_eq!(
            serialized_len(keys as usize, bpk),
            HEADER_LEN as u64 + 16 * segments,
            "{keys} keys at {bpk}"
        );
    }
}

#[test]
fn serialized_len_is_what_finish_returns() {
    for (keys, bits_per_key) in [
        (0, 10.0),
        (5, 0.0),
        (5, f64::NAN),
        (1, 2.0),
        (2, 0.5),
        (129, 3.3),
        (4_500, 2.0),
        (1_000, 64.5),
        (50_000, 9.99),
    ] {
        let bytes = build_bytes(bits_per_key, 0, &key_hashes(0, keys));
        assert_eq!(
            serialized_len(keys as usize, bits_per_key),
            bytes.len() as u64,
            "{keys} keys at {bits_per_key}"
        );
    }
}

#[test]
fn no_bits_or_no_keys_means_no_filter() {
    for bpk in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
        let mut builder = RibbonFilterBuilder::new(bpk, 0);
        for hash in key_hashes(0, 100) {
            builder.add_hash(hash);
        }
        assert_eq!(builder.len(), 100);
        assert!(!builder.is_empty());
        assert!(builder.finish().is_empty(), "bpk {bpk} built a filter");
    }
    let builder = RibbonFilterBuilder::new(10.0, 0);
    assert!(builder.is_empty());
    assert!(builder.finish().is_empty());
    assert!(RibbonFilter::decode(Vec::new()).is_err());
}

#[test]
fn decode_round_trips_the_header() {
    let inserted = key_hashes(0, 5_000);
    let bytes = build_bytes(6.25, 77, &inserted);
    let filter = RibbonFilter::decode(bytes.clone()).expect("decodes");
    assert_eq!(bytes[0], FORMAT_VERSION);
    assert_eq!(filter.seed(), 77);
    assert_eq!(filter.bits_per_key(), 6.25);
    assert_eq!(filter.size_bytes(), bytes.len());
    assert_eq!(filter.attempt(), u32::from(bytes[2]));
    assert_eq!(
        filter.layout.num_blocks,
        block_count(5_000, filter.attempt())
    );
    assert_eq!(filter.layout.segments(), segment_count(5_000, 6.25));
    // Decoding twice gives the same answers.
    let again = RibbonFilter::decode(bytes).expect("decodes");
    let absent = key_hashes(1_000_000, 20_000);
    assert!(absent
        .iter()
        .all(|&hash| filter.may_contain_hash(hash) == again.may_contain_hash(hash)));
}

/// Byte 0 tells the families apart: each decoder rejects the other's filters.
#[test]
fn bloom_and_ribbon_filters_are_told_apart_by_their_first_byte() {
    let hashes = key_hashes(0, 500);
    let ribbon = build_bytes(8.0, 0, &hashes);
    let mut bloom_builder = BloomFilterBuilder::new(8.0, 0);
    for &hash in &hashes {
        bloom_builder.add_hash(hash);
    }
    let bloom_bytes = bloom_builder.finish();
    assert_eq!(ribbon[0], 2);
    assert_eq!(bloom_bytes[0], bloom::FORMAT_VERSION);
    assert!(BloomFilter::decode(ribbon).is_err());
    let error = RibbonFilter::decode(bloom_bytes)
        .err()
        .expect("a bloom filter");
    assert!(error.contains("version"), "{error}");
}

/// Duplicated hashes reduce to `0 = 0` during banding: the filter is built, has no false
/// negatives, and is as selective as one built from the distinct keys.
#[test]
fn duplicate_hashes_are_harmless() {
    let distinct = key_hashes(0, 20_000);
    let mut doubled = distinct.clone();
    doubled.extend_from_slice(&distinct);
    doubled.extend_from_slice(&distinct[..5_000]);
    // Built for 45,000 "keys", of which 20,000 distinct: the same bytes per distinct key as
    // 4.5 bits per key over the distinct keys.
    let filter = build(2.0, 0, &doubled);
    assert!(filter.is_solved());
    assert_eq!(filter.attempt(), 0);
    assert_no_false_negatives(&filter, &distinct, "doubled keys");
    let absent = key_hashes(1_000_000, 100_000);
    let measured = measured_fpr(&filter, &absent);
    let expected = filter.expected_false_positive_rate();
    assert!(
        (measured - expected).abs() < 0.1 * expected,
        "measured {measured} expected {expected}"
    );

    // One key added many times: a single equation.
    let same = vec![key_hash(b"only key"); 1_000];
    let filter = build(8.0, 0, &same);
    assert!(filter.may_contain_hash(same[0]));
}

/// When every attempt fails the builder writes an unsolved filter of the promised size that
/// answers "maybe" to everything, and the decoder accepts it.
#[test]
fn giving_up_writes_an_always_maybe_filter() {
    let inserted = key_hashes(0, 3_000);
    let mut builder = RibbonFilterBuilder::new(4.0, 9);
    for &hash in &inserted {
        builder.add_hash(hash);
    }
    let bytes = builder.finish_with_attempts(0);
    assert_eq!(bytes.len() as u64, serialized_len(3_000, 4.0));
    assert_eq!(bytes[3], STATE_UNSOLVED);
    let filter = RibbonFilter::decode(bytes.clone()).expect("an unsolved filter decodes");
    assert!(!filter.is_solved());
    assert_eq!(filter.expected_false_positive_rate(), 1.0);
    assert!(key_hashes(10_000, 1_000)
        .iter()
        .all(|&hash| filter.may_contain_hash(hash)));
    // Its segments must be zero.
    let mut dirty = bytes;
    dirty[HEADER_LEN + 5] = 1;
    let error = RibbonFilter::decode(dirty)
        .err()
        .expect("non-zero segments");
    assert!(error.contains("unsolved"), "{error}");
}

/// A system too small for its keys fails, and the retry schedule adds slots until it is not: with
/// 0.9 slots per key the first four attempts cannot succeed (more equations than unknowns, with
/// 64 result bits each), and growth reaches enough slots within the attempt budget.
#[test]
fn retries_add_slots_until_banding_succeeds() {
    let inserted = key_hashes(0, 10_000);
    let segments = segment_count(10_000, 8.0);
    let mut banding = Banding::new();
    let too_small = ColumnLayout::new(70, segments); // 8,960 slots for 10,000 keys
    let mask = result_mask(too_small.upper_columns);
    assert!(!band(
        &inserted,
        0,
        0,
        too_small.num_blocks,
        mask,
        &mut banding
    ));
    // The schedule: four attempts per size, then 1/32 of the base more blocks per step.
    let base = block_count(10_000, 0);
    assert_eq!(block_count(10_000, 3), base);
    assert_eq!(block_count(10_000, 4), base + base.div_ceil(32));
    assert_eq!(block_count(10_000, 31), base + 7 * base.div_ceil(32));
    // Every later size keeps the segment count; columns per block only shrink.
    for attempt in 0..MAX_ATTEMPTS {
        let layout = ColumnLayout::new(block_count(10_000, attempt), segments);
        assert_eq!(layout.segments(), segments);
    }
}

#[test]
fn column_layout_spreads_segments_over_blocks() {
    let layout = ColumnLayout::new(10, 25);
    assert_eq!(
        layout,
        ColumnLayout {
            num_blocks: 10,
            upper_columns: 3,
            upper_start_block: 5,
            lower_start: 0,
        }
    );
    assert_eq!(layout.segments(), 25);
    assert_eq!(layout.block_columns(0), (2, 0));
    assert_eq!(layout.block_columns(4), (2, 8));
    assert_eq!(layout.block_columns(5), (3, 10));
    assert_eq!(layout.block_columns(9), (3, 22));
    // Fewer segments than blocks: the lower blocks get no column at all.
    let sparse = ColumnLayout::new(4, 1);
    assert_eq!((sparse.upper_columns, sparse.upper_start_block), (1, 3));
    assert_eq!(sparse.block_columns(0), (0, 0));
    assert_eq!(sparse.block_columns(3), (1, 0));
    // Whole columns: no lower blocks.
    let whole = ColumnLayout::new(4, 12);
    assert_eq!((whole.upper_columns, whole.upper_start_block), (3, 0));
    for blocks in 1..40u32 {
        for segments in 1..=u64::from(blocks) * 64 {
            let layout = ColumnLayout::new(blocks, segments);
            assert_eq!(layout.segments(), segments);
            assert!(layout.upper_start_block < blocks);
        }
    }
}

/// Tiny inputs: one or two blocks of slots. The layout's expected FPR prices them exactly.
#[test]
fn tiny_filters_work_and_match_their_expected_fpr() {
    let absent = key_hashes(1_000_000, 200_000);
    for (keys, bpk) in [
        (1u64, 10.0),
        (2, 10.0),
        (2, 0.5),
        (100, 0.5),
        (127, 8.0),
        (128, 8.0),
        (129, 8.0),
        (300, 5.0),
        (1_000, 0.5),
    ] {
        let inserted = key_hashes(keys * 7, keys);
        let filter = build(bpk, 0, &inserted);
        assert_no_false_negatives(&filter, &inserted, &format!("{keys} keys at {bpk}"));
        let measured = measured_fpr(&filter, &absent);
        let expected = filter.expected_false_positive_rate();
        assert_eq!(
            expected,
            expected_false_positive_rate(keys, bpk),
            "built on the first attempt"
        );
        println!(
            "{keys} keys at {bpk} bpk: {} bytes, {} blocks x {} columns (from block {}), \
             expected {expected:.5}, measured {measured:.5}",
            filter.size_bytes(),
            filter.layout.num_blocks,
            filter.layout.upper_columns,
            filter.layout.upper_start_block
        );
        assert!(
            (measured - expected).abs() <= 0.05 * expected + 0.002,
            "{keys} keys at {bpk}: measured {measured}, expected {expected}"
        );
    }
}

/// Real-valued bits per key: 2.5 bits per key really takes 2.5 bits per key and lands between
/// the filters of 2 and 3 bits per key.
#[test]
fn fractional_bits_per_key_uses_its_memory_and_fpr_in_between() {
    let keys = 200_000u64;
    let inserted = key_hashes(0, keys);
    let absent = key_hashes(keys, 400_000);
    let fpr = |bpk: f64| {
        let filter = build(bpk, 0, &inserted);
        let solution_bits = ((filter.size_bytes() - HEADER_LEN) * 8) as f64;
        (solution_bits / keys as f64, measured_fpr(&filter, &absent))
    };
    let (bits_2, fpr_2) = fpr(2.0);
    let (bits_25, fpr_25) = fpr(2.5);
    let (bits_3, fpr_3) = fpr(3.0);
    println!("2 bpk: {bits_2:.4} bits, {fpr_2:.4}; 2.5: {bits_25:.4}, {fpr_25:.4}; 3: {bits_3:.4}, {fpr_3:.4}");
    assert!((bits_25 - 2.5).abs() < 0.001, "2.5 bpk used {bits_25}");
    assert!((bits_2 - 2.0).abs() < 0.001 && (bits_3 - 3.0).abs() < 0.001);
    assert!(fpr_3 < fpr_25 && fpr_25 < fpr_2, "{fpr_2} {fpr_25} {fpr_3}");
    let model = false_positive_rate(2.5);
    assert!(
        (fpr_25 / model - 1.0).abs() < 0.15,
        "2.5 bpk measured {fpr_25}, model {model}"
    );
}

/// Measured FPR against the model and against the blocked Bloom filter given the same bytes, for
/// bits per key 2..=10 on `keys` inserted and `probes` absent keys; returns the table's rows.
fn fpr_table(keys: u64, probes: u64) -> Vec<(f64, f64, f64, f64, f64)> {
    let inserted = key_hashes(0, keys);
    let absent = key_hashes(keys, probes);
    println!("| bpk | model | expected (layout) | Ribbon measured | Bloom measured, same bytes | Bloom / Ribbon |");
    println!("| --- | --- | --- | --- | --- | --- |");
    (2..=10)
        .map(|bpk| {
            let bpk = f64::from(bpk);
            let ribbon = build(bpk, 0, &inserted);
            assert!(inserted.iter().all(|&hash| ribbon.may_contain_hash(hash)));
            let bloom = bloom_at_equal_memory(&ribbon, &inserted);
            // Bloom's own header and its rounding up to whole 64-byte blocks.
            assert!(bloom.size_bytes() <= ribbon.size_bytes() + bloom::HEADER_LEN + 64);
            let measured = measured_fpr(&ribbon, &absent);
            let bloom_measured = bloom_fpr(&bloom, &absent);
            let model = false_positive_rate(bpk);
            let expected = ribbon.expected_false_positive_rate();
            println!(
                "| {bpk} | {model:.5} | {expected:.5} | {measured:.5} | {bloom_measured:.5} | {:.2} |",
                bloom_measured / measured
            );
            (bpk, model, expected, measured, bloom_measured)
        })
        .collect()
}

fn check_fpr_table(rows: &[(f64, f64, f64, f64, f64)]) {
    for &(bpk, model, expected, measured, bloom_measured) in rows {
        let ratio = measured / model;
        assert!(
            (1.0 / 1.5..=1.5).contains(&ratio),
            "bpk {bpk}: measured {measured} vs model {model}"
        );
        assert!(
            (measured / expected - 1.0).abs() < 0.15,
            "bpk {bpk}: measured {measured} vs layout's expectation {expected}"
        );
        assert!(
            measured < bloom_measured,
            "bpk {bpk}: ribbon {measured} not below bloom {bloom_measured} at equal memory"
        );
    }
}

/// DESIGN.md §1's check for the Bloom filter, applied to Ribbon: measured FPR within 1.5x of the model
/// for bpk 2..=10 on 10^6 inserted and 10^6 absent keys (and within 15% of the layout's exact
/// expectation), and below the blocked Bloom filter's at the same bytes. Prints the table in the
/// module doc (`cargo test -p strata --lib measured_fpr_is_near_the_model_and_below_bloom --
/// --nocapture`); about 3 s in the test profile.
#[test]
fn measured_fpr_is_near_the_model_and_below_bloom() {
    check_fpr_table(&fpr_table(1_000_000, 1_000_000));
}

/// How many keys a system of `num_blocks` blocks takes before banding first fails, with the
/// hash key of `seed`, all 64 result bits in the equations (the worst case: with fewer columns a
/// dependent row is consistent by luck more often) and keys drawn from `key_hashes(offset, ..)`.
/// Banding is incremental, so one pass gives the failure point of every key count at once
/// (RocksDB's `FindOccupancy` experiment).
fn keys_until_failure(num_blocks: u32, seed: u32, offset: u64) -> u64 {
    let layout = ColumnLayout {
        num_blocks,
        upper_columns: MAX_COLUMNS,
        upper_start_block: 0,
        lower_start: 0,
    };
    let mut banding = Banding::new();
    banding.reset((u64::from(num_blocks) * COEFF_BITS) as usize);
    let key = hash_key(seed, 0);
    let mut added = 0;
    for hash in key_hashes(offset, u64::from(num_blocks) * COEFF_BITS + 1) {
        if !banding.add(Row::new(hash, key, layout.num_starts()), u64::MAX) {
            break;
        }
        added += 1;
    }
    added
}

/// The capacity quantiles behind [`slots_per_key`]'s rule: for systems of 1 to 16,384 blocks,
/// the slots per key at which 50%, 5%, 1% and 0.1% of first attempts fail. Run with
/// `cargo test -p strata --lib measure_banding_capacity -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, not a check; prints the capacity quantiles behind slots_per_key's doc"]
fn measure_banding_capacity() {
    println!("| blocks | slots | trials | slots/key at 50% failure | 5% | 1% | 0.1% |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (num_blocks, trials) in [
        (1u32, 4000u32),
        (2, 4000),
        (4, 4000),
        (8, 4000),
        (32, 2000),
        (128, 2000),
        (512, 1000),
        (2048, 400),
        (8192, 100),
    ] {
        let mut capacities: Vec<u64> = (0..trials)
            .map(|trial| keys_until_failure(num_blocks, trial, u64::from(trial) << 32))
            .collect();
        capacities.sort_unstable();
        let slots = u64::from(num_blocks) * COEFF_BITS;
        let at = |fraction: f64| {
            let index = ((f64::from(trials) * fraction) as usize).min(capacities.len() - 1);
            slots as f64 / capacities[index] as f64
        };
        println!(
            "| {num_blocks} | {slots} | {trials} | {:.4} | {:.4} | {:.4} | {:.4} |",
            at(0.5),
            at(0.05),
            at(0.01),
            at(0.001)
        );
    }
}

/// First-attempt banding failure rate of the slot rule, with all 64 result bits in the
/// equations (the worst case), at the worst key counts: the largest that still get a given number
/// of blocks, so that rounding up to whole blocks adds no slack. Prints the numbers in
/// [`block_count`]'s doc. Run with
/// `cargo test -p strata --lib measure_construction_failure_rate -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, not a check; prints the failure rates in block_count's doc"]
fn measure_construction_failure_rate() {
    println!("| blocks | keys | slots per key | trials | first-attempt failures | rate | mean attempts |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (num_blocks, trials) in [
        (1u32, 4000u32),
        (2, 4000),
        (8, 4000),
        (32, 2000),
        (128, 1000),
        (512, 400),
        (2048, 200),
        (8192, 60),
    ] {
        let mut keys =
            (f64::from(num_blocks) * 128.0 / slots_per_key(u64::from(num_blocks) * 128)) as u64;
        while block_count(keys + 1, 0) <= num_blocks {
            keys += 1;
        }
        while block_count(keys, 0) > num_blocks {
            keys -= 1;
        }
        let mut banding = Banding::new();
        let mut failures = 0;
        let mut attempts = 0;
        for trial in 0..trials {
            let hashes = key_hashes(u64::from(trial) << 32, keys);
            // The builder's schedule, counting attempts; the first one is the failure rate.
            for attempt in 0..MAX_ATTEMPTS {
                attempts += 1;
                // All 64 result bits in the equations.
                let num_blocks = block_count(keys, attempt);
                if band(&hashes, 0, attempt, num_blocks, u64::MAX, &mut banding) {
                    break;
                }
                if attempt == 0 {
                    failures += 1;
                }
            }
        }
        println!(
            "| {num_blocks} | {keys} | {:.4} | {trials} | {failures} | {:.4} | {:.4} |",
            f64::from(num_blocks) * 128.0 / keys as f64,
            f64::from(failures) / f64::from(trials),
            f64::from(attempts) / f64::from(trials)
        );
    }
}

#[test]
fn decode_names_what_is_wrong() {
    let valid = valid_filter_bytes();
    RibbonFilter::decode(valid.clone()).expect("valid");
    let cases: [(usize, u8, &str); 7] = [
        (0, 1, "version"),
        (0, 4, "version"),
        (1, 0, "column count"),
        (1, 65, "column count"),
        (2, 32, "attempt"),
        (3, 2, "state"),
        (8, 7, "bytes but its header says"),
    ];
    for (offset, value, needle) in cases {
        let mut bytes = valid.clone();
        bytes[offset] = value;
        let error = RibbonFilter::decode(bytes).err().expect("corrupt header");
        assert!(error.contains(needle), "{error:?} should mention {needle}");
    }
    let mut zero_blocks = valid.clone();
    zero_blocks[8..12].copy_from_slice(&0u32.to_le_bytes());
    let error = RibbonFilter::decode(zero_blocks)
        .err()
        .expect("zero blocks");
    assert!(error.contains("zero blocks"), "{error}");
    let mut upper_start = valid.clone();
    let num_blocks = u32::from_le_bytes(valid[8..12].try_into().expect("4 bytes"));
    upper_start[12..16].copy_from_slice(&num_blocks.to_le_bytes());
    let error = RibbonFilter::decode(upper_start)
        .err()
        .expect("upper start");
    assert!(error.contains("upper start block"), "{error}");
    // Inconsistent counts: more columns than the length holds, and a huge block count.
    let mut more_columns = valid.clone();
    more_columns[1] += 1;
    assert!(RibbonFilter::decode(more_columns).is_err());
    let mut huge_blocks = valid.clone();
    huge_blocks[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    huge_blocks[1] = 64;
    let error = RibbonFilter::decode(huge_blocks)
        .err()
        .expect("huge counts");
    assert!(error.contains("segments"), "{error}");
    for bad_bpk in [f64::NAN, 0.0, -1.0, 64.5, f64::INFINITY] {
        let mut bytes = valid.clone();
        bytes[16..24].copy_from_slice(&bad_bpk.to_bits().to_le_bytes());
        let error = RibbonFilter::decode(bytes).err().expect("bad bpk");
        assert!(error.contains("bits per key"), "{error}");
    }
    let mut extra = valid;
    extra.push(0);
    assert!(RibbonFilter::decode(extra).is_err());
}

#[test]
fn decode_rejects_every_truncation() {
    let valid = valid_filter_bytes();
    for cut in 0..valid.len() {
        assert!(
            RibbonFilter::decode(valid[..cut].to_vec()).is_err(),
            "accepted a filter cut at {cut} of {}",
            valid.len()
        );
    }
}

/// Pins the format: a change to the header, the hash remix, the slot rule or the back
/// substitution breaks every existing file and must bump FORMAT_VERSION.
#[test]
fn serialized_format_is_pinned() {
    let bytes = valid_filter_bytes();
    // 300 keys * 7.5 bits = 2250 bits -> 18 segments: 3 blocks of 6 columns.
    assert_eq!(bytes.len(), HEADER_LEN + 18 * 16);
    let mut header = vec![2u8, 6, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
    header.extend_from_slice(&7.5f64.to_bits().to_le_bytes());
    assert_eq!(&bytes[..HEADER_LEN], &header[..]);
    assert_eq!(xxhash_rust::xxh3::xxh3_64(&bytes), PINNED_FILTER_XXH3);
}

const PINNED_FILTER_XXH3: u64 = 2_912_125_434_310_716_075;

proptest! {
    #[test]
    fn no_false_negatives_for_random_key_sets(
        hashes in proptest::collection::vec(any::<u64>(), 1..3_000),
        bits_per_key in 1.0f64..=16.0,
        seed in any::<u32>(),
    ) {
        let bytes = build_bytes(bits_per_key, seed, &hashes);
        prop_assert_eq!(bytes.len() as u64, serialized_len(hashes.len(), bits_per_key));
        let filter = RibbonFilter::decode(bytes).expect("a freshly built filter decodes");
        prop_assert!(filter.is_solved());
        for &hash in &hashes {
            prop_assert!(filter.may_contain_hash(hash));
        }
    }

    #[test]
    fn decode_never_panics_on_random_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        probe in any::<u64>(),
    ) {
        if let Ok(filter) = RibbonFilter::decode(bytes) {
            filter.may_contain_hash(probe);
        }
    }

    /// Random headers in front of a random solution: counts in and out of range.
    #[test]
    fn decode_never_panics_on_random_headers(
        columns in 0u8..=70,
        attempt in 0u8..=40,
        state in 0u8..=2,
        num_blocks in prop_oneof![0u32..8, any::<u32>()],
        upper_start_block in prop_oneof![0u32..8, any::<u32>()],
        segments in 0usize..40,
        probes in proptest::collection::vec(any::<u64>(), 1..16),
    ) {
        let mut bytes = vec![FORMAT_VERSION, columns, attempt, state];
        bytes.extend_from_slice(&7u32.to_le_bytes());
        bytes.extend_from_slice(&num_blocks.to_le_bytes());
        bytes.extend_from_slice(&upper_start_block.to_le_bytes());
        bytes.extend_from_slice(&4.0f64.to_bits().to_le_bytes());
        bytes.extend((0..segments * 16).map(|i| if state == 1 { 0 } else { i as u8 }));
        if let Ok(filter) = RibbonFilter::decode(bytes) {
            for probe in probes {
                filter.may_contain_hash(probe);
            }
        }
    }

    #[test]
    fn decode_never_panics_on_corrupted_filters(
        edits in proptest::collection::vec((0usize..HEADER_LEN + 18 * 16, any::<u8>()), 1..8),
        probe in any::<u64>(),
    ) {
        let mut bytes = valid_filter_bytes();
        for (offset, value) in edits {
            bytes[offset] = value;
        }
        if let Ok(filter) = RibbonFilter::decode(bytes) {
            filter.may_contain_hash(probe);
        }
    }
}

/// Banding rows in start-block order (`Banding::order_rows`) gives the filter that banding
/// them in the hashes' own order gives, byte for byte: same attempt, same solution. Many small
/// systems (two to eight blocks, where first attempts fail about 1-2% of the time) cover
/// attempts after a failure; duplicate hashes and a large system cover the rest.
#[test]
fn banding_order_does_not_change_the_filter() {
    let mut retried = 0;
    for trial in 0..600u64 {
        let keys = [130, 248, 994][trial as usize % 3];
        let hashes = key_hashes(trial * 1_000, keys);
        let bits_per_key = [1.0, 5.0, 7.3][trial as usize % 3];
        let sorted = super::build(bits_per_key, trial as u32, &hashes);
        let in_order = build_in_insertion_order(bits_per_key, trial as u32, &hashes);
        assert_eq!(sorted, in_order, "trial {trial}");
        assert_eq!(sorted, build_bytes(bits_per_key, trial as u32, &hashes));
        let filter = RibbonFilter::decode(sorted).expect("decodes");
        retried += u32::from(filter.attempt() > 0);
    }
    assert!(retried > 0, "no trial needed a second attempt");
    let mut duplicated = key_hashes(0, 3_000);
    duplicated.extend(key_hashes(0, 1_000));
    let large = key_hashes(7, 200_000);
    for hashes in [duplicated, large] {
        assert_eq!(
            super::build(6.0, 3, &hashes),
            build_in_insertion_order(6.0, 3, &hashes)
        );
    }
}

// Modules of one system (module doc, "Modules of one system").

/// `build_modules` decoded: every module of `plan` with bits.
fn shared_modules(plan: &[(f64, u32)], hashes: &[u64]) -> Vec<RibbonFilter> {
    build_modules(plan, hashes)
        .into_iter()
        .filter(|bytes| !bytes.is_empty())
        .map(|bytes| RibbonFilter::decode(bytes).expect("a freshly built module decodes"))
        .collect()
}

/// Each module of a shared system is probed alone: no false negatives, its own bits per key and
/// layout (its bytes are a module built alone's, one more header byte past the first module),
/// the system's seed, and result shifts one after another.
#[test]
fn shared_modules_probe_alone_without_false_negatives() {
    for (keys, plan) in [
        (1u64, vec![(5.0, 0), (5.0, 1), (5.0, 2)]),
        (
            130,
            vec![(2.0, 0), (2.0, 1), (2.0, 2), (2.0, 3), (2.0, 4), (3.7, 5)],
        ),
        (5_000, vec![(5.0, 0), (5.0, 1), (5.0, 2)]),
        (5_000, vec![(1.3, 0), (9.75, 1)]),
        (20_000, vec![(3.0, 0), (3.0, 1), (3.0, 2), (0.6, 3)]),
    ] {
        let hashes = key_hashes(keys * 7, keys);
        let bytes = build_modules(&plan, &hashes);
        let mut shift = 0;
        for ((bits_per_key, _), bytes) in plan.iter().zip(bytes) {
            let context = format!("{keys} keys {plan:?} module {bits_per_key}");
            let extra = if shift > 0 { 5 } else { 0 };
            assert_eq!(
                bytes.len() as u64,
                serialized_len(hashes.len(), *bits_per_key) + extra,
                "{context}"
            );
            let filter = RibbonFilter::decode(bytes).expect("decodes");
            assert_eq!(filter.result_shift(), shift, "{context}");
            assert_eq!(filter.seed(), 0, "{context}: the system's seed");
            assert_eq!(filter.bits_per_key(), *bits_per_key, "{context}");
            assert!(filter.is_solved(), "{context}");
            assert_no_false_negatives(&filter, &hashes, &context);
            shift += filter.layout.upper_columns;
        }
        assert!(shift <= MAX_COLUMNS);
    }
}

/// Modules whose columns do not fit one 64-bit result row go to further systems, each seeded
/// with its first module's seed and starting again at result bit 0.
#[test]
fn modules_past_64_columns_start_another_system() {
    let hashes = key_hashes(0, 5_000);
    // About 20 columns each: three fit a system, the fourth starts another.
    let plan = [(20.0, 0), (20.0, 1), (20.0, 2), (20.0, 3), (20.0, 4)];
    let modules = shared_modules(&plan, &hashes);
    let shifts: Vec<u32> = modules.iter().map(RibbonFilter::result_shift).collect();
    let seeds: Vec<u32> = modules.iter().map(RibbonFilter::seed).collect();
    assert_eq!(shifts, [0, 20, 40, 0, 20]);
    assert_eq!(seeds, [0, 0, 0, 3, 3]);
    for filter in &modules {
        assert_no_false_negatives(filter, &hashes, "five modules of 20 bits");
    }
    // A module without bits is skipped, not a system's first.
    let modules = build_modules(&[(0.0, 0), (f64::NAN, 1), (4.0, 2), (4.0, 3)], &hashes);
    assert!(modules[0].is_empty() && modules[1].is_empty());
    let third = RibbonFilter::decode(modules[2].clone()).expect("decodes");
    let fourth = RibbonFilter::decode(modules[3].clone()).expect("decodes");
    assert_eq!((third.seed(), third.result_shift()), (2, 0));
    assert_eq!((fourth.seed(), fourth.result_shift()), (2, 4));
    assert!(build_modules(&[(4.0, 0), (4.0, 1)], &[])
        .iter()
        .all(Vec::is_empty));
}

/// The first module of a system is the filter built alone (same seed, same attempt): the banding
/// reduces coefficient rows the same way whatever result bits ride along, and each solution
/// column is substituted on its own.
#[test]
fn a_systems_first_module_is_the_filter_built_alone() {
    let mut compared = 0;
    for trial in 0..60u64 {
        let keys = [130, 994, 4_000][trial as usize % 3];
        let hashes = key_hashes(trial * 10_000, keys);
        let seed = trial as u32;
        let modules = build_modules(&[(5.0, seed), (5.0, seed + 1), (5.0, seed + 2)], &hashes);
        let first = RibbonFilter::decode(modules[0].clone()).expect("decodes");
        let alone_bytes = build_bytes(5.0, seed, &hashes);
        let alone = RibbonFilter::decode(alone_bytes.clone()).expect("decodes");
        if first.attempt() == alone.attempt() {
            assert_eq!(modules[0], alone_bytes, "trial {trial}");
            compared += 1;
        }
    }
    assert!(
        compared >= 50,
        "only {compared} trials solved at the same attempt"
    );
}

/// Rates at which absent keys pass modules of `plan` built over each of `partitions`
/// (disjoint key sets, `probes` absent keys each): `(each module's measured rate, its layout's
/// expectation)` and the rate of passing the first two and all three.
fn shared_module_rates(
    plan: &[(f64, u32)],
    partitions: u64,
    keys: u64,
    probes: u64,
) -> (Vec<(f64, f64)>, f64, f64) {
    let mut singles = vec![(0.0, 0.0); plan.len()];
    let (mut pair, mut triple) = (0.0, 0.0);
    for partition in 0..partitions {
        let inserted = key_hashes(partition * keys, keys);
        let absent = key_hashes((1 << 40) | (partition * probes), probes);
        let modules = shared_modules(plan, &inserted);
        assert_eq!(modules.len(), 3);
        for (module, filter) in modules.iter().enumerate() {
            singles[module].0 += measured_fpr(filter, &absent) / partitions as f64;
            singles[module].1 += filter.expected_false_positive_rate() / partitions as f64;
        }
        let passes = |count: usize, hash: u64| {
            modules
                .iter()
                .take(count)
                .all(|filter| filter.may_contain_hash(hash))
        };
        let rate = |count| {
            absent.iter().filter(|&&hash| passes(count, hash)).count() as f64
                / (probes * partitions) as f64
        };
        pair += rate(2);
        triple += rate(3);
    }
    (singles, pair, triple)
}

/// Modules of one system make independent errors: each module's measured FPR is near its
/// layout's expectation, and the rate at which the first two and all three modules say "maybe"
/// to an absent key is near the product of their rates (their result bits are disjoint bits of
/// one remix, and their runs of lower blocks are placed for independence). One filter of 100,000
/// keys, three modules of 3 bits per key, 2,000,000 absent keys; and 20 partitions of 5,000 keys,
/// three modules of 4 bits per key, 100,000 absent keys each. `cargo test -p strata --lib
/// shared_modules_make_independent_errors -- --nocapture` prints the figures.
#[test]
fn shared_modules_make_independent_errors() {
    for (bits_per_key, partitions, keys, probes) in
        [(3.0, 1, 100_000, 2_000_000), (4.0, 20, 5_000, 100_000)]
    {
        let plan = [(bits_per_key, 0), (bits_per_key, 1), (bits_per_key, 2)];
        let (singles, pair, triple) = shared_module_rates(&plan, partitions, keys, probes);
        for (module, &(measured, expected)) in singles.iter().enumerate() {
            assert!(
                (measured / expected - 1.0).abs() < 0.03,
                "{bits_per_key} bpk module {module}: measured {measured} vs expected {expected}"
            );
        }
        let pair_product = singles[0].0 * singles[1].0;
        let triple_product = pair_product * singles[2].0;
        println!(
            "{partitions} x {keys} keys, 3 x {bits_per_key} bpk: modules {:.5} {:.5} {:.5} \
             (expected {:.5} {:.5} {:.5}); first two {pair:.6} (product {pair_product:.6}, \
             ratio {:.3}); all three {triple:.7} (product {triple_product:.7}, ratio {:.3})",
            singles[0].0,
            singles[1].0,
            singles[2].0,
            singles[0].1,
            singles[1].1,
            singles[2].1,
            pair / pair_product,
            triple / triple_product
        );
        assert!(
            (pair / pair_product - 1.0).abs() < 0.05,
            "{bits_per_key} bpk: first two {pair} vs product {pair_product}"
        );
        assert!(
            (triple / triple_product - 1.0).abs() < 0.10,
            "{bits_per_key} bpk: all three {triple} vs product {triple_product}"
        );
    }
}

/// When every attempt fails, every module of the system is the unsolved, always-"maybe" filter
/// of its size.
#[test]
fn giving_up_on_a_shared_system_writes_always_maybe_modules() {
    let inserted = key_hashes(0, 3_000);
    let plan = [(4.0, 9), (4.0, 10)];
    let modules = build_modules_with_attempts(&plan, &inserted, 0);
    assert_eq!(modules[0].len() as u64, serialized_len(3_000, 4.0));
    assert_eq!(modules[1].len() as u64, serialized_len(3_000, 4.0) + 5);
    for bytes in modules {
        assert_eq!(bytes[3], STATE_UNSOLVED);
        let filter = RibbonFilter::decode(bytes).expect("an unsolved module decodes");
        assert!(!filter.is_solved());
        assert!(key_hashes(10_000, 1_000)
            .iter()
            .all(|&hash| filter.may_contain_hash(hash)));
    }
}

/// A layout whose run of lower blocks starts anywhere (a version-3 module's) places each block's
/// segments after the ones before it and prices its FPR by counting every start, as a brute
/// force over the blocks does.
#[test]
fn a_run_of_lower_blocks_anywhere_is_laid_out_and_priced_exactly() {
    for num_blocks in [1u32, 2, 3, 7, 40] {
        for upper_columns in [1u32, 5, 64] {
            for lower in 0..num_blocks {
                for lower_start in 0..num_blocks {
                    let layout = ColumnLayout {
                        num_blocks,
                        upper_columns,
                        upper_start_block: lower,
                        lower_start,
                    };
                    let is_lower =
                        |block: u32| (block + num_blocks - lower_start) % num_blocks < lower;
                    let mut first = 0;
                    let mut starts = 0.0;
                    let mut rate_sum = 0.0;
                    for block in 0..num_blocks {
                        let columns = upper_columns - u32::from(is_lower(block));
                        assert_eq!(
                            layout.block_columns(u64::from(block)),
                            (columns as usize, first as usize),
                            "{layout:?} block {block}"
                        );
                        first += columns;
                        let bits = if block + 1 == num_blocks { 1 } else { 128 };
                        for bit in 0..bits {
                            let checked = if bit == 0 {
                                columns
                            } else {
                                columns.min(upper_columns - u32::from(is_lower(block + 1)))
                            };
                            rate_sum += 0.5f64.powi(checked as i32);
                            starts += 1.0;
                        }
                    }
                    assert_eq!(u64::from(first), layout.segments());
                    let brute = rate_sum / starts;
                    let rate = layout.expected_false_positive_rate();
                    assert!(
                        (rate / brute - 1.0).abs() < 1e-12,
                        "{layout:?}: {rate} vs {brute}"
                    );
                }
            }
        }
    }
}

/// A valid version-3 module: the second of two of 7.5 bits per key over 300 keys.
fn valid_shared_module_bytes() -> Vec<u8> {
    build_modules(&[(7.5, 3), (7.5, 4)], &key_hashes(0, 300))
        .pop()
        .expect("two modules")
}

/// Pins version 3: the first module of the same system is the pinned version-2 filter (so old
/// and new files read alike), the second carries the shift byte.
#[test]
fn shared_format_is_pinned() {
    let modules = build_modules(&[(7.5, 3), (7.5, 4)], &key_hashes(0, 300));
    assert_eq!(modules[0], valid_filter_bytes());
    let bytes = &modules[1];
    assert_eq!(bytes.len(), SHARED_HEADER_LEN + 18 * 16);
    let mut header = vec![3u8, 6, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
    header.extend_from_slice(&7.5f64.to_bits().to_le_bytes());
    header.push(6);
    let lower_start = RibbonFilter::decode(bytes.clone())
        .expect("decodes")
        .layout
        .lower_start;
    header.extend_from_slice(&lower_start.to_le_bytes());
    assert_eq!(&bytes[..SHARED_HEADER_LEN], &header[..]);
    assert_eq!(xxhash_rust::xxh3::xxh3_64(bytes), PINNED_SHARED_MODULE_XXH3);
}

const PINNED_SHARED_MODULE_XXH3: u64 = 5_302_470_591_210_738_826;

/// A version-3 module with a result shift of 0 (written as version 2), past the 64-bit result
/// row, cut short or with a byte too many is rejected with a reason; a version-2 filter does not
/// read a shift byte.
#[test]
fn decode_rejects_malformed_shared_modules() {
    let valid = valid_shared_module_bytes();
    let filter = RibbonFilter::decode(valid.clone()).expect("valid");
    assert_eq!(filter.result_shift(), 6);
    assert_eq!(filter.size_bytes(), valid.len());
    for (shift, needle) in [
        (0u8, "result shift 0"),
        (59, "result shift 59"),
        (255, "255"),
    ] {
        let mut bytes = valid.clone();
        bytes[HEADER_LEN] = shift;
        let error = RibbonFilter::decode(bytes).err().expect("bad shift");
        assert!(error.contains(needle), "{error}");
    }
    // The largest shift the six columns allow.
    let mut bytes = valid.clone();
    bytes[HEADER_LEN] = 58;
    assert!(RibbonFilter::decode(bytes).is_ok());
    for cut in 0..valid.len() {
        assert!(
            RibbonFilter::decode(valid[..cut].to_vec()).is_err(),
            "accepted a module cut at {cut}"
        );
    }
    let mut extra = valid.clone();
    extra.push(0);
    assert!(RibbonFilter::decode(extra).is_err());
    // The same bytes as version 2 are one byte too long; version 4 is unknown.
    let mut as_version_2 = valid.clone();
    as_version_2[0] = FORMAT_VERSION;
    let error = RibbonFilter::decode(as_version_2).err().expect("length");
    assert!(error.contains("bytes but its header says"), "{error}");
    let mut version_4 = valid;
    version_4[0] = 4;
    let error = RibbonFilter::decode(version_4).err().expect("version");
    assert!(error.contains("version 4"), "{error}");
    let mut beyond = valid_shared_module_bytes();
    beyond[HEADER_LEN + 1..SHARED_HEADER_LEN].copy_from_slice(&3u32.to_le_bytes());
    let error = RibbonFilter::decode(beyond).err().expect("lower start");
    assert!(error.contains("lower blocks start at block 3"), "{error}");
}

proptest! {
    /// Random plans of one to six modules over random keys: every module with bits decodes
    /// alone and says "maybe" to every key.
    #[test]
    fn shared_modules_have_no_false_negatives(
        hashes in proptest::collection::vec(any::<u64>(), 1..2_000),
        plan in proptest::collection::vec((0.0f64..30.0, any::<u32>()), 1..=6),
    ) {
        let modules = build_modules(&plan, &hashes);
        prop_assert_eq!(modules.len(), plan.len());
        for ((bits_per_key, _), bytes) in plan.iter().zip(modules) {
            prop_assert_eq!(bytes.is_empty(), *bits_per_key <= 0.0);
            if bytes.is_empty() {
                continue;
            }
            let filter = RibbonFilter::decode(bytes).expect("a freshly built module decodes");
            prop_assert!(filter.is_solved());
            for &hash in &hashes {
                prop_assert!(filter.may_contain_hash(hash));
            }
        }
    }

    #[test]
    fn decode_never_panics_on_corrupted_shared_modules(
        edits in proptest::collection::vec((0usize..SHARED_HEADER_LEN + 18 * 16, any::<u8>()), 1..8),
        probe in any::<u64>(),
    ) {
        let mut bytes = valid_shared_module_bytes();
        for (offset, value) in edits {
            bytes[offset] = value;
        }
        if let Ok(filter) = RibbonFilter::decode(bytes) {
            filter.may_contain_hash(probe);
        }
    }
}

// Back substitution (module doc, "Back substitution").

/// The 64 x 64 transpose moves bit `j` of row `k` to bit `k` of row `j`, for random matrices and
/// for single bits at every position.
#[test]
fn transpose64_moves_every_bit_across_the_diagonal() {
    for trial in 0..20u64 {
        let original: [u64; 64] = std::array::from_fn(|k| mix64(trial * 64 + k as u64));
        let mut m = original;
        transpose64(&mut m);
        for (j, &row) in m.iter().enumerate() {
            for (k, &original_row) in original.iter().enumerate() {
                assert_eq!(
                    (row >> k) & 1,
                    (original_row >> j) & 1,
                    "trial {trial} j {j} k {k}"
                );
            }
        }
        transpose64(&mut m);
        assert_eq!(m, original, "transposing twice gives the matrix back");
    }
    for j in 0..64 {
        for k in 0..64 {
            let mut m = [0u64; 64];
            m[k] = 1 << j;
            transpose64(&mut m);
            let expected: [u64; 64] = std::array::from_fn(|row| u64::from(row == j) << k);
            assert_eq!(m, expected, "bit {j} of row {k}");
        }
    }
}

/// Row-major back substitution gives every column's solution a column at a time gives, for
/// systems of 1 to 64 columns over one and several blocks, with empty slots among full ones
/// (few keys) and with the banding nearly full; and the filters built from it probe without
/// false negatives.
#[test]
fn row_major_back_substitution_is_the_column_at_a_time_solution() {
    let mut compared = 0;
    for (trial, &(keys, columns)) in [
        (1u64, 1u32),
        (40, 8),
        (120, 64),
        (300, 7),
        (300, 8),
        (1_000, 13),
        (1_000, 30),
        (2_500, 64),
        (5_000, 17),
        (10_000, 33),
    ]
    .iter()
    .enumerate()
    {
        let hashes = key_hashes(trial as u64 * 100_000, keys);
        let num_blocks = block_count(keys, 0);
        // Modules of at most 5 columns each (as elastic filters' modules), the rest in the last.
        let mut segments = Vec::new();
        let mut left = columns;
        while left > 0 {
            let module = left.min(5);
            segments.push(u64::from(num_blocks) * u64::from(module));
            left -= module;
        }
        let modules = module_layouts(num_blocks, &segments);
        assert_eq!(system_columns(&modules), columns);
        let mut banding = Banding::new();
        let mut attempt = 0;
        while !band(
            &hashes,
            trial as u32,
            attempt,
            num_blocks,
            result_mask(columns),
            &mut banding,
        ) {
            attempt += 1;
            assert!(attempt < 4, "trial {trial}: banding keeps failing");
        }
        let by_rows = banding.back_substitute_rows(num_blocks, &modules);
        let by_columns = banding.back_substitute_columns(num_blocks, &modules);
        assert_eq!(
            by_rows, by_columns,
            "trial {trial}: {keys} keys, {columns} columns"
        );
        assert!(
            by_rows.iter().flatten().any(|&segment| segment != 0),
            "trial {trial}: a solution of zeros proves nothing"
        );
        compared += 1;
    }
    assert_eq!(compared, 10);
    // Through the builder: modules over 8 columns or more go the row-major way.
    let hashes = key_hashes(9_000_000, 20_000);
    let plan = [(5.0, 1), (5.0, 2), (5.0, 3), (5.0, 4), (5.0, 5), (5.0, 6)];
    for filter in shared_modules(&plan, &hashes) {
        assert_no_false_negatives(&filter, &hashes, "six modules of 5 bits");
    }
}
