package core_test

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("Foreground and background child calls", func() {
	DescribeTable("returns the exact child output in the same tool round when run_in_background is absent or false",
		func(ctx SpecContext, args map[string]any) {
			f := newFixture(ctx)
			exact := findings("Chlorophyll fades")
			f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", args)), scripted.Say("done"))
			f.model.Script(shared.ResearchID, scripted.Final(exact))

			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			second := f.model.RequestsFor(shared.CoordinatorID)[1]
			last := second.Messages[len(second.Messages)-1]
			Expect(last.Role).To(Equal(core.RoleTool))
			Expect(last.ToolName).To(Equal("research"))
			Expect(last.Content).To(Equal(string(exact)))
			Expect(f.rt.Works()).To(BeEmpty(), "a foreground call creates no Work")
			Expect(second.Status).To(BeNil())
			Expect(res.Output.Raw).To(Equal("done"))
		},
		Entry("flag absent", map[string]any{"question": shared.Question}, within),
		Entry("flag false", map[string]any{"question": shared.Question, "run_in_background": false}, within),
	)

	It("returns a work.ref at once when run_in_background is true, without awaiting the child", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("started"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred(), "the parent finished while its child is parked")
		msg := toolResults(res.Messages, "research")[0]
		ref := obj(msg.Content)
		Expect(keysOf(ref)).To(ConsistOf("kind", "id", "targetId", "guarantees"))
		Expect(ref["kind"]).To(Equal("work.ref"))
		Expect(ref["id"]).To(And(BeAssignableToTypeOf(""), Not(BeEmpty())))
		Expect(ref["targetId"]).To(Equal(shared.ResearchID))
		Expect(ref["guarantees"]).To(Equal(map[string]any{"execution": "process-local", "rejoin": "process-local"}))

		id := ref["id"].(string)
		Expect(f.work(id).State).To(Equal(lifecycle.Running))
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))
	}, within)

	It("hands out an immutable work.ref: changing a copy changes neither the registry nor what the model saw", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("started"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		seen := toolResults(res.Messages, "research")[0].Content

		ref := f.awaitRef(ctx, 1)
		original := ref
		ref.ID, ref.Kind, ref.TargetID = "w-forged", "other", "other-agent"
		ref.Guarantees.Execution, ref.Guarantees.Rejoin = "durable", "durable"

		Expect(f.work(original.ID).Ref).To(Equal(original))
		Expect(f.awaitRef(ctx, 1)).To(Equal(original))
		Expect(toolResults(res.Messages, "research")[0].Content).To(Equal(seen))
		f.awaitTerminal(ctx, original.ID)
	}, within)

	DescribeTable("answers a child call whose input fails validation with an ordinary tool error and creates no Work",
		func(ctx SpecContext, args map[string]any) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", args)), scripted.Say("gave up"))

			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(errorCode(toolResults(res.Messages, "research")[0])).To(Equal("invalid_arguments"))
			Expect(f.rt.Works()).To(BeEmpty())
			Expect(f.model.RequestsFor(shared.ResearchID)).To(BeEmpty(), "the child never ran")
			Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventWorkTransition })).To(BeEmpty())
		},
		Entry("background, required question missing", map[string]any{"run_in_background": true}, within),
		Entry("background, question of the wrong type", map[string]any{"question": 7, "run_in_background": true}, within),
		Entry("background, an undeclared property", map[string]any{"question": "q", "topic": "x", "run_in_background": true}, within),
		Entry("run_in_background not a boolean", map[string]any{"question": "q", "run_in_background": "yes"}, within),
		Entry("foreground, required question missing", map[string]any{}, within),
	)
})

