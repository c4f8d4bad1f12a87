//! The engine's one policy registry, by the names it is known by outside the engine: every
//! compaction (merge) policy and filter allocator Strata offers, by name and by the parameters it
//! is built from.
//!
//! A policy object is a trait object (`Arc<dyn CompactionPolicy>`, `Arc<dyn FilterAllocator>`),
//! which cannot be written to a file or read back. Whatever must name a policy outside the
//! running process — an options file (`crate::options_file`), the CLI's `--compaction` and
//! `--filter-policy`, the tuner's recommendation, the test hook that runs every test under every
//! policy — names it by a kind plus settings, and builds the object with `build`. The kinds live
//! with what they build: [`CompactionKind`] in `crate::compaction` (registering a merge policy is
//! that module's file, docs/ARCHITECTURE.md "Adding a merge policy"), [`FilterAllocatorKind`] in
//! `crate::alloc`; this module re-exports them and ties the allocators' settings to the
//! compaction kind.

use std::sync::Arc;

pub use crate::alloc::FilterAllocatorKind;
use crate::compaction::CompactionPolicy;
pub use crate::compaction::{CompactionKind, CompactionSettings, DEFAULT_GARNERING_C};

/// What a filter allocator is built from besides its kind (`crate::alloc::FilterSettings`, with
/// the compaction policy the tree runs named by its registry kind).
pub type FilterSettings = crate::alloc::FilterSettings<CompactionKind>;

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
    use crate::compaction::ecotune::EcoTuneSettings;

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
                long_scan_ratio: Some(1.5),
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
        // ... and the settings added since (level settings, Moose's shape) are written only when
        // set: a record of the old settings is written as before.
        let written = toml::to_string(&CompactionSettings::with_size_ratio(4.0)).expect("writes");
        assert_eq!(
            written,
            "size_ratio = 4.0\ngarnering_c = 0.8\n\n[ecotune]\nccap = 3\nbeta_q = 0.5\n\
             max_units = 32\ntop_level_index = true\n"
        );
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
}
