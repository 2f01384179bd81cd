package core_test

import (
	"context"

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

	It("reaches the provider as its run when it calls next with a context of its own, not made from the run's", func(ctx SpecContext) {
		a := &core.Agent{ID: "detached", Use: []core.Middleware{func(_ context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
			return next(context.Background(), req)
		}}}
		var runs []string
		rt := core.New(core.Options{Provider: readingProvider(func(_ context.Context, req *core.Request) (*core.Response, error) {
			runs = append(runs, req.Run)
			return final, nil
		}), IDs: &core.SequentialIDs{}, Observer: core.ObserverFunc(func(e core.Event) {
			if e.Kind == core.EventRequest || e.Kind == core.EventResponse {
				runs = append(runs, e.Run)
			}
		})})
		defer rt.Close()
		res, err := rt.Run(ctx, a, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal(finalAnswer))
		Expect(runs).To(HaveLen(3))
		Expect(runs[1]).To(Equal(runs[0]), "the provider sees the run's own request")
		Expect(runs[2]).To(Equal(runs[0]), "the response is reported as the run's")
	})
})
