package core_test

import (
	"context"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
)

// Agents prepared once (core.Prepare) are shared by the runtimes given the
// set (Options.Prepared): each runs them as a runtime that prepared them
// itself would.
var _ = Describe("agents prepared once for many runtimes", func() {
	// firstTools runs the agent on a runtime of the options and returns
	// the tools of its first request.
	firstTools := func(a *core.Agent, opts core.Options) []core.ToolSpec {
		var tools []core.ToolSpec
		opts.Provider = core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
			if tools == nil {
				tools = req.Tools
			}
			return &core.Response{Text: "done"}, nil
		})
		rt := core.New(opts)
		defer rt.Close()
		_, err := rt.Run(context.Background(), a, shared.Ask(shared.Question))
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return tools
	}

	It("a runtime given the set offers an agent's tools, in order and with their parameters, as a runtime that prepares it itself", func() {
		coordinator := shared.Coordinator(shared.ResearchAgent())
		set, err := core.Prepare(coordinator)
		Expect(err).NotTo(HaveOccurred())
		own := firstTools(coordinator, core.Options{})
		Expect(own).NotTo(BeEmpty())
		for range 2 {
			Expect(firstTools(coordinator, core.Options{Prepared: set})).To(Equal(own))
		}
		specs, err := core.New(core.Options{Prepared: set}).ToolSpecs(coordinator)
		Expect(err).NotTo(HaveOccurred())
		Expect(specs).To(Equal(own))
	})

	It("prepares every agent a tool of a set's agent names, and a runtime given the set runs that child as prepared there", func() {
		child := &core.Agent{ID: "child", Description: "a foreground child"}
		set, err := core.Prepare(&core.Agent{ID: "parent", Tools: core.Tools{"child": child}})
		Expect(err).NotTo(HaveOccurred())
		child.Tools = core.Tools{"lookup": okTool("added after the set was prepared")}
		Expect(firstTools(child, core.Options{Prepared: set})).To(BeEmpty(), "the child as prepared had no tools")
		Expect(firstTools(child, core.Options{})).To(HaveLen(1), "a runtime of its own prepares the child as it is now")
	})

	It("reports the first preparation error of the agents in the order given, as a runtime's Prepare does, and no set", func() {
		broken := shared.Coordinator(shared.ResearchAgent())
		broken.Tools["work"] = okTool("an authored work tool")
		set, err := core.Prepare(shared.ResearchAgent(), broken, &core.Agent{})
		Expect(set).To(BeNil())
		Expect(err).To(MatchError(core.ErrWorkToolCollision))
		var pe *core.PrepareError
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Agent).To(Equal(shared.CoordinatorID))
		Expect(err).To(MatchError(core.New(core.Options{}).Prepare(broken).Error()))
	})

	It("an agent of the set that sets no step budget of its own runs with the budget of the runtime running it", func() {
		loops := &core.Agent{ID: "loops", Tools: core.Tools{"again": okTool("call me again")}}
		set, err := core.Prepare(loops)
		Expect(err).NotTo(HaveOccurred())
		stepsOn := func(maxSteps int) (int, error) {
			steps := 0
			rt := core.New(core.Options{Prepared: set, MaxSteps: maxSteps, Provider: core.ProviderFunc(
				func(_ context.Context, req *core.Request) (*core.Response, error) {
					steps++
					return &core.Response{ToolCalls: []core.ToolCall{{ID: "c", Name: "again", Arguments: `{}`}}}, nil
				})})
			defer rt.Close()
			_, err := rt.Run(context.Background(), loops, "go")
			return steps, err
		}
		for _, budget := range []int{2, 5} {
			steps, err := stepsOn(budget)
			Expect(err).To(MatchError(core.ErrStepBudget))
			Expect(steps).To(Equal(budget))
		}
	})

	It("runtimes running an agent of the set at once each offer its tools as prepared, whatever another's middleware did to its requests", func() {
		want := firstTools(shared.Coordinator(shared.ResearchAgent()), core.Options{})
		// The agent's middleware writes over the tools of the requests of
		// runtimes whose model is "vandal".
		coordinator := shared.Coordinator(shared.ResearchAgent())
		coordinator.Use = []core.Middleware{func(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
			if req.Model == "vandal" {
				for i := range req.Tools {
					req.Tools[i].Description = "vandalised"
					for k := range req.Tools[i].Parameters {
						req.Tools[i].Parameters[k] = ' '
					}
				}
			}
			return next(ctx, req)
		}}
		set, err := core.Prepare(coordinator)
		Expect(err).NotTo(HaveOccurred())
		runOn := func(model string) []core.ToolSpec {
			var seen []core.ToolSpec
			rt := core.New(core.Options{Prepared: set, Model: model, Provider: core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
				seen = cloneTools(req.Tools)
				return &core.Response{Text: "done"}, nil
			})})
			defer rt.Close()
			_, err := rt.Run(context.Background(), coordinator, shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			return seen
		}
		Expect(runOn("vandal")[0].Description).To(Equal("vandalised"), "the middleware writes over its requests' tools")
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				defer GinkgoRecover()
				for range 20 {
					if i%2 == 1 {
						runOn("vandal")
					} else {
						Expect(runOn("")).To(Equal(want))
					}
				}
			})
		}
		wg.Wait()
		Expect(runOn("")).To(Equal(want))
	})
})

func cloneTools(ts []core.ToolSpec) []core.ToolSpec {
	out := make([]core.ToolSpec, len(ts))
	for i, t := range ts {
		t.Parameters = append([]byte(nil), t.Parameters...)
		out[i] = t
	}
	return out
}
