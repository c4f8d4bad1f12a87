//! Version edits: the records of the manifest. Each edit says which table files a flush or
//! compaction added (with their level and sorted run) and removed, and advances the counters.
//!
//! Encoding: a sequence of `(varint tag, fields)`; see `docs/FORMAT.md`.
//!
//! | tag | field |
//! | --- | --- |
//! | 1 | log number (varint): WALs below it are fully flushed |
//! | 2 | next file number (varint) |
//! | 3 | last sequence (varint) |
//! | 4 | next run id (varint) |
//! | 5 | new file: level, run id, number, file bytes, entries, smallest key (length-prefixed), largest key, smallest sequence, largest sequence (varints), bits per key (fixed64 f64 bits), filter bytes (varint) |
//! | 6 | deleted file: level, run id, number (varints) |
//! | 7 | format version (varint), first in every manifest |
//! | 8 | policy state: owner (length-prefixed UTF-8), state (length-prefixed bytes) |
//! | 9 | filter layout of the new file just before it: file number, partitions (`>= 1`), family (0 Bloom, 1 Ribbon) (varints) |
//!
//! Format version 2 added tag 8, version 3 tag 9 (a file without it has an unpartitioned Bloom
//! filter, or none).
//! Older manifests still open; every manifest this build starts is version 3.

use std::sync::Arc;

use super::{FileMetadata, FileState};
use crate::coding::{put_fixed64, put_length_prefixed, put_varint64, Decoder};

const TAG_LOG_NUMBER: u64 = 1;
const TAG_NEXT_FILE_NUMBER: u64 = 2;
const TAG_LAST_SEQUENCE: u64 = 3;
const TAG_NEXT_RUN_ID: u64 = 4;
const TAG_NEW_FILE: u64 = 5;
const TAG_DELETED_FILE: u64 = 6;
const TAG_FORMAT_VERSION: u64 = 7;
const TAG_POLICY_STATE: u64 = 8;
const TAG_FILTER_LAYOUT: u64 = 9;

/// The manifest format version this build writes.
pub(crate) const MANIFEST_FORMAT_VERSION: u64 = 3;

/// The oldest manifest format version this build reads (version 1 has no policy state).
const OLDEST_MANIFEST_FORMAT_VERSION: u64 = 1;

/// Longest policy-state owner name accepted in a manifest.
const MAX_POLICY_OWNER_BYTES: usize = 256;

/// A table file an edit adds: the file's metadata and where it goes. The manifest's new-file
/// record is this, field for field (see [`VersionEdit::encode`]); a file's access statistics
/// travel in its metadata but are persisted separately (`db::access_file`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AddedFile {
    pub(crate) level: usize,
    pub(crate) run_id: u64,
    pub(crate) file: Arc<FileMetadata>,
}

/// State a policy keeps in the manifest so that it survives a restart (a compaction policy's
/// logical level count, say): opaque bytes under the owner's name. The policy that wrote them
/// decodes them; any other ignores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyState {
    /// Who the state belongs to, e.g. `"garnering"`.
    pub owner: String,
    /// The state, in the owner's own encoding.
    pub bytes: Vec<u8>,
}

/// A removed table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeletedFile {
    pub(crate) level: usize,
    pub(crate) run_id: u64,
    pub(crate) number: u64,
}

/// One atomic change to the tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct VersionEdit {
    pub(crate) format_version: Option<u64>,
    pub(crate) log_number: Option<u64>,
    pub(crate) next_file_number: Option<u64>,
    pub(crate) last_sequence: Option<u64>,
    pub(crate) next_run_id: Option<u64>,
    pub(crate) new_files: Vec<AddedFile>,
    pub(crate) deleted_files: Vec<DeletedFile>,
    /// Policy states set by this edit (later records of the same owner replace earlier ones).
    pub(crate) policy_states: Vec<PolicyState>,
}

