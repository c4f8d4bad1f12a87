//! The commands: argument checks, Redis's replies and errors, and the engine calls behind them.
//! Under `--sync always` every command runs on tokio's blocking pool; under `everysec` and `no`
//! the key and connection commands ([`is_fast`]) run on the connection's own task (`net.rs`).

use std::collections::HashSet;

use bytes::Bytes;
use strata::{WriteBatch, MAX_VALUE_BYTES};

use crate::cluster::{self, Route};
use crate::node::Node;
use crate::reply::Reply;
use crate::session::{Action, Session};
use crate::{info, scan};

/// A command the server knows: its name, Redis's arity (n: exactly n arguments with the name;
/// -n: at least n), its COMMAND flags, and its first key, last key and key step.
pub(crate) struct Spec {
    pub name: &'static str,
    pub arity: i64,
    pub flags: &'static [&'static str],
    pub keys: (i64, i64, i64),
    pub summary: &'static str,
}

const READ: &[&str] = &["readonly", "fast"];
const WRITE: &[&str] = &["write", "denyoom"];
const WRITE_FAST: &[&str] = &["write", "denyoom", "fast"];
const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
const CONNECTION: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];

/// Every command the server runs.
pub(crate) const COMMANDS: &[Spec] = &[
    Spec {
        name: "get",
        arity: 2,
        flags: READ,
        keys: (1, 1, 1),
        summary: "Returns the string value of a key.",
    },
    Spec {
        name: "set",
        arity: -3,
        flags: WRITE,
        keys: (1, 1, 1),
        summary: "Sets the string value of a key (NX, XX, GET; no expiry).",
    },
    Spec {
        name: "del",
        arity: -2,
        flags: &["write"],
        keys: (1, -1, 1),
        summary: "Deletes keys; returns how many existed.",
    },
    Spec {
        name: "exists",
        arity: -2,
        flags: READ,
        keys: (1, -1, 1),
        summary: "Counts the given keys that exist.",
    },
    Spec {
        name: "mget",
        arity: -2,
        flags: READ,
        keys: (1, -1, 1),
        summary: "Returns the values of keys.",
    },
    Spec {
        name: "mset",
        arity: -3,
        flags: WRITE,
        keys: (1, -1, 2),
        summary: "Sets keys to values atomically.",
    },
    Spec {
        name: "getdel",
        arity: 2,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Returns the value of a key and deletes it.",
    },
    Spec {
        name: "incr",
        arity: 2,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Adds one to the integer value of a key.",
    },
    Spec {
        name: "decr",
        arity: 2,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Subtracts one from the integer value of a key.",
    },
    Spec {
        name: "incrby",
        arity: 3,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Adds a number to the integer value of a key.",
    },
    Spec {
        name: "decrby",
        arity: 3,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Subtracts a number from the integer value of a key.",
    },
    Spec {
        name: "append",
        arity: 3,
        flags: WRITE_FAST,
        keys: (1, 1, 1),
        summary: "Appends to the value of a key.",
    },
    Spec {
        name: "strlen",
        arity: 2,
        flags: READ,
        keys: (1, 1, 1),
        summary: "Returns the length of the value of a key.",
    },
    Spec {
        name: "scan",
        arity: -2,
        flags: &["readonly"],
        keys: (0, 0, 0),
        summary: "Iterates over the keys in key order; the cursor encodes the next key.",
    },
    Spec {
        name: "dbsize",
        arity: 1,
        flags: READ,
        keys: (0, 0, 0),
        summary: "Estimates the number of keys (entries in the tree and memtables).",
    },
    Spec {
        name: "flushdb",
        arity: -1,
        flags: &["write"],
        keys: (0, 0, 0),
        summary: "Deletes every key, in batches (not instant, not atomic).",
    },
    Spec {
        name: "ping",
        arity: -1,
        flags: &["fast"],
        keys: (0, 0, 0),
        summary: "Returns PONG, or the argument.",
    },
    Spec {
        name: "echo",
        arity: 2,
        flags: &["fast"],
        keys: (0, 0, 0),
        summary: "Returns the argument.",
    },
    Spec {
        name: "info",
        arity: -1,
        flags: &["loading", "stale"],
        keys: (0, 0, 0),
        summary: "Returns server and Strata statistics.",
    },
    Spec {
        name: "config",
        arity: -2,
        flags: ADMIN,
        keys: (0, 0, 0),
        summary: "CONFIG GET of the settings clients ask for; CONFIG RESETSTAT.",
    },
    Spec {
        name: "command",
        arity: -1,
        flags: &["loading", "stale"],
        keys: (0, 0, 0),
        summary: "Describes the commands.",
    },
    Spec {
        name: "client",
        arity: -2,
        flags: &["noscript", "loading", "stale"],
        keys: (0, 0, 0),
        summary: "CLIENT ID, GETNAME, SETNAME, INFO, LIST, SETINFO.",
    },
    Spec {
        name: "select",
        arity: 2,
        flags: &["loading", "stale", "fast"],
        keys: (0, 0, 0),
        summary: "Selects database 0 (the only one).",
    },
    Spec {
        name: "quit",
        arity: -1,
        flags: CONNECTION,
        keys: (0, 0, 0),
        summary: "Closes the connection.",
    },
    Spec {
        name: "auth",
        arity: -2,
        flags: CONNECTION,
        keys: (0, 0, 0),
        summary: "Authenticates the connection.",
    },
    Spec {
        name: "hello",
        arity: -1,
        flags: CONNECTION,
        keys: (0, 0, 0),
        summary: "Handshakes: protocol version, AUTH, SETNAME.",
    },
    Spec {
        name: "cluster",
        arity: -2,
        flags: &["loading", "stale"],
        keys: (0, 0, 0),
        summary: "Cluster mode: KEYSLOT, MYID, INFO, NODES, SLOTS, SHARDS, COUNTKEYSINSLOT.",
    },
    Spec {
        name: "clusterx",
        arity: -2,
        flags: ADMIN,
        keys: (0, 0, 0),
        summary: "Cluster mode: SETNODES, SETNODEID, VERSION and MYID (the pushed topology).",
    },
    Spec {
        name: "strata.autotune",
        arity: -1,
        flags: ADMIN,
        keys: (0, 0, 0),
        summary: "Auto-tune: NOW takes one decision and applies it (the default); HISTORY lists \
                  the last decisions.",
    },
    Spec {
        name: "shutdown",
        arity: -1,
        flags: ADMIN,
        keys: (0, 0, 0),
        summary: "Stops the server gracefully and closes the database.",
    },
];

