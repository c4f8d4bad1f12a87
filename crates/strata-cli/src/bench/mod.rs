//! `strata bench`: a db_bench-like benchmark. Runs the `--workloads` phases in order against one
//! database per engine (`--engines strata,rocksdb,fjall`; the peers need `--features peers`),
//! printing a table row per phase (throughput, latency percentiles, block reads per operation
//! from the engine's own counters) and the tree shape before each read phase; `--json` writes the
//! configuration and every phase's result for scripts.
//!
//! Each phase zeroes the engine's counters when it starts and reads them when it ends, so its
//! figures are its own. Background flushes and compactions
//! left over from a fill phase may still run during the next phase unless `--settle` is given.
//!
//! Built-in sanity checks: after a fill phase (either fill writes every key `0..num`), every
//! `readrandom` lookup and every `seekrandom` seek must find its key; `readmissing` must find
//! none. A failed check is an error (exit code 2).
//!
//! `workload.rs` holds the key format and generators, `report.rs` the result types and printing.

pub mod engine;
pub mod report;
pub mod workload;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use engine::{Engine, EngineConfig, EngineKind};

use crate::error::{CliError, CliResult};
use report::{Latencies, PhaseCounts, PhaseResult};
use workload::{FillOrder, KeyFormat, Workload};

/// Keys in a full run; `--quick` uses [`QUICK_NUM`].
const DEFAULT_NUM: u64 = 1_000_000;
/// Keys (and read operations) in a `--quick` run: about a minute or less on 2 cores in release.
const QUICK_NUM: u64 = 500_000;
/// Memtable size of a `--quick` run: small enough that the 500,000 keys (about 60 MiB) make a
/// tree of several levels, so the run measures table reads and not just the memtable.
const QUICK_WRITE_BUFFER_BYTES: u64 = 4 << 20;
/// Memtable size of a full run (the engine's and RocksDB's default).
const DEFAULT_WRITE_BUFFER_BYTES: u64 = 64 << 20;

/// Which compaction policy the benchmark's database uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CompactionKind {
    /// One run per level (`strata::compaction::Leveling`).
    Leveling,
    /// Up to `T - 1` runs per level (`strata::compaction::Tiering`).
    Tiering,
}

/// The flags of `strata bench`. Scripts depend on these names: add, never rename.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Phases to run, in order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "fillrandom,readrandom,readmissing,seekrandom"
    )]
    pub workloads: Vec<Workload>,
    /// Engines to run, each on its own fresh database (rocksdb and fjall need a build with
    /// `--features peers`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "strata")]
    pub engines: Vec<EngineKind>,
    /// Keys written by a fill phase [default: 1000000, or 500000 with --quick].
    #[arg(long, value_parser = parse_count)]
    pub num: Option<u64>,
    /// Operations of each read phase [default: --num].
    #[arg(long, value_parser = parse_count)]
    pub reads: Option<u64>,
    /// Key size in bytes (the zero-padded decimal key index).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes (random, incompressible).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Seed of every random choice (key order, read keys, values).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Bloom filter bits per key (uniform for every file).
    #[arg(long, default_value_t = 10.0)]
    pub bits_per_key: f64,
    /// Block cache capacity (bytes; KiB/MiB/GiB suffixes accepted).
    #[arg(long, default_value = "8MiB", value_parser = parse_bytes)]
    pub cache_bytes: u64,
    /// Read table files with O_DIRECT, so that block reads are device reads.
    #[arg(long)]
    pub direct_reads: bool,
    /// Keep every table's index and filter blocks pinned in memory (outside the block cache),
    /// as RocksDB does with `cache_index_and_filter_blocks = false`.
    #[arg(long)]
    pub pin_index_filter: bool,
    /// Compaction policy.
    #[arg(long, value_enum, default_value_t = CompactionKind::Leveling)]
    pub compaction: CompactionKind,
    /// Size ratio T of the compaction policy (a whole number for tiering).
    #[arg(long, default_value_t = 10.0)]
    pub size_ratio: f64,
    /// Memtable size (bytes; KiB/MiB/GiB suffixes accepted) [default: 64MiB, or 4MiB with
    /// --quick].
    #[arg(long, value_parser = parse_bytes)]
    pub write_buffer_bytes: Option<u64>,
    /// Entries read after each seek by seekrandom.
    #[arg(long, default_value_t = 10)]
    pub seek_nexts: u64,
    /// Database directory, reused if it exists [default: a fresh temporary directory, deleted
    /// afterwards].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Write the configuration and results as JSON to FILE (`-` for stdout; the table then goes
    /// to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Before each read phase, flush and wait for compactions, then print the tree.
    #[arg(long)]
    pub settle: bool,
    /// Preset for a run of about a minute: --num 500000, --write-buffer-bytes 4MiB and --settle,
    /// unless given.
    #[arg(long)]
    pub quick: bool,
}

