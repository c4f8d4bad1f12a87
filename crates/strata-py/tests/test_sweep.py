"""``strata.sweep``: a design-space grid run as Dask tasks, returned as a pandas DataFrame."""

from __future__ import annotations

import pytest

import strata

distributed = pytest.importorskip("dask.distributed")
pandas = pytest.importorskip("pandas")

GRID = {"compaction": ["leveling", "tiering"], "bits_per_key": [2, 5]}
PHASES = ["fillrandom", "readrandom"]


def check_frame(frame):
    assert isinstance(frame, pandas.DataFrame)
    # 4 points x 2 phases.
    assert len(frame) == 8
    for column in ("compaction", "bits_per_key", "phase", "ops_per_sec", "workloads"):
        assert column in frame.columns
    points = set(zip(frame["compaction"], frame["bits_per_key"]))
    assert points == {("leveling", 2), ("leveling", 5), ("tiering", 2), ("tiering", 5)}
    for _, rows in frame.groupby(["compaction", "bits_per_key"]):
        assert sorted(rows["phase"]) == PHASES
    assert (frame["ops_per_sec"] > 0).all()
    assert set(frame["workloads"]) == {"fillrandom,readrandom"}
    # The benchmark ran each point's own configuration.
    assert set(frame["engine"]) == {"strata"}
    fills = frame[frame["phase"] == "fillrandom"]
    assert set(fills["ops"]) == {2000}
    assert set(frame[frame["phase"] == "readrandom"]["ops"]) == {200}


def test_sweep_on_its_own_local_cluster():
    frame = strata.sweep(GRID, PHASES, num=2000, reads=200)
    check_frame(frame)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        yield local


def test_sweep_with_an_explicit_client(cluster):
    with distributed.Client(cluster) as client:
        frame = strata.sweep(GRID, PHASES, client, num=2000, reads=200)
        check_frame(frame)
        # The caller's client is still open and usable.
        assert client.status == "running"
        assert client.submit(sum, [1, 2, 3]).result(timeout=60) == 6
        assert len(client.scheduler_info()["workers"]) == 2


def test_sweep_with_a_cluster_object_and_an_address(cluster):
    check_frame(strata.sweep(GRID, "fillrandom,readrandom", cluster, num=2000, reads=200))
    frame = strata.sweep(
        {"compaction": ["tiering"]}, ["fillrandom"], cluster.scheduler_address, num=500
    )
    assert list(frame["compaction"]) == ["tiering"]
    assert list(frame["phase"]) == ["fillrandom"]
    # Neither call closed the cluster.
    with distributed.Client(cluster) as client:
        assert client.submit(len, "abc").result(timeout=60) == 3


def test_workloads_as_a_dimension_of_the_sweep(cluster):
    frame = strata.sweep(
        {"bits_per_key": [2, 5]},
        [["fillrandom", "readrandom"], ("fillrandom", "readmissing")],
        cluster,
        num=1000,
        reads=100,
    )
    # 2 budgets x 2 workloads, two phases each.
    assert len(frame) == 8
    assert set(frame["workloads"]) == {"fillrandom,readrandom", "fillrandom,readmissing"}
    missing = frame[frame["workloads"] == "fillrandom,readmissing"]
    assert set(missing["phase"]) == {"fillrandom", "readmissing"}
    assert sorted(set(missing["bits_per_key"])) == [2, 5]


def test_sweep_argument_errors():
    with pytest.raises(ValueError):
        strata.sweep({}, PHASES)
    with pytest.raises(ValueError):
        strata.sweep({"compaction": []}, PHASES)
    with pytest.raises(ValueError):
        strata.sweep({"compaction": "leveling"}, PHASES)
    with pytest.raises(ValueError):
        strata.sweep(GRID, [])
    with pytest.raises(ValueError):
        strata.sweep(GRID, PHASES, n_workers=0)
    with pytest.raises(ValueError, match="bits_per_key"):
        strata.sweep(GRID, PHASES, bits_per_key=3)
    with pytest.raises(ValueError, match="workload"):
        strata.sweep({"workloads": ["fillrandom"]}, PHASES)
    with pytest.raises(ValueError):
        strata.sweep(GRID, [["fillrandom"], []])


def test_points_of_a_grid():
    from strata._sweep import points

    assert points({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert len(points({"a": [1, 2, 3], "b": [1, 2], "c": [0]})) == 6