/// Looks a command up by its (case-insensitive) name.
pub(crate) fn spec(name: impl AsRef<[u8]>) -> Option<&'static Spec> {
    let name = name.as_ref();
    COMMANDS
        .iter()
        .find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

/// `ERR value is not an integer or out of range`.
pub(crate) fn not_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

/// `ERR syntax error`.
pub(crate) fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

/// An engine error as a reply.
pub(crate) fn engine_error(error: strata::Error) -> Reply {
    match error {
        strata::Error::InvalidArgument(message) => Reply::error(format!("ERR {message}")),
        other => Reply::error(format!("ERR strata: {other}")),
    }
}

/// An integer argument as Redis reads one: the canonical decimal form only (no sign `+`, no
/// leading zeros or spaces), within i64.
pub(crate) fn parse_integer(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let value: i64 = text.parse().ok()?;
    (value.to_string() == text).then_some(value)
}

/// Runs one command (`args[0]` is its name) and says what the connection does next. `None` is
/// no reply (SHUTDOWN closes the connection without one, as in Redis).
pub fn execute(node: &Node, session: &mut Session, args: Vec<Bytes>) -> (Option<Reply>, Action) {
    let Some(first) = args.first() else {
        return (Some(Reply::error("ERR empty command")), Action::NeedInput);
    };
    node.counters
        .commands
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(spec) = spec(first) else {
        return (Some(unknown_command(first, &args[1..])), Action::NeedInput);
    };
    if !session.authenticated && !matches!(spec.name, "auth" | "hello" | "quit") {
        return (
            Some(Reply::error("NOAUTH Authentication required.")),
            Action::NeedInput,
        );
    }
    let count = args.len() as i64;
    if (spec.arity > 0 && count != spec.arity) || (spec.arity < 0 && count < -spec.arity) {
        return (
            Some(Reply::error(format!(
                "ERR wrong number of arguments for '{}' command",
                spec.name
            ))),
            Action::NeedInput,
        );
    }
    if let Some(cluster) = &node.cluster {
        if let Route::Refuse(reply) = cluster.route(keys_of(spec, &args)) {
            return (Some(reply), Action::NeedInput);
        }
    }
    let reply = match spec.name {
        "cluster" => cluster::cluster(node, &args[1..]),
        "clusterx" => cluster::clusterx(node, &args[1..]),
        "get" => get(node, &args[1]),
        "set" => set(node, &args),
        "del" => del(node, &args[1..]),
        "exists" => exists(node, &args[1..]),
        "mget" => mget(node, &args[1..]),
        "mset" => mset(node, &args[1..]),
        "getdel" => getdel(node, &args[1]),
        "incr" => incr_by(node, &args[1], 1),
        "decr" => incr_by(node, &args[1], -1),
        "incrby" => match parse_integer(&args[2]) {
            Some(delta) => incr_by(node, &args[1], delta),
            None => not_integer(),
        },
        "decrby" => match parse_integer(&args[2]) {
            Some(i64::MIN) => Reply::error("ERR decrement would overflow"),
            Some(delta) => incr_by(node, &args[1], -delta),
            None => not_integer(),
        },
        "append" => append(node, &args[1], &args[2]),
        "strlen" => strlen(node, &args[1]),
        "scan" => scan::scan(node, &args[1..]),
        "dbsize" => Reply::Integer(i64::try_from(info::dbsize(node)).unwrap_or(i64::MAX)),
        "flushdb" => scan::flushdb(node, &args[1..]),
        "ping" => match args.len() {
            1 => Reply::Simple("PONG"),
            2 => Reply::Bulk(args[1].clone()),
            _ => Reply::error("ERR wrong number of arguments for 'ping' command"),
        },
        "echo" => Reply::Bulk(args[1].clone()),
        "info" => info::info(node, &args[1..]),
        "config" => info::config(node, &args[1..]),
        "strata.autotune" => info::auto_tune(node, &args[1..]),
        "command" => info::command(session, &args[1..]),
        "client" => info::client(node, session, &args[1..]),
        "select" => match parse_integer(&args[1]) {
            Some(0) => Reply::OK,
            Some(_) => Reply::error("ERR DB index is out of range (Strata serves database 0 only)"),
            None => not_integer(),
        },
        "quit" => return (Some(Reply::OK), Action::Close),
        "auth" => auth(node, session, &args[1..]),
        "hello" => info::hello(node, session, &args[1..]),
        "shutdown" => {
            let abort = args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"abort"));
            let known = args[1..].iter().all(|a| {
                [&b"nosave"[..], b"save", b"now", b"force", b"abort"]
                    .iter()
                    .any(|k| a.eq_ignore_ascii_case(k))
            });
            if !known {
                syntax_error()
            } else if abort {
                Reply::error("ERR No shutdown in progress.")
            } else {
                return (None, Action::Shutdown);
            }
        }
        _ => unknown_command(first, &args[1..]),
    };
    (Some(reply), Action::NeedInput)
}

