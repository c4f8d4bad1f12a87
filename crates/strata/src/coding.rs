//! Little-endian fixed-width and LEB128 varint encodings shared by every on-disk format
//! (`docs/FORMAT.md`). Decoders return `None` on truncated input instead of panicking, so callers
//! turn a short buffer into a `Corruption` error with the file and offset they know.

/// Appends `value` as 4 little-endian bytes.
pub(crate) fn put_fixed32(dst: &mut Vec<u8>, value: u32) {
    dst.extend_from_slice(&value.to_le_bytes());
}

/// Appends `value` as 8 little-endian bytes.
pub(crate) fn put_fixed64(dst: &mut Vec<u8>, value: u64) {
    dst.extend_from_slice(&value.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
pub(crate) fn get_fixed32(src: &[u8]) -> Option<u32> {
    let bytes: [u8; 4] = src.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Reads 8 little-endian bytes at the start of `src`.
pub(crate) fn get_fixed64(src: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = src.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// Appends `value` as a LEB128 varint (1 to 10 bytes).
pub(crate) fn put_varint64(dst: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        dst.push((value as u8) | 0x80);
        value >>= 7;
    }
    dst.push(value as u8);
}

/// Appends `value` as a LEB128 varint (1 to 5 bytes).
pub(crate) fn put_varint32(dst: &mut Vec<u8>, value: u32) {
    put_varint64(dst, u64::from(value));
}

/// Decodes a varint at the start of `src`; returns the value and the number of bytes it used.
pub(crate) fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for (i, &byte) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            return None; // overflows 64 bits
        }
        result |= bits << shift;
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint that must fit in 32 bits.
pub(crate) fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (value, used) = get_varint64(src)?;
    Some((u32::try_from(value).ok()?, used))
}

/// Appends a varint length prefix followed by the bytes.
pub(crate) fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// A cursor over a byte slice for decoding records; every getter returns `None` on truncation.
pub(crate) struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Decoder { rest: bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(first)
    }

    pub(crate) fn fixed32(&mut self) -> Option<u32> {
        let value = get_fixed32(self.rest)?;
        self.rest = &self.rest[4..];
        Some(value)
    }

    pub(crate) fn fixed64(&mut self) -> Option<u64> {
        let value = get_fixed64(self.rest)?;
        self.rest = &self.rest[8..];
        Some(value)
    }

    pub(crate) fn varint64(&mut self) -> Option<u64> {
        let (value, used) = get_varint64(self.rest)?;
        self.rest = &self.rest[used..];
        Some(value)
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
        if self.rest.len() < len {
            return None;
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Some(head)
    }

    pub(crate) fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint64()?).ok()?;
        self.bytes(len)
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ];
        for &value in &values {
            let mut buf = Vec::new();
            put_varint64(&mut buf, value);
            assert_eq!(get_varint64(&buf), Some((value, buf.len())));
            // Every strict prefix is truncated input.
            for cut in 0..buf.len() {
                assert_eq!(get_varint64(&buf[..cut]), None);
            }
        }
    }

    #[test]
    fn varint32_rejects_values_over_32_bits() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&buf), None);
    }

    #[test]
    fn overlong_varint_is_rejected() {
        assert_eq!(get_varint64(&[0xff; 11]), None);
    }

    #[test]
    fn decoder_reports_truncation() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 7);
        put_length_prefixed(&mut buf, b"abc");
        let mut decoder = Decoder::new(&buf);
        assert_eq!(decoder.fixed32(), Some(7));
        assert_eq!(decoder.length_prefixed(), Some(&b"abc"[..]));
        assert!(decoder.is_empty());
        let mut short = Decoder::new(&buf[..6]);
        assert_eq!(short.fixed32(), Some(7));
        assert_eq!(short.length_prefixed(), None);
    }
}
