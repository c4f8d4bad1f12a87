//! A range filter for one table file: "may the file hold a key in `[lo, hi]`?", with no false
//! negatives (EcoTune puts a range filter on every file so that a short seek does not
//! pay for every main-level run).
//!
//! Strata's own design, after SNARF (Vaidya et al., VLDB 2022): a monotone map from keys to
//! positions in `[0, n * 2^b)` (`n` keys, `b` = [`RangeFilter::quantum_bits`]), built from a
//! piecewise-linear estimate of the keys' rank (every [`KNOT_EVERY`]-th key's value is a knot),
//! and the sorted set of the keys' positions, Golomb-Rice coded. A range maps to the positions
//! between its ends' positions; the filter answers "yes" if a key's position lies there. Because
//! the map never decreases, a key inside the range has its position inside the mapped interval:
//! no false negatives. An empty range is a false positive when some key shares its interval, about
//! `(1 + width in positions) * 2^-b` for keys spread as the knots describe.
//!
//! A key's value: its bytes after the prefix every key of the file shares, taken as symbols
//! (0 = past the key's end, else the byte + 1), position by position for as many positions as
//! keep the product of the alphabets' sizes within 2^52; each symbol is replaced by its rank
//! among the symbols the file's keys use at that position, and the ranks are read as one
//! mixed-radix number. This preserves order (so no false negatives) and packs keys that use few
//! symbols per position densely: ASCII decimal keys give radix 10, not 256, so a digit carry
//! does not leave a gap of 246 values that the rank estimate between two knots would spread keys
//! over (on the benchmark's keys that is the difference between a false-positive rate of 0.9
//! and 0.00002 at `b = 6`). Keys that differ only past the positions kept share a value, which
//! costs false positives, never a miss.
//!
//! Size: `b + 1.5` bits per key for the codes, 64 bits per [`KNOT_EVERY`] keys for the knots
//! (1 bit per key), the prefix and alphabets; in memory also the successor search's [`Samples`]:
//! one (position, bit offset) per 64 codes and one 48-bit difference per 16 codes between them
//! (4.25 bits per key), so that a probe decodes fewer than 16 codes, not up to 63.
//!
//! Format (all integers little-endian; `docs/FORMAT.md` has the same):
//! ```text
//! version:u8 = 1  quantum_bits:u8 (1..=20)  rice_bits:u8 (0..=20)
//! keys:varint  prefix:varint-length-prefixed bytes
//! positions:u8 (0..=16), then per position: ends:u8 (1 if a key ends there, else 0)
//!                                          bytes:varint-length-prefixed (the bytes seen, sorted)
//! knots:varint  knot:fixed64 * knots        (values of keys 0, 64, 128, ... and of the last key)
//! codes:varint  stream:bytes to the end     (gaps between sorted distinct positions, Rice-coded:
//!                                            gap >> rice_bits in unary as ones ended by a zero,
//!                                            then its rice_bits low bits, least significant first;
//!                                            bits packed from each byte's lowest bit)
//! ```

use crate::coding::{put_fixed64, put_length_prefixed, put_varint64, Decoder};

/// Keys between two knots of the rank estimate.
pub(crate) const KNOT_EVERY: u64 = 64;
/// Codes between two samples of the successor search.
const SAMPLE_EVERY: u64 = 64;
const FORMAT_VERSION: u8 = 1;
/// The largest `b`: positions stay below `2^52`, exact in an `f64`, for any `u32` key count.
const MAX_QUANTUM_BITS: u32 = 20;

/// The symbol at position `p` of `suffix`: 0 past its end (sorts first), else the byte plus 1.
fn symbol(suffix: &[u8], p: usize) -> u16 {
    suffix.get(p).map_or(0, |&byte| u16::from(byte) + 1)
}

