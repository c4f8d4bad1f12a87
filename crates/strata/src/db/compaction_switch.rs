//! Switching the merge policy of a running database (`Db::set_compaction_policy`), and keeping
//! the switch across a reopen.
//!
//! A tuner that reads a live database (issue 16's `strata tune --from-db`) is only useful if its
//! design can be applied without taking the database down. A switch swaps the policy the
//! compaction workers and the write-stall rule ask; the tree then reaches the new policy's shape
//! through ordinary compactions (every policy accepts a tree another one wrote: leveling first
//! merges a level's several runs into one, tiering and lazy leveling treat a single run as a
//! level that is not yet full), so a switch costs no stop and no rewrite.
//!
//! **Why a switch is logged.** A database reopened with the options it was opened with before
//! should come back as it was left, switched policy included, or a restart would silently undo a
//! tuning decision. The switch is therefore logged in the manifest as a policy state
//! ([`SWITCH_OWNER`]) holding the policy switched to, by registry name and settings
//! (`crate::policy`), and the name of the policy the database was *configured* with when it was
//! switched. On open:
//!
//! - configured policy the same as recorded (same `CompactionPolicy::name`): the user reopened
//!   with the same options, so the switch stands and the switched-to policy runs;
//! - configured policy different: the user has since chosen a policy explicitly in `Options`;
//!   that choice wins and the record is cleared, so a later reopen does not resurrect the old
//!   switch (a read-only open cannot clear it and only ignores it).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::compaction::CompactionPolicy;
use crate::error::{Error, Result};
use crate::policy::{CompactionKind, CompactionSettings};
use crate::version::{PolicyState, Version};

/// The owner of the switch record among the manifest's policy states. Prefixed `engine.` so it
/// cannot collide with a policy's own state (policies use their registry names).
pub(crate) const SWITCH_OWNER: &str = "engine.compaction-policy";

/// What the manifest records about a switch (TOML text in the policy state's bytes; an empty
/// state means no switch stands).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompactionSwitch {
    /// `CompactionPolicy::name` of the policy the database's `Options` named when it switched.
    pub(crate) configured: String,
    /// The policy switched to.
    pub(crate) kind: CompactionKind,
    /// Its settings.
    pub(crate) settings: CompactionSettings,
}

impl CompactionSwitch {
    /// The policy state that records this switch.
    pub(crate) fn to_state(&self) -> Result<PolicyState> {
        let text = toml::to_string(self).map_err(|error| {
            Error::InvalidArgument(format!("the policy switch cannot be recorded: {error}"))
        })?;
        Ok(PolicyState {
            owner: SWITCH_OWNER.to_string(),
            bytes: text.into_bytes(),
        })
    }

    /// The policy state that clears any switch.
    pub(crate) fn cleared_state() -> PolicyState {
        PolicyState {
            owner: SWITCH_OWNER.to_string(),
            bytes: Vec::new(),
        }
    }

    /// The switch `tree`'s manifest records, if one stands. A record this build cannot read (a
    /// damaged or newer one; the manifest's checksums passed) is a corruption of the manifest.
    pub(crate) fn recorded(tree: &Version) -> Result<Option<CompactionSwitch>> {
        let Some(bytes) = tree.policy_state(SWITCH_OWNER) else {
            return Ok(None);
        };
        if bytes.is_empty() {
            return Ok(None);
        }
        let unreadable = |reason: String| Error::Corruption {
            file: "MANIFEST".into(),
            offset: 0,
            reason: format!("the recorded compaction-policy switch is unreadable: {reason}"),
        };
        let text = std::str::from_utf8(bytes).map_err(|error| unreadable(error.to_string()))?;
        toml::from_str(text)
            .map(Some)
            .map_err(|error: toml::de::Error| unreadable(error.to_string()))
    }
}

/// The policy a database opens with, given the policy its `Options` configure and the tree
/// recovered from the manifest; and, when the configured policy overrides a recorded switch, the
/// state that clears the record (see the module documentation).
pub(crate) struct PolicyAtOpen {
    /// The policy to run.
    pub(crate) policy: Arc<dyn CompactionPolicy>,
    /// A state to log at open, if any.
    pub(crate) clear: Option<PolicyState>,
    /// A line for the info log saying what was decided, if there was a switch on record.
    pub(crate) note: Option<String>,
}

/// Decides the policy to open with (module documentation).
pub(crate) fn policy_at_open(
    configured: &Arc<dyn CompactionPolicy>,
    tree: &Version,
) -> Result<PolicyAtOpen> {
    let Some(switch) = CompactionSwitch::recorded(tree)? else {
        return Ok(PolicyAtOpen {
            policy: Arc::clone(configured),
            clear: None,
            note: None,
        });
    };
    if switch.configured == configured.name() {
        let policy = switch
            .kind
            .build(&switch.settings)
            .map_err(|error| Error::Corruption {
                file: "MANIFEST".into(),
                offset: 0,
                reason: format!(
                    "the recorded compaction-policy switch names an invalid policy: {error}"
                ),
            })?;
        let note = format!(
            "compaction policy {} (switched at run time from the configured {}; kept)",
            policy.name(),
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
        clear: Some(CompactionSwitch::cleared_state()),
        note: Some(format!(
            "compaction policy {} from the options; the run-time switch to {} made when {} was \
             configured no longer applies and is cleared",
            configured.name(),
            switch.kind,
            switch.configured
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::CompactionSettings;

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
                size_ratio: 3.0,
                garnering_c: 0.6,
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
        let decided = policy_at_open(&configured, &tree_with(Vec::new())).expect("decides");
        assert_eq!(decided.policy.name(), configured.name());
        assert!(decided.clear.is_none() && decided.note.is_none());
        let cleared = tree_with(vec![CompactionSwitch::cleared_state()]);
        let decided = policy_at_open(&configured, &cleared).expect("decides");
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
        let kept = policy_at_open(&configured, &tree).expect("decides");
        assert!(
            kept.policy.name().contains("garnering"),
            "{}",
            kept.policy.name()
        );
        assert!(kept.clear.is_none());
        let other = CompactionKind::Tiering
            .build(&CompactionSettings::with_size_ratio(4.0))
            .expect("builds");
        let overridden = policy_at_open(&other, &tree).expect("decides");
        assert_eq!(overridden.policy.name(), other.name());
        assert_eq!(overridden.clear, Some(CompactionSwitch::cleared_state()));
    }

    #[test]
    fn an_unreadable_record_is_a_corruption_not_a_panic() {
        for bytes in [b"\xff\xfe".to_vec(), b"kind = 7".to_vec(), b"[[".to_vec()] {
            let tree = tree_with(vec![PolicyState {
                owner: SWITCH_OWNER.to_string(),
                bytes,
            }]);
            assert!(matches!(
                policy_at_open(&leveling(), &tree),
                Err(Error::Corruption { .. })
            ));
        }
        let configured = leveling();
        let mut invalid = switch_from(&configured);
        invalid.settings.size_ratio = 0.5;
        let tree = tree_with(vec![invalid.to_state().expect("records")]);
        assert!(matches!(
            policy_at_open(&configured, &tree),
            Err(Error::Corruption { .. })
        ));
    }
}
