#!/usr/bin/env bash
# Dataset throughput of the agent, each against a reference measured side by
# side in the same run on the same machine (issue 2, "Benchmarks"):
#   1. `labrun-agent gen` against `dd` writing the same number of bytes; both
#      include getting the data to disk (gen + sync, dd conv=fdatasync),
#      both start after sync + drop_caches. Target: gen >= 0.8x dd.
#   2. `labrun-agent verify` against
#      `find DIR -type f -print0 | xargs -0 -P$(nproc) sha256sum` on the same
#      tree, cold page cache before each. Target: verify >= 1.0x.
# Ratios are throughput ratios (reference time / agent time), median of RUNS.
# Also shown, for reading the first ratio: `dd` copying the same number of
# random bytes from a cached file (some virtual disks store zeros almost for
# free, which flatters dd if=/dev/zero), gen's CPU seconds, the load
# average, and per run the share of one core a busy thread got for a second
# ("cpu share"): other work on the machine slows the CPU-bound gen more than
# the mostly waiting dd, so compare ratios of runs with like shares (see
# docs/dataset-generation.md for what limits the first ratio).
#
# Where: by default a fresh ext4 made with mkfs.ext4's defaults (so with a
# journal, like the guest's disk, see images/debian12/build.sh) in a sparse
# image file, loop-mounted; both gen and dd write there. Why not the host's
# own file system: on an ext4 *without* a journal the kernel checks every
# free inode it considers for a recent deletion (fs/ext4/ialloc.c,
# recently_deleted()), so creating thousands of files right after deleting
# thousands (each run deletes the previous tree) costs O(files^2) kernel CPU:
# measured on a journal-less host, 57% of gen's CPU was in that check. That
# is the host's quirk, not the agent's cost in the VM. SCRATCH_PARENT=DIR
# runs on DIR's file system as is instead (the report says which).
#
# usage: benches/agent-dataset.sh [SCALE]   (default 0.05, about 305 MB)
# env:   RUNS (default 3), AGENT (default: the static agent of `make agent`),
#        SCRATCH_PARENT (default: a loop-mounted ext4 under /var/tmp),
#        AGENT_B (optional: a second agent, say a change to the generator, whose
#        gen is timed in the same runs, before AGENT's in odd runs and after in
#        even ones, and whose manifest must equal AGENT's, byte for byte)
set -euo pipefail

scale=${1:-0.05}
runs=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
agent=${AGENT:-$root/target/x86_64-unknown-linux-gnu/release/labrun-agent}
agent_b=${AGENT_B:-}

if [ "$(id -u)" != 0 ]; then
  echo "agent-dataset: needs root to drop the page cache (cold-cache timings)" >&2
  exit 2
fi
if [ ! -x "$agent" ]; then
  echo "agent-dataset: building the static agent (make agent)" >&2
  make -C "$root" agent >&2
fi

# The loop file system: the tree, dd's file and the random source, with room.
fs_dir=""; scratch=""
cleanup() {
  rm -rf "$scratch"
  if [ -n "$fs_dir" ]; then
    umount "$fs_dir/mnt" 2>/dev/null || true
    rm -rf "$fs_dir"
  fi
}
trap cleanup EXIT
if [ -z "${SCRATCH_PARENT:-}" ]; then
  fs_dir=$(mktemp -d /var/tmp/labrun-bench-fs.XXXXXX)
  fs_mib=$(awk -v s="$scale" 'BEGIN { printf "%d", s * 6100 * 4 + 512 }')
  truncate -s "${fs_mib}M" "$fs_dir/ext4.img"
  mkdir "$fs_dir/mnt"
  if mkfs.ext4 -q -F "$fs_dir/ext4.img" && mount -o loop "$fs_dir/ext4.img" "$fs_dir/mnt"; then
    SCRATCH_PARENT=$fs_dir/mnt
  else
    echo "agent-dataset: cannot make a loop-mounted ext4 (no loop devices?); using /var/tmp as is" >&2
    SCRATCH_PARENT=/var/tmp
  fi
