package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/internal/fixture"
)

const (
	findings    = `{"summary":"Chlorophyll breaks down in autumn, revealing carotenoids.","findings":["Carotenoids were there all summer."]}`
	finalAnswer = "Leaves change colour because chlorophyll breaks down and reveals other pigments."
)

// researchAgents is seed 02's research coordinator (the shared fixture).
func researchAgents() *core.Agent { return fixture.Coordinator(fixture.ResearchAgent()) }

// modelPlaysCoordinator answers like a model would, from what each request
// shows: it first sends a call whose arguments are broken JSON, corrects it
// after the runtime's error, starts research in the background, asks for
// the result by the id in the work.ref, and answers once the result is in.
func modelPlaysCoordinator(_ int, req wireRequest) reply {
	if req.Messages[0].text() == fixture.ResearchSystem {
		return textReply(findings)
	}
	var last wireMessage
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "system" {
			continue // the trailing status block
		}
		last = m
		break
	}
	switch {
	case last.Role == "user":
		return toolCallsReply([3]string{"call_1", "research", `{"question": "Why do leaves change colour?", "run_in_background": tru`})
	case strings.Contains(last.text(), `"state":"failed"`):
		return textReply("The research failed; I cannot answer.")
	case strings.Contains(last.text(), `"invalid_arguments"`):
		return toolCallsReply([3]string{"call_2", "research", `{"question":"Why do leaves change colour?","run_in_background":true}`})
	case strings.Contains(last.text(), `"work.ref"`):
		var ref core.WorkRef
		if err := json.Unmarshal([]byte(last.text()), &ref); err != nil {
			return errorReply(400, "bad ref: "+err.Error(), "invalid_request_error", nil, nil)
		}
		return toolCallsReply([3]string{"call_3", "work", fmt.Sprintf(`{"action":"result","id":%q}`, ref.ID)})
	case last.text() == findings:
		return textReply(finalAnswer)
	}
	return errorReply(400, "the test model is lost at: "+last.text(), "invalid_request_error", nil, nil)
}

