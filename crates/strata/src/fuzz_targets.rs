//! One entry point per on-disk decoder, taking arbitrary bytes: what the `cargo fuzz` targets in
//! `fuzz/fuzz_targets/` call, and what this module's proptests call, so
//! fuzzing and the normal test suite drive exactly the same code. Compiled with the `fuzzing`
//! cargo feature (for the fuzz crate, which lives outside the workspace) and in this crate's own
//! tests; hidden from the docs and not part of Strata's API.
//!
//! Every function decodes its input the way the engine does when it reads the file, ignores a
//! decoding error (an error is the right answer to garbage), and then walks everything that was
//! decoded: iterates and seeks blocks, probes filters, replays edits. The property under test is
//! that none of this panics, reads out of bounds or allocates by an unchecked length field.
//! Where the format allows it, a successful decode is also re-encoded and decoded again, and the
//! two must agree: a decoder that accepts bytes it cannot reproduce is misreading them. Those
//! checks are assertions, so a fuzzer reports a violation as a crash.
//!
//! Formats behind a checksum (log records, the manifest, the `ACCESS` file) are also fed with a
//! valid checksum computed over the input, or else a fuzzer would almost never get past the
//! checksum to the decoder behind it.
//!
//! See `docs/TESTING.md` for how to run the fuzz targets.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::BlockCache;
use crate::coding::Decoder;
use crate::env::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};
use crate::filter::bloom::BloomFilter;
use crate::filter::modular;
use crate::filter::range::RangeFilter;
use crate::filter::ribbon::RibbonFilter;
use crate::iterator::InternalIterator;
use crate::key::compare_internal_keys;
use crate::stats::access_file;
use crate::stats::merlin::{FileAccess, MerlinState};
use crate::stats::IoCounters;
use crate::table::block::{Block, BlockBuilder, BlockIter, HandleCoding, DEFAULT_RESTART_INTERVAL};
use crate::table::compression::{
    decompress_block, BlockCompressor, Compression, MAX_UNCOMPRESSED_BLOCK_BYTES,
};
use crate::table::format::{verify_stored_block, BlockHandle, Footer, IndexKeys, FOOTER_LEN};
use crate::table::iter::TableIter;
use crate::table::partition::PartitionIndex;
use crate::table::properties::TableProperties;
use crate::table::reader::{ReadMode, TableReader};
use crate::version::edit::VersionEdit;
use crate::version::set::replay_manifest;
use crate::version::Version;
use crate::wal::{read_log, LogWriter, WriteBatch};

type Compare = fn(&[u8], &[u8]) -> Ordering;

/// Key/value pairs read from a block, in the order read.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn bytewise(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// Seek targets taken from the input itself, so a fuzzer can steer seeks at the keys it built:
/// the empty key and the first few 16-byte pieces of the input.
fn seek_targets(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::once(&[][..]).chain(data.chunks(16).take(4))
}

/// Filter hashes taken from the input (8 bytes each), plus a few fixed ones.
fn probe_hashes(data: &[u8]) -> impl Iterator<Item = u64> + '_ {
    data.chunks_exact(8)
        .take(16)
        .filter_map(|chunk| chunk.try_into().ok().map(u64::from_le_bytes))
        .chain([0, 1, u64::MAX, 0x9e37_79b9_7f4a_7c15])
}

/// Scans a decoded block forward; returns the entries before the first damaged one and whether
/// the scan met damage. Checks that a scan is bounded by what fits in the block (each entry takes
/// at least three header bytes) and that an error stops the iterator for good.
fn scan_forward(block: &Arc<Block>, compare: Compare) -> (Entries, bool) {
    let bound = block.size_bytes() / 3;
    let mut iter = block.iter(compare);
    let mut entries = Vec::new();
    iter.seek_to_first();
    while iter.valid() {
        assert!(iter.error().is_none(), "a valid iterator has no error");
        entries.push((iter.key().to_vec(), iter.value().to_vec()));
        assert!(entries.len() <= bound, "scan yielded more entries than fit");
        iter.next();
    }
    let damaged = iter.error().is_some();
    check_error_is_sticky(&mut iter);
    (entries, damaged)
}

