//! Modular filters (DESIGN.md §1 "Modular filter"; Mnemosyne §4.2, ModularBF): a file whose assigned
//! bits per key exceeds the module size is given several independent Bloom filters ("modules")
//! instead of one big one, so that a lookup reads only as much filter as it needs.
//!
//! # Why
//!
//! An allocator (DESIGN.md §2-3) may give a file many more bits per key than the budget `bpk_target`
//! (small, hot files). One filter of `bpk` bits per key must be read whole on a cache miss. Split
//! into modules of `bpk_target` bits per key, a probe reads module 1 and stops as soon as a module
//! says "certainly absent": module `j + 1` is read only with probability `eps_1 * ... * eps_j`.
//! Because every module is an independent Bloom filter with its own seed, the file's combined FPR
//! is the product of the modules' FPRs, `prod_j exp(-ln2sq * bpk_j) = exp(-ln2sq * sum_j bpk_j)`:
//! the same as one filter of `bpk` bits per key by the formula (DESIGN.md §1). Independence comes from
//! the Bloom filter's seed remix (see [`super::bloom`]); the bloom tests measure it.
//!
//! # Split rule ([`module_bits_per_key`])
//!
//! With `bpk` the file's bits per key and `m` the module size (`bpk_target`):
//!
//! * `bpk <= m`, or no module size set: one module of `bpk` bits per key (today's single filter);
//! * otherwise `floor(bpk / m)` modules of `m` bits per key and one more with the remainder
//!   `r = bpk - floor(bpk / m) * m`. Strata's own choice: a remainder below
//!   [`MIN_MODULE_BITS_PER_KEY`] (0.5 bit) is folded into the previous module instead, because a
//!   module that small rejects under 12% of absent keys (`1 - exp(-ln2sq * 0.5)`) yet costs a
//!   block read whenever it is reached;
//! * at most [`MAX_MODULES`] (6, as the paper's artifact does): beyond that the last module absorbs
//!   everything past `5 * m`.
//!
//! Every module is clamped to the Bloom filter's 64 bits per key by its builder.
//!
//! # Seeds
//!
//! Module `j` (0-based) uses seed `j` ([`module_seed`]). Module 0 therefore has the seed of a
//! single-module filter, so the first module of a split file is exactly the filter the file would
//! have had at `bpk_target` bits per key.
//!
//! # Modular filter index block (version 1)
//!
//! A table file with two or more modules stores each module as its own block (the Bloom filter
//! format of [`super::bloom`]) and locates them with this small index block, which the table
//! footer's filter handle names (table format version 2, `docs/FORMAT.md`). All integers
//! little-endian:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 1 | format version, `1` |
//! | 1 | 1 | number of modules `count`, `2..=6` |
//! | 2 | 2 | reserved, `0` |
//! | 4 | 16 × `count` | module `j`'s block handle: `offset:fixed64 size:fixed64` (contents, no trailer) |
//!
//! Modules are listed in probe order. The length must be exactly `4 + 16 * count`. A file with one
//! module has no index: its footer names the Bloom filter block directly, byte for byte as before
//! modular filters existed (table format version 1).

use crate::coding::{put_fixed64, Decoder};
use crate::filter::bloom::MAX_BITS_PER_KEY;
use crate::table::format::BlockHandle;

/// Most modules a file's filter is split into (DESIGN.md §1, as Mnemosyne's artifact does).
pub(crate) const MAX_MODULES: usize = 6;

/// Smallest remainder that becomes a module of its own; a smaller one is folded into the previous
/// module (Strata's choice, see the module doc).
pub(crate) const MIN_MODULE_BITS_PER_KEY: f64 = 0.5;

/// Version byte at offset 0 of a modular filter index block.
pub(crate) const INDEX_FORMAT_VERSION: u8 = 1;

/// Length of the index block's header (version, count, reserved).
const INDEX_HEADER_LEN: usize = 4;

/// Length of one module handle in the index block.
const INDEX_HANDLE_LEN: usize = 16;

