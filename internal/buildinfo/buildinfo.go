// Package buildinfo says what a visitors binary was built from: its
// version, the VCS revision, the revision's time and whether the tree
// was modified, as `visitors -version` prints them and the
// visitors_build_info metric carries them.
//
// The Go toolchain stamps them (runtime/debug.ReadBuildInfo) when it
// builds in a git checkout, unless -buildvcs=false. It cannot in a git
// worktree, whose .git is a file (golang/go#58218), so a build may set
// them instead with the linker:
//
//	go build -ldflags "-X visitors/internal/buildinfo.Version=v1.2.3 -X visitors/internal/buildinfo.Revision=$(git rev-parse HEAD)" ./cmd/visitors
//
// What the linker sets wins over what the toolchain stamped.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X visitors/internal/buildinfo.NAME=VALUE" by a
// release build or a test; empty means "as the toolchain stamped".
var (
	// Version is the release's version, such as v1.2.3.
	Version string
	// Revision is the VCS revision, such as a git commit hash.
	Revision string
	// Time is the revision's commit time, in RFC 3339.
	Time string
	// Modified is "true" if the tree had changes not committed.
	Modified string
)

// Unknown is what a field holds when nothing stamped it.
const Unknown = "unknown"

// Info is what a binary was built from. Its zero value is not useful:
// use [Read].
type Info struct {
	Version   string // the module's version; "(devel)" for a build from source without a tag
	Revision  string // the VCS revision, or Unknown
	Time      string // the revision's commit time, or ""
	Modified  bool   // the tree had changes not committed
	GoVersion string // the Go toolchain's version
}

// Read returns what this binary was built from.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	return from(bi, ok, Version, Revision, Time, Modified)
}

// from merges the toolchain's stamp bi (if ok) with the linker's
// values, which win when set.
func from(bi *debug.BuildInfo, ok bool, version, revision, when, modified string) Info {
	i := Info{Version: "(devel)", Revision: Unknown, GoVersion: runtime.Version()}
	if ok {
		if bi.Main.Version != "" {
			i.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if s.Value != "" {
					i.Revision = s.Value
				}
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		i.Version = version
	}
	if revision != "" {
		// A revision from the linker comes with its own time and state:
		// the toolchain's, if any, are of some other checkout.
		i.Revision, i.Time, i.Modified = revision, when, modified == "true"
	}
	return i
}

// String returns the line `visitors -version` prints: the version, the
// revision with its time and whether the tree was modified, the Go
// version and the platform.
func (i Info) String() string {
	rev := "revision " + i.Revision
	switch {
	case i.Time != "" && i.Modified:
		rev += " (" + i.Time + ", modified)"
	case i.Time != "":
		rev += " (" + i.Time + ")"
	case i.Modified:
		rev += " (modified)"
	}
	return fmt.Sprintf("visitors %s %s %s %s/%s", i.Version, rev, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}
