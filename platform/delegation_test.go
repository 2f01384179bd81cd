package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/scripted"
)

type delegated struct {
	Results []platform.DelegationResult `json:"results"`
}

func delegationResults(info platform.SessionInfo) delegated {
	out, ok := toolResult(info, "delegate_task")
	ExpectWithOffset(1, ok).To(BeTrue(), out)
	var d delegated
	ExpectWithOffset(1, json.Unmarshal([]byte(out), &d)).To(Succeed())
	return d
}

var _ = Describe("Delegation (delegate_task)", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("blocks the parent and returns the child's final response as the tool result", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "summarise the paper", "agent": "researcher"})),
			scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
				return &core.Response{Text: "final: " + req.Messages[len(req.Messages)-1].Content}, nil
			}})
		e.model.Script("researcher", scripted.Turn{Text: "it proves P != NP", Latency: 3 * time.Minute})
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()
		// Still blocked: the parent's turn has not ended.
		Expect(ofType(e.p.Events(root), platform.EventTurnEnd)).To(BeEmpty())
		Expect(e.model.RequestsFor("coordinator")).To(HaveLen(1))

		e.runFor(5 * time.Minute)
		d := delegationResults(e.info(root))
		Expect(d.Results).To(HaveLen(1))
		Expect(d.Results[0].Status).To(Equal("completed"))
		Expect(d.Results[0].Response).To(Equal("it proves P != NP"))
		ends := ofType(e.p.Events(root), platform.EventTurnEnd)
		Expect(ends).To(HaveLen(1))
		Expect(ends[0].Time).To(Equal(epoch.Add(3 * time.Minute)))
		Expect(ends[0].Text).To(ContainSubstring("it proves P != NP"))
	})

	It("goals=[...] fans out in parallel and waits for every child", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"a", "b", "c"}, "agent": "researcher"})),
			say("all three done"))
		e.model.Script("researcher",
			scripted.Turn{Text: "A", Latency: 10 * time.Minute},
			scripted.Turn{Text: "B", Latency: 20 * time.Minute},
			scripted.Turn{Text: "C", Latency: 5 * time.Minute})
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		d := delegationResults(e.info(root))
		Expect(d.Results).To(HaveLen(3))
		var got []string
		for _, r := range d.Results {
			Expect(r.Status).To(Equal("completed"))
			got = append(got, r.Goal+"="+r.Response)
		}
		Expect(got).To(Equal([]string{"a=A", "b=B", "c=C"}))
		// In parallel: the slowest child (20m) bounds the wait, not the sum.
		Expect(ofType(e.p.Events(root), platform.EventTurnEnd)[0].Time).To(Equal(epoch.Add(20 * time.Minute)))
		tree, _ := e.p.Tree(root)
		Expect(tree.Children).To(HaveLen(3))
	})

	It("emits delegation.start, delegation.complete and delegation.failed on the parent's log", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"works", "breaks"}, "agent": "researcher"})),
			say("one of two"))
		e.model.Script("researcher",
			scripted.Turn{Text: "fine", Latency: time.Minute},
			scripted.Turn{Err: errors.New("model overloaded"), Latency: 2 * time.Minute})
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		var deleg []platform.Event
		for _, ev := range e.p.Events(root) {
			switch ev.Type {
			case platform.EventDelegationStart, platform.EventDelegationComplete, platform.EventDelegationFailed:
				deleg = append(deleg, ev)
			}
		}
		Expect(types(deleg)).To(Equal([]platform.EventType{
			platform.EventDelegationStart, platform.EventDelegationStart,
			platform.EventDelegationComplete, platform.EventDelegationFailed}))
		Expect(deleg[0].Goal).To(Equal("works"))
		Expect(deleg[2].Text).To(Equal("fine"))
		Expect(deleg[3].Goal).To(Equal("breaks"))
		Expect(deleg[3].Status).To(Equal("failed"))
		Expect(deleg[3].Error).To(ContainSubstring("model overloaded"))
		d := delegationResults(e.info(root))
		Expect(d.Results[1].Status).To(Equal("failed"))
	})

	It("the parent waits up to a 60-minute ceiling, then the unfinished child fails with timeout and is interrupted", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"quick", "endless"}, "agent": "researcher"})),
			say("partial"))
		e.model.Script("researcher",
			scripted.Turn{Text: "quick answer", Latency: time.Minute},
			scripted.Turn{Text: "too late", Latency: 5 * time.Hour})
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(6 * time.Hour)

		d := delegationResults(e.info(root))
		Expect(d.Results[0].Status).To(Equal("completed"))
		Expect(d.Results[1].Status).To(Equal("timeout"))
		Expect(d.Results[1].Response).To(BeEmpty())
		Expect(ofType(e.p.Events(root), platform.EventTurnEnd)[0].Time).To(Equal(epoch.Add(60 * time.Minute)))
		failed := ofType(e.p.Events(root), platform.EventDelegationFailed)
		Expect(failed).To(HaveLen(1))
		Expect(failed[0].Status).To(Equal("timeout"))
		slow := e.info(d.Results[1].SessionID)
		Expect(slow.State).To(Equal(platform.StateStopped))
		Expect(ofType(e.p.Events(slow.ID), platform.EventTurnEnd)[0].Status).To(Equal("interrupted"))
		// No second outcome for the interrupted child.
		Expect(ofType(e.p.Events(root), platform.EventDelegationComplete)).To(HaveLen(1))
	})

	It("emits a one-shot delegation.stale when a child idles past the threshold", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"idle", "busy"}, "agent": "researcher"})),
			say("done"))
		// "idle" sits 45 minutes in one model call; "busy" takes six steps
		// of 4 minutes each, never idle for 10.
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "woke up", Latency: 45 * time.Minute})
		busy := []scripted.Turn{}
		for range 5 {
			busy = append(busy, scripted.Turn{Calls: []scripted.Call{use("list_files", map[string]any{})}, Latency: 4 * time.Minute})
		}
		busy = append(busy, scripted.Turn{Text: "busy done", Latency: 4 * time.Minute})
		e.model.ScriptRun("researcher", 2, busy...)
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(2 * time.Hour)

		stale := ofType(e.p.Events(root), platform.EventDelegationStale)
		Expect(stale).To(HaveLen(1), "one-shot, and only for the idle child")
		Expect(stale[0].Goal).To(Equal("idle"))
		Expect(stale[0].Time).To(Equal(epoch.Add(platform.DefaultStaleThreshold)))
		d := delegationResults(e.info(root))
		Expect(d.Results[0].Response).To(Equal("woke up"))
		Expect(d.Results[1].Response).To(Equal("busy done"))
	})

	It("caps depth at 2 by default: a leaf child cannot delegate, an orchestrator child can, its children cannot", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "lead", "agent": "researcher", "role": "orchestrator"}),
				use("delegate_task", map[string]any{"goal": "leaf work", "agent": "writer"})),
			say("done"))
		e.model.Script("researcher",
			calls(use("delegate_task", map[string]any{"goal": "sub", "agent": "scout", "role": "orchestrator"})),
			say("led"))
		e.model.Script("writer", say("leaf done"))
		e.model.Script("scout", say("scouted"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		Expect(toolNames(e.model.RequestsFor("coordinator")[0])).To(ContainElement("delegate_task"))
		Expect(toolNames(e.model.RequestsFor("researcher")[0])).To(ContainElement("delegate_task"), "orchestrator at depth 1")
		Expect(toolNames(e.model.RequestsFor("writer")[0])).NotTo(ContainElement("delegate_task"), "leaf at depth 1")
		Expect(toolNames(e.model.RequestsFor("scout")[0])).NotTo(ContainElement("delegate_task"), "depth 2 is the cap")

		tree, _ := e.p.Tree(root)
		Expect(tree.Children).To(HaveLen(2))
		Expect(tree.Children[0].Role).To(Equal(platform.RoleOrchestrator))
		Expect(tree.Children[0].Children).To(HaveLen(1))
		Expect(tree.Children[0].Children[0].Depth).To(Equal(2))
		Expect(tree.Children[1].Role).To(Equal(platform.RoleLeaf))
	})

	It("a delegated child inherits excluded_tools and always loses ask_user_question and the worker tools, whatever the allowlist", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "g", "agent": "researcher"})), say("ok"))
		e.model.Script("researcher", say("done"))
		root := e.root("coordinator", func(o *platform.SessionOptions) {
			o.ExcludedTools = []string{"write_file"}
			o.AllowedTools = []string{"ask_user_question", "spawn_worker", "send_worker_message", "stop_worker",
				"delegate_task", "read_file", "write_file", "create_artifact"}
		})
		e.send(root, "go")
		e.settle()

		parent := toolNames(e.model.RequestsFor("coordinator")[0])
		Expect(parent).To(ConsistOf("ask_user_question", "create_artifact", "delegate_task", "read_file",
			"send_worker_message", "spawn_worker", "stop_worker"))
		child := toolNames(e.model.RequestsFor("researcher")[0])
		Expect(child).To(ConsistOf("create_artifact", "read_file"))
	})

	It("a delegated child inherits the parent's excluded authored tools too", func() {
		noop := &core.Tool{Description: "noop", Run: func(context.Context, core.ToolCall, any) (any, error) { return "ok", nil }}
		e.close()
		e = newEnv(func(o *platform.Options) {
			o.Agents["coordinator"] = &core.Agent{ID: "coordinator", Tools: core.Tools{"search": noop, "fetch": noop}}
			o.Agents["researcher"] = &core.Agent{ID: "researcher", Tools: core.Tools{"search": noop, "fetch": noop}}
		})
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "g", "agent": "researcher"})), say("ok"))
		e.model.Script("researcher", say("done"))
		root := e.root("coordinator", func(o *platform.SessionOptions) { o.ExcludedTools = []string{"search"} })
		e.send(root, "go")
		e.settle()
		Expect(toolNames(e.model.RequestsFor("coordinator")[0])).To(ContainElement("fetch"))
		Expect(toolNames(e.model.RequestsFor("coordinator")[0])).NotTo(ContainElement("search"))
		Expect(toolNames(e.model.RequestsFor("researcher")[0])).To(ContainElement("fetch"))
		Expect(toolNames(e.model.RequestsFor("researcher")[0])).NotTo(ContainElement("search"))
	})

	It("an authored tool with a platform tool's name is refused when the session is made", func() {
		noop := &core.Tool{Run: func(context.Context, core.ToolCall, any) (any, error) { return "ok", nil }}
		e.close()
		e = newEnv(func(o *platform.Options) {
			o.Agents["clash"] = &core.Agent{ID: "clash", Tools: core.Tools{"spawn_worker": noop}}
		})
		_, err := e.p.NewSession(platform.SessionOptions{Agent: "clash"})
		Expect(err).To(MatchError(platform.ErrToolCollision))
	})

	It("artifacts a child creates are propagated up to the parent's thread", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "chart it", "agent": "researcher", "role": "orchestrator"})),
			say("see the chart"))
		e.model.Script("researcher",
			calls(use("create_artifact", map[string]any{"name": "chart.svg", "content": "<svg/>"}),
				use("delegate_task", map[string]any{"goal": "table it", "agent": "scout"})),
			say("charted"))
		e.model.Script("scout", calls(use("create_artifact", map[string]any{"name": "table.csv", "content": "a,b"})), say("tabled"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		names := func(as []platform.Artifact) []string {
			var out []string
			for _, a := range as {
				out = append(out, a.Name)
			}
			return out
		}
		Expect(names(e.p.Artifacts(root))).To(Equal([]string{"chart.svg", "table.csv"}))
		prop := ofType(e.p.Events(root), platform.EventArtifact)
		Expect(prop).To(HaveLen(2))
		Expect(prop[0].Child).NotTo(BeEmpty())
	})
})

