//! Operation streams: the seeded sequences of inserts, updates, point reads, empty point reads,
//! scans and read-modify-writes that the benchmark's mixed workloads issue. Pure functions of
//! `(mix, distribution, record count, operation count, seed)`; nothing here touches a database,
//! so the same stream drives Strata and its peers.
//!
//! An [`Op`] names keys by index, as `workload.rs`'s [`KeyFormat`](super::workload::KeyFormat)
//! does: key `i` is `i` in zero-padded decimal; an empty lookup names a *gap*
//! ([`KeyFormat::missing_key`](super::workload::KeyFormat::missing_key)), an absent key between
//! present keys `10 * gap - 1` and `10 * gap`. Build the key format for
//! [`StreamSpec::key_capacity`] keys so that inserted keys fit its width.
//!
//! # Phases
//! A run is a *load* ([`LoadOrder`]: inserts of keys `0..record_count`, each once, in a seeded
//! pseudo-random order) followed by the *operations* ([`OpStream`]: `operation_count` operations
//! of the mix). The stream tracks the number of keys: every read, update, scan start and
//! read-modify-write targets a key `< n` that exists, an insert creates key `n` (so inserts
//! are the consecutive indexes `record_count, record_count + 1, ...`), and empty lookups probe
//! gaps inside `0..n`.
//!
//! # Mixes
//! * YCSB core workloads A–F ([`Mix::YcsbA`] ...), exactly as YCSB's `workloads/workload[a-f]`
//!   files and `CoreWorkload` define them: an operation type is drawn independently per
//!   operation from the proportions (YCSB's `DiscreteGenerator`), the key from the request
//!   distribution, which applies to reads, updates, scans and read-modify-writes (never to
//!   inserts).
//! * The Mnemosyne paper's synthetic workloads, type I and type II ([`Mix::MnemosyneTypeI`],
//!   [`Mix::MnemosyneTypeII`]), see their docs for the sentences used. As in the workload
//!   generator the paper used (KV-Bench, the paper's reference 71) the operations are drawn *without
//!   replacement* from the exact counts (KV-Bench's `get_choice` picks a type with probability
//!   proportional to its remaining count), so a stream has exactly the stated numbers of each.
//! * db_bench's `readrandom`, `overwrite`, `readhot` and `readwhilewriting`.
//!
//! # Deviation from YCSB's key order
//! YCSB names record `i` `user<fnvhash64(i)>` (`insertorder=hashed`, its default), so both the
//! load and the inserts of workloads D and E land at pseudo-random places in key order. Here key
//! `i` sorts at position `i` (the harness's key format), so the load uses a seeded pseudo-random
//! permutation of `0..record_count` instead (the same randomness in key order, without YCSB's
//! hash collisions), but inserts during the operations *append* at the end of the key range.
//! With 5% inserts (D, E) this changes little; for Mnemosyne type I (25% inserts after the
//! load) new data is confined to the top of the key range while KV-Bench inserts random keys.

// Until the harness (being refactored around an `Engine` trait) runs these streams, only the
// tests use them.

use std::fmt;
use std::str::FromStr;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Serialize, Serializer};

use super::distribution::{KeyChooser, KeyDistribution};

/// One operation, keys named by index (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Writes a new key: always the next index, `n`.
    Insert(u64),
    /// Writes a new value to an existing key.
    Update(u64),
    /// Point lookup of an existing key.
    Read(u64),
    /// Point lookup of an absent key inside the key range: `KeyFormat::missing_key(gap)`,
    /// with `gap` in `1..=(n - 1) / 10` (0, a key below the first key, while `n <= 10`).
    ReadMissing(u64),
    /// Seeks to existing key `start`, then reads `len` entries (YCSB's scan: `len` records).
    Scan {
        /// The first key.
        start: u64,
        /// Number of entries to read.
        len: u64,
        /// The range is closed at key `start + len` (exclusive), as EcoTune's short scans are
        /// ("a closed key range ... usually only 1 target key"): an engine with range filters
        /// can leave out every run that holds no key of it. Open (false) for YCSB's scans and
        /// EcoTune's long scans (`Seek + K Next`).
        bounded: bool,
    },
    /// Reads an existing key, then writes it (YCSB's read-modify-write).
    ReadModifyWrite(u64),
}

impl Op {
    /// The operation's type.
    #[allow(
        dead_code,
        reason = "used by the tests and the Mnemosyne presets' checks"
    )]
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Insert(_) => OpKind::Insert,
            Op::Update(_) => OpKind::Update,
            Op::Read(_) => OpKind::Read,
            Op::ReadMissing(_) => OpKind::ReadMissing,
            Op::Scan { .. } => OpKind::Scan,
            Op::ReadModifyWrite(_) => OpKind::ReadModifyWrite,
        }
    }
}

/// The types of [`Op`], for counting and for proportions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// [`Op::Read`].
    Read,
    /// [`Op::ReadMissing`].
    ReadMissing,
    /// [`Op::Update`].
    Update,
    /// [`Op::Insert`].
    Insert,
    /// [`Op::Scan`].
    Scan,
    /// [`Op::ReadModifyWrite`].
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in the order of [`Proportions::weights`].
    pub const ALL: [OpKind; 6] = [
        OpKind::Read,
        OpKind::ReadMissing,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];
}

/// The fraction of a mix's operations of each kind (they sum to 1).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Proportions {
    /// [`Op::Read`].
    pub read: f64,
    /// [`Op::ReadMissing`].
    pub read_missing: f64,
    /// [`Op::Update`].
    pub update: f64,
    /// [`Op::Insert`].
    pub insert: f64,
    /// [`Op::Scan`].
    pub scan: f64,
    /// [`Op::ReadModifyWrite`].
    pub read_modify_write: f64,
}

impl Proportions {
    /// The proportions in the order of [`OpKind::ALL`].
    pub fn weights(&self) -> [f64; 6] {
        [
            self.read,
            self.read_missing,
            self.update,
            self.insert,
            self.scan,
            self.read_modify_write,
        ]
    }

    /// The proportion of `kind`.
    #[allow(dead_code, reason = "used by the tests")]
    pub fn of(&self, kind: OpKind) -> f64 {
        match kind {
            OpKind::Read => self.read,
            OpKind::ReadMissing => self.read_missing,
            OpKind::Update => self.update,
            OpKind::Insert => self.insert,
            OpKind::Scan => self.scan,
            OpKind::ReadModifyWrite => self.read_modify_write,
        }
    }
}

/// Key and value sizes a mix is defined with (the harness's `--key-size` and `--value-size`
/// defaults for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[allow(
    dead_code,
    reason = "the paper's entry sizes, checked against the presets in tests"
)]
pub struct EntrySize {
    /// Key length in bytes.
    pub key_bytes: usize,
    /// Value length in bytes.
    pub value_bytes: usize,
}

