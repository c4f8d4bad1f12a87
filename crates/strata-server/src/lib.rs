//! Strata over the Redis protocol: the library behind `strata serve`. Stock Redis clients
//! (redis-cli, redis-py, redis-benchmark, ...) read and write a Strata database through it.
//!
//! ```no_run
//! let mut config = strata_server::Config::new("/var/lib/strata/db");
//! config.sync = strata_server::SyncMode::EverySec;
//! strata_server::serve(config)?; // until SIGTERM, SIGINT or SHUTDOWN
//! # Ok::<(), strata_server::ServeError>(())
//! ```
//!
//! # Protocol
//! Requests are RESP arrays of bulk strings, parsed by the server's own scanner ([`frame`];
//! inline commands are not supported); replies are RESP2, or RESP3 after `HELLO 3` (arrays and
//! maps encoded by the `redis-protocol` crate). Pipelining: a connection reads whatever requests
//! have arrived, runs them in order and writes their replies in order, in one write; consecutive
//! plain `SET key value` requests are committed as one write batch (atomically together), each
//! answered in turn. A malformed request gets `ERR Protocol error: ...` and its connection is closed;
//! other connections are not affected.
//!
//! # Commands
//! Strings only, without expiry: GET, SET (NX, XX, GET; EX/PX/EXAT/PXAT/KEEPTTL are refused),
//! DEL, EXISTS, MGET, MSET (atomic), GETDEL, INCR, DECR, INCRBY, DECRBY, APPEND, STRLEN, SCAN
//! (see `scan.rs` for the cursor: it encodes the key the scan resumes at), DBSIZE (an estimate:
//! entries in the table files and memtables, including overwritten versions and deletion
//! markers not yet compacted away), FLUSHDB (deletes every key in batches of 1,000: not instant
//! and not atomic), PING, ECHO, INFO (with a `strata` section of engine statistics), CONFIG GET,
//! CONFIG RESETSTAT, COMMAND (COUNT, INFO, DOCS, LIST), CLIENT (ID, GETNAME, SETNAME, INFO,
//! LIST, SETINFO), SELECT 0, HELLO, AUTH, QUIT and SHUTDOWN; in cluster mode
//! ([`Config::cluster_enabled`], see [`cluster`]) also CLUSTER and CLUSTERX, and every key command
//! checks its keys' slots (MOVED, CROSSSLOT, CLUSTERDOWN). Any other command is an
//! `ERR unknown command '...'` error saying Strata does not support it: nothing is silently
//! ignored. Read-modify-write commands (INCR, APPEND, SET NX/XX/GET, GETDEL, DEL) and every
//! write hold a lock on their key's stripe of a lock table, so commands on one key apply one
//! at a time.
//!
//! # Durability (`--sync`)
//! * `always`: every write is synced to the device before it is acknowledged. A crash of the
//!   process or the machine loses no acknowledged write.
//! * `everysec` (the default): writes are acknowledged once in the write-ahead log (handed to
//!   the operating system), and a background task syncs the log once a second
//!   ([`strata::Db::sync_wal`]). A crash of the process loses no acknowledged write; a crash of
//!   the machine (power loss, kernel panic) loses about the last second of writes.
//! * `no`: the log is never synced by the server; the operating system writes it back when it
//!   chooses (typically within 30 seconds). A crash of the process loses nothing acknowledged; a
//!   crash of the machine loses what the operating system had not written yet.
//!
//! In every mode the database is recovered to a prefix of the acknowledged writes.
//!
//! # Safety and limits
//! The server listens on 127.0.0.1:6380 by default, and refuses to listen on a non-loopback
//! address without a password (protected mode). With a password, every command but AUTH,
//! HELLO and QUIT gets `NOAUTH` until the client authenticates, and an unauthenticated request
//! may hold at most 10 arguments of 16 KiB. Limits: connected clients (over it a client gets
//! `ERR max number of clients reached` and is closed), the largest bulk string (Redis's 512 MiB,
//! capped by [`strata::MAX_VALUE_BYTES`]; keys are further limited to [`strata::MAX_KEY_BYTES`]
//! by the engine), the largest request, commands run per batch before their replies are
//! written, and reply bytes buffered per connection. A request over a limit is refused from its
//! headers, before it is buffered.
//!
//! Engine calls block. Under `--sync always`, where a write waits for an fsync, each batch of
//! requests runs on tokio's blocking pool (many connections' writes then share one fsync).
//! Under `everysec` and `no` the key and connection commands run on the connection's task,
//! their engine calls taking microseconds; a batch reaching a command that may take long (SCAN,
//! FLUSHDB, INFO, ...) runs the rest on the blocking pool. A write that stalls for a flush (the
//! memtables full, level 0 too deep) holds its worker thread meanwhile. SIGTERM, SIGINT
//! and SHUTDOWN stop the server gracefully: it stops accepting, lets every connection finish
//! the batch it is running and write its replies, closes the database ([`strata::Db::close`],
//! which syncs the log) and returns.
#![deny(clippy::unwrap_used)]
#![warn(missing_docs)]

