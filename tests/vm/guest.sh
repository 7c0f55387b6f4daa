#!/bin/sh
# PID 1 of the obgp-vm guest after switch_root (the host's /bin/sh).
# Loads the modules the agent's devices need, runs the command the host put
# in /run/obgp-vm/command.sh, writes its exit status to /run/obgp-vm/rc and
# powers the guest off.
say() { echo "obgp-vm: $*"; }
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up
# crc32c_generic: soft dependency of libcrc32c, which openvswitch needs
for m in dummy vrf 8021q crc32c_generic openvswitch ifb veth bridge; do
  modprobe "$m" || say "modprobe $m failed"
done
export OBGP_VM=1
say "guest ready after $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
say "command start"
/bin/sh /run/obgp-vm/command.sh
rc=$?
say "command exited with status $rc"
echo "$rc" > /run/obgp-vm/rc
sync
echo o > /proc/sysrq-trigger
while :; do sleep 1; done
