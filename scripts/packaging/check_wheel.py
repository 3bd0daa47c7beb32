"""Check a jupyter-store wheel before it is shipped, and describe it.

    python scripts/packaging/check_wheel.py [--forbid TEXT]... [--json] WHEEL

Fails (exit status 1, one line per problem) when the wheel lacks a file that the installed
command needs, carries something that must not ship (tests, TypeScript sources, source maps,
Python bytecode, dotfiles), or contains any TEXT given with --forbid (scripts/package.sh gives
the repository's absolute path and the build venv's) in a file name or in a file's bytes.
Prints a summary: files, sizes, and the largest parts; with --json, that summary and every
file name as JSON.
"""

import argparse
import json
import re
import sys
import zipfile

#: Files the installed package cannot work without.
REQUIRED = [
    "jupyter_store/__init__.py",
    "jupyter_store/__main__.py",
    "jupyter_store/server/package.json",
    "jupyter_store/server/lib/cli/main.js",
    "jupyter_store/server/static/landing.css",
    "jupyter_store/server/static/landing.js",
    "jupyter_store/server/python/jupyter_store_upstream/__init__.py",
    "jupyter_store/server/python/config/jupyter_server_config.d/jupyter_store_upstream.json",
    "jupyter_store/server/node_modules/@parcel/watcher-linux-x64-glibc/watcher.node",
    "jupyter_store/server/third-party-licenses.txt",
    "jupyter_store_upstream/__init__.py",
]
LABEXTENSION = "share/jupyter/labextensions/@jupyter-store/labextension/"
REQUIRED_DATA = [
    LABEXTENSION + "package.json",
    LABEXTENSION + "install.json",
    LABEXTENSION + "static/style.js",
    LABEXTENSION + "schemas/@jupyter-store/labextension/plugin.json",
    "etc/jupyter/jupyter_server_config.d/jupyter_store_upstream.json",
]

#: Names that never ship.
FORBIDDEN_NAMES = re.compile(
    r"(^|/)(tests?|__tests__|__pycache__|bench|ui-tests|\.[^/]+)(/|$)"
    r"|\.(spec|itest)\.[jt]s$|\.(map|pyc|pyo|tsbuildinfo)$|(?<!\.d)\.ts$"
)


def check(wheel, forbidden):
    problems = []
    with zipfile.ZipFile(wheel) as archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        data_prefix = next(
            (name.split("/", 2)[0] + "/data/" for name in names if ".data/data/" in name), None
        )
        present = set(names)
        for name in REQUIRED:
            if name not in present:
                problems.append(f"missing: {name}")
        for name in REQUIRED_DATA:
            if data_prefix is None or data_prefix + name not in present:
                problems.append(f"missing: <data>/{name}")
        for name in names:
            inner = name.split(".data/data/", 1)[-1]
            if FORBIDDEN_NAMES.search(inner):
                problems.append(f"must not ship: {name}")
        for info in infos:
            content = archive.read(info)
            for text in forbidden:
                if text in info.filename or text.encode() in content:
                    problems.append(f"{info.filename} contains {text!r}")
    parts = {}
    for info in infos:
        name = info.filename.split(".data/data/", 1)[-1]
        if name.startswith("jupyter_store/server/node_modules/"):
            key = "/".join(name.split("/")[:5])
        elif name.startswith("jupyter_store/server/"):
            key = "/".join(name.split("/")[:3])
        elif name.startswith("share/"):
            key = "/".join(name.split("/")[:5])
        else:
            key = name.split("/")[0]
        parts.setdefault(key, [0, 0])
        parts[key][0] += info.file_size
        parts[key][1] += info.compress_size
    summary = {
        "wheel": wheel,
        "files": len(infos),
        "size": sum(info.file_size for info in infos),
        "compressed": sum(info.compress_size for info in infos),
        "parts": dict(sorted(parts.items(), key=lambda item: -item[1][0])),
    }
    return problems, summary, names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel")
    parser.add_argument("--forbid", action="append", default=[], metavar="TEXT")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    options = parser.parse_args()
    problems, summary, names = check(options.wheel, [text for text in options.forbid if text])
    if options.json:
        print(json.dumps({**summary, "problems": problems, "names": names}, indent=1))
    else:
        kib = 1024
        print(
            f"{summary['wheel']}: {summary['files']} files, "
            f"{summary['size'] / kib / kib:.1f} MiB ({summary['compressed'] / kib / kib:.1f} MiB "
            "compressed)"
        )
        for key, (size, compressed) in list(summary["parts"].items())[:12]:
            print(f"  {size / kib:8.0f} KiB  ({compressed / kib:6.0f} KiB compressed)  {key}")
    for problem in problems:
        print(f"check_wheel: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
