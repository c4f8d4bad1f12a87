//! What each benchmark phase reads or writes: the workloads, the key format and the seeded key
//! and value generators. Pure functions of `(num, key_size, seed)`, so the same flags produce the
//! same keys on every machine (rand 0.8's `StdRng`, ChaCha12, is stable within rand 0.8).
//!
//! # Keys
//! As in db_bench: key `i` (for `i` in `0..num`) is the decimal `i` zero-padded to `key_size`
//! bytes, e.g. `0000000000012345` for 16-byte keys. Keys sort in index order.
//!
//! # Missing keys (`readmissing`)
//! A missing key must be absent and lie *inside* the key range, between present keys, so that it
//! falls into some file's key range and a lookup has to ask that file's filter (a key outside
//! every file's range is answered by the fence pointers alone, which measures nothing).
//! Fixed-width decimal keys of consecutive indexes leave no room between `…5` and `…6`; there is
//! room only where a carry happens. So a missing key is present key `10 * g` (for `g` in
//! `1..=(num - 1) / 10`) with its last digit `0` replaced by `.` (0x2E, just below `0`): for
//! 16-byte keys, `000000000001234.` sorts right after `0000000000012339` and right before
//! `0000000000012340`. It has exactly `key_size` bytes, no present key contains a `.`, and the
//! gaps it probes are spread uniformly over the whole key range (one gap per ten keys). With
//! `num <= 10` there is no such gap and the generator falls back to `g = 0` (a key just below
//! the first key: absent, but outside the range).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use serde::Serialize;
use std::str::FromStr;

use super::ops::{LoadOrder, Mix};

/// A benchmark phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// Writes keys `0..num` in order.
    Fillseq,
    /// Writes keys `0..num` once each, in a seeded random order (a permutation).
    Fillrandom,
    /// Point lookups of absent keys inside the key range (see the module docs).
    Readmissing,
    /// Seeks to a random existing key (drawn from `--distribution`), then reads `seek_nexts`
    /// more entries.
    Seekrandom,
    /// Inserts keys `0..num` once each in YCSB's hashed order (`insertorder=hashed`): the `load`
    /// of YCSB and of the Mnemosyne workloads.
    Load,
    /// A stream of operations drawn from a mix (`readrandom`, `overwrite`, `readhot`,
    /// `readwhilewriting`, `ycsb-a`..`ycsb-f`, `mnemosyne-i`, `mnemosyne-ii[:Z]`) over keys
    /// `0..num`, keys chosen by `--distribution` (or the mix's own default).
    Mix(Mix),
}

impl Workload {
    /// The name used on the command line, in reports and in the JSON (`mnemosyne-ii:0.5`).
    pub fn name(self) -> String {
        match self {
            Workload::Fillseq => "fillseq".into(),
            Workload::Fillrandom => "fillrandom".into(),
            Workload::Readmissing => "readmissing".into(),
            Workload::Seekrandom => "seekrandom".into(),
            Workload::Load => "load".into(),
            Workload::Mix(mix) => mix.to_string(),
        }
    }

    /// True for phases that only write (and report write amplification).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Workload::Fillseq
                | Workload::Fillrandom
                | Workload::Load
                | Workload::Mix(Mix::Overwrite)
        )
    }

    /// True for phases that write keys `0..num` (after which reads must find every key).
    pub fn fills(self) -> bool {
        matches!(
            self,
            Workload::Fillseq | Workload::Fillrandom | Workload::Load
        )
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "fillseq" => Ok(Workload::Fillseq),
            "fillrandom" => Ok(Workload::Fillrandom),
            "readmissing" => Ok(Workload::Readmissing),
            "seekrandom" => Ok(Workload::Seekrandom),
            "load" | "ycsb-load" => Ok(Workload::Load),
            other => other.parse::<Mix>().map(Workload::Mix).map_err(|_| {
                format!(
                    "unknown workload {other:?}: expected fillseq, fillrandom, readrandom, readmissing, seekrandom, overwrite, readhot, readwhilewriting, load, ycsb-a..ycsb-f, mnemosyne-i or mnemosyne-ii[:Z]"
                )
            }),
        }
    }
}

/// One `--workloads` item: a phase, and after `@` the operations it runs instead of `--reads`
/// (`overwrite@2000000`), so phases of one run can last alike although their operations differ
/// in cost by orders of magnitude (a scan costs what a hundred point lookups do). A fill writes
/// `--num` keys and takes no count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseSpec {
    /// The phase.
    pub workload: Workload,
    /// Its operations, when not `--reads`.
    pub ops: Option<u64>,
}

