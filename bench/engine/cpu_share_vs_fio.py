#!/usr/bin/env python3
"""fio vs iofleet-agent run and serve (one or two builds) on the same jobs, interleaved.

Buffered writes that never wait for the disk are CPU-bound; fio's job
processes are sessions of their own (setsid) and, with the kernel's autogroup
scheduling, each gets a CPU share of its own. This bench runs a matrix of
jobs with fio and with each agent given, round after round
(fio, agent A, agent B, serve A, fio, ...), and prints per case the median
IOPS and each agent's pairwise-median ratio to fio.

  bench/engine/cpu_share_vs_fio.py --agent build/bin/iofleet-agent
      [--agent OLD_BUILD/iofleet-agent] [--serve build/bin/iofleet-agent]...
      [--build-dir build] [--rounds 3] [--runtime 2]
      [--hogs N] [--dir /var/tmp] [--only SUBSTRING]

--agent runs `AGENT run` with the job's options. --serve starts `AGENT serve`
in this script's session (as a daemon started from a shell is), dialing one
controller of --build-dir started beside it, and runs the same job through
the controller (POST /api/v1/jobs, the result's fio JSON).
--hogs N starts N busy loops in this script's own session (as a build running
beside the benchmark in the same shell session would be), stopped at the end.
Every file is removed after each run. Exit 0 when every run gave a figure.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def cases(runtime):
    base = ["--time_based", f"--runtime={runtime}", "--group_reporting"]
    # size=1g, as in the report that found the gap; then 64m files (4 jobs x
    # 1g of dirty pages reach the kernel's dirty limits, and every tool then
    # writes at the disk's speed: a disk figure, not a CPU one).
    out = [(f"write psync bs={bs} size=1g numjobs=1",
            ["--rw=write", f"--bs={bs}", "--size=1g", "--ioengine=psync"] + base)
           for bs in ("4k", "128k")]
    for nj in (1, 4):
        for eng in ("psync", "libaio"):
            for bs in ("4k", "128k"):
                a = ["--rw=write", f"--bs={bs}", "--size=64m", f"--ioengine={eng}",
                     f"--numjobs={nj}"]
                if eng == "libaio":
                    a.append("--iodepth=16")
                out.append((f"write {eng} bs={bs} size=64m numjobs={nj}", a + base))
    out.append(("randread direct psync 4k", ["--rw=randread", "--bs=4k", "--size=256m",
                                              "--direct=1", "--ioengine=psync"] + base))
    out.append(("randread direct libaio qd32 4k", ["--rw=randread", "--bs=4k", "--size=256m",
                                                    "--direct=1", "--ioengine=libaio",
                                                    "--iodepth=32"] + base))
    out.append(("read buffered psync 128k", ["--rw=read", "--bs=128k", "--size=256m",
                                             "--ioengine=psync"] + base))
    out.append(("write direct libaio qd16 128k", ["--rw=write", "--bs=128k", "--size=256m",
                                                   "--direct=1", "--ioengine=libaio",
                                                   "--iodepth=16"] + base))
    return out


def iops(text):
    i = text.find("{")
    if i < 0:
        return None
    try:
        d = json.loads(text[i:])
    except ValueError:
        return None
    return iops_of(d)


def iops_of(d):
    return sum(j.get("read", {}).get("iops", 0) + j.get("write", {}).get("iops", 0)
               for j in d["jobs"])


def job_text(name, directory, args):
    """The job file of `--name=NAME --directory=DIR ARGS` (--k=v and bare --k)."""
    lines = [f"[{name}]", f"directory={directory}"]
    for a in args:
        k, _, v = a[2:].partition("=")
        lines.append(f"{k}={v}" if v else k)
    return "\n".join(lines) + "\n"


class Serve:
    """One controller (of --build-dir) and an `AGENT serve` per --serve binary,
    all started in this script's own session."""

    def __init__(self, build_dir, agents, allow):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "tests", "lib"))
        import iofleet_harness as h  # noqa: E402 (the tests' process harness)
        self.h = h
        h.set_build(build_dir)
        self.env = h.Env("cpushare")
        self.env.controller = h.Controller(self.env)
        self.env.controller.start()
        self.names = []
        for i, a in enumerate(agents):
            name = f"serve{i}"
            cmd = [a, "serve", f"--controller={self.env.controller.grpc}", f"--name={name}",
                   f"--allow-path={allow}", f"--spool-dir={os.path.join(self.env.dir, name)}"]
            self.env.procs.append(h.spawn(cmd, os.path.join(self.env.dir, f"{name}.log")))
            self.names.append(name)
        self.env.wait_agents_up(self.names)

    def run(self, name, text):
        job = self.env.post_job({"name": "cpushare", "fio": text, "hosts": [name]})
        j = self.env.wait_runs_done(job, timeout=300)
        r = j["runs"][0]
        if r["state"] != "succeeded":
            return None, f"{r['state']}: {r.get('error')}"
        return iops_of(self.env.get(f"/runs/{r['id']}")["result"]), ""

    def close(self):
        self.env.__exit__(None, None, None)


def clean(d):
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", action="append", default=[])
    ap.add_argument("--serve", action="append", default=[])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=2)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="iofleet-cpushare-", dir=args.dir)
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.hogs)]
    tools = ([("fio", [args.fio])] + [(f"agent{i}", [a, "run"]) for i, a in enumerate(args.agent)] +
             [(f"serve{i}", None) for i in range(len(args.serve))])
    ok = True
    serve = None
    try:
        if args.serve:
            serve = Serve(args.build_dir, args.serve, d)
        print(f"# rounds={args.rounds} runtime={args.runtime}s hogs={args.hogs} dir={d}")
        for i, a in enumerate(args.agent):
            print(f"# agent{i} = {a} run")
        for i, a in enumerate(args.serve):
            print(f"# serve{i} = {a} serve (through a controller of {args.build_dir})")
        hdr = "| case | fio IOPS | " + " | ".join(
            f"{t} IOPS | {t}/fio" for t, _ in tools[1:]) + " |"
        print(hdr)
        print("|" + "---|" * (2 * len(tools)))
        for name, a in cases(args.runtime):
            if args.only and args.only not in name:
                continue
            res = {t: [] for t, _ in tools}
            for _ in range(args.rounds):
                for t, cmd in tools:
                    if cmd is None:
                        v, err = serve.run(t, job_text("w", d, a))
                    else:
                        p = subprocess.run(cmd + ["--name=w", f"--directory={d}"] + a +
                                           ["--output-format=json"], capture_output=True,
                                           text=True, timeout=300)
                        v, err = iops(p.stdout), p.stderr.strip()[:300]
                    if v is None:
                        ok = False
                        print(f"# {name}: {t} gave no figure: {err}")
                    res[t].append(v)
                    clean(d)
            f = [x for x in res["fio"] if x]
            row = f"| {name} | {statistics.median(f):.0f} |" if f else f"| {name} | - |"
            for t, _ in tools[1:]:
                o = res[t]
                pairs = [b / x for x, b in zip(res["fio"], o) if x and b is not None]
                good = [x for x in o if x is not None]
                row += (f" {statistics.median(good):.0f} | {statistics.median(pairs):.2f} |"
                        if good and pairs else " - | - |")
            print(row, flush=True)
    finally:
        if serve is not None:
            serve.close()
        for h in hogs:
            h.kill()
            h.wait()
        shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
