package core_test

import (
	"context"
	"errors"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// researchWithLookup is the research agent with one tool of its own, so
// that its run has a tool-call boundary after its first provider step.
func researchWithLookup(calls *atomic.Int32) *core.Agent {
	a := shared.ResearchAgent()
	a.Tools = core.Tools{"lookup": &core.Tool{
		Description: "Look a term up",
		Run: func(context.Context, core.ToolCall, any) (any, error) {
			calls.Add(1)
			return "chlorophyll: a green pigment", nil
		},
	}}
	return a
}

var _ = Describe("cancel", func() {
	It("cancels queued Work at once: it becomes cancelled and never runs", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("status")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		refs := refsIn(res.Messages)
		results := toolResults(res.Messages, "work")
		receipt := obj(results[0].Content)
		Expect(receipt["workId"]).To(Equal(refs[1].ID))
		Expect(receipt["accepted"]).To(Equal(true))
		Expect(receipt["state"]).To(Equal("cancelled"))
		status := obj(results[1].Content)
		Expect(status["state"]).To(Equal("cancelled"))
		Expect(status).NotTo(HaveKey("startedAt"), "it never started")
		Expect(status).To(HaveKey("finishedAt"))

		child.Release()
		Expect(f.awaitTerminal(ctx, refs[0].ID)).To(Equal(lifecycle.Completed))
		Expect(f.events.transitions(refs[1].ID)).To(Equal([]lifecycle.State{lifecycle.Queued, lifecycle.Cancelled}))
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1), "only the first child ever asked the model")
	}, within)

	It("answers with {workId, accepted, state, acceptedAt}, moves running Work to cancel-requested, and the child stops as cancelled at its next boundary", func(ctx SpecContext) {
		f := newFixture(ctx)
		var lookups atomic.Int32
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2) // cancel only once the child is in its provider step
		parked := f.model.hold(shared.CoordinatorID, 4)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("status")),
			scripted.Calls(work("status")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID,
			scripted.Calls(scripted.Use("lookup", map[string]any{"term": "chlorophyll"})),
			scripted.Final(findings("S")))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		parked.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		Expect(f.work(id).State).To(Equal(lifecycle.CancelRequested), "the child is still in its provider step")
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Cancelled))
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		results := toolResults(res.Messages, "work")
		receipt := obj(results[0].Content)
		Expect(keysOf(receipt)).To(ConsistOf("workId", "accepted", "state", "acceptedAt"))
		Expect(receipt["workId"]).To(Equal(id))
		Expect(receipt["accepted"]).To(Equal(true))
		Expect(receipt["state"]).To(Equal("cancel-requested"))
		Expect(rfc3339(receipt["acceptedAt"])).To(BeTemporally("==", epoch))
		Expect(obj(results[1].Content)["state"]).To(Equal("cancel-requested"))
		Expect(obj(results[2].Content)["state"]).To(Equal("cancelled"))

		Expect(lookups.Load()).To(BeZero(), "the child stopped before its tool call")
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1))
		Expect(f.events.transitions(id)).To(Equal([]lifecycle.State{
			lifecycle.Queued, lifecycle.Running, lifecycle.CancelRequested, lifecycle.Cancelled}))
	}, within)

	It("lets normal completion win the race: a child that produced its final output before its next boundary ends completed with its result available", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		exact := findings("Completion won")
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("result")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		id := f.awaitRef(ctx, 1).ID
		f.awaitState(ctx, id, lifecycle.CancelRequested)
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)["state"]).To(Equal("cancel-requested"))
		Expect(results[1].Content).To(Equal(string(exact)), "the result is available and exact")
		Expect(f.work(id).State).To(Equal(lifecycle.Completed))
		Expect(f.events.transitions(id)).To(Equal([]lifecycle.State{
			lifecycle.Queued, lifecycle.Running, lifecycle.CancelRequested, lifecycle.Completed}))
	}, within)

	It("keeps a failure unrelated to the cancel request failed", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("result")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Fail(errors.New("FAILURE-MARKER: upstream 502")))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		id := f.awaitRef(ctx, 1).ID
		f.awaitState(ctx, id, lifecycle.CancelRequested)
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		status := obj(toolResults(res.Messages, "work")[1].Content)
		Expect(status["state"]).To(Equal("failed"))
		Expect(toolResults(res.Messages, "work")[1].Content).NotTo(ContainSubstring("FAILURE-MARKER"))
		Expect(f.events.transitions(id)).To(Equal([]lifecycle.State{
			lifecycle.Queued, lifecycle.Running, lifecycle.CancelRequested, lifecycle.Failed}))
	}, within)

	Describe("on terminal Work", func() {
		// expectNotAccepted checks a cancel receipt and a later status
		// against terminal Work.
		expectNotAccepted := func(receipt, status core.Message, id string, want lifecycle.State) {
			got := obj(receipt.Content)
			Expect(got["workId"]).To(Equal(id))
			Expect(got["accepted"]).To(Equal(false))
			Expect(got["state"]).To(Equal(string(want)))
			Expect(got).To(HaveKey("acceptedAt"))
			Expect(obj(status.Content)["state"]).To(Equal(string(want)), "the state did not change")
		}

		DescribeTable("does not accept cancel on a child that has ended and reports its unchanged state",
			func(ctx SpecContext, child scripted.Turn, want lifecycle.State) {
				f := newFixture(ctx)
				parked := f.model.hold(shared.CoordinatorID, 2)
				f.model.Script(shared.CoordinatorID,
					scripted.Calls(bg(shared.Question)),
					scripted.Calls(work("cancel")),
					scripted.Calls(work("status")),
					scripted.Say("ok"))
				f.model.Script(shared.ResearchID, child)

				r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
				parked.Arrived(ctx)
				id := f.awaitRef(ctx, 1).ID
				Expect(f.awaitTerminal(ctx, id)).To(Equal(want))
				parked.Release()
				res, err := r.wait(ctx)
				Expect(err).NotTo(HaveOccurred())

				results := toolResults(res.Messages, "work")
				expectNotAccepted(results[0], results[1], id, want)
				Expect(f.events.transitions(id)).To(Equal([]lifecycle.State{lifecycle.Queued, lifecycle.Running, want}))
			},
			Entry("completed", scripted.Final(findings("done")), lifecycle.Completed, within),
			Entry("failed", scripted.Fail(errors.New("boom")), lifecycle.Failed, within),
		)

		It("does not accept a second cancel on Work that is already cancelled", func(ctx SpecContext) {
			f := newFixture(ctx, withMaxConcurrent(1))
			f.model.hold(shared.ResearchID, 1)
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(bg("blocker"), bg("target")),
				scripted.Calls(work("cancel")),
				scripted.Calls(work("cancel")),
				scripted.Calls(work("status")),
				scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("blocker done")))

			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			target := refsIn(res.Messages)[1].ID
			results := toolResults(res.Messages, "work")
			Expect(obj(results[0].Content)["accepted"]).To(Equal(true))
			expectNotAccepted(results[1], results[2], target, lifecycle.Cancelled)
		}, within)
	})

	It("accepts a repeat cancel of cancel-requested Work again and changes nothing", func(ctx SpecContext) {
		f := newFixture(ctx)
		var lookups atomic.Int32
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("cancel")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Calls(scripted.Use("lookup", map[string]any{})))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "work")
		first, second := obj(results[0].Content), obj(results[1].Content)
		Expect(first["accepted"]).To(Equal(true))
		Expect(first["state"]).To(Equal("cancel-requested"))
		Expect(second["accepted"]).To(Equal(true))
		Expect(second["state"]).To(Equal("cancel-requested"))
		id := refsIn(res.Messages)[0].ID
		Expect(f.events.transitions(id)).To(Equal([]lifecycle.State{
			lifecycle.Queued, lifecycle.Running, lifecycle.CancelRequested}), "the repeat made no transition")

		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Cancelled))
		Expect(lookups.Load()).To(BeZero())
	}, within)
})

