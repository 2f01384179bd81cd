package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/internal/fixture/thirdparty"
)

// This file is the spec of what OpenAI-compatible servers written elsewhere
// actually send, case by case, each named after the rule it checks and the
// server it comes from. The bodies are written from those servers'
// documented or observed output; a case whose shape is less certain says so
// in its name ("unsure"). The success bodies are the shared table of
// internal/fixture/thirdparty, which harness/cassette records and replays
// too; the failures are here. The same bodies seed FuzzResponseDecoding.

// wireCase is one answer a server gives and what the provider must make of
// it: a response (want, reason) or a failure (kind, message, says).
type wireCase struct {
	rule string
	rep  reply
	// opts adjusts the provider (a client, headers) for the case.
	opts func(*openai.Options)
	// req is the request; default a plain one at step 4.
	req *core.Request

	want   *core.Response
	reason string

	kind error
	// message, typ and code are the *Error's fields, when set.
	message, typ, code string
	// says are substrings the error's text must hold.
	says []string
	// retryAfter is the wait the error reports the server asked for.
	retryAfter time.Duration
}

// theKey is the API key every case's provider holds; no error may show it.
const theKey = "sk-proj-Q2x9WvT4mZ7yK1nB8cR3"

// retryClock is the fake clock of the Retry-After cases, and inAMinute
// and a half its time 90s later.
var (
	retryClock = clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inAMinute  = retryClock.Now().Add(90 * time.Second)
)

func onRetryClock(o *openai.Options) { o.Clock = retryClock }

// answers are the success bodies of the shared third-party table, and the
// response each is.
var answers = func() []wireCase {
	var out []wireCase
	for _, a := range thirdparty.Answers {
		out = append(out, wireCase{rule: a.Rule, rep: reply{Header: a.Header, Body: a.Body}, opts: a.Opts, req: a.Req, want: a.Want, reason: a.Reason})
	}
	return out
}()

