//! The properties block: facts about a table file, written last so they are exact.
//!
//! ```text
//! format version varint (1)
//! entries        varint
//! data blocks    varint
//! smallest key   varint length + internal key
//! largest key    varint length + internal key
//! smallest seq   varint
//! largest seq    varint
//! bits per key   fixed64 (f64 bits; 0 = no filter)
//! filter bytes   varint
//! level          varint (level the file was written to)
//! run id         varint (sorted run the file was written into)
//! ```

use crate::coding::{put_fixed64, put_length_prefixed, put_varint64, Decoder};

const PROPERTIES_FORMAT_VERSION: u64 = 1;

/// What a table file says about itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableProperties {
    pub(crate) entries: u64,
    pub(crate) data_blocks: u64,
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
    pub(crate) smallest_sequence: u64,
    pub(crate) largest_sequence: u64,
    pub(crate) bits_per_key: f64,
    pub(crate) filter_bytes: u64,
    pub(crate) level: u64,
    pub(crate) run_id: u64,
}

impl TableProperties {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint64(&mut out, PROPERTIES_FORMAT_VERSION);
        put_varint64(&mut out, self.entries);
        put_varint64(&mut out, self.data_blocks);
        put_length_prefixed(&mut out, &self.smallest);
        put_length_prefixed(&mut out, &self.largest);
        put_varint64(&mut out, self.smallest_sequence);
        put_varint64(&mut out, self.largest_sequence);
        put_fixed64(&mut out, self.bits_per_key.to_bits());
        put_varint64(&mut out, self.filter_bytes);
        put_varint64(&mut out, self.level);
        put_varint64(&mut out, self.run_id);
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<TableProperties, String> {
        let mut decoder = Decoder::new(bytes);
        let version = decoder.varint64().ok_or("properties block truncated")?;
        if version != PROPERTIES_FORMAT_VERSION {
            return Err(format!("unknown properties format version {version}"));
        }
        let properties = (|| {
            Some(TableProperties {
                entries: decoder.varint64()?,
                data_blocks: decoder.varint64()?,
                smallest: decoder.length_prefixed()?.to_vec(),
                largest: decoder.length_prefixed()?.to_vec(),
                smallest_sequence: decoder.varint64()?,
                largest_sequence: decoder.varint64()?,
                bits_per_key: f64::from_bits(decoder.fixed64()?),
                filter_bytes: decoder.varint64()?,
                level: decoder.varint64()?,
                run_id: decoder.varint64()?,
            })
        })()
        .ok_or("properties block truncated")?;
        if !properties.bits_per_key.is_finite() || properties.bits_per_key < 0.0 {
            return Err(format!(
                "properties hold an invalid bits per key {}",
                properties.bits_per_key
            ));
        }
        Ok(properties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip_and_reject_truncation() {
        let properties = TableProperties {
            entries: 10,
            data_blocks: 2,
            smallest: b"a12345678".to_vec(),
            largest: b"z12345678".to_vec(),
            smallest_sequence: 3,
            largest_sequence: 30,
            bits_per_key: 1.75,
            filter_bytes: 128,
            level: 2,
            run_id: 9,
        };
        let encoded = properties.encode();
        assert_eq!(TableProperties::decode(&encoded), Ok(properties));
        for cut in 0..encoded.len() {
            assert!(TableProperties::decode(&encoded[..cut]).is_err());
        }
    }
}
