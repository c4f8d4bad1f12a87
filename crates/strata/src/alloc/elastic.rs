//! Elastic filters: Strata's own allocation (DESIGN.md §3.5; not in the papers). The filter budget is
//! a hard cap that is spent in full, re-divided between existing files at every flush and
//! compaction without rewriting any of them.
//!
//! # Why
//!
//! The papers' allocators size a file's filter once, when the file is written, and never change
//! it. The budget they divide is the tree's *after* the job, but the tree keeps changing: files
//! that were sized for a small tree hold too few bits once it grows, and the bits of a file that
//! left are not handed back to the files that stay. Measured on this machine (`scripts/allocator_regret_grid.sh`): after a
//! 600,000-key fill at 2 bits per key, Mnemosyne's filters in use held 1.58-1.82 bits per key.
//!
//! # How
//!
//! Every filter this allocator sizes is written as modules of `m` bits per key each (DESIGN.md §1's
//! modular layout, independent seeds, probed in order), with more modules on disk than the file's
//! share of the budget: at least [`Elastic::with_disk_modules`] modules (default 3, so 1.5 times
//! the budget with the default `m` of half the budget), more if the file's optimum needs more (at
//! most six), and on level 0 as many as hold the budget plus [`LEVEL0_HEADROOM_BITS_PER_KEY`]
//! (six below a budget of 5, of a size that holds it; `Elastic::level0_disk_modules`), and on
//! level 1 as many as hold the budget plus [`LEVEL1_HEADROOM_BITS_PER_KEY`] (six at a budget of
//! 2, four at 4 and 6; `Elastic::level1_disk_modules`); from a budget of
//! [`HIGH_BUDGET_BITS_PER_KEY`] up (the default 10 among them) levels 0 and 1 hold a quarter of
//! the budget above it, in five modules of a quarter of the budget (12.5 bits per key at 10),
//! since spare bits there remove little and cost bytes on every write. Which modules are *in use*
//! — probed by lookups and counted in the budget — is the allocator's decision, a prefix `j_i`
//! of each file's modules, re-made at every flush and
//! compaction and refresh (every [`REFRESH_EVERY_LOOKUPS`](super::REFRESH_EVERY_LOOKUPS)
//! lookups, with or without access statistics):
//!
//! * the budget is `B = budget * sum_i n_i` over every file of the tree after the job (files
//!   without a filter included), and the modules in use never hold more;
//! * modules are taken greedily by avoided false positives per bit: the next module of file `i`
//!   is worth `w_i * (eps(b_before) - eps(b_before + m)) / (n_i * m)`, with
//!   `eps(b) = exp(-ln2sq * b)` (DESIGN.md §1); a module that does not fit ends that file's prefix
//!   (its later modules cost as much and avoid less). With the same module size for every
//!   file, the marginal value of a file's modules falls along the prefix, so the greedy choice
//!   is the optimum of the divided problem up to one module per file; when that one module
//!   leaves more than 5% of the budget unspent, the choice is repaired (`select`);
//! * `w_i = z_i * c_i`. `c_i` is what a false positive in file `i` costs, in device reads:
//!   `m_i + (1 - m_i) * k`, where `m_i` is the chance that it misses the block cache, predicted
//!   by [`CacheModel`](super::cache_model) from the file's measured probe and read rates at the
//!   false-positive rate uniform filters at the budget would give it (Che's approximation of
//!   the block cache, calibrated on the misses measured over every file; 1 for a file few
//!   lookups have reached), and `k` what a false positive on a cached block costs as a share of
//!   a device read: by default the floor of 0.001, so the budget goes where it saves device
//!   reads ([`CachedFalsePositives::DeviceReads`]); with
//!   [`CachedFalsePositives::ProbeTimes`], its measured time (sampled probe times, the file's
//!   own once 16 of its cached probes were timed, else every file's pooled; the floor until
//!   known).
//!   Pricing each module at the pass rate it leaves instead (the same model, so that a module
//!   leaving a hot file's blocks too rarely requested to stay cached counts the misses it
//!   causes) was tried and measured worse with direct reads (docs/BENCHMARKS.md, "Elastic
//!   filters' lookups on the same tree"). A file whose data blocks stay cached gains little
//!   from a filter, however often it is probed (the regret study measured Mnemosyne giving 9.8 bits per
//!   key to level-0 runs whose data fit the cache). The prediction, not the file's measured miss share,
//!   is what keeps a file with many bits from looking cold only because its few false
//!   positives find its blocks cold.
//! * `z_i` is the share of lookups that can reach file `i` and find nothing there. With access
//!   statistics (Merlin, DESIGN.md §4) it is the file's estimated zero-result probes `z_i`. Without
//!   them, it is the empty probes per second the engine counts in every file on the lookup
//!   path (`FileState::lookup_counts`), once lookups have reached the file 32 times; before
//!   that, the share of the tree's key range the file covers (`model::tree`'s key space) times
//!   the rate the counted files show per unit of the range they cover. Leveled trees after
//!   random fills are partitioned by key range, so a file of a 20-file run is reached by about
//!   a twentieth of the lookups, not by all of them as `z = 1` per run assumes; and lookups of
//!   keys that exist stop at the file that holds them, so the files below see fewer. A flush's
//!   output covers the whole range; a compaction's outputs share the range their inputs
//!   covered, in proportion to their entries.
//!
//! Filters written by another allocator (before a switch to this one) are taken as one opaque
//! module of their whole bits per key, in use or not.
//!
//! # State
//!
//! The modules every file has on disk, their size and how many are in use are this allocator's
//! state, logged in the manifest with every flush's and compaction's edit (owner
//! [`OWNER`]), so a restart resumes with the same filters in use. A refresh changes the choice
//! in memory; the next job logs it. The lookup counts behind `c_i` are not persisted: after a
//! restart every file starts again at `c = 1`.
//!
//! # Part of a module
//!
//! A file with a partitioned filter (`table/partition.rs`) has one block per module and
//! partition, so a module that does not fit whole is put in use in as many of its partitions as
//! fit ([`ModulesInUse`]). Without that, a file holding most of a small tree's keys makes one
//! module a large share of the budget, and the floor of DESIGN.md §3.5 (0.95 of the budget) cannot be
//! met: measured in `tests/elastic.rs`, 1.20 bits per key of a budget of 2 with whole modules,
//! 1.96 with partitions. A job's outputs report their partitions before the allocation
//! (`NewFile::filter_layout`).
//!
//! # Rebuild, priced
//!
//! A file's modules on disk bound what it can be given: a file written when the tree was small,
//! or before its lookups arrived, may deserve more than it holds. The engine asks
//! [`FilterRebuilds::filter_rebuild`] when its compaction workers are idle, within its rebuild
//! rate limit (`Options::filter_rebuild_bytes_per_sec`), and rewrites the file the answer names;
//! the new file's filter is sized like any compaction output's, with all six modules available
//! to the greedy choice. The price is in measured quantities only: each file's empty probes per
//! second since the process knew it, its cache-miss weight, its level's turnover time at the
//! recent flush rate, and the bytes the rewrite reads and writes.
//!
//! # Families
//!
//! Each file's bits are priced with its family's curve (`FilterFamily::false_positive_rate`,
//! DESIGN.md §3.5 "Filter families"), so Bloom and Ribbon files mix in one greedy choice.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;

use super::cache_model::{empty_probe_rate, CacheModel};
use super::mnemosyne::validated_target;
use super::{
    BudgetGuard, FilterAllocator, FilterJob, FilterRebuild, FilterRebuilds, LiveDecisions,
    ModuleSizing, ModulesInUse, NewFile, RebuildPricing,
};
use crate::coding::{put_fixed64, put_varint64, Decoder};
use crate::error::{Error, Result};
use crate::filter::modular::{MAX_MODULES, MIN_MODULE_BITS_PER_KEY};
use crate::filter::FilterFamily;
use crate::version::key_space::KeySpace;
use crate::version::{FileMetadata, PolicyState, Version, RECENT_WINDOW_PROBES};

/// The owner of the allocator's state in the manifest.
pub const OWNER: &str = "elastic-filters";

/// Version byte of the state's encoding (version 1 had no partly used modules; still read).
const STATE_VERSION: u8 = 2;

/// Default modules a new file gets on disk at least.
pub const DEFAULT_DISK_MODULES: usize = 3;

