#!/usr/bin/env bash
# Boots a throwaway QEMU guest on Debian's kernel (linux-image-amd64) with the
# host's root file system shared read-only over 9p (so this checkout and its
# build are at the same paths inside), emulated NVMe namespaces, null_blk and
# NUMA nodes on request; runs COMMAND inside as root, prints its output and
# exits with its status.
#
#   tests/vm/run.sh [options] -- COMMAND [ARG...]
#
#   --nvme N            N emulated NVMe namespaces, two per controller: serials
#                       IOFLEETVM0000..., 512-byte LBAs on even controllers and
#                       4096-byte on odd ones, 1 GiB each (sparse files here)
#   --null-blk          load null_blk (memory-less, blk-mq, no completion delay)
#   --null-blk-args A   its module parameters (default "nr_devices=2 queue_mode=2
#                       irqmode=0 gb=1 bs=512"); configfs is mounted either way
#   --numa N            N NUMA nodes, CPUs and memory split evenly; NVMe
#                       controller c hangs off node c % N (PCI expander bridges)
#   --cpus N            vCPUs (default 2, or N for --numa N when that is more)
#   --mem MIB           guest memory (default 1024)
#   --share DIR         DIR is writable inside at the same path (repeatable)
#   --env NAME=VALUE    set in COMMAND's environment (repeatable)
#   --accel auto|kvm|tcg  default auto: KVM when /dev/kvm works and the guest
#                       boots under it within --kvm-boot-timeout seconds, else
#                       TCG (the verdict is remembered per kernel and QEMU)
#   --kvm-boot-timeout S  default 20
#   --timeout S         kill the guest after S seconds (default 600): exit 124
#   -v                  show the kernel's console messages
#
# Inside: /tmp (HOME), /run, /var/tmp are tmpfs (half the guest memory), the
# loopback interface is up, no network; COMMAND runs in the current directory.
# Exit status: COMMAND's; 124 on timeout; 125 when the guest cannot start or
# run it (boot failure, bad options); 77 when QEMU or the kernel is not installed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
nvme=0 null_blk=0 null_blk_args="nr_devices=2 queue_mode=2 irqmode=0 gb=1 bs=512"
numa=0 cpus="" mem=1024 accel=${IOFLEET_VM_ACCEL:-auto} kvm_boot_timeout=20
timeout_s=600 verbose=0
shares=() envs=()

die() { echo "vm/run.sh: $*" >&2; exit 125; }
need_int() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 wants a number, got '$2'"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --nvme) need_int "$1" "${2:-}"; nvme=$2; shift 2 ;;
    --null-blk) null_blk=1; shift ;;
    --null-blk-args) null_blk=1; null_blk_args=${2:-}; shift 2 ;;
    --numa) need_int "$1" "${2:-}"; numa=$2; shift 2 ;;
    --cpus) need_int "$1" "${2:-}"; cpus=$2; shift 2 ;;
    --mem) need_int "$1" "${2:-}"; mem=$2; shift 2 ;;
    --share) [ -d "${2:-}" ] || die "--share: '${2:-}' is not a directory"
      shares+=("$(cd "$2" && pwd)"); shift 2 ;;
    --env) [[ ${2:-} == *=* ]] || die "--env wants NAME=VALUE, got '${2:-}'"
      envs+=("$2"); shift 2 ;;
    --accel) accel=${2:-}; shift 2 ;;
    --kvm-boot-timeout) need_int "$1" "${2:-}"; kvm_boot_timeout=$2; shift 2 ;;
    --timeout) need_int "$1" "${2:-}"; timeout_s=$2; shift 2 ;;
    -v) verbose=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (options end with --)" ;;
  esac
done
[ $# -gt 0 ] || die "no command (usage: run.sh [options] -- COMMAND...)"
case "$accel" in auto|kvm|tcg) ;; *) die "--accel: '$accel' is not auto, kvm or tcg" ;; esac
[ "$numa" -ne 1 ] || die "--numa 1 is the default topology; ask for 2 or more nodes"
[ -n "$cpus" ] || cpus=$(( numa > 2 ? numa : 2 ))
[ "$cpus" -ge 1 ] || die "--cpus must be at least 1"
if [ "$numa" -gt 0 ]; then
  [ "$cpus" -ge "$numa" ] || die "--cpus $cpus is fewer than --numa $numa nodes"
  [ $((cpus % numa)) -eq 0 ] || die "--cpus $cpus does not split evenly over $numa nodes"
  [ $((mem % numa)) -eq 0 ] || die "--mem $mem does not split evenly over $numa nodes"
