package main

import (
	"fmt"
	"slices"
	"strings"
)

// A session is one server (or none) and the examples run against it, in
// order: each example sees what the ones before it did.
type session struct {
	name string
	// env is the server's extra environment; its commands see it too,
	// and the doc's start command shows it.
	env []string
	// args are the server's flags as the doc shows them (the generator
	// adds -addr, -admin-addr and -data of its own); nil: no server.
	args []string
	// redis starts a redis-server, at 127.0.0.1:6379 in the commands.
	redis bool
	// paths are FROM=TO pairs: FROM in a command is TO when it runs, and
	// TO in what it prints is FROM again. $ROOT is the module's root,
	// $DIR the session's directory.
	paths    []string
	examples []example
}

// shown is the session's server as a doc starts it.
func (s session) shown() string {
	return strings.Join(append(append(slices.Clone(s.env), "visitors"), s.args...), " ")
}

// An example is one block of a doc.
type example struct {
	name string
	// kind is "" for commands, "server" for the session's start
	// command, "flags" for the table of visitors -h.
	kind   string
	lang   string // the code block's language; console by default
	prompt string // before each command; "$ " by default
	steps  []step
}

// A step is one command of an example.
type step struct {
	cmd    string // run with bash, as shown
	hidden bool   // run, not shown
	// set are NAME=field pairs: the variable NAME of later commands
	// holds the JSON string field of this command's output.
	set []string
	// events: cmd prints server-sent events; it is stopped once it has
	// printed this many, and then runs (hidden) after the first.
	events int
	then   string
	// log: the step is the first line of the server's log that holds
	// this, not a command.
	log string
}

// sh is a shown command; hide a hidden one.
func sh(cmd string, set ...string) step { return step{cmd: cmd, set: set} }
func hide(cmd string, set ...string) step {
	return step{cmd: cmd, hidden: true, set: set}
}

// reader returns the start of a curl command that visits as reader n: a
// browser's User-Agent of its own, so that its view is no other reader's
// refresh (-repeat-window).
func reader(n int) string {
	return fmt.Sprintf(`curl -s -A 'Mozilla/5.0 (reader %d)' -o /dev/null `, n)
}

// The commands' repeated parts.
const (
	browser = `-A 'Mozilla/5.0'`
	visit   = `curl -s -A 'Mozilla/5.0' -o /dev/null `
	root    = `-H "Authorization: Bearer $VISITORS_ADMIN_TOKEN"`
	tok     = `-H "Authorization: Bearer $TOKEN"`
	keyTok  = `-H "Authorization: Bearer $KEY_TOKEN"`
	jsonCT  = `-H 'Content-Type: application/json'`
	// noNoise drops the headers of a response that say nothing here.
	noNoise  = ` | tr -d '\r' | grep -Ev '^(Date|Content-Length|Cache-Control|X-Content-Type-Options|Content-Type):'`
	rootEnv  = "VISITORS_ADMIN_TOKEN=example-root-token-3f9a0c1e7b"
	dumpOne  = `printf '{"format":"visitors-export-1","hits":1,"keys":[\n{"key":"octocat/hello-world","total":1}\n]}\n' | visitors import -data ./data`
	dumpMore = `printf '{"format":"visitors-export-1","hits":0,"keys":[\n{"key":"octocat/spoon-knife","total":3}\n]}\n' | visitors import -data ./data`
)

