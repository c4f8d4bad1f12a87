//! The write path: validation, group commit, memtable switching and write stalls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{CommitState, DbInner, PendingWrite, ReadView};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::stats::add;
use crate::wal::{wal_path, LogWriter, WriteBatch};

fn validate(batch: &WriteBatch) -> Result<()> {
    if batch.approximate_bytes() > MAX_BATCH_BYTES {
        return Err(Error::InvalidArgument(format!(
            "write batch of {} bytes exceeds the {MAX_BATCH_BYTES}-byte limit",
            batch.approximate_bytes()
        )));
    }
    for entry in batch.entries() {
        if entry.key.len() > MAX_KEY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the {MAX_KEY_BYTES}-byte limit",
                entry.key.len()
            )));
        }
        if entry.value.len() > MAX_VALUE_BYTES {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the {MAX_VALUE_BYTES}-byte limit",
                entry.value.len()
            )));
        }
    }
    Ok(())
}

impl DbInner {
    /// Group commit: queue the batch; whoever holds the commit lock writes every queued batch in
    /// one WAL append (and at most one fsync), inserts them into the memtable in order, and
    /// publishes the new last sequence number.
    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.check_writable()?;
        validate(&batch)?;
        if let Some(error) = self.background_error() {
            return Err(error);
        }
        if batch.is_empty() {
            return Ok(());
        }
        let pending = Arc::new(PendingWrite {
            batch: parking_lot::Mutex::new(Some(batch)),
            sync,
            result: std::sync::OnceLock::new(),
        });
        self.pending.lock().push_back(Arc::clone(&pending));
        let mut commit = self.commit.lock();
        if let Some(result) = pending.result.get() {
            return result.clone();
        }
        let group: Vec<Arc<PendingWrite>> = self.pending.lock().drain(..).collect();
        let result = self.commit_group(&mut commit, &group);
        for write in &group {
            let _ = write.result.set(result.clone());
        }
        result
    }

    fn commit_group(&self, commit: &mut CommitState, group: &[Arc<PendingWrite>]) -> Result<()> {
        self.check_open()?;
        self.make_room_for_write(commit)?;
        let mut sequence = self.versions.last_sequence() + 1;
        let first_sequence = sequence;
        let entries: u64 = group
            .iter()
            .filter_map(|w| w.batch.lock().as_ref().map(|b| b.len() as u64))
            .sum();
        if first_sequence + entries > crate::key::MAX_SEQUENCE {
            return Err(Error::InvalidArgument(
                "sequence numbers exhausted (2^56 writes); the database cannot take more writes"
                    .into(),
            ));
        }
        let mut batches = Vec::with_capacity(group.len());
        let sync = group.iter().any(|w| w.sync);
        for write in group {
            let Some(mut batch) = write.batch.lock().take() else {
                continue;
            };
            let encoded = batch.encode_with_sequence(sequence);
            if let Some(wal) = commit.wal.as_mut() {
                if let Err(error) = wal.add_record(encoded) {
                    self.set_background_error(&error);
                    return Err(error);
                }
                add(&self.counters.wal_write_bytes, encoded.len() as u64);
            }
            sequence += batch.len() as u64;
            batches.push(batch);
        }
        if let Some(wal) = commit.wal.as_mut() {
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
        let mem = Arc::clone(&self.view.load().mem);
        let mut next = first_sequence;
        let mut user_bytes = 0u64;
        for batch in &batches {
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

    fn level0_runs(&self) -> usize {
        self.view.load().version.levels()[0].runs().len()
    }

    /// Makes sure the active memtable has room, switching it when full and stalling writers when
    /// flushes or level-0 compactions fall behind.
    fn make_room_for_write(&self, commit: &mut CommitState) -> Result<()> {
        let mut slowed = false;
        loop {
            if let Some(error) = self.background_error() {
                return Err(error);
            }
            self.check_open()?;
            let level0_runs = self.level0_runs();
            if !slowed && level0_runs >= self.options.level0_slowdown_writes_trigger {
                // Delay this group by 1 ms so compaction gets CPU before the hard stop.
                let start = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                add(&self.counters.write_slowdowns, 1);
                add(
                    &self.counters.write_stall_micros,
                    start.elapsed().as_micros() as u64,
                );
                slowed = true;
                continue;
            }
            let view = self.view.load();
            if view.mem.approximate_bytes() < self.options.write_buffer_bytes {
                return Ok(());
            }
            let memtables_full = !view.immutable.is_empty()
                && view.immutable.len() + 1 >= self.options.max_write_buffers;
            let level0_full = level0_runs >= self.options.level0_stop_writes_trigger;
            if memtables_full || level0_full {
                self.wait_for_background_progress(level0_full);
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
        // Only a level-0 stall asks for a compaction: asking while a flush is what we wait for
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
                mem: Arc::new(MemTable::new(wal_number, self.lookup_count())),
                immutable,
                version: Arc::clone(&current.version),
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
