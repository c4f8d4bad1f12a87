//! The compaction executor: merges a job's input runs into new table files.
//!
//! Rules for each user key (inputs are merged newest version first):
//! * a version hidden by a newer version that every live snapshot already sees is dropped
//!   (LevelDB's rule, `crate::key::HiddenVersions`: once an entry with sequence
//!   `<= smallest_snapshot` has been met for a key, older versions are invisible to every reader;
//!   a flush leaves them out by the same rule);
//! * a tombstone is dropped only if it is visible to every snapshot *and* no run older than the
//!   output (deeper, or older on the output level) overlaps the job's key range — the output is
//!   then the bottom of the tree for those keys, so there is nothing left for the tombstone to hide;
//! * output files are cut at `target_file_bytes`, only between user keys, so the versions of one key
//!   never straddle two files of a run; outputs of a leveled run are instead cut where they cross a
//!   file boundary of the level below, from half the target up to twice it (`output_cuts`,
//!   RocksDB's rule).
//!
//! The merge writes every output's entries first ([`run_compaction`] returns a
//! [`PendingCompaction`]); the filters are built afterwards, by [`finish_outputs`], when the engine
//! holds its install lock: the [`FilterAllocator`] then sees every output's final entry count and
//! exactly the tree the outputs will join (`crate::alloc`, "One allocation at a time").

use std::path::PathBuf;
use std::sync::Arc;

use super::output_cuts::{NextLevelBoundaries, OutputLimits};
use super::{CompactionJob, OutputRun};
use crate::alloc::{FilterAllocator, FilterJob, JobInput, JobKind, NewFile as AllocatorFile};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::iterator::{InternalIterator, MergingIterator};
use crate::key::{parse_internal_key, HiddenVersions, ValueKind};
use crate::stats::merlin::{
    CompactionInheritance, FileAccess, InheritanceInput, Inherited, Merlin,
};
use crate::stats::AccessObserver;
use crate::table::compression::{Compression, CompressionCounts, CompressionPolicy};
use crate::table::iter::RunIter;
use crate::table::partition::MetadataPartitioning;
use crate::table::reader::ReadMode;
use crate::table::TableCache;
use crate::table::{table_file_name, TableBuilder};
pub(crate) use crate::version::job::{check_recency_order, inputs_exist};
use crate::version::job::{resolve_inputs, trivial_move_check, ResolvedRun};
use crate::version::set::VersionSet;
use crate::version::{AccessHandle, AddedFile, DeletedFile, FileMetadata, Version, VersionEdit};

/// Bits per key of one filter module of an output on level 0, on level 1 and on a level below
/// (the allocator's [`crate::alloc::ModuleSizing`], DESIGN.md §1 and §3.5 "Modules on disk":
/// elastic filters size level 1's modules apart from deeper ones' from a budget of 8 up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ModuleBits {
    pub(crate) level0: f64,
    pub(crate) level1: f64,
    pub(crate) deeper: f64,
}

impl ModuleBits {
    /// The module size of an output on `level`.
    pub(crate) fn at(self, level: usize) -> f64 {
        match level {
            0 => self.level0,
            1 => self.level1,
            _ => self.deeper,
        }
    }

    /// The module sizes `allocator` gives outputs by level.
    pub(crate) fn of(allocator: &dyn crate::alloc::FilterAllocator) -> ModuleBits {
        ModuleBits {
            level0: allocator.filter_module_bits_per_key(0),
            level1: allocator.filter_module_bits_per_key(1),
            deeper: allocator.filter_module_bits_per_key(2),
        }
    }
}

