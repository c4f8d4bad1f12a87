#!/usr/bin/env bash
# EcoTune query throughput: average queries per second under a steady write stream, for EcoTune
# and the other merge policies, at long-scan ratios R (EcoTune's workload: long scans of 100
# entries with probability r, seeks and gets with (1 - r) / 2 each; `strata bench --workloads
# ecotune:r`). One `strata bench` per r, each policy on its own fresh tree: 1,000,000 keys
# loaded, then queries on one closed-loop thread beside a writer paced at RATE MB/s (READS at
# r = 0.3, scaled by 1.3 / (1 + r) so that every phase lasts about as long); RUNS runs, medians.
# EcoTune measures r itself over the queries it serves (DESIGN.md §6); ECOTUNE_R=workload (or a
# number) fixes it instead (`--ecotune-r`). Prints, per r and policy, the median queries per
# second, its ratio to EcoTune's, the compaction CPU share, and EcoTune's round state at the end
# of the phase (R, T_c/T_w, and the r its round took: one round must fit in the phase), and the
# blocks read from the device per query (data + index + filter; load-independent).
#
#   scripts/ecotune_query_throughput.sh [RATIOS] [POLICIES] [RUNS] [READS] [RATE]
#     defaults: "0.1 0.3 0.5 1", "ecotune,leveling,lazy-leveling,tiering,garnering", 3,
#               2000000, 4
#
# Size ratio 10 for leveling, lazy leveling, tiering and Garnering (DESIGN.md §6's baselines), 1 MiB
# write buffer (EcoTune's unit run is the tree over 100, about 1.2 MB here), 10 bits per key.
# About 35 minutes with the defaults on this machine. OUT=dir keeps the files.
# RANGE_FILTER_BITS=b gives every Strata file a range filter of b quantum bits
# (`--range-filter-bits`; 0, the default, none): the workload's short seeks are closed ranges
# `[key i, key i + 1)`, which range filters can rule runs out of.
# SETUP=paper runs EcoTune's evaluation setup instead (`strata bench --preset paper-ecotune`:
# 8-byte keys, 256-byte values, 256 KiB buffers so that leveling has four levels, range filters on
# every file, 8 MiB cache, direct reads, queries on two threads, a 2 MB/s writer unless RATE is
# given); RANGE_FILTER_BITS and the size settings above then do not apply.
# SCAN_READAHEAD_BYTES=b caps scans' read-ahead at b bytes (`--scan-readahead-bytes`; 0 turns it
# off; default 256 KiB, `Options::scan_readahead_max_bytes`).
# Besides queries/s (wall time, which the machine's load moves), the table prints counts that
# do not depend on the load: blocks read per query, bytes written to tables per query, and the
# process's CPU microseconds per query over all threads (compactions included; `cpu us/q`), whose
# inverse is the throughput where queries and compactions share the cores, as in the paper.
set -euo pipefail
ratios=${1:-"0.1 0.3 0.5 1"}
policies=${2:-ecotune,leveling,lazy-leveling,tiering,garnering}
runs=${3:-3}
reads=${4:-2000000}
rate=${5:-4}
setup=${SETUP:-default}
case "$setup" in
  default) shape=(--query-threads 1 --size-ratio 10 --write-buffer-bytes 1MiB --bits-per-key 10
                  --range-filter-bits "${RANGE_FILTER_BITS:-0}" --write-rate "$rate") ;;
  paper) shape=(--preset paper-ecotune ${5:+--write-rate "$5"}) ;;
  *) echo "SETUP must be default or paper, got $setup" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for r in $ratios; do
  phase_reads=$(python3 -c "print(int($reads * 1.3 / (1 + $r)))")
  "$strata" bench --filter-policy uniform "${shape[@]}" --workloads "fillrandom,ecotune:$r" \
    --num 1000000 --reads "$phase_reads" --compaction "$policies" --runs "$runs" \
    ${ECOTUNE_R:+--ecotune-r "$ECOTUNE_R"} \
    ${SCAN_READAHEAD_BYTES:+--scan-readahead-bytes "$SCAN_READAHEAD_BYTES"} \
    --json "$out/ecotune-$r-$setup.json" > "$out/ecotune-$r-$setup.txt"
  echo "r = $r done" >&2
done
echo "JSON and tables in $out" >&2
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
print(f"{'r':>4} {'policy':<28} {'queries/s':>10} {'vs ecotune':>10} {'cpu share':>9} "
      f"{'stalls':>6} {'rf out/op':>9} {'reads/q':>7} {'written/q':>9} {'cpu us/q':>8} "
      f"{'vs ecotune':>10}  runs/levels at end; EcoTune's round")
