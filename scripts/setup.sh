#!/usr/bin/env bash
# Install everything jupyter-store needs from the project's own files: npm packages, a
# project-local Python venv with Jupyter Server and JupyterLab, with --browser Debian's chromium,
# then build the TypeScript.
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

# The browser tests drive Debian's chromium through playwright-core (no browser download);
# only the test command asks for it (--browser).
if [ "${1:-}" = "--browser" ] && [ ! -e /usr/bin/chromium ]; then
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

log "Building the TypeScript packages"
npm run --silent build
