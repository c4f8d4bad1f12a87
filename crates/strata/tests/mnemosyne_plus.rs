//! End to end: Mnemosyne+ (SPEC §3.4) against uniform filters at the same budget through
//! "lookups, then a write burst with no lookups, then lookups" — the sequence that made the paper's
//! RocksDB fork read more data blocks than uniform filters — holding its cap throughout.

use std::sync::Arc;

use strata::alloc::{FilterAllocator, MnemosynePlus, Uniform};
use strata::compaction::Leveling;
use strata::{Db, Options};

const LOADED: u32 = 20_000;
const BURST: u32 = 20_000;
const LOOKUPS: u32 = 6_000;
const BITS_PER_KEY: f64 = 2.0;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Keys that are never written: between the written ones, scattered over the range.
fn missing(i: u32, range: u32) -> Vec<u8> {
    format!("key{:08}x", (i.wrapping_mul(7919)) % range).into_bytes()
}

struct Outcome {
    /// Unnecessary data-block reads per lookup in the final lookup phase.
    unnecessary_per_lookup: f64,
    /// The largest average bits per key seen (real size), and the cap.
    worst_average: f64,
    cap: Option<f64>,
}

fn run(allocator: Arc<dyn FilterAllocator>) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default()
        .write_buffer_bytes(32 * 1024)
        .target_file_bytes(32 * 1024)
        .block_cache_bytes(0)
        .compaction_policy(Arc::new(Leveling::new(4.0).expect("leveling")))
        .filter_allocator(allocator);
    let db = Db::open(dir.path(), options).expect("open");
    let mut worst_average: f64 = 0.0;
    let mut observe = |db: &Db| {
        let stats = db.stats();
        worst_average = worst_average.max(stats.average_bits_per_key);
    };
    for n in 0..LOADED {
        db.put(key((n * 7919) % LOADED * 2), b"loaded value")
            .expect("put");
    }
    db.wait_for_compactions().expect("settle");
    observe(&db);
    for i in 0..LOOKUPS {
        db.get(missing(i, LOADED * 2)).expect("get");
    }
    // The burst: new keys and updates, no lookups at all.
    for n in 0..BURST {
        let i = (n * 7919) % BURST;
        db.put(key(i * 2 + 1), b"burst insert").expect("put");
        if n % 4 == 0 {
            db.put(key(i * 2), b"burst update").expect("put");
        }
        if n % 1000 == 0 {
            observe(&db);
        }
    }
    db.wait_for_compactions().expect("settle");
    observe(&db);
    db.reset_stats();
    for i in 0..LOOKUPS {
        db.get(missing(i + LOOKUPS, LOADED * 2)).expect("get");
    }
    observe(&db);
    let stats = db.stats();
    Outcome {
        unnecessary_per_lookup: stats.io.unnecessary_data_reads_total() as f64 / f64::from(LOOKUPS),
        worst_average,
        cap: stats.bits_per_key_cap,
    }
}

#[test]
fn after_a_write_burst_mnemosyne_plus_reads_no_more_than_uniform_and_holds_its_cap() {
    let uniform = run(Arc::new(Uniform::new(BITS_PER_KEY).expect("uniform")));
    let plus = run(Arc::new(
        MnemosynePlus::new(BITS_PER_KEY).expect("mnemosyne+"),
    ));
    eprintln!(
        "unnecessary data reads per lookup after the burst: uniform {:.4}, mnemosyne+ {:.4}; \
         mnemosyne+ worst average {:.3} bits/key (cap {:?})",
        uniform.unnecessary_per_lookup, plus.unnecessary_per_lookup, plus.worst_average, plus.cap
    );
    assert!(
        plus.unnecessary_per_lookup <= uniform.unnecessary_per_lookup,
        "mnemosyne+ {} > uniform {}",
        plus.unnecessary_per_lookup,
        uniform.unnecessary_per_lookup
    );
    let cap = plus.cap.expect("mnemosyne+ has a cap");
    assert!(
        plus.worst_average <= cap + 1e-9,
        "{} > {cap}",
        plus.worst_average
    );
}
