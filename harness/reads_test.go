package harness

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

// A run of the default invariants asks each only about the entry kinds
// defaultReads lists for it, and a platform run of its defaults each of
// platformDefaults about those platformReads lists. That holds only if each
// says nothing of an entry of any other kind: here every invariant of
// either list that has a Check is shown entries that break it (each breaks
// at least one, under a kind it reads), and says nothing of the very same
// entries under every kind it does not read.
func TestADefaultInvariantSaysNothingOfTheKindsItDoesNotRead(t *testing.T) {
	const owner, secret = "coord#1", "the child's secret output, long enough to count as a leak"
	facts := func() *Facts {
		var c checker
		c.init(nil, defaultInvariants, Facts{})
		s := &c.state
		s.learn(&trace.Entry{Kind: trace.Work, Run: owner, Work: "w-1", Part: &trace.WorkPart{To: "queued"}})
		s.learn(&trace.Entry{Kind: trace.Work, Run: owner, Work: "w-1", Part: &trace.WorkPart{From: "queued", To: "completed"}})
		s.learn(&trace.Entry{Kind: trace.RunEnd, Run: "research#1", Work: "w-1", Content: secret, Part: &trace.RunPart{Mode: "background"}})
		s.learn(&trace.Entry{Kind: trace.ToolCall, Run: owner, Call: &core.ToolCall{ID: "call-1"}})
		send := trace.Entry{Kind: trace.ToolResult, Run: owner, Step: 2, Action: "send", Work: "w-1", Call: &core.ToolCall{ID: "call-2", Name: "work"},
			Content: `{"workId":"w-1","id":"send-1","cursor":"1","acceptedAt":"2026-01-01T00:00:00.000Z","outcome":"accepted"}`}
		s.learn(&send)
		s.Tasks = map[string]*TaskFacts{"task-1": {Spawner: "lead#1"}}
		return s
	}
	rows := make([]string, core.MaxStatusRows+1)
	for i := range rows {
		rows[i] = fmt.Sprintf("- w-%d · research · running 0s · %s", i+1, secret)
	}
	list := "[" + strings.TrimSuffix(strings.Repeat(`{"id":"w-1"},`, core.MaxListed+1), ",") + "]"
	breaking := []trace.Entry{
		{Kind: trace.Work, Run: owner, Work: "w-1", Part: &trace.WorkPart{From: "running", To: "queued"}},
		{Kind: trace.Work, Run: owner, Work: "w-1", Part: &trace.WorkPart{From: "completed", To: "cancelled"}},
		{Kind: trace.Work, Run: owner, Work: "w-2", Part: &trace.WorkPart{To: "running"}},
		{Kind: trace.Request, Run: owner, Step: 3, Part: &trace.RequestPart{Status: rows,
			Messages: []core.Message{{Role: core.RoleUser, Content: "early: " + secret}}}},
		{Kind: trace.ToolResult, Run: "intruder#1", Step: 1, Action: "status", Work: "w-1", Call: &core.ToolCall{ID: "call-3", Name: "work"},
			Content: `{"state":"completed","output":"` + secret + `"}`},
		{Kind: trace.ToolResult, Run: owner, Step: 2, Action: "send", Work: "w-1", Call: &core.ToolCall{ID: "call-2", Name: "work"},
			Content: `{"workId":"w-1","id":"send-1","cursor":"3","acceptedAt":"2026-01-01T00:00:00.000Z","outcome":"accepted"}`},
		{Kind: trace.ToolResult, Run: owner, Step: 4, Action: "result", Work: "w-1", At: time.Hour, Call: &core.ToolCall{ID: "call-1", Name: "work"},
			Content: `{"work":{"kind":"work.ref","id":"w-1"},"note":"` + secret + `"}`},
		{Kind: trace.ToolResult, Run: owner, Step: 5, Action: "list", Call: &core.ToolCall{ID: "call-4", Name: "work"}, Content: list},
		{Kind: trace.ToolResult, Run: owner, Step: 6, Action: "", Call: &core.ToolCall{ID: "call-5", Name: "search"}, Content: secret},
		{Kind: trace.ToolResult, Run: owner, Step: 7, Call: &core.ToolCall{ID: "call-6", Name: platform.ToolUnblockTask, Arguments: `{"task_id":"task-1"}`},
			Content: `{"ok":true}`},
	}
	kinds := []trace.Kind{trace.RunStart, trace.Request, trace.Response, trace.ToolCall, trace.ToolResult, trace.Work, trace.Detach,
		trace.Send, trace.Guidance, trace.RunEnd, trace.Clock, trace.Fault, trace.Action, trace.Note, platform.TraceKind}
	lists := []struct {
		name  string
		invs  []Invariant
		reads [][]trace.Kind
	}{{"defaultInvariants", defaultInvariants, defaultReads[:]}, {"platformDefaults", platformDefaults, platformReads}}
	for _, l := range lists {
		if len(l.reads) != len(l.invs) {
			t.Fatalf("the reads of %s list %d invariants; there are %d", l.name, len(l.reads), len(l.invs))
		}
		for i, inv := range l.invs {
			if inv.Check == nil {
				if l.reads[i] != nil {
					t.Errorf("%s has no Check, but its reads are %v", inv.Name, l.reads[i])
				}
				continue
			}
			broke := false
			for _, e := range breaking {
				if slices.Contains(l.reads[i], e.Kind) && inv.Check(facts(), &e) != "" {
					broke = true
				}
				for _, k := range kinds {
					if slices.Contains(l.reads[i], k) {
						continue
					}
					other := e
					other.Kind = k
					if msg := inv.Check(facts(), &other); msg != "" {
						t.Errorf("%s, which reads %v, says of a %s entry: %s", inv.Name, l.reads[i], k, msg)
					}
				}
			}
			if !broke {
				t.Errorf("no entry breaks %s: the spec shows it nothing to say", inv.Name)
			}
		}
	}
}
