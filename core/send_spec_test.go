package core_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// stepwiseResearch answers every research child: a lookup call at its first
// step, its findings at the next.
func stepwiseResearch(req *core.Request) (*core.Response, error) {
	if req.Step == 1 {
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "look-1", Name: "lookup", Arguments: `{}`}}}, nil
	}
	return &core.Response{Output: findings("findings of " + req.Messages[0].Content)}, nil
}

// sends is a turn that sends messages to the i-th research Work of the
// history, with fixed tool-call ids.
type sendTo struct {
	callID  string
	work    int
	message string
}

func sends(list ...sendTo) scripted.Turn {
	return scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
		refs := refsIn(req.Messages)
		var calls []core.ToolCall
		for _, s := range list {
			args := map[string]any{"action": "send", "id": refs[s.work].ID, "message": s.message}
			calls = append(calls, core.ToolCall{ID: s.callID, Name: "work", Arguments: string(mustJSON(args))})
		}
		return &core.Response{ToolCalls: calls}, nil
	}}
}

// guardrail records every request an agent's middleware sees.
type guardrail struct {
	mu   sync.Mutex
	seen []*core.Request
}

func (g *guardrail) use(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
	g.mu.Lock()
	g.seen = append(g.seen, req)
	g.mu.Unlock()
	return next(ctx, req)
}

func (g *guardrail) requests() []*core.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*core.Request(nil), g.seen...)
}

