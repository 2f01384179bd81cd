package platform_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

// The boundaries seed 03 promises, each walked at by the route that used to
// get around it.

// userMessages are the user messages every request of an agent carried.
func userMessages(reqs []*core.Request) []string {
	var out []string
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.Role == core.RoleUser {
				out = append(out, m.Content)
			}
		}
	}
	return out
}

// childOf returns the id of a session's first child of the given kind.
func (e *env) childOf(parent string, kind platform.Kind) string {
	tree, err := e.p.Tree(parent)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, c := range tree.Children {
		if c.Kind == kind {
			return c.ID
		}
	}
	Fail("no " + string(kind) + " child of " + parent)
	return ""
}

var _ = Describe("Boundaries: a delegated child has no path to the user and cannot run workers, by any route", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	userPath := []string{"ask_user_question", "spawn_worker", "send_worker_message", "stop_worker", "cron_create", "cron_list", "cron_delete"}

	It("a delegated child keeps spawn_task but is offered no cron tool, and the attempts of its task run without the user's path or the coordinator family", func() {
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "dig in", "agent": "researcher"})), say("ok"))
		e.model.Script("researcher", calls(use("spawn_task", map[string]any{"prompt": "dig", "agent": "writer"})), say("spawned"))
		e.model.Script("writer", say("dug"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		child := toolNames(e.model.RequestsFor("researcher")[0])
		Expect(child).To(ContainElement("spawn_task"))
		Expect(child).NotTo(ContainElements("cron_create"))
		Expect(child).NotTo(ContainElements("cron_list"))
		Expect(child).NotTo(ContainElements("cron_delete"))
		attempt := toolNames(e.model.RequestsFor("writer")[0])
		Expect(attempt).To(ContainElement("worker_complete"))
		for _, name := range userPath {
			Expect(attempt).NotTo(ContainElement(name), "the task attempt of a delegated child must not get %s", name)
		}
	})

	It("a task a delegated child spawned still runs without them after a crash, when its spawner is gone", func() {
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "dig in", "agent": "researcher"})), say("ok"))
		e.model.Script("researcher", calls(use("spawn_task", map[string]any{"prompt": "dig", "agent": "writer"})), say("spawned"))
		e.model.ScriptRun("writer", 1, scripted.Turn{Text: "never reported", Latency: 2 * time.Hour})
		e.model.ScriptRun("writer", 2, say("dug on retry"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(10 * time.Minute)
		e.crash("proc-2")
		e.runFor(2 * time.Hour)

		reqs := e.model.RequestsFor("writer")
		Expect(reqs).To(HaveLen(2), "the crashed attempt and its retry")
		retry := toolNames(reqs[1])
		Expect(retry).To(ContainElement("worker_complete"))
		for _, name := range userPath {
			Expect(retry).NotTo(ContainElement(name), "the retry in the new process must not get %s", name)
		}
	})

	It("the scheduled runs of a worker's cron_create lose the coordinator family, as the worker did", func() {
		e.model.Script("coordinator", calls(use("spawn_worker", map[string]any{"task": "watch", "agent": "researcher"})), say("started"), say("noted"))
		e.model.ScriptRun("researcher", 1, calls(use("cron_create", map[string]any{"prompt": "check the queue", "in": "5m"})), say("scheduled"))
		e.model.ScriptRun("researcher", 2, say("queue ok"))
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(time.Hour)

		reqs := e.model.RequestsFor("researcher")
		Expect(reqs).To(HaveLen(3))
		run := toolNames(reqs[2])
		Expect(lastUser(reqs[2])).To(Equal("check the queue"))
		Expect(run).To(ContainElement("ask_user_question"), "a worker has a path to the user, and so do its runs")
		Expect(run).NotTo(ContainElements("spawn_worker"))
		Expect(run).NotTo(ContainElements("send_worker_message"))
		Expect(run).NotTo(ContainElements("stop_worker"))
	})

	It("loop runs and task attempts inherit the excluded_tools of the session that made them, even after a crash", func() {
		e.model.Answer("coordinator", func(*core.Request) (*core.Response, error) { return &core.Response{Text: "ok"}, nil })
		e.model.Script("researcher", say("done"))
		root := e.root("coordinator", func(o *platform.SessionOptions) { o.ExcludedTools = []string{"write_file"} })
		e.send(root, "/loop 1h check the build")
		_, err := e.p.SpawnTask(root, store.Task{Prompt: "later", Agent: "researcher", Parents: nil})
		Expect(err).NotTo(HaveOccurred())
		e.crash("proc-2") // the root is not reopened: its rows carry what it could do
		e.runFor(90 * time.Minute)

		loopRuns := e.model.RequestsFor("coordinator")
		Expect(loopRuns).NotTo(BeEmpty())
		for _, r := range loopRuns {
			Expect(toolNames(r)).NotTo(ContainElement("write_file"))
			Expect(toolNames(r)).To(ContainElement("read_file"))
		}
		attempts := e.model.RequestsFor("researcher")
		Expect(attempts).To(HaveLen(1))
		Expect(toolNames(attempts[0])).NotTo(ContainElement("write_file"))
	})

	It("the runs of a schedule made by a session with no path to the user never post into the user's conversation", func() {
		e.model.Script("coordinator", calls(use("spawn_worker", map[string]any{"task": "watch", "agent": "researcher"})), say("started"), say("noted"))
		e.model.ScriptRun("researcher", 1, calls(use("cron_create", map[string]any{"prompt": "check the queue", "in": "5m"})), say("scheduled"))
		e.model.ScriptRun("researcher", 2, say("queue report"))
		root := e.root("coordinator", func(o *platform.SessionOptions) {
			o.Channel = "slack"
			o.ExcludedTools = []string{"ask_user_question"}
		})
		e.send(root, "go")
		e.runFor(time.Hour)

		worker := e.childOf(root, platform.KindWorker)
		Expect(ofType(e.p.Events(root), platform.EventLoopResult)).To(BeEmpty())
		Expect(ofType(e.p.Events(root), platform.EventChannelPost)).To(BeEmpty())
		Expect(e.p.Posts()).To(BeEmpty())
		results := ofType(e.p.Events(worker), platform.EventLoopResult)
		Expect(results).To(HaveLen(1), "the result goes to the worker's own log")
		Expect(results[0].Text).To(Equal("queue report"))
	})
})