/// YCSB's `maxscanlength` default; workload E draws scan lengths uniformly from
/// `1..=YCSB_MAX_SCAN_LENGTH` (`scanlengthdistribution=uniform`, `minscanlength=1`).
pub const YCSB_MAX_SCAN_LENGTH: u64 = 100;

/// Table 3's type II empty-lookup fraction when none is given: 0.5, the value of the paper's
/// §5 Merlin experiment ("we only show our experimental results for Z = 0.5"); §6 runs Z in
/// {0, 0.5, 1}.
pub const MNEMOSYNE_DEFAULT_EMPTY_FRACTION: f64 = 0.5;

/// Entries a long range scan of the EcoTune workload reads: EcoTune's `Seek + 100 Next`, taken as
/// 100 entries from the sought key.
pub const ECOTUNE_LONG_SCAN_NEXTS: u64 = 100;

/// The long-range-scan ratio of `ecotune` without a parameter: 0.3, the ratio EcoTune's paper
/// reports its largest gains around.
pub const ECOTUNE_DEFAULT_LONG_SCAN_RATIO: f64 = 0.3;

/// The Mnemosyne paper's "normal distribution with σ = 3.0" (§6) in this module's units: mean
/// 0.5 and standard deviation `3.0 / 62` of the key domain. KV-Bench (the paper's generator)
/// draws a normal over the sorted key pool with standard deviation `σ * pool_size / 62` when
/// string keys are enabled (62 = the size of its key alphabet; `load_gen.cc`), and its mean
/// percentile defaults to 0.5. This reading assumes string keys, which the paper's 32- and
/// 128-byte keys suggest; with KV-Bench's integer keys `σ = 3.0` would be three times the
/// domain, i.e. nearly uniform.
#[allow(
    dead_code,
    reason = "the paper's normal distribution, for `--distribution` users and the tests"
)]
pub const MNEMOSYNE_NORMAL: KeyDistribution = KeyDistribution::Normal {
    mean: 0.5,
    stddev: 3.0 / 62.0,
};

/// A named mix of operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mix {
    /// YCSB workload A (update heavy): 50% reads, 50% updates; zipfian.
    YcsbA,
    /// YCSB workload B (read mostly): 95% reads, 5% updates; zipfian.
    YcsbB,
    /// YCSB workload C (read only): 100% reads; zipfian.
    YcsbC,
    /// YCSB workload D (read latest): 95% reads, 5% inserts; latest.
    YcsbD,
    /// YCSB workload E (short ranges): 95% scans of 1..=100 records (uniform), 5% inserts;
    /// zipfian scan starts.
    YcsbE,
    /// YCSB workload F (read-modify-write): 50% reads, 50% read-modify-writes; zipfian.
    YcsbF,
    /// Mnemosyne (Zhu et al., SIGMOD 2025) workload type I. §6, Table 3: "I: 40M inserts mixed
    /// with 40M empty queries, and 20M updates", "each key-value pair consists of 128 bytes
    /// (32 bytes for the key and 96 bytes for the value)"; §1, Fig. 1 caption: "starting with
    /// 20M inserts, followed by 40M queries, 20M inserts and 20M updates that are mixed in an
    /// interleaved manner"; §6: "Since the first 20M operations consist of pure inserts".
    ///
    /// Encoded as: the load is the first half of the inserts (`record_count`, 20M at scale 1);
    /// the operations are 25% inserts, 50% empty point lookups and 25% updates (20M : 40M :
    /// 20M), drawn without replacement from the exact counts. The key distribution applies
    /// to the lookups ("queries in these two workload types can follow different
    /// distributions (i.e., uniform or normal distribution with σ = 3.0)"); updates are
    /// uniform, KV-Bench's default update distribution.
    ///
    /// Ambiguity: for Fig. 11 §6 also says "approximately 5M inserts are ingested first,
    /// followed by another 5M inserts interleaved with other operations", which contradicts
    /// the 20M of the same paragraph and of Fig. 1; this follows Table 3 and Fig. 1 (half the
    /// inserts first). Choose `record_count` and `operation_count` to run the other reading.
    MnemosyneTypeI,
    /// Mnemosyne workload type II. §6, Table 3: "II: 21M inserts, followed by mixed 31M
    /// queries and 10M updates", "each key-value pair comprises 512 bytes (128 bytes for the
    /// key and 384 bytes for the value)"; "We test six workloads of type II where we vary the
    /// query distribution and the fraction of empty queries (Z)" with Z in {0, 0.5, 1}.
    ///
    /// Encoded as: the load is the 21M inserts; the operations are 31/41 point lookups, of
    /// which a fraction `empty_fraction` (Z) are empty, and 10/41 updates, drawn without
    /// replacement from the exact counts. The key distribution applies to the lookups, existing
    /// and empty alike; updates are uniform.
    MnemosyneTypeII {
        /// Fraction of the point lookups that find nothing (the paper's Z), in `[0, 1]`.
        empty_fraction: f64,
    },
    /// db_bench `readrandom`: point lookups of random existing keys.
    ReadRandom,
    /// db_bench `overwrite`: random existing keys rewritten (with replacement).
    Overwrite,
    /// LevelDB db_bench `readhot`: point lookups confined to the first 1% of the keys,
    /// `(num + 99) / 100` of them (`ReadHot`: `k = rand.Uniform((FLAGS_num + 99) / 100)`).
    /// The distribution applies within that range.
    ReadHot,
    /// db_bench `readwhilewriting`: the measured stream is `readrandom`'s; a background writer
    /// overwrites random existing keys at full speed ([`StreamSpec::background_writes`]).
    ReadWhileWriting,
    /// EcoTune's workload (EcoTune §6, "Workload"): each query is a long range scan (a seek and
    /// [`ECOTUNE_LONG_SCAN_NEXTS`] nexts) with probability `r`, else a seek or a get of a random
    /// existing key with probability `(1 - r) / 2` each; a background writer overwrites random
    /// keys at a steady rate (`strata bench --write-rate`).
    EcoTune {
        /// The long-range-scan ratio `r`, in `[0, 1]`.
        long_scan_ratio: f64,
    },
}

impl Mix {
    /// Every mix with its default parameters (type II at Z = 0.5).
    pub const ALL: [Mix; 13] = [
        Mix::YcsbA,
        Mix::YcsbB,
        Mix::YcsbC,
        Mix::YcsbD,
        Mix::YcsbE,
        Mix::YcsbF,
        Mix::MnemosyneTypeI,
        Mix::MnemosyneTypeII {
            empty_fraction: MNEMOSYNE_DEFAULT_EMPTY_FRACTION,
        },
        Mix::ReadRandom,
        Mix::Overwrite,
        Mix::ReadHot,
        Mix::ReadWhileWriting,
        Mix::EcoTune {
            long_scan_ratio: ECOTUNE_DEFAULT_LONG_SCAN_RATIO,
        },
    ];

