//! Strata: an embeddable LSM-tree key-value store.
#![deny(clippy::unwrap_used)]
// Scaffolding: modules land one by one; removed once the engine wires every part.
#![allow(dead_code)]

pub mod alloc;
pub(crate) mod cache;
pub(crate) mod coding;
pub mod compaction;
mod db;
pub mod env;
mod error;
pub(crate) mod filter;
pub(crate) mod iterator;
pub(crate) mod key;
pub(crate) mod memtable;
mod options;
pub mod stats;
pub(crate) mod table;
pub mod version;
pub(crate) mod wal;

pub use db::{Db, DbIterator, Key, Snapshot, Value};
pub use error::{Error, Result};
pub use options::{Options, WriteOptions, MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES};
pub use stats::Stats;
pub use wal::{WalRecoveryMode, WriteBatch};
