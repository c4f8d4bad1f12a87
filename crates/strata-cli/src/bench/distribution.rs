//! Which existing key an operation targets: the key distributions of the benchmark's operation
//! streams (`ops.rs`), as YCSB defines them (`site.ycsb.generator` in YCSB's core), plus a normal
//! distribution over the key domain (the Mnemosyne paper's skewed workloads, DESIGN.md §8).
//!
//! A [`KeyChooser`] draws an index in `0..n` given an rng and the current number of keys `n`
//! (keys `0..n` exist; `n` grows as a workload inserts). Everything expensive (zeta) is computed
//! once and then updated incrementally, so [`KeyChooser::next`] is O(1) amortized and allocates
//! nothing. The only state besides precomputed constants is Box–Muller's spare normal deviate
//! and the zipfian's zeta for the last `n`: a chooser is a pure function of its parameters and
//! the rng's seed.
//!
//! # Command-line strings
//! [`KeyDistribution`] parses from, displays as, and serializes to the same strings:
//!
//! | string | distribution |
//! | --- | --- |
//! | `uniform` | every existing key equally likely |
//! | `zipfian`, `zipfian:THETA` | YCSB's `requestdistribution=zipfian`: scrambled zipfian, `THETA` default 0.99 |
//! | `zipfian-unscrambled[:THETA]` | YCSB's plain `ZipfianGenerator`: key 0 is the hottest, then key 1, ... |
//! | `normal`, `normal:MEAN:STDDEV` | normal over the key domain; `MEAN` and `STDDEV` are fractions of `n` (defaults 0.5 and 0.1) |
//! | `latest`, `latest:THETA` | YCSB's `requestdistribution=latest`: the newest key is the hottest (`THETA` default 0.99) |
//!
//! `Display` always writes the parameters (`zipfian:0.99`), so `parse(display(d)) == d`.

// Until the harness (being refactored around an `Engine` trait) runs these streams, only the
// tests use them.

use std::f64::consts::TAU;
use std::fmt;
use std::str::FromStr;

use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// YCSB's default zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const YCSB_ZIPFIAN_THETA: f64 = 0.99;

/// Default mean of `normal`, as a fraction of the key domain (the middle key).
pub const DEFAULT_NORMAL_MEAN: f64 = 0.5;

/// Default standard deviation of `normal`, as a fraction of the key domain: about 68% of the
/// draws fall in the middle fifth of the keys.
pub const DEFAULT_NORMAL_STDDEV: f64 = 0.1;

/// Number of zipfian ranks YCSB's `ScrambledZipfianGenerator` draws from
/// (`ScrambledZipfianGenerator.ITEM_COUNT`) before hashing a rank onto the key space.
pub const SCRAMBLED_ZIPFIAN_RANKS: u64 = 10_000_000_000;

/// Redraws a rejection-sampled chooser (scrambled zipfian, normal) makes before it falls back
/// to a deterministic answer, so `next` stays O(1) even for a degenerate key space.
const MAX_REJECTIONS: u32 = 64;

/// A key distribution, parsed from the command line (see the module docs for the strings).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    /// Every existing key equally likely.
    Uniform,
    /// YCSB's scrambled zipfian (`requestdistribution=zipfian`): zipfian ranks hashed with
    /// FNV-1a 64 onto the key space, so the hot keys are spread over the key range.
    Zipfian {
        /// The zipfian constant, in `(0, 1)`; YCSB uses 0.99.
        theta: f64,
    },
    /// Plain zipfian (YCSB's `ZipfianGenerator`): key `i` has rank `i`, so key 0 is the hottest
    /// and the hot keys are all at the start of the key range.
    ZipfianUnscrambled {
        /// The zipfian constant, in `(0, 1)`.
        theta: f64,
    },
    /// Normal over the key domain: index `floor((mean + stddev * z) * n)` for a standard normal
    /// `z`, redrawn while outside `0..n`.
    Normal {
        /// Mean, as a fraction of the key domain, in `[0, 1]` (default 0.5).
        mean: f64,
        /// Standard deviation, as a fraction of the key domain, `> 0` (default 0.1).
        stddev: f64,
    },
    /// YCSB's skewed-latest (`requestdistribution=latest`): the most recently inserted keys are
    /// the hottest, `n - 1 - zipfian(n)`. (YCSB's generator computes `last - zipfian(last)`
    /// with `last = n - 1`, the newest key number, so it never draws key 0 and draws the newest
    /// key with probability `1 / zeta(n - 1)`; the difference is one key's worth of a
    /// zipfian's tail.)
    Latest {
        /// The zipfian constant, in `(0, 1)`; YCSB uses 0.99.
        theta: f64,
    },
}