fi

missing() { echo "vm/run.sh: $* (scripts/deps.sh installs it)" >&2; exit 77; }
qemu=$(command -v qemu-system-x86_64) || missing "qemu-system-x86_64 is missing"
# The newest Debian kernel whose modules are installed.
kernel="" kver=""
for k in $(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V -r); do
  v=${k#/boot/vmlinuz-}
  if [ -d "/lib/modules/$v/kernel" ]; then kernel=$k kver=$v; break; fi
done
kernel=${IOFLEET_VM_KERNEL:-$kernel}
[ -n "$kernel" ] || missing "no /boot/vmlinuz-*-amd64 with its modules (linux-image-amd64)"
cc=$(command -v cc || command -v gcc) || die "no C compiler for the guest's init"

work=$(mktemp -d "${TMPDIR:-/tmp}/iofleet-vm.XXXXXX")
qpid=""
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then kill "$qpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# initramfs: the static stage-1 init and the modules that mount a 9p root.
mkdir -p "$work/initrd/modules" "$work/ctl"
"$cc" -static -Os -o "$work/initrd/init" "$here/init.c" || die "cannot build the guest's init"
deps=$(modprobe -S "$kver" --show-depends -a virtio_pci 9pnet_virtio 9p) ||
  die "modules for a 9p root are missing for $kver"
while read -r verb f _; do
  [ "$verb" = insmod ] || continue  # "builtin ..."
  m=$(basename "$f"); m=${m%%.ko*}
  grep -qx "$m.ko" "$work/initrd/modules/order" 2>/dev/null && continue
  case "$f" in
    *.ko) cp "$f" "$work/initrd/modules/$m.ko" ;;
    *.ko.xz) xz -dc "$f" >"$work/initrd/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$f" >"$work/initrd/modules/$m.ko" ;;
    *) die "module $m: unsupported file $f" ;;
  esac
  echo "$m.ko" >>"$work/initrd/modules/order"
