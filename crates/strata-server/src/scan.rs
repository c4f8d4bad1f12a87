//! SCAN and FLUSHDB: walks over the keys in key order.
//!
//! # SCAN's cursor
//! Strata keeps keys sorted, so a scan resumes from a key rather than from a hash-table slot. The
//! cursor is a decimal number, as clients expect (they parse it into a 64-bit integer):
//!
//! * `0` starts a scan, and a scan that returns `0` is complete.
//! * A key of up to 7 bytes is its own cursor: the big-endian number of the byte `0x01`
//!   followed by the key's bytes (below 2^60). Such a cursor works across connections and
//!   restarts.
//! * A longer key is kept by the server in a table of recent cursors and the cursor is its
//!   entry's number (2^60 and above). The table keeps the newest 65,536 such cursors (64 MiB of
//!   keys at most) and is lost at restart; a forgotten cursor is `ERR invalid cursor`.
//!
//! As with Redis, a key present for the whole scan is returned at least once; keys written or
//! deleted during the scan may or may not be. Unlike Redis, no key is returned twice and keys
//! come in order. `COUNT` is how many keys one call examines (default 10); `MATCH` filters
//! them (a pattern with a literal prefix, `user:*`, seeks straight to it and stops after it);
//! `TYPE string` returns every key and any other type none.

use bytes::Bytes;
use strata::WriteBatch;

use crate::commands::{engine_error, not_integer, syntax_error};
use crate::glob;
use crate::node::{CursorTable, Node};
use crate::reply::Reply;

/// Keys deleted per batch by FLUSHDB.
const FLUSH_BATCH: usize = 1000;

/// The cursor that resumes a scan at `key`.
pub(crate) fn encode_cursor(node: &Node, key: &[u8]) -> u64 {
    if key.len() <= 7 {
        key.iter().fold(1u64, |acc, &b| (acc << 8) | u64::from(b))
    } else {
        node.cursors.lock().insert(key.to_vec())
    }
}

/// The key a cursor resumes at: `Ok(None)` starts from the beginning.
pub(crate) fn decode_cursor(node: &Node, cursor: u64) -> Result<Option<Vec<u8>>, Reply> {
    let invalid = || Reply::error("ERR invalid cursor");
    if cursor == 0 {
        return Ok(None);
    }
    if cursor >= CursorTable::FIRST_ID {
        return node
            .cursors
            .lock()
            .get(cursor)
            .map(Some)
            .ok_or_else(invalid);
    }
    let bytes = cursor.to_be_bytes();
    let start = bytes.iter().position(|&b| b != 0).ok_or_else(invalid)?;
    if bytes[start] != 1 {
        return Err(invalid());
    }
    Ok(Some(bytes[start + 1..].to_vec()))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(crate) fn scan(node: &Node, args: &[Bytes]) -> Reply {
    let cursor = std::str::from_utf8(&args[0])
        .ok()
        .and_then(|text| text.parse::<u64>().ok());
    let Some(cursor) = cursor else {
        return Reply::error("ERR invalid cursor");
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut strings = true;
    let mut options = args[1..].iter();
    while let Some(option) = options.next() {
        let Some(value) = options.next() else {
            return syntax_error();
        };
        match String::from_utf8_lossy(option)
            .to_ascii_uppercase()
            .as_str()
        {
            "MATCH" => pattern = Some(value),
            "COUNT" => match crate::commands::parse_integer(value) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return syntax_error(),
                None => return not_integer(),
            },
            "TYPE" => strings = value.eq_ignore_ascii_case(b"string"),
            _ => return syntax_error(),
        }
    }
    let resume = match decode_cursor(node, cursor) {
        Ok(resume) => resume,
        Err(reply) => return reply,
    };
    let finished = |keys: Vec<Reply>| Reply::Array(vec![Reply::text("0"), Reply::Array(keys)]);
    if !strings {
        return finished(Vec::new());
    }
    let prefix = pattern.map(glob::literal_prefix).unwrap_or_default();
    let start = match resume {
        Some(key) if key >= prefix => key,
        _ => prefix.clone(),
    };
    let budget = node.settings.max_reply_bytes / 2;
    let mut keys = Vec::new();
    let mut bytes = 0usize;
    for (examined, entry) in node.db.range(start..).enumerate() {
        let key = match entry {
            Ok((key, _)) => key,
            Err(error) => return engine_error(error),
        };
        if !key.starts_with(&prefix) {
            return finished(keys);
        }
        if examined >= count || bytes >= budget {
            let next = encode_cursor(node, &key);
            return Reply::Array(vec![Reply::text(next.to_string()), Reply::Array(keys)]);
        }
        if pattern.is_none_or(|p| glob::matches(p, &key)) {
            bytes += key.len() + 16;
            keys.push(Reply::Bulk(key.into()));
        }
    }
    finished(keys)
}

/// `FLUSHDB [ASYNC|SYNC]`: deletes every key in batches of [`FLUSH_BATCH`], each batch one
/// atomic write. Not instant (it reads every key) and not atomic as a whole: a key written
/// while it runs may survive it. It returns once every key it saw is deleted.
pub(crate) fn flushdb(node: &Node, args: &[Bytes]) -> Reply {
    match args {
        [] => {}
        [mode] if mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync") => {}
        _ => return syntax_error(),
    }
    let mut from: Option<Vec<u8>> = None;
    loop {
        let mut batch = WriteBatch::new();
        let mut last = None;
        let iter = match &from {
            Some(key) => node.db.range::<&[u8], _>((
                std::ops::Bound::Excluded(&key[..]),
                std::ops::Bound::Unbounded,
            )),
            None => node.db.iter(),
        };
        for entry in iter.take(FLUSH_BATCH) {
            match entry {
                Ok((key, _)) => {
                    batch.delete(&key);
                    last = Some(key);
                }
                Err(error) => return engine_error(error),
            }
        }
        let Some(last) = last else {
            return Reply::OK;
        };
        if let Err(error) = node.db.write_opt(batch, node.write_options()) {
            return engine_error(error);
        }
        from = Some(last);
    }
}
