//! The point-lookup path: memtables newest first, then each level's runs newest first, one file
//! per run (binary search on key ranges), each file through its filter, index and one data block.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{DbInner, ReadView, Value};
use crate::alloc::REFRESH_EVERY_LOOKUPS;
use crate::error::Result;
use crate::filter::bloom::key_hash;
use crate::key::LookupKey;
use crate::memtable::Lookup;
use crate::stats::merlin::LookupTicket;
use crate::stats::{add, FileProbe};
use crate::version::{FileMetadata, ProbeOutcome};

/// Lookups per timed lookup (every probe of a timed lookup is timed); a power of two.
const PROBE_TIMING_EVERY: u64 = 16;

/// Whether lookup `number` (or a thread's iterator `number`, `db/iter.rs`) is timed: one in
/// [`PROBE_TIMING_EVERY`], chosen by the top bits of a Fibonacci hash of the number rather than
/// every sixteenth number, so that a workload with a period (present and absent keys
/// alternating) does not line up with the sample.
pub(super) fn timed(number: u64) -> bool {
    const SHIFT: u32 = 64 - PROBE_TIMING_EVERY.trailing_zeros();
    const _: () = assert!(PROBE_TIMING_EVERY.is_power_of_two());
    number.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> SHIFT == 0
}

/// What one lookup carries through its probes: whether it times them and Merlin's ticket.
struct LookupContext {
    /// One lookup in [`PROBE_TIMING_EVERY`] times its probes (the cache model's price of a false
    /// positive on a cached block, `alloc/cache_model.rs`): two clock reads per probe of a
    /// sixteenth of the lookups.
    timed: bool,
    /// Merlin's lookup number `d` and whether this thread records it (DESIGN.md §4).
    ticket: Option<LookupTicket>,
}

impl LookupContext {
    /// The ticket, if this lookup records its probes in Merlin's statistics.
    fn recording(&self) -> Option<LookupTicket> {
        self.ticket.filter(|ticket| ticket.record)
    }
}

/// What probing one table file did: the record the statistics are applied from
/// ([`DbInner::account_probe`]).
struct ProbeRecord<'a> {
    level: usize,
    file: &'a FileMetadata,
    /// `Some(from_device)` when a data block was read.
    data_block: Option<bool>,
    /// True when the file has a filter the lookup did not probe.
    filter_skipped: bool,
    /// The probe's time, when the lookup is timed.
    nanos: Option<u64>,
    /// True if the file held the key (a value or a tombstone).
    found: bool,
}

fn found(lookup: Lookup) -> Option<Option<Value>> {
    match lookup {
        Lookup::Found(value) => Some(Some(Value(value))),
        Lookup::Deleted => Some(None),
        Lookup::Absent => None,
    }
}

impl DbInner {
    /// The newest version of `key` visible at `sequence` (a snapshot's), or at the newest
    /// sequence number when `None`: the memtables, then the table files
    /// ([`DbInner::search_tables`]), then the statistics of the lookup as a whole
    /// ([`DbInner::finish_lookup`]).
    pub(crate) fn get(&self, key: &[u8], sequence: Option<u64>) -> Result<Option<Value>> {
        // One counter per lookup: Merlin's `D` when statistics are kept (`IoCounters` reads the
        // count of point lookups from it), the engine's own otherwise.
        let ticket = self.merlin.as_ref().map(|merlin| merlin.begin_lookup());
        let lookup_number = match ticket {
            Some(ticket) => ticket.lookup_number,
            None => self.counters.point_lookups.fetch_add(1, Ordering::Relaxed),
        };
        let context = LookupContext {
            timed: timed(lookup_number),
            ticket,
        };
        // A timed lookup also times itself whole: what it spends outside its file probes (the
        // memtables, the view, the statistics) is auto-tune's price of a lookup.
        let started = context.timed.then(Instant::now);
        let mut probe_nanos = 0u64;
        // The view is loaded *before* the sequence number is read: a compaction installed
        // before the load only dropped versions hidden by newer ones at or below a sequence
        // number we are about to see, and one installed after it cannot touch the files we
        // hold. Reading the number first would let a compaction drop a version it still needs.
        let view = self.view.load_full();
        let sequence = sequence.unwrap_or_else(|| self.versions.last_sequence());
        // One hash for the memtables' key filters and the table files' filters.
        let hash = key_hash(key);
        let result = match self.search_memtables(&view, key, hash, sequence, &context) {
            Some(value) => Ok(value),
            None => {
                let mut probes = self.observer.as_ref().map(|_| Vec::new());
                let result =
                    self.search_tables(&view, key, hash, sequence, &context, &mut |probe| {
                        probe_nanos = probe_nanos.saturating_add(probe.nanos.unwrap_or(0));
                        self.account_probe(&probe, &context, probes.as_mut());
                    });
                if let (Some(observer), Some(probes), Ok(_)) = (&self.observer, &probes, &result) {
                    observer.lookup_finished(probes);
                }
                result
            }
        };
        self.finish_lookup(&view, context);
        if let Ok(Some(_)) = &result {
            add(&self.counters.point_lookups_found, 1);
        }
        if let Some(started) = started {
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.counters
                .count_timed_lookup(nanos.saturating_sub(probe_nanos));
        }
        result
    }

