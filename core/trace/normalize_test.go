package trace

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/internal/slab"
)

func TestNormalizationRenamesIDsInOrderOfAppearanceWhereIDsStand(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := &core.ToolCall{ID: "tc_9", Name: "work", Arguments: `{"action":"result","id":"w_x7"}`}
	raw := &Trace{Start: start, Entries: []Entry{
		{Kind: RunStart, Run: "run_zz", Agent: "coord"},
		{Kind: Response, Run: "run_zz", Agent: "coord", Part: &ResponsePart{Calls: []core.ToolCall{{ID: "tc_5", Name: "research"}, *call}}},
		{Kind: Work, Run: "run_zz", Work: "w_x7", Part: &WorkPart{To: "queued"}},
		// Already in normal form, but second: it becomes w-2, and the
		// first Work's w-1 must not be read as this one.
		{Kind: Work, Run: "run_zz", Work: "w-1", Part: &WorkPart{To: "queued"}},
		{Kind: ToolResult, Run: "run_zz", Agent: "coord", Call: call, Action: "result", Work: "w_x7",
			Content: `{"workId":"w_x7","other":"w-1","acceptedAt":"2026-01-01T00:00:05.000Z"}`},
		{Kind: Request, Run: "run_zz", Agent: "coord", Part: &RequestPart{Status: []string{"- w_x7 · research · running 5s"}, Messages: []core.Message{{Role: core.RoleTool, ToolCallID: "tc_9", Content: "w-1 and w_x7"}}}},
		{Kind: RunStart, Run: "research#1", Agent: "research", Part: &RunPart{Parent: "run_zz"}, Work: "w_x7"},
	}}
	before := raw.Entries[5].Messages()[0].Content
	n, id := raw.NormalizeIDs()
	checks := []struct{ got, want string }{
		{n.Entries[0].Run, "coord#1"},
		{n.Entries[1].Calls()[0].ID, "call-1"},
		{n.Entries[1].Calls()[1].ID, "call-2"},
		{n.Entries[1].Calls()[1].Arguments, `{"action":"result","id":"w-1"}`},
		{n.Entries[2].Work, "w-1"},
		{n.Entries[3].Work, "w-2"},
		{n.Entries[4].Call.ID, "call-2"},
		// "other" is not where an id stands: it stays as it was.
		{n.Entries[4].Content, `{"workId":"w-1","other":"w-1","acceptedAt":"+5s"}`},
		{n.Entries[5].Status()[0], "- w-1 · research · running 5s"},
		// A message's text is content, whatever it spells.
		{n.Entries[5].Messages()[0].Content, "w-1 and w_x7"},
		{n.Entries[5].Messages()[0].ToolCallID, "call-2"},
		{n.Entries[6].Run, "research#1"},
		{n.Entries[6].Parent(), "coord#1"},
		{id("w_x7"), "w-1"},
		{id("unknown"), "unknown"},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %q, want %q", i, c.got, c.want)
		}
	}
	if raw.Entries[5].Messages()[0].Content != before || raw.Entries[4].Call.ID != "tc_9" ||
		raw.Entries[5].Status()[0] != "- w_x7 · research · running 5s" || raw.Entries[6].Parent() != "run_zz" {
		t.Error("NormalizeIDs changed the trace it copied")
	}
}

func TestATraceWhoseIDsAreAlreadyNormalKeepsItsStringsAndSlices(t *testing.T) {
	msgs := []core.Message{{Role: core.RoleUser, Content: "hello"}}
	calls := []core.ToolCall{{ID: "call-1", Name: "research", Arguments: `{"q":"x"}`}}
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "coord#1", Agent: "coord"},
		{Kind: Request, Run: "coord#1", Agent: "coord", Part: &RequestPart{Messages: msgs}},
		{Kind: Response, Run: "coord#1", Agent: "coord", Part: &ResponsePart{Calls: calls}},
		{Kind: Work, Run: "coord#1", Work: "w-1", Part: &WorkPart{To: "queued"}},
	}}
	tr.NormalizeInPlace()
	if &tr.Entries[1].Messages()[0] != &msgs[0] || &tr.Entries[2].Calls()[0] != &calls[0] {
		t.Error("normalization copied slices in which nothing changed")
	}
	if tr.Entries[3].Work != "w-1" || tr.Entries[0].Run != "coord#1" {
		t.Errorf("normal ids changed: %+v", tr.Entries)
	}
}

