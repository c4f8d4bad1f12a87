//! The expected-state oracle of `strata stress` (RocksDB's `db_stress` expected state): for every
//! key, the states it has been written to, in order, and which of them a read may legally see.
//!
//! Every write to a key is made while holding that key's lock, so a key's writes are totally
//! ordered: state 0 is "absent", and each write (put, delete, or a batch's part) appends a state.
//! A state is *pending* while its write is in flight, *acked* once the engine acknowledged it,
//! *failed* when the engine returned an I/O error for it (its record may or may not have reached
//! the log: invisible until a reopen, possible after one), or *rejected* when the engine refused
//! it up front because of an earlier background error (never visible, even after a reopen).
//!
//! What a read may see:
//! * a point read under the key's lock: exactly the newest acked state (no write of that key is
//!   in flight, and a failed write never reaches the memtable);
//! * a scan or snapshot, which reads without the locks: any pending or acked state from the
//!   newest acked state before the iterator was created up to the newest state started after it
//!   was read;
//! * after a reopen: the newest acked state or any failed state after it; the oracle then
//!   resolves the key to what it read.
//!
//! Values carry the key and the state's generation, and their bytes are a function of both, so a
//! read value names the exact state it came from and any damaged byte is caught.

use std::collections::VecDeque;

use parking_lot::{Mutex, MutexGuard};

/// How many states of a key are kept for scans to check against; older ones are dropped (a scan
/// that needs a dropped state skips that key and counts it).
const HISTORY: usize = 24;

/// Where a write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// In flight.
    Pending,
    /// Acknowledged.
    Acked,
    /// The write returned an I/O error: durable or not, unknown until a reopen.
    Failed,
    /// Refused before it reached the log (the engine was already in its error state).
    Rejected,
}

/// One state of a key: the generation of the value written, or `None` for a deletion (and for
/// the initial absent state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub generation: Option<u64>,
    pub outcome: Outcome,
}

/// A key's history.
#[derive(Debug)]
pub struct KeyState {
    /// The most recent states, oldest first; `states[0]` has absolute index `first_index`.
    states: VecDeque<State>,
    first_index: u64,
    /// Absolute index of the newest acked state.
    acked_index: u64,
    /// The next generation to write (unique per key, across reopens and crashes).
    next_generation: u64,
}

impl Default for KeyState {
    fn default() -> Self {
        KeyState {
            states: VecDeque::from([State {
                generation: None,
                outcome: Outcome::Acked,
            }]),
            first_index: 0,
            acked_index: 0,
            next_generation: 1,
        }
    }
}

impl KeyState {
    /// A key whose current (acked) state is `generation`, writing from `next_generation` on.
    pub fn resolved(generation: Option<u64>, next_generation: u64) -> KeyState {
        KeyState {
            states: VecDeque::from([State {
                generation,
                outcome: Outcome::Acked,
            }]),
            first_index: 0,
            acked_index: 0,
            next_generation,
        }
    }

    fn last_index(&self) -> u64 {
        self.first_index + self.states.len() as u64 - 1
    }

    fn get(&self, index: u64) -> Option<&State> {
        self.states
            .get(index.checked_sub(self.first_index)? as usize)
    }

    /// The newest acked state's generation: what a point read under the lock must see.
    pub fn acked(&self) -> Option<u64> {
        self.get(self.acked_index).and_then(|s| s.generation)
    }

    /// The next generation a put will write; the caller appends its state with `start`.
    pub fn take_generation(&mut self) -> u64 {
        let generation = self.next_generation;
        self.next_generation += 1;
        generation
    }

    pub fn next_generation(&self) -> u64 {
        self.next_generation
    }

    /// Starts a write of `generation` (`None`: a delete); returns its absolute index.
    pub fn start(&mut self, generation: Option<u64>) -> u64 {
        self.states.push_back(State {
            generation,
            outcome: Outcome::Pending,
        });
        // Drop the oldest states, but never the newest acked one.
        while self.states.len() > HISTORY && self.first_index < self.acked_index {
            self.states.pop_front();
            self.first_index += 1;
        }
        self.last_index()
    }

