//! `strata study`: offline experiments that reproduce the Mnemosyne paper's analysis figures on a
//! real Strata tree, using the engine's study hooks (`Db::trace_lookup`, `Db::rewrite_filters`).
//!
//! * `headroom` (`headroom.rs`, Mnemosyne §3.2, Fig. 4): unnecessary data-block reads per lookup
//!   of uniform filters, Monkey on the actual shape and the per-file optimum of eq. 3 fed the
//!   exact per-file zero-result counts, on one static tree;
//! * `merlin-accuracy` (`merlin_accuracy.rs`, Mnemosyne §5.2, Fig. 10; DESIGN.md §4 "Accuracy
//!   check"): Euclidean distance and cosine similarity of Merlin's and the naive baseline's
//!   per-file `z` estimates against the truth, at checkpoints of a mixed workload;
//! * `regret` (`regret.rs`): each filter allocator's unnecessary reads divided by the
//!   per-file optimum's on the tree that allocator built (the shape-independent figure).
//!
//! Each prints a table on stdout (progress on stderr) and, with `--json FILE`, writes the
//! configuration and every measured row. Numbers come from the engine's own counters and traces.

mod headroom;
mod merlin_accuracy;
mod regret;
pub mod vectors;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use strata::alloc::FilterAllocator;
use strata::compaction::{CompactionPolicy, Leveling, Manual};
use strata::version::Version;
use strata::{Db, Options};

use crate::bench::ops::{LoadOrder, Op};
use crate::bench::workload::{random_value, KeyFormat};
use crate::error::{CliError, CliResult};

pub use headroom::HeadroomArgs;
pub use merlin_accuracy::MerlinAccuracyArgs;
pub use regret::RegretArgs;

/// The studies.
#[derive(Debug, clap::Subcommand)]
pub enum StudyCommand {
    /// Mnemosyne Fig. 4: unnecessary data-block reads per lookup of uniform, Monkey and
    /// per-file optimal filters on one static tree, for several budgets and workloads.
    Headroom(HeadroomArgs),
    /// Mnemosyne Fig. 10: accuracy of Merlin's per-file zero-result estimates (and the naive
    /// baseline's) against replayed ground truth, at checkpoints of a mixed workload.
    MerlinAccuracy(MerlinAccuracyArgs),
    /// Each filter allocator's unnecessary reads against the per-file optimum (exact
    /// per-file counts, same budget) on the tree that allocator built.
    Regret(RegretArgs),
}

/// Runs a study, printing its table on `out`.
pub fn run(command: &StudyCommand, out: &mut dyn Write) -> CliResult<()> {
    match command {
        StudyCommand::Headroom(args) => headroom::run(args, out),
        StudyCommand::MerlinAccuracy(args) => merlin_accuracy::run(args, out),
        StudyCommand::Regret(args) => regret::run(args, out),
    }
}

/// The tree every study loads: entry sizes, leveling's size ratio, and a small write buffer and
/// file size so the tree has several levels of many files (per-file allocation needs files).
#[derive(Debug, Clone, clap::Args, Serialize)]
pub struct TreeArgs {
    /// Key size in bytes.
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Leveling size ratio T.
    #[arg(long, default_value_t = 4.0)]
    pub size_ratio: f64,
    /// Memtable size (level 1 holds T times this).
    #[arg(long, default_value = "1MiB", value_parser = crate::bench::parse_bytes)]
    pub write_buffer_bytes: u64,
    /// Compaction output files are cut at about this size.
    #[arg(long, default_value = "1MiB", value_parser = crate::bench::parse_bytes)]
    pub target_file_bytes: u64,
}

/// What every study takes besides its own parameters.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Seed of the load order, the values and the operations.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Database directory (must not exist; kept afterwards). Default: a temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the configuration and every measured row as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl TreeArgs {
    /// Options of a study's load (`frozen = false`: leveling at the size ratio) or of its
    /// measurements (`true`: a policy that never compacts, so the shape stays as loaded), with
    /// `allocator`; no block cache and pinned index and filter blocks, so every data block a
    /// lookup reads is counted; no log (nothing is recovered).
    fn measured_options(
        &self,
        allocator: Arc<dyn FilterAllocator>,
        frozen: bool,
    ) -> CliResult<Options> {
        let policy: Arc<dyn CompactionPolicy> = if frozen {
            Arc::new(Manual)
        } else {
            Arc::new(Leveling::new(self.size_ratio)?)
        };
        Ok(Options::default()
            .write_buffer_bytes(usize::try_from(self.write_buffer_bytes).unwrap_or(usize::MAX))
            .target_file_bytes(self.target_file_bytes)
            .block_cache_bytes(0)
            .pin_filter_and_index_blocks(true)
            .disable_wal(true)
            .compaction_policy(policy)
            .filter_allocator(allocator))
    }
}

