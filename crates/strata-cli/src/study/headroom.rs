//! `strata study headroom` (Mnemosyne §3.2, Fig. 4): how many unnecessary data-block reads per
//! point lookup uniform filters, Monkey on the actual shape (IdealMonkey) and the per-file
//! optimum of Mnemosyne eq. 3 (fed the *exact* per-file zero-result counts) cost on one static
//! tree, at several filter budgets, for workloads with zero-result fraction `f0` in
//! `--empty-fractions` and key distributions in `--distributions`.
//!
//! Method (the paper's, on Strata):
//! 1. load `--num` keys in a seeded random order (leveling, size ratio `--size-ratio`, a small
//!    write buffer so the tree has several levels), flush, and let compactions finish (no full
//!    compaction: the tree keeps its imperfect shape); from then on the database is opened with
//!    a policy that never compacts, so the shape stays exactly as loaded;
//! 2. per workload, draw `--lookups` keys (a fraction `f0` of them absent keys inside the key
//!    range, the rest existing keys; both from the distribution) and trace every lookup
//!    (`Db::trace_lookup`) to get each file's exact `z_i` (probes that did not find the key);
//! 3. per budget `b` and policy, rewrite every file's filter (`Db::rewrite_filters`) with
//!    * uniform: `b` bits per key everywhere;
//!    * monkey: the DESIGN.md §2 solver with one item per sorted run, `z = 1` (Monkey's rule on the
//!      actual shape); every file gets its run's bits;
//!    * optimal: the same solver with one item per file weighted by the traced `z_i`;
//!
//!    and replay the workload, reading `unnecessary_data_reads` from the engine's counters.
//!
//! The measure: the block cache is off and every table's index and filter blocks are pinned
//! (the paper: "a 64MB block cache, which ensures all the filters and indexes fit in the cache
//! except the data blocks"), so every data block a lookup reads comes from the file and the
//! engine counts each one that did not hold the key — including reads of files without a filter
//! (the paper's reason for this metric over false positives). Filters above the budget are
//! split into modules of `b` bits per key (DESIGN.md §1), as the engine does for any file.
//!
//! The solver uses its default (pure) variant and the default FPR constant `ln2sq`; the
//! "predicted" column is that model, `sum_i z_i * exp(-ln2sq * bpk_i) / lookups`, on the bits the
//! files actually got.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use strata::alloc::Uniform;
use strata::solver::{monkey_items, Item, Problem};
use strata::version::{FileMetadata, Version};
use strata::{Db, Options};

use super::RunArgs;
use super::{
    load, report_error, shape_summary, tree_shape, write_json, LevelShape, ScratchDir, TreeArgs,
};
use crate::bench::distribution::{KeyChooser, KeyDistribution};
use crate::bench::parse_count;
use crate::bench::workload::KeyFormat;
use crate::error::{CliError, CliResult};

/// `ln(2)^2`, the Bloom filter's FPR constant (DESIGN.md §1).
const LN2_SQUARED: f64 = std::f64::consts::LN_2 * std::f64::consts::LN_2;

/// The paper's skewed headroom workload: "Normal distribution ... σ = 5.0" in KV-Bench's units,
/// which `bench::ops::MNEMOSYNE_NORMAL` reads as `σ / 62` of the key domain.
const PAPER_NORMAL: KeyDistribution = KeyDistribution::Normal {
    mean: 0.5,
    stddev: 5.0 / 62.0,
};

/// `strata study headroom`.
#[derive(Debug, Clone, clap::Args)]
pub struct HeadroomArgs {
    /// Keys loaded (the paper: 4M 512-byte entries; 1M 116-byte entries runs in a few minutes).
    #[arg(long, default_value = "1000000", value_parser = parse_count)]
    pub num: u64,
    /// The tree: entry sizes, size ratio, buffer and file sizes.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Point lookups per workload.
    #[arg(long, default_value = "200000", value_parser = parse_count)]
    pub lookups: u64,
    /// Filter budgets in bits per key, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5,6,7,8")]
    pub budgets: Vec<f64>,
    /// Zero-result fractions f0 of the workloads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1")]
    pub empty_fractions: Vec<f64>,
    /// Key distributions of the workloads, comma-separated (`uniform`, `normal:MEAN:STDDEV`,
    /// `zipfian`, ... as `strata bench --distribution`); `normal` alone is the paper's
    /// σ = 5.0, i.e. `normal:0.5:0.0806`.
    #[arg(long, value_delimiter = ',', default_value = "uniform,normal")]
    pub distributions: Vec<String>,
    /// The seed, the directory and the JSON report.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The three allocations compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Policy {
    Uniform,
    Monkey,
    Optimal,
}

