//! `strata crash-test`: the crash loop. A parent runs `strata stress` as a child process with a
//! journal (`journal.rs`) and kills it — with `SIGKILL` after a random delay, or by arming a named
//! crash point (`--crash-at`: the child kills itself inside a table write of a flush or compaction, a
//! manifest append or rewrite, the replacement of `CURRENT`, a WAL append or sync, or the
//! access-statistics save). The next child reopens the database and checks it against the
//! journal before it writes anything: the database opens; every acknowledged write is there with
//! its latest value (a process crash loses nothing acknowledged, synced or not); a write in
//! flight is there or not, a batch in flight wholly or not at all; no key holds a value never
//! written; a full scan agrees with the point reads; the filter cap holds. Iterations go round
//! every compaction policy x filter allocator, each pair with its own database.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::journal_path;
use crate::error::{CliError, CliResult};
use crate::policies::{CompactionKind, FilterAllocatorKind};

/// `strata crash-test` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct CrashTestArgs {
    /// Crash iterations in all (spread round-robin over the policy pairs).
    #[arg(long, default_value_t = 24)]
    pub iterations: usize,
    /// Directory for the databases and journals (default: a temporary one, removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the parent's choices; child `i` runs with seed + i.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Merge policies to cycle through (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub compaction: Vec<CompactionKind>,
    /// Filter allocators to cycle through (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub filter_policy: Vec<FilterAllocatorKind>,
    /// Keys per database.
    #[arg(long, default_value_t = 2_000)]
    pub keys: usize,
    /// Typical value size (one value in 64 is 16x larger).
    #[arg(long, default_value_t = 200)]
    pub value_size: usize,
    /// Worker threads per child.
    #[arg(long, default_value_t = 3)]
    pub threads: usize,
    /// A random kill comes 10 ms to this many ms after the child's start-up check.
    #[arg(long, default_value_t = 600)]
    pub max_kill_ms: u64,
    /// Fraction of iterations that crash at a named point rather than at a random moment.
    #[arg(long, default_value_t = 0.5)]
    pub named_fraction: f64,
    /// Fraction of the children's writes issued with `sync` (the rest survive a process crash
    /// once acknowledged just the same, having reached the operating system).
    #[arg(long, default_value_t = 0.05)]
    pub sync_fraction: f64,
    /// How long a named crash point may take to be reached before the child is killed instead.
    #[arg(long, default_value_t = 3_000)]
    pub point_wait_ms: u64,
    /// Children run `strata stress --auto-tune`: auto-tune's decisions (each a manifest write),
    /// switches of merge policy and merges for reads are among what a crash interrupts.
    #[arg(long)]
    pub auto_tune: bool,
}

/// Named crash points: `(operation, file kind, largest skip)`.
const CRASH_POINTS: [(&str, &str, u64); 10] = [
    ("append", "table", 300),
    ("sync", "table", 12),
    ("create", "table", 12),
    ("append", "manifest", 24),
    ("create", "manifest", 2),
    ("rename", "current", 2),
    ("append", "wal", 2_000),
    ("sync", "wal", 40),
    ("create", "access", 4),
    ("rename", "access", 4),
];

#[derive(Debug, Default)]
struct Tally {
    iterations: usize,
    random_kills: usize,
    named_crashes: usize,
    named_timeouts: usize,
    died_before_check: usize,
    checks_passed: usize,
}

/// What became of one child.
enum ChildEnd {
    /// It passed its start-up check and was then killed (by us or by its crash point).
    Crashed { named: bool, timed_out: bool },
    /// It died (by a signal) before finishing its start-up check.
    DiedEarly,
}

struct Pair {
    compaction: CompactionKind,
    filter_policy: FilterAllocatorKind,
}

impl Pair {
    fn name(&self) -> String {
        format!("{}-{}", self.compaction.name(), self.filter_policy.name())
    }
}

