#!/usr/bin/env bash
# pgo-bench.sh compares the handler benchmarks built without and with the
# PGO profile cmd/visitors/default.pgo, with benchstat. Runs alternate
# (off, on, off, on …) so that the machine's drift hits both alike.
#   ./scripts/pgo-bench.sh [count]     # default 10
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-10}
bench='^Benchmark(Hi|Hello|Whoami)(Parallel)?$'
out=$(mktemp -d)
for i in $(seq "$count"); do
	go test -run '^$' -bench "$bench" -count 1 -pgo=off ./internal/web >> "$out/pgo-off.txt"
	go test -run '^$' -bench "$bench" -count 1 -pgo="$PWD/cmd/visitors/default.pgo" ./internal/web >> "$out/pgo-on.txt"
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out/pgo-off.txt" "$out/pgo-on.txt"
