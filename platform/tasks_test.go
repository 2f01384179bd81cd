package platform_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	_ "modernc.org/sqlite"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

// onNotice is a turn that answers the notice a woken session received by
// calling tool with args plus the notice's task_id.
func onNotice(tool string, args map[string]any) scripted.Turn {
	return scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
		var n map[string]any
		if err := json.Unmarshal([]byte(lastUser(req)), &n); err != nil {
			return nil, err
		}
		a := map[string]any{"task_id": n["task_id"]}
		for k, v := range args {
			a[k] = v
		}
		raw, _ := json.Marshal(a)
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "n-" + tool, Name: tool, Arguments: string(raw)}}}, nil
	}}
}

// lastUserOf is the last user message in a session's history.
func lastUserOf(info platform.SessionInfo) string {
	for i := len(info.History) - 1; i >= 0; i-- {
		if info.History[i].Role == core.RoleUser {
			return info.History[i].Content
		}
	}
	return ""
}

func complete(summary string, meta map[string]any) scripted.Turn {
	args := map[string]any{"summary": summary}
	if meta != nil {
		args["metadata"] = meta
	}
	return calls(use("worker_complete", args))
}

var _ = Describe("Durable tasks (spawn_task)", func() {
	var (
		e    *env
		root string
	)
	BeforeEach(func() {
		e = newEnv()
		root = e.root("coordinator")
	})

	task := func(id string) store.Task {
		t, err := e.p.Task(id)
		Expect(err).NotTo(HaveOccurred())
		return t
	}
	spawn := func(prompt string, parents ...string) string {
		t, err := e.p.SpawnTask(root, store.Task{Prompt: prompt, Agent: "researcher", Parents: parents})
		Expect(err).NotTo(HaveOccurred())
		return t.ID
	}

	It("spawn_task returns a task_id at once and the task is a row in the store", func() {
		e.model.Script("coordinator",
			calls(use("spawn_task", map[string]any{"prompt": "index the repo", "agent": "researcher", "title": "index"})),
			say("queued"), say("noted"))
		e.model.Script("researcher", scripted.Turn{Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "indexed"})}, Latency: 10 * time.Minute}, say("bye"))
		e.send(root, "go")
		e.settle()
		out, ok := toolResult(e.info(root), "spawn_task")
		Expect(ok).To(BeTrue(), out)
		id := jsonOf(out)["task_id"].(string)
		Expect(ofType(e.p.Events(root), platform.EventTurnEnd)[0].Time).To(Equal(epoch))
		Expect(task(id).State).To(Equal(store.TaskRunning))
		Expect(task(id).Title).To(Equal("index"))
		e.runFor(time.Hour)
		Expect(task(id).State).To(Equal(store.TaskDone))
	})

	It("survives the parent's crash: the attempt in flight is reaped as crashed and retried by the next process", func() {
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "never reported", Latency: 2 * time.Hour})
		e.model.ScriptRun("researcher", 2, complete("done on retry", nil), say("ok"))
		id := spawn("long job")
		e.runFor(5 * time.Minute)
		Expect(task(id).State).To(Equal(store.TaskRunning))

		e.crash("proc-2")
		Expect(e.p.Sessions()).To(BeEmpty(), "process-local sessions are gone")
		Expect(task(id).State).To(Equal(store.TaskRunning), "the store kept the row as it was")

		e.runFor(2 * time.Hour)
		t := task(id)
		Expect(t.State).To(Equal(store.TaskDone))
		Expect(t.Result).To(Equal("done on retry"))
		as, _ := e.p.Attempts(id)
		Expect(as).To(HaveLen(2))
		Expect(as[0].Outcome).To(Equal(store.OutcomeCrashed))
		Expect(as[0].Instance).To(Equal("proc-1"))
		Expect(as[1].Instance).To(Equal("proc-2"))
		// The spawner comes back under its id and finds the outcome.
		Expect(e.p.RestoreSession(root, platform.SessionOptions{Agent: "coordinator", User: "ada"})).To(Succeed())
		done := ofType(e.p.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(1))
		Expect(done[0].Task).To(Equal(id))
	})

	It("an attempt after a crash runs at the delegation depth its spawner gave it: an orchestrator's task is never offered delegate_task", func() {
		e.model.Script("coordinator",
			calls(use("delegate_task", map[string]any{"goal": "lead", "agent": "researcher", "role": "orchestrator"})), say("done"))
		e.model.Script("researcher",
			calls(use("spawn_task", map[string]any{"prompt": "write it up", "agent": "writer"})), say("spawned"))
		e.model.ScriptRun("writer", 1, scripted.Turn{Text: "never reported", Latency: 2 * time.Hour})
		e.model.ScriptRun("writer", 2, complete("written on retry", nil), say("ok"))
		e.send(root, "go")
		e.runFor(5 * time.Minute)
		Expect(toolNames(e.model.RequestsFor("researcher")[0])).To(ContainElement("delegate_task"), "an orchestrator at depth 1")

		e.crash("proc-2")
		e.runFor(2 * time.Hour)
		reqs := e.model.RequestsFor("writer")
		Expect(len(reqs)).To(BeNumerically(">=", 2))
		for i, req := range reqs {
			Expect(toolNames(req)).NotTo(ContainElement("delegate_task"), "request %d: the attempt runs at depth 2, the cap", i)
			Expect(toolNames(req)).To(ContainElement("worker_complete"))
		}
	})

	It("a simulator driver can crash the process from outside any actor, and nothing durable is written after it", func() {
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "never", Latency: time.Hour})
		id := spawn("long")
		e.runFor(time.Minute)
		e.p.Crash() // the driver's wait runs the simulation until every actor ended
		Expect(e.sim.Live()).To(BeEmpty(), "every actor ended")
		Expect(task(id).State).To(Equal(store.TaskRunning), "the interrupted attempt wrote nothing")
		as, _ := e.p.Attempts(id)
		Expect(as[0].Outcome).To(Equal(store.OutcomeRunning))
	})

	It("fan-in: a task stays todo until every parent is done, then is promoted to ready and claimed", func() {
		e.model.ScriptRun("researcher", 1, scripted.Turn{Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "a"})}, Latency: 10 * time.Minute}, say("."))
		e.model.ScriptRun("researcher", 2, scripted.Turn{Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "b"})}, Latency: 20 * time.Minute}, say("."))
		e.model.ScriptRun("researcher", 3, complete("c", nil), say("."))
		e.model.Script("coordinator", say("a"), say("b"), say("c"))
		a, b := spawn("a"), spawn("b")
		c := spawn("c", a, b)
		Expect(task(c).State).To(Equal(store.TaskTodo))
		e.runFor(15 * time.Minute)
		Expect(task(a).State).To(Equal(store.TaskDone))
		Expect(task(c).State).To(Equal(store.TaskTodo), "one parent is not done yet")
		e.runFor(time.Hour)
		Expect(task(c).State).To(Equal(store.TaskDone))
		promoted := ofType(e.p.Events(root), platform.EventTaskPromoted)
		Expect(promoted).To(HaveLen(1))
		Expect(promoted[0].Task).To(Equal(c))
		Expect(promoted[0].Time).To(Equal(epoch.Add(20 * time.Minute)))
		started := ofType(e.p.Events(root), platform.EventTaskStarted)
		Expect(started).To(HaveLen(3))
		Expect(started[2].Task).To(Equal(c))
		Expect(started[2].Time).To(Equal(epoch.Add(20 * time.Minute)))
	})

	It("cancelled or failed parents never promote their children", func() {
		e.close()
		e = newEnv(func(o *platform.Options) { o.TaskMaxAttempts = 1 })
		root = e.root("coordinator")
		e.model.Script("coordinator",
			calls(use("cancel_task", map[string]any{"task_id": "task-1"})), say("cancelled"), say("saw failure"))
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "x", Latency: time.Hour})
		e.model.ScriptRun("researcher", 2, scripted.Fail(errContext("boom")))
		toCancel := spawn("to cancel")
		Expect(toCancel).To(Equal("task-1"), "the id the coordinator's script cancels")
		toFail := spawn("to fail")
		childOfCancelled := spawn("child 1", toCancel)
		childOfFailed := spawn("child 2", toFail)
		e.send(root, "cancel the first")
		e.runFor(48 * time.Hour)
		Expect(task(toCancel).State).To(Equal(store.TaskCancelled))
		Expect(task(toFail).State).To(Equal(store.TaskFailed))
		Expect(task(childOfCancelled).State).To(Equal(store.TaskTodo))
		Expect(task(childOfFailed).State).To(Equal(store.TaskTodo))
		Expect(ofType(e.p.Events(root), platform.EventTaskPromoted)).To(BeEmpty())
	})

	It("max_attempts defaults to 3: consecutive timed-out attempts are retried, then the task is failed", func() {
		for n := 1; n <= 3; n++ {
			e.model.ScriptRun("researcher", n, scripted.Turn{Text: "slow", Latency: 2 * platform.DefaultTaskTimeout})
		}
		e.model.Script("coordinator", say("it failed"))
		id := spawn("hopeless")
		e.runFor(24 * time.Hour)
		t := task(id)
		Expect(t.State).To(Equal(store.TaskFailed))
		Expect(t.MaxAttempts).To(Equal(3))
		as, _ := e.p.Attempts(id)
		Expect(as).To(HaveLen(3))
		for _, a := range as {
			Expect(a.Outcome).To(Equal(store.OutcomeTimedOut))
			Expect(a.EndedAt.Sub(a.StartedAt)).To(Equal(platform.DefaultTaskTimeout))
		}
		Expect(ofType(e.p.Events(root), platform.EventTaskRetry)).To(HaveLen(2))
		failed := ofType(e.p.Events(root), platform.EventTaskFailed)
		Expect(failed).To(HaveLen(1))
		Expect(failed[0].Status).To(Equal("timeout"))
		Expect(e.info(root).Turns).To(Equal(1), "task.failed woke the spawner")
	})

	It("max_attempts counts consecutive crash and timeout attempts: a block in between resets the count", func() {
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "slow", Latency: time.Hour})
		e.model.ScriptRun("researcher", 2, calls(use("worker_block", map[string]any{"reason": "need a key"})), say("blocked"))
		e.model.ScriptRun("researcher", 3, scripted.Turn{Text: "slow", Latency: time.Hour})
		e.model.ScriptRun("researcher", 4, complete("finally", nil), say("."))
		e.model.Script("coordinator", onNotice("unblock_task", map[string]any{"context": "key=abc"}), say("unblocked"), say("done"))
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "p", Agent: "researcher", MaxAttempts: 2})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(24 * time.Hour)
		Expect(task(t.ID).State).To(Equal(store.TaskDone))
		as, _ := e.p.Attempts(t.ID)
		var outcomes []store.Outcome
		for _, a := range as {
			outcomes = append(outcomes, a.Outcome)
		}
		Expect(outcomes).To(Equal([]store.Outcome{store.OutcomeTimedOut, store.OutcomeBlocked, store.OutcomeTimedOut, store.OutcomeCompleted}))
	})

	It("attempt 2 onwards opens with a '## Prior attempts on this task' section: completion text, block reason or a crashed placeholder", func() {
		e.model.ScriptRun("researcher", 1, calls(use("write_file", map[string]any{"path": "progress.txt", "content": "step 1 done"}),
			use("worker_block", map[string]any{"reason": "which branch?"})), say("blocked"))
		e.model.ScriptRun("researcher", 2, scripted.Turn{Text: "never", Latency: 3 * time.Hour})
		var third *core.Request
		e.model.ScriptRun("researcher", 3, scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			third = req
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "rd", Name: "read_file", Arguments: `{"path":"progress.txt"}`},
				{ID: "ctx", Name: "worker_context", Arguments: `{}`}}}, nil
		}}, complete("resumed from step 1", map[string]any{"tests_run": 3}), say("."))
		e.model.Script("coordinator", onNotice("unblock_task", map[string]any{"context": "use main"}), say("unblocked"))
		id := spawn("migrate the schema")
		e.runFor(10 * time.Minute)
		Expect(task(id).State).To(Equal(store.TaskRunning))
		e.crash("proc-2")
		Expect(e.p.RestoreSession(root, platform.SessionOptions{Agent: "coordinator", User: "ada"})).To(Succeed())
		e.model.Script("coordinator", say("done"))
		e.runFor(3 * time.Hour)

		Expect(third).NotTo(BeNil())
		prompt := third.Messages[0].Content
		Expect(prompt).To(HavePrefix("migrate the schema"))
		Expect(prompt).To(ContainSubstring("## Task context"))
		Expect(prompt).To(ContainSubstring("use main"))
		Expect(prompt).To(ContainSubstring("## Prior attempts on this task"))
		Expect(prompt).To(ContainSubstring("### Attempt 1: blocked\nBlocked: which branch?"))
		Expect(prompt).To(ContainSubstring("### Attempt 2: crashed\n(this attempt crashed"))
		Expect(strings.Index(prompt, "Attempt 1")).To(BeNumerically("<", strings.Index(prompt, "Attempt 2")))

		// The workspace carried over, and worker_context has the detail.
		attempt3 := e.info(task(id).Spawner)
		Expect(attempt3.ID).To(Equal(root))
		as, _ := e.p.Attempts(id)
		Expect(as).To(HaveLen(3))
		info := e.info(as[2].Session)
		progress, ok := toolResult(info, "read_file")
		Expect(ok).To(BeTrue())
		Expect(progress).To(Equal("step 1 done"))
		raw, ok := toolResult(info, "worker_context")
		Expect(ok).To(BeTrue())
		var wc platform.WorkerContext
		Expect(json.Unmarshal([]byte(raw), &wc)).To(Succeed())
		Expect(wc.Attempt).To(Equal(3))
		Expect(wc.Attempts).To(HaveLen(3))
		Expect(wc.Attempts[0].BlockReason).To(Equal("which branch?"))
		Expect(wc.Attempts[1].Outcome).To(Equal(store.OutcomeCrashed))
		Expect(wc.Task.Context).To(HaveLen(1))
		Expect(task(id).Result).To(Equal("resumed from step 1"))
	})

	It("the prior attempts section lists at most the last 5 attempts", func() {
		e.close()
		e = newEnv(func(o *platform.Options) { o.TaskTimeout = time.Minute })
		root = e.root("coordinator")
		for n := 1; n <= 6; n++ {
			e.model.ScriptRun("researcher", n, scripted.Turn{Text: "slow", Latency: time.Hour})
		}
		var seventh *core.Request
		e.model.ScriptRun("researcher", 7, scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			seventh = req
			return &core.Response{Text: "done"}, nil
		}})
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "p", Agent: "researcher", MaxAttempts: 7})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(24 * time.Hour)
		Expect(task(t.ID).State).To(Equal(store.TaskDone))
		Expect(seventh).NotTo(BeNil())
		prompt := seventh.Messages[0].Content
		Expect(prompt).NotTo(ContainSubstring("### Attempt 1:"))
		for n := 2; n <= 6; n++ {
			Expect(prompt).To(ContainSubstring("### Attempt " + string(rune('0'+n)) + ": timeout"))
		}
	})

	It("worker_complete carries a summary that becomes task.result, plus structured metadata, on a worker.complete with the task_id", func() {
		var woke *core.Request
		e.model.Script("researcher", complete("3 files changed", map[string]any{
			"changed_files": []string{"a.go", "b.go", "c.go"}, "tests_run": 12, "decisions": []string{"kept the API"}}), say("reported"))
		e.model.Script("coordinator", scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			woke = req
			return &core.Response{Text: "great"}, nil
		}})
		id := spawn("refactor")
		e.settle()
		t := task(id)
		Expect(t.State).To(Equal(store.TaskDone))
		Expect(t.Result).To(Equal("3 files changed"))
		Expect(t.Metadata).To(MatchJSON(`{"changed_files":["a.go","b.go","c.go"],"tests_run":12,"decisions":["kept the API"]}`))
		done := ofType(e.p.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(1))
		Expect(done[0].Task).To(Equal(id))
		Expect(done[0].Text).To(Equal("3 files changed"))
		Expect(done[0].Metadata).To(MatchJSON(t.Metadata))
		Expect(woke).NotTo(BeNil())
		Expect(jsonOf(lastUser(woke))).To(HaveKeyWithValue("task_id", id))
	})

	It("worker_block pauses the task with a reason (task.blocked); only the spawner may unblock it, with context appended and timestamped", func() {
		e.model.ScriptRun("researcher", 1, calls(use("worker_block", map[string]any{"reason": "need credentials"})), say("waiting"))
		e.model.ScriptRun("researcher", 2, complete("used the credentials", nil), say("."))
		e.model.Script("coordinator", say("I will ask the user"))
		id := spawn("deploy")
		e.settle()
		Expect(task(id).State).To(Equal(store.TaskBlocked))
		Expect(task(id).BlockReason).To(Equal("need credentials"))
		blocked := ofType(e.p.Events(root), platform.EventTaskBlocked)
		Expect(blocked).To(HaveLen(1))
		Expect(blocked[0].Text).To(Equal("need credentials"))

		// Another session is refused.
		e.model.Script("writer", calls(use("unblock_task", map[string]any{"task_id": id, "context": "x"}),
			use("cancel_task", map[string]any{"task_id": id})), say("refused"))
		intruder := e.root("writer")
		e.send(intruder, "meddle")
		e.settle()
		for _, tool := range []string{"unblock_task", "cancel_task"} {
			out, ok := toolResult(e.info(intruder), tool)
			Expect(ok).To(BeFalse(), tool)
			Expect(out).To(ContainSubstring("not_owner"))
		}
		Expect(task(id).State).To(Equal(store.TaskBlocked))

		e.runFor(2 * time.Hour)
		e.model.Script("coordinator", calls(use("unblock_task", map[string]any{"task_id": id, "context": "token=xyz"})), say("resumed"), say("done"))
		e.send(root, "here are the credentials")
		e.settle()
		t := task(id)
		Expect(t.State).To(Equal(store.TaskDone))
		Expect(t.Context).To(HaveLen(1))
		Expect(t.Context[0].Text).To(Equal("token=xyz"))
		Expect(t.Context[0].At).To(Equal(epoch.Add(2 * time.Hour)))
		Expect(ofType(e.p.Events(root), platform.EventTaskUnblocked)).To(HaveLen(1))
	})

	It("cancel_task is ownership-checked and cancelling a running task interrupts its in-flight child session", func() {
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "x", Latency: 20 * time.Minute})
		e.model.Script("coordinator", calls(use("cancel_task", map[string]any{"task_id": "task-1"})), say("cancelled"))
		id := spawn("long")
		Expect(id).To(Equal("task-1"))
		e.runFor(5 * time.Minute)
		as, _ := e.p.Attempts(id)
		child := as[0].Session
		Expect(e.info(child).State).To(Equal(platform.StateRunning))
		e.send(root, "cancel it")
		e.runFor(time.Hour)
		Expect(task(id).State).To(Equal(store.TaskCancelled))
		Expect(e.info(child).State).To(Equal(platform.StateStopped))
		end := ofType(e.p.Events(child), platform.EventTurnEnd)
		Expect(end[0].Status).To(Equal("interrupted"))
		Expect(end[0].Time).To(Equal(epoch.Add(5 * time.Minute)))
		as, _ = e.p.Attempts(id)
		Expect(as).To(HaveLen(1))
		Expect(as[0].Outcome).To(Equal(store.OutcomeCancelled))
		Expect(ofType(e.p.Events(root), platform.EventTaskCancelled)[0].Child).To(Equal(child))
	})
})

