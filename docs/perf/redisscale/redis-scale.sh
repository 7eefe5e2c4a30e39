#!/usr/bin/env bash
# redis-scale.sh measures what one visitors instance costs Redis in batch
# and sync mode, standalone and on a 3-node cluster, as the number of
# keys and the request rate grow: Redis commands per second (client
# commands and the ones scripts run), scripts (EVALSHA) per second, and
# Redis CPU (user+sys, summed over nodes). visitors is pinned to CPU 0,
# Redis and the constant-rate client to CPU 1.
#   docs/perf/redisscale/redis-scale.sh   (needs redis-server, redis-cli, taskset)
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../../.." && pwd)}
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$D"' EXIT
(cd "$ROOT" && go build -o "$D/visitors" ./cmd/visitors && go build -o "$D/rate" ./docs/perf/redisscale)
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
node() { # port [cluster args]
	mkdir -p "$D/n$1"
	taskset -c 1 redis-server --port "$1" --bind 127.0.0.1 --dir "$D/n$1" --save "" --appendonly no --loglevel warning "${@:2}" >/dev/null 2>&1 &
	until redis-cli -p "$1" ping >/dev/null 2>&1; do sleep 0.05; done
}
S=$(free); node "$S"
C=(); for i in 1 2 3; do p=$(free); b=$(free); node "$p" --cluster-enabled yes --cluster-port "$b" --cluster-config-file nodes.conf; C+=("$p"); done
redis-cli --cluster create "${C[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >/dev/null
for p in "${C[@]}"; do until redis-cli -p "$p" cluster info | grep -q cluster_state:ok; do sleep 0.1; done; done
stats() { # ports... -> "commands evalsha cpu_seconds"
	for p in "$@"; do redis-cli -p "$p" info all | tr -d '\r'; done | awk -F'[:,=]' '
		/^total_commands_processed/{c+=$2} /^cmdstat_evalsha/{e+=$3} /^used_cpu_sys:/{s+=$2} /^used_cpu_user:/{u+=$2}
		END{printf "%d %d %.4f\n", c, e, s+u}'
}
echo "| where | durability | keys | rate (req/s) | served | Redis commands/s | scripts/s | Redis CPU |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for where in standalone cluster; do
	if [ $where = standalone ]; then ports=("$S"); flags=(-redis-url "redis://127.0.0.1:$S/0"); else ports=("${C[@]}"); flags=(-redis-cluster "$(IFS=,; echo "${C[*]/#/127.0.0.1:}")"); fi
	for mode in batch sync; do
		A=$(free); M=$(free)
		taskset -c 0 "$D/visitors" -addr 127.0.0.1:$A -admin-addr 127.0.0.1:$M -data "$D/data" -store redis "${flags[@]}" \
			-redis-prefix "$where-$mode:" -durability $mode -log-level off -flight-recorder=false &
		VP=$!
		until curl -s "127.0.0.1:$M/healthz" >/dev/null; do sleep 0.05; done
		for keys in ${KEYS:-1 100 1000 10000}; do
			for rate in ${RATES:-2000 8000}; do
				taskset -c 1 "$D/rate" -base http://127.0.0.1:$A -rate "$rate" -keys "$keys" -d 2s >/dev/null # warm: keys admitted
				read c0 e0 u0 < <(stats "${ports[@]}")
				out=$(taskset -c 1 "$D/rate" -base http://127.0.0.1:$A -rate "$rate" -keys "$keys" -d ${DUR:-5}s)
				read c1 e1 u1 < <(stats "${ports[@]}")
				ok=$(echo "$out" | sed 's/.*ok=\([0-9]*\).*/\1/')
				python3 -c "d=${DUR:-5}; print('| $where | $mode | $keys | $rate | %.0f | %.0f | %.0f | %.1f%% |' % ($ok/d, ($c1-$c0)/d, ($e1-$e0)/d, ($u1-$u0)/d*100))"
			done
		done
		kill $VP; wait $VP 2>/dev/null || true
	done
done
