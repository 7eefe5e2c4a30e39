#!/usr/bin/env bash
# starttime.sh: how long the binary takes, from its exec to its first
# answered request, on an embedded store of a million keys, each visited
# once today with a unique visitor (the directory is written once, by
# internal/store/boltstore's TestFillForStartTime, and reused).
#
#   scripts/starttime.sh [DIR]      ROUNDS=5 scripts/starttime.sh
#   DAYS=365 scripts/starttime.sh /tmp/start-1m-365d
#   BINS="/tmp/before /tmp/after" ROUNDS=5 scripts/starttime.sh [DIR]
#
# The server runs pinned to core 0; curl asks from core 1 every 5 ms
# until /counter/user000000/repo.json answers 200 (the first key: its
# answer needs the store open), so a figure is up to ~10 ms late. Each
# round stops the server with SIGTERM and waits for it to exit before
# the next. DAYS=N (default 1) gives each key, when the directory is
# written, a count and a unique-visitor sketch on each of the N-1 days
# before today too (TestFillForStartTime -days): the start should not
# depend on it. Prints each round and the medians, in milliseconds: the
# wall time, and the CPU time the server had used by then.
#
# BINS compares binaries built beforehand (e.g. go build -o /tmp/before
# ./cmd/visitors on another tree) side by side: each round starts each
# of them in turn, so that they share the machine's load; without it,
# the binary is built from this tree. An entry BIN=DIR starts BIN on its
# own data directory (binaries of two file formats: each on a directory
# its own TestFill* wrote).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/visitors-start-1m}
rounds=${ROUNDS:-3}
bins=${BINS:-}
if [ -z "$bins" ]; then
	bins=$(mktemp -d)/visitors
	go build -o "$bins" ./cmd/visitors
fi
if [ ! -e "$dir/visitors.db" ]; then
	mkdir -p "$dir"
	go test -count=1 -timeout 60m -run '^TestFillForStartTime$' ./internal/store/boltstore -fill "$dir" -days "${DAYS:-1}"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
declare -A times cpus
for r in $(seq "$rounds"); do
	for entry in $bins; do
		bin=${entry%%=*}
		data=${entry#*=}
		[ "$data" != "$entry" ] || data=$dir
		t0=$(date +%s%N)
		taskset -c 0 "$bin" -data "$data" -addr "127.0.0.1:$port" -admin-addr "" >"$data.log" 2>&1 &
		pid=$!
		until taskset -c 1 curl -sf -o /dev/null "http://127.0.0.1:$port/counter/user000000/repo.json"; do
			if ! kill -0 "$pid" 2>/dev/null; then
				echo "the server exited; its log:" >&2
				cat "$data.log" >&2
				exit 1
			fi
			sleep 0.005
		done
		t1=$(date +%s%N)
		# CPU the server used until then (utime + stime, in clock ticks): on
		# a shared machine the wall time is mostly waiting for core 0.
		ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		cpu=$((ticks * 1000 / $(getconf CLK_TCK)))
		ms=$(((t1 - t0) / 1000000))
		times[$entry]+=" $ms"
		cpus[$entry]+=" $cpu"
		echo "round $r, $entry: $ms ms to the first answer, $cpu ms of CPU; load average $(cut -d' ' -f1 /proc/loadavg)"
		kill -TERM "$pid"
		wait "$pid" || true
	done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for entry in $bins; do
	# shellcheck disable=SC2086 # the lists are words
	echo "$entry: median of $rounds: $(median ${times[$entry]}) ms to the first answer, $(median ${cpus[$entry]}) ms of CPU ($(go version | cut -d' ' -f3), $(date -u +%F))"
done
