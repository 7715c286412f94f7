#!/usr/bin/env bash
# deploy/checks/run.sh [CHECK...]: offline checks of everything under deploy/ and
# docker/. With no CHECK, runs all but `fleet`; `all` runs every check.
#
#   config    deploy/config/*.example document every flag of the binaries, and the
#             binaries accept every documented key with its default value
#   docker    docker/*.Dockerfile pass deploy/checks/dockerfile-lint.sh (which must
#             also still catch the broken testdata); docker/runtime-deps.sh maps the
#             built binaries to Debian packages
#   yaml      yamllint --strict on all manifests
#   k8s       deploy/checks/k8s-schema-check.py on deploy/kubernetes (rendered with
#             `kubectl kustomize` when kubectl exists), and on broken testdata
#   systemd   install.sh into a temporary root, then `systemd-analyze verify` (any
#             warning fails) and `systemd-analyze security --offline` thresholds
#   install   install.sh layout, DESTDIR/--prefix rewriting, config kept on reinstall
#   shell     shellcheck -S warning on the scripts under deploy/ and docker/
#   fleet     deploy/checks/local-fleet-test.sh (root; real binaries; ~10 s)
#   containers docker/compose-test.sh: builds the images offline with podman (base
#             from Debian packages) and runs controller + PostgreSQL + agents as
#             containers, O_DIRECT and io_uring jobs (root + podman; opt-in: only
#             when named, or with `all`)
#
# Each check prints PASS, FAIL or SKIP (with the reason: a missing tool that
# could not be installed, or binaries not built yet). A SKIP is never a pass.
# Exit status: 0 if nothing failed; 1 if something failed; 77 if a single
# requested check was skipped (ctest's SKIP_RETURN_CODE).
# Environment: IOFLEET_BIN_DIR (default build/bin), IOFLEET_CHECKS_NO_APT=1 to
# never apt-get install a missing tool.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${IOFLEET_BIN_DIR:-$repo/build/bin}
cd "$repo" || exit 1

