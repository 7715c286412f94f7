#!/usr/bin/env python3
"""The binaries' flags through their one flag table (common/flags/flags.h), as
a user meets them: --help lists every flag, a bad value is refused before
anything starts (exit 2) naming the flag and the value, a config file's
unknown key is refused naming the file and the key, and the shipped example
configs are accepted. No controller or agent is left running: each process
here exits on its own (or is stopped at once).

Usage: flags_test.py --build-dir BUILD CASE...   (controller, agent, cli)
"""
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import iofleet_harness as h  # noqa: E402
from iofleet_harness import check  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, timeout=30):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def refused(p, *needles):
    check(p.returncode == 2, f"exit {p.returncode}, want 2: {p.stderr[-500:]}")
    for n in needles:
        check(n in p.stderr, f"{n!r} not in stderr: {p.stderr[-500:]}")


def case_controller():
    ctl = h.bin_path("bin", "iofleet-controller")
    p = run(ctl, "--help")
    check(p.returncode == 0, f"--help exit {p.returncode}")
    for flag in ("--data-dir=DIR", "--store=URI", "--init", "--grpc-listen=HOST:PORT",
                 "--heartbeat-timeout=DURATION", "--advertise=HOST:PORT", "--lease-ttl=DURATION",
                 "--api-token-file=FILE", "--metrics-auth=none|token", "--max-body-bytes=N",
                 "--max-heartbeats-per-second=N", "--http-read-timeout=DURATION",
                 "--max-watch-streams=N", "--watch-buffer-records=N", "--malloc-arena-max=N",
                 "--malloc-trim-interval=DURATION", "--history-window=N",
                 "--history-poll-budget=DURATION", "--history-max-series-per-poll=N"):
        check(flag in p.stdout, f"{flag} not in --help:\n{p.stdout}")
    check("(default 15s)" in p.stdout, "heartbeat-timeout's default not shown")
    with h.Env("flags") as env:
        data = os.path.join(env.dir, "data")
        refused(run(ctl, f"--data-dir={data}", "--lease-ttl=200ms"),
                '--lease-ttl: "200ms" is not a duration of at least 1s')
        refused(run(ctl, f"--data-dir={data}", "--max-body-bytes", "0"),
                '--max-body-bytes: "0" is not a positive integer')
        refused(run(ctl, f"--data-dir={data}", "--heartbeat-timeout=soon"),
                '--heartbeat-timeout: bad duration "soon"')
        refused(run(ctl, f"--data-dir={data}", "--init=maybe"), '--init: "maybe" is not true or false')
        refused(run(ctl, f"--data-dir={data}", "--metrics-auth=basic"),
                '--metrics-auth: "basic" is not none or token')
        refused(run(ctl, f"--data-dir={data}", "--no-such-flag=1"),
                'unknown flag "--no-such-flag=1"', "usage: iofleet-controller")
        refused(run(ctl, f"--data-dir={data}", "--max-watch-streams=0"),
                '--max-watch-streams: "0" is not a positive integer')
        refused(run(ctl, f"--data-dir={data}", "--watch-buffer-records=lots"),
                '--watch-buffer-records: "lots" is not a positive integer')
        refused(run(ctl, f"--data-dir={data}", "--malloc-arena-max=-1"),
                '--malloc-arena-max: "-1" is not an integer in 0..1024')
        refused(run(ctl, f"--data-dir={data}", "--malloc-trim-interval=10ms"),
                '--malloc-trim-interval: "10ms" is not 0 or a duration of at least 100ms')
        refused(run(ctl, f"--data-dir={data}", "--advertise=127.0.0.1:1", "--malloc-trim-interval=1s"),
                "--malloc-trim-interval needs one controller (not --advertise)")
        # The history worker's bounds: 0 is "off" for each, a window shorter
        # than a change's reach plus an e-divisive window is refused naming
        # the minimum.
        refused(run(ctl, f"--data-dir={data}", "--history-window=100"),
                '--history-window: "100" is not 0 or an integer of at least 125 (the minimum')
        refused(run(ctl, f"--data-dir={data}", "--history-window=-1"),
                '--history-window: "-1" is not an integer in 0..10000000')
        refused(run(ctl, f"--data-dir={data}", "--history-poll-budget=-2s"),
                '--history-poll-budget: "-2s" is not 0 or a duration of at most 1h')
        refused(run(ctl, f"--data-dir={data}", "--history-poll-budget=2h"),
                '--history-poll-budget: "2h" is not 0 or a duration of at most 1h')
        refused(run(ctl, f"--data-dir={data}", "--history-max-series-per-poll=-3"),
                '--history-max-series-per-poll: "-3" is not an integer in 0..1000000')
        check(not os.path.exists(data), "a refused start made the data dir")
        conf = env.write("typo.conf", f"data-dir = {data}\nhttp-lisen = 127.0.0.1:0\n")
        refused(run(ctl, f"--config={conf}"),
                f'{conf}: key "http-lisen" is not a flag of iofleet-controller')
        # The shipped example is accepted (it starts; stopped at once).
        conf = env.write("ok.conf", open(os.path.join(SRC, "deploy", "config",
                                                      "controller.conf.example")).read()
                         .replace("/var/lib/iofleet", data) +
                         "grpc-listen = 127.0.0.1:0\nhttp-listen = 127.0.0.1:0\n")
        c = h.Controller(env, extra_args=[f"--config={conf}"])
        c.start(init=False, data_dir=data)  # init = true comes from the file
        check(os.path.exists(os.path.join(data, "iofleet.db")), "the example config's store")
        c.stop()
        # --max-watch-streams takes effect: with 1, a second live watch stream
        # of a (queued, never placed) job gets 503 while the first is open.
        c = h.Controller(env, extra_args=["--max-watch-streams=1"])
        env.controller = c
        c.start(data_dir=os.path.join(env.dir, "data-watch"))
        job = env.post_job({"name": "w", "fio": "[j]\nrw=read\nsize=1m\n", "hosts": ["nobody"],
                            "wait_for_hosts": True})
        base = f"http://{c.http}/api/v1/jobs/{job}/watch"
        first = urllib.request.urlopen(base, timeout=15)
        try:
            check(first.status == 200, f"first watch: {first.status}")
            try:
                second = urllib.request.urlopen(base, timeout=15)
                second.close()
                raise h.TestFailure("a second watch stream was served with --max-watch-streams=1")
            except urllib.error.HTTPError as e:
                check(e.code == 503, f"second watch: HTTP {e.code}")
        finally:
            first.close()
        c.stop()
        # The malloc flags start a working controller; SIGUSR1 writes malloc's
        # statistics to its log and does not stop it. The history worker's
        # bounds at their edges (whole series, the least window) start it too.
        c = h.Controller(env, extra_args=["--malloc-arena-max=2", "--malloc-trim-interval=200ms",
                                          "--history-window=125", "--history-poll-budget=0",
                                          "--history-max-series-per-poll=1"])
        env.controller = c
        c.start(data_dir=os.path.join(env.dir, "data-malloc"))
        os.kill(c.proc.pid, signal.SIGUSR1)
        h.wait_for(lambda: "malloc: in_use_bytes=" in c.log_text(), 15, "malloc statistics")
        check("<malloc version=" in c.log_text(), "no malloc_info XML in the log")
        check(env.get("/jobs") is not None and c.alive(), "controller gone after SIGUSR1")
        c.stop()
    # `migrate` through its own table: bad values exit 2 naming flag and value.
    refused(run(ctl, "migrate", "--from=sqlite:/nonexistent", "--sample=lots"),
            '--sample: "lots" is not a count')
    refused(run(ctl, "migrate", "--from=/var/lib/iofleet"), '--from: "/var/lib/iofleet" is not sqlite:DIR')
    refused(run(ctl, "migrate", "--from=sqlite:/x", "--sampel=1"),
            'unknown flag "--sampel=1"', "usage: iofleet-controller migrate")
    p = run(ctl, "migrate", "--help")
    check(p.returncode == 0 and "--sample=N" in p.stdout and "(default 200)" in p.stdout,
          f"migrate --help exit {p.returncode}: {p.stdout}")
    p = run(ctl, "migrate", "--from=sqlite:/nonexistent", "--to=mysql://db")
    if "no PostgreSQL support" not in p.stderr:  # a build without libpq stops before --to
        # The value is shown redacted (a URI may hold a password).
        refused(p, '--to: "', '" is not a postgresql:// or postgres:// URI')