var _ = Describe("Boundaries: an agent's own tools are not blocked by the platform's names", func() {
	mine := &core.Tool{Description: "the agent's own file reader",
		Run: func(context.Context, core.ToolCall, any) (any, error) { return "from the agent's own read_file", nil }}

	It("an agent's own tool named like a platform tool the session is not offered is the agent's, and runs its code", func() {
		e := newEnv(func(o *platform.Options) {
			o.Agents["runner"] = &core.Agent{ID: "runner", Tools: core.Tools{"read_file": mine, "worker_complete": mine}}
		})
		e.model.Script("runner", calls(use("read_file", map[string]any{"path": "notes.md"})), say("read"))
		root, err := e.p.NewSession(platform.SessionOptions{Agent: "runner", ExcludedTools: []string{"platform:read_file"}})
		Expect(err).NotTo(HaveOccurred(), "worker_complete is a task attempt's tool and platform:read_file is excluded: no clash")
		e.send(root, "go")
		e.settle()

		tools := toolNames(e.model.RequestsFor("runner")[0])
		Expect(tools).To(ContainElements("read_file", "worker_complete", "write_file"))
		out, ok := toolResult(e.info(root), "read_file")
		Expect(ok).To(BeTrue(), out)
		Expect(out).To(ContainSubstring("from the agent's own read_file"))
	})

	It("a clash that remains names both tools and how to resolve it", func() {
		e := newEnv(func(o *platform.Options) {
			o.Agents["clash"] = &core.Agent{ID: "clash", Tools: core.Tools{"read_file": mine}}
		})
		_, err := e.p.NewSession(platform.SessionOptions{Agent: "clash"})
		Expect(err).To(MatchError(platform.ErrToolCollision))
		Expect(err.Error()).To(And(ContainSubstring(`own tool "read_file"`), ContainSubstring(`platform's "read_file"`),
			ContainSubstring("rename"), ContainSubstring("excluded_tools: [platform:read_file]")))
	})
})

