package trace

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
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

// A short run (a coordinator and a child: a few requests with status rows,
// responses, run starts with inputs and ends, Work transitions) records
// its parts in the recorder's own first chunks: making the recorder, its
// entries' room, and the one list of tool names are all it allocates.
func TestAShortRunsPartsGoIntoTheRecordersOwnFirstChunks(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	events := shortRun()
	// Thirteen when the parts had no first chunks of the recorder's.
	if allocs := allocsRecording(events, len(events)); allocs > 3 {
		t.Errorf("recording a short run allocates %v times, want at most 3", allocs)
	}
}

// The recorder's first chunks are handed out before any chunk Grow sizes:
// a short run recorded by a recorder told to expect a long one (a
// scenario's longest trace so far) still records its parts in them.
func TestGrowLeavesTheRecordersFirstChunksInUse(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	// The recorder, its entries' room and the list of tool names; nine
	// when Grow set the first chunks aside for chunks of its own sizes
	// (room for 40 requests and responses, 33 runs, 25 Work moves).
	if allocs := allocsRecording(shortRun(), 200); allocs > 3 {
		t.Errorf("recording a short run after Grow(200) allocates %v times, want at most 3", allocs)
	}
}

// shortRun is the events of a coordinator and a child: two runs started
// with inputs and ended, five requests with a status row and five
// responses, four Work transitions.
func shortRun() []core.Event {
	tools := []core.ToolSpec{{Name: "research"}, {Name: "work"}}
	blk := statusBlock(core.StatusRow{ID: "w-1", Label: "research", State: "running", Elapsed: time.Second})
	in := map[string]any{"question": "why?"}
	events := []core.Event{
		{Kind: core.EventRunStart, Run: "coord#1", Input: in},
		{Kind: core.EventRunStart, Run: "research#1", Input: in},
	}
	for range 5 {
		events = append(events, core.Event{Kind: core.EventRequest, Run: "coord#1", Request: &core.Request{Tools: tools, Status: blk}},
			core.Event{Kind: core.EventResponse, Run: "coord#1", Response: &core.Response{Text: "ok"}})
	}
	for _, to := range []core.WorkState{"queued", "running", "cancel-requested", "cancelled"} {
		events = append(events, core.Event{Kind: core.EventWorkTransition, Work: "w-1", To: to})
	}
	return append(events, core.Event{Kind: core.EventRunEnd, Run: "research#1"}, core.Event{Kind: core.EventRunEnd, Run: "coord#1"})
}

// allocsRecording counts the allocations of a new recorder grown by room
// recording events.
func allocsRecording(events []core.Event, room int) float64 {
	return testing.AllocsPerRun(20, func() {
		r := NewRecorder(tsStart)
		r.Grow(room)
		for i := range events {
			events[i].Time = tsStart
			r.Record(&events[i])
		}
	})
}

// A recorder is made for every simulated run: with its first chunks it
// stays in the allocator's size class of 2,304 bytes.
func TestARecorderStaysCompact(t *testing.T) {
	if n := unsafe.Sizeof(Recorder{}); n > 2304 {
		t.Errorf("a Recorder is %d bytes, want at most 2304", n)
	}
}

// An entry's offset is its time less the recorder's start, as time.Time's
// Sub has it: for a start without a monotonic reading (a simulation's
// epoch) and one with, for times just after, before and centuries away
// from it.
func TestAnEntrysOffsetIsItsTimeLessTheStartAsSubHasIt(t *testing.T) {
	now := time.Now()
	starts := []time.Time{tsStart, time.Date(2026, 1, 1, 0, 0, 0, 999_999_999, time.UTC), now, now.Round(0)}
	for _, start := range starts {
		later := time.Now()
		times := []time.Time{start, start.Add(1), start.Add(-1), start.Add(90 * time.Minute), start.Add(-3 * time.Second),
			start.Add(time.Duration(1<<33-1) * time.Second), start.AddDate(271, 11, 0), start.AddDate(300, 0, 0), start.AddDate(-300, 0, 0),
			start.AddDate(5000, 0, 0), start.AddDate(-5000, 0, 0), later, later.Round(0), time.Unix(0, 0), time.Time{}}
		for _, at := range times {
			r := NewRecorder(start)
			r.Observe(core.Event{Kind: core.EventToolCall, Time: at, Run: "r#1", Call: &core.ToolCall{ID: "c"}})
			r.Add(at, Entry{Kind: Note})
			for _, e := range r.Entries() {
				if want := at.Sub(start); e.At != want {
					t.Errorf("start %v, at %v: offset %v; Sub gives %v", start, at, e.At, want)
				}
			}
		}
	}
}

