#!/usr/bin/env bash
# The agent's memory against the number of files (issue 31, "Performance"):
# peak RSS (/usr/bin/time -v) of `labrun-agent gen`, `change`, `verify` and
# `scan` (the streamed scan the host runs on a folder it pushes) on the
# `tiny-files` profile at two file counts, side by side, so that growth with
# the count shows. Target: every one under 64 MiB at each count.
# Also the speed of verify against `find -print0 | xargs -0 -P<cores>
# sha256sum` on the same tree (the largest count), cold page cache before
# each, as benches/agent-dataset.sh measures it. Target: ratio >= 1.0.
# Exits 1 when a target is missed.
#
# usage: benches/agent-memory-files.sh [SCALE...]   (default: 0.1 1, i.e.
#        100,000 and 1,000,000 files; 4 is 4 million, about 16 GB of disk:
#        a file of 1 B-4 KiB takes a 4 KiB block)
# env:   AGENT (default: the static agent of `make agent`),
#        SCRATCH_PARENT (default /var/tmp: the trees are written there),
#        LIMIT_MIB (default 64)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
agent=${AGENT:-$root/target/x86_64-unknown-linux-gnu/release/labrun-agent}
limit_mib=${LIMIT_MIB:-64}
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=(0.1 1)

if [ "$(id -u)" != 0 ]; then
  echo "agent-memory-files: needs root to drop the page cache (cold-cache timings)" >&2
  exit 2
fi
if [ ! -x /usr/bin/time ]; then
  echo "agent-memory-files: needs GNU time (/usr/bin/time; apt-get install time)" >&2
  exit 2
fi
if [ ! -x "$agent" ]; then
  echo "agent-memory-files: building the static agent (make agent)" >&2
  make -C "$root" agent >&2
fi

scratch=$(mktemp -d "${SCRATCH_PARENT:-/var/tmp}/labrun-bench-files.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

. "$(dirname "${BASH_SOURCE[0]}")/timing.sh"

# Runs the agent under /usr/bin/time -v; prints its peak RSS in MiB.
# Any exit but 0 (a verify that finds a difference included) is a failure.
peak() {
  local name=$1; shift
  if ! /usr/bin/time -v -o "$scratch/$name.time" "$agent" "$@" > "$scratch/$name.out" 2> "$scratch/$name.err"; then
    echo "agent-memory-files: labrun-agent $* failed:" >&2
    cat "$scratch/$name.out" "$scratch/$name.err" >&2
    exit 2
  fi
  awk '/Maximum resident set size/ { printf "%.1f", $NF / 1024 }' "$scratch/$name.time"
}

declare -A rss files
failed=0
last_tree=""
for s in "${scales[@]}"; do
  tree=$scratch/tree-$s
  gen_m=$scratch/gen-$s.jsonl
  changed_m=$scratch/changed-$s.jsonl
  scan_m=$scratch/scan-$s.jsonl
  rss[gen,$s]=$(peak "gen-$s" gen --profile tiny-files --scale "$s" --out "$tree" --manifest "$gen_m")
  rss[change,$s]=$(peak "change-$s" change --profile tiny-files --scale "$s" --dir "$tree" \
    --base-manifest "$gen_m" --manifest "$changed_m")
  rss[verify,$s]=$(peak "verify-$s" verify --manifest "$changed_m" --dir "$tree")
  rss[scan,$s]=$(peak "scan-$s" scan --dir "$tree" --manifest "$scan_m")
  # The streamed scan writes what change wrote, byte for byte.
  if ! cmp -s "$changed_m" "$scan_m"; then
    echo "agent-memory-files: scale $s: scan's manifest differs from change's" >&2
    failed=1
  fi
  files[$s]=$(($(wc -l < "$scan_m") - 1))
  # Keep only the largest tree (for the speed ratio): disk is the limit.
  if [ -n "$last_tree" ]; then rm -rf "$last_tree"; fi
  rm -f "$gen_m" "$scan_m"
  last_tree=$tree
  last_manifest=$changed_m
done

printf '\nagent peak RSS (MiB) by number of entries, tiny-files (target: each < %s MiB)\n' "$limit_mib"
printf '  %-8s' "command"
for s in "${scales[@]}"; do printf ' %14s' "${files[$s]}"; done
printf '\n'
for cmd in gen change verify scan; do
  printf '  %-8s' "$cmd"
  for s in "${scales[@]}"; do
    v=${rss[$cmd,$s]}
    mark=" "
    if awk -v v="$v" -v l="$limit_mib" 'BEGIN { exit !(v >= l) }'; then mark="!"; failed=1; fi
    printf ' %13s%s' "$v" "$mark"
  done
  printf '\n'
done

# Verify against find | xargs sha256sum on the largest tree, cold cache.
cold; t0=$(now)
"$agent" verify --manifest "$last_manifest" --dir "$last_tree" > "$scratch/verify-speed.out"
t1=$(now)
cold; t0b=$(now)
find "$last_tree" -type f -print0 | xargs -0 -P"$(nproc)" sha256sum > "$scratch/sums.out"
t1b=$(now)
agent_s=$(elapsed "$t0" "$t1")
ref_s=$(elapsed "$t0b" "$t1b")
ratio=$(awk -v a="$agent_s" -v r="$ref_s" 'BEGIN { printf "%.2f", r / a }')
ok=$(awk -v x="$ratio" 'BEGIN { print (x >= 1.0) ? "met" : "MISSED" }')
[ "$ok" = met ] || failed=1
printf '\nverify, cold cache, %s files: %ss; find|xargs -P%s sha256sum: %ss; ratio %sx (target >= 1.0: %s)\n' \
  "$(($(wc -l < "$scratch/sums.out")))" "$agent_s" "$(nproc)" "$ref_s" "$ratio" "$ok"
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$failed" != 0 ]; then
  echo "agent-memory-files: a target was missed (marked !, or the ratio above)" >&2
  exit 1
fi
