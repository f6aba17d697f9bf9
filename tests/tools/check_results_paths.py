#!/usr/bin/env python3
"""Fails when a committed result holds an absolute path: the data under results/ (CSV, JSON, TOML,
TSV and text logs, and the string attributes and datasets of HDF5 files) must not name
directories of the machine that made them (/work/..., /tmp/..., /home/...). The pages (*.md) are
not checked: they quote the exact commands, which may name scratch directories.

    check_results_paths.py REPO        exit 0 when clean, 1 listing each file:line and path
"""
import os
import re
import subprocess
import sys

TEXT = (".csv", ".json", ".toml", ".tsv", ".txt")
# A path that begins at the root: "/" then at least one directory, not inside a word or a
# relative path ("a/b", "tokens/s", "./x", "~/x" do not match).
ABSOLUTE = re.compile(r"(?<![\w.~/-])/(?:[\w.+-]+/)+[\w.+-]*")


def committed(repo):
    """The files under results/ that git tracks (every file there, outside a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "results"], capture_output=True,
                             text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.relpath(os.path.join(top, name), repo)
                for top, _, names in os.walk(os.path.join(repo, "results")) for name in names]


def text_findings(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            for match in ABSOLUTE.finditer(line):
                yield f"{number}", match.group(0)


def hdf5_findings(path):
    try:
        import h5py  # Debian's python3-h5py
    except ImportError:
        print(f"check_results_paths: h5py missing; {path} not checked", file=sys.stderr)
        return
    found = []

    def strings(name, obj):
        for key, value in obj.attrs.items():
            found.extend((f"{name or '/'}@{key}", m) for m in matches(value))
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "SOU" and obj.shape == ():
            found.extend((name, m) for m in matches(obj[()]))

    with h5py.File(path, "r") as f:
        strings("", f)
        f.visititems(strings)
    yield from found


def matches(value):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return ABSOLUTE.findall(value) if isinstance(value, str) else []


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    repo = argv[1]
    bad = []
    for name in committed(repo):
        path = os.path.join(repo, name)
        if name.endswith(TEXT):
            findings = text_findings(path)
        elif name.endswith(".h5"):
            findings = hdf5_findings(path)
        else:
            continue
        bad.extend(f"{name}:{where}: {found}" for where, found in findings)
    for line in bad:
        print(line)
    if bad:
        print(f"check_results_paths: {len(bad)} absolute path(s) under results/; committed "
              "results hold paths relative to the repository (scripts/collect.py writes them so)")
        return 1
    print("check_results_paths: no absolute path in the data under results/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
