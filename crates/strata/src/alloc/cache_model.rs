//! The block cache as filter allocation sees it (DESIGN.md §3.5 "Cache-miss weight"): the chance
//! that a false positive in a file costs a device read, predicted from what lookups measured.
//!
//! # Why a model, not the measured miss share
//!
//! A false positive on a cached data block costs no I/O, so a file whose blocks stay cached
//! gains little from filter bits. The share of a file's data-block reads that missed the cache
//! is what the allocator first weighed files by, and it is measured under the allocation the
//! allocator itself made: a file given many bits sees few false positives, its few reads find
//! its blocks cold, and its share stays near 1 however well the cache would hold its blocks
//! under fewer bits. Measured with `scripts/elastic_filters_with_cache.sh` (`strata study regret
//! --block-cache-bytes 8MiB`, docs/BENCHMARKS.md): elastic filters weighed that way read 0.97-1.03x of uniform filters'
//! data blocks on the same tree, while the optimum weighted by the shares measured *under
//! uniform filters* read 0.83-0.90x (type I) and 0.45-0.68x (type II).
//!
//! So the model predicts each file's miss chance at the false-positive rate uniform filters at
//! the budget would give it, from the rates the engine measures, whatever the allocation is.
//!
//! # Measured shares bound it
//!
//! Che's exponent carries a file's measured share to uniform filters' rate, and a share
//! measured as nearly nothing carries badly: a file read in every lookup with no filter in use
//! whose window's 100,000 reads all hit has a smoothed share of `0.5 / 100,001`, which at
//! uniform filters' rate of 2 bits per key (0.38 of it) comes out near 0.01, ten times what
//! those files missed under uniform filters. The block cache is S3-FIFO (`cache/mod.rs`), not
//! the LRU Che's approximation describes: a block read again while in its small queue, or soon
//! after leaving it, moves to the main queue and stays while it is read at all often, so a
//! hot file's blocks stay held over a wide range of rates. So the prediction is taken as at
//! most what the file's window measured when any of its reads hit; a file whose filter passes
//! more than uniform filters' (fewer bits) and whose blocks stay held is then priced as held:
//! the allocation keeps it cheap, and its false positives keep finding their blocks cached.
//! A file whose window saw no hit (no cache, or none of its blocks held) is priced by the
//! prediction alone, as before.
//!
//! # How
//!
//! Che's approximation of an LRU cache: a block requested at rate `λ` is held with probability
//! `1 - exp(-λ T)`, where `T`, the cache's characteristic time, is one for the whole cache.
//! A file's data blocks are taken as requested alike, so per byte of its data
//! `λ_i(p) = (a_i p + f_i) / d_i`: `a_i` its empty probes per second, `p` the share of them its
//! filter passes, `f_i` its found probes per second, `d_i` its data bytes (all measured over
//! the file's newest lookups, `FileState::recent_lookup_counts`: at least the newest half of
//! them, so that the misses of a cold cache's first reads age out).
//!
//! # Why a window
//!
//! Every block's first reads after an open miss, however hot the block (the block cache is
//! S3-FIFO, `cache/mod.rs`: a block enters a small queue, and one read again after it left
//! that queue enters the main one, so a hot block misses about twice). Counted since the first
//! lookup, those misses were the whole miss share of the level-0 files every lookup probes,
//! and Che's exponent carried them to uniform filters' lower rate: 0.011-0.019 predicted
//! against 0.0013-0.0017 measured under uniform filters and nearly nothing once warm, in
//! `strata study regret --block-cache-bytes 8MiB --dump-weights` (docs/BENCHMARKS.md, "A
//! window over the lookup counts"), and elastic filters kept a 2-bit module in use in level-0
//! files whose blocks stayed cached.
//!
//! * `T` is calibrated so that the model reproduces the misses measured over every file:
//!   `sum_i M_i = sum_i R_i exp(-T r_i / d_i)`, with `R_i` the file's data-block reads, `M_i`
//!   the misses among them and `r_i` its measured read rate. Without any read, `T = 0`: every
//!   read is taken to miss, as with no cache.
//! * A file's own reads refine it where they say something: `T_i = -ln(m_i) / (r_i / d_i)` from
//!   its smoothed miss share `m_i`, weighted by its cache hits against [`PRIOR_HITS`] hits at
//!   the global `T` (a file whose reads all missed says little about `T`: few requests per
//!   block miss at any `T`). This keeps what skewed lookups do to a file (hot blocks cached)
//!   that the model's "blocks alike" cannot.
//! * The miss chance is `c_i = exp(-T_i λ_i(p_ref))`, at most the file's own smoothed miss
//!   share over its window when any read there hit the cache, at least [`MIN_MISS_CHANCE`],
//!   with `p_ref` the false-positive rate of uniform filters at the budget.
//! * A file no lookup has reached [`MIN_PROBES`] times gets `c = 1` (nothing known).
//! * What the allocator weighs is the false positive's expected *cost* in device reads,
//!   `c_i + (1 - c_i) k`: `k` is the measured time a false positive on a cached block adds to
//!   a probe, as a share of what one read from the device adds ([`cached_false_positive_cost`],
//!   from the probes the lookup path times, one lookup in 16; a file's own cached probes once
//!   16 were timed, every file's pooled before). With reads served by the
//!   operating system's page cache `k` is large and the allocation minimises false positives
//!   wherever they fall; with direct reads from a disk it is small and the allocation minimises
//!   device reads. Until enough probes are timed, `k` is the floor. Elastic filters use the
//!   measured `k` only when asked (`CachedFalsePositives::ProbeTimes`); by default they price
//!   a cached false positive at the floor ([`CacheModel::device_reads_only`]).
//!
//! The model ignores that the cache is shared: a file whose blocks it predicts cached takes
//! room from the others. `T` is calibrated again at every allocation, so that room is counted
//! one allocation later.

