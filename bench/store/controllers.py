#!/usr/bin/env python3
"""Interval records per second one PostgreSQL takes from N controllers at once.

Usage: bench/store/controllers.py --build-dir build [--controllers 1,2,3]
                                  [--records 60000] [--producers 2] [--reps 2]

For each N, on a fresh database of one PostgreSQL server started here as
shipped (fsync, synchronous_commit on; tests/fixtures/postgres.py), N
iofleet-store-bench processes run at once with --shared (no controller lock),
each with its own store writer (one connection, the controller's batching
writer) appending --records interval records: N controllers' writers on one
database. Figures: the sum of records over the wall time from the first start
to the last exit, and each process's own rate. Prints one JSON line per run and
a table of medians at the end (bench/RESULTS.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures"))
from postgres import PostgresServer  # noqa: E402

DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on",
           "shared_buffers": "128MB"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--controllers", default="1,2,3")
    ap.add_argument("--records", type=int, default=60000)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    binary = os.path.join(os.path.abspath(args.build_dir), "bin", "iofleet-store-bench")
    ns = [int(x) for x in args.controllers.split(",")]
    table = {n: [] for n in ns}
    with PostgresServer(settings=DURABLE) as pg:
        for rep in range(args.reps):
            for n in ns:
                uri = pg.create_database()
                # The schema first (one process with --init), untimed.
                subprocess.run([binary, f"--store={uri}", "--init", "--records=1", "--results=0"],
                               check=True, capture_output=True)
                cmd = [binary, f"--store={uri}", "--shared", f"--records={args.records}",
                       f"--producers={args.producers}", "--results=0"]
                t0 = time.time()
                procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
                         for _ in range(n)]
                outs = [p.communicate()[0] for p in procs]
                wall = time.time() - t0
                rcs = [p.returncode for p in procs]
                each = [json.loads(o.strip().splitlines()[-1]) for o in outs]
                total = sum(e["inserted"] for e in each)
                stored = int(pg.psql("SELECT count(*) FROM intervals", db=uri).strip())
                row = {"controllers": n, "rep": rep, "records": total, "stored": stored,
                       "wall_s": round(wall, 2), "records_per_s": round(total / wall),
                       "per_controller_per_s": [round(e["records_per_s"]) for e in each],
                       "records_per_transaction": [round(e["records_per_transaction"])
                                                   for e in each],
                       "rc": rcs}
                print(json.dumps(row), flush=True)
                if any(rcs) or stored != total + 1:
                    print(f"FAILED: exit codes {rcs}, stored {stored} of {total} + 1",
                          file=sys.stderr)
                    return 1
                table[n].append(row["records_per_s"])
                pg.psql(f"DROP DATABASE {uri.rsplit('/', 1)[1].split('?')[0]}", check=False)
    print("\n| controllers | records/s, all together (reps) | median |")
    print("|---:|---|---:|")
    for n in ns:
        print(f"| {n} | {', '.join(f'{x:,}' for x in table[n])} | "
              f"**{statistics.median(table[n]):,.0f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