/// Hash seed of module `index` (0-based). Module 0 has seed 0, the seed tables have always used
/// for their single filter, so a one-module file is unchanged by modular filters.
pub(crate) fn module_seed(index: usize) -> u32 {
    // index < MAX_MODULES, far below u32::MAX.
    index as u32
}

/// The bits per key of each module of a file with `bits_per_key` bits per key when modules hold
/// `module_bits_per_key` (DESIGN.md §1; the split rule is in the module doc). Empty when the file gets
/// no filter (`bits_per_key <= 0` or NaN); one entry when `module_bits_per_key` is not a positive
/// finite number (splitting disabled) or `bits_per_key <= module_bits_per_key`. Each entry is
/// clamped to [`MAX_BITS_PER_KEY`], which is what the Bloom builder builds.
pub(crate) fn module_bits_per_key(bits_per_key: f64, module_bits_per_key: f64) -> Vec<f64> {
    // NaN fails both comparisons: no filter.
    if bits_per_key.is_nan() || bits_per_key <= 0.0 {
        return Vec::new();
    }
    let splits = module_bits_per_key.is_finite() && module_bits_per_key > 0.0;
    if !splits || bits_per_key <= module_bits_per_key || !bits_per_key.is_finite() {
        return vec![bits_per_key.min(MAX_BITS_PER_KEY)];
    }
    let whole_modules = (bits_per_key / module_bits_per_key).floor();
    let remainder = bits_per_key - whole_modules * module_bits_per_key;
    let modules = if remainder >= MIN_MODULE_BITS_PER_KEY {
        whole_modules + 1.0
    } else {
        whole_modules
    };
    // modules >= 1 because bits_per_key > module_bits_per_key; `as` saturates.
    let modules = (modules as usize).clamp(1, MAX_MODULES);
    let full = modules - 1;
    let last = bits_per_key - full as f64 * module_bits_per_key;
    let mut plan = vec![module_bits_per_key.min(MAX_BITS_PER_KEY); full];
    plan.push(last.min(MAX_BITS_PER_KEY));
    plan
}

/// The most bits per key a file's filter holds when modules hold `module_bits_per_key` (the sum
/// of [`module_bits_per_key`]'s plan for an unbounded request): [`MAX_MODULES`] modules, the last
/// clamped to [`MAX_BITS_PER_KEY`]; one filter of at most [`MAX_BITS_PER_KEY`] when splitting is
/// disabled. A solver's optimum can exceed it for a tiny, hot file; the file gets this much.
pub(crate) fn max_bits_per_key(module_bits_per_key: f64) -> f64 {
    if !(module_bits_per_key.is_finite() && module_bits_per_key > 0.0) {
        return MAX_BITS_PER_KEY;
    }
    let module = module_bits_per_key.min(MAX_BITS_PER_KEY);
    (MAX_MODULES - 1) as f64 * module + MAX_BITS_PER_KEY
}

/// The combined FPR of independent modules: the product of their FPRs (DESIGN.md §1). A lookup of an
/// absent key passes the file's filter only if every module says "maybe".
#[allow(
    dead_code,
    reason = "FPR math for tests, `strata inspect` and the allocators (DESIGN.md §1-3)"
)]
pub(crate) fn combined_false_positive_rate(module_rates: &[f64]) -> f64 {
    module_rates.iter().product()
}

/// Serializes a modular filter index naming `modules` (2..=6 handles, in probe order).
pub(crate) fn encode_index(modules: &[BlockHandle]) -> Vec<u8> {
    let mut out = Vec::with_capacity(INDEX_HEADER_LEN + INDEX_HANDLE_LEN * modules.len());
    out.push(INDEX_FORMAT_VERSION);
    // The builder writes at most MAX_MODULES (6) modules.
    out.push(modules.len().min(MAX_MODULES) as u8);
    out.extend_from_slice(&[0, 0]);
    for handle in modules.iter().take(MAX_MODULES) {
        put_fixed64(&mut out, handle.offset);
        put_fixed64(&mut out, handle.size);
    }
    out
}

