//! What a short scan — a seek, then `m - 1` more entries — is predicted to read from the device on
//! an actual tree, through the block cache (DESIGN.md §7.6, "Seeks"). Pure: the tree's files and
//! the settings, no I/O. `strata bench` prints it beside the measured reads of `seekrandom`.
//!
//! What the engine does (`db/iter.rs`, `table/iter.rs`): a seek positions one iterator per run
//! (every run of an open seek; with both bounds set only the files meeting the range whose range
//! filter, if any, does not rule it out), each on the first file whose largest key is at or past
//! the seek key, reading that file's index (unless pinned) and the data block the key falls in;
//! then every entry the scan returns advances the run that held it, and an advance past the last
//! entry of a block reads the next block (past the last of a file, the next file's index too).
//!
//! So, with the seek key uniform over the tree's key range (keys read as numbers, `KeySpace`), and
//! every run's entries spread evenly over the range its files cover:
//!
//! - file `f` is where its run's seek lands with probability `u_f`, the share of the key range
//!   between the previous file's largest key (the range's start for the first) and `f`'s largest
//!   (an open seek); a bounded one needs `f` to meet `[k, k + w]`, `w = m / N` the share of the range
//!   the scan's `m` keys span, so `u_f` starts no lower than `f`'s smallest key less `w`, and a file
//!   with a range filter is kept with the chance the filter passes the range ([`range_pass_chance`]);
//! - a level-0 run the top-level index holds (EcoTune, DESIGN.md §6; `db/top_iter.rs`) is
//!   opened only when the scan reaches a key it holds: a bounded scan opens it when it holds a
//!   key in `[k, k + w]`, `1 - exp(-lambda)` of the time, `lambda = n_f * w / span_f` the keys of
//!   `f` in the range (its keys taken as a Poisson stream over its span); an open one alike (it
//!   waits on the run's first key past the scan from the index and opens the run only if it reads
//!   that far; [`top_open_chance`]). Its landings are the file's landings times that chance;
//! - a landing reads one data block (and one index block if the file's index is not pinned);
//! - the scan returns `m` entries, `n_f * m / N` of them from file `f`, so it advances past
//!   `m * blocks_f / N` of `f`'s block boundaries and `m / N` of its file boundaries on average:
//!   one more data block each, one more index block each;
//! - the model of the block cache's S3-FIFO eviction (as for lookups, `alloc::s3_fifo_model`)
//!   says which share of those requests miss, each of `f`'s blocks seeing `1 / blocks_f` of `f`'s data requests.
//!
//! `N` is the tree's entries, taken as distinct keys: with overwritten keys still in several runs
//! the scan spans more entries than keys, and the model counts fewer advances than happen. Point
//! filters are not read by a seek. What it does not see: an index separator shortened past a run's
//! last key below the seek key sends the seek to the block before the one holding its successor,
//! which is read and left at once (at most one more read per seek in a run whose keys are sparse);
//! the memtables, which hold no blocks.

use super::tree::{file_blocks, BlockReads, CacheSetting, FileBlocks};
use crate::alloc::cache_model::BlockGroup;
use crate::alloc::s3_fifo_model::S3Fifo;
use crate::version::key_space::KeySpace;
use crate::version::Version;

/// The short scans [`seek_reads`] prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanSetting {
    /// Entries each scan returns, the one the seek lands on included (`strata bench`'s
    /// `--seek-nexts` plus one). At least 1.
    pub entries: u64,
    /// Scans are bounded ranges `[k, k + entries)`, the upper bound given before the seek, so runs
    /// whose files miss the range are left out and range filters are asked.
    pub bounded: bool,
    /// Bits per key of the range filters (`Options::range_filter_bits`; 0: none).
    pub range_filter_bits: u32,
    /// The deepest non-empty level's files have range filters too
    /// (`Options::range_filter_last_level`; without it compactions into that level build none).
    pub range_filter_last_level: bool,
    /// Level 0's runs are in the top-level key index (EcoTune's, DESIGN.md §6): a scan opens
    /// only those holding a key it reaches ([`top_open_chance`]), and asks no range filter there.
    pub level0_indexed: bool,
}

impl ScanSetting {
    /// Open scans of `entries` entries (db_bench's `seekrandom`), no range filters.
    pub fn open(entries: u64) -> ScanSetting {
        ScanSetting {
            entries,
            bounded: false,
            range_filter_bits: 0,
            range_filter_last_level: false,
            level0_indexed: false,
        }
    }
}

