#!/usr/bin/env bash
# Set up, then run the main job: JupyterLab behind the jupyter-store gateway.
#   bash scripts/start.sh                 # on a new temporary root directory
#   bash scripts/start.sh --root-dir DIR  # on DIR; any `jupyter-store lab` flag works (see --help)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

args=("$@")
# A new temporary root unless one was given, so that a first try touches nothing of the user's.
if [[ " $* " != *" --root-dir "* && " $* " != *" --root-dir="* && " $* " != *" -h "* && " $* " != *" --help "* ]]; then
  root="$(mktemp -d "${TMPDIR:-/tmp}/jupyter-store-root-XXXXXX")"
  args=(--root-dir "$root" "${args[@]}")
fi
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
if [ "$(id -u)" = 0 ]; then
  args=(--allow-root "${args[@]}")
fi
# The project's venv provides jupyter (and so JupyterLab and the kernels) to the gateway, and its
# Node 24, first on PATH, runs the gateway and whatever Jupyter and the kernels start with `node`.
export PATH="$PWD/.venv/bin:$PATH"
# shellcheck source=scripts/node-env.sh
. scripts/node-env.sh
exec node packages/server/lib/cli/main.js lab "${args[@]}"
