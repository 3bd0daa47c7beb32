"""Diff notebook pairs with Python nbdime: the oracle of the TypeScript diff engine.

Usage: python nbdime_oracle.py DIRECTORY [--rounds N]

DIRECTORY holds `manifest.json` (a list of pair names) and, for each name, `NAME.base.json` and
`NAME.remote.json`. Each notebook is read the way nbformat reads a file (multiline strings
joined), but without nbformat's other read-time changes (conversion, dropping transient keys),
so that both engines diff exactly the same values.

Without --rounds, writes `nbdime.json`: {name: diff}. With --rounds N, diffs each pair N times
and writes `timings.json`: {name: {"load_ms": [...], "diff_ms": [...]}}, where load is reading
and parsing both files and diff is `diff_notebooks` alone (nbdime's comparison caches emptied
before each round), and the diffs in `nbdime.json`.
"""

import argparse
import json
import os
import sys
import time

import nbdime
import nbformat
from nbdime import diff_notebooks
from nbdime.diff_utils import to_clean_dicts
from nbdime.diffing import notebooks as nbdime_notebooks
from nbformat.v4.rwbase import rejoin_lines


def forget_comparisons():
    """Empty nbdime's comparison caches (module-level `lru_cache`s), so that each timed round
    diffs the pair afresh, as a first diff of it would, instead of reusing the previous round's
    similarity answers."""
    nbdime_notebooks.compare_text_approximate.cache_clear()
    nbdime_notebooks._compare_mimedata_strings.cache_clear()


def load(path):
    with open(path, encoding="utf-8") as f:
        return rejoin_lines(nbformat.from_dict(json.load(f)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--rounds", type=int, default=0)
    args = parser.parse_args()

    with open(os.path.join(args.directory, "manifest.json"), encoding="utf-8") as f:
        names = json.load(f)

    def paths(name):
        return (
            os.path.join(args.directory, name + ".base.json"),
            os.path.join(args.directory, name + ".remote.json"),
        )

    diffs = {}
    timings = {}
    for name in names:
        base, remote = paths(name)
        loads, diff_times = [], []
        for _ in range(max(1, args.rounds)):
            forget_comparisons()
            started = time.perf_counter()
            a = load(base)
            b = load(remote)
            loaded = time.perf_counter()
            diff = diff_notebooks(a, b)
            done = time.perf_counter()
            loads.append((loaded - started) * 1000)
            diff_times.append((done - loaded) * 1000)
        diffs[name] = to_clean_dicts(diff)
        timings[name] = {"load_ms": loads, "diff_ms": diff_times}

    def write(file_name, key, value):
        with open(os.path.join(args.directory, file_name), "w", encoding="utf-8") as f:
            json.dump({"version": nbdime.__version__, key: value}, f)

    write("nbdime.json", "diffs", diffs)
    if args.rounds > 0:
        write("timings.json", "timings", timings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