var _ = Describe("Occurrence identity of background calls", func() {
	It("returns the existing work.ref for a repeated call identity with the same input and never starts the child twice", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bgID("call-r", shared.Question), bgID("call-r", shared.Question)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results).To(HaveLen(2))
		Expect(results[0].IsError).To(BeFalse())
		Expect(results[1].Content).To(Equal(results[0].Content))
		Expect(f.rt.Works()).To(HaveLen(1))
		id := refsIn(res.Messages)[0].ID
		f.awaitTerminal(ctx, id)
		Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == shared.ResearchID })).To(HaveLen(1))
	}, within)

	It("answers a repeated call identity with different input with a conflict error", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bgID("call-r", shared.Question), bgID("call-r", "Why is the sky blue?")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(errorCode(results[1])).To(Equal("conflict"))
		Expect(f.rt.Works()).To(HaveLen(1))
		f.awaitTerminal(ctx, refsIn(res.Messages)[0].ID)
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1))
		Expect(f.model.RequestsFor(shared.ResearchID)[0].Messages[0].Content).To(Equal(shared.Question))
	}, within)

	It("starts separate Work for separate call identities with the same input", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bgID("call-a", shared.Question), bgID("call-b", shared.Question)), scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) {
			return &core.Response{Output: findings("S")}, nil
		})
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		refs := refsIn(res.Messages)
		Expect(refs).To(HaveLen(2))
		Expect(refs[0].ID).NotTo(Equal(refs[1].ID))
	}, within)
})

var _ = Describe("Occurrence identity of foreground calls", func() {
	// fg is a foreground research call with a fixed tool-call id.
	fg := func(q string) scripted.Call {
		c := scripted.Use("research", shared.Ask(q))
		c.ID = "call-f"
		return c
	}

	It("returns the first run's exact output for a repeated foreground call identity with the same input, without running the child again", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(fg(shared.Question), fg(shared.Question)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("FIRST")), scripted.Final(findings("SECOND")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results).To(HaveLen(2))
		Expect(results[0].Content).To(Equal(string(findings("FIRST"))))
		Expect(results[1].Content).To(Equal(results[0].Content), "the replay returns the first run's exact output")
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1), "the child ran once")
		Expect(f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == shared.ResearchID })).To(HaveLen(1))
		Expect(f.rt.Works()).To(BeEmpty(), "a foreground call is no Work")
	}, within)

	It("answers a repeated foreground call identity with different input with a conflict error, without running the child again", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(fg(shared.Question), fg("Why is the sky blue?")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("FIRST")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(errorCode(results[1])).To(Equal("conflict"))
		Expect(f.model.RequestsFor(shared.ResearchID)).To(HaveLen(1))
	}, within)

	It("runs the child again for the same call id at another turn: the turn is part of the identity", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(fg(shared.Question)), scripted.Calls(fg(shared.Question)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("FIRST")), scripted.Final(findings("SECOND")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results[1].Content).To(Equal(string(findings("SECOND"))))
	}, within)
})

var _ = Describe("Work ids", func() {
	It("refuses an id the id source hands out twice with a model-facing error, and keeps the existing Work reachable", func(ctx SpecContext) {
		f := newFixture(ctx, withIDs(&fixedWorkIDs{ids: []string{"w-dup"}}))
		first := f.model.holdWhen(asked("first"), false)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			scripted.Calls(workOn("status", "w-dup")),
			scripted.Say("ok"))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results[0].IsError).To(BeFalse())
		Expect(results[1].IsError).To(BeTrue(), "the second call is refused: %s", results[1].Content)
		Expect(results[1].Content).To(ContainSubstring("w-dup"))
		Expect(f.rt.Works()).To(HaveLen(1), "nothing shadows the first Work")
		status := obj(toolResults(res.Messages, "work")[0].Content)
		Expect(status["state"]).To(Equal("running"))
		Expect(f.events.filter(func(e core.Event) bool {
			return e.Kind == core.EventRunStart && e.Agent == shared.ResearchID && fmt.Sprint(e.Input) == fmt.Sprint(shared.Ask("second"))
		})).To(BeEmpty(), "the refused call started nothing")
		first.Release()
		Expect(f.awaitTerminal(ctx, "w-dup")).To(Equal(lifecycle.Completed))
	}, within)
})

// countingReader counts the reads of the source it wraps.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

