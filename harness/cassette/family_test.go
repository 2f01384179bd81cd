package cassette_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/internal/fixture/thirdparty"
)

// These specs record the whole research recipe (the coordinator starts
// research in the background, takes the child's result, answers) against
// a server of each family of the third-party table, writing every body in
// that family's shape, and replay it. Each family is run in the three
// variants most likely to part a replay from its recording: tool calls
// without ids (the ids are made, and every later request answers them),
// arguments written as a JSON object in the server's own layout (kept as
// its text, the work id inside), and the child's structured output sent as
// content parts split inside the document, spaced and escaped (its exact
// bytes flow through work result into the coordinator's next request).

// familyCall is a tool call a family server answers with.
type familyCall struct{ id, name, args string }

// familyAnswer is one answer before a family writes it: text or calls.
type familyAnswer struct {
	text  string
	calls []familyCall
}

// family writes an answer as one kind of server does: the body and its
// headers. n counts the server's requests, from 1.
type family struct {
	name string
	// id is the tool-call id the family gives the k-th call of request n.
	id    func(n, k int) string
	write func(n int, a familyAnswer, v variant) (header map[string]string, body string)
}

// variant is one of the three ways a run is most likely to diverge.
type variant struct {
	name        string
	noIDs       bool // tool calls come without ids
	objectArgs  bool // arguments as a JSON object, spaced over lines
	outputParts bool // the child's output as content parts, split inside
}

var variants = []variant{
	{name: "tool calls without ids", noIDs: true},
	{name: "arguments as a JSON object in the server's layout", objectArgs: true},
	{name: "the child's output as content parts, spaced and escaped", outputParts: true},
}

// childOutput is the research child's document as a server that spaces
// and escapes its JSON writes it (the \u escapes are text in the
// document, not in the body).
const childOutput = `{"findings": ["Carotenoids show through.", "Anthocyanins form, caf\u00e9-brown."],  "summary": "Chlorophyll fades \u2014 slowly."}`

// content is a message's "content" as the variant sends it: a string, or
// parts split inside the document.
func (v variant) content(text string, output bool) any {
	if !output || !v.outputParts {
		return text
	}
	cut := len(text) / 3
	return []any{
		map[string]any{"type": "text", "text": text[:cut]},
		map[string]any{"type": "text", "text": text[cut : 2*cut]},
		map[string]any{"type": "text", "text": text[2*cut:]},
	}
}

// toolCalls renders calls as the variant sends them; id gives each its id.
func (v variant) toolCalls(n int, calls []familyCall, id func(n, k int) string) []any {
	var out []any
	for k, c := range calls {
		fn := map[string]any{"name": c.name, "arguments": c.args}
		if v.objectArgs {
			var doc map[string]any
			_ = json.Unmarshal([]byte(c.args), &doc)
			spaced, _ := json.MarshalIndent(doc, "", "   ")
			fn["arguments"] = rawMark + base64.StdEncoding.EncodeToString(spaced) + rawMark
		}
		tc := map[string]any{"type": "function", "function": fn}
		if !v.noIDs {
			tc["id"] = id(n, k+1)
		}
		out = append(out, tc)
	}
	return out
}

// rawMark brackets, in a string of a body, JSON to write there as it is:
// encoding/json would compact a json.RawMessage, and a server's layout is
// the point.
const rawMark = "@@raw@@"

var rawValue = regexp.MustCompile(`"` + rawMark + `([A-Za-z0-9+/=]*)` + rawMark + `"`)

// marshal renders a body, writing each value marked rawMark as it is.
func marshal(doc any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc)
	return rawValue.ReplaceAllStringFunc(strings.TrimSuffix(b.String(), "\n"), func(m string) string {
		raw, _ := base64.StdEncoding.DecodeString(rawValue.FindStringSubmatch(m)[1])
		return string(raw)
	})
}

