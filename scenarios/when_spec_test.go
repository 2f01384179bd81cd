package scenarios_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