var _ = Describe("Random ids", Serial, func() {
	It("draws each id's 80 bits from the random source, a block of many ids per read, and no bit serves two ids", func() {
		// A source whose every byte differs: ids that reused a bit, or
		// did not read the source, would not spell it.
		stream := make([]byte, 10*1000)
		for w := range 1000 {
			binary.BigEndian.PutUint64(stream[10*w:], uint64(w)*0x9e3779b97f4a7c15)
			binary.BigEndian.PutUint16(stream[10*w+8:], uint16(w))
		}
		src := &countingReader{r: bytes.NewReader(stream)}
		defer core.SetIDEntropy(src)()
		enc := base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
		kinds := []core.IDKind{core.IDWork, core.IDRun, core.IDSend, "lease"}
		prefixes := []string{"w_", "run_", "send_", "lease_"}
		seen := map[string]bool{}
		for i := range 640 {
			id := core.RandomIDs{}.NewID(kinds[i%4])
			Expect(id).To(Equal(prefixes[i%4]+enc.EncodeToString(stream[10*i:10*i+10])), "id %d", i)
			Expect(seen[id]).To(BeFalse())
			seen[id] = true
		}
		Expect(src.reads).To(BeNumerically(">=", 1))
		Expect(src.reads).To(BeNumerically("<=", 640/64), "one read serves a block of ids")
	})

	It("draws unique, well-formed ids from crypto/rand by default, from many goroutines at once", func() {
		const workers, each = 4, 500
		ids := make(chan string, workers*each)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					ids <- core.RandomIDs{}.NewID(core.IDWork)
				}
			})
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		for id := range ids {
			Expect(id).To(MatchRegexp(`^w_[a-z2-7]{16}$`))
			Expect(seen[id]).To(BeFalse(), "id %s drawn twice", id)
			seen[id] = true
		}
		Expect(seen).To(HaveLen(workers * each))
	})
})

