//! Compaction: *what* to merge is decided by a [`CompactionPolicy`] (one file per policy, SPEC §5),
//! *how* is the executor's job (`executor.rs`: a k-way merge that keeps every version a live
//! snapshot can see and drops tombstones only where nothing older lies below).
//!
//! A policy reads the public, read-only [`Version`] and returns a [`CompactionJob`] or nothing. It
//! does no I/O, so it can be unit-tested on synthetic trees.

pub(crate) mod executor;
mod leveling;
mod manual;
mod tiering;

pub use leveling::Leveling;
pub use manual::Manual;
pub use tiering::Tiering;

use std::fmt::Debug;

use crate::version::Version;

/// Engine settings a policy needs to size levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionContext {
    /// Bytes of one memtable when it is flushed (`Options::write_buffer_bytes`).
    pub write_buffer_bytes: u64,
    /// Level-0 runs that trigger a level-0 compaction.
    pub level0_compaction_trigger: usize,
}

/// Where a job's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputRun {
    /// Join this existing run of the output level (leveling's partial compaction).
    Existing(u64),
    /// Start a new run (newer than every run already on the output level).
    New,
}

/// Files of one run taken as input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInput {
    /// The run's level.
    pub level: usize,
    /// The run.
    pub run_id: u64,
    /// Numbers of the run's files that are merged.
    pub file_numbers: Vec<u64>,
}

/// A compaction to run: merge the inputs into `output_level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionJob {
    /// Inputs, newest run first.
    pub inputs: Vec<RunInput>,
    /// Level of the output run.
    pub output_level: usize,
    /// The run the outputs join.
    pub output_run: OutputRun,
    /// Why the policy chose this job (for logs and `strata simulate`).
    pub reason: String,
}

impl CompactionJob {
    /// Number of input files.
    pub fn input_file_count(&self) -> usize {
        self.inputs.iter().map(|i| i.file_numbers.len()).sum()
    }
}

/// Decides the next compaction from the tree's shape (SPEC §5).
pub trait CompactionPolicy: Send + Sync + Debug {
    /// A short name for reports (`leveling(T=10)`).
    fn name(&self) -> String;

    /// The next job, or `None` when the tree is in shape.
    fn pick(&self, tree: &Version, context: &CompactionContext) -> Option<CompactionJob>;

    /// The job that compacts the whole tree into one run (`Db::compact`): by default every run
    /// into the deepest non-empty level (level 1 at least).
    fn full_compaction(
        &self,
        tree: &Version,
        context: &CompactionContext,
    ) -> Option<CompactionJob> {
        default_full_compaction(tree, context)
    }
}

/// Every run of the tree merged into one new run on the deepest non-empty level (level 1 at
/// least).
pub fn default_full_compaction(
    tree: &Version,
    _context: &CompactionContext,
) -> Option<CompactionJob> {
    let last = tree.last_non_empty_level()?;
    let inputs: Vec<RunInput> = tree
        .levels()
        .iter()
        .enumerate()
        .flat_map(|(level, l)| l.runs().iter().map(move |run| whole_run(level, run)))
        .collect();
    Some(CompactionJob {
        inputs,
        output_level: last.max(1),
        output_run: OutputRun::New,
        reason: "full compaction".into(),
    })
}

/// Validates a policy's deepest level (`1..MAX_LEVELS`).
pub(crate) fn check_last_level(last_level: usize) -> crate::Result<usize> {
    if !(1..crate::version::MAX_LEVELS).contains(&last_level) {
        return Err(crate::Error::InvalidArgument(format!(
            "last_level must be between 1 and {}, got {last_level}",
            crate::version::MAX_LEVELS - 1
        )));
    }
    Ok(last_level)
}

/// A run input holding all files of `run`.
pub(crate) fn whole_run(level: usize, run: &crate::version::Run) -> RunInput {
    RunInput {
        level,
        run_id: run.id(),
        file_numbers: run.files().iter().map(|f| f.number()).collect(),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::CompactionContext;
    use crate::version::tests::new_file;
    use crate::version::{Version, VersionEdit};

    /// The engine settings policy tests run with: a 1,000-byte write buffer, level-0 trigger 2.
    pub(crate) const CONTEXT: CompactionContext = CompactionContext {
        write_buffer_bytes: 1000,
        level0_compaction_trigger: 2,
    };

    /// Builds a version from `(level, run_id, number, smallest, largest, bytes)` tuples.
    pub(crate) fn tree(files: &[(usize, u64, u64, &str, &str, u64)]) -> Version {
        let edit = VersionEdit {
            new_files: files
                .iter()
                .map(|&(level, run, number, lo, hi, bytes)| {
                    let mut file = new_file(level, run, number, lo, hi);
                    file.file_bytes = bytes;
                    file.entries = bytes / 100;
                    file
                })
                .collect(),
            ..Default::default()
        };
        Version::default()
            .apply(&edit, None)
            .expect("valid test tree")
    }
}
