package harness_test

import (
	"fmt"
	"os"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// Run performs a scenario under a seed on the simulator and checks its
// expectations and the invariants; the same scenario and seed give the same
// outcome on every run.
func ExampleRun() {
	sc, err := scenarios.Builtin("research-coordinator")
	if err != nil {
		fmt.Println(err)
		return
	}
	o := harness.Run(sc, harness.Options{Seed: 7})
	fmt.Println("passed:", o.Passed(), "violations:", len(o.Violations))
	fmt.Println("virtual time:", o.Elapsed)
	for _, v := range o.Verdicts[:2] {
		fmt.Println("PASS", v.Description)
	}
	if !o.Passed() {
		_ = harness.WriteReport(os.Stdout, o) // the transcript, with each failure in place
	}
	// Output:
	// passed: true violations: 0
	// virtual time: 4s
	// PASS the recipe's five steps, in order: research in the background, a work.ref, safe status, work result, the exact output
	// PASS step 2: the research call's continuation gets the work.ref, not the child result
}