var _ = Describe("Boundaries: a scheduled slash command is a command", func() {
	It("a scheduled /loop creates the loop when it fires, and the model never sees the command", func() {
		e := newEnv()
		root := e.root("scout")
		e.model.Script("scout", calls(use("cron_create", map[string]any{"prompt": "/loop 1h check the build", "in": "10m"})), say("scheduled"))
		e.send(root, "schedule it")
		e.settle()
		e.runner(func(*core.Request, int) *core.Response { return &core.Response{Text: "build green"} })
		e.runFor(2*time.Hour + time.Minute)

		rows, err := e.p.Schedules("ada")
		Expect(err).NotTo(HaveOccurred())
		var loops []store.Schedule
		for _, r := range rows {
			if r.Kind == store.ScheduleLoop {
				loops = append(loops, r)
			}
		}
		Expect(loops).To(HaveLen(1))
		Expect(loops[0].Prompt).To(Equal("check the build"))
		Expect(loops[0].Interval).To(Equal(time.Hour))
		Expect(loops[0].CreatedAt).To(Equal(epoch.Add(10 * time.Minute)))
		Expect(runsOf(e.p.Events(root), loops[0].ID)).To(HaveLen(2), "at +10m and +1h10m")
		for _, m := range userMessages(e.model.RequestsFor("scout")) {
			Expect(m).NotTo(HavePrefix("/loop"))
		}
	})
})

