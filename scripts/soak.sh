#!/usr/bin/env bash
# A soak: HOURS of `strata stress` and `strata crash-test` in turn, with the memory and open
# file descriptors of each long stress process sampled as it runs. Fails on a violation (either
# command's oracle), on a command that fails, or on memory or descriptors that grow without
# levelling off inside one stress process.
#
#   scripts/soak.sh HOURS            # e.g. scripts/soak.sh 2
#
# One cycle is:
#   1. one `strata stress` process of SOAK_STRESS_SECONDS (default 720, 12 minutes; the last
#      cycle's is cut to the time left), 4 threads, write faults 0.002 and read faults 0.001, the
#      database closed and reopened every 3 s and after every fault (its own `--reopen-every`),
#      on the next merge policy x filter allocator pair. Pairs go in the order
#      k -> (policy k mod 7, allocator (k + k div 7) mod 7), so any 7 consecutive runs cover
#      every policy and every allocator once and 49 runs cover every pair (SOAK_FIRST_PAIR,
#      default 0, says where to start). Its resident memory (VmRSS of /proc/PID/status) and
#      descriptor count (entries of /proc/PID/fd) are read every second, and every SOAK_SAMPLE_SECONDS
#      (default 60) one sample is written: the peaks of the readings in that interval (and the
#      descriptors' trough), with the database directory's bytes beside them;
#   2. `strata crash-test` of SOAK_CRASH_ITERATIONS (default 150, about 3 minutes)
#      kill-and-check iterations round every pair, seeded by the cycle; its parent process is
#      sampled too (its children live a second each).
# Cycles go on until HOURS have passed (a cycle that would start with under two minutes, or
# under 10 samples, left is not started).
#
# "Levels off", per process, for memory's peaks and for descriptors' troughs: the samples after
# the first (start-up) are cut into thirds, and the mean of the last third must be at most the
# mean of the middle third plus SOAK_GROWTH_PERCENT % (default 5) of it, plus 2 for descriptors. A leak that keeps growing breaks this; a curve that rises at start-up and then
# stays does not. Descriptors are judged by their troughs because the stress process closes and
# reopens the database every 3 s: the trough is what it holds apart from a full set of table
# files (whose number compactions move by dozens), and a leaked descriptor lifts it. A process
# with under 9 samples after its first is listed but not judged (`scripts/soak_curves.py`
# applies the rule and draws the curves).
#
# Writes to $OUT (default a new temporary directory): samples.csv, one log per command, the
# curves as soak.png (matplotlib: target/py-venv's, as scripts/test_all.sh installs it, or
# python3's; installed into target/py-venv when neither has it), and summary.txt. Exits 1 on
# a violation or growth, 0 otherwise.
set -euo pipefail
if [[ $# -ne 1 ]] || ! python3 -c "import sys; h = float(sys.argv[1]); sys.exit(0 if h > 0 else 1)" "$1" 2>/dev/null; then
    echo "usage: scripts/soak.sh HOURS   (HOURS > 0, fractions allowed: 0.1 = 6 minutes)" >&2
    exit 2
fi
hours=$1
root=$(cd "$(dirname "$0")/.." && pwd)
stress_seconds=${SOAK_STRESS_SECONDS:-720}
sample_seconds=${SOAK_SAMPLE_SECONDS:-60}
crash_iterations=${SOAK_CRASH_ITERATIONS:-150}
first_pair=${SOAK_FIRST_PAIR:-0}
growth_percent=${SOAK_GROWTH_PERCENT:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "soak: $hours h, logs and samples in $out"

cargo build --release -q -p strata-cli --manifest-path "$root/Cargo.toml"
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"

compactions=(leveling leveling-dynamic tiering lazy-leveling garnering ecotune moose)
allocators=(uniform monkey mnemosyne mnemosyne-min1 mnemosyne-plus mnemosyne-plus-first-come elastic)

total=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 3600))" "$hours")
started=$(date +%s)
deadline=$((started + total))
csv="$out/samples.csv"
echo "run,command,config,elapsed_s,rss_kib,fds,fds_min,db_bytes" >"$csv"

# Prints "RSS_KIB FDS" of process $1, or nothing once it has ended.
read_process() {
    local rss fds
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 0
    fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    # A process that ended between the two reads has no descriptors left: no reading.
    [[ -n "$rss" ]] && ((fds > 0)) && echo "$rss $fds"
    return 0
}

# Runs "$@" in the background as run $1 and samples it until it ends; returns its exit status.
# The process is read every second; each sample row holds the peaks (and the descriptors'
# trough) of the readings since the previous row, so a row is that interval's level whatever
# moment of a reopen or compaction the interval ends on.
run_sampled() {
    local run=$1 command=$2 config=$3 db=$4 log=$5
    shift 5
    local since pid next status reading rss fds rss_max=0 fds_max=0 fds_min=0 bytes
    since=$(date +%s)
    "$@" >"$log" 2>&1 &
    pid=$!
    next=$((since + sample_seconds))
    while kill -0 "$pid" 2>/dev/null; do
        reading=$(read_process "$pid")
        if [[ -n "$reading" ]]; then
            read -r rss fds <<<"$reading"
            ((rss > rss_max)) && rss_max=$rss
            ((fds > fds_max)) && fds_max=$fds
            ((fds_min == 0 || fds < fds_min)) && fds_min=$fds
        fi
        if (($(date +%s) >= next)) && ((rss_max > 0)); then
            bytes=0
            if [[ -n "$db" && -d "$db" ]]; then
                bytes=$(du -sb "$db" 2>/dev/null | cut -f1) || bytes=0
            fi
            echo "$run,$command,$config,$(($(date +%s) - since)),$rss_max,$fds_max,$fds_min,${bytes:-0}" >>"$csv"
            next=$((next + sample_seconds))
            rss_max=0 fds_max=0 fds_min=0
        fi
        sleep 1
    done
    status=0
    wait "$pid" || status=$?
    return "$status"
}

failed=""
run=0
cycle=0
stress_runs=0
crash_runs=0
while :; do
    now=$(date +%s)
    left=$((deadline - now))
    if ((left < 120 || left < 10 * sample_seconds)); then
        break
    fi
    pair=$((first_pair + cycle))
    k=$((pair % 49))
    compaction=${compactions[$((k % 7))]}
    allocator=${allocators[$(((k + k / 7) % 7))]}
    seconds=$((left < stress_seconds ? left : stress_seconds))
    seed=$((5000 + pair))
    run=$((run + 1))
    db="$out/stress-$run.db"
    log="$out/stress-$run.log"
    echo "== [$(date -u +%H:%M:%S)] run $run: stress $compaction x $allocator, seed $seed, $seconds s, faults on"
    status=0
    run_sampled "$run" stress "$compaction/$allocator" "$db" "$log" \
        "$strata" stress --db "$db" --duration "$seconds" --threads 4 --seed "$seed" \
        --compaction "$compaction" --filter-policy "$allocator" \
        --fault-rate 0.002 --read-fault-rate 0.001 --reopen-every 3 || status=$?
    stress_runs=$((stress_runs + 1))
    if ((status != 0)) || ! grep -q "^no violations" "$log"; then
        echo "VIOLATION or failure (exit $status) in run $run, stress $compaction x $allocator, seed $seed:"
        tail -20 "$log"
        failed="stress run $run"
        break
    fi
    grep -E "^puts|^no violations" "$log" | sed "s/^/   /"
    rm -rf "$db"

    if (($(date +%s) >= deadline)); then
        break
    fi
    run=$((run + 1))
    log="$out/crash-$run.log"
    echo "== [$(date -u +%H:%M:%S)] run $run: crash-test, $crash_iterations iterations, seed $((7000 + 100 * cycle))"
    status=0
    run_sampled "$run" crash-test all-pairs "" "$log" \
        "$strata" crash-test --iterations "$crash_iterations" --seed $((7000 + 100 * cycle)) \
        --dir "$out/crash-$run" || status=$?
    crash_runs=$((crash_runs + 1))
    if ((status != 0)); then
        echo "VIOLATION or failure (exit $status) in run $run, crash-test seed $((7000 + 100 * cycle)):"
        tail -20 "$log"
        failed="crash-test run $run"
        break
    fi
    tail -1 "$log" | sed "s/^/   /"
    rm -rf "$out/crash-$run"
    cycle=$((cycle + 1))
done

elapsed=$(($(date +%s) - started))
echo "== $stress_runs stress runs, $crash_runs crash-test runs, $elapsed s"
# The curves: python3 with matplotlib, target/py-venv's first (scripts/test_all.sh makes it).
python=""
for candidate in "$root/target/py-venv/bin/python" python3; do
    if "$candidate" -c "import matplotlib" >/dev/null 2>&1; then
        python=$candidate
        break
    fi
done
if [[ -z "$python" ]]; then
    python3 -m venv "$root/target/py-venv"
    "$root/target/py-venv/bin/python" -m pip install --quiet --disable-pip-version-check matplotlib
    python="$root/target/py-venv/bin/python"
fi
growth=0
"$python" "$root/scripts/soak_curves.py" "$csv" --png "$out/soak.png" \
    --growth-percent "$growth_percent" | tee "$out/summary.txt" || growth=$?
if [[ -n "$failed" ]]; then
    echo "soak FAILED: violation or failure in $failed (logs in $out)"
    exit 1
fi
if ((growth != 0)); then
    echo "soak FAILED: memory or descriptors grew without levelling off (samples in $csv)"
    exit 1
fi
echo "soak passed: no violation, every judged curve levels off ($elapsed s; $out)"
