//! Where a compaction cuts its output files besides `target_file_bytes`: at the boundaries of
//! the files of the level below the output (RocksDB's `CompactionOutputs::ShouldStopBefore`, its
//! "pre-cut" at grandparent file boundaries).
//!
//! A file of a leveled run later moves down alone, merged with the files of the level below that
//! overlap it (`kMinOverlappingRatio` picks the file whose overlap is least). An output cut only
//! at the target size spans, on average, the boundary of one more file below than it needs to; an
//! output cut where it crosses such a boundary, once it holds half the target size, overlaps one
//! file below fewer, and its later move rewrites that much less. The threshold is half the target
//! plus 5% of it for each boundary the output has crossed, this one included (up to 90%): an
//! output that has crossed many boundaries is likely to cross another soon, so it waits for one
//! nearer the target and files do not get small. RocksDB measured the rule against a fixed threshold of 75% (its comment beside
//! the code); Strata copies its constants.
//!
//! Such an output may also grow past the target, up to twice it, while its keys stay within one
//! file of the level below (RocksDB's `Compaction::max_output_file_size_` for a job whose range
//! overlaps files of the next level but one): cut at the target there, an output ends inside a
//! file below, overlaps it and its neighbour, and leaves the rest of that file's range to a small
//! output of its own (the merge's tail, or the start of the next output), whose later move
//! rewrites the same file below again. Where a job's range overlaps no file below (the deepest
//! data for its keys), the target ends every output.

use super::{CompactionJob, OutputRun};
use crate::version::Version;

/// The files of the level below a job's output level, as the keys of the output advance.
#[derive(Debug)]
pub(crate) struct NextLevelBoundaries<'a> {
    /// `(smallest, largest)` user keys of the files below, in key order.
    files: Vec<(&'a [u8], &'a [u8])>,
    /// The first file whose largest key the output has not passed.
    index: usize,
    /// Whether the last key lay before `files[index]` (between files) rather than inside it.
    in_gap: bool,
    /// Whether a key was seen: boundaries before the first key do not count.
    seen_key: bool,
    /// Boundaries crossed since the current output file began.
    crossed_in_output: usize,
}

/// The share of the target size, in percent, from which an output is cut at a boundary.
const FIRST_CUT_PERCENT: u64 = 50;
/// What each boundary crossed in the current output adds to it, up to [`LAST_CUT_PERCENT`].
const CUT_PERCENT_PER_BOUNDARY: u64 = 5;
const LAST_CUT_PERCENT: u64 = 90;

/// The share of the target size, in percent, from which an output that has crossed
/// `crossed_in_output` boundaries of the level below (the one it is crossing included) is cut at
/// a boundary: [`FIRST_CUT_PERCENT`] plus [`CUT_PERCENT_PER_BOUNDARY`] per boundary, at most
/// [`LAST_CUT_PERCENT`].
pub(crate) fn cut_percent(crossed_in_output: usize) -> u64 {
    (FIRST_CUT_PERCENT + CUT_PERCENT_PER_BOUNDARY * crossed_in_output as u64).min(LAST_CUT_PERCENT)
}

impl<'a> NextLevelBoundaries<'a> {
    /// The boundaries for `job`'s outputs in `version` (see [`Self::for_output`]).
    pub(crate) fn for_job(version: &'a Version, job: &CompactionJob) -> Option<Self> {
        let joins = matches!(job.output_run, OutputRun::Existing(_));
        Self::for_output(version, job.output_level, joins)
    }