impl FromStr for PhaseSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let Some((name, count)) = text.rsplit_once('@') else {
            return Ok(PhaseSpec {
                workload: text.parse()?,
                ops: None,
            });
        };
        let workload: Workload = name.parse()?;
        if workload.fills() {
            return Err(format!(
                "{text:?}: {} writes --num keys and takes no operation count",
                workload.name()
            ));
        }
        let ops = super::parse_count(count)
            .map_err(|error| format!("{text:?}: the operations after '@': {error}"))?;
        if ops == 0 {
            return Err(format!("{text:?}: a phase runs at least one operation"));
        }
        Ok(PhaseSpec {
            workload,
            ops: Some(ops),
        })
    }
}

impl Serialize for Workload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

/// Number of decimal digits of `n` (1 for 0).
fn decimal_digits(n: u64) -> usize {
    let mut digits = 1;
    let mut rest = n / 10;
    while rest > 0 {
        digits += 1;
        rest /= 10;
    }
    digits
}

/// Builds the benchmark's keys: decimal indexes zero-padded to a fixed width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFormat {
    num: u64,
    key_size: usize,
}

impl KeyFormat {
    /// Keys for `num` entries of `key_size` bytes. `key_size` must hold `num - 1` in decimal and
    /// be at least 2 (a missing key needs a digit and the `.`).
    pub fn new(num: u64, key_size: usize) -> Result<Self, String> {
        if num == 0 {
            return Err("--num must be at least 1".into());
        }
        let needed = decimal_digits(num - 1).max(2);
        if key_size < needed {
            return Err(format!(
                "--key-size {key_size} is too small: {num} keys need at least {needed} bytes"
            ));
        }
        if key_size > strata::MAX_KEY_BYTES {
            return Err(format!(
                "--key-size {key_size} is larger than the engine's limit of {} bytes",
                strata::MAX_KEY_BYTES
            ));
        }
        Ok(KeyFormat { num, key_size })
    }

    /// Number of keys.
    pub fn num(&self) -> u64 {
        self.num
    }

    /// Writes key `index` into `key` (cleared first).
    pub fn present_key(&self, index: u64, key: &mut Vec<u8>) {
        write_padded_decimal(index, self.key_size, key);
    }

    /// Number of distinct missing keys inside the key range (gaps at multiples of ten).
    pub fn missing_gaps(&self) -> u64 {
        (self.num - 1) / 10
    }

    /// Writes missing key number `gap` into `key`: present key `10 * gap` with its last digit
    /// replaced by `.` (see the module docs).
    pub fn missing_key(&self, gap: u64, key: &mut Vec<u8>) {
        write_padded_decimal(gap, self.key_size - 1, key);
        key.push(b'.');
    }
}

