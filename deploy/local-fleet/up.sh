#!/usr/bin/env bash
# deploy/local-fleet/up.sh N: a controller and N agents on this machine, each
# agent a separate "host" in its own network namespace.
#
#   root namespace:  bridge iofbr0 = 10.77.0.1/24; iofleet-controller listens on
#                    10.77.0.1:7070 (gRPC) and 10.77.0.1:7080 (REST, /metrics)
#   iofleet-agentI:  eth0 = 10.77.0.(10+I)/24 (veth to the bridge), lo;
#                    iofleet-agent serve --name=agentI
#                    --labels=host=agentI,rack=r(I%2),fleet=local
#                    --allow-path=STATE/agentI/scratch (a 16 MiB scratch file in it)
#   STATE (default /tmp/iofleet-local-fleet): logs, PIDs, data, fleet.env
#
# Needs root and iproute2 (installed with apt-get if missing). Binaries come from
# build/bin (or IOFLEET_BIN_DIR). A fleet already up is taken down first.
# Environment: IOFLEET_FLEET_STATE, IOFLEET_FLEET_NET (default 10.77.0),
# IOFLEET_FLEET_NS_PREFIX (iofleet-agent), IOFLEET_FLEET_VETH_PREFIX (iofv),
# IOFLEET_FLEET_BRIDGE, IOFLEET_FLEET_GRPC_PORT, IOFLEET_FLEET_HTTP_PORT,
# IOFLEET_BIN_DIR, IOFLEET_FLEET_WAIT_S (agent registration wait, default 30;
# 0 = don't wait). Tear down with deploy/local-fleet/down.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=common.sh
. "$here/common.sh"

n=${1:-}
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || {
  echo "usage: $0 N   (1..200 agents)" >&2
  exit 2
}
bin=${IOFLEET_BIN_DIR:-$repo/build/bin}
wait_s=${IOFLEET_FLEET_WAIT_S:-30}

fleet_need_root
fleet_need_tools
for b in iofleet-controller iofleet-agent; do
  [ -x "$bin/$b" ] || fleet_die "$bin/$b missing: build first (scripts/build.sh) or set IOFLEET_BIN_DIR"
done
if ! "$bin/iofleet-agent" serve --help >/dev/null 2>&1; then
  fleet_die "$bin/iofleet-agent has no working 'serve' (built without the gRPC transport?)"
fi

if [ -n "$(fleet_namespaces)" ] || ip link show "$FLEET_BRIDGE" >/dev/null 2>&1 ||
   [ -e "$FLEET_STATE/controller.pid" ]; then
  fleet_log "a previous fleet is (partly) up: taking it down first"
  "$here/down.sh"
fi

# Cleans up what this run made if it fails half-way.
ok=0
trap '[ "$ok" = 1 ] || { fleet_log "start failed: cleaning up (logs kept in $FLEET_STATE)"; "$here/down.sh" >/dev/null 2>&1 || true; }' EXIT