/// The symbols seen at each of the first positions after the prefix, and the mixed-radix weights
/// they give: a key's value is its symbols' ranks as a mixed-radix number, which preserves order
/// and packs keys that use few symbols per position (decimal digits: radix 10, not 256) densely,
/// so the rank estimate between knots stays close to linear.
#[derive(Debug, Clone, Default, PartialEq)]
struct Alphabets {
    /// Per position, the symbols seen there, sorted.
    symbols: Vec<Vec<u16>>,
    /// Per position, the product of the radixes after it.
    weights: Vec<u64>,
    /// The product of every radix: values lie in `[0, total)`.
    total: u64,
    /// The first position from which every alphabet holds symbol 0 (past a key's end), which
    /// then has rank 0: past it and past a suffix's end a walk adds nothing, so it stops there.
    ends_from: usize,
}

/// The largest product of radixes: values stay exact in an `f64`.
const MAX_GRID: u64 = 1 << 52;
/// Positions considered after the prefix.
const MAX_POSITIONS: usize = 16;

impl Alphabets {
    fn from_symbols(symbols: Vec<Vec<u16>>) -> Option<Alphabets> {
        let mut weights = vec![0u64; symbols.len()];
        let mut total = 1u64;
        for (p, alphabet) in symbols.iter().enumerate().rev() {
            if alphabet.is_empty() || alphabet.windows(2).any(|w| w[0] >= w[1]) {
                return None;
            }
            weights[p] = total;
            total = total
                .checked_mul(alphabet.len() as u64)
                .filter(|&t| t <= MAX_GRID)?;
        }
        let ends_from = symbols
            .iter()
            .rposition(|alphabet| alphabet.first() != Some(&0))
            .map_or(0, |p| p + 1);
        Some(Alphabets {
            symbols,
            weights,
            total,
            ends_from,
        })
    }

