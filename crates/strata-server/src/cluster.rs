//! Redis Cluster's protocol with an administrator-pushed topology (no gossip), as Kvrocks does
//! it: `CLUSTERX SETNODEID` names the node, `CLUSTERX SETNODES` gives every node the same list of
//! nodes and slot ranges with a version, and every key command checks its key's slot: a slot
//! another node serves is `MOVED`, keys of several slots `CROSSSLOT`, a slot nobody serves
//! `CLUSTERDOWN`. The node id and topology are kept in `cluster-nodes.conf` in the database
//! directory (written to a temporary file and renamed), so a restarted node keeps them.
//!
//! The SETNODES text has one line per node:
//! `node_id ip port master|slave master_id|- [slot|start-end ...]`
//! (node ids are 40 characters; a master lists its slots, a slave names its master with `-` for
//! no slots).

use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use parking_lot::RwLock;

use crate::commands::{parse_integer, syntax_error};
use crate::node::Node;
use crate::reply::Reply;

/// The number of hash slots.
pub const SLOTS: usize = 16_384;

/// The length of a node id.
pub const NODE_ID_LEN: usize = 40;

/// The file, in the database directory, that keeps the node id and the topology.
pub const STATE_FILE: &str = "cluster-nodes.conf";

/// The hash slot of `key`, as Redis computes it: CRC16/XMODEM of the key modulo 16384, or of its
/// hash tag, the bytes between the first `{` and the first `}` after it when they are not empty.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16::State::<crc16::XMODEM>::calculate(hashed) % SLOTS as u16
}

/// A node's role in the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serves slots.
    Master,
    /// A replica of a master (listed, never sent keys).
    Slave,
}

/// One node of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// Its 40-character id.
    pub id: String,
    /// The address clients reach it at.
    pub ip: String,
    /// Its port.
    pub port: u16,
    /// Master or slave.
    pub role: Role,
    /// A slave's master.
    pub master: Option<String>,
    /// A master's slot ranges, inclusive.
    pub ranges: Vec<(u16, u16)>,
}

/// The nodes, the owner of each slot and the version of the topology.
#[derive(Debug, Clone)]
pub struct Topology {
    /// The version the administrator gave it.
    pub version: i64,
    /// The nodes in the order they were given.
    pub nodes: Vec<ClusterNode>,
    /// For each slot, the index in `nodes` of the master serving it.
    owners: Vec<Option<u16>>,
}

impl Topology {
    /// Parses the SETNODES text: one node a line, blank lines ignored.
    pub fn parse(text: &str, version: i64) -> Result<Topology, String> {
        let mut nodes: Vec<ClusterNode> = Vec::new();
        let mut owners: Vec<Option<u16>> = vec![None; SLOTS];
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            if fields.len() < 5 {
                return Err(format!(
                    "invalid node line {line:?}: expected node_id ip port master|slave \
                     master_id|- [slots]"
                ));
            }
            let id = fields[0];
            if id.len() != NODE_ID_LEN || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(format!(
                    "invalid node id {id:?}: expected 40 letters or digits"
                ));
            }
            if nodes.iter().any(|n| n.id == id) {
                return Err(format!("node id {id} is given twice"));
            }
            let ip = fields[1];
            let port: u16 = match fields[2].parse() {
                Ok(port) if port > 0 => port,
                _ => return Err(format!("invalid port {:?}", fields[2])),
            };
            let role = match fields[3].to_ascii_lowercase().as_str() {
                "master" => Role::Master,
                "slave" | "replica" => Role::Slave,
                other => return Err(format!("invalid role {other:?}: expected master or slave")),
            };
            let master = match (role, fields[4]) {
                (Role::Master, "-") => None,
                (Role::Master, _) => {
                    return Err(format!("master {id} names a master: expected -"));
                }
                (Role::Slave, "-") => {
                    return Err(format!("slave {id} names no master"));
                }
                (Role::Slave, master) => Some(master.to_string()),
            };
            if role == Role::Slave && fields.len() > 5 {
                return Err(format!("slave {id} lists slots: only masters serve slots"));
            }
            let index = u16::try_from(nodes.len()).map_err(|_| "too many nodes".to_string())?;
            let mut ranges = Vec::new();
            for range in &fields[5..] {
                let (start, end) = parse_range(range)?;
                for slot in start..=end {
                    let owner = &mut owners[usize::from(slot)];
                    if owner.is_some() {
                        return Err(format!("slot {slot} is assigned twice"));
                    }
                    *owner = Some(index);
                }
                ranges.push((start, end));
            }
            nodes.push(ClusterNode {
                id: id.to_string(),
                ip: ip.to_string(),
                port,
                role,
                master,
                ranges,
            });
        }
        if nodes.is_empty() {
            return Err("no nodes given".to_string());
        }
        for node in &nodes {
            if let Some(master) = &node.master {
                if !nodes
                    .iter()
                    .any(|n| &n.id == master && n.role == Role::Master)
                {
                    return Err(format!(
                        "slave {}'s master {master} is not a master given",
                        node.id
                    ));
                }
            }
        }
        Ok(Topology {
            version,
            nodes,
            owners,
        })
    }

    /// The topology as SETNODES text.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for node in &self.nodes {
            let role = match node.role {
                Role::Master => "master",
                Role::Slave => "slave",
            };
            let _ = write!(
                text,
                "{} {} {} {} {}",
                node.id,
                node.ip,
                node.port,
                role,
                node.master.as_deref().unwrap_or("-")
            );
            for &(start, end) in &node.ranges {
                if start == end {
                    let _ = write!(text, " {start}");
                } else {
                    let _ = write!(text, " {start}-{end}");
                }
            }
            text.push('\n');
        }
        text
    }

    /// The master serving `slot`.
    pub fn owner(&self, slot: u16) -> Option<&ClusterNode> {
        let index = (*self.owners.get(usize::from(slot))?)?;
        self.nodes.get(usize::from(index))
    }

    /// How many slots have a master.
    pub fn assigned_slots(&self) -> usize {
        self.owners.iter().filter(|o| o.is_some()).count()
    }

    fn replicas_of<'a>(&'a self, master: &'a str) -> impl Iterator<Item = &'a ClusterNode> + 'a {
        self.nodes
            .iter()
            .filter(move |n| n.master.as_deref() == Some(master))
    }
}

