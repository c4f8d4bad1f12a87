//! Persistence of Merlin's access statistics (DESIGN.md §4) across restarts: the `ACCESS` file.
//!
//! Bits per key need nothing here: every file's bits per key is in its manifest record and in its
//! own properties block. The statistics (the global lookup counter, and per live file its window,
//! bitmap and history counts) change with every lookup, so they are not logged in the manifest;
//! they are written as one snapshot, atomically (`ACCESS.tmp`, fsync, rename), after a flush or
//! compaction at most once a second, and at close. A crash loses at most the lookups since the
//! last snapshot, which only makes estimates a little older; a missing or damaged file (checked
//! by its CRC32C) is reported in the info log and the statistics start afresh — statistics are
//! advisory and never worth refusing to open a database for.
//!
//! Layout (`docs/FORMAT.md`, "Access statistics"): magic `STRATAAC`, format byte 1, a
//! length-prefixed (u32 LE) `MerlinState`, a u32 LE file count, then per file its number
//! (u64 LE) and a length-prefixed (u32 LE) `FileAccess` encoding, and a final plain CRC32C
//! (u32 LE) of everything before it.

use std::collections::HashMap;
use std::path::Path;

use super::merlin::{FileAccess, MerlinState};
use crate::env::FileSystem;
use crate::error::{Error, Result};

pub(crate) const ACCESS_FILE: &str = "ACCESS";
const ACCESS_TEMP_FILE: &str = "ACCESS.tmp";
const MAGIC: &[u8; 8] = b"STRATAAC";
const FORMAT: u8 = 1;

/// What a snapshot restores: the lookup clock and each file's statistics by number.
pub(crate) struct Restored {
    pub(crate) state: MerlinState,
    pub(crate) files: HashMap<u64, FileAccess>,
}

/// Encodes the lookup clock and the statistics of the live files given as `(number, access)`
/// (each file once; the caller collects them from the current version).
pub(crate) fn encode(state: &MerlinState, files: &[(u64, &FileAccess)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + files.len() * 600);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT);
    let mut scratch = Vec::new();
    state.encode_to(&mut scratch);
    push_u32(&mut out, scratch.len());
    out.extend_from_slice(&scratch);
    push_u32(&mut out, files.len());
    for (number, access) in files {
        out.extend_from_slice(&number.to_le_bytes());
        scratch.clear();
        access.encode_to(&mut scratch);
        push_u32(&mut out, scratch.len());
        out.extend_from_slice(&scratch);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn push_u32(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&(value as u32).to_le_bytes());
}

/// Decodes a snapshot; `None` if it is damaged in any way.
pub(crate) fn decode(bytes: &[u8]) -> Option<Restored> {
    let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let rest = body.strip_prefix(MAGIC.as_slice())?;
    let (&format, mut rest) = rest.split_first()?;
    if format != FORMAT {
        return None;
    }
    let state = MerlinState::decode(take_prefixed(&mut rest)?)?;
    let count = take_u32(&mut rest)?;
    let mut files = HashMap::new();
    for _ in 0..count {
        let (number, tail) = rest.split_first_chunk::<8>()?;
        rest = tail;
        let access = FileAccess::decode(take_prefixed(&mut rest)?)?;
        files.insert(u64::from_le_bytes(*number), access);
    }
    rest.is_empty().then_some(Restored { state, files })
}

fn take_u32(rest: &mut &[u8]) -> Option<usize> {
    let (value, tail) = rest.split_first_chunk::<4>()?;
    *rest = tail;
    Some(u32::from_le_bytes(*value) as usize)
}

fn take_prefixed<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = take_u32(rest)?;
    let (value, tail) = rest.split_at_checked(len)?;
    *rest = tail;
    Some(value)
}

/// Writes a snapshot atomically.
pub(crate) fn save(fs: &dyn FileSystem, dir: &Path, bytes: &[u8]) -> Result<()> {
    let temp = dir.join(ACCESS_TEMP_FILE);
    let mut file = fs.create_writable(&temp)?;
    file.append(bytes)?;
    file.sync()?;
    drop(file);
    fs.rename(&temp, &dir.join(ACCESS_FILE))?;
    fs.sync_dir(dir)
}

