#!/usr/bin/env python3
"""The seed workloads on their real device shapes, iofleet vs fio 3.33, inside
the test-bed guest. Run through bench/vm/seeds.sh (which boots the guest); the
guest needs --nvme 6 and null_blk with 4 devices.

For every case both tools get the same job file; runs alternate fio, iofleet,
fio, iofleet ... (REPS each, env REPS, default 2) and the medians are compared:
IOPS per group (group_reporting) and, for the latency seed, clat p50/p99 as
fio histogram bucket indices (a difference of 0 or 1 is "within one bucket").
Prints a Markdown table per seed.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
REPS = int(os.environ.get("REPS", "2"))
RUNTIME = int(os.environ.get("RUNTIME", "4"))


def plat_idx(val):
    """fio's latency bucket index of a value in ns (FIO_IO_U_PLAT_BITS = 6)."""
    val = int(val)
    if val <= 0:
        return 0
    msb = val.bit_length() - 1
    if msb <= 6:
        return val
    error_bits = msb - 6
    return ((error_bits + 1) << 6) + ((val >> error_bits) & 63)


def run(tool, text):
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
        f.write(text)
    cmd = (["fio"] if tool == "fio" else [os.path.join(BUILD, "bin", "iofleet-agent"), "run"])
    p = subprocess.run(cmd + ["--output-format=json", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    if p.returncode != 0:
        raise SystemExit(f"{tool} failed ({p.returncode}):\n{text}\n{p.stderr}")
    out = p.stdout
    return json.loads(out[out.find("{"):])


def groups(result):
    """[(iops, clat p50, clat p99, lat p50, lat p99)] (ns) per reported job (one
    per group with group_reporting); lat percentiles need lat_percentiles=1."""
    out = []
    for j in result["jobs"]:
        r = j["read"]
        c = r["clat_ns"].get("percentile", {})
        t = r["lat_ns"].get("percentile", {})
        out.append((r["iops"], c.get("50.000000", 0), c.get("99.000000", 0),
                    t.get("50.000000", 0), t.get("99.000000", 0)))
    return out


def compare(text, label):
    res = {"fio": [], "iofleet": []}
    for _ in range(REPS):
        for tool in ("fio", "iofleet"):
            res[tool].append(groups(run(tool, text)))
    n = len(res["fio"][0])
    if any(len(g) != n for t in res.values() for g in t):
        raise SystemExit(f"{label}: the tools report different group counts")
    rows = []
    for gi in range(n):
        med = {t: [statistics.median(rep[gi][k] for rep in res[t]) for k in range(5)] for t in res}
        rows.append((gi, med["fio"], med["iofleet"]))
    return rows


def seed_six_nvme():
    text = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=42\n"
    text += ("iodepth_batch_submit=8\niodepth_batch_complete_min=1\niodepth_batch_complete_max=8\n"
             f"random_generator=lfsr\ntime_based=1\nruntime={RUNTIME}\nsize=1g\ngroup_reporting=1\n")
    devs = sorted(d for d in os.listdir("/dev") if d.startswith("nvme") and "n" in d[4:])
    if len(devs) != 6:
        raise SystemExit(f"want 6 NVMe namespaces, have {devs}")
    for i, d in enumerate(devs):
        text += f"[dev{i}]\nfilename=/dev/{d}\ncpus_allowed={i % os.cpu_count()}\n"
    rows = compare(text, "six nvme")
    print("\n### Six NVMe namespaces, libaio QD42, batch submit/complete, lfsr, cpus_allowed per job\n")
    print("| group | fio IOPS | iofleet IOPS | iofleet / fio |\n|---|---:|---:|---:|")
    for gi, f, o in rows:
        print(f"| all 6 devices | {f[0]:,.0f} | {o[0]:,.0f} | {o[0] / f[0]:.3f} |")


def seed_null_blk_scaling():
    base = ("[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=16\n"
            f"time_based=1\nruntime={RUNTIME}\ngroup_reporting=1\nthread=1\n")
    print("\n### null_blk thread scaling: N threads to one device vs one thread per device\n")
    print("| shape | fio IOPS | iofleet IOPS | iofleet / fio |\n|---|---:|---:|---:|")
    nullbs = sorted(d for d in os.listdir("/dev") if d.startswith("nullb"))
    for n in (1, 2, 4):
        text = base + f"[one-device]\nfilename=/dev/nullb0\nnumjobs={n}\n"
        (_, f, o), = compare(text, f"{n} threads, one device")
        print(f"| {n} thread(s) -> nullb0 | {f[0]:,.0f} | {o[0]:,.0f} | {o[0] / f[0]:.3f} |")
        if n == 1:
            continue
        text = base + "".join(f"[dev{i}]\nfilename=/dev/{nullbs[i]}\n" for i in range(n))
        (_, f, o), = compare(text, f"{n} devices")
        print(f"| 1 thread per device x {n} | {f[0]:,.0f} | {o[0]:,.0f} | {o[0] / f[0]:.3f} |")


def seed_latency_per_depth():
    print("\n### io_uring latency per iodepth (nvme0n1, 4k randread): p50/p99 in us; "
          "b = iofleet's fio histogram bucket minus fio's\n")
    print("| iodepth | fio IOPS | iofleet IOPS | ratio | clat p50 fio / iofleet (b) | "
          "clat p99 fio / iofleet (b) | lat p50 fio / iofleet (b) | lat p99 fio / iofleet (b) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for qd in (1, 4, 16, 64, 128):
        text = ("[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\nlat_percentiles=1\n"
                f"time_based=1\nruntime={RUNTIME}\nsize=1g\n"
                f"[lat]\nfilename=/dev/nvme0n1\niodepth={qd}\n")
        (_, f, o), = compare(text, f"QD{qd}")
        cells = [f"{f[k] / 1e3:.1f} / {o[k] / 1e3:.1f} ({plat_idx(o[k]) - plat_idx(f[k]):+d})"
                 for k in (1, 2, 3, 4)]
        print(f"| {qd} | {f[0]:,.0f} | {o[0]:,.0f} | {o[0] / f[0]:.3f} | " + " | ".join(cells) + " |")


def seed_uring_cmd():
    """Not a seed: the io_uring_cmd engine against fio's on /dev/ng0n1."""
    print("\n### io_uring_cmd (NVMe passthrough) on /dev/ng0n1, 4k randread\n")
    print("| options | fio IOPS | iofleet IOPS | iofleet / fio |\n|---|---:|---:|---:|")
    for label, opts in (("QD1", "iodepth=1\n"), ("QD16", "iodepth=16\n"),
                        ("QD16 fixedbufs registerfiles", "iodepth=16\nfixedbufs=1\nregisterfiles=1\n"
                         "nonvectored=1\n")):
        fio_text = ("[global]\nioengine=io_uring_cmd\ncmd_type=nvme\nrw=randread\nbs=4k\n"
                    f"time_based=1\nruntime={RUNTIME}\nsize=1g\n[p]\nfilename=/dev/ng0n1\n{opts}")
        # iofleet always sends the non-vectored command; fio needs nonvectored=1
        # for fixedbufs on this kernel.
        ours = fio_text.replace("nonvectored=1\n", "")
        res = {"fio": [], "iofleet": []}
        for _ in range(REPS):
            res["fio"].append(groups(run("fio", fio_text))[0][0])
            res["iofleet"].append(groups(run("iofleet", ours))[0][0])
        f, o = statistics.median(res["fio"]), statistics.median(res["iofleet"])
        print(f"| {label} | {f:,.0f} | {o:,.0f} | {o / f:.3f} |")


if __name__ == "__main__":
    which = os.environ.get("SEEDS", "six,scaling,latency").split(",")
    print(f"guest: {os.uname().release}, {os.cpu_count()} vCPUs; fio "
          f"{subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}; "
          f"{REPS} runs per tool, {RUNTIME} s each, medians")
    if "six" in which:
        seed_six_nvme()
    if "scaling" in which:
        seed_null_blk_scaling()
    if "latency" in which:
        seed_latency_per_depth()
    if "uring_cmd" in which:
        seed_uring_cmd()