/// What the executor needs from the engine.
pub(crate) struct ExecutorContext<'a> {
    pub(crate) dir: PathBuf,
    pub(crate) fs: &'a dyn FileSystem,
    pub(crate) tables: &'a Arc<TableCache>,
    pub(crate) versions: &'a VersionSet,
    pub(crate) observer: &'a dyn AccessObserver,
    /// Merlin (DESIGN.md §4), when the engine keeps access statistics.
    pub(crate) merlin: Option<&'a Arc<Merlin>>,
    pub(crate) block_bytes: usize,
    pub(crate) restart_interval: usize,
    /// Restart interval of output files' index blocks (`Options::index_block_restart_interval`).
    pub(crate) index_restart_interval: usize,
    pub(crate) target_file_bytes: u64,
    /// Read-ahead window over each input file (`Options::compaction_readahead_bytes`).
    pub(crate) readahead_bytes: usize,
    /// Bits per key of one filter module, by output level (the allocator's
    /// [`crate::alloc::ModuleSizing`], DESIGN.md §1).
    pub(crate) filter_module_bits: ModuleBits,
    /// When outputs get a partitioned index and filter (`Options::partition_metadata_above_bytes`).
    pub(crate) metadata_partitioning: MetadataPartitioning,
    /// The outputs' filter families (`Options::filter_family`).
    pub(crate) filter_family: crate::FilterFamilies,
    /// The outputs' range filters (`Options::range_filter_bits`; 0 = none).
    pub(crate) range_filter_bits: u32,
    /// Whether outputs into the last level get range filters (`Options::range_filter_last_level`).
    pub(crate) range_filter_last_level: bool,
    /// Chooses the outputs' block compression from the output level and whether the output is
    /// bottommost (`Options::compression`).
    pub(crate) compression: &'a CompressionPolicy,
}

/// True if no file outside the inputs, at or below the output level, overlaps `[smallest,
/// largest]`: the output then holds the oldest data for those keys.
fn output_is_bottom(
    job: &CompactionJob,
    version: &Version,
    smallest: &[u8],
    largest: &[u8],
) -> bool {
    let is_input = |number: u64| job.inputs.iter().any(|i| i.file_numbers.contains(&number));
    version.levels()[job.output_level..].iter().all(|level| {
        level.runs().iter().all(|run| {
            run.overlapping_files(smallest, largest)
                .iter()
                .all(|f| is_input(f.number()))
        })
    })
}

/// A table file whose entries are written, waiting for its filter, properties, index and footer.
pub(crate) struct PendingTable {
    pub(crate) number: u64,
    pub(crate) builder: TableBuilder,
    /// The access statistics the file starts with (DESIGN.md §4: flush hand-over or compaction
    /// inheritance), when the engine keeps them.
    pub(crate) inherited: Option<Inherited>,
}

/// Which inputs of a merge are *upper* for Merlin's inheritance (DESIGN.md §4): a lookup that probed
/// an upper input and missed went on to an older input, so only its hits carry over. Returns,
/// per resolved input run, true if upper.
///
/// * Inputs on the output level (leveling's target files) are lower; everything else is upper.
/// * If every input is on the output level (a same-level merge), the oldest run is lower.
/// * If no input is on the output level: runs of level 0 are all upper (DESIGN.md §4: "level-0 files
///   compacting into level 1 are all upper"); several runs of one deeper level (a tiering merge)
///   have their oldest run lower.
fn upper_inputs(job: &CompactionJob, inputs: &[ResolvedRun]) -> Vec<bool> {
    let on_output = |level: usize| level == job.output_level;
    let any_on_output = inputs.iter().any(|(level, _, _)| on_output(*level));
    let all_on_output = inputs.iter().all(|(level, _, _)| on_output(*level));
    let oldest = inputs
        .iter()
        .map(|(level, run_id, _)| (*level, std::cmp::Reverse(*run_id)))
        .max();
    let tiering_merge = !any_on_output
        && inputs.len() > 1
        && inputs
            .iter()
            .all(|(level, _, _)| *level == inputs[0].0 && *level > 0);
    inputs
        .iter()
        .map(|(level, run_id, _)| {
            let is_oldest = Some((*level, std::cmp::Reverse(*run_id))) == oldest;
            if all_on_output || tiering_merge {
                !is_oldest
            } else {
                !on_output(*level)
            }
        })
        .collect()
}

/// A merged compaction whose outputs still need their filters ([`finish_outputs`]).
pub(crate) struct PendingCompaction {
    pub(crate) inputs: Vec<JobInput>,
    pub(crate) output_level: usize,
    pub(crate) output_run_id: u64,
    pub(crate) outputs: Vec<PendingTable>,
}

