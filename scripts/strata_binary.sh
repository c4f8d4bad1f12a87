# Sourced by the measurement scripts, not run: `strata_binary GIVEN [FEATURES]` prints the path of
# the strata binary a script is to run: GIVEN when it is not empty (e.g. a build of an earlier
# commit to compare), else the workspace's release build, built first (with the cargo features
# FEATURES when given, e.g. `peers`) in $CARGO_TARGET_DIR or the workspace's target/.
strata_binary() {
  local given=${1:-} features=${2:-} root
  if [ -n "$given" ]; then
    echo "$given"
    return
  fi
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cargo build --release -p strata-cli ${features:+--features "$features"} \
    --manifest-path "$root/Cargo.toml" >&2 || return
  echo "${CARGO_TARGET_DIR:-$root/target}/release/strata"
}