fn parse_range(text: &str) -> Result<(u16, u16), String> {
    let slot = |s: &str| -> Result<u16, String> {
        match s.parse::<u16>() {
            Ok(slot) if usize::from(slot) < SLOTS => Ok(slot),
            _ => Err(format!(
                "invalid slot {s:?} in {text:?}: expected 0 to 16383"
            )),
        }
    };
    let (start, end) = match text.split_once('-') {
        Some((start, end)) => (slot(start)?, slot(end)?),
        None => (slot(text)?, slot(text)?),
    };
    if start > end {
        return Err(format!("invalid slot range {text:?}: start after end"));
    }
    Ok((start, end))
}

/// What a node in cluster mode knows: its id, the topology, and where it keeps them.
#[derive(Debug)]
pub struct Cluster {
    state: RwLock<State>,
    path: PathBuf,
}

#[derive(Debug, Clone)]
struct State {
    myid: String,
    topology: Option<Topology>,
}

/// Where a key command goes.
pub(crate) enum Route {
    /// This node serves it.
    Here,
    /// An error reply: MOVED, CROSSSLOT or CLUSTERDOWN.
    Refuse(Reply),
}

impl Cluster {
    /// Loads the node id and topology from `dir`'s state file, or starts with a new random id
    /// and no topology.
    pub fn load(dir: &Path) -> Result<Cluster, String> {
        let path = dir.join(STATE_FILE);
        let state = match std::fs::read_to_string(&path) {
            Ok(text) => parse_state(&text).map_err(|e| format!("{}: {e}", path.display()))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => State {
                myid: random_id(),
                topology: None,
            },
            Err(error) => return Err(format!("reading {}: {error}", path.display())),
        };
        let cluster = Cluster {
            state: RwLock::new(state),
            path,
        };
        Ok(cluster)
    }

    /// This node's id.
    pub fn myid(&self) -> String {
        self.state.read().myid.clone()
    }

    /// The topology's version, -1 without one.
    pub fn version(&self) -> i64 {
        self.state
            .read()
            .topology
            .as_ref()
            .map_or(-1, |t| t.version)
    }

    fn save(&self, state: &State) -> Result<(), String> {
        let mut text = format!("myid {}\n", state.myid);
        if let Some(topology) = &state.topology {
            let _ = write!(text, "version {}\n{}", topology.version, topology.to_text());
        }
        let temp = self.path.with_extension("conf.tmp");
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| format!("ERR could not save {}: {e}", self.path.display()))
    }

    /// Checks the slots of a command's keys.
    pub(crate) fn route<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) -> Route {
        let mut slot = None;
        for key in keys {
            let this = key_slot(key);
            match slot {
                None => slot = Some(this),
                Some(s) if s != this => {
                    return Route::Refuse(Reply::error(
                        "CROSSSLOT Keys in request don't hash to the same slot",
                    ))
                }
                Some(_) => {}
            }
        }
        let Some(slot) = slot else {
            return Route::Here;
        };
        let state = self.state.read();
        let owner = state.topology.as_ref().and_then(|t| t.owner(slot));
        match owner {
            None => Route::Refuse(Reply::error("CLUSTERDOWN Hash slot not served")),
            Some(owner) if owner.id == state.myid => Route::Here,
            Some(owner) => Route::Refuse(Reply::error(format!(
                "MOVED {slot} {}",
                endpoint(&owner.ip, owner.port)
            ))),
        }
    }
}