var _ = Describe("list and status", func() {
	It("lists at most 50 owner-visible entries, oldest first", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxOutstanding(64))
		calls := make([]scripted.Call, 52)
		for i := range calls {
			calls[i] = bg(fmt.Sprintf("question %02d", i+1))
		}
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(calls...),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) {
			return &core.Response{Output: findings("S")}, nil
		})

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		refs := refsIn(res.Messages)
		Expect(refs).To(HaveLen(52))
		list := objs(toolResults(res.Messages, "work")[0].Content)
		Expect(list).To(HaveLen(50))
		for i, entry := range list {
			Expect(entry["work"].(map[string]any)["id"]).To(Equal(refs[i].ID), "entry %d", i)
		}
	}, within)

	It("projects each entry result-free: work ref, targetLabel, state, attachment attached, attempt 1, timestamps only when they apply, resultAvailable", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		child := f.model.hold(shared.ResearchID, 1)
		parked := f.model.hold(shared.CoordinatorID, 3)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID,
			scripted.Turn{When: asked("first"), Output: findings("OUT-first")},
			scripted.Turn{When: asked("second"), Output: findings("OUT-second")})
		t0 := f.clock.Now()

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		parked.Arrived(ctx)
		f.clock.Advance(5 * time.Second)
		child.Release()
		refs := []core.WorkRef{f.awaitRef(ctx, 1), f.awaitRef(ctx, 2)}
		f.awaitTerminal(ctx, refs[0].ID)
		f.awaitTerminal(ctx, refs[1].ID)
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		lists := toolResults(res.Messages, "work")
		before, after := objs(lists[0].Content), objs(lists[1].Content)

		By("a running entry has createdAt and startedAt; a queued one only createdAt")
		Expect(keysOf(before[0])).To(ConsistOf("work", "targetLabel", "state", "attachment", "attempt", "createdAt", "startedAt", "resultAvailable"))
		Expect(keysOf(before[1])).To(ConsistOf("work", "targetLabel", "state", "attachment", "attempt", "createdAt", "resultAvailable"))
		Expect(before[0]["state"]).To(Equal("running"))
		Expect(before[1]["state"]).To(Equal("queued"))
		for i, e := range before {
			Expect(e["work"]).To(Equal(map[string]any{"kind": "work.ref", "id": refs[i].ID, "targetId": shared.ResearchID,
				"guarantees": map[string]any{"execution": "process-local", "rejoin": "process-local"}}))
			Expect(e["targetLabel"]).To(Equal("research"))
			Expect(e["attachment"]).To(Equal("attached"))
			Expect(e["attempt"]).To(Equal(float64(1)))
			Expect(e["resultAvailable"]).To(Equal(false))
			Expect(rfc3339(e["createdAt"])).To(BeTemporally("==", t0))
		}
		Expect(rfc3339(before[0]["startedAt"])).To(BeTemporally("==", t0))

		By("a completed entry adds finishedAt and resultAvailable")
		for _, e := range after {
			Expect(keysOf(e)).To(ConsistOf("work", "targetLabel", "state", "attachment", "attempt", "createdAt", "startedAt", "finishedAt", "resultAvailable"))
			Expect(e["state"]).To(Equal("completed"))
			Expect(e["resultAvailable"]).To(Equal(true))
			Expect(rfc3339(e["finishedAt"])).To(BeTemporally("==", t0.Add(5*time.Second)))
		}
		Expect(rfc3339(after[1]["startedAt"])).To(BeTemporally("==", t0.Add(5*time.Second)), "the queued one started when the slot freed")

		for _, l := range lists {
			Expect(l.Content).NotTo(ContainSubstring("OUT-"), "no result in a projection")
		}
	}, within)

	It("answers status for one Work with the same projection and never its output or failure text", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("good"), bg("bad")),
			scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
				refs := refsIn(req.Messages)
				return &core.Response{ToolCalls: []core.ToolCall{
					{ID: "s1", Name: "work", Arguments: `{"action":"status","id":"` + refs[0].ID + `"}`},
					{ID: "s2", Name: "work", Arguments: `{"action":"status","id":"` + refs[1].ID + `"}`},
				}}, nil
			}},
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID,
			scripted.Turn{When: asked("good"), Output: findings("OUTPUT-MARKER")},
			scripted.Turn{When: asked("bad"), Err: errors.New("FAILURE-MARKER: quota exhausted")})

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		good, bad := f.awaitRef(ctx, 1), f.awaitRef(ctx, 2)
		Expect(f.awaitTerminal(ctx, good.ID)).To(Equal(lifecycle.Completed))
		Expect(f.awaitTerminal(ctx, bad.ID)).To(Equal(lifecycle.Failed))
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		statuses := toolResults(res.Messages, "work")
		ok, failed := obj(statuses[0].Content), obj(statuses[1].Content)
		Expect(ok["state"]).To(Equal("completed"))
		Expect(ok["resultAvailable"]).To(Equal(true))
		Expect(failed["state"]).To(Equal("failed"))
		Expect(failed["resultAvailable"]).To(Equal(false))
		Expect(keysOf(failed)).To(ConsistOf("work", "targetLabel", "state", "attachment", "attempt", "createdAt", "startedAt", "finishedAt", "resultAvailable"))
		for _, s := range statuses {
			Expect(s.Content).NotTo(ContainSubstring("OUTPUT-MARKER"))
			Expect(s.Content).NotTo(ContainSubstring("FAILURE-MARKER"))
		}
	}, within)

	DescribeTable("answers exactly {\"status\":\"not_found\"} for an unknown id",
		func(ctx SpecContext, action string) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(bg(shared.Question)),
				scripted.Calls(workOn(action, "w_unknown", "message", "hello", "timeout", "1s")),
				scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(toolResults(res.Messages, "work")[0].Content).To(Equal(notFound))
		},
		Entry("status", "status", within),
		Entry("result", "result", within),
		Entry("cancel", "cancel", within),
		Entry("detach", "detach", within),
		Entry("send", "send", within),
	)

	DescribeTable("answers not_found before any action-specific check, for an unknown or a detached id",
		func(ctx SpecContext, detached bool, action string, extra ...any) {
			f := newFixture(ctx)
			child := f.model.hold(shared.ResearchID, 1)
			call := workOn(action, "w_unknown", extra...)
			if detached {
				call = work(action, extra...)
			}
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(bg(shared.Question)),
				scripted.Calls(work("detach")),
				scripted.Calls(call),
				scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(toolResults(res.Messages, "work")[1].Content).To(Equal(notFound))
			child.Release()
		},
		Entry("result with an unparsable timeout, unknown id", false, "result", "timeout", "soon", within),
		Entry("result with a negative timeout, detached id", true, "result", "timeout", "-5s", within),
		Entry("send without a message, unknown id", false, "send", within),
		Entry("send with an empty message, detached id", true, "send", "message", "", within),
		Entry("send with an empty message, unknown id", false, "send", "message", "", within),
	)

	It("answers not_found for every id action on Work owned by another agent instance, and leaves that Work alone", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		f.model.ScriptRun(shared.CoordinatorID, 1, scripted.Calls(bg(shared.Question)), scripted.Say("started"))
		var foreign string
		f.model.ScriptRun(shared.CoordinatorID, 2,
			scripted.Turn{Respond: func(*core.Request) (*core.Response, error) {
				var calls []core.ToolCall
				for i, action := range []string{"status", "result", "cancel", "send", "detach"} {
					calls = append(calls, core.ToolCall{ID: fmt.Sprint("c", i), Name: "work",
						Arguments: `{"action":"` + action + `","id":"` + foreign + `","timeout":"0s","message":"stop"}`})
				}
				calls = append(calls, core.ToolCall{ID: "c-list", Name: "work", Arguments: `{"action":"list"}`})
				return &core.Response{ToolCalls: calls}, nil
			}},
			scripted.Say("ok"))
		coordinator := shared.Coordinator(shared.ResearchAgent())

		first, err := f.run(coordinator, shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		foreign = refsIn(first.Messages)[0].ID
		second, err := f.run(coordinator, shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(second.Run).NotTo(Equal(first.Run))

		results := toolResults(second.Messages, "work")
		for _, m := range results[:5] {
			Expect(m.Content).To(Equal(notFound))
		}
		Expect(results[5].Content).To(Equal("[]"), "another instance's Work is not listed")
		w := f.work(foreign)
		Expect(w.State).To(Equal(lifecycle.Running), "not cancelled by a foreign owner")
		Expect(w.Detached).To(BeFalse())
		Expect(w.Sent).To(BeZero())
		child.Release()
		Expect(f.awaitTerminal(ctx, foreign)).To(Equal(lifecycle.Completed))
	}, within)

	It("answers not_found for an id from another Runtime: the registry is process-local", func(ctx SpecContext) {
		other := newFixture(ctx)
		other.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("started"))
		other.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := other.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := refsIn(res.Messages)[0].ID
		other.awaitTerminal(ctx, id)

		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(workOn("result", id)), scripted.Say("ok"))
		res, err = f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[0].Content).To(Equal(notFound))
	}, within)
})