use std::time::Instant;

pub(crate) use crate::stats::lookups::ProbePrices;
pub use crate::stats::lookups::{cached_false_positive_cost, MIN_MISS_CHANCE, MIN_TIMED_PROBES};
use crate::version::{FileMetadata, LookupCounts, ProbeTimes};

/// Cache hits that weigh as much as the global characteristic time in a file's own.
pub const PRIOR_HITS: f64 = 16.0;

/// Lookups that must have reached a file before its rates are used.
pub const MIN_PROBES: u64 = 32;

/// A file's measured rates, per byte of its data.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rates {
    /// Empty probes per second per data byte.
    empty: f64,
    /// Found probes per second per data byte.
    found: f64,
    /// Data-block reads per second per data byte, and the counts they come from.
    reads: f64,
    read_count: f64,
    miss_count: f64,
}

impl Rates {
    fn of(counts: &LookupCounts, data_bytes: f64) -> Option<Rates> {
        let probes = counts.empty_probes + counts.found_probes;
        if probes < MIN_PROBES || counts.seconds <= 0.0 || data_bytes <= 0.0 {
            return None;
        }
        let per = counts.seconds * data_bytes;
        Some(Rates {
            empty: counts.empty_probes as f64 / per,
            found: counts.found_probes as f64 / per,
            reads: counts.data_block_reads as f64 / per,
            read_count: counts.data_block_reads as f64,
            miss_count: counts.data_block_misses.min(counts.data_block_reads) as f64,
        })
    }
}

/// The empty probes per second `counts` show, if lookups reached the file [`MIN_PROBES`]
/// times: the share of lookups that reach a file and find nothing there, as measured (elastic
/// filters' `z_i` without access statistics).
pub fn empty_probe_rate(counts: &LookupCounts) -> Option<f64> {
    let probes = counts.empty_probes + counts.found_probes;
    (probes >= MIN_PROBES && counts.seconds > 0.0)
        .then(|| counts.empty_probes as f64 / counts.seconds)
}

/// The data bytes of `file`: its bytes less its filter's.
fn data_bytes(file: &FileMetadata) -> f64 {
    file.file_bytes().saturating_sub(file.filter_bytes()).max(1) as f64
}

/// What a false positive in one file costs in device reads as a function of the share `p` of
/// empty probes its filter passes ([`CacheModel::cost_curve`]): `m(p) + (1 - m(p)) k`, with
/// `m(p) = exp(-T_i (a_i p + f_i))` the chance its block misses the cache and `k` what a
/// cached one costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FalsePositiveCost {
    time: f64,
    empty: f64,
    found: f64,
    cached: f64,
    /// The smoothed miss share of the reads in the file's window when any of them hit the
    /// cache, else 1: what the cache measurably did, which the prediction does not exceed.
    measured: f64,
    /// False for a file too few lookups reached: every false positive a device read.
    known: bool,
}

impl FalsePositiveCost {
    /// A whole device read at every pass rate (nothing measured).
    pub const DEVICE_READ: FalsePositiveCost = FalsePositiveCost {
        time: 0.0,
        empty: 0.0,
        found: 0.0,
        cached: 1.0,
        measured: 1.0,
        known: false,
    };

    /// The cost of one false positive when the filter passes `pass_rate`, in
    /// `[MIN_MISS_CHANCE, 1]`.
    pub fn at(&self, pass_rate: f64) -> f64 {
        let miss = self.miss_chance(pass_rate);
        (miss + (1.0 - miss) * self.cached).clamp(MIN_MISS_CHANCE, 1.0)
    }

