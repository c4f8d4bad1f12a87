"""Strata: an embeddable LSM-tree key-value store whose filter memory and compactions follow
cost models and live statistics.

The store, as rocksdict and plyvel users know one::

    import strata

    with strata.Db("/tmp/example") as db:
        db[b"key"] = b"value"
        assert db[b"key"] == b"value"
        with db.write_batch() as wb:          # applied atomically when the block ends
            wb.put(b"a", b"1")
            wb.delete(b"key")
        for key, value in db.items(prefix=b"a"):
            print(key, value)

``Db(path, **options)`` takes the options of an options file by the same names and shapes
(``strata bench --options``, ``Options::from_file``)::

    strata.Db(path,
              write_buffer_bytes=4 << 20,
              block_cache_bytes=64 << 20,
              compression="lz4,zstd-bottom",
              compaction={"policy": "tiering", "size_ratio": 4},
              filters={"allocator": "elastic", "bits_per_key": 5})

or ``strata.Db(path, options_file="db.toml")`` (keywords apply over the file). Keys and values
are ``bytes`` (``bytearray`` and ``memoryview`` too); ``str`` is refused with a ``TypeError``
rather than encoded silently, so that no key's bytes depend on an implicit encoding.

The research half answers with the command line's JSON, decoded: :func:`bench`, :func:`tune`,
:func:`whatif`, :func:`simulate` and :func:`inspect` take the command's flags as keyword
arguments (``num=100_000`` is ``--num 100000``; a list is comma-joined; ``True`` is a bare
flag). :func:`sweep` runs a design-space grid of benchmark points as Dask tasks and returns a
pandas DataFrame.

Errors are :class:`Error` and its subclasses (see ``strata._errors``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from ._errors import (
    BackgroundError,
    ClosedError,
    CorruptionError,
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    LockedError,
    ReadOnlyError,
)
from ._strata import (
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    Db,
    Iterator,
    Snapshot,
    WriteBatch,
    __version__,
    _run_json,
    check,
)

__all__ = [
    "Db",
    "WriteBatch",
    "Snapshot",
    "Iterator",
    "check",
    "bench",
    "tune",
    "whatif",
    "simulate",
    "inspect",
    "sweep",
    "Error",
    "CorruptionError",
    "LockedError",
    "InvalidArgumentError",
    "ReadOnlyError",
    "ClosedError",
    "IoError",
    "BackgroundError",
    "InternalError",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "__version__",
]

_Scalar = Union[str, int, float, bool]


def _flag_words(options: Mapping[str, Any]) -> list[str]:
    """The command-line words of keyword arguments: ``name=value`` is ``--name value`` with
    underscores as dashes, ``True`` a bare ``--name``, ``False`` and ``None`` nothing, and a
    list or tuple its items joined by commas."""
    words: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [flag, ",".join(str(item) for item in value)]
        elif isinstance(value, (str, int, float)):
            words += [flag, str(value)]
        else:
            raise TypeError(
                f"option {name!r} must be a string, number, boolean or list of them, "
                f"not {type(value).__name__}"
            )
    return words


def bench(**options: Union[_Scalar, Sequence[_Scalar], None]) -> dict:
    """Runs ``strata bench`` and returns its JSON report as a dict: ``config``, ``results`` (one
    row per engine, configuration, run and phase: ops/s, latencies, I/Os per operation, the tree
    shape), ``medians`` and ``series``.

    The keywords are the command's flags (``strata bench --help``), for example
    ``strata.bench(num=100_000, workloads=["fillrandom", "readrandom"],
    filter_policy=["uniform", "elastic"], bits_per_key=5, runs=3)``. Without ``db=`` every
    configuration runs in a temporary directory of its own, removed afterwards. The peers
    (``engines=["rocksdb", "fjall"]``) are there only when the module was built with the CLI's
    ``peers`` feature; otherwise asking for them raises :class:`InvalidArgumentError`.
    """
    return _run_json(["bench", *_flag_words(options)])


def tune(**options: Union[_Scalar, Sequence[_Scalar], None]) -> dict:
    """Runs ``strata tune`` and returns ``{"recommended": design, "candidates": [design, ...]}``:
    the design Monkey's cost models recommend for a workload, with the runners-up and their
    predicted costs. Keywords are the command's flags, e.g.
    ``strata.tune(workload="lookups=0.9,empty=0.5,updates=0.1", entries=10_000_000)`` or
    ``strata.tune(from_db=path)`` for a closed database's own totals."""
    return _run_json(["tune", *_flag_words(options)])


