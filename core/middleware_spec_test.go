package core_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
)

type runKey struct{}

var _ = Describe("an agent's middleware", func() {
	final := &core.Response{Text: finalAnswer}
	passOn := func(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
		return next(ctx, req)
	}

	// The chain is built once, when the agent is prepared: a run pays
	// nothing for it beyond the middleware's own work.
	It("costs a run of a prepared agent no allocation when it only passes the request on", func() {
		if raceDetector {
			Skip("the race detector allocates for its own bookkeeping; the counts hold without it")
		}
		allocsOf := func(use ...core.Middleware) float64 {
			a, rt := answersAtOnce(&core.SequentialIDs{}, use...)
			defer rt.Close()
			Expect(rt.Prepare(a)).To(Succeed())
			ctx := context.Background()
			return testing.AllocsPerRun(50, func() {
				if res, err := rt.Run(ctx, a, "hello"); err != nil || res.Output.Raw != finalAnswer {
					Fail("the run did not end with the final answer")
				}
			})
		}
		without := allocsOf()
		Expect(allocsOf(passOn)).To(BeNumerically("<=", without))
		Expect(allocsOf(passOn, passOn, passOn)).To(BeNumerically("<=", without))
	})

	It("sends each request to the provider as the run it belongs to, through contexts the middleware derived, in a foreground child's run inside its parent's", func(ctx SpecContext) {
		tag := func(label string) core.Middleware {
			return func(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
				return next(context.WithValue(ctx, runKey{}, label), req)
			}
		}
		research := shared.ResearchAgent()
		research.Use = []core.Middleware{tag("child")}
		coordinator := shared.Coordinator(research)
		coordinator.Use = []core.Middleware{tag("parent"), passOn}
		exact := findings("Chlorophyll breaks down in the cold")
		var seen []string
		p := readingProvider(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			seen = append(seen, ctx.Value(runKey{}).(string)+" "+req.Agent)
			switch {
			case req.Agent == shared.ResearchID:
				return &core.Response{Output: exact}, nil
			case req.Step == 1:
				return &core.Response{ToolCalls: []core.ToolCall{
					{ID: "call_1", Name: "research", Arguments: `{"question":"Why do leaves change color in autumn?"}`}}}, nil
			}
			return final, nil
		})
		var requests []string
		rt := core.New(core.Options{Provider: p, IDs: &core.SequentialIDs{}, Observer: core.ObserverFunc(func(e core.Event) {
			if e.Kind == core.EventRequest {
				Expect(e.Run).To(Equal(e.Request.Run))
				requests = append(requests, e.Agent+" "+e.Run)
			}
		})})
		defer rt.Close()
		res, err := rt.Run(ctx, coordinator, shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal(finalAnswer))
		Expect(seen).To(Equal([]string{"parent " + shared.CoordinatorID, "child " + shared.ResearchID, "parent " + shared.CoordinatorID}))
		Expect(requests).To(HaveLen(3))
		Expect(requests[0]).To(Equal(requests[2]))
		Expect(requests[1]).To(HavePrefix(shared.ResearchID + " "))
		Expect(requests[1]).NotTo(Equal(requests[0]))
	})

	It("fails the step with a clear error when it calls next with a context that is not its run's", func(ctx SpecContext) {
		a := &core.Agent{ID: "detached", Use: []core.Middleware{func(_ context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
			return next(context.Background(), req)
		}}}
		calls := 0
		rt := core.New(core.Options{Provider: readingProvider(func(context.Context, *core.Request) (*core.Response, error) {
			calls++
			return final, nil
		}), IDs: &core.SequentialIDs{}})
		defer rt.Close()
		_, err := rt.Run(ctx, a, nil)
		Expect(err).To(MatchError(ContainSubstring(`agent "detached" step 1: middleware called next with a context that is neither the run's nor made from it`)))
		Expect(calls).To(BeZero())
	})
})
