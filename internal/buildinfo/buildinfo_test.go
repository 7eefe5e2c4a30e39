package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "visitors", Version: "v0.0.0-20260101000000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-01-01T00:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	bare := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "visitors", Version: "(devel)"}}
	tests := []struct {
		name                             string
		bi                               *debug.BuildInfo
		ok                               bool
		version, revision, when, modifed string
		want                             Info
	}{
		{"toolchain stamp", stamped, true, "", "", "", "",
			Info{Version: "v0.0.0-20260101000000-0123456789ab+dirty", Revision: "0123456789abcdef", Time: "2026-01-01T00:00:00Z", Modified: true, GoVersion: "go1.99.1"}},
		{"no stamp", bare, true, "", "", "", "",
			Info{Version: "(devel)", Revision: Unknown, GoVersion: "go1.99.1"}},
		{"linker over no stamp", bare, true, "v1.2.3", "fedcba", "2026-02-02T00:00:00Z", "false",
			Info{Version: "v1.2.3", Revision: "fedcba", Time: "2026-02-02T00:00:00Z", GoVersion: "go1.99.1"}},
		{"linker over stamp", stamped, true, "", "fedcba", "", "true",
			Info{Version: "v0.0.0-20260101000000-0123456789ab+dirty", Revision: "fedcba", Modified: true, GoVersion: "go1.99.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := from(tt.bi, tt.ok, tt.version, tt.revision, tt.when, tt.modifed); got != tt.want {
				t.Errorf("from() = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := from(nil, false, "", "", "", ""); got.Version != "(devel)" || got.Revision != Unknown || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("from(no build info) = %+v, want (devel), unknown and this Go", got)
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Revision: "fedcba", Time: "2026-02-02T00:00:00Z", Modified: true, GoVersion: "go1.99.1"}
	if got, want := i.String(), "visitors v1.2.3 revision fedcba (2026-02-02T00:00:00Z, modified) go1.99.1 "; !strings.HasPrefix(got, want) {
		t.Errorf("String() = %q, want it to start with %q", got, want)
	}
}
