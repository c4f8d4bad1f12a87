//! What a stream of writes is predicted to cost in table bytes written (DESIGN.md §7.6,
//! "Writes"): flushes plus the merges the policy makes, per byte the user wrote. Two
//! predictions, beside the engine's counters in `strata bench`:
//!
//! - **the closed form on the tree** ([`closed_form_write_amplification`]): `1 + sum_i w_i`, a
//!   flush and then `w_i` rewrites per level, the per-entry factor of Monkey's update cost (eq. 10;
//!   [`super::merges_per_update`]: leveling `(T-1)/2` per level, tiering `(T-1)/T`, lazy leveling
//!   Dostoevsky's `(L-1)(T-1)/T + (T-1)/2`, Garnering `sum_i (r_i - 1)/2`) with `L` the disk levels
//!   the tree holds. It is the steady state of a tree whose levels are full and whose merges take
//!   whole levels; it does not see a young tree filling its levels for the first time (its last
//!   level was written once or twice, not `(T-1)/2` times), nor partial compaction (a file moved
//!   down rewrites the overlapping files of the level below, about `T` of them, and their edges),
//!   nor trivial moves. So it is an approximation, printed as such; EcoTune and Moose take no size
//!   ratio and have none here.
//! - **the replay** (`Db::predicted_write_amplification`): the database's own merge policy,
//!   as built, run on the simulator's synthetic tree (`strata::sim`: every decision real, key
//!   ranges and overlaps modelled, no I/O) over the same stream — its entries, the entries a flush
//!   took, the tree's table bytes per entry, the write buffer, output file size and level-0 trigger
//!   in force. Its flushed and compacted bytes over its flushed bytes is the write amplification in
//!   table bytes, [`PredictedWrites::table_bytes_per_user_byte`] turns it into bytes per user byte.
//!   This is the prediction held to the measurement: it follows a tree from empty through every
//!   merge, as the engine's does, where a formula over the final shape cannot (a settled tree does
//!   not say which levels its entries passed through).

use super::{merges_per_update, ModelPolicy};
use crate::compaction::CompactionKind;
use crate::error::Result;
use crate::version::Version;

/// A stream of writes as the predictions see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteStream {
    /// Entries written (puts and deletes).
    pub entries: u64,
    /// Entries a flush took, on average (the stream's entries over the flushes the engine made
    /// of it, `IoStats::flushes`): a memtable of `write_buffer_bytes` holds fewer entries than
    /// that many bytes of table file, as its nodes take more room. At least 1.
    pub entries_per_flush: u64,
    /// Distinct keys the stream draws from; `None`: every entry a new key (a load).
    pub key_space: Option<u64>,
    /// Bytes the user wrote per entry (key and value).
    pub user_bytes_per_entry: f64,
}

/// The predicted write amplification of a [`WriteStream`] on a database.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictedWrites {
    /// Table bytes flushed and compacted per table byte flushed, by the replay of the database's
    /// merge policy (mean over [`PredictedWrites::replays`] seeds of the synthetic key ranges).
    pub replay: f64,
    /// The replays the mean is over.
    pub replays: usize,
    /// [`closed_form_write_amplification`] on the tree as it is, where the policy has one.
    pub closed_form: Option<f64>,
    /// Table bytes per entry on the tree as it is (what a flushed entry costs in table bytes).
    pub table_bytes_per_entry: f64,
    /// Bytes the user wrote per entry ([`WriteStream::user_bytes_per_entry`]).
    pub user_bytes_per_entry: f64,
}

impl PredictedWrites {
    /// Table bytes written per user byte: `amplification * table_bytes_per_entry /
    /// user_bytes_per_entry` (what `strata bench` measures as write amplification); `None` when
    /// the user's bytes per entry are not positive.
    pub fn table_bytes_per_user_byte(&self, amplification: f64) -> Option<f64> {
        (self.user_bytes_per_entry > 0.0)
            .then(|| amplification * self.table_bytes_per_entry / self.user_bytes_per_entry)
    }
}

/// Table bytes per entry on `tree` (file bytes, filters and index included, over entries);
/// `None` for an empty tree.
pub fn table_bytes_per_entry(tree: &Version) -> Option<f64> {
    let entries = tree.entries();
    (entries > 0).then(|| tree.bytes() as f64 / entries as f64)
}

