//! The CLI's one policy registry: the names `--compaction` and `--filter-policy` accept, and the
//! Strata policy objects they stand for. `bench`, `inspect`, `simulate`, `stress` and
//! `crash-test` all take their names and constructors from here.
//!
//! Adding a policy is a change to this file only: a variant (its doc comment is its `--help`
//! text, its kebab-case name its spelling) and an arm in `build`, which the compiler asks for.
//! Every command that loops over "all policies" uses `ValueEnum::value_variants`, so it picks up
//! the new one. (The bench's peers, `bench/engine/rocksdb_engine.rs` and `fjall_engine.rs`, map a
//! compaction kind to their own settings and need an arm too when they should run it.)

use std::sync::Arc;

use clap::ValueEnum;
use serde::Serialize;
use strata::alloc::solver::Variant;
use strata::alloc::{FilterAllocator, Mnemosyne, MnemosynePlus, Monkey, Uniform};
use strata::compaction::{CompactionPolicy, Garnering, LazyLeveling, Leveling, Tiering};

use crate::error::CliResult;

/// A compaction (merge) policy by name (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionKind {
    /// One run per level (`strata::compaction::Leveling`), level sizes from level 1 down: the
    /// tree grows top-down.
    Leveling,
    /// Leveling with dynamic level bytes (RocksDB's `level_compaction_dynamic_level_bytes`):
    /// level sizes from the last level up, the tree grows bottom-up.
    LevelingDynamic,
    /// Up to `T - 1` runs per level (`strata::compaction::Tiering`).
    Tiering,
    /// Dostoevsky's lazy leveling (`strata::compaction::LazyLeveling`, SPEC §5.3): tiering on
    /// every level but the last, which holds one run.
    LazyLeveling,
    /// Autumn's Garnering (`strata::compaction::Garnering`, SPEC §5.4): leveling whose level
    /// ratios grow toward the top, with delayed last-level compaction; `--garnering-c` sets `c`.
    Garnering,
}

/// What a compaction policy is built from besides its name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionSettings {
    /// The size ratio `T`.
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (`0 < c <= 1`; 1 is plain leveling).
    pub garnering_c: f64,
}

/// Garnering's default `c` (SPEC §5.4, the Autumn paper's recommendation).
pub const DEFAULT_GARNERING_C: f64 = 0.8;

impl CompactionKind {
    /// Every registered compaction policy.
    pub fn all() -> &'static [CompactionKind] {
        CompactionKind::value_variants()
    }

    /// The name on the command line, in reports and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            CompactionKind::Leveling => "leveling",
            CompactionKind::LevelingDynamic => "leveling-dynamic",
            CompactionKind::Tiering => "tiering",
            CompactionKind::LazyLeveling => "lazy-leveling",
            CompactionKind::Garnering => "garnering",
        }
    }

    /// True if the bench's peers (RocksDB, fjall) have a counterpart of this policy: leveling
    /// and tiering (RocksDB's universal compaction). Lazy leveling and Garnering are Strata's
    /// alone, so the bench runs them on Strata only.
    pub fn peers_have_it(self) -> bool {
        matches!(
            self,
            CompactionKind::Leveling | CompactionKind::LevelingDynamic | CompactionKind::Tiering
        )
    }

    /// True for policies that keep several runs per level on every level (Monkey then predicts a
    /// tiered tree). Lazy leveling's last level is one run, like leveling's, and its many upper
    /// runs are small: Monkey predicts it as leveled.
    pub fn is_tiered(self) -> bool {
        self == CompactionKind::Tiering
    }

    /// The policy at size ratio `size_ratio` (Garnering with its default `c`).
    pub fn build(self, size_ratio: f64) -> CliResult<Arc<dyn CompactionPolicy>> {
        self.build_with(&CompactionSettings {
            size_ratio,
            garnering_c: DEFAULT_GARNERING_C,
        })
    }

    /// The policy with `settings`.
    pub fn build_with(self, settings: &CompactionSettings) -> CliResult<Arc<dyn CompactionPolicy>> {
        let size_ratio = settings.size_ratio;
        Ok(match self {
            CompactionKind::Leveling => Arc::new(Leveling::new(size_ratio)?),
            CompactionKind::LevelingDynamic => {
                Arc::new(Leveling::new(size_ratio)?.with_dynamic_level_bytes(true))
            }
            CompactionKind::Tiering => Arc::new(Tiering::new(size_ratio)?),
            CompactionKind::LazyLeveling => Arc::new(LazyLeveling::new(size_ratio)?),
            CompactionKind::Garnering => {
                Arc::new(Garnering::new(size_ratio)?.with_scaling_factor(settings.garnering_c)?)
            }
        })
    }
}