    /// The chance that a false positive's data block misses the cache at `pass_rate`, in
    /// `[MIN_MISS_CHANCE, 1]` (1 when nothing was measured): Che's prediction, at most the miss
    /// share the file's window measured (module documentation, "Measured shares bound it").
    pub fn miss_chance(&self, pass_rate: f64) -> f64 {
        if !self.known {
            return 1.0;
        }
        let rate = self.empty * pass_rate.clamp(0.0, 1.0) + self.found;
        let exponent = self.time * rate;
        let predicted = if exponent.is_nan() || rate <= 0.0 {
            1.0
        } else {
            (-exponent).exp()
        };
        predicted.min(self.measured).clamp(MIN_MISS_CHANCE, 1.0)
    }
}

/// Che's characteristic time of the block cache, calibrated on the tree's files (module
/// documentation), the measured price of a cached false positive, and the clock their rates
/// were read at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheModel {
    /// In seconds times bytes (the rates are per byte); 0 when nothing was read, infinite when
    /// no read missed.
    characteristic_time: f64,
    /// [`cached_false_positive_cost`] over the tree's files; [`MIN_MISS_CHANCE`] until known.
    cached_cost: f64,
    /// The pooled prices a file's own cached probes are measured against.
    prices: Option<ProbePrices>,
    now: Instant,
}

impl CacheModel {
    /// The model for `files` as measured at `now`.
    pub fn calibrate<'a>(files: impl IntoIterator<Item = &'a FileMetadata>, now: Instant) -> Self {
        let mut times = ProbeTimes::default();
        let rates: Vec<Rates> = files
            .into_iter()
            .filter_map(|file| {
                let counts = file.state().recent_lookup_counts(now);
                times = times.plus(counts.probe_times);
                Rates::of(&counts, data_bytes(file))
            })
            .filter(|rates| rates.read_count > 0.0)
            .collect();
        CacheModel {
            characteristic_time: characteristic_time(&rates),
            cached_cost: cached_false_positive_cost(&times).unwrap_or(MIN_MISS_CHANCE),
            prices: ProbePrices::of(&times),
            now,
        }
    }

    /// A model with characteristic time `time` and cached false positives at the floor
    /// (tests).
    #[cfg(test)]
    pub(crate) fn with_time(characteristic_time: f64, now: Instant) -> Self {
        CacheModel {
            characteristic_time,
            cached_cost: MIN_MISS_CHANCE,
            prices: None,
            now,
        }
    }

    /// The same model with every cached false positive priced at the floor
    /// ([`MIN_MISS_CHANCE`]), the probe times ignored: what a false positive costs is then the
    /// chance that it reads a block from the device, the quantity the block cache saves
    /// (`CachedFalsePositives::DeviceReads`, DESIGN.md §3.5).
    pub fn device_reads_only(self) -> Self {
        CacheModel {
            cached_cost: MIN_MISS_CHANCE,
            prices: None,
            ..self
        }
    }

    /// What a cached false positive costs as a share of a device read (at least
    /// [`MIN_MISS_CHANCE`]).
    pub fn cached_cost(&self) -> f64 {
        self.cached_cost
    }

    /// The expected cost of a false positive in `file`, in device reads, when its filter passes
    /// `pass_rate` of the lookups that find nothing in it: `c + (1 - c) * k` with `c` the
    /// [`miss_chance`](Self::miss_chance) and `k` what a cached false positive costs in this
    /// file: its own timed cached probes against the pooled prices once [`MIN_TIMED_PROBES`]
    /// of them were timed (a block of a file lookups touch often is searched in a warm CPU
    /// cache, one of a large cold file is not), else the pooled
    /// [`cached_cost`](Self::cached_cost).
    pub fn false_positive_cost(&self, file: &FileMetadata, pass_rate: f64) -> f64 {
        self.cost_curve(file).at(pass_rate)
    }

    /// [`false_positive_cost`](Self::false_positive_cost) of `file` at any pass rate (a file
    /// whose filter passes fewer false positives has its blocks requested less often and cached
    /// less). Elastic filters read it at uniform filters' pass rate for every file; pricing each
    /// module at the pass rate it leaves was tried and not kept (DESIGN.md §3.5).
    pub fn cost_curve(&self, file: &FileMetadata) -> FalsePositiveCost {
        let counts = file.state().recent_lookup_counts(self.now);
        let Some(rates) = Rates::of(&counts, data_bytes(file)) else {
            return FalsePositiveCost::DEVICE_READ;
        };
        let cached = counts.probe_times.cached_block;
        let own = self
            .prices
            .filter(|_| cached.probes >= MIN_TIMED_PROBES)
            .zip(cached.mean_nanos())
            .and_then(|(prices, nanos)| prices.cached_share(nanos));
        FalsePositiveCost {
            time: self.file_time(&rates),
            empty: rates.empty,
            found: rates.found,
            cached: own.unwrap_or(self.cached_cost),
            measured: if rates.miss_count < rates.read_count {
                (rates.miss_count + 0.5) / (rates.read_count + 1.0)
            } else {
                1.0
            },
            known: true,
        }
    }

    /// The calibrated characteristic time (seconds times bytes).
    pub fn characteristic_time(&self) -> f64 {
        self.characteristic_time
    }

    /// The chance that a false positive in `file` costs a device read when its filter passes
    /// `pass_rate` of the lookups that find nothing in it (module documentation).
    pub fn miss_chance(&self, file: &FileMetadata, pass_rate: f64) -> f64 {
        self.cost_curve(file).miss_chance(pass_rate)
    }

    /// The characteristic time as `rates`' own reads refine it.
    fn file_time(&self, rates: &Rates) -> f64 {
        let global = self.characteristic_time;
        if rates.read_count <= 0.0 || rates.reads <= 0.0 {
            return global;
        }
        let hits = rates.read_count - rates.miss_count;
        let share = (rates.miss_count + 0.5) / (rates.read_count + 1.0);
        let own = -share.ln() / rates.reads;
        if global.is_infinite() {
            return global;
        }
        (hits * own + PRIOR_HITS * global) / (hits + PRIOR_HITS)
    }
}

