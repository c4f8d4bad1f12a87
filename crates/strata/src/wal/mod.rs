//! The write-ahead log: record framing, the writer, the reader and its recovery modes.
//!
//! The same framing carries the manifest (`version::manifest`). Every record is
//!
//! ```text
//! crc32c: fixed32   over kind || length || payload
//! length: fixed32   payload length in bytes
//! kind:   u8        1 = full record (the only kind in format version 1)
//! payload: length bytes
//! ```
//!
//! A record is written with one `append`, so a process crash leaves a prefix of whole records and at
//! most one incomplete record at the end (a *torn tail*). What the reader does with damage is the
//! [`WalRecoveryMode`].

mod batch;

pub use batch::WriteBatch;

use std::path::{Path, PathBuf};

use crate::coding::get_fixed32;
use crate::env::WritableFile;
use crate::error::{Error, Result};

/// Bytes of framing before each payload.
pub(crate) const RECORD_HEADER_LEN: usize = 9;
const KIND_FULL: u8 = 1;

/// What to do when a log has a damaged record (checksum mismatch, impossible length, or a record
/// cut short by a crash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// Keep every complete record before the first damage, drop the damaged record and everything
    /// after it (in this log and in any later log, so the store still holds a prefix of the
    /// acknowledged writes), and report the dropped bytes in `Stats` and the info log. The default:
    /// a crash mid-write always leaves a torn tail, and this never invents data.
    #[default]
    TolerateCorruptedTail,
    /// Refuse to open if any log has damage, even a torn tail.
    AbsoluteConsistency,
}

/// Appends framed records to a log file.
pub(crate) struct LogWriter {
    file: Box<dyn WritableFile>,
}

impl LogWriter {
    pub(crate) fn new(file: Box<dyn WritableFile>) -> Self {
        LogWriter { file }
    }

    /// Frames `payload` and appends it (buffered; call `flush` or `sync`).
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        let length = u32::try_from(payload.len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "log record of {} bytes exceeds the 4 GiB record limit",
                payload.len()
            ))
        })?;
        // The checksum covers `kind || length || payload`; kind and length are checksummed as
        // one 5-byte run.
        let mut kind_and_length = [0u8; 5];
        kind_and_length[0] = KIND_FULL;
        kind_and_length[1..].copy_from_slice(&length.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&kind_and_length), payload);
        let mut header = [0u8; RECORD_HEADER_LEN];
        header[..4].copy_from_slice(&crc.to_le_bytes());
        header[4..8].copy_from_slice(&length.to_le_bytes());
        header[8] = KIND_FULL;
        self.file.append(&header)?;
        self.file.append(payload)
    }

    /// Hands buffered records to the operating system (they survive a process crash).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Makes records durable (they survive a power loss).
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.file.len()
    }

    /// Syncs what was flushed so far without the writer (`WritableFile::sync_handle`).
    pub(crate) fn sync_handle(&self) -> Option<crate::env::SyncHandle> {
        self.file.sync_handle()
    }
}

/// Why reading a log stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogDamageKind {
    /// The last record is cut short by the end of the file (the usual result of a crash).
    Truncated,
    /// A complete record whose checksum, kind or length is wrong.
    Corrupt(String),
}

/// Where and how a log is damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogDamage {
    pub(crate) offset: u64,
    pub(crate) kind: LogDamageKind,
    /// Bytes from the damage to the end of the file, not replayed.
    pub(crate) dropped_bytes: u64,
}

impl LogDamage {
    pub(crate) fn to_error(&self, file: &Path) -> Error {
        let reason = match &self.kind {
            LogDamageKind::Truncated => "log record cut short by the end of the file".to_string(),
            LogDamageKind::Corrupt(reason) => reason.clone(),
        };
        Error::corruption(file, self.offset, reason)
    }
}

/// The complete records of a log (each with its offset) and the damage that stopped the read.
#[derive(Debug)]
pub(crate) struct LogContents {
    pub(crate) records: Vec<(u64, Vec<u8>)>,
    pub(crate) damage: Option<LogDamage>,
}

/// Splits a whole log file into records, stopping at the first damaged one.
pub(crate) fn read_log(bytes: &[u8]) -> LogContents {
    let mut records = Vec::new();
    let mut offset = 0usize;
    let total = bytes.len() as u64;
    let damage = |offset: usize, kind| LogDamage {
        offset: offset as u64,
        kind,
        dropped_bytes: total - offset as u64,
    };
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        if rest.len() < RECORD_HEADER_LEN {
            return LogContents {
                records,
                damage: Some(damage(offset, LogDamageKind::Truncated)),
            };
        }
        let (Some(crc), Some(length)) = (get_fixed32(rest), get_fixed32(&rest[4..])) else {
            return LogContents {
                records,
                damage: Some(damage(offset, LogDamageKind::Truncated)),
            };
        };
        let kind = rest[8];
        let length = length as usize;
        if rest.len() - RECORD_HEADER_LEN < length {
            // Either a torn tail or a damaged length field. After a crash nothing follows a torn
            // tail; behind a damaged length the log's later records are still there, so a sound
            // record after this offset means damage, not truncation. (Taken for a torn tail, a
            // damaged length in a manifest silently dropped every later edit, and open then
            // deleted the tables those edits had added as orphans.)
            let kind = match sound_record_after(bytes, offset as u64) {
                Some(next) => LogDamageKind::Corrupt(format!(
                    "record length runs past the end of the file, but a sound record follows \
                     at offset {next}: a damaged length field, not a torn tail"
                )),
                None => LogDamageKind::Truncated,
            };
            return LogContents {
                records,
                damage: Some(damage(offset, kind)),
            };
        }
        let payload = &rest[RECORD_HEADER_LEN..RECORD_HEADER_LEN + length];
        let mut actual = crc32c::crc32c(&[kind]);
        actual = crc32c::crc32c_append(actual, &(length as u32).to_le_bytes());
        actual = crc32c::crc32c_append(actual, payload);
        if actual != crc {
            return LogContents {
                records,
                damage: Some(damage(
                    offset,
                    LogDamageKind::Corrupt(format!(
                        "log record checksum mismatch (stored {crc:#010x}, computed {actual:#010x})"
                    )),
                )),
            };
        }
        if kind != KIND_FULL {
            return LogContents {
                records,
                damage: Some(damage(
                    offset,
                    LogDamageKind::Corrupt(format!("unknown log record kind {kind}")),
                )),
            };
        }
        records.push((offset as u64, payload.to_vec()));
        offset += RECORD_HEADER_LEN + length;
    }
    LogContents {
        records,
        damage: None,
    }
}

