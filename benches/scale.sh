#!/usr/bin/env bash
# How the cost of a run grows with its size (issue 12, "Cost as the work
# grows"): the default lab, one cycle, at four scales spanning at least 10x,
# in one VM boot (`up` once, `bench` per scale, `down` always). Then, per tool
# and phase, wall time against dataset size, a fitted line (fixed cost + cost
# per GB) and its fit (R^2); the full-scale (6.10 GB, 3 cycles) time those
# lines project, beside what `bench`'s own estimate says for the same run.
# Printed as a table, kept with a chart (scale.svg) under OUT.
#
# usage: benches/scale.sh            (make bench-scale)
# env:   SCALES="0.002 0.005 0.01 0.02"  at least two, the largest >= 10x the smallest
#        LAB=lab.yaml  TOOLS=restic,borg,kopia (default: the lab's)  OUT=results/scale-<time>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
labrun=${LABRUN:-$root/target/release/labrun}
lab=${LAB:-$root/lab.yaml}
scales=${SCALES:-0.002 0.005 0.01 0.02}
out=${OUT:-$root/results/scale-$(date -u +%Y%m%dT%H%M%SZ)}
[ -x "$labrun" ] || { echo "bench-scale: $labrun missing: run make build" >&2; exit 2; }
python3 - "$scales" <<'PY' || exit 2
import sys
s = [float(x) for x in sys.argv[1].split()]
if len(s) < 2 or max(s) < 10 * min(s):
    sys.exit(f"bench-scale: SCALES {s} must be two or more, the largest at least 10x the smallest")
PY
mkdir -p "$out"
tools=()
[ -n "${TOOLS:-}" ] && tools=(--tools "$TOOLS")

"$labrun" -f "$lab" up "${tools[@]}"
trap '"$labrun" -f "$lab" down' EXIT
: > "$out/runs.txt"
for s in $scales; do
  start=$EPOCHREALTIME
  "$labrun" -f "$lab" bench --plain --scale "$s" --cycles 1 "${tools[@]}" \
    --results "$out/runs" 2>&1 | tee "$out/bench-$s.out"
  end=$EPOCHREALTIME
  run=$(sed -n 's/^run \([^:]*\): results in .*/\1/p' "$out/bench-$s.out" | head -n 1)
  [ -n "$run" ] || { echo "bench-scale: no run id in $out/bench-$s.out" >&2; exit 1; }
  echo "$s $start $end $run" >> "$out/runs.txt"
done
python3 "$root/benches/scale_fit.py" "$out" | tee "$out/scale.txt"