/// The budget of [`Elastic::default`], in bits per key in use.
pub const DEFAULT_BITS_PER_KEY: f64 = 10.0;

/// Bits per key a level-0 file's modules on disk hold at least above the budget (DESIGN.md §3.5
/// "Modules on disk"): its default module size is `max(m, (budget + this) / 6)`, and it gets as
/// many as hold the budget plus this (`Elastic::level0_disk_modules`). By DESIGN.md §2's
/// solution a file gets `ln(z_i / n_i) / ln2sq` bits per key plus a constant, so a file every
/// lookup reaches, holding `n` of the tree's `N` keys, wants about `ln(N / n) / ln2sq` bits above
/// an average file: 9.6 for a write buffer in a tree of a hundred. Measured at a budget of 2 by
/// `strata study regret --dump-weights`: level-0 files wanted 6-14 bits per key on present-key
/// lookups (docs/BENCHMARKS.md, "Modules on disk by level").
pub const LEVEL0_HEADROOM_BITS_PER_KEY: f64 = 10.0;

/// Bits per key a level-1 file's modules on disk hold at least above the budget (DESIGN.md §3.5
/// "Modules on disk"): it gets as many modules of the deeper files' size as hold the budget plus
/// this (`Elastic::level1_disk_modules`), six at a budget of 2, the three of every deeper file
/// from a budget of 8 up. Level 1 is one run every lookup the memtable and level 0 do not answer
/// reaches, holding an eighth to a quarter of the keys in the trees `strata study regret` builds,
/// so by DESIGN.md §2's solution its files want about `ln(N / n) / ln2sq` = 2.9-4.3 bits per key
/// above an average file. Measured at a budget of 2 on present-key lookups (docs/BENCHMARKS.md,
/// "Level-1 modules on disk"): where level 0 held few keys, level-1 files wanted 4-5 bits per key
/// and three modules of 1 bit kept the allocation at up to 2.2x the optimum's reads.
pub const LEVEL1_HEADROOM_BITS_PER_KEY: f64 = 4.0;

/// The budget from which level-0 and level-1 outputs hold only a quarter of the budget above it,
/// in five modules of a quarter of the budget (DESIGN.md §3.5 "Modules on disk";
/// `Elastic::output_modules`), in place of [`LEVEL0_HEADROOM_BITS_PER_KEY`] and
/// [`LEVEL1_HEADROOM_BITS_PER_KEY`]. Spare bits above the budget remove at most the false
/// positives the budget leaves, `exp(-ln2sq * budget)` of a file's empty probes: 20% at a budget of
/// 2, under 2.2% from 8 up. What they cost does not fall with the budget: each spare bit per key is
/// written with every flush and merge of the file. At the engine's default of 10 the level-0
/// headroom's 10 bits made every flush write 1.0067x RocksDB's table bytes at the bench's
/// defaults, and the level-1 floor's 5 spare bits its merges 1.001x, where Strata's data and index
/// bytes are 0.4% below RocksDB's (docs/BENCHMARKS.md, "Spare filter bits at high budgets").
pub const HIGH_BUDGET_BITS_PER_KEY: f64 = 8.0;

/// Modules on disk of a level-0 or level-1 output from a budget of [`HIGH_BUDGET_BITS_PER_KEY`]
/// up: five of a quarter of the budget, the budget plus a quarter.
const HIGH_BUDGET_TOP_MODULES: f64 = 5.0;

/// The bits per key above the budget a level-0 (`level == 0`) or level-1 output's modules on
/// disk hold at least at a budget of `target`: the level's headroom below
/// [`HIGH_BUDGET_BITS_PER_KEY`], a quarter of the budget from it up.
fn top_level_headroom(level: usize, target: f64) -> f64 {
    if target >= HIGH_BUDGET_BITS_PER_KEY {
        target / (HIGH_BUDGET_TOP_MODULES - 1.0)
    } else if level == 0 {
        LEVEL0_HEADROOM_BITS_PER_KEY
    } else {
        LEVEL1_HEADROOM_BITS_PER_KEY
    }
}

/// The default module size of a level-1 file at a budget of `target`: the deeper files' (half the
/// budget) below [`HIGH_BUDGET_BITS_PER_KEY`], a quarter of the budget from it up.
fn level1_module_bits(target: f64) -> f64 {
    if target >= HIGH_BUDGET_BITS_PER_KEY {
        target / (HIGH_BUDGET_TOP_MODULES - 1.0)
    } else {
        (target / 2.0).max(MIN_MODULE_BITS_PER_KEY)
    }
}

/// What elastic filters take a false positive on a data block the block cache holds to cost
/// (DESIGN.md §3.5 "Cache-miss weight").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachedFalsePositives {
    /// Next to nothing (`k` at the floor, [`MIN_MISS_CHANCE`](super::cache_model::MIN_MISS_CHANCE)):
    /// a false positive costs the chance that it reads its block from the device, so the budget
    /// goes where it saves device reads. The default. Measured with `strata study regret
    /// --block-cache-bytes 8MiB` on absent-key lookups (docs/BENCHMARKS.md, "Weights that find
    /// the optimum"): with the probe-timed price the files whose blocks stayed cached (the
    /// level-0 runs every lookup probes) kept six bits per key of a budget of two, and elastic
    /// filters read 1.15-1.24x the cache-weighted optimum's device blocks.
    #[default]
    DeviceReads,
    /// `k` measured from the probe times the lookup path samples, the file's own once 16 of its
    /// cached probes were timed: the budget goes where it saves lookup time. With reads served
    /// by the operating system's page cache a cached block's search is a sizeable share of a
    /// "device" read, and this spends bits on cached files to save it; with direct reads from a
    /// disk the two choices nearly agree.
    ProbeTimes,
}

/// A file's filter as the allocator sees it: `modules` modules of `module_bits` bits per key on
/// disk, the first `in_use` of them probed, and module `in_use + 1` probed too in the last
/// `extra` key-range partitions of a partitioned filter ([`ModulesInUse`]). `module_bits == 0`
/// marks an opaque filter (written by another allocator): one module of the file's whole bits
/// per key.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    module_bits: f64,
    modules: u8,
    in_use: u8,
    extra: u32,
}

impl Layout {
    /// An opaque filter of `file`'s whole bits per key, in use.
    fn opaque(file: &FileMetadata) -> Layout {
        let modules = u8::from(file.bits_per_key() > 0.0);
        Layout {
            module_bits: 0.0,
            modules,
            in_use: modules,
            extra: 0,
        }
    }

    /// The partitions using one module more, as far as `file` has them: fewer than its
    /// partitions, and none once every module is in use (a stored state is not trusted further).
    fn extra_partitions(&self, file: &FileMetadata) -> u32 {
        if self.is_opaque() || self.in_use >= self.modules {
            0
        } else {
            self.extra.min(file.filter_partitions().saturating_sub(1))
        }
    }

    fn is_opaque(&self) -> bool {
        self.module_bits <= 0.0
    }

    /// Bits per key of module `index` (0-based) of a file of `file_bits` bits per key.
    fn module(&self, file_bits: f64) -> f64 {
        if self.is_opaque() {
            file_bits
        } else {
            self.module_bits
        }
    }

    /// Bits per key in use: every partition counted as an equal share of the file's keys (the
    /// extra module goes to the last partitions, the only ones that can be short, so this never
    /// under-counts by more than one partition's shortfall).
    fn bits_in_use(&self, file: &FileMetadata) -> f64 {
        if self.is_opaque() {
            if self.in_use > 0 {
                file.bits_per_key()
            } else {
                0.0
            }
        } else {
            let partial =
                f64::from(self.extra_partitions(file)) / f64::from(file.filter_partitions().max(1));
            (f64::from(self.in_use.min(self.modules)) + partial) * self.module_bits
        }
    }
}

/// Every file's layout, by file number.
#[derive(Debug, Clone, Default, PartialEq)]
struct Selection {
    files: HashMap<u64, Layout, BuildHasherDefault<FileNumberHasher>>,
}

/// Hashes a file number with one multiplication (Fibonacci hashing). Every probe of every
/// lookup asks for its file's layout; with the standard library's SipHash that lookup took
/// about a third of what elastic filters' probes cost beyond uniform filters' in a profiled
/// `strata bench --paced-fill` readmissing phase (docs/BENCHMARKS.md, "Elastic filters'
/// lookups on the same tree"). File numbers are the engine's own, not an attacker's, so a
/// keyed hash buys nothing here.
#[derive(Debug, Default, Clone, Copy)]
struct FileNumberHasher(u64);

