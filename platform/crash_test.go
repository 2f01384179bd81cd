package platform_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

// dagWorker scripts task workers that take three minutes per model step:
// write progress, report completion with the task's first line, end.
func dagWorker(e *env) {
	var turns []scripted.Turn
	for range 400 {
		turns = append(turns, scripted.Turn{Latency: 3 * time.Minute, Respond: func(req *core.Request) (*core.Response, error) {
			title, _, _ := strings.Cut(req.Messages[0].Content, "\n")
			switch req.Step {
			case 1:
				args, _ := json.Marshal(map[string]string{"path": title + ".progress", "content": "started"})
				return &core.Response{ToolCalls: []core.ToolCall{{ID: "w", Name: "write_file", Arguments: string(args)}}}, nil
			case 2:
				args, _ := json.Marshal(map[string]string{"summary": title + " done"})
				return &core.Response{ToolCalls: []core.ToolCall{{ID: "c", Name: "worker_complete", Arguments: string(args)}}}, nil
			}
			return &core.Response{Text: "ok"}, nil
		}})
	}
	e.model.Script("researcher", turns...)
	e.model.Answer("coordinator", func(*core.Request) (*core.Response, error) { return &core.Response{Text: "noted"}, nil })
}

// taskDAG spawns a diamond and a tail: a, b → c; c → d; a → e.
func taskDAG(e *env, root string) map[string]string {
	ids := map[string]string{}
	spawn := func(name string, parents ...string) {
		var ps []string
		for _, p := range parents {
			ps = append(ps, ids[p])
		}
		t, err := e.p.SpawnTask(root, store.Task{Prompt: name, Agent: "researcher", Parents: ps, MaxAttempts: 10})
		Expect(err).NotTo(HaveOccurred())
		ids[name] = t.ID
	}
	spawn("a")
	spawn("b")
	spawn("c", "a", "b")
	spawn("d", "c")
	spawn("e", "a")
	return ids
}

// crashCampaign runs the DAG under seed, crashing the process after a
// random number of simulator steps, up to crashes times. It returns how
// many crashes happened and how many attempts ran.
func crashCampaign(seed uint64, crashes int) (int, int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	e := bareEnv(func(o *platform.Options) { o.MaxRunningTasks = 2 })
	dagWorker(e)
	root := e.root("coordinator")
	ids := taskDAG(e, root)
	crashed := 0
	for i := 0; i < crashes; i++ {
		steps := rng.IntN(120)
		for range steps {
			if !e.sim.Step() {
				break
			}
		}
		e.crash(fmt.Sprintf("proc-%d", i+2))
		crashed++
		Expect(e.p.RestoreSession(root, platform.SessionOptions{Agent: "coordinator", User: "ada"})).To(Succeed())
	}
	e.runFor(3 * 24 * time.Hour)

	attempts := 0
	doneAt := map[string]time.Time{}
	for name, id := range ids {
		t, err := e.p.Task(id)
		Expect(err).NotTo(HaveOccurred())
		Expect(t.State).To(Equal(store.TaskDone), "seed %d: task %s lost (%s)", seed, name, t.State)
		Expect(t.Result).To(Equal(name + " done"))
		as, _ := e.p.Attempts(id)
		attempts += len(as)
		doneAt[id] = as[len(as)-1].EndedAt
	}
	for name, id := range ids {
		t, _ := e.p.Task(id)
		as, _ := e.p.Attempts(id)
		for _, p := range t.Parents {
			for _, a := range as {
				Expect(a.StartedAt).NotTo(BeTemporally("<", doneAt[p]),
					"seed %d: %s attempt %d started before parent %s was done", seed, name, a.N, p)
			}
		}
	}
	e.close()
	return crashed, attempts
}

var _ = Describe("Crash campaign over a task DAG", func() {
	It("a crash at random points loses no task and never runs a child before its parents are done", func() {
		noLeaks := fixture.LeakCheck()
		const seeds = 60
		totalCrashes, totalAttempts := 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			c, a := crashCampaign(seed, 1+int(seed%3))
			totalCrashes += c
			totalAttempts += a
		}
		// Five tasks, so more than five attempts means retries happened.
		Expect(totalAttempts).To(BeNumerically(">", 5*seeds))
		AddReportEntry("crash campaign", fmt.Sprintf("%d seeds, %d crashes, %d attempts for %d tasks",
			seeds, totalCrashes, totalAttempts, 5*seeds))
		Expect(noLeaks()).To(Succeed())
	})
})

var _ = Describe("Determinism", func() {
	It("the same scenario gives byte-identical event logs on every run", func() {
		run := func() string {
			e := newEnv()
			dagWorker(e)
			e.model.Script("writer", say("w"))
			root := e.root("coordinator")
			taskDAG(e, root)
			e.runFor(10 * time.Minute)
			e.crash("proc-2")
			e.runFor(24 * time.Hour)
			// The observer's stream spans both processes.
			b, err := json.Marshal(e.seen)
			Expect(err).NotTo(HaveOccurred())
			e.close()
			return string(b)
		}
		first := run()
		Expect(first).To(ContainSubstring(`"worker.complete"`))
		Expect(first).To(ContainSubstring(`"task.retry"`))
		for range 3 {
			Expect(run()).To(Equal(first))
		}
	})
})
