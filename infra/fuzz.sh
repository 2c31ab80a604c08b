#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer) of every decoder of untrusted bytes: each
# target under fuzz/fuzz_targets/ runs in turn, seeded from fuzz/corpus/<target>/ and, where
# the format has keywords, fuzz/dict/<target>.dict.
#
# Usage:
#   infra/fuzz.sh [MINUTES] [TARGET...]   a campaign: every target (or only the TARGETs named)
#                                         for MINUTES minutes each (default 20)
#   infra/fuzz.sh --bounded               the test command's step: every target for
#                                         FUZZ_BOUNDED_SECONDS (default 8) seconds, one per
#                                         core at a time (FUZZ_JOBS), about 1.5 minutes for
#                                         all of them on 2 cores
#   infra/fuzz.sh --build                 only build the targets (the test command does this
#                                         at low priority while the tests run)
#
# Prints, per target, the executions, the coverage of the final stats line (`cov:` edges,
# `ft:` features) and whether it crashed, as a table at the end. Any crash, hang (an input
# running past 10 s) or allocation past 2048 MB fails the script and prints the reproducer
# path; reproduce it with `cargo fuzz run --dev --sanitizer none --fuzz-dir fuzz
# --target-dir target/fuzz TARGET PATH`, then check it in as a regression test (README).
#
# Everything the runs write (build, grown corpora, logs, reproducers) lives under
# target/fuzz/, so the checked-in seeds never change and CI caches one folder.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

usage="usage: infra/fuzz.sh [MINUTES] [TARGET...] | --bounded | --build"
build_only=false
if [ "${1:-}" = "--build" ] && [ $# -eq 1 ]; then
  build_only=true
  seconds=0
  shift
elif [ "${1:-}" = "--bounded" ] && [ $# -eq 1 ]; then
  seconds="${FUZZ_BOUNDED_SECONDS:-8}"
  shift
elif [ $# -eq 0 ] || [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  seconds=$(( ${1:-20} * 60 ))
  shift $(( $# > 0 ? 1 : 0 ))
else
  echo "$usage" >&2
  exit 2
fi

# cargo-fuzz, pinned, built once per machine into the user's cache by infra/tools.sh.
fuzz_bin="$("$root/infra/tools.sh" cargo-fuzz)"
export PATH="$fuzz_bin:$PATH"

# The fuzz crate's own Cargo.lock pins its dependencies: `cargo fuzz` has no --locked, so a
# lock file that would have to change is refused here first.
cargo metadata --quiet --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null

known=()
while IFS= read -r target; do known+=("$target"); done < <(cargo fuzz list --fuzz-dir fuzz)
if [ $# -eq 0 ]; then
  targets=("${known[@]}")
else
  targets=()
  for target in "$@"; do
    if [[ " ${known[*]} " != *" $target "* ]]; then
      echo "error: there is no fuzz target named '$target'; the targets are: ${known[*]}" >&2
      echo "$usage" >&2
      exit 2
    fi
    targets+=("$target")
  done
fi

# The dev profile and no sanitizer keep the build short and need no nightly toolchain.
work="$root/target/fuzz"
fuzz=(--dev --sanitizer none --fuzz-dir fuzz --target-dir "$work")
echo "==> building the fuzz targets"
cargo fuzz build "${fuzz[@]}"
if [ "$build_only" = true ]; then
  exit 0
fi

# libFuzzer runs one target on one core, so the targets run FUZZ_JOBS at a time (by default
# one per core); each one's row is written to a file, and the table keeps the targets' order.
jobs="${FUZZ_JOBS:-$(nproc)}"
echo "==> fuzzing ${#targets[@]} targets for $seconds s each, $jobs at a time"

fuzz_one() { # target
  local target="$1" log status executions last cov ft result reproducer
  mkdir -p "$work/corpus/$target" "$work/artifacts/$target"
  log="$work/logs/$target.log"
  options=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
    -artifact_prefix="$work/artifacts/$target/")
  if [ -f "fuzz/dict/$target.dict" ]; then
    options+=(-dict="fuzz/dict/$target.dict")
  fi
  # New inputs go to the first (grown) corpus folder; the checked-in seeds are read only.
  corpora=("$work/corpus/$target")
  if [ -d "fuzz/corpus/$target" ]; then
    corpora+=("fuzz/corpus/$target")
  fi
  set +e
  cargo fuzz run "${fuzz[@]}" "$target" "${corpora[@]}" -- "${options[@]}" >"$log" 2>&1
  status=$?
  set -e
  # A target may print the bytes of an input, so the log is read as text whatever it holds.
  executions="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)"
  last="$(grep -aE '^#[0-9]+' "$log" | grep -a 'cov: ' | tail -n 1 || true)"
  cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")"
  ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")"
  if [ "$status" -eq 0 ]; then
    result="ok"
  else
    reproducer="$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -n 1)"
    result="FAILED (status $status)"
    {
      echo "error: fuzz target $target failed; log: $log"
      grep -aE '^(==[0-9]+== ERROR|thread .* panicked)' "$log" | head -n 3 || true
      echo "reproducer: ${reproducer:-none written (see the log)}"
    } >"$work/logs/$target.error"
  fi
  echo "$target|${executions:-?}|${cov:-?}|${ft:-?}|$result" >"$work/logs/$target.row"
  echo "$target: ${executions:-?} executions, cov ${cov:-?}, ft ${ft:-?}, $result"
}

mkdir -p "$work/logs"
running=0
for target in "${targets[@]}"; do
  rm -f "$work/logs/$target.row" "$work/logs/$target.error"
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

rows=()
crashed=0
for target in "${targets[@]}"; do
  if [ -f "$work/logs/$target.row" ]; then
    rows+=("$(cat "$work/logs/$target.row")")
  else
    rows+=("$target|?|?|?|FAILED (no result)")
  fi
  if [[ "${rows[-1]}" != *"|ok" ]]; then
    crashed=$((crashed + 1))
    if [ -f "$work/logs/$target.error" ]; then
      cat "$work/logs/$target.error"
    fi
  fi
done

echo
printf '%-20s %14s %8s %8s  %s\n' target executions cov ft result
for row in "${rows[@]}"; do
  IFS='|' read -r target executions cov ft result <<<"$row"
  printf '%-20s %14s %8s %8s  %s\n' "$target" "$executions" "$cov" "$ft" "$result"
done
if [ "$crashed" -ne 0 ]; then
  echo "error: $crashed of ${#targets[@]} fuzz targets failed"
  exit 1
fi
echo "${#targets[@]} fuzz targets, no crash, hang or over-limit allocation"