    /// The boundaries for a job writing to `output_level` of `version`, when its outputs are to
    /// be moved down file by file: they form or join the output level's only run, above a level
    /// of one run. `None` otherwise (level 0, tiered levels, the deepest level).
    pub(crate) fn for_output(
        version: &'a Version,
        output_level: usize,
        joins_the_level_s_run: bool,
    ) -> Option<NextLevelBoundaries<'a>> {
        let levels = version.levels();
        let output = levels.get(output_level)?;
        let below = levels.get(output_level + 1)?;
        let single_run = joins_the_level_s_run || output.runs().is_empty();
        let [run] = below.runs() else {
            return None;
        };
        if output_level == 0 || !single_run || run.files().is_empty() {
            return None;
        }
        Some(NextLevelBoundaries {
            files: run
                .files()
                .iter()
                .map(|file| (file.smallest_user_key(), file.largest_user_key()))
                .collect(),
            index: 0,
            in_gap: true,
            seen_key: false,
            crossed_in_output: 0,
        })
    }

    /// Moves to `user_key` (keys come in ascending order) and returns the file boundaries (a
    /// file's start or end) crossed since the previous key.
    pub(crate) fn advance(&mut self, user_key: &[u8]) -> usize {
        let mut crossed = 0;
        while let Some(&(smallest, largest)) = self.files.get(self.index) {
            if self.in_gap {
                if user_key < smallest {
                    break;
                }
                self.in_gap = false;
            } else {
                if user_key <= largest {
                    break;
                }
                self.in_gap = true;
                self.index += 1;
            }
            if self.seen_key {
                crossed += 1;
            }
        }
        self.seen_key = true;
        self.crossed_in_output += crossed;
        crossed
    }

    /// Whether the output file being written, of `bytes` so far, ends before the key
    /// [`advance`](Self::advance) just moved to, which crossed `crossed` boundaries.
    pub(crate) fn cut_before(&self, crossed: usize, bytes: u64, target_file_bytes: u64) -> bool {
        crossed > 0
            && bytes >= target_file_bytes.div_ceil(100) * cut_percent(self.crossed_in_output)
    }

    /// `(smallest, largest)` user keys of the files below, in key order (the simulator's merge
    /// cuts its outputs at them by the same rule, `sim::merge`).
    pub(crate) fn file_ranges(&self) -> &[(&'a [u8], &'a [u8])] {
        &self.files
    }

    /// A new output file begins.
    pub(crate) fn output_started(&mut self) {
        self.crossed_in_output = 0;
    }
}

/// The sizes that end a job's outputs: `max` wherever the next key lies, the target (with the
/// shares of [`NextLevelBoundaries::cut_before`]) where the key crosses a file boundary of the
/// level below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutputLimits {
    target: u64,
    max: u64,
}

/// How many times the target an output cut at the boundaries below may grow to.
pub(crate) const MAX_OUTPUT_TARGETS: u64 = 2;

impl OutputLimits {
    /// The limits of a job over the user keys `[smallest, largest]` whose outputs are cut at
    /// `boundaries` (if any): an output ends at twice `target_file_bytes` if a file of the level
    /// below overlaps that range (the boundary cuts then end the outputs, see the module docs),
    /// else at the target.
    pub(crate) fn new(
        boundaries: Option<&NextLevelBoundaries<'_>>,
        smallest: &[u8],
        largest: &[u8],
        target_file_bytes: u64,
    ) -> OutputLimits {
        let overlaps = boundaries.is_some_and(|below| {
            below
                .files
                .iter()
                .any(|&(low, high)| low <= largest && smallest <= high)
        });
        OutputLimits {
            target: target_file_bytes,
            max: if overlaps {
                target_file_bytes.saturating_mul(MAX_OUTPUT_TARGETS)
            } else {
                target_file_bytes
            },
        }
    }

