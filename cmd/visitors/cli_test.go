package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the binary with args and env added to the test's environment
// until it exits (see command), and returns what it wrote to stdout and
// stderr and its exit status.
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(t, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("visitors %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// mustRefuse runs the binary and wants it refused as a usage error: exit
// status 2, nothing on stdout, and one line on stderr that starts with
// "visitors: " and says each of want.
func mustRefuse(t *testing.T, env []string, args []string, want ...string) {
	t.Helper()
	stdout, stderr, code := run(t, env, args...)
	if code != 2 || stdout != "" {
		t.Errorf("%v visitors %s: exit status %d, stdout %q; want status 2 and nothing on stdout\nstderr:\n%s", env, strings.Join(args, " "), code, stdout, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") || !strings.HasPrefix(stderr, "visitors: ") {
		t.Errorf("%v visitors %s: stderr %q, want one line starting with \"visitors: \"", env, strings.Join(args, " "), stderr)
		return
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v visitors %s: stderr %q does not say %q", env, strings.Join(args, " "), stderr, w)
		}
	}
}

// serveArgs are the flags that let a serving binary start anywhere, so
// that an invocation taken for good serves (and is killed and fails the
// test at the deadline) instead of failing to listen.
func serveArgs(t *testing.T) []string {
	return []string{"-addr", "127.0.0.1:0", "-admin-addr", "", "-data", t.TempDir()}
}

// TestBinaryRefusesBadCommandLine: a bad flag or value, on the command
// line or in a VISITORS_* variable, of the service or of a subcommand,
// is one line on stderr that names it and the form wanted, and exit
// status 2. Before (issue 24), a bad value printed the flag package's
// "parse error" and then the whole usage (109 lines), with status 1; a
// bad -store or -log-level and contradicting flags exited 1; an
// -admin-addr not on loopback exited 1 after the store had opened and
// logged to stdout.
func TestBinaryRefusesBadCommandLine(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		args  []string // after serveArgs, unless sub
		env   []string
		sub   bool // args start with a subcommand: no serveArgs
		wants []string
	}{
		{"duration", []string{"-flush-interval", "100"}, nil, false, []string{"visitors: -flush-interval 100: want a positive duration such as 100ms or 2s; see visitors -h\n"}},
		{"unknown flag", []string{"-colour"}, nil, false, []string{"visitors: unknown flag -colour; see visitors -h\n"}},
		{"unknown flag with a value", []string{"-colour=red"}, nil, false, []string{"unknown flag -colour;"}},
		{"no value", []string{"-max-keys"}, nil, false, []string{"visitors: -max-keys needs a value; see visitors -h\n"}},
		{"integer", []string{"-max-keys", "many"}, nil, false, []string{"-max-keys many: want a whole number, 0 or more (0: no limit)"}},
		{"bool", []string{"-metrics=maybe"}, nil, false, []string{"-metrics maybe: want true or false"}},
		{"rate", []string{"-client-rate", "10/week"}, nil, false, []string{"-client-rate 10/week: want N/s, N/m, N/h or N/d"}},
		{"durability", []string{"-durability", "eventually"}, nil, false, []string{"-durability eventually: want batch or sync"}},
		{"store", []string{"-store", "postgres"}, nil, false, []string{"-store postgres: want embedded, redis or memory"}},
		{"log level", []string{"-log-level", "loud"}, nil, false, []string{"-log-level loud: want debug, info, warn, error or off"}},
		{"proxies", []string{"-trusted-proxies", "10.0.0.0/8,proxy.local"}, nil, false, []string{"-trusted-proxies 10.0.0.0/8,proxy.local:", "proxy.local"}},
		{"empty value quoted", []string{"-max-streams="}, nil, false, []string{`-max-streams "": want a whole number, at least 1`}},
		{"slow request", []string{"-slow-request", "500us"}, nil, false, []string{"-slow-request 500us: want a duration of at least 1ms"}},
		{"stray argument", []string{"serve"}, nil, false, []string{`visitors: unexpected argument "serve"; see visitors -h` + "\n"}},
		{"redis prefix", []string{"-store", "redis", "-redis-prefix", "a{b}"}, nil, false, []string{`-redis-prefix "a{b}"`}},
		{"open create without the API", []string{"-open-create"}, nil, false, []string{"-open-create needs the owner API"}},
		{"no data directory", []string{"-data", ""}, nil, false, []string{"-data must name a directory"}},
		{"admin not on loopback", []string{"-admin-addr", "0.0.0.0:0"}, nil, false, []string{"visitors: -admin-addr 0.0.0.0:0 listens on ", "is not loopback", "-admin-allow-remote"}},
		{"token file missing", []string{"-admin-token-file", filepath.Join(dir, "nope")}, nil, false, []string{"-admin-token-file: open"}},
		{"env duration", nil, []string{"VISITORS_FLUSH_INTERVAL=100"}, false, []string{"visitors: VISITORS_FLUSH_INTERVAL=100: want a positive duration such as 100ms or 2s; see visitors -h\n"}},
		{"env integer", nil, []string{"VISITORS_MAX_KEYS=many"}, false, []string{"VISITORS_MAX_KEYS=many: want a whole number"}},
		{"env bool", nil, []string{"VISITORS_METRICS=maybe"}, false, []string{"VISITORS_METRICS=maybe: want true or false"}},
		{"env store", nil, []string{"VISITORS_STORE=postgres"}, false, []string{"VISITORS_STORE=postgres: want embedded, redis or memory"}},
		{"env value with a space", nil, []string{"VISITORS_LOG_LEVEL=very loud"}, false, []string{`VISITORS_LOG_LEVEL="very loud": want debug`}},
		{"version with an argument", []string{"-version", "x"}, nil, true, []string{`-version takes no argument, not "x"`}},
		{"check unknown flag", []string{"check", "-colour"}, nil, true, []string{"visitors: check: unknown flag -colour; see visitors check -h\n"}},
		{"check argument", []string{"check", "-data", dir, "extra"}, nil, true, []string{`check: unexpected argument "extra"; see visitors check -h`}},
		// check read ./data without a word when asked about Redis.
		{"check of redis", []string{"check", "-store", "redis"}, nil, true, []string{"visitors: check: -store redis: check verifies only the embedded store, its file in -data; Redis keeps no file of ours to check; see visitors check -h\n"}},
		{"check env redis", []string{"check"}, []string{"VISITORS_STORE=redis"}, true, []string{"check verifies only the embedded store"}},
		{"export store", []string{"export", "-store", "memory"}, nil, true, []string{"export: -store memory: want embedded or redis; see visitors export -h"}},
		{"export env store", []string{"export"}, []string{"VISITORS_STORE=memory"}, true, []string{"export: VISITORS_STORE=memory: want embedded or redis"}},
		{"export no value", []string{"export", "-data"}, nil, true, []string{"export: -data needs a value; see visitors export -h"}},
		{"import bool", []string{"import", "-replace=maybe"}, nil, true, []string{"import: -replace maybe: want true or false; see visitors import -h"}},
		{"import max keys", []string{"import", "-max-keys", "x"}, nil, true, []string{"import: -max-keys x: want a whole number, 0 or more (0: no limit)"}},
		{"import env max keys", []string{"import"}, []string{"VISITORS_MAX_KEYS=x"}, true, []string{"import: VISITORS_MAX_KEYS=x: want a whole number"}},
		{"import two files", []string{"import", "-data", dir, "a.json", "b.json"}, nil, true, []string{`import: unexpected argument "b.json"; see visitors import -h`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // an invocation taken for good serves until the deadline
			args := tt.args
			if !tt.sub {
				args = append(serveArgs(t), tt.args...)
			}
			mustRefuse(t, tt.env, args, tt.wants...)
		})
	}
}

// TestBinaryRefusesNegativeLimits: every flag that bounds something
// refuses -1, on the command line and in its variable, where a negative
// value has no meaning. Before (issue 24), -max-keys -5 was taken as "no
// limit", -block-profile-rate -1 as off, -mutex-profile-fraction -1 left
// the runtime's fraction as it was, and import's -max-keys -1 imported
// without a limit.
func TestBinaryRefusesNegativeLimits(t *testing.T) {
	tests := []struct {
		flag, value string
		sub         string // "" for the service
	}{
		{"max-keys", "-1", ""},
		{"max-streams", "-1", ""},
		{"max-conns", "-1", ""},
		{"max-conns-per-client", "-1", ""},
		{"client-burst", "-1", ""},
		{"trace-keep", "-1", ""},
		{"import-max-bytes", "-1", ""},
		{"flight-recorder-max-bytes", "-1", ""},
		{"block-profile-rate", "-1", ""},
		{"mutex-profile-fraction", "-1", ""},
		{"shutdown-timeout", "-1s", ""},
		{"flush-interval", "-1s", ""},
		{"flight-recorder-window", "-1s", ""},
		{"slow-request", "-1s", ""},
		{"trace-every", "-1s", ""},
		{"repeat-window", "-1s", ""},
		{"client-rate", "-1/s", ""},
		{"client-new-keys", "-1/h", ""},
		{"camo-key-rate", "-1/m", ""},
		{"api-auth-failures", "-1/m", ""},
		{"max-keys", "-1", "import"},
	}
	for _, tt := range tests {
		env := "VISITORS_" + strings.ToUpper(strings.ReplaceAll(tt.flag, "-", "_"))
		t.Run(tt.sub+"-"+tt.flag, func(t *testing.T) {
			t.Parallel() // a limit taken for good serves until the deadline
			args := serveArgs(t)
			if tt.sub != "" {
				args = []string{tt.sub, "-data", t.TempDir()}
			}
			prefix := "visitors: "
			if tt.sub != "" {
				prefix += tt.sub + ": "
			}
			mustRefuse(t, nil, append(args, "-"+tt.flag, tt.value), prefix+"-"+tt.flag+" "+tt.value+": want ")
			mustRefuse(t, []string{env + "=" + tt.value}, args, prefix+env+"="+tt.value+": want ")
		})
	}
}

// TestBinaryHelpGoesToStdout: -h, -help and --help print the usage to
// stdout and exit 0, for the service and each subcommand, even beside a
// bad VISITORS_* variable (the help is how to mend it). Before (issue
// 24) the usage went to stderr.
func TestBinaryHelpGoesToStdout(t *testing.T) {
	tests := []struct {
		args  []string
		env   []string
		wants []string
	}{
		{[]string{"-h"}, nil, []string{"Usage:", "visitors export", "-max-keys", "VISITORS_MAX_KEYS", "(0: no limit)"}},
		{[]string{"-help"}, nil, []string{"Usage:", "-flush-interval"}},
		{[]string{"--help"}, nil, []string{"Usage:", "-flush-interval"}},
		{[]string{"-max-keys", "5", "-h"}, []string{"VISITORS_MAX_KEYS=many"}, []string{"Usage:"}}, // help to mend a bad variable
		{[]string{"check", "-h"}, nil, []string{"Usage:", "visitors check", "-data", "VISITORS_DATA"}},
		{[]string{"export", "--help"}, nil, []string{"Usage:", "visitors export", "-store", "-redis-url"}},
		{[]string{"import", "-help"}, []string{"VISITORS_STORE=postgres"}, []string{"Usage:", "visitors import", "-replace", "-max-keys", "VISITORS_MAX_KEYS"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := run(t, tt.env, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("visitors %s: exit status %d, stderr %q; want 0 and nothing on stderr", strings.Join(tt.args, " "), code, stderr)
			}
			for _, w := range tt.wants {
				if !strings.Contains(stdout, w) {
					t.Errorf("visitors %s: stdout does not say %q:\n%s", strings.Join(tt.args, " "), w, stdout)
				}
			}
		})
	}
}