    /// The alphabets of `suffixes` (keys after the prefix): as many positions as keep the grid
    /// within `MAX_GRID`.
    fn build<'a>(suffixes: impl Iterator<Item = &'a [u8]>) -> Alphabets {
        // Bytes seen per position; symbol 0 (past the end) is at every position from the
        // shortest suffix's length on.
        let mut seen = vec![[false; 256]; MAX_POSITIONS];
        let mut shortest = usize::MAX;
        for suffix in suffixes {
            shortest = shortest.min(suffix.len());
            for (row, &byte) in seen.iter_mut().zip(suffix) {
                row[usize::from(byte)] = true;
            }
        }
        let mut symbols = Vec::new();
        let mut total = 1u64;
        for (p, row) in seen.iter().enumerate() {
            let alphabet: Vec<u16> = (0..257u16)
                .filter(|&s| match s {
                    0 => p >= shortest,
                    _ => row[usize::from(s - 1)],
                })
                .collect();
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

    /// Walks `suffix`'s symbols over the grid: `Ok(value)` if every one is in its alphabet,
    /// else `Err((value so far, position, symbols below it there))`.
    fn walk(&self, suffix: &[u8]) -> Result<u64, (u64, usize, u64)> {
        let mut value = 0u64;
        // Past `ends_from` and the suffix's end every symbol is 0, at rank 0: nothing to add.
        let walked = suffix.len().max(self.ends_from).min(self.symbols.len());
        for (p, alphabet) in self.symbols[..walked].iter().enumerate() {
            match alphabet.binary_search(&symbol(suffix, p)) {
                Ok(rank) => value += rank as u64 * self.weights[p],
                Err(below) => return Err((value, p, below as u64)),
            }
        }
        Ok(value)
    }

    /// A key's value (its symbols are all in the alphabets).
    fn value(&self, suffix: &[u8]) -> u64 {
        self.walk(suffix).unwrap_or_else(|(value, _, _)| value)
    }

    /// The largest value of a grid point at or below `suffix` (cut to the grid's positions), or
    /// `None` if every grid point is above it.
    fn floor(&self, suffix: &[u8]) -> Option<u64> {
        match self.walk(suffix) {
            Ok(value) => Some(value),
            Err((value, _, 0)) => value.checked_sub(1),
            Err((value, p, below)) => Some(value + below * self.weights[p] - 1),
        }
    }

    /// The smallest value of a grid point at or above `suffix` (cut to the grid's positions), or
    /// `None` if every grid point is below it.
    fn ceil(&self, suffix: &[u8]) -> Option<u64> {
        match self.walk(suffix) {
            Ok(value) => Some(value),
            Err((value, p, below)) => {
                let next = value + below * self.weights[p];
                (next < self.total).then_some(next)
            }
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.symbols.len() as u8);
        for alphabet in &self.symbols {
            out.push(u8::from(alphabet.first() == Some(&0)));
            let bytes: Vec<u8> = alphabet
                .iter()
                .filter(|&&s| s > 0)
                .map(|&s| (s - 1) as u8)
                .collect();
            put_length_prefixed(out, &bytes);
        }
    }

    fn decode(d: &mut Decoder<'_>) -> Option<Alphabets> {
        let positions = usize::from(d.u8()?);
        if positions > MAX_POSITIONS {
            return None;
        }
        let mut symbols = Vec::with_capacity(positions);
        for _ in 0..positions {
            let end = match d.u8()? {
                0 => false,
                1 => true,
                _ => return None,
            };
            let bytes = d.length_prefixed()?;
            let mut alphabet: Vec<u16> = Vec::with_capacity(bytes.len() + 1);
            if end {
                alphabet.push(0);
            }
            alphabet.extend(bytes.iter().map(|&b| u16::from(b) + 1));
            symbols.push(alphabet);
        }
        Alphabets::from_symbols(symbols)
    }
}

/// Collects a file's distinct user keys in order and builds its range filter.
#[derive(Debug, Default)]
pub(crate) struct RangeFilterBuilder {
    keys: Vec<u8>,
    ends: Vec<usize>,
}

impl RangeFilterBuilder {
    pub(crate) fn new() -> Self {
        RangeFilterBuilder::default()
    }

    /// Adds `user_key`, which must not sort before the previous one (a repeat is ignored).
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if self.last() == Some(user_key) {
            return;
        }
        self.keys.extend_from_slice(user_key);
        self.ends.push(self.keys.len());
    }

    fn last(&self) -> Option<&[u8]> {
        let end = *self.ends.last()?;
        let start = self.ends.len().checked_sub(2).map_or(0, |i| self.ends[i]);
        self.keys.get(start..end)
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Distinct keys added.
    pub(crate) fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    /// The filter's block, positions quantized to `quantum_bits` bits below each key's rank
    /// (clamped to `1..=20`).
    pub(crate) fn finish(&self, quantum_bits: u32) -> Vec<u8> {
        let quantum_bits = quantum_bits.clamp(1, MAX_QUANTUM_BITS);
        let rice_bits = quantum_bits.saturating_sub(1);
        let n = self.len();
        let prefix: &[u8] = match (self.ends.is_empty(), n) {
            (true, _) => &[],
            (false, _) => {
                let first = self.key(0);
                let last = self.key(self.ends.len() - 1);
                let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
                &first[..shared]
            }
        };
        let suffix = |i: usize| &self.key(i)[prefix.len()..];
        let alphabets = Alphabets::build((0..self.ends.len()).map(suffix));
        let value = |i: usize| alphabets.value(suffix(i));
        let mut knots: Vec<u64> = (0..n)
            .step_by(KNOT_EVERY as usize)
            .map(|i| value(i as usize))
            .collect();
        if n > 0 && !(n - 1).is_multiple_of(KNOT_EVERY) {
            knots.push(value((n - 1) as usize));
        }
        let map = PositionMap {
            knots: &knots,
            keys: n,
            quantum_bits,
        };
        let mut out = vec![FORMAT_VERSION, quantum_bits as u8, rice_bits as u8];
        put_varint64(&mut out, n);
        put_length_prefixed(&mut out, prefix);
        alphabets.encode(&mut out);
        put_varint64(&mut out, knots.len() as u64);
        for &knot in &knots {
            put_fixed64(&mut out, knot);
        }
        let mut writer = BitWriter::default();
        let (mut previous, mut codes) = (0u64, 0u64);
        // Values never decrease with the key, and the first is the first knot: the segment is a
        // cursor that only moves forward.
        let mut segment = 0usize;
        for i in 0..self.ends.len() {
            let value = value(i);
            while knots.get(segment + 1).is_some_and(|&knot| knot <= value) {
                segment += 1;
            }
            let position = map.position_in(segment, value);
            if codes > 0 && position == previous {
                continue;
            }
            // Positions never decrease with the key (the map is monotone), so gaps are >= 0.
            let gap = position - previous;
            writer.unary(gap >> rice_bits);
            writer.bits(gap, rice_bits);
            previous = position;
            codes += 1;
        }
        put_varint64(&mut out, codes);
        out.extend_from_slice(&writer.finish());
        out
    }
}

/// The monotone map from key values to positions (module docs).
struct PositionMap<'a> {
    knots: &'a [u64],
    keys: u64,
    quantum_bits: u32,
}