/// The `T` with `sum M_i = sum R_i exp(-T r_i)`: 0 without misses to explain, infinite when
/// no read missed.
fn characteristic_time(rates: &[Rates]) -> f64 {
    let reads: f64 = rates.iter().map(|r| r.read_count).sum();
    let misses: f64 = rates.iter().map(|r| r.miss_count).sum();
    if reads <= 0.0 || misses >= reads {
        return 0.0;
    }
    if misses <= 0.0 {
        return f64::INFINITY;
    }
    let fastest = rates.iter().map(|r| r.reads).fold(0.0, f64::max);
    solve_falling(
        |time| {
            rates
                .iter()
                .map(|r| r.read_count * (-time * r.reads).exp())
                .sum()
        },
        misses,
        1.0 / fastest.max(f64::MIN_POSITIVE),
    )
}

/// Blocks alike in size and request rate, as Che's approximation of a cache of a given
/// capacity sees them ([`characteristic_time_for_capacity`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockGroup {
    /// Blocks in the group.
    pub blocks: f64,
    /// Bytes each block takes in the cache.
    pub block_bytes: f64,
    /// Requests per block per unit of time (any unit: the characteristic time comes out in it).
    pub rate: f64,
}

impl BlockGroup {
    /// The chance that a request for one of the group's blocks misses a cache of characteristic
    /// time `time` (Che: `exp(-rate * time)`; 1 at `time = 0`, 0 at infinity for a requested
    /// block).
    pub fn miss_chance(&self, time: f64) -> f64 {
        if self.rate <= 0.0 || time <= 0.0 {
            return 1.0;
        }
        if time.is_infinite() {
            return 0.0;
        }
        (-self.rate * time).exp()
    }
}

/// Che's characteristic time of an LRU cache of `capacity_bytes` under the independent
/// requests of `groups`: the `T` at which the blocks it is expected to hold fill it,
/// `sum_g blocks_g * block_bytes_g * (1 - exp(-rate_g T)) = capacity` (Che, Tung and Wang,
/// "Hierarchical Web caching systems: modeling, design and experimental results", the
/// approximation the calibrated [`CacheModel`] also rests on). 0 for no cache; infinite when every requested
/// block fits.
pub fn characteristic_time_for_capacity(groups: &[BlockGroup], capacity_bytes: f64) -> f64 {
    if capacity_bytes.is_nan() || capacity_bytes <= 0.0 {
        return 0.0;
    }
    let requested: Vec<&BlockGroup> = groups
        .iter()
        .filter(|g| g.rate > 0.0 && g.blocks > 0.0 && g.block_bytes > 0.0)
        .collect();
    let footprint: f64 = requested.iter().map(|g| g.blocks * g.block_bytes).sum();
    if footprint <= capacity_bytes {
        return f64::INFINITY;
    }
    // Bytes *not* held, falling from `footprint` at 0 toward 0.
    let left_out = |time: f64| -> f64 {
        requested
            .iter()
            .map(|g| g.blocks * g.block_bytes * (-g.rate * time).exp())
            .sum()
    };
    let fastest = requested.iter().map(|g| g.rate).fold(0.0, f64::max);
    solve_falling(
        left_out,
        footprint - capacity_bytes,
        1.0 / fastest.max(f64::MIN_POSITIVE),
    )
}