var _ = Describe("Boundaries: failover is prompt", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	fired := func(p *platform.Platform, session, sched string) []time.Duration {
		var at []time.Duration
		for _, f := range runsOf(p.Events(session), sched) {
			at = append(at, f.Time.Sub(epoch))
		}
		return at
	}

	It("a replica notices rows another process wrote within one poll, so a schedule's runs are not merged when their writer dies", func() {
		second, err := platform.New(func() platform.Options { o := e.opts; o.Instance = "proc-2"; return o }())
		Expect(err).NotTo(HaveOccurred())
		root := e.root("scout")
		sch, err := e.p.Cron(root, "*/10 * * * *", "tick")
		Expect(err).NotTo(HaveOccurred())
		e.p.Crash() // the writer dies at once; proc-2 was armed before the row existed
		e.p = second
		e.runner(func(*core.Request, int) *core.Response { return &core.Response{Text: "ok"} })
		e.runFor(time.Hour + time.Minute)

		Expect(fired(second, root, sch.ID)).To(Equal([]time.Duration{10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
			40 * time.Minute, 50 * time.Minute, time.Hour}))
	})

	It("a survivor takes over within one lease of the leader's death", func() {
		root := e.root("scout")
		sch, err := e.p.Cron(root, "* * * * *", "tick")
		Expect(err).NotTo(HaveOccurred())
		second, err := platform.New(func() platform.Options { o := e.opts; o.Instance = "proc-2"; return o }())
		Expect(err).NotTo(HaveOccurred())
		e.runner(func(*core.Request, int) *core.Response { return &core.Response{Text: "ok"} })
		e.runFor(10*time.Minute + 30*time.Second)

		leaderOf := func(p *platform.Platform) []time.Duration {
			var at []time.Duration
			for _, ev := range p.Events("") {
				if ev.Type == "scheduler.leader" {
					at = append(at, ev.Time.Sub(epoch))
				}
			}
			return at
		}
		leader, survivor := e.p, second
		if len(leaderOf(e.p)) == 0 {
			leader, survivor = second, e.p
		}
		Expect(leaderOf(leader)).To(Equal([]time.Duration{time.Minute}), "the leader took the lease at the first due row")
		Expect(leaderOf(survivor)).To(BeEmpty())
		leader.Crash()
		e.p = survivor
		if survivor == second {
			e.opts.Instance = "proc-2"
		}
		e.runFor(10 * time.Minute)

		took := leaderOf(survivor)
		Expect(took).To(HaveLen(1))
		death := 10*time.Minute + 30*time.Second
		Expect(took[0]).To(BeNumerically(">", death))
		Expect(took[0]).To(BeNumerically("<=", death+platform.DefaultLeaderTTL), "within one lease of the death")
		// From the takeover on, the survivor fires every minute's row at
		// its minute.
		var after []time.Duration
		for _, at := range fired(survivor, root, sch.ID) {
			if at >= took[0] {
				after = append(after, at)
			}
		}
		Expect(after).To(HaveLen(int((20*time.Minute-took[0])/time.Minute) + 1))
		for i, at := range after {
			Expect(at).To(Equal(took[0] + time.Duration(i)*time.Minute))
		}
	})

	It("a cadence is a 5-field cron expression: @every is refused as a model-facing error", func() {
		root := e.root("scout")
		e.model.Script("scout", calls(use("cron_create", map[string]any{"prompt": "tick", "cron": "@every 5m"})), say("no"))
		e.send(root, "schedule it")
		e.settle()
		out, ok := toolResult(e.info(root), "cron_create")
		Expect(ok).To(BeFalse())
		Expect(out).To(ContainSubstring("@every"))
		Expect(out).To(ContainSubstring("5-field"))
		rows, _ := e.p.Schedules("ada")
		Expect(rows).To(BeEmpty())
		_, err := e.p.Cron(root, "@every 5m", "tick")
		Expect(err).To(HaveOccurred())
		// The descriptors that name a 5-field expression are cron.
		_, err = e.p.Cron(root, "@hourly", "tick")
		Expect(err).NotTo(HaveOccurred())
	})

	It("a cadence is a 5-field cron expression: a TZ= or CRON_TZ= prefix is refused, so it cannot carry @every past the rule", func() {
		root := e.root("scout")
		for _, spec := range []string{"TZ=UTC @every 1s", "CRON_TZ=UTC @every 1m", "TZ=Europe/Paris 0 9 * * *", "CRON_TZ=UTC 0 9 * * *"} {
			_, err := e.p.Cron(root, spec, "tick")
			Expect(err).To(MatchError(platform.ErrCronTZ), spec)
		}
		e.model.Script("scout", calls(use("cron_create", map[string]any{"prompt": "tick", "cron": "CRON_TZ=UTC @every 1m"})), say("no"))
		e.send(root, "schedule it")
		e.settle()
		out, ok := toolResult(e.info(root), "cron_create")
		Expect(ok).To(BeFalse(), "cron_create accepted CRON_TZ=UTC @every 1m: %s", out)
		Expect(out).To(ContainSubstring("invalid_arguments"))
		Expect(out).To(ContainSubstring("5-field"))
		rows, _ := e.p.Schedules("ada")
		Expect(rows).To(BeEmpty())
	})
})

