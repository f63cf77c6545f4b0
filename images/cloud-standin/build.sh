#!/usr/bin/env bash
# Builds a stand-in for Debian 12's official "genericcloud" qcow2, for tests of
# labrun's `vm.image: {cloud: {url, sha256}}` path on machines that cannot
# download the real one. Like the official image it boots by itself (BIOS ->
# GRUB on the MBR -> kernel from an msdos-partitioned disk, one bootable ext4
# partition labelled "root") and configures itself with cloud-init from a
# NoCloud seed: no SSH host keys and a locked root password in the image.
#
#   build.sh OUT.qcow2 [DISK_GIB]      (as root; DISK_GIB defaults to 4)
#
# apt sources: LABRUN_MIRRORS ("deb URI SUITE COMPONENTS..." lines) if set,
# else the host's own bookworm* sources as `apt-get indextargets` reports them.
# Needs mmdebstrap, sfdisk (package fdisk), losetup/partx, e2fsprogs, qemu-img.
set -euo pipefail

usage="usage: build.sh OUT.qcow2 [DISK_GIB]"
out=${1:?$usage}
disk_gib=${2:-4}
suite=bookworm
here=$(cd "$(dirname "$0")" && pwd)
[[ $disk_gib =~ ^[0-9]+$ && $disk_gib -ge 2 ]] || { echo "DISK_GIB must be a whole number >= 2: $disk_gib" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "build.sh needs root (loop devices, mount, chroot)" >&2; exit 2; }
for tool in mmdebstrap sfdisk losetup partx mkfs.ext4 qemu-img chroot mount; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install mmdebstrap fdisk e2fsprogs qemu-utils)" >&2; exit 2; }
done
out=$(realpath -m "$out")
started=$SECONDS
phase() { echo "phase: $* (+$((SECONDS - started))s)"; }

# Everything temporary lives in one folder next to OUT; the trap undoes the
# mounts and loop device first, whatever the exit path.
work=$(mktemp -d "$(dirname "$out")/.cloud-standin.XXXXXX")
root=$work/root
mnt=$work/mnt
loop=
cleanup() {
  local rc=$?
  set +e
  for m in "$mnt/sys" "$mnt/proc" "$mnt/dev/pts" "$mnt/dev" "$mnt"; do
    mountpoint -q "$m" && umount "$m"
  done
  if [ -n "$loop" ]; then
    partx -d "$loop" 2>/dev/null
    losetup -d "$loop"
  fi
  rm -rf "$work"
  [ "$rc" = 0 ] || echo "build.sh: failed (exit $rc); loop device and mounts released" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mirrors=()
if [ -n "${LABRUN_MIRRORS:-}" ]; then
  while IFS= read -r line; do [ -n "$line" ] && mirrors+=("$line"); done <<<"$LABRUN_MIRRORS"
else
  # One "deb URI SUITE COMPONENTS" line per host source of this suite family
  # (bookworm, -updates, -security), read at run time: no mirror named here.
  while IFS= read -r line; do [ -n "$line" ] && mirrors+=("$line"); done < <(
    apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)' |
      awk -v s="$suite" '$1 == "deb" && ($3 == s || $3 == s "-updates" || $3 == s "-security") {
          k = $2 " " $3; if (!(k in seen)) { order[n++] = k; seen[k] = "" }
          if (index(" " seen[k] " ", " " $4 " ") == 0) seen[k] = seen[k] " " $4 }
        END { for (i = 0; i < n; i++) print "deb " order[i] seen[order[i]] }')
