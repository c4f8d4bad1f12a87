"""Threads: iterators under concurrent writers, one iterator shared by several threads, and
several concurrent callers of every entry point (ending with concurrent closes)."""

from __future__ import annotations

import random
import threading

import pytest

import strata
from conftest import fill, key, run_threads, value

WRITERS = 4


def _churn(db, seed: int, rounds: int, stop: threading.Event | None = None):
    """Overwrites, deletes and adds keys (a writer that changes everything an iterator might
    see)."""
    rng = random.Random(seed)
    for round_ in range(rounds):
        if stop is not None and stop.is_set():
            break
        i = rng.randrange(2000)
        action = rng.randrange(4)
        if action == 0:
            db.put(key(i), b"overwritten-%d" % seed)
        elif action == 1:
            db.delete(key(i))
        elif action == 2:
            db.put(b"new-%d-%d" % (seed, round_), b"x" * 50)
        else:
            batch = strata.WriteBatch()
            for j in range(i, i + 20):
                batch.put(key(j), b"batch-%d" % seed)
            batch.delete(key(i + 21))
            db.write(batch)
    return True


def test_iterator_sees_the_frozen_view_under_concurrent_writers(small_db):
    expected = fill(small_db, 2000, size=64)
    forward = small_db.iterator()
    reverse = small_db.iterator(reverse=True)
    keys_only = small_db.keys(start=key(100), stop=key(1900))
    snapshot = small_db.snapshot()
    started = threading.Barrier(WRITERS + 1)

    def writer(seed):
        started.wait(30)
        return _churn(small_db, seed, 1500)

    def reader():
        started.wait(30)
        got_forward = []
        for entry in forward:
            got_forward.append(entry)
            if len(got_forward) % 100 == 0:
                # Give the writers time to change what is still ahead.
                small_db.flush()
        return got_forward, list(reverse), list(keys_only)

    results = run_threads([lambda s=s: writer(s) for s in range(WRITERS)] + [reader])
    got_forward, got_reverse, got_keys = results[-1]
    assert all(results[:-1])
    frozen = sorted(expected.items())
    assert got_forward == frozen
    assert got_reverse == frozen[::-1]
    assert got_keys == [key(i) for i in range(100, 1900)]
    assert list(snapshot.items()) == frozen
    snapshot.close()
    # The writers' changes did land.
    now = dict(small_db.items())
    assert now != expected
    assert any(k.startswith(b"new-") for k in now)


def test_threads_sharing_one_iterator_get_each_entry_once(small_db):
    expected = fill(small_db, 20_000, size=48)
    shared = small_db.iterator()
    stop = threading.Event()
    consumers = 4

    def consume():
        got = []
        for entry in shared:
            got.append(entry)
        return got

    writer_thread_result = {}

    def writing():
        writer_thread_result["done"] = _churn(small_db, 99, 100_000, stop)

    background = threading.Thread(target=writing, daemon=True)
    background.start()
    try:
        parts = run_threads([consume] * consumers)
    finally:
        stop.set()
        background.join(60)
    assert not background.is_alive()
    assert writer_thread_result.get("done") is True
    merged = [entry for part in parts for entry in part]
    assert len(merged) == len(expected)
    assert sorted(merged) == sorted(expected.items())
    assert len({k for k, _ in merged}) == len(expected)  # no entry twice
    for part in parts:
        # Each thread sees its own entries in key order.
        assert [k for k, _ in part] == sorted(k for k, _ in part)
    with pytest.raises(StopIteration):
        next(shared)


def test_shared_reverse_and_snapshot_iterators(db):
    expected = fill(db, 3000)
    with db.snapshot() as snap:
        db.put(b"later", b"x")
        for shared, ordered in (
            (
                    db.iterator(reverse=True, include_value=False),
                    sorted([*expected, b"later"], reverse=True),
                ),
            (snap.iterator(include_value=False), sorted(expected)),
        ):
            parts = run_threads([lambda: list(shared)] * 4)
            merged = [k for part in parts for k in part]
            assert sorted(merged) == sorted(ordered)
            assert len(merged) == len(set(merged))
            for part in parts:
                assert part == [k for k in ordered if k in set(part)]


