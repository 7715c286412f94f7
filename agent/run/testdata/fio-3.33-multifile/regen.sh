#!/bin/bash
# Writes the .iolog beside each .fio job that has none (every one with
# --all) with fio 3.33's write_iolog (run from anywhere; needs `fio` 3.33 on
# PATH). Each job runs in a fresh temp directory, so file names in the logs
# are relative. fio's I/Os are deterministic for these jobs; only the log's
# timestamps change from one run to the next.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fio --version | grep -qx 'fio-3.33' || { echo "need fio 3.33" >&2; exit 1; }
for job in "$here"/*.fio; do
  name=$(basename "$job" .fio)
  [[ "${1:-}" != --all && -e "$here/$name.iolog" ]] && continue
  tmp=$(mktemp -d)
  (cd "$tmp" && fio --write_iolog=out.iolog "$job" > /dev/null)
  if grep -qx time_based "$job"; then
    # A time_based job's I/O count depends on the machine: its first 300
    # lines are kept (the test compares the lines both runs have).
    head -n 300 "$tmp/out.iolog" > "$here/$name.iolog"
  else
    mv "$tmp/out.iolog" "$here/$name.iolog"
  fi
  rm -rf "$tmp"
done
