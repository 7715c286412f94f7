#!/usr/bin/env python3
"""Checks that run inside the test-bed guest (tests/vm/run.sh), one per boot.

Usage (from the host, see tests/vm/CMakeLists.txt):
  tests/vm/run.sh --nvme 3 --null-blk -- python3 tests/vm/guest_checks.py --build-dir B nvme
  tests/vm/run.sh --numa 2 --nvme 3 -- python3 tests/vm/guest_checks.py --build-dir B numa

nvme: the agent's inventory against sysfs and `nvme id-ctrl` (model, serial,
  firmware, NVMe version, namespaces, LBA formats, queues, transport), then a
  controller and an agent inside the guest run jobs on an NVMe namespace,
  null_blk and tmpfs: each run's device_fingerprint names its kind and the
  NVMe and null_blk ones differ; the SQLite column holds the same.
numa: inventory nodes, their CPUs and the node each NVMe controller hangs off;
  the NUMA tests that skip on one node: move_pages/get_mempolicy on node-bound
  memory, and real runs whose workers are placed by numa_cpu_nodes,
  numa_mem_policy and cpus_allowed_policy=split (each clone's CPUs, and the node
  its I/O buffers landed on as move_pages reports it).
Prints "PASS <case>" and exits 0, or prints why and exits 1.
"""
import argparse
import json
import mmap
import os
import re
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import e2e_test  # noqa: E402  (Controller, REST helpers)
from e2e_test import TestFailure, check  # noqa: E402

BUILD = None


def agent_bin():
    return os.path.join(BUILD, "bin", "iofleet-agent")


