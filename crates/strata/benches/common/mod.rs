//! Deterministic inputs shared by the microbenchmarks: random 16-byte keys from a fixed seed, so
//! every run measures the same data.

#![allow(dead_code, reason = "each bench uses a subset of these helpers")]

/// Bytes of every benchmark user key (the `strata bench` default).
pub const KEY_BYTES: usize = 16;

/// Bytes of every benchmark value (the `strata bench` default).
pub const VALUE_BYTES: usize = 100;

/// splitmix64: tiny, fast, and good enough to make keys and orders look random.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`); the modulo bias is irrelevant here.
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }
}

/// `count` random 16-byte keys. Different seeds give disjoint sets in practice (a collision among
/// 128-bit random keys is not going to happen), which is how the benches make absent keys.
pub fn random_keys(count: usize, seed: u64) -> Vec<[u8; KEY_BYTES]> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| {
            let mut key = [0u8; KEY_BYTES];
            key[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
            key[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
            key
        })
        .collect()
}

/// Fisher-Yates shuffle.
pub fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

/// A value of [`VALUE_BYTES`] bytes.
pub fn value() -> Vec<u8> {
    vec![0x5a; VALUE_BYTES]
}
