package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	_ "modernc.org/sqlite"

	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform/store"
)

func TestStore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Store")
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

type backend struct {
	name string
	make func() (store.Store, func())
}

func openSQLite(dir string) *sql.DB {
	dsn := "file:" + filepath.Join(dir, "platform.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	Expect(err).NotTo(HaveOccurred())
	return db
}

// postgresDSN is the test server's address (fixture.Postgres: without one
// the spec skips, or fails in CI).
func postgresDSN() string { return fixture.Postgres(GinkgoT()) }

// openPostgres is a store on a fresh schema of the test server, dropped
// when the spec ends.
func openPostgres() *store.SQL {
	s, err := store.OpenPostgres(context.Background(), postgresDSN(), store.PostgresOptions{Fresh: true})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(s.Close()).To(Succeed()) })
	return s
}

// race runs f(0), ..., f(n-1) at once and waits for them all.
func race(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

// backends are the three stores the one conformance suite runs on.
var backends = []backend{
	{"Memory", func() (store.Store, func()) { return store.NewMemory(), func() {} }},
	{"SQL (SQLite)", func() (store.Store, func()) {
		db := openSQLite(GinkgoT().TempDir())
		s, err := store.NewSQL(context.Background(), db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		return s, func() { Expect(db.Close()).To(Succeed()) }
	}},
	{"SQL (PostgreSQL)", func() (store.Store, func()) { return openPostgres(), func() {} }},
}

var _ = Describe("Tasks", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			var (
				s       store.Store
				closeDB func()
			)
			BeforeEach(func() {
				s, closeDB = b.make()
				DeferCleanup(closeDB)
			})

			create := func(id string, parents ...string) store.Task {
				t, err := s.CreateTask(ctx, store.Task{ID: id, Prompt: id, Spawner: "s1", Root: "s1", Parents: parents,
					MaxAttempts: 3, CreatedAt: t0})
				Expect(err).NotTo(HaveOccurred())
				return t
			}
			claim := func(inst string) store.Claim {
				c, ok, err := s.Claim(ctx, inst, t0, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				return c
			}
			finish := func(c store.Claim, o store.Outcome) (store.Task, []string) {
				t, promoted, err := s.FinishAttempt(ctx, c.Task.ID, c.Attempt.N, c.Attempt.Instance, store.Finish{Outcome: o, Summary: "s", At: t0})
				Expect(err).NotTo(HaveOccurred())
				return t, promoted
			}

			It("a task with parents stays todo until every parent is done, then is promoted to ready", func() {
				Expect(create("a").State).To(Equal(store.TaskReady))
				create("b")
				Expect(create("c", "a", "b").State).To(Equal(store.TaskTodo))
				_, promoted := finish(claim("p"), store.OutcomeCompleted)
				Expect(promoted).To(BeEmpty())
				_, promoted = finish(claim("p"), store.OutcomeCompleted)
				Expect(promoted).To(Equal([]string{"c"}))
				Expect(claim("p").Task.ID).To(Equal("c"))
				_, err := s.CreateTask(ctx, store.Task{ID: "d", Parents: []string{"nope"}, MaxAttempts: 1})
				Expect(err).To(MatchError(store.ErrNotFound))
				_, err = s.CreateTask(ctx, store.Task{ID: "a", MaxAttempts: 1})
				Expect(err).To(MatchError(store.ErrExists))
			})

			It("a parent's children are promoted in the order they were created, whatever their ids", func() {
				create("p")
				for _, id := range []string{"task-9", "task-10", "task-1", "a"} {
					create(id, "p")
				}
				_, promoted := finish(claim("w"), store.OutcomeCompleted)
				Expect(promoted).To(Equal([]string{"task-9", "task-10", "task-1", "a"}))
				var claimed []string
				for range 4 {
					claimed = append(claimed, claim("w").Task.ID)
				}
				Expect(claimed).To(Equal(promoted), "and claimed oldest first")
			})

			It("a task that names one parent twice waits for it once and is promoted once", func() {
				create("p")
				Expect(create("c", "p", "p").State).To(Equal(store.TaskTodo))
				_, promoted := finish(claim("w"), store.OutcomeCompleted)
				Expect(promoted).To(Equal([]string{"c"}))
			})

			It("a completion's metadata comes back byte for byte, as the worker wrote it", func() {
				create("a")
				c := claim("w")
				meta := json.RawMessage(`{ "changed_files": ["a.go"],  "tests_run" : 3 }`)
				t, _, err := s.FinishAttempt(ctx, "a", c.Attempt.N, "w", store.Finish{Outcome: store.OutcomeCompleted, Summary: "ok", Metadata: meta, At: t0})
				Expect(err).NotTo(HaveOccurred())
				Expect(string(t.Metadata)).To(Equal(string(meta)))
				got, err := s.GetTask(ctx, "a")
				Expect(err).NotTo(HaveOccurred())
				Expect(string(got.Metadata)).To(Equal(string(meta)))
				as, err := s.Attempts(ctx, "a")
				Expect(err).NotTo(HaveOccurred())
				Expect(string(as[0].Metadata)).To(Equal(string(meta)))
			})

			It("a duplicate id is refused before its parents are looked at", func() {
				create("a")
				_, err := s.CreateTask(ctx, store.Task{ID: "a", Parents: []string{"nope"}, MaxAttempts: 1})
				Expect(err).To(MatchError(store.ErrExists))
			})

			It("cancelled or failed parents never promote their children", func() {
				create("a")
				create("b")
				create("c", "a")
				create("d", "b")
				_, _, err := s.Cancel(ctx, "a", "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				for range 3 {
					finish(claim("p"), store.OutcomeCrashed)
				}
				Expect(s.GetTask(ctx, "b")).To(HaveField("State", store.TaskFailed))
				for _, id := range []string{"c", "d"} {
					Expect(s.GetTask(ctx, id)).To(HaveField("State", store.TaskTodo))
				}
				_, ok, _ := s.Claim(ctx, "p", t0, time.Minute)
				Expect(ok).To(BeFalse())
			})

			It("retries consecutive crash, timeout and error attempts up to max_attempts, then fails the task", func() {
				create("a")
				for i, o := range []store.Outcome{store.OutcomeCrashed, store.OutcomeTimedOut} {
					t, _ := finish(claim("p"), o)
					Expect(t.State).To(Equal(store.TaskReady))
					Expect(t.Consecutive).To(Equal(i + 1))
				}
				t, _ := finish(claim("p"), store.OutcomeErrored)
				Expect(t.State).To(Equal(store.TaskFailed))
				as, err := s.Attempts(ctx, "a")
				Expect(err).NotTo(HaveOccurred())
				Expect(as).To(HaveLen(3))
			})

			It("only the spawner may unblock or cancel; unblock appends timestamped context", func() {
				create("a")
				finish(claim("p"), store.OutcomeBlocked)
				_, err := s.Unblock(ctx, "a", "intruder", "x", t0)
				Expect(err).To(MatchError(store.ErrNotOwner))
				_, _, err = s.Cancel(ctx, "a", "intruder", t0)
				Expect(err).To(MatchError(store.ErrNotOwner))
				t, err := s.Unblock(ctx, "a", "s1", "use main", t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(t.State).To(Equal(store.TaskReady))
				Expect(t.Context).To(Equal([]store.ContextEntry{{At: t0.Add(time.Hour), Text: "use main"}}))
				_, err = s.Unblock(ctx, "a", "s1", "", t0)
				Expect(err).To(MatchError(store.ErrState))
			})

			It("an attempt reported after its claim was cancelled, reaped or re-claimed is stale", func() {
				create("a")
				c := claim("p1")
				_, _, err := s.Cancel(ctx, "a", "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				_, _, err = s.FinishAttempt(ctx, "a", c.Attempt.N, "p1", store.Finish{Outcome: store.OutcomeCompleted, At: t0})
				Expect(err).To(MatchError(store.ErrStale))
				as, _ := s.Attempts(ctx, "a")
				Expect(as[0].Outcome).To(Equal(store.OutcomeCancelled))
			})

			It("reaps running attempts whose lease lapsed as crashed", func() {
				create("a")
				create("b")
				claim("p1")
				at, ok, err := s.NextLease(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(at).To(BeTemporally("==", t0.Add(time.Minute)))
				reaped, err := s.Reap(ctx, t0.Add(30*time.Second))
				Expect(err).NotTo(HaveOccurred())
				Expect(reaped).To(BeEmpty())
				reaped, err = s.Reap(ctx, t0.Add(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(reaped).To(HaveLen(1))
				Expect(reaped[0].State).To(Equal(store.TaskReady))
				as, _ := s.Attempts(ctx, "a")
				Expect(as[0].Outcome).To(Equal(store.OutcomeCrashed))
			})

			It("claims cannot be double-taken by processes racing on one store", func() {
				const tasks, procs = 40, 8
				for i := range tasks {
					create(fmt.Sprintf("t%02d", i))
				}
				var mu sync.Mutex
				taken := map[string]string{}
				race(procs, func(p int) {
					inst := fmt.Sprintf("proc-%d", p)
					for {
						c, ok, err := s.Claim(ctx, inst, t0, time.Minute)
						Expect(err).NotTo(HaveOccurred())
						if !ok {
							return
						}
						mu.Lock()
						Expect(taken).NotTo(HaveKey(c.Task.ID), "claimed twice")
						taken[c.Task.ID] = inst
						mu.Unlock()
					}
				})
				Expect(taken).To(HaveLen(tasks))
				for id := range taken {
					as, _ := s.Attempts(ctx, id)
					Expect(as).To(HaveLen(1))
				}
			})
		})
	}
})

var _ = Describe("Schedules and files", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			var (
				s       store.Store
				closeDB func()
			)
			BeforeEach(func() {
				s, closeDB = b.make()
				DeferCleanup(closeDB)
			})

			It("fires a due schedule once per expected next run, and only its user deletes it", func() {
				sc := store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleCron, Cron: "0 * * * *", State: store.ScheduleActive,
					CreatedAt: t0, NextRun: t0.Add(time.Hour), ExpiresAt: t0.Add(72 * time.Hour)}
				Expect(s.CreateSchedule(ctx, sc)).To(Succeed())
				Expect(s.Due(ctx, t0)).To(BeEmpty())
				due, err := s.Due(ctx, t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(due).To(HaveLen(1))
				lease, led, err := s.TryLead(ctx, "ticker", "a", t0.Add(time.Hour), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(led).To(BeTrue())
				Expect(s.Fire(ctx, lease, "s1", due[0].NextRun, t0.Add(2*time.Hour), t0.Add(time.Hour))).To(BeTrue())
				Expect(s.Fire(ctx, lease, "s1", due[0].NextRun, t0.Add(2*time.Hour), t0.Add(time.Hour))).To(BeFalse(), "a second ticker loses")
				next, ok, _ := s.NextDue(ctx)
				Expect(ok).To(BeTrue())
				Expect(next).To(BeTemporally("==", t0.Add(2*time.Hour)))
				Expect(s.DeleteSchedule(ctx, "s1", "bob")).To(MatchError(store.ErrNotFound))
				Expect(s.Expired(ctx, t0.Add(72*time.Hour))).To(HaveLen(1))
				Expect(s.Complete(ctx, "s1", "expired")).To(BeTrue())
				Expect(s.Complete(ctx, "s1", "expired")).To(BeFalse())
				got, _ := s.GetSchedule(ctx, "s1")
				Expect(got.Runs).To(Equal(1))
				Expect(got.Reason).To(Equal("expired"))
			})

			It("answers the next due time as of the last write to any schedule row", func() {
				next := func() time.Duration {
					at, ok, err := s.NextDue(ctx)
					Expect(err).NotTo(HaveOccurred())
					if !ok {
						return -1
					}
					return at.Sub(t0)
				}
				Expect(next()).To(Equal(time.Duration(-1)), "no schedule")
				mk := func(id string, at time.Duration) {
					Expect(s.CreateSchedule(ctx, store.Schedule{ID: id, User: "ada", Kind: store.ScheduleLoop,
						State: store.ScheduleActive, CreatedAt: t0, NextRun: t0.Add(at)})).To(Succeed())
				}
				mk("a", 3*time.Hour)
				Expect(next()).To(Equal(3 * time.Hour))
				mk("b", 2*time.Hour)
				Expect(next()).To(Equal(2*time.Hour), "a new row due earlier")
				lease, led, err := s.TryLead(ctx, "ticker", "p", t0.Add(2*time.Hour), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(led).To(BeTrue())
				Expect(s.Fire(ctx, lease, "b", t0.Add(2*time.Hour), t0.Add(4*time.Hour), t0.Add(2*time.Hour))).To(BeTrue())
				Expect(next()).To(Equal(3*time.Hour), "b fired and moved past a")
				Expect(s.SetNext(ctx, "b", t0.Add(time.Hour))).To(Succeed())
				Expect(next()).To(Equal(time.Hour), "b's next run set earlier")
				Expect(s.Complete(ctx, "b", "loop_complete")).To(BeTrue())
				Expect(next()).To(Equal(3*time.Hour), "b completed")
				Expect(s.DeleteSchedule(ctx, "a", "ada")).To(Succeed())
				Expect(next()).To(Equal(time.Duration(-1)), "a deleted: nothing active")
			})

			It("a store that counts its schedule writes counts every write that can move the next due time, and no read", func() {
				c, ok := s.(store.ScheduleWriteCounter)
				if !ok {
					Skip(b.name + " does not count its schedule writes")
				}
				last := c.ScheduleWrites()
				moved := func(what string) {
					GinkgoHelper()
					Expect(c.ScheduleWrites()).To(BeNumerically(">", last), what)
					last = c.ScheduleWrites()
				}
				still := func(what string) {
					GinkgoHelper()
					Expect(c.ScheduleWrites()).To(Equal(last), what)
				}
				Expect(s.CreateSchedule(ctx, store.Schedule{ID: "a", User: "ada", Kind: store.ScheduleLoop,
					State: store.ScheduleActive, CreatedAt: t0, NextRun: t0.Add(time.Hour)})).To(Succeed())
				moved("create")
				_, _, _ = s.NextDue(ctx)
				_, _ = s.Due(ctx, t0.Add(time.Hour))
				_, _ = s.GetSchedule(ctx, "a")
				_, _ = s.ListSchedules(ctx, "ada")
				_, _ = s.Expired(ctx, t0)
				lease, _, err := s.TryLead(ctx, "ticker", "p", t0.Add(time.Hour), time.Minute)
				Expect(err).NotTo(HaveOccurred())
				still("reads and a lease")
				Expect(s.Fire(ctx, lease, "a", t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(time.Hour))).To(BeTrue())
				moved("fire")
				Expect(s.SetNext(ctx, "a", t0.Add(90*time.Minute))).To(Succeed())
				moved("set next")
				Expect(s.Complete(ctx, "a", "loop_complete")).To(BeTrue())
				moved("complete")
				Expect(s.DeleteSchedule(ctx, "a", "ada")).To(Succeed())
				moved("delete")
			})

			It("a store that appends its due rows appends what Due returns, after what the slice held", func() {
				a, ok := s.(store.DueAppender)
				if !ok {
					Skip(b.name + " does not append its due rows")
				}
				for i, at := range []time.Duration{2 * time.Hour, time.Hour, 3 * time.Hour} {
					Expect(s.CreateSchedule(ctx, store.Schedule{ID: fmt.Sprintf("s%d", i), User: "ada", Kind: store.ScheduleLoop,
						State: store.ScheduleActive, CreatedAt: t0, NextRun: t0.Add(at)})).To(Succeed())
				}
				want, err := s.Due(ctx, t0.Add(2*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(want).To(HaveLen(2))
				kept := store.Schedule{ID: "kept", NextRun: t0.Add(10 * time.Hour)} // stays first: only what is appended is sorted
				got, err := a.AppendDue(ctx, []store.Schedule{kept}, t0.Add(2*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal(append([]store.Schedule{kept}, want...)))
			})

			It("lists due rows earliest first, and rows due at the same instant in the order they were created", func() {
				for i, at := range []time.Duration{2 * time.Hour, time.Hour, 2 * time.Hour, time.Hour, 3 * time.Hour} {
					Expect(s.CreateSchedule(ctx, store.Schedule{ID: fmt.Sprintf("s%d", i), User: "ada", Kind: store.ScheduleOnce,
						State: store.ScheduleActive, CreatedAt: t0, NextRun: t0.Add(at)})).To(Succeed())
				}
				due, err := s.Due(ctx, t0.Add(2*time.Hour))
				Expect(err).NotTo(HaveOccurred())
				ids := make([]string, len(due))
				for i, d := range due {
					ids[i] = d.ID
				}
				Expect(ids).To(Equal([]string{"s1", "s3", "s0", "s2"}))
			})

			It("a task and a schedule keep their creator's authority and their tree's root through every read and change", func() {
				auth := store.Authority{Excluded: []string{"write_file", "platform:ask_user_question"}, Restricted: true,
					Allowed: []string{}}
				Expect(s.CreateTask(ctx, store.Task{ID: "t1", Prompt: "p", Spawner: "child", Root: "root", MaxAttempts: 1,
					CreatedAt: t0, Authority: auth})).Error().NotTo(HaveOccurred())
				c, ok, err := s.Claim(ctx, "proc-1", t0, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(c.Task.Authority).To(Equal(auth))
				Expect(c.Task.Authority.Allowed).NotTo(BeNil(), "an empty allowlist is not no allowlist")
				sc := store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, Origin: "child",
					Root: "root", Authority: auth, CreatedAt: t0, NextRun: t0.Add(time.Hour)}
				Expect(s.CreateSchedule(ctx, sc)).To(Succeed())
				sc.Authority.Excluded[0] = "changed by the caller"
				due, err := s.Due(ctx, t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(due).To(HaveLen(1))
				Expect(due[0].Root).To(Equal("root"))
				Expect(due[0].Authority.Excluded).To(Equal([]string{"write_file", "platform:ask_user_question"}))
				Expect(due[0].Authority.Restricted).To(BeTrue())
			})
			lead := func(holder string, at time.Time) (store.Lease, bool) {
				l, led, err := s.TryLead(ctx, "ticker", holder, at, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				return l, led
			}

			It("grants the leader lease to one holder until it lapses", func() {
				_, led := lead("a", t0)
				Expect(led).To(BeTrue())
				_, led = lead("b", t0.Add(30*time.Second))
				Expect(led).To(BeFalse())
				_, led = lead("a", t0.Add(30*time.Second))
				Expect(led).To(BeTrue())
				_, led = lead("b", t0.Add(91*time.Second))
				Expect(led).To(BeTrue())
			})

			It("tells a follower who leads and when the lease lapses, so it can take over within one lease", func() {
				a, _ := lead("a", t0)
				Expect(a).To(Equal(store.Lease{Name: "ticker", Holder: "a", Token: 1, Until: t0.Add(time.Minute)}))
				seen, led := lead("b", t0.Add(10*time.Second))
				Expect(led).To(BeFalse())
				Expect(seen).To(Equal(a), "the follower sees the leader's lease as it stands")
				b, led := lead("b", seen.Until)
				Expect(led).To(BeTrue(), "the lease has lapsed at its Until")
				Expect(b.Holder).To(Equal("b"))
			})

			It("a lease's fencing token stays while its holder renews it and grows whenever it is taken anew", func() {
				a1, _ := lead("a", t0)
				a2, _ := lead("a", t0.Add(30*time.Second))
				Expect(a2.Token).To(Equal(a1.Token), "a renewal in time keeps the token")
				Expect(a2.Until).To(Equal(t0.Add(90 * time.Second)))
				b, _ := lead("b", t0.Add(2*time.Minute))
				Expect(b.Token).To(Equal(a1.Token + 1))
				back, _ := lead("b", t0.Add(5*time.Minute))
				Expect(back.Token).To(Equal(b.Token+1), "its own lapsed lease taken back is a new take")
			})

			It("a deposed or lapsed leader fires nothing: a fire names its lease and the store refuses a stale one", func() {
				Expect(s.CreateSchedule(ctx, store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleCron, Cron: "* * * * *",
					State: store.ScheduleActive, CreatedAt: t0, NextRun: t0})).To(Succeed())
				a, _ := lead("a", t0)
				b, _ := lead("b", t0.Add(2*time.Minute))
				Expect(s.Fire(ctx, a, "s1", t0, t0.Add(3*time.Minute), t0.Add(2*time.Minute))).To(BeFalse(), "a's lease passed to b")
				Expect(s.Fire(ctx, b, "s1", t0, t0.Add(3*time.Minute), t0.Add(4*time.Minute))).To(BeFalse(), "b's lease lapsed at +3m")
				Expect(s.Fire(ctx, store.Lease{}, "s1", t0, t0.Add(3*time.Minute), t0.Add(2*time.Minute))).To(BeFalse(), "no lease")
				Expect(s.GetSchedule(ctx, "s1")).To(HaveField("Runs", 0))
				Expect(s.Fire(ctx, b, "s1", t0, t0.Add(3*time.Minute), t0.Add(2*time.Minute))).To(BeTrue())
				Expect(s.GetSchedule(ctx, "s1")).To(And(HaveField("Runs", 1), HaveField("NextRun", t0.Add(3*time.Minute))))
			})

			It("leaders racing for a lapsed lease: exactly one takes it, with a token of its own", func() {
				lead("a", t0)
				const racers = 8
				var mu sync.Mutex
				winners := map[int64][]string{}
				race(racers, func(i int) {
					holder := fmt.Sprintf("r%d", i)
					l, led, err := s.TryLead(ctx, "ticker", holder, t0.Add(5*time.Minute), time.Minute)
					Expect(err).NotTo(HaveOccurred())
					if led {
						mu.Lock()
						winners[l.Token] = append(winners[l.Token], holder)
						mu.Unlock()
					}
				})
				Expect(winners).To(HaveLen(1))
				for token, holders := range winners {
					Expect(token).To(Equal(int64(2)))
					Expect(holders).To(HaveLen(1))
				}
			})

			It("a file's key prefix is literal text: no character is special and case counts", func() {
				for _, k := range []string{"sessions/r1/a.txt", "sessions/R1/b.txt", "sessions/r1%/c.txt", "sessions/r1_/d.txt"} {
					_, err := s.PutFile(ctx, k, []byte(k), "w", t0)
					Expect(err).NotTo(HaveOccurred())
				}
				keys := func(prefix string) []string {
					list, err := s.ListFiles(ctx, prefix)
					Expect(err).NotTo(HaveOccurred())
					var out []string
					for _, m := range list {
						out = append(out, m.Key)
					}
					return out
				}
				Expect(keys("sessions/r1/")).To(Equal([]string{"sessions/r1/a.txt"}))
				Expect(keys("sessions/R1/")).To(Equal([]string{"sessions/R1/b.txt"}))
				Expect(keys("sessions/r1%")).To(Equal([]string{"sessions/r1%/c.txt"}))
				Expect(keys("sessions/")).To(Equal([]string{"sessions/R1/b.txt", "sessions/r1%/c.txt", "sessions/r1/a.txt", "sessions/r1_/d.txt"}),
					"sorted by key, byte by byte")
				Expect(s.DeletePrefix(ctx, "sessions/R1/")).To(Equal(1))
				Expect(keys("sessions/")).To(HaveLen(3))
			})

			It("writers racing on one new file all land: one makes it, the others write the next versions", func() {
				const writers = 8
				var mu sync.Mutex
				var replaced []int
				race(writers, func(i int) {
					prev, err := s.PutFile(ctx, "w/shared.txt", []byte{byte('a' + i)}, fmt.Sprintf("s%d", i), t0)
					Expect(err).NotTo(HaveOccurred())
					mu.Lock()
					defer mu.Unlock()
					if prev == nil {
						replaced = append(replaced, 0)
					} else {
						replaced = append(replaced, prev.Version)
					}
				})
				Expect(replaced).To(ConsistOf(0, 1, 2, 3, 4, 5, 6, 7), "each write replaced the version before it")
				_, meta, err := s.GetFile(ctx, "w/shared.txt")
				Expect(err).NotTo(HaveOccurred())
				Expect(meta.Version).To(Equal(writers))
			})

			It("an empty file is kept, listed and read back with size 0", func() {
				for _, data := range [][]byte{nil, {}} {
					_, err := s.PutFile(ctx, "w/empty", data, "w", t0)
					Expect(err).NotTo(HaveOccurred())
					got, meta, err := s.GetFile(ctx, "w/empty")
					Expect(err).NotTo(HaveOccurred())
					Expect(got).To(BeEmpty())
					Expect(meta.Size).To(Equal(0))
					list, err := s.ListFiles(ctx, "w/")
					Expect(err).NotTo(HaveOccurred())
					Expect(list).To(HaveLen(1))
					Expect(list[0].Size).To(Equal(0))
				}
			})

			It("keeps files with their last writer and version, lists and deletes by prefix", func() {
				prev, err := s.PutFile(ctx, "sessions/r1/a.txt", []byte("one"), "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				Expect(prev).To(BeNil())
				prev, err = s.PutFile(ctx, "sessions/r1/a.txt", []byte("two"), "s2", t0.Add(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(prev.Writer).To(Equal("s1"))
				_, err = s.PutFile(ctx, "sessions/r1_x/b.txt", []byte("b"), "s3", t0)
				Expect(err).NotTo(HaveOccurred())
				data, meta, err := s.GetFile(ctx, "sessions/r1/a.txt")
				Expect(err).NotTo(HaveOccurred())
				Expect(string(data)).To(Equal("two"))
				Expect(meta.Version).To(Equal(2))
				Expect(meta.Writer).To(Equal("s2"))
				list, _ := s.ListFiles(ctx, "sessions/r1/")
				Expect(list).To(HaveLen(1), "the prefix is literal: r1_ does not match r1/")
				Expect(s.DeletePrefix(ctx, "sessions/r1/")).To(Equal(1))
				_, _, err = s.GetFile(ctx, "sessions/r1/a.txt")
				Expect(err).To(MatchError(store.ErrNotFound))
			})
		})
	}
})

var _ = Describe("Mailboxes and presence", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			var s store.Store
			BeforeEach(func() {
				var closeDB func()
				s, closeDB = b.make()
				DeferCleanup(closeDB)
			})
			post := func(session, from, body string) store.Mail {
				GinkgoHelper()
				m, err := s.PostMail(ctx, store.Mail{Session: session, From: from, At: t0, Body: body})
				Expect(err).NotTo(HaveOccurred())
				return m
			}
			bodies := func(ms []store.Mail) []string {
				out := []string{}
				for _, m := range ms {
					out = append(out, m.Session+":"+m.Body)
				}
				return out
			}

			It("a session's mail is kept until it is taken, then handed over once, in the order it was posted", func() {
				first := post("s-a", "proc-2", `{"n":1}`)
				post("s-b", "proc-2", `{"n":2}`)
				third := post("s-a", "proc-3", `{"n":3}`)
				Expect(third.Seq).To(BeNumerically(">", first.Seq))
				got, err := s.TakeMail(ctx, []string{"s-a", "s-none"})
				Expect(err).NotTo(HaveOccurred())
				Expect(bodies(got)).To(Equal([]string{`s-a:{"n":1}`, `s-a:{"n":3}`}))
				Expect(got[0].From).To(Equal("proc-2"))
				Expect(got[0].At.Equal(t0)).To(BeTrue())
				again, err := s.TakeMail(ctx, []string{"s-a"})
				Expect(err).NotTo(HaveOccurred())
				Expect(again).To(BeEmpty(), "taken mail is gone")
				got, err = s.TakeMail(ctx, []string{"s-b", "s-a"})
				Expect(err).NotTo(HaveOccurred())
				Expect(bodies(got)).To(Equal([]string{`s-b:{"n":2}`}))
				later := post("s-a", "proc-2", `{"n":4}`)
				Expect(later.Seq).To(BeNumerically(">", 0))
			})

			It("one take hands over the mail of as many sessions as a process has, in the order it was posted", func() {
				const sessions = 620 // more than one query's worth of names
				ids := make([]string, sessions)
				for i := range sessions {
					ids[i] = fmt.Sprintf("s-%03d", i)
				}
				for i := sessions - 1; i >= 0; i-- {
					post(ids[i], "proc-2", fmt.Sprint(i))
				}
				got, err := s.TakeMail(ctx, ids)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(HaveLen(sessions))
				for i, m := range got {
					Expect(m.Body).To(Equal(fmt.Sprint(sessions-1-i)), "mail %d", i)
				}
			})

			It("mail taken by processes racing on one mailbox goes to exactly one of them", func() {
				const mails, procs = 60, 6
				for i := range mails {
					post("s-a", "proc-1", fmt.Sprint(i))
				}
				var mu sync.Mutex
				seen := map[string]int{}
				race(procs, func(int) {
					for range 3 {
						got, err := s.TakeMail(ctx, []string{"s-a"})
						Expect(err).NotTo(HaveOccurred())
						mu.Lock()
						for _, m := range got {
							seen[m.Body]++
						}
						mu.Unlock()
					}
				})
				Expect(seen).To(HaveLen(mails))
				for body, n := range seen {
					Expect(n).To(Equal(1), "mail %s taken %d times", body, n)
				}
			})

			It("mail posted before the expiry time is removed whoever it is addressed to, and later mail waits to be taken", func() {
				post("s-a", "proc-2", "old")
				Expect(s.PostMail(ctx, store.Mail{Session: "s-b", From: "proc-2", At: t0.Add(time.Minute), Body: "recent"})).Error().NotTo(HaveOccurred())
				post("s-b", "proc-3", "old too")
				Expect(s.ExpireMail(ctx, t0.Add(time.Minute))).To(Equal(2))
				Expect(s.ExpireMail(ctx, t0.Add(time.Minute))).To(BeZero(), "nothing left to expire")
				got, err := s.TakeMail(ctx, []string{"s-a", "s-b"})
				Expect(err).NotTo(HaveOccurred())
				Expect(bodies(got)).To(Equal([]string{"s-b:recent"}))
			})

			It("a tree is present while some instance's presence for it has not lapsed; an instance's new record replaces its old one", func() {
				Expect(s.SetPresence(ctx, "proc-1", []string{"r-2", "r-1"}, t0.Add(time.Minute))).To(Succeed())
				Expect(s.SetPresence(ctx, "proc-2", []string{"r-1"}, t0.Add(time.Hour))).To(Succeed())
				Expect(s.Present(ctx, t0)).To(Equal([]string{"r-1", "r-2"}))
				Expect(s.Present(ctx, t0.Add(time.Minute))).To(Equal([]string{"r-1"}), "proc-1's lapsed; proc-2 still holds r-1")
				Expect(s.SetPresence(ctx, "proc-1", []string{"r-3"}, t0.Add(2*time.Hour))).To(Succeed())
				Expect(s.Present(ctx, t0)).To(Equal([]string{"r-1", "r-3"}), "proc-1 no longer holds r-2")
				Expect(s.SetPresence(ctx, "proc-2", nil, t0.Add(time.Hour))).To(Succeed())
				Expect(s.Present(ctx, t0.Add(time.Hour))).To(Equal([]string{"r-3"}))
			})
		})
	}
})

var _ = Describe("Training", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			It("kept trajectories are listed in the order kept, each once, and a tenant's list holds only the tenants asked for", func() {
				s, closeDB := b.make()
				DeferCleanup(closeDB)
				for i, tenant := range []string{"acme", "", "globex", "acme"} {
					kept, err := s.KeepTrajectory(ctx, store.Trajectory{Tenant: tenant, Root: fmt.Sprint("r-", i), At: t0, Body: fmt.Sprint(i)})
					Expect(err).NotTo(HaveOccurred())
					Expect(kept.Seq).To(BeNumerically(">", 0))
				}
				bodies := func(tenants []string) []string {
					GinkgoHelper()
					got, err := s.Trajectories(ctx, tenants)
					Expect(err).NotTo(HaveOccurred())
					out := []string{}
					for i, t := range got {
						if i > 0 {
							Expect(t.Seq).To(BeNumerically(">", got[i-1].Seq))
						}
						Expect(t.At.Equal(t0)).To(BeTrue())
						out = append(out, t.Tenant+":"+t.Root+":"+t.Body)
					}
					return out
				}
				Expect(bodies(nil)).To(Equal([]string{"acme:r-0:0", ":r-1:1", "globex:r-2:2", "acme:r-3:3"}))
				Expect(bodies([]string{"", "acme"})).To(Equal([]string{"acme:r-0:0", ":r-1:1", "acme:r-3:3"}))
				Expect(bodies([]string{"initech"})).To(BeEmpty())
				Expect(bodies([]string{})).To(BeEmpty(), "no tenant asked for, none listed")
			})
		})
	}
})

var _ = Describe("The SQL store's errors", func() {
	ctx := context.Background()
	for _, d := range []struct {
		name string
		// open returns a store whose database the spec may close.
		open func() (*store.SQL, *sql.DB)
		// alwaysTaken makes every compare-and-set to running lose, as if
		// another process always took the row between the read and the
		// write.
		alwaysTaken []string
	}{
		{"SQLite", func() (*store.SQL, *sql.DB) {
			db := openSQLite(GinkgoT().TempDir())
			s, err := store.NewSQL(ctx, db, store.SQLOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = db.Close() })
			return s, db
		}, []string{`CREATE TRIGGER always_taken BEFORE UPDATE ON tasks WHEN NEW.state = 'running' BEGIN SELECT RAISE(IGNORE); END`}},
		{"PostgreSQL", func() (*store.SQL, *sql.DB) {
			// A second store on a fresh schema, so that closing its
			// connections leaves the first free to drop the schema.
			s, err := store.OpenPostgres(ctx, postgresDSN(), store.PostgresOptions{Schema: openPostgres().Schema()})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = s.Close() })
			return s, s.DB()
		}, []string{
			`CREATE FUNCTION always_taken() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN IF NEW.state = 'running' THEN RETURN NULL; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER always_taken BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION always_taken()`,
		}},
	} {
		Context(d.name, func() {
			var (
				db *sql.DB
				s  *store.SQL
			)
			BeforeEach(func() { s, db = d.open() })

			It("a database error names the operation and the id, and keeps the driver's error", func() {
				Expect(db.Close()).To(Succeed())
				_, err := s.GetTask(ctx, "t-1")
				Expect(err).To(MatchError(ContainSubstring("get task t-1")))
				Expect(err).To(MatchError(ContainSubstring("database is closed")))
				Expect(err).NotTo(MatchError(store.ErrNotFound))
				_, _, err = s.FinishAttempt(ctx, "t-2", 1, "p", store.Finish{Outcome: store.OutcomeCompleted, At: t0})
				Expect(err).To(MatchError(ContainSubstring("finish attempt t-2")))
				_, err = s.ListFiles(ctx, "sessions/r1/")
				Expect(err).To(MatchError(ContainSubstring("list files sessions/r1/")))
			})

			It("a store error that already says what it is about keeps its sentinel and its words", func() {
				_, err := s.GetTask(ctx, "t-1")
				Expect(err).To(MatchError(store.ErrNotFound))
				Expect(err.Error()).To(Equal("task t-1: not found"))
			})

			It("DeleteSchedule reports a database error as that error, not as not found", func() {
				Expect(s.CreateSchedule(ctx, store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, CreatedAt: t0})).To(Succeed())
				Expect(db.Close()).To(Succeed())
				err := s.DeleteSchedule(ctx, "s1", "ada")
				Expect(err).To(HaveOccurred())
				Expect(err).NotTo(MatchError(store.ErrNotFound))
				Expect(err).To(MatchError(ContainSubstring("delete schedule s1")))
			})

			It("DeleteSchedule of an unknown or deleted schedule is still not found", func() {
				Expect(s.DeleteSchedule(ctx, "nope", "ada")).To(MatchError(store.ErrNotFound))
				Expect(s.CreateSchedule(ctx, store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, CreatedAt: t0})).To(Succeed())
				Expect(s.DeleteSchedule(ctx, "s1", "ada")).To(Succeed())
				Expect(s.DeleteSchedule(ctx, "s1", "ada")).To(MatchError(store.ErrNotFound))
			})

			It("Claim reports that it ran out of retries when other processes take every candidate first", func() {
				_, err := s.CreateTask(ctx, store.Task{ID: "t-1", Prompt: "p", Spawner: "s1", Root: "s1", MaxAttempts: 3, CreatedAt: t0})
				Expect(err).NotTo(HaveOccurred())
				for _, stmt := range d.alwaysTaken {
					_, err = db.ExecContext(ctx, stmt)
					Expect(err).NotTo(HaveOccurred())
				}
				_, ok, err := s.Claim(ctx, "p", t0, time.Minute)
				Expect(ok).To(BeFalse())
				Expect(err).To(MatchError(store.ErrContended))
				Expect(err).To(MatchError(ContainSubstring("claim by p")))
			})
		})
	}
})