var _ = Describe("Boundaries: no task is stranded in silence", func() {
	var (
		e    *env
		root string
	)
	BeforeEach(func() {
		e = newEnv()
		root = e.root("coordinator")
	})
	stranded := func(log []platform.Event) map[string]string {
		out := map[string]string{}
		for _, ev := range log {
			if ev.Type == "task.stranded" {
				out[ev.Task] = ev.Status + " " + ev.Other
			}
		}
		return out
	}

	It("the todo children of a failed parent stay todo, and their spawner gets task.stranded and a finding for each", func() {
		e.model.Script("researcher", scripted.Turn{Text: "too slow", Latency: 2 * time.Hour})
		a, err := e.p.SpawnTask(root, store.Task{Prompt: "a", Agent: "researcher", MaxAttempts: 1})
		Expect(err).NotTo(HaveOccurred())
		b, err := e.p.SpawnTask(root, store.Task{Prompt: "b", Agent: "researcher", Parents: []string{a.ID}})
		Expect(err).NotTo(HaveOccurred())
		c, err := e.p.SpawnTask(root, store.Task{Prompt: "c", Agent: "researcher", Parents: []string{b.ID}})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(2 * time.Hour)

		Expect(e.p.Task(a.ID)).To(HaveField("State", store.TaskFailed))
		Expect(e.p.Task(b.ID)).To(HaveField("State", store.TaskTodo), "the seed: failed parents do not promote their children")
		Expect(e.p.Task(c.ID)).To(HaveField("State", store.TaskTodo))
		Expect(stranded(e.p.Events(root))).To(Equal(map[string]string{b.ID: "parent_failed " + a.ID, c.ID: "parent_failed " + a.ID}))
		Expect(e.p.Findings()).To(HaveLen(2))
		Expect(e.p.Findings()[0]).To(And(HaveField("Kind", platform.FindingStranded), HaveField("Task", b.ID)))
	})

	It("the todo child of a cancelled parent is reported the same way", func() {
		e.model.Script("researcher", scripted.Turn{Text: "slow", Latency: time.Hour})
		a, err := e.p.SpawnTask(root, store.Task{Prompt: "a", Agent: "researcher"})
		Expect(err).NotTo(HaveOccurred())
		b, err := e.p.SpawnTask(root, store.Task{Prompt: "b", Agent: "researcher", Parents: []string{a.ID}})
		Expect(err).NotTo(HaveOccurred())
		e.model.Script("coordinator", calls(use("cancel_task", map[string]any{"task_id": a.ID})), say("cancelled"))
		e.send(root, "stop a")
		e.runFor(2 * time.Hour)

		Expect(e.p.Task(b.ID)).To(HaveField("State", store.TaskTodo))
		Expect(stranded(e.p.Events(root))).To(Equal(map[string]string{b.ID: "parent_cancelled " + a.ID}))
	})

	It("a blocked task whose spawner can no longer act (a delegated child that finished) is reported the same way", func() {
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "dig in", "agent": "researcher"})), say("ok"))
		e.model.Script("researcher", calls(use("spawn_task", map[string]any{"prompt": "dig", "agent": "writer"})), say("spawned"))
		e.model.Script("writer", scripted.Turn{Calls: []scripted.Call{use("worker_block", map[string]any{"reason": "need a key"})},
			Latency: 10 * time.Minute}, say("blocked"))
		e.send(root, "go")
		e.runFor(time.Hour)

		child := e.childOf(root, platform.KindDelegate)
		info := e.info(child)
		Expect(info.State).To(Equal(platform.StateCompleted))
		tasks, err := e.store.ListTasks(context.Background(), store.TaskFilter{Spawner: child})
		Expect(err).NotTo(HaveOccurred())
		Expect(tasks).To(HaveLen(1))
		Expect(tasks[0].State).To(Equal(store.TaskBlocked))
		Expect(stranded(e.p.Events(child))).To(Equal(map[string]string{tasks[0].ID: "spawner_gone "}))
		Expect(e.p.Findings()).To(ContainElement(And(HaveField("Kind", platform.FindingStranded),
			HaveField("Reason", platform.StrandedSpawnerGone))))
	})
})

var _ = Describe("Boundaries: stale means idle", func() {
	var e *env
	BeforeEach(func() { e = newEnv() })

	orchestrate := func(writer ...scripted.Turn) string {
		e.model.Script("coordinator", calls(use("delegate_task", map[string]any{"goal": "orchestrate", "agent": "researcher", "role": "orchestrator"})), say("done"))
		e.model.Script("researcher", calls(use("delegate_task", map[string]any{"goal": "dig", "agent": "writer"})), say("orchestrated"))
		e.model.Script("writer", writer...)
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(2 * time.Hour)
		return root
	}

	It("delegation.stale does not fire for an orchestrator child waiting on its own busy grandchildren", func() {
		var busy []scripted.Turn
		for range 5 {
			busy = append(busy, scripted.Turn{Calls: []scripted.Call{use("list_files", map[string]any{})}, Latency: 4 * time.Minute})
		}
		busy = append(busy, scripted.Turn{Text: "dug", Latency: 4 * time.Minute})
		root := orchestrate(busy...)

		Expect(delegationResults(e.info(root)).Results[0].Response).To(Equal("orchestrated"))
		Expect(ofType(e.p.Events(root), platform.EventDelegationStale)).To(BeEmpty(), "24 minutes of busy grandchild, never idle for 10")
		Expect(ofType(e.p.Events(e.childOf(root, platform.KindDelegate)), platform.EventDelegationStale)).To(BeEmpty())
	})

	It("it does fire, for the orchestrator and its grandchild alike, when the grandchild idles", func() {
		root := orchestrate(scripted.Turn{Text: "woke up", Latency: 45 * time.Minute})

		Expect(ofType(e.p.Events(root), platform.EventDelegationStale)).To(HaveLen(1))
		Expect(ofType(e.p.Events(e.childOf(root, platform.KindDelegate)), platform.EventDelegationStale)).To(HaveLen(1))
	})
})

