//! Filter-memory allocation (SPEC §3): how many bits per key each new table file's filter gets.
//!
//! The engine asks its [`FilterAllocator`] once per new file, when a flush or compaction has finished
//! writing the file's entries and is about to build its filter. The allocator sees the tree as it
//! is (a read-only [`Version`]) and the job in progress ([`FilterJob`]), so policies that re-divide
//! the budget per run or per file (Monkey, Mnemosyne, Mnemosyne+) need no engine changes. An
//! allocator never does I/O.

mod monkey;
pub mod solver;
mod uniform;

pub use monkey::Monkey;
pub use uniform::Uniform;

use std::fmt::Debug;

use crate::version::{FileMetadata, Version};

/// Why a file is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// A memtable flush (output on level 0).
    Flush,
    /// A compaction.
    Compaction,
}

/// A file of the job's input, by level, run and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobInput {
    /// Level the file is on.
    pub level: usize,
    /// Run the file belongs to.
    pub run_id: u64,
    /// File number.
    pub file_number: u64,
}

/// The flush or compaction a new file belongs to.
#[derive(Debug, Clone, Copy)]
pub struct FilterJob<'a> {
    /// Flush or compaction.
    pub kind: JobKind,
    /// Files the job replaces (empty for a flush). The tree after the job is the current tree
    /// without these, plus the job's outputs.
    pub inputs: &'a [JobInput],
    /// Level the outputs go to.
    pub output_level: usize,
    /// Run the outputs join.
    pub output_run_id: u64,
    /// Entry counts of the outputs this job has already finished.
    pub finished_outputs: &'a [u64],
}

/// The file about to get a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewFile {
    /// Number of the new file.
    pub file_number: u64,
    /// Entries in the new file (the filter holds one hash per distinct user key).
    pub entries: u64,
}

/// Decides the bits per key of every new file's filter (SPEC §3).
pub trait FilterAllocator: Send + Sync + Debug {
    /// A short name for reports (`uniform(10)`).
    fn name(&self) -> String;

    /// The filter budget in bits per key.
    fn bits_per_key_budget(&self) -> f64;

    /// Bits per key for `file` (0 = no filter). Called once per new file.
    fn bits_per_key(&self, tree: &Version, job: &FilterJob<'_>, file: &NewFile) -> f64;

    /// True if lookups should not probe this file's filter (its current optimal bits per key is
    /// 0, so the probe only costs CPU and possibly a block read). Uniform never skips.
    fn skip_filter(&self, _file: &FileMetadata) -> bool {
        false
    }
}
