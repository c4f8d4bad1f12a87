//! Data-driven picker tests (Pebble's `testdata/compaction_picker_*`): each file under
//! `tests/testdata/compaction_picker/` holds cases "a tree in, the expected decision out" for one
//! policy, and this runner checks every case. The format is described at the top of each file:
//!
//! ```text
//! policy garnering T=2 c=0.8          # applies to the cases below it (base=, last=, dynamic)
//! context write_buffer=1000 level0_trigger=2   # optional; these are the defaults
//!
//! case the last level grows L
//! L1 run 5: 1 a..c 2000
//! L2 run 6: 2 a..z 6000, 3 za..zz 10  # file number, key range, bytes
//! state garnering L=2                 # optional (or: state OWNER hex=01ff)
//! running L1.5[1] -> L2               # optional, repeatable: a job in flight (`-> L1.5`: in place)
//! expect state garnering L=3
//! pressure none                       # optional: the write-stall decision (none|slowdown|stop)
//! ```
//!
//! Moose (`policy moose K=3,3,3 T=7,7,6`) and EcoTune (`policy ecotune ccap=3 K=100 ...`, with
//! its round record `state ecotune.round n=1 S=1000 ...` and `state ecotune.merges round=1
//! done=0`) have options of their own; the README next to the data files lists every word.
//!
//! Decisions are written `nothing`, `state OWNER ...` (a state-only job), or
//! `L0.11[2] L1.5[4,5] -> L1.5` (inputs as level.run[files], newest first, then the output level
//! and run: `.new` for a new run), optionally followed by `+ state OWNER ...`. A job the policy
//! wants done by moving its file (a trivial move, `JobAction::Move`) starts with `move`:
//! `move L1.5[2] -> L2.6`. The runner lives in
//! the crate because integration tests cannot build a `Version`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::ecotune::dp::RoundParameters;
use super::ecotune::{
    decode_merges_done, encode_merges_done, EcoTune, EcoTuneSettings, Round, MERGES_STATE_OWNER,
    ROUND_STATE_OWNER,
};
use super::test_support::{tree_with_states, CONTEXT};
use super::{
    decode_level_count, encode_level_count, CompactionContext, CompactionJob, CompactionPolicy,
    Garnering, JobAction, LazyLeveling, Leveling, Moose, OutputRun, PolicyState, RunInput,
    RunningCompactions, Tiering, WritePressure, GARNERING_STATE_OWNER,
};

fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/compaction_picker")
}

/// One parsed case.
#[derive(Debug, Default)]
struct Case {
    name: String,
    line: usize,
    files: Vec<(usize, u64, u64, String, String, u64)>,
    states: Vec<PolicyState>,
    running: Vec<CompactionJob>,
    expect: Option<String>,
    pressure: Option<WritePressure>,
}

fn options(words: &[&str]) -> Result<Vec<(String, String)>, String> {
    words
        .iter()
        .map(|word| match word.split_once('=') {
            Some((key, value)) => Ok((key.to_string(), value.to_string())),
            None => Ok((word.to_string(), String::new())),
        })
        .collect()
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{what}: cannot parse {text:?}"))
}

fn parse_policy(words: &[&str]) -> Result<Box<dyn CompactionPolicy>, String> {
    let (name, rest) = words.split_first().ok_or("policy needs a name")?;
    match *name {
        "moose" => return parse_moose(rest),
        "ecotune" => return parse_ecotune(rest),
        _ => {}
    }
    let mut size_ratio = None;
    let mut c = None;
    let mut base = None;
    let mut last = None;
    let mut dynamic = false;
    for (key, value) in options(rest)? {
        match key.as_str() {
            "T" => size_ratio = Some(number::<f64>(&value, "T")?),
            "c" => c = Some(number::<f64>(&value, "c")?),
            "base" => base = Some(number::<u64>(&value, "base")?),
            "last" => last = Some(number::<usize>(&value, "last")?),
            "dynamic" => dynamic = true,
            other => return Err(format!("unknown policy option {other:?}")),
        }
    }
    let size_ratio = size_ratio.ok_or("policy needs T=")?;
    let err = |e: crate::Error| e.to_string();
    Ok(match *name {
        "leveling" => {
            let mut policy = Leveling::new(size_ratio)
                .map_err(err)?
                .with_dynamic_level_bytes(dynamic);
            if let Some(base) = base {
                policy = policy.with_base_level_bytes(base);
            }
            if let Some(last) = last {
                policy = policy.with_last_level(last).map_err(err)?;
            }
            Box::new(policy)
        }
        "tiering" => {
            let mut policy = Tiering::new(size_ratio).map_err(err)?;
            if let Some(last) = last {
                policy = policy.with_last_level(last).map_err(err)?;
            }
            Box::new(policy)
        }
        "lazy_leveling" => {
            let mut policy = LazyLeveling::new(size_ratio).map_err(err)?;
            if let Some(base) = base {
                policy = policy.with_base_level_bytes(base);
            }
            if let Some(last) = last {
                policy = policy.with_last_level(last).map_err(err)?;
            }
            Box::new(policy)
        }
        "garnering" => {
            let mut policy = Garnering::new(size_ratio).map_err(err)?;
            if let Some(c) = c {
                policy = policy.with_scaling_factor(c).map_err(err)?;
            }
            if let Some(base) = base {
                policy = policy.with_base_level_bytes(base);
            }
            if let Some(last) = last {
                policy = policy.with_last_level(last).map_err(err)?;
            }
            Box::new(policy)
        }
        other => return Err(format!("unknown policy {other:?}")),
    })
}

