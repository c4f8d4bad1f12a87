#!/usr/bin/env bash
# The tests of the engine's `unsafe` that Miri can run, under Miri: the skiplist's and its
# arena's unit tests (`memtable::skiplist`, a writer beside two scanning readers among them), the
# memtable's (`memtable::tests`, which reach the skiplist through `MemTable`, a proptest among
# them; not the key filter's, which has no `unsafe` and is minutes of hashing under Miri) and the
# test allocator's (`counting_allocator`). Miri reports undefined behaviour: an access outside an
# allocation or after it is freed, a data race, a read of uninitialised memory, and an access
# through a pointer the aliasing rules (Stacked Borrows; Tree Borrows with --long) no longer
# allow.
#
#   scripts/miri_memtable.sh          # Stacked Borrows, one schedule (what scripts/test_all.sh runs)
#   scripts/miri_memtable.sh --long   # also Tree Borrows, and 8 scheduler seeds of the
#                                     # concurrent test under each model
#
# Not run under Miri: the `unsafe` of `env/fault.rs` (kill(2) of the process itself: Miri has no
# signals) and counting_allocator's `malloc_usable_size` (a glibc call Miri does not have; under
# Miri the allocator counts requested sizes instead). valgrind's memcheck (scripts/
# reliability_long.sh) and scripts/sanitize_memtable.sh run the same tests natively.
#
# Miri flags: -Zmiri-permissive-provenance, because the skiplist turns node addresses read from
# its links back into pointers (`ptr::with_exposed_provenance`, the module documentation says
# why): the flag silences Miri's warning about that, and Miri still checks every such access
# against the provenance the arena exposed. Under Miri the arena's chunks are 256 words instead
# of 1 MiB and the tests use fewer entries (`cfg(miri)`), so that they finish in minutes.
#
# Needs a nightly toolchain with the miri and rust-src components (`rustup toolchain install
# nightly --component miri,rust-src`). When `cargo +nightly miri` is missing it prints that the
# step is SKIPPED and why, and exits 0; any report of undefined behaviour exits non-zero. Builds
# go to $CARGO_TARGET_DIR/miri (or target/miri).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
long=false
if [[ "${1:-}" == "--long" ]]; then
    long=true
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri_memtable.sh: Miri step SKIPPED: no 'cargo +nightly miri' on this machine" \
        "(rustup toolchain install nightly --component miri,rust-src)"
    exit 0
fi
# Miri's own standard library is built once per toolchain (under a minute) and cached.
if ! setup_log=$(cargo +nightly miri setup 2>&1); then
    echo "$setup_log" | tail -5
    echo "miri_memtable.sh: Miri step SKIPPED: 'cargo +nightly miri setup' failed (rust-src" \
        "missing and not downloadable? rustup +nightly component add rust-src)"
    exit 0
fi
run() {
    local flags=$1
    shift
    echo "== Miri ($flags): $*"
    MIRIFLAGS="-Zmiri-permissive-provenance $flags" \
        cargo +nightly miri test --manifest-path "$root/Cargo.toml" -p strata --lib -- "$@"
}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
run "" memtable::skiplist:: memtable::tests:: counting_allocator::
if $long; then
    run "-Zmiri-tree-borrows" memtable::skiplist:: memtable::tests:: counting_allocator::
    concurrent=memtable::skiplist::tests::readers_see_whole_entries_in_order_while_a_writer_inserts
    run "-Zmiri-many-seeds=0..8" "$concurrent" --exact
    run "-Zmiri-tree-borrows -Zmiri-many-seeds=0..8" "$concurrent" --exact
fi
echo "miri_memtable.sh: no undefined behaviour found"