impl KeyDistribution {
    /// YCSB's default zipfian (scrambled, theta 0.99).
    pub const YCSB_ZIPFIAN: KeyDistribution = KeyDistribution::Zipfian {
        theta: YCSB_ZIPFIAN_THETA,
    };

    /// YCSB's default latest (theta 0.99).
    pub const YCSB_LATEST: KeyDistribution = KeyDistribution::Latest {
        theta: YCSB_ZIPFIAN_THETA,
    };

    /// `Err` with a message naming the bad parameter if the parameters are out of range.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            KeyDistribution::Uniform => Ok(()),
            KeyDistribution::Zipfian { theta }
            | KeyDistribution::ZipfianUnscrambled { theta }
            | KeyDistribution::Latest { theta } => {
                // Gray et al.'s algorithm needs alpha = 1 / (1 - theta) finite and positive.
                if theta > 0.0 && theta < 1.0 {
                    Ok(())
                } else {
                    Err(format!(
                        "zipfian theta must be in (0, 1) (YCSB uses 0.99), got {theta}"
                    ))
                }
            }
            KeyDistribution::Normal { mean, stddev } => {
                if !(0.0..=1.0).contains(&mean) {
                    return Err(format!(
                        "normal mean is a fraction of the key domain and must be in [0, 1], \
                         got {mean}"
                    ));
                }
                if !(stddev > 0.0 && stddev.is_finite()) {
                    return Err(format!(
                        "normal stddev is a fraction of the key domain and must be > 0, \
                         got {stddev}"
                    ));
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for KeyDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // f64's Display is the shortest string that parses back to the same value.
        match self {
            KeyDistribution::Uniform => write!(f, "uniform"),
            KeyDistribution::Zipfian { theta } => write!(f, "zipfian:{theta}"),
            KeyDistribution::ZipfianUnscrambled { theta } => {
                write!(f, "zipfian-unscrambled:{theta}")
            }
            KeyDistribution::Normal { mean, stddev } => write!(f, "normal:{mean}:{stddev}"),
            KeyDistribution::Latest { theta } => write!(f, "latest:{theta}"),
        }
    }
}

const DISTRIBUTION_FORMS: &str = "uniform, zipfian[:THETA], zipfian-unscrambled[:THETA], \
                                  normal[:MEAN:STDDEV] or latest[:THETA]";

impl FromStr for KeyDistribution {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, params) = match text.split_once(':') {
            Some((name, params)) => (name, Some(params)),
            None => (text, None),
        };
        let numbers = match params {
            None => Vec::new(),
            Some(params) => params
                .split(':')
                .map(|param| {
                    param.trim().parse::<f64>().map_err(|_| {
                        format!("key distribution {text:?}: {param:?} is not a number")
                    })
                })
                .collect::<Result<Vec<f64>, String>>()?,
        };
        let theta = |numbers: &[f64]| match numbers {
            [] => Ok(YCSB_ZIPFIAN_THETA),
            [theta] => Ok(*theta),
            _ => Err(format!(
                "key distribution {text:?}: {name} takes one parameter, THETA (e.g. {name}:0.99)"
            )),
        };
        let distribution = match name.trim() {
            "uniform" if numbers.is_empty() => KeyDistribution::Uniform,
            "uniform" => {
                return Err(format!(
                    "key distribution {text:?}: uniform takes no parameters"
                ))
            }
            "zipfian" => KeyDistribution::Zipfian {
                theta: theta(&numbers)?,
            },
            "zipfian-unscrambled" => KeyDistribution::ZipfianUnscrambled {
                theta: theta(&numbers)?,
            },
            "latest" => KeyDistribution::Latest {
                theta: theta(&numbers)?,
            },
            "normal" => match numbers[..] {
                [] => KeyDistribution::Normal {
                    mean: DEFAULT_NORMAL_MEAN,
                    stddev: DEFAULT_NORMAL_STDDEV,
                },
                [mean, stddev] => KeyDistribution::Normal { mean, stddev },
                _ => {
                    return Err(format!(
                        "key distribution {text:?}: normal takes two parameters, MEAN:STDDEV \
                         as fractions of the key domain (e.g. normal:0.5:0.1)"
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "unknown key distribution {text:?}: expected {DISTRIBUTION_FORMS}"
                ))
            }
        };
        distribution
            .validate()
            .map_err(|reason| format!("key distribution {text:?}: {reason}"))?;
        Ok(distribution)
    }
}

