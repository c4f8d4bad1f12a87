"""redis-py against `strata serve`: each test starts the binary on a free loopback port and a
temporary database, and stops it. The binary is $STRATA_BIN, or target/debug/strata under the
repository root (build it with `cargo build -p strata-cli`)."""

import os
import pathlib
import signal
import subprocess

import pytest
import redis

ROOT = pathlib.Path(__file__).resolve().parents[4]
STRATA = os.environ.get("STRATA_BIN", str(ROOT / "target" / "debug" / "strata"))


@pytest.fixture
def server(tmp_path):
    """Starts a server; yields a function that starts more with extra flags; stops them all."""
    started = []

    def start(*flags):
        process = subprocess.Popen(
            [STRATA, "serve", str(tmp_path / f"db{len(started)}"), "--listen", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        return int(line.strip().rsplit(":", 1)[1])

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                assert process.wait(timeout=30) == 0
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_strings_counters_and_scan(server):
    r = redis.Redis(port=server(), socket_timeout=20)
    assert r.ping()
    assert r.set("a", "1")
    assert r.get("a") == b"1"
    assert r.get("missing") is None
    assert r.set("a", "2", nx=True) is None
    assert r.mset({"k1": "v1", "k2": "v2"})
    assert r.mget(["k1", "missing", "k2"]) == [b"v1", None, b"v2"]
    assert r.incr("n") == 1
    assert r.incr("n", 41) == 42
    assert r.decr("n") == 41
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr("k1")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.expire("a", 10)
    keys = [f"user:{i:03}" for i in range(50)]
    r.mset({k: "x" for k in keys})
    assert sorted(k.decode() for k in r.scan_iter(match="user:*", count=7)) == keys
    long_keys = [f"a-rather-long-key-{i:03}" for i in range(25)]
    r.mset({k: "y" for k in long_keys})
    assert sorted(k.decode() for k in r.scan_iter(match="a-rather-*", count=4)) == long_keys
    assert r.dbsize() >= 78
    assert "strata_version" in r.info("server")
    assert r.delete("a", "k1", "nope") == 2


def test_pipeline(server):
    r = redis.Redis(port=server(), socket_timeout=20)
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"p{i}", i)
        pipe.incr("counter")
    for i in range(200):
        pipe.get(f"p{i}")
    replies = pipe.execute()
    assert replies[:400:2] == [True] * 200
    assert replies[1:400:2] == list(range(1, 201))
    assert replies[400:] == [str(i).encode() for i in range(200)]


def test_resp3_hello(server):
    r = redis.Redis(port=server(), protocol=3, socket_timeout=20)
    assert r.set("k", "v")
    assert r.get("k") == b"v"
    assert r.mget("k", "missing") == [b"v", None]
    hello = r.execute_command("HELLO", "3")
    assert hello[b"proto"] == 3
    assert r.config_get("databases") == {b"databases": b"1"} or r.config_get("databases") == {
        "databases": "1"
    }


def test_auth_with_requirepass(server):
    port = server("--requirepass", "s3cret")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, socket_timeout=20).get("k")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, password="wrong", socket_timeout=20).ping()
    r = redis.Redis(port=port, password="s3cret", socket_timeout=20)
    assert r.set("k", "v")
    assert r.get("k") == b"v"
    r3 = redis.Redis(port=port, password="s3cret", protocol=3, socket_timeout=20)
    assert r3.get("k") == b"v"


def test_strata_autotune(server):
    r = redis.Redis(port=server(), socket_timeout=60)
    r.mset({f"k{i:04}": "v" for i in range(500)})
    for i in range(1000):
        r.get(f"k{i:04}")
    decision = r.execute_command("STRATA.AUTOTUNE")
    assert decision.startswith(b"decision 1: "), decision
    history = r.execute_command("STRATA.AUTOTUNE", "HISTORY")
    assert history == [decision]
    with pytest.raises(redis.ResponseError, match="unknown subcommand"):
        r.execute_command("STRATA.AUTOTUNE", "BOGUS")
