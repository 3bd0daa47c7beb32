#!/usr/bin/env bash
# Set up, then run the main job: the jupyter-store server on a temporary root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node packages/server/lib/cli/main.js contents "$@"
