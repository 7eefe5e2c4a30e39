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
#
# No test binary outlives the run: one that gremlins timed out is killed
# while gremlins goes on, and what is left when gremlins ends, or when
# the script is stopped (SIGINT, SIGTERM, SIGHUP), is killed then
# (./scripts/mutation-cleanup-check.sh checks it).
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
# (webtest.Deadline is 20 s; most are 10 s), a mutant the tests catch
# fails them, and "timed out" is left for a test that hangs.
FLOOR=${MUTATION_FLOOR:-30}
OUT=${MUTATION_OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# Not the service: test helpers and the load-test harness.
helpers='/internal/(servertest|webtest|golden|race|store/storetest|loadtest)$'

# fromWork prints the processes whose program lies under $work/tmp,
# gremlins' temporary folder (a deleted one too): the test binaries it
# built, and any program a test built there (its TempDir).
fromWork() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case $exe in "$work"/tmp/*) echo "${p#/proc/}" ;; esac
	done
}

# orphans prints the test binaries go test built for gremlins whose
# parent, the go command that ran them, is gone: gremlins timed them
# out and has given up on them.
orphans() {
	local p exe parent
	for p in $(fromWork); do
		exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
		case ${exe% (deleted)} in "$work"/tmp/*/go-build*/b*/*.test) ;; *) continue ;; esac
		parent=$(ps -o comm= -p "$(ps -o ppid= -p "$p" | tr -d ' ')" 2>/dev/null) || parent=
		[ "$parent" = go ] || echo "$p"
	done
}

# reap kills gremlins' process group and every process whose program
# lies under $work/tmp, and says how many of those were still running.
reap() {
	local left
	left=$(fromWork | wc -l)
	if [ -n "$gpid" ] && pgrep -g "$gpid" > /dev/null; then
		kill -KILL -- "-$gpid" 2>/dev/null || true
	fi
	fromWork | xargs -r kill -KILL 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do # gone, not only signalled, before $work goes
		[ -n "$(fromWork)" ] || break
		sleep 0.5
	done
	if [ "$left" -gt 0 ]; then
		echo "    killed $left test processes still running after gremlins" >&2
	fi
}

cleanup() {
	if [ -n "$watch" ]; then
		kill "$watch" 2>/dev/null || true
	fi
	if [ -n "$gpid" ] && kill -0 "$gpid" 2>/dev/null; then
		echo "stopped: killing gremlins and its tests" >&2
	fi
	reap
	rm -rf "$work"
}

mod=$(go list -m)
if [ $# -gt 0 ]; then
	pkgs=("$@")
else
	mapfile -t pkgs < <(go list ./internal/... | grep -Ev "$helpers" | sed "s|^$mod/|./|")
fi

# gremlins times a mutant out by killing the go command; the test binary
# it ran lives on, and one stuck in its package's init (go test's
# -timeout starts with the tests) spun a core for 16 minutes. So each
# gremlins runs in a process group of its own, with its temporary
# folder (and so every test binary it builds, through GOTMPDIR) under
# $work: a test binary whose go command is gone is killed while
# gremlins runs, and when it ends, or the script is stopped, whatever it
# started is.
work=$(mktemp -d)
bin=$work/bin
gpid=
watch=
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
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
	mkdir -p "$work/tmp"
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1" TMPDIR=$work/tmp setsid "$bin/gremlins" unleash --workers 1 --timeout-coefficient "$coef" "${exclude[@]}" "./$p" > "$OUT/$name.txt" 2>&1 &
	gpid=$!
	(
		while kill -0 "$gpid" 2>/dev/null; do
			sleep 5
			for o in $(orphans); do
				what=$(ps -o args= -p "$o" 2>/dev/null) || continue
				kill -KILL "$o" 2>/dev/null && echo "    $p: killed a test binary gremlins had timed out and left running: $what" >&2
			done
		done
	) &
	watch=$!
	rc=0
	wait "$gpid" || rc=$?
	kill "$watch" 2>/dev/null || true
	wait "$watch" 2>/dev/null || true
	watch=
	reap
	gpid=
	rm -rf "${work:?}/tmp"
	if [ "$rc" -ne 0 ]; then
		echo "$p: gremlins failed; see $OUT/$name.txt"
		failed=1
		continue
	fi
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
