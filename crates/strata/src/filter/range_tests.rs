use super::*;
use crate::random::SplitMix64;

/// The tests' seeded stream: the engine's SplitMix64 with a bounded draw.
struct Stream(SplitMix64);

impl Stream {
    fn new(seed: u64) -> Self {
        Stream(SplitMix64::new(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
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
    let mut stream = Stream::new(17);
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
    let mut stream = Stream::new(5);
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
        // In memory: b + 1.5 bits of codes, a bit of knots, two of samples and 2.25 of
        // sub-samples per key.
        let bits_per_key = filter.memory_bytes() as f64 * 8.0 / keys.len() as f64;
        eprintln!("b = {quantum_bits}: point FPR {point:.5}, [i, i+1] FPR {short:.5}, target {target:.5}, {bits_per_key:.2} bits/key in memory");
        assert!(
            bits_per_key < f64::from(quantum_bits) + 7.0,
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
    let mut stream = Stream::new(9);
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
    let mut stream = Stream::new(17);
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

/// The probe as it was before the two-level samples, the shortened walk and the segment reuse,
/// kept verbatim as the reference the faster probe must agree with on every range.
mod reference {
    use super::*;
    use std::cmp::Ordering;

    /// The alphabets' walk over every kept position, by binary search.
    fn walk(alphabets: &Alphabets, suffix: &[u8]) -> Result<u64, (u64, usize, u64)> {
        let mut value = 0u64;
        for (p, alphabet) in alphabets.symbols.iter().enumerate() {
            match alphabet.binary_search(&symbol(suffix, p)) {
                Ok(rank) => value += rank as u64 * alphabets.weights[p],
                Err(below) => return Err((value, p, below as u64)),
            }
        }
        Ok(value)
    }

    fn floor(alphabets: &Alphabets, suffix: &[u8]) -> Option<u64> {
        match walk(alphabets, suffix) {
            Ok(value) => Some(value),
            Err((value, _, 0)) => value.checked_sub(1),
            Err((value, p, below)) => Some(value + below * alphabets.weights[p] - 1),
        }
    }

    fn ceil(alphabets: &Alphabets, suffix: &[u8]) -> Option<u64> {
        match walk(alphabets, suffix) {
            Ok(value) => Some(value),
            Err((value, p, below)) => {
                let next = value + below * alphabets.weights[p];
                (next < alphabets.total).then_some(next)
            }
        }
    }

    /// The alphabets as they were built: every position of every suffix visited.
    pub(super) fn alphabets(suffixes: &[&[u8]]) -> Alphabets {
        let mut seen = vec![[false; 257]; MAX_POSITIONS];
        for suffix in suffixes {
            for (p, row) in seen.iter_mut().enumerate() {
                row[usize::from(symbol(suffix, p))] = true;
            }
        }
        let mut symbols = Vec::new();
        let mut total = 1u64;
        for row in &seen {
            let alphabet: Vec<u16> = (0..257u16).filter(|&s| row[usize::from(s)]).collect();
            match total.checked_mul(alphabet.len() as u64) {
                Some(next) if next <= MAX_GRID => {
                    total = next;
                    symbols.push(alphabet);
                }
                _ => break,
            }
        }
        Alphabets::from_symbols(symbols).unwrap_or_default()
    }

    /// The position map by binary search over every knot.
    pub(super) fn position(map: &PositionMap<'_>, value: u64) -> u64 {
        let scale = (1u64 << map.quantum_bits) as f64;
        let top = (map.keys << map.quantum_bits).saturating_sub(1);
        let Some(&first) = map.knots.first() else {
            return 0;
        };
        if value < first {
            return 0;
        }
        let j = map.knots.partition_point(|&knot| knot <= value) - 1;
        let rank = match map.knots.get(j + 1) {
            Some(&next) => {
                let fraction = (value - map.knots[j]) as f64 / (next - map.knots[j]) as f64;
                let (low, high) = (map.knot_rank(j), map.knot_rank(j + 1));
                low + fraction * (high - low)
            }
            None => map.knot_rank(j),
        };
        ((rank * scale) as u64).min(top)
    }

    /// The successor by decoding every code from the first, bit by bit.
    pub(super) fn successor(filter: &RangeFilter, target: u64) -> Option<u64> {
        let mut reader = BitReader::new(&filter.stream, 0);
        let mut position = 0u64;
        for _ in 0..filter.codes {
            position += reader.code_bit_by_bit(filter.rice_bits)?;
            if position >= target {
                return Some(position);
            }
        }
        None
    }

    pub(super) fn may_contain_range(filter: &RangeFilter, lo: &[u8], hi: &[u8]) -> bool {
        if filter.codes == 0 || lo > hi {
            return false;
        }
        let plen = filter.prefix.len();
        let place = |key: &[u8]| -> Ordering {
            let head = &key[..plen.min(key.len())];
            match head.cmp(&filter.prefix[..head.len()]) {
                Ordering::Equal if key.len() < plen => Ordering::Less,
                other => other,
            }
        };
        let low = match place(lo) {
            Ordering::Less => 0,
            Ordering::Greater => return false,
            Ordering::Equal => match ceil(&filter.alphabets, &lo[plen..]) {
                Some(value) => value,
                None => return false,
            },
        };
        let high = match place(hi) {
            Ordering::Less => return false,
            Ordering::Greater => u64::MAX,
            Ordering::Equal => match floor(&filter.alphabets, &hi[plen..]) {
                Some(value) => value,
                None => return false,
            },
        };
        if low > high {
            return false;
        }
        let map = filter.map();
        let (from, to) = (position(&map, low), position(&map, high));
        successor(filter, from).is_some_and(|position| position <= to)
    }

    /// Bits appended one at a time, from each byte's lowest bit.
    #[derive(Default)]
    pub(super) struct BitByBitWriter {
        bytes: Vec<u8>,
        used: u32,
    }

    impl BitByBitWriter {
        fn bit(&mut self, one: bool) {
            if self.used == 0 {
                self.bytes.push(0);
            }
            if one {
                if let Some(byte) = self.bytes.last_mut() {
                    *byte |= 1 << self.used;
                }
            }
            self.used = (self.used + 1) % 8;
        }

        pub(super) fn unary(&mut self, count: u64) {
            for _ in 0..count {
                self.bit(true);
            }
            self.bit(false);
        }

        pub(super) fn bits(&mut self, value: u64, count: u32) {
            for i in 0..count {
                self.bit(value >> i & 1 == 1);
            }
        }

        pub(super) fn finish(self) -> Vec<u8> {
            self.bytes
        }
    }
}

/// Checks `filter` against the reference probe and the keys on `ranges`: the same answer, and
/// "maybe" for every range holding a key. Returns the ranges answered "maybe".
fn agrees_with_reference(
    filter: &RangeFilter,
    keys: &[Vec<u8>],
    ranges: &[(Vec<u8>, Vec<u8>)],
) -> u64 {
    let mut maybe = 0;
    for (lo, hi) in ranges {
        let answer = filter.may_contain_range(lo, hi);
        assert_eq!(
            answer,
            reference::may_contain_range(filter, lo, hi),
            "[{lo:?}, {hi:?}] at b = {}",
            filter.quantum_bits
        );
        let holds = keys.iter().any(|k| k >= lo && k <= hi);
        assert!(!holds || answer, "[{lo:?}, {hi:?}] holds a key");
        maybe += u64::from(answer);
    }
    maybe
}

/// The ranges the equivalence tests ask: random bounds near the keys (either order: some are
/// empty with `lo > hi`), every key alone, the gaps between neighbours, both ends, and the
/// extremes of the byte order.
fn ranges_for(stream: &mut Stream, keys: &[Vec<u8>], random: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut ranges = Vec::new();
    let max = vec![0xffu8; 24];
    ranges.push((Vec::new(), max.clone()));
    ranges.push((Vec::new(), Vec::new()));
    ranges.push((max.clone(), max.clone()));
    if keys.is_empty() {
        return ranges;
    }
    for _ in 0..random {
        ranges.push((bound(stream, keys), bound(stream, keys)));
    }
    for key in keys {
        ranges.push((key.clone(), key.clone()));
        let mut after = key.clone();
        after.push(0);
        ranges.push((after.clone(), after));
    }
    for pair in keys.windows(2) {
        let mut lo = pair[0].clone();
        lo.push(0);
        ranges.push((lo, pair[1].clone()));
    }
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    ranges.push((Vec::new(), first.clone()));
    ranges.push((last.clone(), max.clone()));
    ranges.push((Vec::new(), first[..first.len().saturating_sub(1)].to_vec()));
    let mut past = last.clone();
    past.push(0);
    ranges.push((past, max));
    ranges
}

/// Sorted distinct big-endian `u64` keys, including both extremes.
fn u64_keys(stream: &mut Stream, count: usize) -> Vec<Vec<u8>> {
    let mut numbers: Vec<u64> = (0..count).map(|_| stream.next()).collect();
    numbers.extend([0, 1, u64::MAX - 1, u64::MAX]);
    numbers.sort_unstable();
    numbers.dedup();
    numbers.iter().map(|n| n.to_be_bytes().to_vec()).collect()
}

#[test]
fn the_probe_answers_as_the_reference_on_every_key_shape_and_quantum() {
    let mut stream = Stream::new(23);
    let mut sets = key_sets(&mut stream);
    sets.push(u64_keys(&mut stream, 700));
    sets.push(vec![
        0u64.to_be_bytes().to_vec(),
        u64::MAX.to_be_bytes().to_vec(),
    ]);
    sets.push(Vec::new());
    for keys in &sets {
        let suffixes: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        assert_eq!(
            Alphabets::build(suffixes.iter().copied()),
            reference::alphabets(&suffixes),
            "alphabets of {} keys",
            keys.len()
        );
        for quantum_bits in [1, 2, 5, 6, 10, 16, 20] {
            let filter = build(keys, quantum_bits);
            let ranges = ranges_for(&mut stream, keys, 1500);
            let maybe = agrees_with_reference(&filter, keys, &ranges);
            assert!(keys.is_empty() || maybe > 0);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Random key sets (short keys over a small alphabet, so that neighbours share prefixes and
    /// values collide), every quantum: the probe equals the reference's on random and edge ranges.
    #[test]
    fn random_key_sets_probe_as_the_reference(
        seed in proptest::prelude::any::<u64>(),
        count in 0usize..400,
        alphabet in 1u64..40,
        quantum_bits in 1u32..=20,
    ) {
        let mut stream = Stream::new(seed);
        let mut keys: Vec<Vec<u8>> = (0..count)
            .map(|_| (0..stream.below(9)).map(|_| b'0' + stream.below(alphabet) as u8).collect())
            .collect();
        keys.sort();
        keys.dedup();
        let filter = build(&keys, quantum_bits);
        let ranges = ranges_for(&mut stream, &keys, 300);
        agrees_with_reference(&filter, &keys, &ranges);
    }
}

/// The two-level samples find the same successor as decoding every code from the first, for
/// every stored position, its neighbours, and targets past the last.
#[test]
fn the_successor_search_matches_decoding_from_the_first_code() {
    let mut stream = Stream::new(31);
    let mut sets = key_sets(&mut stream);
    sets.push(u64_keys(&mut stream, 3000));
    for keys in &sets {
        for quantum_bits in [1, 6, 12, 20] {
            let filter = build(keys, quantum_bits);
            let top = filter.keys << filter.quantum_bits;
            let mut targets = vec![0, 1, top.saturating_sub(1), top, top + 1, u64::MAX];
            let mut position = 0u64;
            let mut reader = BitReader::new(&filter.stream, 0);
            for _ in 0..filter.codes {
                position += reader
                    .code_bit_by_bit(filter.rice_bits)
                    .expect("a valid code");
                targets.extend([position.saturating_sub(1), position, position + 1]);
            }
            targets.extend((0..2000).map(|_| stream.below(top + 2)));
            for target in targets {
                assert_eq!(
                    filter.successor(target),
                    reference::successor(&filter, target),
                    "target {target}, b = {quantum_bits}"
                );
            }
        }
    }
}

/// A crafted block whose codes are too far apart for the sub-samples' 32-bit position or
/// 16-bit offset differences: the search starts from an earlier sample and still finds every
/// successor.
#[test]
fn sub_samples_that_do_not_fit_fall_back_to_an_earlier_sample() {
    // (rice bits, gap): positions 1e8 apart pass 2^32 within 48 codes; unary gaps of 2,000 bits
    // pass 2^16 bits within 48 codes.
    for (rice_bits, gap) in [(19u32, 100_000_000u64), (0, 2_000)] {
        let keys = 5_000u64;
        // Positions stay below `keys << 20`: 50 codes 1e8 apart, 200 codes 2,000 apart.
        let codes = if rice_bits > 0 { 50 } else { 200 };
        let mut block = vec![FORMAT_VERSION, 20, rice_bits as u8];
        put_varint64(&mut block, keys);
        put_length_prefixed(&mut block, b"");
        block.push(0); // no alphabet positions
        let knots = keys.div_ceil(KNOT_EVERY) + u64::from(!(keys - 1).is_multiple_of(KNOT_EVERY));
        put_varint64(&mut block, knots);
        for _ in 0..knots {
            put_fixed64(&mut block, 0);
        }
        put_varint64(&mut block, codes);
        let mut writer = BitWriter::default();
        for code in 0..codes {
            let g = if code == 0 { 5 } else { gap };
            writer.unary(g >> rice_bits);
            writer.bits(g, rice_bits);
        }
        block.extend(writer.finish());
        let filter = RangeFilter::decode(&block).expect("a crafted block decodes");
        assert!(
            filter.samples.sub_positions.contains(&NO_SUB_SAMPLE),
            "rice bits {rice_bits}: some sub-sample does not fit"
        );
        for code in 0..codes {
            let position = 5 + code * gap;
            for target in [position - 1, position, position + 1] {
                assert_eq!(
                    filter.successor(target),
                    reference::successor(&filter, target),
                    "rice bits {rice_bits}, target {target}"
                );
            }
        }
    }
}

/// The word-wide writer writes the same bytes as appending bit by bit.
#[test]
fn the_word_writer_writes_the_bit_by_bit_bytes() {
    let mut stream = Stream::new(41);
    for round in 0..200 {
        let (mut fast, mut slow) = (BitWriter::default(), reference::BitByBitWriter::default());
        for _ in 0..stream.below(300) {
            let rice_bits = stream.below(21) as u32;
            let quotient = match stream.below(20) {
                0 => 30 + stream.below(100),
                _ => stream.below(5),
            };
            let low = stream.next();
            fast.unary(quotient);
            slow.unary(quotient);
            fast.bits(low, rice_bits);
            slow.bits(low, rice_bits);
        }
        assert_eq!(fast.finish(), slow.finish(), "round {round}");
    }
}

/// Blocks an earlier build wrote (the fixture, made with the instruction-count example's
/// `dump` phase before the probe index changed): the builder still writes them byte for byte,
/// and the reader opens them and answers as the reference, with no false negatives.
#[test]
fn blocks_written_before_still_open_and_answer_alike() {
    // The example's keys: 300 distinct numbers of 0..1200 (SplitMix64 from seed 7), 16 digits.
    let mut stream = Stream::new(7);
    let mut taken = [false; 1200];
    let mut numbers = Vec::new();
    while numbers.len() < 300 {
        let n = (stream.next() % 1200) as usize;
        if !taken[n] {
            taken[n] = true;
            numbers.push(n as u64);
        }
    }
    numbers.sort_unstable();
    let keys: Vec<Vec<u8>> = numbers.iter().map(|&n| decimal(n)).collect();
    let fixture = include_str!("range_layout_v1.txt");
    let mut blocks = 0;
    for line in fixture.lines().filter(|line| !line.starts_with('#')) {
        let (bits, hex) = line.split_once(' ').expect("bits, then hex");
        let quantum_bits: u32 = bits.parse().expect("quantum bits");
        let block: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let mut builder = RangeFilterBuilder::new();
        for key in &keys {
            builder.add(key);
        }
        assert_eq!(builder.finish(quantum_bits), block, "b = {quantum_bits}");
        let filter = RangeFilter::decode(&block).expect("an earlier block decodes");
        let mut ranges = ranges_for(&mut Stream::new(3), &keys, 500);
        ranges.extend((0..1201u64).map(|i| (decimal(i), decimal(i + 1))));
        let maybe = agrees_with_reference(&filter, &keys, &ranges);
        assert!(
            maybe > 300,
            "b = {quantum_bits}: {maybe} ranges answered maybe"
        );
        blocks += 1;
    }
    assert_eq!(blocks, 2);
}
