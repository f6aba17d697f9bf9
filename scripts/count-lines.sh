#!/bin/bash
# Lines of C++ (.cpp and .hpp) in the core (src/ outside src/modules/) and in each module, the
# measure ARCHITECTURE.md quotes. Run from anywhere in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
count() { find "$@" -name '*.[ch]pp' -print0 | xargs -0 cat | wc -l; }
printf '%-26s %6s\n' core "$(find src -path src/modules -prune -o -name '*.[ch]pp' -print0 |
  xargs -0 cat | wc -l)"
for layer in src/*/; do
  layer=${layer%/}
  [[ $layer == src/modules || -z $(find "$layer" -name '*.[ch]pp' -print -quit) ]] && continue
  printf '  %-24s %6s\n' "${layer#src/}" "$(count "$layer")"
done
for module in src/modules/*/; do
  module=${module%/}
  printf '%-26s %6s\n' "module ${module#src/modules/}" "$(count "$module")"
done
