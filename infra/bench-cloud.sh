#!/usr/bin/env bash
# Over the Firestore and Pub/Sub emulators (started and stopped here), offline model:
# - p50 wall time of one job end to end across processes, every function its own process
#   (`BENCH_JOBS`, default 7);
# - a stage function's cold start: spawn to first served request, and idle RSS
#   (`BENCH_STARTS`, default 7), ending with `{"bench":"cold_start",...}`.
# Both run the binaries the container image ships, built as infra/Dockerfile builds them:
# `--profile image` (release, thin LTO, one codegen unit, stripped), not position-independent,
# for x86_64 Linux named as the target, with the skills embedded.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target=x86_64-unknown-linux-gnu
# The `harmonia` command with its `cloud` feature too: the runs bootstrap their workspace with
# `harmonia first-admin` (the image itself ships only the functions).
RUSTFLAGS="-C relocation-model=static" cargo build --profile image --target "$target" --workspace --bins --locked \
  --features harmonia/cloud
export HARMONIA_BIN_PROFILE="$target/image"
trap '"$root/infra/emulators/stop.sh" >/dev/null 2>&1 || true' EXIT
"$root/infra/emulators/start.sh"
# shellcheck source=/dev/null
source "$root/infra/emulators/.run/env"
cargo test --locked -p harmonia-e2e --features e2e --test e2e bench_wall_time_of_one_job_across_processes -- --ignored --nocapture
cargo test --locked -p harmonia-e2e --features e2e --test e2e bench_cold_start_of_a_stage_function -- --ignored --nocapture
