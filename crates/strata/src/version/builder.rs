//! Building a [`Version`] from outside the engine: for simulators (`strata simulate`) and for
//! unit tests of policies written outside the crate.
//!
//! A [`VersionBuilder`] collects the same version edit a flush or compaction logs (files added and
//! removed, policy states set) and applies it with the engine's own `Version::apply`, so a built
//! version is exactly what the engine's versions are: same ordering of runs and files, same
//! checks. What the engine would refuse the builder refuses too, with
//! [`Error::InvalidArgument`], never a panic: a level past [`MAX_LEVELS`], a file whose smallest
//! key is above its largest, overlapping files in one run, a file number used twice, removing a
//! file that is not there.
//!
//! Files are described by [`FileMetadata`] itself ([`FileMetadata::new`] and its `with_*`
//! setters), the one type the tree uses for a table file. [`Version::with_job_applied`] is the
//! builder seeded from an existing version with a compaction job's inputs removed and its outputs
//! added: how a simulator installs a job's result.

use std::sync::Arc;

use super::job::{check_recency_order, CompactionJob, OutputRun};
use super::{FileMetadata, FileState, PolicyState, Version, MAX_LEVELS};
use crate::error::{Error, Result};
use crate::key::{encode_internal_key, ValueKind, MAX_SEQUENCE};
use crate::version::edit::{AddedFile, DeletedFile, VersionEdit};

impl FileMetadata {
    /// A file `number` holding user keys `smallest_user_key..=largest_user_key`, with no entries,
    /// no bytes, no filter and sequence numbers 0 until the `with_*` setters say otherwise. Such a
    /// file describes a table for a [`VersionBuilder`]; it names no file on disk.
    pub fn new(number: u64, smallest_user_key: &[u8], largest_user_key: &[u8]) -> Self {
        FileMetadata {
            number,
            file_bytes: 0,
            entries: 0,
            smallest: encode_internal_key(smallest_user_key, 0, ValueKind::Value),
            largest: encode_internal_key(largest_user_key, 0, ValueKind::Value),
            smallest_sequence: 0,
            largest_sequence: 0,
            bits_per_key: 0.0,
            filter_bytes: 0,
            filter_layout: crate::FilterLayout::default(),
            state: FileState::new(number, None),
        }
    }

    /// Sets the number of entries.
    pub fn with_entries(mut self, entries: u64) -> Self {
        self.entries = entries;
        self
    }

    /// Sets the size on disk.
    pub fn with_file_bytes(mut self, file_bytes: u64) -> Self {
        self.file_bytes = file_bytes;
        self
    }

    /// Sets the filter: its bits per key (0 = none) and the bytes of its filter block.
    pub fn with_filter(mut self, bits_per_key: f64, filter_bytes: u64) -> Self {
        self.bits_per_key = bits_per_key;
        self.filter_bytes = filter_bytes;
        self
    }

    /// Sets the key-range partitions of the filter (at least 1).
    pub fn with_filter_partitions(mut self, partitions: u32) -> Self {
        self.filter_layout.partitions = partitions.max(1);
        self
    }

    /// Sets the family of the filter's modules.
    pub fn with_filter_family(mut self, family: crate::FilterFamily) -> Self {
        self.filter_layout.family = family;
        self
    }

    /// A new metadata with `self`'s facts (number, key range, sequences, entries, bytes and
    /// filter), not its open reader or access statistics: for simulators and tests that rebuild
    /// a tree from another one's files.
    pub fn copy_facts(&self) -> FileMetadata {
        FileMetadata::new(
            self.number(),
            self.smallest_user_key(),
            self.largest_user_key(),
        )
        .with_entries(self.entries())
        .with_file_bytes(self.file_bytes())
        .with_filter(self.bits_per_key(), self.filter_bytes())
        .with_filter_partitions(self.filter_partitions())
        .with_filter_family(self.filter_family())
        .with_sequences(self.smallest_sequence(), self.largest_sequence())
    }

    /// Sets the oldest and newest sequence numbers of the file's entries.
    pub fn with_sequences(mut self, smallest_sequence: u64, largest_sequence: u64) -> Self {
        // The smallest internal key is the smallest user key at its newest version, the largest
        // the largest user key at its oldest; only the user keys matter to the tree's order.
        self.smallest = encode_internal_key(
            self.smallest_user_key(),
            largest_sequence.min(MAX_SEQUENCE),
            ValueKind::Value,
        );
        self.largest = encode_internal_key(
            self.largest_user_key(),
            smallest_sequence.min(MAX_SEQUENCE),
            ValueKind::Value,
        );
        self.smallest_sequence = smallest_sequence;
        self.largest_sequence = largest_sequence;
        self
    }

