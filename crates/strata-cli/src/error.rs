//! The command's error values and how each maps to an exit code.
//!
//! Every failure reaches `main` as a [`CliError`]; `main` prints it on stderr and exits with
//! [`CliError::exit_code`]. Nothing on the command's path panics on user input or I/O.

use std::fmt;
use std::path::PathBuf;

/// What went wrong while running a command.
#[derive(Debug)]
pub enum CliError {
    /// The engine returned an error (open, read, write, close).
    Engine(strata::Error),
    /// A peer engine (RocksDB, fjall) returned an error.
    #[allow(
        dead_code,
        reason = "constructed only when a peer engine is compiled in"
    )]
    Peer {
        /// The peer's name.
        engine: &'static str,
        /// Its error message.
        message: String,
    },
    /// A file the command itself reads or writes (not the database's) failed.
    Io {
        /// What the command was doing, e.g. "writing out.json".
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An argument is out of range or malformed (beyond what clap checks).
    InvalidArgument(String),
    /// `get` found no value for the key: exit code 1, like `grep` finding nothing.
    KeyNotFound(String),
    /// A benchmark sanity check failed (a key that must exist was missing, or the reverse).
    CheckFailed(String),
    /// `strata stress` or `strata crash-test` found the database breaking a guarantee (the
    /// message names the seed, the operation, and the expected and actual values).
    Violation(String),
    /// The database path does not exist (commands other than `put` never create one).
    NoDatabase(PathBuf),
    /// The path exists but holds no database (no `CURRENT` file, or not a directory).
    NotADatabase(PathBuf),
    /// `check` found damage: exit code 1, a finding rather than a failure to run.
    Damaged(String),
}

impl CliError {
    /// 1 for a missing key or damage found by `check` (normal outcomes scripts test for), 2 for
    /// every real error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::KeyNotFound(_) | CliError::Damaged(_) => 1,
            _ => 2,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        CliError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Engine(error) => write!(f, "{error}"),
            CliError::Peer { engine, message } => write!(f, "{engine}: {message}"),
            CliError::Io { context, source } => write!(f, "I/O error while {context}: {source}"),
            CliError::InvalidArgument(message) => write!(f, "invalid argument: {message}"),
            CliError::KeyNotFound(key) => write!(f, "key not found: {key}"),
            CliError::CheckFailed(message) => write!(f, "benchmark check failed: {message}"),
            CliError::Violation(message) => write!(f, "violation: {message}"),
            CliError::NoDatabase(path) => write!(
                f,
                "no database at {} (only `strata put` creates one)",
                path.display()
            ),
            CliError::Damaged(message) => write!(f, "{message}"),
            CliError::NotADatabase(path) => write!(
                f,
                "{} is not a Strata database (it has no CURRENT file)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Engine(error) => Some(error),
            CliError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<strata::Error> for CliError {
    fn from(error: strata::Error) -> Self {
        CliError::Engine(error)
    }
}

/// The result type of every command.
pub type CliResult<T> = Result<T, CliError>;
