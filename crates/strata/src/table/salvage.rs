//! Reading what is still readable from a damaged table file, for `strata::repair` (LevelDB's
//! `Repairer::RepairTable`, RocksDB's repairer): the entries of every data block whose checksum
//! verifies, in order, with their sequence numbers and tombstones as written.
//!
//! Two ways find the data blocks, and their results are joined by offset:
//!
//! * **The index**, when the footer and the index read (through the table reader when the
//!   properties and other metadata read too, from the footer and an unpartitioned index block
//!   alone otherwise): each index entry's handle names a data block; a block
//!   that fails its checksum or does not decode is lost, the others are kept. A damaged filter
//!   costs nothing here (it is rebuilt by whoever writes the salvaged entries).
//! * **The framing**, when the index (or what locates it) is damaged: the table builder writes data
//!   blocks back to back from offset 0, each followed by its trailer `type:u8 crc:fixed32`
//!   (`docs/FORMAT.md`, "Block trailer"), where the CRC-32C covers the stored bytes and the type.
//!   A block's size is not written anywhere but in the index, so the walk finds a block's end by
//!   running the CRC forward from the block's start and stopping at the first position where the
//!   next five bytes are a valid type followed by the CRC of everything before them. A position
//!   that only matches by chance (about one in 2^32 per byte) must also decode as a data block of
//!   well-formed internal keys in order, so only what verifies twice is trusted. The walk ends at
//!   the first verified block that is not a data block (the first filter block, or the properties
//!   block, which is parsed for its counts), or where nothing verifies: after a damaged data block
//!   the next block's start is unknown without the index, so the blocks after it are lost unless
//!   the index locates them.
//!
//! Blocks found both ways are read once. The result is ordered by offset, which is key order
//! (blocks are written in key order); a block whose keys do not come after the previous block's
//! is dropped as lost. Nothing here panics on garbage: every decoder returns errors as values.
//!
//! The whole file is read into memory: salvage is an offline repair of a damaged file, rare enough
//! that simplicity wins over streaming.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::block::{Block, BlockIter, HandleCoding};
use super::compression::decompress_block;
use super::format::{verify_stored_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use super::index_iter::IndexIter;
use super::properties::TableProperties;
use super::reader::{ReadMode, TableReader};
use super::table_file_name;
use crate::coding::get_fixed32;
use crate::env::FileSystem;
use crate::error::Result;
use crate::key::{compare_internal_keys, parse_internal_key};

/// The largest trailer type this build reads (0 uncompressed, 1 LZ4, 2 Zstd).
const MAX_BLOCK_TYPE: u8 = 2;

/// How the salvaged data blocks were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockLocation {
    /// By the table's index: the footer and index read.
    Index,
    /// By walking the blocks' framing from offset 0: the footer or index is damaged.
    Framing,
    /// Partly each: the index read only in part (a damaged index partition).
    IndexAndFraming,
}

impl fmt::Display for BlockLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BlockLocation::Index => "index",
            BlockLocation::Framing => "framing",
            BlockLocation::IndexAndFraming => "index and framing",
        })
    }
}

/// What [`salvage_table`] read from a damaged table.
#[derive(Debug, Default)]
pub(crate) struct Salvage {
    /// The entries (internal key, value) of every sound data block, in internal-key order.
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Data blocks whose entries were kept.
    pub(crate) blocks_kept: u64,
    /// Data blocks lost (damaged, or out of order), when the number of data blocks is known (from
    /// a readable index or properties block).
    pub(crate) blocks_lost: Option<u64>,
    /// Entries lost, when the properties block was readable.
    pub(crate) entries_lost: Option<u64>,
    /// Offsets of the data blocks known lost (those the index names, and those out of order).
    pub(crate) lost_block_offsets: Vec<u64>,
    /// How the blocks were found (`None` when none was).
    pub(crate) located_by: Option<BlockLocation>,
    /// Why the index could not be used, or where the framing walk stopped short, in words.
    pub(crate) notes: Vec<String>,
}