/// The `time > 0` at which `falling` (decreasing from its value at 0 toward 0) equals
/// `target`: bracket the root from `start`, then bisect on a log scale (the rates span orders
/// of magnitude).
fn solve_falling(falling: impl Fn(f64) -> f64, target: f64, start: f64) -> f64 {
    let mut high = start;
    let mut low = high;
    let mut steps = 0;
    while falling(high) > target && steps < 200 {
        low = high;
        high *= 4.0;
        steps += 1;
    }
    steps = 0;
    while falling(low) < target && steps < 200 {
        high = low;
        low /= 4.0;
        steps += 1;
    }
    // The bracket spans a factor of 4 or less: 40 halvings of its logarithm leave a relative
    // error under 1e-12.
    for _ in 0..40 {
        let middle = (low * high).sqrt();
        if falling(middle) > target {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low * high).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::{FileMetadata, ProbeTime, Version, RECENT_MIN_PROBES};

    fn file(number: u64, smallest: &str, largest: &str, bytes: u64) -> FileMetadata {
        FileMetadata::new(number, smallest.as_bytes(), largest.as_bytes())
            .with_entries(bytes / 100)
            .with_file_bytes(bytes)
    }

    fn rates(reads_per_sec: f64, seconds: f64, misses: f64) -> Rates {
        Rates {
            empty: 0.0,
            found: reads_per_sec,
            reads: reads_per_sec,
            read_count: reads_per_sec * seconds,
            miss_count: misses,
        }
    }

    #[test]
    fn calibration_recovers_the_characteristic_time_of_che_data() {
        // Three files with per-byte read rates 1e-3, 1e-2 and 1e-1 over 1,000 s, and misses
        // exactly as Che's approximation gives at T = 50.
        let time = 50.0_f64;
        let files: Vec<Rates> = [1e-3, 1e-2, 1e-1]
            .iter()
            .map(|&rate| {
                let reads = rate * 1_000.0;
                rates(rate, 1_000.0, reads * (-time * rate).exp())
            })
            .collect();
        let found = characteristic_time(&files);
        assert!((found - time).abs() < 1e-6 * time, "{found}");
    }

    #[test]
    fn the_capacity_time_fills_the_cache_with_the_blocks_it_holds() {
        // 1,000 hot blocks and 10,000 cold ones of 4 KiB, a 2,000-block cache.
        let groups = [
            BlockGroup {
                blocks: 1_000.0,
                block_bytes: 4096.0,
                rate: 1e-2,
            },
            BlockGroup {
                blocks: 10_000.0,
                block_bytes: 4096.0,
                rate: 1e-4,
            },
        ];
        let capacity = 2_000.0 * 4096.0;
        let time = characteristic_time_for_capacity(&groups, capacity);
        let held: f64 = groups
            .iter()
            .map(|g| g.blocks * g.block_bytes * (1.0 - g.miss_chance(time)))
            .sum();
        assert!((held - capacity).abs() < 1e-6 * capacity, "{held}");
        // The hot blocks are held far more often than the cold ones.
        assert!(groups[0].miss_chance(time) < 0.5 * groups[1].miss_chance(time));
        // No cache: every request misses; room for every block: none does.
        assert_eq!(characteristic_time_for_capacity(&groups, 0.0), 0.0);
        assert_eq!(groups[0].miss_chance(0.0), 1.0);
        let all = characteristic_time_for_capacity(&groups, 11_000.0 * 4096.0);
        assert_eq!(all, f64::INFINITY);
        assert_eq!(groups[1].miss_chance(all), 0.0);
        // A block nobody requests takes no room.
        let idle = BlockGroup {
            rate: 0.0,
            ..groups[1]
        };
        assert_eq!(
            characteristic_time_for_capacity(&[groups[0], idle], 1_000.0 * 4096.0),
            f64::INFINITY
        );
    }

    #[test]
    fn without_reads_or_with_every_read_missing_the_time_is_zero_and_without_misses_infinite() {
        assert_eq!(characteristic_time(&[]), 0.0);
        assert_eq!(characteristic_time(&[rates(1.0, 10.0, 10.0)]), 0.0);
        assert_eq!(characteristic_time(&[rates(1.0, 10.0, 0.0)]), f64::INFINITY);
    }

    /// A tree of a 100 KB file (number 1) and a 100 MB one (2), each probed 10,000 times in the
    /// last second, every probe empty and reading a block: 50 of the small file's reads missed
    /// the cache, 9,000 of the large one's; each file's probes timed as `probe_times`.
    fn hot_and_cold(now: Instant, probe_times: ProbeTimes) -> Version {
        let small = file(1, "a", "z", 100_000);
        let large = file(2, "a", "z", 100_000_000);
        for (f, misses) in [(&small, 50), (&large, 9_000)] {
            f.state().add_lookup_counts(
                LookupCounts {
                    seconds: 1.0,
                    empty_probes: 10_000,
                    found_probes: 0,
                    data_block_reads: 10_000,
                    data_block_misses: misses,
                    probe_times,
                },
                now,
            );
        }
        Version::builder()
            .add_file(0, 1, small)
            .add_file(1, 2, large)
            .build()
            .expect("builds")
    }

    #[test]
    fn a_small_hot_file_is_predicted_cached_and_a_large_cold_one_not() {
        let now = Instant::now();
        let tree = hot_and_cold(now, ProbeTimes::default());
        let model = CacheModel::calibrate(tree.files().map(|(_, _, f)| f.as_ref()), now);
        assert!(model.characteristic_time() > 0.0);
        let chance = |number: u64, pass: f64| {
            let (_, _, f) = tree
                .files()
                .find(|(_, _, f)| f.number() == number)
                .expect("file");
            model.miss_chance(f, pass)
        };
        // At the measured pass rate (every probe read a block) the small file's own share
        // (0.5%) is about what the model gives back (the global time, which the large file's
        // hits raise, moves it a little); at 0.4 of the rate, more of its blocks go cold.
        let share = 50.5 / 10_001.0;
        assert!(
            (0.5 * share..=1.05 * share).contains(&chance(1, 1.0)),
            "{} against {share}",
            chance(1, 1.0)
        );
        assert!(chance(1, 0.4) < 0.15, "{}", chance(1, 0.4));
        assert!(chance(2, 0.4) > 0.8, "{}", chance(2, 0.4));
        // Fewer false positives leave blocks colder: the chance rises as the pass rate falls,
        // up to the share the file's reads measured (50 of 10,000 missed).
        assert!(chance(1, 0.01) >= chance(1, 0.4));
        assert!(chance(1, 0.01) <= 50.5 / 10_001.0 + 1e-12);
        assert!(chance(2, 0.01) >= chance(2, 0.4));
        assert!(chance(1, 0.0) <= 1.0 && chance(1, 1.0) >= MIN_MISS_CHANCE);
    }

    #[test]
    fn a_file_no_lookup_reached_often_enough_counts_every_read_as_a_miss() {
        let now = Instant::now();
        let f = file(1, "a", "z", 100_000);
        f.state().add_lookup_counts(
            LookupCounts {
                seconds: 1.0,
                empty_probes: MIN_PROBES - 1,
                found_probes: 0,
                data_block_reads: MIN_PROBES - 1,
                data_block_misses: 0,
                ..LookupCounts::default()
            },
            now,
        );
        let model = CacheModel::with_time(1e9, now);
        assert_eq!(model.miss_chance(&f, 0.5), 1.0);
        // With no cache at all (T = 0), every read misses whatever the rates.
        let g = file(2, "a", "z", 100_000);
        g.state().add_lookup_counts(
            LookupCounts {
                seconds: 1.0,
                empty_probes: 1_000,
                found_probes: 0,
                data_block_reads: 1_000,
                data_block_misses: 1_000,
                ..LookupCounts::default()
            },
            now,
        );
        assert_eq!(CacheModel::with_time(0.0, now).miss_chance(&g, 0.5), 1.0);
    }

    #[test]
    fn a_files_own_hits_outweigh_the_global_time() {
        // Two files alike in size and rates; all of one's reads hit, all of the other's
        // missed. The global time explains half the misses; each file's own reads move its
        // prediction to its side.
        let now = Instant::now();
        let hot = file(1, "a", "m", 1_000_000);
        let cold = file(2, "n", "z", 1_000_000);
        for (f, misses) in [(&hot, 0), (&cold, 1_000)] {
            f.state().add_lookup_counts(
                LookupCounts {
                    seconds: 1.0,
                    empty_probes: 1_000,
                    found_probes: 0,
                    data_block_reads: 1_000,
                    data_block_misses: misses,
                    ..LookupCounts::default()
                },
                now,
            );
        }
        let files = [&hot, &cold];
        let model = CacheModel::calibrate(files, now);
        let hot_chance = model.miss_chance(&hot, 1.0);
        let cold_chance = model.miss_chance(&cold, 1.0);
        assert!(hot_chance < 0.01, "{hot_chance}");
        assert!(cold_chance > 0.4, "{cold_chance}");
    }

    fn time(probes: u64, mean_nanos: u64) -> ProbeTime {
        ProbeTime {
            probes,
            nanos: probes * mean_nanos,
        }
    }

    #[test]
    fn a_cached_false_positive_is_priced_by_what_it_adds_to_a_rejected_probe() {
        let times = |rejected: ProbeTime, cached: ProbeTime, device: ProbeTime| ProbeTimes {
            rejected,
            cached_block: cached,
            device_block: device,
        };
        // 100 ns for a probe the filter answers, 600 with a cached block, 1,100 with a device
        // read: the cached false positive adds 500 ns, the device read 1,000.
        let measured = times(time(20, 100), time(20, 600), time(20, 1_100));
        let cost = cached_false_positive_cost(&measured).expect("priced");
        assert!((cost - 0.5).abs() < 1e-12, "{cost}");
        // Too few probes of any outcome: unknown.
        for few in [
            times(time(15, 100), time(20, 600), time(20, 1_100)),
            times(time(20, 100), time(15, 600), time(20, 1_100)),
            times(time(20, 100), time(20, 600), time(15, 1_100)),
        ] {
            assert_eq!(cached_false_positive_cost(&few), None);
        }
        // Device reads no slower than a rejected probe say nothing; a cached block no slower
        // than a rejected probe is priced at the floor, one slower than a device read at 1.
        assert_eq!(
            cached_false_positive_cost(&times(time(20, 100), time(20, 600), time(20, 100))),
            None
        );
        assert_eq!(
            cached_false_positive_cost(&times(time(20, 100), time(20, 50), time(20, 1_100))),
            Some(MIN_MISS_CHANCE)
        );
        assert_eq!(
            cached_false_positive_cost(&times(time(20, 100), time(20, 2_000), time(20, 1_100))),
            Some(1.0)
        );
        // Files pool: two halves of the sample give the price of the whole.
        let half = times(time(10, 100), time(10, 600), time(10, 1_100));
        assert_eq!(cached_false_positive_cost(&half.plus(half)), Some(cost));
    }

    #[test]
    fn a_false_positive_costs_its_miss_chance_plus_the_cached_price_of_the_rest() {
        let now = Instant::now();
        // The small hot file and the large cold one of the test above, and probe times that
        // price a cached false positive at a fifth of a device read.
        let tree = hot_and_cold(
            now,
            ProbeTimes {
                rejected: time(10, 200),
                cached_block: time(10, 400),
                device_block: time(10, 1_200),
            },
        );
        let model = CacheModel::calibrate(tree.files().map(|(_, _, f)| f.as_ref()), now);
        assert!(
            (model.cached_cost() - 0.2).abs() < 1e-12,
            "{}",
            model.cached_cost()
        );
        for (_, _, f) in tree.files() {
            for pass in [0.01, 0.4, 1.0] {
                let miss = model.miss_chance(f, pass);
                let cost = model.false_positive_cost(f, pass);
                assert!(
                    (cost - (miss + (1.0 - miss) * 0.2)).abs() < 1e-12,
                    "file {} at {pass}: {cost} against {miss}",
                    f.number()
                );
            }
        }
        // Priced by device reads only, the same model ignores the times: a false positive costs
        // its miss chance (at least the floor), in every file.
        let reads_only = model.device_reads_only();
        assert_eq!(reads_only.cached_cost(), MIN_MISS_CHANCE);
        assert_eq!(
            reads_only.characteristic_time(),
            model.characteristic_time()
        );
        for (_, _, f) in tree.files() {
            for pass in [0.01, 0.4, 1.0] {
                let miss = model.miss_chance(f, pass);
                let cost = reads_only.false_positive_cost(f, pass);
                assert!(
                    (cost - (miss + (1.0 - miss) * MIN_MISS_CHANCE)).abs() < 1e-12,
                    "file {} at {pass}: {cost} against {miss}",
                    f.number()
                );
                assert!(cost < model.false_positive_cost(f, pass) || miss >= 1.0);
            }
        }
        // Without timed probes the price of a cached false positive is the floor, and a false
        // positive in a file no lookup has reached costs a whole device read.
        let untimed = CacheModel::with_time(1e9, now);
        assert_eq!(untimed.cached_cost(), MIN_MISS_CHANCE);
        assert_eq!(
            model.false_positive_cost(&file(3, "a", "z", 100_000), 0.5),
            1.0
        );
    }

    fn counts(probes: u64, reads: u64, misses: u64, seconds: f64) -> LookupCounts {
        LookupCounts {
            seconds,
            empty_probes: probes,
            found_probes: 0,
            data_block_reads: reads,
            data_block_misses: misses,
            ..LookupCounts::default()
        }
    }

    #[test]
    fn the_window_lets_a_cold_starts_misses_go() {
        let start = Instant::now();
        let f = file(1, "a", "z", 100_000);
        // 1,000 probes over the first 10 s, every read a miss (a cold cache).
        f.state()
            .add_lookup_counts(counts(1_000, 1_000, 1_000, 10.0), start);
        let first = f.state().recent_lookup_counts(start);
        assert_eq!(
            (
                first.empty_probes,
                first.data_block_reads,
                first.data_block_misses
            ),
            (1_000, 1_000, 1_000)
        );
        assert!((first.seconds - 10.0).abs() < 1e-6, "{}", first.seconds);
        // As many probes again over the next 10 s, every read a hit: the window moves on past
        // the cold start.
        f.state()
            .add_lookup_counts(counts(1_000, 1_000, 0, 0.0), start);
        let later = start + std::time::Duration::from_secs(10);
        let warm = f.state().recent_lookup_counts(later);
        assert_eq!(
            (
                warm.empty_probes,
                warm.data_block_reads,
                warm.data_block_misses
            ),
            (1_000, 1_000, 0)
        );
        assert!((warm.seconds - 10.0).abs() < 1e-6, "{}", warm.seconds);
        // The lifetime counts keep everything.
        let total = f.state().lookup_counts(later);
        assert_eq!(
            (total.empty_probes, total.data_block_misses),
            (2_000, 1_000)
        );
        // Fewer probes than the window holds: it grows, no mark moves; read twice at the same
        // instant, the same window.
        f.state().add_lookup_counts(counts(500, 500, 5, 0.0), start);
        let grown_at = later + std::time::Duration::from_secs(5);
        let grown = f.state().recent_lookup_counts(grown_at);
        assert_eq!(
            (
                grown.empty_probes,
                grown.data_block_reads,
                grown.data_block_misses
            ),
            (1_500, 1_500, 5)
        );
        assert!((grown.seconds - 15.0).abs() < 1e-6, "{}", grown.seconds);
        assert_eq!(f.state().recent_lookup_counts(grown_at), grown);
        // Under RECENT_MIN_PROBES since the last mark, a file's window starts at its first probe.
        let g = file(2, "a", "z", 100_000);
        g.state()
            .add_lookup_counts(counts(RECENT_MIN_PROBES - 1, 10, 10, 1.0), start);
        assert_eq!(
            g.state().recent_lookup_counts(start).empty_probes,
            RECENT_MIN_PROBES - 1
        );
        // A file no lookup reached: nothing counted.
        assert_eq!(
            file(3, "a", "z", 100_000)
                .state()
                .recent_lookup_counts(start)
                .empty_probes,
            0
        );
    }

    #[test]
    fn a_hot_file_is_predicted_cached_once_its_cold_start_misses_age_out() {
        // A small file every lookup reaches and a large one, as level-0 and deeper files in a
        // cold cache: the small file's first 1,000 reads missed 50 times (its blocks' first
        // reads), the large one's 9 in 10 throughout.
        let start = Instant::now();
        let small = file(1, "a", "z", 100_000);
        let large = file(2, "a", "z", 100_000_000);
        small
            .state()
            .add_lookup_counts(counts(1_000, 1_000, 50, 1.0), start);
        large
            .state()
            .add_lookup_counts(counts(1_000, 1_000, 900, 1.0), start);
        let pass = crate::FilterFamily::Bloom.false_positive_rate(2.0);
        let cold_model = CacheModel::calibrate([&small, &large], start);
        let cold = cold_model.miss_chance(&small, pass);
        // Over the cold start, the small file's measured share (50 in 1,000) bounds Che's
        // prediction at uniform filters' lower rate.
        assert!((cold - 50.5 / 1_001.0).abs() < 1e-9, "{cold}");
        // Then 10 s of warm cache: the small file's reads all hit.
        small
            .state()
            .add_lookup_counts(counts(10_000, 10_000, 0, 0.0), start);
        large
            .state()
            .add_lookup_counts(counts(10_000, 10_000, 9_000, 0.0), start);
        let later = start + std::time::Duration::from_secs(10);
        let model = CacheModel::calibrate([&small, &large], later);
        let warm = model.miss_chance(&small, pass);
        // Counted since the first lookup, 50 misses in 11,000 reads; over the window, none in
        // 10,000: the floor.
        assert_eq!(warm, MIN_MISS_CHANCE, "cold {cold}");
        assert!(model.miss_chance(&large, pass) > 0.8);
    }

    #[test]
    fn a_file_whose_reads_stay_cached_is_priced_as_held_at_uniform_filters_rate() {
        // A file every lookup reaches with no filter in use (every empty probe reads a block),
        // 100,000 reads in its window and none missed; a larger one whose reads all missed.
        let now = Instant::now();
        let held = file(1, "a", "z", 1_000_000);
        let cold = file(2, "a", "z", 10_000_000);
        held.state()
            .add_lookup_counts(counts(100_000, 100_000, 0, 10.0), now);
        cold.state()
            .add_lookup_counts(counts(10_000, 10_000, 10_000, 10.0), now);
        let model = CacheModel::calibrate([&held, &cold], now);
        let pass = crate::FilterFamily::Bloom.false_positive_rate(2.0);
        let curve = model.cost_curve(&held);
        // Che's exponent alone, from the smoothed share 0.5 / 100,001 at 0.38 of the rate,
        // would give about 0.01; the window measured nothing missing.
        let unbounded = FalsePositiveCost {
            measured: 1.0,
            ..curve
        };
        assert!(
            unbounded.miss_chance(pass) > 0.005,
            "{}",
            unbounded.miss_chance(pass)
        );
        assert_eq!(model.miss_chance(&held, pass), MIN_MISS_CHANCE);
        // The false positive's cost: the floor's miss, and the rest at the cached price (the
        // floor too, no probe was timed).
        let cost = MIN_MISS_CHANCE + (1.0 - MIN_MISS_CHANCE) * MIN_MISS_CHANCE;
        assert!((curve.at(pass) - cost).abs() < 1e-12, "{}", curve.at(pass));
        // A window of misses only bounds nothing: the cold file is priced by the prediction.
        assert!(model.miss_chance(&cold, pass) > 0.95);
        assert!(
            (model.false_positive_cost(&cold, pass) - model.miss_chance(&cold, pass)).abs() < 1e-3
        );
    }
}
