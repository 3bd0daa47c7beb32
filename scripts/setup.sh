#!/usr/bin/env bash
# Install everything jupyter-store needs from the project's own files: npm packages, a
# project-local Python venv with Jupyter Server and JupyterLab, then build the TypeScript.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "Installing npm packages"
  # `npm install` rather than `npm ci`: npm 11 leaves the optional per-platform packages of
  # jest's resolver out of the lockfile, and `npm ci` then refuses it. The lockfile still pins
  # every version.
  npm install --no-audit --no-fund
fi

if ! cmp -s requirements.txt .venv/.installed-requirements.txt 2>/dev/null; then
  log "Creating the Python venv (.venv) with Jupyter Server and JupyterLab"
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.installed-requirements.txt
fi

log "Building the TypeScript packages"
npm run --silent build
