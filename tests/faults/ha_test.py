#!/usr/bin/env python3
"""Highly available controllers: three real controllers on one real PostgreSQL,
real agents, real faults.

Usage: ha_test.py --build-dir BUILD CASE...

Cases (each its own ctest test, labels "faults;postgres"; SKIP, exit 77, when
PostgreSQL is not installed, or, for netcut, without root):
  leader_kill  a controller without --advertise is refused beside the leader
               (it would write unfenced); the leader is killed with SIGKILL
               mid-run: a follower leads
               within 15 s (lease TTL 4 s), the agent finds it in its
               --controller list, the run continues and finishes with every
               interval record stored exactly once, a new job is placed, and
               epoch 1's last fenced write precedes epoch 2's start.
  pg_outage    PostgreSQL is stopped for 20 s mid-run: the leader steps down
               (it cannot renew), every controller keeps retrying, the agent
               spools; once PostgreSQL is back a leader is elected and the run
               finishes with every record stored exactly once; the old
               leader, a follower started while PostgreSQL was down, reads its
               store again.
  netcut       the leader runs in a network namespace and its veth is taken
               down: it steps down before its lease ends (its log's step-down
               time < the lease expiry the database stored), a follower in the
               root namespace takes over, the run finishes complete, and no two
               leaders acted (every write of epoch e is fenced before epoch
               e + 1 began).
  followers    every controller answers: an agent given only a follower's
               address is redirected to the leader; jobs submitted and
               cancelled through one follower, read through the other
               (the same answers as the leader's, errors included); every
               job, run and interval record stored once; after the leader is
               killed the remaining follower relays to the new leader.
  follower_reads  followers answer reads from their own PostgreSQL
               connection: with the leader stopped (SIGSTOP), both followers
               still answer GET /jobs, /jobs/{id}, /runs, /runs/{id}/samples,
               /jobs/{id}/records, /compare and /series within 5 s, with the
               bodies the leader gave (a queued run's waiting_for, asked
               of the leader, is the leader's while it runs and says the
               leader did not answer while it is stopped); read-your-writes: a job submitted
               through one follower (forwarded to the leader) is readable at
               once through both followers; a write through a follower
               reaches the leader (its row and the leader's answer); the
               watch stream through a follower equals the leader's.
  follower_history  gRPC HistoryService on a follower: ListSeries, GetSeries,
               ListAlerts, GetAlert and CompareJobs answered by both followers
               from their own store with the leader stopped (SIGSTOP), equal to
               the leader's answers; SetAlertState through a follower is the
               leader's write: with the leader stopped it fails and the row is
               unchanged, with the leader back it is applied (row, leader's
               answer), and the leader's errors come back (INVALID_ARGUMENT
               naming the state, NOT_FOUND). The alert row is seeded with
               psql (a real change point takes tens of runs).
  forward_pool  REST writes forwarded by a follower share the leader's
               connections: the leader advertises its REST API behind a
               counting TCP relay (--advertise-http), 20 submits and 20
               cancels through a follower arrive on fewer than 40 (in
               practice 1-2) accepted connections; after the leader is
               killed, writes through the remaining follower reach the new
               leader (no connection to the old one is used).
  tls          the same over TLS (--tls-cert/--tls-key, certificates made
               with openssl): HTTPS writes through a follower forwarded to the
               leader over TLS, reads answered by the follower, gRPC SubmitJob
               through a follower forwarded to the leader over TLS and GetJob
               answered by another follower; a follower that does not trust the
               leader's certificate answers 503 naming the failed handshake.

Uses faults_test.py's process harness and tests/fixtures/postgres.py.
"""
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import faults_test as ft  # noqa: E402
from faults_test import Env, TestSkip, check, check_records, fio_job, log, wait_for  # noqa: E402
from postgres import PostgresServer, PostgresUnavailable  # noqa: E402
from postgres_test import run_controller, use_pg_queries  # noqa: E402

TTL = "4s"


def postgres(env, tcp=None):
    try:
        pg = PostgresServer(tcp=tcp)
    except PostgresUnavailable as e:
        raise TestSkip(str(e))
    env.cleanups.append(pg.cleanup)
    pg.start()
    return pg


def free_port(ip="127.0.0.1"):
    """A controller's port, known before it starts (it advertises it): the
    harness's reservation, below the ephemeral range and locked, so nothing
    takes it between here and the controller's bind (a follower binds its
    ports at once to serve for the leader; they pass to the controller when
    it leads)."""
    return ft.h.reserve_port(ip)


