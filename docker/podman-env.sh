#!/usr/bin/env bash
# Sourced by docker/build-images.sh and docker/compose-test.sh: how to run podman
# on this host. Sets podman_opts, the options for `podman build` and `podman run`:
#   --runtime=runc where crun cannot work: crun refuses
#                  hybrid cgroup hosts (v1 controllers plus a v2 hierarchy that has
#                  controllers: "cgroups in hybrid mode not supported"); runc does.
#   --ulimit flags: rootful podman asks for
#                  RLIMIT_NOFILE 1048576 and RLIMIT_NPROC 4194304, which fail
#                  ("setrlimit ...: Operation not permitted") where the host's hard
#                  limits are lower and cannot be raised (no CAP_SYS_RESOURCE, e.g.
#                  inside another container): ask for what the host allows.
# Override with IOFLEET_PODMAN_RUNTIME=crun|runc.
# shellcheck disable=SC2034  # the variables are for the scripts that source this
podman_opts=()
runtime=${IOFLEET_PODMAN_RUNTIME:-}
if [ -z "$runtime" ] && [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
  runtime=runc
fi
if [ -n "$runtime" ]; then
  command -v "$runtime" >/dev/null ||
    { echo "podman-env: this host needs the $runtime OCI runtime (hybrid cgroups): apt-get install $runtime" >&2; return 1; }
  podman_opts+=(--runtime="$(command -v "$runtime")")
fi
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 1048576 ]; then podman_opts+=(--ulimit "nofile=$hard:$hard"); fi
hard=$(ulimit -Hu)
if [ "$hard" != unlimited ] && [ "$hard" -lt 4194304 ]; then
  # The OCI runtime's own hard limit can be below the shell's here; 32768
  # processes are plenty for these containers.
  [ "$hard" -gt 32768 ] && hard=32768
  podman_opts+=(--ulimit "nproc=$hard:$hard")
fi
unset hard runtime
