//! Replies, and their encoding in RESP2 or RESP3 by redis-protocol's encoders.

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::types::BytesFrame as Resp2;
use redis_protocol::resp3::types::{BytesFrame as Resp3, FrameMap};

/// One reply, independent of the protocol version it is sent in.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A simple string (`+OK`).
    Simple(&'static str),
    /// An error; the text starts with its code (`ERR ...`, `WRONGPASS ...`).
    Error(String),
    /// An integer.
    Integer(i64),
    /// A bulk (blob) string.
    Bulk(Bytes),
    /// The null reply (a missing key).
    Nil,
    /// An array.
    Array(Vec<Reply>),
    /// A map: a RESP3 map, or a flat array of keys and values in RESP2.
    Map(Vec<(Reply, Reply)>),
}

impl Reply {
    /// `+OK`.
    pub const OK: Reply = Reply::Simple("OK");

    /// An error reply with the text `message` (which starts with its code).
    pub fn error(message: impl Into<String>) -> Reply {
        Reply::Error(message.into())
    }

    /// A bulk string of `text`.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Bulk(Bytes::from(text.into()))
    }

    /// The bytes this reply takes on the wire, about (for reply-size limits).
    pub fn approximate_bytes(&self) -> usize {
        match self {
            Reply::Simple(text) => text.len() + 3,
            Reply::Error(text) => text.len() + 3,
            Reply::Integer(_) | Reply::Nil => 24,
            Reply::Bulk(bytes) => bytes.len() + 16,
            Reply::Array(items) => 16 + items.iter().map(Reply::approximate_bytes).sum::<usize>(),
            Reply::Map(pairs) => {
                16 + pairs
                    .iter()
                    .map(|(k, v)| k.approximate_bytes() + v.approximate_bytes())
                    .sum::<usize>()
            }
        }
    }

    /// Appends the reply to `out` in protocol version `protocol` (2 or 3).
    pub fn encode(self, protocol: u8, out: &mut BytesMut) {
        // The replies of the key commands, written directly; arrays and maps through
        // redis-protocol's encoders.
        match self {
            Reply::Simple(text) => return line(out, b'+', text.as_bytes()),
            Reply::Error(text) => return line(out, b'-', sanitize(text).as_bytes()),
            Reply::Integer(value) => {
                let mut digits = [0; 20];
                return line(out, b':', decimal(value, &mut digits));
            }
            Reply::Bulk(bytes) => {
                let mut digits = [0; 20];
                line(out, b'$', decimal(bytes.len() as i64, &mut digits));
                out.extend_from_slice(&bytes);
                out.extend_from_slice(b"\r\n");
                return;
            }
            Reply::Nil => {
                out.extend_from_slice(if protocol >= 3 { b"_\r\n" } else { b"$-1\r\n" });
                return;
            }
            Reply::Array(_) | Reply::Map(_) => {}
        }
        let result = if protocol >= 3 {
            redis_protocol::resp3::encode::complete::extend_encode(out, &self.into_resp3(), false)
        } else {
            redis_protocol::resp2::encode::extend_encode(out, &self.into_resp2(), false)
        };
        if let Err(error) = result {
            // Encoding into a growing buffer does not fail; if it ever did, the client gets an
            // error in place of the reply rather than a torn frame.
            let frame = Resp2::Error(format!("ERR could not encode the reply: {error}").into());
            let _ = redis_protocol::resp2::encode::extend_encode(out, &frame, false);
        }
    }

    fn into_resp2(self) -> Resp2 {
        match self {
            Reply::Simple(text) => Resp2::SimpleString(Bytes::from_static(text.as_bytes())),
            Reply::Error(text) => Resp2::Error(sanitize(text).into()),
            Reply::Integer(value) => Resp2::Integer(value),
            Reply::Bulk(bytes) => Resp2::BulkString(bytes),
            Reply::Nil => Resp2::Null,
            Reply::Array(items) => Resp2::Array(items.into_iter().map(Reply::into_resp2).collect()),
            Reply::Map(pairs) => Resp2::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [k.into_resp2(), v.into_resp2()])
                    .collect(),
            ),
        }
    }

    fn into_resp3(self) -> Resp3 {
        match self {
            Reply::Simple(text) => Resp3::SimpleString {
                data: Bytes::from_static(text.as_bytes()),
                attributes: None,
            },
            Reply::Error(text) => Resp3::SimpleError {
                data: sanitize(text).into(),
                attributes: None,
            },
            Reply::Integer(value) => Resp3::Number {
                data: value,
                attributes: None,
            },
            Reply::Bulk(bytes) => Resp3::BlobString {
                data: bytes,
                attributes: None,
            },
            Reply::Nil => Resp3::Null,
            Reply::Array(items) => Resp3::Array {
                data: items.into_iter().map(Reply::into_resp3).collect(),
                attributes: None,
            },
            Reply::Map(pairs) => {
                let mut data = FrameMap::with_capacity(pairs.len());
                for (key, value) in pairs {
                    data.insert(key.into_resp3(), value.into_resp3());
                }
                Resp3::Map {
                    data,
                    attributes: None,
                }
            }
        }
    }
}

