package platform_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("How results and progress are tracked", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("outcomes flow back as worker.*, delegation.* and task.* events on the parent's log, and to the observer in order", func() {
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "w", "agent": "writer"}),
				use("delegate_task", map[string]any{"goal": "d", "agent": "researcher"}),
				use("spawn_task", map[string]any{"prompt": "t", "agent": "scout"})),
			say("all started"), say("one"), say("two"))
		e.model.Script("writer", say("worker out"))
		e.model.Script("researcher", say("delegate out"))
		e.model.Script("scout", complete("task out", nil), say("."))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		log := e.p.Events(root)
		for _, want := range []platform.EventType{platform.EventWorkerSpawned, platform.EventWorkerComplete,
			platform.EventDelegationStart, platform.EventDelegationComplete, platform.EventTaskCreated,
			platform.EventTaskStarted} {
			Expect(ofType(log, want)).NotTo(BeEmpty(), string(want))
		}
		var byTask, byWorker int
		for _, ev := range ofType(log, platform.EventWorkerComplete) {
			if ev.Task != "" {
				byTask++
			} else {
				byWorker++
			}
		}
		Expect([]int{byWorker, byTask}).To(Equal([]int{1, 1}))
		// The observer saw every event of every log, in sequence order.
		all := e.p.AllEvents()
		Expect(e.seen).To(HaveLen(len(all)))
		for i := range all {
			Expect(e.seen[i].Seq).To(Equal(uint64(i + 1)))
		}
	})

	It("the live tree returns a session's descendant graph", func() {
		e.model.Script("coordinator",
			calls(use("spawn_worker", map[string]any{"task": "w", "agent": "writer"}),
				use("delegate_task", map[string]any{"goal": "lead", "agent": "researcher", "role": "orchestrator"})),
			say("ok"), say("ok"))
		e.model.Script("writer", scripted.Turn{Text: "slow", Latency: time.Hour})
		e.model.Script("researcher", calls(use("delegate_task", map[string]any{"goals": []string{"x", "y"}, "agent": "scout"})), say("led"))
		e.model.Script("scout", say("x done"), say("y done"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()

		tree, err := e.p.Tree(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(tree.ID).To(Equal(root))
		Expect(tree.Children).To(HaveLen(2))
		w, d := tree.Children[0], tree.Children[1]
		Expect(w.Kind).To(Equal(platform.KindWorker))
		Expect(w.State).To(Equal(platform.StateRunning), "the Running panel")
		Expect(d.Kind).To(Equal(platform.KindDelegate))
		Expect(d.Children).To(HaveLen(2))
		Expect(d.Children[0].Depth).To(Equal(2))
		sub, err := e.p.Tree(d.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(sub.Children).To(HaveLen(2))
		e.runFor(2 * time.Hour)
	})

	It("a fan-out shares a coordination board so siblings reuse each other's findings and claims", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goals": []string{"first", "second"}, "agent": "researcher"})), say("ok"))
		e.model.ScriptRun("researcher", 1,
			calls(use("board_claim", map[string]any{"key": "module-a"}), use("board_note", map[string]any{"text": "module-a uses v2 API"})),
			say("first"))
		e.model.ScriptRun("researcher", 2,
			scripted.Turn{Calls: []scripted.Call{use("board_read", map[string]any{}), use("board_claim", map[string]any{"key": "module-a"})}, Latency: time.Minute},
			say("second"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		d := delegationResults(e.info(root))
		second := e.info(d.Results[1].SessionID)
		read, _ := toolResult(second, "board_read")
		Expect(read).To(ContainSubstring("module-a uses v2 API"))
		claim, _ := toolResult(second, "board_claim")
		Expect(jsonOf(claim)).To(HaveKeyWithValue("claimed", false))
		Expect(jsonOf(claim)).To(HaveKeyWithValue("holder", d.Results[0].SessionID))
	})
})

var _ = Describe("Platform maintenance jobs", func() {
	var e *env
	BeforeEach(func() {
		e = newEnv(func(o *platform.Options) { o.NoSweepers = false })
	})

	It("board maintenance (~5 min) expires lapsed claims and purges old or orphaned notes", func() {
		e.model.Script("coordinator", calls(use("board_claim", map[string]any{"key": "k", "ttl": "7m"}),
			use("board_note", map[string]any{"text": "n1"})), say("ok"))
		live := e.root("coordinator")
		e.send(live, "go")
		e.model.Script("writer", calls(use("board_note", map[string]any{"text": "orphan"})), say("ok"))
		gone := e.root("writer")
		e.send(gone, "go")
		e.settle()
		Expect(e.p.CloseSession(gone)).To(Succeed())

		e.runFor(5 * time.Minute)
		claims, notes := e.p.Board(live)
		Expect(claims).To(HaveLen(1), "not lapsed at the first pass (5m)")
		_, orphan := e.p.Board(gone)
		Expect(orphan).To(BeEmpty(), "the closed tree's note was purged at 5m")
		e.runFor(5 * time.Minute)
		claims, notes = e.p.Board(live)
		Expect(claims).To(BeEmpty(), "lapsed at 7m, expired by the 10m pass")
		Expect(notes).To(HaveLen(1))
		exp := ofType(e.p.Events(live), platform.EventBoardClaimExpired)
		Expect(exp).To(HaveLen(1))
		Expect(exp[0].Time).To(Equal(epoch.Add(10 * time.Minute)))

		e.runFor(platform.DefaultNoteTTL)
		_, notes = e.p.Board(live)
		Expect(notes).To(BeEmpty(), "older than the note TTL")
	})

	It("inbox expiry (~5 min) marks pending items non-actionable once their owning session is terminal", func() {
		e.model.Script("coordinator", calls(use("ask_user_question", map[string]any{"question": "which region?"})), say("asked"))
		e.model.Script("writer", calls(use("ask_user_question", map[string]any{"question": "ok to ship?"})), say("asked"))
		a, b := e.root("coordinator"), e.root("writer")
		e.send(a, "go")
		e.send(b, "go")
		e.settle()
		Expect(e.p.CloseSession(b)).To(Succeed())
		e.runFor(5*time.Minute + time.Second)
		items := e.p.Inbox()
		Expect(items).To(HaveLen(2))
		Expect(items[0].State).To(Equal(platform.InboxPending))
		Expect(items[1].State).To(Equal(platform.InboxNonActionable))
		Expect(ofType(e.p.Events(b), platform.EventInboxExpired)[0].Time).To(Equal(epoch.Add(5 * time.Minute)))

		e.model.Script("coordinator", say("eu-west it is"))
		Expect(e.p.Answer(items[0].ID, "eu-west")).To(Succeed())
		Expect(e.p.Answer(items[1].ID, "yes")).NotTo(Succeed())
		e.settle()
		Expect(e.info(a).Output).To(Equal("eu-west it is"))
	})

	DescribeTable("a closed tree whose children will never run again is orphaned: workspace cleanup deletes its prefix",
		func(tool string, args map[string]any, child string) {
			e.model.Script("coordinator", calls(use(tool, args)), say("started"), say("thanks"))
			e.model.Script(child, say("found it"))
			root := e.root("coordinator")
			Expect(e.p.WriteFile(root, "notes.md", "x")).To(Succeed())
			e.send(root, "go")
			e.settle()
			Expect(e.info(root).Children).To(HaveLen(1), "the child ran")
			Expect(e.p.CloseSession(root)).To(Succeed())
			e.runFor(48 * time.Hour)
			Expect(ofType(e.p.Events(""), platform.EventWorkspaceDeleted)).To(ContainElement(
				HaveField("Path", platform.WorkspacePrefix(root))), "the closed tree's prefix is deleted")
		},
		Entry("a completed delegated child", "delegate_task", map[string]any{"goal": "look", "agent": "researcher"}, "researcher"),
		Entry("a completed worker, which only its closed parent could wake", "spawn_worker", map[string]any{"task": "look", "agent": "writer"}, "writer"),
	)

	It("a completed worker keeps its tree's workspace while its parent is live, since the parent may wake it", func() {
		e.model.Script("coordinator", calls(use("spawn_worker", map[string]any{"task": "look", "agent": "writer"})), say("started"), say("thanks"))
		e.model.Script("writer", say("found it"))
		root := e.root("coordinator")
		Expect(e.p.WriteFile(root, "notes.md", "x")).To(Succeed())
		e.send(root, "go")
		e.settle()
		e.runFor(48 * time.Hour)
		Expect(ofType(e.p.Events(""), platform.EventWorkspaceDeleted)).To(BeEmpty())
	})

	It("platform workspace cleanup (~6 h) deletes orphaned session-workspace prefixes and keeps live or busy ones", func() {
		live, gone, busy := e.root("writer"), e.root("writer"), e.root("coordinator")
		for _, s := range []string{live, gone, busy} {
			Expect(e.p.WriteFile(s, "f.txt", "x")).To(Succeed())
		}
		// A blocked task is unfinished: its tree's workspace is busy.
		e.model.Script("scout", calls(use("worker_block", map[string]any{"reason": "waiting for input"})), say("blocked"))
		e.model.Script("coordinator", say("noted"))
		t, err := e.p.SpawnTask(busy, store.Task{Prompt: "long", Agent: "scout"})
		Expect(err).NotTo(HaveOccurred())
		e.settle()
		Expect(e.p.Task(t.ID)).To(HaveField("State", store.TaskBlocked))
		Expect(e.p.CloseSession(gone)).To(Succeed())
		Expect(e.p.CloseSession(busy)).To(Succeed())

		e.runFor(6 * time.Hour)
		Expect(e.p.ReadFile(gone, "f.txt")).To(Equal("x"), "within the grace period")
		e.runFor(24 * time.Hour)
		_, err = e.p.ReadFile(gone, "f.txt")
		Expect(err).To(MatchError(store.ErrNotFound))
		Expect(e.p.ReadFile(live, "f.txt")).To(Equal("x"))
		Expect(e.p.ReadFile(busy, "f.txt")).To(Equal("x"), "an unfinished task still uses it")
		del := ofType(e.p.Events(""), platform.EventWorkspaceDeleted)
		Expect(del).To(HaveLen(1))
		Expect(del[0].Path).To(Equal(platform.WorkspacePrefix(gone)))
		Expect(del[0].Time.Sub(epoch)%(6*time.Hour)).To(BeZero(), "on the 6-hour cadence")
	})

	It("the training collector exports a tenant's trees to that tenant's bucket only, and trees that name no tenant to every one", func() {
		e.model.Script("researcher", say("found it"), say("found it"), say("found it"))
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "ada's secret goal", "agent": "researcher"})), say("done"))
		acme := e.root("coordinator", func(o *platform.SessionOptions) { o.Tenant = "acme" })
		e.send(acme, "go")
		e.settle()
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "bob's secret goal", "agent": "researcher"})), say("done"))
		globex := e.root("coordinator", func(o *platform.SessionOptions) { o.User, o.Tenant = "bob", "globex" })
		e.send(globex, "go")
		e.settle()
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "a shared goal", "agent": "researcher"})), say("done"))
		shared := e.root("coordinator", func(o *platform.SessionOptions) { o.User = "cy" })
		e.send(shared, "go")
		e.settle()

		goals := func(tenant string) []string {
			var out []string
			for _, t := range collect(e, tenant) {
				out = append(out, t.Goal)
			}
			return out
		}
		Expect(goals("acme")).To(ConsistOf("ada's secret goal", "a shared goal"))
		Expect(goals("globex")).To(ConsistOf("bob's secret goal", "a shared goal"))
		Expect(e.p.Trajectories()).To(HaveLen(3), "Trajectories is every tenant's")
	})

	It("the training collector exports a tenant's skill invocations to that tenant's bucket only", func() {
		e.close()
		skill := &core.Tool{Description: "look a price up", Run: func(_ context.Context, c core.ToolCall, _ any) (any, error) {
			return "49", nil
		}}
		e = newEnv(func(o *platform.Options) {
			o.Skills = []string{"price"}
			o.Agents["shop"] = &core.Agent{ID: "shop", Tools: core.Tools{"price": skill}}
		})
		for _, tenant := range []string{"acme", "globex", ""} {
			e.model.Script("shop", calls(use("price", map[string]any{"product": tenant + "-product"})), say("done"))
			root := e.root("shop", func(o *platform.SessionOptions) { o.Tenant = tenant })
			e.send(root, "go")
			e.settle()
		}
		args := func(tenant string) []string {
			var out []string
			for _, t := range collect(e, tenant) {
				Expect(t.Type).To(Equal("skill"))
				out = append(out, t.Arguments)
			}
			return out
		}
		Expect(args("acme")).To(ConsistOf(`{"product":"acme-product"}`, `{"product":"-product"}`))
		Expect(args("globex")).To(ConsistOf(`{"product":"globex-product"}`, `{"product":"-product"}`))
	})

	It("the training collector exports successful delegation and skill trajectories as JSONL to the tenant bucket", func() {
		e.close()
		skill := &core.Tool{Description: "summarise text", Run: func(context.Context, core.ToolCall, any) (any, error) {
			return "short version", nil
		}}
		e = newEnv(func(o *platform.Options) {
			o.Skills = []string{"summarise"}
			o.Agents["skilled"] = &core.Agent{ID: "skilled", Tools: core.Tools{"summarise": skill}}
		})
		e.model.Script("skilled",
			calls(use("summarise", map[string]any{"text": "long"}), use("delegate_task", map[string]any{"goals": []string{"ok", "bad"}, "agent": "researcher"})),
			say("done"))
		e.model.Script("researcher", say("fine answer"), scripted.Fail(errContext("boom")))
		root := e.root("skilled")
		e.send(root, "go")
		e.settle()

		key, n, err := e.p.CollectTraining("acme")
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(2), "one successful delegation, one skill call; the failed delegation is not exported")
		Expect(key).To(HavePrefix("tenants/acme/training/"))
		data, _, err := e.store.GetFile(nil, key)
		Expect(err).NotTo(HaveOccurred())
		var lines []platform.Trajectory
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var t platform.Trajectory
			Expect(json.Unmarshal(sc.Bytes(), &t)).To(Succeed())
			lines = append(lines, t)
		}
		Expect(lines).To(HaveLen(2))
		Expect(lines[0].Type).To(Equal("delegation"))
		Expect(lines[0].Goal).To(Equal("ok"))
		Expect(lines[0].Response).To(Equal("fine answer"))
		Expect(lines[0].Messages).NotTo(BeEmpty())
		Expect(lines[1].Type).To(Equal("skill"))
		Expect(lines[1].Skill).To(Equal("summarise"))
		Expect(lines[1].Result).To(Equal("short version"))
		Expect(lines[1].Arguments).To(MatchJSON(`{"text":"long"}`))
		Expect(ofType(e.p.Events(""), platform.EventTrainingExport)).To(HaveLen(1))
	})

	It("the sweepers are idempotent: a pass with nothing to do changes nothing and logs nothing", func() {
		root := e.root("coordinator")
		e.runFor(7 * 24 * time.Hour)
		Expect(e.p.SweepBoard(e.sim.Clock().Now())).To(Equal(0))
		Expect(e.p.SweepInbox()).To(BeZero())
		Expect(e.p.SweepWorkspaces(e.sim.Clock().Now())).To(BeEmpty())
		Expect(e.p.Events("")).To(BeEmpty())
		Expect(types(e.p.Events(root))).To(Equal([]platform.EventType{platform.EventSessionCreated}))
	})
})

