//! A table file's runtime state: what the engine holds for a file while it is in the tree and
//! that the manifest never logs. [`FileMetadata`](super::FileMetadata) is the file's facts (what
//! a version edit encodes); it holds one handle to this state, shared by every `FileMetadata` of
//! the file (an edit that re-adds a file with changed facts makes a second one) and carried
//! through trivial moves, as Pebble keeps its file cache apart from its table metadata.
//!
//! The state is: the slot of the file's open reader (`table::table_cache`), Merlin's access
//! statistics (DESIGN.md §4), what point lookups measured in the file (DESIGN.md §3.5's cache
//! model), the filter allocator's memo word, and the report that makes the file obsolete when
//! the last version lets it go (`db::files` deletes it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;

use crate::stats::lookups::{LookupCounts, ProbeOutcome, ProbeTime, ProbeTimes};
use crate::stats::merlin::{AccessEstimate, FileAccess, Merlin};
use crate::table::TableSlot;

/// Probes that must follow a mark of [`FileState::recent_lookup_counts`] before it moves on.
pub const RECENT_MIN_PROBES: u64 = 128;

/// Probes after which a mark of [`FileState::recent_lookup_counts`] moves on even while the
/// window before it is longer: a file's window then holds its newest 65,536 to 131,072 probes.
pub const RECENT_WINDOW_PROBES: u64 = 65_536;

/// The counters of [`LookupCounts`] at one instant (probe times aside).
#[derive(Debug, Clone, Copy)]
struct CountMark {
    at: Instant,
    empty_probes: u64,
    found_probes: u64,
    data_block_reads: u64,
    data_block_misses: u64,
}

impl CountMark {
    /// Nothing counted, at the first probe.
    fn origin(at: Instant) -> Self {
        CountMark {
            at,
            empty_probes: 0,
            found_probes: 0,
            data_block_reads: 0,
            data_block_misses: 0,
        }
    }

    fn of(counts: &LookupCounts, at: Instant) -> Self {
        CountMark {
            at,
            empty_probes: counts.empty_probes,
            found_probes: counts.found_probes,
            data_block_reads: counts.data_block_reads,
            data_block_misses: counts.data_block_misses,
        }
    }

    fn probes(&self) -> u64 {
        self.empty_probes + self.found_probes
    }

    /// `total` less what this mark had counted, over the seconds since it.
    fn window_to(&self, total: &LookupCounts, now: Instant) -> LookupCounts {
        LookupCounts {
            seconds: now.saturating_duration_since(self.at).as_secs_f64(),
            empty_probes: total.empty_probes.saturating_sub(self.empty_probes),
            found_probes: total.found_probes.saturating_sub(self.found_probes),
            data_block_reads: total.data_block_reads.saturating_sub(self.data_block_reads),
            data_block_misses: total
                .data_block_misses
                .saturating_sub(self.data_block_misses),
            probe_times: total.probe_times,
        }
    }
}

/// Where dropped file states report the numbers of files no version needs any more.
#[derive(Default)]
pub(crate) struct ObsoleteFiles {
    numbers: Mutex<Vec<u64>>,
}

impl ObsoleteFiles {
    pub(crate) fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.numbers.lock())
    }
}

/// A file's Merlin statistics and the engine-wide lookup clock they are read against.
#[derive(Clone)]
pub(crate) struct AccessHandle {
    pub(crate) file: Arc<FileAccess>,
    pub(crate) merlin: Arc<Merlin>,
}

impl AccessHandle {
    /// Merlin's estimate, scaled to every lookup issued so far (DESIGN.md §4).
    pub(crate) fn estimate(&self) -> AccessEstimate {
        self.file.estimate(&self.merlin.view())
    }
}

impl std::fmt::Debug for AccessHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessHandle")
            .field("file", &self.file)
            .finish()
    }
}

/// Two handles are equal when they share the same statistics (edits compare by identity).
impl PartialEq for AccessHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
    }
}

