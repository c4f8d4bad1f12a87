//! The fuzz targets as proptests, in the normal suite: for every decoder, arbitrary bytes, and
//! valid encodings (which must round-trip) damaged by bit flips, truncation and length or count
//! fields set huge. The property is the fuzz target's: it returns, whatever the input, and its
//! own round-trip assertions hold. Case counts are kept low so the suite stays quick on a small
//! machine; the fuzzers are where long runs happen.

use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;
use crate::coding::{put_fixed64, put_varint64};
use crate::filter::bloom::BloomFilterBuilder;
use crate::filter::range::{RangeFilter, RangeFilterBuilder};
use crate::filter::ribbon::RibbonFilterBuilder;
use crate::key::{encode_internal_key, ValueKind};
use crate::limits::MAX_LEVELS;
use crate::table::format::{append_block, verify_block};
use crate::version::edit::{AddedFile, DeletedFile, MANIFEST_FORMAT_VERSION};
use crate::version::FileMetadata;

/// Cases per proptest unless `PROPTEST_CASES` says otherwise: each case runs a decoder over a
/// few hundred bytes, twice, so the default keeps the suite quick.
const CASES: u32 = 64;

/// [`CASES`], or `PROPTEST_CASES` for a longer run (an explicit case count in a proptest config
/// would otherwise override the variable).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(CASES)
}

/// One way to damage a valid encoding.
#[derive(Debug, Clone)]
enum Mutation {
    /// Flips one bit.
    FlipBit { at: Index, bit: u8 },
    /// Cuts the input short.
    Truncate { at: Index },
    /// Overwrites up to 8 bytes with `0xff`: a fixed-width length or count becomes huge, and a
    /// varint gains continuation bits.
    SetHuge { at: Index, width: usize },
    /// Inserts a varint holding a huge value, as a length field claiming far more than follows.
    InsertHugeVarint { at: Index, value: u64 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        (any::<Index>(), 1usize..=8).prop_map(|(at, width)| Mutation::SetHuge { at, width }),
        (
            any::<Index>(),
            prop::sample::select(vec![
                u64::from(u32::MAX),
                u64::MAX,
                1 << 31,
                1 << 40,
                100_000
            ])
        )
            .prop_map(|(at, value)| Mutation::InsertHugeVarint { at, value }),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..4)
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        match mutation {
            Mutation::FlipBit { at, bit } => {
                if !bytes.is_empty() {
                    let at = at.index(bytes.len());
                    bytes[at] ^= 1 << bit;
                }
            }
            Mutation::Truncate { at } => bytes.truncate(at.index(bytes.len() + 1)),
            Mutation::SetHuge { at, width } => {
                if !bytes.is_empty() {
                    let start = at.index(bytes.len());
                    let end = (start + width).min(bytes.len());
                    bytes[start..end].fill(0xff);
                }
            }
            Mutation::InsertHugeVarint { at, value } => {
                let at = at.index(bytes.len() + 1);
                let mut varint = Vec::new();
                put_varint64(&mut varint, *value);
                bytes.splice(at..at, varint);
            }
        }
    }
    bytes
}

fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..300)
}

fn small_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet makes shared prefixes and equal keys common.
    prop::collection::vec(0u8..4, 0..max)
}

fn sorted_entries() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    prop::collection::btree_map(
        small_bytes(12),
        prop::collection::vec(any::<u8>(), 0..20),
        0..40,
    )
    .prop_map(|map| map.into_iter().collect())
}

fn build_block(entries: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Vec<u8> {
    let mut builder = BlockBuilder::new(restart_interval);
    for (key, value) in entries {
        builder.add(key, value);
    }
    builder.finish()
}

fn handle() -> impl Strategy<Value = BlockHandle> {
    (any::<u64>(), any::<u64>()).prop_map(|(offset, size)| BlockHandle::new(offset, size))
}

/// An index block: internal keys (one version per user key, so user-key order is internal-key
/// order) mapped to varint block handles.
fn index_entries() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    prop::collection::btree_map(small_bytes(10), (handle(), 0u64..1 << 20), 0..30).prop_map(|map| {
        map.into_iter()
            .map(|(user_key, (handle, sequence))| {
                let mut value = Vec::new();
                handle.encode_to(&mut value);
                (
                    encode_internal_key(&user_key, sequence, ValueKind::Value),
                    value,
                )
            })
            .collect()
    })
}

