//! Standard Ribbon filter with 128-bit coefficient rows and interleaved solution storage
//! (Dillinger & Walzer 2021, "Ribbon filter: practically smaller than Bloom and Xor"), modelled on
//! RocksDB's `Standard128Ribbon`: a static filter with a real-valued bits per key chosen per file,
//! like the Bloom filter of [`super::bloom`] (DESIGN.md §1), but with a lower FPR at equal memory.
//!
//! # Why
//!
//! A Bloom filter needs `1.44 * log2(1/eps)` bits per key (the blocked layout a little more). A
//! Ribbon filter stores, for `m` slots, an `m x r` bit matrix `S` (the *solution*) such that for
//! every inserted key the key's 128-bit coefficient row `c(key)`, placed at the key's start slot,
//! selects rows of `S` whose XOR equals the key's `r`-bit result row `h(key)`. An absent key
//! matches its own result row only by chance, `2^-r`; the memory is `r` bits per slot and there are
//! only 3-7% more slots than keys, so the filter needs about `1.06 * log2(1/eps)` bits
//! per key: roughly 30% less than Bloom for the same FPR. The price is construction time (a
//! Gaussian elimination, "banding", plus back substitution) and a hashes buffer, both paid once
//! per file at flush or compaction time; a probe reads one or two adjacent 16-byte segments per
//! result column, all within a few cache lines.
//!
//! # Hashing
//!
//! Callers pass [`key_hash`](super::bloom::key_hash) (XXH3-64 of the user key). Each filter
//! remixes it with a 64-bit *hash key* derived from the filter's seed and the construction attempt that succeeded
//! (see below): `x = mix64(hash ^ hash_key)` with
//! `hash_key = mix64((attempt << 32 | seed) + 0x9e37_79b9_7f4a_7c15)` (for attempt 0 this is the
//! Bloom filter's `splitmix64(seed)`). The map `(seed, attempt) -> hash_key` is injective, so two
//! filters over the same keys with different seeds use different remixes and make independent
//! errors, which the modular filter (Mnemosyne §4.2) relies on. From `x`:
//!
//! * start slot `s = (x * num_starts) >> 64` (Lemire's multiply-shift range reduction on all 64
//!   bits), `num_starts = 128 * (num_blocks - 1) + 1`;
//! * coefficient row `c`: low 64 bits `mix64(x ^ K1)`, high 64 bits `mix64(x ^ K2)`, lowest bit
//!   forced to 1 (so the row's first coefficient is at its start, as in RocksDB's
//!   `kFirstCoeffAlwaysOne`);
//! * result row `h = mix64(x ^ K3)`, of which a probe compares the low `columns` bits.
//!
//! The three constants are distinct, so `c` and `h` are pseudo-random functions of `x` that look
//! independent of each other and of `s`: an absent key's result row is independent of what the
//! solution answers for its `(s, c)`, which is what makes the FPR exactly `2^-columns`.
//!
//! # Interleaved solution storage and real-valued bits per key
//!
//! The `m = 128 * num_blocks` slots form blocks of 128 slots. Block `b` stores its part of `S`
//! column-major as `columns_b` 16-byte *segments*: segment `j` holds column `j` of the block's 128
//! rows, bit `k` of the little-endian `u128` being slot `128 * b + k`. The blocks below
//! `upper_start_block` have `upper_columns - 1` columns, the others `upper_columns`, and block `b`'s
//! first segment is segment `b * upper_columns - min(b, upper_start_block)`. A key that starts in
//! block `b` at bit `k` is checked against `columns_b` columns: for column `j`, the parity of
//! `(segment(b, j) & c << k) ^ (segment(b + 1, j) & c >> (128 - k))` must equal bit `j` of `h`
//! (the second term only when `k > 0`; block `b + 1` always has at least `columns_b` columns).
//! Mixing `r - 1` and `r` columns makes every multiple of 16 bytes a valid size, so a filter of
//! `n` keys at `bpk` bits per key holds `ceil(n * bpk / 128)` segments, i.e. `n * bpk / 8` bytes
//! rounded up to 16 (at least one segment; at most 64 columns per block, which caps the bits per
//! key at [`MAX_BITS_PER_KEY`] anyway). The last block is always an upper one.
//!
//! Unlike RocksDB, which needs at least two blocks, a filter of up to about 120 keys has a single
//! block (`num_starts = 1`: every row starts at slot 0 and the system is a dense one). RocksDB
//! avoids that because its coefficient rows are cheap expansions of 64 hash bits; here both
//! halves are full remixes, and the measured failure rate of one-block systems is in
//! [`block_count`]'s doc. Tiny filters still pay for the block: one key at 10 bits per key gets
//! one 16-byte segment over 128 slots, a single column, FPR 1/2 (the Bloom filter spends a
//! 64-byte block on it). [`expected_false_positive_rate`] prices every size exactly.
//!
//! # Slots and construction (see [`block_count`])
//!
//! Banding fails when the keys' rows are linearly dependent with inconsistent results, which
//! becomes likely when slots are too few. The number of slots is `m = 128 * num_blocks` with
//! `num_blocks = max(1, ceil(n * slots_per_key(n) / 128))`; see [`slots_per_key`] for the rule
//! and [`block_count`] for its measured first-attempt failure rate (about 1%, at most 6% for a
//! one-block filter). On failure the builder retries with the next *attempt* number (a new hash
//! key, hence independent rows): [`ATTEMPTS_PER_SIZE`] attempts per size, then it adds
//! [`GROWTH_PER_STEP`] of the base slots and tries again, up to [`MAX_ATTEMPTS`] attempts in all.
//! The solution's byte size never changes with the attempt (only how many columns each block
//! gets), so [`serialized_len`] is exact. Each attempt costs at most `128` row operations per key,
//! so the work is bounded by `MAX_ATTEMPTS * 128 * n` row XORs (in practice 1.00 to 1.06
//! attempts on average, by the measurement). If every attempt fails, which the measured rates put far beyond
//! any practical concern, the builder writes an *unsolved* filter of the same size that answers
//! "maybe" to every probe: correct (no false negatives), only useless.
//!
//! Duplicate hashes (a key added twice) give identical rows and results, which banding reduces to
//! the empty equation `0 = 0`: harmless.
//!
//! # FPR model ([`false_positive_rate`])
//!
//! With `b = bpk / f` bits per slot, where `f` is the slots-per-key overhead, a Ribbon filter has
//! `eps = 2^-b = exp(-(ln 2 / f) * bpk)`: the form `eps = exp(-c * bpk)` of DESIGN.md §2 with
//! `c = ln 2 / f` instead of Bloom's `ln2sq`. The model fixes `f` at [`MODEL_SLOTS_PER_KEY`].
//! The interleaved layout's exact expectation mixes `2^-(r-1)` and `2^-r` linearly
//! ([`expected_false_positive_rate`]), which lies up to 6% above `2^-b` between whole columns.
//!
//! Measured with 10^6 inserted and 10^6 absent keys, seed 0, against the blocked Bloom filter
//! given the same bytes (`cargo test -p strata --lib measured_fpr_is_near_the_model_and_below_bloom
//! -- --nocapture`):
//!
//! | bpk | model | layout's expectation | Ribbon measured | Bloom measured, same bytes | Bloom / Ribbon |
//! | --- | --- | --- | --- | --- | --- |
//! | 2 | 0.26974 | 0.27732 | 0.27674 | 0.39373 | 1.42 |
//! | 3 | 0.14009 | 0.14548 | 0.14531 | 0.23650 | 1.63 |
//! | 4 | 0.07276 | 0.07616 | 0.07576 | 0.14784 | 1.95 |
//! | 5 | 0.03779 | 0.03979 | 0.03962 | 0.09282 | 2.34 |
//! | 6 | 0.01963 | 0.02075 | 0.02059 | 0.05767 | 2.80 |
//! | 7 | 0.01019 | 0.01080 | 0.01073 | 0.03644 | 3.40 |
//! | 8 | 0.00529 | 0.00561 | 0.00554 | 0.02341 | 4.23 |
//! | 9 | 0.00275 | 0.00291 | 0.00286 | 0.01503 | 5.25 |
//! | 10 | 0.00143 | 0.00151 | 0.00151 | 0.00967 | 6.39 |
//!
//! Measured over model: 1.03 to 1.06 (10^6 keys get `f = 1.0577` slots per key, and every whole
//! bits per key here falls between whole columns). Ribbon at 7 bits per key (0.0107) is about as
//! selective as Bloom at 10 (0.0097): 30% fewer bits for the same FPR.
//!
//! # Serialized format (version 2)
//!
//! All integers little-endian. Byte 0 distinguishes it from the Bloom filter (version 1), so a
//! reader can dispatch on it.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 1 | format version, `2` |
//! | 1 | 1 | `upper_columns`, `1..=64` |
//! | 2 | 1 | `attempt`, the construction attempt whose hash key solved the system, `0..32` |
//! | 3 | 1 | state: `0` solved, `1` unsolved (every probe answers "maybe"; the segments are zero) |
//! | 4 | 4 | `seed` (u32) |
//! | 8 | 4 | `num_blocks` (u32), `>= 1`; `128 * num_blocks` slots |
//! | 12 | 4 | `upper_start_block` (u32), `< num_blocks` |
//! | 16 | 8 | `bits_per_key` as the IEEE-754 bits of an f64, finite, in `(0, 64]` |
//! | 24 | `16 * segments` | the segments, `segments = num_blocks * upper_columns - upper_start_block` |
//!
//! The length must be exactly `24 + 16 * segments`; the reader rejects anything else.
//!
//! # Modules of one system (version 3)
//!
//! A modular filter (DESIGN.md §1.3) stores several modules per file, or per filter partition,
//! and needs their false positives independent so that the file's FPR is their product. Separate
//! Ribbon filters get that from separate seeds, at the price of one linear system each: banding
//! is most of a build's time, so three modules cost about three times one filter's build.
//! Instead, [`build_modules`] bands *one* system whose result rows carry every module's result
//! bits side by side: module `j` owns the `upper_columns_j` bits starting at its *result shift*
//! `shift_j = upper_columns_0 + ... + upper_columns_(j-1)` of the key's result row `h`. All
//! modules share the slot count (it depends on the key count alone, [`block_count`]), the hash
//! key (the system's first module's seed) and hence every key's start slot and coefficient row;
//! each keeps its own segment count (its bits per key) and so its own column layout over the
//! shared blocks. Banding reduces coefficient rows the same way whatever result bits ride along,
//! and back substitution solves each column on its own, so one banding and one back
//! substitution over the sum of the columns give every module's solution; each module is then
//! written as a block of its own, probe-able alone.
//!
//! Independence: for an absent key, whether module `j` says "maybe" depends on the solution's
//! answer for the key's `(start, coefficients)` and on bits `shift_j..` of `h`; the modules'
//! bits of `h` are disjoint bits of a remix independent of `(start, coefficients)`, so given the
//! row each module matches with its own `2^-columns` independently of the others. What the row
//! still shares is its start block, and with it how many columns each module checks there:
//! modules whose fewer-column (*lower*) blocks coincide would pass the same absent keys more
//! often than their product (three modules of 3 bits per key with their lower blocks first, as
//! version 2 places them, passed 1.09x the product of two modules' rates, measured). So every
//! module after a system's first places its lower blocks as a cyclic run starting where the
//! product rule over the modules before it holds (`independent_lower_start`, a sliding window over
//! the blocks). A row starting in an upper block whose next block is lower reads only the next
//! block's columns (the one such block per run costs its straddling starts a column;
//! `expected_false_positive_rate` counts it). Measured in `shared_modules_make_independent_errors`:
//! each module within 3% of its layout's expectation, two and three modules within 1.6% and 2.6%
//! of the product. Each module's own FPR is that of a filter of its bits per key built alone:
//! the same columns and lower-block count.
//!
//! A system holds at most 64 result columns (the result row is a `u64`): modules are packed in
//! probe order, a module that does not fit starting the next system with its own seed (a file's
//! modules are six at most; elastic filters' 5-bit modules take about 5 columns each). More
//! result bits in the equations make an attempt's failure a little likelier (a dependent row
//! must agree on more bits), within the rates measured with all 64 bits in [`block_count`]'s doc.
//!
//! The first module of a system (result shift 0) is written as version 2, byte for byte the
//! filter built alone when the same attempt solves both (the usual case). The others are
//! version 3: the version-2 header with byte 0 = `3` (`upper_start_block` now counting the lower
//! blocks), then five more header bytes,
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 24 | 1 | `result_shift`, `1..=64 - upper_columns`: the first result bit the module compares |
//! | 25 | 4 | `lower_start` (u32), `< num_blocks`: the lower blocks are the `upper_start_block` blocks from it on, wrapping past the last to block 0 |
//! | 29 | `16 * segments` | the segments, as in version 2 (blocks in slot order) |
//!
//! and a probe compares column `j` with bit `result_shift + j` of `h`. The seed field is the
//! system's seed. The length must be exactly `29 + 16 * segments`. [`serialized_len`] is a
//! version-2 block's size; a version-3 module is five bytes longer.
//!
//! # Back substitution
//!
//! After banding, slot `i` holds at most one equation, whose first coefficient is at `i`;
//! solving from the last slot down, the solution row of slot `i` (one bit per result column) is
//! its result row XOR the solution rows of the slots `i + k` its coefficients `k >= 1` select,
//! and 0 for an empty slot. A column at a time (RocksDB's `InterleavedBackSubst`) this costs
//! about 26 instructions per column and slot, which made a system of an elastic filter's six
//! level-0 modules (30 columns) three times a uniform filter's (10). Systems of 8 or more columns
//! instead solve every column at once from tables of the XORs of each group of 4 solved rows
//! (`Banding::back_substitute_rows`): 32 lookups a slot and a bit-matrix transpose into the
//! block's segments, about 225 instructions a slot whatever the column count. Both give the same
//! solution, so the filter's bytes do not depend on which one ran.
//!
//! # No filter
//!
//! As for Bloom: `bpk <= 0` (or NaN) or zero keys means no filter, [`RibbonFilterBuilder::finish`]
//! returns an empty `Vec`, and [`RibbonFilter::decode`] rejects an empty buffer.

