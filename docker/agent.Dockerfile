# syntax=docker/dockerfile:1
# iofleet-agent image: `iofleet-agent serve` dials the controller's gRPC port.
#
#   docker build -f docker/agent.Dockerfile -t iofleet-agent:0.1.0 .
#
# Privileges: the agent runs as root inside the container because it opens raw
# block devices, but it needs NO --privileged, only (see docker/README.md,
# "Agent privileges"):
#   --device /dev/nvme0n1       each block device it may test; O_DIRECT on it needs
#                               no capability. File targets: bind-mount a directory.
#   --ulimit memlock=-1:-1      io_uring rings and registered buffers (fixedbufs)
#                               count against RLIMIT_MEMLOCK (64 KiB by default).
#                               CAP_IPC_LOCK (--cap-add IPC_LOCK) is the alternative:
#                               io_uring does not account memory of such a process.
#                               Grant one or the other, not both.
#   --cap-add SYS_NICE          only for jobs that ask for prioclass=1 (real-time I/O
#                               priority), nice<0 or moving pages of other processes.
#                               Pinning workers to CPUs (cpus_allowed, numa_cpu_nodes)
#                               within the container's cpuset needs no capability.
#   --security-opt seccomp=PROFILE
#                               Docker >= 25's and podman's default seccomp
#                               profiles block io_uring_setup/enter/register; use
#                               deploy/seccomp/iofleet-agent.json (the default
#                               profile plus those three) to run io_uring jobs. Without it the agent's start-up probe reports
#                               io_uring unavailable and libaio/psync jobs still run.
# Pass --name (or run with --hostname): the default name is the container's hostname.
#
#   docker run -d --name iofleet-agent --hostname "$(hostname)" \
#     --device /dev/nvme0n1 --ulimit memlock=-1:-1 \
#     --security-opt seccomp=/etc/iofleet/iofleet-agent.json \
#     -v /mnt/scratch:/mnt/scratch -v iofleet-agent-spool:/var/lib/iofleet-agent \
#     iofleet-agent:0.1.0 --controller=controller.example:7070 \
#     --allow-path=/dev/nvme0n1 --allow-path=/mnt/scratch --labels=rack=r1

# Base images: Debian 12 from a registry by default. Where none is reachable,
# docker/base-image.sh makes one from Debian packages (debootstrap + podman import)
# and docker/build-images.sh passes it here (--build-arg BASE=... RUNTIME_BASE=...).
ARG BASE=debian:12
ARG RUNTIME_BASE=debian:12-slim

# ---- build stage ----
FROM ${BASE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /work/iofleet
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
 && cmake --build build --target iofleet-agent -j"$(nproc)" \
 && if [ ${#launcher[@]} -gt 0 ]; then ccache --show-log-stats | grep -E "Hits|Misses" | head -n 3; fi \
 && install -d /out/bin \
 && install -m 0755 -s build/bin/iofleet-agent /out/bin/ \
 && docker/runtime-deps.sh /out/bin/* > /out/runtime-packages.txt \
 && echo "runtime packages:" && cat /out/runtime-packages.txt \
 && if [ -L /usr/include ]; then rm /usr/include && mv /usr/include.image /usr/include; fi

# ---- runtime stage ----
FROM ${RUNTIME_BASE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
LABEL org.opencontainers.image.title="iofleet-agent" \
      org.opencontainers.image.description="iofleet agent: runs storage benchmarks assigned by an iofleet controller" \
      org.opencontainers.image.version="0.1.0"
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# hadolint ignore=DL3008
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && install -d -m 0700 /var/lib/iofleet-agent
COPY --from=build /out/bin/ /usr/local/bin/
COPY docker/healthcheck.sh /usr/local/bin/iofleet-healthcheck
# Interval records are spooled here while the controller is unreachable and
# replayed on reconnect: keep it on a volume so a restart loses nothing.
VOLUME ["/var/lib/iofleet-agent"]
# Root on purpose: raw block devices (see the header). No port is exposed: the
# agent dials out to the controller.
# hadolint ignore=DL3002
USER root
# Healthy while the controller's gRPC port accepts connections.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/iofleet-healthcheck", "agent"]
# Flags after the image name are appended; a later --spool-dir overrides this one.
ENTRYPOINT ["/usr/local/bin/iofleet-agent", "serve", "--spool-dir=/var/lib/iofleet-agent/spool"]
