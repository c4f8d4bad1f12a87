"""The Db's Python protocol: the dict interface, context managers, write batches, snapshots,
iterators' shapes and bounds on hand-made cases, properties and documentation."""

from __future__ import annotations

import pydoc

import pytest

import strata
from conftest import fill, key, value


def test_dict_protocol(db):
    db[b"a"] = b"1"
    assert db[b"a"] == b"1"
    assert b"a" in db
    assert b"b" not in db
    with pytest.raises(KeyError) as raised:
        db[b"b"]
    assert raised.value.args == (b"b",)
    del db[b"a"]
    assert b"a" not in db
    # Deleting an absent key is fine (as rocksdict).
    del db[b"never-written"]
    db.delete(b"never-written")
    assert db.get(b"never-written") is None


def test_get_default(db):
    assert db.get(b"absent") is None
    assert db.get(b"absent", b"fallback") == b"fallback"
    sentinel = object()
    assert db.get(b"absent", sentinel) is sentinel
    db.put(b"present", b"v")
    assert db.get(b"present", b"fallback") == b"v"


def test_len_is_a_type_error(db):
    db.put(b"a", b"1")
    with pytest.raises(TypeError):
        len(db)


def test_iterating_the_db_yields_keys(db):
    expected = fill(db, 100)
    assert list(db) == sorted(expected)


def test_bytes_like_keys_and_values(db):
    db.put(bytearray(b"ba"), memoryview(b"mv"))
    assert db[b"ba"] == b"mv"
    assert db.get(memoryview(b"ba")) == b"mv"
    assert db[bytearray(b"ba")] == b"mv"
    db[memoryview(b"k2")] = bytearray(b"v2")
    assert db.multi_get([b"ba", bytearray(b"k2"), b"zz"]) == [b"mv", b"v2", None]
    # Values come back as bytes, whatever went in.
    assert type(db[b"k2"]) is bytes


def test_empty_key_and_value(db):
    db.put(b"", b"")
    assert db.get(b"") == b""
    assert b"" in db
    assert list(db.items()) == [(b"", b"")]


def test_max_key_bytes_is_accepted(db):
    big = b"k" * strata.MAX_KEY_BYTES
    db.put(big, b"v")
    assert db[big] == b"v"


def test_context_manager_closes(db_path):
    with strata.Db(db_path) as db:
        assert not db.closed
        db.put(b"k", b"v")
    assert db.closed
    with pytest.raises(strata.ClosedError):
        db.get(b"k")
    # Closing twice is harmless.
    db.close()
    with strata.Db(db_path) as again:
        assert again[b"k"] == b"v"


def test_context_manager_closes_on_exception(db_path):
    with pytest.raises(RuntimeError):
        with strata.Db(db_path) as db:
            db.put(b"k", b"v")
            raise RuntimeError("boom")
    assert db.closed
    # The lock was released: the database opens again.
    with strata.Db(db_path) as again:
        assert again[b"k"] == b"v"


def test_properties_and_repr(db_path):
    with strata.Db(db_path) as db:
        assert db.path == db_path or str(db.path) == db_path
        assert db.read_only is False
        assert "strata.Db(" in repr(db)
        assert "read_only" not in repr(db)
    assert "closed" in repr(db)
    with strata.Db(db_path, read_only=True) as ro:
        assert ro.read_only is True
        assert "read_only=True" in repr(ro)


def test_help_prints_the_docstring(capsys):
    help(strata.Db)
    printed = capsys.readouterr().out
    assert "A Strata database" in printed
    assert "write_batch" in printed and "snapshot" in printed


def test_help_shows_docstrings():
    text = pydoc.render_doc(strata.Db, renderer=pydoc.plaintext)
    assert "A Strata database" in text
    assert "no ``len(db)``" in text
    assert "multi_get" in text
    assert strata.Db.__doc__ and "read_only" in strata.Db.__doc__
    assert strata.Db.get.__doc__ and "default" in strata.Db.get.__doc__
    assert strata.WriteBatch.__doc__ and "atomically" in strata.WriteBatch.__doc__
    assert strata.Snapshot.__doc__ and strata.Iterator.__doc__
    assert strata.check.__doc__ and strata.bench.__doc__ and strata.sweep.__doc__
    assert issubclass(strata.InvalidArgumentError, ValueError)
    assert issubclass(strata.IoError, OSError)
    assert isinstance(strata.__version__, str) and strata.__version__


def test_write_batch_object(db):
    db.put(b"gone", b"x")
    batch = strata.WriteBatch()
    batch.put(b"a", b"1")
    batch[b"b"] = b"2"
    batch.delete(b"gone")
    del batch[b"never"]
    assert len(batch) == 4
    db.write(batch)
    assert len(batch) == 4  # Db.write leaves the batch as it was
    assert list(db.items()) == [(b"a", b"1"), (b"b", b"2")]
    batch.clear()
    assert len(batch) == 0
    db.write(batch)  # an empty batch is fine
    # A batch of no database cannot write itself.
    lone = strata.WriteBatch()
    lone.put(b"c", b"3")
    with pytest.raises(strata.InvalidArgumentError):
        lone.write()
    assert b"c" not in db


