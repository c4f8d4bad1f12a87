//! Partitioned index and filters end to end (`table/partition.rs`): a database whose larger files
//! are partitioned reads what one without partitioning reads, through flushes, compactions
//! (whose inputs are read with read-ahead), reopen and `strata::check`.

use strata::{Db, Options};

fn options(partitioned: bool) -> Options {
    let options = Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(256 * 1024)
        .block_cache_bytes(32 * 1024)
        .bits_per_key(6.0)
        .expect("bits per key");
    if partitioned {
        options
            .metadata_block_bytes(512)
            .partition_metadata_above_bytes(2048)
    } else {
        options.partition_metadata_above_bytes(u64::MAX)
    }
}

/// Table layouts of the database's table files (the low byte of the footer's format version,
/// bytes 48..52; the bits above it are the index format).
fn format_versions(dir: &std::path::Path) -> Vec<u32> {
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "sst") {
            let bytes = std::fs::read(&path).expect("read table");
            let footer = &bytes[bytes.len() - 60..];
            versions.push(u32::from_le_bytes(footer[48..52].try_into().expect("4 bytes")) & 0xff);
        }
    }
    versions
}

fn fill(db: &Db) {
    for i in 0..30_000u32 {
        let key = format!("key{:06}", (i * 7919) % 12_000);
        db.put(&key, format!("value{i}")).expect("put");
        if i % 13 == 0 {
            db.delete(format!("key{:06}", (i * 31) % 12_000))
                .expect("delete");
        }
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
}

fn contents(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter()
        .map(|entry| {
            let (key, value) = entry.expect("entry");
            (key, value.to_vec())
        })
        .collect()
}

#[test]
fn partitioned_databases_read_like_unpartitioned_ones() {
    let plain_dir = tempfile::tempdir().expect("tempdir");
    let partitioned_dir = tempfile::tempdir().expect("tempdir");
    let plain = Db::open(plain_dir.path(), options(false)).expect("open");
    let partitioned = Db::open(partitioned_dir.path(), options(true)).expect("open");
    fill(&plain);
    fill(&partitioned);
    assert!(format_versions(plain_dir.path()).iter().all(|&v| v < 3));
    let versions = format_versions(partitioned_dir.path());
    assert!(versions.contains(&3), "no partitioned table: {versions:?}");

    let expected = contents(&plain);
    assert!(expected.len() > 5_000);
    assert_eq!(contents(&partitioned), expected);
    for i in 0..12_500u32 {
        let key = format!("key{:06}", i);
        assert_eq!(
            plain.get(&key).expect("get"),
            partitioned.get(&key).expect("get"),
            "{key}"
        );
    }
    let from = "key004000";
    let plain_range: Vec<Vec<u8>> = plain
        .range(from.as_bytes()..b"key004100".as_slice())
        .map(|e| e.expect("entry").0)
        .collect();
    let partitioned_range: Vec<Vec<u8>> = partitioned
        .range(from.as_bytes()..b"key004100".as_slice())
        .map(|e| e.expect("entry").0)
        .collect();
    assert_eq!(plain_range, partitioned_range);
    // The top-level indexes are held by the open readers and counted as pinned memory.
    assert!(partitioned.stats().pinned_bytes > 0);

    // Compaction reads partitioned inputs (with read-ahead) and writes partitioned outputs.
    partitioned.compact().expect("compact");
    assert_eq!(contents(&partitioned), expected);
    drop(partitioned);
    let report = strata::check(partitioned_dir.path(), &options(true)).expect("check");
    assert!(report.is_sound(), "{report:?}");
    let partitioned = Db::open(partitioned_dir.path(), options(true)).expect("reopen");
    assert_eq!(contents(&partitioned), expected);
    for i in (0..12_500u32).step_by(7) {
        let key = format!("key{:06}", i);
        assert_eq!(
            plain.get(&key).expect("get"),
            partitioned.get(&key).expect("get")
        );
    }
    // Reopened with partitioning off, the partitioned files still read.
    drop(partitioned);
    let reopened = Db::open(partitioned_dir.path(), options(false)).expect("reopen unpartitioned");
    assert_eq!(contents(&reopened), expected);
}
