//! A writer process killed with SIGKILL: the reopened store holds a prefix of its batches, and at
//! least every batch it had seen acknowledged (a write is in the OS's hands before it is
//! acknowledged, so a process crash cannot lose it) and everything before its last `flush()`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use strata::{Db, Options, WriteBatch};

const CHILD_DIR_VAR: &str = "STRATA_CRASH_TEST_DIR";

fn options() -> Options {
    Options::default()
        .write_buffer_bytes(64 * 1024)
        .target_file_bytes(64 * 1024)
}

fn key(batch: u64, part: u64) -> String {
    format!("batch{batch:08}-{part}")
}

/// The child: writes numbered two-key batches forever, reporting progress on stdout.
#[test]
#[ignore = "the child process of sigkill_mid_write_keeps_a_prefix; runs only when spawned by it"]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(CHILD_DIR_VAR) else {
        return;
    };
    let db = Db::open(&dir, options()).expect("child opens");
    let mut out = std::io::stdout().lock();
    for batch in 0u64.. {
        let mut write = WriteBatch::new();
        write
            .put(key(batch, 0), format!("value-{batch}"))
            .put(key(batch, 1), format!("value-{batch}"));
        db.write(write).expect("child write");
        if batch % 100 == 0 {
            writeln!(out, "acked {batch}").expect("stdout");
        }
        if batch % 1000 == 999 {
            db.flush().expect("child flush");
            writeln!(out, "flushed {batch}").expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

#[test]
fn sigkill_mid_write_keeps_a_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "crash_child_writer",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_VAR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut last_acked = None;
    let mut last_flushed = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child output");
        if let Some(n) = line.strip_prefix("acked ") {
            last_acked = n.trim().parse::<u64>().ok();
        } else if let Some(n) = line.strip_prefix("flushed ") {
            last_flushed = n.trim().parse::<u64>().ok();
        }
        // Kill mid-stream, between flushes, with several memtables' worth written.
        if last_flushed.is_some_and(|f| f >= 2999) && last_acked.is_some_and(|a| a >= 3500) {
            break;
        }
    }
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    let last_acked = last_acked.expect("child acknowledged writes");
    let last_flushed = last_flushed.expect("child flushed");

    let db = Db::open(dir.path(), options()).expect("reopen after SIGKILL");
    let mut present = 0u64;
    let mut batch = 0u64;
    loop {
        let first = db.get(key(batch, 0)).expect("get");
        let second = db.get(key(batch, 1)).expect("get");
        assert_eq!(
            first.is_some(),
            second.is_some(),
            "batch {batch} is half applied"
        );
        if first.is_none() {
            break;
        }
        assert_eq!(first.as_deref(), Some(format!("value-{batch}").as_bytes()));
        present += 1;
        batch += 1;
    }
    // Nothing beyond the prefix: scan the whole store and count.
    let mut total = 0u64;
    for entry in db.iter() {
        entry.expect("scan");
        total += 1;
    }
    assert_eq!(
        total,
        2 * present,
        "the store holds exactly a prefix of the batches"
    );
    assert!(
        present > last_flushed,
        "everything before the last flush survived"
    );
    assert!(
        present > last_acked,
        "every acknowledged batch survived a process crash"
    );
}