/// `moose K=3,3,3 T=7,7,6` (per-level run counts and ratios, level 1 first), or `moose paper`.
fn parse_moose(words: &[&str]) -> Result<Box<dyn CompactionPolicy>, String> {
    fn list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, String> {
        text.split(',').map(|v| number(v, what)).collect()
    }
    let mut runs = None;
    let mut ratios = None;
    for (key, value) in options(words)? {
        match key.as_str() {
            "paper" => return Ok(Box::new(Moose::ecotune_paper())),
            "K" => runs = Some(list::<usize>(&value, "K")?),
            "T" => ratios = Some(list::<f64>(&value, "T")?),
            other => return Err(format!("unknown moose option {other:?}")),
        }
    }
    let policy = Moose::new(
        runs.ok_or("moose needs K=")?,
        ratios.ok_or("moose needs T=")?,
    )
    .map_err(|e| e.to_string())?;
    Ok(Box::new(policy))
}

/// `ecotune ccap=3 K=100 r=0.3 beta=0.5 max_units=32 no_index` (every option optional; the
/// defaults are `EcoTuneSettings::default()`, the paper's).
fn parse_ecotune(words: &[&str]) -> Result<Box<dyn CompactionPolicy>, String> {
    let mut settings = EcoTuneSettings::default();
    for (key, value) in options(words)? {
        match key.as_str() {
            "ccap" => settings.ccap = number(&value, "ccap")?,
            "K" => settings.scan_length = number(&value, "K")?,
            "r" => settings.long_scan_ratio = number(&value, "r")?,
            "beta" => settings.beta_q = number(&value, "beta")?,
            "max_units" => settings.max_units = number(&value, "max_units")?,
            "no_index" => settings.top_level_index = false,
            other => return Err(format!("unknown ecotune option {other:?}")),
        }
    }
    Ok(Box::new(EcoTune::new(settings).map_err(|e| e.to_string())?))
}

fn parse_context(words: &[&str]) -> Result<CompactionContext, String> {
    let mut context = CONTEXT;
    for (key, value) in options(words)? {
        match key.as_str() {
            "write_buffer" => context.write_buffer_bytes = number(&value, "write_buffer")?,
            "level0_trigger" => {
                context.level0_compaction_trigger = number(&value, "level0_trigger")?
            }
            "slowdown" => context.level0_slowdown_writes_trigger = number(&value, "slowdown")?,
            "stop" => context.level0_stop_writes_trigger = number(&value, "stop")?,
            "flush_rate" => context.rates.flush_bytes_per_sec = Some(number(&value, "flush_rate")?),
            "compaction_rate" => {
                context.rates.compaction_bytes_per_sec = Some(number(&value, "compaction_rate")?)
            }
            "flush_bytes" => context.rates.flush_bytes = Some(number(&value, "flush_bytes")?),
            other => return Err(format!("unknown context option {other:?}")),
        }
    }
    Ok(context)
}

