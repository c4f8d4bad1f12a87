"""redis-py's RedisCluster against three `strata serve --cluster-enabled` nodes: the test starts
them on free loopback ports with temporary databases, pushes one topology to each with CLUSTERX
SETNODEID and SETNODES, and stops them. The binary is $STRATA_BIN, or target/debug/strata under
the repository root (build it with `cargo build -p strata-cli`)."""

import os
import pathlib
import signal
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

ROOT = pathlib.Path(__file__).resolve().parents[4]
STRATA = os.environ.get("STRATA_BIN", str(ROOT / "target" / "debug" / "strata"))
RANGES = ["0-5460", "5461-10922", "10923-16383"]


def node_id(i):
    return f"strata{i}".rjust(40, "0")


@pytest.fixture
def cluster(tmp_path):
    """Starts three cluster-mode nodes and gives them the topology; yields their ports."""
    started = []
    try:
        ports = []
        for i in range(3):
            process = subprocess.Popen(
                [STRATA, "serve", str(tmp_path / f"db{i}"), "--listen", "127.0.0.1:0",
                 "--cluster-enabled"],
                stdout=subprocess.PIPE,
                text=True,
            )
            started.append(process)
            line = process.stdout.readline()
            assert line.startswith("listening on "), line
            ports.append(int(line.strip().rsplit(":", 1)[1]))
        nodes = "\n".join(
            f"{node_id(i)} 127.0.0.1 {port} master - {RANGES[i]}" for i, port in enumerate(ports)
        )
        for i, port in enumerate(ports):
            r = redis.Redis(port=port, socket_timeout=20)
            with pytest.raises(redis.exceptions.ClusterDownError, match="Hash slot not served"):
                r.get("foo")
            assert r.execute_command("CLUSTERX", "SETNODEID", node_id(i)) == b"OK"
            assert r.execute_command("CLUSTERX", "SETNODES", nodes, 1) == b"OK"
            r.close()
        yield ports
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def test_cluster_client_sets_and_gets(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster[0], socket_timeout=20)
    assert rc.cluster_keyslot("foo") == 12182
    assert len(rc.get_primaries()) == 3
    keys = [f"user:{i:04}" for i in range(300)]
    for i, key in enumerate(keys):
        assert rc.set(key, f"v{i}")
    for i, key in enumerate(keys):
        assert rc.get(key) == f"v{i}".encode()
    assert rc.mget_nonatomic(keys + ["missing"]) == [f"v{i}".encode() for i in range(300)] + [None]
    # Keys sharing a hash tag share a slot, so multi-key commands work on them.
    assert rc.mset({"{user1000}.following": "a", "{user1000}.followers": "b"})
    assert rc.mget("{user1000}.following", "{user1000}.followers") == [b"a", b"b"]
    # Each key is on the node serving its slot, and only there.
    direct = [redis.Redis(port=port, socket_timeout=20) for port in cluster]
    for i, key in enumerate(keys[:60]):
        slot = rc.cluster_keyslot(key)
        home = 0 if slot <= 5460 else 1 if slot <= 10922 else 2
        for n, r in enumerate(direct):
            if n == home:
                assert r.get(key) == f"v{i}".encode()
            else:
                with pytest.raises(redis.exceptions.MovedError) as moved:
                    r.get(key)
                assert (moved.value.slot_id, moved.value.port) == (slot, cluster[home])
    for r in direct:
        r.close()
    rc.close()
