#!/usr/bin/env bash
# The README's main command. Installs what is missing, builds, then starts a
# controller (SQLite in a data dir) and one local agent, submits an A/B job
# (io_uring vs libaio, 4k random reads on a scratch file, a few repetitions each),
# shows it live and prints the verdict table. Both daemons keep running; their
# addresses are printed at the end. `scripts/demo.sh stop` stops them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
state=${IOFLEET_DEMO_DIR:-/var/tmp/iofleet-demo}
http=${IOFLEET_DEMO_HTTP:-127.0.0.1:7080}
grpc=${IOFLEET_DEMO_GRPC:-127.0.0.1:7070}

stop() {
  for p in agent controller; do
    if [ -f "$state/$p.pid" ]; then
      kill "$(cat "$state/$p.pid")" 2>/dev/null || true
      rm -f "$state/$p.pid"
    fi
  done
}
if [ "${1:-}" = "stop" ]; then
  stop
  echo "stopped"
  exit 0
fi

scripts/deps.sh
mkdir -p "$state/data" "$state/scratch" "$state/spool"
echo "== building (log: $state/build.log)"
scripts/build.sh >"$state/build.log" 2>&1 || { tail -40 "$state/build.log"; exit 1; }
stop
# Unwritten extents: O_DIRECT reads are served without touching the disk, so the
# comparison measures the engines themselves.
[ -f "$state/scratch/ab.dat" ] || fallocate -l 1G "$state/scratch/ab.dat"

echo "== starting iofleet-controller (data in $state/data)"
# --init makes the store on the first run; later runs open it.
build/bin/iofleet-controller --data-dir="$state/data" --init --grpc-listen="$grpc" --http-listen="$http" \
  >"$state/controller.log" 2>&1 &
echo $! >"$state/controller.pid"
for _ in $(seq 100); do
  grep -q "http listening" "$state/controller.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "http listening" "$state/controller.log" || { cat "$state/controller.log"; exit 1; }

echo "== starting iofleet-agent serve (name $(hostname), allowed: $state/scratch)"
build/bin/iofleet-agent serve --controller="$grpc" --name="$(hostname)" --labels=role=demo \
  --allow-path="$state/scratch" --spool-dir="$state/spool" >"$state/agent.log" 2>&1 &
echo $! >"$state/agent.pid"
export IOFLEET_CONTROLLER="http://$http"
for _ in $(seq 100); do
  build/bin/iofleet agents 2>/dev/null | grep -q "$(hostname)" && break
  sleep 0.1
done
build/bin/iofleet agents

cat >"$state/ab.json" <<EOF
{
  "name": "demo: io_uring vs libaio, 4k randread QD32",
  "fio": "[randread]\nfilename=$state/scratch/ab.dat\nrw=randread\nbs=4k\ndirect=1\niodepth=32\nsize=1g\ntime_based\nruntime=2\n",
  "hosts": ["$(hostname)"],
  "repeat": ${IOFLEET_DEMO_REPEAT:-5},
  "variants": [
    {"name": "A", "options": {"ioengine": "libaio"}},
    {"name": "B", "options": {"ioengine": "io_uring"}}
  ],
  "tags": {"demo": "1"}
}
EOF
echo "== submitting $state/ab.json (arms A=libaio, B=io_uring, runs interleaved A B B A ...)"
job=$(build/bin/iofleet submit "$state/ab.json")
echo "job $job"
build/bin/iofleet watch "$job" || true
echo
echo "== result of the first run (fio-like text)"
first=$(build/bin/iofleet runs --job "$job" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
build/bin/iofleet result "$first" --format=normal | head -30
echo
echo "== verdict (B = io_uring against A = libaio)"
set +e
build/bin/iofleet compare "$job" --format=markdown
rc=$?
set -e
echo
echo "controller: REST http://$http  gRPC $grpc  metrics http://$http/metrics  dashboard http://$http/"
echo "agent:      $(hostname), log $state/agent.log"
echo "stop both:  scripts/demo.sh stop"
exit $rc
