//! Data-driven allocation tests: each file under `tests/testdata/filter_allocation/` holds cases "a
//! tree and a job in, the bits per key of every output (and of every filter in use) out" for one
//! allocator, with expected values derived from DESIGN.md §2–§3 (each file's header says how), and
//! this runner checks every case. The format (the README next to the data files has it too):
//!
//! ```text
//! allocator mnemosyne bpk=2 min1                # a fresh allocator for every case below it
//! case a name
//! L2 run 6: 2 a..m 8000 bits=2, 3 n..z 8000 bits=2 q=900 x=0
//! flush run=9: 1000, 600 q=500 x=100            # outputs numbered 1000, 1001, ...
//! compact L2 run=6 inputs=1,2: 10000, 10000     # or a compaction (inputs by file number)
//! expect 6.95 6.95                              # bits per key per output, to 0.005
//! in_use 1=2 2=0 1000=6.95                      # optional: bits per key in use after the job
//! ```
//!
//! A case may hold several jobs, run in order on the same allocator against the tree as written.

use std::path::Path;
use std::sync::Arc;

use super::{
    Elastic, FilterAllocator, FilterJob, JobInput, JobKind, Mnemosyne, MnemosynePlus, Monkey,
    NewFile, Overuse, Uniform,
};
use crate::solver::Variant;
use crate::stats::merlin::{AccessEstimate, FileAccess, Inherited, Merlin};
use crate::testdata::{check_every_file, lines, number, options, run_line, scratch_file};
use crate::version::tests::new_file;
use crate::version::{AccessHandle, FileMetadata, Version, VersionEdit};

/// Expected values are written to two decimals.
const TOLERANCE: f64 = 0.005 + 1e-9;

/// `(q, x)` from `q=` and `x=` words, if either is there.
fn estimate(words: &[(&str, &str)]) -> Result<Option<(f64, f64)>, String> {
    let mut q = None;
    let mut x = None;
    for (key, value) in words {
        match *key {
            "q" => q = Some(number::<f64>(value, "q")?),
            "x" => x = Some(number::<f64>(value, "x")?),
            _ => {}
        }
    }
    Ok((q.is_some() || x.is_some()).then(|| (q.unwrap_or(0.0), x.unwrap_or(0.0))))
}

/// One file of the tree.
#[derive(Debug, Clone)]
struct TreeFile {
    level: usize,
    run: u64,
    number: u64,
    lo: String,
    hi: String,
    entries: u64,
    bits: f64,
    estimate: Option<(f64, f64)>,
}

/// One job of a case and what it must give.
#[derive(Debug, Default)]
struct Job {
    line: usize,
    /// `None` for a flush (level 0), else the output level.
    level: Option<usize>,
    run: u64,
    inputs: Vec<u64>,
    outputs: Vec<(u64, Option<(f64, f64)>)>,
    expect: Option<Vec<f64>>,
    in_use: Vec<(u64, f64)>,
}

#[derive(Debug, Default)]
struct Case {
    name: String,
    line: usize,
    files: Vec<TreeFile>,
    jobs: Vec<Job>,
}

