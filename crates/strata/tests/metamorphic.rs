//! Metamorphic test (Pebble's `metamorphic/`): one random operation sequence — puts, deletes,
//! batches, point reads, range scans, snapshot reads, flushes, full compactions, waits and
//! reopens — runs against many configurations (block sizes, write buffer sizes, every
//! compaction policy and filter allocator, block cache on and off, direct reads, pinned index and
//! filter blocks, few open files, the fault-injecting file system with no fault armed). Nothing a
//! configuration changes may change what a read returns: every configuration's trace of read
//! results must equal a `BTreeMap` model's, and so each other's. A difference names the sequence's
//! seed, the operation and both results.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use strata::alloc::{FilterAllocator, Mnemosyne, MnemosynePlus, Monkey, Uniform};
use strata::compaction::{CompactionPolicy, Leveling, Tiering};
use strata::env::FaultInjectionFileSystem;
use strata::{Db, Options, Snapshot, WriteBatch};

mod common;
use common::SplitMix64;

const KEYS: u64 = 300;

fn key(k: u64) -> Vec<u8> {
    // Lengths vary and some keys are prefixes of others.
    let mut bytes = format!("key{k}").into_bytes();
    if k.is_multiple_of(7) {
        bytes.extend_from_slice(b"-long-suffix");
    }
    bytes
}

#[derive(Debug, Clone)]
enum Op {
    Put(u64, Vec<u8>),
    Delete(u64),
    Batch(Vec<(u64, Option<Vec<u8>>)>),
    Get(u64),
    Scan(u64, u64),
    TakeSnapshot,
    SnapshotGet(u64),
    SnapshotScan(u64, u64),
    Flush,
    Compact,
    WaitForCompactions,
    Reopen,
}

fn value(random: &mut SplitMix64, op: usize) -> Vec<u8> {
    let length = match random.below(20) {
        0 => 3_000 + random.below(3_000) as usize,
        _ => random.below(120) as usize,
    };
    let mut bytes = format!("op{op}-").into_bytes();
    bytes.resize(bytes.len() + length, b'a' + (op % 26) as u8);
    bytes
}