use std::f64::consts::LN_2;

use crate::coding::{put_fixed32, put_fixed64, Decoder};
use crate::filter::bloom::mix64;

/// Version byte at offset 0 of a serialized Ribbon filter (the Bloom filter's is 1).
pub(crate) const FORMAT_VERSION: u8 = 2;

/// Length of the serialized header in bytes.
pub(crate) const HEADER_LEN: usize = 24;

/// Version byte of a module of a shared system that reads result bits past bit 0 (module doc,
/// "Modules of one system").
pub(crate) const SHARED_FORMAT_VERSION: u8 = 3;

/// Length of a version-3 header: version 2's, the result shift byte and the lower run's start.
pub(crate) const SHARED_HEADER_LEN: usize = HEADER_LEN + 5;

/// Largest bits per key a filter is built with; the builder clamps larger values. At about 1.06
/// slots per key this is about 61 columns, close to the 64 a result row holds.
pub(crate) const MAX_BITS_PER_KEY: f64 = 64.0;

/// Most result columns per block: the result row is a `u64`.
pub(crate) const MAX_COLUMNS: u32 = 64;

/// Construction attempts with one number of slots before the builder adds slots.
pub(crate) const ATTEMPTS_PER_SIZE: u32 = 4;

/// Most construction attempts in all; the attempt number is stored in one header byte.
pub(crate) const MAX_ATTEMPTS: u32 = 32;

/// Fraction of the base slots added after every [`ATTEMPTS_PER_SIZE`] failed attempts.
pub(crate) const GROWTH_PER_STEP: f64 = 1.0 / 32.0;

/// The slots-per-key overhead `f` of the FPR model `eps = 2^-(bpk / f)`: what
/// [`slots_per_key`] gives for a file of 2^20 (about 10^6) keys, `1.03 + 0.004 * 7`. Smaller files
/// do better and larger ones worse: at 10 bits per key a file of 10^4 keys (`f = 1.031`) has a
/// 16% lower FPR than the model, one of 10^7 keys (`f = 1.071`) an 8% higher one
/// ([`expected_false_positive_rate`] has the exact figure for a given size).
pub(crate) const MODEL_SLOTS_PER_KEY: f64 = 1.058;

/// Width of a coefficient row and of a block, in slots.
const COEFF_BITS: u64 = 128;

/// Bytes of one segment (one column of one block).
const SEGMENT_BYTES: usize = 16;

/// Header byte 3 of a solved filter.
const STATE_SOLVED: u8 = 0;

/// Header byte 3 of a filter whose construction gave up: every probe answers "maybe".
const STATE_UNSOLVED: u8 = 1;

/// Remix constants deriving the coefficient row's halves and the result row from `x`.
const COEFF_LOW_KEY: u64 = 0x6a09_e667_f3bc_c908;
const COEFF_HIGH_KEY: u64 = 0xbb67_ae85_84ca_a73b;
const RESULT_KEY: u64 = 0x3c6e_f372_fe94_f82b;

