#!/usr/bin/env bash
# ab-bench.sh compares the handler benchmarks of a git revision (before)
# with the working tree (after), with benchstat. Both test binaries are
# built first; runs alternate (before, after, before, after …), pinned to
# CPU 1, so that the machine's drift hits both alike.
#   ./scripts/ab-bench.sh REV [count] [benchtime]    # default 20 rounds of 500ms
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: ab-bench.sh REV [count] [benchtime]}
count=${2:-20}
benchtime=${3:-500ms}
bench='^Benchmark(Hi|Hello|Whoami)(Parallel)?$'
out=$(mktemp -d)
git archive "$rev" | tar -x -C "$out" --one-top-level=src
(cd "$out/src" && go test -c -o "$out/before.test" ./internal/web)
go test -c -o "$out/after.test" ./internal/web
cd internal/web # the benchmarks read testdata
for _ in $(seq "$count"); do
	taskset -c 1 "$out/before.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" >> "$out/before.txt"
	taskset -c 1 "$out/after.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" >> "$out/after.txt"
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out/before.txt" "$out/after.txt"
rm -rf "$out"