/// The resolved configuration, as recorded in the JSON's `config`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchConfig {
    pub workloads: Vec<Workload>,
    pub engines: Vec<EngineKind>,
    pub num: u64,
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub seed: u64,
    pub bits_per_key: f64,
    pub cache_bytes: u64,
    pub direct_reads: bool,
    pub pin_index_filter: bool,
    pub compaction: CompactionKind,
    pub size_ratio: f64,
    pub write_buffer_bytes: u64,
    pub seek_nexts: u64,
    /// `null` when the benchmark ran in a temporary directory.
    pub db: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub settle: bool,
    pub quick: bool,
}

impl BenchConfig {
    /// Applies the defaults that depend on other flags (`--quick`, `--reads`) and checks ranges
    /// the engine does not check itself.
    pub fn resolve(args: &BenchArgs) -> CliResult<Self> {
        let num = args
            .num
            .unwrap_or(if args.quick { QUICK_NUM } else { DEFAULT_NUM });
        if args.value_size > strata::MAX_VALUE_BYTES {
            return Err(CliError::InvalidArgument(format!(
                "--value-size {} is larger than the engine's limit of {} bytes",
                args.value_size,
                strata::MAX_VALUE_BYTES
            )));
        }
        if args.workloads.is_empty() {
            return Err(CliError::InvalidArgument("--workloads is empty".into()));
        }
        let write_buffer_bytes = args.write_buffer_bytes.unwrap_or(if args.quick {
            QUICK_WRITE_BUFFER_BYTES
        } else {
            DEFAULT_WRITE_BUFFER_BYTES
        });
        if usize::try_from(write_buffer_bytes).is_err() {
            return Err(CliError::InvalidArgument(format!(
                "--write-buffer-bytes {write_buffer_bytes} does not fit in memory"
            )));
        }
        if args.engines.is_empty() {
            return Err(CliError::InvalidArgument("--engines is empty".into()));
        }
        if let Some(peer) = args
            .engines
            .iter()
            .find(|&&kind| kind != EngineKind::Strata && !cfg!(feature = "peers"))
        {
            return Err(CliError::InvalidArgument(format!(
                "engine {} needs a build with `--features peers` (see the README)",
                peer.name()
            )));
        }
        if args.db.is_some() && args.engines.len() > 1 {
            return Err(CliError::InvalidArgument(
                "--db names one database; it cannot be used with several --engines".into(),
            ));
        }
        Ok(BenchConfig {
            workloads: args.workloads.clone(),
            engines: args.engines.clone(),
            num,
            reads: args.reads.unwrap_or(num),
            key_size: args.key_size,
            value_size: args.value_size,
            seed: args.seed,
            bits_per_key: args.bits_per_key,
            cache_bytes: args.cache_bytes,
            direct_reads: args.direct_reads,
            pin_index_filter: args.pin_index_filter,
            compaction: args.compaction,
            size_ratio: args.size_ratio,
            write_buffer_bytes,
            seek_nexts: args.seek_nexts,
            db: args.db.clone(),
            json: args.json.clone(),
            settle: args.settle || args.quick,
            quick: args.quick,
        })
    }

    /// The settings every engine is configured from (data blocks of 4 KiB, as RocksDB's
    /// default).
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            block_bytes: 4096,
            bits_per_key: self.bits_per_key,
            cache_bytes: self.cache_bytes,
            write_buffer_bytes: self.write_buffer_bytes,
            size_ratio: self.size_ratio,
            compaction: self.compaction,
            direct_reads: self.direct_reads,
            pin_index_filter: self.pin_index_filter,
        }
    }

    fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some(Path::new("-"))
    }
}