/// Once an iterator reports an error it stays invalid and keeps reporting the same error.
fn check_error_is_sticky(iter: &mut BlockIter) {
    let Some(reason) = iter.error().map(str::to_string) else {
        return;
    };
    assert!(!iter.valid());
    assert_eq!(iter.key(), b"");
    assert_eq!(iter.value(), b"");
    iter.seek_to_first();
    iter.seek(b"");
    assert!(!iter.valid());
    assert_eq!(iter.error(), Some(reason.as_str()));
}

/// Drives every iterator operation over a decoded block under `compare`.
fn exercise_block(block: &Arc<Block>, compare: Compare, targets: &[u8]) {
    let (forward, damaged) = scan_forward(block, compare);

    let bound = block.size_bytes() / 3;
    let mut iter = block.iter(compare);
    let mut backward = Vec::new();
    iter.seek_to_last();
    while iter.valid() {
        backward.push((iter.key().to_vec(), iter.value().to_vec()));
        assert!(
            backward.len() <= bound,
            "reverse scan yielded more entries than fit"
        );
        iter.prev();
    }
    check_error_is_sticky(&mut iter);
    if !damaged && iter.error().is_none() {
        // Both directions walk the same entries when neither meets damage.
        backward.reverse();
        assert_eq!(forward, backward, "forward and reverse scans disagree");
    }

    let mut iter = block.iter(compare);
    for target in seek_targets(targets) {
        iter.seek(target);
        if iter.valid() {
            let _ = (iter.key(), iter.value());
            iter.next();
            iter.prev();
        }
    }
    check_error_is_sticky(&mut iter);
}

