#!/usr/bin/env python3
"""A read phase's costs per run of recipe 38 (scripts/auto_tune_on_shifting_workload.sh): what
each run's lookups counted, against what they measured.

For every report in OUT (the script's directory of `CONFIG-runN.txt`) it prints, for PHASE
(default readmissing): the run's ops/s; the counts, which do not depend on the machine's load
(device reads per lookup of data, index and filter blocks; the runs in the tree as the phase
began, each of which an absent key's lookup probes); the prices the engine timed in that run
(a probe the filter answered, a probe that read the device: the report's "probes timed" line);
and the ops/s those counts give at those prices, `1 / (reads * device + runs * filter)`, with
the measured ops/s over it. Then, per configuration, the medians of each column over the runs,
and the ops/s the median counts give at one set of prices for all (the medians of every run's
prices): the configurations' order with the machine's load taken out.

    scripts/read_phase_costs_per_run.py OUT [PHASE]
"""
import re
import statistics
import sys
from pathlib import Path


def phase_row(text, phase):
    """The phase's first summary row and the 'probes timed' line that follows it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        fields = line.split()
        if len(fields) > 10 and fields[0] == "strata" and fields[1] == phase:
            timed = next((l for l in lines[i + 1 : i + 6] if "probes timed" in l), None)
            return fields, timed
    return None, None


def runs_before(text, phase):
    m = re.search(rf"^tree strata before {phase}: \d+ levels, (\d+) runs", text, re.M)
    return int(m.group(1)) if m else None


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    phase = sys.argv[2] if len(sys.argv) > 2 else "readmissing"
    rows = {}
    for report in sorted(out.glob("*-run*.txt")):
        config, run = report.stem.rsplit("-run", 1)
        text = report.read_text()
        fields, timed = phase_row(text, phase)
        runs = runs_before(text, phase)
        if fields is None or timed is None or runs is None:
            continue
        m = re.search(r"([0-9.]+) us answered by the filter, .* ([0-9.]+) us with a device read", timed)
        if not m:
            continue
        filter_us, device_us = float(m.group(1)), float(m.group(2))
        ops = float(fields[3])
        reads = float(fields[8]) + float(fields[9]) + float(fields[10])
        predicted = 1e6 / (reads * device_us + runs * filter_us)
        rows.setdefault(config, []).append((run, ops, reads, runs, device_us, filter_us, predicted))
    if not rows:
        sys.exit(f"no {phase} rows with a tree and timed probes in {out}")
    print(f"{phase}, per run ({out})\n")
    print("| configuration | run | ops/s | device reads per lookup | runs | device read us | filter probe us | ops/s from the counts | measured / from the counts |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for config, runs in rows.items():
        for run, ops, reads, n, dev, flt, pred in runs:
            print(f"| {config} | {run} | {ops:,.0f} | {reads:.4f} | {n} | {dev:.1f} | {flt:.2f} | {pred:,.0f} | {ops / pred:.2f} |")
    print("\nMedians over the runs\n")
    every = [r for runs in rows.values() for r in runs]
    device_us = statistics.median(r[4] for r in every)
    filter_us = statistics.median(r[5] for r in every)
    print(f"| configuration | ops/s | device reads per lookup | runs | device read us | filter probe us | ops/s from the counts at {device_us:.1f} us and {filter_us:.2f} us |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for config, runs in rows.items():
        med = [statistics.median(r[i] for r in runs) for i in range(1, 6)]
        common = 1e6 / (med[1] * device_us + med[2] * filter_us)
        print(f"| {config} | {med[0]:,.0f} | {med[1]:.4f} | {med[2]:g} | {med[3]:.1f} | {med[4]:.2f} | {common:,.0f} |")


if __name__ == "__main__":
    main()
