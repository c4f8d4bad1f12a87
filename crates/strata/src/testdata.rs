//! What the data-driven tests share (tests only): the files under `tests/testdata/<suite>/`
//! (`compaction_picker`, `filter_allocation`) are lines of words, `#` starting a comment, runs
//! written `L<level> run <id>: <file>, <file>` with key ranges `lo..hi`, options `key=value`,
//! and each suite is one runner over every file of its folder. The suites' own words are their
//! runners' (`compaction::picker_tests`, `alloc::allocation_tests`).

use std::path::{Path, PathBuf};

/// The folder of a suite's data files.
pub(crate) fn dir(suite: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/testdata")
        .join(suite)
}

/// `text` parsed as a `T`, or an error naming `what`.
pub(crate) fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{what}: cannot parse {text:?}"))
}

/// `key=value` words (a bare word has an empty value).
pub(crate) fn options<'a>(words: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    words
        .iter()
        .map(|word| word.split_once('=').unwrap_or((word, "")))
        .collect()
}

/// The non-empty lines of a data file, comments cut: `(line number, line, its words)`.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = (usize, &str, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(index, raw)| {
        let line = raw.split('#').next().unwrap_or("").trim();
        (!line.is_empty()).then(|| (index + 1, line, line.split_whitespace().collect()))
    })
}

/// One file of a run line: its number, key range and the words after them.
pub(crate) struct RunFile<'a> {
    /// The file number.
    pub(crate) number: u64,
    /// The smallest user key.
    pub(crate) lo: String,
    /// The largest user key.
    pub(crate) hi: String,
    /// The words after the range (bytes or entries, then options).
    pub(crate) rest: Vec<&'a str>,
}

/// `L<level> run <id>: <number> <lo>..<hi> <more words>, ...`: the level, the run id and its
/// files, each with at least `min_rest` words after its range (`shape` describes a file in
/// the error).
pub(crate) fn run_line<'a>(
    line: &'a str,
    min_rest: usize,
    shape: &str,
) -> Result<(usize, u64, Vec<RunFile<'a>>), String> {
    let (head, body) = line.split_once(':').ok_or("a run line needs ':'")?;
    let head: Vec<&str> = head.split_whitespace().collect();
    let [level, "run", run] = head.as_slice() else {
        return Err(format!("expected `L<level> run <id>:`, got {head:?}"));
    };
    let level: usize = number(level.trim_start_matches('L'), "level")?;
    let run: u64 = number(run, "run id")?;
    let files = body
        .split(',')
        .map(|file| {
            let words: Vec<&str> = file.split_whitespace().collect();
            match words.as_slice() {
                [file_number, range, rest @ ..] if rest.len() >= min_rest => {
                    let (lo, hi) = range.split_once("..").ok_or("a key range is lo..hi")?;
                    Ok(RunFile {
                        number: number(file_number, "file number")?,
                        lo: lo.to_string(),
                        hi: hi.to_string(),
                        rest: rest.to_vec(),
                    })
                }
                _ => Err(format!("expected `{shape}`, got {file:?}")),
            }
        })
        .collect::<Result<_, String>>()?;
    Ok((level, run, files))
}

/// A data file holding `text` in a fresh temporary folder, which lives as long as the returned
/// `TempDir` (the runners' own tests write malformed files there).
pub(crate) fn scratch_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wrong");
    std::fs::write(&path, text).expect("write");
    (dir, path)
}

/// Runs `run_file` (which returns a file's number of cases and its failures) on every data file
/// of `suite` (the README aside) and fails with every failure; each file must hold 4 cases at
/// least.
pub(crate) fn check_every_file(
    suite: &str,
    run_file: impl Fn(&Path) -> Result<(usize, Vec<String>), String>,
) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir(suite))
        .unwrap_or_else(|e| panic!("{suite}: {e}"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_none())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{suite}: no data files");
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for path in paths {
        let (cases, mut file_failures) = run_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(cases >= 4, "{}: only {cases} cases", path.display());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        summary.push(format!("{name}: {cases}"));
        failures.append(&mut file_failures);
    }
    assert!(
        failures.is_empty(),
        "{} {suite} case(s) differ ({}):\n{}",
        failures.len(),
        summary.join(", "),
        failures.join("\n")
    );
}
