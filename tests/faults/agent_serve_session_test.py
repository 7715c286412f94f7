#!/usr/bin/env python3
"""`iofleet-agent serve` and the CPU share of its runs' jobs (real processes).

Usage: agent_serve_session_test.py --build-dir BUILD CASE...

`iofleet-agent run` runs its jobs in a child that leads a session of its own,
so the kernel's autogroup scheduler gives a phase of N jobs the CPU weight of
N sessions, as fio's N job processes (docs/agent-cpu-share.md). `serve` does
the same: started inside another process's session (a shell, this harness) it
forks a child that leads its own session and runs the daemon; the parent stays
in the caller's session, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2
and exits with the child's code; the child dies with the parent.

Cases (each its own ctest test, label "faults"):
  weight    an agent spawned in this test's session, a controller, a job of 4
            clones (ioengine=null, time_based): the spawned process stays in
            this session; its child leads its own, in another autogroup, whose
            nice is -6 (the weight of 4 sessions) while the run runs and 0
            after it; this test's own autogroup is never reweighted. Needs
            CAP_SYS_NICE for the -6 (root; SKIP without) and autogroup.
  signals   SIGTERM to the spawned process: the child shuts down as the daemon
            does on SIGTERM ("signal 15, shutting down"), the parent exits 0;
            SIGKILL to a second agent's spawned process: its child is gone
            within 10 s; a third agent started with setsid (already leading
            its session) forks nothing.

Before `serve` forked, `weight` failed (the daemon did not lead its session, so
the nice stayed 0) and `signals` failed (no child). Prints "FIGURES {json}".
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults_test as ft  # noqa: E402

check = ft.check
log = ft.log
h = ft.h


def autogroup(pid="self"):
    """(name, nice) of /proc/PID/autogroup, e.g. ("/autogroup-12", 0); (None, None)
    for a process in the root autogroup, which the kernel shows as empty: one
    whose session began with the system (a CI runner's tests descend from PID 1
    without a session of their own)."""
    with open(f"/proc/{pid}/autogroup") as f:
        text = f.read().split()
    if not text:
        return None, None
    return text[0], int(text[2])


def serving_child(agent, timeout=10):
    """The child the agent's spawned process forked (leads its own session)."""
    return ft.wait_for(lambda: h.session_child(agent.proc.pid), timeout,
                       f"agent {agent.name} to fork its serving child")


def case_weight():
    if not os.path.exists("/proc/self/autogroup"):
        raise ft.TestSkip("the kernel has no autogroup (/proc/self/autogroup)")
    with ft.Env("serve-session") as env:
        env.add_controller(heartbeat_timeout="10s")
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        parent = a.proc.pid
        child = serving_child(a)
        mine = os.getsid(0)
        check(os.getsid(parent) == mine,
              f"the spawned agent left this session ({os.getsid(parent)} != {mine})")
        check(os.getsid(child) == child, f"the serving child {child} does not lead its session")
        own_group, own_nice = autogroup()
        child_group, child_nice = autogroup(child)
        check(child_group is not None, "the serving child is in the root autogroup")
        check(child_group != own_group, f"the serving child shares this autogroup {own_group}")
        check(child_nice == 0, f"idle agent's autogroup nice {child_nice}")

        job = env.submit("[w]\nioengine=null\nrw=read\nbs=4k\nsize=1m\nnumjobs=4\n"
                         "time_based=1\nruntime=8\n", ["agent-a"], name="four")
        env.wait_state(job, ("running",), 30)
        seen = []

        def reweighted():
            n = autogroup(child)[1]
            seen.append(n)
            return n == -6
        try:
            ft.wait_for(reweighted, 6, "the serving child's autogroup nice to be -6")
        except h.TestFailure:
            text = a.log_text()
            if "Operation not permitted" in text:
                raise ft.TestSkip("no CAP_SYS_NICE: the autogroup nice cannot go below 0")
            raise
        check(autogroup() == (own_group, own_nice), "this test's own autogroup was reweighted")
        check(env.wait_job(job, 60)["state"] == "succeeded", "the 4-clone job did not succeed")
        ft.wait_for(lambda: autogroup(child)[1] == 0, 10, "the nice to be 0 after the run")
        check(autogroup() == (own_group, own_nice), "this test's own autogroup was reweighted")
        env.figures.update({"nice_during_run": -6, "nice_seen": sorted(set(seen)),
                            "parent_sid_is_callers": True,
                            "test_in_root_autogroup": own_group is None})


def case_signals():
    with ft.Env("serve-signals") as env:
        env.add_controller(heartbeat_timeout="10s")
        a = env.add_agent("agent-a")
        b = env.add_agent("agent-b")
        env.wait_agents_up(["agent-a", "agent-b"])

        # SIGTERM reaches the daemon through the parent; both exit cleanly.
        child = serving_child(a)
        a.proc.send_signal(signal.SIGTERM)
        rc = a.proc.wait(20)
        check(rc == 0, f"agent-a exited {rc} after SIGTERM")
        check(h.wait_gone(child), f"serving child {child} outlived SIGTERM")
        check("signal 15, shutting down" in a.log_text(),
              "the serving child did not take SIGTERM as the daemon does")

        # SIGKILL (a crash): the child dies with the parent.
        child_b = serving_child(b)
        b.proc.kill()
        b.proc.wait()
        t0 = time.monotonic()
        check(h.wait_gone(child_b, 10), f"serving child {child_b} outlived its SIGKILLed parent")
        gone_s = time.monotonic() - t0

        # Already a session leader (systemd, setsid, a container's init): no fork.
        c = h.Agent(env, "agent-c")
        cmd = [h.bin_path("bin", "iofleet-agent"), "serve", f"--controller={env.controller.grpc}",
               "--name=agent-c", f"--allow-path={c.allow}", f"--spool-dir={c.spool}"]
        with open(c.log_path, "a") as logf:
            c.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        env.procs.append(c.proc)
        env.agents["agent-c"] = c
        env.wait_agents_up(["agent-c"])
        check(os.getsid(c.proc.pid) == c.proc.pid, "setsid agent does not lead its session")
        check(h.session_child(c.proc.pid) is None, "an agent leading its session forked anyway")
        env.figures.update({"sigterm_rc": rc, "sigkill_child_gone_s": round(gone_s, 3)})


CASES = {"weight": case_weight, "signals": case_signals}


def main():
    # The harness's suite main: PASS/SKIP/FAIL per case, 77 when all skipped.
    return h.main(CASES, ("bin/iofleet-agent",))


if __name__ == "__main__":
    sys.exit(main())