// failures are bodies and statuses real servers send when something went
// wrong, and the *Error each must be. Every one is checked to hold no
// credential and to be bounded in size.
var failures = []wireCase{
	{
		rule:    `vLLM: an error body {"object":"error","message":...,"type":...,"code":400} gives its message, type and code`,
		rep:     reply{Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`},
		kind:    openai.ErrBadRequest,
		message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", typ: "BadRequestError", code: "400",
		says: []string{"HTTP 400 Bad Request", "maximum context length is 4096 tokens"},
	},
	{
		rule:    "vLLM: an unknown model is a 404 in the same shape",
		rep:     reply{Status: 404, Body: `{"object":"error","message":"The model ` + "`gpt-4`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`},
		kind:    openai.ErrBadRequest,
		message: "The model `gpt-4` does not exist.", typ: "NotFoundError", code: "404",
	},
	{
		rule:    `TGI: {"error":"plain string","error_type":...} gives the string as the message and error_type as the type`,
		rep:     reply{Status: 422, Body: `{"error":"Input validation error: ` + "`inputs`" + ` tokens + ` + "`max_new_tokens`" + ` must be <= 4096. Given: 4000 ` + "`inputs`" + ` tokens and 500 ` + "`max_new_tokens`" + `","error_type":"validation"}`},
		kind:    openai.ErrBadRequest,
		message: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`", typ: "validation",
	},
	{
		rule:    `LiteLLM and Ollama's native API (LiteLLM unsure): {"error":"plain string"} gives the string as the message`,
		rep:     reply{Status: 404, Body: `{"error":"model \"llama3\" not found, try pulling it first"}`},
		kind:    openai.ErrBadRequest,
		message: `model "llama3" not found, try pulling it first`,
	},
	{
		rule:    `LiteLLM proxy: an OpenAI-shaped error whose code is a string of the status and whose param is "None"`,
		rep:     reply{Status: 401, Body: `{"error":{"message":"Authentication Error, Invalid proxy server token passed.","type":"auth_error","param":"None","code":"401"}}`},
		kind:    openai.ErrAuth,
		message: "Authentication Error, Invalid proxy server token passed.", typ: "auth_error", code: "401",
	},
	{
		rule:    `FastAPI-based servers (vLLM, LiteLLM) on an unknown route: {"detail":"Not Found"} gives the detail as the message`,
		rep:     reply{Status: 404, Body: `{"detail":"Not Found"}`},
		kind:    openai.ErrBadRequest,
		message: "Not Found",
	},
	{
		rule:    "llama.cpp server: an error object whose code is a number and that has fields of its own",
		rep:     reply{Status: 400, Body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`},
		kind:    openai.ErrBadRequest,
		message: "the request exceeds the available context size, try increasing it", typ: "exceed_context_size_error", code: "400",
	},
	{
		rule:    "llama.cpp server: a model still loading is a 503 ErrServer, retryable",
		rep:     reply{Status: 503, Body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`},
		kind:    openai.ErrServer,
		message: "Loading model", typ: "unavailable_error", code: "503",
	},
	{
		rule:    "Azure: a prompt refused by the content filter is a 400 with type null and code content_filter",
		rep:     reply{Status: 400, Body: `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`},
		kind:    openai.ErrBadRequest,
		message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", code: "content_filter",
	},
	{
		rule: `"choices" empty on a 200 is ErrBadResponse saying so`,
		rep:  reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1733000000,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`},
		kind: openai.ErrBadResponse,
		says: []string{`"choices" is empty`},
	},
	{
		rule: `"choices" missing on a 200 is ErrBadResponse saying so`,
		rep:  reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1733000000,"model":"m"}`},
		kind: openai.ErrBadResponse,
		says: []string{`no "choices"`},
	},
	{
		rule:    "a 200 whose body is an OpenAI error object (OpenRouter sends one; unsure of others) is ErrBadResponse with its message and code",
		rep:     reply{Body: `{"error":{"message":"Provider returned error","code":502,"metadata":{"provider_name":"x"}},"user_id":"user_2x"}`},
		kind:    openai.ErrBadResponse,
		message: "Provider returned error", code: "502",
	},
	{
		rule:    `a 200 whose body is a vLLM-shaped error object is ErrBadResponse with its message`,
		rep:     reply{Body: `{"object":"error","message":"Internal server error","type":"InternalServerError","param":null,"code":500}`},
		kind:    openai.ErrBadResponse,
		message: "Internal server error", typ: "InternalServerError", code: "500",
	},
	{
		rule:    `LM Studio on an unknown route (status 200 in some versions; unsure): {"error":"plain string"} is ErrBadResponse with the string`,
		rep:     reply{Body: `{"error":"Unexpected endpoint or method. (POST /v1/chat/completion)"}`},
		kind:    openai.ErrBadResponse,
		message: "Unexpected endpoint or method. (POST /v1/chat/completion)",
	},
	{
		rule: "an HTML 502 from a proxy is ErrServer showing the start of the page",
		rep:  reply{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"},
		kind: openai.ErrServer,
		says: []string{"HTTP 502 Bad Gateway", "<title>502 Bad Gateway</title>"},
	},
	{
		rule: "an HTML page with a 200 (a captive portal, a login page) is ErrBadResponse showing its start",
		rep:  reply{Header: map[string]string{"Content-Type": "text/html"}, Body: "<!DOCTYPE html><html><head><title>Sign in</title></head><body>...</body></html>"},
		kind: openai.ErrBadResponse,
		says: []string{"the body is not JSON", "<!DOCTYPE html>"},
	},
	{
		rule: "an empty 200 body is ErrBadResponse saying the body is empty",
		rep:  reply{Body: ""},
		kind: openai.ErrBadResponse,
		says: []string{"empty body"},
	},
	{
		rule: "a choice without a message (a legacy text completion's, or a stream chunk's delta) is ErrBadResponse naming the field",
		rep:  reply{Body: `{"id":"cmpl-1","object":"text_completion","created":1733000000,"model":"m","choices":[{"text":"Leaves change colour.","index":0,"logprobs":null,"finish_reason":"stop"}]}`},
		kind: openai.ErrBadResponse,
		says: []string{`choices[0] has no "message"`},
	},
	{
		rule: "a content of the wrong type is ErrBadResponse naming the field and what was expected",
		rep:  reply{Body: `{"choices":[{"index":0,"message":{"role":"assistant","content":42},"finish_reason":"stop"}]}`},
		kind: openai.ErrBadResponse,
		says: []string{"choices[0].message.content", "a number", "want a string, an array of content parts or null"},
	},
	{
		rule: "a tool call's name of the wrong type is ErrBadResponse naming the field",
		rep:  reply{Body: `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":["work"],"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
		kind: openai.ErrBadResponse,
		says: []string{"choices[0].message.tool_calls[0].function.name", "an array", "want a string"},
	},
	{
		rule:    `a gateway's own {"message":...} (Kong's unknown route) gives the message`,
		rep:     reply{Status: 404, Body: `{"message":"no Route matched with those values"}`},
		kind:    openai.ErrBadRequest,
		message: "no Route matched with those values",
	},
	{
		rule:    `a gateway's own {"message":"Forbidden"} (AWS API Gateway) is ErrAuth with the message`,
		rep:     reply{Status: 403, Header: map[string]string{"x-amzn-ErrorType": "ForbiddenException"}, Body: `{"message":"Forbidden"}`},
		kind:    openai.ErrAuth,
		message: "Forbidden",
	},
	{
		rule:       "a proxy's 503 with Retry-After as an HTTP date (IMF-fixdate) asks for the time until that date on the clock",
		rep:        reply{Status: 503, Header: map[string]string{"Retry-After": inAMinute.Format(http.TimeFormat), "Content-Type": "text/html"}, Body: "<html><body><h1>503 Service Unavailable</h1></body></html>"},
		opts:       onRetryClock,
		kind:       openai.ErrServer,
		retryAfter: 90 * time.Second,
	},
	{
		rule:       "Retry-After as an obsolete RFC 850 date asks for the same wait",
		rep:        reply{Status: 429, Header: map[string]string{"Retry-After": inAMinute.Format(time.RFC850)}, Body: `{"error":{"message":"Rate limit exceeded","type":"rate_limit_error"}}`},
		opts:       onRetryClock,
		kind:       openai.ErrRateLimited,
		retryAfter: 90 * time.Second,
	},
	{
		rule:       "Retry-After as an asctime date asks for the same wait",
		rep:        reply{Status: 429, Header: map[string]string{"Retry-After": inAMinute.Format(time.ANSIC)}, Body: `{"error":{"message":"Rate limit exceeded","type":"rate_limit_error"}}`},
		opts:       onRetryClock,
		kind:       openai.ErrRateLimited,
		retryAfter: 90 * time.Second,
	},
	{
		rule:       "Retry-After as an HTTP date already past asks for no wait (the backoff applies)",
		rep:        reply{Status: 429, Header: map[string]string{"Retry-After": retryClock.Now().Add(-time.Hour).Format(http.TimeFormat)}, Body: `{"error":{"message":"Rate limit exceeded","type":"rate_limit_error"}}`},
		opts:       onRetryClock,
		kind:       openai.ErrRateLimited,
		retryAfter: 0,
	},
	{
		rule:    `LiteLLM proxy: a 429 whose code is the string "429" and that gives Retry-After in seconds (unsure of the type name)`,
		rep:     reply{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: `{"error":{"message":"litellm.RateLimitError: Rate limit reached for gpt-4o","type":"throttling_error","param":"None","code":"429"}}`},
		kind:    openai.ErrRateLimited,
		message: "litellm.RateLimitError: Rate limit reached for gpt-4o", typ: "throttling_error", code: "429",
		retryAfter: 7 * time.Second,
	},
	{
		rule:    "an error message with control characters (a traceback, escape sequences) is one printable line",
		rep:     reply{Status: 500, Body: `{"object":"error","message":"Traceback (most recent call last):\n  File \"x.py\"\u001b[31m boom","type":"InternalServerError","code":500}`},
		kind:    openai.ErrServer,
		message: `Traceback (most recent call last):   File "x.py" [31m boom`,
	},
	{
		rule: "an error message of any length is cut to a bounded one",
		rep:  reply{Status: 400, Body: `{"error":{"message":"` + strings.Repeat("context too long; ", 20000) + `","type":"invalid_request_error"}}`},
		kind: openai.ErrBadRequest,
		says: []string{"context too long; context too long;", "…"},
	},
	{
		rule: "a credential the server echoes across the point where the body is cut is not shown in part",
		rep:  reply{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>" + strings.Repeat(".", 90) + "bearer " + theKey + " rejected</html>"},
		kind: openai.ErrServer,
		says: []string{"<html>"},
	},
	{
		rule: "a credential the server echoes in a long error message is not shown in part where the message is cut",
		rep:  reply{Status: 401, Body: `{"error":{"message":"` + strings.Repeat("x", 496) + theKey + `","type":"invalid_request_error"}}`},
		kind: openai.ErrAuth,
	},
}

func entries(cases []wireCase) []TableEntry {
	var out []TableEntry
	for _, c := range cases {
		out = append(out, Entry(c.rule, c))
	}
	return out
}

// answerOf runs one step of a provider that talks to a server giving rep.
func answerOf(c wireCase) (*core.Response, string, error) {
	srv := newChatServer(func(int, wireRequest) reply { return c.rep })
	defer srv.Close()
	opts := openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "m", APIKey: theKey,
		Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries}
	if c.opts != nil {
		c.opts(&opts)
	}
	p := openai.New(opts)
	defer p.Close()
	req := c.req
	if req == nil {
		req = thirdparty.PlainAt4
	}
	return p.StepWithFinishReason(context.Background(), req)
}

var _ = Describe("What third-party OpenAI-compatible servers send", func() {
	DescribeTable("reads each answer as the response it is",
		func(c wireCase) {
			resp, reason, err := answerOf(c)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp).To(Equal(c.want))
			Expect(reason).To(Equal(c.reason))
		},
		entries(answers),
	)

	DescribeTable("reports each failure as a clear *Error of its kind, bounded and without credentials",
		func(c wireCase) {
			_, _, err := answerOf(c)
			Expect(err).To(MatchError(c.kind))
			var e *openai.Error
			Expect(errors.As(err, &e)).To(BeTrue())
			if c.message != "" {
				Expect(e.Message).To(Equal(c.message))
			}
			if c.typ != "" {
				Expect(e.Type).To(Equal(c.typ))
			}
			if c.code != "" {
				Expect(e.Code).To(Equal(c.code))
			}
			for _, s := range c.says {
				Expect(err.Error()).To(ContainSubstring(s))
			}
			Expect(e.RetryAfter).To(Equal(c.retryAfter))
			text := err.Error()
			Expect(len(text)).To(BeNumerically("<=", 2048), "an error's text is bounded")
			Expect(len(e.Message)).To(BeNumerically("<=", 512), "a message is bounded, its ellipsis included")
			Expect(len(e.Body)).To(BeNumerically("<=", 120))
			Expect(utf8.ValidString(text)).To(BeTrue(), "an error is never cut inside a character")
			secret := strings.TrimPrefix(theKey, "sk-proj-")
			for i := 0; i+6 <= len(secret); i++ {
				Expect(text).NotTo(ContainSubstring(secret[i:i+6]), "no credential, nor a part of one")
			}
		},
		entries(failures),
	)
})

// withoutToolCallIDs answers as the model does but, like some local
// servers, gives its tool calls no ids.
func withoutToolCallIDs(n int, req wireRequest) reply {
	rep := modelPlaysCoordinator(n, req)
	var doc map[string]any
	if json.Unmarshal([]byte(rep.Body), &doc) != nil {
		return rep
	}
	for _, c := range doc["choices"].([]any) {
		msg := c.(map[string]any)["message"].(map[string]any)
		calls, _ := msg["tool_calls"].([]any)
		for _, tc := range calls {
			delete(tc.(map[string]any), "id")
		}
	}
	b, _ := json.Marshal(doc)
	rep.Body = string(b)
	return rep
}

var _ = Describe("A run against a server that gives tool calls no ids", func() {
	// run returns the requests the server received.
	run := func() []wireRequest {
		srv := newChatServer(withoutToolCallIDs)
		defer srv.Close()
		clock := clockwork.NewFakeClock()
		rt := core.New(core.Options{
			Provider: openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "qwen2.5:7b", Clock: clock}),
			Clock:    clock,
			IDs:      &core.SequentialIDs{},
		})
		defer rt.Close()
		res, err := rt.Run(context.Background(), researchAgents(), fixture.Ask("Why do leaves change colour?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal(finalAnswer))
		var sent []wireRequest
		for _, r := range srv.received() {
			sent = append(sent, r.Body)
		}
		return sent
	}
	// history is the coordinator's last request without its status
	// block, whose states depend on when the background child ran.
	history := func(sent []wireRequest) []wireMessage {
		var last []wireMessage
		for _, r := range sent {
			if r.Messages[0].text() != fixture.ResearchSystem {
				last = r.Messages
			}
		}
		var out []wireMessage
		for _, m := range last {
			if m.Role != "system" || !strings.HasPrefix(m.text(), "Background work:") {
				out = append(out, m)
			}
		}
		return out
	}

	It("goes on to its answer, each tool result answering the id made for its call, and makes the same ids every time, as a replay needs", func() {
		first := history(run())
		var answered []string
		calls := map[string]bool{}
		for _, m := range first {
			for _, tc := range m.ToolCalls {
				Expect(tc.ID).NotTo(BeEmpty())
				Expect(calls).NotTo(HaveKey(tc.ID), "a made id is unique in the conversation")
				calls[tc.ID] = true
			}
			if m.Role == "tool" {
				Expect(calls).To(HaveKey(m.ToolCallID), "a tool result answers a call of the conversation")
				answered = append(answered, m.ToolCallID)
			}
		}
		Expect(answered).To(Equal([]string{"call_1_1", "call_2_1", "call_3_1"}))
		Expect(history(run())).To(Equal(first), "the same run makes the same ids")
	})
})

var _ = Describe("A gzip body", func() {
	It("is not read past the 32 MiB the provider reads, however small it came", func() {
		huge := `{"choices":[{"message":{"role":"assistant","content":"` + strings.Repeat("a", 32<<20) + `"}}]}`
		_, _, err := answerOf(wireCase{
			rep: reply{Header: map[string]string{"Content-Encoding": "gzip"}, Body: thirdparty.Gzipped(huge)},
			opts: func(o *openai.Options) {
				o.HTTPClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}
			},
		})
		Expect(err).To(MatchError(openai.ErrBadResponse))
		Expect(err.Error()).To(ContainSubstring("larger than 32 MiB"))
	})
})
