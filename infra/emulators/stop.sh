#!/usr/bin/env bash
# Stop the emulators started by start.sh: the Java processes by pid, then each emulator's
# whole process group (the gcloud wrapper and anything else it spawned; the Cloud Storage
# emulator and the PDS are each one process, alone in its group).
set -uo pipefail

run="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.run"
[ -d "$run" ] || exit 0

for name in firestore pubsub storage pds; do
  if [ -f "$run/$name.java.pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] && kill "$pid" 2>/dev/null
    done < "$run/$name.java.pids"
  fi
  if [ -f "$run/$name.pgid" ]; then
    pgid="$(cat "$run/$name.pgid")"
    kill -TERM -- "-$pgid" 2>/dev/null
    for _ in $(seq 1 50); do
      pgrep -g "$pgid" >/dev/null 2>&1 || break
      sleep 0.1
    done
    kill -KILL -- "-$pgid" 2>/dev/null
  fi
  if [ -f "$run/$name.java.pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    done < "$run/$name.java.pids"
  fi
  rm -f "$run/$name.pgid" "$run/$name.java.pids"
done
rm -f "$run/env"
echo "emulators stopped"
