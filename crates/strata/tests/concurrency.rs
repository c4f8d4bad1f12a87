//! Concurrency: writers and readers running together while the background threads flush and
//! compact, and frozen views (iterators and snapshots) that outlive flushes and compactions.
//!
//! The bank test keeps an invariant that only holds if every batch is applied atomically and every
//! snapshot is consistent: accounts only ever move money between each other, so the sum over all
//! accounts never changes. Each writer thread owns a disjoint set of accounts (so its
//! read-modify-write needs no lock and writers really commit concurrently, through group commit);
//! the sum over each writer's accounts is therefore constant too. An emptied account is deleted,
//! so tombstones take part; an absent account has balance 0.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use strata::compaction::{CompactionPolicy, Leveling, Tiering};
use strata::{Db, Options, Snapshot, WriteBatch};

const ACCOUNTS: usize = 120;
const WRITERS: usize = 2;
const READERS: usize = 2;
const INITIAL_BALANCE: u64 = 1_000;
const TOTAL: u64 = ACCOUNTS as u64 * INITIAL_BALANCE;
const TRANSFERS_PER_WRITER: usize = 4_000;
/// Readers check at least this many snapshots, and go on (up to the maximum) while writers run.
const MIN_READS: usize = 30;
const MAX_READS: usize = 2_000;
/// Bytes of a stored balance: 8 bytes little-endian, then padding so memtables fill quickly.
const VALUE_BYTES: usize = 64;

fn options(policy: Arc<dyn CompactionPolicy>) -> Options {
    Options::default()
        .write_buffer_bytes(16 * 1024)
        .target_file_bytes(16 * 1024)
        .block_bytes(1024)
        .block_cache_bytes(512 * 1024)
        .level0_compaction_trigger(2)
        .compaction_policy(policy)
}

fn leveling() -> Arc<dyn CompactionPolicy> {
    Arc::new(Leveling::new(3.0).expect("valid size ratio"))
}

fn tiering() -> Arc<dyn CompactionPolicy> {
    Arc::new(Tiering::new(3.0).expect("valid size ratio"))
}

fn account_key(account: usize) -> Vec<u8> {
    format!("account{account:04}").into_bytes()
}