impl Hasher for FileNumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(FIBONACCI);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0 ^ value).wrapping_mul(FIBONACCI);
    }
}

/// 2^64 divided by the golden ratio: spreads consecutive file numbers over the high bits the
/// hash table's control bytes use.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Selection {
    fn encode(&self) -> Vec<u8> {
        let mut numbers: Vec<&u64> = self.files.keys().collect();
        numbers.sort_unstable();
        let mut out = vec![STATE_VERSION];
        put_varint64(&mut out, numbers.len() as u64);
        for number in numbers {
            let layout = &self.files[number];
            put_varint64(&mut out, *number);
            put_fixed64(&mut out, layout.module_bits.to_bits());
            out.push(layout.modules);
            out.push(layout.in_use);
            put_varint64(&mut out, u64::from(layout.extra));
        }
        out
    }

    /// `None` if the bytes are not a state this version wrote (the caller then re-derives).
    fn decode(bytes: &[u8]) -> Option<Selection> {
        let mut decoder = Decoder::new(bytes);
        let version = decoder.u8()?;
        if !(1..=STATE_VERSION).contains(&version) {
            return None;
        }
        let count = decoder.varint64()?;
        let mut files = HashMap::default();
        for _ in 0..count {
            let number = decoder.varint64()?;
            let module_bits = f64::from_bits(decoder.fixed64()?);
            let modules = decoder.u8()?;
            let in_use = decoder.u8()?;
            let extra = if version >= 2 {
                u32::try_from(decoder.varint64()?).ok()?
            } else {
                0
            };
            let valid = module_bits.is_finite()
                && module_bits >= 0.0
                && usize::from(modules) <= MAX_MODULES
                && in_use <= modules;
            if !valid {
                return None;
            }
            files.insert(
                number,
                Layout {
                    module_bits,
                    modules,
                    in_use,
                    extra,
                },
            );
        }
        decoder.is_empty().then_some(Selection { files })
    }
}

/// One file in a selection: its entries, its weight and its modules.
#[derive(Clone)]
struct Candidate {
    number: u64,
    entries: f64,
    /// `w_i = z_i * c_i` (DESIGN.md §3.5).
    weight: f64,
    /// Bits per key of the file (opaque layouts) or of one module.
    module_bits: f64,
    /// Modules that can be put in use (on disk, or up to six for a job's output).
    modules: usize,
    /// Key-range partitions of the filter (1 unless partitioned): a module that does not fit
    /// whole can be put in use in some of them.
    partitions: u32,
    /// The family whose false-positive curve prices the file's bits (DESIGN.md §3.5 "Filter
    /// families"), the file's own (a job's output reports the one its builder will use).
    family: FilterFamily,
}

/// What a selection puts in use in one candidate: whole modules, and the partitions using one
/// module more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct InUse {
    modules: usize,
    extra: u32,
}

/// A candidate's next module in the greedy heap.
struct Next {
    value_per_bit: f64,
    candidate: usize,
}

impl PartialEq for Next {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Next {}
impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Next {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value_per_bit
            .total_cmp(&other.value_per_bit)
            // Ties: the lower index first (a max-heap pops the greater).
            .then_with(|| other.candidate.cmp(&self.candidate))
    }
}

/// Avoided false positives per bit of module `index` of `candidate`, weighed by what they
/// cost (DESIGN.md §3.5).
fn value_per_bit(candidate: &Candidate, index: usize) -> f64 {
    let before = index as f64 * candidate.module_bits;
    let eps = |bits: f64| candidate.family.false_positive_rate(bits);
    let gain = eps(before) - eps(before + candidate.module_bits);
    let bits = candidate.entries * candidate.module_bits;
    if bits > 0.0 {
        candidate.weight.max(0.0) * gain / bits
    } else {
        0.0
    }
}

/// The share of probes of `candidate` that pass its filter's modules in use (`used`): every
/// partition counted as an equal share of the file's keys, as [`Layout::bits_in_use`] does.
fn pass_rate(candidate: &Candidate, used: InUse) -> f64 {
    let eps = |modules: usize| {
        candidate
            .family
            .false_positive_rate(modules as f64 * candidate.module_bits)
    };
    let partitions = f64::from(candidate.partitions.max(1));
    let extra = f64::from(used.extra).min(partitions);
    ((partitions - extra) * eps(used.modules) + extra * eps(used.modules + 1)) / partitions
}

/// The probes of a file its false-positive cost is averaged over: one window of the cache
/// model's counts at its shortest ([`RECENT_WINDOW_PROBES`]; DESIGN.md §3.5 "Cache misses,
/// smoothed").
const COST_HORIZON_PROBES: f64 = RECENT_WINDOW_PROBES as f64;

/// Files examined per rebuild check, the most promising first (each costs one greedy solve).
const REBUILD_CANDIDATES: usize = 8;

/// The modules in use of every candidate (same order) when at most `budget_bits` bits may be:
/// greedy by value per bit. A module that does not fit ends its file's prefix, after being put
/// in use in as many of the file's partitions as fit (every partition counted as an equal share
/// of the file's keys; the module's value per bit is the same in each).
///
/// When the greedy choice leaves more than a twentieth of the budget unspent (a file without
/// partitions whose next module does not fit whole, while the modules of others took what it
/// needed), the choice is made again with that file's next module taken first, for each of the
/// [`SPEND_REPAIRS`] largest such modules, and the choice spending the most is kept, for up to
/// [`SPEND_REPAIRS`] rounds: DESIGN.md §3.5's floor of 0.95 of the budget is a target of the
/// issue, not a result of the greedy. Measured without it (`strata bench --paced-fill --num
/// 200000`, 2 bits per key): a tree of three level-0 files and one unpartitioned last-level
/// file of 171,672 entries held 1.56 bits per key in use; with cached false positives priced
/// by probe times it read 0.42 device blocks per missing key against uniform filters' 0.23
/// (docs/BENCHMARKS.md, "Elastic filters' lookups on the same tree").
fn select(candidates: &[Candidate], budget_bits: f64) -> Vec<InUse> {
    let mut forced = vec![0; candidates.len()];
    let mut best = select_from(candidates, budget_bits, &forced);
    let mut spent = bits_in_use(candidates, &best);
    for _ in 0..SPEND_REPAIRS {
        if budget_bits <= 0.0 || spent >= SPEND_AT_LEAST * budget_bits {
            break;
        }
        let mut blocked: Vec<usize> = (0..candidates.len())
            .filter(|&index| {
                let candidate = &candidates[index];
                candidate.module_bits > 0.0
                    && candidate.entries > 0.0
                    && best[index].modules < candidate.modules
            })
            .collect();
        blocked.sort_by(|a, b| {
            let bits = |index: usize| candidates[index].entries * candidates[index].module_bits;
            bits(*b).total_cmp(&bits(*a))
        });
        blocked.truncate(SPEND_REPAIRS);
        let mut improved = None;
        for index in blocked {
            let mut trial = forced.clone();
            trial[index] = best[index].modules + 1;
            let in_use = select_from(candidates, budget_bits, &trial);
            let trial_spent = bits_in_use(candidates, &in_use);
            if trial_spent > improved.as_ref().map_or(spent, |(s, _, _)| *s) * (1.0 + 1e-9) {
                improved = Some((trial_spent, trial, in_use));
            }
        }
        let Some((trial_spent, trial, in_use)) = improved else {
            break;
        };
        (spent, forced, best) = (trial_spent, trial, in_use);
    }
    best
}

/// The share of the budget below which [`select`] repairs the greedy choice (DESIGN.md §3.5).
const SPEND_AT_LEAST: f64 = 0.95;

/// Files and rounds [`select`]'s repair tries.
const SPEND_REPAIRS: usize = 8;

/// Bits `in_use` puts in use over `candidates`.
fn bits_in_use(candidates: &[Candidate], in_use: &[InUse]) -> f64 {
    candidates
        .iter()
        .zip(in_use)
        .map(|(candidate, used)| {
            let partitions = f64::from(candidate.partitions.max(1));
            let extra = f64::from(used.extra).min(partitions) / partitions;
            candidate.entries * candidate.module_bits * (used.modules as f64 + extra)
        })
        .sum()
}

