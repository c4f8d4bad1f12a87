//! Data-driven picker tests (Pebble's `testdata/compaction_picker_*`): each file under
//! `tests/testdata/compaction_picker/` holds cases "a tree in, the expected decision out" for one
//! policy, and this runner checks every case. The format is described at the top of each file:
//!
//! ```text
//! policy garnering size_ratio=2 garnering_c=0.8   # applies to the cases below it
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
//! The `policy` line is the registry's: a registered name (`CompactionKind`) and settings
//! written as `CompactionSettings`' fields with TOML values (`last_level=2`,
//! `ecotune.ccap=2`, `moose.ratios=[4,3]`) over `CompactionSettings::with_size_ratio(10.0)`;
//! the registry builds the policy, so a newly registered policy needs no code here, only its
//! data file. Every file of `tests/testdata/compaction_picker/` but the README is run.
//! EcoTune's round record is written `state ecotune.round n=1 S=1000 ...` and its merges
//! `state ecotune.merges round=1 done=0`; the README next to the data files lists every word.
//!
//! Decisions are written `nothing`, `state OWNER ...` (a state-only job), or
//! `L0.11[2] L1.5[4,5] -> L1.5` (inputs as level.run[files], newest first, then the output level
//! and run: `.new` for a new run), optionally followed by `+ state OWNER ...`. A job the policy
//! wants done by moving its file (a trivial move, `JobAction::Move`) starts with `move`:
//! `move L1.5[2] -> L2.6`. The runner lives in
//! the crate because integration tests cannot build a `Version`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::ecotune::dp::RoundParameters;
use super::ecotune::{
    decode_merges_done, encode_merges_done, Round, MERGES_STATE_OWNER, ROUND_STATE_OWNER,
};
use super::test_support::{tree_with_states, CONTEXT};
use super::{
    decode_level_count, encode_level_count, CompactionContext, CompactionJob, CompactionKind,
    CompactionPolicy, CompactionSettings, JobAction, OutputRun, PolicyState, RunInput,
    RunningCompactions, WritePressure, GARNERING_STATE_OWNER,
};
use crate::testdata::{check_every_file, lines, number, options, run_line, scratch_file};

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

/// `policy <registered name> <field>=<TOML value> ...`: the registry builds the policy from the
/// written `CompactionSettings` fields over `CompactionSettings::with_size_ratio(10.0)`; a
/// field the settings do not have is an error.
fn parse_policy(words: &[&str]) -> Result<Arc<dyn CompactionPolicy>, String> {
    let (name, rest) = words.split_first().ok_or("policy needs a name")?;
    let kind: CompactionKind = name.parse().map_err(|e: crate::Error| e.to_string())?;
    let written: String = rest.iter().map(|word| format!("{word}\n")).collect();
    let written: toml::Table =
        toml::from_str(&written).map_err(|e| format!("policy settings: {e}"))?;
    let mut table = toml::Table::try_from(CompactionSettings::with_size_ratio(10.0))
        .map_err(|e| format!("policy settings: {e}"))?;
    overlay(&mut table, written.clone());
    let settings: CompactionSettings = table
        .try_into()
        .map_err(|e| format!("policy settings: {e}"))?;
    let read = toml::Table::try_from(&settings).map_err(|e| format!("policy settings: {e}"))?;
    if let Some(unknown) = unread(&written, &read) {
        return Err(format!("`{unknown}` is not a compaction setting"));
    }
    kind.build(&settings).map_err(|e| e.to_string())
}

