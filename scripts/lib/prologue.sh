# shellcheck shell=bash
# What the shell scripts in scripts/ share, sourced first: strict mode, the repository root, the
# Python that runs the zeromini_tools package, and the revision their reports name.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Debian's python3 has h5py and matplotlib; a python3 first on PATH (a pyenv shim) may not.
python=/usr/bin/python3
[ -x "$python" ] || python=python3

# The revision a report names: git describe, "-dirty" with uncommitted changes.
revision() {
  git -C "$root" describe --always --dirty 2>/dev/null || echo unknown
}

# require_executable FILE: ends the script (exit 2) unless FILE, the zeromini it runs, is one.
require_executable() {
  local script=${0##*/}
  [ -x "$1" ] || { echo "${script%.sh}: $1: no such executable (ZEROMINI_BIN)" >&2; exit 2; }
}

# require_clean_build BIN: a committed result must come from a build of a commit, so that it can
# be made again: refuses a binary whose revision is "-dirty" (built from uncommitted changes)
# unless ALLOW_DIRTY=1.
require_clean_build() {
  local script=${0##*/} version
  version=$("$1" --version 2>/dev/null | head -n 1)
  [[ $version != *-dirty* || ${ALLOW_DIRTY:-0} == 1 ]] && return 0
  echo "${script%.sh}: $1 is $version: built from uncommitted changes, so its numbers could not" \
    "be made again from any commit. Commit and rebuild (or ALLOW_DIRTY=1 for a trial)" >&2
  exit 2
}

# tool MODULE ARGS...: runs zeromini_tools.MODULE (scripts/zeromini_tools) with $python.
tool() {
  PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}" "$python" -m "zeromini_tools.$1" "${@:2}"
}