// AddDetail records what Add records for an entry of the same kind, run,
// agent, label and detail, at the same time, among other entries.
func TestAddDetailRecordsWhatAddRecords(t *testing.T) {
	byAdd, byDetail := NewRecorder(tsStart), NewRecorder(tsStart)
	for i, f := range [][4]string{{"platform", "session-1", "scout", "session-1 turn.start turn=1"}, {"", "", "", ""}, {"note", "r#1", "", "crash loses w-1"}} {
		at := tsStart.Add(time.Duration(i) * time.Second)
		for _, r := range []*Recorder{byAdd, byDetail} {
			r.Observe(core.Event{Kind: core.EventToolCall, Time: at, Run: "r#1", Call: &core.ToolCall{ID: "c"}})
		}
		byAdd.Add(at, Entry{Kind: Kind(f[0]), Run: f[1], Agent: f[2], Label: "label", Detail: f[3]})
		byDetail.AddDetail(at, Kind(f[0]), f[1], f[2], "label", f[3])
	}
	if got, want := byDetail.Entries(), byAdd.Entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("AddDetail recorded %+v, Add %+v", got, want)
	}
}

// Record records the event a pointer points at as Observe records the
// event: the same entries, whatever the kind.
func TestRecordRecordsWhatObserveRecords(t *testing.T) {
	call := &core.ToolCall{ID: "c-1", Name: "work", Arguments: `{}`}
	events := []core.Event{
		{Kind: core.EventRunStart, Run: "research#1", Agent: "research", Parent: "coord#1", Mode: core.ModeBackground, Input: map[string]any{"q": "why?"}},
		{Kind: core.EventRunStart, Run: "research#2", Agent: "research", Input: struct{ Q string }{"typed"}},
		{Kind: core.EventRequest, Run: "research#1", Step: 1, Request: &core.Request{Tools: []core.ToolSpec{{Name: "work"}}, Messages: []core.Message{{Role: core.RoleUser, Content: "why?"}}}, NewMessages: 1},
		{Kind: core.EventResponse, Run: "research#1", Step: 1, Response: &core.Response{Text: "because", ToolCalls: []core.ToolCall{*call}}},
		{Kind: core.EventToolCall, Run: "research#1", Call: call},
		{Kind: core.EventToolResult, Run: "research#1", Call: call, Result: &core.Message{Content: "{}", IsError: true}, Action: "status", Work: "w-1"},
		{Kind: core.EventWorkTransition, Run: "coord#1", Work: "w-1", Label: "research", From: "queued", To: "running", Transition: "start"},
		{Kind: core.EventWorkDetached, Run: "coord#1", Work: "w-1", To: "running"},
		{Kind: core.EventSendAccepted, Run: "coord#1", Work: "w-1", Cursor: "1"},
		{Kind: core.EventGuidanceDelivered, Run: "research#1", Work: "w-1", Cursor: "1"},
		{Kind: core.EventRunEnd, Run: "research#1", Mode: core.ModeBackground, Output: &core.Output{Raw: "done"}},
		{Kind: core.EventKind(99), Run: "ignored"},
	}
	observed, recorded := NewRecorder(tsStart), NewRecorder(tsStart)
	for i := range events {
		events[i].Time = tsStart.Add(time.Duration(i) * time.Second)
		observed.Observe(events[i])
		recorded.Record(&events[i])
	}
	a, b := observed.Entries(), recorded.Entries()
	if len(a) != len(events)-1 || len(b) != len(a) {
		t.Fatalf("Observe recorded %d entries, Record %d; want %d", len(a), len(b), len(events)-1)
	}
	for i := range a {
		ja, _ := a[i].MarshalJSON()
		jb, _ := b[i].MarshalJSON()
		if string(ja) != string(jb) {
			t.Errorf("entry %d: Observe recorded %s, Record %s", i+1, ja, jb)
		}
	}
}

// A status row is taken as the line of the block the model read exactly
// when that line is the row as it renders (StatusRow.String): any other
// line, however close, is rendered anew.
func TestAStatusLineIsTheRowExactlyWhenItIsTheRowsRendering(t *testing.T) {
	var rows []core.StatusRow
	for _, id := range []string{"", "w-1", "w-12", "a · b"} {
		for _, label := range []string{"", "research", "ré · s"} {
			for _, state := range []core.WorkState{"", "running", "completed"} {
				for _, el := range []time.Duration{0, time.Second, 59 * time.Second, 100 * time.Second, -time.Second, -90 * time.Second, math.MinInt64, math.MaxInt64} {
					for _, ra := range []bool{false, true} {
						rows = append(rows, core.StatusRow{ID: id, Label: label, State: state, Elapsed: el, ResultAvailable: ra})
					}
				}
			}
		}
	}
	for _, r := range rows {
		s := r.String()
		lines := []string{s, "", s + " ", s + "s", " " + s, s[:len(s)-1], s[1:], strings.Replace(s, "s", "S", 1),
			strings.Replace(s, " · ", " - ", 1), strings.Replace(s, "1", "01", 1), strings.Replace(s, " · Result available", "", 1),
			s + " · Result available", strings.Replace(s, " 0s", " -0s", 1), strings.Replace(s, "- ", "-", 1)}
		for _, o := range rows[:40] {
			lines = append(lines, o.String())
		}
		for _, line := range lines {
			if got, want := renders(r, line), line == s; got != want {
				t.Errorf("renders(%+v, %q) = %v, want %v", r, line, got, want)
			}
		}
	}
}

