#!/usr/bin/env bash
# The console's browser code, from the npm packages package-lock.json pins (installed once per
# lockfile into the user's cache; only the npm registry is contacted).
#
#   ./build.sh bundle    bundle src/a2ui.js (the official A2UI renderer with Harmonia's catalog)
#                        with esbuild into dist/a2ui.js, with its licence notices beside it
#   ./build.sh schemas   copy the A2UI v0.9 message and basic-catalog JSON Schemas the renderer
#                        ships (@a2ui/web_core) into schemas/a2ui/v0_9/upstream/
#   ./build.sh check     fail when the checked-in bundle or schemas differ from a rebuild
#   ./build.sh modules   print the folder of the installed packages (the browser tests' driver)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:-}"

modules="$("$root/infra/tools.sh" console)"

upstream="$modules/node_modules/@a2ui/web_core/src/v0_9/schemas"
schemas=(server_to_client.json common_types.json catalogs/basic/catalog.json)
copy_schemas() {
  local into="$1"
  mkdir -p "$into"
  for s in "${schemas[@]}"; do
    cp "$upstream/$s" "$into/$(echo "$s" | sed 's#catalogs/basic/catalog.json#basic_catalog.json#')"
  done
  cp "$modules/node_modules/@a2ui/web_core/LICENSE" "$into/LICENSE"
}

# Built in a staging folder of its own with the cached packages beside it, so a rebuild
# anywhere sees the same relative paths and writes the same bytes.
bundle_into() {
  local into="$1" stage
  stage="$(mktemp -d)"
  cp -r "$here/src" "$stage/src"
  ln -s "$modules/node_modules" "$stage/node_modules"
  mkdir -p "$into"
  (cd "$stage" && ./node_modules/.bin/esbuild src/a2ui.js --bundle --format=esm --minify --target=es2022 \
    --legal-comments=external --log-level=warning --outfile="$into/a2ui.js")
  rm -rf "$stage"
}

case "$mode" in
  modules)
    echo "$modules/node_modules"
    ;;
  bundle)
    bundle_into "$here/dist"
    echo "bundled infra/console/dist/a2ui.js ($(wc -c <"$here/dist/a2ui.js") bytes, sha256 $(sha256sum "$here/dist/a2ui.js" | cut -c1-16))"
    ;;
  schemas)
    copy_schemas "$root/schemas/a2ui/v0_9/upstream"
    echo "copied the A2UI v0.9 schemas of @a2ui/web_core $(node -p "require('$modules/node_modules/@a2ui/web_core/package.json').version") into schemas/a2ui/v0_9/upstream"
    ;;
  check)
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    copy_schemas "$tmp/schemas"
    if ! diff -r "$tmp/schemas" "$root/schemas/a2ui/v0_9/upstream" >&2; then
      echo "error: schemas/a2ui/v0_9/upstream differs from the pinned @a2ui/web_core: run infra/console/build.sh schemas" >&2
      exit 1
    fi
    bundle_into "$tmp/dist"
    if ! diff -r "$tmp/dist" "$here/dist" >/dev/null; then
      echo "error: infra/console/dist differs from a rebuild of infra/console/src: run infra/console/build.sh bundle" >&2
      exit 1
    fi
    echo "the checked-in A2UI schemas and renderer bundle match the pinned packages"
    ;;
  *)
    echo "usage: $0 bundle|schemas|check|modules" >&2
    exit 2
    ;;
esac
