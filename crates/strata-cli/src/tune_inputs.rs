//! What `strata tune` can measure instead of being told: the data and the workload mix of an
//! existing database (`--from-db`), and the device (`--measure-device`).
//!
//! The database's mix comes from its workload statistics, kept in its manifest across restarts
//! (`stats/workload.rs`): point lookups and how many found their key, range lookups, the entries
//! they returned and how many were long scans (EcoTune's `r` and `K`), entries written. Its live
//! window of recent queries (`Db::recent_workload`, the last 50,000 to 56,250 queries and the
//! writes among them) is what the database serves now, so it is taken once it holds 1,000
//! queries; before that, or with `--lifetime-mix`, the lifetime totals (`Db::workload`), which
//! cover the database's whole life, the initial load included: a store loaded once and then read
//! counts the load as updates, which is what it cost. The conversion is the library's
//! (`Workload::from_totals`), which an engine tuning itself uses too. Its size and entry size
//! come from its tree.
//!
//! The device probe writes a file sequentially and syncs it (the cost of the pages a flush or a
//! merge writes), reads it in order in 2 MiB direct reads (the cost of a page a merge reads with
//! the engine's default compaction readahead), then reads random pages of it with direct I/O
//! (the cost of a lookup's page read that misses every cache); DESIGN.md §7's `Omega` is the mean
//! random read, `phi` the write/read ratio, `rho` ([`Device::merge_read_cost_ratio`]) the
//! in-order/random read ratio.
//!
//! The processor probe measures Strata's addition to the model ([`CpuCosts`]) on the engine
//! itself, in a scratch database with buffered reads whose blocks are all cached: updates timed
//! as they go into the memtable and WAL; empty lookups timed on one run and on many (the
//! difference per run is the cost of probing a run, the rest the cost of a lookup); a full
//! compaction of the runs timed, less the page writes the device probe charges, per entry;
//! flushes of a single entry timed (a flush's fixed cost: its file created, synced and
//! installed). Merges are priced beside the operations, on the threads the foreground leaves a
//! processor: see `measure_processor`.

use std::path::Path;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use strata::env::{FileSystem, RealFileSystem};
use strata::model::ties::CostSpread;
use strata::model::tuner::{
    foreground_share_of_merges, merge_threads_beside, CpuCosts, Device, Workload,
};
use strata::stats::MIN_WINDOW_QUERIES;
use strata::WorkloadMix;
use strata::{Db, Options, WorkloadTotals};

use crate::error::{CliError, CliResult};

/// What `--from-db` read from a database.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredDatabase {
    /// Entries in the tree's files (`N`; overwritten and deleted keys not yet merged away
    /// count, as they cost space and I/O).
    pub entries: u64,
    /// Bytes per entry as stored (table bytes over entries).
    pub entry_bytes: f64,
    /// The filters' average bits per key in use (`Stats::effective_bits_per_key`: the memory
    /// lookups probe; elastic filters keep more modules on disk than in use).
    pub filter_bits_per_key: f64,
    /// The lifetime totals (`Db::workload`).
    pub totals: WorkloadTotals,
    /// The live window of recent queries (`Db::recent_workload`).
    pub recent: WorkloadMix,
    /// Bytes of an average user key, from its files' boundary keys
    /// (`strata::model::tree::boundary_key_bytes`); `None` before its first table file.
    pub key_bytes: Option<f64>,
}

impl MeasuredDatabase {
    /// The mix to tune for and where it came from: the window of recent queries once it holds
    /// [`MIN_WINDOW_QUERIES`] queries (unless `lifetime`), else the lifetime totals; `None`
    /// when the database has served no operation.
    pub fn mix(&self, lifetime: bool) -> Option<(Workload, &'static str)> {
        if !lifetime && self.recent.counts.queries() >= MIN_WINDOW_QUERIES {
            if let Some(mix) = Workload::from_mix(&self.recent, self.entries) {
                return Some((mix, "window of recent queries"));
            }
        }
        workload_from_totals(&self.totals, self.entries).map(|mix| (mix, "lifetime totals"))
    }
}

