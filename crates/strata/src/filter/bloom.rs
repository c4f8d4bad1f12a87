//! Cache-line-blocked Bloom filter with a real-valued bits-per-key chosen per file (DESIGN.md §1), and
//! the FPR math the allocation policies use (DESIGN.md §1-3).
//!
//! # Layout
//!
//! The bit array is split into 64-byte (512-bit) blocks, one cache line each. A key's hash picks
//! one block and all `k` probes fall inside it, so a probe costs one cache miss instead of `k`.
//! The price is a slightly higher FPR than a standard Bloom filter with the same bits per key:
//! blocks receive a Poisson-distributed number of keys, and the overloaded ones answer "maybe" more
//! often than the average load suggests. The tests measure the blocked FPR against the formula.
//!
//! Number of blocks: `max(1, ceil(n * bpk / 512))` for `n` keys at `bpk` bits per key (clamped to
//! `u32::MAX` blocks, i.e. a 256 GiB filter).
//!
//! # Hashing
//!
//! Callers hash a user key once with [`key_hash`] (XXH3-64) and probe every filter on the lookup
//! path with that hash. Each filter first remixes the hash with its own seed,
//! `x = mix64(hash ^ splitmix64(seed))` where `mix64` is Stafford's Mix13 finalizer (a bijection
//! with full avalanche), so filters with different seeds over the same key hashes make
//! independent errors — the modular filter (Mnemosyne §4.2) relies on that to multiply FPRs. Then:
//!
//! * block index = `((x >> 32) * num_blocks) >> 32`, a multiply-shift range reduction (Lemire's
//!   "fastrange") of the *upper* 32 bits, with no division;
//! * in-block bits come from the *lower* 32 bits `h = x as u32`: probe `i` tests bit
//!   `h_i >> 23` (0..=511) with `h_0 = h` and `h_{i+1} = h_i * 0x9e37_79b9 (mod 2^32)`, as in
//!   RocksDB's `FastLocalBloomImpl`. Block choice and in-block bits use disjoint bits of `x`.
//!
//! Bit `b` (0..=511) of a block is bit `b % 8` of byte `b / 8` of the block, which is the same as
//! bit `b % 64` of the little-endian 64-bit word `b / 64`.
//!
//! # Serialized format (version 1)
//!
//! All integers little-endian.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 1 | format version, `1` |
//! | 1 | 1 | `k`, the number of probes per key, `1..=64` |
//! | 2 | 2 | reserved, must be `0` |
//! | 4 | 4 | `seed` (u32) |
//! | 8 | 4 | `num_blocks` (u32), `>= 1` |
//! | 12 | 8 | `bits_per_key` as the IEEE-754 bits of an f64, finite, in `(0, 64]` |
//! | 20 | `64 * num_blocks` | the blocks, block `i` at offset `20 + 64 * i` |
//!
//! The length must be exactly `20 + 64 * num_blocks`; the reader rejects anything else. `k` is
//! stored rather than recomputed from `bits_per_key`, so a change to [`hash_count`]'s rule does
//! not break existing files.
//!
//! # No filter
//!
//! `bpk <= 0` (or NaN) or zero keys means the file has no filter:
//! [`BloomFilterBuilder::finish`] returns an empty `Vec`, the table stores no filter block, and
//! lookups go straight to the index. [`BloomFilter::decode`] rejects an empty buffer, because a
//! filter block that exists must hold a filter.

use std::f64::consts::LN_2;
use std::sync::Arc;

use crate::coding::{put_fixed32, put_fixed64, Decoder};

/// `(ln 2)^2 ~= 0.4805`, the exponent constant of the optimal Bloom FPR (DESIGN.md §1, `ln2sq`).
#[allow(
    dead_code,
    reason = "FPR math for the Monkey and Mnemosyne allocators (DESIGN.md §2-3)"
)]
pub(crate) const LN2_SQUARED: f64 = LN_2 * LN_2;

/// Version byte written at offset 0 of every serialized filter.
pub(crate) const FORMAT_VERSION: u8 = 1;

/// Length of the serialized header in bytes.
pub(crate) const HEADER_LEN: usize = 20;

/// Largest bits-per-key a filter is built with; the builder clamps larger values. Past this the
/// blocked layout's FPR is limited by the 512-bit block rather than the memory (the formula would
/// promise `exp(-ln2sq * 64) ~= 4e-14`), so more bits buy nothing.
pub(crate) const MAX_BITS_PER_KEY: f64 = 64.0;

/// Largest `k` the format accepts.
pub(crate) const MAX_HASH_COUNT: u32 = 64;

const BLOCK_BYTES: usize = 64;
const BLOCK_BITS: f64 = 512.0;
const WORDS_PER_BLOCK: usize = BLOCK_BYTES / 8;

/// Multiplier stepping the in-block probe sequence (2^32 / golden ratio, odd).
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// Shift that turns a 32-bit probe state into a bit index in `0..512`.
const PROBE_SHIFT: u32 = 32 - 9;

