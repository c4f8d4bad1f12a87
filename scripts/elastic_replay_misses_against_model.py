#!/usr/bin/env python3
"""Where elastic filters' device reads with a block cache come from, per level: reads the
per-file CSV `strata study regret --block-cache-bytes B --dump-weights FILE` writes (e.g. with
DUMP=1 and WORKLOADS=typeI-cache in scripts/elastic_filters_regret_with_statistics.sh) and
prints, for the elastic rows of each file and summed per level:

  measured  the data-block misses of the measured replay alone (the warm-up replay before it
            left out), under elastic filters' bits and under the cache-weighted optimum's;
  model     DESIGN.md §1's model of the same, exact z_i times the file's miss share under
            uniform filters times exp(-ln2sq * b_i), with b_i elastic filters' bits in use at
            the end of the replay and the cache-weighted optimum's bits;

and the measured and modelled ratio of the two totals (the study's regret counts the same
misses). With --files, also every level-0 file and every file whose bits in use changed during
the measured replay (`bits_in_use_before_replay` against `bits_in_use`). The share of
level-0 bits in use held by files the cache-weighted optimum gives no bits shows what the
allocation spent where the cache made filters useless.

  scripts/elastic_replay_misses_against_model.py [--files] CSV...
"""
import argparse
import csv
import math

LN2_SQUARED = math.log(2) ** 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", action="store_true")
    parser.add_argument("csv", nargs="+")
    args = parser.parse_args()
    for path in args.csv:
        rows = [r for r in csv.DictReader(open(path)) if r["policy"].startswith("elastic")]
        if not rows or not all(r.get("replay_misses_cache_weighted") for r in rows):
            print(f"{path}: no block cache or no per-replay columns, skipped")
            continue
        by_level = {}
        wasted_bits = total_bits = 0.0
        if args.files:
            print(f"{path}: level run index exact_z miss_uniform | bits before, end, "
                  "cache-weighted | reads, misses measured, modelled | cache-weighted "
                  "misses measured, modelled")
        for r in rows:
            z = float(r["exact_z"])
            miss = float(r["miss_share_uniform"])
            before = float(r["bits_in_use_before_replay"])
            end = float(r["bits_in_use"])
            optimum = float(r["cache_weighted_optimal_bits"])
            policy_model = z * miss * math.exp(-LN2_SQUARED * end)
            optimum_model = z * miss * math.exp(-LN2_SQUARED * optimum)
            measured = int(r["replay_misses_policy"])
            optimum_measured = int(r["replay_misses_cache_weighted"])
            level = by_level.setdefault(r["level"], [0, 0.0, 0, 0.0])
            level[0] += measured
            level[1] += policy_model
            level[2] += optimum_measured
            level[3] += optimum_model
            entries = float(r["entries"])
            total_bits += end * entries
            if optimum < 1e-9:
                wasted_bits += end * entries
            if args.files and (r["level"] == "0" or abs(before - end) > 1e-9):
                print(f"  {r['level']} {r['run']} {r['index']} {z:.0f} {miss:.4f} | "
                      f"{before:.1f} {end:.1f} {optimum:.2f} | {r['replay_reads_policy']} "
                      f"{measured} {policy_model:.0f} | {optimum_measured} {optimum_model:.0f}")
        totals = [sum(level[i] for level in by_level.values()) for i in range(4)]
        levels = "; ".join(
            f"L{name} {level[0]}/{level[1]:.0f} against {level[2]}/{level[3]:.0f}"
            for name, level in sorted(by_level.items()))
        print(f"{path}: misses measured/modelled, elastic against the cache-weighted optimum: "
              f"{levels}; total {totals[0]}/{totals[1]:.0f} against {totals[2]}/{totals[3]:.0f}: "
              f"measured {totals[0] / max(totals[2], 1):.3f}, modelled "
              f"{totals[1] / max(totals[3], 1e-9):.3f}; bits in use where the optimum has none "
              f"{100 * wasted_bits / max(total_bits, 1e-9):.1f}% of the bits in use")


if __name__ == "__main__":
    main()