// A raw id may be any string a provider chose, as short as "e": renaming
// it must not touch a byte of content that happens to contain it.
func TestNormalizationNeverRewritesContentThatSpellsAnID(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	work := &core.ToolCall{ID: "w", Name: core.WorkToolName, Arguments: `{"action":"result","id":"e","note":"e"}`}
	research := core.ToolCall{ID: "e", Name: "research", Arguments: `{"question":"Where are the trees?","id":"e"}`}
	raw := &Trace{Start: start, Entries: []Entry{
		{Kind: RunStart, Run: "r", Agent: "coord", Part: &RunPart{Input: json.RawMessage(`{"question":"Where are the trees? 2026-01-01T00:00:05Z"}`)}},
		{Kind: Request, Run: "r", Agent: "coord", Part: &RequestPart{Messages: []core.Message{{Role: core.RoleUser, Content: "Where are the trees, e?"}}}},
		{Kind: Response, Run: "r", Agent: "coord", Part: &ResponsePart{Text: "e", Calls: []core.ToolCall{research, *work}}},
		{Kind: Work, Run: "r", Work: "e", Part: &WorkPart{To: "queued"}, Label: "research"},
		{Kind: ToolResult, Run: "r", Call: &research, Ref: &core.WorkRef{Kind: core.WorkRefKind, ID: "e"},
			Content: `{"kind":"work.ref","id":"e","targetId":"tree"}`},
		{Kind: ToolResult, Run: "r", Call: work, Action: "result", Work: "e",
			Content: `{"work":{"kind":"work.ref","id":"e","targetId":"tree"},"targetLabel":"research","state":"running","createdAt":"2026-01-01T00:00:05.000Z","resultAvailable":false}`},
		{Kind: Request, Run: "r", Agent: "coord", Part: &RequestPart{Status: []string{"- e · research · running 5s"}, Messages: []core.Message{
			{Role: core.RoleTool, ToolCallID: "w", ToolName: core.WorkToolName, Content: `{"workId":"e","note":"e"}`},
			{Role: core.RoleTool, ToolCallID: "e", ToolName: "lookup", Content: `{"action":"x","id":"e"}`},
		}}},
		{Kind: RunEnd, Run: "r", Agent: "coord", Content: "The trees are here, e."},
	}}
	n := raw.Normalize()
	checks := []struct{ got, want string }{
		{n.Entries[0].Run, "coord#1"},
		{string(n.Entries[0].Input()), `{"question":"Where are the trees? 2026-01-01T00:00:05Z"}`},
		{n.Entries[1].Messages()[0].Content, "Where are the trees, e?"},
		{n.Entries[2].Text(), "e"},
		{n.Entries[2].Calls()[0].ID, "call-1"},
		{n.Entries[2].Calls()[0].Arguments, `{"question":"Where are the trees?","id":"e"}`},
		{n.Entries[2].Calls()[1].ID, "call-2"},
		{n.Entries[2].Calls()[1].Arguments, `{"action":"result","id":"w-1","note":"e"}`},
		{n.Entries[3].Work, "w-1"},
		{n.Entries[3].Label, "research"},
		{n.Entries[4].Content, `{"kind":"work.ref","id":"w-1","targetId":"tree"}`},
		{n.Entries[4].Ref.ID, "w-1"},
		{n.Entries[5].Content, `{"work":{"kind":"work.ref","id":"w-1","targetId":"tree"},"targetLabel":"research","state":"running","createdAt":"+5s","resultAvailable":false}`},
		{n.Entries[6].Status()[0], "- w-1 · research · running 5s"},
		{n.Entries[6].Messages()[0].Content, `{"workId":"w-1","note":"e"}`},
		{n.Entries[6].Messages()[0].ToolCallID, "call-2"},
		// Another tool's answer is content, even shaped like a work call.
		{n.Entries[6].Messages()[1].Content, `{"action":"x","id":"e"}`},
		{n.Entries[7].Content, "The trees are here, e."},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

// A document that only looks like JSON is content like any other: the
// structural fixer leaves it as it is, and never fails on it.
func TestNormalizationLeavesBrokenJSONAsItIs(t *testing.T) {
	for _, s := range []string{`{"workId":"w_x7"`, `{"workId":"w_x7"}}`, `{"workId":"w_x7]`, `[{"workId": "w_x7", ]`, `{"workId":"\"`, `{]`, `[`, `{"a":tru`} {
		tr := &Trace{Entries: []Entry{
			{Kind: Work, Run: "r", Work: "w_x7", Part: &WorkPart{To: "queued"}},
			{Kind: ToolResult, Run: "r", Call: &core.ToolCall{ID: "c", Name: core.WorkToolName}, Action: "cancel", Content: s},
		}}
		if got := tr.Normalize().Entries[1].Content; got != s {
			t.Errorf("%q became %q", s, got)
		}
	}
}

// normalTrace is a coordinator's run of n steps, each a request, a research
// call and its result and a note, whose Work and call ids are already in
// normal form; its run id is too unless raw names it otherwise.
func normalTrace(n int, run string) *Trace {
	es := []Entry{{Kind: RunStart, Run: run, Agent: "coord"}}
	for i := range n {
		call := &core.ToolCall{ID: "call-" + strconv.Itoa(i+1), Name: "research", Arguments: `{"q":"x"}`}
		es = append(es,
			Entry{Kind: Request, Run: run, Agent: "coord", Part: &RequestPart{Status: []string{"- w-" + strconv.Itoa(i+1) + " · research · running 4s"}, Messages: []core.Message{{Role: core.RoleUser, Content: "hello"}, {Role: core.RoleTool, ToolName: "research", Content: `{"a":"b"}`}}}},
			Entry{Kind: Response, Run: run, Agent: "coord", Part: &ResponsePart{Calls: []core.ToolCall{*call}}},
			Entry{Kind: Work, Run: run, Work: "w-" + strconv.Itoa(i+1), Part: &WorkPart{To: "queued"}},
			Entry{Kind: ToolResult, Run: run, Agent: "coord", Call: call, Content: `{"findings":"x","notes":"line 1\nline \"2\""}`},
			Entry{Kind: Note, Detail: "crash loses nothing here"},
		)
	}
	return &Trace{Entries: es}
}

// Normalization does nothing where nothing needs renaming: an id already in
// its normal form, and a string holding no id to rename, cost no
// allocation, so a trace of 100 steps costs what one of 10 does, both when
// nothing at all is renamed and when only the run's id is.
func TestNormalizationAllocatesNothingPerEntryWithNothingToRename(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	for _, run := range []string{"coord#1", "session-1"} {
		var allocs [2]float64
		for i, n := range []int{10, 100} {
			tr := normalTrace(n, run)
			entries := tr.Entries
			allocs[i] = testing.AllocsPerRun(20, func() {
				tr.Entries = entries
				tr.NormalizeIDs()
			}) - testing.AllocsPerRun(20, func() { _ = make([]Entry, len(entries)) })
		}
		// With nothing renamed, the normalized trace alone (its renaming
		// of outside ids was a closure of its own).
		if run == "coord#1" && allocs[0] > 1 {
			t.Errorf("normalizing a trace with nothing to rename takes %v allocations besides its entries, want 1", allocs[0])
		}
		if allocs[1] != allocs[0] {
			t.Errorf("run %s: normalizing 100 steps takes %v allocations, 10 steps %v: want the same", run, allocs[1], allocs[0])
		}
		n, _ := normalTrace(3, run).NormalizeIDs()
		if n.Entries[0].Run != "coord#1" || n.Entries[2].Calls()[0].ID != "call-1" || n.Entries[8].Work != "w-2" || n.Entries[6].Status()[0] != "- w-2 · research · running 4s" {
			t.Errorf("run %s: normalized as %+v", run, n.Entries)
		}
	}
}

// Ids in normal form that come out of order, or repeat a name another kind
// or agent already holds, are renamed as they were before any was kept.
func TestNormalizationRenamesNormalLookingIDsThatAreOutOfOrder(t *testing.T) {
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "coord#1", Agent: "coord"},
		{Kind: RunStart, Run: "coord#1", Agent: "research"}, // seen: stays
		{Kind: RunStart, Run: "research#2", Agent: "research"},
		{Kind: RunStart, Run: "coord#2", Agent: "coord"},
		{Kind: Work, Work: "w-1"},
		{Kind: Work, Work: "w-3"},
		{Kind: Work, Work: "w-2"},
		{Kind: Work, Work: "w-1"}, // seen
		{Kind: Work, Work: "w-01"},
	}}
	n, id := tr.NormalizeIDs()
	got := []string{n.Entries[0].Run, n.Entries[1].Run, n.Entries[2].Run, n.Entries[3].Run,
		n.Entries[4].Work, n.Entries[5].Work, n.Entries[6].Work, n.Entries[7].Work, n.Entries[8].Work, id("w-01")}
	want := []string{"coord#1", "coord#1", "research#1", "coord#2", "w-1", "w-2", "w-3", "w-1", "w-4", "w-4"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Once an id of a kind is renamed, the ids after it that are their own
// name keep it, one that spells a name given to a renamed id is renamed,
// and each id seen again keeps the name it was given, whichever way.
func TestNormalizationKeepsOwnNamesGivenAfterARenamedID(t *testing.T) {
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "coord#1", Agent: "coord"},
		{Kind: RunStart, Run: "session-7", Agent: "coord"}, // coord#2
		{Kind: RunStart, Run: "coord#3", Agent: "coord"},   // its own name
		{Kind: RunStart, Run: "coord#2", Agent: "coord"},   // session-7's name: coord#4
		{Kind: RunStart, Run: "coord#3", Agent: "coord"},   // seen
		{Kind: RunStart, Run: "session-7", Agent: "coord"}, // seen
		{Kind: RunStart, Run: "coord#1", Agent: "coord"},   // seen before the rename
		{Kind: Work, Work: "w-1"},
		{Kind: Work, Work: "w_x"},
		{Kind: Work, Work: "w-3"},
		{Kind: Work, Work: "w-2"},
		{Kind: Work, Work: "w-1"},
		{Kind: Work, Work: "w-3"},
	}}
	n, id := tr.NormalizeIDs()
	var got []string
	for _, e := range n.Entries {
		got = append(got, e.Run+e.Work)
	}
	got = append(got, id("session-7"), id("coord#2"), id("w_x"), id("w-2"))
	want := []string{"coord#1", "coord#2", "coord#3", "coord#4", "coord#3", "coord#2", "coord#1",
		"w-1", "w-2", "w-3", "w-4", "w-1", "w-3", "coord#2", "coord#4", "w-2", "w-4"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A string written with escapes is read for what it says where that
// counts (a key, a work.ref's kind), and an escaped value is never
// rewritten.
func TestNormalizationReadsEscapedKeysAndKindsAndLeavesEscapedValues(t *testing.T) {
	call := &core.ToolCall{ID: "c", Name: core.WorkToolName}
	for _, c := range []struct{ in, want string }{
		{`{"kind":"work\u002eref","id":"w_x7","note":"a\nb"}`, `{"kind":"work\u002eref","id":"w-1","note":"a\nb"}`},
		{`{"kind":"work.ref","\u0069d":"w_x7"}`, `{"kind":"work.ref","\u0069d":"w-1"}`},
		{`{"kind":"work.ref","id":"w_x\u0037"}`, `{"kind":"work.ref","id":"w_x\u0037"}`},
		{`{"kind":"work.reff","id":"w_x7"}`, `{"kind":"work.reff","id":"w_x7"}`},
	} {
		tr := &Trace{Entries: []Entry{
			{Kind: Work, Run: "r", Work: "w_x7", Part: &WorkPart{To: "queued"}},
			{Kind: ToolResult, Run: "r", Call: call, Content: c.in},
		}}
		if got := tr.Normalize().Entries[1].Content; got != c.want {
			t.Errorf("%s became %s, want %s", c.in, got, c.want)
		}
	}
}

// What normalization rewrites (a detail naming a run, a work document
// naming its Work and a time) is written into shared room, not into an
// allocation per string: a trace of many such entries costs a few
// allocations, however many entries there are.
func TestNormalizationWritesWhatItRewritesWithoutAnAllocationPerString(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := &core.ToolCall{ID: "call-1", Name: core.WorkToolName, Arguments: `{"action":"status","id":"w_a"}`}
	es := []Entry{
		{Kind: RunStart, Run: "session-1", Agent: "worker"},
		{Kind: Work, Run: "session-1", Work: "w_a", Part: &WorkPart{To: "queued"}},
	}
	const n = 200
	for range n {
		es = append(es,
			Entry{Kind: Note, Detail: "session-1 worker.start child=session-1"},
			Entry{Kind: ToolResult, Run: "session-1", Call: call, Action: "status", Work: "w_a",
				Content: `{"work":{"kind":"work.ref","id":"w_a","targetId":"research"},"targetLabel":"research","state":"running","createdAt":"2026-01-01T00:00:05.000Z"}`})
	}
	tr := &Trace{Start: start, Entries: es}
	norm, _ := tr.NormalizeIDs()
	if got, want := norm.Entries[2].Detail, "worker#1 worker.start child=worker#1"; got != want {
		t.Errorf("detail normalized as %q, want %q", got, want)
	}
	if got, want := norm.Entries[3].Content, `{"work":{"kind":"work.ref","id":"w-1","targetId":"research"},"targetLabel":"research","state":"running","createdAt":"+5s"}`; got != want {
		t.Errorf("document normalized as %s, want %s", got, want)
	}
	if got := testing.AllocsPerRun(10, func() { tr.NormalizeIDs() }); got > n/5 {
		t.Errorf("normalizing %d rewritten details and documents allocates %v times, want at most %d", 2*n, got, n/5)
	}
}

// Any tool's answer and a platform event's message have the platform's
// keys read, whether written plainly or with escapes, and nothing else.
func TestNormalizationReadsThePlatformsKeysInAnyDocument(t *testing.T) {
	call := &core.ToolCall{ID: "c", Name: "delegate"}
	for _, c := range []struct{ in, want string }{
		{`{"worker_id":"session-2","note":"session-2"}`, `{"worker_id":"worker#1","note":"session-2"}`},
		{`{"worker\u005fid":"session-2"}`, `{"worker\u005fid":"worker#1"}`},
		{`[{"a":{"session_id":"session-2"}}]`, `[{"a":{"session_id":"worker#1"}}]`},
		{`{"overwrote": "session-2", "next_run": "2026-01-01T00:01:00.000Z"}`, `{"overwrote": "worker#1", "next_run": "+1m0s"}`},
		{`{"id":"session-2","child":"session-2"}`, `{"id":"session-2","child":"session-2"}`},
	} {
		tr := &Trace{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Entries: []Entry{
			{Kind: RunStart, Run: "session-2", Agent: "worker"},
			{Kind: ToolResult, Run: "session-2", Call: call, Content: c.in},
			{Kind: Request, Run: "session-2", Part: &RequestPart{Messages: []core.Message{{Role: core.RoleUser, Content: c.in}}}},
		}}
		n := tr.Normalize()
		if got := n.Entries[1].Content; got != c.want {
			t.Errorf("a tool's answer %s became %s, want %s", c.in, got, c.want)
		}
		if got := n.Entries[2].Messages()[0].Content; got != c.want {
			t.Errorf("a platform event %s became %s, want %s", c.in, got, c.want)
		}
	}
}

// A harness entry's detail has a run's or a Work's id renamed where it is a
// whole word: between spaces, after a key's '=', in a list or in brackets,
// before a ':' that ends a phrase; never inside double quotes, whatever
// escapes they hold, and never as part of a longer word.
func TestNormalizationRenamesWholeWordsOfADetailOutsideQuotes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"session-1 worker.start child=session-1", "worker#1 worker.start child=worker#1"},
		{"crash loses w_a research (w_a, owner session-1)", "crash loses w-1 research (w-1, owner worker#1)"},
		{"parents=[session-1;w_a] next: session-1: done", "parents=[worker#1;w-1] next: worker#1: done"},
		{"session-1:x session-1x xsession-1 w_a:", "session-1:x session-1x xsession-1 w-1:"},
		{`text="session-1 \"w_a\" session-1" session-1`, `text="session-1 \"w_a\" session-1" worker#1`},
		{`"\\"session-1 "unclosed session-1`, `"\\"worker#1 "unclosed session-1`},
		{`session-1"quoted"session-1`, `worker#1"quoted"worker#1`},
		{`text="a\\\" session-1" session-1`, `text="a\\\" session-1" worker#1`},
		{`text="a\\" session-1 "\"\\"session-1`, `text="a\\" worker#1 "\"\\"worker#1`},
		{"session.created session-1: schedule-1 session-11", "session.created worker#1: schedule-1 session-11"},
		{"nothing here", "nothing here"},
	} {
		tr := &Trace{Entries: []Entry{
			{Kind: RunStart, Run: "session-1", Agent: "worker"},
			{Kind: Work, Run: "session-1", Work: "w_a", Part: &WorkPart{To: "queued"}},
			{Kind: Note, Detail: c.in},
		}}
		if got := tr.Normalize().Entries[2].Detail; got != c.want {
			t.Errorf("%s became %s, want %s", c.in, got, c.want)
		}
	}
}

