//! What several integration tests share. Each test binary that declares `mod common;` compiles
//! this file on its own.
#![allow(
    dead_code,
    reason = "each test binary uses a part of what is shared here"
)]

use strata::Db;

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", §3): a
/// stream that is a function of its seed alone, so a test's keys, orders and operations are the
/// same on every run and a failure names the seed that repeats it. The engine keeps its own copy
/// private; integration tests see only the public API.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream whose state starts at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A draw in `0..n` (`n` > 0; the modulo's bias is below 2^-40 for the sizes tests use).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    /// `0..n` in an order drawn from the stream (Fisher-Yates).
    pub fn shuffled(&mut self, n: u64) -> Vec<u64> {
        let mut order: Vec<u64> = (0..n).collect();
        for i in (1..order.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        order
    }
}

/// Puts `keys` with values of `value_bytes` bytes, flushing and waiting for the compactions every
/// `flush_entries` puts and at the end, so the engine makes its merge decisions at the same
/// points whatever the machine's load (what the model agreement tests compare against).
pub fn put_settling(
    db: &Db,
    keys: impl Iterator<Item = Vec<u8>>,
    value_bytes: usize,
    flush_entries: u64,
) {
    let value = vec![b'v'; value_bytes];
    for (n, key) in keys.enumerate() {
        db.put(key, &value).expect("put");
        if (n as u64 + 1).is_multiple_of(flush_entries) {
            db.flush().expect("flush");
            db.wait_for_compactions().expect("settle");
        }
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
}
