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

// rows is a store whose task list is what a spec says, for the states no
// legal sequence of calls leaves behind.
type rows struct {
	store.Store
	tasks []store.Task
}

func (r rows) ListTasks(context.Context, store.TaskFilter) ([]store.Task, error) { return r.tasks, nil }

var _ = Describe("Crash and restart", func() {
	It("a restart is a crash and a new process on the durable store that reopens the root sessions under their ids", func() {
		e := newEnv()
		e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "never", Latency: time.Hour})
		root := e.root("coordinator")
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "long", Agent: "researcher"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(time.Minute)
		old := e.p

		e.opts.Instance = "proc-2"
		next, restored, err := old.Restart(e.opts, []platform.Root{
			{ID: root, Options: platform.SessionOptions{Agent: "coordinator", User: "ada"}},
			{ID: "s-gone", Options: platform.SessionOptions{Agent: "no-such-agent"}},
		})
		Expect(err).NotTo(HaveOccurred())
		e.p = next
		Expect(restored).To(Equal([]string{root}), "a root whose agent is unknown is left out")
		Expect(next.Store()).To(BeIdenticalTo(old.Store()))
		Expect(next.Instance()).To(Equal("proc-2"))
		Expect(ofType(next.Events(root), platform.EventSessionRestored)).To(HaveLen(1))
		row, _ := next.Task(t.ID)
		Expect(row.State).To(Equal(store.TaskRunning), "the crashed attempt is in the store until its lease lapses")
		Expect(row.ClaimedBy).To(Equal("proc-1"))
	})
})

var _ = Describe("Close", func() {
	It("writes nothing: a task the dispatcher is about to claim as the platform closes is neither claimed nor failed, and the next process runs it", func() {
		// The agent's tool has an operator actor close the platform; seed
		// 3 orders the actors so that Close lands while the dispatcher is
		// between its closing check and its claim of the task just
		// spawned.
		var e *env
		shutdown := &core.Tool{Description: "shut down", Run: func(context.Context, core.ToolCall, any) (any, error) {
			e.sim.Go("operator", func() {
				defer GinkgoRecover()
				Expect(e.p.Close()).To(Succeed())
			})
			return "closing", nil
		}}
		e = seededEnv(3, func(o *platform.Options) {
			o.Agents["ops"] = &core.Agent{ID: "ops", Tools: core.Tools{"shutdown": shutdown}}
		})
		e.model.Script("ops", calls(use("spawn_task", map[string]any{"prompt": "a", "agent": "researcher", "max_attempts": 1}),
			use("shutdown", map[string]any{})), say("bye"))
		e.model.Script("researcher", say("a done"))
		root := e.root("ops")
		e.send(root, "go")
		e.settle()

		as, err := e.p.Attempts("task-1")
		Expect(err).NotTo(HaveOccurred())
		for _, a := range as {
			Expect(a.Outcome).NotTo(Equal(store.OutcomeErrored), "Close wrote attempt %d as %s: %q", a.N, a.Outcome, a.Error)
		}
		Expect(as).To(BeEmpty(), "nothing was claimed after Close")
		Expect(e.p.Task("task-1")).To(HaveField("State", store.TaskReady))

		e.opts.Instance = "proc-2"
		e.p, err = platform.New(e.opts)
		Expect(err).NotTo(HaveOccurred())
		e.runFor(time.Hour)
		Expect(e.p.Task("task-1")).To(HaveField("State", store.TaskDone))
	})
})

var _ = Describe("No task is lost", func() {
	lease := epoch.Add(30 * time.Minute)
	lost := func(e *env, at time.Time) []platform.LostReason {
		GinkgoHelper()
		ls, err := e.p.LostTasks(at)
		Expect(err).NotTo(HaveOccurred())
		out := []platform.LostReason{}
		for _, l := range ls {
			out = append(out, l.Reason)
		}
		return out
	}

	It("a task running in a process that is gone is lost once its lease lapsed by the reap grace and the lost-task grace, with no process reaping it", func() {
		e := newEnv(func(o *platform.Options) {
			o.Store = rows{Store: store.NewMemory(), tasks: []store.Task{
				{ID: "t-1", State: store.TaskRunning, ClaimedBy: "proc-gone", LeaseUntil: lease},
				{ID: "t-2", State: store.TaskRunning, ClaimedBy: "proc-1", LeaseUntil: lease},
			}}
			o.ReapGrace, o.LostTaskGrace = time.Minute, 2*time.Minute
		})
		Expect(lost(e, lease.Add(3*time.Minute-time.Second))).To(BeEmpty())
		Expect(lost(e, lease.Add(3*time.Minute))).To(Equal([]platform.LostReason{platform.LostUnreaped}),
			"only the other process's task: this process runs its own")
		e.close()
	})

	It("a ready task is lost when it waited past the lost-task grace while this process had room to claim it", func() {
		ready := store.Task{ID: "t-1", State: store.TaskReady, UpdatedAt: epoch}
		busy := func(n int) []store.Task {
			ts := []store.Task{ready}
			for range n {
				ts = append(ts, store.Task{ID: "busy", State: store.TaskRunning, ClaimedBy: "proc-1", LeaseUntil: lease})
			}
			return ts
		}
		e := newEnv(func(o *platform.Options) {
			o.Store = rows{Store: store.NewMemory(), tasks: busy(1)}
			o.MaxRunningTasks = 2
		})
		Expect(lost(e, epoch.Add(time.Minute))).To(BeEmpty(), "within the default grace of a minute")
		Expect(lost(e, epoch.Add(time.Minute+time.Second))).To(Equal([]platform.LostReason{platform.LostUnclaimed}))
		e.close()

		full := newEnv(func(o *platform.Options) {
			o.Store = rows{Store: store.NewMemory(), tasks: busy(2)}
			o.MaxRunningTasks = 2
		})
		Expect(lost(full, epoch.Add(time.Hour))).To(BeEmpty(), "no room: the task waits its turn")
		full.close()
	})

	It("a todo task whose parents are all done is lost; one behind a parent that is not done, or a blocked or terminal one, is not", func() {
		e := newEnv(func(o *platform.Options) {
			o.Store = rows{Store: store.NewMemory(), tasks: []store.Task{
				{ID: "p-done", State: store.TaskDone},
				{ID: "p-failed", State: store.TaskFailed},
				{ID: "c-1", State: store.TaskTodo, Parents: []string{"p-done"}},
				{ID: "c-2", State: store.TaskTodo, Parents: []string{"p-done", "p-failed"}},
				{ID: "b", State: store.TaskBlocked},
				{ID: "x", State: store.TaskCancelled},
			}}
		})
		ls, err := e.p.LostTasks(epoch.Add(time.Hour))
		Expect(err).NotTo(HaveOccurred())
		Expect(ls).To(HaveLen(1))
		Expect(ls[0].Task.ID).To(Equal("c-1"))
		Expect(ls[0].Reason).To(Equal(platform.LostUnpromoted))
		e.close()
	})
})
