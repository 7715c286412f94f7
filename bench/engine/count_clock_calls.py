# Sums callgrind call counts to clock_gettime (any alias) in one callgrind.out file
# (bench/RESULTS.md, "gtod_reduce"): run the agent with IOFLEET_CLOCK=gettime so
# its clock reads are clock_gettime calls, and valgrind --separate-threads=yes.
import re,sys
names={}; total=0; cur=None
for line in open(sys.argv[1]):
    f=re.match(r"fn=\((\d+)\) (.*)",line)
    if f: names[f.group(1)]=f.group(2)
    m=re.match(r'cfn=\((\d+)\)(?: (.*))?',line)
    if m:
        if m.group(2): names[m.group(1)]=m.group(2)
        cur=names.get(m.group(1),'')
        continue
    m=re.match(r'calls=(\d+)',line)
    if m and cur and 'clock_gettime' in cur: total+=int(m.group(1))
    if m: cur=None
print(total)
