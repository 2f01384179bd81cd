package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness/cassette"
)

// steps is an agent that calls a tool at every step until its n-th, then
// answers: a run whose history grows by two messages a step.
func steps(n int) (*core.Agent, core.Provider) {
	agent := &core.Agent{
		ID:     "counter",
		Prompt: core.Prompt{System: "Count, one tool call a step."},
		Tools: core.Tools{"note": &core.Tool{Description: "Notes a number.",
			Run: func(_ context.Context, _ core.ToolCall, in any) (any, error) {
				return map[string]any{"noted": in.(map[string]any)["i"]}, nil
			}}},
	}
	model := core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		if req.Step >= n {
			return &core.Response{Text: fmt.Sprintf("counted to %d", n)}, nil
		}
		return &core.Response{ToolCalls: []core.ToolCall{{ID: fmt.Sprintf("call_%d", req.Step), Name: "note",
			Arguments: fmt.Sprintf(`{"i": %d}`, req.Step)}}}, nil
	})
	return agent, model
}

// runSteps runs the counter for n steps on provider p.
func runSteps(n int, p core.Provider) (*core.RunResult, error) {
	agent, _ := steps(n)
	rt := core.New(core.Options{Provider: p, Clock: fixedClock(), IDs: &core.SequentialIDs{}, MaxSteps: n + 1})
	defer rt.Close()
	return rt.Run(context.Background(), agent, "count")
}

// recordSteps records a run of n steps and returns the cassette's bytes.
func recordSteps(n int) []byte {
	_, model := steps(n)
	var buf bytes.Buffer
	rec, err := cassette.NewRecorder(&buf, model, cassette.RecordOptions{Clock: fixedClock(), RealClock: fixedClock()})
	Expect(err).NotTo(HaveOccurred())
	_, err = runSteps(n, rec)
	Expect(err).NotTo(HaveOccurred())
	Expect(rec.Close()).To(Succeed())
	return buf.Bytes()
}

// requestsOf is a provider that remembers every request it was sent.
type requestsOf struct {
	inner core.Provider
	mu    sync.Mutex
	reqs  []*core.Request
}

func (r *requestsOf) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Step(ctx, req)
}