var _ = Describe("detach", func() {
	It("answers {id, detached: true} and then not_found for every id action while the child keeps running", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("detach")),
			scripted.Calls(work("status"), work("result", "timeout", "0s"), work("cancel"), work("send", "message", "hurry"),
				work("detach"), scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := refsIn(res.Messages)[0].ID
		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)).To(Equal(map[string]any{"id": id, "detached": true}))
		for _, m := range results[1:6] {
			Expect(m.Content).To(Equal(notFound))
		}
		Expect(results[6].Content).To(Equal("[]"))
		reqs := f.model.RequestsFor(shared.CoordinatorID)
		Expect(reqs[2].Status).To(BeNil(), "detached Work leaves the status context")

		w := f.work(id)
		Expect(w.Detached).To(BeTrue())
		Expect(w.State).To(Equal(lifecycle.Running), "detach does not cancel")
		child.Release()
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed), "the child runs to its end")
	}, within)

	It("answers result after detach with not_found, even once the detached child has completed", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("detach")),
			scripted.Calls(work("result")),
			scripted.Say("ok"))
		exact := findings("DETACHED-OUTPUT")
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[1].Content).To(Equal(notFound))
		for _, req := range f.model.RequestsFor(shared.CoordinatorID) {
			Expect(snapshot(req)).NotTo(ContainSubstring("DETACHED-OUTPUT"))
		}
	}, within)
})

