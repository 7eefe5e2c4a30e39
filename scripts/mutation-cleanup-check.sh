#!/usr/bin/env bash
# mutation-cleanup-check.sh checks that scripts/mutation.sh leaves no test
# binary running: gremlins times a mutant out by killing the go command,
# and a test binary stuck in its package's init lives on (one spun a core
# for 16 minutes).
#
# It runs mutation.sh on a throwaway module in a temporary folder, whose
# package counts at init in two loops: gremlins' `i++` → `i--` makes each
# spin in init, before any test starts. The first of them is timed out
# in the middle of the run, the second is its last mutant, so gremlins
# ends while it spins. Then it runs it again and stops it with SIGTERM
# while the first spins. After each, no process of the package's test
# binary may be left. About two minutes; run by ./scripts/test.sh -slow
# before the mutation run.
set -euo pipefail
cd "$(dirname "$0")/.."
script=$PWD/scripts/mutation.sh

tmp=$(mktemp -d)
# The package's name is this run's own, so that only its test binaries
# are looked for (and killed if the check fails); with ".test" it fits
# the 15 characters of a process's name.
name=spin$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
left() { pgrep -x "$name.test" || true; }
# On the way out, whatever a broken mutation.sh left of this run: its
# gremlins, then the test binaries.
trap 'pgrep -f -- "unleash .*internal/$name\$" | xargs -r kill -KILL 2>/dev/null || true
left | xargs -r kill -KILL 2>/dev/null || true
rm -rf "$tmp"' EXIT

mkdir -p "$tmp/scripts" "$tmp/docs" "$tmp/internal/$name"
cp "$script" "$tmp/scripts/"
printf 'module example.com/leftover\n\ngo 1.26\n' > "$tmp/go.mod"
printf '| package | position | mutator | why |\n| --- | --- | --- | --- |\n' > "$tmp/docs/testing.md"
cat > "$tmp/internal/$name/spin.go" <<EOF
package $name

// N and M are counted at init.
var N = count("abc")

func count(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n++
	}
	return n
}

var M = steps(2)

func steps(k int) int {
	i := 0
	for i < k {
		i++
	}
	return i
}
EOF
cat > "$tmp/internal/$name/spin_test.go" <<EOF
package $name

import (
	"testing"
	"time"
)

func TestCounts(t *testing.T) {
	time.Sleep(6 * time.Second) // each mutant's tests outlast a look of mutation.sh's watch (5 s)
	if N != 3 || count("ab") != 2 || M != 2 || steps(3) != 3 {
		t.Fatalf("N = %d, count(ab) = %d, M = %d, steps(3) = %d; want 3, 2, 2, 3", N, count("ab"), M, steps(3))
	}
}
EOF

fail=0

echo "== a run to its end (about 90 s)"
out=$(cd "$tmp" && MUTATION_FLOOR=5 MUTATION_OUT=$tmp/out timeout 600 ./scripts/mutation.sh "./internal/$name" 2>&1) || true
echo "$out"
timedout=$(grep -c 'TIMED OUT' "$tmp/out/internal-$name.txt" || true)
if [ "${timedout:-0}" -ne 2 ]; then
	echo "FAIL: $timedout mutants timed out, want the 2 that spin in init"
	fail=1
fi
if ! grep -q 'killed a test binary gremlins had timed out' <<< "$out"; then
	echo "FAIL: the test binary timed out in the middle of the run was not killed while gremlins ran"
	fail=1
fi
if ! grep -q 'still running after gremlins' <<< "$out"; then
	echo "FAIL: the test binary of the last mutant was not killed when gremlins ended"
	fail=1
fi
if [ -n "$(left)" ]; then
	echo "FAIL: test binaries left running after mutation.sh ended: $(left | paste -sd' ' -)"
	fail=1
fi

echo "== a run stopped with SIGTERM while a test binary spins in init"
(cd "$tmp" && MUTATION_FLOOR=120 MUTATION_OUT=$tmp/out2 exec ./scripts/mutation.sh "./internal/$name") > "$tmp/stopped.txt" 2>&1 &
run=$!
spinning=
for _ in $(seq 1 240); do
	sleep 0.5
	# A test binary of this package that has taken 2 s of CPU spins in
	# init (the test itself sleeps).
	spinning=$(ps -o cputimes=,pid= -C "$name.test" 2>/dev/null | awk '$1 >= 2 { print $2 }' || true)
	[ -z "$spinning" ] || break
done
if [ -z "$spinning" ]; then
	echo "FAIL: no test binary spun in init within 2 minutes"
	fail=1
fi
kill -TERM "$run"
for _ in $(seq 1 20); do
	kill -0 "$run" 2>/dev/null || break
	sleep 0.5
done
if kill -0 "$run" 2>/dev/null; then
	echo "FAIL: mutation.sh still ran 10 s after SIGTERM"
	kill -KILL "$run"
	fail=1
fi
cat "$tmp/stopped.txt"
if ! grep -q 'stopped: killing gremlins and its tests' "$tmp/stopped.txt"; then
	echo "FAIL: mutation.sh did not stop gremlins on SIGTERM"
	fail=1
fi
if [ -n "$(left)" ]; then
	echo "FAIL: test binaries left running after mutation.sh was stopped: $(left | paste -sd' ' -)"
	fail=1
fi

if [ "$fail" -eq 0 ]; then
	echo "ok: mutation.sh left no test binary running"
fi
exit $fail