impl Policy {
    const ALL: [Policy; 3] = [Policy::Uniform, Policy::Monkey, Policy::Optimal];

    fn name(self) -> &'static str {
        match self {
            Policy::Uniform => "uniform",
            Policy::Monkey => "monkey",
            Policy::Optimal => "optimal",
        }
    }
}

/// Where a file sits in the tree: level, run id, index in the run. Stable across filter
/// rewrites, which change file numbers but nothing else.
pub(super) type Position = (usize, u64, usize);

pub(super) fn positions(version: &Version) -> HashMap<u64, Position> {
    let mut positions = HashMap::new();
    for (level_index, level) in version.levels().iter().enumerate() {
        for run in level.runs() {
            for (index, file) in run.files().iter().enumerate() {
                positions.insert(file.number(), (level_index, run.id(), index));
            }
        }
    }
    positions
}

/// One workload: its parameters, its lookup keys, and what the traces found.
pub(super) struct Workload {
    distribution: KeyDistribution,
    empty_fraction: f64,
    pub(super) keys: Vec<Vec<u8>>,
    /// Lookups of existing keys (each must find its key).
    pub(super) existing: u64,
    /// Exact zero-result probes per file position.
    z: HashMap<Position, f64>,
    /// Mean files probed per lookup.
    pub(super) probes_per_lookup: f64,
}

impl Workload {
    /// Draws the lookups: lookup `i` is zero-result iff `floor((i + 1) * f0) > floor(i * f0)`,
    /// so exactly `floor(lookups * f0)` are, spread evenly; keys come from the distribution over
    /// the existing keys or over the gaps between them (as `strata bench`'s Mnemosyne mixes).
    pub(super) fn draw(
        format: &KeyFormat,
        distribution: KeyDistribution,
        empty_fraction: f64,
        lookups: u64,
        seed: u64,
    ) -> CliResult<Workload> {
        let mut rng = StdRng::seed_from_u64(seed);
        let num = format.num();
        let gaps = format.missing_gaps();
        let mut present = KeyChooser::new(distribution, num).map_err(CliError::InvalidArgument)?;
        let mut missing =
            KeyChooser::new(distribution, gaps.max(1)).map_err(CliError::InvalidArgument)?;
        let mut keys = Vec::with_capacity(usize::try_from(lookups).unwrap_or(0));
        let mut existing = 0;
        for i in 0..lookups {
            let empty =
                ((i + 1) as f64 * empty_fraction).floor() > (i as f64 * empty_fraction).floor();
            let mut key = Vec::new();
            if empty && gaps > 0 {
                format.missing_key(1 + missing.next(&mut rng, gaps), &mut key);
            } else {
                format.present_key(present.next(&mut rng, num), &mut key);
                existing += 1;
            }
            keys.push(key);
        }
        Ok(Workload {
            distribution,
            empty_fraction,
            keys,
            existing,
            z: HashMap::new(),
            probes_per_lookup: 0.0,
        })
    }

    fn label(&self) -> String {
        distribution_label(self.distribution)
    }

    /// Traces every lookup against the tree and keeps the zero-result probes per file position.
    pub(super) fn trace(&mut self, db: &Db) -> CliResult<()> {
        let mut by_number: HashMap<u64, f64> = HashMap::new();
        let mut probes = 0u64;
        let version = db.trace_lookups(&self.keys, |traced| {
            probes += traced.len() as u64;
            for &(number, found) in traced {
                if !found {
                    *by_number.entry(number).or_default() += 1.0;
                }
            }
        })?;
        let positions = positions(&version);
        self.z = by_number
            .into_iter()
            .filter_map(|(number, z)| positions.get(&number).map(|&p| (p, z)))
            .collect();
        self.probes_per_lookup = probes as f64 / self.keys.len().max(1) as f64;
        Ok(())
    }

