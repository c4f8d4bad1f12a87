"""The research calls (bench, tune, whatif, simulate, inspect, check) and ``Db.stats()``: plain
dicts and lists, shaped as the command line's JSON."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import strata
from conftest import fill

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CLI = os.path.join(REPO, "target", "debug", "strata")


def plain(value) -> bool:
    """True if ``value`` is made of JSON's types only (what json.loads returns)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def test_tune():
    report = strata.tune(
        workload="lookups=0.9,empty=0.5,updates=0.1",
        entries=100_000,
        entry_size=128,
        memory_bits_per_key=10,
    )
    assert plain(report)
    assert set(report) == {"recommended", "candidates"}
    recommended = report["recommended"]
    for field in ("policy", "size_ratio", "buffer_bytes", "filter_bits_per_key", "predicted"):
        assert field in recommended
    assert isinstance(report["candidates"], list) and report["candidates"]
    assert all("predicted" in candidate for candidate in report["candidates"])
    assert recommended["predicted"]["io_per_operation"] >= 0


def test_whatif():
    report = strata.whatif(sweep="entries", points=3)
    assert plain(report)
    assert report["sweep"] == "entries"
    rows = report["rows"]
    assert rows and all({"x", "series", "policy"} <= set(row) for row in rows)
    # Three points of the axis, every design costed at each.
    assert len({row["x"] for row in rows}) == 3
    per_point = {}
    for row in rows:
        per_point.setdefault(row["x"], set()).add(row["series"])
    assert len({frozenset(series) for series in per_point.values()}) == 1


def test_simulate():
    report = strata.simulate(num=5000)
    assert plain(report)
    assert set(report) == {"steps", "summary"}
    assert report["steps"], "at least one flush"
    assert all("kind" in step and "levels" in step for step in report["steps"])
    summary = report["summary"]
    for field in ("write_amplification", "flushes", "levels", "sorted_runs", "bits_per_key"):
        assert field in summary
    assert summary["flushes"] >= 1


def test_simulate_many_flushes_and_policy():
    report = strata.simulate(num=20_000, compaction="tiering", write_buffer_bytes=64 << 10)
    summary = report["summary"]
    assert summary["flushes"] == sum(1 for s in report["steps"] if s["kind"] == "flush")
    assert summary["flushes"] > 1
    assert "tiering" in summary["compaction"]


def test_bench():
    report = strata.bench(num=2000, reads=200, workloads=["fillrandom", "readrandom"])
    assert plain(report)
    assert {"config", "results", "medians"} <= set(report)
    assert report["config"]["num"] == 2000
    assert report["config"]["reads"] == 200
    assert report["config"]["workloads"] == ["fillrandom", "readrandom"]
    phases = [row["phase"] for row in report["results"]]
    assert phases == ["fillrandom", "readrandom"]
    by_phase = {row["phase"]: row for row in report["results"]}
    assert by_phase["fillrandom"]["ops"] == 2000
    assert by_phase["readrandom"]["ops"] == 200
    assert all(row["ops_per_sec"] > 0 for row in report["results"])
    assert {m["phase"] for m in report["medians"]} == {"fillrandom", "readrandom"}


def test_bench_on_a_given_db(tmp_path):
    path = str(tmp_path / "bench-db")
    report = strata.bench(num=1000, reads=100, workloads="fillrandom,readrandom", db=path)
    assert len(report["results"]) == 2
    # The benchmark's store stays where it was asked to be.
    assert os.path.isdir(path)
    assert strata.check(path)["sound"]


def _made(path, count=3000):
    with strata.Db(path, write_buffer_bytes=64 << 10) as db:
        fill(db, count, size=64)
        db.flush()
        db.wait_for_compactions()
        stats = db.stats()
    return stats


def test_stats_keys_match_the_cli(db_path):
    stats = _made(db_path)
    assert plain(stats)
    # The command line's own code (`strata stats --json`), run in this process.
    cli = strata._strata._run_json(["stats", db_path])
    assert set(cli) == set(stats)
    assert set(cli["io"]) == set(stats["io"])
    assert [set(level) for level in cli["levels"]] == [set(level) for level in stats["levels"]]
    assert cli["last_sequence"] == stats["last_sequence"]
    for field in ("levels", "io", "write_amplification", "filter_allocator", "total_memory_bytes"):
        assert field in stats


@pytest.mark.skipif(not os.path.exists(CLI), reason="target/debug/strata is not built")
def test_stats_keys_match_the_cli_binary(db_path):
    stats = _made(db_path, 500)
    done = subprocess.run(
        [CLI, "stats", "--json", db_path], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert set(cli) == set(stats)
    assert set(cli["io"]) == set(stats["io"])


def test_check_of_a_healthy_db(db_path):
    _made(db_path)
    report = strata.check(db_path)
    assert plain(report)
    assert report["sound"] is True
    assert report["errors"] == 0
    assert report["problems"] == []
    assert report["tables"] >= 1 and report["entries"] >= 3000
    assert {"warnings", "manifest_records", "blocks", "wal_files", "wal_records"} <= set(report)
    # The same report as the command line's.
    assert strata._strata._run_json(["check", db_path]) == report


def test_check_of_an_open_db(small_db):
    fill(small_db, 2000, size=64)
    small_db.flush()
    report = small_db.check()
    assert report["errors"] == 0
    assert all(p["severity"] != "error" for p in report["problems"])


def test_check_of_a_damaged_db(db_path):
    _made(db_path)
    table = sorted(f for f in os.listdir(db_path) if f.endswith(".sst"))[-1]
    table_path = os.path.join(db_path, table)
    with open(table_path, "r+b") as handle:
        handle.seek(os.path.getsize(table_path) // 3)
        handle.write(b"\x5a" * 32)
    report = strata.check(db_path)
    assert report["sound"] is False
    assert report["errors"] >= 1
    damaged = [p for p in report["problems"] if p["severity"] == "error"]
    assert damaged
    assert all({"file", "offset", "severity", "message"} <= set(p) for p in report["problems"])
    assert os.path.basename(damaged[0]["file"]) == table
    assert isinstance(damaged[0]["offset"], int)
    assert 0 <= damaged[0]["offset"] < os.path.getsize(table_path)


def test_inspect(db_path):
    _made(db_path)
    tree = strata.inspect(db_path)
    assert plain(tree)
    assert tree["entries"] == 3000
    assert tree["levels"]
    files = [f for level in tree["levels"] for run in level["runs"] for f in run["files"]]
    assert files and all("smallest_key" in f and "largest_key" in f for f in files)
    assert sum(f["entries"] for f in files) == 3000


def test_flag_words():
    from strata import _flag_words

    assert _flag_words(
        {"num": 10, "workloads": ["a", "b"], "verbose": True, "quiet": False, "x": None}
    ) == ["--num", "10", "--workloads", "a,b", "--verbose"]
    assert _flag_words({"bits_per_key": 2.5}) == ["--bits-per-key", "2.5"]