impl Serialize for KeyDistribution {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyDistribution {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 over the 8 little-endian bytes of `value`, then
/// `Math.abs` of the result read as a signed long. (Java's `Math.abs(Long.MIN_VALUE)` stays
/// negative and would give a negative key; `unsigned_abs` gives 2^63 instead.)
pub fn ycsb_fnv_hash64(value: u64) -> u64 {
    const FNV_OFFSET_BASIS_64: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME_64: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET_BASIS_64;
    for byte in value.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).unsigned_abs()
}

/// `zeta(n, theta) = sum_{i=1}^{n} 1 / i^theta`, the zipfian normalisation constant (Gray et
/// al., "Quickly generating billion-record synthetic databases", SIGMOD 1994).
///
/// Exact summation up to [`Zipf::EXACT_TERMS`] terms; beyond, the Euler–Maclaurin formula for
/// the tail, `sum_{i=m+1}^{n} f(i) = int_m^n f + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12
/// - (f'''(n) - f'''(m)) / 720 + R` with `f(x) = x^-theta`, whose remainder is below 1e-15 for
/// `m = 1024`. YCSB sums all `n` terms (a second per billion keys); its precomputed
/// `ZETAN = 26.46902820178302` for 10^10 ranks is reproduced by this formula (see the tests).
pub fn zeta(n: u64, theta: f64) -> f64 {
    let exact_terms = n.min(Zipf::EXACT_TERMS);
    let head = zeta_terms(1, exact_terms, theta);
    if n <= Zipf::EXACT_TERMS {
        return head;
    }
    let (m, n) = (exact_terms as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let f1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let f3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let integral = (n.powf(1.0 - theta) - m.powf(1.0 - theta)) / (1.0 - theta);
    let tail = integral + (f(n) - f(m)) / 2.0 + (f1(n) - f1(m)) / 12.0 - (f3(n) - f3(m)) / 720.0;
    head + tail
}

/// `sum_{i=first}^{last} 1 / i^theta` (0 when `first > last`).
fn zeta_terms(first: u64, last: u64, theta: f64) -> f64 {
    (first..=last).map(|i| (i as f64).powf(-theta)).sum()
}

/// Zipfian ranks `0..items` (rank 0 the most popular): Gray et al.'s rejection-free algorithm
/// exactly as YCSB's `ZipfianGenerator.nextLong(itemcount)`, which draws ranks 0 and 1 with
/// their exact probabilities `1 / zeta` and `1 / (2^theta zeta)` and ranks >= 2 from a
/// continuous approximation. When the item count changes, zeta is updated incrementally (one
/// term per new item, as YCSB does) or recomputed if the jump is large.
///
/// One deliberate difference: when YCSB recomputes `eta` for a grown item count it still uses
/// the *original* item count in `(2 / items)^(1 - theta)` (a long-standing YCSB bug); this uses
/// the current count, as Gray et al.'s formula says.
#[derive(Debug, Clone)]
struct Zipf {
    theta: f64,
    /// `1 / (1 - theta)`.
    alpha: f64,
    /// `0.5^theta`: rank 1's weight relative to rank 0's.
    half_pow_theta: f64,
    /// The item count `zeta_n` and `eta` were computed for.
    items: u64,
    /// `zeta(items, theta)`.
    zeta_n: f64,
    /// `(1 - (2 / items)^(1 - theta)) / (1 - zeta(2, theta) / zeta_n)`.
    eta: f64,
}

impl Zipf {
    /// Terms summed exactly before [`zeta`] switches to Euler–Maclaurin; also the largest growth
    /// of the item count that is applied term by term.
    const EXACT_TERMS: u64 = 1024;

    fn new(items: u64, theta: f64) -> Self {
        let mut zipf = Zipf {
            theta,
            alpha: 1.0 / (1.0 - theta),
            half_pow_theta: 0.5f64.powf(theta),
            items,
            zeta_n: zeta(items, theta),
            eta: 0.0,
        };
        zipf.eta = zipf.eta_for(items);
        zipf
    }

    fn eta_for(&self, items: u64) -> f64 {
        // Only used for ranks >= 2, i.e. items >= 3; for fewer items eta is 0/0.
        if items < 3 {
            return 0.0;
        }
        let zeta2 = 1.0 + self.half_pow_theta;
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - zeta2 / self.zeta_n)
    }

    /// Brings `zeta_n` and `eta` to `items`: term by term for a small growth (O(1) amortized
    /// when items grow one insert at a time), recomputed otherwise (O(EXACT_TERMS)).
    fn resize(&mut self, items: u64) {
        if items > self.items && items - self.items <= Self::EXACT_TERMS {
            self.zeta_n += zeta_terms(self.items + 1, items, self.theta);
        } else {
            self.zeta_n = zeta(items, self.theta);
        }
        self.items = items;
        self.eta = self.eta_for(items);
    }

    /// The probability of `rank` among `items` ranks, `1 / ((rank + 1)^theta zeta(items))`.
    #[cfg(test)]
    fn probability(&self, rank: u64) -> f64 {
        ((rank + 1) as f64).powf(-self.theta) / self.zeta_n
    }

    /// A rank in `0..items` (0 when `items == 0`).
    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R, items: u64) -> u64 {
        if items != self.items {
            self.resize(items);
        }
        let u: f64 = rng.gen();
        let uz = u * self.zeta_n;
        if uz < 1.0 || items < 2 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let rank = (items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(items - 1)
    }
}

/// Draws key indexes from a [`KeyDistribution`]; see the module docs.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    kind: ChooserKind,
}

