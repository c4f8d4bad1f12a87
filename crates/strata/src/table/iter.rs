//! Owned iterators over a table file's index, over a table file and over a sorted run (its files
//! concatenated).

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::BlockIter;
use super::format::{BlockHandle, IndexFormat, IndexKeys};
use super::readahead::Readahead;
use super::reader::{ReadMode, TableReader};
use super::TableCache;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::compare_internal_keys;
use crate::stats::BlockKind;
use crate::version::FileMetadata;

/// Walks a table's index entries (separator key → data-block handle) in order, whatever the
/// layout: the one index block, or a partitioned table's index partitions one after another
/// (`partition.rs`), each loaded when reached. Movement takes the table reader, which loads the
/// partitions (through the cache, or uncached for compactions, as `mode` says).
pub(crate) struct IndexIter {
    state: IndexState,
    /// How the table's index keys are stored and ordered.
    keys: IndexKeys,
}

enum IndexState {
    Whole(BlockIter),
    Partitioned {
        mode: ReadMode,
        /// The partition `current` walks; `None` before the first positioning.
        partition: usize,
        current: Option<(BlockIter, BlockHandle)>,
        error: Option<Error>,
    },
}

impl IndexIter {
    /// Walks `index`, an iterator over the table's one index block that decodes its handles.
    pub(crate) fn whole(index: BlockIter, keys: IndexKeys) -> Self {
        IndexIter {
            state: IndexState::Whole(index),
            keys,
        }
    }

    pub(crate) fn partitioned(mode: ReadMode, format: IndexFormat) -> Self {
        IndexIter {
            state: IndexState::Partitioned {
                mode,
                partition: 0,
                current: None,
                error: None,
            },
            keys: format.keys,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        match &self.state {
            IndexState::Whole(index) => index.valid(),
            IndexState::Partitioned { current, error, .. } => {
                error.is_none() && current.as_ref().is_some_and(|(iter, _)| iter.valid())
            }
        }
    }

    pub(crate) fn key(&self) -> &[u8] {
        match &self.state {
            IndexState::Whole(index) => index.key(),
            IndexState::Partitioned { current, .. } => {
                current.as_ref().map_or(&[], |(iter, _)| iter.key())
            }
        }
    }

    /// The current entry's data-block handle (`(0, 0)` when not valid).
    pub(crate) fn handle(&self) -> BlockHandle {
        match &self.state {
            IndexState::Whole(index) => index.handle(),
            IndexState::Partitioned { current, .. } => current
                .as_ref()
                .map_or_else(BlockHandle::default, |(iter, _)| iter.handle()),
        }
    }

    /// The damage or I/O error that stopped the iterator, as a `Corruption` naming the file and
    /// the index block or partition.
    pub(crate) fn status(&self, table: &TableReader) -> Result<()> {
        match &self.state {
            IndexState::Whole(index) => table.block_error(index, table.footer().index),
            IndexState::Partitioned { current, error, .. } => {
                if let Some(error) = error {
                    return Err(error.clone());
                }
                match current {
                    Some((iter, handle)) => table.block_error(iter, *handle),
                    None => Ok(()),
                }
            }
        }
    }

    pub(crate) fn seek_to_first(&mut self, table: &TableReader) {
        match &mut self.state {
            IndexState::Whole(index) => index.seek_to_first(),
            IndexState::Partitioned { .. } => {
                if self.load_partition(table, 0) {
                    if let IndexState::Partitioned {
                        current: Some((iter, _)),
                        ..
                    } = &mut self.state
                    {
                        iter.seek_to_first();
                    }
                    self.skip_exhausted_partitions(table);
                }
            }
        }
    }

    /// Positions at the first entry at or above internal key `target` in the index's order.
    pub(crate) fn seek(&mut self, table: &TableReader, target: &[u8]) {
        let seek_key = self.keys.seek_key(target);
        match &mut self.state {
            IndexState::Whole(index) => index.seek(seek_key),
            IndexState::Partitioned { current, .. } => {
                let Some(partition) = table.partitions().and_then(|p| p.find(target)) else {
                    *current = None;
                    return;
                };
                if self.load_partition(table, partition) {
                    if let IndexState::Partitioned {
                        current: Some((iter, _)),
                        ..
                    } = &mut self.state
                    {
                        iter.seek(self.keys.seek_key(target));
                    }
                    self.skip_exhausted_partitions(table);
                }
            }
        }
    }

    pub(crate) fn next(&mut self, table: &TableReader) {
        match &mut self.state {
            IndexState::Whole(index) => index.next(),
            IndexState::Partitioned { current, .. } => {
                if let Some((iter, _)) = current {
                    iter.next();
                }
                self.skip_exhausted_partitions(table);
            }
        }
    }

    /// Points the iterator at partition `partition` (not yet positioned inside it); false, with
    /// the iterator invalid, past the last partition or on an error.
    fn load_partition(&mut self, table: &TableReader, partition: usize) -> bool {
        let IndexState::Partitioned {
            mode,
            partition: position,
            current,
            error,
        } = &mut self.state
        else {
            return false;
        };
        *current = None;
        *position = partition;
        if error.is_some() || partition >= table.partitions().map_or(0, |p| p.len()) {
            return false;
        }
        match table.index_partition(partition, *mode) {
            Ok((block, handle)) => {
                *current = Some((table.index_block_iter(block, Vec::new()), handle));
                true
            }
            Err(failure) => {
                *error = Some(failure);
                false
            }
        }
    }

    /// While the current partition is exhausted (and undamaged), moves to the next partition's
    /// first entry.
    fn skip_exhausted_partitions(&mut self, table: &TableReader) {
        loop {
            let IndexState::Partitioned {
                partition, current, ..
            } = &self.state
            else {
                return;
            };
            let Some((iter, _)) = current else { return };
            if iter.valid() || iter.error().is_some() {
                return;
            }
            let next = *partition + 1;
            if !self.load_partition(table, next) {
                return;
            }
            if let IndexState::Partitioned {
                current: Some((iter, _)),
                ..
            } = &mut self.state
            {
                iter.seek_to_first();
            }
        }
    }
}

/// A two-level iterator: the index picks data blocks, a block iterator walks each.
pub(crate) struct TableIter {
    table: Arc<TableReader>,
    mode: ReadMode,
    index: Option<IndexIter>,
    data: Option<(BlockIter, BlockHandle)>,
    /// Set for a front-to-back walk of a compaction input: data blocks come from large reads.
    readahead: Option<Readahead>,
    error: Option<Error>,
}

impl TableIter {
    pub(crate) fn new(table: Arc<TableReader>, mode: ReadMode) -> Self {
        TableIter {
            table,
            mode,
            index: None,
            data: None,
            readahead: None,
            error: None,
        }
    }