// sessions are every example of the docs, session by session.
var sessions = []session{
	{
		name: "quickstart", args: []string{},
		examples: []example{
			{name: "quickstart-count", steps: []step{
				sh(`curl -s ` + browser + ` localhost:8080/counter/octocat/hello-world.svg | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -si ` + browser + ` localhost:8080/counter/octocat/hello-world.json | tr -d '\r' | grep -E '^(Visitors-Counted|\{)'`),
				sh(`curl -s -A 'Mozilla/5.0 (another reader)' localhost:8080/counter/octocat/hello-world.json`),
			}},
			{name: "quickstart-bot", steps: []step{
				sh(`curl -si localhost:8080/counter/octocat/hello-world.json | tr -d '\r' | grep -E '^(Visitors-Counted|\{)'`),
			}},
		},
	},
	{
		name: "public", args: []string{},
		examples: []example{
			{name: "hi", steps: []step{
				sh(`curl -s 'localhost:8080/hi'`),
				sh(`curl -s 'localhost:8080/hi?color=red'`),
				sh(`curl -s 'localhost:8080/hi?color=%3Cscript%3E'`),
			}},
			{name: "hello", steps: []step{
				sh(`curl -s ` + browser + ` 'localhost:8080/hello?name=Ada'`),
				sh(`curl -s ` + browser + ` 'localhost:8080/hello?name=%3Cscript%3E&color=blue'`),
			}},
			{name: "hello-log", lang: "json", steps: []step{{log: `"name":"Ada"`}}},
			{name: "whoami", steps: []step{
				sh(`curl -s 'localhost:8080/whoami'`),
				sh(`curl -s 'localhost:8080/whoami?format=json'`),
			}},
			{name: "counter-json", steps: []step{
				sh(`curl -s ` + browser + ` 'localhost:8080/counter/octocat/hello-world.json'`),
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world.json?count=false'`),
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world/daily.json?days=3'`),
			}},
			{name: "badge-param", steps: []step{
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world.svg?colour=red' | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world.json?colour=red'`),
			}},
			{name: "logo", steps: []step{
				sh(`curl -s ` + browser + ` 'localhost:8080/counter/octocat/hello-world.svg?logo=github' | head -c 100; echo`),
				sh(`curl -s -o /dev/null -w '%{http_code}\n' 'localhost:8080/counter/octocat/hello-world.svg?logo=nosuchlogo'`),
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world.svg?logo=nosuchlogo' | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -s 'localhost:8080/counter/octocat/hello-world.json?logo=nosuchlogo'`),
			}},
			{name: "stream", steps: []step{
				{cmd: `curl -sN localhost:8080/counter/octocat/hello-world/stream   # and, elsewhere, one visit`,
					events: 2, then: `curl -s -A 'Mozilla/5.0 (elsewhere)' -o /dev/null localhost:8080/counter/octocat/hello-world.svg`},
			}},
			{name: "healthz", steps: []step{
				sh(`curl -s localhost:6060/healthz`),
				sh(`curl -s -o /dev/null -H 'X-Forwarded-For: 203.0.113.7' localhost:8080/hi   # as a reverse proxy does`),
				sh(`curl -s localhost:6060/healthz`),
			}},
		},
	},
	{
		name: "top", args: []string{"-public-top"},
		examples: []example{
			{name: "top-server", kind: "server"},
			{name: "top", steps: []step{
				// Three readers: one reader's second view would be a refresh.
				hide(reader(1) + `localhost:8080/counter/octocat/spoon-knife.svg`),
				hide(reader(2) + `localhost:8080/counter/octocat/spoon-knife.svg`),
				hide(reader(3) + `localhost:8080/counter/octocat/spoon-knife.svg`),
				hide(reader(1) + `localhost:8080/counter/octocat/hello-world.svg`),
				hide(reader(2) + `localhost:8080/counter/octocat/hello-world.svg`),
				hide(reader(1) + `localhost:8080/counter/torvalds/linux.svg`),
				sh(`curl -s 'localhost:8080/top.json?days=7&limit=2'`),
			}},
		},
	},
	{
		name: "owner", env: []string{rootEnv}, args: []string{"-open-create", "-client-new-keys", "2/h"},
		examples: []example{
			{name: "owner-server", kind: "server"},
			{name: "token-create", steps: []step{
				sh(`curl -s -X POST localhost:8080/api/v1/tokens `+root+` `+jsonCT+` -d '{"name":"ci","prefix":"octocat/"}'`, "TOKEN=token", "ID=id"),
			}},
			{name: "token-list", steps: []step{
				sh(`curl -s localhost:8080/api/v1/tokens ` + root),
			}},
			{name: "counter-set", steps: []step{
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world ` + tok + ` ` + jsonCT + ` -d '{"total":1200}'`),
			}},
			{name: "audit-log", lang: "json", steps: []step{{log: `"audit":"set"`}}},
			{name: "counter-get", steps: []step{
				hide(visit + `localhost:8080/counter/octocat/hello-world.svg`),
				sh(`curl -s localhost:8080/api/v1/counters/octocat/hello-world ` + tok),
			}},
			{name: "counter-lock", steps: []step{
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world ` + tok + ` ` + jsonCT + ` -d '{"locked":true}'`),
				sh(`curl -si ` + browser + ` localhost:8080/counter/octocat/hello-world.json | tr -d '\r' | grep -E '^(Visitors-Counted|\{)'`),
			}},
			{name: "counter-reset", steps: []step{
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/octocat/hello-world ` + tok + ` ` + jsonCT + ` -d '{"total":0,"locked":false}'`),
			}},
			{name: "counter-no-badge", steps: []step{
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/octocat/%C3%A9t%C3%A9 ` + tok + ` ` + jsonCT + ` -d '{"total":5}'`),
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/octocat/spoon-knife ` + tok + ` ` + jsonCT + ` -d '{"total":5}'`),
			}},
			{name: "counter-list", steps: []step{
				sh(`curl -s 'localhost:8080/api/v1/counters?limit=1' ` + tok),
				sh(`curl -s 'localhost:8080/api/v1/counters?limit=1&after=octocat%2Fhello-world' ` + tok),
			}},
			{name: "counter-empty-key", steps: []step{
				sh(`curl -s 'localhost:8080/api/v1/counters/?key=' ` + root),
			}},
			{name: "counter-delete", steps: []step{
				sh(`curl -s -X DELETE localhost:8080/api/v1/counters/octocat/hello-world ` + tok),
			}},
			{name: "counter-outside", steps: []step{
				sh(`curl -s -X PUT localhost:8080/api/v1/counters/torvalds/linux ` + tok + ` ` + jsonCT + ` -d '{"total":1}'`),
			}},
			{name: "export-import", steps: []step{
				sh(`curl -s localhost:8080/api/v1/export ` + root + ` > dump.json; cat dump.json`),
				sh(`curl -s -X POST 'localhost:8080/api/v1/import?replace=true' ` + root + ` --data-binary @dump.json`),
			}},
			{name: "token-revoke", steps: []step{
				sh(`curl -s -X DELETE localhost:8080/api/v1/tokens/$ID ` + root),
				sh(`curl -si localhost:8080/api/v1/counters/octocat/x ` + tok + noNoise),
			}},
			{name: "open-create", steps: []step{
				sh(`curl -s -X POST localhost:8080/api/v1/counters/alice/blog`, "KEY_TOKEN=token"),
				sh(`curl -s -X POST localhost:8080/api/v1/counters/alice/blog`),
			}},
			{name: "open-add", steps: []step{
				sh(`curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add ` + keyTok + ` ` + jsonCT + ` -d '{"n":10}'`),
			}},
			{name: "open-add-negative", steps: []step{
				hide(visit + `localhost:8080/counter/alice/blog.svg`),
				sh(`curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add ` + keyTok + ` ` + jsonCT + ` -d '{"n":-3}'`),
			}},
			{name: "open-add-floor", steps: []step{
				sh(`curl -s -X POST localhost:8080/api/v1/counters/alice/blog/add ` + keyTok + ` ` + jsonCT + ` -d '{"n":-100}'`),
			}},
			{name: "open-limits", steps: []step{
				sh(`curl -s localhost:8080/api/v1/counters/alice/blog2 ` + keyTok),
				hide(`curl -s -o /dev/null -X POST localhost:8080/api/v1/counters/alice/notes`),
				sh(`curl -si -X POST localhost:8080/api/v1/counters/alice/wiki` + noNoise),
				sh(`curl -s -X DELETE localhost:8080/api/v1/counters/alice/blog ` + keyTok),
				sh(`curl -s localhost:8080/api/v1/counters/alice/blog ` + keyTok),
			}},
		},
	},
	{
		name: "proxy", args: []string{},
		examples: []example{
			{name: "healthz-proxy", steps: []step{
				hide(`curl -s -A 'Mozilla/5.0' -o /dev/null -H 'X-Forwarded-For: 203.0.113.7' localhost:8080/counter/demo.svg`),
				sh(`curl -s localhost:6060/healthz`),
			}},
		},
	},
	{
		name: "backup", env: []string{rootEnv}, args: []string{},
		paths: []string{
			"/usr/local/bin/visitors-backup.sh=bash $ROOT/deploy/backup/visitors-backup.sh",
			"/etc/visitors/backup.token=$DIR/backup.token",
			"/var/backups/visitors=$DIR/backups",
		},
		examples: []example{
			{name: "backup-token", steps: []step{
				hide(visit + `localhost:8080/counter/octocat/hello-world.svg`),
				sh(`curl -sS -H "Authorization: Bearer $VISITORS_ADMIN_TOKEN" -H 'Content-Type: application/json' -d '{"name":"nightly backup","scope":"backup"}' http://127.0.0.1:8080/api/v1/tokens`, "BACKUP_TOKEN=token"),
			}},
			{name: "backup-run", prompt: "# ", steps: []step{
				hide(`printf '%s\n' "$BACKUP_TOKEN" > /etc/visitors/backup.token`),
				sh(`/usr/local/bin/visitors-backup.sh -url http://127.0.0.1:8080 -token-file /etc/visitors/backup.token -dir /var/backups/visitors -keep 14`),
			}},
		},
	},
	{
		name: "migrate", env: []string{rootEnv}, args: []string{},
		examples: []example{
			{name: "migrate-server", kind: "server"},
			{name: "migrate-countapi", steps: []step{
				sh(`curl -s ` + browser + ` localhost:8080/hit/mysite.com/visits`),
				sh(`curl -s ` + browser + ` localhost:8080/hit/mysite.com/visits`),
				sh(`curl -s localhost:8080/get/mysite.com/visits`),
				sh(`curl -s ` + browser + ` 'localhost:8080/hit/mysite.com/visits?callback=showCount'`),
				sh(`curl -si localhost:8080/get/mysite.com/nothing-yet | tr -d '\r' | grep -E '^(HTTP|Content-Type|\{)'`),
			}},
			{name: "migrate-badges", steps: []step{
				sh(`curl -s ` + browser + ` 'localhost:8080/api/count/incr/badge.svg?url=https%3A%2F%2Fgithub.com%2Foctocat%2Fhello-world&title=hits' | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -s ` + browser + ` 'localhost:8080/badge?page_id=octocat.hello-world&left_text=visitors' | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -s ` + browser + ` 'localhost:8080/ghpvc/?username=octocat&base=1200&abbreviated=true' | grep -o 'aria-label="[^"]*"'`),
				sh(`curl -s 'localhost:8080/counter/hits/https~3A~2F~2Fgithub.com~2Foctocat~2Fhello-world.json?count=false'`),
			}},
			{name: "migrate-csv", steps: []step{
				sh(`printf 'key,total\ncountapi/mysite.com/visits,1234\nghpvc/octocat,5678\nhits/https~3A~2F~2Fgithub.com~2Foctocat~2Fhello-world,910\n' > counts.csv`),
				sh(`visitors import -data ./data -format csv counts.csv && visitors export -data ./data`),
			}},
			{name: "migrate-csv-refused", steps: []step{
				sh(`printf 'key,total\nghpvc/octocat,5678\ncountapi/mysite.com/visits,-1\n' > bad.csv`),
				sh(`visitors import -data ./data -format csv bad.csv`),
			}},
			{name: "migrate-csv-api", steps: []step{
				sh(`curl -s -X POST 'localhost:8080/api/v1/import?format=csv' ` + root + ` --data-binary @counts.csv`),
				sh(`curl -s ` + browser + ` localhost:8080/hit/mysite.com/visits`),
			}},
		},
	},
	{
		name: "cli",
		examples: []example{
			{name: "flags", kind: "flags"},
			{name: "flag-errors", steps: []step{
				sh(`visitors -flush-interval 100`),
				sh(`VISITORS_MAX_KEYS=-5 visitors`),
				sh(`visitors -colour`),
				sh(`visitors export -store memory`),
			}},
			{name: "version", steps: []step{
				sh(`visitors -version`),
			}},
			{name: "check-modes", steps: []step{
				hide(`mkdir -m 0755 data`),
				hide(dumpOne),
				hide(`chmod 0644 data/visitors.db`),
				sh(`visitors check -data ./data`),
			}},
			{name: "import-refused", steps: []step{
				sh(`printf '{"format":"visitors-export-1","hits":1,"keys":[\n{"key":"a","total":5},\n{"key":"a","total":7}\n]}\n' | visitors import -data ./other`),
			}},
			{name: "import-max-keys", steps: []step{
				hide(dumpMore),
				sh(`visitors export -data ./data | visitors import -data ./other -max-keys 1`),
			}},
			{name: "tls-flag-errors", steps: []step{
				sh(`./visitors -tls-cert fullchain.pem`),
				sh(`./visitors -tls-domains '*.example.org'`),
			}},
		},
	},
	{
		name: "redis", redis: true,
		examples: []example{
			{name: "redis-move", steps: []step{
				hide(dumpOne),
				hide(dumpMore),
				sh(`visitors export -data ./data | visitors import -store redis -redis-url redis://127.0.0.1:6379/0`),
				sh(`visitors export -store redis -redis-url redis://127.0.0.1:6379/0`),
			}},
		},
	},
}
