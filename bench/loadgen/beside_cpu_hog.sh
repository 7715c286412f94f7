#!/bin/bash
# usage: bench/loadgen/beside_cpu_hog.sh DIR AGENTS DURATION GROUP STAGGER [controller flags...]
# A fresh controller on DIR and iofleet-loadgen against it, with one CPU-bound
# process (`yes > /dev/null`) running beside for the whole run, as issue 14 asks;
# prints the loadgen figures, the commit times from /metrics and uptime
# before/after. Binaries from build/bin (or $IOFLEET_BIN).
if [ $# -lt 5 ] || [ -z "$1" ] || [ "$1" = / ]; then sed -n 2,6p "$0" >&2; exit 2; fi
D=$1; N=$2; DUR=$3; G=$4; ST=$5; shift 5
B=${IOFLEET_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin}
rm -rf $D; mkdir -p $D
date -u +%H:%M:%S > $D/start.txt
uptime > $D/uptime_before.txt
yes > /dev/null &
YP=$!
$B/iofleet-controller --data-dir=$D --init --grpc-listen=127.0.0.1:0 --http-listen=127.0.0.1:0 "$@" > $D/out.log 2> $D/err.log &
CP=$!
for i in $(seq 100); do grep -q "http listening" $D/out.log && break; sleep 0.2; done
GR=$(sed -n 's/grpc listening on //p' $D/out.log); HT=$(sed -n 's/http listening on //p' $D/out.log)
timeout 900 $B/iofleet-loadgen --grpc=$GR --http=$HT --pid=$CP --db=$D/iofleet.db --agents=$N --duration-s=$DUR --group-size=$G --stagger-ms=$ST --settle-s=30 > $D/lg.json 2>$D/lg.err
echo "loadgen rc $?" > $D/rc.txt
timeout 120 curl -s http://$HT/metrics > $D/metrics.txt
kill $CP; wait $CP
kill $YP; wait $YP 2>/dev/null
uptime > $D/uptime_after.txt
echo "start $(cat $D/start.txt) before: $(cat $D/uptime_before.txt)"; echo "after: $(cat $D/uptime_after.txt)"; cat $D/rc.txt
python3 -c "
import json; r=json.load(open('$D/lg.json'))
for k in ['records_sent','records_made','records_stored','records_lost','records_not_stored','results_stored','run_states','stream_failures','streams_ended_by_controller','all_assigned_s','controller_cpu_pct','controller_rss_peak_mb','rest_get_jobs','rest_post_jobs']: print(k, r.get(k))
"
grep -E "^iofleet_(loop_commit_seconds|store_write_duration_seconds)_(sum|count)" $D/metrics.txt
echo "silent closes: $(grep -c silent $D/err.log)"
