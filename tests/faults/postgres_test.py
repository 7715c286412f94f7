#!/usr/bin/env python3
"""The controller on PostgreSQL: real controller, agent and PostgreSQL processes.

Usage: postgres_test.py --build-dir BUILD CASE...

Cases (each its own ctest test, labels "faults;postgres"; SKIP, exit 77, when
PostgreSQL is not installed):
  store_flag   --store=postgresql://...: an empty database is refused without
               --init (and left empty); with --init a store is made; a second
               controller on it exits naming the first; a job runs end to end
               (every record stored once); a restart without --init finds it all.
  migrate      a controller on SQLite is stopped mid-run; `iofleet-controller
               migrate` copies the store (refused while a controller holds the data
               dir, refused into a non-empty target unless --replace) and verifies
               it; the controller restarts on PostgreSQL with the same ports and the
               agent, which never stopped, trusts it (same store id): the running
               run finishes, the queued one runs, nothing is lost or duplicated.
  pg_outage    PostgreSQL is stopped for 20 s while a run streams records: the API
               answers 503 (never 500), the controller stays up, queued records are
               held; once PostgreSQL is back everything is stored exactly once and
               the job succeeds.

Uses faults_test.py's process harness and tests/fixtures/postgres.py.
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import faults_test as ft  # noqa: E402
from faults_test import Env, TestSkip, check, check_records, fio_job, log, wait_for  # noqa: E402
from postgres import PostgresServer, PostgresUnavailable  # noqa: E402


def postgres(env):
    """A PostgreSQL server for the case, stopped and removed with the env."""
    try:
        pg = PostgresServer()
    except PostgresUnavailable as e:
        raise TestSkip(str(e))
    env.cleanups.append(pg.cleanup)
    pg.start()
    return pg


def use_pg_queries(env, pg, uri):
    """env.query (SQLite in the harness) answered by PostgreSQL instead, so the
    harness's checks (check_records) read the PostgreSQL store."""
    def query(sql, *args):
        for a in args:
            sql = sql.replace("?", "'" + str(a).replace("'", "''") + "'", 1)
        rows = []
        for line in pg.psql(sql, db=uri).splitlines():
            if line:
                rows.append(tuple(int(x) if re.fullmatch(r"-?\d+", x) else x
                                  for x in line.split("|")))
        return rows
    env.query = query


def run_controller(args, timeout=30):
    p = subprocess.run([ft.h.bin_path("bin", "iofleet-controller")] + args,
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def public_tables(pg, uri):
    return int(pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
                       db=uri).strip())


def case_store_flag():
    with Env("pg_store_flag") as env:
        pg = postgres(env)
        uri = pg.create_database()
        # Without --init an empty database is refused and left empty.
        rc, out = run_controller([f"--store={uri}", "--grpc-listen=127.0.0.1:0",
                                  "--http-listen=127.0.0.1:0"])
        check(rc != 0 and "--init" in out and "holds no iofleet store" in out,
              f"empty database without --init: exit {rc}: {out}")
        check(public_tables(pg, uri) == 0, "a refused start created tables")

        c = env.add_controller(store=uri, heartbeat_timeout="15s")
        store_id = c.store_id()
        check(store_id and pg.psql("SELECT id FROM store_identity", db=uri).strip() == store_id,
              f"store id {store_id}")
        rc, out = run_controller([f"--store={uri}", "--grpc-listen=127.0.0.1:0",
                                  "--http-listen=127.0.0.1:0"])
        check(rc != 0 and "in use by another controller" in out,
              f"second controller on the store: exit {rc}: {out}")
        use_pg_queries(env, pg, uri)

        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        j = env.submit(fio_job(a.target, runtime=4, numjobs=2), ["agent-a"], name="on-pg")
        job = env.wait_job(j, 60)
        check(job["state"] == "succeeded", f"job {job}")
        run_id = job["runs"][0]["id"]
        n = check_records(env, run_id, 2, 3)
        samples = env.samples(run_id)

        c.stop()
        c.start(init=False)
        check(c.store_id() == store_id, "store id changed over a restart")
        job2 = env.job(j)
        check(job2["state"] == "succeeded" and env.samples(run_id) == samples,
              "the job or its samples changed over a restart")
        env.figures = {"records": n, "refused_without_init": True, "second_refused": True}


