//! Writes a table file: data blocks, then the filter, properties and index blocks, then the footer
//! (`docs/FORMAT.md`). Entries must arrive in internal-key order.
//!
//! The filter's bits per key is chosen at `finish`, when the file's final entry count is known
//! (DESIGN.md §3: "the answer is given when the file is finished"), so the builder keeps one 8-byte hash
//! per distinct user key until then.
//!
//! When the file's bits per key exceeds the module size set with
//! [`TableBuilder::set_filter_module_bits`] (the filter budget `bpk_target`), the filter is split
//! into independently seeded Bloom modules, each its own block, located by a modular filter index
//! block (DESIGN.md §1; the split rule and the index format are in `filter/modular.rs`). With one module
//! the file is byte for byte what it was before modular filters existed.
//!
//! The index is built at `finish`, from one entry per data block (its separator, handle and the
//! range of key hashes it holds) kept until then, because its encoding depends on the whole file
//! (`format.rs`): its keys are user keys unless some user key continues from one data block
//! into the next, and its handles are delta-encoded.
//!
//! A file whose whole-file index block or largest filter module would exceed the threshold set
//! with [`TableBuilder::set_metadata_partitioning`] is written with a partitioned index and
//! filter instead (`partition.rs`, layout 3): the entries are cut into partitions of
//! `metadata_block_bytes`, each remembering which key hashes its data blocks hold.
//!
//! Data and index blocks go through the file's compressor ([`TableBuilder::set_compression`],
//! chosen by the caller from `Options::compression` for the file's level; `compression.rs`), which
//! stores a block compressed only when that saves an eighth of it. Filter blocks, the modular
//! filter index and the properties block are always stored raw (see `compression.rs` for why).

use std::ops::Range;
use std::path::PathBuf;

use super::block::{BlockBuilder, HandleCoding, IndexBlockBuilder};
use super::compression::{BlockCompressor, Compression, CompressionCounts};
use super::format::{
    append_block, append_stored_block, BlockHandle, Footer, IndexFormat, IndexKeys,
};
use super::partition::{encode_partition_value, MetadataPartitioning};
use super::properties::TableProperties;
use super::separator::{index_separator, index_successor};
use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::filter::bloom::key_hash;
use crate::filter::modular::{encode_index, module_bits_per_key, module_seed};
use crate::filter::range::RangeFilterBuilder;
use crate::filter::{FilterFamilies, FilterFamily, FilterLayout};
use crate::key::{parse_internal_key, user_key};

/// What a finished table file holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableSummary {
    pub(crate) file_bytes: u64,
    pub(crate) properties: TableProperties,
    /// What compressing the data and index blocks did.
    pub(crate) compression: CompressionCounts,
    /// The filter's family and key-range partitions (`partition.rs`; 1 for an unpartitioned
    /// file or one without a filter).
    pub(crate) filter_layout: FilterLayout,
}

/// A closed index partition: its block contents, its last index key (as stored) and the range
/// of `TableBuilder::key_hashes` its data blocks hold.
struct IndexPartition {
    contents: Vec<u8>,
    last_key: Vec<u8>,
    hashes: Range<usize>,
}

/// One data block's index entry, kept until `finish`: its separator (an internal key), its
/// handle and the range of `TableBuilder::key_hashes` the block holds.
struct IndexEntry {
    separator: Vec<u8>,
    handle: BlockHandle,
    hashes: Range<usize>,
}