    /// Runs every lookup on `db` with its statistics reset first, and checks that every lookup
    /// of an existing key found it.
    pub(super) fn replay(&self, db: &Db) -> CliResult<()> {
        db.reset_stats();
        let mut found = 0u64;
        for key in &self.keys {
            found += u64::from(db.get(key)?.is_some());
        }
        if found != self.existing {
            return Err(CliError::CheckFailed(format!(
                "{} lookups of existing keys found {found}",
                self.existing
            )));
        }
        Ok(())
    }

    pub(super) fn z_of(&self, position: Position) -> f64 {
        self.z.get(&position).copied().unwrap_or(0.0)
    }
}

fn distribution_label(distribution: KeyDistribution) -> String {
    if distribution == PAPER_NORMAL {
        "normal(5/62)".into()
    } else {
        distribution.to_string()
    }
}

/// One measured (workload, budget, policy).
#[derive(Debug, Clone, Serialize)]
struct Row {
    distribution: String,
    empty_fraction: f64,
    budget_bits_per_key: f64,
    policy: Policy,
    lookups: u64,
    unnecessary_data_reads: u64,
    unnecessary_reads_per_lookup: f64,
    /// `sum_i z_i * exp(-ln2sq * bpk_i) / lookups` on the bits the files got.
    predicted_per_lookup: f64,
    data_block_reads_per_lookup: f64,
    filter_false_positives_per_lookup: f64,
    /// The tree's actual average bits per key after the rewrite (from `Db::stats`).
    average_bits_per_key: f64,
    /// Files given no filter.
    files_without_filter: usize,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    study: &'static str,
    num: u64,
    /// Key and value sizes, size ratio, buffer and file sizes.
    #[serde(flatten)]
    tree: &'a TreeArgs,
    lookups: u64,
    seed: u64,
    measure: &'static str,
    shape: &'a [LevelShape],
    files: usize,
    runs: usize,
    rows: &'a [Row],
}

const MEASURE: &str = "unnecessary data-block reads per point lookup (engine counter \
     unnecessary_data_reads: data blocks read that did not hold the key); block cache off, \
     index and filter blocks pinned, so every data-block read is counted";

/// Options of the load (`frozen = false`) and of the measurements (`true`), uniform filters.
fn options(args: &HeadroomArgs, budget: f64, frozen: bool) -> CliResult<Options> {
    args.tree
        .measured_options(Arc::new(Uniform::new(budget)?), frozen)
}

fn validate(args: &HeadroomArgs) -> CliResult<()> {
    let invalid = |message: String| Err(CliError::InvalidArgument(message));
    if args.lookups == 0 {
        return invalid("--lookups must be at least 1".into());
    }
    if args.budgets.is_empty() || args.budgets.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
        return invalid(format!("--budgets must be positive: {:?}", args.budgets));
    }
    if args.empty_fractions.is_empty()
        || args
            .empty_fractions
            .iter()
            .any(|f| !(0.0..=1.0).contains(f))
    {
        return invalid(format!(
            "--empty-fractions must lie in [0, 1]: {:?}",
            args.empty_fractions
        ));
    }
    if args.num < 20 {
        return invalid("--num must be at least 20 (absent keys lie between keys)".into());
    }
    Ok(())
}

fn parse_distributions(args: &HeadroomArgs) -> CliResult<Vec<KeyDistribution>> {
    args.distributions
        .iter()
        .map(|text| {
            if text == "normal" {
                Ok(PAPER_NORMAL)
            } else {
                text.parse::<KeyDistribution>()
                    .map_err(CliError::InvalidArgument)
            }
        })
        .collect()
}