/// Opens the database at `path` read-only and measures it.
pub fn measure_database(path: &Path) -> CliResult<MeasuredDatabase> {
    let db = Db::open_read_only(path, Options::default())?;
    let tree = db.version();
    let stats = db.stats();
    // Entries not yet flushed (the WAL a read-only open replays) count too.
    let entries = tree.entries() + stats.memtable_entries;
    if entries == 0 {
        return Err(CliError::InvalidArgument(format!(
            "{}: the database holds no entries (nothing to tune for)",
            path.display()
        )));
    }
    // As stored in table files; a database with none yet is measured in its memtable, whose
    // bytes include the skiplist's own overhead.
    let entry_bytes = if tree.entries() > 0 {
        tree.bytes() as f64 / tree.entries() as f64
    } else {
        stats.memtable_bytes as f64 / stats.memtable_entries as f64
    };
    Ok(MeasuredDatabase {
        entries,
        entry_bytes,
        filter_bits_per_key: stats.effective_bits_per_key,
        totals: db.workload(),
        recent: db.recent_workload(),
        key_bytes: strata::model::tree::boundary_key_bytes(&tree),
    })
}

/// The workload mix (proportions of operations, DESIGN.md §7) the totals describe over a tree of
/// `entries` entries; `None` if they count no operation (`Workload::from_totals`).
pub fn workload_from_totals(totals: &WorkloadTotals, entries: u64) -> Option<Workload> {
    Workload::from_totals(totals, entries)
}

/// How big the device probe is.
#[derive(Debug, Clone, Copy)]
pub struct ProbeSize {
    /// Bytes written (and then read from).
    pub file_bytes: u64,
    /// Random page reads.
    pub reads: usize,
}

/// The probe `strata tune --measure-device` runs: a 64 MiB file, 2,000 random reads (about a
/// second on an SSD).
pub const DEFAULT_PROBE: ProbeSize = ProbeSize {
    file_bytes: 64 << 20,
    reads: 2_000,
};

/// The page size the probe reads and the models assume.
pub const PAGE_BYTES: u64 = 4096;

/// Pages one random read of the probe takes: a data block of `Options::block_bytes` (4 KiB) and its
/// checksum trailer sit anywhere in a table file, so the engine's direct read of one spans two
/// pages (three for the few that end within a trailer's length of a page's end), and the models'
/// `Omega` is the time of that read, as auto-tune's measured price is (DESIGN.md §7.5).
pub const BLOCK_READ_PAGES: u64 = 2;

/// What the probe measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredDevice {
    /// Seconds per page written sequentially and synced.
    pub seconds_per_write: f64,
    /// Seconds per page read in order, 2 MiB a read, with direct I/O.
    pub seconds_per_merge_read: f64,
    /// Mean seconds per random data-block read ([`BLOCK_READ_PAGES`] pages) with direct I/O.
    pub seconds_per_read: f64,
    /// The random reads timed in five rounds: the rounds' spread (`CostSpread::of_rounds`, the
    /// second slowest round's mean over the second fastest's; `CostSpread::device`).
    pub read_spread: f64,
    /// The device as the tuner takes it.
    pub device: Device,
}

