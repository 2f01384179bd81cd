package platform_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("Workers (spawn_worker)", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	// spawnOne scripts a coordinator that spawns one researcher worker and
	// ends its turn.
	spawnOne := func(task string) {
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": task, "agent": "researcher"})),
			say("Spawned; I will report back."))
	}

	It("spawn_worker returns a worker_id immediately without waiting for the worker", func() {
		spawnOne("survey the field")
		e.model.Script("researcher", scripted.Turn{Text: "three papers", Latency: 5 * time.Minute})
		e.model.Script("coordinator", say("The worker found three papers."))
		root := e.root("coordinator")
		e.send(root, "research this")
		e.settle()

		out, ok := toolResult(e.info(root), "spawn_worker")
		Expect(ok).To(BeTrue())
		wid := jsonOf(out)["worker_id"].(string)
		Expect(wid).NotTo(BeEmpty())
		// The parent's turn is over while the worker is still in its
		// five-minute model call.
		ends := ofType(e.p.Events(root), platform.EventTurnEnd)
		Expect(ends).To(HaveLen(1))
		Expect(ends[0].Time).To(Equal(epoch))
		Expect(e.info(wid).State).To(Equal(platform.StateRunning))

		e.runFor(10 * time.Minute)
		Expect(e.info(wid).State).To(Equal(platform.StateCompleted))
	})

	It("a worker is a full child session with its own event log, iteration budget and place in the tree", func() {
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "loop forever", "agent": "researcher"})),
			say("spawned"), say("noted the failure"))
		// The researcher keeps calling tools: it can only stop at its budget.
		for range 10 {
			e.model.Script("researcher", calls(use("list_files", map[string]any{})))
		}
		root := e.root("coordinator", func(o *platform.SessionOptions) { o.MaxIterations = 3 })
		e.send(root, "go")
		e.settle()

		tree, err := e.p.Tree(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(tree.Children).To(HaveLen(1))
		wid := tree.Children[0].ID
		Expect(tree.Children[0].Kind).To(Equal(platform.KindWorker))

		wlog := e.p.Events(wid)
		Expect(types(wlog)).To(ContainElements(platform.EventSessionCreated, platform.EventTurnStart, platform.EventTurnEnd))
		for _, ev := range wlog {
			Expect(ev.Session).To(Equal(wid))
		}
		// Its own budget: three provider steps, then the step-budget error.
		Expect(e.model.RequestsFor("researcher")).To(HaveLen(3))
		end := ofType(wlog, platform.EventTurnEnd)[0]
		Expect(end.Status).To(Equal("error"))
		Expect(end.Error).To(ContainSubstring("step budget"))
		// The parent's log has the outcome, not the worker's steps.
		Expect(ofType(e.p.Events(root), platform.EventTurnStart)).To(HaveLen(2))
	})

	It("on finish a worker.complete event lands in the parent's log and the parent is re-enqueued and wakes", func() {
		spawnOne("find the answer")
		e.model.Script("researcher", say("the answer is 42"))
		var woke *core.Request
		e.model.Script("coordinator", scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			woke = req
			return &core.Response{Text: "Summarised: 42."}, nil
		}})
		root := e.root("coordinator")
		e.send(root, "ask a worker")
		e.settle()

		done := ofType(e.p.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(1))
		Expect(done[0].Status).To(Equal("completed"))
		Expect(done[0].Text).To(Equal("the answer is 42"))
		Expect(done[0].Child).To(Equal(e.info(root).Children[0]))

		Expect(woke).NotTo(BeNil(), "the parent never woke")
		notice := jsonOf(lastUser(woke))
		Expect(notice).To(HaveKeyWithValue("event", "worker.complete"))
		Expect(notice).To(HaveKeyWithValue("worker_id", done[0].Child))
		Expect(notice).To(HaveKeyWithValue("result", "the answer is 42"))
		Expect(e.info(root).Turns).To(Equal(2))
	})

	It("a worker gets a single attempt: a failed worker reports failed and never runs again", func() {
		spawnOne("try once")
		e.model.Script("researcher", scripted.Fail(errors.New("provider unavailable")))
		e.model.Script("coordinator", say("the worker failed"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		done := ofType(e.p.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(1))
		Expect(done[0].Status).To(Equal("failed"))
		Expect(e.model.RequestsFor("researcher")).To(HaveLen(1))
		Expect(e.info(done[0].Child).State).To(Equal(platform.StateFailed))
	})

	It("send_worker_message wakes a worker even after it completed", func() {
		// Woken by worker.complete, the coordinator steers the finished
		// worker, using the worker_id the notice carried.
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "draft", "agent": "researcher"})),
			say("spawned"),
			scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
				n := jsonOf(lastUser(req))
				return &core.Response{ToolCalls: []core.ToolCall{{ID: "steer", Name: "send_worker_message",
					Arguments: `{"worker_id":"` + n["worker_id"].(string) + `","message":"now add citations"}`}}}, nil
			}},
			say("steered"),
			say("got v2"))
		e.model.Script("researcher", say("draft v1"), say("draft v2 with citations"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		wid := e.info(root).Children[0]
		steer, ok := toolResult(e.info(root), "send_worker_message")
		Expect(ok).To(BeTrue(), steer)
		Expect(jsonOf(steer)).To(HaveKeyWithValue("woke", true))
		reqs := e.model.RequestsFor("researcher")
		Expect(reqs).To(HaveLen(2))
		Expect(lastUser(reqs[1])).To(Equal("now add citations"))
		// The worker continues its own conversation.
		Expect(reqs[1].Messages[0].Content).To(Equal("draft"))
		done := ofType(e.p.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(2))
		Expect(done[1].Text).To(Equal("draft v2 with citations"))
		Expect(e.info(wid).Turns).To(Equal(2))
		Expect(ofType(e.p.Events(wid), platform.EventUserMessage)).To(HaveLen(2))
		Expect(e.info(root).Turns).To(Equal(3))
	})

	It("stop_worker interrupts a running worker", func() {
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "slow job", "agent": "researcher"})),
			say("spawned"))
		e.model.Script("researcher", scripted.Turn{Text: "never", Latency: time.Hour})
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Minute)
		wid := e.info(root).Children[0]
		e.model.Script("coordinator",
			calls(use("stop_worker", map[string]any{"worker_id": wid})),
			say("stopped it"))
		e.send(root, "stop it")
		e.runFor(2 * time.Hour)

		out, ok := toolResult(e.info(root), "stop_worker")
		Expect(ok).To(BeTrue(), out)
		Expect(jsonOf(out)).To(HaveKeyWithValue("interrupted", true))
		Expect(e.info(wid).State).To(Equal(platform.StateStopped))
		end := ofType(e.p.Events(wid), platform.EventTurnEnd)
		Expect(end).To(HaveLen(1))
		Expect(end[0].Status).To(Equal("interrupted"))
		Expect(end[0].Time).To(Equal(epoch.Add(time.Minute)))
		Expect(ofType(e.p.Events(root), platform.EventWorkerStopped)).To(HaveLen(1))
		Expect(ofType(e.p.Events(root), platform.EventWorkerComplete)).To(BeEmpty())
	})

	It("workers cannot spawn workers: the coordinator tool family is stripped from a worker's toolset", func() {
		spawnOne("look around")
		e.model.Script("researcher", calls(use("spawn_worker", map[string]any{"task": "grand-worker"})), say("done"))
		e.model.Script("coordinator", say("ok"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		parentTools := toolNames(e.model.RequestsFor("coordinator")[0])
		Expect(parentTools).To(ContainElements("spawn_worker", "send_worker_message", "stop_worker"))
		wreq := e.model.RequestsFor("researcher")[0]
		Expect(toolNames(wreq)).NotTo(ContainElements(ContainSubstring("worker_message"), Equal("spawn_worker"), Equal("stop_worker")))
		// A call to the stripped tool is an unknown tool; no grand-worker
		// session exists.
		wid := e.info(root).Children[0]
		out, ok := toolResult(e.info(wid), "spawn_worker")
		Expect(ok).To(BeFalse())
		Expect(out).To(ContainSubstring("unknown_tool"))
		Expect(e.info(wid).Children).To(BeEmpty())
	})

	It("only the spawning session can message or stop a worker", func() {
		spawnOne("mine")
		e.model.Script("researcher", say("done"))
		e.model.Script("coordinator", say("ok"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()
		wid := e.info(root).Children[0]

		e.model.Script("writer", calls(use("send_worker_message", map[string]any{"worker_id": wid, "message": "hijack"}),
			use("stop_worker", map[string]any{"worker_id": wid})), say("tried"))
		other := e.root("writer")
		e.send(other, "go")
		e.settle()
		for _, tool := range []string{"send_worker_message", "stop_worker"} {
			out, ok := toolResult(e.info(other), tool)
			Expect(ok).To(BeFalse(), tool)
			Expect(out).To(ContainSubstring("not_found"))
		}
		Expect(e.info(wid).State).To(Equal(platform.StateCompleted))
		Expect(e.info(wid).Turns).To(Equal(1))
	})
})

func toolNames(req *core.Request) []string {
	out := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		out[i] = t.Name
	}
	return out
}