// Every id a detail names is renamed to its own name, however many ids
// share a length and their last bytes and in whatever order the details
// name them.
func TestNormalizationRenamesEachOfManyIdsInDetailsToItsOwnName(t *testing.T) {
	var es []Entry
	const n = 300
	for i := range n {
		es = append(es, Entry{Kind: RunStart, Run: "s-" + strconv.Itoa(1000+i), Agent: "worker"})
	}
	for i := range 3 * n {
		j := (i * 7919) % n
		es = append(es, Entry{Kind: Note, Detail: "s-" + strconv.Itoa(1000+j) + " sX" + strconv.Itoa(1000 + j)[1:] + " s-" + strconv.Itoa(1000+(j+64)%n)})
	}
	norm := (&Trace{Entries: es}).Normalize()
	for i := range 3 * n {
		j := (i * 7919) % n
		want := "worker#" + strconv.Itoa(j+1) + " sX" + strconv.Itoa(1000 + j)[1:] + " worker#" + strconv.Itoa((j+64)%n+1)
		if got := norm.Entries[n+i].Detail; got != want {
			t.Fatalf("detail %d normalized as %q, want %q", i, got, want)
		}
	}
}

// A document not the work tool's is read only if it may hold one of the
// platform's keys: one written plainly between quotes, wherever it stands,
// or any escape.
func TestOnlyADocumentThatMayHoldAPlatformKeyIsRead(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{`{"a":"b","c":[1,2],"worker_id":"s"}`, true},
		{`{"x":"session_id"}`, true},
		{`[{"n":"overwrote"}]`, true},
		{`{"next_run":1}`, true},
		{`{"worker_idx":"s","session":"id","next_run_":0,"overwrote`, false},
		{`{"a":"\u0041"}`, true},
		{`{"worker":"s","next":"run"}`, false},
		{`"`, false},
		{``, false},
	} {
		if got := mayHoldPlatformKey(c.doc); got != c.want {
			t.Errorf("mayHoldPlatformKey(%s) = %v, want %v", c.doc, got, c.want)
		}
	}
}

