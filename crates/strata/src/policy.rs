//! The engine's one policy registry: every compaction (merge) policy and filter allocator Strata
//! offers, by name and by the parameters it is built from.
//!
//! A policy object is a trait object (`Arc<dyn CompactionPolicy>`, `Arc<dyn FilterAllocator>`),
//! which cannot be written to a file or read back. Whatever must name a policy outside the
//! running process — an options file (`crate::options_file`), the CLI's `--compaction` and
//! `--filter-policy`, the tuner's recommendation, the test hook that runs every test under every
//! policy — names it here, as a kind plus settings, and builds the object with `build`. Adding a
//! policy is a variant and an arm in `build`, which the compiler asks for; everything that loops
//! over "all policies" uses `all()` and picks it up.
//!
//! With the `clap` feature the kinds derive `clap::ValueEnum`, so the CLI parses the same names
//! (the variants' doc comments are its `--help` text).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::alloc::{Elastic, FilterAllocator, Mnemosyne, MnemosynePlus, Monkey, Uniform};
use crate::compaction::ecotune::{EcoTune, EcoTuneSettings};
use crate::compaction::{CompactionPolicy, Garnering, LazyLeveling, Leveling, Moose, Tiering};
use crate::error::{Error, Result};
use crate::model::tuner::FilterAllocation;
use crate::model::MergePolicy;
use crate::solver::Variant;

/// A compaction (merge) policy by name (DESIGN.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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
    /// Dostoevsky's lazy leveling (`strata::compaction::LazyLeveling`, DESIGN.md §5.3): tiering on
    /// every level but the last, which holds one run.
    LazyLeveling,
    /// Autumn's Garnering (`strata::compaction::Garnering`, DESIGN.md §5.4): leveling whose level
    /// ratios grow toward the top, with delayed last-level compaction; `c` sets the growth.
    Garnering,
    /// EcoTune (`strata::compaction::ecotune::EcoTune`, DESIGN.md §6): a size-triggered top level with
    /// a full key index, a main level of runs merged on a dynamic program's schedule, and a last
    /// level of one run. Takes no size ratio.
    Ecotune,
    /// The EcoTune paper's Moose baseline (`strata::compaction::Moose`): levels 1 to 3 hold up
    /// to 3 runs each, ratio 7 between them and 6 into the last level 4, capacities set from the
    /// last level up. Takes no size ratio.
    Moose,
}

/// Garnering's default scaling factor `c` (DESIGN.md §5.4, the Autumn paper's recommendation).
pub const DEFAULT_GARNERING_C: f64 = 0.8;

/// What a compaction policy is built from besides its kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompactionSettings {
    /// The size ratio `T` (EcoTune has none and ignores it).
    pub size_ratio: f64,
    /// Garnering's scaling factor `c` (`0 < c <= 1`; 1 is plain leveling). Ignored by the other
    /// policies.
    pub garnering_c: f64,
    /// EcoTune's settings. Ignored by the other policies.
    #[serde(default)]
    pub ecotune: EcoTuneSettings,
}

impl CompactionSettings {
    /// Settings with size ratio `size_ratio` and Garnering's default `c`.
    pub fn with_size_ratio(size_ratio: f64) -> Self {
        CompactionSettings {
            size_ratio,
            garnering_c: DEFAULT_GARNERING_C,
            ecotune: EcoTuneSettings::default(),
        }
    }
}

