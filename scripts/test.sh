#!/usr/bin/env bash
# test.sh runs every check of visitors: formatting, vet, staticcheck, the
# race-enabled tests, the allocation budgets and every benchmark once, so
# that none rots. CI (.ci/run) runs exactly this.
#
# ./scripts/test.sh -slow also runs mutation testing (scripts/mutation.sh):
# with two shared cores it takes about 30 minutes on its own, more than
# the 10 minutes the whole test command may take, so CI leaves it out and
# it is run before a change to a core package lands (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

slow=false
case "${1:-}" in
"") ;;
-slow) slow=true ;;
*) echo "usage: $0 [-slow]" >&2; exit 2 ;;
esac

# Every build here is -trimpath: what go caches of a package then does
# not depend on the folder of the checkout, so a fresh clone (as CI's
# is) reuses the build cache of an earlier run anywhere else instead of
# compiling and vetting the module's packages again for each step.
# Building the module's test binaries with -race in a new folder took
# 204 CPU seconds without it, 69 with it, as many as the same folder
# again (go test -race -count=1 -run '^$' ./..., 2026-12-02). Only
# tests that found files by their own source path cared
# (internal/servertest.ModuleRoot). The flags kept are go env's, which
# are also those of go env -w: an exported GOFLAGS replaces them, and
# with them a machine's -buildvcs=false (go build then fails in a
# checkout whose git cannot be asked, as one of another owner).
goflags=$(go env GOFLAGS)
export GOFLAGS="-trimpath${goflags:+ $goflags}"

# Pinned; fetched through the Go module proxy on first use.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

# step names the next step and says how long the one before took, in
# seconds of the clock and in CPU seconds of every process it ran (user
# and system, from the shell's times): the clock says how long a quiet
# run waits, the CPU what a busy machine's run pays, where each other
# run takes its share of the two cores (docs/testing.md).
timesfile=$(mktemp)
trap 'rm -f "$timesfile"' EXIT
cpu() { # sets cpu to the CPU seconds of this shell's finished children
	times > "$timesfile" # in this shell: a pipe's or $(...)'s subshell has no children
	cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$timesfile")
}
begun=$SECONDS last= lastcpu=0
step() {
	cpu
	[ -z "$last" ] || printf '(%ds, %ds CPU)\n' $((SECONDS - last)) $((cpu - lastcpu))
	last=$SECONDS lastcpu=$cpu
	printf '\n== %s\n' "$*"
}

step "tools the tests need (installed only if missing)"
./scripts/install-deps.sh

step "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go mod tidy"
go mod tidy -diff

step "go vet"
go vet ./...

step "the other systems and architecture type-check and vet (darwin/arm64, windows/amd64, linux/arm64)"
# Every package and its tests, type-checked from source for one target
# of each other system and the other architecture, then go vet's
# analyzers on them (scripts/crosscheck): what a build there would
# refuse, and what vet finds in files the host never builds, without
# compiling. go vet per target did the same by compiling every
# dependency again, 300 s of a run on a fresh build cache here; this
# takes about 45 s at load 8 (docs/testing.md). No
# file here differs between darwin's or windows' two architectures.
go run ./scripts/crosscheck darwin/arm64 windows/amd64 linux/arm64

step "staticcheck"
go run "$STATICCHECK" ./...

# Every example in README.md and docs/{api,configuration,deploy,migrate}.md is
# run against the real binary, and the flags table is its -h: a doc that
# no longer shows what the binary prints fails here, with the diff.
step "the docs show what the binary prints (scripts/gendocs -check)"
go run ./scripts/gendocs -check

# Every test date counts from one anchor (storetest.AnchorEnv): today by
# default, as a developer's go test runs. Here the race run moves it 400
# days ahead, and the packages whose tests pin a date run once more with
# it 400 days back, so that a date meeting a real clock (Redis's TTLs, a
# file's time) fails the day it is written, not the day the real clock
# passes it. The race run is the run ahead: the dated packages' own runs
# at +400 and -400 took 213 of the command's 1,931 CPU seconds
# (2026-12-02). Today is what every developer's go test runs
# (docs/testing.md). A test marked storetest.NoDate reads no date, which
# the race run checks, and skips itself in the run back
# (storetest.DatedOnlyEnv): a shift changes nothing for it.
#
# -count=1: every test runs. With -trimpath, go test's cache of results
# would hold across folders, and a test that builds the binary in a
# process of its own (deploy, lab/loadtest) does not list its sources
# among its inputs, so a cached pass could hide a change to them.
step "go test -race, with every test date 400 days ahead"
VISITORS_TEST_DATE=+400 go test -race -count=1 ./...