/// The database directory of a study: `--dir` if given (kept afterwards), else a fresh
/// directory in the temp dir, removed when dropped.
struct ScratchDir {
    path: PathBuf,
    remove: bool,
}

impl ScratchDir {
    fn new(given: Option<&Path>, study: &str) -> CliResult<Self> {
        let (path, remove) = match given {
            Some(path) => (path.to_path_buf(), false),
            None => {
                let nanos = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                let name = format!("strata-study-{study}-{}-{nanos}", std::process::id());
                (std::env::temp_dir().join(name), true)
            }
        };
        if path.exists() {
            return Err(CliError::InvalidArgument(format!(
                "--dir {} already exists; a study needs a fresh directory",
                path.display()
            )));
        }
        Ok(ScratchDir { path, remove })
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if self.remove {
            // Best effort: a leftover directory in the temp dir is not worth failing the run for.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The filter bits per key in use (`Stats::effective_bits_per_key`) during a load, sampled every
/// [`IN_USE_SAMPLE_PUTS`] puts: the most at any sample, and the least once the tree had a last
/// level (two non-empty levels), where DESIGN.md §3.5's floor of 0.95 of the budget applies.
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct InUseRange {
    least: Option<f64>,
    most: f64,
}

/// Puts between two samples of [`InUseRange`].
const IN_USE_SAMPLE_PUTS: u64 = 1_000;

/// Writes keys `0..num` (the benchmark's key format) in the seeded pseudo-random load order of
/// `strata bench`'s Mnemosyne mixes, each with a fresh random value of `value_size` bytes, and
/// returns the filter bits in use it saw.
fn load(db: &Db, format: &KeyFormat, value_size: usize, seed: u64) -> CliResult<InUseRange> {
    let mut rng = StdRng::seed_from_u64(seed ^ VALUE_SEED_SALT);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut range = InUseRange::default();
    let mut puts = 0u64;
    for op in LoadOrder::new(format.num(), seed) {
        if let Op::Insert(index) = op {
            format.present_key(index, &mut key);
            random_value(value_size, &mut rng, &mut value);
            db.put(&key, &value)?;
            puts += 1;
            if puts.is_multiple_of(IN_USE_SAMPLE_PUTS) {
                let in_use = db.stats().effective_bits_per_key;
                range.most = range.most.max(in_use);
                let levels = db
                    .version()
                    .levels()
                    .iter()
                    .filter(|level| !level.is_empty())
                    .count();
                if levels >= 2 {
                    range.least = Some(range.least.map_or(in_use, |least| least.min(in_use)));
                }
            }
        }
    }
    Ok(range)
}

/// Mixed into the value rng's seed, so the values' stream differs from other seeded streams.
const VALUE_SEED_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

/// One level of the tree, for reports.
#[derive(Debug, Clone, Serialize)]
struct LevelShape {
    level: usize,
    runs: usize,
    files: usize,
    entries: u64,
}

fn tree_shape(version: &Version) -> Vec<LevelShape> {
    version
        .levels()
        .iter()
        .enumerate()
        .filter(|(_, level)| !level.is_empty())
        .map(|(index, level)| LevelShape {
            level: index,
            runs: level.runs().len(),
            files: level.file_count(),
            entries: level.entries(),
        })
        .collect()
}

fn shape_summary(shape: &[LevelShape]) -> String {
    shape
        .iter()
        .map(|level| {
            format!(
                "L{}: {} run{}, {} files, {} entries",
                level.level,
                level.runs,
                if level.runs == 1 { "" } else { "s" },
                level.files,
                level.entries
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Writes `report` as pretty JSON to `path` (`-` for stdout is not supported: the table is there).
fn write_json(path: &Path, report: &impl Serialize) -> CliResult<()> {
    let text = serde_json::to_string_pretty(report)
        .map_err(|e| CliError::InvalidArgument(format!("serializing the report: {e}")))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| CliError::io(format!("writing {}", path.display()), e))
}

fn report_error(error: std::io::Error) -> CliError {
    CliError::io("writing the study report", error)
}
