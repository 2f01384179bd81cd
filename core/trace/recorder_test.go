package trace

import (
	"slices"
	"testing"

	"github.com/crux-sim/crux-sim/core"
)

// A run offers the same tools at every step: recording a request costs no
// allocation for its tool names when the previous request offered the
// same ones, and every entry still names its own request's tools.
func TestRequestEntriesOfferingTheSameToolsShareTheirNames(t *testing.T) {
	start := tsStart
	r := NewRecorder(start)
	r.Grow(1000)
	tools := []core.ToolSpec{{Name: "research"}, {Name: "work"}}
	req := &core.Request{Run: "coord#1", Agent: "coord", Tools: tools}
	ev := core.Event{Kind: core.EventRequest, Time: start, Run: "coord#1", Agent: "coord", Request: req}
	r.Observe(ev)
	if n := testing.AllocsPerRun(100, func() { r.Observe(ev) }); n != 0 {
		t.Errorf("recording a request with the same tools allocates %v times, want 0", n)
	}
	other := &core.Request{Run: "research#1", Agent: "research", Tools: []core.ToolSpec{{Name: "search"}}}
	r.Observe(core.Event{Kind: core.EventRequest, Time: start, Run: "research#1", Agent: "research", Request: other})
	r.Observe(core.Event{Kind: core.EventRequest, Time: start, Run: "empty#1", Agent: "empty", Request: &core.Request{}})
	if n := testing.AllocsPerRun(100, func() { r.Observe(ev) }); n != 0 {
		t.Errorf("recording a request with the same tools as two requests ago allocates %v times, want 0", n)
	}
	want := map[string][]string{"coord#1": {"research", "work"}, "research#1": {"search"}, "empty#1": {}}
	for i, e := range r.Entries() {
		if !slices.Equal(e.Tools(), want[e.Run]) || e.Tools() == nil {
			t.Errorf("entry %d of %s offers %q, want %q", i, e.Run, e.Tools(), want[e.Run])
		}
	}
}
