package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// rawStream posts a streaming request and returns the response and its
// server-sent events' data, each chunk decoded as it crossed the wire
// (the final [DONE] kept as the string it is).
func (s *served) rawStream(body map[string]any) (*http.Response, []any) {
	body["stream"] = true
	raw, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(s.http.URL+"/v1/chat/completions", "application/json", bytes.NewReader(raw))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(all))
	var events []any
	for _, ev := range strings.Split(strings.TrimSuffix(string(all), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		Expect(ok).To(BeTrue(), "an event is one data line: %q", ev)
		if data == "[DONE]" {
			events = append(events, data)
			continue
		}
		var c map[string]any
		Expect(json.Unmarshal([]byte(data), &c)).To(Succeed(), data)
		events = append(events, c)
	}
	return resp, events
}

// chunksOf are a stream's chunks, after checking that it ends with one
// data: [DONE] and has nothing after it.
func chunksOf(events []any) []map[string]any {
	Expect(events).NotTo(BeEmpty())
	Expect(events[len(events)-1]).To(Equal("[DONE]"), "the stream ends with data: [DONE]")
	var chunks []map[string]any
	for _, ev := range events[:len(events)-1] {
		c, ok := ev.(map[string]any)
		Expect(ok).To(BeTrue(), "[DONE] comes once, last: %v", events)
		chunks = append(chunks, c)
	}
	return chunks
}

// sayingSolo is a one-agent scenario whose answer is a text long enough to
// come in several deltas.
func sayingSolo() *scenarios.Scenario {
	return scenarios.New("solo").Agent("solo", &core.Agent{ID: "solo", Prompt: core.Prompt{System: "Say it."}}).
		Script("solo", scripted.Say("Anthocyanins and carotenoids show once chlorophyll breaks down."))
}

func soloBody() map[string]any {
	return map[string]any{"model": "crux-sim/solo", "messages": []any{map[string]any{"role": "user", "content": "why?"}}}
}

