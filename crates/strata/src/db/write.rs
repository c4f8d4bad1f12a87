//! The write path: validation, group commit, memtable switching and write stalls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{CommitState, DbInner, PendingWrite, ReadView};
use crate::compaction::WritePressure;
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::limits::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::memtable::MemTable;
use crate::stats::add;
use crate::wal::{wal_path, LogWriter, WriteBatch};

fn validate_entry(key_bytes: usize, value_bytes: usize) -> Result<()> {
    if key_bytes > MAX_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key of {key_bytes} bytes exceeds the {MAX_KEY_BYTES}-byte limit"
        )));
    }
    if value_bytes > MAX_VALUE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "value of {value_bytes} bytes exceeds the {MAX_VALUE_BYTES}-byte limit"
        )));
    }
    Ok(())
}

fn validate(batch: &WriteBatch) -> Result<()> {
    if batch.approximate_bytes() > MAX_BATCH_BYTES {
        return Err(Error::InvalidArgument(format!(
            "write batch of {} bytes exceeds the {MAX_BATCH_BYTES}-byte limit",
            batch.approximate_bytes()
        )));
    }
    for entry in batch.entries() {
        validate_entry(entry.key.len(), entry.value.len())?;
    }
    Ok(())
}

/// Entries per timed write call: a call is timed when it carries the count of entries written
/// across a multiple of this, about one put in sixteen (two clock reads each), what auto-tune's
/// measured foreground cost of a write comes from (`model::auto_tune::Measurements`).
const WRITE_TIMING_EVERY: u64 = 16;

/// The reusable single-write batch is dropped rather than kept when a write made it larger than
/// this, so one huge value does not pin its buffer for the life of the database.
const SINGLE_WRITE_KEEP_BYTES: usize = 64 * 1024;

impl DbInner {
    /// One put or delete (`Db::put`, `Db::delete`). When no group is committing, the caller leads
    /// a group itself and encodes its write into the commit state's reusable batch, so the write
    /// allocates nothing on its way to the memtable; otherwise it queues a batch of its own, as
    /// [`DbInner::write`] does.
    pub(crate) fn write_single(
        &self,
        kind: ValueKind,
        key: &[u8],
        value: &[u8],
        sync: bool,
    ) -> Result<()> {
        self.check_writable()?;
        validate_entry(key.len(), value.len())?;
        if let Some(error) = self.background_error() {
            return Err(error);
        }
        self.timed_write(1, || self.commit_single(kind, key, value, sync))
    }

    /// [`DbInner::write_single`] once the write is validated.
    fn commit_single(&self, kind: ValueKind, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        if let Some(mut commit) = self.commit.try_lock() {
            let mut batch = commit.single_write.take().unwrap_or_default();
            batch.clear();
            batch.push_entry(kind, key, value);
            let (result, batch) = self.lead_group(&mut commit, Some((batch, sync)));
            commit.single_write = batch.filter(|b| b.capacity() <= SINGLE_WRITE_KEEP_BYTES);
            return result;
        }
        let mut batch = WriteBatch::with_capacity(key.len() + value.len());
        batch.push_entry(kind, key, value);
        self.write_queued(batch, sync)
    }

    /// Group commit: whoever holds the commit lock writes its own batch and every queued one in
    /// one buffered WAL write (and at most one fsync), inserts them into the memtable in order,
    /// and publishes the new last sequence number. A writer that finds the lock free leads a
    /// group at once; one that finds it taken queues its batch and waits for the lock, by which
    /// time a leader has usually committed the batch for it.
    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.check_writable()?;
        validate(&batch)?;
        if let Some(error) = self.background_error() {
            return Err(error);
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.timed_write(batch.len() as u64, || {
            if let Some(mut commit) = self.commit.try_lock() {
                return self.lead_group(&mut commit, Some((batch, sync))).0;
            }
            self.write_queued(batch, sync)
        })
    }