// message is the assistant message of an answer in the variant, with the
// family's content beside tool calls (null, "" or absent) and extra keys.
func (v variant) message(n int, a familyAnswer, output bool, f *family, beside any, extra map[string]any) map[string]any {
	m := map[string]any{"role": "assistant"}
	for k, x := range extra {
		m[k] = x
	}
	if len(a.calls) > 0 {
		m["tool_calls"] = v.toolCalls(n, a.calls, f.id)
		if beside != absent {
			m["content"] = beside
		}
	} else {
		m["content"] = v.content(a.text, output)
	}
	return m
}

// absent marks a content key a family leaves out beside tool calls.
var absent = &struct{}{}

func finish(a familyAnswer, calls string) string {
	if len(a.calls) > 0 {
		return calls
	}
	return "stop"
}

var families = []*family{
	{name: "Ollama", id: func(n, k int) string { return fmt.Sprintf("call_%08x", n*7919+k) }},
	{name: "vLLM", id: func(n, k int) string { return fmt.Sprintf("chatcmpl-tool-%010x", n*104729+k) }},
	{name: "llama.cpp", id: func(n, k int) string { return fmt.Sprintf("Qm9vTPv3kZ8h1RrD2yL0aWcX5sEg%04d", n*10+k) }},
	{name: "LM Studio", id: func(n, k int) string { return fmt.Sprint(365174485 + n*10 + k) }},
	{name: "LiteLLM", id: func(n, k int) string { return fmt.Sprintf("call_%dL%d", n, k) }},
	{name: "TGI", id: func(int, int) string { return "0" }},
	{name: "Azure", id: func(n, k int) string { return fmt.Sprintf("call_az%d_%d", n, k) }},
	{name: "a proxy (byte order mark, gzip, text/plain)", id: func(n, k int) string { return fmt.Sprintf("toolu_%02d%d", n, k) }},
}