/// `1 + merges_per_update(policy, L, T)`: table bytes written per table byte flushed in the
/// steady state of Monkey's model (module documentation), with `L` the disk levels of `tree`
/// that hold entries (at least 1). `None` for EcoTune and Moose (no size ratio, no closed form
/// on a tree) and for a policy the models do not cover; an out-of-range size ratio or `c` is the
/// models' [`crate::Error::InvalidArgument`].
pub fn closed_form_write_amplification(
    kind: CompactionKind,
    size_ratio: f64,
    garnering_c: f64,
    tree: &Version,
) -> Result<Option<f64>> {
    if !(size_ratio.is_finite() && size_ratio > 1.0) {
        return Err(crate::Error::InvalidArgument(format!(
            "size ratio must be a finite number above 1, not {size_ratio}"
        )));
    }
    let policy = match kind {
        CompactionKind::Garnering => ModelPolicy::new(kind, garnering_c)?,
        CompactionKind::Ecotune | CompactionKind::Moose => return Ok(None),
        kind if ModelPolicy::covers(kind) => ModelPolicy::new(kind, 1.0)?,
        _ => return Ok(None),
    };
    let levels = tree
        .levels()
        .iter()
        .skip(1)
        .filter(|level| level.entries() > 0)
        .count()
        .max(1);
    Ok(Some(1.0 + merges_per_update(policy, levels, size_ratio)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::FileMetadata;

    fn file(number: u64, entries: u64) -> FileMetadata {
        FileMetadata::new(number, b"a", b"z")
            .with_entries(entries)
            .with_file_bytes(entries * 120)
    }

    /// Level 0 and three disk levels, one of them empty: two disk levels hold entries.
    fn tree() -> Version {
        Version::builder()
            .add_file(0, 9, file(1, 100))
            .add_file(1, 1, file(2, 1_000))
            .add_file(3, 3, file(3, 10_000))
            .build()
            .expect("builds")
    }

    #[test]
    fn the_closed_form_counts_a_flush_and_the_rewrites_of_each_disk_level_holding_entries() {
        let tree = tree();
        let at = |kind| closed_form_write_amplification(kind, 4.0, 0.5, &tree).expect("valid");
        // Leveling: (T-1)/2 = 1.5 per level, two levels.
        assert_eq!(at(CompactionKind::Leveling), Some(4.0));
        assert_eq!(at(CompactionKind::LevelingDynamic), Some(4.0));
        // Tiering: (T-1)/T = 0.75 per level.
        assert_eq!(at(CompactionKind::Tiering), Some(2.5));
        // Lazy leveling: one tiered level, then the leveled last one.
        assert_eq!(at(CompactionKind::LazyLeveling), Some(1.0 + 0.75 + 1.5));
        // Garnering at c = 0.5: ratios T / c = 8 into level 1, T = 4 into the last.
        assert_eq!(at(CompactionKind::Garnering), Some(1.0 + 3.5 + 1.5));
        assert_eq!(at(CompactionKind::Ecotune), None);
        assert_eq!(at(CompactionKind::Moose), None);
        // A size ratio the models refuse is an error, not a figure.
        assert!(
            closed_form_write_amplification(CompactionKind::Leveling, 1.0, 1.0, &tree).is_err()
        );
    }

    #[test]
    fn an_empty_tree_has_no_bytes_per_entry_and_one_level() {
        let empty = Version::builder().build().expect("builds");
        assert_eq!(table_bytes_per_entry(&empty), None);
        let at = closed_form_write_amplification(CompactionKind::Tiering, 4.0, 1.0, &empty);
        assert_eq!(at.expect("valid"), Some(1.75));
        assert_eq!(table_bytes_per_entry(&tree()), Some(120.0));
    }

    #[test]
    fn bytes_per_user_byte_scale_by_the_table_bytes_an_entry_takes() {
        let predicted = PredictedWrites {
            replay: 3.0,
            replays: 3,
            closed_form: None,
            table_bytes_per_entry: 120.0,
            user_bytes_per_entry: 100.0,
        };
        assert_eq!(predicted.table_bytes_per_user_byte(3.0), Some(3.6));
        let unknown = PredictedWrites {
            user_bytes_per_entry: 0.0,
            ..predicted
        };
        assert_eq!(unknown.table_bytes_per_user_byte(3.0), None);
    }
}