var _ = Describe("A coordinator with a backgroundable child, against an OpenAI-compatible server", func() {
	It("runs to its answer, and the work.ref, the status blocks and the result all cross the wire", func() {
		srv := newChatServer(modelPlaysCoordinator)
		DeferCleanup(srv.Close)
		clock := clockwork.NewFakeClock()
		rt := core.New(core.Options{
			Provider: openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "gpt-test", Clock: clock}),
			Clock:    clock,
			IDs:      &core.SequentialIDs{},
		})
		DeferCleanup(rt.Close)

		res, err := rt.Run(context.Background(), researchAgents(), fixture.Ask("Why do leaves change colour?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal(finalAnswer))

		var coord, child []wireRequest
		for _, r := range srv.received() {
			if r.Body.Messages[0].text() == fixture.ResearchSystem {
				child = append(child, r.Body)
			} else {
				coord = append(coord, r.Body)
			}
		}
		Expect(coord).To(HaveLen(4))
		Expect(child).To(HaveLen(1))

		By("offering the child tool and then the automatic work tool")
		Expect(coord[0].Tools).To(HaveLen(2))
		Expect(coord[0].Tools[0].Function.Name).To(Equal("research"))
		Expect(string(coord[0].Tools[0].Function.Parameters)).To(ContainSubstring(`"run_in_background"`))
		Expect(coord[0].Tools[1].Function.Name).To(Equal("work"))

		By("answering the broken arguments with a model-facing error, not a failed step")
		tool1 := coord[1].Messages[len(coord[1].Messages)-1]
		Expect(tool1.Role).To(Equal("tool"))
		Expect(tool1.ToolCallID).To(Equal("call_1"))
		Expect(tool1.text()).To(ContainSubstring(`"code":"invalid_arguments"`))
		Expect(coord[1].Messages[len(coord[1].Messages)-2].ToolCalls[0].Function.Arguments).
			To(Equal(`{"question": "Why do leaves change colour?", "run_in_background": tru`), "the broken arguments go back verbatim")

		By("returning a work.ref to the background call")
		msgs := coord[2].Messages
		status := msgs[len(msgs)-1]
		refMsg := msgs[len(msgs)-2]
		Expect(refMsg.Role).To(Equal("tool"))
		Expect(refMsg.ToolCallID).To(Equal("call_2"))
		Expect(refMsg.text()).To(MatchJSON(`{"kind":"work.ref","id":"w-1","targetId":"research-agent","guarantees":{"execution":"process-local","rejoin":"process-local"}}`))

		By("carrying a trailing status block about the Work, without its output")
		Expect(status.Role).To(Equal("system"))
		Expect(status.text()).To(MatchRegexp(`^Background work:\n- w-1 · research · (queued|running|completed) 0s( · Result available)?$`))

		By("rejoining the child's exact output only through an explicit result")
		msgs = coord[3].Messages
		Expect(msgs[len(msgs)-3].ToolCalls[0].Function.Arguments).To(Equal(`{"action":"result","id":"w-1"}`))
		Expect(msgs[len(msgs)-2].Role).To(Equal("tool"))
		Expect(msgs[len(msgs)-2].text()).To(Equal(findings))
		Expect(msgs[len(msgs)-1].text()).To(Equal("Background work:\n- w-1 · research · completed 0s · Result available"))
		for i, r := range coord {
			for j, m := range r.Messages {
				if m.Role == "system" {
					Expect(m.text()).NotTo(ContainSubstring("Chlorophyll"), "request %d message %d leaks child output into a system block", i+1, j)
				}
			}
		}
		for _, m := range coord[2].Messages {
			Expect(m.text()).NotTo(Equal(findings), "no child output before the result action")
		}

		By("running the child in isolation, with a strict structured output")
		Expect(child[0].Messages).To(HaveLen(2))
		Expect(child[0].Messages[1].text()).To(Equal("Why do leaves change colour?"))
		Expect(child[0].Tools).To(BeEmpty())
		Expect(child[0].ResponseFormat.Type).To(Equal("json_schema"))
		Expect(child[0].ResponseFormat.JSONSchema.Strict).To(BeTrue())

		Expect(rt.Works()).To(ConsistOf(And(
			HaveField("State", core.WorkState("completed")),
			HaveField("Label", "research"),
			HaveField("Rejoined", true),
		)))
	})

	It("fails a background child whose provider keeps failing, and the coordinator sees only the failed state", func() {
		srv := newChatServer(func(n int, req wireRequest) reply {
			if req.Messages[0].text() == fixture.ResearchSystem {
				return errorReply(400, "Invalid 'response_format': secret internal detail", "invalid_request_error", nil, nil)
			}
			return modelPlaysCoordinator(n, req)
		})
		DeferCleanup(srv.Close)
		clock := clockwork.NewFakeClock()
		rt := core.New(core.Options{
			Provider: openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "gpt-test", Clock: clock}),
			Clock:    clock,
			IDs:      &core.SequentialIDs{},
		})
		DeferCleanup(rt.Close)

		res, err := rt.Run(context.Background(), researchAgents(), fixture.Ask("Why do leaves change colour?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal("The research failed; I cannot answer."))
		var resultMsg string
		for _, r := range srv.received() {
			msgs := r.Body.Messages
			for i, m := range msgs {
				if m.Role == "tool" && m.ToolCallID == "call_3" {
					resultMsg = msgs[i].text()
				}
			}
		}
		Expect(resultMsg).To(ContainSubstring(`"state":"failed"`))
		Expect(resultMsg).To(ContainSubstring(`"resultAvailable":false`))
		Expect(resultMsg).NotTo(ContainSubstring("secret internal detail"))
		Expect(rt.Works()).To(ConsistOf(HaveField("State", core.WorkState("failed"))))
	})
})
