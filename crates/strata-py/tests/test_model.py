"""A randomised model check: the database against a Python dict, driven by Hypothesis.

Each example opens a database in a fresh directory, with default options or with a tiny write
buffer (so that flushes and compactions happen within a few dozen steps), and applies a random
sequence of puts, deletes, write batches (both forms, including a ``with`` block that fails),
snapshots, bounded iterators, multi_gets, flushes, compactions and close+reopen. After every
read the answer must equal the dict's (for a snapshot: the dict as it was when it was taken).
"""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import strata

# A small alphabet, so that keys collide, share prefixes and sit at each other's bounds; 0xff
# exercises a prefix without a successor, 0x00 the smallest byte.
ALPHABET = [0x00, 0x01, 0x61, 0x62, 0xFE, 0xFF]
keys = st.lists(st.sampled_from(ALPHABET), max_size=4).map(bytes)
small_values = st.binary(max_size=24)
values = st.one_of(small_values, small_values, st.binary(min_size=200, max_size=2000))
operations = st.lists(
    st.tuples(st.sampled_from(["put", "delete"]), keys, small_values), max_size=12
)

CONFIGURATIONS = [
    {},
    # The engine's smallest write buffer: flushes every few KiB.
    {"write_buffer_bytes": 4096},
    {
        "write_buffer_bytes": 64 << 10,
        "compaction": {"policy": "tiering", "size_ratio": 2},
        "filters": {"allocator": "elastic", "bits_per_key": 5},
    },
    {"write_buffer_bytes": 4096, "compaction": {"policy": "leveling", "size_ratio": 2}},
]

MAX_SNAPSHOTS = 3


def successor(prefix: bytes):
    """The smallest key after every key that starts with ``prefix`` (None for 0xff...)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


def written_or(fallback, model: dict):
    """A key of the model (present keys are the interesting bounds), or ``fallback``."""
    return st.sampled_from(sorted(model)) if model else fallback


class _Boom(Exception):
    pass


def expected_range(
    model: dict,
    *,
    start=None,
    stop=None,
    prefix=None,
    include_start=True,
    include_stop=False,
    reverse=False,
) -> list[tuple[bytes, bytes]]:
    """plyvel's iterator semantics on a dict: the sorted slice within every bound."""
    rows = []
    for k in sorted(model):
        if start is not None and not (k > start or (include_start and k == start)):
            continue
        if stop is not None and not (k < stop or (include_stop and k == stop)):
            continue
        if prefix is not None and not k.startswith(prefix):
            continue
        rows.append((k, model[k]))
    if reverse:
        rows.reverse()
    return rows


