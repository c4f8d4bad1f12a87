//! Writes a table file: data blocks, then the filter, properties and index blocks, then the footer
//! (`docs/FORMAT.md`). Entries must arrive in internal-key order.
//!
//! The filter's bits per key is chosen at `finish`, when the file's final entry count is known
//! (SPEC §3: "the answer is given when the file is finished"), so the builder keeps one 8-byte hash
//! per distinct user key until then.
//!
//! When the file's bits per key exceeds the module size set with
//! [`TableBuilder::set_filter_module_bits`] (the filter budget `bpk_target`), the filter is split
//! into independently seeded Bloom modules, each its own block, located by a modular filter index
//! block (SPEC §1; the split rule and the index format are in `filter/modular.rs`). With one module
//! the file is byte for byte what it was before modular filters existed.
//!
//! Data and index blocks go through the file's compressor ([`TableBuilder::set_compression`],
//! chosen by the caller from `Options::compression` for the file's level; `compression.rs`), which
//! stores a block compressed only when that saves an eighth of it. Filter blocks, the modular
//! filter index and the properties block are always stored raw (see `compression.rs` for why).

use std::path::PathBuf;

use super::block::BlockBuilder;
use super::compression::{BlockCompressor, Compression, CompressionCounts};
use super::format::{append_block, append_stored_block, BlockHandle, Footer};
use super::properties::TableProperties;
use super::separator::{index_separator, index_successor};
use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::filter::bloom::{key_hash, BloomFilterBuilder};
use crate::filter::modular::{encode_index, module_bits_per_key, module_seed};
use crate::key::{parse_internal_key, user_key};

/// What a finished table file holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableSummary {
    pub(crate) file_bytes: u64,
    pub(crate) properties: TableProperties,
    /// What compressing the data and index blocks did.
    pub(crate) compression: CompressionCounts,
}

/// Streams sorted entries into a new table file.
pub(crate) struct TableBuilder {
    path: PathBuf,
    file: Box<dyn WritableFile>,
    block_bytes: usize,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    scratch: Vec<u8>,
    offset: u64,
    entries: u64,
    data_blocks: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    smallest_sequence: u64,
    largest_sequence: u64,
    key_hashes: Vec<u64>,
    /// The last flushed data block's last key and handle, waiting for the next block's first key
    /// to choose the index key between them (`separator.rs`).
    pending_index_entry: Option<(Vec<u8>, BlockHandle)>,
    /// Bits per key of one filter module; `f64::INFINITY` (the default) never splits.
    filter_module_bits: f64,
    /// Compresses data and index blocks; `Compression::None` unless set.
    compressor: BlockCompressor,
}

impl TableBuilder {
    pub(crate) fn new(
        path: PathBuf,
        file: Box<dyn WritableFile>,
        block_bytes: usize,
        restart_interval: usize,
    ) -> Self {
        TableBuilder {
            path,
            file,
            block_bytes,
            data_block: BlockBuilder::new(restart_interval),
            // Index entries are looked up by binary search over restarts; a restart every entry
            // keeps seeks exact without linear scans.
            index_block: BlockBuilder::new(1),
            scratch: Vec::new(),
            offset: 0,
            entries: 0,
            data_blocks: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            smallest_sequence: u64::MAX,
            largest_sequence: 0,
            key_hashes: Vec::new(),
            pending_index_entry: None,
            filter_module_bits: f64::INFINITY,
            compressor: BlockCompressor::new(Compression::None),
        }
    }

    /// Puts a restart point every `interval` entries of the index block (1, the default, stores
    /// every index key whole; `Options::index_block_restart_interval`). Values below 1 mean 1.
    pub(crate) fn set_index_restart_interval(&mut self, interval: usize) {
        self.index_block = BlockBuilder::new(interval.max(1));
    }

    /// Splits a filter of more than `module_bits_per_key` bits per key into modules of that size
    /// (SPEC §1, Mnemosyne §4.2); callers pass the filter budget `bpk_target`. Not a positive
    /// finite number (the default is infinity) means never split.
    pub(crate) fn set_filter_module_bits(&mut self, module_bits_per_key: f64) {
        self.filter_module_bits = module_bits_per_key;
    }

    /// Compresses the file's data and index blocks with `compression` (default none). Set before
    /// the first `add`.
    pub(crate) fn set_compression(&mut self, compression: Compression) {
        if compression != self.compressor.compression() {
            self.compressor = BlockCompressor::new(compression);
        }
    }