/// A data or properties block (`table/block.rs`: `Block::decode`, `BlockIter`): decoded, scanned
/// both ways and seeked under both comparators; the entries of a clean scan, rebuilt with
/// `BlockBuilder`, must read back the same.
pub fn block(data: &[u8]) {
    let Ok(block) = Block::decode(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    for compare in [bytewise as Compare, compare_internal_keys] {
        exercise_block(&block, compare, data);
    }
    let (entries, _) = scan_forward(&block, bytewise);
    let mut builder = BlockBuilder::new(DEFAULT_RESTART_INTERVAL);
    for (key, value) in &entries {
        builder.add(key, value);
    }
    let rebuilt = Block::decode(builder.finish());
    let rebuilt = Arc::new(rebuilt.unwrap_or_else(|reason| {
        panic!("a block built from decoded entries does not decode: {reason}")
    }));
    let (reread, damaged) = scan_forward(&rebuilt, bytewise);
    assert!(!damaged, "a block built from decoded entries is damaged");
    assert_eq!(
        entries, reread,
        "rebuilt block reads back different entries"
    );
}

/// An index block (`table/block.rs` with internal-key or user-key order, `format.rs`: whole
/// and delta-coded block handles): every value decoded as a block handle, the way a table
/// iterator and a point lookup do, forwards, backwards and by seeks, and every handle re-encoded.
pub fn index_block(data: &[u8]) {
    let Ok(block) = Block::decode(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    exercise_block(&block, compare_internal_keys, data);
    for keys in [IndexKeys::Internal, IndexKeys::User] {
        for coding in [HandleCoding::Whole, HandleCoding::Delta] {
            let mut iter = block.iter(keys.comparator()).decoding_handles(coding);
            iter.seek_to_first();
            while iter.valid() {
                index_entry(&iter, coding);
                iter.next();
            }
            iter.seek_to_last();
            while iter.valid() {
                index_entry(&iter, coding);
                iter.prev();
            }
            for target in seek_targets(data) {
                iter.seek(keys.seek_key(target));
                if iter.valid() {
                    index_entry(&iter, coding);
                }
            }
        }
    }
}

/// One decoded index entry: its handle re-encodes, and with whole handles it is the value's.
fn index_entry(iter: &BlockIter, coding: HandleCoding) {
    block_handle(iter.value());
    let handle = iter.handle();
    let mut encoded = Vec::new();
    handle.encode_to(&mut encoded);
    block_handle(&encoded);
    if coding == HandleCoding::Whole {
        assert_eq!(
            BlockHandle::decode_from(&mut Decoder::new(iter.value())),
            Some(handle),
            "a whole handle is the value's"
        );
    }
}

/// A varint block handle (`BlockHandle::decode_from`); a decoded handle must re-encode to a
/// handle that decodes equal.
fn block_handle(bytes: &[u8]) {
    let Some(handle) = BlockHandle::decode_from(&mut Decoder::new(bytes)) else {
        return;
    };
    let mut encoded = Vec::new();
    handle.encode_to(&mut encoded);
    assert!(encoded.len() <= BlockHandle::MAX_ENCODED_LEN);
    assert_eq!(
        BlockHandle::decode_from(&mut Decoder::new(&encoded)),
        Some(handle)
    );
    let _ = handle.len_with_trailer();
}

/// The table footer and block trailer (`table/format.rs`: `Footer::decode`,
/// `Footer::check_bounds`, `verify_stored_block`, `BlockHandle::decode_from`). The input is read as a
/// whole table file: its last [`FOOTER_LEN`] bytes are the footer, checked against the input's
/// length; a footer that decodes must encode to the same bytes.
pub fn footer(data: &[u8]) {
    let _ = Footer::decode(data);
    if let Some(tail) = data
        .len()
        .checked_sub(FOOTER_LEN)
        .and_then(|start| data.get(start..))
    {
        if let Ok(footer) = Footer::decode(tail) {
            assert_eq!(
                footer.encode(),
                tail,
                "footer does not re-encode to its bytes"
            );
            let _ = footer.check_bounds(data.len() as u64);
            let _ = footer.check_bounds(u64::MAX);
            let _ = footer.check_bounds(0);
            let _ = (footer.filter_handle(), footer.has_modular_filter());
        }
    }
    if let Ok((stored, block_type)) = verify_stored_block(data.to_vec()) {
        assert_eq!(
            stored,
            data[..stored.len()],
            "verify_stored_block changed the contents"
        );
        let _ = decompress_block(block_type, stored);
    }
    block_handle(data);
}

/// A compressed block (`table/compression.rs`: `decompress_block`, then `Block::decode` as the
/// reader does): the first input byte is the trailer's type byte, the rest the stored contents,
/// so a fuzzer drives the LZ4 and Zstd decoders and the uncompressed-length checks directly
/// (behind a table's checksum it would rarely get there). Whatever decompresses must be exactly
/// no larger than the cap, and is then decoded and walked as a block. The input is also
/// compressed with each algorithm and must decompress to itself.
pub fn compressed_block(data: &[u8]) {
    if let Some((&block_type, stored)) = data.split_first() {
        if let Ok(contents) = decompress_block(block_type, stored.to_vec()) {
            assert!(
                contents.len() <= MAX_UNCOMPRESSED_BLOCK_BYTES,
                "decompressed past the cap"
            );
            block(&contents);
        }
    }
    for compression in [Compression::Lz4, Compression::ZSTD] {
        let mut compressor = BlockCompressor::new(compression);
        let (stored, block_type) = compressor.compress(data);
        let stored = stored.to_vec();
        assert_eq!(
            decompress_block(block_type, stored).as_deref(),
            Ok(data),
            "{compression} does not round-trip"
        );
    }
}

/// The properties block (`table/properties.rs`: `TableProperties::decode`): decoded properties
/// must survive an encode/decode round trip.
pub fn properties(data: &[u8]) {
    let Ok(properties) = TableProperties::decode(data) else {
        return;
    };
    assert_eq!(
        TableProperties::decode(&properties.encode()),
        Ok(properties),
        "properties do not round-trip"
    );
}

/// A filter block: a Bloom filter (`filter/bloom.rs`: `BloomFilter::decode`, probed with hashes
/// from the input) and a modular filter index (`filter/modular.rs`: `decode_index`, which must
/// re-encode to its bytes).
pub fn filter(data: &[u8]) {
    if let Ok(filter) = BloomFilter::decode(data.to_vec()) {
        assert_eq!(filter.size_bytes(), data.len());
        for hash in probe_hashes(data) {
            let _ = filter.may_contain_hash(hash);
        }
        let _ = (filter.bits_per_key(), filter.hash_count(), filter.seed());
    }
    if let Ok(modules) = modular::decode_index(data) {
        assert_eq!(
            modular::encode_index(&modules),
            data,
            "modular filter index does not re-encode to its bytes"
        );
    }
}

/// A Ribbon filter block, version 2 or a version-3 module of a shared system (`filter/ribbon.rs`:
/// `RibbonFilter::decode`, probed with hashes from the input). A decoded filter must account for every input byte, price its FPR as a probability,
/// and, if it is the unsolved fallback, answer "maybe" to every probe.
pub fn ribbon_filter(data: &[u8]) {
    let Ok(filter) = RibbonFilter::decode(data.to_vec()) else {
        return;
    };
    assert_eq!(filter.size_bytes(), data.len());
    let rate = filter.expected_false_positive_rate();
    assert!((0.0..=1.0).contains(&rate), "expected FPR {rate}");
    for hash in probe_hashes(data) {
        let maybe = filter.may_contain_hash(hash);
        assert!(maybe || filter.is_solved(), "an unsolved filter said no");
    }
    let _ = (filter.bits_per_key(), filter.seed(), filter.attempt());
}

/// A range filter block (`filter/range.rs`: `RangeFilter::decode`). A decoded filter answers
/// every range between the seek targets taken from the input (a decoder that accepted a block
/// must never meet a malformed code while answering), and its memory is bounded by the input.
pub fn range_filter(data: &[u8]) {
    let Ok(filter) = RangeFilter::decode(data) else {
        return;
    };
    let targets: Vec<&[u8]> = seek_targets(data).chain([&[0xff_u8; 9][..]]).collect();
    for lo in &targets {
        for hi in &targets {
            let maybe = filter.may_contain_range(lo, hi);
            assert!(!maybe || lo <= hi, "an empty range may hold keys");
        }
    }
    // Knots, samples and the stream all come from the input: at most a few times its size.
    assert!(filter.memory_bytes() <= 4 * data.len() + 4096);
}

/// A partitioned table's top-level index (`table/partition.rs`: `PartitionIndex::decode`). The
/// first input byte picks the key order (bit 7 set: user keys) and the properties' filter module count (the low bits mod 7), the rest the block's contents.
/// A decoded index must re-encode to a block that decodes equal; every lookup position it gives
/// must be the first partition whose last key is at or above the target.
pub fn partition_index(data: &[u8]) {
    let Some((&modules, contents)) = data.split_first() else {
        return;
    };
    // The top bit picks the key order (a user-key index's partition keys are user keys).
    let keys = if modules & 0x80 != 0 {
        IndexKeys::User
    } else {
        IndexKeys::Internal
    };
    let modules = usize::from((modules & 0x7f) % 7);
    let Ok(index) = PartitionIndex::decode(contents.to_vec(), modules, u64::MAX, keys) else {
        return;
    };
    assert!(
        !index.is_empty(),
        "a decoded top-level index has partitions"
    );
    assert_eq!(
        PartitionIndex::decode(index.encode(), modules, u64::MAX, keys).as_ref(),
        Ok(&index),
        "top-level index does not round-trip"
    );
    let compare = keys.comparator();
    for target in seek_targets(contents) {
        let found = index.find(target);
        let first_at_or_above =
            (0..index.len()).find(|&p| compare(index.key(p), keys.seek_key(target)).is_ge());
        assert_eq!(
            found, first_at_or_above,
            "binary search disagrees with a scan"
        );
    }
    for partition in 0..index.len() {
        assert!(index.index_handle(partition).is_some());
        assert_eq!(index.filter_handles(partition).len(), modules);
    }
    let _ = (index.first_block_offset(), index.size_bytes());
}

/// A write batch as logged (`wal/batch.rs`: `WriteBatch::decode`): a decoded batch, rebuilt with
/// `put` and `delete`, must encode to a batch that decodes to the same entries.
pub fn write_batch(data: &[u8]) {
    let Ok((sequence, entries)) = WriteBatch::decode(data) else {
        return;
    };
    let mut rebuilt = WriteBatch::new();
    for entry in &entries {
        match entry.kind {
            crate::key::ValueKind::Value => rebuilt.put(entry.key, entry.value),
            crate::key::ValueKind::Deletion => rebuilt.delete(entry.key),
        };
    }
    let encoded = rebuilt.encode_with_sequence(sequence).to_vec();
    assert_eq!(
        WriteBatch::decode(&encoded),
        Ok((sequence, entries)),
        "write batch does not round-trip"
    );
}

/// A write-ahead log (`wal/mod.rs`: `read_log`, then `WriteBatch::decode` of every record, as
/// recovery does). The input is read twice: as a log file, and as the payload of one record
/// framed by `LogWriter` (which must read back as exactly that record, undamaged).
pub fn wal_record(data: &[u8]) {
    for (_, record) in check_log(data) {
        write_batch(&record);
    }
    let framed = frame_records(&[data]);
    let contents = read_log(&framed);
    assert!(
        contents.damage.is_none(),
        "a framed record reads as damaged"
    );
    assert_eq!(contents.records, vec![(0, data.to_vec())]);
    write_batch(data);
}

/// Reads `bytes` as a log and checks the reader's accounting: records are contiguous from offset
/// 0, and the damage (if any) starts where they end and covers the rest of the input.
fn check_log(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let contents = read_log(bytes);
    let mut end = 0u64;
    for (offset, record) in &contents.records {
        assert_eq!(*offset, end, "log records are not contiguous");
        end += (crate::wal::RECORD_HEADER_LEN + record.len()) as u64;
    }
    match &contents.damage {
        Some(damage) => {
            assert_eq!(
                damage.offset, end,
                "damage does not start after the last record"
            );
            assert_eq!(damage.offset + damage.dropped_bytes, bytes.len() as u64);
        }
        None => assert_eq!(
            end,
            bytes.len() as u64,
            "an undamaged log was not read to its end"
        ),
    }
    contents.records
}

/// A manifest edit (`version/edit.rs`: `VersionEdit::decode`), applied to an empty tree
/// (`Version::apply`); a decoded edit must re-encode to bytes that decode to the same encoding.
pub fn version_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode(data) else {
        return;
    };
    let encoded = edit.encode();
    let again = VersionEdit::decode(&encoded)
        .unwrap_or_else(|reason| panic!("a re-encoded edit does not decode: {reason}"));
    assert_eq!(again.encode(), encoded, "version edit does not round-trip");
    let _ = Version::default().apply(&edit, None);
}

/// Byte that separates records in the input of [`manifest`]'s framed replay.
const RECORD_SEPARATOR: u8 = 0xfe;

/// A manifest file (`version/set.rs`: `replay_manifest`, the decode-and-apply loop of open). The
/// input is replayed as a manifest file, and again with its pieces between
/// [`RECORD_SEPARATOR`] bytes framed as log records with valid checksums, so that a fuzzer reaches
/// the edits without forging CRCs.
pub fn manifest(data: &[u8]) {
    let path = Path::new("MANIFEST-000001");
    let _ = check_log(data);
    let _ = replay_manifest(data, path, 1, None);
    let pieces: Vec<&[u8]> = data.split(|&byte| byte == RECORD_SEPARATOR).collect();
    let framed = frame_records(&pieces);
    let _ = replay_manifest(&framed, path, u64::MAX, None);
}

/// The `ACCESS` file (`stats/access_file.rs`: `decode`) and the Merlin encodings inside it
/// (`stats/merlin.rs`: `MerlinState::decode`, `FileAccess::decode`). The input is decoded as a
/// whole file, and again with a valid CRC32C appended so a fuzzer gets past the checksum.
/// `FileAccess` is fixed-width, so a decoded one must re-encode to its exact bytes.
pub fn access_file(data: &[u8]) {
    let _ = access_file::decode(data);
    let mut with_crc = data.to_vec();
    with_crc.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
    if let Some(restored) = access_file::decode(&with_crc) {
        let mut encoded = Vec::new();
        for access in restored.files.values() {
            encoded.clear();
            access.encode_to(&mut encoded);
            assert!(
                FileAccess::decode(&encoded).is_some(),
                "restored statistics do not re-decode"
            );
        }
    }
    if let Some(state) = MerlinState::decode(data) {
        let mut encoded = Vec::new();
        state.encode_to(&mut encoded);
        assert_eq!(MerlinState::decode(&encoded), Some(state));
    }
    if let Some(access) = FileAccess::decode(data) {
        let mut encoded = Vec::new();
        access.encode_to(&mut encoded);
        assert_eq!(
            encoded, data,
            "file statistics do not re-encode to their bytes"
        );
    }
}

/// A whole table file (`table/reader.rs`: `TableReader::open`, which decodes the footer, the
/// properties and a modular filter index and checks every handle against the file, then pins
/// the index and filter blocks): opened both pinned and through the block cache, scanned with a
/// table iterator, sought and looked up with keys from the input. Blocks are checksummed, so a
/// fuzzer mostly exercises the footer and the checks between the parts (and, in seeds written with
/// compression, the decompression of data and index blocks). Then repair's salvage
/// (`table/salvage.rs`) reads the same bytes: the index, or the blocks' framing.
pub fn table(data: &[u8]) {
    let fs = OneFileSystem(Arc::new(data.to_vec()));
    let dir = Path::new("");
    for pin in [true, false] {
        let opened = TableReader::open(
            &fs,
            dir,
            1,
            false,
            Arc::new(BlockCache::new(1 << 20)),
            Arc::new(IoCounters::default()),
            pin,
        );
        let Ok(table) = opened else {
            continue;
        };
        let table = Arc::new(table);
        let bound = data.len() / 3;
        let mut iter = TableIter::new(Arc::clone(&table), ReadMode::Cached { level: 1 });
        iter.seek_to_first();
        let mut steps = 0;
        while iter.valid() {
            steps += 1;
            assert!(steps <= bound, "table scan yielded more entries than fit");
            iter.next();
        }
        let _ = iter.status();
        for target in seek_targets(data) {
            iter.seek(target);
            let _ = (iter.valid(), iter.status());
            let lookup = crate::key::lookup_key(target, crate::key::MAX_SEQUENCE);
            let hash = crate::filter::bloom::key_hash(target);
            let _ = table.get(&lookup, target, hash, 1, crate::alloc::ModulesInUse::ALL);
            let _ = table.get(&lookup, target, hash, 1, crate::alloc::ModulesInUse::NONE);
            let _ = table.may_contain_range(&[], target);
            let _ = table.may_contain_range(target, &[0xff; 9]);
        }
    }
    // Repair's salvage of the same bytes, whether or not the table opened: whatever it keeps
    // verified, so it is in strict internal-key order.
    if let Ok(salvage) = crate::table::salvage::salvage_table(&fs, dir, 1) {
        assert!(
            salvage
                .entries
                .windows(2)
                .all(|pair| compare_internal_keys(&pair[0].0, &pair[1].0).is_lt()),
            "salvaged entries out of order"
        );
    }
}

/// A file system holding one file, the table under test, whatever its name; every other call
/// fails. Lets [`table`] run the real `TableReader::open` without touching a disk.
struct OneFileSystem(Arc<Vec<u8>>);

impl RandomAccessFile for OneFileSystem {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(len)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::InvalidArgument(format!("read of {len} bytes at {offset}")))
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fn unsupported<T>() -> Result<T> {
    Err(Error::InvalidArgument(
        "not supported by the fuzz file system".to_string(),
    ))
}

impl FileSystem for OneFileSystem {
    fn create_dir_all(&self, _path: &Path) -> Result<()> {
        unsupported()
    }

    fn create_writable(&self, _path: &Path) -> Result<Box<dyn WritableFile>> {
        unsupported()
    }

    fn open_random_access(&self, _path: &Path, _direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(OneFileSystem(Arc::clone(&self.0))))
    }

    fn read_to_end(&self, _path: &Path) -> Result<Vec<u8>> {
        Ok(self.0.to_vec())
    }

    fn rename(&self, _from: &Path, _to: &Path) -> Result<()> {
        unsupported()
    }

    fn remove_file(&self, _path: &Path) -> Result<()> {
        unsupported()
    }

    fn list_dir(&self, _path: &Path) -> Result<Vec<String>> {
        unsupported()
    }

    fn exists(&self, _path: &Path) -> bool {
        true
    }

    fn sync_dir(&self, _path: &Path) -> Result<()> {
        unsupported()
    }

    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        unsupported()
    }
}

/// An in-memory log file for [`LogWriter`].
struct MemoryFile(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemoryFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// The bytes of a log holding `records`, framed by the engine's own [`LogWriter`].
fn frame_records(records: &[&[u8]]) -> Vec<u8> {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let mut writer = LogWriter::new(Box::new(MemoryFile(Arc::clone(&bytes))));
    for record in records {
        // Records under 4 GiB are always accepted, and the memory file cannot fail.
        let added = writer.add_record(record);
        assert!(added.is_ok(), "framing a record failed: {added:?}");
    }
    drop(writer);
    let framed = std::mem::take(&mut *bytes.lock());
    framed
}

#[cfg(test)]
mod tests;