/// The whole JSON document.
#[derive(Debug, Serialize)]
struct BenchReport<'a> {
    config: &'a BenchConfig,
    results: &'a [PhaseResult],
}

/// Parses a count: digits with optional `_` separators (`1_000_000`).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    digits
        .parse::<u64>()
        .map_err(|_| format!("{text:?} is not a non-negative whole number"))
}

/// Parses a byte size: a count, optionally followed by `K`/`KiB`, `M`/`MiB` or `G`/`GiB`
/// (binary units, case-insensitive).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '_'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("{text:?}: unknown unit (use KiB, MiB or GiB)")),
    };
    parse_count(number)?
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// A temporary database directory, removed when dropped (after the database is closed).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn create() -> CliResult<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path =
            std::env::temp_dir().join(format!("strata-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover directory in the temp dir is not worth failing the run for.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn report_error(error: io::Error) -> CliError {
    CliError::io("writing the benchmark report", error)
}

/// Runs `strata bench`.
pub fn run(args: &BenchArgs) -> CliResult<()> {
    let config = BenchConfig::resolve(args)?;
    let format = KeyFormat::new(config.num, config.key_size).map_err(CliError::InvalidArgument)?;
    // With `--json -` stdout carries only the JSON, so the table goes to stderr.
    let (mut out, progress): (Box<dyn Write>, bool) = if config.json_to_stdout() {
        (Box::new(io::stderr()), false)
    } else {
        (Box::new(io::stdout()), io::stdout().is_terminal())
    };
    let mut results = Vec::new();
    let mut counts = Vec::new();
    for &kind in &config.engines {
        let temp_dir = match &config.db {
            Some(_) => None,
            None => Some(TempDir::create()?),
        };
        let dir = match (&config.db, &temp_dir) {
            (Some(path), _) => path.clone(),
            (None, Some(temp)) => temp.path.clone(),
            (None, None) => unreachable!("a temporary directory exists when --db is absent"),
        };
        let mut bench = Bench {
            config: &config,
            format,
            out: out.as_mut(),
            progress,
            results: Vec::new(),
            counts: Vec::new(),
        };
        let outcome = bench.run_all(kind, &dir);
        results.append(&mut bench.results);
        counts.append(&mut bench.counts);
        // The engine is closed inside `run_all`; only now may its temporary directory go.
        drop(temp_dir);
        outcome?;
    }
    writeln!(out, "\nsummary").map_err(report_error)?;
    report::write_header(out.as_mut()).map_err(report_error)?;
    for (result, phase_counts) in results.iter().zip(&counts) {
        report::write_row(out.as_mut(), result, phase_counts).map_err(report_error)?;
    }
    out.flush().map_err(report_error)?;
    if let Some(path) = &config.json {
        write_json(path, &config, &results)?;
    }
    Ok(())
}

fn write_json(path: &Path, config: &BenchConfig, results: &[PhaseResult]) -> CliResult<()> {
    let report = BenchReport { config, results };
    let mut text = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::io("encoding the JSON report", io::Error::other(e)))?;
    text.push('\n');
    if path == Path::new("-") {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::io("writing the JSON report to stdout", e))
    } else {
        std::fs::write(path, text)
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
    }
}

/// One benchmark run: the configuration, where it reports, and what it measured so far.
struct Bench<'a> {
    config: &'a BenchConfig,
    format: KeyFormat,
    out: &'a mut dyn Write,
    /// Show a percentage while a phase runs (stdout is a terminal and carries no JSON).
    progress: bool,
    results: Vec<PhaseResult>,
    counts: Vec<PhaseCounts>,
}

