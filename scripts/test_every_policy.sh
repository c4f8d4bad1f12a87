#!/usr/bin/env bash
# Runs the engine's whole test suite once per compaction policy: every test that does not choose
# a policy itself gets the one STRATA_TEST_COMPACTION names, through `Options::default()` (the
# `test-policy-override` feature of the strata crate, a test hook). Tests that set their own
# policy run unchanged each time. About 4 minutes per policy on 2 cores.
#
#   scripts/test_every_policy.sh [POLICY...]   (default: all six)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
policies=("$@")
[ ${#policies[@]} -eq 0 ] && policies=(leveling leveling-dynamic tiering lazy-leveling garnering ecotune moose)
failed=()
log=$(mktemp)
for policy in "${policies[@]}"; do
  echo "== STRATA_TEST_COMPACTION=$policy"
  if STRATA_TEST_COMPACTION="$policy" cargo test -q --no-fail-fast -p strata --features test-policy-override \
      --manifest-path "$root/Cargo.toml" > "$log" 2>&1; then
    grep "test result" "$log" | awk '{p += $4; f += $6} END {print p " passed, " f " failed"}'
  else
    grep -E "^test .* FAILED|panicked at|^---- " "$log" | head -20
    failed+=("$policy")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed under: ${failed[*]}"
  exit 1
fi
echo "every policy passed"