    /// Oldest sequence number in the file.
    pub fn smallest_sequence(&self) -> u64 {
        self.smallest_sequence
    }

    fn check(&self, level: usize) -> Result<()> {
        let invalid = |what: String| {
            Err(Error::InvalidArgument(format!(
                "file {} on level {level}: {what}",
                self.number
            )))
        };
        if level >= MAX_LEVELS {
            return invalid(format!("level must be below {MAX_LEVELS}"));
        }
        if self.smallest_user_key() > self.largest_user_key() {
            return invalid("smallest key is above the largest".into());
        }
        if !self.bits_per_key.is_finite() || self.bits_per_key < 0.0 {
            return invalid(format!(
                "bits per key must be finite and at least 0, got {}",
                self.bits_per_key
            ));
        }
        if self.smallest_sequence > self.largest_sequence || self.largest_sequence > MAX_SEQUENCE {
            return invalid(format!(
                "sequence numbers {}..={} are not an ascending range below {MAX_SEQUENCE}",
                self.smallest_sequence, self.largest_sequence
            ));
        }
        Ok(())
    }
}

/// Builds a [`Version`]: from the empty tree ([`Version::builder`]) or from an existing one
/// ([`Version::to_builder`]). See the module docs.
#[derive(Debug)]
pub struct VersionBuilder {
    base: Version,
    edit: VersionEdit,
    /// The first invalid call, reported by [`VersionBuilder::build`].
    error: Option<Error>,
}

impl Version {
    /// A builder for a tree made from scratch.
    pub fn builder() -> VersionBuilder {
        Version::default().to_builder()
    }

    /// A builder that starts from this tree.
    pub fn to_builder(&self) -> VersionBuilder {
        VersionBuilder {
            base: self.clone(),
            edit: VersionEdit::default(),
            error: None,
        }
    }

    /// The tree after `job` ran: its input files removed, `outputs` (in any order) added to its
    /// output level, in run `job.output_run` (`OutputRun::New` becomes run `new_run_id`, which
    /// must be newer than every run of that level), and its policy state set. A state-only job
    /// ([`CompactionJob::state_only`]) takes no outputs and changes only the state.
    ///
    /// The job must keep the tree's recency order, checked as the engine checks it before it
    /// runs a job; a trivial move is the input file passed back as the output (same number).
    pub fn with_job_applied(
        &self,
        job: &CompactionJob,
        new_run_id: u64,
        outputs: Vec<FileMetadata>,
    ) -> Result<Version> {
        let mut builder = self.to_builder();
        if job.is_state_only() {
            if !outputs.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "a state-only job ({}) has no outputs, got {}",
                    job.reason,
                    outputs.len()
                )));
            }
        } else {
            check_recency_order(job, self)?;
            let output_run_id = match job.output_run {
                OutputRun::Existing(id) => id,
                OutputRun::New => {
                    let newest = self
                        .levels
                        .get(job.output_level)
                        .and_then(|level| level.runs.first())
                        .map(|run| run.id);
                    if newest.is_some_and(|newest| newest >= new_run_id) {
                        return Err(Error::InvalidArgument(format!(
                            "new run {new_run_id} is not newer than every run of level {}",
                            job.output_level
                        )));
                    }
                    new_run_id
                }
            };
            for input in &job.inputs {
                for &number in &input.file_numbers {
                    builder = builder.remove_file(input.level, input.run_id, number);
                }
            }
            for file in outputs {
                builder = builder.add_file(job.output_level, output_run_id, file);
            }
        }
        if let Some(state) = &job.state {
            builder = builder.policy_state(state.clone());
        }
        builder.build()
    }
}

impl VersionBuilder {
    /// Adds `file` to run `run_id` of `level` (the run is created if the level has none with that
    /// id; a larger id is a newer run).
    pub fn add_file(mut self, level: usize, run_id: u64, file: FileMetadata) -> Self {
        if let Err(error) = file.check(level) {
            self.error.get_or_insert(error);
            return self;
        }
        self.edit.new_files.push(AddedFile {
            level,
            run_id,
            file: Arc::new(file),
        });
        self
    }