def case_migrate():
    with Env("pg_migrate") as env:
        pg = postgres(env)
        target = pg.create_database()
        c = env.add_controller(heartbeat_timeout="30s")  # SQLite in env.data_dir
        store_id = c.store_id()
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        j0 = env.submit(fio_job(a.target, runtime=2), ["agent-a"], name="done-before")
        check(env.wait_job(j0, 60)["state"] == "succeeded", "first job")
        r0 = env.run(j0)["id"]
        samples0 = env.samples(r0)
        runtime = 16
        j1 = env.submit(fio_job(a.target, runtime=runtime, numjobs=2), ["agent-a"], name="long")
        j2 = env.submit(fio_job(a.target, runtime=2), ["agent-a"], name="queued")
        r1 = env.wait_state(j1, "running", 20)["id"]
        wait_for(lambda: len(env.samples(r1)) >= 4, 15, "samples before the migration")

        migrate = ["migrate", f"--from=sqlite:{env.data_dir}", f"--to={target}"]
        # Refused while a controller holds the data dir.
        rc, out = run_controller(migrate)
        check(rc == 1 and "in use by another controller" in out,
              f"migrate beside a running controller: exit {rc}: {out}")
        check(public_tables(pg, target) == 0, "a refused migrate wrote to the target")
        rc, out = run_controller(["migrate", f"--from={env.data_dir}", f"--to={target}"])
        check(rc == 2 and "sqlite:DIR" in out, f"--from without sqlite: exit {rc}: {out}")

        c.stop()
        t_stop = time.time()
        log("controller on SQLite stopped; migrating")
        rc, out = run_controller(migrate, timeout=120)
        log(out)
        check(rc == 0 and "migrate: OK" in out, f"migrate: exit {rc}: {out}")
        check("MISMATCH" not in out, f"migrate reported mismatches: {out}")
        counts = {}
        for t in ("agents", "jobs", "runs", "leases", "results", "intervals"):
            m = re.search(rf"^\s+{t}\s+(\d+)\s+(\d+)\s+(\d+)\s+ok$", out, re.M)
            check(m and len(set(m.groups())) == 1, f"{t} counts in {out}")
            counts[t] = int(m.group(1))
        sqlite_counts = {t: env.query(f"SELECT count(*) FROM {t}")[0][0] for t in counts}
        check(counts == sqlite_counts, f"report {counts} vs SQLite {sqlite_counts}")
        check(counts["leases"] > 0 and counts["runs"] == 3, f"mid-run state {counts}")
        # A second migrate into the now non-empty target is refused, and changes nothing.
        before = pg.psql("SELECT count(*) FROM intervals", db=target)
        rc, out2 = run_controller(migrate, timeout=120)
        check(rc == 1 and "not empty" in out2 and "--replace" in out2,
              f"migrate into a non-empty target: exit {rc}: {out2}")
        check(pg.psql("SELECT count(*) FROM intervals", db=target) == before,
              "a refused migrate changed the target")
        rc, out3 = run_controller(migrate + ["--replace", "--sample=0"], timeout=120)
        check(rc == 0 and "migrate: OK" in out3, f"migrate --replace: exit {rc}: {out3}")
        migrate_s = time.time() - t_stop

        # The controller comes back on PostgreSQL, same ports, no --init.
        c.store = target
        c.start(init=False)
        check(c.store_id() == store_id, f"store id {c.store_id()} != {store_id}")
        use_pg_queries(env, pg, target)
        for j in (j1, j2):
            job = env.wait_job(j, 60)
            check(job["state"] == "succeeded", f"{j}: {job}")
        check(env.samples(r0) == samples0, "the finished run's samples changed")
        n0 = check_records(env, r0, 1, 1)
        n1 = check_records(env, r1, 2, runtime - 1)
        n2 = check_records(env, env.run(j2)["id"], 1, 1)
        check(env.query("SELECT count(*) FROM leases")[0][0] == 0, "leases left at the end")
        alog = open(a.log_path, errors="replace").read()
        check("belong to store" not in alog, "the agent did not trust the migrated store")
        env.figures = {"copied": counts, "controller_down_s": round(migrate_s, 1),
                       "records": [n0, n1, n2], "agent_reconnects": a.reconnects()}


def case_pg_outage():
    with Env("pg_outage") as env:
        pg = postgres(env)
        uri = pg.create_database()
        c = env.add_controller(store=uri, heartbeat_timeout="15s")
        use_pg_queries(env, pg, uri)
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        runtime = 30
        j = env.submit(fio_job(a.target, runtime=runtime, numjobs=2), ["agent-a"], name="through")
        r = env.wait_state(j, "running", 20)["id"]
        t_run = time.time()
        wait_for(lambda: len(env.samples(r)) >= 4, 15, "samples before the outage")

        pg.stop()
        t_down = time.time()
        log("PostgreSQL stopped")
        statuses = {}
        first503 = None
        while time.time() - t_down < 20:
            check(c.alive(), "controller died while PostgreSQL was down")
            st, body = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="during",
                                  ok=False)
            statuses[st] = statuses.get(st, 0) + 1
            check(st in (201, 503), f"POST /jobs while PostgreSQL is down -> {st}: {body}")
            if st == 503 and first503 is None:
                first503 = body
            gst, _ = env.api("GET", f"/jobs/{j}", ok=False)
            statuses[f"GET {gst}"] = statuses.get(f"GET {gst}", 0) + 1
            check(gst in (200, 503), f"GET /jobs while PostgreSQL is down -> {gst}")
            time.sleep(1)
        check(first503 is not None, f"no 503 while PostgreSQL was down: {statuses}")
        check(first503.get("error", {}).get("code") == "UNAVAILABLE", f"503 body {first503}")
        pg.start()
        t_up = time.time()
        log(f"PostgreSQL back after {t_up - t_down:.1f}s")
        # Reads reconnect at most every 500 ms while the server is away, so one
        # may still answer 503 just after it is back; then they answer again.
        wait_for(lambda: env.api("GET", f"/jobs/{j}", ok=False)[0] == 200, 10,
                 "reads answering after PostgreSQL is back")
        job = env.wait_job(j, runtime + 60)
        check(job["state"] == "succeeded", f"job through the outage: {job}")
        n = check_records(env, r, 2, runtime - 1)
        after = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="after")
        check(env.wait_job(after, 60)["state"] == "succeeded", "job after the outage")
        check(c.alive(), "controller died")
        clog = open(c.log_path, errors="replace").read()
        check("reconnected to" in clog, "no reconnect in the controller's log")
        env.figures = {"down_s": round(t_up - t_down, 1), "statuses_while_down": statuses,
                       "records": n, "run_s": round(time.time() - t_run, 1),
                       "retry_logged": "retrying queued interval records" in clog,
                       "agent_reconnects": a.reconnects()}


CASES = {"store_flag": case_store_flag, "migrate": case_migrate, "pg_outage": case_pg_outage}


def main():
    return ft.h.main(CASES)


if __name__ == "__main__":
    sys.exit(main())
