//! `WriteBatch`: several puts and deletes applied atomically, and its log encoding.
//!
//! ```text
//! sequence: fixed64   sequence number of the first entry (set at commit)
//! count:    fixed32   number of entries
//! entries:  kind u8 (1 = put, 0 = delete), varint key length, key,
//!           and for puts varint value length, value
//! ```

use crate::coding::{put_length_prefixed, Decoder};
use crate::key::{SequenceNumber, ValueKind};
use crate::limits::{MAX_KEY_BYTES, MAX_VALUE_BYTES};

/// Bytes of the batch header (sequence + count).
pub(crate) const BATCH_HEADER_LEN: usize = 12;

/// An ordered group of puts and deletes that is written atomically: after a crash either all of
/// them are in the store or none is.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("entries", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One decoded entry of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchEntry<'a> {
    pub(crate) kind: ValueKind,
    pub(crate) key: &'a [u8],
    pub(crate) value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; BATCH_HEADER_LEN],
            count: 0,
        }
    }

    /// An empty batch with room for about `bytes` of keys and values (one allocation for a
    /// single put instead of several as the encoding grows).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(BATCH_HEADER_LEN + bytes + 2 * 10 + 1);
        rep.resize(BATCH_HEADER_LEN, 0);
        WriteBatch { rep, count: 0 }
    }

    /// Adds `key -> value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.rep.push(ValueKind::Value as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
        self.count += 1;
        self
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.rep.push(ValueKind::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        self.count += 1;
        self
    }

    /// Adds a put (`Value`) or a deletion (`Deletion`, `value` ignored).
    pub(crate) fn push_entry(&mut self, kind: ValueKind, key: &[u8], value: &[u8]) {
        match kind {
            ValueKind::Value => self.put(key, value),
            ValueKind::Deletion => self.delete(key),
        };
    }

    /// Bytes the batch can hold before it reallocates.
    pub(crate) fn capacity(&self) -> usize {
        self.rep.capacity()
    }

    /// Number of puts and deletes.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.rep.truncate(BATCH_HEADER_LEN);
        self.count = 0;
    }

    /// Size of the encoded batch in bytes.
    pub fn approximate_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Stamps the sequence number and count into the header and returns the encoding.
    pub(crate) fn encode_with_sequence(&mut self, sequence: SequenceNumber) -> &[u8] {
        self.rep[..8].copy_from_slice(&sequence.to_le_bytes());
        self.rep[8..BATCH_HEADER_LEN].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// Iterates the entries in insertion order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = BatchEntry<'_>> + '_ {
        // The batch was built by `put`/`delete`, so decoding cannot fail.
        decode_entries(&self.rep[BATCH_HEADER_LEN..]).map_while(|entry| entry.ok())
    }

    /// Decodes a batch read back from a log: its first sequence number and entries. `Err` names
    /// what is malformed.
    pub(crate) fn decode(bytes: &[u8]) -> Result<(SequenceNumber, Vec<BatchEntry<'_>>), String> {
        let mut decoder = Decoder::new(bytes);
        let sequence = decoder.fixed64().ok_or("batch header truncated")?;
        let count = decoder.fixed32().ok_or("batch header truncated")?;
        let entries = decode_entries(&bytes[BATCH_HEADER_LEN..]).collect::<Result<Vec<_>, _>>()?;
        // A log record passed its checksum, so it was written by the engine, which enforces
        // the limits; an entry over them is malformed, not something to insert (the memtable's
        // node layout relies on the limits).
        if let Some(entry) = entries
            .iter()
            .find(|entry| entry.key.len() > MAX_KEY_BYTES || entry.value.len() > MAX_VALUE_BYTES)
        {
            return Err(format!(
                "batch entry of a {}-byte key and a {}-byte value exceeds the limits ({MAX_KEY_BYTES} and {MAX_VALUE_BYTES} bytes)",
                entry.key.len(),
                entry.value.len()
            ));
        }
        if entries.len() != count as usize {
            return Err(format!(
                "batch header says {count} entries but {} were decoded",
                entries.len()
            ));
        }
        Ok((sequence, entries))
    }
}

fn decode_entries(bytes: &[u8]) -> impl Iterator<Item = Result<BatchEntry<'_>, String>> + '_ {
    let mut decoder = Decoder::new(bytes);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || decoder.is_empty() {
            return None;
        }
        let entry = (|| {
            let kind = ValueKind::from_byte(decoder.u8()?)?;
            let key = decoder.length_prefixed()?;
            let value = match kind {
                ValueKind::Value => decoder.length_prefixed()?,
                ValueKind::Deletion => &[][..],
            };
            Some(BatchEntry { kind, key, value })
        })();
        if entry.is_none() {
            failed = true;
        }
        Some(entry.ok_or_else(|| "malformed batch entry".to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trips_through_its_encoding() {
        let mut batch = WriteBatch::new();
        batch.put(b"a", b"1").delete(b"b").put(b"", b"");
        assert_eq!(batch.len(), 3);
        let encoded = batch.encode_with_sequence(77).to_vec();
        let (sequence, entries) = WriteBatch::decode(&encoded).expect("decode");
        assert_eq!(sequence, 77);
        assert_eq!(entries, batch.entries().collect::<Vec<_>>());
        assert_eq!(entries[1].kind, ValueKind::Deletion);
        assert_eq!(entries[1].key, b"b");
    }

    #[test]
    fn a_presized_batch_encodes_like_a_growing_one() {
        let mut grown = WriteBatch::new();
        grown.put(b"key", vec![7u8; 300]).delete(b"gone");
        let mut presized = WriteBatch::with_capacity(3 + 300);
        presized.put(b"key", vec![7u8; 300]).delete(b"gone");
        assert_eq!(presized, grown);
        assert_eq!(
            presized.encode_with_sequence(9),
            grown.encode_with_sequence(9)
        );
    }

    #[test]
    fn entries_over_the_limits_are_malformed() {
        for (key, value) in [
            (vec![1u8; MAX_KEY_BYTES + 1], Vec::new()),
            (b"k".to_vec(), vec![2u8; MAX_VALUE_BYTES + 1]),
        ] {
            let mut batch = WriteBatch::new();
            batch.put(&key, &value);
            let encoded = batch.encode_with_sequence(5).to_vec();
            let error = WriteBatch::decode(&encoded).expect_err("over the limits");
            assert!(error.contains("exceeds the limits"), "{error}");
        }
        let mut batch = WriteBatch::new();
        batch.put(vec![1u8; MAX_KEY_BYTES], b"v");
        let encoded = batch.encode_with_sequence(5).to_vec();
        assert!(WriteBatch::decode(&encoded).is_ok());
    }

    #[test]
    fn truncated_batches_are_rejected() {
        let mut batch = WriteBatch::new();
        batch.put(b"key", b"value").delete(b"other");
        let encoded = batch.encode_with_sequence(1).to_vec();
        for cut in 0..encoded.len() {
            assert!(WriteBatch::decode(&encoded[..cut]).is_err(), "cut at {cut}");
        }
    }
}
