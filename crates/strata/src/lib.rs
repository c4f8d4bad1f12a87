//! Strata: an embeddable LSM-tree key-value store whose filter memory and compactions are decided
//! by pluggable policies ([`alloc::FilterAllocator`], [`compaction::CompactionPolicy`]) that read
//! a public, read-only view of the tree ([`version::Version`]).
//!
//! ```
//! use strata::{Db, Options, WriteBatch};
//!
//! # fn main() -> strata::Result<()> {
//! let dir = tempfile::tempdir().expect("temporary directory");
//! let db = Db::open(dir.path(), Options::default().bits_per_key(6.0)?)?;
//! db.put(b"apple", b"red")?;
//! let mut batch = WriteBatch::new();
//! batch.put(b"banana", b"yellow").delete(b"apple");
//! db.write(batch)?; // atomic
//! assert_eq!(db.get(b"banana")?.as_deref(), Some(&b"yellow"[..]));
//! assert_eq!(db.get(b"apple")?, None);
//!
//! let snapshot = db.snapshot();
//! db.put(b"cherry", b"dark red")?;
//! assert_eq!(snapshot.iter().count(), 1); // the snapshot does not see cherry
//! for entry in db.range(b"b".as_slice()..) {
//!     let (key, value) = entry?;
//!     println!("{} = {}", String::from_utf8_lossy(&key), String::from_utf8_lossy(&value));
//! }
//! db.flush()?; // durable in table files and the manifest
//! println!("{}", db.stats());
//! # Ok(())
//! # }
//! ```
#![deny(clippy::unwrap_used)]
#![warn(missing_docs)]

pub mod alloc;
/// Wrappers around crate-internal types for the criterion microbenchmarks (`benches/`); only with
/// the `internal-benches` feature, and not part of the API.
#[cfg(feature = "internal-benches")]
#[doc(hidden)]
pub mod bench_internals;
pub(crate) mod cache;
pub mod check;
pub(crate) mod coding;
#[cfg(test)]
mod counting_allocator;
/// Tests count allocations and heap bytes per thread (`counting_allocator`).
#[cfg(test)]
#[global_allocator]
static GLOBAL_ALLOCATOR: counting_allocator::CountingAllocator =
    counting_allocator::CountingAllocator;
pub mod compaction;
mod db;
pub mod env;
mod error;
pub(crate) mod filter;
/// One entry point per on-disk decoder for the `cargo fuzz` targets in `fuzz/` and the proptests
/// that call the same code; only with the `fuzzing` feature (and in this crate's tests), and not
/// part of the API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz_targets;
pub(crate) mod iterator;
pub(crate) mod key;
mod limits;
pub(crate) mod memtable;
pub mod model;
mod options;
pub mod options_file;
pub mod policy;
mod random;
pub mod repair;
pub mod sim;
pub mod solver;
pub mod stats;
pub(crate) mod sync;
pub(crate) mod table;
#[cfg(test)]
mod testdata;
pub mod version;
pub(crate) mod wal;

pub use check::{check, table_entries, CheckReport, Problem, Severity, TableEntry};
pub use db::{Db, DbIterator, Key, Snapshot, TracedProbe, Value};
pub use error::{Error, Result};
pub use filter::{FilterFamilies, FilterFamily, FilterInUse, FilterLayout, RIBBON_MIN_KEYS};
pub use options::{
    Options, WriteOptions, DEFAULT_FILTER_REBUILD_BYTES_PER_SEC, MAX_BATCH_BYTES, MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
};
pub use options_file::OptionsFile;
pub use repair::{repair, BlockLocation, RepairMode, RepairReport, SalvagedTable};
pub use stats::merlin::AccessEstimate;
pub use stats::{Stats, WorkloadMix, WorkloadTotals};
pub use table::compression::{Compression, CompressionPolicy, DEFAULT_ZSTD_LEVEL};
pub use wal::{WalRecoveryMode, WriteBatch};