def add_controllers(env, uri, specs, ttl=TTL, extra=()):
    """specs: [(ip, grpc_port, http_port, netns)]. Controllers named c0, c1, ...
    advertising their gRPC address; c0 starts first with --init."""
    ctls = []
    for i, (ip, gp, hp, ns) in enumerate(specs):
        c = ft.Controller(env, ip=ip, grpc_port=gp, http_port=hp, heartbeat_timeout="15s",
                          store=uri, name=f"c{i}", netns=ns,
                          extra_args=[f"--advertise={ip}:{gp}", f"--lease-ttl={ttl}",
                                      *extra])
        ctls.append(c)
    return ctls


def log_text(c):
    with open(c.log_path, errors="replace") as f:
        return f.read()


def leader(env, pg, uri, ctls):
    """The controller the lease row names (live), once its HTTP API answers."""
    rows = pg.psql("SELECT epoch, address FROM iofleet_leader "
                   "WHERE id = 1 AND expires_at > clock_timestamp()", db=uri, check=False)
    if not rows.strip():
        return None
    epoch, address = rows.strip().split("|")
    for c in ctls:
        if c.grpc == address and c.alive():
            env.controller = c
            try:
                env.get("/agents")
            except Exception:
                return None
            return c, int(epoch)
    return None


def wait_leader(env, pg, uri, ctls, timeout, min_epoch=1):
    def f():
        got = leader(env, pg, uri, ctls)
        return got if got and got[1] >= min_epoch else None
    return wait_for(f, timeout, f"a leader of epoch >= {min_epoch}", interval=0.2)


def epochs(pg, uri):
    """epoch -> (holder, acquired_ms, lease_expires_ms, writes, first_ms, last_ms)."""
    out = {}
    for line in pg.psql(
            "SELECT epoch, holder, (extract(epoch FROM acquired_at) * 1000)::bigint,"
            " (extract(epoch FROM lease_expires_at) * 1000)::bigint, writes,"
            " coalesce((extract(epoch FROM first_write) * 1000)::bigint, 0),"
            " coalesce((extract(epoch FROM last_write) * 1000)::bigint, 0)"
            " FROM iofleet_leader_epochs ORDER BY epoch", db=uri).splitlines():
        if line:
            f = line.split("|")
            out[int(f[0])] = (f[1], int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]))
    return out


def check_fencing(pg, uri):
    """No two leaders acted: every write of epoch e committed before epoch e + 1
    was acquired. Returns the epochs table."""
    ep = epochs(pg, uri)
    ks = sorted(ep)
    check(ks == list(range(1, len(ks) + 1)), f"epochs {ks} are not 1..N")
    for e in ks[:-1]:
        nxt = ep[e + 1]
        if ep[e][3] > 0:
            check(ep[e][5] < nxt[1],
                  f"epoch {e} wrote at {ep[e][5]} ms, after epoch {e + 1} began at {nxt[1]} ms")
    return ep


def start_cluster(env, pg, uri, specs, ttl=TTL):
    ctls = add_controllers(env, uri, specs, ttl=ttl)
    ctls[0].start(init=True, wait=False)
    c0, e0 = wait_leader(env, pg, uri, ctls[:1], 30)
    check(c0 is ctls[0] and e0 == 1, f"first leader {c0.name} epoch {e0}")
    for c in ctls[1:]:
        c.start(init=False, wait=False)
    wait_for(lambda: all("follower: the leader is" in log_text(c) for c in ctls[1:]), 20,
             "followers campaigning")
    return ctls


def run_through(env, ctls, runtime, agent_kw=None):
    a = env.add_agent("agent-a", controller=",".join(c.grpc for c in ctls), **(agent_kw or {}))
    env.wait_agents_up(["agent-a"])
    j = env.submit(fio_job(a.target, runtime=runtime, numjobs=2), ["agent-a"], name="through")
    r = env.wait_state(j, "running", 20)["id"]
    wait_for(lambda: len(env.samples(r)) >= 4, 15, "samples before the fault")
    return a, j, r


def finish(env, pg, uri, a, j, r, runtime):
    job = env.wait_job(j, runtime + 60)
    check(job["state"] == "succeeded", f"job through the fault: {job}")
    n = check_records(env, r, 2, runtime - 1)
    after = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="after")
    check(env.wait_job(after, 60)["state"] == "succeeded", "job placed by the new leader")
    return n


