#!/usr/bin/env python3
"""Bytes each engine's merges read and wrote, per output level, from the info logs (`LOG`) of a
Strata database and a RocksDB database, side by side: RocksDB's per-level compaction stats
(`Rn`, `Rnp1`, `Write`, moves), counted the same way for both.

    scripts/compaction_bytes_per_level.py STRATA_DIR_OR_LOG [ROCKSDB_DIR_OR_LOG] [--user-bytes N]

Per output level: merges, bytes read from the level above (`Rn`: level 0's runs for the merges
into the base level), bytes read from the output level itself (`Rnp1`, the overlap a merge
rewrites), bytes written, `Rnp1/Rn` (next-level bytes rewritten per byte moved down), `W/Rn`,
the mean bytes moved down per merge, the mean output file and trivial moves (files and bytes).
With `--user-bytes` each byte column is also printed per user byte. Strata's lines are its
`compacted N files (level a: X bytes, ...) into M files (W bytes) on level L` entries; RocksDB's
the `compaction_started` / `compaction_finished` / `trivial_move` / `table_file_creation` events
of its event log (input bytes from the sizes its table files were created with). A whole log is
counted: run each engine in its own `--db` directory (`strata bench --db DIR`), one run each.
"""
import json
import os
import re
import sys
from collections import defaultdict

STRATA = re.compile(
    r"(compacted|moved) (\d+) files \(([^)]*)\) into (\d+) files \((\d+) bytes\) on level (\d+)"
)
INPUT = re.compile(r"level (\d+): (\d+) bytes")


def log_path(path):
    return os.path.join(path, "LOG") if os.path.isdir(path) else path


def new_level():
    return {"merges": 0, "rn": 0, "rnp1": 0, "write": 0, "outputs": 0, "moves": 0, "moved": 0}


def strata_levels(path):
    levels = defaultdict(new_level)
    with open(log_path(path), errors="replace") as log:
        for line in log:
            match = STRATA.search(line)
            if not match:
                continue
            kind, _, inputs, outputs, written, level = match.groups()
            level = int(level)
            by_level = {int(l): int(b) for l, b in INPUT.findall(inputs)}
            entry = levels[level]
            if kind == "moved":
                entry["moves"] += 1
                entry["moved"] += sum(by_level.values())
                continue
            entry["merges"] += 1
            entry["rnp1"] += by_level.get(level, 0) if level > 0 else 0
            entry["rn"] += sum(b for l, b in by_level.items() if l != level or level == 0)
            entry["write"] += int(written)
            entry["outputs"] += int(outputs)
    return levels


def rocksdb_levels(path):
    levels = defaultdict(new_level)
    sizes = {}
    started = {}
    with open(log_path(path), errors="replace") as log:
        for line in log:
            at = line.find("EVENT_LOG_v1 ")
            if at < 0:
                continue
            try:
                event = json.loads(line[at + 13:])
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "table_file_creation":
                sizes[event.get("file_number")] = event.get("file_size", 0)
            elif kind == "compaction_started":
                started[event.get("job")] = {
                    int(key[len("files_L"):]): files
                    for key, files in event.items()
                    if key.startswith("files_L")
                }
            elif kind == "compaction_finished":
                level = int(event.get("output_level", 0))
                inputs = started.pop(event.get("job"), {})
                entry = levels[level]
                entry["merges"] += 1
                for input_level, files in inputs.items():
                    bytes_ = sum(sizes.get(number, 0) for number in files)
                    if input_level == level and level > 0:
                        entry["rnp1"] += bytes_
                    else:
                        entry["rn"] += bytes_
                entry["write"] += int(event.get("total_output_size", 0))
                entry["outputs"] += int(event.get("num_output_files", 0))
            elif kind == "trivial_move":
                entry = levels[int(event.get("destination_level", 0))]
                entry["moves"] += int(event.get("files", 1))
                entry["moved"] += int(event.get("total_files_size", 0))
    return levels


def mib(bytes_):
    return f"{bytes_ / 1048576:.2f}"


def rows(name, levels, user_bytes):
    out = []
    totals = new_level()
    for level in sorted(levels):
        e = levels[level]
        for key in totals:
            totals[key] += e[key]
        out.append(row(name, f"L{level}", e, user_bytes))
    out.append(row(name, "all", totals, user_bytes))
    return out


def row(name, level, e, user_bytes):
    def ratio(a, b):
        return f"{a / b:.2f}" if b else "-"

    cells = [
        name,
        level,
        str(e["merges"]),
        mib(e["rn"]),
        mib(e["rnp1"]),
        mib(e["write"]),
        ratio(e["rnp1"], e["rn"]),
        ratio(e["write"], e["rn"]),
        mib(e["rn"] / e["merges"]) if e["merges"] else "-",
        mib(e["write"] / e["outputs"]) if e["outputs"] else "-",
        f'{e["moves"]} ({mib(e["moved"])})',
    ]
    if user_bytes:
        cells += [ratio(e["rn"], user_bytes), ratio(e["rnp1"], user_bytes), ratio(e["write"], user_bytes)]
    return cells


def main(argv):
    user_bytes = 0
    if "--user-bytes" in argv:
        at = argv.index("--user-bytes")
        user_bytes = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    if not 1 <= len(argv) <= 2:
        sys.exit(__doc__)
    header = ["engine", "into", "merges", "Rn MiB", "Rnp1 MiB", "W MiB", "Rnp1/Rn", "W/Rn",
              "Rn/merge MiB", "W/file MiB", "moves (MiB)"]
    if user_bytes:
        header += ["Rn/user", "Rnp1/user", "W/user"]
    table = rows("strata", strata_levels(argv[0]), user_bytes)
    if len(argv) == 2:
        table += rows("rocksdb", rocksdb_levels(argv[1]), user_bytes)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for cells in table:
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
