//! The crash-test child's journal: what the oracle knows, kept in a file that survives the
//! process being killed (each line is one `write` call on a file opened for appending; the
//! operating system keeps it whatever happens to the process).
//!
//! Lines:
//! * `R KEY GEN|- NEXT` — key `KEY`'s state after the last check (a generation or absent) and the
//!   next generation it will write; a fresh journal is all `R` lines;
//! * `S BATCH KEY GEN|-` — a write of one key, part of batch `BATCH`, is about to be issued
//!   (written before the engine is called);
//! * `A BATCH` — the batch was acknowledged (written after the engine returned).
//!
//! After a crash, a started batch with no `A` line was in flight: each of its keys may hold its
//! new state or its old one, but all of the batch's keys together (a batch is atomic). A torn last
//! line (the process died inside the `write`) is ignored.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::oracle::{KeyState, Outcome};
use crate::error::{CliError, CliResult};

/// One batch's writes: each key and the generation written (`None`: a delete).
pub type Batch = Vec<(usize, Option<u64>)>;

pub struct Journal {
    path: PathBuf,
    file: Mutex<(File, u64)>,
    /// Batches in flight when the last process died: their keys and generations.
    pub in_flight: Vec<Batch>,
}

fn generation_text(generation: Option<u64>) -> String {
    generation.map_or_else(|| "-".to_string(), |g| g.to_string())
}

fn parse_generation(text: &str) -> Option<Option<u64>> {
    if text == "-" {
        Some(None)
    } else {
        text.parse().ok().map(Some)
    }
}

impl Journal {
    /// Reads the journal at `path` (none: a fresh database) into per-key states: each key's last
    /// resolved state, the writes acknowledged since, and the writes in flight at the crash
    /// marked `Failed` (maybe durable, maybe not).
    pub fn open(path: &Path, keys: usize) -> CliResult<(Vec<KeyState>, Journal)> {
        let mut states: Vec<KeyState> = (0..keys).map(|_| KeyState::default()).collect();
        let text = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(CliError::io(format!("reading {}", path.display()), error)),
        };
        let lines: Vec<&str> = text.split('\n').collect();
        let complete = lines.len().saturating_sub(1); // the part after the last '\n' is torn
        let mut started: HashMap<u64, Vec<(usize, Option<u64>, u64)>> = HashMap::new();
        let mut next_batch = 1;
        for (number, line) in lines[..complete].iter().enumerate() {
            let fields: Vec<&str> = line.split(' ').collect();
            let bad = || {
                CliError::InvalidArgument(format!(
                    "journal {} line {}: {line:?} is malformed",
                    path.display(),
                    number + 1
                ))
            };
            let key_of = |text: &str| -> CliResult<usize> {
                text.parse::<usize>()
                    .ok()
                    .filter(|&k| k < keys)
                    .ok_or_else(bad)
            };
            match fields.as_slice() {
                ["R", key, generation, next] => {
                    let key = key_of(key)?;
                    let generation = parse_generation(generation).ok_or_else(bad)?;
                    let next = next.parse().map_err(|_| bad())?;
                    states[key] = KeyState::resolved(generation, next);
                }
                ["S", batch, key, generation] => {
                    let batch: u64 = batch.parse().map_err(|_| bad())?;
                    let key = key_of(key)?;
                    let generation = parse_generation(generation).ok_or_else(bad)?;
                    let state = &mut states[key];
                    if let Some(generation) = generation {
                        while state.next_generation() <= generation {
                            state.take_generation();
                        }
                    }
                    let index = state.start(generation);
                    started
                        .entry(batch)
                        .or_default()
                        .push((key, generation, index));
                    next_batch = next_batch.max(batch + 1);
                }
                ["A", batch] => {
                    let batch: u64 = batch.parse().map_err(|_| bad())?;
                    for (key, _, index) in started.remove(&batch).unwrap_or_default() {
                        states[key].finish(index, Outcome::Acked);
                    }
                }
                _ => return Err(bad()),
            }
        }
        let mut in_flight = Vec::new();
        for (_, writes) in started {
            for &(key, _, index) in &writes {
                states[key].finish(index, Outcome::Failed);
            }
            in_flight.push(writes.iter().map(|&(k, g, _)| (k, g)).collect());
        }
        let file = open_append(path)?;
        Ok((
            states,
            Journal {
                path: path.to_path_buf(),
                file: Mutex::new((file, next_batch)),
                in_flight,
            },
        ))
    }

    /// Journals the start of a batch; returns its id.
    pub fn start(&self, writes: &[(usize, Option<u64>)]) -> std::io::Result<u64> {
        let mut file = self.file.lock();
        let batch = file.1;
        file.1 += 1;
        let mut text = String::new();
        for &(key, generation) in writes {
            text.push_str(&format!(
                "S {batch} {key} {}\n",
                generation_text(generation)
            ));
        }
        file.0.write_all(text.as_bytes())?;
        Ok(batch)
    }

    /// Journals a batch's acknowledgement.
    pub fn acked(&self, batch: u64) -> std::io::Result<()> {
        self.file
            .lock()
            .0
            .write_all(format!("A {batch}\n").as_bytes())
    }

    /// Replaces the journal with the resolved states (`resolved[key]`), atomically.
    pub fn rewrite(
        &self,
        resolved: &[Option<u64>],
        next_generation: impl Fn(usize) -> u64,
    ) -> std::io::Result<()> {
        let mut file = self.file.lock();
        let mut text = String::with_capacity(resolved.len() * 24);
        for (key, &generation) in resolved.iter().enumerate() {
            text.push_str(&format!(
                "R {key} {} {}\n",
                generation_text(generation),
                next_generation(key)
            ));
        }
        let temporary = self.path.with_extension("journal-tmp");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &self.path)?;
        file.0 = OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }
}

fn open_append(path: &Path) -> CliResult<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CliError::io(format!("opening {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_replays_acked_and_in_flight_writes_and_ignores_a_torn_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.journal");
        std::fs::write(
            &path,
            "R 0 - 1\nR 1 - 1\nR 2 7 8\nR 3 - 1\nS 1 0 1\nS 1 1 1\nA 1\nS 2 0 2\nS 2 2 -\nS 3 3",
        )
        .expect("write");
        let (states, journal) = Journal::open(&path, 4).expect("reopen");
        assert_eq!(states[0].acked(), Some(1));
        assert_eq!(states[0].after_reopen(), vec![Some(1), Some(2)]);
        assert_eq!(states[1].after_reopen(), vec![Some(1)]);
        assert_eq!(states[2].after_reopen(), vec![Some(7), None]);
        assert_eq!(
            states[3].after_reopen(),
            vec![None],
            "the torn line is ignored"
        );
        assert_eq!(journal.in_flight, vec![vec![(0, Some(2)), (2, None)]]);
        assert!(states[0].next_generation() > 2);
        // New batches get new ids.
        assert_eq!(journal.start(&[(3, Some(1))]).expect("start"), 3);
    }

    #[test]
    fn a_malformed_line_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.journal");
        for text in ["X 1\n", "S 1 99 1\n", "R 0 zz 1\n", "A\n"] {
            std::fs::write(&path, text).expect("write");
            assert!(Journal::open(&path, 4).is_err(), "{text:?}");
        }
    }
}