def case_leader_kill():
    with Env("ha_leader_kill") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        ctls = start_cluster(env, pg, uri,
                             [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)])
        # A controller without --advertise would write unfenced beside the leader.
        rc, out = run_controller([f"--store={uri}", "--grpc-listen=127.0.0.1:0",
                                  "--http-listen=127.0.0.1:0"])
        check(rc != 0 and "is led by the highly available controller" in out,
              f"a plain controller beside the HA leader: exit {rc}: {out}")
        runtime = 16
        a, j, r = run_through(env, ctls, runtime)
        old = env.controller
        old.kill()
        t_kill = time.time()
        log(f"leader {old.name} killed (SIGKILL)")
        new, epoch = wait_leader(env, pg, uri, ctls, 20, min_epoch=2)
        failover_s = time.time() - t_kill
        check(failover_s <= 15, f"a new leader after {failover_s:.1f}s (> 15 s)")
        check(new is not old and epoch == 2, f"new leader {new.name} epoch {epoch}")
        n = finish(env, pg, uri, a, j, r, runtime)
        ep = check_fencing(pg, uri)
        alog = open(a.log_path, errors="replace").read()
        check(f"connected to {new.grpc}" in alog, "the agent never reached the new leader")
        env.figures = {"failover_s": round(failover_s, 1), "records": n,
                       "epochs": {e: v[3] for e, v in ep.items()},
                       "agent_reconnects": a.reconnects()}


def case_pg_outage():
    with Env("ha_pg_outage") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        ctls = start_cluster(env, pg, uri,
                             [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)])
        runtime = 30
        a, j, r = run_through(env, ctls, runtime)
        old = env.controller
        pg.stop()
        t_down = time.time()
        log("PostgreSQL stopped")
        wait_for(lambda: "stepping down" in log_text(old), 10, "the leader stepping down")
        stepped_s = time.time() - t_down
        time.sleep(max(0.0, 20 - (time.time() - t_down)))
        check(all(c.alive() for c in ctls), "a controller died during the outage")
        pg.start()
        log(f"PostgreSQL back after {time.time() - t_down:.1f}s")
        new, epoch = wait_leader(env, pg, uri, ctls, 30, min_epoch=2)
        n = finish(env, pg, uri, a, j, r, runtime)
        ep = check_fencing(pg, uri)
        # The old leader came back as a follower while PostgreSQL was down (no
        # store to read): once it answers, the follower reads it itself.
        if new is not old:
            wait_for(lambda: ", reads from the store" in log_text(old), 20,
                     f"{old.name} reading its store again")
        env.figures = {"leader_stepped_down_after_s": round(stepped_s, 1), "records": n,
                       "new_leader": new.name, "epoch": epoch,
                       "agent_reconnects": a.reconnects(),
                       "epochs": {e: v[3] for e, v in ep.items()}}


def case_netcut():
    ft.need_root("network namespaces")
    with Env("ha_netcut") as env:
        nets = ft.make_net(env, 1)
        ns, veth = nets[0]
        bridge_ip, ns_ip = f"{ft.NET}.1", f"{ft.NET}.11"
        pg = postgres(env, tcp=f"{bridge_ip}:{free_port(bridge_ip)}")
        with open(os.path.join(pg.data, "pg_hba.conf"), "a") as f:  # the namespaces' net
            f.write(f"host all all {ft.NET}.0/24 trust\n")
        pg.psql("SELECT pg_reload_conf()")
        uri = pg.create_database()
        tcp_uri = uri.split("?")[0].replace("@:", f"@{bridge_ip}:")
        use_pg_queries(env, pg, uri)
        specs = [(ns_ip, 17301, 17302, ns),
                 (bridge_ip, free_port(bridge_ip), free_port(bridge_ip), None),
                 (bridge_ip, free_port(bridge_ip), free_port(bridge_ip), None)]
        ctls = add_controllers(env, tcp_uri, specs)
        ctls[0].start(init=True, wait=False)
        wait_leader(env, pg, uri, ctls[:1], 30)
        for c in ctls[1:]:
            c.start(init=False, wait=False)
        wait_for(lambda: all("follower: the leader is" in log_text(c) for c in ctls[1:]), 20,
                 "followers campaigning")
        runtime = 25
        a, j, r = run_through(env, ctls, runtime)
        old = ctls[0]
        ft.sh("ip", "link", "set", veth, "down")
        env.cleanups.append(lambda: ft.sh("ip", "link", "set", veth, "up", check_rc=False))
        t_cut = time.time()
        log(f"{veth} down: the leader is cut from PostgreSQL")
        wait_for(lambda: "stepping down" in log_text(old), 10, "the cut leader stepping down")
        m = re.search(r"stepping down at unix_ms (\d+)", log_text(old))
        step_ms = int(m.group(1))
        new, epoch = wait_leader(env, pg, uri, ctls[1:], 20, min_epoch=2)
        failover_s = time.time() - t_cut
        ep = epochs(pg, uri)
        check(step_ms < ep[1][2],
              f"epoch 1 stepped down at {step_ms} ms, not before its lease ended at {ep[1][2]} ms")
        ft.sh("ip", "link", "set", veth, "up")
        n = finish(env, pg, uri, a, j, r, runtime)
        # Back on the network, the old leader is a follower and writes nothing.
        wait_for(lambda: log_text(old).count("follower: the leader is") >= 1, 20,
                 "the old leader rejoining as a follower")
        ep = check_fencing(pg, uri)
        check(ep[1][5] < ep[2][1], f"epoch 1's last write {ep[1][5]} after epoch 2 began {ep[2][1]}")
        env.figures = {"failover_s": round(failover_s, 1), "records": n,
                       "stepped_down_before_expiry_ms": ep[1][2] - step_ms,
                       "epochs": {e: v[3] for e, v in ep.items()}}