/// FPR model of a Ribbon filter with `bits_per_key` bits per key: `eps = 2^-(bpk / f)` with
/// `f = MODEL_SLOTS_PER_KEY` slots per key (module doc, "FPR model"). `1.0` when
/// `bits_per_key <= 0` or NaN (no filter).
pub(crate) fn false_positive_rate(bits_per_key: f64) -> f64 {
    super::exponential_rate(LN_2 / MODEL_SLOTS_PER_KEY, bits_per_key)
}

/// Inverse of [`false_positive_rate`]: `bpk = -f * log2(eps)`. `0.0` for `rate >= 1` or NaN,
/// `f64::INFINITY` for `rate <= 0`.
#[allow(
    dead_code,
    reason = "FPR math for the allocators once Ribbon filters are wired into tables"
)]
pub(crate) fn bits_per_key_for_rate(rate: f64) -> f64 {
    super::exponential_bits_for_rate(LN_2 / MODEL_SLOTS_PER_KEY, rate)
}

/// Slots per key for `keys` keys, `f(n) = 1.03 + 0.004 * max(0, log2(n) - 13)`: how much larger
/// than the key count the linear system is made so that banding succeeds on the first attempt
/// with high probability. Strata's own rule, fitted to a measurement rather than RocksDB's tables
/// (which it agrees with: RocksDB's 5%-failure overhead is 1.036 at 2^17 slots, growing 0.0038 per
/// doubling).
///
/// Banding capacity, measured by adding keys to an empty system until the first failure (all 64
/// result bits in the equations, the worst case), as slots per key at which a given fraction of
/// first attempts fail (`cargo test -p strata --lib measure_banding_capacity -- --ignored
/// --nocapture`):
///
/// | slots | trials | 50% | 5% | 1% | 0.1% |
/// | --- | --- | --- | --- | --- | --- |
/// | 128 | 4000 | 1.0079 | 1.0407 | 1.0579 | 1.0847 |
/// | 256 | 4000 | 1.0119 | 1.0281 | 1.0407 | 1.0535 |
/// | 1024 | 4000 | 1.0099 | 1.0220 | 1.0312 | 1.0407 |
/// | 4096 | 2000 | 1.0086 | 1.0222 | 1.0317 | 1.0407 |
/// | 16384 | 2000 | 1.0112 | 1.0260 | 1.0372 | 1.0501 |
/// | 65536 | 1000 | 1.0180 | 1.0331 | 1.0399 | 1.0438 |
/// | 262144 | 400 | 1.0256 | 1.0424 | 1.0504 | 1.0591 |
/// | 1048576 | 100 | 1.0323 | 1.0472 | 1.0563 | 1.0594 |
///
/// Up to a few thousand keys about 1.03 keeps failures near 1%; past that the needed overhead
/// grows about 0.0035 per doubling of the key count (a Ribbon system's failure probability
/// rises with its size at a fixed ratio). The rule tracks the 1% column from above at 64k keys
/// and more, and lies between the 5% and 1% columns below; rounding up to whole blocks adds
/// slack for small filters. Every extra 1% of slots costs the FPR a factor `2^(0.01 * bpk)`
/// (7% at 10 bits per key), which is why the rule does not aim lower than about 1%: a failed
/// attempt only costs one more banding pass. The rule's measured first-attempt failure rate is in
/// [`block_count`]'s doc.
pub(crate) fn slots_per_key(keys: u64) -> f64 {
    let log2_keys = (keys.max(1) as f64).log2();
    1.03 + 0.004 * (log2_keys - 13.0).max(0.0)
}

/// Blocks of 128 slots for `keys` keys on construction attempt `attempt`: the base count
/// `max(1, ceil(keys * slots_per_key(keys) / 128))`, grown by [`GROWTH_PER_STEP`] of it (at least
/// one block) after every [`ATTEMPTS_PER_SIZE`] attempts. Saturates at `u32::MAX`.
///
/// Measured with the builder's schedule at the worst key counts (the largest that still get a
/// given number of blocks, so rounding adds no slack), all 64 result bits in the equations
/// (`cargo test -p strata --lib measure_construction_failure_rate -- --ignored --nocapture`):
///
/// | blocks | keys | slots per key | trials | first-attempt failures | rate | mean attempts |
/// | --- | --- | --- | --- | --- | --- | --- |
/// | 1 | 124 | 1.0323 | 4000 | 223 | 0.0558 | 1.0590 |
/// | 2 | 248 | 1.0323 | 4000 | 71 | 0.0177 | 1.0180 |
/// | 8 | 994 | 1.0302 | 4000 | 33 | 0.0083 | 1.0083 |
/// | 32 | 3976 | 1.0302 | 2000 | 21 | 0.0105 | 1.0105 |
/// | 128 | 15848 | 1.0338 | 1000 | 13 | 0.0130 | 1.0130 |
/// | 512 | 62908 | 1.0418 | 400 | 3 | 0.0075 | 1.0075 |
/// | 2048 | 249727 | 1.0497 | 200 | 1 | 0.0050 | 1.0050 |
/// | 8192 | 991395 | 1.0577 | 60 | 0 | 0.0000 | 1.0000 |
///
/// Retries use independent hash keys, so the chance that all four attempts at the base size
/// fail is about the fourth power of the rate (about 10^-5 for a one-block filter, the worst
/// case) before any slots are added.
pub(crate) fn block_count(keys: u64, attempt: u32) -> u32 {
    let base = (keys as f64 * slots_per_key(keys) / COEFF_BITS as f64)
        .ceil()
        .clamp(1.0, f64::from(u32::MAX));
    let steps = f64::from(attempt / ATTEMPTS_PER_SIZE);
    let grown = base + (base * GROWTH_PER_STEP).ceil() * steps;
    // Float-to-int `as` saturates.
    grown.min(f64::from(u32::MAX)) as u32
}

/// Clamps a requested bits-per-key into `[0, MAX_BITS_PER_KEY]`; NaN and negatives mean 0.
fn sanitize_bits_per_key(bits_per_key: f64) -> f64 {
    if bits_per_key > 0.0 {
        bits_per_key.min(MAX_BITS_PER_KEY)
    } else {
        0.0
    }
}

/// Solution segments for `keys` keys at `bits_per_key` (already sanitized, `> 0`):
/// `ceil(keys * bpk / 128)`, at least 1 and at most [`MAX_COLUMNS`] per base block.
fn segment_count(keys: u64, bits_per_key: f64) -> u64 {
    let wanted = (keys as f64 * bits_per_key / COEFF_BITS as f64).ceil();
    let most = u64::from(block_count(keys, 0)) * u64::from(MAX_COLUMNS);
    // Float-to-int `as` saturates; the clamp keeps at least one segment.
    (wanted.max(1.0) as u64).clamp(1, most)
}

/// How `segments` segments are spread over `num_blocks` blocks: `upper_start_block` blocks get
/// `upper_columns - 1` columns (the *lower* blocks), the others `upper_columns`. The lower blocks
/// are the cyclic run of `upper_start_block` blocks from `lower_start`: the blocks below
/// `upper_start_block` for a version-2 filter (`lower_start == 0`), anywhere for a version-3
/// module (module doc, "Modules of one system").
#[derive(Clone, Copy, Debug, PartialEq)]
struct ColumnLayout {
    num_blocks: u32,
    upper_columns: u32,
    upper_start_block: u32,
    lower_start: u32,
}

impl ColumnLayout {
    /// The layout of `segments >= 1` segments over `num_blocks >= 1` blocks, capped at
    /// [`MAX_COLUMNS`] columns (the builder never asks for more; see [`segment_count`]), its lower
    /// blocks first.
    fn new(num_blocks: u32, segments: u64) -> ColumnLayout {
        let blocks = u64::from(num_blocks.max(1));
        let upper_columns = segments.div_ceil(blocks).clamp(1, u64::from(MAX_COLUMNS));
        // upper_columns * blocks >= segments, and the difference is below `blocks`.
        let upper_start_block = (upper_columns * blocks)
            .saturating_sub(segments)
            .min(blocks - 1);
        ColumnLayout {
            num_blocks: num_blocks.max(1),
            upper_columns: upper_columns as u32,
            upper_start_block: upper_start_block as u32,
            lower_start: 0,
        }
    }

    /// Total segments, `num_blocks * upper_columns - upper_start_block`.
    fn segments(&self) -> u64 {
        u64::from(self.num_blocks) * u64::from(self.upper_columns)
            - u64::from(self.upper_start_block)
    }

    /// `128 * (num_blocks - 1) + 1`: a key starting at the last start still ends in the last slot.
    fn num_starts(&self) -> u64 {
        num_starts(self.num_blocks)
    }