/// Parses a modular filter index. Never panics; on malformed input returns a description for the
/// caller to wrap in `Error::Corruption` with the file and offset. Bounds of the handles against
/// the file are the caller's to check.
pub(crate) fn decode_index(bytes: &[u8]) -> Result<Vec<BlockHandle>, String> {
    let mut decoder = Decoder::new(bytes);
    let (version, count, reserved) = (|| Some((decoder.u8()?, decoder.u8()?, decoder.bytes(2)?)))()
        .ok_or_else(|| {
            format!(
                "modular filter index is {} bytes, shorter than its {INDEX_HEADER_LEN}-byte header",
                bytes.len()
            )
        })?;
    if version != INDEX_FORMAT_VERSION {
        return Err(format!(
            "unknown modular filter index version {version} (this build reads version \
             {INDEX_FORMAT_VERSION})"
        ));
    }
    let count = usize::from(count);
    if !(2..=MAX_MODULES).contains(&count) {
        return Err(format!(
            "modular filter index lists {count} modules, outside 2..={MAX_MODULES}"
        ));
    }
    if reserved != [0, 0] {
        return Err(format!(
            "modular filter index reserved bytes are {reserved:?}, expected zero"
        ));
    }
    let expected_len = INDEX_HEADER_LEN + INDEX_HANDLE_LEN * count;
    if bytes.len() != expected_len {
        return Err(format!(
            "modular filter index is {} bytes but lists {count} modules ({expected_len} bytes)",
            bytes.len()
        ));
    }
    let mut modules = Vec::with_capacity(count);
    for module in 0..count {
        let handle = (|| Some(BlockHandle::new(decoder.fixed64()?, decoder.fixed64()?)))()
            .ok_or("modular filter index truncated")?;
        if handle.size == 0 {
            return Err(format!("modular filter module {module} has an empty block"));
        }
        modules.push(handle);
    }
    Ok(modules)
}

/// How much of a file's filter lookups probe (DESIGN.md §3.5): the first `modules` modules of every
/// filter partition, and one module more in the last `extra_partitions` partitions.
///
/// # Why partitions
///
/// A file of a partitioned filter (`table/partition.rs`) has one filter block per module and
/// per key-range partition. A module in use in only some partitions is read, cached and counted
/// in the budget only there, so the allocator can spend a share of a module: with whole modules,
/// a file holding most of a small tree's keys makes one module a large share of the budget, and
/// the budget cannot be spent to DESIGN.md §3.5's floor of 0.95. The extra module goes to the *last*
/// partitions because the last partition may be short (the builder cuts partitions at a size):
/// counting every partition as an equal share then never under-counts the bits in use.
///
/// An unpartitioned filter is one partition: `extra_partitions == 1` is one more module in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModulesInUse {
    /// Modules probed in every partition, in probe order (`usize::MAX`: all of them).
    pub modules: usize,
    /// Partitions, counted from the last, that probe `modules + 1` modules.
    pub extra_partitions: u32,
}

impl ModulesInUse {
    /// The filter is not probed.
    pub const NONE: ModulesInUse = ModulesInUse {
        modules: 0,
        extra_partitions: 0,
    };

    /// Every module is probed.
    pub const ALL: ModulesInUse = ModulesInUse {
        modules: usize::MAX,
        extra_partitions: 0,
    };

    /// The first `modules` modules in every partition.
    pub const fn prefix(modules: usize) -> ModulesInUse {
        ModulesInUse {
            modules,
            extra_partitions: 0,
        }
    }

    /// The choice as one word (modules, saturated at `u32::MAX`, above the extra partitions),
    /// so a pinned reader can tell with one load whether the allocation moved since it last let
    /// go of the modules out of use (`table/reader.rs`). `u64::MAX` is never a choice's code.
    pub(crate) fn code(&self) -> u64 {
        let modules = u64::try_from(self.modules)
            .unwrap_or(u64::MAX)
            .min(u64::from(u32::MAX));
        let extra = u64::from(self.extra_partitions.min(u32::MAX - 1));
        (modules << 32) | extra
    }

