#!/usr/bin/env bash
# release.sh builds the release of visitors: one archive per target, each
# holding the binary (static: no cgo; reproducible: -trimpath, no build
# ID, the commit's own time; stamped with the version and the commit,
# internal/buildinfo), README.md and docs/migrate.md, in a directory
# named as the archive; .tar.gz for Linux and macOS, .zip for Windows;
# and SHA256SUMS of the archives, into OUT (default dist/). The targets:
# linux amd64 and arm64, darwin amd64 and arm64, windows amd64 and arm64.
#
# Usage: ./scripts/release.sh VERSION [OUT]     (VERSION such as v1.2.3)
#
# TARGETS, if set, builds only those (space-separated GOOS/GOARCH), as
# the test does (deploy/release_test.go). A tree with changes not
# committed is refused, as the binaries would name a commit they were not
# built from, unless ALLOW_DIRTY=1, which stamps them modified.
#
# Two runs on one commit write the same bytes: check with
#   ./scripts/release.sh v0.0.0 /tmp/a && ./scripts/release.sh v0.0.0 /tmp/b &&
#   diff /tmp/a/SHA256SUMS /tmp/b/SHA256SUMS
# (GNU tar, gzip and Info-ZIP's zip, as on Debian: each entry's time is
# the commit's, its owner 0, its order sorted.)
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
targets=${TARGETS:-$all_targets}

case "${1:-}" in
v[0-9]*) version=$1 ;;
*) echo "usage: $0 VERSION [OUT]   (VERSION such as v1.2.3)" >&2; exit 2 ;;
esac
out=${2:-dist}

modified=false
if [ -n "$(git status --porcelain)" ]; then
	if [ "${ALLOW_DIRTY:-}" != 1 ]; then
		echo "$0: the tree has changes not committed; commit them first (or ALLOW_DIRTY=1 for a build stamped modified)" >&2
		exit 1
	fi
	modified=true
fi
for tool in tar gzip zip sha256sum; do
	command -v "$tool" >/dev/null || { echo "$0: $tool is missing" >&2; exit 1; }
done
rev=$(git rev-parse HEAD)
when=$(git log -1 --format=%cI HEAD)
pkg=visitors/internal/buildinfo
ldflags="-s -w -buildid= -X $pkg.Version=$version -X $pkg.Revision=$rev -X $pkg.Time=$when -X $pkg.Modified=$modified"

mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
archives=()
for target in $targets; do
	goos=${target%/*} goarch=${target#*/}
	name=visitors-$version-$goos-$goarch
	dir=$stage/$name
	mkdir -p "$dir"
	exe=visitors
	[ "$goos" = windows ] && exe=visitors.exe
	# -pgo=auto (the default) uses cmd/visitors/default.pgo on every target.
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$dir/$exe" ./cmd/visitors
	cp README.md "$dir/README.md"
	cp docs/migrate.md "$dir/migrate.md"
	chmod 0755 "$dir" "$dir/$exe"
	chmod 0644 "$dir/README.md" "$dir/migrate.md"
	touch -d "$when" "$dir" "$dir"/*
	if [ "$goos" = windows ]; then
		archive=$name.zip
		rm -f "$out/$archive"
		# -X: no uid, gid or extra times; TZ=UTC: the DOS times are the
		# commit's wherever it runs; the entries listed in order.
		(cd "$stage" && TZ=UTC zip -q -X -D "$out/$archive" $(find "$name" -type f | LC_ALL=C sort))
	else
		archive=$name.tar.gz
		tar -C "$stage" --sort=name --mtime="$when" --owner=0 --group=0 --numeric-owner \
			--format=gnu -cf - "$name" | gzip -n -9 >"$out/$archive"
	fi
	archives+=("$archive")
	echo "$out/$archive"
done
(cd "$out" && sha256sum "${archives[@]}" >SHA256SUMS)
echo "$out/SHA256SUMS"