fn properties_value() -> impl Strategy<Value = TableProperties> {
    (
        prop::array::uniform6(any::<u64>()),
        (small_bytes(20), small_bytes(20)),
        (0.0f64..40.0, 0u64..=6, 1u64..1 << 30),
        prop::option::of((any::<u64>(), 1u64..1 << 40)),
    )
        .prop_map(
            |(
                [entries, data_blocks, smallest_sequence, largest_sequence, level, run_id],
                (smallest, largest),
                (bits_per_key, filter_modules, filter_bytes),
                range_filter,
            )| TableProperties {
                entries,
                data_blocks,
                smallest,
                largest,
                smallest_sequence,
                largest_sequence,
                bits_per_key,
                // A version-1 block records modules only as "filter bytes > 0".
                filter_bytes: if filter_modules == 0 { 0 } else { filter_bytes },
                level,
                run_id,
                filter_modules,
                range_filter: range_filter
                    .map(|(offset, size)| crate::table::format::BlockHandle::new(offset, size)),
            },
        )
}

#[derive(Debug, Clone)]
enum BatchOp {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

fn batch_ops() -> impl Strategy<Value = Vec<BatchOp>> {
    prop::collection::vec(
        prop_oneof![
            (small_bytes(12), prop::collection::vec(any::<u8>(), 0..30))
                .prop_map(|(key, value)| BatchOp::Put(key, value)),
            small_bytes(12).prop_map(BatchOp::Delete),
        ],
        0..20,
    )
}

fn encode_batch(ops: &[BatchOp], sequence: u64) -> Vec<u8> {
    let mut batch = WriteBatch::new();
    for op in ops {
        match op {
            BatchOp::Put(key, value) => batch.put(key, value),
            BatchOp::Delete(key) => batch.delete(key),
        };
    }
    batch.encode_with_sequence(sequence).to_vec()
}

fn new_file(level: usize, run_id: u64, number: u64, bits_per_key: f64) -> AddedFile {
    AddedFile {
        level,
        run_id,
        file: Arc::new(
            FileMetadata::new(number, b"a", b"z")
                .with_file_bytes(4096)
                .with_entries(10)
                .with_sequences(1, 10)
                .with_filter(bits_per_key, 64),
        ),
    }
}

/// An edit with every field present; each new file in a run of its own, so applying it to an
/// empty tree succeeds.
fn version_edit_value() -> impl Strategy<Value = VersionEdit> {
    (
        prop::array::uniform4(any::<u64>()),
        prop::collection::vec((0..MAX_LEVELS, any::<u64>(), 0.0f64..20.0), 0..5),
        prop::collection::vec((0..MAX_LEVELS, any::<u64>(), any::<u64>()), 0..3),
    )
        .prop_map(
            |([log_number, next_file_number, last_sequence, next_run_id], new, deleted)| {
                VersionEdit {
                    format_version: Some(MANIFEST_FORMAT_VERSION),
                    log_number: Some(log_number),
                    next_file_number: Some(next_file_number),
                    last_sequence: Some(last_sequence),
                    next_run_id: Some(next_run_id),
                    new_files: new
                        .into_iter()
                        .enumerate()
                        .map(|(run, (level, number, bits))| {
                            new_file(level, run as u64, number, bits)
                        })
                        .collect(),
                    deleted_files: deleted
                        .into_iter()
                        .map(|(level, run_id, number)| DeletedFile {
                            level,
                            run_id,
                            number,
                        })
                        .collect(),
                    policy_states: vec![crate::version::PolicyState {
                        owner: format!("policy-{}", next_run_id % 3),
                        bytes: log_number.to_le_bytes()[..(last_sequence % 9) as usize].to_vec(),
                    }],
                }
            },
        )
}

/// A `FileAccess` encoding (`stats/merlin.rs`): format 1, a window of up to 64 lookup numbers,
/// the found bits of the window and four finite non-negative counts.
fn file_access_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u64>(), 0..=64),
        any::<u64>(),
        prop::array::uniform4(0.0f64..1e12),
    )
        .prop_map(|(window, found_bits, counts)| {
            let mut bytes = vec![1, window.len() as u8];
            for lookup in &window {
                put_fixed64(&mut bytes, *lookup);
            }
            let mask = if window.len() == 64 {
                u64::MAX
            } else {
                (1 << window.len()) - 1
            };
            put_fixed64(&mut bytes, found_bits & mask);
            for count in counts {
                put_fixed64(&mut bytes, count.to_bits());
            }
            bytes
        })
}

