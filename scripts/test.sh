#!/usr/bin/env bash
# Set up, then run every check: lint, formatting, unit tests and the integration tests against
# a real Jupyter Server, JupyterLab, Chromium, S3 servers (MinIO, versitygw, with the MinIO client
# mc) and the Jupyter tools of the ecosystem venv, then the JupyterLab extension's UI tests (Galata
# and Playwright driving Chromium, behind the gateway, with MinIO).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser --object-servers --ecosystem
# Node, npm and npx are the venv's (Node 24) for every command below and what it starts.
# shellcheck source=scripts/node-env.sh
. scripts/node-env.sh
printf '\033[1m==> %s\033[0m\n' "Linting"
npm run --silent lint
printf '\033[1m==> %s\033[0m\n' "Running the tests"
npx jest --ci
printf '\033[1m==> %s\033[0m\n' "Running the JupyterLab UI tests"
npx playwright test --config ui-tests/playwright.config.ts