/// The chance a scan of share `width` of the key range opens a top-level run through the index
/// (module documentation), for a file of the run holding `keys` keys over share `span` of the
/// key range: the file holds a key in the range (an open scan waits on the run's first key past
/// it without opening the run).
pub fn top_open_chance(keys: f64, span: f64, width: f64) -> f64 {
    let lambda = keys.max(0.0) * width.max(0.0) / span.max(width).max(f64::MIN_POSITIVE);
    1.0 - (-lambda).exp()
}

/// What one short scan is predicted to cost on a tree.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TreeSeekReads {
    /// Blocks read from the device, by kind (filter blocks are never read by a scan).
    pub reads: BlockReads,
    /// Runs the seek reads a data block of, before the cache (cache hits included).
    pub runs_read: f64,
    /// Range-filter probes per scan (files meeting a bounded scan's range that have a filter).
    pub range_filter_probes: f64,
}

/// One file as a seek sees it.
struct SeekFile {
    blocks: FileBlocks,
    /// Landings per scan (the seek reads this file's index and one data block).
    landings: f64,
    /// Of those, the landings of seek keys below the file's smallest key (between the previous
    /// file's largest and this one's smallest): every one reads the file's first data block.
    first_block_landings: f64,
    /// Block boundaries the scan's advances cross in this file, per scan.
    crossings: f64,
    /// File boundaries crossed into this file (a new index read), per scan.
    file_opens: f64,
}

/// The predicted device reads of one scan of `scan.entries` entries, starting at a key drawn
/// uniformly from the tree's key range, through `cache` (module documentation). An empty tree
/// costs nothing.
pub fn seek_reads(tree: &Version, cache: &CacheSetting, scan: &ScanSetting) -> TreeSeekReads {
    let Some(space) = KeySpace::of_tree(tree) else {
        return TreeSeekReads::default();
    };
    let total = tree.entries() as f64;
    if total <= 0.0 {
        return TreeSeekReads::default();
    }
    let entries = scan.entries.max(1) as f64;
    let width = entries / total;
    let deepest = tree.last_non_empty_level();
    let mut files = Vec::new();
    let mut range_filter_probes = 0.0;
    for (level, runs) in tree.levels().iter().enumerate() {
        let pinned = cache.metadata_pinned || (level == 0 && cache.level0_metadata_pinned);
        let indexed = level == 0 && scan.level0_indexed;
        let range_filtered = scan.bounded
            && scan.range_filter_bits > 0
            && !indexed
            && (scan.range_filter_last_level || Some(level) != deepest);
        for run in runs.runs() {
            let mut previous_largest: f64 = 0.0;
            for file in run.files() {
                let low = space.share(file.smallest_user_key());
                let high = space.share(file.largest_user_key());
                let start = if scan.bounded {
                    previous_largest.max(low - width)
                } else {
                    previous_largest
                };
                let mut landings = (high - start).max(0.0);
                let mut first_block_landings = (low - start).clamp(0.0, landings);
                previous_largest = high;
                if scan.bounded && range_filtered {
                    range_filter_probes += (high - low + width).min(1.0);
                    let span = (high - low).max(width);
                    let expected_keys = file.entries() as f64 * width / span;
                    let pass = range_pass_chance(expected_keys, scan.range_filter_bits);
                    landings *= pass;
                    first_block_landings *= pass;
                }
                if indexed {
                    let open = top_open_chance(file.entries() as f64, high - low, width);
                    landings *= open;
                    first_block_landings *= open;
                }
                let blocks = file_blocks(
                    &space,
                    run.id(),
                    file,
                    &|_, _| crate::filter::FilterInUse::whole(0.0),
                    cache,
                    pinned,
                );
                let share = file.entries() as f64 / total;
                files.push(SeekFile {
                    crossings: entries * blocks.data_blocks / total,
                    file_opens: entries * share / file.entries().max(1) as f64,
                    landings,
                    first_block_landings,
                    blocks,
                });
            }
        }
    }
    let runs_read = files.iter().map(|f| f.landings).sum();
    TreeSeekReads {
        reads: through_cache(&files, cache),
        runs_read,
        range_filter_probes,
    }
}

