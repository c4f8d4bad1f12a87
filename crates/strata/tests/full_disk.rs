//! A real full disk: a size-limited tmpfs, filled by a write load until the kernel answers
//! `ENOSPC`. The error is clear, nothing acknowledged is lost, a read-only open still reads on the
//! full disk, and freeing space plus a reopen resumes writing.
//!
//! Mounting needs root (or a user namespace). Where the environment forbids it, the test prints
//! why and returns; the same `ENOSPC` path then still runs through the fault-injecting file
//! system (`tests/fault_injection.rs`, `a_full_disk_fails_writes_clearly_...`).

use std::path::{Path, PathBuf};
use std::process::Command;

use strata::{Db, Error, Options};

/// A tmpfs mounted for the test's lifetime.
struct Mount {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Mount {
    fn new(bytes: u64) -> Result<Mount, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("fs");
        std::fs::create_dir(&path).map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
        }
        Ok(Mount { path, _dir: dir })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn key(i: u32) -> String {
    format!("key{i:06}")
}

fn value(i: u32) -> Vec<u8> {
    let mut bytes = format!("value{i}-").into_bytes();
    bytes.resize(1_000, b'a' + (i % 26) as u8);
    bytes
}

fn options() -> Options {
    Options::default()
        .write_buffer_bytes(256 * 1024)
        .target_file_bytes(256 * 1024)
}

fn used_space_filler(dir: &Path, bytes: usize) -> PathBuf {
    let path = dir.join("filler");
    std::fs::write(&path, vec![0u8; bytes]).expect("write the filler file");
    path
}

#[test]
fn a_full_tmpfs_fails_writes_clearly_and_loses_nothing_acknowledged() {
    let mount = match Mount::new(8 << 20) {
        Ok(mount) => mount,
        Err(reason) => {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({reason}); the ENOSPC path runs through \
                 the fault-injecting file system in tests/fault_injection.rs"
            );
            return;
        }
    };
    // 3 MiB that can be freed later, so that a reopen has room.
    let filler = used_space_filler(&mount.path, 3 << 20);
    let db_dir = mount.path.join("db");
    let db = Db::open(&db_dir, options()).expect("open");
    let mut acknowledged = 0u32;
    let error = loop {
        match db.put(key(acknowledged), value(acknowledged)) {
            Ok(()) => acknowledged += 1,
            Err(error) => break error,
        }
        assert!(acknowledged < 100_000, "8 MiB never filled up");
    };
    println!("{acknowledged} writes acknowledged before the disk filled: {error}");
    assert!(
        acknowledged > 100,
        "only {acknowledged} writes fit: {error}"
    );
    // The write that hit the full disk failed with the kernel's message, or (if a background
    // flush or compaction hit it first) with the background error that carries it.
    assert!(
        error.to_string().contains("No space left on device"),
        "unclear error: {error}"
    );
    // The engine refuses further writes with a clear error and keeps serving reads.
    match db.put(b"after", b"x") {
        Err(Error::Background(message)) => {
            assert!(message.contains("No space left on device"), "{message}")
        }
        other => panic!("a write after the disk filled returned {other:?}"),
    }
    for i in (0..acknowledged).step_by(97) {
        assert_eq!(
            db.get(key(i)).expect("reads go on").as_deref(),
            Some(value(i).as_slice())
        );
    }
    let _ = db.close();
    drop(db);

    // Still full: a read-only open writes nothing, so it opens and reads everything.
    let reader = Db::open_read_only(&db_dir, options()).expect("read-only open on a full disk");
    for i in 0..acknowledged {
        assert_eq!(
            reader.get(key(i)).expect("get").as_deref(),
            Some(value(i).as_slice()),
            "{} lost (read-only, full disk)",
            key(i)
        );
    }
    drop(reader);

    // Space freed: a normal open resumes, with every acknowledged write.
    std::fs::remove_file(&filler).expect("free space");
    let db = Db::open(&db_dir, options()).expect("reopen after freeing space");
    for i in 0..acknowledged {
        assert_eq!(
            db.get(key(i)).expect("get").as_deref(),
            Some(value(i).as_slice()),
            "{} lost",
            key(i)
        );
    }
    db.put(b"after", b"x").expect("writes resume");
    db.close().expect("close");
}