/// The greedy choice of [`select`], with `forced[i]` modules of candidate `i` taken first
/// (as far as the budget and its modules allow).
fn select_from(candidates: &[Candidate], budget_bits: f64, forced: &[usize]) -> Vec<InUse> {
    let mut in_use = vec![InUse::default(); candidates.len()];
    let mut used = 0.0;
    // A relative tolerance so that a budget spent exactly is not refused by rounding.
    let allowed = budget_bits * (1.0 + 1e-12);
    for (index, candidate) in candidates.iter().enumerate() {
        let want = forced
            .get(index)
            .copied()
            .unwrap_or(0)
            .min(candidate.modules);
        let cost = candidate.entries * candidate.module_bits;
        while in_use[index].modules < want && cost > 0.0 && used + cost <= allowed {
            used += cost;
            in_use[index].modules += 1;
        }
    }
    let mut heap: BinaryHeap<Next> = candidates
        .iter()
        .enumerate()
        .filter(|(index, candidate)| {
            candidate.modules > in_use[*index].modules
                && candidate.module_bits > 0.0
                && candidate.entries > 0.0
        })
        .map(|(index, candidate)| Next {
            value_per_bit: value_per_bit(candidate, in_use[index].modules),
            candidate: index,
        })
        .collect();
    while let Some(next) = heap.pop() {
        let candidate = &candidates[next.candidate];
        let cost = candidate.entries * candidate.module_bits;
        let taken = &mut in_use[next.candidate];
        if used + cost > allowed {
            if candidate.partitions > 1 {
                let partitions = f64::from(candidate.partitions);
                let share = cost / partitions;
                let fit = ((allowed - used) / share)
                    .floor()
                    .clamp(0.0, partitions - 1.0);
                // `fit` is below `partitions`, a u32.
                taken.extra = fit as u32;
                used += f64::from(taken.extra) * share;
            }
            continue;
        }
        used += cost;
        taken.modules += 1;
        if taken.modules < candidate.modules {
            heap.push(Next {
                value_per_bit: value_per_bit(candidate, taken.modules),
                candidate: next.candidate,
            });
        }
    }
    in_use
}

/// The default module size of a level-0 file at a budget of `target`: half the budget (the
/// deeper files' size), or more so that six modules hold [`LEVEL0_HEADROOM_BITS_PER_KEY`] above
/// the budget; at most the Bloom filter's 64. From a budget of [`HIGH_BUDGET_BITS_PER_KEY`] up,
/// a quarter of the budget (level 1's size there).
fn level0_module_bits(target: f64) -> f64 {
    if target >= HIGH_BUDGET_BITS_PER_KEY {
        return level1_module_bits(target);
    }
    let module = (target / 2.0).max(MIN_MODULE_BITS_PER_KEY);
    module
        .max((target + LEVEL0_HEADROOM_BITS_PER_KEY) / MAX_MODULES as f64)
        .min(64.0)
}

/// `bits` if it is a valid module size: finite, at least 0.5 (DESIGN.md §1's smallest module), at
/// most the Bloom filter's 64.
fn valid_module_bits(bits: f64) -> Result<f64> {
    if !bits.is_finite() || !(MIN_MODULE_BITS_PER_KEY..=64.0).contains(&bits) {
        return Err(Error::InvalidArgument(format!(
            "elastic filter modules must hold between {MIN_MODULE_BITS_PER_KEY} and 64 bits per \
             key, got {bits}"
        )));
    }
    Ok(bits)
}

/// Elastic filters (module documentation).
#[derive(Debug)]
pub struct Elastic {
    bits_per_key_target: f64,
    /// A cap in bytes on the filters in use besides `bits_per_key_target` per entry.
    budget_bytes: Option<u64>,
    /// Bits per key of one module of a file written below level 0.
    module_bits: f64,
    /// Bits per key of one module of a file written to level 0 (`Elastic::output_module_bits`).
    level0_module_bits: f64,
    /// Bits per key of one module of a file written to level 1 (`Elastic::output_module_bits`).
    level1_module_bits: f64,
    disk_modules: usize,
    cached_false_positives: CachedFalsePositives,
    selection: ArcSwap<Selection>,
    /// The tag of the selection stored last ([`Elastic::store_selection`]): the files' memos of
    /// their modules in use ([`ProbeMemo`]) are current only if they carry it.
    generation: AtomicU64,
    /// [`ProbeMemo::tag`] of `generation`, stored with it, so that a probe compares its file's
    /// memo with one load and no division.
    memo_tag: AtomicU64,
    /// This allocator's number among the process's elastic allocators (its first selection's),
    /// which owns the smoothed false-positive costs it keeps in the files' states
    /// ([`FileState::smoothed`](crate::version::FileState)).
    owner: u64,
}

/// Selections stored by every elastic allocator of the process: each store takes the next
/// number as its tag, so a file's memo written under one allocator never passes for another's
/// (a switch away and back makes a new allocator over the same files).
static SELECTIONS_STORED: AtomicU64 = AtomicU64::new(0);

/// A file's modules in use as the lookup path reads them: one word in the file's metadata
/// (`FileState::allocator_memo`), tagged with the selection it was read from. A probe that
/// finds its file's memo tagged with the current selection uses it; otherwise it looks the file
/// up in the selection and writes the memo. Without it every probe paid an `ArcSwap` load and a
/// hash-map lookup: in a profile of a 500,000-key fill and 3,000,000 `readmissing` lookups at 10
/// bits per key, 122 of the main thread's 2,560 samples in the lookup and 42 in `ArcSwap` loads
/// (4 with uniform filters), and elastic filters ran 0.89x uniform filters' lookups per second, 0.97x with the
/// memo (docs/BENCHMARKS.md, "Elastic filters as the default").
///
/// Layout: bits 0-7 the modules in every partition (255: all), bits 8-31 the partitions using
/// one module more, bits 32-63 the tag (the low 32 bits of the selection number, never 0).
/// A tag that wrapped around to an old memo's could hand a probe an old choice of this file's
/// own modules: a lookup stays correct with any prefix, and the next store moves the tag on.
struct ProbeMemo;

impl ProbeMemo {
    const ALL_MODULES: u64 = 0xff;

    fn tag(generation: u64) -> u64 {
        // 1..=u32::MAX: 0 is "no memo".
        generation % u64::from(u32::MAX) + 1
    }

    /// The memo of `in_use` under `generation`, or `None` if it does not fit one word.
    fn encode(generation: u64, in_use: ModulesInUse) -> Option<u64> {
        let modules = if in_use.modules == usize::MAX {
            Self::ALL_MODULES
        } else {
            u64::try_from(in_use.modules)
                .ok()
                .filter(|&m| m < Self::ALL_MODULES)?
        };
        let extra = u64::from(in_use.extra_partitions);
        if extra >= 1 << 24 {
            return None;
        }
        Some(Self::tag(generation) << 32 | extra << 8 | modules)
    }

    /// The modules in use `word` holds if it was written under `generation` (the tests' form of
    /// [`ProbeMemo::decode_tagged`]).
    #[cfg(test)]
    fn decode(generation: u64, word: u64) -> Option<ModulesInUse> {
        Self::decode_tagged(Self::tag(generation), word)
    }

    /// [`ProbeMemo::decode`] with the generation's [`ProbeMemo::tag`] given.
    #[inline]
    fn decode_tagged(tag: u64, word: u64) -> Option<ModulesInUse> {
        if word >> 32 != tag {
            return None;
        }
        let modules = match word & 0xff {
            Self::ALL_MODULES => usize::MAX,
            m => m as usize,
        };
        Some(ModulesInUse {
            modules,
            extra_partitions: ((word >> 8) & 0xff_ffff) as u32,
        })
    }
}

impl Default for Elastic {
    /// A budget of 10 bits per key in use, [`Options::default`](crate::Options)'s filters: what
    /// uniform filters at RocksDB's customary setting would hold in memory, divided by value.
    fn default() -> Self {
        Self::with_valid_target(DEFAULT_BITS_PER_KEY)
    }
}

impl Elastic {
    /// Elastic filters with a budget of `bits_per_key_target` bits per key (finite, in
    /// `0..=64`), modules of half the budget (at least 0.5 bit, DESIGN.md §1's smallest module)
    /// and [`DEFAULT_DISK_MODULES`] modules on disk per file at least below level 0; level-0
    /// files get as many modules as hold [`LEVEL0_HEADROOM_BITS_PER_KEY`] above the budget, at
    /// least as many as deeper files (`Elastic::level0_disk_modules`).
    pub fn new(bits_per_key_target: f64) -> Result<Self> {
        Ok(Self::with_valid_target(validated_target(
            bits_per_key_target,
        )?))
    }