fn endpoint(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn parse_state(text: &str) -> Result<State, String> {
    let mut lines = text.lines();
    let myid = lines
        .next()
        .and_then(|l| l.strip_prefix("myid "))
        .map(str::trim)
        .filter(|id| id.len() == NODE_ID_LEN)
        .ok_or("the first line is not `myid <40-character id>`")?
        .to_string();
    let topology = match lines.next() {
        None => None,
        Some(line) => {
            let version = line
                .strip_prefix("version ")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or("the second line is not `version <number>`")?;
            let rest: Vec<&str> = lines.collect();
            Some(Topology::parse(&rest.join("\n"), version)?)
        }
    };
    Ok(State { myid, topology })
}

/// A new node id: 40 hexadecimal digits from the process's random hash keys, the time and the
/// process id.
fn random_id() -> String {
    let mut id = String::new();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hasher = std::collections::hash_map::RandomState::new();
    let mut round = 0u64;
    while id.len() < NODE_ID_LEN {
        let value = hasher.hash_one((seed, std::process::id(), round));
        let _ = write!(id, "{value:016x}");
        round += 1;
    }
    id.truncate(NODE_ID_LEN);
    id
}

fn not_enabled() -> Reply {
    Reply::error("ERR This instance has cluster support disabled")
}

/// `CLUSTERX SETNODES text version [FORCE]`, `CLUSTERX SETNODEID id`, `CLUSTERX VERSION`,
/// `CLUSTERX MYID`.
pub(crate) fn clusterx(node: &Node, args: &[Bytes]) -> Reply {
    let Some(cluster) = &node.cluster else {
        return not_enabled();
    };
    let sub = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    match (sub.as_str(), args.len()) {
        ("version", 1) => Reply::Integer(cluster.version()),
        ("myid", 1) => Reply::text(cluster.myid()),
        ("setnodeid", 2) => {
            let id = String::from_utf8_lossy(&args[1]).to_string();
            if id.len() != NODE_ID_LEN || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Reply::error("ERR Invalid node id: expected 40 letters or digits");
            }
            let mut state = cluster.state.write();
            let mut next = state.clone();
            next.myid = id;
            match cluster.save(&next) {
                Ok(()) => {
                    *state = next;
                    Reply::OK
                }
                Err(message) => Reply::error(message),
            }
        }
        ("setnodes", 3 | 4) => {
            let force = match args.get(3) {
                None => false,
                Some(flag) if flag.eq_ignore_ascii_case(b"force") => true,
                Some(_) => return syntax_error(),
            };
            let Some(version) = parse_integer(&args[2]).filter(|v| *v >= 0) else {
                return Reply::error("ERR Invalid cluster version");
            };
            let Ok(text) = std::str::from_utf8(&args[1]) else {
                return Reply::error("ERR Invalid cluster nodes info: not UTF-8");
            };
            let topology = match Topology::parse(text, version) {
                Ok(topology) => topology,
                Err(message) => {
                    return Reply::error(format!("ERR Invalid cluster nodes info: {message}"))
                }
            };
            let mut state = cluster.state.write();
            let current = state.topology.as_ref().map_or(-1, |t| t.version);
            if !force && version <= current {
                return Reply::error(format!(
                    "ERR Invalid cluster version: {version} is not above the current {current} \
                     (FORCE sets it anyway)"
                ));
            }
            let mut next = state.clone();
            next.topology = Some(topology);
            match cluster.save(&next) {
                Ok(()) => {
                    *state = next;
                    Reply::OK
                }
                Err(message) => Reply::error(message),
            }
        }
        ("version" | "myid" | "setnodeid" | "setnodes", _) => Reply::error(format!(
            "ERR wrong number of arguments for 'clusterx|{sub}' command"
        )),
        _ => Reply::error(format!(
            "ERR unknown subcommand '{}'. Try CLUSTERX SETNODES, SETNODEID, VERSION or MYID.",
            sub.chars()
                .filter(|c| !c.is_control())
                .take(64)
                .collect::<String>()
        )),
    }
}

