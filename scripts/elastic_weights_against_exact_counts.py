#!/usr/bin/env python3
"""Elastic filters' weights against the exact per-file counts: reads the per-file CSV `strata
study regret --dump-weights FILE` writes (e.g. with DUMP=1 in
scripts/elastic_filters_regret_with_statistics.sh) and, for the elastic rows of each file, prints
DESIGN.md §1's modelled unnecessary reads (sum of z_i * eps(b_i), z_i the exact zero-result
probes the study traced, times the file's miss share under uniform filters when the run had a
block cache) of:

  policy     the bits elastic filters had in use at the end of the replay;
  exact      elastic filters' greedy choice (DESIGN.md §3.5, modules of MODULE bits per key,
             at most the modules each file has on disk) weighted by the exact counts (times the
             miss share under uniform filters with a cache): the best the weights can do with
             the modules on disk;
  merlin     the same greedy weighted by what elastic filters weighed (Merlin's z times the
             cache model's false-positive cost);
  optimum    the study's optimum (the cache-weighted one with a cache);

each over the optimum. policy ~ merlin says the allocation follows its weights; merlin ~ exact
says the weights are right; exact >> 1 says the modules on disk, not the weights, keep the
allocation from the optimum.

With --modules-on-disk L0:REST the two greedy choices are made as if every level-0 file had L0
modules on disk and every other file REST (of MODULE bits each; level-0 files' of
--level0-module-bits when given): what another layout of modules on disk would allow on the same
tree and counts. Without it, each file's bits on disk as written, in modules of its level's size.
With --level1-modules-on-disk K (after --modules-on-disk when both are given), every level-1 file
is taken as holding K modules of MODULE bits: what the level-1 layout allows on the same tree.

  scripts/elastic_weights_against_exact_counts.py [--module-bits 1] [--level0-module-bits M0]
      [--budget 2] [--modules-on-disk L0:REST] [--level1-modules-on-disk K] CSV...
"""
import argparse
import csv
import heapq
import math

LN2_SQUARED = math.log(2) ** 2


def greedy(entries, weights, caps, budget_bits, modules):
    """Modules of `modules[i]` bits per key for file i taken by value per bit while they fit
    (DESIGN.md §3.5)."""
    bits = [0.0] * len(entries)

    def value(i):
        gain = 1.0 - math.exp(-LN2_SQUARED * modules[i])
        return -(weights[i] * math.exp(-LN2_SQUARED * bits[i]) * gain / (entries[i] * modules[i]))

    heap = [(value(i), i) for i in range(len(entries))
            if entries[i] > 0 and caps[i] >= modules[i] - 1e-9]
    heapq.heapify(heap)
    used = 0.0
    while heap:
        _, i = heapq.heappop(heap)
        cost = entries[i] * modules[i]
        if used + cost > budget_bits * (1 + 1e-12):
            continue
        used += cost
        bits[i] += modules[i]
        if bits[i] + modules[i] <= caps[i] + 1e-9:
            heapq.heappush(heap, (value(i), i))
    return bits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--module-bits", type=float, default=1.0)
    parser.add_argument("--level0-module-bits", type=float, default=None)
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--modules-on-disk", default=None)
    parser.add_argument("--level1-modules-on-disk", type=int, default=None)
    parser.add_argument("csv", nargs="+")
    args = parser.parse_args()
    for path in args.csv:
        rows = [r for r in csv.DictReader(open(path)) if r["policy"].startswith("elastic")]
        if not rows:
            continue
        cached = all(r["miss_share_uniform"] for r in rows)
        entries = [float(r["entries"]) for r in rows]
        exact = [float(r["exact_z"]) for r in rows]
        miss = [float(r["miss_share_uniform"]) if cached else 1.0 for r in rows]
        caps = [float(r["bits_on_disk"]) for r in rows]
        level0_bits = args.level0_module_bits or args.module_bits
        modules = [level0_bits if r["level"] == "0" else args.module_bits for r in rows]
        if args.modules_on_disk:
            level0, rest = (int(n) for n in args.modules_on_disk.split(":"))
            caps = [(level0 if r["level"] == "0" else rest) * m for r, m in zip(rows, modules)]
        if args.level1_modules_on_disk:
            caps = [args.level1_modules_on_disk * m if r["level"] == "1" else cap
                    for r, m, cap in zip(rows, modules, caps)]
        optimum_column = "cache_weighted_optimal_bits" if cached else "optimal_bits"

        def reads(bits):
            return sum(z * m * math.exp(-LN2_SQUARED * b) for z, m, b in zip(exact, miss, bits))

        budget = args.budget * sum(entries)
        optimum = reads([float(r[optimum_column]) for r in rows])
        policy = reads([float(r["bits_in_use"]) for r in rows])
        best = reads(greedy(entries, [z * m for z, m in zip(exact, miss)], caps, budget,
                            modules))
        learned = reads(greedy(entries, [float(r["elastic_weight"]) for r in rows], caps, budget,
                               modules))
        if optimum <= 0:
            continue
        print(f"{path}: policy {policy / optimum:.3f}  exact {best / optimum:.3f}  "
              f"merlin {learned / optimum:.3f}  (of the {'cache-weighted ' if cached else ''}"
              f"optimum's modelled {optimum:.0f} reads)")


if __name__ == "__main__":
    main()
