#!/usr/bin/env python3
"""`iofleet-agent run` with 256 threads to start under an address-space limit.

Usage: agent_thread_limit_test.py --build-dir BUILD

RLIMIT_AS at 1.5 GB leaves room for the agent and a few threads but not for
256 stacks of 8 MiB, so pthread_create fails part-way. Two cases:
verify_async=256 (helper threads) and numjobs=256 (job threads). The agent
must exit 1 with an error naming the option and the thread that could not
start, with no report and without hanging (the job threads already started
see the error and return). Before, std::thread threw, nothing caught it and
the agent aborted (exit 134, SIGABRT). A real limit, real process: RLIMIT_NPROC
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
    fails = []
    with tempfile.TemporaryDirectory(prefix="iofleet-threadlimit-", dir="/var/tmp") as d:
        f = os.path.join(d, "v.dat")

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (1_500_000 * 1024, 1_500_000 * 1024))

        cases = [
            (["--name=v", "--rw=read", "--bs=4k", "--size=1m", "--verify=crc32c",
              "--verify_async=256", f"--filename={f}"],
             'option "verify_async": value "256": cannot start verify helper thread '),
            (["--name=n", "--ioengine=null", "--rw=read", "--bs=4k", "--size=1m",
              "--numjobs=256"],
             'job "n": cannot start job thread '),
        ]
        for job, want in cases:
            p = subprocess.run([agent, "run"] + job + ["--output-format=json"],
                               preexec_fn=limit, capture_output=True, text=True, timeout=120)
            err = p.stderr.strip()
            print(f"{job[-1]}: exit {p.returncode}; stderr: {err[:400]}")
            if p.returncode != 1:
                fails.append(f"{job[-1]}: exit {p.returncode}, want 1 (134 = aborted)")
            if want not in err or "pthread_create" not in err:
                fails.append(f"{job[-1]}: stderr does not name the option and the thread: "
                             f"want {want!r}")
            if p.stdout.strip():
                fails.append(f"{job[-1]}: a report came out: the run went on")
    for x in fails:
        print("FAIL: " + x)
    if not fails:
        print("PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