/// A table file's runtime state (see the module's documentation), reached through
/// [`FileMetadata::state`](super::FileMetadata::state). Its counters are in memory only: they
/// start at 0 when this process first knows the file (written or recovered).
pub struct FileState {
    /// The file's open reader, when one is open (`table::table_cache`). Declared first so that
    /// the reader (and its file descriptor) is dropped before `obsolete` reports the file and it
    /// is deleted.
    table: Arc<TableSlot>,
    access: OnceLock<AccessHandle>,
    /// Data blocks point lookups read in this file, and how many of them the block cache did
    /// not hold (DESIGN.md §3.5's cache-miss weight).
    data_block_reads: AtomicU64,
    data_block_misses: AtomicU64,
    /// Point lookups that reached this file (its key range held the key) and found nothing
    /// here: the probes a better filter would have answered without a data-block read
    /// (DESIGN.md §3.5 "Rebuild, priced").
    empty_probes: AtomicU64,
    /// Point lookups that found a version of their key (or its tombstone) in this file: its
    /// data-block reads that are not false positives (DESIGN.md §3.5's cache model).
    found_probes: AtomicU64,
    /// When this process first knew the file (written or recovered): the probe rate's clock.
    known_since: Instant,
    /// When a point lookup first reached the file in this process: the clock of
    /// [`LookupCounts`], so that a file written long before lookups began does not show a
    /// lower rate than one written just before.
    first_probe: OnceLock<Instant>,
    /// Sampled probe times (DESIGN.md §3.5's cache model: what a false positive costs when its
    /// block is cached), by [`ProbeOutcome`]: probes and nanoseconds.
    probe_times: [(AtomicU64, AtomicU64); 3],
    /// One word the filter allocator may keep for the lookup path ([`FileState::allocator_memo`];
    /// 0 until it writes one).
    allocator_memo: AtomicU64,
    /// The two marks [`FileState::recent_lookup_counts`] counts from: the older one starts its
    /// window, the newer one becomes the older once as many probes followed it as preceded it.
    recent_marks: Mutex<Option<[CountMark; 2]>>,
    /// Declared last: reports the file obsolete once everything above, the reader first, is gone.
    obsolete: ObsoleteReport,
}

/// Reports file `number` to the obsolete list when dropped, if the file joined a version the
/// engine installed.
struct ObsoleteReport {
    number: u64,
    /// Set when the file joins a version the engine installs (`Version::apply` with a sink):
    /// a file whose edit never applied is not reported, the next open's cleanup finds it.
    sink: OnceLock<Arc<ObsoleteFiles>>,
}

impl Drop for ObsoleteReport {
    fn drop(&mut self) {
        if let Some(sink) = self.sink.get() {
            sink.numbers.lock().push(self.number);
        }
    }
}

impl std::fmt::Debug for FileState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileState")
            .field("number", &self.obsolete.number)
            .field("access", &self.access.get())
            .finish_non_exhaustive()
    }
}

impl FileState {
    /// The state of file `number`, as this process first knows it: no reader open, nothing
    /// counted, `access` its Merlin statistics if it starts with some.
    pub(crate) fn new(number: u64, access: Option<AccessHandle>) -> Arc<Self> {
        Arc::new(FileState {
            table: Arc::new(TableSlot::default()),
            access: access.map(OnceLock::from).unwrap_or_default(),
            data_block_reads: AtomicU64::new(0),
            data_block_misses: AtomicU64::new(0),
            empty_probes: AtomicU64::new(0),
            found_probes: AtomicU64::new(0),
            known_since: Instant::now(),
            first_probe: OnceLock::new(),
            probe_times: Default::default(),
            allocator_memo: AtomicU64::new(0),
            recent_marks: Mutex::new(None),
            obsolete: ObsoleteReport {
                number,
                sink: OnceLock::new(),
            },
        })
    }

    /// The slot that holds the file's open reader (`table::table_cache::TableFile`).
    pub(crate) fn table_slot(&self) -> &Arc<TableSlot> {
        &self.table
    }