fi
scratch=$(mktemp -d "$SCRATCH_PARENT/labrun-bench-dataset.XXXXXX")

. "$(dirname "${BASH_SOURCE[0]}")/timing.sh"
# The CPU (user + system) one busy thread gets in 1 s of wall time: 1.00 on
# an idle core, less when other work shares the machine.
cpu_share() {
  { /usr/bin/time -f '%U %S' timeout 1 sh -c 'while :; do :; done' || true; } 2>&1 |
    awk '/^[0-9.]+ [0-9.]+$/ { printf "%.2f", $1 + $2 }'
}

echo "agent-dataset: scale $scale, $runs runs, $(nproc) cores, scratch $scratch"
echo "agent: $agent"
[ -z "$agent_b" ] || echo "agent B: $agent_b"
fs_src=$(df --output=source "$scratch" | tail -1)
fs_type=$(df --output=fstype "$scratch" | tail -1)
journal=unknown
if [ "$fs_type" = ext4 ] && [ -r "/sys/fs/ext4/$(basename "$fs_src")/journal_task" ]; then
  if [ "$(cat "/sys/fs/ext4/$(basename "$fs_src")/journal_task")" = "<none>" ]; then
    journal="no journal"
  else
    journal="journal"
  fi
fi
echo "file system: $fs_type on $fs_src ($journal)"
grep -m1 'model name' /proc/cpuinfo | sed 's/^model name\s*: /cpu: /'
grep -qw sha_ni /proc/cpuinfo && echo "cpu has SHA-NI" || echo "cpu lacks SHA-NI"

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

gen_t=(); gen_only=(); gen_cpu=(); dd_t=(); ddr_t=(); ver_t=(); sum_t=(); genb_t=()
# AGENT_B's gen, into a tree of its own that is removed afterwards; its
# manifest is kept to compare with AGENT's.
gen_b() {
  local tb=$scratch/src-b t0 t1
  rm -rf "$tb" "$tb.manifest.jsonl"
  cold; t0=$(now)
  "$agent_b" gen --out "$tb" --scale "$scale" > /dev/null 2>&1
  sync; t1=$(now)
  genb_t+=("$(elapsed "$t0" "$t1")")
  mv "$tb.manifest.jsonl" "$scratch/b.manifest.jsonl"
  rm -rf "$tb"
}
for i in $(seq "$runs"); do
  tree=$scratch/src
  rm -rf "$tree" "$tree.manifest.jsonl" "$scratch/dd.bin"
  if [ -n "$agent_b" ] && [ $((i % 2)) = 1 ]; then gen_b; fi

  cold; t0=$(now)
  /usr/bin/time -f '%U %S' -o "$scratch/gen.cpu" \
    "$agent" gen --out "$tree" --scale "$scale" > "$scratch/gen.out" 2>/dev/null
  tg=$(now); sync; t1=$(now)
  gen_t+=("$(elapsed "$t0" "$t1")")
  gen_only+=("$(elapsed "$t0" "$tg")")
  gen_cpu+=("$(awk '{ printf "%.2f", $1 + $2 }' "$scratch/gen.cpu")")
  bytes=$(sed -n 's/^  total .*(\([0-9]*\) bytes)$/\1/p' "$scratch/gen.out")
  if [ ! -f "$scratch/random.src" ]; then
    head -c "$bytes" /dev/urandom > "$scratch/random.src"
  fi

  cold; t0=$(now)
  dd if=/dev/zero of="$scratch/dd.bin" bs=1M count="$bytes" iflag=count_bytes \
    conv=fdatasync status=none
  t1=$(now)
  dd_t+=("$(elapsed "$t0" "$t1")")
  rm -f "$scratch/dd.bin"

  cold; cat "$scratch/random.src" > /dev/null; t0=$(now)
  dd if="$scratch/random.src" of="$scratch/dd.bin" bs=1M conv=fdatasync status=none
  t1=$(now)
  ddr_t+=("$(elapsed "$t0" "$t1")")
  rm -f "$scratch/dd.bin"

  cold; t0=$(now)
  "$agent" verify --manifest "$tree.manifest.jsonl" --dir "$tree" > "$scratch/verify.out"
  t1=$(now)
  ver_t+=("$(elapsed "$t0" "$t1")")

  cold; t0=$(now)
  find "$tree" -type f -print0 | xargs -0 -P"$(nproc)" sha256sum > "$scratch/sums.out"
  t1=$(now)
  sum_t+=("$(elapsed "$t0" "$t1")")
  files=$(wc -l < "$scratch/sums.out")
  if [ -n "$agent_b" ]; then
    if [ $((i % 2)) = 0 ]; then gen_b; fi
    if ! cmp -s "$tree.manifest.jsonl" "$scratch/b.manifest.jsonl"; then
      echo "agent-dataset: AGENT_B's manifest differs from AGENT's: not the same dataset" >&2
      exit 1
    fi
    echo "run $i: agent B gen ${genb_t[-1]}s (ratio $(ratio "${dd_t[-1]}" "${genb_t[-1]}")x against this run's dd; AGENT's $(ratio "${dd_t[-1]}" "${gen_t[-1]}")x), same manifest"
  fi

  printf 'run %d: %d bytes, %d files: gen %ss (%ss + sync, cpu %ss) dd %ss dd-random %ss | verify %ss find|xargs sha256sum %ss | load %s, cpu share %s\n' \
    "$i" "$bytes" "$files" "${gen_t[-1]}" "${gen_only[-1]}" "${gen_cpu[-1]}" "${dd_t[-1]}" "${ddr_t[-1]}" "${ver_t[-1]}" "${sum_t[-1]}" "$(cut -d' ' -f1 /proc/loadavg)" "$(cpu_share)"
