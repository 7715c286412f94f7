#!/usr/bin/env bash
# vm.exit_status: COMMAND's output and exit status come back out of the guest,
# which sees this checkout at the same path, read-only, with a writable /tmp.
set -uo pipefail
run=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$("$run" -- sh -c 'echo "out $(uname -r)"; echo err >&2; test -r "$0" || exit 9;
  touch "$0.x" 2>/dev/null && exit 8; echo ok >/tmp/w && exit 3' "$here/run_test.sh")
rc=$?
[ "$rc" = 77 ] && exit 77
echo "$out"
[ "$rc" = 3 ] || { echo "FAIL: status $rc, want 3"; exit 1; }
grep -q '^out .*-amd64$' <<<"$out" || { echo "FAIL: no stdout from the guest"; exit 1; }
grep -q '^err$' <<<"$out" || { echo "FAIL: no stderr from the guest"; exit 1; }
echo PASS