    /// Lower blocks below `block` (`block <= num_blocks`): the run `[lower_start, lower_start +
    /// lower)` and its part wrapped past the last block, `[lower_start - num_blocks, ...)`.
    #[inline]
    fn lower_before(&self, block: u64) -> u64 {
        let start = u64::from(self.lower_start);
        let end = start + u64::from(self.upper_start_block);
        let blocks = u64::from(self.num_blocks);
        let unwrapped = block.min(end).saturating_sub(start);
        let wrapped = block.min(end.saturating_sub(blocks));
        unwrapped + wrapped
    }

    /// Columns of block `block` and the index of its first segment.
    #[inline]
    fn block_columns(&self, block: u64) -> (usize, usize) {
        let upper = u64::from(self.upper_columns);
        if self.lower_start == 0 {
            let upper_start = u64::from(self.upper_start_block);
            let first = block * upper - block.min(upper_start);
            let columns = if block < upper_start {
                upper - 1
            } else {
                upper
            };
            return (columns as usize, first as usize);
        }
        let before = self.lower_before(block);
        let lower = self.lower_before(block + 1) - before;
        ((upper - lower) as usize, (block * upper - before) as usize)
    }

    /// Expected FPR of this layout: starts are uniform over `num_starts`; a start at bit 0 of a
    /// block checks the block's columns, any other the fewer of its block's and the next's (the
    /// row reads both). Lower blocks first, a start checks `upper_columns - 1` columns in the
    /// lower blocks only; a run of lower blocks after an upper block also costs that block's
    /// 127 straddling starts a column.
    fn expected_false_positive_rate(&self) -> f64 {
        let blocks = u64::from(self.num_blocks);
        let lower = u64::from(self.upper_start_block);
        let last_is_lower = self.lower_before(blocks) - self.lower_before(blocks - 1) == 1;
        let lower_not_last = lower - u64::from(last_is_lower);
        let straddles_into_run = self.lower_start > 0 && lower > 0 && lower < blocks;
        let reduced = COEFF_BITS * lower_not_last
            + u64::from(last_is_lower)
            + if straddles_into_run {
                COEFF_BITS - 1
            } else {
                0
            };
        let reduced_fraction = reduced as f64 / self.num_starts() as f64;
        let upper_rate = 0.5f64.powi(self.upper_columns as i32);
        reduced_fraction * 2.0 * upper_rate + (1.0 - reduced_fraction) * upper_rate
    }
}

/// The expected FPR of the filter [`RibbonFilterBuilder::finish`] builds for `keys` distinct keys
/// at `bits_per_key` on its first attempt, by its actual layout (module doc, "FPR model"): tiny
/// filters, whose one or two blocks round the slots up, and any bits per key between whole
/// columns are priced exactly. 1 without a filter.
pub(crate) fn expected_false_positive_rate(keys: u64, bits_per_key: f64) -> f64 {
    let bits_per_key = sanitize_bits_per_key(bits_per_key);
    if bits_per_key <= 0.0 || keys == 0 {
        return 1.0;
    }
    ColumnLayout::new(block_count(keys, 0), segment_count(keys, bits_per_key))
        .expected_false_positive_rate()
}

/// Bytes [`RibbonFilterBuilder::finish`] returns for `keys` keys at `bits_per_key`: 0 without a
/// filter, else the header and `ceil(keys * bpk / 128)` 16-byte segments (at least one, at most
/// 64 per block). Independent of how many construction attempts the build takes.
#[allow(
    dead_code,
    reason = "table builder sizing once Ribbon filters are wired into tables"
)]
pub(crate) fn serialized_len(keys: usize, bits_per_key: f64) -> u64 {
    let bits_per_key = sanitize_bits_per_key(bits_per_key);
    if bits_per_key <= 0.0 || keys == 0 {
        return 0;
    }
    HEADER_LEN as u64 + segment_count(keys as u64, bits_per_key) * SEGMENT_BYTES as u64
}

/// Starts of a system of `num_blocks >= 1` blocks, `128 * (num_blocks - 1) + 1`: a key starting
/// at the last start still ends in the last slot.
fn num_starts(num_blocks: u32) -> u64 {
    COEFF_BITS * (u64::from(num_blocks.max(1)) - 1) + 1
}

/// The remix key of construction attempt `attempt` of a filter with seed `seed` (module doc,
/// "Hashing"): injective in `(seed, attempt)`, and for attempt 0 equal to the Bloom filter's.
fn hash_key(seed: u32, attempt: u32) -> u64 {
    mix64((u64::from(attempt) << 32 | u64::from(seed)).wrapping_add(0x9e37_79b9_7f4a_7c15))
}

/// One key's equation: where its row starts, its coefficients and its result bits.
#[derive(Clone, Copy, Default)]
struct Row {
    start: u64,
    coefficients: u128,
    result: u64,
}

/// Start slot of the remixed hash `x`: multiply-shift range reduction into `0..num_starts`.
#[inline]
fn start_slot(x: u64, num_starts: u64) -> u64 {
    ((u128::from(x) * u128::from(num_starts)) >> 64) as u64
}

impl Row {
    #[inline]
    fn new(hash: u64, hash_key: u64, num_starts: u64) -> Row {
        let x = mix64(hash ^ hash_key);
        let low = mix64(x ^ COEFF_LOW_KEY);
        let high = mix64(x ^ COEFF_HIGH_KEY);
        Row {
            start: start_slot(x, num_starts),
            coefficients: (u128::from(high) << 64 | u128::from(low)) | 1,
            result: mix64(x ^ RESULT_KEY),
        }
    }
}

/// Parity of the set bits of `value`.
#[inline]
fn parity(value: u128) -> u64 {
    u64::from(((value as u64) ^ ((value >> 64) as u64)).count_ones() & 1)
}

/// One slot of the banding: the equation whose first coefficient is at this slot (zero
/// coefficients and result if none is). Coefficients and result share one 32-byte entry, so a
/// banding step touches one cache line.
#[derive(Clone, Copy, Default)]
struct Equation {
    coefficients: u128,
    result: u64,
}

/// The banding (the upper-triangular band matrix being built) for one attempt, and the rows of
/// the attempt in the order they are banded.
struct Banding {
    equations: Vec<Equation>,
    rows: Vec<Row>,
    block_ends: Vec<usize>,
}

impl Banding {
    fn new() -> Banding {
        Banding {
            equations: Vec::new(),
            rows: Vec::new(),
            block_ends: Vec::new(),
        }
    }

    /// Puts the rows of `hashes` under hash key `key` in `self.rows`, ordered by the block of
    /// their start slot (a counting sort, two passes over the hashes), so that banding walks the
    /// equations from the first block to the last instead of jumping across a table of 32 bytes
    /// per slot that a large file's filter makes far bigger than the CPU's caches.
    ///
    /// The order changes nothing in the filter: a consistent system's equations after banding
    /// span the rows' space whatever the order, their leading slots are the pivot columns of
    /// that space (the same for every echelon form), and back substitution sets every other
    /// slot to 0, which leaves one solution; an inconsistent system is inconsistent in any
    /// order. (`banding_order_does_not_change_the_filter` checks it.)
    fn order_rows(&mut self, hashes: &[u64], key: u64, num_blocks: u32) {
        let num_starts = num_starts(num_blocks);
        let blocks = num_blocks as usize;
        self.block_ends.clear();
        self.block_ends.resize(blocks + 1, 0);
        for &hash in hashes {
            // start < num_starts = 128 * (num_blocks - 1) + 1, so the block is < num_blocks.
            let block = (start_slot(mix64(hash ^ key), num_starts) / COEFF_BITS) as usize;
            if let Some(count) = self.block_ends.get_mut(block + 1) {
                *count += 1;
            }
        }
        // block_ends[b] becomes the first position of block b's rows.
        for block in 1..=blocks {
            self.block_ends[block] += self.block_ends[block - 1];
        }
        self.rows.clear();
        self.rows.resize(hashes.len(), Row::default());
        for &hash in hashes {
            let row = Row::new(hash, key, num_starts);
            let block = (row.start / COEFF_BITS) as usize;
            if let Some(next) = self.block_ends.get_mut(block) {
                if let Some(slot) = self.rows.get_mut(*next) {
                    *slot = row;
                }
                *next += 1;
            }
        }
    }

    /// Clears the banding for `slots` slots, reusing the allocation between attempts.
    fn reset(&mut self, slots: usize) {
        self.equations.clear();
        self.equations.resize(slots, Equation::default());
    }

