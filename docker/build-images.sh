#!/usr/bin/env bash
# docker/build-images.sh [IMAGE...]: builds the images with podman, offline (no
# container registry): the base from Debian packages (docker/base-image.sh, once),
# then docker/{controller,agent,postgres}.Dockerfile FROM it. IMAGE is one of
# controller, agent, postgres (default: all three). Tags:
#   localhost/iofleet-debian:bookworm       the base (debootstrap minbase + podman import)
#   localhost/iofleet-controller:0.1.0      docker/controller.Dockerfile
#   localhost/iofleet-agent:0.1.0           docker/agent.Dockerfile
#   localhost/iofleet-postgres:15           docker/postgres.Dockerfile (Debian's postgresql-15)
# The build stages compile with the machine-wide ccache mounted as a build volume
# (-v CCACHE_DIR:/ccache; CCACHE_DIR defaults to ccache's own cache_dir, then
# /work/.ccache), so a warm cache makes the compile step hits. Apt inside the
# builds goes to the Debian mirror. Needs root and podman.
# Environment: IOFLEET_IMAGE_TAG (0.1.0), IOFLEET_BASE_IMAGE, IOFLEET_CCACHE_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
tag=${IOFLEET_IMAGE_TAG:-0.1.0}
base=${IOFLEET_BASE_IMAGE:-localhost/iofleet-debian:bookworm}
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(controller agent postgres)
for i in "${images[@]}"; do
  case "$i" in
    controller | agent | postgres) ;;
    *) echo "build-images.sh: unknown image \"$i\" (controller agent postgres)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "build-images.sh: needs root (rootful podman, debootstrap)" >&2; exit 1; }
command -v podman >/dev/null || { echo "build-images.sh: podman missing (apt-get install podman)" >&2; exit 1; }

podman image exists "$base" || docker/base-image.sh --tag="$base"

ccache_dir=${IOFLEET_CCACHE_DIR:-}
if [ -z "$ccache_dir" ] && command -v ccache >/dev/null; then
  ccache_dir=$(ccache -k cache_dir 2>/dev/null || true)
fi
ccache_dir=${ccache_dir:-/work/.ccache}
vol=()
if [ -d "$ccache_dir" ]; then
  vol=(-v "$ccache_dir:/ccache:rw")
else
  echo "build-images.sh: no ccache dir at $ccache_dir: compiling cold"
fi

# The image's compiles hit the host's ccache entries only if they read the same
# headers; Debian's mirror may hold newer point releases of some -dev packages
# (linux-libc-dev, libssl-dev, ...) than the host has installed, which makes
# every compile a miss. So where the host has the -dev packages, its /usr/include
# is mounted read-only at /host-include and the build stage compiles against it
# (HOST_HEADERS=1). IOFLEET_IMAGE_HOST_HEADERS=0 builds with the image's own.
host_headers=${IOFLEET_IMAGE_HOST_HEADERS:-auto}
if [ "$host_headers" = auto ]; then
  host_headers=0
  dpkg -s libabsl-dev libgrpc++-dev libprotobuf-dev liburing-dev libaio-dev libnuma-dev libsqlite3-dev \
    libpq-dev libcpp-httplib-dev libssl-dev prometheus-cpp-dev libboost-math-dev nlohmann-json3-dev \
    >/dev/null 2>&1 && [ ${#vol[@]} -gt 0 ] && host_headers=1
fi
[ "$host_headers" = 1 ] && vol+=(-v /usr/include:/host-include:ro)

# shellcheck source=docker/podman-env.sh
. "$repo/docker/podman-env.sh"

for i in "${images[@]}"; do
  case "$i" in
    postgres) t=localhost/iofleet-postgres:15 ;;
    *) t=localhost/iofleet-$i:$tag ;;
  esac
  start=$SECONDS
  echo "build-images.sh: $t"
  # --layers: an unchanged stage (the package install) is reused from the last build.
  # --format=docker: the OCI format drops SHELL (RUN would use /bin/sh) and HEALTHCHECK.
  podman build --layers --pull=never --format=docker "${vol[@]}" "${podman_opts[@]}" \
    --build-arg BASE="$base" --build-arg RUNTIME_BASE="$base" --build-arg HOST_HEADERS="$host_headers" \
    -f "docker/$i.Dockerfile" -t "$t" . >"/tmp/iofleet-build-$i.log" 2>&1 ||
    { tail -n 40 "/tmp/iofleet-build-$i.log" >&2; echo "build-images.sh: $t failed (log /tmp/iofleet-build-$i.log)" >&2; exit 1; }
  grep -E '^ *(Hits|Misses|Direct|Preprocessed)|^runtime packages' -A0 "/tmp/iofleet-build-$i.log" | sed 's/^/  /' || true
  echo "build-images.sh: $t built in $((SECONDS - start)) s ($(podman image inspect --format '{{.Size}}' "$t" | awk '{printf "%.0f MB", $1/1e6}'))"
done
