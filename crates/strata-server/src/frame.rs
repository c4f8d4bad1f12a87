//! Where one request ends in the input buffer, and the limits on requests, checked before the
//! request is buffered in full.
//!
//! Requests are parsed here, as clients send them: an array header `*N` followed by N
//! bulk-string headers `$LEN` and their bytes. The scanner refuses, from the headers alone and
//! before the bytes arrive, a frame of another shape (a nested array, an inline command), a
//! bulk string over the size limit, more arguments than allowed and a request over the
//! request-size limit. It remembers how far it got, so a large request arriving in many reads
//! is scanned once. It returns the frame's length and records where each argument lies in it
//! ([`FrameScanner::arguments`]), so a complete request is split into its arguments without
//! being parsed again.

/// The limits a request is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Most arguments (the command name included).
    pub max_args: usize,
    /// Largest bulk string (one argument).
    pub max_bulk_bytes: usize,
    /// Largest request (the whole frame).
    pub max_request_bytes: usize,
}

impl FrameLimits {
    /// What a client gets before it authenticates (as Redis does): 10 arguments of 16 KiB.
    pub fn unauthenticated(self) -> FrameLimits {
        FrameLimits {
            max_args: self.max_args.min(10),
            max_bulk_bytes: self.max_bulk_bytes.min(16 * 1024),
            max_request_bytes: self.max_request_bytes.min(256 * 1024),
        }
    }
}

/// What the scanner found at the front of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanned {
    /// No complete request yet: read more.
    Incomplete,
    /// A complete request of this many bytes.
    Request(usize),
    /// An empty or null array, or an empty line, of this many bytes, which Redis skips without a
    /// reply.
    Empty(usize),
}

/// Headers longer than this are malformed (Redis allows 64 KiB for inline requests, but an
/// array or bulk-string header is a sign and at most 20 digits).
const MAX_HEADER_BYTES: usize = 32;

/// The scan state of the request at the front of the buffer.
#[derive(Debug, Default, Clone)]
pub struct FrameScanner {
    /// Elements still to scan, once the array header is read.
    remaining: Option<usize>,
    /// Bytes of the buffer scanned so far.
    position: usize,
    /// Where each argument scanned so far lies in the buffer.
    arguments: Vec<std::ops::Range<usize>>,
}

impl FrameScanner {
    /// Scans `buffer` (whose front is the start of a request) from where the last call stopped.
    /// An `Err` is the protocol error to report (the connection is then closed). After
    /// [`Scanned::Request`] or [`Scanned::Empty`] the caller removes that many bytes from the
    /// front; the scanner is then ready for the next request, and [`FrameScanner::arguments`]
    /// says where the request's arguments lie in it.
    pub fn scan(&mut self, buffer: &[u8], limits: &FrameLimits) -> Result<Scanned, String> {
        if self.remaining.is_none() {
            let Some(&first) = buffer.first() else {
                return Ok(Scanned::Incomplete);
            };
            // An empty line is an empty inline command, which Redis skips (redis-cli --pipe
            // sends one before its closing ECHO).
            match (first, buffer.get(1)) {
                (b'\n', _) => return Ok(Scanned::Empty(1)),
                (b'\r', Some(b'\n')) => return Ok(Scanned::Empty(2)),
                (b'\r', None) => return Ok(Scanned::Incomplete),
                _ => {}
            }
            if first != b'*' {
                return Err(format!(
                    "expected '*', got '{}' (requests are arrays of bulk strings; inline \
                     commands are not supported)",
                    printable(first)
                ));
            }
            let Some((count, end)) = header(buffer, 0, "multibulk count")? else {
                return Ok(Scanned::Incomplete);
            };
            if count <= 0 {
                return Ok(Scanned::Empty(end));
            }
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            if count > limits.max_args {
                return Err(format!(
                    "invalid multibulk length ({count} arguments; the limit is {})",
                    limits.max_args
                ));
            }
            self.remaining = Some(count);
            self.position = end;
            self.arguments.clear();
        }
        while let Some(remaining) = self.remaining.filter(|&r| r > 0) {
            let start = self.position;
            let Some(&kind) = buffer.get(start) else {
                return Ok(Scanned::Incomplete);
            };
            if kind != b'$' {
                return Err(format!("expected '$', got '{}'", printable(kind)));
            }
            let Some((length, data)) = header(buffer, start, "bulk length")? else {
                return Ok(Scanned::Incomplete);
            };
            let length = usize::try_from(length)
                .ok()
                .filter(|&l| l <= limits.max_bulk_bytes)
                .ok_or_else(|| {
                    format!(
                        "invalid bulk length ({length} bytes; the limit is {})",
                        limits.max_bulk_bytes
                    )
                })?;
            let end = data.saturating_add(length).saturating_add(2);
            if end > limits.max_request_bytes {
                return Err(format!(
                    "request larger than the limit of {} bytes",
                    limits.max_request_bytes
                ));
            }
            if buffer.len() < end {
                return Ok(Scanned::Incomplete);
            }
            if &buffer[end - 2..end] != b"\r\n" {
                return Err("bulk string not followed by CRLF".to_string());
            }
            self.arguments.push(data..end - 2);
            self.position = end;
            self.remaining = Some(remaining - 1);
        }
        let length = self.position;
        self.remaining = None;
        self.position = 0;
        Ok(Scanned::Request(length))
    }

