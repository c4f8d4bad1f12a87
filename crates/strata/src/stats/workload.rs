//! What a database has been asked to do over its whole life, kept across restarts: the workload
//! mix `strata tune --from-db` tunes for (DESIGN.md §7's `z`, `v`, `w`, `q` and the selectivity).
//!
//! The I/O counters (`IoCounters`) start at zero on every open and whenever a benchmark resets
//! them between phases; a tuner reading a database offline needs the totals since it was
//! created. So the engine keeps a base (the totals up to the last reset, restored on open) and
//! adds the live counters to it, and logs the totals in the manifest as a policy state
//! ([`WORKLOAD_OWNER`]) with every flush and at close. What a crash loses is what was counted
//! after the last flush: these are statistics for tuning, and a tuner needs the mix, not every
//! operation. Writes are not counted here at all: every written entry takes a sequence number,
//! so the manifest's last sequence already is the lifetime write count.

/// The owner of the workload record among the manifest's policy states.
pub(crate) const WORKLOAD_OWNER: &str = "engine.workload";

/// The version of [`WorkloadTotals::encode`]'s layout: 2 adds the long scans and the window's
/// anchor; version 1 records (four counts) are still read.
const ENCODING_VERSION: u8 = 2;
const ENCODING_VERSION_1: u8 = 1;

/// A range lookup that returns at least this many entries counts as a long scan (EcoTune's `r`,
/// DESIGN.md §6). A 4 KiB data block holds about 16 entries of 256 bytes, so such a scan reads
/// past its first block in every run it visits; a shorter one costs about what a point lookup
/// costs.
pub const LONG_SCAN_MIN_ENTRIES: u64 = 16;

/// The queries (point lookups and range lookups) the live window spans at least
/// ([`WorkloadWindow`]).
pub const WINDOW_QUERIES: u64 = 50_000;

/// Queries a window must hold before its shares are trusted ([`WorkloadMix::long_scan_ratio`]).
pub const MIN_WINDOW_QUERIES: u64 = 1_000;

/// Operations a database has served since it was created (or since the statistics were first
/// kept: a database written by a build before them starts at zero).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkloadTotals {
    /// Point lookups (`get`).
    pub point_lookups: u64,
    /// Point lookups that found their key (the rest are zero-result lookups).
    pub point_lookups_found: u64,
    /// Range lookups: iterator seeks, including the implicit one of a scan from its start.
    pub seeks: u64,
    /// Entries range lookups returned (their total length; with `seeks`, the average length).
    pub scan_entries: u64,
    /// Range lookups that returned at least [`LONG_SCAN_MIN_ENTRIES`] entries each (an
    /// iterator's entries are shared evenly among its seeks). Zero for totals recorded by a
    /// build before this count.
    pub long_scans: u64,
    /// Entries the long scans returned (with `long_scans`, EcoTune's `K`).
    pub long_scan_entries: u64,
    /// Entries written (puts and deletes): the last sequence number.
    pub writes: u64,
}

impl WorkloadTotals {
    /// The sum, field by field (`writes` is not a counter and is taken from `other`).
    pub(crate) fn plus_counts(&self, other: &WorkloadTotals) -> WorkloadTotals {
        WorkloadTotals {
            point_lookups: self.point_lookups.saturating_add(other.point_lookups),
            point_lookups_found: self
                .point_lookups_found
                .saturating_add(other.point_lookups_found),
            seeks: self.seeks.saturating_add(other.seeks),
            scan_entries: self.scan_entries.saturating_add(other.scan_entries),
            long_scans: self.long_scans.saturating_add(other.long_scans),
            long_scan_entries: self
                .long_scan_entries
                .saturating_add(other.long_scan_entries),
            writes: other.writes,
        }
    }

    /// Queries: point lookups and range lookups.
    pub fn queries(&self) -> u64 {
        self.point_lookups.saturating_add(self.seeks)
    }

    /// True if no count of `self` is below `earlier`'s: `earlier` can anchor a window ending
    /// at `self`.
    fn follows(&self, earlier: &WorkloadTotals) -> bool {
        self.point_lookups >= earlier.point_lookups
            && self.point_lookups_found >= earlier.point_lookups_found
            && self.seeks >= earlier.seeks
            && self.scan_entries >= earlier.scan_entries
            && self.long_scans >= earlier.long_scans
            && self.long_scan_entries >= earlier.long_scan_entries
            && self.writes >= earlier.writes
    }

    fn counts(&self) -> [u64; 6] {
        [
            self.point_lookups,
            self.point_lookups_found,
            self.seeks,
            self.scan_entries,
            self.long_scans,
            self.long_scan_entries,
        ]
    }