pub mod cluster;
mod commands;
pub mod frame;
mod glob;
mod info;
mod net;
mod node;
mod reply;
mod scan;
mod session;

use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use commands::execute;
pub use frame::FrameLimits;
pub use node::{Node, Settings};
pub use reply::Reply;
pub use session::{process, Action, Session};

/// When writes reach the device (see the crate documentation for what a crash loses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Every write synced before its reply.
    Always,
    /// The write-ahead log synced once a second.
    EverySec,
    /// Left to the operating system.
    No,
}

impl SyncMode {
    /// The mode's name, as `--sync` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Always => "always",
            SyncMode::EverySec => "everysec",
            SyncMode::No => "no",
        }
    }
}

impl std::str::FromStr for SyncMode {
    type Err = String;

    fn from_str(text: &str) -> Result<SyncMode, String> {
        match text {
            "always" => Ok(SyncMode::Always),
            "everysec" => Ok(SyncMode::EverySec),
            "no" => Ok(SyncMode::No),
            other => Err(format!(
                "unknown sync mode {other:?}: expected always, everysec or no"
            )),
        }
    }
}

/// What the server serves and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// The database directory (created if missing).
    pub db: PathBuf,
    /// A TOML options file for the engine (`strata::options_file`), applied over
    /// [`engine_options`].
    pub options_file: Option<PathBuf>,
    /// The address to listen on, `host:port` (port 0 picks a free port).
    pub listen: String,
    /// When writes reach the device.
    pub sync: SyncMode,
    /// The password clients must AUTH with.
    pub requirepass: Option<String>,
    /// Most connected clients.
    pub max_clients: usize,
    /// Largest bulk string, capped by [`strata::MAX_VALUE_BYTES`].
    pub max_bulk_bytes: usize,
    /// Largest request.
    pub max_request_bytes: usize,
    /// Most commands run per batch before their replies are written.
    pub max_pipeline: usize,
    /// Most reply bytes buffered per connection before they are written (one reply may go over;
    /// an MGET over it is refused).
    pub max_reply_bytes: usize,
    /// How long a graceful shutdown waits for connections to finish their batch.
    pub shutdown_timeout: Duration,
    /// Redis Cluster mode: key commands are checked against a topology that `CLUSTERX SETNODES`
    /// pushes (see [`cluster`]).
    pub cluster_enabled: bool,
}

impl Config {
    /// The defaults, serving the database in `db`.
    pub fn new(db: impl Into<PathBuf>) -> Config {
        Config {
            db: db.into(),
            options_file: None,
            listen: "127.0.0.1:6380".to_string(),
            sync: SyncMode::EverySec,
            requirepass: None,
            max_clients: 10_000,
            max_bulk_bytes: 512 << 20,
            max_request_bytes: strata::MAX_BATCH_BYTES,
            max_pipeline: 1024,
            max_reply_bytes: 128 << 20,
            shutdown_timeout: Duration::from_secs(30),
            cluster_enabled: false,
        }
    }