/// FPR of a Bloom filter with `bits_per_key` bits per key and the optimal number of hash
/// functions: `eps = exp(-ln2sq * bpk)` (DESIGN.md §1; Monkey Eq. 2). `1.0` (every probe says "maybe")
/// when `bits_per_key <= 0` or NaN, i.e. when there is no filter.
#[allow(
    dead_code,
    reason = "FPR math for the Monkey and Mnemosyne allocators (DESIGN.md §2-3)"
)]
pub(crate) fn false_positive_rate(bits_per_key: f64) -> f64 {
    super::exponential_rate(LN2_SQUARED, bits_per_key)
}

/// Inverse of [`false_positive_rate`]: `bpk = -ln(eps) / ln2sq` (DESIGN.md §1). `0.0` for
/// `rate >= 1` or NaN (no filter needed), `f64::INFINITY` for `rate <= 0`.
#[allow(
    dead_code,
    reason = "FPR math for the Monkey and Mnemosyne allocators (DESIGN.md §2-3)"
)]
pub(crate) fn bits_per_key_for_rate(rate: f64) -> f64 {
    super::exponential_bits_for_rate(LN2_SQUARED, rate)
}

/// Number of probes per key for a filter with `bits_per_key` bits per key:
/// `k = max(1, round(bpk * ln 2))`, capped at [`MAX_HASH_COUNT`].
///
/// DESIGN.md §1 allows rounding or the paper artifact's ceiling, whichever the blocked layout's
/// measured FPR favours. Rounding wins at every bpk where the two rules differ (1.5, 2, 3, 3.5,
/// 4.5, 5, 6, 7.5, 9, 10.5, 12, 13, ... 19 in steps of 0.5): in a blocked filter an extra probe
/// fills the overloaded blocks faster, so the smaller `k` gives the lower FPR. Measured with 1e6
/// inserted keys, 2e6 absent probes, seed 0
/// (`cargo test -p strata measure_hash_count_rules -- --ignored --nocapture`, which prints
/// bpk 1..=20 in steps of 0.5):
///
/// | bpk | formula | k round | FPR round | k ceil | FPR ceil |
/// | --- | --- | --- | --- | --- | --- |
/// | 2 | 0.38255 | 1 | 0.39328 | 2 | 0.39942 |
/// | 3 | 0.23661 | 2 | 0.23701 | 3 | 0.25279 |
/// | 4 | 0.14634 | 3 | 0.14770 | 3 | 0.14770 |
/// | 5 | 0.09051 | 3 | 0.09264 | 4 | 0.09352 |
/// | 6 | 0.05598 | 4 | 0.05757 | 5 | 0.06001 |
/// | 7 | 0.03463 | 5 | 0.03648 | 5 | 0.03648 |
/// | 7.5 | 0.02723 | 5 | 0.02909 | 6 | 0.03024 |
/// | 8 | 0.02142 | 6 | 0.02376 | 6 | 0.02376 |
/// | 9 | 0.01325 | 6 | 0.01498 | 7 | 0.01557 |
/// | 10 | 0.00819 | 7 | 0.00963 | 7 | 0.00963 |
/// | 12 | 0.00313 | 8 | 0.00423 | 9 | 0.00440 |
/// | 16 | 0.00046 | 11 | 0.00090 | 12 | 0.00098 |
/// | 20 | 0.00007 | 14 | 0.00023 | 14 | 0.00023 |
///
/// Up to 10 bpk the blocked FPR is within 1.2x of the formula; beyond it the 512-bit block
/// dominates (about 2x at 16 bpk, 3.3x at 20), which is what the per-layout constant `c` of DESIGN.md
/// §2 (`eps = exp(-c * bpk)`) exists to absorb.
pub(crate) fn hash_count(bits_per_key: f64) -> u32 {
    let k = (sanitize_bits_per_key(bits_per_key) * LN_2).round();
    (k as u32).clamp(1, MAX_HASH_COUNT)
}

/// The hash every filter is probed with: XXH3-64 of the user key (not the internal key, so all
/// versions of a key share one hash).
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// Stafford's Mix13 64-bit finalizer (the output stage of splitmix64): a bijection in which every
/// input bit flips every output bit with probability close to 1/2. Shared with the Ribbon filter
/// (`filter/ribbon.rs`), which remixes key hashes the same way.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The per-filter key that decorrelates filters with different seeds: `splitmix64(seed)`.
fn seed_key(seed: u32) -> u64 {
    mix64(u64::from(seed).wrapping_add(0x9e37_79b9_7f4a_7c15))
}

/// Remixes a key hash for the filter whose seed key is `seed_key`.
#[inline]
fn filter_hash(hash: u64, seed_key: u64) -> u64 {
    mix64(hash ^ seed_key)
}

