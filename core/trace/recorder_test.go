package trace

import (
	"slices"
	"testing"
	"time"

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

// statusBlock is a block as the runtime builds it: the header, then one
// line a row, then the count of rows not shown.
func statusBlock(rows ...core.StatusRow) *core.StatusBlock {
	text := core.StatusHeader
	for _, r := range rows {
		text += "\n" + r.String()
	}
	return &core.StatusBlock{Text: text + "\n(+3 more not shown)", Rows: rows, Omitted: 3}
}

// A request's status rows are recorded as the rows render, and they cost no
// allocation of their own: each is its line of the block the model read.
// A row whose line is not in the block is rendered anew.
func TestStatusRowsAreRecordedAsTheyRenderWithoutAllocatingPerRow(t *testing.T) {
	rows := []core.StatusRow{
		{ID: "w-1", Label: "research", State: "running", Elapsed: 4 * time.Second},
		{ID: "w-2", Label: "研究 · x", State: "completed", Elapsed: 90 * time.Second, ResultAvailable: true},
		{ID: "w-10", Label: "research", State: "queued"},
	}
	doctored := statusBlock(rows...)
	doctored.Rows = append(slices.Clone(rows), core.StatusRow{ID: "w-11", Label: "extra", State: "failed", Elapsed: time.Second})
	doctored.Rows[0].Elapsed = 5 * time.Second
	for _, blk := range []*core.StatusBlock{statusBlock(rows...), doctored} {
		r := NewRecorder(tsStart)
		r.Grow(1000)
		ev := core.Event{Kind: core.EventRequest, Time: tsStart, Run: "coord#1", Request: &core.Request{Status: blk}}
		r.Observe(ev)
		e := r.Entries()[0]
		if len(e.Status()) != len(blk.Rows) || e.Omitted() != 3 {
			t.Fatalf("recorded %q (+%d), want the %d rows of the block", e.Status(), e.Omitted(), len(blk.Rows))
		}
		for i, row := range blk.Rows {
			if e.Status()[i] != row.String() {
				t.Errorf("row %d recorded as %q, want %q", i, e.Status()[i], row.String())
			}
		}
		if blk == doctored {
			continue
		}
		if n := testing.AllocsPerRun(100, func() { r.Observe(ev) }); n != 0 {
			t.Errorf("recording a request of %d status rows allocates %v times, want 0", len(rows), n)
		}
	}
}

// A run's input is copied into the entry (the caller's value may change
// after), into room the recorder shares between runs rather than an
// allocation of its own.
func TestARunsInputIsCopiedWithoutAnAllocationOfItsOwn(t *testing.T) {
	r := NewRecorder(tsStart)
	r.Grow(1000)
	in := map[string]any{"question": "why?"}
	ev := core.Event{Kind: core.EventRunStart, Time: tsStart, Run: "research#1", Agent: "research", Input: in}
	r.Observe(ev)
	in["question"] = "changed"
	if got := string(r.Entries()[0].Input()); got != `{"question":"why?"}` {
		t.Errorf("input recorded as %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { r.Observe(ev) }); n != 0 {
		t.Errorf("recording a run's start allocates %v times, want 0", n)
	}
}