/// `L1 run 5: 1 a..c 2000, 2 d..f 10`
fn parse_run(
    line: &str,
    files: &mut Vec<(usize, u64, u64, String, String, u64)>,
) -> Result<(), String> {
    let (head, body) = line.split_once(':').ok_or("a run line needs ':'")?;
    let head: Vec<&str> = head.split_whitespace().collect();
    let [level, "run", run] = head.as_slice() else {
        return Err(format!("expected `L<level> run <id>:`, got {head:?}"));
    };
    let level: usize = number(level.trim_start_matches('L'), "level")?;
    let run: u64 = number(run, "run id")?;
    for file in body.split(',') {
        let words: Vec<&str> = file.split_whitespace().collect();
        let [file_number, range, bytes] = words.as_slice() else {
            return Err(format!(
                "expected `<number> <lo>..<hi> <bytes>`, got {file:?}"
            ));
        };
        let (lo, hi) = range.split_once("..").ok_or("a key range is lo..hi")?;
        files.push((
            level,
            run,
            number(file_number, "file number")?,
            lo.to_string(),
            hi.to_string(),
            number(bytes, "bytes")?,
        ));
    }
    Ok(())
}

/// The words of EcoTune's round record, in [`describe_state`]'s order.
const ROUND_WORDS: [&str; 12] = [
    "n", "S", "flushes", "boundary", "arrivals", "R", "ccap", "r", "f", "beta", "tw", "tc",
];

/// `ecotune.round n=1 S=1000 flushes=1 boundary=0 arrivals=3 R=7 ccap=3 r=0.3 f=0.01 beta=0.5
/// tw=1 tc=0.4` (every word required).
fn parse_round(words: &[&str]) -> Result<PolicyState, String> {
    let values = options(words)?;
    let get = |name: &str| -> Result<&str, String> {
        values
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .ok_or_else(|| format!("the round record needs {name}="))
    };
    if let Some((key, _)) = values
        .iter()
        .find(|(key, _)| !ROUND_WORDS.contains(&key.as_str()))
    {
        return Err(format!("unknown round word {key:?}"));
    }
    let round = Round {
        number: number(get("n")?, "n")?,
        unit_bytes: number(get("S")?, "S")?,
        unit_flushes: number(get("flushes")?, "flushes")?,
        boundary_run: number(get("boundary")?, "boundary")?,
        arrivals: number(get("arrivals")?, "arrivals")?,
        parameters: RoundParameters {
            long_scan_ratio: number(get("r")?, "r")?,
            false_positive_rate: number(get("f")?, "f")?,
            beta_q: number(get("beta")?, "beta")?,
            t_w: number(get("tw")?, "tw")?,
            t_c: number(get("tc")?, "tc")?,
            units: number(get("R")?, "R")?,
            ccap: number(get("ccap")?, "ccap")?,
        },
    };
    Ok(round.encode())
}

/// `garnering L=3`, `ecotune.round n=1 ...` (see [`parse_round`]), `ecotune.merges round=1
/// done=2`, or `OWNER hex=01ff`
fn parse_state(words: &[&str]) -> Result<PolicyState, String> {
    if words.first() == Some(&ROUND_STATE_OWNER) && words.len() > 2 {
        return parse_round(&words[1..]);
    }
    if let [MERGES_STATE_OWNER, round, done] = words {
        let round = round
            .strip_prefix("round=")
            .ok_or("expected `ecotune.merges round=<n> done=<n>`")?;
        let done = done
            .strip_prefix("done=")
            .ok_or("expected `ecotune.merges round=<n> done=<n>`")?;
        return Ok(encode_merges_done(
            number(round, "round")?,
            number(done, "done")?,
        ));
    }
    let [owner, value] = words else {
        return Err(format!(
            "expected `state <owner> L=<n>|hex=<bytes>`, got {words:?}"
        ));
    };
    if let Some(level) = value.strip_prefix("L=") {
        let mut state = encode_level_count(number(level, "L")?);
        state.owner = owner.to_string();
        return Ok(state);
    }
    let hex = value
        .strip_prefix("hex=")
        .ok_or("state value is L=<n> or hex=<bytes>")?;
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad hex {hex:?}"))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    Ok(PolicyState {
        owner: owner.to_string(),
        bytes,
    })
}