/// The allocator of an `allocator NAME key=value ...` line.
fn parse_allocator(words: &[&str]) -> Result<Box<dyn FilterAllocator>, String> {
    let (name, rest) = words.split_first().ok_or("allocator needs a name")?;
    let options = options(rest);
    let get = |key: &str| options.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let known: &[&str] = match *name {
        "uniform" => &["bpk"],
        "monkey" => &["bpk", "N", "B", "T", "f0", "tiering"],
        "mnemosyne" => &["bpk", "min1", "overuse", "overuse_bits"],
        "mnemosyne_plus" => &["bpk", "first_come"],
        "elastic" => &["bpk", "module", "module0", "disk", "budget_bytes"],
        other => return Err(format!("unknown allocator {other:?}")),
    };
    if let Some((key, _)) = options.iter().find(|(key, _)| !known.contains(key)) {
        return Err(format!("unknown {name} option {key:?}"));
    }
    let bpk: f64 = number(get("bpk").ok_or("allocator needs bpk=")?, "bpk")?;
    let err = |e: crate::Error| e.to_string();
    let overuse = match (get("overuse"), get("overuse_bits")) {
        (Some(fraction), None) => Some(Overuse::Fraction(number(fraction, "overuse")?)),
        (None, Some(bits)) => Some(Overuse::Bits(number(bits, "overuse_bits")?)),
        (None, None) => None,
        _ => return Err("overuse= or overuse_bits=, not both".into()),
    };
    Ok(match *name {
        "uniform" => Box::new(Uniform::new(bpk).map_err(err)?),
        "monkey" => {
            let needed = |key: &str| get(key).ok_or(format!("monkey needs {key}="));
            let mut monkey = Monkey::new(
                bpk,
                number(needed("N")?, "N")?,
                number(needed("B")?, "B")?,
                number(needed("T")?, "T")?,
            )
            .map_err(err)?;
            if let Some(f0) = get("f0") {
                monkey = monkey
                    .with_zero_result_fraction(number(f0, "f0")?)
                    .map_err(err)?;
            }
            if get("tiering").is_some() {
                monkey = monkey.with_tiering(true).map_err(err)?;
            }
            Box::new(monkey)
        }
        "mnemosyne" => {
            let mut mnemosyne = Mnemosyne::new(bpk).map_err(err)?;
            if let Some(overuse) = overuse {
                mnemosyne = mnemosyne.with_max_overuse(overuse).map_err(err)?;
            }
            if get("min1").is_some() {
                mnemosyne = mnemosyne.with_variant(Variant::MinimumBitsPerKeyOne);
            }
            Box::new(mnemosyne)
        }
        "mnemosyne_plus" => Box::new(
            MnemosynePlus::new(bpk)
                .map_err(err)?
                .with_standby_filters(get("first_come").is_none()),
        ),
        _ => {
            let mut elastic = Elastic::new(bpk).map_err(err)?;
            if let Some(bits) = get("module") {
                elastic = elastic
                    .with_module_bits(number(bits, "module")?)
                    .map_err(err)?;
            }
            if let Some(bits) = get("module0") {
                elastic = elastic
                    .with_level0_module_bits(number(bits, "module0")?)
                    .map_err(err)?;
            }
            if let Some(modules) = get("disk") {
                elastic = elastic
                    .with_disk_modules(number(modules, "disk")?)
                    .map_err(err)?;
            }
            if let Some(bytes) = get("budget_bytes") {
                elastic = elastic
                    .with_budget_bytes(number(bytes, "budget_bytes")?)
                    .map_err(err)?;
            }
            Box::new(elastic)
        }
    })
}

/// `L2 run 6: 2 a..m 8000 bits=2 q=900 x=0, 3 n..z 8000`
fn parse_run(line: &str, files: &mut Vec<TreeFile>) -> Result<(), String> {
    let (level, run, run_files) =
        run_line(line, 1, "<number> <lo>..<hi> <entries> [bits=] [q=] [x=]")?;
    for file in run_files {
        let (entries, rest) = file.rest.split_first().ok_or("a file needs its entries")?;
        let rest = options(rest);
        let mut bits = 0.0;
        for (key, value) in &rest {
            match *key {
                "bits" => bits = number(value, "bits")?,
                "q" | "x" => {}
                other => return Err(format!("unknown file option {other:?}")),
            }
        }
        files.push(TreeFile {
            level,
            run,
            number: file.number,
            lo: file.lo,
            hi: file.hi,
            entries: number(entries, "entries")?,
            bits,
            estimate: estimate(&rest)?,
        });
    }
    Ok(())
}

/// `flush run=9: 1000, 600 q=500 x=100` or `compact L2 run=6 inputs=1,2: 10000`
fn parse_job(line: &str, line_number: usize) -> Result<Job, String> {
    let (head, body) = line.split_once(':').ok_or("a job line needs ':'")?;
    let head: Vec<&str> = head.split_whitespace().collect();
    let mut job = Job {
        line: line_number,
        ..Default::default()
    };
    let rest = match head.as_slice() {
        ["flush", rest @ ..] => rest,
        ["compact", level, rest @ ..] => {
            job.level = Some(number(level.trim_start_matches('L'), "output level")?);
            rest
        }
        _ => {
            return Err(format!(
                "expected `flush ...:` or `compact L<n> ...:`, got {head:?}"
            ))
        }
    };
    for (key, value) in options(rest) {
        match key {
            "run" => job.run = number(value, "run")?,
            "inputs" if !value.is_empty() => {
                job.inputs = value
                    .split(',')
                    .map(|n| number(n, "input"))
                    .collect::<Result<_, _>>()?
            }
            "inputs" => {}
            other => return Err(format!("unknown job option {other:?}")),
        }
    }
    for output in body.split(',') {
        let words: Vec<&str> = output.split_whitespace().collect();
        let [entries, rest @ ..] = words.as_slice() else {
            return Err(format!("expected `<entries> [q=] [x=]`, got {output:?}"));
        };
        let rest = options(rest);
        if let Some((key, _)) = rest.iter().find(|(key, _)| !matches!(*key, "q" | "x")) {
            return Err(format!("unknown output option {key:?}"));
        }
        job.outputs
            .push((number(entries, "entries")?, estimate(&rest)?));
    }
    Ok(job)
}

