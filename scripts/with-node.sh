#!/usr/bin/env bash
# Run a command on the project's Node (see scripts/node-env.sh): `bash scripts/with-node.sh CMD…`.
# The npm scripts that run code go through it, so that `npm test` or `npm run bench:gateway` typed
# in any shell runs on the venv's Node 24, whichever node and npm started them.
set -euo pipefail
# shellcheck source=scripts/node-env.sh
. "$(dirname "$0")/node-env.sh"
exec "$@"
