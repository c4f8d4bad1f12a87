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
    /// The filter allocator's smoothed figure for this file and the file's probes when it last
    /// moved ([`FileState::smoothed`]); `None` until first asked.
    smoothed: Mutex<Option<Smoothed>>,
    /// The two marks [`FileState::recent_lookup_counts`] counts from: the older one starts its
    /// window, the newer one becomes the older once as many probes followed it as preceded it.
    recent_marks: Mutex<Option<[CountMark; 2]>>,
    /// Declared last: reports the file obsolete once everything above, the reader first, is gone.
    obsolete: ObsoleteReport,
}

/// [`FileState::smoothed`]'s figure: its owner, the average, and the file's probes when it last
/// moved.
#[derive(Debug, Clone, Copy)]
struct Smoothed {
    owner: u64,
    value: f64,
    probes: u64,
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
            smoothed: Mutex::new(None),
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

    /// `value` (positive and finite) averaged geometrically over this file's probes, for the
    /// caller numbered `owner` (another owner's average is dropped: an allocator after a switch
    /// starts its own, and two that price alike but differently do not mix): each call
    /// moves the kept figure toward `value` by `1 - exp(-p / h)`, with `p` the probes of the
    /// file since the call before and `h` the lesser of `horizon_probes` and half the file's
    /// probes so far, so that the average weighs about the newest `h` probes' values however
    /// often it is asked (a young file's the newest half of them, as its window of counts does),
    /// and a call with no probe since the last leaves it where it was. The first call keeps
    /// `value`; a value that is not positive and finite is returned as it is and not kept. In
    /// memory only: a reopened database starts again from its first measurement. Elastic
    /// filters smooth each file's false-positive cost with it (DESIGN.md §3.5 "Cache misses,
    /// smoothed").
    pub(crate) fn smoothed(&self, owner: u64, value: f64, horizon_probes: f64) -> f64 {
        if !(value > 0.0 && value.is_finite()) {
            return value;
        }
        let probes = self
            .empty_probes
            .load(Ordering::Relaxed)
            .saturating_add(self.found_probes.load(Ordering::Relaxed));
        // A file younger than two horizons is averaged over the newest half of its probes.
        let horizon_probes = horizon_probes.min(probes as f64 / 2.0);
        let mut kept = self.smoothed.lock();
        let next = match *kept {
            Some(before) if before.owner == owner && horizon_probes > 0.0 => {
                let since = probes.saturating_sub(before.probes) as f64;
                let step = 1.0 - (-since / horizon_probes).exp();
                let log = before.value.ln() + step * (value.ln() - before.value.ln());
                Smoothed {
                    owner,
                    value: log.exp(),
                    probes,
                }
            }
            _ => Smoothed {
                owner,
                value,
                probes,
            },
        };
        *kept = Some(next);
        next.value
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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// The figure `value` moves to by `1 - exp(-p / h)` in logs from `from`.
    fn moved(from: f64, value: f64, p: f64, h: f64) -> f64 {
        (from.ln() + (1.0 - (-p / h).exp()) * (value.ln() - from.ln())).exp()
    }

    /// The first figure is kept as it is; a call with no probe since the last does not move it
    /// however often it is made; probes move it toward the new value by `1 - exp(-p / h)` in
    /// logs, so one horizon's probes cover about 63% of the way and many cover all of it, and
    /// the probes split over two calls come to the same figure as in one.
    #[test]
    fn the_smoothed_figure_moves_with_the_probes_not_with_the_calls() {
        let horizon = 1_000.0;
        let state = FileState::new(7, None);
        state.add_empty_probes(1_000_000);
        assert_eq!(state.smoothed(1, 0.5, horizon), 0.5);
        for _ in 0..100 {
            assert!(close(state.smoothed(1, 0.001, horizon), 0.5));
        }
        state.add_empty_probes(1_000);
        let once = state.smoothed(1, 0.05, horizon);
        let expected = moved(0.5, 0.05, 1_000.0, horizon);
        assert!(close(once, expected), "{once} against {expected}");
        let split = FileState::new(8, None);
        split.add_empty_probes(1_000_000);
        split.smoothed(1, 0.5, horizon);
        split.add_empty_probes(500);
        split.smoothed(1, 0.05, horizon);
        split.add_empty_probes(500);
        assert!(close(split.smoothed(1, 0.05, horizon), once));
        state.add_empty_probes(50_000);
        assert!(close(state.smoothed(1, 0.05, horizon), 0.05));
    }

    /// Each owner has its own average: a figure kept for one is not moved toward, or handed to,
    /// another, who starts again from its own value.
    #[test]
    fn another_owner_starts_its_own_average() {
        let state = FileState::new(11, None);
        state.add_empty_probes(1_000_000);
        assert_eq!(state.smoothed(1, 0.5, 1_000.0), 0.5);
        state.add_empty_probes(10);
        assert_eq!(state.smoothed(2, 0.01, 1_000.0), 0.01);
        state.add_empty_probes(10);
        let again = state.smoothed(1, 0.5, 1_000.0);
        assert_eq!(again, 0.5, "owner 2's figure was dropped for owner 1's own");
    }

    /// Several threads averaging at once (refreshes run on whichever lookup thread reaches the
    /// 1,024th lookup, jobs on their workers) while probes arrive: every figure handed back lies
    /// between the least and the greatest value fed, and once the probes stop and every thread
    /// feeds one value, many horizons of probes later the figure is that value.
    #[test]
    fn threads_averaging_at_once_stay_within_the_values_fed() {
        let state = FileState::new(12, None);
        let horizon = 1_000.0;
        std::thread::scope(|scope| {
            for thread in 0..4u32 {
                let state = &state;
                scope.spawn(move || {
                    for i in 0..5_000u32 {
                        state.add_empty_probes(3);
                        let value = if (i + thread) % 2 == 0 { 0.01 } else { 0.5 };
                        let figure = state.smoothed(1, value, horizon);
                        assert!(
                            (0.01 * (1.0 - 1e-9)..=0.5 * (1.0 + 1e-9)).contains(&figure),
                            "{figure}"
                        );
                    }
                });
            }
        });
        state.add_empty_probes(1_000_000);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let state = &state;
                scope.spawn(move || state.smoothed(1, 0.2, horizon));
            }
        });
        assert!(close(state.smoothed(1, 0.2, horizon), 0.2));
    }

    /// A file younger than two horizons is averaged over the newest half of its probes: its
    /// first 1,000 probes after its first figure move the figure by `1 - exp(-2)`, not by the
    /// long horizon's `1 - exp(-0.001)`.
    #[test]
    fn a_young_file_is_averaged_over_the_newest_half_of_its_probes() {
        let state = FileState::new(10, None);
        assert_eq!(state.smoothed(1, 1.0, 1_000_000.0), 1.0);
        state.add_empty_probes(1_000);
        let young = state.smoothed(1, 0.01, 1_000_000.0);
        let expected = moved(1.0, 0.01, 1_000.0, 500.0);
        assert!(close(young, expected), "{young} against {expected}");
        assert!(young < 0.2, "{young}");
    }

    /// A value that is not positive and finite is handed back and not kept; a horizon of 0
    /// keeps each new value as it comes.
    #[test]
    fn the_smoothed_figure_ignores_values_it_cannot_average() {
        let state = FileState::new(9, None);
        assert_eq!(state.smoothed(1, 0.2, 100.0), 0.2);
        for odd in [0.0, -1.0, f64::INFINITY] {
            state.add_empty_probes(10);
            assert_eq!(state.smoothed(1, odd, 100.0), odd);
        }
        assert!(state.smoothed(1, f64::NAN, 100.0).is_nan());
        state.add_empty_probes(10_000);
        assert!(close(state.smoothed(1, 0.3, 0.0), 0.3));
        assert!(close(state.smoothed(1, 0.7, 0.0), 0.7));
    }
}