/// Runs the device probe in `dir` (a file named `strata-device-probe` is created and removed).
/// A file system without direct I/O (tmpfs) is an error: its reads would measure memory.
pub fn measure_device(dir: &Path, size: ProbeSize) -> CliResult<MeasuredDevice> {
    let fs = RealFileSystem;
    let path = dir.join("strata-device-probe");
    let pages = (size.file_bytes / PAGE_BYTES).max(1);
    let chunk = vec![0x5au8; 1 << 20];
    let started = Instant::now();
    let mut file = fs.create_writable(&path)?;
    let mut written = 0u64;
    while written < pages * PAGE_BYTES {
        let n = chunk.len().min((pages * PAGE_BYTES - written) as usize);
        file.append(&chunk[..n])?;
        written += n as u64;
    }
    file.sync()?;
    drop(file);
    let seconds_per_write = started.elapsed().as_secs_f64() / pages as f64;
    let result = read_in_order(&fs, &path, pages)
        .and_then(|in_order| Ok((in_order, read_pages(&fs, &path, pages, size.reads)?)));
    // The probe's file goes whatever the reads did.
    let removed = fs.remove_file(&path);
    let (seconds_per_merge_read, (seconds_per_read, read_spread)) = result?;
    removed?;
    Ok(MeasuredDevice {
        seconds_per_write,
        seconds_per_merge_read,
        seconds_per_read,
        read_spread,
        device: Device {
            seconds_per_read,
            write_read_cost_ratio: seconds_per_write / seconds_per_read,
            merge_read_cost_ratio: seconds_per_merge_read / seconds_per_read,
            page_bytes: PAGE_BYTES as f64,
            cpu: CpuCosts::default(),
        },
    })
}

/// How much work the processor probe does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessorProbeSize {
    /// Runs of the many-run tree (the one-run tree is its first run).
    pub runs: usize,
    /// Entries per run.
    pub entries_per_run: usize,
    /// Empty lookups timed on each tree.
    pub lookups: usize,
}

/// The probe `strata tune --measure-device` runs: 16 runs of 20,000 entries and 100,000 empty
/// lookups on each tree (a few seconds).
pub const DEFAULT_PROCESSOR_PROBE: ProcessorProbeSize = ProcessorProbeSize {
    runs: 16,
    entries_per_run: 20_000,
    lookups: 100_000,
};

/// Key bytes of the processor probe's entries (the rest of an entry is value).
const PROBE_KEY_BYTES: usize = 16;

/// The probe's `i`-th key: 16 hex digits of a 64-bit mix of `i`, so keys spread over the whole
/// key space and every run's key range holds every lookup (each probe reaches the run's filter).
fn probe_key(i: u64) -> [u8; PROBE_KEY_BYTES] {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let mut key = [0u8; PROBE_KEY_BYTES];
    for (slot, digit) in key.iter_mut().zip(format!("{z:016x}").bytes()) {
        *slot = digit;
    }
    key
}

/// What the processor probe measured: the costs and how far its repeated timings spread
/// (`strata::model::ties::CostSpread`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredProcessor {
    /// The costs the tuner takes.
    pub costs: CpuCosts,
    /// The empty lookups' five timed rounds on each tree: the larger of the two trees' spreads
    /// (`CostSpread::of_rounds`: the second slowest round over the second fastest).
    pub lookup_spread: f64,
    /// The five timed flushes: the second slowest over the second fastest.
    pub flush_spread: f64,
}

/// Runs the processor probe in a scratch database `dir/strata-processor-probe` (an error if it
/// exists; removed afterwards) with entries of `entry_bytes` bytes and 10 bits per key of
/// filters. `seconds_per_page_written` (the device probe's) is taken off the compaction's time
/// for the pages it writes, which the model already charges as I/O.
pub fn measure_processor(
    dir: &Path,
    entry_bytes: f64,
    seconds_per_page_written: f64,
    size: ProcessorProbeSize,
) -> CliResult<MeasuredProcessor> {
    let path = dir.join("strata-processor-probe");
    if path.exists() {
        return Err(CliError::InvalidArgument(format!(
            "{}: exists; the processor probe needs a new scratch directory there (remove it)",
            path.display()
        )));
    }
    let result = processor_probe(&path, entry_bytes, seconds_per_page_written, size);
    // The scratch database goes whatever the probe did.
    let removed = std::fs::remove_dir_all(&path)
        .map_err(|e| CliError::io(format!("removing {}", path.display()), e));
    let costs = result?;
    removed?;
    Ok(costs)
}

