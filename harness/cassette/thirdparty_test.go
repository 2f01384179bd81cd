package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/internal/fixture/thirdparty"
)

// These specs hold the fidelity promise for every success body of the
// third-party table (internal/fixture/thirdparty): a run recorded against
// a server that writes that body replays clean, the runtime gets in the
// replay the very responses it got while recording (text, tool-call ids,
// names and argument strings, structured output, usage, byte for byte,
// made tool-call ids included), the cassette holds no credential, and
// recording the same run again writes the same bytes.

// tableKey is the API key of every recording here; no cassette may hold it.
const tableKey = "sk-proj-Tb7mQ2vX9cW4nR8kZ1pL"

// stepResponse is what the runtime got at one provider step.
type stepResponse struct {
	Agent string
	Step  int
	Resp  *core.Response
	Err   string
}

// seenBy wraps p and notes every response it gives the runtime.
type seenBy struct {
	mu   sync.Mutex
	seen []stepResponse
}

func (s *seenBy) wrap(p core.Provider) core.Provider {
	return core.ProviderFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
		resp, err := p.Step(ctx, req)
		x := stepResponse{Agent: req.Agent, Step: req.Step, Resp: resp}
		if err != nil {
			x.Err = err.Error()
		}
		s.mu.Lock()
		s.seen = append(s.seen, x)
		s.mu.Unlock()
		return resp, err
	})
}

func (s *seenBy) responses() []stepResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stepResponse(nil), s.seen...)
}

// answerServer answers every step up to upTo with the case's body, exactly
// as the case gives it, and later steps with a final answer. It tells the
// step by the assistant messages the request holds.
func answerServer(a thirdparty.Answer, upTo int, final string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(raw, &body)
		step := 1
		for _, m := range body.Messages {
			if m.Role == "assistant" {
				step++
			}
		}
		if step > upTo {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, textCompletion(final))
			return
		}
		for k, v := range a.Header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = io.WriteString(w, a.Body)
	}))
}

// tableRun is the run a case is recorded in: the research coordinator,
// whose tools (research, work) the table's tool calls name, answered with
// the case's body up to the case's own step; or, for a case whose request
// asks for structured output, an agent with that output schema.
func tableRun(a thirdparty.Answer) (agent *core.Agent, input any, upTo int, final string) {
	req := a.Req
	if req == nil {
		req = thirdparty.PlainAt4
	}
	if req.Output != nil {
		return &core.Agent{ID: "answerer", Prompt: core.Prompt{ID: "answer", Input: fixture.QuestionSchema, Output: req.Output,
			System: "Answer with a JSON document.", Render: core.Field("question")}}, fixture.Ask(question), req.Step, `{"done":true}`
	}
	return researchAgents(), fixture.Ask(question), req.Step, finalAnswer
}

// tableRecording records one run of the case against a fresh server,
// closed before it returns (the header names no port, which differs from
// one server to the next), and gives the cassette, the transcript, the
// run's error and what the runtime got at every step.
func tableRecording(a thirdparty.Answer) (b []byte, text, runErr string, got []stepResponse) {
	agent, input, upTo, final := tableRun(a)
	srv := answerServer(a, upTo, final)
	defer srv.Close()
	opts := openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), APIKey: tableKey, Model: "gpt-test",
		Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries}
	if a.Opts != nil {
		a.Opts(&opts)
	}
	p := openai.New(opts)
	defer p.Close()
	var buf bytes.Buffer
	clock := fixedClock()
	rec, err := cassette.NewRecorder(&buf, p, cassette.RecordOptions{Header: cassette.Header{CruxSim: "v0.1.0-test", Model: "gpt-test",
		BaseURL: "http://loopback.test/v1", Created: clock.Now()}, Clock: clock, RealClock: fixedClock(), Secrets: []string{tableKey}})
	Expect(err).NotTo(HaveOccurred())
	var seen seenBy
	text, _, err = session{provider: seen.wrap(rec), clock: clock, agent: agent, input: input}.run()
	Expect(rec.Close()).To(Succeed())
	if err != nil {
		runErr = err.Error()
	}
	return buf.Bytes(), text, runErr, seen.responses()
}

