#!/usr/bin/env bash
# logos.sh regenerates the badge logos (internal/badge/simple-icons.bin,
# logos_gen.go and simple-icons.LICENSE) from the npm package simple-icons
# (CC0): the package is fetched with npm pack, unpacked into a temporary
# directory, and scripts/genlogos keeps only each icon's path data. The
# output is committed, so building visitors needs no network.
#
#   ./scripts/logos.sh            # the pinned version
#   ./scripts/logos.sh 16.38.0    # another version
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${1:-16.37.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "simple-icons@$VERSION" > /dev/null && tar xzf "simple-icons-$VERSION.tgz")
go run ./scripts/genlogos -src "$tmp/package" -out internal/badge
gofmt -l internal/badge
