#!/usr/bin/env bash
# Installs the iofleet daemons as systemd services:
#   binaries  build/bin/{iofleet-controller,iofleet-agent,iofleet} -> PREFIX/bin
#   units     deploy/systemd/*.service                             -> UNITDIR
#   config    deploy/config/*.conf.example -> SYSCONFDIR/iofleet/*.conf (kept if
#             present) and *.conf.example (always refreshed)
#   docs      deploy/README.md -> PREFIX/share/doc/iofleet/deploy.md
#   dashboard dashboard/dist (if built: dashboard/build.sh) -> PREFIX/share/iofleet/dashboard,
#             and a new controller.conf gets dashboard-dir set to it
# Paths inside the units follow --prefix/--sysconfdir; DESTDIR (env or
# --destdir) is prepended to every destination only, as with `make install`, so a
# test can install into a temporary root.
#
# usage: install.sh [--prefix=/usr/local] [--sysconfdir=/etc]
#                   [--unitdir=/etc/systemd/system] [--bindir=PREFIX/bin]
#                   [--destdir=DIR] [--build-bin=REPO/build/bin]
#                   [--components=controller,agent] [--enable] [--dry-run]
#   --enable   systemctl daemon-reload and enable (not start) the units; only
#              without DESTDIR and when systemd is running.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=/usr/local
sysconfdir=/etc
unitdir=/etc/systemd/system
bindir=""
destdir=${DESTDIR:-}
build_bin=$repo/build/bin
components=controller,agent
enable=0
dry=0

die() { echo "install.sh: $*" >&2; exit 2; }
for a in "$@"; do
  case "$a" in
    --prefix=*) prefix=${a#*=} ;;
    --sysconfdir=*) sysconfdir=${a#*=} ;;
    --unitdir=*) unitdir=${a#*=} ;;
    --bindir=*) bindir=${a#*=} ;;
    --destdir=*) destdir=${a#*=} ;;
    --build-bin=*) build_bin=${a#*=} ;;
    --components=*) components=${a#*=} ;;
    --enable) enable=1 ;;
    --dry-run) dry=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument \"$a\" (see --help)" ;;
  esac
done
bindir=${bindir:-$prefix/bin}
for p in "$prefix" "$sysconfdir" "$unitdir" "$bindir"; do
  case "$p" in /*) ;; *) die "paths must be absolute: \"$p\"" ;; esac
done
destdir=${destdir%/}

want_controller=0 want_agent=0
IFS=, read -r -a comps <<<"$components"
for c in "${comps[@]}"; do
  case "$c" in
    controller) want_controller=1 ;;
    agent) want_agent=1 ;;
    *) die "unknown component \"$c\" (controller, agent)" ;;
  esac
done

run() { if [ "$dry" = 1 ]; then echo "+ $*"; else "$@"; fi; }

bins=()
[ "$want_controller" = 1 ] && bins+=(iofleet-controller iofleet)
[ "$want_agent" = 1 ] && bins+=(iofleet-agent)
for b in "${bins[@]}"; do
  [ -x "$build_bin/$b" ] || die "$build_bin/$b missing: build first (scripts/build.sh) or pass --build-bin=DIR"
done

run install -d -m 0755 "$destdir$bindir" "$destdir$unitdir" "$destdir$sysconfdir/iofleet" \
  "$destdir$prefix/share/doc/iofleet"
for b in "${bins[@]}"; do
  run install -m 0755 "$build_bin/$b" "$destdir$bindir/$b"
done
run install -m 0644 "$repo/deploy/README.md" "$destdir$prefix/share/doc/iofleet/deploy.md"

install_unit() {  # install_unit NAME: rewrite the default paths to the chosen ones
  local src=$here/$1 dst=$destdir$unitdir/$1
  if [ "$dry" = 1 ]; then echo "+ sed ... $src > $dst"; return; fi
  sed -e "s|/usr/local/bin/|$bindir/|g" \
      -e "s|/usr/local/share/doc/iofleet/|$prefix/share/doc/iofleet/|g" \
      -e "s|/etc/iofleet/|$sysconfdir/iofleet/|g" \
      "$src" >"$dst.tmp"
  chmod 0644 "$dst.tmp"
  mv -f "$dst.tmp" "$dst"
}

install_conf() {  # install_conf NAME MODE [SED-SCRIPT]: never overwrite an edited config
  local ex=$repo/deploy/config/$1.conf.example dst=$destdir$sysconfdir/iofleet/$1.conf
  run install -m 0644 "$ex" "$dst.example"
  if [ -e "$dst" ]; then
    echo "install.sh: keeping existing $dst (new defaults in $dst.example)"
  elif [ "$dry" = 1 ]; then
    echo "+ install -m $2 $ex $dst"
  else
    sed -e "${3:-}" "$ex" >"$dst.tmp"
    chmod "$2" "$dst.tmp"
    mv -f "$dst.tmp" "$dst"
  fi
}

if [ "$want_controller" = 1 ]; then
  install_unit iofleet-controller.service
  conf_edit=""
  dash=$repo/dashboard/dist
  if [ -f "$dash/index.html" ]; then
    run install -d -m 0755 "$destdir$prefix/share/iofleet/dashboard"
    run cp -R "$dash/." "$destdir$prefix/share/iofleet/dashboard/"
    conf_edit="s|^#dashboard-dir = .*|dashboard-dir = $prefix/share/iofleet/dashboard|"
  else
    echo "install.sh: dashboard/dist not built (dashboard/build.sh): the controller serves the API only"
  fi
  install_conf controller 0600 "$conf_edit"   # root-only: reaches the service as a credential
fi
if [ "$want_agent" = 1 ]; then
  install_unit iofleet-agent.service
  install_conf agent 0600
fi

if [ "$enable" = 1 ]; then
  if [ -n "$destdir" ]; then
    echo "install.sh: --enable ignored with DESTDIR" >&2
  elif [ ! -d /run/systemd/system ]; then
    echo "install.sh: --enable ignored: systemd is not running here" >&2
  else
    run systemctl daemon-reload
    [ "$want_controller" = 1 ] && run systemctl enable iofleet-controller.service
    [ "$want_agent" = 1 ] && run systemctl enable iofleet-agent.service
  fi
fi
echo "install.sh: installed ${components} into ${destdir:-/} (prefix $prefix)"