/// `L1.5[3,4] L2.6[7] -> L2` (a job in flight starting a new run on level 2; `-> L1.5` for a job
/// whose output joins run 5, e.g. EcoTune's in-place main-level merge).
fn parse_running(text: &str) -> Result<CompactionJob, String> {
    let (inputs, output) = text.split_once("->").ok_or("a running job needs `->`")?;
    let inputs = inputs
        .split_whitespace()
        .map(|input| {
            let (run, numbers) = input
                .trim_end_matches(']')
                .split_once('[')
                .ok_or("an input is L<level>.<run>[<files>]")?;
            let (level, run_id) = run
                .trim_start_matches('L')
                .split_once('.')
                .ok_or("an input is L<level>.<run>[<files>]")?;
            Ok(RunInput {
                level: number(level, "level")?,
                run_id: number(run_id, "run id")?,
                file_numbers: numbers
                    .split(',')
                    .map(|n| number(n, "file number"))
                    .collect::<Result<_, String>>()?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let output = output.trim().trim_start_matches('L');
    let (output_level, output_run) = match output.split_once('.') {
        None | Some((_, "new")) => (output.split('.').next().unwrap_or(output), OutputRun::New),
        Some((level, run)) => (level, OutputRun::Existing(number(run, "output run")?)),
    };
    let output_level = number(output_level, "output level")?;
    Ok(CompactionJob {
        inputs,
        output_level,
        output_run,
        reason: "running".into(),
        state: None,
        action: JobAction::Merge,
    })
}

/// A rate or time of the round record, to six decimals (what the data files write).
fn decimal(value: f64) -> String {
    let rounded = (value * 1e6).round() / 1e6;
    format!("{rounded}")
}

fn describe_state(state: &PolicyState) -> String {
    if state.owner == ROUND_STATE_OWNER {
        if let Some(round) = Round::decode(&state.bytes) {
            let p = &round.parameters;
            let values = [
                round.number.to_string(),
                round.unit_bytes.to_string(),
                round.unit_flushes.to_string(),
                round.boundary_run.to_string(),
                round.arrivals.to_string(),
                p.units.to_string(),
                p.ccap.to_string(),
                decimal(p.long_scan_ratio),
                decimal(p.false_positive_rate),
                decimal(p.beta_q),
                decimal(p.t_w),
                decimal(p.t_c),
            ];
            let words: Vec<String> = ROUND_WORDS
                .iter()
                .zip(values)
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            return format!("state {} {}", state.owner, words.join(" "));
        }
    }
    if state.owner == MERGES_STATE_OWNER {
        if let Some((round, done)) = decode_merges_done(&state.bytes) {
            return format!("state {} round={round} done={done}", state.owner);
        }
    }
    match (state.owner.as_str(), decode_level_count(&state.bytes)) {
        (GARNERING_STATE_OWNER, Some(level)) => format!("state {} L={level}", state.owner),
        _ => {
            let hex: String = state.bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("state {} hex={hex}", state.owner)
        }
    }
}

/// The canonical text of a decision (see the module docs).
fn describe(decision: Option<&CompactionJob>) -> String {
    let Some(job) = decision else {
        return "nothing".into();
    };
    if job.is_state_only() {
        return job.state.as_ref().map(describe_state).unwrap_or_default();
    }
    let mut out = String::new();
    if job.action == JobAction::Move {
        out.push_str("move ");
    }
    for input in &job.inputs {
        let numbers: Vec<String> = input.file_numbers.iter().map(u64::to_string).collect();
        let _ = write!(
            out,
            "L{}.{}[{}] ",
            input.level,
            input.run_id,
            numbers.join(",")
        );
    }
    let _ = write!(out, "-> L{}", job.output_level);
    match job.output_run {
        OutputRun::Existing(id) => {
            let _ = write!(out, ".{id}");
        }
        OutputRun::New => out.push_str(".new"),
    }
    if let Some(state) = &job.state {
        let _ = write!(out, " + {}", describe_state(state));
    }
    out
}

/// `pressure none|slowdown|stop`: the write-stall decision the case also checks.
fn parse_pressure(words: &[&str]) -> Result<WritePressure, String> {
    match words {
        ["none"] => Ok(WritePressure::None),
        ["slowdown"] => Ok(WritePressure::Slowdown),
        ["stop"] => Ok(WritePressure::Stop),
        _ => Err(format!(
            "expected `pressure none|slowdown|stop`, got {words:?}"
        )),
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs every case of one file; returns the number of cases and the failures.
fn run_file(path: &Path) -> Result<(usize, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut policy: Option<Box<dyn CompactionPolicy>> = None;
    let mut context = CONTEXT;
    let mut cases = 0;
    let mut failures = Vec::new();
    let mut case: Option<Case> = None;
    let mut finish = |case: Option<Case>,
                      policy: &Option<Box<dyn CompactionPolicy>>,
                      context: &CompactionContext|
     -> Result<(), String> {
        let Some(case) = case else { return Ok(()) };
        let policy = policy
            .as_ref()
            .ok_or_else(|| format!("line {}: no policy before the case", case.line))?;
        let expect = case
            .expect
            .as_ref()
            .ok_or_else(|| format!("line {}: case {:?} has no expect", case.line, case.name))?;
        let files: Vec<(usize, u64, u64, &str, &str, u64)> = case
            .files
            .iter()
            .map(|(l, r, n, lo, hi, b)| (*l, *r, *n, lo.as_str(), hi.as_str(), *b))
            .collect();
        let tree = tree_with_states(&files, &case.states);
        let running = RunningCompactions::new(case.running.clone());
        let decision = policy.pick(&tree, context, &running);
        let got = describe(decision.as_ref());
        cases += 1;
        if let Some(expected) = case.pressure {
            let pressure = policy.write_pressure(&tree, context);
            if pressure != expected {
                failures.push(format!(
                    "{}:{}: case {:?} ({})\n  expected pressure: {expected:?}\n  got pressure:      {pressure:?}",
                    path.display(),
                    case.line,
                    case.name,
                    policy.name(),
                ));
            }
        }
        if normalize(&got) != normalize(expect) {
            failures.push(format!(
                "{}:{}: case {:?} ({})\n  expected: {}\n  got:      {}\n  reason:   {}",
                path.display(),
                case.line,
                case.name,
                policy.name(),
                normalize(expect),
                got,
                decision.map(|j| j.reason).unwrap_or_default()
            ));
        }
        Ok(())
    };
    for (index, raw) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |e: String| format!("{}:{line_number}: {e}", path.display());
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "policy" => {
                finish(case.take(), &policy, &context).map_err(at)?;
                policy = Some(parse_policy(&words[1..]).map_err(at)?);
            }
            "context" => {
                finish(case.take(), &policy, &context).map_err(at)?;
                context = parse_context(&words[1..]).map_err(at)?;
            }
            "case" => {
                finish(case.take(), &policy, &context).map_err(at)?;
                case = Some(Case {
                    name: words[1..].join(" "),
                    line: line_number,
                    ..Default::default()
                });
            }
            first => {
                let current = case
                    .as_mut()
                    .ok_or_else(|| at("a tree line outside a case".into()))?;
                if first.starts_with('L') && line.contains(':') {
                    parse_run(line, &mut current.files).map_err(at)?;
                } else if first == "state" {
                    current.states.push(parse_state(&words[1..]).map_err(at)?);
                } else if first == "running" {
                    let job = line.trim_start_matches("running");
                    current.running.push(parse_running(job).map_err(at)?);
                } else if first == "pressure" {
                    current.pressure = Some(parse_pressure(&words[1..]).map_err(at)?);
                } else if first == "expect" {
                    current.expect = Some(line.trim_start_matches("expect").trim().to_string());
                } else {
                    return Err(at(format!("cannot read {line:?}")));
                }
            }
        }
    }
    finish(case.take(), &policy, &context)?;
    Ok((cases, failures))
}

#[test]
fn every_picker_case_decides_as_written() {
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for policy in [
        "leveling",
        "tiering",
        "lazy_leveling",
        "garnering",
        "ecotune",
        "moose",
    ] {
        let path = testdata_dir().join(policy);
        let (cases, mut file_failures) = run_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(cases >= 4, "{}: only {cases} cases", path.display());
        summary.push(format!("{policy}: {cases}"));
        failures.append(&mut file_failures);
    }
    assert!(
        failures.is_empty(),
        "{} picker case(s) differ ({}):\n{}",
        failures.len(),
        summary.join(", "),
        failures.join("\n")
    );
}

#[test]
fn the_runner_reports_a_wrong_expectation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wrong");
    std::fs::write(
        &path,
        "policy tiering T=2\ncase two runs\nL1 run 1: 1 a..b 10\nL1 run 2: 2 a..b 10\n\
         expect nothing\ncase garbage\nL1 run 1: 1 a..b 10\nexpect nothing\n",
    )
    .expect("write");
    let (cases, failures) = run_file(&path).expect("parses");
    assert_eq!(cases, 2);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("expected: nothing"));
    assert!(failures[0].contains("got:      L1.2[2] L1.1[1] -> L2.new"));
    std::fs::write(&path, "policy tiering T=2\ncase x\nL1 run one: 1 a..b 10\n").expect("write");
    assert!(run_file(&path).is_err(), "a malformed line is an error");
}
