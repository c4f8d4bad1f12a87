//! Switching the merge policy or the filter allocator of a running database
//! (`Db::set_compaction_policy`, `Db::set_filter_allocator`), and keeping the switch across a
//! reopen.
//!
//! A tuner that reads a live database (`strata tune --from-db`) is only useful if its
//! design can be applied without taking the database down. A compaction-policy switch swaps the
//! policy the compaction workers and the write-stall rule ask; the tree then reaches the new
//! policy's shape through ordinary compactions (every policy accepts a tree another one wrote:
//! leveling first merges a level's several runs into one, tiering and lazy leveling treat a single
//! run as a level that is not yet full). A filter-allocator switch decides the filters of every
//! file written from then on; existing filters stay as built until compaction rewrites them (or
//! `Db::rewrite_filters` does), and the new allocator re-derives which filters lookups skip from
//! the tree at once (`FilterAllocator::restore`). Neither costs a stop or a rewrite.
//!
//! **Why a switch is logged.** A database reopened with the options it was opened with before
//! should come back as it was left, switched policies included, or a restart would silently undo
//! a tuning decision. A switch is therefore logged in the manifest as a policy state (owner
//! [`Registry::OWNER`]) holding what was switched to, by registry name and settings
//! (`crate::policy`), and the name of the policy the database was *configured* with when it was
//! switched. On open:
//!
//! - configured policy the same as recorded (same `name()`): the user reopened with the same
//!   options, so the switch stands and the switched-to policy runs;
//! - configured policy different: the user has since chosen a policy explicitly in `Options`;
//!   that choice wins and the record is cleared, so a later reopen does not resurrect the old
//!   switch (a read-only open cannot clear it and only ignores it).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::alloc::FilterAllocator;
use crate::compaction::CompactionPolicy;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::policy::{CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings};
use crate::version::{PolicyState, Version};

/// A family of registered policies a running database can switch between.
pub(crate) trait Registry: Copy + std::fmt::Display + Serialize + DeserializeOwned {
    /// The settings a policy is built from.
    type Settings: Clone + std::fmt::Debug + PartialEq + Serialize + DeserializeOwned;
    /// What is built.
    type Policy: ?Sized + Send + Sync;
    /// The owner of the switch record among the manifest's policy states. Prefixed `engine.` so
    /// it cannot collide with a policy's own state (policies use their registry names).
    const OWNER: &'static str;
    /// Builds the policy.
    fn build_policy(self, settings: &Self::Settings) -> Result<Arc<Self::Policy>>;
    /// The policy's name (`CompactionPolicy::name`, `FilterAllocator::name`).
    fn name_of(policy: &Self::Policy) -> String;
}

impl Registry for CompactionKind {
    type Settings = CompactionSettings;
    type Policy = dyn CompactionPolicy;
    const OWNER: &'static str = "engine.compaction-policy";

    fn build_policy(self, settings: &CompactionSettings) -> Result<Arc<dyn CompactionPolicy>> {
        self.build(settings)
    }

    fn name_of(policy: &dyn CompactionPolicy) -> String {
        policy.name()
    }
}

impl Registry for FilterAllocatorKind {
    type Settings = FilterSettings;
    type Policy = dyn FilterAllocator;
    const OWNER: &'static str = "engine.filter-allocator";

    fn build_policy(self, settings: &FilterSettings) -> Result<Arc<dyn FilterAllocator>> {
        self.build(settings)
    }

    fn name_of(policy: &dyn FilterAllocator) -> String {
        policy.name()
    }
}

/// What the manifest records about a switch (TOML text in the policy state's bytes; an empty
/// state means no switch stands).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound(serialize = "K: Serialize", deserialize = "K: DeserializeOwned"))]
pub(crate) struct Switch<K: Registry> {
    /// `name()` of the policy the database's `Options` named when it switched.
    pub(crate) configured: String,
    /// The policy switched to.
    pub(crate) kind: K,
    /// Its settings.
    pub(crate) settings: K::Settings,
}

impl<K: Registry> Switch<K> {
    /// The policy state that records this switch.
    pub(crate) fn to_state(&self) -> Result<PolicyState> {
        let text = toml::to_string(self).map_err(|error| {
            Error::InvalidArgument(format!("the policy switch cannot be recorded: {error}"))
        })?;
        Ok(PolicyState {
            owner: K::OWNER.to_string(),
            bytes: text.into_bytes(),
        })
    }

