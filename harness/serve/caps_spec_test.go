package serve_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/serve"
)

var _ = Describe("the caps invariant's result wait in real time", func() {
	// waitedResult drives the research coordinator to its uncapped work
	// result and answers it after the client waited waited: its 30 s, plus
	// what the network and its runtime add.
	waitedResult := func(ctx SpecContext, waited time.Duration) []harness.Violation {
		s := serveScenario(builtin("research-coordinator"), serve.Options{})
		first := firstCoordinatorRequest("crux-sim/research-coordinator")
		resp, err := s.client.CreateChatCompletion(ctx, first)
		Expect(err).NotTo(HaveOccurred())
		second := secondRequest(first, resp.Choices[0].Message, nil)
		resp, err = s.client.CreateChatCompletion(ctx, second) // work result, timeout 1s
		Expect(err).NotTo(HaveOccurred())
		running := `{"work":` + workRef + `,"targetLabel":"research","state":"running","attachment":"attached","attempt":1,"createdAt":"2026-01-01T00:00:00Z","resultAvailable":false}`
		next := func(prev goopenai.ChatCompletionRequest, answer goopenai.ChatCompletionMessage, status string) goopenai.ChatCompletionRequest {
			req := prev
			req.Messages = append(append([]goopenai.ChatCompletionMessage(nil), prev.Messages[:len(prev.Messages)-1]...), answer,
				goopenai.ChatCompletionMessage{Role: "tool", ToolCallID: answer.ToolCalls[0].ID, Content: running},
				goopenai.ChatCompletionMessage{Role: "system", Content: status})
			return req
		}
		third := next(second, resp.Choices[0].Message, "Background work:\n- w-1 · research · running 1s")
		resp, err = s.client.CreateChatCompletion(ctx, third) // work result, no timeout: the 30 s cap
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Choices[0].Message.ToolCalls[0].Function.Arguments).NotTo(ContainSubstring("timeout"))
		s.clock.Advance(waited)
		_, err = s.client.CreateChatCompletion(ctx, next(third, resp.Choices[0].Message, "Background work:\n- w-1 · research · running 31s"))
		Expect(err).NotTo(HaveOccurred())
		var caps []harness.Violation
		for _, v := range s.srv.Finish("done").Outcome.Violations {
			if v.Invariant == "caps" {
				caps = append(caps, v)
			}
		}
		return caps
	}

	It("allows a wait of the 30 s cap plus network time, within the documented tolerance", func(ctx SpecContext) {
		Expect(waitedResult(ctx, core.MaxResultWait+250*time.Millisecond)).To(BeEmpty())
		Expect(waitedResult(ctx, core.MaxResultWait+serve.ResultWaitTolerance)).To(BeEmpty())
	})

	It("still breaks on a wait past the cap and the tolerance", func(ctx SpecContext) {
		caps := waitedResult(ctx, core.MaxResultWait+serve.ResultWaitTolerance+time.Millisecond)
		Expect(caps).To(HaveLen(1))
		Expect(caps[0].Message).To(Equal("a result call of research-coordinator#1 waited 32.001s (cap 30s, and 2s for real time)"))
	})
})