done <<<"$deps"
(cd "$work/initrd" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio"

# What stage 2 reads: the devices to wait for, shares and the command.
{
  printf 'NVME=%d\nNULL_BLK=%d\nNULL_BLK_ARGS=%q\n' "$nvme" "$null_blk" "$null_blk_args"
  printf 'SHARES=('; for s in "${shares[@]}"; do printf '%q ' "$s"; done; printf ')\n'
} >"$work/ctl/config"
{
  echo 'exec 2>&1'
  echo 'export HOME=/tmp'
  for e in "${envs[@]}"; do printf 'export %q\n' "$e"; done
  printf 'cd %q || exit 125\n' "$PWD"
  printf '%q ' "$@"; echo
} >"$work/ctl/cmd"

args=(-M pc -m "$mem" -smp "$cpus" -nodefaults -no-user-config -display none
      -serial stdio -monitor none -no-reboot
      -kernel "$kernel" -initrd "$work/initrd.cpio"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
      -virtfs "local,path=$work/ctl,mount_tag=iofleetctl,security_model=none")
i=0
for s in "${shares[@]}"; do
  args+=(-virtfs "local,path=$s,mount_tag=share$i,security_model=none,multidevs=remap")
  i=$((i + 1))
done
if [ "$numa" -gt 0 ]; then
  per_cpu=$((cpus / numa)) per_mem=$((mem / numa))
  for ((n = 0; n < numa; n++)); do
    args+=(-object "memory-backend-ram,id=mem$n,size=${per_mem}M"
           -numa "node,nodeid=$n,cpus=$((n * per_cpu))-$(((n + 1) * per_cpu - 1)),memdev=mem$n"
           -device "pxb,id=pxb$n,bus_nr=$((32 * (n + 1))),numa_node=$n,bus=pci.0")
  done
fi
for ((j = 0; j < nvme; j++)); do
  c=$((j / 2)) nsid=$((j % 2 + 1))
  truncate -s 1G "$work/nvme$j.img"
  if [ "$nsid" -eq 1 ]; then
    dev="nvme,id=nvme$c,serial=$(printf 'IOFLEETVM%04d' "$c"),max_ioqpairs=$((c % 2 == 0 ? 4 : 2))"
    [ "$numa" -gt 0 ] && dev+=",bus=pxb$((c % numa))"
    args+=(-device "$dev")
  fi
  lbs=$((c % 2 == 0 ? 512 : 4096))
  args+=(-drive "file=$work/nvme$j.img,if=none,id=nvmedrive$j,format=raw,discard=unmap"
         -device "nvme-ns,drive=nvmedrive$j,bus=nvme$c,nsid=$nsid,logical_block_size=$lbs,physical_block_size=$lbs")
done

cmdline="console=ttyS0 panic=-1 iofleet_stage2=$here/guest.sh"
cmdline+=" mitigations=off tsc=reliable no_timer_check"
[ "$verbose" = 1 ] || cmdline+=" quiet loglevel=1"

kvm_verdict="${TMPDIR:-/tmp}/iofleet-vm-kvm-$kver-qemu$("$qemu" --version | awk 'NR == 1 {print $4}')"
pdeath=""
setpriv --pdeathsig KILL true 2>/dev/null && pdeath="setpriv --pdeathsig KILL"
kvm_usable() { [ -r /dev/kvm ] && [ -w /dev/kvm ]; }

# boot ACCEL BOOT_TIMEOUT: runs the guest; returns 200 when it did not reach
# stage 2 within BOOT_TIMEOUT seconds (0 = no limit), else QEMU's status.
boot() {
  local a=$1 boot_timeout=$2 cpu=max start
  [ "$a" = kvm ] && cpu=host
  rm -f "$work/ctl/booted" "$work/ctl/status"
  # The kernel's last word ("reboot: Power down") is not COMMAND's output.
  # If this script is killed (a ctest timeout sends SIGKILL), QEMU goes with it.
  $pdeath "$qemu" "${args[@]}" -accel "$a" -cpu "$cpu" -append "$cmdline" </dev/null \
    > >(grep --line-buffered -v -E '^\[ *[0-9.]+\] reboot: Power down' || true) &
  qpid=$!
  start=$SECONDS
  while kill -0 "$qpid" 2>/dev/null; do
    if [ "$boot_timeout" -gt 0 ] && [ ! -e "$work/ctl/booted" ] &&
       [ $((SECONDS - start)) -ge "$boot_timeout" ]; then
      kill "$qpid"; wait "$qpid" 2>/dev/null || true; qpid=""
      return 200
    fi
    if [ $((SECONDS - start)) -ge "$timeout_s" ]; then
      kill "$qpid"; wait "$qpid" 2>/dev/null || true; qpid=""
      echo "vm/run.sh: the guest ran past --timeout $timeout_s s; killed" >&2
      return 124
    fi
    sleep 0.2
  done
  local rc=0
  wait "$qpid" || rc=$?
  qpid=""
  return "$rc"
}

rc=0
used=tcg
kvm_known_bad() { case "$(cat "$kvm_verdict" 2>/dev/null)" in hangs|fails) return 0 ;; esac; return 1; }
if [ "$accel" = kvm ] || { [ "$accel" = auto ] && kvm_usable && ! kvm_known_bad; }; then
  kvm_usable || die "--accel kvm: /dev/kvm is missing or not accessible"
  used=kvm
  boot kvm "$kvm_boot_timeout" || rc=$?
  # QEMU can also die under KVM before the guest boots (seen: "failed to set
  # MSR 0x10a", an assertion in QEMU's kvm.c, status 134): TCG then too.
  if [ "$rc" = 200 ] || { [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ ! -e "$work/ctl/booted" ]; }; then
    if [ "$rc" = 200 ]; then
      echo "vm/run.sh: the guest did not boot under KVM within $kvm_boot_timeout s" >&2
      verdict=hangs
    else
      echo "vm/run.sh: QEMU exited with status $rc under KVM before the guest booted" >&2
      verdict=fails
    fi
    [ "$accel" = kvm ] && exit 125
    echo "$verdict" >"$kvm_verdict"
    echo "vm/run.sh: falling back to TCG (remembered in $kvm_verdict)" >&2
    used=tcg rc=0
  else
    echo boots >"$kvm_verdict"
  fi
fi
[ "$used" = tcg ] && { boot tcg 0 || rc=$?; }
[ "$rc" = 124 ] && exit 124
[ -s "$work/ctl/status" ] || die "the guest ($used) stopped without running the command (QEMU status $rc; -v shows the kernel log)"
exit "$(cat "$work/ctl/status")"
