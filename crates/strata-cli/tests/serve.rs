//! `strata serve` end to end: the real binary on a temporary database and a free loopback port,
//! driven by `redis-cli` (Debian's redis-tools) and by raw TCP. Every server is killed when its
//! guard drops; every wait is bounded.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bulk, is_err, Children, Client, R, STRATA};

/// A running `strata serve`, killed on drop (by the guard holding it).
struct Server {
    children: Children,
    port: u16,
}

impl Server {
    fn start(db: &Path, extra: &[&str]) -> Server {
        let mut children = Children::default();
        let (port, _) = children.start_serve(db, "127.0.0.1:0", extra);
        Server { children, port }
    }

    fn child(&mut self) -> &mut Child {
        &mut self.children.0[0]
    }

    fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        redis_cli(self.port, args)
    }

    /// Sends `signal` and waits (bounded) for the exit status.
    fn stop(mut self, signal: &str) -> std::process::ExitStatus {
        let pid = self.child().id().to_string();
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child().try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "redis-cli could not run ({e}): install it with `apt-get install -y redis-tools` \
                 (scripts/test_all.sh does this)"
            )
        });
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_string()
}

#[test]
fn redis_cli_runs_every_command_and_gets_redis_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &[]);
    let cli = |args: &[&str]| server.cli(args);
    assert_eq!(cli(&["PING"]), "PONG");
    assert_eq!(cli(&["ECHO", "hi"]), "hi");
    assert_eq!(cli(&["SET", "a", "1"]), "OK");
    assert_eq!(cli(&["GET", "a"]), "1");
    assert_eq!(cli(&["GET", "missing"]), "");
    assert_eq!(cli(&["SET", "a", "2", "NX"]), "");
    assert_eq!(cli(&["SET", "b", "2", "XX"]), "");
    assert_eq!(cli(&["SET", "a", "3", "XX", "GET"]), "1");
    assert_eq!(cli(&["SET", "a", "4", "NX", "XX"]), "ERR syntax error");
    assert!(cli(&["SET", "a", "4", "EX", "10"]).contains("no key expiry"));
    assert!(cli(&["SET", "a", "4", "KEEPTTL"]).contains("no key expiry"));
    assert_eq!(cli(&["INCR", "a"]), "4");
    assert_eq!(cli(&["INCRBY", "a", "10"]), "14");
    assert_eq!(cli(&["DECR", "a"]), "13");
    assert_eq!(cli(&["DECRBY", "a", "3"]), "10");
    assert_eq!(
        cli(&["INCRBY", "a", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(cli(&["SET", "big", "9223372036854775807"]), "OK");
    assert_eq!(
        cli(&["INCR", "big"]),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(cli(&["SET", "s", "text"]), "OK");
    assert_eq!(
        cli(&["INCR", "s"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(cli(&["APPEND", "s", "!!"]), "6");
    assert_eq!(cli(&["STRLEN", "s"]), "6");
    assert_eq!(cli(&["STRLEN", "missing"]), "0");
    assert_eq!(cli(&["MSET", "k1", "v1", "k2", "v2"]), "OK");
    assert_eq!(
        cli(&["MSET", "k1", "v1", "k2"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(cli(&["MGET", "k1", "missing", "k2"]), "v1\n\nv2");
    assert_eq!(cli(&["EXISTS", "k1", "k1", "missing"]), "2");
    assert_eq!(cli(&["GETDEL", "k2"]), "v2");
    assert_eq!(cli(&["GETDEL", "k2"]), "");
    assert_eq!(cli(&["DEL", "k1", "k1", "missing"]), "1");
    assert_eq!(
        cli(&["GET"]),
        "ERR wrong number of arguments for 'get' command"
    );
    let unknown = cli(&["EXPIRE", "a", "10"]);
    assert!(
        unknown.starts_with("ERR unknown command 'EXPIRE'") && unknown.contains("Strata"),
        "{unknown}"
    );
    assert!(cli(&["HSET", "h", "f", "v"]).starts_with("ERR unknown command 'HSET'"));
    assert_eq!(cli(&["SELECT", "0"]), "OK");
    assert!(cli(&["SELECT", "1"]).starts_with("ERR DB index is out of range"));
    assert_eq!(cli(&["CONFIG", "GET", "databases"]), "databases\n1");
    assert_eq!(cli(&["CONFIG", "GET", "save"]), "save");
    assert_eq!(cli(&["CONFIG", "GET", "appendonly"]), "appendonly\nno");
    assert!(cli(&["CONFIG", "SET", "save", ""]).starts_with("ERR"));
    assert_eq!(cli(&["COMMAND", "COUNT"]), "30");
    // Without --cluster-enabled: CLUSTER KEYSLOT works, the rest says cluster mode is off.
    assert_eq!(cli(&["CLUSTER", "KEYSLOT", "foo"]), "12182");
    assert!(cli(&["CLUSTER", "INFO"]).contains("cluster support disabled"));
    assert!(cli(&["INFO", "cluster"]).contains("cluster_enabled:0"));
    assert!(cli(&["COMMAND", "DOCS", "get"]).contains("summary"));
    assert!(cli(&["COMMAND"]).contains("mset"));
    assert!(cli(&["CLIENT", "ID"]).parse::<u64>().is_ok());
    assert!(cli(&["CLIENT", "INFO"]).contains("db=0"));
    assert!(cli(&["CLIENT", "KILL", "x"]).starts_with("ERR unknown subcommand"));
    let info = cli(&["INFO"]);
    for section in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Stats",
        "# Keyspace",
        "# Strata",
        "redis_version:",
        "connected_clients:",
        "db0:keys=",
        "compaction_policy:",
    ] {
        assert!(info.contains(section), "{section} in {info}");
    }
    assert!(cli(&["INFO", "strata"]).starts_with("# Strata"));
    assert!(cli(&["HELLO", "3"]).contains("proto"));
    assert!(cli(&["HELLO", "4"]).starts_with("NOPROTO"));
    assert!(cli(&["AUTH", "x"]).starts_with("ERR AUTH <password> called without"));
    // SCAN: in key order, resumable, with MATCH and COUNT; redis-cli --scan follows cursors.
    for i in 0..30 {
        assert_eq!(cli(&["SET", &format!("user:{i:02}"), "x"]), "OK");
    }
    let scanned = cli(&["--scan", "--pattern", "user:*"]);
    let keys: Vec<&str> = scanned.lines().collect();
    let expected: Vec<String> = (0..30).map(|i| format!("user:{i:02}")).collect();
    assert_eq!(keys, expected);
    let first = cli(&["SCAN", "0", "COUNT", "3"]);
    let cursor = first.lines().next().expect("cursor");
    assert_ne!(cursor, "0");
    assert!(cli(&["SCAN", "12345"]).starts_with("ERR invalid cursor"));
    assert!(cli(&["SCAN", "x"]).starts_with("ERR invalid cursor"));
    assert!(cli(&["DBSIZE"]).parse::<u64>().expect("dbsize") >= 30);
    assert_eq!(cli(&["FLUSHDB"]), "OK");
    assert_eq!(cli(&["--scan"]), "");
    assert_eq!(cli(&["GET", "a"]), "");
    // SHUTDOWN: no reply, the server exits 0.
    let _ = cli(&["SHUTDOWN"]);
    let mut server = server;
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = server.child().try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "SHUTDOWN did not stop the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn pipelined_batches_are_answered_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &["--max-pipeline", "7"]);
    // redis-cli --pipe: 2,000 SETs in one stream.
    let mut input = Vec::new();
    for i in 0..2000 {
        let (key, value) = (format!("p{i}"), format!("v{i}"));
        input.extend(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            )
            .as_bytes(),
        );
    }
    let mut pipe = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli --pipe (install redis-tools)");
    pipe.stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("pipe");
    let output = pipe.wait_with_output().expect("redis-cli --pipe");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("errors: 0, replies: 2000"), "{text}");
    // Raw pipelining: many requests in one write, replies in order.
    let mut client = server.connect();
    let mut batch = Vec::new();
    for i in 0..500 {
        let key = format!("p{i}");
        batch.extend(format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes());
        batch.extend(b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n");
    }
    client.send_raw(&batch);
    for i in 0..500 {
        assert_eq!(client.read(), bulk(&format!("v{i}")));
        assert_eq!(client.read(), R::Int(i + 1));
    }
    // Commands the connection runs itself (GET, SET) between ones it hands to the blocking pool
    // (DBSIZE, an MGET of many keys): still answered in order, each seeing the writes before it.
    let mut batch = Vec::new();
    let many_keys: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
    for i in 0..50 {
        let (key, value) = (format!("q{i}"), format!("w{i}"));
        batch.extend(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            )
            .as_bytes(),
        );
        batch.extend(b"*1\r\n$6\r\nDBSIZE\r\n");
        batch.extend(format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes());
        if i % 10 == 0 {
            batch.extend(format!("*{}\r\n$4\r\nMGET\r\n", many_keys.len() + 1).as_bytes());
            for key in &many_keys {
                batch.extend(format!("${}\r\n{key}\r\n", key.len()).as_bytes());
            }
        }
    }
    client.send_raw(&batch);
    for i in 0..50 {
        assert_eq!(client.read(), R::Status("OK".to_string()));
        assert!(matches!(client.read(), R::Int(n) if n > 0));
        assert_eq!(client.read(), bulk(&format!("w{i}")));
        if i % 10 == 0 {
            let R::Array(values) = client.read() else {
                panic!("MGET");
            };
            assert_eq!(values.len(), many_keys.len());
            assert_eq!(values[199], bulk("v199"));
        }
    }
}

#[test]
fn a_hundred_concurrent_clients_agree_with_a_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &[]);
    let port = server.port;
    // Each client owns 20 keys of its own (checked against its own model) and increments a
    // shared counter (checked against the total).
    let threads: Vec<_> = (0..100u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mut client = Client::connect_with_timeout(port, Duration::from_secs(30));
                let mut model = std::collections::HashMap::new();
                let mut state = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut incrs = 0;
                for _ in 0..100 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let key = format!("c{t}:{}", state % 20);
                    match state % 4 {
                        0 => {
                            let value = format!("v{}", state % 1000);
                            assert_eq!(
                                client.call_bytes(&[b"SET", key.as_bytes(), value.as_bytes()]),
                                R::Status("OK".into())
                            );
                            model.insert(key, value);
                        }
                        1 => {
                            let expected = model.get(&key).map(|v| v.as_bytes().to_vec());
                            assert_eq!(
                                client.call_bytes(&[b"GET", key.as_bytes()]),
                                R::Bulk(expected)
                            );
                        }
                        2 => {
                            let existed = i64::from(model.remove(&key).is_some());
                            assert_eq!(
                                client.call_bytes(&[b"DEL", key.as_bytes()]),
                                R::Int(existed)
                            );
                        }
                        _ => {
                            assert!(matches!(
                                client.call_bytes(&[b"INCR", b"shared"]),
                                R::Int(_)
                            ));
                            incrs += 1;
                        }
                    }
                }
                (model, incrs)
            })
        })
        .collect();
    let mut total = 0;
    let mut client = server.connect();
    for thread in threads {
        let (model, incrs) = thread.join().expect("client thread");
        total += incrs;
        for (key, value) in model {
            assert_eq!(client.call_bytes(&[b"GET", key.as_bytes()]), bulk(&value));
        }
    }
    assert_eq!(
        client.call_bytes(&[b"GET", b"shared"]),
        bulk(&total.to_string())
    );
}