var _ = Describe("Durable tasks that fail at claim time", func() {
	It("task.failed marks the transition: a task whose agent is unknown after a restart reports each claimed attempt (task.started, task.retry, task.failed) to its spawner, which wakes", func() {
		e := newEnv()
		root := e.root("coordinator")
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "x", Agent: "researcher"})
		Expect(err).NotTo(HaveOccurred())
		delete(e.opts.Agents, "researcher") // the next release renamed the agent
		e.opts.Instance = "proc-2"
		e.p, _, err = e.p.Restart(e.opts, []platform.Root{{ID: root, Options: platform.SessionOptions{Agent: "coordinator", User: "ada"}}})
		Expect(err).NotTo(HaveOccurred())
		e.model.Script("coordinator", scripted.Turn{Text: "noted", Repeat: true})
		e.runFor(time.Hour)

		Expect(e.p.Task(t.ID)).To(HaveField("State", store.TaskFailed))
		log := e.p.Events(root)
		Expect(ofType(log, platform.EventTaskStarted)).To(HaveLen(3), "%v", types(log))
		Expect(ofType(log, platform.EventTaskRetry)).To(HaveLen(2), "%v", types(log))
		failed := ofType(log, platform.EventTaskFailed)
		Expect(failed).To(HaveLen(1), "%v", types(log))
		Expect(failed[0].Attempt).To(Equal(3))
		Expect(failed[0].Status).To(Equal(string(store.OutcomeErrored)))
		Expect(failed[0].Error).To(ContainSubstring(`unknown agent "researcher"`))
		Expect(e.info(root).Turns).To(Equal(1), "the task.failed notice wakes the spawner")
		Expect(lastUserOf(e.info(root))).To(ContainSubstring(string(platform.EventTaskFailed)))
	})
})

