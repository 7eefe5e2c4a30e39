#!/usr/bin/env bash
# mutation.sh runs mutation testing over the service's core packages with
# gremlins (pinned), one package at a time with one worker, and prints
# each package's test efficacy: the share of the mutants its tests cover
# that they kill.
#
# A mutant that changes nothing observable is listed, with the reason, in
# the table of equivalent mutants in docs/testing.md; the script counts it
# apart. It fails if a package has a surviving mutant that is not listed
# there, if its efficacy without the listed ones is under MUTATION_MIN
# percent (default 90), or if none was killed or survived and some timed
# out.
#
# Usage: ./scripts/mutation.sh [package...]    (default: every core package)
# The core packages are those under internal/ less the test helpers and
# the load-test harness, so a new package (a limiter, a store, metrics)
# is included as soon as it exists. Full reports go to MUTATION_OUT
# (default: a temporary folder, named at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned; fetched through the Go module proxy on first use.
GREMLINS=github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MIN=${MUTATION_MIN:-90}
# Each mutant's tests get at least FLOOR seconds: gremlins gives them
# three times its own coverage run, and a package whose tests run in a
# second (internal/coarse) had every mutant its tests catch by a deadline
# of their own (TestStopFreezes: 10 s) reported "timed out", which
# gremlins leaves out of the efficacy. Above the tests' own deadlines
# (webtest.Deadline is a minute; most are 10 s), a mutant the tests
# catch fails them, and "timed out" is left for a test that hangs.
FLOOR=${MUTATION_FLOOR:-30}
OUT=${MUTATION_OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# Not the service: test helpers and the load-test harness.
helpers='/internal/(servertest|webtest|golden|race|store/storetest|loadtest)$'

mod=$(go list -m)
if [ $# -gt 0 ]; then
	pkgs=("$@")
else
	mapfile -t pkgs < <(go list ./internal/... | grep -Ev "$helpers" | sed "s|^$mod/|./|")
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin go install "$GREMLINS"

# Equivalent mutants: rows "| internal/pkg | file.go:L:C | MUTATOR | reason |"
# of docs/testing.md.
equivalent=$(grep -E '^\| internal/[^|]+ \| [^|]+:[0-9]+:[0-9]+ \| [A-Z_]+ \|' docs/testing.md |
	awk -F'|' '{gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4); print $2 " " $3 " " $4}' || true)

printf '%-28s %6s %6s %6s %8s %8s %9s %10s\n' package killed lived equiv timedout notcov efficacy "w/o equiv"
failed=0
for p in "${pkgs[@]}"; do
	p=${p#./}
	name=${p//\//-}
	start=$(date +%s)
	# gremlins mutates the folder's subfolders too; each package is
	# measured with its own tests only.
	subs=$(go list "./$p/..." | sed -n "s|^$mod/$p/||p" | paste -sd'|' -)
	exclude=()
	if [ -n "$subs" ]; then
		exclude=(--exclude-files "^($subs)/")
	fi
	# The coefficient that lifts gremlins' timeout to FLOOR, from a run
	# of the tests gremlins times for its coverage (the folder and its
	# subfolders), built already (the first run builds). -count=1 in
	# GOFLAGS keeps gremlins' own coverage run from being a cached
	# result: for coarse, 0.4 s against a real run's 0.9 s, which set
	# the timeout at 13 s, under FLOOR, from the second run on.
	go test -count=1 -cover "./$p/..." > /dev/null 2>&1 || true
	t0=$(date +%s%N)
	go test -count=1 -cover "./$p/..." > /dev/null 2>&1 || true
	ms=$((($(date +%s%N) - t0) / 1000000 + 1))
	coef=$(((FLOOR * 1000 + ms - 1) / ms))
	[ "$coef" -ge 3 ] || coef=3
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1" "$bin/gremlins" unleash --workers 1 --timeout-coefficient "$coef" "${exclude[@]}" "./$p" > "$OUT/$name.txt" 2>&1 || {
		echo "$p: gremlins failed; see $OUT/$name.txt"
		failed=1
		continue
	}
	secs=$(($(date +%s) - start))
	read -r killed lived notcov < <(sed -n 's/^Killed: \([0-9]*\), Lived: \([0-9]*\), Not covered: \([0-9]*\).*/\1 \2 \3/p' "$OUT/$name.txt")
	timedout=$(sed -n 's/^Timed out: \([0-9]*\),.*/\1/p' "$OUT/$name.txt")
	eff=$(sed -n 's/^Test efficacy: \(.*\)$/\1/p' "$OUT/$name.txt")
	equiv=0
	unexplained=()
	while read -r status mutator _ pos; do
		[ "$status" = LIVED ] || continue
		if grep -qxF "$p $pos $mutator" <<< "$equivalent"; then
			equiv=$((equiv + 1))
		else
			unexplained+=("$mutator at $p/$pos")
		fi
	done < <(grep -E '^ *LIVED ' "$OUT/$name.txt")
	scored=$((killed + lived - equiv))
	net=n/a
	if [ "$scored" -gt 0 ]; then
		net=$(awk -v k="$killed" -v s="$scored" 'BEGIN { printf "%.2f", 100 * k / s }')
	fi
	printf '%-28s %6d %6d %6d %8d %8d %9s %9s%% (%ds)\n' "$p" "$killed" "$lived" "$equiv" "$timedout" "$notcov" "$eff" "$net" "$secs"
	for u in "${unexplained[@]}"; do
		echo "    survivor not listed as equivalent in docs/testing.md: $u"
		failed=1
	done
	if [ "$net" = n/a ] && [ "${timedout:-0}" -gt 0 ]; then
		# Nothing scored, so no efficacy to hold under MIN: a package
		# whose every covered mutant timed out passed at 0%.
		echo "    no mutant scored: ${timedout} timed out, over a ${FLOOR} s floor (a test that hangs)"
		failed=1
	fi
	if [ "$net" != n/a ] && awk -v n="$net" -v m="$MIN" 'BEGIN { exit !(n < m) }'; then
		echo "    efficacy without equivalent mutants ${net}% < ${MIN}%"
		failed=1
	fi
done
echo "reports: $OUT"
exit $failed