var _ = Describe("The shared workspace", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("every child of a tree reads and writes the root's workspace; no child prefix is allocated", func() {
		e.model.Script("coordinator",
			calls(use("write_file", map[string]any{"path": "/workspace/brief.md", "content": "the brief"}),
				use("spawn_worker", map[string]any{"task": "w", "agent": "writer"}),
				use("delegate_task", map[string]any{"goal": "d", "agent": "researcher"})),
			say("ok"), say("ok again"))
		e.model.Script("researcher", calls(use("read_file", map[string]any{"path": "brief.md"}),
			use("write_file", map[string]any{"path": "notes/research.md", "content": "r"})), say("done"))
		e.model.Script("writer", calls(use("write_file", map[string]any{"path": "draft.md", "content": "w"})), say("written"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		d := delegationResults(e.info(root))
		brief, ok := toolResult(e.info(d.Results[0].SessionID), "read_file")
		Expect(ok).To(BeTrue())
		Expect(brief).To(Equal("the brief"))
		metas, err := e.store.ListFiles(nil, "sessions/")
		Expect(err).NotTo(HaveOccurred())
		var keys []string
		for _, m := range metas {
			keys = append(keys, m.Key)
		}
		Expect(keys).To(ConsistOf(
			platform.WorkspacePrefix(root)+"brief.md",
			platform.WorkspacePrefix(root)+"draft.md",
			platform.WorkspacePrefix(root)+"notes/research.md"))
	})

	It("records when siblings overwrite each other's files, as a finding and not an error", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"first", "second"}, "agent": "researcher"})),
			say("merged"))
		e.model.ScriptRun("researcher", 1,
			scripted.Turn{Calls: []scripted.Call{use("write_file", map[string]any{"path": "out.md", "content": "from first"})}},
			say("first done"))
		e.model.ScriptRun("researcher", 2,
			scripted.Turn{Calls: []scripted.Call{use("write_file", map[string]any{"path": "out.md", "content": "from second"})}, Latency: time.Minute},
			say("second done"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		fs := e.p.Findings()
		Expect(fs).To(HaveLen(1))
		Expect(fs[0].Path).To(Equal("out.md"))
		Expect(fs[0].Siblings).To(BeTrue())
		Expect(fs[0].Writer).NotTo(Equal(fs[0].Previous))
		ow := ofType(e.p.Events(root), platform.EventWorkspaceOverwrite)
		Expect(ow).To(HaveLen(1))
		content, err := e.p.ReadFile(root, "out.md")
		Expect(err).NotTo(HaveOccurred())
		Expect(content).To(Equal("from second"))
		for _, r := range delegationResults(e.info(root)).Results {
			Expect(r.Status).To(Equal("completed"))
		}
	})
})

