//! The `ldb`-like commands: `put`, `get`, `delete`, `scan`, `stats` (and `inspect` in
//! `inspect.rs`).
//!
//! Each command opens the database, does one thing and closes it. The read commands (`get`,
//! `scan`, `stats`, and `inspect`) open it with `Db::open_read_only`: they write nothing (no
//! manifest, no level-0 run from the WAL, no `LOG`), so they work on a full disk and beside a
//! process that has the database open, and leave every file as it was. The write commands (`put`,
//! `delete`) open it normally, which flushes the WAL the previous command left into a level-0
//! run; so that a script of many small writes does not grow level 0 without bound, each waits
//! for the compaction policy once level 0 holds the compaction trigger's number of runs (see
//! [`settle_level0`]). Closing syncs the WAL, so a `put` is durable when the command exits. Only
//! `put` creates a missing database; the others report it as an error rather than leave an empty
//! database behind.
//!
//! With `--hex`, keys and values given on the command line are hex (an optional `0x` prefix) and
//! keys and values printed are hex with a `0x` prefix, as in RocksDB's `ldb --hex`. Without it,
//! arguments are taken as UTF-8 bytes and output is printed as lossy UTF-8.

use std::io::Write;
use std::ops::Bound;
use std::path::Path;

use strata::compaction::Manual;
use strata::{Db, Options};

use crate::error::{CliError, CliResult};

/// How keys and values are read from arguments and printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Arguments are UTF-8 bytes; output is lossy UTF-8.
    Utf8,
    /// Arguments and output are hex (`0x` prefix optional on input, always printed).
    Hex,
}

impl Encoding {
    /// The bytes an argument stands for.
    pub fn parse(self, argument: &str, what: &str) -> CliResult<Vec<u8>> {
        match self {
            Encoding::Utf8 => Ok(argument.as_bytes().to_vec()),
            Encoding::Hex => decode_hex(argument).ok_or_else(|| {
                CliError::InvalidArgument(format!("{what} {argument:?} is not hex"))
            }),
        }
    }

    /// Bytes as printed.
    pub fn render(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Encoding::Hex => {
                let mut text = String::with_capacity(2 + 2 * bytes.len());
                text.push_str("0x");
                for byte in bytes {
                    text.push_str(&format!("{byte:02x}"));
                }
                text
            }
        }
    }
}

/// Decodes hex digits (either case, optional `0x`); `None` if malformed.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let high = (pair[0] as char).to_digit(16)?;
            let low = (pair[1] as char).to_digit(16)?;
            Some((high * 16 + low) as u8)
        })
        .collect()
}

/// The file every Strata database has (it names the current manifest).
const CURRENT_FILE: &str = "CURRENT";

/// Fails unless `path` holds a database. `create_if_missing(false)` only refuses a missing
/// directory: the engine would still create a database in an existing directory without one.
pub fn check_is_database(path: &Path) -> CliResult<()> {
    if !path.exists() {
        return Err(CliError::NoDatabase(path.to_path_buf()));
    }
    if !path.join(CURRENT_FILE).is_file() {
        return Err(CliError::NotADatabase(path.to_path_buf()));
    }
    Ok(())
}

/// Opens an existing database to read it, read-only: nothing is written to its directory, and
/// nothing compacts (`Manual`, so that `stats` names no policy the session does not run; the
/// compaction policy is not stored in the database).
fn open_for_reading(path: &Path) -> CliResult<Db> {
    check_is_database(path)?;
    Ok(Db::open_read_only(path, reading_options())?)
}

fn reading_options() -> Options {
    Options::default()
        .create_if_missing(false)
        .compaction_policy(std::sync::Arc::new(Manual))
}

/// Opens the database to write to it, with the default options (leveling). `create` is set
/// for `put` only.
fn open_for_writing(path: &Path, create: bool) -> CliResult<(Db, Options)> {
    let options = Options::default().create_if_missing(create);
    if !create {
        check_is_database(path)?;
    }
    let db = Db::open(path, options.clone())?;
    Ok((db, options))
}

/// Every open of a writable database flushes the WAL the previous session left into a new
/// level-0 run, and a command's process exits before a background compaction gets to it: 50
/// `put` commands used to leave 52 level-0 runs behind. Once level 0 holds the
/// compaction trigger's number of runs, this runs the compactions the policy picks before the
/// command exits, so level 0 stays below the trigger between commands. Below it, nothing waits
/// and the command stays as fast as one open, one write and one close.
fn settle_level0(db: &Db, options: &Options) -> CliResult<()> {
    if db.version().levels()[0].runs().len() >= options.level0_compaction_trigger {
        db.wait_for_compactions()?;
    }
    Ok(())
}

