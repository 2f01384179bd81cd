package scenarios

import (
	"testing"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
)

// fieldByField is a compiled pattern's match the general way: every field
// the pattern sets asked through patternTable, each reference resolved
// anew for each entry.
func fieldByField(p *Pattern, t *trace.Trace, e *trace.Entry) bool {
	if p.Kind != "" && e.Kind != p.Kind {
		return false
	}
	for i := range patternTable {
		if patternTable[i].set(p) && !patternTable[i].match(p, t, e) {
			return false
		}
	}
	return true
}

// A compiled pattern resolves its Work references once for a trace and
// compares its agent first, outside the table, and matches as if it asked
// the table of every field, resolving the references at every entry:
// matched against entries of several agents and of traces in which the
// reference resolves to different Work or to none, one trace after
// another and back, and of a trace that grew between two entries (so that
// a reference it did not resolve resolves now).
func TestCompiledPatternMatchesAsTheTableFieldByField(t *testing.T) {
	started := func(id string) trace.Entry {
		return trace.Entry{Kind: trace.ToolResult, Agent: "boss", Run: "boss#1", Call: &core.ToolCall{ID: "c-" + id, Name: "research"}, Ref: &core.WorkRef{Kind: core.WorkRefKind, ID: id}}
	}
	request := func(rows ...string) trace.Entry {
		return trace.Entry{Kind: trace.Request, Agent: "boss", Run: "boss#1", Part: &trace.RequestPart{Status: rows}}
	}
	call := func(id string) trace.Entry {
		return trace.Entry{Kind: trace.ToolCall, Agent: "boss", Run: "boss#1", Work: id, Action: "result", Call: &core.ToolCall{ID: "c-r", Name: "work"}}
	}
	rows := []string{"- w-1 · research · running 1s", "- w-2 · research · running 2s"}
	all := []trace.Entry{request(rows...), call("w-1"), call("w-2"), started("w-3"), request(rows[1])}
	for _, e := range all[:3] {
		e.Agent = "helper"
		all = append(all, e)
	}
	traces := []*trace.Trace{
		{Entries: []trace.Entry{started("w-1"), request(rows...), call("w-1"), call("w-2")}},
		{Entries: []trace.Entry{started("w-2"), request(rows[0]), call("w-2")}},
		{Entries: []trace.Entry{request(rows...), call("w-1")}}, // research never ran
		{Entries: []trace.Entry{}},
	}
	ref := WorkOf("research")
	patterns := []*Pattern{
		{Work: ref},
		{Kind: trace.ToolCall, Work: ref},
		{Kind: trace.Request, Status: &RowPattern{Work: ref}},
		{Kind: trace.Request, Status: &RowPattern{Work: ref, State: "running"}},
		{Status: &RowPattern{Label: "research"}},
		{Work: ref, Status: &RowPattern{Work: Ref{Tool: "research", N: 2}}},
		{Kind: trace.ToolCall, Action: "result", Work: Ref{Tool: "research", Agent: "boss"}},
		{Agent: "boss"},
		{Agent: "helper", Kind: trace.Request},
		{Agent: "helper", Work: ref},
		{Agent: "boss", Kind: trace.ToolCall, Action: "result", Work: ref},
		{Agent: "nobody"},
	}
	for pi, p := range patterns {
		c := p.compile()
		for round := range 3 {
			for ti, tr := range traces {
				for ei := range all {
					if got, want := c.match(tr, &all[ei]), fieldByField(p, tr, &all[ei]); got != want {
						t.Fatalf("pattern %d (%s), round %d, trace %d, entry %d: compiled says %t, field by field %t", pi, p, round, ti, ei, got, want)
					}
				}
			}
		}
		grown := &trace.Trace{Entries: make([]trace.Entry, 0, 8)}
		grown.Entries = append(grown.Entries, request(rows...))
		for _, e := range []trace.Entry{started("w-2"), call("w-2"), started("w-1")} {
			for ei := range all {
				if got, want := c.match(grown, &all[ei]), fieldByField(p, grown, &all[ei]); got != want {
					t.Fatalf("pattern %d (%s), grown trace at %d entries, entry %d: compiled says %t, field by field %t", pi, p, len(grown.Entries), ei, got, want)
				}
			}
			grown.Entries = append(grown.Entries, e)
		}
	}
}

// A script's request condition is compiled once and asked of request
// after request (whose entries the condition builds in storage it
// reuses): a Work reference it resolves for one request is not the one it
// resolves for the next, where the reference's call returned other Work.
// The condition answers each request as the general way does, and as
// matching it anew would.
func TestRequestConditionsResolveEachRequestsReferences(t *testing.T) {
	request := func(ref, row string) *core.Request {
		return &core.Request{Agent: "boss", Run: "boss#1", Step: 2,
			Messages: []core.Message{{Role: core.RoleTool, ToolCallID: "call-1", ToolName: "research",
				Content: `{"kind":"work.ref","id":"` + ref + `","targetId":"helper"}`}},
			Status: &core.StatusBlock{Rows: []core.StatusRow{{ID: row, Label: "research", State: "running"}}}}
	}
	for _, p := range []Pattern{
		{Status: &RowPattern{Work: WorkOf("research")}},
		{Status: &RowPattern{Work: WorkOf("research"), State: "running"}},
	} {
		cond := WhenRequest(p)
		for round, req := range []*core.Request{request("w-1", "w-1"), request("w-2", "w-1"), request("w-2", "w-2"), request("w-1", "w-2"), request("w-1", "w-1")} {
			want := len(ExplainRequest(&cond.(*requestCondition).p, req)) == 0
			if got := cond.Match(req); got != want {
				t.Fatalf("%s, request %d: the condition says %t, the general way %t", &p, round, got, want)
			}
			if fresh := WhenRequest(p).Match(req); fresh != want {
				t.Fatalf("%s, request %d: a condition made anew says %t, the general way %t", &p, round, fresh, want)
			}
		}
	}
}
