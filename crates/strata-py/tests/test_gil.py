"""The GIL is released while the engine works: other Python threads make progress during a
long engine call.

Two kinds of evidence:

* counts: a pure-Python thread counts while another thread is inside one long call
  (``multi_get`` of many keys, ``compact`` of a sizeable tree, a long ``scan``). With the switch
  interval raised above the call's length, a thread that kept the GIL through the call would
  leave the counter exactly where it was; a released GIL lets it move. Progress is judged by
  comparing counts, never by timing thresholds.
* a rendezvous that cannot complete unless the GIL is released: an engine call blocks reading a
  named pipe that only another Python thread of the same process writes. It runs in a
  subprocess, so that a regression is a failed (timed-out) test, not a hung run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

import strata
from conftest import JOIN_TIMEOUT, Worker, fill, key

# Above the length of every long call below (about 0.1-0.5 s in the test build), so that a
# thread holding the GIL through the call would not be asked to drop it before the call returns
# (and the counter would stay put). A loaded machine can only make the check weaker (a slow call
# outlasting the interval), never make a released GIL look held.
SWITCH_INTERVAL = 2.0
ATTEMPTS = 5


class Counter(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.count += 1
            # Lets go of the GIL for a moment each round: a thread coming back from a long call
            # gets it at once instead of after a switch interval.
            time.sleep(0.0001)


@pytest.fixture
def counter():
    previous = sys.getswitchinterval()
    thread = Counter()
    thread.start()
    while thread.count == 0:  # it runs
        threading.Event().wait(0.001)
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield thread
    finally:
        sys.setswitchinterval(previous)
        thread.stop.set()
        thread.join(JOIN_TIMEOUT)
        assert not thread.is_alive()


def progress_during(counter: Counter, call) -> int:
    """How far the counter moved while ``call`` ran (nothing else runs in between: the two reads
    of the counter are in this thread, right around the call)."""
    best = 0
    for _ in range(ATTEMPTS):
        before = counter.count
        call()
        moved = counter.count - before
        best = max(best, moved)
        if best > 0:
            break
    return best


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("gil") / "db")
    db = strata.Db(path, write_buffer_bytes=1 << 20)
    fill(db, 100_000, size=48)
    db.flush()
    try:
        yield db
    finally:
        db.close()


def test_the_measure_detects_a_held_gil(counter):
    """Control: a C call that keeps the GIL (``sum`` over a range) leaves the counter where it
    was, so a moved counter during an engine call does show a released GIL. (Least of a few
    attempts: one slowed past the switch interval by a loaded machine does not count.)"""
    moves = []
    for _ in range(3):
        before = counter.count
        sum(range(3_000_000))
        moves.append(counter.count - before)
    assert min(moves) == 0


def test_counter_moves_during_a_long_multi_get(big_db, counter):
    keys = [key(i) for i in range(0, 200_000)]
    results = []
    moved = progress_during(counter, lambda: results.append(big_db.multi_get(keys)))
    assert moved > 0, "no Python thread ran during multi_get: the GIL was held"
    assert results[-1][:2] == big_db.multi_get(keys[:2])
    assert results[-1][-1] is None


def test_counter_moves_during_compact(big_db, counter):
    def compact():
        # New data to merge, so that every attempt has real work.
        fill(big_db, 30_000, start=200_000, size=48)
        before = counter.count
        big_db.compact()
        return counter.count - before

    moved = 0
    for _ in range(ATTEMPTS):
        moved = max(moved, compact())
        if moved:
            break
    assert moved > 0, "no Python thread ran during compact: the GIL was held"
    assert big_db.get(key(200_001)) is not None


def test_counter_moves_during_a_reverse_scan(big_db, counter):
    # A reverse iterator reads its whole range at creation, inside one call.
    moved = progress_during(counter, lambda: big_db.iterator(reverse=True).close())
    assert moved > 0


def test_two_reader_threads_progress_together(big_db):
    """Two threads each doing many gets: both finish their work while the other runs, and the
    counts each reports show interleaving (each saw the other's count move)."""
    counts = [0, 0]
    seen_other_move = [False, False]
    # Both start together: on a loaded machine a thread started second could otherwise begin
    # only after the first had finished, and there would be nothing to interleave.
    start = threading.Barrier(2)
    done = threading.Barrier(2)

    def reader(me):
        other = 1 - me
        start.wait(JOIN_TIMEOUT)
        last_other = counts[other]
        for i in range(20_000):
            assert big_db.get(key(i % 100_000)) is not None
            counts[me] += 1
            if counts[other] != last_other and 0 < counts[other] < 20_000:
                seen_other_move[me] = True
            last_other = counts[other]
        done.wait(JOIN_TIMEOUT)
        return counts[me]

    workers = [Worker(lambda m=m: reader(m)) for m in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(JOIN_TIMEOUT)
    assert not any(worker.is_alive() for worker in workers)
    assert [worker.error for worker in workers] == [None, None]
    assert counts == [20_000, 20_000]
    assert any(seen_other_move)


RENDEZVOUS = textwrap.dedent(
    """
    import os, sys, threading
    import strata

    path = sys.argv[1]
    with strata.Db(path) as db:
        db.put(b"k", b"v")
    current = os.path.join(path, "CURRENT")
    with open(current) as handle:
        name = handle.read()
    result = {}

    def rendezvous(call):
        # `call` blocks inside the engine, reading CURRENT (a named pipe), until this process's
        # main thread writes it: Python code that runs only if `call` released the GIL.
        os.remove(current)
        os.mkfifo(current)
        thread = threading.Thread(target=call)
        thread.start()
        with open(current, "w") as handle:
            handle.write(name)
        thread.join(60)
        assert not thread.is_alive()
        os.remove(current)
        with open(current, "w") as handle:
            handle.write(name)

    def open_and_read():
        with strata.Db(path, read_only=True) as db:
            result["value"] = db.get(b"k")

    def check():
        # The command line's code (strata.check), through the same release of the GIL.
        result["sound"] = strata.check(path)["sound"]

    rendezvous(open_and_read)
    rendezvous(check)
    print(repr(sorted(result.items())), flush=True)
    """
)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
def test_engine_call_blocked_in_io_lets_other_threads_run(tmp_path):
    try:
        done = subprocess.run(
            [sys.executable, "-c", RENDEZVOUS, str(tmp_path / "db")],
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: an engine call blocked in I/O kept the GIL")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('sound', True), ('value', b'v')]"
