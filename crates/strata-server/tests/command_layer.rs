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
    "STRATA.AUTOTUNE",
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

/// Consecutive plain SETs of one batch are committed as one write batch: they are still
/// answered one by one and in order, a later command sees them, and a SET the engine refuses
/// (a key over its limit) fails alone.
#[test]
fn pipelined_sets_answer_as_if_run_one_by_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = strata::Db::open(dir.path(), strata::Options::default()).expect("open");
    let mut config = Config::new(dir.path());
    config.max_bulk_bytes = 1 << 20;
    let node = Node::new(db, Settings::from_config(&config));
    let mut session = Session::new(&node, "test");
    let long_key = vec![b'k'; strata::MAX_KEY_BYTES + 1];
    let requests: Vec<Vec<Vec<u8>>> = vec![
        vec![b"SET".to_vec(), b"a".to_vec(), b"1".to_vec()],
        vec![b"set".to_vec(), b"b".to_vec(), b"2".to_vec()],
        vec![b"SET".to_vec(), b"a".to_vec(), b"3".to_vec()],
        vec![b"GET".to_vec(), b"a".to_vec()],
        vec![b"SET".to_vec(), b"c".to_vec(), b"4".to_vec()],
        vec![b"SET".to_vec(), long_key.clone(), b"5".to_vec()],
        vec![b"SET".to_vec(), b"d".to_vec(), b"6".to_vec()],
        vec![
            b"SET".to_vec(),
            b"d".to_vec(),
            b"7".to_vec(),
            b"NX".to_vec(),
        ],
        vec![b"INCR".to_vec(), b"b".to_vec()],
        vec![b"SET".to_vec(), b"b".to_vec(), b"10".to_vec()],
        vec![
            b"MGET".to_vec(),
            b"a".to_vec(),
            b"b".to_vec(),
            b"c".to_vec(),
            b"d".to_vec(),
        ],
        vec![b"EXISTS".to_vec(), long_key],
    ];
    let input: Vec<u8> = requests.iter().flat_map(|r| frame(r)).collect();
    let (out, action) = run(&node, &mut session, &input);
    assert_eq!(action, Action::NeedInput);
    let text = String::from_utf8_lossy(&out);
    let expected = "+OK\r\n+OK\r\n+OK\r\n$1\r\n3\r\n+OK\r\n-ERR key of 65537 bytes exceeds the \
                    65536-byte limit\r\n+OK\r\n$-1\r\n:3\r\n+OK\r\n*4\r\n$1\r\n3\r\n$2\r\n10\r\n\
                    $1\r\n4\r\n$1\r\n6\r\n:0\r\n";
    assert_eq!(text, expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Pipelines of SET (grouped into write batches), GET, INCR, APPEND and DEL on a few keys
    /// give the replies a model that runs them one at a time gives.
    #[test]
    fn pipelines_of_writes_agree_with_a_model(
        commands in prop::collection::vec((0..5usize, 0..4u8, 0..100u32), 1..60)
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let node = node(dir.path());
        let mut session = Session::new(&node, "test");
        let mut model = std::collections::HashMap::<Vec<u8>, Vec<u8>>::new();
        let mut input = Vec::new();
        let mut expected = Vec::new();
        for &(kind, key, number) in &commands {
            let key = vec![b'k', b'0' + key];
            let value = number.to_string().into_bytes();
            let request = match kind {
                0 | 1 => {
                    model.insert(key.clone(), value.clone());
                    expected.extend_from_slice(b"+OK\r\n");
                    vec![b"SET".to_vec(), key, value]
                }
                2 => {
                    match model.get(&key) {
                        Some(v) => {
                            expected.extend(format!("${}\r\n", v.len()).into_bytes());
                            expected.extend_from_slice(v);
                            expected.extend_from_slice(b"\r\n");
                        }
                        None => expected.extend_from_slice(b"$-1\r\n"),
                    }
                    vec![b"GET".to_vec(), key]
                }
                3 => {
                    let entry = model.entry(key.clone()).or_default();
                    entry.extend_from_slice(&value);
                    expected.extend(format!(":{}\r\n", entry.len()).into_bytes());
                    vec![b"APPEND".to_vec(), key, value]
                }
                _ => {
                    let existed = model.remove(&key).is_some();
                    expected.extend(format!(":{}\r\n", u8::from(existed)).into_bytes());
                    vec![b"DEL".to_vec(), key]
                }
            };
            input.extend(frame(&request));
        }
        let (out, action) = run(&node, &mut session, &input);
        prop_assert_eq!(action, Action::NeedInput);
        prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
    }
}
