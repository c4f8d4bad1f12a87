use super::*;

/// splitmix64: a seeded stream for the tests.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn build(keys: &[Vec<u8>], quantum_bits: u32) -> RangeFilter {
    let mut builder = RangeFilterBuilder::new();
    for key in keys {
        builder.add(key);
    }
    RangeFilter::decode(&builder.finish(quantum_bits)).expect("decodes its own block")
}

/// The bench's keys: 16-byte zero-padded decimal indexes.
fn decimal(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// Sorted distinct keys of several shapes: decimal indexes, a shared text prefix with random
/// tails of 1 to 20 bytes (longer than prefix + 8: values collide), and raw random bytes.
fn key_sets(stream: &mut Stream) -> Vec<Vec<Vec<u8>>> {
    let mut sets = Vec::new();
    let mut decimal_keys: Vec<Vec<u8>> =
        (0..3000).map(|_| decimal(stream.below(100_000))).collect();
    decimal_keys.sort();
    decimal_keys.dedup();
    sets.push(decimal_keys);
    let mut prefixed: Vec<Vec<u8>> = (0..2000)
        .map(|_| {
            let len = 1 + stream.below(20) as usize;
            let mut key = b"user:".to_vec();
            key.extend((0..len).map(|_| b'a' + stream.below(4) as u8));
            key
        })
        .collect();
    prefixed.sort();
    prefixed.dedup();
    sets.push(prefixed);
    let mut raw: Vec<Vec<u8>> = (0..1000)
        .map(|_| {
            (0..1 + stream.below(10))
                .map(|_| stream.next() as u8)
                .collect()
        })
        .collect();
    raw.sort();
    raw.dedup();
    sets.push(raw);
    sets.push(vec![b"only".to_vec()]);
    sets
}

/// A bound drawn near the keys: a key, a key with a byte added or changed, a prefix of one, or
/// random bytes.
fn bound(stream: &mut Stream, keys: &[Vec<u8>]) -> Vec<u8> {
    let key = &keys[stream.below(keys.len() as u64) as usize];
    match stream.below(5) {
        0 => key.clone(),
        1 => {
            let mut k = key.clone();
            k.push(stream.next() as u8);
            k
        }
        2 => {
            let mut k = key.clone();
            if let Some(last) = k.last_mut() {
                *last = last.wrapping_add(1 + stream.below(3) as u8);
            }
            k
        }
        3 => key[..stream.below(key.len() as u64 + 1) as usize].to_vec(),
        _ => (0..stream.below(12)).map(|_| stream.next() as u8).collect(),
    }
}

#[test]
fn a_range_holding_a_key_is_never_refused() {
    let mut stream = Stream(17);
    for keys in key_sets(&mut stream) {
        for quantum_bits in [1, 4, 8, 12] {
            let filter = build(&keys, quantum_bits);
            for _ in 0..4000 {
                let (a, b) = (bound(&mut stream, &keys), bound(&mut stream, &keys));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let holds = keys.iter().any(|k| *k >= lo && *k <= hi);
                if holds {
                    assert!(
                        filter.may_contain_range(&lo, &hi),
                        "b = {quantum_bits}: [{lo:?}, {hi:?}] holds a key"
                    );
                }
            }
            // Every key alone, and the whole set.
            for key in &keys {
                assert!(filter.may_contain_range(key, key));
            }
            assert!(filter.may_contain_range(&[], &[0xff; 32]));
        }
    }
}

#[test]
fn empty_point_and_short_ranges_pass_at_about_two_to_the_minus_b() {
    let mut stream = Stream(5);
    // 50,000 of 150,000 decimal indexes, as a bench table holds them.
    let mut indexes: Vec<u64> = (0..50_000).map(|_| stream.below(150_000)).collect();
    indexes.sort_unstable();
    indexes.dedup();
    let keys: Vec<Vec<u8>> = indexes.iter().map(|&i| decimal(i)).collect();
    for quantum_bits in [6, 8, 10] {
        let filter = build(&keys, quantum_bits);
        let (mut empty, mut passed, mut empty_short, mut passed_short) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..150_000u64 {
            if indexes.binary_search(&i).is_ok() {
                continue;
            }
            empty += 1;
            passed += u64::from(filter.may_contain_range(&decimal(i), &decimal(i)));
            // [i, i + 1] with neither present.
            if indexes.binary_search(&(i + 1)).is_err() {
                empty_short += 1;
                passed_short += u64::from(filter.may_contain_range(&decimal(i), &decimal(i + 1)));
            }
        }
        let point = passed as f64 / empty as f64;
        let short = passed_short as f64 / empty_short as f64;
        let target = (-(f64::from(quantum_bits)) * std::f64::consts::LN_2).exp();
        assert!(
            point <= 3.0 * target,
            "b = {quantum_bits}: point FPR {point} vs {target}"
        );
        assert!(
            short <= 6.0 * target,
            "b = {quantum_bits}: short-range FPR {short}"
        );
        // In memory: b + 1.5 bits of codes, a bit of knots and two of samples per key.
        let bits_per_key = filter.memory_bytes() as f64 * 8.0 / keys.len() as f64;
        eprintln!("b = {quantum_bits}: point FPR {point:.5}, [i, i+1] FPR {short:.5}, target {target:.5}, {bits_per_key:.2} bits/key in memory");
        assert!(
            bits_per_key < f64::from(quantum_bits) + 5.0,
            "b = {quantum_bits}: {bits_per_key} bits per key"
        );
    }
}

#[test]
fn bounds_beside_the_prefix_and_empty_filters() {
    let keys: Vec<Vec<u8>> = ["user:aa", "user:ab", "user:zz"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let filter = build(&keys, 8);
    assert!(!filter.may_contain_range(b"a", b"b"), "below every key");
    assert!(!filter.may_contain_range(b"v", b"w"), "above every key");
    assert!(
        !filter.may_contain_range(b"use", b"user"),
        "shorter than the prefix"
    );
    assert!(filter.may_contain_range(b"use", b"user:aa"));
    assert!(filter.may_contain_range(b"user:b", b"zzz"));
    assert!(
        !filter.may_contain_range(b"user:b", b"user:a"),
        "lo above hi"
    );
    let empty = build(&[], 8);
    assert!(!empty.may_contain_range(b"", b"\xff"));
}

#[test]
fn malformed_blocks_are_errors_never_panics() {
    let mut stream = Stream(9);
    let keys: Vec<Vec<u8>> = (0..500u64).map(|i| decimal(i * 7)).collect();
    let mut builder = RangeFilterBuilder::new();
    for key in &keys {
        builder.add(key);
    }
    let block = builder.finish(8);
    assert!(RangeFilter::decode(&block).is_ok());
    for cut in 0..block.len() {
        assert!(RangeFilter::decode(&block[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = block.clone();
    longer.push(0);
    assert!(RangeFilter::decode(&longer).is_err());
    let mut version = block.clone();
    version[0] = 2;
    assert!(RangeFilter::decode(&version).is_err());
    // Flipped bytes decode to an error or to a filter that answers without panicking.
    for _ in 0..2000 {
        let mut damaged = block.clone();
        let at = stream.below(damaged.len() as u64) as usize;
        damaged[at] ^= 1 << stream.below(8);
        if let Ok(filter) = RangeFilter::decode(&damaged) {
            let _ = filter.may_contain_range(&decimal(100), &decimal(200));
        }
    }
    for _ in 0..2000 {
        let random: Vec<u8> = (0..stream.below(64)).map(|_| stream.next() as u8).collect();
        if let Ok(filter) = RangeFilter::decode(&random) {
            let _ = filter.may_contain_range(b"a", b"z");
        }
    }
}

/// The 64-bit window and the bit-by-bit reader decode the same codes, at every offset and Rice
/// parameter, including codes that straddle a window's end or the stream's end, and long unary
/// runs (quotients above 64 do not fit a window).
#[test]
fn windowed_rice_decoding_matches_the_bit_by_bit_reader() {
    let mut stream = Stream(17);
    for rice_bits in [0u32, 1, 5, 9, 19, 20] {
        let mut writer = BitWriter::default();
        let mut gaps = Vec::new();
        for n in 0..2000u64 {
            let gap = match n % 50 {
                // A long unary run (a quotient above 64) now and then.
                0 => (70 + stream.below(100)) << rice_bits,
                _ => stream.below(4 << rice_bits),
            };
            writer.unary(gap >> rice_bits);
            writer.bits(gap, rice_bits);
            gaps.push(gap);
        }
        let bytes = writer.finish();
        let (mut fast, mut slow) = (BitReader::new(&bytes, 0), BitReader::new(&bytes, 0));
        for (n, &gap) in gaps.iter().enumerate() {
            assert_eq!(
                fast.code(rice_bits),
                Some(gap),
                "code {n}, rice bits {rice_bits}"
            );
            assert_eq!(slow.code_bit_by_bit(rice_bits), Some(gap));
            assert_eq!(fast.offset, slow.offset);
        }
        // Past the padding of the last byte both run out alike.
        let (mut fast_end, mut slow_end) = (fast, slow);
        loop {
            let (a, b) = (
                fast_end.code(rice_bits),
                slow_end.code_bit_by_bit(rice_bits),
            );
            assert_eq!(a, b);
            if a.is_none() {
                break;
            }
        }
    }
}
