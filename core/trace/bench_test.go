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