impl PositionMap<'_> {
    /// The rank of knot `j`: `j * KNOT_EVERY`, the last key's rank for the last knot.
    fn knot_rank(&self, j: usize) -> f64 {
        let rank = (j as u64 * KNOT_EVERY).min(self.keys.saturating_sub(1));
        rank as f64
    }

    /// The last knot at or below `value`, `None` if every knot is above it (or there is none).
    fn segment(&self, value: u64) -> Option<usize> {
        self.knots
            .partition_point(|&knot| knot <= value)
            .checked_sub(1)
    }

    /// [`PositionMap::segment`] of a value at or above one whose segment is `from`: the knots
    /// past `from` only (a range's high end usually shares its low end's segment).
    fn segment_from(&self, from: usize, value: u64) -> usize {
        match self.knots.get(from + 1) {
            Some(&next) if next <= value => {
                from + 1 + self.knots[from + 1..].partition_point(|&knot| knot <= value) - 1
            }
            _ => from,
        }
    }

    /// The position of `value`, whose segment is `j` (`knots[j] <= value`, and `value` is below
    /// the next knot if there is one).
    fn position_in(&self, j: usize, value: u64) -> u64 {
        let scale = (1u64 << self.quantum_bits) as f64;
        let top = (self.keys << self.quantum_bits).saturating_sub(1);
        let rank = match self.knots.get(j + 1) {
            // Knots strictly increase past `j` here: knots[j] <= value < knots[j + 1].
            Some(&next) => {
                let fraction = (value - self.knots[j]) as f64 / (next - self.knots[j]) as f64;
                let (low, high) = (self.knot_rank(j), self.knot_rank(j + 1));
                low + fraction * (high - low)
            }
            None => self.knot_rank(j),
        };
        ((rank * scale) as u64).min(top)
    }
}

/// Bits appended from each byte's lowest bit, gathered in a 64-bit word and written 32 at a
/// time (the bytes are the same as appending bit by bit).
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    /// Bits not yet written, the oldest lowest; every bit above `pending` is zero.
    word: u64,
    /// Bits in `word`, below 32 between calls.
    pending: u32,
}

impl BitWriter {
    /// Appends the `count` (at most 32) low bits of `value`, whose higher bits are zero.
    fn push(&mut self, value: u64, count: u32) {
        debug_assert!(count <= 32 && value >> count == 0);
        self.word |= value << self.pending;
        self.pending += count;
        if self.pending >= 32 {
            self.bytes
                .extend_from_slice(&(self.word as u32).to_le_bytes());
            self.word >>= 32;
            self.pending -= 32;
        }
    }

    /// `count` ones, then a zero.
    fn unary(&mut self, mut count: u64) {
        while count >= 32 {
            self.push(u64::from(u32::MAX), 32);
            count -= 32;
        }
        // count < 32: count ones and the zero fit one push.
        self.push((1u64 << count) - 1, count as u32 + 1);
    }

    /// The `count` (at most 32) low bits of `value`.
    fn bits(&mut self, value: u64, count: u32) {
        let mask = (1u64 << count) - 1;
        self.push(value & mask, count);
    }

    fn finish(mut self) -> Vec<u8> {
        let tail = self.pending.div_ceil(8) as usize;
        self.bytes
            .extend_from_slice(&self.word.to_le_bytes()[..tail]);
        self.bytes
    }
}

/// A decoded range filter (module docs).
#[derive(Debug, Clone)]
pub(crate) struct RangeFilter {
    quantum_bits: u32,
    rice_bits: u32,
    keys: u64,
    prefix: Vec<u8>,
    alphabets: Alphabets,
    knots: Vec<u64>,
    codes: u64,
    stream: Vec<u8>,
    samples: Samples,
}

