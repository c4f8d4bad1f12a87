//! Block compression: which algorithm a table file's blocks use ([`CompressionPolicy`], chosen per
//! level like RocksDB's `compression_per_level` and `bottommost_compression`), and the codec that
//! turns a block's contents into what is stored and back.
//!
//! # Stored layout (`docs/FORMAT.md`, "Block compression")
//!
//! A block's trailer type byte (`format.rs`) says how its stored contents are encoded:
//!
//! ```text
//! type 0  uncompressed:  contents
//! type 1  LZ4:           uncompressed_len:varint32 | LZ4 block (lz4_flex's raw block format)
//! type 2  Zstd:          uncompressed_len:varint32 | one Zstd frame
//! ```
//!
//! The block handle's `size` and the CRC cover the *stored* bytes, so a reader checks the
//! checksum before it decompresses anything. The uncompressed length is stored (as RocksDB does
//! since its format version 2) so the decoder can refuse a block before allocating for it: a
//! claimed length above [`MAX_UNCOMPRESSED_BLOCK_BYTES`], or above what LZ4 can expand the stored
//! bytes to, is corruption, and so is a decoder output of any other length than the claim.
//!
//! # When a block is stored compressed
//!
//! Only when that saves at least an eighth of its bytes (RocksDB's `GoodCompressionRatio`): a
//! block that barely compresses would cost a decompression on every cache miss for almost no
//! space. Blocks of random bytes (incompressible values, Bloom filters) stay raw.
//!
//! Which blocks go through the compressor is the builder's choice (`builder.rs`): data and index
//! blocks do; filter blocks (random bits: nothing to gain, and RocksDB does not compress them
//! either), the modular filter index (a few dozen bytes) and the properties block (read at every
//! open, and by `strata inspect` and older builds) are always stored raw.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::coding::{get_varint32, put_varint32};
use crate::error::{Error, Result};

/// Trailer type byte of uncompressed contents.
pub(crate) const BLOCK_TYPE_UNCOMPRESSED: u8 = 0;
/// Trailer type byte of LZ4-compressed contents.
pub(crate) const BLOCK_TYPE_LZ4: u8 = 1;
/// Trailer type byte of Zstd-compressed contents.
pub(crate) const BLOCK_TYPE_ZSTD: u8 = 2;

/// The largest uncompressed block a decoder accepts: a data block is cut once it reaches
/// `block_bytes` (at most 64 MiB, `Options::validate`), so it holds less than that plus one entry
/// (a key of at most 64 KiB and a value of at most 64 MiB, with their length prefixes). The
/// builder stores anything larger raw, so this build never writes a block it would refuse.
pub(crate) const MAX_UNCOMPRESSED_BLOCK_BYTES: usize = 129 << 20;

/// LZ4 cannot expand its input by more than 255 times (a match length is coded in 255-byte
/// steps); a larger claim is a lie, refused before allocating for it.
const LZ4_MAX_EXPANSION: usize = 255;

/// Zstd level RocksDB uses when none is given (`kDefaultCompressionLevel`), and Zstd's own default.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// A block compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Blocks stored as they are.
    #[default]
    None,
    /// LZ4 (the `lz4_flex` crate): compresses and decompresses at several hundred MB/s to GB/s
    /// per core, for a modest ratio. RocksDB's recommendation for every level but the last.
    Lz4,
    /// Zstd at `level` (1..=22, or negative "fast" levels; 3 is Zstd's and RocksDB's default):
    /// a better ratio than LZ4 for more CPU, mostly when writing. RocksDB's recommendation for the
    /// bottommost level, which holds most of the data and is rewritten least often.
    Zstd {
        /// Zstd compression level.
        level: i32,
    },
}

impl Compression {
    /// Zstd at its default level, [`DEFAULT_ZSTD_LEVEL`].
    pub const ZSTD: Compression = Compression::Zstd {
        level: DEFAULT_ZSTD_LEVEL,
    };