// A string's closing quote, found a quote at a time, is the one a reading
// escape by escape finds (a backslash escapes the byte after it): for
// every string of up to eight bytes of a, a backslash and a quote, after
// an opening quote, alone or followed by 12 to 18 bytes that are neither.
func TestAStringClosesWhereAnEscapeByEscapeReadingCloses(t *testing.T) {
	byEscape := func(s string, i int) int {
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			return -1
		}
		return j
	}
	const alphabet = `a\"`
	var walk func(s string)
	walk = func(s string) {
		for fill := range 19 {
			if fill > 0 && fill < 12 {
				continue
			}
			s := `"` + strings.Repeat("a", fill) + s[1:]
			if got, want := closingQuote(s, 0), byEscape(s, 0); got != want {
				t.Fatalf("closingQuote(%q) = %d; an escape-by-escape reading closes at %d", s, got, want)
			}
		}
		if len(s) == 9 {
			return
		}
		for _, c := range []byte(alphabet) {
			walk(s + string(c))
		}
	}
	walk(`"`)
}

// A detail read at the places its ids' common prefix stands renames what a
// reading word by word renames: for every detail of up to six bytes of
// an alphabet of ids' bytes, separators, quotes, escapes and colons, with
// ids that share a longer prefix and ids that share only their first byte.
func TestADetailReadWhereItsIDsPrefixStandsRenamesWhatAReadingWordByWordRenames(t *testing.T) {
	for _, ids := range []names{
		{"s-1": "a#1", "s-11": "a#2"},
		{"s-1": "a#1", "s:1": "a#2", "s": "a#3"},
	} {
		var words idWords
		words.add(ids)
		if words.prefix == "" {
			t.Fatalf("ids %v share no prefix", ids)
		}
		var out slab.Texts
		read := func(fix func(*rewrite, string, int, names, names, *idWords, *slab.Texts), d string) string {
			var rw rewrite
			fix(&rw, d, 0, ids, nil, &words, &out)
			return rw.end(&out, d)
		}
		const alphabet = "s-1 =\":\\x"
		var walk func(d string)
		walk = func(d string) {
			if got, want := read(fixDetailAt, d), read(fixDetailByWord, d); got != want {
				t.Fatalf("ids %v: %q read where the prefix stands became %q, word by word %q", ids, d, got, want)
			}
			if len(d) == 6 {
				return
			}
			for _, c := range []byte(alphabet) {
				walk(d + string(c))
			}
		}
		walk("")
	}
}

