package platform_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

// another starts a second process on e's store, clock, ids and model, as
// instance, with mod applied to a copy of e's options; it is closed when
// the spec ends unless the spec crashed or closed it.
func (e *env) another(instance string, mod ...func(*platform.Options)) *platform.Platform {
	GinkgoHelper()
	o := e.opts
	o.Instance = instance
	for _, m := range mod {
		m(&o)
	}
	p, err := platform.New(o)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(p.Close()).To(Succeed()) })
	return p
}

// busyElsewhere makes proc-1 (e.p, which runs one task at a time) busy
// with a task that runs for hours, so that the next task root spawns is
// claimed by another process at its task poll.
func busyElsewhere(e *env, root string) {
	GinkgoHelper()
	e.model.ScriptRun("researcher", 1, scripted.Turn{Text: "still busy", Latency: 3 * time.Hour})
	_, err := e.p.SpawnTask(root, store.Task{Prompt: "keep proc-1 busy", Agent: "researcher"})
	Expect(err).NotTo(HaveOccurred())
}

// sharedStores are the durable stores processes share in these specs:
// the memory store (nil: the env's own), SQLite and PostgreSQL (when the
// test server is there; fixture.Postgres skips the spec otherwise).
var sharedStores = []struct {
	name string
	open func() store.Store
}{
	{"the memory store", func() store.Store { return nil }},
	{"SQLite", func() store.Store {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(GinkgoT().TempDir(), "p.db")+
			"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(db.Close)
		s, err := store.NewSQL(context.Background(), db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		return s
	}},
	{"PostgreSQL", func() store.Store {
		s, err := store.OpenPostgres(context.Background(), fixture.Postgres(GinkgoT()), store.PostgresOptions{Fresh: true, MaxConns: 2})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		return s
	}},
}

var _ = Describe("Events across processes sharing a store", func() {
	for _, b := range sharedStores {
		Context("on "+b.name, func() {
			eventsAcrossProcesses(b.open)
		})
	}
})

func eventsAcrossProcesses(open func() store.Store) {
	var shared store.Store
	// Opened before the env, so that its connections are there before
	// the env's goroutine check starts, and closed after it.
	BeforeEach(func() { shared = open() })
	// Processes sharing a store poll it; attempts may run for hours.
	polling := func(o *platform.Options) {
		o.MaxRunningTasks, o.TaskPollInterval, o.TaskTimeout = 1, time.Minute, 4*time.Hour
		if shared != nil {
			o.Store = shared
		}
	}

	It("a task attempt's outcome reaches its spawner in the process where the spawner is live, in order, and wakes it within one task poll", func() {
		e := newEnv(polling)
		second := e.another("proc-2")
		root := e.root("coordinator")
		busyElsewhere(e, root)
		e.model.ScriptRun("writer", 1, scripted.Turn{Latency: 10 * time.Minute,
			Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "written", "metadata": map[string]any{"pages": 3}})}}, say("."))
		var woken *core.Request
		e.model.Script("coordinator", scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			woken = req
			return &core.Response{Text: "noted"}, nil
		}})
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(30 * time.Minute)

		row, _ := e.p.Task(t.ID)
		Expect(row.State).To(Equal(store.TaskDone))
		as, _ := e.p.Attempts(t.ID)
		Expect(as[0].Instance).To(Equal("proc-2"), "the attempt ran in the other process")
		var mine []platform.EventType
		var doneAt time.Time
		for _, ev := range e.p.Events(root) {
			if ev.Task == t.ID {
				mine = append(mine, ev.Type)
			}
			if ev.Type == platform.EventWorkerComplete && ev.Task == t.ID {
				Expect(ev.Text).To(Equal("written"))
				Expect(string(ev.Metadata)).To(Equal(`{"pages":3}`))
				Expect(ev.Attempt).To(Equal(1))
				Expect(ev.From).To(Equal("proc-2"), "a delivery names the process that emitted it")
				doneAt = ev.Time
			}
		}
		Expect(mine).To(Equal([]platform.EventType{platform.EventTaskCreated, platform.EventTaskStarted, platform.EventWorkerComplete}),
			"the spawner's log, in the order the events were emitted")
		Expect(as[0].EndedAt).NotTo(BeZero())
		Expect(doneAt.Sub(as[0].EndedAt)).To(BeNumerically("<=", time.Minute), "delivered within one task poll")
		Expect(woken).NotTo(BeNil(), "the spawner was re-enqueued and woke")
		Expect(lastUser(woken)).To(ContainSubstring(`"event":"worker.complete"`))
		Expect(lastUser(woken)).To(ContainSubstring(t.ID))
		Expect(ofType(second.Events(root), platform.EventWorkerComplete)).To(HaveLen(1),
			"the process that ran the attempt still shows what it sent")

		e.runFor(time.Hour)
		Expect(ofType(e.p.Events(root), platform.EventWorkerComplete)).To(HaveLen(1), "delivered exactly once")
	})

	It("an outcome for a spawner live in no process survives the crash of the process that ran the attempt, and reaches the spawner when it is reopened", func() {
		e := newEnv(polling)
		second := e.another("proc-2")
		root := e.root("coordinator")
		busyElsewhere(e, root)
		e.model.ScriptRun("writer", 1, scripted.Turn{Latency: 20 * time.Minute,
			Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "written"})}}, say("."))
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(5 * time.Minute)
		e.p.Crash() // the spawner's process dies; proc-2 runs the attempt on
		e.runFor(30 * time.Minute)
		row, _ := second.Task(t.ID)
		Expect(row.State).To(Equal(store.TaskDone))
		second.Crash() // and so does the process that sent the outcome

		var woken *core.Request
		e.model.Script("coordinator", scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
			woken = req
			return &core.Response{Text: "noted"}, nil
		}})
		e.opts.Instance = "proc-3"
		third, err := platform.New(e.opts)
		Expect(err).NotTo(HaveOccurred())
		e.p = third
		Expect(third.RestoreSession(root, platform.SessionOptions{Agent: "coordinator", User: "ada"})).To(Succeed())
		e.settle()
		done := ofType(third.Events(root), platform.EventWorkerComplete)
		Expect(done).To(HaveLen(1), "%v", types(third.Events(root)))
		Expect(done[0].Task).To(Equal(t.ID))
		Expect(done[0].Text).To(Equal("written"))
		Expect(types(third.Events(root))[:3]).To(Equal([]platform.EventType{platform.EventSessionCreated,
			platform.EventWorkerComplete, platform.EventSessionRestored}),
			"what proc-2 sent while the spawner was live nowhere (task.started reached proc-1 before it died), before the session is marked restored")
		Expect(woken).NotTo(BeNil(), "the reopened spawner is woken by the outcome, as it would have been where it lived")
		Expect(lastUser(woken)).To(ContainSubstring(t.ID))
	})

	// mailIn takes what waits in a session's mailbox in the store.
	mailIn := func(p *platform.Platform, session string) []store.Mail {
		GinkgoHelper()
		mail, err := p.Store().TakeMail(context.Background(), []string{session})
		Expect(err).NotTo(HaveOccurred())
		return mail
	}

	It("mail waits for a session live nowhere for the mail TTL, then the sweepers drop it, and the process that sent it forgets it", func() {
		e := newEnv(polling)
		second := e.another("proc-2", func(o *platform.Options) { o.NoSweepers = false })
		root := e.root("coordinator")
		busyElsewhere(e, root)
		e.model.ScriptRun("writer", 1, scripted.Turn{Latency: 20 * time.Minute,
			Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "written"})}}, say("."))
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(5 * time.Minute)
		e.p.Crash() // the spawner's process dies, and nothing reopens the spawner
		e.runFor(30 * time.Minute)
		row, _ := second.Task(t.ID)
		Expect(row.State).To(Equal(store.TaskDone))
		sent, _ := second.MailBookkeeping()
		Expect(sent).To(BeNumerically(">=", 2), "task.started and worker.complete, and the notice that wakes the spawner")

		e.runFor(platform.DefaultMailTTL + platform.DefaultWorkspaceSweepEvery)
		Expect(mailIn(second, root)).To(BeEmpty(), "expired: the store keeps no mail past the TTL")
		sent, _ = second.MailBookkeeping()
		Expect(sent).To(BeZero(), "proc-2 keeps nothing for mail that is gone")
		Expect(ofType(second.Events(root), platform.EventWorkerComplete)).To(HaveLen(1),
			"proc-2's log of what it emitted is a log, not mail: it stays")

		e.opts.Instance = "proc-3"
		third, err := platform.New(e.opts)
		Expect(err).NotTo(HaveOccurred())
		e.p = third
		Expect(third.RestoreSession(root, platform.SessionOptions{Agent: "coordinator", User: "ada"})).To(Succeed())
		e.settle()
		Expect(ofType(third.Events(root), platform.EventWorkerComplete)).To(BeEmpty(), "a session reopened after the TTL gets no stale outcome")
		Expect(third.Task(t.ID)).To(HaveField("State", store.TaskDone), "the row still says how the task ended")
	})

	It("a session that will never run again takes no more mail: inbox expiry closes its mailbox, and mail to it is dropped", func() {
		e := newEnv(polling, func(o *platform.Options) { o.NoSweepers = false })
		e.another("proc-2")
		root := e.root("coordinator")
		busyElsewhere(e, root)
		e.model.ScriptRun("writer", 1, scripted.Turn{Latency: 20 * time.Minute,
			Calls: []scripted.Call{use("worker_complete", map[string]any{"summary": "written"})}}, say("."))
		t, err := e.p.SpawnTask(root, store.Task{Prompt: "write it up", Agent: "writer"})
		Expect(err).NotTo(HaveOccurred())
		e.runFor(2 * time.Minute)
		_, boxes := e.p.MailBookkeeping()
		Expect(boxes).To(Equal(1), "the root's mailbox is open")
		Expect(e.p.CloseSession(root)).To(Succeed())
		e.runFor(platform.DefaultInboxSweepInterval)
		_, boxes = e.p.MailBookkeeping()
		Expect(boxes).To(BeZero(), "inbox expiry closed the ended session's mailbox")

		e.runFor(30 * time.Minute)
		row, _ := e.p.Task(t.ID)
		Expect(row.State).To(Equal(store.TaskDone))
		Expect(ofType(e.p.Events(root), platform.EventWorkerComplete)).To(BeEmpty(), "nothing is delivered to a closed session")
		e.runFor(platform.DefaultMailTTL + platform.DefaultWorkspaceSweepEvery)
		Expect(mailIn(e.p, root)).To(BeEmpty(), "what was posted to it after it closed is gone past the TTL")
	})

	It("workspace cleanup never deletes the workspace of a tree that is live in another process sharing the store, and deletes it once that process is gone", func() {
		e := newEnv(polling)
		sweeping := e.another("proc-2", func(o *platform.Options) { o.NoSweepers = false })
		idle := e.root("writer") // no task, no schedule, never written again
		Expect(e.p.WriteFile(idle, "notes.md", "kept while the session lives")).To(Succeed())

		e.runFor(30 * time.Hour)
		Expect(sweeping.ReadFile(idle, "notes.md")).To(Equal("kept while the session lives"),
			"proc-1 still has the session: its tree is not orphaned")
		Expect(ofType(sweeping.Events(""), platform.EventWorkspaceDeleted)).To(BeEmpty())

		e.p.Crash() // the session is gone with its process; its presence lapses within three task polls
		e.runFor(6 * time.Hour)
		_, err := sweeping.ReadFile(idle, "notes.md")
		Expect(err).To(MatchError(store.ErrNotFound), "orphaned now, and written more than the grace ago")
		del := ofType(sweeping.Events(""), platform.EventWorkspaceDeleted)
		Expect(del).To(HaveLen(1))
		Expect(del[0].Path).To(Equal(platform.WorkspacePrefix(idle)))
	})
}