fn child_command(args: &CrashTestArgs, pair: &Pair, db: &Path, seed: u64) -> CliResult<Command> {
    let exe = std::env::current_exe().map_err(|e| CliError::io("finding the strata binary", e))?;
    let mut command = Command::new(exe);
    command
        .arg("stress")
        .arg("--db")
        .arg(db)
        .arg("--journal")
        .arg(journal_path(db))
        .args(["--threads", &args.threads.to_string()])
        .args(["--keys", &args.keys.to_string()])
        .args(["--value-size", &args.value_size.to_string()])
        .args(["--compaction", pair.compaction.name()])
        .args(["--filter-policy", pair.filter_policy.name()])
        .args(["--seed", &seed.to_string()])
        .args(["--sync-fraction", &args.sync_fraction.to_string()])
        .args(["--reopen-every", "0.5"])
        .args(["--write-buffer-bytes", "32768"])
        .args(args.auto_tune.then_some("--auto-tune"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(command)
}

/// Reads the child's stdout lines into a channel and its stderr into a string, so neither pipe
/// fills up and blocks it.
fn drain(child: &mut Child) -> (mpsc::Receiver<String>, std::thread::JoinHandle<String>) {
    let (lines, receiver) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    (receiver, errors)
}

/// A child that exited by itself with a failure: its start-up check found a violation.
fn failed(pair: &Pair, seed: u64, status: std::process::ExitStatus, stderr: &str) -> CliError {
    CliError::Violation(format!(
        "crash test, {} (child seed {seed}): the child exited with {status}: {}",
        pair.name(),
        stderr.trim()
    ))
}

fn run_child(
    args: &CrashTestArgs,
    pair: &Pair,
    db: &Path,
    seed: u64,
    rng: &mut StdRng,
) -> CliResult<ChildEnd> {
    let named = rng.gen_bool(args.named_fraction.clamp(0.0, 1.0));
    let mut command = child_command(args, pair, db, seed)?;
    command.args(["--duration", "3600"]);
    if named {
        let (op, file, most) = CRASH_POINTS[rng.gen_range(0..CRASH_POINTS.len())];
        command.args([
            "--crash-at",
            &format!("{op}:{file}:{}", rng.gen_range(0..=most)),
        ]);
    }
    let mut child = command
        .spawn()
        .map_err(|e| CliError::io("starting the stress child", e))?;
    let (lines, errors) = drain(&mut child);
    // Wait for the start-up check (it reads every key of the database).
    let start = Instant::now();
    let mut checked = false;
    while !checked && start.elapsed() < Duration::from_secs(120) {
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => checked = line.starts_with("verified"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if !checked {
        let _ = child.kill();
        let status = child
            .wait()
            .map_err(|e| CliError::io("waiting for the child", e))?;
        let stderr = errors.join().unwrap_or_default();
        return match status.signal() {
            Some(_) if start.elapsed() < Duration::from_secs(120) => Ok(ChildEnd::DiedEarly),
            _ => Err(failed(pair, seed, status, &stderr)),
        };
    }
    let mut timed_out = false;
    if named {
        // Let the crash point fire; a point the run never reaches is replaced by a kill.
        let deadline = Instant::now() + Duration::from_millis(args.point_wait_ms);
        loop {
            if child
                .try_wait()
                .map_err(|e| CliError::io("waiting for the child", e))?
                .is_some()
            {
                break;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        std::thread::sleep(Duration::from_millis(
            rng.gen_range(10..=args.max_kill_ms.max(10)),
        ));
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| CliError::io("waiting for the child", e))?;
    let stderr = errors.join().unwrap_or_default();
    if status.signal().is_none() {
        // It exited by itself: only a violation (or an error) does that.
        return Err(failed(pair, seed, status, &stderr));
    }
    Ok(ChildEnd::Crashed { named, timed_out })
}

/// A last child per pair that only checks (`--duration 0`) and exits.
fn final_check(args: &CrashTestArgs, pair: &Pair, db: &Path, seed: u64) -> CliResult<String> {
    let mut command = child_command(args, pair, db, seed)?;
    command.args(["--duration", "0"]);
    let output = command
        .output()
        .map_err(|e| CliError::io("running the final check", e))?;
    if !output.status.success() {
        return Err(failed(
            pair,
            seed,
            output.status,
            &String::from_utf8_lossy(&output.stderr),
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `strata crash-test`.
pub fn run(args: &CrashTestArgs, out: &mut dyn std::io::Write) -> CliResult<()> {
    let compactions = if args.compaction.is_empty() {
        CompactionKind::all().to_vec()
    } else {
        args.compaction.clone()
    };
    let policies = if args.filter_policy.is_empty() {
        FilterAllocatorKind::all().to_vec()
    } else {
        args.filter_policy.clone()
    };
    let pairs: Vec<Pair> = compactions
        .iter()
        .flat_map(|&compaction| {
            policies.iter().map(move |&filter_policy| Pair {
                compaction,
                filter_policy,
            })
        })
        .collect();
    let temporary;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            temporary = super::tempfile_dir()?;
            temporary.path().to_path_buf()
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
    let write = |out: &mut dyn std::io::Write, text: String| {
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(|e| CliError::io("writing to stdout", e))
    };
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut tallies: Vec<Tally> = pairs.iter().map(|_| Tally::default()).collect();
    let start = Instant::now();
    for iteration in 0..args.iterations {
        let index = iteration % pairs.len();
        let pair = &pairs[index];
        let db = dir.join(pair.name());
        let seed = args.seed.wrapping_add(iteration as u64);
        let tally = &mut tallies[index];
        tally.iterations += 1;
        match run_child(args, pair, &db, seed, &mut rng)? {
            ChildEnd::Crashed { named, timed_out } => {
                tally.checks_passed += 1;
                match (named, timed_out) {
                    (false, _) => tally.random_kills += 1,
                    (true, false) => tally.named_crashes += 1,
                    (true, true) => tally.named_timeouts += 1,
                }
            }
            ChildEnd::DiedEarly => tally.died_before_check += 1,
        }
        if (iteration + 1) % pairs.len() == 0 || iteration + 1 == args.iterations {
            write(
                out,
                format!(
                    "{} / {} iterations, {:.0} s",
                    iteration + 1,
                    args.iterations,
                    start.elapsed().as_secs_f64()
                ),
            )?;
        }
    }
    // The last crash of each pair is checked by one more child that only checks.
    for (pair, tally) in pairs.iter().zip(&mut tallies) {
        if tally.iterations == 0 {
            continue;
        }
        let db = dir.join(pair.name());
        final_check(args, pair, &db, args.seed.wrapping_add(1 << 32))?;
        tally.checks_passed += 1;
    }
    write(
        out,
        format!(
            "{:<42} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7}",
            "compaction-filter policy", "iters", "killed", "points", "pt-unhit", "early", "checks"
        ),
    )?;
    let mut total = Tally::default();
    let pairs_used = tallies.iter().filter(|t| t.iterations > 0).count();
    for (pair, tally) in pairs.iter().zip(&tallies) {
        write(
            out,
            format!(
                "{:<42} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7}",
                pair.name(),
                tally.iterations,
                tally.random_kills,
                tally.named_crashes,
                tally.named_timeouts,
                tally.died_before_check,
                tally.checks_passed
            ),
        )?;
        total.iterations += tally.iterations;
        total.random_kills += tally.random_kills;
        total.named_crashes += tally.named_crashes;
        total.named_timeouts += tally.named_timeouts;
        total.died_before_check += tally.died_before_check;
        total.checks_passed += tally.checks_passed;
    }
    write(
        out,
        format!(
            "{} crash iterations over {pairs_used} policy pairs{} in {:.0} s: {} SIGKILLs at \
             random moments, {} self-kills at named crash points ({} points not reached in time, then \
             killed), {} children died before their start-up check; {} checks of a database \
             after a crash passed, 0 violations",
            total.iterations,
            if args.auto_tune {
                " with auto-tune deciding often"
            } else {
                ""
            },
            start.elapsed().as_secs_f64(),
            total.random_kills,
            total.named_crashes,
            total.named_timeouts,
            total.died_before_check,
            // Each pair's first child checks a new, empty database.
            total.checks_passed - pairs_used
        ),
    )
}
