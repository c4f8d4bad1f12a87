#!/usr/bin/env python3
"""Judges and plots the memory and descriptor curves of a soak (scripts/soak.sh).

    python3 scripts/soak_curves.py SAMPLES.csv [--png SOAK.png] [--growth-percent 5]

SAMPLES.csv has one row per sample: run, command, config, elapsed_s (since that process
started), rss_kib and fds (the peaks of the readings in the sample's interval), fds_min (their
trough), db_bytes. Each run is one process, so each is judged on its own curve: the samples after
the first (start-up) are cut into thirds, and a curve levels off when the mean of the last third
is at most the mean of the middle third plus GROWTH_PERCENT % of it (plus 2 for descriptors). A
leak that grows 2 % a minute moves the mean by about 8 % between the thirds of a 12-minute run;
a level curve moves it by its noise only (the mean of 4 samples, each a peak over 60 readings). Memory is judged by its peaks. Descriptors are judged by their troughs: the peak
follows the number of table files open, which compactions move up and down by dozens, while the
stress process closes and reopens the database every 3 s, so the trough is what it holds apart
from a full set of table files; a leaked descriptor stays open across reopens and lifts it. A
run with fewer than 9 samples after the first is listed but not judged. The database's bytes are plotted and
listed, not judged (compaction makes them a sawtooth).

Prints one line per run and a summary; exits 1 when a judged curve does not level off. The PNG
needs matplotlib; without --png nothing but the standard library is used.
"""

import argparse
import csv
import sys
from collections import OrderedDict

MIN_JUDGED_SAMPLES = 9
FD_SLACK = 2


def levels_off(values, growth_percent, slack):
    """(judged, ok, middle third's mean, last third's mean) of one curve by the thirds rule."""
    body = values[1:]
    if len(body) < MIN_JUDGED_SAMPLES:
        return False, True, None, None
    third = len(body) // 3
    middle = body[third : 2 * third]
    last = body[2 * third :]
    middle_mean = sum(middle) / len(middle)
    last_mean = sum(last) / len(last)
    return True, last_mean <= middle_mean * (1 + growth_percent / 100) + slack, middle_mean, last_mean


def load(path):
    runs = OrderedDict()
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            run = runs.setdefault(
                int(row["run"]),
                {"command": row["command"], "config": row["config"], "t": [], "rss": [], "fds": [], "fds_min": [], "db": []},
            )
            run["t"].append(int(row["elapsed_s"]))
            run["rss"].append(int(row["rss_kib"]))
            run["fds"].append(int(row["fds"]))
            run["fds_min"].append(int(row["fds_min"]))
            run["db"].append(int(row["db_bytes"]))
    return runs


def judge(runs, growth_percent):
    """Prints the table; returns the runs whose curves grew."""
    grew = []
    print(
        f"{'run':>3} {'command':<10} {'config':<36} {'samples':>7}  "
        f"{'RSS MiB first/mid/last mean':>27}  {'fd troughs first/mid/last mean':>30}  {'db MiB max':>10}  verdict"
    )
    for number, run in runs.items():
        verdicts = []
        cells = {}
        for name, values, slack in (("rss", run["rss"], 0), ("fds_min", run["fds_min"], FD_SLACK)):
            judged, ok, middle, last = levels_off(values, growth_percent, slack)
            cells[name] = (values[0], middle, last)
            label = "memory" if name == "rss" else "descriptors"
            if not judged:
                verdicts.append(f"{label} not judged")
            elif not ok:
                verdicts.append(f"{label} GREW")
        if any("GREW" in verdict for verdict in verdicts):
            grew.append(number)
        verdict = ", ".join(verdicts) if verdicts else "levels off"

        def show(name, scale):
            first, middle, last = cells[name]
            parts = [first] + ([middle, last] if middle is not None else [max(run[name])] * 2)
            return "/".join(f"{part / scale:.1f}" for part in parts)

        print(
            f"{number:>3} {run['command']:<10} {run['config'] or '-':<36} {len(run['rss']):>7}  "
            f"{show('rss', 1024):>27}  {show('fds_min', 1):>30}  {max(run['db']) / 2**20:>10.1f}  {verdict}"
        )
    judged = sum(
        1 for run in runs.values() for values in (run["rss"], run["fds"]) if len(values) - 1 >= MIN_JUDGED_SAMPLES
    )
    print(
        f"{len(runs)} processes, {sum(len(run['rss']) for run in runs.values())} samples, "
        f"{judged} curves judged (rule: last third's mean <= middle third's mean x {1 + growth_percent / 100:g}, "
        f"+{FD_SLACK} descriptors; memory peaks, descriptor troughs), {len(grew)} grew"
    )
    return grew


def plot(runs, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(3, 1, figsize=(10, 11), sharex=True)
    for number, run in runs.items():
        minutes = [t / 60 for t in run["t"]]
        style = "-" if run["command"] == "stress" else ":"
        label = f"{number} {run['command']} {run['config']}".strip()
        axes[0].plot(minutes, [kib / 1024 for kib in run["rss"]], style, label=label)
        (line,) = axes[1].plot(minutes, run["fds"], style, label=label)
        axes[1].fill_between(minutes, run["fds_min"], run["fds"], color=line.get_color(), alpha=0.12)
        if run["command"] == "stress":
            axes[2].plot(minutes, [b / 2**20 for b in run["db"]], style, label=label)
    axes[0].set_ylabel("resident memory, peak (MiB)")
    axes[1].set_ylabel("open file descriptors\n(peak; shaded down to the trough)")
    axes[2].set_ylabel("database directory (MiB)")
    axes[2].set_xlabel("minutes since the process started")
    for axis in axes:
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2, loc="lower right")
    axes[0].set_title(
        "Soak (scripts/soak.sh): one line per process, one point per sample interval (dotted: crash-test parent)",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    print(f"curves: {png}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples")
    parser.add_argument("--png")
    parser.add_argument("--growth-percent", type=float, default=5.0)
    args = parser.parse_args()
    runs = load(args.samples)
    if not runs:
        print("no samples")
        return 1
    grew = judge(runs, args.growth_percent)
    if args.png:
        plot(runs, args.png)
    return 1 if grew else 0


if __name__ == "__main__":
    sys.exit(main())
