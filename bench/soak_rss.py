#!/usr/bin/env python3
"""bench/soak_rss.py PID [INTERVAL_S]: where a process's RSS is, every
INTERVAL_S seconds (default 30) until it exits: VmRSS, anonymous and
file-backed RSS, the RSS of glibc malloc's per-thread arenas (anonymous rw
mappings at 64 MiB-aligned addresses) and their count, the brk heap, threads.
Used beside bench/soak.sh on the controller (bench/RESULTS.md)."""
import os
import re
import sys
import time


def sample(pid):
    st = open(f"/proc/{pid}/status").read()

    def field(k):
        return int(re.search(rf"^{k}:\s+(\d+)", st, re.M).group(1))

    arenas = n_arenas = heap = 0
    kind = None
    for line in open(f"/proc/{pid}/smaps"):
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            p = line.split()
            start = int(p[0].split("-")[0], 16)
            name = p[5] if len(p) > 5 else ""
            if name == "" and start % (64 << 20) == 0 and p[1] == "rw-p":
                kind = "arena"
            else:
                kind = "heap" if name == "[heap]" else None
        elif line.startswith("Rss:") and kind:
            kb = int(line.split()[1])
            if kind == "arena":
                arenas += kb
                n_arenas += 1
            else:
                heap += kb
    return (field("VmRSS"), field("RssAnon"), field("RssFile"), arenas, n_arenas, heap,
            field("Threads"))


def main():
    pid = int(sys.argv[1])
    every = float(sys.argv[2]) if len(sys.argv) > 2 else 30
    print("time VmRSS_kB RssAnon_kB RssFile_kB arenas_kB(n) brk_heap_kB threads", flush=True)
    while os.path.exists(f"/proc/{pid}"):
        try:
            rss, anon, file_, ar, n, heap, thr = sample(pid)
        except (OSError, AttributeError):
            break
        print(time.strftime("%H:%M:%S"), rss, anon, file_, f"{ar}({n})", heap, thr, flush=True)
        time.sleep(every)


if __name__ == "__main__":
    main()