#[derive(Debug, Clone)]
enum ChooserKind {
    Uniform,
    Zipfian(Zipf),
    Scrambled {
        ranks: Zipf,
        key_space: u64,
    },
    Normal {
        mean: f64,
        stddev: f64,
        /// Box–Muller makes deviates in pairs; the second waits here.
        spare: Option<f64>,
    },
    Latest(Zipf),
}

impl KeyChooser {
    /// A chooser for `distribution`. `key_space` is the number of keys the workload may reach,
    /// which only the scrambled zipfian uses: as YCSB's `CoreWorkload` it hashes ranks modulo a
    /// key space fixed up front (YCSB: `recordcount + 2 * operationcount * insertproportion`),
    /// so inserts do not move the hot keys, and redraws a key that is not inserted yet. Keys
    /// `>= key_space` are never drawn by it, as in YCSB. (The other zipfians precompute zeta for
    /// `key_space` items and follow the `n` given to [`KeyChooser::next`] incrementally.)
    pub fn new(distribution: KeyDistribution, key_space: u64) -> Result<Self, String> {
        distribution.validate()?;
        let key_space = key_space.max(1);
        let kind = match distribution {
            KeyDistribution::Uniform => ChooserKind::Uniform,
            KeyDistribution::Zipfian { theta } => ChooserKind::Scrambled {
                ranks: Zipf::new(SCRAMBLED_ZIPFIAN_RANKS, theta),
                key_space,
            },
            KeyDistribution::ZipfianUnscrambled { theta } => {
                ChooserKind::Zipfian(Zipf::new(key_space, theta))
            }
            KeyDistribution::Normal { mean, stddev } => ChooserKind::Normal {
                mean,
                stddev,
                spare: None,
            },
            KeyDistribution::Latest { theta } => ChooserKind::Latest(Zipf::new(key_space, theta)),
        };
        Ok(KeyChooser { kind })
    }

    /// A key index in `0..n`, where keys `0..n` exist (`n` may differ between calls). `n` must
    /// be at least 1; with `n == 0` the answer is 0, which is no key.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        match &mut self.kind {
            ChooserKind::Uniform => rng.gen_range(0..n),
            ChooserKind::Zipfian(zipf) => zipf.sample(rng, n),
            ChooserKind::Latest(zipf) => n - 1 - zipf.sample(rng, n),
            ChooserKind::Scrambled { ranks, key_space } => {
                // YCSB's CoreWorkload.nextKeynum: redraw while the key is not inserted yet.
                let mut index = 0;
                for _ in 0..MAX_REJECTIONS {
                    index =
                        ycsb_fnv_hash64(ranks.sample(rng, SCRAMBLED_ZIPFIAN_RANKS)) % *key_space;
                    if index < n {
                        return index;
                    }
                }
                // Only when n is a tiny fraction of the key space: keep it O(1).
                index % n
            }
            ChooserKind::Normal {
                mean,
                stddev,
                spare,
            } => {
                let domain = n as f64;
                let mut position = 0.0;
                for _ in 0..MAX_REJECTIONS {
                    position = (*mean + *stddev * standard_normal(rng, spare)) * domain;
                    if position >= 0.0 && position < domain {
                        break;
                    }
                }
                // Float-to-int casts saturate; clamp covers the (vanishingly rare) case where
                // every draw was rejected.
                (position.max(0.0) as u64).min(n - 1)
            }
        }
    }
}

