package core_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// quickFindings answers every research child at once.
func quickFindings(*core.Request) (*core.Response, error) {
	return &core.Response{Output: findings("S")}, nil
}

func bgCalls(n int) []scripted.Call {
	calls := make([]scripted.Call, n)
	for i := range calls {
		calls[i] = bg(fmt.Sprintf("q%02d", i+1))
	}
	return calls
}

var _ = Describe("Admission", func() {
	It("runs at most 8 background children at once by default, so further Work is queued", func(ctx SpecContext) {
		f := newFixture(ctx)
		children := f.model.hold(shared.ResearchID, 1)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bgCalls(9)...),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		list := objs(toolResults(res.Messages, "work")[0].Content)
		Expect(list).To(HaveLen(9))
		for i, e := range list[:8] {
			Expect(e["state"]).To(Equal("running"), "entry %d", i)
		}
		Expect(list[8]["state"]).To(Equal("queued"))

		children.Release()
		for _, ref := range refsIn(res.Messages) {
			Expect(f.awaitTerminal(ctx, ref.ID)).To(Equal(lifecycle.Completed), "queued Work runs once a slot frees")
		}
	}, within)

	It("answers a background call past the owner's 32 outstanding Work with a retryable capacity error and starts nothing", func(ctx SpecContext) {
		f := newFixture(ctx)
		children := f.model.hold(shared.ResearchID, 1)
		retry := f.model.hold(shared.CoordinatorID, 2)
		f.model.Answer(shared.ResearchID, quickFindings)
		over := bgID("call-over", "one too many")
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(append(bgCalls(32), over)...),
			scripted.Calls(bgID("call-retry", "one too many")),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		retry.Arrived(ctx)
		Expect(f.rt.Works()).To(HaveLen(32), "the 33rd call started nothing")
		Expect(f.events.filter(func(e core.Event) bool {
			return e.Kind == core.EventRunStart && e.Agent == shared.ResearchID && fmt.Sprint(e.Input) == fmt.Sprint(shared.Ask("one too many"))
		})).To(BeEmpty())
		children.Release()
		for _, w := range f.rt.Works() {
			f.awaitTerminal(ctx, w.Ref.ID)
		}
		retry.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		results := toolResults(res.Messages, "research")
		Expect(results).To(HaveLen(34))
		refused := results[32]
		Expect(refused.ToolCallID).To(Equal("call-over"))
		Expect(errorCode(refused)).To(Equal("capacity_exceeded"))
		Expect(obj(refused.Content)["error"].(map[string]any)["retryable"]).To(Equal(true))
		Expect(results[33].IsError).To(BeFalse(), "the retry, once Work has finished, is accepted")
		Expect(f.rt.Works()).To(HaveLen(33))
	}, within)

	It("frees the slot of cancelled queued Work", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1), withMaxOutstanding(2))
		first := f.model.holdWhen(asked("first"), false)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			scripted.Calls(bg("third")), // refused: two outstanding
			scripted.Calls(work("cancel")),
			scripted.Calls(bg("fourth")),
			scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(errorCode(results[2])).To(Equal("capacity_exceeded"))
		Expect(obj(toolResults(res.Messages, "work")[0].Content)["state"]).To(Equal("cancelled"))
		Expect(results[3].IsError).To(BeFalse(), "the cancelled queued Work no longer counts")

		refs := refsIn(res.Messages)
		Expect(refs).To(HaveLen(3))
		first.Release()
		Expect(f.awaitTerminal(ctx, refs[2].ID)).To(Equal(lifecycle.Completed), "the fourth takes the freed slot")
		Expect(f.work(refs[1].ID).State).To(Equal(lifecycle.Cancelled))
		Expect(f.work(refs[1].ID).StartedAt.IsZero()).To(BeTrue(), "the cancelled one never started")
	}, within)
})

