//! End to end: a `Db` with the Monkey(static) allocator (DESIGN.md §3.2) gives every new file the bits
//! per key of the level it is written to — `bpk_target` on level 0, the solved per-level value on
//! levels 1 and 2 (more bits on the smaller level 1). A file that a compaction moves down without
//! rewriting it (a trivial move) keeps the bits per key of the level it was written to.

use std::sync::Arc;

use strata::alloc::Monkey;
use strata::{Db, Options};

const KEYS: u32 = 40_000;
/// Two passes over the keys: the second one overlaps level 2, so level-1 files are merged into
/// level 2 (rewritten with level 2's bits per key) rather than only moved there.
const PASSES: u32 = 2;
const WRITE_BUFFER_BYTES: usize = 32 * 1024;
/// About how many of this test's entries (11-byte keys, ~16-byte values) a 32 KiB buffer holds;
/// the prediction need not be exact, the allocator only indexes by output level.
const WRITE_BUFFER_ENTRIES: u64 = 500;
const BITS_PER_KEY_TARGET: f64 = 4.0;

#[test]
fn files_get_the_bits_per_key_of_their_output_level() {
    let monkey = Monkey::new(
        BITS_PER_KEY_TARGET,
        u64::from(KEYS),
        WRITE_BUFFER_ENTRIES,
        10.0,
    )
    .expect("valid monkey");
    let level_bits = monkey.level_bits_per_key().to_vec();
    assert!(level_bits.len() >= 2, "{level_bits:?}");
    assert!(level_bits[0] > level_bits[1], "{level_bits:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default()
        .write_buffer_bytes(WRITE_BUFFER_BYTES)
        .target_file_bytes(32 * 1024)
        .level0_compaction_trigger(3)
        // Monkey's static prediction is of a top-down leveled tree: files land on levels 0, 1
        // and 2 only under static leveling (dynamic sizing puts them at the bottom first).
        .compaction_policy(Arc::new(strata::compaction::Leveling::default()))
        .filter_allocator(Arc::new(monkey.clone()));
    let db = Db::open(dir.path(), options).expect("open");
    for pass in 0..PASSES {
        for n in 0..KEYS {
            // 7919 is prime and does not divide KEYS: a permutation of 0..KEYS.
            let i = (n * 7919) % KEYS;
            db.put(
                format!("key{i:08}").into_bytes(),
                format!("value-{pass}-{i}").into_bytes(),
            )
            .expect("put");
        }
        db.wait_for_compactions().expect("settle");
    }
    // One more flush so that level 0 has a file too. The settled level 0 holds fewer runs than
    // its trigger, but this flush may reach it, and the merge then empties level 0 (how many
    // runs the settle left depends on when the merges ran): a flush onto the empty level stays.
    for attempt in 0..2 {
        db.put(format!("key-last-{attempt}"), b"value")
            .expect("put");
        db.flush().expect("flush");
        db.wait_for_compactions().expect("settle");
        if !db.version().levels()[0].runs().is_empty() {
            break;
        }
    }

    let version = db.version();
    let mut written_here = [0usize; 3];
    for (level, _run, file) in version.files() {
        let bits = file.bits_per_key();
        let same = |other: f64| (bits - other).abs() < 1e-9;
        // Written to this level, or written to a level above and moved down unchanged.
        let origin = (0..=level).find(|&origin| same(monkey.bits_per_key_for_level(origin)));
        assert!(
            origin.is_some(),
            "level {level}: file {} has {bits} bits per key, not the value of any level up to \
             {level} ({level_bits:?}, target {BITS_PER_KEY_TARGET})",
            file.number()
        );
        if origin == Some(level) {
            if let Some(count) = written_here.get_mut(level) {
                *count += 1;
            }
        }
    }
    assert!(
        written_here.iter().all(|&count| count > 0),
        "expected files written to levels 0, 1 and 2, got {written_here:?}"
    );
    assert_eq!(monkey.bits_per_key_for_level(0), BITS_PER_KEY_TARGET);
}