// middleTree is a coordinator whose backgroundable child "middle" has a
// backgroundable research child of its own.
func middleTree() *core.Agent {
	middle := &core.Agent{ID: "middle", Description: "Delegates research",
		Tools: core.Tools{"research": core.Backgroundable(shared.ResearchAgent())}}
	return &core.Agent{ID: shared.CoordinatorID, Tools: core.Tools{"middle": core.Backgroundable(middle)}}
}

var _ = Describe("cancel of a run", func() {
	It("cancels the background Work of a cancelled run, recursively: cancelling a middle child cancels the Work it started", func(ctx SpecContext) {
		f := newFixture(ctx)
		coordinator := middleTree()
		leaf := f.model.hold(shared.ResearchID, 1)
		middleWaits := f.model.hold("middle", 2)
		cancelling := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script("middle", scripted.Calls(bg(shared.Question)), scripted.Say("never"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(scripted.Use("middle", map[string]any{"run_in_background": true})),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "cancel", "id": scripted.WorkOf("middle")})),
			scripted.Say("ok"))

		r := f.start(ctx, coordinator, nil)
		middleWaits.Arrived(ctx)
		leaf.Arrived(ctx)
		cancelling.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		middleID := refsOf(res.Messages, "middle").ID
		Expect(f.awaitTerminal(ctx, middleID)).To(Equal(lifecycle.Cancelled))
		var leafID string
		for _, w := range f.rt.Works() {
			if w.Label == "research" {
				leafID = w.Ref.ID
			}
		}
		Expect(leafID).NotTo(BeEmpty())
		Expect(f.work(leafID).State).To(BeElementOf(lifecycle.CancelRequested, lifecycle.Cancelled),
			"the leaf is cancelled by the time its owner's run has ended")
		Expect(f.awaitTerminal(ctx, leafID)).To(Equal(lifecycle.Cancelled))
	}, within)

	It("cancels the background Work of a top-level run whose context is cancelled", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("never"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		runCtx, cancel := context.WithCancel(ctx)
		r := f.start(runCtx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		child.Arrived(ctx)
		cancel()
		_, err := r.wait(ctx)
		Expect(err).To(MatchError(context.Canceled))
		works := f.rt.Works()
		Expect(works).To(HaveLen(1))
		Expect(f.work(works[0].Ref.ID).State).To(BeElementOf(lifecycle.CancelRequested, lifecycle.Cancelled))
		Expect(f.awaitTerminal(ctx, works[0].Ref.ID)).To(Equal(lifecycle.Cancelled))
	}, within)

	It("leaves the Work of a child run that ends normally running", func(ctx SpecContext) {
		f := newFixture(ctx)
		coordinator := middleTree()
		leaf := f.model.hold(shared.ResearchID, 1)
		f.model.Script("middle", scripted.Calls(bg(shared.Question)), scripted.Say("delegated"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(scripted.Use("middle", map[string]any{"run_in_background": true})),
			scripted.Say("ok"))

		res, err := f.run(coordinator, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.awaitTerminal(ctx, refsOf(res.Messages, "middle").ID)).To(Equal(lifecycle.Completed))
		leaf.Arrived(ctx)
		for _, w := range f.rt.Works() {
			if w.Label == "research" {
				Expect(w.State).To(Equal(lifecycle.Running), "Work outlives the run that started it")
				leaf.Release()
				Expect(f.awaitTerminal(ctx, w.Ref.ID)).To(Equal(lifecycle.Completed))
			}
		}
	}, within)
})

var _ = Describe("cancel of a run, at its edges", func() {
	It("cancels the Work a cancelled run detached as well: detached Work started by it has no owner left to stop it", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		parked := f.model.hold(shared.CoordinatorID, 3)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("detach")), scripted.Say("never"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		runCtx, cancel := context.WithCancel(ctx)
		r := f.start(runCtx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		child.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		Expect(f.work(id).Detached).To(BeTrue())
		cancel()
		_, err := r.wait(ctx)
		Expect(err).To(MatchError(context.Canceled))
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Cancelled))
	}, within)

	It("leaves the Work of a run that fails for a reason of its own running: only a cancelled run takes its Work with it", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Fail(errors.New("provider down")))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		_, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).To(MatchError(ContainSubstring("provider down")))
		child.Arrived(ctx)
		id := f.rt.Works()[0].Ref.ID
		Expect(f.work(id).State).To(Equal(lifecycle.Running), "a failed run does not cancel its Work")
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))
	}, within)
})