/// One sound data block.
struct DataBlock {
    /// Stored bytes plus trailer.
    len: u64,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Reads every readable data block of table `number` in `dir` (see the module documentation).
/// `Err` only when the file cannot be read; damage is what this is for.
pub(crate) fn salvage_table(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<Salvage> {
    let bytes = fs.read_to_end(&dir.join(table_file_name(number)))?;
    let mut salvage = Salvage::default();
    let index = index_handles(fs, dir, number, &bytes);
    let mut properties = index.properties;
    if let Some(problem) = &index.problem {
        salvage.notes.push(format!("index unusable: {problem}"));
    }

    let mut blocks: BTreeMap<u64, DataBlock> = BTreeMap::new();
    let mut by_framing = false;
    if !index.complete {
        let walk = walk_by_framing(&bytes);
        by_framing = !walk.blocks.is_empty();
        salvage.notes.push(walk.stop.to_string());
        if properties.is_none() {
            properties = walk.properties;
        }
        blocks.extend(walk.blocks);
    }
    let mut by_index = false;
    for handle in &index.handles {
        if blocks.contains_key(&handle.offset) {
            continue;
        }
        match block_bytes(&bytes, *handle).map(decode_data_block) {
            Some(Ok(block)) => {
                by_index = true;
                blocks.insert(handle.offset, block);
            }
            _ => salvage.lost_block_offsets.push(handle.offset),
        }
    }
    salvage.located_by = match (
        by_index || (index.complete && !blocks.is_empty()),
        by_framing,
    ) {
        (true, true) => Some(BlockLocation::IndexAndFraming),
        (true, false) => Some(BlockLocation::Index),
        (false, true) => Some(BlockLocation::Framing),
        (false, false) => None,
    };
    keep_in_order(blocks, &mut salvage);

    let entries_kept = salvage.entries.len() as u64;
    salvage.blocks_lost = if index.complete {
        Some((index.handles.len() as u64).saturating_sub(salvage.blocks_kept))
    } else {
        properties
            .as_ref()
            .map(|p| p.data_blocks.saturating_sub(salvage.blocks_kept))
    };
    salvage.entries_lost = properties
        .as_ref()
        .map(|p| p.entries.saturating_sub(entries_kept));
    salvage.lost_block_offsets.sort_unstable();
    Ok(salvage)
}

/// Appends the blocks' entries in offset order to `salvage`, dropping (as lost) a block that
/// overlaps the one before it or whose first key does not come after that block's last key.
fn keep_in_order(blocks: BTreeMap<u64, DataBlock>, salvage: &mut Salvage) {
    let mut end = 0u64;
    for (offset, block) in blocks {
        let in_order = match (salvage.entries.last(), block.entries.first()) {
            (Some((last, _)), Some((first, _))) => compare_internal_keys(last, first).is_lt(),
            _ => true,
        };
        if offset < end || !in_order {
            salvage.lost_block_offsets.push(offset);
            continue;
        }
        end = offset.saturating_add(block.len);
        salvage.blocks_kept += 1;
        salvage.entries.extend(block.entries);
    }
}

/// The data-block handles the table's index names, as far as it reads.
struct IndexHandles {
    handles: Vec<BlockHandle>,
    /// True when the footer, metadata and the whole index read: `handles` names every data block.
    complete: bool,
    /// The first damage met on the way, if any.
    problem: Option<String>,
    properties: Option<TableProperties>,
}

fn index_handles(fs: &dyn FileSystem, dir: &Path, number: u64, bytes: &[u8]) -> IndexHandles {
    let mut result = IndexHandles {
        handles: Vec::new(),
        complete: false,
        problem: None,
        properties: None,
    };
    let reader = match TableReader::open_uncounted(fs, dir, number) {
        Ok(reader) => reader,
        Err(error) => {
            result.problem = Some(error.to_string());
            // The properties (or another metadata block the reader checks at open) may be what
            // is damaged: the footer and index alone still locate every data block.
            if let Some(handles) = handles_by_footer_and_index(bytes) {
                result.handles = handles;
                result.complete = true;
            }
            return result;
        }
    };
    result.properties = Some(reader.properties().clone());
    let mut index = match IndexIter::open(&reader, ReadMode::Compaction) {
        Ok(index) => index,
        Err(error) => {
            result.problem = Some(error.to_string());
            return result;
        }
    };
    index.seek_to_first(&reader);
    while index.valid() {
        result.handles.push(index.handle());
        index.next(&reader);
    }
    match index.status(&reader) {
        Ok(()) => result.complete = true,
        Err(error) => result.problem = Some(error.to_string()),
    }
    result
}

/// The data-block handles of a table whose footer and (unpartitioned) index block verify, read
/// from those two alone.
fn handles_by_footer_and_index(bytes: &[u8]) -> Option<Vec<BlockHandle>> {
    let footer = Footer::decode(bytes.get(bytes.len().checked_sub(FOOTER_LEN)?..)?).ok()?;
    footer.check_bounds(bytes.len() as u64).ok()?;
    if footer.is_partitioned() {
        return None;
    }
    let (stored, block_type) =
        verify_stored_block(block_bytes(bytes, footer.index)?.to_vec()).ok()?;
    let block = Block::decode(decompress_block(block_type, stored).ok()?).ok()?;
    let format = footer.index_format();
    let mut iter = BlockIter::new(Arc::new(block), format.keys.comparator())
        .decoding_handles(HandleCoding::of(format.delta_handles));
    iter.seek_to_first();
    let mut handles = Vec::new();
    while iter.valid() {
        handles.push(iter.handle());
        iter.next();
    }
    iter.error().is_none().then_some(handles)
}

/// The stored bytes and trailer of the block at `handle`, if they lie inside the file.
fn block_bytes(bytes: &[u8], handle: BlockHandle) -> Option<&[u8]> {
    let start = usize::try_from(handle.offset).ok()?;
    let len = usize::try_from(handle.len_with_trailer()?).ok()?;
    bytes.get(start..start.checked_add(len)?)
}

/// Checks a block (stored bytes and trailer) and decodes it as a data block: at least one entry,
/// every key a well-formed internal key, keys strictly increasing.
fn decode_data_block(raw: &[u8]) -> std::result::Result<DataBlock, String> {
    let (stored, block_type) = verify_stored_block(raw.to_vec())?;
    let contents = decompress_block(block_type, stored)?;
    let mut iter = BlockIter::new(Arc::new(Block::decode(contents)?), compare_internal_keys);
    iter.seek_to_first();
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    while iter.valid() {
        let key = iter.key();
        if parse_internal_key(key).is_none() {
            return Err("malformed internal key".into());
        }
        if entries
            .last()
            .is_some_and(|(last, _)| !compare_internal_keys(last, key).is_lt())
        {
            return Err("keys out of order".into());
        }
        entries.push((key.to_vec(), iter.value().to_vec()));
        iter.next();
    }
    if let Some(error) = iter.error() {
        return Err(error.to_string());
    }
    if entries.is_empty() {
        return Err("no entries".into());
    }
    Ok(DataBlock {
        len: raw.len() as u64,
        entries,
    })
}

/// Why the framing walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FramingStop {
    /// A verified block that is not a data block: the data blocks ended at `offset`.
    DataEnded { offset: u64 },
    /// No block verifies from `offset` on: a damaged block starts there (or the metadata after
    /// the data blocks is damaged).
    NothingVerifies { offset: u64 },
}

impl fmt::Display for FramingStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingStop::DataEnded { offset } => write!(
                f,
                "framing walk: the data blocks end at offset {offset} (a verified non-data block \
                 follows)"
            ),
            FramingStop::NothingVerifies { offset } => write!(
                f,
                "framing walk stopped at offset {offset}: no block verifies from there on, and \
                 without the index the start of any block after a damaged one is unknown"
            ),
        }
    }
}

