package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

const (
	question          = "Why do leaves change color in autumn?"
	coordinatorSystem = `You coordinate a research task.
1. Call research with run_in_background: true and retain its Work reference.
2. While it runs, draft an answer outline without inventing findings.
3. On a later model step, use the automatic work tool with action "result"
   and the retained id. If status is returned, wait or continue independent work.
4. Use the exact research result before writing the final answer.
`
)

// coordinatorTools are the tools a conforming runtime offers the
// research-coordinator: research with the reserved flag, and work with the
// contract's schema.
func coordinatorTools() []goopenai.Tool {
	research := json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"},"run_in_background":{"type":"boolean"}},"required":["question"]}`)
	return []goopenai.Tool{
		{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: "research", Parameters: research}},
		{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: "work", Parameters: core.WorkToolSchema()}},
	}
}

func firstCoordinatorRequest(model string) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{Model: model, Tools: coordinatorTools(), Messages: []goopenai.ChatCompletionMessage{
		{Role: "system", Content: coordinatorSystem}, {Role: "user", Content: question}}}
}

// post sends a raw body and returns the status and the decoded error body.
func (s *served) post(path, body string) (int, map[string]any) {
	resp, err := http.Post(s.http.URL+path, "application/json", strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	var doc map[string]any
	Expect(json.Unmarshal(raw, &doc)).To(Succeed(), string(raw))
	return resp.StatusCode, doc
}

func errorOf(doc map[string]any) map[string]any {
	e, ok := doc["error"].(map[string]any)
	Expect(ok).To(BeTrue(), "an OpenAI error body: %v", doc)
	Expect(e).To(HaveKey("message"))
	Expect(e).To(HaveKey("type"))
	return e
}

var _ = Describe("serve, driven by go-openai", func() {
	It("answers a request from the agent's script, as the scripted provider does in-process", func(ctx SpecContext) {
		s := serveScenario(builtin("research-coordinator"), serve.Options{})
		resp, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("crux-sim/research-coordinator"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Object).To(Equal("chat.completion"))
		Expect(resp.Choices).To(HaveLen(1))
		Expect(resp.Choices[0].FinishReason).To(Equal(goopenai.FinishReasonToolCalls))
		calls := resp.Choices[0].Message.ToolCalls
		Expect(calls).To(HaveLen(1))
		Expect(calls[0].ID).To(Equal("call-1"))
		Expect(calls[0].Type).To(Equal(goopenai.ToolTypeFunction))
		Expect(calls[0].Function.Name).To(Equal("research"))
		Expect(calls[0].Function.Arguments).To(MatchJSON(`{"question":"` + question + `","run_in_background":true}`))

		res := s.srv.Finish("done")
		t := res.Outcome.Trace
		Expect(t.Entries[1].Kind).To(BeEquivalentTo("request"))
		Expect(t.Entries[1].Tools()).To(Equal([]string{"research", "work"}))
		Expect(t.Entries[1].Messages()).To(Equal([]core.Message{{Role: core.RoleUser, Content: question}}))
		Expect(res.Outcome.Violations).To(BeEmpty(), "the tools offered are the contract's")
	})

	It("streams the same answer as server-sent events that go-openai's stream reader assembles", func(ctx SpecContext) {
		s := serveScenario(builtin("research-coordinator"), serve.Options{})
		req := firstCoordinatorRequest("crux-sim/research-coordinator")
		req.Stream = true
		req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
		stream, err := s.client.CreateChatCompletionStream(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		defer stream.Close()
		var id, name, args, finish, role string
		chunks, usage := 0, false
		for {
			c, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Object).To(Equal("chat.completion.chunk"))
			chunks++
			if c.Usage != nil {
				usage = true
			}
			for _, ch := range c.Choices {
				if ch.Delta.Role != "" {
					role = ch.Delta.Role
				}
				for _, tc := range ch.Delta.ToolCalls {
					Expect(*tc.Index).To(Equal(0))
					if tc.ID != "" {
						id = tc.ID
					}
					name += tc.Function.Name
					args += tc.Function.Arguments
				}
				if ch.FinishReason != "" {
					finish = string(ch.FinishReason)
				}
			}
		}
		Expect(role).To(Equal("assistant"))
		Expect(id).To(Equal("call-1"))
		Expect(name).To(Equal("research"))
		Expect(args).To(MatchJSON(`{"question":"` + question + `","run_in_background":true}`))
		Expect(finish).To(Equal("tool_calls"))
		Expect(chunks).To(BeNumerically(">", 4), "the arguments come in pieces")
		Expect(usage).To(BeTrue())
	})

	It("waits out a turn's scripted latency on its clock before it answers", func(ctx SpecContext) {
		s := serveScenario(builtin("research-coordinator"), serve.Options{})
		got := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			resp, err := s.client.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "crux-sim/research-agent",
				Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: question}}})
			Expect(err).NotTo(HaveOccurred())
			got <- resp.Choices[0].Message.Content
		}()
		Expect(s.clock.BlockUntilContext(ctx, 1)).To(Succeed())
		s.clock.Advance(3999 * time.Millisecond)
		Consistently(got).ShouldNot(Receive(), "not before the 4s the script says")
		s.clock.Advance(time.Millisecond)
		var content string
		Eventually(got).Should(Receive(&content))
		Expect(content).To(ContainSubstring("Anthocyanins"))
	})

	Describe("telling which agent is calling", func() {
		It("by the model crux-sim/<agent>, or else by the system text and tools of exactly one agent", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			resp, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("gpt-4o-mini"))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Choices[0].Message.ToolCalls[0].Function.Name).To(Equal("research"))
			res := s.srv.Finish("done")
			Expect(res.Outcome.Trace.Entries[0].Run).To(Equal("research-coordinator#1"))
		})

		It("answers 404 model_not_found, as OpenAI answers a model it does not have, naming the candidates when it cannot tell", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			_, err := s.client.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "gpt-4o-mini",
				Messages: []goopenai.ChatCompletionMessage{{Role: "system", Content: "You are someone else."}, {Role: "user", Content: "hi"}}})
			var apiErr *goopenai.APIError
			Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
			Expect(apiErr.HTTPStatusCode).To(Equal(http.StatusNotFound))
			Expect(apiErr.Type).To(Equal("invalid_request_error"))
			Expect(apiErr.Code).To(Equal("model_not_found"))
			Expect(apiErr.Message).To(ContainSubstring("crux-sim/research-agent, crux-sim/research-coordinator"))

			_, err = s.client.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "crux-sim/nobody",
				Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
			Expect(errors.As(err, &apiErr)).To(BeTrue())
			Expect(apiErr.HTTPStatusCode).To(Equal(http.StatusNotFound))
			Expect(apiErr.Code).To(Equal("model_not_found"))
			Expect(apiErr.Message).To(ContainSubstring(`"crux-sim/nobody" names no agent`))

			res := s.srv.Finish("done")
			Expect(res.Outcome.Findings).To(ContainElement(ContainSubstring("request 1 refused with HTTP 404: cannot tell which agent")))
			Expect(res.Outcome.Findings).To(ContainElement(ContainSubstring("request 2 refused with HTTP 404")))
		})

		It("lists the agents as models", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			models, err := s.client.ListModels(ctx)
			Expect(err).NotTo(HaveOccurred())
			var ids []string
			for _, m := range models.Models {
				ids = append(ids, m.ID)
			}
			Expect(ids).To(Equal([]string{"crux-sim/research-agent", "crux-sim/research-coordinator"}))
		})
	})

	Describe("bad requests", func() {
		DescribeTable("get an OpenAI error body with a status a client handles, become findings, and never stop the server",
			func(body string, status int, message string) {
				s := serveScenario(builtin("research-coordinator"), serve.Options{})
				code, doc := s.post("/v1/chat/completions", body)
				Expect(code).To(Equal(status))
				Expect(errorOf(doc)["message"]).To(ContainSubstring(message))
				resp, err := s.client.CreateChatCompletion(context.Background(), firstCoordinatorRequest("crux-sim/research-coordinator"))
				Expect(err).NotTo(HaveOccurred(), "the server goes on: the next request is answered")
				Expect(resp.Choices[0].Message.ToolCalls).To(HaveLen(1))
				res := s.srv.Finish("done")
				Expect(res.Outcome.Findings).To(ContainElement(ContainSubstring(message)))
			},
			Entry("malformed JSON, with its line and column", "{\"model\": \"x\",\n \"messages\": [", http.StatusBadRequest, "the body is not JSON: line 2, column 14"),
			Entry("JSON of the wrong shape", `{"model":"x","messages":{"role":"user"}}`, http.StatusBadRequest, "line 1, column 25: messages is object"),
			Entry("no messages", `{"model":"crux-sim/research-agent","messages":[]}`, http.StatusBadRequest, "the request has no messages"),
			Entry("an unknown role", `{"model":"crux-sim/research-agent","messages":[{"role":"robot","content":"hi"}]}`, http.StatusBadRequest, `messages[0].role is "robot"`),
			Entry("a tool message without its call id", `{"model":"crux-sim/research-agent","messages":[{"role":"tool","content":"x"}]}`, http.StatusBadRequest, "without tool_call_id"),
			Entry("content of the wrong type", `{"model":"crux-sim/research-agent","messages":[{"role":"user","content":7}]}`, http.StatusBadRequest, "messages[0].content: want a string, null or an array"),
			Entry("a tool message that answers no call of the assistant message before it, which OpenAI refuses",
				`{"model":"crux-sim/research-coordinator","messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"call_9","content":"x"}]}`,
				http.StatusBadRequest, `messages[1] is a tool message for tool_call_id "call_9", which the assistant message it follows did not make`),
			Entry("an assistant message's tool call left without its tool message, which OpenAI refuses",
				`{"model":"crux-sim/research-coordinator","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"x"},{"role":"user","content":"go on"}]}`,
				http.StatusBadRequest, `messages[1] makes tool calls that no tool message answers before messages[3]: call_2`),
			Entry("stream_options without stream, which OpenAI refuses",
				`{"model":"crux-sim/research-coordinator","messages":[{"role":"user","content":"q"}],"stream_options":{"include_usage":true}}`,
				http.StatusBadRequest, "stream_options is allowed only when stream is true"),
			Entry("more than one choice asked for, which one scripted answer cannot give",
				`{"model":"crux-sim/research-coordinator","messages":[{"role":"user","content":"q"}],"n":2}`,
				http.StatusBadRequest, "n is 2"),
		)

		It("answers a request after the script ran dry with a 400 the client does not retry, and fails the run's script verdict", func(ctx SpecContext) {
			sc := scenarios.New("dry").Agent("solo", &core.Agent{ID: "solo", Prompt: core.Prompt{System: "Say hi."}}).Script("solo", scripted.Say("hi"))
			s := serveScenario(sc, serve.Options{})
			req := goopenai.ChatCompletionRequest{Model: "crux-sim/solo", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "one"}}}
			resp, err := s.client.CreateChatCompletion(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Choices[0].Message.Content).To(Equal("hi"))
			req.Messages[0].Content = "two"
			_, err = s.client.CreateChatCompletion(ctx, req)
			var apiErr *goopenai.APIError
			Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
			Expect(apiErr.HTTPStatusCode).To(Equal(http.StatusBadRequest))
			Expect(apiErr.Code).To(Equal("script_failed"))
			Expect(apiErr.Message).To(ContainSubstring(`agent "solo" ran dry at step 1 of run 2`))
			res := s.srv.Finish("done")
			Expect(res.Passed()).To(BeFalse())
			failed := map[string]bool{}
			for _, v := range res.Outcome.Verdicts {
				failed[v.Description] = failed[v.Description] || v.Failure != nil
			}
			Expect(failed).To(HaveKeyWithValue("the script covers every provider step", true))
		})

		It("answers a scripted provider error as a 500 server error with the scripted message", func(ctx SpecContext) {
			sc := builtin("research-coordinator")
			sc.Scripts = []scenarios.Script{{Agent: "research-agent", Turns: nil}}
			sc.Script("research-agent", scriptedError("upstream exploded"))
			s := serveScenario(sc, serve.Options{})
			code, doc := s.post("/v1/chat/completions", `{"model":"crux-sim/research-agent","messages":[{"role":"user","content":"q"}]}`)
			Expect(code).To(Equal(http.StatusInternalServerError))
			e := errorOf(doc)
			Expect(e["type"]).To(Equal("server_error"))
			Expect(e["message"]).To(Equal("scripted provider error: upstream exploded"))
			res := s.srv.Finish("done")
			t := res.Outcome.Trace
			Expect(t.Entries[len(t.Entries)-2].Err()).To(Equal("scripted provider error: upstream exploded"))
			Expect(t.Entries[len(t.Entries)-1].Kind).To(BeEquivalentTo("run-end"), "a run whose last step failed and that made no more requests ended with that error")
		})

		It("answers a scripted rate limit as OpenAI's 429, and a client's retry of the same history continues the same run", func(ctx SpecContext) {
			sc := scenarios.New("limited").Agent("solo", &core.Agent{ID: "solo", Prompt: core.Prompt{System: "Say hi."}}).
				Script("solo", scripted.Fail(&scenarios.ScriptedError{Message: "slow down", Status: http.StatusTooManyRequests}), scripted.Say("hi"))
			s := serveScenario(sc, serve.Options{})
			req := goopenai.ChatCompletionRequest{Model: "crux-sim/solo", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "one"}}}
			_, err := s.client.CreateChatCompletion(ctx, req)
			var apiErr *goopenai.APIError
			Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
			Expect(apiErr.HTTPStatusCode).To(Equal(http.StatusTooManyRequests))
			Expect(apiErr.Type).To(Equal("requests"))
			Expect(apiErr.Code).To(Equal("rate_limit_exceeded"))
			resp, err := s.client.CreateChatCompletion(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Choices[0].Message.Content).To(Equal("hi"))
			res := s.srv.Finish("done")
			var lines []string
			for i := range res.Outcome.Trace.Entries {
				lines = append(lines, trace.Line(&res.Outcome.Trace.Entries[i]))
			}
			Expect(lines).To(Equal([]string{
				"+0s     solo#1 start",
				"+0s     solo#1 request 1\n          user: one",
				"+0s     solo#1 response 1 error: scripted provider error: slow down",
				"+0s     solo#1 request 2",
				"+0s     solo#1 response 2\n          text \"hi\"",
				"+0s     solo#1 end output \"hi\"",
			}))
			Expect(res.Passed()).To(BeTrue())
		})

		It("refuses unknown routes and requests after the session ended", func() {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			code, doc := s.post("/v1/embeddings", `{}`)
			Expect(code).To(Equal(http.StatusNotFound))
			Expect(errorOf(doc)["message"]).To(ContainSubstring("unknown route POST /v1/embeddings"))
			s.srv.Finish("done")
			code, doc = s.post("/v1/chat/completions", `{"model":"crux-sim/research-agent","messages":[{"role":"user","content":"q"}]}`)
			Expect(code).To(Equal(http.StatusServiceUnavailable))
			Expect(errorOf(doc)["message"]).To(ContainSubstring("session is over"))
		})
	})

	Describe("methods", func() {
		It("answers a method a route does not take with 405, an OpenAI error and the Allow header HTTP requires", func() {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			for _, tc := range []struct{ method, path, allow string }{
				{http.MethodGet, "/v1/chat/completions", "POST"},
				{http.MethodPost, "/v1/models", "GET"},
				{http.MethodGet, "/crux-sim/finish", "POST"},
			} {
				req, err := http.NewRequest(tc.method, s.http.URL+tc.path, nil)
				Expect(err).NotTo(HaveOccurred())
				resp, err := http.DefaultClient.Do(req)
				Expect(err).NotTo(HaveOccurred())
				var doc map[string]any
				Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
				_ = resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), "%s %s", tc.method, tc.path)
				Expect(resp.Header.Get("Allow")).To(Equal(tc.allow), "%s %s", tc.method, tc.path)
				Expect(errorOf(doc)["code"]).To(Equal("method_not_allowed"), "%s %s", tc.method, tc.path)
			}
		})
	})

	Describe("ending the session", func() {
		It("answers POST /crux-sim/finish with the verdicts as crux-sim run --format json writes them", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			_, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(err).NotTo(HaveOccurred())
			code, doc := s.post("/crux-sim/finish", "")
			Expect(code).To(Equal(http.StatusOK))
			Expect(doc["scenario"]).To(Equal("research-coordinator"))
			Expect(doc["passed"]).To(BeFalse())
			Expect(doc["verdicts"]).To(HaveLen(6))
			Expect(doc).To(HaveKey("trace"))
			want, err := harness.ReportJSON(s.srv.Result().Outcome)
			Expect(err).NotTo(HaveOccurred())
			got, err := json.Marshal(doc)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(MatchJSON(want))
			Eventually(s.srv.Done()).Should(BeClosed())
		})

		It("names in the verdicts the seed that chose the faults, not a seed no one used", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{Seed: 7})
			_, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(err).NotTo(HaveOccurred())
			code, doc := s.post("/crux-sim/finish", "")
			Expect(code).To(Equal(http.StatusOK))
			Expect(doc["seed"]).To(BeNumerically("==", 7))
		})

		It("ends by itself after the idle timeout with no request", func(ctx SpecContext) {
			s := serveScenario(builtin("research-coordinator"), serve.Options{IdleTimeout: time.Minute})
			_, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(err).NotTo(HaveOccurred())
			s.clock.Advance(59 * time.Second)
			Consistently(s.srv.Done()).ShouldNot(BeClosed())
			_, err = s.client.ListModels(ctx)
			Expect(err).NotTo(HaveOccurred())
			s.clock.Advance(time.Second)
			Eventually(s.srv.Done()).Should(BeClosed())
			Expect(s.srv.Result().Reason).To(Equal("no request for 1m0s (the idle timeout)"))
		})
	})

	Describe("a cassette instead of the script", func() {
		record := func(name string) *cassette.Cassette {
			sc := builtin(name)
			var buf bytes.Buffer
			seed := int64(1)
			rec, err := cassette.NewRecorder(&buf, sc.Provider(scriptedOptions()), cassette.RecordOptions{
				Header: cassette.Header{Scenario: sc.Name, Seed: &seed, Model: sc.Run.Model}, Start: sim.Epoch})
			Expect(err).NotTo(HaveOccurred())
			Expect(harness.Run(sc, harness.Options{Seed: 1, Provider: rec}).Passed()).To(BeTrue())
			Expect(rec.Close()).To(Succeed())
			c, err := cassette.Read(&buf, name+".cassette")
			Expect(err).NotTo(HaveOccurred())
			return c
		}

		It("replays a recording to a client that makes the same requests, with no divergence", func(ctx SpecContext) {
			c := record("research-coordinator")
			s := serveScenario(builtin("research-coordinator"), serve.Options{Cassette: c})
			s.ownRuntime(ctx)
			res := s.srv.Finish("done")
			var text bytes.Buffer
			Expect(harness.WriteReport(&text, res.Outcome)).To(Succeed())
			Expect(res.Divergences).To(BeEmpty(), text.String())
			Expect(res.Passed()).To(BeTrue(), text.String())
		})

		It("reports a client that departs from the recording: the mismatch answered with a 400, the exchanges never asked for as extra", func(ctx SpecContext) {
			c := record("research-coordinator")
			s := serveScenario(builtin("research-coordinator"), serve.Options{Cassette: c})
			req := firstCoordinatorRequest("crux-sim/research-coordinator")
			req.Messages[1].Content = "Why is the sky blue?"
			_, err := s.client.CreateChatCompletion(ctx, req)
			var apiErr *goopenai.APIError
			Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
			Expect(apiErr.HTTPStatusCode).To(Equal(http.StatusBadRequest))
			Expect(apiErr.Message).To(ContainSubstring("replay mismatch"))
			res := s.srv.Finish("done")
			Expect(res.Passed()).To(BeFalse())
			kinds := map[cassette.DivergenceKind]bool{}
			for _, d := range res.Divergences {
				kinds[d.Kind] = true
			}
			Expect(kinds).To(HaveKey(cassette.Mismatch))
			Expect(kinds).To(HaveKey(cassette.Extra))
			Expect(res.Divergences[0].Error()).To(ContainSubstring("messages[0].content"))
		})
	})
})