// A recorder keeps the offset of its last entry's time: every entry of a
// run of entries at times that repeat, one after another and not, in
// other locations and with clock readings, and after a reset to another
// start, has the offset Sub gives.
func TestAnEntryAtTheLastEntrysTimeHasTheOffsetSubGives(t *testing.T) {
	now := time.Now()
	starts := []time.Time{tsStart, now, now.Round(0), tsStart.Add(time.Hour)}
	r := NewRecorder(starts[0])
	prev := starts[0] // the last entry's time before the reset
	for _, start := range starts {
		r.Reset(start)
		times := []time.Time{prev, start, start, start.Add(time.Second), start.Add(time.Second), start,
			start.Add(time.Second).In(time.FixedZone("x", 3600)), start.Add(time.Second), now, now.Round(0), now, time.Time{}, time.Time{}, start, start.Add(time.Minute)}
		prev = times[len(times)-1]
		for i, at := range times {
			switch i % 3 {
			case 0:
				r.Observe(core.Event{Kind: core.EventToolCall, Time: at, Run: "r#1", Call: &core.ToolCall{ID: "c"}})
			case 1:
				r.Add(at, Entry{Kind: Note})
			default:
				r.AddDetail(at, Note, "r#1", "", "", "d")
			}
		}
		for i, e := range r.Entries() {
			if want := times[i].Sub(start); e.At != want {
				t.Errorf("start %v, entry %d at %v: offset %v; Sub gives %v", start, i+1, times[i], e.At, want)
			}
		}
	}
}

// A recorder takes the room of its next entry as it finds it, zero: one
// reset after entries of every kind, grown or not, records a run as a new
// recorder records it, field for field.
func TestAResetRecorderRecordsWhatANewOneRecords(t *testing.T) {
	call := &core.ToolCall{ID: "call-1", Name: "work", Arguments: `{"action":"status"}`}
	events := []core.Event{
		{Kind: core.EventRunStart, Run: "coord#1", Agent: "coord", Input: map[string]any{"q": "x"}},
		{Kind: core.EventRequest, Run: "coord#1", Step: 1, Request: &core.Request{Messages: []core.Message{{Role: core.RoleUser, Content: "x"}}}, NewMessages: 1},
		{Kind: core.EventToolCall, Run: "coord#1", Call: call},
		{Kind: core.EventRunEnd, Run: "coord#1", Output: &core.Output{Raw: "done"}},
	}
	busy := []core.Event{
		{Kind: core.EventRunStart, Run: "other#1", Agent: "other", Parent: "p#1", Mode: core.ModeBackground, Work: "w-9", Label: "l", Step: 3},
		{Kind: core.EventToolResult, Run: "other#1", Call: call, Result: &core.Message{Content: "{}", IsError: true}, Action: "status", Work: "w-1",
			Ref: &core.WorkRef{Kind: core.WorkRefKind, ID: "w-1"}},
		{Kind: core.EventResponse, Run: "other#1", Response: &core.Response{Text: "t", ToolCalls: []core.ToolCall{*call}}},
		{Kind: core.EventWorkTransition, Run: "other#1", Work: "w-1", Label: "research", From: "queued", To: "running", Transition: "start"},
		{Kind: core.EventRunEnd, Run: "other#1", Err: errors.New("failed")},
	}
	for _, grow := range []int{0, 3, 64} {
		fresh, reset := NewRecorder(tsStart), NewRecorder(tsStart.Add(time.Hour))
		reset.Grow(grow)
		for i := range 3 {
			for _, e := range busy {
				e.Time = tsStart.Add(time.Duration(i) * time.Second)
				reset.Observe(e)
			}
			reset.Add(tsStart, Entry{Kind: Fault, Detail: "fault", Content: "c", Call: call, IsError: true, Step: 9})
			reset.AddDetail(tsStart, Note, "other#1", "other", "label", "detail")
		}
		reset.Reset(tsStart)
		for _, r := range []*Recorder{fresh, reset} {
			for i, e := range events {
				e.Time = tsStart.Add(time.Duration(i) * time.Millisecond)
				r.Observe(e)
			}
			r.AddDetail(tsStart, Note, "", "", "", "end")
		}
		if got, want := reset.Entries(), fresh.Entries(); !reflect.DeepEqual(got, want) {
			t.Errorf("grown by %d, a reset recorder recorded\n%+v\na new one\n%+v", grow, got, want)
		}
	}
}

// A request that offers no tools (none, or an empty list) is recorded with
// a list of no tool names, not with none, as one that offers some is.
func TestARequestOfferingNoToolsIsRecordedWithAnEmptyListOfThem(t *testing.T) {
	r := NewRecorder(tsStart)
	for _, tools := range [][]core.ToolSpec{nil, {}, {{Name: "work"}}, nil} {
		r.Observe(core.Event{Kind: core.EventRequest, Run: "r#1", Request: &core.Request{Tools: tools}})
	}
	for i, e := range r.Entries() {
		if got := e.Tools(); got == nil || len(got) != 1 && i == 2 || len(got) != 0 && i != 2 {
			t.Errorf("request %d recorded tools %#v", i+1, got)
		}
	}
}