def test_concurrent_callers_of_every_entry_point(db_path):
    db = strata.Db(db_path, write_buffer_bytes=64 << 10)
    models: list[dict] = [{} for _ in range(WRITERS)]
    rounds = 300

    def owner(t):
        """A thread that owns keys b"t<t>-...": writes and reads them back, every way."""
        rng = random.Random(t)
        model = models[t]
        mine = lambda i: b"t%d-%05d" % (t, i)  # noqa: E731
        for r in range(rounds):
            i = rng.randrange(200)
            kind = r % 6
            if kind == 0:
                v = b"v%d" % r
                db.put(mine(i), v)
                model[mine(i)] = v
            elif kind == 1:
                db.delete(mine(i))
                model.pop(mine(i), None)
            elif kind == 2:
                batch = strata.WriteBatch()
                for j in range(i, i + 5):
                    batch.put(mine(j), b"b%d" % r)
                    model[mine(j)] = b"b%d" % r
                db.write(batch)
            elif kind == 3:
                with db.write_batch() as wb:
                    wb.delete(mine(i))
                    wb.put(mine(i + 1), b"w%d" % r)
                model.pop(mine(i), None)
                model[mine(i + 1)] = b"w%d" % r
            elif kind == 4:
                probe = [mine(j) for j in range(i, i + 10)]
                assert db.multi_get(probe) == [model.get(k) for k in probe]
                assert db.get(mine(i)) == model.get(mine(i))
            else:
                # Only this thread writes its prefix: its iterator must match its model.
                prefix = b"t%d-" % t
                assert list(db.items(prefix=prefix)) == sorted(model.items())
        return True

    def maintainer():
        for r in range(15):
            db.flush()
            if r % 5 == 0:
                db.compact()
            stats = db.stats()
            assert stats["background_error"] is None
            db.wait_for_compactions()
            decision = db.auto_tune_now()
            assert decision["number"] >= 1 and isinstance(decision["reason"], str)
        return True

    def snapshotter():
        for _ in range(30):
            with db.snapshot() as snap:
                first = list(snap.items())
                assert list(snap.items()) == first  # frozen
                keys = [k for k, _ in first[:50]]
                assert snap.multi_get(keys) == [v for _, v in first[:50]]
            with db.iterator(include_value=False) as it:
                listed = list(it)
                assert listed == sorted(listed)
        return True

    def reader():
        for _ in range(200):
            stats = db.stats()
            assert isinstance(stats["levels"], list)
            db.get(b"t0-00001")
            db.multi_get([b"t1-00001", b"t2-00002"])
        return True

    try:
        results = run_threads(
            [lambda t=t: owner(t) for t in range(WRITERS)]
            + [maintainer, maintainer, snapshotter, reader]
        )
        assert all(results)
        expected = {k: v for model in models for k, v in model.items()}
        assert dict(db.items()) == expected
    finally:
        db.close()
    with strata.Db(db_path) as again:
        assert dict(again.items()) == expected


def test_concurrent_close_with_callers(db_path):
    db = strata.Db(db_path, write_buffer_bytes=64 << 10)
    fill(db, 2000)
    db.flush()
    go = threading.Barrier(8)
    acknowledged: list[set] = [set() for _ in range(4)]

    def busy(t):
        go.wait(30)
        rng = random.Random(t)
        calls = 0
        try:
            while True:
                i = rng.randrange(100_000)
                k = b"busy%d-%06d" % (t, i)
                db.put(k, b"1")
                acknowledged[t].add(k)
                db.get(key(i % 2000))
                db.multi_get([key(1), key(2)])
                for _ in db.iterator(prefix=key(1)[:-2]):
                    pass
                with db.snapshot() as snap:
                    snap.get(key(3))
                if calls % 50 == 0:
                    db.flush()
                    db.stats()
                    db.auto_tune_now()
                calls += 1
        except strata.ClosedError:
            return calls

    def closer():
        go.wait(30)
        # Let the busy threads do some work first.
        while sum(len(a) for a in acknowledged) < 200:
            threading.Event().wait(0.001)
        db.close()
        return True

    results = run_threads([lambda t=t: busy(t) for t in range(4)] + [closer] * 4)
    assert all(results[4:])
    assert all(isinstance(calls, int) for calls in results[:4])
    assert db.closed
    with pytest.raises(strata.ClosedError):
        db.put(b"k", b"v")
    # Every acknowledged write survived the close.
    with strata.Db(db_path) as again:
        for written in acknowledged:
            ordered = sorted(written)
            assert again.multi_get(ordered) == [b"1"] * len(ordered)
        assert again[key(5)] == value(5)
