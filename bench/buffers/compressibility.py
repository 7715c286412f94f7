#!/usr/bin/env python3
"""How compressible the data iofleet-agent writes is, against what the job asks
and against fio 3.33 on the same job (issue 13, "buffer contents").

    bench/buffers/compressibility.py [--build-dir build] [--size 32m]

For each buffer_compress_percentage P (with the default chunk and with
buffer_compress_chunk=512 / 4k) both tools write a file (rw=write, bs=64k,
refill_buffers=1, psync) and the file is compressed with zstd -3 and zlib -6:
the asked ratio is (100 - P) % of the bytes. dedupe_percentage D is measured as
the share of 4 KiB blocks that repeat an earlier block (asked: D %). Prints a
markdown table. Standard library plus the zstd command (Debian: zstd).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zlib


def write(tool, agent, path, extra, size):
    job = os.path.join(os.path.dirname(path), "c.fio")
    with open(job, "w") as f:
        f.write(f"[c]\nfilename={path}\nsize={size}\nbs=64k\nrw=write\nioengine=psync\n"
                f"refill_buffers=1\n{extra}")
    if os.path.exists(path):
        os.unlink(path)
    cmd = [agent, "run", job] if tool == "iofleet" else ["fio", job]
    subprocess.run(cmd, check=True, capture_output=True, cwd=os.path.dirname(path))
    with open(path, "rb") as f:
        return f.read()


def zstd_ratio(path):
    out = subprocess.run(["zstd", "-3", "-c", "-q", path], check=True, capture_output=True).stdout
    return len(out) / os.path.getsize(path)


def dup_share(data):
    seen, dup = set(), 0
    for i in range(0, len(data), 4096):
        h = hashlib.md5(data[i:i + 4096]).digest()
        dup += h in seen
        seen.add(h)
    return dup / (len(data) // 4096)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--size", default="32m")
    a = ap.parse_args()
    agent = os.path.abspath(os.path.join(a.build_dir, "bin", "iofleet-agent"))
    for tool in ("fio", "zstd"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    d = tempfile.mkdtemp(prefix="iofleet-compress-", dir="/var/tmp")
    path = os.path.join(d, "c.dat")
    try:
        print("| job | asked | iofleet zstd / zlib | fio zstd / zlib |")
        print("|---|---:|---:|---:|")
        for chunk in ("", "buffer_compress_chunk=512\n", "buffer_compress_chunk=4k\n"):
            for pct in (0, 10, 25, 50, 75, 90):
                extra = f"buffer_compress_percentage={pct}\n{chunk}"
                cells = []
                for tool in ("iofleet", "fio"):
                    data = write(tool, agent, path, extra, a.size)
                    cells.append(f"{zstd_ratio(path):.3f} / {len(zlib.compress(data, 6)) / len(data):.3f}")
                label = extra.strip().replace("\n", " ")
                print(f"| `{label}` | {(100 - pct) / 100:.3f} | {cells[0]} | {cells[1]} |")
        print()
        print("| job | asked repeated 4 KiB blocks | iofleet | fio |")
        print("|---|---:|---:|---:|")
        for pct in (0, 20, 40, 60, 90):
            extra = f"dedupe_percentage={pct}\n"
            cells = [f"{dup_share(write(t, agent, path, extra, a.size)):.3f}" for t in ("iofleet", "fio")]
            print(f"| `dedupe_percentage={pct}` | {pct / 100:.3f} | {cells[0]} | {cells[1]} |")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
