//! RocksDB's block reads by block kind on the calling thread, from its perf context, and the
//! unnecessary data-block reads of point lookups counted from them as Strata counts its own.
//!
//! The perf context is a thread-local struct of counters RocksDB bumps as the thread's own
//! operations run (flushes and compactions run on RocksDB's threads and never touch it). Its C
//! API (`rocksdb_perfcontext_metric`) exposes block reads of all kinds together
//! (`block_read_count`) and bytes by kind, but not the count of index and filter blocks read
//! (`index_block_read_count`, `filter_block_read_count`) nor their cache hits, which the data
//! reads are the difference from. This module reads those fields from the struct itself:
//! `rocksdb_perfcontext_t` is `struct { PerfContext* rep; }` (RocksDB's `db/c.cc`), and
//! `PerfContext` derives from `PerfContextBase`, whose members are 120 `uint64_t` counters in a
//! declared order its header says is fixed (`include/rocksdb/perf_context.h`). The layout is
//! checked against the C API's own readings of five of those fields (the first three and two
//! near the end) whenever the engine reads its counters; on a mismatch the engine reports none of
//! these counts rather than wrong ones.
//!
//! Why not the statistics tickers: `rocksdb.block.cache.data.miss` also counts compactions'
//! reads of their input blocks (a compaction looks its input blocks up in the block cache without
//! filling it), so in a phase where compactions run it is not the lookups' figure; and tickers are
//! global, so they cannot be attributed to one lookup.

use std::cell::RefCell;

use librocksdb_sys as ffi;
use rocksdb::perf::{set_perf_stats, PerfStatsLevel};

use super::rocksdb_reads::{
    BlockReads, BLOCK_CACHE_HIT_COUNT, BLOCK_READ_BYTE, BLOCK_READ_COUNT, COUNTERS,
    DATA_BLOCK_READ_BYTE, METADATA_BLOCK_READ_BYTE,
};

/// The C API's metric ids (`rocksdb/c.h`) of the counters the layout is checked against, with
/// their field indices.
const CHECKED: [(usize, i32); 5] = [
    (BLOCK_CACHE_HIT_COUNT, 1),
    (BLOCK_READ_COUNT, 2),
    (BLOCK_READ_BYTE, 3),
    (DATA_BLOCK_READ_BYTE, 78),
    (METADATA_BLOCK_READ_BYTE, 82),
];

/// This thread's perf context.
struct ThreadPerf {
    context: *mut ffi::rocksdb_perfcontext_t,
    counters: *const u64,
}

impl ThreadPerf {
    /// Turns counting on for this thread (`PerfStatsLevel::EnableCount`: counters, no timers)
    /// and finds its perf context; `None` if RocksDB gives none.
    fn new() -> Option<ThreadPerf> {
        set_perf_stats(PerfStatsLevel::EnableCount);
        // SAFETY: a plain constructor of the C API; the handle is destroyed in `drop`.
        let context = unsafe { ffi::rocksdb_perfcontext_create() };
        if context.is_null() {
            return None;
        }
        // SAFETY: `context` is a live `rocksdb_perfcontext_t`, whose only member is the pointer
        // to this thread's `PerfContext` (RocksDB's `db/c.cc`), so it is read as one pointer.
        let counters = unsafe { *context.cast::<*const u64>() };
        let perf = ThreadPerf { context, counters };
        (!counters.is_null()).then_some(perf)
    }

    /// Counter `field` (an index below [`COUNTERS`]).
    fn counter(&self, field: usize) -> u64 {
        debug_assert!(field < COUNTERS);
        // SAFETY: `counters` points at this thread's `PerfContext`, a thread-local of RocksDB's
        // that lives as long as the thread (this value is a thread-local of the same thread,
        // never read from its destructor); its first `COUNTERS` members are `uint64_t`
        // (`PerfContextBase`, no virtual functions, so no vtable pointer before them), and
        // `field < COUNTERS`. RocksDB writes it only from this thread, so no write races.
        unsafe { self.counters.add(field).read() }
    }

    /// Whether the fields read agree with the C API's readings of the same counters.
    fn layout_agrees(&self) -> bool {
        CHECKED.iter().all(|&(field, metric)| {
            // SAFETY: `context` is live (destroyed only in `drop`); any metric id is accepted.
            let expected = unsafe { ffi::rocksdb_perfcontext_metric(self.context, metric) };
            self.counter(field) == expected
        })
    }

    fn reads(&self) -> BlockReads {
        BlockReads::from_counters(|field| self.counter(field))
    }
}

impl Drop for ThreadPerf {
    fn drop(&mut self) {
        // SAFETY: `context` came from `rocksdb_perfcontext_create` and is destroyed once; this
        // frees the handle only, not the thread's perf context.
        unsafe { ffi::rocksdb_perfcontext_destroy(self.context) }
    }
}

thread_local! {
    static PERF: RefCell<Option<Option<ThreadPerf>>> = const { RefCell::new(None) };
}

fn with_perf<T>(read: impl FnOnce(&ThreadPerf) -> T) -> Option<T> {
    PERF.with(|cell| {
        let mut cell = cell.borrow_mut();
        cell.get_or_insert_with(ThreadPerf::new).as_ref().map(read)
    })
}

/// The calling thread's block reads so far (counting turned on at the first call on a thread);
/// `None` if RocksDB gives the thread no perf context.
pub fn reads() -> Option<BlockReads> {
    with_perf(ThreadPerf::reads)
}

/// Whether the struct layout this module reads agrees with RocksDB's C API on the calling
/// thread (`false` if the thread has no perf context).
pub fn layout_agrees() -> bool {
    with_perf(ThreadPerf::layout_agrees).unwrap_or(false)
}
