//! `strata`: query, inspect and benchmark Strata databases. The command's logic, as a library:
//! the `strata` binary parses its arguments with [`main_with_args`], and the Python module runs
//! the commands that print JSON through [`run_json`].
//!
//! * `put`, `get`, `delete`, `scan`, `stats` — one operation on a database directory, like
//!   RocksDB's `ldb` (`commands.rs`).
//! * `inspect` — the tree file by file: filters, key ranges, access estimates (`inspect.rs`).
//! * `check`, `repair` — verify every file offline; rebuild the manifest from the sound files
//!   (`check.rs`).
//! * `bench` — a db_bench-like benchmark (`bench/`).
//! * `simulate` — the real policies on a synthetic tree, no I/O (`simulate.rs`).
//! * `study` — offline experiments reproducing the Mnemosyne paper's analysis figures (`study/`).
//! * `tune` — the design Monkey's cost models recommend for a workload (`tune.rs`).
//! * `serve` — the database over the Redis protocol (the `strata-server` crate).
//! * `stress`, `crash-test` — random operations against an expected-state oracle, with faults
//!   injected, and a crash loop that kills the stress process and checks what survives
//!   (`stress/`).
//!
//! Exit codes: 0 success, 1 `get` of an absent key or `check` finding damage, 2 any error (a message on stderr; usage
//! errors come from clap with the same code). Nothing panics on user input or I/O.
#![deny(clippy::unwrap_used)]

mod bench;
mod chart;
mod check;
mod commands;
mod ecotune;
pub mod error;
mod inspect;
mod policies;
mod simulate;
mod stress;
mod study;
mod tune;
mod tune_apply;
mod tune_inputs;
mod whatif;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::{Encoding, ScanRange};
pub use error::{CliError, CliResult};
use inspect::InspectOptions;
use policies::FilterAllocatorKind;

#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about = "Query, inspect and benchmark Strata databases"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--hex` of the data commands.
#[derive(Debug, Clone, Copy, clap::Args)]
struct HexFlag {
    /// Keys and values are given and printed as hex (input `0x` prefix optional).
    #[arg(long)]
    hex: bool,
}