func init() {
	w := map[string]func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string){
		"Ollama": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			return nil, marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1733000000, "model": "qwen2.5:7b", "system_fingerprint": "fp_ollama",
				"choices": []any{map[string]any{"index": 0, "message": v.message(n, a, output, f, "", nil), "finish_reason": "stop"}},
				"usage":   map[string]any{"prompt_tokens": 181, "completion_tokens": 22, "total_tokens": 203}})
		},
		"vLLM": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			m := v.message(n, a, output, f, nil, map[string]any{"reasoning_content": "Thinking it over."})
			if len(a.calls) == 0 {
				m["tool_calls"] = []any{}
			}
			return nil, marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-8f3c%d", n), "object": "chat.completion", "created": 1733000000, "model": "Qwen/Qwen3-8B",
				"choices": []any{map[string]any{"index": 0, "message": m, "logprobs": nil, "finish_reason": finish(a, "tool_calls"), "stop_reason": nil}},
				"usage":   map[string]any{"prompt_tokens": 20, "total_tokens": 50, "completion_tokens": 30, "prompt_tokens_details": nil}, "prompt_logprobs": nil, "kv_transfer_params": nil})
		},
		"llama.cpp": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			return nil, marshal(map[string]any{"choices": []any{map[string]any{"finish_reason": finish(a, "tool_calls"), "index": 0, "message": v.message(n, a, output, f, nil, nil)}},
				"created": 1733000000, "model": "gpt-3.5-turbo", "system_fingerprint": "b4600-5f0db95", "object": "chat.completion",
				"usage":   map[string]any{"completion_tokens": 17, "prompt_tokens": 230, "total_tokens": 247},
				"timings": map[string]any{"prompt_n": 230, "prompt_ms": 120.5, "predicted_n": 17, "predicted_ms": 310.2}})
		},
		"LM Studio": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			return nil, marshal(map[string]any{"id": "chatcmpl-ab12", "object": "chat.completion", "created": 1733000000, "model": "qwen2.5-7b-instruct",
				"choices": []any{map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish(a, "tool_calls"), "message": v.message(n, a, output, f, "", nil)}},
				"usage":   map[string]any{"prompt_tokens": 300, "completion_tokens": 25, "total_tokens": 325}, "stats": map[string]any{}, "system_fingerprint": "qwen2.5-7b-instruct"})
		},
		"LiteLLM": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			m := v.message(n, a, output, f, nil, map[string]any{"function_call": nil, "annotations": []any{}, "provider_specific_fields": map[string]any{"refusal": nil}})
			if len(a.calls) == 0 {
				m["tool_calls"] = nil
			}
			return nil, marshal(map[string]any{"id": "chatcmpl-x", "created": 1733000000, "model": "gpt-4o-mini", "object": "chat.completion", "system_fingerprint": nil,
				"choices": []any{map[string]any{"finish_reason": finish(a, "tool_calls"), "index": 0, "message": m}},
				"usage":   map[string]any{"completion_tokens": 12, "prompt_tokens": 8, "total_tokens": 20, "completion_tokens_details": nil}, "service_tier": nil})
		},
		"TGI": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			return nil, marshal(map[string]any{"object": "chat.completion", "id": "", "created": 1733000000, "model": "meta-llama/Llama-3.1-8B-Instruct", "system_fingerprint": "2.4.0-native",
				"choices": []any{map[string]any{"index": 0, "message": v.message(n, a, output, f, absent, nil), "logprobs": nil, "finish_reason": "eos_token"}},
				"usage":   map[string]any{"prompt_tokens": 150, "completion_tokens": 19, "total_tokens": 169}})
		},
		"Azure": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			filters := map[string]any{"hate": map[string]any{"filtered": false, "severity": "safe"}}
			return nil, marshal(map[string]any{"id": "chatcmpl-az", "object": "chat.completion", "created": 1733000000, "model": "gpt-4o-2024-08-06",
				"prompt_filter_results": []any{map[string]any{"prompt_index": 0, "content_filter_results": filters}},
				"choices": []any{map[string]any{"content_filter_results": filters, "finish_reason": finish(a, "tool_calls"), "index": 0, "logprobs": nil,
					"message": v.message(n, a, output, f, nil, map[string]any{"refusal": nil})}},
				"usage": map[string]any{"completion_tokens": 12, "prompt_tokens": 8, "total_tokens": 20}})
		},
		"a proxy (byte order mark, gzip, text/plain)": func(f *family, n int, a familyAnswer, v variant, output bool) (map[string]string, string) {
			body := "\uFEFF" + marshal(map[string]any{"id": "chatcmpl-p", "object": "chat.completion", "model": "m",
				"choices": []any{map[string]any{"index": 0, "message": v.message(n, a, output, f, nil, nil), "finish_reason": finish(a, "tool_calls")}}})
			return map[string]string{"Content-Type": "text/plain; charset=utf-8", "Content-Encoding": "gzip"}, thirdparty.Gzipped(body)
		},
	}
	for _, f := range families {
		write := w[f.name]
		f.write = func(n int, a familyAnswer, v variant) (map[string]string, string) {
			return write(f, n, a, v, a.calls == nil && a.text == childOutput)
		}
	}
}

var workID = regexp.MustCompile(`"id":"(w-[0-9]+)"`)