    /// The name without parameters (`ycsb-a`, `mnemosyne-ii`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Mix::YcsbA => "ycsb-a",
            Mix::YcsbB => "ycsb-b",
            Mix::YcsbC => "ycsb-c",
            Mix::YcsbD => "ycsb-d",
            Mix::YcsbE => "ycsb-e",
            Mix::YcsbF => "ycsb-f",
            Mix::MnemosyneTypeI => "mnemosyne-i",
            Mix::MnemosyneTypeII { .. } => "mnemosyne-ii",
            Mix::ReadRandom => "readrandom",
            Mix::Overwrite => "overwrite",
            Mix::ReadHot => "readhot",
            Mix::ReadWhileWriting => "readwhilewriting",
            Mix::EcoTune { .. } => "ecotune",
        }
    }

    /// The fraction of operations of each kind (YCSB's `*proportion` properties).
    pub fn proportions(&self) -> Proportions {
        let none = Proportions::default();
        match *self {
            Mix::YcsbA => Proportions {
                read: 0.5,
                update: 0.5,
                ..none
            },
            Mix::YcsbB => Proportions {
                read: 0.95,
                update: 0.05,
                ..none
            },
            Mix::YcsbC | Mix::ReadRandom | Mix::ReadHot | Mix::ReadWhileWriting => {
                Proportions { read: 1.0, ..none }
            }
            Mix::YcsbD => Proportions {
                read: 0.95,
                insert: 0.05,
                ..none
            },
            Mix::YcsbE => Proportions {
                scan: 0.95,
                insert: 0.05,
                ..none
            },
            Mix::YcsbF => Proportions {
                read: 0.5,
                read_modify_write: 0.5,
                ..none
            },
            Mix::MnemosyneTypeI => Proportions {
                insert: 20.0 / 80.0,
                read_missing: 40.0 / 80.0,
                update: 20.0 / 80.0,
                ..none
            },
            Mix::MnemosyneTypeII { empty_fraction } => Proportions {
                read: 31.0 / 41.0 * (1.0 - empty_fraction),
                read_missing: 31.0 / 41.0 * empty_fraction,
                update: 10.0 / 41.0,
                ..none
            },
            Mix::Overwrite => Proportions {
                update: 1.0,
                ..none
            },
            // Long scans and seeks are both scans; `OpStream` tells them apart by length.
            Mix::EcoTune { long_scan_ratio } => Proportions {
                read: (1.0 - long_scan_ratio) / 2.0,
                scan: long_scan_ratio + (1.0 - long_scan_ratio) / 2.0,
                ..none
            },
        }
    }

    /// The key distribution the mix is defined with: YCSB's `requestdistribution` (zipfian
    /// 0.99, latest 0.99 for D); uniform for the Mnemosyne mixes (the paper's other choice is
    /// [`MNEMOSYNE_NORMAL`]) and for db_bench's.
    pub fn default_distribution(&self) -> KeyDistribution {
        match self {
            Mix::YcsbA | Mix::YcsbB | Mix::YcsbC | Mix::YcsbE | Mix::YcsbF => {
                KeyDistribution::YCSB_ZIPFIAN
            }
            Mix::YcsbD => KeyDistribution::YCSB_LATEST,
            _ => KeyDistribution::Uniform,
        }
    }

    /// The entry size the mix is defined with. YCSB: a 1000-byte value (`fieldcount` 10 ×
    /// `fieldlength` 100, stored as one value) and a 24-byte key (`user` + up to 20 digits;
    /// the Mnemosyne paper's §6 counts 24 bytes). Mnemosyne: 32 + 96 bytes (type I), 128 + 384
    /// bytes (type II). db_bench: 16 + 100 bytes.
    #[allow(
        dead_code,
        reason = "the paper's sizes, checked against the presets in tests"
    )]
    pub fn entry_size(&self) -> EntrySize {
        let (key_bytes, value_bytes) = match self {
            Mix::YcsbA | Mix::YcsbB | Mix::YcsbC | Mix::YcsbD | Mix::YcsbE | Mix::YcsbF => {
                (24, 1000)
            }
            Mix::MnemosyneTypeI => (32, 96),
            Mix::MnemosyneTypeII { .. } => (128, 384),
            Mix::ReadRandom
            | Mix::Overwrite
            | Mix::ReadHot
            | Mix::ReadWhileWriting
            | Mix::EcoTune { .. } => (16, 100),
        };
        EntrySize {
            key_bytes,
            value_bytes,
        }
    }

    /// `(record_count, operation_count)` of the Mnemosyne paper's runs times `scale` (1.0 is
    /// the paper's size: type I 20M + 80M, type II 21M + 41M); `None` for the other mixes,
    /// whose sizes are the harness's `--num` and `--reads`.
    pub fn paper_sizes(&self, scale: f64) -> Option<(u64, u64)> {
        let (records, operations) = match self {
            Mix::MnemosyneTypeI => (20e6, 80e6),
            Mix::MnemosyneTypeII { .. } => (21e6, 41e6),
            _ => return None,
        };
        let scaled = |count: f64| ((count * scale).round() as u64).max(1);
        Some((scaled(records), scaled(operations)))
    }

    /// True where operation types are drawn without replacement from exact counts (KV-Bench),
    /// false where each is drawn independently (YCSB, db_bench).
    fn exact_counts(&self) -> bool {
        matches!(self, Mix::MnemosyneTypeI | Mix::MnemosyneTypeII { .. })
    }

    /// True where updates are uniform whatever the distribution (KV-Bench's default update
    /// distribution; the paper only varies the queries' distribution).
    fn uniform_updates(&self) -> bool {
        self.exact_counts()
    }

    /// `Err` if a parameter is out of range.
    fn validate(&self) -> Result<(), String> {
        match *self {
            Mix::MnemosyneTypeII { empty_fraction } if !(0.0..=1.0).contains(&empty_fraction) => {
                Err(format!(
                    "mnemosyne-ii: the empty-lookup fraction Z must be in [0, 1], got \
                     {empty_fraction}"
                ))
            }
            Mix::EcoTune { long_scan_ratio } if !(0.0..=1.0).contains(&long_scan_ratio) => Err(
                format!("ecotune: the long-scan ratio r must be in [0, 1], got {long_scan_ratio}"),
            ),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mix::MnemosyneTypeII { empty_fraction } => {
                write!(f, "{}:{empty_fraction}", self.name())
            }
            Mix::EcoTune { long_scan_ratio } => write!(f, "{}:{long_scan_ratio}", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

impl FromStr for Mix {
    type Err = String;

    /// `ycsb-a` ... `ycsb-f`, `mnemosyne-i`, `mnemosyne-ii[:Z]`, `readrandom`, `overwrite`,
    /// `readhot`, `readwhilewriting`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (name, param) = match text.split_once(':') {
            Some((name, param)) => (name, Some(param)),
            None => (text, None),
        };
        if let ("mnemosyne-ii", Some(param)) = (name, param) {
            let empty_fraction = param.trim().parse::<f64>().map_err(|_| {
                format!("mix {text:?}: the empty-lookup fraction {param:?} is not a number")
            })?;
            let mix = Mix::MnemosyneTypeII { empty_fraction };
            mix.validate()?;
            return Ok(mix);
        }
        if let ("ecotune", Some(param)) = (name, param) {
            let long_scan_ratio = param.trim().parse::<f64>().map_err(|_| {
                format!("mix {text:?}: the long-scan ratio {param:?} is not a number")
            })?;
            let mix = Mix::EcoTune { long_scan_ratio };
            mix.validate()?;
            return Ok(mix);
        }
        let mix = Mix::ALL
            .into_iter()
            .find(|mix| mix.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Mix::ALL.iter().map(|mix| mix.name()).collect();
                format!(
                    "unknown mix {text:?}: expected one of {} (mnemosyne-ii takes :Z, the \
                     fraction of empty lookups; ecotune :r, the long-scan ratio)",
                    names.join(", ")
                )
            })?;
        if param.is_some() {
            return Err(format!("mix {text:?}: {name} takes no parameter"));
        }
        Ok(mix)
    }
}

