//! The command layer (`strata_server::process`) on random and garbage input, with no network:
//! it never panics, answers every request of a well-formed stream, and closes on a malformed
//! one with a protocol error. The `server_commands` fuzz target runs the same function.

use bytes::BytesMut;
use proptest::prelude::*;
use strata_server::{process, Action, Config, Node, Session, Settings};

fn node(dir: &std::path::Path) -> Node {
    let db = strata::Db::open(dir, strata::Options::default()).expect("open");
    let mut config = Config::new(dir);
    config.max_bulk_bytes = 4096;
    config.max_request_bytes = 64 * 1024;
    config.max_pipeline = 16;
    config.max_reply_bytes = 64 * 1024;
    Node::new(db, Settings::from_config(&config))
}

/// A request as a client frames it.
fn frame(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Runs `input` through the command layer as a connection would (again while it says More).
fn run(node: &Node, session: &mut Session, input: &[u8]) -> (Vec<u8>, Action) {
    let mut buffer = BytesMut::from(input);
    let mut out = BytesMut::new();
    loop {
        let action = process(node, session, &mut buffer, &mut out);
        if action != Action::More {
            return (out.to_vec(), action);
        }
    }
}

/// How many RESP2 replies `bytes` holds, decoded by redis-protocol; `None` if malformed.
fn count_replies(mut bytes: &[u8]) -> Option<usize> {
    let mut count = 0;
    while !bytes.is_empty() {
        let (_, used) = redis_protocol::resp2::decode::decode(bytes).ok()??;
        bytes = &bytes[used..];
        count += 1;
    }
    Some(count)
}

const NAMES: &[&str] = &[
    "GET",
    "SET",
    "DEL",
    "EXISTS",
    "MGET",
    "MSET",
    "GETDEL",
    "INCR",
    "DECR",
    "INCRBY",
    "DECRBY",
    "APPEND",
    "STRLEN",
    "SCAN",
    "DBSIZE",
    "PING",
    "ECHO",
    "INFO",
    "CONFIG",
    "COMMAND",
    "CLIENT",
    "SELECT",
    "AUTH",
    "HELLO",
    "FLUSHDB",
    "EXPIRE",
    "HSET",
    "get",
    "NX",
    "XX",
    "0",
    "1",
    "-1",
    "MATCH",
    "COUNT",
    "GETNAME",
    "SETNAME",
    "DOCS",
    "9223372036854775807",
    "*",
    "k[",
];

fn argument() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(NAMES).prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..12),
        Just(b"key".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Every well-formed request gets exactly one reply (HELLO 3 switches the rest to RESP3,
    /// which this count does not decode).
    #[test]
    fn every_request_gets_one_reply(
        commands in prop::collection::vec(
            (prop::sample::select(NAMES), prop::collection::vec(argument(), 0..5)),
            1..20,
        )
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let node = node(dir.path());
        let mut session = Session::new(&node, "test");
        let mut input = Vec::new();
        for (name, args) in &commands {
            let mut request = vec![name.as_bytes().to_vec()];
            request.extend(args.iter().cloned());
            input.extend(frame(&request));
        }
        let (out, action) = run(&node, &mut session, &input);
        prop_assert_eq!(action, Action::NeedInput);
        if session.protocol == 2 {
            prop_assert_eq!(count_replies(&out), Some(commands.len()));
        } else {
            prop_assert!(!out.is_empty());
        }
    }

    /// Garbage never panics: it is answered, left waiting for more bytes, or refused with a
    /// protocol error that closes the connection.
    #[test]
    fn garbage_never_panics(
        prefix in prop::collection::vec(prop::collection::vec(argument(), 1..4), 0..3),
        garbage in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let node = node(dir.path());
        let mut session = Session::new(&node, "test");
        let mut input: Vec<u8> = prefix.iter().flat_map(|r| frame(r)).collect();
        input.extend(&garbage);
        let (out, action) = run(&node, &mut session, &input);
        if action == Action::Close && session.protocol == 2 {
            let text = String::from_utf8_lossy(&out);
            prop_assert!(text.contains("Protocol error"), "{}", text);
        }
    }
}

#[test]
fn nested_arrays_and_oversize_bulk_strings_are_refused_from_their_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = node(dir.path());
    for input in [
        "*1\r\n".repeat(100_000).into_bytes(),
        b"*2\r\n$3\r\nGET\r\n$999999\r\n".to_vec(),
        b"PING\r\n".to_vec(),
    ] {
        let mut session = Session::new(&node, "test");
        let (out, action) = run(&node, &mut session, &input);
        assert_eq!(action, Action::Close);
        assert!(String::from_utf8_lossy(&out).starts_with("-ERR Protocol error"));
    }
}