    /// Records how the write at `index` ended.
    pub fn finish(&mut self, index: u64, outcome: Outcome) {
        let first = self.first_index;
        if let Some(state) = index
            .checked_sub(first)
            .and_then(|i| self.states.get_mut(i as usize))
        {
            state.outcome = outcome;
        }
        if outcome == Outcome::Acked && index > self.acked_index {
            self.acked_index = index;
        }
    }

    /// Where a lock-free read (scan, snapshot) starts its window: the newest acked state now.
    pub fn window_start(&self) -> u64 {
        self.acked_index
    }

    /// Where it ends: the newest state started now.
    pub fn window_end(&self) -> u64 {
        self.last_index()
    }

    /// Whether a lock-free read whose window is `start..=end` may see `seen`; `None` if the
    /// window's oldest state was dropped from the history (the key cannot be checked).
    pub fn allows_in_window(&self, start: u64, end: u64, seen: Option<u64>) -> Option<bool> {
        if start < self.first_index {
            return None;
        }
        Some((start..=end).any(|index| {
            self.get(index).is_some_and(|state| {
                state.generation == seen
                    && (index == start
                        || matches!(state.outcome, Outcome::Pending | Outcome::Acked))
            })
        }))
    }

    /// The states a read after a reopen may see: the newest acked one, then every failed one
    /// after it (newest last).
    pub fn after_reopen(&self) -> Vec<Option<u64>> {
        let mut allowed = vec![self.acked()];
        for index in self.acked_index + 1..=self.last_index() {
            if let Some(state) = self.get(index) {
                if state.outcome == Outcome::Failed {
                    allowed.push(state.generation);
                }
            }
        }
        allowed
    }

    /// After a reopen read `seen` (one of `after_reopen`): that is now the acked state, and the
    /// history restarts from it.
    pub fn resolve(&mut self, seen: Option<u64>) {
        *self = KeyState::resolved(seen, self.next_generation);
    }
}

/// The oracle: one locked state per key.
pub struct ExpectedState {
    keys: Vec<Mutex<KeyState>>,
}

impl ExpectedState {
    pub fn new(keys: usize) -> ExpectedState {
        ExpectedState {
            keys: (0..keys).map(|_| Mutex::new(KeyState::default())).collect(),
        }
    }

    /// From resolved per-key states (a crash-test child resuming from its journal).
    pub fn from_states(states: Vec<KeyState>) -> ExpectedState {
        ExpectedState {
            keys: states.into_iter().map(Mutex::new).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Locks one key.
    pub fn lock(&self, key: usize) -> MutexGuard<'_, KeyState> {
        self.keys[key].lock()
    }

    /// Locks several keys, in increasing order so that two batches never deadlock. `keys` must be
    /// sorted and distinct.
    pub fn lock_many(&self, keys: &[usize]) -> Vec<MutexGuard<'_, KeyState>> {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        keys.iter().map(|&k| self.keys[k].lock()).collect()
    }
}

/// The key bytes of key number `index`.
pub fn key_bytes(index: usize) -> Vec<u8> {
    format!("key{index:09}").into_bytes()
}

/// The key number of key bytes, if they are one of ours.
pub fn key_index(key: &[u8]) -> Option<usize> {
    std::str::from_utf8(key.strip_prefix(b"key")?)
        .ok()?
        .parse()
        .ok()
}

/// SplitMix64 step: the value bytes are a function of (key, generation).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value written to key `key` at `generation`: 16 bytes naming both, then filler bytes that
/// depend on both. Its length is around `value_size`; one value in 64 is large (16x).
pub fn value_bytes(key: usize, generation: u64, value_size: usize) -> Vec<u8> {
    let seed = mix((key as u64) << 32 ^ generation);
    let size = value_size.max(1);
    let mut length = size / 2 + (seed % size as u64) as usize;
    if seed >> 58 == 0 {
        length *= 16;
    }
    let length = length.max(16);
    let mut value = Vec::with_capacity(length);
    value.extend_from_slice(&(key as u64).to_le_bytes());
    value.extend_from_slice(&generation.to_le_bytes());
    let mut state = seed;
    while value.len() < length {
        state = mix(state);
        value.extend_from_slice(&state.to_le_bytes());
    }
    value.truncate(length);
    value
}