    /// After [`Scanned::Request`]: the byte range of each argument (the command name first)
    /// within the request.
    pub fn arguments(&self) -> &[std::ops::Range<usize>] {
        &self.arguments
    }
}

/// The integer of the header line starting at `start` (its type byte first) and where the line
/// ends; `None` if the line is not complete yet.
fn header(buffer: &[u8], start: usize, what: &str) -> Result<Option<(i64, usize)>, String> {
    let line = &buffer[start + 1..];
    let window = &line[..line.len().min(MAX_HEADER_BYTES)];
    let Some(cr) = window.iter().position(|&b| b == b'\r' || b == b'\n') else {
        if line.len() >= MAX_HEADER_BYTES {
            return Err(format!("too big {what} string"));
        }
        return Ok(None);
    };
    if line[cr] == b'\n' {
        return Err(format!("{what} not followed by CRLF"));
    }
    let Some(&lf) = line.get(cr + 1) else {
        return Ok(None);
    };
    if lf != b'\n' {
        return Err(format!("{what} not followed by CRLF"));
    }
    let value = parse_i64(&line[..cr]).ok_or_else(|| format!("invalid {what}"))?;
    Ok(Some((value, start + 1 + cr + 2)))
}

/// A decimal integer as `str::parse::<i64>` reads one (an optional sign, then at least one
/// digit, within i64), without the UTF-8 check.
fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &byte in digits {
        let digit = i64::from(byte.wrapping_sub(b'0'));
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

fn printable(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        (byte as char).to_string()
    } else {
        format!("\\x{byte:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: FrameLimits = FrameLimits {
        max_args: 4,
        max_bulk_bytes: 8,
        max_request_bytes: 48,
    };

    fn scan(bytes: &[u8]) -> Result<Scanned, String> {
        FrameScanner::default().scan(bytes, &LIMITS)
    }

    #[test]
    fn finds_the_end_of_a_request_and_waits_for_the_rest() {
        let request = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(scan(request), Ok(Scanned::Request(request.len())));
        for cut in 0..request.len() {
            assert_eq!(scan(&request[..cut]), Ok(Scanned::Incomplete), "{cut}");
        }
        // Resumed scans agree with a scan of the whole buffer.
        let mut scanner = FrameScanner::default();
        for cut in 0..request.len() {
            assert_eq!(
                scanner.scan(&request[..cut], &LIMITS),
                Ok(Scanned::Incomplete)
            );
        }
        assert_eq!(
            scanner.scan(request, &LIMITS),
            Ok(Scanned::Request(request.len()))
        );
        assert_eq!(scan(b"*0\r\n"), Ok(Scanned::Empty(4)));
        assert_eq!(scan(b"\r\n*1"), Ok(Scanned::Empty(2)));
        assert_eq!(scan(b"*-1\r\n$"), Ok(Scanned::Empty(5)));
    }

    #[test]
    fn records_the_arguments_and_parses_headers_as_str_parse_does() {
        let request = b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$2\r\nab\r\n";
        let mut scanner = FrameScanner::default();
        assert_eq!(
            scanner.scan(request, &LIMITS),
            Ok(Scanned::Request(request.len()))
        );
        let arguments: Vec<&[u8]> = scanner
            .arguments()
            .iter()
            .map(|range| &request[range.clone()])
            .collect();
        assert_eq!(arguments, [&b"SET"[..], b"", b"ab"]);
        for text in [
            "0",
            "-0",
            "+7",
            "-12",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "",
            "-",
            "+",
            "1x",
            " 1",
            "--1",
            "+-1",
            "\u{e9}",
        ] {
            assert_eq!(
                parse_i64(text.as_bytes()),
                text.parse::<i64>().ok(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn refuses_other_shapes_and_oversize_requests_from_the_headers() {
        for bad in [
            &b"PING\r\n"[..],
            b"*1\r\n*1\r\n",
            b"*x\r\n",
            b"*5\r\n",
            b"*1\r\n$9\r\n",
            b"*1\r\n$-1\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"*1\r\n$1\n",
            b"*1\r\n$11111111111111111111111111111111111111",
            b"*4\r\n$8\r\n12345678\r\n$8\r\n12345678\r\n$8\r\n12345678\r\n$8\r\n",
        ] {
            assert!(scan(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