    /// The manifest record: a version byte, the six counts as little-endian `u64`s (`writes` is
    /// the manifest's last sequence and is not repeated), then the live window's anchor
    /// ([`WorkloadWindow::anchor`]): a byte 0 for none, or 1 and its six counts and its writes.
    pub(crate) fn encode(&self, anchor: Option<&WorkloadTotals>) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(2 + 13 * 8);
        bytes.push(ENCODING_VERSION);
        for count in self.counts() {
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        match anchor {
            None => bytes.push(0),
            Some(anchor) => {
                bytes.push(1);
                for count in anchor.counts().into_iter().chain([anchor.writes]) {
                    bytes.extend_from_slice(&count.to_le_bytes());
                }
            }
        }
        bytes
    }

    /// Decodes [`WorkloadTotals::encode`]'s bytes (or a version-1 record of four counts, with no
    /// anchor): the totals and the window's anchor. `None` for any other bytes (a damaged or
    /// newer record: statistics then start afresh rather than fail the open). An anchor that
    /// does not precede the totals is dropped.
    pub(crate) fn decode(bytes: &[u8]) -> Option<(WorkloadTotals, Option<WorkloadTotals>)> {
        let (&version, rest) = bytes.split_first()?;
        let words = |bytes: &[u8]| -> Vec<u64> {
            bytes
                .chunks_exact(8)
                .map(|chunk| {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(chunk);
                    u64::from_le_bytes(word)
                })
                .collect()
        };
        let from = |c: &[u64], writes: u64| WorkloadTotals {
            point_lookups: c[0],
            point_lookups_found: c[1],
            seeks: c[2],
            scan_entries: c[3],
            long_scans: c[4],
            long_scan_entries: c[5],
            writes,
        };
        match version {
            ENCODING_VERSION_1 if rest.len() == 4 * 8 => {
                let mut c = words(rest);
                c.extend([0, 0]);
                Some((from(&c, 0), None))
            }
            ENCODING_VERSION if rest.len() > 6 * 8 => {
                let (counts, anchor) = rest.split_at(6 * 8);
                let totals = from(&words(counts), 0);
                let anchor = match anchor {
                    [0] => None,
                    [1, anchor @ ..] if anchor.len() == 7 * 8 => {
                        let a = words(anchor);
                        Some(from(&a, a[6]))
                    }
                    _ => return None,
                };
                // `writes` of the totals comes from the manifest: compare the counts only.
                let anchor = anchor.filter(|a| {
                    WorkloadTotals {
                        writes: u64::MAX,
                        ..totals
                    }
                    .follows(a)
                });
                Some((totals, anchor))
            }
            _ => None,
        }
    }
}

/// The workload over a recent window (DESIGN.md §6, "The workload the engine measures"): what
/// the policies read through [`CompactionContext::workload`](crate::compaction::CompactionContext).
/// Counts are the differences of the lifetime totals between the window's anchor and now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkloadMix {
    /// The operations served in the window.
    pub counts: WorkloadTotals,
}

impl WorkloadMix {
    /// The share of queries that are long scans (EcoTune's `r`); `None` with fewer than
    /// [`MIN_WINDOW_QUERIES`] queries in the window.
    pub fn long_scan_ratio(&self) -> Option<f64> {
        let queries = self.counts.queries();
        (queries >= MIN_WINDOW_QUERIES).then(|| self.counts.long_scans as f64 / queries as f64)
    }

    /// Entries of an average long scan (EcoTune's `K`); `None` without long scans.
    pub fn long_scan_length(&self) -> Option<f64> {
        (self.counts.long_scans > 0)
            .then(|| self.counts.long_scan_entries as f64 / self.counts.long_scans as f64)
    }

    /// The share of queries that are range lookups of any length; `None` as for
    /// [`WorkloadMix::long_scan_ratio`].
    pub fn range_lookup_ratio(&self) -> Option<f64> {
        let queries = self.counts.queries();
        (queries >= MIN_WINDOW_QUERIES).then(|| self.counts.seeks as f64 / queries as f64)
    }

    /// Writes over writes and queries; `None` for an empty window.
    pub fn write_share(&self) -> Option<f64> {
        let all = self.counts.queries().saturating_add(self.counts.writes);
        (all > 0).then(|| self.counts.writes as f64 / all as f64)
    }
}

/// The live window over the lifetime totals: snapshots ("anchors") taken as queries arrive, one
/// every eighth of the span, the oldest dropped while the next one still leaves `span` queries
/// in the window. The window thus covers the last `span` to `9/8 span` queries (and every write
/// among them) when observed often (the engine observes it at every pick and every flush; a
/// long read-only stretch observed once spans from the last anchor before it); a write-only
/// stretch keeps the last queries' mix. The oldest anchor is logged with
/// the totals (the manifest record), so a reopened database resumes the window it had.
#[derive(Debug, Clone)]
pub(crate) struct WorkloadWindow {
    anchors: std::collections::VecDeque<WorkloadTotals>,
    span: u64,
}

