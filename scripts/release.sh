#!/usr/bin/env bash
# release.sh builds the release binaries of visitors: static (no cgo),
# reproducible (-trimpath, no build ID, the commit's own time), stamped
# with the version and the commit (internal/buildinfo), for linux amd64
# and arm64, darwin amd64 and arm64, and windows amd64 and arm64, into
# OUT (default dist/), with SHA256SUMS beside them.
#
# Usage: ./scripts/release.sh VERSION [OUT]     (VERSION such as v1.2.3)
#
# Two runs on one commit write the same bytes: check with
#   ./scripts/release.sh v0.0.0 /tmp/a && ./scripts/release.sh v0.0.0 /tmp/b &&
#   diff /tmp/a/SHA256SUMS /tmp/b/SHA256SUMS
# A tree with changes not committed is refused: the binaries would name a
# commit they were not built from.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
v[0-9]*) version=$1 ;;
*) echo "usage: $0 VERSION [OUT]   (VERSION such as v1.2.3)" >&2; exit 2 ;;
esac
out=${2:-dist}

if [ -n "$(git status --porcelain)" ]; then
	echo "$0: the tree has changes not committed; commit them first" >&2
	exit 1
fi
rev=$(git rev-parse HEAD)
when=$(git log -1 --format=%cI HEAD)
pkg=visitors/internal/buildinfo
ldflags="-s -w -buildid= -X $pkg.Version=$version -X $pkg.Revision=$rev -X $pkg.Time=$when -X $pkg.Modified=false"

mkdir -p "$out"
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
	goos=${target%/*} goarch=${target#*/}
	name=visitors-$version-$goos-$goarch
	[ "$goos" = windows ] && name=$name.exe
	echo "$out/$name"
	# -pgo=auto (the default) uses cmd/visitors/default.pgo on every target.
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$out/$name" ./cmd/visitors
done
(cd "$out" && sha256sum visitors-"$version"-* > SHA256SUMS)
echo "$out/SHA256SUMS"