fn sequence(seed: u64, length: usize) -> Vec<Op> {
    let mut random = SplitMix64::new(seed);
    (0..length)
        .map(|i| {
            let k = random.below(KEYS);
            match random.below(100) {
                0..=34 => Op::Put(k, value(&mut random, i)),
                35..=44 => Op::Delete(k),
                45..=51 => Op::Batch(
                    (0..1 + random.below(6))
                        .map(|_| {
                            let k = random.below(KEYS);
                            let v = (random.below(4) != 0).then(|| value(&mut random, i));
                            (k, v)
                        })
                        .collect(),
                ),
                52..=71 => Op::Get(k),
                72..=79 => Op::Scan(k, k + random.below(40)),
                80..=81 => Op::TakeSnapshot,
                82..=86 => Op::SnapshotGet(k),
                87..=88 => Op::SnapshotScan(k, k + random.below(40)),
                89..=93 => Op::Flush,
                94..=95 => Op::Compact,
                96..=97 => Op::WaitForCompactions,
                _ => Op::Reopen,
            }
        })
        .collect()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn render(value: Option<&[u8]>) -> String {
    match value {
        None => "absent".into(),
        Some(v) => format!(
            "{} ({} bytes)",
            String::from_utf8_lossy(&v[..v.len().min(12)]),
            v.len()
        ),
    }
}

fn bounds(lo: u64, hi: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let (lo, hi) = (key(lo), key(hi));
    if lo <= hi {
        (Bound::Included(lo), Bound::Excluded(hi))
    } else {
        (Bound::Included(hi), Bound::Excluded(lo))
    }
}

fn scan_model(model: &Model, lo: u64, hi: u64) -> String {
    model
        .range(bounds(lo, hi))
        .map(|(k, v)| format!("{}={}", String::from_utf8_lossy(k), render(Some(v))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What every read of the sequence returns, by the model.
fn model_trace(ops: &[Op]) -> Vec<String> {
    let mut model = Model::new();
    let mut snapshot: Option<Model> = None;
    let mut trace = Vec::new();
    for op in ops {
        match op {
            Op::Put(k, v) => {
                model.insert(key(*k), v.clone());
            }
            Op::Delete(k) => {
                model.remove(&key(*k));
            }
            Op::Batch(writes) => {
                for (k, v) in writes {
                    match v {
                        Some(v) => model.insert(key(*k), v.clone()),
                        None => model.remove(&key(*k)),
                    };
                }
            }
            Op::Get(k) => trace.push(render(model.get(&key(*k)).map(Vec::as_slice))),
            Op::Scan(lo, hi) => trace.push(scan_model(&model, *lo, *hi)),
            Op::TakeSnapshot => snapshot = Some(model.clone()),
            Op::SnapshotGet(k) => trace.push(match &snapshot {
                Some(s) => render(s.get(&key(*k)).map(Vec::as_slice)),
                None => "no snapshot".into(),
            }),
            Op::SnapshotScan(lo, hi) => trace.push(match &snapshot {
                Some(s) => scan_model(s, *lo, *hi),
                None => "no snapshot".into(),
            }),
            // A reopen drops the snapshot (it cannot outlive its database).
            Op::Reopen => snapshot = None,
            Op::Flush | Op::Compact | Op::WaitForCompactions => {}
        }
    }
    trace
}

fn scan_db(iter: strata::DbIterator) -> String {
    iter.map(|entry| {
        let (k, v) = entry.expect("scan");
        format!("{}={}", String::from_utf8_lossy(&k), render(Some(&v)))
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// What every read of the sequence returns, from a database opened with `options`.
fn database_trace(ops: &[Op], options: &dyn Fn() -> Options) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = Db::open(dir.path(), options()).expect("open");
    let mut snapshot: Option<Snapshot> = None;
    let mut trace = Vec::new();
    for op in ops {
        match op {
            Op::Put(k, v) => db.put(key(*k), v).expect("put"),
            Op::Delete(k) => db.delete(key(*k)).expect("delete"),
            Op::Batch(writes) => {
                let mut batch = WriteBatch::new();
                for (k, v) in writes {
                    match v {
                        Some(v) => batch.put(key(*k), v),
                        None => batch.delete(key(*k)),
                    };
                }
                db.write(batch).expect("batch");
            }
            Op::Get(k) => trace.push(render(db.get(key(*k)).expect("get").as_deref())),
            Op::Scan(lo, hi) => trace.push(scan_db(db.range(bounds(*lo, *hi)))),
            Op::TakeSnapshot => snapshot = Some(db.snapshot()),
            Op::SnapshotGet(k) => trace.push(match &snapshot {
                Some(s) => render(s.get(key(*k)).expect("snapshot get").as_deref()),
                None => "no snapshot".into(),
            }),
            Op::SnapshotScan(lo, hi) => trace.push(match &snapshot {
                Some(s) => scan_db(s.range(bounds(*lo, *hi))),
                None => "no snapshot".into(),
            }),
            Op::Flush => db.flush().expect("flush"),
            Op::Compact => db.compact().expect("compact"),
            Op::WaitForCompactions => db.wait_for_compactions().expect("wait"),
            Op::Reopen => {
                snapshot = None;
                db.close().expect("close");
                drop(db);
                db = Db::open(dir.path(), options()).expect("reopen");
            }
        }
    }
    db.close().expect("close");
    trace
}

fn leveling(size_ratio: f64) -> Arc<dyn CompactionPolicy> {
    Arc::new(Leveling::new(size_ratio).expect("size ratio"))
}

fn small(options: Options) -> Options {
    options
        .write_buffer_bytes(8 * 1024)
        .target_file_bytes(8 * 1024)
        .level0_compaction_trigger(2)
}

/// Builds one configuration's options (called at every open).
type MakeOptions = Box<dyn Fn() -> Options>;

/// The configurations compared, each with a name.
fn configurations() -> Vec<(&'static str, MakeOptions)> {
    let allocator = |a: Arc<dyn FilterAllocator>| a;
    let fault_fs = FaultInjectionFileSystem::default();
    vec![
        ("defaults", Box::new(Options::default)),
        (
            "4 KiB buffer, 256-byte blocks, leveling T=2",
            Box::new(|| {
                Options::default()
                    .write_buffer_bytes(4096)
                    .target_file_bytes(4096)
                    .block_bytes(256)
                    .block_restart_interval(2)
                    .compaction_policy(leveling(2.0))
            }),
        ),
        (
            "leveling, dynamic level sizes, Monkey",
            Box::new(move || {
                small(Options::default())
                    .compaction_policy(Arc::new(
                        Leveling::new(3.0)
                            .expect("size ratio")
                            .with_dynamic_level_bytes(true),
                    ))
                    .filter_allocator(allocator(Arc::new(
                        Monkey::new(5.0, 3_000, 80, 3.0).expect("monkey"),
                    )))
            }),
        ),
        (
            "tiering T=3, Mnemosyne",
            Box::new(move || {
                small(Options::default())
                    .compaction_policy(Arc::new(Tiering::new(3.0).expect("size ratio")))
                    .filter_allocator(allocator(Arc::new(Mnemosyne::new(2.0).expect("budget"))))
            }),
        ),
        (
            "leveling T=4, Mnemosyne+ with access statistics",
            Box::new(move || {
                small(Options::default())
                    .compaction_policy(leveling(4.0))
                    .access_statistics(true)
                    .filter_allocator(allocator(Arc::new(
                        MnemosynePlus::new(3.0).expect("budget"),
                    )))
            }),
        ),
        (
            "no block cache, 1 bit/key",
            Box::new(move || {
                small(Options::default())
                    .block_cache_bytes(0)
                    .filter_allocator(allocator(Arc::new(Uniform::new(1.0).expect("bits"))))
            }),
        ),
        (
            "direct reads, 16 open files",
            Box::new(|| {
                small(Options::default())
                    .direct_reads(true)
                    .max_open_files(16)
            }),
        ),
        (
            "pinned index and filter blocks, 2 write buffers of 64 KiB",
            Box::new(|| {
                Options::default()
                    .write_buffer_bytes(64 * 1024)
                    .max_write_buffers(2)
                    .pin_filter_and_index_blocks(true)
            }),
        ),
        (
            "partitioned index and filters (256-byte partitions), Mnemosyne+ modules",
            Box::new(move || {
                small(Options::default())
                    .block_bytes(256)
                    .metadata_block_bytes(256)
                    .partition_metadata_above_bytes(256)
                    .block_cache_bytes(16 * 1024)
                    .access_statistics(true)
                    .filter_allocator(allocator(Arc::new(
                        MnemosynePlus::new(2.0).expect("budget"),
                    )))
            }),
        ),
        (
            // Level 0's partitions pinned, deeper ones in the cache (with every level pinned,
            // nothing is partitioned: `Options::partition_metadata_above_bytes`).
            "partitioned index and filters, level 0 pinned",
            Box::new(|| {
                small(Options::default())
                    .block_bytes(256)
                    .metadata_block_bytes(256)
                    .partition_metadata_above_bytes(256)
                    .pin_l0_filter_and_index_blocks(true)
            }),
        ),
        (
            "fault-injecting file system, no fault armed",
            Box::new(move || small(Options::default()).file_system(Arc::new(fault_fs.clone()))),
        ),
    ]
}

#[test]
fn every_configuration_reads_what_the_model_reads() {
    let configurations = configurations();
    for seed in [1u64, 2, 3] {
        let ops = sequence(seed, 1_500);
        let expected = model_trace(&ops);
        let reads: Vec<&Op> = ops
            .iter()
            .filter(|op| {
                matches!(
                    op,
                    Op::Get(_) | Op::Scan(..) | Op::SnapshotGet(_) | Op::SnapshotScan(..)
                )
            })
            .collect();
        for (name, options) in &configurations {
            let trace = database_trace(&ops, options.as_ref());
            assert_eq!(trace.len(), expected.len(), "{name}, seed {seed}");
            if let Some(i) = (0..trace.len()).find(|&i| trace[i] != expected[i]) {
                panic!(
                    "seed {seed}, configuration \"{name}\": read {i} ({:?}) returned\n  {}\n\
                     but the model (and so every other configuration) returns\n  {}",
                    reads[i], trace[i], expected[i]
                );
            }
        }
    }
}
