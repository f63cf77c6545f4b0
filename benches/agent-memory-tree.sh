#!/usr/bin/env bash
# The agent's memory on a real tree against the number of files (issue 31,
# "Performance"): the agent's peak resident memory (its VmHWM, read while it
# runs) over a whole `labrun-agent run` of the published cycle on a user's
# folder (private, the default: its paths hashed in the evidence), read in
# place, with a stand-in tool made of `cp` (whose own memory grows with the
# files too: /usr/bin/time -v's figure, the largest of the agent and its
# tools, is printed beside). The folder is the
# `tiny-files` profile at each scale, side by side, so that growth with the
# count shows: bytes per file = (peak at the larger count - peak at the
# smaller) / (files between them).
#
# What it runs per scale: the pristine tree scanned, a copy per tool cycle,
# the seeded change of any tree planned from the manifest and applied, a
# backup (cp -a), a restore, and the restore verified against the changed
# tree's manifest. Target: under 64 MiB at each count. Exits 1 when missed.
#
# usage: benches/agent-memory-tree.sh [SCALE...]   (default: 0.1 1, i.e.
#        100,000 and 1,000,000 files; each needs about 5x the tree's
#        ~4.4 KiB per file on disk: the tree, the agent's copy, the full and
#        the incremental backup, the restore: 22 GB at 1 million)
# env:   AGENT (default: the static agent of `make agent`),
#        SCRATCH_PARENT (default /var/tmp), LIMIT_MIB (default 64),
#        SCRATCH_FS=xfs (as root; needs mkfs.xfs, from xfsprogs): the run on
#        a loop-mounted XFS of 1 KiB blocks with reflinks, a sparse file in
#        SCRATCH_PARENT, where the copies (the agent's and cp's
#        --reflink=auto) share the tree's blocks: 4 million files then take
#        about 27 GB instead of about 90. The agent does the same work on it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
agent=${AGENT:-$root/target/x86_64-unknown-linux-gnu/release/labrun-agent}
limit_mib=${LIMIT_MIB:-64}
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=(0.1 1)

if [ ! -x /usr/bin/time ]; then
  echo "agent-memory-tree: needs GNU time (/usr/bin/time; apt-get install time)" >&2
  exit 2
fi
if [ ! -x "$agent" ]; then
  echo "agent-memory-tree: building the static agent (make agent)" >&2
  make -C "$root" agent >&2
fi
schema=$(sed -n 's/^pub const SCHEMA_VERSION: u32 = \([0-9]*\);/\1/p' "$root/guest/evidence/src/lib.rs")
[ -n "$schema" ] || { echo "agent-memory-tree: no SCHEMA_VERSION in guest/evidence/src/lib.rs" >&2; exit 2; }

scratch=$(mktemp -d "${SCRATCH_PARENT:-/var/tmp}/labrun-bench-tree.XXXXXX")
cleanup() {
  # A run cut short: the agent stops its tool and leaves; then the XFS is free.
  if [ -n "${timer:-}" ] && kill -0 "$timer" 2>/dev/null; then
    pkill -TERM -P "$timer" -x labrun-agent || true
    wait "$timer" 2>/dev/null || true
  fi
  if mountpoint -q "$scratch/fs" 2>/dev/null; then umount "$scratch/fs"; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Where the trees and the runs go: the scratch folder, or an XFS mounted in it.
place=$scratch
case "${SCRATCH_FS:-}" in
  "") ;;
  xfs)
    [ "$(id -u)" = 0 ] || { echo "agent-memory-tree: SCRATCH_FS=xfs mounts a loop file: run it as root" >&2; exit 2; }
    command -v mkfs.xfs > /dev/null || { echo "agent-memory-tree: SCRATCH_FS=xfs needs mkfs.xfs (apt-get install xfsprogs)" >&2; exit 2; }
    # Sparse, as large as the free space: it takes only what the run writes.
    free_kib=$(df -Pk "$scratch" | awk 'NR == 2 { print $4 }')
    truncate -s "$((free_kib * 9 / 10))K" "$scratch/xfs.img"
    mkfs.xfs -q -b size=1024 -m reflink=1 "$scratch/xfs.img"
    mkdir "$scratch/fs"
    mount -o loop,noatime "$scratch/xfs.img" "$scratch/fs"
    place=$scratch/fs
    ;;
  *) echo "agent-memory-tree: SCRATCH_FS is empty or xfs, not ${SCRATCH_FS}" >&2; exit 2 ;;