/// The chance that a file's range filter of `bits` bits per key answers "maybe" for a range the
/// file holds `expected_keys` keys of on average (DESIGN.md §9): a range holding a key always
/// passes (no false negatives; `1 - exp(-expected_keys)` of them, keys taken as a Poisson
/// stream), an empty one with about `(1 + width in positions) * 2^-bits`, the width in positions
/// being `expected_keys * 2^bits`.
pub fn range_pass_chance(expected_keys: f64, bits: u32) -> f64 {
    if bits == 0 {
        return 1.0;
    }
    let expected_keys = expected_keys.max(0.0);
    let empty = (-expected_keys).exp();
    let false_positive = ((-f64::from(bits)).exp2() + expected_keys).min(1.0);
    (1.0 - empty) + empty * false_positive
}

/// A file's data-block requests per scan: `(spread, first)`, those spread evenly over its blocks
/// (landings on its keys, boundary crossings) and those on its first block alone (landings of
/// seek keys below its smallest key).
fn data_requests(f: &SeekFile) -> (f64, f64) {
    (
        f.landings - f.first_block_landings + f.crossings,
        f.first_block_landings,
    )
}

/// The block groups of a file's data blocks: the blocks but the first at the spread rate, the
/// first at that rate plus the landings below the file's keys (one group while it has one block).
fn data_groups(f: &SeekFile) -> Vec<BlockGroup> {
    let b = &f.blocks;
    let (spread, first) = data_requests(f);
    let per_block = spread / b.data_blocks;
    if first <= 0.0 || b.data_blocks <= 1.0 {
        return vec![BlockGroup {
            blocks: b.data_blocks,
            block_bytes: b.data_block_bytes,
            rate: (spread + first) / b.data_blocks,
        }];
    }
    vec![
        BlockGroup {
            blocks: b.data_blocks - 1.0,
            block_bytes: b.data_block_bytes,
            rate: per_block,
        },
        BlockGroup {
            blocks: 1.0,
            block_bytes: b.data_block_bytes,
            rate: per_block + first,
        },
    ]
}

