"""A Jupyter Server extension that tells the jupyter-store gateway what this server really loads.

The gateway answers Jupyter's contents API itself unless something on the Python side replaces
or consumes Python's contents manager (jupytext, jupyter-fs, collaboration rooms, save hooks).
Its ``contents_backend = auto`` asks ``GET {base_url}api/store-upstream`` once at start-up and
decides from the answer, rather than guessing from what is installed.

The gateway puts this package on the server's ``PYTHONPATH`` when it starts Jupyter itself; the
extension takes that entry out again as it loads, so that kernels and terminals never see it.
"""

import json
import os
import sys

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

#: The contents managers that behave as the gateway's own (it reproduces them, byte for byte).
STOCK_CONTENTS_MANAGERS = {
    "jupyter_server.services.contents.filemanager.FileContentsManager",
    "jupyter_server.services.contents.filemanager.AsyncFileContentsManager",
    "jupyter_server.services.contents.largefilemanager.LargeFileManager",
    "jupyter_server.services.contents.largefilemanager.AsyncLargeFileManager",
}

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _jupyter_server_extension_points():
    return [{"module": "jupyter_store_upstream"}]


def _qualified_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def describe(serverapp):
    """What the gateway needs to know: the contents manager, its hooks, the extensions."""
    manager = serverapp.contents_manager
    manager_class = _qualified_name(type(manager))
    extensions = {}
    for name, package in serverapp.extension_manager.extensions.items():
        extensions[name] = bool(package.enabled)
    return {
        "contents_manager_class": manager_class,
        "contents_manager_is_stock": manager_class in STOCK_CONTENTS_MANAGERS,
        "contents_manager_bases": [_qualified_name(cls) for cls in type(manager).__mro__],
        "pre_save_hook": getattr(manager, "pre_save_hook", None) is not None,
        "post_save_hook": getattr(manager, "post_save_hook", None) is not None,
        "extensions": extensions,
        "root_dir": getattr(manager, "root_dir", None),
    }


class UpstreamHandler(APIHandler):
    """``GET {base_url}api/store-upstream``: :func:`describe` as JSON."""

    @web.authenticated
    def get(self):
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(describe(self.serverapp)))


def _forget_our_path():
    """Take this package's directory out of PYTHONPATH, and its config directory and the
    gateway's private one (which held the token) out of JUPYTER_CONFIG_PATH, so that kernels do
    not inherit them."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [entry for entry in entries if entry and os.path.abspath(entry) != _PACKAGE_DIR]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)
    config_entries = os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)
    ours = {os.path.join(_PACKAGE_DIR, "config")}
    private = os.environ.pop("JUPYTER_STORE_PRIVATE_CONFIG_DIR", "")
    if private:
        ours.add(os.path.abspath(private))
    kept_config = [e for e in config_entries if e and os.path.abspath(e) not in ours]
    if kept_config:
        os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(kept_config)
    else:
        os.environ.pop("JUPYTER_CONFIG_PATH", None)


def _load_jupyter_server_extension(serverapp):
    _forget_our_path()
    route = url_path_join(serverapp.web_app.settings["base_url"], "api/store-upstream")
    serverapp.web_app.add_handlers(".*$", [(route, UpstreamHandler)])
    serverapp.log.debug("jupyter_store_upstream | %s", sys.modules[__name__].__file__)
