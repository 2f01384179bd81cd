package cassette_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/harness/cassette"
)

// capture remembers every response a provider gave.
type capture struct {
	inner core.Provider
	mu    sync.Mutex
	resps []*core.Response
}

func (c *capture) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, err := c.inner.Step(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resps = append(c.resps, resp)
	return resp, err
}

var _ = Describe("Replaying", func() {
	It("replays a recorded session offline, in lockstep, with an identical transcript", func() {
		b, live := recorded(cassette.RecordOptions{}, session{}, nil)
		rep := cassette.NewReplayer(mustRead(b, "leaves.cassette"), cassette.ReplayOptions{})
		text, res, err := session{provider: rep}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal(finalAnswer))
		Expect(text).To(Equal(live))
		Expect(rep.Err()).NotTo(HaveOccurred())
		Expect(rep.Divergences()).To(BeEmpty())
		Expect(rep.Extra()).To(BeEmpty())
	})

	It("hands the runtime a child's structured output byte for byte as the server wrote it, so a fresh recording replays clean", func() {
		spaced := "{\n  \"summary\":  \"Chlorophyll fades \\u2014 and carotenoids show.\",\n  \"findings\": [ \"carotenoids\" ]\n}"
		b, live := recorded(cassette.RecordOptions{}, session{}, func(string) (int, string) { return 200, textCompletion(spaced) })
		cap := &capture{inner: cassette.NewReplayer(mustRead(b, "leaves.cassette"), cassette.ReplayOptions{})}
		text, _, err := session{provider: cap}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(text).To(Equal(live))
		var outputs []string
		for _, r := range cap.resps {
			if len(r.Output) > 0 {
				outputs = append(outputs, string(r.Output))
			}
		}
		Expect(outputs).To(Equal([]string{spaced}))
	})

	It("hands the runtime prose that only looks like a credential byte for byte: the word bearer before an ordinary word is not a token", func() {
		prose := `{"summary":"Bearer instruments and bearer securities pay the holder.","findings":["A standard-bearer position."]}`
		b, live := recorded(cassette.RecordOptions{}, session{}, func(string) (int, string) { return 200, textCompletion(prose) })
		Expect(string(b)).NotTo(ContainSubstring(cassette.Redacted))
		cap := &capture{inner: cassette.NewReplayer(mustRead(b, "leaves.cassette"), cassette.ReplayOptions{})}
		text, _, err := session{provider: cap}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(text).To(Equal(live))
		var outputs []string
		for _, r := range cap.resps {
			if len(r.Output) > 0 {
				outputs = append(outputs, string(r.Output))
			}
		}
		Expect(outputs).To(Equal([]string{prose}))
	})

	It("matches a run with other ids and another clock, and hands it the recorded answers in its own ids", func() {
		b, live := recorded(cassette.RecordOptions{}, session{ids: core.RandomIDs{}}, nil)
		Expect(string(b)).To(MatchRegexp(`"id":"w_[a-z2-7]{16}"`), "the recording used random ids")
		Expect(string(b)).To(ContainSubstring(`"createdAt\":\"2026-01-02T03:04:05.000Z\"`), "and its clock's timestamps")

		cap := &capture{inner: cassette.NewReplayer(mustRead(b, "leaves.cassette"), cassette.ReplayOptions{})}
		later := clockwork.NewFakeClockAt(time.Date(2031, 7, 8, 9, 10, 11, 0, time.UTC))
		text, _, err := session{provider: cap, ids: &core.SequentialIDs{}, clock: later}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(text).To(Equal(live))
		var args []string
		for _, r := range cap.resps {
			for _, c := range r.ToolCalls {
				if c.Name == "work" {
					args = append(args, c.Arguments)
				}
			}
		}
		Expect(args).To(Equal([]string{`{"action":"status","id":"w-1"}`, `{"action":"result","id":"w-1"}`}))
	})

	It("fails the step with a mismatch that names the field, shows both sides and the cassette line when one recorded response is edited", func() {
		b, _ := recorded(cassette.RecordOptions{}, session{}, nil)
		edited := bytes.Replace(b, []byte(`revealing carotenoids`), []byte(`revealing anthocyanins`), 1)
		Expect(edited).NotTo(Equal(b))
		rep := cassette.NewReplayer(mustRead(edited, "leaves.cassette"), cassette.ReplayOptions{})
		_, _, err := session{provider: rep}.run()

		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue(), "the run fails with the divergence: %v", err)
		Expect(err).To(MatchError(cassette.ErrDivergence))
		Expect(d.Kind).To(Equal(cassette.Mismatch))
		Expect(d.Agent).To(Equal("research-coordinator"))
		Expect(d.Ordinal).To(Equal(1))
		Expect(d.Step).To(Equal(4))
		Expect(d.Field).To(Equal("messages[6].content"))
		Expect(d.Path).To(Equal("summary"), "a tool result is compared as JSON")
		Expect(d.Recorded).To(Equal(findings))
		Expect(d.Live).To(Equal(strings.Replace(findings, "revealing carotenoids", "revealing anthocyanins", 1)))
		Expect(d.File).To(Equal("leaves.cassette"))
		Expect(d.Line).To(Equal(lineOf(edited, `"kind":"request"`, `"agent":"research-coordinator"`, `"step":4`)))
		Expect(d.Error()).To(Equal(fmt.Sprintf("leaves.cassette:%d: replay mismatch: research-coordinator run 1 step 4 differs from the cassette at messages[6].content (as JSON, at summary)\n"+
			"  cassette: %s\n  run:      %s", d.Line, findings, strings.Replace(findings, "revealing carotenoids", "revealing anthocyanins", 1))))
		Expect(rep.Err()).To(BeIdenticalTo(d))
	})

	It("reports a request the cassette does not have as missing, at the last exchange of that run", func() {
		b, _ := recorded(cassette.RecordOptions{}, session{}, nil)
		c := mustRead(b, "leaves.cassette")
		c.Exchanges = c.Exchanges[:len(c.Exchanges)-1] // the coordinator's last step
		var buf bytes.Buffer
		Expect(c.Write(&buf)).To(Succeed())
		short := mustRead(buf.Bytes(), "short.cassette")

		rep := cassette.NewReplayer(short, cassette.ReplayOptions{})
		_, _, err := session{provider: rep}.run()
		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue())
		Expect(d.Kind).To(Equal(cassette.Missing))
		Expect(d.Step).To(Equal(4))
		Expect(d.Line).To(Equal(lineOf(buf.Bytes(), `"kind":"request"`, `"agent":"research-coordinator"`, `"step":3`)))
		Expect(d.Error()).To(HavePrefix(fmt.Sprintf("short.cassette:%d: replay missing: research-coordinator run 1 made request step 4, but the cassette has no more exchanges of that run (its last, step 3, is at line %d)\n", d.Line, d.Line)))
		// Both sides: what the cassette has there (nothing) and the run's request.
		Expect(d.Error()).To(MatchRegexp(`\n  cassette: \(no exchange: the run's last recorded request is step 3\)\n  run:      step 4, \d+ messages, the last tool answering \S+: `))
		Expect(rep.Extra()).To(BeEmpty())
	})

	It("reports a run of an agent the cassette never recorded as missing", func() {
		rep := cassette.NewReplayer(&cassette.Cassette{File: "empty.cassette"}, cassette.ReplayOptions{})
		_, err := rep.Step(context.Background(), &core.Request{Agent: "ghost", Run: "r1", Step: 1})
		Expect(err).To(MatchError(ContainSubstring(`empty.cassette: replay missing: ghost started run 1 (step 1), but the cassette has no exchanges of agent "ghost"`)))
	})

	It("reports exchanges no one asked for as extra once the run is over, and not before", func() {
		b, _ := recorded(cassette.RecordOptions{}, session{}, nil)
		c := mustRead(b, "leaves.cassette")
		child := *c.Exchanges[1]
		child.Step = 2
		c.Exchanges = append(c.Exchanges, &child) // a second step the child never takes
		var buf bytes.Buffer
		Expect(c.Write(&buf)).To(Succeed())

		rep := cassette.NewReplayer(mustRead(buf.Bytes(), "long.cassette"), cassette.ReplayOptions{})
		_, _, err := session{provider: rep}.run()
		Expect(err).NotTo(HaveOccurred(), "extra exchanges do not fail a step")
		Expect(rep.Divergences()).To(BeEmpty())
		extra := rep.Extra()
		Expect(extra).To(HaveLen(1))
		Expect(extra[0].Kind).To(Equal(cassette.Extra))
		Expect(extra[0].Agent).To(Equal("research-agent"))
		Expect(extra[0].Step).To(Equal(2))
		Expect(extra[0].Remaining).To(Equal(1))
		Expect(extra[0].Line).To(Equal(len(lines(buf.Bytes())) - 2))
		Expect(extra[0].Error()).To(HavePrefix(fmt.Sprintf("long.cassette:%d: replay extra: research-agent run 1 step 2 was recorded but never requested\n", extra[0].Line)))
		Expect(extra[0].Error()).To(MatchRegexp(`\n  cassette: step 2, \d+ messages?, the last user: .+\n  run:      \(no request: the run ended before step 2\)$`))
		Expect(rep.Err()).To(Equal(extra[0]))
	})

	It("replays a recorded provider failure with its message, so the transcript is the same", func() {
		refuse := func(string) (int, string) {
			return 400, `{"error":{"message":"Invalid schema for response_format","type":"invalid_request_error"}}`
		}
		b, live := recorded(cassette.RecordOptions{}, session{}, refuse)
		Expect(live).To(ContainSubstring("w-1 research running → failed"))
		rep := cassette.NewReplayer(mustRead(b, "x"), cassette.ReplayOptions{})
		text, res, err := session{provider: rep}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal("The research failed."))
		Expect(text).To(Equal(live))
		Expect(rep.Err()).NotTo(HaveOccurred())
	})

	It("replays a recorded cancellation as a cancellation", func() {
		c := &cassette.Cassette{Exchanges: []*cassette.Exchange{{Seq: 1, Agent: "a", Ordinal: 1, Run: "r", Step: 1,
			Request: &core.Request{Agent: "a", Run: "r", Step: 1}, Err: &cassette.RecordedError{Kind: cassette.ErrorCanceled, Message: "context canceled"}}}}
		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), &core.Request{Agent: "a", Run: "other", Step: 1})
		Expect(err).To(MatchError(context.Canceled))
		var re *cassette.RecordedError
		Expect(errors.As(err, &re)).To(BeTrue(), "and it can be told apart from a live one")
	})

	It("waits each exchange's recorded duration through Sleep, in order", func() {
		clock := fixedClock()
		m := newModel()
		b, _ := record(slow(openaiOn(m, ""), clock, 1500*time.Millisecond), cassette.RecordOptions{Clock: clock}, session{clock: clock})
		m.Close()
		var mu sync.Mutex
		var waited []time.Duration
		rep := cassette.NewReplayer(mustRead(b, "x"), cassette.ReplayOptions{Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			waited = append(waited, d)
			return nil
		}})
		_, _, err := session{provider: rep}.run()
		Expect(err).NotTo(HaveOccurred())
		Expect(waited).To(Equal([]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}))
	})

	It("does not answer a request whose context is already done", func() {
		b, _ := recorded(cassette.RecordOptions{}, session{}, nil)
		rep := cassette.NewReplayer(mustRead(b, "x"), cassette.ReplayOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := rep.Step(ctx, &core.Request{Agent: "research-coordinator", Run: "r", Step: 1})
		Expect(err).To(MatchError(context.Canceled))
		Expect(rep.Divergences()).To(BeEmpty())
		Expect(rep.Extra()).To(HaveLen(2), "nothing was consumed")
	})
})