    /// Appends an entry; `key` is an internal key greater than every key added before.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let parsed = parse_internal_key(key).ok_or_else(|| {
            Error::corruption(
                &self.path,
                self.offset,
                "table builder got a malformed internal key",
            )
        })?;
        if self.entries == 0 {
            self.smallest = key.to_vec();
        }
        if self.entries == 0 || user_key(&self.largest) != parsed.user_key {
            self.key_hashes.push(key_hash(parsed.user_key));
        }
        if let Some((last_key, handle)) = self.pending_index_entry.take() {
            self.add_index_entry(&index_separator(&last_key, key), handle);
        }
        self.smallest_sequence = self.smallest_sequence.min(parsed.sequence);
        self.largest_sequence = self.largest_sequence.max(parsed.sequence);
        self.largest.clear();
        self.largest.extend_from_slice(key);
        self.data_block.add(key, value);
        self.entries += 1;
        if self.data_block.estimated_size() >= self.block_bytes {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Writes a data or index block, compressed if that pays.
    fn write_compressible_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        let (stored, block_type) = self.compressor.compress(contents);
        self.scratch.clear();
        append_stored_block(&mut self.scratch, stored, block_type);
        let handle = BlockHandle::new(self.offset, stored.len() as u64);
        self.file.append(&self.scratch)?;
        self.offset += self.scratch.len() as u64;
        Ok(handle)
    }

    /// Writes a block uncompressed (filter, modular filter index, properties).
    fn write_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        self.scratch.clear();
        append_block(&mut self.scratch, contents);
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        self.file.append(&self.scratch)?;
        self.offset += self.scratch.len() as u64;
        Ok(handle)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let last_key = self.data_block.last_key().to_vec();
        let contents = self.data_block.finish();
        let handle = self.write_compressible_block(&contents)?;
        self.pending_index_entry = Some((last_key, handle));
        self.data_blocks += 1;
        Ok(())
    }

    fn add_index_entry(&mut self, key: &[u8], handle: BlockHandle) {
        let mut encoded = Vec::with_capacity(BlockHandle::MAX_ENCODED_LEN);
        handle.encode_to(&mut encoded);
        self.index_block.add(key, &encoded);
    }

    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes the file would have if finished now, without filter and index.
    pub(crate) fn estimated_file_bytes(&self) -> u64 {
        self.offset + self.data_block.estimated_size() as u64
    }

    /// Writes the filter modules, one block each (their bits per key summing to `bits_per_key`;
    /// 0 = no filter), the modular filter index if there are two or more modules, then the
    /// properties, index and footer, and fsyncs.
    pub(crate) fn finish(
        mut self,
        bits_per_key: f64,
        level: u64,
        run_id: u64,
    ) -> Result<TableSummary> {
        self.flush_data_block()?;
        if let Some((last_key, handle)) = self.pending_index_entry.take() {
            self.add_index_entry(&index_successor(&last_key), handle);
        }
        let plan = if self.key_hashes.is_empty() {
            Vec::new()
        } else {
            module_bits_per_key(bits_per_key, self.filter_module_bits)
        };
        let mut modules = Vec::with_capacity(plan.len());
        let mut filter_bytes = 0;
        for (index, &module_bits) in plan.iter().enumerate() {
            let mut filter_builder = BloomFilterBuilder::new(module_bits, module_seed(index));
            for &hash in &self.key_hashes {
                filter_builder.add_hash(hash);
            }
            let filter = filter_builder.finish();
            if filter.is_empty() {
                // Not reached (every planned module has keys and bits per key > 0), but a
                // zero-size module block would be unreadable, so none is written.
                continue;
            }
            filter_bytes += filter.len() as u64;
            modules.push(self.write_block(&filter)?);
        }
        let (filter_handle, modular) = match modules.as_slice() {
            [] => (BlockHandle::new(0, 0), false),
            [single] => (*single, false),
            _ => (self.write_block(&encode_index(&modules))?, true),
        };
        // What the modules hold: `bits_per_key` unless it was clamped to the Bloom filter's
        // 64 bits per key per module (`0.0` spelled out: an empty f64 sum may be -0.0).
        let filter_bits_per_key = match plan.as_slice() {
            [] => 0.0,
            modules => modules.iter().sum(),
        };
        let properties = TableProperties {
            entries: self.entries,
            data_blocks: self.data_blocks,
            smallest: std::mem::take(&mut self.smallest),
            largest: std::mem::take(&mut self.largest),
            smallest_sequence: if self.entries == 0 {
                0
            } else {
                self.smallest_sequence
            },
            largest_sequence: self.largest_sequence,
            bits_per_key: filter_bits_per_key,
            filter_bytes,
            level,
            run_id,
            filter_modules: modules.len() as u64,
        };
        let properties_handle = self.write_block(&properties.encode())?;
        let index = self.index_block.finish();
        let index_handle = self.write_compressible_block(&index)?;
        let footer = if modular {
            Footer::with_modular_filter(index_handle, filter_handle, properties_handle)
        } else {
            Footer::new(index_handle, filter_handle, properties_handle)
        }
        .encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.sync()?;
        Ok(TableSummary {
            file_bytes: self.offset,
            properties,
            compression: self.compressor.counts,
        })
    }
}