fn account_of(key: &[u8]) -> usize {
    std::str::from_utf8(key)
        .ok()
        .and_then(|k| k.strip_prefix("account"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected key {:?}", String::from_utf8_lossy(key)))
}

fn owner(account: usize) -> usize {
    account % WRITERS
}

fn encode_balance(balance: u64, stamp: u64) -> Vec<u8> {
    let mut bytes = balance.to_le_bytes().to_vec();
    // The stamp makes every stored value distinct, so a stale version cannot pass for a new one
    // that happens to hold the same balance.
    while bytes.len() < VALUE_BYTES {
        bytes.extend_from_slice(&stamp.to_le_bytes());
    }
    bytes.truncate(VALUE_BYTES);
    bytes
}

fn decode_balance(bytes: &[u8]) -> u64 {
    assert_eq!(bytes.len(), VALUE_BYTES, "balance value has the wrong size");
    let stamp = &bytes[8..16];
    assert!(
        bytes[8..].chunks(8).all(|c| c == &stamp[..c.len()]),
        "balance value padding is damaged"
    );
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

/// xorshift64*: a tiny deterministic generator, one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Balances as a snapshot sees them, read by iteration (absent accounts are missing).
fn balances_by_iteration(iter: strata::DbIterator) -> BTreeMap<usize, u64> {
    let mut balances = BTreeMap::new();
    let mut previous: Option<Vec<u8>> = None;
    for entry in iter {
        let (key, value) = entry.expect("iterator entry");
        if let Some(previous) = &previous {
            assert!(previous < &key, "iterator keys out of order");
        }
        balances.insert(account_of(&key), decode_balance(&value));
        previous = Some(key);
    }
    balances
}

/// Balances as a snapshot sees them, read with one `get` per account (zero balances omitted).
fn balances_by_get(snapshot: &Snapshot) -> BTreeMap<usize, u64> {
    (0..ACCOUNTS)
        .filter_map(|account| {
            snapshot
                .get(account_key(account))
                .expect("snapshot get")
                .map(|value| (account, decode_balance(&value)))
        })
        .collect()
}

/// Checks the bank's invariants on one consistent view: the total, and each writer's share.
fn check_invariants(balances: &BTreeMap<usize, u64>, what: &str) {
    let total: u64 = balances.values().sum();
    assert_eq!(total, TOTAL, "{what}: the total changed: {balances:?}");
    for writer in 0..WRITERS {
        let share: u64 = balances
            .iter()
            .filter(|(account, _)| owner(**account) == writer)
            .map(|(_, balance)| balance)
            .sum();
        let accounts = (0..ACCOUNTS).filter(|a| owner(*a) == writer).count() as u64;
        assert_eq!(
            share,
            accounts * INITIAL_BALANCE,
            "{what}: writer {writer}'s accounts changed total"
        );
    }
    assert!(
        balances.values().all(|b| *b > 0),
        "{what}: an emptied account was stored instead of deleted"
    );
}

/// One writer: `TRANSFERS_PER_WRITER` transfers between its own accounts, each one batch.
/// Checks that it reads its own writes, and returns its accounts' final balances.
fn run_writer(db: &Db, writer: usize) -> BTreeMap<usize, u64> {
    let mine: Vec<usize> = (0..ACCOUNTS).filter(|a| owner(*a) == writer).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (writer as u64 + 1));
    let mut balances: BTreeMap<usize, u64> = mine.iter().map(|a| (*a, INITIAL_BALANCE)).collect();
    for transfer in 0..TRANSFERS_PER_WRITER {
        let from = mine[rng.below(mine.len() as u64) as usize];
        let mut to = mine[rng.below(mine.len() as u64) as usize];
        if to == from {
            to = mine[(mine.iter().position(|a| *a == from).expect("mine") + 1) % mine.len()];
        }
        // Only this thread writes these accounts, so reading them without a snapshot is safe,
        // and each read must return this thread's last write.
        let read = |account: usize| {
            let balance = db
                .get(account_key(account))
                .expect("get")
                .map_or(0, |v| decode_balance(&v));
            assert_eq!(
                balance, balances[&account],
                "writer {writer} does not read its own write of account {account}"
            );
            balance
        };
        let (from_balance, to_balance) = (read(from), read(to));
        if from_balance == 0 {
            continue;
        }
        // Sometimes move everything, so that accounts empty out and are deleted.
        let amount = if rng.below(8) == 0 {
            from_balance
        } else {
            1 + rng.below(from_balance)
        };
        let stamp = ((writer as u64) << 32) | transfer as u64;
        let mut batch = WriteBatch::new();
        if from_balance == amount {
            batch.delete(account_key(from));
        } else {
            batch.put(
                account_key(from),
                encode_balance(from_balance - amount, stamp),
            );
        }
        batch.put(account_key(to), encode_balance(to_balance + amount, stamp));
        db.write(batch).expect("write transfer");
        balances.insert(from, from_balance - amount);
        balances.insert(to, to_balance + amount);
    }
    balances
}

/// One reader: repeated snapshots, each checked by iteration and by point reads, and plain
/// `db.iter()` scans. Returns the number of snapshots checked.
fn run_reader(db: &Db, writers_done: &AtomicBool) -> usize {
    let mut reads = 0;
    while reads < MAX_READS && (reads < MIN_READS || !writers_done.load(Ordering::Acquire)) {
        let snapshot = db.snapshot();
        let by_iteration = balances_by_iteration(snapshot.iter());
        check_invariants(&by_iteration, "snapshot.iter()");
        let by_get = balances_by_get(&snapshot);
        assert_eq!(
            by_get, by_iteration,
            "snapshot.get and snapshot.iter disagree"
        );
        // The snapshot is still the same after the writers moved on.
        let again = balances_by_iteration(snapshot.iter());
        assert_eq!(again, by_iteration, "a snapshot changed while held");
        let half = snapshot.range(account_key(ACCOUNTS / 2)..);
        let upper: BTreeMap<usize, u64> = by_iteration
            .range(ACCOUNTS / 2..)
            .map(|(a, b)| (*a, *b))
            .collect();
        assert_eq!(
            balances_by_iteration(half),
            upper,
            "snapshot.range disagrees"
        );
        drop(snapshot);
        check_invariants(&balances_by_iteration(db.iter()), "db.iter()");
        reads += 1;
    }
    reads
}

fn bank_transfers_keep_the_total(policy: Arc<dyn CompactionPolicy>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Arc::clone(&policy))).expect("open");
    let mut batch = WriteBatch::new();
    for account in 0..ACCOUNTS {
        batch.put(account_key(account), encode_balance(INITIAL_BALANCE, 0));
    }
    db.write(batch).expect("initial balances");

    let writers_done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let db = db.clone();
            let writers_done = Arc::clone(&writers_done);
            std::thread::spawn(move || run_reader(&db, &writers_done))
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let db = db.clone();
            std::thread::spawn(move || run_writer(&db, writer))
        })
        .collect();
    let mut expected = BTreeMap::new();
    for writer in writers {
        expected.extend(writer.join().expect("writer thread"));
    }
    writers_done.store(true, Ordering::Release);
    let reads: usize = readers
        .into_iter()
        .map(|r| r.join().expect("reader thread"))
        .sum();
    assert!(reads >= READERS * MIN_READS);
    expected.retain(|_, balance| *balance > 0);

    let stats = db.stats();
    assert!(stats.background_error.is_none(), "{stats}");
    assert!(
        stats.io.flushes > 0,
        "no flush ran during the test: {stats}"
    );
    assert!(
        stats.io.compactions > 0,
        "no compaction ran during the test: {stats}"
    );
    let final_state = balances_by_iteration(db.iter());
    assert_eq!(final_state, expected, "final balances");
    db.wait_for_compactions().expect("settle");
    assert_eq!(balances_by_iteration(db.iter()), expected, "after settling");
    drop(db);
    let db = Db::open(dir.path(), options(policy)).expect("reopen");
    assert_eq!(balances_by_iteration(db.iter()), expected, "after reopen");
    assert_eq!(
        balances_by_get(&db.snapshot()),
        expected,
        "gets after reopen"
    );
}

