//! The size ratio `T` of the policies that size their levels by it (leveling, tiering, lazy
//! leveling, Garnering, and each of Moose's per-level ratios): one type, validated once.

use std::fmt;

use crate::error::{Error, Result};

/// The largest size ratio a policy accepts.
pub const MAX_SIZE_RATIO: f64 = 1000.0;

/// A size ratio `T`: finite, `2 <= T <= 1000`.
///
/// Leveling, Garnering and Moose take any such `T`. Tiering and lazy leveling count runs by it
/// (`T - 1` per level before a merge) and are built only from a whole `T`
/// ([`SizeRatio::whole`]), so [`SizeRatio::runs_per_level`] is exact for them; for a
/// fractional `T` it is `floor(T) - 1`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct SizeRatio(f64);

impl SizeRatio {
    /// RocksDB's default, 10 (`max_bytes_for_level_multiplier`), leveling's.
    pub const DEFAULT: SizeRatio = SizeRatio(10.0);

    /// `T` if it is finite and in `2..=1000`; otherwise an [`Error::InvalidArgument`] naming
    /// `what` (`"garnering size_ratio"`).
    pub fn new(what: &str, size_ratio: f64) -> Result<Self> {
        if !size_ratio.is_finite() || !(2.0..=MAX_SIZE_RATIO).contains(&size_ratio) {
            return Err(Error::InvalidArgument(format!(
                "{what} must be between 2 and 1000, got {size_ratio}"
            )));
        }
        Ok(SizeRatio(size_ratio))
    }

    /// [`SizeRatio::new`], for policies that count runs by `T`: also a whole number.
    pub fn whole(what: &str, size_ratio: f64) -> Result<Self> {
        if !size_ratio.is_finite()
            || !(2.0..=MAX_SIZE_RATIO).contains(&size_ratio)
            || size_ratio.fract() != 0.0
        {
            return Err(Error::InvalidArgument(format!(
                "{what} must be a whole number between 2 and 1000, got {size_ratio}"
            )));
        }
        Ok(SizeRatio(size_ratio))
    }

    /// A constant the caller knows to be valid (a paper's setting).
    pub(super) fn from_valid(size_ratio: f64) -> Self {
        debug_assert!(SizeRatio::new("T", size_ratio).is_ok(), "{size_ratio}");
        SizeRatio(size_ratio)
    }

    /// `T`.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The runs a tiered level holds before its `T`-th triggers a merge: `floor(T) - 1`.
    pub fn runs_per_level(self) -> usize {
        // `T` is finite and in 2..=1000: the cast is exact after the floor.
        self.0.floor() as usize - 1
    }
}

impl fmt::Display for SizeRatio {
    /// `T` as an `f64` prints (`10`, `2.5`): the policies' names (`leveling(T=10)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_ratio_is_validated_once_and_counts_runs_by_its_floor() {
        for bad in [1.9, 1000.5, f64::NAN, f64::INFINITY] {
            assert!(SizeRatio::new("T", bad).is_err(), "{bad}");
            assert!(SizeRatio::whole("T", bad).is_err(), "{bad}");
        }
        assert_eq!(SizeRatio::new("T", 2.5).expect("valid").get(), 2.5);
        assert!(SizeRatio::whole("T", 2.5).is_err());
        assert_eq!(
            SizeRatio::whole("T", 4.0).expect("valid").runs_per_level(),
            3
        );
        assert_eq!(SizeRatio::new("T", 4.9).expect("valid").runs_per_level(), 3);
        assert_eq!(SizeRatio::new("T", 10.0).expect("valid").to_string(), "10");
        assert_eq!(SizeRatio::new("T", 2.5).expect("valid").to_string(), "2.5");
    }
}
