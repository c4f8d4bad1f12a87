//! The synchronisation primitives of the engine's background coordination, behind one facade so
//! that a test build can run that coordination under a schedule explorer.
//!
//! The flush thread, the compaction workers, manual compaction tickets, `flush`,
//! `wait_for_compactions`, write stalls, close, the sticky background error and policy switches
//! (`crate::db`) take their mutexes, condition variables, the `closed` flag and their threads
//! from here. In a normal build these are parking_lot's and std's own types, re-exported as they
//! are: the same code and the same cost as naming them directly. With the `shuttle` feature they
//! are the `shuttle` crate's, behind thin wrappers with parking_lot's API (a `lock` that returns
//! the guard, a `wait_for` that takes it by `&mut`), so every lock, wait, notification, spawn and
//! join is a point where shuttle chooses which thread runs next, and a schedule in which every
//! thread waits is reported as a deadlock (shuttle never times a timed wait out: a lost wake-up
//! that the 100 ms timed waits would hide becomes a failure). `tests/schedules.rs` explores the
//! coordination that way (docs/TESTING.md, "Schedules explored").
//!
//! Only the coordination is here. Structures that are never held across one of these points —
//! the memtable's skiplist, the block and table caches, the manifest writer's lock, the info log
//! — keep their own primitives: inside one schedule step no other thread runs, so such a lock is
//! never contended under the explorer, and the hot paths are the same in every build.

#[cfg(not(feature = "shuttle"))]
pub(crate) use parking_lot::{Condvar, Mutex};

/// Atomics of the coordination (the `closed` flag every entry point checks).
#[cfg(not(feature = "shuttle"))]
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::AtomicBool;
}

/// The background threads: spawned, named and joined through here.
#[cfg(not(feature = "shuttle"))]
pub(crate) mod thread {
    pub(crate) use std::thread::{panicking, sleep, Builder, JoinHandle};
}

#[cfg(feature = "shuttle")]
pub(crate) use explored::{Condvar, Mutex};

#[cfg(feature = "shuttle")]
pub(crate) mod atomic {
    pub(crate) use shuttle::sync::atomic::AtomicBool;
}

#[cfg(feature = "shuttle")]
pub(crate) mod thread {
    pub(crate) use shuttle::thread::{Builder, JoinHandle};
    pub(crate) use std::thread::panicking;

    /// Shuttle does not model time: a sleep is a point where another thread may run.
    pub(crate) fn sleep(duration: std::time::Duration) {
        shuttle::thread::sleep(duration);
    }
}

/// parking_lot's API over shuttle's std-shaped primitives. Poisoning is ignored, as parking_lot
/// has none: a thread that panicked while holding a lock leaves its data as it was.
#[cfg(feature = "shuttle")]
mod explored {
    use std::ops::{Deref, DerefMut};
    use std::sync::{PoisonError, TryLockError};
    use std::time::Duration;

    #[derive(Default)]
    pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)))
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(guard) => Some(MutexGuard(Some(guard))),
                Err(TryLockError::Poisoned(poisoned)) => {
                    Some(MutexGuard(Some(poisoned.into_inner())))
                }
                Err(TryLockError::WouldBlock) => None,
            }
        }
    }

    /// Holds shuttle's guard; empty only inside [`Condvar::wait_for`], which puts it back before
    /// it returns.
    pub(crate) struct MutexGuard<'a, T>(Option<shuttle::sync::MutexGuard<'a, T>>);

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            self.0
                .as_deref()
                .expect("a guard is held outside Condvar::wait_for")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0
                .as_deref_mut()
                .expect("a guard is held outside Condvar::wait_for")
        }
    }

    #[derive(Default)]
    pub(crate) struct Condvar(shuttle::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(shuttle::sync::Condvar::new())
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }

        /// Waits for a notification. Shuttle never times this out, so a waiter nobody notifies
        /// is a deadlock the explorer reports, not a 100 ms delay.
        pub(crate) fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) {
            let held = guard
                .0
                .take()
                .expect("a guard is held outside Condvar::wait_for");
            let (held, _) = self
                .0
                .wait_timeout(held, timeout)
                .unwrap_or_else(PoisonError::into_inner);
            guard.0 = Some(held);
        }
    }
}
