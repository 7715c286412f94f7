#!/usr/bin/env python3
"""Controller /metrics against a real Prometheus server.

Usage: prometheus_test.py --build-dir BUILD [--source-dir SRC] [--keep]

Starts, on loopback and in a temp dir: an iofleet-controller, one agent
(`iofleet-agent serve --name=a1 --allow-path=TMP`) and /usr/bin/prometheus
(scrape_interval 1s, its own TSDB dir), then runs a time_based 4k randread job
for ~8 s and checks:
  * Prometheus scrapes the controller (up == 1) and sees the run's series while
    it runs;
  * the read IOPS PromQL derives from the exported counters agree with the
    run's final result (GET /api/v1/runs/{id} -> result.jobs[].read.iops) within
    5 %: rate(ios)/rate(sampled seconds) joined to iofleet_run_info by run_id,
    and increase-style max_over_time(ios) / job runtime;
  * the latency histogram's count equals the I/O count and its median brackets
    fio's; the total-latency (lat) histogram's count equals it too and its mean
    (_sum / _count) is fio's lat_ns mean within 1/64;
  * `promtool check metrics` reports nothing on a scrape taken during the run,
    and `promtool check config` accepts deploy/grafana/prometheus.yml;
  * deploy/grafana/*.json parse, every metric their PromQL names is exported,
    and every expression (with Grafana variables substituted) is accepted by
    Prometheus' query API.
Exits 77 (skip) only when prometheus/promtool are missing and cannot be
installed with apt-get. Only the Python standard library is used.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import iofleet_harness as h  # noqa: E402  (the one harness of tests/*)
from iofleet_harness import SKIP, TestFailure, check  # noqa: E402

RUNTIME_S = 8


def log(msg):
    print(f"[prometheus_test] {msg}", flush=True)


def wait_for(pred, timeout, what, interval=0.2):
    return h.wait_for(pred, timeout, what, interval, retry_errors=True)


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def find_prometheus():
    """Paths of prometheus and promtool, installing the Debian package if needed."""
    def which():
        p = shutil.which("prometheus") or ("/usr/bin/prometheus"
                                           if os.path.exists("/usr/bin/prometheus") else None)
        t = shutil.which("promtool") or ("/usr/bin/promtool"
                                         if os.path.exists("/usr/bin/promtool") else None)
        return p, t
    prom, tool = which()
    if prom and tool:
        return prom, tool
    if shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
        if sudo is not None:
            log("prometheus missing: apt-get install -y --no-install-recommends prometheus")
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            cmd = sudo + ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"]
            try:
                r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, timeout=120)
                if r.returncode != 0:  # stale package lists: refresh once
                    subprocess.run(sudo + ["apt-get", "update"], env=env, timeout=90,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=120)
                if r.returncode != 0:
                    log("apt-get install failed:\n" + r.stdout[-2000:])
            except (subprocess.TimeoutExpired, OSError) as e:
                log(f"apt-get install failed: {e}")
    return which()


class Prom:
    def __init__(self, base):
        self.base = base

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode(params)
        try:
            _, body = http_get(url)
        except urllib.error.HTTPError as e:
            body = e.read().decode()
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise TestFailure(f"PromQL {expr!r}: {doc.get('errorType')}: {doc.get('error')}")
        return doc["data"]

    def scalar(self, expr, at=None):
        data = self.query(expr, at)
        res = data["result"]
        if data["resultType"] == "scalar":
            return float(res[1])
        if not res:
            return None
        check(len(res) == 1, f"{expr!r}: want one series, got {res}")
        return float(res[0]["value"][1])


# ---------------------------------------------------------------------------
# Metrics text helpers.

def metric_families(text):
    """{family name: type} from '# TYPE' lines, plus sample names."""
    types = {}
    samples = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(None, 3)
            types[name] = typ
        elif line and not line.startswith("#"):
            samples.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return types, samples


def exported_names(text):
    """Every name a PromQL query may use: families and their histogram series."""
    types, samples = metric_families(text)
    names = set(samples)
    for n, t in types.items():
        names.add(n)
        if t == "histogram":
            names.update({n + "_bucket", n + "_sum", n + "_count"})
    return names


def metric_names_in(expr):
    """iofleet_* metric names an expression reads (label names inside {} excluded)."""
    stripped = re.sub(r"\{[^}]*\}", "{}", expr)          # drop matchers
    stripped = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "",
                      stripped)
    names = set(re.findall(r"\b(iofleet_[a-zA-Z0-9_:]+)", stripped))
    return names


def grafana_exprs(doc):
    """(where, expr) for every PromQL expression in a dashboard."""
    out = []

    def walk(node, where):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "expr" and isinstance(v, str):
                    out.append((where, v))
                elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                    out.append((where, v["query"]))
                elif k == "definition" and isinstance(v, str) and "(" in v:
                    out.append((where, v))
                else:
                    title = node.get("title") or node.get("name") or where
                    walk(v, title if isinstance(title, str) else where)
        elif isinstance(node, list):
            for v in node:
                walk(v, where)
    walk(doc, "dashboard")
    return out


def substitute_grafana(expr):
    """Grafana variables -> values Prometheus accepts (for a syntax/data check)."""
    m = re.match(r"^\s*label_values\((.*)\)\s*$", expr, re.S)
    if m:  # label_values(metric, label) / label_values(label): query the metric part
        parts = m.group(1).rsplit(",", 1)
        expr = parts[0] if len(parts) == 2 else "up"
    expr = expr.replace("$__rate_interval", "30s").replace("${__rate_interval}", "30s")
    expr = expr.replace("$__interval", "5s").replace("${__interval}", "5s")
    expr = expr.replace("$__range", "5m").replace("${__range}", "5m")
    expr = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}?", ".*", expr)
    return expr


def check_grafana(src, exported, prom):
    files = sorted(glob.glob(os.path.join(src, "deploy", "grafana", "*.json")))
    check(files, "no dashboards in deploy/grafana/")
    total = 0
    for path in files:
        with open(path) as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError as e:
                raise TestFailure(f"{path}: not JSON: {e}")
        dash = doc.get("dashboard", doc)
        check(isinstance(dash.get("panels"), list) and dash["panels"], f"{path}: no panels")
        tvars = dash.get("templating", {}).get("list", [])
        check(any(v.get("type") == "datasource" and v.get("query") == "prometheus" for v in tvars),
              f"{path}: no Prometheus datasource variable")
        exprs = grafana_exprs(dash)
        check(exprs, f"{path}: no PromQL expressions")
        for where, expr in exprs:
            names = metric_names_in(expr)
            check(names or re.search(r"\b(up|scrape_[a-z_]+)\{", expr),
                  f"{path}: {where}: {expr!r} reads neither an iofleet metric nor scrape health")
            missing = sorted(n for n in names if n not in exported)
            check(not missing, f"{path}: panel {where!r}: {expr!r} uses {missing}, "
                               "which the controller does not export")
            prom.query(substitute_grafana(expr))  # Prometheus must accept it
            total += 1
    log(f"grafana: {len(files)} dashboard(s), {total} expressions: all metrics exported, "
        "all accepted by Prometheus")


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    build, src = os.path.abspath(args.build_dir), os.path.abspath(args.source_dir)

    prom_bin, promtool = find_prometheus()
    if not prom_bin or not promtool:
        print("SKIP: prometheus/promtool not installed and `apt-get install prometheus` "
              "is not possible here", flush=True)
        return SKIP

    h.set_build(build)
    try:
        with h.Env("prom", keep=args.keep) as env:
            run_test(env, src, prom_bin, promtool)
        return 0
    except TestFailure as e:
        print(f"FAIL: {e}", flush=True)
        return 1


def run_test(env, src, prom_bin, promtool):
    tmp = env.dir
    ctl = env.add_controller()  # binds port 0, reports the ports it bound
    addrs = {"grpc": ctl.grpc, "http": ctl.http}
    http = f"http://{addrs['http']}"
    api = http + "/api/v1"

    # Agent.
    agent = env.add_agent("a1", labels={}, target_size=0)
    allow = agent.allow
    wait_for(lambda: any(a["name"] == "a1" and a["state"] == "up"
                         for a in json.loads(http_get(api + "/agents")[1])["agents"]),
             20, "agent a1 up")

    # Prometheus.
    port = h.reserve_port()  # below the ephemeral range, locked: no race with other binds
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: iofleet-controller\n"
                "    metrics_path: /metrics\n"
                f"    static_configs:\n      - targets: ['{addrs['http']}']\n")
    env.procs.append(h.spawn([prom_bin, f"--config.file={cfg}",
                              f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                              f"--web.listen-address=127.0.0.1:{port}",
                              "--web.enable-lifecycle", "--log.level=warn"],
                            os.path.join(tmp, "prometheus.log")))
    P = Prom(f"http://127.0.0.1:{port}")
    wait_for(lambda: http_get(P.base + "/-/ready")[0] == 200, 60, "prometheus ready", 0.5)
    wait_for(lambda: P.scalar('up{job="iofleet-controller"}') == 1.0, 30,
             "prometheus to scrape the controller (up == 1)", 0.5)
    wait_for(lambda: P.scalar('iofleet_agent_up{host="a1"}') == 1.0, 30,
             "iofleet_agent_up{host=a1} == 1 in prometheus", 0.5)
    log(f"controller {addrs['http']}, prometheus 127.0.0.1:{port}: scraping")

    # The job: time_based 4k randread on a temp file for ~8 s.
    target = os.path.join(allow, "target.dat")
    with open(target, "wb") as f:
        for _ in range(32):
            f.write(os.urandom(1 << 20))
    fio = (f"[global]\nioengine=psync\nbs=4k\nsize=32m\ntime_based=1\nruntime={RUNTIME_S}\n"
           f"filename={target}\n[randread]\nrw=randread\n")
    req = urllib.request.Request(api + "/jobs", method="POST",
                                 data=json.dumps({"name": "prom-e2e", "fio": fio,
                                                  "hosts": ["a1"]}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        check(r.status == 201, f"POST /jobs -> {r.status}")
        job_id = json.loads(r.read())["id"]

    def run_running():
        runs = json.loads(http_get(f"{api}/jobs/{job_id}")[1]).get("runs", [])
        return runs[0] if runs and runs[0]["state"] in ("running", "succeeded") else None
    run = wait_for(run_running, 30, "the run to start")
    run_id = run["id"]
    info_sel = f'iofleet_run_info{{run_id="{run_id}"}}'
    wait_for(lambda: P.scalar(f'sum(iofleet_run_ios_total{{direction="read"}} '
                              f'* on(host,slot) group_left {info_sel})') or None,
             20, "the run's read ios in prometheus", 0.5)

    # A scrape during the run: promtool lint and the dashboard's metric names.
    time.sleep(2)
    _, scrape = http_get(http + "/metrics")
    with open(os.path.join(tmp, "scrape.txt"), "w") as f:
        f.write(scrape)
    for name in ("iofleet_run_info", "iofleet_run_ios_total", "iofleet_run_clat_seconds_bucket",
                 "iofleet_agent_up", "iofleet_runs",
                 "iofleet_http_request_duration_seconds_bucket"):
        check(re.search(rf"^{name}[{{ ]", scrape, re.M), f"/metrics lacks {name} during the run")
    r = subprocess.run([promtool, "check", "metrics"], input=scrape, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    check(r.returncode == 0 and not r.stdout.strip(),
          f"promtool check metrics (rc {r.returncode}):\n{r.stdout}")
    log(f"promtool check metrics: clean ({len(scrape.splitlines())} lines)")

    # Wait for the end of the run and its result.
    def finished():
        j = json.loads(http_get(f"{api}/runs/{run_id}")[1])
        return j if j["state"] in ("succeeded", "failed", "cancelled", "lost") else None
    res = wait_for(finished, RUNTIME_S + 40, "the run to finish", 0.5)
    check(res["state"] == "succeeded", f"run {run_id} {res['state']}: {res.get('error')}")
    result = res["result"]
    if isinstance(result, str):
        result = json.loads(result)
    jobs = result["jobs"]
    want_iops = sum(float(j["read"]["iops"]) for j in jobs)
    want_ios = sum(int(j["read"]["total_ios"]) for j in jobs)
    runtime_s = max(float(j["read"].get("runtime", j.get("job_runtime", 0))) for j in jobs) / 1000
    check(want_iops > 0 and runtime_s > 0, f"result has no read iops/runtime: {jobs}")
    # Let Prometheus take the final values (the series linger after the run).
    time.sleep(3)
    _, scrape_end = http_get(http + "/metrics")

    # Run telemetry (issue 16): sampled by the agent, stored with the result,
    # exported per agent; the scrape with those gauges still lints clean.
    tele = result.get("iofleet", {}).get("telemetry")
    check(isinstance(tele, dict) and tele.get("sample_ms") and tele.get("cpus"),
          f"result lacks iofleet.telemetry: {str(tele)[:300]}")
    for name in ("iofleet_agent_cpu_percent", "iofleet_agent_context_switches_per_second"):
        check(re.search(rf'^{name}{{[^}}]*host="a1"', scrape_end, re.M),
              f"/metrics lacks {name} for a1 after the run")
    r = subprocess.run([promtool, "check", "metrics"], input=scrape_end, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    check(r.returncode == 0 and not r.stdout.strip(),
          f"promtool check metrics after the run (rc {r.returncode}):\n{r.stdout}")
    log(f"telemetry: {len(tele['sample_ms'])} samples, devices {sorted(tele['devices'])}")

    win = "2m"
    ios_sel = f'iofleet_run_ios_total{{direction="read"}} * on(host,slot) group_left {info_sel}'
    sampled_sel = f'iofleet_run_sampled_seconds_total * on(host,slot) group_left {info_sel}'
    iops_rate = P.scalar(f"sum(rate(({ios_sel})[{win}:1s])) / sum(rate(({sampled_sel})[{win}:1s]))")
    # Plain counters: the join above as subquery; also without subqueries via the
    # label filter on a single-run controller.
    iops_rate_plain = P.scalar(
        f'sum(rate(iofleet_run_ios_total{{direction="read"}}[{win}])) / '
        f"sum(rate(iofleet_run_sampled_seconds_total[{win}]))")
    total_ios = P.scalar(f"max_over_time(({ios_sel})[{win}:1s])")
    iops_increase = total_ios / runtime_s
    check(iops_rate is not None and iops_rate_plain is not None and total_ios is not None,
          "prometheus has no data for the run")

    def dev(x):
        return abs(x - want_iops) / want_iops * 100
    log(f"result: read iops {want_iops:.1f} ({want_ios} ios in {runtime_s:.3f} s)")
    log(f"prometheus: rate(ios)/rate(sampled_seconds) = {iops_rate:.1f} ({dev(iops_rate):.3f} %), "
        f"plain = {iops_rate_plain:.1f} ({dev(iops_rate_plain):.3f} %), "
        f"max_over_time(ios)/runtime = {iops_increase:.1f} ({dev(iops_increase):.3f} %), "
        f"ios {total_ios:.0f} vs {want_ios}")
    for name, v in (("rate(ios)/rate(sampled)", iops_rate),
                    ("rate plain", iops_rate_plain),
                    ("max_over_time(ios)/runtime", iops_increase)):
        check(dev(v) <= 5.0, f"{name} = {v:.1f} differs from result iops {want_iops:.1f} "
                             f"by {dev(v):.2f} % (> 5 %)")

    # Latency histogram: count == ios, and the median bucket brackets fio's median.
    hcount = P.scalar(f'max_over_time((sum(iofleet_run_clat_seconds_count{{direction="read"}} '
                      f'* on(host,slot) group_left {info_sel}))[{win}:1s])')
    check(hcount is not None and abs(hcount - total_ios) <= 0.5,
          f"clat histogram count {hcount} != ios {total_ios}")
    p50 = P.scalar(f'histogram_quantile(0.5, sum by (le) (max_over_time(('
                   f'iofleet_run_clat_seconds_bucket{{direction="read"}} * on(host,slot) '
                   f'group_left {info_sel})[{win}:1s])))')
    clat = jobs[0]["read"].get("clat_ns", {})
    fio_p50 = float(clat.get("percentile", {}).get("50.000000", 0)) / 1e9
    log(f"latency p50: prometheus {p50 * 1e6:.3f} us (power-of-two buckets), "
        f"fio {fio_p50 * 1e6:.3f} us")
    if fio_p50 > 0:
        # The power-of-two bucket that holds fio's median holds Prometheus' too
        # (cumulative counts are exact at the bounds; the quantile interpolates inside).
        k = 10
        while (1 << k) < fio_p50 * 1e9 and k < 34:
            k += 1
        hi = (1 << k) / 1e9
        lo = 0.0 if k == 10 else hi / 2
        check(p50 is not None and lo - 1e-12 <= p50 <= hi + 1e-12,
              f"histogram_quantile p50 {p50} is outside fio's median bucket [{lo}, {hi}] "
              f"(fio p50 {fio_p50})")

    # Total latency (fio's lat = slat + clat) beside clat: its histogram's count
    # is the I/O count and its mean (_sum / _count, fio bucket values) is fio's
    # lat_ns mean within the bucket width (1/64 of the value).
    def lat_sel(part):
        return (f'iofleet_run_lat_seconds_{part}{{direction="read"}} * on(host,slot) '
                f'group_left {info_sel}')
    lcount = P.scalar(f"max_over_time((sum({lat_sel('count')}))[{win}:1s])")
    lsum = P.scalar(f"max_over_time((sum({lat_sel('sum')}))[{win}:1s])")
    check(lcount is not None and abs(lcount - total_ios) <= 0.5,
          f"lat histogram count {lcount} != ios {total_ios}")
    fio_lat_mean = sum(float(j["read"]["lat_ns"]["mean"]) * int(j["read"]["lat_ns"]["N"])
                       for j in jobs) / max(1, sum(int(j["read"]["lat_ns"]["N"]) for j in jobs)) / 1e9
    prom_lat_mean = lsum / lcount if lcount else 0
    log(f"total latency mean: prometheus {prom_lat_mean * 1e6:.3f} us, fio lat_ns "
        f"{fio_lat_mean * 1e6:.3f} us")
    check(fio_lat_mean > 0 and abs(prom_lat_mean - fio_lat_mean) <= fio_lat_mean / 64,
          f"lat mean {prom_lat_mean} differs from fio's {fio_lat_mean} by more than 1/64")
    check(re.search(r'^iofleet_run_lat_seconds_bucket\{', scrape, re.M),
          "/metrics lacks iofleet_run_lat_seconds_bucket during the run")

    # Per-agent and controller series made it to Prometheus.
    check(P.scalar('iofleet_agent_heartbeats_total{host="a1"}') >= 1, "no heartbeats counted")
    check(P.scalar('sum(iofleet_agent_runs_finished_total{host="a1",state="succeeded"})') == 1,
          "iofleet_agent_runs_finished_total{state=succeeded} != 1")
    check(P.scalar('sum(iofleet_runs)') == 0, "iofleet_runs not back to 0")
    check((P.scalar('sum(iofleet_http_requests_total{route="/api/v1/runs/{id}"})') or 0) >= 1,
          "no /api/v1/runs/{id} requests counted")
    check((P.scalar('sum(iofleet_store_writes_total)') or 0) >= 3, "no store writes counted")

    # Grafana dashboards and the scrape config that goes with them.
    r = subprocess.run([promtool, "check", "config",
                        os.path.join(src, "deploy", "grafana", "prometheus.yml")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    check(r.returncode == 0, f"promtool check config deploy/grafana/prometheus.yml:\n{r.stdout}")
    check_grafana(src, exported_names(scrape) | exported_names(scrape_end), P)
    log("PASS")


if __name__ == "__main__":
    sys.exit(main())