tmp=$(mktemp -d /tmp/iofleet-deploy-checks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# apt_install PKG...: installs missing Debian packages, quietly; fails without root/apt.
apt_install() {
  [ "${IOFLEET_CHECKS_NO_APT:-0}" = 1 ] && return 1
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null || return 1
  if [ ! -e "$tmp/.apt-updated" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    touch "$tmp/.apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}

# A python3 that has PyYAML (Debian's python3-yaml lives in /usr/bin/python3,
# which may not be the first python3 on PATH).
yaml_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' >/dev/null 2>&1; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

SKIP=77
check_config() {
  local rc=0 ex b out flags help_flags documented f
  for pair in controller:iofleet-controller agent:iofleet-agent; do
    ex=deploy/config/${pair%%:*}.conf.example
    b=${pair#*:}
    [ -x "$bin/$b" ] || { echo "  $b not built ($bin): cannot compare flags"; return $SKIP; }
    local -a sub=()
    [ "$b" = iofleet-agent ] && sub=(serve)
    # Keys as flags, with every commented `#key = default` line switched on.
    mapfile -t flags < <(sed -nE 's/^#?([a-z][a-z0-9-]*) =( (.*))?$/--\1=\3/p' "$ex" | sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]+$//')
    mapfile -t documented < <(printf '%s\n' "${flags[@]}" | sed -E 's/^--([^=]*)=.*/\1/' | sort -u)
    help_text=$("$bin/$b" "${sub[@]}" --help 2>&1)
    mapfile -t help_flags < <(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help_text" | sed 's/^--//' | grep -vxE 'help|config|version' | sort -u)
    for f in "${help_flags[@]}"; do
      # grep without -q reads all its input: with -q it can exit at the first
      # match while printf still writes, and under pipefail printf's SIGPIPE
      # made a listed key read as missing (seen once in CI).
      if ! printf '%s\n' "${documented[@]}" | grep -x -- "$f" >/dev/null; then
        echo "  $ex: flag --$f of $b is not documented"
        rc=1
      fi
    done
    for f in "${documented[@]}"; do
      if ! printf '%s\n' "${help_flags[@]}" | grep -x -- "$f" >/dev/null; then
        echo "  $ex: key $f is not in \`$b ${sub[*]} --help\`"
        rc=1
      fi
    done
    # The binary's own parser must accept every key with its documented default
    # (flags before --help are parsed; an unknown or invalid one exits 2).
    if ! out=$("$bin/$b" "${sub[@]}" "${flags[@]}" --help 2>&1); then
      echo "  $b rejects the documented defaults: $(head -n1 <<<"$out")"
      rc=1
    fi
    # Once the binary reads config files itself, check the example through it too.
    if grep -q -- '--config' <<<"$help_text"; then
      sed -E 's/^#([a-z][a-z0-9-]* =)( |$)/\1\2/' "$ex" >"$tmp/${pair%%:*}.conf"
      if ! out=$("$bin/$b" "${sub[@]}" --config="$tmp/${pair%%:*}.conf" --help 2>&1); then
        echo "  $b --config rejects $ex: $(head -n1 <<<"$out")"
        rc=1
      fi
    fi
    echo "  $ex: ${#documented[@]} keys = the ${#help_flags[@]} flags of $b ${sub[*]}"
  done
  return $rc
}

check_docker() {
  local rc=0 out
  "$here/dockerfile-lint.sh" --require-user docker/controller.Dockerfile || rc=1
  "$here/dockerfile-lint.sh" docker/agent.Dockerfile || rc=1
  [ -f .dockerignore ] || { echo "  .dockerignore missing"; rc=1; }
  # The linter must still fire on deliberately broken files.
  out=$("$here/dockerfile-lint.sh" --require-user "$here/testdata/bad.Dockerfile" "$here/testdata/single-stage.Dockerfile")
  if [ $? -eq 0 ]; then
    echo "  dockerfile-lint.sh passed the broken testdata"
    rc=1
  fi
  local want
  for want in DL3000 DL3002 DL3003 DL3004 DL3006 DL3007 DL3009 DL3014 DL3015 DL3020 DL3021 DL3022 DL3025 DL3027 DL4000 DL4006 IOF001 IOF002 IOF003 IOF004; do
    grep -q " $want " <<<"$out" || { echo "  dockerfile-lint.sh no longer reports $want on testdata"; rc=1; }
  done
  # FROM ${ARG} is checked as the ARG's default.
  out=$("$here/dockerfile-lint.sh" "$here/testdata/arg-base.Dockerfile")
  grep -q 'IOF004 .*"ubuntu:22.04"' <<<"$out" && grep -q ':7: DL3006 ' <<<"$out" ||
    { echo "  dockerfile-lint.sh no longer resolves FROM \${ARG} (testdata/arg-base.Dockerfile):"; echo "$out" | sed 's/^/    /'; rc=1; }
  # The runtime stages install what docker/runtime-deps.sh finds with ldd.
  local bins=()
  for b in iofleet-controller iofleet-agent iofleet; do [ -x "$bin/$b" ] && bins+=("$bin/$b"); done
  if [ ${#bins[@]} -gt 0 ]; then
    if out=$(docker/runtime-deps.sh "${bins[@]}"); then
      echo "  runtime packages of ${#bins[@]} built binaries: $(tr '\n' ' ' <<<"$out")"
      # Every package must exist for Debian 12 (apt-get -s resolves it offline
      # from the package lists, when they are present).
      if ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        apt-get install -s --no-install-recommends $out >/dev/null 2>&1 ||
          { echo "  apt-get -s cannot resolve: $out"; rc=1; }
      fi
    else
      echo "  docker/runtime-deps.sh failed"
      rc=1
    fi
  else
    echo "  (no binaries in $bin: runtime-deps.sh not exercised)"
  fi
  "$here/dockerfile-lint.sh" docker/postgres.Dockerfile || rc=1
  # The agent's seccomp profile is derived from the runtime's default (never a
  # checked-in copy): check the generator on a minimal base and, where podman's
  # profile is installed, on that.
  sec_tmp=$(mktemp -d)
  printf '%s' '{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}' >"$sec_tmp/base.json"
  for base in "$sec_tmp/base.json" /usr/share/containers/seccomp.json; do
    [ -f "$base" ] || continue
    if python3 deploy/seccomp/make-agent-profile.py --base "$base" -o "$sec_tmp/out.json" >/dev/null; then
      python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); p=json.load(open(sys.argv[2])); r=p["syscalls"]; assert r[0]["action"]=="SCMP_ACT_ALLOW" and set(r[0]["names"])=={"io_uring_setup","io_uring_enter","io_uring_register"} and not r[0].get("args"), "no unconditional io_uring allow first"; assert r[1:]==b["syscalls"] and {k:v for k,v in p.items() if k!="syscalls"}=={k:v for k,v in b.items() if k!="syscalls"}, "the base profile was not kept as it is"' \
        "$base" "$sec_tmp/out.json" 2>&1 || { echo "  make-agent-profile.py on $base: wrong profile"; rc=1; }
    else
      echo "  make-agent-profile.py failed on $base"; rc=1
    fi
  done
  printf '%s' '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}' >"$sec_tmp/allow.json"
  if python3 deploy/seccomp/make-agent-profile.py --base "$sec_tmp/allow.json" -o "$sec_tmp/out.json" >/dev/null 2>&1; then
    echo "  make-agent-profile.py accepted an allow-by-default base"; rc=1
  fi
  rm -rf "$sec_tmp"
  echo "  note: lint only; \`run.sh containers\` (docker/compose-test.sh) builds and runs the images"
  return $rc
}

check_yaml() {
  command -v yamllint >/dev/null 2>&1 || apt_install yamllint || { echo "  yamllint missing and not installable"; return $SKIP; }
  yamllint -c "$here/yamllint.yaml" --strict deploy/kubernetes "$here/yamllint.yaml"
}

check_k8s() {
  local py rc=0 out
  py=$(yaml_python) || { apt_install python3-yaml && py=$(yaml_python); } ||
    { echo "  PyYAML missing and python3-yaml not installable"; return $SKIP; }
  "$py" "$here/k8s-schema-check.py" deploy/kubernetes || rc=1
  out=$("$py" "$here/k8s-schema-check.py" --no-render "$here/testdata/k8s-bad")
  if [ $? -eq 0 ] || [ "$(grep -c '' <<<"$out")" -lt 12 ]; then
    echo "  k8s-schema-check.py no longer catches the broken testdata:"
    echo "$out" | sed 's/^/    /'
    rc=1
  fi
  local want
  for want in "is not a headless Service" "Secret 'no-such-secret' not defined" \
              "exactly one of minAvailable and maxUnavailable" "localhostProfile '/var/lib" \
              "no voluntary disruption is ever allowed"; do
    grep -qF "$want" <<<"$out" || { echo "  k8s-schema-check.py no longer reports \"$want\" on testdata"; rc=1; }
  done
  return $rc
}

fake_bins() {  # stand-ins for install.sh when the real binaries are not built
  mkdir -p "$tmp/fakebin"
  for b in iofleet-controller iofleet-agent iofleet; do
    printf '#!/bin/sh\nexit 0\n' >"$tmp/fakebin/$b"
    chmod +x "$tmp/fakebin/$b"
  done
  echo "$tmp/fakebin"
}

check_systemd() {
  command -v systemd-analyze >/dev/null 2>&1 || apt_install systemd ||
    { echo "  systemd-analyze missing and systemd not installable"; return $SKIP; }
  local root=$tmp/sysroot out rc=0 u
  deploy/systemd/install.sh --destdir="$root" --build-bin="$(fake_bins)" >/dev/null || return 1
  # verify resolves dependencies (sysinit.target, ...) inside --root: give it the
  # distribution's units.
  local sysunits
  for sysunits in /usr/lib/systemd/system /lib/systemd/system; do
    [ -f "$sysunits/sysinit.target" ] && break
  done
  if [ ! -f "$sysunits/sysinit.target" ]; then
    echo "  no systemd unit directory with sysinit.target here: cannot verify"
    return $SKIP
  fi
  mkdir -p "$root/usr/lib/systemd"
  cp -a "$sysunits" "$root/usr/lib/systemd/system"
  if ! out=$(cd "$tmp" && systemd-analyze verify --root="$root" iofleet-controller.service iofleet-agent.service 2>&1); then
    if grep -qiE 'Failed to (initialize|connect|setup)|Operation not permitted|No such file or directory.*(bus|/proc)' <<<"$out" &&
       ! grep -q 'iofleet-' <<<"$out"; then
      echo "  systemd-analyze verify cannot run in this environment:"
      echo "$out" | sed 's/^/    /'
      return $SKIP
    fi
    rc=1
  fi
  if [ -n "$out" ]; then   # verify exits 0 on unknown keys/bad values: any message fails
    echo "$out" | sed 's/^/  /'
    rc=1
  else
    echo "  systemd-analyze verify: both units clean"
  fi
  # Exposure scores (0.0 = locked down, 10.0 = unprotected; --threshold counts
  # tenths): keep them where they are (controller 1.4, agent 2.3 with systemd 252).
  for u in iofleet-controller.service:20 iofleet-agent.service:35; do
    if out=$(cd "$tmp" && systemd-analyze security --offline=yes --root="$root" --threshold="${u#*:}" "${u%%:*}" 2>&1); then
      echo "  $(grep -o 'Overall exposure level.*' <<<"$out") (threshold $(( ${u#*:} / 10 )).$(( ${u#*:} % 10 )))"
    else
      echo "  ${u%%:*}: $(grep -o 'Overall exposure level.*' <<<"$out" || tail -n1 <<<"$out") exceeds $(( ${u#*:} / 10 )).$(( ${u#*:} % 10 ))"
      rc=1
    fi
  done
  return $rc
}

check_install() {
  local rc=0 root=$tmp/inst fb
  fb=$(fake_bins)
  DESTDIR=$root deploy/systemd/install.sh --build-bin="$fb" >/dev/null || return 1
  for f in usr/local/bin/iofleet-controller usr/local/bin/iofleet-agent usr/local/bin/iofleet \
           etc/systemd/system/iofleet-controller.service etc/systemd/system/iofleet-agent.service \
           etc/iofleet/controller.conf etc/iofleet/agent.conf etc/iofleet/controller.conf.example \
           usr/local/share/doc/iofleet/deploy.md; do
    [ -e "$root/$f" ] || { echo "  missing after install: /$f"; rc=1; }
  done
  [ "$(stat -c %a "$root/etc/iofleet/controller.conf")" = 600 ] || { echo "  controller.conf not 0600"; rc=1; }
  grep -q '^ExecStart=/usr/local/bin/iofleet-controller ' "$root/etc/systemd/system/iofleet-controller.service" ||
    { echo "  controller unit ExecStart not /usr/local/bin"; rc=1; }
  # An edited config survives a reinstall; the example is refreshed.
  echo "# edited" >>"$root/etc/iofleet/agent.conf"
  DESTDIR=$root deploy/systemd/install.sh --build-bin="$fb" >/dev/null || rc=1
  grep -q '^# edited' "$root/etc/iofleet/agent.conf" || { echo "  reinstall overwrote agent.conf"; rc=1; }
  # --prefix/--sysconfdir rewrite the paths inside the units; DESTDIR does not leak in.
  deploy/systemd/install.sh --destdir="$tmp/opt" --prefix=/opt/iofleet --sysconfdir=/etc/opt \
    --components=agent --build-bin="$fb" >/dev/null || rc=1
  local unit=$tmp/opt/etc/systemd/system/iofleet-agent.service
  grep -q '^ExecStart=/opt/iofleet/bin/iofleet-agent serve --config=/etc/opt/iofleet/agent.conf$' "$unit" ||
    { echo "  --prefix/--sysconfdir not applied: $(grep ExecStart "$unit")"; rc=1; }
  grep -q "$tmp" "$unit" && { echo "  DESTDIR leaked into the unit"; rc=1; }
  [ ! -e "$tmp/opt/opt/iofleet/bin/iofleet-controller" ] || { echo "  --components=agent installed the controller"; rc=1; }
  deploy/systemd/install.sh --bogus >/dev/null 2>&1 && { echo "  install.sh accepted --bogus"; rc=1; }
  # A built dashboard is installed and the new controller.conf points at it.
  if [ -f dashboard/dist/index.html ]; then
    [ -f "$root/usr/local/share/iofleet/dashboard/index.html" ] || { echo "  dashboard not installed"; rc=1; }
    grep -qx 'dashboard-dir = /usr/local/share/iofleet/dashboard' "$root/etc/iofleet/controller.conf" ||
      { echo "  controller.conf does not point at the installed dashboard"; rc=1; }
  fi
  [ $rc -eq 0 ] && echo "  layout, modes, DESTDIR, --prefix/--sysconfdir, --components, reinstall: ok"
  return $rc
}

check_shell() {
  command -v shellcheck >/dev/null 2>&1 || apt_install shellcheck ||
    { echo "  shellcheck missing and not installable"; return $SKIP; }
  local files=(deploy/checks/*.sh deploy/local-fleet/*.sh deploy/systemd/install.sh docker/*.sh)
  (cd deploy/local-fleet && shellcheck -x -S warning up.sh down.sh common.sh) &&
    shellcheck -S warning "${files[@]}" && echo "  shellcheck -S warning: ${#files[@]} scripts clean"
}

check_fleet() {
  "$here/local-fleet-test.sh"
}

check_containers() {
  "$repo/docker/compose-test.sh"
}

checks=("$@")
if [ ${#checks[@]} -eq 0 ]; then
  checks=(config docker yaml k8s systemd install shell)
elif [ "${checks[0]}" = all ]; then
  checks=(config docker yaml k8s systemd install shell fleet containers)
fi
pass=0 fail=0 skipped=0
for c in "${checks[@]}"; do
  if ! declare -F "check_$c" >/dev/null; then
    echo "run.sh: unknown check \"$c\" (config docker yaml k8s systemd install shell fleet containers all)" >&2
    exit 2
  fi
  echo "== $c"
  "check_$c"
  r=$?
  case $r in
    0) echo "PASS $c"; pass=$((pass + 1)) ;;
    "$SKIP") echo "SKIP $c"; skipped=$((skipped + 1)) ;;
    *) echo "FAIL $c"; fail=$((fail + 1)) ;;
  esac
done
echo "deploy checks: $pass passed, $fail failed, $skipped skipped"
[ $fail -eq 0 ] || exit 1
[ ${#checks[@]} -eq 1 ] && [ $skipped -eq 1 ] && exit $SKIP
exit 0