    /// On-the-fly Gaussian elimination (Dillinger & Walzer §3, RocksDB's `BandingAdd`): walk from
    /// the row's start; an empty slot takes the row, an occupied one is XORed into it, which
    /// clears the leading coefficient, and the walk moves to the next set coefficient. False when
    /// the row reduces to `0 = 1` (this attempt cannot be solved). At most 128 steps: each one
    /// moves at least one slot right and the row spans 128 slots.
    fn add(&mut self, row: Row, result_mask: u64) -> bool {
        let mut slot = row.start as usize;
        let mut coefficients = row.coefficients;
        let mut result = row.result & result_mask;
        loop {
            // `slot <= start + 127 < slots`: the row's last coefficient never moves past its
            // start's block end, and `num_starts + 127 == slots`.
            let Some(existing) = self.equations.get_mut(slot) else {
                return false;
            };
            if existing.coefficients == 0 {
                *existing = Equation {
                    coefficients,
                    result,
                };
                return true;
            }
            coefficients ^= existing.coefficients;
            result ^= existing.result;
            if coefficients == 0 {
                return result == 0;
            }
            let shift = coefficients.trailing_zeros();
            slot += shift as usize;
            coefficients >>= shift;
        }
    }

    /// Back substitution (module doc, "Back substitution"): solution row `i` (every result
    /// column's bit of slot `i`) is `result(i) ^ XOR of the solution rows i + k over the set
    /// coefficients k >= 1 of row(i)` (0 for an empty slot: a free variable). Systems of at least
    /// [`ROW_MAJOR_MIN_COLUMNS`] columns solve all of them together from nibble tables
    /// ([`back_substitute_rows`](Self::back_substitute_rows)), smaller ones a column at a time
    /// ([`back_substitute_columns`](Self::back_substitute_columns)); both give the same
    /// solution. Every module of the system takes its columns of each block at its result shift.
    fn back_substitute(&self, num_blocks: u32, modules: &[ModuleLayout]) -> Vec<Vec<u128>> {
        if system_columns(modules) >= ROW_MAJOR_MIN_COLUMNS {
            self.back_substitute_rows(num_blocks, modules)
        } else {
            self.back_substitute_columns(num_blocks, modules)
        }
    }

    /// Back substitution a column at a time, interleaved (RocksDB's `InterleavedBackSubst`):
    /// from the last slot down, solution bit `j` of slot `i` is
    /// `result_j(i) ^ parity(row(i) & S_j[i+1..])`. `state[j]` holds column `j` of the 128 slots
    /// above the current one, so a block's finished state is its segment for column `j`. About
    /// 26 instructions per column and slot.
    fn back_substitute_columns(&self, num_blocks: u32, modules: &[ModuleLayout]) -> Vec<Vec<u128>> {
        let mut segments = empty_segments(modules);
        let columns = system_columns(modules) as usize;
        let mut state = [0u128; MAX_COLUMNS as usize];
        for block in (0..u64::from(num_blocks)).rev() {
            let begin = (block * COEFF_BITS) as usize;
            let end = begin + COEFF_BITS as usize;
            for equation in self
                .equations
                .get(begin..end)
                .unwrap_or_default()
                .iter()
                .rev()
            {
                for (column, column_state) in state.iter_mut().take(columns).enumerate() {
                    let shifted = *column_state << 1;
                    let bit =
                        parity(shifted & equation.coefficients) ^ ((equation.result >> column) & 1);
                    *column_state = shifted | u128::from(bit);
                }
            }
            copy_block_columns(block, &state, modules, &mut segments);
        }
        segments
    }

    /// Back substitution of every column at once, a row at a time ("the method of four
    /// Russians"): slots are taken in aligned groups of 4, and once a group is solved a table of
    /// the 16 XORs of its solution rows is kept, so that a row's XOR over the up to 127 solved
    /// rows its coefficients select is 32 table lookups (one per nibble of the coefficients past
    /// the row's own group) and at most 3 single rows (the row's own group). The tables of the
    /// 32 groups above the current one live in a ring of 64, each written twice (at `g % 64` and
    /// `g % 64 + 64`) so the 32 a row reads are contiguous. A block's 128 solution rows are then
    /// transposed into its columns. About 225 instructions per slot, transposes included,
    /// whatever the column count (callgrind profile of `scripts/elastic_fill_instructions.sh`'s
    /// fills: 67 million instructions over 297,000 slots).
    fn back_substitute_rows(&self, num_blocks: u32, modules: &[ModuleLayout]) -> Vec<Vec<u128>> {
        const GROUPS_PER_BLOCK: usize = COEFF_BITS as usize / 4;
        let mut segments = empty_segments(modules);
        let mut tables = vec![[0u64; 16]; 2 * RING_GROUPS];
        for block in (0..num_blocks as usize).rev() {
            let begin = block * COEFF_BITS as usize;
            let Some(equations) = self
                .equations
                .get(begin..begin + COEFF_BITS as usize)
                .and_then(|equations| <&[Equation; COEFF_BITS as usize]>::try_from(equations).ok())
            else {
                // Unreachable: the banding has 128 slots per block.
                continue;
            };
            let mut rows = [0u64; COEFF_BITS as usize];
            for group in (0..GROUPS_PER_BLOCK).rev() {
                let absolute = block * GROUPS_PER_BLOCK + group;
                let above = (absolute + 1) % RING_GROUPS;
                let Some(window) = tables
                    .get(above..above + RING_GROUPS / 2)
                    .and_then(|window| <&[[u64; 16]; RING_GROUPS / 2]>::try_from(window).ok())
                else {
                    // Unreachable: `above + 32 <= 95 < 128`.
                    continue;
                };
                for within in (0..4).rev() {
                    let slot = group * 4 + within;
                    let equation = equations[slot];
                    let coefficients = equation.coefficients;
                    let mut row = equation.result;
                    // The solved slots of the row's own group, `slot + 1 ..= group * 4 + 3`.
                    for k in 1..4 - within {
                        if (coefficients >> k) & 1 == 1 {
                            row ^= rows[slot + k];
                        }
                    }
                    // Nibble `n` of `rest` selects slots of group `absolute + 1 + n`.
                    let rest = coefficients >> (4 - within);
                    let (low, high) = (rest as u64, (rest >> 64) as u64);
                    for (n, table) in window.iter().take(16).enumerate() {
                        row ^= table[((low >> (4 * n)) & 15) as usize];
                    }
                    for (n, table) in window.iter().skip(16).enumerate() {
                        row ^= table[((high >> (4 * n)) & 15) as usize];
                    }
                    rows[slot] = row;
                }
                let mut table = [0u64; 16];
                for nibble in 1..16usize {
                    table[nibble] = table[nibble & (nibble - 1)]
                        ^ rows[group * 4 + nibble.trailing_zeros() as usize];
                }
                let at = absolute % RING_GROUPS;
                tables[at] = table;
                tables[at + RING_GROUPS] = table;
            }
            let state = transpose_block(&rows);
            copy_block_columns(block as u64, &state, modules, &mut segments);
        }
        segments
    }
}

/// Systems with this many result columns or more use row-major back substitution
/// (`Banding::back_substitute_rows`): at about 225 instructions per slot against about 26 per
/// column and slot a column at a time, the two are about even from 8 to 10 columns (a uniform
/// 10-bit filter's builds took 2% fewer instructions) and row-major is cheaper beyond.
const ROW_MAJOR_MIN_COLUMNS: u32 = 8;

/// Groups of 4 slots whose nibble tables row-major back substitution keeps (twice each): the
/// 32 groups a row's coefficients reach past its own group, and room for the group being solved.
const RING_GROUPS: usize = 64;

/// Every module's segments, zeroed.
fn empty_segments(modules: &[ModuleLayout]) -> Vec<Vec<u128>> {
    modules
        .iter()
        .map(|module| vec![0u128; module.layout.segments() as usize])
        .collect()
}

/// Copies block `block`'s columns (`state[j]`: column `j` of the block's 128 slots) into each
/// module's segments, from the module's result shift on.
fn copy_block_columns(
    block: u64,
    state: &[u128; MAX_COLUMNS as usize],
    modules: &[ModuleLayout],
    segments: &mut [Vec<u128>],
) {
    for (module, out) in modules.iter().zip(segments.iter_mut()) {
        let (module_columns, first) = module.layout.block_columns(block);
        let shift = module.shift as usize;
        if let (Some(out), Some(state)) = (
            out.get_mut(first..first + module_columns),
            state.get(shift..shift + module_columns),
        ) {
            out.copy_from_slice(state);
        }
    }
}

/// The columns of a block's 128 solution rows: bit `k` of column `j` is bit `j` of `rows[k]`.
/// Two 64 x 64 bit-matrix transposes by block swaps (Warren, "Hacker's Delight", 2nd ed., §7-3),
/// one per half of the block.
fn transpose_block(rows: &[u64; COEFF_BITS as usize]) -> [u128; MAX_COLUMNS as usize] {
    let mut low = [0u64; 64];
    let mut high = [0u64; 64];
    low.copy_from_slice(&rows[..64]);
    high.copy_from_slice(&rows[64..]);
    transpose64(&mut low);
    transpose64(&mut high);
    let mut columns = [0u128; MAX_COLUMNS as usize];
    for ((column, &low), &high) in columns.iter_mut().zip(&low).zip(&high) {
        *column = u128::from(high) << 64 | u128::from(low);
    }
    columns
}