/// Block for a remixed hash: fastrange of the upper 32 bits into `0..num_blocks`. The result is
/// `< num_blocks` because `(x >> 32) < 2^32`.
#[inline]
fn block_index(filter_hash: u64, num_blocks: u32) -> usize {
    (((filter_hash >> 32) * u64::from(num_blocks)) >> 32) as usize
}

/// Returns the current probe's bit index (`0..512`) and advances the probe state.
#[inline]
fn next_probe(state: &mut u32) -> u32 {
    let bit = *state >> PROBE_SHIFT;
    *state = state.wrapping_mul(PROBE_MULTIPLIER);
    bit
}

/// One cache line of the bit array. `align(64)` keeps every block on a single cache line in memory.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u64; WORDS_PER_BLOCK]);

impl Block {
    const EMPTY: Block = Block([0; WORDS_PER_BLOCK]);

    /// Sets bit `bit` (`< 512`, guaranteed by [`next_probe`]).
    #[inline]
    fn set(&mut self, bit: u32) {
        self.0[(bit >> 6) as usize] |= 1 << (bit & 63);
    }

    /// Tests bit `bit` (`< 512`, guaranteed by [`next_probe`]).
    #[inline]
    fn get(&self, bit: u32) -> bool {
        self.0[(bit >> 6) as usize] & (1 << (bit & 63)) != 0
    }
}

/// Clamps a requested bits-per-key into `[0, MAX_BITS_PER_KEY]`; NaN and negatives mean 0.
fn sanitize_bits_per_key(bits_per_key: f64) -> f64 {
    if bits_per_key > 0.0 {
        bits_per_key.min(MAX_BITS_PER_KEY)
    } else {
        0.0
    }
}

/// `max(1, ceil(keys * bpk / 512))`, saturating at `u32::MAX`.
fn block_count(keys: usize, bits_per_key: f64) -> u32 {
    // Float-to-int `as` saturates, and the clamp keeps at least one block.
    ((keys as f64 * bits_per_key) / BLOCK_BITS)
        .ceil()
        .clamp(1.0, f64::from(u32::MAX)) as u32
}

/// The false-positive rate a filter built for `keys` distinct keys at `bits_per_key` has, by its
/// actual layout rather than DESIGN.md §1's `exp(-ln2sq * bpk)`: `k` probes in one 512-bit block of
/// `max(1, ceil(keys * bpk / 512))`, so a small filter's rounding up to whole blocks lowers it,
/// and the blocks' uneven loads (Poisson, mean `keys / blocks`) raise it at high bits per key:
/// `sum_j P(j) * (1 - (1 - 1/512)^(k j))^k`. 1 without a filter. What the per-file cost model
/// on an actual tree uses (`model::tree`), so that it holds against small files too.
pub(crate) fn expected_false_positive_rate(keys: u64, bits_per_key: f64) -> f64 {
    let bits_per_key = sanitize_bits_per_key(bits_per_key);
    if bits_per_key <= 0.0 || keys == 0 {
        return 1.0;
    }
    let k = f64::from(hash_count(bits_per_key));
    let blocks = f64::from(block_count(
        usize::try_from(keys).unwrap_or(usize::MAX),
        bits_per_key,
    ));
    let mean = keys as f64 / blocks;
    let miss = 1.0 - 1.0 / BLOCK_BITS;
    // Poisson terms from j = 0, stopped well past the mean (at most a few thousand terms: the
    // mean is at most `512 / bpk` keys per block once there are several blocks).
    let last = (mean + 12.0 * mean.sqrt() + 12.0).ceil() as u64;
    let mut probability = (-mean).exp();
    let mut rate = 0.0;
    for j in 0..=last {
        if j > 0 {
            probability *= mean / j as f64;
        }
        rate += probability * (1.0 - miss.powf(k * j as f64)).powf(k);
    }
    rate.clamp(0.0, 1.0)
}

/// Bytes [`BloomFilterBuilder::finish`] returns for `keys` distinct keys at `bits_per_key`: 0
/// without a filter, else the header and `max(1, ceil(keys * bpk / 512))` 64-byte blocks. The table
/// builder sizes a whole-file filter with it before deciding whether to partition (`table/
/// partition.rs`).
pub(crate) fn serialized_len(keys: usize, bits_per_key: f64) -> u64 {
    let bits_per_key = sanitize_bits_per_key(bits_per_key);
    if bits_per_key <= 0.0 || keys == 0 {
        return 0;
    }
    HEADER_LEN as u64 + u64::from(block_count(keys, bits_per_key)) * BLOCK_BYTES as u64
}

/// Collects key hashes for one file and serializes its filter.
///
/// The number of blocks depends on the final key count, so hashes are buffered (8 bytes per key)
/// until [`finish`](Self::finish). A builder with `bits_per_key <= 0` buffers nothing. Tables
/// build their modules from the hashes they keep, with [`build_modules`]; this incremental
/// builder is what tests and fuzz targets check them against.
#[allow(
    dead_code,
    reason = "the incremental builder tests and fuzz targets use; tables build with `build_modules`"
)]
pub(crate) struct BloomFilterBuilder {
    bits_per_key: f64,
    hash_count: u32,
    seed: u32,
    keys: usize,
    hashes: Vec<u64>,
}

