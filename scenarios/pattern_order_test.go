package scenarios

import (
	"slices"
	"testing"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

// A compiled pattern checks the fields that compare one value before those
// that read through text or the trace, so that an expectation over a long
// trace turns most entries away on a label or an agent before it searches
// their text; the fields it defers are exactly those that scan.
func TestCompiledPatternsCheckComparingFieldsBeforeScanningOnes(t *testing.T) {
	var scanning []string
	for _, f := range patternTable {
		if f.scans {
			scanning = append(scanning, f.key)
		}
	}
	want := []string{"status", "message", "guidance", "history", "history-guidance", "in-background", "work", "contains"}
	if !slices.Equal(scanning, want) {
		t.Errorf("fields checked last: %q, want %q", scanning, want)
	}
	p := &Pattern{Kind: platform.TraceKind, Event: "schedule.fired", Contains: "schedule=schedule-1"}
	c := p.compile()
	if c.scans == 0 || c.compares == 0 || c.scans&c.compares != 0 {
		t.Fatalf("compiled %+v: want event among the compares and contains among the scans", c)
	}
	entries := []trace.Entry{
		{Kind: platform.TraceKind, Label: "schedule.fired", Detail: "schedule=schedule-1 run=1"},
		{Kind: platform.TraceKind, Label: "channel.post", Detail: "schedule=schedule-1 channel=slack"},
		{Kind: platform.TraceKind, Label: "schedule.fired", Detail: "schedule=schedule-2"},
		{Kind: trace.Note, Label: "schedule.fired", Detail: "schedule=schedule-1"},
	}
	tr := &trace.Trace{Entries: entries}
	for i := range entries {
		if got, whole := c.match(tr, &entries[i]), len(p.Mismatches(tr, &entries[i])) == 0; got != whole {
			t.Errorf("entry %d: the compiled pattern says %t, every field checked in the table's order %t", i, got, whole)
		}
	}
}