    /// Reads data blocks through a [`Readahead`] window of `chunk_bytes` (uncached): for
    /// iterators that walk the whole table in order, as a compaction does.
    pub(crate) fn with_readahead(mut self, chunk_bytes: usize) -> Self {
        self.readahead = Some(Readahead::new(chunk_bytes));
        self
    }

    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
        self.data = None;
    }

    fn ensure_index(&mut self) -> bool {
        if self.index.is_none() {
            match self.table.index_iter(self.mode) {
                Ok(index) => self.index = Some(index),
                Err(error) => {
                    self.fail(error);
                    return false;
                }
            }
        }
        true
    }

    /// Loads the data block the index is positioned on (or clears `data` at the end).
    fn load_block(&mut self) {
        self.data = None;
        let Some(index) = &self.index else { return };
        if !index.valid() {
            if let Err(error) = index.status(&self.table) {
                self.fail(error);
            }
            return;
        }
        let table = &self.table;
        let mode = self.mode;
        let readahead = &mut self.readahead;
        let handle = index.handle();
        let loaded = (|| {
            let block = match readahead {
                Some(readahead) => table.sequential_block(handle, readahead)?,
                None => table.sorted_block(handle, BlockKind::Data, mode)?,
            };
            Ok((BlockIter::new(block, compare_internal_keys), handle))
        })();
        match loaded {
            Ok(data) => self.data = Some(data),
            Err(error) => self.fail(error),
        }
    }

