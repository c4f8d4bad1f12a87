//! Engine hooks for offline studies of filter allocation (`strata study`; Mnemosyne Fig. 4, the
//! "headroom" of optimal per-file filters, and Fig. 10, the accuracy of Merlin's estimates, DESIGN.md
//! §4 "Accuracy check"). Not for serving traffic:
//!
//! * [`Db::trace_lookup`] / [`Db::trace_lookups`]: which files a point lookup would probe, and
//!   whether each holds the key, *without* performing the lookup: nothing is recorded in Merlin's
//!   statistics or `D`, and none of the lookup-path I/O counters move (see their docs);
//! * [`Db::rewrite_filters`]: every live table file rewritten in place with a filter of a chosen
//!   size, so that one tree can be measured under several filter allocations.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Db, DbInner, ReadView};
use crate::alloc::{FilterAllocator, FilterJob, JobKind};
use crate::compaction::executor::{check_recency_order, finish_outputs, run_compaction};
use crate::compaction::{CompactionJob, JobAction, OutputRun, RunInput};
use crate::error::{Error, Result};
use crate::key::{compare_internal_keys, lookup_key, parse_internal_key};
use crate::memtable::Lookup;
use crate::stats::BlockKind;
use crate::table::block::BlockIter;
use crate::table::index_iter::IndexIter;
use crate::table::reader::ReadMode;
use crate::version::job::trivial_move_files;
use crate::version::{FileMetadata, Version};

/// One file a traced point lookup probes: its number, and whether it holds the key (a value or
/// a tombstone, the newest version visible at the traced sequence number).
pub type TracedProbe = (u64, bool);

impl Db {
    /// The files a point lookup of `key` at the newest sequence number would probe, in probe
    /// order (newest first, at most one file per sorted run: the run's file whose key range holds
    /// `key`), each with whether it holds the key. The lookup would stop at the first file that
    /// does, so only the last element can say `true`. Empty if a memtable answers the lookup or
    /// no file's range holds the key. Filters are ignored: "probed" means what it means for
    /// Merlin (DESIGN.md §4), the lookup reached the file, whatever its filter would answer.
    ///
    /// For offline studies. It records nothing in Merlin's statistics (not `D`, not any file's
    /// window) and leaves the lookup-path counters of [`Db::stats`] alone (point lookups, files
    /// probed, filter probes, block reads and cache hits); the index and data blocks it needs are
    /// read around the block cache, as a compaction reads, and counted only in
    /// `compaction_read_bytes`. It does not move blocks into or out of the cache.
    pub fn trace_lookup(&self, key: impl AsRef<[u8]>) -> Result<Vec<TracedProbe>> {
        let mut probes = Vec::new();
        self.trace_lookups([key], |traced| probes = traced.to_vec())?;
        Ok(probes)
    }

