//! A policy that never compacts on its own: for opening a database to look at it (a database
//! written under another policy would otherwise start reshaping under the default one, since the
//! policy is not stored in the database), and for studies that need a tree to keep its shape.

use super::{CompactionContext, CompactionJob, CompactionPolicy, RunningCompactions};
use crate::version::Version;

/// Never compacts in the background; [`crate::Db::compact`] still merges the whole tree (the
/// trait's default full compaction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Manual;

impl CompactionPolicy for Manual {
    fn name(&self) -> String {
        "manual (no background compaction)".into()
    }

    fn pick(
        &self,
        _tree: &Version,
        _context: &CompactionContext,
        _running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::tests::new_file;
    use crate::version::VersionEdit;

    #[test]
    fn picks_nothing_but_still_compacts_in_full_when_asked() {
        // Ten level-0 runs: far past any trigger.
        let edit = VersionEdit {
            new_files: (0..10u64)
                .map(|i| new_file(0, i + 1, i + 1, "a", "z"))
                .collect(),
            ..Default::default()
        };
        let tree = Version::default().apply(&edit, None).expect("valid tree");
        let context = CompactionContext::new(1 << 20);
        assert_eq!(
            Manual.pick(&tree, &context, &RunningCompactions::none()),
            None
        );
        let full = Manual
            .full_compaction(&tree, &context)
            .expect("a full compaction");
        assert_eq!(full.inputs.len(), 10, "every run is an input");
    }
}
