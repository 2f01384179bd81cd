package harness_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

var _ = Describe("virtual time", func() {
	It("a work result wait hits its 30 s cap in virtual time: the clock jumps, no step is spent waiting", func() {
		sc := load(coordinatorYAML("long-research", `
research-coordinator:
  - call: research
    args: {question: Why do leaves change color?, run_in_background: true}
  - call: work
    args: {action: result, id: {work-of: research}}
  - call: work
    args: {action: cancel, id: {work-of: research}}
  - text: Gave up.
research-agent:
  - latency: 1h
    output: {summary: Too late.}
`, ""))
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeTrue(), transcript(o))
		Expect(entries(o, "work result w-1")).To(ConsistOf(SatisfyAll(HavePrefix("+30s "), ContainSubstring(`"state":"running"`))))
		Expect(entries(o, "clock jumped +30s to +30s")).To(HaveLen(1))
		Expect(o.Elapsed).To(Equal(30 * time.Second))
		Expect(o.Steps).To(BeNumerically("<", 40))
	})

})

var _ = Describe("deadlock detection", func() {
	It("a scenario whose tool waits for something that never comes fails with the deadlock, naming each waiting actor", func() {
		never := make(chan struct{})
		approve := &core.Tool{Run: func(ctx context.Context, _ core.ToolCall, _ any) (any, error) {
			return "approved", core.Await(ctx, "a human approval", never)
		}}
		agent := &core.Agent{ID: "approver", Tools: core.Tools{"approve": approve}}
		sc := scenarios.New("stuck").Agent("main", agent).
			Script("approver", scripted.Calls(scripted.Use("approve", map[string]any{})), scripted.Say("done"))

		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(o.Passed()).To(BeFalse())
		var dl *sim.DeadlockError
		Expect(errors.As(o.Err, &dl)).To(BeTrue(), "got %v", o.Err)
		Expect(o.Err.Error()).To(ContainSubstring("stuck/main waits on a human approval"))
		Expect(o.Err.Error()).To(ContainSubstring("main waits on parallel main"))
		Expect(transcript(o)).To(ContainSubstring("FAIL no deadlock"))
	})
})
