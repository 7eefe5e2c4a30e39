#!/usr/bin/env bash
# update-camo-ranges.sh refreshes internal/camo/github-hooks.txt, the
# default of -camo-ranges, from GitHub's meta API: the "hooks" key, the
# ranges GitHub's own servers send requests from. The meta API has no key
# for camo; "web", "api" and "git" are where GitHub serves from, not where
# it fetches from, and "actions" and "dependabot" are rented cloud ranges
# anyone can rent too. Run it, then go test ./internal/camo, and commit.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsS -H 'Accept: application/vnd.github+json' https://api.github.com/meta > "$tmp/meta.json"
out=internal/camo/github-hooks.txt
{
	cat <<HEADER
# GitHub's outbound address ranges: the "hooks" key of https://api.github.com/meta,
# the documented source of requests GitHub's own servers send out. The meta API
# has no key for camo, GitHub's image proxy, which GitHub runs on its own servers.
# Fetched $(date -u +%Y-%m-%d) by scripts/update-camo-ranges.sh. Do not edit.
# One CIDR range a line.
HEADER
	python3 -c 'import json,sys; [print(r) for r in sorted(json.load(open(sys.argv[1]))["hooks"])]' "$tmp/meta.json"
} > "$out"
echo "wrote $out ($(grep -vc '^#' "$out") ranges)"
