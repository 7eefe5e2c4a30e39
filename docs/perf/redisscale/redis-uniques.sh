#!/usr/bin/env bash
# redis-uniques.sh measures what unique visitors on Redis add to what one
# visitors instance in batch mode costs Redis: the same load, with
# -unique=false and then -unique=true, standalone and on a 3-node
# cluster. Every request comes from one of 5,000 clients named in
# X-Forwarded-For (loopback is the trusted proxy), with a browser's
# User-Agent, and no per-client limits: every visit counts. visitors is
# pinned to CPU 0, Redis and the constant-rate client to CPU 1.
#   docs/perf/redisscale/redis-uniques.sh   (needs redis-server, redis-cli, taskset)
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
echo "| where | keys | rate (req/s) | counted/s | -unique | Redis commands/s | scripts/s | Redis CPU |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
for where in standalone cluster; do
	if [ $where = standalone ]; then ports=("$S"); flags=(-redis-url "redis://127.0.0.1:$S/0"); else ports=("${C[@]}"); flags=(-redis-cluster "$(IFS=,; echo "${C[*]/#/127.0.0.1:}")"); fi
	for keys in ${KEYS:-1 100 1000 10000}; do
		for unique in false true; do
			A=$(free); M=$(free)
			VISITORS_CLIENT_RATE=0 VISITORS_CLIENT_NEW_KEYS=0 VISITORS_REPEAT_WINDOW=0 taskset -c 0 "$D/visitors" -addr 127.0.0.1:$A -admin-addr 127.0.0.1:$M \
				-store redis "${flags[@]}" -redis-prefix "$where-$keys-$unique:" -trusted-proxies 127.0.0.1/32 -unique=$unique \
				-log-level off -flight-recorder=false &
			VP=$!
			until curl -s "127.0.0.1:$M/healthz" >/dev/null; do sleep 0.05; done
			rate=${RATE:-2000}
			taskset -c 1 "$D/rate" -base http://127.0.0.1:$A -rate "$rate" -keys "$keys" -clients 5000 -d 2s >/dev/null # warm: keys admitted, read
			read c0 e0 u0 < <(stats "${ports[@]}")
			out=$(taskset -c 1 "$D/rate" -base http://127.0.0.1:$A -rate "$rate" -keys "$keys" -clients 5000 -d ${DUR:-5}s)
			read c1 e1 u1 < <(stats "${ports[@]}")
			counted=$(echo "$out" | sed 's/.*counted=\([0-9]*\).*/\1/')
			python3 -c "d=${DUR:-5}; print('| $where | $keys | $rate | %.0f | $unique | %.0f | %.0f | %.1f%% |' % ($counted/d, ($c1-$c0)/d, ($e1-$e0)/d, ($u1-$u0)/d*100))"
			kill $VP; wait $VP 2>/dev/null || true
		done
	done
done