/// Runs the study.
pub fn run(args: &HeadroomArgs, out: &mut dyn Write) -> CliResult<()> {
    validate(args)?;
    let distributions = parse_distributions(args)?;
    let format = KeyFormat::new(args.num, args.tree.key_size).map_err(CliError::InvalidArgument)?;
    let dir = ScratchDir::new(args.run.dir.as_deref(), "headroom")?;
    let started = Instant::now();

    // 1. Load and settle.
    let first_budget = args.budgets.first().copied().unwrap_or(10.0);
    let db = Db::open(&dir.path, options(args, first_budget, false)?)?;
    eprintln!("headroom: loading {} keys", args.num);
    load(&db, &format, args.tree.value_size, args.run.seed)?;
    db.flush()?;
    db.wait_for_compactions()?;
    db.close()?;
    drop(db);
    let db = Db::open(&dir.path, options(args, first_budget, true)?)?;
    let version = db.version();
    let shape = tree_shape(&version);
    let files = version.files().count();
    let runs = version.run_count();
    let signature = shape_signature(&version);
    drop(version);
    eprintln!(
        "headroom: loaded in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        shape_summary(&shape)
    );

    // 2. Workloads and their exact per-file zero-result counts.
    let mut workloads = Vec::new();
    for (d, &distribution) in distributions.iter().enumerate() {
        for (f, &empty_fraction) in args.empty_fractions.iter().enumerate() {
            let seed = args.run.seed ^ ((d as u64) << 32 | f as u64).wrapping_mul(0x9e37_79b9);
            let mut workload =
                Workload::draw(&format, distribution, empty_fraction, args.lookups, seed)?;
            workload.trace(&db)?;
            workloads.push(workload);
        }
    }
    db.close()?;
    drop(db);

    // 3. Every budget and policy: rewrite the filters, replay, count.
    let mut rows = Vec::new();
    for &budget in &args.budgets {
        // Reopened per budget: filters above the budget are split into modules of its size.
        let db = Db::open(&dir.path, options(args, budget, true)?)?;
        for policy in Policy::ALL {
            match policy {
                Policy::Uniform | Policy::Monkey => {
                    let bits = shared_bits(&db.version(), policy, budget)?;
                    rewrite(&db, &bits, budget, &signature)?;
                    for workload in &workloads {
                        rows.push(measure(&db, workload, budget, policy)?);
                    }
                }
                Policy::Optimal => {
                    for workload in &workloads {
                        let bits = optimal_bits(&db.version(), workload, budget)?;
                        rewrite(&db, &bits, budget, &signature)?;
                        rows.push(measure(&db, workload, budget, policy)?);
                    }
                }
            }
            eprintln!(
                "headroom: {budget} bits/key, {} done ({:.0} s)",
                policy.name(),
                started.elapsed().as_secs_f64()
            );
        }
        db.close()?;
    }

    print_table(out, args, &shape, files, runs, &workloads, &rows).map_err(report_error)?;
    if let Some(path) = &args.run.json {
        write_json(
            path,
            &Report {
                study: "headroom",
                num: args.num,
                tree: &args.tree,
                lookups: args.lookups,
                seed: args.run.seed,
                measure: MEASURE,
                shape: &shape,
                files,
                runs,
                rows: &rows,
            },
        )?;
    }
    Ok(())
}

/// Every file's (position, key range, entries): what a filter rewrite must leave unchanged.
pub(super) fn shape_signature(version: &Version) -> Vec<(Position, Vec<u8>, Vec<u8>, u64)> {
    let positions = positions(version);
    version
        .files()
        .map(|(_, _, file)| {
            (
                positions.get(&file.number()).copied().unwrap_or_default(),
                file.smallest_user_key().to_vec(),
                file.largest_user_key().to_vec(),
                file.entries(),
            )
        })
        .collect()
}

/// Bits per key by file position for uniform (every file `budget`) or Monkey on the actual
/// shape (DESIGN.md §2, IdealMonkey: the solver over [`monkey_items`], one item per run with
/// `z = 1`; files take their run's).
fn shared_bits(
    version: &Version,
    policy: Policy,
    budget: f64,
) -> CliResult<HashMap<Position, f64>> {
    let positions = positions(version);
    let mut bits = HashMap::new();
    match policy {
        Policy::Uniform => {
            for position in positions.values() {
                bits.insert(*position, budget);
            }
        }
        Policy::Monkey | Policy::Optimal => {
            let runs: Vec<(u64, u64)> = version
                .levels()
                .iter()
                .flat_map(|level| level.runs())
                .map(|run| (run.id(), run.entries()))
                .collect();
            let entries: Vec<u64> = runs.iter().map(|&(_, entries)| entries).collect();
            let allocation = Problem::with_bits_per_key(monkey_items(&entries), budget)?.solve();
            let by_run: HashMap<u64, f64> = runs
                .iter()
                .zip(allocation.bits_per_key())
                .map(|(&(run, _), &bits)| (run, bits))
                .collect();
            for position in positions.values() {
                bits.insert(*position, by_run.get(&position.1).copied().unwrap_or(0.0));
            }
        }
    }
    Ok(bits)
}