    /// Makes the file report itself to `sink` when its state drops: the file has joined a
    /// version the engine installs. No-op if it already reports somewhere.
    pub(crate) fn report_obsolete_to(&self, sink: &Arc<ObsoleteFiles>) {
        let _ = self.obsolete.sink.set(Arc::clone(sink));
    }

    /// Attaches access statistics to a file that has none (files recovered from the manifest).
    /// No-op if the file already has them.
    pub(crate) fn attach_access(&self, handle: AccessHandle) {
        let _ = self.access.set(handle);
    }

    /// The file's access statistics, if the engine keeps them (Merlin on).
    pub(crate) fn access(&self) -> Option<&AccessHandle> {
        self.access.get()
    }

    /// Merlin's estimate of the point lookups that probed this file over the whole horizon
    /// (DESIGN.md §4): `q` all probes, `x` those that found the key here, `z = q - x`. `None` when the
    /// engine keeps no access statistics (see `Options::access_statistics`).
    pub fn access_estimate(&self) -> Option<AccessEstimate> {
        self.access().map(AccessHandle::estimate)
    }

    /// The naive baseline's estimate (plain counters since the file was written, DESIGN.md §4), for
    /// comparison with [`FileState::access_estimate`].
    pub fn naive_access_estimate(&self) -> Option<AccessEstimate> {
        self.access()
            .map(|handle| handle.file.naive_estimate(&handle.merlin.view()))
    }