/// Writes `n` in decimal, zero-padded to `width` bytes, into `out` (cleared first). Without a
/// `format!` per key: the read loops call this once per operation.
fn write_padded_decimal(mut n: u64, width: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(width, b'0');
    for digit in out.iter_mut().rev() {
        if n == 0 {
            break;
        }
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// A seeded random number generator for one phase: phases get independent streams, so a
/// `readrandom` draws the same keys whether or not a `fillrandom` ran before it.
pub fn phase_rng(seed: u64, workload: Workload) -> StdRng {
    // FNV-1a of the phase name, mixed into the user's seed.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in workload.name().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    StdRng::seed_from_u64(seed ^ hash)
}

/// The order a fill phase writes keys in: `0..num` for `fillseq`; a seeded permutation of it for
/// `fillrandom`, so every key is written exactly once and a later `readrandom` must find every
/// key (db_bench's `fillrandom` draws with replacement and leaves about 37% of the keys out).
pub enum FillOrder {
    /// Keys `0..num` in order.
    Sequential(u64),
    /// Keys `0..num` in this order.
    Permutation(Vec<u64>),
    /// Keys `0..num` in YCSB's hashed insert order.
    Hashed(LoadOrder),
}

impl FillOrder {
    /// The order for `workload`; `Err` if a permutation of `num` indexes does not fit in memory.
    pub fn new(workload: Workload, num: u64, rng: &mut StdRng) -> Result<Self, String> {
        if workload != Workload::Fillrandom {
            return Ok(FillOrder::Sequential(num));
        }
        let too_large =
            || format!("--num {num}: a permutation of {num} keys does not fit in memory");
        let len = usize::try_from(num).map_err(|_| too_large())?;
        let mut order = Vec::new();
        order.try_reserve_exact(len).map_err(|_| too_large())?;
        order.extend(0..num);
        order.shuffle(rng);
        Ok(FillOrder::Permutation(order))
    }

    /// Number of keys written.
    pub fn len(&self) -> u64 {
        match self {
            FillOrder::Sequential(num) => *num,
            FillOrder::Permutation(order) => order.len() as u64,
            FillOrder::Hashed(order) => order.len(),
        }
    }

    /// The key index written by operation `op` (`op < len()`).
    pub fn index(&self, op: u64) -> u64 {
        match self {
            FillOrder::Sequential(_) => op,
            FillOrder::Permutation(order) => order[op as usize],
            FillOrder::Hashed(order) => order.index(op),
        }
    }
}

/// A uniformly random missing-key gap (`1..=missing_gaps`, or 0 when there is none).
pub fn random_missing_gap(format: &KeyFormat, rng: &mut StdRng) -> u64 {
    match format.missing_gaps() {
        0 => 0,
        gaps => rng.gen_range(1..=gaps),
    }
}

/// Fills `value` with `value_size` fresh random bytes (incompressible, as db_bench's
/// `--compression_ratio=1`).
pub fn random_value(value_size: usize, rng: &mut StdRng, value: &mut Vec<u8>) {
    value.resize(value_size, 0);
    rng.fill_bytes(value);
}

/// A value that compresses to about `compression_ratio` of its size, as db_bench's
/// `--compression_ratio`: its first `ceil(value_size * ratio)` bytes are random and the rest
/// repeats them (db_bench's `CompressibleString`). It draws exactly the random bytes
/// [`random_value`] draws, so the same seed gives the same keys and operations whatever the
/// ratio, and a ratio of 1 gives [`random_value`]'s bytes.
pub fn compressible_value(
    value_size: usize,
    compression_ratio: f64,
    rng: &mut StdRng,
    value: &mut Vec<u8>,
) {
    random_value(value_size, rng, value);
    let unique = ((value_size as f64 * compression_ratio.clamp(0.0, 1.0)).ceil() as usize)
        .clamp(1, value_size.max(1));
    for position in unique..value_size {
        value[position] = value[position % unique];
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn keys_have_exactly_key_size_bytes_and_sort_in_index_order() {
        let format = KeyFormat::new(100_000, 16).expect("valid");
        let mut key = Vec::new();
        format.present_key(12_345, &mut key);
        assert_eq!(key, b"0000000000012345");
        let mut previous = Vec::new();
        for index in [0, 1, 9, 10, 99_999] {
            format.present_key(index, &mut key);
            assert_eq!(key.len(), 16);
            assert!(key > previous);
            previous = key.clone();
        }
        format.missing_key(1234, &mut key);
        assert_eq!(key, b"000000000001234.");
    }

    #[test]
    fn a_phase_may_name_its_own_operations_after_an_at_sign() {
        let parse = |text: &str| text.parse::<PhaseSpec>();
        assert_eq!(
            parse("overwrite@2_000_000"),
            Ok(PhaseSpec {
                workload: Workload::Mix(Mix::Overwrite),
                ops: Some(2_000_000)
            })
        );
        assert_eq!(
            parse("seekrandom"),
            Ok(PhaseSpec {
                workload: Workload::Seekrandom,
                ops: None
            })
        );
        // A mix's own argument keeps its colon; the count follows it.
        let mnemosyne = parse("mnemosyne-ii:0.5@1000").expect("valid");
        assert_eq!(mnemosyne.workload.name(), "mnemosyne-ii:0.5");
        assert_eq!(mnemosyne.ops, Some(1000));
        for (bad, says) in [
            ("fillrandom@10", "takes no operation count"),
            ("load@10", "takes no operation count"),
            ("readhot@0", "at least one operation"),
            ("readhot@many", "not a non-negative whole number"),
            ("readhot@-3", "not a non-negative whole number"),
            ("readsome@10", "unknown workload"),
            ("@10", "unknown workload"),
        ] {
            let error = parse(bad).expect_err(bad);
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn key_size_must_hold_the_largest_index() {
        assert!(KeyFormat::new(1000, 3).is_ok());
        assert!(KeyFormat::new(1001, 3).is_err());
        assert!(KeyFormat::new(5, 1).is_err());
        assert!(KeyFormat::new(0, 16).is_err());
        assert!(KeyFormat::new(10, strata::MAX_KEY_BYTES + 1).is_err());
    }

    #[test]
    fn fillrandom_writes_each_key_exactly_once_and_fillseq_in_order() {
        let indexes = |workload, num| {
            let mut rng = phase_rng(42, workload);
            let order = FillOrder::new(workload, num, &mut rng).expect("fits");
            assert_eq!(order.len(), num);
            (0..num).map(|op| order.index(op)).collect::<Vec<u64>>()
        };
        let random = indexes(Workload::Fillrandom, 10_000);
        let distinct: BTreeSet<u64> = random.iter().copied().collect();
        assert_eq!(distinct.len(), 10_000);
        assert_eq!(distinct.last(), Some(&9_999));
        assert_ne!(random, (0..10_000).collect::<Vec<_>>(), "shuffled");
        assert_eq!(random, indexes(Workload::Fillrandom, 10_000), "seeded");
        assert_eq!(
            indexes(Workload::Fillseq, 100),
            (0..100).collect::<Vec<_>>()
        );
        let mut rng = phase_rng(42, Workload::Fillrandom);
        assert!(FillOrder::new(Workload::Fillrandom, u64::MAX, &mut rng).is_err());
    }

    #[test]
    fn generators_are_deterministic_per_seed_and_phase() {
        let draw = |seed, workload| {
            let mut rng = phase_rng(seed, workload);
            let format = KeyFormat::new(1_000_000, 16).expect("valid");
            (0..5)
                .map(|_| random_missing_gap(&format, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            draw(42, Workload::Readmissing),
            draw(42, Workload::Readmissing)
        );
        assert_ne!(
            draw(42, Workload::Readmissing),
            draw(43, Workload::Readmissing)
        );
        assert_ne!(
            draw(42, Workload::Readmissing),
            draw(42, Workload::Seekrandom)
        );
    }

    #[test]
    fn missing_keys_never_exist_and_fall_between_present_keys() {
        for (num, key_size) in [(2_000u64, 16usize), (1_000, 3), (12_345, 5), (11, 2)] {
            let format = KeyFormat::new(num, key_size).expect("valid");
            let present: BTreeSet<Vec<u8>> = (0..num)
                .map(|index| {
                    let mut key = Vec::new();
                    format.present_key(index, &mut key);
                    key
                })
                .collect();
            let first = present.first().cloned().unwrap_or_default();
            let last = present.last().cloned().unwrap_or_default();
            assert!(format.missing_gaps() >= 1);
            let mut key = Vec::new();
            for gap in 1..=format.missing_gaps() {
                format.missing_key(gap, &mut key);
                assert_eq!(key.len(), key_size);
                assert!(!present.contains(&key), "{key:?} exists");
                assert!(key > first && key < last, "{key:?} outside the key range");
                // Right before present key 10 * gap, right after 10 * gap - 1.
                let mut next = Vec::new();
                format.present_key(10 * gap, &mut next);
                assert_eq!(present.range(key.clone()..).next(), Some(&next));
            }
            let mut rng = phase_rng(7, Workload::Readmissing);
            for _ in 0..1000 {
                let gap = random_missing_gap(&format, &mut rng);
                assert!((1..=format.missing_gaps()).contains(&gap));
            }
        }
    }

    #[test]
    fn compressible_values_repeat_their_random_part() {
        let mut rng = StdRng::seed_from_u64(9);
        let mut random = Vec::new();
        random_value(100, &mut rng, &mut random);
        let mut rng = StdRng::seed_from_u64(9);
        let mut same = Vec::new();
        compressible_value(100, 1.0, &mut rng, &mut same);
        assert_eq!(same, random, "ratio 1 is random_value");
        let mut rng = StdRng::seed_from_u64(9);
        let mut half = Vec::new();
        compressible_value(100, 0.5, &mut rng, &mut half);
        assert_eq!(half.len(), 100);
        assert_eq!(&half[..50], &random[..50]);
        assert_eq!(&half[50..], &random[..50]);
        let mut rng = StdRng::seed_from_u64(9);
        let mut tenth = Vec::new();
        compressible_value(95, 0.1, &mut rng, &mut tenth);
        assert!(tenth
            .chunks(10)
            .all(|chunk| chunk == &random[..chunk.len()]));
        compressible_value(0, 0.5, &mut rng, &mut tenth);
        assert!(tenth.is_empty());
    }

    #[test]
    fn values_are_random_and_sized() {
        let mut rng = phase_rng(1, Workload::Fillseq);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        random_value(100, &mut rng, &mut a);
        random_value(100, &mut rng, &mut b);
        assert_eq!(a.len(), 100);
        assert_ne!(a, b);
    }
}