    /// The policy state that clears any switch.
    pub(crate) fn cleared_state() -> PolicyState {
        PolicyState {
            owner: K::OWNER.to_string(),
            bytes: Vec::new(),
        }
    }

    /// The switch `tree`'s manifest records, if one stands. A record this build cannot read (a
    /// damaged or newer one; the manifest's checksums passed) is a corruption of the manifest.
    pub(crate) fn recorded(tree: &Version) -> Result<Option<Switch<K>>> {
        let Some(bytes) = tree.policy_state(K::OWNER) else {
            return Ok(None);
        };
        if bytes.is_empty() {
            return Ok(None);
        }
        let text =
            std::str::from_utf8(bytes).map_err(|error| unreadable::<K>(error.to_string()))?;
        toml::from_str(text)
            .map(Some)
            .map_err(|error: toml::de::Error| unreadable::<K>(error.to_string()))
    }
}

fn unreadable<K: Registry>(reason: String) -> Error {
    Error::Corruption {
        file: "MANIFEST".into(),
        offset: 0,
        reason: format!("the recorded {} switch is unreadable: {reason}", K::OWNER),
    }
}

/// The policy a database opens with, given the policy its `Options` configure and the tree
/// recovered from the manifest; and, when the configured policy overrides a recorded switch, the
/// state that clears the record (see the module documentation).
pub(crate) struct PolicyAtOpen<P: ?Sized> {
    /// The policy to run.
    pub(crate) policy: Arc<P>,
    /// A state to log at open, if any.
    pub(crate) clear: Option<PolicyState>,
    /// A line for the info log saying what was decided, if there was a switch on record.
    pub(crate) note: Option<String>,
}

/// Decides the policy of family `K` to open with (module documentation).
pub(crate) fn policy_at_open<K: Registry>(
    configured: &Arc<K::Policy>,
    tree: &Version,
) -> Result<PolicyAtOpen<K::Policy>> {
    let Some(switch) = Switch::<K>::recorded(tree)? else {
        return Ok(PolicyAtOpen {
            policy: Arc::clone(configured),
            clear: None,
            note: None,
        });
    };
    let configured_name = K::name_of(configured);
    if switch.configured == configured_name {
        let policy = switch
            .kind
            .build_policy(&switch.settings)
            .map_err(|error| unreadable::<K>(format!("it names an invalid policy: {error}")))?;
        let note = format!(
            "{} {} (switched at run time from the configured {}; kept)",
            K::OWNER,
            K::name_of(&policy),
            switch.configured
        );
        return Ok(PolicyAtOpen {
            policy,
            clear: None,
            note: Some(note),
        });
    }
    Ok(PolicyAtOpen {
        policy: Arc::clone(configured),
        clear: Some(Switch::<K>::cleared_state()),
        note: Some(format!(
            "{} {configured_name} from the options; the run-time switch to {} made when {} was \
             configured no longer applies and is cleared",
            K::OWNER,
            switch.kind,
            switch.configured
        )),
    })
}

/// Both policies a database opens with (module documentation), the states that clear
/// overridden switches, and what to say in the info log.
pub(crate) struct PoliciesAtOpen {
    pub(crate) compaction_policy: Arc<dyn CompactionPolicy>,
    pub(crate) filter_allocator: Arc<dyn FilterAllocator>,
    pub(crate) clear: Vec<PolicyState>,
    pub(crate) notes: Vec<String>,
}