fn processor_probe(
    path: &Path,
    entry_bytes: f64,
    seconds_per_page_written: f64,
    size: ProcessorProbeSize,
) -> CliResult<MeasuredProcessor> {
    let runs = size.runs.max(2);
    let per_run = size.entries_per_run.max(1);
    let lookups = size.lookups.max(1);
    let value = vec![
        0x61u8;
        (entry_bytes as usize)
            .saturating_sub(PROBE_KEY_BYTES)
            .min(4096)
    ];
    let options = Options::default()
        .error_if_exists(true)
        .level0_compaction_trigger(runs + 1)
        .level0_slowdown_writes_trigger(runs + 1)
        .level0_stop_writes_trigger(runs + 1)
        .pin_filter_and_index_blocks(true)
        .block_cache_bytes(256 << 20)
        .bits_per_key(10.0)?;
    let db = Db::open(path, options)?;
    let mut put_seconds = 0.0;
    let mut write_run = |run: usize| -> CliResult<()> {
        let started = Instant::now();
        for i in 0..per_run {
            db.put(probe_key((run * per_run + i) as u64), &value)?;
        }
        put_seconds += started.elapsed().as_secs_f64();
        db.flush()?;
        Ok(())
    };
    // Keys past the written ones: every lookup finds nothing.
    let missing = (runs * per_run) as u64;
    write_run(0)?;
    let (one_run, one_run_spread) = time_absent_lookups(&db, missing, lookups)?;
    // The first run's own keys: each lookup searches a cached block of the one run.
    let (present, present_spread) = time_rounds(lookups, |i| {
        match db.get(probe_key(i % per_run as u64))? {
            Some(_) => Ok(()),
            None => Err(CliError::InvalidArgument(
                "the processor probe did not find a key it wrote".into(),
            )),
        }
    })?;
    for run in 1..runs {
        write_run(run)?;
    }
    let held = db.version().run_count();
    let (many_runs, many_runs_spread) = time_absent_lookups(&db, missing, lookups)?;
    // Range lookups of one entry from keys spread over the key space, every run positioned:
    // the iterator's whole time, as the engine times its seeks (one in sixteen).
    let (seek, seek_spread) = time_rounds((lookups / 10).max(5), |i| {
        let mut iterator = db.iter();
        iterator.seek(probe_key(missing + i));
        if let Some(entry) = iterator.next() {
            std::hint::black_box(entry?);
        }
        Ok(())
    })?;
    let started = Instant::now();
    db.compact()?;
    let compaction = started.elapsed().as_secs_f64();
    let written_pages = db.version().bytes() as f64 / PAGE_BYTES as f64;
    // A flush's fixed cost: flushes of one entry, timed (median of five).
    let mut flushes = Vec::new();
    for i in 0..5u64 {
        db.put(probe_key(missing + lookups as u64 + i), &value)?;
        let started = Instant::now();
        db.flush()?;
        flushes.push(started.elapsed().as_secs_f64());
    }
    flushes.sort_by(f64::total_cmp);
    db.close()?;
    if held < 2 {
        return Err(CliError::InvalidArgument(format!(
            "the processor probe's tree held {held} run(s) where it wrote {runs}"
        )));
    }
    let per_run_probed = ((many_runs - one_run) / (held - 1) as f64).max(0.0);
    let entries = (runs * per_run) as f64;
    let costs = CpuCosts {
        seconds_per_lookup: (one_run - per_run_probed).max(0.0),
        seconds_per_run_probed: per_run_probed,
        seconds_per_run_sought: seek / held as f64,
        seconds_per_block_searched: (present - one_run).max(0.0),
        seconds_per_update: put_seconds / entries,
        seconds_per_entry_merged: ((compaction - written_pages * seconds_per_page_written)
            / entries)
            .max(0.0),
        // Merges beside the operations, on the engine's compaction threads that the foreground
        // leaves a processor (`tuner::merge_threads_beside`), their page I/O on the device the
        // lookups read from (`tuner::foreground_beside_merges`); `--device merge-threads=0`
        // charges them to the operations as Monkey does.
        merge_threads: merge_threads_beside(
            Options::default().max_background_compactions,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        ),
        seconds_per_flush: flushes[flushes.len() / 2],
        // Where the compaction and flush threads and the foreground outnumber the processors,
        // the foreground gives up its processor's part of the merges' processor time
        // (`tuner::foreground_share_of_merges`); `--device merge-share=0` leaves it out.
        foreground_share_of_merges: foreground_share_of_merges(
            Options::default().max_background_compactions,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        ),
    };
    Ok(MeasuredProcessor {
        costs,
        lookup_spread: one_run_spread
            .max(many_runs_spread)
            .max(present_spread)
            .max(seek_spread),
        flush_spread: CostSpread::of_rounds(&flushes)?,
    })
}

