#!/usr/bin/env python3
"""Per-function instructions per I/O from one callgrind output file.

  python3 bench/engine/callgrind_functions.py CALLGRIND_OUT IOS [MIN]

Self cost is what callgrind_annotate attributes to each function, with code
inlined into a function counted as that function's (callgrind names it by the
function it was compiled into, whatever header the lines came from); rows of
at least MIN instructions per I/O (default 0.5) are printed, largest first.
Inclusive cost is printed for the worker loop's functions (Drive, the loop
shapes, the generator, the engine's calls, Complete): where an out-of-line
call's cost goes. Run callgrind with --toggle-collect='*::Drive(*' (as
callgrind.sh does) so that only the loop is counted.
"""
import re
import subprocess
import sys
from collections import defaultdict

out, ios = sys.argv[1], int(sys.argv[2])
floor = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
LOOP = re.compile(r"::Drive\(|IoLoop::|IoGenerator::|OffsetGen::|Axmap::|RingCore<|Engine::(Queue|Reap|Commit)"
                  r"|io_uring_submit|Clock::NowNs")


def rows(inclusive):
    txt = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100",
                          "--inclusive=" + ("yes" if inclusive else "no"), out],
                         capture_output=True, text=True, check=True).stdout
    agg = defaultdict(int)
    for line in txt.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([ \d.]+%\)\s+(.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        rest = re.sub(r"\s*\[[^\]]*\]\s*$", "", m.group(2))
        fn = rest.split(":", 1)[1] if ":" in rest and not rest.startswith("???") else rest
        fn = re.sub(r"absl::[a-z0-9_]+::Status ", "", fn)
        fn = fn.replace("iofleet::agent::", "").replace("workload::", "").replace("iofleet::", "")
        fn = re.sub(r"\(.*", "", fn) if "lambda" not in fn else fn[:fn.find("(")] + "::lambda"
        n = int(m.group(1).replace(",", ""))
        # Self: the rows of one function (one per source file its code came
        # from) add up. Inclusive: each row is already the whole call tree's.
        agg[fn] = max(agg[fn], n) if inclusive else agg[fn] + n
    return agg


self_cost = rows(False)
incl = rows(True)
print("self, instructions per I/O (>= %.1f):" % floor)
for fn, n in sorted(self_cost.items(), key=lambda x: -x[1]):
    if n / ios >= floor:
        print("  %7.1f  %s" % (n / ios, fn[:150]))
print("inclusive, the loop's functions:")
for fn, n in sorted(incl.items(), key=lambda x: -x[1]):
    if n / ios >= floor and LOOP.search(fn):
        print("  %7.1f  %s" % (n / ios, fn[:150]))