    /// Counts a data block a point lookup read in this file, `from_device` if the block cache
    /// did not hold it.
    pub(crate) fn record_data_block_read(&self, from_device: bool) {
        self.data_block_reads.fetch_add(1, Ordering::Relaxed);
        if from_device {
            self.data_block_misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// (data blocks point lookups read in this file, of which from the device) since the file
    /// was opened in this process: how often a false positive here costs a device read
    /// (DESIGN.md §3.5).
    pub fn data_block_reads(&self) -> (u64, u64) {
        (
            self.data_block_reads.load(Ordering::Relaxed),
            self.data_block_misses.load(Ordering::Relaxed),
        )
    }

    /// Counts a point lookup that reached this file (its key range held the key): `found` if it
    /// found a version of the key (or its tombstone) here, an empty probe if not.
    pub(crate) fn record_probe(&self, found: bool) {
        self.first_probe.get_or_init(Instant::now);
        let counter = if found {
            &self.found_probes
        } else {
            &self.empty_probes
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A word the filter allocator keeps for this file, in memory only; 0 until the allocator
    /// writes one. Elastic filters keep the file's modules in use here, tagged with the
    /// selection they came from, so that a probe reads one atomic word instead of looking the
    /// file up in the selection (`alloc::elastic`): the lookup path asks for every file it probes.
    pub(crate) fn allocator_memo(&self) -> u64 {
        self.allocator_memo.load(Ordering::Relaxed)
    }

    /// Sets [`FileState::allocator_memo`].
    pub(crate) fn set_allocator_memo(&self, word: u64) {
        self.allocator_memo.store(word, Ordering::Relaxed);
    }

    /// Counts a timed probe of this file that took `nanos` and read what `outcome` says.
    pub(crate) fn record_probe_time(&self, outcome: ProbeOutcome, nanos: u64) {
        let (probes, total) = &self.probe_times[outcome.index()];
        probes.fetch_add(1, Ordering::Relaxed);
        total.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What point lookups did in this file since the first reached it, read at `now`
    /// (DESIGN.md §3.5's cache model).
    pub fn lookup_counts(&self, now: Instant) -> LookupCounts {
        let (data_block_reads, data_block_misses) = self.data_block_reads();
        let time = |outcome: ProbeOutcome| {
            let (probes, nanos) = &self.probe_times[outcome.index()];
            ProbeTime {
                probes: probes.load(Ordering::Relaxed),
                nanos: nanos.load(Ordering::Relaxed),
            }
        };
        LookupCounts {
            probe_times: ProbeTimes {
                rejected: time(ProbeOutcome::Rejected),
                cached_block: time(ProbeOutcome::CachedBlock),
                device_block: time(ProbeOutcome::DeviceBlock),
            },
            seconds: self.first_probe.get().map_or(0.0, |first| {
                now.saturating_duration_since(*first).as_secs_f64()
            }),
            empty_probes: self.empty_probes.load(Ordering::Relaxed),
            found_probes: self.found_probes.load(Ordering::Relaxed),
            data_block_reads,
            data_block_misses,
        }
    }

    /// [`FileState::lookup_counts`] over a window of the newest lookups, what DESIGN.md §3.5's
    /// cache model reads: the counts since a mark that moves on as the file's probes double, so
    /// the window holds at least the newest half of the probes (and of the newest
    /// [`RECENT_WINDOW_PROBES`] at least as many, once that many arrived since a mark). A cache
    /// starts cold: every block's first reads miss, however hot the block, and a file whose
    /// blocks stay cached afterwards would keep those misses in its counts for good; the window
    /// lets them go. Probe times are not windowed (they price a cached probe, whenever timed).
    ///
    /// Reading it may move the marks on: two readers in turn see the same window or a newer one.
    pub fn recent_lookup_counts(&self, now: Instant) -> LookupCounts {
        let total = self.lookup_counts(now);
        let Some(&first) = self.first_probe.get() else {
            return total;
        };
        let current = CountMark::of(&total, now);
        let mut marks = self.recent_marks.lock();
        let [older, newer] = marks.get_or_insert([CountMark::origin(first); 2]);
        let since_newer = current.probes().saturating_sub(newer.probes());
        let newer_span = newer.probes().saturating_sub(older.probes());
        if since_newer >= RECENT_MIN_PROBES
            && (since_newer >= newer_span || since_newer >= RECENT_WINDOW_PROBES)
        {
            *older = *newer;
            *newer = current;
        }
        older.window_to(&total, now)
    }

    /// Point lookups that reached this file and found nothing here, per second, since this
    /// process first knew the file (written or recovered): the measured rate at which a filter
    /// false positive here would cost a data-block read (DESIGN.md §3.5 "Rebuild, priced"). 0
    /// for a file known for under a millisecond.
    pub fn empty_probes_per_sec(&self, now: Instant) -> f64 {
        let seconds = now
            .saturating_duration_since(self.known_since)
            .as_secs_f64();
        if seconds < 1e-3 {
            return 0.0;
        }
        self.empty_probes.load(Ordering::Relaxed) as f64 / seconds
    }

    /// Test hook: pretends `probes` empty probes arrived.
    #[cfg(test)]
    pub(crate) fn add_empty_probes(&self, probes: u64) {
        self.empty_probes.fetch_add(probes, Ordering::Relaxed);
    }

    /// Test hook: pretends lookups did `counts` in the file, the first `counts.seconds` before
    /// `now`.
    #[cfg(test)]
    pub(crate) fn add_lookup_counts(&self, counts: LookupCounts, now: Instant) {
        let first = now
            .checked_sub(std::time::Duration::from_secs_f64(counts.seconds))
            .unwrap_or(now);
        self.first_probe.get_or_init(|| first);
        self.empty_probes
            .fetch_add(counts.empty_probes, Ordering::Relaxed);
        self.found_probes
            .fetch_add(counts.found_probes, Ordering::Relaxed);
        self.data_block_reads
            .fetch_add(counts.data_block_reads, Ordering::Relaxed);
        self.data_block_misses
            .fetch_add(counts.data_block_misses, Ordering::Relaxed);
        let times = counts.probe_times;
        for (outcome, time) in [
            (ProbeOutcome::Rejected, times.rejected),
            (ProbeOutcome::CachedBlock, times.cached_block),
            (ProbeOutcome::DeviceBlock, times.device_block),
        ] {
            let (probes, nanos) = &self.probe_times[outcome.index()];
            probes.fetch_add(time.probes, Ordering::Relaxed);
            nanos.fetch_add(time.nanos, Ordering::Relaxed);
        }
    }
}