    /// The choice [`ModulesInUse::code`] made `code`; `None` for `u64::MAX` (no choice yet).
    pub(crate) fn from_code(code: u64) -> Option<ModulesInUse> {
        (code != u64::MAX).then(|| {
            let modules = code >> 32;
            ModulesInUse {
                modules: if modules == u64::from(u32::MAX) {
                    usize::MAX
                } else {
                    usize::try_from(modules).unwrap_or(usize::MAX)
                },
                extra_partitions: (code & u64::from(u32::MAX)) as u32,
            }
        })
    }

    /// True if no partition probes any module.
    pub fn is_none(&self) -> bool {
        self.modules == 0 && self.extra_partitions == 0
    }

    /// Modules probed in partition `partition` (0-based) of a filter of `partitions` partitions
    /// (1 for an unpartitioned filter).
    pub fn in_partition(&self, partition: usize, partitions: usize) -> usize {
        let extra = usize::try_from(self.extra_partitions).unwrap_or(usize::MAX);
        if partition.saturating_add(extra) >= partitions {
            self.modules.saturating_add(1)
        } else {
            self.modules
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_most_a_file_holds_is_what_the_split_builds_for_any_request() {
        // Module sizes are filter budgets, at most 64 bits per key (`Uniform::MAX_BITS_PER_KEY`).
        for module in [0.0, f64::NAN, 0.5, 2.0, 5.0, 7.5, 64.0] {
            let most = max_bits_per_key(module);
            for asked in [0.5, 1.0, 2.0, 9.9, 30.0, 73.0, 74.0, 200.0, 1e6] {
                let built: f64 = module_bits_per_key(asked, module).iter().sum();
                assert!(
                    (built - asked.min(most)).abs() < 1e-9,
                    "module {module}, asked {asked}: built {built}, most {most}"
                );
            }
        }
        assert_eq!(max_bits_per_key(2.0), 74.0);
        assert_eq!(max_bits_per_key(0.0), MAX_BITS_PER_KEY);
    }

    use super::*;
    use crate::filter::bloom::false_positive_rate;
    use proptest::prelude::*;

    fn assert_plan(bits_per_key: f64, module: f64, expected: &[f64]) {
        let plan = module_bits_per_key(bits_per_key, module);
        assert_eq!(
            plan.len(),
            expected.len(),
            "bpk {bits_per_key} module {module}: {plan:?}"
        );
        for (got, want) in plan.iter().zip(expected) {
            assert!(
                (got - want).abs() < 1e-9,
                "bpk {bits_per_key} module {module}: {plan:?}, expected {expected:?}"
            );
        }
    }

    #[test]
    fn split_rule() {
        // No filter.
        assert_plan(0.0, 2.0, &[]);
        assert_plan(-1.0, 2.0, &[]);
        assert_plan(f64::NAN, 2.0, &[]);
        // Splitting disabled or not needed: one module, as before modular filters.
        for module in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_plan(7.5, module, &[7.5]);
        }
        assert_plan(2.0, 2.0, &[2.0]);
        assert_plan(1.3, 2.0, &[1.3]);
        // Whole multiples.
        assert_plan(6.0, 2.0, &[2.0, 2.0, 2.0]);
        // A remainder of at least 0.5 bit is a module of its own...
        assert_plan(6.5, 2.0, &[2.0, 2.0, 2.0, 0.5]);
        assert_plan(7.9, 2.0, &[2.0, 2.0, 2.0, 1.9]);
        // ...a smaller one is folded into the previous module.
        assert_plan(6.3, 2.0, &[2.0, 2.0, 2.3]);
        assert_plan(10.3, 10.0, &[10.3]);
        // At most six modules; the last absorbs the rest.
        assert_plan(12.0, 2.0, &[2.0; 6]);
        assert_plan(13.0, 2.0, &[2.0, 2.0, 2.0, 2.0, 2.0, 3.0]);
        assert_plan(30.0, 1.0, &[1.0, 1.0, 1.0, 1.0, 1.0, 25.0]);
        // Each module is clamped to what the Bloom filter builds.
        assert_plan(200.0, 10.0, &[10.0, 10.0, 10.0, 10.0, 10.0, 64.0]);
        assert_plan(f64::INFINITY, 2.0, &[64.0]);
    }

    proptest! {
        #[test]
        fn split_preserves_the_bits_and_respects_the_limits(
            bits_per_key in 0.01f64..60.0,
            module in 0.2f64..20.0,
        ) {
            let plan = module_bits_per_key(bits_per_key, module);
            prop_assert!(!plan.is_empty() && plan.len() <= MAX_MODULES);
            let total: f64 = plan.iter().sum();
            prop_assert!((total - bits_per_key).abs() < 1e-9, "{plan:?}");
            if plan.len() > 1 {
                for &bits in &plan[..plan.len() - 1] {
                    prop_assert_eq!(bits, module);
                }
                // The last module is at least half a bit, or a whole module if modules are
                // smaller than that.
                prop_assert!(plan[plan.len() - 1] >= MIN_MODULE_BITS_PER_KEY.min(module) - 1e-9);
            } else {
                prop_assert!(
                    bits_per_key <= module + MIN_MODULE_BITS_PER_KEY,
                    "{bits_per_key} in one module of size {module}"
                );
            }
        }

        #[test]
        fn decode_index_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = decode_index(&bytes);
        }
    }