var _ = Describe("A delegated child's activity, for the stale check", func() {
	// slowAgent is agent id, whose tool "wait" takes eight minutes of
	// virtual time, and whose own middleware, when after is set, takes
	// that long after each provider step returns (on *e's clock: the env
	// is made with it).
	slowAgent := func(e **env, id string, after time.Duration) func(*platform.Options) {
		return func(o *platform.Options) {
			a := agent(id)
			a.Tools = core.Tools{"wait": &core.Tool{Description: "waits eight minutes",
				Run: func(context.Context, core.ToolCall, any) (any, error) {
					(*e).sim.Clock().Sleep(8 * time.Minute)
					return "waited", nil
				}}}
			if after > 0 {
				a.Use = []core.Middleware{func(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
					resp, err := next(ctx, req)
					(*e).sim.Clock().Sleep(after)
					return resp, err
				}}
			}
			o.Agents[id] = a
		}
	}
	run := func(e *env) []platform.Event {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "dig", "agent": "digger"})),
			say("done"))
		// A 5-minute model call, then the 8-minute tool, then the answer.
		e.model.Script("digger", scripted.Turn{Calls: []scripted.Call{use("wait", map[string]any{})}, Latency: 5 * time.Minute},
			say("dug"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)
		Expect(delegationResults(e.info(root)).Results[0].Response).To(Equal("dug"))
		return ofType(e.p.Events(root), platform.EventDelegationStale)
	}

	It("lasts until a provider step returns: a 5-minute step and an 8-minute tool are never idle for 10", func() {
		var e *env
		e = newEnv(func(o *platform.Options) { slowAgent(&e, "digger", 0)(o) })
		Expect(run(e)).To(BeEmpty(), "idle 5 minutes at the first check, at +10m")
	})

	It("lasts, for an agent with middleware of its own, until that middleware returns, not the provider", func() {
		var e *env
		// The middleware takes 12 minutes after the 5-minute step: the
		// step's activity began at +0 and ends at +17m, so the check at
		// +10m finds the child idle since +0.
		e = newEnv(func(o *platform.Options) { slowAgent(&e, "digger", 12*time.Minute)(o) })
		stale := run(e)
		Expect(stale).To(HaveLen(1))
		Expect(stale[0].Time).To(Equal(epoch.Add(platform.DefaultStaleThreshold)))
	})
})