def test_write_batch_block(db):
    with db.write_batch() as wb:
        wb.put(b"a", b"1")
        wb.put(b"b", b"2")
        # Not visible before the block ends.
        assert b"a" not in db
    assert db.multi_get([b"a", b"b"]) == [b"1", b"2"]
    assert len(wb) == 0


def test_write_batch_block_that_raises_writes_nothing(db):
    db.put(b"keep", b"old")
    with pytest.raises(ZeroDivisionError):
        with db.write_batch(sync=True) as wb:
            wb.put(b"new", b"1")
            wb.delete(b"keep")
            1 / 0
    assert db.get(b"new") is None
    assert db[b"keep"] == b"old"


def test_write_batch_explicit_write_then_block_end(db):
    with db.write_batch() as wb:
        wb.put(b"first", b"1")
        wb.write()
        assert db[b"first"] == b"1"
        wb.put(b"second", b"2")
    assert db[b"second"] == b"2"


def test_snapshot_is_frozen(db):
    fill(db, 50)
    with db.snapshot() as snap:
        db.put(key(0), b"changed")
        db.delete(key(1))
        db.put(b"zzz", b"new")
        assert snap[key(0)] == value(0)
        assert snap.get(key(1)) == value(1)
        assert snap.get(b"zzz") is None
        assert snap.get(b"zzz", b"d") == b"d"
        assert b"zzz" not in snap
        with pytest.raises(KeyError):
            snap[b"zzz"]
        assert snap.multi_get([key(0), b"zzz"]) == [value(0), None]
        assert len(list(snap.keys())) == 50
        assert list(snap.values(prefix=key(0))) == [value(0)]
        assert list(snap.items(reverse=True))[0] == (key(49), value(49))
        assert list(snap.iterator(start=key(10), stop=key(12), include_value=False)) == [
            key(10),
            key(11),
        ]
    with pytest.raises(strata.ClosedError):
        snap.get(key(0))
    assert db[key(0)] == b"changed"


def test_snapshot_survives_flush_and_compaction(small_db):
    fill(small_db, 2000, size=64)
    snap = small_db.snapshot()
    for i in range(0, 2000, 2):
        small_db.delete(key(i))
    fill(small_db, 2000, start=5000, size=64)
    small_db.flush()
    small_db.compact()
    assert snap.multi_get([key(i) for i in range(0, 2000, 97)]) == [
        value(i, 64) for i in range(0, 2000, 97)
    ]
    assert sum(1 for _ in snap.keys()) == 2000
    snap.close()
    assert small_db.get(key(0)) is None
    assert small_db.get(key(1)) == value(1, 64)


def test_iterator_shapes_and_bounds(db):
    for k in [b"a", b"ab", b"abc", b"b", b"ba", b"c"]:
        db.put(k, k.upper())
    keys_of = lambda **kw: list(db.iterator(include_value=False, **kw))  # noqa: E731
    assert keys_of() == [b"a", b"ab", b"abc", b"b", b"ba", b"c"]
    assert keys_of(start=b"ab", stop=b"b") == [b"ab", b"abc"]
    assert keys_of(start=b"ab", stop=b"b", include_start=False, include_stop=True) == [
        b"abc",
        b"b",
    ]
    assert keys_of(prefix=b"a") == [b"a", b"ab", b"abc"]
    assert keys_of(prefix=b"a", reverse=True) == [b"abc", b"ab", b"a"]
    # The prefix's successor is not a key of the prefix, even with include_stop.
    assert keys_of(prefix=b"a", stop=b"b", include_stop=True) == [b"a", b"ab", b"abc"]
    assert keys_of(prefix=b"ab", start=b"a") == [b"ab", b"abc"]
    assert keys_of(start=b"c", stop=b"a") == []
    assert list(db.iterator(include_key=False, prefix=b"b")) == [b"B", b"BA"]
    assert list(db.iterator(prefix=b"b")) == [(b"b", b"B"), (b"ba", b"BA")]
    assert list(db.keys(start=b"b")) == [b"b", b"ba", b"c"]
    assert list(db.values(stop=b"ab")) == [b"A"]
    assert list(db.items(prefix=b"ab", reverse=True)) == [(b"abc", b"ABC"), (b"ab", b"AB")]


def test_iterator_prefix_of_ff_bytes(db):
    for k in [b"\xfe", b"\xff", b"\xff\x00", b"\xff\xff", b"\xff\xff\x01"]:
        db.put(k, b"v")
    assert list(db.keys(prefix=b"\xff\xff")) == [b"\xff\xff", b"\xff\xff\x01"]
    assert list(db.keys(prefix=b"\xff")) == [b"\xff", b"\xff\x00", b"\xff\xff", b"\xff\xff\x01"]