var _ = Describe("the Chat Completions wire format", func() {
	Describe("a stream's usage", func() {
		It("is null on every chunk but the last when stream_options.include_usage is set, and the last chunk has empty choices and the usage", func() {
			s := serveScenario(sayingSolo(), serve.Options{})
			body := soloBody()
			body["stream_options"] = map[string]any{"include_usage": true}
			_, events := s.rawStream(body)
			chunks := chunksOf(events)
			Expect(len(chunks)).To(BeNumerically(">", 3))
			for i, c := range chunks[:len(chunks)-1] {
				Expect(c).To(HaveKeyWithValue("usage", BeNil()), "chunk %d carries usage: null", i)
				Expect(c["choices"]).To(HaveLen(1), "chunk %d", i)
			}
			last := chunks[len(chunks)-1]
			Expect(last["choices"]).To(Equal([]any{}))
			Expect(last["usage"]).To(HaveKey("prompt_tokens"))
			Expect(last["usage"]).To(HaveKey("completion_tokens"))
			Expect(last["usage"]).To(HaveKey("total_tokens"))
		})

		DescribeTable("is no field of any chunk when include_usage is not set",
			func(opts any) {
				s := serveScenario(sayingSolo(), serve.Options{})
				body := soloBody()
				if opts != nil {
					body["stream_options"] = opts
				}
				_, events := s.rawStream(body)
				for i, c := range chunksOf(events) {
					Expect(c).NotTo(HaveKey("usage"), "chunk %d", i)
					Expect(c["choices"]).To(HaveLen(1), "chunk %d: there is no usage chunk", i)
				}
			},
			Entry("stream_options left out", nil),
			Entry("include_usage false", map[string]any{"include_usage": false}),
		)
	})

	Describe("a stream's chunks", func() {
		It("share id, object chat.completion.chunk, created and model; the role is on the first delta alone, with content null and the first tool call's start when the model only calls tools; a tool call's index, id, type and name come first, its arguments after; finish_reason is null until the last choice", func() {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			raw, err := json.Marshal(firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(err).NotTo(HaveOccurred())
			var body map[string]any
			Expect(json.Unmarshal(raw, &body)).To(Succeed())
			resp, events := s.rawStream(body)
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
			chunks := chunksOf(events)
			first := chunks[0]
			Expect(first["id"]).To(HavePrefix("chatcmpl-"))
			Expect(first["model"]).To(Equal("crux-sim/research-coordinator"))
			var args string
			for i, c := range chunks {
				for _, k := range []string{"id", "created", "model"} {
					Expect(c[k]).To(Equal(first[k]), "chunk %d's %s", i, k)
				}
				Expect(c["object"]).To(Equal("chat.completion.chunk"))
				choices := c["choices"].([]any)
				Expect(choices).To(HaveLen(1))
				ch := choices[0].(map[string]any)
				Expect(ch).To(HaveKeyWithValue("index", BeEquivalentTo(0)))
				Expect(ch).To(HaveKeyWithValue("logprobs", BeNil()))
				delta := ch["delta"].(map[string]any)
				if i == 0 {
					// A model that only calls tools says no text: content
					// is null, as in the whole message, and the first
					// call starts in the same delta.
					Expect(delta).To(Equal(map[string]any{"role": "assistant", "content": nil,
						"tool_calls": []any{map[string]any{"index": 0.0, "id": "call-1", "type": "function",
							"function": map[string]any{"name": "research", "arguments": ""}}}}))
				} else {
					Expect(delta).NotTo(HaveKey("role"), "chunk %d", i)
				}
				if i < len(chunks)-1 {
					Expect(ch).To(HaveKeyWithValue("finish_reason", BeNil()), "chunk %d", i)
				} else {
					Expect(ch).To(HaveKeyWithValue("finish_reason", "tool_calls"))
					Expect(delta).To(BeEmpty())
				}
				if i > 0 && i < len(chunks)-1 {
					calls := delta["tool_calls"].([]any)
					Expect(calls).To(HaveLen(1))
					call := calls[0].(map[string]any)
					Expect(call).To(HaveKeyWithValue("index", 0.0))
					Expect(call).NotTo(HaveKey("id"))
					Expect(call).NotTo(HaveKey("type"))
					Expect(call["function"]).NotTo(HaveKey("name"))
					args += call["function"].(map[string]any)["arguments"].(string)
				}
			}
			Expect(args).To(MatchJSON(`{"question":"` + question + `","run_in_background":true}`))
		})
	})

	Describe("a plain answer's message", func() {
		post := func(s *served, body any) map[string]any {
			raw, err := json.Marshal(body)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.Post(s.http.URL+"/v1/chat/completions", "application/json", bytes.NewReader(raw))
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			var doc map[string]any
			Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
			Expect(doc["object"]).To(Equal("chat.completion"))
			Expect(doc["id"]).To(HavePrefix("chatcmpl-"))
			Expect(doc).To(HaveKey("created"))
			Expect(doc["usage"]).To(HaveKey("total_tokens"))
			choice := doc["choices"].([]any)[0].(map[string]any)
			Expect(choice).To(HaveKeyWithValue("logprobs", BeNil()))
			return choice
		}

		It("has content null, tool_calls and finish_reason tool_calls when the model calls tools", func() {
			s := serveScenario(builtin("research-coordinator"), serve.Options{})
			choice := post(s, firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(choice["finish_reason"]).To(Equal("tool_calls"))
			msg := choice["message"].(map[string]any)
			Expect(msg).To(HaveKeyWithValue("content", BeNil()))
			Expect(msg).To(HaveKeyWithValue("refusal", BeNil()))
			Expect(msg["role"]).To(Equal("assistant"))
			Expect(msg["tool_calls"]).To(HaveLen(1))
		})

		It("has its text as content, no tool_calls and finish_reason stop when the model only speaks", func() {
			s := serveScenario(sayingSolo(), serve.Options{})
			choice := post(s, soloBody())
			Expect(choice["finish_reason"]).To(Equal("stop"))
			msg := choice["message"].(map[string]any)
			Expect(msg["content"]).To(HavePrefix("Anthocyanins"))
			Expect(msg).NotTo(HaveKey("tool_calls"))
		})
	})
})
