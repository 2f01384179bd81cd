package scenarios_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
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

// Pass holds when every expectation of the scenario and every check of the
// run held. Its failure names the root cause first (here, a script cut
// short), then each failed expectation with its nearest miss and the
// transcript around it.
func ExamplePass() {
	sc, _ := scenarios.Builtin("research-coordinator")
	run := harness.Run(sc, harness.Options{Seed: 1})
	g := gomega.NewGomega(func(message string, _ ...int) { fmt.Println(message) })
	fmt.Println(g.Expect(run).To(scenarios.Pass()))

	for i := range sc.Scripts {
		if sc.Scripts[i].Agent == "research-coordinator" {
			sc.Scripts[i].Turns = sc.Scripts[i].Turns[:2] // the model stops answering after two steps
		}
	}
	var message string
	g = gomega.NewGomega(func(m string, _ ...int) { message = m })
	g.Expect(harness.Run(sc, harness.Options{Seed: 1})).To(scenarios.Pass())
	first, _, _ := strings.Cut(message, "\n")
	fmt.Println(first)
	// Output:
	// true
	// Expected the run of research-coordinator (seed 1) to pass, but 5 of 7 claims failed; root cause: script: agent "research-coordinator" ran dry at step 3 of run 1 (research-coordinator#1); the script had 2 turn(s)
}

// Check finds in a scenario built in Go what the file loader refuses in a
// file, in the same words and with the same suggestion; harness.Run runs
// nothing of a scenario it refuses.
func ExampleScenario_Check() {
	sc, _ := scenarios.Builtin("research-coordinator")
	own := scenarios.New("mine").
		Agent("coordinator", sc.Run.Agents["coordinator"]).
		Script("research-agnet", scripted.Say("done")).
		Expect(scenarios.WorkEnds{Work: scenarios.WorkOf("research"), States: []string{"complete"}})
	fmt.Println(own.Check())
	// Output:
	// script for agent "research-agnet", which is not declared (did you mean "research-agent"?)
	// work-ends: "complete" is not a Work state (did you mean "completed"?)
}