/// Bytes of payload `sound_record_after` checksums at most: a torn tail is one record, so a
/// search this long finds the next record after a damaged length field in any real log.
const RECORD_SEARCH_BYTES: usize = 64 << 20;

/// The offset of the first complete, checksummed record that starts after `from`, if any.
pub(crate) fn sound_record_after(bytes: &[u8], from: u64) -> Option<u64> {
    let start = usize::try_from(from).ok()?.checked_add(1)?;
    let mut budget = RECORD_SEARCH_BYTES;
    for offset in start..bytes.len().saturating_sub(RECORD_HEADER_LEN - 1) {
        let rest = bytes.get(offset..)?;
        let (Some(crc), Some(length)) = (get_fixed32(rest), rest.get(4..).and_then(get_fixed32))
        else {
            return None;
        };
        let length = length as usize;
        if rest.get(8) != Some(&KIND_FULL) || length > rest.len() - RECORD_HEADER_LEN {
            continue;
        }
        if length > budget {
            return None;
        }
        budget -= length;
        let mut actual = crc32c::crc32c(&[KIND_FULL]);
        actual = crc32c::crc32c_append(actual, &(length as u32).to_le_bytes());
        actual =
            crc32c::crc32c_append(actual, &rest[RECORD_HEADER_LEN..RECORD_HEADER_LEN + length]);
        if actual == crc {
            return Some(offset as u64);
        }
    }
    None
}

/// Name of the `number`-th write-ahead log in `dir`.
pub(crate) fn wal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FileSystem, RealFileSystem};

    fn write_log(records: &[&[u8]]) -> (tempfile::TempDir, Vec<u8>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("test.log");
        let fs = RealFileSystem;
        let mut writer = LogWriter::new(fs.create_writable(&path).expect("create"));
        for record in records {
            writer.add_record(record).expect("add");
        }
        writer.sync().expect("sync");
        let bytes = fs.read_to_end(&path).expect("read");
        (dir, bytes)
    }

    #[test]
    fn records_round_trip() {
        let big = vec![7u8; 100_000];
        let (_dir, bytes) = write_log(&[b"one", b"", &big, b"four"]);
        let contents = read_log(&bytes);
        assert!(contents.damage.is_none());
        let payloads: Vec<&[u8]> = contents.records.iter().map(|(_, r)| &r[..]).collect();
        assert_eq!(payloads, vec![&b"one"[..], b"", &big[..], b"four"]);
    }

    #[test]
    fn every_truncation_keeps_the_complete_prefix() {
        let (_dir, bytes) = write_log(&[b"alpha", b"beta", b"gamma"]);
        let ends = [
            RECORD_HEADER_LEN + 5,
            2 * RECORD_HEADER_LEN + 9,
            3 * RECORD_HEADER_LEN + 14,
        ];
        for cut in 0..=bytes.len() {
            let contents = read_log(&bytes[..cut]);
            let complete = ends.iter().filter(|&&end| end <= cut).count();
            assert_eq!(contents.records.len(), complete, "cut at {cut}");
            let at_boundary = cut == 0 || ends.contains(&cut);
            assert_eq!(contents.damage.is_some(), !at_boundary, "cut at {cut}");
            if let Some(damage) = contents.damage {
                assert_eq!(damage.kind, LogDamageKind::Truncated);
                assert_eq!(damage.offset + damage.dropped_bytes, cut as u64);
            }
        }
    }

    #[test]
    fn a_flipped_byte_stops_the_read_at_that_record() {
        let (_dir, bytes) = write_log(&[b"alpha", b"beta", b"gamma"]);
        let second = (RECORD_HEADER_LEN + 5) as u64;
        for position in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[position] ^= 0x40;
            let contents = read_log(&damaged);
            let damage = contents.damage.expect("damage must be detected");
            // Nothing after the damaged record is returned, and nothing before it is lost.
            assert!(contents
                .records
                .iter()
                .all(|(offset, _)| *offset < damage.offset));
            if (position as u64) >= second {
                assert_eq!(
                    contents.records.len(),
                    1 + usize::from(position >= 2 * RECORD_HEADER_LEN + 9)
                );
            }
            assert!(
                contents
                    .records
                    .iter()
                    .all(|(_, r)| [&b"alpha"[..], b"beta", b"gamma"].contains(&&r[..])),
                "a damaged read never invents a record"
            );
        }
    }
}