var _ = Describe("Lifetime", func() {
	It("keeps Work running after its owner's run has ended, until it finishes", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := refsIn(res.Messages)[0].ID
		Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunEnd && e.Run == res.Run })).To(HaveLen(1))
		Expect(f.work(id).State).To(Equal(lifecycle.Running))
		child.Arrived(ctx)
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))
		Expect(f.work(id).Rejoined).To(BeFalse())
	}, within)

	It("cancels and drains every Work when the Runtime closes, and refuses new runs", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(2))
		children := f.model.hold(shared.ResearchID, 1)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bgCalls(3)...), scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		children.Arrived(ctx)
		children.Arrived(ctx)

		Expect(f.rt.Close()).To(Succeed())
		works := f.rt.Works()
		Expect(works).To(HaveLen(3))
		for _, w := range works {
			Expect(w.State).To(Equal(lifecycle.Cancelled), "%s", w.Ref.ID)
		}
		refs := refsIn(res.Messages)
		Expect(f.events.transitions(refs[0].ID)).To(Equal([]lifecycle.State{
			lifecycle.Queued, lifecycle.Running, lifecycle.CancelRequested, lifecycle.Cancelled}))
		Expect(f.events.transitions(refs[2].ID)).To(Equal([]lifecycle.State{lifecycle.Queued, lifecycle.Cancelled}))

		_, err = f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrClosed))
		Expect(f.rt.Close()).To(Succeed(), "closing twice is harmless")
	}, within)
})

// onEachRef is a turn that calls the work tool with the action on every
// research Work of the history, oldest first.
func onEachRef(action string) scripted.Turn {
	return scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
		var calls []core.ToolCall
		for i, ref := range refsIn(req.Messages) {
			args := map[string]any{"action": action, "id": ref.ID}
			calls = append(calls, core.ToolCall{ID: fmt.Sprintf("%s-%d", action, i+1), Name: "work", Arguments: string(mustJSON(args))})
		}
		return &core.Response{ToolCalls: calls}, nil
	}}
}

var _ = Describe("Admission after detach", func() {
	It("frees the owner's outstanding slot when Work is detached, while the detached Work keeps its concurrency slot", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxOutstanding(2), withMaxConcurrent(2))
		children := f.model.hold(shared.ResearchID, 1)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			onEachRef("detach"),
			scripted.Calls(bg("third")),
			scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results).To(HaveLen(3))
		Expect(results[2].IsError).To(BeFalse(), "detached Work no longer counts toward the owner's limit: %s", results[2].Content)
		refs := refsIn(res.Messages)
		Expect(refs).To(HaveLen(3))
		Expect(f.work(refs[0].ID).State).To(Equal(lifecycle.Running), "detach does not cancel")
		Expect(f.work(refs[1].ID).State).To(Equal(lifecycle.Running))
		Expect(f.work(refs[2].ID).State).To(Equal(lifecycle.Queued), "both concurrency slots are still held by the detached children")

		children.Release()
		Expect(f.awaitTerminal(ctx, refs[2].ID)).To(Equal(lifecycle.Completed), "it runs once a detached child frees its slot")
	}, within)
})

var _ = Describe("History", func() {
	It("keeps a turn's final answer in the history: RunResult.Messages ends with it, and the next turn on that history sees it", func(ctx SpecContext) {
		f := newFixture(ctx)
		writer := &core.Agent{ID: "writer", Description: "Writes drafts"}
		f.model.Script("writer", scripted.Say("first draft"), scripted.Say("second draft"))

		first, err := f.run(writer, "Write a draft.")
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Messages).To(Equal([]core.Message{
			{Role: core.RoleUser, Content: "Write a draft."},
			{Role: core.RoleAssistant, Content: "first draft"},
		}))

		second, err := f.rt.RunWith(f.ctx, writer, "Revise it.", core.RunOptions{History: first.Messages})
		Expect(err).NotTo(HaveOccurred())
		Expect(f.model.RequestsFor("writer")[1].Messages).To(Equal([]core.Message{
			{Role: core.RoleUser, Content: "Write a draft."},
			{Role: core.RoleAssistant, Content: "first draft"},
			{Role: core.RoleUser, Content: "Revise it."},
		}), "the second turn sees its own first answer")
		Expect(second.Messages[len(second.Messages)-1]).To(Equal(core.Message{Role: core.RoleAssistant, Content: "second draft"}))
	}, within)

	It("keeps a structured final output in the history as the document the model produced", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := f.run(shared.ResearchAgent(), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Messages).To(HaveLen(2))
		Expect(res.Messages[1]).To(Equal(core.Message{Role: core.RoleAssistant, Content: string(findings("S"))}))
		Expect(res.Messages[1].Content).To(Equal(res.Output.Raw))
	}, within)
})
