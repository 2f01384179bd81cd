package trace

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/crux-sim/crux-sim/core"
)

// A run records an entry for every event: an entry carries the fields
// every kind may have and one kind's part behind one pointer, so that it
// stays compact whatever kinds there are.
func TestAnEntryStaysCompact(t *testing.T) {
	if n := unsafe.Sizeof(Entry{}); n > 200 {
		t.Errorf("an Entry is %d bytes, want at most 200", n)
	}
}

// everyKind is a trace with an entry of every kind, every field of each
// set.
func everyKind() *Trace {
	seed := int64(7)
	call := &core.ToolCall{ID: "call-1", Name: "work", Arguments: `{"action":"status"}`}
	return &Trace{Name: "every-kind", Seed: &seed, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Entries: []Entry{
		{Seq: 1, Kind: RunStart, Run: "coord#1", Agent: "coord", Work: "w-1", Label: "research",
			Part: &RunPart{Parent: "top#1", Mode: "background", Input: json.RawMessage(`{"q": "<x>"}`)}},
		{Seq: 2, At: time.Second, Kind: Request, Run: "coord#1", Agent: "coord", Step: 1, Part: &RequestPart{Tools: []string{"research", "work"},
			Messages: []core.Message{{Role: core.RoleUser, Content: "hi & bye"}}, Status: []string{"- w-1 · research · running 1s"}, Omitted: 2}},
		{Seq: 3, Kind: Response, Run: "coord#1", Step: 1, Part: &ResponsePart{Text: "t", Output: json.RawMessage(`[1, 2]`), Calls: []core.ToolCall{*call}}},
		{Seq: 4, Kind: Response, Run: "coord#1", Step: 2, Part: &ResponsePart{Error: "boom"}},
		{Seq: 5, Kind: ToolCall, Run: "coord#1", Step: 1, Call: call},
		{Seq: 6, Kind: ToolResult, Run: "coord#1", Step: 1, Call: call, Content: `{"a":1}`, IsError: true,
			Ref: &core.WorkRef{Kind: core.WorkRefKind, ID: "w-1", TargetID: "research"}, Action: "status", Work: "w-1"},
		{Seq: 7, Kind: Work, Run: "coord#1", Work: "w-1", Label: "research", Part: &WorkPart{From: "queued", To: "running", Transition: "start"}},
		{Seq: 8, Kind: Detach, Run: "coord#1", Work: "w-1", Part: &WorkPart{To: "running"}},
		{Seq: 9, Kind: Send, Work: "w-1", Part: &WorkPart{Cursor: "3"}},
		{Seq: 10, Kind: Guidance, Run: "research#1", Step: 2, Part: &WorkPart{Cursor: "1"}},
		{Seq: 11, Kind: RunEnd, Run: "coord#1", Content: "done", Part: &RunPart{Mode: "top"}},
		{Seq: 12, Kind: RunEnd, Run: "research#1", Part: &RunPart{Mode: "background", Error: "failed"}},
		{Seq: 13, Kind: Clock, Detail: "+5s"},
		{Seq: 14, Kind: Action, Run: "coord#1", Work: "w-1", Action: "cancel", Content: "{}", Detail: "cancel w-1"},
		{Seq: 15, Kind: "platform", Run: "session-1", Agent: "a", Label: "worker.start", Detail: "session-1 worker.start"},
	}}
}

// The JSON rendering has every field of an entry at its own key, its
// part's among them, in one order, and only the fields that are set:
// testdata/every-kind.json is what it has always been.
func TestJSONHasEveryFieldOfAnEntryAtItsOwnKey(t *testing.T) {
	want, err := os.ReadFile("testdata/every-kind.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := everyKind().JSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the JSON rendering changed:\n%s\nwant:\n%s", got, want)
	}
}

// What the JSON rendering writes reads back as the same entries.
func TestJSONReadsBackAsTheSameEntries(t *testing.T) {
	tr := everyKind()
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var back Trace
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for i := range tr.Entries {
		want, got := tr.Entries[i], back.Entries[i]
		// JSON compacts raw documents.
		if p, ok := want.Part.(*RunPart); ok && p.Input != nil {
			c := *p
			c.Input = json.RawMessage(`{"q":"\u003cx\u003e"}`)
			want.Part = &c
		}
		if p, ok := want.Part.(*ResponsePart); ok && p.Output != nil {
			c := *p
			c.Output = json.RawMessage(`[1,2]`)
			want.Part = &c
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entry %d reads back as %+v (part %+v), want %+v (part %+v)", i, got, got.Part, want, want.Part)
		}
	}
}

// An entry without a part of a kind reads that kind's fields as empty.
func TestAnEntryReadsThePartsItLacksAsEmpty(t *testing.T) {
	for _, e := range []Entry{{Kind: Note}, {Kind: Request, Part: &WorkPart{To: "running"}}} {
		if e.Tools() != nil || e.Messages() != nil || e.Status() != nil || e.Omitted() != 0 || e.Text() != "" ||
			e.Output() != nil || e.Calls() != nil || e.Parent() != "" || e.Mode() != "" || e.Input() != nil || e.Err() != "" {
			t.Errorf("%+v reads fields it has no part for", e)
		}
	}
	if e := (Entry{Part: &RunPart{}}); e.From() != "" || e.To() != "" || e.Transition() != "" || e.Cursor() != "" {
		t.Errorf("%+v reads a Work part it lacks", e)
	}
}

// Editing an entry's part changes that entry alone: a copy of the entry
// (a normalized trace, a doctored one) never changes the one it came from,
// and an entry without the part gets an empty one.
func TestEditingAPartChangesThatEntryAlone(t *testing.T) {
	orig := Entry{Kind: Request, Part: &RequestPart{Status: []string{"- w-1 · research · running 1s"}, Omitted: 1}}
	cp := orig
	cp.EditRequest().Status = []string{"- w-9 · research · running 1s"}
	if orig.Status()[0] != "- w-1 · research · running 1s" || cp.Status()[0] != "- w-9 · research · running 1s" || cp.Omitted() != 1 {
		t.Errorf("edited %v, original %v", cp.Status(), orig.Status())
	}
	var note Entry
	note.EditWork().To = "running"
	note.EditResponse().Text = "x"
	note.EditRun().Mode = "top"
	if note.Mode() != "top" || note.Text() != "" || note.To() != "" {
		t.Errorf("a note edited into a run's part reads mode %q, text %q, to %q", note.Mode(), note.Text(), note.To())
	}
}