def case_followers():
    with Env("ha_followers") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        ctls = start_cluster(env, pg, uri,
                             [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)])
        lead, f1, f2 = ctls
        wait_for(lambda: all("follower: serving gRPC on" in log_text(c) for c in (f1, f2)), 20,
                 "followers serving")
        # An agent that knows only a follower ends up on the leader.
        a = env.add_agent("agent-a", controller=f1.grpc)
        env.controller = f1
        env.wait_agents_up(["agent-a"])
        alog = open(a.log_path, errors="replace").read()
        check("redirected to the leader" in alog and f"connected to {lead.grpc}" in alog,
              f"the agent did not follow the redirect to {lead.grpc}: {alog[-800:]}")
        # Writes through follower 1, reads through follower 2.
        jobs = [env.submit(fio_job(a.target, runtime=2, numjobs=2), ["agent-a"],
                           name=f"through-f1-{i}") for i in range(3)]
        env.controller = f2
        records = 0
        for j in jobs:
            job = env.wait_job(j, 60)
            check(job["state"] == "succeeded", f"job {j} through a follower: {job}")
            records += check_records(env, job["runs"][0]["id"], 2, 1)
        final_f2 = env.job(jobs[0])
        env.controller = lead
        check(env.job(jobs[0]) == final_f2, "a follower's answer differs from the leader's")
        # Errors pass through with the leader's status and body.
        env.controller = f2
        st_f, body_f = env.api("GET", "/jobs/no-such-job", ok=False)
        env.controller = lead
        st_l, body_l = env.api("GET", "/jobs/no-such-job", ok=False)
        check(st_f == st_l == 404 and body_f == body_l,
              f"follower {st_f} {body_f} vs leader {st_l} {body_l}")
        # A cancel through a follower.
        env.controller = f1
        long_job = env.submit(fio_job(a.target, runtime=60), ["agent-a"], name="to-cancel")
        env.wait_state(long_job, "running", 20)
        env.controller = f2
        env.api("POST", f"/jobs/{long_job}/cancel", {})
        check(env.wait_job(long_job, 30)["state"] == "cancelled", "cancel through a follower")
        # Nothing lost or duplicated: one row per job and run.
        n_jobs = env.query("SELECT count(*), count(DISTINCT name) FROM jobs")[0]
        n_runs = env.query("SELECT count(*) FROM runs")[0][0]
        check(n_jobs == (4, 4) and n_runs == 4, f"jobs {n_jobs}, runs {n_runs}: want 4 each")
        # The leader dies: the remaining follower relays to the new one.
        lead.kill()
        new, epoch = wait_leader(env, pg, uri, [f1, f2], 20, min_epoch=2)
        other = f2 if new is f1 else f1
        env.controller = other
        after = wait_for(lambda: env.api("POST", "/jobs", {"name": "after", "hosts": ["agent-a"],
                                                           "fio": fio_job(a.target, runtime=1)},
                                         ok=False)[1].get("id"), 20,
                         "a submit through the remaining follower")
        check(env.wait_job(after, 60)["state"] == "succeeded",
              "a job submitted through the follower after the failover")
        env.figures = {"jobs": 5, "records": records, "new_leader": new.name, "epoch": epoch,
                       "agent_reconnects": a.reconnects()}


def rest_on(env, c, method, path, body=None, timeout=None):
    """(status, JSON body) of c's REST API."""
    env.controller = c
    return env.api(method, path, body, ok=False, timeout=timeout)


