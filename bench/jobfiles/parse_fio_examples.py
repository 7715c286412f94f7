#!/usr/bin/env python3
"""How many of fio's own job files iofleet-agent parses, next to fio itself.

Runs `fio --parse-only FILE` and `iofleet-agent run --parse-only FILE` over
fio's examples/*.fio and t/jobs/*.fio (from a fio source tree; the files are
fio's and are not copied into this repository) and prints how many each tool
accepts and, for every file iofleet refuses, its message.

  bench/jobfiles/parse_fio_examples.py [--fio-src /work/ref/fio-3.33]
      [--agent build/bin/iofleet-agent] [--fio fio] [--verbose]

Both tools run in an empty temporary directory with no extra environment, so a
job file that needs ${VARIABLES} fails for both alike. Exit status 0.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile


def run(cmd, cwd):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        return p.returncode, (p.stderr + p.stdout).strip()
    except subprocess.TimeoutExpired:
        return 124, "timed out"


def kind(msg):
    if "unknown option" in msg:
        return "unknown option"
    if "ioengine" in msg and ("does not support" in msg or "belongs to ioengine" in msg):
        return "engine"
    if "not implemented" in msg or "not supported" in msg or "accepts no value" in msg:
        return "feature"
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fio-src", default="/work/ref/fio-3.33")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--agent", default=os.path.join(here, "..", "..", "build", "bin",
                                                    "iofleet-agent"))
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--verbose", action="store_true", help="also list files both accept")
    args = ap.parse_args()

    files = sorted(glob.glob(os.path.join(args.fio_src, "examples", "*.fio")) +
                   glob.glob(os.path.join(args.fio_src, "t", "jobs", "*.fio")))
    if not files:
        print(f"no job files under {args.fio_src}/examples or t/jobs", file=sys.stderr)
        return 2
    agent = os.path.abspath(args.agent)
    fio_ok = ours_ok = both = 0
    refusals = []
    kinds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            rel = os.path.relpath(f, args.fio_src)
            frc, fmsg = run([args.fio, "--parse-only", f], tmp)
            orc, omsg = run([agent, "run", "--parse-only", f], tmp)
            fio_ok += frc == 0
            ours_ok += orc == 0
            both += frc == 0 and orc == 0
            if orc != 0:
                k = kind(omsg)
                kinds[k] = kinds.get(k, 0) + 1
                refusals.append((rel, frc == 0, k, omsg.replace("iofleet-agent run: ", "")))
            elif args.verbose:
                print(f"ok      {rel}")
    print(f"job files: {len(files)} ({args.fio_src}/examples, t/jobs)")
    print(f"fio --parse-only accepts: {fio_ok}")
    print(f"iofleet-agent run --parse-only accepts: {ours_ok} "
          f"({both} of the {fio_ok} fio accepts)")
    print("iofleet refusals by kind: " +
          ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print()
    for rel, fio_accepts, k, msg in refusals:
        tag = "fio accepts" if fio_accepts else "fio refuses too"
        print(f"{rel} [{k}; {tag}]\n    {msg.splitlines()[0] if msg else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