/// The per-file optimum of Mnemosyne eq. 3 (DESIGN.md §2 solver, one item per file weighted by the
/// workload's exact `z_i`); files no lookup probed in vain get no filter.
pub(super) fn optimal_bits(
    version: &Version,
    workload: &Workload,
    budget: f64,
) -> CliResult<HashMap<Position, f64>> {
    optimal_bits_weighted(version, workload, budget, LN2_SQUARED, |_| 1.0)
}

/// [`optimal_bits`] with each file's `z_i` multiplied by `weight(position)` (the study's
/// cache-weighted optimum: `z_i` times the share of the file's data-block reads that missed the
/// cache), each bit priced by `fpr_constant` (DESIGN.md §2's per-layout constant: the filter family's,
/// `FilterFamily::fpr_constant`).
pub(super) fn optimal_bits_weighted(
    version: &Version,
    workload: &Workload,
    budget: f64,
    fpr_constant: f64,
    weight: impl Fn(Position) -> f64,
) -> CliResult<HashMap<Position, f64>> {
    let positions = positions(version);
    let files: Vec<(Position, u64)> = version
        .files()
        .filter_map(|(_, _, file)| {
            positions
                .get(&file.number())
                .map(|&position| (position, file.entries()))
        })
        .collect();
    let items = files
        .iter()
        .map(|&(position, entries)| {
            Item::new(entries, workload.z_of(position) * weight(position).max(0.0))
        })
        .collect();
    let allocation = Problem::with_bits_per_key(items, budget)?
        .fpr_constant(fpr_constant)?
        .solve();
    Ok(files
        .iter()
        .zip(allocation.bits_per_key())
        .map(|(&(position, _), &bits)| (position, bits))
        .collect())
}

/// Rewrites every filter with `bits` (by position) and checks that only the filters changed and
/// that every file got the bits asked, up to the most a file holds at this budget's module size
/// (the per-file optimum can exceed it for a tiny file on level 0 that every lookup probes).
pub(super) fn rewrite(
    db: &Db,
    bits: &HashMap<Position, f64>,
    budget: f64,
    signature: &[(Position, Vec<u8>, Vec<u8>, u64)],
) -> CliResult<()> {
    let most = strata::alloc::max_file_bits_per_key(budget);
    let bits: HashMap<Position, f64> = bits
        .iter()
        .map(|(&position, &asked)| (position, asked.min(most)))
        .collect();
    let before = positions(&db.version());
    let bits_for = |file: &FileMetadata| -> f64 {
        before
            .get(&file.number())
            .and_then(|position| bits.get(position))
            .copied()
            // Not reached: the tree is static and every file has a position.
            .unwrap_or(f64::NAN)
    };
    db.rewrite_filters(&bits_for)?;
    let version = db.version();
    if shape_signature(&version) != signature {
        return Err(CliError::CheckFailed(
            "the tree's shape changed during the study".into(),
        ));
    }
    let positions = positions(&version);
    for (_, _, file) in version.files() {
        let asked = positions
            .get(&file.number())
            .and_then(|position| bits.get(position))
            .copied()
            .unwrap_or(f64::NAN);
        if (file.bits_per_key() - asked).abs() > 1e-6 * asked.max(1.0) {
            return Err(CliError::CheckFailed(format!(
                "file {} got {} bits per key, {asked} were asked",
                file.number(),
                file.bits_per_key()
            )));
        }
    }
    Ok(())
}