impl WorkloadWindow {
    /// A window of at least `span` queries (at least 8) starting at `anchor`.
    pub(crate) fn new(span: u64, anchor: WorkloadTotals) -> WorkloadWindow {
        WorkloadWindow {
            anchors: std::collections::VecDeque::from([anchor]),
            span: span.max(8),
        }
    }

    /// The window a reopened database resumes: from `anchor` (the one logged) to `now` (the
    /// totals at open), with `now` an anchor too, so the queries served from now on push the
    /// old ones out after one span, however rarely the window is observed.
    pub(crate) fn resume(
        span: u64,
        anchor: WorkloadTotals,
        now: &WorkloadTotals,
    ) -> WorkloadWindow {
        let mut window = WorkloadWindow::new(span, anchor);
        window.observe(now);
        if window.anchors.back() != Some(now) {
            window.anchors.push_back(*now);
        }
        window
    }

    /// The oldest anchor: where the window starts.
    pub(crate) fn anchor(&self) -> WorkloadTotals {
        self.anchors.front().copied().unwrap_or_default()
    }

    /// Moves the window to end at `now` (the lifetime totals) and returns its mix. Totals that
    /// went backwards (a reopened database that lost counts in a crash) restart the window at
    /// `now`.
    pub(crate) fn observe(&mut self, now: &WorkloadTotals) -> WorkloadMix {
        if !self
            .anchors
            .back()
            .is_some_and(|newest| now.follows(newest))
        {
            self.anchors.retain(|anchor| now.follows(anchor));
            if self.anchors.is_empty() {
                self.anchors.push_back(*now);
            }
        }
        let newest = self.anchors.back().map_or(0, WorkloadTotals::queries);
        if now.queries().saturating_sub(newest) >= self.span / 8 {
            self.anchors.push_back(*now);
        }
        while self.anchors.len() > 1
            && now.queries().saturating_sub(self.anchors[1].queries()) >= self.span
        {
            self.anchors.pop_front();
        }
        let anchor = self.anchor();
        WorkloadMix {
            counts: WorkloadTotals {
                point_lookups: now.point_lookups - anchor.point_lookups,
                point_lookups_found: now.point_lookups_found - anchor.point_lookups_found,
                seeks: now.seeks - anchor.seeks,
                scan_entries: now.scan_entries - anchor.scan_entries,
                long_scans: now.long_scans - anchor.long_scans,
                long_scan_entries: now.long_scan_entries - anchor.long_scan_entries,
                writes: now.writes - anchor.writes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(point_lookups: u64, seeks: u64, long_scans: u64, writes: u64) -> WorkloadTotals {
        WorkloadTotals {
            point_lookups,
            point_lookups_found: point_lookups / 2,
            seeks,
            scan_entries: long_scans * 100 + (seeks - long_scans),
            long_scans,
            long_scan_entries: long_scans * 100,
            writes,
        }
    }

    #[test]
    fn totals_round_trip_and_foreign_bytes_are_refused() {
        let totals = WorkloadTotals {
            point_lookups: 1_000_000,
            point_lookups_found: 400_000,
            seeks: 7,
            scan_entries: 70,
            long_scans: 2,
            long_scan_entries: 40,
            writes: 0,
        };
        assert_eq!(
            WorkloadTotals::decode(&totals.encode(None)),
            Some((totals, None))
        );
        let anchor = WorkloadTotals {
            point_lookups: 10,
            writes: 5,
            ..WorkloadTotals::default()
        };
        assert_eq!(
            WorkloadTotals::decode(&totals.encode(Some(&anchor))),
            Some((totals, Some(anchor)))
        );
        // An anchor past the totals cannot start a window: dropped, the totals kept.
        let late = WorkloadTotals {
            seeks: 8,
            ..WorkloadTotals::default()
        };
        assert_eq!(
            WorkloadTotals::decode(&totals.encode(Some(&late))),
            Some((totals, None))
        );
        assert_eq!(WorkloadTotals::decode(&[]), None);
        assert_eq!(WorkloadTotals::decode(&[3; 50]), None, "another version");
        assert_eq!(
            WorkloadTotals::decode(&totals.encode(None)[..20]),
            None,
            "cut short"
        );
        assert_eq!(
            WorkloadTotals::decode(&totals.encode(Some(&anchor))[..60]),
            None,
            "anchor cut short"
        );
        // A version-1 record (four counts) from an earlier build.
        let mut v1 = vec![1u8];
        for count in [5u64, 4, 3, 2] {
            v1.extend_from_slice(&count.to_le_bytes());
        }
        let (old, anchor) = WorkloadTotals::decode(&v1).expect("version 1");
        assert_eq!((old.point_lookups, old.seeks, old.long_scans), (5, 3, 0));
        assert_eq!(anchor, None);
        let sum = totals.plus_counts(&WorkloadTotals {
            point_lookups: 1,
            point_lookups_found: 1,
            seeks: 1,
            scan_entries: u64::MAX,
            long_scans: 1,
            long_scan_entries: 16,
            writes: 42,
        });
        assert_eq!(sum.point_lookups, 1_000_001);
        assert_eq!(sum.scan_entries, u64::MAX, "saturates");
        assert_eq!((sum.long_scans, sum.long_scan_entries), (3, 56));
        assert_eq!(sum.writes, 42);
    }

    #[test]
    fn the_window_follows_a_change_of_mix() {
        let mut window = WorkloadWindow::new(10_000, WorkloadTotals::default());
        // 20,000 queries at r = 0.1 (half gets, 0.4 short seeks), observed every 500.
        let (mut gets, mut seeks, mut longs, mut writes) = (0u64, 0u64, 0u64, 0u64);
        let mut step = |gets_add, seeks_add, longs_add, window: &mut WorkloadWindow| {
            gets += gets_add;
            seeks += seeks_add;
            longs += longs_add;
            writes += 1_000;
            window.observe(&totals(gets, seeks, longs, writes))
        };
        let mut mix = WorkloadMix::default();
        for _ in 0..40 {
            mix = step(250, 250, 50, &mut window);
        }
        let r = mix.long_scan_ratio().expect("enough queries");
        assert!((r - 0.1).abs() < 1e-9, "{r}");
        assert_eq!(mix.long_scan_length(), Some(100.0));
        // At least a span, less than a span, an eighth and one observation.
        assert!(mix.counts.queries() >= 10_000 && mix.counts.queries() < 11_750);
        // The mix changes to r = 0.5: within one span and an eighth the window holds only it.
        for i in 0..23 {
            mix = step(125, 375, 250, &mut window);
            if i == 3 {
                let r = mix.long_scan_ratio().expect("enough");
                assert!(r > 0.1 && r < 0.5, "half-way: {r}");
            }
        }
        let r = mix.long_scan_ratio().expect("enough queries");
        assert!((r - 0.5).abs() < 1e-9, "{r}");
        assert!(mix.counts.queries() < 11_750, "the window stays bounded");
        assert!((mix.range_lookup_ratio().expect("enough") - 0.75).abs() < 1e-9);
        // Writes only: the window keeps the last queries' mix.
        for _ in 0..10 {
            mix = step(0, 0, 0, &mut window);
        }
        assert!((mix.long_scan_ratio().expect("kept") - 0.5).abs() < 1e-9);
        assert!(mix.write_share().expect("writes") > 0.5);
    }

    #[test]
    fn a_small_or_reset_window_says_nothing_it_cannot_know() {
        let mut window = WorkloadWindow::new(10_000, WorkloadTotals::default());
        let mix = window.observe(&totals(100, 100, 10, 10));
        assert_eq!(mix.long_scan_ratio(), None, "200 queries are too few");
        assert_eq!(mix.long_scan_length(), Some(100.0));
        assert_eq!(WorkloadMix::default().write_share(), None);
        // Totals behind the anchors (counts a crash lost): the window restarts there.
        let mut window = WorkloadWindow::new(10_000, totals(5_000, 5_000, 500, 100));
        let mix = window.observe(&totals(10, 10, 1, 50));
        assert_eq!(mix.counts, WorkloadTotals::default());
        assert_eq!(window.anchor(), totals(10, 10, 1, 50));
    }

    #[test]
    fn a_resumed_window_lets_new_queries_push_the_old_ones_out() {
        let logged = totals(1_000, 1_000, 500, 10);
        let at_open = totals(3_000, 3_000, 1_500, 20);
        let mut window = WorkloadWindow::resume(10_000, logged, &at_open);
        // The window it had: from the logged anchor to the totals at open.
        let mix = window.observe(&at_open);
        assert_eq!(mix.counts.queries(), 4_000);
        assert!((mix.long_scan_ratio().expect("enough") - 0.25).abs() < 1e-9);
        // A span of point lookups observed once: only they are in the window.
        let later = totals(13_000, 3_000, 1_500, 20);
        let mix = window.observe(&later);
        assert_eq!(mix.counts.queries(), 10_000);
        assert_eq!(mix.long_scan_ratio(), Some(0.0));
    }
}