impl VersionEdit {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut counter = |tag: u64, value: Option<u64>| {
            if let Some(value) = value {
                put_varint64(&mut out, tag);
                put_varint64(&mut out, value);
            }
        };
        counter(TAG_FORMAT_VERSION, self.format_version);
        counter(TAG_LOG_NUMBER, self.log_number);
        counter(TAG_NEXT_FILE_NUMBER, self.next_file_number);
        counter(TAG_LAST_SEQUENCE, self.last_sequence);
        counter(TAG_NEXT_RUN_ID, self.next_run_id);
        for file in &self.deleted_files {
            put_varint64(&mut out, TAG_DELETED_FILE);
            put_varint64(&mut out, file.level as u64);
            put_varint64(&mut out, file.run_id);
            put_varint64(&mut out, file.number);
        }
        for AddedFile {
            level,
            run_id,
            file,
        } in &self.new_files
        {
            put_varint64(&mut out, TAG_NEW_FILE);
            put_varint64(&mut out, *level as u64);
            put_varint64(&mut out, *run_id);
            put_varint64(&mut out, file.number);
            put_varint64(&mut out, file.file_bytes);
            put_varint64(&mut out, file.entries);
            put_length_prefixed(&mut out, &file.smallest);
            put_length_prefixed(&mut out, &file.largest);
            put_varint64(&mut out, file.smallest_sequence);
            put_varint64(&mut out, file.largest_sequence);
            put_fixed64(&mut out, file.bits_per_key.to_bits());
            put_varint64(&mut out, file.filter_bytes);
            if file.filter_layout != crate::FilterLayout::default() {
                put_varint64(&mut out, TAG_FILTER_LAYOUT);
                put_varint64(&mut out, file.number);
                put_varint64(&mut out, u64::from(file.filter_layout.partitions));
                put_varint64(&mut out, file.filter_layout.family.code());
            }
        }
        for state in &self.policy_states {
            put_varint64(&mut out, TAG_POLICY_STATE);
            put_length_prefixed(&mut out, state.owner.as_bytes());
            put_length_prefixed(&mut out, &state.bytes);
        }
        out
    }

    /// Decodes an edit; `Err` says what is malformed.
    // Long: one arm per record tag of docs/FORMAT.md's manifest, each validated where it is read;
    // split up, the tags would lose the one place that lists them in order.
    pub(crate) fn decode(bytes: &[u8]) -> Result<VersionEdit, String> {
        let mut edit = VersionEdit::default();
        let mut decoder = Decoder::new(bytes);
        let mut saw_filter_layout = false;
        let truncated = |what: &str| format!("version edit truncated in {what}");
        while !decoder.is_empty() {
            let tag = decoder.varint64().ok_or_else(|| truncated("tag"))?;
            match tag {
                TAG_FORMAT_VERSION | TAG_LOG_NUMBER | TAG_NEXT_FILE_NUMBER | TAG_LAST_SEQUENCE
                | TAG_NEXT_RUN_ID => {
                    let value = decoder.varint64().ok_or_else(|| truncated("counter"))?;
                    let slot = match tag {
                        TAG_FORMAT_VERSION => &mut edit.format_version,
                        TAG_LOG_NUMBER => &mut edit.log_number,
                        TAG_NEXT_FILE_NUMBER => &mut edit.next_file_number,
                        TAG_LAST_SEQUENCE => &mut edit.last_sequence,
                        _ => &mut edit.next_run_id,
                    };
                    *slot = Some(value);
                }
                TAG_DELETED_FILE => {
                    let mut field = || decoder.varint64().ok_or_else(|| truncated("deleted file"));
                    let level = field()? as usize;
                    let run_id = field()?;
                    let number = field()?;
                    edit.deleted_files.push(DeletedFile {
                        level,
                        run_id,
                        number,
                    });
                }
                TAG_NEW_FILE => {
                    let (level, run_id, file) = (|| {
                        let level = decoder.varint64()? as usize;
                        let run_id = decoder.varint64()?;
                        let number = decoder.varint64()?;
                        let file = FileMetadata {
                            number,
                            file_bytes: decoder.varint64()?,
                            entries: decoder.varint64()?,
                            smallest: decoder.length_prefixed()?.to_vec(),
                            largest: decoder.length_prefixed()?.to_vec(),
                            smallest_sequence: decoder.varint64()?,
                            largest_sequence: decoder.varint64()?,
                            bits_per_key: f64::from_bits(decoder.fixed64()?),
                            filter_bytes: decoder.varint64()?,
                            filter_layout: crate::FilterLayout::default(),
                            state: FileState::new(number, None),
                        };
                        Some((level, run_id, file))
                    })()
                    .ok_or_else(|| truncated("new file"))?;
                    if level >= crate::limits::MAX_LEVELS {
                        return Err(format!(
                            "file {} is on level {level}, beyond the {} levels Strata supports",
                            file.number,
                            crate::limits::MAX_LEVELS
                        ));
                    }
                    edit.new_files.push(AddedFile {
                        level,
                        run_id,
                        file: Arc::new(file),
                    });
                }
                TAG_POLICY_STATE => {
                    let owner = decoder
                        .length_prefixed()
                        .ok_or_else(|| truncated("policy state owner"))?;
                    if owner.len() > MAX_POLICY_OWNER_BYTES {
                        return Err(format!(
                            "policy state owner of {} bytes (at most {MAX_POLICY_OWNER_BYTES})",
                            owner.len()
                        ));
                    }
                    let owner = std::str::from_utf8(owner)
                        .map_err(|_| "policy state owner is not UTF-8".to_string())?
                        .to_string();
                    let bytes = decoder
                        .length_prefixed()
                        .ok_or_else(|| truncated("policy state"))?
                        .to_vec();
                    edit.policy_states.push(PolicyState { owner, bytes });
                }
                TAG_FILTER_LAYOUT => {
                    let mut field = || decoder.varint64().ok_or_else(|| truncated("filter layout"));
                    let number = field()?;
                    let partitions = field()?;
                    let family = field()?;
                    let file = edit
                        .new_files
                        .last_mut()
                        .filter(|added| added.file.number == number)
                        .and_then(|added| Arc::get_mut(&mut added.file))
                        .ok_or_else(|| {
                            format!(
                                "filter layout of file {number}, which the record did not just add"
                            )
                        })?;
                    file.filter_layout = crate::FilterLayout {
                        partitions: u32::try_from(partitions)
                            .ok()
                            .filter(|&partitions| partitions >= 1)
                            .ok_or_else(|| {
                                format!(
                                    "file {number} has {partitions} filter partitions (1 to {})",
                                    u32::MAX
                                )
                            })?,
                        family: crate::FilterFamily::from_code(family).ok_or_else(|| {
                            format!("file {number} has filter family {family} (0 or 1)")
                        })?,
                    };
                    saw_filter_layout = true;
                }
                other => return Err(format!("unknown version edit tag {other}")),
            }
        }
        if let Some(version) = edit.format_version {
            if !(OLDEST_MANIFEST_FORMAT_VERSION..=MANIFEST_FORMAT_VERSION).contains(&version) {
                return Err(format!(
                    "manifest format version {version} is not supported (this build reads {OLDEST_MANIFEST_FORMAT_VERSION} to {MANIFEST_FORMAT_VERSION})"
                ));
            }
            if version < 2 && !edit.policy_states.is_empty() {
                return Err(format!(
                    "a format version {version} manifest record holds policy state (tag {TAG_POLICY_STATE}, added in version 2)"
                ));
            }
            if version < 3 && saw_filter_layout {
                return Err(format!(
                    "a format version {version} manifest record holds a filter layout (tag {TAG_FILTER_LAYOUT}, added in version 3)"
                ));
            }
        }
        Ok(edit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VersionEdit {
        VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(4),
            next_file_number: Some(9),
            last_sequence: Some(1234),
            next_run_id: Some(3),
            new_files: vec![AddedFile {
                level: 1,
                run_id: 2,
                file: Arc::new(
                    FileMetadata::new(7, b"a", b"z")
                        .with_file_bytes(4096)
                        .with_entries(100)
                        .with_sequences(1, 100)
                        .with_filter(2.75, 64),
                ),
            }],
            deleted_files: vec![DeletedFile {
                level: 0,
                run_id: 1,
                number: 5,
            }],
            policy_states: vec![PolicyState {
                owner: "garnering".into(),
                bytes: vec![1, 2, 3],
            }],
        }
    }

    #[test]
    fn edit_round_trips() {
        let edit = sample();
        assert_eq!(VersionEdit::decode(&edit.encode()), Ok(edit));
    }

    #[test]
    fn filter_layouts_round_trip_and_are_checked() {
        let laid_out = |number: u64, partitions: u32, family: crate::FilterFamily| AddedFile {
            level: 2,
            run_id: 3,
            file: Arc::new(
                FileMetadata::new(number, b"b", b"c")
                    .with_entries(10)
                    .with_filter(2.0, 32)
                    .with_filter_partitions(partitions)
                    .with_filter_family(family),
            ),
        };
        let mut edit = sample();
        edit.new_files
            .push(laid_out(8, 37, crate::FilterFamily::Bloom));
        edit.new_files
            .push(laid_out(9, 1, crate::FilterFamily::Ribbon));
        edit.new_files
            .push(laid_out(10, 5, crate::FilterFamily::Ribbon));
        let decoded = VersionEdit::decode(&edit.encode()).expect("decodes");
        assert_eq!(decoded, edit);
        let layouts: Vec<(u32, crate::FilterFamily)> = decoded
            .new_files
            .iter()
            .map(|added| (added.file.filter_partitions(), added.file.filter_family()))
            .collect();
        assert_eq!(
            layouts,
            vec![
                (1, crate::FilterFamily::Bloom),
                (37, crate::FilterFamily::Bloom),
                (1, crate::FilterFamily::Ribbon),
                (5, crate::FilterFamily::Ribbon),
            ]
        );

        // A record of tag 9 must follow the file it names, hold at least 1 partition and a known
        // family, and appear only in a version-3 manifest.
        let record = |number: u64, partitions: u64, family: u64| {
            let mut out = Vec::new();
            put_varint64(&mut out, TAG_FILTER_LAYOUT);
            put_varint64(&mut out, number);
            put_varint64(&mut out, partitions);
            put_varint64(&mut out, family);
            out
        };
        let mut one_file = sample();
        one_file.format_version = None;
        let base = one_file.encode();
        let with = |tail: Vec<u8>| [base.clone(), tail].concat();
        assert!(VersionEdit::decode(&with(record(7, 4, 1))).is_ok());
        for (number, partitions, family, reason) in [
            (8, 4, 0, "did not just add"),
            (7, 0, 0, "filter partitions"),
            (7, u64::from(u32::MAX) + 1, 0, "filter partitions"),
            (7, 4, 2, "filter family"),
        ] {
            let error = VersionEdit::decode(&with(record(number, partitions, family)))
                .expect_err("a malformed layout record is refused");
            assert!(error.contains(reason), "{error}");
        }
        assert!(
            VersionEdit::decode(&record(7, 4, 0)).is_err(),
            "no file before it"
        );
        let old = VersionEdit {
            format_version: Some(2),
            ..edit
        };
        let error = VersionEdit::decode(&old.encode()).expect_err("version 2 has no tag 9");
        assert!(error.contains("added in version 3"), "{error}");
    }

    #[test]
    fn truncated_or_unknown_edits_are_errors() {
        let encoded = sample().encode();
        for cut in 1..encoded.len() {
            // Some cuts land on a tag boundary and decode to a shorter, valid edit; none panics,
            // and none decodes to the full edit.
            if let Ok(edit) = VersionEdit::decode(&encoded[..cut]) {
                assert_ne!(edit, sample());
            }
        }
        assert!(VersionEdit::decode(&[99]).is_err());
        let wrong_version = VersionEdit {
            format_version: Some(99),
            ..Default::default()
        };
        assert!(VersionEdit::decode(&wrong_version.encode()).is_err());
        let old_with_state = VersionEdit {
            format_version: Some(1),
            ..sample()
        };
        assert!(
            VersionEdit::decode(&old_with_state.encode()).is_err(),
            "version 1 has no policy state"
        );
        let old = VersionEdit {
            format_version: Some(1),
            policy_states: Vec::new(),
            ..sample()
        };
        assert_eq!(VersionEdit::decode(&old.encode()), Ok(old));
    }
}
