//! Lazy leveling (DESIGN.md §5.3) and Garnering (DESIGN.md §5.4) through `Db`: four threads write, overwrite
//! and delete disjoint key sets while two compaction workers run; after the policy settles every
//! key reads back, a scan matches the model, the tree has the policy's shape, and a reopen keeps
//! all of it — for Garnering including the logical level count `L` in the manifest.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::compaction::{
    decode_level_count, garnering_capacities, garnering_level_count, CompactionPolicy, Garnering,
    LazyLeveling, GARNERING_STATE_OWNER,
};
use strata::version::Version;
use strata::{Db, Options};

const THREADS: u32 = 4;
const KEYS_PER_THREAD: u32 = 5_000;
const WRITE_BUFFER_BYTES: usize = 16 * 1024;
const LEVEL0_TRIGGER: usize = 2;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(policy: Arc<dyn CompactionPolicy>) -> Options {
    let mut options = Options::default()
        .write_buffer_bytes(WRITE_BUFFER_BYTES)
        .target_file_bytes(16 * 1024)
        .block_cache_bytes(1 << 20)
        .level0_compaction_trigger(LEVEL0_TRIGGER)
        .compaction_policy(policy);
    options.max_background_compactions = 2;
    options
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Thread `t` owns keys `i` with `i % THREADS == t`: it writes them in a scattered order,
/// overwrites every 3rd and deletes every 7th. Returns the union of the threads' models.
fn load(db: &Arc<Db>) -> Model {
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let db = Arc::clone(db);
            std::thread::spawn(move || {
                let mut model = Model::new();
                for n in 0..KEYS_PER_THREAD {
                    // 7919 is prime and does not divide KEYS_PER_THREAD: a permutation.
                    let i = ((n * 7919) % KEYS_PER_THREAD) * THREADS + thread;
                    let value = format!("value-{i}-{}", "v".repeat(20)).into_bytes();
                    db.put(key(i), &value).expect("put");
                    model.insert(key(i), value);
                    if n % 3 == 0 {
                        let j = ((n / 3 * 7919) % KEYS_PER_THREAD) * THREADS + thread;
                        if model.contains_key(&key(j)) {
                            let value = format!("overwritten-{j}-{n}").into_bytes();
                            db.put(key(j), &value).expect("overwrite");
                            model.insert(key(j), value);
                        }
                    }
                    if n % 7 == 0 {
                        let j = ((n / 7 * 7919) % KEYS_PER_THREAD) * THREADS + thread;
                        db.delete(key(j)).expect("delete");
                        model.remove(&key(j));
                    }
                }
                model
            })
        })
        .collect();
    let mut model = Model::new();
    for handle in handles {
        model.extend(handle.join().expect("writer thread"));
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    model
}

fn check_contents(db: &Db, model: &Model) {
    for thread in 0..THREADS {
        for n in 0..KEYS_PER_THREAD {
            let k = key(n * THREADS + thread);
            assert_eq!(
                db.get(&k).expect("get").map(|v| v.to_vec()),
                model.get(&k).cloned(),
                "key {}",
                String::from_utf8_lossy(&k)
            );
        }
    }
    let scanned: Model = db
        .iter()
        .map(|entry| entry.expect("scan entry"))
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(scanned.len(), model.len(), "scan length");
    assert!(scanned == *model, "the scan differs from the model");
}

fn disk_levels_in_use(version: &Version) -> Vec<usize> {
    (1..version.levels().len())
        .filter(|&level| !version.levels()[level].is_empty())
        .collect()
}

fn run_in(dir: &Path, policy: Arc<dyn CompactionPolicy>) -> (Model, Arc<Version>) {
    let db = Arc::new(Db::open(dir, options(Arc::clone(&policy))).expect("open"));
    let model = load(&db);
    check_contents(&db, &model);
    let version = db.version();
    assert!(
        version.levels()[0].runs().len() < LEVEL0_TRIGGER,
        "level 0 settled below its trigger"
    );
    db.close().expect("close");
    (model, version)
}

#[test]
fn lazy_leveling_keeps_every_write_and_its_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = LazyLeveling::new(3.0).expect("valid");
    let (model, version) = run_in(dir.path(), Arc::new(policy.clone()));
    let levels = disk_levels_in_use(&version);
    let last = policy.current_last_level(&version);
    assert!(last >= 2, "the last level grew with the data: {levels:?}");
    assert_eq!(
        version.levels()[last].runs().len(),
        1,
        "the last level is one run"
    );
    for &level in levels.iter().filter(|&&level| level < last) {
        assert!(
            version.levels()[level].runs().len() <= policy.size_ratio().runs_per_level(),
            "tiered level {level} holds fewer than T runs"
        );
    }
    let db = Db::open(dir.path(), options(Arc::new(policy))).expect("reopen");
    check_contents(&db, &model);
    db.compact().expect("full compaction");
    check_contents(&db, &model);
    assert_eq!(db.version().run_count(), 1);
}

#[test]
fn garnering_keeps_every_write_its_shape_and_its_level_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Garnering::new(2.0).expect("valid");
    let (model, version) = run_in(dir.path(), Arc::new(policy.clone()));
    let state = version
        .policy_state(GARNERING_STATE_OWNER)
        .expect("L is in the manifest")
        .to_vec();
    let level_count = decode_level_count(&state).expect("decodable state");
    assert!(level_count >= 3, "L grew with the data: L = {level_count}");
    assert_eq!(policy.level_count(&version), level_count);
    // DESIGN.md §5.4's formula assumes full levels; delayed increments grow L as levels fill, so the
    // two agree within one level.
    let base = WRITE_BUFFER_BYTES as f64 * policy.size_ratio().get();
    let formula = garnering_level_count(
        version.bytes() as f64,
        base,
        policy.size_ratio().get(),
        policy.scaling_factor(),
    );
    assert!(
        level_count.abs_diff(formula) <= 1,
        "L = {level_count}, the formula gives {formula} for {} bytes",
        version.bytes()
    );
    let levels = disk_levels_in_use(&version);
    assert!(
        levels.iter().all(|&level| level <= level_count),
        "no data below L = {level_count}: {levels:?}"
    );
    // Leveled: one run per disk level, and every level above the last within its capacity.
    let capacity = garnering_capacities(
        WRITE_BUFFER_BYTES as f64 * policy.size_ratio().get(),
        policy.size_ratio().get(),
        policy.scaling_factor(),
        level_count,
    );
    for &level in &levels {
        assert_eq!(version.levels()[level].runs().len(), 1, "level {level}");
        assert!(
            version.levels()[level].bytes() as f64 <= capacity[level],
            "level {level} holds {} > {:.0}",
            version.levels()[level].bytes(),
            capacity[level]
        );
    }
    let db = Db::open(dir.path(), options(Arc::new(policy.clone()))).expect("reopen");
    check_contents(&db, &model);
    assert_eq!(
        db.version().policy_state(GARNERING_STATE_OWNER),
        Some(&state[..]),
        "L survives the reopen"
    );
    db.compact().expect("full compaction");
    check_contents(&db, &model);
    let after = db.version();
    assert_eq!(after.run_count(), 1);
    assert_eq!(
        disk_levels_in_use(&after),
        vec![level_count],
        "a full compaction writes level L"
    );
    assert_eq!(policy.level_count(&after), level_count, "and keeps L");
}
