#!/usr/bin/env bash
# make bench-vm: how long `labrun up` (image cached) takes to SSH ready, and
# `labrun down`, median of $RUNS, against a hand-written `virsh create` +
# poll-ssh of the very XML labrun generated, measured in the same run.
# Also prints the guest's boot split (systemd-analyze: kernel / userspace).
# Needs root, libvirtd, virtlogd (scripts/host-setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
LABRUN=${LABRUN:-target/release/labrun}
CACHE=${LABRUN_BENCH_CACHE:-/var/tmp/labrun-test-cache}
URI=qemu:///system
[ -x "$LABRUN" ] || cargo build --release -q -p labrun

work=$(mktemp -d /var/tmp/labrun-bench-vm.XXXXXX)
chmod 755 "$work"
lab=$work/benchvm.yaml
hand=labrun-benchvm-hand
# The shipped default lab under another name (same image, same tools).
sed 's/^name: default$/name: benchvm/' lab.yaml >"$lab"
L() { "$LABRUN" -f "$lab" --state "$work/state" --cache "$CACHE" "$@"; }
cleanup() {
  L down >/dev/null 2>&1 || true
  virsh -q -c "$URI" destroy "$hand" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'; }
# A port nothing listens on (connect refused), from the ephemeral-free range.
free_port() {
  local p
  while :; do
    p=$(shuf -i 30000-60000 -n 1)
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "bench-vm: image (built once, then cached)"
L image build

# The same steps by hand: keys, overlay, tar seed, the same XML on another
# name/port/paths, `virsh create`, poll with the system ssh client.
h=$work/hand
by_hand() {
  local base t port
  base=$(sed -n "s|.*<kernel>\(.*\)/vmlinuz</kernel>.*|\1|p" "$work/ref.xml")
  rm -rf "$h"; mkdir -p "$h/s/root/.ssh" "$h/s/etc/ssh"; chmod 755 "$h"
  port=$(free_port)
  t=$(now)
  ssh-keygen -q -t ed25519 -N '' -f "$h/client" && ssh-keygen -q -t ed25519 -N '' -f "$h/host"
  chmod 700 "$h/s/root" "$h/s/root/.ssh"
  install -m600 "$h/client.pub" "$h/s/root/.ssh/authorized_keys"
  install -m600 "$h/host" "$h/s/etc/ssh/ssh_host_ed25519_key"
  install -m644 "$h/host.pub" "$h/s/etc/ssh/ssh_host_ed25519_key.pub"
  tar -C "$h/s" --owner=0 --group=0 --numeric-owner -cf "$h/seed.img" root etc && chmod 644 "$h/seed.img"
  echo "$hand $(cut -d' ' -f1,2 "$h/host.pub")" >"$h/known_hosts"
  qemu-img create -q -f qcow2 -F qcow2 -b "$base/disk.qcow2" "$h/overlay.qcow2"
  sed -e "s|<name>labrun-benchvm</name>|<name>$hand</name>|" \
      -e "s|<source file='[^']*overlay.qcow2'/>|<source file='$h/overlay.qcow2'/>|" \
      -e "s|<source file='[^']*seed.img'/>|<source file='$h/seed.img'/>|" \
      -e "s|<source path='[^']*console.log'/>|<source path='$h/console.log'/>|" \
      -e "s|hostfwd=tcp:127.0.0.1:[0-9]*-:22|hostfwd=tcp:127.0.0.1:$port-:22|" \
      "$work/ref.xml" >"$h/domain.xml"
  virsh -q -c "$URI" create "$h/domain.xml" >/dev/null
  until ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -i "$h/client" \
      -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$h/known_hosts" \
      -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias="$hand" -o ConnectTimeout=2 \
      -p "$port" root@127.0.0.1 true 2>/dev/null; do sleep 0.2; done
  hand_up+=("$(since "$t")")
  t=$(now); virsh -q -c "$URI" destroy "$hand" >/dev/null; rm -rf "$h"; hand_down+=("$(since "$t")")
}

# labrun and by-hand runs alternate, so a change in host load hits both.
up_t=() down_t=() splits=() hand_up=() hand_down=()
for i in $(seq "$RUNS"); do
  # labrun's clock stops at SSH ready: the moment `up` says it installs the
  # lab's tools (the hand-written run installs none).
  t=$(now)
  L up 2>&1 >/dev/null | while IFS= read -r line; do
    printf '%s\n' "$line" >>"$work/up.err"
    case "$line" in "up: installing"*) since "$t" >"$work/ready" ;; esac
  done
  [ -s "$work/ready" ] || { cat "$work/up.err"; exit 1; }
  up_t+=("$(cat "$work/ready")"); rm -f "$work/ready"
  # The boot split, once boot has finished (SSH answers before it does).
  L ssh -- 'systemctl is-system-running --wait >/dev/null; systemd-analyze | head -1' >"$work/split" || true
  splits+=("$(cat "$work/split")")
  [ -f "$work/ref.xml" ] || cp "$work"/state/*/domain.xml "$work/ref.xml"
  t=$(now); L down >/dev/null; down_t+=("$(since "$t")")
  by_hand
  echo "  run $i: labrun up ${up_t[-1]} s, down ${down_t[-1]} s | by hand up ${hand_up[-1]} s, down ${hand_down[-1]} s | ${splits[-1]}"
done

mu=$(median "${up_t[@]}") md=$(median "${down_t[@]}")
hu=$(median "${hand_up[@]}") hd=$(median "${hand_down[@]}")
printf '\n%-34s %10s %10s\n' "median of $RUNS (s)" "labrun" "by hand"
printf '%-34s %10s %10s   (labrun/hand %.3f)\n' "up (image cached) to SSH ready" "$mu" "$hu" "$(awk -v a="$mu" -v b="$hu" 'BEGIN {print a / b}')"
printf '%-34s %10s %10s   (labrun/hand %.3f)\n' "down" "$md" "$hd" "$(awk -v a="$md" -v b="$hd" 'BEGIN {print a / b}')"
echo "guest boot split (systemd-analyze):"
printf '  %s\n' "${splits[@]}"
