# syntax=docker/dockerfile:1
# iofleet-controller (+ the `iofleet` CLI) image.
#
#   docker build -f docker/controller.Dockerfile -t iofleet-controller:0.1.0 .
#   docker run -d --name iofleet-controller -p 7070:7070 -p 7080:7080 \
#     -v iofleet-data:/var/lib/iofleet iofleet-controller:0.1.0
#
# The build context is the repository root (see .dockerignore there).
# Runs as the unprivileged user iofleet (uid/gid 10001); needs no capabilities.
# State: the SQLite database under /var/lib/iofleet (mount a volume there).
# Ports: 7070 gRPC (agents, gRPC API), 7080 HTTP (REST API, /metrics, dashboard).

# Base images: Debian 12 from a registry by default. Where none is reachable,
# docker/base-image.sh makes one from Debian packages (debootstrap + podman import)
# and docker/build-images.sh passes it here (--build-arg BASE=... RUNTIME_BASE=...).
ARG BASE=debian:12
ARG RUNTIME_BASE=debian:12-slim

# ---- build stage: the full toolchain and -dev packages, from scripts/deps.sh ----
FROM ${BASE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /work/iofleet
# deps.sh installs with --no-install-recommends; the lists are dropped after it.
COPY scripts/deps.sh scripts/deps.sh
RUN scripts/deps.sh --image && rm -rf /var/lib/apt/lists/*
COPY . .
# ccache: with `podman build -v /work/.ccache:/ccache` (docker/build-images.sh) the
# compiles share the machine's cache. The tree sits at /work/iofleet and the build
# at /work/iofleet/build, so with base_dir /work the compiler arguments are the ones
# a host checkout /work/X with build dir /work/X/build uses: a warm cache is hits.
# ccache also hashes LANG (it changes the compiler's messages): C.UTF-8 as on the
# development machines.
# HOST_HEADERS=1 (docker/build-images.sh on a host with the -dev packages, with
# its /usr/include mounted at /host-include): compile against the host's headers,
# so the hashes match the host's compiles even when the mirror has newer
# point-release headers than the host (linux-libc-dev, libssl-dev, ...). The
# libraries linked are the image's own (the same Debian 12 ABI).
ARG HOST_HEADERS=0
RUN if [ "$HOST_HEADERS" = 1 ] && [ -d /host-include/absl ]; then \
      mv /usr/include /usr/include.image && ln -s /host-include /usr/include; \
    fi; \
    launcher=(); \
    if [ -d /ccache ] && [ -w /ccache ]; then \
      export CCACHE_DIR=/ccache CCACHE_BASEDIR=/work CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=30G CCACHE_STATSLOG=/tmp/ccache.log; \
      export LANG=C.UTF-8; \
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); \
    fi \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIOFLEET_BUILD_TESTS=OFF "${launcher[@]}" \
 && cmake --build build --target iofleet-controller iofleet -j"$(nproc)" \
 && if [ ${#launcher[@]} -gt 0 ]; then ccache --show-log-stats | grep -E "Hits|Misses" | head -n 3; fi \
 && install -d /out/bin \
 && install -m 0755 -s build/bin/iofleet-controller build/bin/iofleet /out/bin/ \
 && docker/runtime-deps.sh /out/bin/* > /out/runtime-packages.txt \
 && echo "runtime packages:" && cat /out/runtime-packages.txt \
 && if [ -L /usr/include ]; then rm /usr/include && mv /usr/include.image /usr/include; fi \
 && install -d /out/dashboard \
 && if [ -f dashboard/dist/index.html ]; then cp -R dashboard/dist/. /out/dashboard/; \
    else echo "dashboard/dist not built (run dashboard/build.sh before docker build): API only"; fi

# ---- runtime stage: only the shared libraries the binaries load ----
FROM ${RUNTIME_BASE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
LABEL org.opencontainers.image.title="iofleet-controller" \
      org.opencontainers.image.description="iofleet controller: job queue, results store, REST/gRPC API, /metrics" \
      org.opencontainers.image.version="0.1.0"
# The package list is computed from `ldd` of the stripped binaries in the build
# stage (docker/runtime-deps.sh); versions come from the same Debian 12 snapshot.
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# hadolint ignore=DL3008
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
RUN groupadd --system --gid 10001 iofleet \
 && useradd --system --uid 10001 --gid iofleet --home-dir /var/lib/iofleet \
      --no-create-home --shell /usr/sbin/nologin iofleet \
 && install -d -o iofleet -g iofleet -m 0750 /var/lib/iofleet
COPY --from=build /out/bin/ /usr/local/bin/
# The dashboard is built on the host (dashboard/build.sh needs Node >= 20, newer
# than Debian 12's) and copied in when present; otherwise / says it is missing.
COPY --from=build /out/dashboard/ /usr/share/iofleet/dashboard/
COPY docker/healthcheck.sh /usr/local/bin/iofleet-healthcheck
USER 10001:10001
WORKDIR /var/lib/iofleet
VOLUME ["/var/lib/iofleet"]
EXPOSE 7070 7080
# GET /healthz on the --http-listen port (bash /dev/tcp: no curl in the image).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/iofleet-healthcheck", "controller"]
ENTRYPOINT ["/usr/local/bin/iofleet-controller"]
# Inside a container the daemon must listen on all interfaces to be reachable.
# --init: the volume is this controller's alone, so an empty one can only mean
# the first start (a new store); later starts open the store in it.
CMD ["--data-dir=/var/lib/iofleet", "--init", "--grpc-listen=0.0.0.0:7070", "--http-listen=0.0.0.0:7080", \
     "--dashboard-dir=/usr/share/iofleet/dashboard"]
