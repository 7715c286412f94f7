#!/bin/bash
# Stage 2 of the test-bed guest (tests/vm/run.sh): runs as root with the host's
# root file system read-only at /. Makes the writable places a command needs,
# loads the drivers the host asked for, runs the command from the control share
# and leaves its exit status there. Stage 1 (init.c) powers off when this exits.
set -u
ctl=/run/iofleet-vm
msize=${1:-512000}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=1777,size=50% tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
# /root stays visible (tools may live there, e.g. a pyenv); HOME is /tmp.
for d in /var/tmp /var/log /var/cache /var/lib/systemd; do
  [ -d "$d" ] && mount -t tmpfs -o mode=0755 tmpfs "$d"
done
chmod 1777 /var/tmp
mkdir -p /dev/pts /dev/shm "$ctl"
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t 9p -o "trans=virtio,version=9p2000.L,msize=$msize" iofleetctl "$ctl" || {
  echo "iofleet-vm: stage 2: cannot mount the control share" >&2
  exit 125
}
stty -F /dev/console -onlcr 2>/dev/null
ip link set lo up 2>/dev/null
hostname iofleet-vm
: >"$ctl/booted"

# shellcheck source=/dev/null
. "$ctl/config"

# Writable host directories (--share), at the same paths as on the host.
i=0
for dir in "${SHARES[@]}"; do
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=$msize" "share$i" "$dir" || {
    echo "iofleet-vm: stage 2: cannot mount share $dir" >&2
    echo 125 >"$ctl/status"
    exit 125
  }
  i=$((i + 1))
done

# No udev in the guest: load the drivers of the emulated devices by hand.
modprobe configfs && mount -t configfs configfs /sys/kernel/config 2>/dev/null
modprobe -a loop zram 2>/dev/null
if [ "$NVME" -gt 0 ]; then
  # One polled queue per controller: hipri (IOPOLL) really polls.
  modprobe nvme poll_queues=1
  # Namespaces show up asynchronously after the controllers reset.
  for _ in $(seq 100); do
    n=$(find /dev -maxdepth 1 -name 'nvme*n*' ! -name '*p*' | wc -l)
    [ "$n" -ge "$NVME" ] && break
    sleep 0.1
  done
fi
if [ "$NULL_BLK" = 1 ]; then
  # shellcheck disable=SC2086
  modprobe null_blk $NULL_BLK_ARGS || {
    echo "iofleet-vm: stage 2: modprobe null_blk $NULL_BLK_ARGS failed" >&2
    echo 125 >"$ctl/status"
    exit 125
  }
fi

bash "$ctl/cmd"
rc=$?
echo "$rc" >"$ctl/status"
sync
exit "$rc"
