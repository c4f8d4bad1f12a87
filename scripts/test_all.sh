#!/usr/bin/env bash
# The whole test suite: the Rust workspace's tests, the memtable's `unsafe` under Miri where a
# nightly toolchain with Miri is installed (scripts/miri_memtable.sh; skipped with a message
# elsewhere), then the Python module's (`import strata`)
# pytest suite against a build of the module in a virtual environment this script makes, and
# the redis-py tests of `strata serve` (crates/strata-server/tests/python).
#
#   scripts/test_all.sh            # both
#   scripts/test_all.sh --python   # the Python suite only (still builds the module)
#
# Needs the Rust toolchain and Python 3 with pip and venv, redis-cli (Debian's redis-tools) and
# nutcracker (twemproxy) for the Rust tests of `strata serve` (installed with apt-get when missing
# and run as root); installs maturin, pytest, hypothesis, dask[distributed], pandas, matplotlib
# and redis from the package registry into target/py-venv (kept between runs, so only the first
# run downloads). The module is built with the `pytest` cargo profile (the test profile's
# optimisation): release builds are for benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."

python_only=false
if [[ "${1:-}" == "--python" ]]; then
    python_only=true
fi

# The tests of `strata serve` need redis-cli (redis-tools) and nutcracker (twemproxy, for the
# sharding test): install whichever is missing.
missing=()
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v nutcracker >/dev/null || [[ -x /usr/sbin/nutcracker ]] || missing+=(nutcracker)
if (( ${#missing[@]} )); then
    if [[ "$(id -u)" == 0 ]]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "test_all.sh: ${missing[*]} missing; install with 'apt-get install -y ${missing[*]}'" >&2
        exit 1
    fi
fi

if ! $python_only; then
    # The engine's layering: no import cycle, no new upward import (docs/ARCHITECTURE.md).
    python3 scripts/import_graph.py
    cargo test --workspace
    # The background coordination under the shuttle schedule explorer (a build of `strata` with
    # the `shuttle` feature): 10,000 schedules of each of four scenarios, about a minute
    # (docs/TESTING.md, "Schedules explored").
    STRATA_SCHEDULES=10000 cargo test -p strata --features shuttle --test schedules
    # The skiplist's `unsafe` under Miri (Stacked Borrows, one schedule, small sizes): prints
    # that it is SKIPPED, and why, where no `cargo +nightly miri` is installed.
    scripts/miri_memtable.sh
fi

venv=target/py-venv
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin>=1.9.4,<2" pytest hypothesis "dask[distributed]" pandas matplotlib redis
(
    cd crates/strata-py
    VIRTUAL_ENV="$PWD/../../$venv" PATH="$PWD/../../$venv/bin:$PATH" \
        maturin develop --quiet --profile pytest
)
# The redis-py tests start target/debug/strata serve (STRATA_BIN overrides it): built with the
# test profile, which after `cargo test` is the binary the Rust tests ran (nothing to rebuild).
cargo build --profile test -p strata-cli --bin strata
# Panics the tests provoke on purpose print one line, not a backtrace.
RUST_BACKTRACE=0 "$venv/bin/python" -m pytest crates/strata-py/tests crates/strata-server/tests/python \
    -q -p no:cacheprovider
