//! Sharding with twemproxy: three `strata serve` nodes behind `nutcracker` (Debian's nutcracker
//! package), configured by crates/strata-server/twemproxy/nutcracker.yml with its addresses
//! rewritten to free loopback ports. Keys written through the proxy must each be on exactly one
//! node, all of them somewhere, and readable through the proxy. Every process started here is
//! killed when the guard holding it drops, also when an assertion fails; every wait is bounded.

mod common;

use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Children, Client, R};
const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../strata-server/twemproxy/nutcracker.yml"
);
/// The nodes' addresses in the documented configuration, in order.
const CONFIG_NODES: [&str; 3] = ["127.0.0.1:6381", "127.0.0.1:6382", "127.0.0.1:6383"];
const CONFIG_LISTEN: &str = "listen: 127.0.0.1:6380";

/// The nutcracker binary: Debian installs it in /usr/sbin, which is not on every user's PATH.
fn nutcracker() -> &'static str {
    if Path::new("/usr/sbin/nutcracker").exists() {
        "/usr/sbin/nutcracker"
    } else {
        "nutcracker"
    }
}

/// Starts `strata serve` on a free loopback port; returns the port.
fn start_node(children: &mut Children, db: &Path, extra: &[&str]) -> u16 {
    children.start_serve(db, "127.0.0.1:0", extra).0
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// The documented configuration with the proxy on `listen` and the nodes on `nodes`, and
/// `redis_auth` when given.
fn config_for(listen: u16, nodes: &[u16; 3], auth: Option<&str>) -> String {
    let mut config = std::fs::read_to_string(CONFIG).expect("read twemproxy/nutcracker.yml");
    let mut replace = |from: &str, to: &str| {
        assert_eq!(
            config.matches(from).count(),
            1,
            "nutcracker.yml should hold {from:?} once (the test rewrites it)"
        );
        config = config.replace(from, to);
    };
    replace(CONFIG_LISTEN, &format!("listen: 127.0.0.1:{listen}"));
    for (from, port) in CONFIG_NODES.iter().zip(nodes) {
        replace(&format!("- {from}:"), &format!("- 127.0.0.1:{port}:"));
    }
    if let Some(password) = auth {
        replace(
            "  servers:",
            &format!("  redis_auth: {password}\n  servers:"),
        );
    }
    config
}

/// Starts nutcracker with `config` (written under `dir`); returns once it accepts connections.
fn start_proxy(children: &mut Children, dir: &Path, config: &str, listen: u16) {
    let config_path = dir.join("nutcracker.yml");
    std::fs::write(&config_path, config).expect("write the config");
    let log = dir.join("nutcracker.log");
    let mut child = Command::new(nutcracker())
        .arg("-c")
        .arg(&config_path)
        .args(["-s", &free_port().to_string()])
        .arg("-o")
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "nutcracker (twemproxy) could not run ({e}): install it with \
                 `apt-get install -y nutcracker` (scripts/test_all.sh does this)"
            )
        });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait for nutcracker") {
            panic!(
                "nutcracker exited ({status}); its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        if TcpStream::connect(("127.0.0.1", listen)).is_ok() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nutcracker did not listen on {listen} within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    children.0.push(child);
}

fn key(i: usize) -> String {
    format!("key:{i:06}")
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(i % 50)).into_bytes()
}

/// Every key the client's node holds, by SCAN.
fn scan_all(client: &mut Client) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let reply = client.call(&["SCAN", &cursor, "COUNT", "500"]);
        let R::Array(mut parts) = reply else {
            panic!("SCAN replied {reply:?}")
        };
        let Some(R::Array(batch)) = parts.pop() else {
            panic!("SCAN's second element is not an array")
        };
        let Some(R::Bulk(Some(next))) = parts.pop() else {
            panic!("SCAN's cursor is not a bulk string")
        };
        for k in batch {
            let R::Bulk(Some(k)) = k else {
                panic!("SCAN returned {k:?}")
            };
            keys.insert(String::from_utf8(k).expect("utf-8 key"));
        }
        cursor = String::from_utf8(next).expect("utf-8 cursor");
        if cursor == "0" {
            return keys;
        }
    }
}