#[allow(
    dead_code,
    reason = "the incremental builder tests and fuzz targets use; tables build with `build_modules`"
)]
impl BloomFilterBuilder {
    /// A builder for a filter with `bits_per_key` bits per key (clamped to
    /// [`MAX_BITS_PER_KEY`]; `<= 0` or NaN means no filter) and hash seed `seed`.
    pub(crate) fn new(bits_per_key: f64, seed: u32) -> Self {
        Self::with_hash_count(bits_per_key, seed, hash_count(bits_per_key))
    }

    /// A builder with an explicit `k` (tests compare `k` rules with it).
    fn with_hash_count(bits_per_key: f64, seed: u32, hash_count: u32) -> Self {
        BloomFilterBuilder {
            bits_per_key: sanitize_bits_per_key(bits_per_key),
            hash_count: hash_count.clamp(1, MAX_HASH_COUNT),
            seed,
            keys: 0,
            hashes: Vec::new(),
        }
    }

    /// Adds a key by its [`key_hash`].
    pub(crate) fn add_hash(&mut self, hash: u64) {
        self.keys += 1;
        if self.bits_per_key > 0.0 {
            self.hashes.push(hash);
        }
    }

    /// Number of hashes added so far.
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    pub(crate) fn len(&self) -> usize {
        self.keys
    }

    /// True when no hash has been added.
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    pub(crate) fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// Serializes the filter in the format in the module doc. Returns an empty `Vec` when there is
    /// no filter (`bits_per_key <= 0` or no keys).
    pub(crate) fn finish(self) -> Vec<u8> {
        if self.bits_per_key <= 0.0 || self.hashes.is_empty() {
            return Vec::new();
        }
        let mut fill = Fill::new(
            self.bits_per_key,
            self.hash_count,
            self.seed,
            self.hashes.len(),
        );
        for &hash in &self.hashes {
            fill.add(hash);
        }
        fill.serialize()
    }
}

/// Builds one filter per `(bits_per_key, seed)` of `modules` over `hashes` (each a [`key_hash`])
/// in one pass: each hash is read once and sets its bits in every module's array, and no module
/// copies the hashes. Module `j`'s bytes are exactly what a [`BloomFilterBuilder`] given its bits
/// per key, its seed and the same hashes returns (empty for a module without bits, or without
/// keys). The table builder writes a file's modules (DESIGN.md §1) with it.
pub(crate) fn build_modules(modules: &[(f64, u32)], hashes: &[u64]) -> Vec<Vec<u8>> {
    let mut fills: Vec<Option<Fill>> = modules
        .iter()
        .map(|&(bits_per_key, seed)| {
            let bits_per_key = sanitize_bits_per_key(bits_per_key);
            (bits_per_key > 0.0 && !hashes.is_empty())
                .then(|| Fill::new(bits_per_key, hash_count(bits_per_key), seed, hashes.len()))
        })
        .collect();
    match fills.as_mut_slice() {
        // One module (every uniform file, and an elastic file's): no per-hash module loop.
        [Some(fill)] => {
            for &hash in hashes {
                fill.add(hash);
            }
        }
        fills => {
            for &hash in hashes {
                for fill in fills.iter_mut().flatten() {
                    fill.add(hash);
                }
            }
        }
    }
    fills
        .into_iter()
        .map(|fill| fill.map(Fill::serialize).unwrap_or_default())
        .collect()
}

/// One filter's bit array being filled, with what its header says.
struct Fill {
    bits_per_key: f64,
    hash_count: u32,
    seed: u32,
    seed_key: u64,
    num_blocks: u32,
    blocks: Vec<Block>,
}

impl Fill {
    /// An empty array for `keys` keys at `bits_per_key` (sanitized, `> 0`).
    fn new(bits_per_key: f64, hash_count: u32, seed: u32, keys: usize) -> Fill {
        let num_blocks = block_count(keys, bits_per_key);
        Fill {
            bits_per_key,
            hash_count,
            seed,
            seed_key: seed_key(seed),
            num_blocks,
            blocks: vec![Block::EMPTY; num_blocks as usize],
        }
    }

    /// Sets the bits of one key hash.
    #[inline]
    fn add(&mut self, hash: u64) {
        let x = filter_hash(hash, self.seed_key);
        // In bounds: block_index < num_blocks == blocks.len().
        let block = &mut self.blocks[block_index(x, self.num_blocks)];
        let mut state = x as u32;
        for _ in 0..self.hash_count {
            block.set(next_probe(&mut state));
        }
    }

