//! `Uniform(bpk)`: every file gets the same bits per key — what RocksDB, LevelDB, Pebble and fjall
//! do (DESIGN.md §3.1), and the baseline every other allocator is measured against.

use super::{FilterAllocator, FilterJob};
use crate::error::{Error, Result};
use crate::version::Version;

/// The same bits per key for every file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    bits_per_key: f64,
}

impl Uniform {
    /// The largest bits per key Strata accepts (a 0.0004% false-positive rate is far past useful).
    pub const MAX_BITS_PER_KEY: f64 = 64.0;

    /// `bits_per_key` must be finite and in `0..=64`; 0 means no filters.
    pub fn new(bits_per_key: f64) -> Result<Self> {
        if !bits_per_key.is_finite() || !(0.0..=Self::MAX_BITS_PER_KEY).contains(&bits_per_key) {
            return Err(Error::InvalidArgument(format!(
                "bits_per_key must be between 0 and {}, got {bits_per_key}",
                Self::MAX_BITS_PER_KEY
            )));
        }
        Ok(Uniform { bits_per_key })
    }
}

impl Default for Uniform {
    /// 10 bits per key (about 1% false positives), RocksDB's customary setting.
    fn default() -> Self {
        Uniform { bits_per_key: 10.0 }
    }
}

impl FilterAllocator for Uniform {
    fn name(&self) -> String {
        format!("uniform({})", self.bits_per_key)
    }

    fn bits_per_key_budget(&self) -> f64 {
        self.bits_per_key
    }

    fn allocate(&self, _tree: &Version, job: &FilterJob<'_>) -> Vec<f64> {
        vec![self.bits_per_key; job.outputs.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{JobKind, NewFile};

    #[test]
    fn uniform_gives_every_file_the_budget_and_validates_it() {
        let allocator = Uniform::new(2.5).expect("valid");
        let file = NewFile {
            file_number: 3,
            entries: 1000,
            access: None,
            filter_layout: crate::FilterLayout::default(),
        };
        let outputs = [file; 2];
        let job = FilterJob {
            kind: JobKind::Flush,
            inputs: &[],
            output_level: 0,
            output_run_id: 1,
            outputs: &outputs,
        };
        assert_eq!(
            allocator.allocate(&Version::default(), &job),
            vec![2.5, 2.5]
        );
        assert!(Uniform::new(-1.0).is_err());
        assert!(Uniform::new(f64::NAN).is_err());
        assert!(Uniform::new(65.0).is_err());
        assert!(Uniform::new(0.0).is_ok());
    }
}
