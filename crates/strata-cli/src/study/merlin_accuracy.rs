//! `strata study merlin-accuracy` (Mnemosyne §5.2, Fig. 10; DESIGN.md §4 "Accuracy check"): how
//! close Merlin's per-file zero-result estimates `z_i`, and the naive baseline's, are to the
//! truth while a mixed workload runs.
//!
//! Method: load `--num` keys (leveling with dynamic level bytes, i.e. the paper's bottom-up
//! construction; access statistics on), then run `--ops` operations of the Mnemosyne type-II mix
//! (point lookups, a fraction `--empty-fraction` of them for absent keys, and updates, 31 : 10;
//! `bench::ops`) single-threaded. At `--checkpoints` evenly spaced points, replay *every lookup
//! issued so far* with `Db::trace_lookups` against the current tree (memtables included; one
//! frozen view, so background compactions cannot change it mid-replay): the number of replayed
//! lookups that probe file `i` without finding their key is the true `z_i` — what `z_i` means
//! for Merlin, "probes over the whole horizon since D = 0" (DESIGN.md §4). Tracing records nothing,
//! so the estimates are not disturbed. Then compare, over the live files of that tree, the vector
//! of true `z_i` with `FileState::access_estimate().z` (Merlin) and
//! `naive_access_estimate().z` (plain counters since the file was written) by Euclidean distance
//! and cosine similarity (`vectors.rs`).
//!
//! This differs from the paper's method only in how the tree is frozen: the paper copies the
//! database and re-executes the lookups on the copy; here the replay is a trace against a
//! snapshot of the live tree.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use strata::alloc::Uniform;
use strata::compaction::Leveling;
use strata::{Db, Options};

use super::vectors::{cosine_similarity, euclidean_distance};
use super::RunArgs;
use super::{load, report_error, shape_summary, tree_shape, write_json, ScratchDir, TreeArgs};
use crate::bench::distribution::KeyDistribution;
use crate::bench::ops::{Mix, Op, StreamSpec};
use crate::bench::parse_count;
use crate::bench::workload::{random_value, KeyFormat};
use crate::error::{CliError, CliResult};

/// DESIGN.md §4's target on the uniform workload: Merlin's cosine similarity at least this...
const TARGET_COSINE: f64 = 0.9;
/// ...and its Euclidean distance at most this fraction of the naive baseline's.
const TARGET_DISTANCE_RATIO: f64 = 0.5;

