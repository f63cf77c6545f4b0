#!/usr/bin/env bash
# `make site`: the project's own site, from the runs committed under docs/.
# Every committed pack is imported into a throwaway store (a variants run
# as each of its variants' runs), then
# `labrun site` writes the site to OUT (an earlier site there is replaced;
# any other folder is refused).
# Usage: scripts/site.sh LABRUN OUT
set -euo pipefail
labrun=$1
out=$2
cd "$(dirname "$0")/.."
store=$(mktemp -d)
trap 'rm -rf -- "$store"' EXIT
db="$store/runs.sqlite"
while IFS= read -r -d '' pack; do
  if err=$("$labrun" import "$pack" --db "$db" 2>&1 >/dev/null); then
    echo "imported $pack"
  else
    printf '%s\n' "$err" >&2
    exit 1
  fi
done < <(find docs -name '*.tar.gz' -type f -print0 | sort -z)
"$labrun" site "$out" --db "$db"