def case_agent():
    agent = h.bin_path("bin", "iofleet-agent")
    p = run(agent, "serve", "--help")
    check(p.returncode == 0, f"serve --help exit {p.returncode}")
    for flag in ("--controller=HOST:PORT[,...]", "--allow-path=PREFIX", "--interval-ms=N",
                 "--spool-reserve-bytes=N", "--token-file=FILE", "--tls-server-name=NAME"):
        check(flag in p.stdout, f"{flag} not in serve --help:\n{p.stdout}")
    refused(run(agent, "serve", "--controller=127.0.0.1:1", "--interval-ms=5"),
            '--interval-ms: "5" is not an integer >= 10')
    refused(run(agent, "serve", "--controller=nohostport"), '"nohostport"', "is not HOST:PORT")
    refused(run(agent, "serve", "--controller=127.0.0.1:1", "--bogus=1"), 'unknown flag "--bogus=1"')
    with h.Env("flags") as env:
        conf = env.write("agent.conf", "controller = 127.0.0.1:1\nallow-paht = /tmp\n")
        refused(run(agent, "serve", f"--config={conf}"),
                f'{conf}: key "allow-paht" is not a flag of iofleet-agent serve')


def case_cli():
    cli = h.bin_path("bin", "iofleet")
    env = dict(os.environ, IOFLEET_CONTROLLER="http://127.0.0.1:1")
    for args, needle in ((["status", "--limit"], "--limit: needs a value"),
                         (["status", "--bogus"], "unknown flag \"--bogus\" for `status`"),
                         (["submit", "x.fio", "--wait=yes"], "--wait: takes no value")):
        p = subprocess.run([cli, *args], capture_output=True, text=True, timeout=30, env=env)
        check(p.returncode == 2, f"iofleet {args} exit {p.returncode}: {p.stderr}")
        check(needle in p.stderr, f"{needle!r} not in: {p.stderr}")
    # The global flags and `history`'s, on the flag table too: before or after
    # the command, a bad value exits 2 naming the flag and the value.
    for args, needle in ((["agents", "--controller=ftp://x"],
                          '--controller: "ftp://x" is not an http://HOST:PORT URL'),
                         (["--token=a b", "agents"], "--token: the token contains whitespace"),
                         (["history", "alerts", "--state=done"],
                          '--state: "done" is not a triage state'),
                         (["history", "series", "--brnch=main"], 'unknown flag "--brnch=main"')):
        p = subprocess.run([cli, *args], capture_output=True, text=True, timeout=30, env=env)
        refused(p, needle)
    p = run(cli, "--help")
    for flag in ("--controller=URL", "--token=TOKEN", "--token-file=FILE", "--ca=PEM",
                 "--cert=PEM", "--key=PEM", "(default http://127.0.0.1:7080)"):
        check(flag in p.stdout, f"{flag} not in iofleet --help:\n{p.stdout}")


CASES = {"controller": case_controller, "agent": case_agent, "cli": case_cli}

if __name__ == "__main__":
    sys.exit(h.main(CASES, ("bin/iofleet-controller", "bin/iofleet-agent", "bin/iofleet")))