/// A filter-allocation policy by name (SPEC §3). The bench's peers have only uniform filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FilterPolicyKind {
    /// The same bits per key for every file (what RocksDB, LevelDB, Pebble and fjall do).
    Uniform,
    /// Monkey (SPEC §3.2): per-level bits per key solved once for the tree predicted from the
    /// expected entries, the write buffer and the size ratio.
    Monkey,
    /// Mnemosyne (SPEC §3.3): the budget re-solved over the tree's runs at every flush and
    /// compaction, pure solver, 20% budget guard.
    Mnemosyne,
    /// Mnemosyne with the paper's minimum-1-bit solver variant and rounding (SPEC §2, §3.3).
    MnemosyneMin1,
    /// Mnemosyne+ (SPEC §3.4): per-file allocation from Merlin's access statistics (SPEC §4),
    /// with Strata's standby filters (filters in use chosen by value under the cap;
    /// `MnemosynePlus::with_standby_filters`). Runs with access statistics.
    MnemosynePlus,
    /// Mnemosyne+ with SPEC §3.4's first-come budget guard instead of standby filters (what
    /// `mnemosyne-plus` was before session 4), for comparison.
    MnemosynePlusFirstCome,
}

/// What a filter allocator is built from besides its name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterSettings {
    /// The budget in bits per key.
    pub bits_per_key: f64,
    /// The compaction policy the tree runs (Monkey predicts its shape).
    pub compaction: CompactionKind,
    /// The size ratio `T` (Monkey's prediction).
    pub size_ratio: f64,
    /// Entries the tree is expected to hold (Monkey's prediction; at least 1 is used).
    pub expected_entries: u64,
    /// Entries one memtable holds when it is flushed (Monkey's prediction; at least 1 is used).
    pub buffer_entries: u64,
}

impl FilterPolicyKind {
    /// Every registered filter allocator.
    pub fn all() -> &'static [FilterPolicyKind] {
        FilterPolicyKind::value_variants()
    }

    /// The name on the command line, in reports and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            FilterPolicyKind::Uniform => "uniform",
            FilterPolicyKind::Monkey => "monkey",
            FilterPolicyKind::Mnemosyne => "mnemosyne",
            FilterPolicyKind::MnemosyneMin1 => "mnemosyne-min1",
            FilterPolicyKind::MnemosynePlus => "mnemosyne-plus",
            FilterPolicyKind::MnemosynePlusFirstCome => "mnemosyne-plus-first-come",
        }
    }

    /// True if the allocator reads Merlin's access statistics (SPEC §4), which the engine then
    /// keeps and whose memory the bench takes from the block cache.
    pub fn needs_access_statistics(self) -> bool {
        matches!(
            self,
            FilterPolicyKind::MnemosynePlus | FilterPolicyKind::MnemosynePlusFirstCome
        )
    }

    /// The allocator with `settings`.
    pub fn build(self, settings: &FilterSettings) -> CliResult<Arc<dyn FilterAllocator>> {
        let bits_per_key = settings.bits_per_key;
        Ok(match self {
            FilterPolicyKind::Uniform => Arc::new(Uniform::new(bits_per_key)?),
            FilterPolicyKind::Monkey => Arc::new(
                Monkey::new(
                    bits_per_key,
                    settings.expected_entries.max(1),
                    settings.buffer_entries.max(1),
                    settings.size_ratio,
                )?
                .with_tiering(settings.compaction.is_tiered())?,
            ),
            FilterPolicyKind::Mnemosyne => Arc::new(Mnemosyne::new(bits_per_key)?),
            FilterPolicyKind::MnemosyneMin1 => {
                Arc::new(Mnemosyne::new(bits_per_key)?.with_variant(Variant::MinimumBitsPerKeyOne))
            }
            FilterPolicyKind::MnemosynePlus => Arc::new(MnemosynePlus::new(bits_per_key)?),
            FilterPolicyKind::MnemosynePlusFirstCome => {
                Arc::new(MnemosynePlus::new(bits_per_key)?.with_standby_filters(false))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_parses_and_builds() {
        for &kind in CompactionKind::all() {
            let parsed = CompactionKind::from_str(kind.name(), false).expect("parses");
            assert_eq!(parsed, kind);
            let policy = kind.build(4.0).expect("builds");
            assert!(!policy.name().is_empty());
            assert_eq!(
                serde_json::to_value(kind).expect("serializes"),
                serde_json::Value::from(kind.name()),
                "the JSON spells it as the command line does"
            );
            assert!(kind.build(1.0).is_err(), "a size ratio below 2 is refused");
        }
        for &kind in FilterPolicyKind::all() {
            let parsed = FilterPolicyKind::from_str(kind.name(), false).expect("parses");
            assert_eq!(parsed, kind);
            for &compaction in CompactionKind::all() {
                let settings = FilterSettings {
                    bits_per_key: 5.0,
                    compaction,
                    size_ratio: 4.0,
                    expected_entries: 100_000,
                    buffer_entries: 1_000,
                };
                let allocator = kind.build(&settings).expect("builds");
                assert_eq!(allocator.bits_per_key_budget(), 5.0, "{}", kind.name());
                assert_eq!(
                    allocator.needs_access_statistics(),
                    kind.needs_access_statistics(),
                    "{}",
                    kind.name()
                );
                let invalid = FilterSettings {
                    bits_per_key: -1.0,
                    ..settings
                };
                assert!(kind.build(&invalid).is_err());
            }
            assert_eq!(
                serde_json::to_value(kind).expect("serializes"),
                serde_json::Value::from(kind.name())
            );
        }
    }
}