impl PendingCompaction {
    /// The version edit that replaces the inputs with `new_files` (from [`finish_outputs`]).
    pub(crate) fn edit(&self, new_files: Vec<AddedFile>) -> VersionEdit {
        VersionEdit {
            new_files,
            deleted_files: self
                .inputs
                .iter()
                .map(|input| DeletedFile {
                    level: input.level,
                    run_id: input.run_id,
                    number: input.file_number,
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// Asks the allocator for the bits per key of every output of a job (one call for the whole job,
/// against `tree`, the version the outputs are about to join), then writes each output's filter,
/// properties, index and footer and syncs it. Returns the outputs' metadata and the bytes written.
/// Call with the engine's install lock held, and install the result before releasing it.
#[allow(clippy::too_many_arguments, reason = "one call site per job kind")]
pub(crate) fn finish_outputs(
    allocator: &dyn FilterAllocator,
    merlin: Option<&Arc<Merlin>>,
    tree: &Version,
    kind: JobKind,
    inputs: &[JobInput],
    output_level: usize,
    output_run_id: u64,
    mut outputs: Vec<PendingTable>,
) -> Result<(Vec<AddedFile>, u64, CompressionCounts)> {
    let handles: Vec<Option<AccessHandle>> = outputs
        .iter()
        .map(|output| {
            merlin.map(|merlin| AccessHandle {
                file: Arc::new(FileAccess::from_inherited(
                    output.inherited.unwrap_or_default(),
                )),
                merlin: Arc::clone(merlin),
            })
        })
        .collect();
    let mut files: Vec<AllocatorFile> = Vec::with_capacity(outputs.len());
    for (output, handle) in outputs.iter_mut().zip(&handles) {
        files.push(AllocatorFile {
            file_number: output.number,
            entries: output.builder.entries(),
            access: handle.as_ref().map(AccessHandle::estimate),
            filter_layout: output.builder.expected_filter_layout()?,
        });
    }
    let job = FilterJob {
        kind,
        inputs,
        output_level,
        output_run_id,
        outputs: &files,
    };
    let bits = allocator.allocate(tree, &job);
    if bits.len() != outputs.len() {
        return Err(Error::InvalidArgument(format!(
            "filter allocator {} answered {} bits-per-key values for {} files",
            allocator.name(),
            bits.len(),
            outputs.len()
        )));
    }
    let mut new_files = Vec::with_capacity(outputs.len());
    let mut written = 0;
    let mut compression = CompressionCounts::default();
    for ((output, bits_per_key), access) in outputs.into_iter().zip(bits).zip(handles) {
        let summary = output
            .builder
            .finish(bits_per_key, output_level as u64, output_run_id)?;
        written += summary.file_bytes;
        compression.add(&summary.compression);
        new_files.push(AddedFile {
            level: output_level,
            run_id: output_run_id,
            file: Arc::new(FileMetadata::from_properties(
                output.number,
                summary.file_bytes,
                &summary.properties,
                summary.filter_layout,
                access,
            )),
        });
    }
    Ok((new_files, written, compression))
}

/// Merges `job`'s inputs (resolved against `version`) into new table files whose filters are not
/// yet built. `smallest_snapshot` is the oldest sequence number a live snapshot can read.
pub(crate) fn run_compaction(
    context: &ExecutorContext<'_>,
    job: &CompactionJob,
    version: &Version,
    smallest_snapshot: u64,
) -> Result<PendingCompaction> {
    let inputs = resolve_inputs(job, version)?;
    let bottom = inputs_are_bottom(job, version, &inputs);
    // RocksDB's bottommost test too (`Compaction::bottommost_level_`): the outputs hold the oldest
    // data for their keys, so `bottommost_compression` applies.
    let compression = context.compression.for_output(job.output_level, bottom);
    let range_filter_bits = range_filter_bits_for(context, job.output_level, version);
    let output_run_id = match job.output_run {
        OutputRun::Existing(id) => id,
        OutputRun::New => context.versions.new_run_id(),
    };

    let mut merged = merged_inputs(context, &inputs);
    let mut boundaries = NextLevelBoundaries::for_job(version, job);
    let limits = output_limits(boundaries.as_ref(), &inputs, context.target_file_bytes);

    // Merlin's inheritance (DESIGN.md §4), carried through the merge entry by entry.
    let mut inheritance = compaction_inheritance(context, job, &inputs);
    // The input position of the last source file seen (entries come in long runs per file).
    let mut last_source: Option<(u64, Option<usize>)> = None;

    let mut outputs: Vec<PendingTable> = Vec::new();
    let mut output: Option<PendingTable> = None;
    let mut current_user_key: Option<Vec<u8>> = None;
    let mut hidden = HiddenVersions::new(smallest_snapshot);

    while merged.valid() {
        let key = merged.key();
        let parsed = parse_internal_key(key)
            .ok_or_else(|| malformed_input_key(context, merged.current_file_number()))?;
        let new_user_key = current_user_key.as_deref() != Some(parsed.user_key);
        if new_user_key {
            current_user_key = Some(parsed.user_key.to_vec());
        }
        // A newer version of this key is visible to every snapshot (the flush's rule too), or a
        // tombstone every snapshot sees at the bottom of the tree for its key.
        let drop = hidden.hidden(new_user_key, parsed.sequence)
            || (parsed.kind == ValueKind::Deletion
                && parsed.sequence <= smallest_snapshot
                && bottom);
        if !drop {
            if new_user_key
                && ends_output(
                    output.as_ref(),
                    boundaries.as_mut(),
                    parsed.user_key,
                    limits,
                )
            {
                outputs.extend(output.take());
            }
            if output.is_none() {
                output = Some(new_output(
                    context,
                    compression,
                    job.output_level,
                    range_filter_bits,
                )?);
            }
            if let Some(current) = output.as_mut() {
                current.builder.add(key, merged.value())?;
                if let Some(source) = merged.current_file_number() {
                    context.observer.compaction_entry(source, current.number);
                    if let Some(inheritance) = inheritance.as_mut() {
                        let position = match last_source {
                            Some((number, position)) if number == source => position,
                            _ => {
                                let position = inheritance.input_position(source);
                                last_source = Some((source, position));
                                position
                            }
                        };
                        if let Some(position) = position {
                            inheritance.add_entry(position, outputs.len());
                        }
                    }
                }
            }
        }
        merged.next();
    }
    merged.status()?;
    outputs.extend(output.take());
    if let (Some(inheritance), Some(merlin)) = (&inheritance, context.merlin) {
        finish_inheritance(inheritance, merlin.recorded() as f64, &mut outputs);
    }
    Ok(PendingCompaction {
        inputs: job_inputs(&inputs),
        output_level: job.output_level,
        output_run_id,
        outputs,
    })
}

/// Whether the output being written ends before `user_key`, the next user key it would take: it
/// reaches `limits` (see [`OutputLimits::ends`]). Keeps `boundaries` in step with the keys.
fn ends_output(
    output: Option<&PendingTable>,
    mut boundaries: Option<&mut NextLevelBoundaries<'_>>,
    user_key: &[u8],
    limits: OutputLimits,
) -> bool {
    let crossed = boundaries
        .as_deref_mut()
        .map_or(0, |below| below.advance(user_key));
    let Some(current) = output else {
        return false;
    };
    let bytes = current.builder.estimated_file_bytes();
    let ends = limits.ends(boundaries.as_deref(), crossed, bytes);
    if ends {
        if let Some(below) = boundaries {
            below.output_started();
        }
    }
    ends
}

/// The sizes that end the outputs of a job over `inputs` (see [`OutputLimits::new`]).
fn output_limits(
    boundaries: Option<&NextLevelBoundaries<'_>>,
    inputs: &[ResolvedRun],
    target_file_bytes: u64,
) -> OutputLimits {
    let (smallest, largest) = input_key_range(inputs);
    OutputLimits::new(boundaries, smallest, largest, target_file_bytes)
}

/// The smallest and largest user keys of the input files (empty if there are none).
fn input_key_range(inputs: &[ResolvedRun]) -> (&[u8], &[u8]) {
    let files = || inputs.iter().flat_map(|(_, _, files)| files.iter());
    let smallest = files().map(|f| f.smallest_user_key()).min().unwrap_or(&[]);
    let largest = files().map(|f| f.largest_user_key()).max().unwrap_or(&[]);
    (smallest, largest)
}

/// True if the outputs of `job` hold the oldest data for every key in its inputs' range.
fn inputs_are_bottom(job: &CompactionJob, version: &Version, inputs: &[ResolvedRun]) -> bool {
    let (smallest, largest) = input_key_range(inputs);
    output_is_bottom(job, version, smallest, largest)
}

/// The input files as the filter allocator sees them.
fn job_inputs(inputs: &[ResolvedRun]) -> Vec<JobInput> {
    inputs
        .iter()
        .flat_map(|(level, run_id, files)| {
            files.iter().map(move |f| JobInput {
                level: *level,
                run_id: *run_id,
                file_number: f.number(),
            })
        })
        .collect()
}

/// Each output's inherited statistics. No file can have been probed by more lookups than were
/// issued (`recorded`): the lower bound of eq. 11 can exceed that when small upper inputs span a
/// wide key range (Strata's clamp).
fn finish_inheritance(
    inheritance: &CompactionInheritance,
    recorded: f64,
    outputs: &mut [PendingTable],
) {
    for (index, output) in outputs.iter_mut().enumerate() {
        let mut inherited = inheritance.finish_output(index);
        inherited.q_prime = inherited.q_prime.min(recorded);
        inherited.x_prime = inherited.x_prime.min(inherited.q_prime);
        output.inherited = Some(inherited);
    }
}

/// Merlin's inheritance for `job`'s outputs (DESIGN.md §4): each input file's estimate, whether it
/// is an upper input, and its entries; `None` when the engine keeps no access statistics.
fn compaction_inheritance(
    context: &ExecutorContext<'_>,
    job: &CompactionJob,
    inputs: &[ResolvedRun],
) -> Option<CompactionInheritance> {
    context.merlin.map(|merlin| {
        let view = merlin.view();
        let upper = upper_inputs(job, inputs);
        let described: Vec<InheritanceInput> = inputs
            .iter()
            .zip(upper)
            .flat_map(|((_, _, files), is_upper)| {
                files.iter().map(move |file| {
                    let access = file.state().access();
                    InheritanceInput {
                        file_number: file.number(),
                        is_upper,
                        estimate: access
                            .map(|a| a.file.sampled_estimate(&view))
                            .unwrap_or_default(),
                        naive: access
                            .map(|a| a.file.sampled_naive_estimate())
                            .unwrap_or_default(),
                        entries: file.entries(),
                    }
                })
            })
            .collect();
        CompactionInheritance::new(&described)
    })
}

/// The job's input runs merged into one iterator, each read ahead in compaction-sized chunks.
fn merged_inputs(context: &ExecutorContext<'_>, inputs: &[ResolvedRun]) -> MergingIterator {
    let children: Vec<Box<dyn InternalIterator>> = inputs
        .iter()
        .map(|(_, _, files)| {
            Box::new(
                RunIter::new(
                    files.clone(),
                    Arc::clone(context.tables),
                    ReadMode::Compaction,
                    false,
                )
                .with_readahead(context.readahead_bytes),
            ) as Box<dyn InternalIterator>
        })
        .collect();
    let mut merged = MergingIterator::new(children);
    merged.seek_to_first();
    merged
}

/// The range-filter bits of a merge's outputs into `output_level` of `version`: none into the
/// last level (the deepest non-empty level, or deeper) unless `Options::range_filter_last_level`
/// says so (docs/decisions/range-filters.md: nearly every range reaches the last level, so its
/// filter rules out almost nothing).
pub(crate) fn range_filter_bits_for(
    context: &ExecutorContext<'_>,
    output_level: usize,
    version: &Version,
) -> u32 {
    let last_level = version.last_non_empty_level().unwrap_or(0);
    if output_level > 0 && output_level >= last_level && !context.range_filter_last_level {
        0
    } else {
        context.range_filter_bits
    }
}

/// The error for an entry of compaction input file `file` (0 if unknown) whose internal key does
/// not parse.
fn malformed_input_key(context: &ExecutorContext<'_>, file: Option<u64>) -> Error {
    Error::corruption(
        context.dir.join(table_file_name(file.unwrap_or(0))),
        0,
        "malformed internal key in compaction input",
    )
}

/// A new output table file, its builder set up as the options say.
fn new_output(
    context: &ExecutorContext<'_>,
    compression: Compression,
    output_level: usize,
    range_filter_bits: u32,
) -> Result<PendingTable> {
    let number = context.versions.new_file_number();
    let path = context.dir.join(table_file_name(number));
    let file = context.fs.create_writable(&path)?;
    let mut builder = TableBuilder::new(path, file, context.block_bytes, context.restart_interval);
    builder.set_index_restart_interval(context.index_restart_interval);
    // Filters above the module size are split into modules of that size (DESIGN.md §1).
    builder.set_filter_module_bits(context.filter_module_bits.at(output_level));
    builder.set_metadata_partitioning(context.metadata_partitioning);
    builder.set_filter_families(context.filter_family, false);
    builder.set_range_filter_bits(range_filter_bits);
    builder.set_compression(compression);
    Ok(PendingTable {
        inherited: None,
        number,
        builder,
    })
}

/// Carries out a [`JobAction::Move`](super::JobAction::Move) job: the version edit that moves its
/// files to the output level (a manifest edit, no rewrite: RocksDB's trivial move). Each file
/// keeps its filter. A job the rule of `merge_or_move` does not accept on `version` is refused
/// with [`Error::InvalidArgument`] saying why; the engine then merges it instead.
pub(crate) fn trivial_move(
    job: &CompactionJob,
    version: &Version,
    versions: &VersionSet,
) -> Result<VersionEdit> {
    let files = trivial_move_check(job, version).map_err(|why| {
        Error::InvalidArgument(format!("trivial move refused ({}): {why}", job.reason))
    })?;
    // The check accepted exactly one input run.
    let input = &job.inputs[0];
    let run_id = match job.output_run {
        OutputRun::Existing(id) => id,
        OutputRun::New => versions.new_run_id(),
    };
    Ok(VersionEdit {
        deleted_files: files
            .iter()
            .map(|file| DeletedFile {
                level: input.level,
                run_id: input.run_id,
                number: file.number,
            })
            .collect(),
        new_files: files
            .iter()
            .map(|file| AddedFile {
                level: job.output_level,
                run_id,
                file: Arc::clone(file),
            })
            .collect(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::tree;
    use crate::compaction::{JobAction, RunInput};
    use crate::env::RealFileSystem;

    fn job(inputs: Vec<RunInput>, output_level: usize, output_run: OutputRun) -> CompactionJob {
        CompactionJob {
            inputs,
            output_level,
            output_run,
            reason: "test".into(),
            state: None,
            action: JobAction::Merge,
        }
    }

    #[test]
    fn jobs_that_would_put_newer_data_below_older_data_are_refused() {
        let shape = tree(&[
            (0, 9, 1, "a", "m", 100),
            (0, 8, 2, "c", "z", 100),
            (1, 5, 3, "a", "z", 1000),
        ]);
        let all_level0 = vec![
            RunInput {
                level: 0,
                run_id: 9,
                file_numbers: vec![1],
            },
            RunInput {
                level: 0,
                run_id: 8,
                file_numbers: vec![2],
            },
        ];
        // Level 0 merged past the older level-1 data.
        assert!(check_recency_order(&job(all_level0.clone(), 3, OutputRun::New), &shape).is_err());
        // Level 0 merged into level 1 (with level 1's file): fine.
        let mut with_level1 = all_level0.clone();
        with_level1.push(RunInput {
            level: 1,
            run_id: 5,
            file_numbers: vec![3],
        });
        assert!(check_recency_order(&job(with_level1, 1, OutputRun::Existing(5)), &shape).is_ok());
        // Level 0 into a new run above level 1's run... on level 1, a tiering merge: fine.
        assert!(check_recency_order(&job(all_level0, 1, OutputRun::New), &shape).is_ok());
        // Skipping the newest level-0 run while merging the older one is refused.
        let older_only = vec![RunInput {
            level: 0,
            run_id: 8,
            file_numbers: vec![2],
        }];
        assert!(check_recency_order(&job(older_only.clone(), 0, OutputRun::New), &shape).is_err());
    }

    #[test]
    fn merlin_upper_and_lower_inputs_follow_spec_section_4() {
        let shape = tree(&[
            (0, 9, 1, "a", "m", 100),
            (0, 8, 2, "c", "z", 100),
            (1, 5, 3, "a", "z", 1000),
            (2, 4, 4, "a", "z", 4000),
            (2, 3, 5, "a", "z", 4000),
        ]);
        let input = |level, run_id, number| RunInput {
            level,
            run_id,
            file_numbers: vec![number],
        };
        let upper = |inputs: Vec<RunInput>, output_level, output_run| {
            let job = job(inputs, output_level, output_run);
            let resolved = resolve_inputs(&job, &shape).expect("resolves");
            upper_inputs(&job, &resolved)
        };
        // Leveling: level-0 runs into level 1 with its file: the level-1 file is the lower input.
        assert_eq!(
            upper(
                vec![input(0, 9, 1), input(0, 8, 2), input(1, 5, 3)],
                1,
                OutputRun::Existing(5)
            ),
            vec![true, true, false]
        );
        // Level 0 into an empty range of level 1: all upper.
        assert_eq!(
            upper(vec![input(0, 9, 1), input(0, 8, 2)], 1, OutputRun::New),
            vec![true, true]
        );
        // A same-level merge (level 0 into level 0): the oldest run is the lower input.
        assert_eq!(
            upper(vec![input(0, 9, 1), input(0, 8, 2)], 0, OutputRun::New),
            vec![true, false]
        );
        // A tiering merge of level-2 runs into level 3: the oldest run (smallest id) is lower.
        assert_eq!(
            upper(vec![input(2, 4, 4), input(2, 3, 5)], 3, OutputRun::New),
            vec![true, false]
        );
    }

    #[test]
    fn non_overlapping_files_are_moved_not_rewritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let versions =
            VersionSet::open(dir.path(), Arc::new(RealFileSystem), false, 0).expect("versions");
        let shape = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "d", "f", 4000),
            (2, 6, 7, "x", "z", 9000),
        ]);
        let single = RunInput {
            level: 1,
            run_id: 5,
            file_numbers: vec![2],
        };
        let edit = trivial_move(
            &job(vec![single.clone()], 2, OutputRun::Existing(6)),
            &shape,
            &versions,
        )
        .expect("a move");
        assert_eq!(edit.deleted_files.len(), 1);
        assert_eq!(edit.new_files[0].file.number, 2);
        assert_eq!((edit.new_files[0].level, edit.new_files[0].run_id), (2, 6));
        let moved = shape.apply(&edit, None).expect("applies");
        assert_eq!(moved.levels()[2].runs()[0].files().len(), 2);

        // Overlap with the output run, several files, or a same-level merge need a real merge:
        // a move of them is refused with a typed error, not a panic.
        let refused =
            |job: &CompactionJob, shape: &Version| match trivial_move(job, shape, &versions) {
                Err(Error::InvalidArgument(why)) => why,
                other => panic!("expected a refusal, got {other:?}"),
            };
        let overlapping = RunInput {
            level: 1,
            run_id: 5,
            file_numbers: vec![1],
        };
        let shape = tree(&[(1, 5, 1, "a", "c", 4000), (2, 6, 7, "b", "z", 9000)]);
        let why = refused(
            &job(vec![overlapping.clone()], 2, OutputRun::Existing(6)),
            &shape,
        );
        assert!(why.contains("overlap the output run"), "{why}");
        // Two adjacent files over nothing below move together; over a file of the output run
        // that lies between them (in the gap, overlapping neither), they are refused.
        let pair = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "g", "h", 4000),
            (2, 6, 7, "x", "z", 9000),
        ]);
        let two = RunInput {
            level: 1,
            run_id: 5,
            file_numbers: vec![2, 1],
        };
        let edit = trivial_move(
            &job(vec![two.clone()], 2, OutputRun::Existing(6)),
            &pair,
            &versions,
        )
        .expect("a move of two files");
        let added: Vec<u64> = edit.new_files.iter().map(|f| f.file.number).collect();
        assert_eq!(added, vec![1, 2]);
        assert_eq!(edit.deleted_files.len(), 2);
        let moved = pair.apply(&edit, None).expect("applies");
        assert!(moved.levels()[1].is_empty());
        assert_eq!(moved.levels()[2].runs()[0].files().len(), 3);
        let gap = tree(&[
            (1, 5, 1, "a", "c", 4000),
            (1, 5, 2, "g", "h", 4000),
            (2, 6, 7, "d", "e", 9000),
        ]);
        let why = refused(&job(vec![two.clone()], 2, OutputRun::Existing(6)), &gap);
        assert!(why.contains("overlap the output run"), "{why}");
        let twice = RunInput {
            file_numbers: vec![1, 1],
            ..two
        };
        let why = refused(&job(vec![twice], 2, OutputRun::New), &pair);
        assert!(why.contains("names a file twice"), "{why}");
        let why = refused(&job(vec![single], 1, OutputRun::New), &shape);
        assert!(why.contains("not below its input"), "{why}");
        let gone = RunInput {
            level: 1,
            run_id: 5,
            file_numbers: vec![9],
        };
        let why = refused(&job(vec![gone], 2, OutputRun::New), &shape);
        assert!(why.contains("not in the tree"), "{why}");
        let why = refused(&job(vec![overlapping], 2, OutputRun::Existing(99)), &shape);
        assert!(why.contains("output run does not exist"), "{why}");
    }
}