/// Replays `workload` on the current filters and reads the engine's counters.
fn measure(db: &Db, workload: &Workload, budget: f64, policy: Policy) -> CliResult<Row> {
    let version = db.version();
    let positions = positions(&version);
    let mut predicted = 0.0;
    let mut files_without_filter = 0;
    for (_, _, file) in version.files() {
        let bits = file.bits_per_key();
        files_without_filter += usize::from(bits <= 0.0);
        if let Some(&position) = positions.get(&file.number()) {
            // DESIGN.md §1: eps = exp(-ln2sq * bpk); no filter (bpk 0) lets every probe through.
            predicted += workload.z_of(position) * (-LN2_SQUARED * bits).exp();
        }
    }
    drop(version);
    workload.replay(db)?;
    let stats = db.stats();
    let io = &stats.io;
    let lookups = workload.keys.len() as u64;
    let per_lookup = |count: u64| count as f64 / lookups as f64;
    Ok(Row {
        distribution: workload.label(),
        empty_fraction: workload.empty_fraction,
        budget_bits_per_key: budget,
        policy,
        lookups,
        unnecessary_data_reads: io.unnecessary_data_reads_total(),
        unnecessary_reads_per_lookup: per_lookup(io.unnecessary_data_reads_total()),
        predicted_per_lookup: predicted / lookups as f64,
        data_block_reads_per_lookup: per_lookup(io.data_block_reads_total()),
        filter_false_positives_per_lookup: per_lookup(io.filter_false_positives_total()),
        average_bits_per_key: stats.average_bits_per_key,
        files_without_filter,
    })
}

fn print_table(
    out: &mut dyn Write,
    args: &HeadroomArgs,
    shape: &[LevelShape],
    files: usize,
    runs: usize,
    workloads: &[Workload],
    rows: &[Row],
) -> std::io::Result<()> {
    writeln!(
        out,
        "headroom (Mnemosyne Fig. 4): {} keys ({} B keys, {} B values), leveling T = {}, \
         {} runs, {} files; {} lookups per workload, seed {}",
        args.num,
        args.tree.key_size,
        args.tree.value_size,
        args.tree.size_ratio,
        runs,
        files,
        args.lookups,
        args.run.seed
    )?;
    writeln!(out, "tree: {}", shape_summary(shape))?;
    writeln!(out, "measure: {MEASURE}")?;
    writeln!(
        out,
        "(measured, with the model's prediction sum z_i * eps_i / lookups in brackets)"
    )?;
    for workload in workloads {
        writeln!(out)?;
        writeln!(
            out,
            "{} f0 = {}: {:.2} files probed per lookup",
            workload.label(),
            workload.empty_fraction,
            workload.probes_per_lookup
        )?;
        writeln!(
            out,
            "{:>5}  {:>18}  {:>18}  {:>18}  {:>9}  {:>9}",
            "bpk", "uniform", "monkey", "optimal", "opt/unif", "opt/monk"
        )?;
        for &budget in &args.budgets {
            let find = |policy: Policy| {
                rows.iter().find(|row| {
                    row.policy == policy
                        && row.budget_bits_per_key == budget
                        && row.distribution == workload.label()
                        && row.empty_fraction == workload.empty_fraction
                })
            };
            let cell = |policy: Policy| {
                find(policy).map_or_else(
                    || "-".to_string(),
                    |row| {
                        format!(
                            "{:.5} [{:.5}]",
                            row.unnecessary_reads_per_lookup, row.predicted_per_lookup
                        )
                    },
                )
            };
            let ratio = |a: Policy, b: Policy| match (find(a), find(b)) {
                (Some(a), Some(b)) if b.unnecessary_reads_per_lookup > 0.0 => format!(
                    "{:.3}",
                    a.unnecessary_reads_per_lookup / b.unnecessary_reads_per_lookup
                ),
                _ => "-".to_string(),
            };
            writeln!(
                out,
                "{:>5}  {:>18}  {:>18}  {:>18}  {:>9}  {:>9}",
                budget,
                cell(Policy::Uniform),
                cell(Policy::Monkey),
                cell(Policy::Optimal),
                ratio(Policy::Optimal, Policy::Uniform),
                ratio(Policy::Optimal, Policy::Monkey)
            )?;
        }
    }
    let worst_overuse = rows
        .iter()
        .map(|row| row.average_bits_per_key - row.budget_bits_per_key)
        .fold(f64::NEG_INFINITY, f64::max);
    writeln!(out)?;
    writeln!(
        out,
        "actual average bits per key minus budget, worst row: {worst_overuse:+.4}"
    )?;
    Ok(())
}