impl CompactionKind {
    /// Every registered compaction policy.
    pub fn all() -> &'static [CompactionKind] {
        &[
            CompactionKind::Leveling,
            CompactionKind::LevelingDynamic,
            CompactionKind::Tiering,
            CompactionKind::LazyLeveling,
            CompactionKind::Garnering,
            CompactionKind::Ecotune,
            CompactionKind::Moose,
        ]
    }

    /// The name in options files, on the command line, in reports and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CompactionKind::Leveling => "leveling",
            CompactionKind::LevelingDynamic => "leveling-dynamic",
            CompactionKind::Tiering => "tiering",
            CompactionKind::LazyLeveling => "lazy-leveling",
            CompactionKind::Garnering => "garnering",
            CompactionKind::Ecotune => "ecotune",
            CompactionKind::Moose => "moose",
        }
    }

    /// True for policies that keep several runs per level on every level (Monkey then predicts a
    /// tiered tree). Lazy leveling's last level is one run, like leveling's, and its many upper
    /// runs are small: Monkey predicts it as leveled.
    pub fn is_tiered(self) -> bool {
        self == CompactionKind::Tiering
    }

    /// True for policies built from a size ratio `T` (all but EcoTune and Moose).
    pub fn uses_size_ratio(self) -> bool {
        !matches!(self, CompactionKind::Ecotune | CompactionKind::Moose)
    }

    /// The registered policy that builds `policy`, a merge policy the cost models price and the
    /// tuner recommends (DESIGN.md §7), and Garnering's `c` when it is Garnering.
    pub fn for_model(policy: MergePolicy) -> (CompactionKind, Option<f64>) {
        match policy {
            MergePolicy::Leveling => (CompactionKind::Leveling, None),
            MergePolicy::Tiering => (CompactionKind::Tiering, None),
            MergePolicy::LazyLeveling => (CompactionKind::LazyLeveling, None),
            MergePolicy::Garnering { scaling_factor } => {
                (CompactionKind::Garnering, Some(scaling_factor))
            }
        }
    }

    /// The policy with `settings`; an invalid setting (a size ratio below 2, `c` outside
    /// `(0, 1]`) is an [`Error::InvalidArgument`].
    pub fn build(self, settings: &CompactionSettings) -> Result<Arc<dyn CompactionPolicy>> {
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
            CompactionKind::Ecotune => Arc::new(EcoTune::new(settings.ecotune)?),
            CompactionKind::Moose => Arc::new(Moose::ecotune_paper()),
        })
    }
}

/// A filter-allocation policy by name (DESIGN.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum FilterAllocatorKind {
    /// The same bits per key for every file (what RocksDB, LevelDB, Pebble and fjall do).
    Uniform,
    /// Monkey (DESIGN.md §3.2): per-level bits per key solved once for the tree predicted from the
    /// expected entries, the write buffer and the size ratio.
    Monkey,
    /// Mnemosyne (DESIGN.md §3.3): the budget re-solved over the tree's runs at every flush and
    /// compaction, pure solver, 20% budget guard.
    Mnemosyne,
    /// Mnemosyne with the paper's minimum-1-bit solver variant and rounding (DESIGN.md §2, §3.3).
    MnemosyneMin1,
    /// Mnemosyne+ (DESIGN.md §3.4): per-file allocation from Merlin's access statistics (DESIGN.md §4),
    /// with Strata's standby filters (filters in use chosen by value under the cap;
    /// `MnemosynePlus::with_standby_filters`). Runs with access statistics.
    MnemosynePlus,
    /// Mnemosyne+ with DESIGN.md §3.4's first-come budget guard instead of standby filters, for
    /// comparison.
    MnemosynePlusFirstCome,
    /// Elastic filters, Strata's own allocation (DESIGN.md §3.5; `strata::alloc::elastic`): filters
    /// written as modules with more bits on disk than their share, the modules in use chosen
    /// again at every flush and compaction so the budget is a hard cap and spent in full.
    Elastic,
}

/// What a filter allocator is built from besides its kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// A cap in bytes on the filters in use besides the bits per key (elastic filters only;
    /// `None`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    /// Modules every new file gets on disk at least (elastic filters only,
    /// `Elastic::with_disk_modules`, 1 to 6; `None`: the default, 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_modules: Option<usize>,
}

