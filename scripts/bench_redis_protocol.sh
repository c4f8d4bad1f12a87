#!/usr/bin/env bash
# `strata serve` against Redis, measured by redis-benchmark over loopback.
#
#   scripts/bench_redis_protocol.sh OUT.json
#
# Each row is one redis-benchmark test (SET or GET) with 16-byte keys (`key:__rand_int__` with
# `-r 1000000`: "key:" and 12 digits) over 1M random keys, 100-byte values (`-d 100`) and 50
# clients (`-c 50`), without and with pipelining (`-P 16`), against:
#   nosync    strata serve --sync no        vs  redis-server --save '' --appendonly no
#   everysec  strata serve --sync everysec  vs  redis-server --appendonly yes --appendfsync everysec
#   proxy     three strata serve --sync no nodes behind nutcracker (twemproxy)
#             vs three redis-server (no persistence) nodes behind nutcracker, both with
#             crates/strata-server/twemproxy/nutcracker.yml on other ports
#   proxy-everysec  the same with strata serve --sync everysec nodes vs redis-server
#             --appendonly yes --appendfsync everysec nodes
# Every row is run 3 times, alternating which server goes first, and the medians are reported:
# ops/s, p50 and p99 latency (redis-benchmark --csv) and strata/redis for ops/s. A table is
# printed and the rows are written to OUT.json.
#
# Needs redis-benchmark (redis-tools), redis-server and nutcracker (Debian packages; installed
# with apt-get when missing and run as root) and builds `strata` in release mode. Environment:
#   N_P1=200000 N_P16=1000000   requests per test without and with pipelining
#   RUNS=3                      runs per row
#   CONFIGS="nosync everysec proxy proxy-everysec"
# Servers run in a temporary directory on free loopback ports; a trap stops every process this
# script starts and removes the directory, however it exits. The system's Redis service is not
# used.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUT.json" >&2
    exit 2
fi
out_json=$1
n_p1=${N_P1:-200000}
n_p16=${N_P16:-1000000}
runs=${RUNS:-3}
configs=${CONFIGS:-"nosync everysec proxy proxy-everysec"}

missing=()
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v nutcracker >/dev/null || [[ -x /usr/sbin/nutcracker ]] || missing+=(nutcracker)
if ((${#missing[@]})); then
    if [[ "$(id -u)" == 0 ]]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "$0: ${missing[*]} missing; install with 'apt-get install -y ${missing[*]}'" >&2
        exit 1
    fi
fi
nutcracker=$(command -v nutcracker || echo /usr/sbin/nutcracker)

cargo build --release -q -p strata-cli
strata=$PWD/target/release/strata

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-redis-protocol.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A loopback port nothing listens on now (the kernel's pick).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ready() { # port
    local i
    for i in $(seq 1 200); do
        if [[ "$(redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null)" == PONG ]]; then
            return 0
        fi
        sleep 0.05
    done
    echo "$0: nothing answers PING on port $1" >&2
    exit 1
}

# Starts a server; prints its port. Sets last_pid.
start_strata() { # name sync
    local port
    port=$(free_port)
    "$strata" serve "$work/$1" --listen "127.0.0.1:$port" --sync "$2" \
        >"$work/$1.log" 2>&1 &
    pids+=($!)
    wait_ready "$port"
    echo "$port" >"$work/$1.port"
}

start_redis() { # name persistence...
    local name=$1 port
    shift
    port=$(free_port)
    mkdir -p "$work/$name"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$work/$name" --daemonize no \
        --protected-mode yes "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
    wait_ready "$port"
    echo "$port" >"$work/$name.port"
}

start_proxy() { # name node-port node-port node-port
    local name=$1 port
    port=$(free_port)
    sed -e "s/listen: 127.0.0.1:6380/listen: 127.0.0.1:$port/" \
        -e "s/- 127.0.0.1:6381:/- 127.0.0.1:$2:/" \
        -e "s/- 127.0.0.1:6382:/- 127.0.0.1:$3:/" \
        -e "s/- 127.0.0.1:6383:/- 127.0.0.1:$4:/" \
        crates/strata-server/twemproxy/nutcracker.yml >"$work/$name.yml"
    "$nutcracker" -c "$work/$name.yml" -s "$(free_port)" -o "$work/$name.log" &
    pids+=($!)
    wait_ready "$port" # the proxy answers PING itself
    echo "$port" >"$work/$name.port"
}

port_of() { cat "$work/$1.port"; }

results=$work/results.csv
: >"$results"

bench() { # config server run port
    local config=$1 server=$2 run=$3 port=$4 p n
    for p in 1 16; do
        if [[ $p == 1 ]]; then n=$n_p1; else n=$n_p16; fi
        redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -n "$n" -r 1000000 -d 100 -c 50 \
            -P "$p" --csv 2>/dev/null |
            awk -v c="$config" -v s="$server" -v r="$run" -v p="$p" -F, \
                'NR > 1 { gsub(/"/, ""); print c "," p "," s "," r "," $1 "," $2 "," $5 "," $7 }' \
                >>"$results"
    done
    echo "  $config run $run $server done" >&2
}

for config in $configs; do
    echo "== $config" >&2
    case $config in
    nosync)
        start_strata "strata-$config" no
        start_redis "redis-$config" --save '' --appendonly no
        ;;
    everysec)
        start_strata "strata-$config" everysec
        start_redis "redis-$config" --save '' --appendonly yes --appendfsync everysec
        ;;
    proxy | proxy-everysec)
        for i in 1 2 3; do
            if [[ $config == proxy ]]; then
                start_strata "strata-$config-node-$i" no
                start_redis "redis-$config-node-$i" --save '' --appendonly no
            else
                start_strata "strata-$config-node-$i" everysec
                start_redis "redis-$config-node-$i" --save '' --appendonly yes --appendfsync everysec
            fi
        done
        start_proxy "strata-$config" "$(port_of "strata-$config-node-1")" \
            "$(port_of "strata-$config-node-2")" "$(port_of "strata-$config-node-3")"
        start_proxy "redis-$config" "$(port_of "redis-$config-node-1")" \
            "$(port_of "redis-$config-node-2")" "$(port_of "redis-$config-node-3")"
        ;;
    *)
        echo "$0: unknown configuration $config" >&2
        exit 2
        ;;
    esac
    for run in $(seq 1 "$runs"); do
        if ((run % 2)); then order="strata redis"; else order="redis strata"; fi
        for server in $order; do
            bench "$config" "$server" "$run" "$(port_of "$server-$config")"
        done
    done
    # Stop this configuration's servers before the next one's.
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
done