/// One line: `kind`, `text`, CRLF.
fn line(out: &mut BytesMut, kind: u8, text: &[u8]) {
    out.reserve(text.len() + 3);
    out.extend_from_slice(&[kind]);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// `value` in decimal, written at the end of `digits`.
fn decimal(value: i64, digits: &mut [u8; 20]) -> &[u8] {
    let mut magnitude = value.unsigned_abs();
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if value < 0 {
        start -= 1;
        digits[start] = b'-';
    }
    &digits[start..]
}

/// An error's text on one line (a simple error cannot hold CR or LF).
fn sanitize(text: String) -> String {
    if text.contains(['\r', '\n']) {
        text.replace(['\r', '\n'], " ")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(reply: Reply, protocol: u8) -> Vec<u8> {
        let mut out = BytesMut::new();
        reply.encode(protocol, &mut out);
        out.to_vec()
    }

    #[test]
    fn replies_encode_in_both_protocols() {
        assert_eq!(encoded(Reply::OK, 2), b"+OK\r\n");
        assert_eq!(encoded(Reply::Nil, 2), b"$-1\r\n");
        assert_eq!(encoded(Reply::Nil, 3), b"_\r\n");
        assert_eq!(encoded(Reply::Integer(-3), 3), b":-3\r\n");
        assert_eq!(
            encoded(Reply::Integer(i64::MIN), 2),
            b":-9223372036854775808\r\n"
        );
        assert_eq!(encoded(Reply::text("ab"), 2), b"$2\r\nab\r\n");
        assert_eq!(encoded(Reply::text(""), 3), b"$0\r\n\r\n");
        assert_eq!(encoded(Reply::OK, 3), b"+OK\r\n");
        assert_eq!(encoded(Reply::error("ERR x"), 3), b"-ERR x\r\n");
        // Each reply as redis-protocol encodes it.
        for reply in [
            Reply::OK,
            Reply::Nil,
            Reply::Integer(0),
            Reply::Integer(i64::MAX),
            Reply::text("value"),
            Reply::error("ERR e\r\nf"),
        ] {
            for protocol in [2, 3] {
                let mut expected = BytesMut::new();
                let ok = if protocol == 3 {
                    redis_protocol::resp3::encode::complete::extend_encode(
                        &mut expected,
                        &reply.clone().into_resp3(),
                        false,
                    )
                    .is_ok()
                } else {
                    redis_protocol::resp2::encode::extend_encode(
                        &mut expected,
                        &reply.clone().into_resp2(),
                        false,
                    )
                    .is_ok()
                };
                assert!(ok);
                assert_eq!(
                    encoded(reply.clone(), protocol),
                    expected.to_vec(),
                    "{reply:?}"
                );
            }
        }
        assert_eq!(encoded(Reply::error("ERR a\r\nb"), 2), b"-ERR a  b\r\n");
        let map = Reply::Map(vec![(Reply::text("k"), Reply::Integer(1))]);
        assert_eq!(encoded(map.clone(), 2), b"*2\r\n$1\r\nk\r\n:1\r\n");
        assert_eq!(encoded(map, 3), b"%1\r\n$1\r\nk\r\n:1\r\n");
    }
}