impl Bench<'_> {
    fn run_all(&mut self, kind: EngineKind, dir: &Path) -> CliResult<()> {
        let config = self.config;
        let engine_config = config.engine_config();
        writeln!(
            self.out,
            "\n{} bench: db {} ({}), num {}, reads {}, key {} B, value {} B, seed {}",
            kind.name(),
            dir.display(),
            if config.db.is_some() { "reused if present" } else { "temporary" },
            config.num,
            config.reads,
            config.key_size,
            config.value_size,
            config.seed,
        )
        .map_err(report_error)?;
        let engine = engine::open(kind, dir, &engine_config)?;
        writeln!(self.out, "  {} {} settings:", engine.name(), engine.version()).map_err(report_error)?;
        for line in engine.settings() {
            writeln!(self.out, "    {line}").map_err(report_error)?;
        }
        let outcome = self.run_phases(engine.as_ref());
        let closed = engine.close();
        outcome?;
        closed?;
        self.out.flush().map_err(report_error)
    }

    fn run_phases(&mut self, engine: &dyn Engine) -> CliResult<()> {
        // Set once a fill phase wrote every key `0..num`: from then on reads must find them all.
        let mut filled = false;
        let workloads = self.config.workloads.clone();
        for (index, &workload) in workloads.iter().enumerate() {
            if !workload.is_write() {
                if self.config.settle {
                    self.settle(engine)?;
                }
                writeln!(self.out).map_err(report_error)?;
                report::write_tree(
                    self.out,
                    &format!("{} before {}", engine.name(), workload.name()),
                    &engine.shape(),
                )
                .map_err(report_error)?;
            }
            if index == 0 || !workloads[index - 1].is_write() || !workload.is_write() {
                writeln!(self.out).map_err(report_error)?;
                report::write_header(self.out).map_err(report_error)?;
            }
            engine.reset_counters();
            let mut latencies = Latencies::new();
            let started = Instant::now();
            let counts = match workload {
                Workload::Fillseq | Workload::Fillrandom => {
                    self.fill(engine, workload, &mut latencies)?
                }
                Workload::Readrandom | Workload::Readmissing => {
                    self.read(engine, workload, &mut latencies)?
                }
                Workload::Seekrandom => self.seek(engine, &mut latencies)?,
            };
            let elapsed = started.elapsed();
            let result = PhaseResult::new(
                engine.name(),
                workload,
                &counts,
                &latencies,
                elapsed,
                &engine.counters(),
                &engine.shape(),
            );
            report::write_row(self.out, &result, &counts).map_err(report_error)?;
            self.out.flush().map_err(report_error)?;
            self.results.push(result);
            self.counts.push(counts);
            self.check(workload, &counts, filled)?;
            filled |= workload.is_write();
        }
        Ok(())
    }

    /// Flushes and waits for compactions. The counters were zeroed when the previous phase began,
    /// so if that phase wrote, its write amplification is updated to include the flush and
    /// compactions its writes caused.
    fn settle(&mut self, engine: &dyn Engine) -> CliResult<()> {
        let started = Instant::now();
        engine.flush()?;
        engine.wait_for_compactions()?;
        let seconds = started.elapsed().as_secs_f64();
        let write_amp = engine.counters().write_amplification();
        match self.results.last_mut() {
            Some(previous) if previous.phase.is_write() => {
                previous.write_amp = write_amp;
                writeln!(
                    self.out,
                    "settled in {seconds:.2} s: {} write amplification including the settle {}",
                    previous.phase.name(),
                    report::optional(write_amp, 2)
                )
            }
            _ => writeln!(self.out, "settled in {seconds:.2} s"),
        }
        .map_err(report_error)
    }

    fn check(&mut self, workload: Workload, counts: &PhaseCounts, filled: bool) -> CliResult<()> {
        let name = workload.name();
        match workload {
            Workload::Readrandom | Workload::Seekrandom if counts.found != counts.ops => {
                if filled {
                    return Err(CliError::CheckFailed(format!(
                        "{name} found {} of {} keys after a fill of every key",
                        counts.found, counts.ops
                    )));
                }
                writeln!(
                    self.out,
                    "note: {name} found {} of {} keys (no fill phase ran before it, so the database may not hold them all)",
                    counts.found, counts.ops
                )
                .map_err(report_error)?;
            }
            Workload::Readmissing if counts.found > 0 => {
                return Err(CliError::CheckFailed(format!(
                    "readmissing found {} of {} keys that were never written",
                    counts.found, counts.ops
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn fill(
        &mut self,
        engine: &dyn Engine,
        workload: Workload,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, workload);
        let order = FillOrder::new(workload, self.format.num(), &mut rng)
            .map_err(CliError::InvalidArgument)?;
        let mut progress = Progress::new(self.progress, workload, order.len());
        let (mut key, mut value) = (Vec::new(), Vec::new());
        for op in 0..order.len() {
            self.format.present_key(order.index(op), &mut key);
            workload::random_value(self.config.value_size, &mut rng, &mut value);
            let started = Instant::now();
            engine.put(&key, &value)?;
            latencies.record(started.elapsed());
            progress.tick(op, self.out);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: order.len(),
            ..PhaseCounts::default()
        })
    }

    fn read(
        &mut self,
        engine: &dyn Engine,
        workload: Workload,
        latencies: &mut Latencies,
    ) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, workload);
        let mut progress = Progress::new(self.progress, workload, self.config.reads);
        let mut key = Vec::new();
        let mut found = 0;
        for done in 0..self.config.reads {
            if workload == Workload::Readmissing {
                let gap = workload::random_missing_gap(&self.format, &mut rng);
                self.format.missing_key(gap, &mut key);
            } else {
                let index = workload::random_present_index(&self.format, &mut rng);
                self.format.present_key(index, &mut key);
            }
            let started = Instant::now();
            let value = engine.get(&key)?;
            latencies.record(started.elapsed());
            found += u64::from(value.is_some());
            progress.tick(done, self.out);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: self.config.reads,
            found,
            entries_read: 0,
        })
    }

    /// Seek to a random existing key, then read `seek_nexts` more entries (db_bench's
    /// `seekrandom` with `--seek_nexts`).
    fn seek(&mut self, engine: &dyn Engine, latencies: &mut Latencies) -> CliResult<PhaseCounts> {
        let mut rng = workload::phase_rng(self.config.seed, Workload::Seekrandom);
        let mut progress = Progress::new(self.progress, Workload::Seekrandom, self.config.reads);
        let mut key = Vec::new();
        let (mut found, mut entries_read) = (0, 0);
        for done in 0..self.config.reads {
            let index = workload::random_present_index(&self.format, &mut rng);
            self.format.present_key(index, &mut key);
            let started = Instant::now();
            let outcome = engine.scan(&key, self.config.seek_nexts + 1)?;
            latencies.record(started.elapsed());
            found += u64::from(outcome.first_matched);
            entries_read += outcome.entries;
            progress.tick(done, self.out);
        }
        progress.finish(self.out);
        Ok(PhaseCounts {
            ops: self.config.reads,
            found,
            entries_read,
        })
    }
}