/// Streams sorted entries into a new table file.
pub(crate) struct TableBuilder {
    path: PathBuf,
    file: Box<dyn WritableFile>,
    block_bytes: usize,
    data_block: BlockBuilder,
    index_restart_interval: usize,
    /// Every data block's index entry so far.
    index_entries: Vec<IndexEntry>,
    /// True once a user key continued from one data block into the next: the index then keeps
    /// internal keys.
    user_key_spans_blocks: bool,
    /// The index partitions `finish` cut (the whole index when partitioning is off).
    index_partitions: Vec<IndexPartition>,
    /// Index of the current data block's first user key's hash in `key_hashes`.
    block_first_hash: usize,
    partitioning: MetadataPartitioning,
    scratch: Vec<u8>,
    offset: u64,
    entries: u64,
    data_blocks: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    smallest_sequence: u64,
    largest_sequence: u64,
    key_hashes: Vec<u64>,
    /// The last flushed data block's last key, handle and key-hash range, waiting for the next
    /// block's first key to choose the index key between them (`separator.rs`).
    pending_index_entry: Option<(Vec<u8>, BlockHandle, Range<usize>)>,
    /// Bits per key of one filter module; `f64::INFINITY` (the default) never splits.
    filter_module_bits: f64,
    /// Compresses data and index blocks; `Compression::None` unless set.
    compressor: BlockCompressor,
    /// The filter families to choose the file's from, and whether it is a flush's output
    /// (`FilterFamilies::for_file`).
    filter_families: FilterFamilies,
    flush_output: bool,
    /// True once the last data block is written and the index partitions are cut
    /// ([`TableBuilder::close_data`]); no entry may be added after.
    data_closed: bool,
    /// The file's distinct user keys for its range filter, and the filter's quantum bits
    /// (`Options::range_filter_bits`); `None` builds no range filter.
    range_filter: Option<(RangeFilterBuilder, u32)>,
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
            index_restart_interval: 1,
            index_entries: Vec::new(),
            user_key_spans_blocks: false,
            index_partitions: Vec::new(),
            data_closed: false,
            filter_families: FilterFamilies::default(),
            flush_output: false,
            block_first_hash: 0,
            partitioning: MetadataPartitioning::NEVER,
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
            range_filter: None,
        }
    }

    /// Builds a range filter (`filter/range.rs`) of `quantum_bits` over the file's user keys;
    /// 0 (the default) builds none. Set before the first entry.
    pub(crate) fn set_range_filter_bits(&mut self, quantum_bits: u32) {
        self.range_filter = (quantum_bits > 0).then(|| (RangeFilterBuilder::new(), quantum_bits));
    }

    /// Puts a restart point every `interval` entries of the index block (1, the default, stores
    /// every index key whole; `Options::index_block_restart_interval`). Values below 1 mean 1.
    pub(crate) fn set_index_restart_interval(&mut self, interval: usize) {
        self.index_restart_interval = interval.max(1);
    }

    /// Partitions the index and filter of a file whose whole-file index block or largest filter
    /// module would exceed `partitioning.above_bytes` (`partition.rs`). Default: never. Set before
    /// the first `add`.
    pub(crate) fn set_metadata_partitioning(&mut self, partitioning: MetadataPartitioning) {
        self.partitioning = partitioning;
    }

    /// Splits a filter of more than `module_bits_per_key` bits per key into modules of that size
    /// (DESIGN.md §1, Mnemosyne §4.2); callers pass the filter budget `bpk_target`. Not a positive
    /// finite number (the default is infinity) means never split.
    pub(crate) fn set_filter_module_bits(&mut self, module_bits_per_key: f64) {
        self.filter_module_bits = module_bits_per_key;
    }

    /// Builds the filter's modules in a family of `families` (default Bloom only): `flush` says
    /// the file is a memtable flush's output ([`FilterFamilies::for_file`]).
    pub(crate) fn set_filter_families(&mut self, families: FilterFamilies, flush: bool) {
        self.filter_families = families;
        self.flush_output = flush;
    }

    /// The family this file's filter modules are built in.
    fn filter_family(&self) -> FilterFamily {
        self.filter_families
            .for_file(self.flush_output, self.key_hashes.len())
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
        if self.data_closed {
            return Err(Error::InvalidArgument(format!(
                "{}: entry added after the table's data was closed",
                self.path.display()
            )));
        }
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
            if let Some((range_filter, _)) = &mut self.range_filter {
                range_filter.add(parsed.user_key);
            }
        }
        if self.data_block.is_empty() {
            // The hash of this key's user key, whether pushed just now or by the previous block
            // (one user key continuing across the boundary): both blocks' partitions hold it.
            self.block_first_hash = self.key_hashes.len().saturating_sub(1);
        }
        if let Some((last_key, handle, hashes)) = self.pending_index_entry.take() {
            if user_key(&last_key) == parsed.user_key {
                self.user_key_spans_blocks = true;
            }
            self.index_entries.push(IndexEntry {
                separator: index_separator(&last_key, key),
                handle,
                hashes,
            });
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
        let hashes = self.block_first_hash..self.key_hashes.len();
        self.pending_index_entry = Some((last_key, handle, hashes));
        self.data_blocks += 1;
        Ok(())
    }

    /// How the index is encoded: user keys unless a user key spans two data blocks; handles
    /// delta-encoded (`format.rs`).
    fn index_format(&self) -> IndexFormat {
        IndexFormat {
            keys: if self.user_key_spans_blocks {
                IndexKeys::Internal
            } else {
                IndexKeys::User
            },
            delta_handles: true,
        }
    }

    /// Writes the last data block and cuts the index into partitions: the file's data is then
    /// final. [`TableBuilder::finish`] does it when not done before;
    /// [`TableBuilder::expected_filter_layout`] does it earlier, so that the filter
    /// allocator learns the file's partitions before it sizes the filter.
    fn close_data(&mut self) -> Result<()> {
        if self.data_closed {
            return Ok(());
        }
        self.flush_data_block()?;
        if let Some((last_key, handle, hashes)) = self.pending_index_entry.take() {
            self.index_entries.push(IndexEntry {
                separator: index_successor(&last_key),
                handle,
                hashes,
            });
        }
        let index_format = self.index_format();
        self.cut_index_partitions(index_format);
        self.data_closed = true;
        Ok(())
    }

    /// The key-range partitions the file's filter will have if its largest filter module holds
    /// the module size ([`TableBuilder::set_filter_module_bits`]; `partition.rs` decides by the
    /// index's and the largest module's bytes): what an elastic filter allocator (DESIGN.md §3.5) may
    /// put part of a module in use in. 1 when the file will not be partitioned, or when that
    /// cannot be known yet (no module size). The partitioned-or-not test uses the partitions'
    /// total index bytes, at least the whole index's, so it may say partitioned when `finish`
    /// will not: the allocator then finds 1 partition in the file's metadata and counts whole
    /// modules. Ends the data ([`TableBuilder::close_data`]): add no entry after.
    pub(crate) fn expected_filter_layout(&mut self) -> Result<FilterLayout> {
        Ok(FilterLayout {
            partitions: self.expected_filter_partitions()?,
            family: self.filter_family(),
        })
    }

    /// The partitions of [`TableBuilder::expected_filter_layout`].
    fn expected_filter_partitions(&mut self) -> Result<u32> {
        self.close_data()?;
        if self.partitioning.is_never()
            || self.key_hashes.is_empty()
            || self.index_partitions.len() < 2
        {
            return Ok(1);
        }
        let above = self.partitioning.above_bytes;
        let module_bytes = if self.filter_module_bits.is_finite() {
            self.filter_family()
                .serialized_len(self.key_hashes.len(), self.filter_module_bits)
        } else {
            0
        };
        let index_bytes: u64 = self
            .index_partitions
            .iter()
            .map(|partition| partition.contents.len() as u64)
            .sum();
        Ok(if module_bytes > above || index_bytes > above {
            u32::try_from(self.index_partitions.len()).unwrap_or(u32::MAX)
        } else {
            1
        })
    }

    /// Cuts the index entries into partitions of `metadata_block_bytes` (one partition holding
    /// them all when partitioning is off), encoded as `format` says.
    fn cut_index_partitions(&mut self, format: IndexFormat) {
        let coding = HandleCoding::of(format.delta_handles);
        let mut block = IndexBlockBuilder::new(self.index_restart_interval, coding);
        let mut hashes: Option<Range<usize>> = None;
        let count = self.index_entries.len();
        for (position, entry) in self.index_entries.iter().enumerate() {
            let key = format.keys.stored(&entry.separator);
            block.add(key, entry.handle);
            let range = hashes.get_or_insert(entry.hashes.start..entry.hashes.start);
            range.end = entry.hashes.end;
            let full = !self.partitioning.is_never()
                && block.estimated_size() >= self.partitioning.block_bytes;
            if full || position + 1 == count {
                self.index_partitions.push(IndexPartition {
                    contents: block.finish(),
                    last_key: key.to_vec(),
                    hashes: hashes.take().unwrap_or_default(),
                });
            }
        }
    }

    /// The unpartitioned layout's one index block, from every entry.
    fn whole_index_block(&self, format: IndexFormat) -> Vec<u8> {
        if let [single] = self.index_partitions.as_slice() {
            return single.contents.clone();
        }
        let coding = HandleCoding::of(format.delta_handles);
        let mut whole = IndexBlockBuilder::new(self.index_restart_interval, coding);
        for entry in &self.index_entries {
            whole.add(format.keys.stored(&entry.separator), entry.handle);
        }
        whole.finish()
    }

    /// Decides the layout: `None` when the file is to be partitioned (partitioning is on and the
    /// whole-file index block or the largest filter module would exceed its threshold), else the
    /// one index block of the unpartitioned layout.
    fn whole_index_unless_partitioned(
        &mut self,
        plan: &[f64],
        format: IndexFormat,
    ) -> Option<Vec<u8>> {
        if self.partitioning.is_never() || self.index_partitions.is_empty() {
            if self.index_partitions.len() == 1 {
                // Partitioning off: the one partition is the whole index; no copy.
                return self
                    .index_partitions
                    .pop()
                    .map(|partition| partition.contents);
            }
            return Some(self.whole_index_block(format));
        }
        let above = self.partitioning.above_bytes;
        let family = self.filter_family();
        let largest_filter = plan
            .iter()
            .map(|&bits| family.serialized_len(self.key_hashes.len(), bits))
            .max()
            .unwrap_or(0);
        if largest_filter > above {
            return None;
        }
        // The partitions hold at least the whole block's bytes (each restarts its prefix
        // compression and has its own restart array), so only a sum above the threshold needs
        // the whole block built to be sure.
        let partition_bytes: u64 = self
            .index_partitions
            .iter()
            .map(|partition| partition.contents.len() as u64)
            .sum();
        if partition_bytes <= above {
            return Some(self.whole_index_block(format));
        }
        let whole = self.whole_index_block(format);
        (whole.len() as u64 <= above).then_some(whole)
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
    /// properties, index and footer, and fsyncs. A partitioned file (see
    /// [`TableBuilder::set_metadata_partitioning`]) has each partition's modules instead, then the
    /// properties, the index partitions, the top-level index and the footer.
    // Long: it writes the file's metadata blocks in their on-disk order (docs/FORMAT.md), each
    // handle feeding the footer; the two layouts share most steps.
    pub(crate) fn finish(
        mut self,
        bits_per_key: f64,
        level: u64,
        run_id: u64,
    ) -> Result<TableSummary> {
        self.close_data()?;
        let index_format = self.index_format();
        let plan = if self.key_hashes.is_empty() {
            Vec::new()
        } else {
            module_bits_per_key(bits_per_key, self.filter_module_bits)
        };
        let whole_index = self.whole_index_unless_partitioned(&plan, index_format);
        let partitioned = whole_index.is_none();
        let mut modules = Vec::with_capacity(plan.len());
        // Per partition, its filter partitions (one per module), when partitioned.
        let mut filter_partitions: Vec<Vec<BlockHandle>> = Vec::new();
        let mut filter_bytes = 0;
        let family = self.filter_family();
        // Each module's bits per key and seed; the family builds them all from one pass over
        // the file's key hashes (hashed once, when the keys were added).
        let module_specs: Vec<(f64, u32)> = plan
            .iter()
            .enumerate()
            .map(|(index, &module_bits)| (module_bits, module_seed(index)))
            .collect();
        if partitioned {
            let ranges: Vec<Range<usize>> = self
                .index_partitions
                .iter()
                .map(|partition| partition.hashes.clone())
                .collect();
            for hashes in ranges {
                let mut handles = Vec::with_capacity(plan.len());
                let filters = family.build_modules(
                    &module_specs,
                    self.key_hashes.get(hashes).unwrap_or_default(),
                );
                for filter in filters {
                    if filter.is_empty() {
                        // Not reached (every partition holds a key and every planned module has
                        // bits per key > 0); a partition short of a module would be unreadable.
                        return Err(Error::InvalidArgument(format!(
                            "{}: filter partition without keys",
                            self.path.display()
                        )));
                    }
                    filter_bytes += filter.len() as u64;
                    handles.push(self.write_block(&filter)?);
                }
                filter_partitions.push(handles);
            }
        } else {
            for filter in family.build_modules(&module_specs, &self.key_hashes) {
                if filter.is_empty() {
                    // Not reached (every planned module has keys and bits per key > 0), but a
                    // zero-size module block would be unreadable, so none is written.
                    continue;
                }
                filter_bytes += filter.len() as u64;
                modules.push(self.write_block(&filter)?);
            }
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
        let filter_modules = if partitioned {
            plan.len()
        } else {
            modules.len()
        };
        let range_filter = match self.range_filter.take() {
            Some((range_filter, quantum_bits)) if range_filter.len() > 0 => {
                Some(self.write_block(&range_filter.finish(quantum_bits))?)
            }
            _ => None,
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
            filter_modules: filter_modules as u64,
            range_filter,
        };
        let properties_handle = self.write_block(&properties.encode())?;
        let partition_count = if partitioned && !plan.is_empty() {
            u32::try_from(filter_partitions.len()).unwrap_or(u32::MAX)
        } else {
            1
        };
        let footer = if partitioned {
            let partitions = std::mem::take(&mut self.index_partitions);
            let mut top_level = BlockBuilder::new(self.index_restart_interval);
            let mut value = Vec::new();
            for (partition, filters) in partitions.iter().zip(&filter_partitions) {
                let index_handle = self.write_compressible_block(&partition.contents)?;
                value.clear();
                encode_partition_value(&mut value, index_handle, filters);
                top_level.add(&partition.last_key, &value);
            }
            let top_level_handle = self.write_block(&top_level.finish())?;
            Footer::partitioned(top_level_handle, properties_handle)
        } else {
            let index = whole_index.unwrap_or_default();
            let index_handle = self.write_compressible_block(&index)?;
            if modular {
                Footer::with_modular_filter(index_handle, filter_handle, properties_handle)
            } else {
                Footer::new(index_handle, filter_handle, properties_handle)
            }
        }
        .with_index_format(index_format)
        .encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.sync()?;
        Ok(TableSummary {
            file_bytes: self.offset,
            properties,
            compression: self.compressor.counts,
            filter_layout: FilterLayout {
                family,
                partitions: partition_count,
            },
        })
    }
}