/// An `ACCESS` file (`stats/access_file.rs`, `docs/FORMAT.md`), assembled field by field.
fn access_file_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        (0u64..1 << 40, 0u64..1 << 40),
        prop::collection::vec((any::<u64>(), file_access_bytes()), 0..4),
    )
        .prop_map(|((a, b), files)| {
            let mut state = Vec::new();
            MerlinState {
                lookups: a.max(b),
                recorded: a.min(b),
            }
            .encode_to(&mut state);
            let mut bytes = b"STRATAAC".to_vec();
            bytes.push(1);
            bytes.extend_from_slice(&(state.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&state);
            bytes.extend_from_slice(&(files.len() as u32).to_le_bytes());
            for (number, access) in &files {
                bytes.extend_from_slice(&number.to_le_bytes());
                bytes.extend_from_slice(&(access.len() as u32).to_le_bytes());
                bytes.extend_from_slice(access);
            }
            bytes
        })
}

/// The bytes of a table file written by the engine's `TableBuilder` (small blocks, so that
/// there are several), holding `user_keys` with two versions each; `module_bits` splits the
/// filter into modules (infinity: one Bloom filter).
fn build_table(
    user_keys: &[Vec<u8>],
    bits_per_key: f64,
    module_bits: f64,
    compression: Compression,
    partitioned: bool,
    range_filter_bits: u32,
) -> Vec<u8> {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let mut builder = crate::table::TableBuilder::new(
        Path::new("000001.sst").to_path_buf(),
        Box::new(MemoryFile(Arc::clone(&bytes))),
        256,
        4,
    );
    builder.set_filter_module_bits(module_bits);
    builder.set_compression(compression);
    builder.set_range_filter_bits(range_filter_bits);
    if partitioned {
        // Every table partitioned, in partitions of a few index entries.
        builder.set_metadata_partitioning(crate::table::partition::MetadataPartitioning {
            above_bytes: 0,
            block_bytes: 64,
        });
    }
    for (i, user_key) in user_keys.iter().enumerate() {
        for sequence in [2 * i as u64 + 1, 2 * i as u64] {
            let key = encode_internal_key(user_key, sequence, ValueKind::Value);
            builder
                .add(&key, &sequence.to_le_bytes())
                .expect("add to an in-memory table");
        }
    }
    builder
        .finish(bits_per_key, 1, 1)
        .expect("finish an in-memory table");
    let table = std::mem::take(&mut *bytes.lock());
    table
}

/// A block whose values end in a run of zeros, so every compressor shrinks it by far more than an
/// eighth and stores it compressed.
fn compressible_block(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let padded: Vec<(Vec<u8>, Vec<u8>)> = entries
        .iter()
        .map(|(key, value)| {
            let mut value = value.clone();
            value.resize(value.len() + 200, 0);
            (key.clone(), value)
        })
        .collect();
    build_block(&padded, 4)
}

/// The input of the `compressed_block` target for `block` compressed with `compression`: the
/// trailer type byte, then the stored contents.
fn compressed_block_input(block: &[u8], compression: Compression) -> Vec<u8> {
    let mut compressor = BlockCompressor::new(compression);
    let (stored, block_type) = compressor.compress(block);
    let mut input = vec![block_type];
    input.extend_from_slice(stored);
    input
}

fn table_keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::btree_set(small_bytes(12), 1..60).prop_map(|set| set.into_iter().collect())
}