type errContext string

func (e errContext) Error() string { return string(e) }

var _ = Describe("Durable tasks on a shared SQL store", func() {
	It("survive a crash and are retried with the prior-attempts context when SQLite backs the store", func() {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(GinkgoT().TempDir(), "p.db")+
			"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
		Expect(err).NotTo(HaveOccurred())
		shared, err := store.NewSQL(context.Background(), db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		e := newEnv(func(o *platform.Options) { o.Store = shared })
		root := e.root("coordinator")
		var second *core.Request
		e.model.ScriptRun("researcher", 1, calls(use("write_file", map[string]any{"path": "half.txt", "content": "half"})),
			scripted.Turn{Text: "never", Latency: 2 * time.Hour})
		e.model.ScriptRun("researcher", 2, scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			second = req
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "c", Name: "worker_complete", Arguments: `{"summary":"finished"}`}}}, nil
		}}, say("."))
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "build", Agent: "researcher"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(time.Minute)
		e.crash("proc-2")
		e.runFor(2 * time.Hour)
		got, err := e.p.Task(t.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.State).To(Equal(store.TaskDone))
		Expect(got.Result).To(Equal("finished"))
		Expect(second).NotTo(BeNil())
		Expect(second.Messages[0].Content).To(ContainSubstring("### Attempt 1: crashed"))
		Expect(e.p.ReadFile(root, "half.txt")).To(Equal("half"))
		e.close()
		Expect(db.Close()).To(Succeed())
	})
})

