#!/bin/bash
# Container HEALTHCHECK for the iofleet images, with nothing but bash (no curl).
#   controller: GET /healthz on the --http-listen port must answer 200.
#   agent:      the --controller HOST:PORT must accept a TCP connection (the agent
#               dials out; there is no port of its own to probe).
# The address comes from the daemon's own command line (found in /proc), or from
# IOFLEET_HEALTHCHECK_ADDR=HOST:PORT when flags live in a config file.
set -uo pipefail

cmdline_flag() {  # cmdline_flag BINARY FLAG -> value of --FLAG=VALUE of that process
  local pid arg
  for pid in /proc/1 /proc/[0-9]*; do   # PID 1 first: the daemon, in a container
    [ -r "$pid/cmdline" ] || continue
    local -a argv=()
    mapfile -d '' -t argv <"$pid/cmdline" 2>/dev/null || continue
    [ ${#argv[@]} -gt 0 ] && [ "${argv[0]##*/}" = "$1" ] || continue
    for ((i = 1; i < ${#argv[@]}; i++)); do
      arg=${argv[$i]}
      case "$arg" in
        "--$2="*) echo "${arg#--"$2"=}" ;;
        "--$2") echo "${argv[$((i + 1))]:-}" ;;
      esac
    done | tail -n1
    return 0
  done
  return 1
}

split_hostport() {  # HOST:PORT or [V6]:PORT -> "HOST PORT"; wildcard -> loopback
  local a=$1 host port
  port=${a##*:}
  host=${a%:*}
  host=${host#[}
  host=${host%]}
  case "$host" in
    "" | 0.0.0.0 | "*") host=127.0.0.1 ;;
    "::") host=::1 ;;
  esac
  echo "$host $port"
}

mode=${1:-}
case "$mode" in
  controller)
    addr=${IOFLEET_HEALTHCHECK_ADDR:-$(cmdline_flag iofleet-controller http-listen || true)}
    addr=${addr:-127.0.0.1:7080}
    read -r host port <<<"$(split_hostport "$addr")"
    { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || { echo "unhealthy: cannot connect to $host:$port"; exit 1; }
    printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" >&3
    status=$(timeout 5 head -n1 <&3 | tr -d '\r')
    case "$status" in
      "HTTP/1."?" 200"*) exit 0 ;;
      *) echo "unhealthy: /healthz answered \"$status\""; exit 1 ;;
    esac
    ;;
  agent)
    from_cmdline=$(cmdline_flag iofleet-agent controller) || { echo "unhealthy: no iofleet-agent process"; exit 1; }
    addr=${IOFLEET_HEALTHCHECK_ADDR:-$from_cmdline}
    [ -n "$addr" ] || { echo "unhealthy: agent has no --controller flag"; exit 1; }
    read -r host port <<<"$(split_hostport "$addr")"
    if timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then exit 0; fi
    echo "unhealthy: controller $host:$port unreachable"
    exit 1
    ;;
  *)
    echo "usage: $0 controller|agent" >&2
    exit 2
    ;;
esac
