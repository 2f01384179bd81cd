package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/sim"
)

// Your own agent, with real Go tool code, on the platform under virtual
// time. The agent watches a job queue through a tool that is ordinary Go;
// a user starts "/loop 1h check the queue", and each hourly run calls the
// tool and reports; when the queue is empty the run ends the loop with
// loop_complete. The simulator is the platform's clock and executor, so
// four hours pass in microseconds and the story is the same on every run.
// In production the same agent runs with your provider (core/openai) and
// the real clock; here the provider is a Go function too.
func Example_ownAgentOnVirtualTime() {
	s := sim.New(sim.Options{Seed: 1})

	// Real Go tool code: it keeps state, and may do anything Go can.
	waiting := []int{5, 2, 0}
	checks := 0
	queueDepth := &core.Tool{
		Description: "How many jobs wait in the queue",
		Run: func(context.Context, core.ToolCall, any) (any, error) {
			n := waiting[min(checks, len(waiting)-1)]
			checks++
			return map[string]int{"waiting": n}, nil
		},
	}
	watcher := &core.Agent{ID: "watcher", Description: "Watches the job queue",
		Prompt: core.Prompt{System: "Check the queue; end the loop once it is empty."},
		Tools:  core.Tools{"queue_depth": queueDepth}}

	// The model, as a function of the request: call the tool, then answer
	// from its result, or end the loop when nothing waits.
	model := core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == core.RoleTool && last.ToolName == "queue_depth":
			var r struct{ Waiting int }
			_ = json.Unmarshal([]byte(last.Content), &r)
			if r.Waiting == 0 {
				return &core.Response{ToolCalls: []core.ToolCall{{ID: "end", Name: platform.ToolLoopComplete,
					Arguments: `{"reason":"the queue is empty"}`}}}, nil
			}
			return &core.Response{Text: fmt.Sprintf("%d jobs are waiting.", r.Waiting)}, nil
		case last.Role == core.RoleTool:
			return &core.Response{Text: "The queue is empty; the loop ends."}, nil
		}
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "check", Name: "queue_depth", Arguments: `{}`}}}, nil
	})

	p, err := platform.New(platform.Options{
		Core:       core.Options{Provider: model, Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
		Agents:     map[string]*core.Agent{"watcher": watcher},
		NoSweepers: true,
		Observer: platform.ObserverFunc(func(e platform.Event) {
			switch e.Type {
			case platform.EventLoopResult:
				fmt.Printf("+%s loop.result: %s\n", e.Time.Sub(sim.Epoch), e.Text)
			case platform.EventScheduleCompleted:
				fmt.Printf("+%s the loop ends (%s: %s)\n", e.Time.Sub(sim.Epoch), e.Status, e.Text)
			}
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The user, as an actor of the simulation: open a session, start the
	// loop, let four virtual hours pass, close the platform.
	s.Go("user", func() {
		id, err := p.NewSession(platform.SessionOptions{Agent: "watcher", User: "ada"})
		if err == nil {
			err = p.Send(id, "/loop 1h check the queue")
		}
		if err != nil {
			fmt.Println(err)
		}
		later := make(chan struct{})
		s.Clock().AfterFunc(4*time.Hour, func() { close(later) })
		s.Wait("four hours", later)
		_ = p.Close()
	})
	if err := s.Run(nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println("tool calls:", checks, "virtual time:", s.Clock().Elapsed())
	// Output:
	// +0s loop.result: 5 jobs are waiting.
	// +1h0m0s loop.result: 2 jobs are waiting.
	// +2h0m0s the loop ends (loop_complete: the queue is empty)
	// +2h0m0s loop.result: The queue is empty; the loop ends.
	// tool calls: 3 virtual time: 4h0m0s
}