var _ = Describe("result", func() {
	It("returns the exact child output once the Work has completed", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		exact := findings("Anthocyanins")
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		f.awaitTerminal(ctx, f.awaitRef(ctx, 1).ID)
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[0].Content).To(Equal(string(exact)))
		Expect(f.timersPending(1)).To(BeFalse(), "a completed result does not wait")
	}, within)

	It("waits within the timeout for unfinished Work and returns its exact output when it completes", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		exact := findings("Anthocyanins")
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result", "timeout", "20s")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		f.clock.Advance(19 * time.Second)
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[0].Content).To(Equal(string(exact)))
		Expect(f.timersPending(1)).To(BeFalse(), "the wait's timer is stopped")
	}, within)

	DescribeTable("returns the status projection when nothing arrives within the wait, which is capped at 30 seconds and is 30 seconds when omitted",
		func(ctx SpecContext, timeout any, wait time.Duration) {
			f := newFixture(ctx)
			child := f.model.hold(shared.ResearchID, 1)
			call := work("result")
			if timeout != nil {
				call = work("result", "timeout", timeout)
			}
			f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(call), scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("NOT-YET")))

			r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			child.Arrived(ctx)
			f.waitForTimers(ctx, 1)
			f.clock.Advance(wait - time.Millisecond)
			Expect(f.timersPending(1)).To(BeTrue(), "still waiting 1ms before %s", wait)
			f.clock.Advance(time.Millisecond)
			res, err := r.wait(ctx)
			Expect(err).NotTo(HaveOccurred())

			got := obj(toolResults(res.Messages, "work")[0].Content)
			Expect(got["state"]).To(Equal("running"))
			Expect(got["resultAvailable"]).To(Equal(false))
			Expect(got["work"].(map[string]any)["id"]).To(Equal(f.awaitRef(ctx, 1).ID))
			Expect(toolResults(res.Messages, "work")[0].Content).NotTo(ContainSubstring("NOT-YET"))
			child.Release()
		},
		Entry("250ms", "250ms", 250*time.Millisecond, within),
		Entry("5s", "5s", 5*time.Second, within),
		Entry("5 s, with a space before the unit", "5 s", 5*time.Second, within),
		Entry("1 m is capped", "1 m", 30*time.Second, within),
		Entry("1m is capped", "1m", 30*time.Second, within),
		Entry("2h is capped", "2h", 30*time.Second, within),
		Entry("30s, exactly the cap", "30s", 30*time.Second, within),
		Entry("30000ms, the cap in milliseconds", "30000ms", 30*time.Second, within),
		Entry("29999ms, a millisecond under the cap", "29999ms", 29999*time.Millisecond, within),
		Entry("31s is capped", "31s", 30*time.Second, within),
		Entry("1d is capped", "1d", 30*time.Second, within),
		Entry("omitted", nil, 30*time.Second, within),
	)

	It("returns the status projection at once for a zero timeout", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result", "timeout", "0s")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(obj(toolResults(res.Messages, "work")[0].Content)["state"]).To(Equal("running"))
		child.Release()
	}, within)

	DescribeTable("answers a negative or unparsable timeout with a model-facing error, and the run goes on",
		func(ctx SpecContext, timeout string) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result", "timeout", timeout)), scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("ok"))
			msg := toolResults(res.Messages, "work")[0]
			Expect(errorCode(msg)).To(Equal("invalid_arguments"))
			Expect(msg.Content).To(ContainSubstring("timeout"))
			Expect(f.timersPending(1)).To(BeFalse())
		},
		Entry("negative", "-5s", within),
		Entry("no unit", "5", within),
		Entry("unknown unit", "5 seconds", within),
		Entry("a word", "soon", within),
		Entry("empty", "", within),
		Entry("a fraction", "1.5s", within),
		Entry("a sum of segments", "1m30s", within),
		Entry("a sum that overflows", "1281023h1281023h1281023h", within),
		Entry("one segment that overflows", "106752d", within),
	)

	It("answers a failed child with its status, state failed, and never its error text", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Fail(errors.New("FAILURE-MARKER: the index is corrupt")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		msg := toolResults(res.Messages, "work")[0]
		Expect(msg.IsError).To(BeFalse())
		got := obj(msg.Content)
		Expect(got["state"]).To(Equal("failed"))
		Expect(got["resultAvailable"]).To(Equal(false))
		Expect(keysOf(got)).NotTo(ContainElement("error"))
		for _, req := range f.model.RequestsFor(shared.CoordinatorID) {
			Expect(snapshot(req)).NotTo(ContainSubstring("FAILURE-MARKER"))
		}
	}, within)

	DescribeTable("fails Work whose child panics, answering result with its status, never the panic text, while the owner's run goes on",
		func(ctx SpecContext, tool string) {
			f := newFixture(ctx)
			f.allowScriptFailures = true
			research := shared.ResearchAgent()
			research.Tools = core.Tools{"lookup": &core.Tool{Description: "Look a term up",
				Run: func(context.Context, core.ToolCall, any) (any, error) { panic("PANIC-MARKER: a nil map") }}}
			coordinator := shared.Coordinator(research)
			coordinator.Tools["index"] = core.BackgroundTool("indexer", &core.Tool{Description: "Index the corpus",
				Run: func(context.Context, core.ToolCall, any) (any, error) { panic("PANIC-MARKER: a nil map") }})
			call := bg(shared.Question)
			if tool == "index" {
				call = scripted.Use("index", map[string]any{"run_in_background": true})
			}
			f.model.Script(shared.ResearchID, scripted.Calls(scripted.Use("lookup", map[string]any{})))
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(call),
				scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf(tool)})),
				scripted.Say("ok"))

			res, err := f.run(coordinator, shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("ok"))
			msg := toolResults(res.Messages, "work")[0]
			Expect(msg.IsError).To(BeFalse())
			Expect(obj(msg.Content)["state"]).To(Equal("failed"))
			for _, req := range f.model.RequestsFor(shared.CoordinatorID) {
				Expect(snapshot(req)).NotTo(ContainSubstring("PANIC-MARKER"))
			}
		},
		Entry("a background tool", "index", within),
		Entry("a background child agent", "research", within),
	)

	It("stops waiting when the tool call is aborted, and the aborted run's Work is cancelled with it", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result")))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		runCtx, abort := context.WithCancel(ctx)
		defer abort()
		r := f.start(runCtx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		abort()
		_, err := r.wait(ctx)
		Expect(err).To(MatchError(context.Canceled))
		Expect(f.timersPending(1)).To(BeFalse(), "the wait ended and its timer was stopped")
		id := f.awaitRef(ctx, 1).ID
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Cancelled), "a cancelled run takes its Work with it")
	}, within)
})