#[test]
fn kill_9_under_sync_always_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &["--sync", "always"]);
    let mut client = server.connect();
    for i in 0..300 {
        let key = format!("durable{i}");
        assert_eq!(
            client.call_bytes(&[b"SET", key.as_bytes(), b"yes"]),
            R::Status("OK".into())
        );
    }
    let status = server.stop("-KILL");
    assert!(!status.success());
    let server = Server::start(dir.path(), &["--sync", "always"]);
    let mut client = server.connect();
    for i in 0..300 {
        let key = format!("durable{i}");
        assert_eq!(
            client.call_bytes(&[b"GET", key.as_bytes()]),
            bulk("yes"),
            "{key}"
        );
    }
}

#[test]
fn bad_frames_oversize_strings_and_wrong_passwords_leave_other_clients_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(
        dir.path(),
        &[
            "--requirepass",
            "s3cret",
            "--max-bulk-bytes",
            "1024",
            "--max-request-bytes",
            "65536",
        ],
    );
    let mut bystander = server.connect();
    assert!(is_err(&bystander.call_bytes(&[b"GET", b"k"]), "NOAUTH"));
    assert!(is_err(
        &bystander.call_bytes(&[b"AUTH", b"wrong"]),
        "WRONGPASS"
    ));
    assert_eq!(
        bystander.call_bytes(&[b"AUTH", b"s3cret"]),
        R::Status("OK".into())
    );
    assert_eq!(
        bystander.call_bytes(&[b"SET", b"k", b"v"]),
        R::Status("OK".into())
    );

    // A malformed frame: a protocol error, then the connection is closed.
    for garbage in [
        &b"*2\r\n$3\r\nGET\r\n:1\r\n"[..],
        b"HELLO\r\n",
        b"*1\r\n*1\r\n*1\r\n",
    ] {
        let mut bad = server.connect();
        bad.send_raw(garbage);
        assert!(is_err(&bad.read(), "ERR Protocol error"));
        assert!(bad.closed());
    }
    // Over the bulk limit (declared in the header, never sent) and over the request limit.
    let mut big = server.connect();
    assert_eq!(
        big.call_bytes(&[b"AUTH", b"s3cret"]),
        R::Status("OK".into())
    );
    big.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n");
    assert!(is_err(
        &big.read(),
        "ERR Protocol error: invalid bulk length"
    ));
    assert!(big.closed());
    // An unauthenticated client may not send large requests at all.
    let mut stranger = server.connect();
    stranger.send(&[b"SET", b"k", &vec![b'x'; 512]]);
    assert!(is_err(&stranger.read(), "NOAUTH"));
    stranger.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n");
    assert!(is_err(&stranger.read(), "ERR Protocol error"));

    // The bystander still works.
    assert_eq!(bystander.call_bytes(&[b"GET", b"k"]), bulk("v"));
    assert_eq!(bystander.call_bytes(&[b"PING"]), R::Status("PONG".into()));
}