    /// The request limits of authenticated clients.
    pub fn frame_limits(&self) -> FrameLimits {
        FrameLimits {
            max_args: 1 << 20,
            max_bulk_bytes: self.max_bulk_bytes.min(strata::MAX_VALUE_BYTES),
            max_request_bytes: self.max_request_bytes,
        }
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug)]
pub enum ServeError {
    /// The database could not be opened or closed.
    Engine(strata::Error),
    /// A socket or signal operation failed.
    Io {
        /// What the server was doing.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The configuration is refused (protected mode, a bad address or limit).
    Config(String),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Engine(error) => write!(f, "{error}"),
            ServeError::Io { context, source } => write!(f, "{context}: {source}"),
            ServeError::Config(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Engine(error) => Some(error),
            ServeError::Io { source, .. } => Some(source),
            ServeError::Config(_) => None,
        }
    }
}

impl From<strata::Error> for ServeError {
    fn from(error: strata::Error) -> Self {
        ServeError::Engine(error)
    }
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let context = context.into();
    move |source| ServeError::Io { context, source }
}

/// Checks the configuration: limits that make sense, and protected mode (a non-loopback
/// address needs a password). Returns the addresses `listen` resolves to.
pub fn check_config(config: &Config) -> Result<Vec<SocketAddr>, ServeError> {
    use std::net::ToSocketAddrs;
    if config.max_clients == 0 || config.max_pipeline == 0 || config.max_reply_bytes == 0 {
        return Err(ServeError::Config(
            "--max-clients, --max-pipeline and --max-reply-bytes must be at least 1".to_string(),
        ));
    }
    if config.max_bulk_bytes == 0 || config.max_request_bytes < 64 {
        return Err(ServeError::Config(
            "--max-bulk-bytes must be at least 1 and --max-request-bytes at least 64".to_string(),
        ));
    }
    let addrs: Vec<SocketAddr> = config
        .listen
        .to_socket_addrs()
        .map_err(|e| ServeError::Config(format!("--listen {}: {e}", config.listen)))?
        .collect();
    if addrs.is_empty() {
        return Err(ServeError::Config(format!(
            "--listen {}: the address resolves to nothing",
            config.listen
        )));
    }
    if config.requirepass.is_none() {
        if let Some(open) = addrs.iter().find(|a| !a.ip().is_loopback()) {
            return Err(ServeError::Config(format!(
                "refusing to listen on {open} without a password (protected mode): any host that \
                 can reach it could read and write the database. Pass --requirepass PASS, or \
                 listen on a loopback address such as 127.0.0.1"
            )));
        }
    }
    Ok(addrs)
}

/// The memtable size the server uses unless an options file sets `write_buffer_bytes`: 8 MiB
/// rather than the engine's 64 MiB. Memtable inserts and lookups are skip-list searches whose
/// cost is mostly cache misses, which grow with the memtable; under redis-benchmark (SET and GET
/// of 100-byte values over 1M random keys, 16 requests a pipeline) the server spent 44% of its
/// CPU in `SkipList::insert` with 64 MiB memtables, and its CPU per SET (flushes and
/// compactions included) fell from about 4.2 to 2.6 microseconds with 8 MiB ones (GET: 4.8 to
/// 4.3 ... 5.0 to 4.8). The price: more, smaller level-0 files, and a memtable switch (a new
/// log file and a directory sync, with writers waiting) every 8 MiB of writes.
pub const SERVER_WRITE_BUFFER_BYTES: usize = 8 << 20;

