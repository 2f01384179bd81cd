package openai_test

import (
	"context"
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
)

// step sends one request to a fresh provider on srv and returns what the
// server received.
func step(srv *chatServer, opts openai.Options, req *core.Request) (*core.Response, error) {
	opts.BaseURL = srv.URL + "/v1"
	opts.HTTPClient = srv.Client()
	if opts.Timeout == 0 {
		opts.Timeout = openai.NoTimeout
	}
	return openai.New(opts).Step(context.Background(), req)
}

var _ = Describe("Sending a semantic request", func() {
	var srv *chatServer
	BeforeEach(func() {
		srv = newChatServer(func(int, wireRequest) reply { return textReply("ok") })
		DeferCleanup(srv.Close)
	})

	lastBody := func() wireRequest {
		got := srv.received()
		Expect(got).To(HaveLen(1))
		return got[0].Body
	}

	It("posts to {base}/chat/completions with the model, non-streaming", func() {
		_, err := step(srv, openai.Options{Model: "m-1"}, &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		got := srv.received()[0]
		Expect(got.Method).To(Equal("POST"))
		Expect(got.Path).To(Equal("/v1/chat/completions"))
		Expect(got.Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(got.Body.Model).To(Equal("m-1"))
		Expect(got.Body.Stream).To(BeFalse())
	})

	It("keeps a query string in the base URL as the query of every request, not part of its path", func() {
		opts := openai.Options{Model: "m", BaseURL: srv.URL + "/v1?api-key=K3y&tenant=t1", HTTPClient: srv.Client(), Timeout: openai.NoTimeout}
		_, err := openai.New(opts).Step(context.Background(), &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		got := srv.received()[0]
		Expect(got.Path).To(Equal("/v1/chat/completions"))
		Expect(got.Query).To(Equal("api-key=K3y&tenant=t1"))
	})

	It("prefers the request's model over Options.Model", func() {
		_, err := step(srv, openai.Options{Model: "fallback"}, &core.Request{Model: "chosen", Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(lastBody().Model).To(Equal("chosen"))
	})

	It("refuses to send without any model, before any HTTP request", func() {
		_, err := step(srv, openai.Options{}, &core.Request{Agent: "a", Step: 1})
		Expect(err).To(MatchError(openai.ErrNoModel))
		Expect(srv.count()).To(BeZero())
	})

	It("sends the system text first, then the history in order, then the status block as a trailing system message", func() {
		req := &core.Request{
			Agent: "coordinator", Step: 3, System: "You coordinate research.",
			Messages: []core.Message{
				{Role: core.RoleUser, Content: "Why do leaves change colour?"},
				{Role: core.RoleAssistant, Content: "Starting research.", ToolCalls: []core.ToolCall{
					{ID: "call_1", Name: "research", Arguments: `{"question":"leaves","run_in_background":true}`},
				}},
				{Role: core.RoleTool, ToolCallID: "call_1", ToolName: "research", Content: `{"kind":"work.ref","id":"w-1"}`},
				{Role: core.RoleUser, Content: "Focus on maples.", Guidance: true},
			},
			Status: &core.StatusBlock{Text: "Background work:\n- w-1 · research · running 4s"},
		}
		_, err := step(srv, openai.Options{Model: "m"}, req)
		Expect(err).NotTo(HaveOccurred())
		msgs := lastBody().Messages
		Expect(msgs).To(HaveLen(6))
		Expect(msgs[0].Role).To(Equal("system"))
		Expect(msgs[0].text()).To(Equal("You coordinate research."))
		Expect(msgs[1].Role).To(Equal("user"))
		Expect(msgs[1].text()).To(Equal("Why do leaves change colour?"))
		Expect(msgs[2].Role).To(Equal("assistant"))
		Expect(msgs[2].text()).To(Equal("Starting research."))
		Expect(msgs[2].ToolCalls).To(HaveLen(1))
		Expect(msgs[2].ToolCalls[0].ID).To(Equal("call_1"))
		Expect(msgs[2].ToolCalls[0].Type).To(Equal("function"))
		Expect(msgs[2].ToolCalls[0].Function.Name).To(Equal("research"))
		Expect(msgs[2].ToolCalls[0].Function.Arguments).To(Equal(`{"question":"leaves","run_in_background":true}`))
		Expect(msgs[3].Role).To(Equal("tool"))
		Expect(msgs[3].ToolCallID).To(Equal("call_1"))
		Expect(msgs[3].text()).To(Equal(`{"kind":"work.ref","id":"w-1"}`))
		Expect(msgs[4].Role).To(Equal("user"), "guidance is a user turn")
		Expect(msgs[4].text()).To(Equal("Focus on maples."))
		Expect(msgs[5].Role).To(Equal("system"))
		Expect(msgs[5].text()).To(Equal("Background work:\n- w-1 · research · running 4s"))
	})

	It("sends an empty tool result or user message with its content \"\": OpenAI refuses a message without content", func() {
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "a", Step: 2, Messages: []core.Message{
			{Role: core.RoleUser, Content: ""},
			{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "call_1", Name: "log", Arguments: `{}`}}},
			{Role: core.RoleTool, ToolCallID: "call_1", ToolName: "log", Content: ""},
		}})
		Expect(err).NotTo(HaveOccurred())
		msgs := lastBody().Messages
		Expect(msgs).To(HaveLen(3))
		for _, i := range []int{0, 2} {
			Expect(msgs[i].Content).NotTo(BeNil(), "messages[%d] (%s) has no content", i, msgs[i].Role)
			Expect(*msgs[i].Content).To(Equal(""))
		}
		Expect(msgs[1].ToolCalls).To(HaveLen(1), "an assistant message with tool calls needs no content")
		Expect(msgs[2].ToolCallID).To(Equal("call_1"))
	})

	It("sends no status message when the request has no status block", func() {
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "a", Step: 1, System: "s",
			Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}})
		Expect(err).NotTo(HaveOccurred())
		msgs := lastBody().Messages
		Expect(msgs).To(HaveLen(2))
		Expect(msgs[1].Role).To(Equal("user"))
	})

	It("sends the status block as a user message when StatusRole is user", func() {
		_, err := step(srv, openai.Options{Model: "m", StatusRole: openai.StatusAsUser}, &core.Request{Agent: "a", Step: 2,
			Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}},
			Status:   &core.StatusBlock{Text: "Background work:\n- w-1 · r · queued 0s"}})
		Expect(err).NotTo(HaveOccurred())
		msgs := lastBody().Messages
		Expect(msgs[len(msgs)-1].Role).To(Equal("user"))
		Expect(msgs[len(msgs)-1].text()).To(HavePrefix("Background work:"))
	})

	It("offers tools as function tools whose parameters are the ToolSpec's schema, in order", func() {
		params := `{"type":"object","properties":{"question":{"type":"string"},"run_in_background":{"type":"boolean"}},"required":["question"]}`
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "a", Step: 1, Tools: []core.ToolSpec{
			{Name: "research", Description: "Researches a question.", Parameters: json.RawMessage(params)},
			{Name: "work", Description: "Manage background work.", Parameters: json.RawMessage(`{"type":"object"}`)},
		}})
		Expect(err).NotTo(HaveOccurred())
		tools := lastBody().Tools
		Expect(tools).To(HaveLen(2))
		Expect(tools[0].Type).To(Equal("function"))
		Expect(tools[0].Function.Name).To(Equal("research"))
		Expect(tools[0].Function.Description).To(Equal("Researches a question."))
		Expect(tools[0].Function.Parameters).To(MatchJSON(params))
		Expect(tools[0].Function.Strict).To(BeFalse(), "optional run_in_background rules out strict function calling")
		Expect(tools[1].Function.Name).To(Equal("work"))
	})

	It("sends a strict json_schema response_format when the output schema fits the strict subset", func() {
		schema := `{"type":"object","properties":{"findings":{"type":"string"}},"required":["findings"],"additionalProperties":false}`
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "research agent", Step: 1, Output: core.MustSchema(schema)})
		Expect(err).NotTo(HaveOccurred())
		rf := lastBody().ResponseFormat
		Expect(rf).NotTo(BeNil())
		Expect(rf.Type).To(Equal("json_schema"))
		Expect(rf.JSONSchema.Name).To(Equal("research_agent"), "the name is restricted to [a-zA-Z0-9_-]")
		Expect(rf.JSONSchema.Strict).To(BeTrue())
		Expect(rf.JSONSchema.Schema).To(MatchJSON(schema))
	})

	It("sends a non-strict json_schema when the output schema is outside the strict subset", func() {
		schema := `{"type":"object","properties":{"findings":{"type":"string"},"sources":{"type":"array"}},"required":["findings"]}`
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "r", Step: 1, Output: core.MustSchema(schema)})
		Expect(err).NotTo(HaveOccurred())
		rf := lastBody().ResponseFormat
		Expect(rf.Type).To(Equal("json_schema"))
		Expect(rf.JSONSchema.Strict).To(BeFalse())
		Expect(rf.JSONSchema.Schema).To(MatchJSON(schema))
	})

	It("sends json_object or nothing when the endpoint needs it", func() {
		schema := core.MustSchema(`{"type":"object"}`)
		_, err := step(srv, openai.Options{Model: "m", Output: openai.OutputJSONObject}, &core.Request{Agent: "r", Step: 1, Output: schema})
		Expect(err).NotTo(HaveOccurred())
		_, err = step(srv, openai.Options{Model: "m", Output: openai.OutputNone}, &core.Request{Agent: "r", Step: 1, Output: schema})
		Expect(err).NotTo(HaveOccurred())
		got := srv.received()
		Expect(got[0].Body.ResponseFormat.Type).To(Equal("json_object"))
		Expect(got[0].Body.ResponseFormat.JSONSchema).To(BeNil())
		Expect(got[1].Body.ResponseFormat).To(BeNil())
	})

	It("sends no response_format for a request without an output schema", func() {
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(lastBody().ResponseFormat).To(BeNil())
		Expect(string(lastBody().Raw)).NotTo(ContainSubstring("response_format"))
	})

	It("sends the API key as a bearer token, the organization and extra headers", func() {
		_, err := step(srv, openai.Options{Model: "m", APIKey: "sk-test-123", Organization: "org-9",
			Headers: map[string][]string{"X-Title": {"crux-sim"}}}, &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		h := srv.received()[0].Header
		Expect(h.Get("Authorization")).To(Equal("Bearer sk-test-123"))
		Expect(h.Get("OpenAI-Organization")).To(Equal("org-9"))
		Expect(h.Get("X-Title")).To(Equal("crux-sim"))
	})

	It("sends no Authorization header without an API key, as local servers expect", func() {
		_, err := step(srv, openai.Options{Model: "m"}, &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.received()[0].Header.Values("Authorization")).To(BeEmpty())
	})

	It("sends a zero temperature, a seed and max_tokens when set", func() {
		zero, seed := float32(0), 7
		_, err := step(srv, openai.Options{Model: "m", Temperature: &zero, Seed: &seed, MaxTokens: 256}, &core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		b := lastBody()
		Expect(b.Temperature).NotTo(BeNil(), "a zero temperature must not be dropped")
		Expect(*b.Temperature).To(BeNumerically("~", 0, 1e-30))
		Expect(b.Seed).To(HaveValue(Equal(7)))
		Expect(b.MaxTokens).To(Equal(256))
	})

	It("speaks Azure: deployment in the path, api-version in the query, the key as api-key", func() {
		_, err := step(srv, openai.Options{Model: "gpt-4o", APIKey: "azure-key", Azure: &openai.Azure{APIVersion: "2024-10-21"}},
			&core.Request{Agent: "a", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		got := srv.received()[0]
		Expect(got.Path).To(Equal("/v1/openai/deployments/gpt-4o/chat/completions"))
		Expect(got.Query).To(Equal("api-version=2024-10-21"))
		Expect(got.Header.Get("api-key")).To(Equal("azure-key"))
		Expect(got.Header.Values("Authorization")).To(BeEmpty())
	})
})

var _ = Describe("Reading the answer", func() {
	answer := func(rep reply, req *core.Request) (*core.Response, string, error) {
		srv := newChatServer(func(int, wireRequest) reply { return rep })
		defer srv.Close()
		p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "m", Timeout: openai.NoTimeout})
		return p.StepWithFinishReason(context.Background(), req)
	}
	plain := &core.Request{Agent: "a", Step: 4}

	It("returns the text, the usage and the finish reason", func() {
		resp, reason, err := answer(textReply("Leaves change colour because chlorophyll breaks down."), plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("Leaves change colour because chlorophyll breaks down."))
		Expect(resp.ToolCalls).To(BeEmpty())
		Expect(resp.Usage).To(Equal(&core.Usage{PromptTokens: 10, CompletionTokens: 5}))
		Expect(reason).To(Equal("stop"))
	})

	It("returns tool calls with their ids, in order", func() {
		resp, reason, err := answer(toolCallsReply(
			[3]string{"call_a", "research", `{"question":"q","run_in_background":true}`},
			[3]string{"call_b", "work", `{"action":"list"}`}), plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(reason).To(Equal("tool_calls"))
		Expect(resp.ToolCalls).To(Equal([]core.ToolCall{
			{ID: "call_a", Name: "research", Arguments: `{"question":"q","run_in_background":true}`},
			{ID: "call_b", Name: "work", Arguments: `{"action":"list"}`},
		}))
	})

	It("reads an answer from a server that types the fields the runtime never reads its own way: created as a float, ids and usage as other numbers", func() {
		resp, reason, err := answer(reply{Body: `{"id":17,"object":"chat.completion","created":1767225600.25,"model":"m","system_fingerprint":3,` +
			`"choices":[{"index":"0","message":{"role":"assistant","content":null,"tool_calls":[{"id":7,"type":"function","function":{"name":"work","arguments":"{\"action\":\"list\"}"}}]},"finish_reason":"tool_calls","logprobs":[]}],` +
			`"usage":{"prompt_tokens":12.0,"completion_tokens":3,"total_tokens":"15"}}`}, plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(reason).To(Equal("tool_calls"))
		Expect(resp.ToolCalls).To(Equal([]core.ToolCall{{ID: "7", Name: "work", Arguments: `{"action":"list"}`}}))
		Expect(resp.Usage).To(Equal(&core.Usage{PromptTokens: 12, CompletionTokens: 3}))
	})

	It("keeps tool-call arguments a server sends as a JSON object, as the text it wrote", func() {
		resp, _, err := answer(reply{Body: `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"work","arguments":{ "action": "result", "id": "w-1" }}}]},"finish_reason":"tool_calls"}]}`}, plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.ToolCalls).To(Equal([]core.ToolCall{{ID: "c1", Name: "work", Arguments: `{ "action": "result", "id": "w-1" }`}}))
	})

	It("still reports JSON that is not a chat completion as ErrBadResponse", func() {
		for _, body := range []string{`{"choices":{"message":"hi"}}`, `{"choices":[{"message":{"content":42}}]}`, `[1,2]`} {
			_, _, err := answer(reply{Body: body}, plain)
			Expect(err).To(MatchError(openai.ErrBadResponse), body)
		}
	})

	It("keeps tool-call arguments that are not valid JSON verbatim instead of failing the step", func() {
		resp, _, err := answer(toolCallsReply([3]string{"call_x", "research", `{"question": "unterminated`}), plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.ToolCalls).To(HaveLen(1))
		Expect(resp.ToolCalls[0].Arguments).To(Equal(`{"question": "unterminated`))
	})

	It("gives tool calls without ids an id unique in the run, so results can answer them", func() {
		body := completionBody(map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "a", "arguments": "{}"}},
			map[string]any{"type": "function", "function": map[string]any{"name": "b", "arguments": "{}"}},
		}}, "tool_calls")
		resp, _, err := answer(reply{Body: body}, plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.ToolCalls[0].ID).To(Equal("call_4_1"))
		Expect(resp.ToolCalls[1].ID).To(Equal("call_4_2"))
	})

	It("returns a JSON answer to an output schema as the structured output", func() {
		req := &core.Request{Agent: "r", Step: 1, Output: core.MustSchema(`{"type":"object"}`)}
		resp, _, err := answer(textReply(` {"findings":"chlorophyll"} `), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Output).To(MatchJSON(`{"findings":"chlorophyll"}`))
		Expect(resp.Text).To(BeEmpty())
	})

	It("returns a JSON answer to an output schema byte for byte as the server wrote it: spaces, key order, escapes", func() {
		req := &core.Request{Agent: "r", Step: 1, Output: core.MustSchema(`{"type":"object"}`)}
		doc := "\n{\"summary\": \"caf\\u00e9\",\n  \"findings\": [ \"a\" ]}  "
		resp, _, err := answer(textReply(doc), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(resp.Output)).To(Equal(doc))
	})

	It("returns a non-JSON answer to an output schema as text, for the runtime to correct", func() {
		req := &core.Request{Agent: "r", Step: 1, Output: core.MustSchema(`{"type":"object"}`)}
		resp, _, err := answer(textReply("Sure! Here are the findings"), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Output).To(BeEmpty())
		Expect(resp.Text).To(Equal("Sure! Here are the findings"))
	})

	It("passes a structured-output refusal on as text", func() {
		req := &core.Request{Agent: "r", Step: 1, Output: core.MustSchema(`{"type":"object"}`)}
		resp, _, err := answer(reply{Body: completionBody(map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."}, "stop")}, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("I can't help with that."))
	})

	It("fails with ErrContentFiltered when the filter withheld the whole answer", func() {
		_, reason, err := answer(reply{Body: completionBody(map[string]any{"role": "assistant", "content": nil}, "content_filter")}, plain)
		Expect(err).To(MatchError(openai.ErrContentFiltered))
		Expect(reason).To(Equal("content_filter"))
	})

	It("fails with ErrLength when the token limit came before any output, and passes partial text on otherwise", func() {
		_, _, err := answer(reply{Body: completionBody(map[string]any{"role": "assistant", "content": ""}, "length")}, plain)
		Expect(err).To(MatchError(openai.ErrLength))
		resp, reason, err := answer(reply{Body: completionBody(map[string]any{"role": "assistant", "content": "Leaves chan"}, "length")}, plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("Leaves chan"))
		Expect(reason).To(Equal("length"))
	})

	It("accepts a legacy function_call as one tool call", func() {
		resp, _, err := answer(reply{Body: completionBody(map[string]any{"role": "assistant",
			"function_call": map[string]any{"name": "research", "arguments": `{"question":"q"}`}}, "function_call")}, plain)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.ToolCalls).To(Equal([]core.ToolCall{{ID: "call_4_1", Name: "research", Arguments: `{"question":"q"}`}}))
	})

	It("does not modify the request it was given", func() {
		req := &core.Request{Agent: "a", Step: 1, System: "s", Messages: []core.Message{{Role: core.RoleUser, Content: "x"}},
			Status: &core.StatusBlock{Text: "Background work:"}}
		before, _ := json.Marshal(req)
		_, _, err := answer(textReply("ok"), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Marshal(req)).To(MatchJSON(before))
	})

	It("reports an error that is not an *Error only for cancellation", func() {
		_, _, err := answer(reply{Status: 400, Body: `{"error":{"message":"bad","type":"invalid_request_error"}}`}, plain)
		var e *openai.Error
		Expect(errors.As(err, &e)).To(BeTrue())
	})
})
