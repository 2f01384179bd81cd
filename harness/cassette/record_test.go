package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/internal/fixture"
)

// slow makes every step take d on the run's (fake) clock, as a provider's
// latency would under the simulator.
func slow(p core.Provider, clock *clockwork.FakeClock, d time.Duration) core.Provider {
	return core.ProviderFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
		clock.Advance(d)
		return p.Step(ctx, req)
	})
}

func fixedClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

var _ = Describe("Recording", func() {
	var m *model
	BeforeEach(func() {
		m = newModel()
		DeferCleanup(m.Close)
	})
	seed := int64(42)
	header := func() cassette.Header {
		return cassette.Header{CruxSim: "v0.1.0-test", Scenario: "leaves", Seed: &seed, Model: "gpt-test", BaseURL: m.URL + "/v1",
			Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	}

	It("writes a header, a request and a response line per exchange in the order they finished, and an end line", func() {
		clock := fixedClock()
		b, _ := record(slow(openaiOn(m, ""), clock, 1500*time.Millisecond), cassette.RecordOptions{Header: header(), Clock: clock}, session{clock: clock})
		ls := lines(b)
		Expect(ls).To(HaveLen(1 + 2*5 + 1))
		Expect(ls[0]).To(Equal(fmt.Sprintf(`{"kind":"header","format":"crux-sim-cassette","version":2,"cruxSim":"v0.1.0-test","scenario":"leaves","seed":42,"model":"gpt-test","baseURL":"%s/v1","created":"2026-01-02T03:04:05Z"}`, m.URL)))
		Expect(ls[len(ls)-1]).To(Equal(`{"kind":"end","exchanges":5}`))
		Expect(ls[1]).To(MatchRegexp(`^\{"kind":"request","seq":1,"agent":"research-coordinator","ordinal":1,"run":"research-coordinator#1","step":1,"at":"0s","realAt":"0s","digest":"sha256:[0-9a-f]{64}","request":\{"model":"gpt-test","system":"You coordinate a research task\.`))
		Expect(ls[2]).To(Equal(`{"kind":"response","seq":1,"agent":"research-coordinator","step":1,"duration":"1.5s","realDuration":"0s","response":{"toolCalls":[{"id":"call_research","name":"research","arguments":"{\"question\":\"Why do leaves change colour?\",\"run_in_background\":true}"}],"usage":{"promptTokens":30,"completionTokens":9}}}`), "slow hides the adapter's finish reason")

		c := mustRead(b, "leaves.cassette")
		Expect(c.Header.Version).To(Equal(cassette.Version))
		Expect(c.Header.Scenario).To(Equal("leaves"))
		Expect(c.Header.Seed).To(HaveValue(Equal(int64(42))))
		type step struct {
			Agent         string
			Ordinal, Step int
			At            time.Duration
		}
		var got []step
		for _, x := range c.Exchanges {
			got = append(got, step{x.Agent, x.Ordinal, x.Step, x.Timing.At})
			Expect(x.Timing.Duration).To(Equal(1500 * time.Millisecond))
		}
		Expect(got).To(Equal([]step{
			{"research-coordinator", 1, 1, 0},
			{"research-agent", 1, 1, 1500 * time.Millisecond},
			{"research-coordinator", 1, 2, 3 * time.Second},
			{"research-coordinator", 1, 3, 4500 * time.Millisecond},
			{"research-coordinator", 1, 4, 6 * time.Second},
		}))
	})

	It("keeps the semantic request whole: system, history, status block, tools and output schema", func() {
		b, _ := record(openaiOn(m, ""), cassette.RecordOptions{Header: header()}, session{})
		c := mustRead(b, "leaves.cassette")
		child := c.Exchanges[1]
		Expect(child.Request.System).To(Equal(fixture.ResearchSystem))
		Expect(child.Request.Messages).To(Equal([]core.Message{{Role: core.RoleUser, Content: question}}))
		Expect(child.Request.Output.JSON()).To(MatchJSON(fixture.FindingsSchema.JSON()))
		Expect(child.Response.Output).To(MatchJSON(findings))
		Expect(child.FinishReason).To(Equal("stop"))

		step2 := c.Exchanges[2].Request
		Expect(step2.Tools).To(HaveLen(2))
		Expect(step2.Tools[0].Name).To(Equal("research"))
		Expect(step2.Tools[1].Name).To(Equal("work"))
		Expect(step2.Messages[len(step2.Messages)-1].Content).To(MatchJSON(`{"kind":"work.ref","id":"w-1","targetId":"research-agent","guarantees":{"execution":"process-local","rejoin":"process-local"}}`))
		Expect(step2.Status).NotTo(BeNil())
		Expect(step2.Status.Text).To(Equal("Background work:\n- w-1 · research · completed 0s · Result available"))
		Expect(step2.Status.Rows).To(ConsistOf(And(HaveField("ID", "w-1"), HaveField("State", core.WorkState("completed")), HaveField("ResultAvailable", true))))
	})

	It("records the same session as the same bytes", func() {
		a, _ := record(openaiOn(m, ""), cassette.RecordOptions{Header: header()}, session{})
		b, _ := record(openaiOn(m, ""), cassette.RecordOptions{Header: header()}, session{})
		Expect(string(a)).To(Equal(string(b)))
	})

	It("never writes the API key, the Authorization header, credentials in the base URL or configured secret patterns", func() {
		const key = "sk-live-Zx81kQp0TmVb2rT7yU3wNc"
		m.child = func(auth string) (int, string) {
			// A model that repeats what it was sent, header included.
			return 200, textCompletion(fmt.Sprintf(`{"findings":"I was called with Authorization: %s for account acct-123456"}`, auth))
		}
		h := header()
		h.BaseURL = "https://deploy:hunter2hunter2@api.example.test/v1?api-key=abc123secretvalue&region=eu"
		b, text := record(openaiOn(m, key), cassette.RecordOptions{Header: h, Secrets: []string{key},
			SecretPatterns: []*regexp.Regexp{regexp.MustCompile(`acct-\d+`)}}, session{})
		Expect(text).To(ContainSubstring(key), "the run itself saw the echoed key, so the cassette had something to hide")
		out := string(b)
		for _, secret := range []string{key, "Zx81kQp0TmVb2rT7yU3wNc", "Bearer sk-", "hunter2", "abc123secretvalue", "acct-123456"} {
			Expect(out).NotTo(ContainSubstring(secret))
		}
		Expect(out).To(ContainSubstring(`I was called with Authorization: [REDACTED] for account [REDACTED]`))
		c := mustRead(b, "x")
		Expect(c.Header.BaseURL).To(Equal("https://api.example.test/v1?api-key=[REDACTED]&region=eu"))
	})

	It("records a provider error with its kind and message and returns it unchanged", func() {
		m.child = func(string) (int, string) {
			return 400, `{"error":{"message":"Invalid schema for response_format 'research-agent'","type":"invalid_request_error","code":null}}`
		}
		b, text := record(openaiOn(m, ""), cassette.RecordOptions{Header: header()}, session{})
		Expect(text).To(ContainSubstring("research-agent#1 response 1 error: openai: chat completion at"))
		c := mustRead(b, "x")
		child := c.Exchanges[1]
		Expect(child.Agent).To(Equal("research-agent"))
		Expect(child.Response).To(BeNil())
		Expect(child.Err.Kind).To(Equal(cassette.ErrorProvider))
		Expect(child.Err.Message).To(ContainSubstring("HTTP 400 Bad Request: request refused"))
		Expect(child.Err.Message).To(ContainSubstring("Invalid schema for response_format"))
	})

	It("records a cancelled step as a cancellation", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			return nil, fmt.Errorf("provider: %w", context.Canceled)
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1})
		Expect(err).To(MatchError(context.Canceled), "the provider's error goes back unchanged")
		Expect(rec.Close()).To(Succeed())
		c := mustRead(buf.Bytes(), "x")
		Expect(c.Exchanges[0].Err).To(Equal(&cassette.RecordedError{Kind: cassette.ErrorCanceled, Message: "provider: context canceled"}))
	})

	It("numbers an agent's runs in the order their first requests arrive, whatever their run ids", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Text: "ok"}, nil
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, r := range []struct {
			agent, run string
			step       int
		}{{"child", "run-7", 1}, {"child", "run-3", 1}, {"parent", "run-1", 1}, {"child", "run-7", 2}} {
			_, err := rec.Step(context.Background(), &core.Request{Agent: r.agent, Run: r.run, Step: r.step})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(rec.Close()).To(Succeed())
		var ordinals []string
		for _, x := range mustRead(buf.Bytes(), "x").Exchanges {
			ordinals = append(ordinals, fmt.Sprintf("%s#%d/%d", x.Agent, x.Ordinal, x.Step))
		}
		Expect(ordinals).To(Equal([]string{"child#1/1", "child#2/1", "parent#1/1", "child#1/2"}))
	})

	It("fails the step, and every later one, when the cassette cannot be written", func() {
		w := &failingWriter{failAfter: 1}
		calls := 0
		rec, err := cassette.NewRecorder(w, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			calls++
			return &core.Response{Text: "ok"}, nil
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1})
		Expect(err).To(MatchError(errDiskFull))
		Expect(err.Error()).To(ContainSubstring("recording a step 1"))
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 2})
		Expect(err).To(MatchError(errDiskFull))
		Expect(calls).To(Equal(2))
		Expect(rec.Close()).To(MatchError(errDiskFull))
	})

	It("refuses steps after Close, and Close twice is harmless", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			Fail("the inner provider must not be called after Close")
			return nil, nil
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Close()).To(Succeed())
		Expect(rec.Close()).To(Succeed())
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1})
		Expect(err).To(MatchError(cassette.ErrClosed))
		Expect(lines(buf.Bytes())).To(HaveLen(2), "a header and one end line")
	})

	It("writes the file of CreateFile and closes it on Close", func() {
		path := GinkgoT().TempDir() + "/session.cassette"
		rec, err := cassette.CreateFile(path, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Text: "hello"}, nil
		}), cassette.RecordOptions{Header: cassette.Header{Scenario: "file"}})
		Expect(err).NotTo(HaveOccurred())
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Close()).To(Succeed())
		c, err := cassette.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.File).To(Equal(path))
		Expect(c.Exchanges).To(HaveLen(1))
		Expect(c.Exchanges[0].Response.Text).To(Equal("hello"))
	})

	Describe("a recording that fails", func() {
		errRefused := errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
		// failingAt answers until step n of run "r", then fails every step.
		failingAt := func(n int, calls *int) core.Provider {
			return core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
				*calls++
				if req.Step >= n {
					return nil, errRefused
				}
				return &core.Response{Text: "ok"}, nil
			})
		}
		steps := func(rec *cassette.Recorder, n int) []error {
			var errs []error
			for i := 1; i <= n; i++ {
				_, err := rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: i})
				errs = append(errs, err)
			}
			return errs
		}

		It("writes nothing at the cassette's path until it is whole, and leaves no temporary file", func() {
			dir := GinkgoT().TempDir()
			path := dir + "/whole.cassette"
			calls := 0
			rec, err := cassette.CreateFile(path, failingAt(99, &calls), cassette.RecordOptions{})
			Expect(err).NotTo(HaveOccurred())
			steps(rec, 2)
			Expect(path).NotTo(BeAnExistingFile(), "a recording in progress is not a cassette yet")
			Expect(rec.Close()).To(Succeed())
			Expect(mustReadFile(path).Exchanges).To(HaveLen(2))
			entries, _ := os.ReadDir(dir)
			Expect(entries).To(HaveLen(1), "only the cassette is left")
		})

		It("stops at the first provider error StopOn picks: later steps never reach the provider, and no cassette is written", func() {
			dir := GinkgoT().TempDir()
			path := dir + "/x.cassette"
			Expect(os.WriteFile(path, []byte("an earlier cassette\n"), 0o644)).To(Succeed())
			calls := 0
			rec, err := cassette.CreateFile(path, failingAt(2, &calls), cassette.RecordOptions{StopOn: func(err error) bool { return errors.Is(err, errRefused) }})
			Expect(err).NotTo(HaveOccurred())
			errs := steps(rec, 4)
			Expect(errs[0]).NotTo(HaveOccurred())
			Expect(errs[1]).To(MatchError(errRefused), "the failing step gets the provider's error")
			Expect(errs[2]).To(MatchError(cassette.ErrAborted))
			Expect(errs[3]).To(MatchError(errRefused), "and later ones say why")
			Expect(calls).To(Equal(2), "no request after the recording stopped")
			Expect(rec.Stopped()).To(MatchError(errRefused))

			err = rec.Close()
			Expect(err).To(MatchError(cassette.ErrAborted))
			Expect(err).To(MatchError(errRefused))
			Expect(err.Error()).To(Equal("cassette: the recording was stopped: dial tcp 127.0.0.1:9: connect: connection refused; " + path + " was not written"))
			Expect(os.ReadFile(path)).To(Equal([]byte("an earlier cassette\n")), "an earlier cassette is left as it was")
			entries, _ := os.ReadDir(dir)
			Expect(entries).To(HaveLen(1), "the temporary file is gone")
		})

		It("keeps a failed recording only under the name Partial gives, with a header that says it is incomplete", func() {
			dir := GinkgoT().TempDir()
			path, partial := dir+"/x.cassette", dir+"/x.partial"
			calls := 0
			rec, err := cassette.CreateFile(path, failingAt(3, &calls), cassette.RecordOptions{Partial: partial,
				StopOn: func(error) bool { return true }, Header: cassette.Header{Scenario: "leaves"}})
			Expect(err).NotTo(HaveOccurred())
			steps(rec, 3)
			Expect(rec.Close()).To(MatchError(ContainSubstring("the 3 exchange(s) recorded are kept in " + partial + ", marked incomplete")))
			Expect(path).NotTo(BeAnExistingFile())
			b, err := os.ReadFile(partial)
			Expect(err).NotTo(HaveOccurred())
			ls := lines(b)
			Expect(ls).To(HaveLen(1+2*3), "the header and three exchanges, no end line")
			Expect(ls[0]).To(ContainSubstring(`"scenario":"leaves"`))
			Expect(ls[0]).To(ContainSubstring(`"incomplete":"dial tcp 127.0.0.1:9: connect: connection refused"`))
			_, err = cassette.ReadFile(partial)
			Expect(err).To(MatchError(cassette.ErrIncomplete))
		})

		It("ends a streamed recording without its end line when stopped, so a reader sees it is not whole", func() {
			var buf bytes.Buffer
			calls := 0
			rec, err := cassette.NewRecorder(&buf, failingAt(99, &calls), cassette.RecordOptions{})
			Expect(err).NotTo(HaveOccurred())
			steps(rec, 1)
			rec.Abort(errors.New("interrupted"))
			Expect(rec.Close()).To(MatchError(ContainSubstring("the recording was stopped: interrupted; the cassette has no end line")))
			_, err = cassette.Read(bytes.NewReader(buf.Bytes()), "x")
			Expect(err).To(MatchError(cassette.ErrTruncated))
		})
	})

	It("keeps an output that is not valid JSON as text, without breaking the file", func() {
		var buf bytes.Buffer
		rec, err := cassette.NewRecorder(&buf, core.ProviderFunc(func(context.Context, *core.Request) (*core.Response, error) {
			return &core.Response{Output: json.RawMessage(`{"findings": "cut`)}, nil
		}), cassette.RecordOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = rec.Step(context.Background(), &core.Request{Agent: "a", Run: "r", Step: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Close()).To(Succeed())
		Expect(string(mustRead(buf.Bytes(), "x").Exchanges[0].Response.Output)).To(Equal(`{"findings": "cut`))
	})
})

var errDiskFull = errors.New("disk full")

// failingWriter accepts failAfter writes, then fails every one.
type failingWriter struct {
	failAfter, n int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n > w.failAfter {
		return 0, errDiskFull
	}
	return len(p), nil
}

func mustReadFile(path string) *cassette.Cassette {
	c, err := cassette.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}
