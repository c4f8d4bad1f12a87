"""Shared fixtures and helpers of the `strata` module's test suite.

Build the module first (from crates/strata-py):
    maturin develop --profile pytest
then run ``python -m pytest crates/strata-py/tests`` from the repository root.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from typing import Callable, Iterable, Optional

import pytest

import strata

# A test that deadlocks (for example on the GIL, where no Python-level timeout can fire) must not
# hang the run: faulthandler's watchdog thread needs no GIL, prints every thread's stack and ends
# the process after this many seconds.
TEST_WATCHDOG_SECONDS = float(os.environ.get("STRATA_TEST_WATCHDOG", "300"))

# Small enough that a few thousand entries flush and compact (the engine's minimum is 4 KiB).
SMALL_BUFFER = 64 << 10

# How long a test waits for a thread before declaring it hung.
JOIN_TIMEOUT = 120.0


@pytest.fixture(autouse=True)
def _watchdog():
    faulthandler.dump_traceback_later(TEST_WATCHDOG_SECONDS, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def db_path(tmp_path):
    """A directory path for a new database (not yet created)."""
    return str(tmp_path / "db")


@pytest.fixture
def db(db_path):
    """An open database with default options, closed after the test."""
    handle = strata.Db(db_path)
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture
def small_db(db_path):
    """An open database with a 64 KiB write buffer, so that flushes and compactions happen."""
    handle = strata.Db(db_path, write_buffer_bytes=SMALL_BUFFER)
    try:
        yield handle
    finally:
        handle.close()


def key(i: int) -> bytes:
    return b"key%08d" % i


def value(i: int, size: int = 32) -> bytes:
    stem = b"value%08d-" % i
    return (stem * (size // len(stem) + 1))[:size]


def fill(db: strata.Db, count: int, *, start: int = 0, size: int = 32, batch: int = 500) -> dict:
    """Writes ``count`` entries (``key(i) -> value(i)``) in batches; returns them as a dict."""
    written = {}
    for first in range(start, start + count, batch):
        wb = strata.WriteBatch()
        for i in range(first, min(first + batch, start + count)):
            wb.put(key(i), value(i, size))
            written[key(i)] = value(i, size)
        db.write(wb)
    return written


class Worker(threading.Thread):
    """A daemon thread that records the exception (or result) of its target."""

    def __init__(self, target: Callable[[], object], name: Optional[str] = None):
        super().__init__(name=name, daemon=True)
        self._work = target
        self.result: object = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as error:  # noqa: BLE001 - reported by run_threads
            self.error = error


def run_threads(
    targets: Iterable[Callable[[], object]], timeout: float = JOIN_TIMEOUT
) -> list[object]:
    """Runs every target on a thread of its own, joins each with a timeout, asserts that none is
    still running and none failed, and returns their results in order."""
    workers = [Worker(target, name=f"worker-{i}") for i, target in enumerate(targets)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout)
    hung = [worker.name for worker in workers if worker.is_alive()]
    assert not hung, f"threads still running after {timeout}s: {hung}"
    for worker in workers:
        if worker.error is not None:
            raise worker.error
    return [worker.result for worker in workers]
