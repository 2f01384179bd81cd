package platform_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("The production executor", func() {
	It("runs workers and a delegated fan-out on real goroutines without races or leaks", func(ctx SpecContext) {
		noLeaks := fixture.LeakCheck()
		model := scripted.New()
		model.Answer("coordinator", func(req *core.Request) (*core.Response, error) {
			if req.Step == 1 && lastUser(req) == "go" {
				var calls []core.ToolCall
				for i := range 3 {
					calls = append(calls, core.ToolCall{ID: fmt.Sprint("w", i), Name: "spawn_worker",
						Arguments: fmt.Sprintf(`{"task":"part %d","agent":"writer"}`, i)})
				}
				calls = append(calls, core.ToolCall{ID: "d", Name: "delegate_task",
					Arguments: `{"goals":["x","y","z"],"agent":"researcher"}`})
				return &core.Response{ToolCalls: calls}, nil
			}
			return &core.Response{Text: "ok"}, nil
		})
		model.Answer("writer", func(req *core.Request) (*core.Response, error) {
			if req.Step == 1 {
				return &core.Response{ToolCalls: []core.ToolCall{{ID: "f", Name: "write_file",
					Arguments: `{"path":"shared.md","content":"` + lastUser(req) + `"}`}}}, nil
			}
			return &core.Response{Text: "wrote " + lastUser(req)}, nil
		})
		model.Answer("researcher", func(req *core.Request) (*core.Response, error) {
			return &core.Response{Text: strings.ToUpper(lastUser(req))}, nil
		})
		var mu sync.Mutex
		completes, firstTurnEnded := 0, false
		var lastSeq uint64
		inOrder := true
		done := make(chan struct{})
		p, err := platform.New(platform.Options{
			Core:   core.Options{Provider: model, Clock: clockwork.NewFakeClockAt(epoch), IDs: &core.SequentialIDs{}},
			Agents: map[string]*core.Agent{"coordinator": agent("coordinator"), "writer": agent("writer"), "researcher": agent("researcher")},
			Observer: platform.ObserverFunc(func(e platform.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Seq != lastSeq+1 {
					inOrder = false
				}
				lastSeq = e.Seq
				was := completes == 3 && firstTurnEnded
				switch {
				case e.Type == platform.EventWorkerComplete:
					completes++
				case e.Type == platform.EventTurnEnd && e.Turn == 1 && e.Session == "session-1":
					firstTurnEnded = true
				}
				if !was && completes == 3 && firstTurnEnded {
					close(done)
				}
			}),
		})
		Expect(err).NotTo(HaveOccurred())
		root, err := p.NewSession(platform.SessionOptions{Agent: "coordinator", User: "ada"})
		Expect(err).NotTo(HaveOccurred())
		Expect(root).To(Equal("session-1"))
		Expect(p.Send(root, "go")).To(Succeed())
		select {
		case <-done:
		case <-ctx.Done():
			Fail("the workers never completed")
		}
		Expect(p.Close()).To(Succeed())
		mu.Lock()
		Expect(inOrder).To(BeTrue(), "the observer saw every event once, in sequence order")
		mu.Unlock()

		out, ok := toolResult(mustInfo(p, root), "delegate_task")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring(`"response":"X"`))
		Expect(out).To(ContainSubstring(`"response":"Z"`))
		Expect(len(p.Findings())).To(BeNumerically(">=", 2), "three workers wrote shared.md")
		Expect(noLeaks()).To(Succeed())
	}, SpecTimeout(30*time.Second))
})

func mustInfo(p *platform.Platform, id string) platform.SessionInfo {
	info, ok := p.Session(id)
	ExpectWithOffset(1, ok).To(BeTrue())
	return info
}
