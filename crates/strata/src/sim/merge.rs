//! The merge of a compaction's inputs under the simulator's overwrite model (the module docs of
//! `sim`): each input file holds a uniform random subset of the keys in its range, independently of
//! the others, so a stretch of keys of width `w` covered by files of densities `d_i` keeps
//! `w * (1 - Π (1 - d_i))` distinct keys.

use crate::version::FileMetadata;

/// One output file of a merge: its key range and entries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Piece {
    pub(super) smallest: u64,
    pub(super) largest: u64,
    pub(super) entries: u64,
}

/// A stretch of keys `[start, end)` covered by the same input files, and the distinct keys the
/// merge expects in it (`width * (1 - Π (1 - d_i))`).
struct Segment {
    start: u64,
    end: u64,
    expected: f64,
}

fn user_key_number(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let take = key.len().min(8);
    bytes[..take].copy_from_slice(&key[..take]);
    u64::from_be_bytes(bytes)
}

/// The merge of `inputs` cut into files of about `target_entries` entries.
pub(super) fn merge(inputs: &[&FileMetadata], target_entries: u64) -> Vec<Piece> {
    let ranges: Vec<(u64, u64, f64)> = inputs
        .iter()
        .map(|f| {
            let smallest = user_key_number(f.smallest_user_key());
            let largest = user_key_number(f.largest_user_key()).max(smallest);
            let width = (largest - smallest + 1) as f64;
            (smallest, largest, (f.entries() as f64 / width).min(1.0))
        })
        .collect();
    let mut points: Vec<u64> = ranges
        .iter()
        .flat_map(|&(smallest, largest, _)| [smallest, largest.saturating_add(1)])
        .collect();
    points.sort_unstable();
    points.dedup();
    let segments: Vec<Segment> = points
        .windows(2)
        .filter_map(|pair| {
            let (start, end) = (pair[0], pair[1]);
            let missed: f64 = ranges
                .iter()
                .filter(|&&(smallest, largest, _)| smallest <= start && end - 1 <= largest)
                .map(|&(_, _, density)| 1.0 - density)
                .product();
            let expected = (end - start) as f64 * (1.0 - missed);
            (expected > 0.0).then_some(Segment {
                start,
                end,
                expected,
            })
        })
        .collect();
    let input_entries: u64 = inputs.iter().map(|f| f.entries()).sum();
    let expected: f64 = segments.iter().map(|s| s.expected).sum();
    let entries = (expected.round() as u64).clamp(1, input_entries.max(1));
    let Some(last) = segments.last() else {
        return Vec::new();
    };
    let last_key = last.end - 1;
    let files = entries.div_ceil(target_entries.max(1)).max(1);
    // Cut k sits where the expected entries reach k/files of the total.
    let cut = |k: u64| -> (u64, u64) {
        let target = expected * k as f64 / files as f64;
        let mut before = 0.0;
        for segment in &segments {
            if before + segment.expected >= target {
                let fraction = ((target - before) / segment.expected).clamp(0.0, 1.0);
                let key =
                    segment.start + ((segment.end - segment.start) as f64 * fraction).ceil() as u64;
                // The previous file ends before `key`; this one starts at it (or at the next
                // covered key).
                return (key.saturating_sub(1), key.min(segment.end - 1));
            }
            before += segment.expected;
        }
        (last_key, last_key)
    };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut start = segments.first().map_or(0, |s| s.start);
    let mut assigned = 0;
    for k in 1..=files {
        let (end, next_start) = if k == files {
            (last_key, last_key)
        } else {
            cut(k)
        };
        let share = (entries as f64 * k as f64 / files as f64).round() as u64 - assigned;
        assigned += share;
        if end >= start {
            pieces.push(Piece {
                smallest: start,
                largest: end,
                entries: share,
            });
            start = next_start.max(end + 1);
        } else if let Some(previous) = pieces.last_mut() {
            // Too narrow a stretch for its own file: its entries join the previous one.
            previous.entries += share;
        } else {
            // Too narrow and first: carried to the next file (`start` stays).
            assigned -= share;
        }
    }
    pieces.retain(|p| p.entries > 0);
    pieces
}
