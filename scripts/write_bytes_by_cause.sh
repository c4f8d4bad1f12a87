#!/usr/bin/env bash
# Bytes written per user byte, by cause (flush, level-0 merges, merges into each level, full
# compactions, filter rebuilds), Strata against RocksDB in the same run:
#   1. a load and a mixed phase at small settings: 400,000 entries of 16-byte keys and 256-byte
#      values, 1 MiB write buffers, 2 MiB files, T = 4, direct reads; the mixed phase is the
#      Mnemosyne paper's type-II mix (10 updates in 41 operations, half the lookups empty);
#   2. fillrandom at the bench's defaults (1,000,000 entries of 16 + 100 bytes).
# Byte counts do not depend on the machine's load (which jobs run depends a little on timing);
# the ops/s the bench prints beside them do.
#
#   scripts/write_bytes_by_cause.sh [RUNS] [OPERATIONS]      (defaults 1, 200000)
#
# Needs a build with the peers (README: "Peers"); set CARGO_TARGET_DIR to reuse one, or STRATA to
# run a given binary.
set -euo pipefail
runs=${1:-1}
operations=${2:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
if [ -z "${STRATA:-}" ]; then
  cargo build --release -p strata-cli --features peers --manifest-path "$root/Cargo.toml" >&2
  STRATA="${CARGO_TARGET_DIR:-$root/target}/release/strata"
fi
echo "== load and mnemosyne-ii:0.5, 400,000 x (16 + 256) B, 1 MiB buffers, 2 MiB files, T = 4, direct reads"
"$STRATA" bench --engines strata,rocksdb --runs "$runs" --workloads load,mnemosyne-ii:0.5 \
  --num 400000 --reads "$operations" --key-size 16 --value-size 256 --write-buffer-bytes 1MiB \
  --target-file-bytes 2MiB --size-ratio 4 --direct-reads --settle --json "$out/small.json" > "$out/small.txt"
grep -E '^(== |--- |  writes:)|^[a-z].*(load|mnemosyne)' "$out/small.txt" || cat "$out/small.txt"
echo "== fillrandom at the bench's defaults"
"$STRATA" bench --engines strata,rocksdb --runs "$runs" --workloads fillrandom --settle \
  --json "$out/defaults.json" > "$out/defaults.txt"
grep -E '^(== |--- |  writes:)|^[a-z].*fillrandom' "$out/defaults.txt" || cat "$out/defaults.txt"
echo "(JSON and full reports in $out)"