    fn with_valid_target(target: f64) -> Self {
        let generation = SELECTIONS_STORED.fetch_add(1, AtomicOrdering::Relaxed);
        Elastic {
            bits_per_key_target: target,
            budget_bytes: None,
            module_bits: (target / 2.0).max(MIN_MODULE_BITS_PER_KEY),
            level0_module_bits: level0_module_bits(target),
            level1_module_bits: level1_module_bits(target),
            disk_modules: DEFAULT_DISK_MODULES,
            cached_false_positives: CachedFalsePositives::default(),
            selection: ArcSwap::from_pointee(Selection::default()),
            generation: AtomicU64::new(generation),
            memo_tag: AtomicU64::new(ProbeMemo::tag(generation)),
            owner: generation,
        }
    }

    /// Modules of `bits` bits per key below level 0 (at least 0.5; at most the Bloom filter's
    /// 64; default half the budget, on level 1 a quarter of it from a budget of
    /// [`HIGH_BUDGET_BITS_PER_KEY`] up): level 1's too.
    pub fn with_module_bits(mut self, bits: f64) -> Result<Self> {
        self.module_bits = valid_module_bits(bits)?;
        self.level1_module_bits = self.module_bits;
        Ok(self)
    }

    /// Modules of `bits` bits per key on level 0 (at least 0.5; at most the Bloom filter's 64;
    /// default `max(m, (budget + 10) / 6)`, `Elastic::output_modules`).
    pub fn with_level0_module_bits(mut self, bits: f64) -> Result<Self> {
        self.level0_module_bits = valid_module_bits(bits)?;
        Ok(self)
    }

    /// At least `modules` modules on disk per new file (1 to 6; level-0 files get more where the
    /// budget plus the headroom needs more, `Elastic::level0_disk_modules`).
    pub fn with_disk_modules(mut self, modules: usize) -> Result<Self> {
        if !(1..=MAX_MODULES).contains(&modules) {
            return Err(Error::InvalidArgument(format!(
                "elastic filters keep 1 to {MAX_MODULES} modules on disk, got {modules}"
            )));
        }
        self.disk_modules = modules;
        Ok(self)
    }

    /// What a false positive on a cached data block is taken to cost
    /// ([`CachedFalsePositives::DeviceReads`] unless set).
    pub fn with_cached_false_positives(mut self, price: CachedFalsePositives) -> Self {
        self.cached_false_positives = price;
        self
    }

    /// Caps the filters in use at `bytes` bytes as well (at least 1): the budget is then
    /// `min(bits_per_key * entries, 8 * bytes)` bits, so a user under memory pressure states
    /// the memory filters may take, however large the tree grows. The bits per key still set
    /// the module size and the most a file is given.
    pub fn with_budget_bytes(mut self, bytes: u64) -> Result<Self> {
        if bytes == 0 {
            return Err(Error::InvalidArgument(
                "a filter budget in bytes must be at least 1 byte (use 0 bits per key for no \
                 filters)"
                    .into(),
            ));
        }
        self.budget_bytes = Some(bytes);
        Ok(self)
    }

    /// The budget in bits for `entries` entries.
    fn budget_bits(&self, entries: f64) -> f64 {
        let per_key = self.bits_per_key_target * entries;
        match self.budget_bytes {
            Some(bytes) => per_key.min(bytes as f64 * 8.0),
            None => per_key,
        }
    }