#[test]
fn protected_mode_and_client_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(STRATA)
        .arg("serve")
        .arg(dir.path())
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .expect("strata serve");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("protected mode"), "{stderr}");

    let server = Server::start(dir.path(), &["--max-clients", "2"]);
    let mut first = server.connect();
    let mut second = server.connect();
    assert_eq!(first.call_bytes(&[b"PING"]), R::Status("PONG".into()));
    assert_eq!(second.call_bytes(&[b"PING"]), R::Status("PONG".into()));
    let mut third = server.connect();
    assert!(is_err(&third.read(), "ERR max number of clients reached"));
    assert!(third.closed());
    assert_eq!(first.call_bytes(&[b"PING"]), R::Status("PONG".into()));
}

#[test]
fn sigterm_shuts_down_gracefully_and_the_data_is_there_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &["--sync", "no"]);
    assert_eq!(server.cli(&["MSET", "x", "1", "y", "2"]), "OK");
    let mut idle = server.connect();
    assert_eq!(idle.call_bytes(&[b"PING"]), R::Status("PONG".into()));
    let status = server.stop("-TERM");
    assert!(status.success(), "{status:?}");
    assert!(idle.closed());
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.cli(&["MGET", "x", "y"]), "1\n2");
    let status = server.stop("-INT");
    assert!(status.success(), "{status:?}");
}