def test_iterator_seek_and_close(db):
    fill(db, 300)
    it = db.iterator(include_value=False)
    assert next(it) == key(0)
    it.seek(key(250))
    assert next(it) == key(250)
    it.seek(key(10))  # backwards too
    assert next(it) == key(10)
    it.seek(b"zzz")
    assert list(it) == []
    it.close()
    assert list(it) == []
    with db.iterator(reverse=True) as rev:
        assert next(rev)[0] == key(299)
        with pytest.raises(strata.InvalidArgumentError):
            rev.seek(key(5))
    with pytest.raises(StopIteration):
        next(rev)


def test_iterator_is_a_frozen_view(db):
    fill(db, 200)
    it = db.keys()
    first = next(it)
    db.delete(key(150))
    fill(db, 50, start=1000)
    rest = list(it)
    assert [first, *rest] == [key(i) for i in range(200)]


def test_data_survives_reopen_and_flush(db_path):
    with strata.Db(db_path, write_buffer_bytes=4096) as db:
        expected = fill(db, 1000)
        db.delete(key(3))
        del expected[key(3)]
    with strata.Db(db_path) as db:
        assert dict(db.items()) == expected


def test_options_are_applied(db_path):
    with strata.Db(
        db_path,
        write_buffer_bytes=1 << 20,
        block_cache_bytes=1 << 20,
        compression="none",
        compaction={"policy": "tiering", "size_ratio": 4},
        filters={"allocator": "uniform", "bits_per_key": 5},
    ) as db:
        stats = db.stats()
        assert "tiering" in str(stats["compaction_policy"]).lower()
        assert "uniform" in str(stats["filter_allocator"]).lower()
        assert stats["block_cache_capacity_bytes"] == 1 << 20


def test_options_file_and_keywords_over_it(tmp_path, db_path):
    options_file = tmp_path / "db.toml"
    options_file.write_text(
        'write_buffer_bytes = 65536\ncompression = "none"\n\n'
        '[compaction]\npolicy = "tiering"\nsize_ratio = 3\n'
    )
    with strata.Db(db_path, options_file=str(options_file), block_cache_bytes=1 << 20) as db:
        stats = db.stats()
        assert "tiering" in str(stats["compaction_policy"]).lower()
        assert stats["block_cache_capacity_bytes"] == 1 << 20
        db.put(b"k", b"v")
        assert db[b"k"] == b"v"


def test_stats_track_writes(small_db):
    before = small_db.stats()
    fill(small_db, 3000, size=64)
    small_db.flush()
    small_db.wait_for_compactions()
    after = small_db.stats()
    assert after["last_sequence"] >= before["last_sequence"] + 3000
    # Every entry is in a table file now (no overwrites: the levels hold exactly 3000).
    assert after["memtable_entries"] == 0
    assert sum(level["entries"] for level in after["levels"]) == 3000
    assert after["io"]["user_write_bytes"] > before["io"]["user_write_bytes"]
    assert after["io"]["flush_write_bytes"] > 0
    assert after["write_amplification"] >= 1.0
    assert after["background_error"] is None


def test_sync_writes(db):
    db.put(b"a", b"1", sync=True)
    db.delete(b"a", sync=True)
    batch = strata.WriteBatch()
    batch.put(b"b", b"2")
    db.write(batch, sync=True)
    assert db.multi_get([b"a", b"b"]) == [None, b"2"]


def test_auto_tune_from_an_options_file_decides_and_shows_in_stats(tmp_path, db_path):
    options_file = tmp_path / "db.toml"
    options_file.write_text(
        "write_buffer_bytes = 65536\n"
        '[compaction]\npolicy = "tiering"\nsize_ratio = 8.0\n'
        # The background thread never comes to it: the test decides.
        "[auto_tune]\nevery_operations = 1000000000\nconfirmations = 1\n"
        # Priced with the device settings alone: this test checks that a decision switches and
        # is recorded, not the measured costs (a debug build's writes would price differently).
        "measured_costs = false\n"
    )
    with strata.Db(db_path, options_file=str(options_file)) as db:
        # 20,000 entries, about 2 MiB: more than 16 write buffers (smaller trees are kept).
        for i in range(20_000):
            db.put(b"k%06d" % i, b"v" * 100)
        db.flush()
        for i in range(200_000):
            db.get(b"k%06d" % (i % 40_000))
        decision = db.auto_tune_now()
        assert decision["number"] == 1
        assert decision["operations"] >= 220_000
        assert decision["mix"]["point_lookups"] > 0.9
        assert decision["candidates"], decision
        assert decision["switched"] is True, decision
        assert not db.stats()["compaction_policy"].startswith("tiering")
        assert len(db.stats()["auto_tune"]) == 1
        assert "switch" in db.stats()["auto_tune"][0]
    with strata.Db(db_path, options_file=str(options_file)) as db:
        assert len(db.stats()["auto_tune"]) == 1
        second = db.auto_tune_now()
        assert second["number"] == 2
        # Nothing written since the last decision: a stretch of reads of one interval, and no
        # operation to price a merge for reads on.
        assert second["reads_held"] == 1, second
        assert "for_reads" not in second, second
    with strata.Db(db_path, read_only=True) as reader:
        with pytest.raises(strata.ReadOnlyError):
            reader.auto_tune_now()
