#!/usr/bin/env bash
# docker/base-image.sh [--tag=IMAGE] [--mirror=URL] [--force]
#
# Makes the Debian 12 base image the Dockerfiles build FROM, without any container
# registry: `debootstrap --variant=minbase bookworm` into a temporary directory
# (packages from the Debian mirror), trimmed like debian:12-slim (no docs, man
# pages or locales; apt keeps no package lists), then `podman import` as a local
# image, by default localhost/iofleet-debian:bookworm. Then:
#
#   podman build --build-arg BASE=localhost/iofleet-debian:bookworm \
#     -f docker/controller.Dockerfile -t localhost/iofleet-controller:0.1.0 .
#
# (docker/build-images.sh does both images, with the machine-wide ccache mounted.)
# An image already there is kept unless --force. Needs root, debootstrap, podman.
# Environment: IOFLEET_DEBIAN_MIRROR (default: the host's first bookworm URI,
# else http://deb.debian.org/debian).
set -euo pipefail
tag=localhost/iofleet-debian:bookworm
mirror=${IOFLEET_DEBIAN_MIRROR:-}
force=0
for a in "$@"; do
  case "$a" in
    --tag=*) tag=${a#--tag=} ;;
    --mirror=*) mirror=${a#--mirror=} ;;
    --force) force=1 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "base-image.sh: unknown argument \"$a\" (--tag=IMAGE --mirror=URL --force)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "base-image.sh: needs root (debootstrap)" >&2; exit 1; }
for t in debootstrap podman; do
  command -v "$t" >/dev/null || { echo "base-image.sh: $t missing (apt-get install $t)" >&2; exit 1; }
done
if [ $force -eq 0 ] && podman image exists "$tag"; then
  echo "base-image.sh: $tag exists (--force to rebuild)"
  exit 0
fi
if [ -z "$mirror" ]; then
  # The host's own mirror (deb822 or one-line sources), so the image gets the
  # same package versions the host builds with.
  mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list |
    grep -oE 'https?://[^ ]*/debian/?$' | head -n1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
security=${mirror%/debian*}/debian-security

root=$(mktemp -d /var/tmp/iofleet-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
start=$SECONDS
echo "base-image.sh: debootstrap bookworm (minbase) from $mirror"
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -n 20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

# The same suites as debian:12: the release, its updates and security.
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SOURCES
# Slim like debian:12-slim: no docs, man pages or translations from later installs.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
DPKG
# No recommends, and apt keeps no .debs (the Dockerfiles drop the lists themselves).
cat >"$root/etc/apt/apt.conf.d/docker-slim" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT
# Services must not start inside image builds.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
  "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/var/log/*.log "$root"/var/log/apt/* "$root"/tmp/* "$root"/root/.cache
# Nothing host-specific in the image.
: >"$root/etc/hostname"
: >"$root/etc/resolv.conf"
rm -f "$root/etc/machine-id" "$root/var/lib/dbus/machine-id"

tar --numeric-owner --xattrs -C "$root" -c . |
  podman import --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --message "debootstrap --variant=minbase bookworm $mirror" - "$tag" >/dev/null
echo "base-image.sh: $tag ($(podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')) in $((SECONDS - start)) s"
