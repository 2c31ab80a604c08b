#!/usr/bin/env bash
# The full test suite, as CI runs it: formatting, lints, the JSON-Schema drift check and every
# test (both storage backends and both bus backends, against emulators this script starts and
# stops). Usage: infra/test.sh [extra cargo test arguments]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

echo "==> JSON Schemas match the types"
cargo run --quiet --locked -p harmonia-contracts --bin harmonia-schemas -- --check

echo "==> Terraform checks"
if command -v terraform >/dev/null 2>&1; then
  terraform fmt -check -recursive terraform
else
  echo "terraform is not installed: skipping terraform fmt -check (the HCL consistency tests still run)"
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

echo "==> building the function binaries (the cross-process tests run them)"
cargo build --workspace --bins --locked

echo "==> cargo test"
cargo test --workspace --all-features --locked "$@"
