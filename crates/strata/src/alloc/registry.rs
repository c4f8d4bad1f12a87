//! The filter allocators by name (DESIGN.md §3): the kind an options file, the CLI's
//! `--filter-policy`, the tuner's recommendation and a policy-switch record name, and the
//! settings it is built from. `crate::policy` re-exports them with the compaction registry.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Elastic, FilterAllocator, Mnemosyne, MnemosynePlus, Monkey, Uniform};
use crate::error::{Error, Result};
use crate::solver::Variant;

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

/// What Monkey needs to know of the compaction policy the tree runs to predict its shape: whether
/// it keeps several runs on every level. The compaction registry's kind implements it
/// (`crate::policy::FilterSettings` is `FilterSettings<CompactionKind>`); the allocators sit
/// below compaction and see only this.
pub trait PredictedShape {
    /// True if every level holds up to `T - 1` runs (Monkey then predicts a tiered tree).
    fn is_tiered(&self) -> bool;
}

/// What a filter allocator is built from besides its kind; `C` names the compaction policy the
/// tree runs (the registry's `CompactionKind`, written by its name).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FilterSettings<C> {
    /// The budget in bits per key.
    pub bits_per_key: f64,
    /// The compaction policy the tree runs (Monkey predicts its shape).
    pub compaction: C,
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

    /// The allocator with `settings`; an invalid budget is an [`Error::InvalidArgument`].
    pub fn build<C: PredictedShape>(
        self,
        settings: &FilterSettings<C>,
    ) -> Result<Arc<dyn FilterAllocator>> {
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

/// Parses a registered name (of a filter allocator or a compaction policy); anything else is an
/// [`Error::InvalidArgument`] listing the names.
pub(crate) fn parse_name<K: Copy>(
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

impl fmt::Display for FilterAllocatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
