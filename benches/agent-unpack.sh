#!/usr/bin/env bash
# Unpacking a dataset archive: `labrun-agent unpack` against GNU `tar -x` of
# the same archive (issue 31: "at least 0.8x of `tar -x` of the same
# archive"), side by side on the same machine and file system.
#
# The tree is the agent's own `gen` (the published mix: small files, large
# random and low-entropy files, duplicates) at a small scale, about 200 MB,
# packed once by GNU tar as tar.gz, tar.xz and tar.zst. Per format and
# round, each side starts on a cold page cache (sync + drop_caches) and its
# time includes the `sync` that puts the tree on disk, so neither gets
# credit for leaving its writes in memory. Sides alternate order per round.
# tar runs its decompressor as the tool the flag names (gzip, xz, zstd); xz
# is packed single-threaded (-T1, one block, like most published .tar.xz),
# so both sides decompress it on one thread.
#
# The ratio is a throughput ratio: tar's median time / the agent's median
# time; target >= 0.8.
#
# usage: benches/agent-unpack.sh [SCALE]   (default 0.033, about 200 MB)
# env:   ROUNDS (default 3), AGENT (default: the static agent of `make agent`),
#        SCRATCH_PARENT (default: a loop-mounted ext4 under /var/tmp, made
#        with mkfs.ext4's defaults like the guest's disk; see agent-dataset.sh
#        for why not the host's own file system)
set -euo pipefail

scale=${1:-0.033}
rounds=${ROUNDS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
agent=${AGENT:-$root/target/x86_64-unknown-linux-gnu/release/labrun-agent}

if [ "$(id -u)" != 0 ]; then
  echo "agent-unpack: needs root to drop the page cache (cold-cache timings)" >&2
  exit 2
fi
for tool in tar gzip xz zstd; do
  command -v "$tool" > /dev/null || { echo "agent-unpack: $tool is missing (scripts/host-setup.sh)" >&2; exit 2; }
done
if [ ! -x "$agent" ]; then
  echo "agent-unpack: building the static agent (make agent)" >&2
  make -C "$root" agent >&2
fi
agent=$(realpath "$agent")

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
  # The tree, three archives and two unpacked copies, with room.
  fs_mib=$(awk -v s="$scale" 'BEGIN { printf "%d", s * 6100 * 7 + 512 }')
  truncate -s "${fs_mib}M" "$fs_dir/ext4.img"
  mkdir "$fs_dir/mnt"
  if mkfs.ext4 -q -F "$fs_dir/ext4.img" && mount -o loop "$fs_dir/ext4.img" "$fs_dir/mnt"; then
    SCRATCH_PARENT=$fs_dir/mnt
  else
    echo "agent-unpack: cannot make a loop-mounted ext4 (no loop devices?); using /var/tmp as is" >&2
    SCRATCH_PARENT=/var/tmp
  fi
fi
scratch=$(mktemp -d "$SCRATCH_PARENT/labrun-bench-unpack.XXXXXX")

. "$(dirname "${BASH_SOURCE[0]}")/timing.sh"
verdict() { awk -v r="$1" 'BEGIN { print (r >= 0.8 ? "target met" : "BELOW TARGET") }'; }

echo "agent-unpack: scale $scale, $rounds rounds, $(nproc) cores, scratch $scratch"
echo "agent: $agent"
echo "file system: $(df --output=fstype "$scratch" | tail -1) on $(df --output=source "$scratch" | tail -1)"
grep -m1 'model name' /proc/cpuinfo | sed 's/^model name\s*: /cpu: /'
echo "$(tar --version | head -1); $(gzip --version | head -1); $(xz --version | head -1); $(zstd --version)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

"$agent" gen --out "$scratch/src" --scale "$scale" > /dev/null 2>&1
files=$(find "$scratch/src" -type f | wc -l)
bytes=$(du -sb --apparent-size "$scratch/src" | cut -f1)
echo "tree: $files files, $bytes bytes"

# format name (the agent's), tar's flag, file name
formats=("tar-gz -z tree.tar.gz" "tar-xz -J tree.tar.xz" "tar-zst --zstd tree.tar.zst")
for f in "${formats[@]}"; do
  read -r _ flag file <<< "$f"
  XZ_OPT='-1 -T1' tar -c "$flag" -f "$scratch/$file" -C "$scratch/src" .
  echo "packed $file: $(stat -c %s "$scratch/$file") bytes"
done
rm -rf "$scratch/src"

summary=()
for f in "${formats[@]}"; do
  read -r name flag file <<< "$f"
  archive=$scratch/$file
  agent_t=(); tar_t=()
  time_agent() {
    local out=$scratch/out-agent t0 t1
    rm -rf "$out"; cold; t0=$(now)
    "$agent" unpack "$archive" "$out" --format "$name" > "$scratch/agent.json" 2>/dev/null
    sync; t1=$(now)
    agent_t+=("$(elapsed "$t0" "$t1")")
  }
  time_tar() {
    local out=$scratch/out-tar t0 t1
    rm -rf "$out"; mkdir "$out"; cold; t0=$(now)
    tar -x "$flag" -f "$archive" -C "$out"
    sync; t1=$(now)
    tar_t+=("$(elapsed "$t0" "$t1")")
  }
  for i in $(seq "$rounds"); do
    if [ $((i % 2)) = 1 ]; then time_agent; time_tar; else time_tar; time_agent; fi
    printf '%s round %d: labrun-agent unpack %ss, tar -x %ss | load %s\n' \
      "$name" "$i" "${agent_t[-1]}" "${tar_t[-1]}" "$(cut -d' ' -f1 /proc/loadavg)"
  done
  # Both sides made the same tree (content, not just counts).
  if ! diff -r --no-dereference "$scratch/out-agent" "$scratch/out-tar" > /dev/null; then
    echo "agent-unpack: the agent's tree differs from tar's for $file" >&2
    exit 1
  fi
  echo "  agent's counts: $(cat "$scratch/agent.json")"
  a=$(median "${agent_t[@]}"); t=$(median "${tar_t[@]}"); r=$(ratio "$t" "$a")
  printf '  %s: median labrun-agent unpack %ss, tar -x %ss: ratio %sx (target >= 0.8: %s)\n' \
    "$name" "$a" "$t" "$r" "$(verdict "$r")"
  summary+=("${name//-/_}=$r")
  rm -rf "$scratch/out-agent" "$scratch/out-tar"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "${summary[*]}"