impl Serialize for Mix {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Everything an operation stream is a pure function of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StreamSpec {
    /// The mix.
    pub mix: Mix,
    /// Key distribution of the mix's reads (and, for YCSB, updates, scans and
    /// read-modify-writes).
    pub distribution: KeyDistribution,
    /// Keys loaded before the operations (YCSB's `recordcount`; the harness's `--num`).
    pub record_count: u64,
    /// Operations after the load (YCSB's `operationcount`; the harness's `--reads`).
    pub operation_count: u64,
    /// The seed.
    pub seed: u64,
}

impl StreamSpec {
    /// A spec with the mix's default distribution.
    pub fn new(mix: Mix, record_count: u64, operation_count: u64, seed: u64) -> Self {
        StreamSpec {
            mix,
            distribution: mix.default_distribution(),
            record_count,
            operation_count,
            seed,
        }
    }

    /// The same spec with another key distribution.
    pub fn with_distribution(self, distribution: KeyDistribution) -> Self {
        StreamSpec {
            distribution,
            ..self
        }
    }

    /// An upper bound on the number of keys the stream can reach: `record_count` plus the
    /// inserts (exact for the Mnemosyne mixes; `operation_count` when inserts are drawn
    /// independently). Size the key format for this many keys.
    pub fn key_capacity(&self) -> u64 {
        let proportions = self.mix.proportions();
        let inserts = if proportions.insert == 0.0 {
            0
        } else if self.mix.exact_counts() {
            exact_counts(proportions.weights(), self.operation_count)[3]
        } else {
            self.operation_count
        };
        self.record_count.saturating_add(inserts)
    }

    /// The load: inserts of keys `0..record_count` in a seeded pseudo-random order.
    pub fn load(&self) -> LoadOrder {
        LoadOrder::new(self.record_count, self.seed)
    }

    /// The operations after the load.
    pub fn ops(&self) -> Result<OpStream, String> {
        OpStream::new(self)
    }