/// The generation a read value holds, if it is exactly a value `value_bytes` writes for `key`;
/// `Err` with what is wrong otherwise.
pub fn decode_value(key: usize, value: &[u8], value_size: usize) -> Result<u64, String> {
    let (Some(key_part), Some(generation_part)) = (value.get(0..8), value.get(8..16)) else {
        return Err(format!("value of {} bytes is too short", value.len()));
    };
    let mut word = [0u8; 8];
    word.copy_from_slice(key_part);
    let written_for = u64::from_le_bytes(word);
    if written_for != key as u64 {
        return Err(format!("value was written for key {written_for}"));
    }
    word.copy_from_slice(generation_part);
    let generation = u64::from_le_bytes(word);
    if value != value_bytes(key, generation, value_size).as_slice() {
        return Err(format!(
            "value of generation {generation} ({} bytes) has damaged bytes",
            value.len()
        ));
    }
    Ok(generation)
}

/// A value's state as a short string for messages: `gen 12`, or `absent`.
pub fn describe(generation: Option<u64>) -> String {
    match generation {
        Some(generation) => format!("gen {generation}"),
        None => "absent".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_their_key_and_generation_and_catch_damage() {
        let value = value_bytes(7, 3, 100);
        assert_eq!(decode_value(7, &value, 100), Ok(3));
        assert!(decode_value(8, &value, 100).is_err());
        let mut damaged = value.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(decode_value(7, &damaged, 100).is_err());
        assert!(decode_value(7, &value[..10], 100).is_err());
        assert_eq!(key_index(&key_bytes(42)), Some(42));
        assert_eq!(key_index(b"other"), None);
    }

    #[test]
    fn a_point_read_sees_the_newest_acked_state_and_failed_writes_only_after_a_reopen() {
        let mut key = KeyState::default();
        assert_eq!(key.acked(), None);
        let g1 = key.take_generation();
        let i1 = key.start(Some(g1));
        key.finish(i1, Outcome::Acked);
        assert_eq!(key.acked(), Some(g1));
        let g2 = key.take_generation();
        let i2 = key.start(Some(g2));
        key.finish(i2, Outcome::Failed);
        let i3 = key.start(None);
        key.finish(i3, Outcome::Rejected);
        assert_eq!(
            key.acked(),
            Some(g1),
            "a failed write is not visible in-process"
        );
        assert_eq!(key.after_reopen(), vec![Some(g1), Some(g2)]);
        key.resolve(Some(g2));
        assert_eq!(key.acked(), Some(g2));
        assert_eq!(key.after_reopen(), vec![Some(g2)]);
        assert!(key.take_generation() > g2, "generations never repeat");
    }

    #[test]
    fn a_scan_window_allows_pending_and_acked_states_between_its_ends() {
        let mut key = KeyState::default();
        let start = key.window_start();
        let g1 = key.take_generation();
        let i1 = key.start(Some(g1));
        let g2 = key.take_generation();
        key.finish(i1, Outcome::Acked);
        let i2 = key.start(Some(g2));
        key.finish(i2, Outcome::Failed);
        let end = key.window_end();
        assert_eq!(key.allows_in_window(start, end, None), Some(true));
        assert_eq!(key.allows_in_window(start, end, Some(g1)), Some(true));
        assert_eq!(
            key.allows_in_window(start, end, Some(g2)),
            Some(false),
            "a failed write never reached the memtable"
        );
        assert_eq!(key.allows_in_window(start, end, Some(99)), Some(false));
        // A window that starts after the first write no longer allows the absent state.
        assert_eq!(key.allows_in_window(i1, end, None), Some(false));
    }

    #[test]
    fn history_is_bounded_but_keeps_the_acked_state() {
        let mut key = KeyState::default();
        for _ in 0..100 {
            let generation = key.take_generation();
            let index = key.start(Some(generation));
            key.finish(index, Outcome::Acked);
        }
        assert!(key.states.len() <= HISTORY);
        assert_eq!(key.acked(), Some(100));
        assert_eq!(key.allows_in_window(0, key.window_end(), None), None);
    }
}
