//! Where a tree's keys sit in its key range, read as numbers: the share of the range a file covers,
//! which both the per-tree lookup model (`model/tree.rs`) and elastic filters (`alloc/elastic.rs`)
//! use as the chance that a lookup's key falls in the file.

use super::Version;

/// Bytes of a key (after the shared prefix) read as a number.
const POSITION_BYTES: usize = 8;

/// Where keys sit in the tree's key range, as numbers: the first [`POSITION_BYTES`] bytes after
/// the prefix every key shares, each read as a digit in the alphabet the files' boundary keys
/// use at that position (decimal digits for keys written as numbers, all 256 values for binary
/// ones). Reading plain big-endian bytes instead would make a range of decimal keys look 25
/// times narrower per digit than it is.
pub(crate) struct KeySpace {
    prefix: usize,
    /// Per byte position after the prefix: the smallest byte seen and the digit's weight.
    digits: Vec<(u8, u8, f64)>,
    low: f64,
    width: f64,
}

impl KeySpace {
    /// The key space of `tree`'s files (their boundary keys); `None` for an empty tree.
    pub(crate) fn of_tree(tree: &Version) -> Option<KeySpace> {
        let boundaries: Vec<&[u8]> = tree
            .files()
            .flat_map(|(_, _, file)| [file.smallest_user_key(), file.largest_user_key()])
            .collect();
        KeySpace::new(&boundaries)
    }

    fn new(boundaries: &[&[u8]]) -> Option<KeySpace> {
        let smallest = *boundaries.iter().min()?;
        let largest = *boundaries.iter().max()?;
        let prefix = smallest
            .iter()
            .zip(largest)
            .take_while(|(a, b)| a == b)
            .count();
        let byte_at = |key: &[u8], i: usize| key.get(prefix + i).copied().unwrap_or(0);
        let mut ranges: Vec<(u8, u8)> = (0..POSITION_BYTES).map(|_| (u8::MAX, 0)).collect();
        for key in boundaries {
            for (i, range) in ranges.iter_mut().enumerate() {
                let byte = byte_at(key, i);
                *range = (range.0.min(byte), range.1.max(byte));
            }
        }
        // Weights from the last digit up: each digit counts (radix of the digits after it).
        let mut digits = vec![(0u8, 0u8, 0.0); POSITION_BYTES];
        let mut weight = 1.0;
        for i in (0..POSITION_BYTES).rev() {
            let (low, high) = ranges[i];
            digits[i] = (low, high, weight);
            weight *= f64::from(high - low) + 1.0;
        }
        let mut space = KeySpace {
            prefix,
            digits,
            low: 0.0,
            width: 0.0,
        };
        space.low = space.position(smallest);
        space.width = space.position(largest) - space.low;
        Some(space)
    }

    fn position(&self, key: &[u8]) -> f64 {
        self.digits
            .iter()
            .enumerate()
            .map(|(i, &(low, high, weight))| {
                let byte = key.get(self.prefix + i).copied().unwrap_or(0);
                f64::from(byte.clamp(low, high) - low) * weight
            })
            .sum()
    }

    /// Where `key` sits in the tree's key range, as a share of it: 0 at the smallest key, 1 at
    /// the largest (clamped to `[0, 1]`; 0 for a tree of one key).
    pub(crate) fn share(&self, key: &[u8]) -> f64 {
        if self.width <= 0.0 {
            return 0.0;
        }
        ((self.position(key) - self.low) / self.width).clamp(0.0, 1.0)
    }

    /// The share of the key range `[smallest, largest]` covers (1 for a tree of one key).
    pub(crate) fn coverage(&self, smallest: &[u8], largest: &[u8]) -> f64 {
        if self.width <= 0.0 {
            return 1.0;
        }
        ((self.position(largest) - self.position(smallest)) / self.width).clamp(0.0, 1.0)
    }
}