def inventory():
    out = subprocess.run([agent_bin(), "inventory"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def sysfs(path):
    with open(path) as f:
        return f.read().strip()


def case_nvme():
    inv = inventory()
    ctrls = {c["name"]: c for c in inv.get("nvme_controllers", [])}
    check(len(ctrls) == 2, f"want 2 NVMe controllers, inventory has {sorted(ctrls)}")
    namespaces = []
    for name, c in ctrls.items():
        idc = json.loads(subprocess.run(["nvme", "id-ctrl", f"/dev/{name}", "-o", "json"],
                                        check=True, capture_output=True, text=True).stdout)
        check(c["model"] == idc["mn"].strip(), f"{name} model {c['model']!r} vs id-ctrl {idc['mn']!r}")
        check(c["serial"] == idc["sn"].strip(), f"{name} serial {c['serial']!r} vs {idc['sn']!r}")
        check(c["firmware"] == idc["fr"].strip(), f"{name} firmware {c['firmware']!r} vs {idc['fr']!r}")
        ver = idc["ver"]
        want_ver = f"{ver >> 16}.{(ver >> 8) & 0xff}" + (f".{ver & 0xff}" if ver & 0xff else "")
        check(c.get("version") == want_ver, f"{name} version {c.get('version')!r} vs id-ctrl {want_ver}")
        check(c["transport"] == "pcie", f"{name} transport {c['transport']!r}")
        check(c["queue_count"] == int(sysfs(f"/sys/class/nvme/{name}/queue_count")),
              f"{name} queue_count {c['queue_count']}")
        check(re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9]", c["address"]),
              f"{name} address {c['address']!r}")
        namespaces += c["namespaces"]
    check(len(namespaces) == 3, f"want 3 namespaces, got {namespaces}")
    serials = sorted(c["serial"] for c in ctrls.values())
    check(serials == ["IOFLEETVM0000", "IOFLEETVM0001"], f"serials {serials}")

    devs = {d["name"]: d for d in inv["block_devices"]}
    lbas = {}
    for ns in namespaces:
        d = devs.get(ns)
        check(d is not None, f"namespace {ns} missing from block_devices")
        check(d["kind"] == "nvme", f"{ns} kind {d['kind']!r}")
        ctrl = ctrls[d["nvme_controller"]]
        check(d["serial"] == ctrl["serial"], f"{ns} serial {d['serial']!r}")
        check(d["nsid"] == int(sysfs(f"/sys/block/{ns}/nsid")), f"{ns} nsid {d['nsid']}")
        check(d["hw_queues"] >= 1, f"{ns} hw_queues {d['hw_queues']}")
        lbas[ns] = d["logical_block_size"]
        want_fp = (f"nvme:QEMU NVMe Ctrl:fw={ctrl['firmware']}:lba={d['logical_block_size']}"
                   f":cap={d['size_bytes']}")
        check(d["fingerprint"] == want_fp, f"{ns} fingerprint {d['fingerprint']!r}, want {want_fp!r}")
    # run.sh gives controller 0 two 512-byte namespaces, controller 1 one 4096-byte.
    check(sorted(lbas.values()) == [512, 512, 4096], f"LBA formats {lbas}")
    for nb in ("nullb0", "nullb1"):
        check(devs.get(nb, {}).get("kind") == "null_blk", f"{nb}: {devs.get(nb)}")
        check(devs[nb]["fingerprint"] == "null_blk::fw=:lba=512:cap=1073741824",
              f"{nb} fingerprint {devs[nb]['fingerprint']!r}")

    ns512 = next(ns for ns, l in sorted(lbas.items()) if l == 512)
    ns4k = next(ns for ns, l in lbas.items() if l == 4096)
    # The logical block size check reads the real namespace: 512-byte O_DIRECT
    # on a 4096-byte format is refused before any I/O.
    p = subprocess.run([agent_bin(), "run", "--name=lba", f"--filename=/dev/{ns4k}", "--rw=randread",
                        "--bs=512", "--direct=1", "--size=1m", "--ioengine=psync"],
                       capture_output=True, text=True)
    check(p.returncode != 0 and "logical block size 4096" in p.stderr,
          f"512-byte O_DIRECT on {ns4k}: exit {p.returncode}, stderr {p.stderr!r}")

    check_io_uring_cmd(ns4k)

    # A controller and an agent inside the guest, on its loopback.
    env = e2e_test.Env()
    ok = False
    try:
        env.controller.start()
        tmp_target = os.path.join(env.dir, "allow-vm", "file.dat")
        os.makedirs(os.path.dirname(tmp_target), exist_ok=True)
        agent = e2e_test.Agent(env, "vm", {})
        log = open(agent.log_path, "a")
        agent.proc = subprocess.Popen(
            [agent_bin(), "serve", f"--controller={env.controller.grpc}", "--name=vm",
             "--allow-path=/dev/", f"--allow-path={os.path.dirname(tmp_target)}",
             f"--spool-dir={agent.spool}"], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        env.agents["vm"] = agent
        env.wait_agents_up(["vm"], timeout=60)
        served = env.agents_json()["vm"]
        inv_served = served["inventory"] if "inventory" in served else json.loads(served["inventory_json"])
        check(len(inv_served.get("nvme_controllers", [])) == 2,
              f"controller's view of the inventory lacks the NVMe controllers: {served}")

        def job(target, extra=""):
            return (f"[j]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=4\n"
                    f"size=16m\ntime_based=1\nruntime=1\nfilename={target}\n{extra}")
        ids = {
            "nvme": env.submit(job(f"/dev/{ns512}"), name="vm-nvme", hosts=["vm"]),
            "null_blk": env.submit(job("/dev/nullb0"), name="vm-nullb", hosts=["vm"]),
            "tmpfs": env.submit(job(tmp_target, "direct=0\n"), name="vm-tmpfs", hosts=["vm"]),
        }
        fps = {}
        for kind, jid in ids.items():
            j = env.wait_job(jid, timeout=120)
            run = e2e_test.run_of(j)
            check(run["state"] == "succeeded", f"{kind} run: {run['state']} {run.get('error')}")
            full = env.get(f"/runs/{run['id']}")
            fps[kind] = full.get("device_fingerprint", "")
            with env.db() as db:
                (col,) = db.execute("SELECT device_fingerprint FROM results WHERE run_id = ?",
                                    (run["id"],)).fetchone()
            check(col == fps[kind], f"{kind}: store has {col!r}, API serves {fps[kind]!r}")
        check(fps["nvme"] == devs[ns512]["fingerprint"], f"nvme run fingerprint {fps['nvme']!r}")
        check(fps["null_blk"] == "null_blk::fw=:lba=512:cap=1073741824",
              f"null_blk run fingerprint {fps['null_blk']!r}")
        check(fps["tmpfs"] == "none::fw=:lba=0:cap=0:fs=tmpfs", f"tmpfs run fingerprint {fps['tmpfs']!r}")
        check(fps["nvme"] != fps["null_blk"], "NVMe and null_blk runs share a fingerprint")
        print("fingerprints:", json.dumps(fps, indent=1))
        ok = True
    finally:
        env.__exit__(None if ok else TestFailure, None, None)


def agent_run(*args):
    p = subprocess.run([agent_bin(), "run", "--output-format=json", *args],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise TestFailure(f"iofleet-agent run {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout[p.stdout.find("{"):])["jobs"][0]


def block_bytes(dev, length):
    """The device's first `length` bytes, read with O_DIRECT: passthrough
    writes do not invalidate the block device's page cache."""
    buf = mmap.mmap(-1, length)
    fd = os.open(f"/dev/{dev}", os.O_RDONLY | os.O_DIRECT)
    try:
        n = os.preadv(fd, [buf], 0)
        return bytes(buf[:n])
    finally:
        os.close(fd)
        buf.close()


def check_io_uring_cmd(ns):
    """Writes, reads and trims through /dev/ngXnY, seen through the block device."""
    ng = "/dev/ng" + ns[4:]
    size = 1 << 20
    common = [f"--filename={ng}", "--ioengine=io_uring_cmd", "--cmd_type=nvme", "--bs=4k",
              f"--size={size}", "--iodepth=8"]
    # Refused before any I/O on what is not an NVMe generic char device.
    for bad in (f"/dev/{ns}", "/dev/nullb0"):
        p = subprocess.run([agent_bin(), "run", "--name=bad", f"--filename={bad}",
                            "--ioengine=io_uring_cmd", "--rw=read", "--size=1m"],
                           capture_output=True, text=True)
        check(p.returncode != 0 and "/dev/ngXnY" in p.stderr and bad in p.stderr,
              f"io_uring_cmd on {bad}: exit {p.returncode}, stderr {p.stderr!r}")
    check(block_bytes(ns, size) == bytes(size), f"{ns} is not blank to start with")
    w = agent_run("--name=w", "--rw=write", "--fixedbufs=1", "--registerfiles=1",
                  "--allow_destructive=1", *common)
    check(w["write"]["total_ios"] == size // 4096 and w["error"] == 0, f"write: {w['write']}")
    written = block_bytes(ns, size)
    check(written.count(0) < size // 2, f"{ns}: the passthrough writes are not on the namespace")
    r = agent_run("--name=r", "--rw=randread", "--sqthread_poll=1", *common)
    check(r["read"]["total_ios"] == size // 4096 and r["error"] == 0, f"read: {r['read']}")
    h = agent_run("--name=h", "--rw=randread", "--hipri=1", "--fixedbufs=1", *common)
    check(h["read"]["total_ios"] == size // 4096 and h["error"] == 0, f"hipri read: {h['read']}")
    t = agent_run("--name=t", "--rw=trim", "--allow_destructive=1", *common)
    check(t["trim"]["total_ios"] == size // 4096 and t["error"] == 0, f"trim: {t['trim']}")
    check(block_bytes(ns, size) == bytes(size), f"{ns}: trimmed range does not read back zeros")
    print(f"io_uring_cmd on {ng}: write, read (sqpoll), read (hipri), trim: ok")


def case_numa():
    inv = inventory()
    nodes = {n["id"]: n.get("cpus", []) for n in inv["numa_nodes"]}
    check(sorted(nodes) == [0, 1], f"NUMA nodes {nodes}")
    check(nodes[0] == [0] and nodes[1] == [1], f"node CPUs {nodes}")
    # run.sh hangs controller c (serial IOFLEETVM000c) off node c % 2.
    for c in inv.get("nvme_controllers", []):
        want = int(c["serial"][-4:]) % 2
        check(c["numa_node"] == want, f"{c['name']} ({c['serial']}) on node {c['numa_node']}, want {want}")
        for ns in c["namespaces"]:
            d = next(d for d in inv["block_devices"] if d["name"] == ns)
            check(d["numa_node"] == want, f"{ns} on node {d['numa_node']}, want {want}")
    check(len(inv.get("nvme_controllers", [])) == 2, "want 2 NVMe controllers")

    # move_pages/get_mempolicy checks of AllocOnNode and first touch, and real
    # workers placed by numa_cpu_nodes, numa_mem_policy and cpus_allowed_policy=split
    # (each clone's CPUs and the node its I/O buffers landed on).
    for binary, filt in (("agent_affinity_test", "NumaTest.*"),
                         ("agent_run_test", "RunnerTest.NumaNodesPlaceWorkersAndTheirBuffers:"
                                            "RunnerTest.ThreadsStayOnTheirCpus")):
        gtest = subprocess.run([os.path.join(BUILD, "tests", binary), f"--gtest_filter={filt}"],
                               capture_output=True, text=True)
        print(gtest.stdout[-1200:])
        check(gtest.returncode == 0, f"{binary} {filt} failed on two nodes")
        check("[  SKIPPED ]" not in gtest.stdout, f"{binary}: a NUMA test skipped on two nodes")


def blkzone_report(dev):
    """(start, bytes written) of every zone of /dev/DEV, from util-linux blkzone
    (its wptr is relative to the zone start; 0 for a conventional zone)."""
    out = subprocess.run(["blkzone", "report", f"/dev/{dev}"], check=True, capture_output=True,
                         text=True).stdout
    zones = []
    for line in out.splitlines():
        m = re.search(r"start: (0x[0-9a-f]+), len (0x[0-9a-f]+).*wptr (0x[0-9a-f]+)", line)
        if m:
            zones.append((int(m.group(1), 16) * 512, int(m.group(3), 16) * 512))
    return zones


def fio_run(*args):
    p = subprocess.run(["fio", "--output-format=json", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise TestFailure(f"fio {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout[p.stdout.find("{"):])["jobs"][0]


def case_zbd():
    """zonemode=zbd on a zoned null_blk (host-managed): iofleet and fio 3.33 run
    the same jobs from the same zone state and must leave the same write
    pointers and do the same number of I/Os."""
    devs = [d for d in sorted(os.listdir("/sys/block")) if d.startswith("nullb")
            and sysfs(f"/sys/block/{d}/queue/zoned") == "host-managed"]
    check(devs, "no zoned null_blk (host-managed) in the guest")
    dev = devs[0]
    zone = int(sysfs(f"/sys/block/{dev}/queue/chunk_sectors")) * 512
    inv = {d["name"]: d for d in inventory().get("block_devices", [])}
    d = inv.get(dev, {})
    check(d.get("zoned") == "host-managed", f"inventory does not report {dev} as host-managed: {d}")
    check(int(d.get("zoneSizeBytes", d.get("zone_size_bytes", 0))) == zone,
          f"inventory zone size of {dev}: {d}")
    check(int(d.get("nrZones", d.get("nr_zones", 0))) == int(sysfs(f"/sys/block/{dev}/queue/nr_zones")),
          f"inventory zone count of {dev}: {d}")
    check(":zoned=host-managed:zone=" in d.get("fingerprint", ""),
          f"fingerprint of {dev} does not say zoned: {d.get('fingerprint')}")
    base = [f"--filename=/dev/{dev}", "--ioengine=psync", "--direct=1", "--zonemode=zbd",
            "--bs=64k"]
    jobs = [
        # Sequential write over 2.5 zones, then the same again from where the
        # first left the write pointers (full zones are reset first).
        ["--name=w", "--rw=write", f"--size={4 * zone}", f"--io_size={5 * zone // 2}"],
        ["--name=w", "--rw=write", f"--size={4 * zone}", f"--io_size={5 * zone // 2}"],
        # Reads stop at the written data (read_beyond_wp=0).
        ["--name=r", "--rw=read", f"--size={4 * zone}"],
        # Two open zones at most, random writes.
        ["--name=rw", "--rw=randwrite", "--max_open_zones=2", "--norandommap",
         f"--offset={8 * zone}", f"--size={8 * zone}", f"--io_size={3 * zone}"],
    ]
    results = {}
    for tool in ("iofleet", "fio"):
        subprocess.run(["blkzone", "reset", f"/dev/{dev}"], check=True)
        seen = []
        for job in jobs:
            js = agent_run(*base, *job) if tool == "iofleet" else fio_run(*base, *job)
            check(js.get("error", 0) == 0, f"{tool} {job}: error {js.get('error')}")
            seen.append((js["read"]["total_ios"], js["write"]["total_ios"]))
        zones = blkzone_report(dev)
        results[tool] = (seen, [written for _, written in zones[:16]])
        print(f"{tool}: ios (read, write) per job {seen}; bytes written per zone "
              f"{results[tool][1]}")
    io_i, wp_i = results["iofleet"]
    io_f, wp_f = results["fio"]
    check(io_i[:3] == io_f[:3], f"I/O counts differ: iofleet {io_i[:3]} fio {io_f[:3]}")
    check(wp_i[:8] == wp_f[:8], f"write pointers differ: iofleet {wp_i[:8]} fio {wp_f[:8]}")
    # The random job: same number of writes; which zones it filled or reset
    # depends on each tool's random offsets (iofleet's are not fio's), but
    # neither leaves more than max_open_zones=2 zones partly written.
    check(io_i[3] == io_f[3], f"random write counts differ: iofleet {io_i[3]} fio {io_f[3]}")
    for tool, wps in (("iofleet", wp_i), ("fio", wp_f)):
        partial = [w for w in wps[8:16] if 0 < w < zone]
        check(len(partial) <= 2, f"{tool}: {len(partial)} zones partly written with max_open_zones=2")


def main():
    global BUILD
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("case", choices=["nvme", "numa", "zbd"])
    args = ap.parse_args()
    BUILD = e2e_test.BUILD = os.path.abspath(args.build_dir)
    try:
        {"nvme": case_nvme, "numa": case_numa, "zbd": case_zbd}[args.case]()
    except TestFailure as e:
        print(f"FAIL {args.case}: {e}")
        return 1
    print(f"PASS {args.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