var _ = Describe("The cassette format", func() {
	It("writes on each request line only what is new since its run's previous request, and a digest of the whole request", func() {
		b := recordSteps(3)
		ls := lines(b)
		Expect(ls).To(HaveLen(1 + 2*3 + 1))
		type reqLine struct {
			Digest  string
			Request map[string]json.RawMessage
		}
		var first, second reqLine
		Expect(json.Unmarshal([]byte(ls[1]), &first)).To(Succeed())
		Expect(json.Unmarshal([]byte(ls[3]), &second)).To(Succeed())
		Expect(first.Request).To(HaveKey("system"))
		Expect(first.Request).To(HaveKey("tools"))
		Expect(first.Request).NotTo(HaveKey("prior"))
		Expect(string(first.Request["messages"])).To(Equal(`[{"role":"user","content":"count"}]`))

		Expect(string(second.Request["prior"])).To(Equal("1"), "the user message is the previous request's")
		Expect(string(second.Request["inherit"])).To(Equal("true"), "system and tools did not change")
		Expect(second.Request).NotTo(HaveKey("system"))
		Expect(second.Request).NotTo(HaveKey("tools"))
		Expect(string(second.Request["messages"])).To(Equal(`[{"role":"assistant","toolCalls":[{"id":"call_1","name":"note","arguments":"{\"i\": 1}"}]},{"role":"tool","content":"{\"noted\":1}","toolCallId":"call_1","toolName":"note"}]`))
		Expect(first.Digest).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
		Expect(second.Digest).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
		Expect(second.Digest).NotTo(Equal(first.Digest))
	})

	It("reads every request back whole, exactly as the runtime sent it, and unedited", func() {
		_, model := steps(6)
		sent := &requestsOf{inner: model}
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, sent, cassette.RecordOptions{Clock: fixedClock(), RealClock: fixedClock()})
		Expect(err).NotTo(HaveOccurred())
		_, err = runSteps(6, rec)
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Close()).To(Succeed())

		c := mustRead(buf.Bytes(), "x")
		Expect(c.Exchanges).To(HaveLen(len(sent.reqs)))
		for i, x := range c.Exchanges {
			want := sent.reqs[i]
			Expect(x.Request.Messages).To(Equal(want.Messages), "request %d", i+1)
			Expect(x.Request.System).To(Equal(want.System))
			Expect(x.Request.Tools).To(HaveLen(len(want.Tools)))
			for j := range want.Tools {
				Expect(x.Request.Tools[j].Name).To(Equal(want.Tools[j].Name))
				Expect(x.Request.Tools[j].Parameters).To(MatchJSON(want.Tools[j].Parameters))
			}
			Expect(x.Edited).To(BeFalse(), "request %d", i+1)
			Expect(x.Digest).To(MatchRegexp(`^sha256:`))
		}
	})

	It("grows linearly with the run: a thousand-step run writes no more per step than a hundred-step run", func() {
		small, large := recordSteps(100), recordSteps(1000)
		perSmall, perLarge := float64(len(small))/100, float64(len(large))/1000
		Expect(perLarge).To(BeNumerically("<", 1.2*perSmall),
			"bytes per step: %.0f at 100 steps, %.0f at 1000", perSmall, perLarge)
		Expect(len(large)).To(BeNumerically("<", 1<<20), "a thousand steps in well under a megabyte")
		Expect(mustRead(large, "x").Exchanges).To(HaveLen(1000))
	})

	It("marks a request line edited by hand, and a divergence there says so", func() {
		b := recordSteps(3)
		// Change the first user message; the edit carries into every
		// later request of the run, which only refer to it.
		edited := bytes.Replace(b, []byte(`"content":"count"`), []byte(`"content":"count twice"`), 1)
		c := mustRead(edited, "x")
		Expect(c.Exchanges[0].Edited).To(BeTrue())
		Expect(c.Exchanges[1].Edited).To(BeTrue(), "the run's later requests rebuild the edited message too")

		_, err := runSteps(3, cassette.NewReplayer(c, cassette.ReplayOptions{}))
		var d *cassette.Divergence
		Expect(err).To(MatchError(cassette.ErrDivergence))
		Expect(errorsAs(err, &d)).To(BeTrue())
		Expect(d.Field).To(Equal("messages[0].content"))
		Expect(d.Error()).To(ContainSubstring("(line 2 was edited by hand: the request it rebuilds no longer matches its digest)"))
	})

	It("embeds a scenario's source with its digest, and a reader refuses a source that no longer matches it", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Text: "ok"}, nil
		}), cassette.RecordOptions{Header: cassette.Header{Scenario: "leaves", ScenarioSource: "name: leaves\n"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Close()).To(Succeed())
		c := mustRead(buf.Bytes(), "x")
		Expect(c.Header.ScenarioSource).To(Equal("name: leaves\n"))
		Expect(c.Header.ScenarioDigest).To(Equal(cassette.Digest([]byte("name: leaves\n"))))

		tampered := strings.Replace(buf.String(), `name: leaves\n`, `name: other\n`, 1)
		_, err = cassette.Read(strings.NewReader(tampered), "x")
		Expect(err).To(MatchError(cassette.ErrMalformed))
		Expect(err.Error()).To(ContainSubstring("the embedded scenarioSource does not match scenarioDigest"))
	})

	It("writes back, through Cassette.Write, the same bytes it read, for a run whose history a middleware rewrote", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Text: "ok"}, nil
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		a := []core.Message{{Role: core.RoleUser, Content: "one"}, {Role: core.RoleAssistant, Content: "two"}}
		for i, msgs := range [][]core.Message{a, {a[0], {Role: core.RoleAssistant, Content: "TWO"}, {Role: core.RoleUser, Content: "three"}}} {
			_, err := rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: i + 1, Messages: msgs})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(rec.Close()).To(Succeed())
		Expect(lines(buf.Bytes())[3]).To(ContainSubstring(`"prior":1,"inherit":true,"messages":[{"role":"assistant","content":"TWO"},{"role":"user","content":"three"}]`))
		c := mustRead(buf.Bytes(), "x")
		Expect(c.Exchanges[1].Request.Messages).To(HaveLen(3))
		Expect(c.Exchanges[0].Request.Messages[1].Content).To(Equal("two"), "the earlier request keeps its own history")
		var out bytes.Buffer
		Expect(c.Write(&out)).To(Succeed())
		Expect(out.String()).To(Equal(buf.String()))
	})
})