var _ = Describe("Durable tasks across processes", func() {
	It("cancelling a task that runs in another process interrupts its in-flight session there, within one task poll", func() {
		e := newEnv(func(o *platform.Options) { o.MaxRunningTasks, o.TaskPollInterval = 1, time.Minute })
		second, err := platform.New(func() platform.Options { o := e.opts; o.Instance = "proc-2"; return o }())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(second.Close()).To(Succeed()) })
		root := e.root("coordinator")
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "still busy", Latency: 2 * time.Hour})
		e.model.ScriptRun("writer", 1,
			scripted.Turn{Latency: 20 * time.Minute, Calls: []scripted.Call{scripted.Use("write_file", map[string]any{"path": "late.md", "content": "written by a cancelled task"})}},
			complete("done", nil))
		_, err = e.p.SpawnTask(root, store.Task{Prompt: "keep proc-1 busy", Agent: "researcher"})
		Expect(err).NotTo(HaveOccurred())
		t2, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(90 * time.Second)
		row, _ := e.p.Task(t2.ID)
		Expect(row.State).To(Equal(store.TaskRunning))
		Expect(row.ClaimedBy).To(Equal("proc-2"))

		e.model.Script("coordinator", calls(use("cancel_task", map[string]any{"task_id": t2.ID})), say("cancelled"))
		e.send(root, "cancel the write-up")
		e.runFor(time.Hour)

		row, _ = e.p.Task(t2.ID)
		Expect(row.State).To(Equal(store.TaskCancelled))
		_, err = e.p.ReadFile(root, "late.md")
		Expect(err).To(HaveOccurred(), "the attempt was interrupted before it wrote")
		as, err := second.Attempts(t2.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(as).To(HaveLen(1))
		var stopped []time.Duration
		for _, ev := range second.Events(as[0].Session) {
			if ev.Type == platform.EventSessionState && ev.Status == string(platform.StateStopped) {
				stopped = append(stopped, ev.Time.Sub(epoch))
			}
		}
		Expect(stopped).To(HaveLen(1), "%v", second.Events(as[0].Session))
		Expect(stopped[0]).To(BeNumerically("<=", 90*time.Second+2*time.Minute), "within one poll of the cancel")
	})
})