    /// The trailer type byte of blocks this algorithm compressed.
    pub(crate) fn block_type(self) -> u8 {
        match self {
            Compression::None => BLOCK_TYPE_UNCOMPRESSED,
            Compression::Lz4 => BLOCK_TYPE_LZ4,
            Compression::Zstd { .. } => BLOCK_TYPE_ZSTD,
        }
    }

    fn validate(self) -> Result<()> {
        if let Compression::Zstd { level } = self {
            let range = zstd::compression_level_range();
            if !range.contains(&level) {
                return Err(Error::InvalidArgument(format!(
                    "compression: Zstd level must be between {} and {}, got {level}",
                    range.start(),
                    range.end()
                )));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => write!(f, "none"),
            Compression::Lz4 => write!(f, "lz4"),
            Compression::Zstd { level } if *level == DEFAULT_ZSTD_LEVEL => write!(f, "zstd"),
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
        }
    }
}

impl FromStr for Compression {
    type Err = Error;

    /// `none`, `lz4`, `zstd` (level 3) or `zstd:LEVEL`.
    fn from_str(text: &str) -> Result<Compression> {
        let compression = match text.trim().to_ascii_lowercase().as_str() {
            "none" => Compression::None,
            "lz4" => Compression::Lz4,
            "zstd" => Compression::ZSTD,
            other => match other.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(level)) => Compression::Zstd { level },
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown compression {text:?} (expected none, lz4, zstd or zstd:LEVEL)"
                    )))
                }
            },
        };
        compression.validate()?;
        Ok(compression)
    }
}

/// Which compression each table file's blocks get, by the level the file is written to — the
/// knobs a RocksDB user knows:
///
/// * a per-level list (RocksDB's `compression_per_level`): level `i` uses entry `i`, levels past
///   the end use the last entry;
/// * an optional bottommost choice (RocksDB's `bottommost_compression`), which overrides the list
///   for a compaction whose output holds the oldest data for its key range — no file below the
///   output level overlaps it, the same test that lets the compaction drop tombstones and the one
///   RocksDB uses. In a leveled tree that is the last level: most of the data, rewritten least
///   often, so the place for Zstd's better ratio. Flushes never count as bottommost.
///
/// The default is [`CompressionPolicy::none`], deliberately, although RocksDB and fjall compress
/// by default: a database written with default options stays readable by Strata builds from
/// before block compression (which refuse the new block types: rolling a deployment back must not
/// strand its data), and the engine's default block and byte counts, which the filter studies
/// (DESIGN.md §3, §8) and the benchmark history compare, keep their meaning. For a deployment,
/// [`CompressionPolicy::lz4_with_zstd_bottom`] is what RocksDB's tuning guide recommends and what
/// we suggest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionPolicy {
    /// Never empty: level `i` uses `per_level[min(i, len - 1)]`.
    per_level: Vec<Compression>,
    bottommost: Option<Compression>,
}

impl Default for CompressionPolicy {
    fn default() -> Self {
        CompressionPolicy::none()
    }
}

impl CompressionPolicy {
    /// Every block stored uncompressed (the default).
    pub fn none() -> Self {
        CompressionPolicy::all(Compression::None)
    }

    /// The same compression on every level.
    pub fn all(compression: Compression) -> Self {
        CompressionPolicy {
            per_level: vec![compression],
            bottommost: None,
        }
    }

    /// Level `i` uses `per_level[i]`, deeper levels the last entry; an empty list means none.
    pub fn per_level(per_level: Vec<Compression>) -> Self {
        if per_level.is_empty() {
            return CompressionPolicy::none();
        }
        CompressionPolicy {
            per_level,
            bottommost: None,
        }
    }

    /// Overrides the per-level choice for bottommost compaction outputs (see the type's docs).
    pub fn with_bottommost(mut self, compression: Compression) -> Self {
        self.bottommost = Some(compression);
        self
    }

