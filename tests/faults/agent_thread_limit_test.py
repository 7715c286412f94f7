#!/usr/bin/env python3
"""`iofleet-agent run` when the kernel refuses a thread (real limits).

Usage: agent_thread_limit_test.py --build-dir BUILD

Two cases. verify_async=256 under RLIMIT_AS 1.5 GB: room for the agent and
its job thread but not for 256 helper stacks of 8 MiB, so pthread_create
fails part-way. numjobs=16 run as nobody with RLIMIT_NPROC 16 (root is exempt
from it): job thread 13 cannot start. The agent must exit 1 with an error
naming the option and the thread that could not start, with no report and
without hanging (the job threads already started see the error and return).
Before, std::thread threw, nothing caught it and the agent aborted (exit 134,
SIGABRT).
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
    agent = os.path.abspath(os.path.join(args.build_dir, "bin", "iofleet-agent"))
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

        def nproc_as_nobody():
            # RLIMIT_NPROC binds only without root: as nobody, 16 tasks. The
            # budget check passes numjobs=16 (<= the limit), but the parent,
            # the run's process, its reporter and sampler come first, so job
            # thread 13 cannot start. No memory runs short on the way.
            os.setgid(65534)
            os.setuid(65534)
            resource.setrlimit(resource.RLIMIT_NPROC, (16, 16))

        os.chmod(d, 0o777)
        cases = [
            (["--name=v", "--rw=read", "--bs=4k", "--size=1m", "--verify=crc32c",
              "--verify_async=256", f"--filename={f}"], limit,
             'option "verify_async": value "256": cannot start verify helper thread '),
        ]
        if os.geteuid() == 0:
            cases.append((["--name=n", "--ioengine=null", "--rw=read", "--bs=4k", "--size=1m",
                           "--numjobs=16"], nproc_as_nobody,
                          'job "n": cannot start job thread 13 of 16 (numjobs=16): pthread_create'))
        else:
            print("note: not root: the numjobs case (RLIMIT_NPROC as nobody) is skipped")
        for job, pre, want in cases:
            # One malloc arena: glibc otherwise reserves 64 MiB of address space
            # per thread that mallocs (its own arena), and which of a stack or
            # an arena meets the limit first then varies run to run (a malloc
            # that fails throws std::bad_alloc: out of memory, another matter).
            # With one arena the stacks alone use the room up, every time.
            env = dict(os.environ, MALLOC_ARENA_MAX="1")
            p = subprocess.run([agent, "run"] + job + ["--output-format=json"],
                               preexec_fn=pre, capture_output=True, text=True, timeout=120,
                               env=env, cwd=d)
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