def case_follower_reads():
    with Env("ha_follower_reads") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        # A lease long enough that no election starts while the leader is stopped.
        ctls = start_cluster(env, pg, uri,
                             [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)],
                             ttl="60s")
        lead, f1, f2 = ctls
        wait_for(lambda: all("follower: serving gRPC on" in log_text(c) for c in (f1, f2)), 20,
                 "followers serving")
        for f in (f1, f2):
            check("reads go to the leader" not in log_text(f),
                  f"{f.name} does not read its store: {log_text(f)[-600:]}")
        a = env.add_agent("agent-a", controller=",".join(c.grpc for c in ctls))
        env.controller = lead
        env.wait_agents_up(["agent-a"])
        # Read-your-writes: each job submitted through f1 (forwarded to the
        # leader, answered once committed) is read at once through f1 and f2.
        done = []
        for i in range(2):
            st, body = rest_on(env, f1, "POST", "/jobs",
                               {"name": f"ryw-{i}", "hosts": ["agent-a"],
                                "fio": fio_job(a.target, runtime=1, numjobs=2)})
            check(st == 201, f"submit through {f1.name}: {st} {body}")
            j = body["id"]
            for f in (f1, f2):
                st, got = rest_on(env, f, "GET", f"/jobs/{j}")
                check(st == 200 and got["id"] == j,
                      f"job {j} answered by the leader, then read on {f.name}: {st} {got}")
            env.controller = f2
            check(env.wait_job(j, 60)["state"] == "succeeded", f"job {j}")
            done.append(j)
        queued = rest_on(env, f2, "POST", "/jobs", {"name": "waits", "hosts": ["agent-nobody"],
                                                    "wait_for_hosts": True,
                                                    "fio": fio_job(a.target)})[1]["id"]
        run = rest_on(env, lead, "GET", f"/jobs/{done[0]}")[1]["runs"][0]["id"]
        time.sleep(2.5)  # the leader's history worker (1 s polls) has fed the series
        paths = ["/jobs", f"/jobs/{done[0]}", f"/jobs/{queued}", f"/runs?job_id={done[0]}",
                 f"/runs/{run}", f"/runs/{run}/samples", f"/jobs/{done[0]}/records",
                 f"/compare?a={done[0]}&b={done[1]}", "/series", "/alerts"]
        # Why the queued run waits lives in the leader's memory: a follower
        # asks the leader, so its answer is the leader's, reason included.
        def waits(c):
            return rest_on(env, c, "GET", f"/jobs/{queued}")[1]["runs"][0].get("waiting_for", "")
        reason = wait_for(lambda: waits(lead), 15, "the leader's waiting_for")
        for f in (f1, f2):
            check(waits(f) == reason, f"waiting_for on {f.name}: {waits(f)!r}, the leader's "
                                      f"{reason!r}")
        want = {p: rest_on(env, lead, "GET", p) for p in paths}
        for p, (st, _) in want.items():
            check(st == 200, f"the leader's GET {p}: {st}")
        # The leader stops: no request it should answer can be answered now.
        lead.proc.send_signal(signal.SIGSTOP)
        log(f"leader {lead.name} stopped (SIGSTOP)")
        t0 = time.time()
        try:
            for f in (f1, f2):
                for p in paths:
                    st, got = rest_on(env, f, "GET", p, timeout=5)
                    check(st == 200, f"GET {p} on {f.name} with the leader stopped: {st} {got}")
                    exp = want[p][1]
                    if p == f"/jobs/{queued}":
                        # The leader cannot say now: the follower says so.
                        said = got["runs"][0].get("waiting_for", "")
                        check(said.startswith(f"unknown on this follower: the leader at {lead.grpc}"),
                              f"waiting_for on {f.name} with the leader stopped: {said!r}")
                        exp, got = sans_waiting(exp), sans_waiting(got)
                    check(got == exp,
                          f"GET {p} on {f.name} differs from the leader's: {got} vs {exp}")
            reads_s = time.time() - t0
        finally:
            lead.proc.send_signal(signal.SIGCONT)
            log(f"leader {lead.name} continued (SIGCONT)")
        # The watch stream (server-sent events) through a follower is the
        # leader's: a finished job's replay, then its end.
        def watch(c):
            with urllib.request.urlopen(f"http://{c.http}/api/v1/jobs/{done[0]}/watch",
                                        timeout=20) as r:
                return r.status, r.read().decode()
        st_l, sse_l = watch(lead)
        st_f, sse_f = watch(f1)
        check(st_f == st_l == 200 and sse_f == sse_l and "event: end" in sse_f,
              f"watch through {f1.name} ({st_f}, {len(sse_f)} bytes) vs the leader's "
              f"({st_l}, {len(sse_l)} bytes): {sse_f[-300:]}")
        # A write through a follower reaches the leader.
        st, body = rest_on(env, f2, "POST", f"/jobs/{queued}/cancel", {})
        check(st == 200 and body["state"] == "cancelled", f"cancel through {f2.name}: {st} {body}")
        st, body = rest_on(env, lead, "GET", f"/jobs/{queued}")
        check(body["state"] == "cancelled", f"the leader's view of the cancel: {body}")
        rows = env.query("SELECT count(*) FROM jobs")[0][0]
        check(rows == 3, f"{rows} job rows, want 3")
        check(leader(env, pg, uri, ctls)[0] is lead, "the leader changed")
        env.figures = {"reads": 2 * len(paths), "reads_with_leader_stopped_s": round(reads_s, 2)}