/// Device reads per scan of the requests `files` see, through `cache` (the model of its S3-FIFO
/// eviction, as for lookups). The seeks that land in a file below its smallest key all read its
/// first block, which they keep in the cache where the file's other blocks are not: a run whose
/// keys start well into the key range (an upper run of few files) has its first block requested
/// by every seek below them.
fn through_cache(files: &[SeekFile], cache: &CacheSetting) -> BlockReads {
    let overhead = crate::cache::ENTRY_OVERHEAD_BYTES as f64;
    let index_rate = |f: &SeekFile| f.landings + f.file_opens;
    let mut groups = Vec::new();
    for f in files {
        let b = &f.blocks;
        groups.extend(data_groups(f));
        if !b.metadata_pinned {
            groups.push(BlockGroup {
                blocks: b.partitions,
                block_bytes: b.index_bytes / b.partitions + overhead,
                rate: index_rate(f) / b.partitions,
            });
        }
    }
    let time = S3Fifo::of_block_cache(cache.capacity_bytes).settle(&groups);
    let miss = |rate: f64, blocks: f64| time.misses(rate, blocks);
    let mut reads = BlockReads::default();
    for f in files {
        let b = &f.blocks;
        reads.data += data_groups(f)
            .iter()
            .map(|g| g.blocks * g.rate * time.miss_chance(g))
            .sum::<f64>();
        if !b.metadata_pinned {
            reads.index += miss(index_rate(f), b.partitions);
        }
    }
    reads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::FileMetadata;

    /// A file of `entries` entries of 100 bytes and no filter: 4,096-byte blocks hold
    /// `4096 + 16 + 6` bytes of payload and index entry each, so `entries * 100 / 4118` blocks.
    fn file(number: u64, lo: &str, hi: &str, entries: u64) -> FileMetadata {
        FileMetadata::new(number, lo.as_bytes(), hi.as_bytes())
            .with_entries(entries)
            .with_file_bytes(entries * 100)
    }

    fn blocks(entries: u64, key: &str) -> f64 {
        (entries as f64 * 100.0 / (4096.0 + key.len() as f64 + 6.0)).max(1.0)
    }

    fn setting(capacity_bytes: u64, metadata_pinned: bool) -> CacheSetting {
        CacheSetting {
            capacity_bytes,
            block_bytes: 4096,
            metadata_pinned,
            level0_metadata_pinned: metadata_pinned,
        }
    }

    /// Two leveled runs over the whole range "k0000".."k9999": 1,000 and 9,000 entries, the
    /// second in two files split at "k5000".
    fn two_runs() -> Version {
        Version::builder()
            .add_file(1, 1, file(1, "k0000", "k9999", 1_000))
            .add_file(2, 2, file(2, "k0000", "k4999", 4_500))
            .add_file(2, 2, file(3, "k5000", "k9999", 4_500))
            .build()
            .expect("builds")
    }

    #[test]
    fn an_open_seek_reads_one_block_per_run_and_one_per_boundary_its_entries_cross() {
        let tree = two_runs();
        let m = 11u64;
        let reads = seek_reads(&tree, &setting(0, true), &ScanSetting::open(m));
        // Every seek lands in both runs: in the second run's first file below "k4999" (half the
        // range, 4999/9999 of it) and in its second file above.
        assert!((reads.runs_read - 2.0).abs() < 1e-9, "{reads:?}");
        // 11 entries from 10,000 cross 11 * blocks / 10,000 boundaries per file.
        let crossings = 11.0 * (blocks(1_000, "k0000") + 2.0 * blocks(4_500, "k0000")) / 10_000.0;
        assert!(
            (reads.reads.data - (2.0 + crossings)).abs() < 1e-9,
            "{reads:?}"
        );
        assert_eq!(reads.reads.index, 0.0);
        assert_eq!(reads.reads.filter, 0.0);
        // Unpinned and uncached: one index block per landing, one per file boundary crossed
        // (11 / 10,000 per file, three files).
        let unpinned = seek_reads(&tree, &setting(0, false), &ScanSetting::open(m));
        assert!((unpinned.reads.index - (2.0 + 3.0 * 11.0 / 10_000.0)).abs() < 1e-9);
        assert!((unpinned.reads.data - reads.reads.data).abs() < 1e-12);
    }

    #[test]
    fn a_run_below_the_seek_key_costs_nothing_and_one_above_it_costs_its_first_block() {
        // The second run covers only "k0000".."k0999", a tenth of the range: an open seek past
        // it finds no file there (nothing read), one below its largest key lands in it.
        let tree = Version::builder()
            .add_file(1, 1, file(1, "k0000", "k9999", 1_000))
            .add_file(2, 2, file(2, "k0000", "k0999", 100))
            .build()
            .expect("builds");
        let open = seek_reads(&tree, &setting(0, true), &ScanSetting::open(1));
        assert!(
            (open.runs_read - (1.0 + 999.0 / 9999.0)).abs() < 1e-9,
            "{open:?}"
        );
        // A run over "k9000".."k9999" is landed in by every open seek below "k9999" — its first
        // block read even when the scan never reaches its keys — but a bounded seek reads it only
        // when the range meets it.
        let tree = Version::builder()
            .add_file(1, 1, file(1, "k0000", "k9999", 1_000))
            .add_file(2, 2, file(2, "k9000", "k9999", 100))
            .build()
            .expect("builds");
        let open = seek_reads(&tree, &setting(0, true), &ScanSetting::open(1));
        assert!((open.runs_read - 2.0).abs() < 1e-9, "{open:?}");
        let bounded = ScanSetting {
            bounded: true,
            ..ScanSetting::open(11)
        };
        let reads = seek_reads(&tree, &setting(0, true), &bounded);
        // w = 11 / 1,100 of the range: the second run is met from 999/9999 - w below its start.
        let expected = 1.0 + 999.0 / 9999.0 + 11.0 / 1_100.0;
        assert!((reads.runs_read - expected).abs() < 1e-9, "{reads:?}");
        assert_eq!(reads.range_filter_probes, 0.0);
    }

    #[test]
    fn range_filters_leave_out_the_upper_runs_a_bounded_scan_has_no_key_in() {
        // Level 1 holds 10 of 10,010 keys: a scan of 11 keys is expected to meet 0.011 of them,
        // so about 1.1% of its ranges hold a key and pass, and an empty one passes at 2^-10 plus
        // its width in keys, 1.1% (DESIGN.md §9): about 2.3% in all. The last level has no range
        // filter and is always read.
        let tree = Version::builder()
            .add_file(1, 1, file(1, "k0000", "k9999", 10))
            .add_file(2, 2, file(2, "k0000", "k9999", 10_000))
            .build()
            .expect("builds");
        let scan = ScanSetting {
            entries: 11,
            bounded: true,
            range_filter_bits: 10,
            range_filter_last_level: false,
            level0_indexed: false,
        };
        let reads = seek_reads(&tree, &setting(0, true), &scan);
        let keys = 10.0 * 11.0 / 10_010.0;
        let pass = range_pass_chance(keys, 10);
        assert!((reads.runs_read - (1.0 + pass)).abs() < 1e-9, "{reads:?}");
        assert!(pass > 0.022 && pass < 0.024, "{pass}");
        // One probe per scan: level 1's file meets every range, the last level has no filter.
        assert!((reads.range_filter_probes - 1.0).abs() < 1e-9);
        // With the last level's filter too it is probed, and passes (its ranges hold about 11
        // keys): it rules nothing out.
        let everywhere = ScanSetting {
            range_filter_last_level: true,
            ..scan
        };
        let reads = seek_reads(&tree, &setting(0, true), &everywhere);
        assert!((reads.range_filter_probes - 2.0).abs() < 1e-9);
        assert!((reads.runs_read - (1.0 + pass)).abs() < 1e-9, "{reads:?}");
    }

    #[test]
    fn range_pass_chance_is_one_for_full_ranges_and_the_filter_rate_for_empty_ones() {
        assert_eq!(range_pass_chance(5.0, 0), 1.0);
        assert!((range_pass_chance(0.0, 10) - 2f64.powi(-10)).abs() < 1e-15);
        assert!(range_pass_chance(50.0, 10) > 1.0 - 1e-12);
        let mut last = 0.0;
        for keys in [0.0, 0.001, 0.01, 0.1, 1.0, 3.0] {
            let pass = range_pass_chance(keys, 12);
            assert!(pass >= last, "{keys}");
            last = pass;
        }
    }

    #[test]
    fn a_cache_that_holds_the_tree_predicts_no_read_and_a_smaller_one_fewer() {
        let tree = two_runs();
        let scan = ScanSetting::open(11);
        let none = seek_reads(&tree, &setting(0, false), &scan);
        let all = seek_reads(&tree, &setting(64 << 20, false), &scan);
        assert_eq!(all.reads.total(), 0.0);
        // The tree is 1 MB: a 256 KiB cache holds about a quarter of its blocks, all alike in
        // rate within a run, and the first run's blocks see more requests each.
        let some = seek_reads(&tree, &setting(256 << 10, true), &scan);
        let pinned_none = seek_reads(&tree, &setting(0, true), &scan);
        assert!(some.reads.data < pinned_none.reads.data * 0.8, "{some:?}");
        assert!(some.reads.data > pinned_none.reads.data * 0.4, "{some:?}");
        assert!(none.reads.total() > pinned_none.reads.total());
    }

    /// An upper run over the top half of the key range: every open seek below its keys lands on
    /// its first block, so that block is requested by half the seeks and stays cached, while
    /// the run's other blocks share the rest. Spreading those landings over every block (as the
    /// model did) predicts reads the cache does not let through.
    #[test]
    fn seeks_below_a_runs_keys_read_its_first_block_which_the_cache_keeps() {
        let tree = Version::builder()
            .add_file(1, 1, file(1, "k5000", "k9999", 30_000))
            .add_file(2, 2, file(2, "k0000", "k9999", 90_000))
            .build()
            .expect("builds");
        let scan = ScanSetting::open(11);
        // Without a cache the split changes nothing: one landing per run, the crossings.
        let uncached = seek_reads(&tree, &setting(0, true), &scan);
        let crossings = 11.0 * (blocks(30_000, "k5000") + blocks(90_000, "k0000")) / 120_000.0;
        assert!(
            (uncached.reads.data - (2.0 + crossings)).abs() < 1e-9,
            "{uncached:?}"
        );
        // A 1 MiB cache (about 250 of the tree's 2,900 blocks; the upper run's 730 do not fit).
        let cache = setting(1 << 20, true);
        let reads = seek_reads(&tree, &cache, &scan);
        let space = KeySpace::of_tree(&tree).expect("a key space");
        let below = space.share(b"k5000");
        assert!((below - 0.5).abs() < 0.01, "{below}");
        // The same requests with the landings below the run's keys spread over its blocks.
        let spread = |tree: &Version| -> f64 {
            let mut files = Vec::new();
            for (level, run) in [(1, 1u64), (2, 2)] {
                let meta = &tree.levels()[level].runs()[0].files()[0];
                let low = space.share(meta.smallest_user_key());
                let blocks = file_blocks(
                    &space,
                    run,
                    meta,
                    &|_, _| crate::filter::FilterInUse::whole(0.0),
                    &cache,
                    true,
                );
                let n = meta.entries() as f64;
                files.push(SeekFile {
                    crossings: 11.0 * blocks.data_blocks / 120_000.0,
                    file_opens: 11.0 * n / 120_000.0 / n,
                    landings: 1.0,
                    first_block_landings: if level == 1 { low } else { 0.0 },
                    blocks,
                });
            }
            let split = through_cache(&files, &cache).data;
            for f in &mut files {
                f.first_block_landings = 0.0;
            }
            let even = through_cache(&files, &cache).data;
            assert!((split - reads.reads.data).abs() < 1e-9, "{split} {reads:?}");
            even
        };
        let even = spread(&tree);
        assert!(
            reads.reads.data < even - 0.25,
            "first block apart {} against spread {even}",
            reads.reads.data
        );
        // The first block's half a landing per seek is nearly always a hit.
        assert!(
            reads.reads.data > uncached.reads.data - 0.5 - 0.5,
            "{reads:?}"
        );
    }

    /// Ten top-level runs of 1,000 keys over the whole range above a last level of 100,000: a
    /// scan of 11 entries spans `w = 1e-4` of the range, about 0.1 of each top run's keys.
    fn top_level_tree() -> Version {
        let mut builder = Version::builder();
        for run in 0..10u64 {
            builder = builder.add_file(0, 10 + run, file(10 + run, "k0000", "k9999", 1_000));
        }
        builder
            .add_file(2, 2, file(2, "k0000", "k9999", 100_000))
            .build()
            .expect("builds")
    }

    #[test]
    fn an_indexed_top_level_is_opened_only_where_the_scan_reaches_its_keys() {
        let tree = top_level_tree();
        let space = KeySpace::of_tree(&tree).expect("a key space");
        let span = space.share(b"k9999") - space.share(b"k0000");
        let width = 11.0 / 110_000.0;
        let indexed = |scan: ScanSetting| ScanSetting {
            level0_indexed: true,
            ..scan
        };
        // Without the index every seek lands in all eleven runs.
        let open = ScanSetting::open(11);
        let every = seek_reads(&tree, &setting(0, true), &open);
        assert!((every.runs_read - 11.0 * span).abs() < 1e-9, "{every:?}");
        // Through it, an open scan opens a top run when it holds a key in the range (about
        // 1 - e^-0.1 of the time); the level's first key past it is not read.
        let lambda = 1_000.0 * width / span;
        let chance = 1.0 - (-lambda).exp();
        assert!((top_open_chance(1_000.0, span, width) - chance).abs() < 1e-12);
        let lazy = seek_reads(&tree, &setting(0, true), &indexed(open));
        let expected = span * (1.0 + 10.0 * chance);
        assert!((lazy.runs_read - expected).abs() < 1e-9, "{lazy:?}");
        assert!(lazy.runs_read > 1.9 && lazy.runs_read < 2.0, "{lazy:?}");
        // Fewer runs opened, fewer data blocks read; the crossings are the same.
        let saved = every.reads.data - lazy.reads.data;
        assert!((saved - (every.runs_read - lazy.runs_read)).abs() < 1e-9);
        // A bounded scan opens only the runs holding a key in its range.
        let bounded = ScanSetting {
            bounded: true,
            ..open
        };
        let closed = seek_reads(&tree, &setting(0, true), &indexed(bounded));
        let holding = 1.0 - (-lambda).exp();
        let last = seek_reads(
            &Version::builder()
                .add_file(2, 2, file(2, "k0000", "k9999", 100_000))
                .build()
                .expect("builds"),
            &setting(0, true),
            &bounded,
        );
        assert!(
            (closed.runs_read - (last.runs_read + 10.0 * span * holding)).abs() < 1e-6,
            "{closed:?} {last:?}"
        );
        // The index is the top level's range filter: none is asked there.
        let filtered = ScanSetting {
            range_filter_bits: 10,
            ..bounded
        };
        let probes = seek_reads(&tree, &setting(0, true), &indexed(filtered));
        assert_eq!(probes.range_filter_probes, 0.0);
        assert!(seek_reads(&tree, &setting(0, true), &filtered).range_filter_probes > 9.0);
    }

    #[test]
    fn an_empty_tree_costs_nothing() {
        let tree = Version::builder().build().expect("builds");
        let reads = seek_reads(&tree, &setting(0, false), &ScanSetting::open(11));
        assert_eq!(reads, TreeSeekReads::default());
    }
}
