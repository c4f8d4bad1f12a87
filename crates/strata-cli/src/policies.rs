//! The CLI's policy names are the engine's registry (`strata::policy`, built with its `clap`
//! feature so `--compaction` and `--filter-policy` parse the engine's own names): `bench`,
//! `inspect`, `simulate`, `stress`, `crash-test` and options files all take their names and
//! constructors from there. Adding a policy is a change to `strata::policy` only; what this
//! module adds is what only the CLI needs to know about a policy.
//!
//! (The bench's peers, `bench/engine/rocksdb_engine.rs` and `fjall_engine.rs`, map a compaction
//! kind to their own settings and need an arm too when they should run it.)

pub use strata::policy::{
    CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings, DEFAULT_GARNERING_C,
};

/// True if the bench's peers (RocksDB, fjall) have a counterpart of `kind`: leveling and tiering
/// (RocksDB's universal compaction). Lazy leveling and Garnering are Strata's alone, so the bench
/// runs them on Strata only.
pub fn peers_have(kind: CompactionKind) -> bool {
    matches!(
        kind,
        CompactionKind::Leveling | CompactionKind::LevelingDynamic | CompactionKind::Tiering
    )
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    #[test]
    fn the_command_line_and_the_json_spell_every_policy_as_the_engine_does() {
        for &kind in CompactionKind::all() {
            assert_eq!(CompactionKind::from_str(kind.name(), false), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("serializes"),
                serde_json::Value::from(kind.name())
            );
        }
        assert_eq!(CompactionKind::value_variants(), CompactionKind::all());
        for &kind in FilterAllocatorKind::all() {
            assert_eq!(FilterAllocatorKind::from_str(kind.name(), false), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("serializes"),
                serde_json::Value::from(kind.name())
            );
        }
        assert_eq!(
            FilterAllocatorKind::value_variants(),
            FilterAllocatorKind::all()
        );
        assert!(peers_have(CompactionKind::Tiering));
        assert!(!peers_have(CompactionKind::Garnering));
    }
}
