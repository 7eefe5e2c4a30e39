#!/usr/bin/env bash
# api-examples.sh runs the owner API's README examples against a real
# visitors binary on a free port and prints each command with its real
# output, as the README shows them: ./scripts/api-examples.sh [store]
# (embedded, the default, or memory).
set -euo pipefail
cd "$(dirname "$0")/.."
store=${1:-embedded}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
go build -o "$dir/visitors" ./cmd/visitors
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VISITORS_ADMIN_TOKEN=example-root-token-3f9a0c1e7b
"$dir/visitors" -addr "127.0.0.1:$port" -admin-addr "" -store "$store" -data "$dir/data" -log-level warn -count-bots -open-create -client-new-keys 2/h >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "localhost:$port/hi" && break; sleep 0.1; done

# run prints a command as the README shows it, then its output.
run() {
	printf '$ %s\n' "$1"
	eval "${1//localhost:8080/localhost:$port}" | tee "$dir/last"
	printf '\n'
}
ROOT='$VISITORS_ADMIN_TOKEN'
run "curl -s -X POST localhost:8080/api/v1/tokens -H \"Authorization: Bearer $ROOT\" -H 'Content-Type: application/json' -d '{\"name\":\"ci\",\"prefix\":\"octocat/\"}'"
TOKEN=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' "$dir/last")
ID=$(sed -n 's/.*"id": "\(.*\)".*/\1/p' "$dir/last")
export TOKEN ID
run "curl -s localhost:8080/api/v1/tokens -H \"Authorization: Bearer $ROOT\""
run "curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"total\":1200}'"
curl -s -o /dev/null "localhost:$port/counter/octocat/hello-world.svg"
run "curl -s localhost:8080/api/v1/counters/octocat/hello-world -H \"Authorization: Bearer \$TOKEN\""
run "curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"locked\":true}'"
run "curl -si localhost:8080/counter/octocat/hello-world.json | tr -d '\\r' | grep -E '^(Visitors-Counted|\\{)'"
run "curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"total\":0,\"locked\":false}'"
run "curl -s -X PUT localhost:8080/api/v1/counters/octocat/%C3%A9t%C3%A9 -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"total\":5}'"
run "curl -s 'localhost:8080/api/v1/counters?limit=1' -H \"Authorization: Bearer \$TOKEN\""
run "curl -s 'localhost:8080/api/v1/counters?limit=1&after=octocat%2Fhello-world' -H \"Authorization: Bearer \$TOKEN\""
run "curl -s -X PUT 'localhost:8080/api/v1/counters/?key=' -H \"Authorization: Bearer $ROOT\" -H 'Content-Type: application/json' -d '{\"total\":42}'"
run "curl -s -X DELETE localhost:8080/api/v1/counters/octocat/hello-world -H \"Authorization: Bearer \$TOKEN\""
run "curl -s -X PUT localhost:8080/api/v1/counters/torvalds/linux -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"total\":1}'"
run "curl -s localhost:8080/api/v1/export -H \"Authorization: Bearer $ROOT\" > dump.json; cat dump.json"
run "curl -s -X POST 'localhost:8080/api/v1/import?replace=true' -H \"Authorization: Bearer $ROOT\" --data-binary @dump.json"
rm -f dump.json
run "curl -s -X DELETE localhost:8080/api/v1/tokens/\$ID -H \"Authorization: Bearer $ROOT\""
run "curl -si localhost:8080/api/v1/counters/octocat/x -H \"Authorization: Bearer \$TOKEN\" | tr -d '\\r' | grep -Ev '^(Date|Content-Length|Cache-Control|X-Content-Type-Options|Content-Type):'"

# Self-service counters: -open-create (and -client-new-keys 2/h).
run "curl -s -X POST localhost:8080/api/v1/counters/alice/blog"
KEY_TOKEN=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' "$dir/last")
export KEY_TOKEN
run "curl -s -X POST localhost:8080/api/v1/counters/alice/blog"
run "curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add -H \"Authorization: Bearer \$KEY_TOKEN\" -H 'Content-Type: application/json' -d '{\"n\":10}'"
curl -s -o /dev/null "localhost:$port/counter/alice/blog.svg"
run "curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add -H \"Authorization: Bearer \$KEY_TOKEN\" -H 'Content-Type: application/json' -d '{\"n\":-3}'"
run "curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add -H \"Authorization: Bearer \$KEY_TOKEN\" -H 'Content-Type: application/json' -d '{\"n\":-100}'"
run "curl -s localhost:8080/api/v1/counters/alice/blog2 -H \"Authorization: Bearer \$KEY_TOKEN\""
curl -s -o /dev/null -X POST "localhost:$port/api/v1/counters/alice/notes"
run "curl -si -X POST localhost:8080/api/v1/counters/alice/wiki | tr -d '\\r' | grep -Ev '^(Date|Content-Length|Cache-Control|X-Content-Type-Options|Content-Type):'"
run "curl -s -X DELETE localhost:8080/api/v1/counters/alice/blog -H \"Authorization: Bearer \$KEY_TOKEN\""
run "curl -s localhost:8080/api/v1/counters/alice/blog -H \"Authorization: Bearer \$KEY_TOKEN\""
