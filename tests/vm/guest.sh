#!/bin/sh
# PID 1 of the obgp-vm guest after switch_root (the host's /bin/sh).
# Runs the command the host put in /run/obgp-vm/command.sh, writes its exit
# status to /run/obgp-vm/rc and powers the guest off. (The modules the
# agent's devices need were loaded by the initramfs.)
say() { echo "obgp-vm: $*"; }
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up
export OBGP_VM=1
say "guest ready after $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
say "command start"
/bin/sh /run/obgp-vm/command.sh
rc=$?
say "command exited with status $rc"
echo "$rc" > /run/obgp-vm/rc
sync
echo o > /proc/sysrq-trigger
# power-off is under way; 9p may be gone already, so spawn nothing more
while :; do :; done