done

gen=$(median "${gen_t[@]}"); dd=$(median "${dd_t[@]}"); ddr=$(median "${ddr_t[@]}")
cpu=$(median "${gen_cpu[@]}")
ver=$(median "${ver_t[@]}"); sum=$(median "${sum_t[@]}")
gen_ratio=$(ratio "$dd" "$gen"); ddr_ratio=$(ratio "$ddr" "$gen"); ver_ratio=$(ratio "$sum" "$ver")
mbps() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.0f", b / 1e6 / s }'; }
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t ? "target met" : "BELOW TARGET") }'; }

echo
echo "median of $runs runs, $bytes bytes:"
printf '  gen    %7ss (%s MB/s)   dd                  %7ss (%s MB/s)   ratio %sx (target >= 0.8: %s)\n' \
  "$gen" "$(mbps "$gen")" "$dd" "$(mbps "$dd")" "$gen_ratio" "$(verdict "$gen_ratio" 0.8)"
printf '         gen used %s CPU-seconds; against dd of random bytes %ss (%s MB/s): ratio %sx\n' \
  "$cpu" "$ddr" "$(mbps "$ddr")" "$ddr_ratio"
printf '  verify %7ss (%s MB/s)   find|xargs sha256sum %6ss (%s MB/s)   ratio %sx (target >= 1.0: %s)\n' \
  "$ver" "$(mbps "$ver")" "$sum" "$(mbps "$sum")" "$ver_ratio" "$(verdict "$ver_ratio" 1.0)"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$agent_b" ]; then
  genb=$(median "${genb_t[@]}")
  printf '  agent B gen %7ss (%s MB/s)   ratio %sx against dd, same manifest in every run\n' \
    "$genb" "$(mbps "$genb")" "$(ratio "$dd" "$genb")"
fi
echo "gen_vs_dd=$gen_ratio gen_vs_dd_random=$ddr_ratio verify_vs_sha256sum=$ver_ratio"
