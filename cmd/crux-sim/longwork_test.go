package main

import (
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/core"
)

// Long work: what fuzz and record do on an interrupt and on a terminal.

// An interrupted campaign says that it stopped early, as one stopped by its
// time budget does: the "stopped by an interrupt" line before the summary,
// no "also at" seeds (which ran before the stop depends on timing), and
// the --json summary's stopped key, so that nobody takes the schedules it
// ran for the whole seed range.
func TestAnInterruptedCampaignSaysItStoppedEarly(t *testing.T) {
	for _, jobs := range []string{"1", "2"} {
		t.Run("--jobs "+jobs, func(t *testing.T) {
			sent := false
			send := func(done int64) {
				if !sent && done >= 512 {
					sent = true
					interrupt(t)
				}
			}
			if jobs == "1" {
				progressHook = send
				t.Cleanup(func() { progressHook = nil })
			} else {
				watch := watchWorkers(t)
				watch.onProgress = func(w *workerWatch) {
					if len(w.done) == 2 {
						send(min(w.done[0], w.done[1]))
					}
				}
			}
			summary := filepath.Join(t.TempDir(), "summary.json")
			code, out := runCLI(t, "fuzz", "--seeds", "1000000", "--jobs", jobs, "--out", "", "--json", summary,
				"--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
			if !sent {
				t.Fatalf("the campaign ended before the interrupt (exit %d):\n%s", code, out)
			}
			if code != 1 {
				t.Errorf("exit %d, want 1 (the planted defect failed before the interrupt)", code)
			}
			if !strings.Contains(out, "\nstopped by an interrupt\n") {
				t.Errorf("no stopped line:\n%s", out)
			}
			if strings.Contains(out, "also at:") {
				t.Errorf("an interrupted campaign lists the other seeds that failed, which depend on timing:\n%s", out)
			}
			s, err := readSummary(summary)
			if err != nil {
				t.Fatal(err)
			}
			if s.Stopped != "stopped by an interrupt" {
				t.Errorf("the --json summary's stopped is %q", s.Stopped)
			}
		})
	}
}

// A recording is long work (every call waits on a real model): on a
// terminal, record shows the request in flight on standard error, and
// clears that line before the report; piped, it shows nothing.
func TestRecordShowsItsProgressOnATerminalOnly(t *testing.T) {
	srv := httptest.NewServer(&researchModel{})
	defer srv.Close()
	for _, onTerminal := range []bool{true, false} {
		terminal = func(io.Writer) bool { return onTerminal }
		t.Cleanup(func() { terminal = isTerminal })
		path := filepath.Join(t.TempDir(), "leaves.cassette")
		code, stdout, stderr := cli("record", "--base-url", srv.URL+"/v1", "--model", "gpt-4o-mini", "--no-api-key", "research-coordinator", "-o", path)
		if code != 0 {
			t.Fatalf("record exited %d:\n%s%s", code, stdout, stderr)
		}
		shown := strings.Contains(stderr, "recording: request 1, research-coordinator step 1") &&
			strings.Contains(stderr, "recording: request 4, ")
		switch {
		case onTerminal && !shown:
			t.Errorf("on a terminal, record showed no progress: %q", stderr)
		case onTerminal && !strings.HasSuffix(stderr, "\r"):
			t.Errorf("on a terminal, record left its progress line on the screen: %q", stderr)
		case !onTerminal && stderr != "":
			t.Errorf("piped, record wrote on standard error: %q", stderr)
		}
		if strings.Contains(stdout, "recording:") {
			t.Errorf("the progress reached standard output:\n%s", stdout)
		}
	}
}

// The progress line names the agent the scenario file chose, escaped: an
// id that holds an ANSI escape or a line break cannot paint the terminal
// or start a line of its own.
func TestRecordProgressShowsAnAgentIDEscaped(t *testing.T) {
	var b strings.Builder
	p := &recordProgress{w: &b, on: true}
	p.calling(&core.Request{Agent: "a\x1b[31mred\nx", Step: 2})
	if strings.ContainsAny(b.String(), "\x1b\n") || !strings.Contains(b.String(), `a\x1b[31mred\nx step 2`) {
		t.Errorf("the progress line is %q", b.String())
	}
}
