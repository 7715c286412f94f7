#!/usr/bin/env python3
"""iofleet-agent and fio 3.33 side by side on the same files (issue 13).

Cases (each its own ctest test; exit 77 = skipped when fio is not installed):
  verify_interop   blocks iofleet writes with verify=<type> are checked by fio,
                   and blocks fio writes are checked by iofleet, for every type
  corrupt_block    one corrupted block: both stop with error 84 after the same
                   reads and name the same offset; with continue_on_error=verify
                   both report the same total_err / first_error
  buffers          buffer_pattern, zero_buffers, buffer_compress_percentage,
                   dedupe_percentage: the files compress (zlib) and dedupe alike
  verify_state     the verify state file of a write job is byte for byte fio's
  unlink_time_based  unlink_each_loop=1 with time_based: the file the job starts
                   with (held open here) is replaced during the run by both
                   tools or by neither (libaio with verify: replaced, each pass
                   after the first gets new files; psync with verify, or no
                   verify: wrapped over, loops ignored, a read job with loops=2
                   runs), and both end without an error
  open_in_runtime  a job waiting for another (wait_for) drops the cache of its
                   file as its runtime starts (invalidate=1: it reads its 8 MiB
                   from the disk in both tools)
  experimental_time_based  experimental_verify with time_based on libaio: both
                   tools read back the first pass only (size/bs blocks, plus
                   up to iodepth-1), without an error
  unlink_rate_end  unlink_each_loop=1, time_based, rate_iops: the files each
                   tool leaves (none when the runtime ends in a rate wait of a
                   one-file job without a verify phase, as fio 3.33)
  unlink_files_time_based  unlink_each_loop=1, time_based, two files written
                   in order (psync, libaio): each tool unlinks both files
                   after every pass of 16 writes (counted with inotify:
                   unlinks = 2 x (passes - 1), one pass of slack at the
                   end); randwrite: none; read: fio fails its second pass
                   with ENOENT, iofleet refuses the job before any I/O
  time_based_verify_files  time_based, verify=crc32c, two files written in
                   order on psync: every pass of 16 writes is read back (16
                   reads a pass; the runtime may end inside the last verify
                   phase) in both tools, with unlink_each_loop=1 too; the
                   agent before read nothing back (sync engine: no phase)
  mixed_files_time_based  rw=rw over two files in order, time_based,
                   unlink_each_loop (psync, libaio, io_uring): both tools'
                   first pass is 31 I/Os (write_iolog); iofleet fails the
                   next pass's first read of an empty file with EIO naming
                   the file, as fio's psync does after the same I/Os and
                   unlinks (fio's libaio/io_uring count 0-byte reads and
                   go on: 31 I/Os and 2 unlinks a pass)
  time_based_verify  time_based jobs with verify (t/jobs/t0025, t0026 shapes):
                   neither tool starts a verify phase (no read in a write
                   job), the randrw job passes in both, and both print their
                   parse-time note for the write-only job only
Standard library only.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from iofleet_harness import SKIP, check  # noqa: E402  (the one harness of tests/*)


def jobs_of(stdout):
    """The first job of a JSON report (fio may print lines before the JSON)."""
    text = stdout[stdout.index("{"):]
    return json.loads(text)["jobs"][0]


class Env:
    def __init__(self, build_dir):
        self.agent = os.path.join(os.path.abspath(build_dir), "bin", "iofleet-agent")
        self.dir = tempfile.mkdtemp(prefix="iofleet-fio-interop-")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def job(self, name, text):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def run(self, tool, jobfile, cwd=None):
        cmd = ([self.agent, "run", jobfile, "--output-format=json"] if tool == "iofleet"
               else ["fio", jobfile, "--output-format=json"])
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd or self.dir, timeout=120)
        return jobs_of(p.stdout), p.stderr


TYPES = ["md5", "crc64", "crc32", "crc32c", "crc32c-intel", "crc16", "crc7", "sha1", "sha256",
         "sha512", "sha3-224", "sha3-256", "sha3-384", "sha3-512", "xxhash", "meta", "pattern"]


def case_verify_interop(env):
    target = env.path("v.dat")
    for t in TYPES:
        extra = "verify_pattern=0xdeadbeef\n" if t == "pattern" else ""
        common = f"filename={target}\nsize=2m\nbs=8k\nverify={t}\n{extra}"
        w = env.job("w.fio", f"[w]\n{common}rw=randwrite\nioengine=libaio\niodepth=4\ndo_verify=0\n")
        r = env.job("r.fio", f"[r]\n{common}rw=read\nioengine=psync\n")
        for writer, reader in (("iofleet", "fio"), ("fio", "iofleet")):
            if os.path.exists(target):
                os.unlink(target)
            jw, _ = env.run(writer, w)
            check(jw["error"] == 0, f"{t}: {writer} write error {jw['error']}")
            jr, err = env.run(reader, r)
            check(jr["error"] == 0 and jr["read"]["total_ios"] == 256,
                  f"{t}: {reader} reading {writer}'s blocks: error {jr['error']}, "
                  f"{jr['read']['total_ios']} reads (want 0, 256): {err[:300]}")
    print(f"verify_interop: {len(TYPES)} types, both directions: clean")


def case_corrupt_block(env):
    target = env.path("c.dat")
    w = env.job("w.fio", f"[w]\nfilename={target}\nsize=1m\nbs=4k\nrw=write\nverify=crc32c\n"
                         "do_verify=0\nioengine=psync\n")

    def prepared():
        if os.path.exists(target):
            os.unlink(target)
        env.run("fio", w)
        with open(target, "r+b") as f:
            for off in (8192 + 100, 36864 + 100, 397312 + 100):
                f.seek(off)
                f.write(b"XXXX")

    # libaio at depth 1: the reads done when a failure stops the job do not
    # depend on timing (with psync, fio 3.33 reports continue_on_error=read
    # as total_err 1, first_error 1: the -1 return taken for an errno).
    base = f"[r]\nfilename={target}\nsize=1m\nbs=4k\nrw=read\nverify=crc32c\nioengine=libaio\niodepth=1\n"
    for extra in ("", "continue_on_error=verify\n", "continue_on_error=verify\nverify_fatal=1\n",
                  "continue_on_error=read\n"):
        r = env.job("r.fio", base + extra)
        got = {}
        for tool in ("iofleet", "fio"):
            prepared()
            j, err = env.run(tool, r)
            got[tool] = (j["error"], j["read"]["total_ios"], j.get("total_err"), j.get("first_error"))
            check("offset 8192, length 4096" in err, f"{tool} {extra!r}: no failure line for offset 8192: {err[:300]}")
        check(got["iofleet"] == got["fio"], f"{extra!r}: iofleet {got['iofleet']} != fio {got['fio']}")
        print(f"corrupt_block {extra.strip() or 'default'!r}: (error, reads, total_err, first_error) = {got['fio']} both")


def ratio_and_unique(path):
    data = open(path, "rb").read()
    blocks = {hashlib.md5(data[i:i + 4096]).digest() for i in range(0, len(data), 4096)}
    return round(len(zlib.compress(data, 6)) / len(data), 2), len(blocks)


def case_buffers(env):
    target = env.path("b.dat")
    for extra in ("buffer_compress_percentage=50\n", "buffer_compress_percentage=70\nbuffer_compress_chunk=512\n",
                  "buffer_compress_percentage=100\n", "dedupe_percentage=40\n", "buffer_pattern=0xdeadbeef\n",
                  "zero_buffers=1\n", "scramble_buffers=0\n", ""):
        j = env.job("b.fio", f"[b]\nfilename={target}\nsize=8m\nbs=4k\nrw=write\nioengine=psync\n{extra}")
        got = {}
        for tool in ("iofleet", "fio"):
            if os.path.exists(target):
                os.unlink(target)
            env.run(tool, j)
            got[tool] = ratio_and_unique(target)
        check(got["iofleet"] == got["fio"], f"{extra!r}: iofleet (zlib, distinct 4k blocks) {got['iofleet']} != fio {got['fio']}")
        print(f"buffers {extra.strip() or 'default'!r}: (zlib ratio, distinct 4k blocks) = {got['fio']} both")


def case_verify_state(env):
    target = env.path("s.dat")
    j = env.job("s.fio", f"[sv]\nfilename={target}\nsize=1m\nbs=4k\nrw=write\nverify=crc32c\nioengine=psync\n")
    states = {}
    for tool in ("iofleet", "fio"):
        d = env.path(tool)
        os.makedirs(d)
        if os.path.exists(target):
            os.unlink(target)
        env.run(tool, j, cwd=d)
        states[tool] = open(os.path.join(d, "local-sv-0-verify.state"), "rb").read()
    check(states["iofleet"] == states["fio"], "verify state files differ")
    print(f"verify_state: {len(states['fio'])} bytes, identical")


def run_ticking(env, tool, jobfile, tick, period):
    """Runs `tool` on `jobfile` while a thread calls `tick()` every `period`
    seconds (and once more as the run ends); returns (job, stderr)."""
    import threading
    done = threading.Event()

    def loop():
        while not done.is_set():
            tick()
            done.wait(period)
    t = threading.Thread(target=loop)
    t.start()
    try:
        return env.run(tool, jobfile)
    finally:
        done.set()
        t.join()


def run_watching(env, tool, jobfile, target):
    """Runs `tool` on `jobfile` while a thread notes every inode `target` has;
    returns (job, stderr, inodes seen in order, whether the file the run
    started with still has a name)."""
    fd = os.open(target, os.O_RDONLY)
    seen = [os.fstat(fd).st_ino]

    def watch():
        try:
            ino = os.stat(target).st_ino
        except FileNotFoundError:
            ino = None
        if ino is not None and ino != seen[-1]:
            seen.append(ino)
    job, err = run_ticking(env, tool, jobfile, watch, 0.002)
    linked = os.fstat(fd).st_nlink > 0
    os.close(fd)
    return job, err, seen, linked


def case_unlink_time_based(env):
    target = env.path("u.dat")
    # fio 3.33 ends a time_based pass early (to verify, then unlink) only for
    # queued I/Os: libaio replaces the file, psync never does.
    variants = [
        ("libaio write, verify=crc32c", "ioengine=libaio\niodepth=4\nrw=write\nverify=crc32c\n", True),
        ("psync write, verify=crc32c", "ioengine=psync\nrw=write\nverify=crc32c\n", False),
        ("psync write, no verify, loops=3", "ioengine=psync\nrw=write\nloops=3\n", False),
        ("libaio write, no verify, loops=3", "ioengine=libaio\nrw=write\nloops=3\n", False),
        ("psync read, loops=2", "ioengine=psync\nrw=read\nloops=2\n", False),
    ]
    for label, extra, replaced in variants:
        for tool in ("fio", "iofleet"):
            if os.path.exists(target):
                os.unlink(target)
            with open(target, "wb") as f:
                f.write(os.urandom(64 << 10))
            j = env.job("u.fio", f"[u]\nfilename={target}\nsize=64k\nbs=4k\n"
                                 f"unlink_each_loop=1\ntime_based=1\nruntime=500ms\n{extra}")
            job, err, seen, linked = run_watching(env, tool, j, target)
            ios = job["read"]["total_ios"] + job["write"]["total_ios"]
            print(f"unlink_time_based: {label}: {tool}: error {job['error']}, {ios} I/Os, "
                  f"{len(seen)} inode(s) seen, first file still linked: {linked}")
            check(job["error"] == 0, f"{label}: {tool} error {job['error']}: {err[-300:]}")
            check(ios > 16, f"{label}: {tool} did not go past one pass of 16 I/Os ({ios})")
            if replaced:
                # (A freed inode number comes back at once on ext4: the count
                # of distinct numbers says nothing about the count of passes.)
                check(not linked and len(seen) >= 2,
                      f"{label}: {tool} did not replace the file it started with "
                      f"(inodes {seen}, first still linked: {linked})")
            else:
                check(linked and len(seen) == 1,
                      f"{label}: {tool} replaced the file (inodes {seen}); fio wraps over it")


def case_unlink_rate_end(env):
    # fio 3.33: a rated time_based job whose runtime ends while it waits for
    # its rate ends the pass, not the job; the next pass unlinks the files and
    # stops before it creates them again. Only with one file and no verify
    # phase to run (loop_files.h UnlinksOnceMoreAtEnd).
    variants = [
        ("psync write, one file", "ioengine=psync\nrw=write\n", 1, False),
        ("libaio randwrite, one file", "ioengine=libaio\niodepth=4\nrw=randwrite\n", 1, False),
        ("psync write, verify=crc32c do_verify=0", "ioengine=psync\nrw=write\nverify=crc32c\ndo_verify=0\n",
         1, False),
        ("libaio write, verify=crc32c", "ioengine=libaio\nrw=write\nverify=crc32c\n", 1, True),
        ("psync write, nrfiles=2", "ioengine=psync\nrw=write\nnrfiles=2\n", 2, True),
    ]
    # Which way a run ends is timing: an I/O that runs past the end of the
    # runtime ends the job in both tools (the file stays). On a loaded
    # machine fio did so once in 3 runs; each tool gets 3 tries to show the
    # rate-wait ending, and must never unlink where fio keeps the files.
    # Where the files stay, fio too has 3 tries: it unlinked them once in 5
    # runs of the libaio verify variant on a loaded machine (its own timing);
    # iofleet has one, and must keep them.
    for label, extra, nfiles, kept in variants:
        want = nfiles if kept else 0
        for tool in ("fio", "iofleet"):
            seen = []
            for _ in range(1 if kept and tool == "iofleet" else 3):
                d = env.path(f"rate-end-{tool}")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                where = f"filename={d}/u.dat\n" if nfiles == 1 else f"directory={d}\n"
                j = env.job("re.fio", f"[u]\n{where}size=64k\nbs=4k\nunlink_each_loop=1\ntime_based=1\n"
                                      f"runtime=1s\nrate_iops=200\n{extra}")
                job, err = env.run(tool, j)
                check(job["error"] == 0, f"{label}: {tool} error {job['error']}: {err[-300:]}")
                left = sorted(os.listdir(d))
                ios = job["read"]["total_ios"] + job["write"]["total_ios"]
                seen.append((ios, left))
                print(f"unlink_rate_end: {label}: {tool}: {ios} I/Os, files left {left}")
                if len(left) == want:
                    break
            check(len(seen[-1][1]) == want,
                  f"{label}: {tool} left {[l for _, l in seen]} in {len(seen)} run(s), want {want} file(s)")


def disk_read_bytes(env, tool, jobfile):
    """Runs `tool`; returns (the bytes its processes read from the disk, the
    jobs). ru_inblock counts 512-byte blocks of waited-for children."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock
    cmd = ([env.agent, "run", jobfile, "--output-format=json"] if tool == "iofleet"
           else ["fio", jobfile, "--output-format=json"])
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=env.dir, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock
    jobs = json.loads(p.stdout[p.stdout.index("{"):])["jobs"]
    return (after - before) * 512, jobs, p.stderr