/// What the framing walk found.
struct FramingWalk {
    /// Data blocks by offset, back to back from offset 0.
    blocks: BTreeMap<u64, DataBlock>,
    stop: FramingStop,
    /// The properties block, if the walk ended at it.
    properties: Option<TableProperties>,
}

/// Walks data blocks back to back from offset 0 by their trailers (see the module
/// documentation), then the verified blocks after them (filters, range filter) up to the
/// properties block, for the table's counts.
fn walk_by_framing(bytes: &[u8]) -> FramingWalk {
    let mut walk = FramingWalk {
        blocks: BTreeMap::new(),
        stop: FramingStop::NothingVerifies { offset: 0 },
        properties: None,
    };
    let mut offset = 0usize;
    let mut data_ended = false;
    while let Some(type_at) = next_trailer(bytes, offset) {
        let end = type_at + BLOCK_TRAILER_LEN;
        let raw = bytes.get(offset..end).unwrap_or_default();
        if !data_ended {
            if let Ok(block) = decode_data_block(raw) {
                walk.blocks.insert(offset as u64, block);
                offset = end;
                continue;
            }
            data_ended = true;
            walk.stop = FramingStop::DataEnded {
                offset: offset as u64,
            };
        }
        let properties = verify_stored_block(raw.to_vec())
            .ok()
            .and_then(|(stored, block_type)| decompress_block(block_type, stored).ok())
            .and_then(|contents| TableProperties::decode(&contents).ok())
            .filter(|properties| describes(properties, &walk.blocks));
        if properties.is_some() {
            walk.properties = properties;
            return walk;
        }
        offset = end;
    }
    if !data_ended {
        walk.stop = FramingStop::NothingVerifies {
            offset: offset as u64,
        };
    }
    walk
}

