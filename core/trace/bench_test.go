package trace

import (
	"strconv"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// platformWeek is a trace shaped as a platform's week of loops is: two
// root sessions, and 240 scheduled sessions whose ids are renamed (the
// platform's session-n, named scout#n), each with a turn of two steps, a
// loop_wait call whose answer holds a time, and the platform's events as
// details that name the sessions.
func platformWeek() *Trace {
	start := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	tools := []string{"ask_user_question", "board_note", "cron_create", "delegate_task", "loop_wait", "read_file", "spawn_worker"}
	var es []Entry
	add := func(e Entry) { e.Seq = len(es) + 1; es = append(es, e) }
	for i := range 240 {
		at := time.Duration(i) * time.Hour
		id, parent := "session-"+strconv.Itoa(i+3), "session-"+strconv.Itoa(i%2+1)
		platform := func(run, what string) {
			add(Entry{At: at, Kind: "platform", Run: run, Agent: "scout", Label: what, Detail: run + " " + what})
		}
		add(Entry{At: at, Kind: "platform", Run: id, Agent: "scout", Label: "session.created",
			Detail: id + " session.created kind=scheduled agent=scout other=" + parent + " schedule=schedule-2 channel=scheduled"})
		add(Entry{At: at, Kind: "platform", Run: parent, Agent: "scout", Label: "schedule.fired",
			Detail: parent + " schedule.fired child=" + id + " schedule=schedule-2"})
		add(Entry{At: at, Kind: "platform", Run: id, Agent: "scout", Label: "user.message", Detail: id + ` user.message text="watch the queue"`})
		platform(id, "turn.start turn=1")
		add(Entry{At: at, Kind: RunStart, Run: id, Agent: "scout", Part: &RunPart{Mode: "top"}})
		user := []core.Message{{Role: core.RoleUser, Content: "watch the queue"}}
		add(Entry{At: at, Kind: Request, Run: id, Agent: "scout", Step: 1, Part: &RequestPart{Tools: tools, Messages: user}})
		call := core.ToolCall{ID: "call-" + strconv.Itoa(i+1), Name: "loop_wait", Arguments: `{"delay":"1h"}`}
		calls := []core.ToolCall{call}
		add(Entry{At: at, Kind: Response, Run: id, Agent: "scout", Step: 1, Part: &ResponsePart{Calls: calls}})
		add(Entry{At: at, Kind: ToolCall, Run: id, Agent: "scout", Step: 1, Call: &calls[0]})
		next := start.Add(at + time.Hour).Format("2006-01-02T15:04:05.000Z07:00")
		answer := `{"clamped":false,"delay":"1h0m0s","next_run":"` + next + `","schedule_id":"schedule-2"}`
		add(Entry{At: at, Kind: ToolResult, Run: id, Agent: "scout", Step: 1, Call: &calls[0], Content: answer})
		msgs := []core.Message{{Role: core.RoleAssistant, ToolCalls: calls}, {Role: core.RoleTool, Content: answer, ToolCallID: call.ID, ToolName: call.Name}}
		add(Entry{At: at, Kind: Request, Run: id, Agent: "scout", Step: 2, Part: &RequestPart{Tools: tools, Messages: msgs}})
		add(Entry{At: at, Kind: Response, Run: id, Agent: "scout", Step: 2, Part: &ResponsePart{Text: "The queue is quiet."}})
		add(Entry{At: at, Kind: RunEnd, Run: id, Agent: "scout", Part: &RunPart{Mode: "top"}, Content: "The queue is quiet."})
		add(Entry{At: at, Kind: "platform", Run: id, Agent: "scout", Label: "turn.end", Detail: id + ` turn.end turn=1 status=ok text="The queue is quiet."`})
		platform(id, "session.state status=completed")
		add(Entry{At: at, Kind: "platform", Run: parent, Agent: "scout", Label: "loop.result",
			Detail: parent + " loop.result child=" + id + ` schedule=schedule-2 text="The queue is quiet."`})
		add(Entry{At: at + time.Hour, Kind: Clock, Detail: "jumped +1h0m0s to +" + (at + time.Hour).String()})
	}
	return &Trace{Start: start, Entries: es}
}

// BenchmarkNormalizePlatformWeek is the normalization of a platform's week
// of loops (see platformWeek): ids renamed in details and fields, and times
// in the loop_wait answers.
func BenchmarkNormalizePlatformWeek(b *testing.B) {
	t := platformWeek()
	b.ReportAllocs()
	for b.Loop() {
		t.Normalize()
	}
}

// coordinatorRun is a trace shaped as a simulated coordinator's is: its
// ids already in normal form (nothing to rename), a child in the
// background, and the work tool's status projection with its times.
func coordinatorRun() *Trace {
	start := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	tools := []string{"research", "work"}
	status := `{"work":{"kind":"work.ref","id":"w-1","targetId":"research-agent","guarantees":{"execution":"process-local","rejoin":"process-local"}},` +
		`"targetLabel":"research","state":"running","attachment":"attached","attempt":1,"createdAt":"2026-01-01T00:00:00.000Z","startedAt":"2026-01-01T00:00:00.000Z","resultAvailable":false}`
	research := core.ToolCall{ID: "call-1", Name: "research", Arguments: `{"question":"Why?","run_in_background":true}`}
	result := core.ToolCall{ID: "call-2", Name: core.WorkToolName, Arguments: `{"action":"result","id":"w-1","timeout":"1s"}`}
	ref := &core.WorkRef{Kind: core.WorkRefKind, ID: "w-1", TargetID: "research-agent"}
	rows := []string{"- w-1 · research · running 0s"}
	es := []Entry{
		{Kind: RunStart, Run: "coord#1", Agent: "coord", Part: &RunPart{Input: []byte(`{"question":"Why?"}`)}},
		{Kind: Request, Run: "coord#1", Agent: "coord", Step: 1, Part: &RequestPart{Tools: tools, Messages: []core.Message{{Role: core.RoleUser, Content: "Why?"}}}},
		{Kind: Response, Run: "coord#1", Agent: "coord", Step: 1, Part: &ResponsePart{Calls: []core.ToolCall{research}}},
		{Kind: ToolCall, Run: "coord#1", Agent: "coord", Step: 1, Call: &research},
		{Kind: Work, Run: "coord#1", Work: "w-1", Label: "research", Part: &WorkPart{To: "queued"}},
		{Kind: Work, Run: "coord#1", Work: "w-1", Label: "research", Part: &WorkPart{From: "queued", To: "running"}},
		{Kind: ToolResult, Run: "coord#1", Agent: "coord", Step: 1, Call: &research, Ref: ref, Content: `{"kind":"work.ref","id":"w-1","targetId":"research-agent"}`},
		{Kind: Request, Run: "coord#1", Agent: "coord", Step: 2, Part: &RequestPart{Tools: tools, Status: rows}},
		{Kind: Response, Run: "coord#1", Agent: "coord", Step: 2, Part: &ResponsePart{Calls: []core.ToolCall{result}}},
		{Kind: RunStart, Run: "research#1", Agent: "research", Work: "w-1", Part: &RunPart{Parent: "coord#1", Mode: "background"}},
		{Kind: Request, Run: "research#1", Agent: "research", Step: 1, Part: &RequestPart{Messages: []core.Message{{Role: core.RoleUser, Content: "Why?"}}}},
		{Kind: Clock, Detail: "jumped +1s to +1s"},
		{Kind: ToolCall, Run: "coord#1", Agent: "coord", Step: 2, Call: &result},
		{Kind: ToolResult, Run: "coord#1", Agent: "coord", Step: 2, Call: &result, Action: "result", Work: "w-1", Content: status},
		{Kind: Request, Run: "coord#1", Agent: "coord", Step: 3, Part: &RequestPart{Tools: tools, Status: rows, Messages: []core.Message{
			{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{result}}, {Role: core.RoleTool, Content: status, ToolCallID: "call-2", ToolName: core.WorkToolName}}}},
		{Kind: Response, Run: "coord#1", Agent: "coord", Step: 3, Part: &ResponsePart{Text: "Because."}},
		{Kind: Response, Run: "research#1", Agent: "research", Step: 1, Part: &ResponsePart{Text: "Because."}},
		{Kind: RunEnd, Run: "research#1", Agent: "research", Content: `"Because."`, Part: &RunPart{}},
		{Kind: Work, Run: "coord#1", Work: "w-1", Label: "research", Part: &WorkPart{From: "running", To: "completed"}},
		{Kind: RunEnd, Run: "coord#1", Agent: "coord", Content: `"Because."`, Part: &RunPart{}},
	}
	for i := range es {
		es[i].Seq = i + 1
	}
	return &Trace{Start: start, Entries: es}
}

// BenchmarkNormalizeCoordinatorRun is the normalization of a simulated
// coordinator's run (see coordinatorRun), in place as the harness does
// it: nothing to rename, the times of one status projection to rewrite.
func BenchmarkNormalizeCoordinatorRun(b *testing.B) {
	t := coordinatorRun()
	entries := make([]Entry, len(t.Entries))
	b.ReportAllocs()
	for b.Loop() {
		copy(entries, t.Entries)
		n := Trace{Start: t.Start, Entries: entries}
		n.NormalizeInPlace()
	}
}