/// Where the successor search starts decoding (built at decode, never stored): every
/// [`SAMPLE_EVERY`]-th code's position and the bit offset of the code after it, and between
/// two samples every [`SUB_SAMPLE_EVERY`]-th code's the same, as 32- and 16-bit differences from
/// the sample before it ([`NO_SUB_SAMPLE`] where they do not fit: the search then starts at an
/// earlier one). A probe decodes at most `SUB_SAMPLE_EVERY` codes where they fit, not up to
/// `SAMPLE_EVERY`: the samples cost 2 bits per code, the sub-samples 48 bits per
/// `SUB_SAMPLE_EVERY` codes (2.25 bits per code at 16).
#[derive(Debug, Clone, Default)]
struct Samples {
    positions: Vec<u64>,
    offsets: Vec<u64>,
    /// `SUBS_PER_SAMPLE` per sample, in code order (fewer after the last sample).
    sub_positions: Vec<u32>,
    sub_offsets: Vec<u16>,
}

/// Codes between two sub-samples.
const SUB_SAMPLE_EVERY: u64 = 16;
/// Sub-samples between two samples.
const SUBS_PER_SAMPLE: usize = (SAMPLE_EVERY / SUB_SAMPLE_EVERY) as usize - 1;
/// A sub-sample whose differences do not fit.
const NO_SUB_SAMPLE: u32 = u32::MAX;

impl Samples {
    /// Records code `code` at `position`, followed by the code at bit `offset`.
    fn record(&mut self, code: u64, position: u64, offset: u64) {
        if code.is_multiple_of(SAMPLE_EVERY) {
            self.positions.push(position);
            self.offsets.push(offset);
        } else if code.is_multiple_of(SUB_SAMPLE_EVERY) {
            let (Some(&base), Some(&base_offset)) = (self.positions.last(), self.offsets.last())
            else {
                return;
            };
            let fit = u32::try_from(position - base)
                .ok()
                .filter(|&d| d != NO_SUB_SAMPLE)
                .zip(u16::try_from(offset - base_offset).ok());
            let (delta, offset_delta) = fit.unwrap_or((NO_SUB_SAMPLE, 0));
            self.sub_positions.push(delta);
            self.sub_offsets.push(offset_delta);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.positions.len() * 16 + self.sub_positions.len() * 6
    }

    /// The last sampled code at or below `target`: (its index, position, the offset after it),
    /// `None` if the first code is above it.
    #[inline]
    fn start(&self, target: u64) -> Option<(u64, u64, u64)> {
        let block = self
            .positions
            .partition_point(|&position| position <= target)
            .checked_sub(1)?;
        let (base, base_offset) = (self.positions[block], *self.offsets.get(block)?);
        let mut start = (block as u64 * SAMPLE_EVERY, base, base_offset);
        let first = block * SUBS_PER_SAMPLE;
        for s in first..(first + SUBS_PER_SAMPLE).min(self.sub_positions.len()) {
            let delta = self.sub_positions[s];
            if delta == NO_SUB_SAMPLE || base + u64::from(delta) > target {
                break;
            }
            let code = start.0 + SUB_SAMPLE_EVERY;
            let offset = base_offset + u64::from(*self.sub_offsets.get(s)?);
            start = (code, base + u64::from(delta), offset);
        }
        Some(start)
    }
}

impl RangeFilter {
    /// Decodes a block written by [`RangeFilterBuilder::finish`]; `Err` says what is malformed.
    /// The whole stream is read once (and must hold exactly `codes` codes), so queries never
    /// meet a malformed code.
    pub(crate) fn decode(block: &[u8]) -> Result<RangeFilter, String> {
        let mut d = Decoder::new(block);
        let truncated = || "range filter block is truncated".to_string();
        let version = d.u8().ok_or_else(truncated)?;
        if version != FORMAT_VERSION {
            return Err(format!("range filter format version {version} is not 1"));
        }
        let quantum_bits = u32::from(d.u8().ok_or_else(truncated)?);
        let rice_bits = u32::from(d.u8().ok_or_else(truncated)?);
        if !(1..=MAX_QUANTUM_BITS).contains(&quantum_bits) || rice_bits > MAX_QUANTUM_BITS {
            return Err(format!(
                "range filter quantum bits {quantum_bits} or rice bits {rice_bits} out of range"
            ));
        }
        let keys = d.varint64().ok_or_else(truncated)?;
        if keys > u64::from(u32::MAX) {
            return Err(format!("range filter of {keys} keys"));
        }
        let prefix = d.length_prefixed().ok_or_else(truncated)?.to_vec();
        let alphabets = Alphabets::decode(&mut d)
            .ok_or_else(|| "range filter alphabets are malformed or truncated".to_string())?;
        let knot_count = d.varint64().ok_or_else(truncated)?;
        let expected_knots = keys.div_ceil(KNOT_EVERY)
            + u64::from(keys > 0 && !(keys - 1).is_multiple_of(KNOT_EVERY));
        if knot_count != expected_knots {
            return Err(format!(
                "range filter has {knot_count} knots for {keys} keys, expected {expected_knots}"
            ));
        }
        let mut knots = Vec::with_capacity(knot_count as usize);
        for _ in 0..knot_count {
            let knot = d.fixed64().ok_or_else(truncated)?;
            if knots.last().is_some_and(|&last| knot < last) {
                return Err("range filter knots are not sorted".into());
            }
            knots.push(knot);
        }
        let codes = d.varint64().ok_or_else(truncated)?;
        if codes > keys {
            return Err(format!("range filter has {codes} codes for {keys} keys"));
        }
        let stream = d.rest().to_vec();
        let mut filter = RangeFilter {
            quantum_bits,
            rice_bits,
            keys,
            prefix,
            alphabets,
            knots,
            codes,
            stream,
            samples: Samples::default(),
        };
        filter.samples = filter.scan()?;
        Ok(filter)
    }