var _ = Describe("The SQL store's schema", func() {
	ctx := context.Background()
	version := func(db *sql.DB) int {
		var v int
		Expect(db.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&v)).To(Succeed())
		return v
	}

	for _, d := range []struct {
		name string
		open func() *store.SQL
	}{
		{"SQLite", func() *store.SQL {
			db := openSQLite(GinkgoT().TempDir())
			DeferCleanup(db.Close)
			s, err := store.NewSQL(ctx, db, store.SQLOptions{})
			Expect(err).NotTo(HaveOccurred())
			return s
		}},
		{"PostgreSQL", openPostgres},
	} {
		Context(d.name, func() {
			It("the store applies its own migrations and records the schema version", func() {
				s := d.open()
				Expect(version(s.DB())).To(Equal(store.SchemaVersion))
				again, err := store.NewSQL(ctx, s.DB(), store.SQLOptions{Dialect: s.Dialect()})
				Expect(err).NotTo(HaveOccurred(), "opening a current schema again changes nothing")
				Expect(again.TryLead(ctx, "ticker", "a", t0, time.Minute)).Error().NotTo(HaveOccurred())
				var rows int
				Expect(s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_version").Scan(&rows)).To(Succeed())
				Expect(rows).To(Equal(1))
			})

			DescribeTable("a schema version the build cannot trust is a clear error, and the database is left as it is",
				func(damage, says string) {
					s := d.open()
					_, err := s.DB().ExecContext(ctx, damage)
					Expect(err).NotTo(HaveOccurred())
					var before int
					Expect(s.DB().QueryRowContext(ctx, "SELECT SUM(version) FROM schema_version").Scan(&before)).To(Succeed())
					_, err = store.NewSQL(ctx, s.DB(), store.SQLOptions{Dialect: s.Dialect()})
					Expect(err).To(MatchError(store.ErrSchemaVersion))
					Expect(err).To(MatchError(ContainSubstring(says)))
					var after int
					Expect(s.DB().QueryRowContext(ctx, "SELECT SUM(version) FROM schema_version").Scan(&after)).To(Succeed())
					Expect(after).To(Equal(before))
				},
				Entry("a newer schema", "UPDATE schema_version SET version = 99", fmt.Sprintf("version 99, newer than version %d", store.SchemaVersion)),
				Entry("a damaged version record", "INSERT INTO schema_version (version) VALUES (1)", "has 2 rows"),
			)
		})
	}

	It("a SQLite database made before versions were recorded is brought up to date and keeps its rows", func() {
		db := openSQLite(GinkgoT().TempDir())
		DeferCleanup(db.Close)
		for _, stmt := range []string{
			// Version 1's tables, as a build that kept no version made them.
			`CREATE TABLE tasks (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL,
				state TEXT NOT NULL, spawner TEXT NOT NULL, root TEXT NOT NULL, lease_until BIGINT NOT NULL)`,
			`CREATE INDEX tasks_state ON tasks (state, seq)`,
			`CREATE TABLE task_parents (child TEXT NOT NULL, parent TEXT NOT NULL, PRIMARY KEY (parent, child))`,
			`CREATE TABLE attempts (task TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task, n))`,
			`CREATE TABLE schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, usr TEXT NOT NULL,
				state TEXT NOT NULL, next_run BIGINT NOT NULL, expires_at BIGINT NOT NULL, body TEXT NOT NULL)`,
			`CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until BIGINT NOT NULL)`,
			`CREATE TABLE files (k TEXT PRIMARY KEY, data BLOB, writer TEXT NOT NULL, version INTEGER NOT NULL, updated BIGINT NOT NULL)`,
			`INSERT INTO tasks VALUES ('old', 1, '{"id":"old","prompt":"p","spawner":"s1","root":"s1","state":"ready","max_attempts":3,"attempts":0,"consecutive_failures":0,"created_at":"2026-03-02T09:00:00Z","updated_at":"2026-03-02T09:00:00Z"}', 'ready', 's1', 's1', 0)`,
			`INSERT INTO tasks VALUES ('older', 0, '{"id":"older","prompt":"p","spawner":"s1","root":"s1","state":"done","max_attempts":3,"attempts":1,"consecutive_failures":0,"result":"r","metadata":{"tests_run":3},"created_at":"2026-03-02T09:00:00Z","updated_at":"2026-03-02T09:00:00Z"}', 'done', 's1', 's1', 0)`,
			`INSERT INTO leases VALUES ('ticker', 'gone', 1)`,
		} {
			_, err := db.ExecContext(ctx, stmt)
			Expect(err).NotTo(HaveOccurred())
		}
		s, err := store.NewSQL(ctx, db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(version(db)).To(Equal(store.SchemaVersion))
		c, ok, err := s.Claim(ctx, "p", t0, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(c.Task.ID).To(Equal("old"))
		l, led, err := s.TryLead(ctx, "ticker", "a", t0, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(led).To(BeTrue(), "the old lease lapsed long ago")
		Expect(l.Token).To(Equal(int64(1)))
		older, err := s.GetTask(ctx, "older")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(older.Metadata)).To(Equal(`{"tests_run":3}`), "a body written before metadata was kept as text still reads")
	})

	It("PostgreSQL processes starting together on one schema migrate it once, one after another", func() {
		dsn := postgresDSN()
		schema := fmt.Sprintf("crux_sim_together_%d", GinkgoParallelProcess())
		const procs = 6
		errs := make([]error, procs)
		stores := make([]*store.SQL, procs)
		race(procs, func(i int) {
			stores[i], errs[i] = store.OpenPostgres(ctx, dsn, store.PostgresOptions{Schema: schema, MaxConns: 2})
		})
		DeferCleanup(func() {
			for _, s := range stores {
				if s != nil {
					Expect(s.Close()).To(Succeed())
				}
			}
			drop, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{})
			Expect(err).NotTo(HaveOccurred())
			_, err = drop.DB().ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
			Expect(err).NotTo(HaveOccurred())
			Expect(drop.Close()).To(Succeed())
		})
		for _, err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(version(stores[0].DB())).To(Equal(store.SchemaVersion))
		Expect(stores[0].Schema()).To(Equal(schema))
	})
})

var _ = Describe("The PostgreSQL store", func() {
	ctx := context.Background()

	It("two fresh stores on one server never see each other's rows, and Close drops a fresh schema", func() {
		dsn := postgresDSN()
		a, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{Fresh: true})
		Expect(err).NotTo(HaveOccurred())
		b := openPostgres()
		Expect(a.Schema()).NotTo(Equal(b.Schema()))
		_, err = a.CreateTask(ctx, store.Task{ID: "t", Prompt: "p", Spawner: "s", Root: "s", MaxAttempts: 1, CreatedAt: t0})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.ListTasks(ctx, store.TaskFilter{})).To(BeEmpty())
		schema := a.Schema()
		Expect(a.Close()).To(Succeed())
		var n int
		Expect(b.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = $1", schema).Scan(&n)).To(Succeed())
		Expect(n).To(Equal(0))
	})

	It("a write that finds no file and then loses the insert to another writer writes the next version over it", func() {
		s := openPostgres()
		other, err := s.DB().BeginTx(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		_, err = other.ExecContext(ctx, "INSERT INTO files (k, data, writer, version, updated) VALUES ('w/f', 'x', 'other', 1, 0)")
		Expect(err).NotTo(HaveOccurred())
		wrote := make(chan error, 1)
		go func() {
			_, err := s.PutFile(ctx, "w/f", []byte("mine"), "me", t0)
			wrote <- err
		}()
		// Once the write waits on the other writer's uncommitted row (the
		// server says so; asked again until it does, a bounded number of
		// times), the other writer commits.
		waiting := 0
		for asked := 0; waiting == 0 && asked < 100_000; asked++ {
			Expect(s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO files%' AND datname = current_database()`).Scan(&waiting)).To(Succeed())
		}
		Expect(waiting).To(BeNumerically(">=", 1), "the write never waited on the other writer")
		Expect(other.Commit()).To(Succeed())
		Expect(<-wrote).To(Succeed())
		data, meta, err := s.GetFile(ctx, "w/f")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("mine"))
		Expect(meta.Version).To(Equal(2))
	})

	It("a server that cannot be reached is an error that names it and never shows the password", func() {
		_, err := store.OpenPostgres(ctx, "postgres://crux:s3cret-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", store.PostgresOptions{})
		Expect(err).To(HaveOccurred())
		Expect(err).To(MatchError(ContainSubstring("PostgreSQL at 127.0.0.1:1/db as crux")))
		Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
		_, err = store.OpenPostgres(ctx, "postgres://crux:s3cret-pw@127.0.0.1:5432/db?sslmode=bogus", store.PostgresOptions{})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("s3cret-pw"))
	})

	DescribeTable("RedactDSN hides the password wherever the address carries it",
		func(dsn, want string) { Expect(store.RedactDSN(dsn)).To(Equal(want)) },
		Entry("URL user part", "postgres://ada:pw@db:5432/x", "postgres://ada:xxxxx@db:5432/x"),
		Entry("query parameter", "postgresql://db/x?password=pw&sslmode=disable", "postgresql://db/x?password=xxxxx&sslmode=disable"),
		Entry("no password", "postgres://ada@db/x", "postgres://ada@db/x"),
		Entry("unparsable URL", "postgres://ada:p%zz@db/x", "postgres://xxxxx@db/x"),
		Entry("key=value", "host=db user=ada password=pw dbname=x", "host=db user=ada password=xxxxx dbname=x"),
		Entry("quoted key=value", "host=db password='p w\\'x' dbname=x", "host=db password=xxxxx dbname=x"),
	)
})
