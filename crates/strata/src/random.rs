//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", §3): the
//! engine's one seeded generator, for what must repeat from a seed — the cost models' replays,
//! random fault injection and the tests' streams. The library has no `rand` dependency; this
//! generator is small, fast and well mixed, and nothing here needs more.

/// The golden-ratio increment every step adds to the state.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 stream: the same seed, the same numbers.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream whose state starts at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in `[0, 1)`: the top 53 bits of the next number.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_the_reference_splitmix64() {
        // The first outputs of the reference implementation from seed 0 and seed 1234567.
        let mut zero = SplitMix64::new(0);
        assert_eq!(zero.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(zero.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut other = SplitMix64::new(1_234_567);
        assert_eq!(other.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(other.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn unit_draws_lie_in_the_unit_interval_and_repeat_from_the_seed() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        let draws: Vec<f64> = (0..10_000).map(|_| a.unit()).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        assert!(draws
            .iter()
            .zip(std::iter::repeat_with(|| b.unit()))
            .all(|(x, y)| *x == y));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }
}
