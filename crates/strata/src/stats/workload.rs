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

/// The version of [`WorkloadTotals::encode`]'s layout.
const ENCODING_VERSION: u8 = 1;

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
            writes: other.writes,
        }
    }

    /// The manifest record: a version byte, then the four counts as little-endian `u64`s
    /// (`writes` is the manifest's last sequence and is not repeated).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(1 + 4 * 8);
        bytes.push(ENCODING_VERSION);
        for count in [
            self.point_lookups,
            self.point_lookups_found,
            self.seeks,
            self.scan_entries,
        ] {
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        bytes
    }

    /// Decodes [`WorkloadTotals::encode`]'s bytes; `None` for any other bytes (a damaged or
    /// newer record: statistics then start afresh rather than fail the open).
    pub(crate) fn decode(bytes: &[u8]) -> Option<WorkloadTotals> {
        let (&version, counts) = bytes.split_first()?;
        if version != ENCODING_VERSION || counts.len() != 4 * 8 {
            return None;
        }
        let count = |i: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&counts[i * 8..i * 8 + 8]);
            u64::from_le_bytes(word)
        };
        Some(WorkloadTotals {
            point_lookups: count(0),
            point_lookups_found: count(1),
            seeks: count(2),
            scan_entries: count(3),
            writes: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_round_trip_and_foreign_bytes_are_refused() {
        let totals = WorkloadTotals {
            point_lookups: 1_000_000,
            point_lookups_found: 400_000,
            seeks: 7,
            scan_entries: 70,
            writes: 0,
        };
        assert_eq!(WorkloadTotals::decode(&totals.encode()), Some(totals));
        assert_eq!(WorkloadTotals::decode(&[]), None);
        assert_eq!(WorkloadTotals::decode(&[2; 33]), None, "another version");
        assert_eq!(
            WorkloadTotals::decode(&totals.encode()[..20]),
            None,
            "cut short"
        );
        let sum = totals.plus_counts(&WorkloadTotals {
            point_lookups: 1,
            point_lookups_found: 1,
            seeks: 1,
            scan_entries: u64::MAX,
            writes: 42,
        });
        assert_eq!(sum.point_lookups, 1_000_001);
        assert_eq!(sum.scan_entries, u64::MAX, "saturates");
        assert_eq!(sum.writes, 42);
    }
}
