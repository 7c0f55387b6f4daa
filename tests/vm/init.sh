#!/bin/sh
# PID 1 of the obgp-vm guest (busybox sh inside the initramfs).
# Builds the guest's root from the HOST's / (virtio-9p, read-only) under a
# tmpfs overlay, so every host tool runs unchanged, mounts the per-run
# directory (rw) at /run/obgp-vm and any extra shares, then hands over to the
# per-run script /run/obgp-vm/guest.sh written by the host.
# /etc/obgp-vm.conf (written at build time) sets KVER, HOST_MODULES and
# MODULES (9p and overlay first, then those of the agent's devices).
export PATH=/bin
. /etc/obgp-vm.conf
say() { echo "obgp-vm: $*"; }
die() { say "init failed: $*"; echo o > /proc/sysrq-trigger; while :; do sleep 1; done; }

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say "init started at $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
for m in $MODULES; do modprobe "$m" || say "modprobe $m failed"; done

p9='trans=virtio,version=9p2000.L,msize=262144'
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || die "mount host root"
mount -t tmpfs -o size=50% tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot ||
  die "mount overlay"
# fresh, empty volatile directories instead of the host's
for d in tmp run var/tmp; do mount -t tmpfs tmpfs "/newroot/$d"; done
mkdir -p /newroot/run/obgp-vm
mount -t 9p -o "$p9" run /newroot/run/obgp-vm || die "mount run directory"
# the guest kernel's modules (unpacked on the host) for every later modprobe,
# including the kernel's own auto-loading; bound from the host root itself,
# since a cache under /tmp is hidden by the tmpfs above
mkdir -p "/newroot/lib/modules/$KVER"
mount --bind "/lower$HOST_MODULES" "/newroot/lib/modules/$KVER" || die "bind modules"
# extra read-write shares: lines "TAG PATH", mounted at the same path
while read -r tag path; do
  [ -n "$tag" ] || continue
  mkdir -p "/newroot$path" && mount -t 9p -o "$p9" "$tag" "/newroot$path" ||
    say "share $path not mounted"
done < /newroot/run/obgp-vm/shares

say "host root mounted at $(cut -d' ' -f1 /proc/uptime)s"
for d in proc sys dev; do mount --move "/$d" "/newroot/$d"; done
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
exec switch_root /newroot /bin/sh /run/obgp-vm/guest.sh
