#!/usr/bin/env bash
# Installs the Debian 12 packages iofleet builds and tests with (only the missing ones).
#   scripts/deps.sh           everything: build, tests, benchmarks, dashboard, VMs
#   scripts/deps.sh --image   only what building the daemons and the CLI needs (tests
#                             off) plus ccache: the build stage of docker/*.Dockerfile
set -euo pipefail
image_pkgs=(
  build-essential cmake pkg-config ccache
  libabsl-dev nlohmann-json3-dev liburing-dev libaio-dev libnuma-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libpq-dev libcpp-httplib-dev libssl-dev prometheus-cpp-dev libboost-math-dev
)
pkgs=(
  build-essential cmake pkg-config git python3
  ccache                           # compiler cache: rebuilds of an unchanged tree (CI clones) hit it
  libabsl-dev                      # Status/StatusOr, string utilities
  nlohmann-json3-dev               # JSON (fio-compatible output, REST bodies)
  liburing-dev                     # io_uring engine
  libaio-dev                       # libaio engine
  libnuma-dev                      # NUMA topology and memory policy
  libgtest-dev libgmock-dev        # unit and integration tests
  libbenchmark-dev                 # micro-benchmarks under bench/
  valgrind strace                  # bench/engine: callgrind instruction counts per I/O, where fio puts its buffers
  linux-perf                       # fio_interop.sync_options: io_uring sync operations by tracepoint; profiling
  heaptrack                        # bench/soak.sh: the controller's heap profile (IOFLEET_SOAK_WRAP, heaptrack -p)
  zstd                             # bench/buffers/compressibility.py: how compressible the written data is
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler  # agent <-> controller, API
  libsqlite3-dev sqlite3           # controller store
  libpq-dev                        # the PostgreSQL store (--store=postgresql://...), libpq
  postgresql                       # a real PostgreSQL 15 server for the store tests (ctest -L postgres)
  libcpp-httplib-dev               # REST API and CLI client
  libssl-dev openssl               # TLS (httplib SSLServer/SSLClient, PEM checks); test certificates
  clang libclang-rt-dev            # libFuzzer + ASan/UBSan for fuzz/run.sh (ctest -L fuzz)
  prometheus-cpp-dev               # /metrics
  libboost-math-dev                # A/B statistics (distributions)
  fio                              # side-by-side checks against fio
  prometheus                       # the real Prometheus server the metrics test scrapes with
  chromium                         # headless browser for the dashboard tests
  iproute2                         # network namespaces for fault and local-fleet tests
  faketime                         # libfaketime: the wall-clock step fault test (faults.safety_clock_step)
  qemu-system-x86 linux-image-amd64 cpio kmod  # tests/vm: a QEMU guest on Debian's kernel
  nvme-cli                         # tests/vm: nvme id-ctrl beside the agent's inventory
  yamllint python3-yaml shellcheck systemd  # deploy/ checks (manifests, scripts, units)
)
# Node.js and npm build the dashboard (esbuild, uPlot) and drive Chromium
# (playwright-core); machines that already have a node keep theirs.
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
case "${1:-}" in
  "") ;;
  --image) pkgs=("${image_pkgs[@]}") ;;
  *) echo "deps.sh: unknown argument \"$1\" (--image)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
