package platform_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/scripted"
)

// These specs are about a session's turns as core runs: one Work owner for
// all of them, messages delivered into a running turn, and call identity.
var _ = Describe("A session's turns", func() {
	var e *env

	It("share one Work owner: a later turn reads the result of Work an earlier turn started", func() {
		e = newEnv(func(o *platform.Options) {
			o.Agents["analyst"] = &core.Agent{ID: "analyst", Tools: core.Tools{"research": core.Backgroundable(agent("researcher"))}}
		})
		e.model.Script("analyst",
			calls(use("research", map[string]any{"run_in_background": true})),
			say("started"),
			calls(use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research")})),
			say("rejoined"))
		e.model.Script("researcher", scripted.Turn{Text: "the findings", Latency: time.Minute})
		root := e.root("analyst")
		e.send(root, "start research")
		e.runFor(time.Hour)
		e.send(root, "what did it find?")
		e.runFor(time.Hour)

		out, ok := toolResult(e.info(root), "work")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(Equal("the findings"))
		Expect(e.info(root).Turns).To(Equal(2))
	})

	It("deliver a worker.complete notice into the turn that is still running, at its next provider step", func() {
		e = newEnv()
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "quick look", "agent": "researcher"})),
			// The coordinator thinks for ten minutes; the worker finishes
			// meanwhile.
			scripted.Turn{Latency: 10 * time.Minute, Calls: []scripted.Call{use("list_files", map[string]any{})}},
			say("the worker saw two files"))
		e.model.Script("researcher", say("two files"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		reqs := e.model.RequestsFor("coordinator")
		Expect(reqs).To(HaveLen(3))
		notice := jsonOf(lastUser(reqs[2]))
		Expect(notice).To(HaveKeyWithValue("event", "worker.complete"))
		Expect(notice).To(HaveKeyWithValue("result", "two files"))
		// One turn: the notice did not wait for the turn to end.
		Expect(e.info(root).Turns).To(Equal(1))
		Expect(ofType(e.p.Events(root), platform.EventTurnEnd)[0].Time).To(Equal(epoch.Add(10 * time.Minute)))
	})

	It("act once per call identity: a replayed spawn_worker call returns the first receipt and starts no second worker", func() {
		e = newEnv()
		spawn := scripted.Call{ID: "call-spawn", Name: "spawn_worker", Args: map[string]any{"task": "survey", "agent": "researcher"}}
		clash := scripted.Call{ID: "call-spawn", Name: "spawn_worker", Args: map[string]any{"task": "something else", "agent": "researcher"}}
		e.model.Script("coordinator", scripted.Calls(spawn, spawn, clash), say("spawned"), say("done"))
		e.model.Script("researcher", say("surveyed"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		Expect(e.info(root).Children).To(HaveLen(1))
		Expect(ofType(e.p.Events(root), platform.EventWorkerSpawned)).To(HaveLen(1))
		var results []core.Message
		for _, m := range e.info(root).History {
			if m.Role == core.RoleTool && m.ToolName == "spawn_worker" {
				results = append(results, m)
			}
		}
		Expect(results).To(HaveLen(3))
		Expect(results[1].Content).To(Equal(results[0].Content))
		Expect(results[2].IsError).To(BeTrue())
		Expect(results[2].Content).To(ContainSubstring("conflict"))
	})
})

var _ = Describe("Root sessions", func() {
	It("a root reopened after a crash is the session a new one with the same options is: agent, user, channel and toolset", func() {
		e := newEnv()
		opts := platform.SessionOptions{Agent: "coordinator", User: "ada", Channel: "slack",
			ExcludedTools: []string{platform.ToolSpawnWorker}, AllowedTools: []string{platform.ToolSpawnWorker, platform.ToolSpawnTask, platform.ToolCronCreate}}
		fresh := e.root("coordinator", func(so *platform.SessionOptions) { *so = opts })
		want := e.info(fresh)
		e.crash("proc-2")
		Expect(e.p.RestoreSession(fresh, opts)).To(Succeed())
		got := e.info(fresh)
		Expect(got.Agent).To(Equal(want.Agent))
		Expect(got.User).To(Equal("ada"))
		Expect(got.Channel).To(Equal("slack"))
		Expect(got.Kind).To(Equal(platform.KindRoot))
		Expect(got.Root).To(Equal(fresh))
		Expect(want.Tools).To(Equal([]string{platform.ToolCronCreate, platform.ToolSpawnTask}))
		Expect(got.Tools).To(Equal(want.Tools))
	})

	It("only a root session is closed: CloseSession refuses a delegated child, which runs on and completes its delegation", func() {
		e := newEnv()
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "summarise the paper", "agent": "researcher"})),
			say("summarised"))
		e.model.Script("researcher", scripted.Turn{Text: "the summary", Latency: 3 * time.Minute})
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()
		children := e.info(root).Children
		Expect(children).To(HaveLen(1))
		child := children[0]

		err := e.p.CloseSession(child)
		Expect(err).To(MatchError("session " + child + " is a delegate session; only root sessions are closed"))
		Expect(e.info(child).State).To(Equal(platform.StateRunning), "the refused close left the child as it was")

		e.runFor(5 * time.Minute)
		Expect(e.info(child).State).To(Equal(platform.StateCompleted))
		d := delegationResults(e.info(root))
		Expect(d.Results).To(HaveLen(1))
		Expect(d.Results[0].Status).To(Equal("completed"))
		Expect(d.Results[0].Response).To(Equal("the summary"))
		Expect(e.info(root).Output).To(Equal("summarised"))

		Expect(e.p.CloseSession(root)).To(Succeed())
		Expect(e.info(root).State).To(Equal(platform.StateClosed))
		Expect(e.p.CloseSession("no-such-session")).To(MatchError(platform.ErrUnknownSession))
	})

	It("only a live root session takes user messages, /loop included: a closed root and a worker refuse it, and nothing is scheduled", func() {
		e := newEnv()
		e.model.Script("coordinator", calls(use("spawn_worker", map[string]any{"task": "look", "agent": "writer"})), say("spawned"), say("thanks"))
		e.model.Script("writer", say("found it"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()
		worker := e.info(root).Children[0]
		Expect(e.p.Send(worker, "hello")).To(MatchError(ContainSubstring("only root sessions take user messages")))
		Expect(e.p.Send(worker, "/loop 1h ping")).To(MatchError(ContainSubstring("only root sessions take user messages")))

		Expect(e.p.CloseSession(root)).To(Succeed())
		Expect(e.p.Send(root, "hello")).To(MatchError("session " + root + " is closed"))
		Expect(e.p.Send(root, "/loop 1h ping")).To(MatchError("session " + root + " is closed"))
		Expect(e.p.Send("no-such-session", "/loop 1h ping")).To(MatchError(platform.ErrUnknownSession))

		rows, err := e.p.Schedules("ada")
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(BeEmpty(), "a refused /loop scheduled nothing")
		e.runFor(3 * time.Hour)
		Expect(ofType(e.p.Events(root), platform.EventLoopResult)).To(BeEmpty())
	})
})