impl HexFlag {
    fn encoding(self) -> Encoding {
        if self.hex {
            Encoding::Hex
        } else {
            Encoding::Utf8
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Store VALUE under KEY (creates the database if it does not exist).
    Put {
        /// Database directory.
        db: PathBuf,
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[arg(allow_hyphen_values = true)]
        value: String,
        #[command(flatten)]
        hex: HexFlag,
    },
    /// Print the value of KEY; exit code 1 if it is absent.
    Get {
        /// Database directory.
        db: PathBuf,
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[command(flatten)]
        hex: HexFlag,
    },
    /// Remove KEY (no error if it is absent).
    Delete {
        /// Database directory.
        db: PathBuf,
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[command(flatten)]
        hex: HexFlag,
    },
    /// Print `key<TAB>value` lines in key order.
    Scan {
        /// Database directory.
        db: PathBuf,
        /// First key (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<String>,
        /// End key (exclusive).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<String>,
        /// Print at most N entries.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        #[command(flatten)]
        hex: HexFlag,
    },
    /// Print the engine's statistics: tree shape, filters, memory, recovery.
    Stats {
        /// Database directory.
        db: PathBuf,
        /// Print JSON instead of text (every field of `strata::Stats`).
        #[arg(long)]
        json: bool,
    },
    /// Print the tree: per level, run and file the entries, bytes, filter bits per key, key range
    /// and Merlin's access estimates, under the average bits per key against the budget.
    ///
    /// The filter allocator is not stored in the database: pass the one it is written with.
    /// Inspecting opens the database read-only: it writes nothing, and works beside a process
    /// that has the database open.
    Inspect {
        /// Database directory.
        db: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Open with access statistics (Merlin, from the Mnemosyne paper). Estimates persist in the database's
        /// ACCESS file (saved after flushes and compactions and at close by a database that keeps
        /// them) and are restored on open only with statistics on; without this flag every
        /// estimate shows `-`. `on` or `off` (the flag alone: `on`); default
        /// `Options::default()`'s, on.
        #[arg(long, num_args = 0..=1, default_missing_value = "on", value_parser = crate::bench::parse_on_off)]
        access_statistics: Option<bool>,
        /// Filter allocator named in the header.
        #[arg(long, value_enum, default_value = "elastic")]
        filter_policy: FilterAllocatorKind,
        /// The allocator's budget in bits per key.
        #[arg(long, default_value_t = 10.0)]
        bits_per_key: f64,
    },
    /// Verify every file of a closed database without writing: CURRENT, the manifest, every
    /// block of every table, the WALs and the ACCESS snapshot. Prints each problem (file, offset,
    /// what is wrong) and a summary.
    ///
    /// Exit codes: 0 sound (warnings such as an orphan table or a torn WAL tail allowed), 1
    /// damage found, 2 the check could not run.
    Check {
        /// Database directory.
        db: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild a damaged database's manifest from its sound files: damaged tables, replayed WALs
    /// and old manifests are moved into DB/lost/; readable WAL records become a new table.
    ///
    /// Exit codes: 0 repaired (or nothing to repair), 2 the repair failed.
    Repair {
        /// Database directory (must not be open).
        db: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Rebuild the manifest even if `check` finds no error.
        #[arg(long)]
        always: bool,
    },
    /// Run a db_bench-like benchmark.
    #[command(args_override_self = true)]
    Bench(Box<bench::BenchArgs>),
    /// Run the real compaction policy and filter allocator on a synthetic tree with no I/O,
    /// printing the tree after every flush and compaction, then write amplification, sorted runs,
    /// levels and filter bits per key.
    Simulate(Box<simulate::SimulateArgs>),
    /// Run an offline study (Mnemosyne Fig. 4 headroom, Fig. 10 Merlin accuracy).
    #[command(subcommand)]
    Study(study::StudyCommand),
    /// Random operations from several threads checked against an expected-state oracle, with
    /// optional fault injection; exits 2 on the first violation (seed, operation, expected and
    /// read values on stderr).
    Stress(Box<stress::StressArgs>),
    /// Kill `strata stress` children at random moments and named crash points, and check after
    /// each crash that nothing acknowledged was lost.
    CrashTest(Box<stress::crash::CrashTestArgs>),
    /// Serve the database over the Redis protocol, so stock Redis clients (redis-cli, redis-py,
    /// redis-benchmark) can use it: strings without expiry (GET, SET, DEL, MGET, MSET, INCR,
    /// APPEND, SCAN, ...); any other command is an error naming it. Prints `listening on
    /// ADDRESS` once ready; SIGTERM, SIGINT or SHUTDOWN stop it gracefully (the database is
    /// closed, exit code 0).
    ///
    /// What a crash can lose, by --sync: `always` syncs every write before replying, so
    /// nothing acknowledged is lost even if the machine crashes; `everysec` (default) syncs the
    /// log once a second, so a process crash loses nothing acknowledged and a machine crash
    /// about the last second; `no` leaves syncing to the operating system, so a process crash
    /// loses nothing acknowledged and a machine crash what the OS had not written back.
    ///
    /// Listening on a non-loopback address needs --requirepass (protected mode).
    Serve(Box<ServeArgs>),
    /// Recommend a design (merge policy, size ratio, buffer/filter memory split) for a workload
    /// from the cost models of every merge policy, with the runners-up and their predicted
    /// costs; `strata tune DB` tunes for an existing database from its own statistics.
    Tune(Box<tune::TuneArgs>),
    /// Sweep one parameter (filter memory, size ratio, data size, entry size, workload mix)
    /// through the cost models and draw the trade-off curves as SVG: uniform vs
    /// Monkey's filters, lookup vs update cost per policy, Garnering's levels, the tuner's best
    /// design per policy.
    Whatif(Box<whatif::WhatifArgs>),
    /// Solve one round of EcoTune's dynamic program (the EcoTune paper) and print the schedule in the
    /// paper's Table 4 notation, its score, the event simulator's score and the solve time.
    Ecotune(Box<ecotune::EcotuneArgs>),
}

/// `strata serve`'s flags.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Database directory (created if missing).
    db: PathBuf,
    /// Address to listen on (port 0 picks a free one; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:6380")]
    listen: String,
    /// Engine options from a TOML options file (`strata tune --options-out`), applied over the
    /// server's defaults: the engine's, with 8 MiB memtables (`write_buffer_bytes`).
    #[arg(long, value_name = "FILE")]
    options: Option<PathBuf>,
    /// When writes reach the device: always, everysec or no (see above for what a crash loses).
    #[arg(long, default_value = "everysec")]
    sync: strata_server::SyncMode,
    /// Password clients must AUTH with (required to listen on a non-loopback address).
    #[arg(long, value_name = "PASS")]
    requirepass: Option<String>,
    /// Most connected clients; one more gets `ERR max number of clients reached`.
    #[arg(long, default_value_t = 10_000)]
    max_clients: usize,
    /// Largest bulk string (argument) in bytes; capped by the engine's value limit (64 MiB).
    #[arg(long, default_value_t = 512 << 20)]
    max_bulk_bytes: usize,
    /// Largest request in bytes.
    #[arg(long, default_value_t = strata::MAX_BATCH_BYTES)]
    max_request_bytes: usize,
    /// Most pipelined commands run per batch before their replies are written.
    #[arg(long, default_value_t = 1024)]
    max_pipeline: usize,
    /// Most reply bytes buffered per connection before they are written.
    #[arg(long, default_value_t = 128 << 20)]
    max_reply_bytes: usize,
    /// Redis Cluster mode: no slot is served until an administrator pushes the topology to every
    /// node with `CLUSTERX SETNODEID` and `CLUSTERX SETNODES`; keys of other nodes' slots get
    /// MOVED. The id and topology are kept in cluster-nodes.conf in the database directory.
    #[arg(long)]
    cluster_enabled: bool,
}

fn serve(args: &ServeArgs) -> CliResult<()> {
    let mut config = strata_server::Config::new(&args.db);
    config.listen = args.listen.clone();
    config.options_file = args.options.clone();
    config.sync = args.sync;
    config.requirepass = args.requirepass.clone();
    config.max_clients = args.max_clients;
    config.max_bulk_bytes = args.max_bulk_bytes;
    config.max_request_bytes = args.max_request_bytes;
    config.max_pipeline = args.max_pipeline;
    config.max_reply_bytes = args.max_reply_bytes;
    config.cluster_enabled = args.cluster_enabled;
    strata_server::serve(config).map_err(|error| match error {
        strata_server::ServeError::Engine(error) => CliError::Engine(error),
        strata_server::ServeError::Io { context, source } => CliError::io(context, source),
        strata_server::ServeError::Config(message) => CliError::InvalidArgument(message),
    })
}

fn run(command: Command, out: &mut dyn Write) -> CliResult<()> {
    match command {
        Command::Put {
            db,
            key,
            value,
            hex,
        } => {
            let encoding = hex.encoding();
            commands::put(
                &db,
                &encoding.parse(&key, "key")?,
                &encoding.parse(&value, "value")?,
            )
        }
        Command::Get { db, key, hex } => {
            let encoding = hex.encoding();
            commands::get(&db, &encoding.parse(&key, "key")?, encoding, out)
        }
        Command::Delete { db, key, hex } => {
            commands::delete(&db, &hex.encoding().parse(&key, "key")?)
        }
        Command::Scan {
            db,
            from,
            to,
            limit,
            hex,
        } => {
            let encoding = hex.encoding();
            let range = ScanRange {
                from: from.map(|k| encoding.parse(&k, "--from")).transpose()?,
                to: to.map(|k| encoding.parse(&k, "--to")).transpose()?,
                limit,
            };
            commands::scan(&db, &range, encoding, out)
        }
        Command::Stats { db, json } => commands::stats(&db, json, out),
        Command::Inspect {
            db,
            json,
            access_statistics,
            filter_policy,
            bits_per_key,
        } => {
            let options = InspectOptions {
                access_statistics: access_statistics
                    .unwrap_or(strata::Options::default().access_statistics),
                filter_policy,
                bits_per_key,
            };
            inspect::inspect(&db, &options, json, out)
        }
        Command::Check { db, json } => check::check(&db, json, out),
        Command::Repair { db, json, always } => check::repair(&db, json, always, out),
        Command::Bench(args) => bench::run(&args),
        Command::Simulate(args) => simulate::run(&args, out),
        Command::Study(command) => study::run(&command, out),
        Command::Stress(args) => stress::run(&args, out),
        Command::CrashTest(args) => stress::crash::run(&args, out),
        Command::Tune(args) => tune::run(&args, out),
        Command::Whatif(args) => whatif::run(&args, out),
        Command::Ecotune(args) => ecotune::run(&args, out),
        Command::Serve(args) => serve(&args),
    }
}

/// True if the error is only that whoever read our output stopped reading (`strata scan | head`).
fn is_broken_pipe(error: &CliError) -> bool {
    matches!(error, CliError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

/// The arguments after presets (`--preset`) and options files (`--options`) are expanded.
/// `strata serve --options FILE` reads the file itself (the engine's options, not bench flags).
fn expand(args: Vec<OsString>) -> CliResult<Vec<OsString>> {
    if args.get(1).is_some_and(|command| command == "serve") {
        return Ok(args);
    }
    bench::options_file::expand(bench::preset::expand(args))
}

/// Runs the `strata` command line `args` (the program name first) as the binary does: what the
/// command prints goes to stdout, errors to stderr, and the exit code says how it went (see the
/// crate documentation).
pub fn main_with_args(args: Vec<OsString>) -> ExitCode {
    let args = match expand(args) {
        Ok(args) => args,
        Err(error) => {
            let _ = writeln!(io::stderr(), "strata: {error}");
            return ExitCode::from(error.exit_code());
        }
    };
    // Usage errors and --help/--version: clap prints and exits (2 for errors, 0 otherwise).
    let cli = Cli::parse_from(args);
    let mut out = io::BufWriter::new(io::stdout().lock());
    let outcome = run(cli.command, &mut out).and_then(|()| {
        out.flush()
            .map_err(|e| CliError::io("writing to stdout", e))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // If stderr is gone too there is nobody left to tell; the exit code still says it.
            let _ = writeln!(io::stderr(), "strata: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// Runs one of the commands that can answer in JSON — `bench`, `tune`, `whatif`, `simulate`,
/// `stats`, `check`, `inspect` — with its JSON output switched on, and returns that JSON instead
/// of printing anything: the Python module's `strata.bench(...)` and friends. `args` are the
/// command's words without the program name (`["tune", "--workload", "lookups=0.9"]`), parsed
/// exactly as on the command line, so every flag, default and check is the command's own. A
/// usage error is [`CliError::InvalidArgument`] with clap's message (the flag and the allowed
/// values); `simulate` answers in JSON lines, one per step and a summary last. `check` returns
/// its report even when it finds damage.
pub fn run_json(args: Vec<OsString>) -> CliResult<String> {
    let mut argv = vec![OsString::from("strata")];
    argv.extend(args);
    let argv = expand(argv)?;
    let cli = Cli::try_parse_from(argv).map_err(|error| {
        CliError::InvalidArgument(error.render().to_string().trim().to_string())
    })?;
    let mut out = Vec::new();
    // Each command with its JSON output switched on, then run as the command line runs it.
    let command = match cli.command {
        Command::Bench(mut args) => {
            args.json = Some(PathBuf::from("-"));
            bench::run_to(&args, Box::new(io::sink()), &mut out)?;
            return json_text(out);
        }
        Command::Tune(mut args) => {
            args.json = true;
            Command::Tune(args)
        }
        Command::Whatif(mut args) => {
            args.json = true;
            Command::Whatif(args)
        }
        Command::Simulate(mut args) => {
            args.json = true;
            Command::Simulate(args)
        }
        Command::Stats { db, .. } => Command::Stats { db, json: true },
        Command::Check { db, .. } => Command::Check { db, json: true },
        Command::Inspect {
            db,
            access_statistics,
            filter_policy,
            bits_per_key,
            ..
        } => Command::Inspect {
            db,
            json: true,
            access_statistics,
            filter_policy,
            bits_per_key,
        },
        _ => {
            return Err(CliError::InvalidArgument(
                "only bench, tune, whatif, simulate, stats, check and inspect answer in JSON"
                    .to_string(),
            ))
        }
    };
    match run(command, &mut out) {
        // `check` finding damage is its answer, not a failure to run.
        Ok(()) | Err(CliError::Damaged(_)) => json_text(out),
        Err(error) => Err(error),
    }
}

fn json_text(out: Vec<u8>) -> CliResult<String> {
    String::from_utf8(out)
        .map_err(|_| CliError::InvalidArgument("the command printed invalid UTF-8".to_string()))
}

/// One subcommand's arguments parsed alone, for its unit tests.
#[cfg(test)]
pub(crate) fn parse_args<T: clap::Args>(argv: &[&str]) -> T {
    #[derive(Parser)]
    struct Alone<T: clap::Args> {
        #[command(flatten)]
        args: T,
    }
    Alone::<T>::parse_from(argv).args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Command {
        let args = args.iter().map(std::ffi::OsString::from).collect();
        Cli::try_parse_from(bench::preset::expand(args))
            .expect("parses")
            .command
    }

    #[test]
    fn a_list_flag_given_after_a_preset_replaces_the_presets_list() {
        let Command::Bench(args) = parse(&[
            "strata",
            "bench",
            "--preset",
            "paper-mnemosyne",
            "--workloads",
            "load,mnemosyne-ii:1",
            "--bits-per-key",
            "3,4",
            "--filter-policy",
            "mnemosyne",
            "--filter-policy",
            "uniform,mnemosyne-plus",
        ]) else {
            panic!("not a bench command");
        };
        let workloads: Vec<String> = args.workloads.iter().map(|w| w.workload.name()).collect();
        assert_eq!(workloads, ["load", "mnemosyne-ii:1"]);
        assert_eq!(args.bits_per_key, [3.0, 4.0]);
        assert_eq!(
            args.filter_policy,
            [
                FilterAllocatorKind::Uniform,
                FilterAllocatorKind::MnemosynePlus
            ]
        );
        let Command::Bench(defaults) = parse(&["strata", "bench"]) else {
            panic!("not a bench command");
        };
        assert_eq!(defaults.bits_per_key, [10.0]);
        assert_eq!(defaults.workloads.len(), 4);
    }
}