    /// The active memtable, then the immutable ones newest first: the key's newest version
    /// there (`Some(None)` for a tombstone), or `None` to search the table files. `hash` is the
    /// key's filter hash, which each memtable's key filter answers first.
    fn search_memtables(
        &self,
        view: &ReadView,
        key: &[u8],
        hash: u64,
        sequence: u64,
        context: &LookupContext,
    ) -> Option<Option<Value>> {
        for mem in std::iter::once(&view.mem).chain(&view.immutable) {
            // An empty memtable (the active one just after a switch or a reopen) answers
            // without a search: one load instead of packing the key and descending the list.
            let lookup = if mem.is_empty() {
                Lookup::Absent
            } else {
                mem.get_hashed(key, hash, sequence)
            };
            if context.recording().is_some() {
                mem.access.record(lookup != Lookup::Absent);
            }
            if let Some(value) = found(lookup) {
                return Some(value);
            }
        }
        None
    }

    /// Each level's runs newest first, one file per run whose key range holds the key, each
    /// through its filter (the modules the allocator has in use), index and one data block.
    /// Every probe is handed to `record` as it is made; this function keeps no statistics.
    fn search_tables(
        &self,
        view: &ReadView,
        key: &[u8],
        hash: u64,
        sequence: u64,
        context: &LookupContext,
        record: &mut dyn FnMut(ProbeRecord<'_>),
    ) -> Result<Option<Value>> {
        let target = LookupKey::new(key, sequence);
        // With a top-level index (EcoTune), level 0's runs newer than the newest one holding
        // the key's hash cannot hold the key, and no run can if no entry exists: one run is
        // probed (older ones only after a hash collision; `top_index.rs`).
        let newest_level0_run = view
            .top_index
            .as_ref()
            .map(|index| index.newest_run(hash).unwrap_or(0));
        for (level, runs) in view.version.levels().iter().enumerate() {
            for run in runs.runs() {
                if level == 0 && newest_level0_run.is_some_and(|newest| run.id() > newest) {
                    continue;
                }
                let Some(file) = run.file_for_key(key) else {
                    continue;
                };
                let pin = self.options.pins_metadata_on(level);
                let in_use = view.filter_allocator.filter_modules_in_use(run.id(), file);
                let started = context.timed.then(Instant::now);
                let probe = self.tables.with_reader(file, pin, |table| {
                    table.get(target.as_bytes(), key, hash, level, in_use)
                })?;
                let nanos = started
                    .map(|started| u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
                record(ProbeRecord {
                    level,
                    file,
                    data_block: probe.data_block,
                    filter_skipped: probe.filter_skipped,
                    nanos,
                    found: probe.result != Lookup::Absent,
                });
                if let Some(value) = found(probe.result) {
                    return Ok(value);
                }
            }
        }
        Ok(None)
    }

    /// Applies what one probe did to the engine's counters, the file's lookup counts and probe
    /// times (elastic filters' cache model), Merlin's statistics when this lookup records, and
    /// the observer's list.
    fn account_probe(
        &self,
        probe: &ProbeRecord<'_>,
        context: &LookupContext,
        observed: Option<&mut Vec<FileProbe>>,
    ) {
        let file = probe.file;
        let state = file.state();
        add(&self.counters.files_probed[probe.level], 1);
        if let Some(nanos) = probe.nanos {
            let outcome = match probe.data_block {
                None => ProbeOutcome::Rejected,
                Some(false) => ProbeOutcome::CachedBlock,
                Some(true) => ProbeOutcome::DeviceBlock,
            };
            state.record_probe_time(outcome, nanos);
            self.counters.count_probe_time(outcome, nanos);
        }
        if probe.filter_skipped {
            add(&self.counters.filter_skips[probe.level], 1);
        }
        if let Some(from_device) = probe.data_block {
            state.record_data_block_read(from_device);
        }
        state.record_probe(probe.found);
        if let (Some(ticket), Some(access)) = (context.recording(), state.access()) {
            access.file.record(ticket.lookup_number, probe.found);
        }
        if let Some(observed) = observed {
            observed.push(FileProbe {
                file_number: file.number(),
                found: probe.found,
            });
        }
    }

    /// The lookup's end: every [`REFRESH_EVERY_LOOKUPS`] lookups the allocator re-derives its
    /// query-time decisions (with statistics kept, the lookup whose number `d` is a multiple of
    /// it, whichever thread makes it and whether or not it is recorded: refreshes evenly spaced
    /// in lookups. At the `1024 / k`-th recorded lookup instead, spaced unevenly, elastic filters
    /// under EcoTune read 0.0037-0.0048 unnecessary blocks per cached absent lookup where evenly
    /// spaced ones read 0.0030-0.0032, docs/BENCHMARKS.md "one lookup in 16"; without them, in
    /// all lookups, for an allocator that re-divides without them, such as elastic filters'
    /// cache-miss weights), and Merlin's ticket is handed back.
    fn finish_lookup(&self, view: &ReadView, context: LookupContext) {
        let allocator = view.filter_allocator.as_ref();
        let refresh = match (&self.merlin, context.ticket) {
            (Some(_), Some(ticket)) => ticket.lookup_number.is_multiple_of(REFRESH_EVERY_LOOKUPS),
            (None, _) => {
                allocator.refreshes_without_statistics()
                    && self
                        .counters
                        .point_lookups
                        .load(Ordering::Relaxed)
                        .is_multiple_of(REFRESH_EVERY_LOOKUPS)
            }
            (Some(_), None) => false,
        };
        if refresh {
            allocator.refresh(&view.version);
            self.release_unused_pinned_filters(&view.version, allocator);
        }
        if let (Some(merlin), Some(ticket)) = (&self.merlin, context.ticket) {
            merlin.end_lookup(ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One lookup in sixteen is timed, and so is one in sixteen of every arithmetic progression
    /// a workload might follow (alternate lookups, every sixteenth, every 1,024th): a sample by
    /// the numbers' residues would time all or none of them.
    #[test]
    fn one_lookup_in_sixteen_is_timed_whatever_the_period() {
        for step in [1u64, 2, 3, 16, 64, 1024] {
            for start in [0u64, 1, 7] {
                let n = 64_000u64;
                let hits = (0..n).filter(|i| timed(start + i * step)).count() as f64;
                let share = hits / n as f64;
                assert!(
                    (share - 1.0 / 16.0).abs() < 0.01,
                    "step {step} start {start}: {share}"
                );
            }
        }
    }

    /// The lookups timed and the lookups Merlin records are drawn independently: at the default
    /// rate, one timed lookup in sixteen is also recorded, as one lookup in sixteen of all is (two
    /// samples by the same bits would time only recorded lookups, whose probes cost more).
    #[test]
    fn the_timed_lookups_are_not_the_recorded_ones() {
        use crate::stats::merlin::recorded_at;
        let every = u64::from(crate::Options::default().access_sample_every);
        let timed_numbers: Vec<u64> = (1..=400_000u64).filter(|&n| timed(n)).collect();
        let both = timed_numbers
            .iter()
            .filter(|&&n| recorded_at(n, every))
            .count() as f64;
        let share = both / timed_numbers.len() as f64;
        let expected = 1.0 / every as f64;
        assert!(
            (share - expected).abs() < 0.2 * expected,
            "{share} of the timed lookups recorded at one in {every}"
        );
    }

    /// A timed lookup counts its time outside its file probes once, from every thread that
    /// looks up, with statistics on and off.
    #[test]
    fn timed_lookups_count_their_time_outside_the_file_probes() {
        use std::sync::atomic::Ordering::Relaxed;
        for statistics in [true, false] {
            let dir = tempfile::tempdir().expect("tempdir");
            let options = crate::Options::default().access_statistics(statistics);
            let db = crate::Db::open(dir.path(), options).expect("open");
            for i in 0..2_000u32 {
                db.put(i.to_be_bytes(), [1u8; 16]).expect("put");
            }
            db.flush().expect("flush");
            std::thread::scope(|scope| {
                for thread in 0..4u32 {
                    let db = &db;
                    scope.spawn(move || {
                        for i in 0..4_000u32 {
                            db.get((i * 4 + thread).to_be_bytes()).expect("get");
                        }
                    });
                }
            });
            let counters = &db.inner.counters;
            let lookups = counters.point_lookups();
            assert_eq!(lookups, 16_000);
            let timed = counters.timed_lookups.load(Relaxed);
            // The sample is the lookup numbers' hash: one in sixteen within 1%.
            assert!(
                (timed as f64 / lookups as f64 - 1.0 / 16.0).abs() < 0.01,
                "{timed} of {lookups}"
            );
            assert!(counters.timed_lookup_nanos.load(Relaxed) > 0);
            let costs = db.inner.measurements().costs(40.0);
            let per_lookup = costs.seconds_per_lookup.expect("enough timed");
            assert!(per_lookup > 0.0 && per_lookup < 0.01, "{per_lookup}");
            db.close().expect("close");
        }
    }
}