python3 - "$results" "$out_json" "$n_p1" "$n_p16" "$runs" <<'EOF'
import csv, json, statistics, sys

results, out_json, n_p1, n_p16, runs = sys.argv[1:]
rows = {}
for config, p, server, run, test, rps, p50, p99 in csv.reader(open(results)):
    key = (config, int(p), test)
    rows.setdefault(key, {}).setdefault(server, []).append(
        (float(rps), float(p50), float(p99)))

def median(samples, i):
    return statistics.median(s[i] for s in samples)

order = {"nosync": 0, "everysec": 1, "proxy": 2, "proxy-everysec": 3}
table = []
for (config, p, test) in sorted(rows, key=lambda k: (order.get(k[0], 9), k[1], k[2] != "SET")):
    by = rows[(config, p, test)]
    if "strata" not in by or "redis" not in by:
        continue
    row = {"config": config, "pipeline": p, "test": test,
           "requests": int(n_p1 if p == 1 else n_p16), "runs": len(by["strata"])}
    for server in ("strata", "redis"):
        row[server] = {"ops_per_sec": median(by[server], 0), "p50_ms": median(by[server], 1),
                       "p99_ms": median(by[server], 2), "samples_ops_per_sec":
                       [s[0] for s in by[server]]}
    row["ratio_ops"] = row["strata"]["ops_per_sec"] / row["redis"]["ops_per_sec"]
    table.append(row)

head = (f"{'config':<14} {'P':>2} {'test':<4} {'strata ops/s':>13} {'p50':>6} {'p99':>6}   "
        f"{'redis ops/s':>12} {'p50':>6} {'p99':>6}   {'strata/redis':>12}")
print(head)
print("-" * len(head))
for r in table:
    s, d = r["strata"], r["redis"]
    print(f"{r['config']:<14} {r['pipeline']:>2} {r['test']:<4} {s['ops_per_sec']:>13,.0f} "
          f"{s['p50_ms']:>6.3f} {s['p99_ms']:>6.3f}   {d['ops_per_sec']:>12,.0f} "
          f"{d['p50_ms']:>6.3f} {d['p99_ms']:>6.3f}   {r['ratio_ops']:>12.2f}")
print("(latencies in ms; medians of", runs, "runs; 16-byte keys, 100-byte values, 50 clients)")

targets = []
def target(name, checks):
    # A target with no row measured (a CONFIGS subset) is reported as such, not as met.
    checks = list(checks)
    met = all(checks) if checks else None
    targets.append({"target": name, "met": met})
    print({True: "MET          ", False: "NOT MET      ", None: "NOT MEASURED "}[met] + name)
target("ops/s at least 0.5x Redis on every row", (r["ratio_ops"] >= 0.5 for r in table))
target("SET at least 1.0x with --sync everysec vs appendfsync everysec",
       (r["ratio_ops"] >= 1.0 for r in table if r["config"] == "everysec" and r["test"] == "SET"))
target("strata p99 at most 2 ms without pipelining",
       (r["strata"]["p99_ms"] <= 2.0 for r in table if r["pipeline"] == 1))
json.dump({"rows": table, "targets": targets}, open(out_json, "w"), indent=2)
print("wrote", out_json)
EOF