for path in sorted(glob.glob(f"{out}/ecotune-*.json")):
    data = json.load(open(path))
    rows = {}
    for result in data["results"]:
        if not result["phase"].startswith("ecotune"):
            continue
        rows.setdefault(result["configuration"], []).append(result)
    def cpu_per_query(results):
        # Process CPU (all threads) per query: where queries and compactions share the cores,
        # throughput is its inverse.
        per = [r["cpu_seconds"]["total"] * 1e6 / r["ops"] for r in results
               if r.get("cpu_seconds") and r["ops"]]
        return statistics.median(per) if per else float("nan")
    base = base_cpu = None
    for label, results in rows.items():
        qps = statistics.median(r["ops_per_sec"] for r in results)
        if label.endswith("/ecotune"):
            base, base_cpu = qps, cpu_per_query(results)
    for label, results in rows.items():
        qps = statistics.median(r["ops_per_sec"] for r in results)
        cpu = [r["compaction_cpu_share"] for r in results if r.get("compaction_cpu_share") is not None]
        stalls = sum(r.get("write_stalls") or 0 for r in results)
        state = results[-1].get("compaction_state") or ""
        shape = f"{results[-1]['runs']}/{results[-1]['levels']}"
        ruled_out = [r["range_filter_negatives_per_op"] for r in results
                     if r.get("range_filter_negatives_per_op") is not None]
        reads = [sum(v or 0 for v in r["io_per_op"].values()) for r in results]
        written = [(r.get("table_write_bytes") or 0) / r["ops"] for r in results if r["ops"]]
        cpu_q = cpu_per_query(results)
        print(f"{results[0]['phase'][8:]:>4} {label:<28} {qps:>10.0f} "
              f"{(qps / base if base else float('nan')):>10.2f} "
              f"{(statistics.median(cpu) if cpu else float('nan')):>9.3f} {stalls:>6} "
              f"{(statistics.median(ruled_out) if ruled_out else float('nan')):>9.3f} "
              f"{statistics.median(reads):>7.3f} {statistics.median(written):>9.0f} "
              f"{cpu_q:>8.1f} {(base_cpu / cpu_q if base_cpu else float('nan')):>10.2f}  "
              f"{shape}; {state}")
    # Where a query's time goes (medians over the runs): its mean latency on its thread, the part
    # of it spent reading blocks from the device (elapsed, decompression included), the process's
    # CPU per query outside compaction and flush threads (queries and the paced writer), the
    # data blocks read from the device per query by level, block-cache hits per query, and the
    # writer's stall time over the phase; a third line: bytes read from table files per query, the
    # runs iterator seeks positioned themselves in per query, and scans' read-ahead (device reads
    # that filled a window, each also one of the blocks read per query, and data blocks taken from
    # a window without a device read of their own).
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else float("nan")
    for label, results in rows.items():
        fg = med([(r["cpu_seconds"]["total"] - r["cpu_seconds"]["compaction"]
                   - r["cpu_seconds"]["flush"]) * 1e6 / r["ops"]
                  for r in results if r.get("cpu_seconds") and r["ops"]])
        by_level = [r.get("data_reads_per_op_by_level") for r in results]
        by_level = [v for v in by_level if v]
        levels = ([statistics.median(v[i] for v in by_level) for i in range(len(by_level[0]))]
                  if by_level else [])
        while levels and levels[-1] == 0:
            levels.pop()
        hits = [r.get("cache_hits_per_op") for r in results]
        hits = [h for h in hits if h]
        print(f"{'':>4} {label:<28} latency {med([r['latency_us']['mean'] for r in results]):7.1f} us"
              f"  device reads {med([r.get('block_read_us_per_op') for r in results]):6.1f} us"
              f"  fg cpu {fg:6.1f} us"
              f"  data reads by level {' '.join(f'{x:.3f}' for x in levels)}"
              f"  cache hits d/i/f {med([h['data'] for h in hits]):.2f}/"
              f"{med([h['index'] for h in hits]):.2f}/{med([h['filter'] for h in hits]):.2f}"
              f"  stall {med([r.get('write_stall_ms') for r in results]) / 1e3:.1f} s"
              f"  writes/q {med([r['background_writes'] / r['ops'] for r in results if r['ops']]):.2f}")
        print(f"{'':>4} {label:<28} bytes read/q {med([r.get('read_bytes_per_op') for r in results]):8.0f}"
              f"  runs sought/q {med([r.get('seek_runs_per_op') for r in results]):.3f}"
              f"  read-ahead fills/q {med([r.get('scan_readahead_reads_per_op') for r in results]):.3f}"
              f"  blocks from read-ahead/q {med([r.get('scan_readahead_blocks_per_op') for r in results]):.3f}")
PY
