//! The merge of a compaction's inputs under the simulator's overwrite model (the module docs of
//! `sim`): each input file holds a uniform random subset of the keys in its range, independently of
//! the others, so a stretch of keys of width `w` covered by files of densities `d_i` keeps
//! `w * (1 - Π (1 - d_i))` distinct keys.

use crate::compaction::output_cuts::{cut_percent, MAX_OUTPUT_TARGETS};
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

/// The simulator's key number of a user key (its first 8 bytes, big-endian).
pub(super) fn key_number(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let take = key.len().min(8);
    bytes[..take].copy_from_slice(&key[..take]);
    u64::from_be_bytes(bytes)
}

/// The merge of `inputs` cut into files of about `target_entries` entries; where the output
/// joins a leveled run above files `below` (their `(smallest, largest)` key numbers, in key
/// order, [`cut_at_boundaries`]), cut at their boundaries as the engine's executor cuts it.
pub(super) fn merge(
    inputs: &[&FileMetadata],
    target_entries: u64,
    below: Option<&[(u64, u64)]>,
) -> Vec<Piece> {
    let ranges: Vec<(u64, u64, f64)> = inputs
        .iter()
        .map(|f| {
            let smallest = key_number(f.smallest_user_key());
            let largest = key_number(f.largest_user_key()).max(smallest);
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
    if let Some(below) = below {
        return cut_at_boundaries(&segments, entries, expected, target_entries.max(1), below);
    }
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

/// The output of a merge whose segments expect `expected` distinct keys in all (`entries` once
/// rounded), cut by the engine's rules for an output joining a leveled run above files `below`
/// (`compaction::output_cuts`, RocksDB's `ShouldStopBefore` and `max_output_file_size_`): a
/// file ends where the keys cross a boundary of a file below (its smallest key, or just past its
/// largest; those at or before the merge's first key do not count) once it holds
/// `cut_percent(boundaries crossed in it)` of `target_entries`, and at twice the target where the
/// merge's range overlaps a file below (the target otherwise). Entries fill each stretch of keys
/// evenly, at its segment's density; the files' shares are rounded so that they sum to
/// `entries`.
fn cut_at_boundaries(
    segments: &[Segment],
    entries: u64,
    expected: f64,
    target_entries: u64,
    below: &[(u64, u64)],
) -> Vec<Piece> {
    let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
        return Vec::new();
    };
    let (first_key, last_key) = (first.start, last.end - 1);
    let overlaps = below
        .iter()
        .any(|&(low, high)| low <= last_key && first_key <= high);
    let max = if overlaps {
        target_entries.saturating_mul(MAX_OUTPUT_TARGETS)
    } else {
        target_entries
    } as f64;
    let target = target_entries as f64;
    // Boundary crossings after the first key, in key order.
    let mut crossings: Vec<u64> = below
        .iter()
        .flat_map(|&(low, high)| [low, high.saturating_add(1)])
        .filter(|&at| at > first_key && at <= last_key)
        .collect();
    crossings.sort_unstable();
    let mut crossings = crossings.into_iter().peekable();
    // Files as (smallest, largest, expected entries); the current one is the last.
    let mut files: Vec<(u64, u64, f64)> = Vec::new();
    let mut open: Option<(u64, u64, f64)> = None;
    let mut crossed_in_output: usize = 0;
    for segment in segments {
        let density = segment.expected / (segment.end - segment.start) as f64;
        let mut at = segment.start;
        while at < segment.end {
            // Boundaries at or before `at`: the keys from `at` on crossed them.
            let mut crossed = 0;
            while crossings.next_if(|&c| c <= at).is_some() {
                crossed += 1;
            }
            if crossed > 0 {
                crossed_in_output += crossed;
                let cut = cut_percent(crossed_in_output) as f64 / 100.0 * target;
                if let Some(file) = open.filter(|file| file.2 >= cut) {
                    files.push(file);
                    open = None;
                    crossed_in_output = 0;
                }
            }
            // Fill up to the next boundary, the segment's end, or the file's maximum.
            let stop = crossings
                .peek()
                .map_or(segment.end, |&c| c.min(segment.end));
            let held = open.map_or(0.0, |file| file.2);
            let room_keys = ((max - held) / density).ceil().max(1.0);
            let end = if ((stop - at) as f64) < room_keys {
                stop
            } else {
                at + room_keys as u64
            };
            let added = (end - at) as f64 * density;
            let file = open.get_or_insert((at, at, 0.0));
            file.1 = end - 1;
            file.2 += added;
            if file.2 >= max {
                files.push(*file);
                open = None;
                crossed_in_output = 0;
            }
            at = end;
        }
    }
    files.extend(open);
    // Round the shares so that they sum to `entries`.
    let scale = entries as f64 / expected.max(f64::MIN_POSITIVE);
    let mut pieces = Vec::with_capacity(files.len());
    let (mut cumulative, mut assigned) = (0.0, 0u64);
    for (k, &(smallest, largest, held)) in files.iter().enumerate() {
        cumulative += held;
        let through = if k + 1 == files.len() {
            entries
        } else {
            ((cumulative * scale).round() as u64).min(entries)
        };
        pieces.push(Piece {
            smallest,
            largest,
            entries: through.saturating_sub(assigned),
        });
        assigned = assigned.max(through);
    }
    pieces.retain(|piece| piece.entries > 0);
    pieces
}
