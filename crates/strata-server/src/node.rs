//! The state every connection shares: the database, the settings, the striped key locks, the
//! SCAN cursor table and the counters INFO reports.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};
use strata::{Db, WriteOptions};

use crate::cluster::Cluster;
use crate::frame::FrameLimits;
use crate::{Config, SyncMode};

/// Key locks: a read-modify-write (INCR, APPEND, SET NX, GETDEL, ...) and every write to a key
/// holds the lock of the key's stripe, so commands on one key apply one at a time.
const LOCK_STRIPES: usize = 4096;

/// Cursors of SCAN that stand for keys too long to fit in one (see `scan.rs`).
const CURSOR_TABLE_ENTRIES: usize = 65_536;
const CURSOR_TABLE_BYTES: usize = 64 << 20;

/// What the server settings say, as the command layer uses them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The password clients authenticate with, if any.
    pub requirepass: Option<String>,
    /// When writes reach the device.
    pub sync: SyncMode,
    /// Request limits for authenticated clients.
    pub limits: FrameLimits,
    /// Most commands run per batch before their replies are written.
    pub max_pipeline: usize,
    /// Most reply bytes buffered per connection before they are written.
    pub max_reply_bytes: usize,
    /// Most connected clients.
    pub max_clients: usize,
    /// The address the server listens on (for INFO and CONFIG GET).
    pub listen: String,
}

impl Settings {
    /// The command layer's settings from a server configuration.
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            requirepass: config.requirepass.clone(),
            sync: config.sync,
            limits: config.frame_limits(),
            max_pipeline: config.max_pipeline.max(1),
            max_reply_bytes: config.max_reply_bytes.max(1),
            max_clients: config.max_clients,
            listen: config.listen.clone(),
        }
    }
}

/// Server-wide counters for INFO.
#[derive(Debug, Default)]
pub struct Counters {
    /// Clients connected now.
    pub connected: AtomicUsize,
    /// Connections accepted since the start.
    pub connections: AtomicU64,
    /// Connections refused at the client limit.
    pub rejected: AtomicU64,
    /// Commands run.
    pub commands: AtomicU64,
    /// GET-like reads that found their key.
    pub hits: AtomicU64,
    /// GET-like reads that did not.
    pub misses: AtomicU64,
}

/// One server node: the database and what its connections share. The command layer
/// ([`crate::process`]) runs against it, with or without a network around it.
pub struct Node {
    pub(crate) db: Db,
    pub(crate) settings: Settings,
    locks: Box<[Mutex<()>]>,
    hasher: RandomState,
    pub(crate) cursors: Mutex<CursorTable>,
    next_client_id: AtomicU64,
    pub(crate) counters: Counters,
    pub(crate) started: Instant,
    /// The cluster state, in cluster mode.
    pub(crate) cluster: Option<Cluster>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("db", &self.db)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Node {
    /// A node serving `db` with `settings`.
    pub fn new(db: Db, settings: Settings) -> Node {
        Node {
            db,
            settings,
            locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: RandomState::new(),
            cursors: Mutex::new(CursorTable::default()),
            next_client_id: AtomicU64::new(1),
            counters: Counters::default(),
            started: Instant::now(),
            cluster: None,
        }
    }

    /// A node in cluster mode, with `cluster`'s id and topology.
    pub fn with_cluster(mut self, cluster: Cluster) -> Node {
        self.cluster = Some(cluster);
        self
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// A new client id (`CLIENT ID`), never 0.
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The write options of every write: synced under `--sync always`.
    pub(crate) fn write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.settings.sync == SyncMode::Always,
        }
    }

    /// Locks the stripes of `keys`, in stripe order (so two multi-key commands cannot deadlock).
    pub(crate) fn lock_keys<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = keys
            .into_iter()
            .map(|key| (self.hasher.hash_one(key) % LOCK_STRIPES as u64) as usize)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|s| self.locks[s].lock()).collect()
    }
}

/// SCAN cursors that stand for long keys: numbered from [`CursorTable::FIRST_ID`] up, the oldest
/// forgotten past a count and a byte budget.
#[derive(Debug, Default)]
pub(crate) struct CursorTable {
    keys: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
    bytes: usize,
    next: u64,
}

impl CursorTable {
    /// The first table cursor: above every cursor that encodes its key itself.
    pub(crate) const FIRST_ID: u64 = 1 << 60;

    pub(crate) fn insert(&mut self, key: Vec<u8>) -> u64 {
        let id = Self::FIRST_ID + self.next % Self::FIRST_ID;
        self.next = self.next.wrapping_add(1);
        self.bytes += key.len();
        if let Some(old) = self.keys.insert(id, key) {
            self.bytes -= old.len();
        }
        self.order.push_back(id);
        while self.order.len() > CURSOR_TABLE_ENTRIES || self.bytes > CURSOR_TABLE_BYTES {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(old) = self.keys.remove(&oldest) {
                self.bytes -= old.len();
            }
        }
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<Vec<u8>> {
        self.keys.get(&id).cloned()
    }
}
