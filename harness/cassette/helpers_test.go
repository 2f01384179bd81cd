package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/internal/fixture"
)

const (
	question    = "Why do leaves change colour?"
	findings    = `{"summary":"Chlorophyll breaks down in autumn, revealing carotenoids.","findings":["Carotenoids were there all summer."]}`
	finalAnswer = "Leaves change colour because chlorophyll breaks down and reveals other pigments."
)

// researchAgents is seed 02's research coordinator (the shared fixture).
func researchAgents() *core.Agent { return fixture.Coordinator(fixture.ResearchAgent()) }

// model is an OpenAI-compatible endpoint on loopback that plays the model
// from what each request shows, speaking the real wire format.
type model struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
	// child, when set, answers the research agent instead of the default
	// findings; it sees the request's Authorization header.
	child func(auth string) (status int, body string)
}

func newModel() *model {
	m := &model{}
	m.Server = httptest.NewServer(http.HandlerFunc(m.handle))
	return m
}

func (m *model) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

type wireMsg struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
}

func (w wireMsg) text() string {
	if w.Content == nil {
		return ""
	}
	return *w.Content
}

func (m *model) handle(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	var body struct {
		Messages []wireMsg `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":{"message":"unreadable request","type":"invalid_request_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if body.Messages[0].text() == fixture.ResearchSystem {
		if m.child != nil {
			status, b := m.child(r.Header.Get("Authorization"))
			w.WriteHeader(status)
			fmt.Fprint(w, b)
			return
		}
		fmt.Fprint(w, textCompletion(findings))
		return
	}
	var last wireMsg
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if body.Messages[i].Role != "system" {
			last = body.Messages[i]
			break
		}
	}
	text := last.text()
	var ref struct {
		ID   string `json:"id"`
		Work struct {
			ID string `json:"id"`
		} `json:"work"`
	}
	_ = json.Unmarshal([]byte(text), &ref)
	switch {
	case last.Role == "user":
		fmt.Fprint(w, callCompletion("call_research", "research", fmt.Sprintf(`{"question":%q,"run_in_background":true}`, question)))
	case strings.Contains(text, `"state":"failed"`):
		fmt.Fprint(w, textCompletion("The research failed."))
	case strings.Contains(text, `"targetLabel"`):
		fmt.Fprint(w, callCompletion("call_result", "work", fmt.Sprintf(`{"action":"result","id":%q}`, ref.Work.ID)))
	case strings.Contains(text, `"work.ref"`):
		fmt.Fprint(w, callCompletion("call_status", "work", fmt.Sprintf(`{"action":"status","id":%q}`, ref.ID)))
	default:
		fmt.Fprint(w, textCompletion(finalAnswer))
	}
}

func textCompletion(text string) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}})
	return string(b)
}

func callCompletion(id, name, args string) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}},
			"finish_reason": "tool_calls"}},
		"usage": map[string]any{"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}})
	return string(b)
}

// settleExecutor makes a run with background children deterministic, so
// that its recording and its replay can be compared transcript for
// transcript: a background child started by a tool call runs, whole and on
// its own, at the next semantic point of a top-level run (or when someone
// waits). Every interleaving is then the same one.
type settleExecutor struct {
	mu      sync.Mutex
	pending []func()
}

func (e *settleExecutor) Go(_ string, fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending = append(e.pending, fn)
}

func (e *settleExecutor) settle() {
	for {
		e.mu.Lock()
		fns := e.pending
		e.pending = nil
		e.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, fn := range fns {
			fn()
		}
	}
}

func (e *settleExecutor) Yield(p core.Point) {
	if p.Work == "" {
		e.settle()
	}
}

func (e *settleExecutor) Wait(reason string, signals ...<-chan struct{}) int {
	e.settle()
	return core.GoExecutor{}.Wait(reason, signals...)
}

// session is one run of the research coordinator (or of agent, asked
// input) on a provider.
type session struct {
	provider core.Provider
	ids      core.IDSource
	clock    *clockwork.FakeClock
	agent    *core.Agent
	input    any
}

// run runs the coordinator to its end, closes the runtime and returns the
// normalized transcript and the run's result.
func (s session) run() (string, *core.RunResult, error) {
	if s.clock == nil {
		s.clock = clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	if s.ids == nil {
		s.ids = &core.SequentialIDs{}
	}
	tr := trace.NewRecorder(s.clock.Now())
	rt := core.New(core.Options{Provider: s.provider, Clock: s.clock, IDs: s.ids, Executor: &settleExecutor{}, Observer: tr, Model: "gpt-test"})
	agent, input := s.agent, s.input
	if agent == nil {
		agent, input = researchAgents(), fixture.Ask(question)
	}
	res, err := rt.Run(context.Background(), agent, input)
	ExpectWithOffset(1, rt.Close()).To(Succeed())
	return tr.Trace().Normalize().Text(), res, err
}

// openaiOn is the real adapter pointed at a loopback model.
func openaiOn(m *model, key string) *openai.Provider {
	return openai.New(openai.Options{BaseURL: m.URL + "/v1", HTTPClient: m.Client(), APIKey: key, Model: "gpt-test",
		Clock: clockwork.NewFakeClock(), MaxRetries: openai.NoRetries})
}

// record runs a session through a Recorder around p and returns the
// cassette bytes and the transcript.
func record(p core.Provider, opts cassette.RecordOptions, s session) ([]byte, string) {
	var buf bytes.Buffer
	if s.clock == nil {
		s.clock = clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	if opts.Clock == nil {
		opts.Clock = s.clock
	}
	if opts.RealClock == nil {
		opts.RealClock = clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	rec, err := cassette.NewRecorder(&buf, p, opts)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	s.provider = rec
	text, _, _ := s.run()
	ExpectWithOffset(1, rec.Close()).To(Succeed())
	return buf.Bytes(), text
}

func mustRead(b []byte, name string) *cassette.Cassette {
	c, err := cassette.Read(bytes.NewReader(b), name)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func lines(b []byte) []string {
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// recorded records one session against a fresh loopback model, which is
// closed before the spec replays: a replay that needed the network would
// fail.
func recorded(opts cassette.RecordOptions, s session, child func(string) (int, string)) ([]byte, string) {
	m := newModel()
	defer m.Close()
	m.child = child
	return record(openaiOn(m, ""), opts, s)
}

// lineOf finds the 1-based line of the cassette that contains all of subs.
func lineOf(b []byte, subs ...string) int {
	for i, l := range lines(b) {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			return i + 1
		}
	}
	Fail(fmt.Sprintf("no line contains %q", subs))
	return 0
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
