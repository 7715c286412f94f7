#!/usr/bin/env bash
# Prints, one per line and sorted, the Debian packages that provide the shared
# libraries the given ELF binaries load (per ldd), so a runtime image installs
# exactly those. Used by the build stage of docker/*.Dockerfile; also handy on a
# host: `docker/runtime-deps.sh build/bin/*`.
# Exits non-zero if a library is missing or belongs to no package.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
libs=$(for b in "$@"; do
  if ! out=$(ldd "$b" 2>&1); then echo "runtime-deps: ldd $b: $out" >&2; exit 1; fi
  if grep -q 'not found' <<<"$out"; then
    echo "runtime-deps: $b: unresolved libraries:" >&2
    grep 'not found' <<<"$out" >&2
    exit 1
  fi
  awk '/=> \//{print $3}' <<<"$out"
done | sort -u)
# Debian 12 is merged-/usr: ldd may say /lib/... while dpkg knows /usr/lib/...
# (or the other way round), so ask for the path as given, its real path and the
# /usr forms, exactly (never a glob: "*/libc.so.6" would also match libc6-i386),
# all in one dpkg call (dpkg -S is slow per call).
declare -A cands=()
all=()
for lib in $libs; do
  real=$(readlink -f "$lib")
  c=$(printf '%s\n' "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}" | sort -u | tr '\n' ' ')
  cands[$lib]=$c
  # shellcheck disable=SC2206
  all+=($c)
done
declare -A owner=()
while IFS= read -r line; do
  case "$line" in
    diversion\ *) continue ;;
  esac
  pkgs=${line%%: /*}
  path=${line#*: }
  owner[$path]=${pkgs%%,*}
done < <(printf '%s\n' "${all[@]}" | sort -u | xargs -r dpkg -S 2>/dev/null || true)
status=0
out=()
for lib in $libs; do
  pkg=""
  for p in ${cands[$lib]}; do
    if [ -n "${owner[$p]:-}" ]; then pkg=${owner[$p]}; break; fi
  done
  if [ -z "$pkg" ]; then
    echo "runtime-deps: $lib belongs to no Debian package" >&2
    status=1
    continue
  fi
  out+=("${pkg%%:*}")
done
[ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}" | sort -u
exit "$status"
