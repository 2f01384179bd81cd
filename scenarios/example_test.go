package scenarios_test

import (
	"errors"
	"fmt"

	"github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// Load reads a scenario file: agents, the run, the script the model
// follows, and the expectations over the trace. A mistake is reported at
// its line and column.
func ExampleLoad() {
	src := []byte(`name: quick-research
agents:
  researcher:
    description: Finds things out
  coordinator:
    description: Answers questions
    tools:
      research: {background: researcher}
run:
  agents: {main: coordinator}
script:
  coordinator:
    - call: research
      args: {run_in_background: true}
    - call: work
      args: {action: result, id: {work-of: research}}
    - text: Done.
  researcher:
    - text: Leaves lose chlorophyll.
expect:
  - output-only-via-result: {tool: research}
`)
	sc, err := scenarios.Load("quick-research.yaml", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sc.Name, "runs", len(sc.Run.Agents), "agent and checks:")
	for _, e := range sc.Expectations {
		fmt.Println("-", e.Describe())
	}

	_, err = scenarios.Load("typo.yaml", []byte("name: typo\nagents: {}\nrnu: {}\n"))
	fmt.Println(errors.Is(err, scenarios.ErrLoad))
	// Output:
	// quick-research runs 1 agent and checks:
	// - the output of research children reaches the parent only through work result
	// true
}

// The matchers are Gomega matchers over a run (a harness Outcome, a
// scenarios.Result or a trace): here outside Ginkgo, with a Gomega that
// prints what failed.
func ExampleReturnWorkRef() {
	sc, _ := scenarios.Builtin("research-coordinator")
	run := harness.Run(sc, harness.Options{Seed: 1})
	g := gomega.NewGomega(func(message string, _ ...int) { fmt.Println(message) })

	fmt.Println(g.Expect(run).To(scenarios.ReturnWorkRef("research")))
	fmt.Println(g.Expect(run).To(scenarios.DeliverOutputOnlyThroughResult("research")))
	fmt.Println(g.Expect(run).To(scenarios.CallWork("research-coordinator", "result")))
	fmt.Println(g.Expect(run).NotTo(scenarios.ReturnChildOutputInline("research")))
	// Output:
	// true
	// true
	// true
	// true
}