var _ = Describe("Boundaries: crashes do not reroute files", func() {
	It("after a crash a loop run whose origin was not reopened still writes to its tree's root workspace", func() {
		e := newEnv()
		root := e.root("scout")
		e.send(root, "/loop 1h note the build")
		e.runner(func(req *core.Request, n int) *core.Response {
			if req.Step == 1 {
				return toolCall("write_file", map[string]any{"path": "log.md", "content": "run " + string(rune('0'+n))})
			}
			return &core.Response{Text: "noted"}
		})
		e.runFor(30 * time.Minute)
		Expect(e.p.ReadFile(root, "log.md")).To(Equal("run 1"))
		e.crash("proc-2") // the origin is not reopened
		e.runFor(time.Hour)

		Expect(e.p.ReadFile(root, "log.md")).To(Equal("run 2"))
		files, err := e.store.ListFiles(context.Background(), "sessions/")
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			Expect(f.Key).To(HavePrefix(platform.WorkspacePrefix(root)), "no run writes under a prefix of its own")
		}
	})

	It("after a crash a loop run whose origin was not reopened runs at the delegation depth it ran at before", func() {
		e := newEnv()
		root := e.root("scout")
		e.send(root, "/loop 1h lead the review")
		e.runner(func(req *core.Request, n int) *core.Response {
			if req.Step == 1 {
				return toolCall("delegate_task", map[string]any{"goal": "review", "agent": "researcher", "role": "orchestrator"})
			}
			return &core.Response{Text: "reviewed"}
		})
		e.model.Answer("researcher", func(*core.Request) (*core.Response, error) { return &core.Response{Text: "led"}, nil })
		e.runFor(30 * time.Minute)
		Expect(e.model.RequestsFor("researcher")).To(HaveLen(1))
		e.crash("proc-2") // the origin is not reopened
		e.runFor(time.Hour)

		reqs := e.model.RequestsFor("researcher")
		Expect(reqs).To(HaveLen(2), "a run before the crash and one after")
		for i, req := range reqs {
			Expect(toolNames(req)).NotTo(ContainElement("delegate_task"), "run %d: its orchestrator child is at depth 2, the cap", i+1)
		}
	})

	It("workspace cleanup never deletes the prefix of a root that still owns an active schedule, whichever session made it", func() {
		e := newEnv()
		root := e.root("coordinator")
		_, err := e.p.SpawnTask(root, store.Task{Prompt: "plan the week", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.crash("proc-2") // before the attempt ran: the root is gone, its task is not
		e.model.Script("writer",
			calls(use("write_file", map[string]any{"path": "plan.md", "content": "the plan"})),
			calls(use("cron_create", map[string]any{"prompt": "follow the plan", "cron": "0 9 * * *"})),
			complete("planned", nil), say("."))
		e.model.Answer("writer", func(*core.Request) (*core.Response, error) { return &core.Response{Text: "followed"}, nil })
		e.runFor(time.Hour)
		rows, _ := e.p.Schedules("ada")
		Expect(rows).To(HaveLen(1))
		Expect(rows[0].State).To(Equal(store.ScheduleActive))
		e.crash("proc-3") // and again: no session of the tree is live anywhere

		e.runFor(3 * 24 * time.Hour)
		Expect(e.p.SweepWorkspaces(e.sim.Clock().Now())).To(BeEmpty())
		Expect(e.p.ReadFile(root, "plan.md")).To(Equal("the plan"))
	})
})