    /// Removes file `number` from run `run_id` of `level` (removals apply before additions, so a
    /// file removed and added again moves, as in a trivial move).
    pub fn remove_file(mut self, level: usize, run_id: u64, number: u64) -> Self {
        self.edit.deleted_files.push(DeletedFile {
            level,
            run_id,
            number,
        });
        self
    }

    /// Sets the policy state of `state.owner` (see [`PolicyState`]).
    pub fn policy_state(mut self, state: PolicyState) -> Self {
        if state.owner.is_empty() {
            self.error.get_or_insert(Error::InvalidArgument(
                "a policy state needs an owner".into(),
            ));
            return self;
        }
        self.edit.policy_states.push(state);
        self
    }

    /// The tree, or [`Error::InvalidArgument`] saying what does not fit (see the module docs).
    pub fn build(self) -> Result<Version> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let version = self
            .base
            .applied(&self.edit, None)
            .map_err(Error::InvalidArgument)?;
        // Sorted, not hashed: a simulator builds a tree at every flush and merge, and over a
        // tree of hundreds of files hashing every number took a third of a replay's time.
        let mut numbers: Vec<u64> = version.files().map(|(_, _, file)| file.number).collect();
        numbers.sort_unstable();
        if let Some(pair) = numbers.windows(2).find(|pair| pair[0] == pair[1]) {
            let number = pair[0];
            let again = version
                .files()
                .filter(|(_, _, file)| file.number == number)
                .nth(1)
                .map_or(String::new(), |(level, run_id, _)| {
                    format!(" (again in run {run_id} of level {level})")
                });
            return Err(Error::InvalidArgument(format!(
                "file number {number} is used twice{again}"
            )));
        }
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{CompactionJob, JobAction, RunInput};

    fn file(number: u64, lo: &str, hi: &str) -> FileMetadata {
        FileMetadata::new(number, lo.as_bytes(), hi.as_bytes())
            .with_entries(100)
            .with_file_bytes(10_000)
            .with_filter(10.0, 125)
            .with_sequences(1, 100)
    }

    #[test]
    fn a_built_tree_orders_runs_and_files_like_the_engines() {
        let tree = Version::builder()
            .add_file(0, 1, file(1, "a", "m"))
            .add_file(0, 2, file(2, "c", "z"))
            .add_file(1, 3, file(4, "n", "z"))
            .add_file(1, 3, file(3, "a", "f"))
            .policy_state(PolicyState {
                owner: "garnering".into(),
                bytes: vec![3],
            })
            .build()
            .expect("valid tree");
        let ids: Vec<u64> = tree.levels()[0].runs().iter().map(|r| r.id()).collect();
        assert_eq!(ids, [2, 1], "newest run first");
        let numbers: Vec<u64> = tree.levels()[1].runs()[0]
            .files()
            .iter()
            .map(|f| f.number())
            .collect();
        assert_eq!(numbers, [3, 4], "files in key order");
        let first = &tree.levels()[1].runs()[0].files()[0];
        assert_eq!(first.smallest_user_key(), b"a");
        assert_eq!(first.largest_user_key(), b"f");
        assert_eq!(first.entries(), 100);
        assert_eq!(first.file_bytes(), 10_000);
        assert_eq!(first.bits_per_key(), 10.0);
        assert_eq!(first.filter_bytes(), 125);
        assert_eq!(first.largest_sequence(), 100);
        assert_eq!(tree.policy_state("garnering"), Some(&[3u8][..]));
        assert_eq!(tree.entries(), 400);
        assert_eq!(tree.run_count(), 3);
    }