#[test]
fn bank_transfers_keep_the_total_under_leveling() {
    bank_transfers_keep_the_total(leveling());
}

#[test]
fn bank_transfers_keep_the_total_under_tiering() {
    bank_transfers_keep_the_total(tiering());
}

fn old_value(i: usize) -> Vec<u8> {
    format!("old-{i:05}-{}", "o".repeat(40)).into_bytes()
}

fn new_value(i: usize) -> Vec<u8> {
    format!("new-{i:05}-{}", "n".repeat(40)).into_bytes()
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn entries(
    iter: impl Iterator<Item = strata::Result<(Vec<u8>, strata::Value)>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.map(|e| e.map(|(k, v)| (k, v.into_vec())).expect("iterator entry"))
        .collect()
}

fn sst_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read dir")
        .filter(|e| {
            e.as_ref()
                .map(|e| e.file_name().to_string_lossy().ends_with(".sst"))
                .unwrap_or(false)
        })
        .count()
}

/// Iterators and snapshots taken before every key is overwritten or deleted, flushed and
/// compacted still return exactly the old data; once they are dropped, the files only they kept
/// alive are deleted.
fn views_are_frozen_across_flush_and_compaction(policy: Arc<dyn CompactionPolicy>) {
    const KEYS: usize = 3_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(Arc::clone(&policy))).expect("open");
    let mut old = BTreeMap::new();
    for i in 0..KEYS {
        db.put(key(i), old_value(i)).expect("put");
        old.insert(key(i), old_value(i));
        if i == 2_000 {
            // Most of the old state in table files, the rest in the memtable.
            db.flush().expect("flush");
        }
    }
    for i in (0..KEYS).step_by(7) {
        db.delete(key(i)).expect("delete");
        old.remove(&key(i));
    }
    let old_entries: Vec<(Vec<u8>, Vec<u8>)> =
        old.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let before = db.stats();
    assert!(before.io.flushes > 0, "{before}");

    let snapshot = db.snapshot();
    let full = db.iter();
    let mut partial = db.iter();
    let consumed = entries(partial.by_ref().take(old_entries.len() / 2));
    assert_eq!(consumed, old_entries[..old_entries.len() / 2]);
    let ranged = db.range(key(500)..key(1_500));
    let mut seeking = db.iter();
    seeking.seek(key(2_500));

    // Overwrite or delete every key, add new ones, then push it all through the tree.
    for i in 0..KEYS + 500 {
        if i % 3 == 0 {
            db.delete(key(i)).expect("delete");
        } else {
            db.put(key(i), new_value(i)).expect("put");
        }
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    db.compact().expect("compact");
    let after = db.stats();
    assert!(
        after.io.compactions > before.io.compactions,
        "the test needs compactions to have run: {after}"
    );

    assert_eq!(
        entries(full),
        old_entries,
        "iterator created before the writes"
    );
    assert_eq!(
        entries(partial),
        old_entries[old_entries.len() / 2..],
        "rest of a half-read iterator"
    );
    let in_range: Vec<_> = old
        .range(key(500)..key(1_500))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(entries(ranged), in_range, "range iterator");
    let from_seek: Vec<_> = old
        .range(key(2_500)..)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(entries(seeking), from_seek, "seeked iterator");
    // The snapshot, read only now, through iterators created after the compaction.
    assert_eq!(entries(snapshot.iter()), old_entries, "snapshot.iter()");
    assert_eq!(
        entries(snapshot.range(key(500)..key(1_500))),
        in_range,
        "snapshot.range()"
    );
    for i in 0..KEYS + 500 {
        assert_eq!(
            snapshot.get(key(i)).expect("get").map(|v| v.into_vec()),
            old.get(&key(i)).cloned(),
            "snapshot.get({i})"
        );
    }

    // The current state is the new one.
    let new: Vec<(Vec<u8>, Vec<u8>)> = (0..KEYS + 500)
        .filter(|i| i % 3 != 0)
        .map(|i| (key(i), new_value(i)))
        .collect();
    assert_eq!(entries(db.iter()), new, "current state");

    // Dropping the views releases the files only they kept alive.
    drop(snapshot);
    db.put(b"zz", b"trigger obsolete-file deletion")
        .expect("put");
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let live = db.version().files().count();
    assert_eq!(
        sst_files(dir.path()),
        live,
        "table files on disk vs files in the current version"
    );
}

