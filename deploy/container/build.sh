#!/usr/bin/env bash
# build.sh builds the container image of visitors from this checkout:
# the binary for Linux on the host's architecture (static: no cgo;
# -trimpath; stamped with the commit), the files beside this script,
# and the host's CA certificates, staged in a temporary directory and
# built by podman (or by docker, with CONTAINER_ENGINE=docker) from
# ./Dockerfile.
#
# Usage: ./deploy/container/build.sh [TAG]     (default visitors:latest)
#
# VERSION, if set (such as v1.2.3), is the version `visitors -version`
# prints. GOARCH, if set, builds for that architecture instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=${1:-visitors:latest}
engine=${CONTAINER_ENGINE:-podman}
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -r "$certs" ]; then
	echo "$0: no $certs to copy into the image (on Debian: apt-get install ca-certificates)" >&2
	exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
pkg=visitors/internal/buildinfo
modified=false
[ -z "$(git status --porcelain)" ] || modified=true
ldflags="-s -w -buildid= -X $pkg.Revision=$(git rev-parse HEAD) -X $pkg.Time=$(git log -1 --format=%cI HEAD) -X $pkg.Modified=$modified"
[ -z "${VERSION:-}" ] || ldflags="$ldflags -X $pkg.Version=$VERSION"
CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$ctx/visitors" ./cmd/visitors
cp deploy/container/Dockerfile deploy/container/passwd deploy/container/group "$ctx/"
cp "$certs" "$ctx/ca-certificates.crt"
mkdir "$ctx/data"

format=()
# podman and buildah write OCI images unless told, and OCI has no
# HEALTHCHECK; docker writes its own format.
[ "$engine" = docker ] || format=(--format docker)
"$engine" build "${format[@]}" -t "$tag" "$ctx"