var _ = Describe("send", func() {
	var lookups atomic.Int32

	// sendFixture parks every research child in its first provider step
	// (already answered with a lookup call) and parks the coordinator's
	// second step until a child is parked, so that guidance is always sent
	// while a provider call of the child is in flight.
	sendFixture := func(ctx SpecContext, opts ...option) (*fixture, *hold, *hold) {
		f := newFixture(ctx, opts...)
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		f.model.Answer(shared.ResearchID, stepwiseResearch)
		return f, child, asking
	}

	// sendToTwo starts two research children, parks both in their first
	// provider step, lets the coordinator make the sends in one step, and
	// returns the coordinator's result; the children stay parked.
	sendToTwo := func(ctx SpecContext, list ...sendTo) (*fixture, *hold, *core.RunResult) {
		f, child, asking := sendFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg("one"), bg("two")), sends(list...), scripted.Say("ok"))
		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		child.Arrived(ctx)
		asking.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		return f, child, res
	}

	It("answers with {workId, id, cursor, acceptedAt, outcome: accepted}, numbering cursors 1, 2, ... per Work", func(ctx SpecContext) {
		_, child, res := sendToTwo(ctx, sendTo{"s-a", 0, "a"}, sendTo{"s-b", 0, "b"}, sendTo{"s-c", 1, "c"})
		refs := refsIn(res.Messages)
		results := toolResults(res.Messages, "work")
		Expect(results).To(HaveLen(3))
		ids := map[any]bool{}
		for i, want := range []struct {
			work   string
			cursor string
		}{{refs[0].ID, "1"}, {refs[0].ID, "2"}, {refs[1].ID, "1"}} {
			receipt := obj(results[i].Content)
			Expect(keysOf(receipt)).To(ConsistOf("workId", "id", "cursor", "acceptedAt", "outcome"))
			Expect(receipt["workId"]).To(Equal(want.work))
			Expect(receipt["cursor"]).To(Equal(want.cursor))
			Expect(receipt["outcome"]).To(Equal("accepted"))
			Expect(rfc3339(receipt["acceptedAt"])).To(BeTemporally("==", epoch))
			Expect(receipt["id"]).To(And(BeAssignableToTypeOf(""), Not(BeEmpty())))
			ids[receipt["id"]] = true
		}
		Expect(ids).To(HaveLen(3), "every accepted send has its own receipt id")
		child.Release()
	}, within)

	It("delivers guidance in order as user messages in the child's next provider request, never changing the request in flight, its tools or its guardrails", func(ctx SpecContext) {
		f, child, asking := sendFixture(ctx)
		rail := &guardrail{}
		research := researchWithLookup(&lookups)
		research.Use = []core.Middleware{rail.use}
		sent := f.model.hold(shared.CoordinatorID, 3)
		exact := findings("findings of " + shared.Question)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			sends(sendTo{"s-1", 0, "Focus on pigments."}, sendTo{"s-2", 0, "Cite one source."}),
			scripted.Calls(work("result")),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(research), shared.Ask(shared.Question))
		inFlight := child.Arrived(ctx)
		before := snapshot(inFlight)
		asking.Release()
		sent.Arrived(ctx) // both sends are accepted
		Expect(snapshot(inFlight)).To(Equal(before))
		child.Release()
		sent.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[2].Content).To(Equal(string(exact)))

		reqs := f.model.RequestsFor(shared.ResearchID)
		Expect(reqs).To(HaveLen(2))
		Expect(reqs[0]).To(BeIdenticalTo(inFlight))
		Expect(snapshot(reqs[0])).To(Equal(before), "the request in flight never changed")
		for _, m := range reqs[0].Messages {
			Expect(m.Guidance).To(BeFalse())
		}
		next := reqs[1].Messages
		Expect(next).To(HaveLen(5))
		Expect(next[2].Role).To(Equal(core.RoleTool), "guidance follows the tool round of the step it missed")
		Expect(next[3:]).To(Equal([]core.Message{
			{Role: core.RoleUser, Content: "Focus on pigments.", Guidance: true},
			{Role: core.RoleUser, Content: "Cite one source.", Guidance: true},
		}))
		Expect(reqs[1].Tools).To(Equal(reqs[0].Tools))
		Expect(reqs[1].System).To(Equal(reqs[0].System))
		Expect(rail.requests()).To(Equal(reqs), "the child's own guardrail saw both requests as sent")
		delivered := f.events.filter(func(e core.Event) bool { return e.Kind == core.EventGuidanceDelivered })
		Expect(delivered).To(HaveLen(1))
		Expect(delivered[0].Step).To(Equal(2))
	}, within)

	It("delivers guidance accepted for queued Work at the child's first provider request", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		blocker := f.model.holdWhen(asked("blocker"), false)
		f.model.Answer(shared.ResearchID, func(req *core.Request) (*core.Response, error) {
			return &core.Response{Output: findings("S")}, nil
		})
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Calls(work("send", "message", "Be brief.")),
			scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(obj(toolResults(res.Messages, "work")[0].Content)["cursor"]).To(Equal("1"))
		target := refsIn(res.Messages)[1].ID
		Expect(f.work(target).State).To(Equal(lifecycle.Queued))
		blocker.Release()
		f.awaitTerminal(ctx, target)
		var first *core.Request
		for _, r := range f.model.RequestsFor(shared.ResearchID) {
			if asked("target")(r) {
				first = r
			}
		}
		Expect(first).NotTo(BeNil())
		Expect(first.Step).To(Equal(1))
		Expect(first.Messages).To(Equal([]core.Message{
			{Role: core.RoleUser, Content: "target"},
			{Role: core.RoleUser, Content: "Be brief.", Guidance: true},
		}))
	}, within)

	It("is idempotent by tool-call identity: a repeated identity returns the same receipt and enqueues nothing", func(ctx SpecContext) {
		f, child, asking := sendFixture(ctx)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			sends(sendTo{"same-call", 0, "Focus on pigments."}, sendTo{"same-call", 0, "Focus on pigments."}),
			scripted.Calls(work("result")),
			scripted.Say("ok"))

		sent := f.model.hold(shared.CoordinatorID, 3)
		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		sent.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		child.Release()
		sent.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		results := toolResults(res.Messages, "work")
		Expect(results[0].IsError).To(BeFalse())
		Expect(results[1].Content).To(Equal(results[0].Content), "the same receipt")
		Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventSendAccepted })).To(HaveLen(1))
		Expect(f.work(id).Sent).To(Equal(1))
		var guidance []core.Message
		for _, m := range f.model.RequestsFor(shared.ResearchID)[1].Messages {
			if m.Guidance {
				guidance = append(guidance, m)
			}
		}
		Expect(guidance).To(HaveLen(1), "delivered once")
	}, within)

	It("scopes send identity to its Work: one tool-call id sending to two Work items is two commands, each with its own receipt and cursor", func(ctx SpecContext) {
		f, child, res := sendToTwo(ctx, sendTo{"same-call", 0, "guide one"}, sendTo{"same-call", 1, "guide two"})
		refs := refsIn(res.Messages)
		results := toolResults(res.Messages, "work")
		Expect(results).To(HaveLen(2))
		first, second := obj(results[0].Content), obj(results[1].Content)
		Expect(first["workId"]).To(Equal(refs[0].ID))
		Expect(second["workId"]).To(Equal(refs[1].ID), "the second Work gets its own receipt")
		Expect(second["cursor"]).To(Equal("1"))
		Expect(second["id"]).NotTo(Equal(first["id"]))
		Expect(f.work(refs[0].ID).Sent).To(Equal(1))
		Expect(f.work(refs[1].ID).Sent).To(Equal(1), "the second Work's guidance is not dropped")
		child.Release()
		for _, ref := range refs {
			Expect(f.awaitTerminal(ctx, ref.ID)).To(Equal(lifecycle.Completed))
		}
		var guidance []string
		for _, req := range f.model.RequestsFor(shared.ResearchID) {
			for _, m := range req.Messages {
				if m.Guidance {
					guidance = append(guidance, m.Content)
				}
			}
		}
		Expect(guidance).To(ConsistOf("guide one", "guide two"))
	}, within)

	It("keeps only a SHA-256 digest of the message in the identity record, never its text", func(ctx SpecContext) {
		f, child, asking := sendFixture(ctx)
		const message = "SECRET-GUIDANCE: prefer the 2019 survey"
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			sends(sendTo{"s-1", 0, message}),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		_, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		records := core.SendIdentityRecords(f.rt)
		Expect(records).To(HaveLen(1))
		strs, digests := contents(reflect.ValueOf(records[0]))
		for _, s := range strs {
			Expect(s).NotTo(ContainSubstring("SECRET-GUIDANCE"))
		}
		sum := sha256.Sum256([]byte(message))
		Expect(digests).To(ContainElement(sum[:]))
		child.Release()
	}, within)

	It("answers the same tool-call identity with a different message with a conflict error and enqueues nothing", func(ctx SpecContext) {
		f, child, asking := sendFixture(ctx)
		sent := f.model.hold(shared.CoordinatorID, 3)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			sends(sendTo{"same-call", 0, "Focus on pigments."}, sendTo{"same-call", 0, "Focus on weather."}),
			scripted.Calls(work("result")),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		sent.Arrived(ctx)
		child.Release()
		sent.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)["cursor"]).To(Equal("1"))
		Expect(errorCode(results[1])).To(Equal("conflict"))
		var guidance []string
		for _, m := range f.model.RequestsFor(shared.ResearchID)[1].Messages {
			if m.Guidance {
				guidance = append(guidance, m.Content)
			}
		}
		Expect(guidance).To(Equal([]string{"Focus on pigments."}))
	}, within)

	DescribeTable("rejects send to terminal Work with a clear model-facing error",
		func(ctx SpecContext, turn scripted.Turn, want lifecycle.State) {
			f := newFixture(ctx)
			parked := f.model.hold(shared.CoordinatorID, 2)
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(bg(shared.Question)),
				scripted.Calls(work("send", "message", "one more thing")),
				scripted.Say("ok"))
			f.model.Script(shared.ResearchID, turn)

			r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			parked.Arrived(ctx)
			id := f.awaitRef(ctx, 1).ID
			Expect(f.awaitTerminal(ctx, id)).To(Equal(want))
			parked.Release()
			res, err := r.wait(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("ok"), "the run goes on")
			msg := toolResults(res.Messages, "work")[0]
			Expect(errorCode(msg)).To(Equal("terminal"))
			Expect(msg.Content).To(ContainSubstring(string(want)))
			Expect(f.work(id).Sent).To(BeZero())
			Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventSendAccepted })).To(BeEmpty())
		},
		Entry("completed", scripted.Final(findings("S")), lifecycle.Completed, within),
		Entry("failed", scripted.Fail(errors.New("boom")), lifecycle.Failed, within),
	)

	DescribeTable("rejects send to a non-Agent target with a clear model-facing error, checking the target before the message",
		func(ctx SpecContext, args map[string]any) {
			f := newFixture(ctx)
			gate := make(chan struct{})
			DeferCleanup(func() { close(gate) })
			fetch := &core.Tool{
				Description: "Fetch a page",
				Input:       core.MustSchema(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
				Run: func(ctx context.Context, _ core.ToolCall, _ any) (any, error) {
					select {
					case <-gate:
						return "<html/>", nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				},
			}
			a := &core.Agent{ID: "crawler", Tools: core.Tools{"fetch": core.BackgroundTool("fetcher", fetch)}}
			args["action"], args["id"] = "send", scripted.WorkOf("fetch")
			f.model.Script("crawler",
				scripted.Calls(scripted.Use("fetch", map[string]any{"url": "https://example.test", "run_in_background": true})),
				scripted.Calls(scripted.Use("work", args)),
				scripted.Say("ok"))

			res, err := f.run(a, nil)
			Expect(err).NotTo(HaveOccurred())
			ref := refsOf(res.Messages, "fetch")
			Expect(ref.TargetID).To(Equal("fetcher"))
			msg := toolResults(res.Messages, "work")[0]
			Expect(errorCode(msg)).To(Equal("not_an_agent"))
			Expect(f.work(ref.ID).State).To(Equal(lifecycle.Running))
			Expect(f.work(ref.ID).Sent).To(BeZero())
		},
		Entry("a BackgroundTool, with a message", map[string]any{"message": "hurry"}, within),
		Entry("a BackgroundTool, without a message: the target check comes first", map[string]any{}, within),
	)
})

