package harness_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scenarios"
)

// The specs of package harness: each is named after the rule of the
// simulator (DESIGN.md sections 4 and 7, issue 3) that it checks.
func TestHarness(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness")
}

// TestMain fails the package when any goroutine outlives the specs, the
// tests and the benchmarks: an actor's coroutine that a crash or a deadlock
// left parked, a fuzz worker.
func TestMain(m *testing.M) {
	fixture.VerifyNoLeaks(m)
}

// builtin loads a fresh copy of a built-in scenario.
func builtin(name string) *scenarios.Scenario {
	GinkgoHelper()
	sc, err := scenarios.Builtin(name)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// load reads a scenario written in the spec.
func load(src string) *scenarios.Scenario {
	GinkgoHelper()
	sc, err := scenarios.Load("spec.yaml", []byte(src))
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// transcript is what crux-sim run prints for an outcome.
func transcript(o *harness.Outcome) string {
	GinkgoHelper()
	var b bytes.Buffer
	Expect(harness.WriteReport(&b, o)).To(Succeed())
	return b.String()
}

// coordinatorYAML is a coordinator with one backgroundable research child,
// with the scripts and faults a spec gives it.
func coordinatorYAML(name, script, faults string) string {
	src := fmt.Sprintf(`name: %s
agents:
  research-agent:
    description: Research one question and return concise findings
    prompt:
      input: {type: object, properties: {question: {type: string}}, required: [question]}
      output: {type: object, properties: {summary: {type: string}}, required: [summary]}
      template: "{{.question}}"
    tools:
      lookup:
        tool:
          input: {type: object, properties: {topic: {type: string}}}
          result: {facts: [Chlorophyll degrades in autumn.]}
  research-coordinator:
    prompt:
      input: {type: object, properties: {question: {type: string}}, required: [question]}
      template: "{{.question}}"
    tools:
      research: {background: research-agent}
run:
  id: spec
  agents: {coordinator: research-coordinator}
  context: {question: Why do leaves change color?}
script:
%s
`, name, indent(script, "  "))
	if faults != "" {
		src += "faults:\n" + indent(faults, "  ") + "\n"
	}
	return src
}

func indent(s, by string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n")
}

// entries returns the rendered lines of the outcome's trace entries that
// contain every one of the words.
func entries(o *harness.Outcome, words ...string) []string {
	var out []string
next:
	for _, line := range strings.Split(o.Trace.Text(), "\n") {
		for _, w := range words {
			if !strings.Contains(line, w) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}
