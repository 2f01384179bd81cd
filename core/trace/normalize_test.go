package trace

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

func TestNormalizationRenamesIDsInOrderOfAppearanceWhereIDsStand(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := &core.ToolCall{ID: "tc_9", Name: "work", Arguments: `{"action":"result","id":"w_x7"}`}
	raw := &Trace{Start: start, Entries: []Entry{
		{Kind: RunStart, Run: "run_zz", Agent: "coord"},
		{Kind: Response, Run: "run_zz", Agent: "coord", Calls: []core.ToolCall{{ID: "tc_5", Name: "research"}, *call}},
		{Kind: Work, Run: "run_zz", Work: "w_x7", To: "queued"},
		// Already in normal form, but second: it becomes w-2, and the
		// first Work's w-1 must not be read as this one.
		{Kind: Work, Run: "run_zz", Work: "w-1", To: "queued"},
		{Kind: ToolResult, Run: "run_zz", Agent: "coord", Call: call, Action: "result", Work: "w_x7",
			Content: `{"workId":"w_x7","other":"w-1","acceptedAt":"2026-01-01T00:00:05.000Z"}`},
		{Kind: Request, Run: "run_zz", Agent: "coord", Status: []string{"- w_x7 · research · running 5s"},
			Messages: []core.Message{{Role: core.RoleTool, ToolCallID: "tc_9", Content: "w-1 and w_x7"}}},
		{Kind: RunStart, Run: "research#1", Agent: "research", Parent: "run_zz", Work: "w_x7"},
	}}
	before := raw.Entries[5].Messages[0].Content
	n, id := raw.NormalizeIDs()
	checks := []struct{ got, want string }{
		{n.Entries[0].Run, "coord#1"},
		{n.Entries[1].Calls[0].ID, "call-1"},
		{n.Entries[1].Calls[1].ID, "call-2"},
		{n.Entries[1].Calls[1].Arguments, `{"action":"result","id":"w-1"}`},
		{n.Entries[2].Work, "w-1"},
		{n.Entries[3].Work, "w-2"},
		{n.Entries[4].Call.ID, "call-2"},
		// "other" is not where an id stands: it stays as it was.
		{n.Entries[4].Content, `{"workId":"w-1","other":"w-1","acceptedAt":"+5s"}`},
		{n.Entries[5].Status[0], "- w-1 · research · running 5s"},
		// A message's text is content, whatever it spells.
		{n.Entries[5].Messages[0].Content, "w-1 and w_x7"},
		{n.Entries[5].Messages[0].ToolCallID, "call-2"},
		{n.Entries[6].Run, "research#1"},
		{n.Entries[6].Parent, "coord#1"},
		{id("w_x7"), "w-1"},
		{id("unknown"), "unknown"},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %q, want %q", i, c.got, c.want)
		}
	}
	if raw.Entries[5].Messages[0].Content != before || raw.Entries[4].Call.ID != "tc_9" {
		t.Error("NormalizeIDs changed the trace it copied")
	}
}

func TestATraceWhoseIDsAreAlreadyNormalKeepsItsStringsAndSlices(t *testing.T) {
	msgs := []core.Message{{Role: core.RoleUser, Content: "hello"}}
	calls := []core.ToolCall{{ID: "call-1", Name: "research", Arguments: `{"q":"x"}`}}
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "coord#1", Agent: "coord"},
		{Kind: Request, Run: "coord#1", Agent: "coord", Messages: msgs},
		{Kind: Response, Run: "coord#1", Agent: "coord", Calls: calls},
		{Kind: Work, Run: "coord#1", Work: "w-1", To: "queued"},
	}}
	tr.NormalizeInPlace()
	if &tr.Entries[1].Messages[0] != &msgs[0] || &tr.Entries[2].Calls[0] != &calls[0] {
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
		{Kind: RunStart, Run: "r", Agent: "coord", Input: json.RawMessage(`{"question":"Where are the trees? 2026-01-01T00:00:05Z"}`)},
		{Kind: Request, Run: "r", Agent: "coord", Messages: []core.Message{{Role: core.RoleUser, Content: "Where are the trees, e?"}}},
		{Kind: Response, Run: "r", Agent: "coord", Text: "e", Calls: []core.ToolCall{research, *work}},
		{Kind: Work, Run: "r", Work: "e", To: "queued", Label: "research"},
		{Kind: ToolResult, Run: "r", Call: &research, Ref: &core.WorkRef{Kind: core.WorkRefKind, ID: "e"},
			Content: `{"kind":"work.ref","id":"e","targetId":"tree"}`},
		{Kind: ToolResult, Run: "r", Call: work, Action: "result", Work: "e",
			Content: `{"work":{"kind":"work.ref","id":"e","targetId":"tree"},"targetLabel":"research","state":"running","createdAt":"2026-01-01T00:00:05.000Z","resultAvailable":false}`},
		{Kind: Request, Run: "r", Agent: "coord", Status: []string{"- e · research · running 5s"}, Messages: []core.Message{
			{Role: core.RoleTool, ToolCallID: "w", ToolName: core.WorkToolName, Content: `{"workId":"e","note":"e"}`},
			{Role: core.RoleTool, ToolCallID: "e", ToolName: "lookup", Content: `{"action":"x","id":"e"}`},
		}},
		{Kind: RunEnd, Run: "r", Agent: "coord", Content: "The trees are here, e."},
	}}
	n := raw.Normalize()
	checks := []struct{ got, want string }{
		{n.Entries[0].Run, "coord#1"},
		{string(n.Entries[0].Input), `{"question":"Where are the trees? 2026-01-01T00:00:05Z"}`},
		{n.Entries[1].Messages[0].Content, "Where are the trees, e?"},
		{n.Entries[2].Text, "e"},
		{n.Entries[2].Calls[0].ID, "call-1"},
		{n.Entries[2].Calls[0].Arguments, `{"question":"Where are the trees?","id":"e"}`},
		{n.Entries[2].Calls[1].ID, "call-2"},
		{n.Entries[2].Calls[1].Arguments, `{"action":"result","id":"w-1","note":"e"}`},
		{n.Entries[3].Work, "w-1"},
		{n.Entries[3].Label, "research"},
		{n.Entries[4].Content, `{"kind":"work.ref","id":"w-1","targetId":"tree"}`},
		{n.Entries[4].Ref.ID, "w-1"},
		{n.Entries[5].Content, `{"work":{"kind":"work.ref","id":"w-1","targetId":"tree"},"targetLabel":"research","state":"running","createdAt":"+5s","resultAvailable":false}`},
		{n.Entries[6].Status[0], "- w-1 · research · running 5s"},
		{n.Entries[6].Messages[0].Content, `{"workId":"w-1","note":"e"}`},
		{n.Entries[6].Messages[0].ToolCallID, "call-2"},
		// Another tool's answer is content, even shaped like a work call.
		{n.Entries[6].Messages[1].Content, `{"action":"x","id":"e"}`},
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
			{Kind: Work, Run: "r", Work: "w_x7", To: "queued"},
			{Kind: ToolResult, Run: "r", Call: &core.ToolCall{ID: "c", Name: core.WorkToolName}, Action: "cancel", Content: s},
		}}
		if got := tr.Normalize().Entries[1].Content; got != s {
			t.Errorf("%q became %q", s, got)
		}
	}
}
