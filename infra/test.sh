#!/usr/bin/env bash
# The full test suite, as CI runs it: formatting, lints, the JSON-Schema drift check, the
# dependency policy (cargo deny), the A2UI schemas and renderer bundle against a rebuild, and every test (both storage backends and both bus backends,
# against emulators this script starts and stops), then a bounded run of every fuzz target
# (infra/fuzz.sh --bounded). The last line is the total over every test harness run:
# `N passed, N failed, N skipped`. Usage: infra/test.sh [extra cargo test arguments]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

echo "==> cargo deny (licenses, bans, sources)"
# Built by this script into the user's cache (pinned, so every run checks with the same rules),
# once per machine: a fresh clone reuses it.
deny_root="${XDG_CACHE_HOME:-$HOME/.cache}/harmonia/tools/cargo-deny-0.20.2"
deny="$deny_root/bin/cargo-deny"
if [ ! -x "$deny" ]; then
  echo "cargo-deny is not installed: building it into $deny_root (once per machine; a few minutes)"
  cargo install --quiet --locked cargo-deny --version 0.20.2 --root "$deny_root"
fi
"$deny" check --hide-inclusion-graph licenses bans sources

echo "==> JSON Schemas match the types"
cargo run --quiet --locked -p harmonia-contracts --bin harmonia-schemas -- --check

echo "==> Terraform checks"
if command -v terraform >/dev/null 2>&1; then
  terraform fmt -check -recursive terraform
  "$root/infra/terraform-variables.sh"
else
  echo "terraform is not installed: skipping terraform fmt -check and the variable validation cases (the HCL consistency tests still run)"
fi
if [ ! -x .venv/bin/checkov ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check checkov==3.3.30
fi
.venv/bin/checkov -d terraform --framework terraform --skip-download --quiet --compact

echo "==> starting the Firestore and Pub/Sub emulators"
trap '"$root/infra/emulators/stop.sh" >/dev/null 2>&1 || true' EXIT
"$root/infra/emulators/start.sh"
# shellcheck source=/dev/null
source "$root/infra/emulators/.run/env"

echo "==> the A2UI schemas and the console's renderer bundle match a rebuild from the pinned npm packages"
# After the emulators: their script installs Node.js and npm when they are missing.
"$root/infra/console/build.sh" check

echo "==> the browser for the console's tests (Debian's Chromium) and their driver (playwright-core)"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Chromium is not installed: installing it from Debian's packages (about 30 s)"
    apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null; } || {
      echo "error: apt-get could not install chromium" >&2
      exit 1
    }
  else
    echo "error: the console's browser tests need Chromium (apt-get install chromium)" >&2
    exit 1
  fi
fi
HARMONIA_CHROMIUM="$(command -v chromium)"
HARMONIA_CONSOLE_MODULES="$("$root/infra/console/build.sh" modules)"
export HARMONIA_CHROMIUM HARMONIA_CONSOLE_MODULES

echo "==> building the function binaries (the cross-process tests run them)"
cargo build --workspace --bins --locked

echo "==> cargo test"
# Snapshot tests compare with the checked-in snapshots and never write new ones here.
export INSTA_UPDATE=no
log="$(mktemp)"
trap 'rm -f "$log"; "$root/infra/emulators/stop.sh" >/dev/null 2>&1 || true' EXIT
# --no-fail-fast: one failing test binary must not hide the results of the others.
set +e
cargo test --workspace --all-features --locked --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# Every harness (unit, integration and doc tests) prints one `test result:` line; sum them.
summary="$(awk '
  /^test result: / {
    for (i = 1; i < NF; i++) {
      if ($(i + 1) ~ /^passed/) passed += $i
      if ($(i + 1) ~ /^failed/) failed += $i
      if ($(i + 1) ~ /^ignored/) skipped += $i
    }
  }
  END { printf "%d passed, %d failed, %d skipped", passed, failed, skipped }
' "$log")"
if [ "$status" -ne 0 ]; then
  echo "error: cargo test exited with status $status"
fi

echo "==> fuzzing every decoder of untrusted bytes (bounded: about 2-3 minutes)"
# After the tests, so a decoder that fails its own tests is reported by them first. A crash,
# hang or over-limit allocation fails the command and prints the reproducer's path.
set +e
"$root/infra/fuzz.sh" --bounded
fuzz_status=$?
set -e
if [ "$fuzz_status" -ne 0 ]; then
  echo "error: the bounded fuzz step failed (status $fuzz_status)"
  if [ "$status" -eq 0 ]; then
    status=$fuzz_status
  fi
fi
echo "$summary"
exit "$status"