def case_open_in_runtime(env):
    # fio opens a file (and drops its cache, invalidate=1) at the job's first
    # I/O, inside its runtime: a job that waits for another (wait_for) drops
    # the pages that one left cached and reads them from the disk.
    target = env.path("w.dat")
    common = f"filename={target}\nsize=8m\nbs=1m\n"
    base = f"[a]\n{common}rw=write\ninvalidate=0\nend_fsync=1\n[b]\nwait_for=a\n{common}rw=read\n"
    size = 8 << 20
    for label, extra, cold in (("invalidate=1", "", True), ("invalidate=0", "invalidate=0\n", False)):
        got = {}
        for tool in ("fio", "iofleet"):
            if os.path.exists(target):
                os.unlink(target)
            disk, jobs, err = disk_read_bytes(env, tool, env.job("o.fio", base + extra))
            check(all(j["error"] == 0 for j in jobs), f"{label}: {tool} errors: {err[-300:]}")
            got[tool] = disk
            print(f"open_in_runtime: {label}: {tool}: job b read {jobs[1]['read']['io_bytes']} bytes, "
                  f"{disk} from the disk")
        for tool, disk in got.items():
            if cold:
                check(disk >= size * 9 // 10, f"{label}: {tool} read {disk} bytes from the disk, "
                                              f"want the {size} job b reads (its cache dropped as it starts)")
            else:
                check(disk < size // 8, f"{label}: {tool} read {disk} bytes from the disk, want ~0")


def case_experimental_time_based(env):
    # experimental_verify, time_based, a queueing engine: fio 3.33 reads back
    # the first pass only (its bytes verified are never reset between passes):
    # size/bs blocks plus up to iodepth-1 drawn past the pass, no error.
    target = env.path("ev.dat")
    blocks = 256
    for rw in ("write", "randwrite"):
        for depth in (1, 4):
            j = env.job("ev.fio", f"[e]\nfilename={target}\nsize=1m\nbs=4k\nrw={rw}\nioengine=libaio\n"
                                  f"iodepth={depth}\nverify=crc32c\nexperimental_verify=1\n"
                                  f"time_based=1\nruntime=1s\n")
            reads = {}
            for tool in ("fio", "iofleet"):
                if os.path.exists(target):
                    os.unlink(target)
                job, err = env.run(tool, j)
                check(job["error"] == 0, f"{rw} iodepth={depth}: {tool} error {job['error']}: {err[-300:]}")
                reads[tool] = job["read"]["total_ios"]
                print(f"experimental_time_based: {rw} iodepth={depth}: {tool}: {reads[tool]} reads, "
                      f"{job['write']['total_ios']} writes")
                check(job["write"]["total_ios"] > 4 * blocks, f"{rw}: {tool} wrote fewer than 4 passes")
                check(blocks <= reads[tool] <= blocks + depth - 1,
                      f"{rw} iodepth={depth}: {tool} read {reads[tool]} blocks back, want "
                      f"{blocks}..{blocks + depth - 1} (the first pass only)")


class DirWatch:
    """Counts the files deleted in a directory (inotify, through ctypes: no
    tracing, so the tools run at their own speed)."""
    IN_DELETE, IN_Q_OVERFLOW, IN_NONBLOCK = 0x200, 0x4000, 0o4000

    def __init__(self, path):
        import ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(self.IN_NONBLOCK)
        check(self.fd >= 0, "inotify_init1 failed")
        check(self.libc.inotify_add_watch(self.fd, path.encode(), self.IN_DELETE) >= 0,
              f"inotify_add_watch {path} failed")
        self.deleted = 0
        self.overflow = False

    def drain(self):
        import struct
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            i = 0
            while i < len(data):
                _, mask, _, n = struct.unpack_from("iIII", data, i)
                self.deleted += 1 if mask & self.IN_DELETE else 0
                self.overflow |= bool(mask & self.IN_Q_OVERFLOW)
                i += 16 + n

    def close(self):
        os.close(self.fd)


def case_unlink_files_time_based(env):
    # fio 3.33 ends a time_based pass when a sequential job has used up all
    # its files (several files: none wraps), on every engine, and the next
    # pass starts with unlink_all_files; a random job's files start over
    # inside the pass. The old agent never unlinked without verify.
    variants = [("psync write", "ioengine=psync\nrw=write\n", True),
                ("libaio write", "ioengine=libaio\niodepth=4\nrw=write\n", True),
                ("psync randwrite", "ioengine=psync\nrw=randwrite\n", False)]
    for label, extra, replaced in variants:
        for tool in ("fio", "iofleet"):
            d = env.path(f"uf-{tool}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            j = env.job("uf.fio", f"[u]\ndirectory={d}\nnrfiles=2\nsize=64k\nbs=4k\nunlink_each_loop=1\n"
                                  f"time_based=1\nruntime=500ms\n{extra}")
            w = DirWatch(d)
            job, err = run_ticking(env, tool, j, w.drain, 0.01)
            w.drain()
            w.close()
            check(not w.overflow, f"{label}: {tool}: the inotify queue overflowed")
            check(job["error"] == 0, f"{label}: {tool} error {job['error']}: {err[-300:]}")
            writes = job["write"]["total_ios"]
            print(f"unlink_files_time_based: {label}: {tool}: {writes} writes, {w.deleted} unlinks")
            if replaced:
                # 16 writes a pass; each pass after the first unlinks both
                # files; the runtime may end before or after the unlinks
                # that follow a full last pass.
                lo, hi = 2 * (-(-writes // 16) - 1), 2 * (writes // 16)
                check(writes > 32 and lo <= w.deleted <= hi,
                      f"{label}: {tool}: {w.deleted} unlinks for {writes} writes, want {lo}..{hi}")
            else:
                check(w.deleted == 0, f"{label}: {tool}: {w.deleted} unlinks, want none")
    d = env.path("uf-read")
    os.makedirs(d, exist_ok=True)
    for n in range(2):
        with open(os.path.join(d, f"u.0.{n}"), "wb") as f:
            f.write(os.urandom(32 << 10))
    j = env.job("ur.fio", f"[u]\ndirectory={d}\nnrfiles=2\nsize=64k\nbs=4k\nunlink_each_loop=1\n"
                          "time_based=1\nruntime=500ms\nioengine=psync\nrw=read\n")
    job, err = env.run("fio", j)
    check(job["error"] == 2, f"read: fio error {job['error']}, want 2 (ENOENT as the second pass opens)")
    p = subprocess.run([env.agent, "run", j, "--output-format=json"], capture_output=True, text=True,
                       cwd=env.dir, timeout=120)
    check(p.returncode != 0 and "unlink_each_loop" in p.stderr and "does not write" in p.stderr,
          f"read: iofleet did not refuse the job: rc {p.returncode}: {p.stderr[-300:]}")
    print("unlink_files_time_based: read: fio error 2 (ENOENT), iofleet refuses before any I/O")


def pass_ios(log, first_file):
    """The I/Os of each pass of a write_iolog: the I/O lines between one open
    of `first_file` (each pass opens it once, first) and the next."""
    passes = []
    for line in open(log):
        w = line.split()
        if len(w) >= 3 and w[2] == "open" and os.path.basename(w[1]) == first_file:
            passes.append(0)
        elif len(w) == 5 and w[2] in ("read", "write") and passes:
            passes[-1] += 1
    return passes


def case_mixed_files_time_based(env):
    # rw=rw over two files in order, time_based, unlink_each_loop: fio 3.33
    # ends a pass when both files are used up, a file when the direction
    # drawn for its next I/O has passed its end: 31 I/Os a pass (15 reads,
    # 16 writes), not the 16 of the files' bytes (the agent before). The
    # next pass reads new, empty files: fio's psync fails with EIO (full
    # resid); its libaio and io_uring count 0-byte reads as I/Os and go on;
    # iofleet fails with EIO on every engine, naming the file.
    for engine in ("psync", "libaio", "io_uring"):
        got = {}
        for tool in ("fio", "iofleet"):
            d = env.path(f"mx-{engine}-{tool}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            log = env.path(f"mx-{engine}-{tool}.iolog")
            j = env.job("mx.fio", f"[u]\ndirectory={d}\nnrfiles=2\nsize=64k\nbs=4k\nunlink_each_loop=1\n"
                                  f"rw=rw\ntime_based=1\nruntime=500ms\nioengine={engine}\niodepth=4\n"
                                  f"write_iolog={log}\n")
            w = DirWatch(d)
            job, err = run_ticking(env, tool, j, w.drain, 0.01)
            w.drain()
            w.close()
            check(not w.overflow, f"{engine}: {tool}: the inotify queue overflowed")
            passes = pass_ios(log, "u.0.0")
            got[tool] = (job, err, w.deleted, passes)
            print(f"mixed_files_time_based: {engine}: {tool}: error {job['error']}, "
                  f"{job['read']['total_ios']} reads ({job['read']['io_bytes'] // 4096} blocks), "
                  f"{job['write']['total_ios']} writes, {w.deleted} unlinks, {len(passes)} passes, "
                  f"I/Os of the first: {passes[:1]}")
            check(len(passes) >= 2 and passes[0] == 31,
                  f"{engine}: {tool}: first pass {passes[:1]} I/Os, want 31 then a second pass")
        fjob, _, fdel, fpasses = got["fio"]
        ijob, ierr, idel, _ = got["iofleet"]
        # iofleet: the second pass's first read of an empty file fails.
        check(ijob["error"] == 5 and "0 bytes transferred" in ierr and "/u.0." in ierr,
              f"{engine}: iofleet error {ijob['error']}, want 5 naming the file: {ierr[-300:]}")
        check(idel == 2, f"{engine}: iofleet {idel} unlinks, want 2 (one pass, then the error)")
        check(ijob["read"]["io_bytes"] == 15 * 4096,
              f"{engine}: iofleet read {ijob['read']['io_bytes']} bytes, want the first pass's 15 blocks")
        if engine == "psync":
            # fio fails the same way after the same I/Os.
            check(fjob["error"] == 5 and fdel == 2, f"psync: fio error {fjob['error']}, {fdel} unlinks")
            for ddir in ("read", "write"):
                for k in ("total_ios", "io_bytes"):
                    check(fjob[ddir][k] == ijob[ddir][k],
                          f"psync: {ddir} {k}: fio {fjob[ddir][k]}, iofleet {ijob[ddir][k]}")
        else:
            # fio goes on, every full pass 31 I/Os, 2 unlinks after each.
            full = fpasses[:-1]
            check(fjob["error"] == 0 and len(full) >= 2 and all(n == 31 for n in full),
                  f"{engine}: fio error {fjob['error']}, passes {fpasses[:8]}...")
            check(2 * (len(fpasses) - 1) <= fdel <= 2 * len(fpasses),
                  f"{engine}: fio {fdel} unlinks for {len(fpasses)} passes")
            empty = fjob["read"]["total_ios"] - fjob["read"]["io_bytes"] // 4096
            print(f"mixed_files_time_based: {engine}: fio counted {empty} reads of 0 bytes as I/Os")


def case_time_based_verify_files(env):
    # fio 3.33: several files written in order end each pass when used up,
    # even on a sync engine, and the verify phase follows every pass.
    for extra in ("", "unlink_each_loop=1\n"):
        for tool in ("fio", "iofleet"):
            d = env.path(f"vf-{tool}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            j = env.job("vf.fio", f"[v]\ndirectory={d}\nnrfiles=2\nsize=64k\nbs=4k\nrw=write\nioengine=psync\n"
                                  f"verify=crc32c\ntime_based=1\nruntime=500ms\n{extra}")
            job, err = env.run(tool, j)
            check(job["error"] == 0, f"{extra!r}: {tool} error {job['error']}: {err[-300:]}")
            w, r = job["write"]["total_ios"], job["read"]["total_ios"]
            lo, hi = 16 * (-(-w // 16) - 1), 16 * (w // 16)
            print(f"time_based_verify_files {extra.strip() or 'plain'}: {tool}: {w} writes, {r} reads")
            check(w > 32 and lo <= r <= hi, f"{extra!r}: {tool}: {r} reads for {w} writes, want {lo}..{hi} "
                                          "(each pass of 16 writes read back)")


def case_time_based_verify(env):
    target = env.path("tb.dat")
    common = f"filename={target}\nsize=1m\nbs=4k\nioengine=psync\nverify=md5\nruntime=1s\ntime_based=1\n"
    j = env.job("tb.fio", f"[w]\n{common}rw=write\nexperimental_verify=1\n"
                          f"[rw]\nstonewall=1\n{common}rw=randrw\nexperimental_verify=1\n")
    for tool in ("fio", "iofleet"):
        cmd = ([env.agent, "run", j, "--output-format=json"] if tool == "iofleet"
               else ["fio", j, "--output-format=json"])
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=env.dir, timeout=120)
        jobs = json.loads(p.stdout[p.stdout.index("{"):])["jobs"]
        w, rw = jobs[0], jobs[1]
        check(w["error"] == 0 and rw["error"] == 0, f"{tool}: errors {w['error']} {rw['error']}: {p.stderr}")
        check(w["read"]["total_ios"] == 0, f"{tool}: write job read {w['read']['total_ios']} blocks back")
        check(w["write"]["total_ios"] > 256, f"{tool}: write job did not wrap ({w['write']['total_ios']} writes)")
        check(rw["read"]["total_ios"] > 0 and rw["write"]["total_ios"] > 0, f"{tool}: randrw did no mixed I/O")
        # fio prints its note on stdout (log_info), the agent on stderr.
        notes = (p.stdout[:p.stdout.index("{")] + p.stderr).count("never start")
        check(notes == 1, f"{tool}: {notes} parse-time notes, want 1 (the write job's)")
        print(f"time_based_verify {tool}: write job {w['write']['total_ios']} writes, 0 reads; "
              f"randrw {rw['read']['total_ios']} reads {rw['write']['total_ios']} writes, error 0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("case")
    args = ap.parse_args()
    if shutil.which("fio") is None:
        print("SKIP: fio is not installed")
        return SKIP
    ver = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    if ver != "fio-3.33":
        print(f"SKIP: the figures are fio 3.33's, this is {ver}")
        return SKIP
    env = Env(args.build_dir)
    try:
        globals()["case_" + args.case](env)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
