# shellcheck shell=bash disable=SC2034
# Shared settings of deploy/local-fleet/{up,down}.sh (sourced, not run).
# Every name below carries an iofleet prefix so down.sh removes only what up.sh made.
FLEET_STATE=${IOFLEET_FLEET_STATE:-/tmp/iofleet-local-fleet}
FLEET_NET=${IOFLEET_FLEET_NET:-10.77.0}          # a private /24: FLEET_NET.0/24
FLEET_BRIDGE=${IOFLEET_FLEET_BRIDGE:-iofbr0}
FLEET_NS_PREFIX=${IOFLEET_FLEET_NS_PREFIX:-iofleet-agent}   # namespaces iofleet-agent1..N
FLEET_VETH_PREFIX=${IOFLEET_FLEET_VETH_PREFIX:-iofv}      # root-side veth ends iofv1..N
CONTROLLER_IP=$FLEET_NET.1
GRPC_PORT=${IOFLEET_FLEET_GRPC_PORT:-7070}
HTTP_PORT=${IOFLEET_FLEET_HTTP_PORT:-7080}

fleet_log() { echo "local-fleet: $*" >&2; }
fleet_die() { fleet_log "$*"; exit 1; }

fleet_need_root() {
  [ "$(id -u)" -eq 0 ] || fleet_die "needs root (network namespaces, veths, a bridge): run with sudo"
}

# Installs iproute2 (and curl, used to probe the controller) if missing.
fleet_need_tools() {
  local missing=()
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    fleet_log "installing ${missing[*]} (apt-get)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Sends SIGTERM to PID if it still runs BINARY (guards against PID reuse), waits
# up to 10 s, then SIGKILL.
fleet_stop_pid() {
  local pid=$1 binary=$2 i
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$binary" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    [ -d "/proc/$pid" ] || return 0
    # A zombie child of ours counts as gone.
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.1
  done
  fleet_log "pid $pid ($binary) ignored SIGTERM for 10 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

fleet_namespaces() {  # the namespaces up.sh made, one per line
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${FLEET_NS_PREFIX}[0-9]+$" || true
}
