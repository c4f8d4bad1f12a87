#!/usr/bin/env bash
# Shows that the schedule-exploring tests (crates/strata/tests/schedules.rs) find the two
# concurrency bugs the coordination had, by putting each back in a scratch copy of HEAD (a
# detached git worktree in a temporary directory, removed at the end; this checkout is not
# touched) and running every scenario against it:
#
#   1. concurrent compact() hung: a new manual-compaction request cleared the answers not yet
#      taken, as the single shared result slot did (db/manual_compaction.rs, `issue`);
#   2. a worker between its pick and its registration registered a job whose inputs a full
#      compaction had removed meanwhile: the check at registration is skipped
#      (db/background.rs, `run_policy_compactions`, `inputs_exist`).
#
# For each bug it prints every scenario's outcome: "N schedules in S s" when none failed, or
# "schedule N of M failed" and the failure. It exits 1 if a bug went unfound by every scenario.
#
#   scripts/schedules_find_historic_bugs.sh [SCHEDULES]    # per scenario, default 10000
set -euo pipefail
cd "$(dirname "$0")/.."
schedules="${1:-10000}"
scratch="$(mktemp -d)"
copy="$scratch/strata"
cleanup() {
    git worktree remove --force "$copy" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT
git worktree add --detach --quiet "$copy" HEAD
# Build where the checkout builds unless told otherwise: only `strata` is rebuilt for the copy.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

# bug NAME FILE PYTHON-REPLACEMENT-OLD PYTHON-REPLACEMENT-NEW
run_with_bug() {
    local name="$1" file="$2" old="$3" new="$4"
    (cd "$copy" && git checkout --quiet -- .)
    python3 - "$copy/$file" "$old" "$new" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"{path}: the fix's line is not there once: {old!r}")
open(path, "w").write(text.replace(old, new))
EOF
    echo "== $name"
    local log="$scratch/$name.log"
    (cd "$copy" && STRATA_SCHEDULES="$schedules" cargo test --quiet -p strata --features shuttle \
        --test schedules -- --nocapture --test-threads 1 >"$log" 2>&1) || true
    grep -E "schedules in|failed after|panicked at .*schedules.rs|deadlock!|no background error:" \
        "$log" || true
    if ! grep -q "failed after" "$log"; then
        echo "$name: not found by any scenario"
        return 1
    fi
}

found=0
run_with_bug "shared-result-slot" crates/strata/src/db/manual_compaction.rs \
    "        self.issued += 1;" \
    "        self.answers.clear();
        self.issued += 1;" || found=1
run_with_bug "pick-then-register" crates/strata/src/db/background.rs \
    "if !inputs_exist(&job, &self.versions.current()) {" \
    "if false && !inputs_exist(&job, &self.versions.current()) {" || found=1
exit "$found"
