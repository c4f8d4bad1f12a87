//! The properties block: facts about a table file, written last so they are exact.
//!
//! ```text
//! format version varint (1 or 2)
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
//! filter modules varint (versions 2 and 3: number of filter modules, 0..=6 in version 3)
//! range filter   varint offset + varint size (version 3 only: the range filter block)
//! ```
//!
//! `bits per key` is the file's total over all filter modules and `filter bytes` the total size of
//! the modules' serialized Bloom filters (block contents, without trailers or the modular filter
//! index): the memory the filter occupies once cached. Their combined FPR is the product of the
//! modules' FPRs (DESIGN.md §1), by the formula `exp(-ln2sq * bits per key)`.
//!
//! Version 2 differs from version 1 only by the trailing module count. It is written only for
//! files whose filter is split into modules, so files with zero or one module keep the version-1
//! bytes (see `format.rs` on table format versions); a version-1 block means one module if
//! `filter bytes > 0` and none otherwise.
//!
//! Version 3 adds the handle of the file's range filter block (`filter/range.rs`,
//! `Options::range_filter_bits`) after the module count, which it always holds (0 to 6). It is
//! written only for files with a range filter, so every other file keeps its version-1 or -2
//! bytes, and a build from before range filters refuses such a file by its version instead of
//! ignoring a filter it cannot read.

use super::format::BlockHandle;
use crate::coding::{put_fixed64, put_length_prefixed, put_varint64, Decoder};
use crate::filter::modular::MAX_MODULES;

/// Properties of a file with at most one filter module.
const PROPERTIES_FORMAT_VERSION: u64 = 1;

/// Properties of a file with a modular filter: version 1 plus the module count.
const PROPERTIES_FORMAT_VERSION_MODULAR_FILTER: u64 = 2;

/// Properties of a file with a range filter: the module count and the range filter's handle.
const PROPERTIES_FORMAT_VERSION_RANGE_FILTER: u64 = 3;

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
    /// Number of filter modules (DESIGN.md §1): 0 = no filter, 1 = a single Bloom filter.
    pub(crate) filter_modules: u64,
    /// The range filter block (`filter/range.rs`), if the file has one.
    pub(crate) range_filter: Option<BlockHandle>,
}

impl TableProperties {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let version = match (self.range_filter, self.filter_modules > 1) {
            (Some(_), _) => PROPERTIES_FORMAT_VERSION_RANGE_FILTER,
            (None, true) => PROPERTIES_FORMAT_VERSION_MODULAR_FILTER,
            (None, false) => PROPERTIES_FORMAT_VERSION,
        };
        put_varint64(&mut out, version);
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
        if version >= PROPERTIES_FORMAT_VERSION_MODULAR_FILTER {
            put_varint64(&mut out, self.filter_modules);
        }
        if let Some(handle) = self.range_filter {
            handle.encode_to(&mut out);
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<TableProperties, String> {
        let mut decoder = Decoder::new(bytes);
        let version = decoder.varint64().ok_or("properties block truncated")?;
        if !(PROPERTIES_FORMAT_VERSION..=PROPERTIES_FORMAT_VERSION_RANGE_FILTER).contains(&version)
        {
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
                filter_modules: 0,
                range_filter: None,
            })
        })()
        .ok_or("properties block truncated")?;
        let mut properties = properties;
        properties.filter_modules = match version {
            PROPERTIES_FORMAT_VERSION => u64::from(properties.filter_bytes > 0),
            _ => {
                let modules = decoder.varint64().ok_or("properties block truncated")?;
                // Version 2 is written only for two or more modules; version 3 for any count.
                let least = if version == PROPERTIES_FORMAT_VERSION_MODULAR_FILTER {
                    2
                } else {
                    0
                };
                if !(least..=MAX_MODULES as u64).contains(&modules) {
                    return Err(format!(
                        "properties list {modules} filter modules, outside {least}..={MAX_MODULES}"
                    ));
                }
                modules
            }
        };
        if version == PROPERTIES_FORMAT_VERSION_RANGE_FILTER {
            let handle =
                BlockHandle::decode_from(&mut decoder).ok_or("properties block truncated")?;
            if handle.size == 0 {
                return Err("properties name an empty range filter block".into());
            }
            properties.range_filter = Some(handle);
        }
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

    fn sample() -> TableProperties {
        TableProperties {
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
            filter_modules: 1,
            range_filter: None,
        }
    }

    #[test]
    fn properties_round_trip_and_reject_truncation() {
        let single = sample();
        let no_filter = TableProperties {
            bits_per_key: 0.0,
            filter_bytes: 0,
            filter_modules: 0,
            ..sample()
        };
        let modular = TableProperties {
            bits_per_key: 6.5,
            filter_bytes: 900,
            filter_modules: 4,
            ..sample()
        };
        let ranged = |properties: &TableProperties| TableProperties {
            range_filter: Some(BlockHandle::new(4096, 300)),
            ..properties.clone()
        };
        let with_range_filters = [ranged(&single), ranged(&no_filter), ranged(&modular)];
        for properties in [single, no_filter, modular]
            .into_iter()
            .chain(with_range_filters)
        {
            let encoded = properties.encode();
            let version = match (properties.range_filter, properties.filter_modules > 1) {
                (Some(_), _) => 3,
                (None, true) => 2,
                (None, false) => 1,
            };
            assert_eq!(encoded.first(), Some(&version));
            assert_eq!(TableProperties::decode(&encoded), Ok(properties));
            for cut in 0..encoded.len() {
                assert!(TableProperties::decode(&encoded[..cut]).is_err());
            }
        }
    }

    #[test]
    fn single_module_properties_keep_the_version_1_bytes() {
        let encoded = sample().encode();
        // Version 1 ends with run id 9; no module count follows.
        assert_eq!(encoded.first(), Some(&1));
        assert_eq!(encoded.last(), Some(&9));
    }

    #[test]
    fn an_empty_range_filter_handle_or_an_unknown_version_is_rejected() {
        let mut empty = TableProperties {
            range_filter: Some(BlockHandle::new(4096, 1)),
            ..sample()
        }
        .encode();
        // The handle's size is the last varint: 1 -> 0.
        if let Some(last) = empty.last_mut() {
            *last = 0;
        }
        let error = TableProperties::decode(&empty).expect_err("empty handle");
        assert!(error.contains("empty range filter"), "{error}");
        let mut unknown = sample().encode();
        unknown[0] = 4;
        let error = TableProperties::decode(&unknown).expect_err("version 4");
        assert!(error.contains("version 4"), "{error}");
    }

    #[test]
    fn module_count_outside_the_limits_is_rejected() {
        for modules in [0u8, 1, 7] {
            let mut encoded = TableProperties {
                filter_modules: 2,
                ..sample()
            }
            .encode();
            if let Some(last) = encoded.last_mut() {
                *last = modules;
            }
            let error = TableProperties::decode(&encoded).expect_err("bad module count");
            assert!(error.contains("filter modules"), "{error}");
        }
    }
}