// withoutMarkers fails if any of the texts appear in s.
func withoutMarkers(s string, markers ...string) {
	for _, m := range markers {
		ExpectWithOffset(1, strings.Contains(s, m)).To(BeFalse(), "%q leaked into %s", m, s)
	}
}

var _ = Describe("result on Work that does not complete", func() {
	It("answers cancelled Work with its status at once, state cancelled, without waiting and without a result", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		blocker := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("result")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(f.timersPending(1)).To(BeFalse(), "a result on ended Work does not wait")
		msg := toolResults(res.Messages, "work")[1]
		Expect(msg.IsError).To(BeFalse())
		got := obj(msg.Content)
		Expect(got["work"].(map[string]any)["id"]).To(Equal(refsIn(res.Messages)[1].ID))
		Expect(got["state"]).To(Equal("cancelled"))
		Expect(got["resultAvailable"]).To(Equal(false))
		Expect(got).To(HaveKey("finishedAt"))
		Expect(f.work(refsIn(res.Messages)[1].ID).Rejoined).To(BeFalse(), "a status is no rejoin")
		blocker.Release()
	}, within)

	It("stops waiting as soon as the Work fails and answers its failed status, before the timeout and never with its error text", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result", "timeout", "20s")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Fail(errors.New("FAILURE-MARKER: upstream 502")))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		f.clock.Advance(5 * time.Second)
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.timersPending(1)).To(BeFalse(), "the wait's timer is stopped")
		msg := toolResults(res.Messages, "work")[0]
		Expect(msg.IsError).To(BeFalse())
		Expect(msg.Content).NotTo(ContainSubstring("FAILURE-MARKER"))
		got := obj(msg.Content)
		Expect(got["state"]).To(Equal("failed"))
		Expect(got["resultAvailable"]).To(Equal(false))
		Expect(rfc3339(got["finishedAt"])).To(BeTemporally("==", epoch.Add(5*time.Second)), "answered when it failed, 15 s before the timeout")
	}, within)

	It("waits on cancel-requested Work until its child stops, then answers its status, state cancelled", func(ctx SpecContext) {
		f := newFixture(ctx)
		var lookups atomic.Int32
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("cancel")),
			scripted.Calls(work("result", "timeout", "20s")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Calls(scripted.Use("lookup", map[string]any{})), scripted.Final(findings("NOT-REACHED")))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Release()
		f.waitForTimers(ctx, 1)
		f.clock.Advance(2 * time.Second)
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)["state"]).To(Equal("cancel-requested"))
		got := obj(results[1].Content)
		Expect(got["state"]).To(Equal("cancelled"))
		Expect(got["resultAvailable"]).To(Equal(false))
		Expect(rfc3339(got["finishedAt"])).To(BeTemporally("==", epoch.Add(2*time.Second)))
		Expect(lookups.Load()).To(BeZero())
		Expect(f.timersPending(1)).To(BeFalse())
	}, within)

	It("answers queued Work that does not start within the wait with its status, state queued", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		blocker := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Calls(work("result", "timeout", "3s")),
			scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, quickFindings)

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		blocker.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		f.clock.Advance(3 * time.Second)
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		got := obj(toolResults(res.Messages, "work")[0].Content)
		Expect(got["work"].(map[string]any)["id"]).To(Equal(refsIn(res.Messages)[1].ID))
		Expect(got["state"]).To(Equal("queued"))
		Expect(got).NotTo(HaveKey("startedAt"))
		Expect(got).NotTo(HaveKey("finishedAt"))
		blocker.Release()
	}, within)

	It("returns the exact output again on a second result: rejoining does not use the result up", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		exact := findings("Twice")
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result")), scripted.Calls(work("result", "timeout", "0s")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		f.awaitTerminal(ctx, id)
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "work")
		Expect(results[0].Content).To(Equal(string(exact)))
		Expect(results[1].Content).To(Equal(string(exact)))
		Expect(f.work(id).Rejoined).To(BeTrue())
	}, within)
})

