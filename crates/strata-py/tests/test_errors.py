"""Every kind of engine error reaches Python as its documented exception class, and bad input
gives the documented exception."""

from __future__ import annotations

import os
import shutil

import pytest

import strata
from conftest import fill, key

ERROR_CLASSES = [
    strata.CorruptionError,
    strata.LockedError,
    strata.InvalidArgumentError,
    strata.ReadOnlyError,
    strata.ClosedError,
    strata.IoError,
    strata.BackgroundError,
    strata.InternalError,
]


def test_hierarchy():
    for cls in ERROR_CLASSES:
        assert issubclass(cls, strata.Error)
        assert cls.__module__ == "strata._errors"
    assert issubclass(strata.Error, Exception)
    assert issubclass(strata.InvalidArgumentError, ValueError)
    assert issubclass(strata.IoError, OSError)


# InvalidArgumentError.


def test_unknown_option_names_it_and_lists_the_allowed(db_path):
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.Db(db_path, write_bufer_bytes=1 << 20)
    message = str(raised.value)
    assert "write_bufer_bytes" in message
    assert "write_buffer_bytes" in message and "block_cache_bytes" in message
    assert isinstance(raised.value, ValueError)
    assert not os.path.exists(db_path)  # nothing was created


def test_unknown_nested_option(db_path):
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.Db(db_path, compaction={"policy": "leveling", "sise_ratio": 4})
    assert "sise_ratio" in str(raised.value)
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.Db(db_path, compaction={"policy": "no-such-policy"})
    assert "no-such-policy" in str(raised.value)


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"write_buffer_bytes": 1}, "write_buffer_bytes"),
        ({"write_buffer_bytes": -5}, "-5"),
        ({"write_buffer_bytes": "big"}, "big"),
        ({"write_buffer_bytes": 1.5}, "1.5"),
        ({"max_write_buffers": 0}, "max_write_buffers"),
        ({"compression": "nonsense"}, "nonsense"),
        ({"sync_writes": "yes"}, "yes"),
        ({"filters": {"allocator": "uniform"}}, "bits_per_key"),
    ],
)
def test_bad_option_values(db_path, options, needle):
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.Db(db_path, **options)
    assert needle in str(raised.value)


def test_option_of_an_unencodable_type(db_path):
    with pytest.raises(TypeError):
        strata.Db(db_path, write_buffer_bytes=object())


def test_key_over_the_limit(db):
    huge = b"k" * (strata.MAX_KEY_BYTES + 1)
    for call in (
        lambda: db.put(huge, b"v"),
        lambda: db.__setitem__(huge, b"v"),
        lambda: db.delete(huge),
    ):
        with pytest.raises(strata.InvalidArgumentError) as raised:
            call()
        assert str(strata.MAX_KEY_BYTES) in str(raised.value)
    batch = strata.WriteBatch()
    batch.put(b"fine", b"v")
    batch.put(huge, b"v")
    with pytest.raises(strata.InvalidArgumentError):
        db.write(batch)
    # The batch is atomic: its valid put is not applied either.
    assert db.get(b"fine") is None


def test_value_over_the_limit(db):
    with pytest.raises(strata.InvalidArgumentError):
        db.put(b"k", b"\0" * (strata.MAX_VALUE_BYTES + 1))
    assert b"k" not in db


def test_iterator_without_keys_and_values(db):
    with pytest.raises(strata.InvalidArgumentError):
        db.iterator(include_key=False, include_value=False)
    with db.snapshot() as snap, pytest.raises(strata.InvalidArgumentError):
        snap.iterator(include_key=False, include_value=False)