fn with_crc(mut bytes: Vec<u8>) -> Vec<u8> {
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn block_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        block(&bytes);
        index_block(&bytes);
    }

    #[test]
    fn compressed_block_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        compressed_block(&bytes);
    }

    #[test]
    fn compressed_block_target_reads_compressed_blocks_and_survives_damage(
        entries in prop::collection::btree_map(
            small_bytes(12),
            prop::collection::vec(any::<u8>(), 0..20),
            1..40,
        ),
        lz4 in any::<bool>(),
        damage in mutations(),
    ) {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = entries.into_iter().collect();
        let block = compressible_block(&entries);
        let compression = if lz4 { Compression::Lz4 } else { Compression::ZSTD };
        let input = compressed_block_input(&block, compression);
        prop_assert_eq!(input[0], compression.block_type());
        prop_assert!(input.len() < block.len());
        prop_assert_eq!(decompress_block(input[0], input[1..].to_vec()), Ok(block));
        compressed_block(&input);
        compressed_block(&mutate(input, &damage));
    }

    #[test]
    fn block_target_round_trips_and_survives_damage(
        entries in sorted_entries(),
        interval in 1usize..20,
        damage in mutations(),
    ) {
        let contents = build_block(&entries, interval);
        let decoded = Arc::new(Block::decode(contents.clone()).expect("a built block decodes"));
        prop_assert_eq!(scan_forward(&decoded, bytewise), (entries, false));
        block(&contents);
        block(&mutate(contents, &damage));
    }

    #[test]
    fn index_block_target_round_trips_and_survives_damage(
        entries in index_entries(),
        interval in 1usize..20,
        damage in mutations(),
    ) {
        let contents = build_block(&entries, interval);
        let decoded = Arc::new(Block::decode(contents.clone()).expect("a built block decodes"));
        prop_assert_eq!(scan_forward(&decoded, compare_internal_keys), (entries, false));
        index_block(&contents);
        index_block(&mutate(contents, &damage));
    }

    #[test]
    fn partition_index_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        partition_index(&bytes);
    }

    #[test]
    fn partition_index_target_round_trips_and_survives_damage(
        keys in index_entries(),
        handles in prop::collection::vec(
            (0u64..1 << 40, 1u64..1 << 20).prop_map(|(offset, size)| BlockHandle::new(offset, size)),
            1..200,
        ),
        modules in 0usize..=6,
        damage in mutations(),
    ) {
        // The index entries' keys as partition keys, each with an index partition and
        // `modules` filter partitions from `handles` (non-empty ones; the rest fail to decode).
        let mut builder = BlockBuilder::new(1);
        let mut pool = handles.iter().cycle();
        for (key, _) in &keys {
            let mut take = || pool.next().copied().unwrap_or(BlockHandle::new(1, 1));
            let index = take();
            let filters: Vec<BlockHandle> = (0..modules).map(|_| take()).collect();
            let mut value = Vec::new();
            crate::table::partition::encode_partition_value(&mut value, index, &filters);
            builder.add(key, &value);
        }
        let mut input = vec![modules as u8];
        input.extend_from_slice(&builder.finish());
        prop_assert_eq!(
            PartitionIndex::decode(input[1..].to_vec(), modules, u64::MAX, IndexKeys::Internal).is_ok(),
            !keys.is_empty()
        );
        partition_index(&input);
        partition_index(&mutate(input, &damage));
    }

    #[test]
    fn footer_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        footer(&bytes);
        table(&bytes);
    }

    #[test]
    fn footer_target_round_trips_and_survives_damage(
        blocks in prop::collection::vec(any::<u8>(), 0..200),
        handles in prop::array::uniform3(handle()),
        modular in any::<bool>(),
        damage in mutations(),
    ) {
        let [index, filter_handle, properties_handle] = handles;
        let footer_value = if modular {
            Footer::with_modular_filter(index, filter_handle, properties_handle)
        } else {
            Footer::new(index, filter_handle, properties_handle)
        };
        let mut file = Vec::new();
        append_block(&mut file, &blocks);
        file.extend_from_slice(&footer_value.encode());
        prop_assert_eq!(Footer::decode(&file[file.len() - FOOTER_LEN..]), Ok(footer_value));
        prop_assert_eq!(verify_block(file[..blocks.len() + 5].to_vec()), Ok(blocks));
        footer(&file);
        table(&file);
        let damaged = mutate(file, &damage);
        footer(&damaged);
        table(&damaged);
    }

    #[test]
    fn table_target_reads_built_tables_and_survives_damage(
        user_keys in table_keys(),
        bits_per_key in 0.0f64..12.0,
        module_bits in prop::sample::select(vec![f64::INFINITY, 2.0]),
        compression in prop::sample::select(vec![
            Compression::None,
            Compression::Lz4,
            Compression::ZSTD,
        ]),
        partitioned in any::<bool>(),
        range_filter_bits in prop::sample::select(vec![0u32, 1, 6, 20]),
        damage in mutations(),
    ) {
        let file = build_table(
            &user_keys,
            bits_per_key,
            module_bits,
            compression,
            partitioned,
            range_filter_bits,
        );
        let reader = TableReader::open(
            &OneFileSystem(Arc::new(file.clone())),
            Path::new(""),
            1,
            false,
            Arc::new(BlockCache::new(1 << 20)),
            Arc::new(IoCounters::default()),
            true,
        );
        let reader = Arc::new(reader.expect("a built table opens"));
        let mut iter = TableIter::new(reader, ReadMode::Compaction);
        iter.seek_to_first();
        let mut entries = 0;
        while iter.valid() {
            entries += 1;
            iter.next();
        }
        prop_assert!(iter.status().is_ok());
        prop_assert_eq!(entries, 2 * user_keys.len());
        table(&file);
        table(&mutate(file, &damage));
    }

    #[test]
    fn properties_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        properties(&bytes);
    }

    #[test]
    fn properties_target_round_trips_and_survives_damage(
        value in properties_value(),
        damage in mutations(),
    ) {
        let encoded = value.encode();
        prop_assert_eq!(TableProperties::decode(&encoded), Ok(value));
        properties(&encoded);
        properties(&mutate(encoded, &damage));
    }

    #[test]
    fn filter_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        filter(&bytes);
    }

    #[test]
    fn filter_target_round_trips_and_survives_damage(
        hashes in prop::collection::vec(any::<u64>(), 1..300),
        bits_per_key in 0.5f64..20.0,
        seed in any::<u32>(),
        modules in prop::collection::vec(
            (any::<u64>(), 1u64..).prop_map(|(offset, size)| BlockHandle::new(offset, size)),
            2..=6,
        ),
        damage in mutations(),
    ) {
        let mut builder = BloomFilterBuilder::new(bits_per_key, seed);
        for &hash in &hashes {
            builder.add_hash(hash);
        }
        let bloom = builder.finish();
        let decoded = BloomFilter::decode(bloom.clone()).expect("a built filter decodes");
        prop_assert!(hashes.iter().all(|&hash| decoded.may_contain_hash(hash)));
        filter(&bloom);
        filter(&mutate(bloom, &damage));

        let index = modular::encode_index(&modules);
        prop_assert_eq!(modular::decode_index(&index), Ok(modules));
        filter(&index);
        filter(&mutate(index, &damage));
    }

    #[test]
    fn ribbon_filter_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        ribbon_filter(&bytes);
    }

    #[test]
    fn ribbon_filter_target_round_trips_and_survives_damage(
        hashes in prop::collection::vec(any::<u64>(), 1..300),
        bits_per_key in 0.5f64..20.0,
        seed in any::<u32>(),
        damage in mutations(),
    ) {
        let mut builder = RibbonFilterBuilder::new(bits_per_key, seed);
        for &hash in &hashes {
            builder.add_hash(hash);
        }
        let ribbon = builder.finish();
        let decoded = RibbonFilter::decode(ribbon.clone()).expect("a built filter decodes");
        prop_assert!(hashes.iter().all(|&hash| decoded.may_contain_hash(hash)));
        prop_assert_eq!(decoded.seed(), seed);
        ribbon_filter(&ribbon);
        ribbon_filter(&mutate(ribbon, &damage));
        // Modules of one system: the ones past the first are version-3 blocks.
        let modules = crate::filter::ribbon::build_modules(
            &[(bits_per_key, seed), (bits_per_key, seed ^ 1), (bits_per_key / 2.0, seed ^ 2)],
            &hashes,
        );
        for module in modules {
            let decoded = RibbonFilter::decode(module.clone()).expect("a built module decodes");
            prop_assert!(hashes.iter().all(|&hash| decoded.may_contain_hash(hash)));
            prop_assert_eq!(decoded.seed(), seed);
            ribbon_filter(&module);
            ribbon_filter(&mutate(module, &damage));
        }
    }

    #[test]
    fn range_filter_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        range_filter(&bytes);
    }

    #[test]
    fn range_filter_target_round_trips_and_survives_damage(
        user_keys in table_keys(),
        quantum_bits in 1u32..=20,
        damage in mutations(),
    ) {
        let mut builder = RangeFilterBuilder::new();
        for key in &user_keys {
            builder.add(key);
        }
        let block = builder.finish(quantum_bits);
        let decoded = RangeFilter::decode(&block).expect("a built filter decodes");
        prop_assert!(user_keys.iter().all(|key| decoded.may_contain_range(key, key)));
        range_filter(&block);
        range_filter(&mutate(block, &damage));
    }

    #[test]
    fn wal_targets_survive_arbitrary_bytes(bytes in arbitrary_bytes()) {
        wal_record(&bytes);
        write_batch(&bytes);
    }

    #[test]
    fn wal_targets_round_trip_and_survive_damage(
        batches in prop::collection::vec((batch_ops(), any::<u64>()), 1..4),
        damage in mutations(),
    ) {
        let encoded: Vec<Vec<u8>> = batches
            .iter()
            .map(|(ops, sequence)| encode_batch(ops, *sequence))
            .collect();
        for (bytes, (ops, sequence)) in encoded.iter().zip(&batches) {
            let (decoded_sequence, entries) = WriteBatch::decode(bytes).expect("a batch decodes");
            prop_assert_eq!(decoded_sequence, *sequence);
            prop_assert_eq!(entries.len(), ops.len());
            write_batch(bytes);
            write_batch(&mutate(bytes.clone(), &damage));
        }
        let pieces: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        let log = frame_records(&pieces);
        let records: Vec<Vec<u8>> = check_log(&log).into_iter().map(|(_, r)| r).collect();
        prop_assert_eq!(&records, &encoded);
        wal_record(&log);
        let damaged = mutate(log, &damage);
        let survivors = check_log(&damaged);
        // Damage never invents a record: whatever is read back was written.
        prop_assert!(survivors.iter().all(|(_, record)| encoded.contains(record)));
        wal_record(&damaged);
    }

    #[test]
    fn version_edit_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        version_edit(&bytes);
    }

    #[test]
    fn version_edit_target_round_trips_and_survives_damage(
        edit in version_edit_value(),
        damage in mutations(),
    ) {
        let encoded = edit.encode();
        prop_assert_eq!(VersionEdit::decode(&encoded), Ok(edit));
        version_edit(&encoded);
        version_edit(&mutate(encoded, &damage));
    }

    #[test]
    fn manifest_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        manifest(&bytes);
    }

    #[test]
    fn manifest_target_replays_and_survives_damage(
        mut edit in version_edit_value(),
        damage in mutations(),
    ) {
        // Deleting files the empty tree does not hold is (rightly) an error; replay additions.
        edit.deleted_files.clear();
        let log = frame_records(&[&edit.encode()]);
        let path = Path::new("MANIFEST-000001");
        prop_assert!(replay_manifest(&log, path, 1, None).is_ok());
        manifest(&log);
        manifest(&mutate(log, &damage));
    }

    #[test]
    fn access_file_target_survives_arbitrary_bytes(bytes in arbitrary_bytes()) {
        access_file(&bytes);
    }

    #[test]
    fn access_file_target_round_trips_and_survives_damage(
        body in access_file_bytes(),
        damage in mutations(),
    ) {
        let file = with_crc(body.clone());
        let restored = access_file::decode(&file).expect("an assembled ACCESS file decodes");
        prop_assert!(restored.files.len() <= 4);
        access_file(&file);
        access_file(&body);
        // Damage behind a valid checksum, so it reaches the decoder.
        access_file(&mutate(body, &damage));
    }

    #[test]
    fn file_access_round_trips_and_survives_damage(
        bytes in file_access_bytes(),
        damage in mutations(),
    ) {
        prop_assert!(FileAccess::decode(&bytes).is_some());
        access_file(&bytes);
        access_file(&mutate(bytes, &damage));
    }
}

