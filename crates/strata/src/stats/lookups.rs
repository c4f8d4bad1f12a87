//! What point lookups measured in one file: how often they reached it and found nothing or their
//! key, how many data blocks they read and missed in the cache, and a timed sample of their probes
//! by outcome. Kept per file with the version (in memory only); priced here into what a false
//! positive on a cached block costs, and read by elastic filters' cache model (DESIGN.md §3.5).

/// What a point lookup's probe of one file read past the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// No data block: the filter (or the index) answered.
    Rejected,
    /// A data block the block cache held.
    CachedBlock,
    /// A data block read from the device.
    DeviceBlock,
}

impl ProbeOutcome {
    pub(crate) fn index(self) -> usize {
        match self {
            ProbeOutcome::Rejected => 0,
            ProbeOutcome::CachedBlock => 1,
            ProbeOutcome::DeviceBlock => 2,
        }
    }
}

/// Timed probes of one outcome: how many, and their nanoseconds in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProbeTime {
    /// Probes timed.
    pub probes: u64,
    /// Their nanoseconds in all.
    pub nanos: u64,
}

impl ProbeTime {
    /// Mean nanoseconds of a probe, if any was timed.
    pub fn mean_nanos(&self) -> Option<f64> {
        (self.probes > 0).then(|| self.nanos as f64 / self.probes as f64)
    }
}

/// A sample of a file's probes timed whole (filter, index, data block), by what they read: the
/// measured price of a false positive whose block the cache holds, against one it does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProbeTimes {
    /// Probes that read no data block.
    pub rejected: ProbeTime,
    /// Probes that read a data block the block cache held.
    pub cached_block: ProbeTime,
    /// Probes that read a data block from the device.
    pub device_block: ProbeTime,
}

impl ProbeTimes {
    /// The sum of two samples (files pooled).
    pub fn plus(self, other: ProbeTimes) -> ProbeTimes {
        let add = |a: ProbeTime, b: ProbeTime| ProbeTime {
            probes: a.probes.saturating_add(b.probes),
            nanos: a.nanos.saturating_add(b.nanos),
        };
        ProbeTimes {
            rejected: add(self.rejected, other.rejected),
            cached_block: add(self.cached_block, other.cached_block),
            device_block: add(self.device_block, other.device_block),
        }
    }
}

/// What point lookups did in one file since the first of them reached it in this process
/// (in memory only; shared through trivial moves): the measurements of DESIGN.md §3.5's cache
/// model, which predicts how often a false positive in the file would miss the block cache.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LookupCounts {
    /// Seconds since the first lookup reached the file (0 if none has).
    pub seconds: f64,
    /// Lookups whose key the file's range held and that found nothing in the file.
    pub empty_probes: u64,
    /// Lookups that found their key (a value or a tombstone) in the file.
    pub found_probes: u64,
    /// Data blocks the lookups read in the file (false positives and found keys).
    pub data_block_reads: u64,
    /// Of those, the blocks the block cache did not hold.
    pub data_block_misses: u64,
    /// A sample of the probes, timed.
    pub probe_times: ProbeTimes,
}

/// The smallest miss chance the model gives: with every file at 0 the allocation would have no
/// order, and a false positive on a cached block still costs a cache lookup and a block search.
/// Chosen, not derived: a level-0 file is reached by every lookup and a file of a 40-file run by
/// a fortieth, so a floor near 0.01 kept a module in use in cached level-0 files; 0.001 read
/// fewer blocks than 0.01 in both workloads of `scripts/elastic_filters_with_cache.sh`
/// (docs/BENCHMARKS.md, "Predicted cache misses").
pub const MIN_MISS_CHANCE: f64 = 0.001;

/// Timed probes of each outcome the price of a cached false positive needs before it is used.
pub const MIN_TIMED_PROBES: u64 = 16;

/// What a false positive whose data block the cache holds costs, as a share of one whose block
/// is read from the device: `(t_cached - t_rejected) / (t_device - t_rejected)` over the timed
/// probes of every file pooled (`FileState::lookup_counts`'s `probe_times`), so what each
/// adds beyond a probe the filter answers. `None` until [`MIN_TIMED_PROBES`] of each outcome
/// were timed, or when device reads measured no slower than cached ones.
///
/// Why it is measured: with reads served by the operating system's page cache a "device" read
/// is a system call and a copy, and a cached block's search costs a sizeable share of it; with
/// direct reads from a disk it is a small share. A constant floor would be right for one of
/// them only: `strata bench --paced-fill` (page cache, no direct reads) measured elastic
/// filters with the floor alone at 0.97x uniform filters' device reads and 0.85x their
/// lookups per second on the same tree (docs/BENCHMARKS.md, "Elastic filters' lookups on the
/// same tree").
pub fn cached_false_positive_cost(times: &ProbeTimes) -> Option<f64> {
    if times.cached_block.probes < MIN_TIMED_PROBES {
        return None;
    }
    ProbePrices::of(times)?.cached_share(times.cached_block.mean_nanos()?)
}

/// The pooled times a cached false positive is priced against: a probe the filter answers,
/// and what a device read adds to it (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ProbePrices {
    rejected: f64,
    device_extra: f64,
}

impl ProbePrices {
    /// `None` until [`MIN_TIMED_PROBES`] rejected and device probes were timed, or when device
    /// reads measured no slower than rejected probes.
    pub(crate) fn of(times: &ProbeTimes) -> Option<ProbePrices> {
        if times.rejected.probes < MIN_TIMED_PROBES || times.device_block.probes < MIN_TIMED_PROBES
        {
            return None;
        }
        let rejected = times.rejected.mean_nanos()?;
        let device_extra = times.device_block.mean_nanos()? - rejected;
        (device_extra > 0.0 && device_extra.is_finite()).then_some(ProbePrices {
            rejected,
            device_extra,
        })
    }

    /// What a cached probe of `cached_nanos` adds to a rejected one, as a share of a device
    /// read's addition, within `[MIN_MISS_CHANCE, 1]`.
    pub(crate) fn cached_share(&self, cached_nanos: f64) -> Option<f64> {
        let share = (cached_nanos - self.rejected).max(0.0) / self.device_extra;
        share.is_finite().then(|| share.clamp(MIN_MISS_CHANCE, 1.0))
    }
}