#[test]
fn views_are_frozen_across_flush_and_compaction_under_leveling() {
    views_are_frozen_across_flush_and_compaction(leveling());
}

#[test]
fn views_are_frozen_across_flush_and_compaction_under_tiering() {
    views_are_frozen_across_flush_and_compaction(tiering());
}

/// Group commit with many writers, synced and unsynced puts, deletes and batches mixed: every
/// acknowledged write is readable at once and after a reopen (the WAL replay), and the fsyncs
/// are shared (never more than the synced writes asked for). Each writer owns its keys, so the
/// expected final state is that writer's own last write per key.
#[test]
fn group_commit_of_mixed_sync_writers_keeps_every_acknowledged_write() {
    const THREADS: usize = 8;
    const WRITES: usize = 400;
    let dir = tempfile::tempdir().expect("tempdir");
    // Small memtables, so groups also meet memtable switches and flushes.
    let options = || {
        Options::default()
            .write_buffer_bytes(64 * 1024)
            .target_file_bytes(64 * 1024)
    };
    let db = Db::open(dir.path(), options()).expect("open");
    /// A writer's expected final value (`None`: deleted) per key, and its synced writes.
    type WriterResult = (BTreeMap<Vec<u8>, Option<Vec<u8>>>, u64);
    let results: Vec<WriterResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let db = db.clone();
                scope.spawn(move || {
                    let mut expected = BTreeMap::new();
                    let mut synced = 0u64;
                    for i in 0..WRITES {
                        let key = format!("t{thread}-k{:03}", i % 97).into_bytes();
                        let value = format!("t{thread}-v{i}-{}", "x".repeat(i % 50)).into_bytes();
                        let sync = i % 3 == 0;
                        synced += u64::from(sync);
                        let options = strata::WriteOptions { sync };
                        match i % 7 {
                            0 => {
                                db.delete(&key).expect("delete");
                                expected.insert(key, None);
                            }
                            1 => {
                                let other = format!("t{thread}-b{i}").into_bytes();
                                let mut batch = WriteBatch::new();
                                batch.put(&key, &value).put(&other, b"batch");
                                db.write_opt(batch, options).expect("batch");
                                expected.insert(key, Some(value));
                                expected.insert(other, Some(b"batch".to_vec()));
                            }
                            _ => {
                                db.put_opt(&key, &value, options).expect("put");
                                expected.insert(key, Some(value));
                            }
                        }
                    }
                    (expected, synced)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("writer"))
            .collect()
    });
    let check = |db: &Db, what: &str| {
        for (expected, _) in &results {
            for (key, value) in expected {
                let found = db.get(key).expect("get").map(|v| v.to_vec());
                assert_eq!(
                    &found,
                    value,
                    "{what}: key {}",
                    String::from_utf8_lossy(key)
                );
            }
        }
    };
    check(&db, "before reopen");
    let synced: u64 = results.iter().map(|(_, synced)| synced).sum();
    let syncs = db.stats().io.wal_syncs;
    assert!(
        (1..=synced).contains(&syncs),
        "{syncs} WAL fsyncs for {synced} synced writes"
    );
    // Dropped without `close`: the reopen replays the WALs of every unflushed memtable.
    drop(db);
    let db = Db::open(dir.path(), options()).expect("reopen");
    check(&db, "after reopen");
    db.close().expect("close");
}
