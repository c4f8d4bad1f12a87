#!/usr/bin/env python3
"""The Python module ``strata`` against ``rocksdict`` (RocksDB) and ``plyvel`` (LevelDB), call
for call, and the cost the binding adds per call over the Rust API.

    python scripts/bench_python_bindings.py [--keys 1000000] [--runs 3] [--seed 42]
        [--json PATH] [--dir PATH] [--skip-rust] [--rust-bin PATH] [--compact]

Run it with an interpreter that has ``strata`` (a release build: ``maturin develop --release``
or a wheel from ``maturin build --release``), ``rocksdict`` and ``plyvel`` installed.

Data (generated identically by ``crates/strata/examples/api_calls.rs``, whose doc comment
defines it; the script checks a digest of a sample against the Rust program's):
``--keys`` keys of 16 bytes (the even numbers ``2i`` as 16 zero-padded decimal digits), values of
100 bytes (``2i * 0x9E3779B97F4A7C15`` mod 2^64 in 16 hex digits, repeated, cut to 100), orders
from seeded SplitMix64 Fisher-Yates permutations. A miss asks for an odd number, which falls
between two stored keys (so filters, not key ranges, must answer it).

Rows (ops/s per store; medians of ``--runs`` runs, each run on a fresh store of every engine,
loaded with the same data; the engines' order rotates from run to run):

* ``put``: every key once in a random order, one ``put(key, value)`` call each.
* the load settles (not timed): strata ``flush()`` then ``wait_for_compactions()`` (or
  ``compact()`` with ``--compact``); rocksdict ``flush()`` then ``compact_range(None, None)``;
  plyvel ``compact_range()``. The tree shape of each store is printed, and kept in the JSON,
  before the read rows.
* ``get_hit``: every stored key once, random order, ``get(key)``.
* ``get_miss``: as many absent keys, random order, ``get(key)``.
* ``multi_get_100``: the stored keys in a random order, 100 per call: strata ``multi_get(keys)``,
  rocksdict ``get(keys)`` (its multi-get of a list), plyvel (which has no multi-get) a list
  comprehension of ``get``. One op is one call of 100 keys.
* ``iterate``: a full forward scan of (key, value) pairs: strata ``items()``, rocksdict
  ``items()``, plyvel ``iterator()``. One op is one entry.
* ``write_batch_1000``: ``max(1, keys / 10000)`` batches of 1,000 puts of new keys, each batch
  built (``put`` per entry) and written: strata ``WriteBatch()`` + ``db.write(wb)``, rocksdict
  ``WriteBatch(raw_mode=True)`` + ``db.write(wb)``, plyvel ``db.write_batch()`` + ``wb.write()``.
  One op is one batch.

Each row is timed with ``time.perf_counter_ns`` around the whole loop (the loop's own cost is the
same for all three stores: the same ``for`` over pre-built lists, calling a bound method);
Python's garbage collector is off during a timed loop. Reads use fixed-seed random orders.

Configuration, as close as the three engines allow:

* no sync on writes (every engine's default), write-ahead log on (LevelDB always has its log);
* compression off: strata ``compression="none"`` (its default), rocksdict
  ``set_compression_type(DBCompressionType.none())``, plyvel ``compression=None``;
* block cache 8 MiB: strata ``block_cache_bytes=8 MiB``, rocksdict
  ``BlockBasedOptions.set_block_cache(Cache(8 MiB))``, plyvel ``lru_cache_size=8 MiB``;
* write buffer 64 MiB for all three (strata's default; rocksdict ``set_write_buffer_size``,
  plyvel ``write_buffer_size``), two of them for strata and RocksDB (their default);
* 4 KiB data blocks (every engine's default);
* 10 bits per key of filters: strata's default (elastic filters with a 10 bits/key budget),
  rocksdict ``set_bloom_filter(10, False)``, plyvel ``bloom_filter_bits=10`` (both have none by
  default, which would make them read a block on every miss);
* rocksdict in ``raw_mode`` (keys and values are bytes, as for the other two).

The overhead per call of the binding is strata-Python's median ns/op minus the Rust API's median
ns/op for the same row (``cargo run --release -p strata --example api_calls``, run by this
script after the Python runs unless ``--skip-rust``). The target for a row is strata's ops/s at
least 1.0x both rocksdict's and plyvel's. ``--json PATH`` writes every run's figures, the tree
shapes, versions and the machine's load (load average and running ``rustc`` processes, sampled
around each store's run).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
BATCH_PUTS = 1000
MULTI_GET_KEYS = 100
MIB = 1 << 20
WRITE_BUFFER_BYTES = 64 * MIB
BLOCK_CACHE_BYTES = 8 * MIB
BLOCK_BYTES = 4096
BITS_PER_KEY = 10

ROWS = ["put", "get_hit", "get_miss", "multi_get_100", "iterate", "write_batch_1000"]
UNITS = {
    "put": "put",
    "get_hit": "get",
    "get_miss": "get",
    "multi_get_100": "call (100 keys)",
    "iterate": "entry",
    "write_batch_1000": "batch (1000 puts)",
}
STORES = ["strata", "rocksdict", "plyvel"]


# --- the data (as crates/strata/examples/api_calls.rs defines it) ------------------------------


def permutation(n: int, seed: int) -> list[int]:
    """``0..n`` shuffled by Fisher-Yates from the last position down with SplitMix64."""
    order = list(range(n))
    state = seed & MASK
    for i in range(n - 1, 0, -1):
        state = (state + GOLDEN) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def key(number: int) -> bytes:
    return b"%016d" % number


def value(number: int) -> bytes:
    return ((b"%016x" % ((number * GOLDEN) & MASK)) * 7)[:100]


class Workload:
    """The keys and values of every row, in the order the rows use them."""

    def __init__(self, n: int, seed: int):
        stored_keys = [key(2 * i) for i in range(n)]
        stored_values = [value(2 * i) for i in range(n)]
        put_order = permutation(n, seed)
        hit_order = permutation(n, seed + 1)
        miss_order = permutation(n, seed + 2)
        multi_get_order = permutation(n, seed + 3)
        self.put_keys = [stored_keys[i] for i in put_order]
        self.put_values = [stored_values[i] for i in put_order]
        self.hit_keys = [stored_keys[i] for i in hit_order]
        self.miss_keys = [key(2 * i + 1) for i in miss_order]
        multi_get_keys = [stored_keys[i] for i in multi_get_order]
        self.multi_get_chunks = [
            multi_get_keys[at : at + MULTI_GET_KEYS] for at in range(0, n, MULTI_GET_KEYS)
        ]
        batches = max(1, n // 10_000)
        batch_numbers = [2 * i + 1 for i in miss_order[: batches * BATCH_PUTS]]
        self.batches = [
            (
                [key(j) for j in batch_numbers[at : at + BATCH_PUTS]],
                [value(j) for j in batch_numbers[at : at + BATCH_PUTS]],
            )
            for at in range(0, len(batch_numbers), BATCH_PUTS)
        ]
        self.n = n
        self.expected = dict(zip(stored_keys[:1000], stored_values[:1000]))

    def sample_digest(self) -> str:
        """FNV-1a (64 bits) over the first 1,000 entries of every list, as the Rust program
        computes it: the check that both sides run on the same data."""
        h = 0xCBF29CE484222325
        multi_get_keys = [k for chunk in self.multi_get_chunks for k in chunk][:1000]
        batch_keys = [k for keys, _ in self.batches for k in keys][:1000]
        batch_values = [v for _, values in self.batches for v in values][:1000]
        for items in (
            self.put_keys[:1000],
            self.put_values[:1000],
            self.hit_keys[:1000],
            self.miss_keys[:1000],
            multi_get_keys,
            batch_keys,
            batch_values,
        ):
            for item in items:
                for byte in item:
                    h = ((h ^ byte) * 0x100000001B3) & MASK
        return "%016x" % h


# --- the three stores ----------------------------------------------------------------------------


class StrataStore:
    name = "strata"

    def __init__(self, compact: bool):
        import strata

        self.module = strata
        self.compact = compact

    def open(self, path: str):
        return self.module.Db(
            path,
            write_buffer_bytes=WRITE_BUFFER_BYTES,
            max_write_buffers=2,
            block_cache_bytes=BLOCK_CACHE_BYTES,
            block_bytes=BLOCK_BYTES,
            compression="none",
            sync_writes=False,
            disable_wal=False,
        )

    def settle(self, db) -> None:
        if self.compact:
            db.compact()
        else:
            db.flush()
            db.wait_for_compactions()

    def shape(self, db) -> dict:
        levels = [
            {key: level[key] for key in ("level", "runs", "files", "entries", "bytes")}
            for level in db.stats()["levels"]
        ]
        text = "; ".join(
            f"L{level['level']}: {level['runs']} run{'s' if level['runs'] != 1 else ''}, "
            f"{level['files']} file{'s' if level['files'] != 1 else ''}, "
            f"{level['entries']} entries"
            for level in levels
        )
        return {"levels": levels, "text": text or "empty"}

    def multi_get(self, db):
        return db.multi_get

    def items(self, db):
        return db.items()

    def new_batch(self, db):
        batch = self.module.WriteBatch()
        write = db.write
        return batch.put, lambda: write(batch)

    def close(self, db) -> None:
        db.close()


class RocksdictStore:
    name = "rocksdict"

    def __init__(self):
        import rocksdict

        self.module = rocksdict

    def open(self, path: str):
        rd = self.module
        options = rd.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(rd.DBCompressionType.none())
        options.set_write_buffer_size(WRITE_BUFFER_BYTES)
        options.set_max_write_buffer_number(2)
        table = rd.BlockBasedOptions()
        table.set_block_cache(rd.Cache(BLOCK_CACHE_BYTES))
        table.set_block_size(BLOCK_BYTES)
        table.set_bloom_filter(BITS_PER_KEY, False)
        options.set_block_based_table_factory(table)
        db = rd.Rdict(path, options)
        write_options = rd.WriteOptions()
        write_options.sync = False
        write_options.disable_wal = False
        db.set_write_options(write_options)
        return db

    def settle(self, db) -> None:
        db.flush(True)
        db.compact_range(None, None)

    def shape(self, db) -> dict:
        files = [
            int(db.property_value(f"rocksdb.num-files-at-level{level}") or 0) for level in range(7)
        ]
        levels = [{"level": level, "files": count} for level, count in enumerate(files) if count]
        text = "; ".join(f"L{level['level']}: {level['files']} files" for level in levels)
        return {"levels": levels, "text": text or "empty"}

    def multi_get(self, db):
        return db.get

    def items(self, db):
        return db.items()

    def new_batch(self, db):
        batch = self.module.WriteBatch(raw_mode=True)
        write = db.write
        return batch.put, lambda: write(batch)

    def close(self, db) -> None:
        db.close()


class PlyvelStore:
    name = "plyvel"

    def __init__(self):
        import plyvel

        self.module = plyvel

    def open(self, path: str):
        return self.module.DB(
            path,
            create_if_missing=True,
            compression=None,
            write_buffer_size=WRITE_BUFFER_BYTES,
            lru_cache_size=BLOCK_CACHE_BYTES,
            block_size=BLOCK_BYTES,
            bloom_filter_bits=BITS_PER_KEY,
        )

    def settle(self, db) -> None:
        db.compact_range()

    def shape(self, db) -> dict:
        files = [
            int(db.get_property(b"leveldb.num-files-at-level%d" % level) or 0) for level in range(7)
        ]
        levels = [{"level": level, "files": count} for level, count in enumerate(files) if count]
        text = "; ".join(f"L{level['level']}: {level['files']} files" for level in levels)
        return {"levels": levels, "text": text or "empty"}

    def multi_get(self, db):
        get = db.get
        return lambda keys: [get(k) for k in keys]

    def items(self, db):
        return db.iterator()

    def new_batch(self, db):
        batch = db.write_batch()
        return batch.put, batch.write

    def close(self, db) -> None:
        db.close()


# --- timing -------------------------------------------------------------------------------------


class Timer:
    """``perf_counter_ns`` around a loop, with the garbage collector off inside it."""

    def __enter__(self):
        gc.collect()
        gc.disable()
        self.started = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter_ns() - self.started
        gc.enable()
        return False


def load() -> dict:
    return {"loadavg": list(os.getloadavg()), "rustc": running_rustc()}


def running_rustc() -> int:
    try:
        out = subprocess.run(["pgrep", "-c", "rustc"], capture_output=True, text=True, check=False)
        return int(out.stdout.strip() or 0)
    except (OSError, ValueError):
        return -1


def one_run(store, path: str, work: Workload) -> dict:
    """One fresh store: every row once. Returns ns/op per row, elapsed ns, the tree shape."""
    db = store.open(path)
    ns_per_op: dict[str, float] = {}
    elapsed: dict[str, int] = {}
    ops: dict[str, int] = {}

    def record(row: str, timer: Timer, count: int) -> None:
        elapsed[row] = timer.elapsed
        ops[row] = count
        ns_per_op[row] = timer.elapsed / count

    put = db.put
    put_keys, put_values = work.put_keys, work.put_values
    with Timer() as timer:
        for k, v in zip(put_keys, put_values):
            put(k, v)
    record("put", timer, work.n)

    started = time.perf_counter_ns()
    store.settle(db)
    settle_ns = time.perf_counter_ns() - started
    shape = store.shape(db)

    # Correctness, untimed: a sample of hits and misses answer as they should.
    for k, v in work.expected.items():
        if db.get(k) != v:
            raise SystemExit(f"{store.name}: wrong value for {k!r}")
    for k in work.miss_keys[:1000]:
        if db.get(k) is not None:
            raise SystemExit(f"{store.name}: {k!r} should be absent")

    get = db.get
    hit_keys = work.hit_keys
    with Timer() as timer:
        for k in hit_keys:
            get(k)
    record("get_hit", timer, len(hit_keys))

    miss_keys = work.miss_keys
    with Timer() as timer:
        for k in miss_keys:
            get(k)
    record("get_miss", timer, len(miss_keys))

    multi_get = store.multi_get(db)
    chunks = work.multi_get_chunks
    first = multi_get(chunks[0])
    if len(first) != len(chunks[0]) or any(v is None for v in first):
        raise SystemExit(f"{store.name}: multi_get returned {len(first)} values or a None")
    with Timer() as timer:
        for chunk in chunks:
            multi_get(chunk)
    record("multi_get_100", timer, len(chunks))

    entries = 0
    with Timer() as timer:
        for _ in store.items(db):
            entries += 1
    record("iterate", timer, max(entries, 1))
    if entries != work.n:
        raise SystemExit(f"{store.name}: the scan saw {entries} entries, {work.n} were written")

    new_batch = store.new_batch
    batches = work.batches
    with Timer() as timer:
        for keys, values in batches:
            batch_put, commit = new_batch(db)
            for k, v in zip(keys, values):
                batch_put(k, v)
            commit()
    record("write_batch_1000", timer, len(batches))
    if db.get(batches[-1][0][-1]) != batches[-1][1][-1]:
        raise SystemExit(f"{store.name}: the last batch's last put is not readable")

    store.close(db)
    return {
        "ns_per_op": ns_per_op,
        "elapsed_ns": elapsed,
        "ops": ops,
        "settle_ns": settle_ns,
        "tree": shape,
    }


def run_rust(args) -> dict:
    flags = ["--keys", str(args.keys), "--runs", str(args.runs), "--seed", str(args.seed)]
    if args.compact:
        flags.append("--compact")
    if args.dir:
        flags += ["--dir", args.dir]
    if args.rust_bin:
        command = [args.rust_bin, *flags]
    else:
        command = [
            "cargo",
            "run",
            "--release",
            "-p",
            "strata",
            "--example",
            "api_calls",
            "--",
            *flags,
        ]
    print(f"running {' '.join(command)}", file=sys.stderr, flush=True)
    out = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)


def versions() -> dict:
    from importlib import metadata

    found: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("strata", "rocksdict", "plyvel"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    try:
        import plyvel

        found["leveldb"] = plyvel.__leveldb_version__
    except (ImportError, AttributeError):
        pass
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", metavar="PATH", help="write every run's figures here")
    parser.add_argument("--dir", help="where the stores are created (default: a temporary dir)")
    parser.add_argument("--skip-rust", action="store_true", help="no Rust API comparison")
    parser.add_argument("--rust-bin", help="a built api_calls example, instead of cargo run")
    parser.add_argument(
        "--compact",
        action="store_true",
        help="settle strata with a full compaction (compact()) instead of flush + wait",
    )
    parser.add_argument(
        "--stores", default=",".join(STORES), help="comma-separated subset of " + ",".join(STORES)
    )
    args = parser.parse_args()
    if args.keys < BATCH_PUTS:
        parser.error(f"--keys must be at least {BATCH_PUTS}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    names = [name.strip() for name in args.stores.split(",") if name.strip()]
    if any(name not in STORES for name in names) or "strata" not in names:
        parser.error(f"--stores: a subset of {','.join(STORES)} that includes strata")

    makers = {
        "strata": lambda: StrataStore(args.compact),
        "rocksdict": RocksdictStore,
        "plyvel": PlyvelStore,
    }
    stores = {name: makers[name]() for name in names}

    print(f"generating {args.keys} keys (seed {args.seed})...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    work = Workload(args.keys, args.seed)
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    base = args.dir or tempfile.mkdtemp(prefix="strata-pybench-")
    os.makedirs(base, exist_ok=True)
    report: dict = {
        "config": {
            "keys": args.keys,
            "runs": args.runs,
            "seed": args.seed,
            "key_bytes": 16,
            "value_bytes": 100,
            "write_buffer_bytes": WRITE_BUFFER_BYTES,
            "block_cache_bytes": BLOCK_CACHE_BYTES,
            "block_bytes": BLOCK_BYTES,
            "bits_per_key": BITS_PER_KEY,
            "compression": "none",
            "sync": False,
            "wal": True,
            "strata_settle": "compact" if args.compact else "flush+wait_for_compactions",
            "multi_get_keys": MULTI_GET_KEYS,
            "batch_puts": BATCH_PUTS,
            "batches": len(work.batches),
        },
        "units": {row: f"ns per {unit}" for row, unit in UNITS.items()},
        "versions": versions(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load": [{"when": "start", **load()}],
        "runs": {name: [] for name in names},
    }
    try:
        for run in range(args.runs):
            order = names[run % len(names) :] + names[: run % len(names)]
            for name in order:
                path = os.path.join(base, f"{name}-run{run}")
                shutil.rmtree(path, ignore_errors=True)
                before = load()
                print(f"run {run + 1}/{args.runs}: {name}...", file=sys.stderr, flush=True)
                result = one_run(stores[name], path, work)
                result["run"] = run
                result["load_before"] = before
                result["load_after"] = load()
                report["runs"][name].append(result)
                shutil.rmtree(path, ignore_errors=True)
                print(
                    "  "
                    + ", ".join(f"{row} {result['ns_per_op'][row]:.0f} ns" for row in ROWS)
                    + f"; tree after settling: {result['tree']['text']}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    report["load"].append({"when": "after the Python runs", **load()})

    rust = None
    if not args.skip_rust:
        rust = run_rust(args)
        report["rust"] = rust
        report["load"].append({"when": "after the Rust runs", **load()})
        digest = work.sample_digest()
        report["data_digest"] = {"python": digest, "rust": rust.get("sample_digest")}
        if rust.get("sample_digest") != digest:
            print(
                f"WARNING: the Rust program's data digest {rust.get('sample_digest')} differs "
                f"from this script's {digest}: the two sides do not run on the same data",
                file=sys.stderr,
            )

    medians = {
        name: {
            row: statistics.median(result["ns_per_op"][row] for result in report["runs"][name])
            for row in ROWS
        }
        for name in names
    }
    report["median_ns_per_op"] = medians
    report["median_ops_per_sec"] = {
        name: {row: 1e9 / ns for row, ns in rows.items()} for name, rows in medians.items()
    }
    if rust:
        report["overhead_ns_per_call"] = {
            row: medians["strata"][row] - rust["median_ns_per_op"][row] for row in ROWS
        }
    print_report(report, names, medians, rust)

    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
        print(f"\nwrote {args.json}")
    return 0


def print_report(report: dict, names: list[str], medians: dict, rust: dict | None) -> None:
    config = report["config"]
    print(
        f"\n{config['keys']:,} keys of 16 bytes, 100-byte values, seed {config['seed']}, "
        f"medians of {config['runs']} runs (fresh stores); no sync, WAL on, no compression, "
        f"{config['block_cache_bytes'] >> 20} MiB block cache, "
        f"{config['write_buffer_bytes'] >> 20} MiB write buffer, {config['bits_per_key']} bits/key "
        f"filters"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()))
    if "data_digest" in report:
        digest = report["data_digest"]
        same = "the same data" if digest["python"] == digest["rust"] else "DIFFERENT data"
        print(f"data sample digest: Python {digest['python']}, Rust {digest['rust']} ({same})")
    print("\ntree shape after loading and settling (the read rows run on these):")
    for name in names:
        for result in report["runs"][name]:
            print(f"  {name:<9} run {result['run'] + 1}: {result['tree']['text']}")
    if rust:
        for index, result in enumerate(rust["runs"]):
            text = "; ".join(
                f"L{level['level']}: {level['runs']} runs, {level['files']} files, "
                f"{level['entries']} entries"
                for level in result["levels"]
            )
            print(f"  strata (Rust API) run {index + 1}: {text}")

    others = [name for name in names if name != "strata"]
    header = f"\n{'row':<17} {'op':<18}" + "".join(f" {name + ' ops/s':>16}" for name in names)
    header += "".join(f" {'strata/' + name:>17}" for name in others)
    header += f" {'target':>7}"
    if rust:
        header += f" {'Rust ns/op':>11} {'Python ns/op':>13} {'overhead ns/call':>17}"
    print(header)
    ops = report["median_ops_per_sec"]
    for row in ROWS:
        line = f"{row:<17} {UNITS[row]:<18}"
        line += "".join(f" {ops[name][row]:>16,.0f}" for name in names)
        ratios = [ops["strata"][row] / ops[name][row] for name in others]
        line += "".join(f" {ratio:>16.2f}x" for ratio in ratios)
        line += f" {'met' if all(r >= 1.0 for r in ratios) else 'MISSED':>7}"
        if rust:
            rust_ns = rust["median_ns_per_op"][row]
            python_ns = medians["strata"][row]
            line += f" {rust_ns:>11,.0f} {python_ns:>13,.0f} {python_ns - rust_ns:>17,.0f}"
        print(line)
    print("\nmachine load (1-min load average, running rustc processes):")
    for sample in report["load"]:
        print(f"  {sample['when']}: {sample['loadavg'][0]:.2f}, rustc {sample['rustc']}")
    busy = [
        (name, result["run"] + 1, result["load_before"]["rustc"], result["load_after"]["rustc"])
        for name in names
        for result in report["runs"][name]
        if result["load_before"]["rustc"] or result["load_after"]["rustc"]
    ]
    if busy:
        print(
            "  rustc was running around: "
            + ", ".join(f"{name} run {run} ({b}/{a})" for name, run, b, a in busy)
        )


if __name__ == "__main__":
    sys.exit(main())