    /// The candidates for the tree's `files` (after any job), with `known` layouts.
    fn existing_candidates<'a>(
        &self,
        files: impl Iterator<Item = &'a Arc<FileMetadata>>,
        known: &Selection,
        weight: &dyn Fn(&FileMetadata) -> f64,
    ) -> Vec<(Candidate, Layout)> {
        files
            .map(|file| {
                let layout = known
                    .files
                    .get(&file.number())
                    .copied()
                    .unwrap_or_else(|| Layout::opaque(file));
                (
                    Candidate {
                        number: file.number(),
                        entries: file.entries() as f64,
                        weight: weight(file),
                        module_bits: layout.module(file.bits_per_key()),
                        modules: usize::from(layout.modules),
                        partitions: if layout.is_opaque() {
                            1
                        } else {
                            file.filter_partitions()
                        },
                        family: file.filter_family(),
                    },
                    layout,
                )
            })
            .collect()
    }

    /// The selection over `existing` files and a job's `outputs` (with their weights), and the
    /// bits per key to build for each output, with at least `disk_modules` modules on disk.
    fn solve(
        &self,
        existing: Vec<(Candidate, Layout)>,
        outputs: &[(&NewFile, f64)],
        (module_bits, disk_modules): (f64, usize),
    ) -> (Selection, Vec<f64>) {
        let entries: f64 = existing.iter().map(|(c, _)| c.entries).sum::<f64>()
            + outputs
                .iter()
                .map(|(file, _)| file.entries as f64)
                .sum::<f64>();
        let budget_bits = self.budget_bits(entries);
        let mut candidates = Vec::with_capacity(existing.len() + outputs.len());
        let mut layouts = Vec::with_capacity(existing.len());
        for (candidate, layout) in existing {
            candidates.push(candidate);
            layouts.push(layout);
        }
        let filters = self.bits_per_key_target > 0.0;
        for (file, weight) in outputs {
            candidates.push(Candidate {
                number: file.file_number,
                entries: file.entries as f64,
                weight: *weight,
                module_bits,
                modules: if filters { MAX_MODULES } else { 0 },
                partitions: file.filter_layout.partitions.max(1),
                family: file.filter_layout.family,
            });
        }
        let in_use = select(&candidates, budget_bits);
        let mut selection = Selection::default();
        for ((candidate, layout), used) in candidates.iter().zip(&layouts).zip(&in_use) {
            selection.files.insert(
                candidate.number,
                Layout {
                    in_use: u8::try_from(used.modules).unwrap_or(u8::MAX),
                    extra: used.extra,
                    ..*layout
                },
            );
        }
        let mut bits = Vec::with_capacity(outputs.len());
        for (candidate, used) in candidates.iter().zip(&in_use).skip(layouts.len()) {
            let (extra, used) = (used.extra, used.modules);
            // The partly used module must be on disk too.
            let needed = used + usize::from(extra > 0);
            let modules = if filters {
                needed.max(disk_modules).min(MAX_MODULES)
            } else {
                0
            };
            // `modules` is at most 6.
            let modules_u8 = modules as u8;
            selection.files.insert(
                candidate.number,
                Layout {
                    module_bits,
                    modules: modules_u8,
                    in_use: u8::try_from(used.min(modules)).unwrap_or(modules_u8),
                    extra,
                },
            );
            bits.push(modules as f64 * module_bits);
        }
        (selection, bits)
    }

    /// The weight of every file: Merlin's zero-result probes when any lookup has been recorded,
    /// else the share of the key range the file covers; times the predicted cache-miss chance.
    fn weighing(&self, tree: &Version, job: Option<&FilterJob<'_>>) -> Weighing {
        let cache = CacheModel::calibrate(
            tree.files().map(|(_, _, file)| file.as_ref()),
            Instant::now(),
        );
        Weighing {
            reach: Elastic::weights(tree, job),
            cache: match self.cached_false_positives {
                CachedFalsePositives::DeviceReads => cache.device_reads_only(),
                CachedFalsePositives::ProbeTimes => cache,
            },
            reference_bits: self.bits_per_key_target,
            owner: self.owner,
        }
    }

    /// How files' reach `z_i` is measured: Merlin's zero-result probes when any lookup has been
    /// recorded, else the share of the key range the file covers.
    fn weights(tree: &Version, job: Option<&FilterJob<'_>>) -> Weights {
        let recorded = tree.files().any(|(_, _, file)| {
            file.state()
                .access_estimate()
                .is_some_and(|estimate| estimate.q > 0.0)
        }) || job.is_some_and(|job| {
            job.outputs
                .iter()
                .any(|file| file.access.is_some_and(|estimate| estimate.q > 0.0))
        });
        if recorded {
            Weights::Statistics
        } else {
            Weights::coverage_of(tree)
        }
    }

    /// The module size of an output on `level`: [`Elastic::with_level0_module_bits`] on level 0,
    /// [`Elastic::with_module_bits`] (default half the budget) below.
    fn output_module_bits(&self, level: usize) -> f64 {
        match level {
            0 => self.level0_module_bits,
            1 => self.level1_module_bits,
            _ => self.module_bits,
        }
    }

    /// The module size and the modules on disk an output on `level` gets at least: on level 0,
    /// modules of the level-0 size holding the budget plus the headroom
    /// (`Elastic::level0_disk_modules`), on level 1 those of the level-1 size holding its own
    /// (`Elastic::level1_disk_modules`), the settings ([`Elastic::with_module_bits`],
    /// [`Elastic::with_disk_modules`]) elsewhere (DESIGN.md §3.5 "Modules on disk").
    ///
    /// Every lookup the memtable does not answer probes every level-0 run, each spanning the key
    /// range, so a level-0 file is the most probed per entry of the tree whatever the workload,
    /// and its optimum lies far above the budget: measured by `strata study regret
    /// --dump-weights` at 2 bits per key, 6 to 14 bits per key on present-key lookups, 4 to 10 on
    /// absent ones (docs/BENCHMARKS.md, "Modules on disk by level"). Its modules on disk cap
    /// what the allocation can give it until a rebuild; six modules of half the budget (3x the
    /// budget, 6 bits) held present-key lookups at 1.5-2.8x the optimum's reads at a budget of
    /// 2. The excess it wants over the budget is additive ([`LEVEL0_HEADROOM_BITS_PER_KEY`]), so
    /// at small budgets its modules are larger than the deeper files' (2 bits at a budget of 2),
    /// and from a budget of 5 up half the budget holds it in fewer than six. Deeper files
    /// want 0-5 bits per key at a budget of 2, which modules of half the budget divide in finer
    /// steps. Level 0 holds a small share of the keys (a few write buffers), so its larger
    /// modules cost little disk, but every key passes through it: from a budget of
    /// [`HIGH_BUDGET_BITS_PER_KEY`] up, where spare bits remove under 2.2% of a file's empty
    /// probes, levels 0 and 1 hold only a quarter of the budget above it (five modules of a
    /// quarter of the budget), so that their spare bits do not cost more bytes written than the
    /// data and index blocks save against RocksDB's.
    fn output_modules(&self, level: usize) -> (f64, usize) {
        match level {
            0 => (self.level0_module_bits, self.level0_disk_modules()),
            1 => (self.level1_module_bits, self.level1_disk_modules()),
            _ => (self.module_bits, self.disk_modules),
        }
    }

    /// The modules a level-1 output gets on disk at least: as many of the level-1 size as
    /// hold the budget plus [`LEVEL1_HEADROOM_BITS_PER_KEY`], no fewer than deeper files get
    /// ([`Elastic::with_disk_modules`]), at most six: six at a budget of 2 (modules of 1 bit),
    /// four at 4 and 6. From a budget of [`HIGH_BUDGET_BITS_PER_KEY`] up the headroom is a
    /// quarter of the budget in modules of a quarter of the budget: five, 12.5 bits per key at
    /// the default 10 (15 before, three modules of half the budget). Deeper files keep
    /// [`Elastic::with_disk_modules`]: they want less than the budget's share on present keys and
    /// about the budget on absent ones.
    fn level1_disk_modules(&self) -> usize {
        let holding = (self.bits_per_key_target + top_level_headroom(1, self.bits_per_key_target))
            / self.level1_module_bits;
        // Finite and in 0..=136 (a budget of at most 64 over modules of at least 0.5 bit); the
        // tolerance keeps (2 + 4) / 1 at 6.
        let modules = (holding - 1e-9).ceil().max(1.0) as usize;
        modules.max(self.disk_modules).min(MAX_MODULES)
    }

    /// The modules a level-0 output gets on disk at least: as many of the level-0 size as hold
    /// the budget plus [`LEVEL0_HEADROOM_BITS_PER_KEY`], and no fewer than deeper files get
    /// ([`Elastic::with_disk_modules`]); at most six. The headroom is additive (a level-0 file
    /// wants about `ln(N / n) / ln2sq` bits above an average file, DESIGN.md §2), so six modules
    /// below a budget of 5 (modules of `(budget + 10) / 6` bits), and fewer above it, where the
    /// modules are half the budget (six of 3 bits at a budget of 6). From a budget of
    /// [`HIGH_BUDGET_BITS_PER_KEY`] up the headroom is a quarter of the budget, in five modules of
    /// a quarter of the budget: 12.5 bits per key at the default 10, where four modules of 5 bits
    /// (20) made flushes write 1.0067x RocksDB's table bytes (docs/BENCHMARKS.md, "Spare filter
    /// bits at high budgets"). The allocation can still give a flushed file all six when its
    /// optimum wants them (`Elastic::solve` writes every module in use).
    fn level0_disk_modules(&self) -> usize {
        let holding = (self.bits_per_key_target + top_level_headroom(0, self.bits_per_key_target))
            / self.level0_module_bits;
        // Finite and in 0..=148 (a budget of at most 64 over modules of at least 0.5 bit); the
        // tolerance keeps (2 + 10) / 2 at 6.
        let modules = (holding - 1e-9).ceil().max(1.0) as usize;
        modules.max(self.disk_modules).min(MAX_MODULES)
    }

    /// Solves the selection for the tree after `job` without storing it.
    fn plan(&self, tree: &Version, job: &FilterJob<'_>) -> (Selection, Vec<f64>) {
        let weighing = self.weighing(tree, Some(job));
        let known = self.selection.load();
        let staying = tree
            .files()
            .map(|(_, _, file)| file)
            .filter(|file| !job.is_input(file.number()));
        let existing = self.existing_candidates(staying, &known, &|file| weighing.of_file(file));
        let output_entries = job.output_entries().max(1) as f64;
        let job_coverage = match &weighing.reach {
            Weights::Coverage {
                space: Some(space), ..
            } if !job.inputs.is_empty() => {
                let inputs: HashSet<u64> = job.inputs.iter().map(|i| i.file_number).collect();
                let ranges: Vec<(&[u8], &[u8])> = tree
                    .files()
                    .filter(|(_, _, file)| inputs.contains(&file.number()))
                    .map(|(_, _, file)| (file.smallest_user_key(), file.largest_user_key()))
                    .collect();
                match (
                    ranges.iter().map(|r| r.0).min(),
                    ranges.iter().map(|r| r.1).max(),
                ) {
                    (Some(smallest), Some(largest)) => space.coverage(smallest, largest),
                    _ => 1.0,
                }
            }
            // A flush's output spans the memtable's keys: taken as the whole range.
            _ => 1.0,
        };
        let outputs: Vec<(&NewFile, f64)> = job
            .outputs
            .iter()
            .map(|file| {
                let weight = match &weighing.reach {
                    Weights::Statistics => file.access.map_or(0.0, |estimate| estimate.z),
                    Weights::Coverage { .. } => weighing
                        .reach
                        .of_share(job_coverage * file.entries as f64 / output_entries),
                };
                (file, weight)
            })
            .collect();
        self.solve(existing, &outputs, self.output_modules(job.output_level))
    }

    /// The selection over `tree`'s files as they are, with `known` layouts.
    fn reselect(&self, tree: &Version, known: &Selection) -> Selection {
        let weighing = self.weighing(tree, None);
        let files = tree.files().map(|(_, _, file)| file);
        let existing = self.existing_candidates(files, known, &|file| weighing.of_file(file));
        self.solve(existing, &[], (self.module_bits, self.disk_modules))
            .0
    }

    fn layout(&self, file: &FileMetadata) -> Option<Layout> {
        self.selection.load().files.get(&file.number()).copied()
    }

    /// `file`'s modules in use in the selection stored last, kept in the file's [`ProbeMemo`]
    /// under the generation read first (the lookup path's miss, hence cold and out of line).
    #[cold]
    #[inline(never)]
    fn remember_modules_in_use(&self, file: &FileMetadata) -> ModulesInUse {
        let generation = self.generation.load(AtomicOrdering::Acquire);
        let in_use = self.modules_in_use_now(file);
        if let Some(word) = ProbeMemo::encode(generation, in_use) {
            file.state().set_allocator_memo(word);
        }
        in_use
    }

    /// `file`'s modules in use in the selection stored last (the lookup path reads them
    /// through the file's [`ProbeMemo`]).
    fn modules_in_use_now(&self, file: &FileMetadata) -> ModulesInUse {
        match self.layout(file) {
            Some(layout) if layout.is_opaque() && layout.in_use > 0 => ModulesInUse::ALL,
            Some(layout) => ModulesInUse {
                modules: usize::from(layout.in_use),
                extra_partitions: layout.extra_partitions(file),
            },
            // A file the allocator has not placed yet (none should be) uses no filter: the cap
            // holds.
            None => ModulesInUse::NONE,
        }
    }

    /// Stores `selection` and moves the tag on, so every file's [`ProbeMemo`] is read again.
    fn store_selection(&self, selection: Arc<Selection>) {
        self.selection.store(selection);
        self.retag();
    }

    /// Moves the tag on (after a store of the selection).
    fn retag(&self) {
        let next = SELECTIONS_STORED.fetch_add(1, AtomicOrdering::Relaxed);
        self.generation.store(next, AtomicOrdering::Release);
        self.memo_tag
            .store(ProbeMemo::tag(next), AtomicOrdering::Release);
    }

    /// DESIGN.md §3.5 "Rebuild, priced" (see [`FilterAllocator::filter_rebuild`]). A file is a
    /// candidate when every module it has on disk is in use and it could hold more. For each
    /// of the [`REBUILD_CANDIDATES`] most promising, the greedy choice is made again as if the
    /// file had six modules on disk; if it would then use more than it has, the gain is the
    /// drop in data-block reads per second over *every* file (the others give up the bits the
    /// file takes), each file's reads being its measured empty probes per second times its
    /// cache-miss weight times the share that passes its filter. The gain over the file's
    /// expected remaining life, at `read_cost_bytes` a read, must exceed the bytes the rebuild
    /// reads and writes; the best net saving wins.
    fn price_rebuild(&self, tree: &Version, pricing: &RebuildPricing) -> Option<FilterRebuild> {
        if self.bits_per_key_target <= 0.0 {
            return None;
        }
        let known = self.selection.load_full();
        let placed: Vec<(usize, u64, &Arc<FileMetadata>)> = tree.files().collect();
        // As in `refresh`: only a selection of exactly this tree's files is priced.
        if placed.len() != known.files.len()
            || placed
                .iter()
                .any(|(_, _, file)| !known.files.contains_key(&file.number()))
        {
            return None;
        }
        let weighing = self.weighing(tree, None);
        let existing =
            self.existing_candidates(placed.iter().map(|(_, _, file)| *file), &known, &|file| {
                weighing.of_file(file)
            });
        let (candidates, layouts): (Vec<Candidate>, Vec<Layout>) = existing.into_iter().unzip();
        let entries: f64 = candidates.iter().map(|c| c.entries).sum();
        // Data-block reads per second a false positive in each file costs, per unit of its
        // filter's pass rate.
        let reads_per_pass: Vec<f64> = placed
            .iter()
            .map(|(_, _, file)| {
                file.state().empty_probes_per_sec(pricing.now) * weighing.false_positive_cost(file)
            })
            .collect();
        let priced = PricedTree {
            placed: &placed,
            budget_bits: self.budget_bits(entries),
            candidates,
            layouts,
            reads_per_pass,
        };
        let in_use = select(&priced.candidates, priced.budget_bits);
        let reads_now = priced.reads(&in_use, &priced.candidates);
        let mut best: Option<FilterRebuild> = None;
        for index in priced.most_promising(&in_use) {
            let Some(rebuild) = priced.price(index, reads_now, tree, pricing) else {
                continue;
            };
            let saving = rebuild.net_saving_bytes(pricing.read_cost_bytes);
            if saving > 0.0
                && best
                    .as_ref()
                    .is_none_or(|b| saving > b.net_saving_bytes(pricing.read_cost_bytes))
            {
                best = Some(rebuild);
            }
        }
        best
    }
}