/// `strata study merlin-accuracy`.
#[derive(Debug, Clone, clap::Args)]
pub struct MerlinAccuracyArgs {
    /// Keys loaded before the mixed workload (the paper: 21M 512-byte entries).
    #[arg(long, default_value = "1000000", value_parser = parse_count)]
    pub num: u64,
    /// Operations of the mixed workload (31/41 lookups, 10/41 updates; the paper: 41M).
    #[arg(long, default_value = "1000000", value_parser = parse_count)]
    pub ops: u64,
    /// Checkpoints, evenly spaced over the operations.
    #[arg(long, default_value_t = 10)]
    pub checkpoints: u64,
    /// Fraction of the lookups that look for absent keys (the paper's Z).
    #[arg(long, default_value_t = 0.5)]
    pub empty_fraction: f64,
    /// Key distribution of the lookups (`uniform`, `normal:MEAN:STDDEV`, ...); updates are
    /// uniform.
    #[arg(long, default_value = "uniform")]
    pub distribution: KeyDistribution,
    /// The tree: entry sizes, size ratio, buffer and file sizes.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Uniform filter bits per key (filters do not change what is probed).
    #[arg(long, default_value_t = 10.0)]
    pub bits_per_key: f64,
    /// Weight of the recent window in Merlin's estimates (`Options::access_recent_weight`).
    #[arg(long, default_value_t = 0.75)]
    pub recent_weight: f64,
    /// The seed, the directory and the JSON report.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Accuracy of one estimator at one checkpoint.
#[derive(Debug, Clone, Copy, Serialize)]
struct Accuracy {
    euclidean_distance: f64,
    cosine_similarity: f64,
    /// Sum of the estimated `z_i` over the live files.
    total_z: f64,
}

impl Accuracy {
    fn of(estimated: &[f64], truth: &[f64]) -> Accuracy {
        Accuracy {
            euclidean_distance: euclidean_distance(estimated, truth),
            cosine_similarity: cosine_similarity(estimated, truth),
            total_z: estimated.iter().sum(),
        }
    }
}

/// One checkpoint.
#[derive(Debug, Clone, Serialize)]
struct Checkpoint {
    operations: u64,
    updates: u64,
    /// Point lookups issued so far (Merlin's `D`), all replayed.
    lookups: u64,
    files: usize,
    level0_files: usize,
    runs: usize,
    /// Sum of the true `z_i`.
    true_total_z: f64,
    merlin: Accuracy,
    naive: Accuracy,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    study: &'static str,
    num: u64,
    ops: u64,
    checkpoints: u64,
    empty_fraction: f64,
    distribution: KeyDistribution,
    key_size: usize,
    value_size: usize,
    size_ratio: f64,
    dynamic_level_bytes: bool,
    write_buffer_bytes: u64,
    target_file_bytes: u64,
    seed: u64,
    results: &'a [Checkpoint],
}

fn options(args: &MerlinAccuracyArgs) -> CliResult<Options> {
    let leveling = Leveling::new(args.tree.size_ratio)?.with_dynamic_level_bytes(true);
    Ok(Options::default()
        .write_buffer_bytes(usize::try_from(args.tree.write_buffer_bytes).unwrap_or(usize::MAX))
        .target_file_bytes(args.tree.target_file_bytes)
        .block_cache_bytes(8 << 20)
        .disable_wal(true)
        .access_statistics(true)
        .access_recent_weight(args.recent_weight)
        .compaction_policy(Arc::new(leveling))
        .filter_allocator(Arc::new(Uniform::new(args.bits_per_key)?)))
}

/// Runs the study.
pub fn run(args: &MerlinAccuracyArgs, out: &mut dyn Write) -> CliResult<()> {
    if args.checkpoints == 0 || args.ops < args.checkpoints {
        return Err(CliError::InvalidArgument(format!(
            "--checkpoints must be between 1 and --ops ({}), got {}",
            args.ops, args.checkpoints
        )));
    }
    let mix = Mix::MnemosyneTypeII {
        empty_fraction: args.empty_fraction,
    };
    let spec = StreamSpec::new(mix, args.num, args.ops, args.run.seed)
        .with_distribution(args.distribution);
    let ops = spec.ops().map_err(CliError::InvalidArgument)?;
    let format = KeyFormat::new(spec.key_capacity(), args.tree.key_size)
        .map_err(CliError::InvalidArgument)?;
    let dir = ScratchDir::new(args.run.dir.as_deref(), "merlin-accuracy")?;
    let started = Instant::now();

    let db = Db::open(&dir.path, options(args)?)?;
    eprintln!("merlin-accuracy: loading {} keys", args.num);
    load(&db, &format, args.tree.value_size, args.run.seed)?;
    db.flush()?;
    db.wait_for_compactions()?;
    eprintln!(
        "merlin-accuracy: loaded in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        shape_summary(&tree_shape(&db.version()))
    );

    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(args.run.seed ^ 0xa11ce);
    let mut lookups: Vec<Vec<u8>> = Vec::new();
    let mut value = Vec::new();
    let mut results = Vec::new();
    let mut updates = 0;
    let mut done = 0u64;
    let mut next_checkpoint = 1;
    for op in ops {
        let mut key = Vec::new();
        match op {
            Op::Read(index) => {
                format.present_key(index, &mut key);
                if db.get(&key)?.is_none() {
                    return Err(CliError::CheckFailed(format!(
                        "existing key {index} not found"
                    )));
                }
                lookups.push(key);
            }
            Op::ReadMissing(gap) => {
                format.missing_key(gap, &mut key);
                if db.get(&key)?.is_some() {
                    return Err(CliError::CheckFailed(format!("absent key {gap} found")));
                }
                lookups.push(key);
            }
            Op::Update(index) | Op::Insert(index) => {
                format.present_key(index, &mut key);
                random_value(args.tree.value_size, &mut rng, &mut value);
                db.put(&key, &value)?;
                updates += 1;
            }
            Op::Scan { .. } | Op::ReadModifyWrite(_) => {}
        }
        done += 1;
        if done * args.checkpoints >= next_checkpoint * args.ops {
            let checkpoint = measure(&db, &lookups, done, updates)?;
            eprintln!(
                "merlin-accuracy: checkpoint {next_checkpoint}/{} at {done} ops ({:.0} s): \
                 merlin cosine {:.3}, naive cosine {:.3}",
                args.checkpoints,
                started.elapsed().as_secs_f64(),
                checkpoint.merlin.cosine_similarity,
                checkpoint.naive.cosine_similarity
            );
            results.push(checkpoint);
            next_checkpoint += 1;
        }
    }
    db.close()?;

    print_table(out, args, &results).map_err(report_error)?;
    if let Some(path) = &args.run.json {
        write_json(
            path,
            &Report {
                study: "merlin-accuracy",
                num: args.num,
                ops: args.ops,
                checkpoints: args.checkpoints,
                empty_fraction: args.empty_fraction,
                distribution: args.distribution,
                key_size: args.tree.key_size,
                value_size: args.tree.value_size,
                size_ratio: args.tree.size_ratio,
                dynamic_level_bytes: true,
                write_buffer_bytes: args.tree.write_buffer_bytes,
                target_file_bytes: args.tree.target_file_bytes,
                seed: args.run.seed,
                results: &results,
            },
        )?;
    }
    Ok(())
}

/// Replays every lookup so far against one frozen view and compares the estimators with it.
fn measure(db: &Db, lookups: &[Vec<u8>], operations: u64, updates: u64) -> CliResult<Checkpoint> {
    let mut true_z: HashMap<u64, f64> = HashMap::new();
    let version = db.trace_lookups(lookups, |probes| {
        for &(number, found) in probes {
            if !found {
                *true_z.entry(number).or_default() += 1.0;
            }
        }
    })?;
    let (mut truth, mut merlin, mut naive) = (Vec::new(), Vec::new(), Vec::new());
    for (_, _, file) in version.files() {
        let (Some(estimate), Some(naive_estimate)) = (
            file.state().access_estimate(),
            file.state().naive_access_estimate(),
        ) else {
            return Err(CliError::CheckFailed(format!(
                "file {} has no access statistics although they are on",
                file.number()
            )));
        };
        truth.push(true_z.get(&file.number()).copied().unwrap_or(0.0));
        merlin.push(estimate.z);
        naive.push(naive_estimate.z);
    }
    Ok(Checkpoint {
        operations,
        updates,
        lookups: lookups.len() as u64,
        files: truth.len(),
        level0_files: version
            .levels()
            .first()
            .map_or(0, |level| level.file_count()),
        runs: version.run_count(),
        true_total_z: truth.iter().sum(),
        merlin: Accuracy::of(&merlin, &truth),
        naive: Accuracy::of(&naive, &truth),
    })
}

fn print_table(
    out: &mut dyn Write,
    args: &MerlinAccuracyArgs,
    results: &[Checkpoint],
) -> std::io::Result<()> {
    writeln!(
        out,
        "merlin-accuracy (Mnemosyne Fig. 10): {} keys ({} B keys, {} B values), then {} ops of \
         Mnemosyne type II (f0 = {}, {} lookups, uniform updates), leveling T = {} bottom-up \
         (dynamic level bytes), seed {}",
        args.num,
        args.tree.key_size,
        args.tree.value_size,
        args.ops,
        args.empty_fraction,
        args.distribution,
        args.tree.size_ratio,
        args.run.seed
    )?;
    writeln!(
        out,
        "true z_i: every lookup so far replayed (traced) against the tree at the checkpoint"
    )?;
    writeln!(
        out,
        "{:>9} {:>8} {:>5} {:>3} {:>10} | {:>10} {:>7} {:>10} | {:>10} {:>7} {:>10}",
        "ops",
        "lookups",
        "files",
        "L0",
        "true sum z",
        "merlin dist",
        "cos",
        "sum z",
        "naive dist",
        "cos",
        "sum z"
    )?;
    for row in results {
        writeln!(
            out,
            "{:>9} {:>8} {:>5} {:>3} {:>10.0} | {:>11.1} {:>7.4} {:>10.0} | {:>10.1} {:>7.4} {:>10.0}",
            row.operations,
            row.lookups,
            row.files,
            row.level0_files,
            row.true_total_z,
            row.merlin.euclidean_distance,
            row.merlin.cosine_similarity,
            row.merlin.total_z,
            row.naive.euclidean_distance,
            row.naive.cosine_similarity,
            row.naive.total_z
        )?;
    }
    let count = results.len().max(1) as f64;
    let mean = |value: fn(&Checkpoint) -> f64| results.iter().map(value).sum::<f64>() / count;
    let met = results
        .iter()
        .filter(|row| {
            row.merlin.cosine_similarity >= TARGET_COSINE
                && row.merlin.euclidean_distance
                    <= TARGET_DISTANCE_RATIO * row.naive.euclidean_distance
        })
        .count();
    writeln!(
        out,
        "mean cosine: merlin {:.4}, naive {:.4}; mean distance: merlin {:.1}, naive {:.1}",
        mean(|row| row.merlin.cosine_similarity),
        mean(|row| row.naive.cosine_similarity),
        mean(|row| row.merlin.euclidean_distance),
        mean(|row| row.naive.euclidean_distance)
    )?;
    writeln!(
        out,
        "DESIGN.md §4 target (merlin cosine >= {TARGET_COSINE}, distance <= {TARGET_DISTANCE_RATIO} x \
         naive's) met at {met} of {} checkpoints",
        results.len()
    )?;
    Ok(())
}