/// A standard normal deviate by the Box–Muller transform, two per pair of uniforms.
fn standard_normal<R: Rng + ?Sized>(rng: &mut R, spare: &mut Option<f64>) -> f64 {
    if let Some(z) = spare.take() {
        return z;
    }
    // 1 - [0, 1) = (0, 1]: ln is finite.
    let u1 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    let radius = (-2.0 * u1.ln()).sqrt();
    let angle = TAU * u2;
    *spare = Some(radius * angle.sin());
    radius * angle.cos()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    /// Draw counts per index.
    fn histogram(chooser: &mut KeyChooser, seed: u64, n: u64, draws: u64) -> Vec<u64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let index = chooser.next(&mut rng, n);
            assert!(index < n, "{index} out of 0..{n}");
            counts[index as usize] += 1;
        }
        counts
    }

    /// `|observed - expected| <= 5 sigma` of a binomial(draws, p) count.
    fn assert_binomial(observed: u64, draws: u64, p: f64, what: &str) {
        let expected = draws as f64 * p;
        let sigma = (draws as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (observed as f64 - expected).abs() <= 5.0 * sigma,
            "{what}: observed {observed}, expected {expected:.1} +- 5 * {sigma:.1}"
        );
    }

    /// Indexes sorted by decreasing count.
    fn by_frequency(counts: &[u64]) -> Vec<(u64, u64)> {
        let mut ranked: Vec<(u64, u64)> = counts
            .iter()
            .enumerate()
            .map(|(index, &count)| (index as u64, count))
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    #[test]
    fn strings_round_trip_through_display_and_serde() {
        let cases = [
            ("uniform", KeyDistribution::Uniform),
            ("zipfian", KeyDistribution::Zipfian { theta: 0.99 }),
            ("zipfian:0.8", KeyDistribution::Zipfian { theta: 0.8 }),
            (
                "zipfian-unscrambled:0.5",
                KeyDistribution::ZipfianUnscrambled { theta: 0.5 },
            ),
            (
                "normal",
                KeyDistribution::Normal {
                    mean: 0.5,
                    stddev: 0.1,
                },
            ),
            (
                "normal:0.25:0.03",
                KeyDistribution::Normal {
                    mean: 0.25,
                    stddev: 0.03,
                },
            ),
            ("latest", KeyDistribution::Latest { theta: 0.99 }),
            ("latest:0.7", KeyDistribution::Latest { theta: 0.7 }),
        ];
        for (text, expected) in cases {
            let parsed: KeyDistribution = text.parse().expect(text);
            assert_eq!(parsed, expected, "{text}");
            let shown = parsed.to_string();
            assert_eq!(shown.parse::<KeyDistribution>(), Ok(parsed), "{shown}");
            let json = serde_json::to_string(&parsed).expect("serializes");
            assert_eq!(json, format!("\"{shown}\""));
            let back: KeyDistribution = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(back, parsed);
        }
        assert_eq!(KeyDistribution::YCSB_ZIPFIAN.to_string(), "zipfian:0.99");
        assert_eq!(
            "normal".parse::<KeyDistribution>().map(|d| d.to_string()),
            Ok("normal:0.5:0.1".to_string())
        );
    }

    #[test]
    fn invalid_strings_are_rejected_with_a_reason() {
        let cases = [
            ("pareto", "expected uniform, zipfian[:THETA]"),
            ("", "unknown key distribution"),
            ("uniform:1", "uniform takes no parameters"),
            ("zipfian:abc", "\"abc\" is not a number"),
            ("zipfian:1", "theta must be in (0, 1)"),
            ("zipfian:0", "theta must be in (0, 1)"),
            ("latest:1.5", "theta must be in (0, 1)"),
            ("zipfian:0.9:0.1", "takes one parameter"),
            ("normal:0.5", "two parameters, MEAN:STDDEV"),
            ("normal:1.5:0.1", "mean is a fraction"),
            ("normal:0.5:0", "stddev is a fraction"),
            ("normal:0.5:NaN", "stddev is a fraction"),
        ];
        for (text, reason) in cases {
            let error = text.parse::<KeyDistribution>().expect_err(text);
            assert!(error.contains(reason), "{text:?}: {error}");
        }
        assert!(serde_json::from_str::<KeyDistribution>("\"zipfian:2\"").is_err());
        assert!(KeyChooser::new(KeyDistribution::Latest { theta: 1.0 }, 10).is_err());
    }

    #[test]
    fn zeta_matches_exact_sums_and_ycsbs_constant() {
        for theta in [0.5, 0.8, 0.99] {
            for n in [0u64, 1, 2, 1023, 1024, 1025, 5_000, 200_000] {
                let exact = zeta_terms(1, n, theta);
                let fast = zeta(n, theta);
                assert!(
                    (fast - exact).abs() <= 1e-10 * exact.max(1.0),
                    "zeta({n}, {theta}): {fast} vs {exact}"
                );
            }
        }
        // YCSB's ScrambledZipfianGenerator.ZETAN, precomputed for 10^10 items at theta 0.99.
        let ycsb_zetan = 26.469_028_201_783_02;
        let ours = zeta(SCRAMBLED_ZIPFIAN_RANKS, 0.99);
        assert!((ours - ycsb_zetan).abs() < 1e-9, "{ours} vs {ycsb_zetan}");
    }

    #[test]
    fn zeta_follows_a_growing_item_count_incrementally() {
        let mut zipf = Zipf::new(1000, 0.99);
        let mut rng = StdRng::seed_from_u64(3);
        for items in 1000..6000 {
            zipf.sample(&mut rng, items);
        }
        zipf.sample(&mut rng, 1_000_000); // a jump: recomputed
        assert!((zipf.zeta_n - zeta(1_000_000, 0.99)).abs() < 1e-12);
        zipf.sample(&mut rng, 5999); // shrinking: recomputed
        assert!((zipf.zeta_n - zeta_terms(1, 5999, 0.99)).abs() < 1e-9);
        let fresh = Zipf::new(5999, 0.99);
        assert!((zipf.eta - fresh.eta).abs() < 1e-12);
    }

    #[test]
    fn ycsb_fnv_hash_is_fnv1a_over_little_endian_bytes() {
        // Reference FNV-1a 64 over a byte string.
        let fnv1a = |bytes: &[u8]| {
            bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        };
        assert_eq!(
            fnv1a(b"foobar"),
            0x8594_4171_f739_67e8,
            "reference is FNV-1a"
        );
        for value in [0u64, 1, 2, 12_345, u64::MAX / 3] {
            let expected = (fnv1a(&value.to_le_bytes()) as i64).unsigned_abs();
            assert_eq!(ycsb_fnv_hash64(value), expected);
        }
    }

    #[test]
    fn uniform_passes_a_chi_square_test() {
        let (buckets, draws) = (100u64, 100_000u64);
        let n = 1_000_000u64;
        let chi_square = |chooser: &mut KeyChooser| {
            let mut rng = StdRng::seed_from_u64(11);
            let mut counts = vec![0u64; buckets as usize];
            for _ in 0..draws {
                let index = chooser.next(&mut rng, n);
                assert!(index < n);
                counts[(index * buckets / n) as usize] += 1;
            }
            let expected = (draws / buckets) as f64;
            counts
                .iter()
                .map(|&count| (count as f64 - expected).powi(2) / expected)
                .sum::<f64>()
        };
        // 99 degrees of freedom: mean 99, standard deviation sqrt(198) ~= 14.1; 5 sigma.
        let threshold = 99.0 + 5.0 * 198f64.sqrt();
        let mut uniform = KeyChooser::new(KeyDistribution::Uniform, n).expect("valid");
        let statistic = chi_square(&mut uniform);
        assert!(
            statistic < threshold,
            "chi-square {statistic} >= {threshold}"
        );
        // The test has power: a normal fails it by a mile.
        let mut normal = KeyChooser::new("normal".parse().expect("valid"), n).expect("valid");
        assert!(chi_square(&mut normal) > 100.0 * threshold);
    }

    #[test]
    fn unscrambled_zipfian_top_ranks_match_their_probabilities() {
        for (theta, seed) in [(0.99, 1u64), (0.6, 2)] {
            let (n, draws) = (10_000u64, 200_000u64);
            let distribution = KeyDistribution::ZipfianUnscrambled { theta };
            let mut chooser = KeyChooser::new(distribution, n).expect("valid");
            let counts = histogram(&mut chooser, seed, n, draws);
            let zipf = Zipf::new(n, theta);
            // Gray et al. draw ranks 0 and 1 exactly: p(i) = 1 / ((i + 1)^theta zeta(n)).
            assert!((zipf.probability(0) - 1.0 / zeta(n, theta)).abs() < 1e-15);
            assert_binomial(counts[0], draws, zipf.probability(0), "rank 0");
            assert_binomial(counts[1], draws, zipf.probability(1), "rank 1");
            // Ranks >= 2 come from Gray et al.'s continuous approximation: rank >= k exactly
            // when u >= u_k = 1 - (1 - (k / n)^(1 - theta)) / eta, so the algorithm gives
            // ranks a..b the probability u_b - u_a. Check that (binomial, 5 sigma), and that
            // it stays close to the true zipfian (it overweights rank 2 by ~18%, the ranks
            // 2..100 together by ~3%).
            let u = |k: u64| 1.0 - (1.0 - (k as f64 / n as f64).powf(1.0 - theta)) / zipf.eta;
            assert!((u(2) - (1.0 + zipf.half_pow_theta) / zipf.zeta_n).abs() < 1e-12);
            for (a, b) in [(2u64, 3u64), (3, 10), (10, 100), (100, 1_000), (1_000, n)] {
                let observed: u64 = counts[a as usize..b as usize].iter().sum();
                assert_binomial(observed, draws, u(b) - u(a), "ranks a..b");
                let zipfian: f64 = (a..b).map(|rank| zipf.probability(rank)).sum();
                let relative = (u(b) - u(a)) / zipfian - 1.0;
                let allowed = if a == 2 { 0.25 } else { 0.1 };
                assert!(relative.abs() < allowed, "ranks {a}..{b}: {relative:+.3}");
            }
            let hottest: Vec<u64> = by_frequency(&counts)[..2].iter().map(|e| e.0).collect();
            assert_eq!(hottest, [0, 1]);
        }
    }

    #[test]
    fn scrambled_zipfian_spreads_hot_keys_and_keeps_rank_frequencies() {
        let (n, draws) = (100_000u64, 200_000u64);
        let mut chooser = KeyChooser::new(KeyDistribution::YCSB_ZIPFIAN, n).expect("valid");
        let counts = histogram(&mut chooser, 5, n, draws);
        let ranked = by_frequency(&counts);
        // The hottest key is rank 0 hashed, as in YCSB: fnvhash64(0) % itemcount.
        assert_eq!(ranked[0].0, ycsb_fnv_hash64(0) % n);
        assert_eq!(ranked[1].0, ycsb_fnv_hash64(1) % n);
        // Rank frequencies are the zipfian's over 10^10 ranks (other ranks landing on the
        // same key add about 1/n each, far below the tolerance).
        let ranks = Zipf::new(SCRAMBLED_ZIPFIAN_RANKS, 0.99);
        assert_binomial(ranked[0].1, draws, ranks.probability(0), "hottest key");
        assert_binomial(ranked[1].1, draws, ranks.probability(1), "second key");
        // Spread: of the 100 hottest keys about 1 is expected in the first 1% of the key
        // space (all 100 for the unscrambled zipfian), and they span most of it.
        let hot: Vec<u64> = ranked[..100].iter().map(|e| e.0).collect();
        let in_first_percent = hot.iter().filter(|&&index| index < n / 100).count();
        assert!(
            in_first_percent <= 10,
            "{in_first_percent} of 100 hot keys in 1%"
        );
        let span = hot.iter().max().unwrap_or(&0) - hot.iter().min().unwrap_or(&0);
        assert!(span > n / 2, "hot keys span only {span} of {n}");
    }

    #[test]
    fn scrambled_zipfian_only_draws_inserted_keys_of_a_larger_key_space() {
        // YCSB sizes the key space for the inserts to come; keys not inserted yet are redrawn,
        // and the hot keys stay where they are as n grows.
        let key_space = 30_000;
        let mut chooser = KeyChooser::new(KeyDistribution::YCSB_ZIPFIAN, key_space).expect("ok");
        let mut rng = StdRng::seed_from_u64(9);
        for n in [10_000u64, 20_000] {
            let mut counts: HashMap<u64, u64> = HashMap::new();
            for _ in 0..50_000 {
                let index = chooser.next(&mut rng, n);
                assert!(index < n);
                *counts.entry(index).or_default() += 1;
            }
            let hottest = counts.iter().max_by_key(|e| (*e.1, *e.0)).map(|e| *e.0);
            // The lowest rank whose hashed key is already inserted.
            let expected = (0..)
                .map(|rank| ycsb_fnv_hash64(rank) % key_space)
                .find(|&index| index < n);
            assert_eq!(hottest, expected, "n = {n}");
        }
        // Degenerate case: a single inserted key in a huge key space still answers in O(1).
        let mut tiny = KeyChooser::new(KeyDistribution::YCSB_ZIPFIAN, u64::MAX).expect("ok");
        assert!(tiny.next(&mut rng, 3) < 3);
    }

    #[test]
    fn normal_has_its_mean_stddev_and_68_percent_within_one_sigma() {
        let (n, draws) = (1_000_000u64, 100_000u64);
        let distribution = KeyDistribution::Normal {
            mean: 0.5,
            stddev: 0.1,
        };
        let mut chooser = KeyChooser::new(distribution, n).expect("valid");
        let mut rng = StdRng::seed_from_u64(17);
        let draws_f = draws as f64;
        let (mean, sigma) = (0.5 * n as f64, 0.1 * n as f64);
        let (mut sum, mut sum_sq, mut within) = (0.0, 0.0, 0u64);
        for _ in 0..draws {
            let index = chooser.next(&mut rng, n);
            assert!(index < n);
            // + 0.5: the index is the floor of a continuous position.
            let x = index as f64 + 0.5;
            sum += x;
            sum_sq += x * x;
            if (x - mean).abs() <= sigma {
                within += 1;
            }
        }
        let sample_mean = sum / draws_f;
        let sample_sd = (sum_sq / draws_f - sample_mean * sample_mean).sqrt();
        // Standard error of the mean sigma / sqrt(N); of the stddev about sigma / sqrt(2N).
        assert!((sample_mean - mean).abs() < 5.0 * sigma / draws_f.sqrt());
        assert!((sample_sd - sigma).abs() < 5.0 * sigma / (2.0 * draws_f).sqrt());
        assert_binomial(within, draws, 0.682_689_492, "within one sigma");

        // Near an edge, draws outside 0..n are redrawn, never clamped onto the edge key.
        let edge = KeyDistribution::Normal {
            mean: 0.0,
            stddev: 0.1,
        };
        let counts = histogram(
            &mut KeyChooser::new(edge, 1000).expect("ok"),
            4,
            1000,
            20_000,
        );
        assert!(counts[0] < 20_000 / 50, "edge key has {} draws", counts[0]);
        assert!(counts[500..].iter().sum::<u64>() == 0);
    }

    #[test]
    fn latest_prefers_the_newest_keys_as_they_are_inserted() {
        let distribution = KeyDistribution::YCSB_LATEST;
        let (n, draws) = (10_000u64, 100_000u64);
        let mut chooser = KeyChooser::new(distribution, n).expect("valid");
        let counts = histogram(&mut chooser, 8, n, draws);
        let ranked = by_frequency(&counts);
        assert_eq!(ranked[0].0, n - 1);
        assert_eq!(ranked[1].0, n - 2);
        let zipf = Zipf::new(n, 0.99);
        assert_binomial(
            counts[(n - 1) as usize],
            draws,
            zipf.probability(0),
            "newest",
        );
        assert!(ranked[..10].iter().all(|e| e.0 >= n - n / 100));
        // Keys inserted later take over.
        let mut rng = StdRng::seed_from_u64(8);
        let newest = (0..draws)
            .filter(|_| chooser.next(&mut rng, n + 500) == n + 499)
            .count() as u64;
        let zipf = Zipf::new(n + 500, 0.99);
        assert_binomial(newest, draws, zipf.probability(0), "newest after inserts");
    }

    #[test]
    fn choosers_are_deterministic_per_seed() {
        for text in [
            "uniform",
            "zipfian",
            "zipfian-unscrambled",
            "normal",
            "latest",
        ] {
            let draw = |seed| {
                let distribution: KeyDistribution = text.parse().expect("valid");
                let mut chooser = KeyChooser::new(distribution, 1000).expect("valid");
                let mut rng = StdRng::seed_from_u64(seed);
                (0..200)
                    .map(|i| chooser.next(&mut rng, 1000 + i))
                    .collect::<Vec<u64>>()
            };
            assert_eq!(draw(1), draw(1), "{text}");
            assert_ne!(draw(1), draw(2), "{text}");
        }
    }
}