/// Closes `db`, turning a failure (e.g. a WAL sync error) into the command's error.
fn close(db: Db) -> CliResult<()> {
    db.close()?;
    Ok(())
}

fn write_error(error: std::io::Error) -> CliError {
    CliError::io("writing to stdout", error)
}

/// `strata put DB KEY VALUE`: stores the value, creating the database if needed.
pub fn put(path: &Path, key: &[u8], value: &[u8]) -> CliResult<()> {
    let (db, options) = open_for_writing(path, true)?;
    db.put(key, value)?;
    settle_level0(&db, &options)?;
    close(db)
}

/// `strata get DB KEY`: prints the value; [`CliError::KeyNotFound`] (exit 1) if absent.
pub fn get(path: &Path, key: &[u8], encoding: Encoding, out: &mut dyn Write) -> CliResult<()> {
    let db = open_for_reading(path)?;
    let value = db.get(key)?;
    close(db)?;
    match value {
        Some(value) => writeln!(out, "{}", encoding.render(&value)).map_err(write_error),
        None => Err(CliError::KeyNotFound(encoding.render(key))),
    }
}

/// `strata delete DB KEY`: removes the key (a no-op if absent).
pub fn delete(path: &Path, key: &[u8]) -> CliResult<()> {
    let (db, options) = open_for_writing(path, false)?;
    db.delete(key)?;
    settle_level0(&db, &options)?;
    close(db)
}

/// The range and limit of a `scan`.
#[derive(Debug, Clone, Default)]
pub struct ScanRange {
    /// First key printed (inclusive).
    pub from: Option<Vec<u8>>,
    /// Keys from this one on are not printed (exclusive, as in `ldb scan --to`).
    pub to: Option<Vec<u8>>,
    /// Print at most this many entries.
    pub limit: Option<u64>,
}

/// `strata scan DB [--from K] [--to K] [--limit N]`: prints `key<TAB>value` lines in key order.
pub fn scan(
    path: &Path,
    range: &ScanRange,
    encoding: Encoding,
    out: &mut dyn Write,
) -> CliResult<()> {
    let db = open_for_reading(path)?;
    let lower = match &range.from {
        Some(key) => Bound::Included(key.clone()),
        None => Bound::Unbounded,
    };
    let upper = match &range.to {
        Some(key) => Bound::Excluded(key.clone()),
        None => Bound::Unbounded,
    };
    let limit = range
        .limit
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    for entry in db.range((lower, upper)).take(limit) {
        let (key, value) = entry?;
        writeln!(
            out,
            "{}\t{}",
            encoding.render(&key),
            encoding.render(&value)
        )
        .map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    close(db)
}

/// `strata stats DB [--json]`: prints the engine's `Stats` (tree shape, filters, memory,
/// recovery), as text or as JSON with every field.
pub fn stats(path: &Path, json: bool, out: &mut dyn Write) -> CliResult<()> {
    let db = open_for_reading(path)?;
    let stats = db.stats();
    close(db)?;
    if json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| {
            CliError::InvalidArgument(format!("cannot encode the statistics as JSON: {e}"))
        })?;
        writeln!(out, "{text}").map_err(write_error)
    } else {
        writeln!(out, "{stats}").map_err(write_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_options_name_no_compaction_and_create_nothing() {
        let options = reading_options();
        use strata::compaction::CompactionPolicy;
        assert_eq!(options.compaction_policy.name(), Manual.name());
        assert!(!options.create_if_missing);
    }

    #[test]
    fn hex_round_trips_and_rejects_malformed_input() {
        assert_eq!(decode_hex("0x00ff10"), Some(vec![0x00, 0xff, 0x10]));
        assert_eq!(decode_hex("ABcd"), Some(vec![0xab, 0xcd]));
        assert_eq!(decode_hex(""), Some(vec![]));
        assert_eq!(decode_hex("0x1"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("é1"), None);
        assert_eq!(Encoding::Hex.render(&[0x01, 0xab]), "0x01ab");
        assert_eq!(Encoding::Utf8.render(b"a\xffb"), "a\u{fffd}b");
    }
}