var _ = Describe("Durable tasks' running slots", func() {
	It("a task cancelled after its claim, before its attempt's first turn, gives its running slot back: the next ready task runs", func() {
		// Seed 189 orders the actors so that cancel_task lands after the
		// dispatcher claimed task-1 and started its attempt session, but
		// before that session's first turn.
		e := seededEnv(189, func(o *platform.Options) { o.MaxRunningTasks = 1 })
		e.model.Script("coordinator",
			calls(use("spawn_task", map[string]any{"prompt": "a", "agent": "researcher"})),
			calls(use("cancel_task", map[string]any{"task_id": "task-1"})),
			calls(use("spawn_task", map[string]any{"prompt": "b", "agent": "writer"})),
			say("done"), scripted.Turn{Text: "ok", Repeat: true})
		e.model.Script("researcher", scripted.Turn{Text: "a done", Repeat: true})
		e.model.Script("writer", scripted.Turn{Text: "b done", Repeat: true})
		root := e.root("coordinator")
		e.send(root, "go")
		e.runFor(3 * time.Hour)

		c := ofType(e.p.Events(root), platform.EventTaskCancelled)
		Expect(c).To(HaveLen(1))
		Expect(c[0].Status).To(Equal("running"), "cancelled while running")
		as, err := e.p.Attempts("task-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(as).To(HaveLen(1))
		Expect(e.info(as[0].Session).Turns).To(BeZero(), "the interleaving under test: the attempt was stopped before its first turn")
		Expect(e.info(as[0].Session).State).To(Equal(platform.StateStopped))
		Expect(e.p.Task("task-2")).To(HaveField("State", store.TaskDone),
			"task-2 never claimed: the cancelled attempt still holds the only running slot")
		lost, err := e.p.LostTasks(e.sim.Clock().Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(lost).To(BeEmpty())
	})
})