// These specs are about the context a turn's tools get: a turn's context
// is made only when something needs more of it than its session, and
// behaves as a context.WithCancelCause of the platform's would.
var _ = Describe("A turn's context", func() {
	// keeper is an agent whose tool "keep" runs during the turn: it hands
	// its context to during, and keeps it.
	keeper := func(kept *context.Context, during func(ctx context.Context)) func(*platform.Options) {
		return func(o *platform.Options) {
			a := agent("keeper")
			a.Tools = core.Tools{"keep": &core.Tool{Description: "keeps its context",
				Run: func(ctx context.Context, _ core.ToolCall, _ any) (any, error) {
					*kept = ctx
					if during != nil {
						during(ctx)
					}
					return "kept", nil
				}}}
			o.Agents["keeper"] = a
		}
	}

	It("is cancelled when the turn ends: a tool that kept it sees context.Canceled, as its cause too, and its Done closed", func() {
		var kept context.Context
		var during error
		e := newEnv(keeper(&kept, func(ctx context.Context) { during = ctx.Err() }))
		e.model.Script("keeper", calls(use("keep", map[string]any{})), say("done"))
		root := e.root("keeper")
		e.send(root, "go")
		e.runFor(time.Minute)

		Expect(during).NotTo(HaveOccurred(), "live while the turn runs")
		Expect(kept.Err()).To(MatchError(context.Canceled))
		Expect(context.Cause(kept)).To(MatchError(context.Canceled))
		Expect(kept.Done()).To(BeClosed())
	})

	// interrupted runs a root whose tool closes the root (CloseSession)
	// and reads, after that, its context's error and cause and the cause
	// of a context made below it: before the interrupt when madeBefore
	// (which asks for the turn context's Done), after it otherwise.
	interrupted := func(madeBefore bool) {
		var kept, below context.Context
		var errDuring, causeDuring, belowCause error
		var e *env
		var root string
		e = newEnv(keeper(&kept, func(ctx context.Context) {
			var stop context.CancelFunc
			if madeBefore {
				below, stop = context.WithCancel(ctx)
			}
			Expect(e.p.CloseSession(root)).To(Succeed())
			errDuring, causeDuring = ctx.Err(), context.Cause(ctx)
			if !madeBefore {
				below, stop = context.WithCancel(ctx)
			}
			defer stop()
			belowCause = context.Cause(below)
		}))
		e.model.Script("keeper", calls(use("keep", map[string]any{})), say("never"))
		root = e.root("keeper")
		e.send(root, "go")
		e.runFor(time.Minute)

		Expect(errDuring).To(MatchError(context.Canceled))
		Expect(causeDuring).To(MatchError(platform.ErrClosed))
		Expect(belowCause).To(MatchError(platform.ErrClosed))
		Expect(context.Cause(kept)).To(MatchError(platform.ErrClosed), "the first cause stays after the turn's end")
		end := ofType(e.p.Events(root), platform.EventTurnEnd)
		Expect(end).To(HaveLen(1))
		Expect(end[0].Status).To(Equal("interrupted"))
	}

	It("carries an interrupt's cause when nothing had asked for its Done: a root closed while its tool runs", func() {
		interrupted(false)
	})

	It("carries an interrupt's cause to a context made below it before: a root closed while its tool runs", func() {
		interrupted(true)
	})
})
