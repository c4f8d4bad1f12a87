//! The test build's global allocator: the system allocator, counting each thread's allocations
//! and live heap bytes, so that tests can pin how many allocations a write makes and check the
//! memtable's size accounting against the heap it really uses.
//!
//! Counts are per thread (const-initialized thread locals, which never allocate), so the
//! engine's background threads do not disturb a test that measures its own calls.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

/// What the calling thread has allocated so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeapCount {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub(crate) allocations: u64,
    /// Heap bytes allocated and not freed, as the allocator hands them out (glibc: the usable
    /// size plus its 8-byte chunk header), by this thread.
    pub(crate) live_bytes: i64,
}

/// The calling thread's counts.
pub(crate) fn heap_count() -> HeapCount {
    HeapCount {
        allocations: ALLOCATIONS.with(Cell::get),
        live_bytes: LIVE_BYTES.with(Cell::get),
    }
}

/// The bytes the allocator really set aside for `ptr`.
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
fn chunk_bytes(ptr: *mut u8, _layout: Layout) -> i64 {
    // SAFETY: `ptr` is a live allocation of the system allocator (glibc malloc, or
    // posix_memalign for over-aligned layouts, which `malloc_usable_size` also accepts); it is
    // called before the block is freed and after it is allocated.
    let usable = unsafe { libc::malloc_usable_size(ptr.cast()) };
    usable as i64 + 8
}

/// Elsewhere, and under Miri (which has no `malloc_usable_size`), the requested size.
#[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
fn chunk_bytes(_ptr: *mut u8, layout: Layout) -> i64 {
    layout.size() as i64
}

fn record(allocations: u64, bytes: i64) {
    // `try_with`: during a thread's teardown its locals may be gone; such calls go uncounted.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + allocations));
    let _ = LIVE_BYTES.try_with(|count| count.set(count.get() + bytes));
}

pub(crate) struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and returns
// its result; the counting around it neither allocates nor touches the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(1, chunk_bytes(ptr, layout));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed` is `System::alloc_zeroed`'s.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(1, chunk_bytes(ptr, layout));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record(0, -chunk_bytes(ptr, layout));
        // SAFETY: the caller's contract for `dealloc` is `System::dealloc`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = chunk_bytes(ptr, layout);
        // SAFETY: the caller's contract for `realloc` is `System::realloc`'s.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            let new_layout = Layout::from_size_align(new_size, layout.align()).unwrap_or(layout);
            record(1, chunk_bytes(new, new_layout) - old);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_threads_allocations_and_live_bytes() {
        let before = heap_count();
        let block = vec![1u8; 100];
        let during = heap_count();
        assert_eq!(during.allocations - before.allocations, 1);
        // glibc gives a 100-byte request a 112-byte chunk; other allocators at least 100.
        assert!(during.live_bytes - before.live_bytes >= 100);
        drop(block);
        assert_eq!(heap_count().live_bytes, before.live_bytes);
        // Another thread starts from its own zero.
        let other = std::thread::spawn(|| {
            let start = heap_count();
            let block = vec![0u8; 1000];
            (start, heap_count(), block.len())
        })
        .join()
        .expect("thread");
        assert_eq!(other.1.allocations - other.0.allocations, 1);
        assert!(other.1.live_bytes - other.0.live_bytes >= 1000);
    }
}
