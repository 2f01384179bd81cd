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

	It("a week of virtual timers runs in a few hundred steps, every timer at its instant", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		clock := sim.Clock()
		var hourly, daily []time.Duration
		sim.Go("hourly", func() {
			for range 7 * 24 {
				clock.Sleep(time.Hour)
				hourly = append(hourly, clock.Elapsed())
			}
		})
		sim.Go("daily", func() {
			for range 7 {
				clock.Sleep(24 * time.Hour)
				daily = append(daily, clock.Elapsed())
			}
		})
		var ticks int
		var tick func()
		tick = func() {
			ticks++
			clock.AfterFunc(15*time.Minute, tick)
		}
		clock.AfterFunc(15*time.Minute, tick)

		Expect(sim.RunFor(7 * 24 * time.Hour)).To(Succeed())
		Expect(clock.Elapsed()).To(Equal(7 * 24 * time.Hour))
		Expect(hourly).To(HaveLen(168))
		Expect(hourly[0]).To(Equal(time.Hour))
		Expect(hourly[167]).To(Equal(168 * time.Hour))
		Expect(daily).To(Equal([]time.Duration{24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 96 * time.Hour, 120 * time.Hour, 144 * time.Hour, 168 * time.Hour}))
		Expect(ticks).To(Equal(7 * 24 * 4))
		Expect(sim.Steps()).To(Equal(168 + 1 + 7 + 1)) // one step per wake-up, plus each actor's last
		Expect(sim.Live()).To(BeEmpty())
	})

	It("virtual time starts at a fixed instant and moves only when nothing can run", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 3})
		Expect(sim.Clock().Now()).To(Equal(harness.Epoch))
		var sawBusy time.Duration = -1
		sim.Go("sleeper", func() { sim.Clock().Sleep(time.Minute) })
		sim.Go("busy", func() {
			for range 50 {
				sim.Yield(core.Point{Kind: core.PointToolCall})
			}
			sawBusy = sim.Clock().Elapsed()
		})
		Expect(sim.Run(nil)).To(Succeed())
		Expect(sawBusy).To(Equal(time.Duration(0)))
		Expect(sim.Clock().Elapsed()).To(Equal(time.Minute))
	})
})

var _ = Describe("deadlock detection", func() {
	It("reports, when nothing can run and no timer is pending, what every actor waits on", func() {
		sim := harness.NewSim(harness.SimOptions{Seed: 1})
		approval := make(chan struct{})
		done := make(chan struct{})
		sim.Go("reviewer", func() {
			sim.Wait("the approval inbox", approval)
			close(done)
		})
		sim.Go("coordinator", func() { sim.Wait("the reviewer's verdict", done) })
		sim.Go("ticker", func() { sim.Clock().Sleep(time.Second) })

		err := sim.Run(nil)
		var dl *harness.DeadlockError
		Expect(errors.As(err, &dl)).To(BeTrue(), "got %v", err)
		Expect(dl.At).To(Equal(time.Second))
		Expect(dl.Actors).To(HaveLen(2))
		Expect(err.Error()).To(ContainSubstring("deadlock at +1s"))
		Expect(err.Error()).To(ContainSubstring("reviewer waits on the approval inbox"))
		Expect(err.Error()).To(ContainSubstring("coordinator waits on the reviewer's verdict"))
		sim.Kill()
		Expect(sim.Live()).To(BeEmpty())
	})

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
		var dl *harness.DeadlockError
		Expect(errors.As(o.Err, &dl)).To(BeTrue(), "got %v", o.Err)
		Expect(o.Err.Error()).To(ContainSubstring("stuck/main waits on a human approval"))
		Expect(o.Err.Error()).To(ContainSubstring("main waits on parallel main"))
		Expect(transcript(o)).To(ContainSubstring("FAIL no deadlock"))
	})
})