    /// [`Db::trace_lookup`] for many keys against one frozen view of the database (memtables and
    /// tree, loaded once): `visit` gets each key's probes in turn. Returns the tree the traces ran
    /// against, so a study can read every file's statistics (`FileState::access_estimate`)
    /// from exactly the files it traced, even while background compactions go on.
    pub fn trace_lookups<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        mut visit: impl FnMut(&[TracedProbe]),
    ) -> Result<Arc<Version>> {
        self.inner.check_open()?;
        // As in `DbInner::get`: the view first, then the sequence number.
        let view = self.inner.view.load_full();
        let sequence = self.inner.versions.last_sequence();
        let mut probes = Vec::new();
        for key in keys {
            self.inner
                .trace_lookup(&view, key.as_ref(), sequence, &mut probes)?;
            visit(&probes);
        }
        Ok(Arc::clone(&view.version))
    }

    /// Rewrites every live table file with a filter of `bits_for(file)` bits per key (0 = no
    /// filter; filters above the configured allocator's budget are split into modules of the
    /// budget's size, as for every file, DESIGN.md §1). Each file is replaced by a new file (a new
    /// number) with exactly the same entries, on the same level and in the same run, installed
    /// as its own version edit under the install lock. The tree's shape (levels, runs, key ranges,
    /// entries) is unchanged; only the filters differ. For offline studies (Mnemosyne §3.2:
    /// "we rebuild each BF in LSM tree with specifying different bpk_i per file").
    ///
    /// * `bits_for` is called once per file of the tree as it is when the call starts, before
    ///   any file is rewritten; files flushed while it runs keep their filters.
    /// * It runs on the calling thread. Background compactions are paused for its duration
    ///   (a running one is waited out first); flushes go on. Writers may stall on level 0 meanwhile.
    ///   Compactions resume afterwards, and since filters count in a level's bytes, a policy may
    ///   then find a level over its capacity: a study that needs the shape frozen opens the
    ///   database with a compaction policy that never picks a job.
    /// * The rewrite is a one-input compaction through the ordinary executor: its reads count as
    ///   compaction reads; it adds nothing to the compaction or write counters. Merlin's
    ///   statistics (if kept) carry over to the new file by the compaction inheritance rule
    ///   (DESIGN.md §4, the file is its own lower input), so the recent window restarts.
    /// * The memtables are not flushed: their contents are not in table files.
    pub fn rewrite_filters(&self, bits_for: &dyn Fn(&FileMetadata) -> f64) -> Result<()> {
        self.inner.check_changeable()?;
        // One rewrite at a time: a second one planned against the same tree would name files
        // the first has replaced.
        let _rewriting = self.inner.filter_rewrite_lock.lock();
        let _paused = CompactionPause::new(&self.inner);
        let version = self.inner.versions.current();
        let mut plan = Vec::new();
        let mut bits_by_input = HashMap::new();
        for (level, run_id, file) in version.files() {
            let bits = bits_for(file);
            if !bits.is_finite() || bits < 0.0 {
                return Err(Error::InvalidArgument(format!(
                    "bits per key for file {} must be finite and >= 0, got {bits}",
                    file.number()
                )));
            }
            bits_by_input.insert(file.number(), bits);
            plan.push((level, run_id, Arc::clone(file)));
        }
        drop(version);
        let allocator = RewriteAllocator {
            bits_by_input,
            budget: self.inner.filter_allocator().bits_per_key_budget(),
        };
        let result = plan.iter().try_for_each(|(level, run_id, file)| {
            self.inner
                .rewrite_file_filter(*level, *run_id, file, &allocator)
        });
        drop(plan);
        self.inner.delete_obsolete_files();
        result
    }
}

/// Pauses policy and manual compactions while alive (`Db::rewrite_filters`): waits out a running
/// compaction, and the compaction thread starts no job until the pause is dropped.
struct CompactionPause<'a> {
    inner: &'a DbInner,
}

impl<'a> CompactionPause<'a> {
    fn new(inner: &'a DbInner) -> Self {
        let mut background = inner.background.lock();
        background.compaction_pauses += 1;
        // Compaction workers register a job under this lock, in the same critical section where
        // they see no pause: once this loop exits none can start.
        while !background.compactions_idle() && !background.shutting_down {
            inner
                .work_done
                .wait_for(&mut background, std::time::Duration::from_millis(100));
        }
        CompactionPause { inner }
    }
}

impl Drop for CompactionPause<'_> {
    fn drop(&mut self) {
        let mut background = self.inner.background.lock();
        background.compaction_pauses -= 1;
        // Whatever was asked for meanwhile (flushes request compactions) runs now.
        background.compaction_requested = true;
        self.inner.work_available.notify_all();
    }
}

/// The one-off allocator of a filter rewrite: answers the bits per key chosen for the job's
/// (single) input file.
#[derive(Debug)]
struct RewriteAllocator {
    bits_by_input: HashMap<u64, f64>,
    budget: f64,
}

impl FilterAllocator for RewriteAllocator {
    fn name(&self) -> String {
        "filter-rewrite".into()
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.budget
    }

    fn allocate(&self, _tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        let bits = job
            .inputs
            .first()
            .and_then(|input| self.bits_by_input.get(&input.file_number))
            .copied()
            .unwrap_or(0.0);
        vec![bits; job.outputs.len()]
    }
}