// familyServer plays the research recipe's model, writing every answer
// as f does in variant v.
func familyServer(f *family, v variant) *httptest.Server {
	var mu sync.Mutex
	n := 0
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []wireMsg `json:"messages"`
		}
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		var last wireMsg
		for _, m := range body.Messages {
			if m.Role != "system" {
				last = m
			}
		}
		var a familyAnswer
		switch {
		case body.Messages[0].text() == fixture.ResearchSystem:
			a.text = childOutput
		case last.Role == "user":
			a.calls = []familyCall{{name: "research", args: fmt.Sprintf(`{"question":%q,"run_in_background":true}`, last.text())}}
		case strings.Contains(last.text(), "Carotenoids"):
			a.text = "Leaves turn as chlorophyll fades; carotenoids show and anthocyanins form."
		default:
			var id string
			for _, m := range body.Messages {
				if m.Role == "tool" && workID.MatchString(m.text()) {
					id = workID.FindStringSubmatch(m.text())[1]
				}
			}
			a.calls = []familyCall{{name: "work", args: fmt.Sprintf(`{"action":"result","id":%q}`, id)}}
		}
		header, out := f.write(k, a, v)
		for key, val := range header {
			w.Header().Set(key, val)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = io.WriteString(w, out)
	}))
}

// familyRecording records the recipe against a fresh server of f in v.
func familyRecording(f *family, v variant) (b []byte, text string, res *core.RunResult, got []stepResponse) {
	srv := familyServer(f, v)
	defer srv.Close()
	p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), APIKey: tableKey, Model: "gpt-test",
		Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries})
	defer p.Close()
	var buf bytes.Buffer
	clock := fixedClock()
	rec, err := cassette.NewRecorder(&buf, p, cassette.RecordOptions{Header: cassette.Header{CruxSim: "v0.1.0-test", Model: "gpt-test",
		BaseURL: "http://loopback.test/v1", Created: clock.Now()}, Clock: clock, RealClock: fixedClock(), Secrets: []string{tableKey}})
	Expect(err).NotTo(HaveOccurred())
	var seen seenBy
	text, res, err = session{provider: seen.wrap(rec), clock: clock}.run()
	Expect(err).NotTo(HaveOccurred())
	Expect(rec.Close()).To(Succeed())
	return buf.Bytes(), text, res, seen.responses()
}

var _ = Describe("The research recipe recorded against a server of each family", func() {
	var entries []TableEntry
	for _, f := range families {
		for _, v := range variants {
			entries = append(entries, Entry(f.name+": "+v.name, f, v))
		}
	}
	DescribeTable("replays clean, the coordinator, the background child and its result, with the responses the runtime got while recording",
		func(f *family, v variant) {
			b, text, res, recorded := familyRecording(f, v)
			Expect(res.Output.Raw).To(ContainSubstring("anthocyanins form"))
			agents := map[string]int{}
			for _, x := range recorded {
				Expect(x.Err).To(BeEmpty())
				agents[x.Agent]++
			}
			Expect(agents).To(Equal(map[string]int{fixture.CoordinatorID: 3, fixture.ResearchID: 1}), "research in the background, its result, the answer")
			var child *core.Response
			for _, x := range recorded {
				if x.Agent == fixture.ResearchID {
					child = x.Resp
				}
			}
			Expect(string(child.Output)).To(Equal(childOutput), "the child's output is the bytes the server wrote")
			first := recorded[0].Resp.ToolCalls[0]
			if v.noIDs {
				Expect(first.ID).To(Equal("call_1_1"), "a made id")
			}
			if v.objectArgs {
				Expect(first.Arguments).To(ContainSubstring("{\n   \"question\""), "the arguments in the server's layout")
			}

			c := mustRead(b, "family.cassette")
			rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
			var seen seenBy
			replayText, replayRes, err := session{provider: seen.wrap(rep)}.run()
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.Err()).NotTo(HaveOccurred(), "the replay is clean")
			Expect(seen.responses()).To(Equal(recorded), "the runtime gets in replay exactly what it got while recording")
			Expect(replayText).To(Equal(text))
			Expect(replayRes.Output.Raw).To(Equal(res.Output.Raw))

			Expect(string(b)).NotTo(ContainSubstring(strings.TrimPrefix(tableKey, "sk-proj-")))
			again, _, _, _ := familyRecording(f, v)
			Expect(string(again)).To(Equal(string(b)), "recording the same run again writes the same bytes")
		},
		entries,
	)
})
