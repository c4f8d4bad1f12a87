//! The introspection and connection commands: INFO, CONFIG, COMMAND, CLIENT, HELLO, and
//! DBSIZE's estimate.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::commands::{check_password, spec, Spec, COMMANDS};
use crate::glob;
use crate::node::Node;
use crate::reply::Reply;
use crate::session::Session;

/// The Redis version the server answers as (the commands and replies it follows).
pub const REDIS_VERSION: &str = "7.0.0";

/// DBSIZE: an estimate, not a count. It is the number of entries in the tree's table files plus
/// those in the memtables, so it also counts overwritten versions and deletion markers that
/// compaction has not dropped yet: an upper bound, exact only after a full compaction with no
/// writes since. (Counting exactly means reading every key; SCAN does that.)
pub(crate) fn dbsize(node: &Node) -> u64 {
    let stats = node.db.stats();
    stats.entries() + stats.memtable_entries
}

/// `INFO [section ...]`: Redis's `key:value` lines under `# Section` headers. Sections: server,
/// clients, memory, persistence, stats, keyspace, cluster and strata (the engine's statistics); no
/// argument, `default`, `all` or `everything` gives them all.
pub(crate) fn info(node: &Node, args: &[Bytes]) -> Reply {
    let all = [
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "keyspace",
        "cluster",
        "strata",
    ];
    let wanted: Vec<String> = if args.is_empty() {
        all.iter().map(|s| s.to_string()).collect()
    } else {
        args.iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .collect()
    };
    let everything = wanted
        .iter()
        .any(|w| matches!(w.as_str(), "default" | "all" | "everything"));
    let stats = node.db.stats();
    let mut text = String::new();
    for section in all {
        if !everything && !wanted.iter().any(|w| w == section) {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        let mut title = section.to_string();
        if let Some(first) = title.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let _ = write!(text, "# {title}\r\n");
        for (key, value) in section_lines(node, &stats, section) {
            let _ = write!(text, "{key}:{value}\r\n");
        }
    }
    Reply::text(text)
}

fn section_lines(node: &Node, stats: &strata::Stats, section: &str) -> Vec<(&'static str, String)> {
    let counters = &node.counters;
    let uptime = node.started.elapsed().as_secs();
    let port = node
        .settings
        .listen
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    match section {
        "server" => vec![
            ("redis_version", REDIS_VERSION.to_string()),
            ("strata_version", env!("CARGO_PKG_VERSION").to_string()),
            (
                "redis_mode",
                if node.cluster.is_some() {
                    "cluster"
                } else {
                    "standalone"
                }
                .to_string(),
            ),
            ("os", std::env::consts::OS.to_string()),
            ("arch_bits", (usize::BITS).to_string()),
            ("process_id", std::process::id().to_string()),
            ("tcp_port", port),
            ("uptime_in_seconds", uptime.to_string()),
            ("uptime_in_days", (uptime / 86_400).to_string()),
        ],
        "cluster" => vec![(
            "cluster_enabled",
            u8::from(node.cluster.is_some()).to_string(),
        )],
        "clients" => vec![
            (
                "connected_clients",
                counters.connected.load(Ordering::Relaxed).to_string(),
            ),
            ("maxclients", node.settings.max_clients.to_string()),
            ("blocked_clients", "0".to_string()),
        ],
        "memory" => vec![
            ("used_memory", stats.total_memory_bytes.to_string()),
            ("used_memory_human", human(stats.total_memory_bytes)),
            ("maxmemory", "0".to_string()),
            ("strata_memtable_bytes", stats.memtable_bytes.to_string()),
            (
                "strata_memtable_filter_bytes",
                stats.memtable_filter_bytes.to_string(),
            ),
            (
                "strata_block_cache_bytes",
                stats.block_cache_bytes.to_string(),
            ),
            ("strata_filter_bytes", stats.filter_bytes_in_use.to_string()),
        ],
        "persistence" => vec![
            ("loading", "0".to_string()),
            ("aof_enabled", "0".to_string()),
            ("strata_sync", node.settings.sync.name().to_string()),
            ("strata_wal_syncs", stats.io.wal_syncs.to_string()),
        ],
        "stats" => vec![
            (
                "total_connections_received",
                counters.connections.load(Ordering::Relaxed).to_string(),
            ),
            (
                "total_commands_processed",
                counters.commands.load(Ordering::Relaxed).to_string(),
            ),
            (
                "rejected_connections",
                counters.rejected.load(Ordering::Relaxed).to_string(),
            ),
            (
                "keyspace_hits",
                counters.hits.load(Ordering::Relaxed).to_string(),
            ),
            (
                "keyspace_misses",
                counters.misses.load(Ordering::Relaxed).to_string(),
            ),
            ("expired_keys", "0".to_string()),
            ("evicted_keys", "0".to_string()),
        ],
        "keyspace" => vec![(
            "db0",
            format!(
                "keys={},expires=0,avg_ttl=0",
                stats.entries() + stats.memtable_entries
            ),
        )],
        "strata" => vec![
            ("path", node.db.path().display().to_string()),
            ("compaction_policy", stats.compaction_policy.clone()),
            ("filter_allocator", stats.filter_allocator.clone()),
            ("levels", stats.levels.len().to_string()),
            ("sorted_runs", stats.runs.to_string()),
            ("table_entries", stats.entries().to_string()),
            ("table_bytes", stats.table_bytes().to_string()),
            ("memtable_entries", stats.memtable_entries.to_string()),
            ("immutable_memtables", stats.immutable_memtables.to_string()),
            (
                "average_bits_per_key",
                format!("{:.2}", stats.average_bits_per_key),
            ),
            (
                "write_amplification",
                format!("{:.2}", stats.write_amplification),
            ),
            ("flushes", stats.io.flushes.to_string()),
            ("compactions", stats.io.compactions.to_string()),
            ("point_lookups", stats.io.point_lookups.to_string()),
            (
                "point_lookups_found",
                stats.io.point_lookups_found.to_string(),
            ),
            (
                "write_stall_micros",
                stats.io.write_stall_micros.to_string(),
            ),
            ("last_sequence", stats.last_sequence.to_string()),
            (
                "background_error",
                stats.background_error.clone().unwrap_or_default(),
            ),
        ],
        _ => Vec::new(),
    }
}

fn human(bytes: u64) -> String {
    format!("{:.2}M", bytes as f64 / (1024.0 * 1024.0))
}

/// The settings CONFIG GET answers, as Redis names them.
fn config_values(node: &Node) -> Vec<(&'static str, String)> {
    let settings = &node.settings;
    let bind = settings
        .listen
        .rsplit_once(':')
        .map(|(host, _)| host.trim_matches(['[', ']']).to_string())
        .unwrap_or_default();
    let port = settings
        .listen
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    vec![
        ("save", String::new()),
        ("appendonly", "no".to_string()),
        ("appendfsync", settings.sync.name().to_string()),
        ("databases", "1".to_string()),
        ("maxclients", settings.max_clients.to_string()),
        ("maxmemory", "0".to_string()),
        ("maxmemory-policy", "noeviction".to_string()),
        ("timeout", "0".to_string()),
        ("bind", bind),
        ("port", port),
        ("protected-mode", "yes".to_string()),
        (
            "proto-max-bulk-len",
            settings.limits.max_bulk_bytes.to_string(),
        ),
        (
            "client-query-buffer-limit",
            settings.limits.max_request_bytes.to_string(),
        ),
        (
            "cluster-enabled",
            if node.cluster.is_some() { "yes" } else { "no" }.to_string(),
        ),
    ]
}

/// `CONFIG GET pattern [pattern ...]`, `CONFIG RESETSTAT`; CONFIG SET is refused.
pub(crate) fn config(node: &Node, args: &[Bytes]) -> Reply {
    let sub = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    match sub.as_str() {
        "GET" if args.len() >= 2 => {
            let patterns: Vec<Vec<u8>> = args[1..].iter().map(|p| p.to_ascii_lowercase()).collect();
            let pairs = config_values(node)
                .into_iter()
                .filter(|(name, _)| patterns.iter().any(|p| glob::matches(p, name.as_bytes())))
                .map(|(name, value)| (Reply::text(name), Reply::text(value)))
                .collect();
            Reply::Map(pairs)
        }
        "RESETSTAT" if args.len() == 1 => {
            node.db.reset_stats();
            Reply::OK
        }
        "SET" => {
            Reply::error("ERR CONFIG SET is not supported by Strata: restart with other flags")
        }
        "GET" | "RESETSTAT" => Reply::error(format!(
            "ERR wrong number of arguments for 'config|{}' command",
            sub.to_ascii_lowercase()
        )),
        _ => unknown_subcommand(&args[0], "CONFIG"),
    }
}

/// `STRATA.AUTOTUNE [NOW | HISTORY]`: one auto-tune decision on the served database, taken now
/// and applied (`Db::auto_tune_now`, with the options file's `[auto_tune]` settings or the
/// defaults), replied as the line the info log gets; or the last decisions, oldest first. This
/// is how a database that `strata serve` holds open is tuned from outside (`strata tune
/// --apply` needs the database closed).
pub(crate) fn auto_tune(node: &Node, args: &[Bytes]) -> Reply {
    let sub = args.first().map_or_else(
        || "NOW".to_string(),
        |a| String::from_utf8_lossy(a).to_ascii_uppercase(),
    );
    match (sub.as_str(), args.len()) {
        ("NOW", 0 | 1) => match node.db.auto_tune_now() {
            Ok(decision) => Reply::text(decision.to_string()),
            Err(error) => crate::commands::engine_error(error),
        },
        ("HISTORY", 1) => Reply::Array(
            node.db
                .auto_tune_history()
                .iter()
                .map(|decision| Reply::text(decision.to_string()))
                .collect(),
        ),
        ("NOW" | "HISTORY", _) => Reply::error(format!(
            "ERR wrong number of arguments for 'strata.autotune|{}' command",
            sub.to_ascii_lowercase()
        )),
        _ => unknown_subcommand(&args[0], "STRATA.AUTOTUNE"),
    }
}

fn unknown_subcommand(sub: &[u8], command: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try {command} HELP. (Strata supports only some {command} subcommands)",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    ))
}

fn command_entry(spec: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::text(spec.name),
        Reply::Integer(spec.arity),
        Reply::Array(spec.flags.iter().map(|f| Reply::Simple(f)).collect()),
        Reply::Integer(spec.keys.0),
        Reply::Integer(spec.keys.1),
        Reply::Integer(spec.keys.2),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

fn command_docs(spec: &Spec) -> Reply {
    Reply::Map(vec![
        (Reply::text("summary"), Reply::text(spec.summary)),
        (Reply::text("since"), Reply::text("1.0.0")),
        (Reply::text("group"), Reply::text("strata")),
    ])
}

/// `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name ...`, `COMMAND DOCS [name ...]`,
/// `COMMAND LIST`: the commands this server runs.
pub(crate) fn command(_session: &Session, args: &[Bytes]) -> Reply {
    let Some(sub) = args.first() else {
        return Reply::Array(COMMANDS.iter().map(command_entry).collect());
    };
    let names = || {
        args[1..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
    };
    match String::from_utf8_lossy(sub).to_ascii_uppercase().as_str() {
        "COUNT" => Reply::Integer(COMMANDS.len() as i64),
        "LIST" => Reply::Array(COMMANDS.iter().map(|s| Reply::text(s.name)).collect()),
        "INFO" => {
            if args.len() == 1 {
                return Reply::Array(COMMANDS.iter().map(command_entry).collect());
            }
            Reply::Array(
                names()
                    .map(|n| spec(&n).map_or(Reply::Nil, command_entry))
                    .collect(),
            )
        }
        "DOCS" => {
            let specs: Vec<&Spec> = if args.len() == 1 {
                COMMANDS.iter().collect()
            } else {
                names().filter_map(|n| spec(&n)).collect()
            };
            Reply::Map(
                specs
                    .into_iter()
                    .map(|s| (Reply::text(s.name), command_docs(s)))
                    .collect(),
            )
        }
        _ => unknown_subcommand(sub, "COMMAND"),
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

fn client_info(session: &Session) -> String {
    format!(
        "id={} addr={} name={} age={} db=0 cmd=client|info resp={} user=default\n",
        session.id,
        session.addr,
        session
            .name
            .as_ref()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default(),
        session.created.elapsed().as_secs(),
        session.protocol
    )
}

/// `CLIENT ID | GETNAME | SETNAME name | INFO | LIST | SETINFO attr value`.
pub(crate) fn client(_node: &Node, session: &mut Session, args: &[Bytes]) -> Reply {
    let sub = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    match (sub.as_str(), args.len()) {
        ("ID", 1) => Reply::Integer(i64::try_from(session.id).unwrap_or(i64::MAX)),
        ("GETNAME", 1) => session.name.clone().map_or(Reply::Nil, Reply::Bulk),
        ("SETNAME", 2) => set_name(session, &args[1]),
        ("INFO", 1) => Reply::text(client_info(session)),
        // Only this connection: the server keeps no list of the others.
        ("LIST", 1) => Reply::text(client_info(session)),
        ("SETINFO", 3) => Reply::OK,
        ("ID" | "GETNAME" | "SETNAME" | "INFO" | "LIST" | "SETINFO", _) => Reply::error(format!(
            "ERR wrong number of arguments for 'client|{}' command",
            sub.to_ascii_lowercase()
        )),
        _ => unknown_subcommand(&args[0], "CLIENT"),
    }
}

fn set_name(session: &mut Session, name: &Bytes) -> Reply {
    if !valid_name(name) {
        return Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        );
    }
    session.name = (!name.is_empty()).then(|| name.clone());
    Reply::OK
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
pub(crate) fn hello(node: &Node, session: &mut Session, args: &[Bytes]) -> Reply {
    let mut protocol = session.protocol;
    let mut auth: Option<(&Bytes, &Bytes)> = None;
    let mut name: Option<&Bytes> = None;
    if let Some(version) = args.first() {
        match crate::commands::parse_integer(version) {
            Some(version @ (2 | 3)) => protocol = version as u8,
            Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
        }
        let mut i = 1;
        while i < args.len() {
            let option = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
            match option.as_str() {
                "AUTH" if i + 2 < args.len() => {
                    auth = Some((&args[i + 1], &args[i + 2]));
                    i += 3;
                }
                "SETNAME" if i + 1 < args.len() => {
                    name = Some(&args[i + 1]);
                    i += 2;
                }
                _ => {
                    return Reply::error(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(&args[i][..args[i].len().min(128)])
                    ))
                }
            }
        }
    }
    if let Some((user, password)) = auth {
        let outcome = check_password(node, session, user, password);
        if outcome != Reply::OK {
            return outcome;
        }
    }
    if !session.authenticated {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        );
    }
    if let Some(name) = name {
        let outcome = set_name(session, name);
        if outcome != Reply::OK {
            return outcome;
        }
    }
    session.protocol = protocol;
    Reply::Map(vec![
        (Reply::text("server"), Reply::text("redis")),
        (Reply::text("version"), Reply::text(REDIS_VERSION)),
        (Reply::text("proto"), Reply::Integer(i64::from(protocol))),
        (
            Reply::text("id"),
            Reply::Integer(i64::try_from(session.id).unwrap_or(i64::MAX)),
        ),
        (Reply::text("mode"), Reply::text("standalone")),
        (Reply::text("role"), Reply::text("master")),
        (Reply::text("modules"), Reply::Array(Vec::new())),
    ])
}