    /// LZ4 on every level and Zstd (level 3) at the bottom: RocksDB's recommended production
    /// setting ("Setup Options and Basic Tuning"), and fjall's default LZ4 with a better ratio
    /// where most of the data lives.
    pub fn lz4_with_zstd_bottom() -> Self {
        CompressionPolicy::all(Compression::Lz4).with_bottommost(Compression::ZSTD)
    }

    /// The per-level list (never empty).
    pub fn levels(&self) -> &[Compression] {
        &self.per_level
    }

    /// The bottommost override, if any.
    pub fn bottommost(&self) -> Option<Compression> {
        self.bottommost
    }

    /// The compression of a file written to `level`; `bottommost` when it is a compaction output
    /// that holds the oldest data for its keys.
    pub fn for_output(&self, level: usize, bottommost: bool) -> Compression {
        if bottommost {
            if let Some(compression) = self.bottommost {
                return compression;
            }
        }
        self.per_level
            .get(level)
            .or(self.per_level.last())
            .copied()
            .unwrap_or_default()
    }

    /// True if no file is ever compressed.
    pub fn is_none(&self) -> bool {
        self.per_level.iter().all(|c| *c == Compression::None)
            && self.bottommost.is_none_or(|c| c == Compression::None)
    }

    /// Checks every Zstd level.
    pub fn validate(&self) -> Result<()> {
        self.per_level
            .iter()
            .chain(&self.bottommost)
            .try_for_each(|c| c.validate())
    }
}

impl fmt::Display for CompressionPolicy {
    /// The form [`FromStr`] reads: `lz4`, `none,none,lz4`, `lz4,zstd-bottom`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, compression) in self.per_level.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{compression}")?;
        }
        if let Some(bottommost) = self.bottommost {
            write!(f, ",{bottommost}-bottom")?;
        }
        Ok(())
    }
}

impl FromStr for CompressionPolicy {
    type Err = Error;

    /// A comma-separated list: each plain item (`none`, `lz4`, `zstd`, `zstd:LEVEL`) is the next
    /// level's choice, levels past the list use its last item; one item with the suffix `-bottom`
    /// (`zstd-bottom`, `zstd:6-bottom`) is the bottommost override. `lz4,zstd-bottom` is
    /// [`CompressionPolicy::lz4_with_zstd_bottom`].
    fn from_str(text: &str) -> Result<CompressionPolicy> {
        let mut per_level = Vec::new();
        let mut bottommost = None;
        for item in text.split(',') {
            let item = item.trim();
            if let Some(algorithm) = item.strip_suffix("-bottom") {
                if bottommost.replace(algorithm.parse()?).is_some() {
                    return Err(Error::InvalidArgument(format!(
                        "compression {text:?} names two bottommost choices"
                    )));
                }
            } else {
                per_level.push(item.parse()?);
            }
        }
        let mut policy = CompressionPolicy::per_level(per_level);
        policy.bottommost = bottommost;
        Ok(policy)
    }
}

pub(crate) use crate::stats::CompressionCounts;

/// Compresses blocks with one algorithm, keeping the Zstd context across the blocks of a file
/// (creating one per block would cost more than compressing a 4 KiB block).
pub(crate) struct BlockCompressor {
    compression: Compression,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The stored form of the last compressed block.
    buffer: Vec<u8>,
    pub(crate) counts: CompressionCounts,
}

impl BlockCompressor {
    pub(crate) fn new(compression: Compression) -> Self {
        BlockCompressor {
            compression,
            zstd: None,
            buffer: Vec::new(),
            counts: CompressionCounts::default(),
        }
    }

    pub(crate) fn compression(&self) -> Compression {
        self.compression
    }