def test_read_only_open_of_a_missing_directory(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(strata.Error):
        strata.Db(missing, read_only=True)
    assert not os.path.exists(missing)  # a read-only open creates nothing


# TypeError for keys and values that are not bytes.


@pytest.mark.parametrize("bad", ["text", 42, None, 1.5, [b"a"], object()])
def test_non_bytes_keys(db, bad):
    calls = [
        lambda: db.put(bad, b"v"),
        lambda: db.get(bad),
        lambda: db[bad],
        lambda: db.__setitem__(bad, b"v"),
        lambda: db.__delitem__(bad),
        lambda: bad in db,
        lambda: db.delete(bad),
        lambda: db.multi_get([b"ok", bad]),
        lambda: db.iterator(start=bad) if bad is not None else db.iterator(start=1),
        lambda: strata.WriteBatch().put(bad, b"v"),
        lambda: strata.WriteBatch().delete(bad),
    ]
    for call in calls:
        with pytest.raises(TypeError) as raised:
            call()
        if isinstance(bad, str):
            assert "encode" in str(raised.value)


def test_non_bytes_values(db):
    with pytest.raises(TypeError) as raised:
        db.put(b"k", "text")
    assert "encode" in str(raised.value)
    with pytest.raises(TypeError):
        db[b"k"] = 5
    with pytest.raises(TypeError):
        db.put(b"k", None)
    assert b"k" not in db


def test_write_needs_a_write_batch(db):
    with pytest.raises(TypeError):
        db.write([(b"k", b"v")])


# LockedError.


def test_second_open_is_locked(db_path):
    with strata.Db(db_path) as first:
        first.put(b"k", b"v")
        with pytest.raises(strata.LockedError):
            strata.Db(db_path)
        # A read-only open beside the writer is allowed and sees what was flushed.
        first.flush()
        with strata.Db(db_path, read_only=True) as reader:
            assert reader[b"k"] == b"v"
    # The lock is gone with the first handle.
    with strata.Db(db_path) as again:
        assert again[b"k"] == b"v"


# ReadOnlyError.


def test_writes_on_a_read_only_db(db_path):
    with strata.Db(db_path) as db:
        db.put(b"k", b"v")
    with strata.Db(db_path, read_only=True) as ro:
        assert ro[b"k"] == b"v"
        batch = strata.WriteBatch()
        batch.put(b"x", b"y")
        for call in (
            lambda: ro.put(b"k", b"w"),
            lambda: ro.__setitem__(b"k", b"w"),
            lambda: ro.delete(b"k"),
            lambda: ro.write(batch),
            lambda: ro.flush(),
            lambda: ro.compact(),
        ):
            with pytest.raises(strata.ReadOnlyError):
                call()
        with pytest.raises(strata.ReadOnlyError):
            with ro.write_batch() as wb:
                wb.put(b"a", b"b")
        assert ro[b"k"] == b"v"
        assert ro.get(b"x") is None


def test_a_batch_whose_write_fails_keeps_its_operations(db_path):
    with strata.Db(db_path) as db:
        db.put(b"k", b"v")
    with strata.Db(db_path, read_only=True) as ro:
        wb = ro.write_batch()
        wb.put(b"a", b"1")
        wb.delete(b"k")
        with pytest.raises(strata.ReadOnlyError):
            wb.write()
        assert len(wb) == 2
    with strata.Db(db_path) as db:
        wb = db.write_batch()
        wb.put(b"a", b"1")
        wb.write()
        assert len(wb) == 0
        assert db[b"a"] == b"1"


# ClosedError.


def test_calls_after_close(db_path):
    db = strata.Db(db_path)
    db.put(b"k", b"v")
    it = db.iterator()
    snap = db.snapshot()
    wb = db.write_batch()
    wb.put(b"a", b"b")
    db.close()
    batch = strata.WriteBatch()
    calls = {
        "get": lambda: db.get(b"k"),
        "getitem": lambda: db[b"k"],
        "contains": lambda: b"k" in db,
        "put": lambda: db.put(b"k", b"v"),
        "setitem": lambda: db.__setitem__(b"k", b"v"),
        "delete": lambda: db.delete(b"k"),
        "delitem": lambda: db.__delitem__(b"k"),
        "multi_get": lambda: db.multi_get([b"k"]),
        "write": lambda: db.write(batch),
        "batch.write": lambda: wb.write(),
        "snapshot": lambda: db.snapshot(),
        "iterator": lambda: db.iterator(),
        "items": lambda: db.items(),
        "iter": lambda: iter(db),
        "flush": lambda: db.flush(),
        "compact": lambda: db.compact(),
        "wait_for_compactions": lambda: db.wait_for_compactions(),
        "stats": lambda: db.stats(),
        "check": lambda: db.check(),
        "iterator.next": lambda: next(it),
        "snapshot.get": lambda: snap.get(b"k"),
        "snapshot.multi_get": lambda: snap.multi_get([b"k"]),
        "snapshot.iterator": lambda: snap.iterator(),
    }
    for name, call in calls.items():
        with pytest.raises(strata.ClosedError):
            call()
            pytest.fail(f"{name} did not raise")
    db.close()  # twice is fine
    it.close()
    snap.close()


def test_closed_snapshot(db):
    snap = db.snapshot()
    snap.close()
    with pytest.raises(strata.ClosedError):
        snap.get(b"k")
    with pytest.raises(strata.ClosedError):
        snap.iterator()
    snap.close()


# CorruptionError and IoError.


def _made(path, count=3000):
    with strata.Db(path, write_buffer_bytes=64 << 10) as db:
        fill(db, count, size=64)
        db.compact()


def _files(path, suffix):
    return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(suffix))