    /// The background writer of `readwhilewriting` (`None` for the other mixes): an unbounded
    /// stream of updates of uniformly random existing keys, as db_bench's `BGWriter` draws
    /// `rand % num` whatever the readers' distribution. Its seed differs from the readers'.
    pub fn background_writes(&self) -> Result<Option<OpStream>, String> {
        if !matches!(self.mix, Mix::ReadWhileWriting | Mix::EcoTune { .. }) {
            return Ok(None);
        }
        let writer = StreamSpec {
            mix: Mix::Overwrite,
            distribution: KeyDistribution::Uniform,
            operation_count: u64::MAX,
            seed: self.seed ^ label_hash("readwhilewriting-writer"),
            ..*self
        };
        writer.ops().map(Some)
    }
}

/// FNV-1a of a label, mixed into seeds so that streams of different roles are independent.
fn label_hash(label: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in label.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `total` split in proportion to `weights`: count `i` is `round(total * c_i) -
/// round(total * c_{i-1})` for the cumulative proportions `c`, so the counts sum to `total`
/// exactly and each is within 1 of `total * weight / sum`.
fn exact_counts(weights: [f64; 6], total: u64) -> [u64; 6] {
    let sum: f64 = weights.iter().sum();
    let last = last_weighted(&weights);
    let mut counts = [0u64; 6];
    let (mut running, mut boundary) = (0.0, 0u64);
    for (kind, (&weight, count)) in weights.iter().zip(counts.iter_mut()).enumerate() {
        running += weight;
        let next = if kind >= last {
            total
        } else {
            ((total as f64 * running / sum).round() as u64).clamp(boundary, total)
        };
        *count = next - boundary;
        boundary = next;
    }
    counts
}

/// The index of the last kind with a positive weight (0 if none has).
fn last_weighted(weights: &[f64; 6]) -> usize {
    weights
        .iter()
        .rposition(|&weight| weight > 0.0)
        .unwrap_or(0)
}

/// How the next operation's type is picked.
#[derive(Debug, Clone)]
enum KindChoice {
    /// Independently per operation (YCSB's `DiscreteGenerator`): cumulative proportions, and
    /// the last kind with a weight (for a uniform draw at or past the last bound by rounding).
    Independent { cumulative: [f64; 6], last: usize },
    /// Without replacement: the remaining count of each kind (KV-Bench's `get_choice`).
    Exact { remaining: [u64; 6] },
}

impl KindChoice {
    fn new(weights: [f64; 6], exact: bool, operation_count: u64) -> Self {
        if exact {
            return KindChoice::Exact {
                remaining: exact_counts(weights, operation_count),
            };
        }
        let sum: f64 = weights.iter().sum();
        let mut cumulative = [0.0; 6];
        let mut running = 0.0;
        for (bound, weight) in cumulative.iter_mut().zip(weights) {
            running += weight / sum;
            *bound = running;
        }
        KindChoice::Independent {
            cumulative,
            last: last_weighted(&weights),
        }
    }

    fn next(&mut self, rng: &mut StdRng) -> OpKind {
        let chosen = match self {
            KindChoice::Independent { cumulative, last } => {
                let u: f64 = rng.gen();
                cumulative
                    .iter()
                    .position(|&bound| u < bound)
                    .unwrap_or(*last)
            }
            KindChoice::Exact { remaining } => {
                let total: u64 = remaining.iter().sum();
                // total >= 1 while operations remain: the counts sum to the operation count.
                let mut draw = rng.gen_range(0..total.max(1));
                let mut chosen = 0;
                for (kind, count) in remaining.iter_mut().enumerate() {
                    if draw < *count {
                        *count -= 1;
                        chosen = kind;
                        break;
                    }
                    draw -= *count;
                }
                chosen
            }
        };
        OpKind::ALL[chosen]
    }
}

/// The keys `readhot` reads of `keys`: the first `(keys + 99) / 100` (db_bench's first percent).
pub fn hot_keys(keys: u64) -> u64 {
    keys.div_ceil(100)
}

/// Which keys the reads of the mix may target.
#[derive(Debug, Clone, Copy)]
enum ReadRange {
    /// All existing keys.
    All,
    /// The first `(n + 99) / 100` keys (db_bench `readhot`).
    HotPercent,
}

/// The operations of a [`StreamSpec`], an iterator of [`Op`]; see the module docs.
#[derive(Debug, Clone)]
pub struct OpStream {
    rng: StdRng,
    choice: KindChoice,
    /// Reads, scans, read-modify-writes (and YCSB's updates).
    targets: KeyChooser,
    /// Updates, where they do not follow the distribution.
    uniform_updates: Option<KeyChooser>,
    /// Gaps of empty lookups.
    gaps: KeyChooser,
    read_range: ReadRange,
    /// For EcoTune's workload, the chance that a scan is a long one (else a seek, 1 entry);
    /// `None`: YCSB's uniform lengths.
    long_scan_share: Option<f64>,
    /// Keys `0..keys` exist.
    keys: u64,
    remaining: u64,
}

impl OpStream {
    /// The stream for `spec`; `Err` if a parameter is out of range or no key is loaded.
    pub fn new(spec: &StreamSpec) -> Result<Self, String> {
        spec.mix.validate()?;
        spec.distribution.validate()?;
        if spec.record_count == 0 {
            return Err(format!(
                "{}: the operations need at least one loaded key (record count 0)",
                spec.mix
            ));
        }
        let proportions = spec.mix.proportions();
        let weights = proportions.weights();
        let choice = KindChoice::new(weights, spec.mix.exact_counts(), spec.operation_count);
        // YCSB's CoreWorkload sizes the scrambled zipfian's key space for the inserts to come:
        // recordcount + 2 * operationcount * insertproportion ("2 is fudge factor").
        let expected_inserts = spec.operation_count as f64 * proportions.insert;
        let key_space = spec
            .record_count
            .saturating_add((2.0 * expected_inserts) as u64);
        let read_range = match spec.mix {
            Mix::ReadHot => ReadRange::HotPercent,
            _ => ReadRange::All,
        };
        let uniform_updates = if spec.mix.uniform_updates() {
            Some(KeyChooser::new(KeyDistribution::Uniform, key_space)?)
        } else {
            None
        };
        Ok(OpStream {
            rng: StdRng::seed_from_u64(spec.seed ^ label_hash(spec.mix.name())),
            choice,
            targets: KeyChooser::new(spec.distribution, key_space)?,
            uniform_updates,
            gaps: KeyChooser::new(spec.distribution, key_space / 10)?,
            read_range,
            long_scan_share: match spec.mix {
                Mix::EcoTune { long_scan_ratio } => {
                    let scans = long_scan_ratio + (1.0 - long_scan_ratio) / 2.0;
                    Some(if scans > 0.0 {
                        long_scan_ratio / scans
                    } else {
                        0.0
                    })
                }
                _ => None,
            },
            keys: spec.record_count,
            remaining: spec.operation_count,
        })
    }

    /// Number of keys that exist so far (loaded plus inserted).
    #[allow(dead_code, reason = "used by the tests")]
    pub fn keys(&self) -> u64 {
        self.keys
    }

    fn read_target(&mut self) -> u64 {
        let range = match self.read_range {
            ReadRange::All => self.keys,
            ReadRange::HotPercent => hot_keys(self.keys),
        };
        self.targets.next(&mut self.rng, range)
    }

    fn missing_gap(&mut self) -> u64 {
        // Gap g lies between keys 10g - 1 and 10g, so gaps 1..=(n - 1) / 10 are inside 0..n.
        match (self.keys - 1) / 10 {
            0 => 0,
            gaps => 1 + self.gaps.next(&mut self.rng, gaps),
        }
    }
}

impl Iterator for OpStream {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let op = match self.choice.next(&mut self.rng) {
            OpKind::Read => Op::Read(self.read_target()),
            OpKind::ReadMissing => Op::ReadMissing(self.missing_gap()),
            OpKind::Update => {
                let chooser = match &mut self.uniform_updates {
                    Some(uniform) => uniform,
                    None => &mut self.targets,
                };
                Op::Update(chooser.next(&mut self.rng, self.keys))
            }
            OpKind::Insert => {
                let index = self.keys;
                self.keys += 1;
                Op::Insert(index)
            }
            OpKind::Scan => {
                let start = self.targets.next(&mut self.rng, self.keys);
                let (len, bounded) = match self.long_scan_share {
                    Some(share) if self.rng.gen::<f64>() < share => {
                        (ECOTUNE_LONG_SCAN_NEXTS, false)
                    }
                    // EcoTune's short seek: the closed range `[start, start + 1)`.
                    Some(_) => (1, true),
                    None => (self.rng.gen_range(1..=YCSB_MAX_SCAN_LENGTH), false),
                };
                Op::Scan {
                    start,
                    len,
                    bounded,
                }
            }
            OpKind::ReadModifyWrite => {
                Op::ReadModifyWrite(self.targets.next(&mut self.rng, self.keys))
            }
        };
        Some(op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.remaining) {
            Ok(remaining) => (remaining, Some(remaining)),
            Err(_) => (usize::MAX, None),
        }
    }
}

/// The load phase: [`Op::Insert`] of every key in `0..record_count` exactly once, in a seeded
/// pseudo-random order (YCSB's default `insertorder=hashed`; see the module docs). The order
/// is a keyed bijection (a Feistel network on the smallest power of two `>= record_count`,
/// cycle-walking back into range), so it needs no memory and [`LoadOrder::index`] is random
/// access, e.g. for loaders that split the range between threads.
#[derive(Debug, Clone)]
pub struct LoadOrder {
    permutation: Permutation,
    next: u64,
}

impl LoadOrder {
    /// The load of `record_count` keys for `seed`.
    pub fn new(record_count: u64, seed: u64) -> Self {
        LoadOrder {
            permutation: Permutation::new(record_count, seed ^ label_hash("load")),
            next: 0,
        }
    }

    /// Number of keys loaded.
    pub fn len(&self) -> u64 {
        self.permutation.len
    }

    /// True when there is nothing to load.
    #[allow(dead_code, reason = "pairs with `len` (clippy::len_without_is_empty)")]
    pub fn is_empty(&self) -> bool {
        self.permutation.len == 0
    }

    /// The key index inserted by load operation `position` (`position < len()`).
    pub fn index(&self, position: u64) -> u64 {
        self.permutation.apply(position)
    }
}

impl Iterator for LoadOrder {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if self.next >= self.permutation.len {
            return None;
        }
        let index = self.permutation.apply(self.next);
        self.next += 1;
        Some(Op::Insert(index))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining = self.permutation.len - self.next;
        match usize::try_from(remaining) {
            Ok(remaining) => (remaining, Some(remaining)),
            Err(_) => (usize::MAX, None),
        }
    }
}

