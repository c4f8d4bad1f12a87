#!/usr/bin/env python3
"""Bytes per entry of the table files a Strata database and a RocksDB database hold, split into
filter bytes and the rest (data blocks, index blocks, properties, footer; RocksDB's data and index
apart), so that two engines' bytes written per user byte can be traced to what their tables spend
per entry.

    strata inspect --json DIR_S > S.json
    scripts/table_bytes_per_entry.py S.json DIR_R

Strata's files come from `strata inspect --json` (entries, bytes and filter bytes per file, by
level); RocksDB's from the `table_file_creation` events of its info log (`LOG`), less the files a
`table_file_deletion` event removed: the files live at the end, as Strata's are. Run each engine
with `strata bench --engines ENGINE --runs 1 --db DIR ...`.
"""
import json
import os
import sys


def strata_rows(path):
    with open(path) as f:
        report = json.load(f)
    rows = []
    for level in report["levels"]:
        files = [file for run in level["runs"] for file in run["files"]]
        rows.append(
            (
                f"L{level['level']}",
                len(files),
                sum(f["entries"] for f in files),
                sum(f["bytes"] for f in files),
                sum(f["filter_bytes"] for f in files),
                None,
                None,
            )
        )
    return rows


def rocksdb_rows(path):
    log = os.path.join(path, "LOG") if os.path.isdir(path) else path
    created, deleted = {}, set()
    with open(log, errors="replace") as f:
        for line in f:
            if "EVENT_LOG_v1" not in line:
                continue
            event = json.loads(line.split("EVENT_LOG_v1", 1)[1])
            if event.get("event") == "table_file_creation":
                created[event["file_number"]] = event
            elif event.get("event") == "table_file_deletion":
                deleted.add(event["file_number"])
    live = [e for n, e in created.items() if n not in deleted]
    props = [e["table_properties"] for e in live]
    return [
        (
            "all",
            len(live),
            sum(p["num_entries"] for p in props),
            sum(e["file_size"] for e in live),
            sum(p["filter_size"] for p in props),
            sum(p["data_size"] for p in props),
            sum(p["index_size"] for p in props),
        )
    ]


def print_rows(engine, rows):
    total = ["all", 0, 0, 0, 0, 0, 0]
    for row in rows:
        print_row(engine, row)
        for i in range(1, 7):
            total[i] += row[i] or 0
    if len(rows) > 1:
        print_row(engine, (*total[:5], None, None))


def print_row(engine, row):
    level, files, entries, size, filters, data, index = row
    if entries == 0:
        return
    per = lambda value: f"{value / entries:.3f}"
    print(
        f"| {engine} | {level} | {files} | {entries} | {size} | {per(size)} | "
        f"{8 * filters / entries:.2f} | {per(size - filters)} | "
        f"{per(data) if data is not None else '-'} | {per(index) if index is not None else '-'} |"
    )


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(
        "| engine | level | files | entries | bytes | bytes/entry | filter bits/key | "
        "other bytes/entry | data bytes/entry | index bytes/entry |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print_rows("strata", strata_rows(sys.argv[1]))
    print_rows("rocksdb", rocksdb_rows(sys.argv[2]))


if __name__ == "__main__":
    main()