/// The keys of a command, by its spec's first key, last key and step.
fn keys_of<'a>(spec: &Spec, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let (first, last, step) = spec.keys;
    let first = usize::try_from(first).unwrap_or(0);
    let last = if last < 0 {
        args.len().saturating_sub(last.unsigned_abs() as usize)
    } else {
        usize::try_from(last).unwrap_or(0)
    };
    let step = usize::try_from(step).unwrap_or(1).max(1);
    let range = if first == 0 {
        0..0
    } else {
        first..last.min(args.len().saturating_sub(1)) + 1
    };
    range
        .step_by(step)
        .filter_map(|i| args.get(i))
        .map(|a| &a[..])
}

/// Redis's unknown-command error, saying Strata does not support the command.
fn unknown_command(name: &[u8], args: &[Bytes]) -> Reply {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        quoted(name)
    );
    for arg in args.iter().take(8) {
        text.push_str(&format!("'{}' ", quoted(arg)));
    }
    text.push_str("(not supported by Strata, which serves strings without expiry)");
    Reply::error(text)
}

/// An argument as shown in an error: at most 128 characters, lossy UTF-8.
fn quoted(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]);
    text.chars().filter(|c| !c.is_control()).collect()
}

fn read(node: &Node, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    let value = node.db.get(key).map_err(engine_error)?;
    let counter = if value.is_some() {
        &node.counters.hits
    } else {
        &node.counters.misses
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(value.map(strata::Value::into_vec))
}

fn put(node: &Node, key: &[u8], value: &[u8]) -> Result<(), Reply> {
    node.db
        .put_opt(key, value, node.write_options())
        .map_err(engine_error)
}

fn get(node: &Node, key: &[u8]) -> Reply {
    match read(node, key) {
        Ok(Some(value)) => Reply::Bulk(value.into()),
        Ok(None) => Reply::Nil,
        Err(reply) => reply,
    }
}

fn set(node: &Node, args: &[Bytes]) -> Reply {
    let (key, value) = (&args[1], &args[2]);
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    for option in &args[3..] {
        let upper = String::from_utf8_lossy(option).to_ascii_uppercase();
        match upper.as_str() {
            "NX" => nx = true,
            "XX" => xx = true,
            "GET" => get_old = true,
            "EX" | "PX" | "EXAT" | "PXAT" | "KEEPTTL" | "PERSIST" => {
                return Reply::error(format!(
                    "ERR SET {upper} is not supported: Strata has no key expiry"
                ))
            }
            _ => return syntax_error(),
        }
    }
    if nx && xx {
        return syntax_error();
    }
    let _locks = node.lock_keys([&key[..]]);
    let old = if nx || xx || get_old {
        match read(node, key) {
            Ok(old) => old,
            Err(reply) => return reply,
        }
    } else {
        None
    };
    let skip = (nx && old.is_some()) || (xx && old.is_none());
    if !skip {
        if let Err(reply) = put(node, key, value) {
            return reply;
        }
    }
    match (get_old, skip) {
        (true, _) => old.map_or(Reply::Nil, |v| Reply::Bulk(v.into())),
        (false, true) => Reply::Nil,
        (false, false) => Reply::OK,
    }
}

/// Plain `SET key value` requests (`[name, key, value]` each), applied in order as one write
/// batch under their keys' locks: one reply for all of them (OK, or the engine's error).
pub(crate) fn set_many(node: &Node, requests: &[Vec<Bytes>]) -> Reply {
    node.counters
        .commands
        .fetch_add(requests.len() as u64, std::sync::atomic::Ordering::Relaxed);
    let _locks = node.lock_keys(requests.iter().map(|args| &args[1][..]));
    let result = if let [args] = requests {
        node.db.put_opt(&args[1], &args[2], node.write_options())
    } else {
        let mut batch = WriteBatch::with_capacity(
            requests
                .iter()
                .map(|args| args[1].len() + args[2].len() + 16)
                .sum(),
        );
        for args in requests {
            batch.put(&args[1], &args[2]);
        }
        node.db.write_opt(batch, node.write_options())
    };
    match result {
        Ok(()) => Reply::OK,
        Err(error) => engine_error(error),
    }
}

/// Whether a connection may run a command named `name` with `args` arguments (the name
/// included) on its own task rather than on the blocking pool (`--sync everysec` and `no`): the
/// key commands, whose engine calls take microseconds (unless writes stall for a flush), with at
/// most [`FAST_ARGUMENTS`] arguments, and the connection commands. SCAN, FLUSHDB, INFO, DBSIZE,
/// CONFIG, CLIENT, COMMAND, CLUSTER, SHUTDOWN, unknown names and an MGET, MSET, DEL or EXISTS
/// of more keys go to the pool.
pub(crate) fn is_fast(name: &[u8], args: usize) -> bool {
    const FAST: &[&[u8]] = &[
        b"get", b"set", b"del", b"exists", b"mget", b"mset", b"getdel", b"incr", b"decr",
        b"incrby", b"decrby", b"append", b"strlen", b"ping", b"echo", b"select", b"quit", b"auth",
        b"hello",
    ];
    args <= FAST_ARGUMENTS && FAST.iter().any(|fast| fast.eq_ignore_ascii_case(name))
}

/// See [`is_fast`].
pub(crate) const FAST_ARGUMENTS: usize = 129;

fn del(node: &Node, keys: &[Bytes]) -> Reply {
    let _locks = node.lock_keys(keys.iter().map(|k| &k[..]));
    let mut seen = HashSet::new();
    let mut batch = WriteBatch::new();
    let mut deleted = 0;
    for key in keys {
        if !seen.insert(&key[..]) {
            continue;
        }
        match node.db.get(key) {
            Ok(Some(_)) => {
                deleted += 1;
                batch.delete(key);
            }
            Ok(None) => {}
            Err(error) => return engine_error(error),
        }
    }
    if !batch.is_empty() {
        if let Err(error) = node.db.write_opt(batch, node.write_options()) {
            return engine_error(error);
        }
    }
    Reply::Integer(deleted)
}

fn exists(node: &Node, keys: &[Bytes]) -> Reply {
    let mut found = 0;
    for key in keys {
        match node.db.get(key) {
            Ok(Some(_)) => found += 1,
            Ok(None) => {}
            Err(error) => return engine_error(error),
        }
    }
    Reply::Integer(found)
}

fn mget(node: &Node, keys: &[Bytes]) -> Reply {
    let mut values = Vec::with_capacity(keys.len());
    let mut bytes = 0usize;
    for key in keys {
        match read(node, key) {
            Ok(Some(value)) => {
                bytes += value.len() + 16;
                if bytes > node.settings.max_reply_bytes {
                    return Reply::error(format!(
                        "ERR reply larger than the limit of {} bytes (--max-reply-bytes)",
                        node.settings.max_reply_bytes
                    ));
                }
                values.push(Reply::Bulk(value.into()));
            }
            Ok(None) => values.push(Reply::Nil),
            Err(reply) => return reply,
        }
    }
    Reply::Array(values)
}

fn mset(node: &Node, pairs: &[Bytes]) -> Reply {
    if !pairs.len().is_multiple_of(2) {
        return Reply::error("ERR wrong number of arguments for 'mset' command");
    }
    let _locks = node.lock_keys(pairs.iter().step_by(2).map(|k| &k[..]));
    let mut batch = WriteBatch::new();
    for pair in pairs.chunks(2) {
        batch.put(&pair[0], &pair[1]);
    }
    match node.db.write_opt(batch, node.write_options()) {
        Ok(()) => Reply::OK,
        Err(error) => engine_error(error),
    }
}

fn getdel(node: &Node, key: &[u8]) -> Reply {
    let _locks = node.lock_keys([key]);
    match read(node, key) {
        Ok(Some(value)) => match node.db.write_opt(
            {
                let mut batch = WriteBatch::new();
                batch.delete(key);
                batch
            },
            node.write_options(),
        ) {
            Ok(()) => Reply::Bulk(value.into()),
            Err(error) => engine_error(error),
        },
        Ok(None) => Reply::Nil,
        Err(reply) => reply,
    }
}

fn incr_by(node: &Node, key: &[u8], delta: i64) -> Reply {
    let _locks = node.lock_keys([key]);
    let current = match node.db.get(key) {
        Ok(Some(value)) => match parse_integer(&value) {
            Some(current) => current,
            None => return not_integer(),
        },
        Ok(None) => 0,
        Err(error) => return engine_error(error),
    };
    let Some(next) = current.checked_add(delta) else {
        return Reply::error("ERR increment or decrement would overflow");
    };
    match put(node, key, next.to_string().as_bytes()) {
        Ok(()) => Reply::Integer(next),
        Err(reply) => reply,
    }
}

fn append(node: &Node, key: &[u8], suffix: &[u8]) -> Reply {
    let _locks = node.lock_keys([key]);
    let mut value = match node.db.get(key) {
        Ok(value) => value.map(strata::Value::into_vec).unwrap_or_default(),
        Err(error) => return engine_error(error),
    };
    let limit = MAX_VALUE_BYTES.min(node.settings.limits.max_bulk_bytes);
    if value.len().saturating_add(suffix.len()) > limit {
        return Reply::error(format!(
            "ERR string exceeds maximum allowed size ({limit} bytes)"
        ));
    }
    value.extend_from_slice(suffix);
    match put(node, key, &value) {
        Ok(()) => Reply::Integer(value.len() as i64),
        Err(reply) => reply,
    }
}

fn strlen(node: &Node, key: &[u8]) -> Reply {
    match node.db.get(key) {
        Ok(value) => Reply::Integer(value.map_or(0, |v| v.len() as i64)),
        Err(error) => engine_error(error),
    }
}

fn auth(node: &Node, session: &mut Session, args: &[Bytes]) -> Reply {
    let (user, password) = match args {
        [password] => (&b"default"[..], password),
        [user, password] => (&user[..], password),
        _ => return syntax_error(),
    };
    check_password(node, session, user, password)
}

/// AUTH's check, shared with HELLO's AUTH option.
pub(crate) fn check_password(
    node: &Node,
    session: &mut Session,
    user: &[u8],
    password: &[u8],
) -> Reply {
    let Some(expected) = &node.settings.requirepass else {
        return Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        );
    };
    if user == b"default" && constant_time_eq(expected.as_bytes(), password) {
        session.authenticated = true;
        Reply::OK
    } else {
        Reply::error("WRONGPASS invalid username-password pair or user is disabled.")
    }
}

/// Compares without stopping at the first difference (the time says nothing about how much of
/// a guess was right).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = a.len() ^ b.len();
    for (i, &byte) in b.iter().enumerate() {
        difference |= usize::from(byte ^ a.get(i % a.len().max(1)).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_redis_reads_them() {
        assert_eq!(parse_integer(b"-12"), Some(-12));
        assert_eq!(parse_integer(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"+1"[..],
            b"01",
            b" 1",
            b"1 ",
            b"",
            b"-0",
            b"9223372036854775808",
            b"1.5",
        ] {
            assert_eq!(parse_integer(bad), None, "{bad:?}");
        }
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn the_connection_runs_only_short_commands_itself() {
        assert!(is_fast(b"GET", 2));
        assert!(is_fast(b"set", 3));
        assert!(is_fast(b"mget", FAST_ARGUMENTS));
        assert!(!is_fast(b"mget", FAST_ARGUMENTS + 1));
        for slow in [
            &b"scan"[..],
            b"FLUSHDB",
            b"info",
            b"dbsize",
            b"shutdown",
            b"nosuch",
        ] {
            assert!(!is_fast(slow, 1), "{}", String::from_utf8_lossy(slow));
        }
    }
}
