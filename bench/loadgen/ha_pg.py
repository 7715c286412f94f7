#!/usr/bin/env python3
"""iofleet-loadgen against highly available controllers on one PostgreSQL.

Starts a PostgreSQL 15 server (tests/fixtures/postgres.py; --durable: fsync,
full_page_writes and synchronous_commit on, as in production), a new database,
and --controllers controllers on it with --advertise (c0 with --init, so it
leads; the others follow), then runs iofleet-loadgen with its simulated agents
on the leader's gRPC port (agents stream to the leader) and its REST traffic
(the job submissions and the GET/POST /jobs probes) on a follower's REST port,
so every submission is forwarded by a follower and every GET /jobs probe is
answered from the follower's own store connection. The loadgen counts the
records and results stored in PostgreSQL and reads the leader's CPU and RSS.
Everything started is stopped at the end (also on an error or Ctrl-C).

  bench/loadgen/ha_pg.py --build-dir build [--durable] -- --agents=1000 \
      --duration-s=30 --group-size=250 --stagger-ms=1000 --settle-s=20

Prints the loadgen's report, `uptime` before and after, and the leader's and
the REST follower's log tails.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "fixtures"))
from postgres import PostgresServer  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--controllers", type=int, default=3)
    ap.add_argument("--durable", action="store_true")
    ap.add_argument("--dir", default=None, help="work dir (default: a new temp dir, kept)")
    ap.add_argument("loadgen_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    # SIGTERM (timeout(1)) ends the run through the finally below: nothing left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    lg_args = [a for a in args.loadgen_args if a != "--"]
    work = args.dir or tempfile.mkdtemp(prefix="iofleet-ha-loadgen-")
    os.makedirs(work, exist_ok=True)
    ctl_bin = os.path.join(args.build_dir, "bin", "iofleet-controller")
    lg_bin = os.path.join(args.build_dir, "bin", "iofleet-loadgen")
    print(f"uptime before: {uptime()}", flush=True)
    settings = ({"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}
                if args.durable else None)
    pg = PostgresServer(base_dir=os.path.join(work, "pg"), settings=settings, keep_dir=True)
    procs = []
    try:
        pg.start()
        uri = pg.create_database("loadgen")
        ctls = []
        for i in range(args.controllers):
            gp, hp = free_port(), free_port()
            log = open(os.path.join(work, f"c{i}.log"), "w")
            argv = [ctl_bin, f"--store={uri}", f"--grpc-listen=127.0.0.1:{gp}",
                    f"--http-listen=127.0.0.1:{hp}", f"--advertise=127.0.0.1:{gp}"]
            if i == 0:
                argv.append("--init")
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            procs.append(p)
            ctls.append((p, f"127.0.0.1:{gp}", f"127.0.0.1:{hp}", log.name))
            if i == 0:
                deadline = time.time() + 60
                while "http listening on" not in open(log.name).read():
                    if p.poll() is not None or time.time() > deadline:
                        raise SystemExit(f"c0 did not lead: {open(log.name).read()[-800:]}")
                    time.sleep(0.2)
        for _, _, _, path in ctls[1:]:
            deadline = time.time() + 60
            while "follower: the leader is" not in open(path).read():
                if time.time() > deadline:
                    raise SystemExit(f"{path} not following: {open(path).read()[-800:]}")
                time.sleep(0.2)
        lead = ctls[0]
        rest = ctls[1] if len(ctls) > 1 else ctls[0]
        print(f"leader c0 pid {lead[0].pid} grpc {lead[1]}; REST via "
              f"{'c1 (a follower)' if len(ctls) > 1 else 'c0'} {rest[2]}; store {uri}", flush=True)
        cmd = [lg_bin, *lg_args, f"--grpc={lead[1]}", f"--http={rest[2]}", f"--pid={lead[0].pid}",
               f"--db={uri}"]
        print("command: " + " ".join(cmd), flush=True)
        t0 = time.time()
        rc = subprocess.run(cmd).returncode
        print(f"loadgen exit {rc} after {time.time() - t0:.1f}s", flush=True)
        for name, path in (("leader c0", lead[3]), ("REST follower", rest[3])):
            tail = open(path, errors="replace").read().splitlines()[-8:]
            print(f"--- {name} log tail\n" + "\n".join(tail))
        alive = [i for i, c in enumerate(ctls) if c[0].poll() is not None]
        print(f"controllers exited during the run: {alive or 'none'}")
        return rc
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        pg.stop()
        print(f"uptime after: {uptime()}  (work dir {work}, PostgreSQL stopped)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