// stepwise builds a cassette from requests answered by a function, through
// the real Recorder, and returns it read back.
func stepwise(opts cassette.RecordOptions, answer func(*core.Request) *core.Response, reqs ...*core.Request) *cassette.Cassette {
	var buf bytes.Buffer
	rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		return answer(req), nil
	}), opts)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, r := range reqs {
		_, err := rec.Step(context.Background(), r)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	ExpectWithOffset(1, rec.Close()).To(Succeed())
	return mustRead(buf.Bytes(), "steps.cassette")
}

func user(s string) []core.Message { return []core.Message{{Role: core.RoleUser, Content: s}} }

func echo(req *core.Request) *core.Response {
	return &core.Response{Text: "answer to " + req.Messages[len(req.Messages)-1].Content}
}

var _ = Describe("Matching requests to recorded exchanges", func() {
	It("tells apart two runs of one agent whose first requests arrive in the other order than recorded", func() {
		c := stepwise(cassette.RecordOptions{}, echo,
			&core.Request{Agent: "research-agent", Run: "run-2", Step: 1, Messages: user("maples")},
			&core.Request{Agent: "research-agent", Run: "run-3", Step: 1, Messages: user("oaks")},
			&core.Request{Agent: "research-agent", Run: "run-3", Step: 2, Messages: user("oaks, again")},
		)
		rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
		resp, err := rep.Step(context.Background(), &core.Request{Agent: "research-agent", Run: "x", Step: 1, Messages: user("oaks")})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("answer to oaks"))
		resp, err = rep.Step(context.Background(), &core.Request{Agent: "research-agent", Run: "y", Step: 1, Messages: user("maples")})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("answer to maples"))
		resp, err = rep.Step(context.Background(), &core.Request{Agent: "research-agent", Run: "x", Step: 2, Messages: user("oaks, again")})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Text).To(Equal("answer to oaks, again"))
		Expect(rep.Err()).NotTo(HaveOccurred())
	})

	It("ignores elapsed seconds and timestamps in status blocks and tool results, but not states", func() {
		status := func(state lifecycle.State, elapsed time.Duration) *core.StatusBlock {
			row := core.StatusRow{ID: "w_aaaaaaaaaaaaaaaa", Label: "research", State: state, Elapsed: elapsed}
			return &core.StatusBlock{Text: "Background work:\n" + row.String(), Rows: []core.StatusRow{row}}
		}
		history := func(id, at string) []core.Message {
			return []core.Message{{Role: core.RoleUser, Content: "go"},
				{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "c1", Name: "work", Arguments: `{"action":"status","id":"` + id + `"}`}}},
				{Role: core.RoleTool, ToolCallID: "c1", Content: `{"work":{"id":"` + id + `"},"state":"running","createdAt":"` + at + `"}`}}
		}
		recordedReq := &core.Request{Agent: "coord", Run: "run-1", Step: 2, Messages: history("w_aaaaaaaaaaaaaaaa", "2026-01-02T03:04:05.000Z"),
			Status: status(lifecycle.Running, 4*time.Second)}
		c := stepwise(cassette.RecordOptions{}, func(*core.Request) *core.Response { return &core.Response{Text: "ok"} }, recordedReq)

		same := &core.Request{Agent: "coord", Run: "run-9", Step: 2, Messages: history("w-1", "2031-05-06T07:08:09.123Z"),
			Status: status(lifecycle.Running, 17*time.Second)}
		same.Status.Rows[0].ID = "w-1"
		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), same)
		Expect(err).NotTo(HaveOccurred())

		finished := &core.Request{Agent: "coord", Run: "run-9", Step: 2, Messages: history("w-1", "2031-05-06T07:08:09.123Z"),
			Status: status(lifecycle.Completed, 4*time.Second)}
		finished.Status.Rows[0].ID = "w-1"
		_, err = cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), finished)
		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue())
		Expect(d.Field).To(Equal("status.rows[0].state"))
		Expect(d.Recorded).To(Equal("running"))
		Expect(d.Live).To(Equal("completed"))

		_, err = cassette.NewReplayer(c, cassette.ReplayOptions{IgnoreStatus: true}).Step(context.Background(), finished)
		Expect(err).NotTo(HaveOccurred(), "IgnoreStatus is for recordings made with real goroutines")
	})

	It("sees a run that mixes up two ids as a mismatch, though each id alone could be renamed", func() {
		msgs := func(a, b string) []core.Message {
			return []core.Message{{Role: core.RoleTool, ToolCallID: "c1", Content: `{"kind":"work.ref","id":"` + a + `"}`},
				{Role: core.RoleTool, ToolCallID: "c2", Content: `{"kind":"work.ref","id":"` + b + `"}`},
				{Role: core.RoleUser, Content: "result of " + a}}
		}
		c := stepwise(cassette.RecordOptions{}, echo, &core.Request{Agent: "coord", Run: "r", Step: 1, Messages: msgs("w-1", "w-2")})
		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
			&core.Request{Agent: "coord", Run: "q", Step: 1, Messages: append(msgs("w-7", "w-8")[:2], core.Message{Role: core.RoleUser, Content: "result of w-8"})})
		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue())
		Expect(d.Field).To(Equal("messages[2].content"))
		Expect(d.Recorded).To(Equal("result of <w#1>"))
		Expect(d.Live).To(Equal("result of <w#2>"))
	})

	It("lets a [REDACTED] in the cassette stand for the secret the run sends, and nothing else", func() {
		const secret = "tenant-secret-4f9a2c"
		c := stepwise(cassette.RecordOptions{Secrets: []string{secret}}, echo,
			&core.Request{Agent: "a", Run: "r", Step: 1, System: "Use tenant " + secret + " for lookups.", Messages: user("hi")})
		Expect(c.Exchanges[0].Request.System).To(Equal("Use tenant [REDACTED] for lookups."))

		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
			&core.Request{Agent: "a", Run: "r", Step: 1, System: "Use tenant " + secret + " for lookups.", Messages: user("hi")})
		Expect(err).NotTo(HaveOccurred())

		_, err = cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
			&core.Request{Agent: "a", Run: "r", Step: 1, System: "Use tenant " + secret + " for writes.", Messages: user("hi")})
		Expect(err).To(MatchError(cassette.ErrDivergence))
		Expect(err).To(MatchError(ContainSubstring("differs from the cassette at system")))
	})

	It("compares tools and output schemas by meaning, not by key order", func() {
		schema := func(doc string) *core.Schema { return core.MustSchema(doc) }
		c := stepwise(cassette.RecordOptions{}, echo, &core.Request{Agent: "a", Run: "r", Step: 1, Messages: user("hi"),
			Tools:  []core.ToolSpec{{Name: "t", Parameters: []byte(`{"type":"object","properties":{"x":{"type":"string"}}}`)}},
			Output: schema(`{"type":"object","required":["y"]}`)})
		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1, Messages: user("hi"),
			Tools:  []core.ToolSpec{{Name: "t", Parameters: []byte(`{"properties":{"x":{"type":"string"}},"type":"object"}`)}},
			Output: schema(`{"required":["y"],"type":"object"}`)})
		Expect(err).NotTo(HaveOccurred())

		_, err = cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1, Messages: user("hi"),
			Tools:  []core.ToolSpec{{Name: "t", Parameters: []byte(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}},
			Output: schema(`{"type":"object","required":["y"]}`)})
		Expect(err).To(MatchError(ContainSubstring("at tools[0].parameters")))
	})

	It("compares JSON the runtime or the model wrote by value: new layout, key order or escapes are no divergence, a changed value is one at its JSON path", func() {
		history := func(args, result string) []core.Message {
			return []core.Message{{Role: core.RoleUser, Content: "go"},
				{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "c1", Name: "research", Arguments: args}}},
				{Role: core.RoleTool, ToolCallID: "c1", ToolName: "research", Content: result}}
		}
		c := stepwise(cassette.RecordOptions{}, echo, &core.Request{Agent: "coord", Run: "r", Step: 2,
			Messages: history(`{"question":"q","run_in_background":true}`, `{"kind":"work.ref","id":"w-1","targetId":"research-agent","n":1.0}`)})
		try := func(args, result string) error {
			_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
				&core.Request{Agent: "coord", Run: "q", Step: 2, Messages: history(args, result)})
			return err
		}
		Expect(try("{\n  \"run_in_background\": true,\n  \"question\": \"\\u0071\"\n}",
			`{ "targetId" : "research-agent", "n": 1, "id": "w\u002d1", "kind": "work.ref" }`)).To(Succeed())

		var d *cassette.Divergence
		Expect(errors.As(try(`{"question":"q","run_in_background":false}`, `{"kind":"work.ref","id":"w-1","targetId":"research-agent","n":1}`), &d)).To(BeTrue())
		Expect([]string{d.Field, d.Path}).To(Equal([]string{"messages[1].toolCalls[0].arguments", "run_in_background"}))
		Expect(errors.As(try(`{"question":"q","run_in_background":true}`, `{"kind":"work.ref","id":"w-1","targetId":"other-agent","n":1}`), &d)).To(BeTrue())
		Expect([]string{d.Field, d.Path}).To(Equal([]string{"messages[2].content", "targetId"}))
		Expect(d.Recorded).To(Equal(`{"kind":"work.ref","id":"<w#1>","targetId":"research-agent","n":1.0}`))
		Expect(d.Live).To(Equal(`{"kind":"work.ref","id":"<w#1>","targetId":"other-agent","n":1}`))
		Expect(errors.As(try(`{"question":"q","run_in_background":true}`, `{"kind":"work.ref","id":"w-1","targetId":"research-agent"}`), &d)).To(BeTrue())
		Expect(d.Path).To(Equal("n"), "a key one side lacks")
		Expect(errors.As(try(`{"question":"q","run_in_background":true}`, `not JSON`), &d)).To(BeTrue())
		Expect([]string{d.Field, d.Path}).To(Equal([]string{"messages[2].content", ""}), "JSON against text is compared as text")
	})

	It("compares numbers by value, and integers digit for digit", func() {
		c := stepwise(cassette.RecordOptions{}, echo, &core.Request{Agent: "a", Run: "r", Step: 1,
			Messages: []core.Message{{Role: core.RoleTool, ToolCallID: "c", Content: `{"big":12345678901234567890,"f":2.5e0,"z":0}`}}})
		try := func(content string) error {
			_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
				&core.Request{Agent: "a", Run: "r", Step: 1, Messages: []core.Message{{Role: core.RoleTool, ToolCallID: "c", Content: content}}})
			return err
		}
		Expect(try(`{"big":12345678901234567890,"f":2.50,"z":-0}`)).To(Succeed())
		Expect(try(`{"big":12345678901234567891,"f":2.5,"z":0}`)).To(MatchError(ContainSubstring("(as JSON, at big)")))
	})

	It("compares message text exactly: one more space in a user message is a divergence", func() {
		c := stepwise(cassette.RecordOptions{}, echo, &core.Request{Agent: "a", Run: "r", Step: 1, Messages: user("Why do leaves change colour?")})
		_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(),
			&core.Request{Agent: "a", Run: "r", Step: 1, Messages: user("Why do leaves change colour? ")})
		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue())
		Expect([]string{d.Field, d.Recorded, d.Live}).To(Equal([]string{"messages[0].content", "Why do leaves change colour?", "Why do leaves change colour? "}))
	})

	It("sees a run that rewrites an earlier message of its history, though it compares only what each request adds", func() {
		first := user("one")
		second := append(slices.Clip(first), core.Message{Role: core.RoleAssistant, Content: "two"}, core.Message{Role: core.RoleUser, Content: "three"})
		c := stepwise(cassette.RecordOptions{}, echo,
			&core.Request{Agent: "a", Run: "r", Step: 1, Messages: first},
			&core.Request{Agent: "a", Run: "r", Step: 2, Messages: second})
		rep := cassette.NewReplayer(c, cassette.ReplayOptions{})
		_, err := rep.Step(context.Background(), &core.Request{Agent: "a", Run: "q", Step: 1, Messages: user("one")})
		Expect(err).NotTo(HaveOccurred())
		rewritten := []core.Message{{Role: core.RoleUser, Content: "ONE"}, second[1], second[2]}
		_, err = rep.Step(context.Background(), &core.Request{Agent: "a", Run: "q", Step: 2, Messages: rewritten})
		var d *cassette.Divergence
		Expect(errors.As(err, &d)).To(BeTrue())
		Expect([]string{d.Field, d.Recorded, d.Live}).To(Equal([]string{"messages[0].content", "one", "ONE"}))
	})

	It("reports a different step, a missing message and an extra tool call precisely", func() {
		base := &core.Request{Agent: "a", Run: "r", Step: 1, Messages: []core.Message{{Role: core.RoleUser, Content: "hi"},
			{Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}}}}}
		c := stepwise(cassette.RecordOptions{}, echo, base)
		try := func(req *core.Request) *cassette.Divergence {
			_, err := cassette.NewReplayer(c, cassette.ReplayOptions{}).Step(context.Background(), req)
			var d *cassette.Divergence
			ExpectWithOffset(1, errors.As(err, &d)).To(BeTrue())
			return d
		}
		d := try(&core.Request{Agent: "a", Run: "r", Step: 2, Messages: base.Messages})
		Expect([]string{d.Field, d.Recorded, d.Live}).To(Equal([]string{"step", "1", "2"}))
		d = try(&core.Request{Agent: "a", Run: "r", Step: 1, Messages: base.Messages[:1]})
		Expect([]string{d.Field, d.Recorded, d.Live}).To(Equal([]string{"messages[1]", "assistant:  [call t {}]", "(absent)"}))
		twoCalls := []core.Message{base.Messages[0], {Role: core.RoleAssistant, ToolCalls: []core.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}, {ID: "c2", Name: "u", Arguments: `{"x":1}`}}}}
		d = try(&core.Request{Agent: "a", Run: "r", Step: 1, Messages: twoCalls})
		Expect([]string{d.Field, d.Recorded, d.Live}).To(Equal([]string{"messages[1].toolCalls[1]", "(absent)", `u {"x":1}`}))
	})
})