/// A percentage on the report stream while a phase runs, redrawn at most every 200 ms; off when
/// the report does not go to a terminal.
struct Progress {
    enabled: bool,
    workload: Workload,
    total: u64,
    last_draw: Instant,
}

impl Progress {
    const REDRAW: Duration = Duration::from_millis(200);

    fn new(enabled: bool, workload: Workload, total: u64) -> Self {
        Progress {
            enabled,
            workload,
            total,
            last_draw: Instant::now(),
        }
    }

    fn tick(&mut self, done: u64, out: &mut dyn Write) {
        // Checking the clock costs ~20 ns; every 1024 operations keeps it out of the latencies.
        if !self.enabled || !done.is_multiple_of(1024) || self.last_draw.elapsed() < Self::REDRAW {
            return;
        }
        self.last_draw = Instant::now();
        let percent = done as f64 * 100.0 / self.total.max(1) as f64;
        // Progress is cosmetic: a failed write shows up on the next real report line.
        let _ = write!(out, "\r{} {percent:5.1}%", self.workload.name());
        let _ = out.flush();
    }

    fn finish(&self, out: &mut dyn Write) {
        if self.enabled {
            let _ = write!(out, "\r{:30}\r", "");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse_with_units_and_separators() {
        assert_eq!(parse_bytes("8MiB"), Ok(8 << 20));
        assert_eq!(parse_bytes("64m"), Ok(64 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert!(parse_bytes("8 parsecs").is_err());
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("99999999999999999999G").is_err());
        assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
        assert!(parse_count("-5").is_err());
    }
}