/// Decides both policies for a database configured with `options` whose recovered tree is
/// `tree`.
pub(crate) fn policies_at_open(options: &Options, tree: &Version) -> Result<PoliciesAtOpen> {
    let compaction = policy_at_open::<CompactionKind>(&options.compaction_policy, tree)?;
    let filters = policy_at_open::<FilterAllocatorKind>(&options.filter_allocator, tree)?;
    Ok(PoliciesAtOpen {
        compaction_policy: compaction.policy,
        filter_allocator: filters.policy,
        clear: compaction.clear.into_iter().chain(filters.clear).collect(),
        notes: compaction.note.into_iter().chain(filters.note).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{CompactionSettings, FilterSettings};

    type CompactionSwitch = Switch<CompactionKind>;

    fn tree_with(states: Vec<PolicyState>) -> Version {
        let mut builder = Version::builder();
        for state in states {
            builder = builder.policy_state(state);
        }
        builder.build().expect("builds")
    }

    fn switch_from(configured: &Arc<dyn CompactionPolicy>) -> CompactionSwitch {
        CompactionSwitch {
            configured: configured.name(),
            kind: CompactionKind::Garnering,
            settings: CompactionSettings {
                garnering_c: 0.6,
                ..CompactionSettings::with_size_ratio(3.0)
            },
        }
    }

    fn leveling() -> Arc<dyn CompactionPolicy> {
        CompactionKind::Leveling
            .build(&CompactionSettings::with_size_ratio(10.0))
            .expect("builds")
    }

    #[test]
    fn no_record_runs_the_configured_policy() {
        let configured = leveling();
        let decided =
            policy_at_open::<CompactionKind>(&configured, &tree_with(Vec::new())).expect("decides");
        assert_eq!(decided.policy.name(), configured.name());
        assert!(decided.clear.is_none() && decided.note.is_none());
        let cleared = tree_with(vec![CompactionSwitch::cleared_state()]);
        let decided = policy_at_open::<CompactionKind>(&configured, &cleared).expect("decides");
        assert_eq!(decided.policy.name(), configured.name());
        assert!(decided.clear.is_none());
    }

    #[test]
    fn the_same_configuration_keeps_the_switch_and_a_new_one_clears_it() {
        let configured = leveling();
        let switch = switch_from(&configured);
        let tree = tree_with(vec![switch.to_state().expect("records")]);
        assert_eq!(
            CompactionSwitch::recorded(&tree).expect("reads"),
            Some(switch)
        );
        let kept = policy_at_open::<CompactionKind>(&configured, &tree).expect("decides");
        assert!(
            kept.policy.name().contains("garnering"),
            "{}",
            kept.policy.name()
        );
        assert!(kept.clear.is_none());
        let other = CompactionKind::Tiering
            .build(&CompactionSettings::with_size_ratio(4.0))
            .expect("builds");
        let overridden = policy_at_open::<CompactionKind>(&other, &tree).expect("decides");
        assert_eq!(overridden.policy.name(), other.name());
        assert_eq!(overridden.clear, Some(CompactionSwitch::cleared_state()));
    }

    #[test]
    fn an_unreadable_record_is_a_corruption_not_a_panic() {
        for bytes in [b"\xff\xfe".to_vec(), b"kind = 7".to_vec(), b"[[".to_vec()] {
            let tree = tree_with(vec![PolicyState {
                owner: <CompactionKind as Registry>::OWNER.to_string(),
                bytes,
            }]);
            assert!(matches!(
                policy_at_open::<CompactionKind>(&leveling(), &tree),
                Err(Error::Corruption { .. })
            ));
        }
        let configured = leveling();
        let mut invalid = switch_from(&configured);
        invalid.settings.size_ratio = 0.5;
        let tree = tree_with(vec![invalid.to_state().expect("records")]);
        assert!(matches!(
            policy_at_open::<CompactionKind>(&configured, &tree),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn a_filter_allocator_switch_round_trips_through_the_manifest_record() {
        let configured: Arc<dyn FilterAllocator> = FilterAllocatorKind::Uniform
            .build(&FilterSettings {
                bits_per_key: 10.0,
                compaction: CompactionKind::Leveling,
                size_ratio: 10.0,
                expected_entries: 0,
                buffer_entries: 0,
                budget_bytes: None,
                disk_modules: None,
            })
            .expect("builds");
        let switch = Switch::<FilterAllocatorKind> {
            configured: configured.name(),
            kind: FilterAllocatorKind::Monkey,
            settings: FilterSettings {
                bits_per_key: 4.0,
                compaction: CompactionKind::Tiering,
                size_ratio: 4.0,
                expected_entries: 1_000_000,
                buffer_entries: 10_000,
                budget_bytes: None,
                disk_modules: None,
            },
        };
        let tree = tree_with(vec![switch.to_state().expect("records")]);
        assert_eq!(
            Switch::<FilterAllocatorKind>::recorded(&tree).expect("reads"),
            Some(switch)
        );
        let kept = policy_at_open::<FilterAllocatorKind>(&configured, &tree).expect("decides");
        assert!(
            kept.policy.name().contains("monkey"),
            "{}",
            kept.policy.name()
        );
        assert_eq!(kept.policy.bits_per_key_budget(), 4.0);
        // The compaction record is another owner: untouched by the allocator's.
        assert_eq!(CompactionSwitch::recorded(&tree).expect("reads"), None);
    }
}