/// True if `properties` can describe a table holding `blocks`: at least as many blocks and
/// entries, and a key range around theirs. A filter block can parse as a properties block (both
/// start with small varints); it fails this.
fn describes(properties: &TableProperties, blocks: &BTreeMap<u64, DataBlock>) -> bool {
    let entries: usize = blocks.values().map(|b| b.entries.len()).sum();
    let first = blocks.values().next().and_then(|b| b.entries.first());
    let last = blocks.values().next_back().and_then(|b| b.entries.last());
    properties.data_blocks >= blocks.len() as u64
        && properties.entries >= entries as u64
        && first.is_some_and(|(key, _)| compare_internal_keys(&properties.smallest, key).is_le())
        && last.is_some_and(|(key, _)| compare_internal_keys(&properties.largest, key).is_ge())
}

/// The position of the first trailer at or after `start` that verifies the bytes from `start`
/// to it: a type byte this build reads followed by the CRC-32C of those bytes and the type. The
/// CRC runs forward once, so the search is linear in the bytes it passes.
fn next_trailer(bytes: &[u8], start: usize) -> Option<usize> {
    let mut crc = 0u32;
    let mut position = start;
    while let Some(trailer) = bytes.get(position..position.checked_add(BLOCK_TRAILER_LEN)?) {
        let block_type = *trailer.first()?;
        if block_type <= MAX_BLOCK_TYPE {
            let with_type = crc32c::crc32c_append(crc, &[block_type]);
            if trailer.get(1..).and_then(get_fixed32) == Some(with_type) {
                return Some(position);
            }
        }
        crc = crc32c::crc32c_append(crc, &[block_type]);
        position += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::RealFileSystem;
    use crate::key::{encode_internal_key, ValueKind};
    use crate::table::TableBuilder;
    use proptest::prelude::*;

    /// Writes table 1 of `entries` keys (`key00000`...) with 256-byte blocks and a filter;
    /// returns its bytes.
    fn write_table(dir: &Path, entries: u32) -> Vec<u8> {
        let path = dir.join(table_file_name(1));
        let file = RealFileSystem.create_writable(&path).expect("create");
        let mut builder = TableBuilder::new(path.clone(), file, 256, 16);
        for i in 0..entries {
            let key = format!("key{i:05}");
            let kind = if i % 7 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let internal = encode_internal_key(key.as_bytes(), u64::from(i) + 1, kind);
            builder
                .add(&internal, format!("value{i}").as_bytes())
                .expect("add");
        }
        builder.finish(10.0, 0, 0).expect("finish");
        std::fs::read(&path).expect("read")
    }

    fn salvage_of(dir: &Path, bytes: &[u8]) -> Salvage {
        std::fs::write(dir.join(table_file_name(1)), bytes).expect("write");
        salvage_table(&RealFileSystem, dir, 1).expect("salvage")
    }

    fn footer_of(bytes: &[u8]) -> Footer {
        Footer::decode(&bytes[bytes.len() - 60..]).expect("footer")
    }

    #[test]
    fn a_sound_table_is_read_whole_by_its_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bytes = write_table(dir.path(), 300);
        let salvage = salvage_of(dir.path(), &bytes);
        assert_eq!(salvage.entries.len(), 300);
        assert_eq!(salvage.blocks_lost, Some(0));
        assert_eq!(salvage.entries_lost, Some(0));
        assert_eq!(salvage.located_by, Some(BlockLocation::Index));
        assert!(salvage.blocks_kept > 5, "{}", salvage.blocks_kept);
    }

    #[test]
    fn the_framing_walk_finds_every_data_block_when_the_footer_is_damaged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = write_table(dir.path(), 300);
        let whole = salvage_of(dir.path(), &bytes);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40; // the magic
        let salvage = salvage_of(dir.path(), &bytes);
        assert_eq!(salvage.located_by, Some(BlockLocation::Framing));
        assert_eq!(salvage.entries, whole.entries);
        assert_eq!(salvage.blocks_kept, whole.blocks_kept);
        // The walk passes the filter block to the properties block for the counts.
        assert_eq!(salvage.blocks_lost, Some(0), "{salvage:?}");
        assert_eq!(salvage.entries_lost, Some(0));
        assert!(salvage.notes.iter().any(|n| n.contains("data blocks end")));
    }

    #[test]
    fn a_damaged_data_block_is_lost_and_every_other_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = write_table(dir.path(), 300);
        let whole = salvage_of(dir.path(), &bytes);
        let footer = footer_of(&bytes);
        let middle = (footer.filter.offset / 2) as usize;
        bytes[middle] ^= 0x21;
        let salvage = salvage_of(dir.path(), &bytes);
        assert_eq!(salvage.blocks_lost, Some(1));
        assert_eq!(salvage.blocks_kept, whole.blocks_kept - 1);
        let lost = salvage.entries_lost.expect("properties readable") as usize;
        assert!(lost > 0);
        assert_eq!(salvage.entries.len() + lost, 300);
        // The lost entries are one contiguous run; all others are kept as written.
        let start = whole
            .entries
            .iter()
            .zip(&salvage.entries)
            .position(|(a, b)| a != b)
            .expect("a gap");
        assert_eq!(&whole.entries[..start], &salvage.entries[..start]);
        assert_eq!(&whole.entries[start + lost..], &salvage.entries[start..]);
    }

    #[test]
    fn a_damaged_index_falls_back_to_the_framing_walk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = write_table(dir.path(), 300);
        let whole = salvage_of(dir.path(), &bytes);
        let footer = footer_of(&bytes);
        bytes[(footer.index.offset + footer.index.size / 2) as usize] ^= 0x21;
        let salvage = salvage_of(dir.path(), &bytes);
        assert_eq!(salvage.located_by, Some(BlockLocation::Framing));
        assert_eq!(salvage.entries, whole.entries);
        assert_eq!(
            salvage.blocks_lost,
            Some(0),
            "the properties give the count"
        );
        assert_eq!(salvage.entries_lost, Some(0));
        assert!(salvage
            .notes
            .iter()
            .any(|n| n.starts_with("index unusable")));
    }

    #[test]
    fn damage_to_the_index_and_a_data_block_keeps_the_blocks_before_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = write_table(dir.path(), 300);
        let whole = salvage_of(dir.path(), &bytes);
        let footer = footer_of(&bytes);
        bytes[(footer.index.offset + 3) as usize] ^= 0x21;
        let middle = (footer.filter.offset / 2) as usize;
        bytes[middle] ^= 0x21;
        let salvage = salvage_of(dir.path(), &bytes);
        assert!(!salvage.entries.is_empty());
        assert!(salvage.entries.len() < 300);
        assert_eq!(
            &whole.entries[..salvage.entries.len()],
            &salvage.entries[..]
        );
        assert_eq!(
            salvage.blocks_lost,
            Some(whole.blocks_kept - salvage.blocks_kept)
        );
        assert!(salvage
            .notes
            .iter()
            .any(|n| n.contains("no block verifies")));
    }

    #[test]
    fn the_trailer_search_finds_the_first_verifying_position() {
        let mut bytes = Vec::new();
        crate::table::format::append_block(&mut bytes, b"hello");
        crate::table::format::append_block(&mut bytes, b"world!");
        assert_eq!(next_trailer(&bytes, 0), Some(5));
        assert_eq!(next_trailer(&bytes, 10), Some(16));
        assert_eq!(next_trailer(&bytes, 1), None);
        assert_eq!(next_trailer(&[], 0), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any bytes, and any flips of a real table, salvage without a panic; whatever is
        /// salvaged is a subsequence of the table's entries.
        #[test]
        fn salvage_never_panics_and_keeps_only_what_was_written(
            garbage in prop::collection::vec(any::<u8>(), 0..400),
            flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            salvage_of(dir.path(), &garbage);
            let mut bytes = write_table(dir.path(), 120);
            let whole = salvage_of(dir.path(), &bytes);
            for (at, mask) in flips {
                let at = at.index(bytes.len());
                bytes[at] ^= mask;
            }
            let salvage = salvage_of(dir.path(), &bytes);
            let mut written = whole.entries.iter();
            for entry in &salvage.entries {
                prop_assert!(written.any(|w| w == entry), "salvaged an entry never written");
            }
        }
    }
}