    /// Runs `write`, a call writing `entries` entries, counting them and timing the call when it
    /// carries the count across a multiple of [`WRITE_TIMING_EVERY`]. The stalls writers
    /// recorded meanwhile are taken out of the time (they are counted apart, and a stall is one
    /// long wait in hundreds of writes, which a one-in-sixteen sample would hit or miss by
    /// chance).
    fn timed_write(&self, entries: u64, write: impl FnOnce() -> Result<()>) -> Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let before = self.counters.write_entries.fetch_add(entries, Relaxed);
        if before / WRITE_TIMING_EVERY == before.saturating_add(entries) / WRITE_TIMING_EVERY {
            return write();
        }
        let stalled = self.counters.write_stall_micros.load(Relaxed);
        let start = Instant::now();
        let result = write();
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let stall_nanos = self
            .counters
            .write_stall_micros
            .load(Relaxed)
            .saturating_sub(stalled)
            .saturating_mul(1_000);
        add(&self.counters.timed_write_entries, entries);
        add(
            &self.counters.timed_write_nanos,
            nanos.saturating_sub(stall_nanos),
        );
        result
    }

    /// Syncs the current write-ahead log (`Db::sync_wal`): every write acknowledged before the
    /// call and still in this log is on the device when it returns. The commit lock is held
    /// only to flush the log's buffer and take a sync handle to the file; the fsync itself runs
    /// after the lock is released, so writers go on meanwhile (an fsync of a second of writes
    /// can take tens of milliseconds) instead of all waiting for it. A file system without sync
    /// handles is synced under the lock.
    pub(crate) fn sync_wal(&self) -> Result<()> {
        self.check_writable()?;
        if let Some(error) = self.background_error() {
            return Err(error);
        }
        let handle = {
            let mut commit = self.commit.lock();
            self.check_open()?;
            let Some(wal) = commit.wal.as_mut() else {
                return Ok(());
            };
            add(&self.counters.wal_syncs, 1);
            let handle = match wal.flush() {
                Ok(()) => wal.sync_handle(),
                Err(error) => {
                    self.set_background_error(&error);
                    return Err(error);
                }
            };
            match handle {
                Some(handle) => handle,
                None => {
                    if let Err(error) = wal.sync() {
                        self.set_background_error(&error);
                        return Err(error);
                    }
                    return Ok(());
                }
            }
        };
        if let Err(error) = handle() {
            self.set_background_error(&error);
            return Err(error);
        }
        Ok(())
    }

    /// The contended path: queue `batch`, wait for the commit lock, and lead a group only if no
    /// leader committed the batch meanwhile.
    fn write_queued(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        let pending = Arc::new(PendingWrite {
            batch: crate::sync::Mutex::new(Some(batch)),
            sync,
            result: std::sync::OnceLock::new(),
        });
        self.pending.lock().push_back(Arc::clone(&pending));
        let mut commit = self.commit.lock();
        if let Some(result) = pending.result.get() {
            return result.clone();
        }
        self.lead_group(&mut commit, None).0
    }

    /// Commits one group: `own` (the leader's batch and its sync flag, if it brought one) first,
    /// then every queued write, and answers the queued writers. Hands `own` back so a caller can
    /// reuse its buffer. The group's vectors live in the commit state between groups, so a group
    /// allocates nothing of its own.
    fn lead_group(
        &self,
        commit: &mut CommitState,
        own: Option<(WriteBatch, bool)>,
    ) -> (Result<()>, Option<WriteBatch>) {
        let mut batches = std::mem::take(&mut commit.group_batches);
        let mut followers = std::mem::take(&mut commit.group_followers);
        let mut sync = false;
        let leads_own = own.is_some();
        if let Some((batch, own_sync)) = own {
            batches.push(batch);
            sync |= own_sync;
        }
        followers.extend(self.pending.lock().drain(..));
        for write in &followers {
            if let Some(batch) = write.batch.lock().take() {
                batches.push(batch);
                sync |= write.sync;
            }
        }
        let result = self.commit_group(commit, &mut batches, sync);
        for write in followers.drain(..) {
            let _ = write.result.set(result.clone());
        }
        let own = if leads_own && !batches.is_empty() {
            Some(batches.swap_remove(0))
        } else {
            None
        };
        batches.clear();
        commit.group_batches = batches;
        commit.group_followers = followers;
        (result, own)
    }

    fn commit_group(
        &self,
        commit: &mut CommitState,
        batches: &mut [WriteBatch],
        sync: bool,
    ) -> Result<()> {
        self.check_open()?;
        let mem = self.make_room_for_write(commit)?;
        let first_sequence = self.versions.last_sequence() + 1;
        let entries: u64 = batches.iter().map(|b| b.len() as u64).sum();
        if first_sequence + entries > crate::key::MAX_SEQUENCE {
            return Err(Error::InvalidArgument(
                "sequence numbers exhausted (2^56 writes); the database cannot take more writes"
                    .into(),
            ));
        }
        if let Some(wal) = commit.wal.as_mut() {
            // One record per batch, all into the log's user-space buffer, then one flush (one
            // write system call for a group that fits the buffer) and at most one fsync.
            let mut sequence = first_sequence;
            let mut wal_bytes = 0u64;
            for batch in batches.iter_mut() {
                let encoded = batch.encode_with_sequence(sequence);
                if let Err(error) = wal.add_record(encoded) {
                    self.set_background_error(&error);
                    return Err(error);
                }
                wal_bytes += encoded.len() as u64;
                sequence += batch.len() as u64;
            }
            add(&self.counters.wal_write_bytes, wal_bytes);
            let persisted = if sync {
                add(&self.counters.wal_syncs, 1);
                wal.sync()
            } else {
                wal.flush()
            };
            if let Err(error) = persisted {
                // After a failed write or fsync the OS may have dropped the data: refuse every
                // later write instead of retrying as if it had succeeded.
                self.set_background_error(&error);
                return Err(error);
            }
        }
        let mut next = first_sequence;
        let mut user_bytes = 0u64;
        for batch in batches.iter() {
            for entry in batch.entries() {
                mem.insert(next, entry.kind, entry.key, entry.value);
                user_bytes += (entry.key.len() + entry.value.len()) as u64;
                next += 1;
            }
        }
        add(&self.counters.user_write_bytes, user_bytes);
        self.versions.set_last_sequence(next - 1);
        Ok(())
    }

    /// Makes sure the active memtable has room, switching it when full and stalling writers when
    /// flushes or level-0 compactions fall behind. Returns the memtable with room: it stays the
    /// active one while the caller holds the commit lock, since only the lock's holder switches.
    fn make_room_for_write(&self, commit: &mut CommitState) -> Result<Arc<MemTable>> {
        let mut slowed = false;
        loop {
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            self.check_open()?;
            let view = self.view.load();
            // How far compaction is behind is the policy's call (leveling and tiering count
            // level-0 runs; `CompactionPolicy::write_pressure`).
            let pressure = self
                .compaction_policy()
                .write_pressure(&view.version, &self.compaction_context());
            if !slowed && pressure >= WritePressure::Slowdown {
                drop(view);
                // Delay this group by 1 ms so compaction gets CPU before the hard stop.
                let start = Instant::now();
                crate::sync::thread::sleep(Duration::from_millis(1));
                add(&self.counters.write_slowdowns, 1);
                add(
                    &self.counters.write_stall_micros,
                    start.elapsed().as_micros() as u64,
                );
                slowed = true;
                continue;
            }
            if view.mem.approximate_bytes() < self.options.write_buffer_bytes {
                return Ok(Arc::clone(&view.mem));
            }
            let memtables_full = !view.immutable.is_empty()
                && view.immutable.len() + 1 >= self.options.max_write_buffers;
            let compaction_behind = pressure == WritePressure::Stop;
            drop(view);
            if memtables_full || compaction_behind {
                self.wait_for_background_progress(compaction_behind);
                continue;
            }
            self.switch_memtable(commit)?;
        }
    }

    /// Stops this writer (and, through the commit lock, every writer) until a flush or
    /// compaction finishes. The timed wait only bounds the cost of a missed wake-up.
    fn wait_for_background_progress(&self, need_compaction: bool) {
        let start = Instant::now();
        add(&self.counters.write_stops, 1);
        let mut background = self.background.lock();
        // Only a compaction stall asks for a compaction: asking while a flush is what we wait for
        // would wake the compaction thread for nothing and it would wake us back, in a loop.
        if need_compaction {
            background.compaction_requested = true;
        }
        self.work_available.notify_all();
        if self.background_error().is_none() && !background.shutting_down {
            self.work_done
                .wait_for(&mut background, Duration::from_millis(50));
        }
        drop(background);
        add(
            &self.counters.write_stall_micros,
            start.elapsed().as_micros() as u64,
        );
    }

    /// Freezes the active memtable and starts a new one with a new WAL. Requires the commit lock.
    pub(crate) fn switch_memtable(&self, commit: &mut CommitState) -> Result<()> {
        let mut wal_number = commit.wal_number;
        if !self.options.disable_wal {
            wal_number = self.versions.new_file_number();
            let path = wal_path(&self.dir, wal_number);
            let file = self.fs.create_writable(&path).and_then(|file| {
                self.fs.sync_dir(&self.dir)?;
                Ok(file)
            });
            let file = match file {
                Ok(file) => file,
                Err(error) => {
                    self.set_background_error(&error);
                    return Err(error);
                }
            };
            if let Some(old) = commit.wal.as_mut() {
                if let Err(error) = old.flush() {
                    self.set_background_error(&error);
                    return Err(error);
                }
            }
            commit.wal = Some(LogWriter::new(file));
            commit.wal_number = wal_number;
        }
        {
            let _guard = self.view_lock.lock();
            let current = self.view.load_full();
            let mut immutable = Vec::with_capacity(current.immutable.len() + 1);
            immutable.push(Arc::clone(&current.mem));
            immutable.extend(current.immutable.iter().cloned());
            self.view.store(Arc::new(ReadView {
                mem: Arc::new(MemTable::new(
                    wal_number,
                    self.lookup_count(),
                    self.options.write_buffer_bytes,
                )),
                immutable,
                version: Arc::clone(&current.version),
                filter_allocator: Arc::clone(&current.filter_allocator),
                top_index: current.top_index.clone(),
            }));
        }
        let _background = self.background.lock();
        self.work_available.notify_all();
        Ok(())
    }

    /// Switches a non-empty memtable and waits until it and every memtable frozen before it are
    /// flushed. Memtables frozen after the call (by a write stream that goes on meanwhile) are
    /// not waited for: under a steady write load there may never be a moment with no immutable
    /// memtable, and `flush` would never return.
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_writable()?;
        let targets = {
            let mut commit = self.commit.lock();
            // Checked again under the commit lock: a `close` that began after the first check
            // must not be followed by a memtable switch that creates a new WAL file.
            self.check_open()?;
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            if !self.view.load().mem.is_empty() {
                self.switch_memtable(&mut commit)?;
            }
            self.view.load().immutable.clone()
        };
        let mut background = self.background.lock();
        loop {
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            let waiting = {
                let view = self.view.load();
                targets
                    .iter()
                    .any(|target| view.immutable.iter().any(|m| Arc::ptr_eq(m, target)))
            };
            if !waiting {
                return Ok(());
            }
            if background.shutting_down {
                return Err(Error::Closed);
            }
            self.work_available.notify_all();
            self.work_done
                .wait_for(&mut background, Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::counting_allocator::heap_count;
    use crate::env::WritableFile;
    use crate::env::{RealFileSystem, SyncHandle, WrapWritable};
    use crate::{Db, Options, WriteBatch, WriteOptions};

    #[test]
    fn sync_wal_syncs_the_log_and_refuses_on_a_closed_or_read_only_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        db.put(b"a", b"1").expect("put");
        let before = db.stats().io.wal_syncs;
        db.sync_wal().expect("sync");
        assert_eq!(db.stats().io.wal_syncs, before + 1);
        db.close().expect("close");
        assert!(matches!(db.sync_wal(), Err(crate::Error::Closed)));
        let reader = Db::open_read_only(dir.path(), Options::default()).expect("read-only");
        assert!(matches!(reader.sync_wal(), Err(crate::Error::ReadOnly)));
        assert_eq!(reader.get(b"a").expect("get").as_deref(), Some(&b"1"[..]));
    }

    struct GatedFile {
        inner: Box<dyn WritableFile>,
        started: std::sync::mpsc::Sender<()>,
        gate: std::sync::Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
    }

    impl WritableFile for GatedFile {
        fn append(&mut self, data: &[u8]) -> crate::Result<()> {
            self.inner.append(data)
        }
        fn flush(&mut self) -> crate::Result<()> {
            self.inner.flush()
        }
        fn sync(&mut self) -> crate::Result<()> {
            self.inner.sync()
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
        fn sync_handle(&self) -> Option<SyncHandle> {
            let sync = self.inner.sync_handle()?;
            let (started, gate) = (self.started.clone(), Arc::clone(&self.gate));
            Some(Box::new(move || {
                let _ = started.send(());
                let _ = gate.lock().expect("gate").recv();
                sync()
            }))
        }
    }

    /// `sync_wal`'s fsync runs without the commit lock: a write completes while it is under
    /// way. A file system without sync handles (fault injection) is synced under the lock, and
    /// its failures are reported.
    #[test]
    fn writes_go_on_while_sync_wal_fsyncs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (started_tx, started) = std::sync::mpsc::channel();
        let (open_gate, gate) = std::sync::mpsc::channel();
        // Log files' sync handles wait for the gate, and say when they start.
        let started_tx = std::sync::Mutex::new(started_tx);
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let gated_syncs = WrapWritable::new(move |path: &Path, inner: Box<dyn WritableFile>| {
            if path.extension().is_some_and(|e| e == "log") {
                return Box::new(GatedFile {
                    inner,
                    started: started_tx.lock().expect("sender").clone(),
                    gate: Arc::clone(&gate),
                }) as Box<dyn WritableFile>;
            }
            inner
        });
        let options = Options {
            file_system: Arc::new(gated_syncs),
            ..Options::default()
        };
        let db = Db::open(dir.path(), options).expect("open");
        db.put(b"a", b"1").expect("put");
        let before = db.stats().io.wal_syncs;
        let syncer = {
            let db = db.clone();
            std::thread::spawn(move || db.sync_wal())
        };
        started
            .recv_timeout(Duration::from_secs(30))
            .expect("the sync started");
        let (done_tx, done) = std::sync::mpsc::channel();
        let writer = {
            let db = db.clone();
            std::thread::spawn(move || {
                let _ = done_tx.send(db.put(b"b", b"2"));
            })
        };
        done.recv_timeout(Duration::from_secs(30))
            .expect("a write completes while the fsync waits")
            .expect("put");
        open_gate.send(()).expect("gate");
        syncer.join().expect("join").expect("sync_wal");
        writer.join().expect("join");
        assert_eq!(db.stats().io.wal_syncs, before + 1);
        assert_eq!(db.get(b"b").expect("get").as_deref(), Some(&b"2"[..]));
        db.close().expect("close");

        let dir = tempfile::tempdir().expect("tempdir");
        let faults = Arc::new(crate::env::FaultInjectionFileSystem::new(Arc::new(
            RealFileSystem,
        )));
        let options = Options {
            file_system: faults.clone(),
            ..Options::default()
        };
        let db = Db::open(dir.path(), options).expect("open");
        db.put(b"a", b"1").expect("put");
        db.sync_wal().expect("sync");
        faults.set_fail_syncs(true);
        assert!(db.sync_wal().is_err());
    }

    /// With the commit lock free, a put or delete allocates nothing: the memtable's arena makes
    /// one allocation per chunk (megabytes apart), the group's vectors and the single-write
    /// batch are reused from the commit state, and the WAL record is framed on the stack and
    /// written through the log's buffer. A batch's commit adds nothing to the batch's own.
    #[test]
    fn a_write_allocates_nothing_but_memtable_arena_chunks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let keys: Vec<String> = (0..1_000).map(|i| format!("key{i:08}")).collect();
        let value = vec![7u8; 100];
        // Warm-up: the first write sizes the reusable buffers and registers this thread with
        // arc-swap's debt list.
        for key in &keys[..10] {
            db.put(key, &value).expect("put");
        }
        let before = heap_count().allocations;
        for key in &keys[10..] {
            db.put(key, &value).expect("put");
        }
        // 990 entries of about 140 arena bytes: a few chunks at most.
        assert!(heap_count().allocations - before <= 10, "puts");

        let before = heap_count().allocations;
        for key in &keys[..500] {
            db.delete(key).expect("delete");
        }
        let sync = WriteOptions { sync: true };
        for key in &keys[500..600] {
            db.put_opt(key, &value, sync).expect("synced put");
        }
        assert!(
            heap_count().allocations - before <= 6,
            "deletes and synced puts"
        );

        let mut batches: Vec<WriteBatch> = (0..100)
            .map(|i| {
                let mut batch = WriteBatch::new();
                batch
                    .put(format!("batch{i}"), &value)
                    .delete(&keys[i])
                    .put(&keys[i + 1], b"x");
                batch
            })
            .collect();
        let before = heap_count().allocations;
        for batch in batches.drain(..) {
            db.write(batch).expect("write");
        }
        assert!(heap_count().allocations - before <= 3, "batches");

        // Batch i deletes key i and writes key i + 1, which batch i + 1 deletes again.
        assert_eq!(db.get(&keys[100]).expect("get").as_deref(), Some(&b"x"[..]));
        assert_eq!(db.get(&keys[1]).expect("get"), None);
        assert_eq!(db.get("batch7").expect("get").as_deref(), Some(&value[..]));
        assert_eq!(
            db.get(&keys[700]).expect("get").as_deref(),
            Some(&value[..])
        );
        db.close().expect("close");
    }
}