/// The median round's seconds per lookup of `lookups` absent keys from `first_missing` on (five
/// rounds of a fifth each), and the rounds' spread.
fn time_absent_lookups(db: &Db, first_missing: u64, lookups: usize) -> CliResult<(f64, f64)> {
    time_rounds(lookups, |i| {
        if db.get(probe_key(first_missing + i))?.is_some() {
            return Err(CliError::InvalidArgument(
                "the processor probe found a key it never wrote".into(),
            ));
        }
        Ok(())
    })
}

/// The median round's seconds per call of `operation` over `count` calls in five rounds of a
/// fifth each (at least one call a round), the calls numbered from 0 across the rounds; and the
/// rounds' spread (`CostSpread::of_rounds`). Median of five: one slow round (a page fault,
/// another process) does not count.
fn time_rounds(
    count: usize,
    mut operation: impl FnMut(u64) -> CliResult<()>,
) -> CliResult<(f64, f64)> {
    let per_round = (count / 5).max(1) as u64;
    let mut rounds = Vec::new();
    for round in 0..5u64 {
        let started = Instant::now();
        for i in 0..per_round {
            operation(round * per_round + i)?;
        }
        rounds.push(started.elapsed().as_secs_f64() / per_round as f64);
    }
    rounds.sort_by(f64::total_cmp);
    Ok((rounds[rounds.len() / 2], CostSpread::of_rounds(&rounds)?))
}

/// The in-order reads' size: the engine's default compaction readahead.
const MERGE_READ_BYTES: u64 = 2 << 20;

fn open_direct(
    fs: &RealFileSystem,
    path: &Path,
) -> CliResult<std::sync::Arc<dyn strata::env::RandomAccessFile>> {
    fs.open_random_access(path, true).map_err(|error| {
        CliError::InvalidArgument(format!(
            "{}: direct reads are not available here ({error}); measure on the device the \
             database will use",
            path.display()
        ))
    })
}

/// Seconds per page of the whole file read in order, [`MERGE_READ_BYTES`] a read.
fn read_in_order(fs: &RealFileSystem, path: &Path, pages: u64) -> CliResult<f64> {
    let file = open_direct(fs, path)?;
    let total = pages * PAGE_BYTES;
    let started = Instant::now();
    let mut offset = 0;
    while offset < total {
        let n = MERGE_READ_BYTES.min(total - offset);
        let bytes = file.read_at(offset, n as usize)?;
        if bytes.len() as u64 != n {
            return Err(CliError::InvalidArgument(format!(
                "{}: the probe read {} bytes of {n} at offset {offset}",
                path.display(),
                bytes.len()
            )));
        }
        offset += n;
    }
    Ok(started.elapsed().as_secs_f64() / pages as f64)
}