/// Transposes a 64 x 64 bit matrix in place: afterwards bit `k` of `m[j]` is what bit `j` of
/// `m[k]` was. Six rounds; round `width` swaps, in every pair of rows `k` and `k + width` (`k`
/// without bit `width`), the high `width`-bit halves of `m[k]`'s `2 * width`-bit fields with the
/// low halves of `m[k + width]`'s.
fn transpose64(m: &mut [u64; 64]) {
    let mut width = 32;
    let mut mask: u64 = 0x0000_0000_ffff_ffff;
    while width != 0 {
        for k in 0..64 {
            if k & width == 0 {
                let swap = ((m[k] >> width) ^ m[k + width]) & mask;
                m[k + width] ^= swap;
                m[k] ^= swap << width;
            }
        }
        width >>= 1;
        mask ^= mask << width;
    }
}

/// One module of a system: its layout and the first result bit it compares (its *result shift*).
#[derive(Clone, Copy, Debug, PartialEq)]
struct ModuleLayout {
    layout: ColumnLayout,
    shift: u32,
}

/// Result columns a system carries for `modules`: the sum of their upper columns (each module's
/// shift is the sum of the ones before it).
fn system_columns(modules: &[ModuleLayout]) -> u32 {
    modules
        .iter()
        .map(|module| module.layout.upper_columns)
        .sum()
}

/// The layouts of modules of `segments` segments each over `num_blocks` blocks, shifted one after
/// another into the result row. The first module has its lower blocks first (version 2); every
/// other module's run of lower blocks starts where [`independent_lower_start`] puts it.
fn module_layouts(num_blocks: u32, segments: &[u64]) -> Vec<ModuleLayout> {
    let mut shift = 0;
    let mut modules: Vec<ModuleLayout> = Vec::with_capacity(segments.len());
    for &segments in segments {
        let mut layout = ColumnLayout::new(num_blocks, segments);
        if !modules.is_empty() {
            layout.lower_start = independent_lower_start(&modules, layout);
        }
        modules.push(ModuleLayout { layout, shift });
        shift += layout.upper_columns;
    }
    modules
}

/// Where a module's run of lower blocks starts so that its errors are independent of the modules
/// `before` it in the system (module doc, "Modules of one system"). A probe of an absent key
/// starting in block `b` matches module `i` with probability `2^-upper_columns_i * (1 + x_i(b))`,
/// `x_i(b)` 1 in a lower block and 0 elsewhere; the first `j + 1` modules' product rule holds when
/// `E[prod_i (1 + x_i)] = prod_i (1 + q_i)`, `q_i` module `i`'s lower fraction. With
/// `g(b) = prod_{i < j} (1 + x_i(b))` that asks the run to cover `sum g` of
/// `n * prod_{i <= j} (1 + q_i) - sum_b g(b)`; a sliding window over the cyclic starts finds the
/// closest (weights: 128 starts a block, 1 in the last). `O(num_blocks * modules)`.
fn independent_lower_start(before: &[ModuleLayout], layout: ColumnLayout) -> u32 {
    let blocks = layout.num_blocks as usize;
    let run = layout.upper_start_block as usize;
    if run == 0 || blocks < 2 {
        return 0;
    }
    let weight = |block: usize| if block + 1 == blocks { 1.0 } else { 128.0 };
    let g: Vec<f64> = (0..blocks)
        .map(|block| {
            let product: f64 = before
                .iter()
                .map(|module| {
                    let lower = module.layout.lower_before(block as u64 + 1)
                        - module.layout.lower_before(block as u64);
                    1.0 + lower as f64
                })
                .product();
            product * weight(block)
        })
        .collect();
    let starts: f64 = (0..blocks).map(weight).sum();
    let fraction = |module: &ColumnLayout| {
        let lower_starts: f64 = (0..blocks)
            .filter(|&block| {
                module.lower_before(block as u64 + 1) > module.lower_before(block as u64)
            })
            .map(weight)
            .sum();
        lower_starts / starts
    };
    let own = ColumnLayout {
        lower_start: 0,
        ..layout
    };
    let wanted: f64 = before
        .iter()
        .map(|module| 1.0 + fraction(&module.layout))
        .product::<f64>()
        * (1.0 + fraction(&own))
        * starts
        - g.iter().sum::<f64>();
    let mut window: f64 = g.iter().take(run).sum();
    let mut best = (f64::INFINITY, 0);
    for start in 0..blocks {
        let miss = (window - wanted).abs();
        if miss < best.0 {
            best = (miss, start);
        }
        window += g[(start + run) % blocks] - g[start];
    }
    best.1 as u32
}

/// The result mask of a system of `columns` result columns (`1..=64`): bits a probe never reads are
/// left out of the equations, so they cannot make them inconsistent.
fn result_mask(columns: u32) -> u64 {
    u64::MAX >> (u64::from(MAX_COLUMNS) - u64::from(columns.clamp(1, MAX_COLUMNS)))
}

/// Tries to band every hash with the hash key of `attempt` into `num_blocks` blocks, keeping the
/// result bits of `result_mask`; true when all of them fit.
fn band(
    hashes: &[u64],
    seed: u32,
    attempt: u32,
    num_blocks: u32,
    result_mask: u64,
    banding: &mut Banding,
) -> bool {
    let num_starts = num_starts(num_blocks);
    let key = hash_key(seed, attempt);
    banding.reset((u64::from(num_blocks) * COEFF_BITS) as usize);
    if num_blocks == 1 {
        // One block: every row starts at slot 0, and the banding fits the cache anyway.
        return hashes
            .iter()
            .all(|&hash| banding.add(Row::new(hash, key, num_starts), result_mask));
    }
    banding.order_rows(hashes, key, num_blocks);
    let rows = std::mem::take(&mut banding.rows);
    let solved = rows.iter().all(|&row| banding.add(row, result_mask));
    banding.rows = rows;
    solved
}

/// [`band`] in the hashes' own order (tests compare the filters the two orders give).
#[cfg(test)]
fn band_in_insertion_order(
    hashes: &[u64],
    seed: u32,
    attempt: u32,
    num_blocks: u32,
    result_mask: u64,
    banding: &mut Banding,
) -> bool {
    let num_starts = num_starts(num_blocks);
    let key = hash_key(seed, attempt);
    banding.reset((u64::from(num_blocks) * COEFF_BITS) as usize);
    hashes
        .iter()
        .all(|&hash| banding.add(Row::new(hash, key, num_starts), result_mask))
}

/// How an attempt bands its rows: [`band`], or in tests [`band_in_insertion_order`].
type BandFn = fn(&[u64], u32, u32, u32, u64, &mut Banding) -> bool;

/// Collects key hashes for one file and serializes its Ribbon filter.
///
/// The system's size depends on the final key count, so hashes are buffered (8 bytes per key)
/// until [`finish`](Self::finish); a builder with `bits_per_key <= 0` buffers nothing.
/// `finish` needs another 32 bytes per slot for the banding and, with two or more blocks, 32 bytes
/// per key for the rows in banding order (`Banding::order_rows`), freed before it returns.
#[allow(
    dead_code,
    reason = "the incremental builder tests and fuzz targets use; tables build from a slice (`build`)"
)]
pub(crate) struct RibbonFilterBuilder {
    bits_per_key: f64,
    seed: u32,
    keys: usize,
    hashes: Vec<u64>,
}

#[allow(
    dead_code,
    reason = "the incremental builder tests and fuzz targets use; tables build from a slice (`build`)"
)]
impl RibbonFilterBuilder {
    /// A builder for a filter with `bits_per_key` bits per key (clamped to
    /// [`MAX_BITS_PER_KEY`]; `<= 0` or NaN means no filter) and hash seed `seed`.
    pub(crate) fn new(bits_per_key: f64, seed: u32) -> Self {
        RibbonFilterBuilder {
            bits_per_key: sanitize_bits_per_key(bits_per_key),
            seed,
            keys: 0,
            hashes: Vec::new(),
        }
    }

    /// Adds a key by its [`bloom::key_hash`](super::bloom::key_hash). Adding a key twice is
    /// harmless.
    pub(crate) fn add_hash(&mut self, hash: u64) {
        self.keys += 1;
        if self.bits_per_key > 0.0 {
            self.hashes.push(hash);
        }
    }

    /// Number of hashes added so far.
    pub(crate) fn len(&self) -> usize {
        self.keys
    }