/// `CLUSTER KEYSLOT|MYID|INFO|SLOTS|SHARDS|NODES|COUNTKEYSINSLOT`.
pub(crate) fn cluster(node: &Node, args: &[Bytes]) -> Reply {
    let sub = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    if sub == "keyslot" {
        return match args {
            [_, key] => Reply::Integer(i64::from(key_slot(key))),
            _ => Reply::error("ERR wrong number of arguments for 'cluster|keyslot' command"),
        };
    }
    let Some(cluster) = &node.cluster else {
        return not_enabled();
    };
    let state = cluster.state.read().clone();
    let myid = state.myid.as_str();
    let empty = Topology {
        version: 0,
        nodes: Vec::new(),
        owners: vec![None; SLOTS],
    };
    let topology = state.topology.as_ref().unwrap_or(&empty);
    match (sub.as_str(), args.len()) {
        ("myid", 1) => Reply::text(myid),
        ("info", 1) => {
            let assigned = topology.assigned_slots();
            let size = topology
                .nodes
                .iter()
                .filter(|n| !n.ranges.is_empty())
                .count();
            let ok = state.topology.is_some() && assigned == SLOTS;
            let mut text = String::new();
            let lines: [(&str, String); 11] = [
                ("cluster_state", if ok { "ok" } else { "fail" }.to_string()),
                ("cluster_slots_assigned", assigned.to_string()),
                ("cluster_slots_ok", assigned.to_string()),
                ("cluster_slots_pfail", "0".to_string()),
                ("cluster_slots_fail", "0".to_string()),
                ("cluster_known_nodes", topology.nodes.len().to_string()),
                ("cluster_size", size.to_string()),
                ("cluster_current_epoch", topology.version.to_string()),
                ("cluster_my_epoch", topology.version.to_string()),
                ("cluster_stats_messages_sent", "0".to_string()),
                ("cluster_stats_messages_received", "0".to_string()),
            ];
            for (key, value) in lines {
                let _ = write!(text, "{key}:{value}\r\n");
            }
            Reply::text(text)
        }
        ("nodes", 1) => {
            let mut text = String::new();
            for n in &topology.nodes {
                let mut flags = String::new();
                if n.id == myid {
                    flags.push_str("myself,");
                }
                flags.push_str(match n.role {
                    Role::Master => "master",
                    Role::Slave => "slave",
                });
                let _ = write!(
                    text,
                    "{} {}@{} {} {} 0 0 {} connected",
                    n.id,
                    endpoint(&n.ip, n.port),
                    u32::from(n.port) + 10_000,
                    flags,
                    n.master.as_deref().unwrap_or("-"),
                    topology.version
                );
                for &(start, end) in &n.ranges {
                    if start == end {
                        let _ = write!(text, " {start}");
                    } else {
                        let _ = write!(text, " {start}-{end}");
                    }
                }
                text.push('\n');
            }
            Reply::text(text)
        }
        ("slots", 1) => {
            let node_entry = |n: &ClusterNode| {
                Reply::Array(vec![
                    Reply::text(n.ip.clone()),
                    Reply::Integer(i64::from(n.port)),
                    Reply::text(n.id.clone()),
                ])
            };
            let mut ranges: Vec<(u16, u16, &ClusterNode)> = topology
                .nodes
                .iter()
                .flat_map(|n| n.ranges.iter().map(move |&(s, e)| (s, e, n)))
                .collect();
            ranges.sort_by_key(|&(start, _, _)| start);
            let entries = ranges
                .into_iter()
                .map(|(start, end, master)| {
                    let mut entry = vec![
                        Reply::Integer(i64::from(start)),
                        Reply::Integer(i64::from(end)),
                        node_entry(master),
                    ];
                    entry.extend(topology.replicas_of(&master.id).map(node_entry));
                    Reply::Array(entry)
                })
                .collect();
            Reply::Array(entries)
        }
        ("shards", 1) => {
            let describe = |n: &ClusterNode| {
                let role = match n.role {
                    Role::Master => "master",
                    Role::Slave => "replica",
                };
                Reply::Map(vec![
                    (Reply::text("id"), Reply::text(n.id.clone())),
                    (Reply::text("port"), Reply::Integer(i64::from(n.port))),
                    (Reply::text("ip"), Reply::text(n.ip.clone())),
                    (Reply::text("endpoint"), Reply::text(n.ip.clone())),
                    (Reply::text("role"), Reply::text(role)),
                    (Reply::text("replication-offset"), Reply::Integer(0)),
                    (Reply::text("health"), Reply::text("online")),
                ])
            };
            let shards = topology
                .nodes
                .iter()
                .filter(|n| n.role == Role::Master)
                .map(|master| {
                    let slots = master
                        .ranges
                        .iter()
                        .flat_map(|&(s, e)| {
                            [Reply::Integer(i64::from(s)), Reply::Integer(i64::from(e))]
                        })
                        .collect();
                    let mut nodes = vec![describe(master)];
                    nodes.extend(topology.replicas_of(&master.id).map(describe));
                    Reply::Map(vec![
                        (Reply::text("slots"), Reply::Array(slots)),
                        (Reply::text("nodes"), Reply::Array(nodes)),
                    ])
                })
                .collect();
            Reply::Array(shards)
        }
        ("countkeysinslot", 2) => {
            let slot = match parse_integer(&args[1]) {
                Some(slot) if (0..SLOTS as i64).contains(&slot) => slot as u16,
                _ => return Reply::error("ERR Invalid slot"),
            };
            count_keys_in_slot(node, slot)
        }
        ("myid" | "info" | "nodes" | "slots" | "shards" | "countkeysinslot", _) => Reply::error(
            format!("ERR wrong number of arguments for 'cluster|{sub}' command"),
        ),
        _ => {
            Reply::error(format!(
            "ERR unknown subcommand '{}'. Try CLUSTER KEYSLOT, MYID, INFO, NODES, SLOTS, SHARDS \
             or COUNTKEYSINSLOT.",
            sub.chars().filter(|c| !c.is_control()).take(64).collect::<String>()
        ))
        }
    }
}