impl DbInner {
    /// The probes of one traced lookup (see [`Db::trace_lookup`]) into `probes` (cleared first).
    fn trace_lookup(
        &self,
        view: &ReadView,
        key: &[u8],
        sequence: u64,
        probes: &mut Vec<TracedProbe>,
    ) -> Result<()> {
        probes.clear();
        for mem in std::iter::once(&view.mem).chain(&view.immutable) {
            if mem.get(key, sequence) != Lookup::Absent {
                return Ok(());
            }
        }
        let target = lookup_key(key, sequence);
        for (level_index, level) in view.version.levels().iter().enumerate() {
            for run in level.runs() {
                let Some(file) = run.file_for_key(key) else {
                    continue;
                };
                let found = self.file_holds_key(file, level_index, &target, key)?;
                probes.push((file.number(), found));
                if found {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// True if `file` holds a version of `user_key` visible at `target`'s sequence number. Reads
    /// the index (unless pinned) and one data block around the block cache, counting them as
    /// compaction reads only (see [`Db::trace_lookup`]).
    fn file_holds_key(
        &self,
        file: &FileMetadata,
        level: usize,
        target: &[u8],
        user_key: &[u8],
    ) -> Result<bool> {
        let table = self
            .tables
            .reader(file, self.options.pins_metadata_on(level))?;
        let mut index = IndexIter::open(&table, ReadMode::Compaction)?;
        index.seek(&table, target);
        let corrupt = |reason: &str| {
            Error::corruption(
                self.dir.join(crate::table::table_file_name(file.number())),
                0,
                reason.to_string(),
            )
        };
        index.status(&table)?;
        if !index.valid() {
            return Ok(false);
        }
        let handle = index.handle();
        let block = table.sorted_block(handle, BlockKind::Data, ReadMode::Compaction)?;
        let mut entries = BlockIter::new(block, compare_internal_keys);
        entries.seek(target);
        table.block_error(&entries, handle)?;
        if !entries.valid() {
            return Ok(false);
        }
        let parsed = parse_internal_key(entries.key())
            .ok_or_else(|| corrupt("malformed internal key in data block"))?;
        Ok(parsed.user_key == user_key)
    }

    /// Rewrites one file with the filter `allocator` gives it (see [`Db::rewrite_filters`]): a
    /// compaction job whose single input is the file and whose output joins the same run on the
    /// same level. Holds the install lock from the merge to the install.
    fn rewrite_file_filter(
        &self,
        level: usize,
        run_id: u64,
        file: &FileMetadata,
        allocator: &RewriteAllocator,
    ) -> Result<()> {
        let job = CompactionJob {
            inputs: vec![RunInput {
                level,
                run_id,
                file_numbers: vec![file.number()],
            }],
            output_level: level,
            output_run: OutputRun::Existing(run_id),
            reason: format!("filter rewrite of file {}", file.number()),
            state: None,
            action: JobAction::Merge,
        };
        let _install = self.install_lock.lock();
        let version = self.versions.current();
        // A file replaced by itself keeps every other run on its side of it; refused otherwise.
        check_recency_order(&job, &version)?;
        if trivial_move_files(&job, &version).is_some() {
            return Err(Error::InvalidArgument(format!(
                "{}: would be a trivial move, which keeps the old filter",
                job.reason
            )));
        }
        let observer = self.observer.clone();
        let noop = crate::stats::NoopObserver;
        // One output, however large the file (a flushed file may exceed the target size).
        let context = self.executor_context(observer.as_deref().unwrap_or(&noop), u64::MAX);
        // Smallest snapshot 0: no version is hidden from every reader and no tombstone is
        // dropped, so the output holds exactly the input's entries.
        let mut pending = run_compaction(&context, &job, &version, 0)?;
        let (new_files, _written, _compression) = finish_outputs(
            allocator,
            self.merlin.as_ref(),
            &version,
            JobKind::Compaction,
            &pending.inputs,
            level,
            run_id,
            std::mem::take(&mut pending.outputs),
        )?;
        let entries: u64 = new_files.iter().map(|added| added.file.entries).sum();
        if new_files.len() != 1 || entries != file.entries() {
            return Err(Error::InvalidArgument(format!(
                "{}: wrote {} files with {entries} entries, expected one with {}",
                job.reason,
                new_files.len(),
                file.entries()
            )));
        }
        self.versions.log_and_apply(pending.edit(new_files))?;
        self.install_current_version(None);
        Ok(())
    }
}