    /// True when no hash has been added.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// Solves and serializes the filter in the format in the module doc. Returns an empty `Vec`
    /// when there is no filter (`bits_per_key <= 0` or no keys).
    pub(crate) fn finish(self) -> Vec<u8> {
        self.finish_with_attempts(MAX_ATTEMPTS)
    }

    /// [`finish`](Self::finish) giving up after `max_attempts` attempts (tests reach the unsolved
    /// fallback with it).
    fn finish_with_attempts(self, max_attempts: u32) -> Vec<u8> {
        build_with_attempts(
            self.bits_per_key,
            self.seed,
            &self.hashes,
            max_attempts,
            band,
        )
    }
}

/// The filter a [`RibbonFilterBuilder`] with `bits_per_key` and `seed` given `hashes` returns,
/// built from the slice without copying it (tests compare it with [`build_modules`]'s modules).
#[cfg(test)]
pub(crate) fn build(bits_per_key: f64, seed: u32, hashes: &[u64]) -> Vec<u8> {
    build_with_attempts(
        sanitize_bits_per_key(bits_per_key),
        seed,
        hashes,
        MAX_ATTEMPTS,
        band,
    )
}

/// [`build`] banding the rows in the hashes' own order (tests compare the two orders).
#[cfg(test)]
pub(crate) fn build_in_insertion_order(bits_per_key: f64, seed: u32, hashes: &[u64]) -> Vec<u8> {
    build_with_attempts(
        sanitize_bits_per_key(bits_per_key),
        seed,
        hashes,
        MAX_ATTEMPTS,
        band_in_insertion_order,
    )
}

/// The modules of one file's (or one filter partition's) filter, one per `(bits_per_key, seed)`
/// of `modules`, in order, over the same `hashes` (module doc, "Modules of one system"): the
/// modules are packed, in order, into as few linear systems as hold their result columns (64 a
/// system), each system banded and solved once for all its modules. A system's hash key is its
/// first module's seed's; its first module is the filter [`build`] gives for that module alone
/// when the same attempt solves both (version 2), the others are version-3 blocks reading the
/// result bits after it. A module without bits, or every module without keys, is an empty `Vec`.
pub(crate) fn build_modules(modules: &[(f64, u32)], hashes: &[u64]) -> Vec<Vec<u8>> {
    build_modules_with_attempts(modules, hashes, MAX_ATTEMPTS)
}

/// [`build_modules`] giving up after `max_attempts` attempts per system.
fn build_modules_with_attempts(
    modules: &[(f64, u32)],
    hashes: &[u64],
    max_attempts: u32,
) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(); modules.len()];
    if hashes.is_empty() {
        return out;
    }
    let keys = hashes.len() as u64;
    let base_blocks = block_count(keys, 0);
    // (module index, sanitized bits per key) of the current system, and its result columns.
    let mut system: Vec<(usize, f64)> = Vec::new();
    let mut columns = 0;
    let mut seed = 0;
    for (index, &(bits_per_key, module_seed)) in modules.iter().enumerate() {
        let bits_per_key = sanitize_bits_per_key(bits_per_key);
        if bits_per_key <= 0.0 {
            continue;
        }
        // Columns are most at the base size: later attempts only add blocks.
        let upper_columns =
            ColumnLayout::new(base_blocks, segment_count(keys, bits_per_key)).upper_columns;
        if !system.is_empty() && columns + upper_columns > MAX_COLUMNS {
            solve_into(&system, seed, hashes, max_attempts, band, &mut out);
            system.clear();
            columns = 0;
        }
        if system.is_empty() {
            seed = module_seed;
        }
        system.push((index, bits_per_key));
        columns += upper_columns;
    }
    if !system.is_empty() {
        solve_into(&system, seed, hashes, max_attempts, band, &mut out);
    }
    out
}

/// Solves the system of `system`'s modules (index into `out`, sanitized bits per key) with hash
/// seed `seed` and puts each module's block at its index.
fn solve_into(
    system: &[(usize, f64)],
    seed: u32,
    hashes: &[u64],
    max_attempts: u32,
    band: BandFn,
    out: &mut [Vec<u8>],
) {
    let bits: Vec<f64> = system
        .iter()
        .map(|&(_, bits_per_key)| bits_per_key)
        .collect();
    let blocks = solve_system(&bits, seed, hashes, max_attempts, band);
    for (&(index, _), block) in system.iter().zip(blocks) {
        if let Some(slot) = out.get_mut(index) {
            *slot = block;
        }
    }
}

/// [`build`] giving up after `max_attempts` attempts, banding each attempt with `band`;
/// `bits_per_key` already sanitized.
fn build_with_attempts(
    bits_per_key: f64,
    seed: u32,
    hashes: &[u64],
    max_attempts: u32,
    band: BandFn,
) -> Vec<u8> {
    if bits_per_key <= 0.0 || hashes.is_empty() {
        return Vec::new();
    }
    solve_system(&[bits_per_key], seed, hashes, max_attempts, band)
        .pop()
        .unwrap_or_default()
}

/// Bands and solves one system for modules of `bits_per_key` each (sanitized, `> 0`, their
/// upper columns summing to at most 64 at the base size) over non-empty `hashes` with hash seed
/// `seed`, giving up after `max_attempts` attempts; returns each module's serialized block.
fn solve_system(
    bits_per_key: &[f64],
    seed: u32,
    hashes: &[u64],
    max_attempts: u32,
    band: BandFn,
) -> Vec<Vec<u8>> {
    let keys = hashes.len() as u64;
    let segments: Vec<u64> = bits_per_key
        .iter()
        .map(|&bits_per_key| segment_count(keys, bits_per_key))
        .collect();
    let mut banding = Banding::new();
    let mut last = module_layouts(block_count(keys, 0), &segments);
    for attempt in 0..max_attempts.min(MAX_ATTEMPTS) {
        let num_blocks = block_count(keys, attempt);
        let modules = module_layouts(num_blocks, &segments);
        last.clone_from(&modules);
        let mask = result_mask(system_columns(&modules));
        if band(hashes, seed, attempt, num_blocks, mask, &mut banding) {
            let solutions = banding.back_substitute(num_blocks, &modules);
            return modules
                .iter()
                .zip(bits_per_key)
                .zip(&solutions)
                .map(|((module, &bits), solution)| {
                    serialize(bits, seed, module, attempt, STATE_SOLVED, solution)
                })
                .collect();
        }
    }
    let attempt = max_attempts.clamp(1, MAX_ATTEMPTS) - 1;
    last.iter()
        .zip(bits_per_key)
        .map(|(module, &bits)| {
            let zeros = vec![0u128; module.layout.segments() as usize];
            serialize(bits, seed, module, attempt, STATE_UNSOLVED, &zeros)
        })
        .collect()
}

/// A module in the format in the module doc: version 2 at result shift 0, else version 3.
fn serialize(
    bits_per_key: f64,
    seed: u32,
    module: &ModuleLayout,
    attempt: u32,
    state: u8,
    segments: &[u128],
) -> Vec<u8> {
    let layout = &module.layout;
    let shared = module.shift > 0;
    let header_len = if shared {
        SHARED_HEADER_LEN
    } else {
        HEADER_LEN
    };
    let mut out = Vec::with_capacity(header_len + segments.len() * SEGMENT_BYTES);
    out.push(if shared {
        SHARED_FORMAT_VERSION
    } else {
        FORMAT_VERSION
    });
    // Both fit a byte: upper_columns <= MAX_COLUMNS = 64, attempt < MAX_ATTEMPTS = 32.
    out.push(layout.upper_columns as u8);
    out.push(attempt as u8);
    out.push(state);
    put_fixed32(&mut out, seed);
    put_fixed32(&mut out, layout.num_blocks);
    put_fixed32(&mut out, layout.upper_start_block);
    put_fixed64(&mut out, bits_per_key.to_bits());
    if shared {
        // shift < MAX_COLUMNS = 64: the system's columns sum to at most 64.
        out.push(module.shift as u8);
        put_fixed32(&mut out, layout.lower_start);
    }
    for segment in segments {
        out.extend_from_slice(&segment.to_le_bytes());
    }
    out
}

/// A decoded Ribbon filter, ready to probe. [`decode`](Self::decode) copies the segments into
/// `u128`s (16-byte aligned), once per load into the cache.
pub(crate) struct RibbonFilter {
    segments: Vec<u128>,
    layout: ColumnLayout,
    num_starts: u64,
    hash_key: u64,
    /// The first result bit this module compares (0 for version 2; module doc, "Modules of one
    /// system").
    result_shift: u32,
    solved: bool,
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    attempt: u32,
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    seed: u32,
    #[allow(
        dead_code,
        reason = "self-description read by tests and, later, `strata inspect`"
    )]
    bits_per_key: f64,
}

