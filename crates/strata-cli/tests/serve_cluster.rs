//! Cluster mode: three `strata serve --cluster-enabled` nodes on free loopback ports, given one
//! topology (0-16383 split in three ranges) by `CLUSTERX SETNODEID` and `CLUSTERX SETNODES`.
//! `redis-cli -c` follows MOVED redirects so every key lands on the node owning its slot,
//! `redis-benchmark --cluster` runs against the nodes, and a restarted node keeps its topology.
//! Every process started here is killed when the guard holding it drops, also when an assertion
//! fails; every wait is bounded.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Children, Client, R};

/// Starts `strata serve --cluster-enabled` on `listen`; returns the port and the child's index.
fn start_node(children: &mut Children, db: &Path, listen: &str) -> (u16, usize) {
    children.start_serve(db, listen, &["--cluster-enabled"])
}

/// Runs redis-cli with `args`; returns its stdout (panics if it fails).
fn redis_cli(args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new("redis-cli")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "redis-cli could not run ({e}): install it with `apt-get install -y redis-tools`"
            )
        });
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input
            .write_all(text.as_bytes())
            .expect("write to redis-cli");
    }
    drop(input);
    let output = child.wait_with_output().expect("redis-cli");
    assert!(output.status.success(), "redis-cli {args:?} failed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The slot ranges of the three nodes.
const RANGES: [&str; 3] = ["0-5460", "5461-10922", "10923-16383"];

fn node_id(i: usize) -> String {
    format!("{:0>40}", format!("strata{i}"))
}

/// The SETNODES text for nodes on `ports`.
fn topology(ports: &[u16; 3]) -> String {
    (0..3)
        .map(|i| {
            format!(
                "{} 127.0.0.1 {} master - {}",
                node_id(i),
                ports[i],
                RANGES[i]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The index of the node serving `slot`.
fn owner(slot: i64) -> usize {
    match slot {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    }
}

fn key(i: usize) -> String {
    format!("key:{i:05}")
}

#[test]
fn three_nodes_redirect_benchmark_and_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let mut ports = [0u16; 3];
    let mut indexes = [0usize; 3];
    for i in 0..3 {
        (ports[i], indexes[i]) = start_node(
            &mut children,
            &dir.path().join(format!("db{i}")),
            "127.0.0.1:0",
        );
    }

    // No topology yet: key commands are refused, introspection works.
    let mut first = Client::connect(ports[0]);
    assert_eq!(
        first.call(&["GET", "foo"]),
        R::Err("CLUSTERDOWN Hash slot not served".to_string())
    );
    assert_eq!(first.call(&["CLUSTER", "KEYSLOT", "foo"]), R::Int(12182));
    assert_eq!(first.call(&["CLUSTERX", "VERSION"]), R::Int(-1));
    let R::Bulk(Some(info)) = first.call(&["INFO", "cluster"]) else {
        panic!("INFO cluster is not a bulk string")
    };
    assert!(String::from_utf8_lossy(&info).contains("cluster_enabled:1"));

    // Push the topology to every node.
    let text = topology(&ports);
    for (i, &port) in ports.iter().enumerate() {
        let mut client = Client::connect(port);
        assert_eq!(
            client.call(&["CLUSTERX", "SETNODEID", &node_id(i)]),
            R::Status("OK".to_string())
        );
        assert_eq!(
            client.call(&["CLUSTERX", "SETNODES", &text, "1"]),
            R::Status("OK".to_string())
        );
        assert_eq!(
            client.call(&["CLUSTER", "MYID"]),
            R::Bulk(Some(node_id(i).into_bytes()))
        );
    }
    // The version must increase unless FORCE; malformed text is an error reply.
    assert!(
        matches!(first.call(&["CLUSTERX", "SETNODES", &text, "1"]), R::Err(e) if e.contains("version"))
    );
    assert_eq!(
        first.call(&["CLUSTERX", "SETNODES", &text, "1", "FORCE"]),
        R::Status("OK".to_string())
    );
    for bad in ["", "garbage", "x 127.0.0.1 1 master - 0-99999"] {
        assert!(
            matches!(first.call(&["CLUSTERX", "SETNODES", bad, "9"]), R::Err(e) if e.starts_with("ERR"))
        );
    }
    assert_eq!(first.call(&["CLUSTERX", "VERSION"]), R::Int(1));
    let R::Array(slots) = first.call(&["CLUSTER", "SLOTS"]) else {
        panic!("CLUSTER SLOTS is not an array")
    };
    assert_eq!(slots.len(), 3);
    let R::Bulk(Some(nodes)) = first.call(&["CLUSTER", "NODES"]) else {
        panic!("CLUSTER NODES is not a bulk string")
    };
    let nodes = String::from_utf8_lossy(&nodes).into_owned();
    assert_eq!(nodes.lines().count(), 3, "{nodes}");
    assert!(nodes.contains(&format!("{} 127.0.0.1:{}@", node_id(0), ports[0])));
    assert!(nodes.contains("myself,master"), "{nodes}");
    assert!(matches!(
        first.call(&["MSET", "a", "1", "b", "2"]),
        R::Err(e) if e.starts_with("CROSSSLOT")
    ));

    // (a) redis-cli -c from one entry node: every SET and GET follows its MOVED redirect.
    let count = 300;
    let sets: String = (0..count)
        .map(|i| format!("SET {} v{i}\n", key(i)))
        .collect();
    let out = redis_cli(&["-c", "-p", &ports[0].to_string()], Some(&sets));
    assert_eq!(out.lines().filter(|l| *l == "OK").count(), count, "{out}");
    let gets: String = (0..count).map(|i| format!("GET {}\n", key(i))).collect();
    let out = redis_cli(&["-c", "-p", &ports[0].to_string()], Some(&gets));
    // redis-cli reports each redirect it follows on a line of its own.
    let (redirects, values): (Vec<&str>, Vec<&str>) = out
        .lines()
        .partition(|l| l.starts_with("-> Redirected to slot"));
    assert!(redirects.len() > count / 3, "{out}");
    let expected: Vec<String> = (0..count).map(|i| format!("v{i}")).collect();
    assert_eq!(values, expected);

    // Each key is on the node owning its slot; the others redirect there.
    let mut clients: Vec<Client> = ports.iter().map(|&p| Client::connect(p)).collect();
    let mut per_node = [0usize; 3];
    for i in 0..count {
        let k = key(i);
        let R::Int(slot) = first.call(&["CLUSTER", "KEYSLOT", &k]) else {
            panic!("CLUSTER KEYSLOT is not an integer")
        };
        let home = owner(slot);
        per_node[home] += 1;
        for (n, client) in clients.iter_mut().enumerate() {
            let reply = client.call(&["GET", &k]);
            if n == home {
                assert_eq!(reply, R::Bulk(Some(format!("v{i}").into_bytes())), "{k}");
            } else {
                assert_eq!(
                    reply,
                    R::Err(format!("MOVED {slot} 127.0.0.1:{}", ports[home])),
                    "{k} on node {n}"
                );
            }
        }
    }
    assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");

    // (b) redis-benchmark --cluster against the three nodes.
    let output = Command::new("redis-benchmark")
        .args(["--cluster", "-p", &ports[1].to_string()])
        .args(["-t", "set,get", "-n", "2000", "-c", "5", "-q"])
        .stdin(Stdio::null())
        .output()
        .expect("redis-benchmark (install redis-tools)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for test in ["SET: ", "GET: "] {
        assert!(
            stdout
                .split(['\r', '\n'])
                .any(|l| l.starts_with(test) && l.contains("requests per second")),
            "no {test} result in {stdout}\n{stderr}"
        );
    }
    assert!(
        !stdout.contains("ERR") && !stderr.contains("rror"),
        "{stdout}\n{stderr}"
    );

    // (c) A restarted node keeps its id and topology.
    let stopped = &mut children.0[indexes[2]];
    // SHUTDOWN closes the connection without a reply.
    clients[2]
        .stream
        .write_all(b"*1\r\n$8\r\nSHUTDOWN\r\n")
        .expect("send SHUTDOWN");
    let _ = stopped.wait();
    let (port, _) = start_node(
        &mut children,
        &dir.path().join("db2"),
        &format!("127.0.0.1:{}", ports[2]),
    );
    assert_eq!(port, ports[2]);
    let mut again = Client::connect(port);
    assert_eq!(again.call(&["CLUSTERX", "VERSION"]), R::Int(1));
    assert_eq!(
        again.call(&["CLUSTER", "MYID"]),
        R::Bulk(Some(node_id(2).into_bytes()))
    );
    for i in 0..count {
        let k = key(i);
        let R::Int(slot) = first.call(&["CLUSTER", "KEYSLOT", &k]) else {
            panic!("CLUSTER KEYSLOT is not an integer")
        };
        let reply = again.call(&["GET", &k]);
        if owner(slot) == 2 {
            assert_eq!(reply, R::Bulk(Some(format!("v{i}").into_bytes())), "{k}");
        } else {
            assert!(matches!(reply, R::Err(e) if e.starts_with("MOVED")), "{k}");
        }
    }
}
