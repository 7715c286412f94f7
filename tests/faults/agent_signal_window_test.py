#!/usr/bin/env python3
"""`iofleet-agent run` and a signal sent right after it starts (real processes).

Usage: agent_signal_window_test.py --build-dir BUILD [--rounds N]

`iofleet-agent run` forks at start so its jobs run in a session of their own
(agent/run/sched_session.h) and forwards SIGINT/SIGTERM/... to that child. A
SIGTERM that reached the parent between the fork and the forwarding handlers
used to end the parent alone (the child was then SIGKILLed by
PR_SET_PDEATHSIG, with no report). This starts the agent on a 30 s job N
times and sends SIGTERM after a delay swept across its start-up (calibrated
first: the time the child appears), and checks each time that

  * the parent exits within 20 s (no run is left going),
  * once the parent has exited, no process of that run is left: no child in
    any state (a process whose command line carries the run's unique job
    name, the child being a fork of the parent),
  * the parent's exit says what happened: killed by SIGTERM (it came before
    the fork: no child exists), 0 (the child's handler cancelled the run and
    it reported), 1 with "cancelled" on stderr (cancelled while setting up,
    before the jobs started) or 143 (the child was ended by the forwarded
    signal before its handler was set).

Exit 0 when every round passes, 1 otherwise, 77 (skip) without the agent.
Prints a "FIGURES {json}" line: the outcomes counted.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time


def run_processes(marker):
    """pids (other than ours) whose command line contains `marker`, with state."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd:
            out.append((int(d), state))
    return out


def agent_cmd(agent, marker):
    return [agent, "run", f"--name={marker}", "--ioengine=null", "--rw=read", "--bs=4k",
            "--size=1m", "--time_based", "--runtime=30", "--output-format=json"]


def calibrate(agent):
    """Seconds from spawn until the agent's child (its own session) exists."""
    marker = f"sigwin_cal_{os.getpid()}"
    p = subprocess.Popen(agent_cmd(agent, marker), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    seen = None
    while time.monotonic() - t0 < 10:
        if any(pid != p.pid for pid, _ in run_processes(marker)):
            seen = time.monotonic() - t0
            break
        time.sleep(0.0005)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    agent = os.path.join(args.build_dir, "bin", "iofleet-agent")
    if not os.access(agent, os.X_OK):
        print(f"SKIP: no agent at {agent}")
        return 77
    fork_s = calibrate(agent)
    if fork_s is None:
        print("FAIL: the agent's child never appeared (calibration)")
        return 1
    outcomes = {}
    failures = []
    for i in range(args.rounds):
        # Delays from 0 to 2.9x the calibrated start-up (it varies with the load).
        frac = (i % 30) / 10.0
        delay = fork_s * frac
        marker = f"sigwin_{os.getpid()}_{i}"
        p = subprocess.Popen(agent_cmd(agent, marker), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        if delay > 0:
            time.sleep(delay)
        p.send_signal(signal.SIGTERM)
        err = ""
        try:
            _, err = p.communicate(timeout=20)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            failures.append(f"round {i} (delay {delay * 1000:.1f} ms): the parent did not exit "
                            "within 20 s of SIGTERM")
            p.kill()
            p.wait()
            rc = "timeout"
        left = run_processes(marker)
        if left:
            failures.append(f"round {i} (delay {delay * 1000:.1f} ms, parent exit {rc}): "
                            f"processes of the run left after the parent exited: {left}")
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if rc == 1 and "cancelled" in err:
            rc = "1 (cancelled in set-up)"
        elif rc not in (-signal.SIGTERM, 0, 128 + signal.SIGTERM, "timeout"):
            failures.append(f"round {i} (delay {delay * 1000:.1f} ms): parent exit {rc}, want "
                            "-15 (before the fork), 0 (cancelled, reported), 1 (cancelled in "
                            f"set-up) or 143; stderr: {err.strip()[:300]}")
        outcomes[str(rc)] = outcomes.get(str(rc), 0) + 1
    print("FIGURES " + json.dumps({"rounds": args.rounds, "child_appears_ms": round(fork_s * 1000, 1),
                                   "parent_exit_codes": outcomes}))
    after_fork = sum(v for k, v in outcomes.items() if k != str(-signal.SIGTERM))
    if after_fork == 0:
        failures.append("no round sent the signal after the fork: the sweep missed the window")
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print(f"PASS: {args.rounds} rounds, no process of a run outlived its parent")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