def _damage(file, at=None, data=b"\xa5" * 64):
    size = os.path.getsize(file)
    with open(file, "r+b") as handle:
        handle.seek(size // 2 if at is None else at)
        handle.write(data)


def test_corrupt_table_block(db_path):
    _made(db_path)
    table = _files(db_path, ".sst")[0]
    _damage(table)
    with strata.Db(db_path) as db:
        with pytest.raises(strata.CorruptionError) as raised:
            list(db.items())
        error = raised.value
        assert os.path.basename(error.file) == os.path.basename(table)
        assert isinstance(error.offset, int) and 0 <= error.offset < os.path.getsize(table)
        assert os.path.basename(table) in str(error)
        # Point reads of keys in the damaged block fail the same way.
        with pytest.raises(strata.CorruptionError):
            db.multi_get([key(i) for i in range(3000)])
    report = strata.check(db_path)
    assert report["sound"] is False
    assert report["errors"] >= 1
    problem = report["problems"][0]
    assert os.path.basename(problem["file"]) == os.path.basename(table)
    assert problem["offset"] == error.offset
    assert problem["severity"] == "error"


def test_iterator_yields_the_entries_before_the_damage_then_raises(db_path):
    _made(db_path)
    table = _files(db_path, ".sst")[0]
    _damage(table)
    got = []
    with strata.Db(db_path) as db:
        it = db.keys()
        with pytest.raises(strata.CorruptionError) as raised:
            for k in it:
                got.append(k)
        assert os.path.basename(raised.value.file) == os.path.basename(table)
        # In order and without a gap: the keys before the damaged block.
        assert got == [key(i) for i in range(len(got))]
        assert 0 < len(got) < 3000


def test_corrupt_manifest(db_path):
    _made(db_path)
    manifest = [f for f in _files(db_path, "") if os.path.basename(f).startswith("MANIFEST")][0]
    _damage(manifest, data=b"\x00\xff" * 16)
    for read_only in (False, True):
        with pytest.raises(strata.CorruptionError) as raised:
            strata.Db(db_path, read_only=read_only)
        assert os.path.basename(raised.value.file) == os.path.basename(manifest)
        assert raised.value.offset >= 0
    report = strata.check(db_path)
    assert not report["sound"]
    assert any(os.path.basename(p["file"]).startswith("MANIFEST") for p in report["problems"])


def test_corrupt_current(db_path):
    _made(db_path, 100)
    with open(os.path.join(db_path, "CURRENT"), "w") as handle:
        handle.write("garbage\n")
    with pytest.raises(strata.CorruptionError) as raised:
        strata.Db(db_path)
    assert os.path.basename(raised.value.file) == "CURRENT"
    assert raised.value.offset == 0
    # Any strata.Error subclass is what a caller catches.
    with pytest.raises(strata.Error):
        strata.Db(db_path, read_only=True)


def test_truncated_table_file(db_path):
    _made(db_path)
    table = _files(db_path, ".sst")[0]
    with open(table, "r+b") as handle:
        handle.truncate(100)
    with pytest.raises(strata.CorruptionError) as raised:
        with strata.Db(db_path) as db:
            list(db.items())
    assert os.path.basename(raised.value.file) == os.path.basename(table)
    assert not strata.check(db_path)["sound"]


def test_missing_options_file_is_an_io_error(tmp_path, db_path):
    missing = str(tmp_path / "no-such-options.toml")
    with pytest.raises(strata.IoError) as raised:
        strata.Db(db_path, options_file=missing)
    assert isinstance(raised.value, OSError)
    assert "no-such-options.toml" in str(raised.value)


def test_malformed_options_file(tmp_path, db_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("write_buffer_bytes = [\n")
    with pytest.raises(strata.InvalidArgumentError):
        strata.Db(db_path, options_file=str(bad))
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("no_such_option = 1\n")
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.Db(db_path, options_file=str(unknown))
    assert "no_such_option" in str(raised.value)


def test_path_that_is_a_file(tmp_path):
    plain = tmp_path / "plain-file"
    plain.write_bytes(b"not a directory")
    with pytest.raises(strata.Error) as raised:
        strata.Db(str(plain))
    assert isinstance(raised.value, (strata.IoError, strata.InvalidArgumentError))


# BackgroundError: a flush that cannot create its files poisons later writes.


def test_background_error_after_the_directory_vanishes(db_path):
    db = strata.Db(db_path, write_buffer_bytes=64 << 10)
    try:
        db.put(b"before", b"1")
        shutil.rmtree(db_path)
        with pytest.raises((strata.IoError, strata.BackgroundError)):
            fill(db, 3000, size=64)
            db.flush()
        with pytest.raises(strata.BackgroundError) as raised:
            db.put(b"after", b"2")
        assert "background" in str(raised.value)
        assert db.stats()["background_error"]
    finally:
        try:
            db.close()
        except strata.Error:
            pass


# InternalError: a Rust panic does not cross into the interpreter.


def test_panic_becomes_internal_error():
    from strata import _strata

    with pytest.raises(strata.InternalError) as raised:
        _strata._panic_for_test()
    assert "panic" in str(raised.value)
    # The interpreter and the module keep working.
    with pytest.raises(strata.InternalError):
        _strata._panic_for_test()


# The research calls' argument errors.


def test_research_bad_arguments():
    with pytest.raises(strata.InvalidArgumentError):
        strata.bench(num=-1)
    with pytest.raises(strata.InvalidArgumentError) as raised:
        strata.bench(no_such_flag=1)
    assert "no-such-flag" in str(raised.value)
    with pytest.raises(strata.InvalidArgumentError):
        strata.bench(workloads=["no-such-workload"], num=10)
    with pytest.raises(strata.InvalidArgumentError):
        strata.tune(workload="lookups=abc", entries=1000, memory_bits_per_key=10)
    with pytest.raises(strata.InvalidArgumentError):
        strata.whatif(sweep="no-such-axis")
    with pytest.raises(TypeError):
        strata.bench(num={"a": 1})
    with pytest.raises(strata.InvalidArgumentError):
        strata._strata._run_json(["repair", "/nonexistent"])


def test_check_of_a_missing_directory(tmp_path):
    with pytest.raises(strata.Error):
        strata.check(str(tmp_path / "missing"))