fi
[ ${#mirrors[@]} -gt 0 ] || { echo "no $suite apt source on this host (run apt-get update, or set LABRUN_MIRRORS)" >&2; exit 2; }

# labrun's debian12 set, plus cloud-init, GRUB and growpart (cloud-guest-utils):
# like the official image, the root partition grows to the disk it is given.
packages=linux-image-amd64,systemd-sysv,udev,dbus,openssh-server,iproute2,procps,kmod,e2fsprogs,initramfs-tools,netbase,tar,coreutils,cloud-init,grub-pc,cloud-guest-utils

phase "mmdebstrap $suite from ${#mirrors[@]} host source(s)"
# MODULES=list + the few modules a virtio guest needs: a 7 MB initrd instead
# of 36 MB, which halves boot-to-SSH under TCG. Written before the kernel's
# postinst runs, so the first initrd is already the small one.
mmdebstrap --variant=minbase --include="$packages" \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"' \
  --setup-hook='echo MODULES=list > "$1/etc/initramfs-tools/conf.d/labrun-modules.conf"' \
  --setup-hook='printf "virtio_pci\nvirtio_blk\nvirtio_scsi\nsd_mod\next4\ncrc32c_generic\n" > "$1/usr/share/initramfs-tools/modules.d/labrun"' \
  "$suite" "$root" "${mirrors[@]}"

phase "customise the root file system"
# sshd drop-in, cloud-init datasource/locale config (90-labrun-standin.cfg),
# GRUB on the serial console.
cp -a "$here/rootfs/." "$root/"
chown -R 0:0 "$root/etc/ssh/sshd_config.d" "$root/etc/cloud/cloud.cfg.d" "$root/etc/default/grub.d"
echo localhost >"$root/etc/hostname" # cloud-init sets local-hostname from meta-data
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
echo 'LABEL=root / ext4 rw,discard,errors=remount-ro 0 1' >"$root/etc/fstab"
# No DNS: the guest resolves nothing and so asks nothing.
rm -f "$root/etc/resolv.conf" && : >"$root/etc/resolv.conf"
# First boot everywhere: systemd makes a machine-id, cloud-init the host keys.
: >"$root/etc/machine-id"
rm -f "$root"/var/lib/dbus/machine-id "$root"/etc/ssh/ssh_host_*
rm -rf "$root/var/lib/cloud"
# Root logs in with the injected key only.
sed -i 's/^root:[^:]*:/root:*:/' "$root/etc/shadow"
# cloud-init renders the NIC's DHCP config for systemd-networkd (its only
# renderer here: no ifupdown, no netplan), so networkd must run. No timers
# that wake apt or anything else.
systemctl --root="$root" enable systemd-networkd.service ssh.service >/dev/null 2>&1
systemctl --root="$root" mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
  fstrim.timer man-db.timer >/dev/null 2>&1 || true
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

phase "partition a ${disk_gib} GiB disk (msdos, one bootable partition) and mkfs.ext4 -d"
raw=$work/disk.raw
truncate -s "${disk_gib}G" "$raw"
echo 'start=2048, type=83, bootable' | sfdisk -q --label dos "$raw"
loop=$(losetup -f --show -P "$raw")
# Without udev the partition node may not appear by itself.
[ -b "${loop}p1" ] || partx -a "$loop"
for _ in $(seq 50); do [ -b "${loop}p1" ] && break; sleep 0.1; done
[ -b "${loop}p1" ] || { echo "no ${loop}p1 after losetup -P and partx -a" >&2; exit 1; }
mkfs.ext4 -q -F -L root -d "$root" "${loop}p1"
rm -rf "$root"

phase "grub-install on the MBR and update-grub"
mkdir -p "$mnt"
mount "${loop}p1" "$mnt"
mount --bind /dev "$mnt/dev"
mount --bind /dev/pts "$mnt/dev/pts"
mount -t proc proc "$mnt/proc"
mount -t sysfs sysfs "$mnt/sys"
chroot "$mnt" grub-install --target=i386-pc "$loop"
chroot "$mnt" update-grub
# No udev, so grub-mkconfig saw the loop device; the guest finds its root by label.
sed -i -E "s#root=(${loop}p1|UUID=[0-9a-f-]+)#root=LABEL=root#" "$mnt/boot/grub/grub.cfg"
grep -q 'root=LABEL=root' "$mnt/boot/grub/grub.cfg" || { echo "grub.cfg has no root=LABEL=root" >&2; exit 1; }
if grep -q "$loop" "$mnt/boot/grub/grub.cfg"; then echo "grub.cfg still names $loop" >&2; exit 1; fi
# The debconf answer a later grub-pc upgrade in the guest would use.
echo "grub-pc grub-pc/install_devices multiselect /dev/vda" | chroot "$mnt" debconf-set-selections
for m in sys proc dev/pts dev; do umount "$mnt/$m"; done
umount "$mnt"
# A forced check of what GRUB and the guest will read; exit 1 means "fixed".
e2fsck -f -y "${loop}p1" >/dev/null 2>&1 || [ $? -le 1 ] || { echo "e2fsck found errors on ${loop}p1" >&2; exit 1; }
partx -d "$loop" 2>/dev/null || true
losetup -d "$loop"
loop=

phase "qemu-img convert -c to qcow2"
qemu-img convert -c -f raw -O qcow2 "$raw" "$work/disk.qcow2"
# libvirt runs QEMU as libvirt-qemu: the image must be world-readable.
chmod 0644 "$work/disk.qcow2"
mv -f "$work/disk.qcow2" "$out"
phase "done: $out ($(du -h "$out" | cut -f1) on disk, ${disk_gib} GiB virtual)"