esac

# The plan: one cycle of the published protocol on the folder, a `cp` tool.
plan() {
  local tree=$1
  cat <<EOF
{"schema_version": $schema, "run_id": "memory-tree", "cycles": 1, "drop_caches": false,
 "step_timeout_secs": 7200,
 "dataset": {"kind": "tree", "source": {"folder": {"path": "$tree"}},
             "change": {"fraction": 0.05, "seed": 2}, "public": false},
 "tools": [{"name": "copy", "version": "1", "binary": "/bin/sh",
   "commands": {
     "init": {"argv": ["{bin}", "-c", "mkdir -p {repo}/snapshots"]},
     "backup": {"argv": ["{bin}", "-c", "cp -a . {repo}/snapshots/{snapshot}"], "cwd": "{source}"},
     "restore": {"argv": ["{bin}", "-c", "cp -a {repo}/snapshots/{snapshot}/. {target}"]}}}]}
EOF
}

declare -A rss files
failed=0
for s in "${scales[@]}"; do
  tree=$place/tree-$s
  if ! "$agent" gen --profile tiny-files --scale "$s" --out "$tree" --manifest "$scratch/gen-$s.jsonl" \
      > "$scratch/gen-$s.out" 2>&1; then
    echo "agent-memory-tree: gen at scale $s failed:" >&2
    tail -5 "$scratch/gen-$s.out" >&2
    exit 2
  fi
  files[$s]=$(($(wc -l < "$scratch/gen-$s.jsonl") - 1))
  rm -f "$scratch/gen-$s.jsonl"
  plan "$tree" > "$scratch/plan-$s.json"
  # /usr/bin/time's figure is the largest of the agent and the tools it
  # waited for (a `cp -a` of a million files holds more than the agent):
  # the agent's own peak is its VmHWM, read while it runs.
  /usr/bin/time -v -o "$scratch/run-$s.time" "$agent" run --plan "$scratch/plan-$s.json" \
      --work "$place/work-$s" --evidence "$place/evidence-$s" > "$scratch/run-$s.out" 2>&1 &
  timer=$!
  hwm=0
  while kill -0 "$timer" 2>/dev/null; do
    pid=$(pgrep -P "$timer" -x labrun-agent | head -1 || true)
    v=$( [ -n "$pid" ] && awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" -gt "$hwm" ]; then hwm=$v; fi
    sleep 0.2
  done
  if ! wait "$timer"; then
    echo "agent-memory-tree: the run at scale $s failed:" >&2
    tail -20 "$scratch/run-$s.out" >&2
    grep -h '"ok":false' "$place/evidence-$s/records.jsonl" >&2 || true
    exit 2
  fi
  if ! grep -q '"passed":true' "$place/evidence-$s/records.jsonl"; then
    echo "agent-memory-tree: scale $s: no verify passed" >&2
    exit 2
  fi
  rss[$s]=$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }')
  with_tools=$(awk '/Maximum resident set size/ { printf "%.1f", $NF / 1024 }' "$scratch/run-$s.time")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$scratch/run-$s.time")
  printf 'scale %s: %s files, agent peak %s MiB (with its tools %s MiB), %s\n' \
    "$s" "${files[$s]}" "${rss[$s]}" "$with_tools" "$wall"
  if awk -v r="${rss[$s]}" -v l="$limit_mib" 'BEGIN { exit !(r > l) }'; then
    echo "  over the $limit_mib MiB target"
    failed=1
  fi
  rm -rf "$tree" "$place/work-$s" "$place/evidence-$s"
done
if [ ${#scales[@]} -ge 2 ]; then
  a=${scales[0]}; b=${scales[-1]}
  awk -v ra="${rss[$a]}" -v rb="${rss[$b]}" -v fa="${files[$a]}" -v fb="${files[$b]}" \
    'BEGIN { if (fb > fa) printf "growth: %.0f bytes per file\n", (rb - ra) * 1048576 / (fb - fa) }'
fi
exit $failed