    /// Reads every code once: the samples, or what is malformed.
    fn scan(&self) -> Result<Samples, String> {
        let top = self.keys << self.quantum_bits;
        let mut reader = BitReader::new(&self.stream, 0);
        let (mut position, mut samples) = (0u64, Samples::default());
        for code in 0..self.codes {
            let gap = reader
                .code(self.rice_bits)
                .ok_or_else(|| format!("range filter code {code} runs past the block"))?;
            position = position
                .checked_add(gap)
                .filter(|&p| p < top)
                .ok_or_else(|| format!("range filter position of code {code} is out of range"))?;
            if code > 0 && gap == 0 {
                return Err(format!("range filter code {code} repeats a position"));
            }
            samples.record(code, position, reader.offset);
        }
        // Only the last byte's padding may follow.
        if reader.offset.div_ceil(8) != self.stream.len() as u64 {
            return Err("range filter block has bytes after its codes".into());
        }
        Ok(samples)
    }

    /// Bytes the decoded filter holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.stream.len()
            + self.knots.len() * 8
            + self.samples.memory_bytes()
            + self.prefix.len()
            + self
                .alphabets
                .symbols
                .iter()
                .map(|a| a.len() * 2 + 8)
                .sum::<usize>()
    }

    fn map(&self) -> PositionMap<'_> {
        PositionMap {
            knots: &self.knots,
            keys: self.keys,
            quantum_bits: self.quantum_bits,
        }
    }

    /// False only if no key of the file lies in `[lo, hi]` (both inclusive).
    pub(crate) fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        use std::cmp::Ordering;
        if self.codes == 0 || lo > hi {
            return false;
        }
        let plen = self.prefix.len();
        // How `key` sorts against the strings that start with the prefix (every key does):
        // below them all, among them, or above them all.
        let place = |key: &[u8]| -> Ordering {
            let head = &key[..plen.min(key.len())];
            match head.cmp(&self.prefix[..head.len()]) {
                Ordering::Equal if key.len() < plen => Ordering::Less,
                other => other,
            }
        };
        let low = match place(lo) {
            Ordering::Less => 0,
            Ordering::Greater => return false,
            Ordering::Equal => match self.alphabets.ceil(&lo[plen..]) {
                Some(value) => value,
                None => return false,
            },
        };
        let high = match place(hi) {
            Ordering::Less => return false,
            Ordering::Greater => u64::MAX,
            Ordering::Equal => match self.alphabets.floor(&hi[plen..]) {
                Some(value) => value,
                None => return false,
            },
        };
        if low > high {
            return false;
        }
        let map = self.map();
        let Some(segment) = map.segment(low) else {
            // Below the first knot: position 0, and the first code decides.
            let to = match map.segment(high) {
                Some(j) => map.position_in(j, high),
                None => 0,
            };
            return self.successor(0).is_some_and(|position| position <= to);
        };
        let from = map.position_in(segment, low);
        let to = map.position_in(map.segment_from(segment, high), high);
        self.successor(from).is_some_and(|position| position <= to)
    }

    /// The smallest stored position at or above `target`.
    fn successor(&self, target: u64) -> Option<u64> {
        let Some((mut code, mut position, offset)) = self.samples.start(target) else {
            // The first code is above the target.
            return self.samples.positions.first().copied();
        };
        if position == target {
            return Some(position);
        }
        let mut reader = BitReader::new(&self.stream, offset);
        while code + 1 < self.codes {
            position += reader.code(self.rice_bits)?;
            code += 1;
            if position >= target {
                return Some(position);
            }
        }
        None
    }
}