def sans_waiting(job):
    """A job without its runs' waiting_for: why a queued run waits lives in the
    leader's memory; a follower asks the leader (1 s bound), and says when it
    could not."""
    for r in job.get("runs", []):
        r.pop("waiting_for", None)
    return job


def make_certs(env):
    """A CA and one server certificate for 127.0.0.1 (its chain: leaf, CA), and
    a second CA the controllers do not trust. Returns paths."""
    d = env.dir
    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=iofleet-test-ca",
         "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=iofleet-controller",
         "-keyout", f"{d}/ctl.key", "-out", f"{d}/ctl.csr")
    with open(f"{d}/ext.cnf", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", f"{d}/ctl.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", f"{d}/ext.cnf", "-out", f"{d}/ctl.pem")
    with open(f"{d}/chain.pem", "w") as out:
        out.write(open(f"{d}/ctl.pem").read() + open(f"{d}/ca.pem").read())
    # A self-signed certificate for the same address, from no CA the others trust.
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=stranger",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", f"{d}/other.key",
         "-out", f"{d}/other.pem")
    return {"chain": f"{d}/chain.pem", "key": f"{d}/ctl.key", "ca": f"{d}/ca.pem",
            "other": f"{d}/other.pem", "other_key": f"{d}/other.key"}


def https(ca, c, method, path, body=None, timeout=15):
    ctx = ssl.create_default_context(cafile=ca)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"https://{c.http}/api/v1{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def e2e_grpc(*args):
    p = subprocess.run([ft.h.bin_path("tests", "iofleet-e2e-grpc"), *args], capture_output=True,
                       text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def case_tls():
    with Env("ha_tls") as env:
        certs = make_certs(env)
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        tls = [f"--tls-cert={certs['chain']}", f"--tls-key={certs['key']}"]
        ctls = add_controllers(env, uri,
                               [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)],
                               ttl="60s", extra=tls)
        lead, f1, f2 = ctls
        lead.start(init=True, wait=False)
        def leads():
            if "http listening on" not in log_text(lead):
                return None
            return https(certs["ca"], lead, "GET", "/jobs")[0] == 200
        wait_for(leads, 30, "the TLS leader")
        for c in (f1, f2):
            c.start(init=False, wait=False)
        wait_for(lambda: all("follower: the leader is" in log_text(c) for c in (f1, f2)), 20,
                 "followers campaigning")
        # HTTPS: a write through f1, forwarded to the leader over TLS; read on f2.
        st, body = https(certs["ca"], f1, "POST", "/jobs",
                         {"name": "tls-rest", "hosts": ["nobody"], "wait_for_hosts": True,
                          "fio": fio_job("/tmp/x")})
        check(st == 201, f"HTTPS submit through {f1.name}: {st} {body}")
        j = body["id"]
        st, got = https(certs["ca"], f2, "GET", f"/jobs/{j}")
        check(st == 200 and got["id"] == j, f"HTTPS read on {f2.name}: {st} {got}")
        check(sans_waiting(got) == sans_waiting(https(certs["ca"], lead, "GET", f"/jobs/{j}")[1]),
              "the follower's HTTPS answer differs from the leader's")
        st, got = https(certs["ca"], f1, "POST", f"/jobs/{j}/cancel", {})
        check(st == 200 and got["state"] == "cancelled", f"HTTPS cancel via {f1.name}: {st} {got}")
        # gRPC over TLS: SubmitJob through f1 (forwarded over TLS), GetJob on f2.
        fio_path = env.write("job.fio", fio_job("/tmp/x"))
        rc, out, err = e2e_grpc(f"--controller={f1.grpc}", f"--tls-ca={certs['ca']}", "submit",
                                f"--fio-file={fio_path}", "--hosts=nobody", "--name=tls-grpc",
                                "--wait-for-hosts")
        check(rc == 0 and out.strip(), f"gRPC submit through {f1.name}: {rc} {out} {err}")
        gj = out.strip()
        rc, out, err = e2e_grpc(f"--controller={f2.grpc}", f"--tls-ca={certs['ca']}", "get-job",
                                gj)
        check(rc == 0 and json.loads(out)["id"] == gj, f"gRPC GetJob on {f2.name}: {rc} {out} {err}")
        n = env.query("SELECT count(*) FROM jobs WHERE name IN ('tls-rest', 'tls-grpc')")[0][0]
        check(n == 2, f"{n} of the 2 jobs stored")
        # With the leader stopped, HTTPS reads on a follower still answer.
        lead.proc.send_signal(signal.SIGSTOP)
        try:
            st, got = https(certs["ca"], f2, "GET", "/jobs", timeout=5)
            check(st == 200 and len(got["jobs"]) == 2, f"HTTPS list on {f2.name}: {st} {got}")
        finally:
            lead.proc.send_signal(signal.SIGCONT)
        # A follower that does not trust the leader's certificate (its own is
        # another CA's) refuses to forward: 503 naming the handshake.
        f2.proc.send_signal(signal.SIGTERM)
        f2.proc.wait(timeout=20)
        f2.extra_args = [a for a in f2.extra_args if not a.startswith("--tls-")] + [
            f"--tls-cert={certs['other']}", f"--tls-key={certs['other_key']}"]
        f2.start(init=False, wait=False)
        wait_for(lambda: "follower: the leader is" in log_text(f2), 20, "the stranger following")
        ctx_other = certs["other"]
        st, got = https(ctx_other, f2, "POST", "/jobs",
                        {"name": "refused", "hosts": ["nobody"], "fio": fio_job("/tmp/x")})
        check(st == 503 and "TLS handshake failed" in json.dumps(got),
              f"a follower not trusting the leader: {st} {got}")
        env.figures = {"jobs": 2}