    /// While the data block is exhausted, moves to the next block's first entry.
    fn skip_exhausted_blocks(&mut self) {
        loop {
            let Some((data, handle)) = &self.data else {
                return;
            };
            if data.valid() {
                return;
            }
            if let Err(error) = self.table.block_error(data, *handle) {
                self.fail(error);
                return;
            }
            let Some(index) = self.index.as_mut() else {
                return;
            };
            index.next(&self.table);
            self.load_block();
            if let Some((data, _)) = self.data.as_mut() {
                data.seek_to_first();
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(|(d, _)| d.valid())
    }

    fn seek_to_first(&mut self) {
        if !self.ensure_index() {
            return;
        }
        if let Some(index) = self.index.as_mut() {
            index.seek_to_first(&self.table);
        }
        self.load_block();
        if let Some((data, _)) = self.data.as_mut() {
            data.seek_to_first();
        }
        self.skip_exhausted_blocks();
    }

    fn seek(&mut self, target: &[u8]) {
        if !self.ensure_index() {
            return;
        }
        if let Some(index) = self.index.as_mut() {
            index.seek(&self.table, target);
        }
        self.load_block();
        if let Some((data, _)) = self.data.as_mut() {
            data.seek(target);
        }
        self.skip_exhausted_blocks();
    }

    fn next(&mut self) {
        if let Some((data, _)) = self.data.as_mut() {
            data.next();
        }
        self.skip_exhausted_blocks();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |(d, _)| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |(d, _)| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn current_file_number(&self) -> Option<u64> {
        Some(self.table.number())
    }
}

/// Iterates a sorted run: its files in key order, each opened when reached.
pub(crate) struct RunIter {
    files: Vec<Arc<FileMetadata>>,
    tables: Arc<TableCache>,
    mode: ReadMode,
    pin: bool,
    /// Read-ahead window of each file's iterator (`None`: block by block, through the cache).
    readahead_bytes: Option<usize>,
    position: usize,
    current: Option<TableIter>,
    error: Option<Error>,
}

impl RunIter {
    pub(crate) fn new(
        files: Vec<Arc<FileMetadata>>,
        tables: Arc<TableCache>,
        mode: ReadMode,
        pin: bool,
    ) -> Self {
        RunIter {
            position: files.len(),
            files,
            tables,
            mode,
            pin,
            readahead_bytes: None,
            current: None,
            error: None,
        }
    }

    /// Walks each file through a read-ahead window of `chunk_bytes` (see [`Readahead`]).
    pub(crate) fn with_readahead(mut self, chunk_bytes: usize) -> Self {
        self.readahead_bytes = Some(chunk_bytes);
        self
    }

    fn open(&mut self, position: usize) -> bool {
        self.position = position;
        self.current = None;
        let Some(file) = self.files.get(position) else {
            return false;
        };
        match self.tables.reader(file, self.pin) {
            Ok(table) => {
                let iter = TableIter::new(table, self.mode);
                self.current = Some(match self.readahead_bytes {
                    Some(chunk_bytes) => iter.with_readahead(chunk_bytes),
                    None => iter,
                });
                true
            }
            Err(error) => {
                self.error.get_or_insert(error);
                false
            }
        }
    }

    fn skip_exhausted_files(&mut self) {
        while let Some(current) = &self.current {
            if current.valid() {
                return;
            }
            if let Err(error) = current.status() {
                self.error.get_or_insert(error);
                self.current = None;
                return;
            }
            if !self.open(self.position + 1) {
                return;
            }
            if let Some(current) = self.current.as_mut() {
                current.seek_to_first();
            }
        }
    }
}

impl InternalIterator for RunIter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(current) = self.current.as_mut() {
                current.seek_to_first();
            }
        }
        self.skip_exhausted_files();
    }

    fn seek(&mut self, target: &[u8]) {
        let position = self
            .files
            .partition_point(|f| compare_internal_keys(&f.largest, target) == Ordering::Less);
        if self.open(position) {
            if let Some(current) = self.current.as_mut() {
                current.seek(target);
            }
        }
        self.skip_exhausted_files();
    }

    fn next(&mut self) {
        if let Some(current) = self.current.as_mut() {
            current.next();
        }
        self.skip_exhausted_files();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(error) => Err(error.clone()),
            None => self.current.as_ref().map_or(Ok(()), |c| c.status()),
        }
    }

    fn current_file_number(&self) -> Option<u64> {
        self.files.get(self.position).map(|f| f.number())
    }
}