/// Merlin's statistics with an empty window and these inherited counts: the estimate is `q`,
/// `x`, `z = q - x` (DESIGN.md §4).
fn access(q: f64, x: f64) -> AccessHandle {
    AccessHandle {
        file: Arc::new(FileAccess::from_inherited(Inherited {
            q_prime: q,
            x_prime: x,
            naive_q: q,
            naive_x: x,
        })),
        merlin: Arc::new(Merlin::default()),
    }
}

fn build_tree(files: &[TreeFile]) -> Version {
    let edit = VersionEdit {
        new_files: files
            .iter()
            .map(|file| {
                let mut added = new_file(file.level, file.run, file.number, &file.lo, &file.hi);
                let metadata = added.file_mut();
                metadata.entries = file.entries;
                metadata.file_bytes = file.entries * 100;
                metadata.bits_per_key = file.bits;
                metadata.filter_bytes = (file.entries as f64 * file.bits / 8.0).ceil() as u64;
                added
            })
            .collect(),
        ..Default::default()
    };
    let tree = Version::default()
        .apply(&edit, None)
        .expect("a valid test tree");
    for (_, _, metadata) in tree.files() {
        let written = files.iter().find(|f| f.number == metadata.number());
        if let Some((q, x)) = written.and_then(|f| f.estimate) {
            metadata.state().attach_access(access(q, x));
        }
    }
    tree
}

/// Runs one case; returns its failures.
fn run_case(
    path: &Path,
    case: &Case,
    make: &dyn Fn() -> Result<Box<dyn FilterAllocator>, String>,
) -> Result<Vec<String>, String> {
    let tree = build_tree(&case.files);
    let allocator = make()?;
    let mut failures = Vec::new();
    let where_ = |job: &Job| {
        format!(
            "{}:{}: case {:?} ({})",
            path.display(),
            job.line,
            case.name,
            allocator.name()
        )
    };
    for job in &case.jobs {
        let expect = job
            .expect
            .as_ref()
            .ok_or_else(|| format!("{}: a job without expect", where_(job)))?;
        let inputs: Vec<JobInput> = job
            .inputs
            .iter()
            .map(|&number| {
                tree.files()
                    .find(|(_, _, file)| file.number() == number)
                    .map(|(level, run_id, _)| JobInput {
                        level,
                        run_id,
                        file_number: number,
                    })
                    .ok_or_else(|| format!("{}: input {number} is not in the tree", where_(job)))
            })
            .collect::<Result<_, _>>()?;
        let outputs: Vec<NewFile> = job
            .outputs
            .iter()
            .enumerate()
            .map(|(index, &(entries, estimate))| NewFile {
                file_number: 1000 + index as u64,
                entries,
                access: estimate.map(|(q, x)| AccessEstimate { q, x, z: q - x }),
                filter_layout: crate::FilterLayout::default(),
            })
            .collect();
        let filter_job = FilterJob {
            kind: if job.level.is_some() {
                JobKind::Compaction
            } else {
                JobKind::Flush
            },
            inputs: &inputs,
            output_level: job.level.unwrap_or(0),
            output_run_id: job.run,
            outputs: &outputs,
        };
        let got = allocator.allocate(&tree, &filter_job);
        let matches = got.len() == expect.len()
            && got
                .iter()
                .zip(expect)
                .all(|(got, expected)| (got - expected).abs() <= TOLERANCE);
        if !matches {
            failures.push(format!(
                "{}\n  expected: {expect:?}\n  got:      {got:?}",
                where_(job)
            ));
        }
        for &(number, expected) in &job.in_use {
            let in_use = match tree.files().find(|(_, _, file)| file.number() == number) {
                Some((_, run, file)) => allocator.bits_per_key_in_use(run, file),
                None => {
                    let index = outputs
                        .iter()
                        .position(|output| output.file_number == number)
                        .ok_or_else(|| format!("{}: no file {number} to check", where_(job)))?;
                    let file = FileMetadata::new(number, b"a", b"z")
                        .with_entries(outputs[index].entries)
                        .with_file_bytes(outputs[index].entries * 100)
                        .with_filter(got[index], 16);
                    allocator.bits_per_key_in_use(job.run, &file)
                }
            };
            if (in_use - expected).abs() > TOLERANCE {
                failures.push(format!(
                    "{}\n  file {number} in use: expected {expected}, got {in_use}",
                    where_(job)
                ));
            }
        }
    }
    Ok(failures)
}

