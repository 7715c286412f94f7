#!/usr/bin/env bash
# User-space instructions per I/O of the worker loop (callgrind: stable counts,
# whatever the machine is doing). Counts only inside the engine's Drive() (the
# I/O loop, callgrind --toggle-collect), so start-up, file layout and reporting
# are excluded.
#   bench/engine/callgrind.sh [FILE] [extra fio args...]
# Environment: AGENT=path (default build/bin/iofleet-agent); FUNCTIONS=1 also
# prints instructions per I/O per function (callgrind_functions.py);
# KEEP=path keeps the callgrind output there.
set -euo pipefail
cd "$(dirname "$0")/../.."
agent=${AGENT:-build/bin/iofleet-agent}
file=${1:-/var/tmp/iofleet-bench/engine.dat}
shift || true
mkdir -p "$(dirname "$file")"
[ -f "$file" ] || fallocate -l 1G "$file"
out=$(mktemp)
ios=65536
# setsid: `iofleet-agent run` leads a session of its own, forking its work
# into a child unless it already leads one (docs/agent-cpu-share.md); under
# setsid nothing forks, so callgrind counts the process that does the I/O.
setsid -w valgrind --tool=callgrind --toggle-collect='*::Drive(*' --callgrind-out-file="$out" \
  "$agent" run --name=cg --filename="$file" --size=256m --bs=4k --rw=randread \
  --direct=1 "$@" --output-format=json >/dev/null 2>"$out.err"
total=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk '/::Drive\(/ && !done {print $1; done=1}' | tr -dc 0-9)
python3 -c "print('instructions per I/O in the loop: %.0f  (%s total / $ios I/Os)' % ($total/$ios, '$total'))"
if [ "${FUNCTIONS:-0}" = 1 ]; then
  python3 bench/engine/callgrind_functions.py "$out" "$ios"
fi
if [ -n "${KEEP:-}" ]; then cp "$out" "$KEEP"; fi
rm -f "$out" "$out.err"