/// A keyed pseudo-random bijection on `0..len`.
#[derive(Debug, Clone)]
struct Permutation {
    len: u64,
    /// Bits of the Feistel domain `0..2^bits`, split into high and low halves.
    high_bits: u32,
    low_bits: u32,
    round_keys: [u64; Permutation::ROUNDS],
}

impl Permutation {
    const ROUNDS: usize = 6;

    fn new(len: u64, seed: u64) -> Self {
        // Smallest power of two >= len (at least 4, so both halves have a bit): cycle-walking
        // then takes fewer than 2 rounds of the network on average.
        let bits = (u64::BITS - len.saturating_sub(1).leading_zeros()).max(2);
        let mut state = seed;
        let round_keys = std::array::from_fn(|_| splitmix64(&mut state));
        Permutation {
            len,
            high_bits: bits - bits / 2,
            low_bits: bits / 2,
            round_keys,
        }
    }

    /// The image of `position` (`position < len`).
    fn apply(&self, position: u64) -> u64 {
        if self.len <= 1 {
            return position;
        }
        // Cycle-walking: the network permutes 0..2^bits; following its cycle from a value in
        // 0..len returns to 0..len, which makes the restriction a bijection on 0..len.
        let mut value = position;
        loop {
            value = self.encrypt(value);
            if value < self.len {
                return value;
            }
        }
    }

    /// One pass of the (unbalanced) Feistel network on `0..2^bits`: each round maps
    /// `(high, low)` to `(low, high ^ F(low))`, which is invertible whatever `F` is.
    fn encrypt(&self, mut value: u64) -> u64 {
        let high_mask = (1u64 << self.high_bits) - 1;
        let low_mask = (1u64 << self.low_bits) - 1;
        for key in self.round_keys {
            let high = value >> self.low_bits;
            let low = value & low_mask;
            let mut mixed = low ^ key;
            let round = splitmix64(&mut mixed) & high_mask;
            value = (low << self.high_bits) | (high ^ round);
        }
        value
    }
}

