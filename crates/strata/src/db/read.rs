//! The point-lookup path: memtables newest first, then each level's runs newest first, one file
//! per run (binary search on key ranges), each file through its filter, index and one data block.

use super::{DbInner, Value};
use crate::error::Result;
use crate::filter::bloom::key_hash;
use crate::key::LookupKey;
use crate::memtable::Lookup;
use crate::stats::{add, FileProbe};
use crate::version::ProbeOutcome;
use std::time::Instant;

/// Lookups per timed lookup (every probe of a timed lookup is timed).
const PROBE_TIMING_EVERY: u64 = 16;

impl DbInner {
    /// The newest version of `key` visible at `sequence` (a snapshot's), or at the newest
    /// sequence number when `None`.
    pub(crate) fn get(&self, key: &[u8], sequence: Option<u64>) -> Result<Option<Value>> {
        let lookup_number = self
            .counters
            .point_lookups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // One lookup in `PROBE_TIMING_EVERY` times its probes (the cache model's price of a
        // false positive on a cached block, `alloc/cache_model.rs`): two clock reads per probe
        // of a sixteenth of the lookups.
        let timed = lookup_number.is_multiple_of(PROBE_TIMING_EVERY);
        // Merlin's lookup number `d` and whether this thread records it (DESIGN.md §4).
        let ticket = self.merlin.as_ref().map(|merlin| merlin.begin_lookup());
        let recording = ticket.filter(|ticket| ticket.record);
        // The view is loaded *before* the sequence number is read: a compaction installed
        // before the load only dropped versions hidden by newer ones at or below a sequence
        // number we are about to see, and one installed after it cannot touch the files we
        // hold. Reading the number first would let a compaction drop a version it still needs.
        let view = self.view.load_full();
        let sequence = sequence.unwrap_or_else(|| self.versions.last_sequence());
        let found = |lookup: Lookup| match lookup {
            Lookup::Found(value) => Some(Some(Value(value))),
            Lookup::Deleted => Some(None),
            Lookup::Absent => None,
        };
        let result = (|| {
            for mem in std::iter::once(&view.mem).chain(&view.immutable) {
                // An empty memtable (the active one just after a switch or a reopen) answers
                // without a search: one load instead of packing the key and descending the list.
                let lookup = if mem.is_empty() {
                    Lookup::Absent
                } else {
                    mem.get(key, sequence)
                };
                if recording.is_some() {
                    mem.access.record(lookup != Lookup::Absent);
                }
                if let Some(result) = found(lookup) {
                    return Ok(result);
                }
            }
            let target = LookupKey::new(key, sequence);
            let hash = key_hash(key);
            let mut probes = self.observer.as_ref().map(|_| Vec::new());
            let allocator = &view.filter_allocator;
            // With a top-level index (EcoTune), level 0's runs newer than the newest one
            // holding the key's hash cannot hold the key, and no run can if no entry exists:
            // one run is probed (older ones only after a hash collision; `top_index.rs`).
            let newest_level0_run = view
                .top_index
                .as_ref()
                .map(|index| index.newest_run(hash).unwrap_or(0));
            for (level_index, level) in view.version.levels().iter().enumerate() {
                for run in level.runs() {
                    if level_index == 0 && newest_level0_run.is_some_and(|newest| run.id() > newest)
                    {
                        continue;
                    }
                    let Some(file) = run.file_for_key(key) else {
                        continue;
                    };
                    add(&self.counters.files_probed[level_index], 1);
                    let pin = self.options.pins_metadata_on(level_index);
                    let in_use = allocator.filter_modules_in_use(run.id(), file);
                    let started = timed.then(Instant::now);
                    let probe = self.tables.with_reader(file, pin, |table| {
                        table.get(target.as_bytes(), key, hash, level_index, in_use)
                    })?;
                    if let Some(started) = started {
                        let outcome = match probe.data_block {
                            None => ProbeOutcome::Rejected,
                            Some(false) => ProbeOutcome::CachedBlock,
                            Some(true) => ProbeOutcome::DeviceBlock,
                        };
                        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        file.record_probe_time(outcome, nanos);
                    }
                    if probe.filter_skipped {
                        add(&self.counters.filter_skips[level_index], 1);
                    }
                    if let Some(from_device) = probe.data_block {
                        file.record_data_block_read(from_device);
                    }
                    let lookup = probe.result;
                    file.record_probe(lookup != Lookup::Absent);
                    if let (Some(ticket), Some(access)) = (recording, file.access()) {
                        access
                            .file
                            .record(ticket.lookup_number, lookup != Lookup::Absent);
                    }
                    if let Some(probes) = probes.as_mut() {
                        probes.push(FileProbe {
                            file_number: file.number(),
                            found: lookup != Lookup::Absent,
                        });
                    }
                    if let Some(result) = found(lookup) {
                        if let (Some(observer), Some(probes)) = (&self.observer, &probes) {
                            observer.lookup_finished(probes);
                        }
                        return Ok(result);
                    }
                }
            }
            if let (Some(observer), Some(probes)) = (&self.observer, &probes) {
                observer.lookup_finished(probes);
            }
            Ok(None)
        })();
        // An allocator that re-divides by what lookups see without access statistics (elastic
        // filters' cache-miss weights) refreshes on the same schedule, counted in lookups.
        if self.merlin.is_none()
            && view.filter_allocator.refreshes_without_statistics()
            && self
                .counters
                .point_lookups
                .load(std::sync::atomic::Ordering::Relaxed)
                .is_multiple_of(crate::alloc::REFRESH_EVERY_LOOKUPS)
        {
            view.filter_allocator.refresh(&view.version);
            self.release_unused_pinned_filters(&view.version, view.filter_allocator.as_ref());
        }
        if let (Some(merlin), Some(ticket)) = (&self.merlin, ticket) {
            if ticket.record
                && ticket
                    .lookup_number
                    .is_multiple_of(crate::alloc::REFRESH_EVERY_LOOKUPS)
            {
                view.filter_allocator.refresh(&view.version);
                self.release_unused_pinned_filters(&view.version, view.filter_allocator.as_ref());
            }
            merlin.end_lookup(ticket);
        }
        if let Ok(Some(_)) = &result {
            add(&self.counters.point_lookups_found, 1);
        }
        result
    }
}