impl FilterAllocatorKind {
    /// Every registered filter allocator.
    pub fn all() -> &'static [FilterAllocatorKind] {
        &[
            FilterAllocatorKind::Uniform,
            FilterAllocatorKind::Monkey,
            FilterAllocatorKind::Mnemosyne,
            FilterAllocatorKind::MnemosyneMin1,
            FilterAllocatorKind::MnemosynePlus,
            FilterAllocatorKind::MnemosynePlusFirstCome,
            FilterAllocatorKind::Elastic,
        ]
    }

    /// The name in options files, on the command line, in reports and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            FilterAllocatorKind::Uniform => "uniform",
            FilterAllocatorKind::Monkey => "monkey",
            FilterAllocatorKind::Mnemosyne => "mnemosyne",
            FilterAllocatorKind::MnemosyneMin1 => "mnemosyne-min1",
            FilterAllocatorKind::MnemosynePlus => "mnemosyne-plus",
            FilterAllocatorKind::MnemosynePlusFirstCome => "mnemosyne-plus-first-come",
            FilterAllocatorKind::Elastic => "elastic",
        }
    }

    /// True if the allocator reads Merlin's access statistics (DESIGN.md §4), which the engine then
    /// keeps (`Options::access_statistics` must be on).
    pub fn needs_access_statistics(self) -> bool {
        matches!(
            self,
            FilterAllocatorKind::MnemosynePlus | FilterAllocatorKind::MnemosynePlusFirstCome
        )
    }

    /// The registered allocator that builds `filters`, a tuner design's filter allocation
    /// (DESIGN.md §7.5).
    pub fn for_model(filters: FilterAllocation) -> FilterAllocatorKind {
        match filters {
            FilterAllocation::Monkey => FilterAllocatorKind::Monkey,
            FilterAllocation::Uniform => FilterAllocatorKind::Uniform,
        }
    }

    /// The allocator with `settings`; an invalid budget is an [`Error::InvalidArgument`].
    pub fn build(self, settings: &FilterSettings) -> Result<Arc<dyn FilterAllocator>> {
        let bits_per_key = settings.bits_per_key;
        if settings.budget_bytes.is_some() && self != FilterAllocatorKind::Elastic {
            return Err(Error::InvalidArgument(format!(
                "a filter budget in bytes needs elastic filters; {} takes bits per key only",
                self.name()
            )));
        }
        if settings.disk_modules.is_some() && self != FilterAllocatorKind::Elastic {
            return Err(Error::InvalidArgument(format!(
                "modules on disk are elastic filters' setting; {} writes each filter as sized",
                self.name()
            )));
        }
        Ok(match self {
            FilterAllocatorKind::Uniform => Arc::new(Uniform::new(bits_per_key)?),
            FilterAllocatorKind::Monkey => Arc::new(
                Monkey::new(
                    bits_per_key,
                    settings.expected_entries.max(1),
                    settings.buffer_entries.max(1),
                    settings.size_ratio,
                )?
                .with_tiering(settings.compaction.is_tiered())?,
            ),
            FilterAllocatorKind::Mnemosyne => Arc::new(Mnemosyne::new(bits_per_key)?),
            FilterAllocatorKind::MnemosyneMin1 => {
                Arc::new(Mnemosyne::new(bits_per_key)?.with_variant(Variant::MinimumBitsPerKeyOne))
            }
            FilterAllocatorKind::MnemosynePlus => Arc::new(MnemosynePlus::new(bits_per_key)?),
            FilterAllocatorKind::MnemosynePlusFirstCome => {
                Arc::new(MnemosynePlus::new(bits_per_key)?.with_standby_filters(false))
            }
            FilterAllocatorKind::Elastic => {
                let mut elastic = Elastic::new(bits_per_key)?;
                if let Some(modules) = settings.disk_modules {
                    elastic = elastic.with_disk_modules(modules)?;
                }
                Arc::new(match settings.budget_bytes {
                    Some(bytes) => elastic.with_budget_bytes(bytes)?,
                    None => elastic,
                })
            }
        })
    }
}

/// Parses a registered name; anything else is an [`Error::InvalidArgument`] listing the names.
fn parse_name<K: Copy>(
    what: &str,
    name: &str,
    all: &[K],
    name_of: impl Fn(K) -> &'static str,
) -> Result<K> {
    all.iter()
        .copied()
        .find(|&kind| name_of(kind) == name)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|&kind| name_of(kind)).collect();
            Error::InvalidArgument(format!(
                "unknown {what} {name:?}; the registered ones are {}",
                names.join(", ")
            ))
        })
}

impl FromStr for CompactionKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        parse_name(
            "compaction policy",
            name,
            CompactionKind::all(),
            CompactionKind::name,
        )
    }
}

impl FromStr for FilterAllocatorKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        parse_name(
            "filter allocator",
            name,
            FilterAllocatorKind::all(),
            FilterAllocatorKind::name,
        )
    }
}

impl fmt::Display for CompactionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for FilterAllocatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The default merge policy: leveling with RocksDB's defaults.
#[cfg(not(feature = "test-policy-override"))]
pub(crate) fn default_compaction_policy() -> Arc<dyn CompactionPolicy> {
    Arc::new(crate::compaction::Leveling::default())
}