    /// The bytes to store for `contents` and their trailer type: the compressed form if it saves
    /// at least an eighth, else `contents` itself with type 0.
    pub(crate) fn compress<'a>(&'a mut self, contents: &'a [u8]) -> (&'a [u8], u8) {
        self.counts.raw_bytes += contents.len() as u64;
        let compressed = match self.compression {
            Compression::None => false,
            _ if contents.len() > MAX_UNCOMPRESSED_BLOCK_BYTES => false,
            compression => {
                let start = Instant::now();
                let done = self.compress_into_buffer(compression, contents);
                self.counts.compress_nanos += start.elapsed().as_nanos() as u64;
                // RocksDB's GoodCompressionRatio: keep the block raw unless it saves 1/8.
                done && self.buffer.len() < contents.len() - contents.len() / 8
            }
        };
        if compressed {
            self.counts.compressed_blocks += 1;
            self.counts.stored_bytes += self.buffer.len() as u64;
            (&self.buffer, self.compression.block_type())
        } else {
            if self.compression != Compression::None {
                self.counts.raw_blocks += 1;
            }
            self.counts.stored_bytes += contents.len() as u64;
            (contents, BLOCK_TYPE_UNCOMPRESSED)
        }
    }

    /// Writes `uncompressed_len:varint32 | compressed` into the buffer; false if the compressor
    /// failed (then the block is stored raw: compression is an optimisation, never a reason to
    /// fail a write).
    fn compress_into_buffer(&mut self, compression: Compression, contents: &[u8]) -> bool {
        self.buffer.clear();
        // Fits: contents.len() <= MAX_UNCOMPRESSED_BLOCK_BYTES < u32::MAX.
        put_varint32(&mut self.buffer, contents.len() as u32);
        let prefix = self.buffer.len();
        match compression {
            Compression::None => false,
            Compression::Lz4 => {
                let bound = lz4_flex::block::get_maximum_output_size(contents.len());
                self.buffer.resize(prefix + bound, 0);
                let Some(output) = self.buffer.get_mut(prefix..) else {
                    return false;
                };
                match lz4_flex::block::compress_into(contents, output) {
                    Ok(written) => {
                        self.buffer.truncate(prefix + written);
                        true
                    }
                    Err(_) => false,
                }
            }
            Compression::Zstd { level } => {
                if self.zstd.is_none() {
                    self.zstd = zstd::bulk::Compressor::new(level).ok();
                }
                let Some(compressor) = self.zstd.as_mut() else {
                    return false;
                };
                // Into a slice past the length prefix: a `Vec` destination would be written
                // from its start, over the prefix.
                let bound = zstd::zstd_safe::compress_bound(contents.len());
                self.buffer.resize(prefix + bound, 0);
                let Some(output) = self.buffer.get_mut(prefix..) else {
                    return false;
                };
                match compressor.compress_to_buffer(contents, output) {
                    Ok(written) => {
                        self.buffer.truncate(prefix + written);
                        true
                    }
                    Err(_) => false,
                }
            }
        }
    }
}