    #[test]
    fn combined_rate_is_the_product() {
        let rates: Vec<f64> = [2.0, 2.0, 2.0].map(false_positive_rate).to_vec();
        let combined = combined_false_positive_rate(&rates);
        assert!((combined - false_positive_rate(6.0)).abs() < 1e-12);
        assert_eq!(combined_false_positive_rate(&[]), 1.0);
    }

    #[test]
    fn seeds_are_distinct_and_module_zero_matches_a_single_filter() {
        assert_eq!(
            module_seed(0),
            0,
            "the seed of every version-1 table's filter"
        );
        let seeds: std::collections::BTreeSet<u32> = (0..MAX_MODULES).map(module_seed).collect();
        assert_eq!(seeds.len(), MAX_MODULES);
    }

    fn sample_modules() -> Vec<BlockHandle> {
        vec![
            BlockHandle::new(1_000, 84),
            BlockHandle::new(1_089, 84),
            BlockHandle::new(1_178, 148),
        ]
    }

    #[test]
    fn index_layout_is_pinned_and_round_trips() {
        let encoded = encode_index(&sample_modules());
        assert_eq!(encoded.len(), 4 + 3 * 16);
        assert_eq!(&encoded[..4], &[1, 3, 0, 0]);
        assert_eq!(&encoded[4..12], &1_000u64.to_le_bytes());
        assert_eq!(&encoded[12..20], &84u64.to_le_bytes());
        assert_eq!(&encoded[36..44], &1_178u64.to_le_bytes());
        assert_eq!(&encoded[44..52], &148u64.to_le_bytes());
        assert_eq!(decode_index(&encoded), Ok(sample_modules()));
    }

    #[test]
    fn decode_index_names_what_is_wrong() {
        let valid = encode_index(&sample_modules());
        let cases: [(usize, u8, &str); 5] = [
            (0, 2, "version"),
            (1, 1, "outside 2..=6"),
            (1, 7, "outside 2..=6"),
            (1, 4, "lists 4 modules"),
            (3, 1, "reserved"),
        ];
        for (offset, value, needle) in cases {
            let mut bytes = valid.clone();
            bytes[offset] = value;
            let error = decode_index(&bytes).expect_err("corrupt index");
            assert!(error.contains(needle), "{error:?} should mention {needle}");
        }
        for cut in 0..valid.len() {
            assert!(decode_index(&valid[..cut]).is_err(), "cut at {cut}");
        }
        let mut empty_module = valid.clone();
        empty_module[28..36].copy_from_slice(&0u64.to_le_bytes());
        let error = decode_index(&empty_module).expect_err("empty module");
        assert!(error.contains("module 1 has an empty block"), "{error}");
    }
}