    /// The filter in the format in the module doc.
    fn serialize(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.blocks.len() * BLOCK_BYTES);
        out.push(FORMAT_VERSION);
        // hash_count <= MAX_HASH_COUNT (64) fits in a byte.
        out.push(self.hash_count as u8);
        out.extend_from_slice(&[0, 0]);
        put_fixed32(&mut out, self.seed);
        put_fixed32(&mut out, self.num_blocks);
        put_fixed64(&mut out, self.bits_per_key.to_bits());
        for block in &self.blocks {
            for word in block.0 {
                out.extend_from_slice(&word.to_le_bytes());
            }
        }
        out
    }
}

/// A decoded filter, ready to probe.
///
/// [`decode`](Self::decode) copies the bit array out of the serialized bytes into 64-byte-aligned
/// blocks: the serialized array starts at offset 20 of a buffer with no alignment guarantee, where
/// a block would usually straddle two cache lines. The copy happens once per load into the cache;
/// every probe then touches exactly one cache line. The blocks are shared, so a clone costs a
/// reference count: a file's cache entry holds its modules' headers side by side (`Filter`).
#[derive(Clone)]
pub(crate) struct BloomFilter {
    blocks: Arc<[Block]>,
    num_blocks: u32,
    hash_count: u32,
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    seed: u32,
    seed_key: u64,
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    bits_per_key: f64,
}

