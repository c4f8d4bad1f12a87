"""A design-space sweep: merge policies x filter budgets on a skewed workload, run as Dask tasks
and drawn as a figure for a paper.

    python crates/strata-py/examples/design_space.py --out design_space.png

Every point is one ``strata bench`` run in a temporary store of its own (``strata.sweep``): a
fill, then point lookups that find their key and lookups of keys that are absent, both drawn
from a Zipfian distribution (theta 0.99), with a block cache far smaller than the data so that
reads reach the device. The figure has one panel per lookup phase: device data-block reads per
lookup against the filter budget in bits per key, one line per merge policy, and a panel of
lookup throughput. ``--tiny`` runs a grid small enough for the test suite.
"""

from __future__ import annotations

import argparse
import sys

import strata

POLICIES = ["leveling", "tiering", "lazy-leveling", "garnering"]
BUDGETS = [1, 2, 4, 6, 10]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="design_space.png", help="PNG file to write")
    parser.add_argument("--num", type=int, default=200_000, help="keys loaded per point")
    parser.add_argument("--reads", type=int, default=200_000, help="lookups per read phase")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Dask worker processes (points on one machine share its cores and device: with "
        "more than one, the throughput panel compares points that ran side by side)",
    )
    parser.add_argument("--scheduler", default=None, help="a Dask scheduler address to use")
    parser.add_argument("--csv", default=None, help="also write the rows as CSV here")
    parser.add_argument("--tiny", action="store_true", help="a 2 x 2 grid of 2,000 keys")
    args = parser.parse_args(argv)

    policies, budgets, num, reads = POLICIES, BUDGETS, args.num, args.reads
    if args.tiny:
        policies, budgets, num, reads = ["leveling", "tiering"], [2, 6], 2_000, 500
    grid = {"compaction": policies, "bits_per_key": budgets}
    frame = strata.sweep(
        grid,
        ["fillrandom", "readrandom", "readmissing"],
        cluster=args.scheduler,
        n_workers=args.workers,
        num=num,
        reads=reads,
        distribution="zipfian:0.99",
        size_ratio=4,
        write_buffer_bytes="256KiB",
        cache_bytes="256KiB",
        seed=42,
    )
    if args.csv:
        frame.to_csv(args.csv, index=False)
    plot(frame, policies, num, args.out)
    print(f"{len(frame)} rows from {len(policies) * len(budgets)} points; figure: {args.out}")
    return 0


def plot(frame, policies: list[str], num: int, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("readmissing", "io_per_op_data", "Data blocks read per absent-key lookup"),
        ("readrandom", "io_per_op_data", "Data blocks read per lookup of a present key"),
        ("readmissing", "ops_per_sec", "Absent-key lookups per second (thousands)"),
    ]
    figure, axes = plt.subplots(1, len(panels), figsize=(13, 4), constrained_layout=True)
    markers = ["o", "s", "^", "D", "v", "P"]
    for axis, (phase, column, title) in zip(axes, panels):
        rows = frame[frame["phase"] == phase]
        for index, policy in enumerate(policies):
            line = rows[rows["compaction"] == policy].sort_values("bits_per_key")
            values = line[column] / (1000.0 if column == "ops_per_sec" else 1.0)
            axis.plot(
                line["bits_per_key"],
                values,
                marker=markers[index % len(markers)],
                label=policy,
            )
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("Filter budget (bits per key)")
        axis.set_ylabel("thousand lookups/s" if column == "ops_per_sec" else "blocks per lookup")
        axis.grid(True, alpha=0.3)
    axes[0].legend(title="Merge policy", fontsize=8)
    figure.suptitle(
        f"Strata design space: {num:,} keys, Zipfian (0.99) lookups, size ratio 4, "
        "256 KiB block cache, elastic filters",
        fontsize=11,
    )
    figure.savefig(out, dpi=150)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