/// SplitMix64: advances `state` and returns a well-mixed 64-bit value.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet, HashMap};

    use super::*;
    use crate::bench::workload::KeyFormat;

    const RECORDS: u64 = 10_000;
    const OPERATIONS: u64 = 100_000;

    fn count_kinds(stream: impl Iterator<Item = Op>) -> BTreeMap<OpKind, u64> {
        let mut counts = BTreeMap::new();
        for op in stream {
            *counts.entry(op.kind()).or_insert(0) += 1;
        }
        counts
    }

    /// Every mix, plus type II at Z = 0 and Z = 1.
    fn all_mixes() -> Vec<Mix> {
        let mut mixes = Mix::ALL.to_vec();
        for empty_fraction in [0.0, 1.0] {
            mixes.push(Mix::MnemosyneTypeII { empty_fraction });
        }
        mixes
    }

    #[test]
    fn every_mix_produces_its_proportions() {
        for mix in all_mixes() {
            let spec = StreamSpec::new(mix, RECORDS, OPERATIONS, 42);
            let counts = count_kinds(spec.ops().expect("valid"));
            let proportions = mix.proportions();
            assert!((proportions.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let exact = exact_counts(proportions.weights(), OPERATIONS);
            for (slot, kind) in OpKind::ALL.into_iter().enumerate() {
                let observed = counts.get(&kind).copied().unwrap_or(0);
                let p = proportions.of(kind);
                let expected = OPERATIONS as f64 * p;
                if mix.exact_counts() {
                    // Drawn without replacement: exactly the stated counts.
                    assert_eq!(observed, exact[slot], "{mix} {kind:?}");
                    assert!((observed as f64 - expected).abs() <= 1.0, "{mix} {kind:?}");
                } else {
                    // Independent draws: binomial(OPERATIONS, p), 5 sigma.
                    let sigma = (OPERATIONS as f64 * p * (1.0 - p)).sqrt();
                    assert!(
                        (observed as f64 - expected).abs() <= 5.0 * sigma,
                        "{mix} {kind:?}: {observed} vs {expected} +- 5 * {sigma:.1}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_encoded_mixes_are_the_published_ones() {
        let p = |mix: Mix| mix.proportions();
        assert_eq!((p(Mix::YcsbA).read, p(Mix::YcsbA).update), (0.5, 0.5));
        assert_eq!((p(Mix::YcsbB).read, p(Mix::YcsbB).update), (0.95, 0.05));
        assert_eq!(p(Mix::YcsbC).read, 1.0);
        assert_eq!((p(Mix::YcsbD).read, p(Mix::YcsbD).insert), (0.95, 0.05));
        assert_eq!((p(Mix::YcsbE).scan, p(Mix::YcsbE).insert), (0.95, 0.05));
        assert_eq!(
            (p(Mix::YcsbF).read, p(Mix::YcsbF).read_modify_write),
            (0.5, 0.5)
        );
        assert_eq!(Mix::YcsbD.default_distribution().to_string(), "latest:0.99");
        assert_eq!(
            Mix::YcsbE.default_distribution().to_string(),
            "zipfian:0.99"
        );
        assert_eq!(Mix::YcsbA.entry_size().value_bytes, 1000);
        // Table 3 at full scale: type I 40M inserts (20M loaded), 40M empty, 20M updates.
        let (records, operations) = Mix::MnemosyneTypeI.paper_sizes(1.0).expect("paper");
        assert_eq!((records, operations), (20_000_000, 80_000_000));
        let spec = StreamSpec::new(Mix::MnemosyneTypeI, records, operations, 1);
        let counts = exact_counts(Mix::MnemosyneTypeI.proportions().weights(), operations);
        assert_eq!(counts, [0, 40_000_000, 20_000_000, 20_000_000, 0, 0]);
        assert_eq!(spec.key_capacity(), 40_000_000);
        // Type II: 21M loaded, then 31M queries (Z empty) and 10M updates.
        let type_ii = Mix::MnemosyneTypeII {
            empty_fraction: 0.5,
        };
        let (records, operations) = type_ii.paper_sizes(1.0).expect("paper");
        assert_eq!((records, operations), (21_000_000, 41_000_000));
        let counts = exact_counts(type_ii.proportions().weights(), operations);
        assert_eq!(counts, [15_500_000, 15_500_000, 10_000_000, 0, 0, 0]);
        assert_eq!(type_ii.paper_sizes(0.01), Some((210_000, 410_000)));
        assert_eq!(
            type_ii.entry_size().key_bytes + type_ii.entry_size().value_bytes,
            512
        );
        let type_i = Mix::MnemosyneTypeI.entry_size();
        assert_eq!(type_i.key_bytes + type_i.value_bytes, 128);
        assert_eq!(Mix::YcsbA.paper_sizes(1.0), None);
    }

    /// Replays `spec`'s stream, checking every key against the keys that exist at that point.
    fn check_targets(spec: &StreamSpec, format: &KeyFormat) -> u64 {
        let mut keys = spec.record_count;
        let mut key = Vec::new();
        let mut neighbour = Vec::new();
        let mut stream = spec.ops().expect("valid");
        for op in stream.by_ref() {
            match op {
                Op::Insert(index) => {
                    assert_eq!(index, keys, "{spec:?}: inserts are consecutive new keys");
                    keys += 1;
                }
                Op::Read(index) | Op::Update(index) | Op::ReadModifyWrite(index) => {
                    assert!(index < keys, "{spec:?}: {op:?} with {keys} keys");
                }
                Op::Scan {
                    start,
                    len,
                    bounded,
                } => {
                    // Only EcoTune's short seeks are closed ranges, of one key.
                    let ecotune = matches!(spec.mix, Mix::EcoTune { .. });
                    assert!(!bounded || (ecotune && len == 1), "{spec:?}: {op:?}");
                    assert!(start < keys, "{spec:?}: {op:?} with {keys} keys");
                    assert!((1..=YCSB_MAX_SCAN_LENGTH).contains(&len));
                }
                Op::ReadMissing(gap) => {
                    assert!(gap >= 1 && gap <= (keys - 1) / 10, "{spec:?}: gap {gap}");
                    assert!(gap <= format.missing_gaps());
                    // Strictly between two keys that exist now.
                    format.missing_key(gap, &mut key);
                    format.present_key(10 * gap - 1, &mut neighbour);
                    assert!(neighbour < key);
                    format.present_key(10 * gap, &mut neighbour);
                    assert!(key < neighbour && 10 * gap < keys);
                }
            }
        }
        assert_eq!(stream.keys(), keys);
        assert!(keys <= spec.key_capacity());
        keys
    }

    #[test]
    fn operations_target_only_existing_keys_and_inserts_append() {
        let distributions = [
            "uniform",
            "zipfian",
            "zipfian-unscrambled",
            "normal",
            "latest",
        ];
        for mix in all_mixes() {
            for distribution in distributions {
                let distribution: KeyDistribution = distribution.parse().expect("valid");
                let spec = StreamSpec::new(mix, 1_000, 20_000, 7).with_distribution(distribution);
                let format = KeyFormat::new(spec.key_capacity(), 16).expect("valid");
                let keys = check_targets(&spec, &format);
                if mix.proportions().insert > 0.0 {
                    assert!(keys > spec.record_count, "{mix}: no insert");
                }
            }
        }
        // Few keys: no gap inside the range yet, so empty lookups use gap 0 until n > 10.
        let spec = StreamSpec::new(Mix::MnemosyneTypeI, 3, 100, 1);
        let mut keys = 3;
        for op in spec.ops().expect("valid") {
            match op {
                Op::Insert(_) => keys += 1,
                Op::ReadMissing(gap) => assert_eq!(gap == 0, keys <= 10, "{keys} keys"),
                _ => {}
            }
        }
    }

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        for mix in all_mixes() {
            let stream = |seed| {
                StreamSpec::new(mix, RECORDS, 2_000, seed)
                    .ops()
                    .expect("valid")
                    .collect::<Vec<Op>>()
            };
            assert_eq!(stream(1), stream(1), "{mix}");
            assert_ne!(stream(1), stream(2), "{mix}");
        }
        let load = |seed| LoadOrder::new(1_000, seed).collect::<Vec<Op>>();
        assert_eq!(load(1), load(1));
        assert_ne!(load(1), load(2));
    }

    #[test]
    fn load_inserts_every_key_once_in_a_scattered_order() {
        for records in [0u64, 1, 2, 3, 4, 5, 17, 1_000, 65_536, 100_001] {
            let load = StreamSpec::new(Mix::YcsbA, records, 0, 3).load();
            assert_eq!(load.len(), records);
            let order: Vec<u64> = load
                .clone()
                .map(|op| match op {
                    Op::Insert(index) => index,
                    other => panic!("load emitted {other:?}"),
                })
                .collect();
            let distinct: BTreeSet<u64> = order.iter().copied().collect();
            assert_eq!(distinct.len() as u64, records);
            assert!(order.iter().all(|&index| index < records));
            for (position, &index) in order.iter().enumerate().step_by(97) {
                assert_eq!(load.index(position as u64), index);
            }
            if records >= 1_000 {
                assert_ne!(order, (0..records).collect::<Vec<_>>());
                // The first 1% of the load is spread over the key range like a random sample:
                // its mean is within 5 standard errors of the middle.
                let sample = &order[..(records / 100) as usize];
                let mean = sample.iter().sum::<u64>() as f64 / sample.len() as f64;
                let standard_error = records as f64 / 12f64.sqrt() / (sample.len() as f64).sqrt();
                assert!(
                    (mean - records as f64 / 2.0).abs() < 5.0 * standard_error,
                    "mean of the first 1%: {mean} of {records}"
                );
            }
        }
    }

    #[test]
    fn ycsb_e_scan_lengths_are_uniform_from_1_to_100() {
        let spec = StreamSpec::new(Mix::YcsbE, RECORDS, OPERATIONS, 5);
        let mut lengths = HashMap::new();
        let mut scans = 0u64;
        for op in spec.ops().expect("valid") {
            if let Op::Scan { len, .. } = op {
                *lengths.entry(len).or_insert(0u64) += 1;
                scans += 1;
            }
        }
        assert_eq!(lengths.len(), 100);
        assert_eq!(lengths.keys().min(), Some(&1));
        assert_eq!(lengths.keys().max(), Some(&100));
        // Chi-square over the 100 lengths, 99 degrees of freedom, 5 sigma.
        let expected = scans as f64 / 100.0;
        let chi_square: f64 = lengths
            .values()
            .map(|&count| (count as f64 - expected).powi(2) / expected)
            .sum();
        assert!(
            chi_square < 99.0 + 5.0 * 198f64.sqrt(),
            "chi-square {chi_square}"
        );
    }

    #[test]
    fn ycsb_d_reads_favour_the_newest_keys() {
        let spec = StreamSpec::new(Mix::YcsbD, RECORDS, OPERATIONS, 6);
        let mut stream = spec.ops().expect("valid");
        let (mut reads, mut newest, mut recent) = (0u64, 0u64, 0u64);
        while let Some(op) = stream.next() {
            if let Op::Read(index) = op {
                let keys = stream.keys();
                reads += 1;
                if index == keys - 1 {
                    newest += 1;
                }
                if index >= keys - keys / 10 {
                    recent += 1;
                }
            }
        }
        // p(newest) = 1 / zeta(n, 0.99), about 0.10 for n ~ 10^4; the newest 10% of the keys
        // get about 3/4 of the reads (zeta(10^3) / zeta(10^4)).
        let share = newest as f64 / reads as f64;
        assert!((0.09..0.11).contains(&share), "newest key share {share}");
        assert!(recent as f64 / reads as f64 > 0.7);
    }

    #[test]
    fn readhot_reads_only_the_first_percent() {
        let spec = StreamSpec::new(Mix::ReadHot, 123_456, 50_000, 8);
        let hot = 123_456u64.div_ceil(100);
        let mut seen = BTreeSet::new();
        for op in spec.ops().expect("valid") {
            let Op::Read(index) = op else {
                panic!("readhot emitted {op:?}")
            };
            assert!(index < hot);
            seen.insert(index);
        }
        // Uniform over 1235 keys: 50k draws leave none out (expected misses ~ 1e-14).
        assert_eq!(seen.len() as u64, hot);
    }

    #[test]
    fn mnemosyne_queries_follow_the_distribution_and_updates_stay_uniform() {
        let mix = Mix::MnemosyneTypeII {
            empty_fraction: 0.5,
        };
        let spec = StreamSpec::new(mix, 100_000, OPERATIONS, 9).with_distribution(MNEMOSYNE_NORMAL);
        let middle = |position: f64| (position - 0.5).abs() < 0.05;
        let (mut reads, mut reads_middle, mut gaps, mut gaps_middle) = (0, 0, 0, 0);
        let (mut updates, mut updates_middle) = (0u64, 0u64);
        for op in spec.ops().expect("valid") {
            match op {
                Op::Read(index) => {
                    reads += 1;
                    reads_middle += u64::from(middle(index as f64 / 100_000.0));
                }
                Op::ReadMissing(gap) => {
                    gaps += 1;
                    gaps_middle += u64::from(middle(gap as f64 / 10_000.0));
                }
                Op::Update(index) => {
                    updates += 1;
                    updates_middle += u64::from(middle(index as f64 / 100_000.0));
                }
                _ => {}
            }
        }
        // Normal with sigma = 3/62 of the domain: the middle 10% (+-1.03 sigma) holds ~70%.
        for (what, inside, total) in [("reads", reads_middle, reads), ("gaps", gaps_middle, gaps)] {
            let share = inside as f64 / total as f64;
            assert!((0.67..0.73).contains(&share), "{what}: {share}");
        }
        let share = updates_middle as f64 / updates as f64;
        assert!((0.09..0.11).contains(&share), "updates: {share}");
    }

    #[test]
    fn readwhilewriting_has_an_unbounded_uniform_background_writer() {
        let spec = StreamSpec::new(Mix::ReadWhileWriting, RECORDS, 1_000, 10)
            .with_distribution("zipfian".parse().expect("valid"));
        let reads: Vec<Op> = spec.ops().expect("valid").collect();
        assert!(reads
            .iter()
            .all(|op| matches!(op, Op::Read(i) if *i < RECORDS)));
        let writer = spec.background_writes().expect("valid").expect("a writer");
        assert_eq!(writer.size_hint().1, usize::try_from(u64::MAX).ok());
        let mut buckets = [0u64; 10];
        for op in writer.take(100_000) {
            let Op::Update(index) = op else {
                panic!("writer emitted {op:?}")
            };
            assert!(index < RECORDS);
            buckets[(index * 10 / RECORDS) as usize] += 1;
        }
        // Uniform, not the readers' zipfian: every tenth of the keys gets 10% +- 5 sigma.
        let sigma = (100_000.0f64 * 0.1 * 0.9).sqrt();
        assert!(buckets
            .iter()
            .all(|&count| (count as f64 - 10_000.0).abs() < 5.0 * sigma));
        assert!(StreamSpec::new(Mix::ReadRandom, 10, 10, 1)
            .background_writes()
            .expect("valid")
            .is_none());
    }

    /// EcoTune's workload: long scans (100 entries) with probability r, seeks (1 entry) and gets
    /// with (1 - r) / 2 each, and a background writer of uniform updates.
    #[test]
    fn ecotune_mixes_long_scans_seeks_and_gets_in_the_papers_ratios() {
        for r in [0.0, 0.1, 0.3, 0.5, 1.0] {
            let mix: Mix = format!("ecotune:{r}").parse().expect("parses");
            assert_eq!(mix, Mix::EcoTune { long_scan_ratio: r });
            let spec = StreamSpec::new(mix, RECORDS, 100_000, 5);
            let (mut long, mut seeks, mut gets) = (0u64, 0u64, 0u64);
            for op in spec.ops().expect("valid") {
                match op {
                    Op::Scan {
                        start,
                        len: ECOTUNE_LONG_SCAN_NEXTS,
                        bounded: false,
                    } if start < RECORDS => long += 1,
                    Op::Scan {
                        start,
                        len: 1,
                        bounded: true,
                    } if start < RECORDS => seeks += 1,
                    Op::Read(index) if index < RECORDS => gets += 1,
                    other => panic!("ecotune:{r} emitted {other:?}"),
                }
            }
            let sigma = (100_000.0f64 * 0.25).sqrt();
            let near =
                |count: u64, share: f64| (count as f64 - 100_000.0 * share).abs() <= 5.0 * sigma;
            assert!(near(long, r), "r {r}: {long} long scans");
            assert!(near(seeks, (1.0 - r) / 2.0), "r {r}: {seeks} seeks");
            assert!(near(gets, (1.0 - r) / 2.0), "r {r}: {gets} gets");
            assert!(spec.background_writes().expect("valid").is_some());
        }
        assert_eq!(
            "ecotune".parse::<Mix>(),
            Ok(Mix::EcoTune {
                long_scan_ratio: ECOTUNE_DEFAULT_LONG_SCAN_RATIO
            })
        );
        for bad in ["ecotune:1.5", "ecotune:-0.1", "ecotune:x"] {
            assert!(bad.parse::<Mix>().is_err(), "{bad}");
        }
    }

    #[test]
    fn mixes_parse_display_and_serialize_as_the_same_string() {
        for mix in all_mixes() {
            let text = mix.to_string();
            assert_eq!(text.parse::<Mix>(), Ok(mix), "{text}");
            assert_eq!(
                serde_json::to_string(&mix).expect("serializes"),
                format!("\"{text}\"")
            );
        }
        assert_eq!(
            "mnemosyne-ii".parse::<Mix>(),
            Ok(Mix::MnemosyneTypeII {
                empty_fraction: 0.5
            })
        );
        for (text, reason) in [
            ("ycsb-g", "unknown mix \"ycsb-g\": expected one of ycsb-a"),
            ("mnemosyne-ii:1.5", "must be in [0, 1]"),
            ("mnemosyne-ii:half", "is not a number"),
            ("ycsb-a:1", "ycsb-a takes no parameter"),
        ] {
            let error = text.parse::<Mix>().expect_err(text);
            assert!(error.contains(reason), "{text}: {error}");
        }
        let spec = StreamSpec::new(Mix::YcsbD, 5, 6, 7);
        let json = serde_json::to_value(spec).expect("serializes");
        assert_eq!(json["mix"], "ycsb-d");
        assert_eq!(json["distribution"], "latest:0.99");
        let bad = StreamSpec::new(Mix::YcsbA, 0, 10, 1);
        assert!(bad
            .ops()
            .expect_err("no keys")
            .contains("at least one loaded key"));
    }
}
