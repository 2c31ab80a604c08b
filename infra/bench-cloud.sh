#!/usr/bin/env bash
# Over the Firestore and Pub/Sub emulators (started and stopped here), offline model:
# - p50 wall time of one job end to end across processes, every function its own process
#   (`BENCH_JOBS`, default 7);
# - a stage function's cold start: spawn to first served request, and idle RSS
#   (`BENCH_STARTS`, default 7), ending with `{"bench":"cold_start",...}`;
# - last, the load run: `BENCH_CLOUD_JOBS` sources (default 100) submitted at once over the
#   operator API, both gates decided and every post published now over the API, each verified
#   in the sandbox; jobs per second, per-job p50/p95/p99 from submit to verified (the
#   operator's think time excluded), Pub/Sub messages, Firestore reads, writes, deletes and
#   queries per job (counted by the functions, exported over OTLP), and the cost per 1,000 jobs
#   at the list prices of infra/prices.toml (the model apart). With `BENCH_CLOUD_CHAOS=1` a
#   random function process is killed (SIGKILL) every `BENCH_CLOUD_CHAOS_SECS` seconds
#   (default 3) and started again; the run fails unless every job is verified exactly once,
#   with one post each and no dead letter but poison. It ends with `{"bench":"cloud_load",...}`.
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
# The functions a run started go with it, also when it is interrupted before it stops them.
trap '"$root/infra/emulators/stop.sh" >/dev/null 2>&1 || true; pkill -KILL -f "/$HARMONIA_BIN_PROFILE/harmonia-" || true' EXIT
"$root/infra/emulators/start.sh"
# shellcheck source=/dev/null
source "$root/infra/emulators/.run/env"
cargo test --locked -p harmonia-e2e --features e2e --test e2e bench_wall_time_of_one_job_across_processes -- --ignored --nocapture
cargo test --locked -p harmonia-e2e --features e2e --test e2e bench_cold_start_of_a_stage_function -- --ignored --nocapture
cargo test --locked -p harmonia-e2e --features e2e --test e2e bench_cloud_load -- --ignored --nocapture