var _ = Describe("A recording against each third-party server's answer", func() {
	DescribeTable("replays clean, hands the runtime the responses it got while recording, holds no credential and records the same bytes again",
		func(a thirdparty.Answer) {
			b, text, runErr, recorded := tableRecording(a)
			Expect(recorded).NotTo(BeEmpty())
			for _, x := range recorded {
				Expect(x.Err).To(BeEmpty(), "the provider read every answer while recording")
			}

			c := mustRead(b, "table.cassette")
			rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
			agent, input, _, _ := tableRun(a)
			var seen seenBy
			replayText, _, err := session{provider: seen.wrap(rep), agent: agent, input: input}.run()
			Expect(rep.Err()).NotTo(HaveOccurred(), "the replay is clean")
			if runErr == "" {
				Expect(err).NotTo(HaveOccurred())
			} else {
				Expect(err).To(MatchError(runErr))
			}
			Expect(seen.responses()).To(Equal(recorded), "the runtime gets in replay exactly what it got while recording")
			Expect(replayText).To(Equal(text))

			out := string(b)
			for _, secret := range []string{tableKey, strings.TrimPrefix(tableKey, "sk-proj-"), "Bearer", "Authorization"} {
				Expect(out).NotTo(ContainSubstring(secret))
			}

			again, _, _, _ := tableRecording(a)
			Expect(string(again)).To(Equal(out), "recording the same run again writes the same bytes")
		},
		func() []TableEntry {
			var out []TableEntry
			for _, a := range thirdparty.Answers {
				out = append(out, Entry(a.Rule, a))
			}
			return out
		}(),
	)
})

// FuzzAnAnswerReplaysAsItWasRecorded is the fidelity rule for any success
// body at all: whatever response the OpenAI provider makes of a body, a
// recording of that step reads back and replays it to the runtime as the
// same core.Response (text, output, tool calls and usage, byte for byte),
// with no divergence, and the recorded request's digest still matches.
// The seeds are the third-party table's bodies. Run it past the suite with
// go test -run '^$' -fuzz FuzzAnAnswerReplays -parallel 1 ./harness/cassette.
func FuzzAnAnswerReplaysAsItWasRecorded(f *testing.F) {
	for _, a := range thirdparty.Answers {
		f.Add([]byte(a.Body), a.Req != nil && a.Req.Output != nil)
	}
	history := []core.Message{
		{Role: core.RoleUser, Content: "hi"},
		{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "call_3_1", Name: "work", Arguments: `{"action":"list"}`}}},
		{Role: core.RoleTool, ToolCallID: "call_3_1", ToolName: "work", Content: "[]"},
	}
	f.Fuzz(func(t *testing.T, body []byte, output bool) {
		req := &core.Request{Agent: "a", Run: "run-1", Step: 3, Messages: history}
		if output {
			req.Output = core.MustSchema(`{"type":"object"}`)
		}
		p := openai.New(openai.Options{BaseURL: "http://model.invalid/v1", APIKey: tableKey, Model: "m",
			HTTPClient: &http.Client{Transport: thirdparty.Transport{Body: body}}, Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries})
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, p, cassette.RecordOptions{Clock: fixedClock(), RealClock: fixedClock(), Secrets: []string{tableKey}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := rec.Step(context.Background(), req)
		if err != nil {
			return // a body the provider refuses: the failure specs' business
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(buf.Bytes(), []byte(tableKey)) {
			t.Fatalf("the cassette holds the key:\n%s", buf.Bytes())
		}
		c, err := cassette.Read(bytes.NewReader(buf.Bytes()), "f.cassette")
		if err != nil {
			t.Fatalf("a recording does not read back: %v\n%s", err, buf.Bytes())
		}
		if c.Exchanges[0].Edited {
			t.Fatalf("a recording reads back as edited by hand:\n%s", buf.Bytes())
		}
		rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
		again, err := rep.Step(context.Background(), req)
		if err != nil {
			t.Fatalf("the replay of the step failed: %v", err)
		}
		if err := rep.Err(); err != nil {
			t.Fatalf("the replay diverged: %v", err)
		}
		// What a secret pattern matched is the one thing a cassette does
		// not keep as sent.
		red := cassette.NewRedactor([]string{tableKey})
		want := &core.Response{Text: red.Text(got.Text), Usage: got.Usage}
		if len(got.Output) > 0 {
			want.Output = json.RawMessage(red.Text(string(got.Output)))
		}
		for _, c := range got.ToolCalls {
			want.ToolCalls = append(want.ToolCalls, core.ToolCall{ID: red.String(c.ID), Name: red.String(c.Name), Arguments: red.Text(c.Arguments)})
		}
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("the replay hands the runtime another response than the recording did:\nrecorded %#v\nreplayed %#v\n%s", got, again, buf.Bytes())
		}
	})
}
