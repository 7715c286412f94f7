#!/usr/bin/env python3
"""Where fio 3.33 places a job's I/O buffers: from a job file and from the
same options given on the command line.

Runs fio under strace for each case, with the file there (sparse, 32 MiB)
and with no file (fio lays it out first),, takes the buffer address of the job's
first data I/O (pread64's buffer, or io_submit's aio_buf) and says whether it
came from the heap (inside the job process's brk range) or from a mapping,
and its offset past a page. Two reads of fio, one I/O each: no timing.

  bench/engine/fio_buffer_place.py [--fio fio] [--dir /var/tmp/iofleet-bench]
"""
import argparse
import os
import re
import subprocess
import tempfile

CASES = [  # (engine, bs, iodepth)
    ("psync", "4k", 1), ("psync", "64k", 1), ("psync", "128k", 1), ("psync", "256k", 1),
    ("psync", "384k", 1), ("psync", "448k", 1), ("psync", "512k", 1), ("psync", "1m", 1),
    ("psync", "4m", 1), ("psync", "8m", 1), ("psync", "12m", 1), ("psync", "16m", 1),
    ("psync", "17m", 1), ("psync", "32m", 1),
    ("libaio", "4k", 1), ("libaio", "64k", 4), ("libaio", "64k", 6), ("libaio", "64k", 8),
    ("libaio", "256k", 2), ("libaio", "256k", 16), ("libaio", "256k", 64),
    ("libaio", "1m", 16), ("libaio", "1m", 32),
]

SIZES = {"k": 1 << 10, "m": 1 << 20}


def size_of(text):
    return int(text[:-1]) * SIZES[text[-1]]


def place(fio, filename, engine, bs, depth, how, lay_out):
    if lay_out:
        if os.path.exists(filename):
            os.unlink(filename)
    else:
        with open(filename, "wb") as f:
            f.truncate(32 << 20)
    opts = {"filename": filename, "rw": "read", "bs": bs, "ioengine": engine,
            "iodepth": str(depth), "size": str(max(size_of(bs), 1 << 20)),
            "number_ios": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        if how == "file":
            job = os.path.join(tmp, "j.fio")
            with open(job, "w") as f:
                f.write("[x]\n" + "".join(f"{k}={v}\n" for k, v in opts.items()))
            args = [fio, job]
        else:
            args = [fio, "--name=x"] + [f"--{k}={v}" for k, v in opts.items()]
        trace = os.path.join(tmp, "trace")
        subprocess.run(["strace", "-f", "-o", trace, "-e", "raw=pread64",
                        "-e", "trace=pread64,io_submit,brk", *args, "--output=/dev/null"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lo, hi, addr = {}, {}, None
        n = size_of(bs)
        for line in open(trace):
            m = re.match(r"(\d+)\s+brk\((\w+)\)\s+= (0x[0-9a-f]+)", line)
            if m:
                pid, ret = m.group(1), int(m.group(3), 16)
                lo.setdefault(pid, ret)
                lo[pid] = min(lo[pid], ret)
                hi[pid] = max(hi.get(pid, 0), ret)
                continue
            m = re.match(r"(\d+)\s+pread64\(0x\w+, (0x[0-9a-f]+), (0x[0-9a-f]+),", line)
            if m and int(m.group(3), 16) == n:
                addr, apid = int(m.group(2), 16), m.group(1)
                break
            m = re.match(r"(\d+)\s+io_submit\(.*aio_buf=(0x[0-9a-f]+), aio_nbytes=(\d+)", line)
            if m and int(m.group(3)) == n:
                addr, apid = int(m.group(2), 16), m.group(1)
                break
        if addr is None:
            return "no I/O seen"
        # The job runs in a child process that inherits its parent's heap.
        heap = any(lo[p] <= addr < hi[p] for p in lo)
        return f"{'heap' if heap else 'mapping'} 0x{addr % 4096:03x}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--dir", default="/var/tmp/iofleet-bench")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    filename = os.path.join(a.dir, "bufplace.dat")
    print("| engine | bs | iodepth | buffer bytes | job file | command line "
          "| job file, fio lays the file out | command line, fio lays the file out |")
    print("|---|---:|---:|---:|---|---|---|---|")
    for engine, bs, depth in CASES:
        total = size_of(bs) * depth
        row = [place(a.fio, filename, engine, bs, depth, how, lay)
               for lay in (False, True) for how in ("file", "cmdline")]
        print(f"| {engine} | {bs} | {depth} | {total >> 10} KiB | " + " | ".join(row) + " |", flush=True)
    os.unlink(filename)


if __name__ == "__main__":
    main()
