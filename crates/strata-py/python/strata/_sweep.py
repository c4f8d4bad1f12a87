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


def run_point(point: Mapping[str, Any], workloads: str, options: Mapping[str, Any]) -> list[dict]:
    """One task: the benchmark at ``point`` and the shared ``options``; its result rows,
    flattened (``latency_us_p99``, ``io_per_op_data``, ...), each with the point's values."""
    import strata

    report = strata.bench(**{**options, **point, "workloads": workloads})
    rows = []
    for result in report["results"]:
        row = {name: value for name, value in point.items()}
        row["workloads"] = workloads
        for key, value in _flatten(result).items():
            # The point's own values win over a result field of the same name.
            row.setdefault(key, value)
        rows.append(row)
    return rows


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

    if isinstance(workload, str):
        workloads = workload
    elif isinstance(workload, Sequence) and workload and all(isinstance(w, str) for w in workload):
        workloads = ",".join(workload)
    else:
        raise ValueError("workload must be a benchmark workload name or a list of them")
    if n_workers < 1:
        raise ValueError("n_workers must be at least 1")
    overlap = sorted(set(grid) & set(options))
    if overlap:
        raise ValueError(f"{', '.join(overlap)} given both in the grid and as a shared option")
    todo = points(grid)
    client, owned_cluster = _client(cluster, n_workers)
    try:
        futures = client.map(
            run_point, todo, workloads=workloads, options=dict(options), pure=False
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
