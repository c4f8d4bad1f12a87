#!/usr/bin/env bash
# The memtable's concurrent tests under ThreadSanitizer (data races) and AddressSanitizer
# (reads and writes outside live allocations, use after free): the skiplist's and memtable's
# unit tests (a writer inserting while two readers scan, among them) and the bank test of
# `crates/strata/tests/concurrency.rs` (writers and readers through the memtable while
# background threads flush and compact).
#
#   scripts/sanitize_memtable.sh              # thread, then address
#   scripts/sanitize_memtable.sh thread       # one of them
#
# Needs a nightly toolchain with rust-src (`rustup toolchain install nightly --component
# rust-src`): the standard library is rebuilt with the sanitizer (`-Zbuild-std`), which
# ThreadSanitizer needs to see std's synchronisation. Prints that it skipped, and exits 0,
# when that toolchain is missing. Builds go to $CARGO_TARGET_DIR/sanitize-NAME (or
# target/sanitize-NAME), one per sanitizer, so switching does not rebuild the other.
# Exits 1 on any report (the sanitizers abort the test binary on the first one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sanitizers=("$@")
if [[ $# -eq 0 ]]; then
    sanitizers=(thread address)
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "sanitize_memtable.sh: SKIPPED: no nightly toolchain (rustup toolchain install nightly --component rust-src)"
    exit 0
fi
sysroot=$(rustc +nightly --print sysroot)
if [[ ! -d "$sysroot/lib/rustlib/src/rust/library" ]]; then
    echo "sanitize_memtable.sh: SKIPPED: the nightly toolchain has no rust-src (rustup +nightly component add rust-src)"
    exit 0
fi
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
for sanitizer in "${sanitizers[@]}"; do
    case "$sanitizer" in
        thread | address) ;;
        *)
            echo "unknown sanitizer '$sanitizer' (thread or address)" >&2
            exit 2
            ;;
    esac
    # halt_on_error: the first report fails the run; TSan's second_deadlock_stack names both
    # lock orders of a potential deadlock.
    sanitized() {
        RUSTFLAGS="-Zsanitizer=$sanitizer" RUSTDOCFLAGS="-Zsanitizer=$sanitizer" \
            TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
            ASAN_OPTIONS="halt_on_error=1 detect_leaks=1" \
            CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/sanitize-$sanitizer" \
            cargo +nightly test -Zbuild-std --target "$host" --manifest-path "$root/Cargo.toml" \
            -p strata "$@"
    }
    echo "== $sanitizer sanitizer: the memtable's unit tests (skiplist, arena, memtable)"
    sanitized --lib -- memtable::
    echo "== $sanitizer sanitizer: crates/strata/tests/concurrency.rs"
    sanitized --test concurrency
done
echo "sanitize_memtable.sh: ${sanitizers[*]}: no report"
