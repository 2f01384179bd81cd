package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportWritesAnHTMLTimelineOfTheRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "race.html")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", "--seed", "3", "cancel-vs-complete", "-o", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, want 0; stderr: %s", code, stderr.String())
	}
	if got, want := stdout.String(), "PASS cancel-vs-complete (seed 3): wrote "+out+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<!doctype html>",
		`data-lane="run:research-coordinator#1"`,
		`data-lane="work:w-1"`,
		"crux-sim run --seed 3 cancel-vs-complete", // how to reproduce it
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestReportToStandardOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", "research-coordinator", "-o", "-"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, want 0; stderr: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "<!doctype html>") || !strings.HasSuffix(stdout.String(), "</html>\n") {
		t.Errorf("stdout is not just the document: %.60q … %.20q", stdout.String(), stdout.String()[max(0, stdout.Len()-20):])
	}
}

// The exit code is the run's, and the report is written either way: a
// failing run is the one most worth looking at.
func TestReportOfAFailingRunExitsOneAndStillWritesTheReport(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/builtin/research-coordinator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "wrong.yaml")
	src = append(src, []byte("  - name: the research is cancelled (it is not)\n    work-ends: {work: research, in: [cancelled]}\n")...)
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "wrong.html")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", file, "-o", out}, &stdout, &stderr); code != exitFailed {
		t.Fatalf("exit %d, want 1; stdout %s; stderr: %s", code, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "FAIL research-coordinator (seed 1): wrote ") {
		t.Errorf("stdout %q", stdout.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("the research is cancelled (it is not)")) || !bytes.Contains(page, []byte(`class="badge">FAIL<`)) {
		t.Error("the report does not show the failed expectation")
	}
}

func TestReportBadUsageExitsTwo(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"no output", []string{"report", "cancel-vs-complete"}, "-o is required"},
		{"no scenario", []string{"report", "-o", "x.html"}, "report needs a scenario"},
		{"unknown scenario", []string{"report", "no-such-scenario", "-o", "x.html"}, "no-such-scenario"},
		{"unwritable output", []string{"report", "cancel-vs-complete", "-o", filepath.Join(t.TempDir(), "missing", "x.html")}, "cannot write the report"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(c.args, &stdout, &stderr); code != exitBadUsage {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), c.says) {
				t.Errorf("stderr %q does not say %q", stderr.String(), c.says)
			}
		})
	}
}

// report tells a cassette from a scenario file by the cassette reader's
// own rule, so that a cassette cut short inside its header is reported as
// the truncated cassette it is, not as a scenario file with a YAML error;
// and a scenario written in YAML's flow style, whose first line is a lone
// "{", is still a scenario.
func TestReportTakesACassetteCutInItsHeaderForACassette(t *testing.T) {
	cut := filepath.Join("..", "..", "harness", "cassette", "testdata", "hostile", "cut-header.cassette")
	code, out := runCLI(t, "report", cut, "-o", filepath.Join(t.TempDir(), "r.html"))
	if code != 2 || !strings.Contains(out, "cut-header.cassette:1:41: cassette is truncated") {
		t.Errorf("report of a cassette cut in its header exited %d:\n%s", code, out)
	}
	flow := filepath.Join(t.TempDir(), "flow.yaml")
	src := "{\n  name: flow,\n  agents: {solo: {description: Says hi}},\n  run: {agents: {solo: solo}},\n  script: {solo: [{text: hi}]}\n}\n"
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "report", flow, "-o", filepath.Join(t.TempDir(), "f.html")); code != 0 {
		t.Errorf("report of a flow-style scenario exited %d:\n%s", code, out)
	}
}
