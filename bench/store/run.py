#!/usr/bin/env python3
"""Store ingest, SQLite vs PostgreSQL: runs iofleet-store-bench on each store.

Usage: bench/store/run.py --build-dir build [--reps 3] [--records 200000]
                          [--results 20000] [--producers 4] [--rate 0]
                          [--dir /var/tmp/x]

Stores, each fresh for every repetition (a new SQLite data dir; a new database
on one PostgreSQL server started here from Debian's postgresql package, in the
same file system as the SQLite files):
  sqlite        the controller's SQLite store: WAL, synchronous=NORMAL (a commit
                is not fsynced; the WAL is at checkpoints)
  pg-durable    PostgreSQL as shipped: fsync, full_page_writes and
                synchronous_commit on (every commit waits for its WAL fsync)
  pg-async      the same server with synchronous_commit=off (commits return
                before the WAL fsync; the closest to SQLite's NORMAL: a power
                loss may drop the last commits, never corrupt)
--rate R paces the interval records to R/s in total (commit latency at that
load; 0 = as fast as each store takes them, latency then is mostly queueing).
Prints one JSON line per run (iofleet-store-bench's, with "store" and "rep"
added) and a summary table (medians) at the end.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures"))
from postgres import PostgresServer  # noqa: E402

DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on",
           "shared_buffers": "128MB"}


def bench(binary, store, args, init):
    cmd = [binary, f"--store={store}", f"--records={args.records}",
           f"--results={args.results}", f"--producers={args.producers}", f"--rate={args.rate}"]
    if init:
        cmd.append("--init")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--results", type=int, default=20000)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--dir", help="where the stores go (default: a new temp dir, removed)")
    args = ap.parse_args()
    binary = os.path.join(os.path.abspath(args.build_dir), "bin", "iofleet-store-bench")
    base = args.dir or tempfile.mkdtemp(prefix="iofleet-storebench-")
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o755)  # as root the server runs as `postgres` and needs to reach pg/
    rows = {}
    pg = PostgresServer(base_dir=os.path.join(base, "pg"), settings=DURABLE)
    try:
        pg.start()
        for rep in range(args.reps):
            for name in ("sqlite", "pg-durable", "pg-async"):
                if name == "sqlite":
                    d = os.path.join(base, f"sqlite-{rep}")
                    shutil.rmtree(d, ignore_errors=True)
                    out = bench(binary, f"sqlite:{d}", args, init=False)
                    shutil.rmtree(d, ignore_errors=True)
                else:
                    uri = pg.create_database()
                    if name == "pg-async":  # a database setting beats the server's -c
                        pg.psql(f"ALTER DATABASE {uri.split('?')[0].rsplit('/', 1)[1]} "
                                "SET synchronous_commit = off")
                    sc = pg.psql("SHOW synchronous_commit", db=uri).strip()
                    if sc != ("off" if name == "pg-async" else "on"):
                        raise RuntimeError(f"{name}: synchronous_commit is {sc}")
                    out = bench(binary, uri, args, init=True)
                out.update(store=name, rep=rep)
                print(json.dumps(out, sort_keys=True), flush=True)
                rows.setdefault(name, []).append(out)
    finally:
        pg.cleanup()
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    med = statistics.median
    print("\n| store | interval records/s | record commit p50 / p99 ms | records per transaction "
          "| finished runs/s | finish Write() p50 / p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in rows.items():
        print(f"| {name} | {med(r['records_per_s'] for r in rs):,.0f} "
              f"| {med(r['latency_ms_p50'] for r in rs):.1f} / "
              f"{med(r['latency_ms_p99'] for r in rs):.1f} "
              f"| {med(r['records_per_transaction'] for r in rs):.0f} "
              f"| {med(r.get('results_per_s', 0) for r in rs):,.0f} "
              f"| {med(r.get('result_latency_ms_p50', 0) for r in rs):.2f} / "
              f"{med(r.get('result_latency_ms_p99', 0) for r in rs):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
