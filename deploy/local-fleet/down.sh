#!/usr/bin/env bash
# deploy/local-fleet/down.sh [--purge]: stops the local fleet started by up.sh and
# removes its network namespaces, veths and bridge. Idempotent: safe to run when
# nothing (or only part) is up. --purge also deletes the state directory (logs,
# database, scratch files); without it they are kept for inspection.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
purge=0
for a in "$@"; do
  case "$a" in
    --purge) purge=1 ;;
    *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
  esac
done
fleet_need_root
command -v ip >/dev/null 2>&1 || fleet_need_tools

# Agents first (so they do not spool against a vanished controller), by PID file
# and then by whatever still runs inside each namespace.
for pidf in "$FLEET_STATE"/agent*.pid; do
  [ -e "$pidf" ] || continue
  fleet_stop_pid "$(cat "$pidf")" iofleet-agent
  rm -f "$pidf"
done
for ns in $(fleet_namespaces); do
  for pid in $(ip netns pids "$ns" 2>/dev/null); do
    fleet_stop_pid "$pid" ""   # anything left in our namespace is ours
  done
  ip netns del "$ns" 2>/dev/null || fleet_log "could not delete namespace $ns"
done
if [ -e "$FLEET_STATE/controller.pid" ]; then
  fleet_stop_pid "$(cat "$FLEET_STATE/controller.pid")" iofleet-controller
  rm -f "$FLEET_STATE/controller.pid"
fi

# Root-side veth ends go with their namespace; remove any left over.
for l in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
           grep -E "^${FLEET_VETH_PREFIX}[0-9]+$" || true); do
  ip link del "$l" 2>/dev/null || true
done
if ip link show "$FLEET_BRIDGE" >/dev/null 2>&1; then
  ip link del "$FLEET_BRIDGE"
fi
rm -f "$FLEET_STATE/fleet.env"
if [ "$purge" = 1 ]; then
  rm -rf "$FLEET_STATE"
fi
fleet_log "down (state ${FLEET_STATE}$([ "$purge" = 1 ] && echo ' purged' || echo ' kept'))"
