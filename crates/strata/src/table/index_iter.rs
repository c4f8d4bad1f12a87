//! An iterator over a table file's index entries, whatever the index's layout.

use super::block::BlockIter;
use super::format::{BlockHandle, IndexFormat, IndexKeys};
use super::reader::{ReadMode, TableReader};
use crate::error::{Error, Result};

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
    /// An iterator over `table`'s index: the index block, or every index partition in turn.
    pub(crate) fn open(table: &TableReader, mode: ReadMode) -> Result<Self> {
        if table.partitions().is_some() {
            return Ok(IndexIter::partitioned(mode, table.footer().index_format()));
        }
        let (index, _) = table.index_block_traced(0, table.footer().index, mode)?;
        Ok(IndexIter::whole(
            table.index_block_iter(index, Vec::new()),
            table.footer().index_format().keys,
        ))
    }

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