/// The tree as [`Elastic::price_rebuild`] prices it: every file with its selection
/// candidate, on-disk layout and reads per second a pass of its filter costs.
struct PricedTree<'a, 'v> {
    /// Every file of the tree with its level and run, in `Version::files` order.
    placed: &'a [(usize, u64, &'v Arc<FileMetadata>)],
    candidates: Vec<Candidate>,
    layouts: Vec<Layout>,
    /// Per file: data-block reads per second a false positive costs, per unit of pass rate.
    reads_per_pass: Vec<f64>,
    budget_bits: f64,
}

impl PricedTree<'_, '_> {
    /// Data-block reads per second under `selection` of `candidates`.
    fn reads(&self, selection: &[InUse], candidates: &[Candidate]) -> f64 {
        candidates
            .iter()
            .zip(selection)
            .zip(&self.reads_per_pass)
            .map(|((candidate, used), per_pass)| {
                if *per_pass > 0.0 {
                    per_pass * pass_rate(candidate, *used)
                } else {
                    0.0
                }
            })
            .sum()
    }

    /// Saturated files that could hold more, by the reads their next module would avoid per
    /// byte of the file (what a rebuild costs): the [`REBUILD_CANDIDATES`] most promising.
    fn most_promising(&self, in_use: &[InUse]) -> Vec<usize> {
        let mut wanting: Vec<(usize, f64)> = self
            .candidates
            .iter()
            .zip(&self.layouts)
            .zip(in_use)
            .enumerate()
            .filter(|(index, ((candidate, layout), used))| {
                !layout.is_opaque()
                    && usize::from(layout.modules) < MAX_MODULES
                    && used.modules >= usize::from(layout.modules)
                    && self.reads_per_pass[*index] > 0.0
                    && candidate.entries > 0.0
            })
            .map(|(index, ((candidate, layout), _))| {
                let modules = usize::from(layout.modules);
                let next = InUse {
                    modules: modules + 1,
                    extra: 0,
                };
                let now = InUse { modules, extra: 0 };
                let gain = self.reads_per_pass[index]
                    * (pass_rate(candidate, now) - pass_rate(candidate, next));
                (
                    index,
                    gain / self.placed[index].2.file_bytes().max(1) as f64,
                )
            })
            .collect();
        wanting.sort_by(|a, b| b.1.total_cmp(&a.1));
        wanting.truncate(REBUILD_CANDIDATES);
        wanting.into_iter().map(|(index, _)| index).collect()
    }

    /// The rebuild of file `index`, priced: the greedy choice made again as if the file had six
    /// modules on disk; `None` if it would use no more than it has or avoid no reads.
    fn price(
        &self,
        index: usize,
        reads_now: f64,
        tree: &Version,
        pricing: &RebuildPricing,
    ) -> Option<FilterRebuild> {
        let mut widened = self.candidates.clone();
        widened[index].modules = MAX_MODULES;
        let after = select(&widened, self.budget_bits);
        let on_disk = usize::from(self.layouts[index].modules);
        let wanted = after[index].modules + usize::from(after[index].extra > 0);
        if wanted <= on_disk {
            return None;
        }
        let avoided = reads_now - self.reads(&after, &widened);
        if avoided <= 0.0 {
            return None;
        }
        let (level, run_id, file) = self.placed[index];
        let level_bytes: u64 = tree.levels()[level].runs().iter().map(|r| r.bytes()).sum();
        let life_secs = match pricing.flush_bytes_per_sec {
            Some(rate) if rate > 0.0 => (level_bytes as f64 / rate).min(pricing.horizon_secs),
            _ => pricing.horizon_secs,
        };
        // Read the file, write it again with the wanted modules' extra bits.
        let extra_filter_bytes =
            ((wanted - on_disk) as f64 * self.candidates[index].module_bits * file.entries() as f64
                / 8.0)
                .ceil() as u64;
        Some(FilterRebuild {
            level,
            run_id,
            file_number: file.number(),
            avoided_reads_per_sec: avoided,
            life_secs,
            cost_bytes: 2 * file.file_bytes() + extra_filter_bytes,
        })
    }
}

/// How files are weighted in one selection.
enum Weights {
    /// Merlin's zero-result probes.
    Statistics,
    /// Without Merlin: the empty probes per second the engine counted in each file lookups
    /// have reached often enough (`cache_model::empty_probe_rate`); the other files by the
    /// share of the tree's key range they cover (1 without a key space), times the rate the
    /// counted files show per unit of the range they cover (`None`: no file counted, the
    /// shares alone).
    Coverage {
        space: Option<KeySpace>,
        rate_per_coverage: Option<f64>,
        now: Instant,
    },
}

