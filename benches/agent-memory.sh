#!/usr/bin/env bash
# Peak memory as the agent records it, against `/usr/bin/time -v`, for the
# same command on the same tree: `restic backup .` of a freshly initialised
# repository, run side by side, ROUNDS times (alternating, so drift in the
# machine hits both). Prints each pair and the ratio of the medians; the
# target is within 5%. Exit 1 when it is not met.
#
#   bash benches/agent-memory.sh          # after `make agent`, as root
#   AGENT=path SCALE=0.05 ROUNDS=5 bash benches/agent-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."

AGENT=${AGENT:-target/x86_64-unknown-linux-gnu/release/labrun-agent}
RESTIC=${RESTIC:-/usr/bin/restic}
SCALE=${SCALE:-0.02}
SEED=${SEED:-7}
ROUNDS=${ROUNDS:-5}
PASSWORD=lab-only-not-a-secret

for f in "$AGENT" "$RESTIC" /usr/bin/time; do
  [ -x "$f" ] || { echo "agent-memory: $f is missing (make agent; scripts/host-setup.sh)" >&2; exit 2; }
done

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
AGENT=$(realpath "$AGENT")

# The same tree the agent's run will generate (same seed and scale give a
# byte-identical tree), for the /usr/bin/time side.
"$AGENT" gen --out "$T/src" --seed "$SEED" --scale "$SCALE" >/dev/null 2>&1

cat >"$T/plan.json" <<EOF
{"schema_version": 1, "run_id": "memory", "cycles": 1,
 "dataset": {"kind": "synthetic", "seed": $SEED, "scale": $SCALE},
 "tools": [{"name": "restic", "version": "system", "binary": "$RESTIC",
   "env": {"RESTIC_PASSWORD": "$PASSWORD", "RESTIC_CACHE_DIR": "{work}/cache"},
   "secret_env": ["RESTIC_PASSWORD"],
   "commands": {
     "init": {"argv": ["{bin}", "init", "-r", "{repo}"]},
     "backup": {"argv": ["{bin}", "backup", "-r", "{repo}", "."], "cwd": "{source}"},
     "restore": {"argv": ["{bin}", "restore", "latest", "-r", "{repo}", "--target", "{target}"]}}}]}
EOF

drop_caches() {
  sync
  if [ "$(id -u)" = 0 ]; then echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; fi
}

# The agent: peak RSS of the full backup, from its evidence record.
agent_kib() {
  rm -rf "$T/work" "$T/evidence"
  "$AGENT" run --plan "$T/plan.json" --work "$T/work" --evidence "$T/evidence" >/dev/null
  grep '"step":"backup_full"' "$T/evidence/records.jsonl" | sed -E 's/.*"max_rss_kib":([0-9]+).*/\1/'
}

# GNU time on the same command, with the environment the agent gives a tool.
time_kib() {
  rm -rf "$T/repo" "$T/home"
  mkdir -p "$T/home"
  local env=(env -i PATH="$PATH" HOME="$T/home" RESTIC_PASSWORD="$PASSWORD" RESTIC_CACHE_DIR="$T/home/cache")
  "${env[@]}" "$RESTIC" init -r "$T/repo" >/dev/null
  drop_caches
  (cd "$T/src" && "${env[@]}" /usr/bin/time -v "$RESTIC" backup -r "$T/repo" . >/dev/null 2>"$T/time.txt")
  sed -nE 's/^\s*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$T/time.txt"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "restic backup of the seeded tree (seed $SEED, scale $SCALE), peak RSS in KiB"
printf '%-6s %12s %12s %8s\n' round agent time-v ratio
: >"$T/agent.txt"
: >"$T/gnu.txt"
for round in $(seq "$ROUNDS"); do
  a=$(agent_kib)
  g=$(time_kib)
  echo "$a" >>"$T/agent.txt"
  echo "$g" >>"$T/gnu.txt"
  printf '%-6s %12s %12s %8s\n' "$round" "$a" "$g" "$(awk -v a="$a" -v g="$g" 'BEGIN {printf "%.3f", a / g}')"
done
a=$(median <"$T/agent.txt")
g=$(median <"$T/gnu.txt")
ratio=$(awk -v a="$a" -v g="$g" 'BEGIN {printf "%.3f", a / g}')
printf '%-6s %12s %12s %8s\n' median "$a" "$g" "$ratio"
if awk -v r="$ratio" 'BEGIN {exit !(r >= 0.95 && r <= 1.05)}'; then
  echo "agent-memory: peak memory agrees with /usr/bin/time -v within 5% (ratio $ratio)"
else
  echo "agent-memory: ratio $ratio is outside the 5% target" >&2
  exit 1
fi
