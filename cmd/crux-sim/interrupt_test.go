package main

import (
	"path/filepath"
	"strings"
	"testing"
)

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