    /// Whether an output of `bytes` so far ends before a key that crossed `crossed` boundaries of
    /// `boundaries` (as [`NextLevelBoundaries::advance`] returned them).
    pub(crate) fn ends(
        &self,
        boundaries: Option<&NextLevelBoundaries<'_>>,
        crossed: usize,
        bytes: u64,
    ) -> bool {
        bytes >= self.max
            || boundaries.is_some_and(|below| below.cut_before(crossed, bytes, self.target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::tree;

    #[test]
    fn only_outputs_joining_a_leveled_run_above_one_run_are_cut_at_boundaries() {
        let shape = tree(&[
            (0, 9, 1, "a", "z", 100),
            (1, 5, 2, "a", "m", 1000),
            (2, 4, 3, "a", "f", 4000),
            (2, 4, 4, "h", "p", 4000),
            (3, 2, 5, "a", "z", 9000),
            (3, 1, 6, "a", "z", 9000),
        ]);
        assert!(NextLevelBoundaries::for_output(&shape, 1, true).is_some());
        // A new run beside level 1's: a tiered merge.
        assert!(NextLevelBoundaries::for_output(&shape, 1, false).is_none());
        // Level 0, and a level above a level of two runs.
        assert!(NextLevelBoundaries::for_output(&shape, 0, true).is_none());
        assert!(NextLevelBoundaries::for_output(&shape, 2, true).is_none());
        // Nothing below the deepest level.
        assert!(NextLevelBoundaries::for_output(&shape, 3, true).is_none());
    }

    #[test]
    fn boundaries_are_counted_as_keys_pass_the_files_below() {
        let shape = tree(&[
            (1, 5, 1, "a", "z", 1000),
            (2, 4, 2, "c", "e", 4000),
            (2, 4, 3, "g", "i", 4000),
        ]);
        let mut below = NextLevelBoundaries::for_output(&shape, 1, true).expect("a run below");
        // Before the first key nothing counts; "a" lies before the first file.
        assert_eq!(below.advance(b"a"), 0);
        assert_eq!(below.advance(b"b"), 0);
        // Into [c, e].
        assert_eq!(below.advance(b"d"), 1);
        assert_eq!(below.advance(b"e"), 0);
        // Out of [c, e], past the gap and into [g, i]: two boundaries.
        assert_eq!(below.advance(b"h"), 2);
        // Out of [g, i], past the last file: nothing more to cross.
        assert_eq!(below.advance(b"x"), 1);
        assert_eq!(below.advance(b"y"), 0);
        assert_eq!(below.crossed_in_output, 4);
        below.output_started();
        assert_eq!(below.crossed_in_output, 0);
    }

    #[test]
    fn an_output_is_cut_at_a_boundary_from_over_half_the_target_rising_to_nine_tenths() {
        let shape = tree(&[(1, 5, 1, "a", "z", 1000), (2, 4, 2, "c", "e", 4000)]);
        let mut below = NextLevelBoundaries::for_output(&shape, 1, true).expect("a run below");
        below.advance(b"a");
        // No boundary crossed: never cut here, whatever the size.
        assert!(!below.cut_before(0, 999, 1000));
        // The first boundary counts itself: 55% of the target (10 bytes per percent here).
        let crossed = below.advance(b"d");
        assert_eq!(crossed, 1);
        assert!(!below.cut_before(crossed, 540, 1000));
        assert!(below.cut_before(crossed, 550, 1000));
        // Many boundaries crossed in this output: 90% at most.
        below.crossed_in_output = 20;
        assert!(!below.cut_before(1, 899, 1000));
        assert!(below.cut_before(1, 900, 1000));
    }

    #[test]
    fn an_output_above_files_below_grows_to_twice_the_target_between_their_boundaries() {
        let shape = tree(&[
            (1, 5, 1, "a", "z", 1000),
            (2, 4, 2, "c", "e", 4000),
            (2, 4, 3, "m", "p", 4000),
        ]);
        let mut below = NextLevelBoundaries::for_output(&shape, 1, true).expect("a run below");
        // The job's keys reach into [c, e]: twice the target, as RocksDB's non-bottommost outputs.
        let limits = OutputLimits::new(Some(&below), b"a", b"d", 1000);
        assert_eq!(limits.max, 2000);
        below.advance(b"c");
        below.advance(b"cc");
        // Inside one file below: no boundary, so neither the target nor 1.5 times it ends the output.
        assert!(!limits.ends(Some(&below), 0, 1000));
        assert!(!limits.ends(Some(&below), 0, 1999));
        assert!(limits.ends(Some(&below), 0, 2000));
        // Past the end of [c, e]: cut there, the share of the target reached.
        let crossed = below.advance(b"f");
        assert_eq!(crossed, 1);
        assert!(limits.ends(Some(&below), crossed, 1000));
        assert!(!limits.ends(Some(&below), crossed, 400));

        // A job over [f, k], between the files below: the deepest data for its keys, so the target
        // ends every output (RocksDB's `grandparents_.empty()`).
        let between = OutputLimits::new(Some(&below), b"f", b"k", 1000);
        assert_eq!(between.max, 1000);
        assert!(between.ends(Some(&below), 0, 1000));
        // No boundaries at all (level 0, a tiered level, the deepest level): the target.
        let none = OutputLimits::new(None, b"a", b"z", 1000);
        assert!(!none.ends(None, 0, 999));
        assert!(none.ends(None, 0, 1000));
        // A target near u64::MAX saturates rather than overflowing.
        let huge = OutputLimits::new(Some(&below), b"a", b"z", u64::MAX - 1);
        assert_eq!(huge.max, u64::MAX);
    }
}
