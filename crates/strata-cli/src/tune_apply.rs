//! `strata tune --apply DB`: one auto-tune decision on a database, from the command line
//! (`Db::auto_tune_now`, DESIGN.md §10 "Self-tuning"). The database is opened for writing with the
//! options file given (`--apply-options`), or with the default options, takes the decision —
//! switching its merge policy and size ratio when the rules allow — records it in its manifest
//! and closes. The command parses, calls the library and prints; the decision is the library's.
//! A database another process holds open is refused with the ways to tune it where it runs
//! (`STRATA.AUTOTUNE` on `strata serve`, `Db::auto_tune_now`).

use std::io::Write;
use std::path::Path;

use strata::options_file::OptionsFile;
use strata::{Db, Options};

use crate::error::{CliError, CliResult};

/// Takes one decision on the database at `path` and prints it (as JSON with `json`).
pub fn apply(
    path: &Path,
    options_file: Option<&Path>,
    json: bool,
    out: &mut dyn Write,
) -> CliResult<()> {
    if !path.join("CURRENT").is_file() {
        return Err(CliError::NotADatabase(path.to_path_buf()));
    }
    let base = Options::default().create_if_missing(false);
    let options = match options_file {
        Some(file) => OptionsFile::read(file)?.apply_to(base)?,
        None => base,
    };
    let db = match Db::open(path, options) {
        Ok(db) => db,
        // A running database is tuned by the process that holds it open.
        Err(strata::Error::Locked(dir)) => {
            return Err(CliError::InvalidArgument(format!(
                "{} is open in another process; a running database takes the decision itself: \
                 `redis-cli -p PORT STRATA.AUTOTUNE` when `strata serve` holds it, \
                 `Db::auto_tune_now` (Python: `Db.auto_tune_now()`) in an embedding program, or \
                 `Options::auto_tune` to decide on its own",
                dir.display()
            )))
        }
        Err(error) => return Err(error.into()),
    };
    let decided = db.auto_tune_now();
    let policy = db.compaction_policy_name();
    let history = db.auto_tune_history().len();
    db.close()?;
    let decision = decided?;
    let write = |e: std::io::Error| CliError::io("writing the decision".to_string(), e);
    if json {
        let text = serde_json::to_string_pretty(&decision).map_err(|e| {
            CliError::InvalidArgument(format!("cannot encode the decision as JSON: {e}"))
        })?;
        writeln!(out, "{text}").map_err(write)?;
    } else {
        writeln!(out, "{decision}").map_err(write)?;
        writeln!(
            out,
            "merge policy in force: {policy}; {history} decision(s) kept in the manifest"
        )
        .map_err(write)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::compaction::Tiering;

    #[test]
    fn a_decision_is_taken_recorded_and_printed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = Options::default()
            .write_buffer_bytes(64 * 1024)
            .compaction_policy(std::sync::Arc::new(Tiering::new(8.0).expect("valid")));
        let db = Db::open(dir.path(), options).expect("open");
        for i in 0..5_000u32 {
            db.put(i.to_be_bytes(), [0u8; 64]).expect("put");
        }
        for i in 0..50_000u32 {
            db.get((i * 3).to_be_bytes()).expect("get");
        }
        db.close().expect("close");
        let mut out = Vec::new();
        apply(dir.path(), None, false, &mut out).expect("applies");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.starts_with("decision 1: 55000 ops"), "{text}");
        assert!(text.contains("1 decision(s) kept"), "{text}");
        let mut out = Vec::new();
        apply(dir.path(), None, true, &mut out).expect("applies");
        let value: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
        assert_eq!(value["number"], 2);
        // Nothing was served since the first decision: nothing to tune for.
        assert_eq!(value["operations"], 0);
        assert!(value["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no operation")));
        let reader = Db::open_read_only(dir.path(), Options::default()).expect("open");
        assert_eq!(reader.auto_tune_history().len(), 2);
    }

    #[test]
    fn a_missing_database_or_options_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut out = Vec::new();
        assert!(apply(&dir.path().join("absent"), None, false, &mut out).is_err());
        let db = Db::open(dir.path(), Options::default()).expect("open");
        db.close().expect("close");
        assert!(apply(
            dir.path(),
            Some(&dir.path().join("absent.toml")),
            false,
            &mut out
        )
        .is_err());
        assert!(out.is_empty());
    }
}