mkdir -p "$FLEET_STATE"
rm -f "$FLEET_STATE"/*.pid "$FLEET_STATE/fleet.env"

# ---- network ----
ip link add "$FLEET_BRIDGE" type bridge
ip addr add "$CONTROLLER_IP/24" dev "$FLEET_BRIDGE"
ip link set "$FLEET_BRIDGE" up
for ((i = 1; i <= n; i++)); do
  ns=$FLEET_NS_PREFIX$i
  host_end=$FLEET_VETH_PREFIX$i
  peer=${FLEET_VETH_PREFIX}p$i
  ip netns add "$ns"
  ip link add "$host_end" type veth peer name "$peer"
  ip link set "$peer" netns "$ns"
  ip link set "$host_end" master "$FLEET_BRIDGE"
  ip link set "$host_end" up
  ip -n "$ns" link set "$peer" name eth0
  ip -n "$ns" addr add "$FLEET_NET.$((10 + i))/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$CONTROLLER_IP"
done

# ---- controller (root namespace, on the bridge address) ----
mkdir -p "$FLEET_STATE/controller/data"
# --init: the fleet's own state dir; a new store on the first up, the same one after.
setsid "$bin/iofleet-controller" --data-dir="$FLEET_STATE/controller/data" --init \
  --grpc-listen="$CONTROLLER_IP:$GRPC_PORT" --http-listen="$CONTROLLER_IP:$HTTP_PORT" \
  >"$FLEET_STATE/controller/controller.log" 2>&1 </dev/null &
echo $! >"$FLEET_STATE/controller.pid"
http=http://$CONTROLLER_IP:$HTTP_PORT
for ((t = 0; t < 200; t++)); do
  curl -fsS -m 2 "$http/healthz" >/dev/null 2>&1 && break
  kill -0 "$(cat "$FLEET_STATE/controller.pid")" 2>/dev/null ||
    fleet_die "controller exited: $(tail -n 5 "$FLEET_STATE/controller/controller.log")"
  sleep 0.1
done
curl -fsS -m 2 "$http/healthz" >/dev/null 2>&1 || fleet_die "controller not healthy after 20 s"

# ---- agents, one per namespace ----
for ((i = 1; i <= n; i++)); do
  ns=$FLEET_NS_PREFIX$i
  dir=$FLEET_STATE/agent$i
  mkdir -p "$dir/scratch" "$dir/spool"
  [ -f "$dir/scratch/file0" ] || fallocate -l 16M "$dir/scratch/file0" 2>/dev/null ||
    dd if=/dev/zero of="$dir/scratch/file0" bs=1M count=16 status=none
  # `ip netns exec` and setsid exec in place, so $! is the agent's own PID.
  setsid ip netns exec "$ns" "$bin/iofleet-agent" serve \
    --controller="$CONTROLLER_IP:$GRPC_PORT" --name="agent$i" \
    --labels="host=agent$i,rack=r$((i % 2)),fleet=local" \
    --allow-path="$dir/scratch" --spool-dir="$dir/spool" \
    --backoff-initial-ms=100 --backoff-max-ms=2000 \
    >"$dir/agent.log" 2>&1 </dev/null &
  echo $! >"$FLEET_STATE/agent$i.pid"
done

cat >"$FLEET_STATE/fleet.env" <<ENV
# Written by deploy/local-fleet/up.sh; source it.
IOFLEET_FLEET_N=$n
IOFLEET_FLEET_STATE=$FLEET_STATE
IOFLEET_FLEET_GRPC=$CONTROLLER_IP:$GRPC_PORT
IOFLEET_FLEET_HTTP=$http
IOFLEET_CONTROLLER=$http
ENV

# ---- wait for registration ----
if [ "$wait_s" -gt 0 ]; then
  up=0
  for ((t = 0; t < wait_s * 5; t++)); do
    up=$(curl -fsS -m 2 "$http/api/v1/agents" 2>/dev/null | python3 -c '
import json, sys
try:
    print(sum(a.get("state") == "up" for a in json.load(sys.stdin).get("agents", [])))
except Exception:
    print(0)' 2>/dev/null || echo 0)
    [ "$up" -ge "$n" ] && break
    sleep 0.2
  done
  [ "$up" -ge "$n" ] || fleet_die "only $up of $n agents registered within ${wait_s}s (logs: $FLEET_STATE/agent*/agent.log)"
fi

ok=1
cat <<MSG
local fleet up: 1 controller, $n agents (namespaces ${FLEET_NS_PREFIX}1..$n, $FLEET_NET.11..$FLEET_NET.$((10 + n)))
  controller gRPC  $CONTROLLER_IP:$GRPC_PORT   (agents dial this)
  controller REST  $http/api/v1   metrics $http/metrics
  CLI              export IOFLEET_CONTROLLER=$http; $bin/iofleet agents
  state, logs      $FLEET_STATE   (settings in $FLEET_STATE/fleet.env)
  scratch          $FLEET_STATE/agentI/scratch/file0 (16 MiB) per agent
  tear down        $here/down.sh
MSG