    #[test]
    fn invalid_trees_are_typed_errors() {
        let invalid = |builder: VersionBuilder| {
            assert!(matches!(builder.build(), Err(Error::InvalidArgument(_))));
        };
        invalid(
            Version::builder()
                .add_file(1, 1, file(1, "a", "m"))
                .add_file(1, 1, file(2, "k", "z")),
        );
        invalid(Version::builder().add_file(MAX_LEVELS, 1, file(1, "a", "b")));
        invalid(Version::builder().add_file(1, 1, file(1, "z", "a")));
        invalid(Version::builder().add_file(1, 1, file(1, "a", "b").with_filter(f64::NAN, 0)));
        invalid(Version::builder().add_file(1, 1, file(1, "a", "b").with_sequences(5, 4)));
        invalid(
            Version::builder()
                .add_file(1, 1, file(1, "a", "b"))
                .add_file(2, 2, file(1, "c", "d")),
        );
        // A number used twice is named with the second place it is used.
        let twice = Version::builder()
            .add_file(1, 1, file(7, "a", "b"))
            .add_file(3, 2, file(7, "c", "d"))
            .build()
            .expect_err("a number used twice");
        assert_eq!(
            twice.to_string(),
            Error::InvalidArgument(
                "file number 7 is used twice (again in run 2 of level 3)".into()
            )
            .to_string()
        );
        invalid(Version::builder().remove_file(1, 1, 1));
        invalid(Version::builder().policy_state(PolicyState {
            owner: String::new(),
            bytes: vec![],
        }));
    }

    #[test]
    fn a_job_applied_replaces_its_inputs_and_sets_its_state() {
        let tree = Version::builder()
            .add_file(0, 5, file(5, "c", "h"))
            .add_file(1, 2, file(1, "a", "d"))
            .add_file(1, 2, file(2, "e", "k"))
            .add_file(1, 2, file(3, "x", "z"))
            .build()
            .expect("valid tree");
        let job = CompactionJob {
            inputs: vec![
                RunInput {
                    level: 0,
                    run_id: 5,
                    file_numbers: vec![5],
                },
                RunInput {
                    level: 1,
                    run_id: 2,
                    file_numbers: vec![1, 2],
                },
            ],
            output_level: 1,
            output_run: OutputRun::Existing(2),
            reason: "test".into(),
            state: Some(PolicyState {
                owner: "test".into(),
                bytes: vec![1],
            }),
            action: JobAction::Merge,
        };
        let next = tree
            .with_job_applied(&job, 6, vec![file(7, "a", "f"), file(6, "g", "k")])
            .expect("applies");
        assert!(next.levels()[0].is_empty());
        let numbers: Vec<u64> = next.levels()[1].runs()[0]
            .files()
            .iter()
            .map(|f| f.number())
            .collect();
        assert_eq!(numbers, [7, 6, 3]);
        assert_eq!(next.policy_state("test"), Some(&[1u8][..]));
        assert_eq!(
            tree.levels()[0].runs().len(),
            1,
            "the old tree is unchanged"
        );

        // Outputs that overlap the rest of the run they join are refused.
        assert!(tree
            .with_job_applied(&job, 6, vec![file(7, "a", "y")])
            .is_err());
        // A job the engine refuses (output above an input) is refused here too.
        let skips_newer = CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 2,
                file_numbers: vec![1],
            }],
            output_level: 0,
            output_run: OutputRun::New,
            reason: "upwards".into(),
            state: None,
            action: JobAction::Merge,
        };
        assert!(tree.with_job_applied(&skips_newer, 6, vec![]).is_err());

        let state_only = CompactionJob::state_only(
            PolicyState {
                owner: "test".into(),
                bytes: vec![2],
            },
            "count",
        );
        let counted = tree
            .with_job_applied(&state_only, 6, vec![])
            .expect("state");
        assert_eq!(counted.policy_state("test"), Some(&[2u8][..]));
        assert_eq!(counted.run_count(), tree.run_count());
        assert!(tree
            .with_job_applied(&state_only, 6, vec![file(9, "a", "b")])
            .is_err());
    }

    #[test]
    fn a_new_run_must_be_the_newest_of_its_level() {
        let tree = Version::builder()
            .add_file(1, 4, file(1, "a", "b"))
            .add_file(0, 9, file(2, "a", "b"))
            .build()
            .expect("valid tree");
        let job = CompactionJob {
            inputs: vec![RunInput {
                level: 0,
                run_id: 9,
                file_numbers: vec![2],
            }],
            output_level: 1,
            output_run: OutputRun::New,
            reason: "test".into(),
            state: None,
            action: JobAction::Merge,
        };
        assert!(tree
            .with_job_applied(&job, 3, vec![file(5, "a", "b")])
            .is_err());
        let moved = tree
            .with_job_applied(&job, 10, vec![file(2, "a", "b")])
            .expect("a trivial move");
        let ids: Vec<u64> = moved.levels()[1].runs().iter().map(|r| r.id()).collect();
        assert_eq!(ids, [10, 4]);
    }
}
