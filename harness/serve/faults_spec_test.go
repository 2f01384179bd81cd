package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// traceLines renders a served run's trace in the golden format.
func traceLines(o *harness.Outcome) []string {
	var lines []string
	for i := range o.Trace.Entries {
		lines = append(lines, trace.Line(&o.Trace.Entries[i]))
	}
	return lines
}

// withFaults is a built-in scenario with its faults replaced.
func withFaults(name string, faults ...scenarios.Fault) *scenarios.Scenario {
	sc := builtin(name)
	sc.Faults = faults
	return sc
}

var _ = Describe("a scenario's faults under serve", func() {
	It("waits out a latency fault on step N of the agent's run on the server's clock before it answers, and traces the fault", func(ctx SpecContext) {
		sc := withFaults("research-coordinator",
			scenarios.Fault{Kind: scenarios.FaultLatency, Agent: "research-coordinator", Run: 1, Step: 1, Latency: 5 * time.Second})
		s := serveScenario(sc, serve.Options{})
		got := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			resp, err := s.client.CreateChatCompletion(ctx, firstCoordinatorRequest("crux-sim/research-coordinator"))
			Expect(err).NotTo(HaveOccurred())
			got <- resp.Choices[0].Message.ToolCalls[0].Function.Name
		}()
		Eventually(func() int { _, waiting := s.srv.Activity(); return waiting }).Should(Equal(1), "the request waits on the clock")
		s.clock.Advance(4999 * time.Millisecond)
		Expect(s.clock.BlockUntilContext(ctx, 1)).To(Succeed(), "the fault's timer is still pending at +4.999s")
		Expect(got).NotTo(Receive())
		s.clock.Advance(time.Millisecond)
		Eventually(got).Should(Receive(Equal("research")))

		res := s.srv.Finish("done")
		Expect(traceLines(res.Outcome)[:4]).To(Equal([]string{
			"+0s     research-coordinator#1 start",
			"+0s     research-coordinator#1 request 1 tools=research,work\n          user: " + question,
			"+0s     fault latency 5s on research-coordinator step 1",
			"+5s     research-coordinator#1 response 1\n          call call-1 research {\"question\":\"" + question + "\",\"run_in_background\":true}",
		}))
	})

	It("answers a provider-error fault on step N of run R as OpenAI's 500 server error with the injected message, on that step of that run alone", func(ctx SpecContext) {
		sc := scenarios.New("flaky").Agent("solo", &core.Agent{ID: "solo", Prompt: core.Prompt{System: "Say hi."}}).
			Script("solo", scripted.Say("hi"), scripted.Say("hello")).
			Inject(scenarios.Fault{Kind: scenarios.FaultProviderError, Agent: "solo", Run: 1, Step: 1, Message: "upstream 503"})
		s := serveScenario(sc, serve.Options{})
		code, doc := s.post("/v1/chat/completions", `{"model":"crux-sim/solo","messages":[{"role":"user","content":"one"}]}`)
		Expect(code).To(Equal(http.StatusInternalServerError))
		Expect(doc).To(Equal(map[string]any{"error": map[string]any{
			"message": "injected provider error: upstream 503", "type": "server_error", "param": nil, "code": nil}}))

		one := goopenai.ChatCompletionRequest{Model: "crux-sim/solo", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "one"}}}
		resp, err := s.client.CreateChatCompletion(ctx, one)
		Expect(err).NotTo(HaveOccurred(), "a retry is step 2 of run 1, which the fault does not name")
		Expect(resp.Choices[0].Message.Content).To(Equal("hi"), "the fault answered instead of the script: its first turn is still there")
		two := goopenai.ChatCompletionRequest{Model: "crux-sim/solo", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "two"}}}
		resp, err = s.client.CreateChatCompletion(ctx, two)
		Expect(err).NotTo(HaveOccurred(), "step 1 of run 2 is not the fault's run")
		Expect(resp.Choices[0].Message.Content).To(Equal("hello"))

		res := s.srv.Finish("done")
		Expect(traceLines(res.Outcome)).To(Equal([]string{
			"+0s     solo#1 start",
			"+0s     solo#1 request 1\n          user: one",
			"+0s     fault provider error on solo step 1: upstream 503",
			"+0s     solo#1 response 1 error: injected provider error: upstream 503",
			"+0s     solo#1 request 2",
			"+0s     solo#1 response 2\n          text \"hi\"",
			"+0s     solo#1 end output \"hi\"",
			"+0s     solo#2 start",
			"+0s     solo#2 request 1\n          user: two",
			"+0s     solo#2 response 1\n          text \"hello\"",
			"+0s     solo#2 end output \"hello\"",
		}))
		Expect(res.Outcome.Fired.Faults).To(Equal([]harness.PlannedFault{
			{Source: 0, Kind: scenarios.FaultProviderError, Agent: "solo", Run: 1, Step: 1, Message: "upstream 503"}}))
	})

	It("answers a provider-error fault in a child as a failed step of the child's run, whose failure the client's runtime must keep out of status", func(ctx SpecContext) {
		sc := withFaults("research-coordinator",
			scenarios.Fault{Kind: scenarios.FaultProviderError, Agent: "research-agent", Step: 1, Message: "the research backend is down"})
		s := serveScenario(sc, serve.Options{})
		s.ownRuntime(ctx)
		res := s.srv.Finish("done")
		var text bytes.Buffer
		Expect(harness.WriteReport(&text, res.Outcome)).To(Succeed())
		Expect(text.String()).To(ContainSubstring("fault provider error on research-agent step 1: the research backend is down"))
		Expect(res.Outcome.Violations).To(BeEmpty(), text.String())
		Expect(res.Outcome.Trace.Entries).To(ContainElement(And(
			HaveField("Kind", trace.Work), HaveField("To()", string(lifecycle.Failed)))), "the client's runtime showed the Work failed:\n%s", text.String())
	})

	DescribeTable("fires the faults the seed draws (or the plan names) exactly as the simulator does, for the same order of requests",
		func(ctx SpecContext, opts harness.Options) {
			// A foreground coordinator: its requests and its child's
			// come in one order in both runtimes, so the draws do too.
			sc := withFaults("research-foreground",
				scenarios.Fault{Kind: scenarios.FaultLatency, Agent: "research-coordinator", Latency: time.Second, LatencyMax: 3 * time.Second, Probability: 0.6},
				scenarios.Fault{Kind: scenarios.FaultLatency, Agent: "research-agent", Step: 1, Latency: 2 * time.Second, Probability: 0.5},
				scenarios.Fault{Kind: scenarios.FaultProviderError, Agent: "research-coordinator", Step: 2, Message: "flaky", Probability: 0.3})
			want := harness.Run(sc, opts).Fired.Faults
			Expect(want).NotTo(BeEmpty(), "a case where faults fire")
			s := serveScenario(sc, serve.Options{Seed: opts.Seed, Swarm: opts.Swarm, Plan: opts.Plan})
			_, _ = s.ownRuntimeRun(ctx) // an injected error may fail the coordinator, as in-process
			res := s.srv.Finish("done")
			Expect(res.Outcome.Fired.Faults).To(Equal(want))
		},
		Entry("seed 1", harness.Options{Seed: 1}),
		Entry("seed 2", harness.Options{Seed: 2}),
		Entry("seed 3", harness.Options{Seed: 3}),
		Entry("seed 4", harness.Options{Seed: 4}),
		Entry("seed 1 with its swarm mix, whose extra latency fires", harness.Options{Seed: 1, Swarm: true}),
		Entry("seed 3 with its swarm mix, whose extra latency fires", harness.Options{Seed: 3, Swarm: true}),
		Entry("seed 6 with its swarm mix, which leaves faults out", harness.Options{Seed: 6, Swarm: true}),
		Entry("an explicit plan", harness.Options{Seed: 1, Plan: &harness.Plan{Faults: []harness.PlannedFault{
			{Source: 1, Kind: scenarios.FaultLatency, Agent: "research-agent", Run: 1, Step: 1, Latency: 1500 * time.Millisecond},
			{Source: 2, Kind: scenarios.FaultProviderError, Agent: "research-coordinator", Run: 1, Step: 2, Message: "planned"},
		}}}),
	)

	It("draws different faults under different seeds: the seed decides, not a fixed choice", func(ctx SpecContext) {
		sc := withFaults("research-foreground",
			scenarios.Fault{Kind: scenarios.FaultLatency, Agent: "research-coordinator", Latency: time.Second, LatencyMax: 3 * time.Second, Probability: 0.6})
		seen := map[string]bool{}
		for seed := int64(1); seed <= 4; seed++ {
			s := serveScenario(sc, serve.Options{Seed: seed})
			s.ownRuntime(ctx)
			fired, err := json.Marshal(s.srv.Finish("done").Outcome.Fired)
			Expect(err).NotTo(HaveOccurred())
			seen[string(fired)] = true
		}
		Expect(len(seen)).To(BeNumerically(">", 1))
	})

	It("skips a fault that acts inside the client's runtime (a work action on an owner's behalf, a crash) with a finding, and serves the rest", func(ctx SpecContext) {
		sc := builtin("detach-vs-result")
		sc.Faults = append(sc.Faults, scenarios.Fault{Kind: scenarios.FaultCrash})
		s := serveScenario(sc, serve.Options{})
		Expect(s.srv.Unapplied()).To(Equal([]string{
			"fault 1 (detach work of research) acts inside the runtime, which is the client's own under serve: not applied",
			"fault 2 (crash) acts inside the runtime, which is the client's own under serve: not applied",
		}))
		s.ownRuntime(ctx)
		res := s.srv.Finish("done")
		Expect(res.Outcome.Findings).To(ContainElements(s.srv.Unapplied()))
		Expect(res.Outcome.Fired.Faults).To(BeEmpty())
		Expect(res.Passed()).To(BeTrue(), "the expectations are judged on what the client did")
	})
})