def whatif(**options: Union[_Scalar, Sequence[_Scalar], None]) -> dict:
    """Runs ``strata whatif`` and returns ``{"sweep": axis, "rows": [...]}``: one parameter
    swept through the cost models, every design costed at every point. Keywords are the
    command's flags, e.g. ``strata.whatif(sweep="memory", points=8)``."""
    return _run_json(["whatif", *_flag_words(options)])


def simulate(**options: Union[_Scalar, Sequence[_Scalar], None]) -> dict:
    """Runs ``strata simulate`` (the real merge policy and filter allocator on a synthetic tree,
    no I/O) and returns ``{"steps": [...], "summary": {...}}``: the tree after every flush and
    compaction, then write amplification, runs, levels and bits per key. Keywords are the
    command's flags, e.g. ``strata.simulate(compaction="tiering", num=100_000)``."""
    lines = _run_json(["simulate", *_flag_words(options)])
    steps = [line for line in lines if "summary" not in line]
    summary = next((line["summary"] for line in lines if "summary" in line), None)
    return {"steps": steps, "summary": summary}


def inspect(path: str, **options: Union[_Scalar, Sequence[_Scalar], None]) -> dict:
    """Runs ``strata inspect --json`` on the database in ``path`` (opened read-only: it works
    beside a process that has it open) and returns the tree, file by file: filters, key ranges
    and access estimates."""
    return _run_json(["inspect", str(path), *_flag_words(options)])


def sweep(
    grid: Mapping[str, Sequence[_Scalar]],
    workload: Union[str, Sequence[str], Sequence[Sequence[str]]],
    cluster: Any = None,
    *,
    n_workers: int = 2,
    **options: Union[_Scalar, Sequence[_Scalar], None],
):
    """Runs a design-space sweep as Dask tasks and returns a pandas DataFrame, one row per
    benchmark phase of every point.

    ``grid`` maps benchmark flags to the values to sweep, for example
    ``{"compaction": ["leveling", "tiering"], "size_ratio": [4, 10],
    "filter_policy": ["uniform", "monkey", "elastic"], "bits_per_key": [2, 5]}``; every
    combination is a point. ``workload`` is the benchmark's ``workloads``: one workload (a name, a
    comma-separated list or a list of phases, e.g. ``["fillrandom", "readrandom"]``), or a list
    of such lists, which makes the workload a dimension of the sweep too
    (``[["fillrandom", "readrandom"], ["fillrandom", "readmissing"]]``). ``options`` are
    benchmark flags every point shares (``num``, ``reads``, ``distribution``, ``seed``, ...).

    Each point is one task: it runs ``strata.bench`` in a temporary store of its own and returns
    its rows. ``cluster`` is where the tasks run: ``None`` starts a ``LocalCluster`` of
    ``n_workers`` processes (one thread each) for the call; a scheduler address
    (``"tcp://host:8786"``), a ``dask.distributed.Client`` or a cluster object uses that one, so
    the same call runs on a laptop and on a cluster. Points that share a machine share its
    device and cores: throughput columns are only comparable between points run one at a time
    (``n_workers=1``); the I/O counts per operation are not disturbed.

    Columns: the grid's keys (the point), ``workloads``, and the benchmark's result fields
    (``engine``, ``phase``, ``ops_per_sec``, I/Os per operation, the tree shape, ...).
    """
    from ._sweep import run_sweep

    return run_sweep(grid, workload, cluster, n_workers=n_workers, options=options)
