#!/usr/bin/env bash
# A results script refuses a zeromini built from uncommitted changes (scripts/lib/prologue.sh:
# require_clean_build): committed numbers must be remade from a commit. Fake binaries print the
# first line of `zeromini --version` of a clean and of a dirty build.
set -u
. "$(dirname "$0")/../../scripts/lib/prologue.sh"
set +e
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '#!/bin/sh\necho "zeromini 0.1.0 (git %s)"\n' 95da69b69427 >"$dir/clean"
printf '#!/bin/sh\necho "zeromini 0.1.0 (git %s)"\n' 95da69b69427-dirty >"$dir/dirty"
chmod +x "$dir/clean" "$dir/dirty"
status() { (require_clean_build "$1") 2>"$dir/err"; echo $?; }
[[ $(status "$dir/clean") == 0 ]] || { echo "a clean build was refused"; exit 1; }
[[ $(status "$dir/dirty") == 2 ]] || { echo "a dirty build was not refused"; exit 1; }
grep -q "uncommitted changes" "$dir/err" || { echo "the refusal does not say why"; exit 1; }
[[ $(ALLOW_DIRTY=1 status "$dir/dirty") == 0 ]] || { echo "ALLOW_DIRTY=1 did not allow it"; exit 1; }
echo "clean_build_check: a dirty build is refused (exit 2), a clean one and ALLOW_DIRTY=1 pass"