/// The block cache the server uses unless an options file sets `block_cache_bytes`: 256 MiB
/// rather than the engine's 32 MiB. An embedded engine shares its process's memory with the
/// application; a server process is the application, and a Redis-protocol server's users expect
/// it to keep its working set in memory (Kvrocks's default block cache is 4 GiB). Under
/// redis-benchmark's GETs over 1M random keys with 100-byte values (about 130 MB of tables), a
/// fifth of the server's CPU went to reading blocks the 32 MiB cache had evicted back from the
/// operating system's page cache (the read call, the copy, the checksum, the allocation).
pub const SERVER_BLOCK_CACHE_BYTES: u64 = 256 << 20;

/// The engine options the server starts from (an options file's keys are applied over them):
/// the engine's defaults with [`SERVER_WRITE_BUFFER_BYTES`] and [`SERVER_BLOCK_CACHE_BYTES`].
pub fn engine_options() -> strata::Options {
    strata::Options {
        write_buffer_bytes: SERVER_WRITE_BUFFER_BYTES,
        block_cache_bytes: SERVER_BLOCK_CACHE_BYTES,
        ..strata::Options::default()
    }
}

/// Opens the database, listens, prints `listening on ADDRESS` (the bound address, so port 0
/// can be used) on stdout, and serves until SIGTERM, SIGINT or a SHUTDOWN command; then stops
/// gracefully and closes the database.
pub fn serve(config: Config) -> Result<(), ServeError> {
    let addrs = check_config(&config)?;
    let options = match &config.options_file {
        Some(path) => strata::OptionsFile::read(path)?.apply_to(engine_options())?,
        None => engine_options(),
    };
    let db = strata::Db::open(&config.db, options)?;
    let cluster = if config.cluster_enabled {
        match cluster::Cluster::load(&config.db) {
            Ok(cluster) => Some(cluster),
            Err(message) => {
                let _ = db.close();
                return Err(ServeError::Config(format!("cluster state: {message}")));
            }
        }
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-serve")
        .build()
        .map_err(io_error("starting the runtime"))?;
    let outcome = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&addrs[..])
            .await
            .map_err(io_error(format!("listening on {}", config.listen)))?;
        let local = listener
            .local_addr()
            .map_err(io_error("reading the bound address"))?;
        let mut settings = Settings::from_config(&config);
        settings.listen = local.to_string();
        let mut node = Node::new(db.clone(), settings);
        if let Some(cluster) = cluster {
            node = node.with_cluster(cluster);
        }
        let node = Arc::new(node);
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {local}")
            .and_then(|()| stdout.flush())
            .map_err(io_error("writing to stdout"))?;
        drop(stdout);
        net::run(listener, node, config.shutdown_timeout).await
    });
    // Whatever happened, close the database (a second close after `net::run`'s is a no-op
    // error we ignore).
    let closed = db.close();
    outcome?;
    match closed {
        Ok(()) | Err(strata::Error::Closed) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_options_file_applies_over_the_server_defaults() {
        let file = strata::OptionsFile::parse("block_bytes = 8192").expect("parse");
        let options = file.apply_to(engine_options()).expect("apply");
        assert_eq!(options.write_buffer_bytes, SERVER_WRITE_BUFFER_BYTES);
        assert_eq!(options.block_cache_bytes, SERVER_BLOCK_CACHE_BYTES);
        assert_eq!(options.block_bytes, 8192);
        let file = strata::OptionsFile::parse("write_buffer_bytes = 4194304").expect("parse");
        let options = file.apply_to(engine_options()).expect("apply");
        assert_eq!(options.write_buffer_bytes, 4 << 20);
        let file = strata::OptionsFile::parse("block_cache_bytes = 1048576").expect("parse");
        let options = file.apply_to(engine_options()).expect("apply");
        assert_eq!(options.block_cache_bytes, 1 << 20);
        assert_eq!(options.write_buffer_bytes, SERVER_WRITE_BUFFER_BYTES);
    }
}
