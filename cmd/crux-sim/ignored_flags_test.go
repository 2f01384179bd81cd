package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag that the command would not use in the mode asked for (a seed with
// a schedule file that fixes the seed, campaign flags with --merge) is bad
// usage: exit 2 naming the flag, rather than a run that silently ignores
// what the user asked for.
func TestAFlagTheModeWouldIgnoreIsBadUsage(t *testing.T) {
	dir := t.TempDir()
	if code, out := runCLI(t, "fuzz", "--seeds", "60", "--jobs", "1", "--out", dir, "--defect", "cancel-overwrites-terminal", "cancel-vs-complete"); code != 1 {
		t.Fatalf("the planted defect was not found: exit %d\n%s", code, out)
	}
	schedules, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(schedules) != 1 {
		t.Fatalf("fuzz wrote the schedules %v, want one", schedules)
	}
	schedule := schedules[0]
	srv := httptest.NewServer(&researchModel{})
	defer srv.Close()
	cassette := filepath.Join(dir, "leaves.cassette")
	if code, out := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "gpt-4o-mini", "--no-api-key", "research-coordinator", "-o", cassette); code != 0 {
		t.Fatalf("record exited %d:\n%s", code, out)
	}
	summary := filepath.Join(dir, "a.json")
	if code, out := runCLI(t, "fuzz", "--seeds", "10", "--jobs", "1", "--out", "", "--json", summary, "cancel-vs-complete"); code != 0 {
		t.Fatalf("fuzz exited %d:\n%s", code, out)
	}
	html := filepath.Join(dir, "r.html")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "--replay", schedule, "--seed", "9"}, "--seed"},
		{[]string{"run", "--replay", schedule, "--swarm"}, "--swarm"},
		{[]string{"run", "--replay", schedule, "--defect", "cancel-overwrites-terminal"}, "--defect"},
		{[]string{"report", "--replay", schedule, "--seed", "9", "-o", html}, "--seed"},
		{[]string{"report", "--seed", "4", cassette, "-o", html}, "--seed"},
		{[]string{"report", "--swarm", cassette, "-o", html}, "--swarm"},
		{[]string{"report", "--replay", schedule, cassette, "-o", html}, "--replay"},
		{[]string{"fuzz", "--merge", "--seeds", "5", summary}, "--seeds"},
		{[]string{"fuzz", "--merge", "--jobs", "2", summary}, "--jobs"},
		{[]string{"fuzz", "--merge", "--json", "m.json", summary}, "--json"},
		{[]string{"fuzz", "--merge", "--out", "x", summary}, "--out"},
	} {
		code, stdout, stderr := cli(tc.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "crux-sim: "+tc.flag+" ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and a message on %s", strings.Join(tc.args, " "), code, stdout, stderr, tc.flag)
		}
	}
	if _, err := os.Stat(html); !os.IsNotExist(err) {
		t.Errorf("a refused report was written: %v", err)
	}
}

// --jobs takes a number of processes; a negative one is bad usage, not
// the default.
func TestANegativeJobsIsBadUsage(t *testing.T) {
	code, stdout, stderr := cli("fuzz", "--seeds", "10", "--jobs", "-3", "--out", "", "cancel-vs-complete")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--jobs") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and a message on --jobs", code, stdout, stderr)
	}
}
