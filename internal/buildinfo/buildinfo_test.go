package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestTheVersionLineNamesTheModuleVersionAndTheRevision(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4109770a1b2c3d4e5f60718293a4b5c6d7e8f901"},
		{Key: "vcs.time", Value: "2026-12-01T11:56:42Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	if got, want := from(bi).String(), "(devel) (rev 4109770a1b2c, modified, 2026-12-01T11:56:42Z)"; got != want {
		t.Fatalf("version line %q, want %q", got, want)
	}
}

func TestATaggedInstallPrintsItsTag(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.4.0"}}
	if got := from(bi).String(); got != "v0.4.0" {
		t.Fatalf("version line %q, want v0.4.0", got)
	}
}

func TestALibraryUserSeesTheVersionOfCruxSimItLinks(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
		Deps:     []*debug.Module{{Path: Module, Version: "v0.3.1"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffffffffffff"}}}
	if got := from(bi).String(); got != "v0.3.1" {
		t.Fatalf("version line %q, want v0.3.1 (the app's own revision is not crux-sim's)", got)
	}
}

func TestABuildWithoutVCSStampingSaysSo(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}
	if got, want := from(bi).String(), "(devel) (no VCS revision in the build info)"; got != want {
		t.Fatalf("version line %q, want %q", got, want)
	}
}
