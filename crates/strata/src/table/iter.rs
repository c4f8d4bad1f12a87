//! Owned iterators over a table file's index, over a table file and over a sorted run (its files
//! concatenated).

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::BlockIter;
use super::format::BlockHandle;
use super::index_iter::IndexIter;
use super::readahead::{Readahead, ScanReadahead};
use super::reader::{ReadMode, TableReader};
use super::table_cache::TableFile;
use super::TableCache;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::compare_internal_keys;
use crate::stats::BlockKind;

/// A two-level iterator: the index picks data blocks, a block iterator walks each.
pub(crate) struct TableIter {
    table: Arc<TableReader>,
    mode: ReadMode,
    index: Option<IndexIter>,
    data: Option<(BlockIter, BlockHandle)>,
    /// Set for a front-to-back walk of a compaction input: data blocks come from large reads.
    readahead: Option<Readahead>,
    /// Set for a scan (`ReadMode::Cached`) with read-ahead on: data blocks come from
    /// read-ahead windows once the scan reads the file's blocks in order.
    scan_readahead: Option<ScanReadahead>,
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
            scan_readahead: None,
            error: None,
        }
    }

    /// Reads ahead, up to `max_bytes` at a time, once a scan loads the file's data blocks in
    /// order (see [`ScanReadahead`]); 0, or an iterator that does not read through the block
    /// cache, never does.
    pub(crate) fn with_scan_readahead(mut self, max_bytes: usize) -> Self {
        if max_bytes > 0 && matches!(self.mode, ReadMode::Cached { .. }) {
            self.scan_readahead = Some(ScanReadahead::new(max_bytes, self.table.counters()));
        }
        self
    }

    /// Reads data blocks through a [`Readahead`] window of `chunk_bytes` (uncached): for
    /// iterators that walk the whole table in order, as a compaction does.
    pub(crate) fn with_readahead(mut self, chunk_bytes: usize) -> Self {
        self.readahead = Some(Readahead::new(chunk_bytes).counted_in(self.table.counters()));
        self
    }

    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
        self.data = None;
    }

    fn ensure_index(&mut self) -> bool {
        if self.index.is_none() {
            match IndexIter::open(&self.table, self.mode) {
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
        let scan_readahead = &mut self.scan_readahead;
        let handle = index.handle();
        let loaded = (|| {
            let block = match (readahead, scan_readahead, mode) {
                (Some(readahead), _, _) => table.sequential_block(handle, readahead)?,
                (None, Some(scan), ReadMode::Cached { level }) => {
                    table.scan_block(handle, level, scan)?
                }
                _ => table.sorted_block(handle, BlockKind::Data, mode)?,
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
pub(crate) struct RunIter<F> {
    files: Vec<Arc<F>>,
    tables: Arc<TableCache>,
    mode: ReadMode,
    pin: bool,
    /// Read-ahead window of each file's iterator (`None`: block by block, through the cache).
    readahead_bytes: Option<usize>,
    position: usize,
    current: Option<TableIter>,
    error: Option<Error>,
}

impl<F: TableFile> RunIter<F> {
    pub(crate) fn new(
        files: Vec<Arc<F>>,
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
                    None => iter.with_scan_readahead(self.tables.scan_readahead_max_bytes()),
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

impl<F: TableFile> InternalIterator for RunIter<F> {
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
            .partition_point(|f| compare_internal_keys(f.largest_key(), target) == Ordering::Less);
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