/// Runs every case of one file; returns the number of cases and the failures.
fn run_file(path: &Path) -> Result<(usize, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut allocator_words: Option<Vec<String>> = None;
    let mut cases: Vec<(Case, Vec<String>)> = Vec::new();
    for (line_number, line, words) in lines(&text) {
        let at = |e: String| format!("{}:{line_number}: {e}", path.display());
        match words[0] {
            "allocator" => {
                // Checked here, built afresh for every case.
                parse_allocator(&words[1..]).map_err(at)?;
                allocator_words = Some(words[1..].iter().map(|w| w.to_string()).collect());
            }
            "case" => {
                let words = allocator_words
                    .clone()
                    .ok_or_else(|| at("no allocator before the case".into()))?;
                cases.push((
                    Case {
                        name: line["case".len()..].trim().to_string(),
                        line: line_number,
                        ..Default::default()
                    },
                    words,
                ));
            }
            first => {
                let (case, _) = cases
                    .last_mut()
                    .ok_or_else(|| at("a line outside a case".into()))?;
                if first.starts_with('L') && line.contains(':') {
                    parse_run(line, &mut case.files).map_err(at)?;
                } else if first == "flush" || first == "compact" {
                    case.jobs.push(parse_job(line, line_number).map_err(at)?);
                } else if first == "expect" || first == "in_use" {
                    let job = case
                        .jobs
                        .last_mut()
                        .ok_or_else(|| at(format!("`{first}` before any job")))?;
                    if first == "expect" {
                        let values = words[1..]
                            .iter()
                            .map(|v| number::<f64>(v, "expected bits per key"))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(at)?;
                        job.expect = Some(values);
                    } else {
                        for word in &words[1..] {
                            let (file, bits) = word
                                .split_once('=')
                                .ok_or_else(|| at(format!("expected <file>=<bits>, got {word}")))?;
                            job.in_use.push((
                                number(file, "file").map_err(at)?,
                                number(bits, "bits").map_err(at)?,
                            ));
                        }
                    }
                } else {
                    return Err(at(format!("cannot read {line:?}")));
                }
            }
        }
    }
    let mut failures = Vec::new();
    for (case, words) in &cases {
        if case.jobs.is_empty() {
            return Err(format!(
                "{}:{}: case {:?} has no job",
                path.display(),
                case.line,
                case.name
            ));
        }
        let make = || {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            parse_allocator(&words)
        };
        failures.extend(run_case(path, case, &make)?);
    }
    Ok((cases.len(), failures))
}

#[test]
fn every_allocation_case_matches_the_math() {
    check_every_file("filter_allocation", run_file);
}

#[test]
fn the_runner_reports_a_wrong_expectation() {
    let (_dir, path) = scratch_file(
        "allocator uniform bpk=2\ncase right\nflush run=1: 100\nexpect 2.00\n\
         case wrong\nflush run=1: 100, 50\nexpect 2.00 2.02\nin_use 1000=1\n",
    );
    let (cases, failures) = run_file(&path).expect("parses");
    assert_eq!(cases, 2);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].contains("expected: [2.0, 2.02]"),
        "{failures:?}"
    );
    assert!(failures[1].contains("file 1000 in use"), "{failures:?}");
    std::fs::write(
        &path,
        "allocator uniform bpk=2\ncase x\nL1 run one: 1 a..b 10\n",
    )
    .expect("write");
    assert!(run_file(&path).is_err(), "a malformed line is an error");
    std::fs::write(&path, "allocator uniform bpk=2 T=3\ncase x\n").expect("write");
    assert!(run_file(&path).is_err(), "an unknown option is an error");
}