#[allow(
    dead_code,
    reason = "the table builder and reader dispatch to Ribbon filters in a later change"
)]
impl RibbonFilter {
    /// Parses a serialized filter. Never panics; on malformed input returns a description of the
    /// problem (the caller wraps it in `Error::Corruption` with the file name and offset).
    // Long: the header's fields are read and checked one after another in their on-disk order
    // (docs/FORMAT.md), each check using the ones before.
    pub(crate) fn decode(bytes: Vec<u8>) -> Result<RibbonFilter, String> {
        let header_len = match bytes.first() {
            Some(&SHARED_FORMAT_VERSION) => SHARED_HEADER_LEN,
            _ => HEADER_LEN,
        };
        if bytes.len() < header_len {
            return Err(format!(
                "ribbon filter is {} bytes, shorter than its {header_len}-byte header",
                bytes.len()
            ));
        }
        let mut decoder = Decoder::new(&bytes);
        let header = (|| {
            Some((
                decoder.u8()?,
                decoder.u8()?,
                decoder.u8()?,
                decoder.u8()?,
                decoder.fixed32()?,
                decoder.fixed32()?,
                decoder.fixed32()?,
                decoder.fixed64()?,
                if header_len == SHARED_HEADER_LEN {
                    (decoder.u8()?, decoder.fixed32()?)
                } else {
                    (0, 0)
                },
            ))
        })();
        let Some((
            version,
            upper_columns,
            attempt,
            state,
            seed,
            num_blocks,
            upper_start_block,
            bits_per_key_bits,
            (result_shift, lower_start),
        )) = header
        else {
            return Err("ribbon filter header is truncated".to_string());
        };
        if version != FORMAT_VERSION && version != SHARED_FORMAT_VERSION {
            return Err(format!(
                "unknown ribbon filter format version {version} (expected {FORMAT_VERSION} or \
                 {SHARED_FORMAT_VERSION})"
            ));
        }
        let upper_columns = u32::from(upper_columns);
        if !(1..=MAX_COLUMNS).contains(&upper_columns) {
            return Err(format!(
                "ribbon filter column count {upper_columns} is outside 1..={MAX_COLUMNS}"
            ));
        }
        let result_shift = u32::from(result_shift);
        if version == SHARED_FORMAT_VERSION
            && !(1..=MAX_COLUMNS - upper_columns).contains(&result_shift)
        {
            return Err(format!(
                "ribbon filter result shift {result_shift} is outside 1..={} for \
                 {upper_columns} columns of a 64-bit result row (shift 0 is written as version \
                 {FORMAT_VERSION})",
                MAX_COLUMNS - upper_columns
            ));
        }
        let attempt = u32::from(attempt);
        if attempt >= MAX_ATTEMPTS {
            return Err(format!(
                "ribbon filter construction attempt {attempt} is outside 0..{MAX_ATTEMPTS}"
            ));
        }
        if state != STATE_SOLVED && state != STATE_UNSOLVED {
            return Err(format!("ribbon filter state {state} is neither 0 nor 1"));
        }
        if num_blocks == 0 {
            return Err("ribbon filter has zero blocks".to_string());
        }
        if upper_start_block >= num_blocks {
            return Err(format!(
                "ribbon filter upper start block {upper_start_block} is not below its \
                 {num_blocks} blocks"
            ));
        }
        let bits_per_key = f64::from_bits(bits_per_key_bits);
        if !(bits_per_key > 0.0 && bits_per_key <= MAX_BITS_PER_KEY) {
            return Err(format!(
                "ribbon filter bits per key {bits_per_key} is outside (0, {MAX_BITS_PER_KEY}]"
            ));
        }
        if lower_start >= num_blocks {
            return Err(format!(
                "ribbon filter lower blocks start at block {lower_start}, not below its \
                 {num_blocks} blocks"
            ));
        }
        let layout = ColumnLayout {
            num_blocks,
            upper_columns,
            upper_start_block,
            lower_start,
        };
        // No overflow: num_blocks < 2^32 and upper_columns <= 64, so segments < 2^38.
        let segments = layout.segments();
        let expected_len = usize::try_from(segments)
            .ok()
            .and_then(|segments| segments.checked_mul(SEGMENT_BYTES))
            .and_then(|array| array.checked_add(header_len));
        if expected_len != Some(bytes.len()) {
            return Err(format!(
                "ribbon filter is {} bytes but its header says {segments} segments \
                 ({header_len} + 16 * {segments} bytes: {num_blocks} blocks of \
                 {upper_columns} columns, the first {upper_start_block} with one fewer)",
                bytes.len()
            ));
        }
        let segments: Vec<u128> = bytes
            .get(header_len..)
            .unwrap_or_default()
            .chunks_exact(SEGMENT_BYTES)
            .map(|chunk| {
                let mut le = [0u8; SEGMENT_BYTES];
                le.copy_from_slice(chunk);
                u128::from_le_bytes(le)
            })
            .collect();
        let solved = state == STATE_SOLVED;
        if !solved && segments.iter().any(|&segment| segment != 0) {
            return Err("unsolved ribbon filter has non-zero segments".to_string());
        }
        Ok(RibbonFilter {
            segments,
            layout,
            num_starts: layout.num_starts(),
            hash_key: hash_key(seed, attempt),
            result_shift,
            solved,
            attempt,
            seed,
            bits_per_key,
        })
    }

    /// False when the key whose [`bloom::key_hash`](super::bloom::key_hash) is `hash` is
    /// certainly not in the file; true when it may be. Reads `columns` segments of the start
    /// block and, unless the row starts on a block boundary, as many of the next (adjacent)
    /// block; stops at the first column that disagrees. No allocation, no division by a
    /// variable.
    #[inline]
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        if !self.solved {
            return true;
        }
        let row = Row::new(hash, self.hash_key, self.num_starts);
        let block = row.start / COEFF_BITS;
        let bit = (row.start % COEFF_BITS) as u32;
        let (columns, first) = self.layout.block_columns(block);
        let Some(here) = self.segments.get(first..first + columns) else {
            // Unreachable: decode checked the segment count against the layout. "Maybe" is the
            // safe answer.
            return true;
        };
        let left = row.coefficients << bit;
        let result = row.result >> self.result_shift;
        if bit == 0 {
            for (column, &segment) in here.iter().enumerate() {
                if parity(segment & left) != (result >> column) & 1 {
                    return false;
                }
            }
            return true;
        }
        // The row straddles into the next block, which starts right after this block's
        // segments. With the lower blocks first it has at least `columns` columns; a version-3
        // module's run of lower blocks may follow an upper block, whose straddling rows then
        // check the next block's fewer columns.
        let checked = if self.layout.lower_start == 0 {
            columns
        } else {
            columns.min(self.layout.block_columns(block + 1).0)
        };
        let Some(next) = self
            .segments
            .get(first + columns..first + columns + checked)
        else {
            return true;
        };
        let right = row.coefficients >> (COEFF_BITS as u32 - bit);
        for (column, (&segment, &next_segment)) in here.iter().zip(next).enumerate() {
            if parity((segment & left) ^ (next_segment & right)) != (result >> column) & 1 {
                return false;
            }
        }
        true
    }

    /// Bits per key the filter was built with (from its header).
    pub(crate) fn bits_per_key(&self) -> f64 {
        self.bits_per_key
    }

    /// Hash seed the filter was built with (from its header); the remix also depends on
    /// [`attempt`](Self::attempt).
    pub(crate) fn seed(&self) -> u32 {
        self.seed
    }

    /// The construction attempt whose hash key solved the system (from its header).
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// False for the fallback filter of a construction that gave up, which answers "maybe" to
    /// every probe.
    pub(crate) fn is_solved(&self) -> bool {
        self.solved
    }

    /// The layout's expected FPR (module doc, "FPR model"); 1 for an unsolved filter.
    pub(crate) fn expected_false_positive_rate(&self) -> f64 {
        if self.solved {
            self.layout.expected_false_positive_rate()
        } else {
            1.0
        }
    }

    /// The first result bit the filter compares: 0 for version 2, the bits of the modules before
    /// it in its system for version 3.
    pub(crate) fn result_shift(&self) -> u32 {
        self.result_shift
    }

    /// Serialized size in bytes, `24 + 16 * segments` (29 + for version 3); the decoded filter
    /// holds the same segments, so this is also its memory charge in the block cache (plus a few
    /// words).
    pub(crate) fn size_bytes(&self) -> usize {
        let header_len = if self.result_shift > 0 {
            SHARED_HEADER_LEN
        } else {
            HEADER_LEN
        };
        header_len + self.segments.len() * SEGMENT_BYTES
    }
}

#[cfg(test)]
#[path = "ribbon_tests.rs"]
mod tests;