var _ = Describe("The platform's events in the semantic trace", func() {
	It("interleave with the runtime's requests and tool calls in one recorder, one line per event", func() {
		var rec *trace.Recorder
		e := newEnv(func(o *platform.Options) {
			rec = trace.NewRecorder(epoch)
			o.Core.Observer = rec
			o.Observer = platform.TraceObserver(rec)
		})
		e.model.Script("coordinator", calls(use("spawn_worker", map[string]any{"task": "look", "agent": "writer"})), say("spawned"), say("thanks"))
		e.model.Script("writer", say("found it"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.settle()
		text := rec.Trace().Text()
		Expect(text).To(ContainSubstring("platform " + root + " worker.complete agent=writer child=session-2"))
		Expect(text).To(ContainSubstring(`status=completed text="found it"`))
		var kinds []trace.Kind
		for _, en := range rec.Trace().Entries {
			kinds = append(kinds, en.Kind)
		}
		Expect(kinds).To(ContainElements(trace.Request, trace.ToolResult, platform.TraceKind))
	})
})

// collect runs the training collector for a tenant and reads back the
// rows of the JSONL file it wrote.
func collect(e *env, tenant string) []platform.Trajectory {
	key, _, err := e.p.CollectTraining(tenant)
	Expect(err).NotTo(HaveOccurred())
	data, _, err := e.p.Store().GetFile(context.Background(), key)
	Expect(err).NotTo(HaveOccurred())
	var out []platform.Trajectory
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var t platform.Trajectory
		Expect(json.Unmarshal(sc.Bytes(), &t)).To(Succeed())
		out = append(out, t)
	}
	return out
}

var _ = Describe("The training collector across a crash", func() {
	for _, b := range sharedStores {
		Context("on "+b.name, func() {
			trainingAcrossCrash(b.open)
		})
	}
})

func trainingAcrossCrash(open func() store.Store) {
	var shared store.Store
	// Opened before the env, as in the specs of processes sharing a store.
	BeforeEach(func() { shared = open() })

	It("a recovered process exports the trajectories that completed before the crash from the durable store, each exactly once, to their tenant's bucket only", func() {
		price := &core.Tool{Description: "look a price up", Run: func(context.Context, core.ToolCall, any) (any, error) {
			return "49", nil
		}}
		e := newEnv(func(o *platform.Options) {
			if shared != nil {
				o.Store = shared
			}
			o.Skills = []string{"price"}
			o.Agents["shop"] = &core.Agent{ID: "shop", Tools: core.Tools{"price": price}}
		})
		roots := map[string]string{}
		for _, tenant := range []string{"acme", "globex"} {
			e.model.Script("shop", calls(use("price", map[string]any{"product": tenant + "-product"}),
				use("delegate_task", map[string]any{"goal": tenant + "'s goal", "agent": "researcher"})), say("done"))
			e.model.Script("researcher", say(tenant+"'s answer"))
			roots[tenant] = e.root("shop", func(o *platform.SessionOptions) { o.Tenant = tenant })
			e.send(roots[tenant], "go")
			e.settle()
		}
		before := collect(e, "acme")
		Expect(before).To(HaveLen(2), "acme's delegation and skill call")

		e.crash("proc-2") // a new process on the store; nothing reopened yet
		Expect(collect(e, "acme")).To(Equal(before), "the same trajectories, each once")
		Expect(lineage(collect(e, "globex"))).To(ConsistOf("delegation globex's goal", `skill {"product":"globex-product"}`))
		Expect(e.p.Trajectories()).To(HaveLen(4), "every tenant's")

		// The reopened root's new work joins what was kept: nothing twice.
		Expect(e.p.RestoreSession(roots["acme"], platform.SessionOptions{Agent: "shop", User: "ada", Tenant: "acme"})).To(Succeed())
		e.model.Script("shop", calls(use("delegate_task", map[string]any{"goal": "acme's second goal", "agent": "researcher"})), say("done"))
		e.model.Script("researcher", say("acme's second answer"))
		e.send(roots["acme"], "again")
		e.settle()
		Expect(lineage(collect(e, "acme"))).To(ConsistOf("delegation acme's goal", `skill {"product":"acme-product"}`,
			"delegation acme's second goal"))
		for _, t := range collect(e, "acme") {
			Expect(t.Messages).NotTo(BeEmpty(), "%s %s carries its conversation", t.Type, t.Session)
		}
	})

	It("a task attempt's trajectories reach its tree's tenant only, though it runs in a process where its root is not live", func() {
		e := newEnv(func(o *platform.Options) {
			o.MaxRunningTasks, o.TaskPollInterval, o.TaskTimeout = 1, time.Minute, 4*time.Hour
			if shared != nil {
				o.Store = shared
			}
		})
		e.another("proc-2")
		root := e.root("coordinator", func(o *platform.SessionOptions) { o.Tenant = "acme" })
		busyElsewhere(e, root)
		e.model.Script("writer", calls(use("delegate_task", map[string]any{"goal": "acme's task goal", "agent": "scout"})),
			complete("written", nil), say("."))
		e.model.Script("scout", say("acme's task answer"))
		e.model.Answer("coordinator", func(*core.Request) (*core.Response, error) { return &core.Response{Text: "noted"}, nil })
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(30 * time.Minute)
		as, _ := e.p.Attempts(t.ID)
		Expect(as).NotTo(BeEmpty())
		Expect(as[0].Instance).To(Equal("proc-2"), "the attempt ran in the other process")

		Expect(lineage(collect(e, "acme"))).To(ConsistOf("delegation acme's task goal"))
		Expect(collect(e, "globex")).To(BeEmpty(), "another tenant's bucket gets nothing of acme's tree")
	})
}

// lineage names each trajectory by its type and its goal or arguments.
func lineage(trs []platform.Trajectory) []string {
	out := []string{}
	for _, t := range trs {
		out = append(out, t.Type+" "+t.Goal+t.Arguments)
	}
	return out
}