def history_rpc(c, *args, timeout_s=10):
    """(rc, parsed JSON answer or None, stderr) of a HistoryService call on c."""
    rc, out, err = e2e_grpc(f"--controller={c.grpc}", f"--timeout-s={timeout_s}", *args)
    return rc, (json.loads(out) if rc == 0 else None), err


def case_follower_history():
    with Env("ha_follower_history") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        # A lease long enough that no election starts while the leader is stopped.
        ctls = start_cluster(env, pg, uri,
                             [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)],
                             ttl="60s")
        lead, f1, f2 = ctls
        wait_for(lambda: all("follower: serving gRPC on" in log_text(c) for c in (f1, f2)), 20,
                 "followers serving")
        a = env.add_agent("agent-a", controller=",".join(c.grpc for c in ctls))
        env.controller = lead
        env.wait_agents_up(["agent-a"])
        jobs = []
        for i in range(2):
            j = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="hist")
            check(env.wait_job(j, 60)["state"] == "succeeded", f"job {j}")
            jobs.append(j)
        def fed():
            s = env.get("/series?metric=iops")["series"]
            one = env.get(f"/series/{s[0]['key']}") if s else None
            # The host's first run is a warm-up point (docs/history.md): 1 + 1.
            return s if one and len(one["points"]) + len(one.get("warmup_points", [])) == 2 \
                else None
        series = wait_for(fed, 20, "the leader's history worker feeding the iops series")
        key = series[0]["key"]
        run = env.job(jobs[1])["runs"][0]["id"]
        now_ms = int(time.time() * 1000)
        pg.psql("INSERT INTO history_alerts(id, series_key, metric, state, change_pct,"
                " first_run_id, job_id, created_ms, updated_ms, detail_json) VALUES"
                f" ('ha4-alert', '{key}', 'iops', 'untriaged', '-12.5', '{run}', '{jobs[1]}',"
                f" {now_ms}, {now_ms}, '{{\"kind\": \"change\", \"regression\": true}}')",
                db=uri)
        reads = [("list-series", "--filter=metric=iops"), ("get-series", key),
                 ("list-alerts",), ("get-alert", "ha4-alert"),
                 ("compare-jobs", jobs[0], jobs[1])]
        want = {}
        for r in reads:
            rc, got, err = history_rpc(lead, *r)
            check(rc == 0, f"the leader's {r[0]}: {err}")
            want[r] = got
        check(len(want[("list-alerts",)]["alerts"]) == 1 and
              want[("get-series", key)]["key"] == key, f"the leader's answers: {want}")
        def alert_state():
            return env.query("SELECT state FROM history_alerts WHERE id = 'ha4-alert'")[0][0]
        lead.proc.send_signal(signal.SIGSTOP)
        log(f"leader {lead.name} stopped (SIGSTOP)")
        t0 = time.time()
        try:
            for f in (f1, f2):
                for r in reads:
                    rc, got, err = history_rpc(f, *r, timeout_s=5)
                    check(rc == 0, f"{r[0]} on {f.name} with the leader stopped: {err}")
                    check(got == want[r], f"{r[0]} on {f.name} differs from the leader's: "
                                          f"{got} vs {want[r]}")
            reads_s = time.time() - t0
            # Triage is a write: the leader's, so it cannot happen now.
            rc, _, err = history_rpc(f1, "set-alert-state", "ha4-alert", "acknowledged",
                                     timeout_s=3)
            check(rc != 0 and ("code 4:" in err or "code 14:" in err),
                  f"SetAlertState on {f1.name} with the leader stopped: rc {rc} {err}")
            check(alert_state() == "untriaged", "a follower wrote the triage itself")
        finally:
            lead.proc.send_signal(signal.SIGCONT)
            log(f"leader {lead.name} continued (SIGCONT)")
        rc, got, err = history_rpc(f1, "set-alert-state", "ha4-alert", "acknowledged")
        check(rc == 0 and got["alert"]["state"] == "acknowledged",
              f"SetAlertState through {f1.name}: {rc} {got} {err}")
        check(alert_state() == "acknowledged", "the triage is not in the store")
        rc, got, err = history_rpc(lead, "get-alert", "ha4-alert")
        check(rc == 0 and got["alert"]["state"] == "acknowledged", f"the leader's view: {got}")
        rc, got, err = history_rpc(f2, "get-alert", "ha4-alert")
        check(rc == 0 and got["alert"]["state"] == "acknowledged", f"{f2.name}'s view: {got}")
        rc, _, err = history_rpc(f2, "set-alert-state", "ha4-alert", "closed")
        check(rc == 1 and "code 3:" in err and "state" in err,
              f"a bad state through {f2.name}: {rc} {err}")
        rc, _, err = history_rpc(f2, "set-alert-state", "no-such-alert", "fixed")
        check(rc == 1 and "code 5:" in err, f"an unknown alert through {f2.name}: {rc} {err}")
        check(leader(env, pg, uri, ctls)[0] is lead, "the leader changed")
        env.figures = {"history_reads": 2 * len(reads),
                       "history_reads_with_leader_stopped_s": round(reads_s, 2)}