/// Writes valid encodings from the strategies above as seed inputs for the fuzz targets, into
/// `fuzz/corpus/<target>/` (docs/TESTING.md): a fuzzer starting from valid tables, logs and
/// manifests reaches the decoders' deep paths much sooner than one starting from nothing. Not a
/// check; run with `cargo test -p strata --lib write_fuzz_seed_corpora -- --ignored`.
#[test]
#[ignore = "writes seed files for cargo fuzz; not a check"]
fn write_fuzz_seed_corpora() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const SEEDS: usize = 16;
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut runner = TestRunner::deterministic();
    let mut sample = |strategy: &dyn Fn(&mut TestRunner) -> Vec<u8>| -> Vec<Vec<u8>> {
        (0..SEEDS).map(|_| strategy(&mut runner)).collect()
    };
    fn draw<S: Strategy>(runner: &mut TestRunner, strategy: S) -> S::Value {
        strategy
            .new_tree(runner)
            .expect("strategies here never reject")
            .current()
    }
    let seeds: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "block",
            sample(&|runner| build_block(&draw(runner, sorted_entries()), 4)),
        ),
        (
            "index_block",
            sample(&|runner| build_block(&draw(runner, index_entries()), 4)),
        ),
        (
            "footer",
            sample(&|runner| {
                let [index, filter_handle, properties_handle] =
                    draw(runner, prop::array::uniform3(handle()));
                let mut file = Vec::new();
                append_block(&mut file, b"block contents");
                file.extend_from_slice(
                    &Footer::new(index, filter_handle, properties_handle).encode(),
                );
                file
            }),
        ),
        (
            "properties",
            sample(&|runner| draw(runner, properties_value()).encode()),
        ),
        (
            "compressed_block",
            sample(&|runner| {
                let block = compressible_block(&draw(runner, sorted_entries()));
                let compression = if draw(runner, any::<bool>()) {
                    Compression::Lz4
                } else {
                    Compression::ZSTD
                };
                compressed_block_input(&block, compression)
            }),
        ),
        (
            "table",
            sample(&|runner| {
                let module_bits = if draw(runner, any::<bool>()) {
                    2.0
                } else {
                    f64::INFINITY
                };
                let compression = draw(
                    runner,
                    prop::sample::select(vec![
                        Compression::None,
                        Compression::Lz4,
                        Compression::ZSTD,
                    ]),
                );
                let partitioned = draw(runner, any::<bool>());
                let range_filter_bits = draw(runner, prop::sample::select(vec![0u32, 6]));
                build_table(
                    &draw(runner, table_keys()),
                    8.0,
                    module_bits,
                    compression,
                    partitioned,
                    range_filter_bits,
                )
            }),
        ),
        (
            "partition_index",
            sample(&|runner| {
                // A partitioned table's top-level index, after its module count (1).
                let file = build_table(
                    &draw(runner, table_keys()),
                    8.0,
                    f64::INFINITY,
                    Compression::None,
                    true,
                    0,
                );
                let footer =
                    Footer::decode(&file[file.len() - FOOTER_LEN..]).expect("a built footer");
                let start = footer.index.offset as usize;
                let mut input = vec![1];
                input.extend_from_slice(&file[start..start + footer.index.size as usize]);
                input
            }),
        ),
        (
            "filter",
            sample(&|runner| {
                let hashes = draw(runner, prop::collection::vec(any::<u64>(), 1..100));
                let mut builder = BloomFilterBuilder::new(draw(runner, 1.0f64..12.0), 7);
                for hash in hashes {
                    builder.add_hash(hash);
                }
                builder.finish()
            }),
        ),
        (
            "ribbon_filter",
            sample(&|runner| {
                let hashes = draw(runner, prop::collection::vec(any::<u64>(), 1..300));
                let mut builder = RibbonFilterBuilder::new(draw(runner, 0.5f64..12.0), 7);
                for hash in hashes {
                    builder.add_hash(hash);
                }
                builder.finish()
            }),
        ),
        (
            "range_filter",
            sample(&|runner| {
                let mut builder = RangeFilterBuilder::new();
                for key in draw(runner, table_keys()) {
                    builder.add(&key);
                }
                builder.finish(draw(runner, 1u32..=12))
            }),
        ),
        (
            "write_batch",
            sample(&|runner| encode_batch(&draw(runner, batch_ops()), 42)),
        ),
        (
            "wal_record",
            sample(&|runner| {
                let batches = [
                    encode_batch(&draw(runner, batch_ops()), 1),
                    encode_batch(&draw(runner, batch_ops()), 2),
                ];
                frame_records(&[&batches[0], &batches[1]])
            }),
        ),
        (
            "version_edit",
            sample(&|runner| draw(runner, version_edit_value()).encode()),
        ),
        (
            "manifest",
            sample(&|runner| {
                let mut edit = draw(runner, version_edit_value());
                edit.deleted_files.clear();
                frame_records(&[&edit.encode()])
            }),
        ),
        (
            "access_file",
            sample(&|runner| draw(runner, access_file_bytes())),
        ),
    ];
    for (target, inputs) in seeds {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("create corpus directory");
        for (index, input) in inputs.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{index:02}")), input).expect("write seed");
        }
    }
    // The manifest target also replays pieces between separator bytes as framed edits.
    let edits: Vec<u8> = (0..SEEDS)
        .flat_map(|_| {
            let mut edit = draw(&mut runner, version_edit_value());
            edit.deleted_files.clear();
            let mut bytes = edit.encode();
            bytes.push(RECORD_SEPARATOR);
            bytes
        })
        .collect();
    std::fs::write(corpus.join("manifest/seed-edits"), edits).expect("write seed");
}