/// Bits read from each byte's lowest bit.
struct BitReader<'a> {
    bytes: &'a [u8],
    offset: u64,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8], offset: u64) -> Self {
        BitReader { bytes, offset }
    }

    fn bit(&mut self) -> Option<bool> {
        let byte = *self.bytes.get(usize::try_from(self.offset / 8).ok()?)?;
        let bit = byte >> (self.offset % 8) & 1 == 1;
        self.offset += 1;
        Some(bit)
    }

    /// One Rice code: the unary quotient, then `rice_bits` (at most 20) low bits. Reads the
    /// code from one 64-bit window when it fits there: the quotient by counting trailing ones,
    /// the low bits with one shift and mask; else (within 8 bytes of the stream's end, or a
    /// code longer than the window) bit by bit. Inlined into the successor search's loop, where
    /// a probe spends most of its instructions.
    #[inline(always)]
    fn code(&mut self, rice_bits: u32) -> Option<u64> {
        let byte = (self.offset / 8) as usize;
        if let Some(window) = self
            .bytes
            .get(byte..)
            .and_then(|rest| rest.first_chunk::<8>())
        {
            let shift = (self.offset % 8) as u32;
            // Bit `offset` is bit 0 of `word`; its top `shift` bits are zeros shifted in, so a
            // run of ones never reaches past the window's `64 - shift` valid bits.
            let word = u64::from_le_bytes(*window) >> shift;
            let quotient = word.trailing_ones();
            let used = quotient + 1 + rice_bits;
            if used <= 64 - shift {
                // `quotient + 1` is 64 only when `rice_bits` is 0 and the mask is 0: the shift
                // is taken modulo 64 and its result masked away.
                let low = (word >> ((quotient + 1) & 63)) & ((1u64 << rice_bits) - 1);
                self.offset += u64::from(used);
                return Some((u64::from(quotient) << rice_bits) | low);
            }
        }
        self.code_bit_by_bit(rice_bits)
    }

    /// [`BitReader::code`] one bit at a time: near the end of the stream, for codes longer
    /// than a window, and as the reference the window is tested against.
    #[cold]
    #[inline(never)]
    fn code_bit_by_bit(&mut self, rice_bits: u32) -> Option<u64> {
        let mut quotient = 0u64;
        while self.bit()? {
            quotient += 1;
            // A quotient this large is no gap of a valid filter (positions stay below 2^52).
            if quotient > 1 << 32 {
                return None;
            }
        }
        let mut low = 0u64;
        for i in 0..rice_bits {
            if self.bit()? {
                low |= 1 << i;
            }
        }
        Some((quotient << rice_bits) | low)
    }
}

#[cfg(test)]
#[path = "range_tests.rs"]
mod tests;