/// `from`'s values written over `into`'s, table into table.
fn overlay(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => overlay(inner, value),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// The first key of `written` that `read` (the settings as they serialize) lacks: a setting the
/// settings do not have, which deserializing skipped.
fn unread(written: &toml::Table, read: &toml::Table) -> Option<String> {
    written
        .iter()
        .find_map(|(key, value)| match (value, read.get(key)) {
            (_, None) => Some(key.clone()),
            (toml::Value::Table(written), Some(toml::Value::Table(read))) => {
                unread(written, read).map(|inner| format!("{key}.{inner}"))
            }
            _ => None,
        })
}

fn parse_context(words: &[&str]) -> Result<CompactionContext, String> {
    let mut context = CONTEXT;
    for (key, value) in options(words) {
        match key {
            "write_buffer" => context.write_buffer_bytes = number(value, "write_buffer")?,
            "level0_trigger" => {
                context.level0_compaction_trigger = number(value, "level0_trigger")?
            }
            "slowdown" => context.level0_slowdown_writes_trigger = number(value, "slowdown")?,
            "stop" => context.level0_stop_writes_trigger = number(value, "stop")?,
            "flush_rate" => context.rates.flush_bytes_per_sec = Some(number(value, "flush_rate")?),
            "compaction_rate" => {
                context.rates.compaction_bytes_per_sec = Some(number(value, "compaction_rate")?)
            }
            "flush_bytes" => context.rates.flush_bytes = Some(number(value, "flush_bytes")?),
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
    let (level, run, run_files) = run_line(line, 1, "<number> <lo>..<hi> <bytes>")?;
    for file in run_files {
        let [bytes] = file.rest.as_slice() else {
            return Err(format!(
                "expected `<bytes>` after a key range, got {:?}",
                file.rest
            ));
        };
        files.push((
            level,
            run,
            file.number,
            file.lo,
            file.hi,
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
    let values = options(words);
    let get = |name: &str| -> Result<&str, String> {
        values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("the round record needs {name}="))
    };
    if let Some((key, _)) = values.iter().find(|(key, _)| !ROUND_WORDS.contains(key)) {
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
    let mut policy: Option<Arc<dyn CompactionPolicy>> = None;
    let mut context = CONTEXT;
    let mut cases = 0;
    let mut failures = Vec::new();
    let mut case: Option<Case> = None;
    let mut finish = |case: Option<Case>,
                      policy: &Option<Arc<dyn CompactionPolicy>>,
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
    for (line_number, line, words) in lines(&text) {
        let at = |e: String| format!("{}:{line_number}: {e}", path.display());
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
    check_every_file("compaction_picker", run_file);
}

#[test]
fn the_runner_reports_a_wrong_expectation() {
    let (_dir, path) = scratch_file(
        "policy tiering size_ratio=2\ncase two runs\nL1 run 1: 1 a..b 10\nL1 run 2: 2 a..b 10\n\
         expect nothing\ncase garbage\nL1 run 1: 1 a..b 10\nexpect nothing\n",
    );
    let (cases, failures) = run_file(&path).expect("parses");
    assert_eq!(cases, 2);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("expected: nothing"));
    assert!(failures[0].contains("got:      L1.2[2] L1.1[1] -> L2.new"));
    std::fs::write(
        &path,
        "policy tiering size_ratio=2\ncase x\nL1 run one: 1 a..b 10\n",
    )
    .expect("write");
    assert!(run_file(&path).is_err(), "a malformed line is an error");
    for policy in [
        "levelling size_ratio=2",
        "tiering T=2",
        "tiering size_ratio=2.5",
    ] {
        std::fs::write(&path, format!("policy {policy}\n")).expect("write");
        assert!(run_file(&path).is_err(), "{policy}: refused");
    }
}

/// Every registered policy names its own registry entry, and building that entry again gives
/// the same policy (auto-tune reads the design in force this way).
#[test]
fn every_registered_policy_builds_again_from_what_it_says_it_is() {
    use crate::compaction::{CompactionKind, CompactionSettings, EcoTuneSettings, MooseSettings};
    let mut settings = CompactionSettings::with_size_ratio(4.0);
    settings.garnering_c = 0.6;
    settings.base_level_bytes = Some(1 << 20);
    settings.last_level = Some(5);
    for &kind in CompactionKind::all() {
        let mut settings = settings.clone();
        if kind == CompactionKind::Tiering {
            settings.base_level_bytes = None;
        }
        if kind == CompactionKind::Moose {
            settings.moose = Some(MooseSettings {
                runs_per_level: vec![2, 3],
                ratios: vec![5.0, 4.0],
            });
        }
        if kind == CompactionKind::Ecotune {
            settings.ecotune = EcoTuneSettings::default();
        }
        let policy = kind.build(&settings).expect("builds");
        match policy.registered() {
            Some((registered, again)) => {
                assert_eq!(registered, kind);
                let rebuilt = registered.build(&again).expect("builds again");
                assert_eq!(rebuilt.name(), policy.name(), "{kind}");
                if kind.uses_size_ratio() {
                    assert_eq!(again.size_ratio, 4.0, "{kind}");
                    assert_eq!(again.last_level, Some(5), "{kind}");
                }
                if kind == CompactionKind::Garnering {
                    assert_eq!(again.garnering_c, 0.6);
                }
                if kind == CompactionKind::Moose {
                    assert_eq!(again.moose, settings.moose);
                }
            }
            // Only the test-only example sits outside what auto-tune can read.
            None => assert_eq!(kind.name(), "one-level"),
        }
    }
    assert!(crate::compaction::Manual.registered().is_none());
}