/// Mean seconds per random data-block read over `reads` reads, and the spread of the rounds they
/// are timed in (`CostSpread::of_rounds` of the rounds' means): five rounds, one a read below five
/// reads. A read is of [`BLOCK_READ_PAGES`] pages at a page boundary: what the engine's direct
/// reads fetch for one data block.
fn read_pages(fs: &RealFileSystem, path: &Path, pages: u64, reads: usize) -> CliResult<(f64, f64)> {
    if pages < BLOCK_READ_PAGES {
        return Err(CliError::InvalidArgument(format!(
            "{}: the probe's file holds {pages} page(s); a read takes {BLOCK_READ_PAGES}",
            path.display()
        )));
    }
    let span = (BLOCK_READ_PAGES * PAGE_BYTES) as usize;
    let file = open_direct(fs, path)?;
    // Fixed seed: the same probe reads the same pages.
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let reads = reads.max(1);
    let per_round = (reads / 5).max(1);
    let mut rounds = Vec::new();
    let mut done = 0;
    let started = Instant::now();
    while done < reads {
        // The fifth round takes what is left.
        let count = if rounds.len() == 4 {
            reads - done
        } else {
            per_round.min(reads - done)
        };
        let round_started = Instant::now();
        for _ in 0..count {
            let page = rng.gen_range(0..=pages - BLOCK_READ_PAGES);
            let bytes = file.read_at(page * PAGE_BYTES, span)?;
            if bytes.len() != span {
                return Err(CliError::InvalidArgument(format!(
                    "{}: the probe read {} bytes of a {span}-byte read",
                    path.display(),
                    bytes.len()
                )));
            }
        }
        rounds.push(round_started.elapsed().as_secs_f64() / count as f64);
        done += count;
    }
    let mean = started.elapsed().as_secs_f64() / reads as f64;
    Ok((mean, CostSpread::of_rounds(&rounds)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_the_proportions_of_the_totals() {
        let totals = WorkloadTotals {
            point_lookups: 600,
            point_lookups_found: 150,
            seeks: 100,
            scan_entries: 2_000,
            long_scans: 100,
            long_scan_entries: 2_000,
            writes: 300,
        };
        let workload = workload_from_totals(&totals, 10_000).expect("a mix");
        assert!((workload.point_lookups - 0.6).abs() < 1e-12);
        assert!((workload.range_lookups - 0.1).abs() < 1e-12);
        assert!((workload.updates - 0.3).abs() < 1e-12);
        assert!((workload.zero_result_fraction - 0.75).abs() < 1e-12);
        assert!((workload.selectivity - 20.0 / 10_000.0).abs() < 1e-12);
        // EcoTune's r and K: every one of the 100 range lookups was long, 20 entries each.
        let scans = workload.long_scans.expect("counted");
        assert!((scans.share_of_queries - 100.0 / 700.0).abs() < 1e-12);
        assert!((scans.entries - 20.0).abs() < 1e-12);
        assert_eq!(workload_from_totals(&WorkloadTotals::default(), 10), None);
        // Totals from a build before the long-scan counts: read off the range lookups.
        let old = WorkloadTotals {
            long_scans: 0,
            long_scan_entries: 0,
            ..totals
        };
        let workload = workload_from_totals(&old, 10_000).expect("a mix");
        assert_eq!(workload.long_scans, None);
        let derived = workload.long_scans(10_000.0);
        assert!((derived.share_of_queries - scans.share_of_queries).abs() < 1e-12);
        assert!((derived.entries - scans.entries).abs() < 1e-12);
    }

    #[test]
    fn a_database_is_measured_from_its_tree_and_its_totals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        for i in 0..1_000u32 {
            db.put(format!("key{i:05}"), [7u8; 100]).expect("put");
        }
        for i in 0..400u32 {
            db.get(format!("key{i:05}")).expect("get");
            db.get(format!("nokey{i:05}")).expect("get");
        }
        db.flush().expect("flush");
        db.close().expect("close");
        let measured = measure_database(dir.path()).expect("measures");
        assert_eq!(measured.entries, 1_000);
        assert!(measured.entry_bytes > 100.0, "{}", measured.entry_bytes);
        assert_eq!(measured.totals.point_lookups, 800);
        // 800 queries: too few for the window; the lifetime totals are taken.
        let (workload, source) = measured.mix(false).expect("a mix");
        assert_eq!(source, "lifetime totals");
        assert!((workload.point_lookups - 800.0 / 1_800.0).abs() < 1e-12);
        assert!((workload.zero_result_fraction - 0.5).abs() < 1e-12);
        assert!((measured.filter_bits_per_key - 10.0).abs() < 0.5);

        let empty = tempfile::tempdir().expect("tempdir");
        Db::open(empty.path(), Options::default())
            .expect("open")
            .close()
            .expect("close");
        assert!(measure_database(empty.path()).is_err());
        assert!(measure_database(&empty.path().join("missing")).is_err());
    }

    #[test]
    fn the_processor_probe_measures_the_engine_and_cleans_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let size = ProcessorProbeSize {
            runs: 4,
            entries_per_run: 2_000,
            lookups: 5_000,
        };
        let measured = measure_processor(dir.path(), 128.0, 0.0, size).expect("probe");
        // The spreads are the slowest timing over the fastest: factors of at least 1.
        for spread in [measured.lookup_spread, measured.flush_spread] {
            assert!(spread.is_finite() && spread >= 1.0, "{measured:?}");
        }
        let costs = measured.costs;
        for value in [
            costs.seconds_per_lookup,
            costs.seconds_per_run_probed,
            costs.seconds_per_block_searched,
            costs.seconds_per_update,
            costs.seconds_per_entry_merged,
        ] {
            assert!(value.is_finite() && value >= 0.0, "{costs:?}");
        }
        // A seek positions an iterator in every run: it takes time, shared among the runs.
        assert!(costs.seconds_per_run_sought > 0.0, "{costs:?}");
        // An update and a merge do real work; they cannot be free.
        assert!(costs.seconds_per_update > 0.0, "{costs:?}");
        assert!(costs.seconds_per_entry_merged > 0.0, "{costs:?}");
        assert!(costs.seconds_per_flush > 0.0, "{costs:?}");
        assert!(costs.seconds_per_lookup + costs.seconds_per_run_probed > 0.0);
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("list").count(),
            0,
            "the scratch database is removed"
        );
        // A directory already there is not touched.
        let existing = dir.path().join("strata-processor-probe");
        std::fs::create_dir(&existing).expect("mkdir");
        std::fs::write(existing.join("keep"), b"data").expect("write");
        let error = measure_processor(dir.path(), 128.0, 0.0, size).expect_err("exists");
        assert!(error.to_string().contains("exists"), "{error}");
        assert!(existing.join("keep").exists());
    }

    #[test]
    fn the_device_probe_reads_a_data_blocks_two_pages_and_refuses_a_file_of_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("one-page");
        std::fs::write(&path, vec![7u8; PAGE_BYTES as usize]).expect("write");
        let error = read_pages(&RealFileSystem, &path, 1, 10).expect_err("one page");
        assert!(error.to_string().contains("a read takes 2"), "{error}");
        // Two pages: every read is the whole file, where direct I/O is there to read it.
        let path = dir.path().join("two-pages");
        std::fs::write(&path, vec![7u8; 2 * PAGE_BYTES as usize]).expect("write");
        match read_pages(&RealFileSystem, &path, 2, 10) {
            Ok((seconds, spread)) => assert!(seconds > 0.0 && spread >= 1.0),
            Err(error) => assert!(error.to_string().contains("direct reads"), "{error}"),
        }
    }

    #[test]
    fn the_device_probe_measures_positive_costs_and_cleans_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let size = ProbeSize {
            file_bytes: 1 << 20,
            reads: 50,
        };
        match measure_device(dir.path(), size) {
            Ok(measured) => {
                assert!(measured.seconds_per_read > 0.0 && measured.seconds_per_write > 0.0);
                assert!(measured.device.write_read_cost_ratio > 0.0);
                assert!(measured.seconds_per_merge_read > 0.0);
                assert!(measured.device.merge_read_cost_ratio > 0.0);
                assert_eq!(measured.device.page_bytes, 4096.0);
                assert!(
                    measured.read_spread.is_finite() && measured.read_spread >= 1.0,
                    "{measured:?}"
                );
            }
            // A temporary directory on tmpfs has no direct I/O: the probe must say so.
            Err(error) => assert!(error.to_string().contains("direct reads"), "{error}"),
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("list").count(),
            0,
            "the probe file is removed"
        );
    }
}