// A detail that starts with its entry's run, named without a lookup,
// renames what a reading of all its words renames: for every detail of up
// to six bytes of an alphabet of ids' bytes, separators, quotes, escapes
// and colons, and every run among ids renamed, ids that are their own
// name, ids a Work is named by too, and no ids at all, read where the
// ids' prefix stands and word by word.
func TestADetailThatStartsWithItsRunRenamesWhatAReadingOfAllItsWordsRenames(t *testing.T) {
	for _, c := range []struct{ run, work names }{
		{run: names{"s-1": "a#1", "s-11": "a#2"}},
		{run: names{"s-1": "a#1", "s:1": "a#2", "s": "a#3"}},
		{run: names{"s-1": "a#1", "x-1": "a#2"}},                             // no common prefix: word by word
		{run: names{"s-1": "a#1", "s-11": "a#2"}, work: names{"s-1": "w-1"}}, // a Work's name first
	} {
		var words idWords
		words.add(c.run)
		words.add(c.work)
		var out slab.Texts
		const alphabet = "s-1 =\":\\x"
		var walk func(d string)
		walk = func(d string) {
			want := fixDetail(d, "", "", false, c.run, c.work, &words, &out)
			for _, raw := range []string{"s-1", "s-11", "s", "s:1", "s-", "x-1", "1", "s-1 ", `"s-1"`, "s-1:", "s:", ":1", "s-1", "s"} {
				if got := fixDetail(d, raw, c.run.of(raw), isWord(raw), c.run, c.work, &words, &out); got != want {
					t.Fatalf("ids %v, works %v: %q of run %q became %q, read without its run %q", c.run, c.work, d, raw, got, want)
				}
			}
			if len(d) == 6 {
				return
			}
			for _, b := range []byte(alphabet) {
				walk(d + string(b))
			}
		}
		walk("")
	}
}

