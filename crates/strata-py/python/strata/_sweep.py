"""``strata.sweep``: a design-space grid of benchmark points run as Dask tasks.

Each point is a task that runs ``strata.bench`` in a temporary store of its own (the benchmark
creates and removes it) and returns plain rows, so a task needs nothing from the caller's
process but the ``strata`` module on the worker: the same call runs on a ``LocalCluster`` and on
a cluster whose workers have the wheel installed.
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict]:
    """Every combination of the grid's values, in the grid's key order."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError("grid must be a non-empty mapping of benchmark flags to lists of values")
    names = list(grid)
    axes = []
    for name in names:
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"grid[{name!r}] must be a non-empty list of values")
        axes.append(list(values))
    return [dict(zip(names, combination)) for combination in itertools.product(*axes)]


def _flatten(row: Mapping[str, Any], prefix: str = "") -> dict:
    flat: dict = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}_"))
        else:
            flat[name] = value
    return flat


def run_point(point: Mapping[str, Any], options: Mapping[str, Any]) -> list[dict]:
    """One task: the benchmark at ``point`` (its grid values and its ``workloads``) and the
    shared ``options``; its result rows, flattened (``latency_us_p99``, ``io_per_op_data``,
    ...), each with the point's values."""
    import strata

    report = strata.bench(**{**options, **point})
    rows = []
    for result in report["results"]:
        row = {name: value for name, value in point.items()}
        for key, value in _flatten(result).items():
            # The point's own values win over a result field of the same name.
            row.setdefault(key, value)
        rows.append(row)
    return rows


def workload_list(workload: Any) -> list[str]:
    """The workloads a sweep runs, each as the benchmark's comma-separated phase list: a string
    is one workload (``"fillrandom,readrandom"``), a list of strings one workload of those
    phases, and a list of lists (or of tuples) several workloads, a dimension of the sweep."""

    def one(phases: Any) -> str:
        if isinstance(phases, str) and phases:
            return phases
        if (
            isinstance(phases, Sequence)
            and phases
            and all(isinstance(phase, str) and phase for phase in phases)
        ):
            return ",".join(phases)
        raise ValueError(
            "workload must be a benchmark workload (a name, a comma-separated list or a list of "
            "names) or a list of such workloads"
        )

    if isinstance(workload, Sequence) and not isinstance(workload, str) and workload:
        if all(isinstance(item, (list, tuple)) for item in workload):
            return [one(item) for item in workload]
    return [one(workload)]


def _client(cluster: Any, n_workers: int):
    """A Dask client for ``cluster`` and whether this call owns (and must close) it."""
    from dask.distributed import Client, LocalCluster

    if cluster is None:
        local = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        return Client(local), local
    if isinstance(cluster, Client):
        return cluster, None
    return Client(cluster), None


def run_sweep(
    grid: Mapping[str, Sequence[Any]],
    workload: Any,
    cluster: Any,
    *,
    n_workers: int,
    options: Mapping[str, Any],
):
    import pandas

    workloads = workload_list(workload)
    if n_workers < 1:
        raise ValueError("n_workers must be at least 1")
    if "workloads" in grid or "workloads" in options:
        raise ValueError("give the workloads as sweep's workload argument, not as a flag")
    overlap = sorted(set(grid) & set(options))
    if overlap:
        raise ValueError(f"{', '.join(overlap)} given both in the grid and as a shared option")
    todo = [
        {**point, "workloads": workloads_of_point}
        for workloads_of_point in workloads
        for point in points(grid)
    ]
    client, owned_cluster = _client(cluster, n_workers)
    try:
        futures = client.map(
            run_point, todo, options=dict(options), pure=False
        )
        results = client.gather(futures)
    finally:
        if owned_cluster is not None:
            client.close()
            owned_cluster.close()
        elif cluster is not None and not _is_client(cluster):
            client.close()
    rows = [row for point_rows in results for row in point_rows]
    return pandas.DataFrame(rows)


def _is_client(cluster: Any) -> bool:
    from dask.distributed import Client

    return isinstance(cluster, Client)
