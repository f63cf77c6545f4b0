#!/usr/bin/env bash
# Builds the labrun Debian base image (Debian 12 by default; LABRUN_SUITE picks another): a whole-disk ext4 qcow2 (root=/dev/vda)
# plus the kernel and a small initrd for direct kernel boot.
#
# Run by `labrun image build` (which passes everything below explicitly, so the
# image depends only on this folder, the package list and the host's apt sources):
#   build.sh OUT_DIR
#   LABRUN_SUITE           e.g. bookworm
#   LABRUN_MIRRORS         one "deb URI SUITE COMPONENTS..." line per host apt source
#   LABRUN_EXTRA_PACKAGES  comma-separated extra packages the lab wants in the guest
#   LABRUN_DISK_GIB        virtual size of the disk
# Writes OUT_DIR/disk.qcow2, OUT_DIR/vmlinuz, OUT_DIR/initrd.img. Needs root,
# mmdebstrap, e2fsprogs (mkfs.ext4 -d: no loop device, no mount) and qemu-img.
set -euo pipefail

out=${1:?usage: build.sh OUT_DIR}
suite=${LABRUN_SUITE:?}
mirrors=${LABRUN_MIRRORS:?no apt sources given}
disk_gib=${LABRUN_DISK_GIB:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${out}/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

# What the guest needs to boot to SSH, and nothing that talks to the network;
# the SSH client too, for the tools whose repository is on an SFTP server
# inside the guest (`storage: {server: sftp}`: restic and borg run `ssh`).
packages=linux-image-amd64,systemd-sysv,udev,dbus,openssh-server,openssh-client,iproute2,procps,kmod,e2fsprogs,initramfs-tools,netbase,tar,coreutils
if [ -n "${LABRUN_EXTRA_PACKAGES:-}" ]; then packages+=",${LABRUN_EXTRA_PACKAGES}"; fi

mirror_args=()
while IFS= read -r line; do [ -n "$line" ] && mirror_args+=("$line"); done <<<"$mirrors"

# sid's Release file carries a Valid-Until date, and the archive these hosts
# reach is a snapshot whose date has passed: apt refuses it unless told not to
# check the date. The signatures are still checked.
apt_opts=()
case "$suite" in
  sid|unstable|experimental) apt_opts+=(--aptopt='Acquire::Check-Valid-Until "false"') ;;
esac

echo "phase: mmdebstrap (download and install ${packages//,/ })"
# MODULES=list + the few modules a virtio guest needs: a 7 MB initrd instead of
# 36 MB, which halves boot-to-SSH under TCG. Written before the kernel's
# postinst runs, so the first initrd is already the small one.
mmdebstrap --variant=minbase --include="$packages" \
  --aptopt='APT::Install-Recommends "false"' "${apt_opts[@]}" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"' \
  --setup-hook='echo MODULES=list > "$1/etc/initramfs-tools/conf.d/labrun-modules.conf"' \
  --setup-hook='printf "virtio_pci\nvirtio_blk\nvirtio_scsi\nsd_mod\next4\ncrc32c_generic\n" > "$1/usr/share/initramfs-tools/modules.d/labrun"' \
  "$suite" "$root" "${mirror_args[@]}"

echo "phase: customise the root file system"
# The recipe's own files (networkd, sshd drop-in, vmseed unit and script).
cp -a "$here/rootfs/." "$root/"
chown -R 0:0 "$root/etc/systemd" "$root/etc/ssh/sshd_config.d" "$root/usr/local/sbin"
echo labrun >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 labrun\n::1 localhost\n' >"$root/etc/hosts"
echo 'LABEL=root / ext4 rw,errors=remount-ro 0 1' >"$root/etc/fstab"
# No DNS: the guest resolves nothing and so asks nothing.
rm -f "$root/etc/resolv.conf" && : >"$root/etc/resolv.conf"
# Per-boot identity: systemd makes a machine-id; labrun injects the host key.
: >"$root/etc/machine-id"
rm -f "$root"/etc/ssh/ssh_host_*
# OpenSSH 9.8 and later (trixie, sid) penalise a source address for each
# connection that does not log in, and then refuse it for a while. Every
# connection to the guest comes from one address (slirp's 10.0.2.2), and
# labrun's wait for SSH while the guest boots makes such connections, so a
# slow boot could lock labrun out of its own guest ("SSH handshake failed:
# Disconnected"). The guest is reachable only through the loopback forward:
# no penalties. Older sshd (bookworm) does not know the option, and refuses
# to start on an option it does not know, so it is written only where known.
if chroot "$root" dpkg --compare-versions \
    "$(chroot "$root" dpkg-query -W -f='${Version}' openssh-server)" ge 1:9.8; then
  echo 'PerSourcePenalties no' >"$root/etc/ssh/sshd_config.d/labrun-penalties.conf"
fi
# Root logs in with the injected key only.
sed -i 's/^root:[^:]*:/root:*:/' "$root/etc/shadow"
# Network up by DHCP from slirp, but never waited for; no timers that wake apt.
systemctl --root="$root" enable systemd-networkd.service vmseed.service ssh.service >/dev/null 2>&1
systemctl --root="$root" mask systemd-networkd-wait-online.service apt-daily.timer \
  apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer >/dev/null 2>&1 || true
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "phase: kernel and initrd"
cp "$root"/boot/vmlinuz-* "$work/vmlinuz"
cp "$root"/boot/initrd.img-* "$work/initrd.img"

echo "phase: mkfs.ext4 -d (${disk_gib} GiB) and qemu-img convert"
truncate -s "${disk_gib}G" "$work/disk.raw"
mkfs.ext4 -q -F -L root -d "$root" "$work/disk.raw"
qemu-img convert -f raw -O qcow2 "$work/disk.raw" "$work/disk.qcow2"

# libvirt runs QEMU as libvirt-qemu: everything must be world-readable.
chmod 0644 "$work/disk.qcow2" "$work/vmlinuz" "$work/initrd.img"
mv "$work/disk.qcow2" "$work/vmlinuz" "$work/initrd.img" "$out/"
echo "phase: done"