impl BloomFilter {
    /// Parses a serialized filter. Never panics; on malformed input returns a description of the
    /// problem (the caller wraps it in `Error::Corruption` with the file name and offset).
    pub(crate) fn decode(bytes: Vec<u8>) -> Result<BloomFilter, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!(
                "bloom filter is {} bytes, shorter than its {HEADER_LEN}-byte header",
                bytes.len()
            ));
        }
        let mut decoder = Decoder::new(&bytes);
        let header = (|| {
            Some((
                decoder.u8()?,
                decoder.u8()?,
                decoder.bytes(2)?,
                decoder.fixed32()?,
                decoder.fixed32()?,
                decoder.fixed64()?,
            ))
        })();
        let Some((version, hash_count, reserved, seed, num_blocks, bits_per_key_bits)) = header
        else {
            return Err("bloom filter header is truncated".to_string());
        };
        if version != FORMAT_VERSION {
            return Err(format!(
                "unknown bloom filter format version {version} (expected {FORMAT_VERSION})"
            ));
        }
        let hash_count = u32::from(hash_count);
        if !(1..=MAX_HASH_COUNT).contains(&hash_count) {
            return Err(format!(
                "bloom filter hash count {hash_count} is outside 1..={MAX_HASH_COUNT}"
            ));
        }
        if reserved != [0, 0] {
            return Err(format!(
                "bloom filter reserved header bytes are {reserved:?}, expected zero"
            ));
        }
        if num_blocks == 0 {
            return Err("bloom filter has zero blocks".to_string());
        }
        let bits_per_key = f64::from_bits(bits_per_key_bits);
        if !(bits_per_key > 0.0 && bits_per_key <= MAX_BITS_PER_KEY) {
            return Err(format!(
                "bloom filter bits per key {bits_per_key} is outside (0, {MAX_BITS_PER_KEY}]"
            ));
        }
        let expected_len = usize::try_from(num_blocks)
            .ok()
            .and_then(|blocks| blocks.checked_mul(BLOCK_BYTES))
            .and_then(|array| array.checked_add(HEADER_LEN));
        if expected_len != Some(bytes.len()) {
            return Err(format!(
                "bloom filter is {} bytes but its header says {num_blocks} blocks \
                 ({HEADER_LEN} + 64 * {num_blocks} bytes)",
                bytes.len()
            ));
        }

        let blocks = bytes
            .get(HEADER_LEN..)
            .unwrap_or_default()
            .chunks_exact(BLOCK_BYTES)
            .map(|chunk| {
                let mut block = Block::EMPTY;
                for (word, bytes) in block.0.iter_mut().zip(chunk.chunks_exact(8)) {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(bytes);
                    *word = u64::from_le_bytes(le);
                }
                block
            })
            .collect::<Arc<[Block]>>();
        Ok(BloomFilter {
            blocks,
            num_blocks,
            hash_count,
            seed,
            seed_key: seed_key(seed),
            bits_per_key,
        })
    }

    /// False when the key whose [`key_hash`] is `hash` is certainly not in the file; true when it
    /// may be. Touches one 64-byte block; no allocation, no division.
    #[inline]
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        let x = filter_hash(hash, self.seed_key);
        let Some(block) = self.blocks.get(block_index(x, self.num_blocks)) else {
            // Unreachable: decode checked blocks.len() == num_blocks. "Maybe" is the safe answer.
            return true;
        };
        let mut state = x as u32;
        for _ in 0..self.hash_count {
            if !block.get(next_probe(&mut state)) {
                return false;
            }
        }
        true
    }

    /// Bits per key the filter was built with (from its header).
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    pub(crate) fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }

    /// Number of probes per key (from its header).
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    pub(crate) fn hash_count(&self) -> u32 {
        self.hash_count
    }

    /// Hash seed (from its header).
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    pub(crate) fn seed(&self) -> u32 {
        self.seed
    }

    /// Serialized size in bytes, `20 + 64 * num_blocks`; the decoded filter holds the same bit
    /// array, so this is also its memory charge in the block cache (plus a few words).
    pub(crate) fn size_bytes(&self) -> usize {
        HEADER_LEN + self.blocks.len() * BLOCK_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hashes of `count` distinct random-looking 8-byte keys; `offset` selects a disjoint range,
    /// so sets generated with non-overlapping ranges share no key.
    fn key_hashes(offset: u64, count: u64) -> Vec<u64> {
        (offset..offset + count)
            .map(|i| key_hash(&mix64(i.wrapping_add(0x9e37_79b9_7f4a_7c15)).to_le_bytes()))
            .collect()
    }

    fn build(builder: BloomFilterBuilder, hashes: &[u64]) -> BloomFilter {
        let mut builder = builder;
        for &hash in hashes {
            builder.add_hash(hash);
        }
        BloomFilter::decode(builder.finish()).expect("a freshly built filter decodes")
    }

    fn measured_fpr(filter: &BloomFilter, absent: &[u64]) -> f64 {
        let hits = absent
            .iter()
            .filter(|&&hash| filter.may_contain_hash(hash))
            .count();
        hits as f64 / absent.len() as f64
    }

    fn valid_filter_bytes() -> Vec<u8> {
        let mut builder = BloomFilterBuilder::new(7.5, 3);
        for hash in key_hashes(0, 200) {
            builder.add_hash(hash);
        }
        builder.finish()
    }

    #[test]
    fn fpr_formula_and_inverse() {
        assert_eq!(false_positive_rate(0.0), 1.0);
        assert_eq!(false_positive_rate(-3.0), 1.0);
        assert_eq!(false_positive_rate(f64::NAN), 1.0);
        assert!((false_positive_rate(10.0) - 0.008_191).abs() < 1e-5);
        assert!((LN2_SQUARED - 0.480_453).abs() < 1e-6);
        for bpk in [0.1, 0.5, 1.3, 2.0, 7.5, 10.0, 20.0] {
            let back = bits_per_key_for_rate(false_positive_rate(bpk));
            assert!(
                (back - bpk).abs() < 1e-9,
                "bpk {bpk} round-tripped to {back}"
            );
        }
        assert_eq!(bits_per_key_for_rate(1.0), 0.0);
        assert_eq!(bits_per_key_for_rate(2.0), 0.0);
        assert_eq!(bits_per_key_for_rate(f64::NAN), 0.0);
        assert_eq!(bits_per_key_for_rate(0.0), f64::INFINITY);
    }

    #[test]
    fn hash_count_rounds_and_stays_in_range() {
        let expected = [
            (0.0, 1),
            (0.5, 1),
            (1.3, 1),
            (2.0, 1),
            (3.0, 2),
            (5.0, 3),
            (7.5, 5),
            (10.0, 7),
            (1000.0, 44),
        ];
        for (bpk, k) in expected {
            assert_eq!(hash_count(bpk), k, "bpk {bpk}");
        }
        assert_eq!(hash_count(f64::NAN), 1);
        assert_eq!(hash_count(-1.0), 1);
    }

    #[test]
    fn no_false_negatives_for_fractional_bpk_and_several_seeds() {
        for bpk in [0.5, 1.3, 2.0, 7.5, 10.0, 23.7] {
            for seed in [0, 1, 0xdead_beef, u32::MAX] {
                for count in [1, 7, 1000, 20_000] {
                    let inserted = key_hashes(count * 31, count);
                    let filter = build(BloomFilterBuilder::new(bpk, seed), &inserted);
                    assert_eq!(filter.seed(), seed);
                    assert_eq!(filter.bits_per_key(), bpk);
                    assert_eq!(filter.hash_count(), hash_count(bpk));
                    let expected_blocks = ((count as f64 * bpk) / 512.0).ceil().max(1.0) as usize;
                    assert_eq!(filter.size_bytes(), HEADER_LEN + 64 * expected_blocks);
                    for &hash in &inserted {
                        assert!(
                            filter.may_contain_hash(hash),
                            "false negative: bpk {bpk} seed {seed} count {count}"
                        );
                    }
                }
            }
        }
    }

    /// DESIGN.md §1: measured FPR within 1.5x of `exp(-ln2sq * bpk)` for bpk 2..=10 on 1e6 keys.
    #[test]
    fn measured_fpr_is_within_1_5x_of_formula() {
        let inserted = key_hashes(0, 1_000_000);
        let absent = key_hashes(1_000_000, 1_000_000);
        for bpk in 2..=10 {
            let bpk = f64::from(bpk);
            let filter = build(BloomFilterBuilder::new(bpk, 0), &inserted);
            assert!(inserted.iter().all(|&hash| filter.may_contain_hash(hash)));
            let measured = measured_fpr(&filter, &absent);
            let formula = false_positive_rate(bpk);
            let ratio = measured / formula;
            println!(
                "bpk {bpk:>2}  k {}  formula {formula:.5}  measured {measured:.5}  ratio {ratio:.3}",
                filter.hash_count()
            );
            assert!(
                (1.0 / 1.5..=1.5).contains(&ratio),
                "bpk {bpk}: measured FPR {measured} vs formula {formula}"
            );
        }
    }

    /// The layout's expected FPR matches what a built filter measures, for large filters and for
    /// small ones whose blocks round the bits up, within 10% (or a few absent-key hits).
    #[test]
    fn expected_fpr_matches_the_measured_one() {
        let absent = key_hashes(10_000_000, 400_000);
        for (keys, bpk) in [
            (1_000_000u64, 2.0),
            (1_000_000, 6.0),
            (1_000_000, 10.0),
            (550, 2.0),
            (300, 5.0),
            (40, 10.0),
        ] {
            let inserted = key_hashes(0, keys);
            let filter = build(BloomFilterBuilder::new(bpk, 0), &inserted);
            let measured = measured_fpr(&filter, &absent);
            let expected = expected_false_positive_rate(keys, bpk);
            let slack = 5.0 / absent.len() as f64;
            assert!(
                (measured - expected).abs() <= 0.1 * expected + slack,
                "{keys} keys at {bpk}: measured {measured}, expected {expected}, formula {}",
                false_positive_rate(bpk)
            );
        }
        // Rounding up to whole blocks: 550 keys at 2 bits fill 3 blocks, 2.79 bits per key.
        assert!(expected_false_positive_rate(550, 2.0) < 0.85 * false_positive_rate(2.0));
        assert_eq!(expected_false_positive_rate(0, 10.0), 1.0);
        assert_eq!(expected_false_positive_rate(100, 0.0), 1.0);
    }

    /// The seeds modular filters actually use (`modular::module_seed`, 0..=5) at a module size of
    /// 2 bits per key: every prefix of modules passes an absent key with the product of the
    /// modules' FPRs, and no two modules share a probe pattern.
    #[test]
    fn module_seeds_make_independent_errors_at_every_depth() {
        use crate::filter::modular::{module_seed, MAX_MODULES};
        let inserted = key_hashes(0, 200_000);
        let absent = key_hashes(200_000, 1_000_000);
        let filters: Vec<BloomFilter> = (0..MAX_MODULES)
            .map(|module| build(BloomFilterBuilder::new(2.0, module_seed(module)), &inserted))
            .collect();
        let single: Vec<f64> = filters.iter().map(|f| measured_fpr(f, &absent)).collect();
        for depth in 2..=MAX_MODULES {
            let all_maybe = absent
                .iter()
                .filter(|&&hash| filters.iter().take(depth).all(|f| f.may_contain_hash(hash)))
                .count() as f64
                / absent.len() as f64;
            let product: f64 = single.iter().take(depth).product();
            println!("{depth} modules: all say maybe {all_maybe:.5}, product {product:.5}");
            // At depth 6 about 3,500 of the 1e6 absent keys pass: a few percent of sampling noise.
            assert!(
                (all_maybe / product - 1.0).abs() < 0.1,
                "{depth} modules: {all_maybe} vs product {product}"
            );
        }
    }

    #[test]
    fn serialized_len_is_what_finish_returns() {
        for (keys, bits_per_key) in [(0, 10.0), (5, 0.0), (1, 2.0), (4_500, 2.0), (1_000, 64.5)] {
            let mut builder = BloomFilterBuilder::new(bits_per_key, 0);
            for hash in key_hashes(0, keys as u64) {
                builder.add_hash(hash);
            }
            assert_eq!(
                serialized_len(keys, bits_per_key),
                builder.finish().len() as u64,
                "{keys} keys at {bits_per_key}"
            );
        }
    }

    #[test]
    fn no_bits_or_no_keys_means_no_filter() {
        for bpk in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
            let mut builder = BloomFilterBuilder::new(bpk, 0);
            for hash in key_hashes(0, 100) {
                builder.add_hash(hash);
            }
            assert_eq!(builder.len(), 100);
            assert!(builder.finish().is_empty(), "bpk {bpk} built a filter");
        }
        let builder = BloomFilterBuilder::new(10.0, 0);
        assert!(builder.is_empty());
        assert!(builder.finish().is_empty());
        assert!(BloomFilter::decode(Vec::new()).is_err());
    }

    /// A clone (a file's cache entry holding its modules by value, `Filter`) shares the bit
    /// array and answers alike.
    #[test]
    fn a_clone_shares_the_bits() {
        let filter = build(BloomFilterBuilder::new(10.0, 3), &key_hashes(0, 1_000));
        let clone = filter.clone();
        assert!(Arc::ptr_eq(&filter.blocks, &clone.blocks));
        assert_eq!(clone.size_bytes(), filter.size_bytes());
        for hash in key_hashes(0, 2_000) {
            assert_eq!(clone.may_contain_hash(hash), filter.may_contain_hash(hash));
        }
    }

    #[test]
    fn huge_bits_per_key_is_clamped() {
        let filter = build(BloomFilterBuilder::new(f64::INFINITY, 0), &key_hashes(0, 8));
        assert_eq!(filter.bits_per_key(), MAX_BITS_PER_KEY);
        assert_eq!(filter.size_bytes(), HEADER_LEN + 64);
    }

    /// Pins the format: a change to the header, the hash remix or the probe sequence breaks every
    /// existing file and must bump FORMAT_VERSION.
    #[test]
    fn serialized_format_is_pinned() {
        let bytes = valid_filter_bytes();
        // 200 keys * 7.5 bits = 1500 bits -> 3 blocks.
        assert_eq!(bytes.len(), HEADER_LEN + 3 * 64);
        let mut header = vec![1u8, 5, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0];
        header.extend_from_slice(&7.5f64.to_bits().to_le_bytes());
        assert_eq!(&bytes[..HEADER_LEN], &header[..]);
        assert_eq!(xxhash_rust::xxh3::xxh3_64(&bytes), PINNED_FILTER_XXH3);
    }

    const PINNED_FILTER_XXH3: u64 = 7_760_898_089_880_062_173;

    #[test]
    fn decode_names_what_is_wrong() {
        let valid = valid_filter_bytes();
        let cases: [(usize, u8, &str); 4] = [
            (0, 2, "version"),
            (1, 0, "hash count"),
            (2, 1, "reserved"),
            (8, 4, "blocks"),
        ];
        for (offset, value, needle) in cases {
            let mut bytes = valid.clone();
            bytes[offset] = value;
            let error = BloomFilter::decode(bytes).err().expect("corrupt header");
            assert!(error.contains(needle), "{error:?} should mention {needle}");
        }
        let mut zero_blocks = valid.clone();
        zero_blocks[8] = 0;
        let error = BloomFilter::decode(zero_blocks).err().expect("zero blocks");
        assert!(error.contains("zero blocks"), "{error}");
        let mut nan_bpk = valid.clone();
        nan_bpk[12..20].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
        let error = BloomFilter::decode(nan_bpk).err().expect("NaN bpk");
        assert!(error.contains("bits per key"), "{error}");
        let mut extra = valid;
        extra.push(0);
        assert!(BloomFilter::decode(extra).is_err());
    }

    proptest! {
        #[test]
        fn decode_never_panics_on_random_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..400)
        ) {
            if let Ok(filter) = BloomFilter::decode(bytes) {
                filter.may_contain_hash(0);
            }
        }

        #[test]
        fn decode_rejects_every_truncation(cut in 0usize..(HEADER_LEN + 3 * 64)) {
            let mut bytes = valid_filter_bytes();
            bytes.truncate(cut);
            prop_assert!(BloomFilter::decode(bytes).is_err());
        }

        #[test]
        fn decode_never_panics_on_corrupted_filters(
            edits in proptest::collection::vec((0usize..HEADER_LEN + 3 * 64, any::<u8>()), 1..8),
            probe in any::<u64>(),
        ) {
            let mut bytes = valid_filter_bytes();
            for (offset, value) in edits {
                bytes[offset] = value;
            }
            if let Ok(filter) = BloomFilter::decode(bytes) {
                filter.may_contain_hash(probe);
            }
        }
    }

    /// Compares the two `k` rules DESIGN.md §1 allows on the blocked layout; the numbers in
    /// [`hash_count`]'s doc come from here. Slow-ish; run with
    /// `cargo test -p strata measure_hash_count_rules -- --ignored --nocapture`.
    #[test]
    #[ignore = "measurement, not a check; prints the table behind hash_count's doc"]
    fn measure_hash_count_rules() {
        let inserted = key_hashes(0, 1_000_000);
        let absent = key_hashes(1_000_000, 2_000_000);
        println!("| bpk | formula | k round | FPR round | k ceil | FPR ceil |");
        for tenths in (10..=200).step_by(5) {
            let bpk = f64::from(tenths) / 10.0;
            let k_round = hash_count(bpk);
            let k_ceil = ((bpk * LN_2).ceil() as u32).max(1);
            let fpr = |k| {
                let filter = build(BloomFilterBuilder::with_hash_count(bpk, 0, k), &inserted);
                measured_fpr(&filter, &absent)
            };
            let round = fpr(k_round);
            let ceil = if k_ceil == k_round {
                round
            } else {
                fpr(k_ceil)
            };
            println!(
                "| {bpk} | {:.5} | {k_round} | {round:.5} | {k_ceil} | {ceil:.5} |",
                false_positive_rate(bpk)
            );
        }
    }
}