/// Reads the snapshot: `Ok(None)` if there is none, `Err` if it is damaged (the caller logs it
/// and starts afresh).
pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Restored>> {
    let path = dir.join(ACCESS_FILE);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes = fs.read_to_end(&path)?;
    decode(&bytes)
        .map(Some)
        .ok_or_else(|| Error::corruption(&path, 0, "damaged access statistics snapshot"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::merlin::{Inherited, Merlin};
    use crate::version::tests::new_file;
    use crate::version::{AccessHandle, Version, VersionEdit};
    use std::sync::Arc;

    fn version_with_access() -> (Version, Arc<Merlin>) {
        let merlin = Arc::new(Merlin::default());
        let mut files = Vec::new();
        for number in 1..=3u64 {
            let file = new_file(1, 5, number, &format!("k{number}0"), &format!("k{number}9"));
            let access = FileAccess::from_inherited(Inherited {
                q_prime: 10.0 * number as f64,
                x_prime: number as f64,
                naive_q: 0.0,
                naive_x: 0.0,
            });
            file.file.state().attach_access(AccessHandle {
                file: Arc::new(access),
                merlin: Arc::clone(&merlin),
            });
            files.push(file);
        }
        let edit = VersionEdit {
            new_files: files,
            ..Default::default()
        };
        (Version::default().apply(&edit, None).expect("tree"), merlin)
    }

    /// Encodes the statistics of `version`'s files, as the engine does at close.
    fn encode_live(state: &MerlinState, version: &Version) -> Vec<u8> {
        let files: Vec<(u64, Arc<FileAccess>)> = version
            .files()
            .filter_map(|(_, _, f)| {
                f.state()
                    .access()
                    .map(|a| (f.number(), Arc::clone(&a.file)))
            })
            .collect();
        let refs: Vec<(u64, &FileAccess)> = files.iter().map(|(n, a)| (*n, a.as_ref())).collect();
        encode(state, &refs)
    }

    #[test]
    fn a_snapshot_round_trips_and_damage_is_detected() {
        let (version, merlin) = version_with_access();
        for _ in 0..5 {
            let ticket = merlin.begin_lookup();
            if let Some(file) = version
                .files()
                .next()
                .and_then(|(_, _, f)| f.state().access().cloned())
            {
                file.file.record(ticket.lookup_number, false);
            }
            merlin.end_lookup(ticket);
        }
        let bytes = encode_live(&merlin.state(), &version);
        let restored = decode(&bytes).expect("decodes");
        assert_eq!(restored.state.lookups, 5);
        assert_eq!(restored.files.len(), 3);
        for (_, _, file) in version.files() {
            let original = file.state().access().expect("access");
            let mut a = Vec::new();
            let mut b = Vec::new();
            original.file.encode_to(&mut a);
            restored.files[&file.number()].encode_to(&mut b);
            assert_eq!(a, b, "file {}", file.number());
        }
        // Every truncation and every flipped byte is rejected, never a panic.
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).is_none(), "truncated to {len}");
        }
        for index in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x40;
            assert!(decode(&damaged).is_none(), "flipped byte {index}");
        }
    }

    #[test]
    fn save_and_load_through_the_file_system() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = crate::env::RealFileSystem;
        assert!(load(&fs, dir.path()).expect("no file").is_none());
        let (version, merlin) = version_with_access();
        save(&fs, dir.path(), &encode_live(&merlin.state(), &version)).expect("save");
        let restored = load(&fs, dir.path()).expect("load").expect("present");
        assert_eq!(restored.files.len(), 3);
        std::fs::write(dir.path().join(ACCESS_FILE), b"garbage").expect("write");
        assert!(matches!(
            load(&fs, dir.path()),
            Err(Error::Corruption { .. })
        ));
    }
}
