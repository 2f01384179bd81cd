package scenarios_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// echo is a one-agent scenario whose coordinator gets "Why Android?" at
// step 1, calls a lookup tool, and is scripted at step 2 by the condition
// under test; the expectation's pattern uses the same key.
func echo(when, key string) *harness.Outcome {
	src := `name: echo
agents:
  coordinator:
    prompt: {system: You answer., template: "Why Android?"}
    tools:
      lookup: {tool: {description: Look something up, result: "found it"}}
run:
  agents: {coordinator: coordinator}
script:
  coordinator:
    - {when: {step: 1}, call: lookup, args: {}}
    - {when: {step: 2, ` + when + `}, text: "matched"}
    - {when: {step: 2}, text: "fell through"}
expect:
  - count:
      match: {request: {agent: coordinator, step: 2, ` + key + `}}
      min: 1
`
	sc, err := Load("echo.yaml", []byte(src))
	Expect(err).NotTo(HaveOccurred())
	return harness.Run(sc, harness.Options{Seed: 1})
}

func finalText(o *harness.Outcome) string {
	for _, e := range o.Trace.Entries {
		if e.Kind == trace.RunEnd {
			return e.Content
		}
	}
	return ""
}

var _ = Describe("when conditions and expectation patterns mean the same by the same key", func() {
	It("message: is new in this request, in a script's when as in an expectation", func() {
		o := echo(`message: Android`, `message: Android`)
		Expect(finalText(o)).To(ContainSubstring("fell through"), "the question came at step 1, so step 2 has no new message with it")
		Expect(o.Verdicts[0].Failure).NotTo(BeNil(), "and the expectation with the same key agrees")
	})

	It("history: is anywhere in the run's history so far, in a script's when as in an expectation", func() {
		o := echo(`history: Android`, `history: Android`)
		Expect(finalText(o)).To(ContainSubstring("matched"))
		Expect(o.Verdicts[0].Failure).To(BeNil())
	})

	It("message: matches what is new at step 2 (the tool result) in both", func() {
		o := echo(`message: found it`, `message: found it`)
		Expect(finalText(o)).To(ContainSubstring("matched"))
		Expect(o.Verdicts[0].Failure).To(BeNil())
	})
})

var _ = Describe("a script with unused turns but none matching", func() {
	It("shows, for each unused turn, its condition and which part of the request failed it", func() {
		sc, err := Load("dry.yaml", []byte(`name: dry
agents:
  coordinator:
    prompt: {system: You answer., template: "Why Android?"}
run:
  agents: {coordinator: coordinator}
script:
  coordinator:
    - {label: the second step, when: {step: 2}, text: two}
    - {when: {message: iPhone}, text: three}
`))
		Expect(err).NotTo(HaveOccurred())
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(o.ScriptFailures).To(HaveLen(1))
		msg := o.ScriptFailures[0].Error()
		Expect(msg).To(ContainSubstring(`has 2 unused turn(s) but none matches the request at step 1 of run 1`))
		Expect(msg).To(ContainSubstring(`the second step (when step=2) fails it: it is step 1, not 2`))
		Expect(msg).To(ContainSubstring(`turn 2 of "coordinator" (when message="iPhone") fails it: no message new in this request contains "iPhone"`))
		Expect(strings.Index(msg, "the second step")).To(BeNumerically("<", strings.Index(msg, "turn 2 of")), "in script order")
	})

	It("explains a Go scenario's WhenRequest condition the same way", func() {
		p := Pattern{Step: 3}
		Expect(WhenRequest(p).String()).To(Equal("step=3"))
	})
})

var _ = Describe("a when condition on the agent, the step and the tools", func() {
	// A condition that reads only what the request holds as it is is
	// matched on the request itself; MatchRequest matches an entry
	// recording it. They agree on every pattern and request.
	It("matches a request exactly when the pattern matches the request's entry", func() {
		tools := func(names ...string) []core.ToolSpec {
			var specs []core.ToolSpec
			for _, n := range names {
				specs = append(specs, core.ToolSpec{Name: n})
			}
			return specs
		}
		requests := []*core.Request{
			{Agent: "scout", Step: 1, Tools: tools("loop_wait", "work")},
			{Agent: "scout", Step: 2, Tools: tools("loop_complete")},
			{Agent: "other", Step: 1, Tools: tools("loop_wait")},
			{Agent: "scout", Step: 1},
		}
		patterns := []Pattern{
			{}, {Agent: "scout"}, {Step: 1}, {Agent: "other", Step: 1},
			{ToolsInclude: []string{"loop_wait"}}, {ToolsInclude: []string{"loop_wait", "work"}},
			{ToolsExclude: []string{"work"}}, {Step: 2, ToolsExclude: []string{"loop_wait", "work"}},
			{Tools: []string{}}, {Tools: []string{"loop_complete"}}, {Tools: []string{"work", "loop_wait"}},
			{Tools: []string{"loop_wait", "work"}, ToolsInclude: []string{"work"}},
			{Kind: trace.Request, Step: 1}, {Kind: trace.ToolResult, Step: 1},
		}
		matched := 0
		for i := range patterns {
			cond := WhenRequest(patterns[i])
			for _, req := range requests {
				want := MatchRequest(&patterns[i], req)
				if patterns[i].Kind == "" {
					kinded := patterns[i]
					kinded.Kind = trace.Request // what WhenRequest gives a kindless pattern
					want = MatchRequest(&kinded, req)
				}
				Expect(cond.Match(req)).To(Equal(want), "pattern %d (%s), request of %s at step %d", i, cond, req.Agent, req.Step)
				if want {
					matched++
				}
			}
		}
		Expect(matched).To(BeNumerically(">", 10), "the cases match some requests and not others")
	})
})