/// Counts the keys of one slot by reading every key of the node (keys are not kept by slot).
fn count_keys_in_slot(node: &Node, slot: u16) -> Reply {
    let mut count = 0i64;
    for entry in node.db.iter() {
        match entry {
            Ok((key, _)) => {
                if key_slot(&key) == slot {
                    count += 1;
                }
            }
            Err(error) => return crate::commands::engine_error(error),
        }
    }
    Reply::Integer(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(key: &[u8]) -> u16 {
        crc16::State::<crc16::XMODEM>::calculate(key) % 16384
    }

    #[test]
    fn slots_match_redis() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        // CRC16/XMODEM's check value.
        assert_eq!(key_slot(b"123456789"), 0x31C3);
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // An empty tag hashes the whole key; only the first `{` counts.
        assert_eq!(key_slot(b"foo{}{bar}"), whole(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        // No closing brace: the whole key.
        assert_eq!(key_slot(b"foo{bar"), whole(b"foo{bar"));
        assert_eq!(key_slot(b""), 0);
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn topology_parses_and_round_trips() {
        let text = format!("{A} 127.0.0.1 7000 master - 0-100 200\n{B} 127.0.0.1 7001 slave {A}\n");
        let topology = Topology::parse(&text, 3).expect("parse");
        assert_eq!(topology.assigned_slots(), 102);
        assert_eq!(topology.owner(200).map(|n| n.port), Some(7000));
        assert!(topology.owner(150).is_none());
        assert_eq!(topology.to_text(), text);
    }

    #[test]
    fn bad_topologies_are_errors() {
        for text in [
            String::new(),
            "short line".to_string(),
            format!("{A} 127.0.0.1 notaport master - 0-1"),
            format!("{A} 127.0.0.1 7000 boss - 0-1"),
            format!("{A} 127.0.0.1 7000 master - 0-16384"),
            format!("{A} 127.0.0.1 7000 master - 5-1"),
            format!("{A} 127.0.0.1 7000 master - x-1"),
            format!("{A} 127.0.0.1 7000 master - 0-10\n{B} 127.0.0.1 7001 master - 10"),
            format!("{A} 127.0.0.1 7000 slave - "),
            format!("{A} 127.0.0.1 7000 slave {B}"),
            "abc 127.0.0.1 7000 master - 0".to_string(),
            format!("{A} 127.0.0.1 7000 master - 0\n{A} 127.0.0.1 7001 master - 1"),
        ] {
            assert!(
                Topology::parse(&text, 1).is_err(),
                "{text:?} should be refused"
            );
        }
    }

    #[test]
    fn state_file_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::load(dir.path()).expect("load");
        assert_eq!(cluster.myid().len(), NODE_ID_LEN);
        assert_eq!(cluster.version(), -1);
        let state = State {
            myid: A.to_string(),
            topology: Some(
                Topology::parse(&format!("{A} 127.0.0.1 7000 master - 0-16383"), 7).expect("parse"),
            ),
        };
        cluster.save(&state).expect("save");
        let again = Cluster::load(dir.path()).expect("load again");
        assert_eq!(again.myid(), A);
        assert_eq!(again.version(), 7);
    }
}