/// The default merge policy, or the one `STRATA_TEST_COMPACTION` names from the registry
/// (the `test-policy-override` test hook, see `scripts/test_every_policy.sh`; it lives with the
/// registry, and `Options::default` only calls it).
/// Leveling runs at its default size ratio of 10, every other policy at 4, where 10 would leave
/// the tests' small trees on one level; an unknown name fails loudly rather than testing the
/// wrong policy.
#[cfg(feature = "test-policy-override")]
#[allow(
    clippy::expect_used,
    reason = "a test hook: a wrong name must stop the run"
)]
pub(crate) fn default_compaction_policy() -> Arc<dyn CompactionPolicy> {
    let name = std::env::var("STRATA_TEST_COMPACTION").unwrap_or_default();
    if name.is_empty() {
        return Arc::new(crate::compaction::Leveling::default());
    }
    let kind: CompactionKind = name
        .parse()
        .expect("STRATA_TEST_COMPACTION names a registered compaction policy");
    let size_ratio = match kind {
        CompactionKind::Leveling | CompactionKind::LevelingDynamic => 10.0,
        _ => 4.0,
    };
    kind.build(&CompactionSettings::with_size_ratio(size_ratio))
        .expect("valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_compaction_policy_parses_builds_and_refuses_bad_settings() {
        for &kind in CompactionKind::all() {
            assert_eq!(kind.name().parse::<CompactionKind>().ok(), Some(kind));
            assert_eq!(kind.to_string(), kind.name());
            let policy = kind
                .build(&CompactionSettings::with_size_ratio(4.0))
                .expect("builds");
            assert!(!policy.name().is_empty());
            assert_eq!(
                kind.build(&CompactionSettings::with_size_ratio(1.0))
                    .is_err(),
                kind.uses_size_ratio(),
                "{kind}: a size ratio below 2 is refused by every policy that has one"
            );
        }
        let bad_c = CompactionSettings {
            garnering_c: 1.5,
            ..CompactionSettings::with_size_ratio(4.0)
        };
        assert!(CompactionKind::Garnering.build(&bad_c).is_err());
        let bad_ecotune = CompactionSettings {
            ecotune: EcoTuneSettings {
                long_scan_ratio: 1.5,
                ..EcoTuneSettings::default()
            },
            ..CompactionSettings::with_size_ratio(4.0)
        };
        assert!(CompactionKind::Ecotune.build(&bad_ecotune).is_err());
        // A switch record written before EcoTune (no `ecotune` table) reads with its defaults.
        let old: CompactionSettings =
            toml::from_str("size_ratio = 4.0\ngarnering_c = 0.6").expect("an old record reads");
        assert_eq!(old.ecotune, EcoTuneSettings::default());
        assert_eq!(old.garnering_c, 0.6);
        let error = "levelling"
            .parse::<CompactionKind>()
            .expect_err("a misspelt name is refused");
        assert!(
            error.to_string().contains("lazy-leveling"),
            "the error lists the registered names: {error}"
        );
    }

    #[test]
    fn every_registered_filter_allocator_parses_and_builds_under_every_compaction_policy() {
        for &kind in FilterAllocatorKind::all() {
            assert_eq!(kind.name().parse::<FilterAllocatorKind>().ok(), Some(kind));
            for &compaction in CompactionKind::all() {
                let settings = FilterSettings {
                    bits_per_key: 5.0,
                    compaction,
                    size_ratio: 4.0,
                    expected_entries: 100_000,
                    buffer_entries: 1_000,
                    budget_bytes: None,
                    disk_modules: None,
                };
                let allocator = kind.build(&settings).expect("builds");
                assert_eq!(allocator.bits_per_key_budget(), 5.0, "{kind}");
                assert_eq!(
                    allocator.needs_access_statistics(),
                    kind.needs_access_statistics(),
                    "{kind}"
                );
                let invalid = FilterSettings {
                    bits_per_key: -1.0,
                    ..settings
                };
                assert!(kind.build(&invalid).is_err(), "{kind}: negative budget");
            }
        }
        assert!("bloom".parse::<FilterAllocatorKind>().is_err());
    }

    #[test]
    fn the_models_policies_are_built_as_the_registered_ones_of_the_same_name() {
        for policy in [
            MergePolicy::Leveling,
            MergePolicy::Tiering,
            MergePolicy::LazyLeveling,
            MergePolicy::Garnering {
                scaling_factor: 0.6,
            },
        ] {
            let (kind, garnering_c) = CompactionKind::for_model(policy);
            assert_eq!(kind.name(), policy.name());
            assert_eq!(garnering_c.is_some(), kind == CompactionKind::Garnering);
        }
        assert_eq!(
            CompactionKind::for_model(MergePolicy::Garnering {
                scaling_factor: 0.6
            }),
            (CompactionKind::Garnering, Some(0.6))
        );
        for filters in [FilterAllocation::Monkey, FilterAllocation::Uniform] {
            assert_eq!(
                FilterAllocatorKind::for_model(filters).name(),
                filters.name()
            );
        }
    }
}