/// The weight of every file in one selection: its reach `z_i` times its predicted chance `c_i`
/// that a false positive costs a device read (DESIGN.md §3.5; `alloc::cache_model`).
struct Weighing {
    reach: Weights,
    cache: CacheModel,
    /// Uniform filters' bits per key: the false-positive rate `c_i` is predicted at.
    reference_bits: f64,
    /// The allocator whose smoothed costs the files keep ([`Elastic::owner`]).
    owner: u64,
}

impl Weighing {
    /// `w_i = z_i * c_i` (DESIGN.md §3.5).
    fn of_file(&self, file: &FileMetadata) -> f64 {
        self.reach.of_file(file) * self.false_positive_cost(file)
    }

    /// `c_i`: what a false positive in `file` costs in device reads, at the false-positive
    /// rate uniform filters at the budget would give it (its predicted miss chance, plus the
    /// measured price of the cached rest), averaged geometrically over about the file's newest
    /// [`COST_HORIZON_PROBES`] probes (DESIGN.md §3.5 "Cache misses, smoothed").
    fn false_positive_cost(&self, file: &FileMetadata) -> f64 {
        let pass = file
            .filter_family()
            .false_positive_rate(self.reference_bits);
        let measured = self.cache.false_positive_cost(file, pass);
        file.state()
            .smoothed(self.owner, measured, COST_HORIZON_PROBES)
    }
}

impl Weights {
    /// `z_i`: the lookups that reach the file and find nothing, as a share or a count.
    fn of_file(&self, file: &FileMetadata) -> f64 {
        match self {
            Weights::Statistics => file
                .state()
                .access_estimate()
                .map_or(0.0, |estimate| estimate.z.max(0.0)),
            Weights::Coverage {
                space,
                rate_per_coverage,
                now,
            } => {
                let counted = rate_per_coverage
                    .and_then(|_| empty_probe_rate(&file.state().lookup_counts(*now)));
                counted.unwrap_or_else(|| {
                    Weights::coverage(space.as_ref(), file) * rate_per_coverage.unwrap_or(1.0)
                })
            }
        }
    }

    /// The share of the key range `file` covers (1 without a key space).
    fn coverage(space: Option<&KeySpace>, file: &FileMetadata) -> f64 {
        space.map_or(1.0, |space| {
            space.coverage(file.smallest_user_key(), file.largest_user_key())
        })
    }

    /// The coverage weights of `tree`: the key space, and the empty probes per second per unit
    /// of coverage over the files lookups have reached often enough.
    fn coverage_of(tree: &Version) -> Weights {
        let space = KeySpace::of_tree(tree);
        let now = Instant::now();
        let (mut rate, mut covered) = (0.0, 0.0);
        for (_, _, file) in tree.files() {
            if let Some(counted) = empty_probe_rate(&file.state().lookup_counts(now)) {
                rate += counted;
                covered += Weights::coverage(space.as_ref(), file);
            }
        }
        Weights::Coverage {
            space,
            rate_per_coverage: (covered > 0.0).then(|| rate / covered),
            now,
        }
    }

    /// What a job output's weight of `share` of the key range is in this weighing's units.
    fn of_share(&self, share: f64) -> f64 {
        match self {
            Weights::Coverage {
                rate_per_coverage: Some(rate),
                ..
            } => share * rate,
            _ => share,
        }
    }
}

impl FilterAllocator for Elastic {
    fn name(&self) -> String {
        match self.budget_bytes {
            Some(bytes) => format!("elastic({}, {bytes} bytes)", self.bits_per_key_target),
            None => format!("elastic({})", self.bits_per_key_target),
        }
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.bits_per_key_target
    }

    fn allocate(&self, tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        let (selection, bits) = self.plan(tree, job);
        self.store_selection(Arc::new(selection));
        bits
    }

    /// The file's memo when it carries the current tag; else `Elastic::remember_modules_in_use`.
    /// The miss path stays out of line so that the hit, taken by nearly every probe, needs no
    /// saved registers: 14 instructions per probe instead of 24 (callgrind, docs/BENCHMARKS.md
    /// "The absent-key gap after present keys").
    fn filter_modules_in_use(&self, _run_id: u64, file: &FileMetadata) -> ModulesInUse {
        // The tag first, then the selection: a memo tagged `generation` then holds a choice at
        // least as new as that selection (`store_selection` stores, then moves the tag on).
        let tag = self.memo_tag.load(AtomicOrdering::Acquire);
        match ProbeMemo::decode_tagged(tag, file.state().allocator_memo()) {
            Some(in_use) => in_use,
            None => self.remember_modules_in_use(file),
        }
    }

    fn budget_guard(&self) -> Option<&dyn BudgetGuard> {
        Some(self)
    }

    fn live_decisions(&self) -> Option<&dyn LiveDecisions> {
        Some(self)
    }

    fn module_sizing(&self) -> Option<&dyn ModuleSizing> {
        Some(self)
    }

    /// Rebuilds whenever there is a budget to spend.
    fn filter_rebuilds(&self) -> Option<&dyn FilterRebuilds> {
        (self.bits_per_key_target > 0.0).then_some(self as &dyn FilterRebuilds)
    }
}

impl BudgetGuard for Elastic {
    /// The budget itself: the modules in use never hold more (DESIGN.md §3.5's hard cap).
    fn bits_per_key_cap(&self) -> f64 {
        self.bits_per_key_target
    }

    fn filter_budget_bytes(&self) -> Option<u64> {
        self.budget_bytes
    }
}

impl ModuleSizing for Elastic {
    fn filter_module_bits_per_key(&self, output_level: usize) -> f64 {
        self.output_module_bits(output_level)
    }

    fn bits_per_key_in_use(&self, file: &FileMetadata) -> f64 {
        self.layout(file)
            .map_or(0.0, |layout| layout.bits_in_use(file))
    }

    fn module_bits_per_key_of(&self, file: &FileMetadata) -> f64 {
        self.layout(file).map_or(0.0, |layout| layout.module_bits)
    }
}

impl FilterRebuilds for Elastic {
    fn filter_rebuild(&self, tree: &Version, pricing: &RebuildPricing) -> Option<FilterRebuild> {
        self.price_rebuild(tree, pricing)
    }
}

impl LiveDecisions for Elastic {
    /// The cache-miss weights change with the reads, statistics or not.
    fn refreshes_without_statistics(&self) -> bool {
        true
    }

    fn policy_state(&self) -> Option<PolicyState> {
        Some(PolicyState {
            owner: OWNER.to_string(),
            bytes: self.selection.load().encode(),
        })
    }

    /// Re-divides the budget by the current weights (access estimates and cache misses; in
    /// memory, the next job logs it). A job that stored a selection meanwhile wins.
    fn refresh(&self, tree: &Version) {
        let known = self.selection.load_full();
        // Only a selection of exactly this tree's files is re-divided: a lookup may hold an
        // older tree than the job that stored the selection (its outputs not yet in `tree`, or
        // its inputs still there), and re-dividing that tree would drop the outputs' modules.
        let mut files = 0;
        for (_, _, file) in tree.files() {
            if !known.files.contains_key(&file.number()) {
                return;
            }
            files += 1;
        }
        if files != known.files.len() {
            return;
        }
        let selection = Arc::new(self.reselect(tree, &known));
        if *selection != *known {
            let previous = self.selection.compare_and_swap(&known, selection);
            if Arc::ptr_eq(&previous, &known) {
                self.retag();
            }
        }
    }

    /// Resumes with the state the manifest holds. If the tree holds files the state does not
    /// name (a switch from another allocator, or no state at all), they join as opaque filters
    /// and the budget is divided again.
    fn restore(&self, tree: &Version) {
        let stored = tree
            .policy_state(OWNER)
            .and_then(Selection::decode)
            .unwrap_or_default();
        let live: Vec<u64> = tree.files().map(|(_, _, file)| file.number()).collect();
        let complete = live.iter().all(|number| stored.files.contains_key(number));
        let mut selection = Selection {
            files: live
                .iter()
                .filter_map(|number| stored.files.get(number).map(|layout| (*number, *layout)))
                .collect(),
        };
        if !complete {
            selection = self.reselect(tree, &selection);
        }
        self.store_selection(Arc::new(selection));
    }
}

#[cfg(test)]
#[path = "elastic_tests.rs"]
mod tests;
