// Package buildinfo says which crux-sim a binary or test links: the module
// version and the VCS revision the Go toolchain stamped into the build. The
// CLI's --version and the cassette header both print it, from here.
package buildinfo

import (
	"runtime/debug"
)

// Module is crux-sim's module path.
const Module = "github.com/crux-sim/crux-sim"

// Info is what the build info says of crux-sim.
type Info struct {
	// Version is the module version: a tag such as v0.4.0 for a binary
	// built by go install ...@version, a pseudo-version, or "(devel)" for a
	// build from a work tree.
	Version string
	// Revision is the VCS commit the work tree was at, and Modified is set
	// when it had uncommitted changes; both are empty when the toolchain
	// stamped no VCS information (go install ...@version, go test, or
	// -buildvcs=false).
	Revision string
	Time     string
	Modified bool
}

// Read returns what the running binary's build info says of crux-sim,
// whether it is the main module (the crux-sim command) or a dependency (a
// program that links the library).
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(unknown)"}
	}
	return from(bi)
}

func from(bi *debug.BuildInfo) Info {
	in := Info{Version: "(devel)"}
	switch {
	case bi.Main.Path == Module:
		in.Version = orDevel(bi.Main.Version)
	default:
		for _, d := range bi.Deps {
			if d.Path == Module {
				in.Version = orDevel(d.Version)
				if d.Replace != nil && d.Replace.Version != "" {
					in.Version = d.Replace.Version
				}
			}
		}
		// A dependency's revision is not stamped: only the main module's is.
		return in
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

func orDevel(v string) string {
	if v == "" {
		return "(devel)"
	}
	return v
}

// String is the version line: the module version, then the revision (cut
// to 12 characters), whether the tree had changes, and the commit's time,
// such as "v0.4.0" or "(devel) (rev 4109770a1b2c, modified, 2026-12-01T11:56:42Z)".
// A build from a work tree without VCS stamping says so.
func (in Info) String() string {
	if in.Revision == "" {
		if in.Version == "(devel)" {
			return in.Version + " (no VCS revision in the build info)"
		}
		return in.Version
	}
	s := in.Version + " (rev " + in.Revision[:min(12, len(in.Revision))]
	if in.Modified {
		s += ", modified"
	}
	if in.Time != "" {
		s += ", " + in.Time
	}
	return s + ")"
}
