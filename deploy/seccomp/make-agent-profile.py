#!/usr/bin/env python3
"""Writes the iofleet agent's seccomp profile: the container runtime's own
default profile plus one unconditional allow of io_uring_setup, io_uring_enter
and io_uring_register (why: docker/README.md, "io_uring and seccomp").

The profile is derived on the machine that uses it rather than checked in, so
it tracks the runtime's default (which changes between releases) and iofleet
ships no copy of another project's profile.

  deploy/seccomp/make-agent-profile.py [--base FILE] -o OUT

--base defaults to the first of /usr/share/containers/seccomp.json (podman,
containers-common) and /etc/containers/seccomp.json that exists.
"""
import argparse
import json
import os
import sys

IO_URING = ["io_uring_setup", "io_uring_enter", "io_uring_register"]
DEFAULT_BASES = ["/usr/share/containers/seccomp.json", "/etc/containers/seccomp.json"]


def derive(base):
    if not isinstance(base, dict) or not isinstance(base.get("syscalls"), list):
        raise ValueError("base profile has no 'syscalls' list")
    if base.get("defaultAction") == "SCMP_ACT_ALLOW":
        raise ValueError("base profile allows by default: it is not a filter worth extending")
    out = dict(base)
    rules = [r for r in base["syscalls"]
             if not (r.get("action") == "SCMP_ACT_ALLOW" and set(r.get("names") or []) == set(IO_URING))]
    # Placed first so no later rule for the same names (none today) can shadow it.
    rules.insert(0, {"names": IO_URING, "action": "SCMP_ACT_ALLOW",
                     "comment": "iofleet-agent: ioengine=io_uring / io_uring_cmd"})
    out["syscalls"] = rules
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="the runtime's default seccomp profile (JSON)")
    ap.add_argument("-o", "--output", required=True, help="where to write the agent profile")
    a = ap.parse_args()
    base_path = a.base or next((p for p in DEFAULT_BASES if os.path.exists(p)), None)
    if base_path is None:
        sys.exit("make-agent-profile: no default profile found (tried %s); pass --base FILE"
                 % ", ".join(DEFAULT_BASES))
    try:
        with open(base_path) as f:
            profile = derive(json.load(f))
    except (OSError, ValueError) as e:
        sys.exit("make-agent-profile: --base %s: %s" % (base_path, e))
    with open(a.output, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")
    print("make-agent-profile: %s + io_uring -> %s" % (base_path, a.output))


if __name__ == "__main__":
    main()