/// Three nodes behind the proxy; writes `n` keys through it and checks where they went.
fn shard_and_check(n: usize, auth: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let node_args: Vec<&str> = match auth {
        Some(password) => vec!["--sync", "no", "--requirepass", password],
        None => vec!["--sync", "no"],
    };
    let nodes: [u16; 3] = [0, 1, 2].map(|i| {
        start_node(
            &mut children,
            &dir.path().join(format!("node-{i}")),
            &node_args,
        )
    });
    let listen = free_port();
    let config = config_for(listen, &nodes, auth);
    start_proxy(&mut children, dir.path(), &config, listen);

    let login = |client: &mut Client| {
        if let Some(password) = auth {
            assert_eq!(client.call(&["AUTH", password]), R::Status("OK".into()));
        }
    };

    // Write through the proxy, pipelined in batches.
    let mut proxy = Client::connect(listen);
    login(&mut proxy);
    assert_eq!(proxy.call(&["PING"]), R::Status("PONG".into()));
    for start in (0..n).step_by(200) {
        let batch: Vec<Vec<Vec<u8>>> = (start..n.min(start + 200))
            .map(|i| vec![b"SET".to_vec(), key(i).into_bytes(), value(i)])
            .collect();
        for (offset, reply) in proxy.pipeline(&batch).into_iter().enumerate() {
            assert_eq!(
                reply,
                R::Status("OK".into()),
                "SET {} through the proxy",
                key(start + offset)
            );
        }
    }

    // Ask each node directly which keys it has.
    let mut direct: Vec<Client> = nodes
        .iter()
        .map(|&port| {
            let mut client = Client::connect(port);
            login(&mut client);
            client
        })
        .collect();
    let written: BTreeSet<String> = (0..n).map(key).collect();
    let held: Vec<BTreeSet<String>> = direct.iter_mut().map(scan_all).collect();
    for (i, keys) in held.iter().enumerate() {
        assert!(
            keys.len() > n / 10,
            "node {i} holds {} of {n} keys: the proxy is not spreading them",
            keys.len()
        );
    }
    for i in 0..n {
        let k = key(i);
        let owners: Vec<usize> = (0..3).filter(|&node| held[node].contains(&k)).collect();
        assert_eq!(
            owners.len(),
            1,
            "{k} is on nodes {owners:?}, not exactly one"
        );
    }
    let union: BTreeSet<String> = held.iter().flatten().cloned().collect();
    assert_eq!(
        union, written,
        "the nodes hold other keys than those written"
    );

    // Each owner's GET returns the value; the others have nothing under the key.
    for (node, client) in direct.iter_mut().enumerate() {
        let requests: Vec<Vec<Vec<u8>>> = (0..n)
            .map(|i| vec![b"GET".to_vec(), key(i).into_bytes()])
            .collect();
        for (i, reply) in client.pipeline(&requests).into_iter().enumerate() {
            let expected = held[node].contains(&key(i)).then(|| value(i));
            assert_eq!(reply, R::Bulk(expected), "GET {} on node {node}", key(i));
        }
    }

    // And the proxy finds every key again, one by one and by a multi-node MGET.
    let requests: Vec<Vec<Vec<u8>>> = (0..n)
        .map(|i| vec![b"GET".to_vec(), key(i).into_bytes()])
        .collect();
    for (i, reply) in proxy.pipeline(&requests).into_iter().enumerate() {
        assert_eq!(
            reply,
            R::Bulk(Some(value(i))),
            "GET {} through the proxy",
            key(i)
        );
    }
    let mget: Vec<String> = (0..30).map(key).collect();
    let mut args = vec!["MGET"];
    args.extend(mget.iter().map(String::as_str));
    assert_eq!(
        proxy.call(&args),
        R::Array((0..30).map(|i| R::Bulk(Some(value(i)))).collect())
    );
    drop(children);
}

#[test]
fn keys_written_through_twemproxy_are_each_on_exactly_one_node() {
    shard_and_check(3000, None);
}

#[test]
fn twemproxy_authenticates_to_nodes_with_requirepass() {
    // nutcracker sends AUTH, pipelined with the first request, on each connection to a node.
    shard_and_check(300, Some("s3cret-pass"));
}

#[test]
fn config_file_is_valid_for_nutcracker() {
    let output = Command::new(nutcracker())
        .args(["-t", "-c", CONFIG])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "nutcracker (twemproxy) could not run ({e}): install it with \
                 `apt-get install -y nutcracker` (scripts/test_all.sh does this)"
            )
        });
    let text = String::from_utf8_lossy(&output.stderr).to_string()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "nutcracker -t: {text}");
    assert!(text.contains("syntax is ok"), "nutcracker -t: {text}");
}
