#!/usr/bin/env python3
"""`iofleet-agent run` with verify_async=256 under an address-space limit.

Usage: agent_thread_limit_test.py --build-dir BUILD

RLIMIT_AS at 1.5 GB leaves room for the agent and its job thread but not for
256 helper stacks of 8 MiB, so pthread_create fails part-way. The agent must
exit 1 with an error naming verify_async and the thread that could not start,
before the job's I/O. Before, std::thread threw, nothing caught it and the
agent aborted (exit 134, SIGABRT). A real limit, real process: RLIMIT_NPROC
would not do, since root is exempt from it.
Exit 0 pass, 1 fail, 77 skip (no agent, or thread stacks under 4 MiB).
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    args = ap.parse_args()
    agent = os.path.join(args.build_dir, "bin", "iofleet-agent")
    if not os.access(agent, os.X_OK):
        print(f"SKIP: no agent at {agent}")
        return 77
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    if stack == resource.RLIM_INFINITY or stack < (4 << 20):
        print(f"SKIP: RLIMIT_STACK {stack}: thread stacks too small for 256 to exhaust 1.5 GB")
        return 77
    with tempfile.TemporaryDirectory(prefix="iofleet-threadlimit-", dir="/var/tmp") as d:
        f = os.path.join(d, "v.dat")

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (1_500_000 * 1024, 1_500_000 * 1024))

        p = subprocess.run([agent, "run", "--name=v", "--rw=read", "--bs=4k", "--size=1m",
                            "--verify=crc32c", "--verify_async=256", f"--filename={f}",
                            "--output-format=json"], preexec_fn=limit, capture_output=True,
                           text=True, timeout=120)
        err = p.stderr.strip()
        print(f"exit {p.returncode}; stderr: {err[:400]}")
        fails = []
        if p.returncode != 1:
            fails.append(f"exit {p.returncode}, want 1 (134 = aborted)")
        want = 'option "verify_async": value "256": cannot start verify helper thread '
        if want not in err or "pthread_create" not in err:
            fails.append(f"stderr does not name the option and the thread: want {want!r}")
        if p.stdout.strip():
            fails.append("a report came out: the run went on (want the error alone)")
    for x in fails:
        print("FAIL: " + x)
    if not fails:
        print("PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