thread_local! {
    /// One Zstd decompression context per thread, reused across blocks (creating one per block
    /// would allocate about 100 KiB on every cache miss).
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Decodes stored block contents of trailer type `block_type` into the block's contents. The
/// error is a reason for the caller to wrap in `Error::Corruption` with the file and offset. Never
/// allocates more than [`MAX_UNCOMPRESSED_BLOCK_BYTES`] (or 255 times the stored bytes for LZ4).
pub(crate) fn decompress_block(
    block_type: u8,
    stored: Vec<u8>,
) -> std::result::Result<Vec<u8>, String> {
    if block_type == BLOCK_TYPE_UNCOMPRESSED {
        return Ok(stored);
    }
    let name = match block_type {
        BLOCK_TYPE_LZ4 => "LZ4",
        BLOCK_TYPE_ZSTD => "Zstd",
        other => {
            return Err(format!(
                "unknown block type {other} (this build reads 0 = uncompressed, 1 = LZ4, 2 = Zstd)"
            ))
        }
    };
    let (claimed, header_len) =
        get_varint32(&stored).ok_or_else(|| format!("{name} block has no uncompressed length"))?;
    let claimed = claimed as usize;
    let compressed = stored.get(header_len..).unwrap_or_default();
    let limit = match block_type {
        BLOCK_TYPE_LZ4 => MAX_UNCOMPRESSED_BLOCK_BYTES.min(
            compressed
                .len()
                .saturating_mul(LZ4_MAX_EXPANSION)
                .saturating_add(16),
        ),
        _ => MAX_UNCOMPRESSED_BLOCK_BYTES,
    };
    if claimed > limit {
        return Err(format!(
            "{name} block of {} stored bytes claims {claimed} uncompressed bytes, more than the \
             {limit} it can hold",
            stored.len()
        ));
    }
    let contents = match block_type {
        BLOCK_TYPE_LZ4 => {
            let mut contents = vec![0; claimed];
            let written = lz4_flex::block::decompress_into(compressed, &mut contents)
                .map_err(|e| format!("LZ4 block does not decompress: {e}"))?;
            contents.truncate(written);
            contents
        }
        _ => ZSTD_DECOMPRESSOR.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(
                    zstd::bulk::Decompressor::new()
                        .map_err(|e| format!("cannot create a Zstd decompressor: {e}"))?,
                );
            }
            let decompressor = slot
                .as_mut()
                .ok_or_else(|| "no Zstd decompressor".to_string())?;
            decompressor
                .decompress(compressed, claimed)
                .map_err(|e| format!("Zstd block does not decompress: {e}"))
        })?,
    };
    if contents.len() != claimed {
        return Err(format!(
            "{name} block decompressed to {} bytes, but its header says {claimed}",
            contents.len()
        ));
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compressible(len: usize) -> Vec<u8> {
        (0..len).map(|i| b"abcdefgh"[(i / 3) % 8]).collect()
    }

    fn incompressible(len: usize) -> Vec<u8> {
        // xorshift: no repeats an LZ coder could use.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    const ALGORITHMS: [Compression; 3] = [
        Compression::Lz4,
        Compression::ZSTD,
        Compression::Zstd { level: 19 },
    ];

    #[test]
    fn every_algorithm_round_trips_a_compressible_block() {
        let contents = compressible(4096);
        for compression in ALGORITHMS {
            let mut compressor = BlockCompressor::new(compression);
            let (stored, block_type) = compressor.compress(&contents);
            let stored = stored.to_vec();
            assert_eq!(block_type, compression.block_type(), "{compression}");
            assert!(stored.len() < contents.len() / 4, "{compression}");
            assert_eq!(decompress_block(block_type, stored), Ok(contents.clone()));
            assert_eq!(compressor.counts.compressed_blocks, 1);
            assert_eq!(compressor.counts.raw_bytes, 4096);
        }
    }

    #[test]
    fn a_block_that_does_not_save_an_eighth_stays_raw() {
        let contents = incompressible(4096);
        for compression in ALGORITHMS.into_iter().chain([Compression::None]) {
            let mut compressor = BlockCompressor::new(compression);
            let (stored, block_type) = compressor.compress(&contents);
            assert_eq!(block_type, BLOCK_TYPE_UNCOMPRESSED, "{compression}");
            assert_eq!(stored, &contents[..]);
            assert_eq!(compressor.counts.stored_bytes, 4096);
            assert_eq!(compressor.counts.compressed_blocks, 0);
        }
        // Half random, half repeated: saves about half with LZ4, so it is compressed.
        let mut half = incompressible(2048);
        half.extend(std::iter::repeat_n(7u8, 2048));
        let mut compressor = BlockCompressor::new(Compression::Lz4);
        assert_eq!(compressor.compress(&half).1, BLOCK_TYPE_LZ4);
        // An empty block never shrinks.
        assert_eq!(compressor.compress(&[]).1, BLOCK_TYPE_UNCOMPRESSED);
    }

    #[test]
    fn a_length_lie_is_corruption() {
        let contents = compressible(4096);
        for compression in ALGORITHMS {
            let mut compressor = BlockCompressor::new(compression);
            let (stored, block_type) = compressor.compress(&contents);
            let (_, header_len) = get_varint32(stored).expect("a length header");
            let body = &stored[header_len..];
            for claim in [0u32, 1, 4095, 4097, 100_000] {
                let mut lying = Vec::new();
                put_varint32(&mut lying, claim);
                lying.extend_from_slice(body);
                let reason =
                    decompress_block(block_type, lying).expect_err("a length lie must fail");
                assert!(
                    reason.contains("decompress") || reason.contains("claims"),
                    "{compression} {claim}: {reason}"
                );
            }
            // A claim above the cap is refused before any allocation.
            let mut huge = Vec::new();
            put_varint32(&mut huge, u32::MAX);
            huge.extend_from_slice(body);
            let reason = decompress_block(block_type, huge).expect_err("too large");
            assert!(reason.contains("more than the"), "{reason}");
        }
        // LZ4 cannot expand 10 bytes to a megabyte.
        let mut lz4_lie = Vec::new();
        put_varint32(&mut lz4_lie, 1 << 20);
        lz4_lie.extend_from_slice(&[0; 10]);
        let reason = decompress_block(BLOCK_TYPE_LZ4, lz4_lie).expect_err("ratio");
        assert!(reason.contains("more than the 2566"), "{reason}");
    }

    #[test]
    fn unknown_types_and_missing_headers_are_corruption() {
        let reason = decompress_block(7, b"data".to_vec()).expect_err("type 7");
        assert!(reason.contains("unknown block type 7"), "{reason}");
        for block_type in [BLOCK_TYPE_LZ4, BLOCK_TYPE_ZSTD] {
            let reason = decompress_block(block_type, Vec::new()).expect_err("empty");
            assert!(reason.contains("no uncompressed length"), "{reason}");
        }
    }

    #[test]
    fn policies_choose_per_level_and_bottommost() {
        let policy: CompressionPolicy = "none,lz4,zstd:5,zstd:9-bottom".parse().expect("valid");
        assert_eq!(policy.for_output(0, false), Compression::None);
        assert_eq!(policy.for_output(1, false), Compression::Lz4);
        assert_eq!(policy.for_output(2, false), Compression::Zstd { level: 5 });
        assert_eq!(policy.for_output(6, false), Compression::Zstd { level: 5 });
        assert_eq!(policy.for_output(1, true), Compression::Zstd { level: 9 });
        assert_eq!(policy.to_string(), "none,lz4,zstd:5,zstd:9-bottom");
        assert_eq!(
            policy.to_string().parse::<CompressionPolicy>().ok(),
            Some(policy)
        );

        let recommended: CompressionPolicy = "lz4,zstd-bottom".parse().expect("valid");
        assert_eq!(recommended, CompressionPolicy::lz4_with_zstd_bottom());
        assert_eq!(recommended.to_string(), "lz4,zstd-bottom");
        assert_eq!(recommended.for_output(3, false), Compression::Lz4);
        assert_eq!(recommended.for_output(3, true), Compression::ZSTD);
        assert!(!recommended.is_none());

        let default = CompressionPolicy::default();
        assert!(default.is_none());
        assert_eq!(default.for_output(0, true), Compression::None);
        assert_eq!(CompressionPolicy::per_level(Vec::new()), default);

        for bad in ["", "snappy", "zstd:99", "zstd:x", "lz4-bottom,zstd-bottom"] {
            assert!(
                matches!(
                    bad.parse::<CompressionPolicy>(),
                    Err(Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
        assert!(CompressionPolicy::all(Compression::Zstd { level: 1000 })
            .validate()
            .is_err());
    }

    proptest! {
        #[test]
        fn compressed_blocks_round_trip(
            contents in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'c', 0]), 0..3_000),
            algorithm in 0usize..3,
        ) {
            let mut compressor = BlockCompressor::new(ALGORITHMS[algorithm]);
            let (stored, block_type) = compressor.compress(&contents);
            let stored = stored.to_vec();
            prop_assert_eq!(decompress_block(block_type, stored), Ok(contents));
        }

        #[test]
        fn decompress_never_panics(
            block_type in 0u8..4,
            stored in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let _ = decompress_block(block_type, stored);
        }
    }
}