#[test]
fn strata_autotune_tunes_the_served_database_beside_concurrent_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), &[]);
    let port = server.port;
    let mut client = server.connect();
    for i in 0..2_000 {
        let key = format!("k{i:05}");
        assert_eq!(client.call(&["SET", &key, "value"]), R::Status("OK".into()));
    }
    for i in 0..4_000 {
        let _ = client.call(&["GET", &format!("k{:05}", i % 3_000)]);
    }
    let first = server.cli(&["STRATA.AUTOTUNE"]);
    assert!(first.starts_with("decision 1: "), "{first}");
    assert!(first.contains("6000 ops"), "{first}");
    let history = server.cli(&["STRATA.AUTOTUNE", "HISTORY"]);
    assert!(history.starts_with("decision 1: "), "{history}");
    assert!(server
        .cli(&["STRATA.AUTOTUNE", "NOW", "extra"])
        .contains("wrong number of arguments"));
    assert!(server
        .cli(&["strata.autotune", "bogus"])
        .starts_with("ERR unknown subcommand 'bogus'"));
    // `strata tune --apply` on the served database says how to tune it where it runs.
    let refused = Command::new(STRATA)
        .args(["tune", "--apply"])
        .arg(dir.path())
        .output()
        .expect("strata tune");
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("STRATA.AUTOTUNE"), "{message}");
    // Four clients decide while four others write and read: every call returns, and the
    // decisions are numbered one after another.
    let deciders: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut client = Client::connect_with_timeout(port, Duration::from_secs(60));
                (0..5)
                    .map(|_| match client.call(&["STRATA.AUTOTUNE", "NOW"]) {
                        R::Bulk(Some(line)) => String::from_utf8(line).expect("UTF-8"),
                        other => panic!("STRATA.AUTOTUNE: {other:?}"),
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let workers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut client = Client::connect_with_timeout(port, Duration::from_secs(60));
                for i in 0..300 {
                    let key = format!("w{t}:{i}");
                    assert_eq!(client.call(&["SET", &key, "v"]), R::Status("OK".into()));
                    assert_eq!(client.call(&["GET", &key]), bulk("v"));
                }
            })
        })
        .collect();
    let mut numbers: Vec<u64> = Vec::new();
    for decider in deciders {
        for line in decider.join().expect("decider") {
            let number = line
                .strip_prefix("decision ")
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("not a decision: {line}"));
            numbers.push(number);
        }
    }
    for worker in workers {
        worker.join().expect("worker");
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (2..=21).collect::<Vec<u64>>());
    match client.call(&["STRATA.AUTOTUNE", "HISTORY"]) {
        R::Array(lines) => {
            assert_eq!(lines.len(), 8);
            assert!(matches!(&lines[7], R::Bulk(Some(l)) if l.starts_with(b"decision 21: ")));
        }
        other => panic!("HISTORY: {other:?}"),
    }
}
