#!/usr/bin/env bash
# idle.sh BIN [SECONDS]: starts the visitors binary BIN with its defaults on
# free ports and a fresh data directory, lets it settle 3 s, and prints the
# context switches of all its threads (/proc/PID/task/*/status, voluntary
# and not) and its CPU time over SECONDS (default 10) of idleness: what an
# idle service costs the machine (docs/performance.md).
set -euo pipefail
bin=$1 secs=${2:-10}
d=$(mktemp -d)
"$bin" -addr 127.0.0.1:0 -admin-addr 127.0.0.1:0 -data "$d" > "$d/log" 2>&1 &
pid=$!
sleep 3
sum() { cat /proc/$pid/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/ {s+=$2} END {print s}'; }
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
a=$(sum); c=$(cpu); sleep $secs; b=$(sum); e=$(cpu)
echo "$(basename $bin): $((b-a)) context switches, $(( (e-c)*1000/$(getconf CLK_TCK) )) ms CPU in ${secs}s"
kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$d"
