//! Table files (sorted string tables): the immutable, sorted runs that memtables are flushed to and
//! compactions write.
//!
//! A table file is a sequence of checksummed blocks followed by a fixed-length footer, e.g.:
//!
//! ```text
//! data block 0 | data block 1 | ... | filter block (optional) | properties block | index block | footer
//! ```
//!
//! A filter split into modules (DESIGN.md §1, `filter/modular.rs`) takes one block per module plus a
//! small modular filter index block in place of the single filter block (table format version 2).
//!
//! A large table (its whole-file index or a filter module above
//! `Options::partition_metadata_above_bytes`) has its index and filter split into partitions
//! located by a top-level index instead (table format version 3):
//!
//! ```text
//! data block 0 | ... | filter partition* | properties block | index partition* | top-level index | footer
//! ```
//!
//! Readers never assume that order: they read the footer at the end of the file and follow its
//! handles, so the table builder may place the non-data blocks as it likes.
//!
//! * [`block`] owns the layout *inside* a block (sorted entries with prefix-compressed keys and
//!   restart points), its builder and its iterator. Data, index and properties blocks all use it.
//! * [`format`](mod@format) owns what surrounds blocks: block handles (offset and size), the 5-byte trailer
//!   (type and CRC-32C) after every block, and the footer that locates the index, filter and
//!   properties blocks.
//!
//! * [`partition`] owns partitioned index and filters: when a file is partitioned, the top-level
//!   index's format, and its in-memory search.
//!
//! * [`compression`] owns how a block's contents are stored (uncompressed, LZ4 or Zstd, named by
//!   the trailer's type byte) and the per-level [`CompressionPolicy`](compression::CompressionPolicy).
//!
//! Their doc comments describe every byte; `docs/FORMAT.md` copies them.

pub(crate) mod block;
pub(crate) mod builder;
pub(crate) mod compression;
pub(crate) mod format;
pub(crate) mod index_iter;
pub(crate) mod iter;
pub(crate) mod partition;
pub(crate) mod properties;
pub(crate) mod readahead;
pub(crate) mod reader;
pub(crate) mod salvage;
pub(crate) mod separator;
pub(crate) mod table_cache;

pub(crate) use builder::TableBuilder;
pub(crate) use table_cache::{TableCache, TableSlot};

/// Name of table file `number` (`000012.sst`).
pub(crate) fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod tests;
