# Shared by the agent benches (sourced): a cold page cache, wall-clock
# stamps, and the median and ratio of timings measured side by side.
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v ref="$1" -v mine="$2" 'BEGIN { printf "%.2f", ref / mine }'; }