class CountingRelay:
    """A TCP relay on 127.0.0.1 to `target` (HOST:PORT) that counts the
    connections it accepts: what a client's connection reuse saves."""

    def __init__(self, env, target):
        self.target = target.rsplit(":", 1)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()
        env.cleanups.append(self.close)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            try:
                u = socket.create_connection((self.target[0], int(self.target[1])), timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def case_forward_pool():
    with Env("ha_forward_pool") as env:
        pg = postgres(env)
        uri = pg.create_database()
        use_pg_queries(env, pg, uri)
        ctls = add_controllers(env, uri,
                               [("127.0.0.1", free_port(), free_port(), None) for _ in range(3)])
        lead, f1, f2 = ctls
        relay = CountingRelay(env, lead.http)
        lead.extra_args.append(f"--advertise-http={relay.address}")
        lead.start(init=True, wait=False)
        wait_leader(env, pg, uri, [lead], 30)
        for c in (f1, f2):
            c.start(init=False, wait=False)
        wait_for(lambda: all("follower: serving gRPC on" in log_text(c) for c in (f1, f2)), 20,
                 "followers serving")
        n = 20
        ids = []
        for i in range(n):
            st, body = rest_on(env, f1, "POST", "/jobs",
                               {"name": f"pool-{i}", "hosts": ["nobody"], "wait_for_hosts": True,
                                "fio": fio_job("/tmp/x")})
            check(st == 201, f"submit {i} through {f1.name}: {st} {body}")
            ids.append(body["id"])
        for j in ids:
            st, body = rest_on(env, f1, "POST", f"/jobs/{j}/cancel", {})
            check(st == 200 and body["state"] == "cancelled", f"cancel {j}: {st} {body}")
        with relay.lock:
            accepted = relay.accepted
        log(f"{2 * n} writes forwarded by {f1.name} on {accepted} connection(s) to the leader")
        check(0 < accepted < 2 * n, f"{2 * n} forwarded writes used {accepted} connections")
        rows = env.query("SELECT count(*) FROM jobs WHERE state = 'cancelled'")[0][0]
        check(rows == n, f"{rows} cancelled job rows, want {n}")
        # Failover: the remaining follower's writes reach the new leader.
        lead.kill()
        new, epoch = wait_leader(env, pg, uri, [f1, f2], 20, min_epoch=2)
        other = f2 if new is f1 else f1
        def submit_after():
            st, body = rest_on(env, other, "POST", "/jobs",
                               {"name": "after", "hosts": ["nobody"], "wait_for_hosts": True,
                                "fio": fio_job("/tmp/x")})
            return body.get("id") if st == 201 else None
        after = wait_for(submit_after, 20, f"a submit through {other.name} after the failover")
        st, body = rest_on(env, new, "GET", f"/jobs/{after}")
        check(st == 200 and body["name"] == "after", f"the new leader's view: {st} {body}")
        env.figures = {"forwarded_writes": 2 * n, "leader_connections": accepted,
                       "new_leader": new.name}


CASES = {"forward_pool": case_forward_pool, "follower_history": case_follower_history, "leader_kill": case_leader_kill, "pg_outage": case_pg_outage, "netcut": case_netcut,
         "followers": case_followers, "follower_reads": case_follower_reads, "tls": case_tls}


def main():
    return ft.h.main(CASES)


if __name__ == "__main__":
    sys.exit(main())
