package serve_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/harness/serve"
)

const workRef = `{"kind":"work.ref","id":"w-1","targetId":"research-agent","guarantees":{"execution":"process-local","rejoin":"process-local"}}`

// secondRequest is a coordinator's second request after research started
// in the background: the first request's history, the answer, the
// work.ref, and a status block, each changed by edit to break one rule.
func secondRequest(first goopenai.ChatCompletionRequest, answer goopenai.ChatCompletionMessage, edit func(*goopenai.ChatCompletionRequest)) goopenai.ChatCompletionRequest {
	req := first
	req.Messages = append(append([]goopenai.ChatCompletionMessage(nil), first.Messages...), answer,
		goopenai.ChatCompletionMessage{Role: "tool", ToolCallID: answer.ToolCalls[0].ID, Content: workRef},
		goopenai.ChatCompletionMessage{Role: "system", Content: "Background work:\n- w-1 · research · running 0s"})
	if edit != nil {
		edit(&req)
	}
	return req
}

var _ = Describe("the rules only the wire shows", func() {
	DescribeTable("are checked on every request, and a broken one is a violation at the request that broke it",
		func(ctx SpecContext, editFirst, editSecond func(*goopenai.ChatCompletionRequest), invariant, message string) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			first := firstCoordinatorRequest("crux-sim/research-coordinator")
			if editFirst != nil {
				editFirst(&first)
			}
			resp, err := s.client.CreateChatCompletion(ctx, first)
			Expect(err).NotTo(HaveOccurred())
			_, err = s.client.CreateChatCompletion(ctx, secondRequest(first, resp.Choices[0].Message, editSecond))
			Expect(err).NotTo(HaveOccurred())
			res := s.srv.Finish("done")
			if invariant == "" {
				Expect(res.Outcome.Violations).To(BeEmpty())
				return
			}
			var names []string
			for _, v := range res.Outcome.Violations {
				names = append(names, v.Invariant)
				if v.Invariant == invariant {
					Expect(v.Message).To(ContainSubstring(message))
					Expect(v.Entry).To(BeNumerically(">", 0))
				}
			}
			Expect(names).To(ContainElement(invariant))
		},
		Entry("a client that keeps them", nil, nil, "", ""),
		Entry("the work tool's schema lacks an action", func(r *goopenai.ChatCompletionRequest) {
			var schema map[string]any
			Expect(json.Unmarshal(coordinatorTools()[1].Function.Parameters.(json.RawMessage), &schema)).To(Succeed())
			action := schema["properties"].(map[string]any)["action"].(map[string]any)
			action["enum"] = []string{"list", "status", "result", "cancel", "detach"}
			raw, err := json.Marshal(schema)
			Expect(err).NotTo(HaveOccurred())
			r.Tools[1].Function.Parameters = json.RawMessage(raw)
		}, nil, "work-tool-schema", "offers the work tool with parameters"),
		Entry("the work tool is not offered", func(r *goopenai.ChatCompletionRequest) { r.Tools = r.Tools[:1] }, nil,
			"work-tool-schema", "does not offer the work tool"),
		Entry("the child tool lacks run_in_background", func(r *goopenai.ChatCompletionRequest) {
			r.Tools[0].Function.Parameters = json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}}}`)
		}, nil, "background-flag", "without an optional boolean run_in_background"),
		Entry("a status row in another format", nil, func(r *goopenai.ChatCompletionRequest) {
			r.Messages[len(r.Messages)-1].Content = "Background work:\n- w-1 (research): running for 0 seconds"
		}, "status-format", "is not in the contract's format"),
		Entry("a status row of Work no work.ref returned", nil, func(r *goopenai.ChatCompletionRequest) {
			r.Messages[len(r.Messages)-1].Content += "\n- w-9 · research · running 0s"
		}, "status-owner-only", "names w-9, which no work.ref returned to it"),
		Entry("a status block kept in the history", nil, func(r *goopenai.ChatCompletionRequest) {
			blk := r.Messages[len(r.Messages)-1]
			r.Messages = append(r.Messages[:2:2], append([]goopenai.ChatCompletionMessage{blk}, r.Messages[2:]...)...)
		}, "status-not-stored", "keeps a status block in its history (messages[2])"),
		Entry("a work.ref with another target", nil, func(r *goopenai.ChatCompletionRequest) {
			r.Messages[3].Content = strings.Replace(workRef, "research-agent", "someone-else", 1)
		}, "work-ref-shape", `targetId "someone-else"`),
	)
})