step "tests that pin a date, with the anchor 400 days back"
dated=$(grep -rlE 'storetest\.(Anchor|At|Date|Dated|Undated|Run)\(' --include='*_test.go' internal cmd lab |
	xargs -n1 dirname | sort -u | sed 's|^|./|')
VISITORS_TEST_DATE=-400 VISITORS_TEST_DATED_ONLY=1 go test -count=1 ./internal/store/storetest $dated

# Fuzz budgets are counts of executions, not durations: with a duration,
# Go 1.26's fuzz coordinator can report its own deadline as a failure
# ("context deadline exceeded", no failing input) when a worker is slow
# to stop on a busy machine (golang/go#75804, fixed in Go 1.27). Seen
# here on FuzzVisitsReachDisk, whose every execution opens, writes and
# reopens a bbolt file. Each count is about 10 s (5 s for FuzzIdentify)
# on this 2-core machine while it is busy.
step "fuzz: every visit the web layer acknowledges reaches the embedded store's disk (1,000 executions)"
go test -run '^$' -fuzz '^FuzzVisitsReachDisk$' -fuzztime 1000x ./internal/web

step "fuzz: client identity through forwarding headers (50,000 executions)"
go test -run '^$' -fuzz '^FuzzIdentify$' -fuzztime 50000x ./internal/client

step "fuzz: the owner API's bodies and key paths: no 5xx, no panic, a refused call changes nothing (100,000 executions)"
go test -run '^$' -fuzz '^FuzzAPI$' -fuzztime 100000x ./internal/api

# One build of every package's test binary without -race for both:
# they were two steps, and the second compiled and linked them all again
# (about 30 s here). With -short, the benchmarks whose setup alone took
# most of this step make smaller stores or run one size
# (BenchmarkMemoryPerKey, BenchmarkList, BenchmarkImport,
# BenchmarkOverview; boltstore's BenchmarkList and BenchmarkImport alone
# took 113 s of 458 on a busy machine, 2026-12-02): the pass checks that
# each works; the figures (docs/performance.md) come from runs without it.
step "allocation budgets (without -race: sync.Pool drops items under it on purpose) and every benchmark once"
go test -count=1 -short -run 'Allocs|Allocate' -bench=. -benchtime=1x ./...

# docs/lab.md is fresh by construction: everything in it that needs no
# benchmark (each step's diff and doc comment, the escape analysis, the
# line numbers its profiles cite in internal/web and lab, the tables
# and charts from the stored figures, the commit they were measured at,
# which must exist) is regenerated and compared; the benchmarks
# themselves ran once above. After a change to lab/ or internal/web,
# go run ./cmd/lab -regen rewrites it (seconds), go run ./cmd/lab
# measures again (about 40 minutes here).
step "lab: docs/lab.md and docs/lab/ as go run ./cmd/lab -regen would write them (no benchmark)"
go run ./cmd/lab -check > /dev/null

step "load test harness smoke run (1 round of 1s; no figures are asserted)"
go run ./cmd/loadtest -rounds 1 -duration 1s -rate-duration 1s -servers classic,bare,visitors,visitors-redis,visitors-redis-sync > /dev/null
go run ./cmd/loadtest -rounds 1 -duration 1s -rate-duration 0 -clients -path /counter/smoke.svg -servers visitors,visitors-rules0,visitors-hi > /dev/null

if $slow; then
	step "mutation.sh leaves no test binary running (slow mode)"
	./scripts/mutation-cleanup-check.sh
	step "mutation testing (slow mode)"
	./scripts/mutation.sh
fi

step "done"
cpu
printf 'all checks passed in %dm%02ds (%ds CPU)\n' $(((SECONDS - begun) / 60)) $(((SECONDS - begun) % 60)) "$cpu"
