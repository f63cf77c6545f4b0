#!/usr/bin/env bash
# Installs and starts what labrun and its tests need on a Debian 12 host.
# Idempotent: installs only what is missing, starts only what is not running.
# Run as root (CI is root); as another user it only reports what is missing.
set -euo pipefail

packages=(
  # the VM: libvirt, QEMU (TCG or KVM), image build
  libvirt-daemon-system libvirt-clients libvirt-dev pkg-config
  qemu-system-x86 qemu-utils mmdebstrap e2fsprogs libxml2-utils
  # the tools the default lab benchmarks, and what the tests drive them with
  restic borgbackup duplicity openssh-server time zstd lz4 file git procps
  # the stand-in cloud image the tests build (sfdisk; losetup, mount)
  fdisk mount
  # the results store's PostgreSQL tests start a server on a loopback port
  postgresql
  # the remote-hypervisor test fixture: a network namespace with a veth pair
  # (ip); its sshd, virt-ssh-helper and session libvirtd come with
  # openssh-server and libvirt-daemon-system above
  iproute2
  # report.html's test opens the page in headless Chromium (fonts: a recommends,
  # which --no-install-recommends below would skip)
  chromium fonts-liberation
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# qemu-utils must match qemu-system-x86's version: some images ship a newer
# backported qemu-utils that Breaks bookworm's qemu-system-common.
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "labrun setup: missing packages: ${missing[*]} (run as root: sudo $0)" >&2
    exit 1
  fi
  echo "labrun setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  qver=$(apt-cache policy qemu-system-x86 | awk '/Candidate:/{print $2}')
  pins=()
  for p in "${missing[@]}"; do
    case "$p" in
      qemu-utils|qemu-system-x86) pins+=("$p=$qver") ;;
      *) pins+=("$p") ;;
    esac
  done
  if dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null | grep -qv "^$qver\$"; then
    pins+=("qemu-utils=$qver")
    dpkg-query -W qemu-block-extra >/dev/null 2>&1 && pins+=("qemu-block-extra=$qver")
  fi
  apt-get install -y -q --no-install-recommends --allow-downgrades "${pins[@]}" >/dev/null
fi

if [ "$(id -u)" = 0 ]; then
  # No systemd on these hosts: start the daemons ourselves when none runs.
  # A socket file alone is no proof: one left in /run by a daemon that is gone
  # makes every domain start fail with "Connection refused".
  if ! pgrep -x virtlogd >/dev/null; then
    rm -f /run/libvirt/virtlogd-sock /run/libvirt/virtlogd-admin-sock
    virtlogd -d
    for _ in $(seq 50); do [ -S /run/libvirt/virtlogd-sock ] && break; sleep 0.1; done
  fi
  # libvirt caches its QEMU probe only while libvirt-qemu can open /dev/kvm;
  # a root-only node (no udev here) makes every domain start re-probe (~45 s).
  if [ -c /dev/kvm ] && getent group kvm >/dev/null; then chgrp kvm /dev/kvm && chmod 0660 /dev/kvm; fi
  if ! virsh -c qemu:///system version >/dev/null 2>&1; then
    libvirtd -d
    for _ in $(seq 50); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.2; done
  fi
fi
# An ordinary user runs labrun from groups libvirt and kvm, nothing more: the
# system daemon through its socket where the host lets the group in (polkit's
# rule for group libvirt needs a running polkitd), else the user's own
# qemu:///session daemon, which libvirt starts on first use. `labrun check`
# says which. Nothing here opens root's folders or the daemon to them.
if [ "$(id -u)" = 0 ]; then
  echo "labrun setup: host ready (for an ordinary user: usermod -aG libvirt,kvm USER, then log in again)"
else
  echo "labrun setup: host ready"
fi