// contents collects every string and every byte array or slice reachable
// from v, unexported fields included.
func contents(v reflect.Value) (strs []string, bytes [][]byte) {
	switch v.Kind() {
	case reflect.String:
		strs = append(strs, v.String())
	case reflect.Array, reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			bytes = append(bytes, b)
			strs = append(strs, string(b))
			return
		}
		for i := 0; i < v.Len(); i++ {
			s, b := contents(v.Index(i))
			strs, bytes = append(strs, s...), append(bytes, b...)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			s, b := contents(v.Field(i))
			strs, bytes = append(strs, s...), append(bytes, b...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			s, b := contents(k)
			strs, bytes = append(strs, s...), append(bytes, b...)
			s, b = contents(v.MapIndex(k))
			strs, bytes = append(strs, s...), append(bytes, b...)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return contents(v.Elem())
		}
	}
	return
}

var _ = Describe("send against the lifecycle", func() {
	var lookups atomic.Int32

	It("accepts send to cancel-requested Work, which has not ended, and never delivers it once the child stops", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		f.model.Answer(shared.ResearchID, stepwiseResearch)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			sends(sendTo{"s-1", 0, "Wrap up."}),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)["state"]).To(Equal("cancel-requested"))
		receipt := obj(results[1].Content)
		Expect(results[1].IsError).To(BeFalse(), results[1].Content)
		Expect(receipt["outcome"]).To(Equal("accepted"))
		Expect(receipt["cursor"]).To(Equal("1"))

		id := refsIn(res.Messages)[0].ID
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Cancelled))
		Expect(f.work(id).Sent).To(Equal(1))
		Expect(f.work(id).Delivered).To(BeZero(), "the child stopped at the boundary it would have received it at")
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1))
	}, within)

	It("rejects send to cancelled Work with a clear model-facing error, as it does completed and failed Work", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		blocker := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("send", "message", "one more thing")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal("ok"), "the run goes on")
		target := refsIn(res.Messages)[1].ID
		msg := toolResults(res.Messages, "work")[1]
		Expect(errorCode(msg)).To(Equal("terminal"))
		Expect(msg.Content).To(ContainSubstring("cancelled"))
		Expect(f.work(target).Sent).To(BeZero())
		blocker.Release()
	}, within)

	It("answers a repeated send identity with its first receipt even once the Work has ended, and a new identity with the terminal error", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("started"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := refsIn(res.Messages)[0].ID
		owner := f.work(id).Owner
		msg := "Focus on pigments."
		in := core.WorkInput{Action: "send", ID: &id, Message: &msg}

		first, err := f.rt.WorkAction(ctx, owner, 3, "op-1", in)
		Expect(err).NotTo(HaveOccurred())
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))

		again, err := f.rt.WorkAction(ctx, owner, 3, "op-1", in)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(first), "the same identity gets the same receipt")
		_, err = f.rt.WorkAction(ctx, owner, 3, "op-2", in)
		Expect(err).To(MatchError(ContainSubstring("terminal")))
		Expect(f.work(id).Sent).To(Equal(1))
	}, within)
})