class DbModel(RuleBasedStateMachine):
    """Strata against a dict."""

    def __init__(self):
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="strata-model-")
        self.path = self.directory + "/db"
        self.options: dict = {}
        self.db = None
        self.model: dict[bytes, bytes] = {}
        self.snapshots: list[tuple[strata.Snapshot, dict]] = []
        self.bulk_rounds = 0

    written = Bundle("written")

    @initialize(configuration=st.sampled_from(range(len(CONFIGURATIONS))))
    def open(self, configuration):
        self.options = CONFIGURATIONS[configuration]
        self.db = strata.Db(self.path, **self.options)

    def teardown(self):
        for snapshot, _ in self.snapshots:
            snapshot.close()
        if self.db is not None:
            self.db.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # Writes.

    @rule(target=written, k=keys, v=values, form=st.sampled_from(["put", "setitem", "sync"]))
    def put(self, k, v, form):
        if form == "put":
            self.db.put(k, v)
        elif form == "setitem":
            self.db[k] = v
        else:
            self.db.put(k, v, sync=True)
        self.model[k] = v
        return k

    @rule(k=st.one_of(keys, written), form=st.sampled_from(["delete", "delitem", "sync"]))
    def delete(self, k, form):
        if form == "delete":
            self.db.delete(k)
        elif form == "delitem":
            del self.db[k]  # absent keys included: no error
        else:
            self.db.delete(k, sync=True)
        self.model.pop(k, None)

    def _apply(self, batch, ops):
        for op, k, v in ops:
            if op == "put":
                batch.put(k, v)
            else:
                batch.delete(k)

    def _model_apply(self, ops):
        for op, k, v in ops:
            if op == "put":
                self.model[k] = v
            else:
                self.model.pop(k, None)

    @rule(ops=operations)
    def write_batch_object(self, ops):
        batch = strata.WriteBatch()
        self._apply(batch, ops)
        assert len(batch) == len(ops)
        self.db.write(batch)
        # Db.write leaves the batch as it was.
        assert len(batch) == len(ops)
        self._model_apply(ops)

    @rule(ops=operations, fail=st.booleans())
    def write_batch_block(self, ops, fail):
        if fail:
            with pytest.raises(_Boom):
                with self.db.write_batch() as wb:
                    self._apply(wb, ops)
                    raise _Boom()
            # Nothing of the failed block is written.
            touched = [k for _, k, _ in ops]
            assert self.db.multi_get(touched) == [self.model.get(k) for k in touched]
        else:
            with self.db.write_batch() as wb:
                self._apply(wb, ops)
                assert len(wb) == len(ops)
            self._model_apply(ops)

    @precondition(lambda self: self.bulk_rounds < 3)
    @rule(first=st.integers(0, 50), count=st.integers(50, 400))
    def bulk(self, first, count):
        """Enough data at once to fill small write buffers: flushes and compactions happen."""
        self.bulk_rounds += 1
        batch = strata.WriteBatch()
        for i in range(first, first + count):
            k = b"b" + b"%05d" % i
            v = b"bulk%06d" % i * 8
            batch.put(k, v)
            self.model[k] = v
        self.db.write(batch)

    # Reads.

    @rule(k=st.one_of(keys, written))
    def get(self, k):
        expected = self.model.get(k)
        assert self.db.get(k) == expected
        assert self.db.get(k, b"<default>") == (b"<default>" if expected is None else expected)
        assert (k in self.db) == (expected is not None)
        if expected is None:
            with pytest.raises(KeyError):
                self.db[k]
        else:
            assert self.db[k] == expected

    @rule(ks=st.lists(st.one_of(keys, written), max_size=10))
    def multi_get(self, ks):
        assert self.db.multi_get(ks) == [self.model.get(k) for k in ks]

    @rule(
        data=st.data(),
        start=st.none() | keys,
        prefix=st.none() | keys | st.sampled_from([b"a", b"\xff", b"a\xff", b""]),
        include_start=st.booleans(),
        include_stop=st.booleans(),
        reverse=st.booleans(),
        shape=st.sampled_from(["items", "keys", "values"]),
    )
    def iterate(self, data, start, prefix, include_start, include_stop, reverse, shape):
        # The stop is often the key just past the prefix's range, or the start itself: the
        # edges where prefix and bounds meet.
        stop_choices = [st.none(), keys, written_or(keys, self.model)]
        if prefix is not None and successor(prefix) is not None:
            stop_choices.append(st.just(successor(prefix)))
        if start is not None:
            stop_choices.append(st.just(start))
        stop = data.draw(st.one_of(stop_choices), label="stop")
        bounds = dict(
            start=start,
            stop=stop,
            prefix=prefix,
            include_start=include_start,
            include_stop=include_stop,
            reverse=reverse,
        )
        expected = expected_range(self.model, **bounds)
        it = self.db.iterator(
            **bounds,
            include_key=shape != "values",
            include_value=shape != "keys",
        )
        with it:
            got = list(it)
        if shape == "keys":
            assert got == [k for k, _ in expected]
        elif shape == "values":
            assert got == [v for _, v in expected]
        else:
            assert got == expected

    @rule(prefix=st.none() | keys, reverse=st.booleans())
    def items_keys_values(self, prefix, reverse):
        expected = expected_range(self.model, prefix=prefix, reverse=reverse)
        assert list(self.db.items(prefix=prefix, reverse=reverse)) == expected
        assert list(self.db.keys(prefix=prefix, reverse=reverse)) == [k for k, _ in expected]
        assert list(self.db.values(prefix=prefix, reverse=reverse)) == [v for _, v in expected]

    @rule(target_key=keys)
    def seek(self, target_key):
        with self.db.iterator() as it:
            it.seek(target_key)
            got = list(it)
        assert got == expected_range(self.model, start=target_key)

    # Snapshots.

    @precondition(lambda self: len(self.snapshots) < MAX_SNAPSHOTS)
    @rule()
    def take_snapshot(self):
        self.snapshots.append((self.db.snapshot(), dict(self.model)))

    @precondition(lambda self: self.snapshots)
    @rule(
        data=st.data(),
        prefix=st.none() | keys,
        reverse=st.booleans(),
        ks=st.lists(keys, max_size=6),
    )
    def read_snapshot(self, data, prefix, reverse, ks):
        index = data.draw(st.integers(0, len(self.snapshots) - 1))
        snapshot, then = self.snapshots[index]
        assert list(snapshot.items(prefix=prefix, reverse=reverse)) == expected_range(
            then, prefix=prefix, reverse=reverse
        )
        assert snapshot.multi_get(ks) == [then.get(k) for k in ks]
        for k in ks:
            assert snapshot.get(k) == then.get(k)
            assert (k in snapshot) == (k in then)

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def release_snapshot(self, data):
        index = data.draw(st.integers(0, len(self.snapshots) - 1))
        snapshot, _ = self.snapshots.pop(index)
        snapshot.close()
        with pytest.raises(strata.ClosedError):
            snapshot.get(b"a")

    # Maintenance.

    @rule()
    def flush(self):
        self.db.flush()

    @rule()
    def compact(self):
        self.db.compact()

    @rule()
    def reopen(self):
        self.db.close()
        # Snapshots do not outlive their database.
        for snapshot, _ in self.snapshots:
            with pytest.raises(strata.ClosedError):
                snapshot.get(b"a")
            snapshot.close()
        self.snapshots.clear()
        self.db = strata.Db(self.path, **self.options)
        assert list(self.db.items()) == expected_range(self.model)

    @invariant()
    def db_is_open(self):
        if self.db is not None:
            assert not self.db.closed


TestDbModel = DbModel.TestCase
TestDbModel.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_expected_range_helper():
    """The oracle itself, on a hand-made case (prefix bounds and the 0xff edge)."""
    model = {b"a": b"1", b"ab": b"2", b"b": b"3", b"\xff": b"4", b"\xff\x00": b"5"}
    assert expected_range(model, prefix=b"a", stop=b"b", include_stop=True) == [
        (b"a", b"1"),
        (b"ab", b"2"),
    ]
    assert expected_range(model, prefix=b"\xff", reverse=True) == [
        (b"\xff\x00", b"5"),
        (b"\xff", b"4"),
    ]
    assert expected_range(model, start=b"a", include_start=False, stop=b"b") == [(b"ab", b"2")]
