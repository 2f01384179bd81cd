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
})
