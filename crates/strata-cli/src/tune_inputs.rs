//! What `strata tune` can measure instead of being told: the data and the workload mix of an
//! existing database (`--from-db`), and the device (`--measure-device`).
//!
//! The database's mix comes from its lifetime workload totals (`Db::workload`: point lookups and
//! how many found their key, range lookups and the entries they returned, entries written), kept
//! in its manifest across restarts; its size and entry size from its tree. The totals cover the
//! database's whole life, the initial load included: a store loaded once and then read counts the
//! load as updates, which is what it cost.
//!
//! The device probe writes a file sequentially and syncs it (the cost of the pages a flush or a
//! merge writes), then reads random pages of it with direct I/O (the cost of a lookup's page read
//! that misses every cache); SPEC §7's `Omega` is the mean read, `phi` the write/read ratio.

use std::path::Path;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use strata::env::{FileSystem, RealFileSystem};
use strata::model::tuner::{Device, Workload};
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
    /// The filters' average bits per key.
    pub filter_bits_per_key: f64,
    /// The lifetime totals the mix was derived from.
    pub totals: WorkloadTotals,
    /// The mix (`None` when the database has served no operation).
    pub workload: Option<Workload>,
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
    let totals = db.workload();
    Ok(MeasuredDatabase {
        entries,
        entry_bytes,
        filter_bits_per_key: stats.average_bits_per_key,
        totals,
        workload: workload_from_totals(&totals, entries),
    })
}

/// The workload mix (proportions of operations, SPEC §7) the totals describe over a tree of
/// `entries` entries; `None` if they count no operation.
pub fn workload_from_totals(totals: &WorkloadTotals, entries: u64) -> Option<Workload> {
    let operations = (totals.point_lookups + totals.seeks + totals.writes) as f64;
    if operations == 0.0 {
        return None;
    }
    let zero_result_fraction = if totals.point_lookups == 0 {
        0.0
    } else {
        1.0 - totals.point_lookups_found as f64 / totals.point_lookups as f64
    };
    let selectivity = if totals.seeks == 0 || entries == 0 {
        0.0
    } else {
        (totals.scan_entries as f64 / totals.seeks as f64 / entries as f64).min(1.0)
    };
    Some(Workload {
        point_lookups: totals.point_lookups as f64 / operations,
        zero_result_fraction,
        range_lookups: totals.seeks as f64 / operations,
        selectivity,
        updates: totals.writes as f64 / operations,
    })
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

/// What the probe measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredDevice {
    /// Seconds per page written sequentially and synced.
    pub seconds_per_write: f64,
    /// Mean seconds per random page read with direct I/O.
    pub seconds_per_read: f64,
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
    let result = read_pages(&fs, &path, pages, size.reads);
    // The probe's file goes whatever the reads did.
    let removed = fs.remove_file(&path);
    let seconds_per_read = result?;
    removed?;
    Ok(MeasuredDevice {
        seconds_per_write,
        seconds_per_read,
        device: Device {
            seconds_per_read,
            write_read_cost_ratio: seconds_per_write / seconds_per_read,
            page_bytes: PAGE_BYTES as f64,
        },
    })
}

fn read_pages(fs: &RealFileSystem, path: &Path, pages: u64, reads: usize) -> CliResult<f64> {
    let file = fs.open_random_access(path, true).map_err(|error| {
        CliError::InvalidArgument(format!(
            "{}: direct reads are not available here ({error}); measure on the device the \
             database will use",
            path.display()
        ))
    })?;
    // Fixed seed: the same probe reads the same pages.
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let started = Instant::now();
    for _ in 0..reads.max(1) {
        let page = rng.gen_range(0..pages);
        let bytes = file.read_at(page * PAGE_BYTES, PAGE_BYTES as usize)?;
        if bytes.len() != PAGE_BYTES as usize {
            return Err(CliError::InvalidArgument(format!(
                "{}: the probe read {} bytes of a {PAGE_BYTES}-byte page",
                path.display(),
                bytes.len()
            )));
        }
    }
    Ok(started.elapsed().as_secs_f64() / reads.max(1) as f64)
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
            writes: 300,
        };
        let workload = workload_from_totals(&totals, 10_000).expect("a mix");
        assert!((workload.point_lookups - 0.6).abs() < 1e-12);
        assert!((workload.range_lookups - 0.1).abs() < 1e-12);
        assert!((workload.updates - 0.3).abs() < 1e-12);
        assert!((workload.zero_result_fraction - 0.75).abs() < 1e-12);
        assert!((workload.selectivity - 20.0 / 10_000.0).abs() < 1e-12);
        assert_eq!(workload_from_totals(&WorkloadTotals::default(), 10), None);
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
        let workload = measured.workload.expect("a mix");
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
                assert_eq!(measured.device.page_bytes, 4096.0);
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