// Normalizing a platform's week in place (see platformWeek) writes the
// names it gives and the copies of the slices it changes into a few
// chunks: it allocates no string per name and no slice per request whose
// messages changed.
func TestNormalizingAPlatformsWeekAllocatesChunksNotAStringPerNameOrASlicePerRequest(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	const runs = 10
	traces := make([]*Trace, runs+1)
	for i := range traces {
		traces[i] = platformWeek()
	}
	n := 0
	allocs := testing.AllocsPerRun(runs, func() {
		traces[n].NormalizeInPlace()
		n++
	})
	// 640 before the cut (a string per name, a slice per
	// request), 31 since.
	if allocs > 31 {
		t.Errorf("normalizing a platform's week allocated %v times, want at most 31", allocs)
	}
}

// An id is its own name only where its number is written as strconv
// writes it (as a status row's seconds are): no leading zero, no sign but
// a negative's, nothing after it.
func TestANumberIsSpelledAsStrconvWritesIt(t *testing.T) {
	words := []string{"", "0", "00", "01", "1", "-1", "+1", "-0", "--1", "9", "10", "010", "99", "100", "101", "1000", "1x", "x1",
		"12345678901234567890", "9223372036854775807", "-9223372036854775808", "-9223372036854775809"}
	for n := -1002; n <= 1002; n++ {
		words = append(words, strconv.Itoa(n))
	}
	nums := []int64{math.MinInt64, math.MinInt64 + 1, -1001, -100, -10, -1, 0, 1, 9, 10, 11, 99, 100, 101, 1000, 1001, 1 << 40, math.MaxInt64}
	for _, w := range words {
		for _, n := range nums {
			if got, want := spells(w, n), w == strconv.FormatInt(n, 10); got != want {
				t.Errorf("spells(%q, %d) = %v, want %v", w, n, got, want)
			}
		}
		if n, err := strconv.ParseInt(w, 10, 64); err == nil && spells(w, n) != (w == strconv.FormatInt(n, 10)) {
			t.Errorf("spells(%q, %d) = %v", w, n, spells(w, n))
		}
	}
}

// Each entry's run is renamed to its own run's name, however the runs'
// entries interleave (one after another, alternating, a third between
// them, none).
func TestEveryEntryNamesItsOwnRunHoweverRunsInterleave(t *testing.T) {
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "s-a", Agent: "x"}, {Kind: RunStart, Run: "s-b", Agent: "x"}, {Kind: RunStart, Run: "s-c", Agent: "y"},
	}}
	for _, r := range []string{"s-a", "s-a", "s-b", "s-a", "s-b", "s-c", "s-b", "", "s-b", "s-d", "s-a", "s-c", "s-c", "s-a"} {
		tr.Entries = append(tr.Entries, Entry{Kind: Note, Run: r})
	}
	want := map[string]string{"s-a": "x#1", "s-b": "x#2", "s-c": "y#1", "s-d": "s-d", "": ""}
	for i, e := range tr.Normalize().Entries {
		if raw := tr.Entries[i].Run; e.Run != want[raw] {
			t.Errorf("entry %d of run %q names %q, want %q", i, raw, e.Run, want[raw])
		}
	}
}