var _ = Describe("detach at every state", func() {
	It("detaches completed Work as it does running Work: {id, detached: true}, then not_found, and it leaves the status block", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("detach")),
			scripted.Calls(work("result"), work("status"), scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("DETACHED-OUTPUT")))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		Expect(f.awaitTerminal(ctx, id)).To(Equal(lifecycle.Completed))
		parked.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)).To(Equal(map[string]any{"id": id, "detached": true}))
		Expect(results[1].Content).To(Equal(notFound))
		Expect(results[2].Content).To(Equal(notFound))
		Expect(results[3].Content).To(Equal("[]"))
		reqs := f.model.RequestsFor(shared.CoordinatorID)
		Expect(reqs[1].Status).NotTo(BeNil())
		Expect(reqs[2].Status).To(BeNil(), "detached Work leaves the status context")
		Expect(reqs[3].Status).To(BeNil())
		Expect(f.work(id).Rejoined).To(BeFalse())
	}, within)

	It("detaches queued Work without cancelling it: it starts when a slot frees and runs to its end", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		blocker := f.model.holdWhen(asked("blocker"), false)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Calls(work("detach")),
			scripted.Calls(work("status")),
			scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, quickFindings)

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		target := refsIn(res.Messages)[1].ID
		results := toolResults(res.Messages, "work")
		Expect(obj(results[0].Content)).To(Equal(map[string]any{"id": target, "detached": true}))
		Expect(results[1].Content).To(Equal(notFound))
		Expect(f.work(target).State).To(Equal(lifecycle.Queued), "detach does not cancel")
		blocker.Release()
		Expect(f.awaitTerminal(ctx, target)).To(Equal(lifecycle.Completed))
		Expect(f.events.transitions(target)).To(Equal([]lifecycle.State{lifecycle.Queued, lifecycle.Running, lifecycle.Completed}))
	}, within)
})

var _ = Describe("detach while a result waits", func() {
	It("answers a result that was waiting when its Work was detached with not_found, never the output that arrives later", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result", "timeout", "20s")), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("DETACHED-OUTPUT")))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		id := f.awaitRef(ctx, 1).ID
		out, err := f.rt.WorkAction(ctx, f.work(id).Owner, 2, "injected-detach", core.WorkInput{Action: "detach", ID: &id})
		Expect(err).NotTo(HaveOccurred())
		Expect(obj(out)).To(Equal(map[string]any{"id": id, "detached": true}))
		child.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolResults(res.Messages, "work")[0].Content).To(Equal(notFound))
		Expect(f.work(id).State).To(Equal(lifecycle.Completed))
		Expect(f.work(id).Rejoined).To(BeFalse())
		for _, req := range f.model.RequestsFor(shared.CoordinatorID) {
			Expect(snapshot(req)).NotTo(ContainSubstring("DETACHED-OUTPUT"))
		}
	}, within)
})
